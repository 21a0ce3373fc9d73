/*
 * tool_step.c - the run runtime's `tool` step kind: one tools/call through
 * the MCP gateway, in process (the five gates, redaction, the cut, the audit
 * record carrying the run id and step number).
 *
 *   tool {"tool": "<federated name>", "arguments"?: {...}}
 *
 * A tool that requires approval is refused at Gate 5 (E-MCP-GATE-008): the
 * step then parks the run with the project's approval policy (approval.h);
 * the decision that approves it re-queues the run and the step runs again
 * with the approval, which lets Gate 5 pass for that call. The result is the
 * tool's result; a tool error or a refusal fails the step with its code.
 * Side-effecting: shadow mode records the call it would make.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/approval.h"
#include "awooop/json.h"
#include "awooop/mcp.h"
#include "awooop/mcp_wire.h"
#include "awooop/run.h"
#include "awooop/executor.h"

static aw_mcp *the_gateway;
static aw_approvals *the_approvals;

static aw_err step_validate(const json_t *args, aw_error *err)
{
	static const char *const allowed[] = {"tool", "arguments", NULL};
	aw_err e = aw_json_only(args, allowed, err);
	json_t *t = json_object_get(args, "tool"), *a = json_object_get(args, "arguments");
	if (!e && (!json_is_string(t) || json_string_length(t) == 0 || json_string_length(t) > 128))
		e = aw_fail_at(err, AW_E_REQ_INVALID, "/tool", "tool must name a tool");
	if (!e && a && !json_is_object(a))
		e = aw_fail_at(err, AW_E_REQ_INVALID, "/arguments", "arguments must be an object");
	return e;
}

static json_t *step_intent(const json_t *args)
{
	return json_pack("{s:O, s:O*}", "tool", json_object_get(args, "tool"), "arguments",
			 json_object_get(args, "arguments"));
}

static aw_err step_run(const aw_step_call *c, json_t **result, aw_error *err)
{
	if (!the_gateway)
		return aw_fail(err, AW_E_MCP_UNAVAILABLE, "this worker runs no MCP gateway");
	const char *tool = json_string_value(json_object_get(c->args, "tool"));
	json_t *req = json_pack("{s:s, s:i, s:s, s:{s:s, s:O*}}", "jsonrpc", "2.0", "id", 1,
				"method", "tools/call", "params", "name", tool, "arguments",
				json_object_get(c->args, "arguments"));
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	aw_mcp_msg msg;
	aw_rpc_error re;
	if (!text || aw_mcp_parse(text, strlen(text), &msg, &re) != 0) {
		free(text);
		return aw_fail(err, AW_E_RUN_STEP, "the tool call could not be built");
	}
	free(text);
	aw_ctx ctx;
	aw_ctx_system(&ctx, c->project);
	snprintf(ctx.principal, sizeof ctx.principal, "run-%.36s", c->run_id);
	aw_trace in; /* the step's trace: its span is the call's parent */
	if (c->traceparent && aw_trace_parse(c->traceparent, strlen(c->traceparent), &in) == 0)
		ctx.trace = in;
	aw_mcp_meta meta = {.version = AW_MCP_V_LEGACY,
			    .run_id = c->run_id,
			    .step_no = c->step_no,
			    .approved = c->approved};
	int status = 0;
	aw_error why = {0};
	json_t *resp = aw_mcp_exchange(the_gateway, &ctx, &msg, &meta, c->stop, c->deadline_ns,
				       &status, &why);
	aw_mcp_msg_clear(&msg);
	if (!resp) { /* cancelled, out of time, or refused before any worker */
		*err = why;
		return why.err ? why.err
			       : aw_fail(err, AW_E_RUN_STEP, "the MCP gateway gave no answer");
	}
	json_t *res = json_object_get(resp, "result"), *er = json_object_get(resp, "error");
	const char *code = json_string_value(json_object_get(json_object_get(er, "data"), "code"));
	aw_err e = AW_OK;
	if (er && code && !strcmp(code, aw_err_code(AW_E_MCP_APPROVAL)) && !c->approved) {
		char summary[200];
		snprintf(summary, sizeof summary, "call the tool %.150s", tool);
		e = aw_approvals_park(the_approvals, c, summary, 1, result, err);
		if (!e && *c->outcome == AW_STEP_PARK)
			json_object_set_new(*result, "tool", json_string(tool));
	} else if (er) {
		aw_err from = AW_E_RUN_STEP;
		if (code)
			aw_err_from_code(code, &from);
		e = aw_fail(err, from == AW_E_INTERNAL ? AW_E_RUN_STEP : from, "%.200s",
			    json_string_value(json_object_get(er, "message"))
				    ? json_string_value(json_object_get(er, "message"))
				    : "the tool call failed");
	} else if (json_is_true(json_object_get(res, "isError"))) {
		*result = json_incref(res);
		e = aw_fail(err, AW_E_RUN_STEP, "the tool answered an error");
	} else {
		*result = json_incref(res);
	}
	json_decref(resp);
	return e;
}

static const aw_executor tool_executor = {
	.kind = "tool",
	.side_effect = 1,
	.validate = step_validate,
	.run = step_run,
	.intent = step_intent,
	.parks = 1,
};

int aw_mcp_register_executor(aw_mcp *g, struct aw_approvals *a)
{
	the_gateway = g;
	the_approvals = a;
	if (aw_executor_find("tool"))
		return 0;
	return aw_executor_register(&tool_executor);
}
