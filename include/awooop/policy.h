/*
 * policy.h - the worker revision cache and per-call guard (ADR-113 D3-D5).
 *
 * aw_policy_effective() is what runtime code calls before every LLM call: it
 * returns the active revision of (project, family, contract) - body,
 * revision_id, body_hash, cached_at - never one the guard knows is stale.
 *  - strict: compares with the store's active pointer on every call (one
 *    indexed read).
 *  - bounded (default): compares with a per-project snapshot of all active
 *    pointers that is never older than max_staleness (default 1 s): a busy
 *    worker reads the store about once per max_staleness, not once per call.
 * Bus invalidations and (re)connect resyncs mark snapshots stale at once; a
 * fallback checker re-reads each project's pointers every family interval
 * (channel_event 5 min, others 30 s, with jitter) in one query per project.
 * Loads verify body hash and signature and are single-flight per key.
 *
 * Listeners hear "key K's active revision is now R" with its source (bus,
 * fallback, guard, resync); they run with the cache locked and must not call
 * back into it. Revision "" means the contract has no active revision.
 */
#ifndef AWOOOP_POLICY_H
#define AWOOOP_POLICY_H

#include <jansson.h>
#include <stdint.h>

#include "awooop/bus.h"
#include "awooop/contract.h"

typedef enum { AW_GUARD_BOUNDED = 0, AW_GUARD_STRICT } aw_guard_mode;

typedef struct {
	aw_guard_mode mode;
	int max_staleness_ms;	 /* bounded mode; default 1000 */
	int interval_ms;	 /* fallback re-check, all families but channel_event; 30000 */
	int channel_interval_ms; /* fallback re-check of channel_event; 300000 */
	int jitter_pct;		 /* +-% on intervals; default 10 */
} aw_policy_opts;

typedef struct aw_policy_cache aw_policy_cache;

typedef struct {
	json_t *body; /* new reference; aw_policy_release() drops it. Read it,
			 never take references of its members: the cache's
			 copy is shared (jansson counts are guarded by the cache) */
	char revision_id[AW_UUID_STR_LEN + 1];
	char body_hash[65];
	int64_t cached_at_ms;
	aw_policy_cache *owner; /* the cache whose lock guards body's count */
} aw_policy;

typedef struct {
	uint64_t calls, store_reads, reloads, bus_events, fallback_checks, resyncs;
} aw_policy_stats;

typedef void (*aw_policy_listener)(void *ud, const char *project, const char *family,
				   const char *contract_id, const char *revision_id,
				   const char *source);

/* A decoded invalidation message (ADR-113 payload). */
typedef struct {
	char event_type[32];
	char family[32];
	char contract_id[AW_PROJECT_MAX + 1];
	char old_revision_id[AW_UUID_STR_LEN + 1]; /* "" when none */
	char new_revision_id[AW_UUID_STR_LEN + 1];
} aw_invalidation;
/* 0 when payload is a well-formed invalidation message with valid ids. */
int aw_invalidation_decode(const char *payload, size_t len, aw_invalidation *out);

/* bus may be NULL (no invalidations: guard and fallback only). Borrowed. */
aw_err aw_policy_cache_new(aw_store *s, const aw_contracts *c, aw_bus *bus, const aw_policy_opts *o,
			   aw_policy_cache **out, aw_error *err);
void aw_policy_cache_free(aw_policy_cache *p);

aw_err aw_policy_effective(aw_policy_cache *p, const aw_ctx *ctx, const char *family,
			   const char *contract_id, aw_policy *out, aw_error *err);
void aw_policy_release(aw_policy *pol);

/* Up to 8 each. Platform listeners hear __platform__ platform_resource
 * changes (D5: e.g. reset provider connections), cached or not. */
int aw_policy_on_change(aw_policy_cache *p, aw_policy_listener fn, void *ud);
int aw_policy_on_platform_change(aw_policy_cache *p, aw_policy_listener fn, void *ud);
/* Removes a listener (either kind); after it returns the listener is not
 * running and will not run. */
void aw_policy_off(aw_policy_cache *p, aw_policy_listener fn, void *ud);

/* Kills ride the invalidations' bus: a process that suspends a project (an
 * operator, budget line 3) announces it on the project's channel, and every
 * process's kill listeners hear it at once. A listener runs on the bus
 * thread under the cache's lock: it only notes the project and wakes its own
 * thread, which reads the suspension from the store (the truth) and cuts.
 * Up to 8; aw_policy_off_kill removes one (not running after it returns). */
typedef void (*aw_policy_kill_fn)(void *ud, const char *project);
int aw_policy_on_kill(aw_policy_cache *p, aw_policy_kill_fn fn, void *ud);
void aw_policy_off_kill(aw_policy_cache *p, aw_policy_kill_fn fn, void *ud);
/* Publishes the announcement (at most once, like every bus message: a
 * listener's own poll of the store is the fallback). No bus: AW_OK. */
aw_err aw_policy_announce_kill(aw_policy_cache *p, const char *project, aw_error *err);
/* 1 while kills of other processes arrive over a connected Redis bus (the
 * listener may then poll the store rarely); 0: local bus, none or down. */
int aw_policy_kill_remote(aw_policy_cache *p);
void aw_policy_get_stats(aw_policy_cache *p, aw_policy_stats *out);

#endif
