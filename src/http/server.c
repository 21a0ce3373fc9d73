/*
 * server.c - libmicrohttpd glue: accepting requests, bounded body upload,
 * request context (request id, trace, deadline), replies, problem+json, and the
 * access log and metrics written once per request when it completes.
 *
 * Defences against slow and hostile clients, in the order a request meets them:
 *   - epoll on a few threads, a per-address connection limit;
 *   - a deadline for the whole request head and one for the rest, kept by a
 *     sweeper thread that shuts down the sockets past them (MHD's own timeout
 *     restarts on every byte, so a client dripping a byte every 5 s would
 *     hold a connection forever);
 *   - the path decoded once, here, from the URI as sent: an encoded NUL or
 *     "/" in a segment or a broken escape is refused, a long path too;
 *   - framing and header checks, then route, key and content type - all from
 *     the head, answered before any body byte is kept;
 *   - a per-request body limit, a bound per project on the bodies its
 *     requests hold at once (the key is known from the head, so the project
 *     is too), a small one for the requests without a key, and a budget for
 *     all bodies together: a declared body is reserved whole from the head
 *     and refused there (429, or 503 for the server's budget) before a byte
 *     of it is read; a chunked one is counted as it arrives, and past a
 *     bound the rest is read and dropped, then refused. One tenant's slow
 *     uploads fill its own bound, never the server's budget.
 *
 * A handler that answers later parks its connection (MHD suspends it: the
 * event loop no longer watches the socket). The sweeper therefore also looks
 * at every parked socket each tick and resumes the ones whose peer hung up,
 * which then end at once (the MCP GET stream of a closed SDK client, an LLM
 * stream whose client went away): a parked connection never lingers in
 * CLOSE-WAIT. Park and resume go through one lock with the connection's
 * state, so a connection is resumed once per suspension, never before it.
 *
 * Shutdown (aw_http_drain, then aw_http_stop): stop accepting, end the
 * endless event streams (marked by req_endless), refuse new requests on
 * open connections (503 E-REQ-013, Connection: close), let the requests in
 * flight finish up to the drain bound, then cut what is left; once no
 * connection can be parked any more, the daemon stops (MHD aborts the
 * process if one still is).
 */
#include <errno.h>
#include <poll.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <strings.h>
#include <netdb.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "awooop/alloc.h"
#include "awooop/bounds.h"
#include "awooop/clock.h"
#include "awooop/json.h"
#include "awooop/log.h"
#include "awooop/mcp_wire.h"
#include "awooop/metrics.h"
#include "awooop/redact.h"
#include "awooop/tenancy.h"
#include "awooop/llm_wire.h"
#include "awooop/str.h"
#include "http_internal.h"

/* How a connection is being ended (track.closing; GONE: its peer hung up). */
enum { OPEN = 0, END = 1, CUT = 2, GONE = 3 };

/* A connection's state, kept by the sweeper (its socket context). The
 * list and the first fields are guarded by aw_http.mu; the parking state by
 * the connection's own pmu (taken inside aw_http.mu, never around it), so
 * that parking, which a stream does per chunk, contends with nobody. */
typedef struct track {
	struct track *prev, *next;
	struct MHD_Connection *conn;
	int fd;
	int64_t deadline_ns; /* the head's or the request's, whichever is running */
	const char *why;     /* what the deadline is for: "head" or "request" */
	int cut;
	int busy;    /* a request is in flight */
	int endless; /* that request is an event stream with no end of its own */
	pthread_mutex_t pmu;
	int parked;  /* suspended by req_park, not resumed yet (pmu) */
	int closing; /* OPEN, or END (a stream ends cleanly) / CUT (aborted): never
			parked again (pmu) */
	int gone;    /* the peer hung up while it was parked (pmu) */
} track;

struct aw_http {
	struct MHD_Daemon *d;
	aw_store *store;
	aw_http_opts opts;
	char listen[64];
	char redis[256];
	int port;
	_Atomic size_t buffered; /* body bytes held by all requests */
	/* the bodies each project's requests hold (body_acct, a chained hash by
	 * project: an account lives while a request of its project has a body
	 * in flight), their bounds, and the unauthenticated requests' one */
	pthread_mutex_t acct_mu;
	struct body_acct *accts[64];
	aw_bounds project_body;
	pthread_mutex_t mu;  /* guards the track list and the tracks */
	pthread_cond_t cv;   /* wakes the sweeper */
	pthread_cond_t idle; /* a request ended while draining */
	track *tracks;
	aw_tls *tls; /* NULL: plain HTTP */
	pthread_t sweeper;
	int sweeper_started;
	atomic_bool stop;
	atomic_bool draining; /* refuse new requests, close after each answer */
	/* the stopping thread's: the listen socket is closed, since when, and
	 * how many event streams were ended then */
	int quiesced, streams_ended;
	int64_t quiesced_ns;
};

/* One project's request bodies in flight (acct_mu); project "" is the
 * requests without a valid key. */
typedef struct body_acct {
	struct body_acct *next;
	char project[AW_PROJECT_MAX + 1];
	size_t held; /* bytes reserved by its requests */
	int refs;    /* requests counted in it */
} body_acct;

/* ---------------------------------------------------------------- replies */

static void queue(aw_req *r, int status, struct MHD_Response *resp)
{
	if (!resp)
		return;
	char tp[AW_TRACEPARENT_LEN + 1];
	aw_trace_format(&r->ctx.trace, tp);
	MHD_add_response_header(resp, "traceparent", tp);
	MHD_add_response_header(resp, "X-Request-Id", r->ctx.request_id);
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	for (int i = 0; i < r->nxhdr; i++)
		MHD_add_response_header(resp, r->xhdr[i].name, r->xhdr[i].value);
	/* a 429 says when to come back: reply_problem's value for its code
	 * (retry_after_s), else a second (a bound per tenant, which frees as
	 * soon as one of the tenant's own requests ends; the code names which) */
	if (r->retry_after_s > 0) {
		char ra[24];
		snprintf(ra, sizeof ra, "%ld", r->retry_after_s);
		MHD_add_response_header(resp, "Retry-After", ra);
	} else if (status == 429 && !r->retry_after_s &&
		   !MHD_get_response_header(resp, "Retry-After")) {
		MHD_add_response_header(resp, "Retry-After", "1");
	}
	if (atomic_load(&r->srv->draining))
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	MHD_queue_response(r->conn, (unsigned)status, resp);
	MHD_destroy_response(resp);
	r->status = status;
	r->responded = 1;
}

void reply_text(aw_req *r, int status, const char *ctype, const char *text)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
	if (resp)
		MHD_add_response_header(resp, "Content-Type", ctype);
	queue(r, status, resp);
}

void reply_empty(aw_req *r, int status)
{
	queue(r, status, MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT));
}

static void reply_dumped(aw_req *r, int status, const char *ctype, json_t *body)
{
	char *s = body ? aw_json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!s) {
		reply_text(r, 500, "application/problem+json",
			   "{\"title\":\"Out of memory\",\"status\":500,"
			   "\"code\":\"E-INTERNAL-002\"}");
		return;
	}
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(s);
		return;
	}
	MHD_add_response_header(resp, "Content-Type", ctype);
	queue(r, status, resp);
}

void http_reply_json(aw_req *r, int status, json_t *body)
{
	reply_dumped(r, status, "application/json", body);
}

/* The seconds a client refused with e should wait (Retry-After): > 0 that
 * many, 0 none known (a 429 then says 1), -1 none at all (waiting never
 * helps). */
static long retry_after(aw_err e, const aw_error *err)
{
	if (err && err->err == e && err->retry_after_s > 0)
		return err->retry_after_s; /* the refuser knew (a budget's reset) */
	switch (e) {
	case AW_E_LLM_CAP: {
		/* the emergency model's daily cap and each project's share count
		 * UTC days: both start again at the next UTC midnight */
		int64_t now_s = aw_clock_wall_ms() / 1000;
		return (long)(86400 - now_s % 86400);
	}
	case AW_E_BUDGET_RUN: return -1; /* the run's own limit never frees */
	case AW_E_REQ_BUSY:
	case AW_E_STORE_BUSY: return 1; /* load: a moment */
	default: return 0;
	}
}

/* A path under /v1/ that is none of the control plane's own namespaces:
 * 2 for Anthropic's API (/v1/messages...), 1 for another (OpenAI's). */
static int sdk_path(const aw_req *r)
{
	static const char *const own[] = {"projects", "platform", "channels", "openapi.json",
					  "whoami"};
	if (r->nsegs < 2 || r->nsegs > AW_HTTP_MAX_SEGS || strcmp(r->segs[0], "v1"))
		return 0;
	for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
		if (!strcmp(r->segs[1], own[i]))
			return 0;
	return strcmp(r->segs[1], "messages") ? 1 : 2;
}

void reply_problem(aw_req *r, aw_err e, const aw_error *err)
{
	int status = aw_err_http_status(e);
	r->retry_after_s = retry_after(e, err);
	if (status >= 500) /* 500 is ours to fix; 502-504 say a dependency or load */
		aw_log(status == 500 ? AW_LOG_ERROR : AW_LOG_WARN, &r->ctx, "request failed",
		       "code", aw_err_code(e), "detail", err ? err->msg : "", NULL);
	if (r->open_route == AW_AUTH_KEY_SELF) {
		/* the MCP endpoint answers JSON-RPC only, refusals from the head
		 * (a bound, a limit, the shutdown) too: id null, data.code */
		char *d = aw_redact_str(err && err->err == e && err->msg[0] ? err->msg
									    : aw_err_title(e));
		json_t *m =
			aw_rpc_error_json(NULL, status >= 500 ? AW_RPC_INTERNAL : AW_RPC_INVALID,
					  d ? d : aw_err_title(e), aw_err_code(e));
		free(d);
		reply_dumped(r, status, "application/json", m);
		return;
	}
	char type[96];
	snprintf(type, sizeof type, "https://awooop.dev/errors/%s", aw_err_code(e));
	json_t *p = json_pack("{s:s, s:s, s:i, s:s, s:s, s:s}", "type", type, "title",
			      aw_err_title(e), "status", status, "code", aw_err_code(e),
			      "request_id", r->ctx.request_id, "trace_id", r->ctx.trace.trace_id);
	/* details can quote the request (a parser's "near '...'", an unknown
	 * field's name): they pass the redaction engine like everything returned */
	if (p && err && err->err == e && err->msg[0]) {
		char *d = aw_redact_str_for(r->ctx.project, err->msg);
		json_object_set_new(p, "detail", json_string(d ? d : aw_err_title(e)));
		free(d);
	}
	if (p && err && err->err == e && err->where[0]) {
		char *w = aw_redact_str_for(r->ctx.project, err->where);
		json_object_set_new(p, "pointer", json_string(w ? w : ""));
		free(w);
	}
	/* the OpenAI-compatible routes, and any other path under /v1/ that is
	 * not the control plane's own (a client of another provider's API: an
	 * OpenAI or Anthropic SDK calling a route not served), also carry the
	 * error object those clients read (message, type, code, param) */
	int sdk = 0;
	if (p && !strcmp(r->route, "/v1/messages"))
		sdk = 2;
	else if (p && (!strncmp(r->route, "/v1/chat/", 9) || !strcmp(r->route, "/v1/models") ||
		       !strcmp(r->route, "/v1/embeddings") || !strcmp(r->route, "/v1/responses") ||
		       (!strcmp(r->route, "unmatched") && (sdk = sdk_path(r)))))
		sdk = sdk ? sdk : 1;
	if (sdk) {
		json_t *d = json_object_get(p, "detail"), *w = json_object_get(p, "pointer");
		const char *etype = sdk == 2	    ? aw_llm_anthropic_error_type(status)
				    : status >= 500 ? "api_error"
						    : "invalid_request_error";
		json_object_set_new(p, "error",
				    json_pack("{s:O,s:s,s:s,s:O?}", "message",
					      d ? d : json_object_get(p, "title"), "type", etype,
					      "code", aw_err_code(e), "param", w));
	}
	reply_dumped(r, status, "application/problem+json", p);
}

/* How r's connection is being ended: OPEN, END, CUT or GONE. */
static int closing_of(aw_req *r)
{
	track *t = r->trk;
	if (!t)
		return OPEN;
	pthread_mutex_lock(&t->pmu);
	int c = t->gone ? GONE : t->closing;
	pthread_mutex_unlock(&t->pmu);
	return c;
}

/* The stream's reader as MHD calls it: the handler's, until the connection
 * is being ended - cleanly (an endless stream at shutdown: the client sees
 * the end of the chunked body) or cut (the peer is gone, or the drain bound
 * passed: no last chunk, so the client knows the answer is incomplete). */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	aw_req *r = cls;
	switch (closing_of(r)) {
	case END: return MHD_CONTENT_READER_END_OF_STREAM;
	case CUT:
	case GONE: return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	return r->stream(r->stream_cls, pos, buf, max);
}

void reply_stream(aw_req *r, int status, const char *ctype,
		  ssize_t (*read)(void *cls, uint64_t pos, char *buf, size_t max), void *cls)
{
	r->stream = read;
	r->stream_cls = cls;
	struct MHD_Response *resp =
		MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, r, NULL);
	if (resp)
		MHD_add_response_header(resp, "Content-Type", ctype);
	queue(r, status, resp);
}

static ssize_t call_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	aw_req *r = cls;
	ssize_t n = r->call_read(r->svc, buf, max, req_park_cb, r);
	return n < 0 ? MHD_CONTENT_READER_END_OF_STREAM : n;
}

void reply_call_stream(aw_req *r, call_reader read)
{
	r->call_read = read;
	reply_stream(r, 200, "text/event-stream", call_stream_read, r);
}

void req_park_cb(void *r)
{
	req_park(r);
}

void req_wake_cb(void *r)
{
	req_unpark(r);
}

void req_header(aw_req *r, const char *name, const char *value)
{
	if (r->nxhdr >= (int)(sizeof r->xhdr / sizeof r->xhdr[0]))
		return;
	if (AW_STR_COPY(r->xhdr[r->nxhdr].value, value) < 0) { /* whole or not at all */
		aw_log(AW_LOG_ERROR, &r->ctx, "a response header too long was left out", "header",
		       name, NULL);
		return;
	}
	r->xhdr[r->nxhdr++].name = name;
}

/* A connection being ended is never suspended again: the caller returns as
 * if parked, and MHD calls it again at once (it then ends). */
void req_park(aw_req *r)
{
	track *t = r->trk;
	if (!t) {
		MHD_suspend_connection(r->conn);
		return;
	}
	pthread_mutex_lock(&t->pmu);
	if (!t->closing && !t->gone && !t->parked) {
		t->parked = 1;
		MHD_suspend_connection(r->conn);
	}
	pthread_mutex_unlock(&t->pmu);
}

void req_unpark(aw_req *r)
{
	track *t = r->trk;
	if (!t) {
		MHD_resume_connection(r->conn);
		return;
	}
	pthread_mutex_lock(&t->pmu);
	if (t->parked) {
		t->parked = 0;
		MHD_resume_connection(r->conn);
	}
	pthread_mutex_unlock(&t->pmu);
}

void req_endless(aw_req *r)
{
	track *t = r->trk;
	if (!t)
		return;
	pthread_mutex_lock(&r->srv->mu);
	t->endless = 1;
	pthread_mutex_lock(&t->pmu);
	if (atomic_load(&r->srv->draining) && !t->closing)
		t->closing = END;
	pthread_mutex_unlock(&t->pmu);
	pthread_mutex_unlock(&r->srv->mu);
}

/* ---------------------------------------------------------------- helpers */

const char *http_query(aw_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

static aw_err authenticated(aw_req *r, const char *secret, aw_error *err);

/* The bearer key of the request (/v1/messages: or its x-api-key): fills
 * r->ctx (project, principal, scope). */
static aw_err authenticate(aw_req *r, aw_error *err)
{
	const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
	const char *xk = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "x-api-key");
	if ((!h || !*h) && xk && *xk && r->route && !strcmp(r->route, "/v1/messages"))
		return authenticated(r, xk, err); /* as the Anthropic SDK sends it */
	if (!h || !*h)
		return aw_fail(err, AW_E_AUTH_MISSING, "send Authorization: Bearer <api key>");
	if (strncasecmp(h, "Bearer ", 7) != 0)
		return aw_fail(err, AW_E_AUTH_MISSING, "only the Bearer scheme is accepted");
	const char *secret = h + 7;
	while (*secret == ' ')
		secret++;
	return authenticated(r, secret, err);
}

static aw_err authenticated(aw_req *r, const char *secret, aw_error *err)
{
	aw_err e = aw_tenancy_authenticate_key(r->store, secret, &r->ctx, &r->key, err);
	if (!e) {
		r->authenticated = 1;
		/* the request's store connections count against its key's project */
		AW_COPY_ARRAY(r->ctx.charge, r->ctx.project);
	}
	return e;
}

aw_err req_authenticate(aw_req *r, aw_error *err)
{
	return r->authenticated ? AW_OK : authenticate(r, err);
}

int auth_or_reply(aw_req *r)
{
	aw_error err = {0};
	aw_err e = authenticate(r, &err);
	if (e)
		reply_problem(r, e, &err);
	return e ? -1 : 0;
}

int own_project_or_reply(aw_req *r, aw_scope need, aw_ctx *scoped)
{
	if (auth_or_reply(r))
		return -1;
	char project[AW_PROJECT_MAX + 1];
	memcpy(project, r->ctx.project, sizeof project);
	return project_or_reply(r, project, need, scoped);
}

int selected_project_or_reply(aw_req *r, aw_scope need, aw_ctx *scoped)
{
	const char *p = http_query(r, "project");
	if (!p)
		return own_project_or_reply(r, need, scoped);
	if (auth_or_reply(r) || project_segment_or_reply(r, p))
		return -1;
	return project_or_reply(r, p, need, scoped); /* a valid segment: a whole id */
}

int project_or_reply(aw_req *r, const char *project, aw_scope need, aw_ctx *scoped)
{
	aw_error err = {0};
	if (!r->authenticated && auth_or_reply(r))
		return -1;
	aw_err e = aw_tenancy_authorize(&r->ctx, project, need, scoped, &err);
	if (e) {
		reply_problem(r, e, &err);
		return -1;
	}
	return 0;
}

static int json_content_type(const char *ct)
{
	if (!ct)
		return 0;
	size_t n = strlen("application/json");
	return strncasecmp(ct, "application/json", n) == 0 &&
	       (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static aw_err json_media(aw_req *r, aw_error *err)
{
	const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Type");
	return json_content_type(ct)
		       ? AW_OK
		       : aw_fail(err, AW_E_REQ_MEDIA, "send Content-Type: application/json");
}

int json_body_or_reply(aw_req *r)
{
	aw_error err = {0};
	aw_err e = json_media(r, &err);
	if (e)
		reply_problem(r, e, &err);
	return e ? -1 : 0;
}

/* ---------------------------------------------------------------- MHD glue */

static aw_err decode_path(aw_req *r, aw_error *err)
{
	return http_decode_path(r->raw_uri ? r->raw_uri : "", &r->segbuf, r->segs, &r->nsegs, err);
}

/* The request object, made when the request line arrives (MHD's URI log
 * callback: the URI as sent, before MHD decodes it) and freed on completion. */
static void *req_new(void *cls, const char *uri, struct MHD_Connection *conn)
{
	aw_http *h = cls;
	aw_req *r = aw_calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->conn = conn;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	r->trk = ci ? ci->socket_context : NULL;
	r->srv = h;
	r->store = h->store;
	r->opts = &h->opts;
	r->raw_uri = aw_strdup(uri ? uri : "");
	r->t0_ns = aw_clock_mono_ns();
	r->route = "unmatched";
	aw_ctx_system(&r->ctx, NULL);
	snprintf(r->ctx.principal, sizeof r->ctx.principal, "anonymous");
	r->ctx.scope = AW_SCOPE_NONE;
	r->ctx.deadline_ns = r->t0_ns + (int64_t)h->opts.request_timeout_s * 1000000000LL;
	return r;
}

static unsigned acct_hash(const char *project)
{
	unsigned x = 2166136261u; /* FNV-1a */
	for (; *project; project++)
		x = (x ^ (unsigned char)*project) * 16777619u;
	return x % 64;
}

/* The account of project ("": no key), made when missing (acct_mu). NULL
 * when out of memory. */
static body_acct *acct_get(aw_http *h, const char *project)
{
	unsigned b = acct_hash(project);
	for (body_acct *a = h->accts[b]; a; a = a->next)
		if (!strcmp(a->project, project))
			return a;
	body_acct *a = aw_calloc(1, sizeof *a);
	if (!a)
		return NULL;
	if (AW_STR_COPY(a->project, project) < 0) { /* an authorized project id: never */
		free(a);
		return NULL;
	}
	a->next = h->accts[b];
	h->accts[b] = a;
	return a;
}

/* Unlinks and frees a when nothing holds it (acct_mu). */
static void acct_put(aw_http *h, body_acct *a)
{
	if (a->refs || a->held)
		return;
	body_acct **pp = &h->accts[acct_hash(a->project)];
	while (*pp != a)
		pp = &(*pp)->next;
	*pp = a->next;
	free(a);
}

/* What r's account may hold: its project's bound, or the allowance of the
 * requests without a key. */
static size_t acct_bound(aw_http *h, const body_acct *a)
{
	return a->project[0] ? (size_t)aw_bounds_of(&h->project_body, a->project)
			     : h->opts.anon_body_memory;
}

/* Reserves n more body bytes for r: its account's bound, then the server's
 * budget. On a refusal nothing more is held and err says which bound
 * (E-REQ-014 its project's, E-REQ-015 the unauthenticated requests', 503
 * E-REQ-012 the server's). */
static aw_err reserve(aw_http *h, aw_req *r, size_t n, aw_error *err)
{
	body_acct *a = r->acct;
	pthread_mutex_lock(&h->acct_mu);
	size_t bound = acct_bound(h, a);
	if (a->held + n > bound) {
		pthread_mutex_unlock(&h->acct_mu);
		if (!a->project[0])
			return aw_fail(err, AW_E_REQ_ANON_MEMORY,
				       "requests without a valid API key may hold %zu bytes of "
				       "bodies at once (--anon-body-memory); retry shortly",
				       bound);
		return aw_fail(err, AW_E_REQ_PROJECT_MEMORY,
			       "this project's requests hold %zu of the %zu bytes of bodies its "
			       "uploads may hold at once (--project-body-memory); retry when one "
			       "of them ends",
			       a->held, bound);
	}
	a->held += n;
	r->charged += n;
	pthread_mutex_unlock(&h->acct_mu);
	size_t held = atomic_fetch_add(&h->buffered, n) + n;
	r->reserved += n;
	if (held <= h->opts.body_memory)
		return AW_OK;
	atomic_fetch_sub(&h->buffered, n);
	r->reserved -= n;
	pthread_mutex_lock(&h->acct_mu);
	a->held -= n;
	r->charged -= n;
	pthread_mutex_unlock(&h->acct_mu);
	return aw_fail(err, AW_E_REQ_BUSY, "too many request bodies in flight; retry shortly");
}

/* Counts r's body in the account of its key's project (or the one of the
 * requests without a key) and, when its size is declared, reserves all of
 * it now, from the head. */
static aw_err body_admit(aw_http *h, aw_req *r, const char *cl, aw_error *err)
{
	pthread_mutex_lock(&h->acct_mu);
	r->acct = acct_get(h, r->authenticated ? r->ctx.project : "");
	if (r->acct)
		r->acct->refs++;
	pthread_mutex_unlock(&h->acct_mu);
	if (!r->acct)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	if (!cl)
		return AW_OK;
	r->declared = 1;
	return reserve(h, r, (size_t)strtoull(cl, NULL, 10), err);
}

/* Gives back everything r holds of the budgets (at its end, or once its
 * handler is done with the body, or when it is refused mid-upload). */
static void body_release(aw_http *h, aw_req *r)
{
	atomic_fetch_sub(&h->buffered, r->reserved);
	r->reserved = 0;
	if (!r->acct)
		return;
	pthread_mutex_lock(&h->acct_mu);
	r->acct->held -= r->charged;
	r->acct->refs--;
	acct_put(h, r->acct);
	pthread_mutex_unlock(&h->acct_mu);
	r->acct = NULL;
	r->charged = 0;
}

void req_body_done(aw_req *r)
{
	aw_buf_free(&r->upload);
	r->body = NULL;
	r->body_len = 0;
	body_release(r->srv, r);
}

void req_bind_call(aw_req *r, void *call, void (*done)(aw_req *), void (*answer)(aw_req *))
{
	req_body_done(r);
	r->svc = call;
	r->done = done;
	r->resume = answer;
	answer(r);
}

/* Buffers an upload chunk; past --body-limit the request is marked too big
 * (answered 413 once the upload ends) and nothing more is kept. A chunked
 * body is reserved as it comes: past a bound it is refused (r->refusal),
 * what it held goes back at once, and the rest is read and dropped. */
static int append_body(aw_req *r, const char *data, size_t n)
{
	if (r->too_big)
		return 0;
	if (!r->declared && reserve(r->srv, r, n, &r->refusal)) {
		aw_buf_free(&r->upload);
		r->body = NULL;
		r->body_len = 0;
		body_release(r->srv, r);
		r->dropped += n;
		return 0;
	}
	if (!r->upload.max)
		r->upload = (aw_buf)AW_BUF_INIT(r->opts->body_limit);
	aw_err e = aw_buf_add(&r->upload, data, n);
	if (e == AW_E_LIMIT)
		r->too_big = 1;
	else if (e)
		return -1;
	r->body = r->upload.p;
	r->body_len = r->upload.len;
	return 0;
}

/* The socket context of r's connection: its deadline and state. */
static track *track_of(aw_req *r)
{
	return r->trk;
}

static void set_deadline(aw_http *h, track *t, int64_t ms, const char *why)
{
	if (!t)
		return;
	pthread_mutex_lock(&h->mu);
	t->deadline_ns = aw_clock_mono_ns() + ms * 1000000LL;
	t->why = why;
	pthread_mutex_unlock(&h->mu);
}

void req_extend(aw_req *r, int seconds)
{
	set_deadline(r->srv, track_of(r), (int64_t)seconds * 1000, "request");
	r->ctx.deadline_ns = aw_clock_mono_ns() + (int64_t)seconds * 1000000000LL;
}

typedef struct {
	int nul, content_length, transfer_encoding;
} head_check;

static enum MHD_Result check_header(void *cls, enum MHD_ValueKind kind, const char *key,
				    size_t key_size, const char *value, size_t value_size)
{
	head_check *c = cls;
	(void)kind;
	if ((key && memchr(key, 0, key_size)) || (value && memchr(value, 0, value_size)))
		c->nul = 1;
	if (key && !strcasecmp(key, "Content-Length"))
		c->content_length = 1;
	if (key && !strcasecmp(key, "Transfer-Encoding"))
		c->transfer_encoding = 1;
	return MHD_YES;
}

static int has_body(struct MHD_Connection *conn)
{
	const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
	return (cl && strtoull(cl, NULL, 10) > 0) ||
	       MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Transfer-Encoding");
}

/* Everything decided from the head, before any body byte is kept: framing and
 * headers, the path, the route, the key, the content type, the declared size
 * and the room for it. A refusal is answered at once when no body follows
 * (or the client waits for "100 Continue"), or when the body is too big for
 * a limit or a bound (then MHD closes the connection after the answer, the
 * body unread); otherwise the body is read and dropped - never kept, never
 * counted against the budget - and the answer follows it, so the client is
 * not reset in the middle of sending (a close with unread data sends RST). */
static void on_head(aw_http *h, aw_req *r, const char *method)
{
	aw_error err = {0};
	aw_err e = AW_OK;
	head_check hc = {0};
	r->method = method;
	MHD_get_connection_values_n(r->conn, MHD_HEADER_KIND, check_header, &hc);
	const char *tp = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "traceparent");
	aw_trace in;
	if (tp && aw_trace_parse(tp, strlen(tp), &in) == 0) {
		aw_trace_child(&in, &r->ctx.trace);
		memcpy(r->caller_span, in.span_id, sizeof r->caller_span);
	}
	const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Length");
	if (atomic_load(&h->draining))
		e = aw_fail(&err, AW_E_REQ_SHUTDOWN,
			    "the server is shutting down; retry elsewhere");
	else if (hc.nul)
		e = aw_fail(&err, AW_E_REQ_HEADER, "a header holds a NUL byte");
	else if (hc.content_length && hc.transfer_encoding)
		e = aw_fail(&err, AW_E_REQ_HEADER,
			    "Content-Length and Transfer-Encoding together are refused");
	else if ((e = tls_check_client(h->tls, r->conn, &err)))
		;
	else if (!(e = decode_path(r, &err)) && !(r->handler = http_route(r, &e)))
		aw_fail(&err, e, "%s",
			e == AW_E_REQ_METHOD ? "method not allowed here"
			: sdk_path(r)
				? "no such route: the model gateway serves POST /v1/chat/completions, "
				  "POST /v1/responses, POST /v1/embeddings, POST /v1/messages and "
				  "GET /v1/models"
				: "no such route");
	else if (!e && r->open_route == AW_AUTH_KEY && !(e = authenticate(r, &err)) &&
		 has_body(r->conn))
		e = json_media(r, &err);
	else if (!e && r->open_route >= AW_AUTH_KEY_OPTIONAL) {
		/* the key is known before the body here too: a bad one (MCP: a
		 * missing one too) never has its body kept; the handler answers
		 * it in its own form */
		aw_error ignore;
		if (MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization")
			    ? authenticate(r, &ignore) != AW_OK
			    : r->open_route == AW_AUTH_KEY_SELF)
			r->discard = 1;
	}
	if (!e && cl && strtoull(cl, NULL, 10) > h->opts.body_limit)
		e = aw_fail(&err, AW_E_REQ_TOO_BIG, "the body limit is %zu bytes",
			    h->opts.body_limit);
	if (!e && !r->discard && has_body(r->conn))
		e = body_admit(h, r, cl, &err);
	if (!e)
		return;
	const char *expect = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Expect");
	if (!has_body(r->conn) || (expect && !strcasecmp(expect, "100-continue")) ||
	    e == AW_E_REQ_TOO_BIG || e == AW_E_REQ_HEADER || e == AW_E_REQ_PROJECT_MEMORY ||
	    e == AW_E_REQ_ANON_MEMORY || e == AW_E_REQ_BUSY) {
		reply_problem(r, e, &err);
		return;
	}
	r->refusal = err; /* err.err == e */
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **state)
{
	(void)version;
	(void)url; /* MHD's decoded copy: decode_path works from the URI as sent */
	aw_http *h = cls;
	aw_req *r = *state;
	if (!r)
		return MHD_NO; /* out of memory when the request line came */
	if (!r->started) {     /* the head is complete: the body deadline starts */
		r->started = 1;
		if (r->trk) {
			pthread_mutex_lock(&h->mu);
			r->trk->busy = 1;
			pthread_mutex_unlock(&h->mu);
		}
		set_deadline(h, track_of(r), (int64_t)h->opts.request_timeout_s * 1000, "request");
		on_head(h, r, method);
		return MHD_YES;
	}
	if (*upload_size) {
		if (r->discard && !r->refusal.err && r->dropped + *upload_size > h->opts.body_limit)
			aw_fail(&r->refusal, AW_E_REQ_TOO_BIG, "the body limit is %zu bytes",
				h->opts.body_limit);
		if (r->refusal.err || r->discard) { /* dropped, not kept; an endless one is cut */
			r->dropped += *upload_size;
			if (r->refusal.err && r->dropped > h->opts.body_limit) {
				reply_problem(r, r->refusal.err, &r->refusal);
				r->refusal.err = AW_OK;
			}
		} else if (!r->responded && append_body(r, upload, *upload_size) < 0) {
			return MHD_NO;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (r->refusal.err) {
		reply_problem(r, r->refusal.err, &r->refusal);
		return MHD_YES;
	}
	if (r->responded)
		return MHD_YES;
	aw_error err;
	if (r->too_big) {
		aw_fail(&err, AW_E_REQ_TOO_BIG, "the body limit is %zu bytes", h->opts.body_limit);
		reply_problem(r, err.err, &err);
		return MHD_YES;
	}
	if (r->resume) { /* resumed after the handler parked */
		int closing = closing_of(r);
		if (closing == GONE) /* nobody to answer: the connection closes */
			return MHD_NO;
		if (closing) { /* the drain bound passed before the answer came */
			aw_fail(&err, AW_E_REQ_SHUTDOWN,
				"the server shut down before the answer was ready; retry");
			reply_problem(r, err.err, &err);
			return MHD_YES;
		}
		r->resume(r);
		return MHD_YES;
	}
	r->handler(r);
	if (!r->responded && !r->resume)
		reply_problem(r, AW_E_INTERNAL, NULL);
	return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **state,
			 enum MHD_RequestTerminationCode toe)
{
	aw_http *h = cls;
	(void)conn;
	aw_req *r = *state;
	if (!r)
		return;
	body_release(h, r);
	if (r->done)
		r->done(r);
	if (r->trk) {
		pthread_mutex_lock(&h->mu);
		r->trk->busy = r->trk->endless = 0;
		pthread_mutex_unlock(&h->mu);
		if (atomic_load(&h->draining)) /* aw_http_drain waits for it */
			pthread_cond_broadcast(&h->idle);
	}
	/* the next request on this connection has head_timeout to arrive whole */
	set_deadline(h, track_of(r), h->opts.head_timeout_ms, "head");
	double secs = (double)(aw_clock_mono_ns() - r->t0_ns) / 1e9;
	int status = r->responded ? r->status : 0;
	aw_metrics_http_observe(r->method ? r->method : "-", r->route, status, secs);
	http_req_span(r, status);
	char st[8], ms[32];
	snprintf(st, sizeof st, "%d", status);
	snprintf(ms, sizeof ms, "%.3f", secs * 1000);
	aw_log(toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? AW_LOG_INFO : AW_LOG_WARN, &r->ctx,
	       "request", "method", r->method ? r->method : "-", "route", r->route, "status", st,
	       "duration_ms", ms, "principal", r->ctx.principal, NULL);
	aw_buf_free(&r->upload);
	aw_buf_free(&r->segbuf);
	free(r->raw_uri);
	free(r);
	*state = NULL;
}

/* Connections in and out of the sweeper's list; a new one has head_timeout
 * for its first request head. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	aw_http *h = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		track *t = aw_calloc(1, sizeof *t);
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!t || !ci) {
			free(t);
			*socket_context = NULL;
			return;
		}
		t->fd = ci->connect_fd;
		t->conn = conn;
		pthread_mutex_init(&t->pmu, NULL);
		t->deadline_ns = aw_clock_mono_ns() + (int64_t)h->opts.head_timeout_ms * 1000000LL;
		t->why = "head";
		pthread_mutex_lock(&h->mu);
		t->next = h->tracks;
		if (h->tracks)
			h->tracks->prev = t;
		h->tracks = t;
		pthread_mutex_unlock(&h->mu);
		*socket_context = t;
		return;
	}
	track *t = *socket_context; /* MHD_CONNECTION_NOTIFY_CLOSED */
	if (!t)
		return;
	pthread_mutex_lock(&h->mu);
	if (t->prev)
		t->prev->next = t->next;
	else
		h->tracks = t->next;
	if (t->next)
		t->next->prev = t->prev;
	pthread_mutex_unlock(&h->mu);
	pthread_mutex_destroy(&t->pmu);
	free(t);
	*socket_context = NULL;
}

/* Marks t as ending (how, or gone) and resumes it when parked (holds
 * h->mu). */
static void end_parked(track *t, int how, int gone)
{
	pthread_mutex_lock(&t->pmu);
	if (t->closing < how)
		t->closing = how;
	t->gone |= gone;
	if (t->parked) {
		t->parked = 0;
		MHD_resume_connection(t->conn);
	}
	pthread_mutex_unlock(&t->pmu);
}

/* The parked connections whose peer hung up (FIN or RST) are resumed and
 * end (holds h->mu). MHD does not watch a suspended socket, so without this
 * a closed event stream would sit in CLOSE-WAIT, holding one of its
 * address's --max-per-ip places, until something was written to it. */
static void sweep_parked(aw_http *h)
{
	struct pollfd fds[256];
	track *ts[256];
	track *t = h->tracks;
	while (t) {
		int n = 0;
		for (; t && n < 256; t = t->next) {
			pthread_mutex_lock(&t->pmu);
			if (t->parked && !t->gone) {
				fds[n] = (struct pollfd){.fd = t->fd, .events = POLLRDHUP};
				ts[n++] = t;
			}
			pthread_mutex_unlock(&t->pmu);
		}
		if (n && poll(fds, (nfds_t)n, 0) > 0)
			for (int i = 0; i < n; i++)
				if (fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
					end_parked(ts[i], CUT, 1);
					aw_metrics_http_cut("hangup");
				}
	}
}

/* Every 100 ms: connections past their deadline are shut down (the event loop
 * then sees the end of the stream and closes them the ordinary way), and
 * parked ones whose peer hung up are resumed to end. */
static void *sweeper_main(void *arg)
{
	aw_http *h = arg;
	pthread_mutex_lock(&h->mu);
	while (!atomic_load(&h->stop)) {
		struct timespec ts = aw_clock_after(CLOCK_MONOTONIC, 100);
		pthread_cond_timedwait(&h->cv, &h->mu, &ts);
		int64_t now = aw_clock_mono_ns();
		for (track *t = h->tracks; t; t = t->next) {
			if (t->cut || now < t->deadline_ns)
				continue;
			t->cut = 1;
			shutdown(t->fd, SHUT_RDWR);
			aw_metrics_http_cut(t->why);
		}
		sweep_parked(h);
		aw_metrics_loop_tick("http_sweeper");
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* Room for the connection limit: raise the soft fd limit to the hard one. */
static int fd_room(int want)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return want;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	long room = (long)rl.rlim_cur - 256; /* the store pool, Redis, files, logs */
	return room < want ? (int)(room > 64 ? room : 64) : want;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	char buf[512];
	vsnprintf(buf, sizeof buf, fmt, ap);
	size_t n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	aw_log(AW_LOG_WARN, NULL, "http server", "detail", buf, NULL);
}

#define LISTEN_USAGE                                                                           \
	"--listen must be HOST:PORT - an IPv4 address, an IPv6 address in brackets or a host " \
	"name: 127.0.0.1:8080, [::1]:8080, localhost:8080"

aw_err aw_http_listen_parse(const char *s, int resolve, struct sockaddr_storage *out,
			    socklen_t *len, aw_error *err)
{
	char host[256];
	const char *port;
	size_t hl;
	if (!s || !*s)
		return aw_fail(err, AW_E_CONFIG, LISTEN_USAGE);
	int bracketed = s[0] == '[';
	if (bracketed) { /* [IPv6]:PORT */
		const char *close = strchr(s, ']');
		if (!close || close[1] != ':' || close == s + 1)
			return aw_fail(err, AW_E_CONFIG, LISTEN_USAGE);
		hl = (size_t)(close - s - 1);
		if (hl >= sizeof host)
			return aw_fail(err, AW_E_CONFIG, LISTEN_USAGE);
		memcpy(host, s + 1, hl);
		port = close + 2;
	} else {
		const char *colon = strrchr(s, ':');
		if (!colon || colon == s || (size_t)(colon - s) >= sizeof host)
			return aw_fail(err, AW_E_CONFIG, LISTEN_USAGE);
		hl = (size_t)(colon - s);
		memcpy(host, s, hl);
		port = colon + 1;
	}
	host[hl] = '\0';
	if (!bracketed && memchr(host, ':', hl))
		return aw_fail(err, AW_E_CONFIG,
			       "--listen: an IPv6 address goes in brackets, e.g. [::1]:8080");
	size_t pl = strlen(port);
	long pn = pl && pl <= 5 ? 0 : -1;
	for (size_t i = 0; pn >= 0 && i < pl; i++)
		pn = port[i] >= '0' && port[i] <= '9' ? pn * 10 + (port[i] - '0') : -1;
	if (pn < 0 || pn > 65535)
		return aw_fail(err, AW_E_CONFIG,
			       "--listen: the port must be 0..65535 (0: any free one)");
	memset(out, 0, sizeof *out);
	struct sockaddr_in *v4 = (struct sockaddr_in *)out;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
	if (!bracketed && inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)pn);
		*len = sizeof *v4;
		return AW_OK;
	}
	if (bracketed) {
		if (inet_pton(AF_INET6, host, &v6->sin6_addr) != 1)
			return aw_fail(err, AW_E_CONFIG, "--listen: [%s] is not an IPv6 address",
				       host);
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)pn);
		*len = sizeof *v6;
		return AW_OK;
	}
	/* a host name: its first IPv4 address, else its first IPv6 one (one
	 * listening socket: "localhost" is 127.0.0.1 wherever it has one) */
	for (size_t i = 0; i < hl; i++)
		if (!((host[i] >= 'a' && host[i] <= 'z') || (host[i] >= 'A' && host[i] <= 'Z') ||
		      (host[i] >= '0' && host[i] <= '9') || host[i] == '-' || host[i] == '.'))
			return aw_fail(err, AW_E_CONFIG, LISTEN_USAGE);
	if (!resolve)
		return aw_fail(err, AW_E_CONFIG, "--listen: %s is a host name (not resolved here)",
			       host);
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
	int rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc != 0)
		return aw_fail(err, AW_E_CONFIG, "--listen: cannot resolve %s: %s", host,
			       gai_strerror(rc));
	const struct addrinfo *pick = NULL;
	for (const struct addrinfo *a = res; a && !pick; a = a->ai_next)
		if (a->ai_family == AF_INET)
			pick = a;
	for (const struct addrinfo *a = res; a && !pick; a = a->ai_next)
		if (a->ai_family == AF_INET6)
			pick = a;
	if (!pick || pick->ai_addrlen > sizeof *out) {
		freeaddrinfo(res);
		return aw_fail(err, AW_E_CONFIG, "--listen: %s has no IPv4 or IPv6 address", host);
	}
	memcpy(out, pick->ai_addr, pick->ai_addrlen);
	*len = pick->ai_addrlen;
	freeaddrinfo(res);
	if (out->ss_family == AF_INET)
		v4->sin_port = htons((uint16_t)pn);
	else
		v6->sin6_port = htons((uint16_t)pn);
	return AW_OK;
}

void aw_http_listen_format(const struct sockaddr_storage *sa, char *out, size_t cap)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &v6->sin6_addr, ip, sizeof ip);
		snprintf(out, cap, "[%s]:%d", ip, ntohs(v6->sin6_port));
	} else {
		const struct sockaddr_in *v4 = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &v4->sin_addr, ip, sizeof ip);
		snprintf(out, cap, "%s:%d", ip, ntohs(v4->sin_port));
	}
}

static void http_free(aw_http *h)
{
	http_tls_free(h->tls);
	for (int i = 0; i < 64; i++) /* empty once every request has ended */
		while (h->accts[i]) {
			body_acct *a = h->accts[i];
			h->accts[i] = a->next;
			free(a);
		}
	pthread_mutex_destroy(&h->acct_mu);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	pthread_cond_destroy(&h->idle);
	free(h);
}

/* Binds and listens on sa, alone: SO_REUSEADDR (a restart may bind while old
 * connections linger in TIME_WAIT) but never SO_REUSEPORT, under which a second
 * server would silently share the port and take half of its connections. The
 * IPv6 wildcard ([::]) takes IPv4 too, whatever net.ipv6.bindv6only says. */
static aw_err bind_exclusive(const struct sockaddr_storage *sa, socklen_t len, int *out,
			     aw_error *err)
{
	char where[INET6_ADDRSTRLEN + 8];
	aw_http_listen_format(sa, where, sizeof where);
	int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, zero = 0;
	if (fd < 0)
		return aw_fail(err, AW_E_CONFIG, "cannot create a socket for %s: %s", where,
			       strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (sa->ss_family == AF_INET6 &&
	    IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr))
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
	if (bind(fd, (const struct sockaddr *)sa, len) != 0 || listen(fd, 128) != 0) {
		int en = errno;
		close(fd);
		return aw_fail(err, AW_E_CONFIG, "cannot listen on %s: %s%s", where, strerror(en),
			       en == EADDRINUSE ? " (another process holds the port)" : "");
	}
	*out = fd;
	return AW_OK;
}

aw_err aw_http_start(const aw_http_opts *opts, aw_store *store, aw_http **out, aw_error *err)
{
	aw_http *h = aw_calloc(1, sizeof *h);
	if (!h)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	h->store = store;
	h->opts = *opts;
	if (AW_STR_COPY(h->listen, opts->listen ? opts->listen : "127.0.0.1:8080") < 0 ||
	    AW_STR_COPY(h->redis, opts->redis_url) < 0) {
		free(h);
		return aw_fail(err, AW_E_CONFIG, "--listen or --redis is too long");
	}
	h->opts.listen = h->listen;
	h->opts.redis_url = h->redis[0] ? h->redis : NULL;
	if (!h->opts.body_limit)
		h->opts.body_limit = 1 << 20;
	if (!h->opts.body_memory)
		h->opts.body_memory = (size_t)64 << 20;
	if (h->opts.body_memory < h->opts.body_limit)
		h->opts.body_memory = h->opts.body_limit;
	/* a project's bound: a quarter of the budget (so one project never
	 * takes it all), but room for one body of the largest size */
	size_t quarter = h->opts.body_memory / 4;
	aw_err e =
		aw_bounds_parse(opts->project_body_memory,
				(long)(quarter > h->opts.body_limit ? quarter : h->opts.body_limit),
				1024, 16L << 30, "--project-body-memory", &h->project_body, err);
	if (e) {
		free(h);
		return e;
	}
	if (!h->opts.anon_body_memory) {
		size_t sixteenth = h->opts.body_memory / 16;
		h->opts.anon_body_memory =
			sixteenth > h->opts.body_limit ? sixteenth : h->opts.body_limit;
	}
	if (h->opts.max_connections <= 0)
		h->opts.max_connections = 4096;
	h->opts.max_connections = fd_room(h->opts.max_connections);
	if (h->opts.max_per_ip <= 0)
		h->opts.max_per_ip = 64;
	if (h->opts.threads <= 0)
		h->opts.threads = 8;
	if (h->opts.head_timeout_ms <= 0)
		h->opts.head_timeout_ms = 10000;
	if (h->opts.request_timeout_s <= 0)
		h->opts.request_timeout_s = 30;
	pthread_mutex_init(&h->mu, NULL);
	pthread_mutex_init(&h->acct_mu, NULL);
	aw_clock_cond_init(&h->cv);
	aw_clock_cond_init(&h->idle);

	struct sockaddr_storage sa;
	socklen_t sl = 0;
	e = aw_http_listen_parse(h->listen, 1, &sa, &sl, err);
	int fd = -1;
	if (e || (e = bind_exclusive(&sa, sl, &fd, err))) {
		http_free(h);
		return e;
	}
	/* the port bound (port 0: the kernel's pick), read back from the socket */
	struct sockaddr_storage bound;
	socklen_t bl = sizeof bound;
	int bound_port = 0;
	if (getsockname(fd, (struct sockaddr *)&bound, &bl) == 0)
		bound_port = bound.ss_family == AF_INET6
				     ? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
				     : ntohs(((struct sockaddr_in *)&bound)->sin_port);
	/* MHD's own idle timeout stays as a backstop above our deadlines */
	unsigned idle_s =
		(unsigned)(h->opts.head_timeout_ms / 1000 + h->opts.request_timeout_s + 1);
	if ((e = tls_new(opts->tls_cert, opts->tls_key, opts->tls_client_ca, &h->tls, err))) {
		close(fd);
		http_free(h);
		return e;
	}
	struct MHD_OptionItem tls_opts[] = {
		{h->tls ? MHD_OPTION_HTTPS_CERT_CALLBACK : MHD_OPTION_END, 0,
		 h->tls ? tls_cert_callback() : NULL},
		{MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)aw_tls_priorities},
		{http_tls_client_ca(h->tls) ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0,
		 (void *)http_tls_client_ca(h->tls)},
		{MHD_OPTION_END, 0, NULL},
	};
	h->d = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
			MHD_ALLOW_SUSPEND_RESUME | (h->tls ? MHD_USE_TLS : 0),
		0, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE,
		(unsigned)h->opts.threads, MHD_OPTION_URI_LOG_CALLBACK, req_new, h,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_NOTIFY_COMPLETED,
		on_completed, h, MHD_OPTION_CONNECTION_LIMIT, (unsigned)h->opts.max_connections,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)h->opts.max_per_ip,
		MHD_OPTION_CONNECTION_TIMEOUT, idle_s, MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_END);
	if (!h->d) {
		close(fd);
		http_free(h);
		return aw_fail(err, AW_E_INTERNAL, "cannot start the HTTP server on %s",
			       opts->listen ? opts->listen : "127.0.0.1:8080");
	}
	if (pthread_create(&h->sweeper, NULL, sweeper_main, h) != 0) {
		MHD_stop_daemon(h->d);
		http_free(h);
		return aw_fail(err, AW_E_INTERNAL, "cannot start the HTTP deadline thread");
	}
	h->sweeper_started = 1;
	h->port = bound_port;
	*out = h;
	return AW_OK;
}

int aw_http_port(const aw_http *h)
{
	return h->port;
}

aw_err aw_http_reload(aw_http *h, aw_error *err)
{
	return h->tls ? tls_reload(h->tls, err) : AW_OK;
}

/* Ends every connection's request: endless streams and the rest (how),
 * resuming the parked ones; none can be parked afterwards (holds h->mu). */
static void end_all(aw_http *h, int how, int endless_only)
{
	for (track *t = h->tracks; t; t = t->next)
		if (!endless_only || t->endless)
			end_parked(t, how, 0);
}

/* Requests in flight (holds h->mu). */
static int busy(aw_http *h)
{
	int n = 0;
	for (track *t = h->tracks; t; t = t->next)
		n += t->busy;
	return n;
}

/* Waits until no request is in flight or deadline_ns passes (holds h->mu);
 * the requests still in flight. */
static int wait_idle(aw_http *h, int64_t deadline_ns)
{
	int n;
	while ((n = busy(h)) && aw_clock_mono_ns() < deadline_ns) {
		int64_t left_ms = (deadline_ns - aw_clock_mono_ns()) / 1000000;
		struct timespec ts =
			aw_clock_after(CLOCK_MONOTONIC, left_ms < 50 ? (int)left_ms + 1 : 50);
		pthread_cond_timedwait(&h->idle, &h->mu, &ts);
	}
	return n;
}

/* No new connections (the listen socket is ours to close), and no new
 * requests on the open ones. */
static void stop_accepting(aw_http *h)
{
	atomic_store(&h->draining, 1);
	if (h->quiesced)
		return;
	h->quiesced = 1;
	MHD_socket fd = MHD_quiesce_daemon(h->d);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
}

void aw_http_quiesce(aw_http *h)
{
	if (!h || h->quiesced)
		return;
	h->quiesced_ns = aw_clock_mono_ns();
	stop_accepting(h);
	pthread_mutex_lock(&h->mu);
	for (track *t = h->tracks; t; t = t->next)
		h->streams_ended += t->endless;
	end_all(h, END, 1); /* event streams end now: they would never finish */
	pthread_mutex_unlock(&h->mu);
}

void aw_http_drain(aw_http *h, int drain_ms)
{
	if (!h)
		return;
	aw_http_quiesce(h);
	pthread_mutex_lock(&h->mu);
	int left = wait_idle(h, h->quiesced_ns + (int64_t)drain_ms * 1000000);
	if (left) { /* past the bound: cut, and give them a moment to go */
		end_all(h, CUT, 0);
		wait_idle(h, aw_clock_mono_ns() + 1000000000LL);
	}
	pthread_mutex_unlock(&h->mu);
	char ns[16], nl[16], ms[32];
	snprintf(ns, sizeof ns, "%d", h->streams_ended);
	snprintf(nl, sizeof nl, "%d", left);
	snprintf(ms, sizeof ms, "%.0f", (double)(aw_clock_mono_ns() - h->quiesced_ns) / 1e6);
	aw_log(left ? AW_LOG_WARN : AW_LOG_INFO, NULL, "HTTP drained", "streams_ended", ns,
	       "requests_cut", nl, "duration_ms", ms, NULL);
}

void aw_http_stop(aw_http *h)
{
	if (!h)
		return;
	/* MHD aborts the process when it stops with a suspended connection:
	 * resume them all, and none can be suspended again (req_park) */
	stop_accepting(h);
	pthread_mutex_lock(&h->mu);
	end_all(h, CUT, 0);
	pthread_mutex_unlock(&h->mu);
	MHD_stop_daemon(h->d); /* closes every connection: the track list empties */
	if (h->sweeper_started) {
		pthread_mutex_lock(&h->mu);
		atomic_store(&h->stop, 1);
		pthread_cond_signal(&h->cv);
		pthread_mutex_unlock(&h->mu);
		pthread_join(h->sweeper, NULL);
	}
	http_free(h);
}
