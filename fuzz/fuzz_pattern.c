/*
 * fuzz_pattern.c - a tenant's pattern (pattern.h) on arbitrary bytes: the
 * first line is the pattern, the rest the text. A pattern that compiles must
 * match within its limits (libFuzzer's -timeout catches one that does not)
 * and answer 1, 0 or -1; a refused one must say why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/pattern.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t plen = nl ? (size_t)(nl - data) : size;
	char *src = strndup((const char *)data, plen);
	if (!src)
		return 0;
	aw_pattern *p = NULL;
	aw_error err = {0};
	if (aw_pattern_compile(src, &p, &err) == AW_OK) {
		const char *text = nl ? (const char *)nl + 1 : "";
		size_t tlen = nl ? size - plen - 1 : 0;
		int m = aw_pattern_match(p, text, tlen);
		if (m < -1 || m > 1)
			abort();
		aw_pattern_free(p);
	} else if (!err.msg[0] || p) {
		abort();
	}
	free(src);
	return 0;
}
