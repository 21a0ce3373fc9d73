/*
 * store/relay.h - the outbox relay's platform path (all projects).
 * Part of the store interface (store.h: open, migrate, transactions); only
 * the services of this domain include it. Same conventions as store.h: every
 * call runs in the caller's transaction for its project; arrays returned are
 * malloc'd and freed with the *_free function named here or free().
 */
#ifndef AWOOOP_STORE_RELAY_H
#define AWOOOP_STORE_RELAY_H

#include "awooop/store/contract.h"

/* ---- outbox relay (platform path: all projects) ---- */
/* Opens the relay's write transaction (no project). */
aw_err aw_store_relay_begin(aw_store *s, aw_txn **out, aw_error *err);
/* Undelivered events in commit order, locked for this txn (PostgreSQL: SKIP
 * LOCKED, so concurrent relays take different events). */
aw_err aw_store_relay_claim(aw_txn *t, int limit, aw_outbox_event **out, int *n, aw_error *err);
/* delivered=1 sets delivered_at; 0 counts a failed attempt. */
aw_err aw_store_relay_done(aw_txn *t, const char *event_id, int delivered, aw_error *err);
/* Deletes events delivered before `before`; *n gets how many. */
aw_err aw_store_relay_prune(aw_store *s, const char *before, int64_t *n, aw_error *err);
/* oldest: the created_at of the oldest undelivered event, "" when none. */
aw_err aw_store_relay_stats(aw_store *s, int64_t *undelivered, char *oldest, aw_error *err);

#endif
