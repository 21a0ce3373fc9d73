/*
 * test_schedule.c - schedules on a real store (argv[1]: sqlite | postgres):
 * requests and their refusals (E-CRON-001 / E-CRON-002 with their pointers,
 * templates, names, limits), the audit records, tenant isolation; a
 * simulated hour in which three workers (each with a store of its own, as
 * three processes have) race for every tick of three schedules while the
 * test moves the wall clock a minute at a time - each tick starts exactly
 * one run; both catch-up policies after downtime; a Europe/Berlin schedule
 * across the spring-forward; templates and zones that stop loading pass
 * their tick (once, with the code) instead of failing every pass.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "awooop/clock.h"
#include "awooop/json.h"
#include "awooop/metrics.h"
#include "awooop/run.h"
#include "awooop/worker.h"
#include "awooop/schedule.h"
#include "core/clock_hook.h"
#include "support.h"

#define S (aw_fx.s)
#define NOOP "{\"workflow\":[{\"kind\":\"noop\"}]}"

static int64_t shift_ms; /* the wall clock's shift now */

/* Moves this process's wall clock so that it reads at (a stored time) now. */
static void sim_at_ms(int64_t at)
{
	int64_t real = aw_clock_wall_ms() - shift_ms;
	shift_ms = at - real;
	clock_test_shift_wall(shift_ms * 1000000LL);
}

static int64_t ts(const char *s)
{
	int64_t ms = 0;
	assert_int_equal(aw_clock_parse(s, &ms), 0);
	return ms;
}

static void sim_at(const char *s)
{
	sim_at_ms(ts(s));
}

static int reset_clock(void **state)
{
	(void)state;
	shift_ms = 0;
	clock_test_shift_wall(0);
	return 0;
}

static int setup(void **state)
{
	const char *const projects[] = {"sc-main", "sc-other", "sc-race", "sc-skip",
					"sc-once", "sc-dst",   "sc-fail", NULL};
	return aw_test_store_up(projects);
}

static int teardown(void **state)
{
	reset_clock(state);
	aw_test_store_down();
	return 0;
}

static void as(aw_ctx *c, const char *project)
{
	aw_test_ctx(c, project, AW_SCOPE_OPERATOR, "tester");
}

static aw_err create(const char *project, const char *body, json_t **out, aw_error *err)
{
	aw_ctx c;
	as(&c, project);
	aw_schedule_request req;
	aw_err e = aw_schedule_request_decode(body, strlen(body), &req, err);
	if (e)
		return e;
	e = aw_schedule_create(S, &c, &req, out, err);
	aw_schedule_request_free(&req);
	return e;
}

static json_t *create_ok(const char *project, const char *body)
{
	json_t *o = NULL;
	aw_error err = {0};
	if (create(project, body, &o, &err))
		fail_msg("%s: %s (%s)", body, err.msg, err.where);
	return o;
}

static json_t *get_ok(const char *project, const char *name)
{
	aw_ctx c;
	as(&c, project);
	json_t *o = NULL;
	aw_error err = {0};
	if (aw_schedule_get(S, &c, name, &o, &err))
		fail_msg("%s: %s", name, err.msg);
	return o;
}

static const char *str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

static int count_runs(const char *project)
{
	aw_ctx c;
	as(&c, project);
	int total = 0;
	char cursor[AW_UUID_STR_LEN + 1] = "";
	for (;;) {
		aw_run *runs = NULL;
		int n = 0;
		aw_error err = {0};
		assert_int_equal(
			aw_run_list(S, &c, NULL, cursor[0] ? cursor : NULL, 1000, &runs, &n, &err),
			AW_OK);
		total += n;
		if (n)
			snprintf(cursor, sizeof cursor, "%s", runs[n - 1].run_id);
		aw_runs_free(runs, n);
		if (n < 1000)
			return total;
	}
}

static int count_audit(const char *project, const char *action)
{
	aw_audit_row *rows = NULL;
	int n = 0;
	aw_test_audit_rows(project, action, 100000, &rows, &n);
	aw_audit_rows_free(rows, n);
	return n;
}

static void refused(const char *body, aw_err code, const char *where, const char *needle)
{
	json_t *o = NULL;
	aw_error err = {0};
	aw_err e = create("sc-main", body, &o, &err);
	if (e != code || strcmp(err.where, where) != 0 || !strstr(err.msg, needle))
		fail_msg("%s: %s at '%s': %s (wanted %s at %s, '%s')", body, aw_err_code(e),
			 err.where, err.msg, aw_err_code(code), where, needle);
	assert_null(o);
}

static void test_requests(void **state)
{
	sim_at("2026-06-01T10:20:00.000Z");
	json_t *o = create_ok("sc-main", "{\"name\":\"hourly\",\"cron\":\"0 * * * *\","
					 "\"timezone\":\"Europe/Berlin\",\"run\":" NOOP "}");
	assert_string_equal(str(o, "name"), "hourly");
	assert_string_equal(str(o, "catch_up"), "skip");
	assert_string_equal(str(o, "timezone"), "Europe/Berlin");
	assert_string_equal(str(o, "next_fire_at"), "2026-06-01T11:00:00.000Z");
	assert_true(json_is_null(json_object_get(o, "last_fire_at")));
	assert_string_equal(str(o, "created_by"), "tester");
	assert_true(json_is_object(json_object_get(o, "run")));
	json_decref(o);
	o = create_ok("sc-main", "{\"name\":\"daily\",\"cron\":\"@daily\",\"catch_up\":\"once\","
				 "\"run\":{\"workflow\":[{\"kind\":\"noop\"}],\"input\":{\"a\":1},"
				 "\"priority\":5}}");
	assert_string_equal(str(o, "timezone"), "UTC");
	assert_string_equal(str(o, "next_fire_at"), "2026-06-02T00:00:00.000Z");
	json_decref(o);

	refused("{\"name\":\"x\",\"cron\":\"61 * * * *\",\"run\":" NOOP "}", AW_E_CRON, "/cron",
		"minute field: 61 is out of 0-59");
	refused("{\"name\":\"x\",\"cron\":\"* * * *\",\"run\":" NOOP "}", AW_E_CRON, "/cron",
		"4 fields");
	refused("{\"name\":\"x\",\"cron\":\"0 0 30 2 *\",\"run\":" NOOP "}", AW_E_CRON, "/cron",
		"never fires");
	refused("{\"name\":\"x\",\"cron\":\"* * * * *\",\"timezone\":\"Mars/Olympus\",\"run\":" NOOP
		"}",
		AW_E_CRON_ZONE, "/timezone", "unknown time zone Mars/Olympus");
	refused("{\"name\":\"x\",\"cron\":\"* * * * *\",\"timezone\":\"../../etc/passwd\",\"run\":" NOOP
		"}",
		AW_E_CRON_ZONE, "/timezone", "IANA name");
	refused("{\"name\":\"x y\",\"cron\":\"* * * * *\",\"run\":" NOOP "}", AW_E_REQ_INVALID,
		"/name", "schedule name");
	refused("{\"name\":\"x\",\"cron\":\"* * * * *\",\"catch_up\":\"all\",\"run\":" NOOP "}",
		AW_E_REQ_INVALID, "/catch_up", "skip");
	refused("{\"name\":\"x\",\"cron\":\"* * * * *\",\"run\":[]}", AW_E_REQ_INVALID, "/run",
		"run request");
	refused("{\"name\":\"x\",\"cron\":\"* * * * *\",\"run\":{\"workflow\":[{\"kind\":\"nope\"}]}}",
		AW_E_RUN_WORKFLOW, "/run/workflow/0/kind", "run:");
	refused("{\"name\":\"x\",\"cron\":\"* * * * *\",\"run\":{\"workflow\":[{\"kind\":\"noop\"}],"
		"\"run_at\":\"2026-07-01T00:00:00.000Z\"}}",
		AW_E_REQ_INVALID, "/run/run_at", "no run_at");
	refused("{\"name\":\"x\",\"cron\":\"* * * * *\",\"run\":{\"workflow\":[{\"kind\":\"noop\"}],"
		"\"queue\":\"mail\"}}",
		AW_E_REQ_INVALID, "/run/queue", "no queue mail");
	refused("{\"name\":\"x\",\"cron\":\"* * * * *\",\"run\":{\"workflow\":[{\"kind\":\"noop\"}],"
		"\"input\":{\"password\":\"hunter2-hunter2\"}}}",
		AW_E_RUN_SECRET, "/run/input/password", "run:");
	refused("{\"name\":\"x\",\"cron\":\"* * * * *\",\"run\":" NOOP ",\"every\":1}",
		AW_E_REQ_UNKNOWN_FIELD, "/every", "");
	refused("{\"name\":\"hourly\",\"cron\":\"* * * * *\",\"run\":" NOOP "}",
		AW_E_SCHEDULE_EXISTS, "/name", "hourly");

	/* another project may use the name; neither sees the other's */
	json_decref(create_ok("sc-other",
			      "{\"name\":\"hourly\",\"cron\":\"5 * * * *\",\"run\":" NOOP "}"));
	aw_ctx c;
	as(&c, "sc-other");
	json_t *list = NULL;
	aw_error err = {0};
	assert_int_equal(aw_schedule_list(S, &c, &list, &err), AW_OK);
	assert_int_equal(json_array_size(json_object_get(list, "items")), 1);
	assert_string_equal(str(json_array_get(json_object_get(list, "items"), 0), "cron"),
			    "5 * * * *");
	json_decref(list);
	assert_int_equal(aw_schedule_get(S, &c, "daily", &o, &err), AW_E_SCHEDULE_NOT_FOUND);
	assert_int_equal(aw_schedule_delete(S, &c, "daily", &err), AW_E_SCHEDULE_NOT_FOUND);
	as(&c, "sc-main");
	assert_int_equal(aw_schedule_list(S, &c, &list, &err), AW_OK);
	assert_int_equal(json_array_size(json_object_get(list, "items")), 2);
	json_decref(list);

	/* audited, deleted, audited */
	assert_int_equal(count_audit("sc-main", "schedule.created"), 2);
	assert_int_equal(aw_schedule_delete(S, &c, "daily", &err), AW_OK);
	assert_int_equal(aw_schedule_delete(S, &c, "daily", &err), AW_E_SCHEDULE_NOT_FOUND);
	assert_int_equal(count_audit("sc-main", "schedule.deleted"), 1);

	/* at most AW_SCHEDULES_MAX a project */
	for (int i = 1; i < AW_SCHEDULES_MAX; i++) {
		char body[256];
		snprintf(body, sizeof body,
			 "{\"name\":\"n%d\",\"cron\":\"0 0 1 1 *\",\"run\":" NOOP "}", i);
		json_decref(create_ok("sc-main", body));
	}
	refused("{\"name\":\"one-more\",\"cron\":\"* * * * *\",\"run\":" NOOP "}", AW_E_LIMIT,
		"/name", "at most 100");
	for (int i = 1; i < AW_SCHEDULES_MAX; i++) {
		char name[16];
		snprintf(name, sizeof name, "n%d", i);
		assert_int_equal(aw_schedule_delete(S, &c, name, &err), AW_OK);
	}
	assert_int_equal(aw_schedule_delete(S, &c, "hourly", &err), AW_OK);
	as(&c, "sc-other");
	assert_int_equal(aw_schedule_delete(S, &c, "hourly", &err), AW_OK);
}

/* The value of one series of /metrics, or -1 when the text has none. */
static double metric(const char *series)
{
	char *m = aw_metrics_render();
	assert_non_null(m);
	double v = -1;
	size_t len = strlen(series);
	for (const char *p = m; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, series, len) && p[len] == ' ') {
			v = strtod(p + len + 1, NULL);
			break;
		}
	free(m);
	return v;
}

/* Waits until no schedule of project is due at the (simulated) now. */
static void wait_fired(const char *project, int64_t now)
{
	aw_ctx c;
	as(&c, project);
	for (int i = 0; i < 2000; i++) {
		json_t *list = NULL;
		aw_error err = {0};
		assert_int_equal(aw_schedule_list(S, &c, &list, &err), AW_OK);
		int due = 0;
		size_t k;
		json_t *it;
		json_array_foreach (json_object_get(list, "items"), k, it) {
			int64_t next = 0;
			if (aw_clock_parse(str(it, "next_fire_at"), &next) == 0 && next <= now)
				due++;
		}
		json_decref(list);
		if (!due)
			return;
		struct timespec t = {0, 5000000L};
		nanosleep(&t, NULL);
	}
	fail_msg("schedules of %s still due after 10 s", project);
}

static void test_three_workers_one_run_per_tick(void **state)
{
	/* 70 minutes from 2026-10-25T00:20:30Z: Europe/Berlin falls back from
	 * 03:00 CEST to 02:00 CET at 01:00Z inside them, so its 02:30 comes
	 * twice (00:30Z, 01:30Z) */
	int64_t t0 = ts("2026-10-25T00:20:30.000Z");
	sim_at_ms(t0);
	json_decref(create_ok("sc-race", "{\"name\":\"every-minute\",\"cron\":\"* * * * *\","
					 "\"run\":" NOOP "}"));
	json_decref(create_ok("sc-race", "{\"name\":\"quarter\",\"cron\":\"*/15 * * * *\","
					 "\"timezone\":\"Europe/Berlin\",\"run\":" NOOP "}"));
	/* wall clock: 02:30 happens twice in Berlin; it ticks once */
	json_decref(create_ok("sc-race", "{\"name\":\"wall\",\"cron\":\"30 2 * * *\","
					 "\"timezone\":\"Europe/Berlin\",\"run\":" NOOP "}"));
	aw_store *stores[3];
	aw_worker *w[3];
	for (int i = 0; i < 3; i++) {
		stores[i] = aw_test_store_open(&aw_fx.db);
		char id[32];
		snprintf(id, sizeof id, "race-%d", i);
		aw_worker_opts o = {.id = id,
				    .concurrency = 1,
				    .batch = 4,
				    .heartbeat_ms = 200,
				    .lease_ms = 5000,
				    .poll_ms = 50,
				    .queue_age_ms = -1,
				    .host_store_threads = -1,
				    .schedule_ms = 3};
		aw_error err = {0};
		assert_int_equal(aw_worker_start(stores[i], &o, &w[i], &err), AW_OK);
	}
	double raced0 = metric("awooop_run_events_total{event=\"schedule_raced\"}");
	for (int k = 1; k <= 70; k++) {
		int64_t now = t0 + (int64_t)k * 60000;
		sim_at_ms(now);
		wait_fired("sc-race", now);
	}
	for (int i = 0; i < 3; i++) {
		aw_worker_stop(w[i]);
		aw_store_close(stores[i]);
	}
	reset_clock(state);
	/* the workers did race for the ticks (and lost to each other) */
	double raced = metric("awooop_run_events_total{event=\"schedule_raced\"}") -
		       (raced0 < 0 ? 0 : raced0);
	print_message("three workers, 76 ticks: %.0f times a worker found a tick taken\n", raced);
	assert_true(raced > 0);
	/* 70 minutes; the quarters of real time (the repeated hour is an hour:
	 * 00:30 .. 01:30Z, five); the wall clock's 02:30 once, the first time */
	json_t *every = get_ok("sc-race", "every-minute"), *quarter = get_ok("sc-race", "quarter"),
	       *wall = get_ok("sc-race", "wall");
	assert_string_equal(str(every, "next_fire_at"), "2026-10-25T01:31:00.000Z");
	assert_string_equal(str(wall, "last_fire_at"), "2026-10-25T00:30:00.000Z");
	assert_string_equal(str(wall, "next_fire_at"), "2026-10-26T01:30:00.000Z");
	assert_int_equal(json_array_size(json_object_get(every, "fires")), 20); /* shown */
	assert_int_equal(json_array_size(json_object_get(quarter, "fires")), 5);
	assert_int_equal(json_array_size(json_object_get(wall, "fires")), 1);
	json_decref(every);
	json_decref(quarter);
	json_decref(wall);
	int runs = count_runs("sc-race");
	assert_int_equal(runs, 70 + 5 + 1);
	assert_int_equal(count_audit("sc-race", "schedule.fired"), 76);
	assert_int_equal(count_audit("sc-race", "schedule.skipped"), 0);
	assert_int_equal(count_audit("sc-race", "run.queued"), 76);
}

/* One pass at a simulated time; the runs it started. */
static int pass_at(const char *at)
{
	int fired = -1;
	aw_error err = {0};
	assert_int_equal(aw_schedule_fire_due(S, ts(at), &fired, &err), AW_OK);
	return fired;
}

static void test_catch_up_skip(void **state)
{
	sim_at("2026-06-01T10:20:00.000Z");
	json_decref(
		create_ok("sc-skip", "{\"name\":\"h\",\"cron\":\"0 * * * *\",\"run\":" NOOP "}"));
	reset_clock(state);
	/* down from 10:20 to 15:20: 11:00 .. 15:00 missed, none fired */
	assert_int_equal(pass_at("2026-06-01T15:20:10.000Z"), 0);
	json_t *o = get_ok("sc-skip", "h");
	assert_string_equal(str(o, "next_fire_at"), "2026-06-01T16:00:00.000Z");
	assert_int_equal(json_array_size(json_object_get(o, "fires")), 0);
	json_decref(o);
	aw_audit_row *rows = NULL;
	int n = 0;
	aw_test_audit_rows("sc-skip", "schedule.skipped", 10, &rows, &n);
	assert_int_equal(n, 1);
	json_t *p = json_loads(rows[0].payload, 0, NULL);
	assert_int_equal(json_integer_value(json_object_get(p, "missed")), 5);
	assert_string_equal(str(p, "first_missed"), "2026-06-01T11:00:00.000Z");
	assert_string_equal(str(p, "last_missed"), "2026-06-01T15:00:00.000Z");
	json_decref(p);
	aw_audit_rows_free(rows, n);
	/* then on time: fired */
	assert_int_equal(pass_at("2026-06-01T16:00:00.500Z"), 1);
	assert_int_equal(pass_at("2026-06-01T16:00:01.000Z"), 0); /* once */
	/* down again until 20 s after 20:00: 17:00 .. 19:00 missed, 20:00 on time */
	assert_int_equal(pass_at("2026-06-01T20:00:20.000Z"), 1);
	o = get_ok("sc-skip", "h");
	json_t *fires = json_object_get(o, "fires");
	assert_int_equal(json_array_size(fires), 2);
	assert_string_equal(str(json_array_get(fires, 0), "tick"), "2026-06-01T20:00:00.000Z");
	assert_false(json_is_true(json_object_get(json_array_get(fires, 0), "catch_up")));
	assert_string_equal(str(o, "last_fire_at"), "2026-06-01T20:00:00.000Z");
	assert_string_equal(str(o, "next_fire_at"), "2026-06-01T21:00:00.000Z");
	assert_string_equal(str(o, "last_run_id"), str(json_array_get(fires, 0), "run_id"));
	json_decref(o);
	assert_int_equal(count_runs("sc-skip"), 2);
	assert_int_equal(count_audit("sc-skip", "schedule.skipped"), 2);
}

static void test_catch_up_once(void **state)
{
	sim_at("2026-06-01T10:20:00.000Z");
	json_decref(create_ok("sc-once", "{\"name\":\"h\",\"cron\":\"0 * * * *\","
					 "\"catch_up\":\"once\",\"run\":" NOOP "}"));
	reset_clock(state);
	/* down from 10:20 to 15:20: one run for the five missed ticks */
	assert_int_equal(pass_at("2026-06-01T15:20:10.000Z"), 1);
	assert_int_equal(pass_at("2026-06-01T15:20:11.000Z"), 0);
	json_t *o = get_ok("sc-once", "h");
	json_t *f = json_array_get(json_object_get(o, "fires"), 0);
	assert_string_equal(str(f, "tick"), "2026-06-01T11:00:00.000Z");
	assert_true(json_is_true(json_object_get(f, "catch_up")));
	assert_int_equal(json_integer_value(json_object_get(f, "missed")), 5);
	assert_string_equal(str(o, "next_fire_at"), "2026-06-01T16:00:00.000Z");
	json_decref(o);
	/* resumes on time */
	assert_int_equal(pass_at("2026-06-01T16:00:00.200Z"), 1);
	/* down until 20 s after 20:00: a catch-up for 17:00-19:00, and 20:00 */
	assert_int_equal(pass_at("2026-06-01T20:00:20.000Z"), 2);
	o = get_ok("sc-once", "h");
	json_t *fires = json_object_get(o, "fires");
	assert_int_equal(json_array_size(fires), 4);
	assert_string_equal(str(json_array_get(fires, 0), "tick"), "2026-06-01T20:00:00.000Z");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(fires, 0), "missed")),
			 0);
	assert_string_equal(str(json_array_get(fires, 1), "tick"), "2026-06-01T17:00:00.000Z");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(fires, 1), "missed")),
			 3);
	assert_string_equal(str(o, "next_fire_at"), "2026-06-01T21:00:00.000Z");
	json_decref(o);
	assert_int_equal(count_runs("sc-once"), 4);
	assert_int_equal(count_audit("sc-once", "schedule.skipped"), 0);
	assert_int_equal(count_audit("sc-once", "schedule.fired"), 4);
	/* the scheduled runs are ordinary runs of the project, with the template's
	 * settings */
	aw_ctx c;
	as(&c, "sc-once");
	aw_run *runs = NULL;
	int n = 0;
	aw_error err = {0};
	assert_int_equal(aw_run_list(S, &c, NULL, NULL, 10, &runs, &n, &err), AW_OK);
	assert_int_equal(n, 4);
	assert_string_equal(runs[0].state, "queued");
	assert_string_equal(runs[0].project_id, "sc-once");
	aw_runs_free(runs, n);
}

static void test_dst_and_isolation(void **state)
{
	sim_at("2026-03-28T12:00:00.000Z");
	json_t *o = create_ok("sc-dst", "{\"name\":\"night\",\"cron\":\"30 2 * * *\","
					"\"timezone\":\"Europe/Berlin\",\"run\":" NOOP "}");
	/* 02:30 does not exist on 29 March in Berlin: at the jump, 03:00 CEST */
	assert_string_equal(str(o, "next_fire_at"), "2026-03-29T01:00:00.000Z");
	json_decref(o);
	reset_clock(state);
	assert_int_equal(pass_at("2026-03-29T00:59:59.000Z"), 0);
	assert_int_equal(pass_at("2026-03-29T01:00:02.000Z"), 1);
	o = get_ok("sc-dst", "night");
	assert_string_equal(str(o, "next_fire_at"), "2026-03-30T00:30:00.000Z");
	json_decref(o);
	/* the run is the project's own: nobody else's list has it */
	assert_int_equal(count_runs("sc-dst"), 1);
	assert_int_equal(count_runs("sc-other"), 0);
}

static void test_failures_pass_their_tick(void **state)
{
	sim_at("2026-06-01T10:20:00.000Z");
	json_decref(create_ok("sc-fail", "{\"name\":\"broken\",\"cron\":\"*/10 * * * *\","
					 "\"run\":" NOOP "}"));
	json_decref(create_ok("sc-fail", "{\"name\":\"zone\",\"cron\":\"*/10 * * * *\","
					 "\"timezone\":\"Europe/Paris\",\"run\":" NOOP "}"));
	reset_clock(state);
	/* someone with the database in hand breaks both */
	aw_test_raw_sql(&aw_fx.db,
			aw_fx.db.pg ? "UPDATE %Tschedules SET run = '{\"workflow\": []}'::jsonb"
				      " WHERE name = 'broken'"
				    : "UPDATE %Tschedules SET run = '{\"workflow\": []}'"
				      " WHERE name = 'broken'");
	aw_test_raw_sql(&aw_fx.db,
			"UPDATE %Tschedules SET timezone = 'Nowhere/Zone' WHERE name = 'zone'");
	assert_int_equal(pass_at("2026-06-01T10:30:01.000Z"), 0);
	json_t *b = get_ok("sc-fail", "broken"), *z = get_ok("sc-fail", "zone");
	assert_string_equal(str(b, "last_error"), "E-RUN-003");
	assert_string_equal(str(b, "next_fire_at"), "2026-06-01T10:40:00.000Z");
	assert_string_equal(str(z, "last_error"), "E-CRON-002");
	assert_string_equal(str(z, "next_fire_at"), "2026-06-01T10:31:01.000Z");
	json_decref(b);
	json_decref(z);
	/* the next pass does not try the broken one again before its tick */
	assert_int_equal(pass_at("2026-06-01T10:30:02.000Z"), 0);
	assert_int_equal(count_audit("sc-fail", "schedule.failed"), 1);
	/* mended, it goes on and clears its error */
	aw_test_raw_sql(&aw_fx.db, "UPDATE %Tschedules SET timezone = 'UTC' WHERE name = 'zone'");
	assert_int_equal(pass_at("2026-06-01T10:31:02.000Z"), 0); /* 10:31 is no tick */
	z = get_ok("sc-fail", "zone");
	assert_string_equal(str(z, "last_error"), "");
	assert_string_equal(str(z, "next_fire_at"), "2026-06-01T10:40:00.000Z");
	json_decref(z);
	assert_int_equal(pass_at("2026-06-01T10:40:00.100Z"), 1);
	assert_int_equal(count_runs("sc-fail"), 1);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_requests, reset_clock),
		cmocka_unit_test_teardown(test_three_workers_one_run_per_tick, reset_clock),
		cmocka_unit_test_teardown(test_catch_up_skip, reset_clock),
		cmocka_unit_test_teardown(test_catch_up_once, reset_clock),
		cmocka_unit_test_teardown(test_dst_and_isolation, reset_clock),
		cmocka_unit_test_teardown(test_failures_pass_their_tick, reset_clock),
	};
	return AW_TEST_MAIN("schedule", tests, setup, teardown);
}
