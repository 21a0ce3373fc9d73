/*
 * mcp_wire.h - MCP messages as they arrive over Streamable HTTP: one JSON-RPC
 * 2.0 object per POST (batches left MCP in 2025-06-18), its protocol version,
 * and the 2026-07-28 routing headers checked against the body. Pure
 * functions on outside input (fuzz/fuzz_mcp_message.c, fuzz_mcp_headers.c).
 *
 * Protocol generations: the legacy one (2025-11-25 and earlier: initialize,
 * Mcp-Session-Id) and the stateless one (2026-07-28: the version in every
 * request's params._meta, server/discover, Mcp-Method / Mcp-Name headers).
 */
#ifndef AWOOOP_MCP_WIRE_H
#define AWOOOP_MCP_WIRE_H

#include <jansson.h>
#include <stddef.h>

#include "awooop/err.h"

#define AW_MCP_V_STATELESS "2026-07-28"
#define AW_MCP_V_LEGACY "2025-11-25" /* the newest legacy version */
/* JSON-RPC error codes */
#define AW_RPC_PARSE (-32700)
#define AW_RPC_INVALID (-32600)
#define AW_RPC_METHOD (-32601)
#define AW_RPC_PARAMS (-32602)
#define AW_RPC_INTERNAL (-32603)
#define AW_RPC_HEADER_MISMATCH (-32020)
#define AW_RPC_UNSUPPORTED_VERSION (-32022)
#define AW_RPC_GATE (-32050) /* awooop's gates: data.code says which */

typedef enum { AW_MCP_REQUEST = 0, AW_MCP_NOTIFICATION, AW_MCP_RESPONSE } aw_mcp_kind;

typedef struct {
	aw_mcp_kind kind;
	json_t *doc;	     /* the whole message (owned) */
	json_t *id;	     /* borrowed; NULL for a notification */
	const char *method;  /* borrowed; NULL for a response */
	json_t *params;	     /* borrowed; NULL when absent */
	const char *version; /* params._meta["io.modelcontextprotocol/protocolVersion"] */
	const char *name;    /* params.name (tools/call, prompts/get) or params.uri
				(resources/read); NULL otherwise */
} aw_mcp_msg;

typedef struct {
	int code; /* JSON-RPC error code */
	char msg[200];
} aw_rpc_error;

/* Parses one message. On failure *rerr says what to answer (with id null). */
int aw_mcp_parse(const char *body, size_t len, aw_mcp_msg *out, aw_rpc_error *rerr);
void aw_mcp_msg_clear(aw_mcp_msg *m);
/* 1 when v is a protocol version this gateway speaks. */
int aw_mcp_version_supported(const char *v);
/* The legacy versions, newest first, as a JSON array (new reference). */
json_t *aw_mcp_versions_json(int stateless);
/* 2026-07-28: MCP-Protocol-Version, Mcp-Method and Mcp-Name (Base64 sentinel
 * "=?base64?...?=" decoded) against the body. 0, or -1 with *rerr (-32020). */
int aw_mcp_check_headers(const aw_mcp_msg *m, const char *proto, const char *method,
			 const char *name, aw_rpc_error *rerr);
/* 1 when a request with this Origin header may reach the endpoint (DNS
 * rebinding: a browser page on another site must not): no Origin (not a
 * browser), an origin listed in allow (','-separated, exact, case-blind), or
 * with allow NULL or empty an http(s) origin whose host is loopback
 * (localhost, 127.0.0.0/8, [::1]). "null" and anything malformed: 0. */
int aw_mcp_origin_allowed(const char *origin, const char *allow);
/* Decodes an Mcp-Name value into out (cap bytes); -1 when malformed. */
int aw_mcp_header_value(const char *v, char *out, size_t cap);

/* A JSON-RPC error response (new reference). id borrowed (NULL -> null);
 * stable: the awooop code for data.code (NULL: none). */
json_t *aw_rpc_error_json(const json_t *id, int code, const char *msg, const char *stable);
json_t *aw_rpc_result_json(const json_t *id, json_t *result); /* steals result */

#endif
