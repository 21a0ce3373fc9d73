/*
 * fake_llm.c - a double for LLM upstreams, for tests and bench/llm: one
 * process answers both an OpenAI-compatible API (POST /v1/chat/completions,
 * SSE when streaming) and Ollama's native API (POST /api/chat, NDJSON).
 *
 * How it answers is chosen by directives in the requested model name,
 * "name;key=value;...":
 *   tokens=N    completion tokens (default 8), one per chunk when streaming
 *   ttft=MS     delay before the first byte (default 0)
 *   tps=N       tokens per second when streaming (default: no delay)
 *   status=N    answer HTTP N with an error document
 *   drop=K      close the connection after K chunks (mid-stream break)
 *   hang=1      never answer (first-byte timeout)
 *   invalid=N   answer {"answer":"not a number"} while the request holds
 *               fewer than N assistant messages, then {"answer":42}
 *   badjson=1   answer a body that is not JSON
 * A request that offers tools is answered (not streamed) with a call of
 * the first tool.
 *   turns=N     a multi-turn agent (with tools offered): while the request
 *               holds fewer than N tool messages (role "tool") it asks for
 *               one tool - round robin over the offered tools by how many
 *               results it holds, or always the one named by pick=NAME
 *               (';'-free) - with arguments filling the tool's required
 *               properties (the first of its "enum" or "examples", else a
 *               string "q<K>", a number K+1, K the results held); then a final answer "final: R1 | R2 | ..." quoting
 *               the tool messages' text (with response_format: the JSON
 *               {"answer": that text}). Each request is counted per
 *               conversation and turn in GET /stats "turns":
 *               {"<first user message>#<tool results held>": times asked},
 *               and "answered": the same counting only the answers whose
 *               client was still connected when they were sent (a caller
 *               killed while it waited is asked, not answered), and
 *               "billed_answered" their usage's tokens (prompt + completion),
 *               "answered_at" {key: [epoch ms of each answer]}.
 *   nousage=1   never send the usage chunk, even when asked
 *   ignoremax=1 an upstream that ignores max_tokens (answers tokens=N)
 * Answers stop at the request's max_tokens (max_completion_tokens,
 * options.num_predict), as a model does.
 *
 * It bills like OpenAI: usage.prompt_tokens counts 3 per message + 3, the
 * messages' text (every string member, text parts, tool calls and legacy
 * function calls as JSON) at a token per 4 bytes, the request's tools,
 * functions, tool_choice, function_call and response_format as JSON, and
 * images at OpenAI's tile price (85 + 170 per 512 px tile, 85 at "low";
 * a PNG data URL's own size, else 2048 x 768: 8 tiles, the most);
 * completion_tokens is n x the answer's tokens and n choices come back.
 *   echo=1      with status=N: the error message quotes the Authorization
 *               header received (an upstream that leaks the credential)
 * The process-wide mode (POST /control {"status": N} , 0 = normal) makes
 * every chat answer N, to take a whole host down and up.
 *
 * GET /stats: {"requests", "connections" (that carried a chat request), "auth_ok", "auth_bad",
 * "billed_prompt", "billed_completion" (the usage of every answer sent), "turns",
 * "last_traceparent", "last_model", "last_max_tokens" (-1: none),
 * "last_temperature" (-1: none)}. With --expect-key K every request
 * must carry "Authorization: Bearer K" (else 401).
 *
 * Anthropic's Messages API, Azure OpenAI's deployment paths and OpenAI's
 * embeddings are served too: see anthropic(), azure() and embeddings().
 *
 * usage: fake_llm [--port N] [--name S] [--expect-key-env VAR]; prints
 * "port N" on stdout once listening.
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *name = "fake";
static const char *expect_key;
static atomic_long n_requests, n_connections, n_auth_ok, n_auth_bad;
static atomic_int forced_status;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char last_tp[128], last_model[256];
static long last_max_tokens = -1; /* -1: the request set none */
static double last_temperature = -1;
static json_t *turn_counts; /* "turns" of GET /stats (under mu) */
static json_t *answered;    /* "answered": the same, answers a live client got */
static json_t *answered_at; /* "answered_at": when (epoch ms), per key */
static atomic_long billed_answered;
static atomic_long billed_prompt, billed_completion;
static __thread int azure_auth; /* chat(): azure() checked this request's key */

typedef struct {
	char *body;
	size_t len;
} upload;

typedef struct {
	int ollama, stream, include_usage;
	long tokens, ttft, tps, drop, hang, invalid, badjson, status, echo;
	int assistants;
	long n, prompt; /* choices; prompt tokens billed */
	char model[256];
	char tool[64]; /* the request offered tools: call the first */
	/* stream progress */
	long sent; /* chunks sent */
	int phase; /* 0 first, 1 tokens, 2 tail, 3 done */
	char pending[4096];
	size_t plen, poff;
} answer;

static void sleep_ms(long ms)
{
	if (ms <= 0)
		return;
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static long directive(const char *model, const char *key, long def)
{
	char pat[32];
	snprintf(pat, sizeof pat, ";%s=", key);
	const char *p = strstr(model, pat);
	return p ? strtol(p + strlen(pat), NULL, 10) : def;
}

static const char *content_for(const answer *a)
{
	if (a->badjson)
		return NULL;
	if (a->invalid)
		return a->assistants < a->invalid ? "{\"answer\":\"not a number\"}"
						  : "{\"answer\":42}";
	return NULL;
}

static char *text_of(const answer *a)
{
	const char *fixed = content_for(a);
	if (fixed)
		return strdup(fixed);
	size_t cap = 64 + (size_t)a->tokens * 8;
	char *s = malloc(cap);
	int n = snprintf(s, cap, "%s:", name);
	for (long i = 0; i < a->tokens && (size_t)n < cap - 8; i++)
		n += snprintf(s + n, cap - (size_t)n, " t%ld", i);
	return s;
}

static char *tool_answer(const answer *a)
{
	json_t *j;
	if (a->ollama)
		j = json_pack("{s:s,s:{s:s,s:s,s:[{s:{s:s,s:{s:s}}}]},s:b,s:i,s:i}", "model",
			      a->model, "message", "role", "assistant", "content", "", "tool_calls",
			      "function", "name", a->tool, "arguments", "city", "Oslo", "done", 1,
			      "prompt_eval_count", (int)a->prompt, "eval_count", 3);
	else
		j = json_pack(
			"{s:s,s:s,s:i,s:s,s:[{s:i,s:{s:s,s:n,s:[{s:s,s:s,s:{s:s,s:s}}]},s:s}],"
			"s:{s:i,s:i,s:i}}",
			"id", "chatcmpl-fake", "object", "chat.completion", "created", 1700000000,
			"model", a->model, "choices", "index", 0, "message", "role", "assistant",
			"content", "tool_calls", "id", "call_1", "type", "function", "function",
			"name", a->tool, "arguments", "{\"city\":\"Oslo\"}", "finish_reason",
			"tool_calls", "usage", "prompt_tokens", (int)a->prompt, "completion_tokens",
			3, "total_tokens", (int)a->prompt + 3);
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

/* turns=N: the answer of an agent's model (see the header); NULL when the
 * request is not such a turn. */
static char *agent_turn(const json_t *req, const char *model, long prompt, char *key_out,
			long *billed)
{
	long turns = directive(model, "turns", 0);
	json_t *tools = json_object_get(req, "tools");
	if (turns <= 0 || !json_array_size(tools))
		return NULL;
	size_t i;
	json_t *m;
	long results = 0;
	const char *first = NULL;
	char quoted[8192] = "";
	size_t ql = 0;
	json_array_foreach (json_object_get(req, "messages"), i, m) {
		const char *role = json_string_value(json_object_get(m, "role")) ?: "";
		const char *text = json_string_value(json_object_get(m, "content"));
		if (!first && !strcmp(role, "user"))
			first = text ? text : "";
		if (strcmp(role, "tool"))
			continue;
		results++;
		int n = snprintf(quoted + ql, sizeof quoted - ql, "%s%s", ql ? " | " : "",
				 text ? text : "");
		ql = n < 0 || (size_t)n >= sizeof quoted - ql ? sizeof quoted - 1 : ql + (size_t)n;
	}
	char key[600];
	snprintf(key, sizeof key, "%.500s#%ld", first ? first : "", results);
	pthread_mutex_lock(&mu);
	json_int_t seen = json_integer_value(json_object_get(turn_counts, key));
	json_object_set_new(turn_counts, key, json_integer(seen + 1));
	pthread_mutex_unlock(&mu);
	json_t *msg, *j;
	long completion = 3;
	if (results < turns) {
		const char *pick = strstr(model, ";pick=");
		char want[128] = "";
		if (pick)
			snprintf(want, sizeof want, "%.*s", (int)strcspn(pick + 6, ";"), pick + 6);
		json_t *fn = json_object_get(
			json_array_get(tools, (size_t)results % json_array_size(tools)),
			"function");
		json_t *t;
		json_array_foreach (tools, i, t)
			if (want[0] && !strcmp(json_string_value(json_object_get(
						       json_object_get(t, "function"), "name"))
						       ?: "",
					       want))
				fn = json_object_get(t, "function");
		json_t *params = json_object_get(fn, "parameters"), *args = json_object(), *r;
		json_array_foreach (json_object_get(params, "required"), i, r) {
			const char *p = json_string_value(r);
			json_t *prop = json_object_get(json_object_get(params, "properties"), p);
			const char *type = json_string_value(json_object_get(prop, "type"));
			json_t *sample = json_array_get(json_object_get(prop, "enum"), 0);
			if (!sample)
				sample = json_array_get(json_object_get(prop, "examples"), 0);
			char v[32];
			snprintf(v, sizeof v, "q%ld", results);
			json_object_set_new(
				args, p,
				sample ? json_incref(sample)
				: type && (!strcmp(type, "integer") || !strcmp(type, "number"))
					? json_integer(results + 1)
					: json_string(v));
		}
		char *as = json_dumps(args, JSON_COMPACT);
		json_decref(args);
		char id[32];
		snprintf(id, sizeof id, "call_%ld", results + 1);
		msg = json_pack("{s:s,s:n,s:[{s:s,s:s,s:{s:O,s:s}}]}", "role", "assistant",
				"content", "tool_calls", "id", id, "type", "function", "function",
				"name", json_object_get(fn, "name"), "arguments", as);
		free(as);
	} else {
		char text[8300];
		snprintf(text, sizeof text, "final: %s", quoted);
		char *content = NULL;
		if (json_object_get(req, "response_format")) {
			json_t *o = json_pack("{s:s}", "answer", text);
			content = json_dumps(o, JSON_COMPACT);
			json_decref(o);
		}
		msg = json_pack("{s:s,s:s}", "role", "assistant", "content",
				content ? content : text);
		free(content);
		completion = 8;
	}
	j = json_pack("{s:s,s:s,s:i,s:s,s:[{s:i,s:o,s:s}],s:{s:i,s:i,s:i}}", "id", "chatcmpl-fake",
		      "object", "chat.completion", "created", 1700000000, "model", model, "choices",
		      "index", 0, "message", msg, "finish_reason",
		      results < turns ? "tool_calls" : "stop", "usage", "prompt_tokens",
		      (int)prompt, "completion_tokens", (int)completion, "total_tokens",
		      (int)(prompt + completion));
	atomic_fetch_add(&billed_prompt, prompt);
	atomic_fetch_add(&billed_completion, completion);
	*billed = prompt + completion;
	snprintf(key_out, 600, "%s", key);
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

static char *whole(const answer *a)
{
	if (a->tool[0])
		return tool_answer(a);
	char *text = text_of(a);
	json_t *j;
	json_int_t in = (json_int_t)a->prompt, out = (json_int_t)(a->n * a->tokens);
	if (a->ollama) {
		j = json_pack("{s:s,s:{s:s,s:s},s:b,s:s,s:I,s:I}", "model", a->model, "message",
			      "role", "assistant", "content", text, "done", 1, "done_reason",
			      "stop", "prompt_eval_count", in, "eval_count", out);
	} else {
		json_t *choices = json_array();
		for (long i = 0; i < a->n; i++)
			json_array_append_new(choices, json_pack("{s:I,s:{s:s,s:s},s:s}", "index",
								 (json_int_t)i, "message", "role",
								 "assistant", "content", text,
								 "finish_reason", "stop"));
		j = json_pack("{s:s,s:s,s:i,s:s,s:o,s:{s:I,s:I,s:I}}", "id", "chatcmpl-fake",
			      "object", "chat.completion", "created", 1700000000, "model", a->model,
			      "choices", choices, "usage", "prompt_tokens", in, "completion_tokens",
			      out, "total_tokens", in + out);
	}
	free(text);
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

/* The next piece of a stream into a->pending; 0 at the end. */
static int next_piece(answer *a)
{
	a->plen = a->poff = 0;
	if (a->phase == 3)
		return 0;
	if (a->phase == 0) {
		sleep_ms(a->ttft);
		a->phase = 1;
	}
	if (a->phase == 1 && a->sent < a->tokens) {
		if (a->sent)
			sleep_ms(a->tps > 0 ? 1000 / a->tps : 0);
		char tok[32];
		if (a->sent == 0)
			snprintf(tok, sizeof tok, "%s: t0", name);
		else
			snprintf(tok, sizeof tok, " t%ld", a->sent);
		json_t *j;
		if (a->ollama)
			j = json_pack("{s:s,s:{s:s,s:s},s:b}", "model", a->model, "message", "role",
				      "assistant", "content", tok, "done", 0);
		else
			j = json_pack("{s:s,s:s,s:i,s:s,s:[{s:i,s:{s:s},s:n}]}", "id",
				      "chatcmpl-fake", "object", "chat.completion.chunk", "created",
				      1700000000, "model", a->model, "choices", "index", 0, "delta",
				      "content", tok, "finish_reason");
		char *s = json_dumps(j, JSON_COMPACT);
		json_decref(j);
		a->plen = (size_t)snprintf(a->pending, sizeof a->pending,
					   a->ollama ? "%s\n" : "data: %s\n\n", s);
		free(s);
		a->sent++;
		return 1;
	}
	a->phase = 3;
	if (a->ollama) {
		a->plen = (size_t)snprintf(
			a->pending, sizeof a->pending,
			"{\"model\":\"x\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},"
			"\"done\":true,\"done_reason\":\"stop\",\"prompt_eval_count\":%ld,"
			"\"eval_count\":%ld}\n",
			a->prompt, a->n * a->tokens);
		return 1;
	}
	int n = snprintf(a->pending, sizeof a->pending,
			 "data: {\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion.chunk\","
			 "\"created\":1700000000,\"model\":\"x\",\"choices\":[{\"index\":0,"
			 "\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
	if (a->include_usage)
		n += snprintf(
			a->pending + n, sizeof a->pending - (size_t)n,
			"data: {\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion.chunk\","
			"\"created\":1700000000,\"model\":\"x\",\"choices\":[],\"usage\":{"
			"\"prompt_tokens\":%ld,\"completion_tokens\":%ld,\"total_tokens\":%ld}}"
			"\n\n",
			a->prompt, a->n * a->tokens, a->prompt + a->n * a->tokens);
	n += snprintf(a->pending + n, sizeof a->pending - (size_t)n, "data: [DONE]\n\n");
	a->plen = (size_t)n;
	return 1;
}

static ssize_t read_stream(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	answer *a = cls;
	if (a->poff == a->plen) {
		if (a->drop && a->sent >= a->drop)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (!next_piece(a))
			return MHD_CONTENT_READER_END_OF_STREAM;
	}
	size_t n = a->plen - a->poff < max ? a->plen - a->poff : max;
	memcpy(buf, a->pending + a->poff, n);
	a->poff += n;
	return (ssize_t)n;
}

static enum MHD_Result reply(struct MHD_Connection *c, int status, const char *ctype, char *body)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", ctype);
	enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ok;
}

/* ------------------------------------------------------------ billing */

static long tok(long long bytes)
{
	return (long)((bytes + 3) / 4);
}

static long json_tok(const json_t *v)
{
	if (!v || json_is_null(v))
		return 0;
	if (json_is_string(v))
		return tok((long long)json_string_length(v));
	char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	long n = d ? tok((long long)strlen(d)) : 0;
	free(d);
	return n;
}

static long image_bill(const json_t *part)
{
	json_t *iu = json_object_get(part, "image_url");
	const char *detail = json_string_value(json_object_get(iu, "detail"));
	if (detail && !strcmp(detail, "low"))
		return 85;
	const char *url = json_string_value(json_object_get(iu, "url"));
	const char *b = url && !strncmp(url, "data:", 5) ? strstr(url, ";base64,") : NULL;
	double w = 2048, h = 768;
	if (b) {
		static const char tab[] =
			"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		unsigned char d[24];
		size_t n = 0;
		unsigned v = 0;
		int bits = 0;
		for (const char *q = b + 8; *q && n < sizeof d; q++) {
			const char *x = strchr(tab, *q);
			if (!x)
				break;
			v = (v << 6) | (unsigned)(x - tab);
			if ((bits += 6) >= 8)
				bits -= 8, d[n++] = (unsigned char)(v >> bits);
		}
		if (n == 24 && !memcmp(d + 12, "IHDR", 4)) {
			w = (double)((long)d[16] << 24 | (long)d[17] << 16 | (long)d[18] << 8 |
				     d[19]);
			h = (double)((long)d[20] << 24 | (long)d[21] << 16 | (long)d[22] << 8 |
				     d[23]);
		}
	}
	if (w > 2048 || h > 2048) {
		double k = 2048 / (w > h ? w : h);
		w *= k, h *= k;
	}
	double s = w < h ? w : h;
	if (s > 768)
		w *= 768 / s, h *= 768 / s;
	long tiles = (long)(((long)w + 511) / 512) * (((long)h + 511) / 512);
	return 85 + 170 * tiles;
}

/* usage.prompt_tokens of an OpenAI request (Ollama's: the same count) */
static long prompt_bill(const json_t *req)
{
	long n = 3;
	size_t i, k;
	json_t *m, *v, *part;
	const char *key;
	json_array_foreach (json_object_get(req, "messages"), i, m) {
		n += 3;
		json_object_foreach (m, key, v) {
			if (strcmp(key, "content") || !json_is_array(v)) {
				n += json_tok(v);
				continue;
			}
			json_array_foreach (v, k, part) {
				const char *type = json_string_value(json_object_get(part, "type"));
				if (type && !strcmp(type, "image_url"))
					n += image_bill(part);
				else
					n += json_tok(json_object_get(part, type ? type : "text"));
			}
		}
	}
	static const char *const billed[] = {
		"tools",	   "functions", "tool_choice", "function_call",
		"response_format", "format",	NULL};
	for (int b = 0; billed[b]; b++)
		n += json_tok(json_object_get(req, billed[b]));
	return n;
}

static enum MHD_Result chat(struct MHD_Connection *c, int ollama, const char *body, size_t len)
{
	atomic_fetch_add(&n_requests, 1);
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	int *seen = ci ? ci->socket_context : NULL;
	if (seen && !*seen) { /* a connection that carried a chat request */
		*seen = 1;
		atomic_fetch_add(&n_connections, 1);
	}
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	const char *tp = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "traceparent");
	json_t *req = json_loadb(body, len, 0, NULL);
	const char *model = json_string_value(json_object_get(req, "model"));
	pthread_mutex_lock(&mu);
	snprintf(last_tp, sizeof last_tp, "%s", tp ? tp : "");
	snprintf(last_model, sizeof last_model, "%s", model ? model : "");
	pthread_mutex_unlock(&mu);
	if (expect_key && !azure_auth) {
		char want[512];
		snprintf(want, sizeof want, "Bearer %s", expect_key);
		int ok = auth && !strcmp(auth, want);
		atomic_fetch_add(ok ? &n_auth_ok : &n_auth_bad, 1);
		if (!ok) {
			json_decref(req);
			return reply(c, 401, "application/json",
				     strdup("{\"error\":{\"message\":\"Incorrect API key\"}}"));
		}
	}
	if (!json_is_object(req) || !model) {
		json_decref(req);
		return reply(c, 400, "application/json",
			     strdup("{\"error\":{\"message\":\"bad request\"}}"));
	}
	answer *a = calloc(1, sizeof *a);
	snprintf(a->model, sizeof a->model, "%s", model);
	a->ollama = ollama;
	a->stream = ollama ? !json_is_false(json_object_get(req, "stream"))
			   : json_is_true(json_object_get(req, "stream"));
	a->include_usage = json_is_true(
		json_object_get(json_object_get(req, "stream_options"), "include_usage"));
	a->tokens = directive(model, "tokens", 8);
	/* a model stops at max_tokens (Ollama: options.num_predict) */
	json_t *mt = json_object_get(req, "max_tokens");
	if (!json_is_integer(mt))
		mt = json_object_get(req, "max_completion_tokens");
	if (!json_is_integer(mt))
		mt = json_object_get(json_object_get(req, "options"), "num_predict");
	if (json_is_integer(mt) && json_integer_value(mt) < a->tokens &&
	    !directive(model, "ignoremax", 0))
		a->tokens = (long)json_integer_value(mt);
	json_t *nv = json_object_get(req, "n");
	a->n = json_is_integer(nv) && json_integer_value(nv) > 1 ? (long)json_integer_value(nv) : 1;
	a->prompt = prompt_bill(req);
	json_t *temp = json_object_get(req, "temperature");
	if (!temp)
		temp = json_object_get(json_object_get(req, "options"), "temperature");
	pthread_mutex_lock(&mu);
	last_max_tokens = json_is_integer(mt) ? (long)json_integer_value(mt) : -1;
	last_temperature = json_is_number(temp) ? json_number_value(temp) : -1;
	pthread_mutex_unlock(&mu);
	if (directive(model, "nousage", 0))
		a->include_usage = 0;
	a->ttft = directive(model, "ttft", 0);
	a->tps = directive(model, "tps", 0);
	a->drop = directive(model, "drop", 0);
	a->hang = directive(model, "hang", 0);
	a->invalid = directive(model, "invalid", 0);
	a->badjson = directive(model, "badjson", 0);
	a->echo = directive(model, "echo", 0);
	const char *tool = json_string_value(json_object_get(
		json_object_get(json_array_get(json_object_get(req, "tools"), 0), "function"),
		"name"));
	snprintf(a->tool, sizeof a->tool, "%s", tool ? tool : "");
	a->status = atomic_load(&forced_status) ? atomic_load(&forced_status)
						: directive(model, "status", 0);
	size_t i;
	json_t *m;
	json_array_foreach (json_object_get(req, "messages"), i, m)
		if (!strcmp(json_string_value(json_object_get(m, "role")) ?: "", "assistant"))
			a->assistants++;
	char key[600];
	long billed = 0;
	char *agent = a->status || a->hang || a->stream
			      ? NULL
			      : agent_turn(req, model, a->prompt, key, &billed);
	json_decref(req);
	if (agent) {
		sleep_ms(a->ttft);
		free(a);
		/* answered: the client is still there to read it (a worker killed
		 * while it waited never gets this answer, nor is billed for it) */
		const union MHD_ConnectionInfo *fi =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		char b;
		ssize_t r = fi ? recv(fi->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) : -1;
		if (r != 0) {
			pthread_mutex_lock(&mu);
			json_int_t had = json_integer_value(json_object_get(answered, key));
			json_object_set_new(answered, key, json_integer(had + 1));
			struct timespec now;
			clock_gettime(CLOCK_REALTIME, &now);
			json_t *at = json_object_get(answered_at, key);
			if (!at)
				json_object_set_new(answered_at, key, at = json_array());
			json_array_append_new(at, json_integer((json_int_t)now.tv_sec * 1000 +
							       now.tv_nsec / 1000000));
			pthread_mutex_unlock(&mu);
			atomic_fetch_add(&billed_answered, billed);
		}
		return reply(c, 200, "application/json", agent);
	}
	if (a->hang)
		sleep_ms(3600 * 1000);
	if (a->status) {
		long st = a->status;
		char msg[700];
		snprintf(msg, sizeof msg, "%s says %ld%s%s", name, st,
			 a->echo ? ", you sent Authorization: " : "", a->echo && auth ? auth : "");
		free(a);
		json_t *e = json_pack("{s:{s:s,s:s}}", "error", "message", msg, "type", "fake");
		char *b = json_dumps(e, JSON_COMPACT);
		json_decref(e);
		return reply(c, (int)st, "application/json", b);
	}
	atomic_fetch_add(&billed_prompt, a->prompt);
	atomic_fetch_add(&billed_completion, a->tool[0] ? 3 : a->n * a->tokens);
	if (!a->stream) {
		sleep_ms(a->ttft);
		char *b = a->badjson ? strdup("this is not json {") : whole(a);
		free(a);
		return reply(c, 200, "application/json", b);
	}
	struct MHD_Response *r =
		MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, read_stream, a, free);
	MHD_add_response_header(r, "Content-Type",
				ollama ? "application/x-ndjson" : "text/event-stream");
	enum MHD_Result ok = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ok;
}

/* ------------------------------------------------------------ Anthropic */

/* Anthropic's Messages API (POST /v1/messages), shaped like the real one:
 * x-api-key (with --expect-key-env) and anthropic-version are required,
 * max_tokens too; roles are user and assistant only (system is its own
 * member), content blocks are text, image, tool_use and tool_result, and a
 * tool_result must answer a tool_use of the assistant turn before it. The
 * answer is a message of content blocks (a tool_use block for the first
 * tool offered), stop_reason end_turn / max_tokens / tool_use, and usage
 * whose input is split as the directives say:
 *   cachew=N    N of the prompt's tokens reported as cache_creation_input_tokens
 *   cacher=N    N as cache_read_input_tokens (input_tokens is the rest)
 *   overload=1  a stream that sends message_start, ping, then an
 *               overloaded_error event (as the API does under load) and ends
 * Streamed as the API's named events: message_start, content_block_start,
 * ping, content_block_delta (text_delta / input_json_delta),
 * content_block_stop, message_delta (stop_reason, cumulative usage),
 * message_stop. tokens, ttft, tps, status, drop and hang act as for OpenAI. */

static long anth_block_tok(const json_t *b)
{
	const char *type = json_string_value(json_object_get(b, "type"));
	if (!type)
		return 0;
	if (!strcmp(type, "text"))
		return json_tok(json_object_get(b, "text"));
	if (!strcmp(type, "tool_use"))
		return json_tok(json_object_get(b, "input")) + json_tok(json_object_get(b, "name"));
	if (!strcmp(type, "tool_result"))
		return json_tok(json_object_get(b, "content"));
	if (!strcmp(type, "image"))
		return 1600;
	return 0;
}

/* usage: the prompt's tokens as this fake bills them: 3 + 3 a message, text
 * at a token per 4 bytes, system and tools as JSON, images at 1600 */
static long anth_bill(const json_t *req)
{
	long n = 3;
	size_t i, k;
	json_t *m, *b;
	json_array_foreach (json_object_get(req, "messages"), i, m) {
		n += 3;
		json_t *c = json_object_get(m, "content");
		if (json_is_string(c))
			n += json_tok(c);
		json_array_foreach (c, k, b)
			n += anth_block_tok(b);
	}
	json_t *sys = json_object_get(req, "system");
	if (json_is_string(sys))
		n += json_tok(sys);
	json_array_foreach (sys, k, b)
		n += anth_block_tok(b);
	n += json_tok(json_object_get(req, "tools"));
	return n;
}

static enum MHD_Result anth_error(struct MHD_Connection *c, int status, const char *type,
				  const char *msg)
{
	json_t *e = json_pack("{s:s,s:{s:s,s:s}}", "type", "error", "error", "type", type,
			      "message", msg);
	char *b = json_dumps(e, JSON_COMPACT);
	json_decref(e);
	return reply(c, status, "application/json", b);
}

/* NULL when the request is shaped as the API wants, else what is wrong. */
static const char *anth_check(const json_t *req)
{
	if (!json_is_string(json_object_get(req, "model")))
		return "model: Field required";
	json_t *mt = json_object_get(req, "max_tokens");
	if (!json_is_integer(mt) || json_integer_value(mt) < 1)
		return "max_tokens: Field required";
	json_t *msgs = json_object_get(req, "messages");
	if (!json_array_size(msgs))
		return "messages: at least one message is required";
	const char *prev = NULL;
	json_t *uses = json_object(); /* tool_use ids of the last assistant turn */
	const char *bad = NULL;
	size_t i, k;
	json_t *m, *b;
	json_array_foreach (msgs, i, m) {
		const char *role = json_string_value(json_object_get(m, "role"));
		json_t *c = json_object_get(m, "content");
		if (!role || (strcmp(role, "user") && strcmp(role, "assistant"))) {
			bad = "messages: roles are user and assistant (system is a top-level field)";
			break;
		}
		if (prev && !strcmp(prev, role)) {
			bad = "messages: roles must alternate between user and assistant";
			break;
		}
		prev = role;
		if (!json_is_string(c) && !json_is_array(c)) {
			bad = "messages: content is a string or an array of blocks";
			break;
		}
		json_t *next = json_object();
		json_array_foreach (c, k, b) {
			const char *t = json_string_value(json_object_get(b, "type"));
			if (!t || (strcmp(t, "text") && strcmp(t, "image") &&
				   strcmp(t, "tool_use") && strcmp(t, "tool_result"))) {
				bad = "messages: unknown content block type";
				break;
			}
			if (!strcmp(t, "tool_use")) {
				if (strcmp(role, "assistant") ||
				    !json_is_object(json_object_get(b, "input")))
					bad = "tool_use blocks are an assistant's, with an object input";
				else
					json_object_set_new(
						next,
						json_string_value(json_object_get(b, "id")) ?: "",
						json_true());
			}
			if (!strcmp(t, "tool_result") &&
			    (strcmp(role, "user") ||
			     !json_object_get(uses,
					      json_string_value(json_object_get(b, "tool_use_id"))
						      ?: "")))
				bad = "tool_result blocks must answer a tool_use of the previous turn";
			if (!strcmp(t, "text") && !json_string_length(json_object_get(b, "text")))
				bad = "text content blocks must be non-empty";
		}
		json_decref(uses);
		uses = next;
		if (bad)
			break;
	}
	json_decref(uses);
	if (!bad &&
	    strcmp(json_string_value(json_object_get(json_array_get(msgs, 0), "role")) ?: "",
		   "user"))
		bad = "messages: the first message must use the user role";
	json_t *tc = json_object_get(req, "tool_choice");
	const char *tct = json_string_value(json_object_get(tc, "type"));
	if (!bad && tc &&
	    (!tct || (strcmp(tct, "auto") && strcmp(tct, "any") && strcmp(tct, "tool") &&
		      strcmp(tct, "none"))))
		bad = "tool_choice: type is auto, any, tool or none";
	if (!bad && json_is_number(json_object_get(req, "temperature")) &&
	    json_number_value(json_object_get(req, "temperature")) > 1)
		bad = "temperature: must be at most 1";
	return bad;
}

typedef struct {
	char **ev; /* the events, "event: ...\ndata: ...\n\n" each */
	int n, i;
	long ttft, tps, drop, content; /* content: content deltas sent */
	size_t off;
} anth_stream;

static void anth_push(anth_stream *a, const char *type, json_t *data)
{
	char *d = json_dumps(data, JSON_COMPACT);
	json_decref(data);
	size_t cap = strlen(d) + strlen(type) + 32;
	a->ev = realloc(a->ev, sizeof *a->ev * (size_t)(a->n + 1));
	a->ev[a->n] = malloc(cap);
	snprintf(a->ev[a->n++], cap, "event: %s\ndata: %s\n\n", type, d);
	free(d);
}

static ssize_t anth_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	anth_stream *a = cls;
	if (a->i == a->n)
		return MHD_CONTENT_READER_END_OF_STREAM;
	const char *e = a->ev[a->i];
	if (a->off == 0) {
		if (a->i == 0)
			sleep_ms(a->ttft);
		int delta = strstr(e, "event: content_block_delta") == e;
		if (delta && a->drop && a->content >= a->drop)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (delta && a->content++)
			sleep_ms(a->tps > 0 ? 1000 / a->tps : 0);
	}
	size_t left = strlen(e) - a->off, n = left < max ? left : max;
	memcpy(buf, e + a->off, n);
	a->off += n;
	if (a->off == strlen(e))
		a->i++, a->off = 0;
	return (ssize_t)n;
}

static void anth_free(void *cls)
{
	anth_stream *a = cls;
	for (int i = 0; i < a->n; i++)
		free(a->ev[i]);
	free(a->ev);
	free(a);
}

static enum MHD_Result anthropic(struct MHD_Connection *c, const char *body, size_t len)
{
	atomic_fetch_add(&n_requests, 1);
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-api-key");
	const char *ver = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "anthropic-version");
	const char *tp = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "traceparent");
	if (expect_key) {
		int ok = key && !strcmp(key, expect_key);
		atomic_fetch_add(ok ? &n_auth_ok : &n_auth_bad, 1);
		if (!ok)
			return anth_error(c, 401, "authentication_error", "invalid x-api-key");
	}
	if (!ver || !*ver)
		return anth_error(c, 400, "invalid_request_error",
				  "anthropic-version: header is required");
	json_t *req = json_loadb(body, len, 0, NULL);
	const char *bad = json_is_object(req) ? anth_check(req) : "the body is not a JSON object";
	if (bad) {
		json_decref(req);
		return anth_error(c, 400, "invalid_request_error", bad);
	}
	char model[256]; /* kept past req */
	snprintf(model, sizeof model, "%s", json_string_value(json_object_get(req, "model")));
	long max = (long)json_integer_value(json_object_get(req, "max_tokens"));
	pthread_mutex_lock(&mu);
	snprintf(last_tp, sizeof last_tp, "%s", tp ? tp : "");
	snprintf(last_model, sizeof last_model, "%s", model);
	last_max_tokens = max;
	json_t *temp = json_object_get(req, "temperature");
	last_temperature = json_is_number(temp) ? json_number_value(temp) : -1;
	pthread_mutex_unlock(&mu);
	long tokens = directive(model, "tokens", 8), status = atomic_load(&forced_status);
	if (!status)
		status = directive(model, "status", 0);
	int capped = tokens > max && !directive(model, "ignoremax", 0);
	if (capped)
		tokens = max;
	long prompt = anth_bill(req);
	long cw = directive(model, "cachew", 0), cr = directive(model, "cacher", 0);
	if (cw + cr > prompt)
		cw = cr = 0;
	const char *tool = json_string_value(
		json_object_get(json_array_get(json_object_get(req, "tools"), 0), "name"));
	const char *tc =
		json_string_value(json_object_get(json_object_get(req, "tool_choice"), "type"));
	if (tc && !strcmp(tc, "none"))
		tool = NULL;
	char toolname[64];
	snprintf(toolname, sizeof toolname, "%s", tool ? tool : "");
	int stream = json_is_true(json_object_get(req, "stream"));
	long hang = directive(model, "hang", 0), ttft = directive(model, "ttft", 0);
	anth_stream *a = calloc(1, sizeof *a);
	a->ttft = ttft;
	a->tps = directive(model, "tps", 0);
	a->drop = directive(model, "drop", 0);
	char mid[32];
	snprintf(mid, sizeof mid, "msg_fake%ld", atomic_load(&n_requests));
	json_decref(req);
	if (hang)
		sleep_ms(3600 * 1000);
	if (status) {
		anth_free(a);
		char msg[160];
		snprintf(msg, sizeof msg, "%s says %ld", name, status);
		return anth_error(c, (int)status,
				  status == 529	  ? "overloaded_error"
				  : status == 429 ? "rate_limit_error"
				  : status >= 500 ? "api_error"
						  : "invalid_request_error",
				  msg);
	}
	long out = toolname[0] ? 3 : tokens;
	const char *stop = toolname[0] ? "tool_use" : capped ? "max_tokens" : "end_turn";
	json_t *usage =
		json_pack("{s:I,s:I,s:I,s:I}", "input_tokens", (json_int_t)(prompt - cw - cr),
			  "cache_creation_input_tokens", (json_int_t)cw, "cache_read_input_tokens",
			  (json_int_t)cr, "output_tokens", (json_int_t)out);
	if (!stream) {
		sleep_ms(ttft);
		json_t *content = json_array();
		if (toolname[0]) {
			json_array_append_new(content,
					      json_pack("{s:s,s:s,s:s,s:{s:s}}", "type", "tool_use",
							"id", "toolu_fake1", "name", toolname,
							"input", "city", "Oslo"));
		} else {
			answer t = {.tokens = tokens};
			char *text = text_of(&t);
			json_array_append_new(content,
					      json_pack("{s:s,s:s}", "type", "text", "text", text));
			free(text);
		}
		json_t *m =
			json_pack("{s:s,s:s,s:s,s:s,s:o,s:s,s:n,s:o}", "id", mid, "type", "message",
				  "role", "assistant", "model", model, "content", content,
				  "stop_reason", stop, "stop_sequence", "usage", usage);
		char *b = json_dumps(m, JSON_COMPACT);
		json_decref(m);
		anth_free(a);
		return reply(c, 200, "application/json", b);
	}
	json_t *start_usage = json_deep_copy(usage);
	json_object_set_new(start_usage, "output_tokens", json_integer(1));
	anth_push(a, "message_start",
		  json_pack("{s:s,s:{s:s,s:s,s:s,s:s,s:[],s:n,s:n,s:o}}", "type", "message_start",
			    "message", "id", mid, "type", "message", "role", "assistant", "model",
			    "m", "content", "stop_reason", "stop_sequence", "usage", start_usage));
	if (directive(model, "overload", 0)) {
		anth_push(a, "ping", json_pack("{s:s}", "type", "ping"));
		anth_push(a, "error",
			  json_pack("{s:s,s:{s:s,s:s}}", "type", "error", "error", "type",
				    "overloaded_error", "message", "Overloaded"));
		json_decref(usage);
		goto send;
	}
	if (toolname[0]) {
		anth_push(a, "content_block_start",
			  json_pack("{s:s,s:i,s:{s:s,s:s,s:s,s:{}}}", "type", "content_block_start",
				    "index", 0, "content_block", "type", "tool_use", "id",
				    "toolu_fake1", "name", toolname, "input"));
		anth_push(a, "ping", json_pack("{s:s}", "type", "ping"));
		const char *parts[] = {"{\"city\":", " \"Oslo\"}"};
		for (int i = 0; i < 2; i++)
			anth_push(a, "content_block_delta",
				  json_pack("{s:s,s:i,s:{s:s,s:s}}", "type", "content_block_delta",
					    "index", 0, "delta", "type", "input_json_delta",
					    "partial_json", parts[i]));
	} else {
		anth_push(a, "content_block_start",
			  json_pack("{s:s,s:i,s:{s:s,s:s}}", "type", "content_block_start", "index",
				    0, "content_block", "type", "text", "text", ""));
		anth_push(a, "ping", json_pack("{s:s}", "type", "ping"));
		for (long i = 0; i < tokens; i++) {
			char t[64];
			if (i == 0)
				snprintf(t, sizeof t, "%s: t0", name);
			else
				snprintf(t, sizeof t, " t%ld", i);
			anth_push(a, "content_block_delta",
				  json_pack("{s:s,s:i,s:{s:s,s:s}}", "type", "content_block_delta",
					    "index", 0, "delta", "type", "text_delta", "text", t));
		}
	}
	anth_push(a, "content_block_stop",
		  json_pack("{s:s,s:i}", "type", "content_block_stop", "index", 0));
	if (!directive(model, "nousage", 0))
		anth_push(a, "message_delta",
			  json_pack("{s:s,s:{s:s,s:n},s:o}", "type", "message_delta", "delta",
				    "stop_reason", stop, "stop_sequence", "usage", usage));
	else
		json_decref(usage);
	anth_push(a, "message_stop", json_pack("{s:s}", "type", "message_stop"));
send:;
	struct MHD_Response *r =
		MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, anth_read, a, anth_free);
	MHD_add_response_header(r, "Content-Type", "text/event-stream");
	enum MHD_Result ok = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ok;
}

/* ------------------------------------------------------------ Azure OpenAI */

/* Azure OpenAI's deployment paths: POST /openai/deployments/{deployment}/
 * chat/completions?api-version=V, the key in the api-key header (with
 * --expect-key-env), the deployment as the model; answered as OpenAI's. */

static enum MHD_Result embeddings(struct MHD_Connection *c, const char *body, size_t len);

static enum MHD_Result azure(struct MHD_Connection *c, const char *url, const char *body,
			     size_t len)
{
	const char *p = url + strlen("/openai/deployments/");
	const char *slash = strchr(p, '/');
	int emb = slash && !strcmp(slash, "/embeddings");
	if (!slash || (strcmp(slash, "/chat/completions") && !emb) || slash == p)
		return reply(
			c, 404, "application/json",
			strdup("{\"error\":{\"code\":\"404\",\"message\":\"Resource not found\"}}"));
	const char *ver = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "api-version");
	if (!ver || !*ver)
		return reply(c, 400, "application/json",
			     strdup("{\"error\":{\"code\":\"MissingApiVersion\",\"message\":\"The "
				    "api-version query parameter (?api-version=) is required\"}}"));
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "api-key");
	if (expect_key) {
		int ok = key && !strcmp(key, expect_key);
		if (!ok) {
			atomic_fetch_add(&n_auth_bad, 1);
			return reply(
				c, 401, "application/json",
				strdup("{\"error\":{\"code\":\"401\",\"message\":\"Access denied "
				       "due to invalid subscription key\"}}"));
		}
		atomic_fetch_add(&n_auth_ok, 1);
	}
	json_t *req = json_loadb(body, len, 0, NULL);
	if (!json_is_object(req))
		req = json_object();
	char dep[256];
	snprintf(dep, sizeof dep, "%.*s", (int)(slash - p), p);
	json_object_set_new(req, "model", json_string(dep));
	char *b = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	azure_auth = 1;
	enum MHD_Result r = emb ? embeddings(c, b, strlen(b)) : chat(c, 0, b, strlen(b));
	azure_auth = 0;
	free(b);
	return r;
}

/* ------------------------------------------------------------ embeddings */

/* POST /v1/embeddings as OpenAI answers it: input a string or an array of
 * strings (or of token arrays), one embedding of `dimensions` (default 8)
 * floats each, usage.prompt_tokens at a token per 4 bytes of each input (a
 * token array: its length). status=N in the model answers N. */
static enum MHD_Result embeddings(struct MHD_Connection *c, const char *body, size_t len)
{
	atomic_fetch_add(&n_requests, 1);
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	if (expect_key && !azure_auth) {
		char want[512];
		snprintf(want, sizeof want, "Bearer %s", expect_key);
		int ok = auth && !strcmp(auth, want);
		atomic_fetch_add(ok ? &n_auth_ok : &n_auth_bad, 1);
		if (!ok)
			return reply(c, 401, "application/json",
				     strdup("{\"error\":{\"message\":\"Incorrect API key\"}}"));
	}
	json_t *req = json_loadb(body, len, 0, NULL);
	const char *model = json_string_value(json_object_get(req, "model"));
	json_t *in = json_object_get(req, "input");
	if (!model || (!json_is_string(in) && !json_array_size(in))) {
		json_decref(req);
		return reply(c, 400, "application/json",
			     strdup("{\"error\":{\"message\":\"model and input are required\"}}"));
	}
	pthread_mutex_lock(&mu);
	snprintf(last_model, sizeof last_model, "%s", model);
	pthread_mutex_unlock(&mu);
	long st = directive(model, "status", 0);
	if (st) {
		json_decref(req);
		return reply(c, (int)st, "application/json",
			     strdup("{\"error\":{\"message\":\"embeddings failed\"}}"));
	}
	json_t *dv = json_object_get(req, "dimensions");
	long dims = json_is_integer(dv) ? (long)json_integer_value(dv) : 8;
	json_t *inputs = json_is_string(in) ? json_pack("[O]", in) : json_incref(in);
	/* an array of integers is one input of tokens */
	if (json_is_integer(json_array_get(inputs, 0))) {
		json_decref(inputs);
		inputs = json_pack("[O]", in);
	}
	const char *ef = json_string_value(json_object_get(req, "encoding_format"));
	int b64 = ef && !strcmp(ef, "base64"); /* little-endian float32s, base64 */
	json_t *data = json_array();
	long tokens = 0;
	size_t i;
	json_t *v;
	json_array_foreach (inputs, i, v) {
		tokens += json_is_string(v) ? tok((long long)json_string_length(v))
					    : (long)json_array_size(v);
		json_t *e = b64 ? NULL : json_array();
		unsigned char *raw = calloc((size_t)dims, 4);
		for (long d = 0; d < dims; d++) {
			float f = (float)(d + 1) / (float)(dims + (long)i + 1);
			memcpy(raw + d * 4, &f, 4);
			if (e)
				json_array_append_new(e, json_real((double)f));
		}
		if (b64) {
			static const char tab[] =
				"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				"0123456789+/";
			size_t n = (size_t)dims * 4, k = 0;
			char *s = malloc(n / 3 * 4 + 8);
			for (size_t q = 0; q < n; q += 3) {
				unsigned x = (unsigned)raw[q] << 16 |
					     (q + 1 < n ? (unsigned)raw[q + 1] << 8 : 0) |
					     (q + 2 < n ? raw[q + 2] : 0);
				s[k++] = tab[x >> 18 & 63];
				s[k++] = tab[x >> 12 & 63];
				s[k++] = q + 1 < n ? tab[x >> 6 & 63] : '=';
				s[k++] = q + 2 < n ? tab[x & 63] : '=';
			}
			s[k] = 0;
			e = json_string(s);
			free(s);
		}
		free(raw);
		json_array_append_new(data, json_pack("{s:s,s:I,s:o}", "object", "embedding",
						      "index", (json_int_t)i, "embedding", e));
	}
	json_decref(inputs);
	json_t *out = json_pack("{s:s,s:o,s:s,s:{s:I,s:I}}", "object", "list", "data", data,
				"model", model, "usage", "prompt_tokens", (json_int_t)tokens,
				"total_tokens", (json_int_t)tokens);
	json_decref(req);
	char *b = json_dumps(out, JSON_COMPACT);
	json_decref(out);
	return reply(c, 200, "application/json", b);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *size, void **state)
{
	(void)cls, (void)version;
	upload *u = *state;
	if (!u) {
		*state = calloc(1, sizeof(upload));
		return MHD_YES;
	}
	if (*size) {
		u->body = realloc(u->body, u->len + *size + 1);
		memcpy(u->body + u->len, data, *size);
		u->len += *size;
		u->body[u->len] = 0;
		*size = 0;
		return MHD_YES;
	}
	if (!strcmp(method, "GET") && !strcmp(url, "/stats")) {
		pthread_mutex_lock(&mu);
		json_t *j = json_pack(
			"{s:I,s:I,s:I,s:I,s:s,s:s,s:s,s:I,s:f,s:I,s:I,s:O,s:O,s:I,s:O}", "requests",
			(json_int_t)atomic_load(&n_requests), "connections",
			(json_int_t)atomic_load(&n_connections), "auth_ok",
			(json_int_t)atomic_load(&n_auth_ok), "auth_bad",
			(json_int_t)atomic_load(&n_auth_bad), "last_traceparent", last_tp,
			"last_model", last_model, "name", name, "last_max_tokens",
			(json_int_t)last_max_tokens, "last_temperature", last_temperature,
			"billed_prompt", (json_int_t)atomic_load(&billed_prompt),
			"billed_completion", (json_int_t)atomic_load(&billed_completion), "turns",
			turn_counts, "answered", answered, "billed_answered",
			(json_int_t)atomic_load(&billed_answered), "answered_at", answered_at);
		pthread_mutex_unlock(&mu);
		char *s = json_dumps(j, JSON_COMPACT);
		json_decref(j);
		return reply(c, 200, "application/json", s);
	}
	if (!strcmp(method, "POST") && !strcmp(url, "/control")) {
		json_t *j = json_loadb(u->body ? u->body : "", u->len, 0, NULL);
		atomic_store(&forced_status, (int)json_integer_value(json_object_get(j, "status")));
		json_decref(j);
		return reply(c, 200, "application/json", strdup("{}"));
	}
	if (!strcmp(method, "POST") && !strcmp(url, "/v1/chat/completions"))
		return chat(c, 0, u->body ? u->body : "", u->len);
	if (!strcmp(method, "POST") && !strcmp(url, "/api/chat"))
		return chat(c, 1, u->body ? u->body : "", u->len);
	if (!strcmp(method, "POST") && !strcmp(url, "/v1/messages"))
		return anthropic(c, u->body ? u->body : "", u->len);
	if (!strcmp(method, "POST") && !strncmp(url, "/openai/deployments/", 20))
		return azure(c, url, u->body ? u->body : "", u->len);
	if (!strcmp(method, "POST") && !strcmp(url, "/v1/embeddings"))
		return embeddings(c, u->body ? u->body : "", u->len);
	return reply(c, 404, "application/json", strdup("{\"error\":{\"message\":\"no route\"}}"));
}

static void on_done(void *cls, struct MHD_Connection *c, void **state,
		    enum MHD_RequestTerminationCode toe)
{
	(void)cls, (void)c, (void)toe;
	upload *u = *state;
	if (u) {
		free(u->body);
		free(u);
	}
	*state = NULL;
}

static void on_conn(void *cls, struct MHD_Connection *c, void **sc,
		    enum MHD_ConnectionNotificationCode code)
{
	(void)cls, (void)c;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		*sc = calloc(1, sizeof(int));
	} else {
		free(*sc);
		*sc = NULL;
	}
}

int main(int argc, char **argv)
{
	int port = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--port") && i + 1 < argc)
			port = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--name") && i + 1 < argc)
			name = argv[++i];
		else if (!strcmp(argv[i], "--expect-key-env") && i + 1 < argc)
			expect_key = getenv(argv[++i]);
		else {
			fprintf(stderr,
				"usage: fake_llm [--port N] [--name S] [--expect-key-env VAR]\n");
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	turn_counts = json_object();
	answered = json_object();
	answered_at = json_object();
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	struct MHD_Daemon *d = MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, (uint16_t)port,
		NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, &sa,
		MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL, MHD_OPTION_NOTIFY_CONNECTION, on_conn,
		NULL, MHD_OPTION_CONNECTION_LIMIT, 4000u, MHD_OPTION_CONNECTION_TIMEOUT, 120u,
		MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "fake_llm: cannot listen\n");
		return 1;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	printf("port %u\n", info->port);
	fflush(stdout);
	pause();
	MHD_stop_daemon(d);
	return 0;
}
