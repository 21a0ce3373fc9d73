/*
 * bus.c - the bus interface and its local backend: publish calls the one
 * subscriber of this bus directly when the channel matches its pattern.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus_internal.h"

#include "awooop/alloc.h"
#include "awooop/str.h"

int bus_pattern_match(const char *pattern, const char *channel)
{
	size_t n = strlen(pattern);
	if (n && pattern[n - 1] == '*')
		return strncmp(pattern, channel, n - 1) == 0;
	return strcmp(pattern, channel) == 0;
}

aw_err aw_bus_open(const char *url, aw_bus **out, aw_error *err)
{
	aw_bus *b = aw_calloc(1, sizeof *b);
	if (!b)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	pthread_mutex_init(&b->mu, NULL);
	if (url && (!strncmp(url, "redis://", 8) || !strncmp(url, "rediss://", 9))) {
		aw_err e = aw_redis_url_parse(url, &b->url, err);
		if (e) {
			aw_bus_close(b);
			return e;
		}
		b->redis = 1;
	} else if (url && strcmp(url, "local") != 0) {
		aw_bus_close(b);
		return aw_fail(err, AW_E_CONFIG,
			       "the bus is \"local\" or a redis:// or rediss:// URL");
	}
	*out = b;
	return AW_OK;
}

void aw_bus_close(aw_bus *b)
{
	if (!b)
		return;
	if (b->redis)
		bus_redis_stop(b);
	pthread_mutex_destroy(&b->mu);
	free(b);
}

const char *aw_bus_kind(const aw_bus *b)
{
	return b->redis ? "redis" : "local";
}

int aw_bus_connected(aw_bus *b)
{
	return b->redis ? b->connected : 1;
}

aw_err aw_bus_publish(aw_bus *b, const char *channel, const char *payload, aw_error *err)
{
	if (b->redis)
		return bus_redis_publish(b, channel, payload, err);
	/* local: deliver under the lock, so unsubscribe waits for a running handler */
	pthread_mutex_lock(&b->mu);
	if (b->subscribed && bus_pattern_match(b->pattern, channel))
		b->handler(b->ud, channel, payload, strlen(payload));
	pthread_mutex_unlock(&b->mu);
	return AW_OK;
}

void aw_bus_unsubscribe(aw_bus *b)
{
	if (!b)
		return;
	if (b->redis)
		bus_redis_stop_subscriber(b);
	pthread_mutex_lock(&b->mu);
	b->subscribed = 0;
	b->handler = NULL;
	b->resync = NULL;
	b->ud = NULL;
	pthread_mutex_unlock(&b->mu);
}

aw_err aw_bus_subscribe(aw_bus *b, const char *pattern, aw_bus_handler h, aw_bus_resync resync,
			void *ud, aw_error *err)
{
	pthread_mutex_lock(&b->mu);
	if (b->subscribed) {
		pthread_mutex_unlock(&b->mu);
		return aw_fail(err, AW_E_INTERNAL, "one subscription per bus");
	}
	if (AW_STR_COPY(b->pattern, pattern) < 0) {
		pthread_mutex_unlock(&b->mu);
		return aw_fail(err, AW_E_INTERNAL, "bus pattern longer than %zu bytes",
			       sizeof b->pattern - 1);
	}
	b->handler = h;
	b->resync = resync;
	b->ud = ud;
	b->subscribed = 1;
	pthread_mutex_unlock(&b->mu);
	if (b->redis)
		return bus_redis_start(b, err);
	if (resync)
		resync(ud);
	return AW_OK;
}
