/*
 * rounds.c - the batch-round engine of the run workers. A thread's claimed
 * batch is driven in rounds, one project at a time: every run still active
 * executes its next step, then one transaction per project moves the runs on
 * with compare-and-sets that also tell which runs the worker still holds (a
 * cancel or a reaper that got there first wins) and journals the round's
 * steps. A step's journal entry
 * is committed before the run's next step starts, which is what makes
 * "completed steps never execute again" hold across crashes. A run whose next
 * step is slow (not instant: a sleep, an http call, an approval) leaves the
 * batch for a thread of its own and moves on when its own step ends: the
 * batch's rounds last as long as instant steps, never as long as the slowest
 * step of a batch-mate (no head-of-line blocking). Before a step executes its
 * "when" is evaluated and its references resolved (flow.c) against the run's
 * flow document: the input and the results of the named steps before it, as
 * executed in this attempt or read back from the journal at the claim - the
 * same values either way. A failed step's run is retried or failed by
 * after_failure: the permanent codes, the step's retry policy, the run's
 * max_attempts.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/clock.h"
#include "awooop/crypto.h"
#include "awooop/json.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/redact.h"
#include "awooop/executor.h"
#include "awooop/str.h"
#include "awooop/worker.h"
#include "run_hooks.h"
#include "run_span.h"
#include "transition.h"
#include "worker.h"

int (*aw_worker_fault_hook)(const char *run_id, int step_no);

typedef struct {
	aw_run_claim *c;
	slot *sl;
	json_t *wf, *input;
	int next, nsteps, active;
	int claimed; /* still "claimed" in the store: the first round's txn starts it */
	int64_t deadline_ns;
	/* this round */
	int executed;
	int approved; /* the next step parked and was approved: it runs with that */
	aw_step_outcome outcome;
	aw_err step_err;
	char step_msg[160];
	json_t *result;
	char started[AW_TS_LEN + 1], finished[AW_TS_LEN + 1];
	/* data and control flow (flow.c) */
	json_t *doc;	/* the flow document, made when a name or a reference needs it */
	json_t *args;	/* the next step's args with references resolved (NULL: as written) */
	int prepared;	/* 1 + the step that skip, args and ref_err were prepared for */
	int skip;	/* its "when" does not hold: journaled skipped, result null */
	aw_err ref_err; /* its references do not resolve (or resolve to invalid args) */
	char ref_msg[160];
	int tries;    /* the step's finished executions before this one (journal) */
	aw_err cause; /* this round: the code its failure is classified by */
} job;

/* Releases what a job owns. */
static void job_clear(job *j)
{
	json_decref(j->wf);
	json_decref(j->input);
	json_decref(j->result);
	json_decref(j->doc);
	json_decref(j->args);
	j->wf = j->input = j->result = j->doc = j->args = NULL;
}

int worker_backoff_ms(uint64_t *rng, int attempts, int base, int cap)
{
	double d = base;
	for (int i = 1; i < attempts && d < cap; i++)
		d *= 2;
	if (d > cap)
		d = cap;
	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	double jitter = 0.75 + (double)(*rng % 1000) / 2000.0; /* 0.75 .. 1.25 */
	return (int)(d * jitter);
}

uint64_t worker_seed(void)
{
	uint64_t v = 0;
	if (aw_random_bytes(&v, sizeof v) != 0 || !v)
		v = (uint64_t)aw_clock_mono_ns() | 1;
	return v;
}

static aw_ctx project_ctx(const aw_worker *w, const char *project)
{
	aw_ctx c;
	aw_ctx_system(&c, project);
	AW_COPY_ARRAY(c.principal, w->id);
	return c;
}

static void slots_clear(aw_worker *w, thread_ctx *tc)
{
	pthread_mutex_lock(&w->mu);
	for (int i = 0; i < w->o.batch; i++)
		tc->slots[i].active = 0;
	pthread_mutex_unlock(&w->mu);
}

/* Moves the jobs js[idx[0..n)] along path (transition.c: one checked,
 * audited compare-and-set); jobs whose run did not move (cancelled, reaped)
 * are deactivated. Each record names this worker and the attempt. */
static aw_err move_path(aw_worker *w, aw_run_txn *x, job *js, const int *idx, int n,
			const aw_run_state *path, int hops, const aw_run_change *chg,
			const char *error_code, aw_error *err)
{
	if (n == 0)
		return AW_OK;
	aw_run_mover *m = aw_calloc((size_t)n, sizeof *m);
	json_t **d = aw_calloc((size_t)n, sizeof *d);
	int *ok = aw_calloc((size_t)n, sizeof *ok);
	aw_err e = AW_OK;
	for (int i = 0; m && d && ok && i < n; i++) {
		const aw_run_claim *c = js[idx[i]].c;
		if (!(d[i] = json_pack("{s:s, s:i}", "worker", w->id, "attempt", c->attempts)))
			break;
		m[i] = (aw_run_mover){c->run_id,     c->trace_id,   d[i],
				      c->prev_state, c->claimed_at, c->queue[0] ? c->queue : NULL};
	}
	if (!m || !d || !ok || (n && !d[n - 1]))
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	else
		e = run_move(x, m, n, path, hops, chg, error_code, ok, err);
	for (int i = 0; !e && i < n; i++)
		if (!ok[i])
			js[idx[i]].active = 0;
	for (int i = 0; d && i < n; i++)
		json_decref(d[i]);
	free(m);
	free(d);
	free(ok);
	return e;
}

static aw_err move_many(aw_worker *w, aw_run_txn *x, job *js, const int *idx, int n,
			aw_run_state from, aw_run_state to, const aw_run_change *chg,
			const char *error_code, aw_error *err)
{
	aw_run_state path[] = {from, to};
	return move_path(w, x, js, idx, n, path, 1, chg, error_code, err);
}

/* 1 when a step of j's workflow may park the run (an approval resumes it
 * without counting an attempt, so its journal must be read at every claim). */
static int parks(const job *j)
{
	size_t i;
	json_t *step;
	json_array_foreach (j->wf, i, step) {
		const char *kind = json_string_value(json_object_get(step, "kind"));
		const aw_executor *x = kind ? aw_executor_find(kind) : NULL;
		if (x && x->parks)
			return 1;
	}
	return 0;
}

static json_t *flow_doc(job *j)
{
	if (!j->doc)
		j->doc = aw_run_flow_doc(j->input);
	return j->doc;
}

/* Adds a completed step's result to j's flow document when the step has a
 * name (state "succeeded" or "skipped"). -1 out of memory. */
static int remember(job *j, int step, const char *state, const json_t *result)
{
	const char *name =
		json_string_value(json_object_get(json_array_get(j->wf, (size_t)step), "name"));
	if (!name)
		return 0;
	json_t *doc = flow_doc(j);
	return doc ? aw_run_flow_add(doc, name, state, result) : -1;
}

/* The same from a journal entry read back at a claim. */
static void remember_journaled(job *j, const aw_run_step *st)
{
	json_error_t je;
	json_t *r = NULL;
	if (st->result) {
		r = json_loads(st->result, JSON_DECODE_ANY, &je);
		/* a real of 1e17 or more comes back from a jsonb column as a long
		 * integer jansson cannot hold: read such a result's integers as
		 * reals rather than lose it */
		if (!r)
			r = json_loads(st->result, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, &je);
	}
	/* out of memory: the run is left to its lease, which runs out, and the
	 * reaper re-queues it (a later reference must not find nothing) */
	if ((st->result && !r) || remember(j, st->step_no - 1, st->state, r) != 0)
		j->active = 0;
	json_decref(r);
}

/* Before the first round: where a run was attempted or started before (a
 * shutdown hands a started run back without counting its attempt) or parked, its
 * journal tells where to resume (a fresh run has no journal: no query). The claimed ->
 * running transition is written by the first round's transaction (begin_round),
 * so a batch costs no transaction of its own before its first step. */
static aw_err start_group(aw_worker *w, const aw_ctx *ctx, job *js, const int *idx, int n,
			  aw_error *err)
{
	int nre = 0;
	char(*ids)[AW_UUID_STR_LEN + 1] = aw_malloc(sizeof *ids * (size_t)n);
	if (!ids)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		js[idx[i]].claimed = 1;
		if (js[idx[i]].c->attempts > 1 || js[idx[i]].c->resumed || parks(&js[idx[i]]))
			memcpy(ids[nre++], js[idx[i]].c->run_id, sizeof ids[0]);
	}
	aw_txn *t = NULL;
	aw_run_step *steps = NULL;
	int ns = 0;
	aw_err e = AW_OK;
	if (nre && !(e = aw_store_begin(w->s, ctx, AW_TXN_READ, &t, err))) {
		e = aw_store_run_steps(t, ids, nre, &steps, &ns, err);
		aw_store_rollback(t);
	}
	for (int k = 0; !e && k < ns; k++)
		for (int i = 0; i < n; i++) {
			job *j = &js[idx[i]];
			if (strcmp(j->c->run_id, steps[k].run_id) != 0 ||
			    steps[k].step_no != j->next + 1)
				continue;
			if (strcmp(steps[k].state, "succeeded") == 0 ||
			    strcmp(steps[k].state, "skipped") == 0) {
				remember_journaled(j, &steps[k]);
				j->next++;
				j->tries = 0;
			} else {
				j->approved = strcmp(steps[k].state, "approved") == 0;
				j->tries = steps[k].tries;
			}
		}
	aw_run_steps_free(steps, ns);
	free(ids);
	return e;
}

/* claimed -> running (audited with the claim) for the runs not started yet;
 * runs that moved meanwhile (cancelled, reaped) drop out. */
static aw_err begin_round(aw_worker *w, aw_run_txn *x, job *js, const int *idx, int n,
			  aw_error *err)
{
	int *pend = aw_calloc((size_t)n + 1, sizeof *pend), np = 0;
	if (!pend)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	for (int i = 0; i < n; i++)
		if (js[idx[i]].active && js[idx[i]].claimed) {
			pend[np++] = idx[i];
			js[idx[i]].claimed = 0;
		}
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	aw_run_change chg = {.now = now, .holder = w->id, .started = 1};
	aw_err e = move_many(w, x, js, pend, np, AW_RUN_CLAIMED, AW_RUN_RUNNING, &chg, NULL, err);
	free(pend);
	return e;
}

/* Once before step j->next executes: whether its "when" holds, and its args
 * with the references resolved and checked again by its executor (what the
 * submission could not check) and for credentials (a value may come from
 * the input). A failure here fails the step, permanently (flow.c's table). */
static void prepare(job *j)
{
	if (!j->active || !j->wf || j->prepared == j->next + 1)
		return;
	json_decref(j->args);
	j->args = NULL;
	j->prepared = j->next + 1;
	j->skip = 0;
	j->ref_err = AW_OK;
	j->ref_msg[0] = '\0';
	json_t *step = json_array_get(j->wf, (size_t)j->next);
	json_t *when = json_object_get(step, "when"), *args = json_object_get(step, "args");
	int refs = args && aw_run_has_refs(args);
	if (!when && !refs)
		return;
	aw_error err = {0};
	json_t *doc = flow_doc(j);
	if (!doc) {
		j->ref_err = aw_fail(&err, AW_E_NOMEM, "out of memory");
	} else if (when && !aw_run_when_holds(when, doc)) {
		j->skip = 1;
	} else if (refs && !(j->ref_err = aw_run_resolve(args, doc, &j->args, &err))) {
		const char *kind = json_string_value(json_object_get(step, "kind"));
		const aw_executor *x = kind ? aw_executor_find(kind) : NULL;
		if (x && x->validate && x->validate(j->args, &err) != AW_OK) {
			char msg[sizeof err.msg];
			AW_COPY_ARRAY(msg, err.msg);
			char at[sizeof err.where];
			AW_COPY_ARRAY(at, err.where);
			j->ref_err = aw_fail(&err, AW_E_RUN_REF,
					     "with its references resolved, the step's args are"
					     " invalid at %.60s: %.80s",
					     at[0] ? at : "/", msg);
		} else {
			j->ref_err = aw_run_no_secrets(j->args, "/args", &err);
		}
	}
	if (j->ref_err)
		snprintf(j->ref_msg, sizeof j->ref_msg, "%.150s", err.msg);
}

/* What a step that is skipped or whose references fail "executes": nothing,
 * at once. */
static const aw_executor settled = {.kind = "settled", .instant = 1};

static const aw_executor *next_executor(job *j)
{
	prepare(j);
	if (j->active && (j->skip || j->ref_err))
		return &settled;
	const char *kind =
		json_string_value(json_object_get(json_array_get(j->wf, j->next), "kind"));
	return kind ? aw_executor_find(kind) : NULL;
}

static const char *done_state(const job *j)
{
	return j->skip ? "skipped" : "succeeded";
}

static int side_effecting(job *j)
{
	const aw_executor *x = next_executor(j);
	return x && x->side_effect;
}

/* Runs not started yet whose next step takes time are started (and so shown
 * `running`) in a transaction of their own before it executes. */
static aw_err start_slow(aw_worker *w, const aw_ctx *ctx, job *js, const int *idx, int n,
			 aw_error *err)
{
	int slow = 0;
	for (int i = 0; i < n; i++) {
		const aw_executor *x = next_executor(&js[idx[i]]);
		slow |= js[idx[i]].active && js[idx[i]].claimed && !(x && x->instant);
	}
	if (!slow)
		return AW_OK;
	aw_run_txn x;
	aw_err e = run_txn_begin(w->s, ctx, &x, err);
	if (e)
		return e;
	return run_txn_end(&x, begin_round(w, &x, js, idx, n, err), err);
}

static void fill_step(const job *j, aw_run_step *st, const char *state)
{
	memset(st, 0, sizeof *st);
	memcpy(st->run_id, j->c->run_id, sizeof st->run_id);
	st->step_no = j->next + 1;
	/* kind: a registered step kind (the workflow was validated); state: a
	 * literal of this file. "" rather than a cut name if ever not. */
	(void)!AW_STR_COPY(st->kind, json_string_value(json_object_get(
					     json_array_get(j->wf, j->next), "kind")));
	(void)!AW_STR_COPY(st->state, state);
	aw_run_step_key(j->c->run_id, st->step_no, st->idem_key, sizeof st->idem_key);
	st->attempt = j->c->attempts;
	st->tries = j->tries;
	AW_COPY_ARRAY(st->started_at, j->started);
}

/* The journal entry of j's executed step, in state `state`; its result is
 * malloc'd (the caller frees st->result). */
static void journal_entry(const job *j, aw_run_step *st, const char *state)
{
	fill_step(j, st, state);
	AW_COPY_ARRAY(st->finished_at, j->finished);
	st->tries = j->tries + 1;
	if (j->step_err)
		(void)!AW_STR_COPY(st->error_code, aw_err_code(j->step_err)); /* <= 17 bytes */
	st->result = j->result ? aw_json_dump(j->result) : NULL;
}

/* Before a side-effecting live step: a "started" journal entry, so an effect
 * interrupted mid-flight is visible in the journal. */
static aw_err mark_started(aw_worker *w, const aw_ctx *ctx, job *js, const int *idx, int n,
			   aw_error *err)
{
	aw_run_step *st = aw_calloc((size_t)n + 1, sizeof *st);
	char(*ids)[AW_UUID_STR_LEN + 1] = aw_malloc(sizeof *ids * ((size_t)n + 1));
	int *held = aw_calloc((size_t)n + 1, sizeof *held);
	int m = 0;
	aw_err e = AW_OK;
	if (!st || !ids || !held) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		job *j = &js[idx[i]];
		if (j->active && side_effecting(j) && strcmp(j->c->mode, "live") == 0)
			memcpy(ids[m++], j->c->run_id, sizeof ids[0]);
	}
	if (m == 0)
		goto out;
	aw_run_txn x;
	if ((e = run_txn_begin(w->s, ctx, &x, err)))
		goto out;
	e = begin_round(w, &x, js, idx, n, err);
	if (!e)
		e = aw_store_run_lock_held(x.t, ids, m, w->id, "running", held, err);
	int k = 0;
	for (int i = 0; !e && i < m; i++)
		for (int q = 0; q < n; q++) {
			job *j = &js[idx[q]];
			if (strcmp(j->c->run_id, ids[i]) != 0)
				continue;
			if (!held[i])
				j->active = 0;
			else
				fill_step(j, &st[k++], "started");
		}
	if (!e)
		e = aw_store_run_steps_put(x.t, st, k, err);
	e = run_txn_end(&x, e, err);
out:
	free(st);
	free(ids);
	free(held);
	return e;
}

static void execute(aw_worker *w, job *j)
{
	prepare(j);
	json_t *step = json_array_get(j->wf, j->next);
	const char *kind = json_string_value(json_object_get(step, "kind"));
	const aw_executor *x = kind ? aw_executor_find(kind) : NULL;
	json_t *args = j->args ? j->args : json_object_get(step, "args");
	json_t *empty = args ? NULL : json_object();
	char key[AW_UUID_STR_LEN + 16], tp[AW_TRACEPARENT_LEN + 1];
	aw_run_step_key(j->c->run_id, j->next + 1, key, sizeof key);
	aw_trace run_trace = {.flags = 1}, hop;
	AW_COPY_ARRAY(run_trace.trace_id, j->c->trace_id);
	AW_COPY_ARRAY(run_trace.span_id, "0000000000000001");
	aw_trace_child(&run_trace, &hop);
	aw_trace_format(&hop, tp);
	aw_step_call call = {.run_id = j->c->run_id,
			     .project = j->c->project_id,
			     .step_no = j->next + 1,
			     .idem_key = key,
			     .traceparent = tp,
			     .args = args ? args : empty,
			     .input = j->input,
			     .workflow = j->wf,
			     .deadline_ns = j->deadline_ns,
			     .stop = &j->sl->stop,
			     .store = w->s,
			     .holder = w->id,
			     .attempt = j->c->attempts,
			     .outcome = &j->outcome,
			     .approved = j->approved};
	aw_error err = {0};
	j->result = NULL;
	j->outcome = AW_STEP_NEXT;
	aw_clock_now(j->started);
	int64_t t0 = aw_clock_mono_ns();
	if (j->skip) {
		j->step_err = AW_OK; /* nothing executes; the result is null */
	} else if (j->ref_err) {
		j->step_err = aw_fail(&err, j->ref_err, "%s", j->ref_msg);
	} else if (!x) {
		j->step_err = aw_fail(&err, AW_E_RUN_WORKFLOW, "unknown step kind");
	} else if (x->side_effect && strcmp(j->c->mode, "shadow") == 0) {
		json_t *intent = x->intent ? x->intent(call.args) : json_object();
		j->result = json_pack("{s:b, s:o*}", "shadow", 1, "intended", intent);
		j->step_err = j->result ? AW_OK : aw_fail(&err, AW_E_NOMEM, "out of memory");
	} else {
		j->step_err = x->run(&call, &j->result, &err);
	}
	aw_clock_now(j->finished);
	j->approved = 0;
	snprintf(j->step_msg, sizeof j->step_msg, "%.150s", j->step_err ? err.msg : "");
	if (j->step_err && !j->result)
		j->result = json_pack("{s:s}", "error", j->step_msg);
	if (j->result)
		aw_redact_json_for(j->c->project_id, j->result,
				   NULL); /* the journal keeps no secret */
	/* what later steps may refer to: the result as journaled */
	if (!j->step_err && j->outcome == AW_STEP_NEXT &&
	    remember(j, j->next, done_state(j), j->result) != 0) {
		j->step_err = aw_fail(&err, AW_E_NOMEM, "out of memory");
		snprintf(j->step_msg, sizeof j->step_msg, "%.150s", err.msg);
	}
	j->cause = j->step_err ? aw_run_failure_cause(j->step_err, j->step_msg) : AW_OK;
	json_decref(empty);
	j->executed = 1;
	aw_metrics_run_event("step", 1);
	run_span_step(&hop, j->c->run_id, j->c->project_id, j->next + 1, x ? x->kind : NULL,
		      j->c->mode, j->skip, j->outcome, j->step_err, t0);
}

typedef struct {
	aw_worker *w;
	job *j;
} exec_arg;

static void *exec_thread(void *p)
{
	exec_arg *a = p;
	execute(a->w, a->j);
	return NULL;
}

#define ROUND_THREADS 32

/* One round's steps: instant ones (and a solo run's) inline, slow ones (those
 * that stayed in the batch because no solo slot was free) on threads of their
 * own (at most ROUND_THREADS at a time): a round lasts as long as its slowest
 * step, not their sum. */
static void execute_round(aw_worker *w, thread_ctx *tc, job *js, const int *idx, int n)
{
	pthread_t th[ROUND_THREADS];
	exec_arg args[ROUND_THREADS];
	int running = 0, slow = 0;
	for (int i = 0; i < n; i++) {
		js[idx[i]].executed = 0;
		const aw_executor *x = js[idx[i]].active ? next_executor(&js[idx[i]]) : NULL;
		slow |= x && !x->instant;
	}
	/* a round that waits for slow steps (no solo slot was free) needs no
	 * core meanwhile: its thread's places go to another batch */
	int paused = slow && tc && tc->placed;
	if (paused)
		worker_places_leave(w, tc);
	for (int i = 0; i < n; i++) {
		job *j = &js[idx[i]];
		if (!j->active)
			continue;
		const aw_executor *x = next_executor(j);
		if (!x || x->instant || n == 1) {
			execute(w, j);
			continue;
		}
		if (running == ROUND_THREADS) {
			for (int k = 0; k < running; k++)
				pthread_join(th[k], NULL);
			running = 0;
		}
		args[running] = (exec_arg){w, j};
		if (pthread_create(&th[running], NULL, exec_thread, &args[running]) == 0)
			running++;
		else
			execute(w, j);
	}
	for (int k = 0; k < running; k++)
		pthread_join(th[k], NULL);
	if (paused) /* 0 when stopping: the round ends and hands its runs back */
		worker_places_take(w, tc);
}

/* Where j's run goes after its step failed: failed when the failure is
 * permanent (flow.c's table, or a code the step's retry policy names) or no
 * try is left - the step's own "attempts" counted in its tries, else the
 * run's max_attempts - and retry_wait until *after* otherwise: the policy's
 * backoff, else the worker's (x2 a try, capped, +-25 % jitter). */
static aw_run_state after_failure(const aw_worker *w, uint64_t *rng, const job *j, char *after)
{
	const json_t *retry = json_object_get(json_array_get(j->wf, j->next), "retry");
	json_t *att = json_object_get(retry, "attempts"), *b = json_object_get(retry, "backoff_ms"),
	       *m = json_object_get(retry, "max_backoff_ms");
	int tries = j->tries + 1;
	int out = aw_run_failure_permanent(j->step_err, j->cause, retry) ||
		  (att ? tries >= json_integer_value(att) : j->c->attempts >= j->c->max_attempts);
	int base = b ? (int)json_integer_value(b) : w->o.retry_base_ms;
	int cap = m ? (int)json_integer_value(m) : w->o.retry_max_ms;
	if (cap < base)
		cap = base;
	aw_clock_format(aw_clock_wall_ms() +
				worker_backoff_ms(rng, att ? tries : j->c->attempts, base, cap),
			after);
	return out ? AW_RUN_FAILED : AW_RUN_RETRY_WAIT;
}

/* The round's journal entries and the transitions they cause, for one project,
 * in one transaction. Each move is a compare-and-set that also tells which
 * runs this worker still held (a cancelled or reaped run does not move and
 * gets no journal entry); runs that go on to another step are locked. A run
 * still `claimed` (its first step was instant) that finishes moves claimed ->
 * running -> succeeded in one statement. */
enum { GO, DONE, FAILED, RELEASE, DROP, PARK, SUGGEST };

/* The active runs of outcome o that are still claimed (or not); sel gets them. */
static int pick(const job *js, const int *idx, int n, const int *out, int o, int claimed, int *sel)
{
	int m = 0;
	for (int i = 0; i < n; i++)
		if (js[idx[i]].active && out[i] == o && js[idx[i]].claimed == claimed)
			sel[m++] = idx[i];
	return m;
}

static aw_err finish_round(aw_worker *w, uint64_t *rng, const aw_ctx *ctx, job *js, const int *idx,
			   int n, int stopping, aw_error *err)
{
	aw_run_step *st = aw_calloc((size_t)n + 1, sizeof *st);
	aw_run_step *last = aw_calloc((size_t)n + 1, sizeof *last);
	char(*ids)[AW_UUID_STR_LEN + 1] = aw_malloc(sizeof *ids * ((size_t)n + 1));
	int *held = aw_calloc((size_t)n + 1, sizeof *held),
	    *out = aw_calloc((size_t)n + 1, sizeof *out);
	int *sel = aw_calloc((size_t)n + 1, sizeof *sel);
	int k = 0, nd = 0;
	aw_run_txn x = {0};
	aw_err e = AW_OK;
	if (!st || !last || !ids || !held || !out || !sel) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
		goto out;
	}
	int any = 0;
	for (int i = 0; i < n; i++) {
		job *j = &js[idx[i]];
		any |= j->active;
		out[i] = !j->active			     ? DROP
			 : j->step_err == AW_E_RUN_CANCELLED ? (stopping ? RELEASE : DROP)
			 : j->step_err			     ? FAILED
			 : j->outcome == AW_STEP_PARK	     ? PARK
			 : j->outcome == AW_STEP_SUGGEST     ? SUGGEST
			 : j->next + 1 == j->nsteps	     ? DONE
							     : GO;
		if (j->active && out[i] == DROP) /* lost: not ours to write */
			j->active = 0;
	}
	if (!any)
		goto out;
	if ((e = run_txn_begin(w->s, ctx, &x, err)))
		goto out;
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	aw_run_change fin = {
		.now = now, .holder = w->id, .clear_lease = 1, .started = 1, .finished = 1};
	aw_run_change start = {.now = now, .holder = w->id, .started = 1};
	aw_run_change rel = {.now = now, .holder = w->id, .clear_lease = 1, .attempts_delta = -1};
	/* a parked run lets go of its lease; the attempt is not counted (the
	 * approval re-queues it and a worker claims it again) */
	aw_run_change park = {
		.now = now, .holder = w->id, .clear_lease = 1, .started = 1, .attempts_delta = -1};
	aw_run_state to_done[] = {AW_RUN_CLAIMED, AW_RUN_RUNNING, AW_RUN_SUCCEEDED};
	aw_run_state to_park[] = {AW_RUN_CLAIMED, AW_RUN_RUNNING, AW_RUN_WAITING_APPROVAL};
	aw_run_state to_suggest[] = {AW_RUN_CLAIMED, AW_RUN_RUNNING, AW_RUN_SUGGESTED};
	/* same outcome and same start state: one statement */
	for (int claimed = 1; claimed >= 0 && !e; claimed--) {
		aw_run_state from = claimed ? AW_RUN_CLAIMED : AW_RUN_RUNNING;
		int m = pick(js, idx, n, out, DONE, claimed, sel);
		/* their last step's entry goes into their row, not run_steps */
		for (int i = 0; i < m; i++)
			journal_entry(&js[sel[i]], &last[i], done_state(&js[sel[i]]));
		aw_run_change done = fin;
		done.last_steps = last;
		done.nlast = m;
		e = move_path(w, &x, js, sel, m, to_done + !claimed, 1 + claimed, &done, NULL, err);
		for (int i = 0; i < m; i++)
			free(last[i].result);
		for (int i = 0; i < m; i++)
			nd += js[sel[i]].active;
		m = pick(js, idx, n, out, PARK, claimed, sel);
		if (!e)
			e = move_path(w, &x, js, sel, m, to_park + !claimed, 1 + claimed, &park,
				      NULL, err);
		m = pick(js, idx, n, out, SUGGEST, claimed, sel);
		if (!e)
			e = move_path(w, &x, js, sel, m, to_suggest + !claimed, 1 + claimed, &fin,
				      NULL, err);
		m = pick(js, idx, n, out, RELEASE, claimed, sel);
		if (!e)
			e = move_many(w, &x, js, sel, m, from, AW_RUN_QUEUED, &rel, NULL, err);
		m = pick(js, idx, n, out, GO, claimed, sel);
		if (!e && claimed)
			e = move_many(w, &x, js, sel, m, from, AW_RUN_RUNNING, &start, NULL, err);
		if (e || claimed || !m)
			continue;
		for (int i = 0; i < m; i++)
			memcpy(ids[i], js[sel[i]].c->run_id, sizeof ids[0]);
		if (!(e = aw_store_run_lock_held(x.t, ids, m, w->id, "running", held, err)))
			for (int i = 0; i < m; i++)
				js[sel[i]].active = held[i];
	}
	for (int i = 0; i < n && !e; i++) {
		job *j = &js[idx[i]];
		if (!j->active || out[i] != FAILED)
			continue;
		char after[AW_TS_LEN + 1];
		aw_run_state to = after_failure(w, rng, j, after);
		aw_run_change chg = {.now = now,
				     .holder = w->id,
				     .error_code = aw_err_code(j->step_err),
				     .clear_lease = 1,
				     .run_after = to == AW_RUN_RETRY_WAIT ? after : NULL,
				     .started = 1,
				     .finished = to == AW_RUN_FAILED};
		aw_run_state path[] = {AW_RUN_CLAIMED, AW_RUN_RUNNING, to};
		int one = idx[i], c = j->claimed;
		e = move_path(w, &x, js, &one, 1, path + !c, 1 + c, &chg, aw_err_code(j->step_err),
			      err);
	}
	/* the journal: the executed step of every run that moved or is held
	 * (those that succeeded have theirs in their row already) */
	for (int i = 0; i < n && !e; i++) {
		job *j = &js[idx[i]];
		if (!j->active || out[i] == RELEASE || out[i] == DONE)
			continue;
		journal_entry(j, &st[k++],
			      j->step_err      ? "failed"
			      : out[i] == PARK ? "waiting"
					       : done_state(j));
	}
	if (!e)
		e = aw_store_run_steps_put(x.t, st, k, err);
	e = run_txn_end(&x, e, err);
	for (int i = 0; i < n; i++) {
		job *j = &js[idx[i]];
		if (!e && j->active && out[i] == GO) {
			j->claimed = 0;
			j->next++;
			j->tries = 0;
		} else {
			j->active = 0;
		}
	}
	if (!e)
		aw_metrics_run_event("succeeded", nd);
out:
	for (int i = 0; st && i < k; i++)
		free(st[i].result);
	free(st);
	free(last);
	free(ids);
	free(held);
	free(out);
	free(sel);
	return e;
}

/* Shutdown: hands runs still held back to the queue (attempt not counted). */
static void release_all(aw_worker *w, const aw_ctx *ctx, job *js, const int *idx, int n)
{
	int *rel = aw_calloc((size_t)n + 1, sizeof *rel), nr = 0;
	int *cl = aw_calloc((size_t)n + 1, sizeof *cl), nc = 0;
	for (int i = 0; rel && cl && i < n; i++)
		if (js[idx[i]].active && js[idx[i]].claimed)
			cl[nc++] = idx[i];
		else if (js[idx[i]].active)
			rel[nr++] = idx[i];
	aw_run_txn x;
	aw_error err;
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	aw_run_change chg = {.now = now, .holder = w->id, .clear_lease = 1, .attempts_delta = -1};
	if ((nr || nc) && run_txn_begin(w->s, ctx, &x, &err) == AW_OK) {
		aw_err e = move_many(w, &x, js, rel, nr, AW_RUN_RUNNING, AW_RUN_QUEUED, &chg, NULL,
				     &err);
		if (!e)
			e = move_many(w, &x, js, cl, nc, AW_RUN_CLAIMED, AW_RUN_QUEUED, &chg, NULL,
				      &err);
		run_txn_end(&x, e, &err);
	}
	free(rel);
	free(cl);
}

static int drive(aw_worker *w, thread_ctx *tc, uint64_t *rng, const aw_ctx *ctx, job *js,
		 const int *idx, int n);

/* A run that left its batch: its own claim (without the workflow and input
 * texts, parsed into j), its job, its solo slot (j.sl). */
typedef struct {
	aw_worker *w;
	aw_run_claim c;
	job j;
	uint64_t rng;
} solo_run;

static void *solo_main(void *p)
{
	solo_run *s = p;
	aw_worker *w = s->w;
	aw_ctx ctx = project_ctx(w, s->c.project_id);
	int idx = 0;
	drive(w, NULL, &s->rng, &ctx, &s->j, &idx, 1);
	slot *sl = s->j.sl;
	job_clear(&s->j);
	free(s);
	pthread_mutex_lock(&w->mu);
	sl->active = 0;
	w->solo_n--;
	pthread_cond_broadcast(&w->solo_cv);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* The batch's active runs whose next step is slow go to solo slots, each
 * driven from here on by a detached thread of its own (its lease renewed
 * through the solo slot). When every solo slot is taken a run stays, and its
 * round waits for its step. */
static void detach_slow(aw_worker *w, job *js, const int *idx, int n)
{
	for (int i = 0; i < n; i++) {
		job *j = &js[idx[i]];
		const aw_executor *x = j->active ? next_executor(j) : NULL;
		if (!x || x->instant)
			continue;
		solo_run *s = aw_calloc(1, sizeof *s);
		slot *sl = NULL;
		pthread_mutex_lock(&w->mu);
		for (int k = 0; s && !atomic_load(&w->stop) && k < w->solo_cap && !sl; k++)
			if (!w->solo[k].active)
				sl = &w->solo[k];
		if (sl) {
			memcpy(sl->run_id, j->c->run_id, sizeof sl->run_id);
			sl->stop = atomic_load(&j->sl->stop);
			sl->active = 1;
			w->solo_n++;
		}
		pthread_mutex_unlock(&w->mu);
		if (!sl) {
			free(s);
			return;
		}
		*s = (solo_run){.w = w, .c = *j->c, .j = *j, .rng = worker_seed()};
		s->c.workflow = s->c.input = NULL;
		s->j.c = &s->c;
		s->j.sl = sl;
		pthread_t th;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		int rc = pthread_create(&th, &a, solo_main, s);
		pthread_attr_destroy(&a);
		pthread_mutex_lock(&w->mu);
		if (rc != 0) { /* it stays in the batch */
			sl->active = 0;
			w->solo_n--;
			pthread_cond_broadcast(&w->solo_cv);
		} else { /* the solo thread's now, with its workflow and input */
			j->sl->active = 0;
		}
		pthread_mutex_unlock(&w->mu);
		if (rc != 0) {
			free(s);
			return;
		}
		j->active = 0;
		j->wf = j->input = j->doc = j->args = NULL; /* the solo thread's now */
	}
}

/* Drives one project's runs of a batch to the end (or until stopped). 1 when
 * the fault hook abandoned the batch. */
static int run_group(aw_worker *w, thread_ctx *tc, job *js, const int *idx, int n)
{
	aw_ctx ctx = project_ctx(w, js[idx[0]].c->project_id);
	aw_error err = {0};
	aw_err e = start_group(w, &ctx, js, idx, n, &err);
	if (e) {
		aw_log(AW_LOG_WARN, &ctx, "run batch abandoned", "code", aw_err_code(e), "detail",
		       err.msg, NULL);
		return 0;
	}
	return drive(w, tc, &tc->rng, &ctx, js, idx, n);
}

/* The rounds of runs js[idx[0..n)] (one project) until none is active (or
 * stopped); a batch (tc: its thread; a solo run has none) first lets its slow
 * runs go. 1 when the fault hook abandoned them. */
static int drive(aw_worker *w, thread_ctx *tc, uint64_t *rng, const aw_ctx *ctx, job *js,
		 const int *idx, int n)
{
	aw_error err = {0};
	aw_err e = AW_OK;
	while (!e) {
		if (tc)
			detach_slow(w, js, idx, n);
		int any = 0;
		for (int i = 0; i < n; i++)
			any |= js[idx[i]].active;
		if (!any)
			break;
		if (atomic_load(&w->stop)) {
			release_all(w, ctx, js, idx, n);
			return 0;
		}
		if ((e = start_slow(w, ctx, js, idx, n, &err)) ||
		    (e = mark_started(w, ctx, js, idx, n, &err)))
			break;
		execute_round(w, tc, js, idx, n);
		for (int i = 0; aw_worker_fault_hook && i < n; i++) {
			job *j = &js[idx[i]];
			if (j->executed && aw_worker_fault_hook(j->c->run_id, j->next + 1))
				return 1;
		}
		e = finish_round(w, rng, ctx, js, idx, n, atomic_load(&w->stop), &err);
		for (int i = 0; i < n; i++) {
			json_decref(js[idx[i]].result);
			js[idx[i]].result = NULL;
		}
	}
	if (e) /* the store failed us: the leases run out and the reaper re-queues */
		aw_log(AW_LOG_WARN, ctx, "run batch abandoned", "code", aw_err_code(e), "detail",
		       err.msg, NULL);
	return 0;
}

/* ---- held runs: from the claim to their end in the claim's transaction ---- */

/* Moves the held job j, whose run did not succeed (a step failed, parked or
 * suggested), from queued to where finish_round would have taken it, with its
 * last step's journal entry. */
static aw_err end_held(aw_worker *w, uint64_t *rng, aw_run_txn *x, job *js, int i, const char *now,
		       aw_error *err)
{
	job *j = &js[i];
	char after[AW_TS_LEN + 1];
	aw_run_state to = j->step_err		       ? after_failure(w, rng, j, after)
			  : j->outcome == AW_STEP_PARK ? AW_RUN_WAITING_APPROVAL
						       : AW_RUN_SUGGESTED;
	/* no lease to match: the row lock is the hold; the attempt counts,
	 * except for a parked run's (an approval re-queues it) */
	aw_run_change chg = {.now = now,
			     .clear_lease = 1,
			     .started = 1,
			     .finished = to == AW_RUN_FAILED || to == AW_RUN_SUGGESTED,
			     .attempts_delta = to != AW_RUN_WAITING_APPROVAL,
			     .error_code = j->step_err ? aw_err_code(j->step_err) : NULL,
			     .run_after = to == AW_RUN_RETRY_WAIT ? after : NULL,
			     .locked = 1};
	aw_run_state path[] = {AW_RUN_QUEUED, AW_RUN_CLAIMED, AW_RUN_RUNNING, to};
	aw_err e = move_path(w, x, js, &i, 1, path, 3, &chg, chg.error_code, err);
	if (!e && !j->active) /* the hold is a row lock: nobody else moves it */
		e = aw_fail(err, AW_E_INTERNAL, "a held run did not move");
	if (e)
		return e;
	aw_run_step st;
	journal_entry(j, &st,
		      j->step_err		      ? "failed"
		      : to == AW_RUN_WAITING_APPROVAL ? "waiting"
						      : done_state(j));
	e = aw_store_run_steps_put(x->t, &st, 1, err);
	free(st.result);
	return e;
}

/* Runs held by a claim (aw_store_run_claim: never started, every step
 * instant) are driven to their end inside the claim's transaction t: their
 * steps execute one after another, then per project one statement moves the
 * succeeded ones queued -> claimed -> running -> succeeded (the last step's
 * entry in the row, the others' in run_steps), audited like a round; a run
 * that failed, parked or suggested moves on its own. t is ended here: its
 * commit is the claim too (of these and of t's claimed runs). Nothing an
 * instant step does leaves the process, so a failure before the commit
 * leaves the runs queued as they were, to be executed again at their claim. */
aw_err worker_finish_held(aw_worker *w, uint64_t *rng, aw_txn *t, aw_run_claim *c, int n,
			  aw_error *err)
{
	job *js = aw_calloc((size_t)n + 1, sizeof *js);
	int *order = aw_calloc((size_t)n + 1, sizeof *order);
	slot none = {0}; /* held runs have no slot: nothing stops them */
	int total = 0, k = 0, nd = 0;
	for (int i = 0; js && i < n; i++) {
		json_error_t je;
		js[i].c = &c[i];
		js[i].sl = &none;
		js[i].wf = json_loads(c[i].workflow, 0, &je);
		js[i].input = c[i].input ? json_loads(c[i].input, JSON_DECODE_ANY, &je) : NULL;
		js[i].nsteps = (int)json_array_size(js[i].wf);
		js[i].active = js[i].nsteps > 0;
		js[i].deadline_ns = aw_clock_mono_ns() + (int64_t)c[i].timeout_s * 1000000000LL;
		c[i].attempts++; /* this attempt: the move counts it */
		total += js[i].nsteps;
	}
	aw_run_step *st = aw_calloc((size_t)total + 1, sizeof *st);
	aw_err e = AW_OK;
	if (!js || !order || !st) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++)
		if (!js[i].active) { /* the claim holds none without steps: memory */
			e = aw_fail(err, AW_E_NOMEM, "out of memory");
			goto out;
		}
	/* every step, one after another; the entries of all but each run's
	 * last step are journaled as rows */
	for (int i = 0; i < n; i++) {
		job *j = &js[i];
		while (j->active) {
			execute(w, j);
			if (aw_worker_fault_hook &&
			    aw_worker_fault_hook(j->c->run_id, j->next + 1)) {
				e = aw_fail(err, AW_E_INTERNAL, "abandoned by the fault hook");
				goto out;
			}
			if (j->step_err || j->outcome != AW_STEP_NEXT || j->next + 1 == j->nsteps)
				break;
			journal_entry(j, &st[k++], done_state(j));
			json_decref(j->result);
			j->result = NULL;
			j->next++;
			j->tries = 0;
		}
	}
	/* one project after another, in the order of their ids: two workers'
	 * transactions lock the projects' chain heads in the same order */
	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = 1; i < n; i++)
		for (int q = i;
		     q > 0 && strcmp(c[order[q - 1]].project_id, c[order[q]].project_id) > 0; q--) {
			int tmp = order[q];
			order[q] = order[q - 1];
			order[q - 1] = tmp;
		}
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	aw_run_step *last = aw_calloc((size_t)n + 1, sizeof *last),
		    *ps = aw_calloc((size_t)k + 1, sizeof *ps);
	int *sel = aw_calloc((size_t)n + 1, sizeof *sel);
	if (!last || !ps || !sel)
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	for (int a = 0; a < n && !e;) {
		int b = a, m = 0, np = 0;
		while (b < n && strcmp(c[order[b]].project_id, c[order[a]].project_id) == 0)
			b++;
		aw_ctx ctx = project_ctx(w, c[order[a]].project_id);
		aw_run_txn x;
		run_txn_wrap(t, &ctx, &x);
		e = aw_txn_set_ctx(t, &ctx, err);
		for (int q = a; !e && q < b; q++) {
			job *j = &js[order[q]];
			if (!j->step_err && j->outcome == AW_STEP_NEXT) {
				journal_entry(j, &last[m], done_state(j));
				sel[m++] = order[q];
			} else {
				e = end_held(w, rng, &x, js, order[q], now, err);
			}
		}
		/* the succeeded ones: one statement, their last step in the row */
		aw_run_change fin = {.now = now,
				     .clear_lease = 1,
				     .started = 1,
				     .finished = 1,
				     .attempts_delta = 1,
				     .last_steps = last,
				     .nlast = m,
				     .locked = 1};
		aw_run_state path[] = {AW_RUN_QUEUED, AW_RUN_CLAIMED, AW_RUN_RUNNING,
				       AW_RUN_SUCCEEDED};
		if (!e)
			e = move_path(w, &x, js, sel, m, path, 3, &fin, NULL, err);
		for (int q = 0; !e && q < m; q++)
			if (!js[sel[q]].active)
				e = aw_fail(err, AW_E_INTERNAL, "a held run did not move");
		for (int q = 0; q < m; q++)
			free(last[q].result);
		nd += m;
		/* the entries of the steps before each one's last */
		for (int q = 0; q < k; q++)
			for (int r = a; r < b; r++)
				if (strcmp(st[q].run_id, c[order[r]].run_id) == 0) {
					ps[np++] = st[q];
					break;
				}
		if (!e)
			e = aw_store_run_steps_put(t, ps, np, err);
		e = run_txn_end(&x, e, err);
		a = b;
	}
	free(last);
	free(ps);
	free(sel);
out:
	if (e)
		aw_store_rollback(t);
	else
		e = aw_store_commit(t, err);
	if (!e) { /* counted once committed: a claim rolled back claimed nothing */
		aw_metrics_run_event("claimed", n);
		aw_metrics_run_event("succeeded", nd);
	}
	for (int q = 0; st && q < k; q++)
		free(st[q].result);
	free(st);
	for (int i = 0; js && i < n; i++)
		job_clear(&js[i]);
	free(js);
	free(order);
	return e;
}

void worker_process(aw_worker *w, thread_ctx *tc, aw_run_claim *c, int n)
{
	job *js = aw_calloc((size_t)n, sizeof *js);
	int *idx = aw_calloc((size_t)n, sizeof *idx);
	int *seen = aw_calloc((size_t)n, sizeof *seen);
	if (!js || !idx || !seen)
		goto out;
	int64_t now = aw_clock_mono_ns();
	pthread_mutex_lock(&w->mu);
	for (int i = 0; i < n; i++) {
		job *j = &js[i];
		json_error_t je;
		j->c = &c[i];
		j->sl = &tc->slots[i];
		memcpy(j->sl->run_id, c[i].run_id, sizeof j->sl->run_id);
		j->sl->stop = 0;
		j->sl->active = 1;
		j->wf = json_loads(c[i].workflow, 0, &je);
		j->input = c[i].input ? json_loads(c[i].input, JSON_DECODE_ANY, &je) : NULL;
		j->nsteps = (int)json_array_size(j->wf);
		j->active = j->nsteps > 0;
		j->deadline_ns = now + (int64_t)c[i].timeout_s * 1000000000LL;
	}
	pthread_mutex_unlock(&w->mu);
	/* one project at a time (its transactions, its audit chain), the
	 * smallest group first: a tenant's one run claimed beside another
	 * tenant's 63 does not wait for their round */
	for (int i = 0; i < n; i++)
		for (int k = 0; k < n; k++)
			seen[i] -= strcmp(c[k].project_id, c[i].project_id) == 0; /* -size */
	for (;;) {
		int best = -1;
		for (int i = 0; i < n; i++)
			if (seen[i] < 0 && (best < 0 || seen[i] > seen[best]))
				best = i;
		if (best < 0)
			break;
		int m = 0;
		for (int k = best; k < n; k++)
			if (seen[k] < 0 && strcmp(c[k].project_id, c[best].project_id) == 0) {
				seen[k] = 1;
				idx[m++] = k;
			}
		if (run_group(w, tc, js, idx, m))
			break;
	}
out:
	for (int i = 0; js && i < n; i++)
		job_clear(&js[i]);
	free(js);
	free(idx);
	free(seen);
	slots_clear(w, tc);
}
