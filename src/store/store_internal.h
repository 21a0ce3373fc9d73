/*
 * store_internal.h - what the query files of src/store/ share: the store and txn
 * structs and helpers to run one statement inside a txn.
 */
#ifndef AW_STORE_INTERNAL_H
#define AW_STORE_INTERNAL_H

#include <pthread.h>
#include <stddef.h>

#include "awooop/bounds.h"
#include "awooop/store.h"
#include "awooop/store/audit.h"
#include "awooop/store/budget.h"
#include "awooop/store/contract.h"
#include "awooop/store/keymig.h"
#include "awooop/store/relay.h"
#include "awooop/store/run.h"
#include "awooop/store/tenancy.h"
#include "driver.h"

struct aw_store {
	const aw_driver *drv;
	char *url;
	int pool_size, acquire_timeout_ms;
	aw_conn **idle; /* stack of idle connections */
	int nidle, nopen;
	/* the server processes of the open connections (PostgreSQL; a
	 * listener tells this process's NOTIFYs from others' by them) */
	int *pids, npids;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* the connections each project's requests hold (mu): a slot per
	 * project holding one or more, so at most pool_size slots are ever in
	 * use; waiters counts those waiting on a project's bound (a release
	 * then wakes every waiter, not one that may be of another project) */
	aw_bounds per_project;
	int project_wait_ms;
	struct aw_pool_charge {
		char project[AW_PROJECT_MAX + 1];
		int held;
	} * charges;
	int waiters;
	/* SQLite has one writer at a time, and a writer that finds the lock
	 * taken sleeps in its busy handler (1 ms, 2 ms, 5 ms, ...): writers of
	 * this process queue here instead and start the moment it is free */
	int serialize_writes;
	pthread_mutex_t write_mu;
};

struct aw_txn {
	aw_store *s;
	aw_conn *c;
	aw_ctx ctx;
	int holds_write_mu;
	int charge; /* its slot in s->charges, or -1 */
};

/* A pooled connection for ctx; *charge is the slot it is counted in (-1:
 * not counted), for store_release. */
aw_err store_acquire(aw_store *s, const aw_ctx *ctx, aw_conn **out, int *charge, aw_error *err);
/* pid is the server process of one of store s's pooled connections. */
int store_own_pid(void *s, int pid);
void store_release(aw_store *s, aw_conn *c, int charge);

/* Runs one statement in t; records store latency. out may be NULL. */
aw_err txn_exec(aw_txn *t, const char *sql, int n, const aw_val *p, aw_rows **out, aw_error *err);
/* Queues one statement whose result is not needed (see driver.h defer). */
aw_err txn_defer(aw_txn *t, const char *sql, int n, const aw_val *p, aw_error *err);
/* The same for a statement whose rows are wanted without a round trip of
 * their own: sink(rows, arg) is called when they arrive - with the txn's
 * next waited statement or its commit (at once on SQLite) - and not at all
 * when the transaction fails first. */
aw_err txn_defer_rows(aw_txn *t, const char *sql, int n, const aw_val *p,
		      void (*sink)(const aw_rows *r, void *arg), void *arg, aw_error *err);
/* Runs one statement on a pooled connection outside any tenant txn. */
aw_err store_exec1(aw_store *s, const aw_ctx *ctx, const char *sql, int n, const aw_val *p,
		   aw_rows **out, aw_error *err);
aw_dialect txn_dialect(const aw_txn *t);

/* Fills an outbox event from row i of r with the columns event_id, seq,
 * event_type, project_id, contract_family, contract_id, old_revision_id,
 * new_revision_id, created_at (and, when present, delivered_at). */
void outbox_from_row(aw_outbox_event *v, const aw_rows *r, int i, int relay_attempts_col,
		     int delivered_col);

/* A cell as an integer (0 for NULL; a cell that is not a whole number, which
 * the schema never stores, reads as 0 too). */
long long cell_ll(const aw_rows *r, int row, int col);

/* Copies a cell into a fixed buffer dst[cap] ("" for NULL). A value longer than the field is cut and
 * logged as an error (the field is too narrow for what the store holds: widen
 * it); the value itself is never logged. */
void cell_copy(char *dst, size_t cap, const aw_rows *r, int row, int col);

/* Appends "$first, $first+1, ..." (n placeholders) at sql + *o. */
void sql_params(char *sql, size_t cap, int *o, int first, int n);

/* A char-array member of a row struct, for rows_to_array. */
typedef struct {
	size_t off, cap;
} aw_text_field;
#define AW_TEXT_FIELD(type, member)                                 \
	{                                                           \
		offsetof(type, member), sizeof(((type *)0)->member) \
	}
/* Copies the rows of r into a new calloc'd array of structs of size elem
 * (column c into fields[c]; one spare zeroed element), frees r, and sets
 * *out and *n. */
aw_err rows_to_array(aw_rows *r, size_t elem, const aw_text_field *fields, int nfields, void **out,
		     int *n, aw_error *err);

typedef struct {
	int version;
	const char *name;
	const char *sql;
} aw_migration;

/* Generated from src/store/migrations/<dialect>/NNNN_name.sql at build time. */
extern const aw_migration migrations_sqlite[];
extern const int migrations_sqlite_count;
extern const aw_migration migrations_pg[];
extern const int migrations_pg_count;

#endif
