/*
 * run.c - the run service: submission with idempotency, reads, cancellation,
 * checked transitions, JSON views and the journal diff. Each call is one store
 * transaction in the caller's project; every state change goes through
 * transition.c (table check, compare-and-set, audit record). Submissions wake
 * idle workers through notify.c, not by calling into them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/audit.h"
#include "awooop/clock.h"
#include "awooop/jcs.h"
#include "awooop/json.h"
#include "awooop/run.h"
#include "awooop/str.h"
#include "awooop/worker.h"
#include "awooop/executor.h"
#include "awooop/store/agent.h"
#include "awooop/uuid.h"
#include "notify.h"
#include "run_span.h"
#include "transition.h"

#define IDEM_TTL_MS (24LL * 3600 * 1000)

aw_err aw_run_transition_in(aw_txn *t, const aw_ctx *ctx, const char *run_id, const char *trace_id,
			    aw_run_state from, aw_run_state to, const aw_run_change *chg,
			    json_t *detail, aw_error *err)
{
	aw_run_txn x;
	run_txn_wrap(t, ctx, &x);
	aw_run_mover m = {.run_id = run_id, .trace_id = trace_id, .detail = detail};
	aw_run_state path[] = {from, to};
	return run_txn_end(&x, run_move(&x, &m, 1, path, 1, chg, NULL, NULL, err), err);
}

aw_err aw_run_transition(aw_store *s, const aw_ctx *ctx, const char *run_id, aw_run_state from,
			 aw_run_state to, const aw_run_change *chg, json_t *detail, aw_error *err)
{
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err);
	if (e)
		return e;
	e = aw_run_transition_in(t, ctx, run_id, NULL, from, to, chg, detail, err);
	if (e) {
		aw_store_rollback(t);
		return e;
	}
	return aw_store_commit(t, err);
}

/* One submission inside t (a write transaction of ctx->project): the
 * idempotency check, the run row, the key. *audit gets the run's first
 * transition record (NULL for a replay), for the caller to write. Nothing
 * is written when it fails before the insert (a conflicting key). With ho
 * (a reserved idle worker thread of this process), a run due now is
 * inserted already claimed in ho's name unless its queue has a concurrency
 * limit or ho is the lane's and the project has runs in flight (the store's
 * insert decides); its claim is audited with its start, as for any claim;
 * *claimed tells which once t commits. With pend (a bulk submission), a run
 * without a key, or whose key the caller found new (key_new: in no row and
 * first in the batch; then it is not looked up), is not inserted but added
 * to pend->runs, for the caller to insert with the others
 * (aw_store_run_insert_many) before anything may look it up. */
typedef struct {
	const aw_run **runs;
	int n;
	int key_new;
	/* the keys of the held-back runs (their rows go in with the runs) */
	const char **keys, **hashes, **resources;
	int nk;
} pending;

static aw_err submit_in(aw_txn *t, const aw_ctx *ctx, const aw_run_request *req,
			const char *idem_key, const char *hash, int64_t ms, const aw_run_waiter *ho,
			pending *pend, aw_run *out, int *replayed, int *claimed, json_t **audit,
			aw_error *err)
{
	memset(out, 0, sizeof *out); /* every path below may free it */
	*audit = NULL;
	char now[AW_TS_LEN + 1];
	aw_clock_format(ms, now);
	/* within a year: a typo in the year is refused rather than parked for
	 * decades (before anything is read or written) */
	int64_t at = 0;
	if (req->run_at[0] && (aw_clock_parse(req->run_at, &at) || at - ms > 366LL * 86400000))
		return aw_fail_at(err, AW_E_REQ_INVALID, "/run_at",
				  "run_at must lie within a year from now");
	aw_err e = AW_OK;
	int handoff = ho && strcmp(req->run_at, now) <= 0;
	if (strcmp(req->queue, "default") != 0) {
		int declared = 0;
		if ((e = aw_store_queue_get(t, req->queue, &declared, NULL, err)))
			return e;
		if (!declared)
			return aw_fail_at(err, AW_E_REQ_INVALID, "/queue",
					  "no queue %s in this project: declare it with PUT"
					  " /v1/projects/{project}/queues/{name}",
					  req->queue);
	}
	if (idem_key && !(pend && pend->key_new)) {
		int found = 0;
		char have[65], run_id[AW_UUID_STR_LEN + 1];
		e = aw_store_idem_get(t, "runs", idem_key, now, &found, have, run_id, sizeof run_id,
				      err);
		if (!e && found && strcmp(have, hash) != 0)
			return aw_fail(err, AW_E_RUN_IDEMPOTENCY,
				       "this Idempotency-Key was used for a different request");
		if (!e && found) {
			*replayed = 1;
			return aw_store_run_get(t, run_id, out, err);
		}
		if (e)
			return e;
	}
	aw_uuid7_str(out->run_id);
	AW_COPY_ARRAY(out->project_id, ctx->project);
	AW_COPY_ARRAY(out->state, "queued");
	if (handoff) {
		AW_COPY_ARRAY(out->state, "claimed");
		out->attempts = 1;
		if (AW_STR_COPY(out->lease_owner, ho->holder) < 0) /* a worker's id: fits */
			return aw_fail(err, AW_E_INTERNAL, "worker id longer than %d bytes",
				       AW_WORKER_ID_MAX);
		aw_clock_format(ms + ho->lease_ms, out->lease_expires_at);
	}
	AW_COPY_ARRAY(out->mode, "live");
	if (req->shadow)
		AW_COPY_ARRAY(out->mode, "shadow");
	AW_COPY_ARRAY(out->queue, req->queue);
	out->workflow = aw_json_dump(req->workflow);
	out->input = req->input ? aw_json_dump(req->input) : NULL;
	out->priority = req->priority;
	out->max_attempts = req->max_attempts;
	out->timeout_s = req->timeout_s;
	AW_COPY_ARRAY(out->trace_id, ctx->trace.trace_id);
	/* run_at: not before it; a time already past runs now */
	if (strcmp(req->run_at, now) > 0)
		AW_COPY_ARRAY(out->run_after, req->run_at);
	else
		AW_COPY_ARRAY(out->run_after, now);
	AW_COPY_ARRAY(out->created_at, now);
	AW_COPY_ARRAY(out->updated_at, now);
	if (!out->workflow || (req->input && !out->input))
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	if (pend && (!idem_key || pend->key_new))
		pend->runs[pend->n++] = out;
	else if ((e = aw_store_run_insert(t, out, handoff && ho->lane, claimed, err)))
		return e;
	if (idem_key && pend && pend->key_new) {
		pend->keys[pend->nk] = idem_key;
		pend->hashes[pend->nk] = hash;
		pend->resources[pend->nk++] = out->run_id;
	} else if (idem_key) {
		char exp[AW_TS_LEN + 1];
		aw_clock_format(ms + IDEM_TTL_MS, exp);
		if ((e = aw_store_idem_put(t, "runs", idem_key, hash, out->run_id, now, exp, err)))
			return e;
	}
	*audit = json_pack("{s:n, s:s, s:s, s:s, s:i, s:i}", "from", "to", "queued", "event",
			   "submit", "mode", out->mode, "steps",
			   (int)json_array_size(req->workflow), "priority", out->priority);
	return *audit ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
}

static aw_err submit_once(aw_store *s, const aw_ctx *ctx, const aw_run_request *req,
			  const char *idem_key, const char *hash, const aw_run_waiter *ho,
			  aw_run *out, int *replayed, aw_error *err)
{
	aw_txn *t = NULL;
	json_t *p = NULL;
	memset(out, 0, sizeof *out);
	aw_err e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err);
	if (e)
		return e;
	int claimed = 0;
	e = submit_in(t, ctx, req, idem_key, hash, aw_clock_wall_ms(), ho, NULL, out, replayed,
		      &claimed, &p, err);
	if (!e && p) {
		aw_audit_item it = {aw_run_action(AW_RUN_QUEUED), out->run_id, NULL, p, NULL};
		e = aw_audit_record_many(t, ctx, &it, 1, err);
	}
	json_decref(p);
	if (!e && *replayed) {
		aw_store_rollback(t);
		return AW_OK;
	}
	if (e)
		aw_store_rollback(t);
	else if (!(e = aw_store_commit(t, err)) && out->lease_owner[0] && !claimed) {
		/* not handed off after all: its queue has a limit, or the
		 * lane's thread was reserved and the project is busy */
		snprintf(out->state, sizeof out->state, "queued");
		out->attempts = 0;
		out->lease_owner[0] = out->lease_expires_at[0] = '\0';
	}
	if (e)
		aw_run_free(out);
	return e;
}

/* What a submission says of itself, before any store work: the key's shape
 * (key_name: where the key came from, for the error), the numbers, and with
 * a key the request's hash. */
static aw_err submit_check(const aw_run_request *req, const char *idem_key, const char *key_name,
			   char hash[65], aw_error *err)
{
	if (idem_key && !aw_run_idem_key_ok(idem_key))
		return aw_fail_at(err, AW_E_REQ_INVALID, key_name,
				  "%s must be 1..255 printable ASCII characters", key_name);
	aw_err e = aw_json_check_numbers(req->workflow, err);
	if (!e && req->input)
		e = aw_json_check_numbers(req->input, err);
	if (!e && idem_key)
		e = aw_run_request_hash(req, hash, err);
	return e;
}

aw_err aw_run_submit_in(aw_txn *t, const aw_ctx *ctx, const aw_run_request *req,
			const char *idem_key, int64_t now_ms, aw_run *out, int *replayed,
			aw_error *err)
{
	char hash[65] = "";
	json_t *p = NULL;
	int claimed = 0;
	*replayed = 0;
	memset(out, 0, sizeof *out);
	aw_err e = submit_check(req, idem_key, "idempotency_key", hash, err);
	if (!e)
		e = submit_in(t, ctx, req, idem_key, hash, now_ms, NULL, NULL, out, replayed,
			      &claimed, &p, err);
	if (!e && p) {
		aw_audit_item it = {aw_run_action(AW_RUN_QUEUED), out->run_id, NULL, p, NULL};
		e = aw_audit_record_many(t, ctx, &it, 1, err);
	}
	json_decref(p);
	if (e)
		aw_run_free(out);
	return e;
}

/* The held-back runs and their keys, written; pend is empty after. */
static aw_err flush_pending(aw_txn *t, pending *pend, int64_t ms, aw_error *err)
{
	aw_err e = pend->n ? aw_store_run_insert_many(t, pend->runs, pend->n, err) : AW_OK;
	if (!e && pend->nk) {
		char now[AW_TS_LEN + 1], exp[AW_TS_LEN + 1];
		aw_clock_format(ms, now);
		aw_clock_format(ms + IDEM_TTL_MS, exp);
		e = aw_store_idem_put_many(t, "runs", pend->keys, pend->hashes, pend->resources,
					   pend->nk, now, exp, err);
	}
	pend->n = pend->nk = 0;
	return e;
}

typedef struct {
	const char *key;
	int i;
} keyed;

static int by_key(const void *a, const void *b)
{
	const keyed *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* fresh[i] = 1 when item i (not refused) has a key that no row holds and no
 * earlier item of the batch carries: it needs no lookup of its own. The
 * others are looked up one by one, as a single submission is. */
static aw_err fresh_keys(aw_txn *t, const aw_run_batch_item *items, int n, int *fresh,
			 aw_error *err)
{
	keyed *k = aw_malloc(sizeof *k * (size_t)n);
	const char **keys = aw_malloc(sizeof *keys * (size_t)n);
	int *first = aw_malloc(sizeof *first * (size_t)n),
	    *present = aw_malloc(sizeof *present * (size_t)n);
	aw_err e =
		k && keys && first && present ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
	int nk = 0, nu = 0;
	for (int i = 0; !e && i < n; i++) {
		fresh[i] = 0;
		if (!items[i].err.err && items[i].idem_key)
			k[nk++] = (keyed){items[i].idem_key, i};
	}
	if (!e)
		qsort(k, (size_t)nk, sizeof *k, by_key);
	for (int j = 0; !e && j < nk; j++)
		if (j == 0 || strcmp(k[j].key, k[j - 1].key) != 0) {
			keys[nu] = k[j].key;
			first[nu++] = k[j].i;
		}
	if (!e && nu)
		e = aw_store_idem_present(t, "runs", keys, nu, present, err);
	for (int u = 0; !e && u < nu; u++)
		fresh[first[u]] = !present[u];
	free(k);
	free(keys);
	free(first);
	free(present);
	return e;
}

aw_err aw_run_submit_batch(aw_store *s, const aw_ctx *ctx, aw_run_batch_item *items, int n,
			   aw_error *err)
{
	if (n < 1 || n > AW_RUN_BATCH_MAX)
		return aw_fail(err, AW_E_REQ_INVALID, "a batch holds 1..%d runs", AW_RUN_BATCH_MAX);
	char(*hash)[65] = aw_calloc((size_t)n, sizeof *hash);
	aw_audit_item *audit = aw_calloc((size_t)n, sizeof *audit);
	pending pend = {.runs = aw_calloc((size_t)n, sizeof *pend.runs),
			.keys = aw_calloc((size_t)n, sizeof *pend.keys),
			.hashes = aw_calloc((size_t)n, sizeof *pend.hashes),
			.resources = aw_calloc((size_t)n, sizeof *pend.resources)};
	int *fresh = aw_calloc((size_t)n, sizeof *fresh);
	aw_txn *t = NULL;
	aw_err e = hash && audit && pend.runs && pend.keys && pend.hashes && pend.resources && fresh
			   ? AW_OK
			   : aw_fail(err, AW_E_NOMEM, "out of memory");
	for (int i = 0; !e && i < n; i++) { /* what each item says of itself */
		aw_run_batch_item *it = &items[i];
		memset(&it->run, 0, sizeof it->run);
		it->replayed = 0;
		if (!it->err.err) /* else refused by the caller (its body did not decode) */
			submit_check(&it->req, it->idem_key, "idempotency_key", hash[i], &it->err);
	}
	if (!e)
		e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err);
	if (!e)
		e = fresh_keys(t, items, n, fresh, err);
	int64_t ms = aw_clock_wall_ms();
	int na = 0;
	for (int i = 0; !e && i < n; i++) {
		aw_run_batch_item *it = &items[i];
		if (it->err.err)
			continue;
		/* a key looked up on its own may name a run of this batch: the
		 * runs held back so far go in first */
		pend.key_new = fresh[i];
		if (it->idem_key && !fresh[i] && (e = flush_pending(t, &pend, ms, err)))
			break;
		json_t *p = NULL;
		int claimed = 0;
		aw_err ie = submit_in(t, ctx, &it->req, it->idem_key, hash[i], ms, NULL, &pend,
				      &it->run, &it->replayed, &claimed, &p, &it->err);
		/* nothing written (a reused key, a run_at out of range): the item
		 * alone fails */
		if (ie == AW_E_RUN_IDEMPOTENCY || ie == AW_E_REQ_INVALID) {
			aw_run_free(&it->run);
			continue;
		}
		if (ie) { /* the transaction is lost: the whole batch */
			e = aw_fail(err, ie, "run %d of the batch: %s", i, it->err.msg);
			break;
		}
		if (p)
			audit[na++] = (aw_audit_item){aw_run_action(AW_RUN_QUEUED), it->run.run_id,
						      NULL, p, NULL};
	}
	if (!e)
		e = flush_pending(t, &pend, ms, err);
	/* the batch's runs share one record (the index finds it from each) */
	if (!e && na)
		e = aw_audit_record_group(t, ctx, aw_run_action(AW_RUN_QUEUED), audit, na, err);
	if (!e && t)
		e = aw_store_commit(t, err);
	else if (t)
		aw_store_rollback(t);
	for (int i = 0; i < na; i++) /* the payloads submit_in made */
		json_decref((json_t *)audit[i].payload);
	for (int i = 0; !e && i < n; i++) /* the runs this batch made */
		if (!items[i].err.err && !items[i].replayed)
			run_span_submitted(ctx, &items[i].run);
	if (e)
		for (int i = 0; i < n; i++)
			aw_run_free(&items[i].run);
	else if (na)
		aw_run_kick();
	free(hash);
	free(audit);
	free(pend.runs);
	free(pend.keys);
	free(pend.hashes);
	free(pend.resources);
	free(fresh);
	return e;
}

/* The claim a handed-off run is given to its worker thread with (NULL when
 * out of memory: the run's lease runs out and the reaper re-queues it). */
static aw_run_claim *claim_of(const aw_run *r)
{
	aw_run_claim *c = aw_calloc(1, sizeof *c);
	if (!c)
		return NULL;
	AW_COPY_ARRAY(c->project_id, r->project_id);
	AW_COPY_ARRAY(c->run_id, r->run_id);
	AW_COPY_ARRAY(c->queue, r->queue);
	if (!c->queue[0])
		AW_COPY_ARRAY(c->queue, "default");
	snprintf(c->prev_state, sizeof c->prev_state, "queued");
	AW_COPY_ARRAY(c->mode, r->mode);
	AW_COPY_ARRAY(c->trace_id, r->trace_id);
	AW_COPY_ARRAY(c->claimed_at, r->created_at);
	c->attempts = r->attempts;
	c->max_attempts = r->max_attempts;
	c->timeout_s = r->timeout_s;
	c->workflow = aw_strdup(r->workflow);
	c->input = r->input ? aw_strdup(r->input) : NULL;
	if (!c->workflow || (r->input && !c->input)) {
		aw_run_claims_free(c, 1);
		return NULL;
	}
	return c;
}

aw_err aw_run_submit(aw_store *s, const aw_ctx *ctx, const aw_run_request *req,
		     const char *idem_key, aw_run *out, int *replayed, aw_error *err)
{
	char hash[65] = "";
	*replayed = 0;
	aw_err e = submit_check(req, idem_key, "Idempotency-Key", hash, err);
	/* an idle worker thread of this process takes the run without a claim */
	aw_run_waiter *ho = !e ? run_handoff_reserve(s) : NULL;
	/* two submissions racing on one key: the loser retries and replays */
	for (int i = 0; !e; i++) {
		e = submit_once(s, ctx, req, idem_key, hash, ho, out, replayed, err);
		if (e != AW_E_STORE_CONFLICT || !idem_key || i == 2)
			break;
		e = AW_OK;
	}
	if (!e && !*replayed)
		run_span_submitted(ctx, out);
	if (ho) {
		aw_run_claim *c = NULL;
		if (!e && !*replayed && strcmp(out->state, "claimed") == 0)
			c = claim_of(out);
		run_handoff_give(ho, c);
		if (c)
			return e;
	}
	if (!e && !*replayed)
		aw_run_kick();
	return e;
}

static aw_err check_id(const char *run_id, aw_error *err)
{
	return aw_uuid_valid(run_id) ? AW_OK : aw_fail(err, AW_E_RUN_NOT_FOUND, "no such run");
}

aw_err aw_run_get(aw_store *s, const aw_ctx *ctx, const char *run_id, aw_run *out,
		  aw_run_step **steps, int *nsteps, aw_error *err)
{
	aw_err e = check_id(run_id, err);
	aw_txn *t = NULL;
	if (!e)
		e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err);
	if (e)
		return e;
	e = aw_store_run_get(t, run_id, out, err);
	if (!e && steps) {
		char id[1][AW_UUID_STR_LEN + 1];
		AW_COPY_ARRAY(id[0], out->run_id); /* the run just read */
		if ((e = aw_store_run_steps(t, id, 1, steps, nsteps, err)))
			aw_run_free(out);
	}
	aw_store_rollback(t);
	return e;
}

/* The item of run_id in a record of several runs (aw_audit_record_group),
 * without the members the group added; NULL when it has none. Steals doc. */
static json_t *group_item(json_t *doc, const char *run_id)
{
	size_t i;
	json_t *it, *found = NULL;
	json_array_foreach (json_object_get(doc, "items"), i, it)
		if (!found && json_is_string(json_object_get(it, "target")) &&
		    strcmp(json_string_value(json_object_get(it, "target")), run_id) == 0)
			found = json_incref(it);
	json_decref(doc);
	json_object_del(found, "target");
	json_object_del(found, "trace_id");
	return found;
}

/* The run's transitions (its audit records) inside t, oldest first. */
static aw_err transitions_in(aw_txn *t, const char *run_id, json_t **out, aw_error *err)
{
	aw_audit_row *rows = NULL;
	int n = 0;
	aw_err e = aw_store_audit_by_target(t, run_id, 1000, &rows, &n, err);
	if (e)
		return e;
	json_t *arr = json_array();
	for (int i = 0; arr && i < n; i++) {
		if (strncmp(rows[i].action, "run.", 4) != 0)
			continue;
		json_error_t je;
		json_t *p = json_loads(rows[i].payload, 0, &je);
		if (strcmp(rows[i].target, run_id) != 0) /* a round's record: this run's item */
			p = group_item(p, run_id);
		/* a record of several transitions lists them under "transitions" */
		json_t *list = json_object_get(p, "transitions");
		size_t nt = json_is_array(list) ? json_array_size(list) : 1;
		for (size_t k = 0; k < nt; k++) {
			json_t *o = json_pack("{s:s, s:s, s:I}", "at", rows[i].ts, "actor",
					      rows[i].actor, "audit_seq", (json_int_t)rows[i].seq);
			if (o && p)
				json_object_update(o, p);
			if (o && json_is_array(list))
				json_object_update(o, json_array_get(list, k));
			if (o)
				json_object_del(o, "transitions");
			json_array_append_new(arr, o);
		}
		json_decref(p);
	}
	aw_audit_rows_free(rows, n);
	*out = arr;
	return arr ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
}

aw_err aw_run_transitions(aw_store *s, const aw_ctx *ctx, const char *run_id, json_t **out,
			  aw_error *err)
{
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err);
	if (e)
		return e;
	e = transitions_in(t, run_id, out, err);
	aw_store_rollback(t);
	return e;
}

static void set_ts(json_t *o, const char *key, const char *v);

/* An agent step's sub-steps as the view shows them: each step's "calls",
 * [{seq, kind (model | tool), name, state, turn, started_at, finished_at,
 * error_code?, tool_calls? (a model call's: the tools it asked for)}] -
 * what the console draws; the results stay in the journal (the step's
 * result is the answer). */
static void add_calls(json_t *steps, const aw_run_call *c, int n)
{
	size_t i;
	json_t *st;
	json_array_foreach (steps, i, st) {
		int no = (int)json_integer_value(json_object_get(st, "step"));
		json_t *arr = NULL;
		int turn = 0;
		for (int k = 0; k < n; k++) {
			if (c[k].step_no != no)
				continue;
			if (!arr && !(arr = json_array()))
				return;
			turn += !strcmp(c[k].kind, "model");
			json_t *o =
				json_pack("{s:i, s:s, s:s, s:s, s:i, s:s}", "seq", c[k].seq, "kind",
					  c[k].kind, "name", c[k].name, "state", c[k].state, "turn",
					  turn, "started_at", c[k].created_at);
			if (!o)
				continue;
			set_ts(o, "finished_at", c[k].finished_at);
			set_ts(o, "error_code", c[k].error_code);
			if (!strcmp(c[k].kind, "model") && c[k].result) {
				json_t *r = json_loads(c[k].result, 0, NULL), *names = json_array();
				size_t j;
				json_t *tc;
				json_array_foreach (json_object_get(r, "tool_calls"), j, tc)
					json_array_append(
						names,
						json_object_get(json_object_get(tc, "function"),
								"name"));
				if (json_array_size(names))
					json_object_set(o, "tool_calls", names);
				json_decref(names);
				json_decref(r);
			}
			json_array_append_new(arr, o);
		}
		if (arr)
			json_object_set_new(st, "calls", arr);
	}
}

/* One read of the view: the run, its steps, their history (and an agent
 * step's calls). *moved: the history does not end in the state read - a
 * move committed between the statements (each sees what is committed when
 * it runs) - and nothing is made. */
static aw_err view_once(aw_store *s, const aw_ctx *ctx, const char *run_id, json_t **out,
			int *moved, aw_error *err)
{
	*moved = 0;
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err);
	if (e)
		return e;
	aw_run run = {0};
	aw_run_step *steps = NULL;
	int nsteps = 0;
	json_t *tr = NULL;
	char id[1][AW_UUID_STR_LEN + 1];
	aw_run_call *calls = NULL;
	int ncalls = 0, agent = 0;
	e = aw_store_run_get(t, run_id, &run, err);
	if (!e)
		AW_COPY_ARRAY(id[0], run.run_id); /* the run just read */
	if (!e && !(e = aw_store_run_steps(t, id, 1, &steps, &nsteps, err)))
		e = transitions_in(t, run_id, &tr, err);
	for (int i = 0; !e && i < nsteps; i++)
		agent |= !strcmp(steps[i].kind, "agent");
	if (!e && agent) /* an agent step's sub-steps (store/agent.h) */
		e = aw_store_run_calls(t, run_id, 0, &calls, &ncalls, err);
	aw_store_rollback(t);
	if (!e) {
		/* the history ends in the state shown, or the answer would show a
		 * state without the moves that led to it - but for a claim, which
		 * is audited with its start (a worker writes no tenant row while
		 * it claims across projects): a run "claimed" ends its history in
		 * a state it may be claimed from */
		size_t n = json_array_size(tr);
		const char *last = NULL; /* the last move (a decision that moved
					    nothing, an N-of-M vote, has no "to") */
		for (size_t k = n; k > 0 && !last; k--)
			last = json_string_value(json_object_get(json_array_get(tr, k - 1), "to"));
		aw_run_state from;
		int claim_unaudited = last && !strcmp(run.state, "claimed") &&
				      aw_run_state_parse(last, &from) == 0 &&
				      aw_run_fsm_event(from, AW_RUN_CLAIMED);
		if (!n || !last || (strcmp(last, run.state) != 0 && !claim_unaudited)) {
			*moved = 1;
			e = aw_fail(err, AW_E_INTERNAL,
				    "the run's audit history does not end in its state %s",
				    run.state);
		}
	}
	if (!e && !(*out = aw_run_json(&run, steps, nsteps)))
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	if (!e)
		json_object_set(*out, "transitions", tr);
	if (!e && ncalls)
		add_calls(json_object_get(*out, "steps"), calls, ncalls);
	json_decref(tr);
	aw_run_free(&run);
	aw_run_steps_free(steps, nsteps);
	aw_run_calls_free(calls, ncalls);
	return e;
}

aw_err aw_run_view(aw_store *s, const aw_ctx *ctx, const char *run_id, json_t **out, aw_error *err)
{
	aw_err e = check_id(run_id, err);
	/* a run that moved while it was read is read again: a move and its
	 * record commit together, so a read between two moves agrees */
	int moved = 0, tries = 0;
	if (e)
		return e;
	do
		e = view_once(s, ctx, run_id, out, &moved, err);
	while (e && moved && ++tries < 3);
	return e;
}

static json_t *queue_json(const aw_run_queue *q)
{
	json_t *o = json_pack("{s:s, s:I, s:I}", "name", q->name, "queued", (json_int_t)q->queued,
			      "running", (json_int_t)q->running);
	if (o)
		json_object_set_new(o, "concurrency",
				    q->concurrency ? json_integer(q->concurrency) : json_null());
	if (o && q->updated_at[0])
		json_object_set_new(o, "updated_at", json_string(q->updated_at));
	if (o && q->updated_by[0])
		json_object_set_new(o, "updated_by", json_string(q->updated_by));
	return o;
}

/* The queues of ctx->project as the API lists them; name: only that one. */
static aw_err queues_in(aw_txn *t, const char *name, json_t **out, aw_error *err)
{
	aw_run_queue *q = NULL;
	int n = 0;
	aw_err e = aw_store_queue_list(t, &q, &n, err);
	json_t *items = e ? NULL : json_array();
	for (int i = 0; items && i < n; i++)
		if (!name || strcmp(q[i].name, name) == 0)
			json_array_append_new(items, queue_json(&q[i]));
	free(q);
	if (e)
		return e;
	if (!items)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	*out = name ? json_incref(json_array_get(items, 0)) : json_pack("{s:O}", "items", items);
	json_decref(items);
	return *out ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
}

aw_err aw_run_queue_set(aw_store *s, const aw_ctx *ctx, const char *name, int concurrency,
			json_t **out, aw_error *err)
{
	if (!aw_run_queue_name_ok(name))
		return aw_fail_at(err, AW_E_REQ_INVALID, "name",
				  "a queue name is 1..%d letters, digits, '.', '_' or '-'",
				  AW_QUEUE_MAX);
	if (concurrency < 0 || concurrency > AW_RUN_QUEUE_CONCURRENCY_MAX)
		return aw_fail_at(err, AW_E_REQ_INVALID, "/concurrency",
				  "concurrency must be 1..%d, or null for no limit",
				  AW_RUN_QUEUE_CONCURRENCY_MAX);
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err);
	if (e)
		return e;
	int found = 0, count = 0;
	e = aw_store_queue_get(t, name, &found, &count, err);
	if (!e && !found && count >= AW_RUN_QUEUES_MAX)
		e = aw_fail_at(err, AW_E_REQ_INVALID, "name", "a project has at most %d queues",
			       AW_RUN_QUEUES_MAX);
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	if (!e)
		e = aw_store_queue_put(t, name, concurrency, now, ctx->principal, err);
	if (!e) {
		json_t *p = json_pack("{s:s, s:o}", "queue", name, "concurrency",
				      concurrency ? json_integer(concurrency) : json_null());
		e = p ? aw_audit_record(t, ctx, "queue.set", name, p, err)
		      : aw_fail(err, AW_E_NOMEM, "out of memory");
		json_decref(p);
	}
	if (!e)
		e = queues_in(t, name, out, err);
	if (e) {
		aw_store_rollback(t);
		return e;
	}
	if ((e = aw_store_commit(t, err))) {
		json_decref(*out);
		*out = NULL;
	}
	return e;
}

aw_err aw_run_queue_list(aw_store *s, const aw_ctx *ctx, json_t **out, aw_error *err)
{
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err);
	if (e)
		return e;
	e = queues_in(t, NULL, out, err);
	aw_store_rollback(t);
	return e;
}

/* A time filter: parsed, and written back in the store's own format (text
 * comparison on SQLite), into out. */
static aw_err time_filter(const char *name, const char *v, char out[AW_TS_LEN + 1], aw_error *err)
{
	int64_t ms;
	if (aw_clock_parse(v, &ms) != 0)
		return aw_fail_at(
			err, AW_E_REQ_INVALID, name,
			"%s must be a time like 2026-11-29T09:54:27.000Z (UTC, milliseconds)",
			name);
	aw_clock_format(ms, out);
	return AW_OK;
}

aw_err aw_run_list_where(aw_store *s, const aw_ctx *ctx, const aw_run_filter *f, const char *cursor,
			 int limit, aw_run **out, int *n, aw_error *err)
{
	aw_run_state st;
	aw_run_filter q = f ? *f : (aw_run_filter){0};
	char from[AW_TS_LEN + 1], to[AW_TS_LEN + 1];
	if (q.state && aw_run_state_parse(q.state, &st) != 0)
		return aw_fail_at(err, AW_E_REQ_INVALID, "state",
				  "state must be one of queued, claimed, running, waiting_approval,"
				  " retry_wait, succeeded, failed, cancelled, suggested");
	if (q.queue && !aw_run_queue_name_ok(q.queue))
		return aw_fail_at(err, AW_E_REQ_INVALID, "queue",
				  "queue must be 1..%d letters, digits, '.', '_' or '-'",
				  AW_QUEUE_MAX);
	aw_err e = AW_OK;
	if (q.created_from && (e = time_filter("created_from", q.created_from, from, err)))
		return e;
	if (q.created_to && (e = time_filter("created_to", q.created_to, to, err)))
		return e;
	if (q.created_from)
		q.created_from = from;
	if (q.created_to)
		q.created_to = to;
	if (q.created_from && q.created_to && strcmp(from, to) >= 0)
		return aw_fail_at(err, AW_E_REQ_INVALID, "created_to",
				  "created_to must be after created_from");
	if (q.text) {
		size_t len = strlen(q.text);
		if (len < 1 || len > AW_RUN_TEXT_MAX)
			return aw_fail_at(err, AW_E_REQ_INVALID, "q", "q must be 1..%d bytes",
					  AW_RUN_TEXT_MAX);
		for (size_t i = 0; i < len; i++)
			if ((unsigned char)q.text[i] < 0x20)
				return aw_fail_at(err, AW_E_REQ_INVALID, "q",
						  "q must not hold control characters");
	}
	if (cursor && !aw_uuid_valid(cursor))
		return aw_fail_at(err, AW_E_REQ_INVALID, "cursor", "cursor must be a run id");
	aw_txn *t = NULL;
	if ((e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err)))
		return e;
	e = aw_store_run_list(t, &q, cursor, limit, out, n, err);
	aw_store_rollback(t);
	return e;
}

aw_err aw_run_list(aw_store *s, const aw_ctx *ctx, const char *state, const char *cursor, int limit,
		   aw_run **out, int *n, aw_error *err)
{
	aw_run_filter f = {.state = state};
	return aw_run_list_where(s, ctx, &f, cursor, limit, out, n, err);
}

aw_err aw_run_cancel(aw_store *s, const aw_ctx *ctx, const char *run_id, aw_run *out, aw_error *err)
{
	aw_err e = check_id(run_id, err);
	for (int i = 0; !e && i < 5; i++) {
		aw_txn *t = NULL;
		if ((e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err)))
			return e;
		aw_run cur;
		if ((e = aw_store_run_get(t, run_id, &cur, err))) {
			aw_store_rollback(t);
			return e;
		}
		aw_run_state from = AW_RUN_QUEUED;
		aw_run_state_parse(cur.state, &from);
		aw_run_free(&cur);
		if (aw_run_state_terminal(from)) {
			aw_store_rollback(t);
			return aw_fail(err, AW_E_RUN_STATE, "the run already %s",
				       aw_run_state_name(from));
		}
		char now[AW_TS_LEN + 1];
		aw_clock_now(now);
		aw_run_change chg = {.now = now, .clear_lease = 1, .finished = 1};
		e = aw_run_transition_in(t, ctx, run_id, NULL, from, AW_RUN_CANCELLED, &chg, NULL,
					 err);
		if (e) {
			aw_store_rollback(t);
			if (e == AW_E_RUN_STATE) /* it moved meanwhile: read again */
				e = AW_OK;
			continue;
		}
		if ((e = aw_store_commit(t, err)))
			return e;
		return aw_run_get(s, ctx, run_id, out, NULL, NULL, err);
	}
	return e ? e : aw_fail(err, AW_E_STORE_BUSY, "the run kept changing; try again");
}

static void set_ts(json_t *o, const char *key, const char *v)
{
	json_object_set_new(o, key, v && *v ? json_string(v) : json_null());
}

static json_t *parse_or_null(const char *text)
{
	json_error_t je;
	json_t *v = text ? json_loads(text, JSON_DECODE_ANY, &je) : NULL;
	return v ? v : json_null();
}

json_t *aw_run_json(const aw_run *r, const aw_run_step *steps, int nsteps)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:s}", "run_id",
			      r->run_id, "project", r->project_id, "state", r->state, "mode",
			      r->mode, "queue", r->queue[0] ? r->queue : "default", "priority",
			      r->priority, "attempts", r->attempts, "max_attempts", r->max_attempts,
			      "timeout_s", r->timeout_s, "trace_id", r->trace_id);
	if (!o)
		return NULL;
	json_object_set_new(o, "workflow", parse_or_null(r->workflow));
	json_object_set_new(o, "input", parse_or_null(r->input));
	set_ts(o, "error_code", r->error_code);
	set_ts(o, "created_at", r->created_at);
	set_ts(o, "updated_at", r->updated_at);
	set_ts(o, "started_at", r->started_at);
	set_ts(o, "finished_at", r->finished_at);
	set_ts(o, "run_after", r->run_after);
	set_ts(o, "lease_owner", r->lease_owner);
	set_ts(o, "lease_expires_at", r->lease_expires_at);
	if (!steps)
		return o;
	json_t *arr = json_array();
	for (int i = 0; arr && i < nsteps; i++) {
		const aw_run_step *s = &steps[i];
		json_t *so = json_pack("{s:i, s:s, s:s, s:s, s:i, s:i}", "step", s->step_no, "kind",
				       s->kind, "state", s->state, "idempotency_key", s->idem_key,
				       "attempt", s->attempt, "tries", s->tries);
		if (!so)
			continue;
		json_object_set_new(so, "result", parse_or_null(s->result));
		set_ts(so, "error_code", s->error_code);
		set_ts(so, "started_at", s->started_at);
		set_ts(so, "finished_at", s->finished_at);
		json_array_append_new(arr, so);
	}
	json_object_set_new(o, "steps", arr ? arr : json_array());
	return o;
}

/* What step i of a workflow does to the outside world: the executor's intent
 * for side-effecting kinds, else its args. */
static json_t *step_effect(const json_t *wf, size_t i)
{
	json_t *st = json_array_get(wf, i);
	const char *kind = json_string_value(json_object_get(st, "kind"));
	const aw_executor *x = kind ? aw_executor_find(kind) : NULL;
	json_t *args = json_object_get(st, "args");
	if (x && x->side_effect && x->intent && args)
		return x->intent(args);
	return args ? json_incref(args) : json_object();
}

static const aw_run_step *journal_entry(const aw_run_step *s, int n, int step_no)
{
	for (int i = 0; i < n; i++)
		if (s[i].step_no == step_no)
			return &s[i];
	return NULL;
}

static json_t *side(const aw_run *r, const json_t *wf, const aw_run_step *s, int n, size_t i)
{
	const aw_run_step *j = journal_entry(s, n, (int)i + 1);
	json_t *st = json_array_get(wf, i);
	json_t *o = json_pack("{s:s, s:s, s:o}", "mode", r->mode, "kind",
			      st ? json_string_value(json_object_get(st, "kind")) : "", "effect",
			      st ? step_effect(wf, i) : json_null());
	if (o) {
		json_object_set_new(o, "state", json_string(j ? j->state : "not_run"));
		json_object_set_new(o, "result", parse_or_null(j ? j->result : NULL));
	}
	return o;
}

aw_err aw_run_diff(aw_store *s, const aw_ctx *ctx, const char *a, const char *b, json_t **out,
		   aw_error *err)
{
	aw_run ra = {0}, rb = {0};
	aw_run_step *sa = NULL, *sb = NULL;
	int na = 0, nb = 0;
	json_t *wa = NULL, *wb = NULL, *steps = NULL;
	aw_err e = aw_run_get(s, ctx, a, &ra, &sa, &na, err);
	if (e)
		return e;
	if ((e = aw_run_get(s, ctx, b, &rb, &sb, &nb, err)))
		goto out;
	wa = parse_or_null(ra.workflow);
	wb = parse_or_null(rb.workflow);
	size_t n = json_array_size(wa) > json_array_size(wb) ? json_array_size(wa)
							     : json_array_size(wb);
	steps = json_array();
	int all_same = steps != NULL;
	for (size_t i = 0; steps && i < n; i++) {
		json_t *x = side(&ra, wa, sa, na, i), *y = side(&rb, wb, sb, nb, i);
		char hx[65] = "", hy[65] = "";
		int same = x && y &&
			   json_equal(json_object_get(x, "kind"), json_object_get(y, "kind")) &&
			   aw_jcs_sha256(json_object_get(x, "effect"), hx) == 0 &&
			   aw_jcs_sha256(json_object_get(y, "effect"), hy) == 0 &&
			   strcmp(hx, hy) == 0 &&
			   json_equal(json_object_get(x, "state"), json_object_get(y, "state"));
		all_same &= same;
		json_array_append_new(steps, json_pack("{s:i, s:b, s:o*, s:o*}", "step", (int)i + 1,
						       "same", same, "a", x, "b", y));
	}
	*out = json_pack("{s:s, s:s, s:b, s:o*}", "a", a, "b", b, "same", all_same, "steps", steps);
	steps = NULL;
	if (!*out)
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
out:
	json_decref(wa);
	json_decref(wb);
	json_decref(steps);
	aw_run_free(&ra);
	aw_run_free(&rb);
	aw_run_steps_free(sa, na);
	aw_run_steps_free(sb, nb);
	return e;
}
