/*
 * h_tenancy.c - /v1/projects, /v1/projects/{project}/keys and /v1/whoami. Each handler:
 * authenticate, authorise for the URL's project (another tenant's project is a
 * 404 like a missing one), decode, call the tenancy service, reply.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/audit.h"
#include "awooop/budget.h"
#include "awooop/clock.h"
#include "awooop/ident.h"
#include "awooop/json.h"
#include "awooop/keys.h"
#include "awooop/keymig.h"
#include "awooop/str.h"
#include "awooop/tenancy.h"
#include "http_internal.h"

static json_t *project_json(const aw_project *p)
{
	return json_pack("{s:s, s:s, s:s}", "id", p->project_id, "created_at", p->created_at,
			 "created_by", p->created_by);
}

static json_t *key_json(const aw_apikey *k)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "key_id", k->key_id, "project",
			      k->project_id, "name", k->name, "scope", aw_scope_name(k->scope),
			      "prefix", k->key_prefix, "created_at", k->created_at, "created_by",
			      k->created_by);
	if (o)
		json_object_set_new(o, "revoked_at",
				    k->revoked_at[0] ? json_string(k->revoked_at) : json_null());
	if (o) { /* a virtual key's limits (tenancy.h); {} when none */
		json_t *lim = json_loads(k->limits, 0, NULL);
		json_object_set_new(o, "limits", json_is_object(lim) ? lim : json_object());
		if (lim && !json_is_object(lim))
			json_decref(lim);
		json_object_set_new(o, "expires_at",
				    k->expires_at[0] ? json_string(k->expires_at) : json_null());
	}
	return o;
}

/* The URL's {project} segment: a slug, or __platform__ for platform admins. */
int project_segment_or_reply(aw_req *r, const char *seg)
{
	if (aw_ident_project_ok(seg) || strcmp(seg, AW_PLATFORM_PROJECT) == 0)
		return 0;
	aw_error err;
	aw_fail(&err, AW_E_TENANT_SLUG, "project id must match [a-z0-9][a-z0-9_-]{1,62}");
	reply_problem(r, err.err, &err);
	return -1;
}

int url_project_or_reply(aw_req *r, aw_scope need, aw_ctx *scoped)
{
	return project_segment_or_reply(r, r->segs[2]) ||
	       project_or_reply(r, r->segs[2], need, scoped);
}

static int limit_or_reply(aw_req *r, int *limit)
{
	const char *l = http_query(r, "limit");
	*limit = 100;
	if (!l)
		return 0;
	char *end = NULL;
	long v = strtol(l, &end, 10);
	if (!*l || *end || v < 1 || v > 1000) {
		aw_error err;
		aw_fail_at(&err, AW_E_REQ_INVALID, "limit", "limit must be 1..1000");
		reply_problem(r, err.err, &err);
		return -1;
	}
	*limit = (int)v;
	return 0;
}

void h_projects_create(aw_req *r)
{
	aw_error err = {0};
	if (auth_or_reply(r))
		return;
	if (r->ctx.scope != AW_SCOPE_PLATFORM_ADMIN) {
		aw_fail(&err, AW_E_AUTH_SCOPE, "creating projects needs a platform-admin key");
		reply_problem(r, err.err, &err);
		return;
	}
	if (json_body_or_reply(r))
		return;
	aw_project_create_req req;
	aw_err e = decode_project_create(r->body ? r->body : "", r->body_len, &req, &err);
	aw_project p;
	if (!e)
		e = aw_project_create(r->store, &r->ctx, req.id, &p, &err);
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	http_reply_json(r, 201, project_json(&p));
}

void h_projects_list(aw_req *r)
{
	aw_error err = {0};
	int limit;
	if (auth_or_reply(r) || limit_or_reply(r, &limit))
		return;
	const char *after = http_query(r, "cursor");
	aw_project *items = NULL;
	int n = 0;
	aw_err e = aw_project_list(r->store, &r->ctx, after, limit, &items, &n, &err);
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	json_t *arr = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(arr, project_json(&items[i]));
	json_t *body = json_pack("{s:o}", "items", arr);
	if (body)
		json_object_set_new(body, "next_cursor",
				    n == limit ? json_string(items[n - 1].project_id)
					       : json_null());
	free(items);
	http_reply_json(r, 200, body);
}

/* GET /v1/whoami: what the key is (its project, scope, principal, id),
 * for clients that take the project from the key. Never the secret nor
 * its prefix. */
void h_whoami(aw_req *r)
{
	if (auth_or_reply(r))
		return;
	http_reply_json(r, 200,
			json_pack("{s:s, s:s, s:s, s:s}", "project", r->ctx.project, "scope",
				  aw_scope_name(r->ctx.scope), "principal", r->ctx.principal,
				  "key_id", r->ctx.key_id));
}

void h_project_get(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_READER, &scoped))
		return;
	aw_project p;
	aw_err e = aw_project_get(r->store, &scoped, &p, &err);
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	http_reply_json(r, 200, project_json(&p));
}

void h_keys_create(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_PROJECT_ADMIN, &scoped))
		return;
	if (json_body_or_reply(r))
		return;
	aw_key_create_req req;
	aw_err e = decode_key_create(r->body ? r->body : "", r->body_len, &req, &err);
	aw_apikey k;
	char secret[AW_KEY_SECRET_LEN + 1];
	if (!e)
		e = aw_key_create_limited(r->store, &scoped, req.name, req.scope, &req.limits, &k,
					  secret, &err);
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	json_t *body = key_json(&k);
	if (body)
		json_object_set_new(body, "key", json_string(secret));
	memset(secret, 0, sizeof secret);
	http_reply_json(r, 201, body);
}

void h_keys_list(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_PROJECT_ADMIN, &scoped))
		return;
	aw_apikey *items = NULL;
	int n = 0;
	aw_err e = aw_key_list(r->store, &scoped, &items, &n, &err);
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	json_t *arr = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(arr, key_json(&items[i]));
	free(items);
	http_reply_json(r, 200, json_pack("{s:o}", "items", arr));
}

void h_key_revoke(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_PROJECT_ADMIN, &scoped))
		return;
	aw_err e = aw_key_revoke(r->store, &scoped, r->segs[4], &err);
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	reply_empty(r, 204);
}

void h_key_get(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_PROJECT_ADMIN, &scoped))
		return;
	aw_apikey k;
	json_t *usage = NULL;
	aw_err e = aw_key_get(r->store, &scoped, r->segs[4], &k, &err);
	if (!e) { /* what its limits count now */
		aw_key_limits l;
		aw_key_limits_load(k.limits, k.expires_at, &l);
		aw_budget_key bk = {.key_id = k.key_id,
				    .rpm = l.rpm,
				    .tpm = l.tpm,
				    .budget = {l.budget_tokens, l.budget_cost},
				    .period = l.budget_period};
		e = aw_budget_key_usage(r->store, &scoped, &bk, &usage, &err);
	}
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	json_t *body = key_json(&k);
	json_object_set_new(body, "usage", usage);
	http_reply_json(r, 200, body);
}

void h_key_update(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_PROJECT_ADMIN, &scoped))
		return;
	if (json_body_or_reply(r))
		return;
	json_t *patch = NULL;
	aw_apikey k;
	aw_err e = decode_key_update(r->body ? r->body : "", r->body_len, &patch, &err);
	if (!e)
		e = aw_key_update(r->store, &scoped, r->segs[4], patch, &k, &err);
	json_decref(patch);
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	http_reply_json(r, 200, key_json(&k));
}

/* A filter of the audit list: at most max bytes; NULL and replied when too
 * long (absent: NULL, nothing replied: *bad stays 0). */
static const char *audit_param(aw_req *r, const char *name, size_t max, int *bad)
{
	const char *v = http_query(r, name);
	if (*bad || !v || strlen(v) <= max)
		return v;
	aw_error err;
	aw_fail_at(&err, AW_E_REQ_INVALID, name, "%s is at most %zu bytes", name, max);
	reply_problem(r, err.err, &err);
	*bad = 1;
	return NULL;
}

/* GET /v1/projects/{project}/audit?action=A[,B...]&since=&until=&actor=
 * &target=&outcome=&run=&order=asc|desc&cursor=&limit= : the trail, oldest
 * first (order=desc: newest first, the cursor counting down). outcome and
 * run select agent calls by their envelope (llm.call, mcp.call, mcp.relay). */
void h_audit_list(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	int limit, bad = 0;
	if (url_project_or_reply(r, AW_SCOPE_OPERATOR, &scoped) || limit_or_reply(r, &limit))
		return;
	aw_audit_query q = {0};
	const char *action = audit_param(r, "action", 8 * 64, &bad);
	q.since = audit_param(r, "since", 64, &bad);
	q.until = audit_param(r, "until", 64, &bad);
	q.actor = audit_param(r, "actor", AW_PROJECT_MAX, &bad);
	q.target = audit_param(r, "target", 1024, &bad);
	q.outcome = audit_param(r, "outcome", 32, &bad);
	q.run_id = audit_param(r, "run", AW_UUID_STR_LEN, &bad);
	const char *order = audit_param(r, "order", 4, &bad);
	const char *cursor = audit_param(r, "cursor", 20, &bad);
	if (bad)
		return;
	char actions[8 * 64 + 1]; /* audit_param: at most 8 * 64 bytes */
	if (AW_STR_COPY(actions, action) < 0) {
		aw_error ae;
		aw_fail_at(&ae, AW_E_REQ_INVALID, "action", "action is at most %zu bytes",
			   sizeof actions - 1);
		reply_problem(r, ae.err, &ae);
		return;
	}
	char *end = NULL, *save = NULL;
	int64_t since_ms;
	aw_err e = AW_OK;
	for (char *a = strtok_r(actions, ",", &save); a && !e; a = strtok_r(NULL, ",", &save)) {
		if (q.nactions == AW_AUDIT_ACTIONS_MAX || strlen(a) > 63)
			e = aw_fail_at(
				&err, AW_E_REQ_INVALID, "action",
				"action is up to %d names of at most 63 bytes, comma-separated",
				AW_AUDIT_ACTIONS_MAX);
		else
			q.actions[q.nactions++] = a;
	}
	if (!e && cursor && (!*cursor || (q.cursor = strtoll(cursor, &end, 10)) < 0 || *end))
		e = aw_fail_at(&err, AW_E_REQ_INVALID, "cursor", "cursor must be a record number");
	if (!e && order && strcmp(order, "asc") && strcmp(order, "desc"))
		e = aw_fail_at(&err, AW_E_REQ_INVALID, "order", "order must be asc or desc");
	q.newest_first = order && !strcmp(order, "desc");
	if (!e && q.since && aw_clock_parse(q.since, &since_ms) != 0)
		e = aw_fail_at(&err, AW_E_REQ_INVALID, "since",
			       "since must be a timestamp like 2026-11-29T09:54:27.000Z");
	if (!e && q.until && aw_clock_parse(q.until, &since_ms) != 0)
		e = aw_fail_at(&err, AW_E_REQ_INVALID, "until",
			       "until must be a timestamp like 2026-11-29T09:54:27.000Z");
	if (!e && q.run_id && !aw_uuid_valid(q.run_id))
		e = aw_fail_at(&err, AW_E_REQ_INVALID, "run", "run must be a run id");
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	aw_txn *t = NULL;
	aw_audit_row *rows = NULL;
	int n = 0;
	aw_project p;
	e = aw_store_begin(r->store, &scoped, AW_TXN_READ, &t, &err);
	if (!e && !(e = aw_store_project_get(t, &p, &err)))
		e = aw_store_audit_query(t, &q, limit, &rows, &n, &err);
	if (t)
		aw_store_rollback(t);
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	json_t *items = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(items, aw_audit_row_json(&rows[i]));
	json_t *body = json_pack("{s:o}", "items", items);
	if (body) {
		char next[24];
		snprintf(next, sizeof next, "%lld", n ? (long long)rows[n - 1].seq : 0LL);
		json_object_set_new(body, "next_cursor",
				    n == limit ? json_string(next) : json_null());
	}
	aw_audit_rows_free(rows, n);
	http_reply_json(r, 200, body);
}

/* GET /v1/projects/{project}/audit/verify: the whole chain walked in the
 * store (aw_audit_verify), for operators and the console. */
void h_audit_verify(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_OPERATOR, &scoped))
		return;
	aw_audit_report rep;
	aw_err e = aw_audit_verify(r->store, &scoped, &rep, &err);
	if (e)
		return reply_problem(r, e, &err);
	http_reply_json(r, 200,
			json_pack("{s:s, s:b, s:I, s:I, s:s}", "project", scoped.project, "ok",
				  rep.ok, "records", (json_int_t)rep.records, "break_seq",
				  (json_int_t)rep.break_seq, "reason", rep.reason));
}

/* GET /v1/projects/{project}/key-migrations: the INV-1 phase of every tenant
 * key pattern and, with Redis, this process's counters that gate the next
 * phase (aw_keymig_status); without Redis the phases from the store. */
void h_key_migrations(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_OPERATOR, &scoped))
		return;
	json_t *items = json_array();
	aw_err e = AW_OK;
	for (int i = 0; !e && i < aw_keys_count(); i++) {
		const aw_key_pattern *p = aw_keys_at(i);
		if (p->scope != AW_KEY_TENANT)
			continue;
		aw_kv_status st = {0};
		json_t *counters = json_null();
		e = aw_keymig_status(r->store, r->opts->kv, &scoped, p->name, &st, &err);
		if (!e && r->opts->kv)
			counters = json_pack("{s:I,s:I,s:I,s:I}", "reads", (json_int_t)st.reads,
					     "new_hits", (json_int_t)st.new_hits, "fallbacks",
					     (json_int_t)st.fallbacks, "old_reads",
					     (json_int_t)st.old_reads);
		if (!e)
			json_array_append_new(
				items, json_pack("{s:s,s:s,s:s,s:s,s:o,s:o}", "pattern", p->name,
						 "priority", p->priority, "phase", st.phase,
						 "legacy", p->legacy, "since",
						 st.since[0] ? json_string(st.since) : json_null(),
						 "counters", counters));
		else
			json_decref(counters);
	}
	if (e) {
		json_decref(items);
		return reply_problem(r, e, &err);
	}
	http_reply_json(r, 200,
			json_pack("{s:s,s:b,s:o}", "project", scoped.project, "redis",
				  r->opts->kv != NULL, "items", items));
}
