/*
 * fleet_store.c - which process serves which revision (store/fleet.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "awooop/alloc.h"
#include "awooop/store/fleet.h"
#include "store_internal.h"

aw_err aw_store_fleet_report(aw_txn *t, const aw_fleet_self *me, const aw_fleet_item *items, int n,
			     const char *now, aw_error *err)
{
	aw_err e = AW_OK;
	for (int i = 0; i < n && !e; i++) {
		const aw_fleet_item *it = &items[i];
		aw_val v[] = {AW_TEXT(t->ctx.project),	AW_TEXT(it->family),
			      AW_TEXT(it->contract_id), AW_TEXT(me->process_id),
			      AW_TEXT(me->role),	AW_TEXT(me->version),
			      AW_TEXT(me->started_at),	AW_TEXT(it->revision_id),
			      AW_TEXT(it->learned_at),	AW_TEXT(now),
			      AW_INT(me->report_ms)};
		e = txn_exec(t,
			     "INSERT INTO fleet_serving (project_id, family, contract_id,"
			     " process_id, role, version, started_at, revision_id, learned_at,"
			     " reported_at, report_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8,"
			     " $9, $10, $11) ON CONFLICT (project_id, family, contract_id,"
			     " process_id) DO UPDATE SET revision_id = excluded.revision_id,"
			     " learned_at = excluded.learned_at, reported_at ="
			     " excluded.reported_at, report_ms = excluded.report_ms",
			     11, v, NULL, err);
		aw_val l[] = {v[0], v[1], v[2], v[7], v[3], v[8]};
		if (!e && it->revision_id[0])
			e = txn_exec(t,
				     "INSERT INTO fleet_learned (project_id, family, contract_id,"
				     " revision_id, process_id, learned_at) VALUES ($1, $2, $3,"
				     " $4, $5, $6) ON CONFLICT DO NOTHING",
				     6, l, NULL, err);
	}
	return e;
}

aw_err aw_store_fleet_forget(aw_txn *t, const char *process_id, aw_error *err)
{
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(process_id)};
	return txn_exec(t, "DELETE FROM fleet_serving WHERE project_id = $1 AND process_id = $2", 2,
			v, NULL, err);
}

aw_err aw_store_fleet_prune(aw_txn *t, const char *reported_before, const char *learned_before,
			    aw_error *err)
{
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(reported_before), AW_TEXT(learned_before)};
	aw_err e =
		txn_exec(t, "DELETE FROM fleet_serving WHERE project_id = $1 AND reported_at < $2",
			 2, v, NULL, err);
	if (!e)
		e = txn_exec(t,
			     "DELETE FROM fleet_learned WHERE project_id = $1 AND learned_at < $2",
			     2, (aw_val[]){v[0], v[2]}, NULL, err);
	return e;
}

aw_err aw_store_fleet_serving(aw_txn *t, const char *family, const char *contract_id,
			      aw_fleet_row **out, int *n, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(family), AW_TEXT(contract_id)};
	aw_err e = txn_exec(t,
			    "SELECT process_id, role, version, started_at, report_ms,"
			    " revision_id, learned_at, reported_at FROM fleet_serving"
			    " WHERE project_id = $1 AND family = $2 AND contract_id = $3"
			    " ORDER BY started_at, process_id",
			    3, v, &r, err);
	if (e)
		return e;
	aw_fleet_row *a = aw_calloc((size_t)r->nrows + 1, sizeof *a);
	if (!a) {
		rows_free(r);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	for (int i = 0; i < r->nrows; i++) {
		cell_copy(a[i].p.process_id, sizeof a[i].p.process_id, r, i, 0);
		cell_copy(a[i].p.role, sizeof a[i].p.role, r, i, 1);
		cell_copy(a[i].p.version, sizeof a[i].p.version, r, i, 2);
		cell_copy(a[i].p.started_at, sizeof a[i].p.started_at, r, i, 3);
		a[i].p.report_ms = (int)cell_ll(r, i, 4);
		cell_copy(a[i].revision_id, sizeof a[i].revision_id, r, i, 5);
		cell_copy(a[i].learned_at, sizeof a[i].learned_at, r, i, 6);
		cell_copy(a[i].reported_at, sizeof a[i].reported_at, r, i, 7);
	}
	*out = a;
	*n = r->nrows;
	rows_free(r);
	return AW_OK;
}

aw_err aw_store_fleet_learned(aw_txn *t, const char *family, const char *contract_id,
			      const char *since, aw_fleet_learned **out, int *n, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(family), AW_TEXT(contract_id),
		      AW_TEXT(since)};
	aw_err e = txn_exec(t,
			    "SELECT revision_id, process_id, learned_at FROM fleet_learned"
			    " WHERE project_id = $1 AND family = $2 AND contract_id = $3"
			    " AND learned_at >= $4 ORDER BY learned_at",
			    4, v, &r, err);
	if (e)
		return e;
	static const aw_text_field f[] = {AW_TEXT_FIELD(aw_fleet_learned, revision_id),
					  AW_TEXT_FIELD(aw_fleet_learned, process_id),
					  AW_TEXT_FIELD(aw_fleet_learned, learned_at)};
	return rows_to_array(r, sizeof **out, f, 3, (void **)out, n, err);
}

aw_err aw_store_fleet_active(aw_store *s, const char *projects_json, aw_fleet_active **out, int *n,
			     aw_error *err)
{
	*out = NULL;
	*n = 0;
	aw_ctx sys;
	aw_ctx_system(&sys, NULL);
	snprintf(sys.principal, sizeof sys.principal, "fleet");
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(projects_json)};
	aw_err e = store_exec1(
		s, &sys,
		s->drv->dialect == AW_DIALECT_PG
			? "SELECT project_id, family, contract_id, revision_id, activated_at"
			  " FROM platform_active_revisions($1)"
			: "SELECT project_id, family, contract_id, revision_id, activated_at"
			  " FROM active_revisions WHERE project_id IN (SELECT value FROM"
			  " json_each($1))",
		1, p, &r, err);
	if (e)
		return e;
	static const aw_text_field f[] = {AW_TEXT_FIELD(aw_fleet_active, project_id),
					  AW_TEXT_FIELD(aw_fleet_active, family),
					  AW_TEXT_FIELD(aw_fleet_active, contract_id),
					  AW_TEXT_FIELD(aw_fleet_active, revision_id),
					  AW_TEXT_FIELD(aw_fleet_active, activated_at)};
	return rows_to_array(r, sizeof **out, f, 5, (void **)out, n, err);
}
