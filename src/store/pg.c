/*
 * pg.c - the cluster store backend (libpq).
 *
 * Each connection runs with search_path=awooop, TimeZone=UTC and DateStyle=ISO.
 * Tenant isolation is enforced by PostgreSQL itself: every transaction opens with
 * SET LOCAL awooop.project_id, and FORCE ROW LEVEL SECURITY policies on every
 * tenant table compare project_id with it. A transaction opened without a project
 * sees no tenant rows (fail closed). Cross-tenant reads that the platform needs
 * (key lookup by hash, project list) go through SECURITY DEFINER functions
 * created by the migrations, never by switching RLS off.
 */
#include <libpq-fe.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/clock.h"
#include "awooop/str.h"
#include "driver.h"

#define TIMESTAMPTZOID 1184

/* A statement whose result nobody waits for (txn_defer): sent with the
 * next statement that is waited for, or with COMMIT, in one pipeline. */
typedef struct {
	char *sql;
	int n;
	char **vals;
	void (*sink)(const aw_rows *r, void *arg); /* wants its rows */
	void *arg;
} deferred;

#define PREP_CACHE 128 /* a power of two */
#define MAX_SINKS 8    /* deferred statements that want their rows, per pipeline */

struct aw_conn {
	PGconn *pg;
	/* the connection's prepared statements (a direct-mapped cache by the
	 * SQL's hash): parsing and planning anew is a good part of what a short
	 * statement costs the server; names are never reused */
	struct {
		char *sql;
		char name[16];
		int fresh; /* prepared in the pipeline in flight */
	} prep[PREP_CACHE];
	unsigned nprep;
	/* BEGIN is not sent on its own: it goes out with the first statement of
	 * the transaction (one round trip less per transaction) */
	int begin_pending;
	char project[128];
	deferred *q;
	int nq, capq;
	int64_t opened_ns, replan_ns; /* see replan_due */
};

/* A prepared statement's plan, and each statement's of a PL/pgSQL function,
 * is kept for the session and made again only when the tables' statistics
 * change (ANALYZE, VACUUM - autovacuum's pace: a minute or more). A plan
 * made over a table that was still empty - a worker started on a fresh
 * database, before its first runs - is a sequential scan, or an index scan
 * that filters a whole project's runs, where the runs are looked up by id;
 * at 20,000 runs such a claim read 540 pages for a few runs (3.1 ms against
 * 0.5) and the round's compare-and-set 4,000 (6.5 ms against 0.3), and the
 * runs of a tenant submitting 1,500 a second waited 77-269 ms (p99) for
 * workers that fell behind. So the plans are dropped (DISCARD PLANS: the
 * statements stay prepared) when the connection is 1, 2, 4 ... 1,024
 * seconds old, then every REPLAN_MAX_S: the planner sees the tables' pages
 * as they are then, statistics or not. Each costs a few planned statements
 * (the claim's ~1-3 ms). */
#define REPLAN_MAX_S 600

static int replan_due(aw_conn *c, int64_t now)
{
	if (now < c->replan_ns)
		return 0;
	int64_t age = now - c->opened_ns, max = (int64_t)REPLAN_MAX_S * 1000000000;
	c->replan_ns = now + (age < max ? age : max);
	return 1;
}

static aw_err map_result(PGconn *pg, PGresult *res, aw_error *err)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	if (!msg)
		msg = PQerrorMessage(pg);
	if (PQstatus(pg) != CONNECTION_OK || !state)
		return aw_fail(err, AW_E_STORE_UNAVAILABLE, "postgres connection lost");
	if (strcmp(state, "23505") == 0 || strcmp(state, "23503") == 0)
		return aw_fail(err, AW_E_STORE_CONFLICT, "conflicting row");
	if (strcmp(state, "42501") == 0)
		return aw_fail(err, AW_E_STORE_DENIED, "permission denied by the database");
	if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 ||
	    strcmp(state, "55P03") == 0)
		return aw_fail(err, AW_E_STORE_BUSY, "transaction conflict, retry");
	if (strncmp(state, "08", 2) == 0 || strcmp(state, "57P01") == 0)
		return aw_fail(err, AW_E_STORE_UNAVAILABLE, "postgres unavailable");
	return aw_fail(err, AW_E_STORE_QUERY, "postgres %s: %s", state, msg ? msg : "?");
}

static aw_err pg_pipeline_end(aw_conn *c, const char *sql, aw_error *err);

static aw_err pg_script(aw_conn *c, const char *sql, aw_error *err)
{
	if (c->begin_pending || c->nq)
		return pg_pipeline_end(c, sql, err);
	PGresult *res = PQexec(c->pg, sql);
	ExecStatusType st = PQresultStatus(res);
	aw_err e = AW_OK;
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		e = map_result(c->pg, res, err);
	PQclear(res);
	return e;
}

static void quiet_notice(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

static aw_err pg_connect(const char *url, aw_conn **out, aw_error *err)
{
	aw_conn *c = aw_calloc(1, sizeof *c);
	if (!c)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	c->pg = PQconnectdb(url);
	if (!c->pg || PQstatus(c->pg) != CONNECTION_OK) {
		/* libpq's message can echo the URL's host but never its password */
		aw_err e = aw_fail(err, AW_E_STORE_UNAVAILABLE, "cannot connect to postgres: %s",
				   c->pg ? PQerrorMessage(c->pg) : "out of memory");
		PQfinish(c->pg);
		free(c);
		return e;
	}
	PQsetNoticeProcessor(c->pg, quiet_notice, NULL);
	c->opened_ns = aw_clock_mono_ns();
	c->replan_ns = c->opened_ns + 1000000000;
	/* JIT off: every statement here is short, and a generic plan's estimate
	 * (the claim's, over tables without statistics yet) could cross
	 * jit_above_cost and compile for hundreds of ms at each execution */
	aw_err e = pg_script(c,
			     "SET search_path = awooop, pg_catalog;"
			     "SET TIME ZONE 'UTC'; SET DateStyle = 'ISO'; SET jit = off;",
			     err);
	if (e) {
		PQfinish(c->pg);
		free(c);
		return e;
	}
	*out = c;
	return AW_OK;
}

static void clear_pending(aw_conn *c);

static void prepared_clear(aw_conn *c);

static void pg_disconnect(aw_conn *c)
{
	if (!c)
		return;
	clear_pending(c);
	free(c->q);
	prepared_clear(c);
	PQfinish(c->pg);
	free(c);
}

static int pg_healthy(aw_conn *c)
{
	return c && PQstatus(c->pg) == CONNECTION_OK &&
	       PQtransactionStatus(c->pg) != PQTRANS_UNKNOWN;
}

/* "2026-11-29 09:54:27.1234+00" -> "2026-11-29T09:54:27.123Z" */
static char *norm_ts(const char *v)
{
	size_t n = strlen(v);
	if (n < 19)
		return aw_strdup(v);
	char *o = aw_malloc(25);
	if (!o)
		return NULL;
	memcpy(o, v, 19);
	o[10] = 'T';
	o[19] = '.';
	const char *f = v[19] == '.' ? v + 20 : "";
	for (int i = 0; i < 3; i++)
		o[20 + i] = (*f >= '0' && *f <= '9') ? *f++ : '0';
	o[23] = 'Z';
	o[24] = '\0';
	return o;
}

/* Materialises a result (caller keeps res). */
static aw_err rows_from(PGconn *pg, PGresult *res, aw_rows **out, aw_error *err)
{
	ExecStatusType st = PQresultStatus(res);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		return map_result(pg, res, err);
	if (!out)
		return AW_OK;
	int nrows = PQntuples(res), ncols = PQnfields(res);
	const char *aff = PQcmdTuples(res);
	size_t total = (size_t)nrows * (size_t)ncols, ncells = 0;
	char **cells = aw_calloc(total ? total : 1, sizeof *cells);
	aw_err e = AW_OK;
	if (!cells)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	for (int r = 0; r < nrows && !e; r++) {
		for (int col = 0; col < ncols; col++, ncells++) {
			if (PQgetisnull(res, r, col))
				continue;
			const char *v = PQgetvalue(res, r, col);
			cells[ncells] =
				PQftype(res, col) == TIMESTAMPTZOID ? norm_ts(v) : aw_strdup(v);
			if (!cells[ncells]) {
				e = aw_fail(err, AW_E_NOMEM, "out of memory");
				break;
			}
		}
	}
	if (!e && !(*out = rows_new(nrows, ncols, cells, aff && *aff ? strtoll(aff, NULL, 10) : 0)))
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	if (e) {
		for (size_t i = 0; i < total; i++)
			free(cells[i]);
		free(cells);
	}
	return e;
}

/* Text values of the parameters; vals[i] points into numbuf for integers. */
static void param_values(int n, const aw_val *p, char (*numbuf)[24], const char **vals)
{
	for (int i = 0; i < n; i++) {
		switch (p[i].t) {
		case AW_V_TEXT: vals[i] = p[i].s; break;
		case AW_V_INT:
			snprintf(numbuf[i], sizeof numbuf[i], "%lld", (long long)p[i].i);
			vals[i] = numbuf[i];
			break;
		default: vals[i] = NULL;
		}
	}
}

static void clear_pending(aw_conn *c)
{
	for (int i = 0; i < c->nq; i++) {
		for (int k = 0; k < c->q[i].n; k++)
			free(c->q[i].vals[k]);
		free(c->q[i].vals);
		free(c->q[i].sql);
	}
	c->nq = 0;
	c->begin_pending = 0;
}

/* Sends sql as the connection's prepared statement, preparing it first (in
 * the same pipeline) when it is not yet; the slot's former statement is
 * deallocated. Every statement of a pipeline goes this way, BEGIN, the
 * tenant setting and COMMIT too: parsing them anew was a share of each
 * short transaction. *sent counts the results to read. */
static int send_prepared(aw_conn *c, const char *sql, int n, const char *const *vals, int *sent)
{
	PGconn *pg = c->pg;
	unsigned i = sql_slot(sql, PREP_CACHE);
	if (!c->prep[i].sql || strcmp(c->prep[i].sql, sql)) {
		char *copy = aw_strdup(sql);
		if (!copy) { /* unprepared, then */
			*sent += 1;
			return PQsendQueryParams(pg, sql, n, NULL, vals, NULL, NULL, 0);
		}
		if (c->prep[i].sql) {
			char dealloc[40];
			snprintf(dealloc, sizeof dealloc, "DEALLOCATE %s", c->prep[i].name);
			if (!PQsendQueryParams(pg, dealloc, 0, NULL, NULL, NULL, NULL, 0)) {
				free(copy);
				return 0;
			}
			*sent += 1;
			free(c->prep[i].sql);
		}
		c->prep[i].sql = copy;
		c->prep[i].fresh = 1;
		snprintf(c->prep[i].name, sizeof c->prep[i].name, "aw%u", c->nprep++);
		if (!PQsendPrepare(pg, c->prep[i].name, sql, n, NULL))
			return 0;
		*sent += 1;
	}
	*sent += 1;
	return PQsendQueryPrepared(pg, c->prep[i].name, n, vals, NULL, NULL, 0);
}

/* After a pipeline: the statements it prepared are kept when it succeeded,
 * forgotten when it failed (their Parse may have been skipped). */
static void prepared_settle(aw_conn *c, int ok)
{
	for (int i = 0; i < PREP_CACHE; i++) {
		if (!c->prep[i].fresh)
			continue;
		c->prep[i].fresh = 0;
		if (!ok) {
			free(c->prep[i].sql);
			c->prep[i].sql = NULL;
		}
	}
}

static void prepared_clear(aw_conn *c)
{
	for (int i = 0; i < PREP_CACHE; i++) {
		free(c->prep[i].sql);
		c->prep[i].sql = NULL;
	}
}

/* Sends the pending BEGIN, the deferred statements and then sql (when not
 * NULL) in one pipeline; *out gets the last statement's rows. The first
 * error wins (the server skips the rest of the pipeline after it). */
static aw_err pipeline(aw_conn *c, const char *sql, int n, const char *const *vals, aw_rows **out,
		       aw_error *err)
{
	PGconn *pg = c->pg;
	aw_err e = AW_OK;
	int sent = 0, ok = PQenterPipelineMode(pg);
	/* the deferred statements that want their rows (pg_defer keeps them
	 * within MAX_SINKS): their result's index, their sink */
	struct sink_at {
		int at;
		void (*sink)(const aw_rows *r, void *arg);
		void *arg;
	} sinks[MAX_SINKS];
	int nsinks = 0;
	if (ok && c->begin_pending) {
		if (replan_due(c, aw_clock_mono_ns())) {
			ok = PQsendQueryParams(pg, "DISCARD PLANS", 0, NULL, NULL, NULL, NULL, 0);
			sent += ok;
		}
		ok = ok && send_prepared(c, "BEGIN", 0, NULL, &sent);
		if (ok && c->project[0]) {
			const char *pv[] = {c->project};
			ok = send_prepared(c, "SELECT set_config('awooop.project_id', $1, true)", 1,
					   pv, &sent);
		}
	}
	for (int i = 0; ok && i < c->nq; i++) {
		ok = send_prepared(c, c->q[i].sql, c->q[i].n, (const char *const *)c->q[i].vals,
				   &sent);
		if (c->q[i].sink && nsinks < MAX_SINKS)
			sinks[nsinks++] = (struct sink_at){sent - 1, c->q[i].sink, c->q[i].arg};
	}
	int last = -1; /* the index of sql's result */
	if (ok && sql) {
		ok = send_prepared(c, sql, n, vals, &sent);
		last = sent - 1;
	}
	clear_pending(c);
	/* always sync what was queued, or its results would never arrive */
	if (!PQpipelineSync(pg) || !ok)
		e = aw_fail(err, AW_E_STORE_UNAVAILABLE, "postgres connection lost");
	/* one result (then NULL) per statement sent, then the sync */
	for (int i = 0; i < sent; i++) {
		PGresult *res;
		while ((res = PQgetResult(pg))) {
			ExecStatusType st = PQresultStatus(res);
			if (!e && st == PGRES_PIPELINE_ABORTED)
				e = aw_fail(err, AW_E_STORE_QUERY, "postgres pipeline aborted");
			else if (!e) {
				aw_rows *r = NULL;
				int k = 0;
				while (k < nsinks && sinks[k].at != i)
					k++;
				e = rows_from(pg, res,
					      i == last	   ? out
					      : k < nsinks ? &r
							   : NULL,
					      err);
				if (!e && k < nsinks)
					sinks[k].sink(r, sinks[k].arg);
				rows_free(r);
			}
			PQclear(res);
		}
	}
	PGresult *res;
	while ((res = PQgetResult(pg))) { /* PGRES_PIPELINE_SYNC */
		int sync = PQresultStatus(res) == PGRES_PIPELINE_SYNC;
		PQclear(res);
		if (sync)
			break;
	}
	PQexitPipelineMode(pg);
	prepared_settle(c, e == AW_OK);
	return e;
}

static aw_err pg_exec(aw_conn *c, const char *sql, int n, const aw_val *p, aw_rows **out,
		      aw_error *err)
{
	/* small statements use the stack; batches (runs, audit) allocate */
	char sbuf[16][24], (*numbuf)[24] = sbuf;
	const char *svals[16] = {0}, **vals = svals;
	if (n > 16) {
		numbuf = aw_malloc(sizeof *numbuf * (size_t)n);
		vals = aw_malloc(sizeof *vals * (size_t)n);
		if (!numbuf || !vals) {
			free(numbuf);
			free(vals);
			return aw_fail(err, AW_E_NOMEM, "out of memory");
		}
	}
	param_values(n, p, numbuf, vals);
	aw_err e = pipeline(c, sql, n, vals, out, err);
	if (n > 16) {
		free(numbuf);
		free(vals);
	}
	return e;
}

/* COMMIT goes out with what is pending; a ROLLBACK of a transaction that
 * never reached the server costs nothing; anything else flushes first. */
static aw_err pg_pipeline_end(aw_conn *c, const char *sql, aw_error *err)
{
	if (strcmp(sql, "ROLLBACK") == 0 && c->begin_pending) {
		clear_pending(c);
		return AW_OK;
	}
	if (strcmp(sql, "ROLLBACK") == 0)
		clear_pending(c);
	else if (strcmp(sql, "COMMIT") == 0)
		return c->begin_pending && !c->nq ? (clear_pending(c), AW_OK)
						  : pipeline(c, "COMMIT", 0, NULL, NULL, err);
	else if (c->begin_pending || c->nq) {
		aw_err e = pipeline(c, NULL, 0, NULL, NULL, err);
		if (e)
			return e;
	}
	return pg_script(c, sql, err);
}

static aw_err pg_defer(aw_conn *c, const char *sql, int n, const aw_val *p,
		       void (*sink)(const aw_rows *r, void *arg), void *arg, aw_error *err)
{
	int nsinks = 0;
	for (int i = 0; sink && i < c->nq; i++)
		nsinks += c->q[i].sink != NULL;
	if (nsinks == MAX_SINKS) { /* the rows of those wait no longer */
		aw_err e = pipeline(c, NULL, 0, NULL, NULL, err);
		if (e)
			return e;
	}
	if (c->nq == c->capq) {
		int cap = c->capq ? c->capq * 2 : 8;
		deferred *q = aw_realloc(c->q, sizeof *q * (size_t)cap);
		if (!q)
			return aw_fail(err, AW_E_NOMEM, "out of memory");
		c->q = q;
		c->capq = cap;
	}
	deferred *d = &c->q[c->nq];
	d->n = n;
	d->sink = sink;
	d->arg = arg;
	d->sql = aw_strdup(sql);
	d->vals = aw_calloc((size_t)n + 1, sizeof *d->vals);
	int bad = !d->sql || !d->vals;
	for (int i = 0; !bad && i < n; i++) {
		char num[24];
		if (p[i].t == AW_V_NULL)
			continue;
		if (p[i].t == AW_V_INT)
			snprintf(num, sizeof num, "%lld", (long long)p[i].i);
		bad |= !(d->vals[i] = aw_strdup(p[i].t == AW_V_INT ? num : p[i].s));
	}
	if (bad) {
		for (int i = 0; d->vals && i < n; i++)
			free(d->vals[i]);
		free(d->vals);
		free(d->sql);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	c->nq++;
	return AW_OK;
}

static aw_err pg_begin(aw_conn *c, const char *project, int write, aw_error *err)
{
	(void)write;
	clear_pending(c);
	if (AW_STR_COPY(c->project, project) < 0) /* a ctx's project: fits */
		return aw_fail(err, AW_E_INTERNAL, "project id longer than %zu bytes",
			       sizeof c->project - 1);
	c->begin_pending = 1;
	return AW_OK;
}

static aw_err pg_listen(aw_conn *c, const char *channel, aw_error *err)
{
	char *id = PQescapeIdentifier(c->pg, channel, strlen(channel));
	if (!id)
		return aw_fail(err, AW_E_STORE_UNAVAILABLE, "postgres connection lost");
	char sql[256];
	snprintf(sql, sizeof sql, "LISTEN %s", id);
	PQfreemem(id);
	return pg_script(c, sql, err);
}

/* 1 when a notification not skipped arrived. */
static int pg_drain(aw_conn *c, int (*skip)(void *arg, int pid), void *arg)
{
	int got = 0;
	PGnotify *n;
	while ((n = PQnotifies(c->pg))) {
		got |= !skip || !skip(arg, n->be_pid);
		PQfreemem(n);
	}
	return got;
}

static int pg_wait(aw_conn *c, int timeout_ms, int (*skip)(void *arg, int pid), void *arg)
{
	PQconsumeInput(c->pg);
	if (pg_drain(c, skip, arg))
		return 1;
	struct pollfd p = {.fd = PQsocket(c->pg), .events = POLLIN};
	if (p.fd < 0)
		return -1;
	int rc = poll(&p, 1, timeout_ms);
	if (rc <= 0)
		return rc < 0 ? -1 : 0;
	if (!PQconsumeInput(c->pg))
		return -1;
	return pg_drain(c, skip, arg);
}

static int pg_backend_pid(aw_conn *c)
{
	return PQbackendPID(c->pg);
}

const aw_driver driver_pg = {
	.listen = pg_listen,
	.wait = pg_wait,
	.backend_pid = pg_backend_pid,
	.name = "postgres",
	.dialect = AW_DIALECT_PG,
	.connect = pg_connect,
	.disconnect = pg_disconnect,
	.healthy = pg_healthy,
	.exec = pg_exec,
	.defer = pg_defer,
	.script = pg_script,
	.begin = pg_begin,
};
