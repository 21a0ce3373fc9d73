/*
 * driver.h - what a store backend provides (internal to src/store/).
 *
 * A driver runs SQL on one connection and hands back fully materialised text
 * rows. Domain queries in the src/store/ query files are written once in portable SQL with
 * $1..$n placeholders; where the dialects really differ, a query branches on
 * aw_dialect. Timestamps come back in the aw_clock format on both backends
 * (the PostgreSQL driver normalises timestamptz), ids as lowercase UUID text.
 */
#ifndef AW_STORE_DRIVER_H
#define AW_STORE_DRIVER_H

#include <stdint.h>

#include "awooop/err.h"

typedef enum { AW_DIALECT_SQLITE, AW_DIALECT_PG } aw_dialect;

typedef struct {
	enum { AW_V_NULL, AW_V_TEXT, AW_V_INT } t;
	const char *s;
	int64_t i;
} aw_val;

static inline aw_val drv_text(const char *s)
{
	return (aw_val){.t = s ? AW_V_TEXT : AW_V_NULL, .s = s};
}
#define AW_TEXT(x) drv_text(x)

/* The slot of sql in a driver's statement cache of slots (a power of two):
 * FNV-1a of the text. */
static inline unsigned sql_slot(const char *sql, unsigned slots)
{
	unsigned h = 2166136261u;
	for (; *sql; sql++)
		h = (h ^ (unsigned char)*sql) * 16777619u;
	return h & (slots - 1);
}
#define AW_INT(x) ((aw_val){.t = AW_V_INT, .i = (x)})

/* A materialised result; owned by the caller, freed with rows_free. */
typedef struct aw_rows {
	int nrows, ncols;
	int64_t affected; /* rows changed by INSERT/UPDATE/DELETE */
	char **cells;	  /* nrows * ncols; NULL is SQL NULL */
} aw_rows;

const char *rows_get(const aw_rows *r, int row, int col);
void rows_free(aw_rows *r);

typedef struct aw_conn aw_conn;

typedef struct aw_driver {
	const char *name;
	aw_dialect dialect;
	aw_err (*connect)(const char *url, aw_conn **out, aw_error *err);
	void (*disconnect)(aw_conn *c);
	/* 0 when the connection is broken and must be replaced */
	int (*healthy)(aw_conn *c);
	/* out may be NULL when no rows are wanted */
	aw_err (*exec)(aw_conn *c, const char *sql, int n, const aw_val *params, aw_rows **out,
		       aw_error *err);
	/* A statement inside a transaction whose result is not waited for: may
	 * be sent later, with the next statement or COMMIT (PostgreSQL pipelines
	 * them); its error then surfaces there. sink (may be NULL) is called
	 * with its rows when they arrive. NULL: executed at once. */
	aw_err (*defer)(aw_conn *c, const char *sql, int n, const aw_val *params,
			void (*sink)(const aw_rows *r, void *arg), void *arg, aw_error *err);
	/* Several statements, no parameters (migrations). */
	aw_err (*script)(aw_conn *c, const char *sql, aw_error *err);
	/* Opens a transaction scoped to project ("" = none); write asks SQLite for
	 * the write lock up front. */
	aw_err (*begin)(aw_conn *c, const char *project, int write, aw_error *err);
	/* LISTEN support (NULL when the backend has none): wait returns 1 on a
	 * notification (those whose sender's server process skip(arg, pid)
	 * names are dropped; skip may be NULL), 0 on timeout, -1 when the
	 * connection broke. */
	aw_err (*listen)(aw_conn *c, const char *channel, aw_error *err);
	int (*wait)(aw_conn *c, int timeout_ms, int (*skip)(void *arg, int pid), void *arg);
	/* The connection's server process (NULL: none to tell). */
	int (*backend_pid)(aw_conn *c);
} aw_driver;

extern const aw_driver driver_sqlite;
extern const aw_driver driver_pg;

/* Builds rows from a flat cell array; takes ownership of cells. */
aw_rows *rows_new(int nrows, int ncols, char **cells, int64_t affected);

#endif
