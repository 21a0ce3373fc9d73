/*
 * test_agent.c - the agent step's parts that need no model or tool server,
 * on one store backend (argv[1]): its checks at submission (every refusal
 * with its pointer), the sub-step journal (run_calls: upsert, per-step
 * reads, tenant isolation), a parked call approved by the decision's store
 * call and nothing else, the progress read from the journal (turn, tool,
 * max_turns) and the run view's sub-calls. The loop itself runs against the
 * fakes in tests/http/agent_test.sh and agent_drill.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "awooop/agent.h"
#include "awooop/clock.h"
#include "awooop/run.h"
#include "awooop/store/agent.h"
#include "support.h"

#define S (aw_fx.s)

static void expect_refused(const char *args, const char *pointer)
{
	char body[2048];
	snprintf(body, sizeof body, "{\"workflow\":[{\"kind\":\"agent\",\"args\":%s}]}", args);
	aw_run_request req;
	aw_error err = {0};
	aw_err e = aw_run_request_decode(body, strlen(body), &req, &err);
	if (e != AW_E_RUN_WORKFLOW || strcmp(err.where, pointer) != 0)
		fail_msg("%s: got %s at '%s' (%s), want E-RUN-003 at %s", args, aw_err_code(e),
			 err.where, err.msg, pointer);
	if (e == AW_OK)
		aw_run_request_free(&req);
}

static void test_validation(void **state)
{
	(void)state;
	expect_refused("{\"model\":\"m\",\"input\":\"x\",\"tool\":[]}", "/workflow/0/args/tool");
	expect_refused("{\"input\":\"x\"}", "/workflow/0/args/model");
	expect_refused("{\"model\":\"m\"}", "/workflow/0/args/input");
	expect_refused("{\"model\":\"m\",\"input\":\"x\",\"tools\":\"t\"}",
		       "/workflow/0/args/tools");
	expect_refused("{\"model\":\"m\",\"input\":\"x\",\"tools\":[\"a\",\"b c\"]}",
		       "/workflow/0/args/tools/1");
	expect_refused("{\"model\":\"m\",\"input\":\"x\",\"tools\":[\"a\",\"a\"]}",
		       "/workflow/0/args/tools/1");
	expect_refused("{\"model\":\"m\",\"input\":\"x\",\"max_turns\":51}",
		       "/workflow/0/args/max_turns");
	expect_refused("{\"model\":\"m\",\"input\":\"x\",\"system\":7}", "/workflow/0/args/system");
	expect_refused("{\"model\":\"m\",\"input\":\"x\",\"max_tokens\":-1}",
		       "/workflow/0/args/max_tokens");
	expect_refused("{\"model\":\"m\",\"input\":\"x\",\"response_format\":{\"type\":\"nope\"}}",
		       "/workflow/0/args/response_format/type");
	/* accepted: references where values come from the input */
	static const char ok[] =
		"{\"input\":{\"q\":\"hi\",\"n\":3},\"workflow\":[{\"kind\":\"agent\",\"args\":{"
		"\"model\":\"m\",\"input\":{\"$ref\":\"/input/q\"},\"max_turns\":{\"$ref\":"
		"\"/input/n\"},\"tools\":[\"lookup__web\"]}}]}";
	aw_run_request req;
	aw_error err = {0};
	assert_int_equal(aw_run_request_decode(ok, strlen(ok), &req, &err), AW_OK);
	aw_run_request_free(&req);
}

static void put(const aw_ctx *ctx, const char *run, int step, int seq, const char *kind,
		const char *name, const char *state, const char *result)
{
	aw_run_call c = {0};
	snprintf(c.run_id, sizeof c.run_id, "%s", run);
	c.step_no = step;
	c.seq = seq;
	snprintf(c.kind, sizeof c.kind, "%s", kind);
	snprintf(c.name, sizeof c.name, "%s", name);
	snprintf(c.state, sizeof c.state, "%s", state);
	aw_clock_now(c.created_at);
	if (!strcmp(state, "done"))
		aw_clock_now(c.finished_at);
	c.result = (char *)result;
	aw_txn *t = NULL;
	aw_error err = {0};
	assert_int_equal(aw_store_begin(S, ctx, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_equal(aw_store_run_call_put(t, &c, NULL, 0, &err), AW_OK);
	assert_int_equal(aw_store_commit(t, &err), AW_OK);
}

static void progress(const aw_ctx *ctx, const char *run, aw_run_agent_status *st)
{
	aw_error err = {0};
	assert_int_equal(aw_run_agent_progress(S, ctx, run, st, &err), AW_OK);
}

/* Submits body in ctx's project; its run id in id. */
static void submit(const aw_ctx *ctx, const char *body, char *id)
{
	aw_run_request req;
	aw_error err = {0};
	assert_int_equal(aw_run_request_decode(body, strlen(body), &req, &err), AW_OK);
	aw_run run;
	int replayed = 0;
	assert_int_equal(aw_run_submit(S, ctx, &req, NULL, &run, &replayed, &err), AW_OK);
	aw_run_request_free(&req);
	snprintf(id, AW_UUID_STR_LEN + 1, "%s", run.run_id);
	aw_run_free(&run);
}

static void test_journal_progress_view(void **state)
{
	(void)state;
	aw_ctx a, b;
	aw_test_ctx(&a, "ag-a", AW_SCOPE_OPERATOR, "op");
	aw_test_ctx(&b, "ag-b", AW_SCOPE_OPERATOR, "op");
	char id[AW_UUID_STR_LEN + 1];
	submit(&a,
	       "{\"workflow\":[{\"kind\":\"noop\"},{\"kind\":\"agent\",\"args\":{\"model\":\"m\","
	       "\"input\":\"x\",\"max_turns\":6,\"tools\":[\"lookup__web\"]}}]}",
	       id);
	aw_error err = {0};

	aw_run_agent_status st;
	progress(&a, id, &st);
	assert_int_equal(st.step_no, 0); /* no call yet */
	assert_int_equal(st.turn, 0);

	put(&a, id, 2, 1, "model", "m", "done",
	    "{\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
	    "\"function\":{\"name\":\"lookup__web\",\"arguments\":\"{}\"}}]}");
	put(&a, id, 2, 2, "tool", "lookup__web", "started", NULL);
	progress(&a, id, &st);
	assert_int_equal(st.step_no, 2);
	assert_int_equal(st.turn, 1);
	assert_int_equal(st.max_turns, 6);
	assert_int_equal(st.tool_calls, 1);
	assert_string_equal(st.tool, "lookup__web");
	assert_int_equal(st.calling, 1);
	char line[200];
	aw_run_agent_progress_text(&st, line, sizeof line);
	assert_string_equal(line, "calling lookup__web, turn 1 of 6");
	/* the upsert: the same call, done */
	put(&a, id, 2, 2, "tool", "lookup__web", "done",
	    "{\"tool_call_id\":\"c1\",\"content\":\"x\"}");
	put(&a, id, 2, 3, "model", "m", "started", NULL);
	progress(&a, id, &st);
	assert_int_equal(st.turn, 2);
	assert_int_equal(st.calling, 0);
	aw_run_agent_progress_text(&st, line, sizeof line);
	assert_string_equal(line, "thinking, turn 2 of 6");
	assert_string_equal(st.tool, "lookup__web"); /* the last called */

	/* a parked call: approved by the decision's store call, a done one not */
	put(&a, id, 2, 3, "model", "m", "done", "{\"content\":null}");
	put(&a, id, 2, 4, "tool", "lookup__web", "parked", NULL);
	progress(&a, id, &st);
	assert_int_equal(st.waiting, 1);
	aw_run_agent_progress_text(&st, line, sizeof line);
	assert_string_equal(line, "waiting for approval of lookup__web, turn 2 of 6");
	aw_txn *t = NULL;
	int moved = -1;
	assert_int_equal(aw_store_begin(S, &a, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_equal(aw_store_run_call_approve(t, id, 2, 2, &moved, &err), AW_OK);
	assert_int_equal(moved, 0);
	assert_int_equal(aw_store_run_call_approve(t, id, 2, 4, &moved, &err), AW_OK);
	assert_int_equal(moved, 1);
	assert_int_equal(aw_store_commit(t, &err), AW_OK);
	/* another project sees none of it */
	assert_int_equal(aw_store_begin(S, &b, AW_TXN_WRITE, &t, &err), AW_OK);
	aw_run_call *rows = NULL;
	int n = -1;
	assert_int_equal(aw_store_run_calls(t, id, 0, &rows, &n, &err), AW_OK);
	assert_int_equal(n, 0);
	aw_run_calls_free(rows, n);
	assert_int_equal(aw_store_run_call_approve(t, id, 2, 4, &moved, &err), AW_OK);
	assert_int_equal(moved, 0);
	aw_store_rollback(t);
	assert_int_equal(aw_run_agent_progress(S, &b, id, &st, &err), AW_E_RUN_NOT_FOUND);
	assert_int_equal(aw_store_begin(S, &a, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(aw_store_run_calls(t, id, 2, &rows, &n, &err), AW_OK);
	aw_store_rollback(t);
	assert_int_equal(n, 4);
	assert_string_equal(rows[3].state, "approved");
	assert_non_null(strstr(rows[1].result, "c1")); /* jsonb may respace it */
	aw_run_calls_free(rows, n);

	/* the view: the agent step's sub-calls, numbered by turn */
	aw_run_step js = {0};
	snprintf(js.run_id, sizeof js.run_id, "%s", id);
	js.step_no = 2;
	snprintf(js.kind, sizeof js.kind, "agent");
	snprintf(js.state, sizeof js.state, "started");
	aw_run_step_key(id, 2, js.idem_key, sizeof js.idem_key);
	js.attempt = 1;
	assert_int_equal(aw_store_begin(S, &a, AW_TXN_WRITE, &t, &err), AW_OK);
	assert_int_equal(aw_store_run_steps_put(t, &js, 1, &err), AW_OK);
	assert_int_equal(aw_store_commit(t, &err), AW_OK);
	json_t *v = NULL;
	assert_int_equal(aw_run_view(S, &a, id, &v, &err), AW_OK);
	json_t *calls = json_object_get(json_array_get(json_object_get(v, "steps"), 0), "calls");
	assert_int_equal(json_array_size(calls), 4);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(calls, 3), "turn")), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(calls, 1), "name")),
			    "lookup__web");
	assert_string_equal(json_string_value(json_array_get(
				    json_object_get(json_array_get(calls, 0), "tool_calls"), 0)),
			    "lookup__web");
	assert_non_null(json_object_get(json_array_get(calls, 1), "finished_at"));
	json_decref(v);
}

/* The journal is fenced by the run's claim: the worker holding its lease in
 * that attempt writes; another worker, an earlier claim of the same worker,
 * or another project's, writes nothing. */
static void test_journal_fenced(void **state)
{
	(void)state;
	aw_ctx a, b;
	aw_test_ctx(&a, "ag-a", AW_SCOPE_OPERATOR, "op");
	aw_test_ctx(&b, "ag-b", AW_SCOPE_OPERATOR, "op");
	char id[AW_UUID_STR_LEN + 1], sql[200];
	submit(&a,
	       "{\"workflow\":[{\"kind\":\"agent\",\"args\":{\"model\":\"m\",\"input\":\"x\"}}]}",
	       id);
	aw_error err = {0};
	snprintf(sql, sizeof sql,
		 "UPDATE %%Truns SET lease_owner = 'w1', attempts = 2 WHERE run_id = '%s'", id);
	aw_test_raw_sql(&aw_fx.db, sql);
	aw_run_call c = {0};
	snprintf(c.run_id, sizeof c.run_id, "%s", id);
	c.step_no = 1;
	c.seq = 1;
	snprintf(c.kind, sizeof c.kind, "model");
	snprintf(c.name, sizeof c.name, "m");
	snprintf(c.state, sizeof c.state, "started");
	aw_clock_now(c.created_at);
	struct {
		const aw_ctx *ctx;
		const char *holder, *state;
		int attempt;
		aw_err want;
	} w[] = {{&a, "w1", "started", 2, AW_OK},
		 {&a, "w2", "done", 2, AW_E_RUN_STATE}, /* lost its lease: the row stays */
		 {&a, "w1", "done", 1, AW_E_RUN_STATE}, /* the same worker's earlier claim */
		 {&a, "", "done", 2, AW_E_RUN_STATE},
		 {&b, "w1", "done", 2, AW_E_RUN_STATE}}; /* not its run */
	for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
		snprintf(c.state, sizeof c.state, "%s", w[i].state);
		aw_txn *t = NULL;
		assert_int_equal(aw_store_begin(S, w[i].ctx, AW_TXN_WRITE, &t, &err), AW_OK);
		assert_int_equal(aw_store_run_call_put(t, &c, w[i].holder, w[i].attempt, &err),
				 w[i].want);
		if (w[i].want)
			aw_store_rollback(t);
		else
			assert_int_equal(aw_store_commit(t, &err), AW_OK);
	}
	assert_non_null(strstr(err.msg, "not journaled"));
	aw_txn *t = NULL;
	aw_run_call *rows = NULL;
	int n = -1;
	assert_int_equal(aw_store_begin(S, &a, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(aw_store_run_calls(t, id, 1, &rows, &n, &err), AW_OK);
	aw_store_rollback(t);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].state, "started");
	aw_run_calls_free(rows, n);
}

static int setup(void **state)
{
	(void)state;
	static const char *const projects[] = {"ag-a", "ag-b", NULL};
	if (aw_test_store_up(projects))
		return -1;
	/* the kind's checks need no gateway */
	return aw_agent_register_executor(NULL, NULL, NULL) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	aw_test_store_down();
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_validation),
		cmocka_unit_test(test_journal_progress_view),
		cmocka_unit_test(test_journal_fenced),
	};
	return AW_TEST_MAIN("agent", tests, setup, teardown);
}
