/*
 * otel.h - OpenTelemetry traces: finished spans, exported over OTLP/HTTP with
 * the JSON encoding (POST {endpoint}/v1/traces) by one background thread.
 *
 * A door describes a span when its work has ended - begin (with the start it
 * measured), attributes, end - and aw_span_end only queues it: a call never
 * waits for the exporter. The queue is bounded (a project may hold at most
 * half of it); a span that finds no room is dropped and counted
 * (awooop_otel_spans_dropped_total). The exporter sends batches (up to
 * OTEL_BSP_MAX_EXPORT_BATCH_SIZE spans, at least every
 * OTEL_BSP_SCHEDULE_DELAY ms), retries 429/502/503/504 and connection
 * failures with backoff, and ticks the loop metric "otel_exporter".
 *
 * Spans follow the trace they belong to: a trace whose flags say "not
 * sampled" (a caller's traceparent ending -00) is never exported. No span
 * carries a prompt, a completion, tool arguments or results.
 *
 * Process-wide, like the metrics: aw_otel_start once (serve), aw_otel_stop at
 * the end. Without a start (or without an endpoint) aw_span_begin returns
 * NULL and every other call here accepts NULL: the hooks cost a load.
 */
#ifndef AWOOOP_OTEL_H
#define AWOOOP_OTEL_H

#include <stdint.h>

#include "awooop/err.h"
#include "awooop/trace.h"

typedef enum {
	AW_SPAN_INTERNAL = 1, /* OTLP's SpanKind numbers */
	AW_SPAN_SERVER = 2,
	AW_SPAN_CLIENT = 3,
} aw_span_kind;

typedef struct {
	/* the base URL (".../v1/traces" is appended), as
	 * OTEL_EXPORTER_OTLP_ENDPOINT; NULL: the OTEL_EXPORTER_OTLP_* variables
	 * decide (none set: no export) */
	const char *endpoint;
	const char *role; /* the resource's awooop.role; NULL: none */
} aw_otel_opts;

/* Reads the OTEL_* variables (endpoint, headers, timeout, service name,
 * resource attributes, batch settings) and starts the exporter. AW_OK and
 * nothing started when no endpoint is configured or OTEL_SDK_DISABLED=true;
 * AW_E_CONFIG for a malformed setting (the message names it, never a header
 * value). */
aw_err aw_otel_start(const aw_otel_opts *o, aw_error *err);
/* Stops the exporter: what is queued gets one last try, and a POST in
 * flight its end, within the export timeout capped at 5 s; then the thread
 * ends. Safe without a start. */
void aw_otel_stop(void);
/* 1 while an exporter runs. */
int aw_otel_on(void);

typedef struct aw_span aw_span;

/* A span of trace t (its trace id and flags; the span's own id is
 * t->span_id) under parent (16 hex, or NULL/"" for a root), begun at
 * start_mono_ns (aw_clock_mono_ns). remote: the parent came from another
 * process (a caller's traceparent). NULL when nothing is exported (no
 * exporter, trace not sampled, out of memory). name and every key must be
 * literals (kept as pointers); values are copied. */
aw_span *aw_span_begin(const char *name, aw_span_kind kind, const aw_trace *t, const char *parent,
		       int remote, int64_t start_mono_ns);
/* The span's name is "prefix suffix" (a copy; suffix NULL or "": prefix). */
void aw_span_name(aw_span *s, const char *prefix, const char *suffix);
void aw_span_str(aw_span *s, const char *key, const char *value); /* NULL value: none */
void aw_span_int(aw_span *s, const char *key, long long value);
/* The project the span is charged to (its share of the queue) and its
 * awooop.project attribute. */
void aw_span_project(aw_span *s, const char *project);
/* Status ERROR with a message; error.type set to type (a stable code). */
void aw_span_error(aw_span *s, const char *type, const char *message);
/* Ends the span now and queues it (or drops and counts it); s is the
 * exporter's from here on. */
void aw_span_end(aw_span *s);

/* The span id that stands for run run_id (a hash of it): the parent of its
 * steps' spans, exported once when the run is submitted. out: 17 bytes. */
void aw_otel_run_span_id(const char *run_id, char *out);

/* A comma-separated list of key=value pairs with percent-encoded values
 * (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES): each pair, decoded
 * and trimmed, to each(ud, key, value); each returning non-zero stops with
 * AW_E_CONFIG. AW_E_CONFIG for a pair without '=' or key, a bad escape, a
 * control byte in a value, or a list over 8 KiB. what names the list in
 * messages. */
aw_err aw_otel_parse_list(const char *list, const char *what,
			  int (*each)(void *ud, const char *key, const char *value), void *ud,
			  aw_error *err);

/* Counters for tests (the same as the metrics): spans queued, exported,
 * dropped (queue full or a project's share), lost (export failed or
 * refused) since the start. */
typedef struct {
	long long queued, exported, dropped, lost;
} aw_otel_stats;
void aw_otel_stats_get(aw_otel_stats *out);

#endif
