/*
 * store/budget.h - the token budget ledger (see migrations 0008_budget).
 * Part of the store interface (store.h: open, migrate, transactions); only
 * the budget service includes it. Every call runs in the caller's transaction
 * for its project.
 */
#ifndef AWOOOP_STORE_BUDGET_H
#define AWOOOP_STORE_BUDGET_H

#include "awooop/store.h"

typedef struct {
	char period_key[16];
	long long limit, reserved, settled;
} aw_budget_period;

/* Creates the period's row, or sets its limit to the contract's. */
aw_err aw_store_budget_period_ensure(aw_txn *t, const char *period, long long limit, aw_error *err);
/* found 0 when the period has no row. */
aw_err aw_store_budget_period_get(aw_txn *t, const char *period, aw_budget_period *out, int *found,
				  aw_error *err);
/* Adds tokens to reserved when reserved + settled + tokens <= limit (one
 * conditional UPDATE, which also sets the period's limit): *ok 1 when it
 * did; 0 also when the period has no row yet. */
aw_err aw_store_budget_reserve(aw_txn *t, const char *period, long long limit, long long tokens,
			       int *ok, aw_error *err);
/* The open reservation of call_id and its ledger line. lease_until: a store
 * timestamp. */
aw_err aw_store_budget_hold(aw_txn *t, const char *call_id, const char *period, const char *run_id,
			    long long tokens, const char *holder, const char *lease_until,
			    aw_error *err);
/* Closes call_id's reservation: used tokens settled, the rest released (kind
 * "settle"/"release", or "reap" for the whole of it). *found 0 when it was
 * closed already (reaped). used is at most the reservation. */
aw_err aw_store_budget_close(aw_txn *t, const char *call_id, long long used, int reap, int *found,
			     aw_error *err);
/* Open reservations of the txn's project whose lease ended before now, at
 * most max: call ids into ids (AW_UUID_STR_LEN + 1 each... up to 64 bytes). */
aw_err aw_store_budget_expired(aw_txn *t, const char *now, char (*ids)[64], int max, int *n,
			       aw_error *err);
/* Moves the lease of every open reservation of holder in the txn's project. */
aw_err aw_store_budget_renew(aw_txn *t, const char *holder, const char *lease_until, aw_error *err);
/* Sums of the ledger for a period, by kind. */
typedef struct {
	long long reserve, settle, release, reap;
} aw_budget_sums;
aw_err aw_store_budget_sums(aw_txn *t, const char *period, aw_budget_sums *out, aw_error *err);
aw_err aw_store_budget_state_get(aw_txn *t, int *suspended, char *reason, size_t cap,
				 aw_error *err);
aw_err aw_store_budget_state_set(aw_txn *t, int suspended, const char *reason, const char *since,
				 const char *by, aw_error *err);

#endif
