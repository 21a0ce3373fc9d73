/*
 * run_span.h - the run runtime's trace spans (otel.h; not a public header): a
 * run's own span, exported when it is submitted, under the submitting
 * request's, and one span per executed step under the run's. The run's span
 * id is a hash of its id (aw_otel_run_span_id), so a worker in another
 * process finds its steps' parent without storing a span id.
 */
#ifndef AW_RUN_SPAN_H
#define AW_RUN_SPAN_H

#include <stdint.h>

#include "awooop/ctx.h"
#include "awooop/run.h"
#include "awooop/executor.h"

/* A run r was created by ctx's request (not a replay). */
void run_span_submitted(const aw_ctx *ctx, const aw_run *r);
/* Step step_no of a run ran (hop: the trace it ran under, its span id the
 * step's), begun at t0 (aw_clock_mono_ns). kind: the registered step kind,
 * NULL when none matched; skipped: its "when" did not hold. */
void run_span_step(const aw_trace *hop, const char *run_id, const char *project, int step_no,
		   const char *kind, const char *mode, int skipped, aw_step_outcome outcome,
		   aw_err e, int64_t t0);

#endif
