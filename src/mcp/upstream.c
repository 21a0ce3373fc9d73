/*
 * upstream.c - the MCP servers behind the gateway, as seen from it: one
 * aw_mcp_up per (project, provider, configuration).
 *
 *   http   Streamable HTTP: a POST per request (JSON or an SSE response, whose
 *          message with the request's id is the answer), a session initialized
 *          once (legacy protocol 2025-11-25; a 404 on the session starts a new
 *          one and retries once), idle curl handles kept for keep-alive.
 *          What the upstream asks on a response stream (a server request:
 *          ping, sampling, ...) is queued by libcurl's write callback and
 *          answered by the requesting thread between rounds of the
 *          transfer's multi loop, never inside the callback: at most
 *          MAX_ASKS per request of ours, none on the POST of an answer or a
 *          notification (the rest dropped and logged), so a hostile
 *          upstream cannot make answers beget answers.
 *          Headers carry the contract's secret references, resolved for each
 *          request and wiped after. Every connect passes the egress policy on
 *          the address being connected (curl's opensocket callback), so DNS
 *          rebinding gains nothing.
 *   stdio  a child process in a sandbox of its own (stdio_sandbox.c): its
 *          argv and env names must match an entry of the operator's
 *          allow-list; its environment holds only the contract's env (secrets
 *          resolved at start) and PATH; JSON-RPC lines on stdin/stdout, many requests in
 *          flight matched by id by a reader thread; a child that exits fails
 *          what it held and is restarted at the next request, with backoff.
 *          Its own process group, stopped with SIGTERM then SIGKILL.
 * What comes back has every credential value of the upstream replaced by
 * [REDACTED:credential] before it is parsed, and (HTTP) again in the parsed
 * strings and member names, which JSON escapes (\/, \uXXXX) hid from the
 * first pass.
 */
#include "mcp_internal.h"
#include "stdio_sandbox.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "awooop/buf.h"
#include "awooop/clock.h"
#include "awooop/egress.h"
#include "awooop/jcs.h"
#include "awooop/log.h"
#include "awooop/mcp_wire.h"
#include "awooop/metrics.h"
#include "awooop/secret.h"

#define SCRUBBED "[REDACTED:credential]"
#define MAX_SECRETS 80
#define IDLE_HANDLES 64
#define MAX_ASKS 16 /* an upstream's requests answered per request of ours */

typedef struct pending {
	json_int_t id;
	int done;
	pthread_cond_t cv; /* its waiter only: no herd of 32 threads per answer */
	json_t *msg;	   /* the response (owned) */
	const aw_mcp_peer *peer;
	const char *token; /* its progress token (a string), or NULL */
	json_t *inbox;	   /* the upstream's requests and notifications for it, in
			      order, handled by its waiter (owned; NULL: none) */
	struct pending *next;
} pending;

struct aw_mcp_up {
	char project[64], provider[40];
	json_t *config;
	char *secrets_dir;
	int allow_private, stdio, timeout_ms;
	const aw_sbx_policy *sbx;
	atomic_llong next_id;
	atomic_int list_changed;
	pthread_mutex_t mu; /* everything below */
	/* http */
	char url[2100];
	char session[256];
	char version[16];
	int initialized;
	CURL *idle[IDLE_HANDLES];
	CURLM *idle_m[IDLE_HANDLES]; /* each handle's multi: it holds the connection */
	int nidle;
	/* stdio */
	pid_t pid;
	int in_fd, out_fd;
	pthread_t reader;
	int reader_live, alive, gen;
	pending *waiting;
	char *secrets[MAX_SECRETS]; /* the child's resolved values, for scrubbing */
	int nsecrets;
	int64_t started_ns, retry_at_ns, backoff_ms;
	int stopping;
	char *cgroup_dir;  /* each child in a memory cgroup of its own under it */
	int memory_mb;	   /* its limit (< 0: none) */
	long pids_max;	   /* pids.max where the cgroup has the pids controller */
	char cgroup[4096]; /* the running child's cgroup, "" none */
	/* events: the hook, and an HTTP upstream's GET stream (its thread) */
	void (*event)(void *ud, const char *project, const json_t *msg);
	void *event_ud;
	pthread_t listener;
	int listening;
	atomic_int halt;
};

/* An upstream's message that is an event of its own, not of a request. */
static int is_event(const char *method)
{
	return method && (!strcmp(method, "notifications/resources/updated") ||
			  !strcmp(method, "notifications/tools/list_changed"));
}

/* ------------------------------------------------------------ scrubbing */

static void scrub(aw_buf *b, char *const *secrets, int n)
{
	for (int i = 0; i < n; i++) {
		size_t sl = strlen(secrets[i]);
		if (sl < 4) /* a value this short would scrub ordinary text */
			continue;
		char *hit;
		size_t from = 0;
		while (b->len && (hit = memmem(b->p + from, b->len - from, secrets[i], sl))) {
			size_t at = (size_t)(hit - b->p), rl = sizeof SCRUBBED - 1;
			aw_buf tail = AW_BUF_INIT(b->max);
			aw_buf_add(&tail, hit + sl, b->len - at - sl);
			aw_buf_truncate(b, at);
			aw_buf_add(b, SCRUBBED, rl);
			aw_buf_add(b, aw_buf_str(&tail), tail.len);
			aw_buf_free(&tail);
			from = at + rl;
		}
	}
}

/* 1 when p[0..n) holds one of the credentials (those scrub() replaces). */
static int holds_secret(const char *p, size_t n, char *const *secrets, int ns)
{
	for (int i = 0; i < ns; i++) {
		size_t sl = strlen(secrets[i]);
		if (sl >= 4 && memmem(p, n, secrets[i], sl))
			return 1;
	}
	return 0;
}

/* p[0..n) scrubbed, as a new buffer (NULL: out of memory or over the cap -
 * the caller then replaces the whole string). */
static char *scrubbed_copy(const char *p, size_t n, char *const *secrets, int ns, size_t *len)
{
	aw_buf b = AW_BUF_INIT(4 * (size_t)AW_MCP_MAX_RESPONSE);
	if (aw_buf_add(&b, p, n)) {
		aw_buf_free(&b);
		return NULL;
	}
	scrub(&b, secrets, ns);
	if (holds_secret(b.p, b.len, secrets, ns)) { /* the cap cut a replacement */
		aw_buf_free(&b);
		return NULL;
	}
	*len = b.len;
	return aw_buf_take(&b);
}

/* Every string value and member name of j (in place, all depths) that
 * holds a credential gets it replaced - the pass after parsing, for what
 * the upstream wrote with JSON escapes. */
static void scrub_json(json_t *j, char *const *secrets, int ns)
{
	if (!ns)
		return;
	if (json_is_string(j)) {
		const char *v = json_string_value(j);
		size_t n = json_string_length(j), len = 0;
		if (!holds_secret(v, n, secrets, ns))
			return;
		char *c = scrubbed_copy(v, n, secrets, ns, &len);
		if (!c || json_string_setn(j, c, len))
			json_string_set(j, SCRUBBED);
		free(c);
	} else if (json_is_array(j)) {
		size_t i;
		json_t *v;
		json_array_foreach (j, i, v)
			scrub_json(v, secrets, ns);
	} else if (json_is_object(j)) {
		const char *k;
		json_t *v, *renamed = NULL;
		json_object_foreach (j, k, v) {
			scrub_json(v, secrets, ns);
			if (holds_secret(k, strlen(k), secrets, ns)) {
				if (!renamed)
					renamed = json_array();
				json_array_append_new(renamed, json_string(k));
			}
		}
		size_t i;
		json_t *kv;
		json_array_foreach (renamed, i, kv) {
			const char *old = json_string_value(kv);
			size_t len = 0;
			char *c = old ? scrubbed_copy(old, strlen(old), secrets, ns, &len) : NULL;
			json_t *val = old ? json_incref(json_object_get(j, old)) : NULL;
			if (old)
				json_object_del(j, old);
			if (val)
				json_object_set_new(j, c ? c : SCRUBBED, val);
			free(c);
		}
		json_decref(renamed);
	}
}

static void wipe_str(char *s)
{
	if (s) {
		volatile char *p = s;
		while (*p)
			*p++ = 0;
		free(s);
	}
}

/* err's message under another code. */
static aw_err rewrap(aw_error *err, aw_err e)
{
	char msg[sizeof err->msg];
	memcpy(msg, err->msg, sizeof msg);
	return aw_fail(err, e, "%s", msg);
}

/* ------------------------------------------------------------ JSON-RPC */

static char *request_line(json_int_t id, const char *method, const json_t *params)
{
	json_t *m = json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", method);
	if (id >= 0)
		json_object_set_new(m, "id", json_integer(id));
	if (params)
		json_object_set(m, "params", (json_t *)params);
	char *s = json_dumps(m, JSON_COMPACT);
	json_decref(m);
	return s;
}

static json_t *init_params(void)
{
	/* what the gateway can ask its clients during a call (each client's own
	 * capability is checked when the upstream asks) */
	return json_pack("{s:s,s:{s:{},s:{}},s:{s:s,s:s}}", "protocolVersion", AW_MCP_V_LEGACY,
			 "capabilities", "sampling", "elicitation", "clientInfo", "name",
			 "awooop-mcp-gateway", "version", AWOOOP_VERSION);
}

/* The answer to a request: result, or an upstream JSON-RPC error. */
static aw_err answer_of(json_t *msg, json_t **result, json_t **rpc_error, aw_error *err)
{
	json_t *res = json_object_get(msg, "result"), *e = json_object_get(msg, "error");
	if (json_is_object(res)) {
		*result = json_incref(res);
		return AW_OK;
	}
	if (json_is_object(e)) {
		if (rpc_error)
			*rpc_error = json_incref(e);
		const char *m = json_string_value(json_object_get(e, "message"));
		return aw_fail(err, AW_E_MCP_UPSTREAM, "the upstream answered error %lld: %.120s",
			       (long long)json_integer_value(json_object_get(e, "code")),
			       m ? m : "(no message)");
	}
	return aw_fail(err, AW_E_MCP_UPSTREAM, "the upstream's answer has no result");
}

/* ------------------------------------------------------------ http */

typedef struct {
	aw_mcp_up *u;
	aw_buf body; /* a JSON answer; for an SSE one, the line being read */
	aw_buf data; /* SSE: the event being read */
	char session[256];
	char ctype[128];
	int egress_refused, sse; /* sse: 1 not yet known, 2 an event stream, 0 not */
	json_int_t id;		 /* the request's (-1: a notification or response) */
	json_t *answer;		 /* SSE: the message answering id */
	char *const *vals;	 /* the credentials resolved for this request */
	int nv, timeout_ms;
	const aw_mcp_peer *peer;
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

static aw_err http_post(aw_mcp_up *u, const char *line, json_int_t id, int timeout_ms,
			const aw_mcp_peer *peer, json_t **msg, long *status, aw_error *err);

/* What goes back to the upstream for its request req: peer's answer, or
 * -32601 when there is no peer or it cannot ask its client. */
static json_t *peer_answer(const aw_mcp_peer *peer, const json_t *req)
{
	json_t *resp = peer && peer->request ? peer->request(peer->ud, req) : NULL;
	return resp ? resp
		    : aw_rpc_error_json(json_object_get(req, "id"), AW_RPC_METHOD,
					"the gateway's client cannot answer this request", NULL);
}

/* The upstream's own request, during one of ours: the peer answers it (or
 * -32601 without one), and the answer is POSTed back in the same session. */
static void answer_upstream(aw_mcp_up *u, const aw_mcp_peer *peer, const json_t *req,
			    int timeout_ms)
{
	json_t *resp = peer_answer(peer, req);
	char *line = json_dumps(resp, JSON_COMPACT);
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
	while (running) {
		if (curl_multi_perform(m, &running) != CURLM_OK)
			break;
		answer_asks(x);
		if (running && curl_multi_poll(m, NULL, 0, 200, NULL) != CURLM_OK)
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
	scrub(&x->data, x->vals, x->nv);
	json_t *m = json_loadb(x->data.p, x->data.len, 0, NULL);
	aw_buf_truncate(&x->data, 0);
	scrub_json(m, x->vals, x->nv);
	json_t *id = json_object_get(m, "id");
	const char *method = json_string_value(json_object_get(m, "method"));
	if (method && id) { /* queued: answered outside libcurl (perform) */
		if (x->asks && x->nasks < MAX_ASKS && !json_array_append(x->asks, m))
			x->nasks++;
		else
			x->dropped++;
	} else if (is_event(method) && x->u->event)
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
static aw_err headers_for(aw_mcp_up *u, int post, struct curl_slist **hdr, char **vals, int *nv,
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
			vals[(*nv)++] = strndup(b.p + at, b.len - at);
		if (!e)
			*hdr = curl_slist_append(*hdr, aw_buf_str(&b));
		aw_secret_wipe(&b);
		if (e)
			return rewrap(err, AW_E_MCP_UPSTREAM);
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

/* One POST; *msg the answer to id (NULL for a notification: 202 expected).
 * *status the HTTP status. */
static aw_err http_post(aw_mcp_up *u, const char *line, json_int_t id, int timeout_ms,
			const aw_mcp_peer *peer, json_t **msg, long *status, aw_error *err)
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
			scrub(&x.body, vals, nv);
		if (x.session[0]) {
			pthread_mutex_lock(&u->mu);
			memcpy(u->session, x.session, sizeof u->session);
			pthread_mutex_unlock(&u->mu);
		}
		if (id >= 0 && *status == 200) {
			*msg = x.sse == 2 ? x.answer
					  : json_loadb(aw_buf_str(&x.body), x.body.len, 0, NULL);
			x.answer = NULL;
			if (x.sse != 2)
				scrub_json(*msg, vals, nv);
			if (!*msg)
				e = aw_fail(err, AW_E_MCP_UPSTREAM,
					    "the upstream's answer holds no JSON-RPC response");
		} else if (*status >= 400 && *status != 404) {
			e = aw_fail(err, AW_E_MCP_UPSTREAM, "the upstream answered HTTP %ld",
				    *status);
		}
	}
	log_dropped(&x, id >= 0 ? "a request" : "an answer or notification");
	json_decref(x.answer);
	json_decref(x.asks);
	aw_buf_free(&x.body);
	aw_buf_free(&x.data);
	if (h) {
		pthread_mutex_lock(&u->mu);
		if (u->nidle < IDLE_HANDLES)
			u->idle[u->nidle] = h, u->idle_m[u->nidle++] = m, h = NULL, m = NULL;
		pthread_mutex_unlock(&u->mu);
	}
done:
	if (h)
		curl_easy_cleanup(h);
	if (m)
		curl_multi_cleanup(m);
	curl_slist_free_all(hdr);
	for (int i = 0; i < nv; i++)
		wipe_str(vals[i]);
	return e;
}

static aw_err http_init(aw_mcp_up *u, int timeout_ms, aw_error *err)
{
	json_t *p = init_params();
	char *line = request_line(atomic_fetch_add(&u->next_id, 1), "initialize", p);
	json_decref(p);
	json_t *msg = NULL, *res = NULL;
	long st;
	pthread_mutex_lock(&u->mu);
	u->session[0] = 0;
	snprintf(u->version, sizeof u->version, "%s", AW_MCP_V_LEGACY);
	pthread_mutex_unlock(&u->mu);
	aw_err e =
		http_post(u, line, atomic_load(&u->next_id) - 1, timeout_ms, NULL, &msg, &st, err);
	free(line);
	if (!e && !msg)
		e = aw_fail(err, AW_E_MCP_UPSTREAM, "the upstream refused initialize (HTTP %ld)",
			    st);
	if (!e && !(e = answer_of(msg, &res, NULL, err))) {
		const char *v = json_string_value(json_object_get(res, "protocolVersion"));
		pthread_mutex_lock(&u->mu);
		if (v && aw_mcp_version_supported(v) && strcmp(v, AW_MCP_V_STATELESS))
			snprintf(u->version, sizeof u->version, "%s", v);
		pthread_mutex_unlock(&u->mu);
		char *note = request_line(-1, "notifications/initialized", NULL);
		json_t *none = NULL;
		e = http_post(u, note, -1, timeout_ms, NULL, &none, &st, err);
		free(note);
		json_decref(none);
	}
	json_decref(res);
	json_decref(msg);
	return e;
}

/* The upstream is told a request of ours was cancelled (best effort). */
static char *cancel_line(json_int_t id)
{
	json_t *p = json_pack("{s:I, s:s}", "requestId", (json_int_t)id, "reason",
			      "cancelled by the gateway's client");
	char *line = p ? request_line(-1, "notifications/cancelled", p) : NULL;
	json_decref(p);
	return line;
}

/* u's session, initialized first when it has none (or it ended). */
static aw_err http_ready(aw_mcp_up *u, int timeout_ms, aw_error *err)
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

static aw_err http_request(aw_mcp_up *u, const char *method, const json_t *params, int timeout_ms,
			   const aw_mcp_peer *peer, json_t **result, json_t **rpc_error,
			   aw_error *err)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		aw_err e = http_ready(u, timeout_ms, err);
		if (e)
			return e;
		json_int_t id = atomic_fetch_add(&u->next_id, 1);
		char *line = request_line(id, method, params);
		json_t *msg = NULL;
		long st = 0;
		e = http_post(u, line, id, timeout_ms, peer, &msg, &st, err);
		free(line);
		if (e == AW_E_MCP_CANCELLED) {
			char *note = cancel_line(id);
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
			e = answer_of(msg, result, rpc_error, err);
		json_decref(msg);
		return e;
	}
	return AW_E_MCP_UPSTREAM;
}

/* The upstream's GET stream, held open while the upstream lives: its events
 * (sse_event hands them to u->event; its requests are refused -32601). */
static void *listener_main(void *arg)
{
	aw_mcp_up *u = arg;
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
			json_decref(x.answer);
			json_decref(x.asks);
			aw_buf_free(&x.body);
			aw_buf_free(&x.data);
		}
		if (h)
			curl_easy_cleanup(h);
		if (m)
			curl_multi_cleanup(m);
		curl_slist_free_all(hdr);
		for (int i = 0; i < nv; i++)
			wipe_str(vals[i]);
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

void aw_mcp_up_listen(aw_mcp_up *u)
{
	if (u->stdio)
		return;
	pthread_mutex_lock(&u->mu);
	if (!u->listening && !u->stopping &&
	    pthread_create(&u->listener, NULL, listener_main, u) == 0)
		u->listening = 1;
	pthread_mutex_unlock(&u->mu);
}

/* ------------------------------------------------------------ stdio */

static void fail_waiting(aw_mcp_up *u) /* holds mu */
{
	for (pending *p = u->waiting; p; p = p->next) {
		p->done = 1;
		pthread_cond_signal(&p->cv);
	}
}

/* n bytes to fd, across short writes; -1 when it cannot take them. */
static int write_all(int fd, const char *p, size_t n)
{
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, p + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

/* Writes one message to the child as a line (holds mu; the child alive). */
static void write_msg(aw_mcp_up *u, const json_t *m)
{
	char *line = json_dumps(m, JSON_COMPACT);
	if (line) {
		size_t n = strlen(line);
		line[n] = '\n'; /* over the NUL: written with its length */
		write_all(u->in_fd, line, n + 1);
	}
	free(line);
}

/* Which request in flight a message of the child's (a request or a
 * notification) is for (holds mu): progress by its token; anything else
 * only when one request with a peer is in flight - a stdio upstream says
 * nothing else to tell them apart. NULL: none. */
static pending *route(aw_mcp_up *u, const json_t *m)
{
	const char *method = json_string_value(json_object_get(m, "method"));
	if (!strcmp(method, "notifications/progress")) {
		const char *t = json_string_value(
			json_object_get(json_object_get(m, "params"), "progressToken"));
		for (pending *p = u->waiting; t && p; p = p->next)
			if (p->token && !strcmp(p->token, t) && !p->done)
				return p;
		return NULL;
	}
	pending *one = NULL;
	int n = 0;
	for (pending *p = u->waiting; p; p = p->next)
		if (p->peer && !p->done && (p->peer->request || p->peer->notify))
			n++, one = p;
	return n == 1 ? one : NULL;
}

typedef struct {
	aw_mcp_up *u;
	int fd, err_fd, gen;
} reader_arg;

/* A child's stderr, line by line, into the log: at most STDERR_LINE bytes a
 * line (the rest cut), its own resolved secrets scrubbed and then the
 * redaction engine (aw_log), bytes outside printable ASCII shown as '?', and
 * at most STDERR_PER_S lines a second (the lines dropped are counted in the
 * next one logged). */
#define STDERR_LINE 1024
#define STDERR_PER_S 20
typedef struct {
	char line[STDERR_LINE + 1];
	size_t len;
	int cut, tokens;
	int64_t refill_ns;
	long dropped;
} stderr_log;

static void stderr_emit(aw_mcp_up *u, stderr_log *el)
{
	int64_t now = aw_clock_mono_ns();
	if (now - el->refill_ns >= 1000000000LL) {
		el->tokens = STDERR_PER_S;
		el->refill_ns = now;
	}
	if (el->tokens == 0) {
		el->dropped++;
		el->len = 0;
		el->cut = 0;
		return;
	}
	el->tokens--;
	aw_buf b = AW_BUF_INIT(STDERR_LINE + 1);
	for (size_t i = 0; i < el->len; i++) {
		unsigned char c = (unsigned char)el->line[i];
		aw_buf_add(&b, c >= 0x20 && c < 0x7f ? (const char *)&el->line[i] : "?", 1);
	}
	pthread_mutex_lock(&u->mu);
	scrub(&b, u->secrets, u->nsecrets);
	pthread_mutex_unlock(&u->mu);
	char dropped[24] = "";
	if (el->dropped)
		snprintf(dropped, sizeof dropped, "%ld", el->dropped);
	aw_log(AW_LOG_INFO, NULL, "mcp stdio upstream stderr", "project", u->project, "provider",
	       u->provider, "line", aw_buf_str(&b), "cut", el->cut ? "true" : NULL,
	       "dropped_before", el->dropped ? dropped : NULL, NULL);
	aw_secret_wipe(&b);
	el->dropped = 0;
	el->len = 0;
	el->cut = 0;
}

static void stderr_take(aw_mcp_up *u, stderr_log *el, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n') {
			stderr_emit(u, el);
		} else if (el->len < STDERR_LINE) {
			el->line[el->len++] = p[i];
		} else {
			el->cut = 1;
		}
	}
}

static void *reader_main(void *arg)
{
	reader_arg ra = *(reader_arg *)arg;
	free(arg);
	aw_mcp_up *u = ra.u;
	pthread_setname_np(pthread_self(), "aw-mcp-stdio");
	aw_buf line = AW_BUF_INIT(AW_MCP_MAX_RESPONSE);
	char buf[65536];
	int over = 0;
	stderr_log el = {.tokens = STDERR_PER_S, .refill_ns = aw_clock_mono_ns()};
	struct pollfd pf[2] = {{.fd = ra.fd, .events = POLLIN},
			       {.fd = ra.err_fd, .events = POLLIN}};
	int nfds = ra.err_fd >= 0 ? 2 : 1;
	for (;;) {
		if (poll(pf, (nfds_t)nfds, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (nfds == 2 && pf[1].revents) {
			ssize_t en = read(ra.err_fd, buf, sizeof buf);
			if (en > 0)
				stderr_take(u, &el, buf, (size_t)en);
			else if (en == 0 || errno != EINTR)
				nfds = 1; /* its stderr closed: stdout alone from here */
		}
		if (!pf[0].revents)
			continue;
		ssize_t n = read(ra.fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++) {
			char *nl = memchr(buf + i, '\n', (size_t)(n - i));
			size_t take = nl ? (size_t)(nl - (buf + i)) : (size_t)(n - i);
			if (!over && aw_buf_add(&line, buf + i, take))
				over = 1;
			i += (ssize_t)take;
			if (!nl)
				break;
			if (over) { /* a line over the limit: the protocol is broken */
				aw_log(AW_LOG_WARN, NULL,
				       "mcp stdio upstream sent an oversized line", "project",
				       u->project, "provider", u->provider, NULL);
				goto out;
			}
			pthread_mutex_lock(&u->mu);
			scrub(&line, u->secrets, u->nsecrets);
			json_t *m = json_loadb(aw_buf_str(&line), line.len, 0, NULL);
			scrub_json(m, u->secrets, u->nsecrets); /* escaped forms too */
			pthread_mutex_unlock(&u->mu);
			aw_buf_truncate(&line, 0);
			const char *method = json_string_value(json_object_get(m, "method"));
			json_t *id = json_object_get(m, "id");
			if (method && !strcmp(method, "notifications/tools/list_changed"))
				atomic_store(&u->list_changed, 1); /* and an event, below */
			if (is_event(method) && !id) {
				if (u->event)
					u->event(u->event_ud, u->project, m);
			} else if (method) {
				pthread_mutex_lock(&u->mu);
				pending *to = u->gen == ra.gen ? route(u, m) : NULL;
				if (to) { /* its waiter handles it */
					if (!to->inbox)
						to->inbox = json_array();
					json_array_append_new(to->inbox, m); /* handed over */
					m = NULL;
					pthread_cond_signal(&to->cv);
				} else if (id && u->alive && u->gen == ra.gen) {
					json_t *r = aw_rpc_error_json(
						id, AW_RPC_METHOD,
						"the gateway cannot tell which of its clients this "
						"request is for",
						NULL);
					write_msg(u, r);
					json_decref(r);
				}
				pthread_mutex_unlock(&u->mu);
			} else if (json_is_integer(id)) {
				pthread_mutex_lock(&u->mu);
				for (pending *p = u->waiting; p; p = p->next)
					if (p->id == json_integer_value(id) && !p->done) {
						p->msg = m; /* handed over, not shared */
						m = NULL;
						p->done = 1;
						pthread_cond_signal(&p->cv);
						break;
					}
				pthread_mutex_unlock(&u->mu);
			}
			json_decref(m);
		}
	}
out:
	aw_buf_free(&line);
	if (el.len)
		stderr_emit(u, &el);
	if (ra.err_fd >= 0)
		close(ra.err_fd);
	pthread_mutex_lock(&u->mu);
	if (u->gen == ra.gen) { /* else a stop already moved on */
		u->alive = 0;
		fail_waiting(u);
	}
	pthread_mutex_unlock(&u->mu);
	return NULL;
}

/* ------------------------------------------------------------ memory cgroup */

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* A cgroup of its own for the next child (holds mu): u->cgroup, limited to
 * memory_mb - memory.max (cgroup v2) or memory.limit_in_bytes (v1) - with
 * swap kept out where the hierarchy allows. */
static aw_err cgroup_make(aw_mcp_up *u, aw_error *err)
{
	static atomic_long seq;
	snprintf(u->cgroup, sizeof u->cgroup, "%s/awooop-mcp-%d-%ld", u->cgroup_dir, (int)getpid(),
		 atomic_fetch_add(&seq, 1));
	char limit[32];
	snprintf(limit, sizeof limit, "%lld", (long long)u->memory_mb << 20);
	if (mkdir(u->cgroup, 0700) == 0 &&
	    (write_file(u->cgroup, "memory.max", u->memory_mb < 0 ? "max" : limit) == 0 ||
	     write_file(u->cgroup, "memory.limit_in_bytes", u->memory_mb < 0 ? "-1" : limit) ==
		     0)) {
		/* cgroup v2 with the pids controller: its processes too */
		char pids[24];
		snprintf(pids, sizeof pids, "%ld", u->pids_max);
		write_file(u->cgroup, "pids.max", pids);
		if (write_file(u->cgroup, "memory.swap.max", "0")) /* v1: memsw >= limit */
			write_file(u->cgroup, "memory.memsw.limit_in_bytes", limit);
		return AW_OK;
	}
	int en = errno;
	rmdir(u->cgroup);
	u->cgroup[0] = 0;
	return aw_fail(err, AW_E_MCP_UPSTREAM,
		       "cannot give upstream %s its memory limit under %s: %s "
		       "(--mcp-cgroup must be a writable memory cgroup)",
		       u->provider, u->cgroup_dir, strerror(en));
}

/* How many times the kernel killed the child of cgroup over its limit. */
static long cgroup_ooms(const char *cgroup)
{
	char path[4200], line[128];
	long n = 0;
	const char *files[] = {"memory.events", "memory.oom_control"}; /* v2, v1 */
	for (int i = 0; i < 2 && !n; i++) {
		snprintf(path, sizeof path, "%s/%s", cgroup, files[i]);
		FILE *f = fopen(path, "re");
		while (f && fgets(line, sizeof line, f))
			if (!strncmp(line, "oom_kill ", 9))
				n = strtol(line + 9, NULL, 10);
		if (f)
			fclose(f);
	}
	return n;
}

/* Removes a reaped child's cgroup (its path, taken from the upstream when
 * the child was stopped: a new child may have its own by then). */
static void cgroup_drop(const aw_mcp_up *u, const char *cgroup)
{
	if (!cgroup[0])
		return;
	if (cgroup_ooms(cgroup) > 0)
		aw_log(AW_LOG_WARN, NULL,
		       "mcp stdio upstream killed by the kernel: over its memory limit", "project",
		       u->project, "provider", u->provider, NULL);
	/* the child is reaped: empty, so it can go (v1 may take a moment) */
	for (int i = 0; i < 50 && rmdir(cgroup) != 0 && errno == EBUSY; i++) {
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
}

/* Stops the child (holds mu; releases it while waiting: the upstream is
 * free for a new child at once, the old one is reaped meanwhile). */
static void stdio_stop(aw_mcp_up *u)
{
	if (!u->pid)
		return;
	pid_t pid = u->pid;
	int out_fd = u->out_fd, reader_live = u->reader_live;
	pthread_t reader = u->reader;
	char cgroup[sizeof u->cgroup];
	memcpy(cgroup, u->cgroup, sizeof cgroup);
	u->cgroup[0] = 0;
	u->pid = 0;
	u->alive = 0;
	u->reader_live = 0;
	u->gen++;
	close(u->in_fd);
	for (int i = 0; i < u->nsecrets; i++)
		wipe_str(u->secrets[i]);
	u->nsecrets = 0;
	fail_waiting(u);
	kill(-pid, SIGTERM);
	pthread_mutex_unlock(&u->mu);
	int status;
	int64_t until = aw_clock_mono_ns() + 1000000000LL;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (aw_clock_mono_ns() > until) {
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	if (reader_live)
		pthread_join(reader, NULL);
	close(out_fd);
	cgroup_drop(u, cgroup);
	pthread_mutex_lock(&u->mu);
}

/* Starts the child (holds mu). */
static aw_err stdio_start(aw_mcp_up *u, aw_error *err)
{
	json_t *cmd = json_object_get(u->config, "command");
	int entry = -1;
	aw_err ce = aw_sbx_check(u->sbx, u->provider, u->config, &entry, err);
	if (ce)
		return ce;
	char secret_dir[4200] = "";
	if (u->secrets_dir)
		snprintf(secret_dir, sizeof secret_dir, "%s/%s", u->secrets_dir, u->project);
	aw_sbx_plan plan;
	ce = aw_sbx_plan_make(u->sbx, entry, u->project, u->secrets_dir ? secret_dir : NULL,
			      u->cgroup_dir || u->memory_mb < 0 ? 0 : u->memory_mb, &plan, err);
	if (ce)
		return ce;
	size_t argc = json_array_size(cmd);
	char **argv = calloc(argc + 1, sizeof *argv);
	char **envp = calloc(json_object_size(json_object_get(u->config, "env")) + 3, sizeof *envp);
	aw_err e = AW_OK;
	int nenv = 0;
	for (size_t i = 0; argv && i < argc; i++)
		argv[i] = (char *)json_string_value(json_array_get(cmd, i));
	const char *k;
	json_t *v;
	json_object_foreach (json_object_get(u->config, "env"), k, v) {
		if (!envp)
			break;
		aw_buf b = AW_BUF_INIT(70000);
		aw_buf_addf(&b, "%s=", k);
		size_t at = b.len;
		if (json_is_string(v)) {
			aw_buf_adds(&b, json_string_value(v));
		} else {
			/* the prefix, then the secret (the secret alone is
			 * scrubbed from what the child answers) */
			aw_buf_adds(&b, json_string_value(json_object_get(v, "prefix")) ?: "");
			at = b.len;
			if ((e = aw_secret_tenant_resolve(
				     u->project, u->secrets_dir,
				     json_string_value(json_object_get(v, "secret")), &b, err))) {
				aw_secret_wipe(&b);
				e = rewrap(err, AW_E_MCP_UPSTREAM);
				break;
			}
			if (u->nsecrets < MAX_SECRETS)
				u->secrets[u->nsecrets++] = strndup(b.p + at, b.len - at);
		}
		envp[nenv++] = strndup(b.p, b.len);
		aw_secret_wipe(&b);
	}
	if (!e && envp) /* aw_sbx_check refused a tenant's PATH */
		envp[nenv++] = strdup("PATH=/usr/local/bin:/usr/bin:/bin");
	int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1}, go[2] = {-1, -1},
	    rep[2] = {-1, -1};
	if (!e && (!argv || !envp))
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	if (!e && (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(errp, O_CLOEXEC) ||
		   pipe2(go, O_CLOEXEC) || pipe2(rep, O_CLOEXEC)))
		e = aw_fail(err, AW_E_MCP_UPSTREAM, "cannot start upstream %s: %s", u->provider,
			    strerror(errno));
	if (!e && u->cgroup_dir)
		e = cgroup_make(u, err);
	pid_t pid = -1;
	if (!e) {
		pid = fork();
		if (pid == 0) { /* the child: async-signal-safe calls only */
			char ok;
			close(go[1]); /* wait until the parent has put it in its cgroup */
			if (read(go[0], &ok, 1) != 1)
				_exit(125);
			setpgid(0, 0);
			dup2(in[0], 0);
			dup2(out[1], 1);
			dup2(errp[1], 2);
			dup2(rep[1], 3); /* the sandbox's report */
			syscall(SYS_close_range, 4, ~0U, 0);
			/* no core dump (its environment holds its credentials), a
			 * bound on open files and on the size of a file it writes */
			struct rlimit none = {0, 0}, lim;
			setrlimit(RLIMIT_CORE, &none);
			const struct {
				int res;
				rlim_t max;
			} caps[] = {{RLIMIT_NOFILE, 1024}, {RLIMIT_FSIZE, (rlim_t)1 << 30}};
			for (int i = 0; i < 2; i++) /* the hard limit lowered, never raised */
				if (getrlimit(caps[i].res, &lim) == 0) {
					if (lim.rlim_max > caps[i].max)
						lim.rlim_max = caps[i].max;
					lim.rlim_cur = lim.rlim_max;
					setrlimit(caps[i].res, &lim);
				}
			aw_sbx_exec(&plan, argv, envp);
		}
		if (pid < 0)
			e = aw_fail(err, AW_E_MCP_UPSTREAM, "cannot start upstream %s: %s",
				    u->provider, strerror(errno));
		char pidtext[24];
		snprintf(pidtext, sizeof pidtext, "%d", (int)pid);
		if (!e && u->cgroup[0] && write_file(u->cgroup, "cgroup.procs", pidtext)) {
			e = aw_fail(err, AW_E_MCP_UPSTREAM,
				    "cannot put upstream %s in its memory cgroup: %s", u->provider,
				    strerror(errno));
			kill(pid, SIGKILL); /* it never ran: it waits for the go */
			waitpid(pid, NULL, 0);
		}
		if (!e && write(go[1], "g", 1) != 1)
			e = aw_fail(err, AW_E_MCP_UPSTREAM, "cannot start upstream %s",
				    u->provider);
		if (rep[1] >= 0)
			close(rep[1]);
		rep[1] = -1;
		/* the box is built (or failed) before the program runs */
		if (!e && (e = aw_sbx_ready(rep[0], 10000, u->provider, err))) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
	}
	aw_sbx_plan_clear(&plan);
	for (int i = 0; i < 2; i++)
		if (rep[i] >= 0)
			close(rep[i]);
	for (int i = 0; i < 2; i++)
		if (go[i] >= 0)
			close(go[i]);
	for (int i = 0; envp && i < nenv; i++)
		wipe_str(envp[i]);
	free(envp);
	free(argv);
	if (in[0] >= 0)
		close(in[0]);
	if (out[1] >= 0)
		close(out[1]);
	if (errp[1] >= 0)
		close(errp[1]);
	if (e) {
		if (u->cgroup[0])
			rmdir(u->cgroup);
		u->cgroup[0] = 0;
		if (in[1] >= 0)
			close(in[1]);
		if (out[0] >= 0)
			close(out[0]);
		if (errp[0] >= 0)
			close(errp[0]);
		for (int i = 0; i < u->nsecrets; i++)
			wipe_str(u->secrets[i]);
		u->nsecrets = 0;
		return e;
	}
	setpgid(pid, pid);
	u->pid = pid;
	u->in_fd = in[1];
	u->out_fd = out[0];
	u->alive = 1;
	u->initialized = 0;
	u->started_ns = aw_clock_mono_ns();
	reader_arg *ra = malloc(sizeof *ra);
	if (ra)
		*ra = (reader_arg){u, u->out_fd, errp[0], u->gen};
	if (!ra || pthread_create(&u->reader, NULL, reader_main, ra) != 0) {
		free(ra);
		close(errp[0]);
		u->reader_live = 0;
		stdio_stop(u);
		return aw_fail(err, AW_E_INTERNAL, "cannot start an upstream reader thread");
	}
	u->reader_live = 1;
	aw_log(AW_LOG_INFO, NULL, "mcp stdio upstream started", "project", u->project, "provider",
	       u->provider, NULL);
	return AW_OK;
}

/* The messages of the child's for p, one at a time with mu released (a
 * peer may wait for its client): requests answered to the child, while it
 * is the same child, notifications passed on (holds mu). */
static void stdio_inbox(aw_mcp_up *u, pending *p)
{
	int gen = u->gen;
	while (json_array_size(p->inbox)) {
		json_t *m = json_incref(json_array_get(p->inbox, 0));
		json_array_remove(p->inbox, 0);
		json_t *id = json_object_get(m, "id"), *resp = NULL;
		pthread_mutex_unlock(&u->mu);
		if (id)
			resp = peer_answer(p->peer, m);
		else if (p->peer->notify)
			p->peer->notify(p->peer->ud, m);
		pthread_mutex_lock(&u->mu);
		if (resp && u->alive && u->gen == gen)
			write_msg(u, resp);
		json_decref(resp);
		json_decref(m);
	}
}

/* Sends one line and, for a request (id >= 0), waits for its answer (holds
 * mu); what the child asks or tells peer meanwhile is handled here. */
static aw_err stdio_exchange(aw_mcp_up *u, json_int_t id, const char *line, int timeout_ms,
			     const aw_mcp_peer *peer, const char *token, json_t **msg,
			     aw_error *err)
{
	pending p = {.id = id, .peer = peer, .token = token};
	const atomic_int *cancel = peer ? peer->cancel : NULL;
	if (id >= 0) {
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_REALTIME);
		pthread_cond_init(&p.cv, &ca);
		pthread_condattr_destroy(&ca);
		p.next = u->waiting;
		u->waiting = &p;
	}
	size_t n = strlen(line);
	char *l = malloc(n + 1);
	aw_err e = AW_OK;
	if (!l) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	} else {
		memcpy(l, line, n);
		l[n] = '\n'; /* the pipe is the child's only input: writes are whole lines */
		if (write_all(u->in_fd, l, n + 1))
			e = aw_fail(err, AW_E_MCP_UPSTREAM, "upstream %s closed its input",
				    u->provider);
		free(l);
	}
	if (id < 0)
		return e;
	/* in slices of 50 ms when the client may cancel: it is looked at between */
	int64_t until = aw_clock_mono_ns() + (int64_t)timeout_ms * 1000000LL;
	int cancelled = 0;
	while (!e && !p.done) {
		if (json_array_size(p.inbox)) {
			stdio_inbox(u, &p);
			continue;
		}
		int64_t left_ms = (until - aw_clock_mono_ns()) / 1000000LL;
		if (left_ms <= 0)
			break;
		if (cancel && (cancelled = atomic_load(cancel)))
			break;
		struct timespec ts = aw_clock_after(CLOCK_REALTIME,
						    (int)(cancel && left_ms > 50 ? 50 : left_ms));
		pthread_cond_timedwait(&p.cv, &u->mu, &ts);
	}
	for (pending **pp = &u->waiting; *pp; pp = &(*pp)->next)
		if (*pp == &p) {
			*pp = p.next;
			break;
		}
	if (p.done && p.msg) /* what the child said before its answer */
		stdio_inbox(u, &p);
	json_decref(p.inbox);
	if (!e && !p.done && cancelled) {
		e = aw_fail(err, AW_E_MCP_CANCELLED, "the client cancelled the request");
		char *note = cancel_line(id);
		aw_error ignore = {0}; /* best effort: the client's answer is the same */
		if (note && u->alive)
			stdio_exchange(u, -1, note, timeout_ms, NULL, NULL, NULL, &ignore);
		free(note);
	} else if (!e && !p.done) {
		e = aw_fail(err, AW_E_MCP_UPSTREAM, "the upstream did not answer within %d ms",
			    timeout_ms);
	} else if (!e && !p.msg)
		e = aw_fail(err, AW_E_MCP_UPSTREAM, "upstream %s exited", u->provider);
	pthread_cond_destroy(&p.cv);
	if (!e)
		*msg = p.msg;
	else
		json_decref(p.msg);
	return e;
}

static aw_err stdio_request(aw_mcp_up *u, const char *method, const json_t *params, int timeout_ms,
			    const aw_mcp_peer *peer, json_t **result, json_t **rpc_error,
			    aw_error *err)
{
	aw_err e = AW_OK;
	pthread_mutex_lock(&u->mu);
	if (u->stopping) {
		pthread_mutex_unlock(&u->mu);
		return aw_fail(err, AW_E_MCP_UPSTREAM, "upstream %s is stopping", u->provider);
	}
	if (u->pid && !u->alive) { /* it exited: collect it, back off, restart */
		int64_t lived = aw_clock_mono_ns() - u->started_ns;
		u->backoff_ms = lived > 60000000000LL ? 200
				: u->backoff_ms
					? (u->backoff_ms * 2 > 30000 ? 30000 : u->backoff_ms * 2)
					: 200;
		/* before the stop, which lets go of mu: a request meanwhile
		 * finds the backoff, not a free slot for a child */
		u->retry_at_ns = aw_clock_mono_ns() + u->backoff_ms * 1000000LL;
		stdio_stop(u);
		aw_log(AW_LOG_WARN, NULL, "mcp stdio upstream exited; restarting with backoff",
		       "project", u->project, "provider", u->provider, NULL);
		aw_metrics_mcp_stdio_restart(u->project);
	}
	if (!u->pid) {
		if (aw_clock_mono_ns() < u->retry_at_ns)
			e = aw_fail(err, AW_E_MCP_UPSTREAM, "upstream %s is restarting (backoff)",
				    u->provider);
		else
			e = stdio_start(u, err);
	}
	if (!e && !u->initialized) {
		json_t *p = init_params(), *msg = NULL, *res = NULL;
		json_int_t id = atomic_fetch_add(&u->next_id, 1);
		char *line = request_line(id, "initialize", p);
		json_decref(p);
		e = line ? stdio_exchange(u, id, line, timeout_ms, NULL, NULL, &msg, err)
			 : AW_E_NOMEM;
		free(line);
		if (!e && !(e = answer_of(msg, &res, NULL, err))) {
			char *note = request_line(-1, "notifications/initialized", NULL);
			e = stdio_exchange(u, -1, note, timeout_ms, NULL, NULL, NULL, err);
			free(note);
		}
		json_decref(res);
		json_decref(msg);
		if (!e)
			u->initialized = 1;
	}
	if (!e) {
		json_t *msg = NULL;
		json_int_t id = atomic_fetch_add(&u->next_id, 1);
		char *line = request_line(id, method, params);
		const char *token = json_string_value(
			json_object_get(json_object_get(params, "_meta"), "progressToken"));
		e = line ? stdio_exchange(u, id, line, timeout_ms, peer, token, &msg, err)
			 : AW_E_NOMEM;
		free(line);
		if (!e)
			e = answer_of(msg, result, rpc_error, err);
		json_decref(msg);
	}
	pthread_mutex_unlock(&u->mu);
	return e;
}

/* ------------------------------------------------------------ life */

aw_err aw_mcp_up_new(const aw_mcp_up_opts *o, aw_mcp_up **out, aw_error *err)
{
	aw_mcp_up *u = calloc(1, sizeof *u);
	if (!u)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	snprintf(u->project, sizeof u->project, "%s", o->project);
	snprintf(u->provider, sizeof u->provider, "%s", o->provider);
	u->config = json_deep_copy(o->config);
	u->secrets_dir = o->secrets_dir ? strdup(o->secrets_dir) : NULL;
	u->allow_private = o->allow_private;
	u->sbx = o->sbx;
	u->pids_max = o->pids_max > 0 ? o->pids_max : 128;
	json_t *to = json_object_get(o->config, "timeout_ms");
	u->timeout_ms = to		    ? (int)json_integer_value(to)
			: o->timeout_ms > 0 ? o->timeout_ms
					    : 30000;
	u->stdio = !strcmp(json_string_value(json_object_get(o->config, "transport")), "stdio");
	snprintf(u->url, sizeof u->url, "%s",
		 json_string_value(json_object_get(o->config, "url")) ?: "");
	snprintf(u->version, sizeof u->version, "%s", AW_MCP_V_LEGACY);
	atomic_init(&u->next_id, 1);
	u->event = o->event;
	u->event_ud = o->event_ud;
	u->cgroup_dir = o->cgroup_dir ? strdup(o->cgroup_dir) : NULL;
	/* the contract may ask for less than the gateway allows, never more */
	u->memory_mb = o->memory_mb > 0 ? o->memory_mb : o->memory_mb < 0 ? -1 : 512;
	json_t *mem = json_object_get(o->config, "memory_mb");
	if (json_is_integer(mem) && json_integer_value(mem) > 0 &&
	    (u->memory_mb < 0 || json_integer_value(mem) < u->memory_mb))
		u->memory_mb = (int)json_integer_value(mem);
	pthread_mutex_init(&u->mu, NULL);
	*out = u;
	return AW_OK;
}

void aw_mcp_up_free(aw_mcp_up *u)
{
	if (!u)
		return;
	pthread_mutex_lock(&u->mu);
	u->stopping = 1;
	int listening = u->listening;
	pthread_mutex_unlock(&u->mu);
	atomic_store(&u->halt, 1);
	if (listening) /* its transfer aborts within a second (on_progress) */
		pthread_join(u->listener, NULL);
	pthread_mutex_lock(&u->mu);
	stdio_stop(u);
	for (int i = 0; i < u->nidle; i++) {
		curl_easy_cleanup(u->idle[i]);
		curl_multi_cleanup(u->idle_m[i]);
	}
	pthread_mutex_unlock(&u->mu);
	pthread_mutex_destroy(&u->mu);
	json_decref(u->config);
	free(u->secrets_dir);
	free(u->cgroup_dir);
	free(u);
}

aw_err aw_mcp_up_request(aw_mcp_up *u, const char *method, const json_t *params, int timeout_ms,
			 const aw_mcp_peer *peer, json_t **result, json_t **rpc_error,
			 aw_error *err)
{
	*result = NULL;
	if (rpc_error)
		*rpc_error = NULL;
	if (timeout_ms <= 0)
		timeout_ms = u->timeout_ms;
	return u->stdio ? stdio_request(u, method, params, timeout_ms, peer, result, rpc_error, err)
			: http_request(u, method, params, timeout_ms, peer, result, rpc_error, err);
}

int aw_mcp_up_list_changed(aw_mcp_up *u)
{
	return atomic_exchange(&u->list_changed, 0);
}

int aw_mcp_def_pin(const json_t *def, char out[AW_MCP_PIN_MAX])
{
	char hex[65];
	int rc = aw_jcs_sha256(def, hex);
	if (rc == 0)
		snprintf(out, AW_MCP_PIN_MAX, "%s%s", AW_MCP_PIN_V2, hex);
	return rc;
}

int aw_mcp_def_pin_v1(const json_t *def, char out[AW_MCP_PIN_MAX])
{
	json_t *d = aw_mcp_def_v1(def);
	if (!d)
		return -1;
	char hex[65];
	int rc = aw_jcs_sha256(d, hex);
	json_decref(d);
	if (rc == 0)
		snprintf(out, AW_MCP_PIN_MAX, "%s%s", AW_MCP_PIN_V1, hex);
	return rc;
}

json_t *aw_mcp_def_v1(const json_t *def)
{
	json_t *d = json_object();
	const char *keep[] = {"name", "description", "inputSchema", "outputSchema"};
	for (int i = 0; d && i < 4; i++) {
		json_t *v = json_object_get(def, keep[i]);
		if (v && json_object_set(d, keep[i], v)) {
			json_decref(d);
			return NULL;
		}
	}
	return d;
}
