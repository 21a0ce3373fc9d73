/*
 * loggen.h - generators for the log formats bench/redact measures: the
 * bench's own synthetic lines, nginx and Apache combined access logs, RFC 3164
 * and RFC 5424 syslog, PostgreSQL server logs, JSON lines with trace ids,
 * Kubernetes (CRI) container logs, Java and Python stack traces, Prometheus
 * exposition lines, lines that end in a number before a date-led line, and
 * agent traffic (JSON lines of LLM requests and answers, tool calls, .env dumps).
 */
#ifndef AW_BENCH_LOGGEN_H
#define AW_BENCH_LOGGEN_H

#include <stddef.h>

extern const char *const loggen_formats[]; /* NULL-terminated */
int loggen_format_index(const char *name); /* -1 if unknown */
/* At least size bytes of whole records; dense: a secret about every 1 KB
 * (*planted counts them). Deterministic. malloc'd, NUL-terminated. */
char *loggen(int format, size_t size, int dense, size_t *len, size_t *planted);

/* The shape grid: lines of about linelen bytes (40-200) with `runs` digit
 * runs (0-12; timestamps, ports, pids, counters, label values, line numbers),
 * the last at the line's end when endnum. Same contract as loggen(). */
char *loggen_grid(int linelen, int runs, int endnum, size_t size, int dense, size_t *len,
		  size_t *planted);
/* Either a format name or "grid:LINELEN:RUNS:ENDNUM" (e.g. grid:60:8:1). */
char *loggen_named(const char *name, size_t size, int dense, size_t *len, size_t *planted);

#endif
