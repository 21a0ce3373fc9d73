/*
 * fuzz_traceparent.c - the W3C traceparent parser on arbitrary bytes. Checks
 * that an accepted header round-trips through aw_trace_format unchanged (for
 * version 00) and never yields an all-zero id.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	aw_trace t;
	if (aw_trace_parse((const char *)data, size, &t) != 0)
		return 0;
	if (strspn(t.trace_id, "0") == AW_TRACE_ID_LEN || strspn(t.span_id, "0") == AW_SPAN_ID_LEN)
		abort();
	char out[AW_TRACEPARENT_LEN + 1];
	aw_trace_format(&t, out);
	if (size == AW_TRACEPARENT_LEN && data[0] == '0' && data[1] == '0' &&
	    memcmp(out, data, size) != 0)
		abort();
	aw_trace child;
	aw_trace_child(&t, &child);
	if (strcmp(child.trace_id, t.trace_id) != 0)
		abort();
	return 0;
}
