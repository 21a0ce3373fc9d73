/*
 * test_core.c - unit tests of src/core: error catalogue (and its doc), UUIDv7,
 * traceparent, crypto vectors, clock format, identifier grammars, strict JSON
 * decoding, metrics rendering.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cmocka.h>

#include "support.h"

#include "awooop/buf.h"
#include "awooop/clock.h"
#include "awooop/crypto.h"
#include "awooop/egress.h"
#include "awooop/http.h"
#include "awooop/ident.h"
#include "awooop/jcs.h"
#include "awooop/json.h"
#include "awooop/metrics.h"
#include "awooop/pattern.h"
#include "awooop/schema.h"
#include "awooop/str.h"
#include "awooop/trace.h"
#include "awooop/uuid.h"
#include "http/http_internal.h"

static void test_error_catalogue(void **state)
{
	/* codes are unique and well-formed, statuses are HTTP statuses */
	for (int i = 1; i < AW_ERR__COUNT; i++) {
		const char *c = aw_err_code((aw_err)i);
		assert_true(strncmp(c, "E-", 2) == 0);
		int st = aw_err_http_status((aw_err)i);
		assert_true(st >= 400 && st <= 599);
		for (int j = i + 1; j < AW_ERR__COUNT; j++)
			assert_string_not_equal(c, aw_err_code((aw_err)j));
		aw_err back;
		assert_int_equal(aw_err_from_code(c, &back), 0);
		assert_int_equal(back, i);
	}
	aw_error err;
	assert_int_equal(aw_fail_at(&err, AW_E_REQ_INVALID, "/x", "bad %d", 7), AW_E_REQ_INVALID);
	assert_string_equal(err.msg, "bad 7");
	assert_string_equal(err.where, "/x");
}

static void test_errors_doc_lists_every_code(void **state)
{
	FILE *f = fopen(AWOOOP_SOURCE_DIR "/docs/errors.md", "r");
	assert_non_null(f);
	static char doc[1 << 16];
	size_t n = fread(doc, 1, sizeof doc - 1, f);
	doc[n] = '\0';
	fclose(f);
	for (int i = 1; i < AW_ERR__COUNT; i++) {
		char needle[64];
		snprintf(needle, sizeof needle, "`%s`", aw_err_code((aw_err)i));
		if (!strstr(doc, needle))
			fail_msg("docs/errors.md does not document %s", needle);
	}
}

static void test_uuid7_layout_and_order(void **state)
{
	char prev[AW_UUID_STR_LEN + 1] = "";
	int64_t before = aw_clock_wall_ms();
	for (int i = 0; i < 100000; i++) {
		aw_uuid u;
		aw_uuid7(&u);
		assert_int_equal(u.b[6] >> 4, 7); /* version */
		assert_int_equal(u.b[8] >> 6, 2); /* variant 10 */
		char s[AW_UUID_STR_LEN + 1];
		aw_uuid_format(&u, s);
		assert_true(aw_uuid_valid(s));
		assert_true(strcmp(prev, s) < 0); /* strictly increasing */
		strcpy(prev, s);
		if (i == 0) {
			uint64_t ms = aw_uuid7_ms(&u);
			assert_true(ms >= (uint64_t)before && ms <= (uint64_t)before + 1000);
		}
	}
	assert_false(aw_uuid_valid("01a226c4-e9a2-74b7-930b-5aecf7f19c7"));
	assert_false(aw_uuid_valid("01a226c4-e9a2-74b7-930b_5aecf7f19c7d"));
	assert_false(aw_uuid_valid("' OR 1=1 --"));
	/* one spelling on every backend: PostgreSQL's uuid type would read this */
	assert_false(aw_uuid_valid("01A226C4-E9A2-74B7-930B-5AECF7F19C7D"));
}

static void test_traceparent(void **state)
{
	aw_trace t;
	const char *ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
	assert_int_equal(aw_trace_parse(ok, strlen(ok), &t), 0);
	assert_string_equal(t.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
	assert_string_equal(t.span_id, "00f067aa0ba902b7");
	assert_int_equal(t.flags, 1);
	char out[AW_TRACEPARENT_LEN + 1];
	aw_trace_format(&t, out);
	assert_string_equal(out, ok);

	const char *bad[] = {
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   /* version ff */
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",   /* zero trace */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   /* zero parent */
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   /* uppercase */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", /* v00 + extra */
		"00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",   /* dash moved */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
		"0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_not_equal(aw_trace_parse(bad[i], strlen(bad[i]), &t), 0);
	/* a future version may carry more fields after a dash */
	const char *future = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more";
	assert_int_equal(aw_trace_parse(future, strlen(future), &t), 0);

	aw_trace child;
	assert_int_equal(aw_trace_parse(ok, strlen(ok), &t), 0);
	aw_trace_child(&t, &child);
	assert_string_equal(child.trace_id, t.trace_id);
	assert_string_not_equal(child.span_id, t.span_id);
	aw_trace fresh;
	aw_trace_new(&fresh);
	assert_int_equal(strlen(fresh.trace_id), 32);
	assert_string_not_equal(fresh.trace_id, t.trace_id);
}

static void test_crypto_vectors(void **state)
{
	char hex[65];
	aw_sha256_hex("abc", 3, hex);
	assert_string_equal(hex,
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	/* RFC 4231 test case 2 */
	uint8_t mac[32];
	aw_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, mac);
	aw_hex(mac, 32, hex);
	assert_string_equal(hex,
			    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	char b64[16];
	aw_base64url((const uint8_t *)"\xfb\xff", 2, b64);
	assert_string_equal(b64, "-_8");
	aw_base64url((const uint8_t *)"foobar", 6, b64);
	assert_string_equal(b64, "Zm9vYmFy");
	assert_int_equal(aw_base64url_len(32), 43);
	assert_true(aw_ct_equal("abc", "abc", 3));
	assert_false(aw_ct_equal("abc", "abd", 3));
}

static void test_clock_format(void **state)
{
	char s[AW_TS_LEN + 1];
	aw_clock_format(0, s);
	assert_string_equal(s, "1970-01-01T00:00:00.000Z");
	aw_clock_format(1795946067123LL, s);
	int64_t back;
	assert_int_equal(aw_clock_parse(s, &back), 0);
	assert_int_equal(back, 1795946067123LL);
	assert_int_equal(aw_clock_parse("2026-11-29 09:54:27", &back), -1);
	/* out of range: not normalised into another time */
	assert_int_equal(aw_clock_parse("2026-13-01T00:00:00.000Z", &back), -1);
	assert_int_equal(aw_clock_parse("2026-02-30T00:00:00.000Z", &back), -1);
	assert_int_equal(aw_clock_parse("2026-11-29T24:00:00.000Z", &back), -1);
	assert_int_equal(aw_clock_parse("2026-11-29T09:-1:27.000Z", &back), -1);
	assert_int_equal(aw_clock_parse("2028-02-29T23:59:59.999Z", &back), 0);
}

static void test_identifiers(void **state)
{
	assert_true(aw_ident_project_ok("alpha"));
	assert_true(aw_ident_project_ok("a1_b-c"));
	assert_false(aw_ident_project_ok("a"));	    /* too short */
	assert_false(aw_ident_project_ok("Alpha")); /* upper case */
	assert_false(aw_ident_project_ok("-alpha"));
	assert_false(aw_ident_project_ok("__platform__"));
	assert_false(aw_ident_project_ok("a:b"));
	assert_false(aw_ident_project_ok("a'; drop table projects;--"));
	char long64[65];
	memset(long64, 'a', 64);
	long64[64] = '\0';
	assert_false(aw_ident_project_ok(long64));
	long64[63] = '\0';
	assert_true(aw_ident_project_ok(long64));
	assert_true(aw_ident_project_reserved("__platform__"));
	assert_true(aw_ident_name_ok("alice.smith-2"));
	assert_false(aw_ident_name_ok("alice@example.com")); /* no PII as principal */
	assert_false(aw_ident_name_ok(".alice"));
	assert_false(aw_ident_name_ok("al ice"));
	assert_false(aw_ident_name_ok(""));
}

static void test_strict_json(void **state)
{
	aw_error err = {0};
	aw_project_create_req p;
	const char *good = "{\"id\":\"alpha\"}";
	assert_int_equal(decode_project_create(good, strlen(good), &p, &err), AW_OK);
	assert_string_equal(p.id, "alpha");
	const char *unknown = "{\"id\":\"alpha\",\"a/b~\":1}";
	assert_int_equal(decode_project_create(unknown, strlen(unknown), &p, &err),
			 AW_E_REQ_UNKNOWN_FIELD);
	assert_string_equal(err.where, "/a~1b~0");
	const char *dup = "{\"id\":\"alpha\",\"id\":\"beta\"}";
	assert_int_equal(decode_project_create(dup, strlen(dup), &p, &err), AW_E_REQ_JSON);
	assert_int_equal(decode_project_create("[]", 2, &p, &err), AW_E_REQ_JSON);
	assert_int_equal(decode_project_create("{", 1, &p, &err), AW_E_REQ_JSON);
	assert_int_equal(decode_project_create("", 0, &p, &err), AW_E_REQ_JSON);
	const char *num = "{\"id\":5}";
	assert_int_equal(decode_project_create(num, strlen(num), &p, &err), AW_E_REQ_INVALID);
	assert_string_equal(err.where, "/id");
	const char *slug = "{\"id\":\"Bad Slug\"}";
	assert_int_equal(decode_project_create(slug, strlen(slug), &p, &err), AW_E_TENANT_SLUG);
	const char *nul = "{\"id\":\"al\\u0000pha\"}";
	assert_int_not_equal(decode_project_create(nul, strlen(nul), &p, &err), AW_OK);

	aw_key_create_req k;
	const char *key = "{\"name\":\"alice\",\"scope\":\"operator\"}";
	assert_int_equal(decode_key_create(key, strlen(key), &k, &err), AW_OK);
	assert_int_equal(k.scope, AW_SCOPE_OPERATOR);
	const char *scope = "{\"name\":\"alice\",\"scope\":\"root\"}";
	assert_int_equal(decode_key_create(scope, strlen(scope), &k, &err), AW_E_KEY_SCOPE);
	const char *missing = "{\"scope\":\"reader\"}";
	assert_int_equal(decode_key_create(missing, strlen(missing), &k, &err), AW_E_REQ_INVALID);
}

/* A virtual key's team as a label: at most 32 per project, the rest under
 * team="_other"; another project has its own 32. */
static void test_metrics_team_bound(void **state)
{
	(void)state;
	aw_metrics_reset();
	for (int i = 0; i < 40; i++) {
		char team[16];
		snprintf(team, sizeof team, "team%02d", i);
		aw_metrics_llm_team("p1", team, 10);
		aw_metrics_llm_team("p1", team, 5); /* a team seen again keeps its series */
	}
	aw_metrics_llm_team("p2", "team39", 7);
	char *m = aw_metrics_render();
	assert_non_null(m);
	int series = 0;
	for (const char *p = m; (p = strstr(p, "awooop_llm_team_calls_total{project=\"p1\"")); p++)
		series++;
	assert_int_equal(series, 33);
	assert_non_null(
		strstr(m, "awooop_llm_team_calls_total{project=\"p1\",team=\"team31\"} 2\n"));
	assert_null(strstr(m, "project=\"p1\",team=\"team32\""));
	assert_non_null(
		strstr(m, "awooop_llm_team_calls_total{project=\"p1\",team=\"_other\"} 16\n"));
	assert_non_null(
		strstr(m, "awooop_llm_team_tokens_total{project=\"p1\",team=\"_other\"} 120\n"));
	assert_non_null(
		strstr(m, "awooop_llm_team_calls_total{project=\"p2\",team=\"team39\"} 1\n"));
	free(m);
	aw_metrics_reset();
}

static void test_metrics_render(void **state)
{
	aw_metrics_reset();
	aw_metrics_http_observe("GET", "/healthz", 200, 0.003);
	aw_metrics_http_observe("GET", "/healthz", 200, 0.2);
	aw_metrics_store_observe("sqlite", 0.0001, AW_OK);
	aw_metrics_store_observe("sqlite", 0.0001, AW_E_STORE_BUSY);
	char *m = aw_metrics_render();
	assert_non_null(m);
	assert_non_null(strstr(
		m,
		"awooop_http_requests_total{route=\"/healthz\",method=\"GET\",status=\"200\"} 2\n"));
	assert_non_null(strstr(
		m,
		"awooop_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"0.005\"} 1\n"));
	assert_non_null(strstr(
		m,
		"awooop_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"+Inf\"} 2\n"));
	assert_non_null(
		strstr(m, "awooop_store_query_duration_seconds_count{backend=\"sqlite\"} 2\n"));
	assert_non_null(strstr(
		m, "awooop_store_errors_total{backend=\"sqlite\",code=\"E-STORE-003\"} 1\n"));
	assert_non_null(strstr(m, "# TYPE awooop_http_request_duration_seconds histogram\n"));
	free(m);
	aw_metrics_reset();
}

/* A number after prefix (a whole line's start) in m, or -1. */
static double metric_value(const char *m, const char *prefix)
{
	for (const char *p = m; (p = strstr(p, prefix)); p++)
		if (p == m || p[-1] == '\n')
			return strtod(p + strlen(prefix), NULL);
	return -1;
}

/* The process (read from /proc/self), the build, a run's duration in its
 * own buckets (seconds to a day) and the queue depths (replaced at each
 * measurement). */
static void test_metrics_process_and_runs(void **state)
{
	(void)state;
	aw_metrics_reset();
	aw_metrics_run_duration("p1", "default", "succeeded", 0.3);
	aw_metrics_run_duration("p1", "default", "succeeded", 42);
	aw_metrics_run_duration("p1", "default", "failed", 7200);
	const char *pr[] = {"p1", "p2"}, *qu[] = {"default", "batch"};
	double depth[] = {3, 100000};
	aw_metrics_run_queue_depths(pr, qu, depth, 2);
	char *m = aw_metrics_render();
	assert_non_null(m);
	const char *want[] = {
		"# TYPE awooop_run_duration_seconds histogram\n",
		"awooop_run_duration_seconds_bucket{project=\"p1\",queue=\"default\","
		"outcome=\"succeeded\",le=\"0.5\"} 1\n",
		"awooop_run_duration_seconds_bucket{project=\"p1\",queue=\"default\","
		"outcome=\"succeeded\",le=\"60\"} 2\n",
		"awooop_run_duration_seconds_bucket{project=\"p1\",queue=\"default\","
		"outcome=\"failed\",le=\"3600\"} 0\n",
		"awooop_run_duration_seconds_bucket{project=\"p1\",queue=\"default\","
		"outcome=\"failed\",le=\"14400\"} 1\n",
		"awooop_run_duration_seconds_count{project=\"p1\",queue=\"default\","
		"outcome=\"succeeded\"} 2\n",
		"awooop_run_queue_depth{project=\"p1\",queue=\"default\"} 3\n",
		"awooop_run_queue_depth{project=\"p2\",queue=\"batch\"} 100000\n",
		"# TYPE process_cpu_seconds_total counter\n",
		"awooop_build_info{version=\"" AWOOOP_VERSION "\",compiler=\"",
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		if (!strstr(m, want[i]))
			fail_msg("not in the metrics: %s", want[i]);
	/* the latency histograms keep theirs */
	aw_metrics_http_observe("GET", "/healthz", 200, 0.003);
	free(m);
	m = aw_metrics_render();
	assert_non_null(strstr(
		m,
		"awooop_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"0.0005\"} 0\n"));
	/* the process: plausible, from /proc/self */
	assert_true(metric_value(m, "process_cpu_seconds_total ") >= 0);
	assert_true(metric_value(m, "process_open_fds ") >= 3);
	assert_true(metric_value(m, "process_max_fds ") >= metric_value(m, "process_open_fds "));
	assert_true(metric_value(m, "process_resident_memory_bytes ") > 1 << 20);
	assert_true(metric_value(m, "process_virtual_memory_bytes ") >=
		    metric_value(m, "process_resident_memory_bytes "));
	double start = metric_value(m, "process_start_time_seconds "),
	       now = (double)aw_clock_wall_ms() / 1000;
	assert_true(start > now - 3600 && start <= now + 1);
	free(m);
	/* a new measurement replaces the depths: a drained queue leaves */
	aw_metrics_run_queue_depths(pr, qu, depth, 1);
	m = aw_metrics_render();
	assert_non_null(strstr(m, "awooop_run_queue_depth{project=\"p1\",queue=\"default\"} 3\n"));
	assert_null(strstr(m, "awooop_run_queue_depth{project=\"p2\""));
	free(m);
	aw_metrics_reset();
}

/* The series the alerts read (deploy/prometheus/alerts.yml): a gauge with an
 * expiry leaves the text from then on; labels carry project ids only. */
static void test_metrics_alerting(void **state)
{
	(void)state;
	aw_metrics_reset();
	int64_t now = aw_clock_wall_ms();
	aw_metrics_llm_emergency(90, 100, now + 60000);
	aw_metrics_budget_used("p1", 0.5);
	aw_metrics_audit_verify("p1", 0);
	aw_metrics_mcp_stdio_restart("p1");
	aw_metrics_mcp_stdio_restart("p1");
	aw_metrics_bus_connected(0);
	aw_metrics_llm_inflight("p1", 3);
	aw_metrics_budget_cost("p1", 1500000);
	aw_metrics_run_event("failed", 2);
	char *m = aw_metrics_render();
	assert_non_null(m);
	assert_non_null(strstr(m, "awooop_llm_emergency_calls 90\n"));
	assert_non_null(strstr(m, "awooop_llm_emergency_cap 100\n"));
	assert_non_null(strstr(m, "awooop_budget_used_ratio{project=\"p1\"} 0.5\n"));
	assert_non_null(strstr(m, "awooop_audit_chain_intact{project=\"p1\"} 0\n"));
	assert_non_null(strstr(m, "awooop_mcp_stdio_restarts_total{project=\"p1\"} 2\n"));
	assert_non_null(strstr(m, "awooop_bus_connected 0\n"));
	assert_non_null(strstr(m, "awooop_llm_inflight{project=\"p1\"} 3\n"));
	assert_non_null(strstr(m, "awooop_budget_cost_usd_total{project=\"p1\"} 1.5\n"));
	assert_non_null(strstr(m, "awooop_run_events_total{event=\"failed\"} 2\n"));
	free(m);
	/* the day is over: the count and the cap leave the text, the rest stays */
	aw_metrics_llm_emergency(90, 100, now - 1);
	m = aw_metrics_render();
	assert_non_null(m);
	assert_null(strstr(m, "awooop_llm_emergency_calls 9"));
	assert_null(strstr(m, "awooop_llm_emergency_cap 1"));
	assert_non_null(strstr(m, "# TYPE awooop_llm_emergency_calls gauge\n"));
	assert_non_null(strstr(m, "awooop_bus_connected 0\n"));
	free(m);
	/* a new count starts the series again */
	aw_metrics_llm_emergency(1, 100, now + 60000);
	m = aw_metrics_render();
	assert_non_null(strstr(m, "awooop_llm_emergency_calls 1\n"));
	free(m);
	/* runs finished: a queue's four outcomes start together at 0 */
	aw_metrics_run_finished("p1", "q1", "failed", 2);
	/* queue ages and convergence lags: each set replaces the last */
	const char *pj[] = {"p1", "p2"}, *qs[] = {"q1", "default"}, *fm[] = {"budget", "budget"};
	double ages[] = {12.5, 3}, lags[] = {0, 40};
	aw_metrics_run_queue_ages(pj, qs, ages, 2);
	aw_metrics_policy_lag(pj, fm, lags, 2, now + 60000);
	m = aw_metrics_render();
	assert_non_null(strstr(
		m,
		"awooop_run_finished_total{project=\"p1\",queue=\"q1\",outcome=\"failed\"} 2\n"));
	assert_non_null(strstr(
		m,
		"awooop_run_finished_total{project=\"p1\",queue=\"q1\",outcome=\"succeeded\"} 0\n"));
	assert_non_null(strstr(
		m, "awooop_run_queue_oldest_age_seconds{project=\"p1\",queue=\"q1\"} 12.5\n"));
	assert_non_null(strstr(
		m, "awooop_run_queue_oldest_age_seconds{project=\"p2\",queue=\"default\"} 3\n"));
	assert_non_null(strstr(
		m, "awooop_policy_convergence_lag_seconds{project=\"p2\",family=\"budget\"} 40\n"));
	free(m);
	aw_metrics_run_queue_ages(pj + 1, qs + 1, ages + 1, 1); /* q1 drained */
	aw_metrics_policy_lag(pj, fm, lags, 2, now - 1);	/* not measured since */
	m = aw_metrics_render();
	assert_null(strstr(m, "awooop_run_queue_oldest_age_seconds{project=\"p1\""));
	assert_non_null(strstr(
		m, "awooop_run_queue_oldest_age_seconds{project=\"p2\",queue=\"default\"} 3\n"));
	assert_null(strstr(m, "awooop_policy_convergence_lag_seconds{"));
	free(m);
	aw_metrics_reset();
}

static void jcs_is(const char *in, const char *want)
{
	json_error_t je;
	json_t *v = json_loads(in, JSON_DECODE_ANY, &je);
	if (!v)
		fail_msg("unparsable test input %s: %s", in, je.text);
	char *got = aw_jcs(v);
	if (strcmp(got, want) != 0)
		fail_msg("jcs(%s) = %s, want %s", in, got, want);
	free(got);
	json_decref(v);
}

static void test_jcs(void **state)
{
	/* RFC 8785 examples and number rules */
	jcs_is("{\"b\": 2, \"a\": 1}", "{\"a\":1,\"b\":2}");
	jcs_is("[1.0, 1e2, -0.0, 0.5, 1e21, 1e-7, 123456789012345680000.0, 4.5e-7]",
	       "[1,100,0,0.5,1e+21,1e-7,123456789012345680000,4.5e-7]");
	jcs_is("[333333333.33333329, 1E30, 4.50, 2e-3, 0.000001]",
	       "[333333333.3333333,1e+30,4.5,0.002,0.000001]");
	/* strings: only " \\ and control characters are escaped; \u20ac stays UTF-8 */
	jcs_is("\"\\u20ac\\u000f\\n/\\\"\"", "\"\xe2\x82\xac\\u000f\\n/\\\"\"");
	/* keys sorted by UTF-16 code units: U+1F600 (surrogates D83D..) before U+FB33 */
	jcs_is("{\"\\ufb33\": 1, \"\\ud83d\\ude00\": 2, \"a\": 0}",
	       "{\"a\":0,\"\xf0\x9f\x98\x80\":2,\"\xef\xac\xb3\":1}");
	json_t *a = json_loads("{\"x\":[1,{\"z\":1,\"y\":2.0}]}", 0, NULL);
	json_t *b = json_loads("{ \"x\" : [ 1.0 , { \"y\":2, \"z\":1 } ] }", 0, NULL);
	char ha[65], hb[65];
	assert_int_equal(aw_jcs_sha256(a, ha), 0);
	assert_int_equal(aw_jcs_sha256(b, hb), 0);
	assert_string_equal(ha, hb);
	json_decref(a);
	json_decref(b);
}

/* aw_buf_add_jstr: every byte below 0x20, '"' and '\\' escaped, the rest
 * as it is; jansson reads back the same bytes. */
static void test_json_string(void **state)
{
	char in[160];
	size_t n = 0;
	for (int c = 1; c < 0x20; c++)
		in[n++] = (char)c;
	const char *rest = "\"\\/ plain \xe2\x82\xac {\"k\":[1]} end";
	memcpy(in + n, rest, strlen(rest));
	n += strlen(rest);
	aw_buf b = AW_BUF_INIT(1024);
	assert_int_equal(aw_buf_add_jstr(&b, in, n), AW_OK);
	assert_non_null(strstr(aw_buf_str(&b), "\\u0007\\b\\t\\n\\u000b\\f\\r"));
	assert_non_null(
		strstr(aw_buf_str(&b), "\\\"\\\\/ plain \xe2\x82\xac {\\\"k\\\":[1]} end\""));
	json_t *v = json_loads(aw_buf_str(&b), JSON_DECODE_ANY, NULL);
	assert_non_null(v);
	assert_int_equal(json_string_length(v), n);
	assert_memory_equal(json_string_value(v), in, n);
	json_decref(v);
	/* a ceiling reached on the way leaves the error, not a cut string */
	aw_buf small = AW_BUF_INIT(8);
	assert_int_equal(aw_buf_add_jstr(&small, in, n), AW_E_LIMIT);
	aw_buf_free(&small);
	aw_buf_free(&b);
	/* SIZE_MAX: no ceiling (it once wrapped to a zero-byte allocation) */
	aw_buf big = AW_BUF_INIT(SIZE_MAX);
	for (int i = 0; i < 100; i++)
		assert_int_equal(aw_buf_adds(&big, "0123456789"), AW_OK);
	assert_int_equal(strlen(aw_buf_str(&big)), 1000);
	aw_buf_free(&big);
}

/* Ids come from a pool of the thread's: consecutive draws differ, and a
 * forked child does not hand out the ids its parent will. */
static void test_random_pool(void **state)
{
	uint8_t a[10], b[10], child[10], parent[10];
	assert_int_equal(aw_random_bytes(a, sizeof a), AW_OK);
	assert_int_equal(aw_random_bytes(b, sizeof b), AW_OK);
	assert_memory_not_equal(a, b, sizeof a);
	int fd[2];
	assert_int_equal(pipe(fd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		aw_random_bytes(child, sizeof child);
		_exit(write(fd[1], child, sizeof child) == (ssize_t)sizeof child ? 0 : 1);
	}
	close(fd[1]);
	assert_int_equal(read(fd[0], child, sizeof child), (ssize_t)sizeof child);
	close(fd[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	assert_int_equal(st, 0);
	assert_int_equal(aw_random_bytes(parent, sizeof parent), AW_OK);
	assert_memory_not_equal(child, parent, sizeof child);
	/* more than 16 bytes: straight from the generator */
	uint8_t k1[32], k2[32];
	assert_int_equal(aw_random_bytes(k1, sizeof k1), AW_OK);
	assert_int_equal(aw_random_bytes(k2, sizeof k2), AW_OK);
	assert_memory_not_equal(k1, k2, sizeof k1);
}

/* A tenant's pattern: glibc's regcomp crashed on "(|)(\1\1)*" (issue 38);
 * back references and callouts are refused, an over-long pattern too, and a
 * catastrophic one ends at its limit in bounded time. */
static void test_pattern_limits(void **state)
{
	(void)state;
	aw_pattern *p = NULL;
	aw_error err = {0};
	const char *refused[] = {"(|)(\\1\\1)*", "(a)\\1", "(?<n>a)\\k<n>", "(?C1)a", "(", "a\\C"};
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		assert_int_equal(aw_pattern_compile(refused[i], &p, &err), AW_E_REQ_INVALID);
		assert_null(p);
		assert_true(err.msg[0] != 0);
	}
	char longer[AW_PATTERN_MAX + 2];
	memset(longer, 'a', sizeof longer - 1);
	longer[sizeof longer - 1] = 0;
	assert_int_equal(aw_pattern_check(longer, &err), AW_E_REQ_INVALID);

	assert_int_equal(aw_pattern_compile("(?i)^deploy\\b", &p, &err), AW_OK);
	assert_int_equal(aw_pattern_match(p, "DEPLOY now", 10), 1);
	assert_int_equal(aw_pattern_match(p, "please deploy", 13), 0);
	aw_pattern_free(p);
	assert_int_equal(aw_pattern_compile("caf\u00e9", &p, &err), AW_OK);
	aw_pattern_free(p);

	/* exponential backtracking: ended by the limit, quickly */
	assert_int_equal(aw_pattern_compile("^(a+)+$", &p, &err), AW_OK);
	char text[4096];
	memset(text, 'a', sizeof text - 2);
	text[sizeof text - 2] = 'b';
	text[sizeof text - 1] = 0;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	int m = aw_pattern_match(p, text, strlen(text));
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(m == -1 || m == 0);
	assert_true((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < 2000);
	aw_pattern_free(p);

	/* a tenant's JSON Schema pattern (a response_format, a tool's input
	 * schema) matches under the same limits: a hit is a mismatch */
	json_t *doc = json_pack("{s:s, s:s}", "type", "string", "pattern", "^(a+)+$");
	aw_schema *sch = NULL;
	assert_int_equal(aw_schema_compile(doc, &sch, &err), AW_OK);
	json_t *str = json_string(text);
	aw_schema_error se[1];
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_true(aw_schema_validate(sch, str, se, 1) > 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < 2000);
	json_decref(str);
	aw_schema_free(sch);
	json_decref(doc);
}

/* An address's class (egress.h), IPv4 or IPv6 text. */
static aw_egress_class class_of(const char *a)
{
	struct sockaddr_in in = {.sin_family = AF_INET};
	struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
	if (inet_pton(AF_INET, a, &in.sin_addr) == 1)
		return aw_egress_classify((const struct sockaddr *)&in);
	if (inet_pton(AF_INET6, a, &in6.sin6_addr) != 1)
		fail_msg("%s: not an address", a);
	return aw_egress_classify((const struct sockaddr *)&in6);
}

/* IPv6 forms that carry an IPv4 address are judged as that address: a
 * private, loopback or metadata address is not reached through NAT64, 6to4,
 * the compatible, mapped or translated forms. */
static void test_egress_embedded_v4(void **state)
{
	(void)state;
	const struct {
		const char *a;
		aw_egress_class want;
	} cases[] = {
		{"127.0.0.1", AW_EGRESS_PRIVATE},
		{"169.254.169.254", AW_EGRESS_FORBIDDEN},
		{"8.8.8.8", AW_EGRESS_OK},
		{"::", AW_EGRESS_FORBIDDEN},
		{"::1", AW_EGRESS_PRIVATE},
		/* IPv4-mapped, IPv4-translated, IPv4-compatible */
		{"::ffff:127.0.0.1", AW_EGRESS_PRIVATE},
		{"::ffff:169.254.169.254", AW_EGRESS_FORBIDDEN},
		{"::ffff:8.8.8.8", AW_EGRESS_OK},
		{"::ffff:0:10.0.0.1", AW_EGRESS_PRIVATE},
		{"::ffff:0:169.254.169.254", AW_EGRESS_FORBIDDEN},
		{"::127.0.0.1", AW_EGRESS_PRIVATE},
		{"::10.1.2.3", AW_EGRESS_PRIVATE},
		{"::169.254.169.254", AW_EGRESS_FORBIDDEN},
		{"::0.0.0.2", AW_EGRESS_FORBIDDEN},
		{"::8.8.8.8", AW_EGRESS_OK},
		/* NAT64, well-known prefix */
		{"64:ff9b::127.0.0.1", AW_EGRESS_PRIVATE},
		{"64:ff9b::7f00:1", AW_EGRESS_PRIVATE},
		{"64:ff9b::192.168.1.1", AW_EGRESS_PRIVATE},
		{"64:ff9b::169.254.169.254", AW_EGRESS_FORBIDDEN},
		{"64:ff9b::a9fe:a9fe", AW_EGRESS_FORBIDDEN},
		{"64:ff9b::8.8.8.8", AW_EGRESS_OK},
		/* NAT64, local-use 64:ff9b:1::/48: every RFC 6052 placement */
		{"64:ff9b:1::10.0.0.1", AW_EGRESS_PRIVATE},	     /* /96 */
		{"64:ff9b:1::169.254.169.254", AW_EGRESS_FORBIDDEN}, /* /96 */
		{"64:ff9b:1:7f00:0:100::", AW_EGRESS_PRIVATE},	     /* /48: 127.0.0.1 */
		{"64:ff9b:1:a9:fe:a9fe::", AW_EGRESS_FORBIDDEN},     /* /56: 169.254.169.254 */
		{"64:ff9b:1:0:a:0:100::", AW_EGRESS_PRIVATE},	     /* /64: 10.0.0.1 */
		{"64:ff9b:1:808:8:808::", AW_EGRESS_OK},	     /* /48: 8.8.8.8 */
		{"64:ff9b:1::", AW_EGRESS_FORBIDDEN},		     /* no address */
		/* 6to4 */
		{"2002:7f00:1::", AW_EGRESS_PRIVATE},
		{"2002:a9fe:a9fe::1", AW_EGRESS_FORBIDDEN},
		{"2002:c0a8:101:1::1", AW_EGRESS_PRIVATE},
		{"2002:ac10::", AW_EGRESS_PRIVATE},
		{"2002:6440::", AW_EGRESS_PRIVATE},
		{"2002:e000:1::", AW_EGRESS_FORBIDDEN},
		{"2002:808:808::", AW_EGRESS_OK},
		/* not carriers: as before */
		{"fd00:ec2::254", AW_EGRESS_FORBIDDEN},
		{"fe80::1", AW_EGRESS_FORBIDDEN},
		{"fc00::1", AW_EGRESS_PRIVATE},
		{"ff02::1", AW_EGRESS_FORBIDDEN},
		{"64:ff9c::127.0.0.1", AW_EGRESS_OK},
		{"2001:4860::8888", AW_EGRESS_OK},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		if (class_of(cases[i].a) != cases[i].want)
			fail_msg("%s: class %d, want %d", cases[i].a, class_of(cases[i].a),
				 cases[i].want);
}

/* The operator's grant: named projects, "*", none; a later grant replaces. */
static void test_egress_grant(void **state)
{
	(void)state;
	assert_int_equal(aw_egress_grant("alpha,beta", NULL), AW_OK);
	assert_true(aw_egress_private_granted("alpha"));
	assert_true(aw_egress_private_granted("beta"));
	assert_false(aw_egress_private_granted("alph"));
	assert_false(aw_egress_private_granted("alphabet"));
	assert_false(aw_egress_private_granted(""));
	assert_false(aw_egress_private_granted(NULL));
	assert_int_equal(aw_egress_grant("x,*", NULL), AW_OK);
	assert_true(aw_egress_private_granted("anyone"));
	assert_int_equal(aw_egress_grant(NULL, NULL), AW_OK);
	assert_false(aw_egress_private_granted("alpha"));
	assert_int_equal(aw_egress_grant("", NULL), AW_OK);
	assert_false(aw_egress_private_granted("alpha"));
}

/* --listen: IPv4, [IPv6] and host names (localhost: from /etc/hosts, no
 * DNS); the malformed refused with what a good one looks like. */
static void test_listen_parse(void **state)
{
	(void)state;
	struct sockaddr_storage sa;
	socklen_t len = 0;
	char txt[64];
	aw_error err = {0};
	static const struct {
		const char *in, *out;
	} good[] = {{"127.0.0.1:8080", "127.0.0.1:8080"}, {"0.0.0.0:0", "0.0.0.0:0"},
		    {"[::1]:8080", "[::1]:8080"},	  {"[::]:65535", "[::]:65535"},
		    {"[fe80::1]:1", "[fe80::1]:1"},	  {"localhost:8080", "127.0.0.1:8080"}};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		assert_int_equal(aw_http_listen_parse(good[i].in, 1, &sa, &len, &err), AW_OK);
		aw_http_listen_format(&sa, txt, sizeof txt);
		assert_string_equal(txt, good[i].out);
		assert_int_equal(len, sa.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							       : sizeof(struct sockaddr_in));
	}
	static const char *const bad[] = {"",
					  "8080",
					  ":8080",
					  "127.0.0.1",
					  "127.0.0.1:",
					  "127.0.0.1:65536",
					  "127.0.0.1:-1",
					  "127.0.0.1:80x",
					  "::1:8080",
					  "[::1]",
					  "[::1]8080",
					  "[]:8080",
					  "[1.2.3.4]:80",
					  "[::1]:123456",
					  "a b:80",
					  "host/x:80"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&err, 0, sizeof err);
		assert_int_equal(aw_http_listen_parse(bad[i], 1, &sa, &len, &err), AW_E_CONFIG);
		assert_non_null(strstr(err.msg, "--listen"));
	}
	/* without resolving, a host name is refused (the fuzz target's way) */
	assert_int_equal(aw_http_listen_parse("localhost:80", 0, &sa, &len, &err), AW_E_CONFIG);
	assert_int_equal(aw_http_listen_parse("[::1]:80", 0, &sa, &len, &err), AW_OK);
}

/* A copy either fits whole or leaves "" and says -1: never a cut prefix
 * (a project id cut to another tenant's name). */
static void test_str_copy_whole_or_nothing(void **state)
{
	char d[5];
	memset(d, 'x', sizeof d);
	assert_int_equal(aw_str_copy(d, sizeof d, "abc"), 0); /* fits */
	assert_string_equal(d, "abc");
	assert_int_equal(aw_str_copy(d, sizeof d, "abcd"), 0); /* exactly fits: 4 + NUL */
	assert_string_equal(d, "abcd");
	memset(d, 'x', sizeof d);
	assert_int_equal(aw_str_copy(d, sizeof d, "abcde"), -1); /* one too long */
	assert_string_equal(d, "");
	assert_int_equal(aw_str_copy(d, sizeof d, "a much longer string"), -1);
	assert_string_equal(d, "");
	assert_int_equal(aw_str_copy(d, sizeof d, ""), 0); /* empty */
	assert_string_equal(d, "");
	assert_int_equal(aw_str_copy(d, sizeof d, NULL), 0); /* NULL reads as "" */
	assert_string_equal(d, "");
	assert_int_equal(aw_str_copy(d, 0, "a"), -1); /* no room at all: nothing written */
	assert_int_equal(aw_str_copy(d, 1, ""), 0);
	/* the macros: the array's own size; arrays proved at compile time */
	char big[8], small[4] = "xyz";
	assert_int_equal(AW_STR_COPY(big, "1234567"), 0);
	assert_int_equal(AW_STR_COPY(big, "12345678"), -1);
	assert_string_equal(big, "");
	AW_COPY_ARRAY(big, small);
	assert_string_equal(big, "xyz");
	AW_COPY_ARRAY(big, "lit");
	assert_string_equal(big, "lit");
	assert_true(AW_IS_ARRAY(big));
	const char *p = big;
	assert_false(AW_IS_ARRAY(p));
	(void)p;
	/* text for people: whole, or visibly shortened at a whole character */
	char s[8];
	aw_str_show(s, sizeof s, "1234567");
	assert_string_equal(s, "1234567");
	aw_str_show(s, sizeof s, "12345678");
	assert_string_equal(s, "1234...");
	aw_str_show(s, sizeof s, "123\xc3\xa9\xc3\xa9\xc3\xa9"); /* e-acute: 2 bytes */
	assert_string_equal(s, "123...");
	aw_str_show(s, 3, "abcdef");
	assert_string_equal(s, "");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_str_copy_whole_or_nothing),
		cmocka_unit_test(test_error_catalogue),
		cmocka_unit_test(test_errors_doc_lists_every_code),
		cmocka_unit_test(test_uuid7_layout_and_order),
		cmocka_unit_test(test_traceparent),
		cmocka_unit_test(test_egress_embedded_v4),
		cmocka_unit_test(test_egress_grant),
		cmocka_unit_test(test_crypto_vectors),
		cmocka_unit_test(test_clock_format),
		cmocka_unit_test(test_identifiers),
		cmocka_unit_test(test_strict_json),
		cmocka_unit_test(test_metrics_render),
		cmocka_unit_test(test_metrics_team_bound),
		cmocka_unit_test(test_metrics_alerting),
		cmocka_unit_test(test_metrics_process_and_runs),
		cmocka_unit_test(test_jcs),
		cmocka_unit_test(test_json_string),
		cmocka_unit_test(test_random_pool),
		cmocka_unit_test(test_pattern_limits),
		cmocka_unit_test(test_egress_embedded_v4),
		cmocka_unit_test(test_egress_grant),
		cmocka_unit_test(test_listen_parse),
	};
	return AW_TEST_MAIN_PLAIN("core", tests, NULL, NULL);
}
