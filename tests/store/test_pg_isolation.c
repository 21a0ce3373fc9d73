/*
 * test_pg_isolation.c - tenant isolation inside PostgreSQL itself, checked
 * through the application role `serve` uses (not superuser, no BYPASSRLS):
 *  - every table but schema_migrations has ENABLE + FORCE row-level security;
 *  - with project A set, every tenant table shows only A's rows, and writing a
 *    B row (INSERT or UPDATE) fails with 42501;
 *  - with no project set, every tenant table shows 0 rows (fail closed);
 *  - the app role cannot switch RLS off, rewrite audit rows or migrations;
 *  - the platform path works only through the SECURITY DEFINER functions;
 *  - a statement's plan made over an empty table is made again (pg.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "awooop/store/tenancy.h"
#include "store/store_internal.h"
#include "support.h"

static aw_test_db db;
static PGconn *owner, *app;

static PGresult *q(PGconn *c, const char *sql)
{
	return PQexec(c, sql);
}

static void ok(PGconn *c, const char *sql)
{
	PGresult *r = q(c, sql);
	ExecStatusType st = PQresultStatus(r);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	PQclear(r);
}

static const char *sqlstate_of(PGconn *c, const char *sql, char *buf)
{
	PGresult *r = q(c, sql);
	const char *s = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	snprintf(buf, 8, "%s", s ? s : "00000");
	PQclear(r);
	return buf;
}

static long scalar(PGconn *c, const char *sql)
{
	PGresult *r = q(c, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	long v = atol(PQgetvalue(r, 0, 0));
	PQclear(r);
	return v;
}

/* Tenant tables from the catalogue: everything in schema awooop but migrations. */
static int tenant_tables(char names[][64], int max)
{
	PGresult *r = q(owner, "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON"
			       " n.oid = c.relnamespace WHERE n.nspname = 'awooop' AND"
			       " c.relkind = 'r' AND c.relname <> 'schema_migrations'"
			       " ORDER BY 1");
	int n = PQntuples(r);
	assert_true(n <= max);
	for (int i = 0; i < n; i++)
		snprintf(names[i], 64, "%s", PQgetvalue(r, i, 0));
	PQclear(r);
	return n;
}

static void seed(const char *p)
{
	char sql[8192];
	snprintf(
		sql, sizeof sql,
		"BEGIN; SET LOCAL awooop.project_id = '%1$s';"
		"INSERT INTO projects (project_id, created_at, created_by) VALUES ('%1$s', now(), 's');"
		"INSERT INTO api_keys (key_id, project_id, name, scope, key_hash, key_prefix, created_at, created_by)"
		" VALUES (gen_random_uuid(), '%1$s', 'k', 'reader', md5('%1$s') || md5('x%1$s'), 'awk_', now(), 's');"
		"INSERT INTO contract_revisions (project_id, revision_id, family, contract_id, state, body, body_hash, created_at, created_by, updated_at)"
		" VALUES ('%1$s', gen_random_uuid(), 'budget', 'c1', 'published', '{}', 'h', now(), 's', now());"
		"INSERT INTO active_revisions (project_id, family, contract_id, revision_id, activated_at, activated_by)"
		" SELECT project_id, family, contract_id, revision_id, now(), 's' FROM contract_revisions WHERE project_id = '%1$s';"
		"INSERT INTO contract_outbox (event_id, event_type, project_id, contract_family, contract_id, new_revision_id, created_at)"
		" SELECT gen_random_uuid(), 'revision_activated', project_id, family, contract_id, revision_id, now() FROM contract_revisions WHERE project_id = '%1$s';"
		"INSERT INTO contract_approvals (project_id, revision_id, principal, approved_at, expires_at)"
		" SELECT project_id, revision_id, 'bob', now(), now() + interval '1 hour' FROM contract_revisions WHERE project_id = '%1$s';"
		"INSERT INTO runs (project_id, run_id, state, mode, workflow, trace_id, run_after, created_at, updated_at)"
		" VALUES ('%1$s', gen_random_uuid(), 'queued', 'live', '[]', 't', now(), now(), now());"
		"INSERT INTO run_steps (project_id, run_id, step_no, kind, state, idempotency_key)"
		" SELECT project_id, run_id, 0, 'noop', 'succeeded', 'k' FROM runs WHERE project_id = '%1$s';"
		"UPDATE runs SET last_step = '{\"step_no\": 1, \"kind\": \"noop\", \"state\":"
		" \"succeeded\", \"idempotency_key\": \"k\", \"attempt\": 1}' WHERE project_id = '%1$s';"
		"INSERT INTO idempotency_keys (project_id, scope, idem_key, request_hash, resource_id, created_at, expires_at)"
		" VALUES ('%1$s', 'runs', 'k1', 'h', 'r', now(), now());"
		"INSERT INTO audit_events (project_id, event_id, seq, ts, actor, action, payload, prev_hash, hash)"
		" VALUES ('%1$s', gen_random_uuid(), 1, now(), 'a', 'x', '{}', '0', '1');"
		"INSERT INTO audit_heads (project_id, seq, hash) VALUES ('%1$s', 1, '1');"
		"INSERT INTO key_migrations (project_id, pattern, phase, phase_since, updated_by)"
		" VALUES ('%1$s', 'incident', 'A', now(), 's');"
		"INSERT INTO budget_periods (project_id, period_key, token_limit) VALUES ('%1$s', 'd', 10);"
		"INSERT INTO budget_reservations (project_id, call_id, period_key, tokens, holder, lease_until)"
		" VALUES ('%1$s', 'c', 'd', 1, 'h', now());"
		"INSERT INTO budget_ledger (project_id, period_key, call_id, kind, tokens)"
		" VALUES ('%1$s', 'd', 'c', 'reserve', 1);"
		"INSERT INTO budget_state (project_id, suspended, reason, since, by_principal)"
		" VALUES ('%1$s', false, 'r', now(), 's');"
		"INSERT INTO run_approvals (project_id, run_id, step_no, principal, decision, jti,"
		" via, decided_at) VALUES ('%1$s', gen_random_uuid(), 1, 'p', 'approve', 'j-%1$s',"
		" 'api', now());"
		"INSERT INTO channel_offsets (project_id, bot) VALUES ('%1$s', 'b');"
		"INSERT INTO conversation_events (project_id, bot, update_id, kind, chat_id, user_id,"
		" text, action, received_at) VALUES ('%1$s', 'b', 1, 'message', '1', '1', 't',"
		" 'ignored', now());"
		"INSERT INTO outbound_messages (project_id, msg_id, bot, chat_id, method, purpose,"
		" text, state, next_at, created_at) VALUES ('%1$s', 'm', 'b', '1', 'send', 'reply',"
		" 't', 'pending', now(), now());"
		"INSERT INTO conversation_runs (project_id, run_id, bot, chat_id) VALUES ('%1$s',"
		" 'r', 'b', '1');"
		"INSERT INTO fleet_serving (project_id, family, contract_id, process_id, role,"
		" version, started_at, revision_id, learned_at, reported_at, report_ms) VALUES"
		" ('%1$s', 'budget', 'c1', 'p', 'api', 'v', now(), 'r', now(), now(), 5000);"
		"INSERT INTO fleet_learned (project_id, family, contract_id, revision_id,"
		" process_id, learned_at) VALUES ('%1$s', 'budget', 'c1', 'r', 'p', now());"
		"INSERT INTO contract_activations (project_id, family, contract_id, revision_id,"
		" activated_at, activated_by) VALUES ('%1$s', 'budget', 'c1', 'r', now(), 's');"
		"INSERT INTO run_queues (project_id, name, concurrency, updated_at, updated_by)"
		" VALUES ('%1$s', 'q', 2, now(), 's');"
		"INSERT INTO audit_targets (project_id, target, event_id) VALUES ('%1$s',"
		" gen_random_uuid(), gen_random_uuid());"
		"INSERT INTO redaction_patterns (project_id, version, patterns, updated_at,"
		" updated_by) VALUES ('%1$s', 1, '[]', now(), 's');"
		"INSERT INTO schedules (project_id, schedule_id, name, cron, timezone, catch_up,"
		" run, next_fire_at, created_at, created_by, updated_at) VALUES ('%1$s',"
		" '00000000-0000-7000-8000-000000000001', 's', '* * * * *', 'UTC', 'skip', '{}',"
		" now(), now(), 's', now());"
		"INSERT INTO schedule_fires (project_id, schedule_id, tick_at, run_id, fired_at)"
		" VALUES ('%1$s', '00000000-0000-7000-8000-000000000001', now(),"
		" gen_random_uuid(), now());"
		"COMMIT;",
		p);
	ok(app, sql);
}

static int setup(void **state)
{
	aw_test_db_create("postgres", &db);
	owner = aw_test_pg_owner(&db);
	app = PQconnectdb(db.url);
	if (PQstatus(app) != CONNECTION_OK) {
		fprintf(stderr, "app connect: %s\n", PQerrorMessage(app));
		return -1;
	}
	ok(app, "SET search_path = awooop");
	ok(owner, "SET search_path = awooop");
	seed("iso-a");
	seed("iso-b");
	return 0;
}

static int teardown(void **state)
{
	PQfinish(app);
	PQfinish(owner);
	aw_test_db_drop(&db);
	return 0;
}

static void test_every_tenant_table_forces_rls(void **state)
{
	char t[64][64];
	int n = tenant_tables(t, 64);
	assert_true(n >= 10);
	for (int i = 0; i < n; i++) {
		char sql[512];
		snprintf(sql, sizeof sql,
			 "SELECT (c.relrowsecurity AND c.relforcerowsecurity)::int FROM pg_class c"
			 " JOIN pg_namespace n ON n.oid = c.relnamespace"
			 " WHERE n.nspname = 'awooop' AND c.relname = '%s'",
			 t[i]);
		if (scalar(owner, sql) != 1)
			fail_msg("table %s lacks ENABLE + FORCE ROW LEVEL SECURITY", t[i]);
		snprintf(sql, sizeof sql,
			 "SELECT count(*) FROM information_schema.columns WHERE table_schema ="
			 " 'awooop' AND table_name = '%s' AND column_name = 'project_id'",
			 t[i]);
		if (scalar(owner, sql) != 1)
			fail_msg("table %s has no project_id column", t[i]);
		snprintf(sql, sizeof sql,
			 "SELECT count(*) FROM pg_policies WHERE schemaname = 'awooop' AND"
			 " tablename = '%s' AND policyname = 'tenant_isolation'",
			 t[i]);
		if (scalar(owner, sql) != 1)
			fail_msg("table %s has no tenant_isolation policy", t[i]);
	}
}

static void test_project_sees_only_own_rows(void **state)
{
	char t[64][64];
	int n = tenant_tables(t, 64);
	for (int i = 0; i < n; i++) {
		char sql[512];
		snprintf(sql, sizeof sql, "SELECT count(*) FROM %s WHERE project_id = 'iso-b'",
			 t[i]);
		if (scalar(owner, sql) < 1) /* the superuser sees B's seed row */
			fail_msg("seed missing in %s", t[i]);
		ok(app, "BEGIN");
		ok(app, "SET LOCAL awooop.project_id = 'iso-a'");
		snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", t[i]);
		long all = scalar(app, sql);
		snprintf(sql, sizeof sql, "SELECT count(*) FROM %s WHERE project_id <> 'iso-a'",
			 t[i]);
		long other = scalar(app, sql);
		ok(app, "COMMIT");
		if (all < 1 || other != 0)
			fail_msg("%s as iso-a: %ld rows, %ld of other projects", t[i], all, other);
	}
}

/* A view is read with the reader's rights (security_invoker), so the
 * tables' policies apply through it: run_journal (pg 0021) shows a project
 * its own journal only, from run_steps and from the runs' last_step alike. */
static void test_views_read_as_invoker(void **state)
{
	assert_int_equal(scalar(owner, "SELECT count(*) FROM pg_class c JOIN pg_namespace n"
				       " ON n.oid = c.relnamespace WHERE n.nspname = 'awooop'"
				       " AND c.relkind = 'v' AND NOT coalesce(c.reloptions @>"
				       " ARRAY['security_invoker=true'], false)"),
			 0);
	assert_int_equal(
		scalar(owner, "SELECT count(*) FROM run_journal WHERE project_id = 'iso-b'"), 2);
	ok(app, "BEGIN");
	ok(app, "SET LOCAL awooop.project_id = 'iso-a'");
	long own = scalar(app, "SELECT count(*) FROM run_journal");
	long other = scalar(app, "SELECT count(*) FROM run_journal WHERE project_id <> 'iso-a'");
	ok(app, "COMMIT");
	assert_int_equal(own, 2); /* its run_steps row and its run's last_step */
	assert_int_equal(other, 0);
}

static void test_writing_other_project_fails(void **state)
{
	char t[64][64];
	int n = tenant_tables(t, 64);
	for (int i = 0; i < n; i++) {
		char sql[1024], st[8];
		snprintf(sql, sizeof sql,
			 "SELECT row_to_json(x)::text FROM %s x WHERE project_id = 'iso-b' LIMIT 1",
			 t[i]);
		PGresult *r = q(owner, sql);
		assert_int_equal(PQntuples(r), 1);
		char *row = PQescapeLiteral(app, PQgetvalue(r, 0, 0), strlen(PQgetvalue(r, 0, 0)));
		PQclear(r);
		ok(app, "BEGIN");
		ok(app, "SET LOCAL awooop.project_id = 'iso-a'");
		snprintf(sql, sizeof sql,
			 "INSERT INTO %s SELECT * FROM json_populate_record(NULL::%s, %s)", t[i],
			 t[i], row);
		sqlstate_of(app, sql, st);
		ok(app, "ROLLBACK");
		PQfreemem(row);
		if (strcmp(st, "42501") != 0)
			fail_msg("INSERT of a B row into %s as iso-a: SQLSTATE %s, want 42501",
				 t[i], st);
	}
	/* moving an own row to another project is refused too */
	char st[8];
	ok(app, "BEGIN");
	ok(app, "SET LOCAL awooop.project_id = 'iso-a'");
	assert_string_equal(sqlstate_of(app, "UPDATE api_keys SET project_id = 'iso-b'", st),
			    "42501");
	ok(app, "ROLLBACK");
}

static void test_no_project_sees_nothing(void **state)
{
	char t[64][64];
	int n = tenant_tables(t, 64);
	for (int i = 0; i < n; i++) {
		char sql[256];
		snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", t[i]);
		if (scalar(app, sql) != 0) /* outside any transaction */
			fail_msg("%s visible with no project set", t[i]);
		ok(app, "BEGIN");
		long in_txn = scalar(app, sql);
		ok(app, "COMMIT");
		if (in_txn != 0)
			fail_msg("%s visible in a transaction with no project", t[i]);
	}
	/* a project set with SET LOCAL ends with its transaction */
	ok(app, "BEGIN");
	ok(app, "SET LOCAL awooop.project_id = 'iso-a'");
	assert_true(scalar(app, "SELECT count(*) FROM api_keys") > 0);
	ok(app, "COMMIT");
	assert_int_equal(scalar(app, "SELECT count(*) FROM api_keys"), 0);
}

static void test_app_role_cannot_bypass(void **state)
{
	char st[8];
	assert_int_equal(scalar(owner, "SELECT (rolsuper OR rolbypassrls)::int FROM pg_roles"
				       " WHERE rolname = 'awooop_app'"),
			 0);
	assert_string_equal(
		sqlstate_of(app, "ALTER TABLE api_keys NO FORCE ROW LEVEL SECURITY", st), "42501");
	assert_string_equal(sqlstate_of(app, "ALTER TABLE api_keys DISABLE ROW LEVEL SECURITY", st),
			    "42501");
	assert_string_equal(sqlstate_of(app, "SET ROLE awooop_platform", st), "42501");
	ok(app, "BEGIN");
	ok(app, "SET LOCAL awooop.project_id = 'iso-a'");
	assert_string_equal(sqlstate_of(app, "UPDATE audit_events SET actor = 'x'", st), "42501");
	ok(app, "ROLLBACK");
	ok(app, "BEGIN");
	ok(app, "SET LOCAL awooop.project_id = 'iso-a'");
	assert_string_equal(sqlstate_of(app, "DELETE FROM audit_events", st), "42501");
	ok(app, "ROLLBACK");
	assert_string_equal(sqlstate_of(app, "DELETE FROM schema_migrations", st), "42501");

	/* migrate refuses an app role that could bypass RLS */
	aw_store *s = NULL;
	aw_error err = {0};
	aw_store_opts o = {.pool_size = 1};
	assert_int_equal(aw_store_open(db.owner_url, &o, &s, &err), AW_OK);
	assert_int_equal(aw_store_migrate(s, "postgres", &err), AW_E_MIGRATE_ROLE);
	assert_int_equal(aw_store_migrate(s, "bad-role;", &err), AW_E_CONFIG);
	assert_int_equal(aw_store_migrate(s, "awooop_app", &err), AW_OK); /* idempotent */
	aw_store_close(s);
}

static void test_platform_path_is_definer_functions(void **state)
{
	/* the functions are owned by the NOLOGIN platform role */
	assert_int_equal(scalar(owner, "SELECT count(*) FROM pg_proc p JOIN pg_roles r ON"
				       " r.oid = p.proowner WHERE p.proname LIKE 'platform_%'"
				       " AND p.prosecdef AND r.rolname = 'awooop_platform'"),
			 15); /* key lookup, project list, the four outbox relay functions,
				 the three run worker functions (claim, heartbeat, expired), the
				 reaper's closed approval windows, the run retention, the
				 queues' oldest runnable runs and a process's active pointers
				 (the alerts, 0028), the custom redaction pattern versions, the
				 due schedules (ids and times, 0032) */
	/* the platform role's delete on runs is reachable only through the
	 * retention function: the app role still cannot delete another
	 * project's run */
	ok(app, "BEGIN");
	ok(app, "SET LOCAL awooop.project_id = 'iso-a'");
	assert_int_equal(scalar(app, "WITH d AS (DELETE FROM run_steps WHERE project_id = 'iso-b'"
				     " RETURNING 1) SELECT count(*) FROM d"),
			 0);
	ok(app, "ROLLBACK");
	assert_int_equal(scalar(owner, "SELECT rolcanlogin::int FROM pg_roles WHERE rolname ="
				       " 'awooop_platform'"),
			 0);
	/* key lookup by hash works with no project set and returns one row */
	char sql[256];
	snprintf(sql, sizeof sql,
		 "SELECT count(*) FROM platform_lookup_key(md5('iso-b') || md5('xiso-b'))");
	assert_int_equal(scalar(app, sql), 1);
	assert_int_equal(scalar(app, "SELECT count(*) FROM platform_list_projects(NULL, 100)"), 2);
	/* and exposes no key hash */
	PGresult *r = q(app, "SELECT * FROM platform_lookup_key('x')");
	for (int i = 0; i < PQnfields(r); i++)
		assert_string_not_equal(PQfname(r, i), "key_hash");
	PQclear(r);
	/* the alerts' reads: ids and times only, never a revision's body or a
	 * run's workflow or input */
	const char *reads[] = {"SELECT * FROM platform_active_revisions('[\"iso-a\"]')",
			       "SELECT * FROM platform_run_queue_oldest(now(), 100)"};
	for (size_t k = 0; k < sizeof reads / sizeof reads[0]; k++) {
		r = q(app, reads[k]);
		assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
		assert_int_equal(PQnfields(r), k ? 4 : 5); /* 0031: and the depth */
		for (int i = 0; i < PQnfields(r); i++) {
			assert_string_not_equal(PQfname(r, i), "body");
			assert_string_not_equal(PQfname(r, i), "workflow");
			assert_string_not_equal(PQfname(r, i), "input");
		}
		PQclear(r);
	}
}

static void test_service_store_through_app_role(void **state)
{
	/* the real store code, as the app role: B's rows are invisible from A */
	aw_store *s = aw_test_store_open(&db);
	aw_ctx a;
	aw_test_ctx(&a, "iso-a", AW_SCOPE_PROJECT_ADMIN, "t");
	aw_txn *t = NULL;
	aw_error err = {0};
	aw_apikey *keys = NULL;
	int n = 0;
	assert_int_equal(aw_store_begin(s, &a, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(aw_store_key_list(t, &keys, &n, &err), AW_OK);
	aw_store_rollback(t);
	assert_int_equal(n, 1);
	assert_string_equal(keys[0].project_id, "iso-a");
	free(keys);
	/* a project insert for B from A's transaction is refused by the database */
	aw_project p = {.project_id = "iso-c", .created_by = "t"};
	aw_clock_now(p.created_at);
	assert_int_equal(aw_store_begin(s, &a, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_not_equal(aw_store_project_insert(t, &p, &err), AW_OK);
	aw_store_rollback(t);
	aw_store_close(s);
}

/* PostgreSQL over TLS with sslmode=verify-full and a CA (scripts/services.sh
 * starts it with ssl=on and a role that must log in with its password over
 * TLS): the store connects; a wrong password, a CA that did not sign the
 * server's certificate and a connection without TLS are refused with clear
 * errors that never print a password. */
static aw_err open_url(const char *user, const char *pw, const char *query, aw_error *err)
{
	char url[1024];
	snprintf(url, sizeof url, "postgresql://%s:%s@127.0.0.1:%s/postgres?%s", user, pw,
		 getenv("AWOOOP_TEST_PG_PORT"), query);
	aw_store *s = NULL;
	aw_err e = aw_store_open(url, NULL, &s, err);
	if (!e)
		e = aw_store_ping(s, err);
	aw_store_close(s);
	return e;
}

static void test_tls_verify_full(void **state)
{
	(void)state;
	const char *user = getenv("AWOOOP_TEST_PG_PW_USER"),
		   *pw = getenv("AWOOOP_TEST_PG_PASSWORD");
	const char *ca = getenv("AWOOOP_TEST_PG_CA");
	assert_non_null(user);
	assert_non_null(pw);
	assert_non_null(ca);
	char q[600], wrong[128];
	aw_error err = {0};
	snprintf(q, sizeof q, "sslmode=verify-full&sslrootcert=%s", ca);
	assert_int_equal(open_url(user, pw, q, &err), AW_OK);
	snprintf(wrong, sizeof wrong, "wrong-%s", pw);
	assert_int_equal(open_url(user, wrong, q, &err), AW_E_STORE_UNAVAILABLE);
	printf("wrong password: %s\n", err.msg);
	assert_non_null(strstr(err.msg, "password authentication failed"));
	assert_null(strstr(err.msg, pw));
	/* the system's CAs did not sign the test server's certificate */
	assert_int_equal(
		open_url(user, pw,
			 "sslmode=verify-full&sslrootcert=/etc/ssl/certs/ca-certificates.crt",
			 &err),
		AW_E_STORE_UNAVAILABLE);
	printf("wrong CA: %s\n", err.msg);
	assert_non_null(strstr(err.msg, "certificate verify failed"));
	assert_null(strstr(err.msg, pw));
	assert_int_equal(open_url(user, pw, "sslmode=disable", &err), AW_E_STORE_UNAVAILABLE);
	printf("without TLS: %s\n", err.msg);
	assert_non_null(strstr(err.msg, "pg_hba.conf rejects connection"));
	assert_null(strstr(err.msg, pw));
}

/* The plan the session keeps for sql (prepared by the store's driver), as
 * EXPLAIN shows it with the arguments args, in one text. */
static void cached_plan(aw_store *s, const char *sql, const char *args, char *out, size_t cap)
{
	aw_ctx ctx;
	aw_test_ctx(&ctx, "pl-a", AW_SCOPE_PROJECT_ADMIN, "t");
	aw_txn *t = NULL;
	aw_error err = {0};
	aw_rows *r = NULL;
	assert_int_equal(aw_store_begin(s, &ctx, AW_TXN_WRITE, &t, &err), AW_OK);
	aw_val v[] = {AW_TEXT(sql)};
	assert_int_equal(txn_exec(t, "SELECT name FROM pg_prepared_statements WHERE statement = $1",
				  1, v, &r, &err),
			 AW_OK);
	assert_int_equal(r->nrows, 1);
	char explain[256];
	snprintf(explain, sizeof explain, "EXPLAIN EXECUTE %s(%s)", rows_get(r, 0, 0), args);
	rows_free(r);
	assert_int_equal(txn_exec(t, explain, 0, NULL, &r, &err), AW_OK);
	size_t o = 0;
	out[0] = 0;
	for (int i = 0; i < r->nrows && o < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "%s\n", rows_get(r, i, 0));
	rows_free(r);
	assert_int_equal(aw_store_commit(t, &err), AW_OK);
}

/* The plan looks the runs up by id in an index (not by a filter). */
static int ids_in_index_cond(const char *plan)
{
	for (const char *l = plan; (l = strstr(l, "Index Cond:")); l++) {
		const char *nl = strchr(l, '\n'), *id = strstr(l, "run_id = ANY");
		if (id && (!nl || id < nl))
			return 1;
	}
	return 0;
}

/* A worker starts on a fresh database: the plan of a statement that looks
 * runs up by id, made while the table was empty, filters every run of the
 * project (or reads them all). The driver drops the connection's plans when
 * it is 1, 2, 4 ... seconds old: once the table has grown, the plan made
 * again looks the ids up in an index - with no ANALYZE, which is
 * autovacuum's and a minute or more away. */
static void test_plans_follow_the_table(void **state)
{
	(void)state;
	aw_test_db d;
	aw_test_db_create("postgres", &d);
	aw_test_raw_sql(&d, "INSERT INTO %Tprojects (project_id, created_at, created_by)"
			    " VALUES ('pl-a', now(), 't')");
	aw_store_opts o = {.pool_size = 1};
	aw_store *s = NULL;
	aw_error err = {0};
	assert_int_equal(aw_store_open(d.url, &o, &s, &err), AW_OK);
	const char *sql = "UPDATE runs SET updated_at = updated_at WHERE project_id = $1"
			  " AND run_id = ANY ($2::uuid[])";
	const char *args = "'pl-a', '{00000000-0000-7000-8000-000000000000}'";
	aw_ctx ctx;
	aw_test_ctx(&ctx, "pl-a", AW_SCOPE_PROJECT_ADMIN, "t");
	aw_txn *t = NULL;
	assert_int_equal(aw_store_begin(s, &ctx, AW_TXN_WRITE, &t, &err), AW_OK);
	aw_val gen[] = {AW_TEXT("force_generic_plan")};
	assert_int_equal(
		txn_exec(t, "SELECT set_config('plan_cache_mode', $1, false)", 1, gen, NULL, &err),
		AW_OK);
	aw_val v[] = {AW_TEXT("pl-a"), AW_TEXT("{00000000-0000-7000-8000-000000000000}")};
	assert_int_equal(txn_exec(t, sql, 2, v, NULL, &err), AW_OK);
	assert_int_equal(aw_store_commit(t, &err), AW_OK);
	char plan[2048];
	cached_plan(s, sql, args, plan, sizeof plan);
	printf("plan over the empty table:\n%s", plan);
	assert_false(ids_in_index_cond(plan)); /* the premise */
	aw_test_raw_sql(&d,
			"INSERT INTO %Truns (project_id, run_id, state, mode, workflow,"
			" trace_id, run_after, created_at, updated_at) SELECT 'pl-a',"
			" gen_random_uuid(), 'succeeded', 'live', '[]', 't', now(), now(), now()"
			" FROM generate_series(1, 20000)");
	/* made again within the next doubling of the connection's age */
	int good = 0;
	for (int i = 0; i < 40 && !good; i++) {
		struct timespec ms = {0, 250000000};
		nanosleep(&ms, NULL);
		cached_plan(s, sql, args, plan, sizeof plan);
		good = ids_in_index_cond(plan);
	}
	printf("plan over 20,000 runs:\n%s", plan);
	assert_true(good);
	aw_store_close(s);
	aw_test_db_drop(&d);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_tenant_table_forces_rls),
		cmocka_unit_test(test_project_sees_only_own_rows),
		cmocka_unit_test(test_views_read_as_invoker),
		cmocka_unit_test(test_writing_other_project_fails),
		cmocka_unit_test(test_no_project_sees_nothing),
		cmocka_unit_test(test_app_role_cannot_bypass),
		cmocka_unit_test(test_platform_path_is_definer_functions),
		cmocka_unit_test(test_service_store_through_app_role),
		cmocka_unit_test(test_tls_verify_full),
		cmocka_unit_test(test_plans_follow_the_table),
	};
	return AW_TEST_MAIN_PLAIN("postgres isolation", tests, setup, teardown);
}
