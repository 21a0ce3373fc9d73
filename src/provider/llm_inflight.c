/*
 * llm_inflight.c - the projects this process serves model calls for: each one's
 * calls in flight (bounded per project), the kill (line 3: a suspended
 * project's calls that started before the suspension was seen are cut,
 * here and, announced on the bus, in every other process), and the watcher
 * the recorder thread runs (suspensions read from the store, this
 * process's reservations renewed, a dead holder's reaped, an idle project
 * forgotten).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/clock.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "provider_hooks.h"
#include "provider_internal.h"

/* Caller holds g->mu. The index of project's entry, or -(where it goes) - 1. */
static int proj_find(const aw_llm *g, const char *project)
{
	int lo = 0, hi = g->nprojs;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2, cmp = strcmp(g->projs[mid].project, project);
		if (!cmp)
			return mid;
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -lo - 1;
}

/* Caller holds g->mu. project's entry, added when absent (NULL: out of
 * memory). */
static struct llm_proj *proj_get(aw_llm *g, const char *project)
{
	int i = proj_find(g, project);
	if (i >= 0)
		return &g->projs[i];
	i = -i - 1;
	if (g->nprojs == g->projs_cap) {
		int cap = g->projs_cap ? g->projs_cap * 2 : 16;
		struct llm_proj *p = realloc(g->projs, (size_t)cap * sizeof *p);
		if (!p)
			return NULL;
		g->projs = p;
		g->projs_cap = cap;
	}
	memmove(&g->projs[i + 1], &g->projs[i], (size_t)(g->nprojs - i) * sizeof *g->projs);
	g->nprojs++;
	memset(&g->projs[i], 0, sizeof g->projs[i]);
	snprintf(g->projs[i].project, sizeof g->projs[i].project, "%s", project);
	return &g->projs[i];
}

/* A call of project starts (+1) or ends (-1). A start is refused when the
 * project has its bound of calls in flight here (AW_E_LLM_BUSY, *held says
 * how many: one tenant's calls never hold every shared connection) or
 * cannot be watched (AW_E_NOMEM). The entry stays while the project has
 * calls, and until the watcher finds nothing of it to reap (proj_drop). */
aw_err llm_inflight(aw_llm *g, const char *project, int delta, long *held)
{
	long bound = delta > 0 ? aw_bounds_of(&g->per_project, project) : 0;
	pthread_mutex_lock(&g->mu);
	struct llm_proj *p = delta > 0 ? proj_get(g, project) : NULL;
	if (delta <= 0) {
		int i = proj_find(g, project);
		p = i >= 0 ? &g->projs[i] : NULL;
	}
	aw_err e = p || delta <= 0 ? AW_OK : AW_E_NOMEM;
	if (p && bound && delta > 0 && p->calls >= bound)
		e = AW_E_LLM_BUSY;
	else if (p && !(p->calls += delta))
		p->idle_ns = aw_clock_mono_ns();
	if (p)
		aw_metrics_llm_inflight(project, p->calls);
	if (held)
		*held = p ? p->calls : 0;
	pthread_mutex_unlock(&g->mu);
	return e;
}

/* The watcher found no reservation of project open: its entry goes once
 * it has been without calls here for watch_idle_ms (unless a call started
 * meanwhile). */
static void proj_drop(aw_llm *g, const char *project)
{
	pthread_mutex_lock(&g->mu);
	int i = proj_find(g, project);
	if (i >= 0 && !g->projs[i].calls &&
	    aw_clock_mono_ns() - g->projs[i].idle_ns >= (int64_t)g->o.watch_idle_ms * 1000000LL) {
		memmove(&g->projs[i], &g->projs[i + 1],
			(size_t)(g->nprojs - i - 1) * sizeof *g->projs);
		g->nprojs--;
	}
	pthread_mutex_unlock(&g->mu);
}

int llm_killed(aw_llm *g, const char *project, int64_t t0_ns)
{
	pthread_mutex_lock(&g->mu);
	int i = proj_find(g, project);
	int k = i >= 0 && g->projs[i].kill_ns && t0_ns < g->projs[i].kill_ns;
	pthread_mutex_unlock(&g->mu);
	return k;
}

int aw_llm_test_watched(aw_llm *g)
{
	pthread_mutex_lock(&g->mu);
	int n = g->nprojs;
	pthread_mutex_unlock(&g->mu);
	return n;
}

void aw_llm_kill(aw_llm *g, const char *project, int64_t seen_ns)
{
	int local = !seen_ns; /* suspended here: announced to the other processes */
	if (local)
		seen_ns = aw_clock_mono_ns();
	pthread_mutex_lock(&g->mu);
	int i = proj_find(g, project); /* no entry: no call of it in flight here */
	if (i >= 0 && seen_ns > g->projs[i].kill_ns)
		g->projs[i].kill_ns = seen_ns;
	pthread_mutex_unlock(&g->mu);
	atomic_fetch_add(&g->kill_gen, 1);
	if (g->multi)
		curl_multi_wakeup(g->multi);
	aw_log(AW_LOG_WARN, NULL, "llm calls of a suspended project cut", "project", project, NULL);
	aw_error err = {0};
	if (local && aw_policy_announce_kill(g->o.policy, project, &err)) /* other processes */
		aw_log(AW_LOG_WARN, NULL, "suspension not announced on the bus (others poll)",
		       "project", project, "detail", err.msg, NULL);
}

/* The bus thread, under the cache's lock: the recorder watches at once. */
void llm_on_kill(void *ud, const char *project)
{
	aw_llm *g = ud;
	(void)project;
	atomic_store(&g->check_now, 1);
	pthread_mutex_lock(&g->rmu);
	pthread_cond_signal(&g->rcv);
	pthread_mutex_unlock(&g->rmu);
}

/* Every WATCH_MS (WATCH_BUS_MS while another process's suspension arrives
 * over a connected Redis bus, and at once when one does): the projects with
 * calls in flight that another process (or an operator) suspended get their
 * calls cut here too (line 3 within 1 s);
 * every lease/4, this process's reservations are renewed (a live call is
 * never reaped) and those of the projects it served whose holder died are
 * reaped; a project without calls here for watch_idle_ms and with no
 * reservation left open is no longer watched. */

void llm_watch(aw_llm *g, int reap)
{
	char(*projects)[AW_PROJECT_MAX + 1] = NULL;
	int *busy = NULL, n = 0, listed;
	pthread_mutex_lock(&g->mu);
	listed = g->nprojs;
	if (listed) {
		projects = malloc((size_t)g->nprojs * sizeof *projects);
		busy = malloc((size_t)g->nprojs * sizeof *busy);
	}
	for (int i = 0; projects && busy && i < g->nprojs; i++)
		if (g->projs[i].calls || reap) {
			busy[n] = g->projs[i].calls > 0;
			snprintf(projects[n++], sizeof projects[0], "%s", g->projs[i].project);
		}
	pthread_mutex_unlock(&g->mu);
	if (listed && (!projects || !busy)) /* the next tick tries again */
		aw_log(AW_LOG_ERROR, NULL, "llm watcher: out of memory", NULL);
	for (int i = 0; i < n; i++) {
		aw_ctx ctx;
		aw_ctx_system(&ctx, projects[i]);
		aw_error err = {0};
		int suspended = 0, reaped = 0;
		long long open = -1;
		/* taken before the read: a call started after it was admitted
		 * after a resume the read may not have seen */
		int64_t seen = aw_clock_mono_ns();
		if (aw_budget_suspended(g->o.store, &ctx, &suspended, &err) == AW_OK && suspended)
			aw_llm_kill(g, projects[i], seen);
		if (reap && busy[i]) /* the heartbeat of this process's reservations */
			aw_budget_renew(g->o.store, &ctx, g->holder, g->o.lease_ms, &err);
		if (reap && aw_budget_reap(g->o.store, &ctx, &reaped, &err) == AW_OK && reaped) {
			char count[16];
			snprintf(count, sizeof count, "%d", reaped);
			aw_metrics_llm_event("reaped", projects[i]);
			aw_log(AW_LOG_WARN, &ctx, "budget reservations of a dead holder reaped",
			       "count", count, NULL);
		}
		if (reap && !busy[i] && aw_budget_open(g->o.store, &ctx, &open, &err) == AW_OK &&
		    !open)
			proj_drop(g, projects[i]);
	}
	free(projects);
	free(busy);
}
