/*
 * budget.c - the token budget service (see budget.h): admission and
 * reservation in one write transaction, settlement inside the caller's
 * transaction (the gateway's audit batch), suspension and resumption
 * (audited), status, and the reaper of reservations whose holder died.
 *
 * Tokens only: cost limits and per-run limits of the contract are not
 * enforced yet (see the note).
 */
#include "awooop/budget.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "awooop/audit.h"
#include "awooop/clock.h"
#include "awooop/metrics.h"
#include "awooop/run.h"

#define DEFAULT_MAX_OUT 4096 /* a request without max_tokens reserves this much */
#define BUDGET_CONTRACT "default"

void aw_budget_period_key(const char *period, char out[16])
{
	time_t now = (time_t)(aw_clock_wall_ms() / 1000);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(out, 16, period && !strcmp(period, "month") ? "%Y-%m" : "%Y-%m-%d", &tm);
}

static aw_err suspend_in(aw_txn *t, const aw_ctx *ctx, const char *reason, aw_error *err)
{
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	aw_err e = aw_store_budget_state_set(t, 1, reason, now, ctx->principal, err);
	json_t *p = json_pack("{s:s}", "reason", reason);
	if (!e)
		e = aw_audit_record(t, ctx, "budget.suspend", ctx->project, p, err);
	json_decref(p);
	return e;
}

/* Cancels the project's runs that are not finished (line 3). */
static void cancel_runs(aw_store *s, const aw_ctx *ctx)
{
	static const aw_run_state live[] = {AW_RUN_QUEUED, AW_RUN_CLAIMED, AW_RUN_RUNNING,
					    AW_RUN_WAITING_APPROVAL, AW_RUN_RETRY_WAIT};
	for (size_t k = 0; k < sizeof live / sizeof live[0]; k++) {
		aw_run *runs = NULL;
		int n = 0;
		aw_error err = {0};
		if (aw_run_list(s, ctx, aw_run_state_name(live[k]), NULL, 1000, &runs, &n, &err))
			continue;
		for (int i = 0; i < n; i++) {
			aw_run done;
			if (aw_run_cancel(s, ctx, runs[i].run_id, &done, &err) == AW_OK)
				aw_run_free(&done);
		}
		aw_runs_free(runs, n);
	}
}

/* The per-run limit: the run's own row ("run:<id>") takes the same
 * reservation; when the run has less left, the call's answer is clamped to it
 * (and the period's reservation shrunk to match), or it is refused. */
static aw_err run_reserve(aw_txn *t, const char *period, long long limit, const char *run_id,
			  long long per_run, long long prompt, long long *out, aw_error *err)
{
	char key[80];
	snprintf(key, sizeof key, "run:%s", run_id);
	int ok = 0;
	aw_err e = aw_store_budget_reserve(t, key, per_run, prompt + *out, &ok, err);
	if (!e && !ok)
		e = aw_store_budget_period_ensure(t, key, per_run, err);
	if (!e && !ok)
		e = aw_store_budget_reserve(t, key, per_run, prompt + *out, &ok, err);
	if (e || ok)
		return e;
	aw_budget_period p;
	int found = 0;
	if ((e = aw_store_budget_period_get(t, key, &p, &found, err)))
		return e;
	long long remaining = p.limit - p.reserved - p.settled;
	if (remaining <= prompt)
		return aw_fail(err, AW_E_BUDGET_RUN,
			       "run %s has spent its %lld tokens (%lld settled, %lld reserved)",
			       run_id, p.limit, p.settled, p.reserved);
	long long less = *out - (remaining - prompt);
	*out = remaining - prompt;
	if ((e = aw_store_budget_reserve(t, key, per_run, prompt + *out, &ok, err)) ||
	    (e = aw_store_budget_reserve(t, period, limit, -less, &ok, err)))
		return e;
	return AW_OK;
}

aw_err aw_budget_admit(aw_store *s, aw_policy_cache *pc, const aw_ctx *ctx, const char *call_id,
		       const char *run_id, long long prompt, long long *max_out, int lease_ms,
		       const char *holder, aw_budget_hold *h, aw_error *err)
{
	memset(h, 0, sizeof *h);
	aw_policy pol = {0};
	aw_err e = aw_policy_effective(pc, ctx, "budget", BUDGET_CONTRACT, &pol, err);
	if (e == AW_E_CONTRACT_NOT_FOUND) { /* no budget: only a suspension stops calls */
		int suspended = 0;
		e = aw_budget_suspended(s, ctx, &suspended, err);
		if (!e && suspended)
			e = aw_fail(err, AW_E_BUDGET_SUSPENDED,
				    "project %s is suspended; an operator resumes it "
				    "(awooop budget resume)",
				    ctx->project);
		return e;
	}
	if (e)
		return e;
	/* a whole number written 1e12 is an integer to the schema, a real to jansson */
	long long limit = (long long)json_number_value(json_object_get(pol.body, "token_limit"));
	char period[8]; /* copied: the body is the cache's, released below */
	snprintf(period, sizeof period, "%s",
		 json_string_value(json_object_get(pol.body, "period")) ?: "day");
	const char *action = json_string_value(json_object_get(pol.body, "action_on_exceed"));
	h->kill = action && !strcmp(action, "kill");
	aw_budget_period_key(period, h->period_key);
	json_t *prl_v = json_object_get(pol.body, "per_run_token_limit");
	long long per_run = json_is_number(prl_v) ? (long long)json_number_value(prl_v) : -1;
	aw_policy_release(&pol);
	snprintf(h->call_id, sizeof h->call_id, "%s", call_id);
	snprintf(h->project, sizeof h->project, "%s", ctx->project);
	long long out = *max_out >= 0 ? *max_out : DEFAULT_MAX_OUT;
	aw_txn *t = NULL;
	int suspended = 0, ok = 0, killed = 0;
	char reason[160];
	if ((e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err)) ||
	    (e = aw_store_budget_state_get(t, &suspended, reason, sizeof reason, err)))
		goto out;
	if (suspended) {
		e = aw_fail(err, AW_E_BUDGET_SUSPENDED,
			    "project %s is suspended (%s); an operator resumes it "
			    "(awooop budget resume)",
			    ctx->project, reason);
		goto out;
	}
	if ((e = aw_store_budget_reserve(t, h->period_key, limit, prompt + out, &ok, err)))
		goto out;
	if (!ok && /* the period's first call, or a new limit: then once more */
	    ((e = aw_store_budget_period_ensure(t, h->period_key, limit, err)) ||
	     (e = aw_store_budget_reserve(t, h->period_key, limit, prompt + out, &ok, err))))
		goto out;
	if (!ok) { /* clamp the answer to what remains, or refuse */
		aw_budget_period p;
		int found = 0;
		if ((e = aw_store_budget_period_get(t, h->period_key, &p, &found, err)))
			goto out;
		long long remaining = p.limit - p.reserved - p.settled;
		if (remaining > prompt) {
			out = remaining - prompt;
			if ((e = aw_store_budget_reserve(t, h->period_key, limit, prompt + out, &ok,
							 err)))
				goto out;
		}
		if (!ok) {
			if (h->kill) /* line 3: the project stops here */
				killed = !(e = suspend_in(t, ctx, "token budget spent", err));
			if (!e)
				e = aw_fail(err, AW_E_BUDGET_EXHAUSTED,
					    "the %s token budget of period %s is spent (%lld of "
					    "%lld settled, %lld reserved by calls in flight); it "
					    "resets with the next period",
					    period, h->period_key, p.settled, p.limit, p.reserved);
			if (killed) {
				aw_error cerr = {0};
				aw_store_commit(t, &cerr);
				t = NULL;
				h->killed = 1;
				cancel_runs(s, ctx);
			}
			goto out;
		}
	}
	if (run_id && run_id[0] && per_run >= 0 &&
	    (e = run_reserve(t, h->period_key, limit, run_id, per_run, prompt, &out, err)))
		goto out;
	char lease[AW_TS_LEN + 1];
	aw_clock_format(aw_clock_wall_ms() + lease_ms, lease);
	if ((e = aw_store_budget_hold(t, call_id, h->period_key, run_id ? run_id : "", prompt + out,
				      holder, lease, err)) ||
	    (e = aw_store_commit(t, err))) {
		t = NULL;
		goto out;
	}
	t = NULL;
	h->active = 1;
	h->reserved = prompt + out;
	h->prompt = prompt;
	aw_metrics_budget(ctx->project, "reserved", (double)h->reserved);
	if (*max_out >= 0 && out < *max_out)
		aw_metrics_budget(ctx->project, "clamped", 0);
	*max_out = out;
out:
	if (t)
		aw_store_rollback(t);
	if (e == AW_E_BUDGET_EXHAUSTED || e == AW_E_BUDGET_SUSPENDED || e == AW_E_BUDGET_RUN)
		aw_metrics_budget(ctx->project, h->killed ? "suspended" : "refused", 0);
	return e;
}

aw_err aw_budget_settle(aw_txn *t, const aw_budget_hold *h, long long used, aw_error *err)
{
	if (!h->active)
		return AW_OK;
	int found = 0;
	long long u = used < 0 || used > h->reserved ? h->reserved : used;
	aw_err e = aw_store_budget_close(t, h->call_id, u, 0, &found, err);
	if (!e && found) {
		aw_metrics_budget(h->project, "settled", (double)u);
		aw_metrics_budget(h->project, "released", (double)(h->reserved - u));
	}
	return e;
}

aw_err aw_budget_suspended(aw_store *s, const aw_ctx *ctx, int *suspended, aw_error *err)
{
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err);
	if (!e)
		e = aw_store_budget_state_get(t, suspended, NULL, 0, err);
	if (t)
		aw_store_rollback(t);
	return e;
}

aw_err aw_budget_suspend(aw_store *s, const aw_ctx *ctx, const char *reason, aw_error *err)
{
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err);
	if (!e)
		e = suspend_in(t, ctx, reason, err);
	if (!e)
		e = aw_store_commit(t, err);
	else if (t)
		aw_store_rollback(t);
	if (!e)
		cancel_runs(s, ctx);
	return e;
}

aw_err aw_budget_resume(aw_store *s, const aw_ctx *ctx, aw_error *err)
{
	aw_txn *t = NULL;
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	aw_err e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err);
	if (!e)
		e = aw_store_budget_state_set(t, 0, "resumed", now, ctx->principal, err);
	if (!e)
		e = aw_audit_record(t, ctx, "budget.resume", ctx->project, NULL, err);
	if (!e)
		e = aw_store_commit(t, err);
	else if (t)
		aw_store_rollback(t);
	return e;
}

aw_err aw_budget_status(aw_store *s, aw_policy_cache *pc, const aw_ctx *ctx, json_t **out,
			aw_error *err)
{
	*out = NULL;
	aw_policy pol = {0};
	aw_err e = aw_policy_effective(pc, ctx, "budget", BUDGET_CONTRACT, &pol, err);
	if (e && e != AW_E_CONTRACT_NOT_FOUND)
		return e;
	const char *period = e ? "day" : json_string_value(json_object_get(pol.body, "period"));
	char key[16];
	aw_budget_period_key(period, key);
	aw_txn *t = NULL;
	aw_budget_period p;
	aw_budget_sums sums;
	int found = 0, suspended = 0;
	char reason[160];
	int has_budget = e == AW_OK;
	aw_policy_release(&pol);
	if ((e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err)) ||
	    (e = aw_store_budget_period_get(t, key, &p, &found, err)) ||
	    (e = aw_store_budget_sums(t, key, &sums, err)) ||
	    (e = aw_store_budget_state_get(t, &suspended, reason, sizeof reason, err))) {
		if (t)
			aw_store_rollback(t);
		return e;
	}
	aw_store_rollback(t);
	*out = json_pack("{s:s,s:b,s:s,s:I,s:I,s:I,s:I,s:b,s:s,s:{s:I,s:I,s:I,s:I}}", "project",
			 ctx->project, "budget", has_budget, "period", key, "limit",
			 (json_int_t)p.limit, "reserved", (json_int_t)p.reserved, "settled",
			 (json_int_t)p.settled, "remaining",
			 (json_int_t)(p.limit - p.reserved - p.settled), "suspended", suspended,
			 "reason", suspended ? reason : "", "ledger", "reserve",
			 (json_int_t)sums.reserve, "settle", (json_int_t)sums.settle, "release",
			 (json_int_t)sums.release, "reap", (json_int_t)sums.reap);
	return *out ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
}

aw_err aw_budget_renew(aw_store *s, const aw_ctx *ctx, const char *holder, int lease_ms,
		       aw_error *err)
{
	char lease[AW_TS_LEN + 1];
	aw_clock_format(aw_clock_wall_ms() + lease_ms, lease);
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err);
	if (!e)
		e = aw_store_budget_renew(t, holder, lease, err);
	if (!e)
		e = aw_store_commit(t, err);
	else if (t)
		aw_store_rollback(t);
	return e;
}

aw_err aw_budget_reap(aw_store *s, const aw_ctx *ctx, int *reaped, aw_error *err)
{
	*reaped = 0;
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	char ids[256][64];
	int n = 0;
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err);
	if (!e)
		e = aw_store_budget_expired(t, now, ids, 256, &n, err);
	for (int i = 0; !e && i < n; i++) {
		int found = 0;
		e = aw_store_budget_close(t, ids[i], 0, 1, &found, err);
		*reaped += found;
		if (found)
			aw_metrics_budget(ctx->project, "reaped", 0);
	}
	if (!e)
		e = aw_store_commit(t, err);
	else if (t)
		aw_store_rollback(t);
	if (e)
		*reaped = 0;
	return e;
}
