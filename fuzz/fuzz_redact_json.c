/*
 * fuzz_redact_json.c - JSON-aware redaction on arbitrary documents: whatever
 * parses must still serialise to valid JSON after redaction, and no value under
 * a sensitive key may survive.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/redact.h"

static void check(json_t *v)
{
	const char *k;
	json_t *x;
	size_t i;
	if (json_is_object(v)) {
		json_object_foreach (v, k, x) {
			if (aw_redact_sensitive_key(k) && !json_is_null(x) &&
			    strcmp(json_string_value(x) ? json_string_value(x) : "",
				   "[REDACTED:sensitive_field]") != 0)
				abort();
			check(x);
		}
	} else if (json_is_array(v)) {
		json_array_foreach (v, i, x)
			check(x);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (!doc)
		return 0;
	if (aw_redact_json(doc, NULL) == AW_OK) {
		char *s = json_dumps(doc, JSON_ENCODE_ANY | JSON_COMPACT);
		if (!s)
			abort();
		json_t *back = json_loads(s, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		if (!back)
			abort();
		json_decref(back);
		free(s);
		check(doc);
	}
	json_decref(doc);
	return 0;
}
