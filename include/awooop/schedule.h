/*
 * schedule.h - runs started on a cron schedule.
 *
 * A schedule is a project's run template (a run request, as POST
 * /v1/platform/runs takes it) with a 5-field cron expression (cron.h), an
 * IANA time zone (tz.h) and a catch-up policy. Every run worker looks for
 * due schedules (aw_worker_opts.schedule_ms) and fires each in one store
 * transaction of its project: the schedule's row locked, the run submitted
 * with the idempotency key "schedule:<schedule id>:<tick>", the tick
 * recorded, next_fire_at moved on by compare-and-set; so however many
 * worker processes race, a tick starts one run.
 *
 * Ticks: a tick is on time while less than AW_SCHEDULE_GRACE_MS has passed
 * since it; older ones were missed (every worker was down, or the store).
 * catch_up "skip" drops the missed ticks (audited, schedule.skipped) and
 * fires only on-time ones; "once" fires one catch-up run for all of them
 * (the first missed tick's, its fire saying how many it stands for), then
 * goes on as usual. Either way the schedule resumes at the first tick
 * after now.
 *
 * Every change is audited in the project's chain: schedule.created,
 * schedule.deleted, schedule.fired (target: the schedule id; the tick, the
 * run, missed), schedule.skipped, schedule.failed (a template that no
 * longer decodes: the tick is passed over, its code in last_error).
 */
#ifndef AWOOOP_SCHEDULE_H
#define AWOOOP_SCHEDULE_H

#include <jansson.h>
#include <stdint.h>

#include "awooop/ctx.h"
#include "awooop/err.h"
#include "awooop/store.h"
#include "awooop/store/schedule.h"

#define AW_SCHEDULES_MAX 100		 /* a project's schedules */
#define AW_SCHEDULE_GRACE_MS 60000	 /* a tick this late is still on time */
#define AW_SCHEDULE_RUN_MAX (256 * 1024) /* bytes of a template (compact JSON) */
#define AW_SCHEDULE_MISSED_MAX 10000	 /* missed ticks counted, at most */
#define AW_SCHEDULE_FIRES_SHOWN 20	 /* fires a schedule's view lists */

/* A POST /v1/projects/{p}/schedules body: {"name", "cron", "timezone"?
 * (default "UTC"), "catch_up"? ("skip" | "once", default "skip"), "run": a
 * run request without run_at}. */
typedef struct {
	char name[AW_SCHEDULE_NAME_MAX + 1];
	char cron[AW_SCHEDULE_CRON_MAX + 1];
	char timezone[AW_SCHEDULE_TZ_MAX + 1];
	char catch_up[8];
	json_t *run; /* owned */
} aw_schedule_request;

/* Strictly decodes a body: unknown members refused, name aw_ident_name_ok,
 * the cron expression (AW_E_CRON at /cron) and the zone (AW_E_CRON_ZONE at
 * /timezone) parsed and loaded, the template decoded as a run request
 * (its errors' pointers under /run). Reads the zone database; else pure
 * (fuzzed by fuzz/fuzz_schedule.c). */
aw_err aw_schedule_request_decode(const char *body, size_t len, aw_schedule_request *out,
				  aw_error *err);
void aw_schedule_request_free(aw_schedule_request *r);

/* Creates the schedule in ctx->project (its first tick: the first after
 * now); audited. AW_E_SCHEDULE_EXISTS for a name taken, AW_E_LIMIT past
 * AW_SCHEDULES_MAX, AW_E_REQ_INVALID (/run/queue) for an undeclared queue.
 * *out: the schedule as the API shows it (new reference). */
aw_err aw_schedule_create(aw_store *s, const aw_ctx *ctx, const aw_schedule_request *req,
			  json_t **out, aw_error *err);
/* {"items": [schedule, ...]} of ctx->project by name; new reference. */
aw_err aw_schedule_list(aw_store *s, const aw_ctx *ctx, json_t **out, aw_error *err);
/* The schedule named name with its newest fires ("fires"); new reference.
 * AW_E_SCHEDULE_NOT_FOUND. */
aw_err aw_schedule_get(aw_store *s, const aw_ctx *ctx, const char *name, json_t **out,
		       aw_error *err);
/* Deletes it (its runs stay); audited. AW_E_SCHEDULE_NOT_FOUND. */
aw_err aw_schedule_delete(aw_store *s, const aw_ctx *ctx, const char *name, aw_error *err);

/* One pass of the scheduler at now_ms (Unix ms; workers pass the wall
 * clock, tests a clock of their own): fires every schedule due by then, of
 * every project, each in its own transaction. *fired (may be NULL): the
 * runs started. A schedule another process is firing is passed over. */
aw_err aw_schedule_fire_due(aw_store *s, int64_t now_ms, int *fired, aw_error *err);

/* The first n ticks of expression cron in zone tz after after_ms into
 * ticks (Unix ms); *got how many there are (fewer: it stops). AW_E_CRON /
 * AW_E_CRON_ZONE as decode says. For `awooop schedule preview`. */
aw_err aw_schedule_preview(const char *cron, const char *tz, int64_t after_ms, int n,
			   int64_t *ticks, int *got, aw_error *err);

#endif
