/*
 * approval.c - the approval service (approval.h): minting and verifying
 * tokens with the current key ring, the "approval" step kind that parks a
 * run, and the decisions that move it on.
 *
 * Parking: the step reads the project's approval policy (verified, as for
 * contract activations) and journals it as the step's rule - approvers,
 * threshold, window, expires_at - with state "waiting"; the worker moves the
 * run to waiting_approval and lets go of it. Deciding: under the run's row
 * lock, a decision is checked against that rule (the rule in force when the
 * run parked), recorded, and counted; the one that reaches the threshold
 * journals the step succeeded and re-queues the run, a deny journals it failed
 * and fails the run. A decision that does not move the run is audited on its
 * own ("run.approval_decision"). An agent step parks once per tool call that
 * needs approval: its rule names the call ("call": its seq), the decisions
 * are counted per call, and the approving one marks that call approved in
 * the agent's journal (run_calls) in the same transaction.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/approval.h"
#include "awooop/audit.h"
#include "awooop/clock.h"
#include "awooop/contract.h"
#include "awooop/ident.h"
#include "awooop/json.h"
#include "awooop/kv.h"
#include "awooop/run.h"
#include "awooop/str.h"
#include "awooop/worker.h"
#include "awooop/executor.h"
#include "awooop/store/agent.h"
#include "awooop/store/approval.h"
#include "awooop/store/run.h"
#include "awooop/store/audit.h"
#include "awooop/tenancy.h"

struct aw_approvals {
	aw_store *store;
	const aw_contracts *contracts;
	aw_kv *kv;
	char issuer[128];
	_Atomic(const aw_keyring *) keys;
};

static aw_approvals *the_service; /* the executor's (one per process) */

aw_err aw_approvals_new(const aw_approvals_opts *o, const aw_keyring *keys, aw_approvals **out,
			aw_error *err)
{
	aw_approvals *a = aw_calloc(1, sizeof *a);
	if (!a)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	a->store = o->store;
	a->contracts = o->contracts;
	a->kv = o->kv;
	if (AW_STR_COPY(a->issuer, o->issuer ? o->issuer : AW_APPROVAL_ISSUER) < 0) {
		free(a);
		return aw_fail(err, AW_E_CONFIG, "the approval issuer is at most %zu bytes",
			       sizeof a->issuer - 1);
	}
	atomic_store(&a->keys, keys);
	*out = a;
	return AW_OK;
}

void aw_approvals_free(aw_approvals *a)
{
	if (a && the_service == a)
		the_service = NULL;
	free(a);
}

const aw_keyring *aw_approvals_set_keyring(aw_approvals *a, const aw_keyring *k)
{
	return atomic_exchange(&a->keys, k);
}

static aw_err read_policy(aw_approvals *a, const aw_ctx *ctx, aw_approval_policy *p, aw_error *err)
{
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(a->store, ctx, AW_TXN_READ, &t, err);
	if (e)
		return e;
	e = aw_contract_approval_policy(a->contracts, t, p, err);
	aw_store_rollback(t);
	return e;
}

aw_err aw_approvals_mint(aw_approvals *a, const aw_ctx *ctx, const char *run_id, const char *sub,
			 const char *action, int ttl_s, char **tok, aw_approval_claims *out,
			 aw_error *err)
{
	*tok = NULL;
	aw_approval_claims c = {0};
	if (!run_id || !aw_uuid_valid(run_id))
		return aw_fail_at(err, AW_E_REQ_INVALID, "run_id", "run_id must be a run id");
	if (!sub) /* a token carries its minter's own decision */
		sub = ctx->principal;
	if (!aw_ident_name_ok(sub))
		return aw_fail_at(err, AW_E_REQ_INVALID, "sub", "sub must be a principal name");
	if (strcmp(sub, ctx->principal) != 0)
		return aw_fail_at(err, AW_E_APPROVAL_OTHER, "sub",
				  "a token carries its minter's own decision: %s cannot mint one "
				  "for %s",
				  ctx->principal, sub);
	if (!action || (strcmp(action, "approve") && strcmp(action, "deny")))
		return aw_fail_at(err, AW_E_REQ_INVALID, "action",
				  "action must be \"approve\" or \"deny\"");
	aw_approval_policy p;
	aw_err e = read_policy(a, ctx, &p, err);
	if (e)
		return e;
	json_decref(p.approvers);
	if (ttl_s < 1 || ttl_s > p.window_s)
		return aw_fail_at(err, AW_E_REQ_INVALID, "ttl_s",
				  "ttl_s must be 1..%d (the approval policy's window_s)",
				  p.window_s);
	int64_t now = aw_clock_wall_ms() / 1000;
	AW_COPY_ARRAY(c.iss, a->issuer);
	AW_COPY_ARRAY(c.aud, ctx->project);
	if (AW_STR_COPY(c.sub, sub) < 0 || AW_STR_COPY(c.run_id, run_id) < 0 ||
	    AW_STR_COPY(c.action, action) < 0) /* a token names them whole */
		return aw_fail(err, AW_E_REQ_INVALID, "principal or run id too long for a token");
	c.iat = c.nbf = now;
	c.exp = now + ttl_s;
	if ((e = aw_approval_mint(atomic_load(&a->keys), &c, tok, err)))
		return e;
	if (out)
		*out = c;
	return AW_OK;
}

aw_err aw_approvals_verify(aw_approvals *a, const aw_ctx *ctx, const char *tok,
			   aw_approval_claims *out, aw_error *err)
{
	const aw_keyring *k = atomic_load(&a->keys);
	if (!aw_keyring_current(k))
		return aw_fail(err, AW_E_APPROVAL_KEY,
			       "no approval key: set AWOOOP_APPROVAL_KEYS or --approval-keys");
	return aw_approval_verify(k, tok, a->issuer, ctx->project, aw_clock_wall_ms() / 1000, out,
				  err);
}

/* ---- deciding ---- */

/* The run's waiting step (the last journal entry "waiting"): its number and
 * rule (new reference). AW_E_APPROVAL_STATE when there is none. */
static aw_err waiting_step(aw_txn *t, const char *run_id, aw_run_step *step, json_t **rule,
			   aw_error *err)
{
	char ids[1][AW_UUID_STR_LEN + 1];
	if (AW_STR_COPY(ids[0], run_id) < 0) /* a cut id could name another run */
		return aw_fail(err, AW_E_REQ_ID, "run id must be a UUID");
	aw_run_step *st = NULL;
	int n = 0;
	aw_err e = aw_store_run_steps(t, ids, 1, &st, &n, err);
	if (e)
		return e;
	int k = -1;
	for (int i = 0; i < n; i++)
		if (strcmp(st[i].state, "waiting") == 0)
			k = i;
	if (k < 0) {
		aw_run_steps_free(st, n);
		return aw_fail(err, AW_E_APPROVAL_STATE,
			       "the run has no step waiting for approval");
	}
	*step = st[k];
	step->result = NULL;
	json_error_t je;
	*rule = st[k].result ? json_loads(st[k].result, 0, &je) : NULL;
	aw_run_steps_free(st, n);
	return *rule ? AW_OK : aw_fail(err, AW_E_INTERNAL, "the waiting step has no rule");
}

/* Remembers the jti in Redis (cluster shape) until past the token's exp. */
static aw_err claim_jti(aw_approvals *a, const aw_ctx *ctx, const aw_approval_decision *d,
			aw_error *err)
{
	if (!a->kv || !d->jti)
		return AW_OK;
	char field[160];
	snprintf(field, sizeof field, "jti.%s", d->jti);
	const char *vals[] = {d->run_id, field};
	int64_t ttl = d->exp_s - aw_clock_wall_ms() / 1000 + AW_APPROVAL_LEEWAY_S + 60;
	int created = 0;
	aw_err e = aw_kv_set_nx(a->kv, ctx, "approval", vals, 2, d->principal,
				(int)(ttl < 60		 ? 60
				      : ttl > 30 * 86400 ? 30 * 86400
							 : ttl),
				&created, err);
	if (!e && !created)
		e = aw_fail(err, AW_E_APPROVAL_REPLAY, "this approval token was used already");
	return e;
}

/* Who submitted the run: the actor of its first audit record. */
static aw_err submitter_of(aw_txn *t, const char *run_id, char *out, size_t cap, aw_error *err)
{
	aw_audit_row *rows = NULL;
	int n = 0;
	aw_err e = aw_store_audit_by_target(t, run_id, 1, &rows, &n, err);
	if (!e && n == 1 && aw_str_copy(out, cap, rows[0].actor) < 0)
		e = aw_fail(err, AW_E_INTERNAL, "the submitter's name does not fit");
	aw_audit_rows_free(rows, n);
	return e;
}

/* The principal whose puppet `who` is - its key minted, directly or down a
 * chain, by the run's submitter or by another approver of the list - or
 * NULL. Such a decision would count one person twice. */
static const char *puppeteer_of(const aw_apikey *keys, int nkeys, const json_t *approvers,
				const char *submitter, const char *who)
{
	if (submitter[0] && strcmp(submitter, who) != 0 &&
	    aw_key_minted_by(keys, nkeys, who, submitter))
		return submitter;
	size_t i;
	json_t *v;
	json_array_foreach (approvers, i, v) {
		const char *q = json_string_value(v);
		if (q && strcmp(q, who) != 0 && aw_key_minted_by(keys, nkeys, who, q))
			return q;
	}
	return NULL;
}

static aw_err decide_in(aw_approvals *a, aw_txn *t, const aw_ctx *ctx,
			const aw_approval_decision *d, json_t **out, aw_error *err)
{
	char state[20] = "";
	int used = 0;
	aw_err e = aw_store_run_lock(t, d->run_id, state, err);
	if (!e && d->jti && !(e = aw_store_run_jti_used(t, d->jti, &used, err)) && used)
		e = aw_fail(err, AW_E_APPROVAL_REPLAY, "this approval token was used already");
	if (e)
		return e;
	if (strcmp(state, "waiting_approval") != 0)
		return aw_fail(err, AW_E_APPROVAL_STATE, "the run is %s, not waiting for approval",
			       state);
	aw_run_step step;
	json_t *rule = NULL;
	if ((e = waiting_step(t, d->run_id, &step, &rule, err)))
		return e;
	int threshold = (int)json_integer_value(json_object_get(rule, "threshold"));
	/* an agent step's parked call (its seq): the decisions are that call's,
	 * and the approval lets that call pass, no later one */
	int sub = (int)json_integer_value(json_object_get(rule, "call"));
	int64_t window = json_integer_value(json_object_get(rule, "window_s")), until = 0;
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	aw_clock_parse(json_string_value(json_object_get(rule, "expires_at")), &until);
	aw_run_decision *ds = NULL;
	aw_apikey *keys = NULL;
	int nd = 0, nkeys = 0;
	char submitter[sizeof ctx->principal] = "";
	json_t *approvers = json_object_get(rule, "approvers");
	if ((e = aw_store_key_list(t, &keys, &nkeys, err)) ||
	    (e = submitter_of(t, d->run_id, submitter, sizeof submitter, err)))
		goto out;
	const char *puppeteer = puppeteer_of(keys, nkeys, approvers, submitter, d->principal);
	if (!aw_contract_approver(approvers, d->principal))
		e = aw_fail(err, AW_E_APPROVAL_APPROVER,
			    "%s is not an approver in the run's approval policy", d->principal);
	else if (puppeteer)
		e = aw_fail(err, AW_E_APPROVAL_APPROVER,
			    "%s's key was minted by %s: its decision would be %s's again",
			    d->principal, puppeteer, puppeteer);
	else if (d->lifetime_s > window)
		e = aw_fail_at(err, AW_E_APPROVAL_TIME, "exp",
			       "the token lives longer than the approval policy's window_s");
	else if (aw_clock_wall_ms() > until)
		e = aw_fail(err, AW_E_APPROVAL_STATE, "the run's approval window closed");
	if (!e && !(e = claim_jti(a, ctx, d, err))) {
		aw_run_decision row = {0};
		if (AW_STR_COPY(row.principal, d->principal) < 0 ||
		    AW_STR_COPY(row.decision, d->decision) < 0 ||
		    AW_STR_COPY(row.via, d->via ? d->via : "api") < 0)
			e = aw_fail(err, AW_E_REQ_INVALID, "principal, decision or via too long");
		memcpy(row.decided_at, now, sizeof row.decided_at);
		if (!e)
			e = aw_store_run_decision_add(t, d->run_id, step.step_no, sub, &row, d->jti,
						      err);
	}
	if (!e)
		e = aw_store_run_decisions(t, d->run_id, step.step_no, sub, &ds, &nd, err);
	int approvals = 0, denied = 0;
	json_t *list = json_array();
	for (int i = 0; !e && i < nd; i++) {
		/* distinct principals of the list (one decision each), none a
		 * puppet of the submitter or of another approver */
		approvals += strcmp(ds[i].decision, "approve") == 0 &&
			     aw_contract_approver(approvers, ds[i].principal) &&
			     !puppeteer_of(keys, nkeys, approvers, submitter, ds[i].principal);
		denied |= strcmp(ds[i].decision, "deny") == 0;
		json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:s}", "principal",
						      ds[i].principal, "decision", ds[i].decision,
						      "via", ds[i].via, "at", ds[i].decided_at));
	}
	free(ds);
	int moved = !e && (denied || approvals >= threshold);
	json_t *detail = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i}", "approver", d->principal,
				   "decision", d->decision, "via", d->via ? d->via : "api", "step",
				   step.step_no, "approvals", approvals, "threshold", threshold);
	if (!e && moved) { /* the step's journal entry says how it ended */
		json_t *res = json_pack("{s:O, s:O}", "rule", rule, "decisions", list);
		step.result = res ? aw_json_dump(res) : NULL;
		json_decref(res);
		/* an approval step is done; another step that parked (a tool that needs
		 * approval) runs again, now with the approval */
		if (denied)
			AW_COPY_ARRAY(step.state, "failed");
		else if (strcmp(step.kind, "approval") == 0)
			AW_COPY_ARRAY(step.state, "succeeded");
		else
			AW_COPY_ARRAY(step.state, "approved");
		AW_COPY_ARRAY(step.finished_at, now);
		if (denied)
			AW_COPY_ARRAY(step.error_code, "E-RUN-009"); /* AW_E_RUN_REJECTED */
		e = aw_store_run_steps_put(t, &step, 1, err);
		free(step.result);
		int marked = 0;
		if (!e && sub > 0 && !denied)
			e = aw_store_run_call_approve(t, d->run_id, step.step_no, sub, &marked,
						      err);
		aw_run_change chg = {.now = now,
				     .error_code = denied ? aw_err_code(AW_E_RUN_REJECTED) : NULL,
				     .finished = denied};
		if (!e)
			e = aw_run_transition_in(t, ctx, d->run_id, NULL, AW_RUN_WAITING_APPROVAL,
						 denied ? AW_RUN_FAILED : AW_RUN_QUEUED, &chg,
						 detail, err);
	} else if (!e) {
		e = aw_audit_record(t, ctx, "run.approval_decision", d->run_id, detail, err);
	}
	if (!e)
		*out = json_pack("{s:s, s:s, s:i, s:i, s:b, s:O}", "run_id", d->run_id, "state",
				 !moved	  ? "waiting_approval"
				 : denied ? "failed"
					  : "queued",
				 "approvals", approvals, "threshold", threshold, "moved", moved,
				 "decisions", list);
	json_decref(detail);
	json_decref(list);
out:
	free(keys);
	json_decref(rule);
	return e;
}

aw_err aw_approvals_decide(aw_approvals *a, const aw_ctx *ctx, const aw_approval_decision *d,
			   json_t **out, aw_error *err)
{
	*out = NULL;
	if (!d->run_id || !aw_uuid_valid(d->run_id))
		return aw_fail(err, AW_E_RUN_NOT_FOUND, "no such run");
	if (!d->decision || (strcmp(d->decision, "approve") && strcmp(d->decision, "deny")))
		return aw_fail_at(err, AW_E_REQ_INVALID, "action",
				  "a decision is \"approve\" or \"deny\"");
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(a->store, ctx, AW_TXN_WRITE, &t, err);
	if (e)
		return e;
	if ((e = decide_in(a, t, ctx, d, out, err))) {
		aw_store_rollback(t);
		return e;
	}
	if ((e = aw_store_commit(t, err))) {
		json_decref(*out);
		*out = NULL;
		return e;
	}
	if (!strcmp(json_string_value(json_object_get(*out, "state")), "queued"))
		aw_run_kick();
	return AW_OK;
}

aw_err aw_approvals_decide_token(aw_approvals *a, const aw_ctx *ctx, const char *run_id,
				 const char *tok, json_t **out, aw_error *err)
{
	*out = NULL;
	aw_approval_claims c;
	aw_err e = aw_approvals_verify(a, ctx, tok, &c, err);
	if (e)
		return e;
	if (strcmp(c.run_id, run_id) != 0)
		return aw_fail_at(err, AW_E_APPROVAL_AUDIENCE, "run_id",
				  "the token is for another run");
	/* the token is its minter's own decision (aw_approvals_mint): with an API
	 * key, only that minter may present it; without one, its subject acts */
	if (ctx->key_id[0] && strcmp(c.sub, ctx->principal) != 0)
		return aw_fail(err, AW_E_APPROVAL_OTHER, "the token is %s's decision, not %s's",
			       c.sub, ctx->principal);
	aw_ctx as = *ctx;
	if (!ctx->key_id[0])
		AW_COPY_ARRAY(as.principal, c.sub);
	aw_approval_decision d = {.run_id = run_id,
				  .principal = c.sub,
				  .decision = c.action,
				  .jti = c.jti,
				  .lifetime_s = c.exp - c.iat,
				  .exp_s = c.exp,
				  .via = "api"};
	return aw_approvals_decide(a, &as, &d, out, err);
}

/* ---- the step kind ---- */

static aw_err step_validate(const json_t *args, aw_error *err)
{
	static const char *const allowed[] = {"summary", NULL};
	aw_err e = aw_json_only(args, allowed, err);
	json_t *s = json_object_get(args, "summary");
	if (!e && s && (!json_is_string(s) || json_string_length(s) > 500))
		e = aw_fail_at(err, AW_E_REQ_INVALID, "/summary",
			       "summary must be a string of at most 500 bytes");
	return e;
}

/* What the steps after this one (self: from this one) would do. */
static json_t *would_run(const aw_step_call *c, int self)
{
	json_t *out = json_array();
	for (size_t i = (size_t)(c->step_no - self); out && i < json_array_size(c->workflow); i++) {
		json_t *st = json_array_get(c->workflow, i);
		const char *kind = json_string_value(json_object_get(st, "kind"));
		const aw_executor *x = kind ? aw_executor_find(kind) : NULL;
		json_t *args = json_object_get(st, "args");
		json_t *intent = x && x->intent && args ? x->intent(args) : json_incref(args);
		json_array_append_new(out,
				      json_pack("{s:s?, s:o*}", "kind", kind, "intended", intent));
	}
	return out;
}

aw_err aw_approvals_park(aw_approvals *a, const aw_step_call *c, const char *summary, int self,
			 json_t **result, aw_error *err)
{
	if (!a)
		return aw_fail(err, AW_E_RUN_STEP, "this worker runs no approval service");
	aw_ctx ctx;
	aw_ctx_system(&ctx, c->project);
	aw_approval_policy p;
	aw_err e = read_policy(a, &ctx, &p, err);
	if (e)
		return e;
	if (p.suggest) {
		*result = json_pack("{s:b, s:s?, s:o}", "suggested", 1, "summary", summary,
				    "would_run", would_run(c, self));
		*c->outcome = AW_STEP_SUGGEST;
	} else {
		char until[AW_TS_LEN + 1];
		aw_clock_format(aw_clock_wall_ms() + (int64_t)p.window_s * 1000, until);
		*result = json_pack("{s:O?, s:i, s:i, s:s, s:s?}", "approvers", p.approvers,
				    "threshold", p.threshold, "window_s", p.window_s, "expires_at",
				    until, "summary", summary);
		*c->outcome = AW_STEP_PARK;
	}
	json_decref(p.approvers);
	return *result ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
}

static aw_err step_run(const aw_step_call *c, json_t **result, aw_error *err)
{
	return aw_approvals_park(the_service, c,
				 json_string_value(json_object_get(c->args, "summary")), 0, result,
				 err);
}

static const aw_executor approval_executor = {
	.kind = "approval",
	.parks = 1,
	.validate = step_validate,
	.run = step_run,
};

int aw_approvals_register_executor(aw_approvals *a)
{
	the_service = a;
	if (aw_executor_find("approval"))
		return 0;
	return aw_executor_register(&approval_executor);
}
