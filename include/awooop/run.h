/*
 * run.h - the run runtime: durable agent work that finishes exactly once.
 *
 * A run is an ordered workflow of steps ({"kind": ..., "args": {...}}, and
 * optionally "name", "when", "retry": see flow below) owned by one project. Its state follows one checked transition table (aw_run_fsm_event);
 * every transition is a compare-and-set in the store plus an audit record
 * (action "run.<to>", target the run id) in the same transaction. Workers claim
 * runs with a lease they renew by heartbeat; a reaper re-queues runs whose lease
 * expired. Before step k a worker reads the step journal: a succeeded step is
 * never executed again, and side-effecting steps carry an idempotency key
 * derived from (run id, k) to the outside world. In shadow mode side-effecting
 * executors record the intended effect instead of performing it.
 *
 * This header is the service: submission, reads, cancel, transitions, data
 * flow. The step kinds are executor.h; the workers that drive runs, worker.h.
 */
#ifndef AWOOOP_RUN_H
#define AWOOOP_RUN_H

#include <jansson.h>
#include <stdatomic.h>

#include "awooop/store/run.h"

typedef enum {
	AW_RUN_QUEUED,
	AW_RUN_CLAIMED,
	AW_RUN_RUNNING,
	AW_RUN_WAITING_APPROVAL,
	AW_RUN_RETRY_WAIT,
	AW_RUN_SUCCEEDED,
	AW_RUN_FAILED,
	AW_RUN_CANCELLED,
	AW_RUN_SUGGESTED, /* an approval policy in suggest mode: nothing executed */
	AW_RUN_NSTATES
} aw_run_state;

const char *aw_run_state_name(aw_run_state s);
/* 0 and *out for a known state name. */
int aw_run_state_parse(const char *name, aw_run_state *out);
/* The transition table: the event's name when from -> to is allowed, else NULL. */
const char *aw_run_fsm_event(aw_run_state from, aw_run_state to);
int aw_run_state_terminal(aw_run_state s);
/* "run.<state>": the audit action of a move into s. */
const char *aw_run_action(aw_run_state s);
/* AW_E_RUN_STATE (naming both states) unless the table allows from -> to. */
aw_err aw_run_fsm_check(aw_run_state from, aw_run_state to, aw_error *err);
/* Adds "from", "to" and "event" of an allowed move to payload (stolen; a new
 * object when NULL) and returns it; NULL on out of memory. */
json_t *aw_run_move_json(aw_run_state from, aw_run_state to, json_t *payload);

/* ---- submission ---- */
#define AW_RUN_MAX_STEPS 100
typedef struct {
	json_t *workflow; /* array of {"kind", "args"} (owned) */
	json_t *input;	  /* any JSON or NULL (owned) */
	int shadow;
	int priority;		      /* -1000..1000, higher first; default 0 */
	int max_attempts;	      /* 1..100; default 3 */
	int timeout_s;		      /* per attempt, 1..86400; default 300 */
	char run_at[AW_TS_LEN + 1];   /* not before this time ("" now); within a year */
	char queue[AW_QUEUE_MAX + 1]; /* "default" unless named (aw_run_queue_name_ok) */
} aw_run_request;

/* Strictly decodes a POST /v1/platform/runs body and checks every step against
 * the executor registry (AW_E_RUN_WORKFLOW with a JSON pointer). Pure: fuzzed. */
aw_err aw_run_request_decode(const char *body, size_t len, aw_run_request *out, aw_error *err);
void aw_run_request_free(aw_run_request *r);
/* AW_E_RUN_SECRET (err->where: the pointer, prefixed with where) when v holds
 * a credential in plain text - a string the redaction engine would call a key,
 * token, URL userinfo, Authorization value or secret assignment, or a
 * sensitive field with a literal value; {"secret_ref": REF} objects are the
 * way to name one (AW_E_SECRET_REF when REF is malformed). Pure (fuzzed). */
aw_err aw_run_no_secrets(const json_t *v, const char *where, aw_error *err);
/* SHA-256 hex of the request's canonical JSON (RFC 8785, defaults filled). */
aw_err aw_run_request_hash(const aw_run_request *r, char out[65], aw_error *err);

/* ---- data and control flow between steps (flow.c) ----
 * A step may carry:
 *   "name":  aw_ident_name_ok, unique in the workflow; its result can then be
 *            referred to by the steps after it.
 *   "when":  {"$ref": P, "equals": V} | {"$ref": P, "not_equals": V} |
 *            {"$ref": P, "exists": true|false}: the step runs only when it
 *            holds, else it is journaled "skipped" (result null) and the run
 *            goes on. An absent path equals nothing and does not exist.
 *   "retry": {"attempts"?: 1..100, "backoff_ms"?: 0..3600000,
 *            "max_backoff_ms"?: backoff_ms..3600000, "permanent"?: [codes]}:
 *            the step's own tries instead of the run's max_attempts, its own
 *            backoff instead of the worker's, and more codes never retried
 *            (aw_run_code_permanent's are never retried whatever it says).
 * Anywhere inside args an object {"$ref": P} (that member alone) is replaced,
 * when the step executes, by the value at P - an RFC 6901 JSON pointer into
 * the run's flow document
 *   {"input": <the run's input or null>,
 *    "steps": {"<name>": {"state": "succeeded" | "skipped", "result": R}}}
 * rooted at /input or at /steps/<name> of a step before this one (below it
 * only /result... and /state). Whole values only: no templates in strings.
 * A "$ref" string that begins with '#' is JSON Schema's (an llm step's
 * response_format) and left alone. Results come from the journal, so a
 * resumed run resolves exactly what its first attempt did. */
#define AW_RUN_REF_MAX 1024	  /* bytes of a reference's pointer */
#define AW_RUN_ARGS_MAX (1 << 20) /* bytes of a step's resolved args (compact JSON) */
#define AW_RUN_PERMANENT_MAX 32	  /* codes in a retry policy's "permanent" */
/* The flow members of step i of workflow (its name, when, retry, and every
 * reference in its args) against the steps before it. AW_E_RUN_REF (bad or
 * forward reference) or AW_E_RUN_WORKFLOW, err->where the pointer in the
 * request ("/workflow/2/args/url"). Pure (fuzzed). */
aw_err aw_run_flow_check_step(const json_t *workflow, size_t i, aw_error *err);
/* 1 when v holds a reference anywhere. */
int aw_run_has_refs(const json_t *v);
/* 1 when the pointer where (relative to args) leads to, into or above a
 * reference of args: an executor's complaint there may be about a value
 * that only exists once the reference resolves. */
int aw_run_ref_near(const json_t *args, const char *where);
/* A new flow document {"input": input or null, "steps": {}}; NULL: memory. */
json_t *aw_run_flow_doc(const json_t *input);
/* Adds the step name's state ("succeeded"/"skipped") and result (copied; NULL
 * is null) to doc. -1 out of memory. */
int aw_run_flow_add(json_t *doc, const char *name, const char *state, const json_t *result);
/* *out (new reference): args with every reference replaced by a copy of its
 * value in doc. AW_E_RUN_REF (err->where: the reference's pointer within
 * args) when a path is absent; AW_E_LIMIT past AW_RUN_ARGS_MAX. */
aw_err aw_run_resolve(const json_t *args, const json_t *doc, json_t **out, aw_error *err);
/* 1 when a checked "when" holds against doc. */
int aw_run_when_holds(const json_t *when, const json_t *doc);

/* ---- retries ---- A failed step's run goes to retry_wait (backoff) or
 * failed. Failed at once: a code of the permanent table (aw_run_code_permanent:
 * references, egress refusals, a server's 4xx, the gateways' refusals -
 * budget, routing, gates, schema - and every other 4xx-class code but 408
 * and 429), or one the step's retry policy names. Else the step's
 * "attempts" (its tries, counted in the journal) or the run's max_attempts
 * decide. */
int aw_run_code_permanent(aw_err code);
/* The code a step failure is classified by: the step's own, or for an
 * E-RUN-005 whose message begins with a stable code and ": " (the llm step
 * keeps the gateway's words so) that code. */
aw_err aw_run_failure_cause(aw_err code, const char *msg);
/* 1 when a failure with code (and cause) is never retried under retry (the
 * step's policy, or NULL). */
int aw_run_failure_permanent(aw_err code, aw_err cause, const json_t *retry);

/* ---- named queues ---- A run goes to its request's queue ("default"
 * unless named; other names must be declared first). A queue's concurrency
 * limit holds across every worker process: at most that many of its runs
 * claimed or running at once. Claims go round robin over projects, within a
 * project over its queues, within a queue by priority and age. */
#define AW_RUN_QUEUES_MAX 100
#define AW_RUN_QUEUE_CONCURRENCY_MAX 100000
/* 1..AW_QUEUE_MAX of [A-Za-z0-9._-]. Pure. */
int aw_run_queue_name_ok(const char *name);
/* Declares queue name in ctx->project, or changes its limit (concurrency
 * 1..AW_RUN_QUEUE_CONCURRENCY_MAX, 0 for none); audited (queue.set).
 * AW_E_REQ_INVALID (where "name" or "/concurrency") for a bad name or number
 * or one queue more than AW_RUN_QUEUES_MAX. *out: the queue as listed. */
aw_err aw_run_queue_set(aw_store *s, const aw_ctx *ctx, const char *name, int concurrency,
			json_t **out, aw_error *err);
/* {"items": [{name, concurrency (null: none), queued, running, updated_at,
 * updated_by}]} of ctx->project, by name, "default" always there. */
aw_err aw_run_queue_list(aw_store *s, const aw_ctx *ctx, json_t **out, aw_error *err);

/* The age of the oldest runnable run (queued or retry_wait, due) of every
 * queue of every project that has one, and how many it has due, read in one
 * statement (platform path) and published as
 * awooop_run_queue_oldest_age_seconds and awooop_run_queue_depth (every
 * series replaced: a queue with none waiting leaves the text). *out (may be
 * NULL; free()) gets the queues, *n how many. Workers call it every
 * queue_age_ms. */
typedef struct {
	char project[AW_PROJECT_MAX + 1];
	char queue[AW_QUEUE_MAX + 1];
	double age_s;	 /* since its run_after */
	long long depth; /* its runs due (at most AW_RUN_QUEUE_DEPTH_MAX counted) */
} aw_run_queue_age;
aw_err aw_run_queue_age_sample(aw_store *s, aw_run_queue_age **out, int *n, aw_error *err);

/* Idempotency keys: 1..255 printable ASCII characters. */
int aw_run_idem_key_ok(const char *key);

/* Creates a queued run in ctx->project with trace ctx->trace. With idem_key: the
 * same key and request within 24 h returns the original run (*replayed = 1),
 * another request under the key is AW_E_RUN_IDEMPOTENCY. */
aw_err aw_run_submit(aw_store *s, const aw_ctx *ctx, const aw_run_request *req,
		     const char *idem_key, aw_run *out, int *replayed, aw_error *err);
/* The same inside the caller's write transaction t of ctx->project, at
 * now_ms (the run's created_at), with its audit record; nobody is woken
 * (the caller kicks after its commit: aw_run_kick). A failure may leave t
 * unusable: roll it back. */
aw_err aw_run_submit_in(aw_txn *t, const aw_ctx *ctx, const aw_run_request *req,
			const char *idem_key, int64_t now_ms, aw_run *out, int *replayed,
			aw_error *err);
/* Bulk submission: up to AW_RUN_BATCH_MAX runs in one transaction, each with
 * its own idempotency key and result; the runs share one audit record
 * (aw_audit_record_group) and those without a key are inserted together.
 * An item the caller could not decode comes with it->err set and is passed
 * over; an item whose key was used for another request fails alone
 * (AW_E_RUN_IDEMPOTENCY in it->err); a store failure fails the batch (the
 * return value; no item is written). Results: it->run (free with
 * aw_run_free), it->replayed. */
#define AW_RUN_BATCH_MAX 1000
typedef struct {
	aw_run_request req;   /* in (the caller frees it) */
	const char *idem_key; /* in, or NULL */
	aw_error err;	      /* in: preset when the item is refused already; out */
	aw_run run;	      /* out */
	int replayed;	      /* out */
} aw_run_batch_item;
aw_err aw_run_submit_batch(aw_store *s, const aw_ctx *ctx, aw_run_batch_item *items, int n,
			   aw_error *err);
/* steps may be NULL when the journal is not wanted. */
aw_err aw_run_get(aw_store *s, const aw_ctx *ctx, const char *run_id, aw_run *out,
		  aw_run_step **steps, int *nsteps, aw_error *err);
/* The run as the API shows it - fields, journal ("steps") and "transitions" -
 * read in one snapshot; new reference. AW_E_INTERNAL when the audit history
 * does not end in the run's state (never shown as an empty history) - but a
 * run "claimed", whose claim is audited with its start, may end it in the
 * state it was claimed from. */
aw_err aw_run_view(aw_store *s, const aw_ctx *ctx, const char *run_id, json_t **out, aw_error *err);
/* The run's transitions (its audit records), oldest first. */
aw_err aw_run_transitions(aw_store *s, const aw_ctx *ctx, const char *run_id, json_t **out,
			  aw_error *err);
aw_err aw_run_list(aw_store *s, const aw_ctx *ctx, const char *state, const char *cursor, int limit,
		   aw_run **out, int *n, aw_error *err);
/* Cancels a run that is not finished; a worker executing it stops within one
 * heartbeat. AW_E_RUN_STATE when it already finished. */
aw_err aw_run_cancel(aw_store *s, const aw_ctx *ctx, const char *run_id, aw_run *out,
		     aw_error *err);
/* One checked transition (FSM + compare-and-set + audit) in its own txn. */
aw_err aw_run_transition(aw_store *s, const aw_ctx *ctx, const char *run_id, aw_run_state from,
			 aw_run_state to, const aw_run_change *chg, json_t *detail, aw_error *err);
/* The same inside the caller's txn. */
aw_err aw_run_transition_in(aw_txn *t, const aw_ctx *ctx, const char *run_id, const char *trace_id,
			    aw_run_state from, aw_run_state to, const aw_run_change *chg,
			    json_t *detail, aw_error *err);

/* JSON of a run (and its journal when steps != NULL); new reference. */
json_t *aw_run_json(const aw_run *r, const aw_run_step *steps, int nsteps);
/* Compares two runs' journals step by step (kind, args, intended effect,
 * outcome); *out = {"same": bool, "steps": [...]}. */
aw_err aw_run_diff(aw_store *s, const aw_ctx *ctx, const char *a, const char *b, json_t **out,
		   aw_error *err);

/* The journal idempotency key of step k: "<run_id>-<k>". */
void aw_run_step_key(const char *run_id, int step_no, char *out, size_t cap);

#endif
