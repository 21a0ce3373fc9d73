/*
 * http_internal.h - what the files of src/http/ share: the per-request state, the
 * reply helpers and the route table. Handlers parse and authenticate, call one
 * service function, and reply; no domain logic lives here.
 */
#ifndef AW_HTTP_INTERNAL_H
#define AW_HTTP_INTERNAL_H

#include <jansson.h>
#include <microhttpd.h>

#include "awooop/ctx.h"
#include "awooop/buf.h"
#include "awooop/http.h"
#include "awooop/tenancy.h"

#define AW_HTTP_MAX_SEGS 12
#define AW_HTTP_PATH_MAX 2048 /* longer paths are refused (414), never cut */

/* Who may call a route (the route table's last column), as the head is
 * checked before any body byte is kept. */
enum {
	AW_AUTH_KEY = 0,      /* an API key; a missing or bad one is refused from the head */
	AW_AUTH_OPEN,	      /* no API key (health, console, Telegram's webhook) */
	AW_AUTH_KEY_OPTIONAL, /* a key when one is sent (else another credential, in the
				 body): a bad one has its body dropped, and the handler
				 refuses it */
	AW_AUTH_KEY_SELF,     /* a key, refused by the handler in its own form (MCP's
				 JSON-RPC): a missing or bad one has its body dropped */
};

typedef struct aw_req {
	struct MHD_Connection *conn;
	struct aw_http *srv;
	struct track *trk; /* its connection's state (server.c), or NULL */
	aw_store *store;
	const aw_http_opts *opts;
	const char *method;
	char *raw_uri;			    /* as sent, before any decoding (malloc'd) */
	const char *segs[AW_HTTP_MAX_SEGS]; /* decoded segments, pointers into segbuf */
	int nsegs;
	aw_buf segbuf;	 /* the decoded segments, NUL-separated */
	size_t reserved; /* bytes of the server's body budget this request holds */
	/* the account its body is counted in (its key's project, or the
	 * unauthenticated one) and the bytes it holds there; declared: the
	 * whole Content-Length was reserved from the head */
	struct body_acct *acct;
	size_t charged;
	int declared;
	int started, open_route; /* open_route: an AW_AUTH_* */
	aw_error refusal;	 /* err set: refused from the head, answered after the body */
	int discard;		 /* the body is dropped and the handler runs without it */
	size_t dropped;		 /* body bytes of a refused request, read and dropped */
	aw_buf upload;		 /* the request body, at most --body-limit bytes */
	char *body;		 /* upload's bytes (NUL-terminated), NULL when none */
	size_t body_len;
	int too_big, responded;
	int status;
	long retry_after_s; /* of a problem answer: > 0 Retry-After, -1 none */
	const char *route;  /* template, for metrics and logs */
	void (*handler)(struct aw_req *r);
	int64_t t0_ns;
	aw_ctx ctx;	   /* request id, trace, deadline; project once authenticated */
	aw_key_limits key; /* the authenticated key's limits (a virtual key) */
	char caller_span[AW_SPAN_ID_LEN + 1]; /* the traceparent's parent-id, "" when none */
	int authenticated;
	/* a handler that answers later: resume(r) runs when the connection is
	 * resumed (req_unpark), done(r) when the request ends however it ends */
	void (*resume)(struct aw_req *r);
	void (*done)(struct aw_req *r);
	void *svc; /* the handler's own state */
	struct {
		const char *name; /* static */
		char value[192];
	} xhdr[3]; /* response headers of the handler's own (req_header) */
	int nxhdr;
	/* reply_stream's reader and its argument */
	ssize_t (*stream)(void *cls, uint64_t pos, char *buf, size_t max);
	void *stream_cls;
	ssize_t (*call_read)(void *call, char *buf, size_t max, void (*park)(void *), void *pud);
} aw_req;

typedef void (*http_handler)(aw_req *r);

/* req_span.c: r's span (otel.h), when it completed with status (0: none). */
void http_req_span(const aw_req *r, int status);

/* A header of the response r will get (name static; at most 3 a response,
 * a value cut at 191 bytes). */
void req_header(aw_req *r, const char *name, const char *value);

/* ---- replies (each returns after queueing exactly one response) ---- */
void http_reply_json(aw_req *r, int status, json_t *body); /* steals body */
void reply_text(aw_req *r, int status, const char *ctype, const char *text);
void reply_empty(aw_req *r, int status);
void reply_problem(aw_req *r, aw_err e, const aw_error *err);

/* ---- answering later (suspend/resume; the LLM gateway) ---- */
/* Stops handling r's connection until req_unpark (from any thread). Only
 * from a handler, resume() or a stream reader. A connection whose peer hangs
 * up while parked is resumed and ends by itself within 100 ms (resume() is
 * not called, a stream reader not either): the service learns it from done().
 * While the server shuts down a park may not happen; the caller is then
 * called again soon, and must not mind. */
void req_park(aw_req *r);
void req_unpark(aw_req *r);
/* The same, typed as a door's park and wake callbacks (ud: the aw_req). */
void req_park_cb(void *r);
void req_wake_cb(void *r);
/* A door's reader of its call's event stream (aw_llm_read, aw_mcp_read):
 * n bytes, 0 parked (park(pud) was called), -1 the end. */
typedef ssize_t (*call_reader)(void *call, char *buf, size_t max, void (*park)(void *), void *pud);
/* Replies 200 text/event-stream read from r->svc with read, r parked
 * whenever the call has nothing to send (a slow answer holds no thread). */
void reply_call_stream(aw_req *r, call_reader read);
/* Marks r's answer as an event stream with no end of its own (an MCP
 * session's GET stream): the drain ends it at once instead of waiting. */
void req_endless(aw_req *r);
/* Moves r's deadline to seconds from now (a long stream). */
void req_extend(aw_req *r, int seconds);
/* Answers with a body produced by read(cls, buf, max): > 0 bytes, 0 when the
 * reader parked r, -1 at the end (chunked transfer encoding). */
void reply_stream(aw_req *r, int status, const char *ctype,
		  ssize_t (*read)(void *cls, uint64_t pos, char *buf, size_t max), void *cls);

/* The handler is done with r->body (it parsed what it needs): the body is
 * freed and its bytes go back to its project's and the server's budgets now
 * rather than when the request ends, so a parked model or tool call holds
 * none. r->body is NULL afterwards. */
void req_body_done(aw_req *r);
/* Binds r to a door's call once the door took it (aw_llm_start,
 * aw_mcp_start): the body is done, done(r) ends the call when r ends however
 * it ends, and answer(r) runs now and again whenever the call wakes r. */
void req_bind_call(aw_req *r, void *call, void (*done)(aw_req *), void (*answer)(aw_req *));

/* ---- request helpers that answer the client themselves on failure ---- */
/* Authenticates the bearer key into r->ctx without replying. */
aw_err req_authenticate(aw_req *r, aw_error *err);
/* Authenticates the bearer key; 0 on success, else replied. */
int auth_or_reply(aw_req *r);
/* Authenticates and authorises for project (URL segment) with scope need; fills
 * *scoped. 0 on success, else replied. */
int project_or_reply(aw_req *r, const char *project, aw_scope need, aw_ctx *scoped);
/* The same for the key's own project (the /v1/platform routes). */
int own_project_or_reply(aw_req *r, aw_scope need, aw_ctx *scoped);
/* The /v1/platform/runs routes: the project named by ?project= (a platform
 * admin's choice; any other key may name only its own: another answers 404
 * like a missing one), else the key's own. 0 or replied. */
int selected_project_or_reply(aw_req *r, aw_scope need, aw_ctx *scoped);
/* Checks the request declares a JSON body (Content-Type: application/json);
 * 0 or replied. The decoders below then parse it strictly. */
int json_body_or_reply(aw_req *r);
const char *http_query(aw_req *r, const char *name);

/* ---- request decoders (pure; fuzzed by fuzz/fuzz_body.c) ---- */
typedef struct {
	char id[AW_PROJECT_MAX + 1];
} aw_project_create_req;
typedef struct {
	char name[AW_PROJECT_MAX + 1];
	aw_scope scope;
	aw_key_limits limits; /* models, rpm, tpm, budget, expires_at, metadata */
} aw_key_create_req;
aw_err decode_project_create(const char *body, size_t len, aw_project_create_req *out,
			     aw_error *err);
aw_err decode_key_create(const char *body, size_t len, aw_key_create_req *out, aw_error *err);
/* A key's limits patch (PATCH /keys/{id}): an object of limits members, each
 * checked as far as it can be alone; *out a new reference. */
aw_err decode_key_update(const char *body, size_t len, json_t **out, aw_error *err);
/* The path of a URI as sent ("/a/b%41?x"), decoded once into segments: fills
 * segbuf (initialised here; the caller aw_buf_free()s it) and segs[0..*nsegs)
 * pointing into it; *nsegs > AW_HTTP_MAX_SEGS when there are more. A segment
 * may not decode to NUL or "/" nor hold a broken escape (AW_E_REQ_PATH); a
 * path over AW_HTTP_PATH_MAX is AW_E_REQ_URI_LONG. Empty segments are skipped.
 * On an error *nsegs is 0 (no segment to read). */
aw_err http_decode_path(const char *uri, aw_buf *segbuf, const char **segs, int *nsegs,
			aw_error *err);

/* ---- handlers ---- */
void h_healthz(aw_req *r);
void h_readyz(aw_req *r);
void h_metrics(aw_req *r);
void h_openapi(aw_req *r);
void h_audit_verify(aw_req *r);
void h_key_migrations(aw_req *r);
void h_redaction_get(aw_req *r);
void h_redaction_put(aw_req *r);
void h_console(aw_req *r);
void h_root(aw_req *r);
void h_projects_create(aw_req *r);
void h_projects_list(aw_req *r);
void h_whoami(aw_req *r);
void h_project_get(aw_req *r);
void h_keys_create(aw_req *r);
void h_keys_list(aw_req *r);
void h_key_revoke(aw_req *r);
void h_key_get(aw_req *r);
void h_key_update(aw_req *r);
void h_audit_list(aw_req *r);
void h_contract_create(aw_req *r);
void h_contract_list(aw_req *r);
void h_contract_get(aw_req *r);
void h_contract_update(aw_req *r);
void h_contract_diff(aw_req *r);
void h_contract_action(aw_req *r);
void h_contract_rollback(aw_req *r);
void h_contract_active(aw_req *r);
void h_contract_convergence(aw_req *r);
void h_runs_submit(aw_req *r);
void h_runs_list(aw_req *r);
void h_runs_batch(aw_req *r);
void h_run_get(aw_req *r);
void h_run_cancel(aw_req *r);
void h_run_diff(aw_req *r);
void h_run_approve(aw_req *r);
void h_queues_list(aw_req *r);
void h_queue_put(aw_req *r);
void h_schedules_create(aw_req *r);
void h_schedules_list(aw_req *r);
void h_schedule_get(aw_req *r);
void h_schedule_delete(aw_req *r);
void h_approval_mint(aw_req *r);
void h_approval_verify(aw_req *r);
void h_channel_send(aw_req *r);
void h_channel_webhook(aw_req *r);
void h_llm_chat(aw_req *r);
void h_llm_messages(aw_req *r);
void h_llm_embeddings(aw_req *r);
void h_llm_responses(aw_req *r);
void h_budget_get(aw_req *r);
void h_mcp_post(aw_req *r);
void h_mcp_get(aw_req *r);
void h_mcp_delete(aw_req *r);

/* tls.c: the API's HTTPS material (see the file's header). */
typedef struct aw_tls aw_tls;
extern const char aw_tls_priorities[];
/* NULL material (no cert): *out NULL, plain HTTP. */
aw_err tls_new(const char *cert, const char *key, const char *client_ca, aw_tls **out,
	       aw_error *err);
aw_err tls_reload(aw_tls *t, aw_error *err);
void http_tls_free(aw_tls *t);
/* The client CA's PEM (MHD_OPTION_HTTPS_MEM_TRUST), or NULL. */
const char *http_tls_client_ca(const aw_tls *t);
/* MHD_OPTION_HTTPS_CERT_CALLBACK's function. */
void *tls_cert_callback(void);
/* E-TLS-001 unless the connection's client certificate is one the client CA
 * signed (AW_OK without a client CA). */
aw_err tls_check_client(const aw_tls *t, struct MHD_Connection *conn, aw_error *err);
void h_budget_ledger(aw_req *r);
void h_budget_spend(aw_req *r);
void h_budget_action(aw_req *r);
void h_llm_models(aw_req *r);
/* the body of a contract revision request: {"body": {...}} */
aw_err decode_contract_body(const char *body, size_t len, json_t **out, aw_error *err);
/* The URL's {project} segment: a slug, or __platform__; 0 or replied. */
int project_segment_or_reply(aw_req *r, const char *seg);
/* The /v1/projects/{project}/... routes: the segment checked, then the key
 * authorised for that project with scope need (project_or_reply). */
int url_project_or_reply(aw_req *r, aw_scope need, aw_ctx *scoped);

/* Finds the handler for method + r->segs; sets r->route. NULL with *err set to
 * AW_E_REQ_ROUTE or AW_E_REQ_METHOD when none. */
http_handler http_route(aw_req *r, aw_err *err);

#endif
