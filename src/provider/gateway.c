/*
 * gateway.c - the LLM gateway's life (see llm.h): its configuration, its
 * options and their defaults, the engine and recorder threads it starts,
 * its drain and its end. The rest of the door, a job a file: llm_call.c (a
 * call as its client sees it), route.c (routes, targets, their limits),
 * prompt.c (the prompt's bound), topology.c (the Ollama topology and the
 * emergency cap), admit.c (the budget's reservation), llm_inflight.c (the
 * projects in flight: bound, kill, renew, reap), llm_recorder.c (audit
 * records and settlements), engine.c (the transfers).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "awooop/alloc.h"
#include "awooop/json.h"
#include "awooop/secret.h"
#include "awooop/str.h"
#include "provider_internal.h"

/* ------------------------------------------------------------ configuration */

static const char *const provider_names[] = {"openai",	     "gemini", "anthropic",
					     "azure_openai", "ollama", NULL};

int llm_api_kind(const char *api)
{
	static const char *const kinds[] = {[API_OPENAI] = "openai",
					    [API_OLLAMA] = "ollama",
					    [API_ANTHROPIC] = "anthropic",
					    [API_AZURE] = "azure_openai"};
	for (int i = 0; i < (int)(sizeof kinds / sizeof kinds[0]); i++)
		if (!strcmp(api, kinds[i]))
			return i;
	return -1;
}

static int url_ok(const char *u)
{
	return u && (!strncmp(u, "http://", 7) || !strncmp(u, "https://", 8)) && strlen(u) < 256 &&
	       !strpbrk(u, " \t\r\n\"");
}

aw_err aw_llm_config_check(const json_t *config, aw_error *err)
{
	static const char *const top[] = {"providers", NULL};
	static const char *const fields[] = {"url", "api", "api_key", "api_version", NULL};
	if (!json_is_object(config))
		return aw_fail(err, AW_E_CONFIG, "the LLM configuration must be a JSON object");
	if (aw_json_only(config, top, err))
		return aw_fail(err, AW_E_CONFIG, "%s", err->msg);
	json_t *ps = json_object_get(config, "providers");
	if (ps && !json_is_object(ps))
		return aw_fail_at(err, AW_E_CONFIG, "/providers", "providers must be an object");
	const char *name;
	json_t *p;
	json_object_foreach (ps, name, p) {
		char where
			[160]; /* longer than aw_error.where: aw_fail_at shows it shortened with "..." */
		snprintf(where, sizeof where, "/providers/%s", name);
		int known = 0;
		for (int i = 0; provider_names[i]; i++)
			known |= !strcmp(name, provider_names[i]);
		if (!known)
			return aw_fail_at(err, AW_E_CONFIG, where,
					  "providers are openai, gemini, anthropic, azure_openai "
					  "and ollama");
		if (!json_is_object(p) || aw_json_only(p, fields, err))
			return aw_fail_at(err, AW_E_CONFIG, where,
					  "a provider is {\"url\", \"api\"?, \"api_key\"?, "
					  "\"api_version\"?}");
		if (!url_ok(json_string_value(json_object_get(p, "url"))))
			return aw_fail_at(err, AW_E_CONFIG, where, "url must be http(s)://...");
		const char *api = json_string_value(json_object_get(p, "api"));
		if (json_object_get(p, "api") && (!api || llm_api_kind(api) < 0))
			return aw_fail_at(err, AW_E_CONFIG, where,
					  "api must be openai, ollama, anthropic or azure_openai");
		json_t *av = json_object_get(p, "api_version");
		const char *avs = json_string_value(av);
		int azure = api && llm_api_kind(api) == API_AZURE;
		if ((av || azure) &&
		    (!azure || !avs || !*avs || strlen(avs) > 31 ||
		     strspn(avs, "0123456789abcdefghijklmnopqrstuvwxyz-") != strlen(avs)))
			return aw_fail_at(err, AW_E_CONFIG, where,
					  "api_version (e.g. 2024-10-21) is azure_openai's, and it "
					  "needs one");
		json_t *key = json_object_get(p, "api_key");
		if (key &&
		    (!json_is_string(key) || aw_secret_ref_check(json_string_value(key), err)))
			return aw_fail_at(err, AW_E_CONFIG, where,
					  "api_key must be a secret reference: env:NAME or "
					  "file:/path (never the key itself)");
	}
	return AW_OK;
}

/* ------------------------------------------------------------ life */

aw_err aw_llm_new(const aw_llm_opts *o, aw_llm **out, aw_error *err)
{
	*out = NULL;
	if (!o->store || !o->policy)
		return aw_fail(err, AW_E_CONFIG,
			       "the LLM gateway needs a store and a policy cache");
	if (o->config && aw_llm_config_check(o->config, err))
		return err->err;
	aw_llm *g = aw_calloc(1, sizeof *g);
	if (!g)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	if (AW_STR_COPY(g->contract_id, o->contract_id ? o->contract_id : "default") < 0) {
		free(g);
		return aw_fail(err, AW_E_CONFIG, "the LLM contract id is at most %d bytes",
			       AW_PROJECT_MAX);
	}
	g->o = *o;
	g->config = o->config ? json_deep_copy(o->config) : json_object();
	g->o.config = g->config;
	g->o.contract_id = g->contract_id;
#define DEF(f, v)        \
	if (g->o.f <= 0) \
		g->o.f = v;
	DEF(connect_timeout_ms, 3000)
	DEF(first_byte_ms, 60000)
	DEF(idle_ms, 30000)
	DEF(breaker_failures, 5)
	DEF(breaker_cooldown_ms, 10000)
	DEF(lease_ms, 660000)
#undef DEF
	if (o->schema_retries < 0 || o->schema_retries > 10)
		g->o.schema_retries = 3;
	aw_err be = aw_bounds_parse(o->project_inflight, 64, 1, 1000000, "--llm-project-inflight",
				    &g->per_project, err);
	if (!be)
		be = aw_bounds_parse(o->emergency_share, 50, 1, 100, "--llm-emergency-share",
				     &g->em_share, err);
	if (be) {
		json_decref(g->config);
		free(g);
		return be;
	}
	pthread_mutex_init(&g->mu, NULL);
	const char *name;
	json_t *p;
	json_object_foreach (json_object_get(g->config, "providers"), name, p) {
		const char *api = json_string_value(json_object_get(p, "api"));
		int kind = api			     ? llm_api_kind(api)
			   : !strcmp(name, "ollama") ? API_OLLAMA
						     : API_OPENAI;
		upstream *u =
			llm_upstream_new(name, kind, json_string_value(json_object_get(p, "url")),
					 json_string_value(json_object_get(p, "api_key")), NULL);
		/* aw_llm_config_check bounds api_version; one that does not fit is
		 * no provider rather than a cut query parameter */
		if (u && AW_STR_COPY(u->api_version,
				     json_string_value(json_object_get(p, "api_version"))) < 0) {
			llm_upstream_put(u);
			u = NULL;
		}
		if (u && g->nproviders < 8)
			g->providers[g->nproviders++] = u;
	}
	g->door = -1;
	aw_err e = AW_OK;
	if (!(g->calls = o->calls)) { /* a registry of its own */
		aw_calls_opts co = {.store = o->store,
				    .policy = o->policy,
				    .lease_ms = g->o.lease_ms,
				    .watch_idle_ms = o->watch_idle_ms,
				    .watch_bus_ms = o->watch_bus_ms};
		if (!(e = aw_calls_new(&co, &g->own_calls, err)))
			g->calls = g->own_calls;
	}
	if (!e && (g->door = aw_calls_door(g->calls, &llm_door)) < 0)
		e = aw_fail(err, AW_E_INTERNAL, "too many doors in the call registry");
	if (!e)
		e = llm_engine_start(g, err);
	/* a batch lingers 10 ms for the records of the calls ending with it
	 * (fewer, larger writes; on SQLite a write holds the one write lock the
	 * next call's admission needs) */
	aw_recorder_opts ro = {.thread = "aw-llm-audit",
			       .loop = "llm_recorder",
			       .linger_ms = 10,
			       .write = llm_record_write,
			       .ud = g};
	if (!e)
		e = aw_recorder_start(&ro, &g->rec, err);
	if (!e && aw_policy_on_platform_change(o->policy, llm_on_platform_change, g) != 0)
		e = aw_fail(err, AW_E_INTERNAL, "too many platform listeners");
	if (e) {
		aw_llm_stop(g);
		aw_llm_free(g);
		return e;
	}
	*out = g;
	return AW_OK;
}

void aw_llm_flush(aw_llm *g)
{
	while (aw_calls_busy(g->calls, g->door)) /* calls still in flight end first */
		usleep(5000);
	if (g->rec)
		aw_recorder_flush(g->rec);
}

void aw_llm_stop(aw_llm *g)
{
	if (!g)
		return;
	if (g->calls && g->door >= 0 && !g->door_off) {
		/* no cut runs after this; the calls still in flight leave
		 * through the same door number */
		aw_calls_door_off(g->calls, g->door);
		g->door_off = 1;
	}
	llm_engine_stop(g);	  /* sets stopping; ends every call */
	aw_recorder_stop(g->rec); /* writes what is queued first */
	g->rec = NULL;
}

void aw_llm_free(aw_llm *g)
{
	if (!g)
		return;
	if (g->o.policy)
		aw_policy_off(g->o.policy, llm_on_platform_change, g);
	for (int i = 0; i < g->nproviders; i++)
		llm_upstream_put(g->providers[i]);
	for (int i = 0; i < 3; i++)
		llm_upstream_put(g->topo[i]);
	llm_upstreams_free(g);
	json_decref(g->config);
	aw_calls_free(g->own_calls);
	free(g->em);
	pthread_mutex_destroy(&g->mu);
	free(g);
}
