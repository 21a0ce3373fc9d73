/*
 * upstreams.c - named upstreams (issue 43 item 1). The platform's come from
 * the active platform_resource llm_upstreams revision of __platform__ (the
 * policy cache delivers a new one to every process; the next call reads
 * it), a project's own from its policy_routing revision's upstreams[] (its
 * credential resolved in the project's secret namespace, its address under
 * the egress rules, used by that project only). A candidate's provider
 * names one: the project's own first, then the platform's contract, then
 * the gateway's --llm-config providers (the start-time defaults the
 * contract overrides per name).
 *
 * Pools: an upstream is kept, with its connection pool and breaker, while
 * the next revision defines it the same (same definition text); a changed
 * one gets a new upstream (a new pool), a removed one is dropped (calls in
 * flight hold their reference to the end).
 */
#include <stdio.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/contract.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/str.h"
#include "provider_internal.h"

/* the projects whose own upstreams are kept here at once (the oldest
 * read is dropped past it: its next call builds them again) */
#define OWN_MAX 1024

upstream *llm_upstream_of(const json_t *def, const char *project)
{
	const char *api = json_string_value(json_object_get(def, "api"));
	int kind = api && !strcmp(api, "gemini") ? API_OPENAI : api ? llm_api_kind(api) : -1;
	const char *name = json_string_value(json_object_get(def, "name"));
	const char *url = json_string_value(json_object_get(def, "url"));
	if (kind < 0 || !name || !url)
		return NULL;
	upstream *u = llm_upstream_new(name, kind, url,
				       json_string_value(json_object_get(def, "api_key")), project);
	if (u && AW_STR_COPY(u->api_version, /* the schema: at most 31 */
			     json_string_value(json_object_get(def, "api_version"))) < 0) {
		llm_upstream_put(u);
		return NULL;
	}
	if (!u)
		return NULL;
	u->timeout_ms = (int)json_number_value(json_object_get(def, "timeout_ms"));
	u->max_conc = (int)json_number_value(json_object_get(def, "max_concurrency"));
	u->def = json_dumps(def, JSON_COMPACT | JSON_SORT_KEYS);
	return u;
}

/* The upstreams of defs, each the same upstream as in old when defined the
 * same (its pool kept; taken out of old), else a new one. reset: called
 * with each name whose pool is new while old had that name. */
static upstream **rebuild(const json_t *defs, const char *project, upstream **old, int nold, int *n,
			  void (*reset)(const char *project, const char *name))
{
	size_t cnt = json_array_size(defs), i;
	upstream **out = cnt ? aw_calloc(cnt, sizeof *out) : NULL;
	*n = 0;
	if (cnt && !out)
		return NULL;
	json_t *d;
	json_array_foreach (defs, i, d) {
		char *text = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
		const char *name = json_string_value(json_object_get(d, "name"));
		upstream *u = NULL;
		int had = 0;
		for (int k = 0; k < nold && text && name; k++) {
			if (!old[k] || strcmp(old[k]->name, name))
				continue;
			had = 1;
			if (old[k]->def && !strcmp(old[k]->def, text)) {
				u = old[k];
				old[k] = NULL;
			}
		}
		free(text);
		if (!u && (u = llm_upstream_of(d, project)) && had && reset)
			reset(project, name);
		if (u)
			out[(*n)++] = u;
	}
	return out;
}

static void put_all(upstream **u, int n)
{
	for (int i = 0; i < n; i++)
		llm_upstream_put(u[i]);
	free(u);
}

static void platform_reset(const char *project, const char *name)
{
	(void)project;
	aw_metrics_llm_event("pool_reset", name);
	aw_log(AW_LOG_INFO, NULL, "llm upstream redefined: its pool reset", "upstream", name, NULL);
}

static void own_reset(const char *project, const char *name)
{
	aw_ctx ctx;
	aw_ctx_system(&ctx, project);
	aw_log(AW_LOG_INFO, &ctx, "llm project upstream redefined: its pool reset", "upstream",
	       name, NULL);
}

void llm_upstreams_changed(aw_llm *g, const char *source)
{
	pthread_mutex_lock(&g->mu);
	g->plat_dirty = 1;
	pthread_mutex_unlock(&g->mu);
	aw_log(AW_LOG_INFO, NULL, "llm upstreams changed", "source", source, NULL);
}

/* Caller holds g->mu. */
static void plat_install(aw_llm *g, const aw_policy *pol)
{
	int n = 0;
	upstream **next = rebuild(pol ? json_object_get(pol->body, "upstreams") : NULL, NULL,
				  g->plat, g->nplat, &n, platform_reset);
	put_all(g->plat, g->nplat); /* the removed and the redefined */
	g->plat = next;
	g->nplat = next ? n : 0;
	AW_COPY_ARRAY(g->plat_rev, "");
	if (pol)
		AW_COPY_ARRAY(g->plat_rev, pol->revision_id);
	g->plat_dirty = 0;
	g->plat_read = 1;
}

/* Caller holds g->mu. */
static void own_install(aw_llm *g, const char *project, const json_t *body, const char *rev)
{
	struct llm_own *o = NULL;
	for (int i = 0; i < g->nown && !o; i++)
		if (!strcmp(g->own[i].project, project))
			o = &g->own[i];
	if (o && !strcmp(o->rev, rev))
		return;
	const json_t *defs = json_object_get(body, "upstreams");
	if (!o && !json_array_size(defs))
		return; /* none, and none before */
	if (!o) {
		if (g->nown >= OWN_MAX) { /* the oldest goes */
			put_all(g->own[0].u, g->own[0].n);
			memmove(&g->own[0], &g->own[1], (size_t)(g->nown - 1) * sizeof g->own[0]);
			g->nown--;
		}
		struct llm_own *m = aw_realloc(g->own, (size_t)(g->nown + 1) * sizeof *m);
		if (!m)
			return;
		g->own = m;
		o = &g->own[g->nown];
		memset(o, 0, sizeof *o);
		if (AW_STR_COPY(o->project, project) < 0) /* a ctx's project fits */
			return;
		g->nown++;
	}
	int n = 0;
	upstream **next = rebuild(defs, project, o->u, o->n, &n, own_reset);
	put_all(o->u, o->n);
	o->u = next;
	o->n = next ? n : 0;
	(void)!AW_STR_COPY(o->rev, rev); /* a revision id fits; "" is read again */
}

void llm_upstreams_refresh(aw_llm *g, const aw_ctx *ctx, const json_t *body, const char *rev)
{
	aw_ctx pc;
	aw_ctx_with_project(ctx, AW_PLATFORM_PROJECT, &pc);
	aw_policy pol = {0};
	aw_error err = {0};
	aw_err e = aw_policy_effective(g->o.policy, &pc, "platform_resource", AW_UPSTREAMS_CONTRACT,
				       &pol, &err);
	const char *prev = e ? "" : pol.revision_id;
	pthread_mutex_lock(&g->mu);
	if ((e == AW_OK || e == AW_E_CONTRACT_NOT_FOUND) &&
	    (g->plat_dirty || !g->plat_read || strcmp(prev, g->plat_rev)))
		plat_install(g, e ? NULL : &pol);
	if (body && rev)
		own_install(g, ctx->project, body, rev);
	pthread_mutex_unlock(&g->mu);
	if (e && e != AW_E_CONTRACT_NOT_FOUND)
		aw_log(AW_LOG_WARN, NULL, "llm upstreams unreadable: the last ones kept", "detail",
		       err.msg, NULL);
	aw_policy_release(&pol);
}

upstream *llm_upstream_named(aw_llm *g, const char *project, const char *name)
{
	for (int i = 0; project && i < g->nown; i++)
		if (!strcmp(g->own[i].project, project))
			for (int k = 0; k < g->own[i].n; k++)
				if (!strcmp(g->own[i].u[k]->name, name))
					return g->own[i].u[k];
	for (int i = 0; i < g->nplat; i++)
		if (!strcmp(g->plat[i]->name, name))
			return g->plat[i];
	for (int i = 0; i < g->nproviders; i++)
		if (!strcmp(g->providers[i]->name, name))
			return g->providers[i];
	return NULL;
}

void llm_upstreams_free(aw_llm *g)
{
	put_all(g->plat, g->nplat);
	g->plat = NULL;
	g->nplat = 0;
	for (int i = 0; i < g->nown; i++)
		put_all(g->own[i].u, g->own[i].n);
	free(g->own);
	g->own = NULL;
	g->nown = 0;
}
