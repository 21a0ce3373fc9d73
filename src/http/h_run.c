/*
 * h_run.c - /v1/platform/runs: submit (Idempotency-Key), get with the step
 * journal and transitions, list (cursor, newest first), cancel. The project is
 * the caller's key's project, or the one ?project= names (a platform admin's
 * choice, selected_project_or_reply); another project's run answers like
 * a missing one.
 */
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/run.h"
#include "awooop/json.h"
#include "http_internal.h"

static void reply_run(aw_req *r, int status, const aw_run *run, const aw_run_step *steps,
		      int nsteps, json_t *transitions)
{
	json_t *o = aw_run_json(run, steps, nsteps);
	if (o && transitions)
		json_object_set_new(o, "transitions", transitions);
	else
		json_decref(transitions);
	http_reply_json(r, status, o);
}

void h_runs_submit(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (selected_project_or_reply(r, AW_SCOPE_OPERATOR, &scoped) || json_body_or_reply(r))
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
		reply_problem(r, e, &err);
		return;
	}
	reply_run(r, replayed ? 200 : 201, &run, NULL, 0, NULL);
	aw_run_free(&run);
}

/* POST /v1/platform/runs:batch {"runs": [{<a run request>,
 * "idempotency_key"?}, ...]} (1..1000): one transaction, a result per run
 * in order: {"status": 201 | 200 (replayed) | 4xx, "run_id" | "code",
 * "detail", "pointer"}. 200 unless the batch itself is refused. */
void h_runs_batch(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (selected_project_or_reply(r, AW_SCOPE_OPERATOR, &scoped) || json_body_or_reply(r))
		return;
	json_t *body = NULL;
	static const char *const fields[] = {"runs", NULL};
	aw_err e = aw_json_parse_object(r->body, r->body_len, &body, &err);
	if (!e)
		e = aw_json_only(body, fields, &err);
	json_t *runs = json_object_get(body, "runs");
	size_t n = json_array_size(runs);
	if (!e && (!json_is_array(runs) || n < 1 || n > AW_RUN_BATCH_MAX))
		e = aw_fail_at(&err, AW_E_REQ_INVALID, "/runs",
			       "runs must be an array of 1..%d runs", AW_RUN_BATCH_MAX);
	aw_run_batch_item *items = e ? NULL : aw_calloc(n, sizeof *items);
	if (!e && !items)
		e = aw_fail(&err, AW_E_NOMEM, "out of memory");
	for (size_t i = 0; !e && i < n; i++) { /* each decoded as a run of its own */
		json_t *key = json_object_get(json_array_get(runs, i), "idempotency_key");
		if (key && !json_is_string(key))
			aw_fail_at(&items[i].err, AW_E_REQ_INVALID, "idempotency_key",
				   "idempotency_key must be a string");
		else /* the body's own string: it outlives the items */
			items[i].idem_key = json_string_value(key);
		json_t *one = json_deep_copy(json_array_get(runs, i)); /* the request without it */
		json_object_del(one, "idempotency_key");
		char *text = json_is_object(one) ? json_dumps(one, JSON_COMPACT) : NULL;
		if (!items[i].err.err && !text)
			aw_fail(&items[i].err, AW_E_REQ_INVALID, "a run must be an object");
		else if (!items[i].err.err)
			aw_run_request_decode(text, strlen(text), &items[i].req, &items[i].err);
		free(text);
		json_decref(one);
	}
	if (!e)
		e = aw_run_submit_batch(r->store, &scoped, items, (int)n, &err);
	if (e) {
		for (size_t i = 0; items && i < n; i++)
			aw_run_request_free(&items[i].req);
		free(items);
		json_decref(body);
		reply_problem(r, e, &err);
		return;
	}
	json_t *results = json_array();
	int created = 0, replayed = 0, refused = 0;
	for (size_t i = 0; i < n; i++) {
		aw_run_batch_item *it = &items[i];
		json_t *o;
		if (it->err.err) {
			refused++;
			o = json_pack("{s:i,s:s,s:s}", "status", aw_err_http_status(it->err.err),
				      "code", aw_err_code(it->err.err), "detail", it->err.msg);
			if (o && it->err.where[0])
				json_object_set_new(o, "pointer", json_string(it->err.where));
		} else {
			created += !it->replayed;
			replayed += it->replayed;
			o = json_pack("{s:i,s:s,s:s}", "status", it->replayed ? 200 : 201, "run_id",
				      it->run.run_id, "state", it->run.state);
		}
		json_array_append_new(results, o);
		aw_run_free(&it->run);
		aw_run_request_free(&it->req);
	}
	free(items);
	json_decref(body);
	http_reply_json(r, 200,
			json_pack("{s:o,s:i,s:i,s:i}", "results", results, "created", created,
				  "replayed", replayed, "refused", refused));
}

void h_run_get(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (selected_project_or_reply(r, AW_SCOPE_READER, &scoped))
		return;
	json_t *view = NULL;
	aw_err e = aw_run_view(r->store, &scoped, r->segs[3], &view, &err);
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	http_reply_json(r, 200, view);
}

void h_runs_list(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (selected_project_or_reply(r, AW_SCOPE_READER, &scoped))
		return;
	const char *l = http_query(r, "limit");
	char *end = NULL;
	long limit = l ? strtol(l, &end, 10) : 50;
	if (l && (!*l || *end || limit < 1 || limit > 1000)) {
		aw_fail_at(&err, AW_E_REQ_INVALID, "limit", "limit must be 1..1000");
		reply_problem(r, err.err, &err);
		return;
	}
	aw_run *runs = NULL;
	int n = 0;
	aw_run_filter f = {.state = http_query(r, "state"),
			   .queue = http_query(r, "queue"),
			   .created_from = http_query(r, "created_from"),
			   .created_to = http_query(r, "created_to"),
			   .text = http_query(r, "q")};
	aw_err e = aw_run_list_where(r->store, &scoped, &f, http_query(r, "cursor"), (int)limit,
				     &runs, &n, &err);
	if (e) {
		reply_problem(r, e, &err);
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
	http_reply_json(r, 200, body);
}

void h_run_cancel(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (selected_project_or_reply(r, AW_SCOPE_OPERATOR, &scoped))
		return;
	aw_run run;
	aw_err e = aw_run_cancel(r->store, &scoped, r->segs[3], &run, &err);
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	reply_run(r, 200, &run, NULL, 0, NULL);
	aw_run_free(&run);
}

void h_run_diff(aw_req *r)
{
	aw_error err = {0};
	aw_ctx scoped;
	if (selected_project_or_reply(r, AW_SCOPE_READER, &scoped))
		return;
	json_t *out = NULL;
	aw_err e = aw_run_diff(r->store, &scoped, r->segs[3], r->segs[5], &out, &err);
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	http_reply_json(r, 200, out);
}

/* GET /v1/projects/{project}/queues (reader): the project's queues. */
void h_queues_list(aw_req *r)
{
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_READER, &scoped))
		return;
	aw_error err = {0};
	json_t *out = NULL;
	aw_err e = aw_run_queue_list(r->store, &scoped, &out, &err);
	if (e)
		reply_problem(r, e, &err);
	else
		http_reply_json(r, 200, out);
}

/* PUT /v1/projects/{project}/queues/{queue} (operator) {"concurrency": N|null}:
 * declares the queue or changes its limit. */
void h_queue_put(aw_req *r)
{
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_OPERATOR, &scoped))
		return;
	static const char *const fields[] = {"concurrency", NULL};
	aw_error err = {0};
	json_t *body = NULL, *out = NULL;
	aw_err e = aw_json_parse_object(r->body, r->body_len, &body, &err);
	if (!e)
		e = aw_json_only(body, fields, &err);
	json_t *c = json_object_get(body, "concurrency");
	if (!e && (!c || !(json_is_null(c) || json_is_integer(c)) ||
		   (json_is_integer(c) && (json_integer_value(c) < 1 ||
					   json_integer_value(c) > AW_RUN_QUEUE_CONCURRENCY_MAX))))
		e = aw_fail_at(&err, AW_E_REQ_INVALID, "/concurrency",
			       "concurrency must be 1..%d, or null for no limit",
			       AW_RUN_QUEUE_CONCURRENCY_MAX);
	if (!e)
		e = aw_run_queue_set(r->store, &scoped, r->segs[4],
				     json_is_integer(c) ? (int)json_integer_value(c) : 0, &out,
				     &err);
	json_decref(body);
	if (e)
		reply_problem(r, e, &err);
	else
		http_reply_json(r, 200, out);
}
