/*
 * test_llm.c - the LLM gateway on a real store (argv[1]: sqlite | postgres),
 * a real Redis (the emergency cap) and fake upstreams (tests/support/
 * fake_llm.c) started as processes on loopback:
 *  - routing by the active policy_routing revision; a new activation changes
 *    the next call's route; a revoked policy fails closed (E-LLM-001);
 *  - failover order; no failover once a byte reached the client (E-LLM-004);
 *  - the circuit breaker opens, skips, half-opens and closes;
 *  - an ollama_topology activation resets the Ollama pools (new connection);
 *  - the emergency daily cap is exact under 32 concurrent callers (Redis)
 *    and in process, and starts afresh on the next UTC day;
 *  - schema retries: invalid twice then valid = 3 attempts; always invalid =
 *    E-SCHEMA-001 after the retries;
 *  - a credential canary reaches the upstream and nothing else (answers,
 *    errors, audit records, log lines);
 *  - the trace continues to the upstream; the `llm` run step.
 */
#include <curl/curl.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "awooop/audit.h"
#include "awooop/budget.h"
#include "awooop/buf.h"
#include "awooop/bus.h"
#include "awooop/clock.h"
#include "awooop/contract.h"
#include "awooop/egress.h"
#include "awooop/llm.h"
#include "awooop/llm_wire.h"
#include "awooop/metrics.h"
#include "awooop/run.h"
#include "awooop/executor.h"
#include "awooop/tenancy.h"
#include "budget/budget_hooks.h"
#include "provider/provider_hooks.h"
#include "support.h"

#define KEYS "k1:1111111111111111111111111111111111111111111111111111111111111111"
#define CANARY "sk-canary-7f3e9a1b2c4d5e6f708192a3b4c5d6e7"
#define S (aw_fx.s)
/* The gateway's bound of the prompt [{"role":"user","content":"hello"}]: 8
 * for the template + "user" + "hello"; the fake bills it 9 (3 + 3 + 1 + 2). */
#define HELLO_BOUND 17
#define HELLO_BILLED 9

static aw_keyring *KR;
static aw_contracts *C;
static aw_test_redis R;

/* ------------------------------------------------------------ fakes */

typedef struct {
	pid_t pid;
	int port;
	char url[64];
} fake;

static fake A, B, G, O1, O2; /* openai, anthropic, gemini (checks the key), 2 ollama hosts */
static int dead_port;

static void fake_start(fake *f, const char *name, int check_key)
{
	int fd[2];
	if (pipe(fd))
		abort();
	f->pid = fork();
	if (f->pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		if (check_key)
			execl(FAKE_LLM_BIN, "fake_llm", "--name", name, "--expect-key-env",
			      "AW_TEST_CANARY_KEY", (char *)NULL);
		else
			execl(FAKE_LLM_BIN, "fake_llm", "--name", name, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	FILE *in = fdopen(fd[0], "r");
	if (!in || fscanf(in, "port %d", &f->port) != 1) {
		fprintf(stderr, "fake_llm %s did not start\n", name);
		abort();
	}
	fclose(in);
	snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d", f->port);
}

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
	aw_buf_add(ud, p, sz * n);
	return sz * n;
}

static json_t *fake_http(const fake *f, const char *method, const char *path, const char *body)
{
	char url[128];
	snprintf(url, sizeof url, "%s%s", f->url, path);
	aw_buf b = AW_BUF_INIT(1 << 20);
	CURL *h = curl_easy_init();
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	if (body)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_perform(h);
	curl_easy_cleanup(h);
	json_t *j = json_loads(aw_buf_str(&b), 0, NULL);
	aw_buf_free(&b);
	return j;
}

static long stat_of(const fake *f, const char *k)
{
	json_t *j = fake_http(f, "GET", "/stats", NULL);
	long v = (long)json_integer_value(json_object_get(j, k));
	json_decref(j);
	return v;
}

static void fake_status(const fake *f, int status)
{
	char b[32];
	snprintf(b, sizeof b, "{\"status\":%d}", status);
	json_decref(fake_http(f, "POST", "/control", b));
}

/* ------------------------------------------------------------ contracts */

static void ready_revision(const char *project, const char *family, const char *cid, json_t *body,
			   char *rev)
{
	aw_ctx pub, appr;
	aw_test_ctx(&pub, project, AW_SCOPE_OPERATOR, "publisher");
	aw_test_ctx(&appr, project, AW_SCOPE_OPERATOR, "approver");
	aw_error err = {0};
	aw_revision r = {0};
	if (aw_contract_create(C, S, &pub, family, cid, body, &r, &err))
		fail_msg("create: %s %s", err.msg, err.where);
	snprintf(rev, AW_UUID_STR_LEN + 1, "%s", r.revision_id);
	aw_revision_clear(&r);
	assert_int_equal(aw_contract_publish(C, S, &pub, family, cid, rev, NULL, &err), AW_OK);
	assert_int_equal(aw_contract_approve(C, S, &appr, family, cid, rev, NULL, &err), AW_OK);
	json_decref(body);
}

static void activate(const char *project, const char *family, const char *cid, json_t *body,
		     char *rev_out)
{
	char rev[AW_UUID_STR_LEN + 1];
	ready_revision(project, family, cid, body, rev);
	aw_ctx op;
	aw_test_ctx(&op, project, AW_SCOPE_OPERATOR, "operator");
	aw_error err = {0};
	aw_activation act;
	aw_err e = aw_contract_activate(C, S, &op, family, cid, rev, &act, &err);
	if (e || !act.activated)
		fail_msg("activate: %s %s", aw_err_code(e), err.msg);
	if (rev_out)
		snprintf(rev_out, AW_UUID_STR_LEN + 1, "%s", rev);
}

/* A policy with one route "chat" of the given candidates ("provider=model"). */
static json_t *policy(const char *const *cands)
{
	json_t *cs = json_array();
	for (int i = 0; cands[i]; i++) {
		char p[32];
		const char *eq = strchr(cands[i], '=');
		snprintf(p, sizeof p, "%.*s", (int)(eq - cands[i]), cands[i]);
		json_array_append_new(cs, json_pack("{s:s,s:s}", "provider", p, "model", eq + 1));
	}
	return json_pack("{s:[{s:s,s:{s:s},s:o}]}", "routes", "name", "chat", "match", "task",
			 "chat", "candidates", cs);
}

static void set_policy(const char *project, const char *const *cands, char *rev)
{
	activate(project, "policy_routing", "default", policy(cands), rev);
}

/* ------------------------------------------------------------ gateway */

static aw_policy_cache *PC;
static aw_kv *KV;
static aw_llm *GW;

static const char *PROJECT_INFLIGHT;	    /* the gateway's bound, NULL: its default */
static const char *EMERGENCY_SHARE = "100"; /* of the daily cap, per project */
static aw_bus *BUS;			    /* the policy cache's; NULL: none */
static int WATCH_BUS;			    /* the gateway's watch_bus_ms; 0: its default */

static void gateway_up(int breaker_failures, int cooldown_ms, aw_kv *kv)
{
	aw_error err = {0};
	aw_policy_opts po = {.mode = AW_GUARD_STRICT};
	assert_int_equal(aw_policy_cache_new(S, C, BUS, &po, &PC, &err), AW_OK);
	json_t *cfg = json_pack("{s:{s:{s:s,s:s},s:{s:s},s:{s:s,s:s},s:{s:s}}}", "providers",
				"openai", "url", "", "api_key", "env:AW_TEST_CANARY_KEY",
				"anthropic", "url", "", "gemini", "url", "", "api_key",
				"env:AW_TEST_CANARY_KEY", "azure_openai", "url", "");
	char u[96];
	json_t *ps = json_object_get(cfg, "providers");
	snprintf(u, sizeof u, "%s/v1", A.url);
	json_object_set_new(json_object_get(ps, "openai"), "url", json_string(u));
	snprintf(u, sizeof u, "%s/v1", B.url);
	json_object_set_new(json_object_get(ps, "anthropic"), "url", json_string(u));
	snprintf(u, sizeof u, "%s/v1", G.url);
	json_object_set_new(json_object_get(ps, "gemini"), "url", json_string(u));
	snprintf(u, sizeof u, "http://127.0.0.1:%d/v1", dead_port);
	json_object_set_new(json_object_get(ps, "azure_openai"), "url", json_string(u));
	aw_llm_opts lo = {.store = S,
			  .policy = PC,
			  .kv = kv,
			  .config = cfg,
			  .connect_timeout_ms = 1000,
			  .first_byte_ms = 2000,
			  .idle_ms = 1000,
			  .breaker_failures = breaker_failures,
			  .breaker_cooldown_ms = cooldown_ms,
			  .schema_retries = 3,
			  .lease_ms = 2000,
			  .project_inflight = PROJECT_INFLIGHT,
			  .emergency_share = EMERGENCY_SHARE,
			  .watch_idle_ms = 500,
			  .watch_bus_ms = WATCH_BUS};
	if (aw_llm_new(&lo, &GW, &err))
		fail_msg("gateway: %s", err.msg);
	json_decref(cfg);
}

static void gateway_down(void)
{
	aw_llm_stop(GW);
	aw_llm_free(GW);
	aw_policy_cache_free(PC);
	GW = NULL;
	PC = NULL;
}

static aw_err ask(const char *project, const char *model, json_t *extra, json_t **resp,
		  aw_error *err)
{
	aw_ctx ctx;
	aw_test_ctx(&ctx, project, AW_SCOPE_WORKER, "agent-1");
	json_t *req = json_pack("{s:s,s:[{s:s,s:s}]}", "model", model, "messages", "role", "user",
				"content", "hello");
	if (extra)
		json_object_update(req, extra);
	json_decref(extra);
	aw_err e = aw_llm_complete(GW, &ctx, req, NULL, resp, err);
	json_decref(req);
	return e;
}

static const char *content(const json_t *resp)
{
	return json_string_value(json_object_get(
		json_object_get(json_array_get(json_object_get(resp, "choices"), 0), "message"),
		"content"));
}

/* The answer's first word: the name of the fake that answered. */
static void answered_by(const char *project, const char *who)
{
	json_t *resp = NULL;
	aw_error err = {0};
	aw_err e = ask(project, "chat", NULL, &resp, &err);
	if (e)
		fail_msg("call: %s %s", aw_err_code(e), err.msg);
	const char *c = content(resp);
	if (!c || strncmp(c, who, strlen(who)) || c[strlen(who)] != ':')
		fail_msg("answered by '%s', expected %s", c ? c : "(none)", who);
	json_decref(resp);
}

/* Waits for the recorder, then the project's llm.call audit rows, newest
 * first. */
static json_t *audit_rows(const char *project)
{
	if (GW)
		aw_llm_flush(GW);
	aw_audit_row *rows;
	int n;
	aw_test_audit_rows(project, "llm.call", 100000, &rows, &n);
	json_t *out = json_array();
	for (int i = n - 1; i >= 0; i--)
		json_array_append_new(out, aw_audit_row_json(&rows[i]));
	aw_audit_rows_free(rows, n);
	return out;
}

/* ------------------------------------------------------------ tests */

static void test_route_and_activation(void **state)
{
	(void)state;
	gateway_up(5, 10000, NULL);
	json_t *resp = NULL;
	aw_error err = {0};
	assert_int_equal(ask("acme", "chat", NULL, &resp, &err), AW_E_LLM_POLICY);
	const char *c1[] = {"openai=gpt-a", NULL};
	set_policy("acme", c1, NULL);
	long a0 = stat_of(&A, "requests");
	answered_by("acme", "A");
	assert_int_equal(stat_of(&A, "requests"), a0 + 1);
	json_t *st = fake_http(&A, "GET", "/stats", NULL);
	assert_string_equal(json_string_value(json_object_get(st, "last_model")), "gpt-a");
	json_decref(st);
	/* model aliases: the route name, a candidate's model, a task */
	assert_int_equal(ask("acme", "gpt-a", NULL, &resp, &err), AW_OK);
	assert_string_equal(json_string_value(json_object_get(resp, "model")), "gpt-a");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(resp, "usage"),
							    "completion_tokens")),
			 8);
	json_decref(resp);
	assert_int_equal(ask("acme", "nope\"} 1\nfake_metric{x=\"", NULL, &resp, &err),
			 AW_E_LLM_ROUTE);
	assert_string_equal(err.where, "/model");
	/* a refused call is recorded too (the client may see an answer before the
	 * engine queues its record: find it by its code, not by its place); the
	 * client's model never becomes a label */
	json_t *refused = audit_rows("acme");
	int found = 0;
	size_t ri;
	json_t *row;
	json_array_foreach (refused, ri, row) {
		const char *code =
			json_string_value(json_object_get(json_object_get(row, "payload"), "code"));
		found += code && !strcmp(code, "E-LLM-002");
	}
	assert_int_equal(found, 1);
	json_decref(refused);
	char *mtext = aw_metrics_render();
	assert_null(strstr(mtext, "fake_metric"));
	free(mtext);
	/* another project has its own policy: none */
	assert_int_equal(ask("beta", "chat", NULL, &resp, &err), AW_E_LLM_POLICY);
	/* models */
	aw_ctx ctx;
	aw_test_ctx(&ctx, "acme", AW_SCOPE_WORKER, "agent-1");
	json_t *models = NULL;
	assert_int_equal(aw_llm_models(GW, &ctx, &models, &err), AW_OK);
	assert_int_equal(json_array_size(json_object_get(models, "data")), 2);
	json_decref(models);

	/* a new activation: the very next call takes the new route */
	const char *c2[] = {"anthropic=claude-b", NULL};
	int64_t t0 = aw_clock_mono_ns();
	set_policy("acme", c2, NULL);
	int64_t t1 = aw_clock_mono_ns();
	answered_by("acme", "B");
	int64_t t2 = aw_clock_mono_ns();
	printf("activation commit %.2f ms; commit -> first call answered on the new route %.2f "
	       "ms\n",
	       (double)(t1 - t0) / 1e6, (double)(t2 - t1) / 1e6);

	/* revoked: fails closed, no upstream called */
	aw_ctx op;
	aw_test_ctx(&op, "acme", AW_SCOPE_OPERATOR, "operator");
	aw_revision act = {0};
	assert_int_equal(aw_contract_active(C, S, &op, "policy_routing", "default", &act, &err),
			 AW_OK);
	assert_int_equal(
		aw_contract_revoke(C, S, &op, "policy_routing", "default", act.revision_id, &err),
		AW_OK);
	aw_revision_clear(&act);
	long b0 = stat_of(&B, "requests");
	assert_int_equal(ask("acme", "chat", NULL, &resp, &err), AW_E_LLM_POLICY);
	assert_int_equal(stat_of(&B, "requests"), b0);
	gateway_down();
}

/* A signed candidate's limits reach the upstream (issue 40: max_tokens 500,
 * a 6,000-byte prompt and temperature 2 reached it under a policy limiting
 * them to 10, 100 and 0): max_output_tokens clamps max_tokens (and sets it
 * when the client did not), temperature replaces the client's, a prompt
 * over max_input_tokens is refused before any upstream is called, and a
 * candidate it is too long for is skipped for one that takes it. */
static void test_candidate_limits(void **state)
{
	(void)state;
	gateway_up(5, 10000, NULL);
	json_t *body = json_pack(
		"{s:[{s:s,s:{s:s},s:[{s:s,s:s,s:i,s:i,s:f}]},"
		"{s:s,s:{s:s},s:[{s:s,s:s,s:i},{s:s,s:s}]}]}",
		"routes", "name", "tight", "match", "task", "tight", "candidates", "provider",
		"openai", "model", "m-tight;tokens=50", "max_output_tokens", 10, "max_input_tokens",
		100, "temperature", 0.0, "name", "two", "match", "task", "two", "candidates",
		"provider", "openai", "model", "m-small;tokens=5", "max_input_tokens", 100,
		"provider", "anthropic", "model", "m-big;tokens=5");
	activate("limits", "policy_routing", "default", body, NULL);
	json_t *resp = NULL;
	aw_error err = {0};
	assert_int_equal(ask("limits", "tight",
			     json_pack("{s:i,s:f}", "max_tokens", 500, "temperature", 2.0), &resp,
			     &err),
			 AW_OK);
	assert_int_equal(stat_of(&A, "last_max_tokens"), 10);
	json_t *st = fake_http(&A, "GET", "/stats", NULL);
	assert_true(json_real_value(json_object_get(st, "last_temperature")) == 0.0);
	json_decref(st);
	assert_true(json_integer_value(json_object_get(json_object_get(resp, "usage"),
						       "completion_tokens")) <= 10);
	json_decref(resp);
	/* none asked: the upstream is still told the bound */
	assert_int_equal(ask("limits", "tight", NULL, &resp, &err), AW_OK);
	assert_int_equal(stat_of(&A, "last_max_tokens"), 10);
	json_decref(resp);
	/* fewer asked: kept */
	assert_int_equal(ask("limits", "tight", json_pack("{s:i}", "max_tokens", 3), &resp, &err),
			 AW_OK);
	assert_int_equal(stat_of(&A, "last_max_tokens"), 3);
	json_decref(resp);
	/* over max_input_tokens: refused, no upstream asked */
	char big[6001];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = 0;
	long a0 = stat_of(&A, "requests");
	json_t *long_prompt =
		json_pack("{s:[{s:s,s:s}]}", "messages", "role", "user", "content", big);
	assert_int_equal(ask("limits", "tight", json_incref(long_prompt), &resp, &err),
			 AW_E_LLM_PROMPT);
	assert_string_equal(err.where, "/messages");
	assert_int_equal(stat_of(&A, "requests"), a0);
	/* a candidate too small for the prompt is passed over for the next */
	long b0 = stat_of(&B, "requests");
	assert_int_equal(ask("limits", "two", long_prompt, &resp, &err), AW_OK);
	assert_int_equal(stat_of(&A, "requests"), a0);
	assert_int_equal(stat_of(&B, "requests"), b0 + 1);
	json_decref(resp);
	gateway_down();
}

/* The routing fields that pick a route and bound its fallbacks: match.intent
 * (X-Awooop-Task names a task or an intent), default_route (no route serves
 * the model), limits.max_fallbacks (the candidates tried after the first). */
static void test_route_fields(void **state)
{
	(void)state;
	gateway_up(1000, 10000, NULL);
	activate("acme", "policy_routing", "default",
		 json_pack("{s:s,s:[{s:s,s:{s:s},s:[{s:s,s:s}]},{s:s,s:{s:s},s:[{s:s,s:s}]},"
			   "{s:s,s:{s:s},s:[{s:s,s:s},{s:s,s:s}]}],s:{s:i}}",
			   "default_route", "fallback-route", "routes", "name", "summaries",
			   "match", "intent", "summarise", "candidates", "provider", "openai",
			   "model", "sum-model", "name", "fallback-route", "match", "task", "other",
			   "candidates", "provider", "anthropic", "model", "def-model", "name",
			   "fb", "match", "task", "fb", "candidates", "provider", "openai", "model",
			   "x;status=503", "provider", "anthropic", "model", "ok", "limits",
			   "max_fallbacks", 0),
		 NULL);
	aw_ctx ctx;
	aw_test_ctx(&ctx, "acme", AW_SCOPE_WORKER, "agent-1");
	json_t *req = json_pack("{s:s,s:[{s:s,s:s}]}", "model", "anything", "messages", "role",
				"user", "content", "hello");
	aw_llm_meta meta = {.task = "summarise"};
	json_t *resp = NULL;
	aw_error err = {0};
	/* the intent picks the route */
	assert_int_equal(aw_llm_complete(GW, &ctx, req, &meta, &resp, &err), AW_OK);
	assert_int_equal(strncmp(content(resp), "A:", 2), 0);
	json_decref(resp);
	/* no route serves "anything" and no task: the default route */
	answered_by("acme", "B"); /* model "chat": served by no route */
	assert_int_equal(aw_llm_complete(GW, &ctx, req, NULL, &resp, &err), AW_OK);
	assert_int_equal(strncmp(content(resp), "B:", 2), 0);
	json_decref(resp);
	json_decref(req);
	/* max_fallbacks 0: the 503 is not failed over to the healthy second */
	long b0 = stat_of(&B, "requests");
	assert_int_equal(ask("acme", "fb", NULL, &resp, &err), AW_E_LLM_UPSTREAMS);
	assert_int_equal(stat_of(&B, "requests"), b0);
	gateway_down();
}

static void test_failover_order(void **state)
{
	(void)state;
	gateway_up(50, 10000, NULL);
	const char *c[] = {"azure_openai=dead", "openai=x;status=503", "anthropic=ok", NULL};
	set_policy("acme", c, NULL);
	long a0 = stat_of(&A, "requests"), b0 = stat_of(&B, "requests");
	answered_by("acme", "B");
	assert_int_equal(stat_of(&A, "requests"), a0 + 1);
	assert_int_equal(stat_of(&B, "requests"), b0 + 1);
	/* 429 fails over too; a 400 does not */
	const char *c2[] = {"openai=x;status=429", "anthropic=ok", NULL};
	set_policy("acme", c2, NULL);
	answered_by("acme", "B");
	const char *c3[] = {"openai=x;status=400", "anthropic=ok", NULL};
	set_policy("acme", c3, NULL);
	b0 = stat_of(&B, "requests");
	json_t *resp = NULL;
	aw_error err = {0};
	assert_int_equal(ask("acme", "chat", NULL, &resp, &err), AW_E_LLM_REFUSED);
	assert_int_equal(stat_of(&B, "requests"), b0);
	/* a first byte that does not come in time (2 s) fails over */
	const char *c4[] = {"openai=x;hang=1", "anthropic=ok", NULL};
	set_policy("acme", c4, NULL);
	answered_by("acme", "B");
	/* everything down: E-LLM-003 naming each target */
	const char *c5[] = {"azure_openai=dead", "openai=x;status=500", NULL};
	set_policy("acme", c5, NULL);
	assert_int_equal(ask("acme", "chat", NULL, &resp, &err), AW_E_LLM_UPSTREAMS);
	assert_non_null(strstr(err.msg, "azure_openai"));
	assert_non_null(strstr(err.msg, "HTTP 500"));
	json_t *rows = audit_rows("acme");
	json_t *last = json_array_get(rows, 0); /* newest first */
	json_t *p = json_object_get(last, "payload");
	assert_string_equal(json_string_value(json_object_get(p, "outcome")), "unavailable");
	assert_string_equal(json_string_value(json_object_get(p, "code")), "E-LLM-003");
	json_decref(rows);
	gateway_down();
}

/* ---- streams read as the HTTP front door reads them */
typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int woken;
} waiter;
static void w_wake(void *ud)
{
	waiter *w = ud;
	pthread_mutex_lock(&w->mu);
	w->woken = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}
static void w_park(void *ud)
{
	(void)ud;
}
static void w_wait(waiter *w)
{
	pthread_mutex_lock(&w->mu);
	while (!w->woken)
		pthread_cond_wait(&w->cv, &w->mu);
	w->woken = 0;
	pthread_mutex_unlock(&w->mu);
}

/* As answered_by, for model; the call's route and upstream model as said. */
static void answered_by_model(const char *project, const char *model, const char *who,
			      const char *route, const char *upstream_model)
{
	aw_ctx ctx;
	aw_test_ctx(&ctx, project, AW_SCOPE_WORKER, "agent-1");
	json_t *req = json_pack("{s:s,s:[{s:s,s:s}]}", "model", model, "messages", "role", "user",
				"content", "hello");
	aw_error err = {0};
	aw_llm_call *c = NULL;
	waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
	if (aw_llm_start(GW, &ctx, req, NULL, w_wake, &w, &c, &err))
		fail_msg("start: %s %s", aw_err_code(err.err), err.msg);
	json_decref(req);
	char *body = NULL;
	aw_llm_state st;
	while ((st = aw_llm_head(c, w_park, NULL, &body, &err)) == AW_LLM_WAIT)
		w_wait(&w);
	if (st != AW_LLM_ANSWER)
		fail_msg("call: %s %s", aw_err_code(err.err), err.msg);
	char r[80], m[160];
	aw_llm_call_said(c, r, sizeof r, m, sizeof m);
	aw_llm_release(c);
	json_t *resp = json_loads(body, 0, NULL);
	free(body);
	const char *t = content(resp);
	if (!t || strncmp(t, who, strlen(who)) || t[strlen(who)] != ':')
		fail_msg("answered by '%s', expected %s", t ? t : "(none)", who);
	assert_string_equal(json_string_value(json_object_get(resp, "model")), model);
	assert_string_equal(r, route);
	assert_string_equal(m, upstream_model);
	json_decref(resp);
}

/* A request naming a candidate's model gets that model or a clear refusal;
 * the route's other models only when it allows model_failover (issue 43:
 * "fake-small" was answered by another model). The call says what routing
 * did: the route and the upstream model. */
static void test_route_by_model(void **state)
{
	(void)state;
	gateway_up(1000, 10000, NULL);
	const char *c[] = {"openai=first", "anthropic=second", NULL};
	set_policy("acme", c, NULL);
	long a0 = stat_of(&A, "requests");
	answered_by_model("acme", "second", "B", "chat", "second");
	assert_int_equal(stat_of(&A, "requests"), a0); /* the first candidate never asked */
	answered_by_model("acme", "chat", "A", "chat", "first"); /* the route: in order */
	/* the named model down: refused, not answered by the other model */
	const char *c2[] = {"openai=x;status=503", "anthropic=ok", NULL};
	set_policy("acme", c2, NULL);
	long b0 = stat_of(&B, "requests");
	json_t *resp = NULL;
	aw_error err = {0};
	assert_int_equal(ask("acme", "x;status=503", NULL, &resp, &err), AW_E_LLM_UPSTREAMS);
	assert_int_equal(stat_of(&B, "requests"), b0);
	/* the route allows it: the next model answers, and says so */
	json_t *body = policy(c2);
	json_object_set_new(json_array_get(json_object_get(body, "routes"), 0), "model_failover",
			    json_true());
	activate("acme", "policy_routing", "default", body, NULL);
	answered_by_model("acme", "x;status=503", "B", "chat", "ok");
	gateway_down();
}

/* The whole SSE text of a streamed call; NULL with *e when it failed before
 * any byte. */
static char *stream_call(const char *project, const char *model, int usage, aw_err *e,
			 aw_error *err)
{
	aw_ctx ctx;
	aw_test_ctx(&ctx, project, AW_SCOPE_WORKER, "agent-1");
	json_t *req = json_pack("{s:s,s:b,s:{s:b},s:[{s:s,s:s}]}", "model", model, "stream", 1,
				"stream_options", "include_usage", usage, "messages", "role",
				"user", "content", "hi");
	waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
	aw_llm_call *c = NULL;
	*e = aw_llm_start(GW, &ctx, req, NULL, w_wake, &w, &c, err);
	json_decref(req);
	if (*e)
		return NULL;
	char *body = NULL;
	aw_llm_state st;
	while ((st = aw_llm_head(c, w_park, NULL, &body, err)) == AW_LLM_WAIT)
		w_wait(&w);
	if (st == AW_LLM_FAILED) {
		*e = err->err;
		aw_llm_release(c);
		return NULL;
	}
	assert_int_equal(st, AW_LLM_STREAM);
	aw_buf out = AW_BUF_INIT(1 << 20);
	char buf[512];
	for (;;) {
		ssize_t n = aw_llm_read(c, buf, sizeof buf, w_park, NULL);
		if (n < 0)
			break;
		if (n == 0)
			w_wait(&w);
		else
			aw_buf_add(&out, buf, (size_t)n);
	}
	aw_llm_release(c);
	return aw_buf_take(&out);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void test_streams(void **state)
{
	(void)state;
	gateway_up(50, 10000, NULL);
	aw_err e;
	aw_error err = {0};
	/* OpenAI SSE passed through; the usage chunk only when asked */
	const char *c1[] = {"openai=s;tokens=5", NULL};
	set_policy("acme", c1, NULL);
	char *s = stream_call("acme", "chat", 1, &e, &err);
	assert_non_null(s);
	assert_int_equal(count(s, "\"content\""), 5);
	assert_int_equal(count(s, "\"usage\""), 1);
	assert_non_null(strstr(s, "data: [DONE]\n\n"));
	free(s);
	s = stream_call("acme", "chat", 0, &e, &err);
	assert_int_equal(count(s, "\"usage\""), 0); /* metered all the same: */
	free(s);
	json_t *rows = audit_rows("acme");
	json_t *p = json_object_get(json_array_get(rows, 0), "payload");
	assert_int_equal(json_integer_value(json_object_get(p, "tokens_out")), 5);
	/* the fake bills "hi" 3 + 3 + 1 + 1 */
	assert_int_equal(json_integer_value(json_object_get(p, "tokens_in")), 8);
	assert_true(json_real_value(json_object_get(p, "ttft_ms")) > 0);
	json_decref(rows);

	/* no failover after the first byte: A breaks after 3 chunks, B never asked */
	const char *c2[] = {"openai=s;tokens=20;drop=3", "anthropic=ok", NULL};
	set_policy("acme", c2, NULL);
	long b0 = stat_of(&B, "requests");
	s = stream_call("acme", "chat", 1, &e, &err);
	assert_non_null(s);
	assert_non_null(strstr(s, "E-LLM-004"));
	assert_null(strstr(s, "[DONE]"));
	assert_int_equal(stat_of(&B, "requests"), b0);
	free(s);
	/* before the first byte it does fail over, streamed too */
	const char *c3[] = {"openai=s;status=502", "anthropic=s;tokens=3", NULL};
	set_policy("acme", c3, NULL);
	s = stream_call("acme", "chat", 1, &e, &err);
	assert_non_null(s);
	assert_non_null(strstr(s, "B: t0"));
	assert_non_null(strstr(s, "[DONE]"));
	free(s);
	gateway_down();
}

static void test_breaker(void **state)
{
	(void)state;
	gateway_up(2, 400, NULL);
	const char *c[] = {"openai=plain", "anthropic=ok", NULL};
	set_policy("acme", c, NULL);
	fake_status(&A, 500);
	long a0 = stat_of(&A, "requests");
	answered_by("acme", "B");
	answered_by("acme", "B"); /* second failure: open */
	assert_int_equal(stat_of(&A, "requests"), a0 + 2);
	answered_by("acme", "B"); /* skipped while open */
	assert_int_equal(stat_of(&A, "requests"), a0 + 2);
	char *m = aw_metrics_render();
	assert_non_null(strstr(m, "awooop_llm_breaker_state{upstream=\"openai\"} 1"));
	free(m);
	usleep(500000); /* cooldown: one half-open probe, which fails: open again */
	answered_by("acme", "B");
	assert_int_equal(stat_of(&A, "requests"), a0 + 3);
	answered_by("acme", "B");
	assert_int_equal(stat_of(&A, "requests"), a0 + 3);
	fake_status(&A, 0);
	usleep(500000); /* the probe succeeds: closed */
	answered_by("acme", "A");
	answered_by("acme", "A");
	m = aw_metrics_render();
	assert_non_null(strstr(m, "awooop_llm_breaker_state{upstream=\"openai\"} 0"));
	free(m);
	gateway_down();
}

static json_t *topology(int cap)
{
	char p[96], s[96];
	snprintf(p, sizeof p, "%s", O1.url);
	snprintf(s, sizeof s, "%s", O2.url);
	return json_pack("{s:s,s:{s:s},s:{s:s},s:{s:s,s:s,s:i}}", "kind", "ollama_topology",
			 "primary", "url", p, "secondary", "url", s, "emergency_cloud", "provider",
			 "gemini", "model", "g-flash", "daily_cap", cap);
}

/* Failures are charged to whoever caused them (issue 39): a route that sets
 * a timeout_ms shorter than the upstream answers fails its own calls, and
 * the shared upstream's breaker never opens for it - another tenant's calls
 * are answered (before: "circuit open" for as long as the first kept
 * probing). A route's timeout_ms only shortens the platform's. */
static void test_breaker_charged_to_cause(void **state)
{
	(void)state;
	gateway_up(2, 10000, NULL);
	json_t *mine = json_pack("{s:[{s:s,s:{s:s},s:[{s:s,s:s,s:i}]}]}", "routes", "name", "chat",
				 "match", "task", "chat", "candidates", "provider", "openai",
				 "model", "m;ttft=300", "timeout_ms", 100);
	activate("gamma", "policy_routing", "default", mine, NULL);
	const char *theirs[] = {"openai=m;ttft=300", NULL};
	set_policy("delta", theirs, NULL);
	json_t *resp = NULL;
	aw_error err = {0};
	for (int i = 0; i < 4; i++) { /* twice the breaker's failures */
		assert_int_equal(ask("gamma", "chat", NULL, &resp, &err), AW_E_LLM_UPSTREAMS);
		assert_non_null(strstr(err.msg, "the route's own timeout_ms"));
	}
	char *m = aw_metrics_render();
	assert_non_null(strstr(m, "awooop_llm_breaker_state{upstream=\"openai\"} 0"));
	free(m);
	assert_int_equal(ask("delta", "chat", NULL, &resp, &err), AW_OK);
	json_decref(resp);
	gateway_down();
}

/* One project's calls hold at most its bound of the gateway (issue 39: 300
 * parked streams of one tenant made another's 4-token call wait 34 s on the
 * shared connections); past it 429 E-LLM-009, the others unaffected. */
typedef struct {
	const char *project;
	aw_err e;
} busy_arg;

static void *busy_caller(void *arg)
{
	busy_arg *b = arg;
	json_t *resp = NULL;
	aw_error err = {0};
	b->e = ask(b->project, "chat", NULL, &resp, &err);
	json_decref(resp);
	return NULL;
}

/* 1 once the metrics text has the line ud (a condition of aw_test_wait_until). */
static int metrics_has(void *ud)
{
	char *m = aw_metrics_render();
	int found = m && strstr(m, ud) != NULL;
	free(m);
	return found;
}

static void test_project_inflight(void **state)
{
	(void)state;
	PROJECT_INFLIGHT = "2,delta=3";
	gateway_up(5, 10000, NULL);
	PROJECT_INFLIGHT = NULL;
	const char *slow[] = {"openai=slow;ttft=1500", NULL};
	set_policy("gamma", slow, NULL);
	const char *fast[] = {"openai=fast", NULL};
	set_policy("delta", fast, NULL);
	busy_arg b[2] = {{"gamma", AW_OK}, {"gamma", AW_OK}};
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, busy_caller, &b[i]), 0);
	/* both in flight: gamma's two places taken */
	assert_true(aw_test_wait_until(metrics_has, "awooop_llm_inflight{project=\"gamma\"} 2\n",
				       5000));
	json_t *resp = NULL;
	aw_error err = {0};
	assert_int_equal(ask("gamma", "chat", NULL, &resp, &err), AW_E_LLM_BUSY);
	int64_t t0 = aw_clock_mono_ns();
	assert_int_equal(ask("delta", "chat", NULL, &resp, &err), AW_OK);
	assert_true((aw_clock_mono_ns() - t0) / 1000000 < 1000);
	json_decref(resp);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(b[i].e, AW_OK);
	}
	/* freed as they end */
	assert_int_equal(ask("gamma", "chat", NULL, &resp, &err), AW_OK);
	json_decref(resp);
	gateway_down();
}

static void test_topology(void **state)
{
	(void)state;
	gateway_up(50, 10000, NULL);
	const char *c[] = {"ollama=llama3", NULL};
	set_policy("acme", c, NULL);
	activate(AW_PLATFORM_PROJECT, "platform_resource", "ollama_topology", topology(10), NULL);
	long conns = stat_of(&O1, "connections");
	for (int i = 0; i < 3; i++)
		answered_by("acme", "O1");
	assert_int_equal(stat_of(&O1, "connections"), conns + 1); /* one kept-alive connection */
	/* Ollama's native API spoken: NDJSON stream translated to SSE */
	aw_err e;
	aw_error err = {0};
	char *s = stream_call("acme", "chat", 1, &e, &err);
	assert_non_null(s);
	assert_non_null(strstr(s, "chat.completion.chunk"));
	assert_non_null(strstr(s, "\"completion_tokens\":8"));
	assert_non_null(strstr(s, "data: [DONE]"));
	free(s);
	/* a new topology revision: the pools are reset (a new connection) */
	activate(AW_PLATFORM_PROJECT, "platform_resource", "ollama_topology", topology(10), NULL);
	conns = stat_of(&O1, "connections");
	answered_by("acme", "O1");
	assert_int_equal(stat_of(&O1, "connections"), conns + 1);
	/* primary down: the secondary answers */
	fake_status(&O1, 503);
	answered_by("acme", "O2");
	fake_status(&O1, 0);
	gateway_down();
}

/* An endpoint of a topology: url, models (NULL-ended, NULL: every model)
 * and timeout_ms (0: none). */
static json_t *endpoint(const fake *f, const char *const *models, int timeout_ms)
{
	json_t *ep = json_pack("{s:s}", "url", f->url);
	if (models) {
		json_t *ms = json_array();
		for (int i = 0; models[i]; i++)
			json_array_append_new(ms, json_string(models[i]));
		json_object_set_new(ep, "models", ms);
	}
	if (timeout_ms)
		json_object_set_new(ep, "timeout_ms", json_integer(timeout_ms));
	return ep;
}

static void set_hosts(json_t *primary, json_t *secondary, json_t *fallback)
{
	activate(AW_PLATFORM_PROJECT, "platform_resource", "ollama_topology",
		 json_pack("{s:s,s:o,s:o,s:o}", "kind", "ollama_topology", "primary", primary,
			   "secondary", secondary, "fallback", fallback),
		 NULL);
}

/* The three hosts' own fields (no emergency model: a call no host serves
 * fails): a host whose models do not list the model is skipped, the
 * fallback is tried third, a host's timeout_ms is its first-byte deadline
 * (the platform's --llm-first-byte-ms is 2000 here). */
static void test_topology_hosts(void **state)
{
	(void)state;
	fake O3;
	fake_start(&O3, "O3", 0);
	gateway_up(1000, 10000, NULL);
	const char *both[] = {"llama3", "m2", NULL};
	const char *fb[] = {"llama3", "solo", NULL};
	set_hosts(endpoint(&O1, both, 0), endpoint(&O2, both, 0), endpoint(&O3, fb, 0));
	const char *llama[] = {"ollama=llama3", NULL};
	set_policy("acme", llama, NULL);
	answered_by("acme", "O1");
	/* models: a model only the fallback lists skips the primary and the
	 * secondary (no request reaches them) */
	const char *solo[] = {"ollama=solo", NULL};
	set_policy("acme", solo, NULL);
	long o1 = stat_of(&O1, "requests"), o2 = stat_of(&O2, "requests");
	answered_by("acme", "O3");
	assert_int_equal(stat_of(&O1, "requests"), o1);
	assert_int_equal(stat_of(&O2, "requests"), o2);
	/* fallback: third, after the primary and the secondary failed */
	set_policy("acme", llama, NULL);
	fake_status(&O1, 503);
	answered_by("acme", "O2");
	fake_status(&O2, 503);
	long o3 = stat_of(&O3, "requests");
	answered_by("acme", "O3");
	assert_int_equal(stat_of(&O3, "requests"), o3 + 1);
	/* fallback.models: m2 is not the fallback's: nothing answers */
	const char *m2[] = {"ollama=m2", NULL};
	set_policy("acme", m2, NULL);
	json_t *resp = NULL;
	aw_error err = {0};
	o3 = stat_of(&O3, "requests");
	assert_int_not_equal(ask("acme", "chat", NULL, &resp, &err), AW_OK);
	assert_int_equal(stat_of(&O3, "requests"), o3);
	fake_status(&O1, 0);
	fake_status(&O2, 0);

	/* timeout_ms: the hosts answer after 600 ms, within the platform's
	 * 2000; a host's 200 fails over to the next one */
	const char *late[] = {"late;ttft=600", NULL};
	const char *late_c[] = {"ollama=late;ttft=600", NULL};
	set_policy("acme", late_c, NULL);
	set_hosts(endpoint(&O1, late, 200), endpoint(&O2, late, 0), endpoint(&O3, late, 0));
	o1 = stat_of(&O1, "requests");
	answered_by("acme", "O2");
	assert_int_equal(stat_of(&O1, "requests"), o1 + 1); /* asked, timed out */
	set_hosts(endpoint(&O1, late, 200), endpoint(&O2, late, 200), endpoint(&O3, late, 0));
	o2 = stat_of(&O2, "requests");
	answered_by("acme", "O3");
	assert_int_equal(stat_of(&O2, "requests"), o2 + 1);
	set_hosts(endpoint(&O1, late, 200), endpoint(&O2, late, 200), endpoint(&O3, late, 200));
	o3 = stat_of(&O3, "requests");
	assert_int_not_equal(ask("acme", "chat", NULL, &resp, &err), AW_OK);
	assert_int_equal(stat_of(&O3, "requests"), o3 + 1); /* asked, timed out */
	gateway_down();
	kill(O3.pid, SIGKILL);
	waitpid(O3.pid, NULL, 0);
}

typedef struct {
	const char *project;
	int ok, capped, other;
	pthread_mutex_t *mu;
} cap_arg;

static void *cap_caller(void *p)
{
	cap_arg *a = p;
	json_t *resp = NULL;
	aw_error err = {0};
	aw_err e = ask(a->project, "chat", NULL, &resp, &err);
	const char *c = e ? NULL : content(resp);
	pthread_mutex_lock(a->mu);
	if (!e && c && !strncmp(c, "G:", 2))
		a->ok++;
	else if (e == AW_E_LLM_CAP)
		a->capped++;
	else
		a->other++;
	pthread_mutex_unlock(a->mu);
	json_decref(resp);
	return NULL;
}

static void cap_run_of(const char *project, int callers, int cap, int expect_ok)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	cap_arg a = {project, 0, 0, 0, &mu};
	pthread_t t[64];
	for (int i = 0; i < callers; i++)
		pthread_create(&t[i], NULL, cap_caller, &a);
	for (int i = 0; i < callers; i++)
		pthread_join(t[i], NULL);
	printf("emergency cap %d, %d callers: %d answered, %d capped, %d other\n", cap, callers,
	       a.ok, a.capped, a.other);
	assert_int_equal(a.ok, expect_ok);
	assert_int_equal(a.capped, callers - expect_ok);
}

static void cap_run(int callers, int cap, int expect_ok)
{
	cap_run_of("acme", callers, cap, expect_ok);
}

/* The emergency cap is split between projects (issue 39): a project uses at
 * most its share (here 40 % of 5: 2, beta 100 %), so one tenant's failures
 * leave the others their fallback; the platform's total still holds. In
 * process and across processes (Redis). */
static void test_emergency_share(void **state)
{
	(void)state;
	for (int redis = 0; redis < 2; redis++) {
		aw_error err = {0};
		if (redis) {
			aw_test_redis_start(&R);
			assert_int_equal(aw_kv_open(R.url, S, NULL, &KV, &err), AW_OK);
		}
		llm_test_shift_days(3 + redis); /* a day of its own */
		EMERGENCY_SHARE = "40,beta=100";
		gateway_up(1000, 10000, redis ? KV : NULL);
		EMERGENCY_SHARE = "100";
		const char *c[] = {"ollama=llama3", NULL};
		set_policy("acme", c, NULL);
		set_policy("beta", c, NULL);
		activate(AW_PLATFORM_PROJECT, "platform_resource", "ollama_topology", topology(5),
			 NULL);
		fake_status(&O1, 503);
		fake_status(&O2, 503);
		cap_run_of("acme", 6, 5, 2); /* its 40 % */
		cap_run_of("beta", 6, 5, 3); /* the rest of the platform's 5 */
		cap_run_of("acme", 2, 5, 0);
		fake_status(&O1, 0);
		fake_status(&O2, 0);
		llm_test_shift_days(0);
		gateway_down();
		if (redis) {
			aw_kv_close(KV);
			KV = NULL;
		}
	}
}

static void test_emergency_cap(void **state)
{
	(void)state;
	aw_test_redis_start(&R);
	aw_error err = {0};
	assert_int_equal(aw_kv_open(R.url, S, NULL, &KV, &err), AW_OK);
	gateway_up(1000, 10000, KV);
	const char *c[] = {"ollama=llama3", NULL};
	set_policy("acme", c, NULL);
	activate(AW_PLATFORM_PROJECT, "platform_resource", "ollama_topology", topology(5), NULL);
	fake_status(&O1, 503);
	fake_status(&O2, 503);
	long g0 = stat_of(&G, "requests");
	cap_run(32, 5, 5);
	assert_int_equal(stat_of(&G, "requests"), g0 + 5);
	assert_int_equal(stat_of(&G, "auth_ok"), stat_of(&G, "requests")); /* the key arrived */
	cap_run(8, 5, 0); /* the day's cap is spent */
	/* the alert's series: calls granted of the cap */
	char *m = aw_metrics_render();
	assert_non_null(strstr(m, "awooop_llm_emergency_calls 5\n"));
	assert_non_null(strstr(m, "awooop_llm_emergency_cap 5\n"));
	free(m);
	/* the counter is the INV-1 key, in Redis */
	char date[16];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(date, sizeof date, "%Y-%m-%d", &tm);
	aw_ctx pc;
	aw_test_ctx(&pc, AW_PLATFORM_PROJECT, AW_SCOPE_PLATFORM_ADMIN, "t");
	const char *vals[] = {date};
	char *v = NULL;
	assert_int_equal(aw_kv_get(KV, &pc, "gemini_daily_count", vals, 1, &v, &err), AW_OK);
	assert_non_null(v);
	/* every attempt counted against the project's share (100 % here), and
	 * those within it against the platform's: 5, all under the cap */
	assert_int_equal(atoi(v), 5);
	free(v);
	aw_ctx ac;
	aw_test_ctx(&ac, "acme", AW_SCOPE_OPERATOR, "t");
	assert_int_equal(aw_kv_get(KV, &ac, "llm_emergency", vals, 1, &v, &err), AW_OK);
	assert_non_null(v);
	assert_int_equal(atoi(v), 40);
	free(v);
	/* the next UTC day starts a new count */
	const char *tomorrow[] = {"2099-01-01"};
	assert_int_equal(aw_kv_get(KV, &pc, "gemini_daily_count", tomorrow, 1, &v, &err), AW_OK);
	assert_null(v);
	/* UTC midnight: the next day's key, a fresh cap */
	llm_test_shift_days(1);
	cap_run(8, 5, 5);
	llm_test_shift_days(0);
	cap_run(2, 5, 0); /* today's is still spent */
	fake_status(&O1, 0);
	fake_status(&O2, 0);
	answered_by("acme", "O1"); /* the local host back: no emergency */
	gateway_down();
	aw_kv_close(KV);
	KV = NULL;

	/* without Redis (one embedded process): the same cap, in process */
	gateway_up(1000, 10000, NULL);
	activate(AW_PLATFORM_PROJECT, "platform_resource", "ollama_topology", topology(3), NULL);
	fake_status(&O1, 503);
	fake_status(&O2, 503);
	cap_run(16, 3, 3);
	m = aw_metrics_render();
	assert_non_null(strstr(m, "awooop_llm_emergency_calls 3\n"));
	assert_non_null(strstr(m, "awooop_llm_emergency_cap 3\n"));
	free(m);
	llm_test_shift_days(1);
	cap_run(4, 3, 3);
	llm_test_shift_days(0);
	fake_status(&O1, 0);
	fake_status(&O2, 0);

	/* the lever of issue 39: a route's timeout_ms on an ollama candidate,
	 * shorter than the hosts answer, forced the emergency model (spending the
	 * platform's cap) and tripped the shared hosts' breakers. The platform's
	 * hosts keep the platform's timeouts: the call is the host's. */
	llm_test_shift_days(2);
	json_t *lever = json_pack("{s:[{s:s,s:{s:s},s:[{s:s,s:s,s:i}]}]}", "routes", "name", "chat",
				  "match", "task", "chat", "candidates", "provider", "ollama",
				  "model", "llama3;ttft=300", "timeout_ms", 100);
	activate("acme", "policy_routing", "default", lever, NULL);
	g0 = stat_of(&G, "requests");
	for (int i = 0; i < 4; i++)
		answered_by("acme", "O1");
	assert_int_equal(stat_of(&G, "requests"), g0); /* no emergency call */
	m = aw_metrics_render();
	assert_null(strstr(m, "awooop_llm_breaker_state{upstream=\"ollama-primary\"} 1"));
	free(m);
	llm_test_shift_days(0);
	gateway_down();
}

static void test_schema_retry(void **state)
{
	(void)state;
	gateway_up(50, 10000, NULL);
	json_t *rf =
		json_pack("{s:{s:s,s:{s:s,s:{s:s,s:{s:{s:s}},s:[s]}}}}", "response_format", "type",
			  "json_schema", "json_schema", "name", "n", "schema", "type", "object",
			  "properties", "answer", "type", "integer", "required", "answer");
	const char *c[] = {"openai=j;invalid=2", NULL};
	set_policy("acme", c, NULL);
	long a0 = stat_of(&A, "requests");
	json_t *resp = NULL;
	aw_error err = {0};
	aw_err e = ask("acme", "chat", json_deep_copy(rf), &resp, &err);
	if (e)
		fail_msg("%s %s", aw_err_code(e), err.msg);
	assert_string_equal(content(resp), "{\"answer\":42}");
	assert_int_equal(stat_of(&A, "requests"), a0 + 3);
	json_decref(resp);
	json_t *rows = audit_rows("acme");
	json_t *p = json_object_get(json_array_get(rows, 0), "payload");
	assert_int_equal(json_integer_value(json_object_get(p, "schema_attempts")), 3);
	json_decref(rows);
	const char *c2[] = {"openai=j;invalid=99", NULL};
	set_policy("acme", c2, NULL);
	a0 = stat_of(&A, "requests");
	assert_int_equal(ask("acme", "chat", json_deep_copy(rf), &resp, &err), AW_E_SCHEMA_OUTPUT);
	assert_int_equal(stat_of(&A, "requests"), a0 + 4); /* 1 + 3 retries */
	assert_non_null(strstr(err.msg, "/answer"));
	/* the revision's limits.schema_retries replaces the gateway's 3 */
	for (int n = 0; n <= 1; n++) {
		json_t *body = policy(c2);
		json_object_set_new(body, "limits", json_pack("{s:i}", "schema_retries", n));
		activate("acme", "policy_routing", "default", body, NULL);
		a0 = stat_of(&A, "requests");
		assert_int_equal(ask("acme", "chat", json_deep_copy(rf), &resp, &err),
				 AW_E_SCHEMA_OUTPUT);
		assert_int_equal(stat_of(&A, "requests"), a0 + 1 + n);
	}
	/* invalid=2 needs two retries: one is not enough */
	json_t *one = policy(c);
	json_object_set_new(one, "limits", json_pack("{s:i}", "schema_retries", 1));
	activate("acme", "policy_routing", "default", one, NULL);
	assert_int_equal(ask("acme", "chat", json_deep_copy(rf), &resp, &err), AW_E_SCHEMA_OUTPUT);
	/* a schema the validator cannot compile is the caller's error */
	json_t *bad = json_pack("{s:{s:s,s:{s:{s:s}}}}", "response_format", "type", "json_schema",
				"json_schema", "schema", "type", "nonsense");
	assert_int_equal(ask("acme", "chat", bad, &resp, &err), AW_E_REQ_INVALID);
	json_decref(rf);
	gateway_down();
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return strdup("");
	aw_buf b = AW_BUF_INIT(64 << 20);
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		aw_buf_add(&b, buf, n);
	fclose(f);
	return aw_buf_take(&b);
}

static void test_canary_and_trace(void **state)
{
	(void)state;
	/* every log line of these calls goes to a file we then search */
	char logpath[] = "/tmp/aw_llm_log_XXXXXX";
	int lfd = mkstemp(logpath);
	int saved = dup(2);
	dup2(lfd, 2);
	gateway_up(50, 10000, NULL);
	const char *c[] = {"gemini=g", NULL};
	set_policy("acme", c, NULL);
	long ok0 = stat_of(&G, "auth_ok");
	json_t *resp = NULL;
	aw_error err = {0};
	aw_ctx ctx;
	aw_test_ctx(&ctx, "acme", AW_SCOPE_WORKER, "agent-1");
	json_t *req = json_pack("{s:s,s:[{s:s,s:s}]}", "model", "chat", "messages", "role", "user",
				"content", "hello");
	assert_int_equal(aw_llm_complete(GW, &ctx, req, NULL, &resp, &err), AW_OK);
	json_decref(req);
	assert_int_equal(stat_of(&G, "auth_ok"), ok0 + 1);
	char *txt = json_dumps(resp, 0);
	assert_null(strstr(txt, CANARY));
	free(txt);
	json_decref(resp);
	/* the trace continues: same trace id, a new span */
	json_t *st = fake_http(&G, "GET", "/stats", NULL);
	const char *tp = json_string_value(json_object_get(st, "last_traceparent"));
	assert_non_null(strstr(tp, ctx.trace.trace_id));
	json_decref(st);
	/* an upstream that quotes the credential in its error */
	const char *c2[] = {"gemini=g;status=400;echo=1", NULL};
	set_policy("acme", c2, NULL);
	assert_int_equal(ask("acme", "chat", NULL, &resp, &err), AW_E_LLM_REFUSED);
	assert_null(strstr(err.msg, CANARY));
	assert_non_null(strstr(err.msg, "REDACTED"));
	/* a streamed call and a failure mid-stream */
	const char *c3[] = {"gemini=g;drop=2", NULL};
	set_policy("acme", c3, NULL);
	aw_err e;
	char *s = stream_call("acme", "chat", 1, &e, &err);
	assert_null(strstr(s ? s : "", CANARY));
	free(s);
	gateway_down();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	char *log = slurp(logpath);
	unlink(logpath);
	close(lfd);
	assert_null(strstr(log, CANARY));
	free(log);
	json_t *rows = audit_rows("acme");
	char *all = json_dumps(rows, 0);
	assert_null(strstr(all, CANARY));
	assert_null(strstr(all, "hello")); /* no prompt stored */
	assert_null(strstr(all, "G: t0")); /* no completion stored */
	free(all);
	json_decref(rows);
}

static void *stop_later(void *p)
{
	usleep(300000);
	atomic_store((atomic_bool *)p, 1);
	return NULL;
}

static void test_llm_step(void **state)
{
	(void)state;
	gateway_up(50, 10000, NULL);
	assert_int_equal(aw_llm_register_executor(GW), 0);
	const aw_executor *x = aw_executor_find("llm");
	assert_non_null(x);
	const char *c[] = {"openai=step-model", NULL};
	set_policy("acme", c, NULL);
	aw_error err = {0};
	json_t *args = json_pack("{s:s,s:s,s:[{s:s,s:s}]}", "model", "x", "task", "chat",
				 "messages", "role", "user", "content", "summarise");
	assert_int_equal(x->validate(args, &err), AW_OK);
	json_t *badargs = json_pack("{s:s}", "model", "x");
	assert_int_equal(x->validate(badargs, &err), AW_E_RUN_WORKFLOW);
	json_decref(badargs);
	atomic_bool stop = 0;
	char rid[AW_UUID_STR_LEN + 1];
	aw_uuid7_str(rid);
	aw_step_call sc = {.run_id = rid,
			   .project = "acme",
			   .step_no = 2,
			   .idem_key = "k",
			   .traceparent = NULL,
			   .args = args,
			   .deadline_ns = aw_clock_mono_ns() + 10000000000LL,
			   .stop = &stop};
	json_t *result = NULL;
	if (x->run(&sc, &result, &err))
		fail_msg("llm step: %s", err.msg);
	assert_non_null(strstr(json_string_value(json_object_get(result, "content")), "A:"));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(result, "usage"),
							    "completion_tokens")),
			 8);
	json_decref(result);
	/* a stopped run abandons its call; a step deadline too */
	const char *slow[] = {"openai=slow;ttft=3000", NULL};
	set_policy("acme", slow, NULL);
	pthread_t stopper;
	pthread_create(&stopper, NULL, stop_later, &stop);
	int64_t t0 = aw_clock_mono_ns();
	assert_int_equal(x->run(&sc, &result, &err), AW_E_RUN_CANCELLED);
	assert_true(aw_clock_mono_ns() - t0 < 1500000000LL);
	pthread_join(stopper, NULL);
	atomic_store(&stop, 0);
	sc.deadline_ns = aw_clock_mono_ns() + 300000000LL;
	t0 = aw_clock_mono_ns();
	assert_int_equal(x->run(&sc, &result, &err), AW_E_RUN_TIMEOUT);
	assert_true(aw_clock_mono_ns() - t0 < 1500000000LL);
	json_t *intent = x->intent(args);
	assert_non_null(json_object_get(intent, "request"));
	json_decref(intent);
	json_decref(args);
	json_t *rows = audit_rows("acme");
	json_t *p =
		json_object_get(json_array_get(rows, 2), "payload"); /* before the two abandoned */
	assert_string_equal(json_string_value(json_object_get(p, "run_id")), rid);
	assert_int_equal(json_integer_value(json_object_get(p, "step")), 2);
	p = json_object_get(json_array_get(rows, 0), "payload");
	assert_string_equal(json_string_value(json_object_get(p, "outcome")), "client_gone");
	json_decref(rows);
	gateway_down();
}

/* ------------------------------------------------------------ budget */

static void set_budget(const char *project, long long limit, const char *action)
{
	activate(project, "budget", "default",
		 json_pack("{s:s,s:I,s:s}", "period", "day", "token_limit", (json_int_t)limit,
			   "action_on_exceed", action),
		 NULL);
}

static json_t *budget_status(const char *project)
{
	aw_ctx ctx;
	aw_test_ctx(&ctx, project, AW_SCOPE_OPERATOR, "op");
	json_t *st = NULL;
	aw_error err = {0};
	assert_int_equal(aw_budget_status(S, PC, &ctx, NULL, &st, &err), AW_OK);
	return st;
}

static double jnum(const json_t *o, const char *path)
{
	char buf[64];
	snprintf(buf, sizeof buf, "%s", path);
	const json_t *v = o;
	for (char *tok = strtok(buf, "."); tok; tok = strtok(NULL, "."))
		v = json_object_get(v, tok);
	return json_number_value(v);
}

static long long jll(const json_t *o, const char *path)
{
	return (long long)jnum(o, path);
}

/* A string at a dotted path, "" when absent. */
static const char *jstr(const json_t *o, const char *path)
{
	char buf[128];
	snprintf(buf, sizeof buf, "%s", path);
	const json_t *v = o;
	for (char *tok = strtok(buf, "."); tok; tok = strtok(NULL, "."))
		v = json_object_get(v, tok);
	return json_string_value(v) ? json_string_value(v) : "";
}

/* A USD figure as micro-USD. */
static long long jmicro(const json_t *o, const char *path)
{
	return llround(jnum(o, path) * 1e6);
}

/* The ledger balances: reserved = settled + released + reaped, nothing held. */
static void ledger_balances(const char *project, long long limit)
{
	json_t *st = NULL;
	for (int i = 0; i < 100; i++) { /* calls still ending, then their settlements */
		if (GW)
			aw_llm_flush(GW);
		json_decref(st);
		st = budget_status(project);
		if (jll(st, "reserved") == 0)
			break;
		usleep(50000);
	}
	printf("budget %s: limit %lld settled %lld reserved %lld | ledger reserve %lld settle "
	       "%lld release %lld reap %lld | USD settled %.6f reserved %.6f\n",
	       project, jll(st, "limit"), jll(st, "settled"), jll(st, "reserved"),
	       jll(st, "ledger.reserve.tokens"), jll(st, "ledger.settle.tokens"),
	       jll(st, "ledger.release.tokens"), jll(st, "ledger.reap.tokens"),
	       jnum(st, "cost_settled_usd"), jnum(st, "cost_reserved_usd"));
	if (limit >= 0)
		assert_true(jll(st, "settled") <= limit);
	assert_int_equal(jll(st, "reserved"), 0);
	assert_int_equal(jmicro(st, "cost_reserved_usd"), 0);
	static const char *const m[] = {"tokens", "cost_usd"};
	for (int k = 0; k < 2; k++) {
		char r[40], s_[40], l[40], p[40];
		snprintf(r, sizeof r, "ledger.reserve.%s", m[k]);
		snprintf(s_, sizeof s_, "ledger.settle.%s", m[k]);
		snprintf(l, sizeof l, "ledger.release.%s", m[k]);
		snprintf(p, sizeof p, "ledger.reap.%s", m[k]);
		long long (*get)(const json_t *, const char *) = k ? jmicro : jll;
		assert_int_equal(get(st, r), get(st, s_) + get(st, l) + get(st, p));
	}
	/* what was billed past a reservation is settled too, as an overshoot */
	assert_int_equal(jll(st, "settled"), jll(st, "ledger.settle.tokens") +
						     jll(st, "ledger.reap.tokens") +
						     jll(st, "ledger.overshoot.tokens"));
	assert_int_equal(jmicro(st, "cost_settled_usd"),
			 jmicro(st, "ledger.settle.cost_usd") + jmicro(st, "ledger.reap.cost_usd") +
				 jmicro(st, "ledger.overshoot.cost_usd"));
	json_decref(st);
}

typedef struct {
	const char *project;
	int ok, refused, other, cut;
	long long tokens;
	pthread_mutex_t mu;
} crowd;

static void *budget_caller(void *p)
{
	crowd *cw = p;
	aw_err e;
	aw_error err = {0};
	aw_ctx ctx;
	aw_test_ctx(&ctx, cw->project, AW_SCOPE_WORKER, "agent-1");
	json_t *req =
		json_pack("{s:s,s:b,s:I,s:[{s:s,s:s}]}", "model", "chat", "stream", 1, "max_tokens",
			  (json_int_t)40, "messages", "role", "user", "content", "hello");
	waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
	aw_llm_call *c = NULL;
	e = aw_llm_start(GW, &ctx, req, NULL, w_wake, &w, &c, &err);
	json_decref(req);
	char *s = NULL;
	if (!e) {
		char *body = NULL;
		aw_llm_state st;
		while ((st = aw_llm_head(c, w_park, NULL, &body, &err)) == AW_LLM_WAIT)
			w_wait(&w);
		if (st == AW_LLM_FAILED) {
			e = err.err;
		} else {
			aw_buf out = AW_BUF_INIT(1 << 20);
			char buf[512];
			for (ssize_t n; (n = aw_llm_read(c, buf, sizeof buf, w_park, NULL)) >= 0;)
				if (n == 0)
					w_wait(&w);
				else
					aw_buf_add(&out, buf, (size_t)n);
			s = aw_buf_take(&out);
		}
		aw_llm_release(c);
	}
	pthread_mutex_lock(&cw->mu);
	if (s && strstr(s, "E-BUDGET-001"))
		cw->cut++;
	else if (s && strstr(s, "[DONE]"))
		cw->ok++;
	else if (e == AW_E_BUDGET_EXHAUSTED || e == AW_E_BUDGET_SUSPENDED)
		cw->refused++;
	else
		cw->other++;
	pthread_mutex_unlock(&cw->mu);
	free(s);
	return NULL;
}

static void crowd_run(crowd *cw, int n)
{
	pthread_t t[64];
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, budget_caller, cw);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

static void test_budget(void **state)
{
	(void)state;
	gateway_up(1000, 10000, NULL);
	/* 64 streaming callers, each asking for up to 40 tokens of a 600-token day */
	const char *c[] = {"openai=b;tokens=30", NULL};
	set_policy("beta", c, NULL);
	set_budget("beta", 600, "block");
	crowd cw = {"beta", 0, 0, 0, 0, 0, PTHREAD_MUTEX_INITIALIZER};
	crowd_run(&cw, 64);
	printf("budget 600, 64 streams: %d answered, %d refused, %d other\n", cw.ok, cw.refused,
	       cw.other);
	assert_int_equal(cw.ok + cw.refused, 64);
	assert_true(cw.ok > 0 && cw.refused > 0);
	ledger_balances("beta", 600);
	/* the alerts' series: the share settled of the day's limit, no overshoot */
	json_t *st = budget_status("beta");
	char *m = aw_metrics_render();
	const char *r = strstr(m, "awooop_budget_used_ratio{project=\"beta\"} ");
	assert_non_null(r);
	double ratio = strtod(strchr(r, '}') + 2, NULL);
	assert_true(fabs(ratio - (double)jll(st, "settled") / 600.0) < 1e-9);
	assert_null(strstr(m, "project=\"beta\",event=\"overshoot\""));
	free(m);
	json_decref(st);

	/* an upstream that sends no usage: the stream is counted */
	set_budget("beta", 100000, "block");
	const char *c2[] = {"openai=b;tokens=30;nousage=1", NULL};
	set_policy("beta", c2, NULL);
	crowd cw2 = {"beta", 0, 0, 0, 0, 0, PTHREAD_MUTEX_INITIALIZER};
	json_t *before = budget_status("beta");
	crowd_run(&cw2, 4);
	assert_int_equal(cw2.ok, 4);
	ledger_balances("beta", 100000);
	json_t *after = budget_status("beta");
	/* 4 x (the prompt's bound + 30 content events and the finish event) */
	assert_int_equal(jll(after, "settled") - jll(before, "settled"), 4 * (HELLO_BOUND + 31));
	json_decref(before);
	json_decref(after);

	/* a client that goes away mid-stream: settled for what was streamed */
	const char *c3[] = {"openai=b;tokens=40;tps=20", NULL};
	set_policy("beta", c3, NULL);
	before = budget_status("beta");
	aw_ctx ctx;
	aw_test_ctx(&ctx, "beta", AW_SCOPE_WORKER, "agent-1");
	json_t *req =
		json_pack("{s:s,s:b,s:I,s:[{s:s,s:s}]}", "model", "chat", "stream", 1, "max_tokens",
			  (json_int_t)40, "messages", "role", "user", "content", "hello");
	waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
	aw_llm_call *call = NULL;
	aw_error err = {0};
	assert_int_equal(aw_llm_start(GW, &ctx, req, NULL, w_wake, &w, &call, &err), AW_OK);
	json_decref(req);
	char *body = NULL;
	while (aw_llm_head(call, w_park, NULL, &body, &err) == AW_LLM_WAIT)
		w_wait(&w);
	usleep(300000); /* ~6 of 40 tokens */
	aw_llm_release(call);
	ledger_balances("beta", 100000);
	after = budget_status("beta");
	long long charged = jll(after, "settled") - jll(before, "settled");
	printf("client gone after ~0.3 s of a 2 s stream: charged %lld of %d reserved\n", charged,
	       HELLO_BOUND + 40);
	assert_true(charged > HELLO_BOUND && charged < HELLO_BOUND + 20);
	json_decref(before);
	json_decref(after);
	gateway_down();
}

static void test_budget_kill(void **state)
{
	(void)state;
	gateway_up(1000, 10000, NULL);
	/* 16 slow streams hold most of a small budget; the 17th call is refused,
	 * which suspends the project: the 16 are cut, new calls refused */
	const char *c[] = {"openai=k;tokens=40;tps=10", NULL};
	set_policy("beta", c, NULL);
	json_t *st0 = budget_status("beta");
	long long spent = jll(st0, "settled");
	json_decref(st0);
	/* 16 x (prompt + 40) reserved, 5 left: less than a prompt */
	set_budget("beta", spent + 16 * (HELLO_BOUND + 40) + 5, "kill");
	/* a run of the project, queued (no worker here): line 3 cancels it */
	aw_ctx opc;
	aw_test_ctx(&opc, "beta", AW_SCOPE_OPERATOR, "operator");
	aw_run_request rreq;
	aw_error rerr = {0};
	const char *rbody = "{\"workflow\":[{\"kind\":\"sleep\",\"args\":{\"ms\":1000}}]}";
	assert_int_equal(aw_run_request_decode(rbody, strlen(rbody), &rreq, &rerr), AW_OK);
	aw_run queued;
	int replayed = 0;
	assert_int_equal(aw_run_submit(S, &opc, &rreq, NULL, &queued, &replayed, &rerr), AW_OK);
	aw_run_request_free(&rreq);
	crowd cw = {"beta", 0, 0, 0, 0, 0, PTHREAD_MUTEX_INITIALIZER};
	pthread_t t[16];
	for (int i = 0; i < 16; i++)
		pthread_create(&t[i], NULL, budget_caller, &cw);
	usleep(500000); /* all 16 are streaming */
	json_t *resp = NULL;
	aw_error err = {0};
	int64_t t0 = aw_clock_mono_ns();
	assert_int_equal(
		ask("beta", "chat", json_pack("{s:I}", "max_tokens", (json_int_t)40), &resp, &err),
		AW_E_BUDGET_EXHAUSTED);
	for (int i = 0; i < 16; i++)
		pthread_join(t[i], NULL);
	double cut_ms = (double)(aw_clock_mono_ns() - t0) / 1e6;
	printf("kill: 16 streams cut %d, finished %d, in %.0f ms after the crossing\n", cw.cut,
	       cw.ok, cut_ms);
	assert_int_equal(cw.cut, 16);
	assert_true(cut_ms < 1000);
	assert_int_equal(ask("beta", "chat", NULL, &resp, &err), AW_E_BUDGET_SUSPENDED);
	char *m = aw_metrics_render();
	assert_non_null(strstr(m, "awooop_budget_events_total{project=\"beta\",event=\"cut\"} 16"));
	assert_non_null(
		strstr(m, "awooop_budget_events_total{project=\"beta\",event=\"suspended\"} 1"));
	free(m);
	aw_run after_kill;
	int ns = 0;
	assert_int_equal(aw_run_get(S, &opc, queued.run_id, &after_kill, NULL, &ns, &rerr), AW_OK);
	assert_string_equal(after_kill.state, "cancelled");
	aw_run_free(&after_kill);
	aw_run_free(&queued);
	json_t *st = budget_status("beta");
	assert_true(json_is_true(json_object_get(st, "suspended")));
	/* line 3 is the project's own budget: the project lifts it */
	assert_string_equal(jstr(st, "suspension.imposed_by"), "budget");
	assert_string_equal(jstr(st, "suspension.lifted_by"), "project");
	json_decref(st);
	ledger_balances("beta", spent + 16 * (HELLO_BOUND + 40) + 5);
	/* resume (with a new day's worth of budget): calls work again */
	aw_ctx op;
	aw_test_ctx(&op, "beta", AW_SCOPE_OPERATOR, "operator");
	set_budget("beta", 1000000, "kill");
	assert_int_equal(aw_budget_resume(S, &op, &err), AW_OK);
	const char *c2[] = {"openai=k", NULL};
	set_policy("beta", c2, NULL);
	answered_by("beta", "A");
	/* the audit trail has the suspension and the resumption */
	aw_audit_row *rows = NULL;
	int n = 0;
	aw_txn *tx = NULL;
	assert_int_equal(aw_store_begin(S, &op, AW_TXN_READ, &tx, &err), AW_OK);
	assert_int_equal(aw_store_audit_list(tx, 0, "budget.suspend", "", 10, &rows, &n, &err),
			 AW_OK);
	assert_int_equal(n, 1);
	aw_audit_rows_free(rows, n);
	assert_int_equal(aw_store_audit_list(tx, 0, "budget.resume", "", 10, &rows, &n, &err),
			 AW_OK);
	assert_int_equal(n, 1);
	aw_audit_rows_free(rows, n);
	aw_store_rollback(tx);
	gateway_down();
}

static void test_budget_reap(void **state)
{
	(void)state;
	aw_error err = {0};
	aw_policy_opts po = {.mode = AW_GUARD_STRICT};
	assert_int_equal(aw_policy_cache_new(S, C, NULL, &po, &PC, &err), AW_OK);
	aw_ctx ctx;
	aw_test_ctx(&ctx, "beta", AW_SCOPE_WORKER, "w");
	set_budget("beta", 10000000, "block");
	json_t *st0 = budget_status("beta");
	long long reaped0 = jll(st0, "ledger.reap.tokens");
	json_decref(st0);
	/* a holder that dies right after reserving */
	aw_budget_hold h;
	const char *models[] = {"m"};
	aw_budget_price prices[1];
	aw_budget_ask da = {.call_id = "dead-call-1",
			    .run_id = "",
			    .holder = "dead-holder",
			    .prompt = 50,
			    .max_out = 100,
			    .lease_ms = 300,
			    .models = models,
			    .nmodels = 1,
			    .prices = prices};
	assert_int_equal(aw_budget_admit(S, PC, &ctx, &da, &h, &err), AW_OK);
	assert_true(h.active);
	json_t *st = budget_status("beta");
	assert_int_equal(jll(st, "reserved"), 150);
	json_decref(st);
	int reaped = 0;
	assert_int_equal(aw_budget_reap(S, &ctx, &reaped, &err), AW_OK);
	assert_int_equal(reaped, 0); /* its lease runs */
	usleep(400000);
	assert_int_equal(aw_budget_reap(S, &ctx, &reaped, &err), AW_OK);
	assert_int_equal(reaped, 1);
	st = budget_status("beta");
	assert_int_equal(jll(st, "reserved"), 0);
	assert_int_equal(jll(st, "ledger.reap.tokens") - reaped0,
			 150); /* charged at the reservation */
	json_decref(st);
	ledger_balances("beta", 10000000);
	aw_policy_cache_free(PC);
	PC = NULL;
	/* a dead holder's reservation takes all that is left, of a project no
	 * live process has served: the calls refused for it make the refusing
	 * process reap it once its lease ended (charged in full: the budget
	 * stays spent, the ledger balances) */
	gateway_up(1000, 10000, NULL);
	const char *c[] = {"openai=dead;tokens=30", NULL};
	set_policy("beta", c, NULL);
	st = budget_status("beta");
	set_budget("beta", jll(st, "settled") + 1000, "block");
	json_decref(st);
	da.call_id = "dead-call-2";
	da.max_out = -1; /* clamped to all that remains */
	assert_int_equal(aw_budget_admit(S, PC, &ctx, &da, &h, &err), AW_OK);
	assert_int_equal(da.max_out, 1000 - 50);
	json_t *resp = NULL;
	assert_int_equal(ask("beta", "chat", NULL, &resp, &err), AW_E_BUDGET_EXHAUSTED);
	long long reserved = -1;
	for (int i = 0; i < 100 && reserved; i++) { /* the watcher reaps every lease/4 */
		usleep(50000);
		st = budget_status("beta");
		reserved = jll(st, "reserved");
		json_decref(st);
	}
	assert_int_equal(reserved, 0);
	ledger_balances("beta", 10000000);
	gateway_down();
}

/* Submits a run of project (queued: no worker claims it here). */
static void submit_run(const char *project, char id[AW_UUID_STR_LEN + 1])
{
	aw_ctx opc;
	aw_test_ctx(&opc, project, AW_SCOPE_OPERATOR, "operator");
	aw_run_request rreq;
	aw_error rerr = {0};
	const char *rbody = "{\"workflow\":[{\"kind\":\"sleep\",\"args\":{\"ms\":1000}}]}";
	assert_int_equal(aw_run_request_decode(rbody, strlen(rbody), &rreq, &rerr), AW_OK);
	aw_run r;
	int replayed = 0;
	assert_int_equal(aw_run_submit(S, &opc, &rreq, NULL, &r, &replayed, &rerr), AW_OK);
	aw_run_request_free(&rreq);
	snprintf(id, AW_UUID_STR_LEN + 1, "%s", r.run_id);
	aw_run_free(&r);
}

/* A suspension remembers who imposed it: the project's operator lifts its
 * own, never the platform's. */
static void test_budget_suspension_owner(void **state)
{
	(void)state;
	gateway_up(1000, 10000, NULL);
	const char *c[] = {"openai=k", NULL};
	set_policy("beta", c, NULL);
	set_budget("beta", 100000000, "block");
	aw_ctx op, op2, plat;
	aw_test_ctx(&op, "beta", AW_SCOPE_OPERATOR, "operator");
	aw_test_ctx(&op2, "beta", AW_SCOPE_PROJECT_ADMIN, "beta-admin");
	aw_test_ctx(&plat, "beta", AW_SCOPE_PLATFORM_ADMIN, "platform-oncall");
	aw_error err = {0};
	json_t *resp = NULL;
	/* the project's own: its operator lifts it */
	assert_int_equal(aw_budget_suspend(S, &op, "tenant drill", &err), AW_OK);
	json_t *st = budget_status("beta");
	assert_string_equal(jstr(st, "suspension.by"), "operator");
	assert_string_equal(jstr(st, "suspension.imposed_by"), "project");
	assert_true(json_is_false(json_object_get(json_object_get(st, "suspension"), "platform")));
	json_decref(st);
	assert_int_equal(aw_budget_resume(S, &op, &err), AW_OK);
	answered_by("beta", "A");
	/* the platform's: the project cannot lift it, nor make it its own by
	 * suspending again */
	assert_int_equal(aw_budget_suspend(S, &plat, "abuse report 7", &err), AW_OK);
	st = budget_status("beta");
	assert_true(json_is_true(json_object_get(st, "suspended")));
	assert_string_equal(jstr(st, "suspension.by"), "platform-oncall");
	assert_string_equal(jstr(st, "suspension.imposed_by"), "platform");
	assert_string_equal(jstr(st, "suspension.lifted_by"), "platform");
	assert_true(json_is_true(json_object_get(json_object_get(st, "suspension"), "platform")));
	json_decref(st);
	assert_int_equal(ask("beta", "chat", NULL, &resp, &err), AW_E_BUDGET_SUSPENDED);
	assert_non_null(strstr(err.msg, "only the platform lifts it"));
	assert_int_equal(aw_budget_suspend(S, &op, "mine now", &err), AW_OK);
	assert_int_equal(aw_budget_resume(S, &op, &err), AW_E_BUDGET_PLATFORM);
	assert_non_null(strstr(err.msg, "abuse report 7"));
	assert_int_equal(aw_budget_resume(S, &op2, &err), AW_E_BUDGET_PLATFORM);
	st = budget_status("beta");
	assert_true(json_is_true(json_object_get(st, "suspended")));
	assert_string_equal(jstr(st, "reason"), "abuse report 7");
	assert_string_equal(jstr(st, "suspension.imposed_by"), "platform");
	json_decref(st);
	assert_int_equal(ask("beta", "chat", NULL, &resp, &err), AW_E_BUDGET_SUSPENDED);
	/* the platform lifts it (a system context is the platform's) */
	aw_ctx sys;
	aw_ctx_system(&sys, "beta");
	assert_int_equal(aw_budget_resume(S, &sys, &err), AW_OK);
	st = budget_status("beta");
	assert_true(json_is_false(json_object_get(st, "suspended")));
	assert_null(json_object_get(st, "suspension"));
	json_decref(st);
	answered_by("beta", "A");
	/* a platform suspension over the project's own becomes the platform's */
	assert_int_equal(aw_budget_suspend(S, &op, "tenant first", &err), AW_OK);
	assert_int_equal(aw_budget_suspend(S, &sys, "platform too", &err), AW_OK);
	assert_int_equal(aw_budget_resume(S, &op, &err), AW_E_BUDGET_PLATFORM);
	assert_int_equal(aw_budget_resume(S, &plat, &err), AW_OK);
	answered_by("beta", "A");
	gateway_down();
}

/* A suspension made in another process reaches this one's calls in flight
 * over the bus within 0.5 s, with this process's poll of the store a minute
 * away (issue 41). Two gateways on two Redis bus connections stand for the
 * two processes. */
static void test_kill_over_bus(void **state)
{
	(void)state;
	aw_test_redis_start(&R);
	aw_error err = {0};
	aw_bus *mine = NULL, *theirs = NULL;
	assert_int_equal(aw_bus_open(R.url, &mine, &err), AW_OK);
	assert_int_equal(aw_bus_open(R.url, &theirs, &err), AW_OK);
	WATCH_BUS = 60000;
	BUS = theirs;
	gateway_up(1000, 10000, NULL);
	aw_llm *other = GW;
	aw_policy_cache *other_pc = PC;
	BUS = mine;
	gateway_up(1000, 10000, NULL);
	BUS = NULL;
	WATCH_BUS = 0;
	for (int i = 0; i < 100 && !(aw_policy_kill_remote(PC) && aw_policy_kill_remote(other_pc));
	     i++)
		usleep(20000);
	assert_true(aw_policy_kill_remote(PC));
	usleep(1000000); /* this gateway's poll is now a minute away */
	const char *c[] = {"openai=k;tokens=40;tps=10", NULL};
	set_policy("beta", c, NULL);
	set_budget("beta", 100000000, "block");
	crowd cw = {"beta", 0, 0, 0, 0, 0, PTHREAD_MUTEX_INITIALIZER};
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, budget_caller, &cw);
	usleep(500000); /* all 4 are streaming here (4 s each) */
	aw_ctx op;
	aw_test_ctx(&op, "beta", AW_SCOPE_OPERATOR, "operator");
	int64_t t0 = aw_clock_mono_ns();
	/* the other process: suspends, cuts its own (none) and announces */
	assert_int_equal(aw_budget_suspend(S, &op, "drill over the bus", &err), AW_OK);
	aw_llm_kill(other, "beta");
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	double ms = (double)(aw_clock_mono_ns() - t0) / 1e6;
	printf("suspended in another process: %d of 4 streams here cut in %.0f ms\n", cw.cut, ms);
	assert_int_equal(cw.cut, 4);
	assert_true(ms < 500 * aw_test_timeout_scale());
	assert_int_equal(aw_budget_resume(S, &op, &err), AW_OK);
	gateway_down();
	aw_llm_stop(other);
	aw_llm_free(other);
	aw_policy_cache_free(other_pc);
	aw_bus_close(mine);
	aw_bus_close(theirs);
}

static aw_err ask_run(const char *run_id, json_t **resp, aw_error *err)
{
	aw_ctx ctx;
	aw_test_ctx(&ctx, "beta", AW_SCOPE_WORKER, "agent-1");
	json_t *req = json_pack("{s:s,s:I,s:[{s:s,s:s}]}", "model", "chat", "max_tokens",
				(json_int_t)40, "messages", "role", "user", "content", "hello");
	aw_llm_meta meta = {.run_id = run_id, .step_no = 1};
	aw_err e = aw_llm_complete(GW, &ctx, req, &meta, resp, err);
	json_decref(req);
	return e;
}

static void test_budget_per_run(void **state)
{
	(void)state;
	gateway_up(1000, 10000, NULL);
	const char *c[] = {"openai=r;tokens=30", NULL};
	set_policy("beta", c, NULL);
	aw_ctx pub;
	aw_test_ctx(&pub, "beta", AW_SCOPE_OPERATOR, "publisher");
	activate("beta", "budget", "default",
		 json_pack("{s:s,s:I,s:I,s:s}", "period", "day", "token_limit",
			   (json_int_t)100000000, "per_run_token_limit", (json_int_t)100,
			   "action_on_exceed", "block"),
		 NULL);
	/* two live runs of the project (queued: no worker here) */
	char run[AW_UUID_STR_LEN + 1], other[AW_UUID_STR_LEN + 1], made_up[AW_UUID_STR_LEN + 1];
	submit_run("beta", run);
	submit_run("beta", other);
	aw_uuid7_str(made_up);
	json_t *resp = NULL;
	aw_error err = {0};
	/* under a per-run limit a call outside a live run is refused: no run
	 * id, a made-up one, another project's (alpha's is unknown here) */
	assert_int_equal(ask_run(NULL, &resp, &err), AW_E_BUDGET_NO_RUN);
	assert_non_null(strstr(err.msg, "X-Awooop-Run-Id"));
	assert_int_equal(ask_run("", &resp, &err), AW_E_BUDGET_NO_RUN);
	assert_int_equal(ask_run(made_up, &resp, &err), AW_E_BUDGET_NO_RUN);
	assert_non_null(strstr(err.msg, "no run of this project"));
	/* 100 tokens for the run: 39 + 39 (9 in + 30 out each), then the third
	 * call's answer is clamped to 22 - 17 (the prompt's bound) = 5 tokens,
	 * then the run is spent */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(ask_run(run, &resp, &err), AW_OK);
		json_decref(resp);
		aw_llm_flush(GW); /* settled */
	}
	assert_int_equal(ask_run(run, &resp, &err), AW_OK);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(resp, "usage"),
							    "completion_tokens")),
			 5);
	json_decref(resp);
	aw_llm_flush(GW);
	assert_int_equal(ask_run(run, &resp, &err), AW_E_BUDGET_RUN);
	assert_non_null(strstr(err.msg, run));
	assert_int_equal(ask_run(other, &resp, &err), AW_OK); /* another run has its own */
	json_decref(resp);
	/* a finished run's id does not call either */
	aw_ctx opc;
	aw_test_ctx(&opc, "beta", AW_SCOPE_OPERATOR, "operator");
	aw_run done;
	assert_int_equal(aw_run_cancel(S, &opc, other, &done, &err), AW_OK);
	aw_run_free(&done);
	assert_int_equal(ask_run(other, &resp, &err), AW_E_BUDGET_NO_RUN);
	assert_non_null(strstr(err.msg, "cancelled"));
	char *m = aw_metrics_render();
	assert_non_null(
		strstr(m, "awooop_budget_events_total{project=\"beta\",event=\"refused\"}"));
	free(m);
	ledger_balances("beta", 100000000);
	/* without a per-run limit a call needs no run */
	set_budget("beta", 100000000, "block");
	assert_int_equal(ask_run(NULL, &resp, &err), AW_OK);
	json_decref(resp);
	aw_llm_flush(GW);
	gateway_down();
}

/* Cost: 64 streams against a cost limit far below their demand, at the
 * prices of the budget; the cost ledger balances, each model's charge is
 * listed, a 50% alert is recorded once; an unpriced model is refused. */
static void test_budget_cost(void **state)
{
	(void)state;
	gateway_up(1000, 10000, NULL);
	const char *c[] = {"openai=priced;tokens=30", NULL};
	set_policy("gamma", c, NULL);
	/* each call reserves 17 x 10 + 40 x 30 = 1,370 micro-USD: 0.01 USD holds 7 */
	activate("gamma", "budget", "default",
		 json_pack("{s:s,s:I,s:f,s:{s:{s:f,s:f},s:{s:f,s:f}},s:s,s:[i]}", "period", "day",
			   "token_limit", (json_int_t)1000000000, "cost_limit_usd", 0.01, "prices",
			   "priced;tokens=30", "input_per_mtok", 10.0, "output_per_mtok", 30.0, "*",
			   "input_per_mtok", 1000.0, "output_per_mtok", 1000.0, "action_on_exceed",
			   "block", "alert_at_percent", 50),
		 NULL);
	crowd cw = {"gamma", 0, 0, 0, 0, 0, PTHREAD_MUTEX_INITIALIZER};
	crowd_run(&cw, 64);
	printf("cost limit 0.01 USD, 64 streams: %d answered, %d refused, %d other\n", cw.ok,
	       cw.refused, cw.other);
	assert_int_equal(cw.ok + cw.refused, 64);
	assert_true(cw.ok > 0 && cw.refused > 0);
	ledger_balances("gamma", 1000000000);
	json_t *st = budget_status("gamma");
	printf("cost settled %.6f of %.6f USD\n", jnum(st, "cost_settled_usd"),
	       jnum(st, "cost_limit_usd"));
	assert_true(jmicro(st, "cost_settled_usd") <= 10000);
	assert_true(jmicro(st, "cost_settled_usd") > 5000); /* it spent, and crossed 50% */
	json_t *m0 = json_array_get(json_object_get(st, "models"), 0);
	assert_string_equal(json_string_value(json_object_get(m0, "model")), "priced;tokens=30");
	assert_int_equal(jll(m0, "calls"), cw.ok);
	assert_int_equal(jmicro(m0, "cost_usd"), jmicro(st, "cost_settled_usd"));
	json_decref(st);
	/* what remains is spent by calls clamped to it; then the refusal names
	 * the cost limit and when it resets */
	json_t *resp = NULL;
	aw_error err = {0};
	aw_err e;
	int clamped = 0;
	while ((e = ask("gamma", "chat", json_pack("{s:I}", "max_tokens", (json_int_t)40), &resp,
			&err)) == AW_OK) {
		json_decref(resp);
		aw_llm_flush(GW);
		assert_true(++clamped < 10);
	}
	assert_int_equal(e, AW_E_BUDGET_EXHAUSTED);
	assert_non_null(strstr(err.msg, "cost budget"));
	assert_non_null(strstr(err.msg, "resets at"));
	/* the alert at 50% was recorded exactly once */
	aw_ctx op;
	aw_test_ctx(&op, "gamma", AW_SCOPE_OPERATOR, "operator");
	aw_audit_row *rows = NULL;
	int n = 0;
	aw_txn *tx = NULL;
	assert_int_equal(aw_store_begin(S, &op, AW_TXN_READ, &tx, &err), AW_OK);
	assert_int_equal(aw_store_audit_list(tx, 0, "budget.alert", "", 10, &rows, &n, &err),
			 AW_OK);
	assert_int_equal(n, 1);
	aw_audit_rows_free(rows, n);
	aw_store_rollback(tx);
	/* the ledger's lines: a reserve for every admitted call, a settle each */
	json_t *h = NULL;
	assert_int_equal(aw_budget_history(S, &op, NULL, NULL, 0, 1000, &h, &err), AW_OK);
	int reserves = 0, settles = 0;
	size_t i;
	json_t *v;
	json_array_foreach (json_object_get(h, "entries"), i, v) {
		const char *k = json_string_value(json_object_get(v, "kind"));
		reserves += !strcmp(k, "reserve");
		settles += !strcmp(k, "settle");
	}
	assert_int_equal(reserves, cw.ok + clamped);
	assert_int_equal(settles, cw.ok + clamped);
	ledger_balances("gamma", 1000000000);
	st = budget_status("gamma");
	assert_true(jmicro(st, "cost_settled_usd") <= 10000);
	json_decref(st);
	json_decref(h);
	/* a cost limit and a model it cannot price: refused before any upstream */
	activate("gamma", "budget", "default",
		 json_pack("{s:s,s:I,s:f,s:{s:{s:f,s:f}},s:s}", "period", "day", "token_limit",
			   (json_int_t)1000000000, "cost_limit_usd", 100.0, "prices", "other",
			   "input_per_mtok", 1.0, "output_per_mtok", 1.0, "action_on_exceed",
			   "block"),
		 NULL);
	assert_int_equal(ask("gamma", "chat", NULL, &resp, &err), AW_E_BUDGET_PRICE);
	assert_non_null(strstr(err.msg, "priced;tokens=30"));
	gateway_down();
}

/* A rolling window: spend ages out when its hour leaves the window. */
static void test_budget_rolling(void **state)
{
	(void)state;
	gateway_up(1000, 10000, NULL);
	const char *c[] = {"openai=roll;tokens=30", NULL};
	set_policy("delta", c, NULL);
	activate("delta", "budget", "default",
		 json_pack("{s:s,s:i,s:I,s:s}", "period", "rolling", "window_hours", 2,
			   "token_limit", (json_int_t)150, "action_on_exceed", "block"),
		 NULL);
	json_t *resp = NULL;
	aw_error err = {0};
	int ok = 0;
	aw_err e;
	while ((e = ask("delta", "chat", json_pack("{s:I}", "max_tokens", (json_int_t)40), &resp,
			&err)) == AW_OK) {
		json_decref(resp);
		aw_llm_flush(GW);
		assert_true(++ok < 10);
	}
	assert_int_equal(e, AW_E_BUDGET_EXHAUSTED);
	assert_non_null(strstr(err.msg, "ages out"));
	printf("rolling window of 150 tokens: %d calls, then refused\n", ok);
	assert_true(ok >= 2);
	json_t *st = budget_status("delta");
	assert_string_equal(json_string_value(json_object_get(st, "period")), "rolling");
	assert_true(jll(st, "settled") <= 150 && jll(st, "settled") > 0);
	json_decref(st);
	budget_test_shift_hours(1); /* the spend's hour is still in the window */
	assert_int_equal(
		ask("delta", "chat", json_pack("{s:I}", "max_tokens", (json_int_t)40), &resp, &err),
		AW_E_BUDGET_EXHAUSTED);
	budget_test_shift_hours(2); /* now it is not */
	st = budget_status("delta");
	assert_int_equal(jll(st, "settled"), 0);
	json_decref(st);
	assert_int_equal(
		ask("delta", "chat", json_pack("{s:I}", "max_tokens", (json_int_t)40), &resp, &err),
		AW_OK);
	json_decref(resp);
	aw_llm_flush(GW);
	st = budget_status("delta");
	assert_true(jll(st, "settled") > 0 && jll(st, "reserved") == 0);
	json_decref(st);
	budget_test_shift_hours(0);
	gateway_down();
}

/* ------------------------------------------------------------ issue 40: exact budget */

/* A request's JSON (a fresh reference) with extra's members, to a shape. */
static json_t *shape_req(const char *text, json_t *extra)
{
	json_t *req = json_pack("{s:s,s:[{s:s,s:s}]}", "model", "chat", "messages", "role", "user",
				"content", text);
	if (extra)
		json_object_update(req, extra);
	json_decref(extra);
	return req;
}

/* Calls with req until the budget refuses (at most 8 calls) against a fresh
 * limit of `limit` tokens: what the upstream billed (the settlements: they
 * are not capped), the overshoot, the calls answered and the last code. */
static void shape_run(const char *project, const json_t *req, long long limit, long long *billed,
		      long long *overshoot, int *answered, const char **last)
{
	json_t *st0 = budget_status(project);
	long long settled0 = jll(st0, "settled"), over0 = jll(st0, "ledger.overshoot.tokens");
	json_decref(st0);
	set_budget(project, settled0 + limit, "block");
	aw_ctx ctx;
	aw_test_ctx(&ctx, project, AW_SCOPE_WORKER, "agent-1");
	*answered = 0;
	*last = "OK";
	for (int i = 0; i < 8; i++) {
		json_t *resp = NULL;
		aw_error err = {0};
		aw_err e = aw_llm_complete(GW, &ctx, req, NULL, &resp, &err);
		json_decref(resp);
		aw_llm_flush(GW);
		if (e == AW_E_BUDGET_EXHAUSTED) {
			*last = aw_err_code(e);
			break;
		}
		if (e && e != AW_E_SCHEMA_OUTPUT)
			fail_msg("shape call: %s %s", aw_err_code(e), err.msg);
		*last = e ? aw_err_code(e) : "OK";
		*answered += !e;
	}
	ledger_balances(project, -1);
	json_t *st = budget_status(project);
	*billed = jll(st, "settled") - settled0;
	*overshoot = jll(st, "ledger.overshoot.tokens") - over0;
	json_decref(st);
}

/* Each request shape that made the upstream bill past a 2,000-token limit
 * (issue 40 s3: n, images, a 6 KB schema, legacy functions and function
 * calls in the history, schema retries) now bills at most the limit, with
 * no overshoot: the reservation covers what the upstream bills. */
static void test_budget_shapes(void **state)
{
	(void)state;
	gateway_up(1000, 10000, NULL);
	const char *c[] = {"openai=gpt-4o;tokens=400", NULL};
	set_policy("limits", c, NULL);
	aw_buf big = AW_BUF_INIT(1 << 20);
	for (int i = 0; i < 200; i++)
		aw_buf_addf(&big, "field %03d must hold a value. ", i);
	json_t *parts = json_array();
	json_t *low = json_array();
	for (int i = 0; i < 8; i++) {
		json_array_append_new(parts,
				      json_pack("{s:s,s:{s:s}}", "type", "image_url", "image_url",
						"url", "https://example.com/a.png"));
		json_array_append_new(low, json_pack("{s:s,s:{s:s,s:s}}", "type", "image_url",
						     "image_url", "url",
						     "https://example.com/a.png", "detail", "low"));
	}
	json_t *schema = json_pack("{s:s,s:s,s:{s:{s:s}},s:[s]}", "type", "object", "description",
				   aw_buf_str(&big), "properties", "answer", "type", "integer",
				   "required", "answer");
	struct {
		const char *name;
		json_t *req;
	} shapes[] = {
		{"n=20", shape_req("hello", json_pack("{s:i,s:i}", "n", 20, "max_tokens", 400))},
		{"8 images (auto)", json_pack("{s:s,s:[{s:s,s:o}]}", "model", "chat", "messages",
					      "role", "user", "content", json_incref(parts))},
		{"8 images (low)", json_pack("{s:s,s:[{s:s,s:o}]}", "model", "chat", "messages",
					     "role", "user", "content", json_incref(low))},
		{"6 KB response_format schema",
		 shape_req("hello", json_pack("{s:{s:s,s:{s:s,s:O}}}", "response_format", "type",
					      "json_schema", "json_schema", "name", "big", "schema",
					      schema))},
		{"functions + function_call history",
		 json_pack("{s:s,s:[{s:s,s:s},{s:s,s:n,s:{s:s,s:s}},{s:s,s:s,s:s}],s:[{s:s,s:s,s:"
			   "{s:s,s:s}}]}",
			   "model", "chat", "messages", "role", "user", "content", "look it up",
			   "role", "assistant", "content", "function_call", "name", "lookup",
			   "arguments", aw_buf_str(&big), "role", "function", "name", "lookup",
			   "content", aw_buf_str(&big), "functions", "name", "lookup",
			   "description", aw_buf_str(&big), "parameters", "type", "object", "title",
			   "args")},
	};
	int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
	for (int i = 0; i < nshapes; i++) {
		long long billed = 0, over = 0;
		int ok = 0;
		const char *last = "";
		shape_run("limits", shapes[i].req, 2000, &billed, &over, &ok, &last);
		printf("shape %-34s billed %5lld of 2000 (%.2fx), %d answered, then %s, overshoot "
		       "%lld\n",
		       shapes[i].name, billed, (double)billed / 2000, ok, last, over);
		assert_true(billed <= 2000);
		assert_int_equal(over, 0);
		json_decref(shapes[i].req);
	}
	/* schema retries resend the answer and its errors: an upstream whose
	 * answers always fail the schema */
	const char *c2[] = {"openai=gpt-4o;tokens=300;invalid=99", NULL};
	set_policy("limits", c2, NULL);
	json_t *rf = shape_req("hello",
			       json_pack("{s:{s:s,s:{s:s,s:{s:s,s:{s:{s:s}},s:[s]}}}}",
					 "response_format", "type", "json_schema", "json_schema",
					 "name", "n", "schema", "type", "object", "properties",
					 "answer", "type", "integer", "required", "answer"));
	for (int k = 0; k < 2; k++) { /* a tight limit, then one that holds every retry */
		long long limit = k ? 20000 : 2000, billed = 0, over = 0;
		int ok = 0;
		long a0 = stat_of(&A, "requests");
		const char *last = "";
		shape_run("limits", rf, limit, &billed, &over, &ok, &last);
		printf("shape schema retries (limit %lld)        billed %5lld (%.2fx), %ld attempts, "
		       "then %s, overshoot %lld\n",
		       limit, billed, (double)billed / (double)limit, stat_of(&A, "requests") - a0,
		       last, over);
		assert_true(billed <= limit);
		assert_int_equal(over, 0);
	}
	json_decref(rf);
	/* images to a model the budget cannot price: refused */
	const char *c3[] = {"openai=llava;tokens=10", NULL};
	set_policy("limits", c3, NULL);
	json_t *resp = NULL;
	aw_error err = {0};
	aw_ctx ctx;
	aw_test_ctx(&ctx, "limits", AW_SCOPE_WORKER, "agent-1");
	json_t *img = json_pack("{s:s,s:[{s:s,s:O}]}", "model", "chat", "messages", "role", "user",
				"content", low);
	assert_int_equal(aw_llm_complete(GW, &ctx, img, NULL, &resp, &err), AW_E_BUDGET_UNPRICED);
	json_decref(img);
	json_decref(parts);
	json_decref(low);
	json_decref(schema);
	aw_buf_free(&big);
	gateway_down();
}

/* Fields an upstream may bill that the gateway does not price: refused with
 * a stable code and a pointer, never passed through. */
static void test_budget_unpriced_fields(void **state)
{
	(void)state;
	gateway_up(1000, 10000, NULL);
	const char *c[] = {"openai=gpt-4o;tokens=10", NULL};
	set_policy("limits", c, NULL);
	struct {
		json_t *extra;
		aw_err code;
		const char *where;
	} cases[] = {
		{json_pack("{s:i}", "n_predict", 100000), AW_E_REQ_UNKNOWN_FIELD, "/n_predict"},
		{json_pack("{s:s}", "max_completion_tokens", "2000"), AW_E_REQ_INVALID,
		 "/max_completion_tokens"},
		{json_pack("{s:f}", "max_tokens", 20.5), AW_E_REQ_INVALID, "/max_tokens"},
		{json_pack("{s:{}}", "web_search_options"), AW_E_BUDGET_UNPRICED,
		 "/web_search_options"},
		{json_pack("{s:s}", "service_tier", "priority"), AW_E_BUDGET_UNPRICED,
		 "/service_tier"},
		{json_pack("{s:{s:s,s:s}}", "prediction", "type", "content", "content", "x"),
		 AW_E_BUDGET_UNPRICED, "/prediction"},
		{json_pack("{s:[s,s]}", "modalities", "text", "audio"), AW_E_BUDGET_UNPRICED,
		 "/modalities"},
		{json_pack("{s:{s:s,s:s}}", "audio", "voice", "alloy", "format", "wav"),
		 AW_E_BUDGET_UNPRICED, "/audio"},
		{json_pack("{s:i}", "n", 0), AW_E_REQ_INVALID, "/n"},
		{json_pack("{s:[{s:s,s:[{s:s,s:{s:s,s:s}}]}]}", "messages", "role", "user",
			   "content", "type", "input_audio", "input_audio", "data", "AAAA",
			   "format", "wav"),
		 AW_E_BUDGET_UNPRICED, "/messages/0/content/0"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_t *resp = NULL;
		aw_error err = {0};
		long a0 = stat_of(&A, "requests");
		aw_err e = ask("limits", "chat", cases[i].extra, &resp, &err);
		if (e != cases[i].code || strcmp(err.where, cases[i].where))
			fail_msg("case %zu: %s at '%s' (%s), expected %s at %s", i,
				 e ? aw_err_code(e) : "OK", err.where, err.msg,
				 aw_err_code(cases[i].code), cases[i].where);
		assert_int_equal(stat_of(&A, "requests"), a0); /* never reached the upstream */
	}
	/* what stays allowed: service_tier default, text modalities, n */
	json_t *resp = NULL;
	aw_error err = {0};
	assert_int_equal(ask("limits", "chat",
			     json_pack("{s:s,s:[s],s:i}", "service_tier", "default", "modalities",
				       "text", "n", 2),
			     &resp, &err),
			 AW_OK);
	assert_int_equal(json_array_size(json_object_get(resp, "choices")), 2);
	json_decref(resp);
	gateway_down();
}

/* An upstream that bills past the reservation (it ignores max_tokens): the
 * settlement records what it billed, the excess as an "overshoot" ledger
 * line and metric, never capped away. */
static void test_budget_overshoot(void **state)
{
	(void)state;
	gateway_up(1000, 10000, NULL);
	const char *c[] = {"openai=gpt-4o;tokens=500;ignoremax=1", NULL};
	set_policy("limits", c, NULL);
	json_t *req = shape_req("hello", json_pack("{s:i}", "max_tokens", 50));
	long long billed = 0, over = 0;
	int ok = 0;
	const char *last = "";
	aw_ctx op;
	aw_test_ctx(&op, "limits", AW_SCOPE_OPERATOR, "operator");
	shape_run("limits", req, 100000, &billed, &over, &ok, &last);
	printf("overshoot: %d calls billed %lld, of which %lld past their reservations\n", ok,
	       billed, over);
	/* each call reserved 17 + 50 and was billed 9 + 500 */
	assert_int_equal(ok, 8);
	assert_int_equal(billed, 8 * (HELLO_BILLED + 500));
	assert_int_equal(over, 8 * (HELLO_BILLED + 500 - (HELLO_BOUND + 50)));
	json_t *h = NULL;
	aw_error err = {0};
	assert_int_equal(aw_budget_history(S, &op, NULL, NULL, 0, 100000, &h, &err), AW_OK);
	int lines = 0;
	size_t i;
	json_t *v;
	json_array_foreach (json_object_get(h, "entries"), i, v)
		if (!strcmp(json_string_value(json_object_get(v, "kind")), "overshoot")) {
			lines++;
			assert_int_equal(json_integer_value(json_object_get(v, "tokens")),
					 HELLO_BILLED + 500 - (HELLO_BOUND + 50));
			assert_string_equal(json_string_value(json_object_get(v, "model")),
					    "gpt-4o;tokens=500;ignoremax=1");
		}
	assert_int_equal(lines, 8);
	json_decref(h);
	char *m = aw_metrics_render();
	char want[160];
	snprintf(want, sizeof want,
		 "awooop_budget_tokens_total{project=\"limits\",event=\"overshoot\"} %lld", over);
	if (!strstr(m, want))
		fail_msg("no '%s' in the metrics", want);
	free(m);
	/* the audit record says so too */
	json_t *rows = audit_rows("limits");
	json_t *b = json_object_get(json_object_get(json_array_get(rows, 0), "payload"), "budget");
	assert_int_equal(json_integer_value(json_object_get(b, "overshoot")),
			 HELLO_BILLED + 500 - (HELLO_BOUND + 50));
	json_decref(rows);
	json_decref(req);
	gateway_down();
}

/* 100 projects with calls in flight in one process: a suspension (written
 * by another process: the store) cuts every one of them, the reservations
 * of their dead holders are reaped, and the projects are no longer watched
 * once nothing of them is left (the table grows and shrinks). */
#define MANY 100
static char many[MANY][16];

static void test_watch_many(void **state)
{
	(void)state;
	gateway_up(1000, 10000, NULL);
	const char *c[] = {"openai=w;tokens=80;tps=8", NULL};
	for (int i = 0; i < MANY; i++) {
		set_policy(many[i], c, NULL);
		set_budget(many[i], 1000000, "block");
	}
	crowd cw[MANY];
	pthread_t t[MANY];
	for (int i = 0; i < MANY; i++) {
		cw[i] = (crowd){many[i], 0, 0, 0, 0, 0, PTHREAD_MUTEX_INITIALIZER};
		pthread_create(&t[i], NULL, budget_caller, &cw[i]);
	}
	/* a dead holder's reservation in each project */
	for (int i = 0; i < MANY; i++) {
		aw_ctx ctx;
		aw_test_ctx(&ctx, many[i], AW_SCOPE_WORKER, "w");
		aw_budget_hold h;
		const char *models[] = {"w"};
		aw_budget_price prices[1];
		char call[32];
		snprintf(call, sizeof call, "dead-%d", i);
		aw_budget_ask da = {.call_id = call,
				    .run_id = "",
				    .holder = "dead-holder",
				    .prompt = 10,
				    .max_out = 10,
				    .lease_ms = 300,
				    .models = models,
				    .nmodels = 1,
				    .prices = prices};
		aw_error err = {0};
		assert_int_equal(aw_budget_admit(S, PC, &ctx, &da, &h, &err), AW_OK);
	}
	/* every stream under way (80 tokens at 8/s: 10 s each; on a loaded
	 * machine the 100 callers take a while to start) */
	for (int k = 0; k < 80 && llm_test_watched(GW) < MANY; k++)
		usleep(100000);
	printf("watched: %d projects\n", llm_test_watched(GW));
	assert_true(llm_test_watched(GW) >= MANY);
	int64_t t0 = aw_clock_mono_ns();
	for (int i = 0; i < MANY; i++) {
		aw_ctx op;
		aw_test_ctx(&op, many[i], AW_SCOPE_OPERATOR, "operator");
		aw_error err = {0};
		assert_int_equal(aw_budget_suspend(S, &op, "drill", &err), AW_OK);
	}
	int cut = 0, other = 0;
	for (int i = 0; i < MANY; i++) {
		pthread_join(t[i], NULL);
		cut += cw[i].cut;
		other += cw[i].ok + cw[i].other + cw[i].refused;
	}
	printf("100 projects suspended: %d streams cut, %d not, in %.0f ms\n", cut, other,
	       (double)(aw_clock_mono_ns() - t0) / 1e6);
	assert_int_equal(cut, MANY);
	/* reaped, and no longer watched */
	int left = -1;
	for (int k = 0; k < 100 && left; k++) {
		usleep(100000);
		left = 0;
		for (int i = 0; i < MANY; i++) {
			json_t *st = budget_status(many[i]);
			left += jll(st, "reserved") > 0;
			json_decref(st);
		}
	}
	assert_int_equal(left, 0);
	for (int i = 0; i < MANY; i++) {
		json_t *st = budget_status(many[i]);
		assert_int_equal(jll(st, "ledger.reap.tokens"), 20);
		json_decref(st);
		ledger_balances(many[i], 1000000);
	}
	int watched = -1;
	for (int k = 0; k < 50 && watched; k++) {
		usleep(100000);
		watched = llm_test_watched(GW);
	}
	printf("watched after: %d projects\n", watched);
	assert_int_equal(watched, 0);
	gateway_down();
}

/* ------------------------------------------------------------ wire kinds */

static fake K, Z; /* an Anthropic Messages upstream, an Azure OpenAI one (both check the key) */

/* A gateway whose anthropic and azure_openai providers speak their own
 * APIs (K, Z), beside OpenAI (A) and Gemini's OpenAI-compatible one (G). */
static void gateway_wire_up(void)
{
	aw_error err = {0};
	aw_policy_opts po = {.mode = AW_GUARD_STRICT};
	assert_int_equal(aw_policy_cache_new(S, C, NULL, &po, &PC, &err), AW_OK);
	char ua[96], uk[96], ug[96];
	snprintf(ua, sizeof ua, "%s/v1", A.url);
	snprintf(uk, sizeof uk, "%s/v1", K.url);
	snprintf(ug, sizeof ug, "%s/v1", G.url);
	json_t *cfg = json_pack(
		"{s:{s:{s:s,s:s},s:{s:s,s:s,s:s},s:{s:s,s:s,s:s,s:s},s:{s:s,s:s}}}", "providers",
		"openai", "url", ua, "api_key", "env:AW_TEST_CANARY_KEY", "anthropic", "url", uk,
		"api", "anthropic", "api_key", "env:AW_TEST_CANARY_KEY", "azure_openai", "url",
		Z.url, "api", "azure_openai", "api_version", "2024-10-21", "api_key",
		"env:AW_TEST_CANARY_KEY", "gemini", "url", ug, "api_key", "env:AW_TEST_CANARY_KEY");
	aw_llm_opts lo = {.store = S,
			  .policy = PC,
			  .config = cfg,
			  .connect_timeout_ms = 1000,
			  .first_byte_ms = 2000,
			  .idle_ms = 1000,
			  .breaker_failures = 1000,
			  .breaker_cooldown_ms = 10000,
			  .schema_retries = 3,
			  .lease_ms = 2000};
	if (aw_llm_new(&lo, &GW, &err))
		fail_msg("gateway: %s", err.msg);
	json_decref(cfg);
}

/* The whole SSE text of a streamed request (stream set here); NULL with *e
 * when it failed before any byte. */
static char *stream_req(const char *project, json_t *req, aw_err *e, aw_error *err)
{
	aw_ctx ctx;
	aw_test_ctx(&ctx, project, AW_SCOPE_WORKER, "agent-1");
	json_object_set_new(req, "stream", json_true());
	json_object_set_new(req, "stream_options", json_pack("{s:b}", "include_usage", 1));
	waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
	aw_llm_call *c = NULL;
	*e = aw_llm_start(GW, &ctx, req, NULL, w_wake, &w, &c, err);
	json_decref(req);
	if (*e)
		return NULL;
	char *body = NULL;
	aw_llm_state st;
	while ((st = aw_llm_head(c, w_park, NULL, &body, err)) == AW_LLM_WAIT)
		w_wait(&w);
	if (st == AW_LLM_FAILED) {
		*e = err->err;
		aw_llm_release(c);
		return NULL;
	}
	aw_buf out = AW_BUF_INIT(1 << 20);
	char buf[512];
	for (;;) {
		ssize_t n = aw_llm_read(c, buf, sizeof buf, w_park, NULL);
		if (n < 0)
			break;
		if (n == 0)
			w_wait(&w);
		else
			aw_buf_add(&out, buf, (size_t)n);
	}
	aw_llm_release(c);
	return aw_buf_take(&out);
}

/* The translation itself, without an upstream: request, answer, events. */
static void test_anthropic_translation(void **state)
{
	(void)state;
	json_error_t je;
	json_t *req = json_loads(
		"{\"model\":\"chat\",\"temperature\":1.5,\"stop\":\"END\",\"user\":\"u1\","
		"\"max_tokens\":99,\"messages\":["
		"{\"role\":\"system\",\"content\":\"Be brief\"},"
		"{\"role\":\"developer\",\"content\":[{\"type\":\"text\",\"text\":\"Be kind\"}]},"
		"{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"user\",\"content\":[{\"type\":"
		"\"text\",\"text\":\"b\"},{\"type\":\"image_url\",\"image_url\":{\"url\":"
		"\"data:image/png;base64,iVBORw0KGgo=\"}}]},"
		"{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":"
		"\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\":1}\"}}]},"
		"{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"r1\"}],"
		"\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"d\"}}],"
		"\"tool_choice\":\"required\",\"parallel_tool_calls\":false,"
		"\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"s\","
		"\"schema\":{\"type\":\"object\"}}}}",
		0, &je);
	assert_non_null(req);
	json_t *o = NULL;
	aw_error err = {0};
	assert_int_equal(aw_llm_to_anthropic(req, "claude-x", 0, &o, &err), AW_OK);
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	printf("anthropic request: %s\n", s);
	free(s);
	assert_string_equal(jstr(o, "model"), "claude-x");
	assert_int_equal(jll(o, "max_tokens"), 99);
	assert_true(jnum(o, "temperature") == 1.0);
	assert_string_equal(
		json_string_value(json_array_get(json_object_get(o, "stop_sequences"), 0)), "END");
	assert_string_equal(jstr(o, "metadata.user_id"), "u1");
	json_t *sys = json_object_get(o, "system");
	assert_int_equal(json_array_size(sys), 3); /* system, developer, the JSON instruction */
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(sys, 2), "text")),
			       "{\"type\":\"object\"}"));
	json_t *msgs = json_object_get(o, "messages");
	assert_int_equal(json_array_size(msgs),
			 3); /* user (a, b, image), assistant, user (result) */
	json_t *u0 = json_object_get(json_array_get(msgs, 0), "content");
	assert_int_equal(json_array_size(u0), 3);
	assert_string_equal(jstr(json_array_get(u0, 2), "source.type"), "base64");
	assert_string_equal(jstr(json_array_get(u0, 2), "source.media_type"), "image/png");
	json_t *tu = json_array_get(json_object_get(json_array_get(msgs, 1), "content"), 0);
	assert_string_equal(jstr(tu, "type"), "tool_use");
	assert_int_equal(jll(tu, "input.x"), 1);
	json_t *tr = json_array_get(json_object_get(json_array_get(msgs, 2), "content"), 0);
	assert_string_equal(jstr(tr, "type"), "tool_result");
	assert_string_equal(jstr(tr, "tool_use_id"), "c1");
	assert_string_equal(jstr(o, "tool_choice.type"), "any");
	assert_true(json_is_true(
		json_object_get(json_object_get(o, "tool_choice"), "disable_parallel_tool_use")));
	assert_string_equal(
		jstr(json_array_get(json_object_get(o, "tools"), 0), "input_schema.type"),
		"object");
	json_decref(o);
	/* what the Messages API cannot express: E-LLM-010 */
	json_object_set_new(req, "n", json_integer(2));
	assert_int_equal(aw_llm_to_anthropic(req, "m", 0, &o, &err), AW_E_LLM_WIRE);
	assert_string_equal(err.where, "/n");
	assert_int_equal(aw_llm_to_ollama(req, "m", 0, &o, &err), AW_E_LLM_WIRE);
	assert_string_equal(err.where, "/n");
	json_decref(req);

	/* an answer: text blocks joined, thinking left out, tool_use as a call */
	json_t *resp = json_loads(
		"{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":["
		"{\"type\":\"thinking\",\"thinking\":\"hm\",\"signature\":\"x\"},"
		"{\"type\":\"text\",\"text\":\"Hel\"},{\"type\":\"text\",\"text\":\"lo\"},"
		"{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"f\",\"input\":{\"a\":[1]}}],"
		"\"stop_reason\":\"max_tokens\",\"usage\":{\"input_tokens\":5,"
		"\"cache_creation_input_tokens\":7,\"cache_read_input_tokens\":11,"
		"\"output_tokens\":3}}",
		0, &je);
	aw_llm_stream_state st = {.created = 1, .model = "chat"};
	snprintf(st.id, sizeof st.id, "chatcmpl-t");
	assert_int_equal(aw_llm_from_anthropic(resp, &st, &o, &err), AW_OK);
	json_decref(resp);
	json_t *c0 = json_array_get(json_object_get(o, "choices"), 0);
	assert_string_equal(jstr(c0, "message.content"), "Hello");
	assert_string_equal(jstr(c0, "finish_reason"), "length");
	json_t *tc =
		json_array_get(json_object_get(json_object_get(c0, "message"), "tool_calls"), 0);
	assert_string_equal(jstr(tc, "id"), "toolu_1");
	assert_string_equal(jstr(tc, "function.arguments"), "{\"a\":[1]}");
	assert_int_equal(jll(o, "usage.prompt_tokens"), 23);
	assert_int_equal(jll(o, "usage.prompt_tokens_details.cached_tokens"), 11);
	assert_int_equal(st.cache_write, 7);
	assert_true(st.usage_seen);
	json_decref(o);

	/* a stream's events, in any order the API sends them */
	static const char *const ev[] = {
		"{\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":"
		"4,\"cache_read_input_tokens\":6,\"output_tokens\":1}}}",
		"{\"type\":\"ping\"}",
		"{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\","
		"\"text\":\"\"}}",
		"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
		"\"text\":\"Hi\"}}",
		"{\"type\":\"content_block_stop\",\"index\":0}",
		"{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":"
		"\"tool_use\",\"id\":\"toolu_2\",\"name\":\"g\",\"input\":{}}}",
		"{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":"
		"\"input_json_delta\",\"partial_json\":\"{\\\"q\\\":\"}}",
		"{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":"
		"\"input_json_delta\",\"partial_json\":\"2}\"}}",
		"{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{"
		"\"output_tokens\":9}}",
		"{\"type\":\"message_stop\"}",
		NULL};
	aw_llm_stream_state ss = {.created = 1, .model = "chat"};
	snprintf(ss.id, sizeof ss.id, "chatcmpl-t");
	aw_buf out = AW_BUF_INIT(1 << 20);
	int content = 0, done = 0, contents = 0;
	for (int i = 0; ev[i]; i++) {
		assert_int_equal(aw_llm_event_from_anthropic(ev[i], strlen(ev[i]), &ss, 1, &out,
							     &content, &done, &err),
				 AW_OK);
		contents += content;
		assert_int_equal(ss.usage_seen, i >= 8); /* complete at message_delta only */
	}
	assert_true(done);
	assert_int_equal(contents, 4);
	printf("anthropic stream as chunks:\n%s", aw_buf_str(&out));
	assert_int_equal(count(aw_buf_str(&out), "\"role\":\"assistant\""), 1);
	assert_non_null(strstr(aw_buf_str(&out), "\"content\":\"Hi\""));
	assert_non_null(
		strstr(aw_buf_str(&out),
		       "\"tool_calls\":[{\"index\":0,\"id\":\"toolu_2\",\"type\":\"function\""));
	assert_non_null(strstr(aw_buf_str(&out), "\"arguments\":\"2}\""));
	assert_non_null(strstr(aw_buf_str(&out), "\"finish_reason\":\"tool_calls\""));
	assert_non_null(strstr(aw_buf_str(&out), "\"prompt_tokens\":10,\"completion_tokens\":9"));
	assert_non_null(strstr(aw_buf_str(&out), "data: [DONE]\n\n"));
	aw_buf_free(&out);
	/* an error event, a block index out of range */
	const char *bad = "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}";
	assert_int_not_equal(
		aw_llm_event_from_anthropic(bad, strlen(bad), &ss, 0, &out, &content, &done, &err),
		AW_OK);
	const char *far = "{\"type\":\"content_block_start\",\"index\":100000,"
			  "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}";
	assert_int_equal(
		aw_llm_event_from_anthropic(far, strlen(far), &ss, 0, &out, &content, &done, &err),
		AW_E_LIMIT);
	aw_buf_free(&out);
}

/* Through the gateway to fakes of each wire kind. */
static void test_anthropic_upstream(void **state)
{
	(void)state;
	gateway_wire_up();
	set_budget("wire", 1000000, "block");
	json_t *resp = NULL;
	aw_error err = {0};
	aw_err e;
	/* a text answer; its usage splits the prompt into cache parts, all billed */
	const char *c1[] = {"anthropic=claude-x;tokens=4;cachew=3;cacher=4", NULL};
	set_policy("wire", c1, NULL);
	long k_ok = stat_of(&K, "auth_ok");
	json_t *before = budget_status("wire");
	e = ask("wire", "chat",
		json_pack("{s:[{s:s,s:s},{s:s,s:s}]}", "messages", "role", "system", "content",
			  "Be brief", "role", "user", "content", "hello"),
		&resp, &err);
	if (e)
		fail_msg("anthropic: %s %s", aw_err_code(e), err.msg);
	assert_int_equal(strncmp(content(resp), "K: t0 t1 t2 t3", 14), 0);
	/* the fake bills 3 + 3 + "hello" 2 + system "Be brief" 2 */
	assert_int_equal(jll(resp, "usage.prompt_tokens"), 10);
	assert_int_equal(jll(resp, "usage.completion_tokens"), 4);
	assert_int_equal(jll(resp, "usage.prompt_tokens_details.cached_tokens"), 4);
	assert_string_equal(
		jstr(json_array_get(json_object_get(resp, "choices"), 0), "finish_reason"), "stop");
	assert_int_equal(stat_of(&K, "auth_ok"), k_ok + 1); /* x-api-key, anthropic-version */
	json_decref(resp);
	ledger_balances("wire", -1);
	json_t *after = budget_status("wire");
	assert_int_equal(jll(after, "settled") - jll(before, "settled"), 14); /* exact */
	json_decref(before);
	json_decref(after);
	json_t *rows = audit_rows("wire");
	json_t *p = json_object_get(json_array_get(rows, 0), "payload");
	assert_int_equal(jll(p, "tokens_in"), 10);
	assert_int_equal(jll(p, "tokens_out"), 4);
	assert_string_equal(jstr(p, "budget.usage"), "upstream");
	json_decref(rows);

	/* a tool round trip: the fake refuses (400) any misshapen turn */
	const char *c2[] = {"anthropic=claude-x", NULL};
	set_policy("wire", c2, NULL);
	json_error_t je;
	json_t *tools = json_loads(
		"{\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"},"
		"{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_9\","
		"\"type\":\"function\",\"function\":{\"name\":\"weather\",\"arguments\":"
		"\"{\\\"city\\\":\\\"Paris\\\"}\"}}]},"
		"{\"role\":\"tool\",\"tool_call_id\":\"call_9\",\"content\":\"sunny\"},"
		"{\"role\":\"user\",\"content\":\"and Oslo?\"}],"
		"\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"weather\","
		"\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
		"\"string\"}}}}}],\"tool_choice\":\"auto\"}",
		0, &je);
	e = ask("wire", "chat", json_deep_copy(tools), &resp, &err);
	if (e)
		fail_msg("anthropic tools: %s %s", aw_err_code(e), err.msg);
	json_t *c0 = json_array_get(json_object_get(resp, "choices"), 0);
	assert_string_equal(jstr(c0, "finish_reason"), "tool_calls");
	json_t *tc =
		json_array_get(json_object_get(json_object_get(c0, "message"), "tool_calls"), 0);
	assert_string_equal(jstr(tc, "id"), "toolu_fake1");
	assert_string_equal(jstr(tc, "function.name"), "weather");
	assert_string_equal(jstr(tc, "function.arguments"), "{\"city\":\"Oslo\"}");
	json_decref(resp);
	ledger_balances("wire", -1);

	/* streamed: OpenAI chunks from the Messages API's events */
	const char *c3[] = {"anthropic=claude-x;tokens=5;cacher=2", NULL};
	set_policy("wire", c3, NULL);
	before = budget_status("wire");
	char *s = stream_req("wire",
			     json_pack("{s:s,s:[{s:s,s:s}]}", "model", "chat", "messages", "role",
				       "user", "content", "hi"),
			     &e, &err);
	if (!s)
		fail_msg("anthropic stream: %s %s", aw_err_code(e), err.msg);
	assert_non_null(strstr(s, "\"content\":\"K: t0\""));
	assert_non_null(strstr(s, "\"content\":\" t4\""));
	assert_int_equal(count(s, "chat.completion.chunk"), 1 + 5 + 1 + 1);
	assert_int_equal(count(s, "\"finish_reason\":\"stop\""), 1);
	/* "hi": 3 + 3 + 1 */
	assert_non_null(strstr(s, "\"prompt_tokens\":7,\"completion_tokens\":5"));
	assert_non_null(strstr(s, "data: [DONE]\n\n"));
	free(s);
	ledger_balances("wire", -1);
	after = budget_status("wire");
	assert_int_equal(jll(after, "settled") - jll(before, "settled"), 12);
	json_decref(before);
	json_decref(after);
	/* a streamed tool call */
	s = stream_req("wire", json_pack("{s:s}", "model", "chat"), &e, &err);
	assert_null(s); /* no messages: refused by the check */
	json_t *treq = json_deep_copy(tools);
	json_object_set_new(treq, "model", json_string("chat"));
	s = stream_req("wire", treq, &e, &err);
	if (!s)
		fail_msg("anthropic tool stream: %s %s", aw_err_code(e), err.msg);
	assert_non_null(strstr(s, "\"id\":\"toolu_fake1\""));
	assert_non_null(strstr(s, "\"arguments\":\"{\\\"city\\\":\""));
	assert_non_null(strstr(s, "\"finish_reason\":\"tool_calls\""));
	free(s);
	json_decref(tools);

	/* a break after bytes went out: the error event, the stream counted */
	const char *c4[] = {"anthropic=claude-x;tokens=20;drop=3", "openai=ok", NULL};
	set_policy("wire", c4, NULL);
	long a0 = stat_of(&A, "requests");
	s = stream_req("wire",
		       json_pack("{s:s,s:[{s:s,s:s}]}", "model", "chat", "messages", "role", "user",
				 "content", "hi"),
		       &e, &err);
	assert_non_null(s);
	assert_non_null(strstr(s, "E-LLM-004"));
	assert_null(strstr(s, "[DONE]"));
	assert_int_equal(stat_of(&A, "requests"), a0);
	free(s);
	ledger_balances("wire", -1);
	rows = audit_rows("wire");
	p = json_object_get(json_array_get(rows, 0), "payload");
	assert_string_equal(jstr(p, "budget.usage"), "counted from the stream");
	json_decref(rows);

	/* an upstream refusal: its error object's message, E-LLM-006 */
	const char *c5[] = {"anthropic=claude-x;status=400", NULL};
	set_policy("wire", c5, NULL);
	assert_int_equal(ask("wire", "chat", NULL, &resp, &err), AW_E_LLM_REFUSED);
	assert_non_null(strstr(err.msg, "K says 400"));
	gateway_down();
}

/* Failover across wire kinds keeps the client's format; what one kind
 * cannot express goes to another; Azure's deployments. */
static void test_wire_failover(void **state)
{
	(void)state;
	gateway_wire_up();
	json_t *resp = NULL;
	aw_error err = {0};
	aw_err e;
	/* Anthropic overloaded (529): OpenAI answers, in OpenAI's format */
	const char *c1[] = {"anthropic=claude-x;status=529", "openai=gpt-x", NULL};
	set_policy("wire", c1, NULL);
	assert_int_equal(ask("wire", "chat", NULL, &resp, &err), AW_OK);
	assert_int_equal(strncmp(content(resp), "A:", 2), 0);
	json_decref(resp);
	/* OpenAI down, streamed: the Anthropic upstream's answer as OpenAI chunks */
	const char *c2[] = {"openai=gpt-x;status=503", "anthropic=claude-x;tokens=3", NULL};
	set_policy("wire", c2, NULL);
	char *s = stream_req("wire",
			     json_pack("{s:s,s:[{s:s,s:s}]}", "model", "chat", "messages", "role",
				       "user", "content", "hi"),
			     &e, &err);
	assert_non_null(s);
	assert_non_null(strstr(s, "\"content\":\"K: t0\""));
	assert_non_null(strstr(s, "\"object\":\"chat.completion.chunk\""));
	assert_non_null(strstr(s, "[DONE]"));
	free(s);
	/* an overloaded_error event before any content: still failed over */
	const char *c2b[] = {"anthropic=claude-x;overload=1", "openai=gpt-x;tokens=2", NULL};
	set_policy("wire", c2b, NULL);
	s = stream_req("wire",
		       json_pack("{s:s,s:[{s:s,s:s}]}", "model", "chat", "messages", "role", "user",
				 "content", "hi"),
		       &e, &err);
	assert_non_null(s);
	assert_non_null(strstr(s, "\"content\":\"A: t0\""));
	assert_null(strstr(s, "K:"));
	assert_non_null(strstr(s, "[DONE]"));
	free(s);
	/* n = 2: the Anthropic target cannot take it and is skipped... */
	const char *c3[] = {"anthropic=claude-x", "openai=gpt-x", NULL};
	set_policy("wire", c3, NULL);
	long k0 = stat_of(&K, "requests");
	assert_int_equal(ask("wire", "chat", json_pack("{s:i}", "n", 2), &resp, &err), AW_OK);
	assert_int_equal(json_array_size(json_object_get(resp, "choices")), 2);
	assert_int_equal(stat_of(&K, "requests"), k0);
	json_decref(resp);
	/* ...and alone, refused with the reason (no upstream called) */
	const char *c4[] = {"anthropic=claude-x", NULL};
	set_policy("wire", c4, NULL);
	assert_int_equal(ask("wire", "chat", json_pack("{s:i}", "n", 2), &resp, &err),
			 AW_E_LLM_WIRE);
	assert_non_null(strstr(err.msg, "n > 1"));
	assert_int_equal(stat_of(&K, "requests"), k0);
	/* Azure OpenAI: the deployment URL, api-version, the api-key header */
	const char *c5[] = {"azure_openai=my-deploy", NULL};
	set_policy("wire", c5, NULL);
	long z_ok = stat_of(&Z, "auth_ok");
	assert_int_equal(ask("wire", "chat", NULL, &resp, &err), AW_OK);
	assert_int_equal(strncmp(content(resp), "Z:", 2), 0);
	json_decref(resp);
	json_t *st = fake_http(&Z, "GET", "/stats", NULL);
	assert_string_equal(jstr(st, "last_model"), "my-deploy");
	json_decref(st);
	assert_int_equal(stat_of(&Z, "auth_ok"), z_ok + 1);
	s = stream_req("wire",
		       json_pack("{s:s,s:[{s:s,s:s}]}", "model", "chat", "messages", "role", "user",
				 "content", "hi"),
		       &e, &err);
	assert_non_null(s);
	assert_non_null(strstr(s, "Z: t0"));
	assert_non_null(strstr(s, "\"usage\""));
	free(s);
	/* a deployment name that is not one: never put in the URL */
	const char *c6[] = {"azure_openai=../x?y", NULL};
	set_policy("wire", c6, NULL);
	assert_int_equal(ask("wire", "chat", NULL, &resp, &err), AW_E_LLM_WIRE);
	/* the configuration: api_version is azure_openai's and it needs one */
	json_t *bad = json_pack("{s:{s:{s:s,s:s}}}", "providers", "azure_openai", "url",
				"https://x.openai.azure.com", "api", "azure_openai");
	assert_int_equal(aw_llm_config_check(bad, &err), AW_E_CONFIG);
	json_decref(bad);
	bad = json_pack("{s:{s:{s:s,s:s}}}", "providers", "openai", "url", "https://x/v1",
			"api_version", "2024-10-21");
	assert_int_equal(aw_llm_config_check(bad, &err), AW_E_CONFIG);
	json_decref(bad);
	gateway_down();
}

/* The front doors of other APIs (/v1/messages, /v1/responses), decoded into
 * chat requests and their answers written back, without a gateway. */
static void test_front_door_translation(void **state)
{
	(void)state;
	json_error_t je;
	aw_error err = {0};
	json_t *o = NULL;
	/* Messages: a user turn of tool results then text -> tool messages, then
	 * the user's message; thinking blocks dropped */
	json_t *m = json_loads(
		"{\"model\":\"chat\",\"max_tokens\":9,\"system\":\"s\",\"messages\":["
		"{\"role\":\"user\",\"content\":\"q\"},"
		"{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"t\","
		"\"signature\":\"x\"},{\"type\":\"tool_use\",\"id\":\"tu\",\"name\":\"f\",\"input\":"
		"{\"a\":1}}]},"
		"{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"tu\","
		"\"content\":\"r\",\"is_error\":true},{\"type\":\"text\",\"text\":\"next\"}]}],"
		"\"tools\":[{\"name\":\"f\",\"input_schema\":{\"type\":\"object\"}}],"
		"\"tool_choice\":{\"type\":\"any\",\"disable_parallel_tool_use\":true},"
		"\"stop_sequences\":[\"Z\"],\"stream\":true}",
		0, &je);
	assert_int_equal(aw_llm_messages_to_chat(m, &o, &err), AW_OK);
	char *d = json_dumps(o, JSON_COMPACT);
	printf("messages as chat: %s\n", d);
	free(d);
	json_t *msgs = json_object_get(o, "messages");
	assert_int_equal(json_array_size(msgs), 5); /* system, user, assistant, tool, user */
	assert_string_equal(jstr(json_array_get(msgs, 3), "role"), "tool");
	assert_string_equal(jstr(json_array_get(msgs, 3), "content"), "[tool error] r");
	assert_string_equal(jstr(json_array_get(msgs, 4), "role"), "user");
	json_t *tc = json_array_get(json_object_get(json_array_get(msgs, 2), "tool_calls"), 0);
	assert_string_equal(jstr(tc, "function.arguments"), "{\"a\":1}");
	assert_string_equal(jstr(o, "tool_choice"), "required");
	assert_true(json_is_false(json_object_get(o, "parallel_tool_calls")));
	assert_true(json_is_true(
		json_object_get(json_object_get(o, "stream_options"), "include_usage")));
	aw_llm_req rq;
	assert_int_equal(aw_llm_req_check(o, &rq, &err), AW_OK); /* what the gateway checks next */
	json_decref(o);
	struct {
		const char *body;
		aw_err e;
		const char *where;
	} refused[] = {
		{"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
		 AW_E_REQ_INVALID, "/max_tokens"},
		{"{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":"
		 "\"x\"}],\"mcp_servers\":[]}",
		 AW_E_REQ_UNKNOWN_FIELD, "/mcp_servers"},
		{"{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":"
		 "\"x\"}],\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024}}",
		 AW_E_BUDGET_UNPRICED, "/thinking"},
		{"{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":"
		 "\"x\"}],\"tools\":[{\"type\":\"bash_20250124\",\"name\":\"bash\"}]}",
		 AW_E_BUDGET_UNPRICED, "/tools/0"},
		{"{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"system\",\"content\":"
		 "\"x\"}]}",
		 AW_E_REQ_INVALID, "/messages/0"},
	};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		json_t *b = json_loads(refused[i].body, 0, &je);
		assert_non_null(b);
		assert_int_equal(aw_llm_messages_to_chat(b, &o, &err), refused[i].e);
		assert_string_equal(err.where, refused[i].where);
		json_decref(b);
	}
	json_decref(m);
	/* the gateway's chunks as the Messages API's events */
	static const char *const ch[] = {
		"{\"id\":\"chatcmpl-9\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
		"\"content\":\"\"}}]}",
		"{\"id\":\"chatcmpl-9\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}",
		"{\"id\":\"chatcmpl-9\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{"
		"\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\","
		"\"arguments\":\"{\\\"a\\\":\"}}]}}]}",
		"{\"id\":\"chatcmpl-9\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{"
		"\"index\":0,\"function\":{\"arguments\":\"1}\"}}]}}]}",
		"{\"id\":\"chatcmpl-9\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":"
		"\"tool_calls\"}]}",
		"{\"id\":\"chatcmpl-9\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,"
		"\"completion_tokens\":4,\"cache_creation_input_tokens\":1,"
		"\"cache_read_input_tokens\":2}}",
		"[DONE]",
		NULL};
	aw_msgs_stream ms;
	aw_msgs_stream_init(&ms, "chat");
	aw_resp_stream rs;
	aw_resp_stream_init(&rs, "chat");
	aw_buf ev = AW_BUF_INIT(1 << 20), rev = AW_BUF_INIT(1 << 20);
	for (int i = 0; ch[i]; i++) {
		assert_int_equal(aw_llm_chunk_to_anthropic(ch[i], strlen(ch[i]), &ms, &ev), AW_OK);
		assert_int_equal(aw_llm_chunk_to_responses(ch[i], strlen(ch[i]), &rs, &rev), AW_OK);
	}
	printf("chunks as Messages events:\n%s", aw_buf_str(&ev));
	aw_buf names = AW_BUF_INIT(4096);
	for (const char *p = aw_buf_str(&ev); (p = strstr(p, "event: ")); p++) {
		p += 7;
		aw_buf_add(&names, p, strcspn(p, "\n"));
		aw_buf_adds(&names, ",");
	}
	assert_string_equal(aw_buf_str(&names),
			    "message_start,content_block_start,content_block_delta,"
			    "content_block_stop,content_block_start,content_block_delta,"
			    "content_block_delta,content_block_stop,message_delta,message_stop,");
	assert_non_null(strstr(aw_buf_str(&ev), "\"id\":\"msg_9\""));
	assert_non_null(strstr(aw_buf_str(&ev), "\"stop_reason\":\"tool_use\""));
	assert_non_null(strstr(aw_buf_str(&ev),
			       "\"input_tokens\":7,\"output_tokens\":4,"
			       "\"cache_creation_input_tokens\":1,\"cache_read_input_tokens\":2"));
	aw_buf_free(&names);
	aw_buf_free(&ev);
	aw_msgs_stream_free(&ms);
	/* ... and as the Responses API's, numbered, ending with the response */
	printf("chunks as Responses events:\n%s", aw_buf_str(&rev));
	int seq = 0;
	for (const char *p = aw_buf_str(&rev); (p = strstr(p, "\"sequence_number\":")); p++)
		assert_int_equal(atoi(p + 18), seq++);
	assert_int_equal(seq, 14);
	const char *last = strstr(aw_buf_str(&rev), "event: response.completed");
	assert_non_null(last);
	json_t *done = json_loads(strstr(last, "data: ") + 6, JSON_DISABLE_EOF_CHECK, &je);
	json_t *out = json_object_get(json_object_get(done, "response"), "output");
	assert_int_equal(json_array_size(out), 2);
	assert_string_equal(jstr(json_array_get(out, 0), "id"), "msg_9");
	assert_string_equal(
		jstr(json_array_get(json_object_get(json_array_get(out, 0), "content"), 0), "text"),
		"Hi");
	assert_string_equal(jstr(json_array_get(out, 1), "arguments"), "{\"a\":1}");
	assert_int_equal(jll(json_object_get(done, "response"), "usage.input_tokens"), 10);
	json_decref(done);
	aw_buf_free(&rev);
	aw_resp_stream_free(&rs);
	/* Responses requests */
	json_t *r = json_loads(
		"{\"model\":\"m\",\"instructions\":\"i\",\"input\":[{\"role\":\"user\",\"content\":"
		"\"q\"},{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":"
		"\"{}\"},{\"type\":\"function_call_output\",\"call_id\":\"c\",\"output\":\"r\"}],"
		"\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"n\",\"schema\":{\"type\":"
		"\"object\"}}},\"max_output_tokens\":7}",
		0, &je);
	assert_int_equal(aw_llm_responses_to_chat(r, &o, &err), AW_OK);
	msgs = json_object_get(o, "messages");
	assert_int_equal(json_array_size(msgs), 4); /* system, user, assistant (call), tool */
	assert_string_equal(jstr(json_array_get(msgs, 2), "role"), "assistant");
	assert_string_equal(jstr(o, "response_format.json_schema.name"), "n");
	assert_int_equal(jll(o, "max_tokens"), 7);
	assert_int_equal(aw_llm_req_check(o, &rq, &err), AW_OK);
	json_decref(o);
	json_object_set_new(r, "previous_response_id", json_string("resp_1"));
	assert_int_equal(aw_llm_responses_to_chat(r, &o, &err), AW_E_REQ_INVALID);
	json_object_del(r, "previous_response_id");
	json_object_set_new(r, "tools", json_pack("[{s:s}]", "type", "web_search_preview"));
	assert_int_equal(aw_llm_responses_to_chat(r, &o, &err), AW_E_BUDGET_UNPRICED);
	json_decref(r);
}

/* POST /v1/embeddings' calls: budgeted by their input, exact; OpenAI's API
 * and Azure's deployments only. */
static aw_err embed(const char *model, json_t *input, json_t **resp, aw_error *err)
{
	aw_ctx ctx;
	aw_test_ctx(&ctx, "wire", AW_SCOPE_WORKER, "agent-1");
	json_t *req = json_pack("{s:s,s:o}", "model", model, "input", input);
	aw_llm_meta meta = {.embeddings = 1};
	aw_err e = aw_llm_complete(GW, &ctx, req, &meta, resp, err);
	json_decref(req);
	return e;
}

static void test_embeddings(void **state)
{
	(void)state;
	gateway_wire_up();
	set_budget("wire", 1000000, "block");
	const char *c1[] = {"openai=emb-x", NULL};
	set_policy("wire", c1, NULL);
	json_t *resp = NULL;
	aw_error err = {0};
	json_t *before = budget_status("wire");
	aw_err e = embed("chat", json_pack("[s,s]", "hello", "world!"), &resp, &err);
	if (e)
		fail_msg("embeddings: %s %s", aw_err_code(e), err.msg);
	assert_string_equal(jstr(resp, "object"), "list");
	assert_string_equal(jstr(resp, "model"), "chat");
	assert_int_equal(json_array_size(json_object_get(resp, "data")), 2);
	assert_int_equal(jll(resp, "usage.prompt_tokens"), 4); /* 5 and 6 bytes: 2 + 2 */
	json_decref(resp);
	ledger_balances("wire", -1);
	json_t *after = budget_status("wire");
	assert_int_equal(jll(after, "settled") - jll(before, "settled"), 4);
	/* reserved: the input's bytes (11), never an answer's default */
	assert_int_equal(jll(after, "ledger.reserve.tokens") - jll(before, "ledger.reserve.tokens"),
			 11);
	json_decref(before);
	json_decref(after);
	json_t *rows = audit_rows("wire");
	json_t *p = json_object_get(json_array_get(rows, 0), "payload");
	assert_int_equal(jll(p, "tokens_in"), 4);
	assert_int_equal(jll(p, "tokens_out"), 0);
	json_decref(rows);
	/* what is not an embeddings request */
	assert_int_equal(embed("chat", json_string(""), &resp, &err), AW_OK);
	json_decref(resp);
	assert_int_equal(embed("chat", json_pack("[s,i]", "a", 1), &resp, &err), AW_E_REQ_INVALID);
	assert_string_equal(err.where, "/input");
	assert_int_equal(embed("chat", json_array(), &resp, &err), AW_E_REQ_INVALID);
	/* an Anthropic upstream has no embeddings: skipped, or refused alone */
	const char *c2[] = {"anthropic=claude-x", "openai=emb-x", NULL};
	set_policy("wire", c2, NULL);
	long k0 = stat_of(&K, "requests");
	assert_int_equal(embed("chat", json_string("hi"), &resp, &err), AW_OK);
	json_decref(resp);
	assert_int_equal(stat_of(&K, "requests"), k0);
	const char *c3[] = {"anthropic=claude-x", NULL};
	set_policy("wire", c3, NULL);
	assert_int_equal(embed("chat", json_string("hi"), &resp, &err), AW_E_LLM_WIRE);
	/* Azure: the deployment's embeddings path */
	const char *c4[] = {"azure_openai=emb-dep", NULL};
	set_policy("wire", c4, NULL);
	assert_int_equal(embed("chat", json_pack("[[i,i,i]]", 1, 2, 3), &resp, &err), AW_OK);
	assert_int_equal(jll(resp, "usage.prompt_tokens"), 3);
	json_decref(resp);
	json_t *st = fake_http(&Z, "GET", "/stats", NULL);
	assert_string_equal(jstr(st, "last_model"), "emb-dep");
	json_decref(st);
	ledger_balances("wire", -1);
	gateway_down();
}

/* ------------------------------------------------------------ fixture */

/* ------------------------------------------------------------ virtual keys */

/* One key's admissions from many threads at once, straight into the budget
 * service: each thread admits one call (prompt 10, answer 10) and settles
 * it at `used` tokens. */
typedef struct {
	const aw_budget_key *key;
	const char *project;
	long long used;
	_Atomic int seq;
	pthread_mutex_t mu;
	int ok, rpm, tpm, budget, other;
} key_crowd;

static void *key_caller(void *p)
{
	key_crowd *kc = p;
	aw_ctx ctx;
	aw_test_ctx(&ctx, kc->project, AW_SCOPE_WORKER, "vk");
	char call[64];
	snprintf(call, sizeof call, "vk-%s-%d", kc->key->key_id, atomic_fetch_add(&kc->seq, 1));
	const char *models[] = {"m"};
	aw_budget_price prices[1];
	aw_budget_ask a = {.call_id = call,
			   .run_id = "",
			   .holder = "vk-holder",
			   .prompt = 10,
			   .max_out = 10,
			   .lease_ms = 60000,
			   .models = models,
			   .nmodels = 1,
			   .prices = prices,
			   .key = kc->key};
	aw_budget_hold h;
	aw_error err = {0};
	aw_err e = aw_budget_admit(S, PC, &ctx, &a, &h, &err);
	if (!e && h.active) {
		aw_txn *t = NULL;
		aw_budget_amount u = {kc->used, 0};
		if (aw_store_begin(S, &ctx, AW_TXN_WRITE, &t, &err) ||
		    aw_budget_settle(t, &h, &u, "m", &err) || aw_store_commit(t, &err))
			e = AW_E_INTERNAL;
	}
	pthread_mutex_lock(&kc->mu);
	if (!e)
		kc->ok++;
	else if (e == AW_E_KEY_RPM)
		kc->rpm++;
	else if (e == AW_E_KEY_TPM)
		kc->tpm++;
	else if (e == AW_E_KEY_BUDGET)
		kc->budget++;
	else
		kc->other++;
	pthread_mutex_unlock(&kc->mu);
	return NULL;
}

static void key_crowd_run(key_crowd *kc, int n)
{
	/* the per-minute rows: the crowd starts early in a minute */
	while (aw_clock_wall_ms() / 1000 % 60 > 45)
		usleep(200000);
	pthread_t t[64];
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, key_caller, kc);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("key %s: %d admitted, refused rpm %d tpm %d budget %d, other %d\n", kc->key->key_id,
	       kc->ok, kc->rpm, kc->tpm, kc->budget, kc->other);
}

static json_t *key_usage(const char *project, const aw_budget_key *k)
{
	aw_ctx ctx;
	aw_test_ctx(&ctx, project, AW_SCOPE_OPERATOR, "op");
	json_t *u = NULL;
	aw_error err = {0};
	assert_int_equal(aw_budget_key_usage(S, &ctx, k, &u, &err), AW_OK);
	return u;
}

static void test_key_limits(void **state)
{
	(void)state;
	aw_error err = {0};
	aw_policy_opts po = {.mode = AW_GUARD_STRICT};
	assert_int_equal(aw_policy_cache_new(S, C, NULL, &po, &PC, &err), AW_OK);
	/* "vkeys" has no budget contract: a key's limits bind alone */
	/* rpm 10 against 48 threads: exactly 10 */
	aw_budget_key rk = {
		.key_id = "0193a8e2-0000-7000-8000-000000000001", .rpm = 10, .budget = {-1, -1}};
	key_crowd kc = {
		.key = &rk, .project = "vkeys", .used = 15, .mu = PTHREAD_MUTEX_INITIALIZER};
	key_crowd_run(&kc, 48);
	assert_int_equal(kc.ok, 10);
	assert_int_equal(kc.rpm, 38);
	json_t *u = key_usage("vkeys", &rk);
	assert_int_equal(jll(u, "requests"), 10);
	json_decref(u);

	/* tpm 200, each call reserving 20 and using it all: exactly 10, then not
	 * one token; using less gives the rest back to the minute, so more
	 * calls pass, never more tokens */
	aw_budget_key tk = {
		.key_id = "0193a8e2-0000-7000-8000-000000000002", .tpm = 200, .budget = {-1, -1}};
	key_crowd kt = {
		.key = &tk, .project = "vkeys", .used = 20, .mu = PTHREAD_MUTEX_INITIALIZER};
	key_crowd_run(&kt, 48);
	assert_int_equal(kt.ok, 10);
	assert_int_equal(kt.tpm, 38);
	u = key_usage("vkeys", &tk);
	assert_int_equal(jll(u, "tokens_settled"), 200);
	assert_int_equal(jll(u, "tokens_reserved"), 0);
	json_decref(u);
	aw_budget_key tk2 = {
		.key_id = "0193a8e2-0000-7000-8000-000000000006", .tpm = 200, .budget = {-1, -1}};
	key_crowd kt2 = {
		.key = &tk2, .project = "vkeys", .used = 12, .mu = PTHREAD_MUTEX_INITIALIZER};
	key_crowd_run(&kt2, 48);
	assert_true(kt2.ok >= 10);
	assert_int_equal(kt2.ok + kt2.tpm, 48);
	u = key_usage("vkeys", &tk2);
	assert_int_equal(jll(u, "tokens_settled"), 12LL * kt2.ok);
	assert_true(jll(u, "tokens_settled") <= 200);
	assert_int_equal(jll(u, "tokens_reserved"), 0);
	json_decref(u);

	/* a budget of 150 tokens (total): 7 calls of 20, the 8th cannot fit
	 * its prompt and one answer token in the 10 left */
	aw_budget_key bk = {.key_id = "0193a8e2-0000-7000-8000-000000000003",
			    .budget = {150, -1},
			    .period = "total"};
	key_crowd kb = {
		.key = &bk, .project = "vkeys", .used = 20, .mu = PTHREAD_MUTEX_INITIALIZER};
	key_crowd_run(&kb, 48);
	assert_int_equal(kb.ok, 7);
	assert_int_equal(kb.budget, 41);
	u = key_usage("vkeys", &bk);
	assert_int_equal(jll(u, "budget.tokens_settled"), 140);
	assert_int_equal(jll(u, "budget.tokens_reserved"), 0);
	json_decref(u);

	/* under a project budget of 100: the project's refuses first */
	set_budget("vkeys", 100, "block");
	aw_budget_key pk = {.key_id = "0193a8e2-0000-7000-8000-000000000004",
			    .budget = {100000, -1},
			    .period = "day"};
	key_crowd kp = {
		.key = &pk, .project = "vkeys", .used = 20, .mu = PTHREAD_MUTEX_INITIALIZER};
	key_crowd_run(&kp, 16);
	assert_int_equal(kp.ok, 5);
	assert_int_equal(kp.other, 11); /* E-BUDGET-002 */
	u = key_usage("vkeys", &pk);
	assert_int_equal(jll(u, "budget.tokens_settled"), 100);
	json_decref(u);
	ledger_balances("vkeys", 100);

	/* a holder that dies: its reservation is reaped from the key's rows too */
	set_budget("vkeys", 100000, "block");
	aw_budget_key dk = {.key_id = "0193a8e2-0000-7000-8000-000000000005",
			    .tpm = 1000,
			    .budget = {1000, -1},
			    .period = "month"};
	aw_ctx ctx;
	aw_test_ctx(&ctx, "vkeys", AW_SCOPE_WORKER, "w");
	const char *models[] = {"m"};
	aw_budget_price prices[1];
	aw_budget_ask da = {.call_id = "vk-dead",
			    .run_id = "",
			    .holder = "vk-dead-holder",
			    .prompt = 50,
			    .max_out = 100,
			    .lease_ms = 300,
			    .models = models,
			    .nmodels = 1,
			    .prices = prices,
			    .key = &dk};
	aw_budget_hold h;
	while (aw_clock_wall_ms() / 1000 % 60 > 55) /* the minute's row read below */
		usleep(200000);
	assert_int_equal(aw_budget_admit(S, PC, &ctx, &da, &h, &err), AW_OK);
	u = key_usage("vkeys", &dk);
	assert_int_equal(jll(u, "tokens_reserved"), 150);
	assert_int_equal(jll(u, "budget.tokens_reserved"), 150);
	json_decref(u);
	usleep(400000);
	int reaped = 0;
	assert_int_equal(aw_budget_reap(S, &ctx, &reaped, &err), AW_OK);
	assert_int_equal(reaped, 1);
	u = key_usage("vkeys", &dk);
	assert_int_equal(jll(u, "tokens_reserved"), 0);
	assert_int_equal(jll(u, "budget.tokens_reserved"), 0);
	assert_int_equal(jll(u, "budget.tokens_settled"), 150); /* charged in full */
	json_decref(u);
	ledger_balances("vkeys", -1);
	aw_policy_cache_free(PC);
	PC = NULL;
}

static int setup(void **state)
{
	(void)state;
	setenv("AW_TEST_CANARY_KEY", CANARY, 1);
	const char *projects[MANY + 8] = {"acme",   "beta",  "gamma", "delta",
					  "limits", "vkeys", "wire"};
	for (int i = 0; i < MANY; i++) {
		snprintf(many[i], sizeof many[i], "many%03d", i);
		projects[7 + i] = many[i];
	}
	projects[7 + MANY] = NULL;
	if (aw_test_store_up(projects))
		return -1;
	aw_error err = {0};
	if (aw_keyring_from_env(KEYS, &KR, &err) || aw_contracts_new(KR, &C, &err))
		return -1;
	char ignore[AW_KEY_SECRET_LEN + 1];
	if (aw_tenancy_bootstrap(S, NULL, ignore, &err))
		return -1;
	aw_test_redis_init(&R);
	fake_start(&A, "A", 1);
	fake_start(&B, "B", 0);
	fake_start(&G, "G", 1);
	fake_start(&O1, "O1", 0);
	fake_start(&O2, "O2", 0);
	fake_start(&K, "K", 1);
	fake_start(&Z, "Z", 1);
	/* a port nothing listens on: bind, read it, close */
	fake D;
	fake_start(&D, "D", 0);
	dead_port = D.port;
	kill(D.pid, SIGKILL);
	waitpid(D.pid, NULL, 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fake *all[] = {&A, &B, &G, &O1, &O2, &K, &Z};
	for (int i = 0; i < 7; i++) {
		kill(all[i]->pid, SIGKILL);
		waitpid(all[i]->pid, NULL, 0);
	}
	aw_test_redis_cleanup(&R);
	aw_contracts_free(C);
	aw_keyring_free(KR);
	aw_test_store_down();
	return 0;
}

/* ------------------------------------------------------------ named upstreams */

/* A named upstream's definition: name, api openai, url (the fake's /v1,
 * host: 127.0.0.1 or localhost - the same fake at another URL), key. */
static json_t *up_def(const char *name, const fake *f, const char *host, const char *key)
{
	char u[96];
	snprintf(u, sizeof u, "http://%s:%d/v1", host, f->port);
	json_t *d = json_pack("{s:s,s:s,s:s}", "name", name, "api", "openai", "url", u);
	if (key)
		json_object_set_new(d, "api_key", json_string(key));
	return d;
}

static void set_upstreams(json_t *ups)
{
	activate(AW_PLATFORM_PROJECT, "platform_resource", AW_UPSTREAMS_CONTRACT,
		 json_pack("{s:s,s:o}", "kind", AW_UPSTREAMS_CONTRACT, "upstreams", ups), NULL);
}

/* A policy of routes named after their one candidate's provider
 * ("provider=model" each, route "r-provider"); own: the project's own
 * upstreams (NULL: none). */
static void set_routes(const char *project, const char *const *cands, json_t *own)
{
	json_t *routes = json_array();
	for (int i = 0; cands[i]; i++) {
		char p[48], r[64];
		const char *eq = strchr(cands[i], '=');
		snprintf(p, sizeof p, "%.*s", (int)(eq - cands[i]), cands[i]);
		snprintf(r, sizeof r, "r-%s", p);
		json_array_append_new(routes, json_pack("{s:s,s:{s:s},s:[{s:s,s:s}]}", "name", r,
							"match", "task", r, "candidates",
							"provider", p, "model", eq + 1));
	}
	json_t *body = json_pack("{s:o}", "routes", routes);
	if (own)
		json_object_set_new(body, "upstreams", own);
	activate(project, "policy_routing", "default", body, NULL);
}

/* The answer's first word, as answered_by, for the route of model. */
static void model_answered_by(const char *project, const char *model, const char *who)
{
	json_t *resp = NULL;
	aw_error err = {0};
	aw_err e = ask(project, model, NULL, &resp, &err);
	if (e)
		fail_msg("call %s: %s %s", model, aw_err_code(e), err.msg);
	const char *c = content(resp);
	if (!c || strncmp(c, who, strlen(who)) || c[strlen(who)] != ':')
		fail_msg("%s answered by '%s', expected %s", model, c ? c : "(none)", who);
	json_decref(resp);
}

static void refused_with(const char *project, const char *model, aw_err want, const char *says)
{
	json_t *resp = NULL;
	aw_error err = {0};
	aw_err e = ask(project, model, NULL, &resp, &err);
	json_decref(resp);
	if (e != want)
		fail_msg("%s: got %s (%s), want %s", model, aw_err_code(e), err.msg,
			 aw_err_code(want));
	if (says && !strstr(err.msg, says))
		fail_msg("%s: '%s' does not say '%s'", model, err.msg, says);
	assert_null(strstr(err.msg, CANARY));
}

/* Named upstreams from the platform's llm_upstreams contract: an upstream
 * added by activating a revision answers the very next call (no restart);
 * an unchanged one keeps its pool across revisions, a changed URL resets
 * only that upstream's; a removed one is refused E-LLM-003; the contract
 * overrides the --llm-config provider of the same name; timeout_ms and
 * max_concurrency act. */
static void test_named_upstreams(void **state)
{
	(void)state;
	gateway_up(50, 10000, NULL);
	const char *c[] = {"groq-2=gm", "vllm-b=vm", "openai=om", NULL};
	set_routes("acme", c, NULL);
	refused_with("acme", "r-groq-2", AW_E_LLM_UPSTREAMS, "no configured upstream");
	model_answered_by("acme", "r-openai", "A"); /* --llm-config's openai */
	/* added: the next call uses it (G checks the key: the platform's
	 * env: reference, resolved in the process's environment) */
	long g_bad = stat_of(&G, "auth_bad");
	set_upstreams(json_pack("[o,o]",
				up_def("groq-2", &G, "127.0.0.1", "env:AW_TEST_CANARY_KEY"),
				up_def("vllm-b", &B, "127.0.0.1", NULL)));
	long gc = stat_of(&G, "connections"), bc = stat_of(&B, "connections");
	for (int i = 0; i < 3; i++) {
		model_answered_by("acme", "r-groq-2", "G");
		model_answered_by("acme", "r-vllm-b", "B");
	}
	assert_int_equal(stat_of(&G, "auth_bad"), g_bad);
	assert_int_equal(stat_of(&G, "connections"), gc + 1); /* one kept-alive connection each */
	assert_int_equal(stat_of(&B, "connections"), bc + 1);
	/* groq-2's URL changes (the same fake by another name): its pool is
	 * reset, vllm-b keeps its connection */
	set_upstreams(json_pack("[o,o]",
				up_def("groq-2", &G, "localhost", "env:AW_TEST_CANARY_KEY"),
				up_def("vllm-b", &B, "127.0.0.1", NULL)));
	gc = stat_of(&G, "connections"), bc = stat_of(&B, "connections");
	model_answered_by("acme", "r-groq-2", "G");
	model_answered_by("acme", "r-vllm-b", "B");
	assert_int_equal(stat_of(&G, "connections"), gc + 1);
	assert_int_equal(stat_of(&B, "connections"), bc);
	/* a revision that names the config's openai overrides it, per name */
	set_upstreams(json_pack("[o,o,o]",
				up_def("groq-2", &G, "localhost", "env:AW_TEST_CANARY_KEY"),
				up_def("vllm-b", &B, "127.0.0.1", NULL),
				up_def("openai", &G, "127.0.0.1", "env:AW_TEST_CANARY_KEY")));
	model_answered_by("acme", "r-openai", "G");
	assert_int_equal(stat_of(&B, "connections"), bc); /* still unchanged */
	/* removed: refused; the config's openai is back */
	set_upstreams(json_pack("[o]", up_def("vllm-b", &B, "127.0.0.1", NULL)));
	refused_with("acme", "r-groq-2", AW_E_LLM_UPSTREAMS, "no configured upstream");
	model_answered_by("acme", "r-openai", "A");
	model_answered_by("acme", "r-vllm-b", "B");
	/* timeout_ms: the upstream's first-byte deadline (the gateway's is
	 * 2000): its 300 fails a 900 ms answer over to the next candidate */
	json_t *late = up_def("late", &B, "127.0.0.1", NULL);
	json_object_set_new(late, "timeout_ms", json_integer(300));
	set_upstreams(json_pack("[o]", late));
	activate("acme", "policy_routing", "default",
		 json_pack("{s:[{s:s,s:{s:s},s:[{s:s,s:s},{s:s,s:s}]}]}", "routes", "name", "chat",
			   "match", "task", "chat", "candidates", "provider", "late", "model",
			   "m;ttft=900", "provider", "openai", "model", "m"),
		 NULL);
	long b0 = stat_of(&B, "requests");
	answered_by("acme", "A");
	assert_int_equal(stat_of(&B, "requests"), b0 + 1); /* asked, timed out */
	/* max_concurrency 1: of two calls at once, the second goes to the next
	 * candidate */
	json_t *one = up_def("one", &B, "127.0.0.1", NULL);
	json_object_set_new(one, "max_concurrency", json_integer(1));
	set_upstreams(json_pack("[o]", one));
	activate("acme", "policy_routing", "default",
		 json_pack("{s:[{s:s,s:{s:s},s:[{s:s,s:s},{s:s,s:s}]}]}", "routes", "name", "chat",
			   "match", "task", "chat", "candidates", "provider", "one", "model",
			   "m;ttft=1000", "provider", "openai", "model", "m"),
		 NULL);
	busy_arg b = {"acme", AW_OK};
	pthread_t th;
	b0 = stat_of(&B, "requests");
	assert_int_equal(pthread_create(&th, NULL, busy_caller, &b), 0);
	for (int i = 0; i < 200 && stat_of(&B, "requests") == b0; i++)
		usleep(10000);
	long a0 = stat_of(&A, "requests");
	answered_by("acme", "A");
	assert_int_equal(stat_of(&A, "requests"), a0 + 1);
	pthread_join(th, NULL);
	assert_int_equal(b.e, AW_OK);
	assert_int_equal(stat_of(&B, "requests"), b0 + 1);
	set_upstreams(json_array());
	gateway_down();
}

/* A project's own upstream (bring your own key): declared in its
 * policy_routing revision, its key the project's own secret reference
 * (env:MYKEY is AWOOOP_T_<PROJECT>__MYKEY; G checks it), its loopback
 * address refused until the operator grants the project private egress;
 * invisible to another project, whose same reference names its own
 * (unset) secret; the key in no answer, error or audit record. */
static void test_own_upstreams(void **state)
{
	(void)state;
	setenv("AWOOOP_T_ACME__MYKEY", CANARY, 1);
	unsetenv("AWOOOP_T_BETA__MYKEY");
	gateway_up(50, 10000, NULL);
	const char *mine[] = {"mine=mm", NULL};
	set_routes("acme", mine, json_pack("[o]", up_def("mine", &G, "127.0.0.1", "env:MYKEY")));
	aw_error err = {0};
	long g0 = stat_of(&G, "requests");
	/* loopback: not without the operator's grant */
	assert_int_equal(aw_egress_grant(NULL, &err), AW_OK);
	refused_with("acme", "r-mine", AW_E_LLM_UPSTREAMS, "egress refused");
	assert_int_equal(stat_of(&G, "requests"), g0);
	assert_int_equal(aw_egress_grant("acme,beta", &err), AW_OK);
	long bad = stat_of(&G, "auth_bad");
	model_answered_by("acme", "r-mine", "G");
	assert_int_equal(stat_of(&G, "auth_bad"), bad); /* the project's key arrived */
	assert_int_equal(stat_of(&G, "requests"), g0 + 1);
	/* another project: acme's upstream is not there */
	set_routes("beta", mine, NULL);
	refused_with("beta", "r-mine", AW_E_LLM_UPSTREAMS, "no configured upstream");
	/* its own of the same name and reference: its own namespace (unset) */
	set_routes("beta", mine, json_pack("[o]", up_def("mine", &G, "127.0.0.1", "env:MYKEY")));
	refused_with("beta", "r-mine", AW_E_LLM_UPSTREAMS, "credential reference");
	assert_int_equal(stat_of(&G, "requests"), g0 + 1);
	/* the project's own shadows the platform's of the same name, for it only */
	set_upstreams(json_pack("[o]", up_def("mine", &A, "127.0.0.1", "env:AW_TEST_CANARY_KEY")));
	model_answered_by("acme", "r-mine", "G");
	set_routes("beta", mine, NULL);
	model_answered_by("beta", "r-mine", "A");
	set_upstreams(json_array());
	/* the key in no audit record */
	json_t *rows = audit_rows("acme");
	char *text = json_dumps(rows, 0);
	assert_non_null(text);
	assert_null(strstr(text, CANARY));
	assert_non_null(strstr(text, "\"mine\""));
	free(text);
	json_decref(rows);
	assert_int_equal(aw_egress_grant(NULL, &err), AW_OK);
	unsetenv("AWOOOP_T_ACME__MYKEY");
	gateway_down();
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route_and_activation),
		cmocka_unit_test(test_candidate_limits),
		cmocka_unit_test(test_breaker_charged_to_cause),
		cmocka_unit_test(test_project_inflight),
		cmocka_unit_test(test_emergency_share),
		cmocka_unit_test(test_route_fields),
		cmocka_unit_test(test_failover_order),
		cmocka_unit_test(test_route_by_model),
		cmocka_unit_test(test_streams),
		cmocka_unit_test(test_breaker),
		cmocka_unit_test(test_topology),
		cmocka_unit_test(test_topology_hosts),
		cmocka_unit_test(test_emergency_cap),
		cmocka_unit_test(test_schema_retry),
		cmocka_unit_test(test_canary_and_trace),
		cmocka_unit_test(test_llm_step),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_budget_kill),
		cmocka_unit_test(test_budget_reap),
		cmocka_unit_test(test_budget_per_run),
		cmocka_unit_test(test_budget_suspension_owner),
		cmocka_unit_test(test_kill_over_bus),
		cmocka_unit_test(test_budget_cost),
		cmocka_unit_test(test_budget_rolling),
		cmocka_unit_test(test_budget_shapes),
		cmocka_unit_test(test_budget_unpriced_fields),
		cmocka_unit_test(test_budget_overshoot),
		cmocka_unit_test(test_watch_many),
		cmocka_unit_test(test_key_limits),
		cmocka_unit_test(test_anthropic_translation),
		cmocka_unit_test(test_anthropic_upstream),
		cmocka_unit_test(test_wire_failover),
		cmocka_unit_test(test_embeddings),
		cmocka_unit_test(test_front_door_translation),
		cmocka_unit_test(test_named_upstreams),
		cmocka_unit_test(test_own_upstreams),
	};
	return AW_TEST_MAIN("llm", tests, setup, teardown);
}
