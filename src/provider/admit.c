/*
 * admit.c - lines 1 and 2 of the budget for a call: refuse it, or reserve
 * what the upstream may bill (the prompt, n answers of max_tokens, every
 * schema retry with its growth), clamping max_tokens and the retries to
 * what the budget has left.
 */
#include <stdio.h>
#include <string.h>

#include "awooop/metrics.h"
#include "awooop/str.h"
#include "provider_internal.h"

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
aw_err llm_admit(aw_llm *g, aw_llm_call *c, const aw_llm_meta *meta, aw_error *err)
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
	if (c->rq.embeddings) /* billed for its input only */
		a = asked = 0;
	long long bytes = 0, images = 0;
	aw_err e = llm_prompt_bound(c, c->req, &bytes, &images, err);
	if (e)
		return e;
	long long prompt = bytes + images;
	int n = c->rq.n > 0 ? c->rq.n : 1;
	int retries = c->schema ? c->schema_retries : 0;
	const char *call_id = c->st.id + strlen("chatcmpl-"); /* our "chatcmpl-<uuid>" */
	const char *models[MAX_TARGETS];
	aw_budget_price prices[MAX_TARGETS];
	for (int i = 0; i < c->nt; i++)
		models[i] = c->t[i].model;
	aw_budget_ask ask = {
		.call_id = call_id,
		.run_id = meta && meta->run_id ? meta->run_id : "",
		.holder = aw_calls_holder(g->calls),
		.prompt = prompt,
		/* "output" to the budget: everything past the first prompt */
		.max_out = beyond_prompt(prompt, retries, n, a),
		.lease_ms = g->o.lease_ms,
		.models = models,
		.nmodels = c->nt,
		.prices = prices,
	};
	aw_budget_key key = {0};
	if (c->keyed && aw_key_limits_any(&c->key)) {
		key = (aw_budget_key){.key_id = c->ctx.key_id,
				      .rpm = c->key.rpm,
				      .tpm = c->key.tpm,
				      .budget = {c->key.budget_tokens, c->key.budget_cost},
				      .period = c->key.budget_period};
		ask.key = &key;
	}
	long long want = ask.max_out;
	e = aw_budget_admit(g->o.store, g->o.policy, &c->ctx, &ask, &c->hold, err);
	for (int i = 0; !e && i < c->nt; i++)
		c->t[i].price = prices[i];
	if (e == AW_E_BUDGET_EXHAUSTED && c->hold.killed)
		aw_calls_kill(g->calls, c->ctx.project);
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
	if (a != asked && !c->rq.embeddings) /* clamped to what remains, or none was asked */
		json_object_set_new(c->req, mt_name, json_integer(a));
	return AW_OK;
}
