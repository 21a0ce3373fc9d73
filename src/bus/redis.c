/*
 * redis.c - the Redis backend of the bus (hiredis; connections, ACL
 * authentication and TLS: redis_conn.c).
 *
 * Publishing uses one synchronous connection under the bus mutex, reconnecting
 * once on failure. The subscription runs on its own thread: connect, PSUBSCRIBE,
 * then poll the socket (200 ms ticks, so close() is prompt) and dispatch
 * pmessages. A lost connection is retried with jittered exponential backoff
 * (50 ms .. 2 s); each successful (re)subscribe calls the resync callback,
 * because messages published meanwhile are gone.
 */
#include <hiredis/hiredis.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "awooop/crypto.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "bus_internal.h"

/* A connection of the bus: a TLS handshake gets more time. */
static redisContext *bus_connect(aw_bus *b, aw_error *err)
{
	return aw_redis_connect(&b->url, b->url.tls ? 3000 : 1000, err);
}

aw_err bus_redis_publish(aw_bus *b, const char *channel, const char *payload, aw_error *err)
{
	pthread_mutex_lock(&b->mu);
	redisReply *r = NULL;
	for (int attempt = 0; attempt < 2 && !r; attempt++) {
		if (!b->pub)
			b->pub = bus_connect(b, err);
		if (!b->pub) {
			pthread_mutex_unlock(&b->mu);
			return err->err;
		}
		r = redisCommand(b->pub, "PUBLISH %s %s", channel, payload);
		if (!r) { /* connection broken: drop it, try once more */
			aw_redis_free(b->pub);
			b->pub = NULL;
		}
	}
	pthread_mutex_unlock(&b->mu);
	if (!r)
		return aw_fail(err, AW_E_BUS_UNAVAILABLE, "redis publish failed");
	int ok = r->type == REDIS_REPLY_INTEGER;
	freeReplyObject(r);
	return ok ? AW_OK : aw_fail(err, AW_E_BUS_UNAVAILABLE, "redis refused the publish");
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void dispatch(aw_bus *b, redisReply *r)
{
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
	    r->element[0]->type != REDIS_REPLY_STRING)
		return;
	const char *kind = r->element[0]->str;
	if (!strcmp(kind, "psubscribe")) {
		b->connected = 1;
		aw_metrics_bus_connected(1);
		aw_log(AW_LOG_INFO, NULL, "bus subscribed", "pattern", b->pattern, NULL);
		if (b->resync)
			b->resync(b->ud);
	} else if (!strcmp(kind, "pmessage") && r->elements == 4) {
		b->handler(b->ud, r->element[2]->str, r->element[3]->str, r->element[3]->len);
	}
}

static void *subscriber(void *arg)
{
	aw_bus *b = arg;
	int backoff = 50;
	int warned = 0;
	while (!b->stop) {
		aw_error err = {0};
		redisContext *c = bus_connect(b, &err);
		if (!c && !warned++) /* once per outage */
			aw_log(AW_LOG_WARN, NULL, "bus cannot connect; retrying", "detail", err.msg,
			       NULL);
		if (!c) {
			aw_metrics_bus_connected(0);
			uint32_t j = 0;
			aw_random_bytes(&j, sizeof j);
			sleep_ms(backoff / 2 + (int)(j % (uint32_t)(backoff / 2 + 1)));
			backoff = backoff * 2 > 2000 ? 2000 : backoff * 2;
			continue;
		}
		backoff = 50;
		warned = 0;
		redisAppendCommand(c, "PSUBSCRIBE %s", b->pattern);
		int done = 0;
		while (!done)
			if (redisBufferWrite(c, &done) != REDIS_OK)
				break;
		while (!b->stop && done) {
			struct pollfd p = {.fd = c->fd, .events = POLLIN};
			int rc = poll(&p, 1, 200);
			if (rc < 0 || (rc > 0 && redisBufferRead(c) != REDIS_OK))
				break;
			void *reply = NULL;
			int broken = 0;
			while (redisReaderGetReply(c->reader, &reply) == REDIS_OK && reply) {
				dispatch(b, reply);
				freeReplyObject(reply);
				reply = NULL;
			}
			if (c->reader->err)
				broken = 1;
			if (broken)
				break;
		}
		if (b->connected && !b->stop)
			aw_log(AW_LOG_WARN, NULL, "bus disconnected; reconnecting", NULL);
		b->connected = 0;
		if (!b->stop)
			aw_metrics_bus_connected(0);
		aw_redis_free(c);
	}
	return NULL;
}

aw_err bus_redis_start(aw_bus *b, aw_error *err)
{
	b->stop = 0;
	if (pthread_create(&b->sub_thread, NULL, subscriber, b) != 0)
		return aw_fail(err, AW_E_INTERNAL, "cannot start the bus thread");
	b->sub_started = 1;
	return AW_OK;
}

void bus_redis_stop_subscriber(aw_bus *b)
{
	b->stop = 1;
	if (b->sub_started)
		pthread_join(b->sub_thread, NULL);
	b->sub_started = 0;
	b->connected = 0;
}

void bus_redis_stop(aw_bus *b)
{
	bus_redis_stop_subscriber(b);
	if (b->pub)
		aw_redis_free(b->pub);
	b->pub = NULL;
}
