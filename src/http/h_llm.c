/*
 * h_llm.c - the OpenAI-compatible front door of the LLM gateway:
 *   POST /v1/chat/completions   (stream or not; scopes worker and up)
 *   GET  /v1/models             the models the key's project may call
 * The project is the key's. Optional headers: X-Awooop-Task (routes by
 * match.task / match.intent), X-Awooop-Run-Id and X-Awooop-Step (a worker
 * calling on behalf of a run step: carried into the envelope).
 *
 * The handler starts the call and parks the connection; the gateway wakes it
 * when the answer (or the first stream bytes, or the failure) is known. A
 * stream is read from the call, parking whenever it has nothing to send, so
 * a slow model holds no server thread.
 */
#include <stdlib.h>
#include <string.h>

#include "awooop/json.h"
#include "awooop/llm.h"
#include "http_internal.h"

static int scope_or_reply(aw_req *r)
{
	if (r->ctx.scope >= AW_SCOPE_WORKER)
		return 0;
	aw_error err;
	aw_fail(&err, AW_E_AUTH_SCOPE, "model calls need a worker or operator key");
	aw_reply_problem(r, err.err, &err);
	return -1;
}

static ssize_t read_call(void *c, char *buf, size_t max, void (*park)(void *), void *pud)
{
	return aw_llm_read(c, buf, max, park, pud);
}

/* What routing did: the route and the upstream model that answered. */
static void said(aw_req *r)
{
	char route[80], model[160];
	aw_llm_call_said(r->svc, route, sizeof route, model, sizeof model);
	if (route[0])
		aw_req_header(r, "x-awooop-route", route);
	if (model[0])
		aw_req_header(r, "x-awooop-upstream-model", model);
}

static void answer(aw_req *r)
{
	char *body = NULL;
	aw_error err = {0};
	aw_llm_state st = aw_llm_head(r->svc, aw_req_park_cb, r, &body, &err);
	if (st == AW_LLM_ANSWER || st == AW_LLM_STREAM)
		said(r);
	switch (st) {
	case AW_LLM_WAIT: return;
	case AW_LLM_ANSWER: {
		aw_reply_text(r, 200, "application/json", body);
		free(body);
		return;
	}
	case AW_LLM_STREAM: aw_reply_call_stream(r, read_call); return;
	case AW_LLM_FAILED: aw_reply_problem(r, err.err, &err); return;
	}
}

static void done(aw_req *r)
{
	aw_llm_release(r->svc);
	r->svc = NULL;
}

void aw_h_llm_chat(aw_req *r)
{
	if (scope_or_reply(r) || aw_json_body_or_reply(r))
		return;
	aw_error err = {0};
	if (!r->opts->llm) {
		aw_fail(&err, AW_E_LLM_UNAVAILABLE, "this process runs no LLM gateway");
		aw_reply_problem(r, err.err, &err);
		return;
	}
	json_t *req = NULL;
	aw_err e = aw_json_parse_object(r->body, r->body_len, &req, &err);
	const char *run = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Awooop-Run-Id");
	const char *step = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Awooop-Step");
	if (!e && run && !aw_uuid_valid(run))
		e = aw_fail(&err, AW_E_REQ_ID, "X-Awooop-Run-Id must be a run id (UUID)");
	char *end = NULL;
	long stepno = step ? strtol(step, &end, 10) : 0;
	if (!e && step && (!*step || *end || stepno < 0 || stepno > 100000))
		e = aw_fail(&err, AW_E_REQ_HEADER, "X-Awooop-Step must be a step number");
	aw_llm_meta meta = {
		.run_id = run,
		.step_no = (int)stepno,
		.task = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Awooop-Task"),
		.key = &r->key};
	aw_llm_call *c = NULL;
	if (!e) {
		aw_req_extend(r, r->opts->llm_timeout_s > 0 ? r->opts->llm_timeout_s : 600);
		e = aw_llm_start(r->opts->llm, &r->ctx, req, &meta, aw_req_wake_cb, r, &c, &err);
	}
	json_decref(req);
	if (e) {
		aw_reply_problem(r, e, &err);
		return;
	}
	aw_req_bind_call(r, c, done, answer); /* a parked call keeps no body memory */
}

void aw_h_llm_models(aw_req *r)
{
	if (scope_or_reply(r))
		return;
	aw_error err = {0};
	json_t *out = NULL;
	aw_err e = r->opts->llm ? aw_llm_models(r->opts->llm, &r->ctx, &out, &err)
				: aw_fail(&err, AW_E_LLM_UNAVAILABLE,
					  "this process runs no LLM gateway");
	if (e)
		aw_reply_problem(r, e, &err);
	else
		aw_reply_json(r, 200, out);
}
