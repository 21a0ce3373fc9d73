/*
 * scheduler.c - the run workers' scheduler thread: every schedule_ms it
 * fires the schedules due by the wall clock (aw_schedule_fire_due: one
 * indexed statement when none is due, a transaction per due schedule). Any
 * number of worker processes run it at once; each tick still fires once
 * (schedule.c says how). Its loop metric is "scheduler".
 */
#include <pthread.h>

#include "awooop/clock.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/schedule.h"
#include "worker.h"

void *worker_scheduler_main(void *arg)
{
	aw_worker *w = arg;
	pthread_setname_np(pthread_self(), "aw-run-cron");
	while (!atomic_load(&w->stop)) {
		aw_error err = {0};
		int fired = 0;
		if (aw_schedule_fire_due(w->s, aw_clock_wall_ms(), &fired, &err) == AW_OK)
			aw_metrics_loop_tick("scheduler");
		else
			aw_log(AW_LOG_WARN, NULL, "scheduler: a pass failed", "detail", err.msg,
			       NULL);
		struct timespec ts = aw_clock_after(CLOCK_MONOTONIC, w->o.schedule_ms);
		pthread_mutex_lock(&w->mu);
		if (!atomic_load(&w->stop))
			pthread_cond_timedwait(&w->cron_cv, &w->mu, &ts);
		pthread_mutex_unlock(&w->mu);
	}
	return NULL;
}
