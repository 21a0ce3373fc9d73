/*
 * store/agent.h - the journal of an agent step's sub-steps (table
 * run_calls): its model calls and tool calls, one row each, numbered 1, 2,
 * ... (seq) under the run's step. Part of the store interface (store.h):
 * every call runs in the caller's transaction for its project; arrays are
 * malloc'd and freed with aw_run_calls_free.
 */
#ifndef AWOOOP_STORE_AGENT_H
#define AWOOOP_STORE_AGENT_H

#include "awooop/store.h"

#define AW_RUN_CALL_NAME_MAX 128
typedef struct {
	char run_id[AW_UUID_STR_LEN + 1];
	int step_no;			     /* the run's step (1-based) */
	int seq;			     /* the call's number in the step (1-based) */
	char kind[8];			     /* model | tool */
	char name[AW_RUN_CALL_NAME_MAX + 1]; /* the model asked for, or the tool */
	char state[12];			     /* started | done | parked | approved | failed */
	char *result;			     /* malloc'd JSON text, NULL when none */
	char error_code[32];
	char created_at[AW_TS_LEN + 1], finished_at[AW_TS_LEN + 1];
} aw_run_call;

void aw_run_calls_free(aw_run_call *c, int n);
/* The calls of the run's step (step_no 0: of every step), by step and seq. */
aw_err aw_store_run_calls(aw_txn *t, const char *run_id, int step_no, aw_run_call **out, int *n,
			  aw_error *err);
/* Upserts one call (by run, step and seq), fenced: only while the run is
 * held by the claim that runs the step - its lease is holder's and it is
 * in that claim's attempt - else AW_E_RUN_STATE and nothing is written (a
 * claim that lost its lease may not touch the journal of the one that took
 * the run over, even in the same process). holder NULL: not fenced (a
 * test's own row). */
aw_err aw_store_run_call_put(aw_txn *t, const aw_run_call *c, const char *holder, int attempt,
			     aw_error *err);
/* A parked call approved: "parked" -> "approved" (the decision's
 * transaction). *moved: 1 when the row was parked. */
aw_err aw_store_run_call_approve(aw_txn *t, const char *run_id, int step_no, int seq, int *moved,
				 aw_error *err);

#endif
