/*
 * store.h - the source of truth, behind one interface with two backends:
 *   "sqlite:PATH"                 embedded default (WAL, one file)
 *   "postgresql://..." / "postgres://..."  cluster shape (RLS per tenant)
 *
 * Every tenant operation runs in a transaction opened for ctx->project; on
 * PostgreSQL the database itself refuses rows of any other project. Functions
 * named *_platform_* are the explicit cross-tenant path (key lookup by hash,
 * project listing) and are the only ones that do not need a project.
 *
 * Ownership: aw_store_open returns a handle freed by aw_store_close. A txn from
 * aw_store_begin is ended exactly once by aw_store_commit or aw_store_rollback
 * (both free it). Arrays returned through `out` pointers are malloc'd: free().
 * All functions are thread-safe on one aw_store; a txn belongs to one thread.
 */
#ifndef AWOOOP_STORE_H
#define AWOOOP_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "awooop/clock.h"
#include "awooop/ctx.h"
#include "awooop/err.h"

typedef struct aw_store aw_store;
typedef struct aw_txn aw_txn;

typedef struct {
	int pool_size;		/* connections; default 8 */
	int acquire_timeout_ms; /* wait for a free connection; default 5000 */
	int auto_migrate;	/* apply migrations on open (SQLite default shape) */
	/* The connections one project's requests (a ctx whose charge names the
	 * project) may hold at once: "N" or "N,PROJECT=M,..." (aw_bounds; the
	 * platform's, never a tenant's). NULL or "": half of pool_size, at least
	 * 1 (so one project never holds all of a pool of 2 or more; a burst of a
	 * lone tenant's short transactions waits its turn rather than failing).
	 * System work (charge "") is never counted nor bounded. */
	const char *project_pool;
	/* How long a request past its project's bound waits for one of the
	 * project's own connections to come back before AW_E_STORE_PROJECT
	 * (429); default 500 ms */
	int project_wait_ms;
} aw_store_opts;

/* AW_E_CONFIG when opts->project_pool is not a bound (naming --project-pool). */
aw_err aw_store_open(const char *url, const aw_store_opts *opts, aw_store **out, aw_error *err);
void aw_store_close(aw_store *s);
const char *aw_store_backend(const aw_store *s); /* "sqlite" | "postgres" */
/* Where s's data lives, as its URL without credentials or options
 * ("postgres://HOST:PORT/DB", "sqlite:PATH"): what tells two deployments on
 * one host apart. Truncated to cap. */
void aw_store_where(const aw_store *s, char *out, size_t cap);

/* Applies pending migrations. On PostgreSQL, run as the schema owner: creates
 * the NOLOGIN role awooop_platform and app_role (LOGIN, no superuser, no
 * BYPASSRLS) when missing, refuses an app_role that could bypass RLS, and grants
 * it exactly what the service needs (audit_events: SELECT, INSERT only). */
aw_err aw_store_migrate(aw_store *s, const char *app_role, aw_error *err);
/* AW_E_STORE_SCHEMA unless the schema is at the version this binary expects. */
aw_err aw_store_check_schema(aw_store *s, aw_error *err);
int aw_store_schema_target(const aw_store *s);
/* The connections project's requests hold now, and its bound. */
void aw_store_project_held(aw_store *s, const char *project, int *held, long *bound);
/* One round trip to the store; for /readyz. */
aw_err aw_store_ping(aw_store *s, aw_error *err);

typedef enum { AW_TXN_READ = 0, AW_TXN_WRITE = 1 } aw_txn_mode;
/* A transaction on a pooled connection. A ctx with a charge counts against
 * that project's bound (aw_store_opts.project_pool): past it, the call waits
 * project_wait_ms for one of the project's connections to come back, then
 * fails AW_E_STORE_PROJECT; a thread that holds a charged connection already
 * (a nested transaction) is not held to the bound again, so a request never
 * waits on itself. Past the pool, AW_E_STORE_BUSY after acquire_timeout_ms
 * or the ctx deadline. */
aw_err aw_store_begin(aw_store *s, const aw_ctx *ctx, aw_txn_mode mode, aw_txn **out,
		      aw_error *err);
aw_err aw_store_commit(aw_txn *t, aw_error *err);
void aw_store_rollback(aw_txn *t);
/* The rest of t runs as ctx (its project: PostgreSQL's row-level security
 * setting, SQLite's scoping). For a platform transaction that writes to
 * several projects one after another (a worker's held runs). */
aw_err aw_txn_set_ctx(aw_txn *t, const aw_ctx *ctx, aw_error *err);

/* A connection waiting for NOTIFY on channel (PostgreSQL); NULL on SQLite.
 * others_only: notifications sent over s's own connections are not heard
 * (the process wakes its own threads without the database's help). */
typedef struct aw_store_listener aw_store_listener;
aw_store_listener *aw_store_listen(aw_store *s, const char *channel, int others_only);
/* 1 notified, 0 timed out; reconnects by itself after a broken connection. */
int aw_store_listener_wait(aw_store_listener *l, int timeout_ms);
void aw_store_listener_close(aw_store_listener *l);

#endif
