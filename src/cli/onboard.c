/*
 * onboard.c - `awooop onboard --file TENANT.json`: a tenant in one command,
 * through the HTTP API with a platform-admin key (AWOOOP_KEY):
 *
 *   {"project": "ewoooc",
 *    "keys": [{"name": "ewoooc-agent", "scope": "worker"}, ...],
 *    "contracts": [{"family": "mcp_tool", "contract": "default", "body": {...}}, ...]}
 *
 * ${NAME} in the file is replaced by the environment variable NAME when
 * --var names it (any other, an unset one and every AWOOOP_* is an error),
 * so a file can name paths and URLs of the machine and nothing else.
 *
 * Steps, each printed as it completes: the project is created; two
 * operator keys are minted for the onboarding only (a publisher and an
 * approver: the registry never lets one principal publish and approve);
 * every contract is drafted, published (mcp_tool: its tools pinned),
 * approved and activated, the approval family last (once active, its own
 * approvers govern every later change); the file's keys are created and
 * printed once; the two onboarding keys are revoked. Every step is in the
 * project's audit trail. A failure stops there and says which step; what
 * was done stays done (the project is not deleted).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/buf.h"
#include "awooop/crypto.h"
#include "awooop/str.h"
#include "cli.h"

/* 1 when NAME is one of vars (",NAME,NAME,", as --var gave them). */
static int named(const char *vars, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = vars; p && *p;) {
		size_t k = strcspn(p, ",");
		if (k == n && !strncmp(p, name, n))
			return 1;
		p += k + (p[k] == ',');
	}
	return 0;
}

/* ${NAME} -> getenv(NAME), for the names --var lists only: the operator's
 * environment holds its own key (AWOOOP_KEY) and the server's settings, and
 * what is expanded lands in contract bodies the tenant reads. AWOOOP_* is
 * never expanded. NULL (and said) when a ${NAME} is not listed or unset. */
static char *expand(const char *text, const char *vars)
{
	aw_buf b = AW_BUF_INIT(16u << 20);
	for (const char *p = text; *p;) {
		const char *end;
		if (p[0] == '$' && p[1] == '{' && (end = strchr(p + 2, '}'))) {
			char name[128];
			size_t n = (size_t)(end - p - 2);
			int ok = n > 0 && n < sizeof name;
			for (size_t i = 0; ok && i < n; i++)
				ok = isupper((unsigned char)p[2 + i]) ||
				     isdigit((unsigned char)p[2 + i]) || p[2 + i] == '_';
			if (ok) {
				memcpy(name, p + 2, n);
				name[n] = 0;
				const char *why = NULL, *v = NULL;
				if (!strncmp(name, "AWOOOP_", 7))
					why = "is never expanded (the operator's own settings)";
				else if (!named(vars, name))
					why = "is not named by --var";
				else if (!(v = getenv(name)))
					why = "is not set";
				if (why) {
					fprintf(stderr,
						"awooop: E-CLI-001: the file names ${%s}, which %s\n",
						name, why);
					aw_buf_free(&b);
					return NULL;
				}
				aw_buf_adds(&b, v);
				p = end + 1;
				continue;
			}
		}
		aw_buf_add(&b, p++, 1);
	}
	return aw_buf_take(&b);
}

static int step(const char *what, int rc)
{
	if (rc)
		fprintf(stderr, "awooop: onboarding stopped at: %s\n", what);
	return rc;
}

/* Mints a key of project; *secret malloc'd. */
static int mint(const char *project, const char *name, const char *scope, char **secret,
		char *key_id, size_t idcap)
{
	char path[160];
	snprintf(path, sizeof path, "/v1/projects/%s/keys", project);
	json_t *out = NULL, *req = json_pack("{s:s,s:s}", "name", name, "scope", scope);
	int rc = client_call("POST", path, req, &out);
	json_decref(req);
	if (!rc) {
		*secret = aw_strdup(json_string_value(json_object_get(out, "key")) ?: "");
		if (aw_str_copy(key_id, idcap, json_string_value(json_object_get(out, "key_id"))) <
		    0)
			rc = cli_fail(AW_E_CLIENT, "the server answered a malformed key id");
	}
	json_decref(out);
	return rc;
}

static int contract(const char *project, json_t *c, const char *pub, const char *appr)
{
	const char *fam = json_string_value(json_object_get(c, "family"));
	const char *cid = json_string_value(json_object_get(c, "contract"));
	json_t *body = json_object_get(c, "body");
	char base[300], path[400], what[200];
	snprintf(what, sizeof what, "contract %s/%s", fam ? fam : "?", cid ? cid : "?");
	if (!fam || !cid || !json_is_object(body)) {
		fprintf(stderr,
			"awooop: E-CLI-001: %s: family, contract and body (an object) are needed\n",
			what);
		return AW_EXIT_USAGE;
	}
	snprintf(base, sizeof base, "/v1/projects/%s/contracts/%s/%s/revisions", project, fam, cid);
	json_t *out = NULL;
	client_use_key(pub);
	json_t *req = json_pack("{s:O}", "body", body);
	int rc = client_call("POST", base, req, &out);
	json_decref(req);
	char rev[64] = "";
	if (!rc && AW_STR_COPY(rev, json_string_value(json_object_get(out, "revision_id"))) < 0)
		rc = cli_fail(AW_E_CLIENT, "the server answered a malformed revision id");
	json_decref(out);
	out = NULL;
	snprintf(path, sizeof path, "%s/%s/publish", base, rev);
	if (!rc)
		rc = client_call("POST", path, NULL, NULL);
	client_use_key(appr);
	snprintf(path, sizeof path, "%s/%s/approve", base, rev);
	if (!rc)
		rc = client_call("POST", path, NULL, NULL);
	client_use_key(pub);
	snprintf(path, sizeof path, "%s/%s/activate", base, rev);
	if (!rc)
		rc = client_call("POST", path, NULL, &out);
	if (!rc && !json_is_true(json_object_get(out, "activated"))) {
		fprintf(stderr,
			"awooop: %s: revision %s recorded but not activated (suggest mode)\n", what,
			rev);
		rc = AW_EXIT_FAIL;
	}
	json_decref(out);
	client_use_key(NULL);
	if (!rc)
		printf("%-40s revision %s active\n", what, rev);
	return step(what, rc);
}

int cmd_onboard(int argc, char **argv)
{
	aw_opt opts[] = {
		{"file", NULL, NULL, 0, "the tenant file (JSON)", NULL},
		{"var", NULL, NULL, 0,
		 "NAME[,NAME...]: the environment variables the file's ${NAME} may expand "
		 "(no others; never AWOOOP_*)",
		 NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *pos[1];
	int npos = 0;
	int rc = cli_parse(
		argc, argv, opts, pos, &npos,
		"usage: awooop onboard --file TENANT.json [--var NAME,...]\n\n"
		"Creates a tenant in one command with a platform-admin AWOOOP_KEY: the project,\n"
		"its contracts (drafted, published, approved and activated; the approval policy\n"
		"last) and its keys, printed once. ${NAME} in the file is replaced by the\n"
		"variable NAME when --var names it; contract bodies never hold credentials\n"
		"(the server refuses them, E-CONTRACT-011). See examples/ewoooc.json.\n\n"
		"Example:\n"
		"  AWOOOP_KEY=$PLATFORM_ADMIN awooop onboard --file examples/ewoooc.json \\\n"
		"      --var EXAMPLE_MCP");
	if (rc)
		return rc < 0 ? 0 : rc;
	const char *file = cli_get(opts, "file");
	if (!file)
		return cli_fail(AW_E_USAGE, "--file TENANT.json is required");
	FILE *f = fopen(file, "r");
	aw_buf raw = AW_BUF_INIT(16u << 20);
	char chunk[8192];
	size_t n;
	while (f && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
		aw_buf_add(&raw, chunk, n);
	if (f)
		fclose(f);
	if (!f || aw_buf_err(&raw)) {
		aw_buf_free(&raw);
		return cli_fail(AW_E_USAGE, "cannot read --file");
	}
	char *text = expand(aw_buf_str(&raw), cli_get(opts, "var"));
	aw_buf_free(&raw);
	if (!text)
		return AW_EXIT_USAGE;
	json_error_t je;
	json_t *doc = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	free(text);
	const char *project = json_string_value(json_object_get(doc, "project"));
	json_t *keys = json_object_get(doc, "keys"), *contracts = json_object_get(doc, "contracts");
	if (!project || (keys && !json_is_array(keys)) ||
	    (contracts && !json_is_array(contracts))) {
		json_decref(doc);
		return cli_fail(
			AW_E_USAGE,
			"the file must be {\"project\": ID, \"keys\": [...], \"contracts\": [...]}");
	}
	char *pub = NULL, *appr = NULL, pub_id[64] = "", appr_id[64] = "", path[200];
	uint8_t r[6];
	char tag[16] = "x";
	if (aw_random_bytes(r, sizeof r) == AW_OK)
		aw_base64url(r, sizeof r, tag);
	for (char *p = tag; *p; p++) /* key names: [A-Za-z0-9._-] */
		if (*p == '_')
			*p = '.';
	char pub_name[48], appr_name[48];
	snprintf(pub_name, sizeof pub_name, "onboard-publisher-%s", tag);
	snprintf(appr_name, sizeof appr_name, "onboard-approver-%s", tag);
	json_t *preq = json_pack("{s:s}", "id", project);
	rc = step("the project", client_call("POST", "/v1/projects", preq, NULL));
	json_decref(preq);
	if (!rc)
		printf("%-40s created\n", "project");
	if (!rc)
		rc = step("the onboarding keys",
			  mint(project, pub_name, "operator", &pub, pub_id, sizeof pub_id) ||
				  mint(project, appr_name, "operator", &appr, appr_id,
				       sizeof appr_id));
	/* the approval policy last: once active, its approvers govern changes */
	for (int pass = 0; pass < 2 && !rc; pass++) {
		size_t i;
		json_t *c;
		json_array_foreach (contracts, i, c) {
			int is_approval = !strcmp(
				json_string_value(json_object_get(c, "family")) ?: "", "approval");
			if (is_approval == pass && (rc = contract(project, c, pub, appr)))
				break;
		}
	}
	size_t i;
	json_t *k;
	json_array_foreach (keys, i, k) {
		if (rc)
			break;
		const char *name = json_string_value(json_object_get(k, "name"));
		const char *scope = json_string_value(json_object_get(k, "scope"));
		char *secret = NULL, id[64];
		if (!name || !scope) {
			rc = cli_fail(AW_E_USAGE, "a key needs a name and a scope");
			break;
		}
		if ((rc = step(name, mint(project, name, scope, &secret, id, sizeof id))))
			break;
		printf("key %-36s %-14s %s\n", name, scope, secret);
		free(secret);
	}
	/* the onboarding keys go, whatever happened */
	const char *ids[] = {pub_id, appr_id};
	for (int j = 0; j < 2; j++)
		if (ids[j][0]) {
			snprintf(path, sizeof path, "/v1/projects/%s/keys/%s", project, ids[j]);
			if (client_call("DELETE", path, NULL, NULL))
				fprintf(stderr, "awooop: revoke the onboarding key %s by hand\n",
					ids[j]);
		}
	if (!rc) /* project points into doc */
		printf("tenant %s onboarded; the keys above are shown once\n", project);
	free(pub);
	free(appr);
	json_decref(doc);
	return rc;
}
