/*
 * tools.c - commands that work on data directly: `awooop redact` (stdin ->
 * stdout), `awooop schema check`, and `awooop audit verify|export`, which
 * read the store itself (a verification that trusts no running server) or,
 * with a key and no store named, the same trail through the server's API.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/audit.h"
#include "awooop/ident.h"
#include "awooop/redact.h"
#include "awooop/schema.h"
#include "awooop/str.h"
#include "cli.h"

static int write_out(void *ud, const char *d, size_t n)
{
	(void)ud;
	return fwrite(d, 1, n, stdout) == n ? 0 : -1;
}

static void print_stats(const aw_redact_stats *st)
{
	for (int c = 0; c < AW_RC__COUNT; c++)
		if (st->count[c])
			fprintf(stderr, "%-20s %llu\n", aw_redact_class_label((aw_redact_class)c),
				(unsigned long long)st->count[c]);
	if (st->custom_limited)
		fprintf(stderr, "%-20s %llu\n", "custom_limited",
			(unsigned long long)st->custom_limited);
}

int cmd_redact(int argc, char **argv)
{
	aw_opt opts[] = {
		{"json", NULL, NULL, 1, "input is one JSON document; output stays valid JSON",
		 NULL},
		{"stats", NULL, NULL, 1, "print per-class counts to stderr", NULL},
		{"custom", NULL, NULL, 0,
		 "also a project's custom patterns, from a JSON file (awooop redaction --help)",
		 NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *pos[1];
	int npos = 0;
	int rc = cli_parse(argc, argv, opts, pos, &npos,
			   "usage: awooop redact [--json] [--stats] [--custom FILE] < IN > OUT\n\n"
			   "Replaces PII and secrets with [REDACTED:<class>]. Text is streamed,\n"
			   "so input of any size works and a secret split across reads is\n"
			   "still caught. --custom adds a custom pattern list as a project\n"
			   "would have it ([REDACTED:custom:<name>]): a way to try one before\n"
			   "`awooop redaction set`.\n\n"
			   "Examples:\n"
			   "  awooop redact --stats < app.log > app.redacted.log\n"
			   "  awooop redact --json --custom patterns.json < event.json");
	if (rc)
		return rc < 0 ? 0 : rc;
	aw_error err = {0};
	if (aw_redact_init(&err))
		return cli_fail(err.err, err.msg);
	/* a custom list runs as the text of a project of its own */
	const char *project = NULL, *file = cli_get(opts, "custom");
	if (file) {
		json_t *list = cli_pattern_file(file, &err);
		aw_redact_custom *set = NULL;
		if (!list || aw_redact_custom_compile(list, &set, &err)) {
			json_decref(list);
			if (err.where[0])
				fprintf(stderr, "awooop: in %s at %s:\n", file, err.where);
			return cli_fail(err.err, err.msg);
		}
		json_decref(list);
		project = "local";
		aw_redact_custom_install(project, 1, set);
	}
	aw_redact_stats st = {0};
	if (cli_get(opts, "json")) {
		json_error_t je;
		json_t *doc = json_loadf(stdin, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
		if (!doc) {
			char msg[256];
			snprintf(msg, sizeof msg, "stdin is not JSON (line %d column %d)", je.line,
				 je.column);
			return cli_fail(AW_E_REQ_JSON, msg);
		}
		aw_err e = aw_redact_json_for(project, doc, &st);
		if (!e && json_dumpf(doc, stdout, JSON_ENCODE_ANY | JSON_COMPACT) == 0)
			fputc('\n', stdout);
		json_decref(doc);
		if (e)
			return cli_fail(e, "redaction failed");
	} else {
		aw_redact_stream *s = aw_redact_stream_new_for(project, write_out, NULL, &st);
		char buf[65536];
		size_t n;
		aw_err e = AW_OK;
		while (!e && (n = fread(buf, 1, sizeof buf, stdin)) > 0)
			e = aw_redact_stream_feed(s, buf, n);
		aw_err f = aw_redact_stream_finish(s);
		if (e || f)
			return cli_fail(e ? e : f, "redaction failed");
	}
	if (cli_get(opts, "stats"))
		print_stats(&st);
	return fflush(stdout) == 0 ? 0 : AW_EXIT_FAIL;
}

/* A query-string value, percent-encoded (RFC 3986 unreserved kept). */
static void query_escape(const char *in, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)in; *p && o + 4 < cap; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p)) {
			out[o++] = (char)*p;
		} else {
			out[o++] = '%';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		}
	}
	out[o] = 0;
}

static void print_verify(const char *project, int as_json, int ok, long long records,
			 long long break_seq, const char *reason)
{
	if (as_json) {
		json_t *o = json_pack("{s:s, s:b, s:I, s:I, s:s}", "project", project, "ok", ok,
				      "records", (json_int_t)records, "break_seq",
				      (json_int_t)break_seq, "reason", reason ? reason : "");
		json_dumpf(o, stdout, JSON_COMPACT);
		fputc('\n', stdout);
		json_decref(o);
	} else if (ok) {
		printf("audit chain of %s intact: %lld records\n", project, records);
	} else {
		printf("audit chain of %s BROKEN at record %lld: %s\n", project, break_seq,
		       reason && *reason ? reason : "-");
	}
}

/* audit through the server: GET .../audit/verify, GET .../audit pages. */
static int audit_api(const char *verb, const char *project, const aw_opt *opts)
{
	char path[1024];
	json_t *doc = NULL;
	int rc;
	if (!strcmp(verb, "verify")) {
		snprintf(path, sizeof path, "/v1/projects/%s/audit/verify", project);
		if ((rc = client_call("GET", path, NULL, &doc)))
			return rc;
		int ok = json_is_true(json_object_get(doc, "ok"));
		print_verify(project, cli_get(opts, "json") != NULL, ok,
			     (long long)json_integer_value(json_object_get(doc, "records")),
			     (long long)json_integer_value(json_object_get(doc, "break_seq")),
			     json_string_value(json_object_get(doc, "reason")));
		json_decref(doc);
		return ok ? 0 : AW_EXIT_FAIL;
	}
	char filter[400] = "", v[300];
	if (cli_get(opts, "action")) {
		query_escape(cli_get(opts, "action"), v, sizeof v);
		snprintf(filter + strlen(filter), sizeof filter - strlen(filter), "&action=%s", v);
	}
	if (cli_get(opts, "since")) {
		query_escape(cli_get(opts, "since"), v, sizeof v);
		snprintf(filter + strlen(filter), sizeof filter - strlen(filter), "&since=%s", v);
	}
	char cursor[32] = "0";
	for (;;) {
		snprintf(path, sizeof path, "/v1/projects/%s/audit?limit=1000&cursor=%s%s", project,
			 cursor, filter);
		if ((rc = client_call("GET", path, NULL, &doc)))
			return rc;
		size_t i;
		json_t *r;
		json_array_foreach (json_object_get(doc, "items"), i, r) {
			json_dumpf(r, stdout, JSON_COMPACT);
			fputc('\n', stdout);
		}
		const char *next = json_string_value(json_object_get(doc, "next_cursor"));
		int more = next != NULL;
		if (more && AW_STR_COPY(cursor, next) < 0) { /* never an export cut short */
			json_decref(doc);
			return cli_fail(AW_E_CLIENT, "the server answered a malformed cursor");
		}
		json_decref(doc);
		doc = NULL;
		if (!more)
			break;
	}
	return fflush(stdout) == 0 ? 0 : AW_EXIT_FAIL;
}

int cmd_audit(int argc, char **argv)
{
	aw_opt opts[] = {
		{"db", "AWOOOP_DB", NULL, 0,
		 "read this store directly (default without a key: sqlite:./var/awooop.db)", NULL},
		{"api", NULL, NULL, 1,
		 "through the server at AWOOOP_URL with AWOOOP_KEY, even when AWOOOP_DB is set",
		 NULL},
		{"project", "AWOOOP_PROJECT", NULL, 0,
		 "project whose trail to read (through the server: default the key's own)", NULL},
		{"action", NULL, NULL, 0, "export: only this action", NULL},
		{"since", NULL, NULL, 0, "export: only records at or after this time", NULL},
		{"json", NULL, NULL, 1, "verify: print the report as JSON", NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *usage =
		"usage: awooop audit verify [--project P] [--db URL | --api] [--json]\n"
		"       awooop audit export [--project P] [--db URL | --api] [--action A] [--since TS]\n\n"
		"A project's hash-chained audit trail. verify walks the chain and names the\n"
		"first deleted, altered or reordered record (exit 1 when the chain is\n"
		"broken). export prints the trail as JSON lines, oldest first.\n\n"
		"Two ways to read it: with --db URL (or AWOOOP_DB) the store itself, so a\n"
		"verification trusts no running server (the project is required); else,\n"
		"with a key (AWOOOP_KEY), through the server at AWOOOP_URL - the key needs\n"
		"the operator scope on the project, which defaults to the key's own; --api\n"
		"forces this way. Without either, the embedded default store is read.\n\n"
		"Examples:\n"
		"  awooop audit verify --db sqlite:./var/awooop.db --project acme\n"
		"  AWOOOP_KEY=$OPERATOR awooop audit export --action contract.activate\n"
		"  awooop audit export --api --since 2026-12-01T00:00:00.000Z | jq .action";
	const char *pos[1];
	int npos = 1;
	int rc = cli_parse(argc, argv, opts, pos, &npos, usage);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (npos != 1 || (strcmp(pos[0], "verify") != 0 && strcmp(pos[0], "export") != 0)) {
		cli_usage(usage, opts);
		return AW_EXIT_USAGE;
	}
	const char *db = cli_get(opts, "db"), *project = cli_get(opts, "project");
	if (cli_get(opts, "api") || (!db && client_has_key())) {
		if ((rc = cli_project(opts, &project)))
			return rc;
		return audit_api(pos[0], project, opts);
	}
	if (!db)
		db = "sqlite:./var/awooop.db";
	if (!project)
		return cli_fail(AW_E_USAGE,
				"--project is required when reading the store (or set AWOOOP_KEY"
				" to read through the server)");
	if (!aw_ident_project_ok(project) && strcmp(project, AW_PLATFORM_PROJECT) != 0)
		return cli_fail(AW_E_TENANT_SLUG, "bad --project");
	aw_error err = {0};
	aw_store *s = NULL;
	aw_store_opts so = {.pool_size = 1};
	aw_err e = aw_store_open(db, &so, &s, &err);
	if (e)
		return cli_fail(e, err.msg);
	aw_ctx ctx;
	aw_ctx_system(&ctx, project);
	if (strcmp(pos[0], "verify") == 0) {
		aw_audit_report rep;
		e = aw_audit_verify(s, &ctx, &rep, &err);
		aw_store_close(s);
		if (e)
			return cli_fail(e, err.msg);
		print_verify(project, cli_get(opts, "json") != NULL, rep.ok, (long long)rep.records,
			     (long long)rep.break_seq, rep.reason);
		return rep.ok ? 0 : AW_EXIT_FAIL;
	}
	int64_t after = 0;
	for (;;) {
		aw_txn *t = NULL;
		aw_audit_row *rows = NULL;
		int n = 0;
		if (!(e = aw_store_begin(s, &ctx, AW_TXN_READ, &t, &err))) {
			e = aw_store_audit_list(t, after, cli_get(opts, "action"),
						cli_get(opts, "since"), 1000, &rows, &n, &err);
			aw_store_rollback(t);
		}
		if (e)
			break;
		for (int i = 0; i < n; i++) {
			json_t *o = aw_audit_row_json(&rows[i]);
			json_dumpf(o, stdout, JSON_COMPACT);
			fputc('\n', stdout);
			json_decref(o);
			after = rows[i].seq;
		}
		aw_audit_rows_free(rows, n);
		if (n < 1000)
			break;
	}
	aw_store_close(s);
	return e ? cli_fail(e, err.msg) : 0;
}

static json_t *load_json_file(const char *path, char *msg, size_t cap)
{
	json_error_t je;
	json_t *v = json_load_file(path, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
	if (!v)
		snprintf(msg, cap, "%s: %s (line %d column %d)", path, je.text, je.line, je.column);
	return v;
}

int cmd_schema(int argc, char **argv)
{
	aw_opt opts[] = {{NULL, NULL, NULL, 0, NULL, NULL}};
	const char *usage =
		"usage: awooop schema check SCHEMA_FILE INSTANCE_FILE\n\n"
		"Validates a JSON document against a JSON Schema (draft-07 keywords:\n"
		"see docs/contracts.md). Exit 0 valid; 1 invalid, with one JSON line\n"
		"per error on stdout ({pointer, keyword, message}); 2 when a file is\n"
		"unreadable, not JSON, or the schema is invalid or unsupported.\n\n"
		"Example:\n"
		"  awooop schema check contracts/schemas/budget.schema.json budget.json";
	const char *pos[3];
	int npos = 3;
	int rc = cli_parse(argc, argv, opts, pos, &npos, usage);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (npos != 3 || strcmp(pos[0], "check") != 0) {
		cli_usage(usage, opts);
		return AW_EXIT_USAGE;
	}
	char msg[512];
	json_t *schema = load_json_file(pos[1], msg, sizeof msg);
	if (!schema)
		return cli_fail(AW_E_USAGE, msg), AW_EXIT_USAGE;
	json_t *inst = load_json_file(pos[2], msg, sizeof msg);
	if (!inst) {
		json_decref(schema);
		return cli_fail(AW_E_USAGE, msg), AW_EXIT_USAGE;
	}
	aw_schema *s = NULL;
	aw_error err = {0};
	if (aw_schema_compile(schema, &s, &err)) {
		json_decref(schema);
		json_decref(inst);
		return cli_fail(AW_E_USAGE, err.msg), AW_EXIT_USAGE;
	}
	aw_schema_error errs[64];
	int n = aw_schema_validate(s, inst, errs, 64);
	for (int i = 0; i < n && i < 64; i++) {
		json_t *o = json_pack("{s:s, s:s, s:s}", "pointer", errs[i].pointer, "keyword",
				      errs[i].keyword, "message", errs[i].message);
		json_dumpf(o, stdout, JSON_COMPACT);
		fputc('\n', stdout);
		json_decref(o);
	}
	aw_schema_free(s);
	json_decref(schema);
	json_decref(inst);
	return n ? AW_EXIT_FAIL : 0;
}
