/*
 * schedule.c - the schedule service (schedule.h): requests, create / list /
 * get / delete, and the scheduler's pass that fires due schedules.
 *
 * Firing one schedule is one transaction of its project:
 *   lock the row (FOR UPDATE SKIP LOCKED: another worker firing it wins and
 *   this one passes) -> its next_fire_at still due? -> the ticks due by now,
 *   split into missed (older than the grace) and on time -> a catch-up run
 *   (policy "once") and a run per on-time tick, each submitted in the same
 *   transaction with the key schedule:<id>:<tick> and recorded in
 *   schedule_fires (primary key: one run per tick) -> next_fire_at moved to
 *   the first tick after now by compare-and-set on the value read ->
 *   commit. Whatever fails rolls all of it back, so a tick is never half
 *   fired; the next pass tries again.
 * The cron expression and the zone were checked when the schedule was
 * written; the template is decoded again at each firing (executors are this
 * process's), and one that no longer decodes passes its tick with the code
 * in last_error rather than stopping the schedule or retrying forever.
 */
#include "awooop/schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/audit.h"
#include "awooop/clock.h"
#include "awooop/cron.h"
#include "awooop/crypto.h"
#include "awooop/ident.h"
#include "awooop/json.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/run.h"
#include "awooop/str.h"
#include "awooop/worker.h"
#include "awooop/tz.h"
#include "awooop/uuid.h"

#define DUE_BATCH 100
#define ONTIME_MAX 8 /* on-time ticks fired in one pass (a minute holds one) */

void aw_schedule_request_free(aw_schedule_request *r)
{
	json_decref(r->run);
	r->run = NULL;
}

/* The template's own errors, their pointers under /run. */
static aw_err run_error(aw_error *err, aw_err e, const aw_error *inner)
{
	char where[sizeof inner->where];
	if (snprintf(where, sizeof where, "/run%s", inner->where) >= (int)sizeof where)
		snprintf(where, sizeof where, "/run");
	return aw_fail_at(err, e, where, "run: %s", inner->msg);
}

/* The template as a run request (its decoder's checks) into *req when
 * req is not NULL. */
static aw_err template_decode(const char *text, aw_run_request *req, aw_error *err)
{
	aw_run_request tmp;
	aw_error inner = {0};
	aw_err e = aw_run_request_decode(text, strlen(text), req ? req : &tmp, &inner);
	if (e)
		return run_error(err, e, &inner);
	if ((req ? req : &tmp)->run_at[0]) {
		aw_run_request_free(req ? req : &tmp);
		return aw_fail_at(err, AW_E_REQ_INVALID, "/run/run_at",
				  "a schedule's run has no run_at: its ticks say when");
	}
	if (!req)
		aw_run_request_free(&tmp);
	return AW_OK;
}

aw_err aw_schedule_request_decode(const char *body, size_t len, aw_schedule_request *out,
				  aw_error *err)
{
	static const char *const allowed[] = {"name", "cron", "timezone", "catch_up", "run", NULL};
	memset(out, 0, sizeof *out);
	json_t *o = NULL;
	const char *name = NULL, *cron = NULL, *tzn = NULL, *cu = NULL;
	aw_err e = aw_json_parse_object(body, len, &o, err);
	if (!e && !(e = aw_json_only(o, allowed, err)) &&
	    !(e = aw_json_str(o, "name", 1, &name, err)) &&
	    !(e = aw_json_str(o, "cron", 1, &cron, err)) &&
	    !(e = aw_json_str(o, "timezone", 0, &tzn, err)))
		e = aw_json_str(o, "catch_up", 0, &cu, err);
	if (e)
		goto out;
	if (!aw_ident_name_ok(name)) {
		e = aw_fail_at(err, AW_E_REQ_INVALID, "/name",
			       "a schedule name is 1..63 of [A-Za-z0-9._-], beginning with a "
			       "letter or digit");
		goto out;
	}
	aw_cron c;
	aw_error ce = {0};
	if ((e = aw_cron_parse(cron, &c, &ce))) {
		e = aw_fail_at(err, e, "/cron", "%s", ce.msg);
		goto out;
	}
	tzn = tzn ? tzn : "UTC";
	aw_tz *tz = NULL;
	if ((e = aw_tz_load(tzn, &tz, &ce))) {
		e = aw_fail_at(err, e, "/timezone", "%s", ce.msg);
		goto out;
	}
	int64_t first = 0;
	int never = aw_cron_next(&c, tz, aw_clock_wall_ms(), &first) != 0;
	aw_tz_free(tz);
	if (never) {
		e = aw_fail_at(err, AW_E_CRON, "/cron", "the expression never fires again");
		goto out;
	}
	cu = cu ? cu : "skip";
	if (strcmp(cu, "skip") != 0 && strcmp(cu, "once") != 0) {
		e = aw_fail_at(err, AW_E_REQ_INVALID, "/catch_up",
			       "catch_up is skip (only the next tick after downtime) or once (one "
			       "run for the ticks missed)");
		goto out;
	}
	json_t *run = json_object_get(o, "run");
	if (!json_is_object(run)) {
		e = aw_fail_at(err, AW_E_REQ_INVALID, "/run",
			       "run is the run request to start at each tick (an object)");
		goto out;
	}
	char *text = aw_json_dump(run);
	if (!text) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
		goto out;
	}
	if (strlen(text) > AW_SCHEDULE_RUN_MAX)
		e = aw_fail_at(err, AW_E_LIMIT, "/run", "a schedule's run is at most %d bytes",
			       AW_SCHEDULE_RUN_MAX);
	if (!e)
		e = template_decode(text, NULL, err);
	free(text);
	if (e)
		goto out;
	/* each bounded above (name, cron, time zone and catch_up checks) */
	if (AW_STR_COPY(out->name, name) < 0 || AW_STR_COPY(out->cron, cron) < 0 ||
	    AW_STR_COPY(out->timezone, tzn) < 0 || AW_STR_COPY(out->catch_up, cu) < 0) {
		e = aw_fail(err, AW_E_REQ_INVALID, "a schedule field is too long");
		goto out;
	}
	out->run = json_incref(run);
out:
	json_decref(o);
	return e;
}

static json_t *ts_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

/* A schedule as the API shows it; NULL: out of memory. */
static json_t *schedule_json(const aw_schedule_row *r, const aw_schedule_fire *f, int nf)
{
	json_error_t je;
	json_t *run = json_loads(r->run ? r->run : "{}", 0, &je);
	json_t *o = json_pack(
		"{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:s, s:s, "
		"s:s}",
		"schedule_id", r->schedule_id, "project", r->project_id, "name", r->name, "cron",
		r->cron, "timezone", r->timezone, "catch_up", r->catch_up, "run",
		run ? run : json_null(), "next_fire_at", ts_or_null(r->next_fire_at),
		"last_fire_at", ts_or_null(r->last_fire_at), "last_run_id",
		ts_or_null(r->last_run_id), "last_error", ts_or_null(r->last_error), "created_at",
		r->created_at, "created_by", r->created_by, "updated_at", r->updated_at);
	if (o && f) {
		json_t *a = json_array();
		for (int i = 0; a && i < nf; i++)
			json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:i, s:s}", "tick",
							   f[i].tick_at, "run_id", f[i].run_id,
							   "catch_up", f[i].missed > 0, "missed",
							   f[i].missed, "fired_at", f[i].fired_at));
		json_object_set_new(o, "fires", a ? a : json_null());
	}
	return o;
}

/* The first tick after after_ms ("" when none) of r's expression. */
static aw_err next_tick(const char *cron, const char *zone, int64_t after_ms, char *out,
			aw_error *err)
{
	aw_cron c;
	aw_tz *tz = NULL;
	aw_err e = aw_cron_parse(cron, &c, err);
	if (!e)
		e = aw_tz_load(zone, &tz, err);
	int64_t t;
	out[0] = '\0';
	if (!e && aw_cron_next(&c, tz, after_ms, &t) == 0)
		aw_clock_format(t, out);
	aw_tz_free(tz);
	return e;
}

aw_err aw_schedule_create(aw_store *s, const aw_ctx *ctx, const aw_schedule_request *req,
			  json_t **out, aw_error *err)
{
	*out = NULL;
	aw_schedule_row row;
	memset(&row, 0, sizeof row);
	aw_uuid7_str(row.schedule_id);
	AW_COPY_ARRAY(row.project_id, ctx->project);
	AW_COPY_ARRAY(row.name, req->name);
	AW_COPY_ARRAY(row.cron, req->cron);
	AW_COPY_ARRAY(row.timezone, req->timezone);
	AW_COPY_ARRAY(row.catch_up, req->catch_up);
	AW_COPY_ARRAY(row.created_by, ctx->principal);
	int64_t now = aw_clock_wall_ms();
	aw_clock_format(now, row.created_at);
	AW_COPY_ARRAY(row.updated_at, row.created_at);
	aw_err e = next_tick(req->cron, req->timezone, now, row.next_fire_at, err);
	if (e)
		return e;
	if (!(row.run = aw_json_dump(req->run)))
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	aw_run_request rr;
	if ((e = template_decode(row.run, &rr, err))) {
		free(row.run);
		return e;
	}
	aw_txn *t = NULL;
	int n = 0, declared = 1;
	if (!(e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err)))
		e = aw_store_schedule_count(t, &n, err);
	if (!e && n >= AW_SCHEDULES_MAX)
		e = aw_fail_at(err, AW_E_LIMIT, "/name", "a project has at most %d schedules",
			       AW_SCHEDULES_MAX);
	if (!e && strcmp(rr.queue, "default") != 0 &&
	    !(e = aw_store_queue_get(t, rr.queue, &declared, NULL, err)) && !declared)
		e = aw_fail_at(err, AW_E_REQ_INVALID, "/run/queue",
			       "no queue %s in this project: declare it with PUT"
			       " /v1/projects/{project}/queues/{name}",
			       rr.queue);
	aw_run_request_free(&rr);
	if (!e) {
		e = aw_store_schedule_insert(t, &row, err);
		if (e == AW_E_STORE_CONFLICT)
			e = aw_fail_at(err, AW_E_SCHEDULE_EXISTS, "/name",
				       "the project has a schedule named %s", row.name);
	}
	if (!e) {
		json_t *p = json_pack("{s:s, s:s, s:s, s:s, s:o}", "name", row.name, "cron",
				      row.cron, "timezone", row.timezone, "catch_up", row.catch_up,
				      "next_fire_at", ts_or_null(row.next_fire_at));
		e = p ? aw_audit_record(t, ctx, "schedule.created", row.schedule_id, p, err)
		      : aw_fail(err, AW_E_NOMEM, "out of memory");
		json_decref(p);
	}
	if (!e && !(*out = schedule_json(&row, NULL, 0)))
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	if (!e)
		e = aw_store_commit(t, err);
	else if (t)
		aw_store_rollback(t);
	if (e) {
		json_decref(*out);
		*out = NULL;
	}
	free(row.run);
	return e;
}

aw_err aw_schedule_list(aw_store *s, const aw_ctx *ctx, json_t **out, aw_error *err)
{
	*out = NULL;
	aw_txn *t = NULL;
	aw_schedule_row *rows = NULL;
	int n = 0;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err);
	if (e)
		return e;
	e = aw_store_schedule_list(t, &rows, &n, err);
	aw_store_rollback(t);
	json_t *items = e ? NULL : json_array();
	for (int i = 0; items && i < n; i++)
		if (json_array_append_new(items, schedule_json(&rows[i], NULL, 0))) {
			json_decref(items);
			items = NULL;
		}
	aw_schedule_rows_free(rows, n);
	if (e)
		return e;
	if (!items || !(*out = json_pack("{s:o}", "items", items)))
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	return AW_OK;
}

static aw_err not_found(aw_error *err, const char *name)
{
	return aw_fail(err, AW_E_SCHEDULE_NOT_FOUND, "no schedule named %.63s in this project",
		       name);
}

aw_err aw_schedule_get(aw_store *s, const aw_ctx *ctx, const char *name, json_t **out,
		       aw_error *err)
{
	*out = NULL;
	if (!aw_ident_name_ok(name))
		return not_found(err, "(that name)");
	aw_txn *t = NULL;
	aw_schedule_row row;
	aw_schedule_fire *f = NULL;
	int found = 0, nf = 0;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err);
	if (e)
		return e;
	e = aw_store_schedule_get(t, name, 0, 0, &row, &found, err);
	if (!e && !found)
		e = not_found(err, name);
	if (!e)
		e = aw_store_schedule_fires(t, row.schedule_id, AW_SCHEDULE_FIRES_SHOWN, &f, &nf,
					    err);
	aw_store_rollback(t);
	if (!e && !(*out = schedule_json(&row, f, nf)))
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	free(row.run);
	free(f);
	return e;
}

aw_err aw_schedule_delete(aw_store *s, const aw_ctx *ctx, const char *name, aw_error *err)
{
	if (!aw_ident_name_ok(name))
		return not_found(err, "(that name)");
	aw_txn *t = NULL;
	aw_schedule_row row;
	int found = 0;
	aw_err e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err);
	if (e)
		return e;
	/* a firing in flight holds the row: the delete waits for it */
	e = aw_store_schedule_get(t, name, 0, 0, &row, &found, err);
	if (!e && !found)
		e = not_found(err, name);
	if (!e)
		e = aw_store_schedule_delete(t, name, &found, err);
	if (!e) {
		json_t *p = json_pack("{s:s, s:s, s:s}", "name", row.name, "cron", row.cron,
				      "timezone", row.timezone);
		e = p ? aw_audit_record(t, ctx, "schedule.deleted", row.schedule_id, p, err)
		      : aw_fail(err, AW_E_NOMEM, "out of memory");
		json_decref(p);
	}
	free(row.run);
	if (e) {
		aw_store_rollback(t);
		return e;
	}
	return aw_store_commit(t, err);
}

aw_err aw_schedule_preview(const char *cron, const char *zone, int64_t after_ms, int n,
			   int64_t *ticks, int *got, aw_error *err)
{
	*got = 0;
	aw_cron c;
	aw_tz *tz = NULL;
	aw_err e = aw_cron_parse(cron, &c, err);
	if (!e)
		e = aw_tz_load(zone, &tz, err);
	for (int i = 0; !e && i < n; i++) {
		if (aw_cron_next(&c, tz, after_ms, &ticks[i]) != 0)
			break;
		after_ms = ticks[i];
		(*got)++;
	}
	aw_tz_free(tz);
	return e;
}

/* ---- firing ---- */

typedef struct {
	aw_txn *t;
	const aw_ctx *ctx;
	const aw_schedule_row *row;
	const aw_run_request *req;
	int64_t now;
	char last_tick[AW_TS_LEN + 1], last_run[AW_UUID_STR_LEN + 1];
	int fired;
} firing;

/* Starts the run of tick (missed > 0: a catch-up standing for that many)
 * and records it. */
static aw_err fire_tick(firing *f, int64_t tick, int missed, aw_error *err)
{
	char at[AW_TS_LEN + 1], key[128], now[AW_TS_LEN + 1];
	aw_clock_format(tick, at);
	aw_clock_format(f->now, now);
	snprintf(key, sizeof key, "schedule:%s:%s", f->row->schedule_id, at);
	aw_run run;
	int replayed = 0;
	aw_err e = aw_run_submit_in(f->t, f->ctx, f->req, key, f->now, &run, &replayed, err);
	if (e)
		return e;
	if (!replayed) { /* a replay: that tick has its run already */
		aw_schedule_fire rec = {.missed = missed};
		AW_COPY_ARRAY(rec.tick_at, at);
		AW_COPY_ARRAY(rec.run_id, run.run_id);
		AW_COPY_ARRAY(rec.fired_at, now);
		e = aw_store_schedule_fire_put(f->t, f->row->schedule_id, &rec, err);
	}
	if (!e && !replayed) {
		json_t *p =
			json_pack("{s:s, s:s, s:s, s:b, s:i}", "name", f->row->name, "tick", at,
				  "run_id", run.run_id, "catch_up", missed > 0, "missed", missed);
		e = p ? aw_audit_record(f->t, f->ctx, "schedule.fired", f->row->schedule_id, p, err)
		      : aw_fail(err, AW_E_NOMEM, "out of memory");
		json_decref(p);
		f->fired++;
	}
	AW_COPY_ARRAY(f->last_tick, at);
	AW_COPY_ARRAY(f->last_run, run.run_id);
	aw_run_free(&run);
	return e;
}

/* The ticks due by now of the locked row (next_fire_at due: a tick, or
 * the time to try again after a zone that did not load), fired by its
 * policy. *next: the first tick after now ("" none). */
static aw_err fire_ticks(firing *f, const aw_cron *c, const aw_tz *tz, int64_t due, char *next,
			 aw_error *err)
{
	int64_t grace = f->now - AW_SCHEDULE_GRACE_MS, first = 0, t, u = 0;
	next[0] = '\0';
	if (aw_cron_next(c, tz, due - 1, &first) != 0)
		return AW_OK; /* it never ticks again */
	int missed = 0;
	if (first <= grace) { /* the ticks in [first, now - grace]: missed */
		t = first;
		missed = 1;
		while (missed < AW_SCHEDULE_MISSED_MAX && aw_cron_next(c, tz, t, &u) == 0 &&
		       u <= grace) {
			t = u;
			missed++;
		}
	}
	aw_err e = AW_OK;
	if (missed && strcmp(f->row->catch_up, "once") == 0) {
		e = fire_tick(f, first, missed, err);
	} else if (missed) {
		char a[AW_TS_LEN + 1], b[AW_TS_LEN + 1];
		aw_clock_format(first, a);
		aw_clock_format(t, b);
		/* capped: "missed" is a lower bound, "last_missed" the last counted */
		json_t *p = json_pack("{s:s, s:s, s:s, s:i, s:b}", "name", f->row->name,
				      "first_missed", a, "last_missed", b, "missed", missed,
				      "capped", missed >= AW_SCHEDULE_MISSED_MAX);
		e = p ? aw_audit_record(f->t, f->ctx, "schedule.skipped", f->row->schedule_id, p,
					err)
		      : aw_fail(err, AW_E_NOMEM, "out of memory");
		json_decref(p);
	}
	/* the ticks in (now - grace, now]: on time */
	int have = first > grace || aw_cron_next(c, tz, grace, &u) == 0;
	if (first > grace)
		u = first;
	for (int k = 0; !e && have && u <= f->now && k < ONTIME_MAX; k++) {
		e = fire_tick(f, u, 0, err);
		have = aw_cron_next(c, tz, u, &u) == 0;
	}
	if (!e && aw_cron_next(c, tz, f->now, &u) == 0)
		aw_clock_format(u, next);
	return e;
}

/* Fires one due schedule in a transaction of its project; *fired += runs. */
static aw_err fire_one(aw_store *s, const aw_schedule_due *d, int64_t now_ms, int *fired,
		       aw_error *err)
{
	aw_ctx ctx;
	aw_ctx_system(&ctx, d->project_id);
	snprintf(ctx.principal, sizeof ctx.principal, "scheduler");
	aw_txn *t = NULL;
	aw_schedule_row row;
	memset(&row, 0, sizeof row);
	int found = 0, moved = 0;
	int64_t due = 0;
	aw_err e = aw_store_begin(s, &ctx, AW_TXN_WRITE, &t, err);
	if (e)
		return e;
	e = aw_store_schedule_get(t, d->schedule_id, 1, 1, &row, &found, err);
	/* gone, held by another worker's firing, or fired already */
	if (e || !found || !row.next_fire_at[0] || aw_clock_parse(row.next_fire_at, &due) ||
	    due > now_ms) {
		if (!e)
			aw_metrics_run_event("schedule_raced", 1);
		aw_store_rollback(t);
		free(row.run);
		return e;
	}
	firing f = {.t = t, .ctx = &ctx, .row = &row, .now = now_ms};
	char next[AW_TS_LEN + 1] = "", now[AW_TS_LEN + 1];
	aw_clock_format(now_ms, now);
	const char *code = "";
	aw_cron c;
	aw_tz *tz = NULL;
	aw_run_request req;
	memset(&req, 0, sizeof req);
	aw_error ie = {0};
	if (aw_cron_parse(row.cron, &c, &ie) || aw_tz_load(row.timezone, &tz, &ie)) {
		/* written checked: the zone database changed under it; again in a
		 * minute, said once a minute */
		code = aw_err_code(ie.err);
		aw_clock_format(now_ms + 60000, next);
		aw_log(AW_LOG_WARN, NULL, "schedule: its zone or expression does not load",
		       "project", row.project_id, "schedule", row.schedule_id, "detail", ie.msg,
		       NULL);
	} else if (template_decode(row.run, &req, &ie)) {
		/* the template no longer decodes here: this tick passes */
		code = aw_err_code(ie.err);
		int64_t u;
		if (aw_cron_next(&c, tz, now_ms, &u) == 0)
			aw_clock_format(u, next);
		json_t *p = json_pack("{s:s, s:s, s:s, s:s}", "name", row.name, "tick",
				      row.next_fire_at, "code", code, "pointer", ie.where);
		e = p ? aw_audit_record(t, &ctx, "schedule.failed", row.schedule_id, p, err)
		      : aw_fail(err, AW_E_NOMEM, "out of memory");
		json_decref(p);
	} else {
		f.req = &req;
		e = fire_ticks(&f, &c, tz, due, next, err);
	}
	aw_tz_free(tz);
	aw_run_request_free(&req);
	if (!e)
		e = aw_store_schedule_advance(t, row.schedule_id, row.next_fire_at, next,
					      f.last_tick, f.last_run, code, now, &moved, err);
	free(row.run);
	if (e || !moved) { /* moved by another worker meanwhile: its firing stands */
		if (!e)
			aw_metrics_run_event("schedule_raced", 1);
		aw_store_rollback(t);
		return e;
	}
	if ((e = aw_store_commit(t, err)))
		return e;
	*fired += f.fired;
	return AW_OK;
}

/* A store that is busy or away: the next pass tries again. Any other
 * failure would fail every pass the same way. */
static int transient(aw_err e)
{
	return e == AW_E_STORE_BUSY || e == AW_E_STORE_UNAVAILABLE || e == AW_E_STORE_CONFLICT ||
	       e == AW_E_STORE_PROJECT || e == AW_E_NOMEM;
}

/* A schedule whose firing fails for good: its tick passes, the code in
 * last_error and the audit trail (schedule.failed), and it goes on at the
 * next tick - never retried every pass. */
static void pass_tick(aw_store *s, const aw_schedule_due *d, int64_t now_ms, const aw_error *why)
{
	aw_ctx ctx;
	aw_ctx_system(&ctx, d->project_id);
	snprintf(ctx.principal, sizeof ctx.principal, "scheduler");
	aw_txn *t = NULL;
	aw_schedule_row row;
	memset(&row, 0, sizeof row);
	int found = 0, moved = 0;
	char next[AW_TS_LEN + 1] = "", now[AW_TS_LEN + 1];
	aw_clock_format(now_ms, now);
	aw_error err = {0};
	aw_err e = aw_store_begin(s, &ctx, AW_TXN_WRITE, &t, &err);
	if (!e)
		e = aw_store_schedule_get(t, d->schedule_id, 1, 1, &row, &found, &err);
	if (!e && found && strcmp(row.next_fire_at, d->next_fire_at) == 0) {
		aw_error ne = {0};
		if (next_tick(row.cron, row.timezone, now_ms, next, &ne))
			aw_clock_format(now_ms + 60000, next);
		json_t *p = json_pack("{s:s, s:s, s:s, s:s}", "name", row.name, "tick",
				      row.next_fire_at, "code", aw_err_code(why->err), "pointer",
				      why->where);
		e = p ? aw_audit_record(t, &ctx, "schedule.failed", row.schedule_id, p, &err)
		      : AW_E_NOMEM;
		json_decref(p);
		if (!e)
			e = aw_store_schedule_advance(t, row.schedule_id, row.next_fire_at, next,
						      "", "", aw_err_code(why->err), now, &moved,
						      &err);
	}
	free(row.run);
	if (t && (e || !moved))
		aw_store_rollback(t);
	else if (t)
		aw_store_commit(t, &err);
}

aw_err aw_schedule_fire_due(aw_store *s, int64_t now_ms, int *fired, aw_error *err)
{
	int dummy = 0;
	fired = fired ? fired : &dummy;
	*fired = 0;
	char now[AW_TS_LEN + 1];
	aw_clock_format(now_ms, now);
	for (int round = 0; round < 10; round++) {
		aw_schedule_due *due = NULL;
		int n = 0;
		aw_err e = aw_store_schedules_due(s, now, DUE_BATCH, &due, &n, err);
		if (e)
			return e;
		/* start at a different place in each process: racing workers
		 * spread over the list instead of queueing on its head */
		uint32_t r = 0;
		aw_random_bytes(&r, sizeof r);
		int start = n ? (int)(r % (uint32_t)n) : 0, before = *fired;
		for (int i = 0; i < n; i++) {
			const aw_schedule_due *d = &due[(start + i) % n];
			aw_error fe = {0};
			aw_err x = fire_one(s, d, now_ms, fired, &fe);
			if (!x)
				continue;
			aw_log(AW_LOG_WARN, NULL,
			       transient(x) ? "schedule: firing failed (tried again)"
					    : "schedule: firing failed (its tick passes)",
			       "project", d->project_id, "schedule", d->schedule_id, "code",
			       aw_err_code(x), "detail", fe.msg, NULL);
			if (!transient(x))
				pass_tick(s, d, now_ms, &fe);
		}
		free(due);
		if (*fired > before)
			aw_metrics_run_event("scheduled", (double)(*fired - before));
		if (n < DUE_BATCH)
			break;
	}
	if (*fired)
		aw_run_kick();
	return AW_OK;
}
