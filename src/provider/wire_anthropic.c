/*
 * wire_anthropic.c - the gateway's checked OpenAI chat completion request
 * spoken to an Anthropic Messages API upstream (POST {base}/messages), and
 * its answers - whole, or as the stream's events - back as OpenAI's
 * chat.completion and chat.completion.chunk documents (see llm_wire.h).
 *
 * Request: system and developer messages become `system`; tool results
 * (role tool) become user turns of tool_result blocks; an assistant's
 * tool_calls become tool_use blocks (arguments parsed to `input`); turns of
 * one role in a row are merged (the API alternates user and assistant);
 * tools, tool_choice (auto, none, required = any, a function = tool) and
 * parallel_tool_calls (disable_parallel_tool_use) are translated;
 * max_tokens is required there, so it is always sent. A request the
 * Messages API cannot express (n > 1, legacy function messages, JSON output
 * without a schema the gateway validates) is AW_E_LLM_WIRE: the target is
 * skipped, another may take it.
 *
 * Usage: input_tokens + cache_creation_input_tokens + cache_read_input_tokens
 * is what the prompt billed (tokens_in; the cache parts are also kept apart
 * for their price); output_tokens is the answer. In a stream, message_start
 * carries the input, message_delta the cumulative output: the usage is
 * complete (usage_seen) only once a message_delta came.
 */
#include <stdio.h>
#include <string.h>

#include "awooop/llm_wire.h"
#include "awooop/str.h"

static aw_err wire(aw_error *err, const char *where, const char *msg)
{
	return aw_fail_at(err, AW_E_LLM_WIRE, where, "%s (Anthropic Messages upstream)", msg);
}

/* Text content as Anthropic blocks: a string is one text block; parts map
 * one to one (text; image_url as a base64 or url image source). */
static aw_err blocks_of(const json_t *c, json_t *blocks, const char *where, aw_error *err)
{
	if (!c || json_is_null(c))
		return AW_OK;
	if (json_is_string(c)) {
		if (json_string_length(c))
			json_array_append_new(blocks, json_pack("{s:s,s:O}", "type", "text", "text",
								(json_t *)c));
		return AW_OK;
	}
	size_t i;
	json_t *part;
	json_array_foreach (c, i, part) {
		const char *type = json_string_value(json_object_get(part, "type"));
		if (type && (!strcmp(type, "text") || !strcmp(type, "refusal"))) {
			json_t *t = json_object_get(part, type);
			if (json_string_length(t))
				json_array_append_new(
					blocks, json_pack("{s:s,s:O}", "type", "text", "text", t));
			continue;
		}
		if (!type || strcmp(type, "image_url"))
			return wire(err, where, "content parts are text or image_url");
		const char *url = json_string_value(
			json_object_get(json_object_get(part, "image_url"), "url"));
		const char *b64 = url && !strncmp(url, "data:", 5) ? strstr(url, ";base64,") : NULL;
		json_t *src;
		if (b64) {
			char mt[64];
			if (b64 - url - 5 >= (long)sizeof mt) /* never a cut media type */
				return wire(err, where,
					    "a data URL's media type is at most 63 bytes");
			snprintf(mt, sizeof mt, "%.*s", (int)(b64 - url - 5), url + 5);
			src = json_pack("{s:s,s:s,s:s}", "type", "base64", "media_type", mt, "data",
					b64 + 8);
		} else if (url && (!strncmp(url, "https://", 8) || !strncmp(url, "http://", 7))) {
			src = json_pack("{s:s,s:s}", "type", "url", "url", url);
		} else {
			return wire(err, where, "an image is a base64 data URL or an http(s) URL");
		}
		json_array_append_new(blocks,
				      json_pack("{s:s,s:o}", "type", "image", "source", src));
	}
	return AW_OK;
}

/* Appends blocks to the last message when it has role, else a new one. */
static void add_turn(json_t *msgs, const char *role, json_t *blocks)
{
	json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
	const char *lr = json_string_value(json_object_get(last, "role"));
	if (last && lr && !strcmp(lr, role))
		json_array_extend(json_object_get(last, "content"), blocks);
	else
		json_array_append_new(msgs,
				      json_pack("{s:s,s:O}", "role", role, "content", blocks));
	json_decref(blocks);
}

static aw_err tool_uses(const json_t *tcs, json_t *blocks, const char *where, aw_error *err)
{
	size_t i;
	json_t *tc;
	json_array_foreach (tcs, i, tc) {
		json_t *fn = json_object_get(tc, "function");
		const char *id = json_string_value(json_object_get(tc, "id"));
		const char *name = json_string_value(json_object_get(fn, "name"));
		const char *args = json_string_value(json_object_get(fn, "arguments"));
		if (!id || !name)
			return wire(err, where, "a tool call needs an id and a function name");
		json_t *input = args && *args ? json_loads(args, 0, NULL) : json_object();
		if (!json_is_object(input)) {
			json_decref(input);
			return wire(err, where, "a tool call's arguments must be a JSON object");
		}
		json_array_append_new(blocks, json_pack("{s:s,s:s,s:s,s:o}", "type", "tool_use",
							"id", id, "name", name, "input", input));
	}
	return AW_OK;
}

/* The text a tool result carries: its content, text parts joined. */
static json_t *result_text(const json_t *c)
{
	if (json_is_string(c))
		return json_incref((json_t *)c);
	aw_buf b = AW_BUF_INIT(16u << 20);
	size_t i;
	json_t *part;
	json_array_foreach (c, i, part) {
		const char *t = json_string_value(json_object_get(part, "text"));
		if (t)
			aw_buf_adds(&b, t);
	}
	json_t *s = aw_buf_err(&b) ? NULL : json_string(aw_buf_str(&b));
	aw_buf_free(&b);
	return s ? s : json_string("");
}

static aw_err messages_to(const json_t *req, json_t *o, aw_error *err)
{
	json_t *system = json_array(), *msgs = json_array();
	json_object_set_new(o, "messages", msgs);
	aw_err e = AW_OK;
	size_t i;
	json_t *m;
	json_array_foreach (json_object_get(req, "messages"), i, m) {
		char where[48];
		snprintf(where, sizeof where, "/messages/%zu", i);
		const char *role = json_string_value(json_object_get(m, "role"));
		json_t *c = json_object_get(m, "content");
		json_t *blocks = json_array();
		if (!strcmp(role, "system") || !strcmp(role, "developer")) {
			if (!(e = blocks_of(c, blocks, where, err)))
				json_array_extend(system, blocks);
			json_decref(blocks);
		} else if (!strcmp(role, "user")) {
			if (!(e = blocks_of(c, blocks, where, err)))
				add_turn(msgs, "user", blocks);
			else
				json_decref(blocks);
		} else if (!strcmp(role, "assistant")) {
			e = blocks_of(c, blocks, where, err);
			if (!e)
				e = tool_uses(json_object_get(m, "tool_calls"), blocks, where, err);
			if (!e && json_array_size(blocks))
				add_turn(msgs, "assistant", blocks);
			else
				json_decref(blocks);
		} else if (!strcmp(role, "tool")) {
			const char *id = json_string_value(json_object_get(m, "tool_call_id"));
			if (!id) {
				json_decref(blocks);
				e = wire(err, where, "a tool message needs its tool_call_id");
			} else {
				json_array_append_new(blocks,
						      json_pack("{s:s,s:s,s:o}", "type",
								"tool_result", "tool_use_id", id,
								"content", result_text(c)));
				add_turn(msgs, "user", blocks);
			}
		} else {
			json_decref(blocks);
			e = wire(err, where, "legacy function messages are not translated");
		}
		if (e)
			break;
	}
	if (!e && !json_array_size(msgs))
		e = wire(err, "/messages", "a conversation needs a user or assistant message");
	if (!e && json_array_size(system))
		json_object_set(o, "system", system);
	json_decref(system);
	return e;
}

static aw_err tools_to(const json_t *req, json_t *o, aw_error *err)
{
	json_t *tools = json_object_get(req, "tools");
	if (json_array_size(tools)) {
		json_t *out = json_array();
		size_t i;
		json_t *t;
		json_array_foreach (tools, i, t) {
			json_t *fn = json_object_get(t, "function");
			const char *name = json_string_value(json_object_get(fn, "name"));
			const char *type = json_string_value(json_object_get(t, "type"));
			if (!name || (type && strcmp(type, "function"))) {
				json_decref(out);
				return wire(err, "/tools", "tools are functions with a name");
			}
			json_t *schema = json_object_get(fn, "parameters");
			json_t *is = json_is_object(schema) ? json_incref(schema)
							    : json_pack("{s:s}", "type", "object");
			json_t *a = json_pack("{s:s,s:o}", "name", name, "input_schema", is);
			json_t *d = json_object_get(fn, "description");
			if (json_is_string(d))
				json_object_set(a, "description", d);
			json_array_append_new(out, a);
		}
		json_object_set_new(o, "tools", out);
	}
	json_t *tc = json_object_get(req, "tool_choice");
	json_t *choice = NULL;
	if (json_is_string(tc)) {
		const char *s = json_string_value(tc);
		choice = json_pack("{s:s}", "type",
				   !strcmp(s, "required") ? "any"
				   : !strcmp(s, "none")	  ? "none"
							  : "auto");
	} else if (json_is_object(tc)) {
		const char *name =
			json_string_value(json_object_get(json_object_get(tc, "function"), "name"));
		if (!name)
			return wire(err, "/tool_choice", "tool_choice names a function");
		choice = json_pack("{s:s,s:s}", "type", "tool", "name", name);
	}
	if (json_is_false(json_object_get(req, "parallel_tool_calls")) && json_array_size(tools)) {
		if (!choice)
			choice = json_pack("{s:s}", "type", "auto");
		if (strcmp(json_string_value(json_object_get(choice, "type")), "none"))
			json_object_set_new(choice, "disable_parallel_tool_use", json_true());
	}
	if (choice && json_array_size(tools))
		json_object_set_new(o, "tool_choice", choice);
	else
		json_decref(choice);
	return AW_OK;
}

aw_err aw_llm_to_anthropic(const json_t *req, const char *model, int stream, json_t **out,
			   aw_error *err)
{
	*out = NULL;
	json_t *nv = json_object_get(req, "n");
	if (json_is_integer(nv) && json_integer_value(nv) > 1)
		return wire(err, "/n", "n > 1 has no equivalent");
	if (json_array_size(json_object_get(req, "functions")) ||
	    json_object_get(req, "function_call"))
		return wire(err, "/functions", "legacy functions are not translated (use tools)");
	json_t *mt = json_object_get(req, "max_completion_tokens");
	if (!json_is_integer(mt))
		mt = json_object_get(req, "max_tokens");
	json_int_t max =
		json_is_integer(mt) && json_integer_value(mt) > 0 ? json_integer_value(mt) : 4096;
	json_t *o = json_pack("{s:s,s:I,s:b}", "model", model, "max_tokens", max, "stream", stream);
	if (!o)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	aw_err e = messages_to(req, o, err);
	if (!e)
		e = tools_to(req, o, err);
	/* JSON output: Anthropic has no response_format; the schema (the
	 * gateway validates the answer and retries) or JSON mode is asked in
	 * the system prompt, whose bytes the prompt bound counts */
	json_t *rf = json_object_get(req, "response_format");
	const char *rft = json_string_value(json_object_get(rf, "type"));
	if (!e && rft && strcmp(rft, "text")) {
		json_t *schema = json_object_get(json_object_get(rf, "json_schema"), "schema");
		char *s = schema ? json_dumps(schema, JSON_COMPACT) : NULL;
		aw_buf b = AW_BUF_INIT(16u << 20);
		aw_buf_adds(&b, AW_LLM_JSON_INSTRUCTION);
		if (s)
			aw_buf_addf(&b, " It must validate against this JSON Schema: %s", s);
		free(s);
		json_t *sys = json_object_get(o, "system");
		if (!sys)
			json_object_set_new(o, "system", sys = json_array());
		json_array_append_new(sys, json_pack("{s:s,s:s}", "type", "text", "text",
						     aw_buf_err(&b) ? "" : aw_buf_str(&b)));
		aw_buf_free(&b);
	}
	json_t *v;
	if (!e && json_is_number(v = json_object_get(req, "temperature")))
		json_object_set_new(
			o, "temperature",
			json_real(json_number_value(v) > 1 ? 1.0 : json_number_value(v)));
	if (!e && json_is_number(v = json_object_get(req, "top_p")))
		json_object_set(o, "top_p", v);
	v = json_object_get(req, "stop");
	if (!e && json_is_string(v))
		json_object_set_new(o, "stop_sequences", json_pack("[O]", v));
	else if (!e && json_array_size(v))
		json_object_set(o, "stop_sequences", v);
	const char *user = json_string_value(json_object_get(req, "user"));
	if (!e && user)
		json_object_set_new(o, "metadata", json_pack("{s:s}", "user_id", user));
	if (e) {
		json_decref(o);
		return e;
	}
	*out = o;
	return AW_OK;
}

/* ------------------------------------------------------------ answers */

static const char *finish_of(const char *stop_reason)
{
	if (!stop_reason)
		return "stop";
	if (!strcmp(stop_reason, "max_tokens"))
		return "length";
	if (!strcmp(stop_reason, "tool_use"))
		return "tool_calls";
	if (!strcmp(stop_reason, "refusal"))
		return "content_filter";
	return "stop"; /* end_turn, stop_sequence, pause_turn */
}

/* Usage members into st; output only when out_too (a message_start's
 * output_tokens is not the answer's). */
static void usage_of(const json_t *u, aw_llm_stream_state *st, int out_too)
{
	json_t *in = json_object_get(u, "input_tokens");
	json_t *cw = json_object_get(u, "cache_creation_input_tokens");
	json_t *cr = json_object_get(u, "cache_read_input_tokens");
	if (json_is_integer(in) || json_is_integer(cw) || json_is_integer(cr)) {
		st->cache_write = json_integer_value(cw);
		st->cache_read = json_integer_value(cr);
		st->tokens_in = json_integer_value(in) + st->cache_write + st->cache_read;
	}
	json_t *ot = json_object_get(u, "output_tokens");
	if (out_too && json_is_integer(ot)) {
		st->tokens_out = json_integer_value(ot);
		st->usage_seen = 1;
	}
}

static json_t *usage_json(const aw_llm_stream_state *st)
{
	return json_pack("{s:I,s:I,s:I,s:{s:I},s:I,s:I}", "prompt_tokens",
			 (json_int_t)st->tokens_in, "completion_tokens", (json_int_t)st->tokens_out,
			 "total_tokens", (json_int_t)(st->tokens_in + st->tokens_out),
			 "prompt_tokens_details", "cached_tokens", (json_int_t)st->cache_read,
			 "cache_creation_input_tokens", (json_int_t)st->cache_write,
			 "cache_read_input_tokens", (json_int_t)st->cache_read);
}

static json_t *tool_call(int index, const char *id, const char *name, const char *args)
{
	return json_pack("{s:i,s:s,s:s,s:{s:s,s:s}}", "index", index, "id", id, "type", "function",
			 "function", "name", name, "arguments", args);
}

aw_err aw_llm_from_anthropic(const json_t *resp, aw_llm_stream_state *st, json_t **out,
			     aw_error *err)
{
	*out = NULL;
	json_t *content = json_object_get(resp, "content");
	if (!json_is_array(content))
		return aw_fail(err, AW_E_REQ_INVALID, "the Anthropic answer has no content array");
	usage_of(json_object_get(resp, "usage"), st, 1);
	aw_buf text = AW_BUF_INIT(16u << 20);
	json_t *calls = json_array();
	size_t i;
	json_t *b;
	json_array_foreach (content, i, b) {
		const char *type = json_string_value(json_object_get(b, "type"));
		if (type && !strcmp(type, "text")) {
			aw_buf_adds(&text, json_string_value(json_object_get(b, "text")) ?: "");
		} else if (type && !strcmp(type, "tool_use")) {
			const char *id = json_string_value(json_object_get(b, "id"));
			const char *name = json_string_value(json_object_get(b, "name"));
			char *args = json_dumps(json_object_get(b, "input"),
						JSON_COMPACT | JSON_ENCODE_ANY);
			if (id && name)
				json_array_append_new(calls,
						      tool_call((int)json_array_size(calls), id,
								name, args ? args : "{}"));
			free(args);
		} /* thinking and other blocks are not part of a chat completion */
	}
	json_t *msg = json_pack("{s:s,s:s?}", "role", "assistant", "content",
				text.len || !json_array_size(calls) ? aw_buf_str(&text) : NULL);
	if (msg && !json_object_get(msg, "content"))
		json_object_set_new(msg, "content", json_null());
	if (msg && json_array_size(calls)) {
		size_t k;
		json_t *tc;
		json_array_foreach (calls, k, tc)
			json_object_del(tc, "index");
		json_object_set(msg, "tool_calls", calls);
	}
	json_decref(calls);
	int too_big = aw_buf_err(&text) != AW_OK;
	aw_buf_free(&text);
	if (too_big) {
		json_decref(msg);
		return aw_fail(err, AW_E_LIMIT, "the answer's text is over 16 MiB");
	}
	*out = json_pack("{s:s,s:s,s:I,s:s,s:[{s:i,s:o,s:s}],s:o}", "id", st->id, "object",
			 "chat.completion", "created", (json_int_t)st->created, "model", st->model,
			 "choices", "index", 0, "message", msg, "finish_reason",
			 finish_of(json_string_value(json_object_get(resp, "stop_reason"))),
			 "usage", usage_json(st));
	return *out ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
}

static aw_err role_first(aw_llm_stream_state *st, aw_buf *out)
{
	if (st->role_sent)
		return AW_OK;
	st->role_sent = 1;
	return aw_llm_sse_data(
		out,
		aw_llm_chunk(st, json_pack("{s:s,s:s}", "role", "assistant", "content", ""), NULL));
}

aw_err aw_llm_event_from_anthropic(const char *data, size_t len, aw_llm_stream_state *st,
				   int include_usage, aw_buf *out, int *content, int *done,
				   aw_error *err)
{
	*done = 0;
	*content = 0;
	json_t *j = json_loadb(data, len, 0, NULL);
	const char *type = json_string_value(json_object_get(j, "type"));
	if (!json_is_object(j) || !type) {
		json_decref(j);
		return aw_fail(err, AW_E_REQ_JSON, "an Anthropic event is not a typed JSON object");
	}
	aw_err e = AW_OK;
	json_t *idx = json_object_get(j, "index");
	long bi = json_is_integer(idx) ? (long)json_integer_value(idx) : -1;
	if (!strcmp(type, "message_start")) {
		/* nothing for the client yet: until content comes, an error event
		 * (overloaded) may still fail over to the next target */
		usage_of(json_object_get(json_object_get(j, "message"), "usage"), st, 0);
	} else if (!strcmp(type, "content_block_start")) {
		json_t *cb = json_object_get(j, "content_block");
		const char *ct = json_string_value(json_object_get(cb, "type"));
		if (bi < 0 || bi >= AW_LLM_MAX_BLOCKS) {
			e = aw_fail(err, AW_E_LIMIT,
				    "an Anthropic content block index out of range");
		} else if (ct && !strcmp(ct, "tool_use")) {
			const char *id = json_string_value(json_object_get(cb, "id"));
			const char *name = json_string_value(json_object_get(cb, "name"));
			if (!id || !name) {
				e = aw_fail(err, AW_E_REQ_INVALID,
					    "a tool_use block without id or name");
			} else {
				st->blk_tool[bi] = (short)(1 + st->ntools++);
				e = role_first(st, out);
				json_t *d =
					json_pack("{s:[o]}", "tool_calls",
						  tool_call(st->blk_tool[bi] - 1, id, name, ""));
				if (!e)
					e = aw_llm_sse_data(out, aw_llm_chunk(st, d, NULL));
				*content = 1;
			}
		} else {
			st->blk_tool[bi] = 0;
			const char *t = json_string_value(json_object_get(cb, "text"));
			if (ct && !strcmp(ct, "text") && t && *t) {
				e = role_first(st, out);
				if (!e)
					e = aw_llm_sse_data(
						out,
						aw_llm_chunk(st, json_pack("{s:s}", "content", t),
							     NULL));
				*content = 1;
			}
		}
	} else if (!strcmp(type, "content_block_delta")) {
		json_t *d = json_object_get(j, "delta");
		const char *dt = json_string_value(json_object_get(d, "type"));
		if (bi < 0 || bi >= AW_LLM_MAX_BLOCKS || !dt) {
			e = aw_fail(err, AW_E_REQ_INVALID, "an Anthropic delta without its block");
		} else if (!strcmp(dt, "text_delta")) {
			const char *t = json_string_value(json_object_get(d, "text"));
			e = role_first(st, out);
			if (!e && t)
				e = aw_llm_sse_data(
					out,
					aw_llm_chunk(st, json_pack("{s:s}", "content", t), NULL));
			*content = 1;
		} else if (!strcmp(dt, "input_json_delta") && st->blk_tool[bi] > 0) {
			const char *pj = json_string_value(json_object_get(d, "partial_json"));
			json_t *tc = json_pack("{s:[{s:i,s:{s:s}}]}", "tool_calls", "index",
					       st->blk_tool[bi] - 1, "function", "arguments",
					       pj ? pj : "");
			e = role_first(st, out);
			if (!e)
				e = aw_llm_sse_data(out, aw_llm_chunk(st, tc, NULL));
			else
				json_decref(tc);
			*content = 1;
		} /* thinking, signature and citation deltas are not chat chunks */
	} else if (!strcmp(type, "message_delta")) {
		const char *sr = json_string_value(
			json_object_get(json_object_get(j, "delta"), "stop_reason"));
		if (sr)
			(void)!AW_STR_COPY(st->finish, finish_of(sr)); /* a literal of finish_of */
		usage_of(json_object_get(j, "usage"), st, 1);
	} else if (!strcmp(type, "message_stop")) {
		*done = 1;
		e = role_first(st, out);
		if (!e)
			e = aw_llm_sse_data(out, aw_llm_chunk(st, json_object(),
							      st->finish[0] ? st->finish : "stop"));
		if (!e && include_usage) {
			json_t *u = json_pack("{s:s,s:s,s:I,s:s,s:[],s:o}", "id", st->id, "object",
					      "chat.completion.chunk", "created",
					      (json_int_t)st->created, "model", st->model,
					      "choices", "usage", usage_json(st));
			e = aw_llm_sse_data(out, u);
		}
		if (!e)
			e = aw_buf_adds(out, "data: [DONE]\n\n");
	} else if (!strcmp(type, "error")) {
		e = aw_fail(err, AW_E_REQ_INVALID, "the upstream reported an error mid-stream");
	} /* ping, content_block_stop and new event types carry nothing here */
	json_decref(j);
	if (e && !err->err)
		aw_fail(err, e, "cannot write the stream");
	return e;
}
