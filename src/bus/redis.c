/*
 * redis.c - the Redis side of the bus adapter (hiredis). For now: URL parsing
 * and a bounded PING for readiness checks.
 */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/bus.h"

aw_err aw_bus_redis_parse_url(const char *url, char *host, size_t hostcap, int *port,
			      int *db, aw_error *err)
{
	const char *p = url && strncmp(url, "redis://", 8) == 0 ? url + 8 : NULL;
	if (!p || strchr(p, '@'))
		return aw_fail(err, AW_E_CONFIG, "--redis must be redis://HOST:PORT[/DB]");
	const char *colon = strchr(p, ':');
	const char *slash = strchr(p, '/');
	size_t hlen = colon ? (size_t)(colon - p) : slash ? (size_t)(slash - p) : strlen(p);
	if (hlen == 0 || hlen >= hostcap)
		return aw_fail(err, AW_E_CONFIG, "--redis must be redis://HOST:PORT[/DB]");
	memcpy(host, p, hlen);
	host[hlen] = '\0';
	*port = 6379;
	*db = 0;
	char *end = NULL;
	if (colon) {
		long v = strtol(colon + 1, &end, 10);
		if (end == colon + 1 || v < 1 || v > 65535 || (*end && *end != '/'))
			return aw_fail(err, AW_E_CONFIG, "bad port in --redis URL");
		*port = (int)v;
	}
	if (slash && slash[1]) {
		long v = strtol(slash + 1, &end, 10);
		if (*end || v < 0 || v > 15)
			return aw_fail(err, AW_E_CONFIG, "bad database number in --redis URL");
		*db = (int)v;
	}
	return AW_OK;
}

aw_err aw_bus_redis_ping(const char *url, int timeout_ms, aw_error *err)
{
	char host[256];
	int port, db;
	aw_err e = aw_bus_redis_parse_url(url, host, sizeof host, &port, &db, err);
	if (e)
		return e;
	struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
	redisContext *c = redisConnectWithTimeout(host, port, tv);
	if (!c || c->err) {
		e = aw_fail(err, AW_E_BUS_UNAVAILABLE, "redis unreachable: %s",
			    c ? c->errstr : "out of memory");
		redisFree(c);
		return e;
	}
	redisSetTimeout(c, tv);
	redisReply *r = redisCommand(c, "PING");
	if (!r || r->type != REDIS_REPLY_STATUS || strcmp(r->str, "PONG") != 0)
		e = aw_fail(err, AW_E_BUS_UNAVAILABLE, "redis did not answer PING");
	if (r)
		freeReplyObject(r);
	redisFree(c);
	return e;
}
