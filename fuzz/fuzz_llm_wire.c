/*
 * fuzz_llm_wire.c - the gateway's other wire kinds, fed what a client or an
 * upstream could send. The first byte picks what the rest is:
 *   0: an Anthropic Messages stream (SSE bytes, split at every step-th
 *      byte) translated event by event to OpenAI chunks;
 *   1: an Anthropic Messages answer (JSON) translated to a chat.completion;
 *   2: a chat completion request checked, then translated to the Messages
 *      API (the body the gateway would send an Anthropic upstream);
 *   3: a client's /v1/messages request decoded into a chat completion
 *      request, then checked as the gateway checks every call;
 *   4: the gateway's own chunk stream (SSE bytes) re-written as the Messages
 *      API's named events, and a completion as a message;
 *   5: a client's /v1/embeddings request checked, and its input's bound;
 *   6: a client's /v1/responses request decoded and checked;
 *   7: the gateway's chunk stream re-written as the Responses API's events
 *      (each "event: ...\ndata: ...\n\n"), and a completion as a response.
 * Checks: no crash; every translated event is framed "data: ...\n\n"
 * (Anthropic's: "event: ...\ndata: ...\n\n"); a translated answer has one
 * choice; a translated request has max_tokens and only user and assistant
 * turns, alternating; a decoded /v1/messages request keeps its model; an
 * accepted embeddings request has a model and a bound of at least 0.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/llm.h"
#include "awooop/llm_wire.h"

typedef struct {
	aw_llm_stream_state st;
	aw_buf out;
	int done;
} anth;

static int on_event(void *ud, const char *d, size_t n)
{
	anth *a = ud;
	size_t before = a->out.len;
	int content = 0, done = 0;
	aw_error err = {0};
	if (aw_llm_event_from_anthropic(d, n, &a->st, 1, &a->out, &content, &done, &err) == AW_OK &&
	    a->out.len > before &&
	    (memcmp(a->out.p + before, "data: ", 6) ||
	     memcmp(a->out.p + a->out.len - 2, "\n\n", 2)))
		abort();
	a->done |= done;
	return 0;
}

static void stream(const uint8_t *data, size_t size, size_t step)
{
	anth a = {.st = {.created = 1, .model = "m"}, .out = AW_BUF_INIT(1 << 24)};
	snprintf(a.st.id, sizeof a.st.id, "chatcmpl-f");
	aw_sse p;
	aw_sse_init(&p, 4096);
	aw_error err = {0};
	aw_err e = AW_OK;
	for (size_t i = 0; i < size && !e; i += step) {
		size_t n = size - i < step ? size - i : step;
		e = aw_sse_feed(&p, (const char *)data + i, n, on_event, &a, &err);
	}
	aw_sse_free(&p);
	aw_buf_free(&a.out);
}

static void request(const json_t *req)
{
	aw_llm_req rq;
	aw_error err = {0};
	if (aw_llm_req_check(req, &rq, &err) != AW_OK)
		return;
	json_t *o = NULL;
	if (aw_llm_to_anthropic(req, rq.model, rq.stream, &o, &err) == AW_OK) {
		if (!json_is_integer(json_object_get(o, "max_tokens")))
			abort();
		const char *prev = "";
		size_t i;
		json_t *m;
		json_array_foreach (json_object_get(o, "messages"), i, m) {
			const char *r = json_string_value(json_object_get(m, "role"));
			if (!r || (strcmp(r, "user") && strcmp(r, "assistant")) || !strcmp(r, prev))
				abort();
			prev = r;
		}
	}
	json_decref(o);
}

typedef struct {
	aw_msgs_stream ms;
	aw_resp_stream rs;
	int responses;
	aw_buf out;
} msgs;

static int on_chunk(void *ud, const char *d, size_t n)
{
	msgs *m = ud;
	size_t before = m->out.len;
	aw_err e = m->responses ? aw_llm_chunk_to_responses(d, n, &m->rs, &m->out)
				: aw_llm_chunk_to_anthropic(d, n, &m->ms, &m->out);
	if (e == AW_OK && m->out.len > before &&
	    (memcmp(m->out.p + before, "event: ", 7) ||
	     memcmp(m->out.p + m->out.len - 2, "\n\n", 2)))
		abort();
	return 0;
}

static void chunks(const uint8_t *data, size_t size, size_t step, int responses)
{
	msgs m = {.out = AW_BUF_INIT(1 << 24)};
	aw_msgs_stream_init(&m.ms, "m");
	aw_resp_stream_init(&m.rs, "m");
	m.responses = responses;
	aw_sse p;
	aw_sse_init(&p, 4096);
	aw_error err = {0};
	aw_err e = AW_OK;
	for (size_t i = 0; i < size && !e; i += step) {
		size_t n = size - i < step ? size - i : step;
		e = aw_sse_feed(&p, (const char *)data + i, n, on_chunk, &m, &err);
	}
	aw_sse_free(&p);
	aw_msgs_stream_free(&m.ms);
	aw_resp_stream_free(&m.rs);
	aw_buf_free(&m.out);
	json_error_t je;
	json_t *j = json_loadb((const char *)data, size, 0, &je);
	json_t *msg = NULL;
	if (j && !responses && aw_llm_chat_to_message(j, &msg, &err) == AW_OK &&
	    !json_is_array(json_object_get(msg, "content")))
		abort();
	if (j && responses && aw_llm_chat_to_response(j, &msg, &err) == AW_OK &&
	    !json_is_array(json_object_get(msg, "output")))
		abort();
	json_decref(msg);
	json_decref(j);
}

static void messages(const json_t *in)
{
	json_t *req = NULL;
	aw_error err = {0};
	if (aw_llm_messages_to_chat(in, &req, &err) != AW_OK)
		return;
	if (!json_equal(json_object_get(req, "model"), json_object_get(in, "model")))
		abort();
	aw_llm_req rq;
	aw_llm_req_check(req, &rq, &err);
	json_decref(req);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int mode = data[0] % 8;
	size_t step = (size_t)(data[0] >> 2) % 7 + 1;
	data++, size--;
	if (mode == 0 || mode == 4 || mode == 7) {
		if (mode == 0)
			stream(data, size, step);
		else
			chunks(data, size, step, mode == 7);
		return 0;
	}
	json_error_t je;
	json_t *j = json_loadb((const char *)data, size, 0, &je);
	if (!j)
		return 0;
	if (mode == 1) {
		aw_llm_stream_state st = {.created = 1, .model = "m"};
		snprintf(st.id, sizeof st.id, "chatcmpl-x");
		json_t *c = NULL;
		aw_error err = {0};
		if (aw_llm_from_anthropic(j, &st, &c, &err) == AW_OK &&
		    json_array_size(json_object_get(c, "choices")) != 1)
			abort();
		json_decref(c);
	} else if (mode == 2) {
		request(j);
	} else if (mode == 3) {
		messages(j);
	} else if (mode == 6) {
		json_t *req = NULL;
		aw_error err = {0};
		aw_llm_req rq;
		if (aw_llm_responses_to_chat(j, &req, &err) == AW_OK)
			aw_llm_req_check(req, &rq, &err);
		json_decref(req);
	} else {
		aw_llm_req rq;
		aw_error err = {0};
		if (aw_llm_embed_check(j, &rq, &err) == AW_OK &&
		    (!rq.model || aw_llm_embed_bound(j) < 0))
			abort();
	}
	json_decref(j);
	return 0;
}
