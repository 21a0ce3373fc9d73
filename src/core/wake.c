/*
 * wake.c - the one-shot wake-up of wake.h: a flag under a mutex and a
 * condition; timed waits use aw_clock_after's realtime deadline, as the
 * gateways' own waits did.
 */
#include "awooop/wake.h"

#include <errno.h>

#include "awooop/clock.h"

void aw_wake_init(aw_wake *w)
{
	pthread_mutex_init(&w->mu, NULL);
	aw_clock_cond_init(&w->cv);
	w->woken = 0;
}

void aw_wake_destroy(aw_wake *w)
{
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
}

void aw_wake_signal(void *ud)
{
	aw_wake *w = ud;
	pthread_mutex_lock(&w->mu);
	w->woken = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

int aw_wake_wait(aw_wake *w, int ms)
{
	pthread_mutex_lock(&w->mu);
	struct timespec ts = aw_clock_after(CLOCK_MONOTONIC, ms < 0 ? 0 : ms);
	while (!w->woken)
		if (ms < 0 ? pthread_cond_wait(&w->cv, &w->mu) != 0
			   : pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT)
			break;
	int was = w->woken;
	w->woken = 0;
	pthread_mutex_unlock(&w->mu);
	return was;
}
