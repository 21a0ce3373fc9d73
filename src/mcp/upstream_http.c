/*
 * upstream_http.c - an upstream over Streamable HTTP: a POST per request
 * (JSON or an SSE response, whose message with the request's id is the
 * answer), a session initialized once (legacy protocol 2025-11-25; a 404 on
 * the session starts a new one and retries once), idle curl handles kept
 * for keep-alive.
 *
 * What the upstream asks on a response stream (a server request: ping,
 * sampling, ...) is queued by libcurl's write callback and answered by the
 * requesting thread between rounds of the transfer's multi loop, never
 * inside the callback: at most MAX_ASKS per request of ours, none on the
 * POST of an answer or a notification (the rest dropped and logged), so a
 * hostile upstream cannot make answers beget answers.
 *
 * Headers carry the contract's secret references, resolved for each request
 * and wiped after. Every connect passes the egress policy on the address
 * being connected (curl's opensocket callback), so DNS rebinding gains
 * nothing. The upstream's own event stream (GET) is held by a thread of its
 * own once a subscription asks for it.
 */
#include "upstream_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "awooop/alloc.h"
#include "awooop/clock.h"
#include "awooop/json.h"
#include "awooop/egress.h"
#include "awooop/log.h"
#include "awooop/mcp_wire.h"
#include "awooop/secret.h"
#include "awooop/str.h"

#define MAX_ASKS 16 /* an upstream's requests answered per request of ours */

typedef struct {
	mcp_up *u;
	aw_buf body; /* a JSON answer; for an SSE one, the line being read */
	aw_buf data; /* SSE: the event being read */
	char session[256];
	char ctype[128];
	int egress_refused, sse; /* sse: 1 not yet known, 2 an event stream, 0 not */
	json_int_t id;		 /* the request's (-1: a notification or response) */
	json_t *answer;		 /* SSE: the message answering id */
	char *const *vals;	 /* the credentials resolved for this request */
	int nv, timeout_ms;
	const mcp_peer *peer;
	const atomic_int *halt; /* the upstream is being freed: abort */
	json_t *asks;		/* the upstream's requests, queued by on_body for the
				   requesting thread (owned; NULL: none taken) */
	int nasks, dropped;	/* taken so far; past MAX_ASKS or not taken */
} xfer;

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	const xfer *x = ud;
	return (x->peer && x->peer->cancel && atomic_load(x->peer->cancel)) ||
			       (x->halt && atomic_load(x->halt))
		       ? 1
		       : 0;
}

static aw_err http_post(mcp_up *u, const char *line, json_int_t id, int timeout_ms,
			const mcp_peer *peer, json_t **msg, long *status, aw_error *err);

/* The upstream's own request, during one of ours: the peer answers it (or
 * -32601 without one), and the answer is POSTed back in the same session. */
static void answer_upstream(mcp_up *u, const mcp_peer *peer, const json_t *req, int timeout_ms)
{
	json_t *resp = mcp_peer_answer(peer, req);
	char *line = aw_json_dumps(resp, JSON_COMPACT);
	json_decref(resp);
	json_t *none = NULL;
	long st = 0;
	aw_error ignore = {0}; /* the upstream's request times out on its side */
	if (line)
		http_post(u, line, -1, timeout_ms, NULL, &none, &st, &ignore);
	json_decref(none);
	free(line);
}

/* The upstream's requests queued during x's transfer, answered in order
 * (the requesting thread, outside libcurl's callbacks). */
static void answer_asks(xfer *x)
{
	while (x->asks && json_array_size(x->asks)) {
		json_t *req = json_incref(json_array_get(x->asks, 0));
		json_array_remove(x->asks, 0);
		answer_upstream(x->u, x->peer, req, x->timeout_ms);
		json_decref(req);
	}
}

/* The upstream asked more than it is answered (x's transfer over). */
static void log_dropped(const xfer *x, const char *what)
{
	if (!x->dropped)
		return;
	char n[24];
	snprintf(n, sizeof n, "%d", x->dropped);
	aw_log(AW_LOG_WARN, NULL, "mcp upstream's requests dropped, not answered", "project",
	       x->u->project, "provider", x->u->provider, "dropped", n, "during", what, NULL);
}

/* Runs h (its options set, x its callbacks' data) to its end on multi m,
 * answering the upstream's queued requests between rounds: an answer is a
 * POST of its own, made here and never inside a callback of h. */
static CURLcode perform(CURLM *m, CURL *h, xfer *x)
{
	if (curl_multi_add_handle(m, h) != CURLM_OK)
		return CURLE_FAILED_INIT;
	CURLcode rc = CURLE_FAILED_INIT; /* unless h is seen done */
	int running = 1;
	/* given up (cancelled, halted): seen between rounds, every 50 ms - the
	 * progress callback alone may wait a second */
	int slice = (x->peer && x->peer->cancel) || x->halt ? 50 : 200;
	while (running) {
		if (curl_multi_perform(m, &running) != CURLM_OK)
			break;
		answer_asks(x);
		if (running && on_progress(x, 0, 0, 0, 0)) {
			curl_multi_remove_handle(m, h);
			return CURLE_ABORTED_BY_CALLBACK;
		}
		if (running && curl_multi_poll(m, NULL, 0, slice, NULL) != CURLM_OK)
			break;
	}
	CURLMsg *msg;
	int left;
	while ((msg = curl_multi_info_read(m, &left)))
		if (msg->msg == CURLMSG_DONE && msg->easy_handle == h)
			rc = msg->data.result;
	curl_multi_remove_handle(m, h);
	answer_asks(x); /* asked in the last round */
	return rc;
}

/* One SSE event's data (credentials scrubbed first): the answer to our
 * request, a request of the upstream's (queued), or a notification. */
static void sse_event(xfer *x)
{
	if (!x->data.len)
		return;
	mcp_scrub(&x->data, x->vals, x->nv);
	json_t *m = aw_json_loadb(x->data.p, x->data.len, 0, NULL);
	aw_buf_truncate(&x->data, 0);
	mcp_scrub_json(m, x->vals, x->nv);
	json_t *id = json_object_get(m, "id");
	const char *method = json_string_value(json_object_get(m, "method"));
	if (method && id) { /* queued: answered outside libcurl (perform) */
		if (x->asks && x->nasks < MAX_ASKS && !json_array_append(x->asks, m))
			x->nasks++;
		else
			x->dropped++;
	} else if (mcp_is_event(method) && x->u->event)
		x->u->event(x->u->event_ud, x->u->project, m);
	else if (method && x->peer && x->peer->notify)
		x->peer->notify(x->peer->ud, m);
	else if (!method && json_is_integer(id) && json_integer_value(id) == x->id && !x->answer)
		x->answer = json_incref(m);
	json_decref(m);
}

/* One line of an event stream (without its end): "data:" fields gathered,
 * a blank line ends the event, other fields (id, event, retry) unused. */
static int sse_line(xfer *x, const char *p, size_t n)
{
	if (n && p[n - 1] == '\r')
		n--;
	if (n == 0) {
		sse_event(x);
		return 0;
	}
	if (n < 5 || strncmp(p, "data:", 5))
		return 0;
	p += 5, n -= 5;
	if (n && *p == ' ')
		p++, n--;
	if (x->data.len && aw_buf_add(&x->data, "\n", 1))
		return -1;
	return aw_buf_add(&x->data, p, n) ? -1 : 0;
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	xfer *x = ud;
	size_t len = sz * n;
	if (x->sse == 1)
		x->sse = !strncasecmp(x->ctype, "text/event-stream", 17) ? 2 : 0;
	if (!x->sse)
		return aw_buf_add(&x->body, p, len) ? 0 : len;
	for (size_t i = 0; i < len;) { /* lines end in LF (CRLF: the CR dropped) */
		char *nl = memchr(p + i, '\n', len - i);
		size_t take = nl ? (size_t)(nl - (p + i)) : len - i;
		if (aw_buf_add(&x->body, p + i, take))
			return 0;
		i += take;
		if (!nl)
			break;
		i++;
		int bad = sse_line(x, x->body.p, x->body.len);
		aw_buf_truncate(&x->body, 0);
		if (bad)
			return 0;
	}
	return len;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
	xfer *x = ud;
	size_t len = sz * n;
	const char *names[] = {"mcp-session-id:", "content-type:"};
	char *dst[] = {x->session, x->ctype};
	size_t caps[] = {sizeof x->session, sizeof x->ctype};
	for (int i = 0; i < 2; i++) {
		size_t nl = strlen(names[i]);
		if (len > nl && !strncasecmp(p, names[i], nl)) {
			const char *v = p + nl;
			size_t vl = len - nl;
			while (vl && (*v == ' ' || *v == '\t'))
				v++, vl--;
			while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
				vl--;
			if (vl < caps[i]) {
				memcpy(dst[i], v, vl);
				dst[i][vl] = 0;
			}
		}
	}
	return len;
}

static curl_socket_t on_open(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	xfer *x = ud;
	(void)purpose;
	if (!aw_egress_allowed(&a->addr, x->u->allow_private)) {
		x->egress_refused = (int)aw_egress_classify(&a->addr);
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* The headers of a request to u: the protocol's, the session's and the
 * contract's, whose resolved secret values are kept in vals (for scrubbing;
 * the caller wipes them). post: a POST (JSON), else the GET stream. */
static aw_err headers_for(mcp_up *u, int post, struct curl_slist **hdr, char **vals, int *nv,
			  aw_error *err)
{
	char line[512];
	if (post)
		*hdr = curl_slist_append(*hdr, "Content-Type: application/json");
	*hdr = curl_slist_append(*hdr, post ? "Accept: application/json, text/event-stream"
					    : "Accept: text/event-stream");
	pthread_mutex_lock(&u->mu);
	snprintf(line, sizeof line, "MCP-Protocol-Version: %s", u->version);
	*hdr = curl_slist_append(*hdr, line);
	if (u->session[0]) {
		snprintf(line, sizeof line, "Mcp-Session-Id: %s", u->session);
		*hdr = curl_slist_append(*hdr, line);
	}
	pthread_mutex_unlock(&u->mu);
	const char *k;
	json_t *v;
	json_object_foreach (json_object_get(u->config, "headers"), k, v) {
		aw_buf b = AW_BUF_INIT(70000);
		const char *prefix = json_string_value(json_object_get(v, "prefix"));
		aw_buf_addf(&b, "%s: %s", k, prefix ? prefix : "");
		size_t at = b.len;
		aw_err e = aw_secret_tenant_resolve(u->project, u->secrets_dir,
						    json_string_value(json_object_get(v, "secret")),
						    &b, err);
		if (!e && *nv < MAX_SECRETS)
			vals[(*nv)++] = aw_strndup(b.p + at, b.len - at);
		if (!e)
			*hdr = curl_slist_append(*hdr, aw_buf_str(&b));
		aw_secret_wipe(&b);
		if (e)
			return mcp_rewrap(err, AW_E_MCP_UPSTREAM);
	}
	return AW_OK;
}

/* The options a transfer to u shares, POST or GET: x gets its events and
 * decides egress; progress is watched for cancellation and halt. */
static void xfer_setup(CURL *h, xfer *x, struct curl_slist *hdr)
{
	curl_easy_setopt(h, CURLOPT_URL, x->u->url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, on_open);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, x);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "awooop/" AWOOOP_VERSION);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	if ((x->peer && x->peer->cancel) || x->halt) {
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
	}
}

/* What a transfer's callbacks gathered. */
static void xfer_free(xfer *x)
{
	json_decref(x->answer);
	json_decref(x->asks);
	aw_buf_free(&x->body);
	aw_buf_free(&x->data);
}

/* What a transfer was made with: its handles (NULL: none), its headers, and
 * the credentials resolved for it (wiped). */
static void transfer_free(CURL *h, CURLM *m, struct curl_slist *hdr, char **vals, int nv)
{
	if (h)
		curl_easy_cleanup(h);
	if (m)
		curl_multi_cleanup(m);
	curl_slist_free_all(hdr);
	for (int i = 0; i < nv; i++)
		mcp_wipe_str(vals[i]);
}

/* One POST; *msg the answer to id (NULL for a notification: 202 expected).
 * *status the HTTP status. */
static aw_err http_post(mcp_up *u, const char *line, json_int_t id, int timeout_ms,
			const mcp_peer *peer, json_t **msg, long *status, aw_error *err)
{
	*msg = NULL;
	*status = 0;
	char *vals[MAX_SECRETS] = {0};
	int nv = 0;
	struct curl_slist *hdr = NULL;
	CURL *h = NULL;
	CURLM *m = NULL;
	aw_err e = headers_for(u, 1, &hdr, vals, &nv, err);
	if (e)
		goto done;
	pthread_mutex_lock(&u->mu);
	if (u->nidle)
		u->nidle--, h = u->idle[u->nidle], m = u->idle_m[u->nidle];
	pthread_mutex_unlock(&u->mu);
	if (!h && (!(h = curl_easy_init()) || !(m = curl_multi_init()))) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
		goto done;
	}
	xfer x = {.u = u,
		  .body = AW_BUF_INIT(AW_MCP_MAX_RESPONSE),
		  .data = AW_BUF_INIT(AW_MCP_MAX_RESPONSE),
		  .sse = 1,
		  .id = id,
		  .vals = vals,
		  .nv = nv,
		  .timeout_ms = timeout_ms,
		  .peer = peer,
		  /* a request's stream may ask; an answer's or a notification's not */
		  .asks = id >= 0 ? json_array() : NULL};
	curl_easy_reset(h);
	xfer_setup(h, &x, hdr);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, line);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(line));
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			 timeout_ms < 5000 ? (long)timeout_ms : 5000L);
	CURLcode rc = perform(m, h, &x);
	curl_slist_free_all(hdr);
	hdr = NULL;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	if (rc != CURLE_OK) {
		if (x.egress_refused)
			e = aw_fail(err, AW_E_MCP_UPSTREAM, "the upstream's address is %s",
				    aw_egress_reason((aw_egress_class)x.egress_refused));
		else if (rc == CURLE_WRITE_ERROR)
			e = aw_fail(err, AW_E_MCP_UPSTREAM,
				    "the upstream answered more than %u bytes",
				    AW_MCP_MAX_RESPONSE);
		else if (rc == CURLE_ABORTED_BY_CALLBACK)
			e = aw_fail(err, AW_E_MCP_CANCELLED, "the client cancelled the request");
		else if (rc == CURLE_OPERATION_TIMEDOUT)
			e = aw_fail(err, AW_E_MCP_UPSTREAM,
				    "the upstream did not answer within %d ms", timeout_ms);
		else
			e = aw_fail(err, AW_E_MCP_UPSTREAM,
				    "the upstream could not be reached (%s)",
				    curl_easy_strerror(rc));
		curl_easy_cleanup(h);
		curl_multi_cleanup(m);
		h = NULL, m = NULL;
	} else {
		if (x.sse == 2 && x.body.len) /* a last event without its blank line */
			sse_line(&x, x.body.p, x.body.len);
		if (x.sse == 2)
			sse_event(&x);
		if (x.sse == 2)
			answer_asks(&x);
		else
			mcp_scrub(&x.body, vals, nv);
		if (x.session[0]) {
			pthread_mutex_lock(&u->mu);
			memcpy(u->session, x.session, sizeof u->session);
			pthread_mutex_unlock(&u->mu);
		}
		if (id >= 0 && *status == 200) {
			*msg = x.sse == 2 ? x.answer
					  : aw_json_loadb(aw_buf_str(&x.body), x.body.len, 0, NULL);
			x.answer = NULL;
			if (x.sse != 2)
				mcp_scrub_json(*msg, vals, nv);
			if (!*msg)
				e = aw_fail(err, AW_E_MCP_UPSTREAM,
					    "the upstream's answer holds no JSON-RPC response");
		} else if (*status >= 400 && *status != 404) {
			e = aw_fail(err, AW_E_MCP_UPSTREAM, "the upstream answered HTTP %ld",
				    *status);
		}
	}
	log_dropped(&x, id >= 0 ? "a request" : "an answer or notification");
	xfer_free(&x);
	if (h) {
		pthread_mutex_lock(&u->mu);
		if (u->nidle < IDLE_HANDLES)
			u->idle[u->nidle] = h, u->idle_m[u->nidle++] = m, h = NULL, m = NULL;
		pthread_mutex_unlock(&u->mu);
	}
done:
	transfer_free(h, m, hdr, vals, nv);
	return e;
}

static aw_err http_init(mcp_up *u, int timeout_ms, aw_error *err)
{
	json_t *p = mcp_init_params();
	char *line = mcp_request_line(atomic_fetch_add(&u->next_id, 1), "initialize", p);
	json_decref(p);
	json_t *msg = NULL, *res = NULL;
	long st;
	pthread_mutex_lock(&u->mu);
	u->session[0] = 0;
	AW_COPY_ARRAY(u->version, AW_MCP_V_LEGACY);
	pthread_mutex_unlock(&u->mu);
	aw_err e =
		http_post(u, line, atomic_load(&u->next_id) - 1, timeout_ms, NULL, &msg, &st, err);
	free(line);
	if (!e && !msg)
		e = aw_fail(err, AW_E_MCP_UPSTREAM, "the upstream refused initialize (HTTP %ld)",
			    st);
	if (!e && !(e = mcp_answer_of(msg, &res, NULL, err))) {
		const char *v = json_string_value(json_object_get(res, "protocolVersion"));
		pthread_mutex_lock(&u->mu);
		/* a supported version is one of aw_mcp_versions: it fits */
		if (v && aw_mcp_version_supported(v) && strcmp(v, AW_MCP_V_STATELESS) &&
		    AW_STR_COPY(u->version, v) < 0)
			AW_COPY_ARRAY(u->version, AW_MCP_V_LEGACY);
		pthread_mutex_unlock(&u->mu);
		char *note = mcp_request_line(-1, "notifications/initialized", NULL);
		json_t *none = NULL;
		e = http_post(u, note, -1, timeout_ms, NULL, &none, &st, err);
		free(note);
		json_decref(none);
	}
	json_decref(res);
	json_decref(msg);
	return e;
}

/* u's session, initialized first when it has none (or it ended). */
static aw_err http_ready(mcp_up *u, int timeout_ms, aw_error *err)
{
	pthread_mutex_lock(&u->mu);
	int ready = u->initialized;
	pthread_mutex_unlock(&u->mu);
	if (ready)
		return AW_OK;
	aw_err e = http_init(u, timeout_ms, err);
	if (!e) {
		pthread_mutex_lock(&u->mu);
		u->initialized = 1;
		pthread_mutex_unlock(&u->mu);
	}
	return e;
}

aw_err mcp_http_request(mcp_up *u, const char *method, const json_t *params, int timeout_ms,
			const mcp_peer *peer, json_t **result, json_t **rpc_error, aw_error *err)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		aw_err e = http_ready(u, timeout_ms, err);
		if (e)
			return e;
		json_int_t id = atomic_fetch_add(&u->next_id, 1);
		char *line = mcp_request_line(id, method, params);
		json_t *msg = NULL;
		long st = 0;
		e = http_post(u, line, id, timeout_ms, peer, &msg, &st, err);
		free(line);
		if (e == AW_E_MCP_CANCELLED) {
			char *note = mcp_cancel_line(id);
			json_t *none = NULL;
			aw_error ignore = {0};
			if (note)
				http_post(u, note, -1, 2000, NULL, &none, &st, &ignore);
			free(note);
			json_decref(none);
			return e;
		}
		if (!e && st == 404) { /* the session ended upstream: a new one, once */
			pthread_mutex_lock(&u->mu);
			u->initialized = 0;
			pthread_mutex_unlock(&u->mu);
			if (attempt == 0)
				continue;
			return aw_fail(err, AW_E_MCP_UPSTREAM, "the upstream answered HTTP 404");
		}
		if (!e)
			e = mcp_answer_of(msg, result, rpc_error, err);
		json_decref(msg);
		return e;
	}
	return AW_E_MCP_UPSTREAM;
}

/* The upstream's GET stream, held open while the upstream lives: its events
 * (sse_event hands them to u->event; its requests are refused -32601). */
static void *listener_main(void *arg)
{
	mcp_up *u = arg;
	pthread_setname_np(pthread_self(), "aw-mcp-listen");
	int64_t backoff_ms = 1000;
	while (!atomic_load(&u->halt)) {
		aw_error err = {0};
		aw_err e = http_ready(u, u->timeout_ms, &err);
		char *vals[MAX_SECRETS] = {0};
		int nv = 0;
		struct curl_slist *hdr = NULL;
		long status = 0;
		int64_t t0 = aw_clock_mono_ns();
		CURL *h = NULL;
		CURLM *m = NULL;
		if (!e && !(e = headers_for(u, 0, &hdr, vals, &nv, &err)) &&
		    (h = curl_easy_init()) && (m = curl_multi_init())) {
			xfer x = {.u = u,
				  .body = AW_BUF_INIT(AW_MCP_MAX_RESPONSE),
				  .data = AW_BUF_INIT(AW_MCP_MAX_RESPONSE),
				  .sse = 1,
				  .id = -1,
				  .vals = vals,
				  .nv = nv,
				  .timeout_ms = u->timeout_ms,
				  .halt = &u->halt,
				  .asks = json_array()};
			xfer_setup(h, &x, hdr);
			curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
			curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
			perform(m, h, &x);
			log_dropped(&x, "the event stream");
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
			xfer_free(&x);
		}
		transfer_free(h, m, hdr, vals, nv);
		if (atomic_load(&u->halt))
			break;
		if (status == 405) {
			aw_log(AW_LOG_INFO, NULL,
			       "mcp upstream offers no event stream (GET 405): its resource "
			       "updates cannot be relayed",
			       "project", u->project, "provider", u->provider, NULL);
			break;
		}
		if (status == 404) { /* its session ended: a new one next round */
			pthread_mutex_lock(&u->mu);
			u->initialized = 0;
			pthread_mutex_unlock(&u->mu);
		}
		if (aw_clock_mono_ns() - t0 > 30000000000LL)
			backoff_ms = 1000; /* it held a while: reconnect soon */
		for (int64_t slept = 0; slept < backoff_ms && !atomic_load(&u->halt); slept += 50) {
			struct timespec ts = {0, 50000000};
			nanosleep(&ts, NULL);
		}
		backoff_ms = backoff_ms * 2 > 30000 ? 30000 : backoff_ms * 2;
	}
	return NULL;
}

void mcp_up_listen(mcp_up *u)
{
	if (u->stdio)
		return;
	pthread_mutex_lock(&u->mu);
	if (!u->listening && !u->stopping &&
	    pthread_create(&u->listener, NULL, listener_main, u) == 0)
		u->listening = 1;
	pthread_mutex_unlock(&u->mu);
}
