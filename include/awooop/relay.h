/*
 * relay.h - the ADR-113 outbox relay: delivers contract_outbox events to the
 * bus channel platform:contract:invalidate:{project}, at least once, in commit
 * order, then marks them delivered.
 *
 * It wakes at once on activations in this process (aw_outbox_kick) and, on
 * PostgreSQL, on NOTIFY awooop_outbox from any process; a poll (default 1 s)
 * is the safety net. Several relays at once are safe (SKIP LOCKED). A failed
 * publish counts relay_attempts and backs off with jitter; nothing is dropped.
 * Delivered events are pruned after the retention period.
 */
#ifndef AWOOOP_RELAY_H
#define AWOOOP_RELAY_H

#include "awooop/bus.h"
#include "awooop/store/relay.h"

typedef struct aw_relay aw_relay;

typedef struct {
	int batch;	    /* events per claim; default 100 */
	int poll_ms;	    /* safety-net poll; default 1000 */
	int retention_s;    /* keep delivered events this long; default 7 days */
	int backoff_max_ms; /* cap of the retry backoff; default 5000 */
} aw_relay_opts;

aw_err aw_relay_start(aw_store *s, aw_bus *bus, const aw_relay_opts *opts, aw_relay **out,
		      aw_error *err);
/* Finishes the current round and stops. */
void aw_relay_stop(aw_relay *r);

/* One round: claim, publish, mark. *delivered gets how many were delivered;
 * AW_E_BUS_UNAVAILABLE when a publish failed (the rest stay pending). */
aw_err aw_relay_round(aw_store *s, aw_bus *bus, int batch, int *delivered, aw_error *err);

/* Wakes every relay of this process (called after an activation commits). */
void aw_outbox_kick(void);

#endif
