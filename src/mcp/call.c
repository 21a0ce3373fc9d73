/*
 * call.c - one request's way back to its client: the answer on its own or as
 * the last event of a stream, the events before it (SSE, bounded: a client
 * that does not read loses what does not fit) on the call object (call.h)
 * that parks and wakes the HTTP thread serving it, and the peer through
 * which an upstream asks or tells the call's client something while the
 * call runs (sampling, elicitation, roots; progress, log messages).
 */
#include "mcp_gateway.h"

#include <stdlib.h>
#include <string.h>

#include "awooop/clock.h"
#include "awooop/json.h"
#include "awooop/redact.h"

void mcp_decorate(json_t *result, const aw_mcp_meta *m, int cacheable)
{
	if (!m->stateless || !result)
		return;
	json_object_set_new(result, "resultType", json_string("complete"));
	if (cacheable) {
		json_object_set_new(result, "ttlMs", json_integer(5000));
		json_object_set_new(result, "cacheScope", json_string("private"));
	}
}

/* One message as an SSE event on the client's stream, whole or not at all
 * (aw_call_add; holds c->base.mu). */
static void sse_add(aw_mcp_call *c, const json_t *msg)
{
	char *d = aw_json_dumps(msg, JSON_COMPACT);
	if (d)
		aw_call_add(&c->base, "event: message\ndata: ", d, strlen(d), "\n\n");
	free(d);
}

/* 1 when the call's client can be sent messages before its answer: a
 * legacy session's POST that accepts an event stream. */
static int can_stream(const aw_mcp_call *c)
{
	return c->meta.accept_sse && c->req_session[0] && !c->meta.stateless;
}

/* A message to the client before the answer: the answer becomes a stream. */
void mcp_emit(aw_mcp_call *c, const json_t *msg)
{
	pthread_mutex_lock(&c->base.mu);
	if (!c->base.eof) {
		c->streaming = 1;
		sse_add(c, msg);
	}
	pthread_mutex_unlock(&c->base.mu);
}

/* The answer: the last event of a stream, or on its own - as a stream of one
 * event when the client lists text/event-stream before application/json. */
void mcp_finish(aw_mcp_call *c, json_t *response, int status)
{
	pthread_mutex_lock(&c->base.mu);
	if (!c->streaming && response && status == 200 && c->meta.accept_sse == 2)
		c->streaming = 1;
	if (c->streaming) {
		if (response)
			sse_add(c, response);
		json_decref(response);
		c->base.eof = 1;
	} else {
		c->response = response;
		c->status = status;
	}
	c->done = 1;
	aw_call_wake(&c->base);
	pthread_mutex_unlock(&c->base.mu);
}

/* mcp_peer.request: an upstream's request during a call, asked of the
 * call's client on its stream under an id of the gateway's; the client's
 * answer (a POST in the same session) goes back to the upstream. Refused
 * (NULL) when the client cannot be asked: no stream, or it did not declare
 * the capability at initialize. ping is answered here. */
static json_t *peer_request(void *ud, const json_t *req)
{
	aw_mcp_call *c = ud;
	aw_mcp *g = c->g;
	const json_t *uid = json_object_get(req, "id");
	const char *m = json_string_value(json_object_get(req, "method"));
	if (!strcmp(m, "ping"))
		return aw_rpc_result_json(uid, json_object());
	int need = !strcmp(m, "sampling/createMessage") ? CAP_SAMPLING
		   : !strcmp(m, "elicitation/create")	? CAP_ELICITATION
		   : !strcmp(m, "roots/list")		? CAP_ROOTS
							: 0;
	if (!need || !can_stream(c) || !(mcp_session_caps(g, c) & need))
		return NULL;
	ask a = {.call = c};
	snprintf(a.id, sizeof a.id, "awooop-%lld", (long long)atomic_fetch_add(&g->serial, 1));
	json_t *params = json_deep_copy(json_object_get(req, "params"));
	if (params)
		aw_redact_json(params, NULL);
	json_t *out = json_pack("{s:s,s:s,s:s,s:o*}", "jsonrpc", "2.0", "id", a.id, "method", m,
				"params", params);
	pthread_mutex_lock(&g->mu);
	a.next = g->asks;
	g->asks = &a;
	pthread_mutex_unlock(&g->mu);
	mcp_emit(c, out);
	json_decref(out);
	int64_t until = aw_clock_mono_ns() + (int64_t)c->ask_timeout_ms * 1000000LL;
	pthread_mutex_lock(&c->base.mu);
	while (!a.answer && !atomic_load(&c->base.gone) && !atomic_load(&c->cancel) &&
	       aw_clock_mono_ns() < until) {
		struct timespec ts = aw_clock_after(CLOCK_MONOTONIC, 50);
		pthread_cond_timedwait(&c->cv, &c->base.mu, &ts);
	}
	pthread_mutex_unlock(&c->base.mu);
	pthread_mutex_lock(&g->mu);
	for (ask **pp = &g->asks; *pp; pp = &(*pp)->next)
		if (*pp == &a) {
			*pp = a.next;
			break;
		}
	pthread_mutex_unlock(&g->mu);
	json_t *res = json_object_get(a.answer, "result"), *er = json_object_get(a.answer, "error");
	json_t *back =
		json_is_object(res) ? aw_rpc_result_json(uid, json_incref(res))
		: json_is_object(er)
			? json_pack("{s:s,s:O,s:O}", "jsonrpc", "2.0", "id", uid, "error", er)
			: aw_rpc_error_json(uid, AW_RPC_INTERNAL,
					    a.answer ? "the client's answer holds no result"
						     : "the client did not answer",
					    NULL);
	json_decref(a.answer);
	return back;
}

/* mcp_peer.notify: progress (under the client's own token) and log
 * messages, redacted, on the call's stream; others dropped. */
static void peer_notify(void *ud, const json_t *note)
{
	aw_mcp_call *c = ud;
	const char *m = json_string_value(json_object_get(note, "method"));
	json_t *params = json_object_get(note, "params");
	int progress = !strcmp(m, "notifications/progress");
	if (!can_stream(c) || !(progress || !strcmp(m, "notifications/message")))
		return;
	if (progress && (!c->progress ||
			 strcmp(json_string_value(json_object_get(params, "progressToken")) ?: "",
				c->up_token)))
		return;
	json_t *p = json_deep_copy(params);
	if (!p)
		return;
	if (progress)
		json_object_del(p, "progressToken");
	aw_redact_json(p, NULL);
	if (progress)
		json_object_set(p, "progressToken", c->progress);
	json_t *out = json_pack("{s:s,s:s,s:o}", "jsonrpc", "2.0", "method", m, "params", p);
	mcp_emit(c, out);
	json_decref(out);
}

/* The peer of a call's upstream requests; up_params' _meta.progressToken
 * (when the client sent one) replaced by one of the gateway's. */
mcp_peer mcp_call_peer(aw_mcp_call *c, json_t *up_params, int timeout_ms)
{
	json_t *pt = json_object_get(json_object_get(c->msg.params, "_meta"), "progressToken");
	c->ask_timeout_ms = timeout_ms;
	if (up_params && (json_is_string(pt) || json_is_integer(pt)) && can_stream(c)) {
		c->progress = json_deep_copy(pt);
		snprintf(c->up_token, sizeof c->up_token, "awooop-p%lld",
			 (long long)atomic_fetch_add(&c->g->serial, 1));
		json_t *um = json_object_get(up_params, "_meta");
		if (json_is_object(um))
			json_object_set_new(um, "progressToken", json_string(c->up_token));
		else
			json_object_set_new(up_params, "_meta",
					    json_pack("{s:s}", "progressToken", c->up_token));
	}
	return (mcp_peer){
		.cancel = &c->cancel, .request = peer_request, .notify = peer_notify, .ud = c};
}

/* A client's response to one of the gateway's asks: handed to the ask of
 * the same session, project and key; others dropped. */
void mcp_client_answer(aw_mcp *g, const aw_mcp_call *from)
{
	const char *id = json_string_value(from->msg.id);
	if (!id || !from->req_session[0])
		return;
	pthread_mutex_lock(&g->mu);
	for (ask *a = g->asks; a; a = a->next) {
		aw_mcp_call *c = a->call;
		if (strcmp(a->id, id) || strcmp(c->req_session, from->req_session) ||
		    strcmp(c->ctx.project, from->ctx.project) ||
		    strcmp(c->ctx.principal, from->ctx.principal))
			continue;
		pthread_mutex_lock(&c->base.mu);
		if (!a->answer) /* a copy: the client's message is freed by its own thread */
			a->answer = json_deep_copy(from->msg.doc);
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->base.mu);
		break;
	}
	pthread_mutex_unlock(&g->mu);
}

typedef struct {
	json_t **response;
	int *status;
	const char **sess;
} answer_to;

/* aw_call_head's decision: 2 a stream, 1 the answer (handed out), 0 none
 * yet. */
static int answer_head(aw_call *b, void *arg)
{
	aw_mcp_call *c = (aw_mcp_call *)b;
	answer_to *to = arg;
	int r = c->streaming ? 2 : c->done;
	if (r == 1) {
		*to->response = c->response;
		c->response = NULL;
		*to->status = c->status;
	}
	*to->sess = c->session;
	return r;
}

int aw_mcp_answer(aw_mcp_call *c, aw_mcp_park park, void *pud, json_t **response, int *status,
		  const char **sess)
{
	return aw_call_head(&c->base, answer_head, &(answer_to){response, status, sess}, park, pud);
}

ssize_t aw_mcp_read(aw_mcp_call *c, char *buf, size_t max, aw_mcp_park park, void *pud)
{
	return aw_call_read(&c->base, buf, max, park, pud);
}

void aw_mcp_hangup(aw_mcp_call *c)
{
	if (!c)
		return;
	aw_call_gone(&c->base);
	pthread_cond_broadcast(&c->cv); /* its asks give up (they test base.gone) */
	aw_mcp_release(c);
}

static void call_free(aw_call *b)
{
	aw_mcp_call *c = (aw_mcp_call *)b;
	aw_mcp_msg_clear(&c->msg);
	json_decref(c->response);
	json_decref(c->progress);
	pthread_cond_destroy(&c->cv);
}

void mcp_call_init(aw_mcp_call *c, size_t out_max, aw_mcp_wake wake, void *ud)
{
	aw_call_init(&c->base, out_max, wake, ud, call_free);
	aw_clock_cond_init(&c->cv);
}

void aw_mcp_release(aw_mcp_call *c)
{
	aw_call_put(c ? &c->base : NULL);
}
