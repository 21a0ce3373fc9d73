/*
 * server.c - libmicrohttpd glue: accepting requests, bounded body upload,
 * request context (request id, trace, deadline), replies, problem+json, and the
 * access log and metrics written once per request when it completes.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "awooop/clock.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/redact.h"
#include "awooop/tenancy.h"
#include "http_internal.h"

struct aw_http {
	struct MHD_Daemon *d;
	aw_store *store;
	aw_http_opts opts;
	char listen[64];
	char redis[256];
	int port;
};

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
	MHD_queue_response(r->conn, (unsigned)status, resp);
	MHD_destroy_response(resp);
	r->status = status;
	r->responded = 1;
}

void aw_reply_text(aw_req *r, int status, const char *ctype, const char *text)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
	if (resp)
		MHD_add_response_header(resp, "Content-Type", ctype);
	queue(r, status, resp);
}

void aw_reply_empty(aw_req *r, int status)
{
	queue(r, status, MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT));
}

static void reply_dumped(aw_req *r, int status, const char *ctype, json_t *body)
{
	char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!s) {
		aw_reply_text(r, 500, "application/problem+json",
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

void aw_reply_json(aw_req *r, int status, json_t *body)
{
	reply_dumped(r, status, "application/json", body);
}

void aw_reply_problem(aw_req *r, aw_err e, const aw_error *err)
{
	int status = aw_err_http_status(e);
	char type[96];
	snprintf(type, sizeof type, "https://awooop.dev/errors/%s", aw_err_code(e));
	json_t *p = json_pack("{s:s, s:s, s:i, s:s, s:s, s:s}", "type", type, "title",
			      aw_err_title(e), "status", status, "code", aw_err_code(e),
			      "request_id", r->ctx.request_id, "trace_id", r->ctx.trace.trace_id);
	/* details can quote the request (a parser's "near '...'", an unknown
	 * field's name): they pass the redaction engine like everything returned */
	if (p && err && err->err == e && err->msg[0]) {
		char *d = aw_redact_str(err->msg);
		json_object_set_new(p, "detail", json_string(d ? d : aw_err_title(e)));
		free(d);
	}
	if (p && err && err->err == e && err->where[0]) {
		char *w = aw_redact_str(err->where);
		json_object_set_new(p, "pointer", json_string(w ? w : ""));
		free(w);
	}
	if (status >= 500)
		aw_log(AW_LOG_ERROR, &r->ctx, "request failed", "code", aw_err_code(e), "detail",
		       err ? err->msg : "", NULL);
	reply_dumped(r, status, "application/problem+json", p);
}

/* ---------------------------------------------------------------- helpers */

const char *aw_query(aw_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

int aw_auth_or_reply(aw_req *r)
{
	aw_error err = {0};
	const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
	if (!h || !*h) {
		aw_fail(&err, AW_E_AUTH_MISSING, "send Authorization: Bearer <api key>");
		aw_reply_problem(r, err.err, &err);
		return -1;
	}
	if (strncasecmp(h, "Bearer ", 7) != 0) {
		aw_fail(&err, AW_E_AUTH_MISSING, "only the Bearer scheme is accepted");
		aw_reply_problem(r, err.err, &err);
		return -1;
	}
	const char *secret = h + 7;
	while (*secret == ' ')
		secret++;
	aw_err e = aw_tenancy_authenticate(r->store, secret, &r->ctx, &err);
	if (e) {
		aw_reply_problem(r, e, &err);
		return -1;
	}
	r->authenticated = 1;
	return 0;
}

int aw_project_or_reply(aw_req *r, const char *project, aw_scope need, aw_ctx *scoped)
{
	aw_error err = {0};
	if (!r->authenticated && aw_auth_or_reply(r))
		return -1;
	aw_err e = aw_tenancy_authorize(&r->ctx, project, need, scoped, &err);
	if (e) {
		aw_reply_problem(r, e, &err);
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

int aw_json_body_or_reply(aw_req *r)
{
	const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Type");
	if (json_content_type(ct))
		return 0;
	aw_error err;
	aw_fail(&err, AW_E_REQ_MEDIA, "send Content-Type: application/json");
	aw_reply_problem(r, err.err, &err);
	return -1;
}

/* ---------------------------------------------------------------- MHD glue */

static void split_path(aw_req *r, const char *url)
{
	snprintf(r->path, sizeof r->path, "%s", url);
	snprintf(r->segbuf, sizeof r->segbuf, "%s", url);
	r->nsegs = 0;
	char *save = NULL;
	for (char *tok = strtok_r(r->segbuf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (r->nsegs == AW_HTTP_MAX_SEGS) {
			r->nsegs = AW_HTTP_MAX_SEGS + 1; /* matches no route */
			return;
		}
		r->segs[r->nsegs++] = tok;
	}
}

static aw_req *req_new(aw_http *h, struct MHD_Connection *conn, const char *url, const char *method)
{
	aw_req *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->conn = conn;
	r->store = h->store;
	r->opts = &h->opts;
	r->method = method;
	r->t0_ns = aw_clock_mono_ns();
	r->route = "unmatched";
	split_path(r, url);
	aw_ctx_system(&r->ctx, NULL);
	snprintf(r->ctx.principal, sizeof r->ctx.principal, "anonymous");
	r->ctx.scope = AW_SCOPE_NONE;
	r->ctx.deadline_ns = r->t0_ns + (int64_t)h->opts.request_timeout_s * 1000000000LL;
	const char *tp = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "traceparent");
	aw_trace in;
	if (tp && aw_trace_parse(tp, strlen(tp), &in) == 0)
		aw_trace_child(&in, &r->ctx.trace);
	return r;
}

/* Buffers an upload chunk; past --body-limit the request is marked too big
 * (answered 413 once the upload ends) and nothing more is kept. */
static int append_body(aw_req *r, const char *data, size_t n)
{
	if (r->too_big)
		return 0;
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **state)
{
	(void)version;
	aw_http *h = cls;
	aw_req *r = *state;
	if (!r) {
		r = req_new(h, conn, url, method);
		if (!r)
			return MHD_NO;
		*state = r;
		const char *cl =
			MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
		if (cl && strtoull(cl, NULL, 10) > h->opts.body_limit) {
			aw_error err;
			aw_fail(&err, AW_E_REQ_TOO_BIG, "the body limit is %zu bytes",
				h->opts.body_limit);
			aw_reply_problem(r, err.err, &err);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		if (!r->responded && append_body(r, upload, *upload_size) < 0)
			return MHD_NO;
		*upload_size = 0;
		return MHD_YES;
	}
	if (r->responded)
		return MHD_YES;
	if (r->too_big) {
		aw_error err;
		aw_fail(&err, AW_E_REQ_TOO_BIG, "the body limit is %zu bytes", h->opts.body_limit);
		aw_reply_problem(r, err.err, &err);
		return MHD_YES;
	}
	aw_err rerr = AW_OK;
	aw_handler fn = aw_route(r, &rerr);
	if (!fn) {
		aw_reply_problem(r, rerr, NULL);
		return MHD_YES;
	}
	fn(r);
	if (!r->responded)
		aw_reply_problem(r, AW_E_INTERNAL, NULL);
	return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **state,
			 enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)conn;
	aw_req *r = *state;
	if (!r)
		return;
	double secs = (double)(aw_clock_mono_ns() - r->t0_ns) / 1e9;
	int status = r->responded ? r->status : 0;
	aw_metrics_http_observe(r->method, r->route, status, secs);
	char st[8], ms[32];
	snprintf(st, sizeof st, "%d", status);
	snprintf(ms, sizeof ms, "%.3f", secs * 1000);
	aw_log(toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? AW_LOG_INFO : AW_LOG_WARN, &r->ctx,
	       "request", "method", r->method, "route", r->route, "status", st, "duration_ms", ms,
	       "principal", r->ctx.principal, NULL);
	aw_buf_free(&r->upload);
	free(r);
	*state = NULL;
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

static aw_err parse_listen(const char *s, struct sockaddr_in *sa, aw_error *err)
{
	char host[64];
	const char *colon = s ? strrchr(s, ':') : NULL;
	if (!colon || (size_t)(colon - s) >= sizeof host)
		return aw_fail(err, AW_E_CONFIG, "--listen must be IPv4:PORT, e.g. 127.0.0.1:8080");
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	char *end = NULL;
	long port = strtol(colon + 1, &end, 10);
	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	if (!*(colon + 1) || *end || port < 0 || port > 65535 ||
	    inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return aw_fail(err, AW_E_CONFIG, "--listen must be IPv4:PORT, e.g. 127.0.0.1:8080");
	sa->sin_port = htons((uint16_t)port);
	return AW_OK;
}

/* Binds and listens on sa, alone: SO_REUSEADDR (a restart may bind while old
 * connections linger in TIME_WAIT) but never SO_REUSEPORT, under which a second
 * server would silently share the port and take half of its connections. */
static aw_err bind_exclusive(const struct sockaddr_in *sa, int *out, aw_error *err)
{
	char where[INET_ADDRSTRLEN] = "?";
	inet_ntop(AF_INET, &sa->sin_addr, where, sizeof where);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	if (fd < 0)
		return aw_fail(err, AW_E_CONFIG, "cannot create a socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (const struct sockaddr *)sa, sizeof *sa) != 0 || listen(fd, 128) != 0) {
		int en = errno;
		close(fd);
		return aw_fail(err, AW_E_CONFIG, "cannot listen on %s:%d: %s%s", where,
			       ntohs(sa->sin_port), strerror(en),
			       en == EADDRINUSE ? " (another process holds the port)" : "");
	}
	*out = fd;
	return AW_OK;
}

aw_err aw_http_start(const aw_http_opts *opts, aw_store *store, aw_http **out, aw_error *err)
{
	aw_http *h = calloc(1, sizeof *h);
	if (!h)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	h->store = store;
	h->opts = *opts;
	snprintf(h->listen, sizeof h->listen, "%s", opts->listen ? opts->listen : "127.0.0.1:8080");
	snprintf(h->redis, sizeof h->redis, "%s", opts->redis_url ? opts->redis_url : "");
	h->opts.listen = h->listen;
	h->opts.redis_url = h->redis[0] ? h->redis : NULL;
	if (!h->opts.body_limit)
		h->opts.body_limit = 1 << 20;
	if (h->opts.max_connections <= 0)
		h->opts.max_connections = 256;
	if (h->opts.request_timeout_s <= 0)
		h->opts.request_timeout_s = 30;

	struct sockaddr_in sa;
	aw_err e = parse_listen(h->listen, &sa, err);
	if (e) {
		free(h);
		return e;
	}
	int fd = -1;
	if ((e = bind_exclusive(&sa, &fd, err))) {
		free(h);
		return e;
	}
	h->d = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG,
		0, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)h->opts.max_connections,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)h->opts.request_timeout_s, MHD_OPTION_END);
	if (!h->d) {
		close(fd);
		free(h);
		return aw_fail(err, AW_E_INTERNAL, "cannot start the HTTP server on %s", h->listen);
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : ntohs(sa.sin_port);
	*out = h;
	return AW_OK;
}

int aw_http_port(const aw_http *h)
{
	return h->port;
}

void aw_http_stop(aw_http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	free(h);
}
