/*
 * mcp_names.c - what the mcp_tool family's JSON Schema cannot say: upstreams
 * of the right shape for their transport, tenant-scoped secret references,
 * tools of declared upstreams, and federated names (tool__provider, or the
 * bare tool name when a single-upstream project opts out of the suffix)
 * that OpenAI function calling accepts (^[A-Za-z0-9._-]{1,128}$, at most 64
 * characters) and that no two tools share. Checked when a revision is
 * written, so a collision never reaches publish.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "awooop/contract.h"
#include "awooop/schema.h"
#include "awooop/secret.h"
#include "awooop/str.h"

int aw_mcp_tool_name(const char *tool, const char *provider, int suffix, char *out, size_t cap)
{
	if (!suffix)
		return strlen(tool) > AW_MCP_NAME_MAX ? -1 : aw_str_copy(out, cap, tool);
	int n = snprintf(out, cap, "%s__%s", tool, provider);
	return n < 0 || (size_t)n >= cap || n > AW_MCP_NAME_MAX ? -1 : 0;
}

static aw_err check_secret(const json_t *s, const char *ptr, aw_error *err)
{
	aw_error se;
	if (json_is_object(s) &&
	    aw_secret_tenant_check(json_string_value(json_object_get(s, "secret")), &se))
		return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, ptr, "%s: %s", ptr, se.msg);
	return AW_OK;
}

static aw_err check_upstream(const char *name, const json_t *u, aw_error *err)
{
	char ptr[128];
	int stdio = !strcmp(json_string_value(json_object_get(u, "transport")), "stdio");
	const char *want = stdio ? "command" : "url";
	const char *other[] = {stdio ? "url" : "command", stdio ? "headers" : "env"};
	if (!json_object_get(u, want)) {
		snprintf(ptr, sizeof ptr, "/upstreams/%s/%s", name, want);
		return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, ptr, "%s is required for transport %s",
				  ptr, stdio ? "stdio" : "http");
	}
	for (int i = 0; i < 2; i++)
		if (json_object_get(u, other[i])) {
			snprintf(ptr, sizeof ptr, "/upstreams/%s/%s", name, other[i]);
			return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, ptr,
					  "%s does not apply to transport %s", ptr,
					  stdio ? "stdio" : "http");
		}
	const char *cmd0 = json_string_value(json_array_get(json_object_get(u, "command"), 0));
	if (stdio && (!cmd0 || cmd0[0] != '/')) {
		snprintf(ptr, sizeof ptr, "/upstreams/%s/command/0", name);
		return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, ptr,
				  "%s must be an absolute path to the program", ptr);
	}
	const char *k;
	json_t *v;
	aw_err e = AW_OK;
	json_object_foreach ((json_t *)json_object_get(u, stdio ? "env" : "headers"), k, v) {
		snprintf(ptr, sizeof ptr, "/upstreams/%s/%s/%.60s/secret", name,
			 stdio ? "env" : "headers", k);
		if (!e)
			e = check_secret(v, ptr, err);
	}
	return e;
}

aw_err aw_contract_mcp_check(const json_t *body, aw_error *err)
{
	char ptr[96], why[160];
	json_t *ups = json_object_get(body, "upstreams"), *tools = json_object_get(body, "tools");
	const char *k;
	json_t *v;
	json_object_foreach (ups, k, v) {
		aw_err e = check_upstream(k, v, err);
		if (e)
			return e;
	}
	int suffix = !json_is_false(json_object_get(body, "suffix"));
	if (!suffix && json_object_size(ups) != 1)
		return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, "/suffix",
				  "/suffix false needs exactly one upstream (names would collide)");
	size_t n = json_array_size(tools);
	for (size_t i = 0; i < n; i++) {
		json_t *t = json_array_get(tools, i);
		const char *name = json_string_value(json_object_get(t, "name"));
		const char *prov = json_string_value(json_object_get(t, "provider"));
		if (!json_object_get(ups, prov)) {
			snprintf(ptr, sizeof ptr, "/tools/%zu/provider", i);
			return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, ptr,
					  "%s names no upstream of /upstreams", ptr);
		}
		json_t *as = json_object_get(t, "args_schema");
		snprintf(ptr, sizeof ptr, "/tools/%zu/args_schema", i);
		if (as && !aw_schema_supported(as, why, sizeof why))
			return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, ptr, "%s: %s", ptr, why);
		char full[AW_MCP_NAME_MAX + 1], other[AW_MCP_NAME_MAX + 1];
		snprintf(ptr, sizeof ptr, "/tools/%zu/name", i);
		if (aw_mcp_tool_name(name, prov, suffix, full, sizeof full))
			return aw_fail_at(
				err, AW_E_CONTRACT_SCHEMA, ptr,
				"%s: the federated name %s%s%s is longer than %d characters", ptr,
				name, suffix ? "__" : "", suffix ? prov : "", AW_MCP_NAME_MAX);
		for (size_t j = 0; j < i; j++) {
			json_t *u = json_array_get(tools, j);
			aw_mcp_tool_name(json_string_value(json_object_get(u, "name")),
					 json_string_value(json_object_get(u, "provider")), suffix,
					 other, sizeof other);
			if (!strcmp(full, other))
				return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, ptr,
						  "%s: the federated name %s is /tools/%zu's too",
						  ptr, full, j);
		}
	}
	return AW_OK;
}
