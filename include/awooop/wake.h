/*
 * wake.h - a one-shot wake-up for code that waits for an asynchronous call
 * to call it back (the gateways' aw_llm_wake / aw_mcp_wake): the callback
 * sets it from any thread, the waiter sleeps until it is set.
 */
#ifndef AWOOOP_WAKE_H
#define AWOOOP_WAKE_H

#include <pthread.h>

typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int woken;
} aw_wake;

void aw_wake_init(aw_wake *w);
void aw_wake_destroy(aw_wake *w);
/* Sets w (an aw_wake *, typed void * to be a gateway's wake callback). */
void aw_wake_signal(void *w);
/* Waits until w is set or ms pass (ms < 0: no limit) and clears it; 1 when
 * it was set. */
int aw_wake_wait(aw_wake *w, int ms);

#endif
