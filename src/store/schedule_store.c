/*
 * schedule_store.c - store queries for schedules and their fires
 * (store/schedule.h). Tenant queries name project_id = the txn's project
 * explicitly (RLS is not the only line of defence); the due list is the
 * platform path (platform_schedules_due on PostgreSQL: ids and times only).
 * Firing's exactly-once rests on two statements here: the row lock of
 * aw_store_schedule_get (SKIP LOCKED) and the compare-and-set of
 * aw_store_schedule_advance.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/store/schedule.h"
#include "store_internal.h"

#define FIRES_KEPT 100
#define COLS                                                                          \
	"schedule_id, project_id, name, cron, timezone, catch_up, run, next_fire_at," \
	" last_fire_at, last_run_id, last_error, created_at, created_by, updated_at"

void aw_schedule_rows_free(aw_schedule_row *r, int n)
{
	for (int i = 0; r && i < n; i++)
		free(r[i].run);
	free(r);
}

/* Row i of r (COLS) into *o; -1 out of memory. */
static int from_row(aw_schedule_row *o, const aw_rows *r, int i)
{
	memset(o, 0, sizeof *o);
	int k = 0;
	cell_copy(o->schedule_id, sizeof o->schedule_id, r, i, k++);
	cell_copy(o->project_id, sizeof o->project_id, r, i, k++);
	cell_copy(o->name, sizeof o->name, r, i, k++);
	cell_copy(o->cron, sizeof o->cron, r, i, k++);
	cell_copy(o->timezone, sizeof o->timezone, r, i, k++);
	cell_copy(o->catch_up, sizeof o->catch_up, r, i, k++);
	const char *run = rows_get(r, i, k++);
	cell_copy(o->next_fire_at, sizeof o->next_fire_at, r, i, k++);
	cell_copy(o->last_fire_at, sizeof o->last_fire_at, r, i, k++);
	cell_copy(o->last_run_id, sizeof o->last_run_id, r, i, k++);
	cell_copy(o->last_error, sizeof o->last_error, r, i, k++);
	cell_copy(o->created_at, sizeof o->created_at, r, i, k++);
	cell_copy(o->created_by, sizeof o->created_by, r, i, k++);
	cell_copy(o->updated_at, sizeof o->updated_at, r, i, k++);
	o->run = aw_strdup(run ? run : "{}");
	return o->run ? 0 : -1;
}

static const char *nullable(const char *s)
{
	return s && *s ? s : NULL;
}

aw_err aw_store_schedule_insert(aw_txn *t, const aw_schedule_row *r, aw_error *err)
{
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(r->schedule_id),
		      AW_TEXT(r->name),	       AW_TEXT(r->cron),
		      AW_TEXT(r->timezone),    AW_TEXT(r->catch_up),
		      AW_TEXT(r->run),	       AW_TEXT(nullable(r->next_fire_at)),
		      AW_TEXT(r->created_at),  AW_TEXT(r->created_by)};
	return txn_exec(t,
			"INSERT INTO schedules (project_id, schedule_id, name, cron, timezone,"
			" catch_up, run, next_fire_at, created_at, created_by, updated_at)"
			" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $9)",
			10, v, NULL, err);
}

aw_err aw_store_schedule_count(aw_txn *t, int *n, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project)};
	aw_err e =
		txn_exec(t, "SELECT count(*) FROM schedules WHERE project_id = $1", 1, v, &r, err);
	if (!e)
		*n = (int)cell_ll(r, 0, 0);
	rows_free(r);
	return e;
}

aw_err aw_store_schedule_get(aw_txn *t, const char *key, int by_id, int lock, aw_schedule_row *out,
			     int *found, aw_error *err)
{
	memset(out, 0, sizeof *out);
	*found = 0;
	char sql[512];
	snprintf(sql, sizeof sql,
		 "SELECT " COLS " FROM schedules WHERE project_id = $1 AND %s = $2%s",
		 by_id ? "schedule_id" : "name",
		 lock && txn_dialect(t) == AW_DIALECT_PG ? " FOR UPDATE SKIP LOCKED" : "");
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(key)};
	aw_err e = txn_exec(t, sql, 2, v, &r, err);
	if (!e && r->nrows == 1) {
		if (from_row(out, r, 0))
			e = aw_fail(err, AW_E_NOMEM, "out of memory");
		else
			*found = 1;
	}
	rows_free(r);
	return e;
}

aw_err aw_store_schedule_list(aw_txn *t, aw_schedule_row **out, int *n, aw_error *err)
{
	*out = NULL;
	*n = 0;
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project)};
	aw_err e = txn_exec(t, "SELECT " COLS " FROM schedules WHERE project_id = $1 ORDER BY name",
			    1, v, &r, err);
	if (e)
		return e;
	aw_schedule_row *a = aw_calloc((size_t)r->nrows + 1, sizeof *a);
	for (int i = 0; a && i < r->nrows; i++)
		if (from_row(&a[i], r, i)) {
			aw_schedule_rows_free(a, i + 1);
			a = NULL;
		}
	if (!a) {
		rows_free(r);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	*n = r->nrows;
	*out = a;
	rows_free(r);
	return AW_OK;
}

aw_err aw_store_schedule_delete(aw_txn *t, const char *name, int *found, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(name)};
	/* the fires go with it (ON DELETE CASCADE) */
	aw_err e = txn_exec(t, "DELETE FROM schedules WHERE project_id = $1 AND name = $2", 2, v,
			    &r, err);
	if (!e)
		*found = r->affected > 0;
	rows_free(r);
	return e;
}

aw_err aw_store_schedule_advance(aw_txn *t, const char *id, const char *expect, const char *next,
				 const char *fired_at, const char *run_id, const char *error,
				 const char *now, int *moved, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project),
		      AW_TEXT(id),
		      AW_TEXT(expect),
		      AW_TEXT(nullable(next)),
		      AW_TEXT(nullable(fired_at)),
		      AW_TEXT(nullable(run_id)),
		      AW_TEXT(nullable(error)),
		      AW_TEXT(now)};
	aw_err e = txn_exec(t,
			    "UPDATE schedules SET next_fire_at = $4,"
			    " last_fire_at = coalesce($5, last_fire_at),"
			    " last_run_id = coalesce($6, last_run_id), last_error = $7,"
			    " updated_at = $8"
			    " WHERE project_id = $1 AND schedule_id = $2 AND next_fire_at = $3",
			    8, v, &r, err);
	if (!e)
		*moved = r->affected == 1;
	rows_free(r);
	return e;
}

aw_err aw_store_schedule_fire_put(aw_txn *t, const char *id, const aw_schedule_fire *f,
				  aw_error *err)
{
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(id),	  AW_TEXT(f->tick_at),
		      AW_TEXT(f->run_id),      AW_INT(f->missed), AW_TEXT(f->fired_at)};
	aw_err e = txn_exec(t,
			    "INSERT INTO schedule_fires (project_id, schedule_id, tick_at, run_id,"
			    " missed, fired_at) VALUES ($1, $2, $3, $4, $5, $6)",
			    6, v, NULL, err);
	if (e)
		return e;
	aw_val p[] = {AW_TEXT(t->ctx.project), AW_TEXT(id), AW_INT(FIRES_KEPT - 1)};
	return txn_exec(t,
			"DELETE FROM schedule_fires WHERE project_id = $1 AND schedule_id = $2"
			" AND tick_at < (SELECT tick_at FROM schedule_fires WHERE project_id = $1"
			" AND schedule_id = $2 ORDER BY tick_at DESC LIMIT 1 OFFSET $3)",
			3, p, NULL, err);
}

aw_err aw_store_schedule_fires(aw_txn *t, const char *id, int limit, aw_schedule_fire **out, int *n,
			       aw_error *err)
{
	*out = NULL;
	*n = 0;
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(id), AW_INT(limit)};
	aw_err e = txn_exec(t,
			    "SELECT tick_at, run_id, missed, fired_at FROM schedule_fires"
			    " WHERE project_id = $1 AND schedule_id = $2"
			    " ORDER BY tick_at DESC LIMIT $3",
			    3, v, &r, err);
	if (e)
		return e;
	aw_schedule_fire *a = aw_calloc((size_t)r->nrows + 1, sizeof *a);
	if (!a) {
		rows_free(r);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	for (int i = 0; i < r->nrows; i++) {
		cell_copy(a[i].tick_at, sizeof a[i].tick_at, r, i, 0);
		cell_copy(a[i].run_id, sizeof a[i].run_id, r, i, 1);
		a[i].missed = (int)cell_ll(r, i, 2);
		cell_copy(a[i].fired_at, sizeof a[i].fired_at, r, i, 3);
	}
	*n = r->nrows;
	*out = a;
	rows_free(r);
	return AW_OK;
}

aw_err aw_store_schedules_due(aw_store *s, const char *now, int limit, aw_schedule_due **out,
			      int *n, aw_error *err)
{
	*out = NULL;
	*n = 0;
	aw_ctx sys;
	aw_ctx_system(&sys, NULL);
	snprintf(sys.principal, sizeof sys.principal, "scheduler");
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(now), AW_INT(limit)};
	aw_err e =
		store_exec1(s, &sys,
			    s->drv->dialect == AW_DIALECT_PG
				    ? "SELECT project_id, schedule_id, next_fire_at"
				      " FROM platform_schedules_due($1, $2)"
				    : "SELECT project_id, schedule_id, next_fire_at FROM schedules"
				      " WHERE next_fire_at <= $1 ORDER BY next_fire_at LIMIT $2",
			    2, p, &r, err);
	if (e)
		return e;
	static const aw_text_field f[] = {AW_TEXT_FIELD(aw_schedule_due, project_id),
					  AW_TEXT_FIELD(aw_schedule_due, schedule_id),
					  AW_TEXT_FIELD(aw_schedule_due, next_fire_at)};
	return rows_to_array(r, sizeof **out, f, 3, (void **)out, n, err);
}
