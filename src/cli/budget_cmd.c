/*
 * budget_cmd.c - `awooop budget status|suspend|resume --project P`: a
 * project's token budget through a running server (AWOOOP_URL, AWOOOP_KEY).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void print_status(const json_t *st)
{
	printf("project %s, period %s: %lld of %lld tokens settled, %lld reserved by calls in "
	       "flight, %lld left%s%s\n",
	       json_string_value(json_object_get(st, "project")),
	       json_string_value(json_object_get(st, "period")),
	       (long long)json_integer_value(json_object_get(st, "settled")),
	       (long long)json_integer_value(json_object_get(st, "limit")),
	       (long long)json_integer_value(json_object_get(st, "reserved")),
	       (long long)json_integer_value(json_object_get(st, "remaining")),
	       json_is_true(json_object_get(st, "suspended")) ? "; SUSPENDED: " : "",
	       json_is_true(json_object_get(st, "suspended"))
		       ? json_string_value(json_object_get(st, "reason"))
		       : "");
	if (!json_is_true(json_object_get(st, "budget")))
		printf("(no active budget contract: calls are not limited)\n");
}

int aw_cmd_budget(int argc, char **argv)
{
	aw_opt opts[] = {
		{"project", NULL, NULL, 0, "the project", NULL},
		{"reason", NULL, NULL, 0, "suspend: why (audited)", NULL},
		{"json", NULL, NULL, 1, "print the API's JSON", NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *pos[1];
	int npos = 1;
	int rc = aw_cli_parse(
		argc, argv, opts, pos, &npos,
		"usage: awooop budget status|suspend|resume --project P [--reason R]\n\n"
		"status: the period's limit, settled and reserved tokens, the ledger.\n"
		"suspend: line 3 by hand - the project's model calls in flight are\n"
		"cut, its runs cancelled, new calls refused (E-BUDGET-001) in every\n"
		"gateway process within a second, until `resume`. Both are audited.");
	if (rc)
		return rc < 0 ? 0 : rc;
	const char *project = aw_cli_get(opts, "project");
	if (npos != 1 || !project)
		return aw_cli_fail(AW_E_USAGE, "give status, suspend or resume and --project");
	char path[256];
	json_t *out = NULL;
	if (!strcmp(pos[0], "status")) {
		snprintf(path, sizeof path, "/v1/projects/%s/budget", project);
		rc = aw_client_call("GET", path, NULL, &out);
	} else if (!strcmp(pos[0], "suspend") || !strcmp(pos[0], "resume")) {
		snprintf(path, sizeof path, "/v1/projects/%s/budget/%s", project, pos[0]);
		json_t *body = aw_cli_get(opts, "reason")
				       ? json_pack("{s:s}", "reason", aw_cli_get(opts, "reason"))
				       : NULL;
		rc = aw_client_call("POST", path, body, &out);
		json_decref(body);
	} else {
		return aw_cli_fail(AW_E_USAGE,
				   "the budget commands are status, suspend and resume");
	}
	if (!rc && aw_cli_get(opts, "json")) {
		char *s = json_dumps(out, JSON_INDENT(2));
		printf("%s\n", s ? s : "null");
		free(s);
	} else if (!rc) {
		print_status(out);
	}
	json_decref(out);
	return rc;
}
