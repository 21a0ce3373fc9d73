/*
 * pool.c - the run workers' thread pool: start (every thread checked, a
 * failure unwinds what started), the claim loop of each executing thread
 * (claim a batch with SKIP LOCKED, drive it through rounds.c, sleep on
 * notify.c when idle), and a graceful stop that interrupts waiting steps and
 * re-queues what the threads still hold.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "awooop/alloc.h"
#include "awooop/clock.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/executor.h"
#include "awooop/str.h"
#include "awooop/worker.h"
#include "notify.h"
#include "worker.h"

static void *exec_main(void *arg);

/* The idle-tenant lane: one thread more than --concurrency claims (or is
 * handed) only runs of projects with fewer than 4 claimed, running or
 * waiting, LANE_BATCH at a time. A tenant flooding the pool keeps a backlog,
 * so the lane never takes its work; a tenant that is not flooding finds the
 * lane free and waits for no batch of another's. Backlog kicks pass it by. */
#define LANE_BATCH 4

/* Stops and joins the threads that started (all, or those before a failed
 * start), then frees the worker. */
static void shutdown_worker(aw_worker *w)
{
	atomic_store(&w->stop, 1);
	pthread_mutex_lock(&w->mu);
	for (int t = 0; w->threads && t < w->nthreads; t++)
		for (int i = 0; w->threads[t].slots && i < w->o.batch; i++)
			w->threads[t].slots[i].stop = 1;
	for (int i = 0; i < w->solo_cap; i++)
		w->solo[i].stop = 1;
	pthread_cond_broadcast(&w->hb_cv);
	pthread_cond_broadcast(&w->cron_cv);
	pthread_cond_broadcast(&w->gate_cv);
	pthread_cond_broadcast(&w->reserve_cv);
	pthread_mutex_unlock(&w->mu);
	run_notify_all();
	for (int i = 0; w->threads && i < w->nthreads; i++)
		if (w->threads[i].started)
			pthread_join(w->threads[i].th, NULL);
	/* no thread makes a solo run now (they are joined): wait for those driven */
	pthread_mutex_lock(&w->mu);
	while (w->solo_n > 0)
		pthread_cond_wait(&w->solo_cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
	if (w->hb_started)
		pthread_join(w->hb, NULL);
	if (w->listener_started)
		pthread_join(w->listener, NULL);
	if (w->cron_started)
		pthread_join(w->cron, NULL);
	if (w->reserver_started)
		pthread_join(w->reserver, NULL);
	for (int i = 0; w->threads && i < w->nthreads; i++)
		free(w->threads[i].slots);
	free(w->threads);
	free(w->solo);
	free(w->hold);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->hb_cv);
	pthread_cond_destroy(&w->cron_cv);
	pthread_cond_destroy(&w->solo_cv);
	pthread_cond_destroy(&w->gate_cv);
	pthread_cond_destroy(&w->reserve_cv);
	free(w);
}

void worker_places_leave(aw_worker *w, thread_ctx *tc)
{
	if (!tc->placed)
		return;
	if (tc->host_held)
		hostgate_leave(w->host_gate);
	tc->host_held = tc->placed = 0;
	pthread_mutex_lock(&w->mu);
	w->gate_n--;
	pthread_cond_signal(&w->gate_cv);
	pthread_mutex_unlock(&w->mu);
}

/* The batch path's store work (claim, rounds) is CPU-bound on both sides of
 * the connection: past the machine's cores more threads only add lock waits
 * and context switches (2 x 8 threads on 2 cores burned down 0.7x as fast as
 * 2 x 2). So at most gate_cap threads of the process claim and drive a batch
 * at once, and at most the host gate's places of all the processes of this
 * user on this host (hostgate.c); the others wait here, holding nothing. */
int worker_places_take(aw_worker *w, thread_ctx *tc)
{
	if (tc->placed)
		return 1;
	pthread_mutex_lock(&w->mu);
	while (w->gate_n >= w->gate_cap && !atomic_load(&w->stop))
		pthread_cond_wait(&w->gate_cv, &w->mu);
	int ok = !atomic_load(&w->stop);
	w->gate_n += ok;
	pthread_mutex_unlock(&w->mu);
	tc->placed = ok;
	if (ok && w->host_gate >= 0) {
		int r = hostgate_enter(w->host_gate, &w->stop);
		tc->host_held = r > 0;
		if (r == 0) {
			worker_places_leave(w, tc);
			ok = 0;
		}
	}
	return ok;
}

/* The host gate of the workers of store s's database. One per database,
 * not per host: the workers of one deployment serve the same runs, and a
 * place one of them keeps serves them all; another deployment's workers
 * (a tenant on a database of its own, on the same host) never claim this
 * one's runs, and with one gate they waited for its places until its
 * backlog was gone - 1.3-2.0 s of a 50,000-run flood, each run
 * (bench/runs/fairness.sh, its control). Two busy deployments on one host
 * run a batch more than the cores then: a cost, where the other was
 * starvation. */
int worker_host_gate(const aw_store *s, int places)
{
	char where[256];
	aw_store_where(s, where, sizeof where);
	return hostgate_open(where, places);
}

/* The reserve. A tenant flooding the pool keeps every place of the host
 * busy, and a quiet tenant's run - served by the idle-tenant lane, which
 * takes no place - then waits for a core at every hop (its submission, the
 * NOTIFY, the claim, the commit: each a thread or a PostgreSQL backend
 * woken on a machine with no core free). So while a lane of this process
 * has had runs of another project than the batch threads' in the last
 * RESERVE_LINGER_MS, this thread takes one place and keeps it: the batch
 * threads have one core fewer, the quiet tenants one core. Only one reserve
 * per gate (the set's token: the lanes of every process would take every
 * place), and none with fewer than two places. A lone tenant whose runs
 * trickle in finds the lane too, between its bursts: it has no other tenant
 * to be kept from, and a reserve would only take a core from its own. */
#define RESERVE_LINGER_MS 250

static int recent(int64_t ns, int64_t now)
{
	return ns && now - ns < (int64_t)RESERVE_LINGER_MS * 1000000;
}

static int lane_recent(const aw_worker *w) /* holds w->mu */
{
	return recent(w->lane_seen_ns, aw_clock_mono_ns());
}

/* A batch thread claimed c: its project (the first run's) is busy. */
static void batch_had_runs(aw_worker *w, const aw_run_claim *c)
{
	pthread_mutex_lock(&w->mu);
	w->batch_ns = aw_clock_mono_ns();
	memcpy(w->batch_project, c->project_id, sizeof w->batch_project);
	pthread_mutex_unlock(&w->mu);
}

/* The lane had the n runs of c: the reserve is wanted (a signal when it was
 * not) if one is of another project than the batch threads' busy one. */
static void lane_had_runs(aw_worker *w, const aw_run_claim *c, int n)
{
	pthread_mutex_lock(&w->mu);
	int64_t now = aw_clock_mono_ns();
	int other = 0;
	if (recent(w->batch_ns, now)) /* else no batch is busy: nobody to keep from */
		for (int i = 0; i < n && !other; i++)
			other = strcmp(c[i].project_id, w->batch_project) != 0;
	if (other) {
		if (!recent(w->lane_seen_ns, now))
			pthread_cond_signal(&w->reserve_cv);
		w->lane_seen_ns = now;
	}
	pthread_mutex_unlock(&w->mu);
}

static void *reserve_main(void *arg)
{
	aw_worker *w = arg;
	pthread_setname_np(pthread_self(), "aw-run-reserve");
	pthread_mutex_lock(&w->mu);
	while (!atomic_load(&w->stop)) {
		if (!lane_recent(w)) {
			pthread_cond_wait(&w->reserve_cv, &w->mu);
			continue;
		}
		/* while the lane has runs: the token (another process may hold
		 * it: tried again at every tick), then the place, at once or when
		 * a batch ends; kept until the lane has had none for a while */
		int token = 0, place = 0, gone = 0;
		while (!atomic_load(&w->stop) && lane_recent(w)) {
			if (!gone && !token)
				token = hostgate_token(w->host_gate);
			if (!gone && token && !place) {
				pthread_mutex_unlock(&w->mu);
				int r = hostgate_reserve(w->host_gate, &w->stop);
				pthread_mutex_lock(&w->mu);
				place = r > 0;
				gone = r < 0; /* the set was removed */
				continue;
			}
			struct timespec ts = aw_clock_after(CLOCK_MONOTONIC, RESERVE_LINGER_MS / 5);
			pthread_cond_timedwait(&w->reserve_cv, &w->mu, &ts);
		}
		pthread_mutex_unlock(&w->mu);
		if (place)
			hostgate_leave(w->host_gate);
		if (token)
			hostgate_token_give(w->host_gate);
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* A claim drained the store: it found fewer runs than it asked for, at ns,
 * with nothing announced since generation gen. Until something is announced
 * (every submission kicks, NOTIFYs or hands off) or poll_ms passed, another
 * claim of the same kind would find nothing: the thread waits at once. An
 * empty claim after each batch, and one per idle thread at every poll_ms
 * (the regular threads share one record: one claim per poll_ms a process),
 * cost the next submission a share of the CPU. */
static int fresh(const aw_worker *w, const drained *d, uint64_t gen, int64_t now)
{
	return d->ns && d->gen == gen && now - d->ns < (int64_t)w->o.poll_ms * 1000000;
}

/* d, or the regular threads' record (it drains the lane's claims too). */
static int is_drained(aw_worker *w, const drained *d, uint64_t gen, int64_t now)
{
	pthread_mutex_lock(&w->mu);
	int r = fresh(w, d, gen, now) || fresh(w, &w->drained, gen, now);
	pthread_mutex_unlock(&w->mu);
	return r;
}

static void set_drained(aw_worker *w, drained *d, int yes, uint64_t gen, int64_t now)
{
	pthread_mutex_lock(&w->mu);
	d->ns = yes ? now : 0;
	d->gen = gen;
	pthread_mutex_unlock(&w->mu);
}

static void *exec_main(void *arg)
{
	thread_ctx *tc = arg;
	aw_worker *w = tc->w;
	pthread_setname_np(pthread_self(), tc->lane ? "aw-run-lane" : "aw-run");
	/* the lane's own record of a drained claim: its claims see fewer
	 * projects than the regular threads' (their record drains it too) */
	drained mine = {0};
	drained *d = tc->lane ? &mine : &w->drained;
	while (!atomic_load(&w->stop)) {
		uint64_t gen = run_notify_seen();
		aw_run_claim *c = NULL;
		int n = 0;
		aw_error err = {0};
		int want = tc->lane && w->o.batch > LANE_BATCH ? LANE_BATCH : w->o.batch;
		int64_t now = aw_clock_mono_ns();
		int quiet = is_drained(w, d, gen, now);
		/* a thread keeps its places from one batch to the next and
		 * leaves them when it goes idle: a place given back at every
		 * batch went to a sleeping thread (the semaphore hands it over),
		 * a switch a batch */
		if (tc->host_held && hostgate_wanted(w->host_gate))
			worker_places_leave(w, tc); /* for the reserve */
		if (!quiet && !tc->lane && !worker_places_take(w, tc))
			break;
		aw_txn *held = NULL;
		aw_err e = quiet ? AW_OK
				 : aw_store_run_claim(w->s, w->id, w->o.lease_ms, want, tc->lane,
						      w->hold, &held, &c, &n, &err);
		/* runs held by the claim end in its transaction, which commits the
		 * others' claim too (they come first in c) */
		int nh = 0;
		for (int i = 0; !e && i < n; i++)
			nh += c[i].held;
		if (held)
			e = worker_finish_held(w, &tc->rng, held, c + (n - nh), nh, &err);
		if (e) {
			worker_places_leave(w, tc);
			aw_run_claims_free(c, n);
			aw_log(AW_LOG_WARN, NULL, "run claim failed", "code", aw_err_code(e),
			       "detail", err.msg, NULL);
			run_notify_wait(gen, w->o.poll_ms);
			continue;
		}
		if (!quiet) {
			set_drained(w, d, n < want, gen, now);
			if (n == 0)
				aw_metrics_run_event("empty_claim", 1);
		}
		if (n == 0) {
			worker_places_leave(w, tc);
			aw_run_claims_free(c, n); /* an empty array on PostgreSQL */
			/* idle: a submission in this process may hand a run over */
			aw_run_waiter wt = {.store = w->s,
					    .holder = w->id,
					    .lease_ms = w->o.lease_ms,
					    .lane = tc->lane,
					    .share_poll = !tc->lane};
			if (!run_notify_wait_handoff(gen, w->o.poll_ms, &wt))
				continue;
			c = wt.claim;
			n = 1;
		}
		if (n == want && !tc->lane) /* probably more waiting: another thread claims them */
			run_kick_backlog();
		if (w->reserve) { /* n > 0 here, the held runs too */
			if (tc->lane)
				lane_had_runs(w, c, n);
			else
				batch_had_runs(w, c);
		}
		if (n > nh) {
			aw_metrics_run_event("claimed", n - nh);
			worker_process(w, tc, c, n - nh);
		}
		aw_run_claims_free(c, n);
	}
	worker_places_leave(w, tc);
	return NULL;
}

aw_err aw_worker_start(aw_store *s, const aw_worker_opts *opts, aw_worker **out, aw_error *err)
{
	aw_worker *w = aw_calloc(1, sizeof *w);
	if (!w)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	w->s = s;
	w->o = *opts;
	w->host_gate = -1;
#define DEF(f, v)        \
	if (w->o.f <= 0) \
		w->o.f = (v);
	DEF(concurrency, 4)
	DEF(batch, 16)
	DEF(heartbeat_ms, 5000)
	DEF(lease_ms, 30000)
	DEF(poll_ms, 1000)
	DEF(retry_base_ms, 1000)
	DEF(retry_max_ms, 60000)
#undef DEF
	if (w->o.queue_age_ms == 0)
		w->o.queue_age_ms = 15000;
	if (w->o.schedule_ms == 0)
		w->o.schedule_ms = 1000;
	if (w->o.batch > 1000)
		w->o.batch = 1000;
	if (opts->id && *opts->id) {
		if (AW_STR_COPY(w->id, opts->id) < 0) { /* a cut id could be another worker's */
			free(w);
			return aw_fail(err, AW_E_CONFIG, "a worker id is at most %d bytes",
				       AW_WORKER_ID_MAX);
		}
	} else {
		char host[32] = "host";
		gethostname(host, sizeof host - 1);
		host[sizeof host - 1] = '\0';
		uint32_t r = (uint32_t)worker_seed();
		snprintf(w->id, sizeof w->id, "%.32s-%d-%04x", host, (int)getpid(), r & 0xffff);
	}
	for (char *p = w->id; *p; p++) /* a principal: no '@', no spaces */
		if (*p == '@' || *p == ' ')
			*p = '-';
	pthread_mutex_init(&w->mu, NULL);
	aw_clock_cond_init(&w->hb_cv);
	aw_clock_cond_init(&w->cron_cv);
	pthread_cond_init(&w->solo_cv, NULL);
	pthread_cond_init(&w->gate_cv, NULL);
	aw_clock_cond_init(&w->reserve_cv);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	w->gate_cap = w->o.store_threads > 0 ? w->o.store_threads : cpus > 2 ? (int)cpus : 2;
	if (w->gate_cap > w->o.concurrency)
		w->gate_cap = w->o.concurrency;
	int host_places = w->o.host_store_threads > 0 ? w->o.host_store_threads
			  : cpus > 1		      ? (int)cpus
						      : 1;
	if (w->o.host_store_threads >= 0)
		w->host_gate = worker_host_gate(s, host_places);
	w->reserve = w->host_gate >= 0 && host_places >= 2;
	/* as many slow steps in flight as batch slots, within 16 .. 1024 */
	int solo = w->o.concurrency * w->o.batch;
	w->solo_cap = solo < 16 ? 16 : solo > 1024 ? 1024 : solo;
	if (!(w->solo = aw_calloc((size_t)w->solo_cap, sizeof(slot)))) {
		w->solo_cap = 0;
		shutdown_worker(w);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	w->hold = executor_instant_kinds();
	w->has_listener = strcmp(aw_store_backend(s), "postgres") == 0;
	w->nthreads = w->o.concurrency + 1;
	w->threads = aw_calloc((size_t)w->nthreads, sizeof *w->threads);
	for (int i = 0; w->threads && i < w->nthreads; i++) {
		w->threads[i].lane = i == w->o.concurrency;
		w->threads[i].w = w;
		w->threads[i].rng = worker_seed();
		w->threads[i].slots = aw_calloc((size_t)w->o.batch, sizeof(slot));
		if (!w->threads[i].slots) {
			shutdown_worker(w);
			return aw_fail(err, AW_E_NOMEM, "out of memory");
		}
	}
	if (!w->threads) {
		shutdown_worker(w);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	/* every thread started is recorded, so a failure stops exactly those */
	int rc = 0;
	for (int i = 0; !rc && i < w->nthreads; i++)
		if (!(rc = pthread_create(&w->threads[i].th, NULL, exec_main, &w->threads[i])))
			w->threads[i].started = 1;
	if (!rc && !(rc = pthread_create(&w->hb, NULL, worker_heartbeat_main, w)))
		w->hb_started = 1;
	if (!rc && w->has_listener &&
	    !(rc = pthread_create(&w->listener, NULL, worker_listen_main, w)))
		w->listener_started = 1;
	if (!rc && w->reserve && !(rc = pthread_create(&w->reserver, NULL, reserve_main, w)))
		w->reserver_started = 1;
	if (!rc && w->o.schedule_ms > 0 &&
	    !(rc = pthread_create(&w->cron, NULL, worker_scheduler_main, w)))
		w->cron_started = 1;
	if (rc) {
		shutdown_worker(w);
		return aw_fail(err, AW_E_INTERNAL, "cannot start a worker thread: %s",
			       strerror(rc));
	}
	aw_log(AW_LOG_INFO, NULL, "run worker started", "worker", w->id, NULL);
	*out = w;
	return AW_OK;
}

void aw_worker_stop(aw_worker *w)
{
	if (w)
		shutdown_worker(w);
}
