/*
 * h_run.c - /v1/platform/runs: submit (Idempotency-Key), get with the step
 * journal and transitions, list (cursor, newest first), cancel. The project is
 * the caller's key's project; another project's run answers like a missing one.
 */
#include <stdlib.h>
#include <string.h>

#include "awooop/run.h"
#include "http_internal.h"

/* Authenticates and authorises for the key's own project. */
static int own_project_or_reply(aw_req *r, aw_scope need, aw_ctx *scoped)
{
	if (aw_auth_or_reply(r))
		return -1;
	char project[AW_PROJECT_MAX + 1];
	memcpy(project, r->ctx.project, sizeof project);
	return aw_project_or_reply(r, project, need, scoped);
}

static void reply_run(aw_req *r, int status, const aw_run *run, const aw_run_step *steps,
		      int nsteps, json_t *transitions)
{
	json_t *o = aw_run_json(run, steps, nsteps);
	if (o && transitions)
		json_object_set_new(o, "transitions", transitions);
	else
		json_decref(transitions);
	aw_reply_json(r, status, o);
}

void aw_h_runs_submit(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (own_project_or_reply(r, AW_SCOPE_OPERATOR, &scoped) || aw_json_body_or_reply(r))
		return;
	const char *key = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Idempotency-Key");
	aw_run_request req;
	aw_err e = aw_run_request_decode(r->body ? r->body : "", r->body_len, &req, &err);
	aw_run run;
	int replayed = 0;
	if (!e) {
		e = aw_run_submit(r->store, &scoped, &req, key, &run, &replayed, &err);
		aw_run_request_free(&req);
	}
	if (e) {
		aw_reply_problem(r, e, &err);
		return;
	}
	reply_run(r, replayed ? 200 : 201, &run, NULL, 0, NULL);
	aw_run_free(&run);
}

void aw_h_run_get(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (own_project_or_reply(r, AW_SCOPE_READER, &scoped))
		return;
	json_t *view = NULL;
	aw_err e = aw_run_view(r->store, &scoped, r->segs[3], &view, &err);
	if (e) {
		aw_reply_problem(r, e, &err);
		return;
	}
	aw_reply_json(r, 200, view);
}

void aw_h_runs_list(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (own_project_or_reply(r, AW_SCOPE_READER, &scoped))
		return;
	const char *l = aw_query(r, "limit");
	char *end = NULL;
	long limit = l ? strtol(l, &end, 10) : 50;
	if (l && (!*l || *end || limit < 1 || limit > 1000)) {
		aw_fail_at(&err, AW_E_REQ_INVALID, "limit", "limit must be 1..1000");
		aw_reply_problem(r, err.err, &err);
		return;
	}
	aw_run *runs = NULL;
	int n = 0;
	aw_err e = aw_run_list(r->store, &scoped, aw_query(r, "state"), aw_query(r, "cursor"),
			       (int)limit, &runs, &n, &err);
	if (e) {
		aw_reply_problem(r, e, &err);
		return;
	}
	json_t *items = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(items, aw_run_json(&runs[i], NULL, 0));
	json_t *body = json_pack("{s:o}", "items", items);
	if (body)
		json_object_set_new(body, "next_cursor",
				    n == limit ? json_string(runs[n - 1].run_id) : json_null());
	aw_runs_free(runs, n);
	aw_reply_json(r, 200, body);
}

void aw_h_run_cancel(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (own_project_or_reply(r, AW_SCOPE_OPERATOR, &scoped))
		return;
	aw_run run;
	aw_err e = aw_run_cancel(r->store, &scoped, r->segs[3], &run, &err);
	if (e) {
		aw_reply_problem(r, e, &err);
		return;
	}
	reply_run(r, 200, &run, NULL, 0, NULL);
	aw_run_free(&run);
}

void aw_h_run_diff(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (own_project_or_reply(r, AW_SCOPE_READER, &scoped))
		return;
	json_t *out = NULL;
	aw_err e = aw_run_diff(r->store, &scoped, r->segs[3], r->segs[5], &out, &err);
	if (e) {
		aw_reply_problem(r, e, &err);
		return;
	}
	aw_reply_json(r, 200, out);
}
