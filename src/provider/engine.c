/*
 * engine.c - the gateway's one I/O thread: a libcurl multi handle driving
 * every upstream transfer (one try's request and bytes: transfer.c), the
 * failover walk over a call's targets, what an answer means (accounted,
 * checked against a schema and retried, passed on), the circuit breakers,
 * the first-byte and idle timeouts, and kills.
 *
 * A call arrives in the inbox (llm_submit) and is tried target by target.
 * A target is skipped while its upstream's breaker is open; an emergency
 * target only with a unit of the daily cap. Connect errors, 5xx, 429 and a
 * first byte that does not come in time move to the next target. Once a
 * byte went to the client the call cannot move: a broken stream ends with an
 * error event. Everything here runs on the engine thread, so upstreams,
 * breakers and transfers need no locks; the client side is reached through
 * the call's mutex (llm_emit, llm_finish).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/clock.h"
#include "awooop/json.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/redact.h"
#include "awooop/str.h"
#include "awooop/egress.h"
#include "provider_internal.h"

upstream *llm_upstream_new(const char *name, int api, const char *url, const char *key_ref,
			   const char *project)
{
	upstream *u = aw_calloc(1, sizeof *u);
	if (!u)
		return NULL;
	atomic_init(&u->refs, 1);
	/* whole or no upstream: a cut URL reaches another address, a cut
	 * secret reference names another secret (the contracts' schemas bound
	 * them; this is the last line) */
	int cut = AW_STR_COPY(u->name, name) < 0 || AW_STR_COPY(u->project, project) < 0 ||
		  AW_STR_COPY(u->url, url) < 0 || AW_STR_COPY(u->key_ref, key_ref) < 0;
	int n = project ? snprintf(u->label, sizeof u->label, "%s/%s", project, name)
			: (AW_STR_COPY(u->label, name) < 0 ? -1 : 0);
	if (cut || n < 0 || (size_t)n >= sizeof u->label) {
		aw_log(AW_LOG_ERROR, NULL,
		       "llm upstream refused: a name, URL or key reference too long", "upstream",
		       u->name[0] ? u->name : "-", NULL);
		free(u);
		return NULL;
	}
	u->api = api;
	size_t len = strlen(u->url);
	while (len && u->url[len - 1] == '/')
		u->url[--len] = '\0';
	u->share = curl_share_init();
	if (!u->share) {
		free(u);
		return NULL;
	}
	curl_share_setopt(u->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
	curl_share_setopt(u->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	aw_metrics_llm_breaker(u->label, BREAKER_CLOSED);
	return u;
}

void llm_upstream_put(upstream *u)
{
	if (!u || atomic_fetch_sub(&u->refs, 1) != 1)
		return;
	curl_share_cleanup(u->share);
	json_decref(u->models);
	free(u->def);
	free(u);
}

/* ------------------------------------------------------------- breaker */

static int breaker_allows(upstream *u, int64_t now)
{
	if (u->state == BREAKER_CLOSED)
		return 1;
	if (u->state == BREAKER_OPEN && now >= u->open_until_ns) {
		u->state = BREAKER_HALF_OPEN;
		u->probing = 0;
		aw_metrics_llm_breaker(u->label, u->state);
	}
	if (u->state == BREAKER_HALF_OPEN && !u->probing) {
		u->probing = 1; /* one probe at a time */
		return 1;
	}
	return 0;
}

static void breaker_result(aw_llm *g, upstream *u, int ok)
{
	int was = u->state;
	if (ok) {
		u->fails = 0;
		u->state = BREAKER_CLOSED;
	} else if (u->state == BREAKER_HALF_OPEN || ++u->fails >= g->o.breaker_failures) {
		u->state = BREAKER_OPEN;
		u->open_until_ns = aw_clock_mono_ns() + (int64_t)g->o.breaker_cooldown_ms * 1000000;
	}
	u->probing = 0;
	if (was != u->state) {
		aw_metrics_llm_breaker(u->label, u->state);
		aw_log(AW_LOG_WARN, NULL, "llm upstream breaker", "upstream", u->label, "state",
		       u->state == BREAKER_OPEN ? "open" : "closed", NULL);
	}
}

/* A timeout the tenant chose ended a try: nothing is counted against the
 * upstream, and a half-open probe it held is given back. */
static void own_timeout(upstream *u)
{
	u->probing = 0;
}

/* Adds what the current attempt used to the call's spend: the upstream's
 * usage, or (a stream without it, or a transfer this side ended: the client
 * went away, no first byte in time) the prompt's bound and one token per
 * content event streamed; its cost at the attempt's model's price. An
 * attempt the upstream refused (an HTTP error) costs nothing. */
static void account(aw_llm_call *c, int streamed)
{
	long long in, out;
	AW_COPY_ARRAY(c->model_charged, c->t[c->ti].model);
	if (c->st.usage_seen)
		in = c->st.tokens_in, out = c->st.tokens_out;
	else if (streamed) { /* counted by its events: the role and finish events
				carry no token, so no more than the output reserved */
		long long room = c->hold.reserved.tokens - c->hold.prompt;
		in = c->hold.prompt, out = c->chunks, c->spent_counted = 1;
		if (c->hold.active && room >= 0 && out > room)
			out = room;
	} else {
		c->spent_unknown = 1;
		return;
	}
	c->spent.tokens += in + out;
	/* Anthropic's prompt cache: a write costs 1.25 x the input price, a
	 * read 0.1 x (both counted in tokens_in) */
	const aw_budget_price *p = &c->t[c->ti].price;
	long long cw = c->st.usage_seen ? c->st.cache_write : 0;
	long long cr = c->st.usage_seen ? c->st.cache_read : 0;
	if (cw < 0 || cr < 0 || cw + cr > in)
		cw = cr = 0;
	c->spent.cost += aw_budget_cost(p, in - cw - cr, out);
	if (cw || cr) {
		aw_budget_price w = {.in = p->in * 1.25}, r = {.in = p->in * 0.1};
		c->spent.cost += aw_budget_cost(&w, cw, 0) + aw_budget_cost(&r, cr, 0);
	}
}

static void note(aw_llm_call *c, const char *why)
{
	if (c->notes.len)
		aw_buf_adds(&c->notes, "; ");
	aw_buf_addf(&c->notes, "%s (%s): %s", c->t[c->ti].u->name, c->t[c->ti].model, why);
}

/* Starts the current target or the next one that may be tried; finishes the
 * call when none is left. */
static void advance(aw_llm *g, aw_llm_call *c)
{
	int capped = 0;
	for (; c->ti < c->nt; c->ti++) {
		target *t = &c->t[c->ti];
		if (!breaker_allows(t->u, aw_clock_mono_ns())) {
			note(c, "circuit open");
			c->failovers++;
			continue;
		}
		if (t->u->max_conc && t->u->inflight >= t->u->max_conc) {
			if (t->u->state == BREAKER_HALF_OPEN)
				t->u->probing = 0;
			note(c, "at its max_concurrency");
			c->failovers++;
			continue;
		}
		if (t->emergency && c->own_failure) { /* spent on upstreams' failures only */
			note(c, "the emergency model is not spent on the route's own timeouts");
			continue;
		}
		if (t->emergency && !llm_cap_take(g, c->ctx.project)) {
			if (t->u->state == BREAKER_HALF_OPEN)
				t->u->probing = 0;
			note(c, "emergency daily cap reached");
			capped = 1;
			continue;
		}
		aw_error err = {0};
		if (llm_transfer_begin(g, c, &err) == AW_OK) {
			c->emergency_used = t->emergency;
			return;
		}
		llm_transfer_end(g, c);
		if (t->u->state == BREAKER_HALF_OPEN)
			t->u->probing = 0;
		if (err.err == AW_E_SECRET_UNRESOLVED || err.err == AW_E_SECRET_REF) {
			note(c, "its credential reference does not resolve");
			c->failovers++;
			continue;
		}
		if (err.err == AW_E_LLM_WIRE) { /* another wire kind may express it */
			note(c, err.msg);
			c->wire_skips++;
			continue;
		}
		llm_finish(c, AW_LLM_FAILED, "error", err.err, "%s", err.msg);
		return;
	}
	if (c->wire_skips && c->wire_skips == c->nt)
		llm_finish(c, AW_LLM_FAILED, "refused", AW_E_LLM_WIRE,
			   "no target's wire format can express the request: %s",
			   aw_buf_str(&c->notes));
	else if (capped && c->notes.len)
		llm_finish(c, AW_LLM_FAILED, "capped", AW_E_LLM_CAP,
			   "every local host failed and the emergency cloud model is at its "
			   "daily cap: %s",
			   aw_buf_str(&c->notes));
	else
		llm_finish(c, AW_LLM_FAILED, "unavailable", AW_E_LLM_UPSTREAMS,
			   "no upstream answered: %s",
			   c->notes.len ? aw_buf_str(&c->notes) : "no target");
}

static void failover(aw_llm *g, aw_llm_call *c, const char *why)
{
	note(c, why);
	llm_transfer_end(g, c);
	c->failovers++;
	aw_metrics_llm_event("failover", c->t[c->ti].u->label);
	c->ti++;
	advance(g, c);
}

/* The model's text answer checked against the request's schema. 0 = valid;
 * else err holds the problems and c->feedback what to send back. */
static int schema_check(aw_llm_call *c, const char *content, aw_buf *problems)
{
	json_error_t je;
	json_t *doc = content ? json_loads(content, JSON_DECODE_ANY, &je) : NULL;
	int bad = 0;
	if (!doc) {
		aw_buf_addf(problems, "the answer is not JSON (%s)",
			    content ? je.text : "no content");
		bad = 1;
	} else {
		aw_schema_error errs[4];
		int n = aw_schema_validate(c->schema, doc, errs, 4);
		for (int i = 0; i < n && i < 4; i++)
			aw_buf_addf(problems, "%s%s: %s", i ? "; " : "",
				    errs[i].pointer[0] ? errs[i].pointer : "/", errs[i].message);
		bad = n > 0;
	}
	json_decref(doc);
	return bad;
}

/* An embeddings answer: its usage read, passed on with the model asked. */
static void embedded(aw_llm *g, aw_llm_call *c)
{
	target *t = &c->t[c->ti];
	json_t *resp = json_loadb(c->body.p ? c->body.p : "", c->body.len, 0, NULL);
	json_t *u = json_object_get(resp, "usage");
	json_t *pt = json_object_get(u, "prompt_tokens");
	if (!json_is_array(json_object_get(resp, "data"))) {
		json_decref(resp);
		breaker_result(g, t->u, 0);
		failover(g, c, "the answer is not an embeddings list");
		return;
	}
	if (json_is_integer(pt)) {
		c->st.tokens_in = json_integer_value(pt);
		c->st.tokens_out = 0;
		c->st.usage_seen = 1;
	}
	account(c, 0);
	breaker_result(g, t->u, 1);
	AW_COPY_ARRAY(c->upstream_name, t->u->name);
	AW_COPY_ARRAY(c->model_used, t->model);
	json_object_set_new(resp, "model", json_string(c->rq.model));
	char *s = json_dumps(resp, JSON_COMPACT);
	json_decref(resp);
	llm_transfer_end(g, c);
	pthread_mutex_lock(&c->base.mu);
	c->answer = s;
	pthread_mutex_unlock(&c->base.mu);
	llm_finish(c, s ? AW_LLM_ANSWER : AW_LLM_FAILED, s ? "ok" : "error", s ? AW_OK : AW_E_NOMEM,
		   "%s", s ? " " : "out of memory");
}

static void answered(aw_llm *g, aw_llm_call *c)
{
	if (c->rq.embeddings) {
		embedded(g, c);
		return;
	}
	target *t = &c->t[c->ti];
	json_error_t je;
	json_t *resp = aw_json_loadb(c->body.p ? c->body.p : "", c->body.len, 0, &je);
	json_t *completion = NULL;
	aw_error err = {0};
	if (json_is_object(resp) && (t->u->api == API_OLLAMA || t->u->api == API_ANTHROPIC)) {
		aw_err e = t->u->api == API_OLLAMA
				   ? aw_llm_from_ollama(resp, &c->st, &completion, &err)
				   : aw_llm_from_anthropic(resp, &c->st, &completion, &err);
		json_decref(resp);
		if (e)
			completion = NULL;
	} else if (json_is_object(resp)) {
		completion = resp;
	} else {
		json_decref(resp);
	}
	const char *content = completion ? aw_llm_completion_usage(completion, &c->st) : NULL;
	if (completion)
		account(c, 0);
	if (!completion ||
	    (!content &&
	     !json_object_get(
		     json_object_get(json_array_get(json_object_get(completion, "choices"), 0),
				     "message"),
		     "tool_calls"))) {
		json_decref(completion);
		breaker_result(g, t->u, 0);
		failover(g, c, "the answer is not a chat completion");
		return;
	}
	breaker_result(g, t->u, 1);
	AW_COPY_ARRAY(c->upstream_name, t->u->name);
	AW_COPY_ARRAY(c->model_used, t->model);
	if (c->schema && content) { /* a call of tools is no answer yet: the schema
				       is the final answer's (an agent step's loop) */
		aw_buf problems = AW_BUF_INIT(SCHEMA_PROBLEMS_MAX);
		if (schema_check(c, content, &problems)) {
			if (++c->schema_fails <= c->schema_retries) {
				aw_metrics_llm_event("schema_retry", t->u->label);
				json_t *fb = json_pack(
					"[{s:s,s:s},{s:s,s:s+}]", "role", "assistant", "content",
					content ? content : "", "role", "user", "content",
					SCHEMA_FEEDBACK_PREFIX, aw_buf_str(&problems));
				if (!c->feedback)
					c->feedback = json_array();
				json_array_extend(c->feedback, fb);
				json_decref(fb);
				json_decref(completion);
				aw_buf_free(&problems);
				llm_transfer_end(g, c);
				advance(g, c); /* the same target again */
				return;
			}
			json_decref(completion);
			llm_transfer_end(g, c);
			llm_finish(c, AW_LLM_FAILED, "schema_invalid", AW_E_SCHEMA_OUTPUT,
				   "the model's answer failed the schema after %d attempts: %s",
				   c->schema_fails, aw_buf_str(&problems));
			aw_buf_free(&problems);
			return;
		}
		aw_buf_free(&problems);
	}
	/* the client sees the model name it asked for */
	json_object_set_new(completion, "model", json_string(c->rq.model));
	llm_transfer_end(g, c);
	if (c->rq.stream) {
		aw_buf sse = AW_BUF_INIT(MAX_ANSWER * 2);
		aw_llm_completion_as_sse(completion, c->rq.include_usage, &sse);
		json_decref(completion);
		if (!aw_buf_err(&sse))
			llm_emit(c, sse.p, sse.len);
		aw_buf_free(&sse);
		llm_finish(c, AW_LLM_STREAM, "ok", AW_OK, " ");
		return;
	}
	char *s = aw_json_dumps(completion, JSON_COMPACT);
	json_decref(completion);
	pthread_mutex_lock(&c->base.mu);
	c->answer = s;
	pthread_mutex_unlock(&c->base.mu);
	llm_finish(c, s ? AW_LLM_ANSWER : AW_LLM_FAILED, s ? "ok" : "error", s ? AW_OK : AW_E_NOMEM,
		   "%s", s ? " " : "out of memory");
}

/* The upstream's own message, redacted, for a 4xx it answered. */
static void refused(aw_llm *g, aw_llm_call *c)
{
	json_t *j = json_loadb(c->body.p ? c->body.p : "", c->body.len, 0, NULL);
	json_t *m = json_object_get(json_object_get(j, "error"), "message");
	if (!m)
		m = json_object_get(j, "error");
	/* a credential refusal may quote the credential: never passed on */
	int cred = c->status == 401 || c->status == 403;
	char *msg = aw_redact_str_for(c->ctx.project,
				      cred ? "the upstream refused the gateway's credential"
				      : json_is_string(m) ? json_string_value(m)
							  : "no message");
	long st = c->status;
	char name[48];
	AW_COPY_ARRAY(name, c->t[c->ti].u->name);
	json_decref(j);
	llm_transfer_end(g, c);
	llm_finish(c, AW_LLM_FAILED, "refused", AW_E_LLM_REFUSED,
		   "upstream %s answered %ld: %.300s", name, st, msg ? msg : "");
	free(msg);
}

static void broken(aw_llm *g, aw_llm_call *c, const char *why)
{
	account(c, 1);
	char ev[256];
	int n = snprintf(ev, sizeof ev,
			 "data: {\"error\":{\"message\":\"the upstream stream broke: %s\","
			 "\"type\":\"upstream_error\",\"code\":\"E-LLM-004\"}}\n\n",
			 why);
	llm_emit(c, ev, (size_t)n);
	breaker_result(g, c->t[c->ti].u, 0);
	llm_transfer_end(g, c);
	llm_finish(c, AW_LLM_STREAM, "broken", AW_E_LLM_BROKEN, "the upstream stream broke: %s",
		   why);
}

static void done(aw_llm *g, aw_llm_call *c, CURLcode res)
{
	if (!c->status)
		curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &c->status);
	target *t = &c->t[c->ti];
	if (c->bytes_out) { /* bytes reached the client: no failover */
		if (res != CURLE_OK)
			broken(g, c, curl_easy_strerror(res));
		else if (!c->saw_end)
			broken(g, c, "it ended before its last chunk");
		else {
			account(c, 1);
			breaker_result(g, t->u, 1);
			AW_COPY_ARRAY(c->upstream_name, t->u->name);
			AW_COPY_ARRAY(c->model_used, t->model);
			llm_transfer_end(g, c);
			llm_finish(c, AW_LLM_STREAM, "ok", AW_OK, " ");
		}
		return;
	}
	char why[160];
	if (res != CURLE_OK && c->egress_refused) { /* the tenant's address, not a failure */
		snprintf(why, sizeof why, "egress refused (%s)",
			 aw_egress_reason((aw_egress_class)c->egress_refused));
		own_timeout(t->u); /* gives a half-open probe back */
		failover(g, c, why);
	} else if (res != CURLE_OK) {
		aw_str_show(why, sizeof why, curl_easy_strerror(res));
		breaker_result(g, t->u, 0);
		failover(g, c, why);
	} else if (c->status >= 500 || c->status == 429) {
		snprintf(why, sizeof why, "HTTP %ld", c->status);
		breaker_result(g, t->u, 0);
		failover(g, c, why);
	} else if (c->status >= 400 || c->status < 200) {
		breaker_result(g, t->u, 1); /* it answered: the request is at fault */
		refused(g, c);
	} else if (c->up_stream) {
		breaker_result(g, t->u, 0);
		failover(g, c, "the stream ended before any chunk");
	} else {
		answered(g, c);
	}
}

/* Line 3: the calls of a suspended project end now; a stream gets a last
 * event with the code, the upstream connection is closed. */
static void cut_killed(aw_llm *g)
{
	unsigned gen = atomic_load(&g->kill_gen);
	if (gen == g->kill_seen)
		return;
	g->kill_seen = gen;
	for (aw_llm_call *c = g->active; c; c = c->next) {
		if (c->finished || !atomic_load(&c->base.cut))
			continue;
		if (c->bytes_out) {
			static const char ev[] =
				"data: {\"error\":{\"message\":\"the project's token budget is "
				"spent: it is suspended\",\"type\":\"budget_error\",\"code\":"
				"\"E-BUDGET-001\"}}\n\n";
			llm_emit(c, ev, sizeof ev - 1);
			account(c, 1);
		}
		llm_transfer_end(g, c);
		/* counted before the client wakes (it may read the metric next) */
		aw_metrics_budget(c->ctx.project, "cut", 0);
		llm_finish(c, AW_LLM_FAILED, "killed", AW_E_BUDGET_SUSPENDED,
			   "project %s was suspended: its calls in flight were cut",
			   c->ctx.project);
	}
}

/* Timeouts and cancelled clients, checked on every turn of the loop. */
static void sweep(aw_llm *g)
{
	int64_t now = aw_clock_mono_ns();
	cut_killed(g);
	for (aw_llm_call *c = g->active; c; c = c->next) {
		if (!c->easy || c->finished)
			continue;
		if (atomic_load(&c->base.gone)) {
			account(c, 1);
			llm_transfer_end(g, c);
			llm_finish(c, AW_LLM_FAILED, "client_gone", AW_E_LLM_BROKEN,
				   "the client went away");
		} else if (!c->t_first_ns && now - c->t_try_ns > (int64_t)c->fb_ms * 1000000) {
			char why[96];
			snprintf(why, sizeof why, "no first byte within %d ms%s", c->fb_ms,
				 c->fb_own ? " (the route's own timeout_ms)" : "");
			account(c, 1);	 /* the upstream may be at work on the prompt */
			if (c->fb_own) { /* the tenant's choice: its call fails, the
					    shared upstream is not charged */
				own_timeout(c->t[c->ti].u);
				c->own_failure = 1;
			} else {
				breaker_result(g, c->t[c->ti].u, 0);
			}
			failover(g, c, why);
		} else if (c->t_first_ns && now - c->t_last_ns > (int64_t)g->o.idle_ms * 1000000) {
			if (c->bytes_out) {
				broken(g, c, "idle timeout");
			} else {
				breaker_result(g, c->t[c->ti].u, 0);
				failover(g, c, "idle timeout");
			}
		}
	}
}

/* Drops finished calls from the active list (the engine's reference). */
static void reap(aw_llm *g)
{
	aw_llm_call **pp = &g->active;
	while (*pp) {
		aw_llm_call *c = *pp;
		if (c->finished) {
			*pp = c->next;
			llm_transfer_end(g, c);
			aw_call_put(&c->base);
		} else {
			pp = &c->next;
		}
	}
}

/* Moves the submitted calls to the front of the active list; they are the
 * calls from the list's head up to (not including) *older. */
static void take_inbox(aw_llm *g, aw_llm_call **older)
{
	pthread_mutex_lock(&g->mu);
	aw_llm_call *in = g->inbox;
	g->inbox = NULL;
	pthread_mutex_unlock(&g->mu);
	*older = g->active;
	while (in) {
		aw_llm_call *c = in;
		in = in->next;
		c->next = g->active;
		g->active = c;
		/* cut before it got here (the registry lists a call from its
		 * admission): it is not started, and this turn's sweep ends it */
		if (atomic_load(&c->base.cut))
			g->kill_seen = atomic_load(&g->kill_gen) - 1;
	}
}

static void *engine_main(void *arg)
{
	aw_llm *g = arg;
	pthread_setname_np(pthread_self(), "aw-llm-engine");
	while (!atomic_load(&g->stopping)) {
		aw_llm_call *older;
		take_inbox(g, &older);
		for (aw_llm_call *c = g->active; c != older; c = c->next)
			if (!atomic_load(&c->base.cut)) /* cut: no request goes out */
				advance(g, c);
		int running = 0;
		curl_multi_perform(g->multi, &running);
		CURLMsg *m;
		int left;
		while ((m = curl_multi_info_read(g->multi, &left))) {
			if (m->msg != CURLMSG_DONE)
				continue;
			aw_llm_call *c = NULL;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&c);
			if (c && c->easy == m->easy_handle)
				done(g, c, m->data.result);
		}
		sweep(g);
		reap(g);
		curl_multi_poll(g->multi, NULL, 0, 50, NULL);
		aw_metrics_loop_tick("llm_engine");
	}
	/* stopping: every call still here ends now */
	aw_llm_call *older;
	take_inbox(g, &older);
	for (aw_llm_call *c = g->active; c; c = c->next) {
		llm_transfer_end(g, c);
		if (!c->finished)
			llm_finish(c, AW_LLM_FAILED, "stopped", AW_E_LLM_UNAVAILABLE,
				   "the gateway is shutting down");
	}
	reap(g);
	return NULL;
}

void llm_submit(aw_llm *g, aw_llm_call *c)
{
	aw_call_hold(&c->base); /* the engine's */
	pthread_mutex_lock(&g->mu);
	c->next = g->inbox;
	g->inbox = c;
	pthread_mutex_unlock(&g->mu);
	curl_multi_wakeup(g->multi);
}

aw_err llm_engine_start(aw_llm *g, aw_error *err)
{
	g->multi = curl_multi_init();
	if (!g->multi)
		return aw_fail(err, AW_E_NOMEM, "cannot start the LLM engine");
	curl_multi_setopt(g->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 256L);
	if (pthread_create(&g->engine, NULL, engine_main, g) != 0)
		return aw_fail(err, AW_E_INTERNAL, "cannot start the LLM engine thread");
	g->engine_started = 1;
	return AW_OK;
}

void llm_engine_stop(aw_llm *g)
{
	if (g->engine_started) {
		atomic_store(&g->stopping, 1);
		curl_multi_wakeup(g->multi);
		pthread_join(g->engine, NULL);
		g->engine_started = 0;
	}
	if (g->multi)
		curl_multi_cleanup(g->multi);
	g->multi = NULL;
}
