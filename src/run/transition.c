/*
 * transition.c - checked, compare-and-set, audited run transitions (see
 * transition.h): the invariant every state change of a run goes through.
 */
#include "transition.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/audit.h"
#include "awooop/clock.h"
#include "awooop/metrics.h"
#include "awooop/str.h"
#include "awooop/uuid.h"

struct aw_run_pending {
	const char *run_id, *trace_id; /* borrowed from the mover: live until the end */
	const char *action;
	json_t *payload;
	char queue[AW_QUEUE_MAX + 1]; /* "" unknown: read at the end when it matters */
};

aw_err run_txn_begin(aw_store *s, const aw_ctx *ctx, aw_run_txn *x, aw_error *err)
{
	memset(x, 0, sizeof *x);
	x->ctx = ctx;
	x->owned = 1;
	return aw_store_begin(s, ctx, AW_TXN_WRITE, &x->t, err);
}

void run_txn_wrap(aw_txn *t, const aw_ctx *ctx, aw_run_txn *x)
{
	memset(x, 0, sizeof *x);
	x->t = t;
	x->ctx = ctx;
}

/* One transition as listed in a combined record. */
static json_t *step_of(const json_t *p)
{
	json_t *t = json_pack("{s:O, s:O, s:O}", "from", json_object_get(p, "from"), "to",
			      json_object_get(p, "to"), "event", json_object_get(p, "event"));
	const char *keys[] = {"at", "error_code"};
	for (size_t i = 0; t && i < 2; i++)
		if (json_object_get(p, keys[i]))
			json_object_set(t, keys[i], json_object_get(p, keys[i]));
	return t;
}

/* Queues the record of one hop of m (steals p). A later hop of the same run
 * in this txn joins its record: action of the last state, "from" of the
 * first, "transitions" listing each - the record is the atomic change. */
static aw_err queue(aw_run_txn *x, const aw_run_mover *m, const char *action, json_t *p,
		    aw_error *err)
{
	if (!p)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	for (int i = x->n - 1; i >= 0; i--) {
		if (strcmp(x->recs[i].run_id, m->run_id) != 0)
			continue;
		json_t *prev = x->recs[i].payload, *list = json_object_get(prev, "transitions");
		if (!list) {
			list = json_array();
			json_array_append_new(list, step_of(prev));
			json_object_set_new(prev, "transitions", list);
		}
		json_array_append_new(list, step_of(p));
		json_object_set(prev, "to", json_object_get(p, "to"));
		json_object_del(prev, "event");
		json_object_del(prev, "at");
		if (json_object_get(p, "error_code"))
			json_object_set(prev, "error_code", json_object_get(p, "error_code"));
		x->recs[i].action = action;
		json_decref(p);
		return AW_OK;
	}
	if (x->n == x->cap) {
		int cap = x->cap ? x->cap * 2 : 32;
		aw_run_pending *r = aw_realloc(x->recs, sizeof *r * (size_t)cap);
		if (!r) {
			json_decref(p);
			return aw_fail(err, AW_E_NOMEM, "out of memory");
		}
		x->recs = r;
		x->cap = cap;
	}
	aw_run_pending *r = &x->recs[x->n++];
	*r = (aw_run_pending){
		.run_id = m->run_id, .trace_id = m->trace_id, .action = action, .payload = p};
	if (AW_STR_COPY(r->queue, m->queue) < 0) /* a run's queue: fits */
		return aw_fail(err, AW_E_INTERNAL, "queue name longer than %d bytes", AW_QUEUE_MAX);
	return AW_OK;
}

/* The record of one hop: from/to/event, the mover's detail, the error code. */
static json_t *hop_json(const aw_run_mover *m, aw_run_state from, aw_run_state to,
			const char *error_code)
{
	json_t *d = m->detail ? json_deep_copy(m->detail) : json_object();
	if (d && error_code)
		json_object_set_new(d, "error_code", json_string(error_code));
	return d ? aw_run_move_json(from, to, d) : NULL;
}

aw_err run_move(aw_run_txn *x, const aw_run_mover *m, int n, const aw_run_state *path, int hops,
		const aw_run_change *chg, const char *error_code, int *moved, aw_error *err)
{
	if (n == 0)
		return AW_OK;
	for (int h = 0; h < hops; h++) {
		aw_err bad = aw_run_fsm_check(path[h], path[h + 1], err);
		if (bad)
			return bad;
	}
	char(*ids)[AW_UUID_STR_LEN + 1] = aw_malloc(sizeof *ids * (size_t)n);
	int one = 0, *ok = moved ? moved : &one;
	aw_err e = AW_OK;
	if (!ids || (n > 1 && !moved)) {
		e = ids ? aw_fail(err, AW_E_INTERNAL, "run_move: a batch needs moved[]")
			: aw_fail(err, AW_E_NOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		if (AW_STR_COPY(ids[i], m[i].run_id) < 0) {
			e = aw_fail(err, AW_E_REQ_ID, "run id must be a UUID");
			goto out;
		}
		ok[i] = 0;
	}
	if ((e = aw_store_run_cas_many(x->t, ids, n, aw_run_state_name(path[0]),
				       aw_run_state_name(path[hops]), chg, ok, err)))
		goto out;
	if (!moved && !ok[0]) {
		e = aw_fail(err, AW_E_RUN_STATE, "the run is no longer %s; nothing changed",
			    aw_run_state_name(path[0]));
		goto out;
	}
	for (int i = 0; i < n && !e; i++) {
		if (!ok[i])
			continue;
		/* a claim is audited with the start: a worker writes no tenant row
		 * while it claims across projects */
		if (path[0] == AW_RUN_CLAIMED && m[i].claimed_at) {
			aw_run_state prev = AW_RUN_QUEUED;
			if (m[i].prev_state)
				aw_run_state_parse(m[i].prev_state, &prev);
			json_t *p = hop_json(&m[i], prev, AW_RUN_CLAIMED, NULL);
			if (p)
				json_object_set_new(p, "at", json_string(m[i].claimed_at));
			e = queue(x, &m[i], aw_run_action(AW_RUN_CLAIMED), p, err);
		}
		for (int h = 0; h < hops && !e; h++) {
			json_t *p = hop_json(&m[i], path[h], path[h + 1],
					     h == hops - 1 ? error_code : NULL);
			/* a held run's claim is a hop of its move, at its time */
			if (p && path[h + 1] == AW_RUN_CLAIMED && m[i].claimed_at)
				json_object_set_new(p, "at", json_string(m[i].claimed_at));
			e = queue(x, &m[i], aw_run_action(path[h + 1]), p, err);
		}
	}
out:
	free(ids);
	return e;
}

/* The final states a run's records count for (awooop_run_finished_total). */
static const aw_run_state finals[] = {AW_RUN_SUCCEEDED, AW_RUN_FAILED, AW_RUN_CANCELLED,
				      AW_RUN_SUGGESTED};
#define NFINALS (sizeof finals / sizeof finals[0])

static int final_of(const char *action)
{
	for (size_t f = 0; f < NFINALS; f++)
		if (!strcmp(action, aw_run_action(finals[f])))
			return (int)f;
	return -1;
}

/* Reads the queue of the runs that end in this txn and whose mover did not
 * name it (a worker's claims do; cancel, the reaper and approvals do not):
 * one statement, only when there are such runs. */
static aw_err queues_needed(aw_run_txn *x, aw_error *err)
{
	int k = 0;
	for (int i = 0; i < x->n; i++)
		k += !x->recs[i].queue[0] && final_of(x->recs[i].action) >= 0;
	if (!k)
		return AW_OK;
	char(*ids)[AW_UUID_STR_LEN + 1] = aw_malloc(sizeof *ids * (size_t)k);
	char(*qs)[AW_QUEUE_MAX + 1] = aw_malloc(sizeof *qs * (size_t)k);
	int *at = aw_malloc(sizeof *at * (size_t)k);
	aw_err e = AW_OK;
	if (!ids || !qs || !at) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
		goto out;
	}
	k = 0;
	for (int i = 0; i < x->n; i++)
		if (!x->recs[i].queue[0] && final_of(x->recs[i].action) >= 0) {
			if (AW_STR_COPY(ids[k], x->recs[i].run_id) < 0) {
				e = aw_fail(err, AW_E_REQ_ID, "run id must be a UUID");
				goto out;
			}
			at[k++] = i;
		}
	if ((e = aw_store_run_queues_of(x->t, ids, k, qs, err)))
		goto out;
	for (int i = 0; i < k; i++)
		memcpy(x->recs[at[i]].queue, qs[i], sizeof qs[i]);
out:
	free(ids);
	free(qs);
	free(at);
	return e;
}

/* Seconds since a run's submission, from its id: a UUIDv7 minted when it
 * was submitted carries that millisecond (no read of created_at); -1 for an
 * id of another kind. */
static double since_submitted(const char *run_id, int64_t now_ms)
{
	aw_uuid u;
	if (aw_uuid_parse(run_id, &u) != 0 || (u.b[6] >> 4) != 7)
		return -1;
	int64_t at = (int64_t)aw_uuid7_ms(&u);
	return at <= now_ms ? (double)(now_ms - at) / 1000.0 : 0;
}

/* Counts the runs that ended, per queue and final state, in the txn's
 * project (a handful of queues a txn: the counts are gathered first), and
 * observes each one's time from submission to its end. */
static void count_finished(const aw_run_txn *x)
{
	int failed = 0;
	for (int i = 0; i < x->n; i++)
		failed += !strcmp(x->recs[i].action, aw_run_action(AW_RUN_FAILED));
	if (failed)
		aw_metrics_run_event("failed", failed);
	char *done = x->n ? aw_calloc((size_t)x->n, 1) : NULL;
	for (int i = 0; done && i < x->n; i++) {
		int f = final_of(x->recs[i].action);
		if (f < 0 || done[i] || !x->recs[i].queue[0])
			continue;
		int n = 0;
		for (int k = i; k < x->n; k++)
			if (!done[k] && !strcmp(x->recs[k].action, x->recs[i].action) &&
			    !strcmp(x->recs[k].queue, x->recs[i].queue)) {
				done[k] = 1;
				n++;
			}
		aw_metrics_run_finished(x->ctx->project, x->recs[i].queue,
					aw_run_state_name(finals[f]), n);
	}
	free(done);
	int64_t now_ms = aw_clock_wall_ms();
	for (int i = 0; i < x->n; i++) {
		int f = final_of(x->recs[i].action);
		double took = f < 0 || !x->recs[i].queue[0]
				      ? -1
				      : since_submitted(x->recs[i].run_id, now_ms);
		if (took >= 0)
			aw_metrics_run_duration(x->ctx->project, x->recs[i].queue,
						aw_run_state_name(finals[f]), took);
	}
}

aw_err run_txn_end(aw_run_txn *x, aw_err e, aw_error *err)
{
	/* the runs that made the same move share one record (a worker's round:
	 * one hash, one row for the batch), in the order of their first run */
	aw_audit_item *items = !e && x->n ? aw_malloc(sizeof *items * (size_t)x->n) : NULL;
	char *done = !e && x->n ? aw_calloc((size_t)x->n, 1) : NULL;
	if (!e && x->n && (!items || !done))
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	for (int i = 0; !e && items && done && i < x->n; i++) {
		int m = 0;
		for (int k = i; k < x->n; k++)
			if (!done[k] && strcmp(x->recs[k].action, x->recs[i].action) == 0) {
				items[m++] = (aw_audit_item){x->recs[k].action, x->recs[k].run_id,
							     x->recs[k].trace_id,
							     x->recs[k].payload, NULL};
				done[k] = 1;
			}
		if (m)
			e = aw_audit_record_group(x->t, x->ctx, x->recs[i].action, items, m, err);
	}
	free(done);
	if (!e)
		e = queues_needed(x, err);
	if (x->owned) {
		if (e)
			aw_store_rollback(x->t);
		else
			e = aw_store_commit(x->t, err);
	}
	/* runs that ended (the alerts on the failed-run rate): counted once
	 * committed; a wrapped txn's when recorded (its caller commits next; a
	 * rollback there counts one too many) */
	if (!e)
		count_finished(x);
	for (int i = 0; i < x->n; i++)
		json_decref(x->recs[i].payload);
	free(items);
	free(x->recs);
	memset(x, 0, sizeof *x);
	return e;
}
