/*
 * budget_store.c - store queries of the token budget ledger. A reservation is
 * one conditional UPDATE of the period's row, so the limit holds under any
 * number of concurrent callers on either backend.
 */
#include <stdio.h>
#include <string.h>

#include "store_internal.h"

aw_err aw_store_budget_period_ensure(aw_txn *t, const char *period, long long limit, aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(period), AW_INT(limit)};
	return aw_txn_exec(t,
			   "INSERT INTO budget_periods (project_id, period_key, token_limit)"
			   " VALUES ($1, $2, $3) ON CONFLICT (project_id, period_key)"
			   " DO UPDATE SET token_limit = excluded.token_limit",
			   3, p, NULL, err);
}

aw_err aw_store_budget_period_get(aw_txn *t, const char *period, aw_budget_period *out, int *found,
				  aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(period)};
	aw_err e = aw_txn_exec(t,
			       "SELECT token_limit, reserved, settled FROM budget_periods"
			       " WHERE project_id = $1 AND period_key = $2",
			       2, p, &r, err);
	*found = !e && r->nrows;
	memset(out, 0, sizeof *out);
	snprintf(out->period_key, sizeof out->period_key, "%s", period);
	if (*found) {
		out->limit = aw_cell_ll(r, 0, 0);
		out->reserved = aw_cell_ll(r, 0, 1);
		out->settled = aw_cell_ll(r, 0, 2);
	}
	aw_rows_free(r);
	return e;
}

aw_err aw_store_budget_reserve(aw_txn *t, const char *period, long long limit, long long tokens,
			       int *ok, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(period), AW_INT(tokens), AW_INT(limit)};
	aw_err e =
		aw_txn_exec(t,
			    "UPDATE budget_periods SET token_limit = $4, reserved = reserved + $3"
			    " WHERE project_id = $1 AND period_key = $2"
			    " AND reserved + settled + $3 <= $4 RETURNING reserved",
			    4, p, &r, err);
	*ok = !e && r->nrows == 1;
	aw_rows_free(r);
	return e;
}

static aw_err ledger(aw_txn *t, const char *period, const char *call_id, const char *run_id,
		     const char *kind, long long tokens, aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(period), AW_TEXT(call_id),
		      AW_TEXT(run_id),	       AW_TEXT(kind),	AW_INT(tokens)};
	return aw_txn_exec(t,
			   "INSERT INTO budget_ledger (project_id, period_key, call_id, run_id,"
			   " kind, tokens) VALUES ($1, $2, $3, $4, $5, $6)",
			   6, p, NULL, err);
}

aw_err aw_store_budget_hold(aw_txn *t, const char *call_id, const char *period, const char *run_id,
			    long long tokens, const char *holder, const char *lease_until,
			    aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(call_id), AW_TEXT(period),
		      AW_TEXT(run_id),	       AW_INT(tokens),	 AW_TEXT(holder),
		      AW_TEXT(lease_until)};
	aw_err e = aw_txn_exec(t,
			       "INSERT INTO budget_reservations (project_id, call_id, period_key,"
			       " run_id, tokens, holder, lease_until)"
			       " VALUES ($1, $2, $3, $4, $5, $6, $7)",
			       7, p, NULL, err);
	return e ? e : ledger(t, period, call_id, run_id, "reserve", tokens, err);
}

aw_err aw_store_budget_close(aw_txn *t, const char *call_id, long long used, int reap, int *found,
			     aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(call_id)};
	aw_err e = aw_txn_exec(t,
			       "DELETE FROM budget_reservations WHERE project_id = $1"
			       " AND call_id = $2 RETURNING period_key, run_id, tokens",
			       2, p, &r, err);
	*found = !e && r->nrows == 1;
	if (!*found) {
		aw_rows_free(r);
		return e;
	}
	char period[16], run_id[64];
	aw_cell_copy(period, sizeof period, r, 0, 0);
	aw_cell_copy(run_id, sizeof run_id, r, 0, 1);
	long long held = aw_cell_ll(r, 0, 2);
	aw_rows_free(r);
	if (reap)
		used = held;
	if (used < 0)
		used = 0;
	if (used > held)
		used = held;
	aw_val q[] = {AW_TEXT(t->ctx.project), AW_TEXT(period), AW_INT(held), AW_INT(used)};
	e = aw_txn_exec(t,
			"UPDATE budget_periods SET reserved = reserved - $3,"
			" settled = settled + $4 WHERE project_id = $1 AND period_key = $2",
			4, q, NULL, err);
	if (!e && run_id[0]) { /* the run's own row, when it has a per-run limit */
		char run_key[80];
		snprintf(run_key, sizeof run_key, "run:%s", run_id);
		aw_val q2[] = {AW_TEXT(t->ctx.project), AW_TEXT(run_key), AW_INT(held),
			       AW_INT(used)};
		e = aw_txn_exec(t,
				"UPDATE budget_periods SET reserved = reserved - $3,"
				" settled = settled + $4 WHERE project_id = $1 AND period_key = $2",
				4, q2, NULL, err);
	}
	if (!e && reap)
		return ledger(t, period, call_id, run_id, "reap", held, err);
	if (!e)
		e = ledger(t, period, call_id, run_id, "settle", used, err);
	if (!e && held > used)
		e = ledger(t, period, call_id, run_id, "release", held - used, err);
	return e;
}

aw_err aw_store_budget_expired(aw_txn *t, const char *now, char (*ids)[64], int max, int *n,
			       aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(now), AW_INT(max)};
	aw_err e = aw_txn_exec(t,
			       "SELECT call_id FROM budget_reservations WHERE project_id = $1"
			       " AND lease_until < $2 ORDER BY lease_until LIMIT $3",
			       3, p, &r, err);
	*n = 0;
	for (int i = 0; !e && i < r->nrows && i < max; i++)
		aw_cell_copy(ids[(*n)++], 64, r, i, 0);
	aw_rows_free(r);
	return e;
}

aw_err aw_store_budget_renew(aw_txn *t, const char *holder, const char *lease_until, aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(holder), AW_TEXT(lease_until)};
	return aw_txn_exec(t,
			   "UPDATE budget_reservations SET lease_until = $3 WHERE project_id = $1"
			   " AND holder = $2",
			   3, p, NULL, err);
}

aw_err aw_store_budget_sums(aw_txn *t, const char *period, aw_budget_sums *out, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(period)};
	aw_err e = aw_txn_exec(t,
			       "SELECT kind, SUM(tokens) FROM budget_ledger WHERE project_id = $1"
			       " AND period_key = $2 GROUP BY kind",
			       2, p, &r, err);
	memset(out, 0, sizeof *out);
	for (int i = 0; !e && i < r->nrows; i++) {
		char kind[16];
		aw_cell_copy(kind, sizeof kind, r, i, 0);
		long long v = aw_cell_ll(r, i, 1);
		if (!strcmp(kind, "reserve"))
			out->reserve = v;
		else if (!strcmp(kind, "settle"))
			out->settle = v;
		else if (!strcmp(kind, "release"))
			out->release = v;
		else if (!strcmp(kind, "reap"))
			out->reap = v;
	}
	aw_rows_free(r);
	return e;
}

aw_err aw_store_budget_state_get(aw_txn *t, int *suspended, char *reason, size_t cap, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project)};
	aw_err e =
		aw_txn_exec(t, "SELECT suspended, reason FROM budget_state WHERE project_id = $1",
			    1, p, &r, err);
	*suspended = 0;
	if (reason && cap)
		reason[0] = '\0';
	if (!e && r->nrows) {
		char s[8];
		aw_cell_copy(s, sizeof s, r, 0, 0);
		*suspended = !strcmp(s, "1") || !strcmp(s, "t") || !strcmp(s, "true");
		if (reason)
			aw_cell_copy(reason, cap, r, 0, 1);
	}
	aw_rows_free(r);
	return e;
}

aw_err aw_store_budget_state_set(aw_txn *t, int suspended, const char *reason, const char *since,
				 const char *by, aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(suspended ? "1" : "0"), AW_TEXT(reason),
		      AW_TEXT(since), AW_TEXT(by)};
	const char *sql =
		aw_txn_dialect(t) == AW_DIALECT_PG
			? "INSERT INTO budget_state (project_id, suspended, reason, since,"
			  " by_principal) VALUES ($1, $2::int::boolean, $3, $4, $5)"
			  " ON CONFLICT (project_id) DO UPDATE SET suspended ="
			  " excluded.suspended, reason = excluded.reason, since ="
			  " excluded.since, by_principal = excluded.by_principal"
			: "INSERT INTO budget_state (project_id, suspended, reason, since,"
			  " by_principal) VALUES ($1, CAST($2 AS INTEGER), $3, $4, $5)"
			  " ON CONFLICT (project_id) DO UPDATE SET suspended ="
			  " excluded.suspended, reason = excluded.reason, since ="
			  " excluded.since, by_principal = excluded.by_principal";
	return aw_txn_exec(t, sql, 5, p, NULL, err);
}
