/*
 * fuzz_schema.c - the JSON Schema compiler and validator on arbitrary input:
 * the bytes before the first NUL are the schema, the rest the instance. Checks:
 * no crash or unbounded recursion, and the error count agrees with validity
 * when errors are collected or not.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t ns = nul ? (size_t)(nul - data) : size;
	json_t *schema = json_loadb((const char *)data, ns, JSON_DECODE_ANY, NULL);
	json_t *inst = nul ? json_loadb((const char *)nul + 1, size - ns - 1, JSON_DECODE_ANY, NULL)
			   : json_null();
	aw_schema *s = NULL;
	aw_error err;
	if (schema && inst && aw_schema_compile(schema, &s, &err) == AW_OK) {
		aw_schema_error errs[8];
		int a = aw_schema_validate(s, inst, errs, 8);
		int b = aw_schema_validate(s, inst, NULL, 0);
		if ((a == 0) != (b == 0))
			abort();
		aw_schema_free(s);
	}
	json_decref(schema);
	json_decref(inst);
	return 0;
}
