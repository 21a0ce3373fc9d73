/*
 * jsonrpc.c - the MCP message parser and the 2026-07-28 header checks (see
 * mcp_wire.h). Nothing here allocates beyond the parsed document.
 */
#include "awooop/mcp_wire.h"

#include <string.h>
#include <strings.h>

#include "awooop/json.h"
#include "awooop/str.h"

#define META_VERSION "io.modelcontextprotocol/protocolVersion"

static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", NULL};

int aw_mcp_version_supported(const char *v)
{
	if (!v)
		return 0;
	if (!strcmp(v, AW_MCP_V_STATELESS))
		return 1;
	for (int i = 0; versions[i]; i++)
		if (!strcmp(v, versions[i]))
			return 1;
	return 0;
}

json_t *aw_mcp_versions_json(int stateless)
{
	json_t *a = json_array();
	if (stateless)
		json_array_append_new(a, json_string(AW_MCP_V_STATELESS));
	for (int i = 0; versions[i] && !stateless; i++)
		json_array_append_new(a, json_string(versions[i]));
	return a;
}

static int fail(aw_rpc_error *e, int code, const char *msg)
{
	e->code = code;
	aw_str_show(e->msg, sizeof e->msg, msg); /* words for people */
	return -1;
}

void aw_mcp_msg_clear(aw_mcp_msg *m)
{
	json_decref(m->doc);
	memset(m, 0, sizeof *m);
}

int aw_mcp_parse(const char *body, size_t len, aw_mcp_msg *out, aw_rpc_error *rerr)
{
	memset(out, 0, sizeof *out);
	json_error_t je;
	/* the strict reader: no NUL, no duplicate members, one value */
	json_t *doc = aw_json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return fail(rerr, AW_RPC_PARSE, "the body is not JSON");
	out->doc = doc;
	if (json_is_array(doc))
		return fail(
			rerr, AW_RPC_INVALID,
			"JSON-RPC batches are not part of MCP (since 2025-06-18): one message per request");
	if (!json_is_object(doc))
		return fail(rerr, AW_RPC_INVALID, "a JSON-RPC message is an object");
	json_t *jr = json_object_get(doc, "jsonrpc");
	if (!json_is_string(jr) || strcmp(json_string_value(jr), "2.0"))
		return fail(rerr, AW_RPC_INVALID, "jsonrpc must be \"2.0\"");
	json_t *id = json_object_get(doc, "id");
	if (id && !json_is_string(id) && !json_is_integer(id))
		return fail(rerr, AW_RPC_INVALID, "id must be a string or an integer");
	if (id && json_is_string(id) && json_string_length(id) > 256)
		return fail(rerr, AW_RPC_INVALID, "id longer than 256 bytes");
	json_t *method = json_object_get(doc, "method");
	if (!method) {
		if (!id || (!json_object_get(doc, "result") && !json_object_get(doc, "error")))
			return fail(rerr, AW_RPC_INVALID, "neither a request nor a response");
		out->kind = AW_MCP_RESPONSE;
		out->id = id;
		return 0;
	}
	if (!json_is_string(method) || !json_string_length(method) ||
	    json_string_length(method) > 128)
		return fail(rerr, AW_RPC_INVALID, "method must be a string of 1-128 bytes");
	json_t *params = json_object_get(doc, "params");
	if (params && !json_is_object(params))
		return fail(rerr, AW_RPC_INVALID, "params must be an object");
	out->kind = id ? AW_MCP_REQUEST : AW_MCP_NOTIFICATION;
	out->id = id;
	out->method = json_string_value(method);
	out->params = params;
	json_t *meta = json_object_get(params, "_meta");
	if (meta && !json_is_object(meta))
		return fail(rerr, AW_RPC_PARAMS, "params._meta must be an object");
	json_t *v = json_object_get(meta, META_VERSION);
	if (v && !json_is_string(v))
		return fail(rerr, AW_RPC_PARAMS, META_VERSION " must be a string");
	out->version = json_string_value(v);
	const char *field =
		!strcmp(out->method, "resources/read")					    ? "uri"
		: !strcmp(out->method, "tools/call") || !strcmp(out->method, "prompts/get") ? "name"
											    : NULL;
	if (field) {
		json_t *n = json_object_get(params, field);
		if (!json_is_string(n))
			return fail(rerr, AW_RPC_PARAMS,
				    field[0] == 'u' ? "params.uri must be a string"
						    : "params.name must be a string");
		out->name = json_string_value(n);
	}
	return 0;
}

static int b64val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

int aw_mcp_header_value(const char *v, char *out, size_t cap)
{
	size_t n = strlen(v);
	if (n >= 11 && !strncmp(v, "=?base64?", 9) && !strcmp(v + n - 2, "?=")) {
		const char *p = v + 9, *end = v + n - 2;
		size_t o = 0;
		unsigned acc = 0;
		int bits = 0, pad = 0;
		for (; p < end; p++) {
			if (*p == '=') {
				pad++;
				continue;
			}
			int d = b64val(*p);
			if (d < 0 || pad)
				return -1;
			acc = (acc << 6) | (unsigned)d;
			if ((bits += 6) >= 8) {
				bits -= 8;
				if (o + 1 >= cap)
					return -1;
				out[o++] = (char)((acc >> bits) & 0xff);
			}
		}
		if (pad > 2 || memchr(out, 0, o))
			return -1;
		out[o] = 0;
		return 0;
	}
	for (const char *s = v; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return -1;
	if (n >= cap)
		return -1;
	memcpy(out, v, n + 1);
	return 0;
}

int aw_mcp_check_headers(const aw_mcp_msg *m, const char *proto, const char *method,
			 const char *name, aw_rpc_error *rerr)
{
	if (!proto || !method)
		return fail(rerr, AW_RPC_HEADER_MISMATCH,
			    "MCP-Protocol-Version and Mcp-Method headers are required");
	if (!m->version || strcmp(proto, m->version))
		return fail(rerr, AW_RPC_HEADER_MISMATCH,
			    "Header mismatch: MCP-Protocol-Version does not match params._meta");
	if (!m->method || strcmp(method, m->method))
		return fail(rerr, AW_RPC_HEADER_MISMATCH,
			    "Header mismatch: Mcp-Method does not match the body's method");
	if (m->name) {
		char dec[4096];
		if (!name)
			return fail(
				rerr, AW_RPC_HEADER_MISMATCH,
				"Mcp-Name is required for tools/call, resources/read and prompts/get");
		if (aw_mcp_header_value(name, dec, sizeof dec) || strcmp(dec, m->name))
			return fail(rerr, AW_RPC_HEADER_MISMATCH,
				    "Header mismatch: Mcp-Name does not match the body");
	}
	return 0;
}

json_t *aw_rpc_error_json(const json_t *id, int code, const char *msg, const char *stable)
{
	json_t *e = json_pack("{s:i,s:s}", "code", code, "message", msg);
	if (stable)
		json_object_set_new(e, "data", json_pack("{s:s}", "code", stable));
	return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error",
			 e);
}

json_t *aw_rpc_result_json(const json_t *id, json_t *result)
{
	return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "result",
			 result);
}

int aw_mcp_origin_allowed(const char *origin, const char *allow)
{
	if (!origin)
		return 1;
	size_t on = strlen(origin);
	if (allow && *allow) {
		for (const char *p = allow; *p;) {
			const char *e = strchr(p, ',');
			size_t n = e ? (size_t)(e - p) : strlen(p);
			while (n && *p == ' ')
				p++, n--;
			while (n && p[n - 1] == ' ')
				n--;
			if (n && n == on && !strncasecmp(p, origin, n))
				return 1;
			if (!e)
				break;
			p = e + 1;
		}
		return 0;
	}
	const char *h = !strncasecmp(origin, "http://", 7)    ? origin + 7
			: !strncasecmp(origin, "https://", 8) ? origin + 8
							      : NULL;
	if (!h)
		return 0;
	size_t hl = strcspn(h, ":/");
	if (h[0] == '[') /* an IPv6 literal: only [::1] */
		return !strncmp(h, "[::1]", 5) && (h[5] == 0 || h[5] == ':');
	if (h[hl] == '/' || (h[hl] == ':' && (!h[hl + 1] || strspn(h + hl + 1, "0123456789") !=
								    strlen(h + hl + 1))))
		return 0; /* an origin has no path; a port is digits */
	if (hl == 9 && !strncasecmp(h, "localhost", 9))
		return 1;
	if (hl < 9 || hl > 15 || strncmp(h, "127.", 4))
		return 0;
	int dots = 0;
	for (size_t i = 0; i < hl; i++) {
		if (h[i] == '.')
			dots++;
		else if (h[i] < '0' || h[i] > '9')
			return 0;
	}
	return dots == 3;
}
