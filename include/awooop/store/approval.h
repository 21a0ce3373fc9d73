/*
 * store/approval.h - the decisions on runs waiting for approval
 * (approval.h is the service). Same conventions as store.h.
 */
#ifndef AWOOOP_STORE_APPROVAL_H
#define AWOOOP_STORE_APPROVAL_H

#include "awooop/store.h"

typedef struct {
	char principal[AW_PROJECT_MAX + 1];
	char decision[8]; /* approve | deny */
	char via[16];
	char decided_at[AW_TS_LEN + 1];
} aw_run_decision;

/* Locks the run's row until the txn ends (PostgreSQL: FOR UPDATE; SQLite:
 * the write lock) and reads its state; AW_E_RUN_NOT_FOUND outside the project. */
aw_err aw_store_run_lock(aw_txn *t, const char *run_id, char state[20], aw_error *err);
/* 1 in *used when the project has a decision under jti. */
aw_err aw_store_run_jti_used(aw_txn *t, const char *jti, int *used, aw_error *err);
/* AW_E_APPROVAL_DUP when principal already decided on this step (sub_no:
 * on this parked call of an agent step, its seq; 0 for the step itself). */
aw_err aw_store_run_decision_add(aw_txn *t, const char *run_id, int step_no, int sub_no,
				 const aw_run_decision *d, const char *jti, aw_error *err);
/* The step's (or its call's) decisions, oldest first. */
aw_err aw_store_run_decisions(aw_txn *t, const char *run_id, int step_no, int sub_no,
			      aw_run_decision **out, int *n, aw_error *err);

#endif
