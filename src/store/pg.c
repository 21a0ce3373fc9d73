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

#include "driver.h"

#define TIMESTAMPTZOID 1184

struct aw_conn {
	PGconn *pg;
};

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

static aw_err pg_script(aw_conn *c, const char *sql, aw_error *err)
{
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
	aw_conn *c = calloc(1, sizeof *c);
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
	aw_err e = pg_script(c,
			     "SET search_path = awooop, pg_catalog;"
			     "SET TIME ZONE 'UTC'; SET DateStyle = 'ISO';",
			     err);
	if (e) {
		PQfinish(c->pg);
		free(c);
		return e;
	}
	*out = c;
	return AW_OK;
}

static void pg_disconnect(aw_conn *c)
{
	if (!c)
		return;
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
		return strdup(v);
	char *o = malloc(25);
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

static aw_err pg_exec(aw_conn *c, const char *sql, int n, const aw_val *p, aw_rows **out,
		      aw_error *err)
{
	/* small statements use the stack; batches (runs, audit) allocate */
	char sbuf[16][24], (*numbuf)[24] = sbuf;
	const char *svals[16] = {0}, **vals = svals;
	if (n > 16) {
		numbuf = malloc(sizeof *numbuf * (size_t)n);
		vals = malloc(sizeof *vals * (size_t)n);
		if (!numbuf || !vals) {
			free(numbuf);
			free(vals);
			return aw_fail(err, AW_E_NOMEM, "out of memory");
		}
	}
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
	PGresult *res = PQexecParams(c->pg, sql, n, NULL, vals, NULL, NULL, 0);
	if (n > 16) {
		free(numbuf);
		free(vals);
	}
	ExecStatusType st = PQresultStatus(res);
	aw_err e = AW_OK;
	char **cells = NULL;
	size_t ncells = 0;
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		e = map_result(c->pg, res, err);
		goto cleanup;
	}
	if (!out)
		goto cleanup;
	int nrows = PQntuples(res), ncols = PQnfields(res);
	const char *aff = PQcmdTuples(res);
	size_t total = (size_t)nrows * (size_t)ncols;
	cells = calloc(total ? total : 1, sizeof *cells);
	if (!cells) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
		goto cleanup;
	}
	for (int r = 0; r < nrows; r++) {
		for (int col = 0; col < ncols; col++, ncells++) {
			if (PQgetisnull(res, r, col))
				continue;
			const char *v = PQgetvalue(res, r, col);
			cells[ncells] =
				PQftype(res, col) == TIMESTAMPTZOID ? norm_ts(v) : strdup(v);
			if (!cells[ncells]) {
				e = aw_fail(err, AW_E_NOMEM, "out of memory");
				goto cleanup;
			}
		}
	}
	*out = aw_rows_new(nrows, ncols, cells, aff && *aff ? atoll(aff) : 0);
	if (!*out) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
		goto cleanup;
	}
	cells = NULL;
	ncells = 0;
cleanup:
	for (size_t i = 0; i < ncells; i++)
		free(cells[i]);
	free(cells);
	PQclear(res);
	return e;
}

static aw_err pg_begin(aw_conn *c, const char *project, int write, aw_error *err)
{
	(void)write;
	if (!project || !*project)
		return pg_script(c, "BEGIN", err);
	char *lit = PQescapeLiteral(c->pg, project, strlen(project));
	if (!lit)
		return aw_fail(err, AW_E_STORE_UNAVAILABLE, "postgres connection lost");
	char sql[256];
	snprintf(sql, sizeof sql, "BEGIN; SET LOCAL awooop.project_id = %s", lit);
	PQfreemem(lit);
	return pg_script(c, sql, err);
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

static int pg_wait(aw_conn *c, int timeout_ms)
{
	int got = 0;
	PGnotify *n;
	PQconsumeInput(c->pg);
	while ((n = PQnotifies(c->pg))) {
		got = 1;
		PQfreemem(n);
	}
	if (got)
		return 1;
	struct pollfd p = {.fd = PQsocket(c->pg), .events = POLLIN};
	if (p.fd < 0)
		return -1;
	int rc = poll(&p, 1, timeout_ms);
	if (rc <= 0)
		return rc < 0 ? -1 : 0;
	if (!PQconsumeInput(c->pg))
		return -1;
	while ((n = PQnotifies(c->pg))) {
		got = 1;
		PQfreemem(n);
	}
	return got;
}

const aw_driver aw_driver_pg = {
	.listen = pg_listen,
	.wait = pg_wait,
	.name = "postgres",
	.dialect = AW_DIALECT_PG,
	.connect = pg_connect,
	.disconnect = pg_disconnect,
	.healthy = pg_healthy,
	.exec = pg_exec,
	.script = pg_script,
	.begin = pg_begin,
};
