/*
 * dispatch.c - a request in (aw_mcp_start): notifications, responses,
 * initialize, server/discover and ping answered at once; the methods that
 * touch upstreams (tools/list, tools/call, the relayed ones) queued in the
 * fair queue (fairq.h) for the worker threads, which run them and answer -
 * an audited one first to its client, then to the recorder. A legacy
 * session's request is listed while it runs so that its client can cancel it.
 */
#include "mcp_gateway.h"

#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/clock.h"
#include "awooop/log.h"
#include "awooop/str.h"
#include "awooop/wake.h"

/* A request is listed in the registry while a worker runs it, so that its
 * client can cancel it (a legacy session's: notifications/cancelled names
 * the session's request id) and a suspension of its project can cut it. */
static int inflight(aw_mcp *g, aw_mcp_call *call, int on)
{
	if (on)
		return aw_calls_enter(g->calls, g->door, &call->base, call->ctx.project, 0, NULL);
	aw_calls_leave(g->calls, &call->base, NULL);
	return 0;
}

/* aw_calls_each: the call notifications/cancelled (note) names is given up. */
static void cancel_named(aw_call *b, void *ud)
{
	aw_mcp_call *c = (aw_mcp_call *)b;
	const aw_mcp_call *note = ud;
	if (!strcmp(c->req_session, note->req_session) &&
	    !strcmp(c->ctx.principal, note->ctx.principal) &&
	    json_equal((json_t *)c->msg.id, json_object_get(note->msg.params, "requestId")))
		atomic_store(&c->cancel, 1);
}

/* notifications/cancelled of ctx's session: the request it names, if it is
 * still running, is given up (its upstream told so). */
static void cancel_request(aw_mcp *g, aw_mcp_call *note)
{
	const json_t *rid = json_object_get(note->msg.params, "requestId");
	if (note->req_session[0] && (json_is_string(rid) || json_is_integer(rid)))
		aw_calls_each(g->calls, g->door, note->ctx.project, cancel_named, note);
}

/* The registry cut a call (its project was suspended): it is given up (its
 * upstream told so) and answered E-MCP-GATE-007. */
static void cancel(aw_call *b)
{
	atomic_store(&((aw_mcp_call *)b)->cancel, 1);
}

const aw_door mcp_door = {.name = "mcp", .cancel = cancel};

/* Answers a call that leaves an audit record (a tools/call's n or a relayed
 * method's rn): the client first, the record right after - a flush waits for
 * it. */
static void recorded_answer(aw_mcp *g, aw_mcp_call *call, json_t *reply, int status, relay_note *rn,
			    call_note *n, catalog *c, int64_t t0)
{
	aw_recorder_expect(g->rec, 1);
	json_t *error = json_object_get(reply, "error");
	if (rn && error) { /* read now: the answer is the client's once finished */
		rn->error = 1;
		rn->rpc_code = json_integer_value(json_object_get(error, "code"));
		/* the upstream's code: recorded whole, or not at all */
		(void)!AW_STR_COPY(rn->code, json_string_value(json_object_get(
						     json_object_get(error, "data"), "code")));
	}
	mcp_finish(call, reply, status);
	if (rn)
		mcp_audit_relay(g, call, c, rn, t0);
	else
		mcp_audit_call(g, call, c, n, t0);
	aw_recorder_expect(g->rec, -1);
}

/* The methods that touch upstreams (on a worker). */
static void run_call(aw_mcp *g, aw_mcp_call *call)
{
	const json_t *id = call->msg.id;
	int in = inflight(g, call, 1);
	if (in) { /* not listed: nothing could cut it, so it does not run */
		aw_err e = in == 2 ? AW_E_MCP_UNAVAILABLE : AW_E_NOMEM;
		mcp_finish(call,
			   aw_rpc_error_json(id, AW_RPC_INTERNAL,
					     in == 2 ? "the gateway is shutting down"
						     : "out of memory (the calls in flight)",
					     aw_err_code(e)),
			   503);
		return;
	}
	int64_t t0 = aw_clock_mono_ns();
	aw_err e;
	aw_error err = {0};
	catalog *c = mcp_catalog_get(g, &call->ctx, &e, &err);
	json_t *reply;
	int status = 200;
	int kind = mcp_relay_kind(call->msg.method);
	if (e && e != AW_E_CONTRACT_NOT_FOUND) {
		reply = aw_rpc_error_json(
			id, AW_RPC_INTERNAL, err.msg,
			aw_err_code(e == AW_E_MCP_UPSTREAM ? e : AW_E_MCP_UNAVAILABLE));
		status = 503;
		if (kind || !strcmp(call->msg.method, "tools/call")) {
			/* the guard could not say which revision governs: recorded
			 * like any other end of a call */
			relay_note rn = {.outcome = "failed"};
			call_note n = {.outcome = "failed",
				       .code = e == AW_E_MCP_UPSTREAM ? e : AW_E_MCP_UNAVAILABLE};
			inflight(g, call, 0);
			recorded_answer(g, call, reply, status, kind ? &rn : NULL, kind ? NULL : &n,
					NULL, t0);
			return;
		}
	} else if (kind) {
		relay_note rn = {0};
		reply = mcp_relay(g, call, c, kind, &rn);
		inflight(g, call, 0);
		recorded_answer(g, call, reply, status, &rn, NULL, c, t0);
		mcp_catalog_put(c);
		return;
	} else if (!strcmp(call->msg.method, "tools/list")) {
		json_t *res = json_pack("{s:o}", "tools", mcp_list_tools(g, c));
		mcp_decorate(res, &call->meta, 1);
		reply = aw_rpc_result_json(id, res);
	} else {
		call_note n = {.outcome = "ok"};
		reply = mcp_tools_call(g, call, c, &n);
		inflight(g, call, 0);
		recorded_answer(g, call, reply, status, NULL, &n, c, t0);
		json_decref(n.args_audit);
		mcp_catalog_put(c);
		return;
	}
	inflight(g, call, 0);
	mcp_catalog_put(c);
	mcp_finish(call, reply, status);
}

/* The answer to a request the gateway will not run: it is stopping. */
static void finish_stopping(aw_mcp_call *c)
{
	mcp_finish(c,
		   aw_rpc_error_json(c->msg.id, AW_RPC_INTERNAL, "the gateway is shutting down",
				     aw_err_code(AW_E_MCP_UNAVAILABLE)),
		   503);
}

void *mcp_worker_main(void *arg)
{
	aw_mcp *g = arg;
	pthread_setname_np(pthread_self(), "aw-mcp-worker");
	aw_fairq_ticket t = {NULL, 0};
	for (;;) {
		aw_fairq_ticket done = t; /* the last call's, done with the next pop */
		aw_mcp_call *c = fairq_next(g->fq, &done, &t);
		if (!c)
			break;
		if (atomic_load(&g->stopping))
			finish_stopping(c);
		else
			run_call(g, c);
		aw_mcp_release(c);
	}
	return NULL;
}

/* Requests that cost the upstream little (lists, subscriptions, the log
 * level) go before upstream calls (tools/call and the relayed reads), so
 * they never wait behind a slow upstream's calls. */
static int cheap(const char *method)
{
	return strcmp(method, "tools/call") && strcmp(method, "resources/read") &&
	       strcmp(method, "prompts/get") && strcmp(method, "completion/complete");
}

/* Tools, and what the project's upstreams relay (a catalog may be NULL). */
static json_t *capabilities(const catalog *c, int sessions)
{
	json_t *caps = json_pack("{s:{s:b}}", "tools", "listChanged", sessions);
	int relay = 0;
	for (int i = 0; c && i < c->nups; i++)
		relay |= c->ups[i]->relay;
	if (relay & RELAY_RESOURCES) /* updates reach a session's GET stream */
		json_object_set_new(caps, "resources", json_pack("{s:b}", "subscribe", sessions));
	if (relay & RELAY_PROMPTS)
		json_object_set_new(caps, "prompts", json_object());
	if (relay & RELAY_COMPLETION)
		json_object_set_new(caps, "completions", json_object());
	if (relay & RELAY_LOGGING)
		json_object_set_new(caps, "logging", json_object());
	return caps;
}

static json_t *server_info(void)
{
	return json_pack("{s:s,s:s}", "name", "awooop-mcp-gateway", "version", AWOOOP_VERSION);
}

/* The methods answered at once; 1 when answered. */
static int answer_now(aw_mcp *g, aw_mcp_call *c)
{
	const aw_mcp_msg *m = &c->msg;
	if (m->kind != AW_MCP_REQUEST) { /* notifications, responses: accepted */
		if (m->method && !strcmp(m->method, "notifications/cancelled"))
			cancel_request(g, c);
		else if (m->kind == AW_MCP_RESPONSE)
			mcp_client_answer(g, c);
		mcp_finish(c, NULL, 202);
		return 1;
	}
	const char *meth = m->method;
	if (!strcmp(meth, "tools/list") || !strcmp(meth, "tools/call") ||
	    (mcp_relay_kind(meth) && !(c->meta.stateless && !strcmp(meth, "logging/setLevel"))))
		return 0;
	json_t *res = NULL;
	catalog *cat = NULL;
	if (!strcmp(meth, "initialize") || !strcmp(meth, "server/discover")) {
		aw_err e; /* what the project relays: no upstream is asked */
		aw_error err = {0};
		cat = mcp_catalog_get(g, &c->ctx, &e, &err);
	}
	if (!strcmp(meth, "initialize") && !c->meta.stateless) {
		const char *want = json_string_value(json_object_get(m->params, "protocolVersion"));
		/* a supported version is one of aw_mcp_versions: it fits */
		if (!want || !aw_mcp_version_supported(want) || !strcmp(want, AW_MCP_V_STATELESS) ||
		    AW_STR_COPY(c->version, want) < 0)
			AW_COPY_ARRAY(c->version, AW_MCP_V_LEGACY);
		res = json_pack("{s:s,s:o,s:o,s:s}", "protocolVersion", c->version, "capabilities",
				capabilities(cat, 1), "serverInfo", server_info(), "instructions",
				"The tools of this project, through the awooop gateway.");
		mcp_session_new(g, c);
	} else if (!strcmp(meth, "server/discover")) {
		res = json_pack("{s:o,s:o,s:{s:o}}", "supportedVersions", aw_mcp_versions_json(1),
				"capabilities", capabilities(cat, !c->meta.stateless), "_meta",
				"io.modelcontextprotocol/serverInfo", server_info());
		mcp_decorate(res, &c->meta, 1);
		if (!c->meta.stateless) /* asked in a legacy session: still answered */
			json_object_set_new(res, "resultType", json_string("complete"));
	} else if (!strcmp(meth, "ping") && !c->meta.stateless) {
		res = json_object();
	} else {
		mcp_finish(c, aw_rpc_error_json(m->id, AW_RPC_METHOD, "method not found", NULL),
			   c->meta.stateless ? 404 : 200);
		return 1;
	}
	mcp_catalog_put(cat);
	mcp_finish(c, aw_rpc_result_json(m->id, res), 200);
	return 1;
}

aw_err aw_mcp_start(aw_mcp *g, const aw_ctx *ctx, aw_mcp_msg *msg, const aw_mcp_meta *meta,
		    aw_mcp_wake wake, void *ud, aw_mcp_call **out, aw_error *err)
{
	aw_mcp_call *c = aw_calloc(1, sizeof *c);
	if (!c) {
		aw_mcp_msg_clear(msg);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	/* a client's header values: whole, or refused (a cut session id or run id
	 * could name another session or run) */
	if (AW_STR_COPY(c->version, meta->version) < 0 ||
	    AW_STR_COPY(c->run_id, meta->run_id) < 0 ||
	    AW_STR_COPY(c->req_session, meta->stateless ? NULL : meta->session) < 0) {
		free(c);
		aw_mcp_msg_clear(msg);
		return aw_fail(err, AW_E_MCP_PROTOCOL,
			       "a protocol version, run id or session id is too long");
	}
	c->g = g;
	mcp_call_init(c, AW_MCP_MAX_RESPONSE + 65536, wake, ud);
	c->ctx = *ctx;
	c->msg = *msg;
	memset(msg, 0, sizeof *msg);
	c->meta = *meta;
	c->meta.version = c->version;
	c->meta.run_id = c->run_id;
	*out = c;
	if (answer_now(g, c))
		return AW_OK;
	if (atomic_load(&g->stopping)) {
		finish_stopping(c);
		return AW_OK;
	}
	aw_call_hold(&c->base); /* the worker's */
	int q = fairq_push(g->fq, c->ctx.project, cheap(c->msg.method), c);
	if (q) { /* the project's own queue is full: it waits for itself */
		aw_mcp_release(c);
		mcp_finish(
			c,
			aw_rpc_error_json(c->msg.id, AW_RPC_INTERNAL,
					  q == -1 ? "this project has as many requests waiting as "
						    "it may (its tool calls are slower than it "
						    "sends them): retry later"
						  : "out of memory",
					  aw_err_code(q == -1 ? AW_E_MCP_BUSY : AW_E_NOMEM)),
			q == -1 ? 429 : 503);
	}
	return AW_OK;
}

json_t *aw_mcp_exchange(aw_mcp *g, const aw_ctx *ctx, aw_mcp_msg *msg, const aw_mcp_meta *meta,
			const atomic_bool *stop, int64_t deadline_ns, int *status, aw_error *err)
{
	aw_wake w;
	aw_wake_init(&w);
	aw_mcp_call *c = NULL;
	*status = 500;
	json_t *resp = NULL;
	const char *sess = NULL;
	if (aw_mcp_start(g, ctx, msg, meta, aw_wake_signal, &w, &c, err) == AW_OK) {
		aw_err e = AW_OK;
		while (!e && !aw_mcp_answer(c, NULL, NULL, &resp, status, &sess))
			e = aw_call_await(&w, stop, deadline_ns, "tool call", err);
		if (e) {
			atomic_store(&c->cancel, 1); /* the worker tells the upstream */
			aw_mcp_hangup(c);
		} else {
			aw_mcp_release(c);
		}
	}
	aw_wake_destroy(&w);
	return resp;
}
