/*
 * store/run.h - runs, their step journal, claims, leases and the
 * idempotency keys of submissions.
 * Part of the store interface (store.h: open, migrate, transactions); only
 * the services of this domain include it. Same conventions as store.h: every
 * call runs in the caller's transaction for its project; arrays returned are
 * malloc'd and freed with the *_free function named here or free().
 */
#ifndef AWOOOP_STORE_RUN_H
#define AWOOOP_STORE_RUN_H

#include "awooop/store.h"

/* ---- runs (the run runtime; see run.h for the service) ---- */
#define AW_RUN_ID_LEN AW_UUID_STR_LEN
#define AW_WORKER_ID_MAX 63
#define AW_QUEUE_MAX 64
typedef struct {
	char run_id[AW_UUID_STR_LEN + 1];
	char project_id[AW_PROJECT_MAX + 1];
	char state[20];
	char mode[8];	/* live | shadow */
	char *workflow; /* malloc'd JSON text */
	char *input;	/* malloc'd JSON text, NULL when none */
	char queue[AW_QUEUE_MAX + 1];
	int priority, attempts, max_attempts, timeout_s;
	char trace_id[33];
	char lease_owner[AW_WORKER_ID_MAX + 1];
	char lease_expires_at[AW_TS_LEN + 1], run_after[AW_TS_LEN + 1];
	char error_code[32];
	char created_at[AW_TS_LEN + 1], updated_at[AW_TS_LEN + 1];
	char started_at[AW_TS_LEN + 1], finished_at[AW_TS_LEN + 1];
} aw_run;

typedef struct aw_run_step {
	char run_id[AW_UUID_STR_LEN + 1];
	int step_no; /* 1-based */
	char kind[32];
	char state[16]; /* started | succeeded | skipped | failed | waiting | approved */
	char idem_key[AW_UUID_STR_LEN + 8];
	int attempt;  /* the run's attempt that wrote the entry */
	int tries;    /* the step's finished executions (a "started" entry: before it) */
	char *result; /* malloc'd JSON text, NULL when none */
	char error_code[32];
	char started_at[AW_TS_LEN + 1], finished_at[AW_TS_LEN + 1];
} aw_run_step;

/* What a compare-and-set transition changes besides state and updated_at. */
typedef struct {
	const char *now;	/* required */
	const char *holder;	/* only while this worker holds the lease (NULL: any) */
	const char *error_code; /* set when non-NULL ("" clears) */
	const char *run_after;	/* set when non-NULL */
	int clear_lease;	/* lease_owner, lease_expires_at = NULL */
	int attempts_delta;	/* e.g. -1 when a shutdown releases a run */
	int started;		/* started_at = coalesce(started_at, now) */
	int finished;		/* finished_at = now */
	const char *expired_by; /* only if the lease expired before this time */
	/* the journal entries of the last step of the runs moved (by run_id),
	 * written into each run's row instead of run_steps: set when runs
	 * succeed (read back through the run_journal view) */
	const struct aw_run_step *last_steps;
	int nlast;
	/* every run is locked by this transaction in the state it moves from
	 * (a claim's held runs): the compare-and-set cannot miss, so on
	 * PostgreSQL it is sent with the transaction's next statement (no round
	 * trip of its own) and a run that did not move fails the transaction */
	int locked;
} aw_run_change;

void aw_run_free(aw_run *r);
void aw_runs_free(aw_run *r, int n);
void aw_run_steps_free(aw_run_step *s, int n);
/* A run with a lease_owner is handed off: inserted claimed by it unless its
 * queue has a concurrency limit or, idle_only, its project has runs claimed
 * or running (then queued); *claimed tells which once the txn commits. */
aw_err aw_store_run_insert(aw_txn *t, const aw_run *r, int idle_only, int *claimed, aw_error *err);
/* Queued runs (no lease owner) inserted together: a bulk submission's rows
 * in a statement per 200 instead of one each. */
aw_err aw_store_run_insert_many(aw_txn *t, const aw_run *const *runs, int n, aw_error *err);
/* Named queues of the txn's project ("default" is there undeclared). */
typedef struct {
	char name[AW_QUEUE_MAX + 1];
	int concurrency; /* 0: no limit */
	int64_t queued, running;
	char updated_at[AW_TS_LEN + 1]; /* "" for an undeclared "default" */
	char updated_by[AW_PROJECT_MAX + 1];
} aw_run_queue;
/* found: 1 when name is declared; count (may be NULL): how many are. */
aw_err aw_store_queue_get(aw_txn *t, const char *name, int *found, int *count, aw_error *err);
/* Declares name or changes its limit (concurrency 0: none). */
aw_err aw_store_queue_put(aw_txn *t, const char *name, int concurrency, const char *now,
			  const char *by, aw_error *err);
/* Every queue (with "default"), by name, with its runs queued and in flight. */
aw_err aw_store_queue_list(aw_txn *t, aw_run_queue **out, int *n, aw_error *err);
/* AW_E_RUN_NOT_FOUND unless the run is in the txn's project. */
aw_err aw_store_run_get(aw_txn *t, const char *run_id, aw_run *out, aw_error *err);
/* What a list of runs is narrowed to; each member NULL (or "") when any
 * will do. Checked by the service (aw_run_list_where), not here. */
typedef struct {
	const char *state;
	const char *queue;
	const char *created_from; /* created at or after (an aw_clock timestamp) */
	const char *created_to;	  /* created before (an aw_clock timestamp) */
	/* a run id's beginning, or a part of a step's kind or name (any case) */
	const char *text;
} aw_run_filter;
/* Newest first; f NULL = every run; before = cursor (a run id), NULL from the top. */
aw_err aw_store_run_list(aw_txn *t, const aw_run_filter *f, const char *before, int limit,
			 aw_run **out, int *n, aw_error *err);
/* state from -> to for one run; AW_E_RUN_STATE (nothing changed) unless the run
 * was in `from` (and held by c->holder when set). */
aw_err aw_store_run_cas(aw_txn *t, const char *run_id, const char *from, const char *to,
			const aw_run_change *c, aw_error *err);
/* The same for n runs at once; ok[i] = 1 for those that moved. */
aw_err aw_store_run_cas_many(aw_txn *t, char (*ids)[AW_UUID_STR_LEN + 1], int n, const char *from,
			     const char *to, const aw_run_change *c, int *ok, aw_error *err);
/* The journal of n runs (n = 1 for one), by run then step. */
aw_err aw_store_run_steps(aw_txn *t, char (*ids)[AW_UUID_STR_LEN + 1], int n, aw_run_step **out,
			  int *nsteps, aw_error *err);
/* Locks those of n runs that holder holds in state `state` until the txn
 * ends (PostgreSQL: FOR UPDATE; SQLite: its write lock); held[i] = 1 for them. */
aw_err aw_store_run_lock_held(aw_txn *t, char (*ids)[AW_UUID_STR_LEN + 1], int n,
			      const char *holder, const char *state, int *held, aw_error *err);
/* Upserts journal entries (by run and step number). */
aw_err aw_store_run_steps_put(aw_txn *t, const aw_run_step *steps, int n, aw_error *err);

/* A run as a worker claims it (platform path). */
typedef struct {
	char project_id[AW_PROJECT_MAX + 1];
	char run_id[AW_UUID_STR_LEN + 1];
	char queue[AW_QUEUE_MAX + 1];
	char prev_state[20];
	char mode[8];
	char *workflow, *input;
	int attempts, max_attempts, timeout_s;
	char trace_id[33];
	char claimed_at[AW_TS_LEN + 1];
	int held;    /* locked, not claimed: still queued (see aw_store_run_claim) */
	int resumed; /* started before (a released or re-queued run): read its journal */
} aw_run_claim;
void aw_run_claims_free(aw_run_claim *c, int n);
/* Claims up to limit runnable runs for worker (PostgreSQL: FOR UPDATE SKIP
 * LOCKED; SQLite: under its write lock), each with a lease of lease_ms.
 * With hold (a JSON array of step kinds: the worker's instant executors) and
 * open, a run never started whose steps are all of those kinds is held
 * instead: locked and returned with held = 1 (after the claimed ones),
 * unchanged - still queued, no lease. *open is then the transaction holding
 * it: the caller moves the held runs in it (aw_txn_set_ctx per project) and
 * ends it, which commits the others' claim too (they are not claimed before).
 * Without held runs *open is NULL and the claim committed. */
aw_err aw_store_run_claim(aw_store *s, const char *worker, int lease_ms, int limit, int idle_only,
			  const char *hold, aw_txn **open, aw_run_claim **out, int *n,
			  aw_error *err);
/* Renews worker's leases on ids; lost[i] = 1 for runs it no longer holds. */
aw_err aw_store_run_heartbeat(aw_store *s, const char *worker, int lease_ms,
			      char (*ids)[AW_UUID_STR_LEN + 1], int n, int *lost, aw_error *err);
/* Claimed or running runs whose lease expired (platform path). */
typedef struct {
	char project_id[AW_PROJECT_MAX + 1];
	char run_id[AW_UUID_STR_LEN + 1];
	char state[20];
} aw_run_ref;
aw_err aw_store_run_expired(aw_store *s, int limit, aw_run_ref **out, int *n, aw_error *err);
/* Runs waiting for approval whose window (the waiting step's expires_at)
 * closed, across projects (platform path). */
aw_err aw_store_run_approval_expired(aw_store *s, int limit, aw_run_ref **out, int *n,
				     aw_error *err);
/* Per queue (of every project) that has a runnable run - queued or in
 * retry_wait - due by now: the due time (run_after) of its oldest, and how
 * many are due (counted up to AW_RUN_QUEUE_DEPTH_MAX: a deeper backlog reads
 * as that many). Platform path; one statement, per queue one descent of the
 * partial index runs_due_queue and a walk of its due entries. Free with
 * free(). */
#define AW_RUN_QUEUE_DEPTH_MAX 100000
typedef struct {
	char project_id[AW_PROJECT_MAX + 1];
	char queue[AW_QUEUE_MAX + 1];
	char due_at[AW_TS_LEN + 1];
	long long depth;
} aw_run_queue_oldest;
aw_err aw_store_run_queue_oldest(aw_store *s, const char *now, aw_run_queue_oldest **out, int *n,
				 aw_error *err);
/* The queue of each of n runs of the txn's project (queues[i] "" for a run
 * not there). */
aw_err aw_store_run_queues_of(aw_txn *t, char (*ids)[AW_UUID_STR_LEN + 1], int n,
			      char (*queues)[AW_QUEUE_MAX + 1], aw_error *err);
/* Deletes up to limit runs (of every project) that finished before `before`,
 * with their journal, approvals and conversation links; *n how many. The
 * audit records stay. */
aw_err aw_store_runs_prune(aw_store *s, const char *before, int limit, int64_t *n, aw_error *err);

/* ---- idempotency keys (per project and scope) ---- */
/* found 0 when absent; expired rows count as absent and are removed. */
aw_err aw_store_idem_get(aw_txn *t, const char *scope, const char *key, const char *now, int *found,
			 char *hash, char *resource, size_t cap, aw_error *err);
aw_err aw_store_idem_put(aw_txn *t, const char *scope, const char *key, const char *hash,
			 const char *resource, const char *now, const char *expires, aw_error *err);
/* n keys at once (a bulk submission's new ones), each with its hash and
 * resource. */
aw_err aw_store_idem_put_many(aw_txn *t, const char *scope, const char *const *keys,
			      const char *const *hashes, const char *const *resources, int n,
			      const char *now, const char *expires, aw_error *err);
/* present[i] = 1 when keys[i] has a row (expired or not) - a bulk
 * submission's keys looked up in one query per 500 instead of one each. */
aw_err aw_store_idem_present(aw_txn *t, const char *scope, const char *const *keys, int n,
			     int *present, aw_error *err);

#endif
