/*
 * audit.h - the tamper-evident audit trail.
 *
 * Every state change appends one record to its project's chain *inside the
 * transaction that makes the change*: the record exists exactly when the change
 * does, and a record that cannot be written fails the operation (no queue can
 * lose it). Payloads are redacted (JSON-aware) before they are stored; actor,
 * target and trace come from the ctx. Each record's hash covers the previous
 * record's hash and all its own fields, so deleting, altering or reordering a
 * record is detected by aw_audit_verify.
 */
#ifndef AWOOOP_AUDIT_H
#define AWOOOP_AUDIT_H

#include <jansson.h>

#include "awooop/store/audit.h"

/* Appends to the chain of t's project. payload may be NULL; it is borrowed
 * (copied and redacted, never modified). */
aw_err aw_audit_record(aw_txn *t, const aw_ctx *ctx, const char *action, const char *target,
		       const json_t *payload, aw_error *err);

/* One record of a batch; trace_id NULL = ctx's trace; actor NULL = ctx's
 * principal (a recorder's batch holds calls of several keys: each its own;
 * aw_audit_record_group writes one record, ctx's, and ignores it). */
typedef struct {
	const char *action;
	const char *target;
	const char *trace_id;
	const json_t *payload;
	const char *actor;
} aw_audit_item;
/* Appends n records in order with one head lock and one insert (the run
 * runtime's worker writes a batch of runs' transitions this way). */
aw_err aw_audit_record_many(aw_txn *t, const aw_ctx *ctx, const aw_audit_item *items, int n,
			    aw_error *err);
/* The same, the items' payloads the caller's to lose: redacted in place
 * (changed), not copied first (the doors' recorders, which built them for
 * the record). */
aw_err aw_audit_record_many_spent(aw_txn *t, const aw_ctx *ctx, const aw_audit_item *items, int n,
				  aw_error *err);

/* One record of action for n items about different targets (ids awooop
 * made - UUIDs - or AW_E_INTERNAL: the index keeps them as they are). Its
 * payload is {"items": [item payload + "target" + "trace_id", ...]} (equal
 * item payloads redacted once), its own target is empty, and the store's
 * target index finds it from each item's target (aw_store_audit_by_target).
 * A worker's round writes the runs that made the same move this way: one
 * hash, one row and its indexes for the round instead of one a run.
 * n <= 1: aw_audit_record_many. */
aw_err aw_audit_record_group(aw_txn *t, const aw_ctx *ctx, const char *action,
			     const aw_audit_item *items, int n, aw_error *err);

/* Recomputes the chain hash of one row. out: 65 bytes. */
void aw_audit_hash(const aw_audit_row *row, char *out);

typedef struct {
	int ok;
	int64_t records;   /* records checked */
	int64_t break_seq; /* first bad sequence number (0 when ok) */
	char reason[160];  /* what is wrong there */
} aw_audit_report;

/* Walks ctx->project's chain from the start and reports the first break. */
aw_err aw_audit_verify(aw_store *s, const aw_ctx *ctx, aw_audit_report *rep, aw_error *err);

/* A row as JSON (the export and API format); new reference. */
json_t *aw_audit_row_json(const aw_audit_row *row);

#endif
