/*
 * llm_call.c - a call of the LLM gateway as its client sees it: started
 * (checked, routed, counted in flight, admitted by the budget, handed to the
 * engine), read (head, read: the client parks until woken), released; ended
 * by the engine (llm_finish, llm_emit); and the waited-for form (llm_wait,
 * aw_llm_complete).
 *
 * A call is an aw_call (call.h): reference-counted - its client (until
 * aw_llm_release), the engine (until the call is finished) and the recorder
 * (until its record is written) - and read through it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/clock.h"
#include "awooop/metrics.h"
#include "awooop/wake.h"
#include "awooop/str.h"
#include "provider_internal.h"

static void call_free(aw_call *b)
{
	aw_llm_call *c = (aw_llm_call *)b;
	for (int i = 0; i < c->nt; i++)
		llm_upstream_put(c->t[i].u);
	json_decref(c->req);
	json_decref(c->feedback);
	aw_schema_free(c->schema);
	free(c->answer);
	aw_buf_free(&c->notes);
}

void llm_finish(aw_llm_call *c, aw_llm_state st, const char *outcome, aw_err e, const char *fmt,
		...)
{
	pthread_mutex_lock(&c->base.mu);
	if (c->finished) {
		pthread_mutex_unlock(&c->base.mu);
		return;
	}
	c->finished = 1;
	if (st == AW_LLM_FAILED && c->state == AW_LLM_STREAM)
		st = AW_LLM_STREAM; /* bytes went out: the stream just ends */
	c->state = st;
	c->base.eof = 1;
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		char msg[sizeof c->error.msg];
		vsnprintf(msg, sizeof msg, fmt, ap);
		va_end(ap);
		aw_fail(&c->error, e, "%s", msg);
	}
	(void)!AW_STR_COPY(c->outcome, outcome); /* the engine's own words, all shorter */
	c->code = e ? aw_err_code(e) : NULL;
	pthread_mutex_unlock(&c->base.mu);
	/* queued before the client wakes: records are in the order clients saw
	 * their calls end, and a drain (aw_llm_flush) after a call sees it */
	llm_inflight(c, -1, NULL);
	llm_record_queue(c->g, c);
	pthread_mutex_lock(&c->base.mu); /* a parked client cannot release the call */
	aw_call_wake(&c->base);
	pthread_mutex_unlock(&c->base.mu);
}

/* Appends pre + data + post for the client (one piece or none) and wakes it. */
static void emit(aw_llm_call *c, const char *pre, const char *data, size_t n, const char *post)
{
	pthread_mutex_lock(&c->base.mu);
	if (!c->bytes_out)
		c->t_client_first_ns = aw_clock_mono_ns();
	c->bytes_out = 1;
	c->state = AW_LLM_STREAM;
	aw_call_add(&c->base, pre, data, n, post);
	pthread_mutex_unlock(&c->base.mu);
}

void llm_emit(aw_llm_call *c, const char *data, size_t n)
{
	emit(c, "", data, n, "");
}

void llm_emit_event(aw_llm_call *c, const char *data, size_t n)
{
	emit(c, "data: ", data, n, "\n\n");
}

typedef struct {
	char **body;
	aw_error *err;
} head_to;

/* aw_call_head's decision: the state, and the answer or error it hands out. */
static int head(aw_call *b, void *arg)
{
	aw_llm_call *c = (aw_llm_call *)b;
	head_to *to = arg;
	if (c->state == AW_LLM_ANSWER) {
		*to->body = c->answer;
		c->answer = NULL;
	} else if (c->state == AW_LLM_FAILED) {
		*to->err = c->error;
	}
	return c->state;
}

aw_llm_state aw_llm_head(aw_llm_call *c, aw_llm_park park, void *pud, char **body, aw_error *err)
{
	return aw_call_head(&c->base, head, &(head_to){body, err}, park, pud);
}

void aw_llm_call_said(aw_llm_call *c, char *route, size_t rcap, char *model, size_t mcap)
{
	pthread_mutex_lock(&c->base.mu);
	(void)!aw_str_copy(route, rcap, c->route); /* a header: whole or none */
	/* a stream's headers go before it ends: the target streaming now */
	const char *m = c->model_used[0] ? c->model_used : c->ti < c->nt ? c->t[c->ti].model : "";
	(void)!aw_str_copy(model, mcap, m);
	pthread_mutex_unlock(&c->base.mu);
}

ssize_t aw_llm_read(aw_llm_call *c, char *buf, size_t max, aw_llm_park park, void *pud)
{
	return aw_call_read(&c->base, buf, max, park, pud);
}

void aw_llm_release(aw_llm_call *c)
{
	if (!c)
		return;
	if (!aw_call_gone(&c->base) && c->g->multi) /* the engine cuts the transfer */
		curl_multi_wakeup(c->g->multi);
	aw_call_put(&c->base);
}

aw_err aw_llm_start(aw_llm *g, const aw_ctx *ctx, const json_t *req, const aw_llm_meta *meta,
		    aw_llm_wake wake, void *ud, aw_llm_call **out, aw_error *err)
{
	*out = NULL;
	aw_llm_call *c = atomic_load(&g->stopping) ? NULL : aw_calloc(1, sizeof *c);
	if (!c) {
		if (meta && meta->req_handed)
			json_decref((json_t *)req);
		return atomic_load(&g->stopping)
			       ? aw_fail(err, AW_E_LLM_UNAVAILABLE, "the gateway is shutting down")
			       : aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	aw_call_init(&c->base, 64u << 20, wake, ud, call_free);
	c->g = g;
	c->ctx = *ctx;
	memcpy(c->parent_span, ctx->trace.span_id, sizeof c->parent_span);
	aw_trace_child(&ctx->trace, &c->ctx.trace); /* the call's span: the upstream's parent */
	c->t0_ns = aw_clock_mono_ns();
	c->notes = (aw_buf)AW_BUF_INIT(1500);
	c->step_no = meta ? meta->step_no : 0;
	char cid[AW_UUID_STR_LEN + 1];
	aw_uuid7_str(cid); /* the call's id: a request may make several (run steps) */
	snprintf(c->st.id, sizeof c->st.id, "chatcmpl-%s", cid);
	int bad_run = AW_STR_COPY(c->run_id, meta ? meta->run_id : NULL) < 0;
	if (meta && meta->key) {
		c->key = *meta->key;
		c->keyed = 1;
	}
	(void)!AW_STR_COPY(c->api, meta && meta->api	      ? meta->api /* the doors' own names */
				   : meta && meta->embeddings ? "embeddings"
							      : "chat.completions");
	aw_err e = bad_run ? aw_fail(err, AW_E_REQ_ID, "a run id is a UUID") : AW_OK;
	/* the call's own copy: jansson's reference counts may not be shared
	 * between threads (the caller drops its reference while the engine
	 * works; TSan reports the shared count) */
	if (meta && meta->req_handed)
		c->req = (json_t *)req; /* no other reference: no thread shares it */
	else if (!(c->req = json_deep_copy(req)))
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	if (!e)
		e = meta && meta->embeddings ? aw_llm_embed_check(c->req, &c->rq, err)
					     : aw_llm_req_check(c->req, &c->rq, err);
	if (!e && c->rq.schema) {
		json_t *s = json_deep_copy(c->rq.schema);
		e = aw_schema_compile(s, &c->schema, err);
		json_decref(s);
		if (e)
			snprintf(err->where, sizeof err->where,
				 "/response_format/json_schema/schema");
	}
	if (!e)
		e = llm_route(g, c, meta ? meta->task : NULL, err);
	/* a virtual key's models: the model asked (a route's name or an
	 * upstream model) or the route that serves it */
	if (!e && c->keyed && !aw_key_allows(&c->key, c->rq.model) &&
	    !aw_key_allows(&c->key, c->route))
		e = aw_fail_at(err, AW_E_KEY_MODEL, "/model",
			       "this key may not call model %s (route %s): its models are limited",
			       c->rq.model ? c->rq.model : "", c->route);
	/* watched from before its reservation (a refusal for a spent budget
	 * keeps the project listed: a dead holder's reservations are reaped
	 * here) */
	long held = 0;
	int counted = !e && !(e = llm_inflight(c, 1, &held));
	if (e == AW_E_NOMEM)
		aw_fail(err, e, "out of memory (the projects in flight)");
	else if (e == AW_E_LLM_UNAVAILABLE)
		aw_fail(err, e, "the gateway is shutting down");
	else if (e == AW_E_LLM_BUSY)
		aw_fail(err, e,
			"this project has %ld model calls in flight, its bound here (shared "
			"upstream connections are kept for other projects): retry when one ends",
			held);
	if (!e)
		e = llm_admit(g, c, meta, err);
	if (e) { /* refused before any upstream: recorded all the same */
		if (counted)
			llm_inflight(c, -1, NULL);
		snprintf(c->outcome, sizeof c->outcome, "refused");
		c->code = aw_err_code(e);
		aw_metrics_llm_event("refused", c->code);
		llm_record_queue(g, c);
		aw_call_put(&c->base);
		return e;
	}
	c->up_stream = c->rq.stream && !c->schema;
	c->st.created = aw_clock_wall_ms() / 1000;
	c->st.model = c->rq.model;
	llm_submit(g, c);
	*out = c;
	return AW_OK;
}

static void w_park(void *ud)
{
	(void)ud; /* the caller waits below */
}

aw_err llm_wait(aw_llm *g, const aw_ctx *ctx, const json_t *req, const aw_llm_meta *meta,
		const atomic_bool *stop, int64_t deadline_ns, char **body, aw_error *err)
{
	*body = NULL;
	if (json_is_true(json_object_get(req, "stream")))
		return aw_fail_at(err, AW_E_REQ_INVALID, "/stream",
				  "a waited-for call does not stream");
	aw_wake w;
	aw_wake_init(&w);
	aw_llm_call *c = NULL;
	aw_err e = aw_llm_start(g, ctx, req, meta, aw_wake_signal, &w, &c, err);
	while (!e) {
		aw_llm_state st = aw_llm_head(c, w_park, NULL, body, err);
		if (st == AW_LLM_ANSWER)
			break;
		if (st == AW_LLM_FAILED) {
			e = err->err;
			break;
		}
		e = aw_call_await(&w, stop, deadline_ns, "model call", err);
	}
	aw_llm_release(c); /* cuts the transfer when the call was abandoned */
	aw_wake_destroy(&w);
	if (e) {
		free(*body);
		*body = NULL;
	}
	return e;
}

aw_err aw_llm_complete(aw_llm *g, const aw_ctx *ctx, const json_t *req, const aw_llm_meta *meta,
		       json_t **resp, aw_error *err)
{
	char *body = NULL;
	aw_err e = llm_wait(g, ctx, req, meta, NULL, 0, &body, err);
	*resp = e ? NULL : json_loads(body, 0, NULL);
	if (!e && !*resp)
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	free(body);
	return e;
}
