/*
 * sqlite.c - the embedded store backend (libsqlite3).
 *
 * One file in WAL mode, foreign keys on, a busy timeout so concurrent writers
 * wait instead of failing. Each pooled connection is its own sqlite3 handle.
 * SQLite has no row-level security: tenant scoping is the WHERE project_id = ...
 * that every query in src/store/ carries, and the conformance suite checks it on
 * this backend too. Write transactions use BEGIN IMMEDIATE so a reader never has
 * to upgrade its lock (which busy_timeout cannot help with).
 *
 * Each connection keeps its prepared statements (a direct-mapped cache by the
 * SQL's hash): preparing is most of what a short statement costs (measured
 * with bench/budget: the ledger's admission transaction took 0.7 ms when
 * every statement was prepared anew).
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

#include "awooop/alloc.h"

#define STMT_CACHE 128 /* a power of two */

struct aw_conn {
	sqlite3 *db;
	struct {
		char *sql;
		sqlite3_stmt *st;
	} cache[STMT_CACHE];
};

/* The connection's prepared statement for sql (reset, no bindings), or a new
 * one that takes the slot; *slot: its slot, -1 when it is not cached. */
static int stmt_get(aw_conn *c, const char *sql, sqlite3_stmt **out, int *slot)
{
	unsigned i = sql_slot(sql, STMT_CACHE);
	*slot = (int)i;
	if (c->cache[i].sql && !strcmp(c->cache[i].sql, sql)) {
		*out = c->cache[i].st;
		return SQLITE_OK;
	}
	/* "$N" as SQLite's "?N": bound by number, not looked up by name (a
	 * lookup per parameter is quadratic in a many-row INSERT). The store's
	 * SQL holds no '$' followed by a digit elsewhere. */
	char *numbered = aw_strdup(sql);
	if (!numbered)
		return SQLITE_NOMEM;
	for (char *p = numbered; *p; p++)
		if (p[0] == '$' && p[1] >= '0' && p[1] <= '9')
			p[0] = '?';
	int rc = sqlite3_prepare_v3(c->db, numbered, -1, SQLITE_PREPARE_PERSISTENT, out, NULL);
	free(numbered);
	if (rc != SQLITE_OK)
		return rc;
	char *copy = aw_strdup(sql);
	if (!copy) { /* uncached: finalized after use */
		*slot = -1;
		return SQLITE_OK;
	}
	sqlite3_finalize(c->cache[i].st);
	free(c->cache[i].sql);
	c->cache[i].sql = copy;
	c->cache[i].st = *out;
	return SQLITE_OK;
}

static void stmt_done(sqlite3_stmt *st, int slot)
{
	if (slot < 0) {
		sqlite3_finalize(st);
		return;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

static void cache_clear(aw_conn *c)
{
	for (int i = 0; i < STMT_CACHE; i++) {
		sqlite3_finalize(c->cache[i].st);
		free(c->cache[i].sql);
		c->cache[i].st = NULL;
		c->cache[i].sql = NULL;
	}
}

static aw_err map_rc(sqlite3 *db, int rc, aw_error *err)
{
	int ext = db ? sqlite3_extended_errcode(db) : rc;
	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED: return aw_fail(err, AW_E_STORE_BUSY, "database is busy");
	case SQLITE_CONSTRAINT:
		if (ext == SQLITE_CONSTRAINT_UNIQUE || ext == SQLITE_CONSTRAINT_PRIMARYKEY ||
		    ext == SQLITE_CONSTRAINT_FOREIGNKEY)
			return aw_fail(err, AW_E_STORE_CONFLICT, "conflicting row");
		return aw_fail(err, AW_E_STORE_QUERY, "constraint failed: %s",
			       db ? sqlite3_errmsg(db) : "?");
	case SQLITE_CANTOPEN:
	case SQLITE_IOERR:
	case SQLITE_FULL:
	case SQLITE_READONLY:
		return aw_fail(err, AW_E_STORE_UNAVAILABLE, "sqlite: %s",
			       db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
	default:
		return aw_fail(err, AW_E_STORE_QUERY, "sqlite: %s",
			       db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
	}
}

static aw_err sq_script(aw_conn *c, const char *sql, aw_error *err)
{
	int rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? AW_OK : map_rc(c->db, rc, err);
}

static aw_err sq_connect(const char *url, aw_conn **out, aw_error *err)
{
	const char *path = url;
	if (strncmp(url, "sqlite:", 7) == 0)
		path = url + 7;
	if (!*path)
		return aw_fail(err, AW_E_CONFIG, "empty sqlite path");
	aw_conn *c = aw_calloc(1, sizeof *c);
	if (!c)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	int rc = sqlite3_open_v2(path, &c->db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
				 NULL);
	if (rc != SQLITE_OK) {
		aw_err e = aw_fail(err, AW_E_STORE_UNAVAILABLE, "cannot open %s: %s", path,
				   c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
		sqlite3_close(c->db);
		free(c);
		return e;
	}
	sqlite3_busy_timeout(c->db, 5000);
	sqlite3_extended_result_codes(c->db, 1);
	aw_err e = sq_script(c,
			     "PRAGMA journal_mode=WAL;"
			     "PRAGMA synchronous=NORMAL;"
			     "PRAGMA foreign_keys=ON;",
			     err);
	if (e) {
		sqlite3_close(c->db);
		free(c);
		return e;
	}
	*out = c;
	return AW_OK;
}

static void sq_disconnect(aw_conn *c)
{
	if (!c)
		return;
	cache_clear(c);
	sqlite3_close(c->db);
	free(c);
}

static int sq_healthy(aw_conn *c)
{
	return c && c->db;
}

static aw_err bind_params(sqlite3_stmt *st, int n, const aw_val *p, aw_error *err)
{
	int count = sqlite3_bind_parameter_count(st); /* the largest ?N */
	for (int i = 0; i < n && i < count; i++) {
		int idx = i + 1, rc;
		switch (p[i].t) {
		case AW_V_TEXT:
			rc = sqlite3_bind_text(st, idx, p[i].s, -1, SQLITE_TRANSIENT);
			break;
		case AW_V_INT: rc = sqlite3_bind_int64(st, idx, p[i].i); break;
		default: rc = sqlite3_bind_null(st, idx);
		}
		if (rc != SQLITE_OK)
			return aw_fail(err, AW_E_STORE_QUERY, "bind $%d failed", i + 1);
	}
	return AW_OK;
}

static aw_err sq_exec(aw_conn *c, const char *sql, int n, const aw_val *p, aw_rows **out,
		      aw_error *err)
{
	sqlite3_stmt *st = NULL;
	char **cells = NULL;
	size_t ncells = 0, cap = 0;
	int nrows = 0;
	aw_err e = AW_OK;

	int slot = -1;
	int rc = stmt_get(c, sql, &st, &slot);
	if (rc != SQLITE_OK)
		return map_rc(c->db, rc, err);
	if ((e = bind_params(st, n, p, err)))
		goto cleanup;
	int ncols = sqlite3_column_count(st);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (!out)
			continue;
		if (ncells + (size_t)ncols > cap) {
			size_t ncap = cap ? cap * 2 : 16;
			while (ncap < ncells + (size_t)ncols)
				ncap *= 2;
			char **nc = aw_realloc(cells, ncap * sizeof *nc);
			if (!nc) {
				e = aw_fail(err, AW_E_NOMEM, "out of memory");
				goto cleanup;
			}
			cells = nc;
			cap = ncap;
		}
		for (int i = 0; i < ncols; i++) {
			const unsigned char *v = sqlite3_column_text(st, i);
			char *copy = NULL;
			if (v && !(copy = aw_strdup((const char *)v))) {
				e = aw_fail(err, AW_E_NOMEM, "out of memory");
				goto cleanup;
			}
			cells[ncells++] = copy;
		}
		nrows++;
	}
	if (rc != SQLITE_DONE) {
		e = map_rc(c->db, rc, err);
		goto cleanup;
	}
	if (out) {
		*out = rows_new(nrows, ncols, cells, sqlite3_changes64(c->db));
		if (!*out) {
			e = aw_fail(err, AW_E_NOMEM, "out of memory");
			goto cleanup;
		}
		cells = NULL;
		ncells = 0;
	}
cleanup:
	for (size_t i = 0; i < ncells; i++)
		free(cells[i]);
	free(cells);
	stmt_done(st, slot);
	return e;
}

static aw_err sq_begin(aw_conn *c, const char *project, int write, aw_error *err)
{
	(void)project; /* scoping is in the queries; see the file comment */
	return sq_script(c, write ? "BEGIN IMMEDIATE" : "BEGIN", err);
}

const aw_driver driver_sqlite = {
	.name = "sqlite",
	.dialect = AW_DIALECT_SQLITE,
	.connect = sq_connect,
	.disconnect = sq_disconnect,
	.healthy = sq_healthy,
	.exec = sq_exec,
	.script = sq_script,
	.begin = sq_begin,
};
