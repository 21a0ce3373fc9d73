/*
 * gates.c - a tools/call through the five gates (mcp.h lists them and their
 * codes): the tool of the project's catalog, its policy and pin, its
 * arguments, rate and budget, approval and the upstream; then the result
 * redacted and cut, and the call's mcp.call audit record. Gate 4's rate
 * (this process's bucket, then the window every process shares in Redis)
 * serves the relayed methods too.
 */
#include "mcp_gateway.h"

#include <stdlib.h>
#include <string.h>

#include "awooop/budget.h"
#include "awooop/json.h"
#include "awooop/clock.h"
#include "awooop/envelope.h"
#include "awooop/kv.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/redact.h"
#include "awooop/schema.h"
#include "awooop/str.h"

#define AUDIT_ARGS_MAX 4096

json_t *mcp_gate_error(const json_t *id, aw_err code, int gate, const char *msg,
		       const char *pointer)
{
	json_t *r = aw_rpc_error_json(id, code == AW_E_MCP_ARGS ? AW_RPC_PARAMS : AW_RPC_GATE, msg,
				      aw_err_code(code));
	json_t *data = json_object_get(json_object_get(r, "error"), "data");
	json_object_set_new(data, "gate", json_integer(gate));
	if (pointer)
		json_object_set_new(data, "pointer", json_string(pointer));
	return r;
}

/* The upstream's own JSON-RPC error (rpc, stolen) as the answer to id,
 * redacted: its data under data.upstream, data.code E-MCP-GATE-009 and, for
 * a tools/call, data.gate (0: none). */
json_t *mcp_upstream_error(const json_t *id, json_t *rpc, int gate)
{
	aw_redact_json(rpc, NULL);
	json_t *ed = json_object_get(rpc, "data");
	json_t *d =
		gate ? json_pack("{s:s,s:i}", "code", aw_err_code(AW_E_MCP_UPSTREAM), "gate", gate)
		     : json_pack("{s:s}", "code", aw_err_code(AW_E_MCP_UPSTREAM));
	if (ed)
		json_object_set(d, "upstream", ed);
	json_object_set_new(rpc, "data", d);
	return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "error", rpc);
}

/* Gate 4's budget: NULL when the project may reach its upstreams, else why
 * not (suspended, or its budget could not be read). */
const char *mcp_suspended(aw_mcp *g, const aw_ctx *ctx)
{
	int suspended = 0;
	aw_error err = {0};
	if (aw_budget_suspended_recent(g->o.store, ctx, &suspended, &err) || suspended)
		return suspended ? "the project is suspended by its budget"
				 : "the budget could not be read";
	return NULL;
}

/* A failed upstream's code: the operator's refusals keep their own. */
static aw_err up_code(aw_err e)
{
	return e == AW_E_MCP_STDIO || e == AW_E_MCP_SANDBOX ? e : AW_E_MCP_UPSTREAM;
}

static json_t *refuse(call_note *n, const json_t *id, int gate, aw_err code, const char *msg,
		      const char *pointer)
{
	n->gate = gate;
	n->code = code;
	n->outcome = gate == 5 && code == AW_E_MCP_UPSTREAM ? "failed" : "refused";
	return mcp_gate_error(id, code, gate, msg, pointer);
}

/* Redacts a result JSON-aware, but not the base64 payloads of image, audio
 * and blob content (redaction patterns inside an encoding would corrupt the
 * bytes and protect nothing: the text is not there in clear). */
void mcp_redact_result(const char *project, json_t *res)
{
	json_t *content = json_object_get(res, "content"), *held = json_array();
	size_t i;
	json_t *item;
	json_array_foreach (content, i, item) {
		json_t *res_ = json_object_get(item, "resource");
		json_t *owner = json_object_get(item, "data") ? item : res_;
		const char *k = json_object_get(item, "data") ? "data" : "blob";
		json_t *v = json_object_get(owner, k);
		if (json_is_string(v)) {
			json_array_append_new(held, json_pack("{s:o,s:s,s:O}", "o",
							      json_incref(owner), "k", k, "v", v));
			json_object_set_new(owner, k, json_string(""));
		}
	}
	aw_redact_json_for(project, res, NULL);
	json_array_foreach (held, i, item)
		json_object_set(json_object_get(item, "o"),
				json_string_value(json_object_get(item, "k")),
				json_object_get(item, "v"));
	json_decref(held);
}

/* Cuts a result over limit bytes: text kept in order while it fits, other
 * content and structuredContent dropped, a marker appended. */
static json_t *cut_result(json_t *res, int limit, size_t *orig, int *cut)
{
	char *s = aw_json_dumps(res, JSON_COMPACT);
	*orig = s ? strlen(s) : 0;
	free(s);
	*cut = 0;
	if (*orig <= (size_t)limit)
		return res;
	*cut = 1;
	json_t *out = json_object(), *content = json_array();
	long room = limit - 320; /* the marker, the _meta and the envelope */
	size_t i;
	json_t *item;
	json_array_foreach (json_object_get(res, "content"), i, item) {
		if (room <= 0)
			break;
		const char *type = json_string_value(json_object_get(item, "type"));
		const char *text = json_string_value(json_object_get(item, "text"));
		if (!type || strcmp(type, "text") || !text)
			continue;
		size_t n = strlen(text), take = n;
		/* JSON escaping may grow text: budget for it conservatively */
		if ((long)(take * 2 + 32) > room)
			take = (size_t)(room - 32) / 2;
		while (take > 0 && take < n && ((unsigned char)text[take] & 0xc0) == 0x80)
			take--; /* a whole UTF-8 character */
		json_array_append_new(content,
				      json_pack("{s:s,s:s%}", "type", "text", "text", text, take));
		room -= (long)(take * 2 + 32);
	}
	char marker[160];
	snprintf(marker, sizeof marker, "[awooop: result cut to %d of %zu bytes]", limit, *orig);
	json_array_append_new(content, json_pack("{s:s,s:s}", "type", "text", "text", marker));
	json_object_set_new(out, "content", content);
	if (json_is_true(json_object_get(res, "isError")))
		json_object_set_new(out, "isError", json_true());
	json_object_set_new(out, "_meta",
			    json_pack("{s:{s:i,s:I}}", "io.awooop/truncated", "limit", limit,
				      "original_bytes", (json_int_t)*orig));
	json_decref(res);
	return out;
}

/* rl: a {"per_minute", "burst"?} of the contract (burst: per_minute by
 * default), or NULL: no rate. */
void mcp_rate_init(rate_bucket *r, const json_t *rl)
{
	if (!json_is_object(rl))
		return;
	double per_min = (double)json_integer_value(json_object_get(rl, "per_minute"));
	r->rated = 1;
	r->burst = (double)mcp_int_of(rl, "burst", (int)(per_min < 1 ? 1 : per_min));
	r->tokens = r->burst;
	r->per_ns = per_min / 60e9;
	r->per_min = per_min;
	r->last_ns = aw_clock_mono_ns();
}

/* Gate 4 across every gateway process sharing Redis: a sliding one-minute
 * window (this minute's count plus the last minute's, weighted by how much
 * of it the window still covers) under {project}:mcp:rate:{tool}:{minute}.
 * 0 when the call fits the tool's per_minute, else ms until it would; a
 * refused call is not counted. Redis unreachable: 0 (the process's own
 * bucket still holds). */
static long shared_rate(aw_mcp *g, const aw_ctx *ctx, const char *name, double per_min)
{
	int64_t now = aw_clock_wall_ms(), into = now % 60000;
	char cur[24], prev[24];
	snprintf(cur, sizeof cur, "%lld", (long long)(now / 60000));
	snprintf(prev, sizeof prev, "%lld", (long long)(now / 60000 - 1));
	const char *vc[] = {name, cur}, *vp[] = {name, prev};
	long long n = 0;
	aw_error err = {0};
	if (aw_kv_incr(g->o.kv, ctx, "mcp_rate", vc, 2, 1, &n, &err)) {
		aw_log(AW_LOG_WARN, ctx, "mcp shared rate unavailable; this process's bucket alone",
		       "tool", name, "detail", err.msg, NULL);
		return 0;
	}
	if (n == 1)
		aw_kv_expire(g->o.kv, ctx, "mcp_rate", vc, 2, 120, &err);
	char *pv = NULL;
	double before = 0;
	if (!aw_kv_get(g->o.kv, ctx, "mcp_rate", vp, 2, &pv, &err) && pv)
		before = strtod(pv, NULL);
	free(pv);
	double left = (60000.0 - (double)into) / 60000.0;
	if (before * left + (double)n <= per_min)
		return 0;
	aw_kv_incr(g->o.kv, ctx, "mcp_rate", vc, 2, -1, &n, &err);
	/* when the last minute's weight leaves room for this call (or, this
	 * minute full by itself, when it ends) */
	double room = per_min - (double)n - 1, wait = 60000.0 - (double)into;
	if (before > 0 && room >= 0)
		wait -= room * 60000.0 / before;
	return wait < 1 ? 1 : (long)wait;
}

/* A token of r (name: its key in the shared window): this process's bucket,
 * then - with Redis - the window every gateway process shares (a token the
 * window refuses is given back). 0, else ms until one is. */
long mcp_rate_take(aw_mcp *g, const aw_ctx *ctx, pthread_mutex_t *mu, rate_bucket *r,
		   const char *name)
{
	if (!r->rated)
		return 0;
	pthread_mutex_lock(mu);
	int64_t now = aw_clock_mono_ns();
	r->tokens += (double)(now - r->last_ns) * r->per_ns;
	if (r->tokens > r->burst)
		r->tokens = r->burst;
	r->last_ns = now;
	long wait = 0;
	if (r->tokens >= 1)
		r->tokens -= 1;
	else
		wait = (long)((1 - r->tokens) / r->per_ns / 1e6) + 1;
	pthread_mutex_unlock(mu);
	if (!wait && g->o.kv && (wait = shared_rate(g, ctx, name, r->per_min))) {
		pthread_mutex_lock(mu);
		if (r->tokens + 1 <= r->burst)
			r->tokens += 1;
		pthread_mutex_unlock(mu);
	}
	return wait;
}

json_t *mcp_tools_call(aw_mcp *g, aw_mcp_call *call, catalog *c, call_note *n)
{
	const json_t *id = call->msg.id;
	json_t *params = call->msg.params;
	const char *name = call->msg.name;
	char msg[300];
	/* gate 1: the tool is one of this project's */
	mtool *t = NULL;
	for (int i = 0; c && i < c->ntools && !t; i++)
		if (!strcmp(c->tools[i].full, name))
			t = &c->tools[i];
	if (!t) {
		snprintf(msg, sizeof msg, "tool %.128s is not visible to this project", name);
		return refuse(n, id, 1, AW_E_MCP_TOOL, msg, NULL);
	}
	n->t = t;
	/* gate 2: policy and pin */
	if (!t->enabled)
		return refuse(n, id, 2, AW_E_MCP_POLICY,
			      "the tool is disabled by the project's policy", NULL);
	if (t->write && c->read_only)
		return refuse(n, id, 2, AW_E_MCP_POLICY, "a write tool in a read_only project",
			      NULL);
	char pin[AW_MCP_PIN_MAX];
	aw_error err = {0};
	if (mcp_defs_get(g, t->u, 0, t->name, t->pin, pin, NULL, &err))
		return refuse(n, id, 5, up_code(err.err), err.msg, NULL);
	int same = t->pin && !strcmp(pin, t->pin), def = pin[0] != 0;
	if (!same)
		return refuse(n, id, 2, AW_E_MCP_PIN,
			      !t->pin ? "the tool has no pinned definition (publish pins it)"
			      : !def ? "the upstream no longer offers the tool it was approved with"
				     : "the upstream's definition of the tool changed since its "
				       "revision was approved; a new revision must pin it",
			      NULL);
	/* gate 3: arguments */
	json_t *args = json_object_get(params, "arguments");
	if (args && !json_is_object(args))
		return refuse(n, id, 3, AW_E_MCP_ARGS, "arguments must be an object", "/arguments");
	json_t *empty = args ? NULL : json_object();
	const json_t *a = args ? args : empty;
	char *as = aw_json_dumps(a, JSON_COMPACT);
	size_t alen = as ? strlen(as) : 0;
	free(as);
	json_t *reply = NULL;
	if (alen > (size_t)t->max_args) {
		snprintf(msg, sizeof msg, "arguments are %zu bytes, the tool takes at most %d",
			 alen, t->max_args);
		reply = refuse(n, id, 3, AW_E_MCP_ARGS, msg, "/arguments");
		goto out;
	}
	aw_schema_error se;
	if (t->schema && aw_schema_validate(t->schema, a, &se, 1) > 0) {
		snprintf(msg, sizeof msg, "arguments%.100s %.150s", se.pointer, se.message);
		reply = refuse(n, id, 3, AW_E_MCP_ARGS, msg, se.pointer);
		goto out;
	}
	n->args_audit = json_deep_copy(a);
	/* gate 4: rate and budget */
	long wait = mcp_rate_take(g, &call->ctx, &c->mu, &t->rate, t->full);
	if (wait) {
		snprintf(msg, sizeof msg, "the tool's rate limit is spent; retry in %ld ms", wait);
		reply = refuse(n, id, 4, AW_E_MCP_RATE, msg, NULL);
		json_object_set_new(json_object_get(json_object_get(reply, "error"), "data"),
				    "retry_after_ms", json_integer(wait));
		goto out;
	}
	const char *why = mcp_suspended(g, &call->ctx);
	if (why) {
		reply = refuse(n, id, 4, AW_E_MCP_BUDGET, why, NULL);
		goto out;
	}
	/* gate 5: approval, then the upstream */
	if (t->approval && !call->meta.approved) {
		reply = refuse(n, id, 5, AW_E_MCP_APPROVAL,
			       "the tool requires an approval: call it from a run's tool step,"
			       " which waits for one",
			       NULL);
		goto out;
	}
	json_t *up_params = json_pack("{s:s,s:O}", "name", t->name, "arguments", a);
	if (up_params && call->meta.idem_key) /* the run runtime's key of the call */
		json_object_set_new(up_params, "_meta",
				    json_pack("{s:s}", AW_MCP_IDEM_META, call->meta.idem_key));
	/* a tool's own timeout, else its upstream's, never past the platform's
	 * bound */
	int timeout_ms = t->timeout_ms ? t->timeout_ms : t->u->timeout_ms;
	if (timeout_ms > g->o.timeout_max_ms)
		timeout_ms = g->o.timeout_max_ms;
	mcp_peer peer = mcp_call_peer(call, up_params, timeout_ms);
	json_t *res = NULL, *rpc = NULL;
	aw_err e = mcp_up_request(t->u->up, "tools/call", up_params, timeout_ms, &peer, &res, &rpc,
				  &err);
	json_decref(up_params);
	if (e == AW_E_MCP_CANCELLED && atomic_load(&call->base.cut)) {
		reply = refuse(n, id, 4, AW_E_MCP_BUDGET,
			       "the project was suspended: its calls in flight were cut", NULL);
		n->outcome = "cancelled";
		json_decref(rpc);
		goto out;
	}
	if (e == AW_E_MCP_CANCELLED) {
		reply = refuse(n, id, 5, e, err.msg, NULL);
		n->outcome = "cancelled";
		json_decref(rpc);
		goto out;
	}
	if (e) {
		if (rpc) { /* the upstream's own error: relayed, redacted */
			reply = mcp_upstream_error(id, rpc, 5);
			n->has_upstream_code = 1;
			n->upstream_code = json_integer_value(
				json_object_get(json_object_get(reply, "error"), "code"));
			n->gate = 5;
			n->code = AW_E_MCP_UPSTREAM;
			n->outcome = "failed";
		} else {
			reply = refuse(n, id, 5, up_code(err.err), err.msg, NULL);
		}
		goto out;
	}
	mcp_redact_result(call->ctx.project, res);
	res = cut_result(res, t->max_result, &n->result_bytes, &n->cut);
	n->outcome = json_is_true(json_object_get(res, "isError")) ? "tool_error" : "ok";
	mcp_decorate(res, &call->meta, 0);
	reply = aw_rpc_result_json(id, res);
out:
	json_decref(empty);
	return reply;
}

void mcp_audit_call(aw_mcp *g, aw_mcp_call *call, catalog *c, call_note *n, int64_t t0)
{
	double ms = (double)(aw_clock_mono_ns() - t0) / 1e6;
	aw_metrics_mcp_call(call->ctx.project, n->t ? n->t->full : "-", n->outcome, ms / 1e3,
			    n->gate, n->gate ? aw_err_code(n->code) : "");
	mcp_span(call, n, t0);
	aw_envelope e = mcp_envelope(call, c, ms);
	e.upstream = n->t ? n->t->u->provider : NULL;
	e.outcome = n->outcome;
	e.code = n->gate || n->code ? aw_err_code(n->code) : NULL;
	e.gate = n->gate;
	json_t *p = aw_envelope_json(&e);
	if (!p)
		return;
	/* the MCP door's own */
	json_object_set_new(p, "tool", json_string(n->t ? n->t->full : call->msg.name));
	if (n->t)
		json_object_set_new(p, "upstream_tool", json_string(n->t->name));
	if (n->has_upstream_code)
		json_object_set_new(p, "upstream_code", json_integer(n->upstream_code));
	if (n->args_audit) { /* redacted; a large one by its size only */
		aw_redact_json(n->args_audit, NULL);
		char *s = aw_json_dumps(n->args_audit, JSON_COMPACT);
		if (s && strlen(s) <= AUDIT_ARGS_MAX) { /* handed over: the recorder thread
							    frees it, nothing is shared */
			json_object_set_new(p, "arguments", n->args_audit);
			n->args_audit = NULL;
		} else
			json_object_set_new(p, "arguments_bytes",
					    json_integer(s ? (json_int_t)strlen(s) : 0));
		free(s);
	}
	if (n->result_bytes) {
		json_object_set_new(p, "result_bytes", json_integer((json_int_t)n->result_bytes));
		json_object_set_new(p, "cut", json_boolean(n->cut));
	}
	if (call->meta.approved)
		json_object_set_new(p, "approved", json_true());
	mcp_record_queue(g, &call->ctx, "mcp.call", n->t ? n->t->full : "-", p);
}
