/*
 * bus.h - the message bus adapter (backends: local, redis).
 *
 * Round 1 only needs to know that Redis is reachable (/readyz in the cluster
 * shape); publish/subscribe for contract invalidation arrives with ADR-113.
 * Redis is never the source of truth: losing it slows convergence only.
 */
#ifndef AWOOOP_BUS_H
#define AWOOOP_BUS_H

#include "awooop/err.h"

/* Parses "redis://HOST:PORT[/DB]" (no credentials in round 1). */
aw_err aw_bus_redis_parse_url(const char *url, char *host, size_t hostcap, int *port,
			      int *db, aw_error *err);
/* Connects, PINGs, disconnects within timeout_ms. AW_E_BUS_UNAVAILABLE on failure. */
aw_err aw_bus_redis_ping(const char *url, int timeout_ms, aw_error *err);

#endif
