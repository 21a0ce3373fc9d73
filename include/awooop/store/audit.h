/*
 * store/audit.h - the audit trail (append-only, hash-chained per project).
 * Part of the store interface (store.h: open, migrate, transactions); only
 * the services of this domain include it. Same conventions as store.h: every
 * call runs in the caller's transaction for its project; arrays returned are
 * malloc'd and freed with the *_free function named here or free().
 */
#ifndef AWOOOP_STORE_AUDIT_H
#define AWOOOP_STORE_AUDIT_H

#include "awooop/store.h"

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

#define AW_AUDIT_ACTIONS_MAX 8
/* What aw_store_audit_query selects; every filter NULL or "" is any. The
 * action filter uses the (project, action, seq) index; outcome and run_id
 * are members of the record's payload (an agent call's envelope: llm.call,
 * mcp.call, mcp.relay), read from the rows the other filters leave. */
typedef struct {
	int newest_first; /* descending seq */
	int64_t cursor;	  /* ascending: seq > cursor; newest first: seq < cursor (0: none) */
	const char *actions[AW_AUDIT_ACTIONS_MAX]; /* any of them */
	int nactions;
	const char *since, *until; /* ts >= since, ts < until (RFC 3339) */
	const char *actor;	   /* the principal */
	const char *target;
	const char *outcome; /* payload.outcome; "!X": any outcome but X */
	const char *run_id;  /* payload.run_id */
} aw_audit_query;
aw_err aw_store_audit_query(aw_txn *t, const aw_audit_query *q, int limit, aw_audit_row **out,
			    int *n, aw_error *err);
/* 1 when the database extends the chain itself (PostgreSQL: audit_append(),
 * the same hash as aw_audit_hash); then records go through
 * aw_store_audit_append, which assigns seq, prev_hash and hash. */
int aw_store_audit_in_db(const aw_txn *t);
aw_err aw_store_audit_append(aw_txn *t, const aw_audit_row *rows, int n, aw_error *err);
/* Otherwise (SQLite, whose write transaction serialises appends) the chain
 * is extended from C: read the head (aw_store_audit_head), hash, then insert n
 * rows (consecutive seqs of one project) and move the head to the last. */
aw_err aw_store_audit_insert_many(aw_txn *t, const aw_audit_row *rows, int n, aw_error *err);
/* A record about several targets (aw_audit_record_group) is found from each
 * of them through the target index: n rows (target, event_id). The index is
 * append-only like the chain; the record's payload lists the same targets. */
aw_err aw_store_audit_targets_put(aw_txn *t, const char *event_id, const char *const *targets,
				  int n, aw_error *err);
/* Rows of the txn project about one target (its own records, and those about
 * several targets that list it), ascending. */
aw_err aw_store_audit_by_target(aw_txn *t, const char *target, int limit, aw_audit_row **out,
				int *n, aw_error *err);
/* The chain head: seq 0 and the genesis hash ("0" x 64) for an empty chain. */
aw_err aw_store_audit_head(aw_txn *t, int64_t *seq, char *hash, aw_error *err);

#endif
