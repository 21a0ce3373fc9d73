/*
 * run_span.c - the run runtime's trace spans (run_span.h): what the run and
 * its steps say of themselves - ids, kind, mode, how a step ended - never
 * their arguments, input or results.
 */
#include "run_span.h"

#include "awooop/clock.h"
#include "awooop/otel.h"
#include "awooop/executor.h"

void run_span_submitted(const aw_ctx *ctx, const aw_run *r)
{
	if (!aw_otel_on())
		return;
	aw_trace t = ctx->trace;
	aw_otel_run_span_id(r->run_id, t.span_id);
	aw_span *s = aw_span_begin("run", AW_SPAN_INTERNAL, &t, ctx->trace.span_id, 0,
				   aw_clock_mono_ns());
	aw_span_project(s, r->project_id);
	aw_span_str(s, "awooop.run.id", r->run_id);
	aw_span_str(s, "awooop.run.queue", r->queue[0] ? r->queue : "default");
	aw_span_str(s, "awooop.run.mode", r->mode);
	aw_span_end(s);
}

void run_span_step(const aw_trace *hop, const char *run_id, const char *project, int step_no,
		   const char *kind, const char *mode, int skipped, aw_step_outcome outcome,
		   aw_err e, int64_t t0)
{
	if (!aw_otel_on())
		return;
	char parent[AW_SPAN_ID_LEN + 1];
	aw_otel_run_span_id(run_id, parent);
	/* the run's span came through the store, maybe from another process */
	aw_span *s = aw_span_begin("run.step", AW_SPAN_INTERNAL, hop, parent, 1, t0);
	aw_span_name(s, "run.step", kind);
	aw_span_project(s, project);
	aw_span_str(s, "awooop.run.id", run_id);
	aw_span_int(s, "awooop.run.step", step_no);
	if (kind)
		aw_span_str(s, "awooop.step.kind", kind);
	aw_span_str(s, "awooop.run.mode", mode);
	aw_span_str(s, "awooop.outcome",
		    e				 ? "failed"
		    : skipped			 ? "skipped"
		    : outcome == AW_STEP_PARK	 ? "waiting_approval"
		    : outcome == AW_STEP_SUGGEST ? "suggested"
						 : "ok");
	if (e)
		aw_span_error(s, aw_err_code(e), "failed");
	aw_span_end(s);
}
