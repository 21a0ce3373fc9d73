/*
 * example_mcp.c - awooop-example-mcp, the MCP server that ships with awooop
 * for onboarding examples (examples/ewoooc.json): four read-only operations
 * tools over a small built-in data set, speaking MCP over stdio (JSON-RPC
 * lines; protocol 2025-11-25). It never writes anything anywhere.
 *   search_logs {query, limit?}   log lines containing query
 *   get_metrics {name}            the last samples of a metric
 *   list_pods {namespace?}        pods and their state
 *   get_incident {id}             one incident
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const logs[] = {
	"2026-12-01T10:00:01Z api-7f9c INFO request served path=/v1/orders status=200 ms=12",
	"2026-12-01T10:00:02Z api-7f9c WARN slow query table=orders ms=840",
	"2026-12-01T10:00:05Z worker-2b1d ERROR job failed id=8812 reason=timeout",
	"2026-12-01T10:00:07Z api-7f9c INFO request served path=/v1/users status=200 ms=9",
	"2026-12-01T10:00:09Z worker-2b1d INFO job retried id=8812 attempt=2",
	"2026-12-01T10:00:12Z db-0 WARN replication lag seconds=4",
	NULL};
static const struct {
	const char *name, *ns, *state;
	int restarts;
} pods[] = {{"api-7f9c", "shop", "Running", 0},
	    {"worker-2b1d", "shop", "Running", 3},
	    {"db-0", "data", "Running", 0},
	    {"cron-55aa", "shop", "CrashLoopBackOff", 12}};
static const struct {
	const char *id, *title, *severity, *status;
} incidents[] = {{"INC-101", "Order API latency above SLO", "high", "investigating"},
		 {"INC-102", "Nightly export failed", "low", "resolved"}};

static json_t *schema(const char *req, ...)
{
	/* properties given as NULL-ended (name, type) pairs; req: the required one */
	json_t *props = json_object();
	va_list ap;
	va_start(ap, req);
	for (const char *n; (n = va_arg(ap, const char *));)
		json_object_set_new(props, n, json_pack("{s:s}", "type", va_arg(ap, const char *)));
	va_end(ap);
	json_t *s = json_pack("{s:s,s:o,s:b}", "type", "object", "properties", props,
			      "additionalProperties", 0);
	if (req)
		json_object_set_new(s, "required", json_pack("[s]", req));
	return s;
}

/* a property's allowed values ("enum") or sample ones ("examples") */
static json_t *with(json_t *schema, const char *prop, const char *kw, json_t *values)
{
	json_object_set_new(json_object_get(json_object_get(schema, "properties"), prop), kw,
			    values);
	return schema;
}

static json_t *tools(void)
{
	const json_t *ro = json_pack("{s:b}", "readOnlyHint", 1);
	json_t *t = json_pack(
		"[{s:s,s:s,s:o,s:O},{s:s,s:s,s:o,s:O},{s:s,s:s,s:o,s:O},{s:s,s:s,s:o,s:O}]", "name",
		"search_logs", "description", "Search recent log lines for a text", "inputSchema",
		with(schema("query", "query", "string", "limit", "integer", NULL), "query",
		     "examples", json_pack("[s]", "ERROR")),
		"annotations", ro, "name", "get_metrics", "description",
		"The last samples of a metric (cpu, memory, requests)", "inputSchema",
		with(schema("name", "name", "string", NULL), "name", "enum",
		     json_pack("[sss]", "cpu", "memory", "requests")),
		"annotations", ro, "name", "list_pods", "description",
		"Pods and their state, optionally of one namespace", "inputSchema",
		schema(NULL, "namespace", "string", NULL), "annotations", ro, "name",
		"get_incident", "description", "One incident by id", "inputSchema",
		with(schema("id", "id", "string", NULL), "id", "examples",
		     json_pack("[s]", "INC-101")),
		"annotations", ro);
	json_decref((json_t *)ro);
	return t;
}

static json_t *text(const char *s, int is_error)
{
	return json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", s, "isError",
			 is_error);
}

static json_t *call(const char *name, json_t *args)
{
	char out[4096] = "";
	size_t n = 0;
	if (!strcmp(name, "search_logs")) {
		const char *q = json_string_value(json_object_get(args, "query"));
		json_int_t limit = json_integer_value(json_object_get(args, "limit"));
		int k = 0;
		for (int i = 0; q && logs[i] && (limit <= 0 || k < limit); i++)
			if (strstr(logs[i], q) && n < sizeof out - 200) {
				n += (size_t)snprintf(out + n, sizeof out - n, "%s\n", logs[i]);
				k++;
			}
		return text(k ? out : "no matching log lines", 0);
	}
	if (!strcmp(name, "get_metrics")) {
		const char *m = json_string_value(json_object_get(args, "name"));
		const char *v = !m			 ? NULL
				: !strcmp(m, "cpu")	 ? "cpu (cores): 1.2 1.4 1.9 1.3"
				: !strcmp(m, "memory")	 ? "memory (GiB): 3.1 3.2 3.2 3.3"
				: !strcmp(m, "requests") ? "requests/s: 220 240 310 205"
							 : NULL;
		return v ? text(v, 0) : text("unknown metric (cpu, memory, requests)", 1);
	}
	if (!strcmp(name, "list_pods")) {
		const char *ns = json_string_value(json_object_get(args, "namespace"));
		for (size_t i = 0; i < sizeof pods / sizeof pods[0]; i++)
			if (!ns || !strcmp(ns, pods[i].ns))
				n += (size_t)snprintf(
					out + n, sizeof out - n, "%s/%s %s restarts=%d\n",
					pods[i].ns, pods[i].name, pods[i].state, pods[i].restarts);
		return text(n ? out : "no pods", 0);
	}
	if (!strcmp(name, "get_incident")) {
		const char *id = json_string_value(json_object_get(args, "id"));
		for (size_t i = 0; id && i < sizeof incidents / sizeof incidents[0]; i++)
			if (!strcmp(id, incidents[i].id)) {
				snprintf(out, sizeof out, "%s: %s (severity %s, %s)",
					 incidents[i].id, incidents[i].title, incidents[i].severity,
					 incidents[i].status);
				return text(out, 0);
			}
		return text("no such incident", 1);
	}
	return NULL;
}

static json_t *answer(json_t *m)
{
	json_t *id = json_object_get(m, "id");
	const char *method = json_string_value(json_object_get(m, "method"));
	if (!id || !method)
		return NULL; /* notifications and responses */
	json_t *params = json_object_get(m, "params"), *res = NULL;
	if (!strcmp(method, "initialize"))
		res = json_pack("{s:s,s:{s:{}},s:{s:s,s:s}}", "protocolVersion", "2025-11-25",
				"capabilities", "tools", "serverInfo", "name", "awooop-example-mcp",
				"version", "1.0.0");
	else if (!strcmp(method, "tools/list"))
		res = json_pack("{s:o}", "tools", tools());
	else if (!strcmp(method, "ping"))
		res = json_object();
	else if (!strcmp(method, "tools/call"))
		res = call(json_string_value(json_object_get(params, "name")) ?: "",
			   json_object_get(params, "arguments"));
	if (!res)
		return json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id, "error",
				 "code", !strcmp(method, "tools/call") ? -32602 : -32601, "message",
				 !strcmp(method, "tools/call") ? "unknown tool"
							       : "method not found");
	return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", res);
}

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		puts("usage: awooop-example-mcp\n\nAn MCP server on stdio with four read-only "
		     "tools (search_logs, get_metrics,\nlist_pods, get_incident) over built-in "
		     "data, for awooop's onboarding examples.");
		return 0;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, stdin)) > 0) {
		json_t *m = json_loadb(line, (size_t)n, 0, NULL);
		json_t *r = m ? answer(m)
			      : json_pack("{s:s,s:n,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", "error",
					  "code", -32700, "message", "parse error");
		if (r) {
			char *s = json_dumps(r, JSON_COMPACT);
			if (s)
				printf("%s\n", s);
			fflush(stdout);
			free(s);
		}
		json_decref(r);
		json_decref(m);
	}
	free(line);
	return 0;
}
