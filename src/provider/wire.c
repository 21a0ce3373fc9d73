/*
 * wire.c - OpenAI chat completion requests checked, translated to Ollama's
 * /api/chat and back (see llm_wire.h). The request's members are an
 * allow-list: a field the gateway does not know may be one an upstream
 * bills (n_predict, web_search_options, prediction, audio: each made the
 * budget under-count), so it is refused (E-REQ-004) rather than passed
 * through blind; a known field that bills in a way the budget cannot price
 * (audio, web search, predicted outputs, a paid service tier, audio or file
 * parts) is refused with E-BUDGET-005. A new API field takes a gateway
 * release: the price of a budget that holds.
 */
#include "awooop/llm_wire.h"

#include <stdio.h>
#include <string.h>

#include "awooop/json.h"
#include "awooop/str.h"

static aw_err bad(aw_error *err, const char *where, const char *msg)
{
	return aw_fail_at(err, AW_E_REQ_INVALID, where, "%s", msg);
}

static const char *const roles[] = {"system",	 "user",     "assistant", "tool",
				    "developer", "function", NULL};

static int role_ok(const char *r)
{
	for (int i = 0; roles[i]; i++)
		if (!strcmp(r, roles[i]))
			return 1;
	return 0;
}

static aw_err unpriced(aw_error *err, const char *where, const char *msg)
{
	return aw_fail_at(err, AW_E_BUDGET_UNPRICED, where, "%s", msg);
}

/* The members of a chat completion request the gateway knows, and so the
 * budget prices (the prompt's, the answer's) or knows not to bill. */
static const char *const known[] = {"model",
				    "messages",
				    "stream",
				    "stream_options",
				    "response_format",
				    "max_tokens",
				    "max_completion_tokens",
				    "n",
				    "tools",
				    "tool_choice",
				    "parallel_tool_calls",
				    "functions",
				    "function_call",
				    "temperature",
				    "top_p",
				    "seed",
				    "stop",
				    "presence_penalty",
				    "frequency_penalty",
				    "logit_bias",
				    "logprobs",
				    "top_logprobs",
				    "user",
				    "metadata",
				    "store",
				    "reasoning_effort",
				    "verbosity",
				    "prompt_cache_key",
				    "safety_identifier",
				    "service_tier",
				    "modalities",
				    "audio",
				    "prediction",
				    "web_search_options",
				    NULL};

/* Fields the budget cannot price: what each would bill besides tokens. */
static const char *const billed_apart[][2] = {
	{"audio", "audio output is billed in audio tokens the budget does not price"},
	{"prediction", "predicted outputs bill rejected prediction tokens beyond max_tokens"},
	{"web_search_options", "web search is billed per call and its results as prompt"},
	{NULL, NULL}};

static aw_err check_max(const json_t *req, const char *name, aw_error *err)
{
	json_t *v = json_object_get(req, name);
	char where[32];
	snprintf(where, sizeof where, "/%s", name);
	if (v && !json_is_null(v) &&
	    (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 100000000))
		return bad(err, where,
			   "must be an integer of 0..100000000 (not a string or a real)");
	return AW_OK;
}

/* A message's content parts: text, image_url (priced by the budget) and an
 * assistant's refusal; audio and file parts are refused. */
static aw_err check_parts(const json_t *parts, const char *where, aw_error *err)
{
	size_t k;
	json_t *part;
	json_array_foreach (parts, k, part) {
		char w[96];
		snprintf(w, sizeof w, "%s/content/%zu", where, k);
		const char *type = json_string_value(json_object_get(part, "type"));
		if (!json_is_object(part) || !type)
			return bad(err, w, "a content part is an object with a type");
		if (!strcmp(type, "text") || !strcmp(type, "refusal")) {
			if (!json_is_string(json_object_get(part, type)))
				return bad(err, w, "a text part holds its text as a string");
		} else if (!strcmp(type, "image_url")) {
			json_t *iu = json_object_get(part, "image_url");
			const char *d = json_string_value(json_object_get(iu, "detail"));
			if (!json_is_string(json_object_get(iu, "url")))
				return bad(err, w,
					   "an image_url part is {\"image_url\": {\"url\"}}");
			if (json_object_get(iu, "detail") &&
			    (!d || (strcmp(d, "low") && strcmp(d, "high") && strcmp(d, "auto"))))
				return bad(err, w, "detail is low, high or auto");
		} else if (!strcmp(type, "input_audio") || !strcmp(type, "file")) {
			return unpriced(err, w,
					"audio and file parts are billed in ways the budget cannot "
					"price (audio tokens, PDF pages as images)");
		} else {
			return bad(err, w, "content parts are text, image_url or refusal");
		}
	}
	return AW_OK;
}

/* Members the upstream may bill besides messages and the answer: refused or
 * checked (n, the output bounds, service tier, modalities). */
static aw_err check_billing(const json_t *req, aw_llm_req *out, aw_error *err)
{
	const char *key;
	json_t *v;
	json_object_foreach ((json_t *)req, key, v) {
		int ok = 0;
		for (int i = 0; known[i] && !ok; i++)
			ok = !strcmp(key, known[i]);
		if (!ok) {
			char where
				[160]; /* longer than aw_error.where: aw_fail_at shows it shortened with "..." */
			snprintf(where, sizeof where, "/%s", key);
			return aw_fail_at(err, AW_E_REQ_UNKNOWN_FIELD, where,
					  "%.64s is not a chat completion field this gateway "
					  "knows: an upstream may bill it, so it is not passed on",
					  key);
		}
	}
	for (int i = 0; billed_apart[i][0]; i++) {
		char where[32];
		snprintf(where, sizeof where, "/%s", billed_apart[i][0]);
		v = json_object_get(req, billed_apart[i][0]);
		if (v && !json_is_null(v))
			return unpriced(err, where, billed_apart[i][1]);
	}
	size_t i;
	json_array_foreach (json_object_get(req, "modalities"), i, v)
		if (!json_is_string(v) || strcmp(json_string_value(v), "text"))
			return unpriced(err, "/modalities",
					"only text output is priced (audio is billed apart)");
	v = json_object_get(req, "modalities");
	if (v && !json_is_null(v) && !json_is_array(v))
		return bad(err, "/modalities", "modalities is an array");
	v = json_object_get(req, "service_tier");
	if (v && !json_is_null(v) &&
	    (!json_is_string(v) ||
	     (strcmp(json_string_value(v), "auto") && strcmp(json_string_value(v), "default"))))
		return unpriced(
			err, "/service_tier",
			"service_tier is auto or default: other tiers bill at other prices");
	aw_err e = check_max(req, "max_tokens", err);
	if (!e)
		e = check_max(req, "max_completion_tokens", err);
	if (e)
		return e;
	if (json_is_integer(json_object_get(req, "max_tokens")) &&
	    json_is_integer(json_object_get(req, "max_completion_tokens")))
		return bad(err, "/max_tokens",
			   "max_tokens and max_completion_tokens: send one (the budget clamps it)");
	v = json_object_get(req, "n");
	out->n = 1;
	if (v && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 128)
			return bad(err, "/n", "n must be an integer of 1..128");
		out->n = (int)json_integer_value(v);
	}
	static const char *const arrays[] = {"tools", "functions", NULL};
	for (int k = 0; arrays[k]; k++) {
		char where[32];
		snprintf(where, sizeof where, "/%s", arrays[k]);
		v = json_object_get(req, arrays[k]);
		if (v && !json_is_null(v) && !json_is_array(v))
			return bad(err, where, "must be an array");
	}
	return AW_OK;
}

aw_err aw_llm_req_check(const json_t *req, aw_llm_req *out, aw_error *err)
{
	memset(out, 0, sizeof *out);
	if (!json_is_object(req))
		return bad(err, "", "the body must be a JSON object");
	aw_err e = aw_json_check_numbers(req, err);
	if (e)
		return e;
	json_t *model = json_object_get(req, "model");
	if (!json_is_string(model) || !json_string_length(model) || json_string_length(model) > 256)
		return bad(err, "/model", "model must be a string of 1..256 bytes");
	out->model = json_string_value(model);
	json_t *msgs = json_object_get(req, "messages");
	if (!json_is_array(msgs) || !json_array_size(msgs))
		return bad(err, "/messages", "messages must be a non-empty array");
	size_t i;
	json_t *m;
	json_array_foreach (msgs, i, m) {
		char where[48];
		snprintf(where, sizeof where, "/messages/%zu", i);
		json_t *role = json_object_get(m, "role");
		if (!json_is_object(m) || !json_is_string(role) ||
		    !role_ok(json_string_value(role)))
			return bad(err, where,
				   "each message is an object whose role is system, user, "
				   "assistant, tool or developer");
		json_t *c = json_object_get(m, "content");
		if (c && !json_is_string(c) && !json_is_array(c) && !json_is_null(c))
			return bad(err, where,
				   "content must be a string, an array of parts or null");
		if (json_is_array(c) && (e = check_parts(c, where, err)))
			return e;
		json_t *audio = json_object_get(m, "audio");
		if (audio && !json_is_null(audio)) {
			char w[64];
			snprintf(w, sizeof w, "%s/audio", where);
			return unpriced(err, w,
					"an earlier audio answer is billed in audio tokens the "
					"budget does not price");
		}
	}
	if ((e = check_billing(req, out, err)))
		return e;
	json_t *st = json_object_get(req, "stream");
	if (st && !json_is_boolean(st) && !json_is_null(st))
		return bad(err, "/stream", "stream must be a boolean");
	out->stream = json_is_true(st);
	json_t *so = json_object_get(req, "stream_options");
	if (so && !json_is_null(so)) {
		json_t *iu = json_object_get(so, "include_usage");
		if (!json_is_object(so) || (iu && !json_is_boolean(iu)))
			return bad(err, "/stream_options",
				   "stream_options must be {\"include_usage\": boolean}");
		out->include_usage = json_is_true(iu);
	}
	json_t *rf = json_object_get(req, "response_format");
	if (rf && !json_is_null(rf)) {
		const char *type = json_string_value(json_object_get(rf, "type"));
		if (!type)
			return bad(
				err, "/response_format/type",
				"response_format needs a type: text, json_object or json_schema");
		if (!strcmp(type, "json_schema")) {
			json_t *js = json_object_get(rf, "json_schema");
			json_t *schema = json_object_get(js, "schema");
			if (!json_is_object(schema))
				return bad(err, "/response_format/json_schema/schema",
					   "json_schema.schema must be a JSON Schema object");
			out->schema = schema;
		} else if (!strcmp(type, "json_object")) {
			out->json_mode = 1;
		} else if (strcmp(type, "text") != 0) {
			return bad(err, "/response_format/type",
				   "response_format type must be text, json_object or json_schema");
		}
	}
	return AW_OK;
}

/* A message's content as one string: text parts joined; other parts (images)
 * are refused by the caller's translator. */
static aw_err text_of(const json_t *c, json_t **out, aw_error *err, const char *where)
{
	if (!c || json_is_null(c)) {
		*out = json_string("");
		return AW_OK;
	}
	if (json_is_string(c)) {
		*out = json_incref((json_t *)c);
		return AW_OK;
	}
	aw_buf b = AW_BUF_INIT(16u << 20);
	size_t i;
	json_t *part;
	json_array_foreach (c, i, part) {
		const char *type = json_string_value(json_object_get(part, "type"));
		const char *text = json_string_value(json_object_get(part, "text"));
		if (!type || strcmp(type, "text") || !text) {
			aw_buf_free(&b);
			return bad(err, where, "an Ollama upstream takes text content parts only");
		}
		aw_buf_adds(&b, text);
	}
	if (aw_buf_err(&b)) {
		aw_buf_free(&b);
		return aw_fail(err, AW_E_LIMIT, "message content over 16 MiB");
	}
	*out = json_string(aw_buf_str(&b));
	aw_buf_free(&b);
	return AW_OK;
}

/* OpenAI tool_calls (arguments a JSON string) as Ollama's (an object). */
static json_t *tool_calls_to_ollama(const json_t *tcs)
{
	json_t *out = json_array();
	size_t i;
	json_t *tc;
	json_array_foreach (tcs, i, tc) {
		json_t *fn = json_object_get(tc, "function");
		const char *args = json_string_value(json_object_get(fn, "arguments"));
		json_t *a = args ? json_loads(args, 0, NULL) : NULL;
		json_array_append_new(
			out, json_pack("{s:{s:O?,s:o}}", "function", "name",
				       json_object_get(fn, "name"), "arguments",
				       json_is_object(a) ? a : (json_decref(a), json_object())));
	}
	return out;
}

aw_err aw_llm_to_ollama(const json_t *req, const char *model, int stream, json_t **out,
			aw_error *err)
{
	*out = NULL;
	json_t *nv = json_object_get(req, "n");
	if (json_is_integer(nv) && json_integer_value(nv) > 1) /* one answer, never n */
		return aw_fail_at(err, AW_E_LLM_WIRE, "/n",
				  "n > 1 has no equivalent (Ollama /api/chat upstream)");
	json_t *o = json_pack("{s:s,s:b,s:[]}", "model", model, "stream", stream, "messages");
	if (!o)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	json_t *msgs = json_object_get(o, "messages");
	size_t i;
	json_t *m;
	aw_err e = AW_OK;
	json_array_foreach (json_object_get(req, "messages"), i, m) {
		char where[48];
		snprintf(where, sizeof where, "/messages/%zu/content", i);
		json_t *text = NULL;
		if ((e = text_of(json_object_get(m, "content"), &text, err, where)))
			break;
		const char *role = json_string_value(json_object_get(m, "role"));
		json_t *om =
			json_pack("{s:s,s:o}", "role", !strcmp(role, "developer") ? "system" : role,
				  "content", text);
		json_t *tcs = json_object_get(m, "tool_calls");
		if (om && json_is_array(tcs))
			json_object_set_new(om, "tool_calls", tool_calls_to_ollama(tcs));
		json_array_append_new(msgs, om);
	}
	json_t *tools = json_object_get(req, "tools");
	if (!e && json_is_array(tools))
		json_object_set(o, "tools", tools);
	json_t *rf = json_object_get(req, "response_format");
	const char *type = json_string_value(json_object_get(rf, "type"));
	if (!e && type && !strcmp(type, "json_object"))
		json_object_set_new(o, "format", json_string("json"));
	else if (!e && type && !strcmp(type, "json_schema"))
		json_object_set(o, "format",
				json_object_get(json_object_get(rf, "json_schema"), "schema"));
	json_t *opts = json_object();
	static const char *const same[] = {
		"temperature",	     "top_p", "seed", "stop", "presence_penalty",
		"frequency_penalty", NULL};
	for (int k = 0; same[k]; k++) {
		json_t *v = json_object_get(req, same[k]);
		if (v && !json_is_null(v))
			json_object_set(opts, same[k], v);
	}
	json_t *mt = json_object_get(req, "max_completion_tokens");
	if (!json_is_integer(mt))
		mt = json_object_get(req, "max_tokens");
	if (json_is_integer(mt))
		json_object_set(opts, "num_predict", mt);
	if (json_object_size(opts))
		json_object_set_new(o, "options", opts);
	else
		json_decref(opts);
	if (e) {
		json_decref(o);
		return e;
	}
	*out = o;
	return AW_OK;
}

static const char *finish_of(const json_t *resp)
{
	const char *r = json_string_value(json_object_get(resp, "done_reason"));
	if (r && !strcmp(r, "length"))
		return "length";
	return json_array_size(json_object_get(json_object_get(resp, "message"), "tool_calls"))
		       ? "tool_calls"
		       : "stop";
}

/* Ollama's tool calls as OpenAI's (ids made up, arguments as a JSON string). */
static json_t *tool_calls_from_ollama(const json_t *tcs, const char *id)
{
	json_t *out = json_array();
	size_t i;
	json_t *tc;
	json_array_foreach (tcs, i, tc) {
		json_t *fn = json_object_get(tc, "function");
		char *args = json_dumps(json_object_get(fn, "arguments"),
					JSON_COMPACT | JSON_ENCODE_ANY);
		char cid[80];
		snprintf(cid, sizeof cid, "call_%s_%zu", id + (strncmp(id, "chatcmpl-", 9) ? 0 : 9),
			 i);
		json_array_append_new(out,
				      json_pack("{s:I,s:s,s:s,s:{s:O?,s:s}}", "index",
						(json_int_t)i, "id", cid, "type", "function",
						"function", "name", json_object_get(fn, "name"),
						"arguments", args ? args : "{}"));
		free(args);
	}
	return out;
}

static void read_counts(const json_t *resp, aw_llm_stream_state *st)
{
	json_t *pi = json_object_get(resp, "prompt_eval_count");
	json_t *po = json_object_get(resp, "eval_count");
	if (json_is_integer(pi) || json_is_integer(po)) {
		st->tokens_in = json_integer_value(pi);
		st->tokens_out = json_integer_value(po);
		st->usage_seen = 1;
	}
}

static json_t *usage_json(const aw_llm_stream_state *st)
{
	return json_pack("{s:I,s:I,s:I}", "prompt_tokens", (json_int_t)st->tokens_in,
			 "completion_tokens", (json_int_t)st->tokens_out, "total_tokens",
			 (json_int_t)(st->tokens_in + st->tokens_out));
}

aw_err aw_llm_from_ollama(const json_t *resp, aw_llm_stream_state *st, json_t **out, aw_error *err)
{
	json_t *msg = json_object_get(resp, "message");
	const char *content = json_string_value(json_object_get(msg, "content"));
	if (!json_is_object(msg) || !content)
		return aw_fail(err, AW_E_REQ_INVALID, "the Ollama answer has no message content");
	read_counts(resp, st);
	json_t *m = json_pack("{s:s,s:s}", "role", "assistant", "content", content);
	json_t *tcs = json_object_get(msg, "tool_calls");
	if (m && json_array_size(tcs))
		json_object_set_new(m, "tool_calls", tool_calls_from_ollama(tcs, st->id));
	*out = json_pack("{s:s,s:s,s:I,s:s,s:[{s:i,s:o,s:s}],s:o}", "id", st->id, "object",
			 "chat.completion", "created", (json_int_t)st->created, "model", st->model,
			 "choices", "index", 0, "message", m, "finish_reason", finish_of(resp),
			 "usage", usage_json(st));
	return *out ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
}

aw_err aw_llm_sse_data(aw_buf *out, json_t *ev)
{
	char *s = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
	json_decref(ev);
	if (!s)
		return AW_E_NOMEM;
	aw_buf_adds(out, "data: ");
	aw_buf_adds(out, s);
	aw_buf_adds(out, "\n\n");
	free(s);
	return aw_buf_err(out);
}

json_t *aw_llm_chunk(const aw_llm_stream_state *st, json_t *delta, const char *finish)
{
	json_t *c = json_pack("{s:s,s:s,s:I,s:s,s:[{s:i,s:o,s:s?}]}", "id", st->id, "object",
			      "chat.completion.chunk", "created", (json_int_t)st->created, "model",
			      st->model, "choices", "index", 0, "delta", delta, "finish_reason",
			      finish);
	if (c && !finish) /* OpenAI sends "finish_reason": null until the end */
		json_object_set_new(json_array_get(json_object_get(c, "choices"), 0),
				    "finish_reason", json_null());
	return c;
}

static aw_err tail(aw_llm_stream_state *st, const char *finish, int include_usage, aw_buf *out)
{
	aw_err e = aw_llm_sse_data(out, aw_llm_chunk(st, json_object(), finish));
	if (!e && include_usage) {
		json_t *u = json_pack("{s:s,s:s,s:I,s:s,s:[],s:o}", "id", st->id, "object",
				      "chat.completion.chunk", "created", (json_int_t)st->created,
				      "model", st->model, "choices", "usage", usage_json(st));
		e = aw_llm_sse_data(out, u);
	}
	if (!e)
		e = aw_buf_adds(out, "data: [DONE]\n\n");
	return e;
}

aw_err aw_llm_chunk_from_ollama(const char *line, size_t len, aw_llm_stream_state *st,
				int include_usage, aw_buf *out, int *done, aw_error *err)
{
	*done = 0;
	json_error_t je;
	json_t *j = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(j)) {
		json_decref(j);
		return aw_fail(err, AW_E_REQ_JSON, "an Ollama stream line is not a JSON object");
	}
	aw_err e = AW_OK;
	const char *uerr = json_string_value(json_object_get(j, "error"));
	if (uerr) {
		e = aw_fail(err, AW_E_REQ_INVALID, "the upstream reported an error mid-stream");
		goto out;
	}
	json_t *msg = json_object_get(j, "message");
	const char *content = json_string_value(json_object_get(msg, "content"));
	json_t *tcs = json_object_get(msg, "tool_calls");
	if ((content && *content) || json_array_size(tcs) || !st->role_sent) {
		json_t *d = json_object();
		if (!st->role_sent)
			json_object_set_new(d, "role", json_string("assistant"));
		st->role_sent = 1;
		json_object_set_new(d, "content", json_string(content ? content : ""));
		if (json_array_size(tcs))
			json_object_set_new(d, "tool_calls", tool_calls_from_ollama(tcs, st->id));
		if ((e = aw_llm_sse_data(out, aw_llm_chunk(st, d, NULL))))
			goto out;
	}
	if (json_is_true(json_object_get(j, "done"))) {
		read_counts(j, st);
		*done = 1;
		e = tail(st, finish_of(j), include_usage, out);
	}
out:
	json_decref(j);
	if (e && !err->err)
		aw_fail(err, e, "cannot write the stream");
	return e;
}

static void usage_into(const json_t *u, aw_llm_stream_state *st)
{
	json_t *pi = json_object_get(u, "prompt_tokens");
	json_t *po = json_object_get(u, "completion_tokens");
	if (json_is_integer(pi) || json_is_integer(po)) {
		st->tokens_in = json_integer_value(pi);
		st->tokens_out = json_integer_value(po);
		st->usage_seen = 1;
	}
}

aw_err aw_llm_sse_event(const char *data, size_t len, aw_llm_stream_state *st, int include_usage,
			int *keep, int *done, aw_error *err)
{
	*keep = 1;
	*done = 0;
	if (len == 6 && !memcmp(data, "[DONE]", 6)) {
		*done = 1;
		return AW_OK;
	}
	json_error_t je;
	json_t *j = json_loadb(data, len, 0, &je);
	if (!json_is_object(j)) {
		json_decref(j);
		return aw_fail(err, AW_E_REQ_JSON, "an upstream event is not a JSON object");
	}
	aw_err e = AW_OK;
	if (json_object_get(j, "error"))
		e = aw_fail(err, AW_E_REQ_INVALID, "the upstream reported an error mid-stream");
	json_t *u = json_object_get(j, "usage");
	if (json_is_object(u)) {
		usage_into(u, st);
		if (!include_usage && json_array_size(json_object_get(j, "choices")) == 0)
			*keep = 0;
	}
	json_decref(j);
	return e;
}

const char *aw_llm_completion_usage(const json_t *resp, aw_llm_stream_state *st)
{
	usage_into(json_object_get(resp, "usage"), st);
	json_t *c0 = json_array_get(json_object_get(resp, "choices"), 0);
	return json_string_value(json_object_get(json_object_get(c0, "message"), "content"));
}

aw_err aw_llm_completion_as_sse(const json_t *resp, int include_usage, aw_buf *out)
{
	aw_llm_stream_state st = {0};
	if (AW_STR_COPY(st.id, json_string_value(json_object_get(resp, "id"))) < 0)
		return AW_E_LLM_BROKEN; /* an id we did not make: never a cut one */
	st.created = json_integer_value(json_object_get(resp, "created"));
	st.model = json_string_value(json_object_get(resp, "model")) ?: "";
	aw_llm_completion_usage(resp, &st);
	json_t *c0 = json_array_get(json_object_get(resp, "choices"), 0);
	json_t *msg = json_object_get(c0, "message");
	json_t *d = json_pack("{s:s,s:O?}", "role", "assistant", "content",
			      json_object_get(msg, "content"));
	if (d && json_object_get(msg, "tool_calls"))
		json_object_set(d, "tool_calls", json_object_get(msg, "tool_calls"));
	aw_err e = aw_llm_sse_data(out, aw_llm_chunk(&st, d, NULL));
	const char *fin = json_string_value(json_object_get(c0, "finish_reason"));
	return e ? e : tail(&st, fin ? fin : "stop", include_usage, out);
}

aw_err aw_llm_wire_fields(const json_t *req, const char *const *fields, const char *api,
			  aw_error *err)
{
	if (!json_is_object(req))
		return bad(err, "", "the body must be a JSON object");
	aw_err e = aw_json_check_numbers(req, err);
	if (!e && (e = aw_json_only(req, fields, err))) {
		char where[sizeof err->where];
		AW_COPY_ARRAY(where, err->where);
		aw_fail_at(err, e, where,
			   "%.200s is not %s field this gateway knows: an upstream may bill it, "
			   "so it is not passed on",
			   where + 1, api);
	}
	return e;
}

aw_err aw_llm_embed_check(const json_t *req, aw_llm_req *out, aw_error *err)
{
	static const char *const fields[] = {"model",	   "input", "encoding_format",
					     "dimensions", "user",  NULL};
	memset(out, 0, sizeof *out);
	out->embeddings = 1;
	out->n = 1;
	aw_err e = aw_llm_wire_fields(req, fields, "an embeddings", err);
	if (e)
		return e;
	json_t *v;
	json_t *model = json_object_get(req, "model");
	if (!json_is_string(model) || !json_string_length(model) || json_string_length(model) > 256)
		return bad(err, "/model", "model must be a string of 1..256 bytes");
	out->model = json_string_value(model);
	json_t *in = json_object_get(req, "input");
	int shape = 0; /* 1 strings, 2 token ids, 3 arrays of token ids */
	if (json_is_string(in)) {
		shape = 1;
	} else if (json_is_array(in) && json_array_size(in) && json_array_size(in) <= 2048) {
		size_t i;
		json_t *x;
		json_array_foreach (in, i, x) {
			int s = json_is_string(x)    ? 1
				: json_is_integer(x) ? 2
				: json_is_array(x)   ? 3
						     : 0;
			if (!s || (shape && s != shape))
				return bad(
					err, "/input",
					"input is a string, or an array of strings, of token ids "
					"or of arrays of token ids (one kind)");
			shape = s;
			size_t k;
			json_t *t;
			json_array_foreach (x, k, t)
				if (!json_is_integer(t) || json_integer_value(t) < 0)
					return bad(err, "/input", "token ids are integers");
			if (s == 2 && json_integer_value(x) < 0)
				return bad(err, "/input", "token ids are integers");
		}
	}
	if (!shape)
		return bad(err, "/input",
			   "input is a non-empty string or array (at most 2048 inputs)");
	const char *ef = json_string_value(json_object_get(req, "encoding_format"));
	if (json_object_get(req, "encoding_format") &&
	    (!ef || (strcmp(ef, "float") && strcmp(ef, "base64"))))
		return bad(err, "/encoding_format", "encoding_format is float or base64");
	v = json_object_get(req, "dimensions");
	if (v &&
	    (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 100000))
		return bad(err, "/dimensions", "dimensions is an integer of 1..100000");
	if (json_object_get(req, "user") && !json_is_string(json_object_get(req, "user")))
		return bad(err, "/user", "user is a string");
	return AW_OK;
}

long long aw_llm_embed_bound(const json_t *req)
{
	json_t *in = json_object_get(req, "input");
	if (json_is_string(in))
		return (long long)json_string_length(in);
	long long n = 0;
	size_t i;
	json_t *x;
	json_array_foreach (in, i, x)
		n += json_is_string(x)	? (long long)json_string_length(x)
		     : json_is_array(x) ? (long long)json_array_size(x)
					: 1;
	return n;
}
