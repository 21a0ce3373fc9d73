/*
 * llm.h - the LLM gateway (provider proxy): every model call of every tenant
 * passes here, from the OpenAI-compatible HTTP endpoint or from a run's `llm`
 * step. One call:
 *
 *   guard: the active policy_routing revision of the caller's project
 *   (aw_policy_effective) -> route by model alias, task or model -> targets
 *   (provider upstreams from the gateway configuration; "ollama" expands to
 *   the __platform__ ollama_topology hosts, then its emergency cloud model
 *   under a daily cap) -> upstream call with failover (connect error, 5xx,
 *   429, timeout before the first byte; never after a byte reached the
 *   client) and a circuit breaker per upstream -> structured output checked
 *   against the request's JSON Schema with retries -> one audit record with
 *   the envelope (project, principal, run/step, trace, revision id and body
 *   hash, upstream, model, tokens, latency, outcome).
 *
 * All upstream I/O runs on one engine thread (libcurl multi; a connection
 * pool per upstream in a curl share handle; a topology activation replaces
 * the Ollama pools). Callers are never blocked by it: aw_llm_start returns at
 * once, and the caller reads the outcome with aw_llm_head / aw_llm_read,
 * parking (e.g. suspending an HTTP connection) until wake(ud) is called.
 * Audit records are written by a recorder thread in batches.
 *
 * Credentials are secret references (env:NAME, file:PATH) resolved when a
 * request is sent and wiped after; they never reach a log, an answer or an
 * audit record.
 */
#ifndef AWOOOP_LLM_H
#define AWOOOP_LLM_H

#include <jansson.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "awooop/call.h"
#include "awooop/kv.h"
#include "awooop/policy.h"
#include "awooop/tenancy.h"

typedef struct aw_llm aw_llm;
typedef struct aw_llm_call aw_llm_call;

typedef struct {
	aw_store *store;	      /* audit records; borrowed */
	aw_policy_cache *policy;      /* the per-call guard; borrowed */
	aw_kv *kv;		      /* the emergency cap counter in Redis; NULL: in-process */
	const json_t *config;	      /* {"providers": {...}} (aw_llm_config_check); copied */
	const char *contract_id;      /* the policy_routing contract; default "default" */
	int connect_timeout_ms;	      /* default 3000 */
	int first_byte_ms;	      /* before the first byte; default 60000 (a candidate's
				    timeout_ms may shorten it, never lengthen it) */
	int idle_ms;		      /* between bytes of a stream; default 30000 */
	int breaker_failures;	      /* consecutive failures that open it; default 5 */
	int breaker_cooldown_ms;      /* open -> half-open; default 10000 */
	int schema_retries;	      /* default 3 (the policy's limits.schema_retries wins) */
	int lease_ms;		      /* a budget reservation outlives a dead holder this long;
				    default 660000 (the longest call + a minute) */
	const char *project_inflight; /* calls (streams included) one project may have in
					 flight here: "N" or "N,project=M,..." (bounds.h);
					 NULL: 64, a quarter of an upstream host's 256
					 connections; past it: 429 E-LLM-009 */
	const char *emergency_share;  /* the percent of the emergency model's daily cap one
					project may use: "N" or "N,project=M,..."
					(bounds.h); NULL: 50 */
	aw_calls *calls;	      /* the process's call registry (call.h), shared with the
				 MCP door: it watches the projects of the calls in
				 flight; NULL: one of its own, made with lease_ms,
				 watch_idle_ms and watch_bus_ms */
	int watch_idle_ms;	      /* a project without calls here stays watched (its
				    suspension, the reservations of another process
				    that may die) this long after its last call here,
				    and while any reservation of it is open; default
				    10 x lease_ms */
	const char *secrets_dir;      /* the tenants' file: secrets (<dir>/<project>/PATH) of
				 their own upstreams' keys; NULL: env: only */
	int watch_bus_ms;	      /* while suspensions of other processes arrive over a
				    connected Redis bus, the store is read for them
				    this often as a fallback (else every 500 ms);
				    default 5000 */
} aw_llm_opts;

/* Checks a gateway configuration document:
 *   {"providers": {"<openai|gemini|anthropic|azure_openai|ollama>":
 *       {"url": "http(s)://...", "api": "openai"|"ollama", "api_key"?: "env:X"}}}
 * AW_E_CONFIG with a pointer. */
aw_err aw_llm_config_check(const json_t *config, aw_error *err);

aw_err aw_llm_new(const aw_llm_opts *o, aw_llm **out, aw_error *err);
/* Waits until no call is in flight and every finished call's audit record
 * and budget settlement is written (a drain; tests). */
void aw_llm_flush(aw_llm *g);
/* Ends every call in flight (their clients are woken with an error) and stops
 * the threads; aw_llm_free afterwards. */
void aw_llm_stop(aw_llm *g);
void aw_llm_free(aw_llm *g);

typedef struct {
	const char *run_id; /* when called from a run step */
	int step_no;
	const char *task; /* routes by match.task / match.intent */
	/* the calling key's limits (a virtual key: allowed models, requests
	 * and tokens per minute, its budget, its team and user; copied), or
	 * NULL: none (a run step's calls) */
	const aw_key_limits *key;
	int embeddings;	 /* req is an embeddings request (POST /v1/embeddings) */
	const char *api; /* the front door, for the audit record: "messages",
			     "responses" (decoded into a chat request); NULL: the
			     request's own ("chat.completions" or "embeddings") */
	/* 1: req is handed over - the caller's only reference, taken by
	 * aw_llm_start (kept by the call or freed, whatever it returns) instead
	 * of copied; the caller no longer touches req */
	int req_handed;
} aw_llm_meta;

typedef void (*aw_llm_wake)(void *ud);
typedef void (*aw_llm_park)(void *ud);

/* Starts a call for ctx->project. A request refused before any upstream is
 * tried (bad body, no active policy, no route) returns the error at once.
 * req is copied, or taken when meta->req_handed. */
aw_err aw_llm_start(aw_llm *g, const aw_ctx *ctx, const json_t *req, const aw_llm_meta *meta,
		    aw_llm_wake wake, void *ud, aw_llm_call **out, aw_error *err);

typedef enum {
	AW_LLM_WAIT = 0, /* parked: park(pud) was called; wake(ud) follows */
	AW_LLM_ANSWER,	 /* *body: the whole answer (malloc'd JSON), status 200 */
	AW_LLM_STREAM,	 /* read the SSE bytes with aw_llm_read */
	AW_LLM_FAILED,	 /* err says why */
} aw_llm_state;
aw_llm_state aw_llm_head(aw_llm_call *c, aw_llm_park park, void *pud, char **body, aw_error *err);
/* Once aw_llm_head said ANSWER or STREAM: the policy's route that served
 * the call, and the upstream model answering it (the x-awooop-route and
 * x-awooop-upstream-model headers). "" when not known. */
void aw_llm_call_said(aw_llm_call *c, char *route, size_t rcap, char *model, size_t mcap);
/* Stream bytes: > 0 copied, 0 parked (park(pud) called), -1 the end. */
ssize_t aw_llm_read(aw_llm_call *c, char *buf, size_t max, aw_llm_park park, void *pud);
/* The caller is done with the call (or its client went away: the upstream
 * transfer is cancelled). c is not used afterwards. */
void aw_llm_release(aw_llm_call *c);

/* A whole call, waiting for it (run steps, the CLI's tests). *resp: the
 * chat.completion (new reference); the request may not stream. */
aw_err aw_llm_complete(aw_llm *g, const aw_ctx *ctx, const json_t *req, const aw_llm_meta *meta,
		       json_t **resp, aw_error *err);

/* The models ctx->project may call: route names and candidate models of its
 * active policy, as an OpenAI model list. */
aw_err aw_llm_models(aw_llm *g, const aw_ctx *ctx, json_t **out, aw_error *err);

/* Budget line 3 by hand: g's call registry cuts every call of project in
 * flight in this process, of every door (a stream gets a last SSE event
 * E-BUDGET-001), and announces it to the others (aw_calls_kill). */
void aw_llm_kill(aw_llm *g, const char *project);

/* The same for a run step (llm, agent): a set *stop (may be NULL) or the
 * deadline (aw_clock_mono_ns; 0 = none) abandons the call with
 * AW_E_RUN_CANCELLED / AW_E_RUN_TIMEOUT (its upstream transfer cut).
 * *answer: the step's answer, {content, finish_reason, usage, model,
 * tool_calls?} (the caller's). */
aw_err aw_llm_wait(aw_llm *g, const aw_ctx *ctx, const json_t *req, const aw_llm_meta *meta,
		   const atomic_bool *stop, int64_t deadline_ns, json_t **answer, aw_error *err);

/* Registers the run runtime's `llm` step kind, calling g (one gateway per
 * process). */
int aw_llm_register_executor(aw_llm *g);

#endif
