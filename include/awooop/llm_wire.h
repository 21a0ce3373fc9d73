/*
 * llm_wire.h - the LLM gateway's wire formats, pure functions (fuzzed):
 *
 *   - incremental parsers for the two upstream stream framings: Server-Sent
 *     Events (OpenAI-compatible servers) and NDJSON (Ollama's /api/chat);
 *   - the client request check (an OpenAI chat completion request);
 *   - translation to Ollama's /api/chat and back, whole or chunk by chunk;
 *   - the OpenAI chunk and completion documents the gateway writes itself.
 *
 * Parsers hold at most max bytes of an unfinished event or line: past that
 * they fail with AW_E_LIMIT rather than grow. Callbacks return 0 to go on,
 * non-zero to stop the feed (returned as AW_E_INTERNAL with err unset).
 */
#ifndef AWOOOP_LLM_WIRE_H
#define AWOOOP_LLM_WIRE_H

#include <jansson.h>
#include <stdint.h>

#include "awooop/buf.h"

typedef int (*aw_llm_sink)(void *ud, const char *data, size_t len);

typedef struct {
	aw_buf line, data;
	int has_data, cr; /* cr: the last byte was '\r' (a following '\n' is the same end) */
} aw_sse;
void aw_sse_init(aw_sse *p, size_t max);
/* Calls on_event with each event's data (data lines joined by '\n'). */
aw_err aw_sse_feed(aw_sse *p, const char *buf, size_t n, aw_llm_sink on_event, void *ud,
		   aw_error *err);
void aw_sse_free(aw_sse *p);

typedef struct {
	aw_buf line;
} aw_ndjson;
void aw_ndjson_init(aw_ndjson *p, size_t max);
/* Calls on_line with each non-empty line; aw_ndjson_end() flushes a last line
 * without its newline. */
aw_err aw_ndjson_feed(aw_ndjson *p, const char *buf, size_t n, aw_llm_sink on_line, void *ud,
		      aw_error *err);
aw_err aw_ndjson_end(aw_ndjson *p, aw_llm_sink on_line, void *ud, aw_error *err);
void aw_ndjson_free(aw_ndjson *p);

/* What the gateway needs from a client's request. Pointers borrow from req. */
typedef struct {
	const char *model;
	int stream, include_usage;
	const json_t *schema; /* response_format json_schema's schema, or NULL */
	int json_mode;	      /* response_format json_object */
	int n;		      /* choices asked (1..128) */
	int embeddings;	      /* an embeddings request (aw_llm_embed_check) */
} aw_llm_req;
/* Checks an OpenAI chat completion request (model, messages and their
 * content parts, stream, stream_options, response_format, n, the output
 * bounds, numbers): AW_E_REQ_INVALID with a pointer. Its members are an
 * allow-list: an unknown one is refused (AW_E_REQ_UNKNOWN_FIELD), for an
 * upstream may bill it; one billed in a way the budget cannot price (audio,
 * web search, predicted outputs, a paid service tier, audio or file parts)
 * is refused with AW_E_BUDGET_UNPRICED. */
aw_err aw_llm_req_check(const json_t *req, aw_llm_req *out, aw_error *err);

/* Checks an OpenAI embeddings request: model, input (a string, an array
 * of strings, of token ids, or of arrays of token ids; at most 2048 inputs),
 * encoding_format (float or base64), dimensions, user; an allow-list like
 * the chat check (AW_E_REQ_UNKNOWN_FIELD). */
aw_err aw_llm_embed_check(const json_t *req, aw_llm_req *out, aw_error *err);
/* What every request decoder of the gateway checks first: req is an object
 * whose numbers pass the number policy and whose members are all in known
 * (NULL-ended); an unknown one is AW_E_REQ_UNKNOWN_FIELD with its pointer,
 * said as "not <api> field this gateway knows" (an upstream may bill what
 * is passed on unread). Pure. */
aw_err aw_llm_wire_fields(const json_t *req, const char *const *known, const char *api,
			  aw_error *err);
/* The prompt an embeddings request bills at most: its strings' bytes (a
 * token is at least one byte) and its token ids, one each. */
long long aw_llm_embed_bound(const json_t *req);

/* The body for an Ollama /api/chat call: messages (text parts joined),
 * tools, format (json or the schema), options (temperature, top_p, seed,
 * stop, max_tokens as num_predict). n > 1 is AW_E_LLM_WIRE (Ollama answers
 * one choice). New reference. */
aw_err aw_llm_to_ollama(const json_t *req, const char *model, int stream, json_t **out,
			aw_error *err);

/* The content blocks of one Anthropic answer a stream may index. */
#define AW_LLM_MAX_BLOCKS 128
#define AW_LLM_MODEL_MAX 128 /* bytes of a model name (a route's, a key's) */

typedef struct {
	char id[48]; /* "chatcmpl-..." */
	int64_t created;
	const char *model; /* the model the client asked for */
	int64_t tokens_in, tokens_out;
	int usage_seen;
	int role_sent;
	/* Anthropic upstreams: the prompt's cache writes and reads (counted in
	 * tokens_in too), the finish reason a message_delta said, and each
	 * content block's tool call (index + 1; 0: not a tool_use block) */
	int64_t cache_write, cache_read;
	char finish[16];
	int ntools;
	short blk_tool[AW_LLM_MAX_BLOCKS];
} aw_llm_stream_state;
/* Appends "data: <ev as compact JSON>\n\n" (an SSE event) to out; steals
 * ev (NULL: out of memory). AW_E_NOMEM on failure. */
aw_err aw_llm_sse_data(aw_buf *out, json_t *ev);
/* A chat.completion.chunk of st's id, time and model with one choice: delta
 * (stolen) and finish (NULL: the JSON null OpenAI sends until the end). */
json_t *aw_llm_chunk(const aw_llm_stream_state *st, json_t *delta, const char *finish);

/* An Ollama /api/chat answer (not streamed) as an OpenAI chat.completion. */
aw_err aw_llm_from_ollama(const json_t *resp, aw_llm_stream_state *st, json_t **out, aw_error *err);
/* One Ollama NDJSON line as SSE bytes appended to out ("data: {...}\n\n";
 * the usage chunk when include_usage and the line is the last); *done is set
 * on the line with "done": true. */
aw_err aw_llm_chunk_from_ollama(const char *line, size_t len, aw_llm_stream_state *st,
				int include_usage, aw_buf *out, int *done, aw_error *err);
/* An OpenAI SSE event's data from an upstream: reads usage when present
 * (into st). *keep is 0 for the usage-only chunk the gateway asked for when
 * the client did not; *done for "[DONE]". */
aw_err aw_llm_sse_event(const char *data, size_t len, aw_llm_stream_state *st, int include_usage,
			int *keep, int *done, aw_error *err);
/* Reads "usage" of an OpenAI chat.completion into st; the assistant's text
 * (choices[0].message.content) or NULL. */
const char *aw_llm_completion_usage(const json_t *resp, aw_llm_stream_state *st);
/* A whole chat.completion re-sent as SSE chunks: role+content, finish,
 * usage (when include_usage), [DONE]. */
aw_err aw_llm_completion_as_sse(const json_t *resp, int include_usage, aw_buf *out);

/* ---- Anthropic Messages API upstreams (wire_anthropic.c) */

/* What a JSON-output request asks an upstream without response_format in
 * its system prompt (before the schema, when there is one). */
#define AW_LLM_JSON_INSTRUCTION "Answer with one JSON document only, no prose around it."
/* The tokens Anthropic adds to a prompt that offers tools (its tool-use
 * system prompt: at most 530 for the models it documents), held by the
 * prompt's bound for Anthropic targets. */
#define AW_LLM_ANTHROPIC_TOOL_TOKENS 600
/* The Messages API version the gateway speaks (the anthropic-version header). */
#define AW_ANTHROPIC_VERSION "2023-06-01"

/* The body for POST {base}/messages from a checked chat completion request:
 * system, messages as content blocks, tools and tool_choice, max_tokens
 * (always: the API requires it), temperature (at most 1), top_p, stop as
 * stop_sequences, user as metadata.user_id; JSON output asked in the system
 * prompt. AW_E_LLM_WIRE (with a pointer) when the Messages API cannot
 * express the request. New reference. */
aw_err aw_llm_to_anthropic(const json_t *req, const char *model, int stream, json_t **out,
			   aw_error *err);
/* A Messages API answer (not streamed) as an OpenAI chat.completion (text
 * blocks joined, tool_use blocks as tool_calls, stop_reason as
 * finish_reason); its usage into st. */
aw_err aw_llm_from_anthropic(const json_t *resp, aw_llm_stream_state *st, json_t **out,
			     aw_error *err);
/* One Messages API stream event's data as OpenAI chunks appended to out
 * ("data: ...\n\n"; after message_stop: the finish chunk, the usage chunk
 * when include_usage, [DONE], and *done set). *content is set when the event
 * carried answer content (a text or tool delta). */
aw_err aw_llm_event_from_anthropic(const char *data, size_t len, aw_llm_stream_state *st,
				   int include_usage, aw_buf *out, int *content, int *done,
				   aw_error *err);

/* ---- the Anthropic-compatible front door, POST /v1/messages (wire_messages.c) */

/* A Messages API request as the chat completion request the gateway routes
 * (system as a system message, tool_result blocks as tool messages, tool_use
 * blocks as tool_calls, images as image_url parts, tools and tool_choice,
 * stop_sequences as stop, metadata.user_id as user; a stream asks for its
 * usage). Its members are an allow-list (AW_E_REQ_UNKNOWN_FIELD); server
 * tools and extended thinking are AW_E_BUDGET_UNPRICED; max_tokens is
 * required, as the API requires it. New reference. */
aw_err aw_llm_messages_to_chat(const json_t *req, json_t **out, aw_error *err);
/* A chat.completion as a Messages API message (text and tool_use blocks,
 * finish_reason as stop_reason, usage with its cache parts). New reference. */
aw_err aw_llm_chat_to_message(const json_t *completion, json_t **out, aw_error *err);
/* The Messages API's error type for an HTTP status. */
const char *aw_llm_anthropic_error_type(int status);

/* A chat.completion.chunk stream re-written as the Messages API's events. */
typedef struct {
	char id[80], model[160];
	int started, done;
	int blocks;	/* content blocks opened */
	int open, kind; /* the open block (-1: none); its kind: -1 text, else a tool call's index */
	char finish[24];
	json_t *usage; /* the last usage chunk's */
} aw_msgs_stream;
/* model: the request's, which aw_llm_messages_to_chat bounds to
 * AW_LLM_MODEL_MAX bytes ("" when longer: never a cut name). */
void aw_msgs_stream_init(aw_msgs_stream *s, const char *model);
/* One SSE event's data of the gateway's chunk stream ("[DONE]" included) as
 * named events appended to out ("event: NAME\ndata: {...}\n\n"): message_start
 * before the first, content_block_start/delta/stop for text and tool calls,
 * message_delta (stop_reason, usage) and message_stop at [DONE]; the
 * gateway's error event as an `error` event. */
aw_err aw_llm_chunk_to_anthropic(const char *data, size_t len, aw_msgs_stream *s, aw_buf *out);
void aw_msgs_stream_free(aw_msgs_stream *s);

/* ---- OpenAI's Responses API on the way in, POST /v1/responses (wire_responses.c) */

/* A Responses request as the chat completion request the gateway routes:
 * instructions as a system message, input (a string, or message,
 * function_call and function_call_output items), function tools and
 * tool_choice, max_output_tokens as max_tokens, text.format as
 * response_format, reasoning.effort; a stream asks for its usage. An
 * allow-list (AW_E_REQ_UNKNOWN_FIELD); previous_response_id and store: true
 * are refused (the gateway keeps no responses); hosted tools and file inputs
 * are AW_E_BUDGET_UNPRICED. New reference. */
aw_err aw_llm_responses_to_chat(const json_t *req, json_t **out, aw_error *err);
/* A chat.completion as a `response` object (a message item of output_text,
 * function_call items, status completed or incomplete at max_output_tokens,
 * usage). New reference. */
aw_err aw_llm_chat_to_response(const json_t *completion, json_t **out, aw_error *err);

/* A chat.completion.chunk stream re-written as the Responses API's events. */
typedef struct {
	char id[80], model[160];
	int seq, done;
	int items;	/* output items opened */
	int open, kind; /* the open item (-1: none); -1 a message, else a tool call's index */
	char call_id[128], name[128];
	aw_buf acc; /* the open item's text or arguments so far */
	char finish[24];
	json_t *resp;  /* the response as it grows (created at the first chunk) */
	json_t *usage; /* the last usage chunk's */
} aw_resp_stream;
/* model: as aw_msgs_stream_init's (aw_llm_responses_to_chat bounds it). */
void aw_resp_stream_init(aw_resp_stream *s, const char *model);
/* One SSE event's data of the gateway's chunk stream ("[DONE]" included) as
 * the Responses API's named events appended to out, each with its
 * sequence_number; response.completed (or .incomplete) at [DONE], with the
 * whole response; the gateway's error event as response.failed. */
aw_err aw_llm_chunk_to_responses(const char *data, size_t len, aw_resp_stream *s, aw_buf *out);
void aw_resp_stream_free(aw_resp_stream *s);

#endif
