/*
 * kv.h - Redis data access through the key registry, with the INV-1 legacy
 * migration applied underneath. Services call aw_kv_* with (ctx, pattern,
 * components) and never branch on the phase:
 *
 *   none  reads and writes the legacy key
 *   A     writes both keys; reads the legacy key; counts new-key hits
 *   B     writes both; reads the new key, on a miss reads the legacy key,
 *         backfills the new one with the legacy key's remaining TTL, counts it
 *   C     writes the new key only; a miss that the legacy key still answers is
 *         backfilled and counted as an old-key read
 *   done  new key only
 * Legacy keys belong to one project (default "awoooi"; platform patterns to
 * __platform__); for every other project only new keys exist.
 *
 * Gates (aw_keymig_step, keymig.h): A->B once A has run its window (default 30 days);
 * B->C once B has run its window (14 days) with a fallback rate below 1% of
 * reads; C->done once C has run its window (7 days) with zero old-key reads.
 * --force skips a gate and is audited. Counters live in Redis and restart at
 * each phase change; phases live in the store and are audited.
 */
#ifndef AWOOOP_KV_H
#define AWOOOP_KV_H

#include <stdint.h>

#include "awooop/keys.h"
#include "awooop/store/keymig.h"

typedef struct aw_kv aw_kv;

#define AW_KV_WINDOW_NONE (-1)

typedef struct {
	const char *legacy_project; /* default "awoooi" */
	/* observation windows of the gates, in seconds: 0 = the default (30, 14
	 * and 7 days), AW_KV_WINDOW_NONE = no wait */
	int window_a_s, window_b_s, window_c_s;
	int phase_cache_ms; /* how long a read phase is trusted; default 1000 */
} aw_kv_opts;

aw_err aw_kv_open(const char *redis_url, aw_store *s, const aw_kv_opts *o, aw_kv **out,
		  aw_error *err);
void aw_kv_close(aw_kv *kv);

/* *out is malloc'd, NULL when the key does not exist. */
aw_err aw_kv_get(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals, int n,
		 char **out, aw_error *err);
/* ttl_s 0: no expiry. */
aw_err aw_kv_set(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals, int n,
		 const char *value, int ttl_s, aw_error *err);
/* SET NX EX: *created = 1 when the key did not exist and now holds value
 * (ttl_s >= 1). */
aw_err aw_kv_set_nx(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals,
		    int n, const char *value, int ttl_s, int *created, aw_error *err);
/* A lease held by holder: taken when the key is free, renewed (PEXPIRE) when
 * holder has it; *held = 1 then. release: deleted only if holder has it. */
aw_err aw_kv_lease(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals,
		   int n, const char *holder, int ttl_ms, int release, int *held, aw_error *err);
aw_err aw_kv_del(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals, int n,
		 aw_error *err);
aw_err aw_kv_incr(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals, int n,
		  long long by, long long *out, aw_error *err);
aw_err aw_kv_expire(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals,
		    int n, int ttl_s, aw_error *err);
aw_err aw_kv_hset(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals, int n,
		  const char *field, const char *value, aw_error *err);
aw_err aw_kv_hget(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals, int n,
		  const char *field, char **out, aw_error *err);
aw_err aw_kv_rpush(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals,
		   int n, const char *value, aw_error *err);
/* Items as a malloc'd array of malloc'd strings. */
aw_err aw_kv_lrange(aw_kv *kv, const aw_ctx *ctx, const char *pattern, const char *const *vals,
		    int n, long start, long stop, char ***items, int *nitems, aw_error *err);

typedef struct {
	char phase[8];
	char since[32];
	long long reads, new_hits, fallbacks, old_reads;
} aw_kv_status;

aw_err aw_kv_status_get(aw_kv *kv, const aw_ctx *ctx, const char *pattern, aw_kv_status *st,
			aw_error *err);

/* What the phase engine (keymig.h) builds on. Phases are numbered in order:
 * 0 none, 1 A, 2 B, 3 C, 4 done. */
int aw_kv_phase_of(const char *name);	 /* -1: not a phase */
const char *aw_kv_phase_name(int phase); /* NULL: not a phase */
/* The observation window of phase, in seconds. */
int aw_kv_window_s(const aw_kv *kv, int phase);
/* The project whose data p's keys belong to (platform patterns: __platform__). */
const char *aw_kv_owner(const aw_key_pattern *p, const aw_ctx *ctx);
/* Fills st's counters with phase's last window in (project, pattern). */
void aw_kv_counters(aw_kv *kv, const char *project, const char *pattern, int phase,
		    aw_kv_status *st);
/* Forgets the cached phases: the next access reads them from the store. */
void aw_kv_phases_forget(aw_kv *kv);

typedef struct {
	long long legacy, modern, missing_ttl;
} aw_kv_inv_row;
typedef void (*aw_kv_progress)(void *ud, long long done);
/* SCANs the whole keyspace (the one full scan, for the inventory) and
 * classifies every key; rows is indexed like the registry. */
aw_err aw_kv_inventory(const char *redis_url, aw_kv_inv_row *rows, long long *unknown,
		       long long *total, char unknown_sample[5][128], aw_kv_progress progress,
		       void *ud, aw_error *err);
/* Copies legacy keys of one pattern to their new keys (DUMP/RESTORE with the
 * remaining TTL; existing new keys are kept). Resumable: the SCAN cursor is
 * kept in Redis. rate: keys per second (0 = unlimited). */
aw_err aw_kv_backfill(aw_kv *kv, const aw_ctx *ctx, const char *pattern, int rate,
		      long long *copied, long long *skipped, aw_kv_progress progress, void *ud,
		      aw_error *err);

#endif
