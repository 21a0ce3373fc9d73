/*
 * budget.h - the token and cost budget and its three lines of defence
 * (Phase 2):
 *
 *   1 admission: a suspended project, an exhausted period or an exhausted run
 *     is refused before any upstream call (E-BUDGET-001 suspended, -002
 *     period spent, -003 run spent, -004 a cost limit and an unpriced model);
 *   2 reservation: the call's worst case (prompt bytes, an upper bound of its
 *     tokens for byte-level BPE tokenizers, + 8 per message, + max_tokens;
 *     its cost at the dearest model the call may be answered by) is reserved
 *     with one conditional UPDATE of the period's ledger row, so no number of
 *     concurrent callers in any number of processes passes either limit; a
 *     request without max_tokens, or asking more than remains, is clamped to
 *     what remains; after the call the actual usage is settled and the rest
 *     released;
 *   3 kill (action_on_exceed "kill"): a call refused for an exhausted period
 *     suspends the project: its in-flight calls are cut and its runs
 *     cancelled until an operator resumes it. Operators can suspend by hand.
 *
 * Periods: the UTC "day" or "month", or a "rolling" window of window_hours
 * (hourly granularity: spend settled in an hour ages out window_hours after
 * that hour began). Costs are integers of micro-USD: prices are USD per
 * million tokens, so a price times tokens is micro-USD, rounded up.
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

/* USD per million tokens. */
typedef struct {
	double in, out;
} aw_budget_price;

#define AW_BUDGET_MAX_ALERTS 10
/* The output tokens reserved for a call that asks none (max_tokens absent). */
#define AW_BUDGET_DEFAULT_MAX_OUT 4096

typedef struct {
	int active; /* a reservation is held */
	int keyed;  /* of a key's limits alone (the project has no budget) */
	int kill;   /* the budget's action_on_exceed is "kill" */
	int killed; /* this refusal suspended the project (line 3) */
	char project[AW_PROJECT_MAX + 1];
	char period_key[16];
	char call_id[64];
	aw_budget_amount reserved;		   /* held */
	long long prompt;			   /* of which the prompt's token bound */
	int alerts[AW_BUDGET_MAX_ALERTS], nalerts; /* alert_at_percent */
} aw_budget_hold;

/* A virtual key's limits, which admission counts besides the project's
 * budget (in rows of the key's own in the project's ledger): requests and
 * tokens per UTC minute, and a budget of tokens and/or cost per "day",
 * "month" or "total". A key with a cost budget in a project without a
 * budget contract has no prices: refused E-BUDGET-004. */
typedef struct {
	const char *key_id;
	long long rpm, tpm;	 /* 0: none */
	aw_budget_amount budget; /* each < 0: none */
	const char *period;	 /* of the budget: "day", "month" or "total" */
} aw_budget_key;

/* One call's request for admission. */
typedef struct {
	const char *call_id, *run_id, *holder;
	long long prompt;	   /* the prompt's token bound (of every attempt) */
	long long max_out;	   /* in: output tokens asked (< 0: none); out: allowed */
	int lease_ms;		   /* a reservation whose holder dies is reaped after it */
	const char *const *models; /* the models that may answer the call */
	int nmodels;		   /* at most 24 */
	aw_budget_price *prices;   /* out: each model's price (0 when unpriced) */
	const aw_budget_key *key;  /* the calling key's limits, or NULL */
} aw_budget_ask;

/* The period key of now: "2026-12-01" (day), "2026-12" (month), or
 * "rolling". */
void aw_budget_period_key(const char *period, char out[16]);

/* The cost of tokens at a price, in micro-USD (rounded up). */
long long aw_budget_cost(const aw_budget_price *p, long long in, long long out);

/* Lines 1 and 2 for one call; h->active 0 when the project has no budget. */
aw_err aw_budget_admit(aw_store *s, aw_policy_cache *pc, const aw_ctx *ctx, aw_budget_ask *ask,
		       aw_budget_hold *h, aw_error *err);
/* What settling h at used charges: what the upstream billed, even past
 * the reservation (used NULL: unknown, the whole reservation). */
aw_budget_amount aw_budget_charge(const aw_budget_hold *h, const aw_budget_amount *used);
/* Settles h inside t (the caller's transaction of h's project): charges
 * aw_budget_charge(h, used) to model, releases the rest; a settlement past
 * the reservation is an overshoot (its own ledger line, the metric
 * awooop_budget_tokens_total{event="overshoot"}, a warn log line); a
 * settlement that crosses one of the budget's alert_at_percent writes a
 * budget.alert audit record in t. */
aw_err aw_budget_settle(aw_txn *t, const aw_budget_hold *h, const aw_budget_amount *used,
			const char *model, aw_error *err);
/* Line 3 by hand, or by the gateway: audited. */
aw_err aw_budget_suspend(aw_store *s, const aw_ctx *ctx, const char *reason, aw_error *err);
aw_err aw_budget_resume(aw_store *s, const aw_ctx *ctx, aw_error *err);
/* 1 when ctx->project is suspended (a store read, which also refreshes what
 * this process knows: a call of a project without a budget trusts a reading
 * at most 250 ms old, so another process's suspension stops new calls within
 * that, and the watcher cuts calls in flight). */
aw_err aw_budget_suspended(aw_store *s, const aw_ctx *ctx, int *suspended, aw_error *err);
/* The same, trusting a reading of this process at most 250 ms old (the
 * gateways' admission: a suspension elsewhere stops new calls within that). */
aw_err aw_budget_suspended_recent(aw_store *s, const aw_ctx *ctx, int *suspended, aw_error *err);
/* The current period: limits, reserved, settled, remaining (tokens and
 * USD), when it resets, the ledger's sums by kind, what each model was
 * charged; with run_id, the run's own row too. New reference. */
aw_err aw_budget_status(aw_store *s, aw_policy_cache *pc, const aw_ctx *ctx, const char *run_id,
			json_t **out, aw_error *err);
/* Ledger lines after seq `after` (oldest first, at most limit), of a period
 * and a run when given: {"entries": [...], "next": seq}. New reference. */
aw_err aw_budget_history(aw_store *s, const aw_ctx *ctx, const char *period, const char *run_id,
			 long long after, int limit, json_t **out, aw_error *err);
/* Spend over time (GET .../budget/spend): what the model calls of ctx's
 * project used, from their audit records, per hour or per UTC day and per
 * model ("model"), per key ("key") or in all ("none"). Every argument may
 * be NULL: bucket "hour", until now, since such that the window holds 48
 * hours (hour) or 30 days (day), until's included, by "model", limit 2000
 * rows. since is moved back to its bucket's start. The window is at most 31 days
 * by the hour and 400 days by the day; limit 1..5000, "truncated" when the
 * rows filled it. AW_E_REQ_INVALID naming the argument otherwise.
 * {"bucket", "by", "since", "until", "items": [{"at", "model"|"key",
 * "calls", "failed", "tokens_in", "tokens_out", "tokens", "cost_usd"}],
 * "totals": {...}, "truncated"}. New reference. */
aw_err aw_budget_spend(aw_store *s, const aw_ctx *ctx, const char *bucket, const char *since,
		       const char *until, const char *by, const char *limit, json_t **out,
		       aw_error *err);
/* The holder's reservations in ctx->project live lease_ms from now (the
 * holder's heartbeat). */
aw_err aw_budget_renew(aw_store *s, const aw_ctx *ctx, const char *holder, int lease_ms,
		       aw_error *err);
/* A key's usage now (its rows: this minute's requests and tokens, its
 * budget's period), as the key view shows it; new reference. */
aw_err aw_budget_key_usage(aw_store *s, const aw_ctx *ctx, const aw_budget_key *key, json_t **out,
			   aw_error *err);
/* How many reservations of ctx->project are open, of any holder. */
aw_err aw_budget_open(aw_store *s, const aw_ctx *ctx, long long *open, aw_error *err);
/* Reaps ctx->project's reservations whose lease ended (charged in full). */
aw_err aw_budget_reap(aw_store *s, const aw_ctx *ctx, int *reaped, aw_error *err);

#endif
