/*
 * tenancy_store.c - store queries for projects and API keys.
 *
 * Every tenant query names project_id = the txn's project explicitly, even on
 * PostgreSQL where RLS already enforces it: the same SQL then isolates tenants
 * on SQLite, and a policy mistake on PostgreSQL is not the only line of defence.
 * The two *_platform_* functions are the documented cross-tenant path.
 */
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

#include "awooop/alloc.h"

aw_err aw_store_project_insert(aw_txn *t, const aw_project *p, aw_error *err)
{
	if (strcmp(p->project_id, t->ctx.project) != 0)
		return aw_fail(err, AW_E_INTERNAL, "project insert outside its own txn");
	aw_val v[] = {AW_TEXT(p->project_id), AW_TEXT(p->created_at), AW_TEXT(p->created_by)};
	aw_err e = txn_exec(t,
			    "INSERT INTO projects (project_id, created_at, created_by)"
			    " VALUES ($1, $2, $3)",
			    3, v, NULL, err);
	if (e == AW_E_STORE_CONFLICT)
		return aw_fail(err, AW_E_TENANT_EXISTS, "project already exists");
	return e;
}

aw_err aw_store_project_get(aw_txn *t, aw_project *out, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project)};
	aw_err e = txn_exec(t,
			    "SELECT project_id, created_at, created_by FROM projects"
			    " WHERE project_id = $1",
			    1, v, &r, err);
	if (!e && r->nrows == 0)
		e = aw_fail(err, AW_E_TENANT_NOT_FOUND, "project not found");
	if (!e) {
		cell_copy(out->project_id, sizeof out->project_id, r, 0, 0);
		cell_copy(out->created_at, sizeof out->created_at, r, 0, 1);
		cell_copy(out->created_by, sizeof out->created_by, r, 0, 2);
	}
	rows_free(r);
	return e;
}

aw_err aw_store_platform_list_projects(aw_store *s, const aw_ctx *ctx, const char *after, int limit,
				       aw_project **out, int *n, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(after ? after : ""), AW_INT(limit)};
	const char *sql = s->drv->dialect == AW_DIALECT_PG
				  ? "SELECT project_id, created_at, created_by"
				    " FROM platform_list_projects($1, $2)"
				  : "SELECT project_id, created_at, created_by FROM projects"
				    " WHERE project_id > $1 ORDER BY project_id LIMIT $2";
	aw_err e = store_exec1(s, ctx, sql, 2, v, &r, err);
	if (e)
		return e;
	static const aw_text_field f[] = {AW_TEXT_FIELD(aw_project, project_id),
					  AW_TEXT_FIELD(aw_project, created_at),
					  AW_TEXT_FIELD(aw_project, created_by)};
	return rows_to_array(r, sizeof **out, f, 3, (void **)out, n, err);
}

aw_err aw_store_key_insert(aw_txn *t, const aw_apikey *k, aw_error *err)
{
	aw_val v[] = {AW_TEXT(k->key_id),
		      AW_TEXT(t->ctx.project),
		      AW_TEXT(k->name),
		      AW_TEXT(aw_scope_name(k->scope)),
		      AW_TEXT(k->key_hash),
		      AW_TEXT(k->key_prefix),
		      AW_TEXT(k->created_at),
		      AW_TEXT(k->created_by),
		      AW_TEXT(k->expires_at[0] ? k->expires_at : NULL),
		      AW_TEXT(k->limits[0] ? k->limits : "{}")};
	aw_err e = txn_exec(t,
			    "INSERT INTO api_keys (key_id, project_id, name, scope, key_hash,"
			    " key_prefix, created_at, created_by, expires_at, limits)"
			    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
			    10, v, NULL, err);
	if (e == AW_E_STORE_CONFLICT)
		return aw_fail(err, AW_E_KEY_EXISTS, "an active key with this name exists");
	return e;
}

aw_err aw_store_key_name_used(aw_txn *t, const char *name, int *used, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(name)};
	aw_err e = txn_exec(t, "SELECT 1 FROM api_keys WHERE project_id = $1 AND name = $2 LIMIT 1",
			    2, v, &r, err);
	if (!e)
		*used = r->nrows > 0;
	rows_free(r);
	return e;
}

#define KEY_COLS                                                                           \
	"key_id, project_id, name, scope, key_prefix, created_at, created_by, revoked_at," \
	" expires_at, limits"

static void key_from_row(aw_apikey *k, const aw_rows *r, int i)
{
	memset(k, 0, sizeof *k);
	cell_copy(k->key_id, sizeof k->key_id, r, i, 0);
	cell_copy(k->project_id, sizeof k->project_id, r, i, 1);
	cell_copy(k->name, sizeof k->name, r, i, 2);
	aw_scope_parse(rows_get(r, i, 3), &k->scope);
	cell_copy(k->key_prefix, sizeof k->key_prefix, r, i, 4);
	cell_copy(k->created_at, sizeof k->created_at, r, i, 5);
	cell_copy(k->created_by, sizeof k->created_by, r, i, 6);
	cell_copy(k->revoked_at, sizeof k->revoked_at, r, i, 7);
	cell_copy(k->expires_at, sizeof k->expires_at, r, i, 8);
	cell_copy(k->limits, sizeof k->limits, r, i, 9);
	if (!k->limits[0])
		snprintf(k->limits, sizeof k->limits, "{}");
}

aw_err aw_store_key_list(aw_txn *t, aw_apikey **out, int *n, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project)};
	aw_err e = txn_exec(t,
			    "SELECT " KEY_COLS " FROM api_keys WHERE project_id = $1"
			    " ORDER BY created_at, key_id",
			    1, v, &r, err);
	if (e)
		return e;
	aw_apikey *arr = aw_calloc((size_t)r->nrows + 1, sizeof *arr);
	if (!arr) {
		rows_free(r);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	for (int i = 0; i < r->nrows; i++)
		key_from_row(&arr[i], r, i);
	*out = arr;
	*n = r->nrows;
	rows_free(r);
	return AW_OK;
}

/* Runs an UPDATE of one live key (v: project, key id, ...); when it changed
 * nothing, tells a revoked key (revoked: what to say) from a missing one. */
static aw_err live_key_update(aw_txn *t, const char *sql, int n, const aw_val *v,
			      const char *revoked, aw_error *err)
{
	aw_rows *r = NULL;
	aw_err e = txn_exec(t, sql, n, v, &r, err);
	if (e || r->affected == 1) {
		rows_free(r);
		return e;
	}
	rows_free(r);
	r = NULL;
	e = txn_exec(t, "SELECT 1 FROM api_keys WHERE project_id = $1 AND key_id = $2", 2, v, &r,
		     err);
	if (!e)
		e = r->nrows ? aw_fail(err, AW_E_KEY_REVOKED, "%s", revoked)
			     : aw_fail(err, AW_E_KEY_NOT_FOUND, "key not found");
	rows_free(r);
	return e;
}

aw_err aw_store_key_revoke(aw_txn *t, const char *key_id, const char *when, aw_error *err)
{
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(key_id), AW_TEXT(when)};
	return live_key_update(t,
			       "UPDATE api_keys SET revoked_at = $3 WHERE project_id = $1"
			       " AND key_id = $2 AND revoked_at IS NULL",
			       3, v, "key already revoked", err);
}

aw_err aw_store_key_get(aw_txn *t, const char *key_id, aw_apikey *out, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(key_id)};
	aw_err e = txn_exec(t,
			    "SELECT " KEY_COLS " FROM api_keys WHERE project_id = $1"
			    " AND key_id = $2",
			    2, v, &r, err);
	if (!e && r->nrows == 0)
		e = aw_fail(err, AW_E_KEY_NOT_FOUND, "key not found");
	if (!e)
		key_from_row(out, r, 0);
	rows_free(r);
	return e;
}

aw_err aw_store_key_set_limits(aw_txn *t, const char *key_id, const char *expires_at,
			       const char *limits, aw_error *err)
{
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(key_id),
		      AW_TEXT(expires_at && *expires_at ? expires_at : NULL), AW_TEXT(limits)};
	return live_key_update(
		t,
		"UPDATE api_keys SET expires_at = $3, limits = $4 WHERE project_id = $1"
		" AND key_id = $2 AND revoked_at IS NULL",
		4, v, "key revoked: its limits are final", err);
}

aw_err aw_store_key_revoke_name(aw_txn *t, const char *name, const char *when, aw_error *err)
{
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(name), AW_TEXT(when)};
	return txn_exec(t,
			"UPDATE api_keys SET revoked_at = $3 WHERE project_id = $1"
			" AND name = $2 AND revoked_at IS NULL",
			3, v, NULL, err);
}

aw_err aw_store_key_count_scope(aw_txn *t, aw_scope scope, int *n, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(aw_scope_name(scope))};
	aw_err e = txn_exec(t,
			    "SELECT count(*) FROM api_keys WHERE project_id = $1"
			    " AND scope = $2 AND revoked_at IS NULL",
			    2, v, &r, err);
	if (!e)
		*n = (int)cell_ll(r, 0, 0);
	rows_free(r);
	return e;
}

aw_err aw_store_platform_lookup_key(aw_store *s, const aw_ctx *ctx, const char *key_hash,
				    aw_apikey *out, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(key_hash)};
	const char *sql =
		s->drv->dialect == AW_DIALECT_PG
			? "SELECT key_id, project_id, name, scope, NULL, NULL, NULL, revoked_at,"
			  " expires_at, limits FROM platform_lookup_key($1)"
			: "SELECT key_id, project_id, name, scope, NULL, NULL, NULL, revoked_at,"
			  " expires_at, limits FROM api_keys WHERE key_hash = $1";
	aw_err e = store_exec1(s, ctx, sql, 1, v, &r, err);
	if (!e && r->nrows == 0)
		e = aw_fail(err, AW_E_AUTH_INVALID, "invalid API key");
	if (!e)
		key_from_row(out, r, 0);
	rows_free(r);
	return e;
}
