/*
 * exec.c - the executor registry and the built-in step kinds:
 *   noop   {}                                   does nothing
 *   sleep  {"ms": 0..3600000}                   waits (interruptible)
 *   fail   {"message"?: string}                 always fails (tests, drills)
 *   http   {"method"?, "url", "body"?}          one HTTP request; side-effecting
 * http sends the step's Idempotency-Key and the run's traceparent, follows no
 * redirects, speaks only http/https, and records the status and the SHA-256
 * of the response body (never the body: it may hold anything). Its failures:
 * E-RUN-012 an address the project may not reach, E-RUN-013 a 4xx answer
 * (but 408, 425, 429) - both never retried - and E-RUN-005 otherwise.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "awooop/egress.h"
#include "awooop/buf.h"
#include "awooop/clock.h"
#include "awooop/crypto.h"
#include "awooop/jcs.h"
#include "awooop/json.h"
#include "awooop/redact.h"
#include "awooop/run.h"
#include "awooop/executor.h"
#include "awooop/secret.h"
#include "awooop/str.h"
#include "worker.h"

#define MAX_EXECUTORS 32
#define HTTP_MAX_BODY (1u << 20)

static const aw_executor *registry[MAX_EXECUTORS];
static int nregistry;

static aw_err no_args(const json_t *args, aw_error *err)
{
	static const char *const none[] = {NULL};
	return aw_json_only(args, none, err);
}

static aw_err noop_run(const aw_step_call *c, json_t **result, aw_error *err)
{
	*result = json_object();
	return *result ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
}

static aw_err sleep_validate(const json_t *args, aw_error *err)
{
	static const char *const allowed[] = {"ms", NULL};
	aw_err e = aw_json_only(args, allowed, err);
	json_t *ms = json_object_get(args, "ms");
	if (!e && (!json_is_integer(ms) || json_integer_value(ms) < 0 ||
		   json_integer_value(ms) > 3600000))
		e = aw_fail_at(err, AW_E_REQ_INVALID, "/ms", "ms must be an integer 0..3600000");
	return e;
}

static aw_err sleep_run(const aw_step_call *c, json_t **result, aw_error *err)
{
	int64_t end =
		aw_clock_mono_ns() + json_integer_value(json_object_get(c->args, "ms")) * 1000000LL;
	for (;;) {
		int64_t now = aw_clock_mono_ns();
		if (c->stop && *c->stop)
			return aw_fail(err, AW_E_RUN_CANCELLED, "interrupted");
		if (now >= end)
			break;
		if (c->deadline_ns && now >= c->deadline_ns)
			return aw_fail(err, AW_E_RUN_TIMEOUT, "the attempt ran out of time");
		int64_t left = end - now;
		if (left > 20000000)
			left = 20000000;
		struct timespec ts = {0, (long)left};
		nanosleep(&ts, NULL);
	}
	*result = json_object();
	return *result ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
}

static aw_err fail_validate(const json_t *args, aw_error *err)
{
	static const char *const allowed[] = {"message", NULL};
	aw_err e = aw_json_only(args, allowed, err);
	json_t *m = json_object_get(args, "message");
	if (!e && m && (!json_is_string(m) || json_string_length(m) > 200))
		e = aw_fail_at(err, AW_E_REQ_INVALID, "/message",
			       "message must be a string of at most 200 bytes");
	return e;
}

static aw_err fail_run(const aw_step_call *c, json_t **result, aw_error *err)
{
	const char *m = json_string_value(json_object_get(c->args, "message"));
	*result = json_pack("{s:s}", "message", m ? m : "failed on purpose");
	return aw_fail(err, AW_E_RUN_STEP, "%s", m ? m : "failed on purpose");
}

/* ---- http ---- */

static const char *http_method(const json_t *args)
{
	const char *m = json_string_value(json_object_get(args, "method"));
	return m ? m : "POST";
}

/* headers: {"Name": "value" | {"secret_ref": REF, "prefix": "Bearer "}}; the
 * framing and tracing headers are the executor's own. */
static aw_err headers_validate(const json_t *h, aw_error *err)
{
	static const char *const own[] = {"host",	  "content-length",  "transfer-encoding",
					  "content-type", "idempotency-key", "traceparent",
					  "expect",	  "connection"};
	static const char *const ref_keys[] = {"secret_ref", "prefix", NULL};
	if (!json_is_object(h) || json_object_size(h) > 32)
		return aw_fail_at(err, AW_E_REQ_INVALID, "/headers",
				  "headers must be an object of at most 32 headers");
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)h, k, v) {
		int ok = *k && strlen(k) <= 64;
		for (const char *p = k; ok && *p; p++)
			ok = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
			     (*p >= '0' && *p <= '9') || *p == '-';
		for (size_t i = 0; ok && i < sizeof own / sizeof *own; i++)
			ok = strcasecmp(k, own[i]) != 0;
		if (!ok)
			return aw_fail_at(err, AW_E_REQ_INVALID, "/headers",
					  "a header name must be a token of at most 64 characters"
					  " and not one the step sets itself");
		const char *lit = json_string_value(v);
		const char *pre = json_string_value(json_object_get(v, "prefix"));
		int good = lit ? strlen(lit) <= 1024 && !strpbrk(lit, "\r\n")
			       : json_is_object(v) && !aw_json_only(v, ref_keys, NULL) &&
					   json_is_string(json_object_get(v, "secret_ref")) &&
					   (!json_object_get(v, "prefix") ||
					    (pre && strlen(pre) <= 64 && !strpbrk(pre, "\r\n")));
		if (!good)
			return aw_fail_at(
				err, AW_E_REQ_INVALID, "/headers",
				"a header value is a string of at most 1024 bytes or"
				" {\"secret_ref\": \"env:NAME\" | \"file:rel/path\", \"prefix\": \"...\"}");
	}
	return AW_OK;
}

/* Where the project's file: references live (secret.h); set once at start. */
static char secrets_root[1024];

aw_err aw_run_secrets_dir(const char *dir, aw_error *err)
{
	if (AW_STR_COPY(secrets_root, dir) < 0) /* "": file: references do not resolve */
		return aw_fail(err, AW_E_CONFIG,
			       "the secrets directory is a path of at most %zu bytes",
			       sizeof secrets_root - 1);
	return AW_OK;
}

/* Adds the step's headers to *hdr, resolving secret references now, inside
 * the run's project's namespace only (never the worker's own environment or
 * files); the resolved values live only in the request (wiped buffers,
 * curl's copy). */
static aw_err headers_add(const char *project, const json_t *h, struct curl_slist **hdr,
			  aw_error *err)
{
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)h, k, v) {
		aw_buf line = AW_BUF_INIT(4096 + 65536);
		aw_buf_addf(&line, "%s: ", k);
		aw_err e = AW_OK;
		if (json_is_string(v)) {
			aw_buf_adds(&line, json_string_value(v));
		} else {
			const char *pre = json_string_value(json_object_get(v, "prefix"));
			aw_buf_adds(&line, pre ? pre : "");
			e = aw_secret_tenant_resolve(
				project, secrets_root,
				json_string_value(json_object_get(v, "secret_ref")), &line, err);
			if (!e && strpbrk(aw_buf_str(&line), "\r\n"))
				e = aw_fail(err, AW_E_SECRET_UNRESOLVED,
					    "a secret for header %s holds a line break", k);
		}
		struct curl_slist *n = e ? NULL : curl_slist_append(*hdr, aw_buf_str(&line));
		aw_secret_wipe(&line);
		if (e)
			return e;
		if (!n)
			return aw_fail(err, AW_E_NOMEM, "out of memory");
		*hdr = n;
	}
	return AW_OK;
}

static aw_err http_validate(const json_t *args, aw_error *err)
{
	static const char *const allowed[] = {"method", "url", "body", "headers", NULL};
	static const char *const methods[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};
	aw_err e = aw_json_only(args, allowed, err);
	if (e)
		return e;
	json_t *m = json_object_get(args, "method");
	int ok = !m;
	for (size_t i = 0; m && json_is_string(m) && i < sizeof methods / sizeof *methods; i++)
		ok |= strcmp(json_string_value(m), methods[i]) == 0;
	if (!ok)
		return aw_fail_at(err, AW_E_REQ_INVALID, "/method",
				  "method must be GET, POST, PUT, PATCH or DELETE");
	const char *url = json_string_value(json_object_get(args, "url"));
	if (!url || strlen(url) > 2048 ||
	    (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) ||
	    strpbrk(url, " \t\r\n"))
		return aw_fail_at(err, AW_E_REQ_INVALID, "/url",
				  "url must be an http:// or https:// URL of at most 2048 bytes");
	json_t *h = json_object_get(args, "headers");
	return h ? headers_validate(h, err) : AW_OK;
}

/* The effect a request would have: method, url (redacted) and the body's hash. */
static json_t *http_intent(const json_t *args)
{
	json_t *body = json_object_get(args, "body");
	char hash[65] = "";
	if (body && aw_jcs_sha256(body, hash) != 0)
		return NULL;
	/* a url or method a reference supplies (run.h) is shown as written */
	json_t *u = json_object_get(args, "url"), *m = json_object_get(args, "method");
	char *url = json_is_string(u) ? aw_redact_str(json_string_value(u)) : NULL;
	json_t *o = json_is_string(u) && !url ? NULL : json_object();
	if (o) {
		json_object_set_new(o, "method",
				    m && !json_is_string(m) ? json_deep_copy(m)
							    : json_string(http_method(args)));
		json_object_set_new(o, "url",
				    url ? json_string(url)
				    : u ? json_deep_copy(u)
					: json_null());
	}
	if (o && body)
		json_object_set_new(o, "body_sha256", json_string(hash));
	free(url);
	return o;
}

typedef struct {
	aw_buf body; /* the first HTTP_MAX_BODY bytes: their hash is recorded */
	int truncated;
} http_sink;

static size_t http_on_data(char *p, size_t sz, size_t n, void *ud)
{
	http_sink *s = ud;
	size_t add = sz * n, room = s->body.max - s->body.len, take = add < room ? add : room;
	s->truncated |= take < add;
	return aw_buf_add(&s->body, p, take) == AW_OK ? add : 0; /* 0: out of memory, abort */
}

static int http_on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	const aw_step_call *call = ud;
	return call->stop && *call->stop; /* non-zero aborts the transfer */
}

/* ---- egress (egress.h): the address a step connects to, checked against
 * the operator's grant for its project (aw_egress_private_granted). */
typedef struct {
	int allow_private;
	int refused; /* an aw_egress_class */
} egress_check;

static curl_socket_t http_open(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	egress_check *x = ud;
	(void)purpose;
	if (!aw_egress_allowed(&a->addr, x->allow_private)) {
		x->refused = (int)aw_egress_classify(&a->addr);
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static aw_err http_run(const aw_step_call *c, json_t **result, aw_error *err)
{
	egress_check eg = {aw_egress_private_granted(c->project), 0};
	json_t *body = json_object_get(c->args, "body");
	char *payload = body ? aw_jcs(body) : NULL;
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = NULL;
	char line[512];
	http_sink sink = {AW_BUF_INIT(HTTP_MAX_BODY), 0};
	aw_err e = AW_OK;
	if (!h || (body && !payload)) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
		goto out;
	}
	snprintf(line, sizeof line, "Idempotency-Key: %s", c->idem_key);
	hdr = curl_slist_append(hdr, line);
	snprintf(line, sizeof line, "traceparent: %s", c->traceparent);
	hdr = curl_slist_append(hdr, line);
	if (payload)
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
	hdr = curl_slist_append(hdr, "Expect:");
	json_t *extra = json_object_get(c->args, "headers");
	if (extra && (e = headers_add(c->project ? c->project : "", extra, &hdr, err)))
		goto out;
	long timeout_ms = 30000;
	if (c->deadline_ns) {
		int64_t left = (c->deadline_ns - aw_clock_mono_ns()) / 1000000;
		if (left < 1) {
			e = aw_fail(err, AW_E_RUN_TIMEOUT, "the attempt ran out of time");
			goto out;
		}
		if (left < timeout_ms)
			timeout_ms = (long)left;
	}
	curl_easy_setopt(h, CURLOPT_URL, json_string_value(json_object_get(c->args, "url")));
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, http_method(c->args));
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 10000 ? timeout_ms : 10000L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, http_on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, (void *)c);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "awooop/" AWOOOP_VERSION);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, http_open);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, &eg);
	if (payload) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(payload));
	} else if (strcmp(http_method(c->args), "GET") == 0) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	}
	CURLcode rc = curl_easy_perform(h);
	if (rc == CURLE_ABORTED_BY_CALLBACK) {
		e = aw_fail(err, AW_E_RUN_CANCELLED, "interrupted");
		goto out;
	}
	if (rc == CURLE_OPERATION_TIMEDOUT) {
		e = aw_fail(err, AW_E_RUN_TIMEOUT, "the request timed out");
		goto out;
	}
	if (rc != CURLE_OK && eg.refused) {
		*result =
			json_pack("{s:s}", "egress", aw_egress_reason((aw_egress_class)eg.refused));
		e = aw_fail(err, AW_E_RUN_EGRESS,
			    "request refused: the address is %s (serve --egress-allow-private)",
			    aw_egress_reason((aw_egress_class)eg.refused));
		goto out;
	}
	if (rc != CURLE_OK) {
		*result = json_pack("{s:s}", "transport", curl_easy_strerror(rc));
		e = aw_fail(err, AW_E_RUN_STEP, "request failed: %s", curl_easy_strerror(rc));
		goto out;
	}
	long status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	char hash[65];
	aw_sha256_hex(aw_buf_str(&sink.body), sink.body.len, hash);
	*result = json_pack("{s:i, s:s, s:I}", "status", (int)status, "body_sha256", hash, "bytes",
			    (json_int_t)sink.body.len);
	if (*result && sink.truncated)
		json_object_set_new(*result, "truncated", json_true());
	if (!*result)
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	else if (status >= 400 && status <= 499 && status != 408 && status != 425 && status != 429)
		e = aw_fail(err, AW_E_RUN_REFUSED, "the server refused the request: %ld", status);
	else if (status < 200 || status > 299)
		e = aw_fail(err, AW_E_RUN_STEP, "the server answered %ld", status);
out:
	curl_slist_free_all(hdr);
	if (h)
		curl_easy_cleanup(h);
	free(payload);
	aw_buf_free(&sink.body);
	return e;
}

static const aw_executor builtins[] = {
	{"noop", 0, 1, no_args, noop_run, NULL, 0},
	{"sleep", 0, 0, sleep_validate, sleep_run, NULL, 0},
	{"fail", 0, 1, fail_validate, fail_run, NULL, 0},
	{"http", 1, 0, http_validate, http_run, http_intent, 0},
};

const aw_executor *aw_executor_find(const char *kind)
{
	for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++)
		if (strcmp(builtins[i].kind, kind) == 0)
			return &builtins[i];
	for (int i = 0; i < nregistry; i++)
		if (strcmp(registry[i]->kind, kind) == 0)
			return registry[i];
	return NULL;
}

char *executor_instant_kinds(void)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < sizeof builtins / sizeof *builtins; i++)
		if (builtins[i].instant)
			json_array_append_new(a, json_string(builtins[i].kind));
	for (int i = 0; a && i < nregistry; i++)
		if (registry[i]->instant)
			json_array_append_new(a, json_string(registry[i]->kind));
	char *s = a ? json_dumps(a, JSON_COMPACT) : NULL;
	json_decref(a);
	return s;
}

size_t aw_executor_kinds(const char **kinds, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++, n++)
		if (n < cap)
			kinds[n] = builtins[i].kind;
	for (int i = 0; i < nregistry; i++, n++)
		if (n < cap)
			kinds[n] = registry[i]->kind;
	return n;
}

int aw_executor_register(const aw_executor *x)
{
	if (nregistry >= MAX_EXECUTORS || aw_executor_find(x->kind))
		return -1;
	registry[nregistry++] = x;
	return 0;
}
