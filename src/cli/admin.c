/*
 * admin.c - `awooop project ...` and `awooop key ...`: thin wrappers over the
 * HTTP API, printing a table for people or the API's JSON with --json.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/tenancy.h"
#include "cli.h"

static const char *str(json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v ? v : "-";
}

static int emit(json_t *doc, int as_json, void (*table)(json_t *))
{
	if (as_json) {
		char *s = json_dumps(doc, JSON_INDENT(2));
		if (s)
			puts(s);
		free(s);
	} else {
		table(doc);
	}
	json_decref(doc);
	return 0;
}

static void project_row(json_t *p)
{
	printf("%-24s %-26s %s\n", str(p, "id"), str(p, "created_at"), str(p, "created_by"));
}

static void project_table(json_t *doc)
{
	json_t *items = json_object_get(doc, "items");
	printf("%-24s %-26s %s\n", "PROJECT", "CREATED", "BY");
	if (!items) {
		project_row(doc);
		return;
	}
	size_t i;
	json_t *p;
	json_array_foreach (items, i, p)
		project_row(p);
}

static void key_row(json_t *k)
{
	printf("%-36s %-16s %-14s %-14s %s\n", str(k, "key_id"), str(k, "name"), str(k, "scope"),
	       str(k, "prefix"),
	       json_is_string(json_object_get(k, "revoked_at")) ? "revoked" : "active");
}

static void key_table(json_t *doc)
{
	json_t *items = json_object_get(doc, "items");
	printf("%-36s %-16s %-14s %-14s %s\n", "KEY ID", "NAME", "SCOPE", "PREFIX", "STATE");
	if (!items) {
		key_row(doc);
		printf("\nAPI key (shown once, store it now):\n%s\n", str(doc, "key"));
		return;
	}
	size_t i;
	json_t *k;
	json_array_foreach (items, i, k)
		key_row(k);
}

int aw_cmd_project(int argc, char **argv)
{
	aw_opt opts[] = {
		{"json", NULL, NULL, 1, "print the API's JSON", NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *usage =
		"usage: awooop project create ID [--json]\n"
		"       awooop project list [--json]\n\n"
		"Projects are the tenants: every row, key, contract, run and audit\n"
		"record belongs to one. create makes one (an id matching\n"
		"[a-z0-9][a-z0-9_-]{1,62}); list shows those the key may see (a\n"
		"project key: its own). Talks to the server at AWOOOP_URL with the\n"
		"key in AWOOOP_KEY. Creating projects needs a platform-admin key;\n"
		"`awooop onboard` makes a project with its keys and contracts at once.\n\n"
		"Examples:\n"
		"  awooop project create acme\n"
		"  awooop project list --json";
	const char *pos[2];
	int npos = 2;
	int rc = aw_cli_parse(argc, argv, opts, pos, &npos, usage);
	if (rc)
		return rc < 0 ? 0 : rc;
	int as_json = aw_cli_get(opts, "json") != NULL;
	json_t *doc = NULL;
	if (npos == 2 && strcmp(pos[0], "create") == 0) {
		json_t *body = json_pack("{s:s}", "id", pos[1]);
		rc = aw_client_call("POST", "/v1/projects", body, &doc);
		json_decref(body);
	} else if (npos == 1 && strcmp(pos[0], "list") == 0) {
		rc = aw_client_call("GET", "/v1/projects?limit=1000", NULL, &doc);
	} else {
		aw_cli_usage(usage, opts);
		return AW_EXIT_USAGE;
	}
	return rc ? rc : emit(doc, as_json, project_table);
}

int aw_cmd_key(int argc, char **argv)
{
	aw_opt opts[] = {
		{"project", "AWOOOP_PROJECT", NULL, 0,
		 "project the keys belong to (default: the calling key's own)", NULL},
		{"name", NULL, NULL, 0, "key name (create)", NULL},
		{"scope", NULL, "reader", 0,
		 "platform-admin|project-admin|operator|worker|reader (create)", NULL},
		{"json", NULL, NULL, 1, "print the API's JSON", NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *usage =
		"usage: awooop key create [--project P] --name NAME [--scope SCOPE] [--json]\n"
		"       awooop key list [--project P] [--json]\n"
		"       awooop key revoke [--project P] KEY_ID\n"
		"       awooop key generate\n\n"
		"API keys of a project; a key's name is the principal its approvals and\n"
		"audit records carry, and its scope what it may do. create prints the\n"
		"secret once. create/list/revoke talk to AWOOOP_URL with AWOOOP_KEY (a\n"
		"project-admin key of the project, or a platform-admin key). generate\n"
		"prints a fresh key locally (for AWOOOP_BOOTSTRAP_KEY) without contacting\n"
		"anything.\n\n"
		"Examples:\n"
		"  awooop key create --project acme --name alice --scope operator\n"
		"  awooop key list\n"
		"  awooop key revoke 0193a8e2-...\n"
		"  AWOOOP_BOOTSTRAP_KEY=$(awooop key generate) awooop serve";
	const char *pos[2];
	int npos = 2;
	int rc = aw_cli_parse(argc, argv, opts, pos, &npos, usage);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (npos == 1 && strcmp(pos[0], "generate") == 0) {
		char secret[AW_KEY_SECRET_LEN + 1];
		if (aw_key_generate(secret))
			return aw_cli_fail(AW_E_INTERNAL, "no randomness available");
		puts(secret);
		return 0;
	}
	const char *project = NULL;
	int as_json = aw_cli_get(opts, "json") != NULL;
	if (!((npos == 1 && (!strcmp(pos[0], "create") || !strcmp(pos[0], "list"))) ||
	      (npos == 2 && !strcmp(pos[0], "revoke")))) {
		aw_cli_usage(usage, opts);
		return AW_EXIT_USAGE;
	}
	if ((rc = aw_cli_project(opts, &project)))
		return rc;
	char path[256];
	json_t *doc = NULL;
	if (npos == 1 && strcmp(pos[0], "create") == 0) {
		if (!aw_cli_get(opts, "name"))
			return aw_cli_fail(AW_E_USAGE, "--name is required");
		snprintf(path, sizeof path, "/v1/projects/%s/keys", project);
		json_t *body = json_pack("{s:s, s:s}", "name", aw_cli_get(opts, "name"), "scope",
					 aw_cli_get(opts, "scope"));
		rc = aw_client_call("POST", path, body, &doc);
		json_decref(body);
	} else if (npos == 1 && strcmp(pos[0], "list") == 0) {
		snprintf(path, sizeof path, "/v1/projects/%s/keys", project);
		rc = aw_client_call("GET", path, NULL, &doc);
	} else if (npos == 2 && strcmp(pos[0], "revoke") == 0) {
		snprintf(path, sizeof path, "/v1/projects/%s/keys/%s", project, pos[1]);
		rc = aw_client_call("DELETE", path, NULL, NULL);
		if (!rc)
			printf("revoked %s\n", pos[1]);
		return rc;
	} else {
		aw_cli_usage(usage, opts);
		return AW_EXIT_USAGE;
	}
	return rc ? rc : emit(doc, as_json, key_table);
}
