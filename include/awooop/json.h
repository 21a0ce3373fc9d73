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

#include "awooop/buf.h"
#include "awooop/err.h"

/* json_loadb, faster on the calls' bodies (src/core/json_load.c): the same
 * values or, for anything it is not sure of, json_loadb's own answer. flags
 * other than JSON_REJECT_DUPLICATES and JSON_DECODE_ANY go to json_loadb. */
json_t *aw_json_loadb(const char *buf, size_t len, size_t flags, json_error_t *je);
/* json_dumps, faster: the same text (JSON_COMPACT, with or without
 * JSON_ENCODE_ANY; other flags go to json_dumps). Free it with free(). */
char *aw_json_dumps(const json_t *v, size_t flags);
/* Parses len bytes as one JSON object. AW_E_REQ_JSON on anything else;
 * AW_E_REQ_INVALID (err->where: the pointer) for a number the number policy
 * refuses (aw_json_check_numbers). */
aw_err aw_json_parse_object(const char *buf, size_t len, json_t **out, aw_error *err);
/* The number policy: every number within +-2^53, so that it reads back equal
 * from both stores. AW_E_REQ_INVALID with the pointer of the first offender. */
aw_err aw_json_check_numbers(const json_t *v, aw_error *err);
/* AW_E_REQ_UNKNOWN_FIELD naming the first member of obj not in allowed (NULL-ended). */
aw_err aw_json_only(const json_t *obj, const char *const *allowed, aw_error *err);
/* Borrowed string member. required=0 leaves *out NULL when absent or null.
 * AW_E_REQ_INVALID when present but not a string. */
aw_err aw_json_str(const json_t *obj, const char *key, int required, const char **out,
		   aw_error *err);
/* Appends "/" and tok escaped as an RFC 6901 reference token ("~" -> "~0",
 * "/" -> "~1"): the one JSON pointer builder. AW_E_LIMIT past b's maximum. */
aw_err aw_json_ptr_push(aw_buf *b, const char *tok);
/* Appends "/" and an array index. */
aw_err aw_json_ptr_push_index(aw_buf *b, size_t i);
/* The ceiling of every JSON pointer awooop builds: far above what a 1 MiB
 * body can produce, low enough to refuse a runaway. */
#define AW_JSON_PTR_MAX ((size_t)16 << 20)

/* 1 when a and b are the same JSON value, numbers compared by value (1 ==
 * 1.0: RFC 8785 writes both "1"), objects by members in any order. */
int aw_json_same(const json_t *a, const json_t *b);

/* Serialises compactly; malloc'd, caller frees. Steals nothing. */
char *aw_json_dump(const json_t *v);

#endif
