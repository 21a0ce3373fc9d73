/*
 * test_otel.c - unit tests of src/otel: the OTEL_* list parser and the
 * settings a start refuses; the OTLP JSON of a batch as a receiver (a
 * socket in this process) gets it - ids, kinds, flags, 64-bit numbers as
 * strings, status, attributes that found no room counted, the headers, a
 * partial success; and the queue's bounds against a receiver that never
 * answers: a project's share, the whole queue, the shutdown bounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "awooop/clock.h"
#include "awooop/metrics.h"
#include "awooop/otel.h"
#include "otel/otel_internal.h"

static void clear_env(void)
{
	const char *names[] = {"OTEL_EXPORTER_OTLP_ENDPOINT",
			       "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
			       "OTEL_EXPORTER_OTLP_HEADERS",
			       "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
			       "OTEL_EXPORTER_OTLP_TIMEOUT",
			       "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
			       "OTEL_BSP_MAX_QUEUE_SIZE",
			       "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
			       "OTEL_BSP_SCHEDULE_DELAY",
			       "OTEL_SDK_DISABLED",
			       "OTEL_TRACES_EXPORTER",
			       "OTEL_SERVICE_NAME",
			       "OTEL_RESOURCE_ATTRIBUTES",
			       "OTEL_EXPORTER_OTLP_CERTIFICATE",
			       "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
			       "OTEL_EXPORTER_OTLP_CLIENT_KEY"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		unsetenv(names[i]);
}

/* ------------------------------------------------------------ the parser */

static char got[1024];

static int collect(void *ud, const char *k, const char *v)
{
	(void)ud;
	size_t n = strlen(got);
	snprintf(got + n, sizeof got - n, "[%s=%s]", k, v);
	return 0;
}

static void test_list_parser(void **state)
{
	(void)state;
	aw_error err = {0};
	got[0] = '\0';
	assert_int_equal(
		aw_otel_parse_list(" a=1 , b = two%20words,,c=%2C%3d, ", "L", collect, NULL, &err),
		AW_OK);
	assert_string_equal(got, "[a=1][b=two words][c=,=]");
	got[0] = '\0';
	assert_int_equal(aw_otel_parse_list("k=", "L", collect, NULL, &err), AW_OK);
	assert_string_equal(got, "[k=]");
	const char *bad[] = {"novalue",	    "=v",	   "a b=1", "k=se%zzcret",
			     "k=se%0acret", "k=se%7fcret", "k=%4"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&err, 0, sizeof err);
		assert_int_equal(aw_otel_parse_list(bad[i], "L", collect, NULL, &err), AW_E_CONFIG);
		assert_non_null(strstr(err.msg, "L: entry 1"));
		assert_null(strstr(err.msg, "se")); /* never the value */
	}
	char *big = malloc(9000);
	memset(big, 'a', 8999);
	big[0] = 'k', big[1] = '=', big[8998] = '\0';
	assert_int_equal(aw_otel_parse_list(big, "L", collect, NULL, &err), AW_E_CONFIG);
	free(big);
}

static void test_settings_refused(void **state)
{
	(void)state;
	aw_error err = {0};
	clear_env();
	assert_int_equal(aw_otel_start(&(aw_otel_opts){0}, &err), AW_OK);
	assert_false(aw_otel_on()); /* no endpoint: no exporter */
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9", 1);
	setenv("OTEL_SDK_DISABLED", "true", 1);
	assert_int_equal(aw_otel_start(&(aw_otel_opts){0}, &err), AW_OK);
	assert_false(aw_otel_on());
	unsetenv("OTEL_SDK_DISABLED");
	struct {
		const char *name, *value, *says;
	} cases[] = {
		{"OTEL_BSP_MAX_QUEUE_SIZE", "lots", "OTEL_BSP_MAX_QUEUE_SIZE"},
		{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4096", "may not exceed"},
		{"OTEL_EXPORTER_OTLP_TIMEOUT", "0", "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{"OTEL_BSP_SCHEDULE_DELAY", "60000", "OTEL_BSP_SCHEDULE_DELAY"},
		{"OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent/ca.pem", "cannot read"},
		{"OTEL_EXPORTER_OTLP_CLIENT_KEY", "/etc/hostname", "go together"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "Content-Type=text/plain", "is refused"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "x=sec%0dret", "control character"},
		{"OTEL_TRACES_EXPORTER", "zipkin", "otlp or none"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://x/v1/traces", "http:// or https://"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		setenv(cases[i].name, cases[i].value, 1);
		memset(&err, 0, sizeof err);
		assert_int_equal(aw_otel_start(&(aw_otel_opts){0}, &err), AW_E_CONFIG);
		assert_non_null(strstr(err.msg, cases[i].says));
		assert_null(strstr(err.msg, "sec"));
		assert_false(aw_otel_on());
		unsetenv(cases[i].name);
	}
	/* --otlp-endpoint wins over the variables, and is checked the same */
	assert_int_equal(aw_otel_start(&(aw_otel_opts){.endpoint = "gopher://x"}, &err),
			 AW_E_CONFIG);
	clear_env();
}

/* ---------------------------------------------------- a receiver in here */

typedef struct {
	int fd, port;
	int answer;	   /* 0: never answer; else the HTTP status */
	const char *reply; /* the body answered */
	char head[4096];   /* the last request's head */
	char *body;	   /* the last request's body (malloc'd) */
	int requests;
	pthread_mutex_t mu;
	pthread_t th;
} receiver;

static void *serve(void *p)
{
	receiver *r = p;
	for (;;) {
		int c = accept(r->fd, NULL, NULL);
		if (c < 0)
			return NULL;
		if (!r->answer) { /* holds the connection, says nothing */
			char sink[4096];
			while (read(c, sink, sizeof sink) > 0)
				;
			close(c);
			continue;
		}
		char buf[1 << 16];
		size_t n = 0;
		ssize_t k;
		char *end = NULL;
		while (n < sizeof buf - 1 && (k = read(c, buf + n, sizeof buf - 1 - n)) > 0) {
			n += (size_t)k;
			buf[n] = '\0';
			if ((end = strstr(buf, "\r\n\r\n"))) {
				const char *cl = strcasestr(buf, "Content-Length:");
				size_t want = cl ? strtoul(cl + 15, NULL, 10) : 0;
				if (n >= (size_t)(end + 4 - buf) + want)
					break;
			}
		}
		pthread_mutex_lock(&r->mu);
		if (end) {
			*end = '\0';
			snprintf(r->head, sizeof r->head, "%s", buf);
			free(r->body);
			r->body = strdup(end + 4);
		}
		r->requests++;
		pthread_mutex_unlock(&r->mu);
		char out[512];
		int m = snprintf(out, sizeof out,
				 "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
				 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
				 r->answer, strlen(r->reply), r->reply);
		ssize_t w = write(c, out, (size_t)m);
		(void)w;
		close(c);
	}
}

static void receiver_start(receiver *r, int answer, const char *reply)
{
	memset(r, 0, sizeof *r);
	pthread_mutex_init(&r->mu, NULL);
	r->answer = answer;
	r->reply = reply;
	r->fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(r->fd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(r->fd, 8), 0);
	socklen_t len = sizeof a;
	getsockname(r->fd, (struct sockaddr *)&a, &len);
	r->port = ntohs(a.sin_port);
	pthread_create(&r->th, NULL, serve, r);
}

static void receiver_stop(receiver *r)
{
	shutdown(r->fd, SHUT_RDWR);
	close(r->fd);
	pthread_join(r->th, NULL);
	free(r->body);
}

static void start_at(const receiver *r)
{
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/", r->port);
	aw_error err = {0};
	assert_int_equal(aw_otel_start(&(aw_otel_opts){.endpoint = url, .role = "api"}, &err),
			 AW_OK);
	assert_true(aw_otel_on());
}

static const aw_trace T = {"4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", 1};

static json_t *attr(json_t *attrs, const char *key)
{
	size_t i;
	json_t *a;
	json_array_foreach (attrs, i, a) {
		if (!strcmp(json_string_value(json_object_get(a, "key")), key))
			return json_object_get(a, "value");
	}
	return NULL;
}

static void test_encoding(void **state)
{
	(void)state;
	receiver r;
	receiver_start(&r, 200, "{\"partialSuccess\":{\"rejectedSpans\":\"1\"}}");
	clear_env();
	/* one batch: the second span fills it (the delay never passes) */
	setenv("OTEL_BSP_SCHEDULE_DELAY", "30000", 1);
	setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "2", 1);
	setenv("OTEL_SERVICE_NAME", "svc", 1);
	setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=ignored,team=ops%2Fsre", 1);
	setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20abc,x-a=1", 1);
	setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X-A=2", 1);
	aw_otel_stats before, after;
	aw_otel_stats_get(&before);
	start_at(&r);
	/* unsampled: nothing */
	aw_trace off = T;
	off.flags = 0;
	assert_null(aw_span_begin("x", AW_SPAN_SERVER, &off, NULL, 0, aw_clock_mono_ns()));
	/* a server span under a remote caller, an error, a long value */
	aw_span *s = aw_span_begin("HTTP", AW_SPAN_SERVER, &T, "b7ad6b7169203331", 1,
				   aw_clock_mono_ns() - 5000000);
	assert_non_null(s);
	aw_span_name(s, "POST", "/v1/x");
	aw_span_int(s, "http.response.status_code", 503);
	aw_span_project(s, "acme");
	aw_span_error(s, "503", "upstream down");
	char big[2000];
	memset(big, 'v', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	aw_span_str(s, "too.big", big); /* finds no room: counted */
	aw_span_end(s);
	/* a root client span */
	aw_trace t2 = T;
	memcpy(t2.span_id, "1111111111111111", 17);
	s = aw_span_begin("chat", AW_SPAN_CLIENT, &t2, NULL, 0, aw_clock_mono_ns());
	aw_span_str(s, "gen_ai.operation.name", "chat");
	aw_span_end(s);
	aw_otel_stop();
	assert_false(aw_otel_on());
	aw_otel_stats_get(&after);
	assert_int_equal(after.queued - before.queued, 2);
	assert_int_equal(after.exported - before.exported, 1); /* one of them refused */
	assert_int_equal(after.lost - before.lost, 1);
	pthread_mutex_lock(&r.mu);
	assert_int_equal(r.requests, 1);
	assert_non_null(strstr(r.head, "POST /v1/traces HTTP/1.1"));
	assert_non_null(strcasestr(r.head, "\r\nContent-Type: application/json"));
	assert_non_null(strcasestr(r.head, "\r\nAuthorization: Bearer abc"));
	assert_non_null(strcasestr(r.head, "\r\nX-A: 2"));
	assert_null(strcasestr(r.head, "x-a: 1"));
	json_error_t je;
	json_t *body = json_loads(r.body, 0, &je);
	pthread_mutex_unlock(&r.mu);
	assert_non_null(body);
	json_t *rs = json_array_get(json_object_get(body, "resourceSpans"), 0);
	json_t *ra = json_object_get(json_object_get(rs, "resource"), "attributes");
	assert_string_equal(
		json_string_value(json_object_get(attr(ra, "service.name"), "stringValue")), "svc");
	assert_string_equal(json_string_value(json_object_get(attr(ra, "team"), "stringValue")),
			    "ops/sre");
	assert_string_equal(
		json_string_value(json_object_get(attr(ra, "awooop.role"), "stringValue")), "api");
	assert_true(json_is_string(json_object_get(attr(ra, "process.pid"), "intValue")));
	json_t *ss = json_array_get(json_object_get(rs, "scopeSpans"), 0);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(ss, "scope"), "name")), "awooop");
	json_t *spans = json_object_get(ss, "spans");
	assert_int_equal(json_array_size(spans), 2);
	json_t *a = json_array_get(spans, 0), *b = json_array_get(spans, 1);
	assert_string_equal(json_string_value(json_object_get(a, "traceId")), T.trace_id);
	assert_string_equal(json_string_value(json_object_get(a, "spanId")), T.span_id);
	assert_string_equal(json_string_value(json_object_get(a, "parentSpanId")),
			    "b7ad6b7169203331");
	assert_string_equal(json_string_value(json_object_get(a, "name")), "POST /v1/x");
	assert_int_equal(json_integer_value(json_object_get(a, "kind")), 2);
	assert_int_equal(json_integer_value(json_object_get(a, "flags")), 0x301);
	assert_int_equal(json_integer_value(json_object_get(a, "droppedAttributesCount")), 1);
	long long st = strtoll(json_string_value(json_object_get(a, "startTimeUnixNano")), NULL,
			       10),
		  en = strtoll(json_string_value(json_object_get(a, "endTimeUnixNano")), NULL, 10);
	assert_true(en - st >= 5000000 && en - st < 5000000000LL);
	json_t *aa = json_object_get(a, "attributes");
	assert_string_equal(json_string_value(json_object_get(attr(aa, "http.response.status_code"),
							      "intValue")),
			    "503");
	assert_string_equal(
		json_string_value(json_object_get(attr(aa, "error.type"), "stringValue")), "503");
	assert_string_equal(
		json_string_value(json_object_get(attr(aa, "awooop.project"), "stringValue")),
		"acme");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(a, "status"), "code")),
			 2);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(a, "status"), "message")),
		"upstream down");
	assert_null(json_object_get(b, "parentSpanId"));
	assert_null(json_object_get(b, "status"));
	assert_int_equal(json_integer_value(json_object_get(b, "flags")), 0x101);
	assert_int_equal(json_integer_value(json_object_get(b, "kind")), 3);
	json_decref(body);
	receiver_stop(&r);
	clear_env();
}

static void test_bounds_and_shutdown(void **state)
{
	(void)state;
	receiver r;
	receiver_start(&r, 0, NULL); /* accepts, never answers */
	clear_env();
	setenv("OTEL_BSP_MAX_QUEUE_SIZE", "8", 1);
	setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1", 1);
	setenv("OTEL_BSP_SCHEDULE_DELAY", "1", 1);
	setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1500", 1);
	aw_otel_stats before, after;
	aw_otel_stats_get(&before);
	start_at(&r);
	aw_span *s = aw_span_begin("first", AW_SPAN_INTERNAL, &T, NULL, 0, aw_clock_mono_ns());
	aw_span_end(s);
	/* the exporter takes it and waits on the silent receiver */
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&otel_q.mu);
		int n = otel_q.n;
		pthread_mutex_unlock(&otel_q.mu);
		if (!n)
			break;
		usleep(5000);
	}
	int64_t t0 = aw_clock_mono_ns();
	const char *projects[] = {"a", "a", "a", "a", "a",  /* the fifth: over a's half */
				  "b", "b", "b", "b", "c"}; /* c: the queue is full */
	for (size_t i = 0; i < sizeof projects / sizeof projects[0]; i++) {
		s = aw_span_begin("x", AW_SPAN_INTERNAL, &T, NULL, 0, aw_clock_mono_ns());
		aw_span_project(s, projects[i]);
		aw_span_end(s);
	}
	assert_true(aw_clock_mono_ns() - t0 < 100000000LL); /* never waited */
	aw_otel_stats_get(&after);
	assert_int_equal(after.queued - before.queued, 9);
	assert_int_equal(after.dropped - before.dropped, 2);
	char *m = aw_metrics_render();
	assert_non_null(strstr(m, "awooop_otel_spans_dropped_total{reason=\"project_share\"}"));
	assert_non_null(strstr(m, "awooop_otel_spans_dropped_total{reason=\"queue_full\"}"));
	free(m);
	t0 = aw_clock_mono_ns();
	aw_otel_stop(); /* the POST in flight and the rest: within the timeout */
	int64_t took = aw_clock_mono_ns() - t0;
	assert_true(took < 4000000000LL);
	aw_otel_stats_get(&after);
	assert_int_equal(after.exported - before.exported, 0);
	assert_int_equal(after.lost - before.lost, 9);
	/* after the stop: nothing begins */
	assert_null(aw_span_begin("late", AW_SPAN_INTERNAL, &T, NULL, 0, aw_clock_mono_ns()));
	receiver_stop(&r);
	clear_env();
}

static void test_run_span_id(void **state)
{
	(void)state;
	char a[17], b[17], c[17];
	aw_otel_run_span_id("01a24365-4d43-7290-9238-96a90d9acf37", a);
	aw_otel_run_span_id("01a24365-4d43-7290-9238-96a90d9acf37", b);
	aw_otel_run_span_id("01a24365-4d43-7290-9238-96a90d9acf38", c);
	assert_string_equal(a, b);
	assert_string_not_equal(a, c);
	assert_int_equal(strlen(a), 16);
	assert_int_equal(strspn(a, "0123456789abcdef"), 16);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_parser), cmocka_unit_test(test_settings_refused),
		cmocka_unit_test(test_encoding),    cmocka_unit_test(test_bounds_and_shutdown),
		cmocka_unit_test(test_run_span_id),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
