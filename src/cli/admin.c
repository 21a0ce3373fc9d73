/*
 * admin.c - `awooop project ...` and `awooop key ...`: thin wrappers over the
 * HTTP API, printing a table for people or the API's JSON with --json.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/str.h"
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

/* A virtual key's limits in a few words ("-" none). */
static void limits_words(json_t *k, char *out, size_t cap)
{
	json_t *l = json_object_get(k, "limits");
	size_t n = 0;
	out[0] = '\0';
#define ADD(...)                                                              \
	do {                                                                  \
		if (n < cap)                                                  \
			n += (size_t)snprintf(out + n, cap - n, __VA_ARGS__); \
	} while (0)
	if (json_object_get(l, "models"))
		ADD("models=%zu ", json_array_size(json_object_get(l, "models")));
	if (json_object_get(l, "rpm"))
		ADD("rpm=%lld ", (long long)json_integer_value(json_object_get(l, "rpm")));
	if (json_object_get(l, "tpm"))
		ADD("tpm=%lld ", (long long)json_integer_value(json_object_get(l, "tpm")));
	json_t *b = json_object_get(l, "budget");
	if (b && json_object_get(b, "tokens"))
		ADD("budget=%lld/%s ", (long long)json_integer_value(json_object_get(b, "tokens")),
		    str(b, "period"));
	if (b && json_object_get(b, "cost_usd"))
		ADD("budget=$%g/%s ", json_number_value(json_object_get(b, "cost_usd")),
		    str(b, "period"));
	if (json_is_string(json_object_get(k, "expires_at")))
		ADD("expires=%s ", str(k, "expires_at"));
	json_t *m = json_object_get(l, "metadata");
	if (m && json_object_get(m, "team"))
		ADD("team=%s ", str(m, "team"));
	if (m && json_object_get(m, "user"))
		ADD("user=%s ", str(m, "user"));
#undef ADD
	if (!out[0])
		snprintf(out, cap, "-");
}

static void key_row(json_t *k)
{
	char lim[512];
	limits_words(k, lim, sizeof lim);
	printf("%-36s %-16s %-14s %-14s %-8s %s\n", str(k, "key_id"), str(k, "name"),
	       str(k, "scope"), str(k, "prefix"),
	       json_is_string(json_object_get(k, "revoked_at")) ? "revoked" : "active", lim);
}

/* A limit's value from the command line: "none" removes it (null), a
 * number is a number, anything else goes as a string (the server says what
 * is wrong with it, and where). */
static json_t *opt_value(const char *v)
{
	if (!strcmp(v, "none"))
		return json_null();
	char *end = NULL;
	double d = strtod(v, &end);
	if (*v && end && !*end)
		return d == (double)(long long)d && !strchr(v, '.') ? json_integer((long long)d)
								    : json_real(d);
	return json_string(v);
}

/* The limits the options name, as the API takes them (members only for
 * the options given). */
static json_t *limits_body(const aw_opt *opts)
{
	json_t *o = json_object();
	const char *v;
	if ((v = cli_get(opts, "models"))) {
		if (!strcmp(v, "none")) {
			json_object_set_new(o, "models", json_null());
		} else {
			json_t *a = json_array(); /* each name whole, however long */
			for (const char *m = v; *m;) {
				size_t n = strcspn(m, ",");
				if (n)
					json_array_append_new(a, json_stringn(m, n));
				m += n + (m[n] == ',');
			}
			json_object_set_new(o, "models", a);
		}
	}
	if ((v = cli_get(opts, "rpm")))
		json_object_set_new(o, "rpm", opt_value(v));
	if ((v = cli_get(opts, "tpm")))
		json_object_set_new(o, "tpm", opt_value(v));
	const char *bt = cli_get(opts, "budget-tokens"), *bu = cli_get(opts, "budget-usd"),
		   *bp = cli_get(opts, "budget-period");
	if (bt && !strcmp(bt, "none") && !bu) {
		json_object_set_new(o, "budget", json_null());
	} else if (bt || bu || bp) {
		json_t *b = json_object();
		if (bt)
			json_object_set_new(b, "tokens", opt_value(bt));
		if (bu)
			json_object_set_new(b, "cost_usd", opt_value(bu));
		if (bp)
			json_object_set_new(b, "period", json_string(bp));
		json_object_set_new(o, "budget", b);
	}
	if ((v = cli_get(opts, "expires-at")))
		json_object_set_new(o, "expires_at",
				    strcmp(v, "none") ? json_string(v) : json_null());
	const char *team = cli_get(opts, "team"), *user = cli_get(opts, "user");
	if (team || user) {
		json_t *m = json_object();
		if (team)
			json_object_set_new(m, "team",
					    strcmp(team, "none") ? json_string(team) : json_null());
		if (user)
			json_object_set_new(m, "user",
					    strcmp(user, "none") ? json_string(user) : json_null());
		json_object_set_new(o, "metadata", m);
	}
	return o;
}

static void key_show(json_t *k)
{
	char lim[512];
	limits_words(k, lim, sizeof lim);
	printf("key_id   %s\nname     %s\nscope    %s\nstate    %s\nlimits   %s\n",
	       str(k, "key_id"), str(k, "name"), str(k, "scope"),
	       json_is_string(json_object_get(k, "revoked_at")) ? "revoked" : "active", lim);
	json_t *u = json_object_get(k, "usage");
	if (u) {
		printf("minute   %s: %lld requests, %lld tokens settled, %lld reserved\n",
		       str(u, "minute"),
		       (long long)json_integer_value(json_object_get(u, "requests")),
		       (long long)json_integer_value(json_object_get(u, "tokens_settled")),
		       (long long)json_integer_value(json_object_get(u, "tokens_reserved")));
		json_t *b = json_object_get(u, "budget");
		if (b)
			printf("budget   %s: %lld tokens settled, %lld reserved, %.6f USD settled\n",
			       str(b, "period"),
			       (long long)json_integer_value(json_object_get(b, "tokens_settled")),
			       (long long)json_integer_value(json_object_get(b, "tokens_reserved")),
			       json_number_value(json_object_get(b, "cost_settled_usd")));
	}
}

static void key_table(json_t *doc)
{
	json_t *items = json_object_get(doc, "items");
	printf("%-36s %-16s %-14s %-14s %-8s %s\n", "KEY ID", "NAME", "SCOPE", "PREFIX", "STATE",
	       "LIMITS");
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

int cmd_project(int argc, char **argv)
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
	int rc = cli_parse(argc, argv, opts, pos, &npos, usage);
	if (rc)
		return rc < 0 ? 0 : rc;
	int as_json = cli_get(opts, "json") != NULL;
	json_t *doc = NULL;
	if (npos == 2 && strcmp(pos[0], "create") == 0) {
		json_t *body = json_pack("{s:s}", "id", pos[1]);
		rc = client_call("POST", "/v1/projects", body, &doc);
		json_decref(body);
	} else if (npos == 1 && strcmp(pos[0], "list") == 0) {
		rc = client_call("GET", "/v1/projects?limit=1000", NULL, &doc);
	} else {
		cli_usage(usage, opts);
		return AW_EXIT_USAGE;
	}
	return rc ? rc : emit(doc, as_json, project_table);
}

int cmd_key(int argc, char **argv)
{
	aw_opt opts[] = {
		{"project", "AWOOOP_PROJECT", NULL, 0,
		 "project the keys belong to (default: the calling key's own)", NULL},
		{"name", NULL, NULL, 0, "key name (create)", NULL},
		{"scope", NULL, "reader", 0,
		 "platform-admin|project-admin|operator|worker|reader (create)", NULL},
		{"models", NULL, NULL, 0,
		 "virtual key: the models/routes it may call, comma-separated (none: any)", NULL},
		{"rpm", NULL, NULL, 0, "virtual key: model calls per UTC minute (none: no limit)",
		 NULL},
		{"tpm", NULL, NULL, 0, "virtual key: tokens per UTC minute (none: no limit)", NULL},
		{"budget-tokens", NULL, NULL, 0,
		 "virtual key: its own token budget per --budget-period (none: no budget)", NULL},
		{"budget-usd", NULL, NULL, 0, "virtual key: its own cost budget in USD", NULL},
		{"budget-period", NULL, NULL, 0, "day|month|total (default month)", NULL},
		{"expires-at", NULL, NULL, 0,
		 "virtual key: refused after this UTC time, YYYY-MM-DDTHH:MM:SSZ (none: never)",
		 NULL},
		{"team", NULL, NULL, 0, "virtual key: team, in every call's audit record", NULL},
		{"user", NULL, NULL, 0, "virtual key: user, in every call's audit record", NULL},
		{"json", NULL, NULL, 1, "print the API's JSON", NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *usage =
		"usage: awooop key create [--project P] --name NAME [--scope SCOPE] [LIMITS] [--json]\n"
		"       awooop key list [--project P] [--json]\n"
		"       awooop key show [--project P] KEY_ID [--json]\n"
		"       awooop key update [--project P] KEY_ID LIMITS [--json]\n"
		"       awooop key revoke [--project P] KEY_ID\n"
		"       awooop key generate\n\n"
		"API keys of a project; a key's name is the principal its approvals and\n"
		"audit records carry, and its scope what it may do. create prints the\n"
		"secret once. create/list/revoke talk to AWOOOP_URL with AWOOOP_KEY (a\n"
		"project-admin key of the project, or a platform-admin key). generate\n"
		"prints a fresh key locally (for AWOOOP_BOOTSTRAP_KEY) without contacting\n"
		"anything.\n\n"
		"LIMITS make a virtual key (docs/guide/virtual-keys.md): --models,\n"
		"--rpm, --tpm, --budget-tokens/--budget-usd/--budget-period,\n"
		"--expires-at, --team, --user. update changes only the limits named\n"
		"(\"none\" removes one); show prints them with this minute's usage.\n\n"
		"Examples:\n"
		"  awooop key create --project acme --name alice --scope operator\n"
		"  awooop key create --name bot --scope worker --models chat --rpm 60 \\\n"
		"      --tpm 20000 --budget-tokens 1000000 --budget-period month --team search\n"
		"  awooop key update 0193a8e2-... --rpm 120 --expires-at none\n"
		"  awooop key list\n"
		"  awooop key revoke 0193a8e2-...\n"
		"  AWOOOP_BOOTSTRAP_KEY=$(awooop key generate) awooop serve";
	const char *pos[2];
	int npos = 2;
	int rc = cli_parse(argc, argv, opts, pos, &npos, usage);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (npos == 1 && strcmp(pos[0], "generate") == 0) {
		char secret[AW_KEY_SECRET_LEN + 1];
		if (aw_key_generate(secret))
			return cli_fail(AW_E_INTERNAL, "no randomness available");
		puts(secret);
		return 0;
	}
	const char *project = NULL;
	int as_json = cli_get(opts, "json") != NULL;
	if (!((npos == 1 && (!strcmp(pos[0], "create") || !strcmp(pos[0], "list"))) ||
	      (npos == 2 && (!strcmp(pos[0], "revoke") || !strcmp(pos[0], "show") ||
			     !strcmp(pos[0], "update"))))) {
		cli_usage(usage, opts);
		return AW_EXIT_USAGE;
	}
	if ((rc = cli_project(opts, &project)))
		return rc;
	char path[256];
	json_t *doc = NULL;
	if (npos == 1 && strcmp(pos[0], "create") == 0) {
		if (!cli_get(opts, "name"))
			return cli_fail(AW_E_USAGE, "--name is required");
		snprintf(path, sizeof path, "/v1/projects/%s/keys", project);
		json_t *body = limits_body(opts);
		json_object_set_new(body, "name", json_string(cli_get(opts, "name")));
		json_object_set_new(body, "scope", json_string(cli_get(opts, "scope")));
		rc = client_call("POST", path, body, &doc);
		json_decref(body);
	} else if (npos == 1 && strcmp(pos[0], "list") == 0) {
		snprintf(path, sizeof path, "/v1/projects/%s/keys", project);
		rc = client_call("GET", path, NULL, &doc);
	} else if (npos == 2 && strcmp(pos[0], "show") == 0) {
		snprintf(path, sizeof path, "/v1/projects/%s/keys/%s", project, pos[1]);
		rc = client_call("GET", path, NULL, &doc);
		return rc ? rc : emit(doc, as_json, key_show);
	} else if (npos == 2 && strcmp(pos[0], "update") == 0) {
		json_t *body = limits_body(opts);
		if (json_object_size(body) == 0) {
			json_decref(body);
			return cli_fail(AW_E_USAGE, "name a limit to change (see --help)");
		}
		snprintf(path, sizeof path, "/v1/projects/%s/keys/%s", project, pos[1]);
		rc = client_call("PATCH", path, body, &doc);
		json_decref(body);
		return rc ? rc : emit(doc, as_json, key_show);
	} else if (npos == 2 && strcmp(pos[0], "revoke") == 0) {
		snprintf(path, sizeof path, "/v1/projects/%s/keys/%s", project, pos[1]);
		rc = client_call("DELETE", path, NULL, NULL);
		if (!rc)
			printf("revoked %s\n", pos[1]);
		return rc;
	} else {
		cli_usage(usage, opts);
		return AW_EXIT_USAGE;
	}
	return rc ? rc : emit(doc, as_json, key_table);
}
