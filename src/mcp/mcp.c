/*
 * mcp.c - the MCP gateway's life (see mcp.h): its options and their
 * defaults, the stdio sandbox policy, the fair queue and its worker threads,
 * the recorder thread; stopping (no new work, the workers drain) and freeing
 * what it holds. The files it is made of are listed in mcp_gateway.h.
 */
#include "mcp_gateway.h"

#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/redact.h"
#include "awooop/str.h"

int aw_mcp_sandbox_probe(char *why, size_t n)
{
	return sbx_probe(why, n);
}

aw_err aw_mcp_new(const aw_mcp_opts *o, aw_mcp **out, aw_error *err)
{
	aw_mcp *g = aw_calloc(1, sizeof *g);
	if (!g)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	g->o = *o;
	aw_sbx_opts so = {.spec = o->stdio_allow,
			  .network = o->stdio_network,
			  .uid = o->sandbox_uid > 0 ? o->sandbox_uid : -1,
			  .pids = o->stdio_pids,
			  .cpu_s = o->stdio_cpu_s};
	aw_err pe = sbx_policy_parse(&so, &g->sbx, err);
	if (pe) {
		free(g);
		return pe;
	}
	if (g->o.workers <= 0)
		g->o.workers = 32;
	if (g->o.timeout_ms <= 0)
		g->o.timeout_ms = 30000;
	if (g->o.timeout_max_ms <= 0)
		g->o.timeout_max_ms = 120000;
	if (g->o.timeout_ms > g->o.timeout_max_ms)
		g->o.timeout_ms = g->o.timeout_max_ms;
	if (g->o.defs_ttl_ms <= 0)
		g->o.defs_ttl_ms = 5000;
	if (AW_STR_COPY(g->contract_id, o->contract_id ? o->contract_id : "default") < 0) {
		free(g);
		return aw_fail(err, AW_E_CONFIG, "the MCP contract id is at most %zu bytes",
			       sizeof g->contract_id - 1);
	}
	g->secrets_dir = o->secrets_dir ? aw_strdup(o->secrets_dir) : NULL;
	pthread_mutex_init(&g->mu, NULL);
	pthread_mutex_init(&g->dmu, NULL);
	/* a project runs at most a quarter of the workers at once, unless the
	 * platform says otherwise per project */
	long share = g->o.workers >= 4 ? g->o.workers / 4 : 1;
	aw_err e = aw_bounds_parse(o->project_workers, share, 1, g->o.workers,
				   "--mcp-project-workers", &g->per_project, err);
	if (!e && !(g->fq = fairq_new(g->o.workers, &g->per_project,
				      o->max_queued > 0 ? o->max_queued : 1024)))
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	if (!e)
		e = aw_redact_init(err);
	if (!e && !(g->calls = o->calls)) {
		aw_calls_opts co = {.store = o->store, .policy = o->policy};
		if (!(e = aw_calls_new(&co, &g->own_calls, err)))
			g->calls = g->own_calls;
	}
	g->door = -1;
	if (!e && (g->door = aw_calls_door(g->calls, &mcp_door)) < 0)
		e = aw_fail(err, AW_E_INTERNAL, "too many doors in the call registry");
	if (!e && aw_policy_on_change(o->policy, mcp_on_change, g) != 0)
		e = aw_fail(err, AW_E_INTERNAL, "too many policy listeners");
	if (!e && !(g->workers = aw_calloc((size_t)g->o.workers, sizeof *g->workers)))
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	for (int i = 0; !e && i < g->o.workers; i++) {
		if (pthread_create(&g->workers[i], NULL, mcp_worker_main, g) != 0)
			e = aw_fail(err, AW_E_INTERNAL, "cannot start MCP worker threads");
		else
			g->nworkers++;
	}
	aw_recorder_opts ro = {.thread = "aw-mcp-audit",
			       .loop = "mcp_recorder",
			       .linger_ms = 5,
			       .write = mcp_record_write,
			       .chores = mcp_record_chores,
			       .ud = g};
	if (!e)
		e = aw_recorder_start(&ro, &g->rec, err);
	if (e) {
		aw_mcp_free(g);
		return e;
	}
	*out = g;
	return AW_OK;
}

void aw_mcp_stop(aw_mcp *g)
{
	if (!g || atomic_exchange(&g->stopping, 1))
		return;
	aw_policy_off(g->o.policy, mcp_on_change, g);
	if (g->calls)
		aw_calls_door_off(g->calls, g->door); /* no cut runs after this */
	if (g->fq)
		fairq_stop(g->fq);
	for (int i = 0; i < g->nworkers; i++)
		pthread_join(g->workers[i], NULL);
	g->nworkers = 0;
}

void aw_mcp_free(aw_mcp *g)
{
	if (!g)
		return;
	aw_mcp_stop(g);
	free(g->workers);
	fairq_free(g->fq);
	aw_recorder_stop(g->rec); /* writes what is left, frees the dropped catalogs */
	mcp_record_chores(g);
	while (g->catalogs) {
		catalog *c = g->catalogs;
		g->catalogs = c->next;
		mcp_catalog_put(c);
	}
	while (g->sessions) {
		msession *s = g->sessions;
		g->sessions = s->next;
		mcp_session_free(s);
	}
	free(g->secrets_dir);
	aw_calls_free(g->own_calls);
	sbx_policy_free(g->sbx);
	pthread_mutex_destroy(&g->dmu);
	free(g);
}
