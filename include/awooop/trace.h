/*
 * trace.h - W3C Trace Context `traceparent` (version 00 format):
 *   "00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>"
 * Lowercase hex only; version "ff" and all-zero ids are invalid; a future version
 * may carry more fields after a '-', which we ignore. An invalid header means
 * "start a new trace", never an error to the caller.
 */
#ifndef AWOOOP_TRACE_H
#define AWOOOP_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define AW_TRACE_ID_LEN 32
#define AW_SPAN_ID_LEN 16
#define AW_TRACEPARENT_LEN 55

typedef struct {
	char trace_id[AW_TRACE_ID_LEN + 1];
	char span_id[AW_SPAN_ID_LEN + 1]; /* parent-id as received, or ours */
	uint8_t flags;
} aw_trace;

/* 0 and fills out when header (len bytes, need not be NUL-terminated) is valid. */
int aw_trace_parse(const char *header, size_t len, aw_trace *out);
/* New random trace and span (flags 01: sampled). */
void aw_trace_new(aw_trace *out);
/* Continues in: same trace id and flags, a new span id for this hop. Starts a new
 * trace when in is NULL. */
void aw_trace_child(const aw_trace *in, aw_trace *out);
/* out must hold AW_TRACEPARENT_LEN + 1 bytes. */
void aw_trace_format(const aw_trace *t, char *out);

#endif
