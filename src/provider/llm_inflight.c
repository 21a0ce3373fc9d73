/*
 * llm_inflight.c - the LLM door in the process's call registry (call.h): a
 * call of a project enters it (bounded per project: one tenant's calls never
 * hold every shared connection) and leaves it; the door's cancel wakes the
 * engine, which ends the calls the registry cut (a suspended project's that
 * entered before the suspension was seen: budget line 3).
 */
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "provider_internal.h"

aw_err llm_inflight(aw_llm_call *c, int delta, long *held)
{
	aw_llm *g = c->g;
	long n = 0;
	if (delta > 0) {
		int rc = aw_calls_enter(g->calls, g->door, &c->base, c->ctx.project,
					aw_bounds_of(&g->per_project, c->ctx.project), &n);
		if (rc) {
			if (held)
				*held = n;
			return rc == 1	 ? AW_E_LLM_BUSY
			       : rc == 2 ? AW_E_LLM_UNAVAILABLE
					 : AW_E_NOMEM;
		}
	} else {
		aw_calls_leave(g->calls, &c->base, &n);
	}
	aw_metrics_llm_inflight(c->ctx.project, n);
	if (held)
		*held = n;
	return AW_OK;
}

int llm_test_watched(aw_llm *g)
{
	return aw_calls_watched(g->calls);
}

void aw_llm_kill(aw_llm *g, const char *project)
{
	aw_calls_kill(g->calls, project);
}

/* A call cut (base.cut is set): the engine looks at its calls. */
static void cancel(aw_call *b)
{
	aw_llm *g = ((aw_llm_call *)b)->g;
	atomic_fetch_add(&g->kill_gen, 1);
	if (g->multi)
		curl_multi_wakeup(g->multi);
}

const aw_door llm_door = {.name = "llm", .cancel = cancel};
