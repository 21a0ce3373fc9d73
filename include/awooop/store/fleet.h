/*
 * store/fleet.h - which process serves which revision (fleet.h is the
 * service). Same conventions as store.h: every call runs in the caller's
 * transaction for its project.
 */
#ifndef AWOOOP_STORE_FLEET_H
#define AWOOOP_STORE_FLEET_H

#include "awooop/store.h"

#define AW_FLEET_ROLE_MAX 15
#define AW_FLEET_VERSION_MAX 31

/* One process as it reports itself. */
typedef struct {
	char process_id[AW_UUID_STR_LEN + 1];
	char role[AW_FLEET_ROLE_MAX + 1];
	char version[AW_FLEET_VERSION_MAX + 1];
	char started_at[AW_TS_LEN + 1];
	int report_ms; /* its heartbeat interval */
} aw_fleet_self;

/* A contract the process serves: the revision ("" none active) and when the
 * process learned it. */
typedef struct {
	char family[32];
	char contract_id[AW_PROJECT_MAX + 1];
	char revision_id[AW_UUID_STR_LEN + 1];
	char learned_at[AW_TS_LEN + 1];
} aw_fleet_item;

/* A row read back: the process, what it serves, when it last reported. */
typedef struct {
	aw_fleet_self p;
	char revision_id[AW_UUID_STR_LEN + 1];
	char learned_at[AW_TS_LEN + 1];
	char reported_at[AW_TS_LEN + 1];
} aw_fleet_row;

typedef struct {
	char revision_id[AW_UUID_STR_LEN + 1];
	char process_id[AW_UUID_STR_LEN + 1];
	char learned_at[AW_TS_LEN + 1];
} aw_fleet_learned;

/* Upserts the process's rows for items[0..n) with reported_at = now, and
 * records each revision learned (once per process and revision). */
aw_err aw_store_fleet_report(aw_txn *t, const aw_fleet_self *me, const aw_fleet_item *items, int n,
			     const char *now, aw_error *err);
/* A process that stops deletes its rows: it no longer serves anything. */
aw_err aw_store_fleet_forget(aw_txn *t, const char *process_id, aw_error *err);
/* Drops rows of processes silent since reported_before and learned rows
 * older than learned_before. */
aw_err aw_store_fleet_prune(aw_txn *t, const char *reported_before, const char *learned_before,
			    aw_error *err);
/* Every process row of the contract, live or not. Free with free(). */
aw_err aw_store_fleet_serving(aw_txn *t, const char *family, const char *contract_id,
			      aw_fleet_row **out, int *n, aw_error *err);
/* What processes learned of the contract since `since`. Free with free(). */
aw_err aw_store_fleet_learned(aw_txn *t, const char *family, const char *contract_id,
			      const char *since, aw_fleet_learned **out, int *n, aw_error *err);

/* The active pointers of the projects in projects_json (a JSON array of
 * project ids): the platform path a process's fleet reporter compares what
 * it serves with (one statement; ids and times, no body). Free with free(). */
typedef struct {
	char project_id[AW_PROJECT_MAX + 1];
	char family[32];
	char contract_id[AW_PROJECT_MAX + 1];
	char revision_id[AW_UUID_STR_LEN + 1];
	char activated_at[AW_TS_LEN + 1];
} aw_fleet_active;
aw_err aw_store_fleet_active(aw_store *s, const char *projects_json, aw_fleet_active **out, int *n,
			     aw_error *err);

#endif
