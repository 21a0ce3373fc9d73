/*
 * worker.h - the run workers' shared state (internal to src/run): the worker,
 * its executing threads and their batch slots, shared by the thread pool
 * (pool.c), the batch-round engine (rounds.c) and the heartbeat (heartbeat.c).
 * Slots are guarded by aw_worker.mu; stop flags are atomics read by executors.
 */
#ifndef AW_RUN_WORKER_H
#define AW_RUN_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "awooop/run.h"
#include "awooop/worker.h"
#include "awooop/executor.h"

typedef struct {
	char run_id[AW_UUID_STR_LEN + 1];
	atomic_bool stop; /* lost the run, or shutting down: executors return */
	int active;
} slot;

typedef struct thread_ctx {
	struct aw_worker *w;
	pthread_t th;
	slot *slots; /* batch entries, guarded by w->mu */
	uint64_t rng;
	int lane;      /* the idle-tenant lane (pool.c) */
	int started;   /* th is running: join it */
	int placed;    /* holds its places: the process's and the host's (pool.c) */
	int host_held; /* of which one of the host gate */
} thread_ctx;

/* When a claim last found fewer runs than it asked for (pool.c). */
typedef struct {
	int64_t ns; /* 0: never, or a later claim found a full batch */
	uint64_t gen;
} drained;

struct aw_worker {
	aw_store *s;
	aw_worker_opts o;
	char id[AW_WORKER_ID_MAX + 1];
	thread_ctx *threads; /* nthreads: concurrency, then the idle-tenant lane */
	int nthreads;
	pthread_t hb, listener, cron;
	int has_listener, hb_started, listener_started, cron_started;
	pthread_cond_t cron_cv; /* the scheduler's wait (scheduler.c); mu */
	atomic_int stop;
	pthread_mutex_t mu;
	pthread_cond_t hb_cv;
	/* runs whose slow step left their batch for a thread of their own
	 * (rounds.c): solo_cap slots, solo_n of them driven, guarded by mu */
	slot *solo;
	int solo_cap, solo_n;
	pthread_cond_t solo_cv; /* solo_n fell */
	/* threads claiming or driving a batch (pool.c), at most gate_cap; mu */
	int gate_n, gate_cap;
	pthread_cond_t gate_cv;
	int host_gate; /* the host's places (hostgate.c), -1: none */
	/* the reserve (pool.c): when the idle-tenant lane last had runs of a
	 * project other than the batch threads', the project of the batch
	 * threads' last claim and when, and the thread that keeps a place from
	 * the batch threads meanwhile; mu */
	int64_t lane_seen_ns, batch_ns;
	char batch_project[AW_PROJECT_MAX + 1];
	drained drained; /* the regular threads' claims (guarded by mu) */
	pthread_cond_t reserve_cv;
	pthread_t reserver;
	int reserve, reserver_started; /* reserve: set before any thread starts */
	char *hold; /* the instant kinds: runs of those alone are held at a claim */
};

/* Every slot of w: the batch slots of each thread, then the solo slots. */
static inline int worker_nslots(const struct aw_worker *w)
{
	return w->nthreads * w->o.batch + w->solo_cap;
}

static inline slot *worker_slot(struct aw_worker *w, int i)
{
	int nb = w->nthreads * w->o.batch;
	return i < nb ? &w->threads[i / w->o.batch].slots[i % w->o.batch] : &w->solo[i - nb];
}

/* The scheduler thread (scheduler.c): fires due schedules every
 * schedule_ms until the worker stops. */
void *worker_scheduler_main(void *arg);
/* Retry backoff: base x 2^(attempts-1), capped, +-25 % jitter from *rng. */
int worker_backoff_ms(uint64_t *rng, int attempts, int base, int cap);
uint64_t worker_seed(void);
/* Drives a claimed batch to its end (rounds.c); frees nothing of c. Runs
 * whose next step is slow leave the batch for a solo slot and a thread of
 * their own while one is free. */
void worker_process(aw_worker *w, thread_ctx *tc, aw_run_claim *c, int n);
/* Drives runs a claim held (see aw_store_run_claim) to their end in the
 * claim's transaction t, which it ends (rounds.c). An error: nothing of t
 * was committed - its held runs are still queued, its claimed runs too. */
aw_err worker_finish_held(aw_worker *w, uint64_t *rng, aw_txn *t, aw_run_claim *c, int n,
			  aw_error *err);
/* The kinds of the instant executors as a JSON array (exec.c); malloc'd. */
char *executor_instant_kinds(void);
/* The places of a thread that claims and drives batches (pool.c): taken
 * before a claim (0: stopping), kept from batch to batch, left when it
 * idles - and while a round waits for slow steps (rounds.c), which leave
 * the cores to others. Both do nothing when there is nothing to do. */
int worker_places_take(aw_worker *w, thread_ctx *tc);
void worker_places_leave(aw_worker *w, thread_ctx *tc);
/* Places shared by the worker processes of this user on this host that
 * serve one database (hostgate.c): the semaphore set of (name, places), -1
 * (logged) when the host offers none. enter: 1 a place taken, 0 stop was
 * set first, -1 the set is gone (go on without it). remove: for tests,
 * whose names are their own. */
int hostgate_open(const char *name, int places);
/* The set of the workers of s's database (pool.c), as open. */
int worker_host_gate(const aw_store *s, int places);
int hostgate_enter(int id, const atomic_int *stop);
void hostgate_leave(int id);
void hostgate_remove(int id);
/* The reserve's token (one per set): 1 when taken (never waits); give it
 * back when done. The kernel gives back the token of a process that dies.
 * reserve: a place for the token's holder, as enter, telling the batch
 * threads meanwhile (wanted: 1) to give one back at their next batch. */
int hostgate_token(int id);
void hostgate_token_give(int id);
int hostgate_reserve(int id, const atomic_int *stop);
int hostgate_wanted(int id);
/* Thread bodies (heartbeat.c): lease renewal + lost-run flags + reaper, and
 * the PostgreSQL NOTIFY listener. */
void *worker_heartbeat_main(void *arg);
void *worker_listen_main(void *arg);

#endif
