/*
 * client.c - the CLI's HTTP client (libcurl) for commands that act through a
 * running server: AWOOOP_URL (default http://127.0.0.1:8080) and AWOOOP_KEY.
 * The key is read from the environment only, never from argv (visible in ps).
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "awooop/str.h"
#include "awooop/trace.h"
#include "awooop/buf.h"
#include "awooop/secret.h"
#include "cli.h"

#define CLIENT_MAX_BODY (16u << 20)

/* The answer, at most CLIENT_MAX_BODY bytes: past that the transfer fails. */
static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
	return aw_buf_add(ud, p, sz * n) == AW_OK ? sz * n : 0;
}

static const char *key_override;

void client_use_key(const char *key)
{
	key_override = key;
}

int client_has_key(void)
{
	const char *k = getenv("AWOOOP_KEY"), *f = getenv("AWOOOP_KEY_FILE");
	return (key_override && *key_override) || (k && *k) || (f && *f);
}

int client_call(const char *method, const char *path, json_t *body, json_t **out)
{
	return client_call_h(method, path, body, NULL, out);
}

typedef struct {
	CURL *c;
	struct curl_slist *hdr;
	char *payload;
	const char *base;
} request;

static void request_free(request *q)
{
	curl_slist_free_all(q->hdr);
	curl_easy_cleanup(q->c);
	free(q->payload);
}

/* A handle for method + path on AWOOOP_URL with the key, a trace, the
 * headers and accept; 0 or an exit code (said on stderr). */
static int request_new(request *q, const char *method, const char *path, json_t *body,
		       const char *const *headers, const char *accept)
{
	memset(q, 0, sizeof *q);
	const char *base = getenv("AWOOOP_URL"), *key = key_override;
	aw_error err = {0};
	if (!key && aw_secret_env("AWOOOP_KEY", &key, &err))
		return cli_fail(err.err, err.msg);
	if (!base || !*base)
		base = "http://127.0.0.1:8080";
	q->base = base;
	if (!key || !*key)
		return cli_fail(AW_E_AUTH_MISSING, "set AWOOOP_KEY to an API key");
	char url[1024], auth[128], tp[AW_TRACEPARENT_LEN + 16];
	if ((size_t)snprintf(url, sizeof url, "%s%s", base, path) >= sizeof url)
		return cli_fail(AW_E_CONFIG, "AWOOOP_URL and the request path are too long");
	if ((size_t)snprintf(auth, sizeof auth, "Authorization: Bearer %s", key) >= sizeof auth)
		return cli_fail(AW_E_AUTH_INVALID, "AWOOOP_KEY is not an API key (too long)");
	aw_trace t;
	aw_trace_new(&t);
	char tps[AW_TRACEPARENT_LEN + 1];
	aw_trace_format(&t, tps);
	snprintf(tp, sizeof tp, "traceparent: %s", tps);

	q->payload = body ? json_dumps(body, JSON_COMPACT) : NULL;
	if (!(q->c = curl_easy_init())) {
		request_free(q);
		return cli_fail(AW_E_NOMEM, "cannot start HTTP client");
	}
	q->hdr = curl_slist_append(q->hdr, auth);
	int own_trace = 0;
	for (int i = 0; headers && headers[i]; i++) {
		q->hdr = curl_slist_append(q->hdr, headers[i]);
		own_trace |= strncasecmp(headers[i], "traceparent:", 12) == 0;
	}
	if (!own_trace)
		q->hdr = curl_slist_append(q->hdr, tp);
	q->hdr = curl_slist_append(q->hdr, accept);
	if (q->payload)
		q->hdr = curl_slist_append(q->hdr, "Content-Type: application/json");
	curl_easy_setopt(q->c, CURLOPT_URL, url);
	curl_easy_setopt(q->c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(q->c, CURLOPT_HTTPHEADER, q->hdr);
	curl_easy_setopt(q->c, CURLOPT_NOSIGNAL, 1L);
	const char *ca = getenv("AWOOOP_CA"); /* an https AWOOOP_URL's CA (PEM) */
	if (ca && *ca)
		curl_easy_setopt(q->c, CURLOPT_CAINFO, ca);
	if (q->payload)
		curl_easy_setopt(q->c, CURLOPT_POSTFIELDS, q->payload);
	return 0;
}

/* The problem's words, once: the detail when it already says the title
 * ("no upstream answered: ..." under "No upstream answered"), else
 * "title: detail", else whichever there is. */
static void problem_text(const char *title, const char *detail, char *out, size_t cap)
{
	size_t tl = title ? strlen(title) : 0;
	const char *a = tl ? title : "unexpected answer", *sep = "", *b = "";
	if (detail && *detail && (!tl || !strncasecmp(detail, title, tl))) {
		a = detail;
	} else if (detail && *detail && !strcasestr(title, detail)) {
		sep = ": ";
		b = detail;
	}
	aw_buf both = AW_BUF_INIT(1 << 16);
	aw_buf_addf(&both, "%s%s%s", a, sep, b);
	aw_str_show(out, cap, aw_buf_err(&both) ? a : aw_buf_str(&both)); /* for people */
	aw_buf_free(&both);
}

/* A problem+json answer: said on stderr, or (quiet) its code and words
 * handed to the caller. */
static int say_problem(const aw_buf *s, long status, aw_cli_problem *quiet)
{
	json_t *doc = s->len ? json_loads(aw_buf_str(s), 0, NULL) : NULL;
	const char *code = json_string_value(json_object_get(doc, "code"));
	char text[1024];
	problem_text(json_string_value(json_object_get(doc, "title")),
		     json_string_value(json_object_get(doc, "detail")), text, sizeof text);
	if (quiet) {
		/* a code that does not fit is no code of ours: never a cut one */
		if (AW_STR_COPY(quiet->code, code ? code : "E-CLI-002") < 0)
			AW_COPY_ARRAY(quiet->code, "E-CLI-002");
		AW_COPY_ARRAY(quiet->text, text);
		quiet->status = status;
	} else {
		const char *at = json_string_value(json_object_get(doc, "pointer"));
		fprintf(stderr, "awooop: %s: %s%s%s (HTTP %ld)\n", code ? code : "E-CLI-002", text,
			at && *at ? " at " : "", at && *at ? at : "", status);
	}
	json_decref(doc);
	return AW_EXIT_FAIL;
}

static int unreachable(const request *q, CURLcode rc)
{
	char msg[512];
	snprintf(msg, sizeof msg, "cannot reach %s: %s", q->base, curl_easy_strerror(rc));
	return cli_fail(AW_E_CLIENT, msg);
}

int client_call_h(const char *method, const char *path, json_t *body, const char *const *headers,
		  json_t **out)
{
	return client_try(method, path, body, headers, out, NULL);
}

int client_try(const char *method, const char *path, json_t *body, const char *const *headers,
	       json_t **out, aw_cli_problem *problem)
{
	request q;
	if (problem)
		memset(problem, 0, sizeof *problem);
	int exit_code = request_new(&q, method, path, body, headers, "Accept: application/json");
	if (exit_code)
		return exit_code;
	aw_buf s = AW_BUF_INIT(CLIENT_MAX_BODY);
	curl_easy_setopt(q.c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(q.c, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(q.c, CURLOPT_TIMEOUT, 60L);
	CURLcode rc = curl_easy_perform(q.c);
	long status = 0;
	curl_easy_getinfo(q.c, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK) {
		exit_code = unreachable(&q, rc);
	} else if (status >= 200 && status < 300) {
		json_t *doc = s.len ? json_loads(aw_buf_str(&s), 0, NULL) : NULL;
		if (out)
			*out = doc;
		else
			json_decref(doc);
	} else {
		exit_code = say_problem(&s, status, problem);
	}
	request_free(&q);
	aw_buf_free(&s);
	return exit_code;
}

typedef struct {
	CURL *c;
	aw_buf err; /* a non-2xx answer */
	int (*on_bytes)(void *ud, const char *p, size_t n);
	void *ud;
} streaming;

static size_t on_stream(char *p, size_t sz, size_t n, void *ud)
{
	streaming *st = ud;
	long status = 0;
	curl_easy_getinfo(st->c, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status > 299)
		return aw_buf_add(&st->err, p, sz * n) == AW_OK ? sz * n : 0;
	return st->on_bytes(st->ud, p, sz * n) == 0 ? sz * n : 0;
}

int client_stream(const char *path, json_t *body, const char *const *headers,
		  int (*on_bytes)(void *ud, const char *p, size_t n), void *ud)
{
	request q;
	int exit_code = request_new(&q, "POST", path, body, headers, "Accept: text/event-stream");
	if (exit_code)
		return exit_code;
	streaming st = {q.c, AW_BUF_INIT(CLIENT_MAX_BODY), on_bytes, ud};
	curl_easy_setopt(q.c, CURLOPT_WRITEFUNCTION, on_stream);
	curl_easy_setopt(q.c, CURLOPT_WRITEDATA, &st);
	CURLcode rc = curl_easy_perform(q.c);
	long status = 0;
	curl_easy_getinfo(q.c, CURLINFO_RESPONSE_CODE, &status);
	if (status && (status < 200 || status > 299))
		exit_code = say_problem(&st.err, status, NULL);
	else if (rc != CURLE_OK)
		exit_code = unreachable(&q, rc);
	request_free(&q);
	aw_buf_free(&st.err);
	return exit_code;
}
