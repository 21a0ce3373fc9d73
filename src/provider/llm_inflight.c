/*
 * llm_inflight.c - the LLM door in the process's call registry (call.h): a
 * call of a project enters it (bounded per project: one tenant's calls never
 * hold every shared connection) and leaves it; the registry's cut hook wakes
 * the engine, which ends the calls of a suspended project that started
 * before the suspension was seen (line 3).
 */
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "provider_internal.h"

aw_err llm_inflight(aw_llm *g, const char *project, int delta, long *held)
{
	long n = 0;
	if (delta > 0) {
		int rc = aw_calls_enter(g->calls, g->door, project,
					aw_bounds_of(&g->per_project, project), &n);
		if (rc) {
			if (held)
				*held = n;
			return rc > 0 ? AW_E_LLM_BUSY : AW_E_NOMEM;
		}
	} else {
		aw_calls_leave(g->calls, g->door, project, &n);
	}
	aw_metrics_llm_inflight(project, n);
	if (held)
		*held = n;
	return AW_OK;
}

int llm_killed(aw_llm *g, const char *project, int64_t t0_ns)
{
	return aw_calls_killed(g->calls, project, t0_ns);
}

int llm_test_watched(aw_llm *g)
{
	return aw_calls_watched(g->calls);
}

void aw_llm_kill(aw_llm *g, const char *project)
{
	aw_calls_kill(g->calls, project);
}

void llm_cut(void *ud, const char *project, int64_t seen_ns)
{
	aw_llm *g = ud;
	(void)seen_ns; /* the engine asks llm_killed of each call */
	atomic_fetch_add(&g->kill_gen, 1);
	if (g->multi)
		curl_multi_wakeup(g->multi);
	aw_log(AW_LOG_WARN, NULL, "llm calls of a suspended project cut", "project", project, NULL);
}
