/*
 * upstream_internal.h - what the two transports of an upstream share
 * (upstream.c, upstream_http.c, upstream_stdio.c): the upstream itself, the
 * scrubbing of its credentials from what it says, and the JSON-RPC lines the
 * gateway writes to it. The gateway sees only mcp_internal.h.
 */
#ifndef AW_MCP_UPSTREAM_INTERNAL_H
#define AW_MCP_UPSTREAM_INTERNAL_H

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "awooop/buf.h"
#include "mcp_internal.h"
#include "stdio_sandbox.h"

#define MAX_SECRETS 80
#define IDLE_HANDLES 64

typedef struct pending {
	json_int_t id;
	int done;
	pthread_cond_t cv; /* its waiter only: no herd of 32 threads per answer */
	json_t *msg;	   /* the response (owned) */
	const mcp_peer *peer;
	const char *token; /* its progress token (a string), or NULL */
	json_t *inbox;	   /* the upstream's requests and notifications for it, in
			      order, handled by its waiter (owned; NULL: none) */
	struct pending *next;
} pending;

struct mcp_up {
	char project[64], provider[40];
	json_t *config;
	char *secrets_dir;
	int allow_private, stdio, timeout_ms;
	const aw_sbx_policy *sbx;
	atomic_llong next_id;
	atomic_int list_changed;
	pthread_mutex_t mu; /* everything below */
	/* http */
	char url[2100];
	char session[256];
	char version[16];
	int initialized;
	CURL *idle[IDLE_HANDLES];
	CURLM *idle_m[IDLE_HANDLES]; /* each handle's multi: it holds the connection */
	int nidle;
	/* stdio */
	pid_t pid;
	int in_fd, out_fd;
	pthread_t reader;
	int reader_live, alive, gen;
	pending *waiting;
	char *secrets[MAX_SECRETS]; /* the child's resolved values, for scrubbing */
	int nsecrets;
	int64_t started_ns, retry_at_ns, backoff_ms;
	int stopping;
	char *cgroup_dir;  /* each child in a memory cgroup of its own under it */
	int memory_mb;	   /* its limit (< 0: none) */
	long pids_max;	   /* pids.max where the cgroup has the pids controller */
	char cgroup[4096]; /* the running child's cgroup, "" none */
	/* events: the hook, and an HTTP upstream's GET stream (its thread) */
	void (*event)(void *ud, const char *project, const json_t *msg);
	void *event_ud;
	pthread_t listener;
	int listening;
	atomic_int halt;
};

/* upstream.c: scrubbing */
void mcp_scrub(aw_buf *b, char *const *secrets, int n);
void mcp_scrub_json(json_t *j, char *const *secrets, int ns);
void mcp_wipe_str(char *s);
aw_err mcp_rewrap(aw_error *err, aw_err e);
/* upstream.c: JSON-RPC */
int mcp_is_event(const char *method);
char *mcp_request_line(json_int_t id, const char *method, const json_t *params);
json_t *mcp_init_params(void);
aw_err mcp_answer_of(json_t *msg, json_t **result, json_t **rpc_error, aw_error *err);
char *mcp_cancel_line(json_int_t id);
json_t *mcp_peer_answer(const mcp_peer *peer, const json_t *req);

/* upstream_http.c */
aw_err mcp_http_request(mcp_up *u, const char *method, const json_t *params, int timeout_ms,
			const mcp_peer *peer, json_t **result, json_t **rpc_error, aw_error *err);

/* upstream_stdio.c */
aw_err mcp_stdio_request(mcp_up *u, const char *method, const json_t *params, int timeout_ms,
			 const mcp_peer *peer, json_t **result, json_t **rpc_error, aw_error *err);
void mcp_stdio_stop(mcp_up *u);

#endif
