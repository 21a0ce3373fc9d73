/*
 * json.c - strict JSON decoding helpers (see json.h). Everything a client sends
 * goes through aw_json_parse_object first; it has a fuzz target
 * (fuzz/fuzz_body.c) together with the request decoders that use it.
 */
#include "awooop/json.h"

#include <stdio.h>
#include <string.h>

aw_err aw_json_parse_object(const char *buf, size_t len, json_t **out, aw_error *err)
{
	json_error_t je;
	json_t *v = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!v)
		return aw_fail(err, AW_E_REQ_JSON, "malformed JSON at line %d column %d: %s",
			       je.line, je.column, je.text);
	if (!json_is_object(v)) {
		json_decref(v);
		return aw_fail(err, AW_E_REQ_JSON, "the body must be a JSON object");
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
			char ptr[128];
			/* JSON pointer escaping: ~ -> ~0, / -> ~1; truncated if long */
			size_t o = 0;
			ptr[o++] = '/';
			for (const char *k = key; *k && o < sizeof ptr - 3; k++) {
				if (*k == '~' || *k == '/') {
					ptr[o++] = '~';
					ptr[o++] = *k == '~' ? '0' : '1';
				} else {
					ptr[o++] = *k;
				}
			}
			ptr[o] = '\0';
			return aw_fail_at(err, AW_E_REQ_UNKNOWN_FIELD, ptr, "unknown field %s",
					  ptr);
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

char *aw_json_dump(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}
