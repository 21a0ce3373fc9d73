/*
 * h_budget.c - the token budget of a project:
 *   GET  /v1/projects/{project}/budget            spend, reservations, ledger sums
 *   POST /v1/projects/{project}/budget/suspend    line 3 by hand {"reason"?}
 *   POST /v1/projects/{project}/budget/resume     lifts a suspension
 * A suspension cuts the project's model calls in flight in this process at
 * once and in every other gateway process within 0.5 s (they watch the
 * store), and cancels its runs. Both are audited.
 */
#include <string.h>

#include "awooop/budget.h"
#include "awooop/json.h"
#include "awooop/llm.h"
#include "http_internal.h"

static int budget_ctx(aw_req *r, aw_scope need, aw_ctx *scoped)
{
	return aw_project_segment_or_reply(r, r->segs[2]) ||
	       aw_project_or_reply(r, r->segs[2], need, scoped);
}

void aw_h_budget_get(aw_req *r)
{
	aw_ctx scoped;
	if (budget_ctx(r, AW_SCOPE_READER, &scoped))
		return;
	aw_error err = {0};
	json_t *out = NULL;
	aw_err e = r->opts->policy
			   ? aw_budget_status(r->store, r->opts->policy, &scoped, &out, &err)
			   : aw_fail(&err, AW_E_LLM_UNAVAILABLE, "this process runs no gateway");
	if (e)
		aw_reply_problem(r, e, &err);
	else
		aw_reply_json(r, 200, out);
}

void aw_h_budget_action(aw_req *r)
{
	aw_ctx scoped;
	if (budget_ctx(r, AW_SCOPE_OPERATOR, &scoped))
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
		if (!e && r->opts->llm)
			aw_llm_kill(r->opts->llm, scoped.project);
	} else if (!strcmp(action, "resume")) {
		e = aw_budget_resume(r->store, &scoped, &err);
	} else {
		e = aw_fail(&err, AW_E_REQ_ROUTE, "the budget actions are suspend and resume");
	}
	if (e) {
		aw_reply_problem(r, e, &err);
		return;
	}
	json_t *out = NULL;
	if (r->opts->policy && !aw_budget_status(r->store, r->opts->policy, &scoped, &out, &err))
		aw_reply_json(r, 200, out);
	else
		aw_reply_json(r, 200, json_pack("{s:s}", "project", scoped.project));
}
