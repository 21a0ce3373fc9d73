/*
 * mcp.c - the MCP gateway (see mcp.h): the catalog of each project's
 * active mcp_tool revision, the five gates of a tools/call, tools/list
 * federation, sessions, the worker threads that do upstream I/O, pinning at
 * publish, and the recorder thread that writes one mcp.call audit record per
 * tools/call and one mcp.relay record per relayed method (resources,
 * prompts, completion, logging), batched per project.
 *
 * A project's catalog (tools, compiled argument schemas, rate buckets, its
 * upstreams) is built when a call first sees a revision and shared by the
 * calls on it (counted references). A new revision builds a new catalog
 * that keeps the upstreams whose configuration did not change (a stdio
 * child survives an unrelated edit); an upstream no revision names any more
 * is freed with the last catalog that held it, which stops its child. A
 * revoke heard from the policy cache drops the catalog at once.
 *
 * Upstream definitions (tools/list of each upstream) are cached for
 * defs_ttl_ms (or until a stdio upstream says its list changed) and checked
 * against the revision's pins on every list and call.
 */
#include "awooop/mcp.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "awooop/audit.h"
#include "awooop/buf.h"
#include "awooop/budget.h"
#include "awooop/clock.h"
#include "awooop/egress.h"
#include "awooop/envelope.h"
#include "awooop/contract.h"
#include "awooop/crypto.h"
#include "awooop/jcs.h"
#include "awooop/kv.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/redact.h"
#include "awooop/schema.h"
#include "awooop/wake.h"
#include "fairq.h"
#include "mcp_internal.h"
#include "stdio_sandbox.h"

#define DEFAULT_RESULT_BYTES 16384
#define DEFAULT_ARGS_BYTES 65536
#define AUDIT_ARGS_MAX 4096
#define RECORD_BATCH 64
#define RECORD_LINGER_MS 5
#define SESSION_IDLE_NS (3600LL * 1000000000LL)
#define SESSIONS_MAX 10000
#define PROJECT_SESSIONS_MAX 1000
#define SUBS_MAX 64 /* resource subscriptions a session */

/* ------------------------------------------------------------ types */

enum { RELAY_RESOURCES = 1, RELAY_PROMPTS = 2, RELAY_COMPLETION = 4, RELAY_LOGGING = 8 };

/* Gate 4's rate (a tool's rate_limit, an upstream's relay_rate_limit): this
 * process's token bucket, guarded by its owner's mutex (rate_take). */
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
	aw_mcp_up *up;
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
	aw_ctx ctx;
	const char *action; /* mcp.call, mcp.relay (static) */
	char tool[AW_MCP_NAME_MAX + 1];
	json_t *payload;
	struct record *next;
} record;

struct aw_mcp_call {
	aw_mcp *g;
	atomic_int refs;
	aw_ctx ctx;
	aw_mcp_msg msg;
	aw_mcp_meta meta;
	char version[16], run_id[AW_UUID_STR_LEN + 1];
	aw_mcp_wake wake;
	void *ud;
	pthread_mutex_t mu;
	int done, parked, status;
	json_t *response;
	char session[40];
	/* cancellation: the legacy session the request came in (its client
	 * names it in notifications/cancelled), set once it is cancelled;
	 * listed in g->inflight (g->mu) while a worker runs it */
	char req_session[40];
	atomic_int cancel;
	struct aw_mcp_call *inext;
	/* the client's event stream (mu): the upstream's requests and
	 * notifications during the call, then the answer, as SSE bytes */
	aw_buf out;
	size_t out_off;
	int streaming, eof;
	atomic_int gone;    /* the client hung up */
	pthread_cond_t cv;  /* an answer to one of its asks arrived */
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
	aw_mcp_call *inflight; /* requests of legacy sessions being run */
	ask *asks;	       /* upstream requests waiting for a client's answer */
	atomic_llong serial;   /* asks' ids and progress tokens */
	/* workers, fed fairly between projects (fairq.h) */
	aw_bounds per_project; /* requests of one project run at once */
	aw_fairq *fq;
	pthread_t *workers;
	int nworkers;
	/* recorder */
	pthread_mutex_t rmu;
	pthread_cond_t rcv, rdone;
	record *rhead, *rtail;
	catalog *dropped; /* revoked catalogs the recorder frees */
	int recording, recorder_started, flushing;
	int unrecorded; /* calls answered whose record is not queued yet */
	pthread_t recorder;
	atomic_int stopping;
};

/* ------------------------------------------------------------ catalogs */

static void upinst_put(upinst *u)
{
	if (u && atomic_fetch_sub(&u->refs, 1) == 1) {
		aw_mcp_up_free(u->up);
		json_decref(u->defs);
		pthread_mutex_destroy(&u->mu);
		free(u);
	}
}

static void catalog_put(catalog *c)
{
	if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	for (int i = 0; i < c->ntools; i++)
		aw_schema_free(c->tools[i].schema);
	free(c->tools);
	for (int i = 0; i < c->nups; i++)
		upinst_put(c->ups[i]);
	json_decref(c->body);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static int int_of(const json_t *o, const char *k, int def)
{
	json_t *v = json_object_get(o, k);
	return v ? (int)json_integer_value(v) : def;
}

/* rl: a {"per_minute", "burst"?} of the contract (burst: per_minute by
 * default), or NULL: no rate. */
static void rate_init(rate_bucket *r, const json_t *rl)
{
	if (!json_is_object(rl))
		return;
	double per_min = (double)json_integer_value(json_object_get(rl, "per_minute"));
	r->rated = 1;
	r->burst = (double)int_of(rl, "burst", (int)(per_min < 1 ? 1 : per_min));
	r->tokens = r->burst;
	r->per_ns = per_min / 60e9;
	r->per_min = per_min;
	r->last_ns = aw_clock_mono_ns();
}

/* An upstream of the catalog being built: the old catalog's when its
 * configuration is the same. */
static void up_event(void *ud, const char *project, const json_t *msg);
static void to_sessions(aw_mcp *g, const char *project, const char *method, const char *uri);

static upinst *upinst_for(aw_mcp *g, catalog *old, const char *project, const char *provider,
			  const json_t *conf, int allow_private, aw_error *err)
{
	json_t *k = json_pack("{s:O,s:b}", "c", conf, "p", allow_private);
	char key[72] = "";
	aw_jcs_sha256(k, key);
	json_decref(k);
	for (int i = 0; old && i < old->nups; i++)
		if (!strcmp(old->ups[i]->provider, provider) && !strcmp(old->ups[i]->key, key)) {
			atomic_fetch_add(&old->ups[i]->refs, 1);
			return old->ups[i];
		}
	upinst *u = calloc(1, sizeof *u);
	if (!u)
		return NULL;
	atomic_init(&u->refs, 1);
	size_t ri;
	json_t *rv;
	json_array_foreach (json_object_get(conf, "relay"), ri, rv) {
		const char *r = json_string_value(rv);
		u->relay |= !strcmp(r, "resources")    ? RELAY_RESOURCES
			    : !strcmp(r, "prompts")    ? RELAY_PROMPTS
			    : !strcmp(r, "completion") ? RELAY_COMPLETION
						       : RELAY_LOGGING;
	}
	snprintf(u->provider, sizeof u->provider, "%s", provider);
	memcpy(u->key, key, sizeof key);
	rate_init(&u->rate, json_object_get(conf, "relay_rate_limit"));
	snprintf(u->rate_name, sizeof u->rate_name, "@relay.%s", provider);
	/* the contract's default, never past the platform's bound */
	u->timeout_ms = int_of(conf, "timeout_ms", g->o.timeout_ms);
	if (u->timeout_ms > g->o.timeout_max_ms)
		u->timeout_ms = g->o.timeout_max_ms;
	pthread_mutex_init(&u->mu, NULL);
	aw_mcp_up_opts uo = {.project = project,
			     .provider = provider,
			     .config = conf,
			     .secrets_dir = g->secrets_dir,
			     .allow_private = allow_private,
			     .sbx = g->sbx,
			     .pids_max = g->o.stdio_pids,
			     .timeout_ms = g->o.timeout_ms,
			     .cgroup_dir = g->o.cgroup_dir,
			     .memory_mb = g->o.memory_mb ? g->o.memory_mb : 512,
			     .event = up_event,
			     .event_ud = g};
	if (aw_mcp_up_new(&uo, &u->up, err)) {
		pthread_mutex_destroy(&u->mu);
		free(u);
		return NULL;
	}
	return u;
}

static catalog *catalog_build(aw_mcp *g, catalog *old, const char *project, const aw_policy *pol,
			      aw_error *err)
{
	catalog *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	atomic_init(&c->refs, 1);
	pthread_mutex_init(&c->mu, NULL);
	snprintf(c->project, sizeof c->project, "%s", project);
	memcpy(c->revision_id, pol->revision_id, sizeof c->revision_id);
	memcpy(c->body_hash, pol->body_hash, sizeof c->body_hash);
	c->body = json_deep_copy(pol->body);
	json_t *b = c->body, *tools = json_object_get(b, "tools");
	c->read_only = json_is_string(json_object_get(b, "mode")) &&
		       !strcmp(json_string_value(json_object_get(b, "mode")), "read_only");
	int suffix = !json_is_false(json_object_get(b, "suffix"));
	int priv = aw_egress_private_granted(project); /* the operator's, never the contract's */
	const char *k;
	json_t *v;
	json_object_foreach (json_object_get(b, "upstreams"), k, v) {
		if (c->nups == 32 ||
		    !(c->ups[c->nups] = upinst_for(g, old, project, k, v, priv, err)))
			goto fail;
		c->nups++;
	}
	c->tools = calloc(json_array_size(tools) + 1, sizeof *c->tools);
	if (!c->tools)
		goto fail;
	for (size_t i = 0; i < json_array_size(tools); i++) {
		json_t *t = json_array_get(tools, i);
		mtool *tl = &c->tools[c->ntools++];
		tl->name = json_string_value(json_object_get(t, "name"));
		const char *prov = json_string_value(json_object_get(t, "provider"));
		aw_mcp_tool_name(tl->name, prov, suffix, tl->full, sizeof tl->full);
		for (int j = 0; j < c->nups; j++)
			if (!strcmp(c->ups[j]->provider, prov))
				tl->u = c->ups[j];
		tl->write = !strcmp(json_string_value(json_object_get(t, "mode")), "write");
		tl->enabled = !json_is_false(json_object_get(t, "enabled"));
		tl->approval = json_is_true(json_object_get(t, "requires_approval"));
		tl->timeout_ms = int_of(t, "timeout_ms", 0);
		tl->max_args = int_of(t, "max_args_bytes", DEFAULT_ARGS_BYTES);
		tl->max_result = int_of(t, "max_result_bytes", DEFAULT_RESULT_BYTES);
		tl->pin = json_string_value(json_object_get(t, "pin"));
		json_t *as = json_object_get(t, "args_schema");
		if (as && aw_schema_compile(as, &tl->schema, err))
			goto fail;
		rate_init(&tl->rate, json_object_get(t, "rate_limit"));
	}
	return c;
fail:
	catalog_put(c);
	return NULL;
}

/* The catalog of ctx->project's active revision (a reference), or NULL with
 * *e: AW_E_CONTRACT_NOT_FOUND when there is none. */
static catalog *catalog_get(aw_mcp *g, const aw_ctx *ctx, aw_err *e, aw_error *err)
{
	aw_policy pol = {0};
	*e = aw_policy_effective(g->o.policy, ctx, "mcp_tool", g->contract_id, &pol, err);
	catalog *c = NULL, **pp;
	pthread_mutex_lock(&g->mu);
	for (pp = &g->catalogs; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->project, ctx->project))
			break;
	catalog *old = *pp, *put = NULL;
	if (*e) {
		if (*e == AW_E_CONTRACT_NOT_FOUND && old) { /* revoked: drop it */
			*pp = old->next;
			put = old;
		}
	} else if (old && !strcmp(old->revision_id, pol.revision_id)) {
		c = old;
	} else if ((c = catalog_build(g, old, ctx->project, &pol, err))) {
		if (old) {
			c->next = old->next;
			*pp = c;
			put = old;
		} else {
			c->next = g->catalogs;
			g->catalogs = c;
		}
	} else {
		*e = err->err ? err->err : AW_E_NOMEM;
	}
	if (c)
		atomic_fetch_add(&c->refs, 1);
	pthread_mutex_unlock(&g->mu);
	/* outside the lock: the last reference stops upstreams, which waits for
	 * their threads, and those take g->mu to deliver events */
	catalog_put(put);
	aw_policy_release(&pol);
	return c;
}

/* Revision "" of a project's mcp_tool contract: its catalog goes at once (its
 * stdio children stop when the last call on it ends). */
static void on_change(void *ud, const char *project, const char *family, const char *contract_id,
		      const char *revision_id, const char *source)
{
	aw_mcp *g = ud;
	(void)source;
	if (strcmp(family, "mcp_tool") || strcmp(contract_id, g->contract_id))
		return;
	/* another revision (or none): the project's tools changed */
	to_sessions(g, project, "notifications/tools/list_changed", NULL);
	if (revision_id[0])
		return;
	catalog *drop = NULL;
	pthread_mutex_lock(&g->mu);
	for (catalog **pp = &g->catalogs; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->project, project)) {
			drop = *pp;
			*pp = drop->next;
			break;
		}
	pthread_mutex_unlock(&g->mu);
	if (!drop)
		return;
	/* the cache is locked here: stopping children waits, so the recorder
	 * thread drops it */
	pthread_mutex_lock(&g->rmu);
	drop->next = g->dropped;
	g->dropped = drop;
	pthread_cond_signal(&g->rcv);
	pthread_mutex_unlock(&g->rmu);
}

/* ------------------------------------------------------------ definitions */

static aw_err fetch_defs(aw_mcp *g, upinst *u, json_t **out, aw_error *err)
{
	json_t *defs = json_object(), *cursor = NULL;
	aw_err e = AW_OK;
	for (int page = 0; page < 20 && !e; page++) {
		json_t *params = cursor ? json_pack("{s:O}", "cursor", cursor) : NULL, *res = NULL;
		json_decref(cursor);
		cursor = NULL;
		e = aw_mcp_up_request(u->up, "tools/list", params, u->timeout_ms, NULL, &res, NULL,
				      err);
		json_decref(params);
		size_t i;
		json_t *t;
		json_array_foreach (json_object_get(res, "tools"), i, t) {
			const char *name = json_string_value(json_object_get(t, "name"));
			char pin[AW_MCP_PIN_MAX], pin1[AW_MCP_PIN_MAX];
			if (name && aw_mcp_def_pin(t, pin) == 0 && /* hashed once per fetch */
			    aw_mcp_def_pin_v1(t, pin1) == 0)
				json_object_set_new(defs, name,
						    json_pack("{s:O,s:s,s:s}", "def", t, "pin", pin,
							      "pin1", pin1));
		}
		json_t *next = json_object_get(res, "nextCursor");
		if (json_is_string(next))
			cursor = json_incref(next);
		json_decref(res);
		if (!cursor)
			break;
	}
	json_decref(cursor);
	if (e) {
		json_decref(defs);
		return e;
	}
	*out = defs;
	return AW_OK;
}

/* The member of a definitions entry holding its pin in the format of pin (a
 * revision's: "sha256:" is the older format, see mcp_internal.h). */
static const char *pin_member(const char *pin)
{
	return pin && !strncmp(pin, AW_MCP_PIN_V1, strlen(AW_MCP_PIN_V1)) ? "pin1" : "pin";
}

/* The upstream's definitions ({name: {"def", "pin", "pin1"}}), fetched again
 * when older than the TTL, when the upstream said its list changed, or when
 * fresh is set. What a caller needs is taken under the lock - the pin of name
 * in the format of want ("" when the upstream lacks it) and/or a deep copy -
 * so no thread shares the cached document (jansson's counts are not fences). */
static aw_err defs_get(aw_mcp *g, upinst *u, int fresh, const char *name, const char *want,
		       char pin[AW_MCP_PIN_MAX], json_t **copy, aw_error *err)
{
	pthread_mutex_lock(&u->mu);
	int64_t now = aw_clock_mono_ns();
	int changed = aw_mcp_up_list_changed(u->up);
	aw_err e = AW_OK;
	if (fresh || changed || !u->defs ||
	    now - u->fetched_ns > (int64_t)g->o.defs_ttl_ms * 1000000LL) {
		json_t *d = NULL;
		if (!(e = fetch_defs(g, u, &d, err))) {
			json_decref(u->defs);
			u->defs = d;
			u->fetched_ns = now;
		}
	}
	if (!e && name)
		snprintf(pin, AW_MCP_PIN_MAX, "%s",
			 json_string_value(
				 json_object_get(json_object_get(u->defs, name), pin_member(want)))
				 ?: "");
	if (!e && copy)
		*copy = json_deep_copy(u->defs);
	pthread_mutex_unlock(&u->mu);
	return e;
}

/* ------------------------------------------------------------ answers */

static json_t *gate_error(const json_t *id, aw_err code, int gate, const char *msg,
			  const char *pointer)
{
	json_t *r = aw_rpc_error_json(id, code == AW_E_MCP_ARGS ? AW_RPC_PARAMS : AW_RPC_GATE, msg,
				      aw_err_code(code));
	json_t *data = json_object_get(json_object_get(r, "error"), "data");
	json_object_set_new(data, "gate", json_integer(gate));
	if (pointer)
		json_object_set_new(data, "pointer", json_string(pointer));
	return r;
}

static void decorate(json_t *result, const aw_mcp_meta *m, int cacheable)
{
	if (!m->stateless || !result)
		return;
	json_object_set_new(result, "resultType", json_string("complete"));
	if (cacheable) {
		json_object_set_new(result, "ttlMs", json_integer(5000));
		json_object_set_new(result, "cacheScope", json_string("private"));
	}
}

/* Tools, and what the project's upstreams relay (a catalog may be NULL). */
static json_t *capabilities(const catalog *c, int sessions)
{
	json_t *caps = json_pack("{s:{s:b}}", "tools", "listChanged", sessions);
	int relay = 0;
	for (int i = 0; c && i < c->nups; i++)
		relay |= c->ups[i]->relay;
	if (relay & RELAY_RESOURCES) /* updates reach a session's GET stream */
		json_object_set_new(caps, "resources", json_pack("{s:b}", "subscribe", sessions));
	if (relay & RELAY_PROMPTS)
		json_object_set_new(caps, "prompts", json_object());
	if (relay & RELAY_COMPLETION)
		json_object_set_new(caps, "completions", json_object());
	if (relay & RELAY_LOGGING)
		json_object_set_new(caps, "logging", json_object());
	return caps;
}

static json_t *server_info(void)
{
	return json_pack("{s:s,s:s}", "name", "awooop-mcp-gateway", "version", AWOOOP_VERSION);
}

/* The federated tools/list of a catalog. */
static json_t *list_tools(aw_mcp *g, catalog *c)
{
	json_t *out = json_array();
	json_t *defs[32] = {0};
	int fetched[32] = {0};
	for (int i = 0; c && i < c->ntools; i++) {
		mtool *t = &c->tools[i];
		if (!t->enabled || (t->write && c->read_only) || !t->pin)
			continue;
		int ui = 0;
		while (c->ups[ui] != t->u)
			ui++;
		if (!fetched[ui]) {
			aw_error err = {0};
			fetched[ui] = 1;
			if (defs_get(g, t->u, 1, NULL, NULL, NULL, &defs[ui], &err)) {
				aw_ctx lc;
				aw_ctx_system(&lc, c->project);
				aw_log(AW_LOG_WARN, &lc, "mcp upstream unavailable for tools/list",
				       "provider", t->u->provider, "detail", err.msg, NULL);
			}
		}
		json_t *entry = json_object_get(defs[ui], t->name);
		json_t *def = json_object_get(entry, "def");
		const char *pm = pin_member(t->pin);
		const char *pin = json_string_value(json_object_get(entry, pm));
		if (!def || !pin || strcmp(pin, t->pin))
			continue; /* missing or changed since approval: hidden */
		/* exactly what the pin covers: the whole definition, or an older
		 * pin's four members (a title or annotations it never saw stay
		 * behind) */
		json_t *d = strcmp(pm, "pin1") ? json_deep_copy(def) : aw_mcp_def_v1(def);
		if (!d)
			continue;
		json_object_set_new(d, "name", json_string(t->full));
		json_array_append_new(out, d);
	}
	for (int i = 0; i < 32; i++)
		json_decref(defs[i]);
	/* deterministic order (2026-07-28 asks it: prompt caches) */
	size_t n = json_array_size(out);
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0; j--) {
			json_t *a = json_array_get(out, j - 1), *b = json_array_get(out, j);
			if (strcmp(json_string_value(json_object_get(a, "name")),
				   json_string_value(json_object_get(b, "name"))) <= 0)
				break;
			json_incref(a);
			json_array_set(out, j - 1, b);
			json_array_set_new(out, j, a);
		}
	return out;
}

/* Cuts a result over limit bytes: text kept in order while it fits, other
 * content and structuredContent dropped, a marker appended. */
static json_t *cut_result(json_t *res, int limit, size_t *orig, int *cut)
{
	char *s = json_dumps(res, JSON_COMPACT);
	*orig = s ? strlen(s) : 0;
	free(s);
	*cut = 0;
	if (*orig <= (size_t)limit)
		return res;
	*cut = 1;
	json_t *out = json_object(), *content = json_array();
	long room = limit - 320; /* the marker, the _meta and the envelope */
	size_t i;
	json_t *item;
	json_array_foreach (json_object_get(res, "content"), i, item) {
		if (room <= 0)
			break;
		const char *type = json_string_value(json_object_get(item, "type"));
		const char *text = json_string_value(json_object_get(item, "text"));
		if (!type || strcmp(type, "text") || !text)
			continue;
		size_t n = strlen(text), take = n;
		/* JSON escaping may grow text: budget for it conservatively */
		if ((long)(take * 2 + 32) > room)
			take = (size_t)(room - 32) / 2;
		while (take > 0 && take < n && ((unsigned char)text[take] & 0xc0) == 0x80)
			take--; /* a whole UTF-8 character */
		json_array_append_new(content,
				      json_pack("{s:s,s:s%}", "type", "text", "text", text, take));
		room -= (long)(take * 2 + 32);
	}
	char marker[160];
	snprintf(marker, sizeof marker, "[awooop: result cut to %d of %zu bytes]", limit, *orig);
	json_array_append_new(content, json_pack("{s:s,s:s}", "type", "text", "text", marker));
	json_object_set_new(out, "content", content);
	if (json_is_true(json_object_get(res, "isError")))
		json_object_set_new(out, "isError", json_true());
	json_object_set_new(out, "_meta",
			    json_pack("{s:{s:i,s:I}}", "io.awooop/truncated", "limit", limit,
				      "original_bytes", (json_int_t)*orig));
	json_decref(res);
	return out;
}

/* ------------------------------------------------------------ recorder */

static void record_queue(aw_mcp *g, const aw_ctx *ctx, const char *action, const char *target,
			 json_t *payload)
{
	record *r = calloc(1, sizeof *r);
	if (!r) {
		json_decref(payload);
		return;
	}
	r->ctx = *ctx;
	r->action = action;
	snprintf(r->tool, sizeof r->tool, "%s", target);
	r->payload = payload;
	pthread_mutex_lock(&g->rmu);
	if (g->rtail) { /* the recorder is awake or lingering already */
		g->rtail->next = r;
	} else {
		g->rhead = r;
		pthread_cond_signal(&g->rcv);
	}
	g->rtail = r;
	pthread_mutex_unlock(&g->rmu);
}

static void record_batch(aw_mcp *g, record **rs, int n)
{
	aw_audit_item items[RECORD_BATCH];
	for (int i = 0; i < n; i++)
		items[i] = (aw_audit_item){.action = rs[i]->action,
					   .target = rs[i]->tool,
					   .trace_id = rs[i]->ctx.trace.trace_id,
					   .payload = rs[i]->payload};
	aw_ctx ctx = rs[0]->ctx;
	aw_txn *t = NULL;
	aw_error err = {0};
	aw_err e = aw_store_begin(g->o.store, &ctx, AW_TXN_WRITE, &t, &err);
	if (!e)
		e = aw_audit_record_many(t, &ctx, items, n, &err);
	if (!e)
		e = aw_store_commit(t, &err);
	else if (t)
		aw_store_rollback(t);
	if (e)
		aw_log(AW_LOG_ERROR, &ctx, "mcp audit records lost", "detail", err.msg, NULL);
}

static void *recorder_main(void *arg)
{
	aw_mcp *g = arg;
	pthread_setname_np(pthread_self(), "aw-mcp-audit");
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	pthread_mutex_lock(&g->rmu);
	for (;;) {
		while (!g->rhead && !g->dropped && !atomic_load(&g->stopping))
			pthread_cond_wait(&g->rcv, &g->rmu);
		while (g->dropped) {
			catalog *c = g->dropped;
			g->dropped = c->next;
			pthread_mutex_unlock(&g->rmu);
			catalog_put(c);
			pthread_mutex_lock(&g->rmu);
		}
		if (!g->rhead && atomic_load(&g->stopping))
			break;
		if (!g->rhead)
			continue;
		/* linger: the records of the calls ending in the next moment join
		 * this transaction (fewer, larger writes; less CPU taken from the
		 * calls in flight) */
		if (!atomic_load(&g->stopping) && !g->flushing) {
			struct timespec ts = aw_clock_after(CLOCK_REALTIME, RECORD_LINGER_MS);
			pthread_cond_timedwait(&g->rcv, &g->rmu, &ts);
		}
		record *list = g->rhead;
		g->rhead = g->rtail = NULL;
		g->recording = 1;
		pthread_mutex_unlock(&g->rmu);
		while (list) { /* batches of one project, in order */
			record *batch[RECORD_BATCH];
			int n = 0;
			record **pp = &list;
			char project[AW_PROJECT_MAX + 1];
			memcpy(project, list->ctx.project, sizeof project);
			while (*pp && n < RECORD_BATCH) {
				if (!strcmp((*pp)->ctx.project, project)) {
					batch[n++] = *pp;
					*pp = (*pp)->next;
				} else {
					pp = &(*pp)->next;
				}
			}
			record_batch(g, batch, n);
			for (int i = 0; i < n; i++) {
				json_decref(batch[i]->payload);
				free(batch[i]);
			}
		}
		aw_metrics_loop_tick("mcp_recorder");
		pthread_mutex_lock(&g->rmu);
		g->recording = 0;
		pthread_cond_broadcast(&g->rdone);
	}
	pthread_mutex_unlock(&g->rmu);
	return NULL;
}

void aw_mcp_flush(aw_mcp *g)
{
	pthread_mutex_lock(&g->rmu);
	g->flushing++;
	pthread_cond_broadcast(&g->rcv);
	while (g->rhead || g->recording || g->unrecorded)
		pthread_cond_wait(&g->rdone, &g->rmu);
	g->flushing--;
	pthread_mutex_unlock(&g->rmu);
}

/* ------------------------------------------------------------ tools/call */

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

/* A failed upstream's code: the operator's refusals keep their own. */
static aw_err up_code(aw_err e)
{
	return e == AW_E_MCP_STDIO || e == AW_E_MCP_SANDBOX ? e : AW_E_MCP_UPSTREAM;
}

static json_t *refuse(call_note *n, const json_t *id, int gate, aw_err code, const char *msg,
		      const char *pointer)
{
	n->gate = gate;
	n->code = code;
	n->outcome = gate == 5 && code == AW_E_MCP_UPSTREAM ? "failed" : "refused";
	return gate_error(id, code, gate, msg, pointer);
}

/* Redacts a result JSON-aware, but not the base64 payloads of image, audio
 * and blob content (redaction patterns inside an encoding would corrupt the
 * bytes and protect nothing: the text is not there in clear). */
static void redact_result(const char *project, json_t *res)
{
	json_t *content = json_object_get(res, "content"), *held = json_array();
	size_t i;
	json_t *item;
	json_array_foreach (content, i, item) {
		json_t *res_ = json_object_get(item, "resource");
		json_t *owner = json_object_get(item, "data") ? item : res_;
		const char *k = json_object_get(item, "data") ? "data" : "blob";
		json_t *v = json_object_get(owner, k);
		if (json_is_string(v)) {
			json_array_append_new(held, json_pack("{s:o,s:s,s:O}", "o",
							      json_incref(owner), "k", k, "v", v));
			json_object_set_new(owner, k, json_string(""));
		}
	}
	aw_redact_json_for(project, res, NULL);
	json_array_foreach (held, i, item)
		json_object_set(json_object_get(item, "o"),
				json_string_value(json_object_get(item, "k")),
				json_object_get(item, "v"));
	json_decref(held);
}

/* Gate 4 across every gateway process sharing Redis: a sliding one-minute
 * window (this minute's count plus the last minute's, weighted by how much
 * of it the window still covers) under {project}:mcp:rate:{tool}:{minute}.
 * 0 when the call fits the tool's per_minute, else ms until it would; a
 * refused call is not counted. Redis unreachable: 0 (the process's own
 * bucket still holds). */
static long shared_rate(aw_mcp *g, const aw_ctx *ctx, const char *name, double per_min)
{
	int64_t now = aw_clock_wall_ms(), into = now % 60000;
	char cur[24], prev[24];
	snprintf(cur, sizeof cur, "%lld", (long long)(now / 60000));
	snprintf(prev, sizeof prev, "%lld", (long long)(now / 60000 - 1));
	const char *vc[] = {name, cur}, *vp[] = {name, prev};
	long long n = 0;
	aw_error err = {0};
	if (aw_kv_incr(g->o.kv, ctx, "mcp_rate", vc, 2, 1, &n, &err)) {
		aw_log(AW_LOG_WARN, ctx, "mcp shared rate unavailable; this process's bucket alone",
		       "tool", name, "detail", err.msg, NULL);
		return 0;
	}
	if (n == 1)
		aw_kv_expire(g->o.kv, ctx, "mcp_rate", vc, 2, 120, &err);
	char *pv = NULL;
	double before = 0;
	if (!aw_kv_get(g->o.kv, ctx, "mcp_rate", vp, 2, &pv, &err) && pv)
		before = strtod(pv, NULL);
	free(pv);
	double left = (60000.0 - (double)into) / 60000.0;
	if (before * left + (double)n <= per_min)
		return 0;
	aw_kv_incr(g->o.kv, ctx, "mcp_rate", vc, 2, -1, &n, &err);
	/* when the last minute's weight leaves room for this call (or, this
	 * minute full by itself, when it ends) */
	double room = per_min - (double)n - 1, wait = 60000.0 - (double)into;
	if (before > 0 && room >= 0)
		wait -= room * 60000.0 / before;
	return wait < 1 ? 1 : (long)wait;
}

/* A token of r (name: its key in the shared window): this process's bucket,
 * then - with Redis - the window every gateway process shares (a token the
 * window refuses is given back). 0, else ms until one is. */
static long rate_take(aw_mcp *g, const aw_ctx *ctx, pthread_mutex_t *mu, rate_bucket *r,
		      const char *name)
{
	if (!r->rated)
		return 0;
	pthread_mutex_lock(mu);
	int64_t now = aw_clock_mono_ns();
	r->tokens += (double)(now - r->last_ns) * r->per_ns;
	if (r->tokens > r->burst)
		r->tokens = r->burst;
	r->last_ns = now;
	long wait = 0;
	if (r->tokens >= 1)
		r->tokens -= 1;
	else
		wait = (long)((1 - r->tokens) / r->per_ns / 1e6) + 1;
	pthread_mutex_unlock(mu);
	if (!wait && g->o.kv && (wait = shared_rate(g, ctx, name, r->per_min))) {
		pthread_mutex_lock(mu);
		if (r->tokens + 1 <= r->burst)
			r->tokens += 1;
		pthread_mutex_unlock(mu);
	}
	return wait;
}

/* One message as an SSE event on the client's stream, whole or not at all:
 * a client that does not read loses what does not fit (holds c->mu). */
static void sse_add(aw_mcp_call *c, const json_t *msg)
{
	static const char head[] = "event: message\ndata: ";
	char *d = json_dumps(msg, JSON_COMPACT);
	if (d && c->out.len + sizeof head + strlen(d) + 2 <= c->out.max) {
		aw_buf_adds(&c->out, head);
		aw_buf_adds(&c->out, d);
		aw_buf_adds(&c->out, "\n\n");
	}
	free(d);
}

static void wake_client(aw_mcp_call *c) /* holds c->mu */
{
	if (c->parked && c->wake) {
		c->parked = 0;
		c->wake(c->ud);
	}
}

/* 1 when the call's client can be sent messages before its answer: a
 * legacy session's POST that accepts an event stream. */
static int can_stream(const aw_mcp_call *c)
{
	return c->meta.accept_sse && c->req_session[0] && !c->meta.stateless;
}

/* A message to the client before the answer: the answer becomes a stream. */
static void emit(aw_mcp_call *c, const json_t *msg)
{
	pthread_mutex_lock(&c->mu);
	if (!c->eof) {
		sse_add(c, msg);
		c->streaming = 1;
		wake_client(c);
	}
	pthread_mutex_unlock(&c->mu);
}

/* The answer: the last event of a stream, or on its own - as a stream of one
 * event when the client lists text/event-stream before application/json. */
static void finish(aw_mcp_call *c, json_t *response, int status)
{
	pthread_mutex_lock(&c->mu);
	if (!c->streaming && response && status == 200 && c->meta.accept_sse == 2)
		c->streaming = 1;
	if (c->streaming) {
		if (response)
			sse_add(c, response);
		json_decref(response);
		c->eof = 1;
	} else {
		c->response = response;
		c->status = status;
	}
	c->done = 1;
	wake_client(c);
	pthread_mutex_unlock(&c->mu);
}

static msession *session_of(aw_mcp *g, const aw_mcp_call *c);

/* The CAP_* of the session a call came in. */
static int session_caps(aw_mcp *g, const aw_mcp_call *c)
{
	pthread_mutex_lock(&g->mu);
	msession *s = session_of(g, c);
	int caps = s ? s->caps : 0;
	pthread_mutex_unlock(&g->mu);
	return caps;
}

/* aw_mcp_peer.request: an upstream's request during a call, asked of the
 * call's client on its stream under an id of the gateway's; the client's
 * answer (a POST in the same session) goes back to the upstream. Refused
 * (NULL) when the client cannot be asked: no stream, or it did not declare
 * the capability at initialize. ping is answered here. */
static json_t *peer_request(void *ud, const json_t *req)
{
	aw_mcp_call *c = ud;
	aw_mcp *g = c->g;
	const json_t *uid = json_object_get(req, "id");
	const char *m = json_string_value(json_object_get(req, "method"));
	if (!strcmp(m, "ping"))
		return aw_rpc_result_json(uid, json_object());
	int need = !strcmp(m, "sampling/createMessage") ? CAP_SAMPLING
		   : !strcmp(m, "elicitation/create")	? CAP_ELICITATION
		   : !strcmp(m, "roots/list")		? CAP_ROOTS
							: 0;
	if (!need || !can_stream(c) || !(session_caps(g, c) & need))
		return NULL;
	ask a = {.call = c};
	snprintf(a.id, sizeof a.id, "awooop-%lld", (long long)atomic_fetch_add(&g->serial, 1));
	json_t *params = json_deep_copy(json_object_get(req, "params"));
	if (params)
		aw_redact_json(params, NULL);
	json_t *out = json_pack("{s:s,s:s,s:s,s:o*}", "jsonrpc", "2.0", "id", a.id, "method", m,
				"params", params);
	pthread_mutex_lock(&g->mu);
	a.next = g->asks;
	g->asks = &a;
	pthread_mutex_unlock(&g->mu);
	emit(c, out);
	json_decref(out);
	int64_t until = aw_clock_mono_ns() + (int64_t)c->ask_timeout_ms * 1000000LL;
	pthread_mutex_lock(&c->mu);
	while (!a.answer && !atomic_load(&c->gone) && !atomic_load(&c->cancel) &&
	       aw_clock_mono_ns() < until) {
		struct timespec ts = aw_clock_after(CLOCK_MONOTONIC, 50);
		pthread_cond_timedwait(&c->cv, &c->mu, &ts);
	}
	pthread_mutex_unlock(&c->mu);
	pthread_mutex_lock(&g->mu);
	for (ask **pp = &g->asks; *pp; pp = &(*pp)->next)
		if (*pp == &a) {
			*pp = a.next;
			break;
		}
	pthread_mutex_unlock(&g->mu);
	json_t *res = json_object_get(a.answer, "result"), *er = json_object_get(a.answer, "error");
	json_t *back =
		json_is_object(res) ? aw_rpc_result_json(uid, json_incref(res))
		: json_is_object(er)
			? json_pack("{s:s,s:O,s:O}", "jsonrpc", "2.0", "id", uid, "error", er)
			: aw_rpc_error_json(uid, AW_RPC_INTERNAL,
					    a.answer ? "the client's answer holds no result"
						     : "the client did not answer",
					    NULL);
	json_decref(a.answer);
	return back;
}

/* aw_mcp_peer.notify: progress (under the client's own token) and log
 * messages, redacted, on the call's stream; others dropped. */
static void peer_notify(void *ud, const json_t *note)
{
	aw_mcp_call *c = ud;
	const char *m = json_string_value(json_object_get(note, "method"));
	json_t *params = json_object_get(note, "params");
	int progress = !strcmp(m, "notifications/progress");
	if (!can_stream(c) || !(progress || !strcmp(m, "notifications/message")))
		return;
	if (progress && (!c->progress ||
			 strcmp(json_string_value(json_object_get(params, "progressToken")) ?: "",
				c->up_token)))
		return;
	json_t *p = json_deep_copy(params);
	if (!p)
		return;
	if (progress)
		json_object_del(p, "progressToken");
	aw_redact_json(p, NULL);
	if (progress)
		json_object_set(p, "progressToken", c->progress);
	json_t *out = json_pack("{s:s,s:s,s:o}", "jsonrpc", "2.0", "method", m, "params", p);
	emit(c, out);
	json_decref(out);
}

/* The peer of a call's upstream requests; up_params' _meta.progressToken
 * (when the client sent one) replaced by one of the gateway's. */
static aw_mcp_peer call_peer(aw_mcp_call *c, json_t *up_params, int timeout_ms)
{
	json_t *pt = json_object_get(json_object_get(c->msg.params, "_meta"), "progressToken");
	c->ask_timeout_ms = timeout_ms;
	if (up_params && (json_is_string(pt) || json_is_integer(pt)) && can_stream(c)) {
		c->progress = json_deep_copy(pt);
		snprintf(c->up_token, sizeof c->up_token, "awooop-p%lld",
			 (long long)atomic_fetch_add(&c->g->serial, 1));
		json_object_set_new(up_params, "_meta",
				    json_pack("{s:s}", "progressToken", c->up_token));
	}
	return (aw_mcp_peer){
		.cancel = &c->cancel, .request = peer_request, .notify = peer_notify, .ud = c};
}

/* A client's response to one of the gateway's asks: handed to the ask of
 * the same session, project and key; others dropped. */
static void client_answer(aw_mcp *g, const aw_mcp_call *from)
{
	const char *id = json_string_value(from->msg.id);
	if (!id || !from->req_session[0])
		return;
	pthread_mutex_lock(&g->mu);
	for (ask *a = g->asks; a; a = a->next) {
		aw_mcp_call *c = a->call;
		if (strcmp(a->id, id) || strcmp(c->req_session, from->req_session) ||
		    strcmp(c->ctx.project, from->ctx.project) ||
		    strcmp(c->ctx.principal, from->ctx.principal))
			continue;
		pthread_mutex_lock(&c->mu);
		if (!a->answer) /* a copy: the client's message is freed by its own thread */
			a->answer = json_deep_copy(from->msg.doc);
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->mu);
		break;
	}
	pthread_mutex_unlock(&g->mu);
}

/* A session's GET stream ends (holds g->mu). */
static void listener_end(msession *s)
{
	aw_mcp_call *l = s->listener;
	if (!l)
		return;
	s->listener = NULL;
	pthread_mutex_lock(&l->mu);
	l->eof = 1;
	wake_client(l);
	pthread_mutex_unlock(&l->mu);
	aw_mcp_release(l);
}

static void session_free(msession *s) /* holds g->mu, or the gateway is going */
{
	listener_end(s);
	for (int i = 0; i < s->nsubs; i++)
		free(s->subs[i]);
	free(s);
}

/* The session of a call (holds g->mu); NULL when it ended. */
static msession *session_of(aw_mcp *g, const aw_mcp_call *c)
{
	for (msession *s = g->sessions; s; s = s->next)
		if (!strcmp(s->id, c->req_session) && !strcmp(s->project, c->ctx.project) &&
		    !strcmp(s->principal, c->ctx.principal))
			return s;
	return NULL;
}

/* Adds (on) or removes uri from the call's session's subscriptions. On: 0,
 * or -1 when the session has SUBS_MAX or ended. Off: how many other
 * sessions of the project still subscribe to uri. */
static int session_sub(aw_mcp *g, const aw_mcp_call *c, const char *uri, int on)
{
	int r = on ? -1 : 0;
	pthread_mutex_lock(&g->mu);
	msession *s = session_of(g, c);
	for (int i = 0; s && i < s->nsubs; i++)
		if (!strcmp(s->subs[i], uri)) {
			if (on) {
				s = NULL, r = 0; /* already */
				break;
			}
			free(s->subs[i]);
			s->subs[i] = s->subs[--s->nsubs];
			break;
		}
	if (on && s && s->nsubs < SUBS_MAX && (s->subs[s->nsubs] = strdup(uri)))
		s->nsubs++, r = 0;
	for (msession *o = g->sessions; !on && o; o = o->next)
		for (int i = 0; o != s && !strcmp(o->project, c->ctx.project) && i < o->nsubs; i++)
			r += !strcmp(o->subs[i], uri);
	pthread_mutex_unlock(&g->mu);
	return r;
}

/* A notification to the GET streams of a project's sessions: every one, or
 * with uri those subscribed to it. */
static void to_sessions(aw_mcp *g, const char *project, const char *method, const char *uri)
{
	json_t *note = uri ? json_pack("{s:s,s:s,s:{s:s}}", "jsonrpc", "2.0", "method", method,
				       "params", "uri", uri)
			   : json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", method);
	pthread_mutex_lock(&g->mu);
	for (msession *s = g->sessions; s && note; s = s->next) {
		if (!s->listener || strcmp(s->project, project))
			continue;
		int want = !uri;
		for (int i = 0; i < s->nsubs && !want; i++)
			want = !strcmp(s->subs[i], uri);
		if (want)
			emit(s->listener, note);
	}
	pthread_mutex_unlock(&g->mu);
	json_decref(note);
}

/* aw_mcp_up_opts.event: what a project's upstream says outside any call -
 * notifications/resources/updated to the sessions subscribed to the URI
 * (only the URI is passed on), notifications/tools/list_changed to all of
 * the project's sessions (the gateway's list may hide or show a tool now). */
static void up_event(void *ud, const char *project, const json_t *msg)
{
	const char *m = json_string_value(json_object_get(msg, "method"));
	const char *uri = json_string_value(json_object_get(json_object_get(msg, "params"), "uri"));
	if (!strcmp(m, "notifications/tools/list_changed"))
		to_sessions(ud, project, m, NULL);
	else if (uri)
		to_sessions(ud, project, m, uri);
}

static json_t *tools_call(aw_mcp *g, aw_mcp_call *call, catalog *c, call_note *n)
{
	const json_t *id = call->msg.id;
	json_t *params = call->msg.params;
	const char *name = call->msg.name;
	char msg[300];
	/* gate 1: the tool is one of this project's */
	mtool *t = NULL;
	for (int i = 0; c && i < c->ntools && !t; i++)
		if (!strcmp(c->tools[i].full, name))
			t = &c->tools[i];
	if (!t) {
		snprintf(msg, sizeof msg, "tool %.128s is not visible to this project", name);
		return refuse(n, id, 1, AW_E_MCP_TOOL, msg, NULL);
	}
	n->t = t;
	/* gate 2: policy and pin */
	if (!t->enabled)
		return refuse(n, id, 2, AW_E_MCP_POLICY,
			      "the tool is disabled by the project's policy", NULL);
	if (t->write && c->read_only)
		return refuse(n, id, 2, AW_E_MCP_POLICY, "a write tool in a read_only project",
			      NULL);
	char pin[AW_MCP_PIN_MAX];
	aw_error err = {0};
	if (defs_get(g, t->u, 0, t->name, t->pin, pin, NULL, &err))
		return refuse(n, id, 5, up_code(err.err), err.msg, NULL);
	int same = t->pin && !strcmp(pin, t->pin), def = pin[0] != 0;
	if (!same) {
		snprintf(msg, sizeof msg, "%s",
			 !t->pin ? "the tool has no pinned definition (publish pins it)"
			 : !def	 ? "the upstream no longer offers the tool it was approved with"
				 : "the upstream's definition of the tool changed since its "
				   "revision was approved; a new revision must pin it");
		return refuse(n, id, 2, AW_E_MCP_PIN, msg, NULL);
	}
	/* gate 3: arguments */
	json_t *args = json_object_get(params, "arguments");
	if (args && !json_is_object(args))
		return refuse(n, id, 3, AW_E_MCP_ARGS, "arguments must be an object", "/arguments");
	json_t *empty = args ? NULL : json_object();
	const json_t *a = args ? args : empty;
	char *as = json_dumps(a, JSON_COMPACT);
	size_t alen = as ? strlen(as) : 0;
	free(as);
	json_t *reply = NULL;
	if (alen > (size_t)t->max_args) {
		snprintf(msg, sizeof msg, "arguments are %zu bytes, the tool takes at most %d",
			 alen, t->max_args);
		reply = refuse(n, id, 3, AW_E_MCP_ARGS, msg, "/arguments");
		goto out;
	}
	aw_schema_error se;
	if (t->schema && aw_schema_validate(t->schema, a, &se, 1) > 0) {
		snprintf(msg, sizeof msg, "arguments%.100s %.150s", se.pointer, se.message);
		reply = refuse(n, id, 3, AW_E_MCP_ARGS, msg, se.pointer);
		goto out;
	}
	n->args_audit = json_deep_copy(a);
	/* gate 4: rate and budget */
	long wait = rate_take(g, &call->ctx, &c->mu, &t->rate, t->full);
	if (wait) {
		snprintf(msg, sizeof msg, "the tool's rate limit is spent; retry in %ld ms", wait);
		reply = refuse(n, id, 4, AW_E_MCP_RATE, msg, NULL);
		json_object_set_new(json_object_get(json_object_get(reply, "error"), "data"),
				    "retry_after_ms", json_integer(wait));
		goto out;
	}
	int suspended = 0;
	if (aw_budget_suspended_recent(g->o.store, &call->ctx, &suspended, &err) || suspended) {
		reply = refuse(n, id, 4, AW_E_MCP_BUDGET,
			       suspended ? "the project is suspended by its budget"
					 : "the budget could not be read",
			       NULL);
		goto out;
	}
	/* gate 5: approval, then the upstream */
	if (t->approval && !call->meta.approved) {
		reply = refuse(n, id, 5, AW_E_MCP_APPROVAL,
			       "the tool requires an approval: call it from a run's tool step,"
			       " which waits for one",
			       NULL);
		goto out;
	}
	json_t *up_params = json_pack("{s:s,s:O}", "name", t->name, "arguments", a);
	/* a tool's own timeout, else its upstream's, never past the platform's
	 * bound */
	int timeout_ms = t->timeout_ms ? t->timeout_ms : t->u->timeout_ms;
	if (timeout_ms > g->o.timeout_max_ms)
		timeout_ms = g->o.timeout_max_ms;
	aw_mcp_peer peer = call_peer(call, up_params, timeout_ms);
	json_t *res = NULL, *rpc = NULL;
	aw_err e = aw_mcp_up_request(t->u->up, "tools/call", up_params, timeout_ms, &peer, &res,
				     &rpc, &err);
	json_decref(up_params);
	if (e == AW_E_MCP_CANCELLED) {
		reply = refuse(n, id, 5, e, err.msg, NULL);
		n->outcome = "cancelled";
		json_decref(rpc);
		goto out;
	}
	if (e) {
		if (rpc) { /* the upstream's own error: relayed, redacted */
			aw_redact_json(rpc, NULL);
			json_t *ed = json_object_get(rpc, "data");
			json_t *d = json_pack("{s:s,s:i}", "code", aw_err_code(AW_E_MCP_UPSTREAM),
					      "gate", 5);
			if (ed)
				json_object_set(d, "upstream", ed);
			json_object_set_new(rpc, "data", d);
			n->has_upstream_code = 1;
			n->upstream_code = json_integer_value(json_object_get(rpc, "code"));
			n->gate = 5;
			n->code = AW_E_MCP_UPSTREAM;
			n->outcome = "failed";
			reply = json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "error",
					  rpc);
		} else {
			reply = refuse(n, id, 5, up_code(err.err), err.msg, NULL);
		}
		goto out;
	}
	redact_result(call->ctx.project, res);
	res = cut_result(res, t->max_result, &n->result_bytes, &n->cut);
	n->outcome = json_is_true(json_object_get(res, "isError")) ? "tool_error" : "ok";
	decorate(res, &call->meta, 0);
	reply = aw_rpc_result_json(id, res);
out:
	json_decref(empty);
	return reply;
}

static void audit_call(aw_mcp *g, aw_mcp_call *call, catalog *c, call_note *n, int64_t t0)
{
	double ms = (double)(aw_clock_mono_ns() - t0) / 1e6;
	aw_metrics_mcp_call(call->ctx.project, n->t ? n->t->full : "-", n->outcome, ms / 1e3,
			    n->gate, n->gate ? aw_err_code(n->code) : "");
	aw_envelope e = {.ctx = &call->ctx,
			 .revision_id = c ? c->revision_id : NULL,
			 .body_hash = c ? c->body_hash : NULL,
			 .upstream = n->t ? n->t->u->provider : NULL,
			 .outcome = n->outcome,
			 .code = n->gate || n->code ? aw_err_code(n->code) : NULL,
			 .gate = n->gate,
			 .run_id = call->run_id,
			 .step = call->meta.step_no,
			 .latency_ms = ms};
	json_t *p = aw_envelope_json(&e);
	if (!p)
		return;
	/* the MCP door's own */
	json_object_set_new(p, "tool", json_string(n->t ? n->t->full : call->msg.name));
	if (n->t)
		json_object_set_new(p, "upstream_tool", json_string(n->t->name));
	if (n->has_upstream_code)
		json_object_set_new(p, "upstream_code", json_integer(n->upstream_code));
	if (n->args_audit) { /* redacted; a large one by its size only */
		aw_redact_json(n->args_audit, NULL);
		char *s = json_dumps(n->args_audit, JSON_COMPACT);
		if (s && strlen(s) <= AUDIT_ARGS_MAX) { /* handed over: the recorder thread
							    frees it, nothing is shared */
			json_object_set_new(p, "arguments", n->args_audit);
			n->args_audit = NULL;
		} else
			json_object_set_new(p, "arguments_bytes",
					    json_integer(s ? (json_int_t)strlen(s) : 0));
		free(s);
	}
	if (n->result_bytes) {
		json_object_set_new(p, "result_bytes", json_integer((json_int_t)n->result_bytes));
		json_object_set_new(p, "cut", json_boolean(n->cut));
	}
	if (call->meta.approved)
		json_object_set_new(p, "approved", json_true());
	record_queue(g, &call->ctx, "mcp.call", n->t ? n->t->full : "-", p);
}

/* ------------------------------------------------------------ dispatch */

static int relay_kind(const char *m)
{
	if (!strncmp(m, "resources/", 10) &&
	    (!strcmp(m + 10, "list") || !strcmp(m + 10, "templates/list") ||
	     !strcmp(m + 10, "read") || !strcmp(m + 10, "subscribe") ||
	     !strcmp(m + 10, "unsubscribe")))
		return RELAY_RESOURCES;
	if (!strcmp(m, "prompts/list") || !strcmp(m, "prompts/get"))
		return RELAY_PROMPTS;
	if (!strcmp(m, "completion/complete"))
		return RELAY_COMPLETION;
	return !strcmp(m, "logging/setLevel") ? RELAY_LOGGING : 0;
}

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

/* resources, prompts, completion and logging, to the upstreams whose revision
 * entry lets them through ("relay"): lists merged (prompt names federated
 * like tools when several upstreams relay prompts), a read, get or
 * completion to the one upstream that answers it, setLevel to each. Answers
 * are redacted like tool results; _meta is not passed on.
 *
 * The gates of a tools/call that apply: the per-call guard (the catalog,
 * run_call), then the project's suspension (gate 4, E-MCP-GATE-007: a
 * suspended project reaches no upstream; resources/unsubscribe alone still
 * passes, it only stops work) and each relaying upstream's relay_rate_limit
 * (gate 4, E-MCP-GATE-006), then the upstream (gate 5). */
static json_t *relay(aw_mcp *g, aw_mcp_call *call, catalog *c, int kind, relay_note *rn)
{
	const json_t *id = call->msg.id;
	const char *m = call->msg.method;
	upinst *ups[32];
	int n = 0;
	for (int i = 0; c && i < c->nups; i++)
		if (c->ups[i]->relay & kind)
			ups[n++] = c->ups[i];
	rn->outcome = "refused";
	int list = !strcmp(m + strlen(m) - 5, "/list");
	/* the member a list answer holds its items in */
	const char *k = kind == RELAY_PROMPTS	 ? "prompts"
			: strstr(m, "templates") ? "resourceTemplates"
						 : "resources";
	if (!n && list) { /* nothing relayed: an empty list, as before */
		json_t *res = json_pack("{s:[]}", k);
		decorate(res, &call->meta, 1);
		rn->outcome = "ok";
		return aw_rpc_result_json(id, res);
	}
	if (!n)
		return aw_rpc_error_json(id, AW_RPC_METHOD,
					 "this project's upstreams relay no such method", NULL);
	/* subscriptions are a session's: its GET stream gets the updates; an
	 * upstream is told to stop only when no session of the project wants
	 * the URI any more (one upstream session serves them all) */
	int sub = !strcmp(m, "resources/subscribe"), unsub = !strcmp(m, "resources/unsubscribe");
	const char *uri = json_string_value(json_object_get(call->msg.params, "uri"));
	if ((sub || unsub) && (!call->req_session[0] || call->meta.stateless))
		return aw_rpc_error_json(id, AW_RPC_METHOD,
					 "resource subscriptions need a session (initialize); "
					 "subscriptions/listen is not relayed",
					 NULL);
	if ((sub || unsub) && (!uri || strlen(uri) > 2048))
		return aw_rpc_error_json(id, AW_RPC_PARAMS,
					 "params.uri must be a string of at most 2048 bytes", NULL);
	/* gate 4: a suspended project reaches no upstream */
	int suspended = 0;
	aw_error err = {0};
	if (!unsub &&
	    (aw_budget_suspended_recent(g->o.store, &call->ctx, &suspended, &err) || suspended)) {
		rn->gate = 4;
		return gate_error(id, AW_E_MCP_BUDGET, 4,
				  suspended ? "the project is suspended by its budget"
					    : "the budget could not be read",
				  NULL);
	}
	/* gate 4: each upstream's relay_rate_limit, as a tool's rate_limit */
	for (int i = 0; !unsub && i < n; i++) {
		long wait = rate_take(g, &call->ctx, &ups[i]->mu, &ups[i]->rate, ups[i]->rate_name);
		if (wait) {
			char msg[160];
			snprintf(msg, sizeof msg,
				 "upstream %s's relay rate limit is spent; retry in %ld ms",
				 ups[i]->provider, wait);
			rn->gate = 4;
			json_t *reply = gate_error(id, AW_E_MCP_RATE, 4, msg, NULL);
			json_object_set_new(
				json_object_get(json_object_get(reply, "error"), "data"),
				"retry_after_ms", json_integer(wait));
			return reply;
		}
	}
	err = (aw_error){0};
	if (sub && session_sub(g, call, uri, 1))
		return aw_rpc_error_json(id, AW_RPC_PARAMS,
					 "a session subscribes to at most 64 resources", NULL);
	if (unsub && session_sub(g, call, uri, 0) > 0) {
		rn->outcome = "ok";
		return aw_rpc_result_json(id, json_object());
	}
	json_t *params = call->msg.params ? json_deep_copy(call->msg.params) : json_object();
	json_object_del(params, "_meta");
	int suffix = !json_is_false(json_object_get(c->body, "suffix")) && n > 1;
	const char *pname = json_string_value(json_object_get(params, "name"));
	json_t *merged = NULL, *rpc = NULL, *res = NULL;
	aw_err e = AW_E_MCP_UPSTREAM;
	rn->gate = 5; /* from here on the upstreams decide */
	for (int i = 0; i < n; i++) {
		json_t *p = params;
		if (suffix && pname && !strcmp(m, "prompts/get")) { /* name__provider */
			size_t pl = strlen(pname), vl = strlen(ups[i]->provider);
			if (pl < vl + 3 || strcmp(pname + pl - vl, ups[i]->provider) ||
			    strncmp(pname + pl - vl - 2, "__", 2))
				continue;
			p = json_deep_copy(params);
			json_object_set_new(p, "name", json_stringn(pname, pl - vl - 2));
		}
		json_t *r = NULL, *re = NULL;
		rn->asked[rn->nasked++] = ups[i]->provider;
		aw_mcp_peer peer = call_peer(call, NULL, ups[i]->timeout_ms);
		e = aw_mcp_up_request(ups[i]->up, m, p, ups[i]->timeout_ms, &peer, &r, &re, &err);
		if (p != params)
			json_decref(p);
		if (e) {
			json_decref(rpc);
			rpc = re;
			if (list || !strcmp(m, "logging/setLevel"))
				break; /* a list is whole or an error */
			continue;      /* a read or get: the next upstream may have it */
		}
		json_decref(rpc);
		rpc = NULL;
		if (!list) {
			json_decref(res);
			res = r;
			rn->upstream = ups[i]->provider;
			if (sub)
				aw_mcp_up_listen(ups[i]->up);
			if (strcmp(m, "logging/setLevel") && !unsub)
				break;
			continue;
		}
		if (!merged)
			merged = json_pack("{s:[]}", k);
		size_t j;
		json_t *item;
		json_array_foreach (json_object_get(r, k), j, item) {
			json_t *copy = json_deep_copy(item);
			if (suffix && kind == RELAY_PROMPTS) {
				char full[300];
				snprintf(full, sizeof full, "%s__%s",
					 json_string_value(json_object_get(item, "name")) ?: "",
					 ups[i]->provider);
				json_object_set_new(copy, "name", json_string(full));
			}
			json_array_append_new(json_object_get(merged, k), copy);
		}
		if (n == 1 && json_object_get(r, "nextCursor"))
			json_object_set(merged, "nextCursor", json_object_get(r, "nextCursor"));
		json_decref(r);
	}
	json_decref(params);
	if (list && !e)
		res = merged;
	else
		json_decref(merged);
	if (!res && sub) /* no upstream took it */
		session_sub(g, call, uri, 0);
	if (!res) {
		rn->outcome = err.err == AW_E_MCP_CANCELLED ? "cancelled" : "failed";
		if (rpc) { /* the upstream's own error, redacted */
			aw_redact_json(rpc, NULL);
			json_t *d = json_pack("{s:s}", "code", aw_err_code(AW_E_MCP_UPSTREAM));
			if (json_object_get(rpc, "data"))
				json_object_set(d, "upstream", json_object_get(rpc, "data"));
			json_object_set_new(rpc, "data", d);
			return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "error", rpc);
		}
		return aw_rpc_error_json(id, AW_RPC_GATE,
					 err.msg[0] ? err.msg : "no upstream answered",
					 aw_err_code(AW_E_MCP_UPSTREAM));
	}
	redact_result(call->ctx.project, res);
	json_t *contents = json_object_get(res, "contents"); /* resources/read */
	size_t j;
	json_t *item;
	json_array_foreach (contents, j, item) { /* text redacted, blobs kept */
		json_t *blob = json_object_get(item, "blob");
		if (blob)
			json_incref(blob);
		aw_redact_json(item, NULL);
		if (blob)
			json_object_set_new(item, "blob", blob);
	}
	decorate(res, &call->meta, list || !strcmp(m, "resources/read"));
	rn->gate = 0;
	rn->outcome = "ok";
	return aw_rpc_result_json(id, res);
}

/* The mcp.relay record of a relayed method: the envelope (principal, trace,
 * revision, the upstream that answered, outcome, code, gate, latency), the
 * method, the upstreams asked, the JSON-RPC code of an error answer
 * (rpc_code), and what the request named - the resource's uri or the
 * prompt's name, redacted (over 1 KiB: its size only). No arguments and
 * nothing of any answer. */
static void audit_relay(aw_mcp *g, aw_mcp_call *call, catalog *c, const relay_note *rn, int64_t t0)
{
	double ms = (double)(aw_clock_mono_ns() - t0) / 1e6;
	int error = rn->error;
	const char *code = rn->code[0] ? rn->code : NULL;
	aw_envelope e = {.ctx = &call->ctx,
			 .revision_id = c ? c->revision_id : NULL,
			 .body_hash = c ? c->body_hash : NULL,
			 .upstream = rn->upstream,
			 .outcome = rn->outcome ? rn->outcome : (error ? "failed" : "ok"),
			 .code = code,
			 .gate = error ? rn->gate : 0,
			 .run_id = call->run_id,
			 .step = call->meta.step_no,
			 .latency_ms = ms};
	json_t *p = aw_envelope_json(&e);
	if (!p)
		return;
	const char *m = call->msg.method;
	json_object_set_new(p, "method", json_string(m));
	if (rn->nasked) {
		json_t *asked = json_array();
		for (int i = 0; i < rn->nasked; i++)
			json_array_append_new(asked, json_string(rn->asked[i]));
		json_object_set_new(p, "upstreams", asked);
	}
	if (error)
		json_object_set_new(p, "rpc_code", json_integer(rn->rpc_code));
	const char *k = !strncmp(m, "resources/", 10) ? "uri" : "name";
	const char *named = strcmp(m, "prompts/get") && strncmp(m, "resources/", 10)
				    ? NULL
				    : json_string_value(json_object_get(call->msg.params, k));
	char *red = named && strlen(named) <= 1024 ? aw_redact_str(named) : NULL;
	if (red) {
		json_object_set_new(p, k, json_string(red));
		free(red);
	} else if (named) {
		json_object_set_new(p, !strcmp(k, "uri") ? "uri_bytes" : "name_bytes",
				    json_integer((json_int_t)strlen(named)));
	}
	record_queue(g, &call->ctx, "mcp.relay", m, p);
}

/* A request of a legacy session is listed while it runs, so that its client
 * can cancel it (notifications/cancelled names the session's request id). */
static void inflight(aw_mcp *g, aw_mcp_call *call, int on)
{
	if (!call->req_session[0] || !call->msg.id)
		return;
	pthread_mutex_lock(&g->mu);
	if (on) {
		call->inext = g->inflight;
		g->inflight = call;
	} else {
		for (aw_mcp_call **pp = &g->inflight; *pp; pp = &(*pp)->inext)
			if (*pp == call) {
				*pp = call->inext;
				break;
			}
	}
	pthread_mutex_unlock(&g->mu);
}

/* notifications/cancelled of ctx's session: the request it names, if it is
 * still running, is given up (its upstream told so). */
static void cancel_request(aw_mcp *g, const aw_mcp_call *note)
{
	const json_t *rid = json_object_get(note->msg.params, "requestId");
	if (!note->req_session[0] || !(json_is_string(rid) || json_is_integer(rid)))
		return;
	pthread_mutex_lock(&g->mu);
	for (aw_mcp_call *c = g->inflight; c; c = c->inext)
		if (!strcmp(c->req_session, note->req_session) &&
		    !strcmp(c->ctx.project, note->ctx.project) &&
		    !strcmp(c->ctx.principal, note->ctx.principal) &&
		    json_equal((json_t *)c->msg.id, (json_t *)rid))
			atomic_store(&c->cancel, 1);
	pthread_mutex_unlock(&g->mu);
}

/* Answers a call that leaves an audit record (a tools/call's n or a relayed
 * method's rn): the client first, the record right after - a flush waits for
 * it. */
static void recorded_answer(aw_mcp *g, aw_mcp_call *call, json_t *reply, int status, relay_note *rn,
			    call_note *n, catalog *c, int64_t t0)
{
	pthread_mutex_lock(&g->rmu);
	g->unrecorded++;
	pthread_mutex_unlock(&g->rmu);
	json_t *error = json_object_get(reply, "error");
	if (rn && error) { /* read now: the answer is the client's once finished */
		rn->error = 1;
		rn->rpc_code = json_integer_value(json_object_get(error, "code"));
		snprintf(rn->code, sizeof rn->code, "%s",
			 json_string_value(json_object_get(json_object_get(error, "data"), "code"))
				 ?: "");
	}
	finish(call, reply, status);
	if (rn)
		audit_relay(g, call, c, rn, t0);
	else
		audit_call(g, call, c, n, t0);
	pthread_mutex_lock(&g->rmu);
	g->unrecorded--;
	pthread_cond_broadcast(&g->rdone);
	pthread_mutex_unlock(&g->rmu);
}

/* The methods that touch upstreams (on a worker). */
static void run_call(aw_mcp *g, aw_mcp_call *call)
{
	inflight(g, call, 1);
	const json_t *id = call->msg.id;
	int64_t t0 = aw_clock_mono_ns();
	aw_err e;
	aw_error err = {0};
	catalog *c = catalog_get(g, &call->ctx, &e, &err);
	json_t *reply;
	int status = 200;
	int kind = relay_kind(call->msg.method);
	if (e && e != AW_E_CONTRACT_NOT_FOUND) {
		reply = aw_rpc_error_json(
			id, AW_RPC_INTERNAL, err.msg,
			aw_err_code(e == AW_E_MCP_UPSTREAM ? e : AW_E_MCP_UNAVAILABLE));
		status = 503;
		if (kind || !strcmp(call->msg.method, "tools/call")) {
			/* the guard could not say which revision governs: recorded
			 * like any other end of a call */
			relay_note rn = {.outcome = "failed"};
			call_note n = {.outcome = "failed",
				       .code = e == AW_E_MCP_UPSTREAM ? e : AW_E_MCP_UNAVAILABLE};
			inflight(g, call, 0);
			recorded_answer(g, call, reply, status, kind ? &rn : NULL, kind ? NULL : &n,
					NULL, t0);
			return;
		}
	} else if (kind) {
		relay_note rn = {0};
		reply = relay(g, call, c, kind, &rn);
		inflight(g, call, 0);
		recorded_answer(g, call, reply, status, &rn, NULL, c, t0);
		catalog_put(c);
		return;
	} else if (!strcmp(call->msg.method, "tools/list")) {
		json_t *res = json_pack("{s:o}", "tools", list_tools(g, c));
		decorate(res, &call->meta, 1);
		reply = aw_rpc_result_json(id, res);
	} else {
		call_note n = {.outcome = "ok"};
		reply = tools_call(g, call, c, &n);
		inflight(g, call, 0);
		recorded_answer(g, call, reply, status, NULL, &n, c, t0);
		json_decref(n.args_audit);
		catalog_put(c);
		return;
	}
	inflight(g, call, 0);
	catalog_put(c);
	finish(call, reply, status);
}

static void *worker_main(void *arg)
{
	aw_mcp *g = arg;
	pthread_setname_np(pthread_self(), "aw-mcp-worker");
	for (;;) {
		aw_fairq_ticket t;
		aw_mcp_call *c = aw_fairq_pop(g->fq, &t);
		if (!c)
			break;
		if (atomic_load(&g->stopping))
			finish(c,
			       aw_rpc_error_json(c->msg.id, AW_RPC_INTERNAL,
						 "the gateway is shutting down",
						 aw_err_code(AW_E_MCP_UNAVAILABLE)),
			       503);
		else
			run_call(g, c);
		aw_fairq_done(g->fq, &t);
		aw_mcp_release(c);
	}
	return NULL;
}

/* Requests that cost the upstream little (lists, subscriptions, the log
 * level) go before upstream calls (tools/call and the relayed reads), so
 * they never wait behind a slow upstream's calls. */
static int cheap(const char *method)
{
	return strcmp(method, "tools/call") && strcmp(method, "resources/read") &&
	       strcmp(method, "prompts/get") && strcmp(method, "completion/complete");
}

static void session_new(aw_mcp *g, aw_mcp_call *c)
{
	uint8_t raw[16];
	if (aw_random_bytes(raw, sizeof raw))
		return;
	msession *s = calloc(1, sizeof *s);
	if (!s)
		return;
	aw_base64url(raw, sizeof raw, s->id);
	memcpy(s->project, c->ctx.project, sizeof s->project);
	memcpy(s->principal, c->ctx.principal, sizeof s->principal);
	memcpy(s->version, c->version, sizeof s->version);
	json_t *caps = json_object_get(c->msg.params, "capabilities");
	s->caps = (json_is_object(json_object_get(caps, "sampling")) ? CAP_SAMPLING : 0) |
		  (json_is_object(json_object_get(caps, "elicitation")) ? CAP_ELICITATION : 0) |
		  (json_is_object(json_object_get(caps, "roots")) ? CAP_ROOTS : 0);
	s->used_ns = aw_clock_mono_ns();
	pthread_mutex_lock(&g->mu);
	/* idle ones go; past a cap, the project's own oldest: a tenant opening
	 * sessions without end ends its own, never another's (the process-wide
	 * cap takes another's oldest only from a project that has none here) */
	msession **pp = &g->sessions, **oldest = NULL, **mine = NULL;
	int nmine = 0;
	while (*pp) {
		if (s->used_ns - (*pp)->used_ns > SESSION_IDLE_NS) {
			msession *d = *pp;
			*pp = d->next;
			session_free(d);
			g->nsessions--;
			continue;
		}
		if (!oldest || (*pp)->used_ns < (*oldest)->used_ns)
			oldest = pp;
		if (!strcmp((*pp)->project, s->project)) {
			nmine++;
			if (!mine || (*pp)->used_ns < (*mine)->used_ns)
				mine = pp;
		}
		pp = &(*pp)->next;
	}
	msession **go = nmine >= PROJECT_SESSIONS_MAX ? mine
			: g->nsessions < SESSIONS_MAX ? NULL
			: mine			      ? mine
						      : oldest;
	if (go) {
		msession *d = *go;
		*go = d->next;
		session_free(d);
		g->nsessions--;
	}
	s->next = g->sessions;
	g->sessions = s;
	g->nsessions++;
	pthread_mutex_unlock(&g->mu);
	memcpy(c->session, s->id, sizeof c->session);
}

aw_err aw_mcp_session_get(aw_mcp *g, const aw_ctx *ctx, const char *id, char version[16],
			  aw_error *err)
{
	aw_err e = aw_fail(err, AW_E_MCP_SESSION, "no such MCP session here; initialize again");
	pthread_mutex_lock(&g->mu);
	int64_t now = aw_clock_mono_ns();
	for (msession *s = g->sessions; s; s = s->next)
		if (!strcmp(s->id, id) && !strcmp(s->project, ctx->project) &&
		    !strcmp(s->principal, ctx->principal) && now - s->used_ns <= SESSION_IDLE_NS) {
			s->used_ns = now;
			memcpy(version, s->version, 16);
			e = AW_OK;
			break;
		}
	pthread_mutex_unlock(&g->mu);
	return e;
}

aw_err aw_mcp_listen(aw_mcp *g, const aw_ctx *ctx, const char *id, aw_mcp_wake wake, void *ud,
		     aw_mcp_call **out, aw_error *err)
{
	aw_mcp_call *c = calloc(1, sizeof *c);
	if (!c)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	c->g = g;
	atomic_init(&c->refs, 2); /* the session's and the caller's */
	c->ctx = *ctx;
	c->wake = wake;
	c->ud = ud;
	c->streaming = 1;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->out = (aw_buf)AW_BUF_INIT(1 << 20); /* a client that reads nothing loses events */
	aw_buf_adds(&c->out, ": awooop session stream\n\n");
	snprintf(c->req_session, sizeof c->req_session, "%s", id);
	pthread_mutex_lock(&g->mu);
	msession *s = session_of(g, c);
	if (s) {
		listener_end(s); /* one stream a session: the newest */
		s->listener = c;
		s->used_ns = aw_clock_mono_ns();
	}
	pthread_mutex_unlock(&g->mu);
	if (!s) {
		atomic_store(&c->refs, 1);
		aw_mcp_release(c);
		return aw_fail(err, AW_E_MCP_SESSION, "no such MCP session here; initialize again");
	}
	*out = c;
	return AW_OK;
}

int aw_mcp_session_count(aw_mcp *g, const char *project)
{
	int n = 0;
	pthread_mutex_lock(&g->mu);
	for (msession *s = g->sessions; s; s = s->next)
		n += !strcmp(s->project, project);
	pthread_mutex_unlock(&g->mu);
	return n;
}

void aw_mcp_session_end(aw_mcp *g, const aw_ctx *ctx, const char *id)
{
	pthread_mutex_lock(&g->mu);
	for (msession **pp = &g->sessions; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->id, id) && !strcmp((*pp)->project, ctx->project)) {
			msession *d = *pp;
			*pp = d->next;
			session_free(d);
			g->nsessions--;
			break;
		}
	pthread_mutex_unlock(&g->mu);
}

/* The methods answered at once; 1 when answered. */
static int answer_now(aw_mcp *g, aw_mcp_call *c)
{
	const aw_mcp_msg *m = &c->msg;
	if (m->kind != AW_MCP_REQUEST) { /* notifications, responses: accepted */
		if (m->method && !strcmp(m->method, "notifications/cancelled"))
			cancel_request(g, c);
		else if (m->kind == AW_MCP_RESPONSE)
			client_answer(g, c);
		finish(c, NULL, 202);
		return 1;
	}
	const char *meth = m->method;
	if (!strcmp(meth, "tools/list") || !strcmp(meth, "tools/call") ||
	    (relay_kind(meth) && !(c->meta.stateless && !strcmp(meth, "logging/setLevel"))))
		return 0;
	json_t *res = NULL;
	catalog *cat = NULL;
	if (!strcmp(meth, "initialize") || !strcmp(meth, "server/discover")) {
		aw_err e; /* what the project relays: no upstream is asked */
		aw_error err = {0};
		cat = catalog_get(g, &c->ctx, &e, &err);
	}
	if (!strcmp(meth, "initialize") && !c->meta.stateless) {
		const char *want = json_string_value(json_object_get(m->params, "protocolVersion"));
		snprintf(c->version, sizeof c->version, "%s",
			 want && aw_mcp_version_supported(want) && strcmp(want, AW_MCP_V_STATELESS)
				 ? want
				 : AW_MCP_V_LEGACY);
		res = json_pack("{s:s,s:o,s:o,s:s}", "protocolVersion", c->version, "capabilities",
				capabilities(cat, 1), "serverInfo", server_info(), "instructions",
				"The tools of this project, through the awooop gateway.");
		session_new(g, c);
	} else if (!strcmp(meth, "server/discover")) {
		res = json_pack("{s:o,s:o,s:{s:o}}", "supportedVersions", aw_mcp_versions_json(1),
				"capabilities", capabilities(cat, !c->meta.stateless), "_meta",
				"io.modelcontextprotocol/serverInfo", server_info());
		decorate(res, &c->meta, 1);
		if (!c->meta.stateless) /* asked in a legacy session: still answered */
			json_object_set_new(res, "resultType", json_string("complete"));
	} else if (!strcmp(meth, "ping") && !c->meta.stateless) {
		res = json_object();
	} else {
		finish(c, aw_rpc_error_json(m->id, AW_RPC_METHOD, "method not found", NULL),
		       c->meta.stateless ? 404 : 200);
		return 1;
	}
	catalog_put(cat);
	finish(c, aw_rpc_result_json(m->id, res), 200);
	return 1;
}

aw_err aw_mcp_start(aw_mcp *g, const aw_ctx *ctx, aw_mcp_msg *msg, const aw_mcp_meta *meta,
		    aw_mcp_wake wake, void *ud, aw_mcp_call **out, aw_error *err)
{
	aw_mcp_call *c = calloc(1, sizeof *c);
	if (!c) {
		aw_mcp_msg_clear(msg);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	c->g = g;
	atomic_init(&c->refs, 1);
	c->ctx = *ctx;
	c->msg = *msg;
	memset(msg, 0, sizeof *msg);
	c->meta = *meta;
	snprintf(c->version, sizeof c->version, "%s", meta->version ? meta->version : "");
	c->meta.version = c->version;
	snprintf(c->run_id, sizeof c->run_id, "%s", meta->run_id ? meta->run_id : "");
	snprintf(c->req_session, sizeof c->req_session, "%s",
		 meta->session && !meta->stateless ? meta->session : "");
	c->meta.run_id = c->run_id;
	c->wake = wake;
	c->ud = ud;
	pthread_mutex_init(&c->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_condattr_destroy(&ca);
	c->out = (aw_buf)AW_BUF_INIT(AW_MCP_MAX_RESPONSE + 65536);
	*out = c;
	if (answer_now(g, c))
		return AW_OK;
	if (atomic_load(&g->stopping)) {
		finish(c,
		       aw_rpc_error_json(c->msg.id, AW_RPC_INTERNAL, "the gateway is shutting down",
					 aw_err_code(AW_E_MCP_UNAVAILABLE)),
		       503);
		return AW_OK;
	}
	atomic_fetch_add(&c->refs, 1); /* the worker's */
	int q = aw_fairq_push(g->fq, c->ctx.project, cheap(c->msg.method), c);
	if (q) { /* the project's own queue is full: it waits for itself */
		aw_mcp_release(c);
		finish(c,
		       aw_rpc_error_json(c->msg.id, AW_RPC_INTERNAL,
					 q == -1 ? "this project has as many requests waiting as "
						   "it may (its tool calls are slower than it "
						   "sends them): retry later"
						 : "out of memory",
					 aw_err_code(q == -1 ? AW_E_MCP_BUSY : AW_E_NOMEM)),
		       q == -1 ? 429 : 503);
	}
	return AW_OK;
}

int aw_mcp_answer(aw_mcp_call *c, aw_mcp_park park, void *pud, json_t **response, int *status,
		  const char **sess)
{
	pthread_mutex_lock(&c->mu);
	int r = c->streaming ? 2 : c->done;
	if (!r) {
		c->parked = 1;
		if (park)
			park(pud);
	} else if (r == 1) {
		*response = c->response;
		c->response = NULL;
		*status = c->status;
	}
	*sess = c->session;
	pthread_mutex_unlock(&c->mu);
	return r;
}

ssize_t aw_mcp_read(aw_mcp_call *c, char *buf, size_t max, aw_mcp_park park, void *pud)
{
	pthread_mutex_lock(&c->mu);
	ssize_t n = (ssize_t)aw_buf_drain(&c->out, &c->out_off, buf, max);
	if (!n && c->eof) {
		n = -1;
	} else if (!n) {
		c->parked = 1;
		park(pud);
	}
	pthread_mutex_unlock(&c->mu);
	return n;
}

void aw_mcp_hangup(aw_mcp_call *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	atomic_store(&c->gone, 1);
	c->parked = 0;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	aw_mcp_release(c);
}

void aw_mcp_release(aw_mcp_call *c)
{
	if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	aw_mcp_msg_clear(&c->msg);
	json_decref(c->response);
	json_decref(c->progress);
	aw_buf_free(&c->out);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

json_t *aw_mcp_exchange(aw_mcp *g, const aw_ctx *ctx, aw_mcp_msg *msg, const aw_mcp_meta *meta,
			int *status)
{
	aw_wake w;
	aw_wake_init(&w);
	aw_mcp_call *c = NULL;
	aw_error err = {0};
	*status = 500;
	json_t *resp = NULL;
	const char *sess = NULL;
	if (aw_mcp_start(g, ctx, msg, meta, aw_wake_signal, &w, &c, &err) == AW_OK) {
		while (!aw_mcp_answer(c, NULL, NULL, &resp, status, &sess))
			aw_wake_wait(&w, -1);
		aw_mcp_release(c);
	}
	aw_wake_destroy(&w);
	return resp;
}

/* ------------------------------------------------------------ pinning */

int aw_mcp_sandbox_probe(char *why, size_t n)
{
	return aw_sbx_probe(why, n);
}

aw_err aw_mcp_pin(aw_mcp *g, const aw_ctx *ctx, const json_t *body, json_t **pinned, aw_error *err)
{
	json_t *b = json_deep_copy(body), *ups = json_object_get(b, "upstreams");
	json_t *tools = json_object_get(b, "tools");
	int priv = aw_egress_private_granted(ctx->project); /* the operator's grant */
	aw_err e = AW_OK;
	const char *k;
	json_t *v;
	/* nothing starts unless the operator allows every stdio upstream */
	json_object_foreach (ups, k, v) {
		int at;
		const char *tr = json_string_value(json_object_get(v, "transport"));
		if (tr && !strcmp(tr, "stdio") && (e = aw_sbx_check(g->sbx, k, v, &at, err))) {
			json_decref(b);
			return e;
		}
	}
	json_object_foreach (ups, k, v) {
		int used = 0;
		for (size_t i = 0; i < json_array_size(tools); i++)
			used |= !strcmp(json_string_value(json_object_get(json_array_get(tools, i),
									  "provider")),
					k);
		if (!used)
			continue;
		upinst *u = upinst_for(g, NULL, ctx->project, k, v, priv, err);
		json_t *defs = NULL;
		if (!u) {
			e = err->err ? err->err : AW_E_NOMEM;
			break;
		}
		e = fetch_defs(g, u, &defs, err);
		upinst_put(u);
		if (e == AW_E_MCP_STDIO || e == AW_E_MCP_SANDBOX)
			break;
		if (e) {
			char msg[sizeof err->msg];
			memcpy(msg, err->msg, sizeof msg);
			e = aw_fail(err, AW_E_MCP_UPSTREAM, "upstream %s: %.200s", k, msg);
			break;
		}
		for (size_t i = 0; i < json_array_size(tools) && !e; i++) {
			json_t *t = json_array_get(tools, i);
			if (strcmp(json_string_value(json_object_get(t, "provider")), k))
				continue;
			const char *name = json_string_value(json_object_get(t, "name"));
			const char *pin = json_string_value(
				json_object_get(json_object_get(defs, name), "pin"));
			char ptr[64];
			snprintf(ptr, sizeof ptr, "/tools/%zu/pin", i);
			const char *given = json_string_value(json_object_get(t, "pin"));
			const char *given_as = json_string_value(
				json_object_get(json_object_get(defs, name), pin_member(given)));
			if (!pin)
				e = aw_fail_at(err, AW_E_MCP_PROTOCOL, ptr,
					       "upstream %s offers no tool %s", k, name);
			else if (given && (!given_as || strcmp(given, given_as)))
				e = aw_fail_at(err, AW_E_MCP_PROTOCOL, ptr,
					       "%s: upstream %s's definition of %s is %s now", ptr,
					       k, name, pin);
			else /* always the current format (an older given pin that
				still holds is replaced by the whole definition's) */
				json_object_set_new(t, "pin", json_string(pin));
		}
		json_decref(defs);
		if (e)
			break;
	}
	if (e) {
		json_decref(b);
		return e;
	}
	*pinned = b;
	return AW_OK;
}

/* ------------------------------------------------------------ life */

aw_err aw_mcp_new(const aw_mcp_opts *o, aw_mcp **out, aw_error *err)
{
	aw_mcp *g = calloc(1, sizeof *g);
	if (!g)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	g->o = *o;
	aw_sbx_opts so = {.spec = o->stdio_allow,
			  .network = o->stdio_network,
			  .uid = o->sandbox_uid > 0 ? o->sandbox_uid : -1,
			  .pids = o->stdio_pids,
			  .cpu_s = o->stdio_cpu_s};
	aw_err pe = aw_sbx_policy_parse(&so, &g->sbx, err);
	if (pe) {
		free(g);
		return pe;
	}
	if (g->o.workers <= 0)
		g->o.workers = 32;
	if (g->o.timeout_ms <= 0)
		g->o.timeout_ms = 30000;
	if (g->o.timeout_max_ms <= 0)
		g->o.timeout_max_ms = 120000;
	if (g->o.timeout_ms > g->o.timeout_max_ms)
		g->o.timeout_ms = g->o.timeout_max_ms;
	if (g->o.defs_ttl_ms <= 0)
		g->o.defs_ttl_ms = 5000;
	snprintf(g->contract_id, sizeof g->contract_id, "%s",
		 o->contract_id ? o->contract_id : "default");
	g->secrets_dir = o->secrets_dir ? strdup(o->secrets_dir) : NULL;
	pthread_mutex_init(&g->mu, NULL);
	pthread_mutex_init(&g->rmu, NULL);
	pthread_cond_init(&g->rcv, NULL);
	pthread_cond_init(&g->rdone, NULL);
	/* a project runs at most a quarter of the workers at once, unless the
	 * platform says otherwise per project */
	long share = g->o.workers >= 4 ? g->o.workers / 4 : 1;
	aw_err e = aw_bounds_parse(o->project_workers, share, 1, g->o.workers,
				   "--mcp-project-workers", &g->per_project, err);
	if (!e && !(g->fq = aw_fairq_new(g->o.workers, &g->per_project,
					 o->max_queued > 0 ? o->max_queued : 1024)))
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	if (!e)
		e = aw_redact_init(err);
	if (!e && aw_policy_on_change(o->policy, on_change, g) != 0)
		e = aw_fail(err, AW_E_INTERNAL, "too many policy listeners");
	if (!e && !(g->workers = calloc((size_t)g->o.workers, sizeof *g->workers)))
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	for (int i = 0; !e && i < g->o.workers; i++) {
		if (pthread_create(&g->workers[i], NULL, worker_main, g) != 0)
			e = aw_fail(err, AW_E_INTERNAL, "cannot start MCP worker threads");
		else
			g->nworkers++;
	}
	if (!e && pthread_create(&g->recorder, NULL, recorder_main, g) != 0)
		e = aw_fail(err, AW_E_INTERNAL, "cannot start the MCP recorder thread");
	else if (!e)
		g->recorder_started = 1;
	if (e) {
		aw_mcp_free(g);
		return e;
	}
	*out = g;
	return AW_OK;
}

void aw_mcp_stop(aw_mcp *g)
{
	if (!g || atomic_exchange(&g->stopping, 1))
		return;
	aw_policy_off(g->o.policy, on_change, g);
	if (g->fq)
		aw_fairq_stop(g->fq);
	for (int i = 0; i < g->nworkers; i++)
		pthread_join(g->workers[i], NULL);
	g->nworkers = 0;
}

void aw_mcp_free(aw_mcp *g)
{
	if (!g)
		return;
	aw_mcp_stop(g);
	free(g->workers);
	aw_fairq_free(g->fq);
	if (g->recorder_started) {
		pthread_mutex_lock(&g->rmu);
		pthread_cond_broadcast(&g->rcv);
		pthread_mutex_unlock(&g->rmu);
		pthread_join(g->recorder, NULL);
	}
	while (g->catalogs) {
		catalog *c = g->catalogs;
		g->catalogs = c->next;
		catalog_put(c);
	}
	while (g->sessions) {
		msession *s = g->sessions;
		g->sessions = s->next;
		session_free(s);
	}
	free(g->secrets_dir);
	aw_sbx_policy_free(g->sbx);
	free(g);
}
