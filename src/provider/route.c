/*
 * route.c - the targets a call may try: the route of the project's active
 * policy_routing revision that serves the model (by name, by task or
 * intent, by a candidate's model, or the default route), its candidates as
 * targets (provider "ollama" expands to the topology's hosts, then the
 * emergency model) with their signed limits, and the candidates whose
 * max_input_tokens the prompt exceeds left out. Also the models a
 * project's routes serve (aw_llm_models).
 */
#include <stdio.h>
#include <string.h>

#include "awooop/log.h"
#include "awooop/str.h"
#include "provider_internal.h"

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
	target *t = &c->t[c->nt];
	/* the schema counts a model's characters, not its bytes: one that does
	 * not fit is no target, never a cut (other) model */
	if (AW_STR_COPY(t->model, model) < 0) {
		aw_log(AW_LOG_WARN, &c->ctx, "a route's model name is too long: target skipped",
		       NULL);
		return;
	}
	atomic_fetch_add(&u->refs, 1);
	c->nt++;
	t->u = u;
	t->timeout_ms = emergency ? 0 : (int)json_number_value(json_object_get(cand, "timeout_ms"));
	t->emergency = emergency;
	t->max_out = (long long)json_number_value(json_object_get(cand, "max_output_tokens"));
	t->max_in = (long long)json_number_value(json_object_get(cand, "max_input_tokens"));
	json_t *temp = json_object_get(cand, "temperature");
	t->has_temp = json_is_number(temp);
	t->temp = json_number_value(temp);
}

/* The route serving model: by its name, by task (match.task or
 * match.intent), by one of its candidates' model (*by_model set), or the
 * policy's default route; NULL: none. */
static const json_t *pick_route(const json_t *body, const char *model, const char *task,
				int *by_model)
{
	*by_model = 0;
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
			if (!strcmp(json_string_value(json_object_get(cand, "model")), model)) {
				*by_model = 1;
				return r;
			}
	const char *def = json_string_value(json_object_get(body, "default_route"));
	if (def)
		json_array_foreach (routes, i, r)
			if (!strcmp(json_string_value(json_object_get(r, "name")), def))
				return r;
	return NULL;
}

/* The route's candidates as targets: "ollama" expands to the topology hosts
 * that serve the model (or the configured ollama provider without a
 * topology), then once the emergency cloud model. only: a request that named
 * a candidate's model gets that model, from any candidate that serves it
 * (the others, and the emergency model, only when the route allows
 * model_failover). Caller holds g->mu. */
static void targets_of(aw_llm *g, aw_llm_call *c, const json_t *route, const json_t *limits,
		       const char *only)
{
	json_t *mf = json_object_get(limits, "max_fallbacks");
	size_t max = json_is_number(mf) ? (size_t)json_number_value(mf) + 1 : 11;
	int emergency_added = 0;
	size_t i, taken = 0;
	json_t *cand;
	json_array_foreach (json_object_get(route, "candidates"), i, cand) {
		const char *p = json_string_value(json_object_get(cand, "provider"));
		const char *model = json_string_value(json_object_get(cand, "model"));
		if (only && strcmp(model, only) != 0)
			continue;
		if (taken++ >= max)
			break;
		if (strcmp(p, "ollama") != 0) {
			add_target(c, llm_upstream_named(g, c->ctx.project, p), model, cand, 0);
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
			add_target(c, llm_upstream_named(g, NULL, "ollama"), model, cand, 0);
		for (int k = first; k < c->nt; k++)
			c->t[k].timeout_ms = 0;
		if (hosts && !emergency_added && g->emergency_model[0] && !only) {
			add_target(c, llm_upstream_named(g, NULL, g->emergency_provider),
				   g->emergency_model, cand, 1);
			emergency_added = 1;
		}
	}
}

static aw_err drop_too_long(aw_llm_call *c, aw_error *err);

aw_err llm_route(aw_llm *g, aw_llm_call *c, const char *task, aw_error *err)
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
	int by_model = 0;
	const json_t *route = pick_route(pol.body, c->rq.model, task, &by_model);
	if (!route) {
		aw_policy_release(&pol);
		return aw_fail_at(err, AW_E_LLM_ROUTE, "/model",
				  "no route of policy revision %s serves model '%.64s'",
				  pol.revision_id, c->rq.model);
	}
	if (AW_STR_COPY(c->route, json_string_value(json_object_get(route, "name"))) < 0) {
		aw_policy_release(&pol);
		return aw_fail(err, AW_E_LLM_ROUTE, "the route's name is too long");
	}
	AW_COPY_ARRAY(c->revision_id, pol.revision_id);
	AW_COPY_ARRAY(c->body_hash, pol.body_hash);
	json_t *limits = json_object_get(pol.body, "limits");
	json_t *sr = json_object_get(limits, "schema_retries");
	c->schema_retries = json_is_number(sr) ? (int)json_number_value(sr) : g->o.schema_retries;
	llm_topo_refresh(g, &c->ctx);
	llm_upstreams_refresh(g, &c->ctx, pol.body, pol.revision_id);
	pthread_mutex_lock(&g->mu);
	int model_failover = json_is_true(json_object_get(route, "model_failover"));
	targets_of(g, c, route, limits, by_model && !model_failover ? c->rq.model : NULL);
	pthread_mutex_unlock(&g->mu);
	aw_policy_release(&pol);
	if (!c->nt)
		return aw_fail(err, AW_E_LLM_UPSTREAMS,
			       "route %s has no configured upstream (no upstream of the project's "
			       "own, of the platform's llm_upstreams or of the gateway's "
			       "configuration has its candidates' provider names)",
			       c->route);
	return drop_too_long(c, err);
}

/* Candidates whose max_input_tokens the prompt exceeds are never called;
 * when none is left the call is refused before any upstream (E-LLM-008). */
static aw_err drop_too_long(aw_llm_call *c, aw_error *err)
{
	long long bytes = 0, images = 0, smallest = 0;
	aw_err e = llm_prompt_bound(c, c->req, &bytes, &images, err);
	if (e)
		return e;
	long long est = llm_prompt_estimate(bytes, images);
	int kept = 0;
	for (int i = 0; i < c->nt; i++) {
		target *t = &c->t[i];
		if (t->max_in && est > t->max_in) {
			if (!smallest || t->max_in < smallest)
				smallest = t->max_in;
			llm_upstream_put(t->u);
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
