/*
 * fuzz_mcp_message.c - the MCP/JSON-RPC message parser on arbitrary bytes,
 * and the tenant secret reference check on the same bytes. An accepted
 * message must be an object with jsonrpc "2.0", its method (when any) a
 * string of 1-128 bytes, its params (when any) an object, and for
 * tools/call, prompts/get and resources/read a name; a refusal must carry
 * a JSON-RPC error code. An accepted tenant reference never names an
 * absolute path nor a ".." segment.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/mcp_wire.h"
#include "awooop/secret.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	aw_mcp_msg m;
	aw_rpc_error re;
	if (aw_mcp_parse((const char *)data, size, &m, &re) == 0) {
		if (!json_is_object(m.doc))
			abort();
		if (m.kind != AW_MCP_RESPONSE &&
		    (!m.method || !*m.method || strlen(m.method) > 128))
			abort();
		if (m.params && !json_is_object(m.params))
			abort();
		if (m.method &&
		    (!strcmp(m.method, "tools/call") || !strcmp(m.method, "prompts/get") ||
		     !strcmp(m.method, "resources/read")) &&
		    !m.name)
			abort();
		if ((m.kind == AW_MCP_NOTIFICATION) != (m.id == NULL && m.method != NULL))
			abort();
	} else if (re.code >= -32000 || re.code < -32768) {
		abort();
	}
	aw_mcp_msg_clear(&m);
	char ref[600];
	if (size < sizeof ref) {
		memcpy(ref, data, size);
		ref[size] = 0;
		if (aw_secret_tenant_check(ref, NULL) == AW_OK) {
			if (!strncmp(ref, "file:", 5) &&
			    (ref[5] == '/' || strstr(ref, "/../") || !strncmp(ref + 5, "../", 3) ||
			     (strlen(ref) >= 3 && !strcmp(ref + strlen(ref) - 3, "/..")) ||
			     !strcmp(ref + 5, "..")))
				abort();
			char var[256];
			if (!strncmp(ref, "env:", 4) &&
			    aw_secret_tenant_env_name("proj-x_y", ref + 4, var, sizeof var) == 0 &&
			    strncmp(var, "AWOOOP_T_PROJ_HX_UY__", 21))
				abort();
		}
	}
	return 0;
}
