/*
 * bench_runs.c - helpers of bench/runs/run.sh and bench/drill-runs/run.sh:
 *   bench_runs load URL PROJECT N THREADS [WORKFLOW_JSON]
 *       submits N runs (default workflow: one noop step) from THREADS threads
 *   bench_runs flood URL PROJECT N
 *       submits N no-op runs in bulk (aw_run_submit_batch, 1,000 a transaction)
 *       from one thread and prints the rate
 *   bench_runs paced URL PROJECT N INTERVAL_MS [CONCURRENCY BATCH]
 *       submits N no-op runs, one every INTERVAL_MS (after BENCH_WARMUP
 *       runs whose input is "warmup", when set); with CONCURRENCY the
 *       process hosts a worker too (as `serve` with its API and a worker
 *       role does) and returns once its N runs finished
 *   bench_runs latency URL PROJECT N CONCURRENCY
 *       runs an in-process worker (CONCURRENCY threads), submits N runs one
 *       after another and prints the submit -> step start latency p50/p99 (ms)
 *   bench_runs wait PG_URL SQL
 *       polls SQL every 100 ms over one connection until it answers 0 (the
 *       burn-downs' "is everything done?": a psql started ten times a
 *       second, each with a TLS handshake, took a sixth of the 2 cores)
 *   bench_runs counter PORT OUTFILE [DELAY_MS]
 *       the counting HTTP server of the crash drill (answers after DELAY_MS); on SIGTERM writes
 *       {"requests", "keys", "unkeyed"} to OUTFILE and "KEY COUNT" lines to
 *       OUTFILE.keys
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "awooop/clock.h"
#include "awooop/run.h"
#include "awooop/worker.h"
#include "awooop/executor.h"
#include "awooop/tenancy.h"
#include "counter.h"

static aw_store *open_store(const char *url)
{
	aw_store *s = NULL;
	aw_error err = {0};
	aw_store_opts o = {.pool_size = 16, .auto_migrate = strncmp(url, "sqlite:", 7) == 0};
	if (aw_store_open(url, &o, &s, &err)) {
		fprintf(stderr, "bench_runs: %s\n", err.msg);
		exit(1);
	}
	return s;
}

static void ensure_project(aw_store *s, const char *p)
{
	aw_ctx admin;
	aw_ctx_system(&admin, NULL);
	aw_error err = {0};
	aw_err e = aw_project_create(s, &admin, p, NULL, &err);
	if (e && e != AW_E_TENANT_EXISTS) {
		fprintf(stderr, "bench_runs: project: %s\n", err.msg);
		exit(1);
	}
}

static aw_store *S;
static const char *PROJECT, *WORKFLOW;
static int N, THREADS;

static void submit_one(const char *body, char *id)
{
	aw_ctx c;
	aw_ctx_system(&c, PROJECT);
	aw_trace_new(&c.trace);
	aw_run_request req;
	aw_error err = {0};
	aw_run run;
	int replayed;
	if (aw_run_request_decode(body, strlen(body), &req, &err) ||
	    aw_run_submit(S, &c, &req, NULL, &run, &replayed, &err)) {
		fprintf(stderr, "bench_runs: submit: %s %s\n", err.where, err.msg);
		exit(1);
	}
	aw_run_request_free(&req);
	if (id)
		strcpy(id, run.run_id);
	aw_run_free(&run);
}

static void *load_thread(void *arg)
{
	long t = (long)arg;
	char body[4096];
	for (int i = (int)t; i < N; i += THREADS) {
		snprintf(body, sizeof body, "{\"workflow\":%s,\"input\":{\"i\":%d}}", WORKFLOW, i);
		submit_one(body, NULL);
	}
	return NULL;
}

static int flood(void)
{
	aw_ctx c;
	aw_ctx_system(&c, PROJECT);
	aw_run_batch_item *it = calloc(AW_RUN_BATCH_MAX, sizeof *it);
	int64_t t0 = aw_clock_mono_ns();
	for (int done = 0; it && done < N;) {
		int n = N - done < AW_RUN_BATCH_MAX ? N - done : AW_RUN_BATCH_MAX;
		aw_error err = {0};
		for (int i = 0; i < n; i++) {
			char body[96];
			int len = snprintf(body, sizeof body,
					   "{\"workflow\":[{\"kind\":\"noop\"}],\"input\":%d}",
					   done + i);
			memset(&it[i], 0, sizeof it[i]);
			if (aw_run_request_decode(body, (size_t)len, &it[i].req, &err))
				return fprintf(stderr, "bench_runs: %s\n", err.msg), 1;
		}
		aw_trace_new(&c.trace);
		aw_err e = aw_run_submit_batch(S, &c, it, n, &err);
		for (int i = 0; i < n; i++) {
			if (!e && it[i].err.err)
				fprintf(stderr, "bench_runs: item: %s\n", it[i].err.msg);
			if (!e)
				aw_run_free(&it[i].run);
			aw_run_request_free(&it[i].req);
		}
		if (e)
			return fprintf(stderr, "bench_runs: batch: %s\n", err.msg), 1;
		done += n;
	}
	free(it);
	double ms = (double)(aw_clock_mono_ns() - t0) / 1e6;
	printf("flood: %d runs in %.0f ms, %.0f runs/s\n", N, ms, ms > 0 ? N * 1000.0 / ms : 0);
	return 0;
}

static int paced(int interval_ms, int conc, int batch)
{
	aw_worker *w = NULL;
	aw_error err = {0};
	aw_worker_opts o = {.concurrency = conc, .batch = batch};
	if (conc > 0 && aw_worker_start(S, &o, &w, &err)) {
		fprintf(stderr, "bench_runs: %s\n", err.msg);
		return 1;
	}
	/* BENCH_WARMUP runs first, at the same pace, with input "warmup": the
	 * first submissions of a process (and the first runs a worker's
	 * connections move) prepare their statements and compile the chain
	 * append - once per connection, not the steady state being measured */
	const char *wu = getenv("BENCH_WARMUP");
	int warm = wu ? atoi(wu) : 0;
	char(*ids)[AW_UUID_STR_LEN + 1] = calloc((size_t)N + 1, sizeof *ids);
	for (int i = -warm; ids && i < N; i++) {
		char body[96];
		int64_t t0 = aw_clock_mono_ns();
		if (i < 0)
			snprintf(body, sizeof body,
				 "{\"workflow\":[{\"kind\":\"noop\"}],\"input\":\"warmup\"}");
		else
			snprintf(body, sizeof body,
				 "{\"workflow\":[{\"kind\":\"noop\"}],\"input\":%d}", i);
		submit_one(body, i < 0 ? NULL : ids[i]);
		int64_t left = (int64_t)interval_ms * 1000000 - (aw_clock_mono_ns() - t0);
		if (left > 0)
			nanosleep(&(struct timespec){left / 1000000000, left % 1000000000}, NULL);
	}
	aw_ctx c;
	aw_ctx_system(&c, PROJECT);
	for (int i = 0; w && ids && i < N; i++) { /* the hosted worker stays until they end */
		aw_run r;
		if (aw_run_get(S, &c, ids[i], &r, NULL, NULL, &err) == AW_OK) {
			aw_run_state st;
			int open =
				aw_run_state_parse(r.state, &st) == 0 && !aw_run_state_terminal(st);
			aw_run_free(&r);
			if (open) {
				nanosleep(&(struct timespec){0, 20000000}, NULL);
				i--;
			}
		}
	}
	if (w)
		aw_worker_stop(w);
	free(ids);
	return 0;
}

/* ---- latency: an executor that notes when its step starts ---- */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static char marked[AW_UUID_STR_LEN + 1];
static int64_t marked_ns;

static aw_err mark_run(const aw_step_call *c, json_t **result, aw_error *err)
{
	int64_t now = aw_clock_mono_ns();
	pthread_mutex_lock(&mu);
	snprintf(marked, sizeof marked, "%s", c->run_id);
	marked_ns = now;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	*result = json_object();
	return AW_OK;
}

static const aw_executor mark = {.kind = "mark", .instant = 1, .run = mark_run};

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int latency(int conc)
{
	aw_executor_register(&mark);
	aw_worker_opts o = {.concurrency = conc};
	aw_worker *w = NULL;
	aw_error err = {0};
	if (aw_worker_start(S, &o, &w, &err)) {
		fprintf(stderr, "bench_runs: %s\n", err.msg);
		return 1;
	}
	double *lat = calloc((size_t)N, sizeof *lat), *sub = calloc((size_t)N, sizeof *sub);
	char id[AW_UUID_STR_LEN + 1];
	for (int i = 0; i < N; i++) {
		char body[128];
		snprintf(body, sizeof body, "{\"workflow\":[{\"kind\":\"mark\"}],\"input\":%d}", i);
		int64_t t0 = aw_clock_mono_ns();
		submit_one(body, id);
		sub[i] = (double)(aw_clock_mono_ns() - t0) / 1e6;
		pthread_mutex_lock(&mu);
		while (strcmp(marked, id) != 0)
			pthread_cond_wait(&cv, &mu);
		lat[i] = (double)(marked_ns - t0) / 1e6;
		pthread_mutex_unlock(&mu);
	}
	aw_worker_stop(w);
	qsort(lat, (size_t)N, sizeof *lat, cmp);
	qsort(sub, (size_t)N, sizeof *sub, cmp);
	printf("{\"n\": %d, \"p50_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f,"
	       " \"submit_p50_ms\": %.3f}\n",
	       N, lat[N / 2], lat[(int)(N * 0.99)], lat[N - 1], sub[N / 2]);
	free(lat);
	free(sub);
	return 0;
}

static volatile sig_atomic_t stop;
static void on_term(int sig)
{
	stop = 1;
}

static int counter(int port, const char *out, int delay_ms)
{
	aw_counter *c = aw_counter_start(port, delay_ms);
	if (!c) {
		fprintf(stderr, "bench_runs: cannot listen on %d\n", port);
		return 1;
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	fprintf(stderr, "counter listening on %d\n", aw_counter_port(c));
	while (!stop)
		pause();
	int64_t req, keys, unkeyed;
	aw_counter_totals(c, &req, &keys, &unkeyed);
	FILE *f = fopen(out, "w");
	if (f) {
		fprintf(f, "{\"requests\": %lld, \"keys\": %lld, \"unkeyed\": %lld}\n",
			(long long)req, (long long)keys, (long long)unkeyed);
		fclose(f);
	}
	char path[512];
	snprintf(path, sizeof path, "%s.keys", out);
	if ((f = fopen(path, "w"))) {
		aw_counter_dump(c, f);
		fclose(f);
	}
	aw_counter_stop(c);
	return 0;
}

static int wait_zero(const char *url, const char *sql)
{
	PGconn *c = PQconnectdb(url);
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "bench_runs: wait: %s", PQerrorMessage(c));
		PQfinish(c);
		return 1;
	}
	int rc = 1;
	for (;;) {
		PGresult *r = PQexec(c, sql);
		int ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
		int zero = ok && strcmp(PQgetvalue(r, 0, 0), "0") == 0;
		if (!ok)
			fprintf(stderr, "bench_runs: wait: %s", PQerrorMessage(c));
		PQclear(r);
		if (!ok || zero) {
			rc = !ok;
			break;
		}
		nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
	}
	PQfinish(c);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "wait") == 0)
		return wait_zero(argv[2], argv[3]);
	if (argc >= 4 && strcmp(argv[1], "counter") == 0)
		return counter(atoi(argv[2]), argv[3], argc > 4 ? atoi(argv[4]) : 0);
	if (argc < 5) {
		fprintf(stderr,
			"usage: bench_runs load URL PROJECT N [THREADS] [WORKFLOW]\n"
			"       bench_runs flood URL PROJECT N\n"
			"       bench_runs paced URL PROJECT N INTERVAL_MS [CONCURRENCY BATCH]\n"
			"       bench_runs latency URL PROJECT N [CONCURRENCY]\n"
			"       bench_runs wait PG_URL SQL\n"
			"       bench_runs counter PORT OUTFILE [DELAY_MS]\n");
		return 2;
	}
	S = open_store(argv[2]);
	PROJECT = argv[3];
	N = atoi(argv[4]);
	ensure_project(S, PROJECT);
	int rc = 0;
	if (strcmp(argv[1], "load") == 0) {
		THREADS = argc > 5 ? atoi(argv[5]) : 4;
		WORKFLOW = argc > 6 ? argv[6] : "[{\"kind\":\"noop\"}]";
		pthread_t th[64];
		if (THREADS < 1 || THREADS > 64)
			THREADS = 4;
		int64_t t0 = aw_clock_mono_ns();
		for (long t = 0; t < THREADS; t++)
			pthread_create(&th[t], NULL, load_thread, (void *)t);
		for (int t = 0; t < THREADS; t++)
			pthread_join(th[t], NULL);
		double s = (double)(aw_clock_mono_ns() - t0) / 1e9;
		fprintf(stderr, "loaded %d runs in %.2f s (%.0f submissions/s)\n", N, s, N / s);
	} else if (strcmp(argv[1], "flood") == 0) {
		rc = flood();
	} else if (strcmp(argv[1], "paced") == 0) {
		rc = paced(argc > 5 ? atoi(argv[5]) : 20, argc > 6 ? atoi(argv[6]) : 0,
			   argc > 7 ? atoi(argv[7]) : 0);
	} else if (strcmp(argv[1], "latency") == 0) {
		rc = latency(argc > 5 ? atoi(argv[5]) : 4);
	} else {
		rc = 2;
	}
	aw_store_close(S);
	return rc;
}
