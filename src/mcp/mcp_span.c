/*
 * mcp_span.c - a tool call's span (otel.h), described with its audit record
 * (mcp_audit_call): the GenAI conventions' execute_tool span under its
 * caller's (the MCP request's, or the run step's), naming the contract's
 * tool (a name the client sent that matched none is not repeated), the gate
 * that refused it and how it ended. Never its arguments or its result.
 */
#include <string.h>

#include "awooop/otel.h"
#include "mcp_gateway.h"

void mcp_span(const aw_mcp_call *call, const call_note *n, int64_t t0)
{
	if (!aw_otel_on())
		return;
	aw_trace t;
	aw_trace_child(&call->ctx.trace, &t);
	aw_span *s =
		aw_span_begin("execute_tool", AW_SPAN_INTERNAL, &t, call->ctx.trace.span_id, 0, t0);
	if (!s)
		return;
	aw_span_name(s, "execute_tool", n->t ? n->t->full : NULL);
	aw_span_project(s, call->ctx.project);
	aw_span_str(s, "gen_ai.operation.name", "execute_tool");
	if (n->t) {
		aw_span_str(s, "gen_ai.tool.name", n->t->full);
		aw_span_str(s, "awooop.upstream", n->t->u->provider);
	}
	aw_span_str(s, "mcp.method.name", "tools/call");
	aw_span_str(s, "awooop.outcome", n->outcome ? n->outcome : "failed");
	if (n->gate)
		aw_span_int(s, "awooop.gate", n->gate);
	if (call->run_id[0]) {
		aw_span_str(s, "awooop.run.id", call->run_id);
		aw_span_int(s, "awooop.run.step", call->meta.step_no);
	}
	if (!n->outcome || strcmp(n->outcome, "ok") != 0)
		aw_span_error(s,
			      n->gate || n->code ? aw_err_code(n->code)
			      : n->outcome	 ? n->outcome
						 : "_OTHER",
			      n->outcome);
	aw_span_end(s);
}
