/*
 * llm_recorder.c - what the LLM door's recorder (call.h) writes: every ended
 * call's audit record and budget settlement, in one transaction per project
 * for the calls that ended while the last batch was written.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "awooop/audit.h"
#include "awooop/clock.h"
#include "awooop/envelope.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "provider_internal.h"

void llm_record_queue(aw_llm *g, aw_llm_call *c)
{
	aw_call_hold(&c->base);
	double secs = (double)(aw_clock_mono_ns() - c->t0_ns) / 1e9;
	/* labels: the policy's route name (a slug), never the client's model */
	aw_metrics_llm_call(c->ctx.project, c->route[0] ? c->route : "-",
			    c->upstream_name[0] ? c->upstream_name : "-", c->outcome, secs,
			    c->st.tokens_in, c->st.tokens_out);
	if (c->keyed && c->key.team[0])
		aw_metrics_llm_team(c->ctx.project, c->key.team,
				    c->st.tokens_in + c->st.tokens_out);
	llm_span(c);
	c->rec.project = c->ctx.project;
	aw_recorder_put(g->rec, &c->rec);
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
	if (p && c->ctx.key_id[0]) { /* the calling key, and a virtual key's metadata */
		json_t *k = json_pack("{s:s}", "id", c->ctx.key_id);
		if (k && c->keyed && c->key.team[0])
			json_object_set_new(k, "team", json_string(c->key.team));
		if (k && c->keyed && c->key.user[0])
			json_object_set_new(k, "user", json_string(c->key.user));
		json_object_set_new(p, "key", k);
	}
	if (p)
		json_object_set_new(p, "api", json_string(c->api));
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

typedef struct {
	aw_llm_call **calls;
	int n;
} settling;

/* Line 2, in the records' transaction: settle what each call used. */
static aw_err settle(aw_txn *t, void *ud, aw_error *err)
{
	settling *s = ud;
	aw_err e = AW_OK;
	for (int i = 0; i < s->n && !e; i++)
		e = aw_budget_settle(t, &s->calls[i]->hold,
				     s->calls[i]->spent_unknown ? NULL : &s->calls[i]->spent,
				     s->calls[i]->model_charged, err);
	return e;
}

/* One project's records and settlements in one transaction. */
static void record_batch(aw_llm *g, aw_llm_call **calls, int n)
{
	if (n <= 0)
		return;
	aw_audit_item items[AW_RECORD_BATCH];
	json_t *payloads[AW_RECORD_BATCH];
	for (int i = 0; i < n; i++) {
		payloads[i] = envelope(calls[i]);
		items[i] = (aw_audit_item){.action = "llm.call",
					   .target = calls[i]->route,
					   .trace_id = calls[i]->ctx.trace.trace_id,
					   .payload = payloads[i],
					   .actor = calls[i]->ctx.principal};
	}
	settling st = {calls, n};
	aw_recorder_commit(g->o.store, &calls[0]->ctx, items, n, settle, &st,
			   "llm audit records and settlements lost (the reservations are reaped)");
	for (int i = 0; i < n; i++)
		json_decref(payloads[i]);
}

void llm_record_write(void *ud, aw_call_rec **recs, int n)
{
	aw_llm *g = ud;
	aw_llm_call *calls[AW_RECORD_BATCH] = {0};
	for (int i = 0; i < n; i++)
		calls[i] = (aw_llm_call *)((char *)recs[i] - offsetof(aw_llm_call, rec));
	record_batch(g, calls, n);
	for (int i = 0; i < n; i++)
		aw_call_put(&calls[i]->base);
}
