/*
 * mcp_recorder.c - what the door's recorder (call.h) writes: one mcp.call record
 * per tools/call and one mcp.relay record per relayed method, queued by the
 * worker that answered and written in batches of one project per
 * transaction. Its chore frees the catalogs a revoke dropped (that waits for
 * stdio children to stop).
 */
#include "mcp_gateway.h"

#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/audit.h"
#include "awooop/log.h"
#include "awooop/str.h"

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
	record *r = aw_calloc(1, sizeof *r);
	if (!r) {
		json_decref(payload);
		return;
	}
	r->ctx = *ctx;
	r->rec.project = r->ctx.project;
	r->action = action;
	if (AW_STR_COPY(r->tool, target) < 0) /* a name is at most AW_MCP_NAME_MAX */
		AW_COPY_ARRAY(r->tool, "-");  /* as when there is no tool: never a cut one */
	r->payload = payload;
	aw_recorder_put(g->rec, &r->rec);
}

/* The recorder's write hook: one project's records in one transaction. */
void mcp_record_write(void *ud, aw_call_rec **recs, int n)
{
	aw_mcp *g = ud;
	record **rs = (record **)recs; /* rec is a record's first member */
	if (n <= 0)
		return;
	aw_audit_item items[AW_RECORD_BATCH];
	for (int i = 0; i < n; i++)
		items[i] = (aw_audit_item){.action = rs[i]->action,
					   .target = rs[i]->tool,
					   .trace_id = rs[i]->ctx.trace.trace_id,
					   .payload = rs[i]->payload,
					   .actor = rs[i]->ctx.principal};
	aw_recorder_commit(g->o.store, &rs[0]->ctx, items, n, NULL, NULL, "mcp audit records lost");
	for (int i = 0; i < n; i++) {
		json_decref(rs[i]->payload);
		free(rs[i]);
	}
}

/* The recorder's chore: the catalogs a revoke dropped are freed here (that
 * waits for their stdio children to stop). */
void mcp_record_chores(void *ud)
{
	aw_mcp *g = ud;
	pthread_mutex_lock(&g->dmu);
	catalog *list = g->dropped;
	g->dropped = NULL;
	pthread_mutex_unlock(&g->dmu);
	while (list) {
		catalog *c = list;
		list = c->next;
		mcp_catalog_put(c);
	}
}

void aw_mcp_flush(aw_mcp *g)
{
	aw_recorder_flush(g->rec);
}
