/*
 * h_contract.c - /v1/projects/{project}/contracts/{family}/{contract}/...
 * Reads need reader, changes operator, revoking project-admin. Segments:
 * 2 project, 4 family, 5 contract, 6 "rollback", 7 revision, 8 action, 9 other
 * revision.
 */
#include <stdlib.h>
#include <string.h>

#include "awooop/contract.h"
#include "awooop/fleet.h"
#include "awooop/json.h"
#include "awooop/mcp.h"
#include "http_internal.h"

static json_t *revision_json(const aw_revision *r)
{
	json_t *body = json_loads(r->body ? r->body : "null", JSON_DECODE_ANY, NULL);
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:s, s:s, s:s}", "revision_id",
			      r->revision_id, "project", r->project_id, "family", r->family,
			      "contract_id", r->contract_id, "state", r->state, "body",
			      body ? body : json_null(), "created_at", r->created_at, "created_by",
			      r->created_by, "updated_at", r->updated_at);
	if (!o)
		return NULL;
	const struct {
		const char *k, *v;
	} opt[] = {{"body_hash", r->body_hash},	       {"signature", r->signature},
		   {"key_id", r->sign_key_id},	       {"published_at", r->published_at},
		   {"published_by", r->published_by},  {"rollback_of", r->rollback_of},
		   {"rollback_from", r->rollback_from}};
	for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++)
		json_object_set_new(o, opt[i].k, opt[i].v[0] ? json_string(opt[i].v) : json_null());
	return o;
}

static void reply_err(aw_req *r, aw_err e, aw_error *err)
{
	reply_problem(r, e, err);
}

void h_contract_create(aw_req *r)
{
	aw_error err = {0};
	aw_ctx c;
	json_t *body = NULL;
	if (url_project_or_reply(r, AW_SCOPE_OPERATOR, &c) || json_body_or_reply(r))
		return;
	aw_err e = decode_contract_body(r->body ? r->body : "", r->body_len, &body, &err);
	aw_revision rev = {0};
	if (!e)
		e = aw_contract_create(r->opts->contracts, r->store, &c, r->segs[4], r->segs[5],
				       body, &rev, &err);
	json_decref(body);
	if (e)
		return reply_err(r, e, &err);
	http_reply_json(r, 201, revision_json(&rev));
	aw_revision_clear(&rev);
}

void h_contract_update(aw_req *r)
{
	aw_error err = {0};
	aw_ctx c;
	json_t *body = NULL;
	if (url_project_or_reply(r, AW_SCOPE_OPERATOR, &c) || json_body_or_reply(r))
		return;
	aw_err e = decode_contract_body(r->body ? r->body : "", r->body_len, &body, &err);
	aw_revision rev = {0};
	if (!e)
		e = aw_contract_update(r->opts->contracts, r->store, &c, r->segs[4], r->segs[5],
				       r->segs[7], body, &rev, &err);
	json_decref(body);
	if (e)
		return reply_err(r, e, &err);
	http_reply_json(r, 200, revision_json(&rev));
	aw_revision_clear(&rev);
}

void h_contract_list(aw_req *r)
{
	aw_error err = {0};
	aw_ctx c;
	if (url_project_or_reply(r, AW_SCOPE_READER, &c))
		return;
	aw_revision *revs = NULL;
	int n = 0;
	aw_err e = aw_contract_list(r->store, &c, r->segs[4], r->segs[5], &revs, &n, &err);
	if (e)
		return reply_err(r, e, &err);
	json_t *items = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(items, revision_json(&revs[i]));
	aw_revisions_free(revs, n);
	http_reply_json(r, 200, json_pack("{s:o}", "items", items));
}

void h_contract_get(aw_req *r)
{
	aw_error err = {0};
	aw_ctx c;
	if (url_project_or_reply(r, AW_SCOPE_READER, &c))
		return;
	aw_revision rev = {0};
	aw_err e = aw_contract_get(r->opts->contracts, r->store, &c, r->segs[4], r->segs[5],
				   r->segs[7], &rev, &err);
	if (e)
		return reply_err(r, e, &err);
	json_t *o = revision_json(&rev);
	if (o && rev.signature[0]) /* inspection shows, use refuses */
		json_object_set_new(
			o, "verified",
			json_boolean(aw_contract_verify(r->opts->contracts, &rev) == 0));
	aw_revision_clear(&rev);
	http_reply_json(r, 200, o);
}

void h_contract_diff(aw_req *r)
{
	aw_error err = {0};
	aw_ctx c;
	if (url_project_or_reply(r, AW_SCOPE_READER, &c))
		return;
	if (strcmp(r->segs[8], "diff") != 0) {
		reply_problem(r, AW_E_REQ_ROUTE, NULL);
		return;
	}
	json_t *patch = NULL;
	aw_err e = aw_contract_diff(r->store, &c, r->segs[4], r->segs[5], r->segs[7], r->segs[9],
				    &patch, &err);
	if (e)
		return reply_err(r, e, &err);
	http_reply_json(r, 200, patch);
}

/* Publishing an mcp_tool draft pins its tools first: the MCP gateway asks
 * each upstream for its definitions and the draft is updated with their
 * hashes, so the revision approvers approve holds them. */
static aw_err pin_tools(aw_req *r, const aw_ctx *c, const char *fam, const char *cid,
			const char *rev, aw_error *err)
{
	if (!r->opts->mcp)
		return aw_fail(err, AW_E_MCP_UNAVAILABLE,
			       "publishing an mcp_tool revision pins its tools: this process runs "
			       "no MCP gateway");
	aw_revision draft = {0};
	aw_err e = aw_contract_get(r->opts->contracts, r->store, c, fam, cid, rev, &draft, err);
	if (e || strcmp(draft.state, "draft")) { /* not a draft: publish says why */
		aw_revision_clear(&draft);
		return AW_OK;
	}
	json_t *body = json_loads(draft.body, 0, NULL), *pinned = NULL;
	aw_revision_clear(&draft);
	if (!body)
		return aw_fail(err, AW_E_INTERNAL, "a stored body is not JSON");
	e = aw_mcp_pin(r->opts->mcp, c, body, &pinned, err);
	if (!e && !json_equal(body, pinned)) {
		aw_revision upd = {0};
		e = aw_contract_update(r->opts->contracts, r->store, c, fam, cid, rev, pinned, &upd,
				       err);
		aw_revision_clear(&upd);
	}
	json_decref(body);
	json_decref(pinned);
	return e;
}

static void approve_rollback_json(json_t *o, const aw_approve_result *res)
{
	json_object_set_new(o, "rollback", json_true());
	json_object_set_new(o, "approvals", json_integer(res->approvals));
	json_object_set_new(o, "approvals_needed", json_integer(res->needed));
	json_object_set_new(o, "activated", json_boolean(res->act.activated));
	if (res->act.activated) {
		json_object_set_new(o, "event_id", json_string(res->act.event_id));
		json_object_set_new(o, "old_revision_id",
				    res->act.old_revision_id[0]
					    ? json_string(res->act.old_revision_id)
					    : json_null());
	}
	if (res->act_err.err)
		json_object_set_new(o, "activation_error",
				    json_pack("{s:s, s:s}", "code", aw_err_code(res->act_err.err),
					      "detail", res->act_err.msg));
}

void h_contract_action(aw_req *r)
{
	aw_error err = {0};
	aw_ctx c;
	const char *action = r->segs[8];
	int revoke = !strcmp(action, "revoke");
	if (!revoke && strcmp(action, "publish") && strcmp(action, "approve") &&
	    strcmp(action, "activate")) {
		reply_problem(r, AW_E_REQ_ROUTE, NULL);
		return;
	}
	if (url_project_or_reply(r, revoke ? AW_SCOPE_PROJECT_ADMIN : AW_SCOPE_OPERATOR, &c))
		return;
	const aw_contracts *reg = r->opts->contracts;
	const char *fam = r->segs[4], *cid = r->segs[5], *rev = r->segs[7];
	aw_err e;
	if (!strcmp(action, "publish")) {
		aw_revision out = {0};
		if (!strcmp(fam, "mcp_tool") && (e = pin_tools(r, &c, fam, cid, rev, &err)))
			return reply_err(r, e, &err);
		if ((e = aw_contract_publish(reg, r->store, &c, fam, cid, rev, &out, &err)))
			return reply_err(r, e, &err);
		http_reply_json(r, 200, revision_json(&out));
		aw_revision_clear(&out);
	} else if (!strcmp(action, "approve")) {
		aw_approval a;
		aw_approve_result res;
		if ((e = aw_contract_approve_ex(reg, r->store, &c, fam, cid, rev, &a, &res, &err)))
			return reply_err(r, e, &err);
		json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "revision_id", rev, "principal",
				      a.principal, "approved_at", a.approved_at, "expires_at",
				      a.expires_at);
		if (o &&
		    res.rollback) /* the approval completing a rollback's quorum activates it */
			approve_rollback_json(o, &res);
		http_reply_json(r, 201, o);
	} else if (!strcmp(action, "activate")) {
		aw_activation act;
		if ((e = aw_contract_activate(reg, r->store, &c, fam, cid, rev, &act, &err)))
			return reply_err(r, e, &err);
		json_t *o = json_pack("{s:s, s:b, s:b, s:i, s:i}", "revision_id", rev, "activated",
				      act.activated, "suggested", act.suggested, "approvals",
				      act.approvals, "threshold", act.threshold);
		json_object_set_new(o, "old_revision_id",
				    act.old_revision_id[0] ? json_string(act.old_revision_id)
							   : json_null());
		json_object_set_new(o, "event_id",
				    act.event_id[0] ? json_string(act.event_id) : json_null());
		http_reply_json(r, act.activated ? 200 : 202, o);
	} else {
		if ((e = aw_contract_revoke(reg, r->store, &c, fam, cid, rev, &err)))
			return reply_err(r, e, &err);
		http_reply_json(r, 200,
				json_pack("{s:s, s:s}", "revision_id", rev, "state", "revoked"));
	}
}

void h_contract_active(aw_req *r)
{
	aw_error err = {0};
	aw_ctx c;
	if (url_project_or_reply(r, AW_SCOPE_READER, &c))
		return;
	aw_revision rev = {0};
	aw_err e = aw_contract_active(r->opts->contracts, r->store, &c, r->segs[4], r->segs[5],
				      &rev, &err);
	if (e)
		return reply_err(r, e, &err);
	http_reply_json(r, 200, revision_json(&rev));
	aw_revision_clear(&rev);
}

/* GET .../convergence?limit=N: which live processes learned each of the
 * last N activations, and how long after its commit (fleet.h). */
/* The processes serve every tenant: their ids are the platform's to see. A
 * tenant's reader sees the counts, roles and times. */
static void hide_process_ids(json_t *doc)
{
	size_t i, k;
	json_t *p, *a;
	json_array_foreach (json_object_get(doc, "processes"), i, p)
		json_object_del(p, "process_id");
	json_array_foreach (json_object_get(doc, "activations"), i, a)
		json_array_foreach (json_object_get(a, "processes"), k, p)
			json_object_del(p, "process_id");
}

void h_contract_convergence(aw_req *r)
{
	aw_error err = {0};
	aw_ctx c;
	if (url_project_or_reply(r, AW_SCOPE_READER, &c))
		return;
	const char *l = http_query(r, "limit");
	char *end = NULL;
	long limit = l ? strtol(l, &end, 10) : 10;
	aw_err e = AW_OK;
	if (l && (!*l || *end || limit < 1 || limit > 100))
		e = aw_fail_at(&err, AW_E_REQ_INVALID, "limit", "limit must be 1..100");
	if (!e)
		e = aw_contract_target_ok(&c, r->segs[4], r->segs[5], &err);
	json_t *doc = NULL;
	if (!e)
		e = aw_fleet_convergence(r->store, &c, r->segs[4], r->segs[5], (int)limit, &doc,
					 &err);
	if (e)
		return reply_err(r, e, &err);
	if (strcmp(r->ctx.project, AW_PLATFORM_PROJECT) != 0)
		hide_process_ids(doc);
	http_reply_json(r, 200, doc);
}

/* POST .../rollback {"to": REV} (body optional; no "to": the revision active
 * before the current activation): a published rollback revision, waiting for
 * the approval policy's rollback quorum. */
void h_contract_rollback(aw_req *r)
{
	aw_error err = {0};
	aw_ctx c;
	json_t *in = NULL;
	const char *to = NULL;
	if (url_project_or_reply(r, AW_SCOPE_OPERATOR, &c))
		return;
	aw_err e = AW_OK;
	if (r->body_len) {
		static const char *const allowed[] = {"to", NULL};
		if (json_body_or_reply(r))
			return;
		if (!(e = aw_json_parse_object(r->body, r->body_len, &in, &err)) &&
		    !(e = aw_json_only(in, allowed, &err)))
			e = aw_json_str(in, "to", 0, &to, &err);
	}
	aw_rollback rb = {0};
	if (!e)
		e = aw_contract_rollback(r->opts->contracts, r->store, &c, r->segs[4], r->segs[5],
					 to, &rb, &err);
	json_decref(in);
	if (e)
		return reply_err(r, e, &err);
	json_t *o = revision_json(&rb.revision);
	if (o) {
		json_object_set_new(o, "approvals", json_integer(0));
		json_object_set_new(o, "approvals_needed", json_integer(rb.needed));
	}
	aw_revision_clear(&rb.revision);
	http_reply_json(r, 201, o);
}
