/*
 * approval_store.c - decisions on runs waiting for approval (store/approval.h).
 */
#include <stdlib.h>
#include <string.h>

#include "awooop/store/approval.h"
#include "store_internal.h"

aw_err aw_store_run_lock(aw_txn *t, const char *run_id, char state[20], aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(run_id)};
	aw_err e =
		txn_exec(t,
			 txn_dialect(t) == AW_DIALECT_PG
				 ? "SELECT state FROM runs WHERE project_id = $1 AND run_id = $2"
				   " FOR UPDATE"
				 : "SELECT state FROM runs WHERE project_id = $1 AND run_id = $2",
			 2, v, &r, err);
	if (e)
		return e;
	if (r->nrows == 0)
		e = aw_fail(err, AW_E_RUN_NOT_FOUND, "no such run");
	else
		cell_copy(state, 20, r, 0, 0);
	rows_free(r);
	return e;
}

aw_err aw_store_run_jti_used(aw_txn *t, const char *jti, int *used, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(jti)};
	aw_err e = txn_exec(t, "SELECT 1 FROM run_approvals WHERE project_id = $1 AND jti = $2", 2,
			    v, &r, err);
	if (e)
		return e;
	*used = r->nrows > 0;
	rows_free(r);
	return AW_OK;
}

aw_err aw_store_run_decision_add(aw_txn *t, const char *run_id, int step_no,
				 const aw_run_decision *d, const char *jti, aw_error *err)
{
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(run_id),	      AW_INT(step_no),
		      AW_TEXT(d->principal),   AW_TEXT(d->decision),  AW_TEXT(jti),
		      AW_TEXT(d->via),	       AW_TEXT(d->decided_at)};
	aw_err e = txn_exec(t,
			    "INSERT INTO run_approvals (project_id, run_id, step_no, principal,"
			    " decision, jti, via, decided_at) VALUES ($1, $2, $3, $4, $5, $6,"
			    " $7, $8)",
			    8, v, NULL, err);
	if (e == AW_E_STORE_CONFLICT)
		return aw_fail(err, AW_E_APPROVAL_DUP,
			       "this approver already decided on this step");
	return e;
}

aw_err aw_store_run_decisions(aw_txn *t, const char *run_id, int step_no, aw_run_decision **out,
			      int *n, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(run_id), AW_INT(step_no)};
	aw_err e = txn_exec(t,
			    "SELECT principal, decision, via, decided_at FROM run_approvals"
			    " WHERE project_id = $1 AND run_id = $2 AND step_no = $3"
			    " ORDER BY decided_at, principal",
			    3, v, &r, err);
	if (e)
		return e;
	static const aw_text_field f[] = {
		AW_TEXT_FIELD(aw_run_decision, principal), AW_TEXT_FIELD(aw_run_decision, decision),
		AW_TEXT_FIELD(aw_run_decision, via), AW_TEXT_FIELD(aw_run_decision, decided_at)};
	return rows_to_array(r, sizeof **out, f, 4, (void **)out, n, err);
}
