/*
 * wire_responses.c - OpenAI's Responses API on the way in (POST
 * /v1/responses, see llm_wire.h): a Responses request decoded into the chat
 * completion request the gateway routes, budgets and audits like any other,
 * and the call's answer - a chat.completion, or its chunk stream - written
 * back as a `response` object or its semantic events (response.created,
 * response.in_progress, response.output_item.added, content_part.added,
 * output_text.delta, function_call_arguments.delta, the .done events, and
 * response.completed / response.incomplete with the usage).
 *
 * The gateway keeps no conversation: previous_response_id and store: true
 * are refused (E-REQ-005); hosted tools (web search, file search, computer
 * use) and file inputs bill apart (E-BUDGET-005). Text, images, function
 * tools and their calls and outputs, instructions and structured output
 * (text.format) are translated.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/json.h"
#include "awooop/llm_wire.h"
#include "awooop/str.h"

static aw_err bad(aw_error *err, const char *where, const char *msg)
{
	return aw_fail_at(err, AW_E_REQ_INVALID, where, "%s", msg);
}

static const char *const known[] = {"model",
				    "input",
				    "instructions",
				    "tools",
				    "tool_choice",
				    "parallel_tool_calls",
				    "max_output_tokens",
				    "temperature",
				    "top_p",
				    "stream",
				    "text",
				    "metadata",
				    "user",
				    "store",
				    "previous_response_id",
				    "truncation",
				    "reasoning",
				    "include",
				    NULL};

/* A message's content as chat content: a string, or parts (input_text /
 * output_text as text, input_image as image_url). */
static aw_err content_of(const json_t *c, json_t **out, const char *where, aw_error *err)
{
	*out = NULL;
	if (json_is_string(c)) {
		*out = json_incref((json_t *)c);
		return AW_OK;
	}
	if (!json_is_array(c))
		return bad(err, where, "content is a string or an array of parts");
	json_t *parts = json_array();
	size_t i;
	json_t *p;
	json_array_foreach (c, i, p) {
		const char *type = json_string_value(json_object_get(p, "type"));
		char w[96];
		snprintf(w, sizeof w, "%s/content/%zu", where, i);
		if (type && (!strcmp(type, "input_text") || !strcmp(type, "output_text")) &&
		    json_is_string(json_object_get(p, "text"))) {
			json_array_append_new(parts, json_pack("{s:s,s:O}", "type", "text", "text",
							       json_object_get(p, "text")));
		} else if (type && !strcmp(type, "input_image") &&
			   json_is_string(json_object_get(p, "image_url"))) {
			json_t *iu = json_pack("{s:O}", "url", json_object_get(p, "image_url"));
			json_t *d = json_object_get(p, "detail");
			if (json_is_string(d))
				json_object_set(iu, "detail", d);
			json_array_append_new(parts, json_pack("{s:s,s:o}", "type", "image_url",
							       "image_url", iu));
		} else if (type && (!strcmp(type, "input_file") || !strcmp(type, "input_audio"))) {
			json_decref(parts);
			return aw_fail_at(
				err, AW_E_BUDGET_UNPRICED, w,
				"file and audio inputs are billed in ways the budget cannot "
				"price");
		} else if (type && !strcmp(type, "refusal")) {
			continue;
		} else {
			json_decref(parts);
			return bad(err, w,
				   "content parts are input_text, output_text or input_image (with "
				   "an image_url)");
		}
	}
	*out = parts;
	return AW_OK;
}

/* The last message when it is an assistant's (function calls join it). */
static json_t *assistant_tail(json_t *msgs)
{
	json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
	const char *r = json_string_value(json_object_get(last, "role"));
	return r && !strcmp(r, "assistant") ? last : NULL;
}

static aw_err input_of(const json_t *in, json_t *msgs, aw_error *err)
{
	if (json_is_string(in)) {
		json_array_append_new(msgs, json_pack("{s:s,s:O}", "role", "user", "content", in));
		return AW_OK;
	}
	if (!json_is_array(in) || !json_array_size(in))
		return bad(err, "/input", "input is a string or a non-empty array of items");
	size_t i;
	json_t *it;
	json_array_foreach (in, i, it) {
		char where[48];
		snprintf(where, sizeof where, "/input/%zu", i);
		const char *type = json_string_value(json_object_get(it, "type"));
		const char *role = json_string_value(json_object_get(it, "role"));
		if ((!type || !strcmp(type, "message")) && role) {
			if (strcmp(role, "user") && strcmp(role, "system") &&
			    strcmp(role, "developer") && strcmp(role, "assistant"))
				return bad(
					err, where,
					"a message's role is user, system, developer or assistant");
			json_t *c = NULL;
			aw_err e = content_of(json_object_get(it, "content"), &c, where, err);
			if (e)
				return e;
			json_array_append_new(msgs,
					      json_pack("{s:s,s:o}", "role", role, "content", c));
		} else if (type && !strcmp(type, "function_call")) {
			const char *id = json_string_value(json_object_get(it, "call_id"));
			const char *name = json_string_value(json_object_get(it, "name"));
			const char *args = json_string_value(json_object_get(it, "arguments"));
			if (!id || !name || !args)
				return bad(err, where,
					   "a function_call has a call_id, a name and arguments");
			json_t *a = assistant_tail(msgs);
			if (!a) {
				a = json_pack("{s:s,s:n}", "role", "assistant", "content");
				json_array_append_new(msgs, a);
			}
			json_t *tcs = json_object_get(a, "tool_calls");
			if (!tcs)
				json_object_set_new(a, "tool_calls", tcs = json_array());
			json_array_append_new(tcs, json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", id,
							     "type", "function", "function", "name",
							     name, "arguments", args));
		} else if (type && !strcmp(type, "function_call_output")) {
			const char *id = json_string_value(json_object_get(it, "call_id"));
			json_t *o = json_object_get(it, "output");
			if (!id || !json_is_string(o))
				return bad(
					err, where,
					"a function_call_output has a call_id and a string output");
			json_array_append_new(msgs, json_pack("{s:s,s:s,s:O}", "role", "tool",
							      "tool_call_id", id, "content", o));
		} else if (type && !strcmp(type, "reasoning")) {
			continue; /* an earlier answer's reasoning: not resent */
		} else {
			return aw_fail_at(err, AW_E_REQ_INVALID, where,
					  "input items are messages, function_call and "
					  "function_call_output (%.40s is not proxied)",
					  type ? type : "an item without a type or role");
		}
	}
	return AW_OK;
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
			if (!type || strcmp(type, "function"))
				return aw_fail_at(err, AW_E_BUDGET_UNPRICED, w,
						  "hosted tools (%.40s) are billed per use, which "
						  "the budget does not price: not proxied",
						  type ? type : "without a type");
			if (!name)
				return bad(err, w, "a function tool has a name");
			json_t *fn = json_pack("{s:s}", "name", name);
			static const char *const same[] = {"description", "parameters", "strict",
							   NULL};
			for (int k = 0; same[k]; k++) {
				json_t *v = json_object_get(t, same[k]);
				if (v && !json_is_null(v))
					json_object_set(fn, same[k], v);
			}
			json_array_append_new(
				out, json_pack("{s:s,s:o}", "type", "function", "function", fn));
		}
	}
	json_t *tc = json_object_get(req, "tool_choice");
	if (json_is_string(tc)) {
		json_object_set(o, "tool_choice", tc);
	} else if (json_is_object(tc)) {
		const char *name = json_string_value(json_object_get(tc, "name"));
		if (!name ||
		    strcmp(json_string_value(json_object_get(tc, "type")) ?: "", "function"))
			return bad(err, "/tool_choice",
				   "tool_choice is auto, none, required or {type: function, name}");
		json_object_set_new(
			o, "tool_choice",
			json_pack("{s:s,s:{s:s}}", "type", "function", "function", "name", name));
	}
	json_t *ptc = json_object_get(req, "parallel_tool_calls");
	if (json_is_boolean(ptc) && json_array_size(tools))
		json_object_set(o, "parallel_tool_calls", ptc);
	return AW_OK;
}

aw_err aw_llm_responses_to_chat(const json_t *req, json_t **out, aw_error *err)
{
	*out = NULL;
	aw_err e = aw_llm_wire_fields(req, known, "a Responses API", err);
	if (e)
		return e;
	json_t *v;
	v = json_object_get(req, "previous_response_id");
	if (v && !json_is_null(v))
		return bad(err, "/previous_response_id",
			   "the gateway keeps no responses: send the conversation in input");
	if (json_is_true(json_object_get(req, "store")))
		return bad(err, "/store", "the gateway keeps no responses: store must be false");
	if (json_array_size(json_object_get(req, "include")))
		return bad(err, "/include", "include is not served");
	v = json_object_get(req, "truncation");
	if (v && !json_is_null(v) && strcmp(json_string_value(v) ?: "", "disabled"))
		return bad(err, "/truncation", "truncation is disabled (the gateway cuts nothing)");
	json_t *model = json_object_get(req, "model");
	if (!json_is_string(model))
		return bad(err, "/model", "model is required");
	if (json_string_length(model) > AW_LLM_MODEL_MAX)
		return bad(err, "/model", "model is at most 128 bytes");
	json_t *o = json_pack("{s:O,s:[]}", "model", model, "messages");
	if (!o)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	json_t *msgs = json_object_get(o, "messages");
	json_t *ins = json_object_get(req, "instructions");
	if (json_is_string(ins))
		json_array_append_new(msgs,
				      json_pack("{s:s,s:O}", "role", "system", "content", ins));
	else if (ins && !json_is_null(ins))
		e = bad(err, "/instructions", "instructions is a string");
	if (!e)
		e = input_of(json_object_get(req, "input"), msgs, err);
	if (!e)
		e = tools_of(req, o, err);
	json_t *mt = json_object_get(req, "max_output_tokens");
	if (!e && mt && !json_is_null(mt))
		json_object_set(o, "max_tokens", mt);
	static const char *const same[] = {"temperature", "top_p", "user", "metadata", NULL};
	for (int k = 0; !e && same[k]; k++)
		if ((v = json_object_get(req, same[k])) && !json_is_null(v))
			json_object_set(o, same[k], v);
	const char *effort =
		json_string_value(json_object_get(json_object_get(req, "reasoning"), "effort"));
	if (!e && effort)
		json_object_set_new(o, "reasoning_effort", json_string(effort));
	json_t *fmt = json_object_get(json_object_get(req, "text"), "format");
	const char *ft = json_string_value(json_object_get(fmt, "type"));
	if (!e && ft && !strcmp(ft, "json_object")) {
		json_object_set_new(o, "response_format",
				    json_pack("{s:s}", "type", "json_object"));
	} else if (!e && ft && !strcmp(ft, "json_schema")) {
		json_t *js = json_pack("{s:s,s:O?}", "name",
				       json_string_value(json_object_get(fmt, "name")) ?: "output",
				       "schema", json_object_get(fmt, "schema"));
		json_t *strict = json_object_get(fmt, "strict");
		if (json_is_boolean(strict))
			json_object_set(js, "strict", strict);
		json_object_set_new(
			o, "response_format",
			json_pack("{s:s,s:o}", "type", "json_schema", "json_schema", js));
	} else if (!e && ft && strcmp(ft, "text")) {
		e = bad(err, "/text/format/type",
			"text.format is text, json_object or json_schema");
	}
	v = json_object_get(req, "stream");
	if (!e && v && !json_is_boolean(v))
		e = bad(err, "/stream", "stream must be a boolean");
	if (!e && json_is_true(v)) {
		json_object_set_new(o, "stream", json_true());
		json_object_set_new(o, "stream_options", json_pack("{s:b}", "include_usage", 1));
	}
	if (e) {
		json_decref(o);
		return e;
	}
	*out = o;
	return AW_OK;
}

/* ------------------------------------------------------------ answers */

static json_t *usage_of(const json_t *u)
{
	json_int_t in = json_integer_value(json_object_get(u, "prompt_tokens"));
	json_int_t out = json_integer_value(json_object_get(u, "completion_tokens"));
	json_int_t cached = json_integer_value(
		json_object_get(json_object_get(u, "prompt_tokens_details"), "cached_tokens"));
	return json_pack("{s:I,s:{s:I},s:I,s:{s:i},s:I}", "input_tokens", in,
			 "input_tokens_details", "cached_tokens", cached, "output_tokens", out,
			 "output_tokens_details", "reasoning_tokens", 0, "total_tokens", in + out);
}

/* The response object's members besides its output, usage and status. */
static json_t *skeleton(const char *id, const char *model, json_int_t created)
{
	return json_pack("{s:s,s:s,s:I,s:s,s:n,s:n,s:n,s:n,s:s,s:[],s:b,s:n,s:s,s:[],s:n,s:{s:{s:"
			 "s}},s:s,s:{},s:n}",
			 "id", id, "object", "response", "created_at", created, "status",
			 "in_progress", "error", "incomplete_details", "instructions",
			 "max_output_tokens", "model", model, "output", "parallel_tool_calls", 1,
			 "temperature", "tool_choice", "auto", "tools", "top_p", "text", "format",
			 "type", "text", "truncation", "disabled", "metadata", "usage");
}

static void set_status(json_t *r, const char *finish)
{
	int cut = finish && !strcmp(finish, "length");
	json_object_set_new(r, "status", json_string(cut ? "incomplete" : "completed"));
	json_object_set_new(r, "incomplete_details",
			    cut ? json_pack("{s:s}", "reason", "max_output_tokens") : json_null());
}

static void resp_id(const char *chat_id, char *out, size_t n)
{
	snprintf(out, n, "resp_%s",
		 chat_id && !strncmp(chat_id, "chatcmpl-", 9) ? chat_id + 9
		 : chat_id				      ? chat_id
							      : "");
}

static json_t *message_item(const char *rid, const char *text, const char *status)
{
	return json_pack("{s:s,s:s+,s:s,s:s,s:[{s:s,s:s,s:[]}]}", "type", "message", "id", "msg_",
			 rid + 5, "status", status, "role", "assistant", "content", "type",
			 "output_text", "text", text, "annotations");
}

static json_t *call_item(const char *call_id, const char *name, const char *args,
			 const char *status)
{
	return json_pack("{s:s,s:s+,s:s,s:s,s:s,s:s}", "type", "function_call", "id", "fc_",
			 call_id, "call_id", call_id, "name", name, "arguments", args, "status",
			 status);
}

aw_err aw_llm_chat_to_response(const json_t *completion, json_t **out, aw_error *err)
{
	*out = NULL;
	json_t *c0 = json_array_get(json_object_get(completion, "choices"), 0);
	json_t *msg = json_object_get(c0, "message");
	if (!json_is_object(msg))
		return aw_fail(err, AW_E_REQ_INVALID, "the answer has no message");
	char id[80];
	resp_id(json_string_value(json_object_get(completion, "id")), id, sizeof id);
	json_t *r = skeleton(id, json_string_value(json_object_get(completion, "model")) ?: "",
			     json_integer_value(json_object_get(completion, "created")));
	if (!r)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	json_t *output = json_object_get(r, "output");
	const char *text = json_string_value(json_object_get(msg, "content"));
	if (text && *text)
		json_array_append_new(output, message_item(id, text, "completed"));
	size_t i;
	json_t *tc;
	json_array_foreach (json_object_get(msg, "tool_calls"), i, tc) {
		json_t *fn = json_object_get(tc, "function");
		json_array_append_new(
			output, call_item(json_string_value(json_object_get(tc, "id")) ?: "",
					  json_string_value(json_object_get(fn, "name")) ?: "",
					  json_string_value(json_object_get(fn, "arguments")) ?: "",
					  "completed"));
	}
	set_status(r, json_string_value(json_object_get(c0, "finish_reason")));
	json_object_set_new(r, "usage", usage_of(json_object_get(completion, "usage")));
	*out = r;
	return AW_OK;
}

/* ------------------------------------------------------------ stream */

void aw_resp_stream_init(aw_resp_stream *s, const char *model)
{
	memset(s, 0, sizeof *s);
	s->open = -1;
	(void)!AW_STR_COPY(s->model, model); /* aw_llm_responses_to_chat bounds it */
}

void aw_resp_stream_free(aw_resp_stream *s)
{
	json_decref(s->resp);
	json_decref(s->usage);
	aw_buf_free(&s->acc);
	s->resp = s->usage = NULL;
}

static aw_err event(aw_resp_stream *s, aw_buf *out, const char *type, json_t *data)
{
	if (!data)
		return AW_E_NOMEM;
	json_object_set_new(data, "type", json_string(type));
	json_object_set_new(data, "sequence_number", json_integer(s->seq++));
	char *d = json_dumps(data, JSON_COMPACT);
	json_decref(data);
	if (!d)
		return AW_E_NOMEM;
	aw_buf_addf(out, "event: %s\ndata: ", type);
	aw_buf_adds(out, d);
	aw_buf_adds(out, "\n\n");
	free(d);
	return aw_buf_err(out);
}

static aw_err start(aw_resp_stream *s, const json_t *chunk, aw_buf *out)
{
	if (s->resp)
		return AW_OK;
	resp_id(json_string_value(json_object_get(chunk, "id")), s->id, sizeof s->id);
	s->resp = skeleton(s->id, s->model, json_integer_value(json_object_get(chunk, "created")));
	s->acc = (aw_buf)AW_BUF_INIT(16u << 20);
	aw_err e = event(s, out, "response.created", json_pack("{s:O}", "response", s->resp));
	return e ? e
		 : event(s, out, "response.in_progress", json_pack("{s:O}", "response", s->resp));
}

/* The open item's done events, and the item as it ended into the output. */
static aw_err close_item(aw_resp_stream *s, aw_buf *out)
{
	if (s->open < 0)
		return AW_OK;
	int oi = s->open;
	s->open = -1;
	const char *acc = aw_buf_str(&s->acc);
	json_t *item;
	aw_err e;
	if (s->kind < 0) {
		item = message_item(s->id, acc, "completed");
		const char *iid = json_string_value(json_object_get(item, "id"));
		e = event(s, out, "response.output_text.done",
			  json_pack("{s:s,s:i,s:i,s:s}", "item_id", iid, "output_index", oi,
				    "content_index", 0, "text", acc));
		if (!e)
			e = event(s, out, "response.content_part.done",
				  json_pack("{s:s,s:i,s:i,s:O}", "item_id", iid, "output_index", oi,
					    "content_index", 0, "part",
					    json_array_get(json_object_get(item, "content"), 0)));
	} else {
		item = call_item(s->call_id, s->name, acc, "completed");
		e = event(s, out, "response.function_call_arguments.done",
			  json_pack("{s:s,s:i,s:s}", "item_id",
				    json_string_value(json_object_get(item, "id")), "output_index",
				    oi, "arguments", acc));
	}
	if (!e)
		e = event(s, out, "response.output_item.done",
			  json_pack("{s:i,s:O}", "output_index", oi, "item", item));
	json_array_append_new(json_object_get(s->resp, "output"), item);
	aw_buf_truncate(&s->acc, 0);
	return e;
}

static aw_err open_item(aw_resp_stream *s, int kind, const char *call_id, const char *name,
			aw_buf *out)
{
	if (s->open >= 0 && s->kind == kind && kind < 0)
		return AW_OK;
	aw_err e = close_item(s, out);
	if (e)
		return e;
	s->open = s->items++;
	s->kind = kind;
	if (kind < 0) {
		json_t *item = message_item(s->id, "", "in_progress");
		json_t *part = json_incref(json_array_get(json_object_get(item, "content"), 0));
		json_object_set_new(item, "content", json_array());
		const char *iid = json_string_value(json_object_get(item, "id"));
		char idb[96];
		if (AW_STR_COPY(idb, iid) < 0) { /* "msg_" and our response id: fits */
			json_decref(item);
			json_decref(part);
			return AW_E_INTERNAL;
		}
		e = event(s, out, "response.output_item.added",
			  json_pack("{s:i,s:o}", "output_index", s->open, "item", item));
		if (!e)
			e = event(s, out, "response.content_part.added",
				  json_pack("{s:s,s:i,s:i,s:o}", "item_id", idb, "output_index",
					    s->open, "content_index", 0, "part", part));
		else
			json_decref(part);
		return e;
	}
	if (AW_STR_COPY(s->call_id, call_id) < 0 || AW_STR_COPY(s->name, name) < 0)
		return AW_E_LLM_BROKEN; /* the upstream's tool call: whole, or refused */
	return event(s, out, "response.output_item.added",
		     json_pack("{s:i,s:o}", "output_index", s->open, "item",
			       call_item(s->call_id, s->name, "", "in_progress")));
}

static aw_err finish(aw_resp_stream *s, aw_buf *out)
{
	aw_err e = close_item(s, out);
	set_status(s->resp, s->finish[0] ? s->finish : NULL);
	json_object_set_new(s->resp, "usage",
			    s->usage ? usage_of(s->usage) : json_pack("{s:i}", "output_tokens", 0));
	int cut = !strcmp(json_string_value(json_object_get(s->resp, "status")), "incomplete");
	if (!e)
		e = event(s, out, cut ? "response.incomplete" : "response.completed",
			  json_pack("{s:O}", "response", s->resp));
	s->done = 1;
	return e;
}

aw_err aw_llm_chunk_to_responses(const char *data, size_t len, aw_resp_stream *s, aw_buf *out)
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
	aw_err e = start(s, j, out);
	json_t *er = json_object_get(j, "error");
	if (!e && er) { /* the gateway's last event: a broken stream, a cut */
		json_object_set_new(s->resp, "status", json_string("failed"));
		json_object_set_new(
			s->resp, "error",
			json_pack("{s:s,s:s}", "code",
				  json_string_value(json_object_get(er, "code")) ?: "E-LLM-004",
				  "message",
				  json_string_value(json_object_get(er, "message"))
					  ?: "the stream broke"));
		e = event(s, out, "response.failed", json_pack("{s:O}", "response", s->resp));
		s->done = 1;
		json_decref(j);
		return e;
	}
	json_t *u = json_object_get(j, "usage");
	if (json_is_object(u)) {
		json_decref(s->usage);
		s->usage = json_deep_copy(u);
	}
	json_t *c0 = json_array_get(json_object_get(j, "choices"), 0);
	json_t *d = json_object_get(c0, "delta");
	const char *text = json_string_value(json_object_get(d, "content"));
	if (!e && text && *text) {
		e = open_item(s, -1, NULL, NULL, out);
		if (!e)
			e = aw_buf_adds(&s->acc, text);
		if (!e)
			e = event(s, out, "response.output_text.delta",
				  json_pack("{s:s+,s:i,s:i,s:s}", "item_id", "msg_", s->id + 5,
					    "output_index", s->open, "content_index", 0, "delta",
					    text));
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
		if (id || s->open < 0 || s->kind != k)
			e = open_item(s, k, id, json_string_value(json_object_get(fn, "name")),
				      out);
		const char *args = json_string_value(json_object_get(fn, "arguments"));
		if (!e && args && *args) {
			e = aw_buf_adds(&s->acc, args);
			if (!e)
				e = event(s, out, "response.function_call_arguments.delta",
					  json_pack("{s:s+,s:i,s:s}", "item_id", "fc_", s->call_id,
						    "output_index", s->open, "delta", args));
		}
	}
	const char *fin = json_string_value(json_object_get(c0, "finish_reason"));
	if (!e && fin)
		e = AW_STR_COPY(s->finish, fin) < 0 ? AW_E_LLM_BROKEN : close_item(s, out);
	json_decref(j);
	return e;
}
