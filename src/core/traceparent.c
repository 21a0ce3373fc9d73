/*
 * traceparent.c - parse and format W3C traceparent headers (see trace.h).
 * The parser reads at most the 55 fixed bytes and never trusts a terminator,
 * so it is safe on raw header bytes; it has a fuzz target (fuzz/fuzz_traceparent.c).
 */
#include "awooop/trace.h"

#include <stdio.h>
#include <string.h>

#include "awooop/crypto.h"

static int lhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int hex_field(const char *p, size_t n, int *all_zero)
{
	*all_zero = 1;
	for (size_t i = 0; i < n; i++) {
		if (lhex(p[i]) < 0)
			return -1;
		if (p[i] != '0')
			*all_zero = 0;
	}
	return 0;
}

int aw_trace_parse(const char *h, size_t len, aw_trace *out)
{
	int zero;
	if (!h || len < AW_TRACEPARENT_LEN)
		return -1;
	if (hex_field(h, 2, &zero) < 0 || (h[0] == 'f' && h[1] == 'f'))
		return -1;
	int v00 = h[0] == '0' && h[1] == '0';
	if (v00 && len != AW_TRACEPARENT_LEN)
		return -1;
	if (!v00 && len > AW_TRACEPARENT_LEN && h[AW_TRACEPARENT_LEN] != '-')
		return -1;
	if (h[2] != '-' || h[35] != '-' || h[52] != '-')
		return -1;
	if (hex_field(h + 3, AW_TRACE_ID_LEN, &zero) < 0 || zero)
		return -1;
	if (hex_field(h + 36, AW_SPAN_ID_LEN, &zero) < 0 || zero)
		return -1;
	if (hex_field(h + 53, 2, &zero) < 0)
		return -1;
	memcpy(out->trace_id, h + 3, AW_TRACE_ID_LEN);
	out->trace_id[AW_TRACE_ID_LEN] = '\0';
	memcpy(out->span_id, h + 36, AW_SPAN_ID_LEN);
	out->span_id[AW_SPAN_ID_LEN] = '\0';
	out->flags = (uint8_t)(lhex(h[53]) << 4 | lhex(h[54]));
	return 0;
}

/* Random non-zero id of n bytes as hex. */
static void random_id(char *out, size_t n)
{
	uint8_t b[16];
	do {
		aw_random_bytes(b, n);
	} while (aw_ct_equal(b, (uint8_t[16]){0}, n));
	aw_hex(b, n, out);
}

void aw_trace_new(aw_trace *out)
{
	random_id(out->trace_id, AW_TRACE_ID_LEN / 2);
	random_id(out->span_id, AW_SPAN_ID_LEN / 2);
	out->flags = 1;
}

void aw_trace_child(const aw_trace *in, aw_trace *out)
{
	if (!in) {
		aw_trace_new(out);
		return;
	}
	aw_trace t = *in;
	random_id(t.span_id, AW_SPAN_ID_LEN / 2);
	*out = t;
}

void aw_trace_format(const aw_trace *t, char *out)
{
	snprintf(out, AW_TRACEPARENT_LEN + 1, "00-%s-%s-%02x", t->trace_id, t->span_id, t->flags);
}
