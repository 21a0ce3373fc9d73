/*
 * migrate.c - versioned schema migrations for both backends.
 *
 * Migrations are the SQL files under src/store/migrations/<dialect>/, compiled
 * into the binary in version order. Applying them is one transaction: on SQLite
 * under BEGIN IMMEDIATE, on PostgreSQL under a transaction-scoped advisory lock,
 * so concurrent `awooop migrate` runs serialise and a failure leaves nothing
 * half-applied. On PostgreSQL the same transaction creates the roles and
 * (re)grants the application role exactly what the service needs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/log.h"
#include "awooop/str.h"
#include "store_internal.h"

#define MIGRATE_LOCK_KEY "727700113"

static int role_name_ok(const char *r)
{
	size_t n = strlen(r);
	if (n == 0 || n > 63 || !((r[0] >= 'a' && r[0] <= 'z') || r[0] == '_'))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = r[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
			return 0;
	}
	return 1;
}

/* The version of the binary's newest migration. Versions may have gaps
 * (branches number theirs apart, e.g. 0026 before another's 0025 lands):
 * a store is current when every migration of the binary is recorded. */
int aw_store_schema_target(const aw_store *s)
{
	int pg = s->drv->dialect == AW_DIALECT_PG;
	const aw_migration *list = pg ? migrations_pg : migrations_sqlite;
	int count = pg ? migrations_pg_count : migrations_sqlite_count;
	return count ? list[count - 1].version : 0;
}

static int recorded(const aw_rows *r, int version)
{
	for (int i = 0; r && i < r->nrows; i++)
		if ((int)cell_ll(r, i, 0) == version)
			return 1;
	return 0;
}

/* newest: the highest version recorded; missing: the binary's migrations
 * not recorded. */
static void schema_state(const aw_rows *r, const aw_migration *list, int count, int *newest,
			 int *missing)
{
	*newest = *missing = 0;
	for (int i = 0; r && i < r->nrows; i++)
		if ((int)cell_ll(r, i, 0) > *newest)
			*newest = (int)cell_ll(r, i, 0);
	for (int i = 0; i < count; i++)
		*missing += !recorded(r, list[i].version);
}

static aw_err pg_roles(aw_store *s, aw_conn *c, const char *app, aw_error *err)
{
	char sql[1024];
	snprintf(sql, sizeof sql,
		 "CREATE SCHEMA IF NOT EXISTS awooop;"
		 /* roles are cluster-wide: another database's migrate may create
		    them concurrently, so a duplicate is not an error */
		 "DO $$ BEGIN"
		 " IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'awooop_platform')"
		 " THEN CREATE ROLE awooop_platform NOLOGIN NOSUPERUSER NOBYPASSRLS; END IF;"
		 " EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;"
		 "DO $$ BEGIN"
		 " IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '%s')"
		 " THEN CREATE ROLE %s LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;"
		 " END IF; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;"
		 " END $$;",
		 app, app);
	aw_err e = s->drv->script(c, sql, err);
	if (e)
		return e;
	aw_rows *r = NULL;
	aw_val p[] = {AW_TEXT(app)};
	e = s->drv->exec(c, "SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = $1", 1,
			 p, &r, err);
	if (!e && strcmp(rows_get(r, 0, 0) ? rows_get(r, 0, 0) : "t", "f") != 0)
		e = aw_fail(err, AW_E_MIGRATE_ROLE,
			    "application role %s is superuser or has BYPASSRLS; refusing", app);
	rows_free(r);
	return e;
}

static aw_err pg_grants(aw_store *s, aw_conn *c, const char *app, aw_error *err)
{
	char sql[1024];
	snprintf(sql, sizeof sql,
		 "GRANT USAGE ON SCHEMA awooop TO %s;"
		 "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA awooop TO %s;"
		 "REVOKE INSERT, UPDATE, DELETE ON schema_migrations FROM %s;"
		 "REVOKE UPDATE, DELETE ON audit_events, audit_targets FROM %s;"
		 "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA awooop TO %s;"
		 "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA awooop TO %s;",
		 app, app, app, app, app, app);
	return s->drv->script(c, sql, err);
}

aw_err aw_store_migrate(aw_store *s, const char *app_role, aw_error *err)
{
	int pg = s->drv->dialect == AW_DIALECT_PG;
	const aw_migration *list = pg ? migrations_pg : migrations_sqlite;
	int count = pg ? migrations_pg_count : migrations_sqlite_count;
	const char *app = app_role && *app_role ? app_role : "awooop_app";
	if (pg && !role_name_ok(app))
		return aw_fail(err, AW_E_CONFIG, "--app-role must match [a-z_][a-z0-9_]{0,62}");

	aw_ctx sys;
	aw_ctx_system(&sys, NULL);
	aw_conn *c = NULL;
	aw_err e = store_acquire(s, &sys, &c, NULL, err);
	if (e)
		return e;
	e = s->drv->script(c,
			   pg ? "BEGIN; SELECT pg_advisory_xact_lock(" MIGRATE_LOCK_KEY ")"
			      : "BEGIN IMMEDIATE",
			   err);
	if (e)
		goto out;
	if (pg && (e = pg_roles(s, c, app, err)))
		goto rollback;
	e = s->drv->script(c,
			   pg ? "CREATE TABLE IF NOT EXISTS schema_migrations ("
				"version integer PRIMARY KEY, name text NOT NULL,"
				" applied_at timestamptz NOT NULL DEFAULT now())"
			      : "CREATE TABLE IF NOT EXISTS schema_migrations ("
				"version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
				" applied_at TEXT NOT NULL DEFAULT"
				" (strftime('%Y-%m-%dT%H:%M:%fZ','now')))",
			   err);
	if (e)
		goto rollback;
	aw_rows *have = NULL;
	if ((e = s->drv->exec(c, "SELECT version FROM schema_migrations", 0, NULL, &have, err))) {
		rows_free(have);
		goto rollback;
	}
	int newest = 0, missing = 0, target = aw_store_schema_target(s);
	schema_state(have, list, count, &newest, &missing);
	if (newest > target) {
		rows_free(have);
		e = aw_fail(err, AW_E_STORE_SCHEMA,
			    "schema version %d is newer than this binary (%d)", newest, target);
		goto rollback;
	}
	for (int i = 0; i < count; i++) {
		if (recorded(have, list[i].version))
			continue;
		if ((e = s->drv->script(c, list[i].sql, err))) {
			char msg[sizeof err->msg] = "";
			if (err)
				AW_COPY_ARRAY(msg, err->msg);
			aw_fail(err, e, "migration %04d_%s failed: %s", list[i].version,
				list[i].name, msg);
			break;
		}
		aw_val p[] = {AW_INT(list[i].version), AW_TEXT(list[i].name)};
		e = s->drv->exec(c, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
				 2, p, NULL, err);
		if (e)
			break;
		aw_log(AW_LOG_INFO, &sys, "migration applied", "backend", s->drv->name, "migration",
		       list[i].name, NULL);
	}
	rows_free(have);
	if (e)
		goto rollback;
	if (pg && (e = pg_grants(s, c, app, err)))
		goto rollback;
	e = s->drv->script(c, "COMMIT", err);
	goto out;
rollback:
	s->drv->script(c, "ROLLBACK", NULL);
out:
	store_release(s, c, -1);
	return e;
}

aw_err aw_store_check_schema(aw_store *s, aw_error *err)
{
	aw_ctx sys;
	aw_ctx_system(&sys, NULL);
	aw_rows *r = NULL;
	aw_err e = store_exec1(s, &sys, "SELECT version FROM schema_migrations", 0, NULL, &r, err);
	if (e) {
		rows_free(r);
		return aw_fail(err, AW_E_STORE_SCHEMA,
			       "store has no awooop schema; run `awooop migrate --db URL`");
	}
	int pg = s->drv->dialect == AW_DIALECT_PG;
	int newest = 0, missing = 0, want = aw_store_schema_target(s);
	schema_state(r, pg ? migrations_pg : migrations_sqlite,
		     pg ? migrations_pg_count : migrations_sqlite_count, &newest, &missing);
	rows_free(r);
	if (newest != want || missing)
		return aw_fail(err, AW_E_STORE_SCHEMA,
			       "store schema is at version %d (%d of this binary's migrations not "
			       "applied), this binary needs %d; run `awooop migrate`",
			       newest, missing, want);
	return AW_OK;
}
