/*
 * llm_cmd.c - `awooop llm`: one model call through a running server's LLM
 * gateway (POST /v1/chat/completions with AWOOOP_KEY), for a quick check of
 * routing, upstreams and credentials. Prints the answer's text (as it
 * arrives with --stream) and, on stderr, the tokens used; --json prints the
 * API's whole answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/llm_wire.h"
#include "cli.h"

typedef struct {
	aw_sse sse;
	json_t *usage;
	int failed;
} printer;

static int on_event(void *ud, const char *data, size_t n)
{
	printer *p = ud;
	if (n == 6 && !memcmp(data, "[DONE]", 6))
		return 0;
	json_t *j = json_loadb(data, n, 0, NULL);
	json_t *e = json_object_get(j, "error");
	if (e) {
		fprintf(stderr, "\nawooop: %s: %s\n",
			json_string_value(json_object_get(e, "code")) ?: "E-LLM-004",
			json_string_value(json_object_get(e, "message")) ?: "the stream failed");
		p->failed = 1;
	}
	json_t *c0 = json_array_get(json_object_get(j, "choices"), 0);
	const char *text =
		json_string_value(json_object_get(json_object_get(c0, "delta"), "content"));
	if (text) {
		fputs(text, stdout);
		fflush(stdout);
	}
	if (json_object_get(j, "usage")) {
		json_decref(p->usage);
		p->usage = json_incref(json_object_get(j, "usage"));
	}
	json_decref(j);
	return 0;
}

static int on_bytes(void *ud, const char *b, size_t n)
{
	printer *p = ud;
	aw_error err = {0};
	return aw_sse_feed(&p->sse, b, n, on_event, p, &err) ? -1 : 0;
}

static void say_usage(const json_t *u)
{
	if (u)
		fprintf(stderr, "tokens: %lld in, %lld out\n",
			(long long)json_integer_value(json_object_get(u, "prompt_tokens")),
			(long long)json_integer_value(json_object_get(u, "completion_tokens")));
}

int cmd_llm(int argc, char **argv)
{
	aw_opt opts[] = {
		{"model", NULL, NULL, 0, "route name or model (required)", NULL},
		{"task", NULL, NULL, 0, "routes by a route's match.task / match.intent", NULL},
		{"system", NULL, NULL, 0, "a system message before the prompt", NULL},
		{"schema", NULL, NULL, 0,
		 "a JSON Schema file: structured output, validated with retries", NULL},
		{"max-tokens", NULL, NULL, 0, "max_tokens of the answer", NULL},
		{"stream", NULL, NULL, 1, "print the answer as it is generated", NULL},
		{"json", NULL, NULL, 1, "print the API's whole answer", NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *pos[1];
	int npos = 1;
	int rc = cli_parse(argc, argv, opts, pos, &npos,
			   "usage: awooop llm --model M [--stream] [options] PROMPT\n\n"
			   "One chat completion through the server's LLM gateway, routed by\n"
			   "the key's project's active policy_routing revision. PROMPT - reads\n"
			   "the prompt from stdin. Talks to AWOOOP_URL with AWOOOP_KEY.\n\n"
			   "Examples:\n"
			   "  awooop llm --model chat 'Say hello in one word'\n"
			   "  echo 'Summarise: ...' | awooop llm --model chat --stream -");
	if (rc)
		return rc < 0 ? 0 : rc;
	const char *model = cli_get(opts, "model");
	if (!model || npos != 1)
		return cli_fail(AW_E_USAGE, "give --model and one PROMPT (see --help)");
	char *prompt = NULL;
	if (!strcmp(pos[0], "-")) {
		aw_buf b = AW_BUF_INIT(16u << 20);
		char chunk[4096];
		size_t n;
		while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
			aw_buf_add(&b, chunk, n);
		if (aw_buf_err(&b)) {
			aw_buf_free(&b);
			return cli_fail(AW_E_LIMIT, "the prompt is over 16 MiB");
		}
		prompt = aw_buf_take(&b);
	} else {
		prompt = aw_strdup(pos[0]);
	}
	json_t *msgs = json_array();
	if (cli_get(opts, "system"))
		json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "system", "content",
						      cli_get(opts, "system")));
	json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "user", "content", prompt));
	free(prompt);
	int stream = cli_get(opts, "stream") && !cli_get(opts, "json");
	json_t *req =
		json_pack("{s:s,s:o,s:b}", "model", model, "messages", msgs, "stream", stream);
	if (stream)
		json_object_set_new(req, "stream_options", json_pack("{s:b}", "include_usage", 1));
	long max_tokens;
	if (cli_get(opts, "max-tokens")) {
		if ((rc = cli_opt_long(opts, "max-tokens", 1, 1000000, &max_tokens))) {
			json_decref(req);
			return rc;
		}
		json_object_set_new(req, "max_tokens", json_integer(max_tokens));
	}
	if (cli_get(opts, "schema")) {
		json_t *schema = json_load_file(cli_get(opts, "schema"), 0, NULL);
		if (!json_is_object(schema)) {
			json_decref(schema);
			json_decref(req);
			return cli_fail(AW_E_USAGE,
					"--schema must be a file holding a JSON object");
		}
		json_object_set_new(req, "response_format",
				    json_pack("{s:s,s:{s:s,s:o}}", "type", "json_schema",
					      "json_schema", "name", "answer", "schema", schema));
	}
	char task[160];
	const char *headers[2] = {NULL, NULL};
	if (cli_get(opts, "task")) {
		snprintf(task, sizeof task, "X-Awooop-Task: %s", cli_get(opts, "task"));
		headers[0] = task;
	}
	if (stream) {
		printer p = {.usage = NULL};
		aw_sse_init(&p.sse, 4u << 20);
		rc = client_stream("/v1/chat/completions", req, headers, on_bytes, &p);
		aw_sse_free(&p.sse);
		if (!rc)
			printf("\n");
		say_usage(p.usage);
		json_decref(p.usage);
		json_decref(req);
		return rc ? rc : p.failed ? AW_EXIT_FAIL : 0;
	}
	json_t *out = NULL;
	rc = client_call_h("POST", "/v1/chat/completions", req, headers, &out);
	json_decref(req);
	if (rc)
		return rc;
	if (cli_get(opts, "json")) {
		char *s = json_dumps(out, JSON_INDENT(2));
		printf("%s\n", s ? s : "null");
		free(s);
	} else {
		json_t *m = json_object_get(json_array_get(json_object_get(out, "choices"), 0),
					    "message");
		const char *text = json_string_value(json_object_get(m, "content"));
		printf("%s\n", text ? text : "");
		say_usage(json_object_get(out, "usage"));
	}
	json_decref(out);
	return 0;
}
