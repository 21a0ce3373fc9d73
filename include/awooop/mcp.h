/*
 * mcp.h - the MCP gateway: one MCP endpoint per tenant in front of its tool
 * servers. A tools/call passes five gates in order, each refusal a JSON-RPC
 * error with a stable code (data.code) and an audit record naming the gate:
 *
 *   1 identity, tenant  E-MCP-GATE-001 no/unknown key (the HTTP layer),
 *                       002 the tool is not visible to the key's project
 *   2 tool policy       003 disabled, or a write tool in a read_only project;
 *                       004 the upstream's definition no longer matches the
 *                       pin the active revision approved (a "rug pull")
 *   3 arguments         005 not an object, too large, or failing the schema
 *   4 rate and budget   006 the tool's rate limit, 007 the project suspended
 *   5 approval,         008 the tool needs an approval (refused: approvals
 *     upstream              are not built yet), 009 the upstream failed,
 *                           timed out, answered too much, or is at an address
 *                           the egress policy refuses
 *
 * The tools are those of the project's active mcp_tool revision (contract
 * id from the options, "default"), read through the per-call guard
 * (aw_policy_effective), so an activation reaches every gateway process via
 * ADR-113 and a revoke stops the project's stdio upstreams. Tools are
 * federated as tool__provider (or bare with "suffix": false and one
 * upstream). Results are scrubbed of the upstream's credentials, redacted
 * (JSON-aware) and cut at the tool's max_result_bytes (16 KiB default) with
 * a marker; arguments are redacted before they are audited.
 *
 * Relayed methods (resources, prompts, completion, logging/setLevel, as the
 * revision's "relay" allows) pass the guard and gate 4's suspension (007)
 * too, and each writes an mcp.relay audit record (never its content).
 *
 * Upstream I/O runs on the gateway's worker threads: aw_mcp_start returns at
 * once and wakes the caller when the answer is ready (aw_mcp_answer).
 */
#ifndef AWOOOP_MCP_H
#define AWOOOP_MCP_H

#include <jansson.h>
#include <sys/types.h>

#include "awooop/call.h"
#include "awooop/kv.h"
#include "awooop/mcp_wire.h"
#include "awooop/policy.h"

typedef struct aw_mcp aw_mcp;
typedef struct aw_mcp_call aw_mcp_call;

/* The _meta member of a tools/call that carries the run runtime's
 * idempotency key to an upstream (aw_mcp_meta.idem_key). */
#define AW_MCP_IDEM_META "io.awooop/idempotency-key"

typedef struct {
	aw_store *store;	     /* audit records; borrowed */
	aw_policy_cache *policy;     /* the per-call guard; borrowed */
	const char *contract_id;     /* the mcp_tool contract; default "default" */
	const char *secrets_dir;     /* tenants' file: secrets live in <dir>/<project>/ */
	const char *stdio_allow;     /* what stdio upstreams may run: whole argvs, the env
				      names tenants may set, the paths shown (the format of
				      --mcp-stdio-allow, src/mcp/stdio_sandbox.h); NULL: none */
	const char *stdio_network;   /* projects (','-separated, or "*") whose stdio children
				      share the host's network; NULL: none has one */
	long sandbox_uid;	     /* the children's uid/gid outside their user namespaces
				      when the gateway runs as root; 0: 65534 */
	long stdio_pids;	     /* processes a child may have (RLIMIT_NPROC in its user
				      namespace); default 128 */
	long stdio_cpu_s;	     /* a child's CPU seconds (RLIMIT_CPU); default 3600 */
	int workers;		     /* upstream I/O threads; default 32 */
	const char *project_workers; /* of them, how many one project's requests may hold at
					once: "N" or "N,project=M,..." (bounds.h); NULL: a
					quarter of the workers */
	int max_queued;		     /* requests one project may have waiting; default 1024
					(past it: 429 E-MCP-008) */
	int timeout_ms;		     /* a tool call's default; 30000 */
	int timeout_max_ms;	     /* the most a tool's own timeout_ms may be; 120000 */
	int defs_ttl_ms;	     /* how long upstream tool definitions are trusted
				    before they are fetched again; 5000 */
	aw_kv *kv;		/* Gate 4's rate limits across every gateway process sharing this
		      Redis (a one-minute sliding window); NULL: per process only */
	const char *cgroup_dir; /* a memory cgroup directory (v2 or v1) delegated to the
				   gateway: each stdio child runs in a cgroup of its own
				   under it, limited to memory_mb; NULL: no limit */
	int memory_mb;		/* a stdio child's memory limit: the cgroup's with cgroup_dir,
				   else RLIMIT_DATA; default 512, < 0: none */
	aw_calls *calls;	/* the process's in-flight registry (call.h): a suspension
			    cuts the project's calls in flight; NULL: one of its own */
} aw_mcp_opts;

aw_err aw_mcp_new(const aw_mcp_opts *o, aw_mcp **out, aw_error *err);
/* Waits until every finished call's audit record is written (tests). */
void aw_mcp_flush(aw_mcp *g);
/* Finishes the calls in flight (their clients are answered) and stops the
 * workers; later calls are answered E-MCP-003. aw_mcp_free afterwards. */
void aw_mcp_stop(aw_mcp *g);
void aw_mcp_free(aw_mcp *g);

typedef struct {
	int stateless;	     /* 2026-07-28: results carry resultType, lists ttlMs/cacheScope */
	const char *version; /* the session's or the request's protocol version */
	const char *run_id;  /* X-Awooop-Run-Id, carried into the audit record */
	const char *session; /* the legacy session's id (notifications/cancelled) */
	int step_no;
	int approved;	      /* trusted callers only (the run runtime's tool step, after
			 its approval): Gate 5 lets a requires_approval tool pass */
	int accept_sse;	      /* the client's Accept: 0 no text/event-stream, 1 it
			   accepts one, 2 it lists it before application/json */
	const char *idem_key; /* trusted callers only (an agent step's call of a tool
				 that is not read-only): sent to the upstream as
				 params._meta["io.awooop/idempotency-key"], the same
				 on every repetition of the call */
} aw_mcp_meta;

typedef void (*aw_mcp_wake)(void *ud);
typedef void (*aw_mcp_park)(void *ud);

/* Starts answering msg (taken; cleared) for ctx->project. Never fails but
 * for memory: every refusal is an answer. */
aw_err aw_mcp_start(aw_mcp *g, const aw_ctx *ctx, aw_mcp_msg *msg, const aw_mcp_meta *meta,
		    aw_mcp_wake wake, void *ud, aw_mcp_call **out, aw_error *err);
/* 0 parked (park(pud) called; wake follows), 1 with *response (new
 * reference; NULL: nothing to send, HTTP 202) and *status (HTTP), or 2: the
 * answer is an event stream (HTTP 200, text/event-stream) read with
 * aw_mcp_read. *session: a new session id for the Mcp-Session-Id header
 * (initialize), or "".
 *
 * A call streams when its upstream asks or tells its client something
 * before answering (a legacy session whose POST accepts text/event-stream):
 * sampling/createMessage, elicitation/create and roots/list go to the client
 * under an id of the gateway's ("awooop-N") when it declared the capability
 * at initialize - its answer, POSTed in the same session by the same key, is
 * passed back to the upstream - and progress (under the client's own token)
 * and log messages are passed on, redacted. A client that lists
 * text/event-stream first gets every answer as a stream. */
int aw_mcp_answer(aw_mcp_call *c, aw_mcp_park park, void *pud, json_t **response, int *status,
		  const char **session);
/* The stream's next bytes: > 0, 0 when parked (park(pud) called; wake
 * follows), -1 at its end. */
ssize_t aw_mcp_read(aw_mcp_call *c, char *buf, size_t max, aw_mcp_park park, void *pud);
void aw_mcp_release(aw_mcp_call *c);
/* The HTTP client is gone: asks waiting for it give up; then released. */
void aw_mcp_hangup(aw_mcp_call *c);
/* The whole exchange, waiting (run steps, tests): the response and its
 * HTTP status, or NULL with *err - the gateway refused the call at once, or
 * the wait ended (aw_call_await: *stop set, deadline_ns passed), in which
 * case the call is cancelled as its client's notifications/cancelled would
 * (the upstream is told; the call is recorded E-MCP-004). stop may be NULL,
 * deadline_ns 0 (none). */
json_t *aw_mcp_exchange(aw_mcp *g, const aw_ctx *ctx, aw_mcp_msg *msg, const aw_mcp_meta *meta,
			const atomic_bool *stop, int64_t deadline_ns, int *status, aw_error *err);

/* Registers the "tool" step kind {"tool": federated name, "arguments"?: {}}:
 * one tools/call through g for the run's project (all five gates). A tool
 * that requires approval parks the run (approvals: the policy's rule, as the
 * approval step) and, once approved, is called with the approval. At start-up. */
struct aw_approvals;
int aw_mcp_register_executor(aw_mcp *g, struct aw_approvals *a);

/* 1 when this kernel lets the gateway build a stdio child's sandbox (user,
 * mount, pid, network namespaces); else 0 with why (tests skip on it). */
int aw_mcp_sandbox_probe(char *why, size_t n);

/* Legacy sessions (2025-11-25 Mcp-Session-Id): per process, bound to the
 * project and key that opened them, ended after an hour idle; at most 1,000
 * a project and 10,000 a process (past a cap the project's own oldest ends,
 * never another project's while it has one here). How many a project has: */
int aw_mcp_session_count(aw_mcp *g, const char *project);
/* AW_E_MCP_SESSION when id names none of ctx's. */
aw_err aw_mcp_session_get(aw_mcp *g, const aw_ctx *ctx, const char *id, char version[16],
			  aw_error *err);
void aw_mcp_session_end(aw_mcp *g, const aw_ctx *ctx, const char *id);
/* The session's own event stream (the GET of Streamable HTTP), read with
 * aw_mcp_read and ended with aw_mcp_hangup: notifications/resources/updated
 * for the resources the session subscribed to (resources/subscribe, relayed
 * to the upstream that has the resource; an HTTP upstream's own GET stream is
 * held open for its updates from then on). One a session: a newer one ends
 * the older; the session's end ends it. AW_E_MCP_SESSION when id names none
 * of ctx's. */
aw_err aw_mcp_listen(aw_mcp *g, const aw_ctx *ctx, const char *id, aw_mcp_wake wake, void *ud,
		     aw_mcp_call **out, aw_error *err);

/* Publishing an mcp_tool revision pins its tools: each upstream is asked for
 * its definitions and every tool gets "pin": "sha256v2:..." of its current
 * definition, whole (every member tools/list passes on: title, annotations,
 * _meta, icons, outputSchema, ...). Revisions pinned before carry
 * "sha256:..." (four members); the gateway honours them, passing on only
 * those members, until a new revision pins again. *pinned: a new body (new
 * reference). A tool the upstream does not offer, or whose given pin (either
 * format) differs from what it offers now, is
 * AW_E_MCP_PROTOCOL; an upstream that cannot be asked AW_E_MCP_UPSTREAM. */
aw_err aw_mcp_pin(aw_mcp *g, const aw_ctx *ctx, const json_t *body, json_t **pinned, aw_error *err);

#endif
