/*
 * run_cmd.c - `awooop run`: submit, get, list, cancel and diff runs through a
 * running server (AWOOOP_URL, AWOOOP_KEY; the project is the key's). The
 * step kinds --help lists come from the executor registry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "awooop/agent.h"
#include "awooop/approval.h"
#include "awooop/buf.h"
#include "awooop/llm.h"
#include "awooop/mcp.h"
#include "awooop/run.h"
#include "awooop/executor.h"
#include "awooop/str.h"
#include "awooop/uuid.h"
#include "cli.h"

static void print_row(json_t *r)
{
	const char *err = json_string_value(json_object_get(r, "error_code"));
	printf("%s  %-16s %-6s attempts %lld/%lld  %s%s%s\n", cli_str(r, "run_id"),
	       cli_str(r, "state"), cli_str(r, "mode"),
	       (long long)json_integer_value(json_object_get(r, "attempts")),
	       (long long)json_integer_value(json_object_get(r, "max_attempts")),
	       cli_str(r, "created_at"), err ? "  " : "", err ? err : "");
}

static void print_json(json_t *doc)
{
	cli_print_json(doc);
}

/* "noop, sleep, ...": every step kind of this binary, from the executor
 * registry. The services' kinds are registered as serve registers them
 * (here without their live handles: the CLI runs no step). */
static void step_kinds(char *out, size_t cap)
{
	aw_llm_register_executor(NULL);
	aw_approvals_register_executor(NULL);
	aw_mcp_register_executor(NULL, NULL);
	aw_agent_register_executor(NULL, NULL, NULL);
	const char *kinds[32];
	size_t n = aw_executor_kinds(kinds, 32), o = 0;
	out[0] = 0;
	for (size_t i = 0; i < n && i < 32 && o < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? ", " : "", kinds[i]);
}

static int terminal(const char *state)
{
	aw_run_state st;
	return state && aw_run_state_parse(state, &st) == 0 && aw_run_state_terminal(st);
}

/* The whole of a file ("-": stdin), or NULL. */
static char *read_all(const char *file)
{
	FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
	if (!f)
		return NULL;
	aw_buf b = AW_BUF_INIT((size_t)1 << 30);
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		aw_buf_add(&b, chunk, n);
	if (f != stdin)
		fclose(f);
	if (aw_buf_err(&b)) {
		aw_buf_free(&b);
		return NULL;
	}
	return aw_buf_take(&b);
}

/* JSON lines, one run request each (with its own "idempotency_key"), sent
 * in batches of up to 1,000 (POST /v1/platform/runs:batch). Prints one
 * result per line; exit 1 when any run was refused. */
static int submit_lines(char *text)
{
	json_t *runs = json_array();
	long line = 0, refused = 0, created = 0, replayed = 0;
	int rc = 0;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); !rc;
	     l = strtok_r(NULL, "\n", &save)) {
		if (l) {
			line++;
			if (!l[strspn(l, " \t\r")])
				continue;
			json_error_t je;
			json_t *one = json_loads(l, 0, &je);
			if (!one) {
				char msg[300];
				snprintf(msg, sizeof msg, "--file line %ld: %s", line, je.text);
				rc = cli_fail(AW_E_USAGE, msg);
				break;
			}
			json_array_append_new(runs, one);
		}
		if (json_array_size(runs) == AW_RUN_BATCH_MAX || (!l && json_array_size(runs))) {
			json_t *body = json_pack("{s:O}", "runs", runs), *doc = NULL;
			rc = client_call("POST", "/v1/platform/runs:batch", body, &doc);
			json_decref(body);
			size_t i;
			json_t *r;
			json_array_foreach (json_object_get(doc, "results"), i, r) {
				char *s = json_dumps(r, JSON_COMPACT);
				printf("%s\n", s ? s : "null");
				free(s);
			}
			created += (long)json_integer_value(json_object_get(doc, "created"));
			replayed += (long)json_integer_value(json_object_get(doc, "replayed"));
			refused += (long)json_integer_value(json_object_get(doc, "refused"));
			json_decref(doc);
			json_array_clear(runs);
		}
		if (!l)
			break;
	}
	json_decref(runs);
	fprintf(stderr, "runs: %ld created, %ld replayed, %ld refused\n", created, replayed,
		refused);
	return rc ? rc : refused ? AW_EXIT_FAIL : 0;
}

/* run queues / run queue NAME: the project's queues, one declared or changed. */
static int queues(const char *verb, const char *name, const aw_opt *opts, const char *conc,
		  int as_json)
{
	int one = !strcmp(verb, "queue");
	if (name && !aw_run_queue_name_ok(name))
		return cli_fail(AW_E_USAGE, "NAME: 1..64 letters, digits, '.', '_' or '-'");
	if (one && (!name || !conc))
		return cli_fail(AW_E_USAGE, "give the queue's NAME and --concurrency N|none");
	char path[256], *end = NULL;
	const char *project = NULL;
	int rc = cli_project(opts, &project);
	if (rc)
		return rc;
	snprintf(path, sizeof path, "/v1/projects/%s/queues", project);
	json_t *doc = NULL, *body = NULL;
	if (one) {
		long n = strcmp(conc, "none") ? strtol(conc, &end, 10) : 0;
		if (strcmp(conc, "none") &&
		    (!*conc || *end || n < 1 || n > AW_RUN_QUEUE_CONCURRENCY_MAX))
			return cli_fail(AW_E_USAGE, "--concurrency: 1..100000 or none");
		body = json_pack("{s:o}", "concurrency", n ? json_integer(n) : json_null());
		if (strlen(name) > AW_QUEUE_MAX) /* never a cut name: another queue */
			return cli_fail(AW_E_USAGE, "a queue name is at most 64 bytes");
		snprintf(path + strlen(path), sizeof path - strlen(path), "/%s", name);
		rc = client_call("PUT", path, body, &doc);
		json_decref(body);
	} else {
		rc = client_call("GET", path, NULL, &doc);
	}
	if (rc)
		return rc;
	if (as_json) {
		print_json(doc);
		json_decref(doc);
		return 0;
	}
	json_t *items = one ? json_pack("[O]", doc) : json_incref(json_object_get(doc, "items"));
	size_t i;
	json_t *q;
	printf("%-24s %11s %8s %8s\n", "queue", "concurrency", "queued", "running");
	json_array_foreach (items, i, q) {
		json_t *c = json_object_get(q, "concurrency");
		char lim[16] = "none";
		if (json_is_integer(c))
			snprintf(lim, sizeof lim, "%lld", (long long)json_integer_value(c));
		printf("%-24s %11s %8lld %8lld\n", cli_str(q, "name"), lim,
		       (long long)json_integer_value(json_object_get(q, "queued")),
		       (long long)json_integer_value(json_object_get(q, "running")));
	}
	json_decref(items);
	json_decref(doc);
	return 0;
}

int cmd_run(int argc, char **argv)
{
	aw_opt opts[] = {
		{"file", NULL, NULL, 0,
		 "submit: the request JSON file (- for stdin); JSON lines: a batch", NULL},
		{"idempotency-key", NULL, NULL, 0, "submit: Idempotency-Key (24 h)", NULL},
		{"traceparent", NULL, NULL, 0, "submit: continue this W3C trace", NULL},
		{"wait", NULL, NULL, 1,
		 "submit: wait until the run finishes; exit 1 unless it succeeded", NULL},
		{"state", NULL, NULL, 0, "list: only runs in this state", NULL},
		{"limit", NULL, "50", 0, "list: page size 1..1000", NULL},
		{"cursor", NULL, NULL, 0, "list: next_cursor of the previous page", NULL},
		{"project", "AWOOOP_PROJECT", NULL, 0,
		 "queues, queue: the project (default: the key's own)", NULL},
		{"concurrency", NULL, NULL, 0,
		 "queue: at most N of its runs claimed or running at once (none: no limit)", NULL},
		{"json", NULL, NULL, 1, "print the API's JSON", NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	char kinds[400], usage[4096];
	step_kinds(kinds, sizeof kinds);
	snprintf(
		usage, sizeof usage,
		"usage: awooop run VERB [args] [options]\n\n"
		"Durable runs of the key's project: a workflow of steps that workers\n"
		"execute, journal and retry.\n\n"
		"Verbs:\n"
		"  submit --file REQUEST.json [--idempotency-key K] [--wait]\n"
		"  submit --file RUNS.jsonl    one request per line (its own idempotency_key),\n"
		"                              sent 1,000 at a time; a result per line\n"
		"  get RUN_ID                  state, attempts, step journal, transitions\n"
		"  list [--state S] [--limit N] [--cursor C]   newest first\n"
		"  cancel RUN_ID\n"
		"  diff SHADOW_RUN LIVE_RUN    compare two runs' journals step by step\n"
		"  queues [--project P]        the project's queues: limit, queued, running\n"
		"  queue NAME --concurrency N|none [--project P]\n"
		"                              declare a queue, or change its limit\n\n"
		"A request: {\"workflow\": [STEP, ...],\n"
		"\"input\": ..., \"mode\": \"live\"|\"shadow\", \"priority\": 0, \"max_attempts\": 3,\n"
		"\"timeout_s\": 300, \"queue\": \"default\", \"run_at\": TIME}; a STEP:\n"
		"{\"kind\": KIND, \"args\": {...}, \"name\"?, \"when\"?, \"retry\"?}, where an\n"
		"argument {\"$ref\": \"/steps/NAME/result/...\"} (or \"/input/...\") takes an\n"
		"earlier named step's result (or the input).\n"
		"Step kinds: %s\n"
		"(the arguments of each: docs/cli.md; references, conditions, retries:\n"
		"docs/internals/runtime.md).\n"
		"Talks to AWOOOP_URL with AWOOOP_KEY.\n\n"
		"Examples:\n"
		"  echo '{\"workflow\":[{\"kind\":\"http\",\"args\":{\"url\":\"https://example.com\"}}]}' |\n"
		"    awooop run submit --file - --wait\n"
		"  awooop run list --state failed --limit 20\n"
		"  awooop run queue mail --concurrency 2",
		kinds);
	const char *pos[3];
	int npos = 3;
	int rc = cli_parse(argc, argv, opts, pos, &npos, usage);
	if (rc)
		return rc < 0 ? 0 : rc;
	const char *verb = npos ? pos[0] : "";
	int as_json = cli_get(opts, "json") != NULL;
	char path[512];
	json_t *doc = NULL;
	if (!strcmp(verb, "submit")) {
		const char *file = cli_get(opts, "file");
		json_error_t je;
		char *text = file ? read_all(file) : NULL;
		json_t *body = text ? json_loads(text, 0, &je) : NULL;
		if (!body && text && strchr(text, '\n')) { /* JSON lines: a batch */
			if (cli_get(opts, "wait") || cli_get(opts, "idempotency-key")) {
				free(text);
				return cli_fail(AW_E_USAGE,
						"JSON lines: put idempotency_key in each line; no "
						"--wait");
			}
			rc = submit_lines(text);
			free(text);
			return rc;
		}
		free(text);
		if (!body) {
			char msg[300];
			snprintf(msg, sizeof msg, "--file: %s",
				 !file	? "required"
				 : text ? je.text
					: "cannot be read");
			return cli_fail(AW_E_USAGE, msg);
		}
		char ik[300], tp[128];
		const char *hdr[3] = {NULL, NULL, NULL};
		int nh = 0;
		/* whole or refused: a cut key would be another run's key */
		if (cli_get(opts, "idempotency-key")) {
			if ((size_t)snprintf(ik, sizeof ik, "Idempotency-Key: %s",
					     cli_get(opts, "idempotency-key")) >= sizeof ik)
				return cli_fail(AW_E_USAGE, "--idempotency-key is too long");
			hdr[nh++] = ik;
		}
		if (cli_get(opts, "traceparent")) {
			if ((size_t)snprintf(tp, sizeof tp, "traceparent: %s",
					     cli_get(opts, "traceparent")) >= sizeof tp)
				return cli_fail(AW_E_USAGE, "--traceparent is too long");
			hdr[nh++] = tp;
		}
		rc = client_call_h("POST", "/v1/platform/runs", body, hdr, &doc);
		json_decref(body);
		if (rc)
			return rc;
		if (cli_get(opts, "wait")) {
			char id[AW_UUID_STR_LEN + 1];
			if (AW_STR_COPY(id, cli_str(doc, "run_id")) < 0) {
				json_decref(doc);
				return cli_fail(AW_E_CLIENT,
						"the server answered a malformed run id");
			}
			snprintf(path, sizeof path, "/v1/platform/runs/%s", id);
			char shown[32] = "";
			while (!rc && !terminal(json_string_value(json_object_get(doc, "state")))) {
				/* progress on stderr: each state the run passes through */
				const char *st = json_string_value(json_object_get(doc, "state"));
				if (st && strcmp(st, shown)) {
					fprintf(stderr, "run %s: %s\n", id, st);
					(void)!AW_STR_COPY(shown, st); /* "": said again */
				}
				struct timespec ts = {0, 200000000L};
				nanosleep(&ts, NULL);
				json_decref(doc);
				doc = NULL;
				rc = client_call("GET", path, NULL, &doc);
			}
			if (rc)
				return rc;
		}
	} else if (!strcmp(verb, "get") || !strcmp(verb, "cancel")) {
		if (npos != 2 || !aw_uuid_valid(pos[1]))
			return cli_fail(AW_E_USAGE, "give one run id (UUID)");
		snprintf(path, sizeof path, "/v1/platform/runs/%s%s", pos[1],
			 strcmp(verb, "cancel") ? "" : "/cancel");
		if ((rc = client_call(strcmp(verb, "cancel") ? "GET" : "POST", path, NULL, &doc)))
			return rc;
		as_json |= !strcmp(verb, "get");
	} else if (!strcmp(verb, "diff")) {
		if (npos != 3 || !aw_uuid_valid(pos[1]) || !aw_uuid_valid(pos[2]))
			return cli_fail(AW_E_USAGE, "give two run ids: SHADOW_RUN LIVE_RUN");
		snprintf(path, sizeof path, "/v1/platform/runs/%s/diff/%s", pos[1], pos[2]);
		if ((rc = client_call("GET", path, NULL, &doc)))
			return rc;
		as_json = 1;
	} else if (!strcmp(verb, "list")) {
		const char *lim = cli_get(opts, "limit"), *st = cli_get(opts, "state"),
			   *cur = cli_get(opts, "cursor");
		if (strlen(lim) > 8 || (st && strlen(st) > 20) || (cur && strlen(cur) > 40))
			return cli_fail(AW_E_USAGE, "--limit, --state or --cursor is too long");
		int o = snprintf(path, sizeof path, "/v1/platform/runs?limit=%s", lim);
		if (st)
			o += snprintf(path + o, sizeof path - (size_t)o, "&state=%s", st);
		if (cur)
			snprintf(path + o, sizeof path - (size_t)o, "&cursor=%s", cur);
		if ((rc = client_call("GET", path, NULL, &doc)))
			return rc;
		if (!as_json) {
			size_t i;
			json_t *r;
			json_array_foreach (json_object_get(doc, "items"), i, r)
				print_row(r);
			const char *next = json_string_value(json_object_get(doc, "next_cursor"));
			if (next)
				printf("next: --cursor %s\n", next);
			json_decref(doc);
			return 0;
		}
	} else if (!strcmp(verb, "queues") || !strcmp(verb, "queue")) {
		return queues(verb, npos == 2 ? pos[1] : NULL, opts, cli_get(opts, "concurrency"),
			      as_json);
	} else {
		cli_usage(usage, opts);
		return AW_EXIT_USAGE;
	}
	if (as_json)
		print_json(doc);
	else
		print_row(doc);
	int ok = !cli_get(opts, "wait") || !strcmp(cli_str(doc, "state"), "succeeded");
	json_decref(doc);
	return ok ? 0 : AW_EXIT_FAIL;
}
