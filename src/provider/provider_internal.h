/*
 * provider_internal.h - what the files of src/provider/ share: upstreams (a
 * connection pool and a circuit breaker each), targets (one upstream + model
 * a call may try), the call, and the gateway. Engine-thread-only fields are
 * marked; everything a client reads is under the call's mutex.
 *
 * Numbers from contracts are read with json_number_value: a whole number
 * written 1e3 is an integer to the schema and a real to jansson.
 */
#ifndef AW_PROVIDER_INTERNAL_H
#define AW_PROVIDER_INTERNAL_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>

#include "awooop/budget.h"
#include "awooop/bounds.h"
#include "awooop/llm.h"
#include "awooop/llm_wire.h"
#include "awooop/schema.h"

enum { API_OPENAI = 0, API_OLLAMA, API_ANTHROPIC, API_AZURE };
enum { BREAKER_CLOSED = 0, BREAKER_OPEN, BREAKER_HALF_OPEN };

typedef struct upstream {
	atomic_int refs;
	char name[48]; /* metrics label: the provider, or ollama-primary/-secondary/-fallback */
	int api;
	char url[300];	      /* the base: ".../v1" (openai, anthropic), the host (ollama), the
			      resource's https://NAME.openai.azure.com (azure_openai) */
	char key_ref[300];    /* secret reference, "" = none */
	char api_version[32]; /* azure_openai's api-version query parameter */
	int timeout_ms;	      /* first-byte timeout of the endpoint, 0 = the gateway's */
	int max_conc;	      /* transfers in flight to it in this process, 0 = unbounded */
	int inflight;	      /* (engine thread) */
	char project[AW_PROJECT_MAX + 1]; /* a tenant's own upstream (its secrets, its
					     egress), "" = the platform's */
	char label[112];		  /* metrics label: name, project/name for a tenant's */
	json_t *models;			  /* topology endpoint's model list, NULL = any */
	char *def;     /* a named upstream's definition (compact, sorted keys): an
			      equal one in the next revision keeps this pool */
	CURLSH *share; /* the connection pool (engine thread) */
	/* breaker (engine thread) */
	int state, fails, probing;
	int64_t open_until_ns;
} upstream;

typedef struct {
	upstream *u; /* a reference */
	char model[129];
	int timeout_ms;	       /* candidate's, 0 = upstream's or the gateway's */
	int emergency;	       /* counted against the daily cap before it is tried */
	aw_budget_price price; /* the budget's, for the cost of its tokens */
	/* the signed candidate's limits (0 / has_temp 0: none): max_out clamps
	 * the request's max_tokens, temperature replaces the client's; a
	 * prompt over max_in never reaches the target */
	long long max_out, max_in;
	int has_temp;
	double temp;
} target;

#define MAX_TARGETS 24

/* A schema retry's message to the model: this, then the validation errors
 * (at most SCHEMA_PROBLEMS_MAX bytes; the budget reserves for them). */
#define SCHEMA_FEEDBACK_PREFIX "Your answer does not match the required JSON schema: "
#define SCHEMA_PROBLEMS_MAX 512

struct aw_llm_call {
	aw_call base; /* refs, mu, what the client reads (call.h) */
	aw_llm *g;
	struct aw_llm_call *next; /* the engine's inbox, then its active list */
	aw_call_rec rec;	  /* the recorder's queue (call.h) */
	/* the request */
	aw_ctx ctx;			      /* its trace: the call's own span (llm_span.c) */
	char parent_span[AW_SPAN_ID_LEN + 1]; /* the caller's span */
	json_t *req;
	aw_llm_req rq;
	aw_schema *schema;
	int schema_retries;
	int up_stream; /* the upstream call streams (client streams, no schema) */
	target t[MAX_TARGETS];
	int nt, ti;
	char route[64], revision_id[AW_UUID_STR_LEN + 1], body_hash[65];
	char run_id[AW_UUID_STR_LEN + 1];
	int step_no;
	int keyed;	   /* key holds the calling key's limits */
	aw_key_limits key; /* (tenancy.h) */
	char api[24];	   /* the front door it came through (the audit record's "api") */
	json_t *feedback;  /* messages appended for a schema retry */
	/* the current transfer (engine thread) */
	CURL *easy;
	struct curl_slist *hdrs;
	char *payload;
	upstream *held;	    /* the upstream whose max_conc the transfer counts in */
	int egress_refused; /* the transfer's address was refused (egress.h class) */
	aw_buf body;	    /* a non-streamed answer, or an error body */
	aw_sse sse;
	aw_ndjson nd;
	aw_llm_stream_state st;
	long status;
	int64_t t0_ns, t_try_ns, t_first_ns, t_last_ns, t_client_first_ns;
	int fb_ms, saw_end, bytes_out, failovers, attempts, schema_fails;
	int fb_own;	 /* fb_ms is the route's own, shorter than the platform's */
	int own_failure; /* a try ended on the route's own timeout */
	aw_buf notes;	 /* why each target failed, for the error detail */
	int wire_skips;	 /* targets whose wire format cannot express the request */
	/* what the client reads besides the stream (base.mu) */
	aw_llm_state state;
	char *answer;
	aw_error error;
	int finished;
	/* the budget (lines 1-3) */
	aw_budget_hold hold;
	long long chunks;	 /* content events streamed by the current attempt */
	aw_budget_amount spent;	 /* tokens and cost of the attempts that ended */
	int spent_unknown;	 /* an answer came without usage: charge the reservation */
	int spent_counted;	 /* a stream came without usage: its events were counted */
	char model_charged[129]; /* the model of the last attempt charged */
	/* outcome, for the envelope */
	char outcome[24];
	const char *code;
	char upstream_name[48], model_used[129];
	int emergency_used;
};

struct aw_llm {
	aw_llm_opts o;
	aw_bounds per_project; /* calls one project may have in flight here */
	json_t *config;
	char contract_id[AW_PROJECT_MAX + 1];
	pthread_mutex_t mu; /* topology, the inbox, the in-process cap */
	upstream *providers[8];
	int nproviders;
	/* the named upstreams of the active platform_resource llm_upstreams
	 * revision (upstreams.c; over the --llm-config providers, per name) */
	upstream **plat;
	int nplat;
	char plat_rev[AW_UUID_STR_LEN + 1];
	int plat_dirty, plat_read; /* plat_read: read once */
	/* the projects' own upstreams (policy_routing upstreams[]), by project */
	struct llm_own {
		char project[AW_PROJECT_MAX + 1];
		char rev[AW_UUID_STR_LEN + 1];
		upstream **u;
		int n;
	} * own;
	int nown;
	upstream *topo[3]; /* primary, secondary, fallback (NULL when absent) */
	char topo_rev[AW_UUID_STR_LEN + 1];
	int topo_dirty;
	char emergency_provider[32], emergency_model[129];
	long emergency_cap;
	char cap_date[16];
	long cap_count;
	/* the day's emergency calls per project, in process (cap_date's day) */
	struct llm_em {
		char project[AW_PROJECT_MAX + 1];
		long count;
	} * em;
	int nem;
	aw_bounds em_share; /* percent of the daily cap one project may use */
	/* engine */
	CURLM *multi;
	pthread_t engine;
	int engine_started;
	atomic_bool stopping;
	aw_llm_call *inbox;
	aw_llm_call *active; /* engine thread */
	/* the calls in flight: the process's registry (o.calls, or own_calls),
	 * which watches their projects, cuts suspended ones (llm_door's cancel
	 * bumps kill_gen), renews and reaps reservations under its holder id */
	aw_calls *calls, *own_calls;
	int door, door_off; /* ours in calls; 1 once it left (aw_llm_stop) */
	atomic_uint kill_gen;
	unsigned kill_seen; /* engine thread */
	aw_recorder *rec;   /* audit records and settlements (llm_recorder.c) */
};

/* Module-internal functions are named llm_* (aw_llm_* is llm.h's public API). */

#define MAX_ANSWER (8u << 20)	   /* a non-streamed answer */
#define MAX_ERROR_BODY (64u << 10) /* what an upstream's error keeps */
#define MAX_EVENT (4u << 20)	   /* one SSE event or NDJSON line */

/* transfer.c: one try at c->t[c->ti] (engine thread) */
aw_err llm_transfer_begin(aw_llm *g, aw_llm_call *c, aw_error *err);
void llm_transfer_end(aw_llm *g, aw_llm_call *c);

/* engine.c */
aw_err llm_engine_start(aw_llm *g, aw_error *err);
void llm_engine_stop(aw_llm *g);
void llm_submit(aw_llm *g, aw_llm_call *c);
/* project: a tenant's own upstream (its secrets, its egress), else NULL. */
upstream *llm_upstream_new(const char *name, int api, const char *url, const char *key_ref,
			   const char *project);
/* The wire kind of an `api` name (openai, ollama, anthropic, azure_openai);
 * -1 when unknown. */
int llm_api_kind(const char *api);
void llm_upstream_put(upstream *u);
/* llm_call.c */
/* Ends the call (engine thread or stop): sets what the client reads, wakes
 * it, queues the audit record. */
void llm_finish(aw_llm_call *c, aw_llm_state st, const char *outcome, aw_err e, const char *fmt,
		...) __attribute__((format(printf, 5, 6)));
/* Appends stream bytes for the client and wakes it (engine thread);
 * _event frames them as one SSE event ("data: ...\n\n"). */
void llm_emit(aw_llm_call *c, const char *data, size_t n);
void llm_emit_event(aw_llm_call *c, const char *data, size_t n);
/* Starts a call and waits for its whole answer (*body, malloc'd JSON). A
 * set *stop (may be NULL) or the deadline (0 = none) abandons it with
 * AW_E_RUN_CANCELLED / AW_E_RUN_TIMEOUT. */
aw_err llm_wait(aw_llm *g, const aw_ctx *ctx, const json_t *req, const aw_llm_meta *meta,
		const atomic_bool *stop, int64_t deadline_ns, char **body, aw_error *err);
/* route.c: the call's route and targets from the project's active
 * policy_routing revision (c->route, c->revision_id, c->t, ...). */
aw_err llm_route(aw_llm *g, aw_llm_call *c, const char *task, aw_error *err);
/* prompt.c: the prompt's text bytes and images' tokens (AW_E_BUDGET_UNPRICED
 * when an image goes to a model without a known image price); the tokens
 * max_input_tokens is held against. */
aw_err llm_prompt_bound(const aw_llm_call *c, const json_t *req, long long *bytes,
			long long *images, aw_error *err);
long long llm_prompt_estimate(long long bytes, long long images);
/* topology.c: in-process or Redis daily counter; 1 when this call may use
 * the emergency model. */
int llm_cap_take(aw_llm *g, const char *project);
/* Brings the topology up to the active revision (a cached read). */
void llm_topo_refresh(aw_llm *g, const aw_ctx *ctx);
/* The policy cache's listener: a new topology revision resets the pools. */
void llm_on_platform_change(void *ud, const char *project, const char *family,
			    const char *contract_id, const char *revision_id, const char *source);
/* upstreams.c: the upstream a candidate's provider names for project
 * (its own, then the platform's contract, then --llm-config; NULL: none).
 * Caller holds g->mu and called llm_upstreams_refresh for the call. */
upstream *llm_upstream_named(aw_llm *g, const char *project, const char *name);
/* Brings the platform's named upstreams up to the active llm_upstreams
 * revision and project's own up to body (its policy_routing revision rev):
 * an upstream whose definition changed gets a new pool, the others keep
 * theirs. Takes g->mu. */
void llm_upstreams_refresh(aw_llm *g, const aw_ctx *ctx, const json_t *body, const char *rev);
void llm_upstreams_free(aw_llm *g);
/* The policy cache's word that the llm_upstreams revision changed. */
void llm_upstreams_changed(aw_llm *g, const char *source);
/* An upstream from its definition ({name, api, url, api_key?, api_version?,
 * timeout_ms?, max_concurrency?}); project: a tenant's own, else NULL. */
upstream *llm_upstream_of(const json_t *def, const char *project);

/* admit.c: the budget's admission and reservation of a routed call. */
aw_err llm_admit(aw_llm *g, aw_llm_call *c, const aw_llm_meta *meta, aw_error *err);
/* llm_span.c: the ended call's trace span (otel.h). */
void llm_span(const aw_llm_call *c);
/* llm_inflight.c: the door's table in the registry; a call starts (+1,
 * bounded per project) or ends (-1). */
extern const aw_door llm_door;
aw_err llm_inflight(aw_llm_call *c, int delta, long *held);
/* llm_recorder.c: queues an ended (or refused) call's record; the
 * recorder's write hook. */
void llm_record_queue(aw_llm *g, aw_llm_call *c);
void llm_record_write(void *ud, aw_call_rec **recs, int n);

#endif
