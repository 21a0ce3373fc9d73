/*
 * budget.c - the token and cost budget service (see budget.h): admission
 * and reservation in one write transaction, settlement inside the caller's
 * transaction (the gateway's audit batch) with the alert thresholds it
 * crosses, suspension and resumption (audited), status and history, and the
 * reaper of reservations whose holder died.
 *
 * A rolling window's row holds its reservations; the spend it settled lives
 * in hourly rows "h:<hour>" besides. Admission locks the window's row first
 * (the upsert of its limits), then sums the hours in the window into it, then
 * reserves: every settlement updates the window's row too, so it either
 * committed before the lock (and is in the sum) or waits for it.
 */
#include "awooop/budget.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "awooop/audit.h"
#include "awooop/clock.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/run.h"
#include "awooop/str.h"
#include "budget_hooks.h"

#define BUDGET_CONTRACT "default"
#define NO_COST_LIMIT (-1)

/* ------------------------------------------------------------ periods */

static _Atomic int hour_shift; /* budget_hooks.h */

void budget_test_shift_hours(int hours)
{
	atomic_store(&hour_shift, hours);
}

static time_t now_s(void)
{
	return (time_t)(aw_clock_wall_ms() / 1000) + (time_t)atomic_load(&hour_shift) * 3600;
}

void aw_budget_period_key(const char *period, char out[16])
{
	if (period && !strcmp(period, "rolling")) {
		snprintf(out, 16, "rolling");
		return;
	}
	time_t now = now_s();
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(out, 16, period && !strcmp(period, "month") ? "%Y-%m" : "%Y-%m-%d", &tm);
}

/* The start of the hour `ago` hours before this one. */
static time_t hour_start(int ago)
{
	time_t t = now_s() - (time_t)ago * 3600;
	return t - t % 3600;
}

/* The hourly row of the hour `ago` hours before this one. */
static void bucket_key(int ago, char out[16])
{
	time_t t = hour_start(ago);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 16, "h:%Y-%m-%dT%H", &tm);
}

/* When the period's spend resets, for the answer and the status. */
/* When the period's spend is forgotten, in words; the seconds until then
 * (a rolling window: until the next hour, when its oldest hour ages out). */
static long resets_at(const char *period, int window_h, char *out, size_t cap)
{
	time_t now = now_s();
	struct tm tm;
	gmtime_r(&now, &tm);
	if (!strcmp(period, "rolling")) {
		snprintf(out, cap, "hourly, as spend older than %d h ages out", window_h);
		return (long)(3600 - now % 3600);
	}
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	if (!strcmp(period, "month")) {
		tm.tm_mday = 1;
		tm.tm_mon++;
	} else {
		tm.tm_mday++;
	}
	time_t next = timegm(&tm); /* normalises the month and year */
	gmtime_r(&next, &tm);
	strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return (long)(next - now);
}

long long aw_budget_cost(const aw_budget_price *p, long long in, long long out)
{
	return (long long)ceil((double)in * p->in + (double)out * p->out);
}

static double usd(long long micro)
{
	return (double)micro / 1e6;
}

/* ------------------------------------------------------------ the contract */

typedef struct {
	char period[8];
	int window_h;
	aw_budget_amount limit;
	long long per_run; /* < 0: none */
	int kill;
	int alerts[AW_BUDGET_MAX_ALERTS], nalerts;
	aw_budget_price worst; /* the dearest of the ask's models */
} budget_cfg;

static const json_t *price_of(const json_t *prices, const char *model)
{
	const json_t *p = json_object_get(prices, model);
	return p ? p : json_object_get(prices, "*");
}

/* The project's budget (AW_E_CONTRACT_NOT_FOUND: none), and the prices of
 * ask's models. */
static aw_err load(aw_policy_cache *pc, const aw_ctx *ctx, aw_budget_ask *ask, budget_cfg *b,
		   aw_error *err)
{
	memset(b, 0, sizeof *b);
	aw_policy pol = {0};
	aw_err e = aw_policy_effective(pc, ctx, "budget", BUDGET_CONTRACT, &pol, err);
	if (e)
		return e;
	const json_t *body = pol.body;
	if (AW_STR_COPY(b->period, json_string_value(json_object_get(body, "period")) ?: "day") <
	    0) { /* the schema allows day, month, total */
		aw_policy_release(&pol);
		return aw_fail(err, AW_E_CONTRACT_SCHEMA, "budget period is day, month or total");
	}
	json_t *v = json_object_get(body, "window_hours");
	b->window_h = json_is_number(v) ? (int)json_number_value(v) : 24;
	/* a whole number written 1e12 is an integer to the schema, a real to jansson */
	b->limit.tokens = (long long)json_number_value(json_object_get(body, "token_limit"));
	v = json_object_get(body, "cost_limit_usd");
	b->limit.cost = json_is_number(v) ? llround(json_number_value(v) * 1e6) : NO_COST_LIMIT;
	v = json_object_get(body, "per_run_token_limit");
	b->per_run = json_is_number(v) ? (long long)json_number_value(v) : -1;
	const char *action = json_string_value(json_object_get(body, "action_on_exceed"));
	b->kill = action && !strcmp(action, "kill");
	size_t i;
	json_array_foreach (json_object_get(body, "alert_at_percent"), i, v)
		if (b->nalerts < AW_BUDGET_MAX_ALERTS)
			b->alerts[b->nalerts++] = (int)json_number_value(v);
	const json_t *prices = json_object_get(body, "prices");
	for (int k = 0; ask && k < ask->nmodels && !e; k++) {
		const json_t *p = price_of(prices, ask->models[k]);
		aw_budget_price pr = {
			json_number_value(json_object_get(p, "input_per_mtok")),
			json_number_value(json_object_get(p, "output_per_mtok")),
		};
		if (!p && b->limit.cost >= 0)
			e = aw_fail(err, AW_E_BUDGET_PRICE,
				    "the budget limits cost but has no price for model %s (add "
				    "prices.%s or a default prices[\"*\"])",
				    ask->models[k], ask->models[k]);
		ask->prices[k] = pr;
		b->worst.in = fmax(b->worst.in, pr.in);
		b->worst.out = fmax(b->worst.out, pr.out);
	}
	aw_policy_release(&pol);
	return e;
}

/* ------------------------------------------------------------ suspensions seen */

/* What this process last read of projects' suspensions: a call of a project
 * without a budget (which reserves nothing, so reads nothing in a write
 * transaction) trusts a reading younger than SUSPENSION_TTL_MS instead of a
 * store read per call. A suspension by another process therefore stops new
 * calls within that; calls in flight are cut by the gateway's watcher, which
 * reads the store itself. */
#define SUSPENSION_TTL_MS 250
static struct {
	char project[AW_PROJECT_MAX + 1];
	int suspended;
	int64_t read_ns;
} seen[64];
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;

static void seen_set(const char *project, int suspended)
{
	pthread_mutex_lock(&seen_mu);
	int slot = 0;
	for (int i = 0; i < 64; i++) {
		if (!strcmp(seen[i].project, project)) {
			slot = i;
			break;
		}
		if (seen[i].read_ns < seen[slot].read_ns) /* the oldest goes */
			slot = i;
	}
	if (AW_STR_COPY(seen[slot].project, project) < 0) { /* not remembered: read again */
		pthread_mutex_unlock(&seen_mu);
		return;
	}
	seen[slot].suspended = suspended;
	seen[slot].read_ns = aw_clock_mono_ns();
	pthread_mutex_unlock(&seen_mu);
}

/* 1 suspended, 0 not, -1 not seen lately. */
static int seen_get(const char *project)
{
	int v = -1;
	int64_t now = aw_clock_mono_ns();
	pthread_mutex_lock(&seen_mu);
	for (int i = 0; i < 64; i++)
		if (seen[i].project[0] && !strcmp(seen[i].project, project) &&
		    !aw_clock_older_than(seen[i].read_ns, now, SUSPENSION_TTL_MS * 1000000LL))
			v = seen[i].suspended;
	pthread_mutex_unlock(&seen_mu);
	return v;
}

/* ------------------------------------------------------------ admission */

/* Who imposes a suspension by hand: the platform (a platform-admin key, which
 * only __platform__ has, or a system context) or the project's own operator. */
static const char *imposer(const aw_ctx *ctx)
{
	return ctx->scope >= AW_SCOPE_PLATFORM_ADMIN ? "platform" : "project";
}

/* What a refused call's detail says of who lifts a suspension. */
static const char *lifter(const aw_budget_state *st)
{
	return !strcmp(st->imposed_by, "platform")
		       ? "the platform imposed it; only the platform lifts it (a platform-admin "
			 "key: awooop budget resume)"
		       : "an operator resumes it (awooop budget resume)";
}

/* Suspends the project, recording who imposed it ("platform", "project" or
 * "budget"). A suspension the platform imposed stays the platform's: the
 * project suspending it again changes nothing (else its own resume would
 * lift the platform's). */
static aw_err suspend_in(aw_txn *t, const aw_ctx *ctx, const char *reason, const char *imposed_by,
			 aw_error *err)
{
	aw_budget_state st;
	aw_err e = aw_store_budget_state_get(t, &st, err);
	if (e)
		return e;
	if (st.suspended && !strcmp(st.imposed_by, "platform") && strcmp(imposed_by, "platform"))
		return AW_OK;
	st.suspended = 1;
	if (AW_STR_COPY(st.reason, reason) < 0 || AW_STR_COPY(st.imposed_by, imposed_by) < 0)
		return aw_fail_at(err, AW_E_REQ_INVALID, "/reason",
				  "reason must be a string of at most %zu bytes",
				  sizeof st.reason - 1);
	aw_clock_now(st.since);
	AW_COPY_ARRAY(st.by, ctx->principal);
	e = aw_store_budget_state_set(t, &st, err);
	json_t *p = json_pack("{s:s,s:s}", "reason", reason, "imposed_by", imposed_by);
	if (!e)
		e = aw_audit_record(t, ctx, "budget.suspend", ctx->project, p, err);
	json_decref(p);
	return e;
}

/* Cancels the project's runs that are not finished (line 3). */
static void cancel_runs(aw_store *s, const aw_ctx *ctx)
{
	static const aw_run_state live[] = {AW_RUN_QUEUED, AW_RUN_CLAIMED, AW_RUN_RUNNING,
					    AW_RUN_WAITING_APPROVAL, AW_RUN_RETRY_WAIT};
	for (size_t k = 0; k < sizeof live / sizeof live[0]; k++) {
		aw_run *runs = NULL;
		int n = 0;
		aw_error err = {0};
		if (aw_run_list(s, ctx, aw_run_state_name(live[k]), NULL, 1000, &runs, &n, &err))
			continue;
		for (int i = 0; i < n; i++) {
			aw_run done;
			if (aw_run_cancel(s, ctx, runs[i].run_id, &done, &err) == AW_OK)
				aw_run_free(&done);
		}
		aw_runs_free(runs, n);
	}
}

/* The settled spend of the rolling window, summed into its row under the
 * row's lock (see the file's header). */
static aw_err window_refresh(aw_txn *t, const budget_cfg *b, aw_error *err)
{
	char from[16];
	aw_budget_amount sum;
	bucket_key(b->window_h - 1, from);
	aw_err e = aw_store_budget_period_ensure(t, "rolling", &b->limit, err);
	if (!e)
		e = aw_store_budget_window_sum(t, from, &sum, err);
	if (!e)
		e = aw_store_budget_window_set(t, "rolling", &sum, err);
	return e;
}

/* The most output tokens a call with this prompt may still produce in p, at
 * the price w (< 1: none). *by_cost: the cost limit is the tighter one. */
static long long room(const aw_budget_period *p, const aw_budget_price *w, long long prompt,
		      int *by_cost)
{
	long long o = p->limit.tokens - p->reserved.tokens - p->settled.tokens - prompt;
	*by_cost = 0;
	if (p->limit.cost < 0)
		return o;
	long long rc = p->limit.cost - p->reserved.cost - p->settled.cost;
	long long oc = aw_budget_cost(w, prompt, 0) > rc ? -1
		       : w->out > 0
			       ? (long long)floor(((double)rc - (double)prompt * w->in) / w->out)
			       : o;
	while (oc > 0 && aw_budget_cost(w, prompt, oc) > rc)
		oc--;
	if (oc < o) {
		*by_cost = 1;
		o = oc;
	}
	return o;
}

/* Reserves prompt + *out in the period's row; clamps *out to what remains
 * when the whole does not fit. *fits 0: not even one output token does. */
static aw_err reserve_period(aw_txn *t, const budget_cfg *b, const char *key, long long prompt,
			     long long *out, int *fits, aw_budget_period *p, int *by_cost,
			     aw_error *err)
{
	aw_budget_amount n = {prompt + *out, aw_budget_cost(&b->worst, prompt, *out)};
	int ok = 0, found = 0;
	aw_err e = aw_store_budget_reserve(t, key, &b->limit, &n, &ok, err);
	if (!e && !ok && /* the period's first call, or a new limit: then once more */
	    !(e = aw_store_budget_period_ensure(t, key, &b->limit, err)))
		e = aw_store_budget_reserve(t, key, &b->limit, &n, &ok, err);
	if (!e && !ok && !(e = aw_store_budget_period_get(t, key, p, &found, err))) {
		long long o = room(p, &b->worst, prompt, by_cost);
		if (o >= 1) {
			*out = o;
			n = (aw_budget_amount){prompt + o, aw_budget_cost(&b->worst, prompt, o)};
			e = aw_store_budget_reserve(t, key, &b->limit, &n, &ok, err);
		}
	}
	*fits = ok;
	return e;
}

/* The per-run limit: the run's own row ("run:<id>") takes the same
 * reservation; when the run has less left, the call's answer is clamped to it
 * (and the period's reservation shrunk to match), or it is refused. */
static aw_err run_reserve(aw_txn *t, const budget_cfg *b, const char *period, const char *run_id,
			  long long prompt, long long *out, aw_error *err)
{
	char key[80];
	aw_budget_run_key(run_id, key);
	budget_cfg rb = *b;
	rb.limit = (aw_budget_amount){b->per_run, NO_COST_LIMIT};
	long long o = *out;
	aw_budget_period p;
	int fits = 0, by_cost = 0;
	aw_err e = reserve_period(t, &rb, key, prompt, &o, &fits, &p, &by_cost, err);
	if (e)
		return e;
	if (!fits)
		return aw_fail(err, AW_E_BUDGET_RUN,
			       "run %s has spent its %lld tokens (%lld settled, %lld reserved); "
			       "it does not reset",
			       run_id, p.limit.tokens, p.settled.tokens, p.reserved.tokens);
	if (o < *out) { /* give the period back what the run cannot use */
		int ok = 0;
		aw_budget_amount less = {o - *out, aw_budget_cost(&b->worst, prompt, o) -
							   aw_budget_cost(&b->worst, prompt, *out)};
		e = aw_store_budget_reserve(t, period, &b->limit, &less, &ok, err);
		*out = o;
	}
	return e;
}

/* Under a per-run limit every model call belongs to a live run of the
 * project: a call that could leave out its run id, or name a run it made
 * up, would escape the limit (a fresh id per call is a fresh limit). */
static aw_err live_run(aw_txn *t, const char *run_id, long long per_run, aw_error *err)
{
	if (!run_id || !run_id[0])
		return aw_fail(err, AW_E_BUDGET_NO_RUN,
			       "the project's budget limits each run to %lld tokens "
			       "(per_run_token_limit): a model call must name its run "
			       "(X-Awooop-Run-Id)",
			       per_run);
	char state[24];
	aw_err e = aw_store_budget_run_state(t, run_id, state, err);
	if (e)
		return e;
	static const char *const live[] = {"queued",	       "claimed",    "running",
					   "waiting_approval", "retry_wait", NULL};
	for (int i = 0; live[i]; i++)
		if (!strcmp(state, live[i]))
			return AW_OK;
	return aw_fail(err, AW_E_BUDGET_NO_RUN,
		       state[0] ? "run %s is %s: under the budget's per_run_token_limit only a "
				  "live run's steps call models"
				: "run %s%s is no run of this project: under the budget's "
				  "per_run_token_limit a model call names the run it works for",
		       run_id, state);
}

static aw_err refuse(aw_error *err, const budget_cfg *b, const char *key, const aw_budget_period *p,
		     int by_cost)
{
	char reset[64];
	long wait = resets_at(b->period, b->window_h, reset, sizeof reset);
	/* spent by settled calls alone, only the reset frees it (the answer's
	 * Retry-After); else calls in flight may give some back any moment */
	int settled =
		by_cost ? p->settled.cost >= p->limit.cost : p->settled.tokens >= p->limit.tokens;
	if (by_cost)
		aw_fail(err, AW_E_BUDGET_EXHAUSTED,
			"the %s cost budget of period %s is spent (%.6f of %.6f USD settled, "
			"%.6f reserved by calls in flight); it resets %s%s",
			b->period, key, usd(p->settled.cost), usd(p->limit.cost),
			usd(p->reserved.cost), strchr(reset, ',') ? "" : "at ", reset);
	else
		aw_fail(err, AW_E_BUDGET_EXHAUSTED,
			"the %s token budget of period %s is spent (%lld of %lld settled, %lld "
			"reserved by calls in flight); it resets %s%s",
			b->period, key, p->settled.tokens, p->limit.tokens, p->reserved.tokens,
			strchr(reset, ',') ? "" : "at ", reset);
	if (err && settled && wait > 0)
		err->retry_after_s = (int)wait;
	return AW_E_BUDGET_EXHAUSTED;
}

/* ------------------------------------------------------------ virtual keys */

/* "No limit" of a key row's tokens (a row always has one). */
#define KEY_NO_TOKENS 4000000000000000000LL
/* The ledger period of calls admitted by key limits alone (the project has
 * no budget contract): one row, without limits, that holds them. */
#define KEYS_PERIOD "keys"

static int key_counts(const aw_budget_key *k)
{
	return k && k->key_id && k->key_id[0] &&
	       (k->rpm > 0 || k->tpm > 0 || k->budget.tokens >= 0 || k->budget.cost >= 0);
}

/* The key's row names: "kr:<key>:<minute>" (requests), "kt:<key>:<minute>"
 * (tokens), "kb:<key>:<period>" (its budget); a minute is UTC
 * "YYYY-MM-DDTHH:MM", so rows of a key sort by time. */
static void key_minute(int ago, char out[20])
{
	time_t t = now_s() - (time_t)ago * 60;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 20, "%Y-%m-%dT%H:%M", &tm);
}

static void key_row(char kind, const char *key_id, const char *when, char out[96])
{
	snprintf(out, 96, "k%c:%s:%s", kind, key_id, when);
}

static void key_budget_row(const aw_budget_key *k, char out[96])
{
	char when[16];
	if (!k->period || !strcmp(k->period, "total"))
		snprintf(when, sizeof when, "total");
	else
		aw_budget_period_key(k->period, when);
	key_row('b', k->key_id, when, out);
}

static long to_next_minute(void)
{
	return (long)(60 - now_s() % 60);
}

/* A key's rows of minutes before the last two go (their calls have ended:
 * a tokens row with a reservation open stays until it closes). Once a
 * minute per key and kind: on the minute row's creation. */
static aw_err key_forget(aw_txn *t, char kind, const char *key_id, aw_error *err)
{
	char from[96], before[96], old[20];
	key_row(kind, key_id, "", from);
	key_minute(2, old);
	key_row(kind, key_id, old, before);
	return aw_store_budget_forget(t, from, before, kind == 'r', err);
}

/* Takes the part of the prompt + from reservation above prompt + to out of
 * rows [0, n) (a later row clamped the answer). */
static aw_err shrink(aw_txn *t, char (*rows)[96], int n, const aw_budget_price *w, long long prompt,
		     long long from, long long to, aw_error *err)
{
	aw_budget_amount less = {from - to,
				 aw_budget_cost(w, prompt, from) - aw_budget_cost(w, prompt, to)};
	aw_err e = AW_OK;
	for (int i = 0; i < n && !e; i++)
		e = aw_store_budget_unreserve(t, rows[i], &less, err);
	return e;
}

/* The key's requests of this minute: one more, or AW_E_KEY_RPM. */
static aw_err key_rpm(aw_txn *t, const aw_budget_key *k, aw_error *err)
{
	char minute[20], row[96];
	key_minute(0, minute);
	key_row('r', k->key_id, minute, row);
	aw_budget_amount limit = {k->rpm, NO_COST_LIMIT}, one = {1, 0};
	int ok = 0;
	aw_err e = aw_store_budget_reserve(t, row, &limit, &one, &ok, err);
	if (!e && !ok && !(e = aw_store_budget_period_ensure(t, row, &limit, err)) &&
	    !(e = key_forget(t, 'r', k->key_id, err)))
		e = aw_store_budget_reserve(t, row, &limit, &one, &ok, err);
	if (e || ok)
		return e;
	aw_fail(err, AW_E_KEY_RPM,
		"this key made its %lld model calls of the minute %s UTC (its rpm); the next "
		"minute starts in %ld s",
		k->rpm, minute, to_next_minute());
	if (err)
		err->retry_after_s = (int)to_next_minute();
	return AW_E_KEY_RPM;
}

/* The key's budget and this minute's tokens take the call's reservation
 * too (rows after the project's period and run rows, rows[0..*nrows)):
 * clamped to the smaller remainder (the earlier rows shrunk to match), or
 * refused. The rows it reserved are appended to rows and to extra. */
static aw_err key_reserve(aw_txn *t, const budget_cfg *b, const aw_budget_key *k, long long prompt,
			  long long *out, char (*rows)[96], int *nrows, char *extra, size_t cap,
			  aw_error *err)
{
	for (int pass = 0; pass < 2; pass++) {
		char kind = pass == 0 ? 'b' : 't';
		budget_cfg kb = *b;
		if (kind == 'b') {
			if (k->budget.tokens < 0 && k->budget.cost < 0)
				continue;
			kb.limit = (aw_budget_amount){k->budget.tokens >= 0 ? k->budget.tokens
									    : KEY_NO_TOKENS,
						      k->budget.cost};
			key_budget_row(k, rows[*nrows]);
		} else {
			if (k->tpm <= 0)
				continue;
			kb.limit = (aw_budget_amount){k->tpm, NO_COST_LIMIT};
			char minute[20];
			key_minute(0, minute);
			key_row('t', k->key_id, minute, rows[*nrows]);
		}
		long long o = *out;
		aw_budget_period p;
		int fits = 0, by_cost = 0, found = 0;
		/* a minute's first call: the row is made, and old ones go */
		aw_err e = AW_OK;
		if (kind == 't' &&
		    !(e = aw_store_budget_period_get(t, rows[*nrows], &p, &found, err)) && !found)
			e = key_forget(t, 't', k->key_id, err);
		if (!e)
			e = reserve_period(t, &kb, rows[*nrows], prompt, &o, &fits, &p, &by_cost,
					   err);
		if (e)
			return e;
		if (!fits && kind == 't') {
			aw_fail(err, AW_E_KEY_TPM,
				"this key's calls of the minute hold or used %lld of its %lld "
				"tokens per minute (%lld settled, %lld reserved by calls in "
				"flight); this call needs at least %lld; the next minute starts "
				"in %ld s",
				p.settled.tokens + p.reserved.tokens, p.limit.tokens,
				p.settled.tokens, p.reserved.tokens, prompt + 1, to_next_minute());
			if (err)
				err->retry_after_s = (int)to_next_minute();
			return AW_E_KEY_TPM;
		}
		if (!fits) {
			char reset[64];
			const char *period = k->period ? k->period : "total";
			long wait = strcmp(period, "total")
					    ? resets_at(period, 24, reset, sizeof reset)
					    : 0;
			if (by_cost)
				aw_fail(err, AW_E_KEY_BUDGET,
					"this key's cost budget (%s) is spent: %.6f of %.6f USD "
					"settled, %.6f reserved by calls in flight%s%s",
					period, usd(p.settled.cost), usd(p.limit.cost),
					usd(p.reserved.cost), wait ? "; it resets at " : "",
					wait ? reset : "");
			else
				aw_fail(err, AW_E_KEY_BUDGET,
					"this key's token budget (%s) is spent: %lld of %lld "
					"settled, %lld reserved by calls in flight%s%s",
					period, p.settled.tokens, p.limit.tokens, p.reserved.tokens,
					wait ? "; it resets at " : "", wait ? reset : "");
			int settled = by_cost ? p.settled.cost >= p.limit.cost
					      : p.settled.tokens >= p.limit.tokens;
			if (err && settled && wait > 0)
				err->retry_after_s = (int)wait;
			return AW_E_KEY_BUDGET;
		}
		if (o < *out && (e = shrink(t, rows, *nrows, &b->worst, prompt, *out, o, err)))
			return e;
		*out = o;
		size_t used = strlen(extra);
		snprintf(extra + used, cap - used, "%s%s", used ? " " : "", rows[*nrows]);
		(*nrows)++;
	}
	return AW_OK;
}

aw_err aw_budget_key_usage(aw_store *s, const aw_ctx *ctx, const aw_budget_key *k, json_t **out,
			   aw_error *err)
{
	*out = NULL;
	char minute[20], rrow[96], trow[96], brow[96];
	key_minute(0, minute);
	key_row('r', k->key_id, minute, rrow);
	key_row('t', k->key_id, minute, trow);
	key_budget_row(k, brow);
	aw_budget_period r, tk, bk;
	int rf = 0, tf = 0, bf = 0;
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err);
	if (!e)
		e = aw_store_budget_period_get(t, rrow, &r, &rf, err);
	if (!e)
		e = aw_store_budget_period_get(t, trow, &tk, &tf, err);
	if (!e)
		e = aw_store_budget_period_get(t, brow, &bk, &bf, err);
	if (t)
		aw_store_rollback(t);
	if (e)
		return e;
	json_t *o = json_pack("{s:s,s:I,s:I,s:I}", "minute", minute, "requests",
			      (json_int_t)(rf ? r.reserved.tokens : 0), "tokens_reserved",
			      (json_int_t)(tf ? tk.reserved.tokens : 0), "tokens_settled",
			      (json_int_t)(tf ? tk.settled.tokens : 0));
	if (o && (k->budget.tokens >= 0 || k->budget.cost >= 0)) {
		const char *key = strrchr(brow, ':') + 1;
		json_t *bj = json_pack("{s:s,s:I,s:I,s:f,s:f}", "period", key, "tokens_settled",
				       (json_int_t)(bf ? bk.settled.tokens : 0), "tokens_reserved",
				       (json_int_t)(bf ? bk.reserved.tokens : 0),
				       "cost_settled_usd", usd(bf ? bk.settled.cost : 0),
				       "cost_reserved_usd", usd(bf ? bk.reserved.cost : 0));
		json_object_set_new(o, "budget", bj);
	}
	*out = o;
	return o ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
}

aw_err aw_budget_admit(aw_store *s, aw_policy_cache *pc, const aw_ctx *ctx, aw_budget_ask *ask,
		       aw_budget_hold *h, aw_error *err)
{
	memset(h, 0, sizeof *h);
	memset(ask->prices, 0, sizeof *ask->prices * (size_t)ask->nmodels);
	aw_txn *t = NULL;
	budget_cfg b;
	aw_err e = load(pc, ctx, ask, &b, err);
	const aw_budget_key *key = key_counts(ask->key) ? ask->key : NULL;
	if (e == AW_E_CONTRACT_NOT_FOUND) { /* no budget: only a suspension stops calls */
		int suspended = 0;
		e = aw_budget_suspended_recent(s, ctx, &suspended, err);
		if (!e && suspended)
			e = aw_fail(err, AW_E_BUDGET_SUSPENDED,
				    "project %s is suspended; an operator resumes it "
				    "(awooop budget resume)",
				    ctx->project);
		if (e || !key)
			return e;
		if (key->budget.cost >= 0) {
			e = aw_fail(err, AW_E_BUDGET_PRICE,
				    "this key's budget limits cost, but the project has no budget "
				    "contract to price its models (activate a budget with prices)");
			goto out;
		}
		/* the key's limits alone: its rows, and one row without limits
		 * that holds the reservations (KEYS_PERIOD) */
		memset(&b, 0, sizeof b);
		snprintf(b.period, sizeof b.period, KEYS_PERIOD);
		b.limit = (aw_budget_amount){KEY_NO_TOKENS, NO_COST_LIMIT};
		b.per_run = -1;
		h->keyed = 1;
	}
	if (e)
		goto out;
	h->kill = b.kill;
	memcpy(h->alerts, b.alerts, sizeof h->alerts);
	h->nalerts = b.nalerts;
	if (h->keyed)
		snprintf(h->period_key, sizeof h->period_key, KEYS_PERIOD);
	else
		aw_budget_period_key(b.period, h->period_key);
	if (AW_STR_COPY(h->call_id, ask->call_id) < 0) {
		e = aw_fail(err, AW_E_REQ_INVALID, "call id longer than %zu bytes",
			    sizeof h->call_id - 1);
		goto out;
	}
	AW_COPY_ARRAY(h->project, ctx->project);
	long long prompt = ask->prompt;
	long long out = ask->max_out >= 0 ? ask->max_out : AW_BUDGET_DEFAULT_MAX_OUT;
	int fits = 0, by_cost = 0;
	aw_budget_state st = {0};
	aw_budget_period p;
	/* the reservation checks the suspension too: it is read only on a miss */
	char rows[4][96], extra[256] = "";
	int nrows = 0;
	if ((e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err)) ||
	    (key && key->rpm > 0 && (e = key_rpm(t, key, err))) ||
	    (b.per_run >= 0 && (e = live_run(t, ask->run_id, b.per_run, err))) ||
	    (!strcmp(b.period, "rolling") && (e = window_refresh(t, &b, err))) ||
	    (e = reserve_period(t, &b, h->period_key, prompt, &out, &fits, &p, &by_cost, err)) ||
	    (!fits && (e = aw_store_budget_state_get(t, &st, err))))
		goto out;
	if (st.suspended) {
		e = aw_fail(err, AW_E_BUDGET_SUSPENDED, "project %s is suspended (%s) by %s; %s",
			    ctx->project, st.reason, st.by, lifter(&st));
		goto out;
	}
	if (!fits) {
		if (h->kill &&
		    !(e = suspend_in(t, ctx, "budget spent", "budget", err))) { /* line 3 */
			aw_error cerr = {0};
			h->killed = aw_store_commit(t, &cerr) == AW_OK;
			t = NULL;
			if (h->killed) {
				seen_set(ctx->project, 1);
				cancel_runs(s, ctx);
			}
		}
		if (!e)
			e = refuse(err, &b, h->period_key, &p, by_cost);
		goto out;
	}
	if (b.per_run >= 0 &&
	    (e = run_reserve(t, &b, h->period_key, ask->run_id, prompt, &out, err)))
		goto out;
	if (AW_STR_COPY(rows[nrows], h->period_key) < 0) { /* a period key: fits */
		e = aw_fail(err, AW_E_INTERNAL, "budget period key too long");
		goto out;
	}
	nrows++;
	if (b.per_run >= 0)
		aw_budget_run_key(ask->run_id, rows[nrows++]);
	if (key &&
	    (e = key_reserve(t, &b, key, prompt, &out, rows, &nrows, extra, sizeof extra, err)))
		goto out;
	char lease[AW_TS_LEN + 1];
	aw_clock_format(aw_clock_wall_ms() + ask->lease_ms, lease);
	h->reserved = (aw_budget_amount){prompt + out, aw_budget_cost(&b.worst, prompt, out)};
	e = aw_store_budget_hold(t, ask->call_id, h->period_key, ask->run_id ? ask->run_id : "",
				 &h->reserved, ask->holder, lease, extra, err);
	if (!e)
		e = aw_store_commit(t, err);
	t = NULL;
	if (e)
		goto out;
	h->active = 1;
	h->prompt = prompt;
	aw_metrics_budget(ctx->project, "reserved", (double)h->reserved.tokens);
	if (ask->max_out >= 0 && out < ask->max_out)
		aw_metrics_budget(ctx->project, "clamped", 0);
	ask->max_out = out;
out:
	if (t)
		aw_store_rollback(t);
	if (e == AW_E_BUDGET_EXHAUSTED || e == AW_E_BUDGET_SUSPENDED || e == AW_E_BUDGET_RUN ||
	    e == AW_E_BUDGET_PRICE || e == AW_E_BUDGET_NO_RUN || e == AW_E_KEY_RPM ||
	    e == AW_E_KEY_TPM || e == AW_E_KEY_BUDGET)
		aw_metrics_budget(ctx->project, h->killed ? "suspended" : "refused", 0);
	return e;
}

/* ------------------------------------------------------------ settlement */

aw_budget_amount aw_budget_charge(const aw_budget_hold *h, const aw_budget_amount *used)
{
	if (!used)
		return h->reserved;
	aw_budget_amount u = *used; /* never capped at the reservation */
	u.tokens = u.tokens < 0 ? 0 : u.tokens;
	u.cost = u.cost < 0 ? 0 : u.cost;
	return u;
}

/* budget.alert records for the thresholds this settlement crossed: the row
 * lock of the period orders settlements, so each crossing is seen once. */
static aw_err alerts(aw_txn *t, const aw_budget_hold *h, const aw_budget_amount *u,
		     const aw_budget_period *after, aw_error *err)
{
	aw_err e = AW_OK;
	for (int i = 0; i < h->nalerts && !e; i++) {
		const char *what = NULL;
		long long limit = 0, now = 0;
		if (after->limit.tokens > 0) {
			long long at = (after->limit.tokens * h->alerts[i] + 99) / 100;
			if (after->settled.tokens - u->tokens < at && after->settled.tokens >= at)
				what = "tokens", limit = after->limit.tokens,
				now = after->settled.tokens;
		}
		if (!what && after->limit.cost > 0) {
			long long at = (after->limit.cost * h->alerts[i] + 99) / 100;
			if (after->settled.cost - u->cost < at && after->settled.cost >= at)
				what = "cost_micro_usd", limit = after->limit.cost,
				now = after->settled.cost;
		}
		if (!what)
			continue;
		aw_ctx ctx;
		aw_ctx_system(&ctx, h->project);
		json_t *p = json_pack("{s:s,s:i,s:s,s:I,s:I}", "period", h->period_key, "percent",
				      h->alerts[i], "measure", what, "settled", (json_int_t)now,
				      "limit", (json_int_t)limit);
		e = aw_audit_record(t, &ctx, "budget.alert", h->project, p, err);
		json_decref(p);
		aw_metrics_budget(h->project, "alert", 0);
		aw_log(AW_LOG_WARN, &ctx, "budget alert threshold crossed", "period", h->period_key,
		       "measure", what, NULL);
	}
	return e;
}

/* The alerting metrics of a settled period: the share of its limit spent,
 * and an overshoot (settled past the limit: admission should make that
 * impossible, short of a limit lowered under calls already admitted). */
static void used_metrics(const char *project, const aw_budget_period *p)
{
	double r = 0;
	if (p->limit.tokens > 0)
		r = (double)p->settled.tokens / (double)p->limit.tokens;
	if (p->limit.cost > 0 && (double)p->settled.cost / (double)p->limit.cost > r)
		r = (double)p->settled.cost / (double)p->limit.cost;
	if (p->limit.tokens <= 0 && p->limit.cost <= 0)
		return; /* no limit: no share */
	aw_metrics_budget_used(project, r);
}

aw_err aw_budget_settle(aw_txn *t, const aw_budget_hold *h, const aw_budget_amount *used,
			const char *model, aw_error *err)
{
	if (!h->active)
		return AW_OK;
	int found = 0;
	char bucket[16];
	bucket_key(0, bucket);
	aw_budget_amount u = aw_budget_charge(h, used);
	aw_budget_period after = {0};
	aw_err e = aw_store_budget_close(t, h->call_id, &u, model ? model : "", bucket, &after,
					 &found, err);
	if (!e && found) {
		long long over = u.tokens - h->reserved.tokens;
		aw_metrics_budget(h->project, "settled", (double)u.tokens);
		if (over < 0)
			aw_metrics_budget(h->project, "released", (double)-over);
		if (over > 0 || u.cost > h->reserved.cost) { /* the reservation under-counted */
			char call[80], res[24], billed[24], cost[48];
			AW_COPY_ARRAY(call, h->call_id);
			snprintf(res, sizeof res, "%lld", h->reserved.tokens);
			snprintf(billed, sizeof billed, "%lld", u.tokens);
			snprintf(cost, sizeof cost, "%lld of %lld", u.cost, h->reserved.cost);
			aw_metrics_budget(h->project, "overshoot", (double)(over > 0 ? over : 0));
			aw_ctx ctx;
			aw_ctx_system(&ctx, h->project);
			aw_log(AW_LOG_WARN, &ctx,
			       "budget overshoot: the upstream billed more than the call reserved",
			       "call_id", call, "reserved_tokens", res, "billed_tokens", billed,
			       "cost_micro_usd", cost, "model", model ? model : "", NULL);
		}
		if (u.cost > 0)
			aw_metrics_budget_cost(h->project, u.cost);
		if (!h->keyed) /* a key's limits alone: no project budget to fill */
			used_metrics(h->project, &after);
		e = alerts(t, h, &u, &after, err);
	}
	return e;
}

/* ------------------------------------------------------------ line 3 */

aw_err aw_budget_suspended(aw_store *s, const aw_ctx *ctx, int *suspended, aw_error *err)
{
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err);
	aw_budget_state st = {0};
	if (!e)
		e = aw_store_budget_state_get(t, &st, err);
	*suspended = st.suspended;
	if (t)
		aw_store_rollback(t);
	if (!e)
		seen_set(ctx->project, *suspended);
	return e;
}

aw_err aw_budget_suspended_recent(aw_store *s, const aw_ctx *ctx, int *suspended, aw_error *err)
{
	*suspended = seen_get(ctx->project);
	return *suspended >= 0 ? AW_OK : aw_budget_suspended(s, ctx, suspended, err);
}

aw_err aw_budget_suspend(aw_store *s, const aw_ctx *ctx, const char *reason, aw_error *err)
{
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err);
	if (!e)
		e = suspend_in(t, ctx, reason, imposer(ctx), err);
	if (!e)
		e = aw_store_commit(t, err);
	else if (t)
		aw_store_rollback(t);
	if (!e) {
		seen_set(ctx->project, 1);
		cancel_runs(s, ctx);
	}
	return e;
}

aw_err aw_budget_resume(aw_store *s, const aw_ctx *ctx, aw_error *err)
{
	aw_txn *t = NULL;
	aw_budget_state st = {0};
	aw_err e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err);
	if (!e)
		e = aw_store_budget_state_get(t, &st, err);
	if (!e && st.suspended && !strcmp(st.imposed_by, "platform") &&
	    strcmp(imposer(ctx), "platform"))
		e = aw_fail(err, AW_E_BUDGET_PLATFORM,
			    "project %s was suspended by the platform (%s, by %s since %s): only "
			    "the platform lifts it (a platform-admin key: awooop budget resume)",
			    ctx->project, st.reason, st.by, st.since);
	json_t *p = st.suspended ? json_pack("{s:s,s:s,s:s}", "was_imposed_by", st.imposed_by,
					     "was_by", st.by, "reason", st.reason)
				 : NULL;
	if (!e) {
		st.suspended = 0;
		snprintf(st.reason, sizeof st.reason, "resumed");
		aw_clock_now(st.since);
		AW_COPY_ARRAY(st.by, ctx->principal);
		st.imposed_by[0] = '\0';
		e = aw_store_budget_state_set(t, &st, err);
	}
	if (!e)
		e = aw_audit_record(t, ctx, "budget.resume", ctx->project, p, err);
	json_decref(p);
	if (!e)
		e = aw_store_commit(t, err);
	else if (t)
		aw_store_rollback(t);
	if (!e)
		seen_set(ctx->project, 0);
	return e;
}

/* ------------------------------------------------------------ reading */

static json_t *amounts(const aw_budget_amount *a)
{
	return json_pack("{s:I,s:f}", "tokens", (json_int_t)a->tokens, "cost_usd", usd(a->cost));
}

/* {"limit", "reserved", "settled", "remaining"} of a row: tokens, and USD
 * when it has a cost limit. */
static json_t *row_json(const aw_budget_period *p)
{
	json_t *o =
		json_pack("{s:I,s:I,s:I,s:I}", "limit", (json_int_t)p->limit.tokens, "reserved",
			  (json_int_t)p->reserved.tokens, "settled", (json_int_t)p->settled.tokens,
			  "remaining",
			  (json_int_t)(p->limit.tokens - p->reserved.tokens - p->settled.tokens));
	json_object_set_new(o, "cost_limit_usd",
			    p->limit.cost >= 0 ? json_real(usd(p->limit.cost)) : json_null());
	json_object_set_new(o, "cost_reserved_usd", json_real(usd(p->reserved.cost)));
	json_object_set_new(o, "cost_settled_usd", json_real(usd(p->settled.cost)));
	if (p->limit.cost >= 0)
		json_object_set_new(
			o, "cost_remaining_usd",
			json_real(usd(p->limit.cost - p->reserved.cost - p->settled.cost)));
	return o;
}

aw_err aw_budget_status(aw_store *s, aw_policy_cache *pc, const aw_ctx *ctx, const char *run_id,
			json_t **out, aw_error *err)
{
	*out = NULL;
	budget_cfg b;
	aw_err e = load(pc, ctx, NULL, &b, err);
	if (e && e != AW_E_CONTRACT_NOT_FOUND)
		return e;
	int has_budget = e == AW_OK;
	if (!has_budget)
		snprintf(b.period, sizeof b.period, "day");
	char key[16], since[AW_TS_LEN + 1], reset[64], from[16];
	aw_budget_period_key(b.period, key);
	resets_at(b.period, b.window_h, reset, sizeof reset);
	int rolling = !strcmp(b.period, "rolling");
	if (rolling) { /* the ledger lines of the window */
		bucket_key(b.window_h - 1, from);
		aw_clock_format((int64_t)hour_start(b.window_h - 1) * 1000, since);
	}
	aw_txn *t = NULL;
	aw_budget_period p, rp;
	aw_budget_sums sums;
	aw_budget_amount window = {0, 0};
	aw_budget_model *models = NULL;
	int found = 0, rfound = 0, nm = 0;
	aw_budget_state st = {0};
	char run_key[80];
	aw_budget_run_key(run_id ? run_id : "", run_key);
	if ((e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err)) ||
	    (e = aw_store_budget_period_get(t, key, &p, &found, err)) ||
	    (rolling && (e = aw_store_budget_window_sum(t, from, &window, err))) ||
	    (run_id && (e = aw_store_budget_period_get(t, run_key, &rp, &rfound, err))) ||
	    (e = aw_store_budget_sums(t, key, &sums, err)) ||
	    (e = aw_store_budget_models(t, key, rolling ? since : NULL, &models, &nm, err)) ||
	    (e = aw_store_budget_state_get(t, &st, err))) {
		if (t)
			aw_store_rollback(t);
		free(models);
		return e;
	}
	aw_store_rollback(t);
	if (has_budget) /* the contract's limits, whether or not a call made the row */
		p.limit = b.limit;
	if (rolling)
		p.settled = window;
	json_t *o = row_json(&p);
	json_object_update_new(o, json_pack("{s:s,s:b,s:s,s:s,s:s,s:b,s:s}", "project",
					    ctx->project, "budget", has_budget, "period", key,
					    "period_kind", b.period, "resets", reset, "suspended",
					    st.suspended, "reason", st.suspended ? st.reason : ""));
	if (st.suspended) /* who imposed it: who may lift it */
		json_object_set_new(
			o, "suspension",
			json_pack("{s:s,s:s,s:s,s:b,s:s}", "by", st.by, "imposed_by",
				  st.imposed_by[0] ? st.imposed_by : "project", "since", st.since,
				  "platform", !strcmp(st.imposed_by, "platform"), "lifted_by",
				  !strcmp(st.imposed_by, "platform") ? "platform" : "project"));
	if (rolling)
		json_object_set_new(o, "window_hours", json_integer(b.window_h));
	json_object_set_new(o, "ledger",
			    json_pack("{s:o,s:o,s:o,s:o}", "reserve", amounts(&sums.reserve),
				      "settle", amounts(&sums.settle), "release",
				      amounts(&sums.release), "reap", amounts(&sums.reap)));
	json_object_set_new(json_object_get(o, "ledger"), "overshoot", amounts(&sums.overshoot));
	json_t *ms = json_array();
	for (int i = 0; i < nm; i++)
		json_array_append_new(ms, json_pack("{s:s,s:I,s:f,s:I}", "model", models[i].model,
						    "tokens", (json_int_t)models[i].tokens,
						    "cost_usd", usd(models[i].cost), "calls",
						    (json_int_t)models[i].calls));
	free(models);
	json_object_set_new(o, "models", ms);
	if (run_id) {
		json_t *r = rfound ? row_json(&rp) : json_null();
		if (rfound)
			json_object_set_new(r, "run_id", json_string(run_id));
		json_object_set_new(o, "run", r);
	}
	*out = o;
	return o ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
}

aw_err aw_budget_history(aw_store *s, const aw_ctx *ctx, const char *period, const char *run_id,
			 long long after, int limit, json_t **out, aw_error *err)
{
	*out = NULL;
	aw_txn *t = NULL;
	aw_budget_entry *v = NULL;
	int n = 0;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err);
	if (!e)
		e = aw_store_budget_history(t, period, run_id, after, limit, &v, &n, err);
	if (t)
		aw_store_rollback(t);
	if (e)
		return e;
	json_t *entries = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(
			entries, json_pack("{s:I,s:s,s:s,s:s,s:s,s:I,s:f,s:s,s:s}", "seq",
					   (json_int_t)v[i].seq, "period", v[i].period_key,
					   "call_id", v[i].call_id, "run_id", v[i].run_id, "kind",
					   v[i].kind, "tokens", (json_int_t)v[i].tokens, "cost_usd",
					   usd(v[i].cost), "model", v[i].model, "at", v[i].at));
	*out = json_pack("{s:o,s:I}", "entries", entries, "next",
			 (json_int_t)(n ? v[n - 1].seq : after));
	free(v);
	return *out ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
}

/* ------------------------------------------------------------ spend over time */

#define SPEND_ROWS_MAX 5000
#define HOUR_MS 3600000LL
#define DAY_MS 86400000LL

static aw_err spend_time(const char *name, const char *v, int64_t *ms, aw_error *err)
{
	if (aw_clock_parse(v, ms) != 0)
		return aw_fail_at(
			err, AW_E_REQ_INVALID, name,
			"%s must be a time like 2026-11-29T09:54:27.000Z (UTC, milliseconds)",
			name);
	return AW_OK;
}

aw_err aw_budget_spend(aw_store *s, const aw_ctx *ctx, const char *bucket, const char *since,
		       const char *until, const char *by, const char *limit, json_t **out,
		       aw_error *err)
{
	*out = NULL;
	int hourly = !bucket || !strcmp(bucket, "hour");
	if (!hourly && strcmp(bucket, "day"))
		return aw_fail_at(err, AW_E_REQ_INVALID, "bucket", "bucket must be hour or day");
	aw_spend_by g = AW_SPEND_BY_MODEL;
	if (by && !strcmp(by, "key"))
		g = AW_SPEND_BY_KEY;
	else if (by && !strcmp(by, "none"))
		g = AW_SPEND_BY_NONE;
	else if (by && strcmp(by, "model"))
		return aw_fail_at(err, AW_E_REQ_INVALID, "by", "by must be model, key or none");
	long lim = 2000;
	char *end = NULL;
	if (limit &&
	    (lim = strtol(limit, &end, 10), !*limit || *end || lim < 1 || lim > SPEND_ROWS_MAX))
		return aw_fail_at(err, AW_E_REQ_INVALID, "limit", "limit must be 1..%d",
				  SPEND_ROWS_MAX);
	int64_t size = hourly ? HOUR_MS : DAY_MS, to = aw_clock_wall_ms(), from;
	aw_err e = AW_OK;
	if (until && (e = spend_time("until", until, &to, err)))
		return e;
	from = to - (hourly ? 47 : 29) * size; /* 48 hours or 30 days, this one's included */
	if (since && (e = spend_time("since", since, &from, err)))
		return e;
	from -= ((from % size) + size) % size; /* whole buckets */
	if (from >= to)
		return aw_fail_at(err, AW_E_REQ_INVALID, "until", "until must be after since");
	if (to - from > (hourly ? 31 : 400) * DAY_MS)
		return aw_fail_at(err, AW_E_REQ_INVALID, "since",
				  "the window is at most %s: narrow since and until",
				  hourly ? "31 days by the hour" : "400 days by the day");
	char a[AW_TS_LEN + 1], b[AW_TS_LEN + 1];
	aw_clock_format(from, a);
	aw_clock_format(to, b);
	aw_txn *t = NULL;
	aw_spend_row *v = NULL;
	int n = 0;
	if (!(e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err)))
		e = aw_store_budget_spend(t, hourly, a, b, g, (int)lim, &v, &n, err);
	if (t)
		aw_store_rollback(t);
	if (e)
		return e;
	const char *gname = g == AW_SPEND_BY_KEY ? "key" : g == AW_SPEND_BY_NONE ? NULL : "model";
	json_t *items = json_array();
	long long calls = 0, failed = 0, tin = 0, tout = 0;
	double cost = 0;
	for (int i = 0; i < n; i++) {
		json_t *it = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:f}", "at", v[i].at, "calls",
				       (json_int_t)v[i].calls, "failed", (json_int_t)v[i].failed,
				       "tokens_in", (json_int_t)v[i].tokens_in, "tokens_out",
				       (json_int_t)v[i].tokens_out, "tokens",
				       (json_int_t)(v[i].tokens_in + v[i].tokens_out), "cost_usd",
				       round(v[i].cost_usd * 1e6) / 1e6);
		if (it && gname)
			json_object_set_new(it, gname, json_string(v[i].group));
		json_array_append_new(items, it);
		calls += v[i].calls, failed += v[i].failed, tin += v[i].tokens_in,
			tout += v[i].tokens_out, cost += v[i].cost_usd;
	}
	free(v);
	*out = json_pack("{s:s,s:s,s:s,s:s,s:o,s:{s:I,s:I,s:I,s:I,s:I,s:f},s:b}", "bucket",
			 hourly ? "hour" : "day", "by", gname ? gname : "none", "since", a, "until",
			 b, "items", items, "totals", "calls", (json_int_t)calls, "failed",
			 (json_int_t)failed, "tokens_in", (json_int_t)tin, "tokens_out",
			 (json_int_t)tout, "tokens", (json_int_t)(tin + tout), "cost_usd",
			 round(cost * 1e6) / 1e6, "truncated", n == lim);
	return *out ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
}

/* ------------------------------------------------------------ leases */

aw_err aw_budget_renew(aw_store *s, const aw_ctx *ctx, const char *holder, int lease_ms,
		       aw_error *err)
{
	char lease[AW_TS_LEN + 1];
	aw_clock_format(aw_clock_wall_ms() + lease_ms, lease);
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err);
	if (!e)
		e = aw_store_budget_renew(t, holder, lease, err);
	if (!e)
		e = aw_store_commit(t, err);
	else if (t)
		aw_store_rollback(t);
	return e;
}

aw_err aw_budget_open(aw_store *s, const aw_ctx *ctx, long long *open, aw_error *err)
{
	aw_txn *t = NULL;
	*open = 0;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err);
	if (!e)
		e = aw_store_budget_open(t, open, err);
	if (t)
		aw_store_rollback(t);
	return e;
}

aw_err aw_budget_reap(aw_store *s, const aw_ctx *ctx, int *reaped, aw_error *err)
{
	*reaped = 0;
	char now[AW_TS_LEN + 1], bucket[16];
	aw_clock_now(now);
	bucket_key(0, bucket);
	char ids[256][64];
	int n = 0;
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err);
	if (!e)
		e = aw_store_budget_expired(t, now, ids, 256, &n, err);
	for (int i = 0; !e && i < n; i++) {
		int found = 0;
		e = aw_store_budget_close(t, ids[i], NULL, "", bucket, NULL, &found, err);
		*reaped += found;
		if (found)
			aw_metrics_budget(ctx->project, "reaped", 0);
	}
	if (!e)
		e = aw_store_commit(t, err);
	else if (t)
		aw_store_rollback(t);
	if (e)
		*reaped = 0;
	return e;
}
