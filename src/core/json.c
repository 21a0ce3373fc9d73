/*
 * json.c - strict JSON decoding helpers (see json.h). Everything a client sends
 * goes through aw_json_parse_object first; it has a fuzz target
 * (fuzz/fuzz_body.c) together with the request decoders that use it.
 */
#include "awooop/json.h"

#include <stdio.h>
#include <string.h>

/* The number policy (docs/contracts.md): what is accepted must read back
 * equal from either store, whose JSON texts differ (RFC 8785 form on SQLite,
 * jsonb's numeric on PostgreSQL). Both stay exact within +-2^53; beyond it an
 * integer can lose digits, and a large double comes back as an integer literal
 * too long for a C parser. So every number, integer or not, lies in
 * [-2^53, 2^53]; nothing else is refused or rounded. */
#define AW_JSON_NUM_MAX 9007199254740992.0 /* 2^53 */

static aw_err check_numbers(const json_t *v, aw_buf *path, aw_error *err)
{
	size_t mark = path->len;
	aw_err e = AW_OK;
	if (json_is_integer(v) || json_is_real(v)) {
		double x = json_number_value(v);
		json_int_t i = json_is_integer(v) ? json_integer_value(v) : 0;
		int bad = json_is_integer(v) ? (i > (1LL << 53) || i < -(1LL << 53))
					     : !(x >= -AW_JSON_NUM_MAX && x <= AW_JSON_NUM_MAX);
		if (bad)
			return aw_fail_at(err, AW_E_REQ_INVALID, aw_buf_str(path),
					  "numbers must lie within +-2^53 (9007199254740992)");
	} else if (json_is_array(v)) {
		for (size_t k = 0; !e && k < json_array_size(v); k++) {
			if (aw_json_ptr_push_index(path, k))
				return aw_fail(err, AW_E_LIMIT, "the body nests too deep");
			e = check_numbers(json_array_get(v, k), path, err);
			aw_buf_truncate(path, mark);
		}
	} else if (json_is_object(v)) {
		const char *k;
		json_t *x;
		json_object_foreach ((json_t *)v, k, x) {
			if (aw_json_ptr_push(path, k))
				return aw_fail(err, AW_E_LIMIT, "a member name is too long");
			e = check_numbers(x, path, err);
			aw_buf_truncate(path, mark);
			if (e)
				break;
		}
	}
	return e;
}

aw_err aw_json_check_numbers(const json_t *v, aw_error *err)
{
	aw_buf path = AW_BUF_INIT(AW_JSON_PTR_MAX);
	aw_err e = check_numbers(v, &path, err);
	aw_buf_free(&path);
	return e;
}

aw_err aw_json_parse_object(const char *buf, size_t len, json_t **out, aw_error *err)
{
	json_error_t je;
	json_t *v = aw_json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!v)
		return aw_fail(err, AW_E_REQ_JSON, "malformed JSON at line %d column %d: %s",
			       je.line, je.column, je.text);
	if (!json_is_object(v)) {
		json_decref(v);
		return aw_fail(err, AW_E_REQ_JSON, "the body must be a JSON object");
	}
	aw_err e = aw_json_check_numbers(v, err);
	if (e) {
		json_decref(v);
		return e;
	}
	*out = v;
	return AW_OK;
}

aw_err aw_json_only(const json_t *obj, const char *const *allowed, aw_error *err)
{
	const char *key;
	json_t *val;
	json_object_foreach ((json_t *)obj, key, val) {
		int ok = 0;
		for (const char *const *a = allowed; *a; a++)
			if (strcmp(*a, key) == 0)
				ok = 1;
		if (!ok) {
			aw_buf ptr = AW_BUF_INIT(AW_JSON_PTR_MAX);
			aw_json_ptr_push(&ptr, key);
			aw_err e = aw_fail_at(err, AW_E_REQ_UNKNOWN_FIELD, aw_buf_str(&ptr),
					      "unknown field %.200s", aw_buf_str(&ptr));
			aw_buf_free(&ptr);
			return e;
		}
	}
	return AW_OK;
}

aw_err aw_json_str(const json_t *obj, const char *key, int required, const char **out,
		   aw_error *err)
{
	char ptr[128];
	snprintf(ptr, sizeof ptr, "/%s", key);
	json_t *v = json_object_get(obj, key);
	*out = NULL;
	if (!v || json_is_null(v)) {
		if (required)
			return aw_fail_at(err, AW_E_REQ_INVALID, ptr, "%s is required", ptr);
		return AW_OK;
	}
	if (!json_is_string(v))
		return aw_fail_at(err, AW_E_REQ_INVALID, ptr, "%s must be a string", ptr);
	*out = json_string_value(v);
	return AW_OK;
}

aw_err aw_json_ptr_push(aw_buf *b, const char *tok)
{
	aw_buf_add(b, "/", 1);
	for (const char *run = tok, *t = tok;; t++) {
		if (*t == '~' || *t == '/' || !*t) {
			aw_buf_add(b, run, (size_t)(t - run));
			if (!*t)
				break;
			aw_buf_add(b, *t == '~' ? "~0" : "~1", 2);
			run = t + 1;
		}
	}
	return aw_buf_err(b);
}

aw_err aw_json_ptr_push_index(aw_buf *b, size_t i)
{
	return aw_buf_addf(b, "/%zu", i);
}

int aw_json_same(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b)) {
		if (json_is_integer(a) && json_is_integer(b))
			return json_integer_value(a) == json_integer_value(b);
		return json_number_value(a) == json_number_value(b);
	}
	if (json_typeof(a) != json_typeof(b))
		return 0;
	if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!aw_json_same(json_array_get(a, i), json_array_get(b, i)))
				return 0;
		return 1;
	}
	if (json_is_object(a)) {
		if (json_object_size(a) != json_object_size(b))
			return 0;
		const char *k;
		json_t *v;
		json_object_foreach ((json_t *)a, k, v) {
			json_t *o = json_object_get(b, k);
			if (!o || !aw_json_same(v, o))
				return 0;
		}
		return 1;
	}
	return json_equal((json_t *)a, (json_t *)b);
}

char *aw_json_dump(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}
