/*
 * mcp_internal.h - what the files of src/mcp/ share: an upstream (one MCP
 * server of one project: a Streamable HTTP endpoint or a stdio child;
 * upstream.c, its transports in upstream_http.c and upstream_stdio.c), the
 * requests the gateway makes of it, and tool definition hashing (catalog.c).
 * Module-internal names are mcp_ (the pins keep aw_: tests call them); the
 * gateway's own state is in mcp_gateway.h.
 */
#ifndef AW_MCP_INTERNAL_H
#define AW_MCP_INTERNAL_H

#include <jansson.h>
#include <stdatomic.h>

#include "awooop/err.h"

/* Responses larger than this are refused (E-MCP-GATE-009), whatever the cut. */
#define AW_MCP_MAX_RESPONSE (8u << 20)

typedef struct mcp_up mcp_up;

typedef struct {
	const char *project, *provider;
	const json_t *config; /* the contract's upstream object (copied) */
	const char *secrets_dir;
	int allow_private;
	const struct aw_sbx_policy *sbx; /* what stdio upstreams may run, and how */
	int timeout_ms;			 /* the upstream's default */
	const char *cgroup_dir;		 /* stdio: each child in a memory cgroup under it */
	int memory_mb;			 /* its limit (< 0: none) */
	long pids_max;			 /* its pids.max (cgroup v2 with pids) */
	/* what the upstream says of its resources outside any request
	 * (notifications/resources/updated), from the upstream's threads */
	void (*event)(void *ud, const char *project, const json_t *msg);
	void *event_ud;
} mcp_up_opts;

/* Who a request to an upstream is made for, while it runs: the upstream may
 * ask that client something (sampling/createMessage, elicitation/create,
 * roots/list) or tell it something (progress, log messages) before it
 * answers. An HTTP upstream does so on the request's own response stream; a
 * stdio upstream's requests and log messages are the request's only while
 * it is the one request with a peer in flight there (progress goes by its
 * token). Both callbacks run on the requesting thread. */
typedef struct mcp_peer {
	const atomic_int *cancel; /* once set: the request is given up */
	/* the upstream's request msg: the JSON-RPC response to send it back
	 * (new reference, msg's id); NULL: refused with -32601 */
	json_t *(*request)(void *ud, const json_t *msg);
	void (*notify)(void *ud, const json_t *msg);
	void *ud;
} mcp_peer;

aw_err mcp_up_new(const mcp_up_opts *o, mcp_up **out, aw_error *err);
/* Stops a stdio child (SIGTERM, then SIGKILL), closes connections. */
void mcp_up_free(mcp_up *u);
/* One request. AW_OK with *result (new reference), or AW_E_MCP_UPSTREAM with
 * err (and *rpc_error, a new reference, when the upstream answered a JSON-RPC
 * error). Credentials resolved for this request (or the child) are scrubbed
 * from what comes back. peer (may be NULL: the upstream's requests refused,
 * its notifications dropped): once peer->cancel is set, the request is given
 * up (AW_E_MCP_CANCELLED, within 50 ms) and the upstream is sent
 * notifications/cancelled for it. */
aw_err mcp_up_request(mcp_up *u, const char *method, const json_t *params, int timeout_ms,
		      const mcp_peer *peer, json_t **result, json_t **rpc_error, aw_error *err);
/* Makes sure the upstream's events reach opts.event: an HTTP upstream's
 * own event stream (GET) is held open from now on by a thread of its own,
 * reconnected with backoff (1 s to 30 s), given up when the upstream answers
 * 405; a stdio child's come with its output anyway. */
void mcp_up_listen(mcp_up *u);
/* Set when a stdio upstream sent notifications/tools/list_changed since the
 * last call (and cleared by it). */
int mcp_up_list_changed(mcp_up *u);

/* Pins of a tool definition (a revision's tools[].pin).
 *  - "sha256v2:<hex>" (what a publish writes): SHA-256 of
 *    the JCS of the whole definition as the upstream lists it - every member
 *    the gateway passes on to clients (title, annotations, _meta, icons,
 *    outputSchema, and any member a later protocol adds).
 *  - "sha256:<hex>" (older revisions): of {name, description, inputSchema,
 *    outputSchema} only (the members present). Still honoured until the
 *    revision is replaced; a tool pinned so is listed with those four
 *    members only (mcp_def_v1), so nothing unpinned reaches a client.
 * -1 on OOM. */
#define AW_MCP_PIN_V1 "sha256:"
#define AW_MCP_PIN_V2 "sha256v2:"
#define AW_MCP_PIN_MAX 80
int mcp_def_pin(const json_t *def, char out[AW_MCP_PIN_MAX]);
int mcp_def_pin_v1(const json_t *def, char out[AW_MCP_PIN_MAX]);
/* The members of def a "sha256:" pin covers (a new object; NULL on OOM). */
json_t *mcp_def_v1(const json_t *def);

#endif
