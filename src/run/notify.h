/*
 * notify.h - process-wide wake-ups of idle run workers (internal to src/run).
 *
 * A submission signals one waiting worker thread after its commit; workers
 * sleep on the same condition variable between claims. Kept apart from the
 * workers so the run service (run.c) wakes them without depending on them.
 * aw_run_kick() (run.h) is the public entry point and wakes one thread.
 */
#ifndef AW_RUN_NOTIFY_H
#define AW_RUN_NOTIFY_H

#include <stdint.h>

void aw_run_notify_all(void);	   /* wakes every waiting thread (shutdown) */
uint64_t aw_run_notify_seen(void); /* the current generation, read before a claim */
/* Waits until a wake-up after generation `seen`, or ms. */
void aw_run_notify_wait(uint64_t seen, int ms);

#endif
