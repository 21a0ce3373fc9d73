/*
 * contract_store.c - store queries for the contract registry: revisions, the active
 * pointer, approvals and the ADR-113 outbox. Lifecycle rules live in
 * src/contract/; here every state change is a compare-and-set on the state the
 * service expects, so a concurrent change is an error, never a lost update.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

#include "awooop/alloc.h"

void aw_revisions_free(aw_revision *r, int n)
{
	if (!r)
		return;
	for (int i = 0; i < n; i++)
		free(r[i].body);
	free(r);
}

#define REV_COLS                                                                           \
	"revision_id, project_id, family, contract_id, state, body, body_hash, signature," \
	" sign_key_id, created_at, created_by, published_at, published_by, updated_at,"    \
	" rollback_of, rollback_from"

static int rev_from_row(aw_revision *v, const aw_rows *r, int i)
{
	memset(v, 0, sizeof *v);
	cell_copy(v->revision_id, sizeof v->revision_id, r, i, 0);
	cell_copy(v->project_id, sizeof v->project_id, r, i, 1);
	cell_copy(v->family, sizeof v->family, r, i, 2);
	cell_copy(v->contract_id, sizeof v->contract_id, r, i, 3);
	cell_copy(v->state, sizeof v->state, r, i, 4);
	v->body = aw_strdup(rows_get(r, i, 5) ? rows_get(r, i, 5) : "null");
	cell_copy(v->body_hash, sizeof v->body_hash, r, i, 6);
	cell_copy(v->signature, sizeof v->signature, r, i, 7);
	cell_copy(v->sign_key_id, sizeof v->sign_key_id, r, i, 8);
	cell_copy(v->created_at, sizeof v->created_at, r, i, 9);
	cell_copy(v->created_by, sizeof v->created_by, r, i, 10);
	cell_copy(v->published_at, sizeof v->published_at, r, i, 11);
	cell_copy(v->published_by, sizeof v->published_by, r, i, 12);
	cell_copy(v->updated_at, sizeof v->updated_at, r, i, 13);
	cell_copy(v->rollback_of, sizeof v->rollback_of, r, i, 14);
	cell_copy(v->rollback_from, sizeof v->rollback_from, r, i, 15);
	return v->body ? 0 : -1;
}

aw_err aw_store_rev_insert(aw_txn *t, const aw_revision *v, aw_error *err)
{
	aw_val p[] = {AW_TEXT(v->revision_id),
		      AW_TEXT(t->ctx.project),
		      AW_TEXT(v->family),
		      AW_TEXT(v->contract_id),
		      AW_TEXT(v->body),
		      AW_TEXT(v->created_at),
		      AW_TEXT(v->created_by),
		      AW_TEXT(v->rollback_of[0] ? v->rollback_of : NULL),
		      AW_TEXT(v->rollback_from[0] ? v->rollback_from : NULL)};
	return txn_exec(t,
			"INSERT INTO contract_revisions (revision_id, project_id, family,"
			" contract_id, state, body, body_hash, created_at, created_by, updated_at,"
			" rollback_of, rollback_from)"
			" VALUES ($1, $2, $3, $4, 'draft', $5, '', $6, $7, $6, $8, $9)",
			9, p, NULL, err);
}

aw_err aw_store_rev_get(aw_txn *t, const char *family, const char *contract_id, const char *rev,
			aw_revision *out, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(family), AW_TEXT(contract_id), AW_TEXT(rev)};
	aw_err e = txn_exec(t,
			    "SELECT " REV_COLS " FROM contract_revisions WHERE project_id = $1"
			    " AND family = $2 AND contract_id = $3 AND revision_id = $4",
			    4, p, &r, err);
	if (!e && r->nrows == 0)
		e = aw_fail(err, AW_E_CONTRACT_NOT_FOUND, "no such revision of this contract");
	if (!e && rev_from_row(out, r, 0))
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	rows_free(r);
	return e;
}

aw_err aw_store_rev_list(aw_txn *t, const char *family, const char *contract_id, aw_revision **out,
			 int *n, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(family), AW_TEXT(contract_id)};
	aw_err e = txn_exec(t,
			    "SELECT " REV_COLS " FROM contract_revisions WHERE project_id = $1"
			    " AND family = $2 AND contract_id = $3 ORDER BY revision_id",
			    3, p, &r, err);
	if (e)
		return e;
	aw_revision *arr = aw_calloc((size_t)r->nrows + 1, sizeof *arr);
	int ok = arr != NULL;
	for (int i = 0; ok && i < r->nrows; i++)
		ok = rev_from_row(&arr[i], r, i) == 0;
	if (!ok) {
		aw_revisions_free(arr, r->nrows);
		rows_free(r);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	*out = arr;
	*n = r->nrows;
	rows_free(r);
	return AW_OK;
}

/* Runs a compare-and-set UPDATE; 0 rows changed -> AW_E_CONTRACT_STATE. */
static aw_err cas(aw_txn *t, const char *sql, int n, const aw_val *p, aw_error *err)
{
	aw_rows *r = NULL;
	aw_err e = txn_exec(t, sql, n, p, &r, err);
	if (!e && r->affected != 1)
		e = aw_fail(err, AW_E_CONTRACT_STATE,
			    "the revision is not in the state this change needs");
	rows_free(r);
	return e;
}

aw_err aw_store_rev_set_body(aw_txn *t, const char *rev, const char *body, const char *now,
			     aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(rev), AW_TEXT(body), AW_TEXT(now)};
	return cas(t,
		   "UPDATE contract_revisions SET body = $3, updated_at = $4 WHERE project_id = $1"
		   " AND revision_id = $2 AND state = 'draft'",
		   4, p, err);
}

aw_err aw_store_rev_transition(aw_txn *t, const char *rev, const char *from, const char *to,
			       const char *now, aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(rev), AW_TEXT(from), AW_TEXT(to),
		      AW_TEXT(now)};
	return cas(t,
		   "UPDATE contract_revisions SET state = $4, updated_at = $5 WHERE project_id = $1"
		   " AND revision_id = $2 AND state = $3",
		   5, p, err);
}

aw_err aw_store_rev_publish(aw_txn *t, const char *rev, const char *body_hash,
			    const char *signature, const char *key_id, const char *by,
			    const char *now, aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(rev), AW_TEXT(body_hash), AW_TEXT(signature),
		      AW_TEXT(key_id),	       AW_TEXT(by),  AW_TEXT(now)};
	return cas(
		t,
		"UPDATE contract_revisions SET state = 'published', body_hash = $3,"
		" signature = $4, sign_key_id = $5, published_by = $6, published_at = $7,"
		" updated_at = $7 WHERE project_id = $1 AND revision_id = $2 AND state = 'draft'",
		7, p, err);
}

aw_err aw_store_contract_lock(aw_txn *t, const char *family, const char *contract_id, aw_error *err)
{
	if (txn_dialect(t) != AW_DIALECT_PG)
		return AW_OK; /* BEGIN IMMEDIATE already holds the database write lock */
	char key[256];
	snprintf(key, sizeof key, "contract/%s/%s/%s", t->ctx.project, family, contract_id);
	aw_val p[] = {AW_TEXT(key)};
	return txn_exec(t, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", 1, p, NULL,
			err);
}

aw_err aw_store_active_get(aw_txn *t, const char *family, const char *contract_id, char *rev_out,
			   aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(family), AW_TEXT(contract_id)};
	aw_err e = txn_exec(t,
			    "SELECT revision_id FROM active_revisions WHERE project_id = $1"
			    " AND family = $2 AND contract_id = $3",
			    3, p, &r, err);
	if (!e) {
		rev_out[0] = '\0';
		if (r->nrows)
			cell_copy(rev_out, AW_UUID_STR_LEN + 1, r, 0, 0);
	}
	rows_free(r);
	return e;
}

aw_err aw_store_active_set(aw_txn *t, const char *family, const char *contract_id, const char *rev,
			   const char *by, const char *now, aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project),
		      AW_TEXT(family),
		      AW_TEXT(contract_id),
		      AW_TEXT(rev),
		      AW_TEXT(now),
		      AW_TEXT(by)};
	return txn_exec(t,
			"INSERT INTO active_revisions (project_id, family, contract_id,"
			" revision_id, activated_at, activated_by) VALUES ($1, $2, $3, $4, $5, $6)"
			" ON CONFLICT (project_id, family, contract_id) DO UPDATE SET"
			" revision_id = excluded.revision_id, activated_at = excluded.activated_at,"
			" activated_by = excluded.activated_by",
			6, p, NULL, err);
}

aw_err aw_store_active_clear(aw_txn *t, const char *family, const char *contract_id, aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(family), AW_TEXT(contract_id)};
	return txn_exec(t,
			"DELETE FROM active_revisions WHERE project_id = $1 AND family = $2"
			" AND contract_id = $3",
			3, p, NULL, err);
}

aw_err aw_store_outbox_insert(aw_txn *t, const aw_outbox_event *ev, aw_error *err)
{
	aw_val p[] = {AW_TEXT(ev->event_id),
		      AW_TEXT(ev->event_type),
		      AW_TEXT(t->ctx.project),
		      AW_TEXT(ev->family),
		      AW_TEXT(ev->contract_id),
		      AW_TEXT(ev->old_revision_id[0] ? ev->old_revision_id : NULL),
		      AW_TEXT(ev->new_revision_id),
		      AW_TEXT(ev->created_at)};
	const char *sql =
		txn_dialect(t) == AW_DIALECT_PG
			? "INSERT INTO contract_outbox (event_id, event_type, project_id,"
			  " contract_family, contract_id, old_revision_id, new_revision_id, created_at)"
			  " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
			: "INSERT INTO contract_outbox (event_id, event_type, project_id,"
			  " contract_family, contract_id, old_revision_id, new_revision_id, created_at,"
			  " seq) VALUES ($1, $2, $3, $4, $5, $6, $7, $8,"
			  " (SELECT coalesce(max(seq), 0) + 1 FROM contract_outbox))";
	return txn_exec(t, sql, 8, p, NULL, err);
}

void outbox_from_row(aw_outbox_event *v, const aw_rows *r, int i, int relay_attempts_col,
		     int delivered_col)
{
	memset(v, 0, sizeof *v);
	cell_copy(v->event_id, sizeof v->event_id, r, i, 0);
	v->seq = cell_ll(r, i, 1);
	cell_copy(v->event_type, sizeof v->event_type, r, i, 2);
	cell_copy(v->project_id, sizeof v->project_id, r, i, 3);
	cell_copy(v->family, sizeof v->family, r, i, 4);
	cell_copy(v->contract_id, sizeof v->contract_id, r, i, 5);
	cell_copy(v->old_revision_id, sizeof v->old_revision_id, r, i, 6);
	cell_copy(v->new_revision_id, sizeof v->new_revision_id, r, i, 7);
	cell_copy(v->created_at, sizeof v->created_at, r, i, 8);
	if (delivered_col >= 0)
		cell_copy(v->delivered_at, sizeof v->delivered_at, r, i, delivered_col);
	v->relay_attempts = (int)cell_ll(r, i, relay_attempts_col);
}

aw_err aw_store_outbox_list(aw_txn *t, const char *family, const char *contract_id,
			    aw_outbox_event **out, int *n, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(family), AW_TEXT(contract_id)};
	aw_err e = txn_exec(t,
			    "SELECT event_id, seq, event_type, project_id, contract_family,"
			    " contract_id, old_revision_id, new_revision_id, created_at,"
			    " delivered_at, relay_attempts FROM contract_outbox"
			    " WHERE project_id = $1 AND contract_family = $2 AND contract_id = $3"
			    " ORDER BY seq",
			    3, p, &r, err);
	if (e)
		return e;
	aw_outbox_event *arr = aw_calloc((size_t)r->nrows + 1, sizeof *arr);
	if (!arr) {
		rows_free(r);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	for (int i = 0; i < r->nrows; i++)
		outbox_from_row(&arr[i], r, i, 10, 9);
	*out = arr;
	*n = r->nrows;
	rows_free(r);
	return AW_OK;
}

aw_err aw_store_activation_add(aw_txn *t, const char *family, const char *contract_id,
			       const aw_activation_row *a, aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project),
		      AW_TEXT(family),
		      AW_TEXT(contract_id),
		      AW_TEXT(a->revision_id),
		      AW_TEXT(a->previous_revision_id[0] ? a->previous_revision_id : NULL),
		      AW_TEXT(a->activated_at),
		      AW_TEXT(a->activated_by)};
	return txn_exec(t,
			"INSERT INTO contract_activations (project_id, family, contract_id,"
			" revision_id, previous_revision_id, activated_at, activated_by)"
			" VALUES ($1, $2, $3, $4, $5, $6, $7)",
			7, p, NULL, err);
}

aw_err aw_store_activations_recent(aw_txn *t, const char *family, const char *contract_id,
				   int limit, aw_activation_row **out, int *n, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(family), AW_TEXT(contract_id),
		      AW_INT(limit)};
	aw_err e = txn_exec(t,
			    "SELECT revision_id, previous_revision_id, activated_at, activated_by"
			    " FROM contract_activations WHERE project_id = $1 AND family = $2"
			    " AND contract_id = $3 ORDER BY activated_at DESC, revision_id DESC"
			    " LIMIT $4",
			    4, p, &r, err);
	if (e)
		return e;
	static const aw_text_field f[] = {AW_TEXT_FIELD(aw_activation_row, revision_id),
					  AW_TEXT_FIELD(aw_activation_row, previous_revision_id),
					  AW_TEXT_FIELD(aw_activation_row, activated_at),
					  AW_TEXT_FIELD(aw_activation_row, activated_by)};
	return rows_to_array(r, sizeof **out, f, 4, (void **)out, n, err);
}

aw_err aw_store_approval_insert(aw_txn *t, const char *rev, const aw_approval *a, aw_error *err)
{
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(rev), AW_TEXT(a->principal),
		      AW_TEXT(a->approved_at), AW_TEXT(a->expires_at)};
	aw_err e = txn_exec(t,
			    "INSERT INTO contract_approvals (project_id, revision_id, principal,"
			    " approved_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
			    5, p, NULL, err);
	if (e == AW_E_STORE_CONFLICT)
		return aw_fail(err, AW_E_CONTRACT_DUP_APPROVAL,
			       "this principal already approved this revision");
	return e;
}

aw_err aw_store_approval_list(aw_txn *t, const char *rev, aw_approval **out, int *n, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(rev)};
	aw_err e = txn_exec(t,
			    "SELECT principal, approved_at, expires_at FROM contract_approvals"
			    " WHERE project_id = $1 AND revision_id = $2 ORDER BY approved_at",
			    2, p, &r, err);
	if (e)
		return e;
	static const aw_text_field f[] = {AW_TEXT_FIELD(aw_approval, principal),
					  AW_TEXT_FIELD(aw_approval, approved_at),
					  AW_TEXT_FIELD(aw_approval, expires_at)};
	return rows_to_array(r, sizeof **out, f, 3, (void **)out, n, err);
}
