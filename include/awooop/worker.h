/*
 * worker.h - the run runtime's workers: threads that claim runs with a lease
 * renewed by heartbeat, execute their steps through the executor registry
 * (executor.h), and the reaper that re-queues runs whose lease expired.
 */
#ifndef AWOOOP_WORKER_H
#define AWOOOP_WORKER_H

#include "awooop/store/run.h"

typedef struct aw_worker aw_worker;
typedef struct {
	const char *id;	   /* worker id for leases; default host-pid-random */
	int concurrency;   /* executing threads; default 4 */
	int batch;	   /* runs claimed at once per thread; default 16 */
	int heartbeat_ms;  /* default 5000 */
	int lease_ms;	   /* default 30000 */
	int poll_ms;	   /* safety-net poll when idle; default 1000 */
	int retry_base_ms; /* backoff base (x2 per attempt, +-25% jitter); default 1000 */
	int retry_max_ms;  /* backoff cap; default 60000 */
	int reaper;	   /* run the reaper loop; default on (-1 = off) */
	int retention_h;   /* the reaper prunes runs finished this long ago; 0 keeps all */
	/* of the executing threads, how many claim and drive batches at once
	 * (their store work is CPU-bound; more only contend): default the
	 * online CPUs, at least 2. The idle-tenant lane, a handed-off run and
	 * slow steps (solo threads) never wait for one. */
	int store_threads;
	/* the same across every worker process of this user on this host
	 * (their store work shares the host's cores): default (0) the online
	 * CPUs; -1: no host-wide count */
	int host_store_threads;
	/* how often the heartbeat thread measures the queues' oldest runnable
	 * run (aw_run_queue_age_sample), with the reaper: default (0) 15000;
	 * -1: never (another worker process does) */
	int queue_age_ms;
	/* how often the scheduler thread fires due schedules (schedule.h; one
	 * indexed statement when none is due): default (0) 1000; -1: never
	 * (another worker process does; any may, a tick fires once) */
	int schedule_ms;
} aw_worker_opts;

aw_err aw_worker_start(aw_store *s, const aw_worker_opts *opts, aw_worker **out, aw_error *err);
/* Graceful: stops claiming, interrupts waiting steps, finishes the round in
 * flight and releases (re-queues) every run it still holds. */
void aw_worker_stop(aw_worker *w);
/* Wakes this process's idle workers (called after a submission commits). */
void aw_run_kick(void);
/* One reaper pass: re-queues (or fails at max_attempts) runs whose lease
 * expired. *n gets how many were moved. */
aw_err aw_run_reap(aw_store *s, int retry_base_ms, int retry_max_ms, int *n, aw_error *err);

#endif
