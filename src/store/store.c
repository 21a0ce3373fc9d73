/*
 * store.c - opening a store, the connection pool and transactions.
 *
 * The pool is a stack of idle connections under one mutex; connections are
 * opened lazily up to pool_size and a caller waits (bounded by its ctx deadline
 * and acquire_timeout_ms) for one to come back. A connection that comes back
 * broken, or inside a transaction, is closed rather than reused.
 *
 * The pool serves every tenant: a request's connections (its ctx's charge
 * names its project) are counted per project, and one project's requests
 * hold at most their bound at once (a quarter of the pool unless the
 * platform says otherwise). A request past it waits a moment for one of its
 * own project's connections, then is refused (E-STORE-007, 429), so a
 * tenant whose requests are slow holds its share and the rest of the pool
 * stays with the others. System work (relay, workers, reapers, recorders)
 * is not counted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "awooop/alloc.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/str.h"
#include "store_internal.h"

static const aw_driver *driver_for(const char *url)
{
	if (strncmp(url, "sqlite:", 7) == 0)
		return &driver_sqlite;
	if (strncmp(url, "postgresql://", 13) == 0 || strncmp(url, "postgres://", 11) == 0)
		return &driver_pg;
	return NULL;
}

aw_err aw_store_open(const char *url, const aw_store_opts *opts, aw_store **out, aw_error *err)
{
	const aw_driver *drv = url ? driver_for(url) : NULL;
	if (!drv)
		return aw_fail(err, AW_E_CONFIG, "--db must be sqlite:PATH or postgresql://...");
	aw_store *s = aw_calloc(1, sizeof *s);
	if (!s)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	s->drv = drv;
	s->pool_size = opts && opts->pool_size > 0 ? opts->pool_size : 8;
	s->acquire_timeout_ms =
		opts && opts->acquire_timeout_ms > 0 ? opts->acquire_timeout_ms : 5000;
	s->project_wait_ms = opts && opts->project_wait_ms > 0 ? opts->project_wait_ms : 500;
	long half = s->pool_size / 2 > 0 ? s->pool_size / 2 : 1;
	aw_err e = aw_bounds_parse(opts ? opts->project_pool : NULL, half, 1, 100000,
				   "--project-pool", &s->per_project, err);
	if (e) {
		free(s);
		return e;
	}
	s->url = aw_strdup(url);
	s->idle = aw_calloc((size_t)s->pool_size, sizeof *s->idle);
	s->pids = aw_calloc((size_t)s->pool_size, sizeof *s->pids);
	s->charges = aw_calloc((size_t)s->pool_size, sizeof *s->charges);
	if (!s->url || !s->idle || !s->pids || !s->charges) {
		aw_store_close(s);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	pthread_mutex_init(&s->mu, NULL);
	aw_clock_cond_init(&s->cv);
	pthread_mutex_init(&s->write_mu, NULL);
	s->serialize_writes = drv->dialect == AW_DIALECT_SQLITE;

	/* Open one connection now so a bad URL fails at start, not first request. */
	aw_conn *c = NULL;
	aw_ctx sys;
	aw_ctx_system(&sys, NULL);
	e = store_acquire(s, &sys, &c, NULL, err);
	if (e) {
		aw_store_close(s);
		return e;
	}
	store_release(s, c, -1);
	if (opts && opts->auto_migrate && (e = aw_store_migrate(s, NULL, err))) {
		aw_store_close(s);
		return e;
	}
	*out = s;
	return AW_OK;
}

void aw_store_close(aw_store *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nidle; i++)
		s->drv->disconnect(s->idle[i]);
	if (s->idle) {
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->write_mu);
	}
	free(s->idle);
	free(s->pids);
	free(s->charges);
	free(s->url);
	free(s);
}

const char *aw_store_backend(const aw_store *s)
{
	return s->drv->name;
}

void aw_store_where(const aw_store *s, char *out, size_t cap)
{
	const char *u = s->url;
	const char *rest = strstr(u, "://");
	if (strncmp(u, "sqlite:", 7) == 0 || !rest) {
		snprintf(out, cap, "%.*s", (int)strcspn(u, "?"), u);
		return;
	}
	rest += 3; /* [user[:password]@]host[:port][/db][?options] */
	const char *host = rest;
	for (size_t i = 0, auth = strcspn(rest, "/?"); i < auth; i++)
		if (rest[i] == '@') /* the last: a password may hold one */
			host = rest + i + 1;
	snprintf(out, cap, "postgres://%.*s", (int)strcspn(host, "?"), host);
}

/* Charged connections this thread holds: a transaction it opens inside one
 * (a nested one) is not held to the project's bound again - it would wait
 * for its own request. A transaction belongs to one thread (store.h). */
static _Thread_local int thread_charged;

static struct timespec after_ms(int64_t ms)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000;
	if (t.tv_nsec >= 1000000000) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000;
	}
	return t;
}

/* The slot of project's connections, -1 when it holds none; with make, a
 * free slot for it then (holds mu; one exists whenever a connection is
 * free: a slot in use holds at least one of the pool's connections). */
static int charge_slot(aw_store *s, const char *project, int make)
{
	int free_slot = -1;
	for (int i = 0; i < s->pool_size; i++) {
		if (s->charges[i].held && !strcmp(s->charges[i].project, project))
			return i;
		if (!s->charges[i].held && free_slot < 0)
			free_slot = i;
	}
	if (!make || free_slot < 0 || AW_STR_COPY(s->charges[free_slot].project, project) < 0)
		return -1; /* project: a ctx's charge, which fits */
	return free_slot;
}

/* Gives back slot's count (holds mu). */
static void uncharge(aw_store *s, int slot)
{
	if (slot < 0)
		return;
	s->charges[slot].held--;
	if (thread_charged > 0)
		thread_charged--;
}

/* Wakes the waiters a connection coming back may let through: one when
 * none waits on a project's bound, else all (the one a signal picks may be
 * of a project still at its bound) (holds mu). */
static void wake(aw_store *s)
{
	if (s->waiters)
		pthread_cond_broadcast(&s->cv);
	else
		pthread_cond_signal(&s->cv);
}

aw_err store_acquire(aw_store *s, const aw_ctx *ctx, aw_conn **out, int *charge, aw_error *err)
{
	int64_t wait_ms = s->acquire_timeout_ms;
	if (ctx && ctx->deadline_ns) {
		int64_t left = (ctx->deadline_ns - aw_clock_mono_ns()) / 1000000;
		if (left < wait_ms)
			wait_ms = left > 0 ? left : 0;
	}
	const char *project = charge && ctx && ctx->charge[0] ? ctx->charge : NULL;
	int bounded = project && !thread_charged;
	struct timespec until = after_ms(wait_ms);
	struct timespec puntil =
		after_ms(s->project_wait_ms < wait_ms ? s->project_wait_ms : wait_ms);
	if (charge)
		*charge = -1;

	pthread_mutex_lock(&s->mu);
	long bound = bounded ? aw_bounds_of(&s->per_project, project) : 0;
	for (;;) {
		int i = bounded ? charge_slot(s, project, 0) : -1;
		int over = i >= 0 && s->charges[i].held >= bound;
		int full = s->nidle == 0 && s->nopen >= s->pool_size;
		if (!over && !full)
			break;
		s->waiters += over;
		int rc = pthread_cond_timedwait(&s->cv, &s->mu, over ? &puntil : &until);
		s->waiters -= over;
		if (rc != ETIMEDOUT)
			continue;
		i = bounded ? charge_slot(s, project, 0) : -1;
		if (i >= 0 && s->charges[i].held >= bound) {
			pthread_mutex_unlock(&s->mu);
			return aw_fail(err, AW_E_STORE_PROJECT,
				       "this project's requests hold %ld store connections, their "
				       "bound; retry when one of them ends",
				       bound);
		}
		if (!over && s->nidle == 0 && s->nopen >= s->pool_size) {
			pthread_mutex_unlock(&s->mu);
			return aw_fail(err, AW_E_STORE_BUSY, "no store connection free in time");
		}
	}
	if (project) {
		int i = charge_slot(s, project, 1);
		if (i >= 0) {
			s->charges[i].held++;
			thread_charged++;
			*charge = i;
		}
	}
	if (s->nidle > 0) {
		*out = s->idle[--s->nidle];
		pthread_mutex_unlock(&s->mu);
		return AW_OK;
	}
	s->nopen++;
	pthread_mutex_unlock(&s->mu);

	aw_err e = s->drv->connect(s->url, out, err);
	int pid = !e && s->drv->backend_pid ? s->drv->backend_pid(*out) : 0;
	pthread_mutex_lock(&s->mu);
	if (e) {
		s->nopen--;
		if (charge) {
			uncharge(s, *charge);
			*charge = -1;
		}
		wake(s);
	} else if (pid > 0 && s->npids < s->pool_size) {
		s->pids[s->npids++] = pid;
	}
	pthread_mutex_unlock(&s->mu);
	return e;
}

void aw_store_project_held(aw_store *s, const char *project, int *held, long *bound)
{
	pthread_mutex_lock(&s->mu);
	int i = charge_slot(s, project, 0);
	*held = i >= 0 ? s->charges[i].held : 0;
	*bound = aw_bounds_of(&s->per_project, project);
	pthread_mutex_unlock(&s->mu);
}

int store_own_pid(void *arg, int pid)
{
	aw_store *s = arg;
	pthread_mutex_lock(&s->mu);
	int own = 0;
	for (int i = 0; i < s->npids && !own; i++)
		own = s->pids[i] == pid;
	pthread_mutex_unlock(&s->mu);
	return own;
}

void store_release(aw_store *s, aw_conn *c, int charge)
{
	if (!c)
		return;
	int keep = s->drv->healthy(c);
	int pid = !keep && s->drv->backend_pid ? s->drv->backend_pid(c) : 0;
	pthread_mutex_lock(&s->mu);
	uncharge(s, charge);
	if (keep) {
		s->idle[s->nidle++] = c;
	} else {
		s->nopen--;
		for (int i = 0; pid > 0 && i < s->npids; i++)
			if (s->pids[i] == pid) {
				s->pids[i] = s->pids[--s->npids];
				break;
			}
	}
	wake(s);
	pthread_mutex_unlock(&s->mu);
	if (!keep)
		s->drv->disconnect(c);
}

static aw_err timed_exec(aw_store *s, aw_conn *c, const char *sql, int n, const aw_val *p,
			 aw_rows **out, aw_error *err)
{
	int64_t t0 = aw_clock_mono_ns();
	aw_err e = s->drv->exec(c, sql, n, p, out, err);
	aw_metrics_store_observe(s->drv->name, (double)(aw_clock_mono_ns() - t0) / 1e9, e);
	return e;
}

aw_err aw_store_begin(aw_store *s, const aw_ctx *ctx, aw_txn_mode mode, aw_txn **out, aw_error *err)
{
	aw_txn *t = aw_calloc(1, sizeof *t);
	if (!t)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	t->s = s;
	t->ctx = *ctx;
	aw_err e = store_acquire(s, ctx, &t->c, &t->charge, err);
	if (e) {
		free(t);
		return e;
	}
	int64_t t0 = aw_clock_mono_ns();
	if (s->serialize_writes && mode == AW_TXN_WRITE) {
		pthread_mutex_lock(&s->write_mu);
		t->holds_write_mu = 1;
	}
	e = s->drv->begin(t->c, ctx->project, mode == AW_TXN_WRITE, err);
	aw_metrics_store_observe(s->drv->name, (double)(aw_clock_mono_ns() - t0) / 1e9, e);
	if (e) {
		if (t->holds_write_mu)
			pthread_mutex_unlock(&s->write_mu);
		store_release(s, t->c, t->charge);
		free(t);
		return e;
	}
	*out = t;
	return AW_OK;
}

aw_err aw_store_commit(aw_txn *t, aw_error *err)
{
	aw_err e = t->s->drv->script(t->c, "COMMIT", err);
	if (e)
		t->s->drv->script(t->c, "ROLLBACK", NULL);
	if (t->holds_write_mu)
		pthread_mutex_unlock(&t->s->write_mu);
	store_release(t->s, t->c, t->charge);
	free(t);
	return e;
}

void aw_store_rollback(aw_txn *t)
{
	if (!t)
		return;
	t->s->drv->script(t->c, "ROLLBACK", NULL);
	if (t->holds_write_mu)
		pthread_mutex_unlock(&t->s->write_mu);
	store_release(t->s, t->c, t->charge);
	free(t);
}

aw_err aw_txn_set_ctx(aw_txn *t, const aw_ctx *ctx, aw_error *err)
{
	t->ctx = *ctx;
	if (t->s->drv->dialect != AW_DIALECT_PG)
		return AW_OK;
	aw_val p[] = {AW_TEXT(ctx->project)};
	return txn_defer(t, "SELECT set_config('awooop.project_id', $1, true)", 1, p, err);
}

aw_err txn_exec(aw_txn *t, const char *sql, int n, const aw_val *p, aw_rows **out, aw_error *err)
{
	return timed_exec(t->s, t->c, sql, n, p, out, err);
}

aw_err txn_defer_rows(aw_txn *t, const char *sql, int n, const aw_val *p,
		      void (*sink)(const aw_rows *r, void *arg), void *arg, aw_error *err)
{
	if (t->s->drv->defer)
		return t->s->drv->defer(t->c, sql, n, p, sink, arg, err);
	aw_rows *r = NULL;
	aw_err e = timed_exec(t->s, t->c, sql, n, p, sink ? &r : NULL, err);
	if (!e && sink)
		sink(r, arg);
	rows_free(r);
	return e;
}

aw_err txn_defer(aw_txn *t, const char *sql, int n, const aw_val *p, aw_error *err)
{
	return txn_defer_rows(t, sql, n, p, NULL, NULL, err);
}

aw_dialect txn_dialect(const aw_txn *t)
{
	return t->s->drv->dialect;
}

aw_err store_exec1(aw_store *s, const aw_ctx *ctx, const char *sql, int n, const aw_val *p,
		   aw_rows **out, aw_error *err)
{
	aw_conn *c = NULL;
	int charge = -1;
	aw_err e = store_acquire(s, ctx, &c, &charge, err);
	if (e)
		return e;
	e = timed_exec(s, c, sql, n, p, out, err);
	store_release(s, c, charge);
	return e;
}

aw_err aw_store_ping(aw_store *s, aw_error *err)
{
	aw_ctx sys;
	aw_ctx_system(&sys, NULL);
	sys.deadline_ns = aw_clock_mono_ns() + 2000000000LL;
	return store_exec1(s, &sys, "SELECT 1", 0, NULL, NULL, err);
}

long long cell_ll(const aw_rows *r, int row, int col)
{
	const char *v = rows_get(r, row, col);
	char *end = NULL;
	long long n = v ? strtoll(v, &end, 10) : 0;
	return v && *end == '\0' ? n : 0;
}

void cell_copy(char *dst, size_t cap, const aw_rows *r, int row, int col)
{
	const char *v = rows_get(r, row, col);
	size_t n = v ? strlen(v) : 0;
	if (n >= cap) { /* a field narrower than what was stored: said, never quietly */
		char c[16];
		snprintf(c, sizeof c, "%d", col);
		aw_log(AW_LOG_ERROR, NULL, "a stored value is longer than its field: cut", "column",
		       c, NULL);
		n = cap - 1;
	}
	if (n)
		memcpy(dst, v, n);
	dst[n] = '\0';
}

void sql_params(char *sql, size_t cap, int *o, int first, int n)
{
	for (int i = 0; i < n; i++)
		*o += snprintf(sql + *o, cap - (size_t)*o, "%s$%d", i ? ", " : "", first + i);
}

aw_err rows_to_array(aw_rows *r, size_t elem, const aw_text_field *fields, int nfields, void **out,
		     int *n, aw_error *err)
{
	char *arr = aw_calloc((size_t)r->nrows + 1, elem);
	if (!arr) {
		rows_free(r);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	for (int i = 0; i < r->nrows; i++)
		for (int c = 0; c < nfields; c++)
			cell_copy(arr + (size_t)i * elem + fields[c].off, fields[c].cap, r, i, c);
	*out = arr;
	*n = r->nrows;
	rows_free(r);
	return AW_OK;
}
