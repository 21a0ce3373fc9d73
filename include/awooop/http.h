/*
 * http.h - the HTTP API server (libmicrohttpd, one thread per connection).
 *
 * Every request gets a request id, a trace (the incoming traceparent continued,
 * or a new one) and a deadline; every error is application/problem+json
 * (RFC 9457) with a stable `code`. The project a request acts on comes from its
 * API key, never from the URL alone.
 */
#ifndef AWOOOP_HTTP_H
#define AWOOOP_HTTP_H

#include <stddef.h>

#include "awooop/contract.h"
#include "awooop/store.h"

typedef struct aw_http aw_http;

typedef struct {
	const char *listen;	 /* "127.0.0.1:8080"; port 0 picks a free one */
	size_t body_limit;	 /* bytes; default 1 MiB */
	int max_connections;	 /* default 256 */
	int request_timeout_s;	 /* default 30 */
	const char *redis_url;	 /* checked by /readyz when set */
	aw_contracts *contracts; /* borrowed; the contract registry */
} aw_http_opts;

aw_err aw_http_start(const aw_http_opts *opts, aw_store *store, aw_http **out, aw_error *err);
/* The port actually bound. */
int aw_http_port(const aw_http *h);
void aw_http_stop(aw_http *h);

#endif
