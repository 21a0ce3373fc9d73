/*
 * node.h - the composition root of `awooop serve`: which parts a role runs,
 * started in dependency order (store, keys, traces, bus, redaction, policy
 * cache, fleet, cache, call registry, LLM gateway, approvals, MCP gateway,
 * API, relay, workers, hub) and stopped in the reverse order of what they
 * depend on. serve.c reads the options into a node_cfg and owns the signals;
 * this file only wires.
 */
#ifndef AW_NODE_H
#define AW_NODE_H

#include <jansson.h>

#include "awooop/approval.h"
#include "awooop/call.h"
#include "awooop/channel.h"
#include "awooop/contract.h"
#include "awooop/fleet.h"
#include "awooop/http.h"
#include "awooop/kv.h"
#include "awooop/llm.h"
#include "awooop/mcp.h"
#include "awooop/otel.h"
#include "awooop/policy.h"
#include "awooop/redaction.h"
#include "awooop/relay.h"
#include "awooop/worker.h"

/* What a role runs (--role all is every part). */
enum { NODE_API = 1, NODE_RELAY = 2, NODE_WORKER = 4, NODE_HUB = 8, NODE_ALL = 15 };

/* The parts' settings, filled by serve.c from the options. The pointers
 * between parts (store, policy, kv, calls...) are set by node_start. */
typedef struct {
	int roles;		  /* NODE_* bits */
	const char *role;	  /* the --role text, for logs, traces and the fleet */
	const char *db;		  /* the store URL */
	const char *redis;	  /* the cluster shape's Redis URL, or NULL */
	const char *secrets_dir;  /* tenants' file: secret references, or NULL */
	const char *publish_keys; /* key files (NULL: the embedded default) */
	const char *approval_keys;
	const char *egress_private; /* --egress-allow-private */
	int channels;		    /* run the hub where the role has it */
	int redaction_poll_ms;
	int drain_ms;	    /* what node_stop gives requests in flight */
	json_t *llm_config; /* borrowed: the caller frees it after node_stop */
	aw_store_opts store;
	aw_otel_opts otel;
	aw_policy_opts policy;
	aw_fleet_opts fleet;
	aw_llm_opts llm;
	aw_approvals_opts approvals;
	aw_mcp_opts mcp;
	aw_hub_opts hub;
	aw_http_opts http;
	aw_relay_opts relay;
	aw_worker_opts worker;
} node_cfg;

/* A started process's parts (NULL: not run by its role, or not started). */
typedef struct {
	aw_store *store;
	aw_keyring *keys, *approval_keys;
	aw_contracts *contracts;
	aw_bus *bus;
	aw_redaction_poller *redaction;
	aw_policy_cache *policy;
	aw_fleet *fleet;
	aw_kv *kv;
	aw_calls *calls;
	aw_llm *llm;
	aw_approvals *approvals;
	aw_mcp *mcp;
	aw_http *http;
	aw_relay *relay;
	aw_worker *worker;
	aw_hub *hub;
} node;

/* Starts c's parts into *n (zeroed first); prints a new bootstrap
 * platform-admin key once. On failure *n holds what started: node_stop it. */
aw_err node_start(node_cfg *c, node *n, aw_error *err);
/* Stops and frees every part: new requests stop, those in flight get
 * drain_ms, the gateways end their calls, workers re-queue what they hold. */
void node_stop(node *n, int drain_ms);

#endif
