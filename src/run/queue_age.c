/*
 * queue_age.c - how long the oldest runnable run of each queue has waited:
 * the worker's heartbeat thread asks the store every --queue-age-ms (one
 * statement for every project, one index descent per queue) and publishes
 * awooop_run_queue_oldest_age_seconds{project,queue}, the series the alert
 * AwooopRunQueueBacklogOld reads, and awooop_run_queue_depth{project,queue}:
 * how many runs are due (the index's due entries, at most
 * AW_RUN_QUEUE_DEPTH_MAX counted). A run waits from the moment it is due
 * (run_after: its submission, its run_at, or the end of its retry backoff),
 * so a run scheduled for later or backing off is not "waiting".
 *
 * The queue label is a declared queue name (aw_run_queue_set: validated,
 * at most AW_RUN_QUEUES_MAX a project, never created by a submission, which
 * is refused for an undeclared queue) or "default": a bounded set a
 * project's operator configures, like a route name of a contract.
 */
#include <stdio.h>
#include <stdlib.h>

#include "awooop/alloc.h"
#include "awooop/clock.h"
#include "awooop/metrics.h"
#include "awooop/run.h"
#include "awooop/str.h"

aw_err aw_run_queue_age_sample(aw_store *s, aw_run_queue_age **out, int *n, aw_error *err)
{
	if (out)
		*out = NULL;
	if (n)
		*n = 0;
	int64_t now_ms = aw_clock_wall_ms();
	char now[AW_TS_LEN + 1];
	aw_clock_format(now_ms, now);
	aw_run_queue_oldest *rows = NULL;
	int nr = 0;
	aw_err e = aw_store_run_queue_oldest(s, now, &rows, &nr, err);
	if (e)
		return e;
	aw_run_queue_age *ages = aw_calloc((size_t)nr + 1, sizeof *ages);
	const char **projects = aw_calloc((size_t)nr + 1, sizeof *projects);
	const char **queues = aw_calloc((size_t)nr + 1, sizeof *queues);
	double *v = aw_calloc((size_t)nr + 1, sizeof *v);
	double *depths = aw_calloc((size_t)nr + 1, sizeof *depths);
	if (!ages || !projects || !queues || !v || !depths) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
		goto out;
	}
	int k = 0;
	for (int i = 0; i < nr; i++) {
		int64_t due = 0;
		if (aw_clock_parse(rows[i].due_at, &due) != 0)
			continue; /* the store wrote it: never seen, but never a guess */
		aw_run_queue_age *a = &ages[k];
		AW_COPY_ARRAY(a->project, rows[i].project_id);
		AW_COPY_ARRAY(a->queue, rows[i].queue);
		a->age_s = due < now_ms ? (double)(now_ms - due) / 1000.0 : 0;
		a->depth = rows[i].depth;
		projects[k] = a->project;
		queues[k] = a->queue;
		depths[k] = (double)a->depth;
		v[k++] = a->age_s;
	}
	aw_metrics_run_queue_ages(projects, queues, v, k);
	aw_metrics_run_queue_depths(projects, queues, depths, k);
	if (out) {
		*out = ages;
		ages = NULL;
	}
	if (n)
		*n = k;
out:
	free(rows);
	free(ages);
	free(projects);
	free(queues);
	free(v);
	free(depths);
	return e;
}
