/*
 * heartbeat.c - the run workers' background threads besides the executors:
 * the heartbeat renews the leases of every run the threads hold, flags the
 * runs this worker lost (cancelled, reaped) so their executors return, and
 * runs the reaper and measures the queues' oldest runnable run
 * (queue_age.c); on PostgreSQL a listener wakes idle threads on NOTIFY
 * awooop_runs from other processes (a submission in this one wakes them
 * itself).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/clock.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "worker.h"

#define PRUNE_BATCH 1000
#define PRUNE_EVERY_NS (60 * 1000000000LL)

/* Retention: deletes finished runs older than retention_h in batches (short
 * transactions, no long lock), at most 20 batches a round; another round
 * follows at once when the last batch was full, else a minute later. */
static int64_t prune(aw_worker *w)
{
	char before[AW_TS_LEN + 1];
	aw_clock_format(aw_clock_wall_ms() - (int64_t)w->o.retention_h * 3600000LL, before);
	int64_t total = 0, n = PRUNE_BATCH;
	aw_error err = {0};
	for (int i = 0; i < 20 && n == PRUNE_BATCH && !atomic_load(&w->stop); i++) {
		if (aw_store_runs_prune(w->s, before, PRUNE_BATCH, &n, &err)) {
			aw_log(AW_LOG_WARN, NULL, "run retention: prune failed", "detail", err.msg,
			       NULL);
			return 0;
		}
		total += n;
	}
	if (total) {
		char c[24];
		snprintf(c, sizeof c, "%lld", (long long)total);
		aw_log(AW_LOG_INFO, NULL, "run retention: finished runs pruned", "count", c,
		       "before", before, NULL);
		aw_metrics_run_event("pruned", (double)total);
	}
	return n == PRUNE_BATCH ? 0 : PRUNE_EVERY_NS;
}

/* Renews leases, flags lost runs, and reaps expired leases. */
void *worker_heartbeat_main(void *arg)
{
	aw_worker *w = arg;
	pthread_setname_np(pthread_self(), "aw-run-beat");
	int cap = worker_nslots(w);
	char(*ids)[AW_UUID_STR_LEN + 1] = aw_malloc(sizeof *ids * (size_t)cap);
	int *lost = aw_calloc((size_t)cap, sizeof *lost);
	int64_t next_prune = aw_clock_mono_ns(), next_age = next_prune;
	while (ids && lost && !atomic_load(&w->stop)) {
		struct timespec ts = aw_clock_after(CLOCK_MONOTONIC, w->o.heartbeat_ms);
		pthread_mutex_lock(&w->mu);
		if (!atomic_load(&w->stop))
			pthread_cond_timedwait(&w->hb_cv, &w->mu, &ts);
		int n = 0;
		for (int i = 0; i < cap; i++)
			if (worker_slot(w, i)->active)
				memcpy(ids[n++], worker_slot(w, i)->run_id, sizeof ids[0]);
		pthread_mutex_unlock(&w->mu);
		if (atomic_load(&w->stop))
			break;
		aw_error err = {0};
		if (!n)
			aw_metrics_loop_tick("heartbeat");
		else if (aw_store_run_heartbeat(w->s, w->id, w->o.lease_ms, ids, n, lost, &err) ==
			 AW_OK) {
			aw_metrics_loop_tick("heartbeat");
			pthread_mutex_lock(&w->mu);
			for (int i = 0; i < n; i++)
				for (int k = 0; lost[i] && k < cap; k++) {
					slot *sl = worker_slot(w, k);
					if (sl->active && strcmp(sl->run_id, ids[i]) == 0)
						sl->stop = 1;
				}
			pthread_mutex_unlock(&w->mu);
		}
		int reaped = 0;
		if (w->o.reaper >= 0 && aw_run_reap(w->s, w->o.retry_base_ms, w->o.retry_max_ms,
						    &reaped, &err) == AW_OK) {
			aw_metrics_loop_tick("reaper");
			if (reaped)
				aw_run_kick();
		}
		if (w->o.reaper >= 0 && w->o.retention_h > 0 && aw_clock_mono_ns() >= next_prune)
			next_prune = aw_clock_mono_ns() + prune(w);
		if (w->o.queue_age_ms > 0 && aw_clock_mono_ns() >= next_age) {
			next_age = aw_clock_mono_ns() + (int64_t)w->o.queue_age_ms * 1000000LL;
			if (aw_run_queue_age_sample(w->s, NULL, NULL, &err) == AW_OK)
				aw_metrics_loop_tick("queue_age");
			else
				aw_log(AW_LOG_WARN, NULL, "run queue age: read failed", "detail",
				       err.msg, NULL);
		}
	}
	free(ids);
	free(lost);
	return NULL;
}

void *worker_listen_main(void *arg)
{
	aw_worker *w = arg;
	pthread_setname_np(pthread_self(), "aw-run-listen");
	aw_store_listener *l = aw_store_listen(w->s, "awooop_runs", 1);
	while (l && !atomic_load(&w->stop))
		if (aw_store_listener_wait(l, 250) == 1)
			aw_run_kick();
	aw_store_listener_close(l);
	return NULL;
}
