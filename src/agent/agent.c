/*
 * agent.c - the `agent` step kind (agent.h): the loop model call -> tool
 * calls -> model call until an answer, in process through the LLM gateway
 * (aw_llm_wait) and the MCP gateway (aw_mcp_exchange), each call journaled
 * as a sub-step (store/agent.h: run_calls).
 *
 * The loop is a replay: the conversation is rebuilt from the journal row by
 * row (seq 1, 2, ...) - a "done" model row is the assistant's message, a
 * "done" tool row the tool's - and only the first row that is not done is
 * executed, then the next, and so on. So what a resumed attempt sends the
 * model is exactly what the first attempt would have sent, and nothing done
 * is done again. A row is "started" before its call (the progress shows it),
 * "done" with its result before the loop goes on, "parked" while its tool
 * waits for an approval and "approved" once it has it (the approval service
 * marks it, in the decision's transaction).
 *
 * It sits above provider/ and mcp/ (rank 9 in scripts/check-layers.py) and
 * registers into run/'s executor registry like the llm and tool steps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/agent.h"
#include "awooop/clock.h"
#include "awooop/json.h"
#include "awooop/llm_wire.h"
#include "awooop/redact.h"
#include "awooop/run.h"
#include "awooop/store/agent.h"
#include "awooop/str.h"

static aw_llm *the_llm;
static aw_mcp *the_mcp;
static aw_approvals *the_approvals;

#define TOOL_TEXT_MAX 16384 /* the gateway cuts a result there already */

/* ---- validation ---- */

static const char *const fields[] = {
	"model",	   "input",	 "system",	"tools", "max_turns",
	"response_format", "max_tokens", "temperature", "task",	 NULL};

static int is_ref(const json_t *v)
{
	return json_is_object(v) && json_object_get(v, "$ref");
}

/* err's complaint again as AW_E_RUN_WORKFLOW, at the same pointer. */
static aw_err as_workflow(aw_error *err)
{
	char at[sizeof err->where], msg[sizeof err->msg];
	AW_COPY_ARRAY(at, err->where);
	AW_COPY_ARRAY(msg, err->msg);
	return aw_fail_at(err, AW_E_RUN_WORKFLOW, at, "%s", msg);
}

static aw_err agent_validate(const json_t *args, aw_error *err)
{
	aw_err e = aw_json_only(args, fields, err);
	if (e)
		return as_workflow(err);
	json_t *m = json_object_get(args, "model");
	if (!is_ref(m) &&
	    (!json_is_string(m) || json_string_length(m) == 0 || json_string_length(m) > 128))
		return aw_fail_at(err, AW_E_RUN_WORKFLOW, "/model",
				  "model must name a route of 1..128 bytes");
	if (!json_object_get(args, "input"))
		return aw_fail_at(err, AW_E_RUN_WORKFLOW, "/input",
				  "input is required: the user's message (text or JSON),"
				  " e.g. {\"$ref\": \"/input\"}");
	json_t *sys = json_object_get(args, "system");
	if (sys && !is_ref(sys) &&
	    (!json_is_string(sys) || json_string_length(sys) > AW_AGENT_SYSTEM_MAX))
		return aw_fail_at(err, AW_E_RUN_WORKFLOW, "/system",
				  "system must be a text of at most 65536 bytes");
	json_t *task = json_object_get(args, "task");
	if (task && !is_ref(task) && (!json_is_string(task) || json_string_length(task) > 64))
		return aw_fail_at(err, AW_E_RUN_WORKFLOW, "/task", "task must be a short string");
	json_t *mt = json_object_get(args, "max_turns");
	if (mt && !is_ref(mt) &&
	    (!json_is_integer(mt) || json_integer_value(mt) < 1 ||
	     json_integer_value(mt) > AW_AGENT_TURNS_MAX))
		return aw_fail_at(err, AW_E_RUN_WORKFLOW, "/max_turns",
				  "max_turns must be an integer 1..%d", AW_AGENT_TURNS_MAX);
	json_t *tools = json_object_get(args, "tools");
	if (tools && !is_ref(tools)) {
		if (!json_is_array(tools) || json_array_size(tools) > AW_AGENT_TOOLS_MAX)
			return aw_fail_at(err, AW_E_RUN_WORKFLOW, "/tools",
					  "tools must be an array of at most %d tool names",
					  AW_AGENT_TOOLS_MAX);
		size_t i, k;
		json_t *t, *u;
		json_array_foreach (tools, i, t) {
			char at[32];
			snprintf(at, sizeof at, "/tools/%zu", i);
			const char *n = json_string_value(t);
			int ok = n && *n && strlen(n) <= 64;
			for (const char *p = n; ok && *p; p++)
				ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
				     (*p >= '0' && *p <= '9') || *p == '_' || *p == '-';
			if (!ok)
				return aw_fail_at(err, AW_E_RUN_WORKFLOW, at,
						  "a tool is named by its federated name:"
						  " 1..64 of [A-Za-z0-9_-]");
			json_array_foreach (tools, k, u)
				if (k < i && json_equal(t, u))
					return aw_fail_at(err, AW_E_RUN_WORKFLOW, at,
							  "tool %s is named twice", n);
		}
	}
	/* the model call's own members, as the gateway checks them */
	json_t *req = json_pack("{s:s, s:[{s:s, s:s}]}", "model", "m", "messages", "role", "user",
				"content", "x");
	static const char *const passed[] = {"response_format", "max_tokens", "temperature"};
	for (size_t i = 0; req && i < sizeof passed / sizeof *passed; i++) {
		json_t *v = json_object_get(args, passed[i]);
		if (v && !aw_run_has_refs(v))
			json_object_set(req, passed[i], v);
	}
	aw_llm_req rq;
	e = req ? aw_llm_req_check(req, &rq, err) : aw_fail(err, AW_E_NOMEM, "out of memory");
	json_decref(req);
	return e ? as_workflow(err) : AW_OK;
}

static json_t *agent_intent(const json_t *args)
{
	return json_pack("{s:s, s:O?, s:O*, s:O*}", "would_run", "agent loop", "model",
			 json_object_get(args, "model"), "tools", json_object_get(args, "tools"),
			 "max_turns", json_object_get(args, "max_turns"));
}

/* ---- the journal ---- */

typedef struct {
	const aw_step_call *c;
	aw_ctx ctx;	   /* the run's project, the step's trace */
	aw_run_call *rows; /* the journal read at the start, by seq */
	int nrows;
	json_t *messages;  /* the conversation so far */
	json_t *tools;	   /* OpenAI tools offered (NULL: none) */
	json_t *read_only; /* {name: true|false} of the offered tools */
	int turn, ncalls, max_turns;
} loop;

static const aw_run_call *row_at(const loop *l, int seq)
{
	for (int i = 0; i < l->nrows; i++)
		if (l->rows[i].seq == seq)
			return &l->rows[i];
	return NULL;
}

/* Writes one row of the journal in a transaction of its own. result may be
 * NULL; code "" when none. */
static aw_err put_row(loop *l, int seq, const char *kind, const char *name, const char *state,
		      const json_t *result, const char *code, aw_error *err)
{
	aw_run_call r = {0};
	if (AW_STR_COPY(r.run_id, l->c->run_id) < 0 || AW_STR_COPY(r.kind, kind) < 0 ||
	    AW_STR_COPY(r.state, state) < 0 || AW_STR_COPY(r.error_code, code) < 0)
		return aw_fail(err, AW_E_INTERNAL, "an agent call row's field does not fit");
	if (AW_STR_COPY(r.name, name) < 0) /* the model's or the tool's: recorded whole */
		return aw_fail(err, AW_E_LIMIT, "a model or tool name is at most %d bytes",
			       AW_RUN_CALL_NAME_MAX);
	r.step_no = l->c->step_no;
	r.seq = seq;
	const aw_run_call *old = row_at(l, seq);
	if (old)
		memcpy(r.created_at, old->created_at, sizeof r.created_at);
	else
		aw_clock_now(r.created_at);
	if (strcmp(state, "started") && strcmp(state, "parked") && strcmp(state, "approved"))
		aw_clock_now(r.finished_at);
	r.result = result ? aw_json_dump(result) : NULL;
	if (result && !r.result)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(l->c->store, &l->ctx, AW_TXN_WRITE, &t, err);
	if (!e && (e = aw_store_run_call_put(t, &r, l->c->holder, l->c->attempt, err)))
		aw_store_rollback(t);
	else if (!e)
		e = aw_store_commit(t, err);
	free(r.result);
	return e;
}

static json_t *row_result(const aw_run_call *r)
{
	json_error_t je;
	return r && r->result ? json_loads(r->result, JSON_DECODE_ANY, &je) : NULL;
}

/* ---- the tools ---- */

/* The step's tools as OpenAI function tools, from the project's tools/list
 * (the pinned definitions the MCP gateway shows it). */
static aw_err offer_tools(loop *l, const json_t *names, aw_error *err)
{
	if (!json_array_size(names))
		return AW_OK;
	static const char list[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}";
	aw_mcp_msg msg;
	aw_rpc_error re;
	if (aw_mcp_parse(list, sizeof list - 1, &msg, &re) != 0)
		return aw_fail(err, AW_E_INTERNAL, "tools/list could not be built");
	aw_mcp_meta meta = {
		.version = AW_MCP_V_LEGACY, .run_id = l->c->run_id, .step_no = l->c->step_no};
	int status = 0;
	aw_error why = {0};
	json_t *resp = aw_mcp_exchange(the_mcp, &l->ctx, &msg, &meta, l->c->stop, l->c->deadline_ns,
				       &status, &why);
	aw_mcp_msg_clear(&msg);
	if (!resp && (why.err == AW_E_RUN_CANCELLED || why.err == AW_E_RUN_TIMEOUT)) {
		*err = why;
		return why.err;
	}
	json_t *defs = json_object_get(json_object_get(resp, "result"), "tools");
	if (!json_is_array(defs)) {
		json_decref(resp);
		return aw_fail(err, AW_E_MCP_UNAVAILABLE,
			       "the project's tools could not be listed");
	}
	l->tools = json_array();
	l->read_only = json_object();
	size_t i, k;
	json_t *n, *d;
	aw_err e = AW_OK;
	json_array_foreach (names, i, n) {
		json_t *def = NULL;
		json_array_foreach (defs, k, d)
			if (json_equal(json_object_get(d, "name"), n))
				def = d;
		if (!def) {
			e = aw_fail(err, AW_E_MCP_TOOL,
				    "tool %s is not visible to this project (its active"
				    " mcp_tool revision)",
				    json_string_value(n));
			break;
		}
		json_t *schema = json_object_get(def, "inputSchema");
		json_t *desc = json_object_get(def, "description");
		json_array_append_new(l->tools,
				      json_pack("{s:s, s:{s:O, s:O*, s:O}}", "type", "function",
						"function", "name", n, "description", desc,
						"parameters", schema ? schema : json_object()));
		json_t *ro = json_object_get(json_object_get(def, "annotations"), "readOnlyHint");
		json_object_set_new(l->read_only, json_string_value(n),
				    json_boolean(json_is_true(ro)));
	}
	json_decref(resp);
	return e;
}

/* The text a tool result shows the model: its text parts, one a line. */
static json_t *result_text(const json_t *res)
{
	char *buf = aw_malloc(TOOL_TEXT_MAX + 1);
	if (!buf)
		return NULL;
	size_t len = 0, i;
	json_t *part;
	json_array_foreach (json_object_get(res, "content"), i, part) {
		const char *type = json_string_value(json_object_get(part, "type"));
		const char *text = json_string_value(json_object_get(part, "text"));
		char other[64];
		if (!text) {
			snprintf(other, sizeof other, "[%s]", type ? type : "content");
			text = other;
		}
		int n = snprintf(buf + len, TOOL_TEXT_MAX + 1 - len, "%s%s", len ? "\n" : "", text);
		len += n < 0 ? 0 : (size_t)n;
		if (len >= TOOL_TEXT_MAX) {
			len = TOOL_TEXT_MAX;
			break;
		}
	}
	/* a cut may split a character: back off to the last whole one */
	json_t *s = NULL;
	for (int k = 0; !s && k < 4 && len >= (size_t)k; k++)
		s = json_stringn(buf, len - (size_t)k);
	free(buf);
	return s ? s : json_string("");
}

typedef enum { TOOL_DONE, TOOL_PARK, TOOL_FAIL } tool_end;

/* One tool call of the model (tc) as row seq: *row_out the row's result
 * ({"tool_call_id", "content", "code"?}) when done. */
static tool_end call_tool(loop *l, int seq, const json_t *tc, int approved, json_t **row_out,
			  json_t **result, aw_error *err)
{
	const char *id = json_string_value(json_object_get(tc, "id"));
	json_t *fn = json_object_get(tc, "function");
	const char *name = json_string_value(json_object_get(fn, "name"));
	const char *argtext = json_string_value(json_object_get(fn, "arguments"));
	char cid[32];
	if (!id) {
		snprintf(cid, sizeof cid, "call_%d", seq);
		id = cid;
	}
	json_error_t je;
	json_t *av = json_object_get(fn, "arguments");
	json_t *args = json_is_object(av)    ? json_deep_copy(av)
		       : argtext && *argtext ? json_loads(argtext, 0, &je)
					     : json_object();
	const char *complaint = NULL;
	if (!name || !json_object_get(l->read_only, name))
		complaint = "error: the step does not offer this tool";
	else if (!json_is_object(args))
		complaint = "error: the tool's arguments are not a JSON object";
	if (complaint) { /* said to the model; nothing is called */
		json_decref(args);
		*row_out = json_pack("{s:s, s:s}", "tool_call_id", id, "content", complaint);
		return TOOL_DONE;
	}
	json_t *req = json_pack("{s:s, s:i, s:s, s:{s:s, s:O}}", "jsonrpc", "2.0", "id", seq,
				"method", "tools/call", "params", "name", name, "arguments", args);
	json_decref(args);
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	aw_mcp_msg msg;
	aw_rpc_error re;
	if (!text || aw_mcp_parse(text, strlen(text), &msg, &re) != 0) {
		free(text);
		aw_fail(err, AW_E_RUN_STEP, "the tool call could not be built");
		return TOOL_FAIL;
	}
	free(text);
	char key[AW_UUID_STR_LEN + 32];
	snprintf(key, sizeof key, "%s-%d-%d", l->c->run_id, l->c->step_no, seq);
	aw_ctx ctx = l->ctx;
	snprintf(ctx.principal, sizeof ctx.principal, "run-%.36s", l->c->run_id);
	aw_mcp_meta meta = {.version = AW_MCP_V_LEGACY,
			    .run_id = l->c->run_id,
			    .step_no = l->c->step_no,
			    .approved = approved,
			    .idem_key =
				    json_is_true(json_object_get(l->read_only, name)) ? NULL : key};
	int status = 0;
	aw_error why = {0};
	json_t *resp = aw_mcp_exchange(the_mcp, &ctx, &msg, &meta, l->c->stop, l->c->deadline_ns,
				       &status, &why);
	aw_mcp_msg_clear(&msg);
	if (!resp) { /* cancelled, out of time, or refused before any worker */
		if (why.err)
			*err = why;
		else
			aw_fail(err, AW_E_RUN_STEP, "the MCP gateway gave no answer");
		return TOOL_FAIL;
	}
	json_t *res = json_object_get(resp, "result"), *er = json_object_get(resp, "error");
	const char *code = json_string_value(json_object_get(json_object_get(er, "data"), "code"));
	aw_err from = AW_OK;
	if (code)
		aw_err_from_code(code, &from);
	tool_end end = TOOL_DONE;
	if (er && from == AW_E_MCP_APPROVAL && !approved) {
		char summary[200];
		snprintf(summary, sizeof summary, "call the tool %.150s (agent turn %d, call %d)",
			 name, l->turn, (int)seq);
		if (!the_approvals) {
			aw_fail(err, AW_E_MCP_APPROVAL,
				"tool %s needs an approval and this worker runs no approval"
				" service",
				name);
			end = TOOL_FAIL;
		} else if (aw_approvals_park(the_approvals, l->c, summary, 1, result, err)) {
			end = TOOL_FAIL;
		} else {
			if (*l->c->outcome == AW_STEP_PARK) {
				json_object_set_new(*result, "tool", json_string(name));
				json_object_set_new(*result, "call", json_integer(seq));
				json_object_set_new(*result, "turn", json_integer(l->turn));
			}
			end = TOOL_PARK;
		}
	} else if (er && (from == AW_E_MCP_BUDGET || from == AW_E_MCP_CANCELLED ||
			  from == AW_E_MCP_UNAVAILABLE)) {
		/* the budget refuses every later call too; a cut call is the run's */
		const char *m = json_string_value(json_object_get(er, "message"));
		aw_fail(err, from, "tool %s: %.200s", name, m ? m : "refused");
		end = TOOL_FAIL;
	} else if (er) { /* a gate's refusal or the upstream's error: the model's to see */
		const char *m = json_string_value(json_object_get(er, "message"));
		char line[400];
		snprintf(line, sizeof line, "error %s: %.300s", code ? code : "", m ? m : "failed");
		*row_out = json_pack("{s:s, s:s, s:s?}", "tool_call_id", id, "content", line,
				     "code", code);
	} else {
		json_t *txt = result_text(res);
		*row_out = json_pack("{s:s, s:o, s:b}", "tool_call_id", id, "content",
				     txt ? txt : json_string(""), "is_error",
				     json_is_true(json_object_get(res, "isError")));
	}
	json_decref(resp);
	if (end == TOOL_DONE && !*row_out) {
		aw_fail(err, AW_E_NOMEM, "out of memory");
		end = TOOL_FAIL;
	}
	return end;
}

/* ---- the model ---- */

static aw_err ask_model(loop *l, const char *model, json_t **answer, aw_error *err)
{
	const json_t *a = l->c->args;
	json_t *req = json_pack("{s:s, s:O}", "model", model, "messages", l->messages);
	if (!req)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	if (l->tools && json_array_size(l->tools))
		json_object_set(req, "tools", l->tools);
	static const char *const passed[] = {"response_format", "max_tokens", "temperature"};
	for (size_t i = 0; i < sizeof passed / sizeof *passed; i++)
		if (json_object_get(a, passed[i]))
			json_object_set(req, passed[i], json_object_get(a, passed[i]));
	aw_llm_meta meta = {.run_id = l->c->run_id,
			    .step_no = l->c->step_no,
			    .task = json_string_value(json_object_get(a, "task"))};
	aw_ctx ctx = l->ctx;
	snprintf(ctx.principal, sizeof ctx.principal, "run-worker");
	aw_err e =
		aw_llm_wait(the_llm, &ctx, req, &meta, l->c->stop, l->c->deadline_ns, answer, err);
	json_decref(req);
	return e;
}

/* The user's message: a text as it is, anything else as compact JSON. */
static json_t *user_text(const json_t *input)
{
	if (json_is_string(input))
		return json_incref((json_t *)input);
	char *s = json_dumps(input, JSON_COMPACT | JSON_ENCODE_ANY);
	json_t *v = s ? json_string(s) : NULL;
	free(s);
	return v;
}

static aw_err agent_run(const aw_step_call *c, json_t **result, aw_error *err)
{
	if (!the_llm || !the_mcp)
		return aw_fail(err, AW_E_RUN_STEP, "this worker runs no LLM or no MCP gateway");
	const json_t *a = c->args;
	const char *model = json_string_value(json_object_get(a, "model"));
	const char *sys = json_string_value(json_object_get(a, "system"));
	json_t *mt = json_object_get(a, "max_turns");
	if (!model)
		return aw_fail_at(err, AW_E_RUN_REF, "/model", "model must name a route");
	loop l = {.c = c, .max_turns = mt ? (int)json_integer_value(mt) : AW_AGENT_TURNS_DEFAULT};
	aw_ctx_system(&l.ctx, c->project);
	aw_trace in;
	if (c->traceparent && aw_trace_parse(c->traceparent, strlen(c->traceparent), &in) == 0)
		l.ctx.trace = in;
	l.ctx.deadline_ns = c->deadline_ns;
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(c->store, &l.ctx, AW_TXN_READ, &t, err);
	if (e)
		return e;
	e = aw_store_run_calls(t, c->run_id, c->step_no, &l.rows, &l.nrows, err);
	aw_store_rollback(t);
	if (e)
		return e;
	json_t *user = user_text(json_object_get(a, "input"));
	l.messages = json_array();
	if (sys)
		json_array_append_new(l.messages,
				      json_pack("{s:s, s:s}", "role", "system", "content", sys));
	json_array_append_new(l.messages,
			      json_pack("{s:s, s:o*}", "role", "user", "content", user));
	json_t *pending = NULL, *answer = NULL;
	size_t pi = 0;
	int seq = 0;
	if (json_array_size(json_object_get(a, "tools")) &&
	    (e = offer_tools(&l, json_object_get(a, "tools"), err)))
		goto out;
	for (;;) {
		if (c->stop && *c->stop) {
			e = aw_fail(err, AW_E_RUN_CANCELLED, "interrupted");
			goto out;
		}
		if (pending && pi < json_array_size(pending)) {
			json_t *tc = json_array_get(pending, pi++);
			const char *name = json_string_value(
				json_object_get(json_object_get(tc, "function"), "name"));
			const aw_run_call *r = row_at(&l, ++seq);
			json_t *done = NULL;
			l.ncalls++;
			if (r && !strcmp(r->state, "done")) {
				done = row_result(r);
			} else {
				int approved = r && !strcmp(r->state, "approved");
				if (!approved && (e = put_row(&l, seq, "tool", name ? name : "-",
							      "started", NULL, NULL, err)))
					goto out;
				tool_end end = call_tool(&l, seq, tc, approved, &done, result, err);
				if (end == TOOL_PARK) {
					e = put_row(&l, seq, "tool", name ? name : "-", "parked",
						    NULL, NULL, err);
					goto out;
				}
				if (end == TOOL_FAIL) {
					e = err->err ? err->err : AW_E_RUN_STEP;
					if (e != AW_E_RUN_CANCELLED) {
						aw_error ignored = {0};
						put_row(&l, seq, "tool", name ? name : "-",
							"failed", NULL, aw_err_code(e), &ignored);
					}
					goto out;
				}
				if ((e = put_row(&l, seq, "tool", name ? name : "-", "done", done,
						 json_string_value(json_object_get(done, "code")),
						 err))) {
					json_decref(done);
					goto out;
				}
			}
			if (!done) {
				e = aw_fail(err, AW_E_INTERNAL,
					    "call %d of the journal has no result", seq);
				goto out;
			}
			json_array_append_new(
				l.messages,
				json_pack("{s:s, s:O?, s:O?}", "role", "tool", "tool_call_id",
					  json_object_get(done, "tool_call_id"), "content",
					  json_object_get(done, "content")));
			json_decref(done);
			continue;
		}
		json_decref(pending);
		pending = NULL;
		/* a model turn */
		l.turn++;
		const aw_run_call *r = row_at(&l, ++seq);
		json_decref(answer);
		answer = NULL;
		if (r && !strcmp(r->state, "done")) {
			answer = row_result(r);
		} else {
			if ((e = put_row(&l, seq, "model", model, "started", NULL, NULL, err)))
				goto out;
			e = ask_model(&l, model, &answer, err);
			if (e) {
				if (e != AW_E_RUN_CANCELLED && e != AW_E_RUN_TIMEOUT) {
					aw_error ignored = {0};
					put_row(&l, seq, "model", model, "failed", NULL,
						aw_err_code(e), &ignored);
				}
				goto out;
			}
			/* journaled (redacted: the journal keeps no secret) before it is
			 * acted on: a resumed run never asks this turn again */
			aw_redact_json_for(c->project, answer, NULL);
			if ((e = put_row(&l, seq, "model", model, "done", answer, NULL, err)))
				goto out;
		}
		if (!answer) {
			e = aw_fail(err, AW_E_INTERNAL, "call %d of the journal has no result",
				    seq);
			goto out;
		}
		json_t *tcs = json_object_get(answer, "tool_calls");
		json_t *am = json_pack("{s:s, s:O?}", "role", "assistant", "content",
				       json_object_get(answer, "content"));
		if (am && json_array_size(tcs))
			json_object_set(am, "tool_calls", tcs);
		json_array_append_new(l.messages, am);
		/* tools asked for at the last turn: no turn is left to read them */
		if (json_array_size(tcs) && l.turn >= l.max_turns) {
			e = aw_fail(
				err, AW_E_RUN_TURNS,
				"the model still asked for tools at its last turn (max_turns %d)",
				l.max_turns);
			goto out;
		}
		if (json_array_size(tcs)) {
			pending = json_incref(tcs);
			pi = 0;
			continue;
		}
		break;
	}
	/* the final answer */
	json_t *content = json_object_get(answer, "content");
	*result = json_pack("{s:O?, s:i, s:i, s:O?, s:O?}", "content", content, "turns", l.turn,
			    "tool_calls", l.ncalls, "finish_reason",
			    json_object_get(answer, "finish_reason"), "model",
			    json_object_get(answer, "model"));
	if (*result && json_object_get(a, "response_format") && json_is_string(content)) {
		json_error_t je;
		json_t *doc = json_loads(json_string_value(content), JSON_DECODE_ANY, &je);
		if (doc)
			json_object_set_new(*result, "output", doc);
	}
	e = *result ? AW_OK : aw_fail(err, AW_E_NOMEM, "out of memory");
out:
	json_decref(pending);
	json_decref(answer);
	json_decref(l.messages);
	json_decref(l.tools);
	json_decref(l.read_only);
	aw_run_calls_free(l.rows, l.nrows);
	return e;
}

static const aw_executor agent_executor = {
	.kind = "agent",
	.side_effect = 1,
	.validate = agent_validate,
	.run = agent_run,
	.intent = agent_intent,
	.parks = 1,
};

int aw_agent_register_executor(aw_llm *llm, aw_mcp *mcp, aw_approvals *approvals)
{
	the_llm = llm;
	the_mcp = mcp;
	the_approvals = approvals;
	if (aw_executor_find("agent"))
		return 0;
	return aw_executor_register(&agent_executor);
}
