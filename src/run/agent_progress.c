/*
 * agent_progress.c - where a run's `agent` step is, read from its sub-step
 * journal (run_calls, written by src/agent/): the current turn, max_turns
 * from the step's args, the tool being or last called. Here, in the run
 * runtime, so the services below the agent step (the channel hub's progress
 * messages) can read it.
 */
#include <stdio.h>
#include <string.h>

#include "awooop/run.h"
#include "awooop/store/agent.h"
#include "awooop/str.h"
#include "awooop/uuid.h"

aw_err aw_run_agent_progress(aw_store *s, const aw_ctx *ctx, const char *run_id,
			     aw_run_agent_status *out, aw_error *err)
{
	memset(out, 0, sizeof *out);
	if (!run_id || !aw_uuid_valid(run_id))
		return aw_fail(err, AW_E_RUN_NOT_FOUND, "no such run");
	aw_txn *t = NULL;
	aw_run run = {0};
	aw_run_call *rows = NULL;
	int n = 0;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err);
	if (e)
		return e;
	if (!(e = aw_store_run_get(t, run_id, &run, err)))
		e = aw_store_run_calls(t, run_id, 0, &rows, &n, err);
	aw_store_rollback(t);
	if (!e && n) {
		int step = rows[n - 1].step_no;
		out->step_no = step;
		for (int i = 0; i < n; i++) {
			if (rows[i].step_no != step)
				continue;
			if (!strcmp(rows[i].kind, "model")) {
				out->turn++;
				continue;
			}
			out->tool_calls++;
			AW_COPY_ARRAY(out->tool, rows[i].name);
			out->calling = !strcmp(rows[i].state, "started") ||
				       !strcmp(rows[i].state, "approved");
			out->waiting = !strcmp(rows[i].state, "parked");
		}
		/* the tool of the current turn: a model call after it ends it */
		if (!strcmp(rows[n - 1].kind, "model"))
			out->calling = out->waiting = 0;
		json_error_t je;
		json_t *wf = run.workflow ? json_loads(run.workflow, 0, &je) : NULL;
		json_t *mt = json_object_get(
			json_object_get(json_array_get(wf, (size_t)(step - 1)), "args"),
			"max_turns");
		out->max_turns = json_is_integer(mt) ? (int)json_integer_value(mt)
						     : AW_RUN_AGENT_TURNS_DEFAULT;
		json_decref(wf);
	}
	aw_run_calls_free(rows, n);
	aw_run_free(&run);
	return e;
}

void aw_run_agent_progress_text(const aw_run_agent_status *st, char *out, size_t cap)
{
	if (!cap)
		return;
	if (!st->step_no) {
		out[0] = '\0';
		return;
	}
	if (st->calling || st->waiting)
		snprintf(out, cap, "%s %s, turn %d of %d",
			 st->waiting ? "waiting for approval of" : "calling", st->tool, st->turn,
			 st->max_turns);
	else
		snprintf(out, cap, "thinking, turn %d of %d", st->turn, st->max_turns);
}
