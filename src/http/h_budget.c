/*
 * h_budget.c - the token budget of a project:
 *   GET  /v1/projects/{project}/budget[?run=ID]   spend, reservations, ledger sums,
 *                                                 per model; a run's own row
 *   GET  /v1/projects/{project}/budget/ledger     ledger lines ?period= &run=
 *                                                 &after=SEQ &limit=1..1000
 *   GET  /v1/projects/{project}/budget/spend      spend over time per hour or day
 *                                                 and per model or key ?bucket=
 *                                                 &by= &since= &until= &limit=
 *   POST /v1/projects/{project}/budget/suspend    line 3 by hand {"reason"?}
 *   POST /v1/projects/{project}/budget/resume     lifts a suspension
 * A suspension cuts the project's model calls in flight in this process at
 * once and in every other gateway process within 0.5 s (they watch the
 * store), and cancels its runs. Both are audited.
 */
#include <stdlib.h>
#include <string.h>

#include "awooop/budget.h"
#include "awooop/call.h"
#include "awooop/json.h"
#include "awooop/uuid.h"
#include "http_internal.h"

/* ?run=: a run id, or absent. */
static aw_err run_param(aw_req *r, const char **run, aw_error *err)
{
	*run = http_query(r, "run");
	if (*run && !aw_uuid_valid(*run))
		return aw_fail_at(err, AW_E_REQ_INVALID, "run", "run must be a run id");
	return AW_OK;
}

void h_budget_get(aw_req *r)
{
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_READER, &scoped))
		return;
	aw_error err = {0};
	json_t *out = NULL;
	const char *run = NULL;
	aw_err e = run_param(r, &run, &err);
	if (!e)
		e = r->opts->policy
			    ? aw_budget_status(r->store, r->opts->policy, &scoped, run, &out, &err)
			    : aw_fail(&err, AW_E_LLM_UNAVAILABLE, "this process runs no gateway");
	if (e)
		reply_problem(r, e, &err);
	else
		http_reply_json(r, 200, out);
}

void h_budget_ledger(aw_req *r)
{
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_READER, &scoped))
		return;
	aw_error err = {0};
	const char *run = NULL, *period = http_query(r, "period");
	const char *l = http_query(r, "limit"), *a = http_query(r, "after");
	char *end = NULL;
	long limit = l ? strtol(l, &end, 10) : 100;
	aw_err e = run_param(r, &run, &err);
	if (!e && l && (!*l || *end || limit < 1 || limit > 1000))
		e = aw_fail_at(&err, AW_E_REQ_INVALID, "limit", "limit must be 1..1000");
	long long after = a ? strtoll(a, &end, 10) : 0;
	if (!e && a && (!*a || *end || after < 0))
		e = aw_fail_at(&err, AW_E_REQ_INVALID, "after",
			       "after must be a ledger sequence number");
	if (!e && period &&
	    (!*period || strlen(period) > 15 ||
	     strspn(period, "0123456789-rolling") != strlen(period)))
		e = aw_fail_at(&err, AW_E_REQ_INVALID, "period",
			       "period must be a period key: 2026-12-01, 2026-12 or rolling");
	json_t *out = NULL;
	if (!e)
		e = aw_budget_history(r->store, &scoped, period, run, after, (int)limit, &out,
				      &err);
	if (e)
		reply_problem(r, e, &err);
	else
		http_reply_json(r, 200, out);
}

void h_budget_action(aw_req *r)
{
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_OPERATOR, &scoped))
		return;
	aw_error err = {0};
	aw_err e = AW_OK;
	const char *action = r->segs[4];
	if (!strcmp(action, "suspend")) {
		json_t *body = NULL;
		const char *reason = "suspended by an operator";
		if (r->body_len) {
			static const char *const fields[] = {"reason", NULL};
			if (!(e = aw_json_parse_object(r->body, r->body_len, &body, &err)) &&
			    !(e = aw_json_only(body, fields, &err)) &&
			    json_object_get(body, "reason")) {
				reason = json_string_value(json_object_get(body, "reason"));
				if (!reason || strlen(reason) > 200)
					e = aw_fail_at(
						&err, AW_E_REQ_INVALID, "/reason",
						"reason must be a string of at most 200 bytes");
			}
		}
		if (!e)
			e = aw_budget_suspend(r->store, &scoped, reason, &err);
		json_decref(body);
		if (!e && r->opts->calls) /* every door's calls here; the others told */
			aw_calls_kill(r->opts->calls, scoped.project);
	} else if (!strcmp(action, "resume")) {
		e = aw_budget_resume(r->store, &scoped, &err);
	} else {
		e = aw_fail(&err, AW_E_REQ_ROUTE, "the budget actions are suspend and resume");
	}
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	json_t *out = NULL;
	if (r->opts->policy &&
	    !aw_budget_status(r->store, r->opts->policy, &scoped, NULL, &out, &err))
		http_reply_json(r, 200, out);
	else
		http_reply_json(r, 200, json_pack("{s:s}", "project", scoped.project));
}

void h_budget_spend(aw_req *r)
{
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_READER, &scoped))
		return;
	aw_error err = {0};
	json_t *out = NULL;
	aw_err e = aw_budget_spend(r->store, &scoped, http_query(r, "bucket"),
				   http_query(r, "since"), http_query(r, "until"),
				   http_query(r, "by"), http_query(r, "limit"), &out, &err);
	if (e)
		reply_problem(r, e, &err);
	else
		http_reply_json(r, 200, out);
}
