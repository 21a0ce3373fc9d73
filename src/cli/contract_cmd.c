/*
 * contract_cmd.c - `awooop contract ...`: the contract registry through the
 * HTTP API (AWOOOP_URL, AWOOOP_KEY). Bodies come from --file (JSON). A
 * revision is named by id or as latest / active / previous (resolved here
 * through the list and convergence routes); apply drafts and publishes in
 * one and says what approvers do next.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "awooop/jcs.h"
#include "awooop/str.h"
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

#define REV_ROW "%-36s %-10s %-24s %s\n"

static void print_revision_header(void)
{
	printf(REV_ROW, "REVISION", "STATE", "UPDATED", "BY");
}

static void print_revision_row(json_t *r)
{
	printf(REV_ROW, cli_str(r, "revision_id"), cli_str(r, "state"), cli_str(r, "updated_at"),
	       cli_str(r, "created_by"));
}

/* What a contract command acts on: project, family, contract, and the API
 * path of the contract. */
typedef struct {
	const char *project, *family, *cid;
	char base[512];
} target;

/* A revision as the user gave it (--rev, --to): an id, or
 *   latest    the newest revision (ids are UUIDv7: creation order),
 *   active    the active revision,
 *   previous  the revision active before the latest activation (the
 *             activation history: what `rollback` restores by default),
 * resolved through the API into out. 0 or the exit code (said). */
static int resolve_rev(const target *t, const char *opt, const char *given, char *out)
{
	char path[700], msg[400];
	json_t *doc = NULL;
	int rc;
	const char *id = NULL;
	if (aw_uuid_valid(given) && aw_str_copy(out, AW_UUID_STR_LEN + 1, given) == 0)
		return 0;
	if (!given ||
	    (strcmp(given, "latest") && strcmp(given, "active") && strcmp(given, "previous"))) {
		snprintf(msg, sizeof msg,
			 "%s must be a revision id (UUID), latest, active or previous", opt);
		return cli_fail(AW_E_USAGE, msg);
	}
	if (!strcmp(given, "previous")) {
		snprintf(path, sizeof path, "%s/convergence?limit=1", t->base);
		if ((rc = client_call("GET", path, NULL, &doc)))
			return rc;
		id = json_string_value(
			json_object_get(json_array_get(json_object_get(doc, "activations"), 0),
					"previous_revision_id"));
	} else {
		snprintf(path, sizeof path, "%s/revisions", t->base);
		if ((rc = client_call("GET", path, NULL, &doc)))
			return rc;
		json_t *items = json_object_get(doc, "items"), *r;
		size_t i, n = json_array_size(items);
		if (!strcmp(given, "latest") && n)
			id = json_string_value(
				json_object_get(json_array_get(items, n - 1), "revision_id"));
		json_array_foreach (items, i, r)
			if (!strcmp(given, "active") && !strcmp(cli_str(r, "state"), "active"))
				id = json_string_value(json_object_get(r, "revision_id"));
	}
	if (id && aw_uuid_valid(id)) /* a UUID fits; else "", said below */
		(void)!aw_str_copy(out, AW_UUID_STR_LEN + 1, id);
	json_decref(doc);
	if (aw_uuid_valid(out))
		return 0;
	snprintf(msg, sizeof msg, "%s %s: %s/%s of project %s has %s", opt, given, t->family,
		 t->cid, t->project,
		 !strcmp(given, "latest")   ? "no revision yet"
		 : !strcmp(given, "active") ? "no active revision (none was activated, or it"
					      " was revoked)"
					    : "no revision that was active before the latest "
					      "activation");
	return cli_fail(AW_E_CONTRACT_NOT_FOUND, msg);
}

/* The flags that name t, as a command line to copy. */
static void target_flags(const target *t, char *out, size_t cap)
{
	snprintf(out, cap, "--project %s --family %s --contract %s", t->project, t->family, t->cid);
}

/* After a publish (apply, rollback): what approvers must do next, read
 * from the project's active approval policy (approval/default), else the
 * platform's default (threshold 1, any operator but the publisher). A
 * rollback needs `needed` approvals and the one completing them activates
 * it; a revision applied needs the threshold, then an activate. */
static void say_next(const target *t, const char *rev, const char *publisher, int rollback,
		     long needed)
{
	char path[300], flags[400];
	snprintf(path, sizeof path, "/v1/projects/%s/contracts/approval/default/active",
		 t->project);
	json_t *doc = NULL, *approvers = NULL;
	aw_cli_problem pb;
	long threshold = 1;
	int suggest = 0;
	if (client_try("GET", path, NULL, NULL, &doc, &pb) == 0) {
		json_t *b = json_object_get(doc, "body");
		if (json_is_integer(json_object_get(b, "threshold")))
			threshold = (long)json_integer_value(json_object_get(b, "threshold"));
		suggest = !strcmp(cli_str(b, "mode"), "suggest");
		approvers = json_object_get(b, "approvers");
	}
	if (!rollback || needed <= 0)
		needed = threshold;
	target_flags(t, flags, sizeof flags);
	printf("next: %ld approval(s) by ", needed);
	if (json_array_size(approvers)) {
		size_t i;
		json_t *a;
		printf("the approvers of the approval policy (");
		json_array_foreach (approvers, i, a)
			printf("%s%s", i ? ", " : "",
			       json_is_string(a) ? json_string_value(a) : "-");
		printf(")");
	} else {
		printf("operators of %s", t->project);
	}
	printf(" other than %s and the keys it minted, each with their own key:\n"
	       "  awooop contract approve %s --rev %s\n",
	       publisher, flags, rev);
	if (rollback)
		printf("the approval that completes the quorum activates it.\n");
	else
		printf("then, with an operator key:\n  awooop contract activate %s --rev %s\n",
		       flags, rev);
	if (suggest)
		printf("(the approval policy is in suggest mode: an activation is only recorded)\n");
	json_decref(doc);
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
		printf("%-36s %-24s %9s %10s%s\n", cli_str(a, "revision_id"),
		       cli_str(a, "activated_at"), n, slow,
		       json_is_true(json_object_get(a, "converged")) ? "  converged" : "");
	}
	printf("live processes: %lld (%lld stale dropped)\n",
	       (long long)json_integer_value(json_object_get(doc, "live")),
	       (long long)json_integer_value(json_object_get(doc, "stale")));
	return json_is_true(json_object_get(json_array_get(json_object_get(doc, "activations"), 0),
					    "converged"));
}

static int convergence(aw_opt *opts, const target *t)
{
	long limit, wait_s;
	int rc;
	if ((rc = cli_opt_long(opts, "limit", 1, 100, &limit)) ||
	    (rc = cli_opt_long(opts, "wait-s", 0, 3600, &wait_s)))
		return rc;
	char path[600];
	snprintf(path, sizeof path, "%s/convergence?limit=%ld", t->base, limit);
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		json_t *doc = NULL;
		if ((rc = client_call("GET", path, NULL, &doc)))
			return rc;
		json_t *newest = json_array_get(json_object_get(doc, "activations"), 0);
		long long live = json_integer_value(json_object_get(doc, "live")),
			  learned = json_integer_value(json_object_get(newest, "learned")),
			  of = json_integer_value(json_object_get(newest, "of"));
		int done;
		if (cli_get(opts, "json")) {
			cli_print_json(doc);
			done = json_is_true(json_object_get(newest, "converged"));
		} else {
			done = print_convergence(doc);
		}
		json_decref(doc);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!wait_s || done)
			return AW_EXIT_OK;
		if (now.tv_sec - t0.tv_sec >= wait_s) {
			/* why: nothing to learn, nobody to learn it, or some did not */
			if (!newest)
				fprintf(stderr,
					"not converged after %ld s: the contract has no "
					"activation\n",
					wait_s);
			else if (!live)
				fprintf(stderr,
					"not converged after %ld s: no live process serves this "
					"contract (none reported within its fleet window)\n",
					wait_s);
			else
				fprintf(stderr,
					"not converged after %ld s: %lld of %lld processes learned "
					"the newest activation\n",
					wait_s, learned, of);
			return AW_EXIT_FAIL;
		}
		struct timespec half = {0, 500000000L};
		nanosleep(&half, NULL);
		fflush(stdout);
	}
}

/* The body of --file, or NULL (said). */
static json_t *body_file(const char *file)
{
	json_error_t je;
	json_t *b = file ? json_load_file(file, 0, &je) : NULL;
	if (!b) {
		char msg[400];
		snprintf(msg, sizeof msg, "--file: %s%s%s", file ? file : "required",
			 file ? ": " : "", file ? je.text : "");
		cli_fail(AW_E_USAGE, msg);
	}
	return b;
}

/* apply: the file's body drafted and published in one, unless a revision
 * with the same body (RFC 8785 hash) is already active or published; then
 * what approvers must do. */
static int apply(aw_opt *opts, const target *t)
{
	json_t *b = body_file(cli_get(opts, "file"));
	if (!b)
		return AW_EXIT_USAGE;
	char hash[65], path[700], rev[AW_UUID_STR_LEN + 1] = "";
	json_t *doc = NULL;
	int rc;
	if (aw_jcs_sha256(b, hash)) {
		json_decref(b);
		return cli_fail(AW_E_NOMEM, "out of memory");
	}
	snprintf(path, sizeof path, "%s/revisions", t->base);
	if ((rc = client_call("GET", path, NULL, &doc))) {
		json_decref(b);
		return rc;
	}
	size_t i;
	json_t *r, *same = NULL;
	json_array_foreach (json_object_get(doc, "items"), i, r)
		if (!strcmp(cli_str(r, "body_hash"), hash) &&
		    (!strcmp(cli_str(r, "state"), "active") ||
		     !strcmp(cli_str(r, "state"), "published")))
			same = r; /* the newest such */
	if (same && !cli_get(opts, "json")) {
		const char *id = cli_str(same, "revision_id");
		int active = !strcmp(cli_str(same, "state"), "active");
		printf("unchanged: revision %s of %s/%s has this body and is %s\n", id, t->family,
		       t->cid, active ? "active" : "published, waiting for approval");
		if (!active)
			say_next(t, id, cli_str(same, "published_by"), 0, 0);
	} else if (same) {
		cli_print_json(same);
	}
	if (same) {
		json_decref(doc);
		json_decref(b);
		return 0;
	}
	json_decref(doc);
	doc = NULL;
	json_t *body = json_pack("{s:o}", "body", b);
	rc = client_call("POST", path, body, &doc);
	json_decref(body);
	if (rc)
		return rc;
	rc = AW_STR_COPY(rev, cli_str(doc, "revision_id"));
	json_decref(doc);
	doc = NULL;
	if (rc)
		return cli_fail(AW_E_CLIENT, "the server answered a malformed revision id");
	snprintf(path, sizeof path, "%s/revisions/%s/publish", t->base, rev);
	if ((rc = client_call("POST", path, NULL, &doc))) {
		char flags[400];
		target_flags(t, flags, sizeof flags);
		fprintf(stderr,
			"awooop: the draft %s stays; publish it when the cause is fixed:\n"
			"  awooop contract publish %s --rev %s\n",
			rev, flags, rev);
		return rc;
	}
	if (cli_get(opts, "json")) {
		cli_print_json(doc);
	} else {
		printf("applied %s/%s of project %s: revision %s drafted and published\n",
		       t->family, t->cid, t->project, rev);
		say_next(t, rev, cli_str(doc, "published_by"), 0, 0);
	}
	json_decref(doc);
	return 0;
}

int cmd_contract(int argc, char **argv)
{
	aw_opt opts[] = {
		{"project", "AWOOOP_PROJECT", NULL, 0, "project (default: the key's own)", NULL},
		{"family", NULL, NULL, 0,
		 "policy_routing|channel_event|mcp_tool|budget|approval|platform_resource", NULL},
		{"contract", NULL, "default", 0, "contract id", NULL},
		{"rev", NULL, NULL, 0, "a revision id, or latest, active or previous", NULL},
		{"to", NULL, NULL, 0,
		 "diff: the other revision; rollback: the earlier revision to restore"
		 " (default: previous); an id, or latest, active or previous",
		 NULL},
		{"file", NULL, NULL, 0, "apply, create, update: JSON file with the contract body",
		 NULL},
		{"json", NULL, NULL, 1, "print the API's JSON", NULL},
		{"limit", NULL, "5", 0, "convergence: how many recent activations", NULL},
		{"wait-s", NULL, "0", 0,
		 "convergence: poll until the newest activation reached every live process "
		 "(exit 1 if it did not within this many seconds)",
		 NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *usage =
		"usage: awooop contract VERB --family F [--contract C] [--project P] [options]\n\n"
		"A project's contracts (versioned policies) through the API. A change is\n"
		"drafted, published (signed), approved by other principals and activated;\n"
		"workers follow the active revision.\n\n"
		"Verbs:\n"
		"  apply --file BODY.json           draft + publish in one (nothing when a\n"
		"                                   revision with that body is active or\n"
		"                                   published); prints the approve and\n"
		"                                   activate commands to run next\n"
		"  create --file BODY.json          new draft revision\n"
		"  update --rev R --file BODY.json  replace a draft's body\n"
		"  list                             the revisions, oldest first\n"
		"  get --rev R | active             one revision (JSON)\n"
		"  diff --rev A --to B              RFC 6902 patch from A to B\n"
		"  publish | approve | activate | revoke --rev R\n"
		"  rollback [--to R]                a new revision restoring an earlier active\n"
		"                                   one's body (default: previous), published;\n"
		"                                   the approval that completes the policy's\n"
		"                                   rollback quorum (rollback_threshold)\n"
		"                                   activates it\n"
		"  convergence [--limit N] [--wait-s S]  which live processes serve each\n"
		"                                   recent activation, and how fast\n\n"
		"R is a revision id or: latest (the newest revision), active (the active\n"
		"one), previous (the one active before the latest activation). --contract\n"
		"defaults to `default`; --project to AWOOOP_PROJECT, else the key's own.\n"
		"Talks to AWOOOP_URL with AWOOOP_KEY. docs/contracts.md documents the fields.\n\n"
		"Examples:\n"
		"  awooop contract apply --family policy_routing --file policy.json\n"
		"  AWOOOP_KEY=$APPROVER awooop contract approve --family policy_routing --rev latest\n"
		"  awooop contract activate --family policy_routing --rev latest\n"
		"  awooop contract diff --family policy_routing --rev previous --to active\n"
		"  awooop contract rollback --family policy_routing";
	const char *pos[1];
	int npos = 1;
	int rc = cli_parse(argc, argv, opts, pos, &npos, usage);
	if (rc)
		return rc < 0 ? 0 : rc;
	const char *verb = npos ? pos[0] : NULL;
	target t = {.family = cli_get(opts, "family"), .cid = cli_get(opts, "contract")};
	static const char *const verbs[] = {
		"apply",   "create",  "update",	  "list",   "get",	"active",      "diff",
		"publish", "approve", "activate", "revoke", "rollback", "convergence", NULL};
	int known = 0;
	for (int i = 0; verb && verbs[i]; i++)
		known |= !strcmp(verb, verbs[i]);
	if (!known) {
		cli_usage(usage, opts);
		return AW_EXIT_USAGE;
	}
	if (!ident_ok(t.family))
		return cli_fail(AW_E_USAGE, "--family: give the contract family (see --help)");
	if (!ident_ok(t.cid))
		return cli_fail(AW_E_USAGE, "--contract: [a-z0-9_.-], at most 63 characters");
	if ((rc = cli_project(opts, &t.project)))
		return rc;
	snprintf(t.base, sizeof t.base, "/v1/projects/%s/contracts/%s/%s", t.project, t.family,
		 t.cid);
	if (!strcmp(verb, "convergence"))
		return convergence(opts, &t);
	if (!strcmp(verb, "apply"))
		return apply(opts, &t);
	char rev[AW_UUID_STR_LEN + 1] = "", to[AW_UUID_STR_LEN + 1] = "";
	int needs_rev = strcmp(verb, "create") && strcmp(verb, "list") && strcmp(verb, "active") &&
			strcmp(verb, "rollback");
	if (needs_rev && (rc = resolve_rev(&t, "--rev", cli_get(opts, "rev"), rev)))
		return rc;
	if ((!strcmp(verb, "diff") || (!strcmp(verb, "rollback") && cli_get(opts, "to"))) &&
	    (rc = resolve_rev(&t, "--to", cli_get(opts, "to"), to)))
		return rc;
	char path[700];
	json_t *body = NULL, *doc = NULL;
	const char *method = "GET";
	if (!strcmp(verb, "create") || !strcmp(verb, "update")) {
		json_t *b = body_file(cli_get(opts, "file"));
		if (!b)
			return AW_EXIT_USAGE;
		body = json_pack("{s:o}", "body", b);
		method = strcmp(verb, "create") ? "PUT" : "POST";
		if (!strcmp(verb, "create"))
			snprintf(path, sizeof path, "%s/revisions", t.base);
		else
			snprintf(path, sizeof path, "%s/revisions/%s", t.base, rev);
	} else if (!strcmp(verb, "rollback")) {
		method = "POST";
		snprintf(path, sizeof path, "%s/rollback", t.base);
		body = to[0] ? json_pack("{s:s}", "to", to) : NULL;
	} else if (!strcmp(verb, "list")) {
		snprintf(path, sizeof path, "%s/revisions", t.base);
	} else if (!strcmp(verb, "active")) {
		snprintf(path, sizeof path, "%s/active", t.base);
	} else if (!strcmp(verb, "get")) {
		snprintf(path, sizeof path, "%s/revisions/%s", t.base, rev);
	} else if (!strcmp(verb, "diff")) {
		snprintf(path, sizeof path, "%s/revisions/%s/diff/%s", t.base, rev, to);
	} else { /* publish, approve, activate, revoke */
		method = "POST";
		snprintf(path, sizeof path, "%s/revisions/%s/%s", t.base, rev, verb);
	}
	rc = client_call(method, path, body, &doc);
	json_decref(body);
	if (rc)
		return rc;
	if (cli_get(opts, "json") || !strcmp(verb, "diff") || !strcmp(verb, "get") ||
	    !strcmp(verb, "active")) {
		cli_print_json(doc);
	} else if (!strcmp(verb, "list")) {
		size_t i;
		json_t *r;
		print_revision_header();
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
		const char *from = json_string_value(json_object_get(doc, "rollback_from"));
		printf("%s rolls back %s to %s: published, waiting for %lld approval(s)\n",
		       cli_str(doc, "revision_id"), from ? from : "(none active)",
		       cli_str(doc, "rollback_of"),
		       (long long)json_integer_value(json_object_get(doc, "approvals_needed")));
		say_next(&t, cli_str(doc, "revision_id"), cli_str(doc, "published_by"), 1,
			 (long)json_integer_value(json_object_get(doc, "approvals_needed")));
	} else if (!strcmp(verb, "approve")) {
		printf("approved %s until %s\n", rev, cli_str(doc, "expires_at"));
		json_t *ae = json_object_get(doc, "activation_error");
		if (json_is_true(json_object_get(doc, "activated")))
			printf("rollback %s activated (approvals %lld of %lld)\n", rev,
			       (long long)json_integer_value(json_object_get(doc, "approvals")),
			       (long long)json_integer_value(
				       json_object_get(doc, "approvals_needed")));
		else if (ae)
			printf("rollback %s not activated: %s %s\n", rev, cli_str(ae, "code"),
			       cli_str(ae, "detail"));
		else if (json_is_true(json_object_get(doc, "rollback")))
			printf("rollback %s: %lld of %lld approval(s)\n", rev,
			       (long long)json_integer_value(json_object_get(doc, "approvals")),
			       (long long)json_integer_value(
				       json_object_get(doc, "approvals_needed")));
	} else if (!strcmp(verb, "revoke")) {
		printf("%s %s\n", rev, cli_str(doc, "state"));
	} else {
		print_revision_header();
		print_revision_row(doc);
	}
	json_decref(doc);
	return 0;
}
