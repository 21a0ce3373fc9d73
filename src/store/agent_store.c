/*
 * agent_store.c - the agent step's sub-step journal (store/agent.h): table
 * run_calls, one row per model or tool call. Queries name project_id = the
 * txn's project explicitly (RLS is not the only line of defence).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/store/agent.h"
#include "store_internal.h"

#define COLS "run_id, step_no, seq, kind, name, state, result, error_code, created_at, finished_at"

void aw_run_calls_free(aw_run_call *c, int n)
{
	for (int i = 0; c && i < n; i++)
		free(c[i].result);
	free(c);
}

static const char *nullable(const char *s)
{
	return s && *s ? s : NULL;
}

aw_err aw_store_run_calls(aw_txn *t, const char *run_id, int step_no, aw_run_call **out, int *n,
			  aw_error *err)
{
	*out = NULL;
	*n = 0;
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(run_id), AW_INT(step_no)};
	aw_err e = txn_exec(t,
			    "SELECT " COLS " FROM run_calls WHERE project_id = $1 AND run_id = $2"
			    " AND ($3 = 0 OR step_no = $3) ORDER BY step_no, seq",
			    3, v, &r, err);
	if (e)
		return e;
	aw_run_call *a = aw_calloc((size_t)r->nrows + 1, sizeof *a);
	int bad = !a;
	for (int i = 0; a && i < r->nrows; i++) {
		aw_run_call *c = &a[i];
		cell_copy(c->run_id, sizeof c->run_id, r, i, 0);
		c->step_no = (int)cell_ll(r, i, 1);
		c->seq = (int)cell_ll(r, i, 2);
		cell_copy(c->kind, sizeof c->kind, r, i, 3);
		cell_copy(c->name, sizeof c->name, r, i, 4);
		cell_copy(c->state, sizeof c->state, r, i, 5);
		const char *res = rows_get(r, i, 6);
		if (res && !(c->result = aw_strdup(res)))
			bad = 1;
		cell_copy(c->error_code, sizeof c->error_code, r, i, 7);
		cell_copy(c->created_at, sizeof c->created_at, r, i, 8);
		cell_copy(c->finished_at, sizeof c->finished_at, r, i, 9);
	}
	int rows = r->nrows;
	rows_free(r);
	if (bad) {
		aw_run_calls_free(a, a ? rows : 0);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	*out = a;
	*n = rows;
	return AW_OK;
}

/* AW_OK when run_id is held by holder in attempt (its row locked on
 * PostgreSQL until the transaction ends: a worker taking the run over waits
 * for it), AW_E_RUN_STATE when not. */
static aw_err held_by(aw_txn *t, const char *run_id, const char *holder, int attempt, aw_error *err)
{
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(run_id), AW_TEXT(holder), AW_INT(attempt)};
	aw_rows *r = NULL;
	aw_err e = txn_exec(t,
			    txn_dialect(t) == AW_DIALECT_PG
				    ? "SELECT 1 FROM runs WHERE project_id = $1 AND run_id = $2 AND"
				      " lease_owner = $3 AND attempts = $4 FOR UPDATE"
				    : "SELECT 1 FROM runs WHERE project_id = $1 AND run_id = $2 AND"
				      " lease_owner = $3 AND attempts = $4",
			    4, v, &r, err);
	if (!e && !r->nrows)
		e = aw_fail(err, AW_E_RUN_STATE,
			    "run %s is no longer held by this attempt (its lease was lost, or it "
			    "ended): the agent's call is not journaled",
			    run_id);
	rows_free(r);
	return e;
}

aw_err aw_store_run_call_put(aw_txn *t, const aw_run_call *c, const char *holder, int attempt,
			     aw_error *err)
{
	aw_err e = holder ? held_by(t, c->run_id, holder, attempt, err) : AW_OK;
	if (e)
		return e;
	aw_val v[] = {AW_TEXT(t->ctx.project),
		      AW_TEXT(c->run_id),
		      AW_INT(c->step_no),
		      AW_INT(c->seq),
		      AW_TEXT(c->kind),
		      AW_TEXT(c->name),
		      AW_TEXT(c->state),
		      AW_TEXT(c->result),
		      AW_TEXT(nullable(c->error_code)),
		      AW_TEXT(c->created_at),
		      AW_TEXT(nullable(c->finished_at))};
	return txn_exec(
		t,
		"INSERT INTO run_calls (project_id, " COLS ") VALUES ($1, $2, $3, $4, $5, $6, $7,"
		" $8, $9, $10, $11) ON CONFLICT (project_id, run_id, step_no, seq) DO UPDATE SET"
		" kind = excluded.kind, name = excluded.name, state = excluded.state,"
		" result = excluded.result, error_code = excluded.error_code,"
		" finished_at = excluded.finished_at",
		11, v, NULL, err);
}

aw_err aw_store_run_call_approve(aw_txn *t, const char *run_id, int step_no, int seq, int *moved,
				 aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(run_id), AW_INT(step_no), AW_INT(seq)};
	aw_err e = txn_exec(t,
			    "UPDATE run_calls SET state = 'approved' WHERE project_id = $1 AND"
			    " run_id = $2 AND step_no = $3 AND seq = $4 AND state = 'parked'",
			    4, v, &r, err);
	if (!e)
		*moved = r && r->affected > 0;
	rows_free(r);
	return e;
}
