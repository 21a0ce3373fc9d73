/*
 * fleet.h - the fleet: every process that runs a policy cache reports which
 * revision it serves per contract, and the convergence of each activation is
 * read back from those reports.
 *
 * The reporter listens to its policy cache: a revision learned (an
 * activation reaching the process through the bus, the fallback checker or
 * a guarded call) is written at once; every report_ms all rows are written
 * again as the heartbeat. A process whose last report is older than three of
 * its intervals is gone; a process that stops deletes its rows.
 */
#ifndef AWOOOP_FLEET_H
#define AWOOOP_FLEET_H

#include <jansson.h>

#include "awooop/ctx.h"
#include "awooop/err.h"
#include "awooop/policy.h"
#include "awooop/store.h"

typedef struct aw_fleet aw_fleet;

typedef struct {
	aw_store *store;
	aw_policy_cache *policy;
	const char *role; /* all, api, worker, hub, watch, ... */
	int report_ms;	  /* heartbeat; default 5000 */
} aw_fleet_opts;

aw_err aw_fleet_start(const aw_fleet_opts *o, aw_fleet **out, aw_error *err);
/* Stops the reporter and deletes the process's rows. NULL is a no-op. */
void aw_fleet_stop(aw_fleet *f);
const char *aw_fleet_process_id(const aw_fleet *f);
/* Compares what the process serves (the revisions its policy cache last
 * announced) with the store's active pointers of those projects, in one
 * statement, and publishes per (project, family) the lag: seconds since the
 * activation of a revision the process has not learned (since the probe
 * first saw a revocation it has not learned), the worst of the family's
 * contracts, 0 when converged (awooop_policy_convergence_lag_seconds; the
 * series leave the text after three report intervals without a probe).
 * *worst_s (may be NULL): the largest lag. The reporter calls it at every
 * heartbeat; it changes nothing in the cache. */
aw_err aw_fleet_probe(aw_fleet *f, double *worst_s, aw_error *err);

/* The convergence of the contract's last `limit` activations (1..100) as
 * the API answers it (docs/api.md): the live processes serving the contract
 * and, per activation, which of them learned the revision and how long
 * after its commit. */
aw_err aw_fleet_convergence(aw_store *s, const aw_ctx *ctx, const char *family,
			    const char *contract_id, int limit, json_t **out, aw_error *err);

#endif
