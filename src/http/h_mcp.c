/*
 * h_mcp.c - the MCP gateway's front door, Streamable HTTP at
 *   POST   /v1/projects/{project}/mcp   one JSON-RPC message; the answer is
 *                                        JSON, or an event stream (see
 *                                        aw_mcp_answer)
 *   GET    /v1/projects/{project}/mcp   a legacy session's event stream
 *                                        (resource updates; aw_mcp_listen)
 *   DELETE /v1/projects/{project}/mcp   ends a legacy session
 * Both protocol generations: legacy (initialize, Mcp-Session-Id, up to
 * 2025-11-25) and stateless 2026-07-28 (the version in params._meta, the
 * MCP-Protocol-Version / Mcp-Method / Mcp-Name headers checked against the
 * body: -32020 and HTTP 400 when they differ).
 *
 * Errors are JSON-RPC errors (data.code the stable code), never problem+json:
 * a missing or unknown key is gate 1 (E-MCP-GATE-001, HTTP 401), a key of
 * another project too (HTTP 403). The key needs the worker scope or above.
 */
#include <string.h>

#include "awooop/mcp.h"
#include "awooop/tenancy.h"
#include "awooop/str.h"
#include "http_internal.h"

static void reply_rpc(aw_req *r, int status, json_t *msg)
{
	http_reply_json(r, status, msg);
}

static void reply_error(aw_req *r, int status, const json_t *id, int code, const char *msg,
			aw_err stable)
{
	reply_rpc(r, status, aw_rpc_error_json(id, code, msg, stable ? aw_err_code(stable) : NULL));
}

static const char *header(aw_req *r, const char *name);

/* Gate 1: the key, of this project, worker scope or above - and first, a
 * browser's Origin (DNS rebinding: 403). 0 or replied. */
static int gate1(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (!aw_mcp_origin_allowed(header(r, "Origin"), r->opts->mcp_origins)) {
		reply_error(r, 403, NULL, AW_RPC_INVALID,
			    "this Origin may not call the MCP endpoint (--mcp-allow-origins)",
			    AW_E_MCP_ORIGIN);
		return -1;
	}
	if (req_authenticate(r, &err)) {
		reply_error(r, 401, NULL, AW_RPC_GATE, err.msg, AW_E_MCP_KEY);
		return -1;
	}
	if (aw_tenancy_authorize(&r->ctx, r->segs[2], AW_SCOPE_WORKER, &scoped, &err)) {
		reply_error(r, 403, NULL, AW_RPC_GATE,
			    "this key may not call the tools of this project", AW_E_MCP_KEY);
		return -1;
	}
	r->ctx = scoped;
	if (!r->opts->mcp) {
		reply_error(r, 503, NULL, AW_RPC_INTERNAL, "this process runs no MCP gateway",
			    AW_E_MCP_UNAVAILABLE);
		return -1;
	}
	return 0;
}

static const char *header(aw_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

static ssize_t read_call(void *c, char *buf, size_t max, void (*park)(void *), void *pud)
{
	return aw_mcp_read(c, buf, max, park, pud);
}

static void answer(aw_req *r)
{
	json_t *resp = NULL;
	int status = 200;
	const char *session = NULL;
	int how = aw_mcp_answer(r->svc, req_park_cb, r, &resp, &status, &session);
	if (!how)
		return;
	if (session && session[0])
		req_header(r, "Mcp-Session-Id", session);
	if (how == 2)
		reply_call_stream(r, read_call);
	else if (resp)
		reply_rpc(r, status, resp);
	else
		reply_empty(r, status);
}

static void done(aw_req *r)
{
	aw_mcp_hangup(r->svc);
	r->svc = NULL;
}

/* What Accept says of an event stream (aw_mcp_meta.accept_sse): 0 not
 * acceptable, 1 acceptable, 2 listed before application/json. Media ranges
 * are compared by their type only (parameters and q ignored). */
static int accept_sse(const char *accept)
{
	if (!accept)
		return 0;
	const char *sse = strcasestr(accept, "text/event-stream");
	if (!sse)
		return 0;
	const char *json = strcasestr(accept, "application/json");
	return !json || sse < json ? 2 : 1;
}

void h_mcp_post(aw_req *r)
{
	if (gate1(r))
		return;
	aw_mcp_msg m;
	aw_rpc_error re;
	if (aw_mcp_parse(r->body, r->body_len, &m, &re)) {
		reply_error(r, 400, m.id, re.code, re.msg, AW_E_MCP_PROTOCOL);
		aw_mcp_msg_clear(&m);
		return;
	}
	const char *hv = header(r, "MCP-Protocol-Version");
	aw_mcp_meta meta = {.run_id = header(r, "X-Awooop-Run-Id")};
	if (meta.run_id && !aw_uuid_valid(meta.run_id))
		meta.run_id = NULL;
	char version[16] = "";
	int stateless = (m.version && !strcmp(m.version, AW_MCP_V_STATELESS)) ||
			(hv && !strcmp(hv, AW_MCP_V_STATELESS));
	if (m.kind == AW_MCP_REQUEST && m.version && !aw_mcp_version_supported(m.version)) {
		json_t *e = aw_rpc_error_json(m.id, AW_RPC_UNSUPPORTED_VERSION,
					      "unsupported protocol version",
					      aw_err_code(AW_E_MCP_PROTOCOL));
		json_object_set_new(json_object_get(json_object_get(e, "error"), "data"),
				    "supported", aw_mcp_versions_json(1));
		reply_rpc(r, 400, e);
		aw_mcp_msg_clear(&m);
		return;
	}
	if (stateless) {
		if (m.kind == AW_MCP_REQUEST &&
		    aw_mcp_check_headers(&m, hv, header(r, "Mcp-Method"), header(r, "Mcp-Name"),
					 &re)) {
			reply_error(r, 400, m.id, re.code, re.msg, AW_E_MCP_PROTOCOL);
			aw_mcp_msg_clear(&m);
			return;
		}
		AW_COPY_ARRAY(version, AW_MCP_V_STATELESS);
	} else if (hv && !aw_mcp_version_supported(hv)) {
		reply_error(r, 400, m.id, AW_RPC_UNSUPPORTED_VERSION,
			    "unsupported MCP-Protocol-Version", AW_E_MCP_PROTOCOL);
		aw_mcp_msg_clear(&m);
		return;
	} else if (!(m.method && !strcmp(m.method, "initialize"))) {
		const char *sid = header(r, "Mcp-Session-Id");
		aw_error err = {0};
		if (!sid) {
			reply_error(r, 400, m.id, AW_RPC_INVALID,
				    "send Mcp-Session-Id (from initialize), or speak 2026-07-28",
				    AW_E_MCP_SESSION);
			aw_mcp_msg_clear(&m);
			return;
		}
		if (aw_mcp_session_get(r->opts->mcp, &r->ctx, sid, version, &err)) {
			reply_error(r, 404, m.id, AW_RPC_INVALID, err.msg, AW_E_MCP_SESSION);
			aw_mcp_msg_clear(&m);
			return;
		}
		meta.session = sid;
	}
	meta.stateless = stateless;
	meta.version = version;
	meta.accept_sse = accept_sse(header(r, "Accept"));
	req_extend(r, 660);
	aw_mcp_call *c = NULL;
	aw_error err = {0};
	if (aw_mcp_start(r->opts->mcp, &r->ctx, &m, &meta, req_wake_cb, r, &c, &err)) {
		reply_error(r, 500, NULL, AW_RPC_INTERNAL, err.msg, AW_E_NOMEM);
		return;
	}
	req_bind_call(r, c, done, answer); /* a parked call keeps no body */
}

void h_mcp_get(aw_req *r)
{
	if (gate1(r))
		return;
	const char *sid = header(r, "Mcp-Session-Id");
	if (!sid || !accept_sse(header(r, "Accept"))) {
		req_header(r, "Allow", "POST, DELETE");
		reply_error(r, 405, NULL, AW_RPC_METHOD,
			    "GET opens a session's event stream: send Mcp-Session-Id and Accept: "
			    "text/event-stream",
			    AW_E_MCP_PROTOCOL);
		return;
	}
	aw_mcp_call *c = NULL;
	aw_error err = {0};
	if (aw_mcp_listen(r->opts->mcp, &r->ctx, sid, req_wake_cb, r, &c, &err)) {
		reply_error(r, err.err == AW_E_MCP_SESSION ? 404 : 500, NULL, AW_RPC_INVALID,
			    err.msg, err.err);
		return;
	}
	req_extend(r, 3600); /* a session's idle limit */
	req_endless(r);	     /* a shutdown ends it at once */
	r->svc = c;
	r->done = done;
	reply_call_stream(r, read_call);
}

void h_mcp_delete(aw_req *r)
{
	if (gate1(r))
		return;
	const char *sid = header(r, "Mcp-Session-Id");
	if (sid)
		aw_mcp_session_end(r->opts->mcp, &r->ctx, sid);
	reply_empty(r, 204);
}
