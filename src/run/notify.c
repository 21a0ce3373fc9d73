/*
 * notify.c - wake-ups of idle run workers (see notify.h): a generation counter
 * under a mutex and one condition variable on CLOCK_MONOTONIC. A thread reads
 * the generation before it claims and sleeps only while it is unchanged, so a
 * submission between its empty claim and its sleep is never missed.
 */
#include "notify.h"

#include <pthread.h>
#include <time.h>

#include "awooop/clock.h"
#include "awooop/run.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint64_t gen;

static void init(void)
{
	aw_clock_cond_init(&cv);
}

static void bump(int all)
{
	pthread_once(&once, init);
	pthread_mutex_lock(&mu);
	gen++;
	if (all)
		pthread_cond_broadcast(&cv);
	else
		pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
}

/* One thread: a thread that claims a full batch wakes the next, so a single
 * submission does not send every idle thread to the store at once. */
void aw_run_kick(void)
{
	bump(0);
}

void aw_run_notify_all(void)
{
	bump(1);
}

uint64_t aw_run_notify_seen(void)
{
	pthread_once(&once, init);
	pthread_mutex_lock(&mu);
	uint64_t g = gen;
	pthread_mutex_unlock(&mu);
	return g;
}

void aw_run_notify_wait(uint64_t seen, int ms)
{
	pthread_once(&once, init);
	struct timespec ts = aw_clock_after(CLOCK_MONOTONIC, ms);
	pthread_mutex_lock(&mu);
	while (gen == seen)
		if (pthread_cond_timedwait(&cv, &mu, &ts) != 0)
			break;
	pthread_mutex_unlock(&mu);
}
