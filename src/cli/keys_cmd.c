/*
 * keys_cmd.c - `awooop keys ...`: the Redis key registry (list, show), the
 * live-keyspace inventory, and the INV-1 migration (status, migrate, backfill).
 * Migration commands need the store (--db) for phases and audit, and Redis.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "awooop/alloc.h"
#include "awooop/keymig.h"
#include "cli.h"

static const char *ttl_text(int ttl, char *buf, size_t cap)
{
	if (ttl == 0)
		return "none";
	if (ttl < 0)
		return "varies";
	snprintf(buf, cap, "%ds", ttl);
	return buf;
}

static void progress(void *ud, long long done)
{
	const char *what = ud;
	if (isatty(2))
		fprintf(stderr, "\r%s: %lld keys", what, done);
	else if (done % 100000 == 0)
		fprintf(stderr, "%s: %lld keys\n", what, done);
}

/* The gate windows from AWOOOP_KEYS_WINDOW_{A,B,C}_S: unset = the default,
 * 0 = no wait, anything else not a number of seconds is refused. */
static int windows_from_env(aw_kv_opts *ko)
{
	const char *names[] = {"AWOOOP_KEYS_WINDOW_A_S", "AWOOOP_KEYS_WINDOW_B_S",
			       "AWOOOP_KEYS_WINDOW_C_S"};
	int *win[] = {&ko->window_a_s, &ko->window_b_s, &ko->window_c_s};
	for (int i = 0; i < 3; i++) {
		const char *v = getenv(names[i]);
		long s;
		int rc = v ? cli_long(names[i], v, 0, 10L * 365 * 86400, &s) : 0;
		if (rc)
			return rc;
		if (v)
			*win[i] = s == 0 ? AW_KV_WINDOW_NONE : (int)s;
	}
	return 0;
}

static aw_err kv_from_opts(aw_opt *opts, const aw_kv_opts *ko, aw_store **s, aw_kv **kv,
			   aw_error *err)
{
	const char *db = cli_get(opts, "db");
	/* an embedded store is migrated on open, as serve does */
	aw_store_opts so = {.pool_size = 2, .auto_migrate = strncmp(db, "sqlite:", 7) == 0};
	aw_err e = aw_store_open(db, &so, s, err);
	if (!e)
		e = aw_kv_open(cli_get(opts, "redis"), *s, ko, kv, err);
	return e;
}

static void print_status(const aw_kv_status *st)
{
	printf("phase %s since %s: reads %lld, new-key hits %lld, fallbacks %lld, old-key reads %lld\n",
	       st->phase, st->since[0] ? st->since : "-", st->reads, st->new_hits, st->fallbacks,
	       st->old_reads);
}

int cmd_keys(int argc, char **argv)
{
	aw_opt opts[] = {
		{"json", NULL, NULL, 1, "print JSON", NULL},
		{"project", "AWOOOP_PROJECT", NULL, 0, "project", NULL},
		{"pattern", NULL, NULL, 0, "registry name (see keys list)", NULL},
		{"redis", "AWOOOP_REDIS", NULL, 0,
		 "redis[s]://[USER:PASSWORD@]HOST:PORT[/DB][?tls_ca=...]", NULL},
		{"db", "AWOOOP_DB", "sqlite:./var/awooop.db", 0, "store URL (phases, audit)", NULL},
		{"to", NULL, NULL, 0, "migrate: A, B, C or done", NULL},
		{"force", NULL, NULL, 1, "migrate: skip the gate (audited)", NULL},
		{"legacy", NULL, NULL, 1, "show: the legacy form", NULL},
		{"rate", NULL, "0", 0, "backfill: keys per second (0 = unlimited)", NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *usage =
		"usage: awooop keys list [--json]\n"
		"       awooop keys show PATTERN --project P [name=value ...] [--legacy]\n"
		"       awooop keys inventory --redis URL [--json]\n"
		"       awooop keys status|migrate|backfill --redis URL --db URL --project P\n"
		"                  --pattern NAME [--to A|B|C|done] [--force] [--rate N]\n\n"
		"Windows (seconds): AWOOOP_KEYS_WINDOW_A_S (30 days), _B_S (14 days), _C_S (7\n"
		"days). Legacy keys belong to AWOOOP_LEGACY_PROJECT (default awoooi).\n"
		"These commands read Redis and the store directly (no server); --project\n"
		"defaults to AWOOOP_PROJECT.\n\n"
		"Examples:\n"
		"  awooop keys list\n"
		"  awooop keys show tg_sent --project acme fingerprint=ab12\n"
		"  awooop keys status --redis redis://127.0.0.1:6379 --db postgresql://... \\\n"
		"      --project acme --pattern tg_sent";
	const char *pos[10];
	int npos = 10;
	int rc = cli_parse(argc, argv, opts, pos, &npos, usage);
	if (rc)
		return rc < 0 ? 0 : rc;
	const char *verb = npos ? pos[0] : "";
	int as_json = cli_get(opts, "json") != NULL;
	char tb[32];
	if (!strcmp(verb, "list")) {
		json_t *arr = json_array();
		if (!as_json)
			printf("%-26s %-3s %-8s %-6s %-9s %-40s %s\n", "NAME", "PRI", "SCOPE",
			       "TYPE", "TTL", "LEGACY", "NEW");
		for (int i = 0; i < aw_keys_count(); i++) {
			const aw_key_pattern *p = aw_keys_at(i);
			const char *scope = p->scope == AW_KEY_PLATFORM ? "platform" : "tenant";
			if (as_json) {
				json_t *o =
					json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "name", p->name,
						  "priority", p->priority, "scope", scope, "type",
						  p->type, "legacy", p->legacy, "new", p->modern);
				json_object_set_new(o, "ttl_s",
						    p->ttl_s > 0 ? json_integer(p->ttl_s)
								 : json_null());
				json_array_append_new(arr, o);
			} else {
				printf("%-26s %-3s %-8s %-6s %-9s %-40s %s\n", p->name, p->priority,
				       scope, p->type, ttl_text(p->ttl_s, tb, sizeof tb), p->legacy,
				       p->modern);
			}
		}
		if (as_json) {
			char *s = json_dumps(arr, JSON_INDENT(2));
			puts(s);
			free(s);
		}
		json_decref(arr);
		return 0;
	}
	if (!strcmp(verb, "show")) {
		if (npos < 2)
			return cli_fail(AW_E_USAGE, "show needs a PATTERN");
		const aw_key_pattern *p = aw_keys_find(pos[1]);
		if (!p)
			return cli_fail(AW_E_KEYS_PATTERN,
					"unknown pattern (see awooop keys list)");
		/* name=value pairs, placed in template order */
		const char *vals[8];
		int nv = 0;
		const char *tmpl = cli_get(opts, "legacy") ? p->legacy : p->modern;
		for (const char *t = strchr(tmpl, '{'); t && nv < 8; t = strchr(t + 1, '{')) {
			const char *end = strchr(t, '}');
			if (!strncmp(t, "{project_id}", 12))
				continue;
			vals[nv] = NULL;
			for (int i = 2; i < npos; i++) {
				const char *eq = strchr(pos[i], '=');
				if (eq && (size_t)(eq - pos[i]) == (size_t)(end - t - 1) &&
				    !strncmp(pos[i], t + 1, (size_t)(eq - pos[i])))
					vals[nv] = eq + 1;
			}
			if (!vals[nv]) {
				char msg[96];
				snprintf(msg, sizeof msg, "missing %.*s=VALUE", (int)(end - t - 1),
					 t + 1);
				return cli_fail(AW_E_KEYS_COMPONENT, msg), AW_EXIT_USAGE;
			}
			nv++;
		}
		char key[512];
		aw_error err = {0};
		aw_err e = aw_keys_build(p, !cli_get(opts, "legacy"), cli_get(opts, "project"),
					 vals, nv, key, sizeof key, &err);
		if (e)
			return cli_fail(e, err.msg), AW_EXIT_USAGE;
		puts(key);
		return 0;
	}
	if (!strcmp(verb, "inventory")) {
		if (!cli_get(opts, "redis"))
			return cli_fail(AW_E_USAGE, "--redis is required");
		int n = aw_keys_count();
		aw_kv_inv_row *rows = aw_calloc((size_t)n, sizeof *rows);
		long long unknown = 0, total = 0;
		char sample[5][128] = {{0}};
		aw_error err = {0};
		int64_t t0 = aw_clock_mono_ns();
		aw_err e = aw_kv_inventory(cli_get(opts, "redis"), rows, &unknown, &total, sample,
					   progress, "inventory", &err);
		double secs = (double)(aw_clock_mono_ns() - t0) / 1e9;
		if (isatty(2))
			fputc('\n', stderr);
		if (e) {
			free(rows);
			return cli_fail(e, err.msg);
		}
		if (as_json) {
			json_t *o = json_pack("{s:I, s:I, s:f}", "total", (json_int_t)total,
					      "unknown", (json_int_t)unknown, "seconds", secs);
			json_t *pats = json_object();
			for (int i = 0; i < n; i++)
				json_object_set_new(
					pats, aw_keys_at(i)->name,
					json_pack("{s:I, s:I, s:I}", "legacy",
						  (json_int_t)rows[i].legacy, "prefixed",
						  (json_int_t)rows[i].modern, "missing_ttl",
						  (json_int_t)rows[i].missing_ttl));
			json_object_set_new(o, "patterns", pats);
			json_t *us = json_array();
			for (int i = 0; i < 5 && i < unknown; i++)
				json_array_append_new(us, json_string(sample[i]));
			json_object_set_new(o, "unknown_sample", us);
			char *s = json_dumps(o, JSON_INDENT(2));
			puts(s);
			free(s);
			json_decref(o);
		} else {
			printf("%-26s %10s %10s %12s\n", "PATTERN", "LEGACY", "PREFIXED",
			       "MISSING_TTL");
			for (int i = 0; i < n; i++)
				if (rows[i].legacy || rows[i].modern)
					printf("%-26s %10lld %10lld %12lld\n", aw_keys_at(i)->name,
					       rows[i].legacy, rows[i].modern, rows[i].missing_ttl);
			printf("%lld keys in %.2f s (%.0f keys/s), %lld unknown\n", total, secs,
			       secs > 0 ? (double)total / secs : 0, unknown);
			for (int i = 0; i < 5 && i < unknown; i++)
				printf("  unknown: %s\n", sample[i]);
		}
		free(rows);
		return 0;
	}
	if (strcmp(verb, "status") && strcmp(verb, "migrate") && strcmp(verb, "backfill")) {
		cli_usage(usage, opts);
		return AW_EXIT_USAGE;
	}
	if (!cli_get(opts, "redis") || !cli_get(opts, "project") || !cli_get(opts, "pattern"))
		return cli_fail(AW_E_USAGE, "--redis, --project and --pattern are required");
	aw_store *s = NULL;
	aw_kv *kv = NULL;
	aw_error err = {0};
	aw_kv_opts ko = {.legacy_project = getenv("AWOOOP_LEGACY_PROJECT")};
	long rate = 0;
	if ((rc = windows_from_env(&ko)) || (rc = cli_opt_long(opts, "rate", 0, 10000000, &rate)))
		return rc;
	aw_err e = kv_from_opts(opts, &ko, &s, &kv, &err);
	aw_ctx ctx;
	aw_ctx_system(&ctx, cli_get(opts, "project"));
	snprintf(ctx.principal, sizeof ctx.principal, "cli");
	aw_kv_status st;
	if (!e && !strcmp(verb, "status")) {
		if (!(e = aw_keymig_status(s, kv, &ctx, cli_get(opts, "pattern"), &st, &err)))
			print_status(&st);
	} else if (!e && !strcmp(verb, "migrate")) {
		e = aw_keymig_step(s, kv, &ctx, cli_get(opts, "pattern"), cli_get(opts, "to"),
				   cli_get(opts, "force") != NULL, &st, &err);
		print_status(&st); /* the counters that decided */
	} else if (!e) {
		long long copied = 0, skipped = 0;
		int64_t t0 = aw_clock_mono_ns();
		e = aw_kv_backfill(kv, &ctx, cli_get(opts, "pattern"), (int)rate, &copied, &skipped,
				   progress, "backfill", &err);
		double secs = (double)(aw_clock_mono_ns() - t0) / 1e9;
		if (isatty(2))
			fputc('\n', stderr);
		printf("backfill: %lld copied, %lld already present, %.2f s (%.0f keys/s)\n",
		       copied, skipped, secs, secs > 0 ? (double)(copied + skipped) / secs : 0);
	}
	aw_kv_close(kv);
	aw_store_close(s);
	return e ? cli_fail(e, err.msg) : 0;
}
