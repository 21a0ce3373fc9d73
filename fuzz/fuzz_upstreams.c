/*
 * fuzz_upstreams.c - named LLM upstreams as an operator or a tenant could
 * submit them: the body of a platform_resource llm_upstreams revision and of
 * a policy_routing revision with its own upstreams[], through the contract
 * validator, then (accepted) every upstream built as the gateway builds it.
 * Checks: no crash; an accepted body's upstreams have unique names of at
 * most 40 characters, none "ollama", a known wire kind, an http(s) URL, and
 * a credential that is a reference (the platform's env:/file:/, a tenant's
 * env:/file:relative) - never a literal key; the built upstream keeps the
 * name and the reference and knows whose it is.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/contract.h"
#include "awooop/secret.h"
#include "provider/provider_internal.h"

static void check_upstreams(const json_t *ups, const char *project)
{
	size_t i, k;
	json_t *u, *o;
	aw_error err = {0};
	json_array_foreach (ups, i, u) {
		const char *name = json_string_value(json_object_get(u, "name"));
		const char *url = json_string_value(json_object_get(u, "url"));
		const char *key = json_string_value(json_object_get(u, "api_key"));
		if (!name || strlen(name) > 40 || !strcmp(name, "ollama") || !url ||
		    (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))
			abort();
		json_array_foreach (ups, k, o)
			if (k < i && !strcmp(json_string_value(json_object_get(o, "name")), name))
				abort();
		if (key &&
		    (project ? aw_secret_tenant_check(key, &err) : aw_secret_ref_check(key, &err)))
			abort();
		upstream *b = llm_upstream_of(u, project);
		if (!b || strcmp(b->name, name) || strcmp(b->key_ref, key ? key : "") ||
		    strcmp(b->project, project ? project : "") || !b->def)
			abort();
		llm_upstream_put(b);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static aw_contracts *c;
	aw_error err = {0};
	if (!c && aw_contracts_new(NULL, &c, &err))
		abort();
	json_error_t je;
	json_t *body = json_loadb((const char *)data, size, 0, &je);
	if (!body)
		return 0;
	if (aw_contract_validate(c, AW_PLATFORM_PROJECT, "platform_resource", AW_UPSTREAMS_CONTRACT,
				 body, &err) == AW_OK)
		check_upstreams(json_object_get(body, "upstreams"), NULL);
	if (aw_contract_validate(c, "fuzz", "policy_routing", "default", body, &err) == AW_OK)
		check_upstreams(json_object_get(body, "upstreams"), "fuzz");
	json_decref(body);
	return 0;
}
