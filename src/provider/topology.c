/*
 * topology.c - the platform's Ollama topology (D5: primary, secondary and
 * fallback hosts, each an upstream with its own pool, replaced when the
 * active revision changes) and its emergency cloud model, whose calls
 * count against a daily cap and, per project, against the project's share
 * of it (in process, or in Redis across processes).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "awooop/alloc.h"
#include "awooop/clock.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/str.h"
#include "provider_hooks.h"
#include "provider_internal.h"

static _Atomic int day_shift; /* provider_hooks.h */

void llm_test_shift_days(int days)
{
	atomic_store(&day_shift, days);
}

/* The UTC day the cap counts in: the counter's key changes at midnight.
 * *end_ms: the day's end on the wall clock (the metric's expiry). */
static void utc_date(char out[16], int64_t *end_ms)
{
	int64_t shift = (int64_t)atomic_load(&day_shift) * 86400;
	time_t now = (time_t)(aw_clock_wall_ms() / 1000 + shift);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(out, 16, "%Y-%m-%d", &tm);
	*end_ms = ((int64_t)now / 86400 + 1 - shift / 86400) * 86400 * 1000;
}

/* The project's share of the day's cap (at least 1 when the cap is set). */
static long share_of(aw_llm *g, const char *project, long cap)
{
	long pct = aw_bounds_of(&g->em_share, project);
	long n = cap * pct / 100;
	return cap > 0 && n < 1 ? 1 : n;
}

/* In process: one more of project's emergency calls today, under its share
 * (holds g->mu; the day's table is cleared at midnight with the count). */
static int em_take(aw_llm *g, const char *project, long share)
{
	struct llm_em *x = NULL;
	for (int i = 0; i < g->nem && !x; i++)
		if (!strcmp(g->em[i].project, project))
			x = &g->em[i];
	if (!x) {
		struct llm_em *n = aw_realloc(g->em, (size_t)(g->nem + 1) * sizeof *n);
		if (!n)
			return 0;
		g->em = n;
		x = &g->em[g->nem];
		if (AW_STR_COPY(x->project, project) < 0) /* a ctx's project fits */
			return 0;
		g->nem++;
		x->count = 0;
	}
	return x->count++ < share;
}

/* One unit of the day's emergency cap for a call of project: within the
 * project's share (--llm-emergency-share, percent of the cap: one tenant's
 * upstream failures never spend every other tenant's fallback) and within
 * the platform's total. 0 when either is spent. */
int llm_cap_take(aw_llm *g, const char *project)
{
	char date[16];
	int64_t day_end = 0;
	utc_date(date, &day_end);
	pthread_mutex_lock(&g->mu);
	long cap = g->emergency_cap, share = share_of(g, project, cap);
	if (!g->o.kv) {
		if (strcmp(date, g->cap_date)) {
			AW_COPY_ARRAY(g->cap_date, date);
			g->cap_count = 0;
			g->nem = 0;
		}
		int ok = em_take(g, project, share) && g->cap_count < cap;
		g->cap_count += ok;
		if (cap > 0)
			aw_metrics_llm_emergency((double)g->cap_count, (double)cap, day_end);
		pthread_mutex_unlock(&g->mu);
		return ok;
	}
	pthread_mutex_unlock(&g->mu);
	/* INCRBY answers each caller a distinct count: exactly the share (then
	 * the cap) of them are at or under it, whatever the concurrency, in
	 * every process. The project's own count first: a project past its
	 * share never touches the platform's. */
	const char *vals[] = {date};
	long long n = 0;
	aw_error err = {0};
	aw_ctx pctx;
	aw_ctx_system(&pctx, project);
	if (aw_kv_incr(g->o.kv, &pctx, "llm_emergency", vals, 1, 1, &n, &err)) {
		aw_log(AW_LOG_WARN, &pctx, "llm emergency share unreadable: refused", "detail",
		       err.msg, NULL);
		return 0; /* fails closed */
	}
	if (n == 1)
		aw_kv_expire(g->o.kv, &pctx, "llm_emergency", vals, 1, 2 * 86400, &err);
	if (n > share)
		return 0;
	aw_ctx ctx;
	aw_ctx_system(&ctx, AW_PLATFORM_PROJECT);
	if (aw_kv_incr(g->o.kv, &ctx, "gemini_daily_count", vals, 1, 1, &n, &err)) {
		aw_log(AW_LOG_WARN, NULL, "llm emergency cap unreadable: refused", "detail",
		       err.msg, NULL);
		return 0; /* fails closed */
	}
	if (n == 1)
		aw_kv_expire(g->o.kv, &ctx, "gemini_daily_count", vals, 1, 2 * 86400, &err);
	if (cap > 0) /* granted: the count past the cap was refused */
		aw_metrics_llm_emergency((double)(n < cap ? n : cap), (double)cap, day_end);
	return n <= cap;
}

void llm_on_platform_change(void *ud, const char *project, const char *family,
			    const char *contract_id, const char *revision_id, const char *source)
{
	(void)project, (void)family, (void)revision_id;
	aw_llm *g = ud;
	if (!strcmp(contract_id, AW_UPSTREAMS_CONTRACT)) {
		llm_upstreams_changed(g, source);
		return;
	}
	if (strcmp(contract_id, AW_TOPOLOGY_CONTRACT))
		return;
	pthread_mutex_lock(&g->mu);
	g->topo_dirty = 1;
	pthread_mutex_unlock(&g->mu);
	aw_log(AW_LOG_INFO, NULL, "llm ollama topology changed: pools reset", "source", source,
	       NULL);
}

/* Caller holds g->mu. Replaces the topology upstreams (and so their pools). */
static void topo_install(aw_llm *g, const aw_policy *pol)
{
	static const char *const roles[] = {"primary", "secondary", "fallback"};
	for (int i = 0; i < 3; i++) {
		llm_upstream_put(g->topo[i]);
		g->topo[i] = NULL;
		json_t *ep = pol ? json_object_get(pol->body, roles[i]) : NULL;
		const char *url = json_string_value(json_object_get(ep, "url"));
		if (!url)
			continue;
		char name[48];
		snprintf(name, sizeof name, "ollama-%s", roles[i]);
		upstream *u = llm_upstream_new(name, API_OLLAMA, url, NULL, NULL);
		if (!u)
			continue;
		u->timeout_ms = (int)json_number_value(json_object_get(ep, "timeout_ms"));
		json_t *models = json_object_get(ep, "models"); /* the cache's: copied */
		u->models = json_array_size(models) ? json_deep_copy(models) : NULL;
		g->topo[i] = u;
	}
	json_t *em = pol ? json_object_get(pol->body, "emergency_cloud") : NULL;
	/* the schema counts the model's characters, not its bytes: a model name
	 * that does not fit leaves no emergency cloud, never a cut (other) model */
	if (AW_STR_COPY(g->emergency_provider, json_string_value(json_object_get(em, "provider"))) <
		    0 ||
	    AW_STR_COPY(g->emergency_model, json_string_value(json_object_get(em, "model"))) < 0) {
		AW_COPY_ARRAY(g->emergency_provider, "");
		AW_COPY_ARRAY(g->emergency_model, "");
		aw_log(AW_LOG_WARN, NULL,
		       "llm emergency cloud provider or model name too long: none used", NULL);
	}
	g->emergency_cap = (long)json_number_value(json_object_get(em, "daily_cap"));
	AW_COPY_ARRAY(g->topo_rev, "");
	if (pol)
		AW_COPY_ARRAY(g->topo_rev, pol->revision_id);
	g->topo_dirty = 0;
	aw_metrics_llm_event("pool_reset", "ollama");
}

/* Brings the topology up to the active revision (a cached read). */
void llm_topo_refresh(aw_llm *g, const aw_ctx *ctx)
{
	aw_ctx pc;
	aw_ctx_with_project(ctx, AW_PLATFORM_PROJECT, &pc);
	aw_policy pol = {0};
	aw_error err = {0};
	aw_err e = aw_policy_effective(g->o.policy, &pc, "platform_resource", AW_TOPOLOGY_CONTRACT,
				       &pol, &err);
	const char *rev = e ? "" : pol.revision_id;
	pthread_mutex_lock(&g->mu);
	if (e == AW_OK || e == AW_E_CONTRACT_NOT_FOUND) {
		if (g->topo_dirty || strcmp(rev, g->topo_rev))
			topo_install(g, e ? NULL : &pol);
	}
	pthread_mutex_unlock(&g->mu);
	aw_policy_release(&pol);
}
