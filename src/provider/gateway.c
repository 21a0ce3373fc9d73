/*
 * gateway.c - the LLM gateway's front half (see llm.h): configuration, the
 * per-call guard and routing, the Ollama topology (D5), the emergency cap,
 * the call's life as its client sees it, and the recorder thread that writes
 * one audit record per call.
 *
 * A call is reference-counted: its client (until aw_llm_release), the engine
 * (until the call is finished) and the recorder (until its record is written).
 * Numbers from contracts are read with json_number_value: a whole number
 * written 1e3 is an integer to the schema and a real to jansson.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "awooop/audit.h"
#include "awooop/clock.h"
#include "awooop/envelope.h"
#include "awooop/wake.h"
#include "awooop/json.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/secret.h"
#include "provider_hooks.h"
#include "provider_internal.h"

/* Audit records per transaction, at most. The recorder takes every record
 * queued while it wrote the last batch: one transaction for many calls under
 * load, no added wait when idle (a gathering window was measured: it only
 * moved the writes into bursts that raised the calls' p99). */
#define RECORD_BATCH 64
#define RECORD_LINGER_MS 10

static const char *const provider_names[] = {"openai",	     "gemini", "anthropic",
					     "azure_openai", "ollama", NULL};

/* ------------------------------------------------------------ configuration */

static int url_ok(const char *u)
{
	return u && (!strncmp(u, "http://", 7) || !strncmp(u, "https://", 8)) && strlen(u) < 256 &&
	       !strpbrk(u, " \t\r\n\"");
}

aw_err aw_llm_config_check(const json_t *config, aw_error *err)
{
	static const char *const top[] = {"providers", NULL};
	static const char *const fields[] = {"url", "api", "api_key", NULL};
	if (!json_is_object(config))
		return aw_fail(err, AW_E_CONFIG, "the LLM configuration must be a JSON object");
	if (aw_json_only(config, top, err))
		return aw_fail(err, AW_E_CONFIG, "%s", err->msg);
	json_t *ps = json_object_get(config, "providers");
	if (ps && !json_is_object(ps))
		return aw_fail_at(err, AW_E_CONFIG, "/providers", "providers must be an object");
	const char *name;
	json_t *p;
	json_object_foreach (ps, name, p) {
		char where[64];
		snprintf(where, sizeof where, "/providers/%.40s", name);
		int known = 0;
		for (int i = 0; provider_names[i]; i++)
			known |= !strcmp(name, provider_names[i]);
		if (!known)
			return aw_fail_at(err, AW_E_CONFIG, where,
					  "providers are openai, gemini, anthropic, azure_openai "
					  "and ollama");
		if (!json_is_object(p) || aw_json_only(p, fields, err))
			return aw_fail_at(err, AW_E_CONFIG, where,
					  "a provider is {\"url\", \"api\"?, \"api_key\"?}");
		if (!url_ok(json_string_value(json_object_get(p, "url"))))
			return aw_fail_at(err, AW_E_CONFIG, where, "url must be http(s)://...");
		const char *api = json_string_value(json_object_get(p, "api"));
		if (json_object_get(p, "api") &&
		    (!api || (strcmp(api, "openai") && strcmp(api, "ollama"))))
			return aw_fail_at(err, AW_E_CONFIG, where, "api must be openai or ollama");
		json_t *key = json_object_get(p, "api_key");
		if (key &&
		    (!json_is_string(key) || aw_secret_ref_check(json_string_value(key), err)))
			return aw_fail_at(err, AW_E_CONFIG, where,
					  "api_key must be a secret reference: env:NAME or "
					  "file:/path (never the key itself)");
	}
	return AW_OK;
}

/* ------------------------------------------------------------ calls */

void aw_llm_call_put(aw_llm_call *c)
{
	if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	for (int i = 0; i < c->nt; i++)
		aw_llm_upstream_put(c->t[i].u);
	json_decref(c->req);
	json_decref(c->feedback);
	aw_schema_free(c->schema);
	free(c->answer);
	aw_buf_free(&c->out);
	aw_buf_free(&c->notes);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static void record_queue(aw_llm *g, aw_llm_call *c);
static aw_err inflight(aw_llm *g, const char *project, int delta, long *held);

void aw_llm_finish(aw_llm_call *c, aw_llm_state st, const char *outcome, aw_err e, const char *fmt,
		   ...)
{
	pthread_mutex_lock(&c->mu);
	if (c->finished) {
		pthread_mutex_unlock(&c->mu);
		return;
	}
	c->finished = 1;
	if (st == AW_LLM_FAILED && c->state == AW_LLM_STREAM)
		st = AW_LLM_STREAM; /* bytes went out: the stream just ends */
	c->state = st;
	c->eof = 1;
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		char msg[sizeof c->error.msg];
		vsnprintf(msg, sizeof msg, fmt, ap);
		va_end(ap);
		aw_fail(&c->error, e, "%s", msg);
	}
	snprintf(c->outcome, sizeof c->outcome, "%s", outcome);
	c->code = e ? aw_err_code(e) : NULL;
	int parked = c->parked;
	c->parked = 0;
	pthread_mutex_unlock(&c->mu);
	/* queued before the client wakes: records are in the order clients saw
	 * their calls end, and a drain (aw_llm_flush) after a call sees it */
	inflight(c->g, c->ctx.project, -1, NULL);
	record_queue(c->g, c);
	if (parked) { /* a parked client cannot release the call: wake it now */
		pthread_mutex_lock(&c->mu);
		if (!c->released)
			c->wake(c->wake_ud);
		pthread_mutex_unlock(&c->mu);
	}
}

/* Appends pre + data + post for the client (one piece or none: past the
 * buffer's ceiling nothing is added) and wakes it. */
static void emit(aw_llm_call *c, const char *pre, const char *data, size_t n, const char *post)
{
	size_t lp = strlen(pre), lq = strlen(post);
	pthread_mutex_lock(&c->mu);
	if (!c->bytes_out)
		c->t_client_first_ns = aw_clock_mono_ns();
	c->bytes_out = 1;
	c->state = AW_LLM_STREAM;
	if (c->out.len + lp + n + lq <= c->out.max) {
		aw_buf_add(&c->out, pre, lp);
		aw_buf_add(&c->out, data, n);
		aw_buf_add(&c->out, post, lq);
	}
	if (c->parked) {
		c->parked = 0;
		c->wake(c->wake_ud);
	}
	pthread_mutex_unlock(&c->mu);
}

void aw_llm_emit(aw_llm_call *c, const char *data, size_t n)
{
	emit(c, "", data, n, "");
}

void aw_llm_emit_event(aw_llm_call *c, const char *data, size_t n)
{
	emit(c, "data: ", data, n, "\n\n");
}

aw_llm_state aw_llm_head(aw_llm_call *c, aw_llm_park park, void *pud, char **body, aw_error *err)
{
	pthread_mutex_lock(&c->mu);
	aw_llm_state st = c->state;
	if (st == AW_LLM_WAIT) {
		c->parked = 1;
		park(pud);
	} else if (st == AW_LLM_ANSWER) {
		*body = c->answer;
		c->answer = NULL;
	} else if (st == AW_LLM_FAILED) {
		*err = c->error;
	}
	pthread_mutex_unlock(&c->mu);
	return st;
}

ssize_t aw_llm_read(aw_llm_call *c, char *buf, size_t max, aw_llm_park park, void *pud)
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

void aw_llm_release(aw_llm_call *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->released = 1;
	c->parked = 0;
	int running = !c->finished;
	pthread_mutex_unlock(&c->mu);
	if (running && c->g->multi)
		curl_multi_wakeup(c->g->multi);
	aw_llm_call_put(c);
}

/* ------------------------------------------------------------ the cap */

static _Atomic int day_shift; /* provider_hooks.h */

void aw_llm_test_shift_days(int days)
{
	atomic_store(&day_shift, days);
}

/* The UTC day the cap counts in: the counter's key changes at midnight.
 * *end_ms: the day's end on the wall clock (the metric's expiry). */
static void utc_date(char out[16], int64_t *end_ms)
{
	int64_t shift = (int64_t)atomic_load(&day_shift) * 86400;
	time_t now = (time_t)(aw_clock_wall_ms() / 1000 + shift);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(out, 16, "%Y-%m-%d", &tm);
	*end_ms = ((int64_t)now / 86400 + 1 - shift / 86400) * 86400 * 1000;
}

/* The project's share of the day's cap (at least 1 when the cap is set). */
static long share_of(aw_llm *g, const char *project, long cap)
{
	long pct = aw_bounds_of(&g->em_share, project);
	long n = cap * pct / 100;
	return cap > 0 && n < 1 ? 1 : n;
}

/* In process: one more of project's emergency calls today, under its share
 * (holds g->mu; the day's table is cleared at midnight with the count). */
static int em_take(aw_llm *g, const char *project, long share)
{
	struct aw_llm_em *x = NULL;
	for (int i = 0; i < g->nem && !x; i++)
		if (!strcmp(g->em[i].project, project))
			x = &g->em[i];
	if (!x) {
		struct aw_llm_em *n = realloc(g->em, (size_t)(g->nem + 1) * sizeof *n);
		if (!n)
			return 0;
		g->em = n;
		x = &g->em[g->nem++];
		snprintf(x->project, sizeof x->project, "%s", project);
		x->count = 0;
	}
	return x->count++ < share;
}

/* One unit of the day's emergency cap for a call of project: within the
 * project's share (--llm-emergency-share, percent of the cap: one tenant's
 * upstream failures never spend every other tenant's fallback) and within
 * the platform's total. 0 when either is spent. */
int aw_llm_cap_take(aw_llm *g, const char *project)
{
	char date[16];
	int64_t day_end = 0;
	utc_date(date, &day_end);
	pthread_mutex_lock(&g->mu);
	long cap = g->emergency_cap, share = share_of(g, project, cap);
	if (!g->o.kv) {
		if (strcmp(date, g->cap_date)) {
			snprintf(g->cap_date, sizeof g->cap_date, "%s", date);
			g->cap_count = 0;
			g->nem = 0;
		}
		int ok = em_take(g, project, share) && g->cap_count < cap;
		g->cap_count += ok;
		if (cap > 0)
			aw_metrics_llm_emergency((double)g->cap_count, (double)cap, day_end);
		pthread_mutex_unlock(&g->mu);
		return ok;
	}
	pthread_mutex_unlock(&g->mu);
	/* INCRBY answers each caller a distinct count: exactly the share (then
	 * the cap) of them are at or under it, whatever the concurrency, in
	 * every process. The project's own count first: a project past its
	 * share never touches the platform's. */
	const char *vals[] = {date};
	long long n = 0;
	aw_error err = {0};
	aw_ctx pctx;
	aw_ctx_system(&pctx, project);
	if (aw_kv_incr(g->o.kv, &pctx, "llm_emergency", vals, 1, 1, &n, &err)) {
		aw_log(AW_LOG_WARN, &pctx, "llm emergency share unreadable: refused", "detail",
		       err.msg, NULL);
		return 0; /* fails closed */
	}
	if (n == 1)
		aw_kv_expire(g->o.kv, &pctx, "llm_emergency", vals, 1, 2 * 86400, &err);
	if (n > share)
		return 0;
	aw_ctx ctx;
	aw_ctx_system(&ctx, AW_PLATFORM_PROJECT);
	if (aw_kv_incr(g->o.kv, &ctx, "gemini_daily_count", vals, 1, 1, &n, &err)) {
		aw_log(AW_LOG_WARN, NULL, "llm emergency cap unreadable: refused", "detail",
		       err.msg, NULL);
		return 0; /* fails closed */
	}
	if (n == 1)
		aw_kv_expire(g->o.kv, &ctx, "gemini_daily_count", vals, 1, 2 * 86400, &err);
	if (cap > 0) /* granted: the count past the cap was refused */
		aw_metrics_llm_emergency((double)(n < cap ? n : cap), (double)cap, day_end);
	return n <= cap;
}

/* ------------------------------------------------------------ topology (D5) */

static void on_platform_change(void *ud, const char *project, const char *family,
			       const char *contract_id, const char *revision_id, const char *source)
{
	(void)project, (void)family, (void)revision_id;
	aw_llm *g = ud;
	if (strcmp(contract_id, AW_TOPOLOGY_CONTRACT))
		return;
	pthread_mutex_lock(&g->mu);
	g->topo_dirty = 1;
	pthread_mutex_unlock(&g->mu);
	aw_log(AW_LOG_INFO, NULL, "llm ollama topology changed: pools reset", "source", source,
	       NULL);
}

/* Caller holds g->mu. Replaces the topology upstreams (and so their pools). */
static void topo_install(aw_llm *g, const aw_policy *pol)
{
	static const char *const roles[] = {"primary", "secondary", "fallback"};
	for (int i = 0; i < 3; i++) {
		aw_llm_upstream_put(g->topo[i]);
		g->topo[i] = NULL;
		json_t *ep = pol ? json_object_get(pol->body, roles[i]) : NULL;
		const char *url = json_string_value(json_object_get(ep, "url"));
		if (!url)
			continue;
		char name[48];
		snprintf(name, sizeof name, "ollama-%s", roles[i]);
		upstream *u = aw_llm_upstream_new(name, API_OLLAMA, url, NULL);
		if (!u)
			continue;
		u->timeout_ms = (int)json_number_value(json_object_get(ep, "timeout_ms"));
		json_t *models = json_object_get(ep, "models"); /* the cache's: copied */
		u->models = json_array_size(models) ? json_deep_copy(models) : NULL;
		g->topo[i] = u;
	}
	json_t *em = pol ? json_object_get(pol->body, "emergency_cloud") : NULL;
	snprintf(g->emergency_provider, sizeof g->emergency_provider, "%s",
		 json_string_value(json_object_get(em, "provider")) ?: "");
	snprintf(g->emergency_model, sizeof g->emergency_model, "%s",
		 json_string_value(json_object_get(em, "model")) ?: "");
	g->emergency_cap = (long)json_number_value(json_object_get(em, "daily_cap"));
	snprintf(g->topo_rev, sizeof g->topo_rev, "%s", pol ? pol->revision_id : "");
	g->topo_dirty = 0;
	aw_metrics_llm_event("pool_reset", "ollama");
}

/* Brings the topology up to the active revision (a cached read). */
static void topo_refresh(aw_llm *g, const aw_ctx *ctx)
{
	aw_ctx pc;
	aw_ctx_with_project(ctx, AW_PLATFORM_PROJECT, &pc);
	aw_policy pol = {0};
	aw_error err = {0};
	aw_err e = aw_policy_effective(g->o.policy, &pc, "platform_resource", AW_TOPOLOGY_CONTRACT,
				       &pol, &err);
	const char *rev = e ? "" : pol.revision_id;
	pthread_mutex_lock(&g->mu);
	if (e == AW_OK || e == AW_E_CONTRACT_NOT_FOUND) {
		if (g->topo_dirty || strcmp(rev, g->topo_rev))
			topo_install(g, e ? NULL : &pol);
	}
	pthread_mutex_unlock(&g->mu);
	aw_policy_release(&pol);
}

/* ------------------------------------------------------------ routing */

static upstream *provider(aw_llm *g, const char *name)
{
	for (int i = 0; i < g->nproviders; i++)
		if (!strcmp(g->providers[i]->name, name))
			return g->providers[i];
	return NULL;
}

static int serves(const upstream *u, const char *model)
{
	if (!u->models)
		return 1;
	size_t i;
	json_t *m;
	json_array_foreach (u->models, i, m)
		if (!strcmp(json_string_value(m), model))
			return 1;
	return 0;
}

/* cand: the signed candidate whose limits the target keeps (the emergency
 * model keeps those of the candidate it stands in for). */
static void add_target(aw_llm_call *c, upstream *u, const char *model, const json_t *cand,
		       int emergency)
{
	if (!u || c->nt >= MAX_TARGETS)
		return;
	atomic_fetch_add(&u->refs, 1);
	target *t = &c->t[c->nt++];
	t->u = u;
	snprintf(t->model, sizeof t->model, "%s", model);
	t->timeout_ms = emergency ? 0 : (int)json_number_value(json_object_get(cand, "timeout_ms"));
	t->emergency = emergency;
	t->max_out = (long long)json_number_value(json_object_get(cand, "max_output_tokens"));
	t->max_in = (long long)json_number_value(json_object_get(cand, "max_input_tokens"));
	json_t *temp = json_object_get(cand, "temperature");
	t->has_temp = json_is_number(temp);
	t->temp = json_number_value(temp);
}

static const json_t *pick_route(const json_t *body, const char *model, const char *task)
{
	const json_t *routes = json_object_get(body, "routes");
	size_t i, j;
	json_t *r, *cand;
	json_array_foreach (routes, i, r)
		if (!strcmp(json_string_value(json_object_get(r, "name")), model))
			return r;
	if (task)
		json_array_foreach (routes, i, r) {
			json_t *m = json_object_get(r, "match");
			const char *t = json_string_value(json_object_get(m, "task"));
			const char *in = json_string_value(json_object_get(m, "intent"));
			if ((t && !strcmp(t, task)) || (in && !strcmp(in, task)))
				return r;
		}
	json_array_foreach (routes, i, r)
		json_array_foreach (json_object_get(r, "candidates"), j, cand)
			if (!strcmp(json_string_value(json_object_get(cand, "model")), model))
				return r;
	const char *def = json_string_value(json_object_get(body, "default_route"));
	if (def)
		json_array_foreach (routes, i, r)
			if (!strcmp(json_string_value(json_object_get(r, "name")), def))
				return r;
	return NULL;
}

/* The route's candidates as targets: "ollama" expands to the topology hosts
 * that serve the model (or the configured ollama provider without a
 * topology), then once the emergency cloud model. Caller holds g->mu. */
static void targets_of(aw_llm *g, aw_llm_call *c, const json_t *route, const json_t *limits)
{
	json_t *mf = json_object_get(limits, "max_fallbacks");
	size_t max = json_is_number(mf) ? (size_t)json_number_value(mf) + 1 : 11;
	int emergency_added = 0;
	size_t i;
	json_t *cand;
	json_array_foreach (json_object_get(route, "candidates"), i, cand) {
		if (i >= max)
			break;
		const char *p = json_string_value(json_object_get(cand, "provider"));
		const char *model = json_string_value(json_object_get(cand, "model"));
		if (strcmp(p, "ollama") != 0) {
			add_target(c, provider(g, p), model, cand, 0);
			continue;
		}
		/* the platform's Ollama hosts keep the platform's timeouts: a
		 * route cannot time its calls out there to trip the shared
		 * hosts' breakers or reach the emergency model */
		int hosts = 0, first = c->nt;
		for (int k = 0; k < 3; k++)
			if (g->topo[k] && serves(g->topo[k], model)) {
				add_target(c, g->topo[k], model, cand, 0);
				hosts++;
			}
		if (!g->topo_rev[0])
			add_target(c, provider(g, "ollama"), model, cand, 0);
		for (int k = first; k < c->nt; k++)
			c->t[k].timeout_ms = 0;
		if (hosts && !emergency_added && g->emergency_model[0]) {
			add_target(c, provider(g, g->emergency_provider), g->emergency_model, cand,
				   1);
			emergency_added = 1;
		}
	}
}

static aw_err drop_too_long(aw_llm_call *c, aw_error *err);

static aw_err route_call(aw_llm *g, aw_llm_call *c, const char *task, aw_error *err)
{
	aw_policy pol = {0};
	aw_err e = aw_policy_effective(g->o.policy, &c->ctx, "policy_routing", g->contract_id, &pol,
				       err);
	if (e == AW_E_CONTRACT_NOT_FOUND)
		return aw_fail(err, AW_E_LLM_POLICY,
			       "project %s has no active policy_routing revision '%s' (never "
			       "activated, or revoked): no model call is allowed",
			       c->ctx.project, g->contract_id);
	if (e)
		return e;
	const json_t *route = pick_route(pol.body, c->rq.model, task);
	if (!route) {
		aw_policy_release(&pol);
		return aw_fail_at(err, AW_E_LLM_ROUTE, "/model",
				  "no route of policy revision %s serves model '%.64s'",
				  pol.revision_id, c->rq.model);
	}
	snprintf(c->route, sizeof c->route, "%s",
		 json_string_value(json_object_get(route, "name")));
	snprintf(c->revision_id, sizeof c->revision_id, "%s", pol.revision_id);
	snprintf(c->body_hash, sizeof c->body_hash, "%s", pol.body_hash);
	json_t *limits = json_object_get(pol.body, "limits");
	json_t *sr = json_object_get(limits, "schema_retries");
	c->schema_retries = json_is_number(sr) ? (int)json_number_value(sr) : g->o.schema_retries;
	topo_refresh(g, &c->ctx);
	pthread_mutex_lock(&g->mu);
	targets_of(g, c, route, limits);
	pthread_mutex_unlock(&g->mu);
	aw_policy_release(&pol);
	if (!c->nt)
		return aw_fail(err, AW_E_LLM_UPSTREAMS,
			       "route %s has no configured upstream (providers of its candidates "
			       "are not in the gateway configuration)",
			       c->route);
	return drop_too_long(c, err);
}

/* ------------------------------------------------------------ the prompt's bound */

/* Images at the provider's documented token price. OpenAI bills an image
 * by tiles (base + per 512 px tile after fitting 2048 x 2048 and scaling the
 * short side to 768; "low" detail: the base alone) or, for some models, by
 * 32 px patches (at most 1536) times a multiplier. Without dimensions (a URL
 * the gateway does not fetch, a format it does not read) an image is priced
 * at the most one image can cost: 8 tiles, or 1536 patches. A model not
 * listed here cannot be priced: the request is refused (E-BUDGET-005). */
typedef struct {
	const char *prefix;
	int patches; /* 0: tiles */
	double base, tile, mult;
} image_price;

static const image_price image_prices[] = {
	/* longer prefixes first */
	{"gpt-4o-mini", 0, 2833, 5667, 0},
	{"gpt-4.1-mini", 1, 0, 0, 1.62},
	{"gpt-4.1-nano", 1, 0, 0, 2.46},
	{"o4-mini", 1, 0, 0, 1.72},
	{"gpt-4o", 0, 85, 170, 0},
	{"gpt-4.1", 0, 85, 170, 0},
	{"gpt-4-turbo", 0, 85, 170, 0},
	{"gpt-4.5", 0, 85, 170, 0},
	{"o1", 0, 75, 150, 0},
	{"o3", 0, 75, 150, 0},
	{NULL, 0, 0, 0, 0}};

static const image_price *image_price_of(const char *model)
{
	for (int i = 0; image_prices[i].prefix; i++)
		if (!strncmp(model, image_prices[i].prefix, strlen(image_prices[i].prefix)))
			return &image_prices[i];
	return NULL;
}

/* Decodes the first bytes of base64 text (stops at the first non-base64
 * character); returns how many bytes it wrote. */
static size_t b64_head(const char *s, unsigned char *out, size_t max)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = 0;
	unsigned v = 0;
	int bits = 0;
	for (; *s && n < max; s++) {
		const char *p = strchr(tab, *s);
		if (!p || !*s)
			break;
		v = (v << 6) | (unsigned)(p - tab);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (unsigned char)(v >> bits);
		}
	}
	return n;
}

/* The dimensions of a base64 data URL's PNG or GIF (0: unknown). */
static void image_dims(const char *url, long *w, long *h)
{
	*w = *h = 0;
	const char *b = strncmp(url, "data:", 5) ? NULL : strstr(url, ";base64,");
	if (!b)
		return;
	unsigned char d[32];
	size_t n = b64_head(b + 8, d, sizeof d);
	if (n >= 24 && !memcmp(d, "\x89PNG\r\n\x1a\n", 8) && !memcmp(d + 12, "IHDR", 4)) {
		*w = (long)d[16] << 24 | (long)d[17] << 16 | (long)d[18] << 8 | d[19];
		*h = (long)d[20] << 24 | (long)d[21] << 16 | (long)d[22] << 8 | d[23];
	} else if (n >= 10 && !memcmp(d, "GIF8", 4)) {
		*w = d[6] | (long)d[7] << 8;
		*h = d[8] | (long)d[9] << 8;
	}
	if (*w <= 0 || *h <= 0 || *w > 100000 || *h > 100000)
		*w = *h = 0;
}

static long long image_cost(const image_price *p, long w, long h, int low)
{
	if (p->patches) {
		double patches = 1536;
		if (w && h) {
			double pw = ceil((double)w / 32), ph = ceil((double)h / 32);
			patches = pw * ph > 1536 ? 1536 : pw * ph;
		}
		return (long long)ceil(patches * p->mult);
	}
	if (low)
		return (long long)p->base;
	double tiles = 8; /* 2048 x 768: the most tiles an image can take */
	if (w && h) {
		double fw = (double)w, fh = (double)h;
		if (fw > 2048 || fh > 2048) { /* fit in 2048 x 2048 */
			double k = 2048 / (fw > fh ? fw : fh);
			fw *= k, fh *= k;
		}
		double shortest = fw < fh ? fw : fh;
		if (shortest > 768) /* the short side to 768 */
			fw *= 768 / shortest, fh *= 768 / shortest;
		tiles = ceil(fw / 512) * ceil(fh / 512);
	}
	return (long long)(p->base + p->tile * tiles);
}

/* An image part's tokens at the dearest of the call's models; -1 when one
 * of them cannot be priced. */
static long long image_tokens(const aw_llm_call *c, const json_t *part)
{
	json_t *iu = json_object_get(part, "image_url");
	const char *url = json_string_value(json_object_get(iu, "url"));
	const char *detail = json_string_value(json_object_get(iu, "detail"));
	long w, h;
	image_dims(url ? url : "", &w, &h);
	long long most = 0;
	for (int i = 0; i < c->nt; i++) {
		const image_price *p = image_price_of(c->t[i].model);
		if (!p)
			return -1;
		long long v = image_cost(p, w, h, detail && !strcmp(detail, "low"));
		most = v > most ? v : most;
	}
	return most;
}

static long long json_bytes(const json_t *v)
{
	if (!v || json_is_null(v))
		return 0;
	if (json_is_string(v))
		return (long long)json_string_length(v);
	char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	long long n = d ? (long long)strlen(d) : 0;
	free(d);
	return n;
}

/* The request's prompt, as the upstream bills it, in two parts: *bytes, the
 * text - every member of every message (text parts, names, tool calls and
 * their arguments, legacy function calls), 8 per message for the chat
 * template, and the request's tools, functions, tool_choice, function_call
 * and response_format (its schema) as JSON - an upper bound of its tokens
 * for the byte-level BPE tokenizers models use (a token is at least one
 * byte); *images, the images' tokens at the provider's price. AW_E_BUDGET_
 * UNPRICED when an image goes to a model the budget cannot price. */
static aw_err prompt_bound(const aw_llm_call *c, const json_t *req, long long *bytes,
			   long long *images, aw_error *err)
{
	static const char *const billed[] = {"tools",	      "functions",	 "tool_choice",
					     "function_call", "response_format", NULL};
	long long n = 0, img = 0;
	size_t i, k;
	json_t *m, *part, *v;
	const char *key;
	json_array_foreach (json_object_get(req, "messages"), i, m) {
		n += 8;
		json_object_foreach (m, key, v) {
			if (strcmp(key, "content") || !json_is_array(v)) {
				n += json_bytes(v);
				continue;
			}
			json_array_foreach (v, k, part) {
				const char *type = json_string_value(json_object_get(part, "type"));
				if (type && !strcmp(type, "image_url")) {
					long long t = image_tokens(c, part);
					if (t < 0)
						return aw_fail_at(
							err, AW_E_BUDGET_UNPRICED, "/messages",
							"an image goes to a model whose image price "
							"the budget does not know (route %s)",
							c->route);
					img += t;
				} else {
					n += json_bytes(
						json_object_get(part, type ? type : "text"));
				}
			}
		}
	}
	for (int b = 0; billed[b]; b++)
		n += json_bytes(json_object_get(req, billed[b]));
	*bytes = n;
	*images = img;
	return AW_OK;
}

/* The prompt's tokens as max_input_tokens is held against: a token per 4
 * bytes of its text (the usual ratio of English text to BPE tokens), and
 * its images at their price. */
static long long prompt_estimate(long long bytes, long long images)
{
	return (bytes + 3) / 4 + images;
}

/* Candidates whose max_input_tokens the prompt exceeds are never called;
 * when none is left the call is refused before any upstream (E-LLM-008). */
static aw_err drop_too_long(aw_llm_call *c, aw_error *err)
{
	long long bytes = 0, images = 0, smallest = 0;
	aw_err e = prompt_bound(c, c->req, &bytes, &images, err);
	if (e)
		return e;
	long long est = prompt_estimate(bytes, images);
	int kept = 0;
	for (int i = 0; i < c->nt; i++) {
		target *t = &c->t[i];
		if (t->max_in && est > t->max_in) {
			if (!smallest || t->max_in < smallest)
				smallest = t->max_in;
			aw_llm_upstream_put(t->u);
			continue;
		}
		c->t[kept++] = *t;
	}
	c->nt = kept;
	if (!kept)
		return aw_fail_at(
			err, AW_E_LLM_PROMPT, "/messages",
			"the prompt (about %lld tokens) is over what route %s's candidates "
			"take (max_input_tokens %lld)",
			est, c->route, smallest);
	return AW_OK;
}

/* A schema retry resends the messages, the previous answer (at most the
 * attempt's max_tokens: counted with the answers) and the validation
 * errors (the gateway's text, at most this many bytes), 8 per message. */
#define RETRY_GROWTH ((long long)sizeof SCHEMA_FEEDBACK_PREFIX - 1 + SCHEMA_PROBLEMS_MAX + 16)
/* The least answer a schema call keeps before it gives up retries for it
 * (when the budget cannot hold every retry at the answer asked). */
#define MIN_ANSWER 256

/* What attempts 0..r of a call reserve beyond the first prompt, each
 * answering a tokens in n choices: the later attempts' prompts (the first
 * prompt and the growth of the retries before them) and every answer. */
static long long beyond_prompt(long long prompt, int r, int n, long long a)
{
	long long grown = (long long)r * (r + 1) / 2; /* retries resent so far, summed */
	return r * prompt + grown * RETRY_GROWTH + a * ((long long)n * (1 + r) + grown);
}

/* Lines 1 and 2: refuse, or reserve what the upstream may bill - the prompt
 * (text, tools, schemas, images), n answers of max_tokens, and for
 * structured output every retry with its growth - clamping max_tokens (and
 * the retries) to what remains. */
static aw_err admit(aw_llm *g, aw_llm_call *c, const aw_llm_meta *meta, aw_error *err)
{
	json_t *mt = json_object_get(c->req, "max_completion_tokens");
	const char *mt_name = "max_completion_tokens";
	if (!json_is_number(mt)) {
		mt = json_object_get(c->req, "max_tokens");
		mt_name = "max_tokens";
	}
	long long asked = json_is_number(mt) ? (long long)json_number_value(mt) : -1;
	/* the most any target may answer, when every candidate bounds it */
	long long bound = 0;
	for (int i = 0; i < c->nt && bound >= 0; i++)
		bound = c->t[i].max_out ? (c->t[i].max_out > bound ? c->t[i].max_out : bound) : -1;
	if (bound > 0 && (asked < 0 || asked > bound))
		asked = bound;
	long long a = asked >= 0 ? asked : AW_BUDGET_DEFAULT_MAX_OUT;
	long long bytes = 0, images = 0;
	aw_err e = prompt_bound(c, c->req, &bytes, &images, err);
	if (e)
		return e;
	long long prompt = bytes + images;
	int n = c->rq.n > 0 ? c->rq.n : 1;
	int retries = c->schema ? c->schema_retries : 0;
	char call_id[64];
	snprintf(call_id, sizeof call_id, "%s", c->st.id + strlen("chatcmpl-"));
	const char *models[MAX_TARGETS];
	aw_budget_price prices[MAX_TARGETS];
	for (int i = 0; i < c->nt; i++)
		models[i] = c->t[i].model;
	aw_budget_ask ask = {
		.call_id = call_id,
		.run_id = meta && meta->run_id ? meta->run_id : "",
		.holder = g->holder,
		.prompt = prompt,
		/* "output" to the budget: everything past the first prompt */
		.max_out = beyond_prompt(prompt, retries, n, a),
		.lease_ms = g->o.lease_ms,
		.models = models,
		.nmodels = c->nt,
		.prices = prices,
	};
	long long want = ask.max_out;
	e = aw_budget_admit(g->o.store, g->o.policy, &c->ctx, &ask, &c->hold, err);
	for (int i = 0; !e && i < c->nt; i++)
		c->t[i].price = prices[i];
	if (e == AW_E_BUDGET_EXHAUSTED && c->hold.killed)
		aw_llm_kill(g, c->ctx.project, 0);
	if (e || !c->hold.active)
		return e;
	long long room = ask.max_out; /* what the reservation holds past the prompt */
	if (room < want) {	      /* clamped: the answer, then the retries, give way */
		int r = retries;
		long long fit = 0;
		for (; r >= 0; r--) {
			long long fixed = beyond_prompt(prompt, r, n, 0);
			long long per = (long long)n * (1 + r) + (long long)r * (r + 1) / 2;
			fit = room > fixed ? (room - fixed) / per : 0;
			if (fit >= (a < MIN_ANSWER ? a : MIN_ANSWER) || (r == 0 && fit >= 1))
				break;
		}
		if (r < 0 || fit < 1) /* not one answer token in n choices: released */
			return aw_fail(err, AW_E_BUDGET_EXHAUSTED,
				       "the budget left cannot hold %d answer(s) of even one token "
				       "besides the prompt (%lld tokens reserved)",
				       n, c->hold.reserved.tokens);
		if (r < retries) {
			aw_metrics_budget(c->ctx.project, "retries_clamped", 0);
			c->schema_retries = r;
		}
		a = fit < a ? fit : a;
	}
	if (a != asked) /* clamped to what remains, or none was asked */
		json_object_set_new(c->req, mt_name, json_integer(a));
	return AW_OK;
}

/* ------------------------------------------------------------ projects watched */

/* Caller holds g->mu. The index of project's entry, or -(where it goes) - 1. */
static int proj_find(const aw_llm *g, const char *project)
{
	int lo = 0, hi = g->nprojs;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2, cmp = strcmp(g->projs[mid].project, project);
		if (!cmp)
			return mid;
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -lo - 1;
}

/* Caller holds g->mu. project's entry, added when absent (NULL: out of
 * memory). */
static struct aw_llm_proj *proj_get(aw_llm *g, const char *project)
{
	int i = proj_find(g, project);
	if (i >= 0)
		return &g->projs[i];
	i = -i - 1;
	if (g->nprojs == g->projs_cap) {
		int cap = g->projs_cap ? g->projs_cap * 2 : 16;
		struct aw_llm_proj *p = realloc(g->projs, (size_t)cap * sizeof *p);
		if (!p)
			return NULL;
		g->projs = p;
		g->projs_cap = cap;
	}
	memmove(&g->projs[i + 1], &g->projs[i], (size_t)(g->nprojs - i) * sizeof *g->projs);
	g->nprojs++;
	memset(&g->projs[i], 0, sizeof g->projs[i]);
	snprintf(g->projs[i].project, sizeof g->projs[i].project, "%s", project);
	return &g->projs[i];
}

/* A call of project starts (+1) or ends (-1). A start is refused when the
 * project has its bound of calls in flight here (AW_E_LLM_BUSY, *held says
 * how many: one tenant's calls never hold every shared connection) or
 * cannot be watched (AW_E_NOMEM). The entry stays while the project has
 * calls, and until the watcher finds nothing of it to reap (proj_drop). */
static aw_err inflight(aw_llm *g, const char *project, int delta, long *held)
{
	long bound = delta > 0 ? aw_bounds_of(&g->per_project, project) : 0;
	pthread_mutex_lock(&g->mu);
	struct aw_llm_proj *p = delta > 0 ? proj_get(g, project) : NULL;
	if (delta <= 0) {
		int i = proj_find(g, project);
		p = i >= 0 ? &g->projs[i] : NULL;
	}
	aw_err e = p || delta <= 0 ? AW_OK : AW_E_NOMEM;
	if (p && bound && delta > 0 && p->calls >= bound)
		e = AW_E_LLM_BUSY;
	else if (p && !(p->calls += delta))
		p->idle_ns = aw_clock_mono_ns();
	if (p)
		aw_metrics_llm_inflight(project, p->calls);
	if (held)
		*held = p ? p->calls : 0;
	pthread_mutex_unlock(&g->mu);
	return e;
}

/* The watcher found no reservation of project open: its entry goes once
 * it has been without calls here for watch_idle_ms (unless a call started
 * meanwhile). */
static void proj_drop(aw_llm *g, const char *project)
{
	pthread_mutex_lock(&g->mu);
	int i = proj_find(g, project);
	if (i >= 0 && !g->projs[i].calls &&
	    aw_clock_mono_ns() - g->projs[i].idle_ns >= (int64_t)g->o.watch_idle_ms * 1000000LL) {
		memmove(&g->projs[i], &g->projs[i + 1],
			(size_t)(g->nprojs - i - 1) * sizeof *g->projs);
		g->nprojs--;
	}
	pthread_mutex_unlock(&g->mu);
}

int aw_llm_killed(aw_llm *g, const char *project, int64_t t0_ns)
{
	pthread_mutex_lock(&g->mu);
	int i = proj_find(g, project);
	int k = i >= 0 && g->projs[i].kill_ns && t0_ns < g->projs[i].kill_ns;
	pthread_mutex_unlock(&g->mu);
	return k;
}

int aw_llm_test_watched(aw_llm *g)
{
	pthread_mutex_lock(&g->mu);
	int n = g->nprojs;
	pthread_mutex_unlock(&g->mu);
	return n;
}

void aw_llm_kill(aw_llm *g, const char *project, int64_t seen_ns)
{
	int local = !seen_ns; /* suspended here: announced to the other processes */
	if (local)
		seen_ns = aw_clock_mono_ns();
	pthread_mutex_lock(&g->mu);
	int i = proj_find(g, project); /* no entry: no call of it in flight here */
	if (i >= 0 && seen_ns > g->projs[i].kill_ns)
		g->projs[i].kill_ns = seen_ns;
	pthread_mutex_unlock(&g->mu);
	atomic_fetch_add(&g->kill_gen, 1);
	if (g->multi)
		curl_multi_wakeup(g->multi);
	aw_log(AW_LOG_WARN, NULL, "llm calls of a suspended project cut", "project", project, NULL);
	aw_error err = {0};
	if (local && aw_policy_announce_kill(g->o.policy, project, &err)) /* other processes */
		aw_log(AW_LOG_WARN, NULL, "suspension not announced on the bus (others poll)",
		       "project", project, "detail", err.msg, NULL);
}

/* The bus thread, under the cache's lock: the recorder watches at once. */
static void on_kill(void *ud, const char *project)
{
	aw_llm *g = ud;
	(void)project;
	atomic_store(&g->check_now, 1);
	pthread_mutex_lock(&g->rmu);
	pthread_cond_signal(&g->rcv);
	pthread_mutex_unlock(&g->rmu);
}

aw_err aw_llm_start(aw_llm *g, const aw_ctx *ctx, const json_t *req, const aw_llm_meta *meta,
		    aw_llm_wake wake, void *ud, aw_llm_call **out, aw_error *err)
{
	*out = NULL;
	if (atomic_load(&g->stopping))
		return aw_fail(err, AW_E_LLM_UNAVAILABLE, "the gateway is shutting down");
	aw_llm_call *c = calloc(1, sizeof *c);
	if (!c)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	atomic_init(&c->refs, 1);
	pthread_mutex_init(&c->mu, NULL);
	c->g = g;
	c->ctx = *ctx;
	c->wake = wake;
	c->wake_ud = ud;
	c->t0_ns = aw_clock_mono_ns();
	c->out = (aw_buf)AW_BUF_INIT(64u << 20);
	c->notes = (aw_buf)AW_BUF_INIT(1500);
	c->step_no = meta ? meta->step_no : 0;
	char cid[AW_UUID_STR_LEN + 1];
	aw_uuid7_str(cid); /* the call's id: a request may make several (run steps) */
	snprintf(c->st.id, sizeof c->st.id, "chatcmpl-%s", cid);
	snprintf(c->run_id, sizeof c->run_id, "%s", meta && meta->run_id ? meta->run_id : "");
	aw_err e = AW_OK;
	/* the call's own copy: jansson's reference counts may not be shared
	 * between threads (the caller drops its reference while the engine
	 * works; TSan reports the shared count) */
	if (!(c->req = json_deep_copy(req)))
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	if (!e)
		e = aw_llm_req_check(c->req, &c->rq, err);
	if (!e && c->rq.schema) {
		json_t *s = json_deep_copy(c->rq.schema);
		e = aw_schema_compile(s, &c->schema, err);
		json_decref(s);
		if (e)
			snprintf(err->where, sizeof err->where,
				 "/response_format/json_schema/schema");
	}
	if (!e)
		e = route_call(g, c, meta ? meta->task : NULL, err);
	/* watched from before its reservation (a refusal for a spent budget
	 * keeps the project listed: a dead holder's reservations are reaped
	 * here) */
	long held = 0;
	int counted = !e && !(e = inflight(g, c->ctx.project, 1, &held));
	if (e == AW_E_NOMEM)
		aw_fail(err, e, "out of memory (the projects in flight)");
	else if (e == AW_E_LLM_BUSY)
		aw_fail(err, e,
			"this project has %ld model calls in flight, its bound here (shared "
			"upstream connections are kept for other projects): retry when one ends",
			held);
	if (!e)
		e = admit(g, c, meta, err);
	if (e) { /* refused before any upstream: recorded all the same */
		if (counted)
			inflight(g, c->ctx.project, -1, NULL);
		snprintf(c->outcome, sizeof c->outcome, "refused");
		c->code = aw_err_code(e);
		aw_metrics_llm_event("refused", c->code);
		record_queue(g, c);
		aw_llm_call_put(c);
		return e;
	}
	c->up_stream = c->rq.stream && !c->schema;
	c->st.created = aw_clock_wall_ms() / 1000;
	c->st.model = c->rq.model;
	aw_llm_submit(g, c);
	*out = c;
	return AW_OK;
}

/* ------------------------------------------------------------ recorder */

static void record_queue(aw_llm *g, aw_llm_call *c)
{
	atomic_fetch_add(&c->refs, 1);
	double secs = (double)(aw_clock_mono_ns() - c->t0_ns) / 1e9;
	/* labels: the policy's route name (a slug), never the client's model */
	aw_metrics_llm_call(c->ctx.project, c->route[0] ? c->route : "-",
			    c->upstream_name[0] ? c->upstream_name : "-", c->outcome, secs,
			    c->st.tokens_in, c->st.tokens_out);
	pthread_mutex_lock(&g->rmu);
	c->rnext = NULL;
	if (g->rq_tail)
		g->rq_tail->rnext = c;
	else
		g->rq_head = c;
	g->rq_tail = c;
	if (++g->rq_n == 1) /* else the recorder is awake already */
		pthread_cond_signal(&g->rcv);
	pthread_mutex_unlock(&g->rmu);
}

/* The envelope of a finished call: what its audit record says. */
static json_t *envelope(const aw_llm_call *c)
{
	aw_envelope e = {.ctx = &c->ctx,
			 .revision_id = c->revision_id,
			 .body_hash = c->body_hash,
			 .upstream = c->upstream_name,
			 .outcome = c->outcome,
			 .code = c->code,
			 .run_id = c->run_id,
			 .step = c->step_no,
			 .latency_ms = (double)(aw_clock_mono_ns() - c->t0_ns) / 1e6,
			 .metered = 1,
			 .tokens_in = c->st.tokens_in,
			 .tokens_out = c->st.tokens_out};
	json_t *p = aw_envelope_json(&e);
	if (p) /* the LLM door's own */
		json_object_update_new(p,
				       json_pack("{s:s,s:s,s:s,s:i,s:i,s:b,s:b}", "route", c->route,
						 "model", c->rq.model ? c->rq.model : "",
						 "upstream_model", c->model_used, "attempts",
						 c->attempts, "failovers", c->failovers, "stream",
						 c->rq.stream, "emergency", c->emergency_used));
	if (p && c->t_client_first_ns)
		json_object_set_new(p, "ttft_ms",
				    json_real((double)(c->t_client_first_ns - c->t0_ns) / 1e6));
	if (p && c->hold.active) { /* what the settlement in the same transaction charges */
		aw_budget_amount ch =
			aw_budget_charge(&c->hold, c->spent_unknown ? NULL : &c->spent);
		json_object_set_new(p, "budget",
				    json_pack("{s:s,s:I,s:I,s:f,s:s}", "period", c->hold.period_key,
					      "reserved", (json_int_t)c->hold.reserved.tokens,
					      "charged", (json_int_t)ch.tokens, "cost_usd",
					      (double)ch.cost / 1e6, "usage",
					      c->spent_unknown ? "unknown (the reservation charged)"
					      : c->spent_counted ? "counted from the stream"
								 : "upstream"));
		if (ch.tokens > c->hold.reserved.tokens) /* billed past the reservation */
			json_object_set_new(json_object_get(p, "budget"), "overshoot",
					    json_integer(ch.tokens - c->hold.reserved.tokens));
	}
	if (p && c->schema)
		json_object_set_new(p, "schema_attempts",
				    json_integer(c->schema_fails + (c->outcome[0] == 'o')));
	return p;
}

/* Writes one project's records in one transaction. */
static void record_batch(aw_llm *g, aw_llm_call **calls, int n)
{
	aw_audit_item items[RECORD_BATCH];
	json_t *payloads[RECORD_BATCH];
	for (int i = 0; i < n; i++) {
		payloads[i] = envelope(calls[i]);
		items[i] = (aw_audit_item){.action = "llm.call",
					   .target = calls[i]->route,
					   .trace_id = calls[i]->ctx.trace.trace_id,
					   .payload = payloads[i]};
	}
	aw_ctx ctx; /* background work: not the project's connections */
	aw_ctx_uncharged(&calls[0]->ctx, &ctx);
	aw_txn *t = NULL;
	aw_error err = {0};
	aw_err e = aw_store_begin(g->o.store, &ctx, AW_TXN_WRITE, &t, &err);
	for (int i = 0; i < n && !e; i++) /* line 2: settle what was used */
		e = aw_budget_settle(t, &calls[i]->hold,
				     calls[i]->spent_unknown ? NULL : &calls[i]->spent,
				     calls[i]->model_charged, &err);
	if (!e)
		e = aw_audit_record_many(t, &ctx, items, n, &err);
	if (!e)
		e = aw_store_commit(t, &err);
	else if (t)
		aw_store_rollback(t);
	if (e)
		aw_log(AW_LOG_ERROR, &ctx,
		       "llm audit records and settlements lost (the reservations are reaped)",
		       "detail", err.msg, NULL);
	for (int i = 0; i < n; i++)
		json_decref(payloads[i]);
}

/* Every WATCH_MS (WATCH_BUS_MS while another process's suspension arrives
 * over a connected Redis bus, and at once when one does): the projects with
 * calls in flight that another process (or an operator) suspended get their
 * calls cut here too (line 3 within 1 s);
 * every lease/4, this process's reservations are renewed (a live call is
 * never reaped) and those of the projects it served whose holder died are
 * reaped; a project without calls here for watch_idle_ms and with no
 * reservation left open is no longer watched. */
#define WATCH_MS 500
#define WATCH_BUS_MS 5000
static void watch(aw_llm *g, int reap)
{
	char(*projects)[AW_PROJECT_MAX + 1] = NULL;
	int *busy = NULL, n = 0, listed;
	pthread_mutex_lock(&g->mu);
	listed = g->nprojs;
	if (listed) {
		projects = malloc((size_t)g->nprojs * sizeof *projects);
		busy = malloc((size_t)g->nprojs * sizeof *busy);
	}
	for (int i = 0; projects && busy && i < g->nprojs; i++)
		if (g->projs[i].calls || reap) {
			busy[n] = g->projs[i].calls > 0;
			snprintf(projects[n++], sizeof projects[0], "%s", g->projs[i].project);
		}
	pthread_mutex_unlock(&g->mu);
	if (listed && (!projects || !busy)) /* the next tick tries again */
		aw_log(AW_LOG_ERROR, NULL, "llm watcher: out of memory", NULL);
	for (int i = 0; i < n; i++) {
		aw_ctx ctx;
		aw_ctx_system(&ctx, projects[i]);
		aw_error err = {0};
		int suspended = 0, reaped = 0;
		long long open = -1;
		/* taken before the read: a call started after it was admitted
		 * after a resume the read may not have seen */
		int64_t seen = aw_clock_mono_ns();
		if (aw_budget_suspended(g->o.store, &ctx, &suspended, &err) == AW_OK && suspended)
			aw_llm_kill(g, projects[i], seen);
		if (reap && busy[i]) /* the heartbeat of this process's reservations */
			aw_budget_renew(g->o.store, &ctx, g->holder, g->o.lease_ms, &err);
		if (reap && aw_budget_reap(g->o.store, &ctx, &reaped, &err) == AW_OK && reaped) {
			char count[16];
			snprintf(count, sizeof count, "%d", reaped);
			aw_metrics_llm_event("reaped", projects[i]);
			aw_log(AW_LOG_WARN, &ctx, "budget reservations of a dead holder reaped",
			       "count", count, NULL);
		}
		if (reap && !busy[i] && aw_budget_open(g->o.store, &ctx, &open, &err) == AW_OK &&
		    !open)
			proj_drop(g, projects[i]);
	}
	free(projects);
	free(busy);
}

static void *recorder_main(void *arg)
{
	aw_llm *g = arg;
	pthread_setname_np(pthread_self(), "aw-llm-audit");
	/* background work: calls in flight come first (Linux: per-thread nice;
	 * measured: p50 and p99 of calls at concurrency 1 both lower) */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	int64_t next_watch = aw_clock_mono_ns(), next_reap = next_watch;
	pthread_mutex_lock(&g->rmu);
	for (;;) {
		while (!g->rq_head && !atomic_load(&g->stopping) && !atomic_load(&g->check_now) &&
		       aw_clock_mono_ns() < next_watch) {
			struct timespec ts = aw_clock_after(CLOCK_REALTIME, WATCH_MS);
			pthread_cond_timedwait(&g->rcv, &g->rmu, &ts);
		}
		if (!g->rq_head && atomic_load(&g->stopping))
			break;
		/* linger: the records of the calls ending in the next moment join
		 * this transaction (fewer, larger writes; on SQLite a write holds
		 * the one write lock the next call's admission needs) */
		if (g->rq_n < RECORD_BATCH && !atomic_load(&g->stopping) &&
		    !atomic_load(&g->flushing)) {
			struct timespec ts = aw_clock_after(CLOCK_REALTIME, RECORD_LINGER_MS);
			pthread_cond_timedwait(&g->rcv, &g->rmu, &ts);
		}
		aw_llm_call *list = g->rq_head;
		g->rq_head = g->rq_tail = NULL;
		g->rq_n = 0;
		g->recording = 1;
		pthread_mutex_unlock(&g->rmu);
		while (list) { /* batches of one project, in order */
			aw_llm_call *batch[RECORD_BATCH];
			int n = 0;
			aw_llm_call **pp = &list;
			const char *project = list->ctx.project;
			while (*pp && n < RECORD_BATCH) {
				if (!strcmp((*pp)->ctx.project, project)) {
					batch[n++] = *pp;
					*pp = (*pp)->rnext;
				} else {
					pp = &(*pp)->rnext;
				}
			}
			record_batch(g, batch, n);
			for (int i = 0; i < n; i++)
				aw_llm_call_put(batch[i]);
		}
		int64_t now = aw_clock_mono_ns();
		if (atomic_exchange(&g->check_now, 0) || now >= next_watch) {
			int reap = now >= next_reap;
			watch(g, reap);
			int ms = aw_policy_kill_remote(g->o.policy) ? g->o.watch_bus_ms : WATCH_MS;
			next_watch = now + ms * 1000000LL;
			if (reap)
				next_reap = now + (int64_t)g->o.lease_ms / 4 * 1000000LL;
		}
		aw_metrics_loop_tick("llm_recorder");
		pthread_mutex_lock(&g->rmu);
		g->recording = 0;
		pthread_cond_broadcast(&g->rdone);
	}
	pthread_mutex_unlock(&g->rmu);
	return NULL;
}

/* ------------------------------------------------------------ life */

aw_err aw_llm_new(const aw_llm_opts *o, aw_llm **out, aw_error *err)
{
	*out = NULL;
	if (!o->store || !o->policy)
		return aw_fail(err, AW_E_CONFIG,
			       "the LLM gateway needs a store and a policy cache");
	if (o->config && aw_llm_config_check(o->config, err))
		return err->err;
	aw_llm *g = calloc(1, sizeof *g);
	if (!g)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	g->o = *o;
	g->config = o->config ? json_deep_copy(o->config) : json_object();
	g->o.config = g->config;
	snprintf(g->contract_id, sizeof g->contract_id, "%s",
		 o->contract_id ? o->contract_id : "default");
	g->o.contract_id = g->contract_id;
	char host[64] = "host";
	gethostname(host, sizeof host);
	host[sizeof host - 1] = '\0';
	snprintf(g->holder, sizeof g->holder, "%s-%d", host, (int)getpid());
#define DEF(f, v)        \
	if (g->o.f <= 0) \
		g->o.f = v;
	DEF(connect_timeout_ms, 3000)
	DEF(first_byte_ms, 60000)
	DEF(idle_ms, 30000)
	DEF(breaker_failures, 5)
	DEF(breaker_cooldown_ms, 10000)
	DEF(lease_ms, 660000)
	DEF(watch_idle_ms, 10 * g->o.lease_ms)
	DEF(watch_bus_ms, WATCH_BUS_MS)
#undef DEF
	if (o->schema_retries < 0 || o->schema_retries > 10)
		g->o.schema_retries = 3;
	aw_err be = aw_bounds_parse(o->project_inflight, 64, 1, 1000000, "--llm-project-inflight",
				    &g->per_project, err);
	if (!be)
		be = aw_bounds_parse(o->emergency_share, 50, 1, 100, "--llm-emergency-share",
				     &g->em_share, err);
	if (be) {
		json_decref(g->config);
		free(g);
		return be;
	}
	pthread_mutex_init(&g->mu, NULL);
	pthread_mutex_init(&g->rmu, NULL);
	pthread_cond_init(&g->rcv, NULL);
	pthread_cond_init(&g->rdone, NULL);
	const char *name;
	json_t *p;
	json_object_foreach (json_object_get(g->config, "providers"), name, p) {
		const char *api = json_string_value(json_object_get(p, "api"));
		int kind = api ? !strcmp(api, "ollama") : !strcmp(name, "ollama");
		upstream *u = aw_llm_upstream_new(name, kind ? API_OLLAMA : API_OPENAI,
						  json_string_value(json_object_get(p, "url")),
						  json_string_value(json_object_get(p, "api_key")));
		if (u && g->nproviders < 8)
			g->providers[g->nproviders++] = u;
	}
	aw_err e = aw_llm_engine_start(g, err);
	if (!e && pthread_create(&g->recorder, NULL, recorder_main, g) != 0)
		e = aw_fail(err, AW_E_INTERNAL, "cannot start the LLM recorder thread");
	else if (!e)
		g->recorder_started = 1;
	if (!e && aw_policy_on_platform_change(o->policy, on_platform_change, g) != 0)
		e = aw_fail(err, AW_E_INTERNAL, "too many platform listeners");
	if (!e && aw_policy_on_kill(o->policy, on_kill, g) != 0)
		e = aw_fail(err, AW_E_INTERNAL, "too many kill listeners");
	if (e) {
		aw_llm_stop(g);
		aw_llm_free(g);
		return e;
	}
	*out = g;
	return AW_OK;
}

void aw_llm_flush(aw_llm *g)
{
	for (int busy = 1; busy;) { /* calls still in flight end first */
		busy = 0;
		pthread_mutex_lock(&g->mu);
		for (int i = 0; i < g->nprojs; i++)
			busy += g->projs[i].calls;
		pthread_mutex_unlock(&g->mu);
		if (busy)
			usleep(5000);
	}
	pthread_mutex_lock(&g->rmu);
	atomic_fetch_add(&g->flushing, 1);
	pthread_cond_signal(&g->rcv);
	while ((g->rq_head || g->recording) && g->recorder_started)
		pthread_cond_wait(&g->rdone, &g->rmu);
	atomic_fetch_sub(&g->flushing, 1);
	pthread_mutex_unlock(&g->rmu);
}

void aw_llm_stop(aw_llm *g)
{
	if (!g)
		return;
	aw_llm_engine_stop(g); /* sets stopping; ends every call */
	if (g->recorder_started) {
		pthread_mutex_lock(&g->rmu);
		pthread_cond_broadcast(&g->rcv);
		pthread_mutex_unlock(&g->rmu);
		pthread_join(g->recorder, NULL); /* drains the queue first */
		g->recorder_started = 0;
	}
}

void aw_llm_free(aw_llm *g)
{
	if (!g)
		return;
	if (g->o.policy) {
		aw_policy_off(g->o.policy, on_platform_change, g);
		aw_policy_off_kill(g->o.policy, on_kill, g);
	}
	for (int i = 0; i < g->nproviders; i++)
		aw_llm_upstream_put(g->providers[i]);
	for (int i = 0; i < 3; i++)
		aw_llm_upstream_put(g->topo[i]);
	json_decref(g->config);
	free(g->projs);
	free(g->em);
	pthread_mutex_destroy(&g->mu);
	pthread_mutex_destroy(&g->rmu);
	pthread_cond_destroy(&g->rcv);
	pthread_cond_destroy(&g->rdone);
	free(g);
}

/* ------------------------------------------------------------ sync + models */

static void w_park(void *ud)
{
	(void)ud; /* the caller waits below */
}

aw_err aw_llm_wait(aw_llm *g, const aw_ctx *ctx, const json_t *req, const aw_llm_meta *meta,
		   const atomic_bool *stop, int64_t deadline_ns, char **body, aw_error *err)
{
	*body = NULL;
	if (json_is_true(json_object_get(req, "stream")))
		return aw_fail_at(err, AW_E_REQ_INVALID, "/stream",
				  "a waited-for call does not stream");
	aw_wake w;
	aw_wake_init(&w);
	aw_llm_call *c = NULL;
	aw_err e = aw_llm_start(g, ctx, req, meta, aw_wake_signal, &w, &c, err);
	while (!e) {
		aw_llm_state st = aw_llm_head(c, w_park, NULL, body, err);
		if (st == AW_LLM_ANSWER)
			break;
		if (st == AW_LLM_FAILED) {
			e = err->err;
			break;
		}
		while (!aw_wake_wait(&w, 100) && !(stop && atomic_load(stop)) &&
		       (!deadline_ns || aw_clock_mono_ns() < deadline_ns))
			; /* woken, stopped, or past the deadline */
		if (stop && atomic_load(stop))
			e = aw_fail(err, AW_E_RUN_CANCELLED, "stopped while the model call ran");
		else if (deadline_ns && aw_clock_mono_ns() >= deadline_ns)
			e = aw_fail(err, AW_E_RUN_TIMEOUT, "the model call outlived its deadline");
	}
	aw_llm_release(c); /* cuts the transfer when the call was abandoned */
	aw_wake_destroy(&w);
	if (e) {
		free(*body);
		*body = NULL;
	}
	return e;
}

aw_err aw_llm_complete(aw_llm *g, const aw_ctx *ctx, const json_t *req, const aw_llm_meta *meta,
		       json_t **resp, aw_error *err)
{
	char *body = NULL;
	aw_err e = aw_llm_wait(g, ctx, req, meta, NULL, 0, &body, err);
	*resp = e ? NULL : json_loads(body, 0, NULL);
	if (!e && !*resp)
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	free(body);
	return e;
}

aw_err aw_llm_models(aw_llm *g, const aw_ctx *ctx, json_t **out, aw_error *err)
{
	aw_policy pol = {0};
	aw_err e =
		aw_policy_effective(g->o.policy, ctx, "policy_routing", g->contract_id, &pol, err);
	if (e == AW_E_CONTRACT_NOT_FOUND)
		return aw_fail(err, AW_E_LLM_POLICY,
			       "project %s has no active policy_routing revision '%s'",
			       ctx->project, g->contract_id);
	if (e)
		return e;
	json_t *data = json_array();
	json_t *seen = json_object();
	size_t i, j;
	json_t *r, *cand;
	json_array_foreach (json_object_get(pol.body, "routes"), i, r) {
		const char *ids[11];
		int n = 0;
		ids[n++] = json_string_value(json_object_get(r, "name"));
		json_array_foreach (json_object_get(r, "candidates"), j, cand)
			if (n < 11)
				ids[n++] = json_string_value(json_object_get(cand, "model"));
		for (int k = 0; k < n; k++) {
			if (json_object_get(seen, ids[k]))
				continue;
			json_object_set_new(seen, ids[k], json_true());
			json_array_append_new(data, json_pack("{s:s,s:s,s:i,s:s}", "id", ids[k],
							      "object", "model", "created", 0,
							      "owned_by", ctx->project));
		}
	}
	json_decref(seen);
	aw_policy_release(&pol);
	*out = json_pack("{s:s,s:o}", "object", "list", "data", data);
	return *out ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
}
