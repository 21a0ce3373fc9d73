/*
 * schema.c - the JSON Schema validator (see schema.h).
 *
 * compile: walks every schema position of the document, refuses unknown
 * keywords, checks keyword value types, and compiles each pattern with PCRE2
 * (UTF mode). validate: a recursive walk over (instance, schema) pairs carrying
 * the instance JSON pointer; subschemas of anyOf/oneOf/not are evaluated in
 * "count only" mode. Depth is bounded so a self-referencing schema cannot
 * recurse forever on deep input.
 */
#include "awooop/alloc.h"
#include "awooop/schema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>

#include "awooop/json.h"
#include "awooop/pattern.h"
#include "awooop/str.h"

#define MAX_DEPTH 128
/* Evaluation steps per validation: self-referencing anyOf/oneOf can otherwise
 * branch exponentially on deep input. Real contracts use a few thousand. */
#define MAX_STEPS 1000000

typedef struct {
	const char *src; /* borrowed from the schema document */
	pcre2_code *re;
} regex_entry;

struct aw_schema {
	json_t *root;
	regex_entry *re;
	size_t nre, capre;
};

/* ------------------------------------------------------------ compile */

static const char *const annotations[] = {"$schema",	 "$id",		"$comment", "title",
					  "description", "default",	"examples", "readOnly",
					  "writeOnly",	 "definitions", NULL};

static int is_annotation(const char *k)
{
	for (int i = 0; annotations[i]; i++)
		if (strcmp(k, annotations[i]) == 0)
			return 1;
	return 0;
}

typedef struct {
	aw_schema *s; /* NULL: only check support */
	char *why;
	size_t whylen;
	aw_buf path; /* JSON pointer of the schema being walked */
} walk_ctx;

static int fail_walk(walk_ctx *w, const char *fmt, const char *what)
{
	const char *ptr =
		aw_buf_err(&w->path) ? "(a pointer too long to show)" : aw_buf_str(&w->path);
	if (w->why)
		snprintf(w->why, w->whylen, "%s: %s %s", ptr[0] ? ptr : "#", fmt, what);
	return -1;
}

static int add_regex(walk_ctx *w, const char *src)
{
	int ec;
	PCRE2_SIZE eo;
	pcre2_code *re =
		pcre2_compile((PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &ec, &eo, NULL);
	if (!re)
		return fail_walk(w, "invalid regular expression", src);
	if (!w->s) {
		pcre2_code_free(re);
		return 0;
	}
	pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
	aw_schema *s = w->s;
	if (s->nre == s->capre) {
		size_t cap = s->capre ? s->capre * 2 : 8;
		regex_entry *n = aw_realloc(s->re, cap * sizeof *n);
		if (!n) {
			pcre2_code_free(re);
			return fail_walk(w, "out of memory", "");
		}
		s->re = n;
		s->capre = cap;
	}
	s->re[s->nre++] = (regex_entry){src, re};
	return 0;
}

static int walk_schema(walk_ctx *w, const json_t *sch, int depth);

/* Walks the member schemas of m, the value of keyword kw (w->path points at kw). */
static int walk_map(walk_ctx *w, const json_t *m, const char *kw, int depth, int keys_are_regex)
{
	if (!json_is_object(m))
		return fail_walk(w, kw, "must be an object");
	const char *k;
	json_t *v;
	size_t mark = w->path.len;
	json_object_foreach ((json_t *)m, k, v) {
		if (aw_json_ptr_push(&w->path, k))
			return fail_walk(w, "schema pointer too long", "");
		if ((keys_are_regex && add_regex(w, k)) || walk_schema(w, v, depth + 1))
			return -1;
		aw_buf_truncate(&w->path, mark);
	}
	return 0;
}

static int walk_list(walk_ctx *w, const json_t *a, const char *kw, int depth)
{
	if (!json_is_array(a) || json_array_size(a) == 0)
		return fail_walk(w, kw, "must be a non-empty array");
	size_t i, mark = w->path.len;
	json_t *v;
	json_array_foreach ((json_t *)a, i, v) {
		if (aw_json_ptr_push_index(&w->path, i))
			return fail_walk(w, "schema pointer too long", "");
		if (walk_schema(w, v, depth + 1))
			return -1;
		aw_buf_truncate(&w->path, mark);
	}
	return 0;
}

static int nonneg_int(const json_t *v)
{
	if (json_is_integer(v))
		return json_integer_value(v) >= 0;
	return json_is_real(v) && json_real_value(v) >= 0 &&
	       json_real_value(v) == floor(json_real_value(v));
}

/* Checks one schema (at w->path) and, recursively, its subschemas. */
static int walk_schema(walk_ctx *w, const json_t *sch, int depth)
{
	if (depth > MAX_DEPTH)
		return fail_walk(w, "schema nested too deep", "");
	if (json_is_boolean(sch))
		return 0;
	if (!json_is_object(sch))
		return fail_walk(w, "a schema must be an object or a boolean", "");
	const char *k;
	json_t *v;
	size_t mark = w->path.len;
	json_object_foreach ((json_t *)sch, k, v) {
		aw_buf_truncate(&w->path, mark);
		if (aw_json_ptr_push(&w->path, k))
			return fail_walk(w, "schema pointer too long", "");
		if (is_annotation(k)) {
			if (strcmp(k, "definitions") == 0 &&
			    walk_map(w, v, "definitions", depth, 0))
				return -1;
			continue;
		}
		if (!strcmp(k, "properties")) {
			if (walk_map(w, v, k, depth, 0))
				return -1;
		} else if (!strcmp(k, "patternProperties")) {
			if (walk_map(w, v, k, depth, 1))
				return -1;
		} else if (!strcmp(k, "additionalProperties") || !strcmp(k, "additionalItems") ||
			   !strcmp(k, "not")) {
			if (walk_schema(w, v, depth + 1))
				return -1;
		} else if (!strcmp(k, "items")) {
			if (json_is_array(v) ? (json_array_size(v) && walk_list(w, v, k, depth))
					     : walk_schema(w, v, depth + 1))
				return -1;
		} else if (!strcmp(k, "allOf") || !strcmp(k, "anyOf") || !strcmp(k, "oneOf")) {
			if (walk_list(w, v, k, depth))
				return -1;
		} else if (!strcmp(k, "type")) {
			static const char *const names[] = {"object",  "array", "string",
							    "boolean", "null",	"number",
							    "integer", NULL};
			json_t *one = json_is_string(v) ? v : NULL;
			size_t n = json_is_array(v) ? json_array_size(v) : one ? 1 : 0;
			if (!n)
				return fail_walk(w, "type",
						 "must be a type name or an array of them");
			for (size_t i = 0; i < n; i++) {
				const char *t = json_string_value(one ? one : json_array_get(v, i));
				int known = 0;
				for (int j = 0; t && names[j]; j++)
					known |= !strcmp(t, names[j]);
				if (!known)
					return fail_walk(w, "type", "names an unknown type");
			}
		} else if (!strcmp(k, "enum")) {
			if (!json_is_array(v))
				return fail_walk(w, "enum", "must be an array");
		} else if (!strcmp(k, "const")) {
			/* any value */
		} else if (!strcmp(k, "minimum") || !strcmp(k, "maximum") ||
			   !strcmp(k, "exclusiveMinimum") || !strcmp(k, "exclusiveMaximum")) {
			if (!json_is_number(v))
				return fail_walk(w, k, "must be a number");
		} else if (!strcmp(k, "multipleOf")) {
			if (!json_is_number(v) || json_number_value(v) <= 0)
				return fail_walk(w, k, "must be a number > 0");
		} else if (!strcmp(k, "minLength") || !strcmp(k, "maxLength") ||
			   !strcmp(k, "minItems") || !strcmp(k, "maxItems") ||
			   !strcmp(k, "minProperties") || !strcmp(k, "maxProperties")) {
			if (!nonneg_int(v))
				return fail_walk(w, k, "must be a non-negative integer");
		} else if (!strcmp(k, "uniqueItems")) {
			if (!json_is_boolean(v))
				return fail_walk(w, k, "must be a boolean");
		} else if (!strcmp(k, "required")) {
			size_t i;
			json_t *x;
			if (!json_is_array(v))
				return fail_walk(w, k, "must be an array of strings");
			json_array_foreach (v, i, x)
				if (!json_is_string(x))
					return fail_walk(w, k, "must be an array of strings");
		} else if (!strcmp(k, "pattern")) {
			if (!json_is_string(v))
				return fail_walk(w, k, "must be a string");
			if (add_regex(w, json_string_value(v)))
				return -1;
		} else if (!strcmp(k, "$ref")) {
			const char *r = json_string_value(v);
			if (!r || r[0] != '#')
				return fail_walk(w, "unsupported $ref (only local '#...')",
						 r ? r : "");
		} else {
			return fail_walk(w, "unsupported keyword", k);
		}
	}
	aw_buf_truncate(&w->path, mark);
	return 0;
}

int aw_schema_supported(const json_t *schema, char *why, size_t whylen)
{
	walk_ctx w = {NULL, why, whylen, AW_BUF_INIT(AW_JSON_PTR_MAX)};
	int rc = walk_schema(&w, schema, 0);
	aw_buf_free(&w.path);
	return rc == 0;
}

void aw_schema_free(aw_schema *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nre; i++)
		pcre2_code_free(s->re[i].re);
	free(s->re);
	json_decref(s->root);
	free(s);
}

aw_err aw_schema_compile(json_t *schema, aw_schema **out, aw_error *err)
{
	aw_schema *s = aw_calloc(1, sizeof *s);
	if (!s)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	s->root = json_incref(schema);
	char why[256] = "";
	walk_ctx w = {s, why, sizeof why, AW_BUF_INIT(AW_JSON_PTR_MAX)};
	int rc = walk_schema(&w, schema, 0);
	aw_buf_free(&w.path);
	if (rc) {
		aw_schema_free(s);
		return aw_fail_at(err, AW_E_REQ_INVALID, "", "invalid schema: %s", why);
	}
	*out = s;
	return AW_OK;
}

/* ------------------------------------------------------------ validate */

typedef struct {
	const aw_schema *s;
	aw_schema_error *errs;
	int max, n;
	int quick;    /* stop at the first error (count-only evaluation) */
	long *steps;  /* shared with sub-evaluations */
	aw_buf *path; /* JSON pointer of the instance value under test; shared too */
} vctx;

static int report(vctx *c, const char *kw, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#include <stdarg.h>
static int report(vctx *c, const char *kw, const char *fmt, ...)
{
	if (c->errs && c->n < c->max) {
		aw_schema_error *e = &c->errs[c->n];
		const char *ptr = aw_buf_str(c->path);
		size_t len = c->path->len;
		if (aw_buf_err(c->path))
			snprintf(e->pointer, sizeof e->pointer, "(a pointer too long to show)");
		else if (len < sizeof e->pointer)
			memcpy(e->pointer, ptr, len + 1);
		else /* never cut silently: a shortened pointer says so */
			snprintf(e->pointer, sizeof e->pointer, "%.*s...",
				 (int)sizeof e->pointer - 4, ptr);
		/* kw: a keyword literal of this file, none near 32 bytes */
		(void)!AW_STR_COPY(e->keyword, kw);
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(e->message, sizeof e->message, fmt, ap);
		va_end(ap);
	}
	c->n++;
	return 1;
}

static int validate(vctx *c, const json_t *inst, const json_t *sch, int depth);

static int is_integer_value(const json_t *v)
{
	if (json_is_integer(v))
		return 1;
	if (!json_is_real(v))
		return 0;
	double d = json_real_value(v);
	return isfinite(d) && d == floor(d);
}

static int type_matches(const json_t *v, const char *t)
{
	if (!strcmp(t, "object"))
		return json_is_object(v);
	if (!strcmp(t, "array"))
		return json_is_array(v);
	if (!strcmp(t, "string"))
		return json_is_string(v);
	if (!strcmp(t, "boolean"))
		return json_is_boolean(v);
	if (!strcmp(t, "null"))
		return json_is_null(v);
	if (!strcmp(t, "number"))
		return json_is_number(v);
	if (!strcmp(t, "integer"))
		return is_integer_value(v);
	return 0;
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	default: return "null";
	}
}

static size_t utf8_len(const char *s, size_t n)
{
	size_t cps = 0;
	for (size_t i = 0; i < n; i++)
		cps += ((unsigned char)s[i] & 0xC0) != 0x80;
	return cps;
}

static const pcre2_code *regex_for(const aw_schema *s, const char *src)
{
	for (size_t i = 0; i < s->nre; i++)
		if (s->re[i].src == src || strcmp(s->re[i].src, src) == 0)
			return s->re[i].re;
	return NULL;
}

/* A schema may be a tenant's (a response_format, a tool's input schema): its
 * patterns match under the limits of pattern.h; one that hits a limit does
 * not match. Read-only once made, so shared by every thread. */
static pcre2_match_context *limits;
static pthread_once_t limits_once = PTHREAD_ONCE_INIT;

static void limits_make(void)
{
	limits = pcre2_match_context_create(NULL);
	if (!limits)
		return; /* NULL: PCRE2's own defaults (10 million steps) */
	pcre2_set_match_limit(limits, AW_PATTERN_MATCH_LIMIT);
	pcre2_set_depth_limit(limits, AW_PATTERN_DEPTH_LIMIT);
	pcre2_set_heap_limit(limits, AW_PATTERN_HEAP_KB);
}

static int re_match(const aw_schema *s, const char *src, const char *subject, size_t len)
{
	const pcre2_code *re = regex_for(s, src);
	if (!re)
		return 0;
	pthread_once(&limits_once, limits_make);
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
	int rc = md ? pcre2_match(re, (PCRE2_SPTR)subject, len, 0, 0, md, limits) : -1;
	pcre2_match_data_free(md);
	return rc >= 0;
}

/* Resolves "#/a/b" against the root document (NULL when it does not). */
static const json_t *resolve_ref(const aw_schema *s, const char *ref)
{
	if (strcmp(ref, "#") == 0)
		return s->root;
	if (strncmp(ref, "#/", 2) != 0)
		return NULL;
	const json_t *cur = s->root;
	const char *p = ref + 2;
	aw_buf tok = AW_BUF_INIT(AW_JSON_PTR_MAX);
	while (cur) {
		aw_buf_truncate(&tok, 0);
		while (*p && *p != '/') {
			char ch = *p++;
			if (ch == '~' && (*p == '0' || *p == '1')) {
				ch = *p++ == '0' ? '~' : '/';
			} else if (ch == '%' && p[0] && p[1]) {
				char hex[3] = {p[0], p[1], 0};
				ch = (char)strtol(hex, NULL, 16);
				p += 2;
			}
			aw_buf_add(&tok, &ch, 1);
		}
		if (aw_buf_err(&tok)) {
			cur = NULL;
			break;
		}
		const char *t = aw_buf_str(&tok);
		if (json_is_object(cur)) {
			cur = json_object_getn(cur, t, tok.len);
		} else if (json_is_array(cur)) {
			char *end;
			long idx = strtol(t, &end, 10);
			cur = (*end || idx < 0 || !*t) ? NULL : json_array_get(cur, (size_t)idx);
		} else {
			cur = NULL;
		}
		if (*p != '/')
			break;
		p++;
	}
	aw_buf_free(&tok);
	return cur;
}

#define FAIL_OR_CONTINUE()            \
	do {                          \
		if (c->quick && c->n) \
			return c->n;  \
	} while (0)

static int count_sub(vctx *c, const json_t *inst, const json_t *sch, int depth)
{
	vctx sub = {c->s, NULL, 0, 0, 1, c->steps, c->path};
	return validate(&sub, inst, sch, depth);
}

static void validate_numeric(vctx *c, const json_t *inst, const json_t *sch)
{
	double x = json_number_value(inst);
	json_t *v;
	if ((v = json_object_get(sch, "minimum")) && x < json_number_value(v))
		report(c, "minimum", "must be >= %g", json_number_value(v));
	if ((v = json_object_get(sch, "maximum")) && x > json_number_value(v))
		report(c, "maximum", "must be <= %g", json_number_value(v));
	if ((v = json_object_get(sch, "exclusiveMinimum")) && x <= json_number_value(v))
		report(c, "exclusiveMinimum", "must be > %g", json_number_value(v));
	if ((v = json_object_get(sch, "exclusiveMaximum")) && x >= json_number_value(v))
		report(c, "exclusiveMaximum", "must be < %g", json_number_value(v));
	if ((v = json_object_get(sch, "multipleOf"))) {
		int ok;
		if (json_is_integer(inst) && json_is_integer(v)) {
			ok = json_integer_value(inst) % json_integer_value(v) == 0;
		} else {
			double q = x / json_number_value(v);
			ok = isfinite(q) &&
			     fabs(q - nearbyint(q)) < 1e-9 * (fabs(q) > 1 ? fabs(q) : 1);
		}
		if (!ok)
			report(c, "multipleOf", "must be a multiple of %g", json_number_value(v));
	}
}

static void validate_string(vctx *c, const json_t *inst, const json_t *sch)
{
	const char *s = json_string_value(inst);
	size_t bytes = json_string_length(inst), cps = utf8_len(s, bytes);
	json_t *v;
	if ((v = json_object_get(sch, "minLength")) && cps < (size_t)json_number_value(v))
		report(c, "minLength", "must be at least %g characters", json_number_value(v));
	if ((v = json_object_get(sch, "maxLength")) && cps > (size_t)json_number_value(v))
		report(c, "maxLength", "must be at most %g characters", json_number_value(v));
	if ((v = json_object_get(sch, "pattern")) &&
	    !re_match(c->s, json_string_value(v), s, bytes))
		report(c, "pattern", "must match the pattern %.120s", json_string_value(v));
}

static void validate_array(vctx *c, const json_t *inst, const json_t *sch, int depth)
{
	size_t n = json_array_size(inst);
	json_t *v;
	if ((v = json_object_get(sch, "minItems")) && n < (size_t)json_number_value(v))
		report(c, "minItems", "must have at least %g items", json_number_value(v));
	if ((v = json_object_get(sch, "maxItems")) && n > (size_t)json_number_value(v))
		report(c, "maxItems", "must have at most %g items", json_number_value(v));
	if ((v = json_object_get(sch, "uniqueItems")) && json_is_true(v)) {
		for (size_t i = 0; i < n; i++)
			for (size_t j = i + 1; j < n; j++)
				if (aw_json_same(json_array_get(inst, i),
						 json_array_get(inst, j))) {
					report(c, "uniqueItems", "items %zu and %zu are equal", i,
					       j);
					i = j = n;
				}
	}
	json_t *items = json_object_get(sch, "items");
	if (!items)
		return;
	size_t k = json_is_array(items) ? json_array_size(items) : 0, mark = c->path->len;
	json_t *add = json_is_array(items) ? json_object_get(sch, "additionalItems") : items;
	for (size_t i = 0; i < n; i++) {
		const json_t *sub = i < k ? json_array_get(items, i) : add;
		if (!sub)
			continue;
		aw_json_ptr_push_index(c->path, i);
		validate(c, json_array_get(inst, i), sub, depth + 1);
		aw_buf_truncate(c->path, mark);
		if (c->quick && c->n)
			return;
	}
}

static void validate_object(vctx *c, const json_t *inst, const json_t *sch, int depth)
{
	size_t n = json_object_size(inst);
	json_t *v;
	if ((v = json_object_get(sch, "minProperties")) && n < (size_t)json_number_value(v))
		report(c, "minProperties", "must have at least %g members", json_number_value(v));
	if ((v = json_object_get(sch, "maxProperties")) && n > (size_t)json_number_value(v))
		report(c, "maxProperties", "must have at most %g members", json_number_value(v));
	if ((v = json_object_get(sch, "required"))) {
		size_t i;
		json_t *r;
		size_t mark = c->path->len;
		json_array_foreach (v, i, r) {
			if (!json_object_get(inst, json_string_value(r))) {
				aw_json_ptr_push(c->path, json_string_value(r));
				report(c, "required", "is required");
				aw_buf_truncate(c->path, mark);
			}
		}
	}
	json_t *props = json_object_get(sch, "properties");
	json_t *pprops = json_object_get(sch, "patternProperties");
	json_t *add = json_object_get(sch, "additionalProperties");
	const char *k;
	json_t *x;
	size_t mark = c->path->len;
	json_object_foreach ((json_t *)inst, k, x) {
		aw_buf_truncate(c->path, mark);
		aw_json_ptr_push(c->path, k);
		int matched = 0;
		json_t *ps = props ? json_object_get(props, k) : NULL;
		if (ps) {
			matched = 1;
			validate(c, x, ps, depth + 1);
		}
		if (pprops) {
			const char *pk;
			json_t *psch;
			json_object_foreach (pprops, pk, psch) {
				if (re_match(c->s, pk, k, strlen(k))) {
					matched = 1;
					validate(c, x, psch, depth + 1);
				}
			}
		}
		if (!matched && add) {
			if (json_is_false(add))
				report(c, "additionalProperties", "is not allowed (unknown field)");
			else
				validate(c, x, add, depth + 1);
		}
		if (c->quick && c->n)
			break;
	}
	aw_buf_truncate(c->path, mark);
}

static int validate(vctx *c, const json_t *inst, const json_t *sch, int depth)
{
	int before = c->n;
	if (depth > MAX_DEPTH)
		return report(c, "$ref", "schema recursion too deep");
	if (++*c->steps > MAX_STEPS)
		return report(c, "$ref", "schema evaluation too expensive");
	if (json_is_true(sch))
		return 0;
	if (json_is_false(sch))
		return report(c, "false", "no value is allowed here");
	json_t *ref = json_object_get(sch, "$ref");
	if (ref) { /* draft-07: $ref replaces its siblings */
		const json_t *target = resolve_ref(c->s, json_string_value(ref));
		if (!target)
			return report(c, "$ref", "unresolvable reference %.100s",
				      json_string_value(ref));
		return validate(c, inst, target, depth + 1);
	}
	json_t *v;
	if ((v = json_object_get(sch, "type"))) {
		int ok = 0;
		if (json_is_string(v)) {
			ok = type_matches(inst, json_string_value(v));
		} else {
			size_t i;
			json_t *t;
			json_array_foreach (v, i, t)
				ok |= type_matches(inst, json_string_value(t));
		}
		if (!ok) {
			report(c, "type", "must be %s, not %s",
			       json_is_string(v) ? json_string_value(v) : "one of the listed types",
			       type_name(inst));
			return c->n - before; /* the rest would only repeat it */
		}
	}
	if ((v = json_object_get(sch, "enum"))) {
		int ok = 0;
		for (size_t i = 0; i < json_array_size(v) && !ok; i++)
			ok = aw_json_same(inst, json_array_get(v, i));
		if (!ok)
			report(c, "enum", "must be one of the allowed values");
	}
	if ((v = json_object_get(sch, "const")) && !aw_json_same(inst, v))
		report(c, "const", "must equal the constant value");
	FAIL_OR_CONTINUE();
	if (json_is_number(inst))
		validate_numeric(c, inst, sch);
	else if (json_is_string(inst))
		validate_string(c, inst, sch);
	else if (json_is_array(inst))
		validate_array(c, inst, sch, depth);
	else if (json_is_object(inst))
		validate_object(c, inst, sch, depth);
	FAIL_OR_CONTINUE();
	if ((v = json_object_get(sch, "allOf"))) {
		size_t i;
		json_t *sub;
		json_array_foreach (v, i, sub) {
			validate(c, inst, sub, depth + 1);
			FAIL_OR_CONTINUE();
		}
	}
	if ((v = json_object_get(sch, "anyOf"))) {
		int ok = 0;
		for (size_t i = 0; i < json_array_size(v) && !ok; i++)
			ok = count_sub(c, inst, json_array_get(v, i), depth + 1) == 0;
		if (!ok)
			report(c, "anyOf", "must match at least one of the alternatives");
	}
	if ((v = json_object_get(sch, "oneOf"))) {
		int matches = 0;
		for (size_t i = 0; i < json_array_size(v); i++)
			matches += count_sub(c, inst, json_array_get(v, i), depth + 1) == 0;
		if (matches != 1)
			report(c, "oneOf", "must match exactly one alternative, matches %d",
			       matches);
	}
	if ((v = json_object_get(sch, "not")) && count_sub(c, inst, v, depth + 1) == 0)
		report(c, "not", "must not match the schema under not");
	return c->n - before;
}

int aw_schema_validate(const aw_schema *s, const json_t *instance, aw_schema_error *errs, int max)
{
	long steps = 0;
	aw_buf path = AW_BUF_INIT(AW_JSON_PTR_MAX);
	vctx c = {s, errs, max, 0, 0, &steps, &path};
	validate(&c, instance, s->root, 0);
	aw_buf_free(&path);
	return c.n;
}
