/*
 * mcp_gateway.h - the MCP gateway's own state, shared by the files that make
 * it up (include/awooop/mcp.h is its public face):
 *
 *   mcp.c            the gateway's life: options, worker and recorder threads
 *   dispatch.c       a request in: answered at once, or queued fairly
 *                    (fairq.c) for a worker that runs it
 *   catalog.c        each project's catalog (tools, upstreams), definitions
 *                    and their pins, tools/list federation, pinning at publish
 *   gates.c          the five gates of a tools/call, its answer and record
 *   relay_methods.c  resources, prompts, completion, logging to the upstreams
 *   session.c        legacy sessions, their GET streams and subscriptions
 *   call.c           a call's answer and event stream, and what its upstream
 *                    asks of its client meanwhile
 *   mcp_recorder.c   what the recorder (call.h) writes: mcp.call / mcp.relay records
 *
 * The upstreams themselves (transports) are behind mcp_internal.h. Locks:
 * g->mu (catalogs, sessions, in-flight list, asks) is taken before a call's
 * base.mu, never after; g->rmu (recorder) on its own.
 */
#ifndef AW_MCP_GATEWAY_H
#define AW_MCP_GATEWAY_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "awooop/bounds.h"
#include "awooop/buf.h"
#include "awooop/envelope.h"
#include "awooop/mcp.h"
#include "awooop/schema.h"
#include "fairq.h"
#include "mcp_internal.h"
#include "stdio_sandbox.h"

#define SUBS_MAX 64 /* resource subscriptions a session */

enum { RELAY_RESOURCES = 1, RELAY_PROMPTS = 2, RELAY_COMPLETION = 4, RELAY_LOGGING = 8 };

/* Gate 4's rate (a tool's rate_limit, an upstream's relay_rate_limit): this
 * process's token bucket, guarded by its owner's mutex (mcp_rate_take). */
typedef struct {
	int rated;
	double tokens, burst, per_ns, per_min;
	int64_t last_ns;
} rate_bucket;

typedef struct upinst {
	atomic_int refs;
	int relay;	    /* RELAY_* the revision lets through to this upstream */
	rate_bucket rate;   /* gate 4 of the relayed methods: relay_rate_limit (mu) */
	char rate_name[48]; /* "@relay.<provider>": no tool's name has an '@' */
	int timeout_ms;	    /* its requests' default: its timeout_ms or the gateway's */
	char provider[40];
	char key[72]; /* hash of the upstream's configuration */
	mcp_up *up;
	pthread_mutex_t mu; /* defs */
	json_t *defs;	    /* {tool name: definition} */
	int64_t fetched_ns;
} upinst;

typedef struct mtool {
	char full[AW_MCP_NAME_MAX + 1];
	const char *name; /* the upstream's name (into the catalog's body) */
	upinst *u;
	int write, enabled, approval;
	int timeout_ms, max_args, max_result;
	const char *pin; /* NULL: not pinned */
	aw_schema *schema;
	rate_bucket rate; /* rate_limit (catalog mu) */
} mtool;

typedef struct catalog {
	atomic_int refs;
	char project[AW_PROJECT_MAX + 1];
	char revision_id[AW_UUID_STR_LEN + 1], body_hash[65];
	json_t *body; /* the gateway's own copy */
	int read_only;
	mtool *tools;
	int ntools;
	upinst *ups[32];
	int nups;
	pthread_mutex_t mu; /* rate buckets */
	struct catalog *next;
} catalog;

enum { CAP_SAMPLING = 1, CAP_ELICITATION = 2, CAP_ROOTS = 4 };

typedef struct msession {
	char id[40], project[AW_PROJECT_MAX + 1], principal[AW_PROJECT_MAX + 1];
	char version[16];
	int caps;	      /* CAP_*: what its client said at initialize it answers */
	char *subs[SUBS_MAX]; /* the resource URIs it subscribed to */
	int nsubs;
	struct aw_mcp_call *listener; /* its GET stream (a reference), or NULL */
	int64_t used_ns;
	struct msession *next;
} msession;

typedef struct record {
	aw_call_rec rec; /* the recorder's queue (call.h) */
	aw_ctx ctx;
	const char *action; /* mcp.call, mcp.relay (static) */
	char tool[AW_MCP_NAME_MAX + 1];
	json_t *payload;
	struct record *next;
} record;

struct aw_mcp_call {
	aw_call base; /* refs, mu, the client's event stream (call.h) */
	aw_mcp *g;
	aw_ctx ctx;
	aw_mcp_msg msg;
	aw_mcp_meta meta;
	char version[16], run_id[AW_UUID_STR_LEN + 1];
	int done, status; /* (base.mu) */
	json_t *response;
	char session[40];
	/* cancellation: the legacy session the request came in (its client
	 * names it in notifications/cancelled), set once it is cancelled (by
	 * its client, its run step, or a suspension: base.cut); listed in the
	 * registry while a worker runs it */
	char req_session[40];
	atomic_int cancel;
	/* the client's event stream (base.out): the upstream's requests and
	 * notifications during the call, then the answer, as SSE bytes */
	int streaming;	    /* (base.mu) */
	pthread_cond_t cv;  /* an answer to one of its asks arrived, or the
			       client hung up (base.gone) */
	json_t *progress;   /* the client's progress token, or NULL */
	char up_token[32];  /* the token the upstream is given in its place */
	int ask_timeout_ms; /* how long an ask may wait for the client */
};

/* A request of an upstream's, asked of the client of a call (g->mu lists
 * it; its answer is set under the call's mu). */
typedef struct ask {
	char id[32]; /* the id the client sees */
	aw_mcp_call *call;
	json_t *answer; /* the client's response message */
	struct ask *next;
} ask;

struct aw_mcp {
	aw_mcp_opts o;
	char contract_id[AW_PROJECT_MAX + 1];
	char *secrets_dir;
	aw_sbx_policy *sbx; /* the operator's allow-list and the children's box */
	pthread_mutex_t mu; /* catalogs, sessions */
	catalog *catalogs;
	msession *sessions;
	int nsessions;
	aw_calls *calls; /* the in-flight registry (o.calls or own_calls) */
	aw_calls *own_calls;
	int door;	     /* ours in calls (mcp_door) */
	ask *asks;	     /* upstream requests waiting for a client's answer */
	atomic_llong serial; /* asks' ids and progress tokens */
	/* workers, fed fairly between projects (fairq.h) */
	aw_bounds per_project; /* requests of one project run at once */
	aw_fairq *fq;
	pthread_t *workers;
	int nworkers;
	/* the recorder (call.h): audit records, and its chore: the revoked
	 * catalogs to free (dropped, dmu) */
	aw_recorder *rec;
	pthread_mutex_t dmu;
	catalog *dropped;
	atomic_int stopping;
};

typedef struct {
	int gate;
	aw_err code;
	const char *outcome; /* ok, tool_error, refused, failed, cancelled */
	mtool *t;
	int cut;
	size_t result_bytes;
	json_t *args_audit;
	long long upstream_code;
	int has_upstream_code;
} call_note;

/* What a relayed method's mcp.relay record says besides the envelope (the
 * code it ended with is read from the answer itself). */
typedef struct {
	int gate;	      /* 4 (suspended), 5 (the upstream), 0 */
	const char *outcome;  /* ok, refused, failed, cancelled */
	const char *upstream; /* the one upstream that answered a read, get or completion */
	const char *asked[32];
	int nasked;
	/* from the answer, read before it goes to the client */
	int error;
	long long rpc_code;
	char code[48];
} relay_note;

/* An integer member of a contract object, or def. */
static inline int mcp_int_of(const json_t *o, const char *k, int def)
{
	json_t *v = json_object_get(o, k);
	return v ? (int)json_integer_value(v) : def;
}

/* catalog.c */
void mcp_catalog_put(catalog *c);
catalog *mcp_catalog_get(aw_mcp *g, const aw_ctx *ctx, aw_err *e, aw_error *err);
void mcp_on_change(void *ud, const char *project, const char *family, const char *contract_id,
		   const char *revision_id, const char *source);
aw_err mcp_defs_get(aw_mcp *g, upinst *u, int fresh, const char *name, const char *want,
		    char pin[AW_MCP_PIN_MAX], json_t **copy, aw_error *err);
json_t *mcp_list_tools(aw_mcp *g, catalog *c);

/* gates.c */
json_t *mcp_gate_error(const json_t *id, aw_err code, int gate, const char *msg,
		       const char *pointer);
json_t *mcp_upstream_error(const json_t *id, json_t *rpc, int gate);
const char *mcp_suspended(aw_mcp *g, const aw_ctx *ctx);
void mcp_redact_result(const char *project, json_t *res);
void mcp_rate_init(rate_bucket *r, const json_t *rl);
long mcp_rate_take(aw_mcp *g, const aw_ctx *ctx, pthread_mutex_t *mu, rate_bucket *r,
		   const char *name);
json_t *mcp_tools_call(aw_mcp *g, aw_mcp_call *call, catalog *c, call_note *n);
void mcp_audit_call(aw_mcp *g, aw_mcp_call *call, catalog *c, call_note *n, int64_t t0);
/* mcp_span.c: the tool call's trace span (otel.h), begun at t0. */
void mcp_span(const aw_mcp_call *call, const call_note *n, int64_t t0);

/* relay_methods.c */
int mcp_relay_kind(const char *m);
json_t *mcp_relay(aw_mcp *g, aw_mcp_call *call, catalog *c, int kind, relay_note *rn);
void mcp_audit_relay(aw_mcp *g, aw_mcp_call *call, catalog *c, const relay_note *rn, int64_t t0);

/* session.c */
void mcp_session_new(aw_mcp *g, aw_mcp_call *c);
void mcp_session_free(msession *s);
int mcp_session_caps(aw_mcp *g, const aw_mcp_call *c);
int mcp_session_sub(aw_mcp *g, const aw_mcp_call *c, const char *uri, int on);
void mcp_to_sessions(aw_mcp *g, const char *project, const char *method, const char *uri);
void mcp_upstream_event(void *ud, const char *project, const json_t *msg);

/* call.c */
void mcp_decorate(json_t *result, const aw_mcp_meta *m, int cacheable);
void mcp_emit(aw_mcp_call *c, const json_t *msg);
void mcp_finish(aw_mcp_call *c, json_t *response, int status);
mcp_peer mcp_call_peer(aw_mcp_call *c, json_t *up_params, int timeout_ms);
/* A new call's base (call.h); aw_mcp_release is its last put. */
void mcp_call_init(aw_mcp_call *c, size_t out_max, aw_mcp_wake wake, void *ud);
void mcp_client_answer(aw_mcp *g, const aw_mcp_call *from);

/* mcp_recorder.c */
aw_envelope mcp_envelope(const aw_mcp_call *call, const catalog *c, double ms);
void mcp_record_queue(aw_mcp *g, const aw_ctx *ctx, const char *action, const char *target,
		      json_t *payload);
/* The recorder's hooks (mcp_recorder.c). */
void mcp_record_write(void *ud, aw_call_rec **recs, int n);
void mcp_record_chores(void *ud);

/* dispatch.c */
/* The door's table in the in-flight registry (dispatch.c). */
extern const aw_door mcp_door;
void *mcp_worker_main(void *arg);

#endif
