/*
 * budget_store.c - store queries of the token budget ledger. A reservation is
 * one conditional UPDATE of the period's row, so the limit holds under any
 * number of concurrent callers on either backend.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

#include "awooop/alloc.h"
#include "awooop/str.h"

aw_err aw_store_budget_period_ensure(aw_txn *t, const char *period, const aw_budget_amount *limit,
				     aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(period), AW_INT(limit->tokens),
		      AW_INT(limit->cost)};
	return txn_exec(t,
			"INSERT INTO budget_periods (project_id, period_key, token_limit,"
			" cost_limit) VALUES ($1, $2, $3, $4) ON CONFLICT (project_id, period_key)"
			" DO UPDATE SET token_limit = excluded.token_limit,"
			" cost_limit = excluded.cost_limit",
			4, p, NULL, err);
}

aw_err aw_store_budget_period_get(aw_txn *t, const char *period, aw_budget_period *out, int *found,
				  aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(period)};
	aw_err e = txn_exec(t,
			    "SELECT token_limit, reserved, settled, cost_limit, cost_reserved,"
			    " cost_settled FROM budget_periods"
			    " WHERE project_id = $1 AND period_key = $2",
			    2, p, &r, err);
	memset(out, 0, sizeof *out);
	if (!e && AW_STR_COPY(out->period_key, period) < 0) /* read by its whole key */
		e = aw_fail(err, AW_E_INTERNAL, "budget period key too long");
	*found = !e && r->nrows;
	out->limit.cost = -1;
	if (*found) {
		out->limit = (aw_budget_amount){cell_ll(r, 0, 0), cell_ll(r, 0, 3)};
		out->reserved = (aw_budget_amount){cell_ll(r, 0, 1), cell_ll(r, 0, 4)};
		out->settled = (aw_budget_amount){cell_ll(r, 0, 2), cell_ll(r, 0, 5)};
	}
	rows_free(r);
	return e;
}

aw_err aw_store_budget_reserve(aw_txn *t, const char *period, const aw_budget_amount *limit,
			       const aw_budget_amount *n, int *ok, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(period), AW_INT(n->tokens),
		      AW_INT(limit->tokens),   AW_INT(n->cost), AW_INT(limit->cost)};
#define RESERVE_SQL(suspended)                                                                     \
	"UPDATE budget_periods SET token_limit = $4, cost_limit = $6,"                             \
	" reserved = reserved + $3, cost_reserved = cost_reserved + $5"                            \
	" WHERE project_id = $1 AND period_key = $2"                                               \
	" AND reserved + settled + $3 <= $4"                                                       \
	" AND ($6 < 0 OR cost_reserved + cost_settled + $5 <= $6)"                                 \
	" AND NOT EXISTS (SELECT 1 FROM budget_state s WHERE s.project_id = $1 AND " suspended ")" \
	" RETURNING reserved"
	aw_err e = txn_exec(t,
			    txn_dialect(t) == AW_DIALECT_PG ? RESERVE_SQL("s.suspended")
							    : RESERVE_SQL("s.suspended <> 0"),
			    6, p, &r, err);
#undef RESERVE_SQL
	*ok = !e && r->nrows == 1;
	rows_free(r);
	return e;
}

/* Hourly rows sort between "h:" and "h;" (':' + 1 == ';'). */
aw_err aw_store_budget_window_sum(aw_txn *t, const char *from_bucket, aw_budget_amount *out,
				  aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(from_bucket)};
	aw_err e = txn_exec(t,
			    "SELECT COALESCE(SUM(settled), 0), COALESCE(SUM(cost_settled), 0)"
			    " FROM budget_periods WHERE project_id = $1 AND period_key >= $2"
			    " AND period_key < 'h;'",
			    2, p, &r, err);
	*out = (aw_budget_amount){0, 0};
	if (!e && r->nrows)
		*out = (aw_budget_amount){cell_ll(r, 0, 0), cell_ll(r, 0, 1)};
	rows_free(r);
	return e;
}

aw_err aw_store_budget_window_set(aw_txn *t, const char *period, const aw_budget_amount *settled,
				  aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(period), AW_INT(settled->tokens),
		      AW_INT(settled->cost)};
	return txn_exec(t,
			"UPDATE budget_periods SET settled = $3, cost_settled = $4"
			" WHERE project_id = $1 AND period_key = $2",
			4, p, NULL, err);
}

static aw_err ledger(aw_txn *t, const char *period, const char *call_id, const char *run_id,
		     const char *kind, const aw_budget_amount *n, const char *model, aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(period),	  AW_TEXT(call_id), AW_TEXT(run_id),
		      AW_TEXT(kind),	       AW_INT(n->tokens), AW_INT(n->cost),  AW_TEXT(model)};
	return txn_exec(t,
			"INSERT INTO budget_ledger (project_id, period_key, call_id, run_id,"
			" kind, tokens, cost, model) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
			8, p, NULL, err);
}

aw_err aw_store_budget_hold(aw_txn *t, const char *call_id, const char *period, const char *run_id,
			    const aw_budget_amount *n, const char *holder, const char *lease_until,
			    const char *extra, aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(call_id),  AW_TEXT(period),
		      AW_TEXT(run_id),	       AW_INT(n->tokens), AW_TEXT(holder),
		      AW_TEXT(lease_until),    AW_INT(n->cost),	  AW_TEXT(extra ? extra : "")};
	/* deferred: on PostgreSQL both go with the COMMIT in one round trip */
	aw_err e = txn_defer(t,
			     "INSERT INTO budget_reservations (project_id, call_id, period_key,"
			     " run_id, tokens, holder, lease_until, cost, extra)"
			     " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
			     9, p, err);
	aw_val q[] = {AW_TEXT(t->ctx.project), AW_TEXT(period),	  AW_TEXT(call_id), AW_TEXT(run_id),
		      AW_TEXT("reserve"),      AW_INT(n->tokens), AW_INT(n->cost),  AW_TEXT("")};
	return e ? e
		 : txn_defer(t,
			     "INSERT INTO budget_ledger (project_id, period_key, call_id, run_id,"
			     " kind, tokens, cost, model) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
			     8, q, err);
}

aw_err aw_store_budget_unreserve(aw_txn *t, const char *key, const aw_budget_amount *n,
				 aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(key), AW_INT(n->tokens), AW_INT(n->cost)};
	return txn_exec(t,
			"UPDATE budget_periods SET reserved = reserved - $3,"
			" cost_reserved = cost_reserved - $4"
			" WHERE project_id = $1 AND period_key = $2",
			4, p, NULL, err);
}

aw_err aw_store_budget_forget(aw_txn *t, const char *from, const char *before, int counters,
			      aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(from), AW_TEXT(before)};
	return txn_exec(t,
			counters ? "DELETE FROM budget_periods WHERE project_id = $1"
				   " AND period_key >= $2 AND period_key < $3"
				 : "DELETE FROM budget_periods WHERE project_id = $1"
				   " AND period_key >= $2 AND period_key < $3"
				   " AND reserved = 0 AND cost_reserved = 0",
			3, p, NULL, err);
}

/* Moves held out of a row's reservations and used into its settled spend;
 * after (or NULL): the row's limits and settled spend then. */
static aw_err move(aw_txn *t, const char *key, const aw_budget_amount *held,
		   const aw_budget_amount *used, aw_budget_period *after, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val q[] = {AW_TEXT(t->ctx.project), AW_TEXT(key),	   AW_INT(held->tokens),
		      AW_INT(used->tokens),    AW_INT(held->cost), AW_INT(used->cost)};
	aw_err e = txn_exec(t,
			    "UPDATE budget_periods SET reserved = reserved - $3,"
			    " settled = settled + $4, cost_reserved = cost_reserved - $5,"
			    " cost_settled = cost_settled + $6"
			    " WHERE project_id = $1 AND period_key = $2"
			    " RETURNING token_limit, settled, cost_limit, cost_settled",
			    6, q, &r, err);
	if (!e && after && r->nrows) {
		after->limit = (aw_budget_amount){cell_ll(r, 0, 0), cell_ll(r, 0, 2)};
		after->settled = (aw_budget_amount){cell_ll(r, 0, 1), cell_ll(r, 0, 3)};
	}
	rows_free(r);
	return e;
}

aw_err aw_store_budget_close(aw_txn *t, const char *call_id, const aw_budget_amount *used,
			     const char *model, const char *bucket, aw_budget_period *after,
			     int *found, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(call_id)};
	aw_err e = txn_exec(t,
			    "DELETE FROM budget_reservations WHERE project_id = $1"
			    " AND call_id = $2 RETURNING period_key, run_id, tokens, cost, extra",
			    2, p, &r, err);
	*found = !e && r->nrows == 1;
	if (!*found) {
		rows_free(r);
		return e;
	}
	char period[16], run_id[64], extra[256];
	cell_copy(period, sizeof period, r, 0, 0);
	cell_copy(run_id, sizeof run_id, r, 0, 1);
	cell_copy(extra, sizeof extra, r, 0, 4);
	aw_budget_amount held = {cell_ll(r, 0, 2), cell_ll(r, 0, 3)};
	rows_free(r);
	/* what the upstream billed, never capped at what was held: the excess
	 * is settled too, and shows as an "overshoot" line of its own */
	aw_budget_amount u = used ? *used : held;
	u.tokens = u.tokens < 0 ? 0 : u.tokens;
	u.cost = u.cost < 0 ? 0 : u.cost;
	e = move(t, period, &held, &u, after, err);
	if (!e && !strcmp(period, "rolling")) { /* the spend of the window's hour */
		static const aw_budget_amount nolimit = {0, -1}, none = {0, 0};
		if (!(e = aw_store_budget_period_ensure(t, bucket, &nolimit, err)))
			e = move(t, bucket, &none, &u, NULL, err);
	}
	if (!e && run_id[0]) { /* the run's own row, when it has a per-run limit */
		char run_key[80];
		aw_budget_run_key(run_id, run_key);
		e = move(t, run_key, &held, &u, NULL, err);
	}
	/* a virtual key's rows (its budget, its minute's tokens) */
	for (char *sv = NULL, *k = strtok_r(extra, " ", &sv); !e && k; k = strtok_r(NULL, " ", &sv))
		e = move(t, k, &held, &u, NULL, err);
	if (!e && !used)
		return ledger(t, period, call_id, run_id, "reap", &held, model, err);
	/* settle: at most what was held (reserve = settle + release + reap) */
	aw_budget_amount in = {u.tokens < held.tokens ? u.tokens : held.tokens,
			       u.cost < held.cost ? u.cost : held.cost};
	aw_budget_amount rest = {held.tokens - in.tokens, held.cost - in.cost};
	aw_budget_amount over = {u.tokens - in.tokens, u.cost - in.cost};
	if (!e)
		e = ledger(t, period, call_id, run_id, "settle", &in, model, err);
	if (!e && (rest.tokens || rest.cost))
		e = ledger(t, period, call_id, run_id, "release", &rest, "", err);
	if (!e && (over.tokens || over.cost))
		e = ledger(t, period, call_id, run_id, "overshoot", &over, model, err);
	return e;
}

aw_err aw_store_budget_expired(aw_txn *t, const char *now, char (*ids)[64], int max, int *n,
			       aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(now), AW_INT(max)};
	aw_err e = txn_exec(t,
			    "SELECT call_id FROM budget_reservations WHERE project_id = $1"
			    " AND lease_until < $2 ORDER BY lease_until LIMIT $3",
			    3, p, &r, err);
	*n = 0;
	for (int i = 0; !e && i < r->nrows && i < max; i++)
		cell_copy(ids[(*n)++], 64, r, i, 0);
	rows_free(r);
	return e;
}

aw_err aw_store_budget_open(aw_txn *t, long long *n, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project)};
	aw_err e = txn_exec(t, "SELECT COUNT(*) FROM budget_reservations WHERE project_id = $1", 1,
			    p, &r, err);
	*n = !e && r->nrows ? cell_ll(r, 0, 0) : 0;
	rows_free(r);
	return e;
}

aw_err aw_store_budget_renew(aw_txn *t, const char *holder, const char *lease_until, aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(holder), AW_TEXT(lease_until)};
	return txn_exec(t,
			"UPDATE budget_reservations SET lease_until = $3 WHERE project_id = $1"
			" AND holder = $2",
			3, p, NULL, err);
}

aw_err aw_store_budget_sums(aw_txn *t, const char *period, aw_budget_sums *out, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(period)};
	aw_err e = txn_exec(t,
			    "SELECT kind, SUM(tokens), SUM(cost) FROM budget_ledger"
			    " WHERE project_id = $1 AND period_key = $2 GROUP BY kind",
			    2, p, &r, err);
	memset(out, 0, sizeof *out);
	for (int i = 0; !e && i < r->nrows; i++) {
		char kind[16];
		cell_copy(kind, sizeof kind, r, i, 0);
		aw_budget_amount v = {cell_ll(r, i, 1), cell_ll(r, i, 2)};
		if (!strcmp(kind, "reserve"))
			out->reserve = v;
		else if (!strcmp(kind, "settle"))
			out->settle = v;
		else if (!strcmp(kind, "release"))
			out->release = v;
		else if (!strcmp(kind, "reap"))
			out->reap = v;
		else if (!strcmp(kind, "overshoot"))
			out->overshoot = v;
	}
	rows_free(r);
	return e;
}

aw_err aw_store_budget_models(aw_txn *t, const char *period, const char *since,
			      aw_budget_model **out, int *n, aw_error *err)
{
	*out = NULL;
	*n = 0;
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(period),
		      AW_TEXT(since ? since : "1970-01-01T00:00:00.000Z")};
	/* a call's overshoot line is not another call */
#define CALLS "SUM(CASE WHEN kind = 'overshoot' THEN 0 ELSE 1 END)"
	const char *sql =
		txn_dialect(t) == AW_DIALECT_PG
			? "SELECT model, SUM(tokens), SUM(cost), " CALLS " FROM budget_ledger"
			  " WHERE project_id = $1 AND period_key = $2 AND kind IN"
			  " ('settle', 'reap', 'overshoot') AND at >= $3::timestamptz"
			  " GROUP BY model ORDER BY 3 DESC, 2 DESC, 1 LIMIT 256"
			: "SELECT model, SUM(tokens), SUM(cost), " CALLS " FROM budget_ledger"
			  " WHERE project_id = $1 AND period_key = $2 AND kind IN"
			  " ('settle', 'reap', 'overshoot') AND at >= $3"
			  " GROUP BY model ORDER BY 3 DESC, 2 DESC, 1 LIMIT 256";
#undef CALLS
	aw_err e = txn_exec(t, sql, 3, p, &r, err);
	if (!e && r->nrows && !(*out = aw_calloc((size_t)r->nrows, sizeof **out)))
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	for (int i = 0; !e && i < r->nrows; i++) {
		aw_budget_model *m = &(*out)[(*n)++];
		cell_copy(m->model, sizeof m->model, r, i, 0);
		m->tokens = cell_ll(r, i, 1);
		m->cost = cell_ll(r, i, 2);
		m->calls = cell_ll(r, i, 3);
	}
	rows_free(r);
	return e;
}

aw_err aw_store_budget_history(aw_txn *t, const char *period, const char *run_id, long long after,
			       int limit, aw_budget_entry **out, int *n, aw_error *err)
{
	*out = NULL;
	*n = 0;
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(period ? period : ""),
		      AW_TEXT(run_id ? run_id : ""), AW_INT(after), AW_INT(limit)};
	aw_err e = txn_exec(t,
			    "SELECT seq, period_key, call_id, run_id, kind, tokens, cost, model,"
			    " at FROM budget_ledger WHERE project_id = $1"
			    " AND ($2 = '' OR period_key = $2) AND ($3 = '' OR run_id = $3)"
			    " AND seq > $4 ORDER BY seq LIMIT $5",
			    5, p, &r, err);
	if (!e && r->nrows && !(*out = aw_calloc((size_t)r->nrows, sizeof **out)))
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	for (int i = 0; !e && i < r->nrows; i++) {
		aw_budget_entry *v = &(*out)[(*n)++];
		v->seq = cell_ll(r, i, 0);
		cell_copy(v->period_key, sizeof v->period_key, r, i, 1);
		cell_copy(v->call_id, sizeof v->call_id, r, i, 2);
		cell_copy(v->run_id, sizeof v->run_id, r, i, 3);
		cell_copy(v->kind, sizeof v->kind, r, i, 4);
		v->tokens = cell_ll(r, i, 5);
		v->cost = cell_ll(r, i, 6);
		cell_copy(v->model, sizeof v->model, r, i, 7);
		cell_copy(v->at, sizeof v->at, r, i, 8);
	}
	rows_free(r);
	return e;
}

aw_err aw_store_budget_state_get(aw_txn *t, aw_budget_state *out, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project)};
	aw_err e = txn_exec(t,
			    "SELECT suspended, reason, since, by_principal, imposed_by"
			    " FROM budget_state WHERE project_id = $1",
			    1, p, &r, err);
	memset(out, 0, sizeof *out);
	if (!e && r->nrows) {
		char s[8];
		cell_copy(s, sizeof s, r, 0, 0);
		out->suspended = !strcmp(s, "1") || !strcmp(s, "t") || !strcmp(s, "true");
		cell_copy(out->reason, sizeof out->reason, r, 0, 1);
		cell_copy(out->since, sizeof out->since, r, 0, 2);
		cell_copy(out->by, sizeof out->by, r, 0, 3);
		cell_copy(out->imposed_by, sizeof out->imposed_by, r, 0, 4);
	}
	rows_free(r);
	return e;
}

aw_err aw_store_budget_state_set(aw_txn *t, const aw_budget_state *st, aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(st->suspended ? "1" : "0"),
		      AW_TEXT(st->reason),     AW_TEXT(st->since),
		      AW_TEXT(st->by),	       AW_TEXT(st->imposed_by)};
	const char *sql =
		txn_dialect(t) == AW_DIALECT_PG
			? "INSERT INTO budget_state (project_id, suspended, reason, since,"
			  " by_principal, imposed_by) VALUES ($1, $2::int::boolean, $3, $4, $5, $6)"
			  " ON CONFLICT (project_id) DO UPDATE SET suspended ="
			  " excluded.suspended, reason = excluded.reason, since ="
			  " excluded.since, by_principal = excluded.by_principal,"
			  " imposed_by = excluded.imposed_by"
			: "INSERT INTO budget_state (project_id, suspended, reason, since,"
			  " by_principal, imposed_by) VALUES ($1, CAST($2 AS INTEGER), $3, $4, $5,"
			  " $6) ON CONFLICT (project_id) DO UPDATE SET suspended ="
			  " excluded.suspended, reason = excluded.reason, since ="
			  " excluded.since, by_principal = excluded.by_principal,"
			  " imposed_by = excluded.imposed_by";
	return txn_exec(t, sql, 6, p, NULL, err);
}

aw_err aw_store_budget_run_state(aw_txn *t, const char *run_id, char state[24], aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(run_id)};
	aw_err e = txn_exec(t, "SELECT state FROM runs WHERE project_id = $1 AND run_id = $2", 2, p,
			    &r, err);
	state[0] = '\0';
	if (!e && r->nrows)
		cell_copy(state, 24, r, 0, 0);
	rows_free(r);
	return e;
}

aw_err aw_store_budget_spend(aw_txn *t, int hourly, const char *since, const char *until,
			     aw_spend_by by, int limit, aw_spend_row **out, int *n, aw_error *err)
{
	int pg = txn_dialect(t) == AW_DIALECT_PG;
	const char *bucket = pg ? (hourly ? "to_char(date_trunc('hour', ts AT TIME ZONE 'UTC'),"
					    " 'YYYY-MM-DD\"T\"HH24\":00:00.000Z\"')"
					  : "to_char(date_trunc('day', ts AT TIME ZONE 'UTC'),"
					    " 'YYYY-MM-DD\"T00:00:00.000Z\"')")
				: (hourly ? "substr(ts, 1, 13) || ':00:00.000Z'"
					  : "substr(ts, 1, 10) || 'T00:00:00.000Z'");
	/* the model that answered (and was priced), else the one asked for */
	const char *group =
		by == AW_SPEND_BY_KEY ? "actor"
		: by == AW_SPEND_BY_NONE
			? "''"
			: (pg ? "coalesce(nullif(payload::jsonb ->> 'upstream_model', ''),"
				" payload::jsonb ->> 'model', '')"
			      : "coalesce(nullif(json_extract(payload, '$.upstream_model'), ''),"
				" json_extract(payload, '$.model'), '')");
	const char *num = pg ? "coalesce((payload::jsonb ->> '%s')::bigint, 0)"
			     : "coalesce(json_extract(payload, '$.%s'), 0)";
	char in[96], outk[96];
	snprintf(in, sizeof in, num, "tokens_in");
	snprintf(outk, sizeof outk, num, "tokens_out");
	char sql[1400];
	snprintf(sql, sizeof sql,
		 "SELECT %s, %s, count(*), sum(CASE WHEN %s = 'ok' THEN 0 ELSE 1 END), sum(%s),"
		 " sum(%s), %s FROM audit_events WHERE project_id = $1 AND action = 'llm.call'"
		 " AND ts >= $2 AND ts < $3 GROUP BY 1, 2 ORDER BY 1, 2 LIMIT $4",
		 bucket, group,
		 pg ? "payload::jsonb ->> 'outcome'" : "json_extract(payload, '$.outcome')", in,
		 outk,
		 pg ? "sum(coalesce((payload::jsonb -> 'budget' ->> 'cost_usd')::float8, 0))"
		    : "total(coalesce(json_extract(payload, '$.budget.cost_usd'), 0))");
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(since), AW_TEXT(until), AW_INT(limit)};
	aw_rows *r = NULL;
	aw_err e = txn_exec(t, sql, 4, v, &r, err);
	if (e)
		return e;
	aw_spend_row *a = aw_calloc((size_t)r->nrows + 1, sizeof *a);
	if (!a) {
		rows_free(r);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	for (int i = 0; i < r->nrows; i++) {
		cell_copy(a[i].at, sizeof a[i].at, r, i, 0);
		cell_copy(a[i].group, sizeof a[i].group, r, i, 1);
		a[i].calls = cell_ll(r, i, 2);
		a[i].failed = cell_ll(r, i, 3);
		a[i].tokens_in = cell_ll(r, i, 4);
		a[i].tokens_out = cell_ll(r, i, 5);
		const char *c = rows_get(r, i, 6);
		a[i].cost_usd = c ? strtod(c, NULL) : 0;
	}
	*out = a;
	*n = r->nrows;
	rows_free(r);
	return AW_OK;
}
