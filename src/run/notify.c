/*
 * notify.c - wake-ups of idle run workers and hand-offs (see notify.h): a
 * generation counter and a list of waiting threads under one mutex, each
 * waiter with a condition variable of its own on CLOCK_MONOTONIC. A thread
 * reads the generation before it claims and sleeps only while it is
 * unchanged, so a submission between its empty claim and its sleep is never
 * missed. A kick signals one waiter neither woken nor reserved, so it is
 * never spent on a thread that would go back to sleep.
 */
#include "notify.h"

#include <time.h>

#include "awooop/clock.h"
#include "awooop/run.h"
#include "awooop/worker.h"

enum { IDLE, RESERVED, GIVEN, CANCELLED };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t gen;
static aw_run_waiter *waiters;
/* Of the waiters that share their poll, the one that waits ms; the others
 * wait POLL_SHARED times as long: idle threads that would each claim once
 * per poll interval, to find nothing, take turns instead. */
static aw_run_waiter *poller;
#define POLL_SHARED 4

/* Neither woken by a kick nor reserved: free to be woken or reserved. */
static int is_free(const aw_run_waiter *w)
{
	return w->state == IDLE && !w->woken;
}

/* A free waiter of store s (NULL: any), one not of the idle-tenant lane
 * when there is one; with !lane_ok never the lane's. Holds mu. */
static aw_run_waiter *free_waiter(const aw_store *s, int lane_ok)
{
	aw_run_waiter *pick = NULL;
	for (aw_run_waiter *w = waiters; w && (!pick || pick->lane); w = w->next)
		if (is_free(w) && (!s || w->store == s) && (lane_ok || !w->lane))
			pick = w;
	return pick;
}

enum { ONE, ONE_REGULAR, ALL };

/* ONE: a free waiter, of the idle-tenant lane only when no other is;
 * ONE_REGULAR: never the lane's; ALL: every waiter. */
static void bump(int whom)
{
	pthread_mutex_lock(&mu);
	gen++;
	for (aw_run_waiter *w = waiters; whom == ALL && w; w = w->next) {
		w->woken = 1;
		pthread_cond_signal(&w->cv);
	}
	aw_run_waiter *pick = whom == ALL ? NULL : free_waiter(NULL, whom == ONE);
	if (pick) {
		pick->woken = 1;
		pthread_cond_signal(&pick->cv);
	}
	pthread_mutex_unlock(&mu);
}

/* One thread, so a single submission does not send every idle thread to the
 * store at once. */
void aw_run_kick(void)
{
	bump(ONE);
}

/* After a full batch: probably more backlog, for a regular thread - the
 * lane stays free for a tenant that is not flooding (and for a hand-off). */
void run_kick_backlog(void)
{
	bump(ONE_REGULAR);
}

void run_notify_all(void)
{
	bump(ALL);
}

uint64_t run_notify_seen(void)
{
	pthread_mutex_lock(&mu);
	uint64_t g = gen;
	pthread_mutex_unlock(&mu);
	return g;
}

int run_notify_wait_handoff(uint64_t seen, int ms, aw_run_waiter *w)
{
	aw_clock_cond_init(&w->cv);
	pthread_mutex_lock(&mu);
	if (w->share_poll && !poller)
		poller = w;
	struct timespec ts = aw_clock_after(
		CLOCK_MONOTONIC, w->share_poll && poller != w ? (int64_t)ms * POLL_SHARED : ms);
	w->state = IDLE;
	w->woken = 0;
	w->claim = NULL;
	w->next = waiters;
	waiters = w;
	int timed_out = 0;
	for (;;) {
		if (w->state == GIVEN || w->state == CANCELLED)
			break;
		if (w->state == RESERVED) { /* the submitter answers, whatever else happens */
			pthread_cond_wait(&w->cv, &mu);
			continue;
		}
		if (gen != seen || timed_out)
			break;
		timed_out = pthread_cond_timedwait(&w->cv, &mu, &ts) != 0;
	}
	for (aw_run_waiter **p = &waiters; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			break;
		}
	if (poller == w)
		poller = NULL;
	int given = w->state == GIVEN;
	pthread_mutex_unlock(&mu);
	pthread_cond_destroy(&w->cv);
	return given;
}

void run_notify_wait(uint64_t seen, int ms)
{
	aw_run_waiter w = {0};
	run_notify_wait_handoff(seen, ms, &w);
}

int run_handoff_idle(const aw_store *s)
{
	int n = 0;
	pthread_mutex_lock(&mu);
	for (aw_run_waiter *w = waiters; w; w = w->next)
		n += w->store == s && is_free(w);
	pthread_mutex_unlock(&mu);
	return n;
}

/* A thread of the idle-tenant lane only when no other idles. */
aw_run_waiter *run_handoff_reserve(const aw_store *s)
{
	pthread_mutex_lock(&mu);
	aw_run_waiter *found = free_waiter(s, 1);
	if (found)
		found->state = RESERVED;
	pthread_mutex_unlock(&mu);
	return found;
}

void run_handoff_give(aw_run_waiter *w, aw_run_claim *c)
{
	pthread_mutex_lock(&mu);
	w->claim = c;
	w->state = c ? GIVEN : CANCELLED;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&mu);
}
