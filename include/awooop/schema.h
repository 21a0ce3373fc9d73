/*
 * schema.h - a JSON Schema (draft-07) validator for the keywords contracts
 * use: type, enum, const, numeric bounds, multipleOf, string lengths (code
 * points) and pattern (PCRE2, unanchored), items/additionalItems, array and
 * object sizes, uniqueItems, properties/patternProperties/additionalProperties,
 * required, allOf/anyOf/oneOf/not, boolean schemas and local $ref ("#",
 * "#/definitions/x", any JSON pointer into the document). A schema using any
 * other keyword in a schema position is refused at compile time, so nothing
 * is silently ignored. Proven against the official JSON Schema Test Suite.
 *
 * A compiled schema is immutable and thread-safe. It holds a reference to the
 * json_t it was compiled from.
 */
#ifndef AWOOOP_SCHEMA_H
#define AWOOOP_SCHEMA_H

#include <jansson.h>

#include "awooop/err.h"

typedef struct aw_schema aw_schema;

typedef struct {
	char pointer[256]; /* JSON pointer into the instance ("" = the root) */
	char keyword[32];  /* the schema keyword that failed */
	char message[224];
} aw_schema_error;

/* AW_E_REQ_INVALID with err->where = the schema pointer of the problem when
 * the schema is malformed or uses an unsupported keyword. */
aw_err aw_schema_compile(json_t *schema, aw_schema **out, aw_error *err);
void aw_schema_free(aw_schema *s);
/* Number of errors (0 = valid); up to max are written to errs (may be NULL). */
int aw_schema_validate(const aw_schema *s, const json_t *instance, aw_schema_error *errs, int max);
/* 1 if the schema (compiled or not) uses only supported keywords. */
int aw_schema_supported(const json_t *schema, char *why, size_t whylen);

#endif
