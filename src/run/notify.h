/*
 * notify.h - process-wide wake-ups of idle run workers, and hand-offs
 * (internal to src/run).
 *
 * A submission signals one waiting worker thread after its commit; workers
 * sleep here between claims. Kept apart from the workers so the run service
 * (run.c) wakes them without depending on them. aw_run_kick() (run.h) is the
 * public entry point and wakes one thread.
 *
 * A hand-off: a worker thread idle on a store offers itself while it waits;
 * a submission in the same process reserves it, commits its run already
 * claimed in the worker's name (no claim query, no NOTIFY round trip) and
 * gives the thread the claim - or cancels, and the thread waits on. A
 * reserved thread waits for that answer only, so a committed hand-off is
 * always taken; if the process dies in between, the lease runs out and the
 * reaper re-queues the run as for any claim.
 */
#ifndef AW_RUN_NOTIFY_H
#define AW_RUN_NOTIFY_H

#include <pthread.h>
#include <stdint.h>

#include "awooop/store/run.h"
#include "awooop/worker.h"

typedef struct aw_run_waiter {
	/* set by the waiting thread */
	const aw_store *store; /* NULL: takes no hand-off */
	const char *holder;    /* the worker id that holds the lease */
	int lease_ms;
	int lane; /* the idle-tenant lane: only runs of projects with none in flight */
	/* one of the process's idle threads that take turns to poll: while
	 * another waits out the interval this one waits four times as long */
	int share_poll;
	/* set under the notifier's lock */
	int state;	     /* see notify.c */
	int woken;	     /* signalled by a kick: it claims; not offered */
	aw_run_claim *claim; /* given: one claim, the waiter frees it */
	pthread_cond_t cv;
	struct aw_run_waiter *next;
} aw_run_waiter;

void run_notify_all(void);	/* wakes every waiting thread (shutdown) */
void run_kick_backlog(void);	/* wakes a waiting thread not of the lane */
uint64_t run_notify_seen(void); /* the current generation, read before a claim */
/* Waits until a wake-up after generation `seen`, or ms (see share_poll). */
void run_notify_wait(uint64_t seen, int ms);
/* The same, offering w for a hand-off meanwhile: 1 with w->claim set (one
 * run, claimed for w->holder) when a submission gave it one. */
int run_notify_wait_handoff(uint64_t seen, int ms, aw_run_waiter *w);

/* How many waiters idle on store s could be reserved now (tests wait for
 * one before they submit). */
int run_handoff_idle(const aw_store *s);
/* The submitting side: a waiter idle on store s, reserved (NULL: none). */
aw_run_waiter *run_handoff_reserve(const aw_store *s);
/* Answers a reservation: c (one claim, the waiter takes it over) or NULL
 * (cancelled: the run was not committed claimed in its name). */
void run_handoff_give(aw_run_waiter *w, aw_run_claim *c);

#endif
