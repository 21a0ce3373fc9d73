/*
 * store/budget.h - the token budget ledger (see migrations 0008_budget and
 * 0009_budget_cost). Part of the store interface (store.h: open, migrate,
 * transactions); only the budget service includes it. Every call runs in the
 * caller's transaction for its project. Costs are micro-USD.
 */
#ifndef AWOOOP_STORE_BUDGET_H
#define AWOOOP_STORE_BUDGET_H

#include <stdio.h>

#include "awooop/store.h"

/* Tokens and micro-USD: an amount, or a pair of limits (cost < 0: none). */
typedef struct {
	long long tokens, cost;
} aw_budget_amount;

typedef struct {
	/* the row's whole key: a period ("2026-12-05"), "run:<run id>" or a
	 * key's row ("kb:<key id>:<when>"), as the budget's rows[] hold them */
	char period_key[96];
	aw_budget_amount limit, reserved, settled;
} aw_budget_period;

/* The row of a run's own limit: "run:<run id>". */
static inline void aw_budget_run_key(const char *run_id, char out[80])
{
	snprintf(out, 80, "run:%s", run_id);
}

/* Creates the period's row, or sets its limits to the contract's (which, on
 * PostgreSQL, also locks the row until the transaction ends). */
aw_err aw_store_budget_period_ensure(aw_txn *t, const char *period, const aw_budget_amount *limit,
				     aw_error *err);
/* found 0 when the period has no row. */
aw_err aw_store_budget_period_get(aw_txn *t, const char *period, aw_budget_period *out, int *found,
				  aw_error *err);
/* Adds n to reserved when reserved + settled + n stays within both limits
 * and the project is not suspended (one conditional UPDATE, which also sets
 * the period's limits): *ok 1 when it did; 0 also when the period has no row
 * yet. n may be negative (gives back part of a reservation). */
aw_err aw_store_budget_reserve(aw_txn *t, const char *period, const aw_budget_amount *limit,
			       const aw_budget_amount *n, int *ok, aw_error *err);
/* The settled spend of the hourly rows from the bucket "h:<hour>" on (a
 * rolling window). */
aw_err aw_store_budget_window_sum(aw_txn *t, const char *from_bucket, aw_budget_amount *out,
				  aw_error *err);
/* Sets the settled spend of a rolling window's row (after the sum, under the
 * row's lock). */
aw_err aw_store_budget_window_set(aw_txn *t, const char *period, const aw_budget_amount *settled,
				  aw_error *err);
/* The open reservation of call_id and its ledger line, deferred (sent with
 * the commit; a conflict surfaces there). lease_until: a store timestamp. */
aw_err aw_store_budget_hold(aw_txn *t, const char *call_id, const char *period, const char *run_id,
			    const aw_budget_amount *n, const char *holder, const char *lease_until,
			    const char *extra, aw_error *err);
/* Takes n back out of a row's reservations (a clamp after the row was
 * reserved), unconditionally. */
aw_err aw_store_budget_unreserve(aw_txn *t, const char *key, const aw_budget_amount *n,
				 aw_error *err);
/* Deletes the rows from `from` (inclusive) to `before` (exclusive) - a
 * key's rows of minutes gone by - that hold no reservation (all of them
 * when counters: a request count is its reservations). */
aw_err aw_store_budget_forget(aw_txn *t, const char *from, const char *before, int counters,
			      aw_error *err);
/* (A reservation's extra rows - "kb:", "kt:" of its key, space-separated -
 * are moved as its period's row is.)
 * Closes call_id's reservation: used settled in full, even past what was
 * held (lines "settle" of at most what was held, "release" of the rest,
 * "overshoot" of what used passed it by); used NULL: reaped, the whole of
 * it charged (kind "reap"). model: who answered ("" unknown). A reservation
 * of the rolling window ("rolling") settles into the hourly row bucket too.
 * after (or NULL): the period row's limits and settled spend after it.
 * *found 0 when it was closed already (reaped). */
aw_err aw_store_budget_close(aw_txn *t, const char *call_id, const aw_budget_amount *used,
			     const char *model, const char *bucket, aw_budget_period *after,
			     int *found, aw_error *err);
/* Open reservations of the txn's project whose lease ended before now, at
 * most max: call ids into ids. */
aw_err aw_store_budget_expired(aw_txn *t, const char *now, char (*ids)[64], int max, int *n,
			       aw_error *err);
/* How many reservations of the txn's project are open (any holder). */
aw_err aw_store_budget_open(aw_txn *t, long long *n, aw_error *err);
/* Moves the lease of every open reservation of holder in the txn's project. */
aw_err aw_store_budget_renew(aw_txn *t, const char *holder, const char *lease_until, aw_error *err);
/* Sums of the ledger for a period, by kind. */
typedef struct {
	aw_budget_amount reserve, settle, release, reap, overshoot;
} aw_budget_sums;
aw_err aw_store_budget_sums(aw_txn *t, const char *period, aw_budget_sums *out, aw_error *err);
/* What each model was charged in a period (settle, reap and overshoot
 * lines; calls counts the calls), biggest
 * first; since (a store timestamp) or NULL. */
typedef struct {
	char model[129];
	long long tokens, cost, calls;
} aw_budget_model;
aw_err aw_store_budget_models(aw_txn *t, const char *period, const char *since,
			      aw_budget_model **out, int *n, aw_error *err);
/* Ledger lines after seq (oldest first), at most limit; period and run_id
 * filter when not NULL. */
typedef struct {
	long long seq;
	char period_key[16], call_id[64], run_id[64], kind[16], model[129], at[40];
	long long tokens, cost;
} aw_budget_entry;
aw_err aw_store_budget_history(aw_txn *t, const char *period, const char *run_id, long long after,
			       int limit, aw_budget_entry **out, int *n, aw_error *err);
/* Spend over time from the model calls' audit records (llm.call: they carry
 * the key, the model and the charge): per bucket (an hour or a UTC day) and
 * per group, oldest bucket first, at most limit rows. */
typedef enum { AW_SPEND_BY_NONE, AW_SPEND_BY_MODEL, AW_SPEND_BY_KEY } aw_spend_by;
typedef struct {
	char at[AW_TS_LEN + 1]; /* the bucket's start */
	char group[129];	/* the model or the key's principal; "" by none */
	long long calls, failed, tokens_in, tokens_out;
	double cost_usd;
} aw_spend_row;
aw_err aw_store_budget_spend(aw_txn *t, int hourly, const char *since, const char *until,
			     aw_spend_by by, int limit, aw_spend_row **out, int *n, aw_error *err);
/* A project's suspension (line 3): who imposed it says who may lift it. */
typedef struct {
	int suspended;
	char reason[201];
	char since[40];
	char by[64];	     /* the principal that suspended (or resumed) */
	char imposed_by[16]; /* "platform", "project", "budget" or "" (before 0027) */
} aw_budget_state;
/* The project's state; all zero when it has none. */
aw_err aw_store_budget_state_get(aw_txn *t, aw_budget_state *out, aw_error *err);
/* Sets it (suspended, reason, since, by and imposed_by of st). */
aw_err aw_store_budget_state_set(aw_txn *t, const aw_budget_state *st, aw_error *err);
/* The state of run_id in the txn's project ("queued", ...; "" when the
 * project has no such run): a per-run limit binds only a run that exists. */
aw_err aw_store_budget_run_state(aw_txn *t, const char *run_id, char state[24], aw_error *err);

#endif
