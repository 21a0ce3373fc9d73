/*
 * wire_messages.c - the Anthropic-compatible front door's wire (POST
 * /v1/messages, see llm_wire.h): a client's Messages API request decoded
 * into the chat completion request the gateway routes, budgets and audits
 * like any other, and the call's answer - a chat.completion, or its
 * chat.completion.chunk stream - written back as a Messages API message or
 * its named events (message_start, content_block_start/delta/stop,
 * message_delta with the usage, message_stop; error).
 *
 * The request's members are an allow-list, as for chat completions: one
 * the gateway does not know may bill (E-REQ-004); server tools (web search,
 * code execution...) and extended thinking bill in ways the budget does not
 * price (E-BUDGET-005).
 */
#include <stdio.h>
#include <string.h>

#include "awooop/llm_wire.h"

#include <stdlib.h>

#include "awooop/json.h"
#include "awooop/str.h"

static aw_err bad(aw_error *err, const char *where, const char *msg)
{
	return aw_fail_at(err, AW_E_REQ_INVALID, where, "%s", msg);
}

static const char *const known[] = {"model",	    "max_tokens", "messages",	 "system",
				    "stream",	    "tools",	  "tool_choice", "stop_sequences",
				    "temperature",  "top_p",	  "top_k",	 "metadata",
				    "service_tier", "thinking",	  NULL};

/* One block of a user turn as an OpenAI content part (text, image). */
static aw_err part_of(const json_t *b, json_t *parts, const char *where, aw_error *err)
{
	const char *type = json_string_value(json_object_get(b, "type"));
	if (type && !strcmp(type, "text")) {
		json_t *t = json_object_get(b, "text");
		if (!json_is_string(t))
			return bad(err, where, "a text block holds its text as a string");
		json_array_append_new(parts, json_pack("{s:s,s:O}", "type", "text", "text", t));
		return AW_OK;
	}
	if (type && !strcmp(type, "image")) {
		json_t *src = json_object_get(b, "source");
		const char *st = json_string_value(json_object_get(src, "type"));
		const char *url = NULL;
		char *data_url = NULL;
		if (st && !strcmp(st, "url")) {
			url = json_string_value(json_object_get(src, "url"));
		} else if (st && !strcmp(st, "base64")) {
			const char *mt = json_string_value(json_object_get(src, "media_type"));
			const char *d = json_string_value(json_object_get(src, "data"));
			if (mt && d && strlen(mt) < 64 && !strpbrk(mt, ";,")) {
				aw_buf u = AW_BUF_INIT(64u << 20);
				aw_buf_addf(&u, "data:%s;base64,", mt);
				aw_buf_adds(&u, d);
				data_url = aw_buf_err(&u) ? NULL : aw_buf_take(&u);
				aw_buf_free(&u);
				url = data_url;
			}
		}
		if (!url) {
			free(data_url);
			return bad(err, where,
				   "an image block's source is {type: base64, media_type, data} or "
				   "{type: url, url}");
		}
		json_array_append_new(parts, json_pack("{s:s,s:{s:s}}", "type", "image_url",
						       "image_url", "url", url));
		free(data_url);
		return AW_OK;
	}
	return aw_fail_at(err, AW_E_REQ_INVALID, where,
			  "content blocks are text, image, tool_use and tool_result (%s is not "
			  "proxied)",
			  type ? type : "a block without a type");
}

/* A tool_result's content as text (a string, or its text blocks joined). */
static json_t *result_text(const json_t *c, int is_error)
{
	aw_buf b = AW_BUF_INIT(16u << 20);
	if (is_error)
		aw_buf_adds(&b, "[tool error] ");
	if (json_is_string(c))
		aw_buf_adds(&b, json_string_value(c));
	size_t i;
	json_t *blk;
	json_array_foreach (c, i, blk) {
		const char *t = json_string_value(json_object_get(blk, "text"));
		if (t)
			aw_buf_adds(&b, t);
	}
	json_t *s = aw_buf_err(&b) ? NULL : json_string(aw_buf_str(&b));
	aw_buf_free(&b);
	return s;
}

/* A turn's content as blocks: a string is one text block. New reference. */
static json_t *blocks(const json_t *c)
{
	if (json_is_string(c))
		return json_pack("[{s:s,s:O}]", "type", "text", "text", (json_t *)c);
	return json_is_array(c) ? json_incref((json_t *)c) : NULL;
}

static aw_err user_turn(const json_t *c, json_t *msgs, const char *where, aw_error *err)
{
	json_t *bs = blocks(c);
	if (!bs)
		return bad(err, where, "content is a string or an array of blocks");
	json_t *parts = json_array();
	aw_err e = AW_OK;
	size_t k;
	json_t *b;
	json_array_foreach (bs, k, b) {
		char w[96];
		snprintf(w, sizeof w, "%s/content/%zu", where, k);
		const char *type = json_string_value(json_object_get(b, "type"));
		if (type && !strcmp(type, "tool_result")) { /* OpenAI: a tool message */
			const char *id = json_string_value(json_object_get(b, "tool_use_id"));
			json_t *text = result_text(json_object_get(b, "content"),
						   json_is_true(json_object_get(b, "is_error")));
			if (!id || !text) {
				json_decref(text);
				e = bad(err, w, "a tool_result needs its tool_use_id and content");
				break;
			}
			json_array_append_new(msgs, json_pack("{s:s,s:s,s:o}", "role", "tool",
							      "tool_call_id", id, "content", text));
		} else if ((e = part_of(b, parts, w, err))) {
			break;
		}
	}
	if (!e && json_array_size(parts))
		json_array_append_new(msgs,
				      json_pack("{s:s,s:O}", "role", "user", "content", parts));
	json_decref(parts);
	json_decref(bs);
	return e;
}

static aw_err assistant_turn(const json_t *c, json_t *msgs, const char *where, aw_error *err)
{
	json_t *bs = blocks(c);
	if (!bs)
		return bad(err, where, "content is a string or an array of blocks");
	aw_buf text = AW_BUF_INIT(16u << 20);
	json_t *calls = json_array();
	aw_err e = AW_OK;
	size_t k;
	json_t *b;
	json_array_foreach (bs, k, b) {
		char w[96];
		snprintf(w, sizeof w, "%s/content/%zu", where, k);
		const char *type = json_string_value(json_object_get(b, "type"));
		if (type && !strcmp(type, "text") && json_is_string(json_object_get(b, "text"))) {
			aw_buf_adds(&text, json_string_value(json_object_get(b, "text")));
		} else if (type && !strcmp(type, "tool_use")) {
			const char *id = json_string_value(json_object_get(b, "id"));
			const char *name = json_string_value(json_object_get(b, "name"));
			json_t *input = json_object_get(b, "input");
			char *args = json_is_object(input) ? json_dumps(input, JSON_COMPACT) : NULL;
			if (!id || !name || !args) {
				free(args);
				e = bad(err, w,
					"a tool_use block has an id, a name and an object input");
				break;
			}
			json_array_append_new(calls, json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", id,
							       "type", "function", "function",
							       "name", name, "arguments", args));
			free(args);
		} else if (type &&
			   (!strcmp(type, "thinking") || !strcmp(type, "redacted_thinking"))) {
			continue; /* an earlier answer's reasoning: not resent */
		} else {
			e = bad(err, w, "an assistant turn holds text and tool_use blocks");
			break;
		}
	}
	if (!e && aw_buf_err(&text))
		e = aw_fail(err, AW_E_LIMIT, "a turn's text is over 16 MiB");
	if (!e) {
		json_t *m =
			json_pack("{s:s,s:s}", "role", "assistant", "content", aw_buf_str(&text));
		if (json_array_size(calls))
			json_object_set(m, "tool_calls", calls);
		json_array_append_new(msgs, m);
	}
	aw_buf_free(&text);
	json_decref(calls);
	json_decref(bs);
	return e;
}

static aw_err tools_of(const json_t *req, json_t *o, aw_error *err)
{
	json_t *tools = json_object_get(req, "tools");
	if (tools && !json_is_array(tools))
		return bad(err, "/tools", "tools must be an array");
	if (json_array_size(tools)) {
		json_t *out = json_array();
		json_object_set_new(o, "tools", out);
		size_t i;
		json_t *t;
		json_array_foreach (tools, i, t) {
			char w[32];
			snprintf(w, sizeof w, "/tools/%zu", i);
			const char *type = json_string_value(json_object_get(t, "type"));
			const char *name = json_string_value(json_object_get(t, "name"));
			json_t *schema = json_object_get(t, "input_schema");
			if (type && strcmp(type, "custom"))
				return aw_fail_at(err, AW_E_BUDGET_UNPRICED, w,
						  "server tools (%.40s) are billed per use, which "
						  "the budget does not price: not proxied",
						  type);
			if (!name || !json_is_object(schema))
				return bad(err, w, "a tool has a name and an input_schema object");
			json_t *fn = json_pack("{s:s,s:O}", "name", name, "parameters", schema);
			json_t *d = json_object_get(t, "description");
			if (json_is_string(d))
				json_object_set(fn, "description", d);
			json_array_append_new(
				out, json_pack("{s:s,s:o}", "type", "function", "function", fn));
		}
	}
	json_t *tc = json_object_get(req, "tool_choice");
	if (!tc)
		return AW_OK;
	const char *type = json_string_value(json_object_get(tc, "type"));
	if (!type)
		return bad(err, "/tool_choice", "tool_choice is {type: auto | any | tool | none}");
	if (!strcmp(type, "auto") || !strcmp(type, "none"))
		json_object_set_new(o, "tool_choice", json_string(type));
	else if (!strcmp(type, "any"))
		json_object_set_new(o, "tool_choice", json_string("required"));
	else if (!strcmp(type, "tool") && json_is_string(json_object_get(tc, "name")))
		json_object_set_new(o, "tool_choice",
				    json_pack("{s:s,s:{s:O}}", "type", "function", "function",
					      "name", json_object_get(tc, "name")));
	else
		return bad(err, "/tool_choice", "tool_choice is {type: auto | any | tool | none}");
	if (json_is_true(json_object_get(tc, "disable_parallel_tool_use")) &&
	    json_array_size(tools))
		json_object_set_new(o, "parallel_tool_calls", json_false());
	return AW_OK;
}

aw_err aw_llm_messages_to_chat(const json_t *req, json_t **out, aw_error *err)
{
	*out = NULL;
	aw_err e = aw_llm_wire_fields(req, known, "a Messages API", err);
	if (e)
		return e;
	json_t *v;
	v = json_object_get(req, "thinking");
	if (v && !json_is_null(v) &&
	    strcmp(json_string_value(json_object_get(v, "type")) ?: "", "disabled"))
		return aw_fail_at(err, AW_E_BUDGET_UNPRICED, "/thinking",
				  "extended thinking is not proxied (its budget_tokens are billed "
				  "apart from max_tokens by some models)");
	const char *tier = json_string_value(json_object_get(req, "service_tier"));
	if (json_object_get(req, "service_tier") &&
	    (!tier || (strcmp(tier, "auto") && strcmp(tier, "standard_only"))))
		return bad(err, "/service_tier", "service_tier is auto or standard_only");
	json_t *model = json_object_get(req, "model");
	json_t *mt = json_object_get(req, "max_tokens");
	if (!json_is_string(model))
		return bad(err, "/model", "model is required");
	if (json_string_length(model) > AW_LLM_MODEL_MAX)
		return bad(err, "/model", "model is at most 128 bytes");
	if (!json_is_integer(mt) || json_integer_value(mt) < 1)
		return bad(err, "/max_tokens", "max_tokens is required: an integer of at least 1");
	json_t *msgs = json_object_get(req, "messages");
	if (!json_is_array(msgs) || !json_array_size(msgs))
		return bad(err, "/messages", "messages must be a non-empty array");
	json_t *o = json_pack("{s:O,s:O,s:[]}", "model", model, "max_tokens", mt, "messages");
	if (!o)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	json_t *cm = json_object_get(o, "messages");
	json_t *sys = json_object_get(req, "system");
	if (sys && !json_is_null(sys)) {
		json_t *bs = blocks(sys);
		json_t *parts = json_array();
		size_t k;
		json_t *b;
		json_array_foreach (bs, k, b) {
			char w[48];
			snprintf(w, sizeof w, "/system/%zu", k);
			if (strcmp(json_string_value(json_object_get(b, "type")) ?: "", "text") ||
			    !json_is_string(json_object_get(b, "text"))) {
				e = bad(err, w, "system is a string or text blocks");
				break;
			}
			json_array_append_new(parts, json_pack("{s:s,s:O}", "type", "text", "text",
							       json_object_get(b, "text")));
		}
		if (!bs)
			e = bad(err, "/system", "system is a string or text blocks");
		if (!e)
			json_array_append_new(
				cm, json_pack("{s:s,s:O}", "role", "system", "content", parts));
		json_decref(parts);
		json_decref(bs);
	}
	size_t i;
	json_t *m;
	json_array_foreach (msgs, i, m) {
		if (e)
			break;
		char where[48];
		snprintf(where, sizeof where, "/messages/%zu", i);
		const char *role = json_string_value(json_object_get(m, "role"));
		json_t *c = json_object_get(m, "content");
		if (role && !strcmp(role, "user"))
			e = user_turn(c, cm, where, err);
		else if (role && !strcmp(role, "assistant"))
			e = assistant_turn(c, cm, where, err);
		else
			e = bad(err, where, "a message's role is user or assistant");
	}
	if (!e)
		e = tools_of(req, o, err);
	if (!e && (v = json_object_get(req, "stop_sequences")) && !json_is_null(v)) {
		if (!json_is_array(v) || json_array_size(v) > 4)
			e = bad(err, "/stop_sequences", "stop_sequences is an array of at most 4");
		else
			json_object_set(o, "stop", v);
	}
	static const char *const same[] = {"temperature", "top_p", NULL};
	for (int k = 0; !e && same[k]; k++)
		if ((v = json_object_get(req, same[k])) && !json_is_null(v))
			json_object_set(o, same[k], v);
	v = json_object_get(req, "stream");
	if (!e && v && !json_is_boolean(v))
		e = bad(err, "/stream", "stream must be a boolean");
	if (!e && json_is_true(v)) {
		json_object_set_new(o, "stream", json_true());
		json_object_set_new(o, "stream_options", json_pack("{s:b}", "include_usage", 1));
	}
	const char *user =
		json_string_value(json_object_get(json_object_get(req, "metadata"), "user_id"));
	if (!e && user)
		json_object_set_new(o, "user", json_string(user));
	if (e) {
		json_decref(o);
		return e;
	}
	*out = o;
	return AW_OK;
}

/* ------------------------------------------------------------ answers */

static const char *stop_reason_of(const char *finish)
{
	if (!finish || !strcmp(finish, "stop"))
		return "end_turn";
	if (!strcmp(finish, "length"))
		return "max_tokens";
	if (!strcmp(finish, "tool_calls") || !strcmp(finish, "function_call"))
		return "tool_use";
	if (!strcmp(finish, "content_filter"))
		return "refusal";
	return "end_turn";
}

/* An OpenAI usage object as the Messages API's: the cache parts apart from
 * input_tokens (as an Anthropic upstream reported them, else OpenAI's
 * cached_tokens as cache reads). */
static json_t *usage_of(const json_t *u)
{
	long long in = json_integer_value(json_object_get(u, "prompt_tokens"));
	long long out = json_integer_value(json_object_get(u, "completion_tokens"));
	json_t *cwj = json_object_get(u, "cache_creation_input_tokens");
	json_t *crj = json_object_get(u, "cache_read_input_tokens");
	long long cw = json_integer_value(cwj);
	long long cr = crj ? json_integer_value(crj)
			   : json_integer_value(json_object_get(
				     json_object_get(u, "prompt_tokens_details"), "cached_tokens"));
	if (cw < 0 || cr < 0 || cw + cr > in)
		cw = cr = 0;
	return json_pack("{s:I,s:I,s:I,s:I}", "input_tokens", (json_int_t)(in - cw - cr),
			 "output_tokens", (json_int_t)out, "cache_creation_input_tokens",
			 (json_int_t)cw, "cache_read_input_tokens", (json_int_t)cr);
}

static void msg_id(const char *chat_id, char *out, size_t n)
{
	snprintf(out, n, "msg_%s",
		 chat_id && !strncmp(chat_id, "chatcmpl-", 9) ? chat_id + 9
		 : chat_id				      ? chat_id
							      : "");
}

aw_err aw_llm_chat_to_message(const json_t *completion, json_t **out, aw_error *err)
{
	*out = NULL;
	json_t *c0 = json_array_get(json_object_get(completion, "choices"), 0);
	json_t *msg = json_object_get(c0, "message");
	if (!json_is_object(msg))
		return aw_fail(err, AW_E_REQ_INVALID, "the answer has no message");
	json_t *content = json_array();
	const char *text = json_string_value(json_object_get(msg, "content"));
	if (text && *text)
		json_array_append_new(content,
				      json_pack("{s:s,s:s}", "type", "text", "text", text));
	size_t i;
	json_t *tc;
	json_array_foreach (json_object_get(msg, "tool_calls"), i, tc) {
		json_t *fn = json_object_get(tc, "function");
		const char *args = json_string_value(json_object_get(fn, "arguments"));
		json_t *input = args && *args ? json_loads(args, 0, NULL) : NULL;
		if (!json_is_object(input)) { /* a model's broken JSON: kept, as a string */
			json_decref(input);
			input = json_pack("{s:s}", "_raw_arguments", args ? args : "");
		}
		json_array_append_new(
			content,
			json_pack("{s:s,s:s,s:s,s:o}", "type", "tool_use", "id",
				  json_string_value(json_object_get(tc, "id")) ?: "", "name",
				  json_string_value(json_object_get(fn, "name")) ?: "", "input",
				  input));
	}
	char id[80];
	msg_id(json_string_value(json_object_get(completion, "id")), id, sizeof id);
	*out = json_pack("{s:s,s:s,s:s,s:s,s:o,s:s,s:n,s:o}", "id", id, "type", "message", "role",
			 "assistant", "model",
			 json_string_value(json_object_get(completion, "model")) ?: "", "content",
			 content, "stop_reason",
			 stop_reason_of(json_string_value(json_object_get(c0, "finish_reason"))),
			 "stop_sequence", "usage", usage_of(json_object_get(completion, "usage")));
	return *out ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
}

const char *aw_llm_anthropic_error_type(int status)
{
	switch (status) {
	case 400: return "invalid_request_error";
	case 401: return "authentication_error";
	case 402: return "billing_error";
	case 403: return "permission_error";
	case 404: return "not_found_error";
	case 413: return "request_too_large";
	case 429: return "rate_limit_error";
	case 503:
	case 529: return "overloaded_error";
	case 504: return "timeout_error";
	default: return status >= 500 ? "api_error" : "invalid_request_error";
	}
}

/* ------------------------------------------------------------ stream */

void aw_msgs_stream_init(aw_msgs_stream *s, const char *model)
{
	memset(s, 0, sizeof *s);
	s->open = -1;
	(void)!AW_STR_COPY(s->model, model); /* aw_llm_messages_to_chat bounds it */
}

static aw_err event(aw_buf *out, const char *name, json_t *data)
{
	char *d = data ? json_dumps(data, JSON_COMPACT) : NULL;
	json_decref(data);
	if (!d)
		return AW_E_NOMEM;
	aw_buf_addf(out, "event: %s\ndata: ", name);
	aw_buf_adds(out, d);
	aw_buf_adds(out, "\n\n");
	free(d);
	return aw_buf_err(out);
}

static aw_err start(aw_msgs_stream *s, const json_t *chunk, aw_buf *out)
{
	if (s->started)
		return AW_OK;
	s->started = 1;
	msg_id(json_string_value(json_object_get(chunk, "id")), s->id, sizeof s->id);
	return event(out, "message_start",
		     json_pack("{s:s,s:{s:s,s:s,s:s,s:s,s:[],s:n,s:n,s:{s:i,s:i}}}", "type",
			       "message_start", "message", "id", s->id, "type", "message", "role",
			       "assistant", "model", s->model, "content", "stop_reason",
			       "stop_sequence", "usage", "input_tokens", 0, "output_tokens", 0));
}

static aw_err stop_block(aw_msgs_stream *s, aw_buf *out)
{
	if (s->open < 0)
		return AW_OK;
	int i = s->open;
	s->open = -1;
	return event(out, "content_block_stop",
		     json_pack("{s:s,s:i}", "type", "content_block_stop", "index", i));
}

/* Opens block kind (-1 text, else the tool call's index) unless open. */
static aw_err open_block(aw_msgs_stream *s, int kind, json_t *block, aw_buf *out)
{
	if (s->open >= 0 && s->kind == kind) {
		json_decref(block);
		return AW_OK;
	}
	aw_err e = stop_block(s, out);
	if (e) {
		json_decref(block);
		return e;
	}
	s->open = s->blocks++;
	s->kind = kind;
	return event(out, "content_block_start",
		     json_pack("{s:s,s:i,s:o}", "type", "content_block_start", "index", s->open,
			       "content_block", block));
}

static aw_err delta(aw_msgs_stream *s, json_t *d, aw_buf *out)
{
	return event(out, "content_block_delta",
		     json_pack("{s:s,s:i,s:o}", "type", "content_block_delta", "index", s->open,
			       "delta", d));
}

static aw_err finish(aw_msgs_stream *s, aw_buf *out)
{
	aw_err e = stop_block(s, out);
	json_t *u = s->usage ? usage_of(s->usage) : json_pack("{s:i}", "output_tokens", 0);
	if (!e)
		e = event(out, "message_delta",
			  json_pack("{s:s,s:{s:s,s:n},s:o}", "type", "message_delta", "delta",
				    "stop_reason", stop_reason_of(s->finish[0] ? s->finish : NULL),
				    "stop_sequence", "usage", u));
	else
		json_decref(u);
	if (!e)
		e = event(out, "message_stop", json_pack("{s:s}", "type", "message_stop"));
	s->done = 1;
	return e;
}

aw_err aw_llm_chunk_to_anthropic(const char *data, size_t len, aw_msgs_stream *s, aw_buf *out)
{
	if (s->done)
		return AW_OK;
	if (len == 6 && !memcmp(data, "[DONE]", 6)) {
		aw_err e = start(s, NULL, out);
		return e ? e : finish(s, out);
	}
	json_t *j = json_loadb(data, len, 0, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		return AW_E_REQ_JSON;
	}
	aw_err e = AW_OK;
	json_t *er = json_object_get(j, "error");
	if (er) { /* the gateway's last event: a broken stream, a cut */
		const char *msg = json_string_value(json_object_get(er, "message"));
		const char *code = json_string_value(json_object_get(er, "code"));
		e = event(out, "error",
			  json_pack("{s:s,s:{s:s,s:s,s:s}}", "type", "error", "error", "type",
				    code && !strcmp(code, "E-BUDGET-001") ? "billing_error"
									  : "api_error",
				    "message", msg ? msg : "the stream broke", "code",
				    code ? code : ""));
		s->done = 1;
		json_decref(j);
		return e;
	}
	e = start(s, j, out);
	json_t *u = json_object_get(j, "usage");
	if (json_is_object(u)) {
		json_decref(s->usage);
		s->usage = json_deep_copy(u);
	}
	json_t *c0 = json_array_get(json_object_get(j, "choices"), 0);
	json_t *d = json_object_get(c0, "delta");
	const char *text = json_string_value(json_object_get(d, "content"));
	if (!e && text && *text) {
		e = open_block(s, -1, json_pack("{s:s,s:s}", "type", "text", "text", ""), out);
		if (!e)
			e = delta(s, json_pack("{s:s,s:s}", "type", "text_delta", "text", text),
				  out);
	}
	size_t i;
	json_t *tc;
	json_array_foreach (json_object_get(d, "tool_calls"), i, tc) {
		if (e)
			break;
		json_t *fn = json_object_get(tc, "function");
		json_t *ix = json_object_get(tc, "index");
		int k = json_is_integer(ix) && json_integer_value(ix) >= 0 &&
					json_integer_value(ix) < 1000000
				? (int)json_integer_value(ix)
				: (int)i;
		const char *id = json_string_value(json_object_get(tc, "id"));
		const char *name = json_string_value(json_object_get(fn, "name"));
		if (id || s->open < 0 || s->kind != k)
			e = open_block(s, k,
				       json_pack("{s:s,s:s,s:s,s:{}}", "type", "tool_use", "id",
						 id ? id : "", "name", name ? name : "", "input"),
				       out);
		const char *args = json_string_value(json_object_get(fn, "arguments"));
		if (!e && args && *args)
			e = delta(s,
				  json_pack("{s:s,s:s}", "type", "input_json_delta", "partial_json",
					    args),
				  out);
	}
	const char *fin = json_string_value(json_object_get(c0, "finish_reason"));
	if (!e && fin)
		e = AW_STR_COPY(s->finish, fin) < 0 ? AW_E_LLM_BROKEN : stop_block(s, out);
	json_decref(j);
	return e;
}

void aw_msgs_stream_free(aw_msgs_stream *s)
{
	json_decref(s->usage);
	s->usage = NULL;
}
