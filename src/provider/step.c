/*
 * step.c - the run runtime's `llm` step kind: one model call through the
 * gateway, in process (same guard, routing, failover, schema retries and
 * audit envelope as the HTTP endpoint), carrying the run id and step number.
 *
 *   llm {"model", "messages", "task"?, "response_format"?, "max_tokens"?,
 *        "temperature"?}
 *
 * The result is the answer's text, finish reason, usage and the model that
 * answered. Shadow mode records the request it would send. A cancelled run
 * or a stopping worker abandons the call (its upstream transfer is cut).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/clock.h"
#include "awooop/json.h"
#include "awooop/run.h"
#include "awooop/executor.h"
#include "awooop/str.h"
#include "provider_internal.h"

static aw_llm *the_gateway;

static const char *const fields[] = {"model",	   "messages",	  "task", "response_format",
				     "max_tokens", "temperature", NULL};

static aw_err step_validate(const json_t *args, aw_error *err)
{
	aw_err e = aw_json_only(args, fields, err);
	if (e)
		return aw_fail_at(err, AW_E_RUN_WORKFLOW, err->where, "%s", err->msg);
	json_t *task = json_object_get(args, "task");
	if (task && (!json_is_string(task) || json_string_length(task) > 64))
		return aw_fail_at(err, AW_E_RUN_WORKFLOW, "/task", "task must be a short string");
	json_t *req = json_deep_copy(args);
	json_object_del(req, "task");
	aw_llm_req rq;
	e = aw_llm_req_check(req, &rq, err);
	json_decref(req);
	if (e)
		return aw_fail_at(err, AW_E_RUN_WORKFLOW, err->where, "%s", err->msg);
	return AW_OK;
}

/* A chat.completion as a step's answer: {content, finish_reason, usage,
 * model, tool_calls?} (NULL: out of memory). */
static json_t *step_answer(const char *body)
{
	json_t *resp = aw_json_loadb(body, strlen(body), 0, NULL);
	json_t *c0 = json_array_get(json_object_get(resp, "choices"), 0);
	json_t *msg = json_object_get(c0, "message");
	json_t *a =
		json_pack("{s:O?,s:O?,s:O?,s:O?}", "content", json_object_get(msg, "content"),
			  "finish_reason", json_object_get(c0, "finish_reason"), "usage",
			  json_object_get(resp, "usage"), "model", json_object_get(resp, "model"));
	json_t *tcs = json_object_get(msg, "tool_calls");
	if (a && json_array_size(tcs))
		json_object_set(a, "tool_calls", tcs);
	json_decref(resp);
	return a;
}

static aw_err step_run(const aw_step_call *sc, json_t **result, aw_error *err)
{
	if (!the_gateway)
		return aw_fail(err, AW_E_RUN_STEP, "no LLM gateway runs in this worker");
	aw_ctx ctx;
	aw_ctx_system(&ctx, sc->project);
	snprintf(ctx.principal, sizeof ctx.principal, "run-worker");
	aw_trace in;
	if (sc->traceparent && aw_trace_parse(sc->traceparent, strlen(sc->traceparent), &in) == 0)
		ctx.trace = in;
	ctx.deadline_ns = sc->deadline_ns;
	json_t *req = json_deep_copy(sc->args);
	const char *task = json_string_value(json_object_get(sc->args, "task"));
	json_object_del(req, "task");
	aw_llm_meta meta = {.run_id = sc->run_id, .step_no = sc->step_no, .task = task};
	char *body = NULL;
	aw_err e = llm_wait(the_gateway, &ctx, req, &meta, sc->stop, sc->deadline_ns, &body, err);
	json_decref(req);
	if (e == AW_E_RUN_CANCELLED || e == AW_E_RUN_TIMEOUT)
		return e;
	if (e) { /* keep the gateway's words */
		char msg[sizeof err->msg];
		AW_COPY_ARRAY(msg, err->msg);
		return aw_fail(err, AW_E_RUN_STEP, "%s: %s", aw_err_code(e), msg);
	}
	*result = step_answer(body);
	free(body);
	return *result ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
}

static json_t *step_intent(const json_t *args)
{
	return json_pack("{s:s,s:O}", "would_call", "POST /v1/chat/completions", "request", args);
}

aw_err aw_llm_wait(aw_llm *g, const aw_ctx *ctx, const json_t *req, const aw_llm_meta *meta,
		   const atomic_bool *stop, int64_t deadline_ns, json_t **answer, aw_error *err)
{
	char *body = NULL;
	*answer = NULL;
	aw_err e = llm_wait(g, ctx, req, meta, stop, deadline_ns, &body, err);
	if (!e && !(*answer = step_answer(body)))
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	free(body);
	return e;
}

static const aw_executor llm_executor = {
	.kind = "llm",
	.side_effect = 1,
	.validate = step_validate,
	.run = step_run,
	.intent = step_intent,
};

int aw_llm_register_executor(aw_llm *g)
{
	the_gateway = g;
	if (aw_executor_find("llm"))
		return 0;
	return aw_executor_register(&llm_executor);
}
