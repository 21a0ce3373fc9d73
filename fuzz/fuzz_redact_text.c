/*
 * fuzz_redact_text.c - the redaction engine on arbitrary bytes, whole-buffer
 * and streamed in chunks split where the input says. Checks: no crash, output
 * NUL-terminated at its length, and streamed output identical to whole-buffer
 * output (chunking never changes what is redacted).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/redact.h"

typedef struct {
	char *buf;
	size_t len;
} acc;

static int sink(void *ud, const char *d, size_t n)
{
	acc *a = ud;
	char *nb = realloc(a->buf, a->len + n + 1);
	if (!nb)
		return -1;
	memcpy(nb + a->len, d, n);
	a->buf = nb;
	a->len += n;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *out = NULL;
	size_t n = 0;
	if (aw_redact_text((const char *)data, size, &out, &n, NULL) != AW_OK)
		return 0;
	if (out[n] != '\0')
		abort();
	acc a = {0};
	aw_redact_stream *s = aw_redact_stream_new(sink, &a, NULL);
	size_t cut = size ? data[0] % (size + 1) : 0;
	aw_redact_stream_feed(s, (const char *)data, cut);
	aw_redact_stream_feed(s, (const char *)data + cut, size - cut);
	aw_redact_stream_finish(s);
	/* streams flush at HOLD boundaries far above fuzz sizes, so equal */
	if (a.len != n || (n && memcmp(a.buf, out, n) != 0))
		abort();
	free(a.buf);
	free(out);
	return 0;
}
