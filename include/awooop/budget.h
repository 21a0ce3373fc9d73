/*
 * budget.h - the token budget and its three lines of defence (Phase 2):
 *
 *   1 admission: a suspended project or an exhausted period is refused before
 *     any upstream call (E-BUDGET-001 suspended, E-BUDGET-002 exhausted);
 *   2 reservation: the call's worst case (prompt bytes, an upper bound of its
 *     tokens for byte-level BPE tokenizers, + 8 per message, + max_tokens) is
 *     reserved with one conditional UPDATE of the period's ledger row, so no
 *     number of concurrent callers in any number of processes passes the
 *     limit; a request without max_tokens, or asking more than remains, is
 *     clamped to what remains; after the call the actual usage is settled
 *     and the rest released;
 *   3 kill (action_on_exceed "kill"): a call refused for an exhausted period
 *     suspends the project: its in-flight calls are cut and new ones refused
 *     until an operator resumes it. Operators can suspend by hand.
 *
 * The budget is the active `budget` contract revision (contract id
 * "default") of the project, read through the ADR-113 cache. No active
 * budget: nothing is reserved.
 */
#ifndef AWOOOP_BUDGET_H
#define AWOOOP_BUDGET_H

#include <jansson.h>

#include "awooop/policy.h"
#include "awooop/store/budget.h"

typedef struct {
	int active; /* a reservation is held */
	int kill;   /* the budget's action_on_exceed is "kill" */
	int killed; /* this refusal suspended the project (line 3) */
	char project[AW_PROJECT_MAX + 1];
	char period_key[16];
	char call_id[64];
	long long reserved; /* tokens held */
	long long prompt;   /* of which the prompt's estimate */
} aw_budget_hold;

/* The period key of now for "day" ("2026-12-01") or "month" ("2026-12"),
 * UTC. */
void aw_budget_period_key(const char *period, char out[16]);

/* Lines 1 and 2 for one call. *max_out: in, the output tokens asked (< 0:
 * none asked); out, what the call may produce (clamped). h->active 0 when
 * the project has no budget. lease_ms: a reservation whose holder dies is
 * reaped after it. */
aw_err aw_budget_admit(aw_store *s, aw_policy_cache *pc, const aw_ctx *ctx, const char *call_id,
		       const char *run_id, long long prompt, long long *max_out, int lease_ms,
		       const char *holder, aw_budget_hold *h, aw_error *err);
/* Settles h at used tokens inside t (the caller's transaction of h's
 * project). used < 0: unknown, the whole reservation is charged. */
aw_err aw_budget_settle(aw_txn *t, const aw_budget_hold *h, long long used, aw_error *err);
/* Line 3 by hand, or by the gateway: audited. */
aw_err aw_budget_suspend(aw_store *s, const aw_ctx *ctx, const char *reason, aw_error *err);
aw_err aw_budget_resume(aw_store *s, const aw_ctx *ctx, aw_error *err);
/* 1 when ctx->project is suspended (a store read). */
aw_err aw_budget_suspended(aw_store *s, const aw_ctx *ctx, int *suspended, aw_error *err);
/* {"period", "limit", "reserved", "settled", "remaining", "suspended",
 *  "ledger": {"reserve", "settle", "release", "reap"}}; new reference. */
aw_err aw_budget_status(aw_store *s, aw_policy_cache *pc, const aw_ctx *ctx, json_t **out,
			aw_error *err);
/* The holder's reservations in ctx->project live lease_ms from now (the
 * holder's heartbeat). */
aw_err aw_budget_renew(aw_store *s, const aw_ctx *ctx, const char *holder, int lease_ms,
		       aw_error *err);
/* Reaps ctx->project's reservations whose lease ended (charged in full). */
aw_err aw_budget_reap(aw_store *s, const aw_ctx *ctx, int *reaped, aw_error *err);

#endif
