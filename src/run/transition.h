/*
 * transition.h - the one place a run changes state (internal to src/run).
 *
 * Every transition is: the FSM table allows it, a compare-and-set moves the
 * row (only from the state the caller believes in), and an audit record on
 * the project's hash chain says so - in one transaction. run_move does it
 * for one run or a batch (one statement), along a path of several states whose
 * middle states exist only inside the transaction (claimed -> running ->
 * succeeded), auditing every hop. The audit records of a transaction are
 * collected and appended just before it ends, so the chain head is locked as
 * briefly as possible; several moves of one run become one record listing each
 * under "transitions". The run service (single moves) and the workers
 * (batches) both go through here.
 *
 * Ownership: a txn from run_txn_begin is ended by run_txn_end (commit or
 * rollback); one from run_txn_wrap leaves the caller's store txn open.
 */
#ifndef AW_RUN_TRANSITION_H
#define AW_RUN_TRANSITION_H

#include "awooop/run.h"

typedef struct aw_run_pending aw_run_pending;

typedef struct {
	aw_txn *t;
	const aw_ctx *ctx;
	aw_run_pending *recs;
	int n, cap;
	int owned; /* began here: end commits */
} aw_run_txn;

/* One run of a move. */
typedef struct {
	const char *run_id, *trace_id; /* trace_id NULL: the txn ctx's */
	const json_t *detail;	       /* borrowed: extra payload of its records, or NULL */
	/* when the path starts at claimed: the claim itself (prev_state ->
	 * claimed at claimed_at) is audited with the move */
	const char *prev_state, *claimed_at;
	/* its queue (borrowed), or NULL: read from the store when the run ends
	 * here (awooop_run_finished_total counts per queue) */
	const char *queue;
} aw_run_mover;

aw_err run_txn_begin(aw_store *s, const aw_ctx *ctx, aw_run_txn *x, aw_error *err);
void run_txn_wrap(aw_txn *t, const aw_ctx *ctx, aw_run_txn *x);
/* Moves the n runs from path[0] to path[hops] with one compare-and-set; moved
 * gets 1 for each run that moved (runs that did not are left alone). With
 * moved NULL (n must be 1) a run that did not move is AW_E_RUN_STATE.
 * error_code goes into the last hop's record. */
aw_err run_move(aw_run_txn *x, const aw_run_mover *m, int n, const aw_run_state *path, int hops,
		const aw_run_change *chg, const char *error_code, int *moved, aw_error *err);
/* Appends the collected audit records; a begun txn is then committed, or
 * rolled back when e (or the append) failed. Returns the first error. */
aw_err run_txn_end(aw_run_txn *x, aw_err e, aw_error *err);

#endif
