/*
 * transfer.c - one try of a model call at one target, on the engine thread
 * (engine.c walks the targets): the upstream's request in its wire format
 * (the route's limits applied, the credential resolved - a project's own
 * upstream from the project's namespace only - and the egress rules at
 * connect for a tenant's address), the libcurl easy handle in the engine's
 * multi, the answer's bytes as they come (a non-streamed answer kept whole,
 * a stream translated event by event to the client's OpenAI chunks), and
 * the try's end (the handle, the credential's copies wiped).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "awooop/alloc.h"
#include "awooop/clock.h"
#include "awooop/egress.h"
#include "awooop/json.h"
#include "awooop/secret.h"
#include "provider_internal.h"

void llm_transfer_end(aw_llm *g, aw_llm_call *c)
{
	if (c->held) { /* its place under the upstream's max_concurrency */
		c->held->inflight--;
		c->held = NULL;
	}
	if (c->easy) {
		curl_multi_remove_handle(g->multi, c->easy);
		curl_easy_cleanup(c->easy);
		c->easy = NULL;
	}
	for (struct curl_slist *h = c->hdrs; h; h = h->next) /* the credential */
		memset(h->data, 0, strlen(h->data));
	curl_slist_free_all(c->hdrs);
	c->hdrs = NULL;
	free(c->payload);
	c->payload = NULL;
	aw_buf_free(&c->body);
	aw_sse_free(&c->sse);
	aw_ndjson_free(&c->nd);
}

static int on_sse_event(void *ud, const char *data, size_t len)
{
	aw_llm_call *c = ud;
	int keep, done;
	aw_error err = {0};
	if (aw_llm_sse_event(data, len, &c->st, c->rq.include_usage, &keep, &done, &err))
		return -1;
	if (done) {
		c->saw_end = 1;
		llm_emit_event(c, "[DONE]", 6);
		return 0;
	}
	if (keep) { /* passed on as the upstream framed it, without a copy */
		c->chunks++;
		llm_emit_event(c, data, len);
	}
	return 0;
}

static int on_nd_line(void *ud, const char *line, size_t len)
{
	aw_llm_call *c = ud;
	aw_buf b = AW_BUF_INIT(MAX_EVENT * 2);
	int done = 0;
	aw_error err = {0};
	aw_err e =
		aw_llm_chunk_from_ollama(line, len, &c->st, c->rq.include_usage, &b, &done, &err);
	if (!e && b.len)
		llm_emit(c, b.p, b.len);
	aw_buf_free(&b);
	c->chunks++;
	if (done)
		c->saw_end = 1;
	return e ? -1 : 0;
}

/* An Anthropic stream's event, translated to OpenAI chunks. */
static int on_anth_event(void *ud, const char *data, size_t len)
{
	aw_llm_call *c = ud;
	aw_buf b = AW_BUF_INIT(MAX_EVENT * 2);
	int content = 0, done = 0;
	aw_error err = {0};
	aw_err e = aw_llm_event_from_anthropic(data, len, &c->st, c->rq.include_usage, &b, &content,
					       &done, &err);
	if (!e && b.len)
		llm_emit(c, b.p, b.len);
	aw_buf_free(&b);
	c->chunks += content;
	if (done)
		c->saw_end = 1;
	return e ? -1 : 0;
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	aw_llm_call *c = ud;
	size_t len = sz * n;
	int64_t now = aw_clock_mono_ns();
	if (!c->t_first_ns) {
		c->t_first_ns = now;
		curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &c->status);
	}
	c->t_last_ns = now;
	if (c->status < 200 || c->status > 299) { /* kept for the error message */
		if (c->body.len < MAX_ERROR_BODY)
			aw_buf_add(&c->body, p, len < MAX_ERROR_BODY ? len : MAX_ERROR_BODY);
		return len;
	}
	if (!c->up_stream)
		return aw_buf_add(&c->body, p, len) ? 0 : len;
	aw_error err = {0};
	int api = c->t[c->ti].u->api;
	aw_err e = api == API_OLLAMA	  ? aw_ndjson_feed(&c->nd, p, len, on_nd_line, c, &err)
		   : api == API_ANTHROPIC ? aw_sse_feed(&c->sse, p, len, on_anth_event, c, &err)
					  : aw_sse_feed(&c->sse, p, len, on_sse_event, c, &err);
	return e ? 0 : len;
}

/* The signed candidate's limits on the request (req is the call's shallow
 * copy): max_output_tokens bounds max_tokens / max_completion_tokens (set
 * when the client set none, so the upstream cannot answer longer), and the
 * candidate's temperature replaces the client's. */
static void apply_limits(json_t *req, const target *t)
{
	if (t->max_out) {
		const char *name = json_object_get(req, "max_completion_tokens")
					   ? "max_completion_tokens"
					   : "max_tokens";
		json_t *mt = json_object_get(req, name);
		if (!json_is_number(mt) || json_number_value(mt) > (double)t->max_out)
			json_object_set_new(req, name, json_integer(t->max_out));
	}
	if (t->has_temp)
		json_object_set_new(req, "temperature", json_real(t->temp));
}

/* The request body for target t. */
static char *payload_for(aw_llm_call *c, const target *t, aw_error *err)
{
	/* a shallow copy: the members not set here are shared with c->req */
	json_t *req = json_copy(c->req);
	if (!req)
		return NULL;
	if (c->rq.embeddings) { /* OpenAI's API (and Azure's) only */
		if (t->u->api != API_OPENAI && t->u->api != API_AZURE) {
			json_decref(req);
			aw_fail_at(err, AW_E_LLM_WIRE, "/input",
				   "embeddings go to OpenAI-compatible and Azure upstreams only");
			return NULL;
		}
		json_object_set_new(req, "model", json_string(t->model));
		char *s = aw_json_dumps(req, JSON_COMPACT);
		json_decref(req);
		return s;
	}
	if (json_array_size(c->feedback)) {
		json_t *msgs = json_copy(json_object_get(c->req, "messages"));
		json_array_extend(msgs, c->feedback);
		json_object_set_new(req, "messages", msgs);
	}
	apply_limits(req, t);
	json_t *body = NULL;
	if (t->u->api == API_OLLAMA || t->u->api == API_ANTHROPIC) {
		aw_err e = t->u->api == API_OLLAMA
				   ? aw_llm_to_ollama(req, t->model, c->up_stream, &body, err)
				   : aw_llm_to_anthropic(req, t->model, c->up_stream, &body, err);
		json_decref(req);
		if (e)
			return NULL;
	} else {
		body = req;
		json_object_set_new(body, "model", json_string(t->model));
		json_object_set_new(body, "stream", json_boolean(c->up_stream));
		if (c->up_stream) /* always metered, even when the client did not ask */
			json_object_set_new(body, "stream_options",
					    json_pack("{s:b}", "include_usage", 1));
		else
			json_object_del(body, "stream_options");
	}
	char *s = aw_json_dumps(body, JSON_COMPACT);
	json_decref(body);
	return s;
}

/* A project's own upstream is reached on the egress rules (egress.h): its
 * project's grant for loopback and private addresses, never link-local or
 * metadata ones; judged on the address about to be connected. */
static curl_socket_t egress_open(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	aw_llm_call *c = ud;
	(void)purpose;
	const upstream *u = c->t[c->ti].u;
	if (!aw_egress_allowed(&a->addr, aw_egress_private_granted(u->project))) {
		c->egress_refused = (int)aw_egress_classify(&a->addr);
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

aw_err llm_transfer_begin(aw_llm *g, aw_llm_call *c, aw_error *err)
{
	const target *t = &c->t[c->ti];
	upstream *u = t->u;
	if (!(c->payload = payload_for(c, t, err)))
		return err->err ? err->err : aw_fail(err, AW_E_NOMEM, "out of memory");
	char url[512];
	int n;
	if (u->api == API_AZURE) { /* the model is the deployment's name */
		if (strspn(t->model, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				     "0123456789._-") != strlen(t->model))
			return aw_fail_at(err, AW_E_LLM_WIRE, "/model",
					  "an Azure deployment name is letters, digits, '.', '_' "
					  "and '-'");
		n = snprintf(url, sizeof url, "%s/openai/deployments/%s/%s?api-version=%s", u->url,
			     t->model, c->rq.embeddings ? "embeddings" : "chat/completions",
			     u->api_version);
	} else {
		n = snprintf(url, sizeof url, "%s%s", u->url,
			     u->api == API_OLLAMA      ? "/api/chat"
			     : u->api == API_ANTHROPIC ? "/messages"
			     : c->rq.embeddings	       ? "/embeddings"
						       : "/chat/completions");
	}
	if (n < 0 || (size_t)n >= sizeof url) /* never a cut address */
		return aw_fail(err, AW_E_LLM_WIRE, "upstream %s: its request URL is over %zu bytes",
			       u->label, sizeof url - 1);
	c->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	if (u->api == API_ANTHROPIC)
		c->hdrs = curl_slist_append(c->hdrs, "anthropic-version: " AW_ANTHROPIC_VERSION);
	char tp[AW_TRACEPARENT_LEN + 16] = "traceparent: ";
	aw_trace_format(&c->ctx.trace, tp + strlen(tp));
	c->hdrs = curl_slist_append(c->hdrs, tp);
	c->hdrs = curl_slist_append(c->hdrs, "Expect:");
	if (u->key_ref[0]) {
		aw_buf secret = AW_BUF_INIT(4096);
		/* a project's own upstream: its key from its own namespace only */
		aw_err e = u->project[0] ? aw_secret_tenant_resolve(u->project, g->o.secrets_dir,
								    u->key_ref, &secret, err)
					 : aw_secret_resolve(u->key_ref, &secret, err);
		if (!e) {
			aw_buf h = AW_BUF_INIT(4200);
			aw_buf_addf(&h,
				    u->api == API_ANTHROPIC ? "x-api-key: %s"
				    : u->api == API_AZURE   ? "api-key: %s"
							    : "Authorization: Bearer %s",
				    aw_buf_str(&secret));
			if (!aw_buf_err(&h))
				c->hdrs = curl_slist_append(c->hdrs, h.p);
			aw_secret_wipe(&h);
		}
		aw_secret_wipe(&secret);
		if (e)
			return e;
	}
	c->easy = curl_easy_init();
	if (!c->easy || !c->hdrs)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	c->body = (aw_buf)AW_BUF_INIT(MAX_ANSWER);
	aw_sse_init(&c->sse, MAX_EVENT);
	aw_ndjson_init(&c->nd, MAX_EVENT);
	CURL *h = c->easy;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->payload);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(c->payload));
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(h, CURLOPT_PRIVATE, c);
	curl_easy_setopt(h, CURLOPT_SHARE, u->share);
	if (u->project[0]) { /* a tenant's address: the egress rules, at connect */
		curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, egress_open);
		curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, c);
		curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	}
	c->egress_refused = 0;
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)g->o.connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	/* the platform's first-byte timeout (the endpoint's, else the
	 * gateway's); a candidate's timeout_ms may only shorten it, and a
	 * timeout it shortened is the tenant's own (c->own_timeout) */
	int platform_fb = u->timeout_ms ? u->timeout_ms : g->o.first_byte_ms;
	c->fb_ms = t->timeout_ms && t->timeout_ms < platform_fb ? t->timeout_ms : platform_fb;
	c->fb_own = c->fb_ms < platform_fb;
	c->status = 0;
	c->t_try_ns = aw_clock_mono_ns();
	c->t_first_ns = c->t_last_ns = 0;
	c->saw_end = 0;
	c->st.tokens_in = c->st.tokens_out = 0;
	c->chunks = 0;
	c->st.usage_seen = c->st.role_sent = 0;
	c->st.cache_write = c->st.cache_read = 0;
	c->st.finish[0] = '\0';
	c->st.ntools = 0;
	c->attempts++;
	if (curl_multi_add_handle(g->multi, h) != CURLM_OK)
		return aw_fail(err, AW_E_INTERNAL, "cannot start the upstream transfer");
	c->held = u;
	u->inflight++;
	return AW_OK;
}
