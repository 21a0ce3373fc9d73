/*
 * node.c - the composition root of `awooop serve` (node.h): the parts a
 * role runs, wired in dependency order and stopped in reverse.
 */
#include "node.h"

#include <stdio.h>
#include <string.h>

#include "awooop/agent.h"
#include "awooop/egress.h"
#include "awooop/executor.h"
#include "awooop/log.h"
#include "awooop/secret.h"
#include "awooop/tenancy.h"
#include "cli.h"

/* The store, its platform project and first key, and the publish keys: what
 * every role needs before anything else. */
static aw_err start_base(node_cfg *c, node *n, aw_error *err)
{
	aw_err e = aw_store_open(c->db, &c->store, &n->store, err);
	if (!e)
		e = aw_store_check_schema(n->store, err);
	char printed[AW_KEY_SECRET_LEN + 1] = "";
	const char *bootstrap = NULL;
	if (!e && !(e = aw_secret_env("AWOOOP_BOOTSTRAP_KEY", &bootstrap, err)))
		e = aw_tenancy_bootstrap(n->store, bootstrap, printed, err);
	if (!e && printed[0]) {
		printf("awooop: bootstrap platform-admin API key (shown once, store it now):\n%s\n",
		       printed);
		fflush(stdout);
		memset(printed, 0, sizeof printed);
	}
	if (!e)
		e = cli_keyring("publish", c->db, c->publish_keys, 1, &n->keys, err);
	if (!e)
		e = aw_contracts_new(n->keys, &n->contracts, err);
	if (!e)
		e = aw_egress_grant(c->egress_private, err);
	if (!e)
		e = aw_run_secrets_dir(c->secrets_dir, err);
	return e;
}

/* The policy cache and what stands on it: the fleet report, the Redis key
 * wrapper, the call registry, the LLM gateway and approvals (API, workers
 * and hub: every role but the relay). */
static aw_err start_gateways(node_cfg *c, node *n, aw_error *err)
{
	aw_err e = aw_policy_cache_new(n->store, n->contracts, n->bus, &c->policy, &n->policy, err);
	c->fleet.store = n->store;
	c->fleet.policy = n->policy;
	if (!e)
		e = aw_fleet_start(&c->fleet, &n->fleet, err);
	if (!e && c->redis)
		e = aw_kv_open(c->redis, n->store, NULL, &n->kv, err);
	/* the calls in flight of both gateways: one registry */
	aw_calls_opts co = {.store = n->store, .policy = n->policy, .lease_ms = c->llm.lease_ms};
	if (!e)
		e = aw_calls_new(&co, &n->calls, err);
	c->llm.store = n->store;
	c->llm.config = c->llm_config;
	c->llm.policy = n->policy;
	c->llm.kv = n->kv;
	c->llm.calls = n->calls;
	if (!e && !(e = aw_llm_new(&c->llm, &n->llm, err)))
		aw_llm_register_executor(n->llm);
	/* approvals: API (tokens, decisions) and workers (the step kind) */
	c->approvals.store = n->store;
	c->approvals.contracts = n->contracts;
	c->approvals.kv = n->kv;
	if (!e)
		e = cli_keyring("approval", c->db, c->approval_keys, 1, &n->approval_keys, err);
	if (!e && !(e = aw_approvals_new(&c->approvals, n->approval_keys, &n->approvals, err)))
		aw_approvals_register_executor(n->approvals);
	return e;
}

aw_err node_start(node_cfg *c, node *n, aw_error *err)
{
	memset(n, 0, sizeof *n);
	aw_err e = start_base(c, n, err);
	/* traces: before anything that makes spans, stopped after all of them */
	if (!e)
		e = aw_otel_start(&c->otel, err);
	/* one bus: the relay publishes on it, the policy cache listens (in the
	 * embedded shape it is the in-process bus, so both must share it) */
	if (!e)
		e = aw_bus_open(c->redis ? c->redis : "local", &n->bus, err);
	/* every role redacts (logs, audit): the projects' custom patterns are
	 * in force before the first request, and followed from then on */
	if (!e)
		e = aw_redaction_poller_start(n->store, c->redaction_poll_ms, &n->redaction, err);
	if (!e && c->roles != NODE_RELAY)
		e = start_gateways(c, n, err);
	/* the MCP gateway: the API's endpoint, and the workers' tool steps */
	if (!e && (c->roles & (NODE_API | NODE_WORKER))) {
		c->mcp.store = n->store;
		c->mcp.policy = n->policy;
		c->mcp.kv = n->kv;
		c->mcp.calls = n->calls;
		if (!(e = aw_mcp_new(&c->mcp, &n->mcp, err)))
			aw_mcp_register_executor(n->mcp, n->approvals);
		if (!e && n->llm) /* the agent step loops over both gateways */
			aw_agent_register_executor(n->llm, n->mcp, n->approvals);
	}
	/* the channel hub's environment: the hub (roles all, hub) and webhooks (API) */
	c->hub.store = n->store;
	c->hub.policy = n->policy;
	c->hub.kv = n->kv;
	c->hub.approvals = n->approvals;
	c->hub.secrets_dir = c->secrets_dir;
	if (!e && (c->roles & NODE_API)) {
		c->http.contracts = n->contracts;
		c->http.llm = n->llm;
		c->http.mcp = n->mcp;
		c->http.calls = n->calls;
		c->http.approvals = n->approvals;
		c->http.kv = n->kv;
		c->http.channels = n->policy ? &c->hub : NULL;
		c->http.policy = n->policy;
		c->http.redis_url = c->redis;
		e = aw_http_start(&c->http, n->store, &n->http, err);
	}
	/* The outbox relay publishes to Redis in the cluster shape, to the
	 * in-process bus in the embedded one. */
	if (!e && (c->roles & NODE_RELAY))
		e = aw_relay_start(n->store, n->bus, &c->relay, &n->relay, err);
	if (!e && (c->roles & NODE_WORKER))
		e = aw_worker_start(n->store, &c->worker, &n->worker, err);
	if (!e && (c->roles & NODE_HUB) && c->channels)
		e = aw_hub_start(&c->hub, &n->hub, err);
	return e;
}

void node_stop(node *n, int drain_ms)
{
	/* no new connections or requests, event streams end; the requests in
	 * flight get drain_ms from here, while the hub stops, then are cut */
	aw_http_quiesce(n->http);
	aw_hub_stop(n->hub); /* hands the channel lease over */
	aw_http_drain(n->http, drain_ms);
	aw_llm_stop(n->llm);	   /* ends model calls still in flight */
	aw_mcp_stop(n->mcp);	   /* answers the tool calls in flight first */
	aw_http_stop(n->http);	   /* closes what is left: nothing stays suspended */
	aw_worker_stop(n->worker); /* finishes the round in flight, re-queues the rest */
	aw_relay_stop(n->relay);
	aw_llm_free(n->llm);
	aw_mcp_free(n->mcp);
	aw_calls_free(n->calls); /* both doors have left */
	aw_otel_stop();		 /* the last spans get a last try */
	if (n->approvals)	 /* the ring in use (serve.c keeps the ones SIGHUP replaced) */
		n->approval_keys = (aw_keyring *)aw_approvals_set_keyring(n->approvals, NULL);
	aw_approvals_free(n->approvals);
	aw_kv_close(n->kv);
	aw_fleet_stop(n->fleet); /* its rows deleted: it serves nothing any more */
	aw_policy_cache_free(n->policy);
	aw_bus_close(n->bus);
	aw_redaction_poller_stop(n->redaction);
	if (n->contracts)
		n->keys = (aw_keyring *)aw_contracts_set_keyring(n->contracts, NULL);
	aw_contracts_free(n->contracts);
	aw_keyring_free(n->keys);
	aw_keyring_free(n->approval_keys);
	aw_store_close(n->store);
	memset(n, 0, sizeof *n);
}
