/*
 * redaction_cmd.c - `awooop redaction get|set|clear`: a project's custom
 * redaction patterns through the HTTP API (setting needs a platform-admin
 * key). Also the list-file reader `awooop redact --custom FILE` shares.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/redact.h"
#include "cli.h"

json_t *cli_pattern_file(const char *path, aw_error *err)
{
	json_error_t je;
	json_t *doc = json_load_file(path, 0, &je);
	if (!doc) {
		aw_fail(err, AW_E_USAGE, "%s is not JSON (line %d column %d): %s", path, je.line,
			je.column, je.text);
		return NULL;
	}
	/* the list, or an answer of GET .../redaction-patterns */
	json_t *list = json_is_object(doc) ? json_object_get(doc, "patterns") : doc;
	if (!json_is_array(list)) {
		json_decref(doc);
		aw_fail(err, AW_E_REDACT_PATTERN,
			"%s holds neither a list of {\"name\", \"pattern\"} nor {\"patterns\": [...]}",
			path);
		return NULL;
	}
	json_incref(list);
	json_decref(doc);
	return list;
}

static void table(json_t *doc)
{
	json_t *items = json_object_get(doc, "patterns");
	const char *at = json_string_value(json_object_get(doc, "updated_at"));
	const char *by = json_string_value(json_object_get(doc, "updated_by"));
	printf("project %s, version %lld", cli_str(doc, "project"),
	       (long long)json_integer_value(json_object_get(doc, "version")));
	if (at)
		printf(", set %s by %s", at, by ? by : "-");
	printf("\n%-32s %s\n", "NAME", "PATTERN");
	size_t i;
	json_t *p;
	json_array_foreach (items, i, p)
		printf("%-32s %s\n", cli_str(p, "name"), cli_str(p, "pattern"));
}

int cmd_redaction(int argc, char **argv)
{
	aw_opt opts[] = {
		{"project", "AWOOOP_PROJECT", NULL, 0, "the project (default: the key's own)",
		 NULL},
		{"file", NULL, NULL, 0,
		 "set: the list from a JSON file ([{\"name\", \"pattern\"}] or a get's --json)",
		 NULL},
		{"json", NULL, NULL, 1, "print the API's JSON", NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *usage =
		"usage: awooop redaction get [--project P] [--json]\n"
		"       awooop redaction set [--project P] NAME=PATTERN... [--json]\n"
		"       awooop redaction set [--project P] --file FILE [--json]\n"
		"       awooop redaction clear [--project P] [--json]\n\n"
		"A project's custom redaction patterns: in the project's logs, audit\n"
		"payloads, tool results and gateway messages a match of PATTERN (PCRE2)\n"
		"becomes [REDACTED:custom:NAME]. At most 16 patterns; a name is\n"
		"[a-z][a-z0-9_]{0,31}; a pattern at most 200 bytes, without back\n"
		"references or callouts, and it may not match the empty string. set\n"
		"replaces the whole list. Setting or clearing needs a platform-admin key;\n"
		"the project's operators may get it. Try a list on sample text first:\n"
		"awooop redact --custom FILE < sample.\n"
		"Talks to the server at AWOOOP_URL with the key in AWOOOP_KEY.\n\n"
		"Examples:\n"
		"  awooop redaction set --project acme 'employee_id=EMP-[0-9]{6}'\n"
		"  awooop redaction get --project acme --json > patterns.json";
	const char *pos[1 + AW_REDACT_CUSTOM_MAX + 1];
	int npos = (int)(sizeof pos / sizeof pos[0]);
	int rc = cli_parse(argc, argv, opts, pos, &npos, usage);
	if (rc)
		return rc < 0 ? 0 : rc;
	const char *project = NULL;
	const char *file = cli_get(opts, "file");
	if (npos < 1 ||
	    (strcmp(pos[0], "get") && strcmp(pos[0], "set") && strcmp(pos[0], "clear"))) {
		cli_usage(usage, opts);
		return AW_EXIT_USAGE;
	}
	if ((rc = cli_project(opts, &project)))
		return rc;
	char path[256];
	snprintf(path, sizeof path, "/v1/projects/%s/redaction-patterns", project);
	json_t *doc = NULL;
	if (npos == 1 && strcmp(pos[0], "get") == 0) {
		rc = client_call("GET", path, NULL, &doc);
	} else if (strcmp(pos[0], "set") == 0 || (npos == 1 && strcmp(pos[0], "clear") == 0)) {
		json_t *list = NULL;
		if (strcmp(pos[0], "clear") == 0) {
			list = json_array();
		} else if (file && npos == 1) {
			aw_error err = {0};
			if (!(list = cli_pattern_file(file, &err)))
				return cli_fail(err.err, err.msg);
		} else if (!file && npos > 1 && npos <= 1 + AW_REDACT_CUSTOM_MAX) {
			list = json_array();
			for (int i = 1; i < npos; i++) {
				const char *eq = strchr(pos[i], '=');
				if (!eq || eq == pos[i]) {
					json_decref(list);
					return cli_fail(AW_E_USAGE, "a pattern is NAME=PATTERN");
				}
				json_array_append_new(list, json_pack("{s:s%, s:s}", "name", pos[i],
								      (size_t)(eq - pos[i]),
								      "pattern", eq + 1));
			}
		} else {
			cli_usage(usage, opts);
			return AW_EXIT_USAGE;
		}
		json_t *body = json_pack("{s:o}", "patterns", list);
		rc = client_call("PUT", path, body, &doc);
		json_decref(body);
	} else {
		cli_usage(usage, opts);
		return AW_EXIT_USAGE;
	}
	if (rc)
		return rc;
	if (cli_get(opts, "json"))
		cli_print_json(doc);
	else
		table(doc);
	json_decref(doc);
	return 0;
}
