/*
 * redis.h - connections to Redis for every Redis user (the bus, the key
 * wrapper, health checks): the URL, ACL authentication and TLS.
 *
 *   redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]
 *   rediss://[[USER]:PASSWORD@]HOST[:PORT][/DB][?tls_ca=PATH&tls_cert=PATH
 *            &tls_key=PATH&tls_server_name=NAME]
 *
 * USER and PASSWORD are percent-decoded (a password with '@' or ':' is
 * written %40, %3A). rediss:// speaks TLS 1.2+ (OpenSSL), verifies the
 * server's certificate against tls_ca (or the system's CAs) and its name
 * (tls_server_name, or HOST), and presents a client certificate when
 * tls_cert and tls_key are given. hiredis 0.14 (Debian 12) has no TLS of its
 * own: a TLS connection is a socketpair whose other end a small thread
 * relays through the TLS session.
 *
 * A password is never printed: aw_redis_url_redact() is the form logs,
 * errors and health answers show.
 */
#ifndef AWOOOP_REDIS_H
#define AWOOOP_REDIS_H

#include <stddef.h>

#include "awooop/err.h"

typedef struct {
	char host[256];
	int port, db, tls;
	char user[128], password[256]; /* decoded; "" = none */
	char ca[512], cert[512], key[512], server_name[256];
} aw_redis_url;

struct redisContext;

/* Parses url; E-CONFIG-001 with what is wrong (never the password). */
aw_err aw_redis_url_parse(const char *url, aw_redis_url *out, aw_error *err);
/* url with its password replaced by "***" (or a placeholder when it is not
 * a URL at all), for logs and answers. */
void aw_redis_url_redact(const char *url, char *out, size_t cap);
/* A connection: TCP or TLS, AUTH, SELECT, then PING; timeout_ms for each
 * step and for every command after (redisSetTimeout). NULL with err
 * (E-BUS-001) saying which step failed. */
struct redisContext *aw_redis_connect(const aw_redis_url *u, int timeout_ms, aw_error *err);
/* Frees a connection of aw_redis_connect (and waits for its TLS relay). */
void aw_redis_free(struct redisContext *c);
/* Connects to url and back: /readyz. */
aw_err aw_redis_ping(const char *url, int timeout_ms, aw_error *err);

#endif
