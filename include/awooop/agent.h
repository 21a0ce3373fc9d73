/*
 * agent.h - the run runtime's `agent` step kind: a model that calls the
 * project's tools until it answers, every call through the gateways and
 * journaled, so a run killed mid-loop resumes without paying twice.
 *
 *   agent {"model": route, "input": any, "system"?: text, "tools"?: [names],
 *          "max_turns"?: 1..50 (8), "response_format"?, "max_tokens"?,
 *          "temperature"?, "task"?}
 *
 * A turn is one model call through the LLM gateway (routing, budget, schema
 * retries, audit) offered the step's tools - federated MCP names, in OpenAI
 * `tools` form from their pinned definitions' input schemas. Each tool call
 * the model asks for goes through the MCP gateway (the five gates, pins,
 * redaction, the 16 KiB cut) and its text is fed back as a `tool` message;
 * a refusal or a tool error is fed back as such. The loop ends with the
 * model's final answer (the step's result), or fails: E-RUN-014 when the
 * model still asks for tools at max_turns, the gateway's own code for a
 * refusal (budget E-BUDGET-00x, E-MCP-GATE-007, routing, schema), E-RUN-007
 * when the run is cancelled.
 *
 * Every call is a row of the step's sub-step journal (store/agent.h), written
 * "started" before the call and "done" with its result before the loop acts
 * on it. A resumed step replays the journal: a turn already answered is not
 * asked again, a tool call is repeated only when it never completed, and a
 * tool that is not read-only (its pinned definition lacks
 * annotations.readOnlyHint: true) gets the idempotency key
 * "<run>-<step>-<seq>" in params._meta (AW_MCP_IDEM_META), the same on every
 * repetition. A tool whose policy requires approval parks the run (the
 * project's approval policy; the rule names the call: "call": seq); the
 * decision approves that call only, and a later call that needs approval
 * parks again.
 */
#ifndef AWOOOP_AGENT_H
#define AWOOOP_AGENT_H

#include "awooop/approval.h"
#include "awooop/llm.h"
#include "awooop/mcp.h"

#define AW_AGENT_TURNS_MAX 50
#define AW_AGENT_TURNS_DEFAULT AW_RUN_AGENT_TURNS_DEFAULT
#define AW_AGENT_TOOLS_MAX 32
#define AW_AGENT_SYSTEM_MAX 65536 /* bytes of the system prompt */

/* Registers the "agent" step kind, calling llm and mcp; approvals parks
 * (NULL: a tool that needs approval fails the step). At start-up. */
int aw_agent_register_executor(aw_llm *llm, aw_mcp *mcp, aw_approvals *approvals);

/* Where a run's agent is (the chat's progress messages): run.h's
 * aw_run_agent_progress, which services below this one (channel/) may call. */

#endif
