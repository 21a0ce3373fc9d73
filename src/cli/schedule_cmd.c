/*
 * schedule_cmd.c - `awooop schedule`: create, list, get and delete a
 * project's schedules through a running server (AWOOOP_URL, AWOOOP_KEY;
 * the project is the key's unless --project), and preview an expression's
 * next ticks locally (no server: the same parser and zone database as the
 * workers).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/clock.h"
#include "awooop/ident.h"
#include "awooop/schedule.h"
#include "awooop/tz.h"
#include "cli.h"

#define PREVIEW_MAX 100

static const char USAGE[] =
	"usage: awooop schedule VERB [args] [options]\n\n"
	"Runs started on a cron schedule in a time zone. Every run worker fires the\n"
	"schedules that are due; each tick starts exactly one run however many\n"
	"workers there are.\n\n"
	"Verbs:\n"
	"  create NAME --cron EXPR --file RUN.json [--timezone Z] [--catch-up skip|once]\n"
	"                          RUN.json: a run request as `awooop run submit` takes it\n"
	"                          (no run_at)\n"
	"  list                    name, expression, zone, policy, next and last tick\n"
	"  get NAME                the schedule and the newest ticks it fired (JSON)\n"
	"  delete NAME             its runs stay\n"
	"  preview EXPR [--timezone Z] [--count N] [--after TIME]\n"
	"                          the next ticks, in UTC and the zone's local time\n"
	"                          (local: no server needed)\n\n"
	"EXPR: minute hour day-of-month month day-of-week (0-59 0-23 1-31 1-12 0-7), each\n"
	"*, N, N-M, a list of them, /STEP; JAN..DEC, SUN..SAT; or @yearly @monthly\n"
	"@weekly @daily @hourly. Quote it. Daylight saving: docs/schedules.md.\n"
	"--catch-up after downtime: skip (default) fires only what is due within 60 s;\n"
	"once starts one run standing for the ticks missed, then goes on.\n"
	"Talks to AWOOOP_URL with AWOOOP_KEY (create, delete: operator).\n\n"
	"Examples:\n"
	"  echo '{\"workflow\":[{\"kind\":\"noop\"}]}' > run.json\n"
	"  awooop schedule create nightly --cron '30 2 * * MON-FRI' \\\n"
	"      --timezone Europe/Berlin --catch-up once --file run.json\n"
	"  awooop schedule preview '30 2 * * *' --timezone Europe/Berlin --after \\\n"
	"      2026-03-28T00:00:00.000Z --count 3";

/* The whole of a file ("-": stdin) as JSON, or NULL with a message said. */
static json_t *load_run(const char *file)
{
	json_error_t je;
	json_t *v = strcmp(file, "-") ? json_load_file(file, JSON_REJECT_DUPLICATES, &je)
				      : json_loadf(stdin, JSON_REJECT_DUPLICATES, &je);
	if (!v) {
		char msg[300];
		snprintf(msg, sizeof msg, "--file %.100s: %s", file, je.text);
		cli_fail(AW_E_USAGE, msg);
	}
	return v;
}

static const char *ts_or_dash(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s && *s ? s : "-";
}

static void print_table(const json_t *items)
{
	printf("%-24s %-18s %-20s %-5s %-24s %-24s %s\n", "name", "cron", "timezone", "catch",
	       "next_fire_at", "last_fire_at", "last_error");
	size_t i;
	json_t *it;
	json_array_foreach (items, i, it)
		printf("%-24s %-18s %-20s %-5s %-24s %-24s %s\n", cli_str(it, "name"),
		       cli_str(it, "cron"), cli_str(it, "timezone"), cli_str(it, "catch_up"),
		       ts_or_dash(it, "next_fire_at"), ts_or_dash(it, "last_fire_at"),
		       ts_or_dash(it, "last_error"));
}

/* Local, no server: the next ticks of expr in zone. */
static int preview(const char *expr, const aw_opt *opts)
{
	long count = 5;
	int rc = cli_opt_long(opts, "count", 1, PREVIEW_MAX, &count);
	if (rc)
		return rc;
	const char *zone = cli_get(opts, "timezone") ? cli_get(opts, "timezone") : "UTC";
	int64_t after = aw_clock_wall_ms();
	const char *a = cli_get(opts, "after");
	if (a && aw_clock_parse(a, &after) != 0)
		return cli_fail(AW_E_USAGE, "--after: a time like 2026-03-28T00:00:00.000Z");
	int64_t ticks[PREVIEW_MAX];
	int got = 0;
	aw_error err = {0};
	aw_tz *tz = NULL;
	aw_err e = aw_schedule_preview(expr, zone, after, (int)count, ticks, &got, &err);
	if (!e)
		e = aw_tz_load(zone, &tz, &err);
	if (e) { /* the command line's own expression or zone: a usage error */
		cli_fail(e, err.msg);
		return AW_EXIT_USAGE;
	}
	for (int i = 0; i < got; i++) {
		char utc[AW_TS_LEN + 1], local[AW_TS_LEN + 1];
		int32_t off = aw_tz_offset(tz, ticks[i] / 1000);
		aw_clock_format(ticks[i], utc);
		aw_clock_format(ticks[i] + (int64_t)off * 1000, local);
		int a_off = off < 0 ? -off : off;
		printf("%s  %.10s %.5s %c%02d:%02d\n", utc, local, local + 11, off < 0 ? '-' : '+',
		       a_off / 3600, a_off / 60 % 60);
	}
	if (got < count)
		printf("(no tick after that within 400 years)\n");
	aw_tz_free(tz);
	return 0;
}

int cmd_schedule(int argc, char **argv)
{
	aw_opt opts[] = {
		{"cron", NULL, NULL, 0, "create: the cron expression (quote it)", NULL},
		{"timezone", NULL, NULL, 0, "create, preview: an IANA zone [default UTC]", NULL},
		{"catch-up", NULL, NULL, 0, "create: skip or once [default skip]", NULL},
		{"file", NULL, NULL, 0, "create: the run request JSON (- for stdin)", NULL},
		{"count", NULL, "5", 0, "preview: how many ticks (1..100)", NULL},
		{"after", NULL, NULL, 0, "preview: from this time [default now]", NULL},
		{"project", "AWOOOP_PROJECT", NULL, 0, "the project (default: the key's own)",
		 NULL},
		{"json", NULL, NULL, 1, "print the API's JSON", NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *pos[3];
	int npos = 3;
	int rc = cli_parse(argc, argv, opts, pos, &npos, USAGE);
	if (rc)
		return rc < 0 ? 0 : rc;
	const char *verb = npos ? pos[0] : "";
	const char *name = npos == 2 ? pos[1] : NULL;
	if (!strcmp(verb, "preview")) {
		if (npos != 2)
			return cli_fail(AW_E_USAGE,
					"give one expression, quoted: preview '0 9 * * *'");
		return preview(pos[1], opts);
	}
	int create = !strcmp(verb, "create"), list = !strcmp(verb, "list"),
	    get = !strcmp(verb, "get"), del = !strcmp(verb, "delete");
	if (!create && !list && !get && !del) {
		cli_usage(USAGE, opts);
		return AW_EXIT_USAGE;
	}
	if (!list && (!name || !aw_ident_name_ok(name)))
		return cli_fail(AW_E_USAGE, "give the schedule's NAME: 1..63 of [A-Za-z0-9._-]");
	if (list && npos != 1)
		return cli_fail(AW_E_USAGE, "list takes no argument");
	json_t *body = NULL;
	if (create) {
		const char *cron = cli_get(opts, "cron"), *file = cli_get(opts, "file");
		if (!cron || !file)
			return cli_fail(AW_E_USAGE, "create needs --cron EXPR and --file RUN.json");
		json_t *run = load_run(file);
		if (!run)
			return AW_EXIT_USAGE;
		body = json_pack("{s:s, s:s, s:o}", "name", name, "cron", cron, "run", run);
		if (body && cli_get(opts, "timezone"))
			json_object_set_new(body, "timezone",
					    json_string(cli_get(opts, "timezone")));
		if (body && cli_get(opts, "catch-up"))
			json_object_set_new(body, "catch_up",
					    json_string(cli_get(opts, "catch-up")));
		if (!body)
			return cli_fail(AW_E_NOMEM, "out of memory");
	}
	const char *project = NULL;
	if ((rc = cli_project(opts, &project))) {
		json_decref(body);
		return rc;
	}
	char path[256];
	snprintf(path, sizeof path, "/v1/projects/%s/schedules%s%s", project, name ? "/" : "",
		 name && !create ? name : "");
	json_t *doc = NULL;
	rc = client_call(create ? "POST" : del ? "DELETE" : "GET", path, body, &doc);
	json_decref(body);
	if (rc)
		return rc;
	if (del) {
		printf("schedule %s deleted (its runs stay)\n", name);
	} else if (cli_get(opts, "json") || get) {
		cli_print_json(doc);
	} else if (list) {
		print_table(json_object_get(doc, "items"));
	} else {
		json_t *one = json_pack("[O]", doc);
		print_table(one);
		json_decref(one);
		printf("next: awooop schedule get %s   (its ticks and their runs)\n", name);
	}
	json_decref(doc);
	return 0;
}
