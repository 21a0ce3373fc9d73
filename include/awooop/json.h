/*
 * json.h - strict decoding of outside JSON on top of jansson.
 *
 * Request bodies must be one JSON object, UTF-8, no duplicate keys, no unknown
 * fields. Errors carry the JSON pointer of the offending member in err->where.
 * Returned json_t references are new references: the caller json_decref()s them.
 */
#ifndef AWOOOP_JSON_H
#define AWOOOP_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "awooop/err.h"

/* Parses len bytes as one JSON object. AW_E_REQ_JSON on anything else. */
aw_err aw_json_parse_object(const char *buf, size_t len, json_t **out, aw_error *err);
/* AW_E_REQ_UNKNOWN_FIELD naming the first member of obj not in allowed (NULL-ended). */
aw_err aw_json_only(const json_t *obj, const char *const *allowed, aw_error *err);
/* Borrowed string member. required=0 leaves *out NULL when absent or null.
 * AW_E_REQ_INVALID when present but not a string. */
aw_err aw_json_str(const json_t *obj, const char *key, int required, const char **out,
		   aw_error *err);
/* Serialises compactly; malloc'd, caller frees. Steals nothing. */
char *aw_json_dump(const json_t *v);

#endif
