/*
 * store.h - the source of truth, behind one interface with two backends:
 *   "sqlite:PATH"                 embedded default (WAL, one file)
 *   "postgresql://..." / "postgres://..."  cluster shape (RLS per tenant)
 *
 * Every tenant operation runs in a transaction opened for ctx->project; on
 * PostgreSQL the database itself refuses rows of any other project. Functions
 * named *_platform_* are the explicit cross-tenant path (key lookup by hash,
 * project listing) and are the only ones that do not need a project.
 *
 * Ownership: aw_store_open returns a handle freed by aw_store_close. A txn from
 * aw_store_begin is ended exactly once by aw_store_commit or aw_store_rollback
 * (both free it). Arrays returned through `out` pointers are malloc'd: free().
 * All functions are thread-safe on one aw_store; a txn belongs to one thread.
 */
#ifndef AWOOOP_STORE_H
#define AWOOOP_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "awooop/clock.h"
#include "awooop/ctx.h"
#include "awooop/err.h"

typedef struct aw_store aw_store;
typedef struct aw_txn aw_txn;

typedef struct {
	int pool_size;		/* connections; default 8 */
	int acquire_timeout_ms; /* wait for a free connection; default 5000 */
	int auto_migrate;	/* apply migrations on open (SQLite default shape) */
} aw_store_opts;

aw_err aw_store_open(const char *url, const aw_store_opts *opts, aw_store **out, aw_error *err);
void aw_store_close(aw_store *s);
const char *aw_store_backend(const aw_store *s); /* "sqlite" | "postgres" */

/* Applies pending migrations. On PostgreSQL, run as the schema owner: creates
 * the NOLOGIN role awooop_platform and app_role (LOGIN, no superuser, no
 * BYPASSRLS) when missing, refuses an app_role that could bypass RLS, and grants
 * it exactly what the service needs (audit_events: SELECT, INSERT only). */
aw_err aw_store_migrate(aw_store *s, const char *app_role, aw_error *err);
/* AW_E_STORE_SCHEMA unless the schema is at the version this binary expects. */
aw_err aw_store_check_schema(aw_store *s, aw_error *err);
int aw_store_schema_target(const aw_store *s);
/* One round trip to the store; for /readyz. */
aw_err aw_store_ping(aw_store *s, aw_error *err);

typedef enum { AW_TXN_READ = 0, AW_TXN_WRITE = 1 } aw_txn_mode;
aw_err aw_store_begin(aw_store *s, const aw_ctx *ctx, aw_txn_mode mode, aw_txn **out,
		      aw_error *err);
aw_err aw_store_commit(aw_txn *t, aw_error *err);
void aw_store_rollback(aw_txn *t);

/* ---- projects ---- */
typedef struct {
	char project_id[AW_PROJECT_MAX + 1];
	char created_at[AW_TS_LEN + 1];
	char created_by[AW_PROJECT_MAX + 1];
} aw_project;

/* The txn's project must be p->project_id. AW_E_TENANT_EXISTS if present. */
aw_err aw_store_project_insert(aw_txn *t, const aw_project *p, aw_error *err);
/* The txn's project; AW_E_TENANT_NOT_FOUND when it does not exist. */
aw_err aw_store_project_get(aw_txn *t, aw_project *out, aw_error *err);
/* Platform path: projects with id > after (NULL = from the start), by id. */
aw_err aw_store_platform_list_projects(aw_store *s, const aw_ctx *ctx, const char *after, int limit,
				       aw_project **out, int *n, aw_error *err);

/* ---- API keys (only the SHA-256 of a key is ever stored) ---- */
typedef struct {
	char key_id[AW_UUID_STR_LEN + 1];
	char project_id[AW_PROJECT_MAX + 1];
	char name[AW_PROJECT_MAX + 1];
	aw_scope scope;
	char key_hash[65];
	char key_prefix[16];
	char created_at[AW_TS_LEN + 1];
	char created_by[AW_PROJECT_MAX + 1];
	char revoked_at[AW_TS_LEN + 1]; /* "" while active */
} aw_apikey;

/* AW_E_KEY_EXISTS when an active key of that name exists in the project. */
aw_err aw_store_key_insert(aw_txn *t, const aw_apikey *k, aw_error *err);
aw_err aw_store_key_list(aw_txn *t, aw_apikey **out, int *n, aw_error *err);
/* AW_E_KEY_NOT_FOUND if absent in the txn's project, AW_E_KEY_REVOKED if already. */
aw_err aw_store_key_revoke(aw_txn *t, const char *key_id, const char *when, aw_error *err);
/* Revokes the active key of that name, if any (bootstrap rotation). */
aw_err aw_store_key_revoke_name(aw_txn *t, const char *name, const char *when, aw_error *err);
/* Active keys of a scope in the txn's project. */
aw_err aw_store_key_count_scope(aw_txn *t, aw_scope scope, int *n, aw_error *err);
/* Platform path: finds a key by hash across projects. AW_E_AUTH_INVALID if none. */
aw_err aw_store_platform_lookup_key(aw_store *s, const aw_ctx *ctx, const char *key_hash,
				    aw_apikey *out, aw_error *err);

/* ---- contract registry ---- */
typedef struct {
	char revision_id[AW_UUID_STR_LEN + 1];
	char project_id[AW_PROJECT_MAX + 1];
	char family[32];
	char contract_id[AW_PROJECT_MAX + 1];
	char state[16]; /* draft|published|active|superseded|revoked */
	char *body;	/* malloc'd JSON text */
	char body_hash[65];
	char signature[65];
	char sign_key_id[AW_PROJECT_MAX + 1];
	char created_at[AW_TS_LEN + 1], created_by[AW_PROJECT_MAX + 1];
	char published_at[AW_TS_LEN + 1], published_by[AW_PROJECT_MAX + 1];
	char updated_at[AW_TS_LEN + 1];
} aw_revision;

typedef struct {
	char event_id[AW_UUID_STR_LEN + 1];
	int64_t seq;
	char event_type[32];
	char project_id[AW_PROJECT_MAX + 1];
	char family[32];
	char contract_id[AW_PROJECT_MAX + 1];
	char old_revision_id[AW_UUID_STR_LEN + 1]; /* "" when none */
	char new_revision_id[AW_UUID_STR_LEN + 1];
	char created_at[AW_TS_LEN + 1];
	char delivered_at[AW_TS_LEN + 1];
	int relay_attempts;
} aw_outbox_event;

typedef struct {
	char principal[AW_PROJECT_MAX + 1];
	char approved_at[AW_TS_LEN + 1];
	char expires_at[AW_TS_LEN + 1];
} aw_approval;

void aw_revisions_free(aw_revision *r, int n);
aw_err aw_store_rev_insert(aw_txn *t, const aw_revision *r, aw_error *err);
/* AW_E_CONTRACT_NOT_FOUND unless the revision belongs to this contract. */
aw_err aw_store_rev_get(aw_txn *t, const char *family, const char *contract_id, const char *rev,
			aw_revision *out, aw_error *err);
aw_err aw_store_rev_list(aw_txn *t, const char *family, const char *contract_id, aw_revision **out,
			 int *n, aw_error *err);
/* Compare-and-set: only when the revision is still in state `from`, else
 * AW_E_CONTRACT_STATE. */
aw_err aw_store_rev_set_body(aw_txn *t, const char *rev, const char *body, const char *now,
			     aw_error *err);
aw_err aw_store_rev_transition(aw_txn *t, const char *rev, const char *from, const char *to,
			       const char *now, aw_error *err);
aw_err aw_store_rev_publish(aw_txn *t, const char *rev, const char *body_hash,
			    const char *signature, const char *key_id, const char *by,
			    const char *now, aw_error *err);
/* Serialises writers of one contract until the txn ends (PostgreSQL advisory
 * lock; SQLite's write lock already does). */
aw_err aw_store_contract_lock(aw_txn *t, const char *family, const char *contract_id,
			      aw_error *err);
/* rev_out "" when the contract has no active revision. */
aw_err aw_store_active_get(aw_txn *t, const char *family, const char *contract_id, char *rev_out,
			   aw_error *err);
aw_err aw_store_active_set(aw_txn *t, const char *family, const char *contract_id, const char *rev,
			   const char *by, const char *now, aw_error *err);
aw_err aw_store_active_clear(aw_txn *t, const char *family, const char *contract_id, aw_error *err);
aw_err aw_store_outbox_insert(aw_txn *t, const aw_outbox_event *ev, aw_error *err);
/* Events of one contract in commit (seq) order. */
aw_err aw_store_outbox_list(aw_txn *t, const char *family, const char *contract_id,
			    aw_outbox_event **out, int *n, aw_error *err);
/* AW_E_CONTRACT_DUP_APPROVAL if the principal approved this revision already. */
aw_err aw_store_approval_insert(aw_txn *t, const char *rev, const aw_approval *a, aw_error *err);
aw_err aw_store_approval_list(aw_txn *t, const char *rev, aw_approval **out, int *n, aw_error *err);

/* ---- outbox relay (platform path: all projects) ---- */
/* Opens the relay's write transaction (no project). */
aw_err aw_store_relay_begin(aw_store *s, aw_txn **out, aw_error *err);
/* Undelivered events in commit order, locked for this txn (PostgreSQL: SKIP
 * LOCKED, so concurrent relays take different events). */
aw_err aw_store_relay_claim(aw_txn *t, int limit, aw_outbox_event **out, int *n, aw_error *err);
/* delivered=1 sets delivered_at; 0 counts a failed attempt. */
aw_err aw_store_relay_done(aw_txn *t, const char *event_id, int delivered, aw_error *err);
/* Deletes events delivered before `before`; *n gets how many. */
aw_err aw_store_relay_prune(aw_store *s, const char *before, int64_t *n, aw_error *err);
/* oldest: the created_at of the oldest undelivered event, "" when none. */
aw_err aw_store_relay_stats(aw_store *s, int64_t *undelivered, char *oldest, aw_error *err);
/* All active pointers of the txn's project (one query). */
typedef struct {
	char family[32];
	char contract_id[AW_PROJECT_MAX + 1];
	char revision_id[AW_UUID_STR_LEN + 1];
} aw_active_pointer;
aw_err aw_store_active_list(aw_txn *t, aw_active_pointer **out, int *n, aw_error *err);

/* A connection waiting for NOTIFY on channel (PostgreSQL); NULL on SQLite. */
typedef struct aw_store_listener aw_store_listener;
aw_store_listener *aw_store_listen(aw_store *s, const char *channel);
/* 1 notified, 0 timed out; reconnects by itself after a broken connection. */
int aw_store_listener_wait(aw_store_listener *l, int timeout_ms);
void aw_store_listener_close(aw_store_listener *l);

/* ---- Redis key migration phases (INV-1) ---- */
/* phase "none" and since "" when the pattern was never migrated. */
aw_err aw_store_keymig_get(aw_txn *t, const char *pattern, char *phase, size_t cap, char *since,
			   aw_error *err);
aw_err aw_store_keymig_set(aw_txn *t, const char *pattern, const char *phase, const char *since,
			   const char *by, aw_error *err);

/* ---- runs (the run runtime; see run.h for the service) ---- */
#define AW_RUN_ID_LEN AW_UUID_STR_LEN
#define AW_WORKER_ID_MAX 63
typedef struct {
	char run_id[AW_UUID_STR_LEN + 1];
	char project_id[AW_PROJECT_MAX + 1];
	char state[20];
	char mode[8];	/* live | shadow */
	char *workflow; /* malloc'd JSON text */
	char *input;	/* malloc'd JSON text, NULL when none */
	int priority, attempts, max_attempts, timeout_s;
	char trace_id[33];
	char lease_owner[AW_WORKER_ID_MAX + 1];
	char lease_expires_at[AW_TS_LEN + 1], run_after[AW_TS_LEN + 1];
	char error_code[32];
	char created_at[AW_TS_LEN + 1], updated_at[AW_TS_LEN + 1];
	char started_at[AW_TS_LEN + 1], finished_at[AW_TS_LEN + 1];
} aw_run;

typedef struct {
	char run_id[AW_UUID_STR_LEN + 1];
	int step_no; /* 1-based */
	char kind[32];
	char state[16]; /* started | succeeded | failed */
	char idem_key[AW_UUID_STR_LEN + 8];
	int attempt;
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
} aw_run_change;

void aw_run_free(aw_run *r);
void aw_runs_free(aw_run *r, int n);
void aw_run_steps_free(aw_run_step *s, int n);
aw_err aw_store_run_insert(aw_txn *t, const aw_run *r, aw_error *err);
/* AW_E_RUN_NOT_FOUND unless the run is in the txn's project. */
aw_err aw_store_run_get(aw_txn *t, const char *run_id, aw_run *out, aw_error *err);
/* Newest first; state NULL = any; before = cursor (a run id), NULL from the top. */
aw_err aw_store_run_list(aw_txn *t, const char *state, const char *before, int limit, aw_run **out,
			 int *n, aw_error *err);
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
	char prev_state[20];
	char mode[8];
	char *workflow, *input;
	int attempts, max_attempts, timeout_s;
	char trace_id[33];
	char claimed_at[AW_TS_LEN + 1];
} aw_run_claim;
void aw_run_claims_free(aw_run_claim *c, int n);
/* Claims up to limit runnable runs for worker (PostgreSQL: FOR UPDATE SKIP
 * LOCKED; SQLite: under its write lock), each with a lease of lease_ms. */
aw_err aw_store_run_claim(aw_store *s, const char *worker, int lease_ms, int limit,
			  aw_run_claim **out, int *n, aw_error *err);
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

/* ---- idempotency keys (per project and scope) ---- */
/* found 0 when absent; expired rows count as absent and are removed. */
aw_err aw_store_idem_get(aw_txn *t, const char *scope, const char *key, const char *now, int *found,
			 char *hash, char *resource, size_t cap, aw_error *err);
aw_err aw_store_idem_put(aw_txn *t, const char *scope, const char *key, const char *hash,
			 const char *resource, const char *now, const char *expires, aw_error *err);

/* ---- audit trail (append-only, hash-chained per project) ---- */
typedef struct {
	char event_id[AW_UUID_STR_LEN + 1];
	char project_id[AW_PROJECT_MAX + 1];
	int64_t seq;
	char ts[AW_TS_LEN + 1];
	char actor[AW_PROJECT_MAX + 1];
	char action[64];
	char *target; /* malloc'd, may be "" */
	char trace_id[33];
	char *payload; /* malloc'd JSON text, exactly as hashed */
	char prev_hash[65];
	char hash[65];
} aw_audit_row;

void aw_audit_rows_free(aw_audit_row *rows, int n);
/* Rows of the txn project with seq > after_seq, ascending, at most limit;
 * action and since ("" = any) filter. */
aw_err aw_store_audit_list(aw_txn *t, int64_t after_seq, const char *action, const char *since,
			   int limit, aw_audit_row **out, int *n, aw_error *err);
/* 1 when the database extends the chain itself (PostgreSQL: audit_append(),
 * the same hash as aw_audit_hash); then records go through
 * aw_store_audit_append, which assigns seq, prev_hash and hash. */
int aw_store_audit_in_db(const aw_txn *t);
aw_err aw_store_audit_append(aw_txn *t, const aw_audit_row *rows, int n, aw_error *err);
/* Otherwise (SQLite, whose write transaction serialises appends) the chain
 * is extended from C: read the head (aw_store_audit_head), hash, then insert n
 * rows (consecutive seqs of one project) and move the head to the last. */
aw_err aw_store_audit_insert_many(aw_txn *t, const aw_audit_row *rows, int n, aw_error *err);
/* Rows of the txn project about one target, ascending. */
aw_err aw_store_audit_by_target(aw_txn *t, const char *target, int limit, aw_audit_row **out,
				int *n, aw_error *err);
/* The chain head: seq 0 and the genesis hash ("0" x 64) for an empty chain. */
aw_err aw_store_audit_head(aw_txn *t, int64_t *seq, char *hash, aw_error *err);

#endif
