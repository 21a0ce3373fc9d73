/*
 * http.h - the HTTP API server (libmicrohttpd in epoll mode on a few threads:
 * an idle or slow connection costs memory, not a thread).
 *
 * Slow clients cannot hold the server: the request head must arrive whole
 * within head_timeout_ms and the rest within request_timeout_s (deadlines that
 * do not restart on each byte), one address holds at most max_per_ip
 * connections, and the key, route and content type are checked from the head
 * before any body byte is kept; so is the room for the body: one project's
 * requests hold at most their bound of body memory at once, the requests
 * without a key a small allowance, all of them the server's budget.
 *
 * Every request gets a request id, a trace (the incoming traceparent continued,
 * or a new one) and a deadline; every error is application/problem+json
 * (RFC 9457) with a stable `code`. The project a request acts on comes from its
 * API key, never from the URL alone.
 */
#ifndef AWOOOP_HTTP_H
#define AWOOOP_HTTP_H

#include <stddef.h>
#include <sys/socket.h>

#include "awooop/contract.h"
#include "awooop/store.h"

typedef struct aw_http aw_http;

typedef struct {
	const char *listen; /* "127.0.0.1:8080"; port 0 picks a free one */
	size_t body_limit;  /* bytes; default 1 MiB */
	size_t body_memory; /* all bodies being received together; default 64 MiB */
	/* the bodies one project's requests hold at once: "N" or
	 * "N,PROJECT=M,..." bytes (aw_bounds: the platform's, never a tenant's);
	 * NULL: a quarter of body_memory, at least body_limit */
	const char *project_body_memory;
	/* the same for all requests without a valid API key together (an
	 * approval token, Telegram's webhook); 0: a sixteenth of body_memory,
	 * at least body_limit */
	size_t anon_body_memory;
	int max_connections;		/* default 4096 (and at most the fd limit allows) */
	int max_per_ip;			/* connections from one address; default 64 */
	int threads;			/* event-loop threads; default 8 */
	int head_timeout_ms;		/* the whole request head, from connect or the previous
				    request's end (also the keep-alive idle limit); 10000 */
	int request_timeout_s;		/* body and handling, from the end of the head; 30 */
	const char *redis_url;		/* checked by /readyz when set */
	aw_contracts *contracts;	/* borrowed; the contract registry */
	struct aw_llm *llm;		/* borrowed; the LLM gateway (NULL: /v1/chat answers 503) */
	struct aw_policy_cache *policy; /* borrowed; the guard's cache (budget status) */
	struct aw_mcp *mcp;		/* borrowed; the MCP gateway (NULL: /mcp answers 503) */
	struct aw_calls *calls;		/* borrowed; the calls in flight: a suspension cuts them */
	const char *mcp_origins;	/* browser origins that may call /mcp (','-separated;
				    NULL: loopback ones; aw_mcp_origin_allowed) */
	struct aw_approvals *approvals; /* borrowed; approval tokens and decisions */
	struct aw_kv *kv; /* borrowed; key-migration phases and counters (NULL: store only) */
	const struct aw_hub_opts *channels; /* borrowed; webhook mode (NULL: 404) */
	int llm_timeout_s;		    /* a model call's whole life on the API; default 600 */
	const char *tls_cert, *tls_key;	    /* PEM files: HTTPS (TLS 1.2+) instead of HTTP */
	const char *tls_client_ca;	    /* PEM: every connection must present a client
					   certificate this CA signed */
} aw_http_opts;

/* AW_E_CONFIG when project_body_memory is not a bound (naming
 * --project-body-memory). */
aw_err aw_http_start(const aw_http_opts *opts, aw_store *store, aw_http **out, aw_error *err);
/* The port actually bound. */
int aw_http_port(const aw_http *h);
/* --listen HOST:PORT: an IPv4 address (127.0.0.1:8080), an IPv6 address in
 * brackets ([::1]:8080, [::]:8080 - which takes IPv4 too) or a host name
 * (localhost:8080: with resolve, its first IPv4 address, else its first IPv6
 * one; without, AW_E_CONFIG). Port 0: any free one. AW_E_CONFIG with what a
 * good one looks like. */
aw_err aw_http_listen_parse(const char *s, int resolve, struct sockaddr_storage *out,
			    socklen_t *len, aw_error *err);
/* "127.0.0.1:8080" or "[::1]:8080". */
void aw_http_listen_format(const struct sockaddr_storage *sa, char *out, size_t cap);
/* Shutdown, first step: stops accepting connections, refuses new requests
 * on open ones (503 E-REQ-013, Connection: close) and ends the endless event
 * streams (MCP session GET streams) at once. Returns at once. */
void aw_http_quiesce(aw_http *h);
/* Shutdown, second step (quiescing first if not done): waits until drain_ms
 * after the quiesce for the requests in flight (model calls, streams, tool
 * calls) to finish; the ones left are then cut (a parked one answers 503
 * E-REQ-013, a stream ends without its last chunk). Returns when none is in
 * flight, or about a second after the bound. Then stop the services that
 * answer parked requests, then aw_http_stop. */
void aw_http_drain(aw_http *h, int drain_ms);
/* Resumes and closes every connection left (drained or not) and frees h. */
void aw_http_stop(aw_http *h);
/* Re-reads the TLS certificate and key (SIGHUP): new connections get the new
 * ones, open ones keep theirs. A bad file keeps the old material. */
aw_err aw_http_reload(aw_http *h, aw_error *err);
/* The route table, entry i (method, path template); 0 past its end. The
 * OpenAPI test holds docs/api/openapi.json to it. */
int aw_route_at(size_t i, const char **method, const char **tmpl);

#endif
