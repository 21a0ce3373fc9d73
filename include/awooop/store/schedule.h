/*
 * store/schedule.h - schedules (a project's run templates started on a cron
 * schedule) and the ticks they fired.
 * Part of the store interface (store.h: open, migrate, transactions); only
 * the schedule service (src/run/schedule.c) includes it. Same conventions as
 * store.h: every call runs in the caller's transaction for its project;
 * arrays returned are malloc'd and freed with the *_free function named here.
 */
#ifndef AWOOOP_STORE_SCHEDULE_H
#define AWOOOP_STORE_SCHEDULE_H

#include "awooop/store.h"

#define AW_SCHEDULE_NAME_MAX 63
#define AW_SCHEDULE_CRON_MAX 256
#define AW_SCHEDULE_TZ_MAX 64

typedef struct {
	char schedule_id[AW_UUID_STR_LEN + 1];
	char project_id[AW_PROJECT_MAX + 1];
	char name[AW_SCHEDULE_NAME_MAX + 1];
	char cron[AW_SCHEDULE_CRON_MAX + 1];
	char timezone[AW_SCHEDULE_TZ_MAX + 1];
	char catch_up[8];		       /* skip | once */
	char *run;			       /* malloc'd JSON text: the run request */
	char next_fire_at[AW_TS_LEN + 1];      /* "" when it never fires again */
	char last_fire_at[AW_TS_LEN + 1];      /* "" before the first */
	char last_run_id[AW_UUID_STR_LEN + 1]; /* "" before the first */
	char last_error[32];		       /* a stable code, "" when none */
	char created_at[AW_TS_LEN + 1], updated_at[AW_TS_LEN + 1];
	char created_by[AW_PROJECT_MAX + 1];
} aw_schedule_row;

typedef struct {
	char tick_at[AW_TS_LEN + 1];
	char run_id[AW_UUID_STR_LEN + 1];
	int missed; /* > 0: a catch-up run standing for this many missed ticks */
	char fired_at[AW_TS_LEN + 1];
} aw_schedule_fire;

void aw_schedule_rows_free(aw_schedule_row *r, int n);

/* AW_E_STORE_CONFLICT when the project has a schedule of that name. */
aw_err aw_store_schedule_insert(aw_txn *t, const aw_schedule_row *r, aw_error *err);
/* How many schedules the txn's project has. */
aw_err aw_store_schedule_count(aw_txn *t, int *n, aw_error *err);
/* The schedule named name (or, by_id, with that id) into *out; *found 0
 * when there is none. lock: the row is locked until the txn ends, or
 * (PostgreSQL: FOR UPDATE SKIP LOCKED) reported absent (*found 0) while
 * another transaction holds it. */
aw_err aw_store_schedule_get(aw_txn *t, const char *key, int by_id, int lock, aw_schedule_row *out,
			     int *found, aw_error *err);
/* The project's schedules by name. */
aw_err aw_store_schedule_list(aw_txn *t, aw_schedule_row **out, int *n, aw_error *err);
/* Deletes the schedule named name with its fires; *found 0 when none. */
aw_err aw_store_schedule_delete(aw_txn *t, const char *name, int *found, aw_error *err);
/* Compare-and-set: next_fire_at from expect to next ("" none), with the last
 * fire (run_id "" keeps the previous) and error ("" clears); *moved 0 when
 * next_fire_at was no longer expect (another worker fired it). */
aw_err aw_store_schedule_advance(aw_txn *t, const char *id, const char *expect, const char *next,
				 const char *fired_at, const char *run_id, const char *error,
				 const char *now, int *moved, aw_error *err);
/* Records a tick the schedule fired, and keeps only its newest 100.
 * AW_E_STORE_CONFLICT when that tick has a run already. */
aw_err aw_store_schedule_fire_put(aw_txn *t, const char *id, const aw_schedule_fire *f,
				  aw_error *err);
/* The schedule's newest fires, newest first, at most limit. free(). */
aw_err aw_store_schedule_fires(aw_txn *t, const char *id, int limit, aw_schedule_fire **out, int *n,
			       aw_error *err);

/* A schedule due by now, across projects (platform path: ids and times). */
typedef struct {
	char project_id[AW_PROJECT_MAX + 1];
	char schedule_id[AW_UUID_STR_LEN + 1];
	char next_fire_at[AW_TS_LEN + 1];
} aw_schedule_due;
/* Up to limit schedules due by now, oldest tick first. free(). */
aw_err aw_store_schedules_due(aw_store *s, const char *now, int limit, aw_schedule_due **out,
			      int *n, aw_error *err);

#endif
