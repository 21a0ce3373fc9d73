/*
 * flow.c - data and control flow between a run's steps (run.h): step names,
 * references {"$ref": POINTER} into the run's flow document, conditions
 * ("when"), retry policies ("retry") and the table of failure codes that are
 * never retried. Submission checks them (pure; fuzz/fuzz_run.c drives them
 * through aw_run_request_decode); the workers resolve references against the
 * run's input and the journaled results of earlier steps (rounds.c).
 * Invariant: a reference accepted at submission names the input or a step
 * before its own, so resolution reads nothing a later step or another run
 * wrote.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/buf.h"
#include "awooop/ident.h"
#include "awooop/json.h"
#include "awooop/run.h"
#include "awooop/str.h"

/* ---- pointers (RFC 6901) ---- */

/* The token of pointer *p (at a '/'), decoded into tok; *p moves past it.
 * -1 for a '~' not followed by 0 or 1, or a token longer than cap - 1. */
static int next_token(const char **p, char *tok, size_t cap)
{
	const char *s = *p + 1;
	size_t n = 0;
	for (; *s && *s != '/'; s++) {
		char c = *s;
		if (c == '~') {
			if (s[1] != '0' && s[1] != '1')
				return -1;
			c = s[1] == '0' ? '~' : '/';
			s++;
		}
		if (n + 1 >= cap)
			return -1;
		tok[n++] = c;
	}
	tok[n] = '\0';
	*p = s;
	return 0;
}

/* The member or element tok of v; NULL when there is none. */
static const json_t *child(const json_t *v, const char *tok)
{
	if (json_is_object(v))
		return json_object_get(v, tok);
	if (!json_is_array(v) || !*tok || (tok[0] == '0' && tok[1]) || strlen(tok) > 9)
		return NULL;
	size_t i = 0;
	for (const char *c = tok; *c; c++) {
		if (*c < '0' || *c > '9')
			return NULL;
		i = i * 10 + (size_t)(*c - '0');
	}
	return json_array_get(v, i);
}

/* The value at ptr in doc; NULL when absent or ptr is malformed. */
static const json_t *lookup(const json_t *doc, const char *ptr)
{
	char tok[AW_RUN_REF_MAX + 1];
	const json_t *v = doc;
	const char *p = ptr;
	if (!p)
		return NULL;
	while (v && *p == '/')
		if (next_token(&p, tok, sizeof tok) != 0)
			return NULL;
		else
			v = child(v, tok);
	return *p ? NULL : v;
}

/* The pointer of a reference object: "$ref" a string that does not begin
 * with '#' (those are JSON Schema's). NULL for anything else. */
static const char *ref_of(const json_t *v)
{
	const char *s = json_is_object(v) ? json_string_value(json_object_get(v, "$ref")) : NULL;
	return s && s[0] != '#' ? s : NULL;
}

int aw_run_has_refs(const json_t *v)
{
	if (ref_of(v))
		return 1;
	const char *k;
	json_t *x;
	size_t i;
	if (json_is_object(v))
		json_object_foreach ((json_t *)v, k, x)
			if (aw_run_has_refs(x))
				return 1;
	if (json_is_array(v))
		json_array_foreach (v, i, x)
			if (aw_run_has_refs(x))
				return 1;
	return 0;
}

int aw_run_ref_near(const json_t *args, const char *where)
{
	char tok[AW_RUN_REF_MAX + 1];
	const json_t *v = args;
	const char *p = where ? where : "";
	while (v) {
		if (ref_of(v))
			return 1; /* at or inside a reference */
		if (*p != '/')
			break;
		if (next_token(&p, tok, sizeof tok) != 0)
			return 0;
		v = child(v, tok);
	}
	return v && aw_run_has_refs(v); /* above one */
}

/* ---- submission checks ---- */

/* Fails at prefix + path (the pointer of the offending member in the
 * request). A pointer longer than err->where holds is not cut: the error
 * names the step's member and says so. */
static aw_err fail_at(aw_error *err, aw_err code, const char *prefix, const aw_buf *path,
		      const char *msg)
{
	char where[sizeof err->where];
	int n = snprintf(where, sizeof where, "%s%s", prefix, aw_buf_str(path));
	if (n < 0 || (size_t)n >= sizeof where)
		return aw_fail_at(err, code, prefix, "%s (at a pointer longer than %zu bytes)", msg,
				  sizeof where - 1);
	return aw_fail_at(err, code, where, "%s", msg);
}

/* The step of workflow named name, or -1. */
static int step_named(const json_t *wf, const char *name)
{
	for (size_t k = 0; k < json_array_size(wf); k++) {
		const char *n = json_string_value(json_object_get(json_array_get(wf, k), "name"));
		if (n && strcmp(n, name) == 0)
			return (int)k;
	}
	return -1;
}

/* NULL when ptr is a reference step i of wf may hold, else why not (in msg). */
static const char *pointer_problem(const json_t *wf, size_t i, const json_t *ref, char *msg,
				   size_t cap)
{
	const char *ptr = json_string_value(ref);
	char tok[AW_RUN_REF_MAX + 1];
	if (!ptr)
		return "a $ref holds a JSON pointer string (a literal \"$ref\" member can travel"
		       " in the run's input: refer to it)";
	if (strlen(ptr) != json_string_length(ref))
		return "a reference may not hold a NUL character";
	if (strlen(ptr) > AW_RUN_REF_MAX) {
		snprintf(msg, cap, "a reference is at most %d bytes", AW_RUN_REF_MAX);
		return msg;
	}
	const char *p = ptr;
	if (*p != '/' || next_token(&p, tok, sizeof tok) != 0 ||
	    (strcmp(tok, "input") != 0 && strcmp(tok, "steps") != 0))
		return "a reference is a JSON pointer (RFC 6901) beginning with /input or"
		       " /steps/<name>";
	int steps = strcmp(tok, "steps") == 0;
	if (steps) {
		if (*p != '/' || next_token(&p, tok, sizeof tok) != 0)
			return "/steps/ is followed by the name of an earlier step";
		int k = step_named(wf, tok);
		if (k < 0) {
			snprintf(msg, cap, "no step is named %.64s", tok);
			return msg;
		}
		if ((size_t)k >= i) {
			snprintf(msg, cap,
				 "step %.64s (step %d) does not run before this one (step %zu):"
				 " only earlier steps' results can be referred to",
				 tok, k + 1, i + 1);
			return msg;
		}
		if (*p == '/') {
			if (next_token(&p, tok, sizeof tok) != 0 ||
			    (strcmp(tok, "result") != 0 && strcmp(tok, "state") != 0))
				return "below /steps/<name> there are only /result and /state";
			if (strcmp(tok, "state") == 0 && *p)
				return "a step's /state is a string: nothing below it";
		}
	}
	while (*p == '/')
		if (next_token(&p, tok, sizeof tok) != 0)
			return "malformed JSON pointer: '~' is followed by 0 or 1";
	return NULL;
}

/* Every reference inside v (step i's args), path its pointer below prefix. */
static aw_err check_refs(const json_t *wf, size_t i, const json_t *v, const char *prefix,
			 aw_buf *path, aw_error *err)
{
	char msg[200];
	if (json_is_object(v)) {
		json_t *ref = json_object_get(v, "$ref");
		const char *s = json_string_value(ref);
		if (ref && !(s && s[0] == '#')) { /* ours ('#': JSON Schema's, left alone) */
			const char *why = pointer_problem(wf, i, ref, msg, sizeof msg);
			if (!why && json_object_size(v) != 1)
				why = "a reference object holds \"$ref\" alone";
			return why ? fail_at(err, AW_E_RUN_REF, prefix, path, why) : AW_OK;
		}
		const char *k;
		json_t *x;
		size_t mark = path->len;
		json_object_foreach ((json_t *)v, k, x) {
			if (aw_json_ptr_push(path, k))
				return aw_fail_at(err, AW_E_LIMIT, prefix,
						  "a member name is too long");
			aw_err e = check_refs(wf, i, x, prefix, path, err);
			aw_buf_truncate(path, mark);
			if (e)
				return e;
		}
	} else if (json_is_array(v)) {
		size_t mark = path->len, k;
		json_t *x;
		json_array_foreach (v, k, x) {
			if (aw_json_ptr_push_index(path, k))
				return aw_fail_at(err, AW_E_LIMIT, prefix,
						  "the args nest too deep");
			aw_err e = check_refs(wf, i, x, prefix, path, err);
			aw_buf_truncate(path, mark);
			if (e)
				return e;
		}
	}
	return AW_OK;
}

/* aw_json_only on a member of the step at where: its refusal says
 * AW_E_RUN_WORKFLOW, with the unknown member's pointer under where. */
static aw_err only_members(const json_t *obj, const char *const *allowed, const char *where,
			   aw_error *err)
{
	if (!aw_json_only(obj, allowed, err))
		return AW_OK;
	char inner[sizeof err->where];
	AW_COPY_ARRAY(inner, err->where);
	snprintf(err->where, sizeof err->where, "%.60s%.60s", where, inner);
	err->err = AW_E_RUN_WORKFLOW;
	return AW_E_RUN_WORKFLOW;
}

static aw_err check_when(const json_t *wf, size_t i, const json_t *when, const char *where,
			 aw_error *err)
{
	static const char *const allowed[] = {"$ref", "equals", "not_equals", "exists", NULL};
	if (!json_is_object(when))
		return aw_fail_at(err, AW_E_RUN_WORKFLOW, where,
				  "when is {\"$ref\": POINTER, and one of \"equals\": VALUE,"
				  " \"not_equals\": VALUE, \"exists\": true|false}");
	aw_err e = only_members(when, allowed, where, err);
	if (e)
		return e;
	int ops = !!json_object_get(when, "equals") + !!json_object_get(when, "not_equals") +
		  !!json_object_get(when, "exists");
	if (ops != 1)
		return aw_fail_at(err, AW_E_RUN_WORKFLOW, where,
				  "when holds exactly one of equals, not_equals, exists");
	json_t *ex = json_object_get(when, "exists");
	if (ex && !json_is_boolean(ex)) {
		char w[sizeof err->where];
		snprintf(w, sizeof w, "%.100s/exists", where);
		return aw_fail_at(err, AW_E_RUN_WORKFLOW, w, "exists is true or false");
	}
	json_t *ref = json_object_get(when, "$ref");
	char msg[200];
	const char *why = ref ? pointer_problem(wf, i, ref, msg, sizeof msg)
			      : "when names the value it tests with \"$ref\": POINTER";
	return why ? aw_fail_at(err, ref ? AW_E_RUN_REF : AW_E_RUN_WORKFLOW, where, "%s", why)
		   : AW_OK;
}

static aw_err retry_int(const json_t *retry, const char *key, int lo, int hi, const char *where,
			aw_error *err)
{
	json_t *v = json_object_get(retry, key);
	if (!v ||
	    (json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi))
		return AW_OK;
	char w[sizeof err->where];
	snprintf(w, sizeof w, "%.80s/%s", where, key);
	return aw_fail_at(err, AW_E_RUN_WORKFLOW, w, "%s is an integer %d..%d", key, lo, hi);
}

static aw_err check_retry(const json_t *retry, const char *where, aw_error *err)
{
	static const char *const allowed[] = {"attempts", "backoff_ms", "max_backoff_ms",
					      "permanent", NULL};
	if (!json_is_object(retry))
		return aw_fail_at(err, AW_E_RUN_WORKFLOW, where,
				  "retry is {\"attempts\", \"backoff_ms\", \"max_backoff_ms\","
				  " \"permanent\": [codes]}");
	aw_err e = only_members(retry, allowed, where, err);
	if (e)
		return e;
	if ((e = retry_int(retry, "attempts", 1, 100, where, err)) ||
	    (e = retry_int(retry, "backoff_ms", 0, 3600000, where, err)) ||
	    (e = retry_int(retry, "max_backoff_ms", 0, 3600000, where, err)))
		return e;
	json_t *b = json_object_get(retry, "backoff_ms"),
	       *m = json_object_get(retry, "max_backoff_ms");
	char w[sizeof err->where];
	if (b && m && json_integer_value(m) < json_integer_value(b)) {
		snprintf(w, sizeof w, "%.80s/max_backoff_ms", where);
		return aw_fail_at(err, AW_E_RUN_WORKFLOW, w,
				  "max_backoff_ms is at least backoff_ms");
	}
	json_t *p = json_object_get(retry, "permanent"), *c;
	size_t k;
	snprintf(w, sizeof w, "%.80s/permanent", where);
	if (p && (!json_is_array(p) || json_array_size(p) > AW_RUN_PERMANENT_MAX))
		return aw_fail_at(err, AW_E_RUN_WORKFLOW, w,
				  "permanent is an array of at most %d error codes",
				  AW_RUN_PERMANENT_MAX);
	json_array_foreach (p, k, c) {
		aw_err code;
		const char *s = json_string_value(c);
		if (!s || aw_err_from_code(s, &code) != 0 || code == AW_OK) {
			snprintf(w, sizeof w, "%.80s/permanent/%zu", where, k);
			return aw_fail_at(err, AW_E_RUN_WORKFLOW, w,
					  "not an error code of docs/errors.md (e.g. E-RUN-005)");
		}
	}
	return AW_OK;
}

aw_err aw_run_flow_check_step(const json_t *wf, size_t i, aw_error *err)
{
	const json_t *step = json_array_get(wf, i);
	char where[64];
	json_t *name = json_object_get(step, "name");
	if (name) {
		snprintf(where, sizeof where, "/workflow/%zu/name", i);
		const char *n = json_string_value(name);
		if (!n || strlen(n) != json_string_length(name) || !aw_ident_name_ok(n))
			return aw_fail_at(err, AW_E_RUN_WORKFLOW, where,
					  "a step name is 1..63 of [A-Za-z0-9._-], beginning with"
					  " a letter or digit");
		int k = step_named(wf, n);
		if (k >= 0 && (size_t)k < i)
			return aw_fail_at(err, AW_E_RUN_WORKFLOW, where,
					  "step %d is named %s already: names are unique", k + 1,
					  n);
	}
	json_t *when = json_object_get(step, "when");
	snprintf(where, sizeof where, "/workflow/%zu/when", i);
	aw_err e = when ? check_when(wf, i, when, where, err) : AW_OK;
	json_t *retry = json_object_get(step, "retry");
	snprintf(where, sizeof where, "/workflow/%zu/retry", i);
	if (!e && retry)
		e = check_retry(retry, where, err);
	json_t *args = json_object_get(step, "args");
	snprintf(where, sizeof where, "/workflow/%zu/args", i);
	if (!e && args) {
		aw_buf path = AW_BUF_INIT(AW_JSON_PTR_MAX);
		e = check_refs(wf, i, args, where, &path, err);
		aw_buf_free(&path);
	}
	return e;
}

/* ---- resolution ---- */

json_t *aw_run_flow_doc(const json_t *input)
{
	return json_pack("{s:O, s:{}}", "input", input ? input : json_null(), "steps");
}

int aw_run_flow_add(json_t *doc, const char *name, const char *state, const json_t *result)
{
	json_t *r = result ? json_deep_copy(result) : json_null();
	json_t *e = r ? json_pack("{s:s, s:o}", "state", state, "result", r) : NULL;
	return e && json_object_set_new(json_object_get(doc, "steps"), name, e) == 0 ? 0 : -1;
}

typedef struct {
	const json_t *doc;
	size_t total; /* bytes substituted so far */
	aw_buf path;  /* the pointer (within args) being resolved */
} resolver;

static aw_err resolve(resolver *r, const json_t *v, json_t **out, aw_error *err)
{
	*out = NULL;
	const char *ptr = ref_of(v);
	if (ptr) {
		const json_t *val = lookup(r->doc, ptr);
		if (!val)
			return aw_fail_at(err, AW_E_RUN_REF, aw_buf_str(&r->path),
					  "the reference %.120s (at args%.80s) finds nothing", ptr,
					  aw_buf_str(&r->path));
		r->total += json_dumpb(val, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
		if (r->total > AW_RUN_ARGS_MAX)
			return aw_fail_at(err, AW_E_LIMIT, aw_buf_str(&r->path),
					  "the values substituted into the step's args exceed %d"
					  " bytes",
					  AW_RUN_ARGS_MAX);
		*out = json_deep_copy(val);
	} else if (json_is_object(v)) {
		const char *k;
		json_t *x, *o = *out = json_object();
		size_t mark = r->path.len;
		json_object_foreach ((json_t *)v, k, x) {
			json_t *c = NULL;
			if (!o || aw_json_ptr_push(&r->path, k))
				break;
			aw_err e = resolve(r, x, &c, err);
			aw_buf_truncate(&r->path, mark);
			if (e || json_object_set_new(o, k, c) != 0) {
				json_decref(o);
				*out = NULL;
				return e ? e : aw_fail(err, AW_E_NOMEM, "out of memory");
			}
		}
		if (o && json_object_size(o) != json_object_size(v)) {
			json_decref(o);
			*out = NULL;
			return aw_fail(err, AW_E_LIMIT, "the args nest too deep");
		}
	} else if (json_is_array(v)) {
		size_t k, mark = r->path.len;
		json_t *x, *a = *out = json_array();
		json_array_foreach (v, k, x) {
			json_t *c = NULL;
			if (!a || aw_json_ptr_push_index(&r->path, k))
				break;
			aw_err e = resolve(r, x, &c, err);
			aw_buf_truncate(&r->path, mark);
			if (e || json_array_append_new(a, c) != 0) {
				json_decref(a);
				*out = NULL;
				return e ? e : aw_fail(err, AW_E_NOMEM, "out of memory");
			}
		}
		if (a && json_array_size(a) != json_array_size(v)) {
			json_decref(a);
			*out = NULL;
			return aw_fail(err, AW_E_LIMIT, "the args nest too deep");
		}
	} else {
		*out = json_deep_copy(v);
	}
	return *out ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
}

aw_err aw_run_resolve(const json_t *args, const json_t *doc, json_t **out, aw_error *err)
{
	resolver r = {doc, 0, AW_BUF_INIT(AW_JSON_PTR_MAX)};
	aw_err e = resolve(&r, args, out, err);
	aw_buf_free(&r.path);
	return e;
}

int aw_run_when_holds(const json_t *when, const json_t *doc)
{
	const json_t *v = lookup(doc, json_string_value(json_object_get(when, "$ref")));
	json_t *x;
	if ((x = json_object_get(when, "exists")))
		return (v != NULL) == json_is_true(x);
	if ((x = json_object_get(when, "equals")))
		return v && aw_json_same(v, x);
	if ((x = json_object_get(when, "not_equals")))
		return !(v && aw_json_same(v, x));
	return 0;
}

/* ---- what is never retried ----
 * The table says it for the codes a step can fail with; a code not in it is
 * permanent when its status is 4xx but 408 and 429 (the request, not the
 * moment, is wrong). docs/internals/runtime.md shows the same table. */
static const struct {
	aw_err code;
	int permanent;
} retry_table[] = {
	/* the run runtime's own */
	{AW_E_RUN_STEP, 0},	/* a step failed: transport, 5xx, a fail step */
	{AW_E_RUN_TIMEOUT, 0},	/* the attempt ran out of time */
	{AW_E_RUN_WORKFLOW, 1}, /* an unknown kind: the workflow is wrong */
	{AW_E_RUN_SECRET, 1},	/* a credential in the resolved args */
	{AW_E_RUN_REF, 1},	/* a reference finds nothing */
	{AW_E_RUN_EGRESS, 1},	/* the address is not the project's to reach */
	{AW_E_RUN_REFUSED, 1},	/* the server answered 4xx */
	{AW_E_LIMIT, 1},
	{AW_E_SECRET_REF, 1},
	{AW_E_SECRET_UNRESOLVED, 0}, /* the operator may provide it */
	{AW_E_STORE_CONFLICT, 0},
	/* the LLM gateway */
	{AW_E_LLM_POLICY, 1},
	{AW_E_LLM_ROUTE, 1},
	{AW_E_LLM_REFUSED, 1},
	{AW_E_LLM_PROMPT, 1},
	{AW_E_SCHEMA_OUTPUT, 1}, /* the gateway retried the model already */
	{AW_E_LLM_UPSTREAMS, 0},
	{AW_E_LLM_BROKEN, 0},
	{AW_E_LLM_CAP, 0},
	{AW_E_LLM_UNAVAILABLE, 0},
	{AW_E_LLM_BUSY, 0},
	/* the budget: a refusal stands until someone acts */
	{AW_E_BUDGET_SUSPENDED, 1},
	{AW_E_BUDGET_EXHAUSTED, 1},
	{AW_E_BUDGET_RUN, 1},
	{AW_E_BUDGET_PRICE, 1},
	{AW_E_BUDGET_UNPRICED, 1},
	{AW_E_BUDGET_PLATFORM, 1},
	{AW_E_BUDGET_NO_RUN, 1},
	/* the MCP gateway's gates */
	{AW_E_MCP_KEY, 1},
	{AW_E_MCP_TOOL, 1},
	{AW_E_MCP_POLICY, 1},
	{AW_E_MCP_PIN, 1},
	{AW_E_MCP_ARGS, 1},
	{AW_E_MCP_RATE, 0},
	{AW_E_MCP_BUDGET, 1},
	{AW_E_MCP_APPROVAL, 1},
	{AW_E_MCP_UPSTREAM, 0},
	{AW_E_MCP_PROTOCOL, 1},
	{AW_E_MCP_UNAVAILABLE, 0},
	{AW_E_MCP_STDIO, 1},
	{AW_E_MCP_BUSY, 0},
};

int aw_run_code_permanent(aw_err code)
{
	for (size_t i = 0; i < sizeof retry_table / sizeof *retry_table; i++)
		if (retry_table[i].code == code)
			return retry_table[i].permanent;
	int st = aw_err_http_status(code);
	return st >= 400 && st < 500 && st != 408 && st != 429;
}

aw_err aw_run_failure_cause(aw_err code, const char *msg)
{
	char c[32];
	size_t n = 0;
	if (code != AW_E_RUN_STEP || !msg || strncmp(msg, "E-", 2) != 0)
		return code;
	while (n < sizeof c - 1 && msg[n] && msg[n] != ':')
		c[n] = msg[n], n++;
	c[n] = '\0';
	aw_err cause;
	if (msg[n] != ':' || msg[n + 1] != ' ' || aw_err_from_code(c, &cause) != 0 ||
	    cause == AW_OK)
		return code;
	return cause;
}

int aw_run_failure_permanent(aw_err code, aw_err cause, const json_t *retry)
{
	if (aw_run_code_permanent(code) || aw_run_code_permanent(cause))
		return 1;
	size_t i;
	json_t *c;
	json_array_foreach (json_object_get(retry, "permanent"), i, c) {
		const char *s = json_string_value(c);
		if (s && (!strcmp(s, aw_err_code(code)) || !strcmp(s, aw_err_code(cause))))
			return 1;
	}
	return 0;
}
