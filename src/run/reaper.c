/*
 * reaper.c - re-queues runs whose worker stopped heartbeating: each expired
 * lease becomes retry_wait with backoff, or failed with E-RUN-004 once the
 * run used its max_attempts; one checked, audited transition per run. Runs
 * whose approval window closed while they waited fail with E-RUN-010 (the
 * compare-and-set from waiting_approval loses to a decision that got there
 * first).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/clock.h"
#include "awooop/metrics.h"
#include "awooop/str.h"
#include "worker.h"

/* Fails one run whose approval window closed; 1 when it moved. */
static int expire_one(aw_store *s, const aw_run_ref *ref, aw_error *err)
{
	aw_ctx ctx;
	aw_ctx_system(&ctx, ref->project_id);
	snprintf(ctx.principal, sizeof ctx.principal, "reaper");
	aw_txn *t = NULL;
	if (aw_store_begin(s, &ctx, AW_TXN_WRITE, &t, err))
		return 0;
	char ids[1][AW_UUID_STR_LEN + 1];
	AW_COPY_ARRAY(ids[0], ref->run_id);
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	const char *code = aw_err_code(AW_E_RUN_APPROVAL_EXPIRED);
	aw_run_change chg = {.now = now, .error_code = code, .finished = 1};
	json_t *d = json_pack("{s:s}", "reason", "approval window closed");
	aw_err e = aw_run_transition_in(t, &ctx, ref->run_id, NULL, AW_RUN_WAITING_APPROVAL,
					AW_RUN_FAILED, &chg, d, err);
	json_decref(d);
	aw_run_step *st = NULL;
	int n = 0;
	if (!e)
		e = aw_store_run_steps(t, ids, 1, &st, &n, err);
	for (int i = 0; !e && i < n; i++)
		if (!strcmp(st[i].state, "waiting")) {
			snprintf(st[i].state, sizeof st[i].state, "failed");
			(void)!AW_STR_COPY(st[i].error_code, code); /* an E-... code literal */
			AW_COPY_ARRAY(st[i].finished_at, now);
			e = aw_store_run_steps_put(t, &st[i], 1, err);
		}
	aw_run_steps_free(st, n);
	if (e) {
		aw_store_rollback(t);
		return 0;
	}
	return aw_store_commit(t, err) == AW_OK;
}

aw_err aw_run_reap(aw_store *s, int retry_base_ms, int retry_max_ms, int *n, aw_error *err)
{
	*n = 0;
	aw_run_ref *refs = NULL;
	int nr = 0;
	aw_err e = aw_store_run_expired(s, 100, &refs, &nr, err);
	if (e)
		return e;
	uint64_t rng = worker_seed();
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
			ms + worker_backoff_ms(&rng, r.attempts, retry_base_ms, retry_max_ms),
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
	refs = NULL;
	nr = 0;
	if ((e = aw_store_run_approval_expired(s, 100, &refs, &nr, err)))
		return e;
	for (int i = 0; i < nr; i++)
		if (expire_one(s, &refs[i], err)) {
			(*n)++;
			aw_metrics_run_event("approval_expired", 1);
		}
	free(refs);
	return AW_OK;
}
