/*
 * contract_cmd.c - `awooop contract ...`: the contract registry through the
 * HTTP API (AWOOOP_URL, AWOOOP_KEY). Bodies come from --file (JSON).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "awooop/uuid.h"
#include "cli.h"

static int ident_ok(const char *s)
{
	if (!s || !*s || strlen(s) > 63)
		return 0;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		      *p == '-' || *p == '.'))
			return 0;
	return 1;
}

static void print_revision_row(json_t *r)
{
	printf("%-36s %-10s %-24s %s\n", json_string_value(json_object_get(r, "revision_id")),
	       json_string_value(json_object_get(r, "state")),
	       json_string_value(json_object_get(r, "updated_at")),
	       json_string_value(json_object_get(r, "created_by")));
}

/* One line per activation, newest first; 1 when the newest one reached every
 * live process. */
static int print_convergence(const json_t *doc)
{
	printf("%-36s %-24s %9s %10s\n", "REVISION", "ACTIVATED", "LEARNED", "SLOWEST");
	size_t i;
	json_t *a;
	json_array_foreach (json_object_get(doc, "activations"), i, a) {
		char n[32], slow[24] = "-";
		snprintf(n, sizeof n, "%lld/%lld",
			 (long long)json_integer_value(json_object_get(a, "learned")),
			 (long long)json_integer_value(json_object_get(a, "of")));
		if (json_is_integer(json_object_get(a, "slowest_ms")))
			snprintf(slow, sizeof slow, "%lld ms",
				 (long long)json_integer_value(json_object_get(a, "slowest_ms")));
		printf("%-36s %-24s %9s %10s%s\n",
		       json_string_value(json_object_get(a, "revision_id")),
		       json_string_value(json_object_get(a, "activated_at")), n, slow,
		       json_is_true(json_object_get(a, "converged")) ? "  converged" : "");
	}
	printf("live processes: %lld (%lld stale dropped)\n",
	       (long long)json_integer_value(json_object_get(doc, "live")),
	       (long long)json_integer_value(json_object_get(doc, "stale")));
	return json_is_true(json_object_get(json_array_get(json_object_get(doc, "activations"), 0),
					    "converged"));
}

static int convergence(aw_opt *opts, const char *project, const char *family, const char *cid)
{
	long limit, wait_s;
	int rc;
	if ((rc = aw_cli_opt_long(opts, "limit", 1, 100, &limit)) ||
	    (rc = aw_cli_opt_long(opts, "wait-s", 0, 3600, &wait_s)))
		return rc;
	char path[600];
	snprintf(path, sizeof path, "/v1/projects/%s/contracts/%s/%s/convergence?limit=%ld",
		 project, family, cid, limit);
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		json_t *doc = NULL;
		if ((rc = aw_client_call("GET", path, NULL, &doc)))
			return rc;
		int done;
		if (aw_cli_get(opts, "json")) {
			char *s = json_dumps(doc, JSON_INDENT(2));
			if (s)
				puts(s);
			free(s);
			done = json_is_true(json_object_get(
				json_array_get(json_object_get(doc, "activations"), 0),
				"converged"));
		} else {
			done = print_convergence(doc);
		}
		json_decref(doc);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!wait_s || done)
			return AW_EXIT_OK;
		if (now.tv_sec - t0.tv_sec >= wait_s) {
			fprintf(stderr, "not converged after %ld s\n", wait_s);
			return AW_EXIT_FAIL;
		}
		struct timespec half = {0, 500000000L};
		nanosleep(&half, NULL);
		fflush(stdout);
	}
}

int aw_cmd_contract(int argc, char **argv)
{
	aw_opt opts[] = {
		{"project", "AWOOOP_PROJECT", NULL, 0, "project", NULL},
		{"family", NULL, NULL, 0,
		 "policy_routing|channel_event|mcp_tool|budget|approval|platform_resource", NULL},
		{"contract", NULL, NULL, 0, "contract id", NULL},
		{"rev", NULL, NULL, 0, "revision id", NULL},
		{"to", NULL, NULL, 0,
		 "diff: the other revision; rollback: the earlier revision to restore"
		 " (default: the one active before the current activation)",
		 NULL},
		{"file", NULL, NULL, 0, "create/update: JSON file with the contract body", NULL},
		{"json", NULL, NULL, 1, "print the API's JSON", NULL},
		{"limit", NULL, "5", 0, "convergence: how many recent activations", NULL},
		{"wait-s", NULL, "0", 0,
		 "convergence: poll until the newest activation reached every live process "
		 "(exit 1 if it did not within this many seconds)",
		 NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *usage =
		"usage: awooop contract VERB --project P --family F --contract C [options]\n\n"
		"Verbs:\n"
		"  create --file BODY.json          new draft revision\n"
		"  update --rev R --file BODY.json  replace a draft's body\n"
		"  list | get --rev R | active\n"
		"  diff --rev A --to B              RFC 6902 patch from A to B\n"
		"  publish | approve | activate | revoke --rev R\n"
		"  rollback [--to R]                a new revision restoring an earlier active\n"
		"                                   one's body (default: the one before the\n"
		"                                   current activation), published; the approval\n"
		"                                   that completes the policy's rollback quorum\n"
		"                                   (rollback_threshold) activates it\n"
		"  convergence [--limit N] [--wait-s S]  which live processes serve each\n"
		"                                   recent activation, and how fast\n\n"
		"Talks to AWOOOP_URL with AWOOOP_KEY. docs/contracts.md documents the fields.";
	const char *pos[1];
	int npos = 1;
	int rc = aw_cli_parse(argc, argv, opts, pos, &npos, usage);
	if (rc)
		return rc < 0 ? 0 : rc;
	const char *verb = npos ? pos[0] : NULL;
	const char *project = aw_cli_get(opts, "project"), *family = aw_cli_get(opts, "family");
	const char *cid = aw_cli_get(opts, "contract"), *rev = aw_cli_get(opts, "rev");
	int project_ok = ident_ok(project) || (project && !strcmp(project, "__platform__"));
	if (!verb || !project_ok || !ident_ok(family) || !ident_ok(cid)) {
		aw_cli_usage(usage, opts);
		return AW_EXIT_USAGE;
	}
	if (!strcmp(verb, "convergence"))
		return convergence(opts, project, family, cid);
	int needs_rev = strcmp(verb, "create") && strcmp(verb, "list") && strcmp(verb, "active") &&
			strcmp(verb, "rollback");
	if (needs_rev && !aw_uuid_valid(rev))
		return aw_cli_fail(AW_E_USAGE, "--rev must be a revision id (UUID)");
	char base[512], path[700];
	snprintf(base, sizeof base, "/v1/projects/%s/contracts/%s/%s", project, family, cid);
	json_t *body = NULL, *doc = NULL;
	const char *method = "GET";
	if (!strcmp(verb, "create") || !strcmp(verb, "update")) {
		const char *file = aw_cli_get(opts, "file");
		json_error_t je;
		json_t *b = file ? json_load_file(file, 0, &je) : NULL;
		if (!b) {
			char msg[300];
			snprintf(msg, sizeof msg, "--file: %s", file ? je.text : "required");
			return aw_cli_fail(AW_E_USAGE, msg);
		}
		body = json_pack("{s:o}", "body", b);
		method = strcmp(verb, "create") ? "PUT" : "POST";
		if (!strcmp(verb, "create"))
			snprintf(path, sizeof path, "%s/revisions", base);
		else
			snprintf(path, sizeof path, "%s/revisions/%s", base, rev);
	} else if (!strcmp(verb, "rollback")) {
		const char *to = aw_cli_get(opts, "to");
		if (to && !aw_uuid_valid(to))
			return aw_cli_fail(AW_E_USAGE, "--to must be a revision id (UUID)");
		method = "POST";
		snprintf(path, sizeof path, "%s/rollback", base);
		body = to ? json_pack("{s:s}", "to", to) : NULL;
	} else if (!strcmp(verb, "list")) {
		snprintf(path, sizeof path, "%s/revisions", base);
	} else if (!strcmp(verb, "active")) {
		snprintf(path, sizeof path, "%s/active", base);
	} else if (!strcmp(verb, "get")) {
		snprintf(path, sizeof path, "%s/revisions/%s", base, rev);
	} else if (!strcmp(verb, "diff")) {
		if (!aw_uuid_valid(aw_cli_get(opts, "to")))
			return aw_cli_fail(AW_E_USAGE, "--to must be a revision id (UUID)");
		snprintf(path, sizeof path, "%s/revisions/%s/diff/%s", base, rev,
			 aw_cli_get(opts, "to"));
	} else if (!strcmp(verb, "publish") || !strcmp(verb, "approve") ||
		   !strcmp(verb, "activate") || !strcmp(verb, "revoke")) {
		method = "POST";
		snprintf(path, sizeof path, "%s/revisions/%s/%s", base, rev, verb);
	} else {
		aw_cli_usage(usage, opts);
		return AW_EXIT_USAGE;
	}
	rc = aw_client_call(method, path, body, &doc);
	json_decref(body);
	if (rc)
		return rc;
	if (aw_cli_get(opts, "json") || !strcmp(verb, "diff") || !strcmp(verb, "get") ||
	    !strcmp(verb, "active")) {
		char *s = json_dumps(doc, JSON_INDENT(2));
		if (s)
			puts(s);
		free(s);
	} else if (!strcmp(verb, "list")) {
		size_t i;
		json_t *r;
		json_array_foreach (json_object_get(doc, "items"), i, r)
			print_revision_row(r);
	} else if (!strcmp(verb, "activate")) {
		printf("%s %s (approvals %lld of %lld)\n", rev,
		       json_is_true(json_object_get(doc, "activated"))
			       ? "activated"
			       : "not activated: suggested only",
		       (long long)json_integer_value(json_object_get(doc, "approvals")),
		       (long long)json_integer_value(json_object_get(doc, "threshold")));
	} else if (!strcmp(verb, "rollback")) {
		printf("%s rolls back %s to %s: published, waiting for %lld approval(s)\n",
		       json_string_value(json_object_get(doc, "revision_id")),
		       json_string_value(json_object_get(doc, "rollback_from")) ?: "(none active)",
		       json_string_value(json_object_get(doc, "rollback_of")),
		       (long long)json_integer_value(json_object_get(doc, "approvals_needed")));
	} else if (!strcmp(verb, "approve")) {
		printf("approved %s until %s\n", rev,
		       json_string_value(json_object_get(doc, "expires_at")));
		json_t *ae = json_object_get(doc, "activation_error");
		if (json_is_true(json_object_get(doc, "activated")))
			printf("rollback %s activated (approvals %lld of %lld)\n", rev,
			       (long long)json_integer_value(json_object_get(doc, "approvals")),
			       (long long)json_integer_value(
				       json_object_get(doc, "approvals_needed")));
		else if (ae)
			printf("rollback %s not activated: %s %s\n", rev,
			       json_string_value(json_object_get(ae, "code")),
			       json_string_value(json_object_get(ae, "detail")));
		else if (json_is_true(json_object_get(doc, "rollback")))
			printf("rollback %s: %lld of %lld approval(s)\n", rev,
			       (long long)json_integer_value(json_object_get(doc, "approvals")),
			       (long long)json_integer_value(
				       json_object_get(doc, "approvals_needed")));
	} else {
		print_revision_row(doc);
	}
	json_decref(doc);
	return 0;
}
