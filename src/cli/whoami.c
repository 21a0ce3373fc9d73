/*
 * whoami.c - `awooop whoami` and the project a client command acts on.
 *
 * A key belongs to one project, so a command that takes --project does not
 * need it: without the flag or AWOOOP_PROJECT the project is the key's own,
 * which the server tells (GET /v1/whoami: project, scope, principal, key id;
 * never the secret). Asked once per process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/ctx.h"
#include "awooop/ident.h"
#include "cli.h"

static char key_project[AW_PROJECT_MAX + 1];

int cli_project(const aw_opt *opts, const char **project)
{
	const char *p = cli_get(opts, "project");
	if (p) {
		if (!aw_ident_project_ok(p) && strcmp(p, AW_PLATFORM_PROJECT) != 0)
			return cli_fail(AW_E_USAGE,
					"--project (or AWOOOP_PROJECT) is not a project id: "
					"[a-z0-9][a-z0-9_-]{1,62}");
		*project = p;
		return 0;
	}
	if (!key_project[0]) {
		if (!client_has_key())
			return cli_fail(AW_E_USAGE,
					"give --project (or AWOOOP_PROJECT), or set AWOOOP_KEY:"
					" the project is then the key's own");
		json_t *doc = NULL;
		int rc = client_call("GET", "/v1/whoami", NULL, &doc);
		if (rc)
			return rc;
		const char *kp = json_string_value(json_object_get(doc, "project"));
		if (kp && strlen(kp) < sizeof key_project)
			memcpy(key_project, kp, strlen(kp) + 1);
		json_decref(doc);
		if (!key_project[0])
			return cli_fail(AW_E_CLIENT, "the server did not say the key's project");
	}
	*project = key_project;
	return 0;
}

int cmd_whoami(int argc, char **argv)
{
	aw_opt opts[] = {
		{"json", NULL, NULL, 1, "print the API's JSON", NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *usage =
		"usage: awooop whoami [--json]\n\n"
		"Says what the key in AWOOOP_KEY is: its project (the one every command\n"
		"acts on when --project is not given), scope, principal (the name its\n"
		"approvals and audit records carry) and key id. Never the secret.\n\n"
		"Example:\n"
		"  AWOOOP_KEY=awk_... awooop whoami";
	const char *pos[1];
	int npos = 0;
	int rc = cli_parse(argc, argv, opts, pos, &npos, usage);
	if (rc)
		return rc < 0 ? 0 : rc;
	json_t *doc = NULL;
	if ((rc = client_call("GET", "/v1/whoami", NULL, &doc)))
		return rc;
	if (cli_get(opts, "json")) {
		cli_print_json(doc);
	} else {
		printf("project    %s\n", cli_str(doc, "project"));
		printf("scope      %s\n", cli_str(doc, "scope"));
		printf("principal  %s\n", cli_str(doc, "principal"));
		printf("key id     %s\n", cli_str(doc, "key_id"));
	}
	json_decref(doc);
	return 0;
}
