/*
 * bus_internal.h - the bus struct shared by bus.c (local backend, dispatch) and
 * redis.c (Redis backend).
 */
#ifndef AW_BUS_INTERNAL_H
#define AW_BUS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "awooop/bus.h"
#include "awooop/redis.h"

struct aw_bus {
	int redis;
	pthread_mutex_t mu;
	char pattern[128];
	aw_bus_handler handler;
	aw_bus_resync resync;
	void *ud;
	int subscribed;
	/* redis */
	aw_redis_url url;
	void *pub; /* redisContext *, guarded by mu */
	pthread_t sub_thread;
	int sub_started;
	atomic_bool stop, connected; /* read by the subscriber thread and callers */
};

int bus_pattern_match(const char *pattern, const char *channel);
aw_err bus_redis_publish(aw_bus *b, const char *channel, const char *payload, aw_error *err);
aw_err bus_redis_start(aw_bus *b, aw_error *err);
void bus_redis_stop(aw_bus *b);
void bus_redis_stop_subscriber(aw_bus *b);

#endif
