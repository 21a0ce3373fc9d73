/*
 * llm_recorder.c - the LLM gateway's recorder thread: every ended call's
 * audit record and budget settlement, written in one transaction per
 * project for the calls that ended while the last batch was written (and
 * in a short linger). Idle, it wakes every TICK_MS to say it is alive (the
 * watching of the calls' projects is the call registry's, call.h).
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "awooop/audit.h"
#include "awooop/clock.h"
#include "awooop/envelope.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "provider_internal.h"

/* Audit records per transaction, at most. The recorder takes every record
 * queued while it wrote the last batch: one transaction for many calls under
 * load, no added wait when idle (a gathering window was measured: it only
 * moved the writes into bursts that raised the calls' p99). */
#define RECORD_BATCH 64
#define RECORD_LINGER_MS 10
#define TICK_MS 1000

void llm_record_queue(aw_llm *g, aw_llm_call *c)
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

void *llm_recorder_main(void *arg)
{
	aw_llm *g = arg;
	pthread_setname_np(pthread_self(), "aw-llm-audit");
	/* background work: calls in flight come first (Linux: per-thread nice;
	 * measured: p50 and p99 of calls at concurrency 1 both lower) */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	pthread_mutex_lock(&g->rmu);
	for (;;) {
		if (!g->rq_head && !atomic_load(&g->stopping)) { /* idle: still ticks */
			struct timespec ts = aw_clock_after(CLOCK_MONOTONIC, TICK_MS);
			pthread_cond_timedwait(&g->rcv, &g->rmu, &ts);
		}
		if (!g->rq_head && atomic_load(&g->stopping))
			break;
		/* linger: the records of the calls ending in the next moment join
		 * this transaction (fewer, larger writes; on SQLite a write holds
		 * the one write lock the next call's admission needs) */
		if (g->rq_n < RECORD_BATCH && !atomic_load(&g->stopping) &&
		    !atomic_load(&g->flushing)) {
			struct timespec ts = aw_clock_after(CLOCK_MONOTONIC, RECORD_LINGER_MS);
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
				llm_call_put(batch[i]);
		}
		aw_metrics_loop_tick("llm_recorder");
		pthread_mutex_lock(&g->rmu);
		g->recording = 0;
		pthread_cond_broadcast(&g->rdone);
	}
	pthread_mutex_unlock(&g->rmu);
	return NULL;
}
