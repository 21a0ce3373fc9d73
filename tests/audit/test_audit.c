/*
 * test_audit.c - the audit hash chain on a real store (argv[1]: sqlite |
 * postgres): appends from concurrent writers form one unbroken chain, payloads
 * are redacted, and deleting, altering, reordering or truncating records
 * directly in the database is reported by aw_audit_verify at the right record.
 * The list's filters (actions, time, principal, target, an agent call's
 * outcome and run, newest first with a cursor) select the same rows on both.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "awooop/audit.h"
#include "awooop/clock.h"
#include "awooop/tenancy.h"
#include "awooop/uuid.h"
#include "support.h"

#define S (aw_fx.s)

static int setup(void **state)
{
	if (aw_test_store_up(NULL))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	aw_test_store_down();
	return 0;
}

static void project(const char *id)
{
	aw_ctx admin;
	aw_test_ctx(&admin, NULL, AW_SCOPE_PLATFORM_ADMIN, "root");
	aw_error err = {0};
	assert_int_equal(aw_project_create(S, &admin, id, NULL, &err), AW_OK);
}

static void append(const char *project, const char *action, int i)
{
	aw_ctx c;
	aw_test_ctx(&c, project, AW_SCOPE_OPERATOR, "writer");
	aw_txn *t = NULL;
	aw_error err = {0};
	json_t *p = json_pack("{s:i}", "i", i);
	for (int attempt = 0;; attempt++) {
		assert_int_equal(aw_store_begin(S, &c, AW_TXN_WRITE, &t, &err), AW_OK);
		aw_err e = aw_audit_record(t, &c, action, "target", p, &err);
		if (!e)
			e = aw_store_commit(t, &err);
		else
			aw_store_rollback(t);
		if (!e)
			break;
		if (e != AW_E_STORE_BUSY || attempt > 20)
			fail_msg("append: %s %s", aw_err_code(e), err.msg);
	}
	json_decref(p);
}

static void verify(const char *project, aw_audit_report *rep)
{
	aw_ctx c;
	aw_test_ctx(&c, project, AW_SCOPE_OPERATOR, "auditor");
	aw_error err = {0};
	aw_err e = aw_audit_verify(S, &c, rep, &err);
	if (e)
		fail_msg("verify: %s %s", aw_err_code(e), err.msg);
}

static void *writer(void *arg)
{
	for (int i = 0; i < 25; i++)
		append("au-conc", "test.write", (int)(long)arg * 100 + i);
	return NULL;
}

static void test_concurrent_appends_form_one_chain(void **state)
{
	project("au-conc");
	pthread_t th[8];
	for (long i = 0; i < 8; i++)
		pthread_create(&th[i], NULL, writer, (void *)i);
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	aw_audit_report rep;
	verify("au-conc", &rep);
	if (!rep.ok)
		fail_msg("chain broken: %s", rep.reason);
	assert_int_equal(rep.records, 8 * 25 + 1); /* + project.create */
}

static void test_payload_is_redacted(void **state)
{
	project("au-red");
	aw_ctx c;
	aw_test_ctx(&c, "au-red", AW_SCOPE_OPERATOR, "writer");
	aw_txn *t = NULL;
	aw_error err = {0};
	json_t *p = json_pack("{s:s, s:s, s:{s:s}}", "password", "hunter2", "note",
			      "key AKIAIOSFODNN7EXAMPLE", "nested", "mail", "jane@example.com");
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_equal(aw_audit_record(t, &c, "test.redact", "user jane@example.com", p, &err),
			 AW_OK);
	assert_int_equal(aw_store_commit(t, &err), AW_OK);
	json_decref(p);
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_READ, &t, &err), AW_OK);
	aw_audit_row *rows = NULL;
	int n = 0;
	assert_int_equal(aw_store_audit_list(t, 0, "test.redact", "", 10, &rows, &n, &err), AW_OK);
	aw_store_rollback(t);
	assert_int_equal(n, 1);
	assert_null(strstr(rows[0].payload, "hunter2"));
	assert_null(strstr(rows[0].payload, "AKIAIOSFODNN7EXAMPLE"));
	assert_null(strstr(rows[0].payload, "jane@example.com"));
	assert_null(strstr(rows[0].target, "jane@example.com"));
	assert_string_equal(rows[0].actor, "writer");
	assert_string_equal(rows[0].trace_id, c.trace.trace_id);
	aw_audit_rows_free(rows, n);
}

/* One agent-call-like record: action, principal, target, and an envelope
 * with outcome and run_id (NULL: absent). */
static void call_record(const char *project, const char *action, const char *principal,
			const char *target, const char *outcome, const char *run_id)
{
	aw_ctx c;
	aw_test_ctx(&c, project, AW_SCOPE_WORKER, principal);
	aw_txn *t = NULL;
	aw_error err = {0};
	json_t *p = json_pack("{s:s, s:f}", "upstream", "u1", "latency_ms", 1.5);
	if (outcome)
		json_object_set_new(p, "outcome", json_string(outcome));
	if (run_id)
		json_object_set_new(p, "run_id", json_string(run_id));
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_equal(aw_audit_record(t, &c, action, target, p, &err), AW_OK);
	assert_int_equal(aw_store_commit(t, &err), AW_OK);
	json_decref(p);
}

/* The rows q selects in project, as "seq:action:actor" joined by spaces. */
static char *query(const char *project, const aw_audit_query *q, int limit)
{
	aw_ctx c;
	aw_test_ctx(&c, project, AW_SCOPE_OPERATOR, "auditor");
	aw_txn *t = NULL;
	aw_error err = {0};
	aw_audit_row *rows = NULL;
	int n = 0;
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_READ, &t, &err), AW_OK);
	aw_err e = aw_store_audit_query(t, q, limit, &rows, &n, &err);
	aw_store_rollback(t);
	if (e)
		fail_msg("query: %s %s", aw_err_code(e), err.msg);
	static char out[2048];
	out[0] = 0;
	for (int i = 0; i < n; i++)
		snprintf(out + strlen(out), sizeof out - strlen(out), "%s%lld:%s:%s", i ? " " : "",
			 (long long)rows[i].seq, rows[i].action, rows[i].actor);
	aw_audit_rows_free(rows, n);
	return out;
}

static void test_query_filters(void **state)
{
	const char *run = "01a24357-5253-77eb-a4e0-280acc324358";
	project("au-q");
	project("au-q2");
	/* seq 1 is project.create */
	call_record("au-q", "llm.call", "alice", "chat", "ok", run);	      /* 2 */
	call_record("au-q", "mcp.call", "bob", "echo__web", "refused", NULL); /* 3 */
	call_record("au-q", "mcp.relay", "alice", "prompts/get", "ok", NULL); /* 4 */
	call_record("au-q", "llm.call", "bob", "chat", "failed", NULL);	      /* 5 */
	call_record("au-q", "run.submit", "alice", run, NULL, NULL);	      /* 6 */
	call_record("au-q2", "llm.call", "alice", "chat", "ok", run);	      /* another tenant's */
	char since[AW_TS_LEN + 1]; /* timestamps have milliseconds: a gap around it */
	struct timespec gap = {0, 5 * 1000 * 1000};
	nanosleep(&gap, NULL);
	aw_clock_now(since);
	nanosleep(&gap, NULL);
	call_record("au-q", "llm.call", "carol", "chat", "ok", run); /* 7 */

	aw_audit_query all_calls = {.actions = {"llm.call", "mcp.call", "mcp.relay"},
				    .nactions = 3};
	assert_string_equal(query("au-q", &all_calls, 100),
			    "2:llm.call:alice 3:mcp.call:bob 4:mcp.relay:alice 5:llm.call:bob "
			    "7:llm.call:carol");
	aw_audit_query q = all_calls;
	q.newest_first = 1; /* newest first, two at a time */
	assert_string_equal(query("au-q", &q, 2), "7:llm.call:carol 5:llm.call:bob");
	q.cursor = 5;
	assert_string_equal(query("au-q", &q, 2), "4:mcp.relay:alice 3:mcp.call:bob");
	q.cursor = 3;
	assert_string_equal(query("au-q", &q, 2), "2:llm.call:alice");
	q = all_calls;
	q.outcome = "ok";
	assert_string_equal(query("au-q", &q, 100),
			    "2:llm.call:alice 4:mcp.relay:alice 7:llm.call:carol");
	q.actor = "alice";
	assert_string_equal(query("au-q", &q, 100), "2:llm.call:alice 4:mcp.relay:alice");
	q = all_calls;
	q.outcome = "!ok"; /* the calls that did not succeed */
	assert_string_equal(query("au-q", &q, 100), "3:mcp.call:bob 5:llm.call:bob");
	q = (aw_audit_query){.outcome = "!ok"}; /* records without an outcome are no calls */
	assert_string_equal(query("au-q", &q, 100), "3:mcp.call:bob 5:llm.call:bob");
	q = (aw_audit_query){.run_id = run}; /* the calls a run made (payload.run_id) */
	assert_string_equal(query("au-q", &q, 100), "2:llm.call:alice 7:llm.call:carol");
	q = (aw_audit_query){.target = "chat", .outcome = "failed"};
	assert_string_equal(query("au-q", &q, 100), "5:llm.call:bob");
	q = (aw_audit_query){.since = since};
	assert_string_equal(query("au-q", &q, 100), "7:llm.call:carol");
	q = (aw_audit_query){.until = since, .actions = {"run.submit"}, .nactions = 1};
	assert_string_equal(query("au-q", &q, 100), "6:run.submit:alice");
	q = (aw_audit_query){.actions = {"nothing.here"}, .nactions = 1};
	assert_string_equal(query("au-q", &q, 100), "");
	/* the other tenant's trail: its own record only */
	assert_string_equal(query("au-q2", &all_calls, 100), "2:llm.call:alice");
	q = (aw_audit_query){.nactions = AW_AUDIT_ACTIONS_MAX + 1};
	aw_ctx c;
	aw_test_ctx(&c, "au-q", AW_SCOPE_OPERATOR, "auditor");
	aw_txn *t = NULL;
	aw_error err = {0};
	aw_audit_row *rows = NULL;
	int n = 0;
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(aw_store_audit_query(t, &q, 10, &rows, &n, &err), AW_E_REQ_INVALID);
	aw_store_rollback(t);
}

/* A batch of records written for several principals (a recorder's batch of
 * calls of one project made with different keys): each record is its own
 * item's actor, or the context's when the item names none; the chain holds. */
static void test_many_actors(void **state)
{
	(void)state;
	project("au-act");
	aw_ctx c;
	aw_test_ctx(&c, "au-act", AW_SCOPE_OPERATOR, "first-key");
	aw_error err = {0};
	char ids[3][AW_UUID_STR_LEN + 1];
	const char *actors[3] = {"first-key", "second-key", NULL};
	aw_audit_item it[3];
	for (int i = 0; i < 3; i++) {
		aw_uuid7_str(ids[i]);
		it[i] = (aw_audit_item){"test.call", ids[i], NULL, NULL, actors[i]};
	}
	aw_txn *t = NULL;
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_equal(aw_audit_record_many(t, &c, it, 3, &err), AW_OK);
	assert_int_equal(aw_store_commit(t, &err), AW_OK);
	aw_audit_report rep;
	verify("au-act", &rep);
	assert_true(rep.ok);
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_READ, &t, &err), AW_OK);
	for (int i = 0; i < 3; i++) {
		aw_audit_row *rows = NULL;
		int n = 0;
		assert_int_equal(aw_store_audit_by_target(t, ids[i], 10, &rows, &n, &err), AW_OK);
		assert_int_equal(n, 1);
		assert_string_equal(rows[0].actor, actors[i] ? actors[i] : "first-key");
		aw_audit_rows_free(rows, n);
	}
	aw_store_rollback(t);
}

/* One record about several targets: one row of the chain, found from each
 * target (with the records about that target alone, in chain order), each
 * item redacted like any payload (equal payloads redacted once, alike), its
 * own target and trace id over any the payload had; a target that is not an
 * id is refused and nothing is written. */
static void test_group_record(void **state)
{
	project("au-grp");
	aw_ctx c;
	aw_test_ctx(&c, "au-grp", AW_SCOPE_OPERATOR, "writer");
	aw_error err = {0};
	char ids[3][AW_UUID_STR_LEN + 1];
	json_t *p[3];
	aw_audit_item it[3];
	for (int i = 0; i < 3; i++) { /* the third item's payload equals the second's */
		aw_uuid7_str(ids[i]);
		p[i] = json_pack("{s:i, s:s}", "i", i < 2 ? i : 1, "password", "hunter2");
		if (i == 0) /* the item's own target wins, once */
			json_object_set_new(p[i], "target", json_string("spoof"));
		it[i] = (aw_audit_item){"test.group", ids[i], NULL, p[i], NULL};
	}
	aw_txn *t = NULL;
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_equal(aw_audit_record(t, &c, "test.alone", ids[1], NULL, &err), AW_OK);
	assert_int_equal(aw_audit_record_group(t, &c, "test.group", it, 3, &err), AW_OK);
	assert_int_equal(aw_store_commit(t, &err), AW_OK);
	it[2].target = "not an id";
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_equal(aw_audit_record_group(t, &c, "test.group", it, 3, &err), AW_E_INTERNAL);
	aw_store_rollback(t);
	for (int i = 0; i < 3; i++)
		json_decref(p[i]);

	aw_audit_report rep;
	verify("au-grp", &rep);
	assert_true(rep.ok);
	assert_int_equal(rep.records, 3); /* project.create, test.alone, the group */
	assert_int_equal(aw_store_begin(S, &c, AW_TXN_READ, &t, &err), AW_OK);
	for (int i = 0; i < 3; i++) {
		aw_audit_row *rows = NULL;
		int n = 0;
		assert_int_equal(aw_store_audit_by_target(t, ids[i], 10, &rows, &n, &err), AW_OK);
		assert_int_equal(n, i == 1 ? 2 : 1);
		const aw_audit_row *g = &rows[n - 1];
		assert_string_equal(g->action, "test.group");
		assert_string_equal(g->target, "");
		if (i == 1)
			assert_true(rows[0].seq < g->seq);
		json_t *doc = json_loads(g->payload, JSON_REJECT_DUPLICATES, NULL);
		assert_non_null(doc);
		json_t *item = json_array_get(json_object_get(doc, "items"), (size_t)i);
		assert_int_equal(json_array_size(json_object_get(doc, "items")), 3);
		assert_string_equal(json_string_value(json_object_get(item, "target")), ids[i]);
		assert_string_equal(json_string_value(json_object_get(item, "trace_id")),
				    c.trace.trace_id);
		assert_int_equal(json_integer_value(json_object_get(item, "i")), i < 2 ? i : 1);
		assert_string_equal(
			json_string_value(json_object_get(item, "password")),
			json_string_value(json_object_get(
				json_array_get(json_object_get(doc, "items"), 0), "password")));
		assert_null(strstr(g->payload, "hunter2"));
		json_decref(doc);
		aw_audit_rows_free(rows, n);
	}
	aw_store_rollback(t);
}

static void fresh_chain(const char *p, int records)
{
	project(p);
	for (int i = 0; i < records - 1; i++)
		append(p, "test.step", i);
	aw_audit_report rep;
	verify(p, &rep);
	assert_true(rep.ok);
	assert_int_equal(rep.records, records);
}

static void expect_break(const char *p, int64_t seq, const char *word)
{
	aw_audit_report rep;
	verify(p, &rep);
	if (rep.ok || rep.break_seq != seq || !strstr(rep.reason, word))
		fail_msg("want a break at %lld (%s), got ok=%d seq=%lld: %s", (long long)seq, word,
			 rep.ok, (long long)rep.break_seq, rep.reason);
}

/* SQL against the audit table, as someone with direct database access. */
static void rawf(const char *fmt, const char *project)
{
	char sql[1024];
	snprintf(sql, sizeof sql, fmt, project, project, project);
	aw_test_raw_sql(&aw_fx.db, sql);
}

static void test_tamper_delete(void **state)
{
	fresh_chain("au-del", 6);
	rawf("DELETE FROM %%Taudit_events WHERE project_id = '%s' AND seq = 3", "au-del");
	expect_break("au-del", 3, "deleted");
}

static void test_tamper_alter(void **state)
{
	fresh_chain("au-alt", 6);
	rawf("UPDATE %%Taudit_events SET payload = '{\"i\":999}' WHERE project_id = '%s' AND seq = 4",
	     "au-alt");
	expect_break("au-alt", 4, "altered");
	/* altering the actor alone is caught too */
	fresh_chain("au-alt2", 3);
	rawf("UPDATE %%Taudit_events SET actor = 'someone-else' WHERE project_id = '%s' AND seq = 2",
	     "au-alt2");
	expect_break("au-alt2", 2, "altered");
}

static void test_tamper_reorder(void **state)
{
	fresh_chain("au-ord", 6);
	rawf("UPDATE %%Taudit_events SET seq = -2 WHERE project_id = '%s' AND seq = 2;"
	     "UPDATE %%Taudit_events SET seq = 2 WHERE project_id = '%s' AND seq = 3;"
	     "UPDATE %%Taudit_events SET seq = 3 WHERE project_id = '%s' AND seq = -2",
	     "au-ord");
	expect_break("au-ord", 2, "reordered");
}

static void test_tamper_truncate_tail(void **state)
{
	fresh_chain("au-tail", 5);
	rawf("DELETE FROM %%Taudit_events WHERE project_id = '%s' AND seq = 5", "au-tail");
	expect_break("au-tail", 5, "deleted from the end");
}

static void test_other_projects_unaffected(void **state)
{
	/* tampering with one tenant's trail leaves every other chain verifiable */
	aw_audit_report rep;
	verify("au-conc", &rep);
	assert_true(rep.ok);
	verify("au-red", &rep);
	assert_true(rep.ok);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_appends_form_one_chain),
		cmocka_unit_test(test_payload_is_redacted),
		cmocka_unit_test(test_many_actors),
		cmocka_unit_test(test_group_record),
		cmocka_unit_test(test_query_filters),
		cmocka_unit_test(test_tamper_delete),
		cmocka_unit_test(test_tamper_alter),
		cmocka_unit_test(test_tamper_reorder),
		cmocka_unit_test(test_tamper_truncate_tail),
		cmocka_unit_test(test_other_projects_unaffected),
	};
	return AW_TEST_MAIN("audit", tests, setup, teardown);
}
