/*
 * reaper.c - re-queues runs whose worker stopped heartbeating: each expired
 * lease becomes retry_wait with backoff, or failed with E-RUN-004 once the
 * run used its max_attempts; one checked, audited transition per run.
 */
#include <stdio.h>
#include <stdlib.h>

#include "awooop/clock.h"
#include "awooop/metrics.h"
#include "worker.h"

aw_err aw_run_reap(aw_store *s, int retry_base_ms, int retry_max_ms, int *n, aw_error *err)
{
	*n = 0;
	aw_run_ref *refs = NULL;
	int nr = 0;
	aw_err e = aw_store_run_expired(s, 100, &refs, &nr, err);
	if (e)
		return e;
	uint64_t rng = aw_worker_seed();
	for (int i = 0; i < nr; i++) {
		aw_ctx ctx;
		aw_ctx_system(&ctx, refs[i].project_id);
		snprintf(ctx.principal, sizeof ctx.principal, "reaper");
		aw_txn *t = NULL;
		aw_run r;
		if (aw_store_begin(s, &ctx, AW_TXN_WRITE, &t, err))
			continue;
		if (aw_store_run_get(t, refs[i].run_id, &r, err)) {
			aw_store_rollback(t);
			continue;
		}
		aw_run_state from;
		char now[AW_TS_LEN + 1], after[AW_TS_LEN + 1];
		int64_t ms = aw_clock_wall_ms();
		aw_clock_format(ms, now);
		aw_clock_format(
			ms + aw_worker_backoff_ms(&rng, r.attempts, retry_base_ms, retry_max_ms),
			after);
		int exhausted = r.attempts >= r.max_attempts;
		aw_run_change chg = {.now = now,
				     .expired_by = now,
				     .clear_lease = 1,
				     .error_code =
					     exhausted ? aw_err_code(AW_E_RUN_ATTEMPTS) : NULL,
				     .run_after = exhausted ? NULL : after,
				     .finished = exhausted};
		json_t *d = json_pack("{s:s, s:i, s:s}", "worker", r.lease_owner, "attempt",
				      r.attempts, "reason", "lease expired");
		aw_err te = aw_run_state_parse(r.state, &from) != 0
				    ? aw_fail(err, AW_E_RUN_STATE, "bad state")
				    : aw_run_transition_in(t, &ctx, r.run_id, r.trace_id, from,
							   exhausted ? AW_RUN_FAILED
								     : AW_RUN_RETRY_WAIT,
							   &chg, d, err);
		json_decref(d);
		aw_run_free(&r);
		if (te || aw_store_commit(t, err) != AW_OK) {
			if (te)
				aw_store_rollback(t);
			continue;
		}
		(*n)++;
		aw_metrics_run_event("reaped", 1);
	}
	free(refs);
	return AW_OK;
}
