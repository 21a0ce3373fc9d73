/*
 * recorder.c - the recorder thread a door writes what its calls leave with
 * (see call.h): a queue of records, taken whole each turn and written one
 * project's batch at a time by the door's write hook.
 */
#include "awooop/alloc.h"
#include "awooop/call.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "awooop/clock.h"
#include "awooop/log.h"
#include "awooop/metrics.h"

struct aw_recorder {
	aw_recorder_opts o;
	pthread_mutex_t mu;
	pthread_cond_t cv;   /* records queued, chores, stop, flush */
	pthread_cond_t done; /* a turn ended */
	aw_call_rec *head, *tail;
	int queued, expected, recording, flushing, chores, stop;
	pthread_t th;
};

static void write_all(aw_recorder *r, aw_call_rec *list)
{
	while (list) { /* batches of one project, in order */
		aw_call_rec *batch[AW_RECORD_BATCH];
		int n = 0;
		aw_call_rec **pp = &list;
		const char *project = list->project;
		while (*pp && n < AW_RECORD_BATCH) {
			if (!strcmp((*pp)->project, project)) {
				batch[n++] = *pp;
				*pp = (*pp)->next;
			} else {
				pp = &(*pp)->next;
			}
		}
		r->o.write(r->o.ud, batch, n); /* lets go of them: project too */
	}
}

static void *recorder_main(void *arg)
{
	aw_recorder *r = arg;
	pthread_setname_np(pthread_self(), r->o.thread);
	/* background work: calls in flight come first (Linux: per-thread nice;
	 * measured: p50 and p99 of calls at concurrency 1 both lower) */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	pthread_mutex_lock(&r->mu);
	for (;;) {
		if (!r->head && !r->stop && !r->chores) { /* idle: still ticks */
			struct timespec ts = aw_clock_after(CLOCK_MONOTONIC, r->o.tick_ms);
			pthread_cond_timedwait(&r->cv, &r->mu, &ts);
		}
		if (r->chores && r->o.chores) {
			r->chores = 0;
			pthread_mutex_unlock(&r->mu);
			r->o.chores(r->o.ud);
			pthread_mutex_lock(&r->mu);
		}
		if (!r->head && r->stop)
			break;
		if (r->head && r->queued < AW_RECORD_BATCH && !r->stop && !r->flushing &&
		    r->o.linger_ms > 0) {
			struct timespec ts = aw_clock_after(CLOCK_MONOTONIC, r->o.linger_ms);
			pthread_cond_timedwait(&r->cv, &r->mu, &ts);
		}
		aw_call_rec *list = r->head;
		r->head = r->tail = NULL;
		r->queued = 0;
		r->recording = 1;
		pthread_mutex_unlock(&r->mu);
		write_all(r, list);
		aw_metrics_loop_tick(r->o.loop);
		pthread_mutex_lock(&r->mu);
		r->recording = 0;
		pthread_cond_broadcast(&r->done);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

aw_err aw_recorder_start(const aw_recorder_opts *o, aw_recorder **out, aw_error *err)
{
	*out = NULL;
	aw_recorder *r = aw_calloc(1, sizeof *r);
	if (!r)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	r->o = *o;
	if (r->o.tick_ms <= 0)
		r->o.tick_ms = 1000;
	pthread_mutex_init(&r->mu, NULL);
	aw_clock_cond_init(&r->cv);
	pthread_cond_init(&r->done, NULL);
	if (pthread_create(&r->th, NULL, recorder_main, r) != 0) {
		pthread_cond_destroy(&r->done);
		pthread_cond_destroy(&r->cv);
		pthread_mutex_destroy(&r->mu);
		free(r);
		return aw_fail(err, AW_E_INTERNAL, "cannot start the %s thread", o->thread);
	}
	*out = r;
	return AW_OK;
}

void aw_recorder_put(aw_recorder *r, aw_call_rec *rec)
{
	rec->next = NULL;
	pthread_mutex_lock(&r->mu);
	if (r->tail)
		r->tail->next = rec;
	else
		r->head = rec;
	r->tail = rec;
	if (++r->queued == 1) /* else the recorder is awake already */
		pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

void aw_recorder_wake(aw_recorder *r)
{
	pthread_mutex_lock(&r->mu);
	r->chores = 1;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

void aw_recorder_expect(aw_recorder *r, int delta)
{
	pthread_mutex_lock(&r->mu);
	r->expected += delta;
	if (delta < 0)
		pthread_cond_broadcast(&r->done);
	pthread_mutex_unlock(&r->mu);
}

void aw_recorder_flush(aw_recorder *r)
{
	pthread_mutex_lock(&r->mu);
	r->flushing++;
	pthread_cond_signal(&r->cv);
	while (r->head || r->recording || r->expected)
		pthread_cond_wait(&r->done, &r->mu);
	r->flushing--;
	pthread_mutex_unlock(&r->mu);
}

void aw_recorder_stop(aw_recorder *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->stop = 1;
	r->chores = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->th, NULL);
	pthread_cond_destroy(&r->done);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

void aw_recorder_commit(aw_store *store, const aw_ctx *c0, const aw_audit_item *items, int n,
			aw_err (*before)(aw_txn *t, void *ud, aw_error *err), void *ud,
			const char *lost)
{
	aw_ctx ctx; /* background work: not the project's connections */
	aw_ctx_uncharged(c0, &ctx);
	aw_txn *t = NULL;
	aw_error err = {0};
	aw_err e = aw_store_begin(store, &ctx, AW_TXN_WRITE, &t, &err);
	if (!e && before)
		e = before(t, ud, &err);
	if (!e)
		e = aw_audit_record_many_spent(t, &ctx, items, n, &err); /* built for it */
	if (!e)
		e = aw_store_commit(t, &err);
	else if (t)
		aw_store_rollback(t);
	if (e)
		aw_log(AW_LOG_ERROR, &ctx, lost, "detail", err.msg, NULL);
}
