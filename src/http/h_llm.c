/*
 * h_llm.c - the OpenAI-compatible front door of the LLM gateway:
 *   POST /v1/chat/completions   (stream or not; scopes worker and up)
 *   POST /v1/embeddings         (OpenAI-compatible and Azure upstreams; budgeted
 *                               by its input's tokens)
 *   POST /v1/responses          OpenAI's Responses API, the same way (decoded into a
 *                               chat request; a response object or its events back)
 *   GET  /v1/models             the models the key's project may call
 *   POST /v1/messages           Anthropic's Messages API on the same calls: the
 *                               request decoded into a chat completion request
 *                               (llm_wire.h), the answer and its stream written
 *                               back as a message and its named events; the key
 *                               may come as x-api-key, as the Anthropic SDK sends it
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

#include "awooop/alloc.h"
#include "awooop/json.h"
#include "awooop/llm.h"
#include "awooop/llm_wire.h"
#include "http_internal.h"

static int scope_or_reply(aw_req *r)
{
	if (r->ctx.scope >= AW_SCOPE_WORKER)
		return 0;
	aw_error err;
	aw_fail(&err, AW_E_AUTH_SCOPE, "model calls need a worker or operator key");
	reply_problem(r, err.err, &err);
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
		req_header(r, "x-awooop-route", route);
	if (model[0])
		req_header(r, "x-awooop-upstream-model", model);
}

static void answer(aw_req *r)
{
	char *body = NULL;
	aw_error err = {0};
	aw_llm_state st = aw_llm_head(r->svc, req_park_cb, r, &body, &err);
	if (st == AW_LLM_ANSWER || st == AW_LLM_STREAM)
		said(r);
	switch (st) {
	case AW_LLM_WAIT: return;
	case AW_LLM_ANSWER: {
		reply_text(r, 200, "application/json", body);
		free(body);
		return;
	}
	case AW_LLM_STREAM: reply_call_stream(r, read_call); return;
	case AW_LLM_FAILED: reply_problem(r, err.err, &err); return;
	}
}

static void done(aw_req *r)
{
	aw_llm_release(r->svc);
	r->svc = NULL;
}

/* The call of a /v1/messages or /v1/responses request (another API than
 * chat completions) and its stream's translation. */
enum { API_MESSAGES, API_RESPONSES };
typedef struct {
	int api;
	aw_llm_call *c;
	aw_sse sse;
	aw_msgs_stream ms;
	aw_resp_stream rs;
	aw_buf out; /* translated events not yet read */
	size_t off;
	int eof;
} msgs;

static int on_chunk(void *ud, const char *d, size_t n)
{
	msgs *m = ud;
	aw_err e = m->api == API_MESSAGES ? aw_llm_chunk_to_anthropic(d, n, &m->ms, &m->out)
					  : aw_llm_chunk_to_responses(d, n, &m->rs, &m->out);
	return e ? -1 : 0;
}

/* The call's chunk stream, read and handed out as the Messages API's events;
 * parks (returns 0) only when the call has nothing to read. */
static ssize_t read_msgs(void *cls, char *buf, size_t max, void (*park)(void *), void *pud)
{
	msgs *m = cls;
	char tmp[16384];
	for (;;) {
		if (m->off < m->out.len) {
			size_t n = m->out.len - m->off < max ? m->out.len - m->off : max;
			memcpy(buf, m->out.p + m->off, n);
			m->off += n;
			return (ssize_t)n;
		}
		aw_buf_truncate(&m->out, 0);
		m->off = 0;
		if (m->eof)
			return -1;
		ssize_t n = aw_llm_read(m->c, tmp, sizeof tmp, park, pud);
		if (n == 0)
			return 0;
		aw_error err = {0};
		if (n < 0 || aw_sse_feed(&m->sse, tmp, (size_t)n, on_chunk, m, &err))
			m->eof = 1;
	}
}

static void msgs_answer(aw_req *r)
{
	msgs *m = r->svc;
	char *body = NULL;
	aw_error err = {0};
	aw_llm_state st = aw_llm_head(m->c, req_park_cb, r, &body, &err);
	if (st == AW_LLM_ANSWER || st == AW_LLM_STREAM) {
		char route[80], model[160];
		aw_llm_call_said(m->c, route, sizeof route, model, sizeof model);
		if (route[0])
			req_header(r, "x-awooop-route", route);
		if (model[0])
			req_header(r, "x-awooop-upstream-model", model);
	}
	switch (st) {
	case AW_LLM_WAIT: return;
	case AW_LLM_ANSWER: {
		json_t *c = json_loads(body, 0, NULL), *msg = NULL;
		free(body);
		aw_err e = !c			    ? aw_fail(&err, AW_E_NOMEM, "out of memory")
			   : m->api == API_MESSAGES ? aw_llm_chat_to_message(c, &msg, &err)
						    : aw_llm_chat_to_response(c, &msg, &err);
		json_decref(c);
		if (e)
			reply_problem(r, e, &err);
		else
			http_reply_json(r, 200, msg);
		return;
	}
	case AW_LLM_STREAM: reply_call_stream(r, read_msgs); return;
	case AW_LLM_FAILED: reply_problem(r, err.err, &err); return;
	}
}

static void msgs_free(msgs *m)
{
	aw_sse_free(&m->sse);
	aw_msgs_stream_free(&m->ms);
	aw_resp_stream_free(&m->rs);
	aw_buf_free(&m->out);
	free(m);
}

static void msgs_done(aw_req *r)
{
	msgs *m = r->svc;
	aw_llm_release(m->c);
	msgs_free(m);
	r->svc = NULL;
}

/* Starts the call of a chat completion request req (the client's, or a
 * Messages API request decoded); *c on success, else the refusal replied. */
static aw_llm_call *start_or_reply(aw_req *r, json_t **reqp, int embeddings, const char *api,
				   aw_err e, aw_error *err)
{
	json_t *req = *reqp;
	const char *run = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Awooop-Run-Id");
	const char *step = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Awooop-Step");
	if (!e && run && !aw_uuid_valid(run))
		e = aw_fail(err, AW_E_REQ_ID, "X-Awooop-Run-Id must be a run id (UUID)");
	char *end = NULL;
	long stepno = step ? strtol(step, &end, 10) : 0;
	if (!e && step && (!*step || *end || stepno < 0 || stepno > 100000))
		e = aw_fail(err, AW_E_REQ_HEADER, "X-Awooop-Step must be a step number");
	aw_llm_meta meta = {
		.run_id = run,
		.step_no = (int)stepno,
		.task = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Awooop-Task"),
		.embeddings = embeddings,
		.api = api,
		.key = &r->key, /* a virtual key's limits bind every door */
		.req_handed = 1};
	aw_llm_call *c = NULL;
	if (!e) {
		req_extend(r, r->opts->llm_timeout_s > 0 ? r->opts->llm_timeout_s : 600);
		e = aw_llm_start(r->opts->llm, &r->ctx, req, &meta, req_wake_cb, r, &c, err);
		*reqp = NULL; /* the call's now: parsed here, handed over, not copied */
	}
	if (e)
		reply_problem(r, e, err);
	return e ? NULL : c;
}

/* 1 when r may call this process's gateway (a worker key, a JSON body, a
 * gateway running here); else answered. */
static int gateway_or_reply(aw_req *r)
{
	if (scope_or_reply(r) || json_body_or_reply(r))
		return 0;
	if (!r->opts->llm) {
		aw_error err = {0};
		aw_fail(&err, AW_E_LLM_UNAVAILABLE, "this process runs no LLM gateway");
		reply_problem(r, err.err, &err);
		return 0;
	}
	return 1;
}

/* POST /v1/messages and POST /v1/responses: decoded, called, answered in
 * the API's own format. */
static void other_api(aw_req *r, int api)
{
	if (!gateway_or_reply(r))
		return;
	aw_error err = {0};
	json_t *in = NULL, *req = NULL;
	aw_err e = aw_json_parse_object(r->body, r->body_len, &in, &err);
	if (!e)
		e = api == API_MESSAGES ? aw_llm_messages_to_chat(in, &req, &err)
					: aw_llm_responses_to_chat(in, &req, &err);
	json_decref(in);
	msgs *m = e ? NULL : aw_calloc(1, sizeof *m);
	if (!e && !m)
		e = aw_fail(&err, AW_E_NOMEM, "out of memory");
	if (m) {
		m->api = api;
		aw_sse_init(&m->sse, 4u << 20);
		aw_msgs_stream_init(&m->ms, json_string_value(json_object_get(req, "model")));
		aw_resp_stream_init(&m->rs, json_string_value(json_object_get(req, "model")));
		m->out = (aw_buf)AW_BUF_INIT(16u << 20);
	}
	aw_llm_call *c =
		start_or_reply(r, &req, 0, api == API_MESSAGES ? "messages" : "responses", e, &err);
	json_decref(req);
	if (!c) {
		if (m)
			msgs_free(m);
		return;
	}
	m->c = c;
	req_bind_call(r, m, msgs_done, msgs_answer); /* a parked call keeps no body memory */
}

/* POST /v1/chat/completions (embeddings 0) and POST /v1/embeddings. */
static void openai_call(aw_req *r, int embeddings)
{
	if (!gateway_or_reply(r))
		return;
	aw_error err = {0};
	json_t *req = NULL;
	aw_err e = aw_json_parse_object(r->body, r->body_len, &req, &err);
	aw_llm_call *c = start_or_reply(r, &req, embeddings, NULL, e, &err);
	json_decref(req);
	if (c)
		req_bind_call(r, c, done, answer); /* a parked call keeps no body memory */
}

void h_llm_chat(aw_req *r)
{
	openai_call(r, 0);
}

void h_llm_messages(aw_req *r)
{
	other_api(r, API_MESSAGES);
}

void h_llm_responses(aw_req *r)
{
	other_api(r, API_RESPONSES);
}

void h_llm_embeddings(aw_req *r)
{
	openai_call(r, 1);
}

void h_llm_models(aw_req *r)
{
	if (scope_or_reply(r))
		return;
	aw_error err = {0};
	json_t *out = NULL;
	aw_err e = r->opts->llm ? aw_llm_models(r->opts->llm, &r->ctx, &out, &err)
				: aw_fail(&err, AW_E_LLM_UNAVAILABLE,
					  "this process runs no LLM gateway");
	if (e)
		reply_problem(r, e, &err);
	else
		http_reply_json(r, 200, out);
}
