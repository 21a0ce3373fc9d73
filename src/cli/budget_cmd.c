/*
 * budget_cmd.c - `awooop budget status|history|suspend|resume --project P`:
 * a project's token and cost budget through a running server (AWOOOP_URL,
 * AWOOOP_KEY).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static long long num(const json_t *o, const char *k)
{
	return (long long)json_number_value(json_object_get(o, k));
}

static double real(const json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

static void print_row(const char *what, const json_t *o)
{
	printf("%s: %lld of %lld tokens settled, %lld reserved by calls in flight, %lld left", what,
	       num(o, "settled"), num(o, "limit"), num(o, "reserved"), num(o, "remaining"));
	if (json_is_number(json_object_get(o, "cost_limit_usd")))
		printf("; %.6f of %.6f USD settled, %.6f reserved, %.6f left",
		       real(o, "cost_settled_usd"), real(o, "cost_limit_usd"),
		       real(o, "cost_reserved_usd"), real(o, "cost_remaining_usd"));
	else if (real(o, "cost_settled_usd") > 0)
		printf("; %.6f USD settled", real(o, "cost_settled_usd"));
	printf("\n");
}

static void print_status(const json_t *st)
{
	char what[160];
	snprintf(what, sizeof what, "project %s, period %s", cli_str(st, "project"),
		 cli_str(st, "period"));
	print_row(what, st);
	if (json_is_true(json_object_get(st, "suspended")))
		printf("SUSPENDED: %s\n", cli_str(st, "reason"));
	if (!json_is_true(json_object_get(st, "budget"))) {
		printf("(no active budget contract: calls are not limited)\n");
		return;
	}
	printf("resets: %s\n", cli_str(st, "resets"));
	size_t i;
	json_t *m;
	json_array_foreach (json_object_get(st, "models"), i, m) {
		const char *model = json_string_value(json_object_get(m, "model"));
		printf("  %-40s %12lld tokens %14.6f USD %8lld calls\n",
		       model && *model ? model : "(unknown: reaped)", num(m, "tokens"),
		       real(m, "cost_usd"), num(m, "calls"));
	}
	json_t *run = json_object_get(st, "run");
	if (json_is_object(run)) {
		snprintf(what, sizeof what, "run %s", cli_str(run, "run_id"));
		print_row(what, run);
	} else if (run) {
		printf("the run has no budget row (no call of it, or no per-run limit)\n");
	}
}

static void print_history(const json_t *h)
{
	size_t i;
	json_t *v;
	json_array_foreach (json_object_get(h, "entries"), i, v)
		printf("%8lld %-24s %-10s %-8s %10lld tokens %12.6f USD %s %s\n", num(v, "seq"),
		       cli_str(v, "at"), cli_str(v, "period"), cli_str(v, "kind"), num(v, "tokens"),
		       real(v, "cost_usd"), cli_str(v, "call_id"), cli_str(v, "model"));
	if (json_array_size(json_object_get(h, "entries")))
		printf("(more: --after %lld)\n", num(h, "next"));
}

int cmd_budget(int argc, char **argv)
{
	aw_opt opts[] = {
		{"project", "AWOOOP_PROJECT", NULL, 0, "the project (default: the key's own)",
		 NULL},
		{"reason", NULL, NULL, 0, "suspend: why (audited)", NULL},
		{"run", NULL, NULL, 0, "status, history: a run's own spend", NULL},
		{"period", NULL, NULL, 0, "history: a period key (2026-12-01, 2026-12, rolling)",
		 NULL},
		{"after", NULL, NULL, 0, "history: lines after this sequence number", NULL},
		{"limit", NULL, NULL, 0, "history: at most this many lines (1..1000)", NULL},
		{"json", NULL, NULL, 1, "print the API's JSON", NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *pos[1];
	int npos = 1;
	int rc = cli_parse(
		argc, argv, opts, pos, &npos,
		"usage: awooop budget status|history|suspend|resume [--project P] [--reason R]\n"
		"       [--run ID] [--period KEY] [--after SEQ] [--limit N] [--json]\n\n"
		"A project's token and cost budget through the API.\n"
		"status: the period's limits, settled and reserved tokens and USD, when\n"
		"it resets, what each model was charged; --run: that run's own spend.\n"
		"history: the ledger's lines (reserve, settle, release, reap), oldest\n"
		"first, of a period (--period) or a run (--run).\n"
		"suspend: line 3 by hand - the project's model calls in flight are\n"
		"cut, its runs cancelled, new calls refused (E-BUDGET-001) in every\n"
		"gateway process within a second, until `resume`. Both are audited.\n\n"
		"Examples:\n"
		"  awooop budget status\n"
		"  awooop budget history --period 2026-12 --limit 20\n"
		"  awooop budget suspend --project acme --reason \"runaway agent\"");
	if (rc)
		return rc < 0 ? 0 : rc;
	const char *project = NULL;
	if (npos != 1 || (strcmp(pos[0], "status") && strcmp(pos[0], "history") &&
			  strcmp(pos[0], "suspend") && strcmp(pos[0], "resume")))
		return cli_fail(AW_E_USAGE,
				"the budget commands are status, history, suspend and resume");
	if ((rc = cli_project(opts, &project)))
		return rc;
	char path[256];
	json_t *out = NULL;
	const char *run = cli_get(opts, "run"), *period = cli_get(opts, "period");
	const char *after = cli_get(opts, "after"), *limit = cli_get(opts, "limit");
	int history = !strcmp(pos[0], "history");
	if (!strcmp(pos[0], "status")) {
		snprintf(path, sizeof path, "/v1/projects/%s/budget%s%s", project,
			 run ? "?run=" : "", run ? run : "");
		rc = client_call("GET", path, NULL, &out);
	} else if (history) {
		snprintf(path, sizeof path,
			 "/v1/projects/%s/budget/ledger?after=%s&limit=%s%s%s%s%s", project,
			 after ? after : "0", limit ? limit : "100", run ? "&run=" : "",
			 run ? run : "", period ? "&period=" : "", period ? period : "");
		rc = client_call("GET", path, NULL, &out);
	} else if (!strcmp(pos[0], "suspend") || !strcmp(pos[0], "resume")) {
		snprintf(path, sizeof path, "/v1/projects/%s/budget/%s", project, pos[0]);
		json_t *body = cli_get(opts, "reason")
				       ? json_pack("{s:s}", "reason", cli_get(opts, "reason"))
				       : NULL;
		rc = client_call("POST", path, body, &out);
		json_decref(body);
	} else {
		return cli_fail(AW_E_USAGE,
				"the budget commands are status, history, suspend and resume");
	}
	if (!rc && cli_get(opts, "json")) {
		cli_print_json(out);
	} else if (!rc && history) {
		print_history(out);
	} else if (!rc) {
		print_status(out);
	}
	json_decref(out);
	return rc;
}
