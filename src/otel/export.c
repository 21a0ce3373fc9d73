/*
 * export.c - the OTLP/HTTP trace exporter (otel.h): its settings from
 * --otlp-endpoint and the OTEL_* variables, the resource every batch carries,
 * and the one thread that takes batches off the queue (span.c), encodes them
 * as OTLP JSON (ids in hex, 64-bit numbers as decimal strings, enums as
 * numbers) and POSTs them to {endpoint}/v1/traces.
 *
 * Failures never reach a caller: 429, 502, 503, 504 and connection failures
 * are retried (Retry-After when the receiver says, else 1, 2, 4, 8 s with
 * jitter; 5 tries), anything else loses the batch; either way the spans are
 * counted by why. Meanwhile the queue fills and then drops, counted. The
 * loop's metric ticks after every round that lost nothing.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "awooop/alloc.h"
#include "awooop/buf.h"
#include "awooop/clock.h"
#include "awooop/crypto.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/str.h"
#include "awooop/uuid.h"
#include "otel_internal.h"

#ifndef AWOOOP_VERSION
#define AWOOOP_VERSION "0.1.0"
#endif

#define DEFAULT_QUEUE 2048
#define DEFAULT_BATCH 512
#define DEFAULT_DELAY_MS 1000
#define DEFAULT_TIMEOUT_MS 10000
#define MAX_ATTEMPTS 5
#define BACKOFF_MAX_MS 30000
#define FINAL_FLUSH_MS 5000
#define RESPONSE_MAX 65536
#define WARN_EVERY_NS (60 * 1000000000LL)

static struct {
	pthread_t thread;
	int started;
	char url[2048];
	char shown[600]; /* the URL for logs: no user, password or query */
	/* TLS: the receiver's CA bundle, a client certificate and its key
	 * (PEM files; "" = libcurl's default, none) */
	char ca[1024], cert[1024], key[1024];
	struct curl_slist *headers;
	json_t *resource; /* the exporter thread's once started */
	int delay_ms, timeout_ms;
	int64_t final_ns;     /* when stopping: the last try's deadline (otel_q.mu) */
	int64_t last_warn_ns; /* exporter thread */
	int warned;	      /* exporter thread */
} ex;

/* When stopping: the moment a transfer in flight is abandoned (0: none). */
static atomic_llong abort_at_ns;

/* ---------------------------------------------------------------- settings */

/* A whole number from the environment variable name (unset or empty: def). */
static aw_err env_long(const char *name, long def, long lo, long hi, long *out, aw_error *err)
{
	const char *v = getenv(name);
	*out = def;
	if (!v || !v[0])
		return AW_OK;
	char *end;
	long x = strtol(v, &end, 10);
	if (*end || x < lo || x > hi)
		return aw_fail(err, AW_E_CONFIG, "%s must be a whole number in %ld..%ld", name, lo,
			       hi);
	*out = x;
	return AW_OK;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && v[0] ? v : NULL;
}

/* headers: lower-cased name -> "Name: value"; a later list's name wins */
static int add_header(void *ud, const char *key, const char *value)
{
	json_t *h = ud;
	char lower[128];
	size_t n = strlen(key);
	if (n >= sizeof lower)
		return 1;
	for (size_t i = 0; i <= n; i++)
		lower[i] = (char)((key[i] >= 'A' && key[i] <= 'Z') ? key[i] + 32 : key[i]);
	if (!strcmp(lower, "content-type") || !strcmp(lower, "content-length") ||
	    !strcmp(lower, "host") || !strcmp(lower, "transfer-encoding") ||
	    !strcmp(lower, "expect"))
		return 1; /* the exporter's own */
	size_t cap = n + strlen(value) + 3;
	char *line = aw_malloc(cap);
	if (!line)
		return 1;
	snprintf(line, cap, "%s: %s", key, value);
	int rc = json_object_set_new(h, lower, json_string(line));
	memset(line, 0, cap);
	free(line);
	return rc != 0; /* not UTF-8 */
}

static int add_resource(void *ud, const char *key, const char *value)
{
	return json_object_set_new(ud, key, json_string(value)) != 0;
}

static json_t *kv(const char *key, json_t *value)
{
	json_t *o = json_object();
	json_object_set_new(o, "key", json_string(key));
	json_object_set_new(o, "value", value);
	return o;
}

static json_t *str_value(const char *s)
{
	json_t *v = json_object();
	json_object_set_new(v, "stringValue", json_string(s));
	return v;
}

static json_t *int_value(long long i)
{
	char n[32];
	snprintf(n, sizeof n, "%lld", i); /* int64: a decimal string in JSON */
	json_t *v = json_object();
	json_object_set_new(v, "intValue", json_string(n));
	return v;
}

/* The resource: what awooop knows of itself, then OTEL_RESOURCE_ATTRIBUTES,
 * then OTEL_SERVICE_NAME. */
static aw_err resource_new(const aw_otel_opts *o, json_t **out, aw_error *err)
{
	json_t *m = json_object();
	char host[256] = "", id[AW_UUID_STR_LEN + 1];
	gethostname(host, sizeof host - 1);
	aw_uuid7_str(id);
	json_object_set_new(m, "service.name", json_string("awooop"));
	json_object_set_new(m, "service.version", json_string(AWOOOP_VERSION));
	json_object_set_new(m, "service.instance.id", json_string(id));
	if (host[0])
		json_object_set_new(m, "host.name", json_string(host));
	if (o && o->role)
		json_object_set_new(m, "awooop.role", json_string(o->role));
	aw_err e = AW_OK;
	if (env("OTEL_RESOURCE_ATTRIBUTES"))
		e = aw_otel_parse_list(env("OTEL_RESOURCE_ATTRIBUTES"), "OTEL_RESOURCE_ATTRIBUTES",
				       add_resource, m, err);
	if (!e && env("OTEL_SERVICE_NAME") &&
	    json_object_set_new(m, "service.name", json_string(env("OTEL_SERVICE_NAME"))))
		e = aw_fail(err, AW_E_CONFIG, "OTEL_SERVICE_NAME is not UTF-8");
	json_t *attrs = json_array();
	const char *k;
	json_t *v;
	json_object_foreach (m, k, v) {
		json_array_append_new(attrs, kv(k, str_value(json_string_value(v))));
	}
	json_array_append_new(attrs, kv("process.pid", int_value((long long)getpid())));
	json_decref(m);
	if (e) {
		json_decref(attrs);
		return e;
	}
	*out = json_object();
	json_object_set_new(*out, "attributes", attrs);
	return AW_OK;
}

/* ex.url from the endpoint (base + /v1/traces, or the traces URL as is), and
 * ex.shown. */
static aw_err set_url(const char *base, const char *full, aw_error *err)
{
	const char *what = full ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" : "the OTLP endpoint";
	if (full) {
		if (AW_STR_COPY(ex.url, full) < 0)
			return aw_fail(err, AW_E_CONFIG, "%s is too long", what);
	} else {
		size_t n = strlen(base);
		while (n && base[n - 1] == '/')
			n--;
		if (n + sizeof "/v1/traces" > sizeof ex.url)
			return aw_fail(err, AW_E_CONFIG, "%s is too long", what);
		snprintf(ex.url, sizeof ex.url, "%.*s/v1/traces", (int)n, base);
	}
	if (strncasecmp(ex.url, "http://", 7) && strncasecmp(ex.url, "https://", 8))
		return aw_fail(err, AW_E_CONFIG, "%s must be an http:// or https:// URL", what);
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
	aw_err e = AW_OK;
	if (!u || curl_url_set(u, CURLUPART_URL, ex.url, 0) ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) || curl_url_get(u, CURLUPART_PATH, &path, 0))
		e = aw_fail(err, AW_E_CONFIG, "%s is not a URL", what);
	else {
		curl_url_get(u, CURLUPART_PORT, &port, 0);
		snprintf(ex.shown, sizeof ex.shown, "%s://%s%s%s%s", scheme, host, port ? ":" : "",
			 port ? port : "", path);
	}
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_url_cleanup(u);
	return e;
}

/* A PEM file setting (the traces variable, else the general one) into out,
 * checked readable now: a wrong path is said at start, not at every export. */
static aw_err file_setting(const char *traces, const char *general, char *out, size_t cap,
			   aw_error *err)
{
	const char *name = env(traces) ? traces : general, *v = env(name);
	out[0] = '\0';
	if (!v)
		return AW_OK;
	if (access(v, R_OK) != 0 || aw_str_copy(out, cap, v) < 0)
		return aw_fail(err, AW_E_CONFIG, "%s: cannot read the file it names", name);
	return AW_OK;
}

static void *exporter(void *arg);

aw_err aw_otel_start(const aw_otel_opts *o, aw_error *err)
{
	if (ex.started)
		return aw_fail(err, AW_E_CONFIG, "the trace exporter already runs");
	const char *off = env("OTEL_SDK_DISABLED"), *kind = env("OTEL_TRACES_EXPORTER");
	if ((off && !strcasecmp(off, "true")) || (kind && !strcasecmp(kind, "none")))
		return AW_OK;
	if (kind && strcasecmp(kind, "otlp"))
		return aw_fail(err, AW_E_CONFIG, "OTEL_TRACES_EXPORTER must be otlp or none");
	const char *base = o && o->endpoint && o->endpoint[0] ? o->endpoint : NULL, *full = NULL;
	if (!base && !(full = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")))
		base = env("OTEL_EXPORTER_OTLP_ENDPOINT");
	if (!base && !full)
		return AW_OK;
	aw_err e = set_url(base, full, err);
	long queue = 0, batch = 0, delay = 0, timeout = 0;
	if (!e)
		e = env_long("OTEL_BSP_MAX_QUEUE_SIZE", DEFAULT_QUEUE, 1, 1000000, &queue, err);
	if (!e)
		e = env_long("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", DEFAULT_BATCH, 1, 1000000, &batch,
			     err);
	if (!e)
		e = env_long("OTEL_BSP_SCHEDULE_DELAY", DEFAULT_DELAY_MS, 1, 30000, &delay, err);
	if (!e)
		e = env_long("OTEL_EXPORTER_OTLP_TIMEOUT", DEFAULT_TIMEOUT_MS, 1, 600000, &timeout,
			     err);
	if (!e)
		e = env_long("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", timeout, 1, 600000, &timeout,
			     err);
	if (!e)
		e = file_setting("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
				 "OTEL_EXPORTER_OTLP_CERTIFICATE", ex.ca, sizeof ex.ca, err);
	if (!e)
		e = file_setting("OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE",
				 "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", ex.cert, sizeof ex.cert,
				 err);
	if (!e)
		e = file_setting("OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY",
				 "OTEL_EXPORTER_OTLP_CLIENT_KEY", ex.key, sizeof ex.key, err);
	if (!e && !ex.cert[0] != !ex.key[0])
		e = aw_fail(
			err, AW_E_CONFIG,
			"a client certificate and its key go together "
			"(OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE, OTEL_EXPORTER_OTLP_CLIENT_KEY)");
	if (!e && batch > queue)
		e = aw_fail(
			err, AW_E_CONFIG,
			"OTEL_BSP_MAX_EXPORT_BATCH_SIZE may not exceed OTEL_BSP_MAX_QUEUE_SIZE");
	json_t *hdrs = json_object();
	if (!e && env("OTEL_EXPORTER_OTLP_HEADERS"))
		e = aw_otel_parse_list(env("OTEL_EXPORTER_OTLP_HEADERS"),
				       "OTEL_EXPORTER_OTLP_HEADERS", add_header, hdrs, err);
	if (!e && env("OTEL_EXPORTER_OTLP_TRACES_HEADERS"))
		e = aw_otel_parse_list(env("OTEL_EXPORTER_OTLP_TRACES_HEADERS"),
				       "OTEL_EXPORTER_OTLP_TRACES_HEADERS", add_header, hdrs, err);
	struct curl_slist *list = NULL;
	list = curl_slist_append(list, "Content-Type: application/json");
	list = curl_slist_append(list, "Expect:");
	const char *k;
	json_t *v;
	json_object_foreach (hdrs, k, v) {
		list = curl_slist_append(list, json_string_value(v));
	}
	int nhdrs = (int)json_object_size(hdrs);
	json_decref(hdrs);
	json_t *resource = NULL;
	if (!e)
		e = resource_new(o, &resource, err);
	if (!e && !list)
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	if (e) {
		curl_slist_free_all(list);
		json_decref(resource);
		return e;
	}
	const char *proto = env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
	if (!proto)
		proto = env("OTEL_EXPORTER_OTLP_PROTOCOL");
	if (proto && strcmp(proto, "http/json"))
		aw_log(AW_LOG_WARN, NULL,
		       "traces are exported as OTLP/HTTP JSON only; the protocol asked is ignored",
		       "protocol", strcmp(proto, "grpc") ? "http/protobuf" : "grpc", NULL);
	ex.headers = list;
	ex.resource = resource;
	ex.delay_ms = (int)delay;
	ex.timeout_ms = (int)timeout;
	ex.warned = 0;
	otel_q.max = (int)queue;
	otel_q.batch = (int)batch;
	otel_q.share_max = queue > 1 ? (int)(queue / 2) : 1;
	otel_q.stop = 0;
	atomic_store(&abort_at_ns, 0);
	aw_clock_cond_init(&otel_q.cv);
	atomic_store_explicit(&otel_q.on, 1, memory_order_release);
	if (pthread_create(&ex.thread, NULL, exporter, NULL) != 0) {
		atomic_store(&otel_q.on, 0);
		pthread_cond_destroy(&otel_q.cv);
		curl_slist_free_all(ex.headers);
		json_decref(ex.resource);
		ex.headers = NULL;
		ex.resource = NULL;
		return aw_fail(err, AW_E_NOMEM, "cannot start the trace exporter's thread");
	}
	ex.started = 1;
	char n[16], q[16], b[16];
	snprintf(n, sizeof n, "%d", nhdrs);
	snprintf(q, sizeof q, "%ld", queue);
	snprintf(b, sizeof b, "%ld", batch);
	aw_log(AW_LOG_INFO, NULL, "trace export on (OTLP/HTTP JSON)", "endpoint", ex.shown,
	       "headers", n, "queue", q, "batch", b, NULL);
	return AW_OK;
}

void aw_otel_stop(void)
{
	if (!ex.started)
		return;
	pthread_mutex_lock(&otel_q.mu);
	otel_q.stop = 1;
	int64_t last = ex.timeout_ms < FINAL_FLUSH_MS ? ex.timeout_ms : FINAL_FLUSH_MS;
	ex.final_ns = aw_clock_mono_ns() + last * 1000000LL;
	atomic_store(&abort_at_ns, ex.final_ns); /* a POST in flight ends there too */
	pthread_mutex_unlock(&otel_q.mu);
	pthread_cond_broadcast(&otel_q.cv);
	pthread_join(ex.thread, NULL);
	atomic_store(&otel_q.on, 0);
	pthread_mutex_lock(&otel_q.mu); /* the thread left only an empty queue */
	int n;
	aw_span *rest = otel_take(otel_q.n, &n);
	pthread_mutex_unlock(&otel_q.mu);
	otel_free_list(rest);
	pthread_cond_destroy(&otel_q.cv);
	curl_slist_free_all(ex.headers);
	json_decref(ex.resource);
	ex.headers = NULL;
	ex.resource = NULL;
	ex.started = 0;
}

/* ---------------------------------------------------------------- encoding */

static json_t *span_json(const aw_span *s)
{
	json_t *attrs = json_array();
	int dropped = s->dropped;
	for (int i = 0; i < s->nattr; i++) {
		const span_attr *a = &s->attr[i];
		json_t *v = a->is_int ? int_value(a->i) : NULL;
		if (!a->is_int) {
			json_t *str = json_string(otel_text(s, a->off)); /* NULL: not UTF-8 */
			if (str) {
				v = json_object();
				json_object_set_new(v, "stringValue", str);
			}
		}
		if (!v || json_array_append_new(attrs, kv(a->key, v)))
			dropped++;
	}
	char st[24], en[24];
	snprintf(st, sizeof st, "%lld", (long long)s->start_ns);
	snprintf(en, sizeof en, "%lld", (long long)s->end_ns);
	json_t *o = json_object();
	json_object_set_new(o, "traceId", json_string(s->trace_id));
	json_object_set_new(o, "spanId", json_string(s->span_id));
	if (s->parent[0])
		json_object_set_new(o, "parentSpanId", json_string(s->parent));
	json_object_set_new(o, "flags", json_integer(s->flags));
	const char *name = s->name_off >= 0 ? otel_text(s, s->name_off) : s->name;
	json_t *jn = json_string(name);
	json_object_set_new(o, "name", jn ? jn : json_string(s->name));
	json_object_set_new(o, "kind", json_integer(s->kind));
	json_object_set_new(o, "startTimeUnixNano", json_string(st));
	json_object_set_new(o, "endTimeUnixNano", json_string(en));
	json_object_set_new(o, "attributes", attrs);
	if (dropped)
		json_object_set_new(o, "droppedAttributesCount", json_integer(dropped));
	if (s->error) {
		json_t *status = json_object();
		json_object_set_new(status, "code", json_integer(2)); /* STATUS_CODE_ERROR */
		json_t *m = s->msg_off >= 0 ? json_string(otel_text(s, s->msg_off)) : NULL;
		if (m)
			json_object_set_new(status, "message", m);
		json_object_set_new(o, "status", status);
	}
	return o;
}

/* The request body of a batch (malloc'd), NULL out of memory. */
static char *encode(const aw_span *list)
{
	json_t *spans = json_array();
	for (const aw_span *s = list; s; s = s->next)
		json_array_append_new(spans, span_json(s));
	json_t *scope = json_object();
	json_object_set_new(scope, "name", json_string("awooop"));
	json_object_set_new(scope, "version", json_string(AWOOOP_VERSION));
	json_t *ss = json_object();
	json_object_set_new(ss, "scope", scope);
	json_object_set_new(ss, "spans", spans);
	json_t *rs = json_object();
	json_object_set(rs, "resource", ex.resource);
	json_object_set_new(rs, "scopeSpans", json_pack("[o]", ss));
	json_t *root = json_object();
	json_object_set_new(root, "resourceSpans", json_pack("[o]", rs));
	char *body = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	return body;
}

/* ---------------------------------------------------------------- sending */

enum { POST_OK, POST_RETRY, POST_FAIL };

typedef struct {
	aw_buf body;
	long retry_after_ms;
} response;

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	response *r = ud;
	aw_buf_add(&r->body, p, size * n); /* over the cap: kept short, not read */
	return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	response *r = ud;
	size_t len = size * n;
	if (len > 12 && !strncasecmp(p, "Retry-After:", 12)) {
		char v[32];
		size_t k = len - 12 < sizeof v - 1 ? len - 12 : sizeof v - 1;
		memcpy(v, p + 12, k);
		v[k] = '\0';
		char *end;
		long s = strtol(otel_trim(v), &end, 10);
		if (end != v && s >= 0) /* delay-seconds; an HTTP-date: our backoff */
			r->retry_after_ms = s > BACKOFF_MAX_MS / 1000 ? BACKOFF_MAX_MS : s * 1000;
	}
	return len;
}

/* libcurl's progress callback (at least once a second): a transfer still
 * going at the stopping deadline is abandoned (a receiver that never
 * answers holds no shutdown longer than that). */
static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)ud, (void)dt, (void)dn, (void)ut, (void)un;
	int64_t at = atomic_load(&abort_at_ns);
	return at && aw_clock_mono_ns() >= at;
}

/* One POST of body. *rejected: the spans a partial success refused. */
static int post(CURL *h, const char *body, long timeout_ms, long *retry_ms, long long *rejected,
		char *why, size_t wn)
{
	response r = {AW_BUF_INIT(RESPONSE_MAX), -1};
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 5000 ? timeout_ms : 5000L);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &r);
	CURLcode rc = curl_easy_perform(h);
	long status = 0;
	int out;
	*rejected = 0;
	*retry_ms = -1;
	if (rc != CURLE_OK) {
		aw_str_show(why, wn, curl_easy_strerror(rc)); /* words for people */
		out = POST_RETRY;
	} else if (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status), status / 100 == 2) {
		/* a partial success names how many spans it refused */
		json_t *j = json_loads(aw_buf_str(&r.body), 0, NULL);
		json_t *rs = json_object_get(json_object_get(j, "partialSuccess"), "rejectedSpans");
		if (json_is_string(rs))
			*rejected = strtoll(json_string_value(rs), NULL, 10);
		else if (json_is_integer(rs))
			*rejected = json_integer_value(rs);
		json_decref(j);
		out = POST_OK;
	} else {
		snprintf(why, wn, "HTTP %ld", status);
		out = status == 429 || status == 502 || status == 503 || status == 504 ? POST_RETRY
										       : POST_FAIL;
		*retry_ms = r.retry_after_ms;
	}
	aw_buf_free(&r.body);
	return out;
}

static void warn(const char *why, int n, const char *what)
{
	int64_t now = aw_clock_mono_ns();
	if (ex.warned && !aw_clock_older_than(ex.last_warn_ns, now, WARN_EVERY_NS))
		return;
	ex.warned = 1;
	ex.last_warn_ns = now;
	char c[16];
	snprintf(c, sizeof c, "%d", n);
	aw_log(AW_LOG_WARN, NULL, what, "endpoint", ex.shown, "detail", why, "spans", c, NULL);
}

/* Waits ms, or until the exporter is stopped; 1 when it was. */
static int pause_ms(long ms)
{
	int64_t until = aw_clock_mono_ns() + ms * 1000000LL;
	pthread_mutex_lock(&otel_q.mu);
	while (!otel_q.stop && aw_clock_mono_ns() < until) {
		struct timespec ts =
			aw_clock_after(CLOCK_MONOTONIC, (until - aw_clock_mono_ns()) / 1000000 + 1);
		pthread_cond_timedwait(&otel_q.cv, &otel_q.mu, &ts);
	}
	int stop = otel_q.stop;
	pthread_mutex_unlock(&otel_q.mu);
	return stop;
}

static long backoff_ms(int attempt)
{
	long ms = 1000L << (attempt < 5 ? attempt : 5);
	if (ms > BACKOFF_MAX_MS)
		ms = BACKOFF_MAX_MS;
	uint16_t r = 0;
	aw_random_bytes(&r, sizeof r); /* +-20%: exporters restarted together spread */
	return ms * 8 / 10 + (long)(r % (ms * 4 / 10 + 1));
}

static void lose(int n, const char *why)
{
	atomic_fetch_add(&otel_q.lost, n);
	aw_metrics_otel_spans(why, n);
}

/* Exports a batch of n spans (and frees it); 1 when nothing was lost. */
static int export_batch(CURL *h, aw_span *list, int n, int stopping)
{
	char *body = encode(list);
	otel_free_list(list);
	if (!body) {
		lose(n, "export_failed");
		return 0;
	}
	int ok = 0;
	for (int attempt = 0;; attempt++) {
		long timeout = ex.timeout_ms;
		if (stopping) {
			pthread_mutex_lock(&otel_q.mu);
			int64_t left = (ex.final_ns - aw_clock_mono_ns()) / 1000000;
			pthread_mutex_unlock(&otel_q.mu);
			if (left <= 0) {
				aw_metrics_otel_export("failed");
				lose(n, "export_failed");
				break;
			}
			if (left < timeout)
				timeout = (long)left;
		}
		char why[160] = "";
		long retry_ms;
		long long rejected;
		int r = post(h, body, timeout, &retry_ms, &rejected, why, sizeof why);
		if (r == POST_OK) {
			if (rejected < 0 || rejected > n)
				rejected = n;
			aw_metrics_otel_export("ok");
			atomic_fetch_add(&otel_q.exported, n - rejected);
			aw_metrics_otel_spans("exported", (double)(n - rejected));
			if (rejected) {
				lose((int)rejected, "rejected");
				snprintf(why, sizeof why, "a partial success");
				warn(why, (int)rejected, "the trace receiver refused spans");
			}
			ok = !rejected;
			break;
		}
		if (r == POST_FAIL || attempt + 1 >= MAX_ATTEMPTS || stopping) {
			aw_metrics_otel_export("failed");
			lose(n, r == POST_FAIL ? "rejected" : "export_failed");
			warn(why, n, "trace export failed; the batch's spans are lost");
			break;
		}
		aw_metrics_otel_export("retry");
		stopping = pause_ms(retry_ms >= 0 ? retry_ms : backoff_ms(attempt));
	}
	free(body);
	return ok;
}

static void *exporter(void *arg)
{
	(void)arg;
	CURL *h = curl_easy_init();
	if (h) {
		curl_easy_setopt(h, CURLOPT_URL, ex.url);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, ex.headers);
		curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
		curl_easy_setopt(h, CURLOPT_USERAGENT, "awooop/" AWOOOP_VERSION " otlp-json");
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
		if (ex.ca[0])
			curl_easy_setopt(h, CURLOPT_CAINFO, ex.ca);
		if (ex.cert[0]) {
			curl_easy_setopt(h, CURLOPT_SSLCERT, ex.cert);
			curl_easy_setopt(h, CURLOPT_SSLKEY, ex.key);
		}
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	}
	int64_t next = aw_clock_mono_ns() + (int64_t)ex.delay_ms * 1000000LL;
	for (;;) {
		pthread_mutex_lock(&otel_q.mu);
		while (!otel_q.stop && otel_q.n < otel_q.batch && aw_clock_mono_ns() < next) {
			struct timespec ts = aw_clock_after(
				CLOCK_MONOTONIC, (next - aw_clock_mono_ns()) / 1000000 + 1);
			pthread_cond_timedwait(&otel_q.cv, &otel_q.mu, &ts);
		}
		int stopping = otel_q.stop, n = 0;
		aw_span *list = otel_take(otel_q.batch, &n);
		int more = otel_q.n > 0;
		pthread_mutex_unlock(&otel_q.mu);
		int ok = 1;
		if (list && h)
			ok = export_batch(h, list, n, stopping);
		else if (list) { /* no handle: nothing can be sent */
			otel_free_list(list);
			lose(n, "export_failed");
			ok = 0;
		}
		if (ok)
			aw_metrics_loop_tick("otel_exporter");
		if (stopping && !more)
			break;
		if (!more)
			next = aw_clock_mono_ns() + (int64_t)ex.delay_ms * 1000000LL;
	}
	if (h)
		curl_easy_cleanup(h);
	return NULL;
}
