/*
 * h_schedule.c - /v1/projects/{project}/schedules: create (operator), list and
 * get (reader), delete (operator). The URL's project is authorised against
 * the key (url_project_or_reply); another project's schedule answers like
 * a missing one. The service (schedule.h) does the checking and the audit.
 */
#include <string.h>

#include "awooop/schedule.h"
#include "http_internal.h"

void h_schedules_create(aw_req *r)
{
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_OPERATOR, &scoped) || json_body_or_reply(r))
		return;
	aw_error err = {0};
	aw_schedule_request req;
	json_t *out = NULL;
	aw_err e = aw_schedule_request_decode(r->body ? r->body : "", r->body_len, &req, &err);
	if (!e) {
		e = aw_schedule_create(r->store, &scoped, &req, &out, &err);
		aw_schedule_request_free(&req);
	}
	if (e)
		reply_problem(r, e, &err);
	else
		http_reply_json(r, 201, out);
}

void h_schedules_list(aw_req *r)
{
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_READER, &scoped))
		return;
	aw_error err = {0};
	json_t *out = NULL;
	aw_err e = aw_schedule_list(r->store, &scoped, &out, &err);
	if (e)
		reply_problem(r, e, &err);
	else
		http_reply_json(r, 200, out);
}

void h_schedule_get(aw_req *r)
{
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_READER, &scoped))
		return;
	aw_error err = {0};
	json_t *out = NULL;
	aw_err e = aw_schedule_get(r->store, &scoped, r->segs[4], &out, &err);
	if (e)
		reply_problem(r, e, &err);
	else
		http_reply_json(r, 200, out);
}

void h_schedule_delete(aw_req *r)
{
	aw_ctx scoped;
	if (url_project_or_reply(r, AW_SCOPE_OPERATOR, &scoped))
		return;
	aw_error err = {0};
	aw_err e = aw_schedule_delete(r->store, &scoped, r->segs[4], &err);
	if (e)
		reply_problem(r, e, &err);
	else
		reply_empty(r, 204);
}
