/*
 * bus.h - the message bus: "local" (in-process fan-out) or "redis://HOST:PORT".
 *
 * Publish is at-most-once per call (the outbox relay retries). Subscribers get
 * messages on a bus thread. Pub/sub loses messages while disconnected, so every
 * (re)connect of a Redis subscription calls the resync callback: caches must
 * re-validate everything against the store. Redis is never the source of
 * truth: losing it slows convergence only.
 */
#ifndef AWOOOP_BUS_H
#define AWOOOP_BUS_H

#include <stddef.h>

#include "awooop/err.h"

typedef struct aw_bus aw_bus;

typedef void (*aw_bus_handler)(void *ud, const char *channel, const char *payload, size_t len);
typedef void (*aw_bus_resync)(void *ud);

/* url: "local" or "redis://HOST:PORT[/DB]". */
aw_err aw_bus_open(const char *url, aw_bus **out, aw_error *err);
/* Stops the subscriber thread, closes connections. */
void aw_bus_close(aw_bus *b);
aw_err aw_bus_publish(aw_bus *b, const char *channel, const char *payload, aw_error *err);
/* One subscription per bus: pattern ending in '*' or an exact channel. resync
 * is called once subscribed and after every reconnect (may be NULL). */
aw_err aw_bus_subscribe(aw_bus *b, const char *pattern, aw_bus_handler h, aw_bus_resync resync,
			void *ud, aw_error *err);
/* Ends the subscription; when it returns the handler is not running and will
 * not be called again (the Redis thread has stopped). */
void aw_bus_unsubscribe(aw_bus *b);
/* 1 while the subscription is connected (local: always). */
int aw_bus_connected(aw_bus *b);
const char *aw_bus_kind(const aw_bus *b);

#endif
