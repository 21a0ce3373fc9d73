/*
 * relay_methods.c - the methods that are not tools, relayed to a project's
 * upstreams (resources, prompts, completion, logging/setLevel) as each
 * upstream's revision entry allows ("relay"), and their mcp.relay audit
 * records.
 */
#include "mcp_gateway.h"

#include <stdlib.h>
#include <string.h>

#include "awooop/clock.h"
#include "awooop/envelope.h"
#include "awooop/redact.h"

int mcp_relay_kind(const char *m)
{
	if (!strncmp(m, "resources/", 10) &&
	    (!strcmp(m + 10, "list") || !strcmp(m + 10, "templates/list") ||
	     !strcmp(m + 10, "read") || !strcmp(m + 10, "subscribe") ||
	     !strcmp(m + 10, "unsubscribe")))
		return RELAY_RESOURCES;
	if (!strcmp(m, "prompts/list") || !strcmp(m, "prompts/get"))
		return RELAY_PROMPTS;
	if (!strcmp(m, "completion/complete"))
		return RELAY_COMPLETION;
	return !strcmp(m, "logging/setLevel") ? RELAY_LOGGING : 0;
}

/* resources, prompts, completion and logging, to the upstreams whose revision
 * entry lets them through ("relay"): lists merged (prompt names federated
 * like tools when several upstreams relay prompts), a read, get or
 * completion to the one upstream that answers it, setLevel to each. Answers
 * are redacted like tool results; _meta is not passed on.
 *
 * The gates of a tools/call that apply: the per-call guard (the catalog,
 * run_call), then the project's suspension (gate 4, E-MCP-GATE-007: a
 * suspended project reaches no upstream; resources/unsubscribe alone still
 * passes, it only stops work) and each relaying upstream's relay_rate_limit
 * (gate 4, E-MCP-GATE-006), then the upstream (gate 5). */
json_t *mcp_relay(aw_mcp *g, aw_mcp_call *call, catalog *c, int kind, relay_note *rn)
{
	const json_t *id = call->msg.id;
	const char *m = call->msg.method;
	upinst *ups[32];
	int n = 0;
	for (int i = 0; c && i < c->nups; i++)
		if (c->ups[i]->relay & kind)
			ups[n++] = c->ups[i];
	rn->outcome = "refused";
	int list = !strcmp(m + strlen(m) - 5, "/list");
	/* the member a list answer holds its items in */
	const char *k = kind == RELAY_PROMPTS	 ? "prompts"
			: strstr(m, "templates") ? "resourceTemplates"
						 : "resources";
	if (!n && list) { /* nothing relayed: an empty list, as before */
		json_t *res = json_pack("{s:[]}", k);
		mcp_decorate(res, &call->meta, 1);
		rn->outcome = "ok";
		return aw_rpc_result_json(id, res);
	}
	if (!n)
		return aw_rpc_error_json(id, AW_RPC_METHOD,
					 "this project's upstreams relay no such method", NULL);
	/* subscriptions are a session's: its GET stream gets the updates; an
	 * upstream is told to stop only when no session of the project wants
	 * the URI any more (one upstream session serves them all) */
	int sub = !strcmp(m, "resources/subscribe"), unsub = !strcmp(m, "resources/unsubscribe");
	const char *uri = json_string_value(json_object_get(call->msg.params, "uri"));
	if ((sub || unsub) && (!call->req_session[0] || call->meta.stateless))
		return aw_rpc_error_json(id, AW_RPC_METHOD,
					 "resource subscriptions need a session (initialize); "
					 "subscriptions/listen is not relayed",
					 NULL);
	if ((sub || unsub) && (!uri || strlen(uri) > 2048))
		return aw_rpc_error_json(id, AW_RPC_PARAMS,
					 "params.uri must be a string of at most 2048 bytes", NULL);
	/* gate 4: a suspended project reaches no upstream */
	const char *why = unsub ? NULL : mcp_suspended(g, &call->ctx);
	if (why) {
		rn->gate = 4;
		return mcp_gate_error(id, AW_E_MCP_BUDGET, 4, why, NULL);
	}
	/* gate 4: each upstream's relay_rate_limit, as a tool's rate_limit */
	for (int i = 0; !unsub && i < n; i++) {
		long wait =
			mcp_rate_take(g, &call->ctx, &ups[i]->mu, &ups[i]->rate, ups[i]->rate_name);
		if (wait) {
			char msg[160];
			snprintf(msg, sizeof msg,
				 "upstream %s's relay rate limit is spent; retry in %ld ms",
				 ups[i]->provider, wait);
			rn->gate = 4;
			json_t *reply = mcp_gate_error(id, AW_E_MCP_RATE, 4, msg, NULL);
			json_object_set_new(
				json_object_get(json_object_get(reply, "error"), "data"),
				"retry_after_ms", json_integer(wait));
			return reply;
		}
	}
	aw_error err = {0};
	if (sub && mcp_session_sub(g, call, uri, 1))
		return aw_rpc_error_json(id, AW_RPC_PARAMS,
					 "a session subscribes to at most 64 resources", NULL);
	if (unsub && mcp_session_sub(g, call, uri, 0) > 0) {
		rn->outcome = "ok";
		return aw_rpc_result_json(id, json_object());
	}
	json_t *params = call->msg.params ? json_deep_copy(call->msg.params) : json_object();
	json_object_del(params, "_meta");
	int suffix = !json_is_false(json_object_get(c->body, "suffix")) && n > 1;
	const char *pname = json_string_value(json_object_get(params, "name"));
	json_t *merged = NULL, *rpc = NULL, *res = NULL;
	aw_err e = AW_E_MCP_UPSTREAM;
	rn->gate = 5; /* from here on the upstreams decide */
	for (int i = 0; i < n; i++) {
		json_t *p = params;
		if (suffix && pname && !strcmp(m, "prompts/get")) { /* name__provider */
			size_t pl = strlen(pname), vl = strlen(ups[i]->provider);
			if (pl < vl + 3 || strcmp(pname + pl - vl, ups[i]->provider) ||
			    strncmp(pname + pl - vl - 2, "__", 2))
				continue;
			p = json_deep_copy(params);
			json_object_set_new(p, "name", json_stringn(pname, pl - vl - 2));
		}
		json_t *r = NULL, *re = NULL;
		rn->asked[rn->nasked++] = ups[i]->provider;
		mcp_peer peer = mcp_call_peer(call, NULL, ups[i]->timeout_ms);
		e = mcp_up_request(ups[i]->up, m, p, ups[i]->timeout_ms, &peer, &r, &re, &err);
		if (p != params)
			json_decref(p);
		if (e) {
			json_decref(rpc);
			rpc = re;
			if (list || !strcmp(m, "logging/setLevel"))
				break; /* a list is whole or an error */
			continue;      /* a read or get: the next upstream may have it */
		}
		json_decref(rpc);
		rpc = NULL;
		if (!list) {
			json_decref(res);
			res = r;
			rn->upstream = ups[i]->provider;
			if (sub)
				mcp_up_listen(ups[i]->up);
			if (strcmp(m, "logging/setLevel") && !unsub)
				break;
			continue;
		}
		if (!merged)
			merged = json_pack("{s:[]}", k);
		size_t j;
		json_t *item;
		json_array_foreach (json_object_get(r, k), j, item) {
			json_t *copy = json_deep_copy(item);
			if (suffix && kind == RELAY_PROMPTS) {
				char full[300];
				snprintf(full, sizeof full, "%s__%s",
					 json_string_value(json_object_get(item, "name")) ?: "",
					 ups[i]->provider);
				json_object_set_new(copy, "name", json_string(full));
			}
			json_array_append_new(json_object_get(merged, k), copy);
		}
		if (n == 1 && json_object_get(r, "nextCursor"))
			json_object_set(merged, "nextCursor", json_object_get(r, "nextCursor"));
		json_decref(r);
	}
	json_decref(params);
	if (list && !e)
		res = merged;
	else
		json_decref(merged);
	if (!res && sub) /* no upstream took it */
		mcp_session_sub(g, call, uri, 0);
	if (!res && err.err == AW_E_MCP_CANCELLED && atomic_load(&call->base.cut)) {
		rn->outcome = "cancelled";
		json_decref(rpc);
		return aw_rpc_error_json(id, AW_RPC_GATE,
					 "the project was suspended: its calls in flight were cut",
					 aw_err_code(AW_E_MCP_BUDGET));
	}
	if (!res) {
		rn->outcome = err.err == AW_E_MCP_CANCELLED ? "cancelled" : "failed";
		if (rpc) /* the upstream's own error, redacted */
			return mcp_upstream_error(id, rpc, 0);
		return aw_rpc_error_json(id, AW_RPC_GATE,
					 err.msg[0] ? err.msg : "no upstream answered",
					 aw_err_code(AW_E_MCP_UPSTREAM));
	}
	mcp_redact_result(call->ctx.project, res);
	json_t *contents = json_object_get(res, "contents"); /* resources/read */
	size_t j;
	json_t *item;
	json_array_foreach (contents, j, item) { /* text redacted, blobs kept */
		json_t *blob = json_object_get(item, "blob");
		if (blob)
			json_incref(blob);
		aw_redact_json(item, NULL);
		if (blob)
			json_object_set_new(item, "blob", blob);
	}
	mcp_decorate(res, &call->meta, list || !strcmp(m, "resources/read"));
	rn->gate = 0;
	rn->outcome = "ok";
	return aw_rpc_result_json(id, res);
}

/* The mcp.relay record of a relayed method: the envelope (principal, trace,
 * revision, the upstream that answered, outcome, code, gate, latency), the
 * method, the upstreams asked, the JSON-RPC code of an error answer
 * (rpc_code), and what the request named - the resource's uri or the
 * prompt's name, redacted (over 1 KiB: its size only). No arguments and
 * nothing of any answer. */
void mcp_audit_relay(aw_mcp *g, aw_mcp_call *call, catalog *c, const relay_note *rn, int64_t t0)
{
	double ms = (double)(aw_clock_mono_ns() - t0) / 1e6;
	int error = rn->error;
	const char *code = rn->code[0] ? rn->code : NULL;
	aw_envelope e = mcp_envelope(call, c, ms);
	e.upstream = rn->upstream;
	e.outcome = rn->outcome ? rn->outcome : (error ? "failed" : "ok");
	e.code = code;
	e.gate = error ? rn->gate : 0;
	json_t *p = aw_envelope_json(&e);
	if (!p)
		return;
	const char *m = call->msg.method;
	json_object_set_new(p, "method", json_string(m));
	if (rn->nasked) {
		json_t *asked = json_array();
		for (int i = 0; i < rn->nasked; i++)
			json_array_append_new(asked, json_string(rn->asked[i]));
		json_object_set_new(p, "upstreams", asked);
	}
	if (error)
		json_object_set_new(p, "rpc_code", json_integer(rn->rpc_code));
	const char *k = !strncmp(m, "resources/", 10) ? "uri" : "name";
	const char *named = strcmp(m, "prompts/get") && strncmp(m, "resources/", 10)
				    ? NULL
				    : json_string_value(json_object_get(call->msg.params, k));
	char *red = named && strlen(named) <= 1024 ? aw_redact_str(named) : NULL;
	if (red) {
		json_object_set_new(p, k, json_string(red));
		free(red);
	} else if (named) {
		json_object_set_new(p, !strcmp(k, "uri") ? "uri_bytes" : "name_bytes",
				    json_integer((json_int_t)strlen(named)));
	}
	mcp_record_queue(g, &call->ctx, "mcp.relay", m, p);
}
