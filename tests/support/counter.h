/*
 * counter.h - a counting HTTP server for run tests and the crash drill: it
 * answers 200 to every request (NNN to /status/NNN) and counts requests per Idempotency-Key
 * (raw executions, and distinct keys = effects after deduplication).
 */
#ifndef AW_BENCH_COUNTER_H
#define AW_BENCH_COUNTER_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

typedef struct aw_counter aw_counter;

/* port 0 picks a free one; every answer waits delay_ms (an effect that takes
 * time, so a crash can land between it and its journal entry); NULL on
 * failure. */
aw_counter *aw_counter_start(int port, int delay_ms);
int aw_counter_port(const aw_counter *c);
void aw_counter_stop(aw_counter *c);
/* Requests seen with this key (0 when none). */
int aw_counter_count(aw_counter *c, const char *key);
/* Totals: requests, distinct keys, requests without a key. */
void aw_counter_totals(aw_counter *c, int64_t *requests, int64_t *keys, int64_t *unkeyed);
/* Writes "KEY COUNT" lines, one per distinct key. */
void aw_counter_dump(aw_counter *c, FILE *f);
/* The traceparent header of the last request with this key ("" if none). */
void aw_counter_traceparent(aw_counter *c, const char *key, char *out, size_t cap);

/* The Authorization header of the last request with this key ("" if none). */
void aw_counter_authorization(aw_counter *c, const char *key, char *out, size_t cap);

#endif
