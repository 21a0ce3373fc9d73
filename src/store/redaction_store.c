/*
 * redaction_store.c - store queries for a project's custom redaction
 * patterns (store/redaction.h). Tenant queries name project_id = the txn's
 * project explicitly (RLS is not the only line of defence); the version list
 * is the platform path (platform_redaction_versions on PostgreSQL).
 */
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/store/redaction.h"
#include "store_internal.h"

aw_err aw_store_redaction_get(aw_txn *t, aw_redaction_row *out, aw_error *err)
{
	memset(out, 0, sizeof *out);
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project)};
	aw_err e = txn_exec(t,
			    "SELECT version, patterns, updated_at, updated_by"
			    " FROM redaction_patterns WHERE project_id = $1",
			    1, v, &r, err);
	if (e)
		return e;
	if (r->nrows == 1) {
		out->version = cell_ll(r, 0, 0);
		const char *p = rows_get(r, 0, 1);
		if (!(out->patterns = aw_strdup(p ? p : "[]"))) {
			rows_free(r);
			return aw_fail(err, AW_E_NOMEM, "out of memory");
		}
		cell_copy(out->updated_at, sizeof out->updated_at, r, 0, 2);
		cell_copy(out->updated_by, sizeof out->updated_by, r, 0, 3);
	}
	rows_free(r);
	return AW_OK;
}

aw_err aw_store_redaction_put(aw_txn *t, const char *patterns, const char *when, const char *by,
			      int64_t *version, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(patterns), AW_TEXT(when), AW_TEXT(by)};
	/* the row lock of the upsert orders concurrent writers: each gets its
	   own version */
	aw_err e = txn_exec(t,
			    "INSERT INTO redaction_patterns (project_id, version, patterns,"
			    " updated_at, updated_by) VALUES ($1, 1, $2, $3, $4)"
			    " ON CONFLICT (project_id) DO UPDATE SET"
			    " version = redaction_patterns.version + 1,"
			    " patterns = excluded.patterns, updated_at = excluded.updated_at,"
			    " updated_by = excluded.updated_by"
			    " RETURNING version",
			    4, v, &r, err);
	if (e)
		return e;
	if (r->nrows != 1)
		e = aw_fail(err, AW_E_INTERNAL, "the pattern list was not written");
	else
		*version = cell_ll(r, 0, 0);
	rows_free(r);
	return e;
}

aw_err aw_store_platform_redaction_versions(aw_store *s, const aw_ctx *ctx,
					    aw_redaction_version **out, int *n, aw_error *err)
{
	*out = NULL;
	*n = 0;
	aw_rows *r = NULL;
	const char *sql = s->drv->dialect == AW_DIALECT_PG
				  ? "SELECT project_id, version FROM platform_redaction_versions()"
				  : "SELECT project_id, version FROM redaction_patterns"
				    " ORDER BY project_id";
	aw_err e = store_exec1(s, ctx, sql, 0, NULL, &r, err);
	if (e)
		return e;
	aw_redaction_version *arr = aw_calloc((size_t)r->nrows + 1, sizeof *arr);
	if (!arr) {
		rows_free(r);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	for (int i = 0; i < r->nrows; i++) {
		cell_copy(arr[i].project_id, sizeof arr[i].project_id, r, i, 0);
		arr[i].version = cell_ll(r, i, 1);
	}
	*n = r->nrows;
	rows_free(r);
	*out = arr;
	return AW_OK;
}
