/*
 * recorder.c - the gateway's audit thread: one mcp.call record per tools/call
 * and one mcp.relay record per relayed method, queued by the worker that
 * answered and written in batches of one project per transaction (lingering
 * a moment so the records of calls ending together share one). It also frees
 * the catalogs a revoke dropped (that waits for stdio children to stop).
 */
#include "mcp_gateway.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "awooop/audit.h"
#include "awooop/clock.h"
#include "awooop/log.h"
#include "awooop/metrics.h"

#define RECORD_BATCH 64
#define RECORD_LINGER_MS 5

/* The envelope of a record of call: who made it, the revision that governed
 * it (c; NULL: none applied), its run step and latency (ms); how it ended
 * (upstream, outcome, code, gate) is the caller's to add. */
aw_envelope mcp_envelope(const aw_mcp_call *call, const catalog *c, double ms)
{
	return (aw_envelope){.ctx = &call->ctx,
			     .revision_id = c ? c->revision_id : NULL,
			     .body_hash = c ? c->body_hash : NULL,
			     .run_id = call->run_id,
			     .step = call->meta.step_no,
			     .latency_ms = ms};
}

void mcp_record_queue(aw_mcp *g, const aw_ctx *ctx, const char *action, const char *target,
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
	aw_ctx ctx; /* background work: not the project's connections */
	aw_ctx_uncharged(&rs[0]->ctx, &ctx);
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

void *mcp_recorder_main(void *arg)
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
			mcp_catalog_put(c);
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
			struct timespec ts = aw_clock_after(CLOCK_MONOTONIC, RECORD_LINGER_MS);
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
