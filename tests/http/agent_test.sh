#!/usr/bin/env bash
# Black-box test of the `agent` run step against a real `awooop serve`, the
# fake model (tests/support/fake_llm.c, turns=N: an agent that asks for a tool
# per turn and then answers quoting the results) and the MCP double
# (tests/support/fake_mcp.c over HTTP: lookup is read-only, effect is not and
# counts its calls per idempotency key):
#   - several turns and tools: the answer quotes every tool's text, each turn
#     was asked once, the run view shows the sub-calls (turns, tools, times),
#     the non-read-only tool got one idempotency key per call;
#   - validation at submission (unknown member, bad tools) -> 422 + pointer;
#   - max_turns -> E-RUN-014; a per-run budget refusal mid-loop -> the
#     gateway's code, not retried; cancellation mid-loop;
#   - a `tool` step's call in flight is cut by its run's cancel and by its
#     run's timeout (the call's record says E-MCP-004 at once);
#   - a tool that needs approval parks the run mid-loop, the approver's
#     decision lets that call pass, and the next call that needs one parks
#     again (one approval covers one call);
#   - response_format: the final answer's JSON in "output".
#   agent_test.sh AWOOOP_BINARY FAKE_LLM FAKE_MCP sqlite|postgres
set -uo pipefail
BIN=$1
FAKE_LLM=$2
FAKE_MCP=$3
BACKEND=$4
. "$(dirname "$0")/lib.sh"

"$FAKE_LLM" --name M >"$TMP/llm.out" 2>&1 &
PIDS+=($!)
"$FAKE_MCP" --http 0 >"$TMP/mcp.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do
  LPORT=$(sed -n 's/^port //p' "$TMP/llm.out"); MPORT=$(head -1 "$TMP/mcp.out")
  [ -n "$LPORT" ] && [ -n "$MPORT" ] && break; sleep 0.1
done
echo "{\"providers\": {\"openai\": {\"url\": \"http://127.0.0.1:$LPORT/v1\", \"api\": \"openai\"}}}" \
  >"$TMP/llm.json"
HEX=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export AWOOOP_APPROVAL_KEYS="ka:$HEX"
aw_db "$BACKEND"
aw_serve --llm-config "$TMP/llm.json" --egress-allow-private agt,agb,agp \
  --heartbeat-ms 200 --lease-ms 2000 --worker-poll-ms 100 --retry-base-ms 100
export AWOOOP_URL=$URL

# setup PROJECT: keys (OP1, OP2 operators, W worker), routing to the fake
# model, the MCP double's tools (effect needs approval when $2 is "approve")
setup() {
  api POST /v1/projects "$ADMIN" "{\"id\":\"$1\"}" >/dev/null
  OP1=$(mkkey "$1" op1 operator); OP2=$(mkkey "$1" op2 operator)
  local appr=false; [ "${2:-}" = approve ] && appr=true
  check "$1 routing" "$(aw_activate "$1" policy_routing '{"routes":[
    {"name":"agent","match":{"task":"agent"},"candidates":[{"provider":"openai","model":"a;turns=3"}]},
    {"name":"long","match":{"task":"long"},"candidates":[{"provider":"openai","model":"l;turns=5"}]},
    {"name":"slow","match":{"task":"slow"},"candidates":[{"provider":"openai","model":"s;turns=50;ttft=300"}]},
    {"name":"writer","match":{"task":"writer"},"candidates":[{"provider":"openai","model":"w;turns=2;pick=effect__web"}]},
    {"name":"final","match":{"task":"final"},"candidates":[{"provider":"openai","model":"f;turns=1"}]}]}' "$OP1" "$OP2")" true
  local base=/v1/projects/$1/contracts/mcp_tool/default/revisions rev
  local body
  body=$(jq -nc --arg url "http://127.0.0.1:$MPORT/mcp" --argjson appr "$appr" '{body: {
    upstreams: {web: {transport: "http", url: $url}},
    tools: [{name: "lookup", provider: "web", mode: "read_only"},
            {name: "echo", provider: "web", mode: "read_only"},
            {name: "effect", provider: "web", mode: "write", requires_approval: $appr},
            {name: "effects", provider: "web", mode: "read_only"},
            {name: "slow", provider: "web", mode: "read_only"}]}}')
  rev=$(api POST "$base" "$OP1" "$body" | tee "$TMP/draft" | jq -r .revision_id)
  [ "$rev" != null ] || cat "$TMP/draft" >&2
  api POST "$base/$rev/publish" "$OP1" >/dev/null
  api POST "$base/$rev/approve" "$OP2" >/dev/null
  check "$1 tools" "$(api POST "$base/$rev/activate" "$OP1" | jq -r .activated)" true
}
state() { api GET "/v1/platform/runs/$1" "$OP1" | jq -r .state; }
in_state() { [ "$(state "$1")" = "$2" ]; }
finished() { case "$(state "$1")" in succeeded|failed|cancelled) return 0;; esac; return 1; }
submit() { api POST /v1/platform/runs "$OP1" "$1" | jq -r .run_id; }
agent() { # agent ROUTE INPUT [TOOLS] [EXTRA members]: a run body
  echo "{\"input\":{\"q\":\"$2\"},\"max_attempts\":5,\"workflow\":[{\"name\":\"a\",\"kind\":\"agent\",\"args\":{
    \"model\":\"$1\",\"system\":\"You look things up.\",\"input\":{\"\$ref\":\"/input/q\"},
    \"tools\":${3:-[\"lookup__web\",\"effect__web\"]}${4:+,$4}}}]}"
}
stats() { curl -s "http://127.0.0.1:$LPORT/stats"; }
effects() { # the MCP double's effect calls per idempotency key (a session of agt's)
  if [ -z "${MSID:-}" ]; then
    MSID=$(curl -s -D - -o /dev/null -X POST -H "Authorization: Bearer $W" \
      -H 'Content-Type: application/json' -H 'Accept: application/json' \
      --data-binary '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
      "$URL/v1/projects/agt/mcp" | tr -d '\r' | awk -F': ' 'tolower($1) == "mcp-session-id" { print $2 }')
  fi
  curl -s -X POST -H "Authorization: Bearer $W" -H 'Content-Type: application/json' \
    -H 'Accept: application/json' -H "Mcp-Session-Id: $MSID" \
    --data-binary '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"effects__web","arguments":{}}}' \
    "$URL/v1/projects/agt/mcp" | jq -r '.result.content[0].text'
}

setup agt
W=$(mkkey agt w1 worker)

# --- several turns and tools
R=$(submit "$(agent agent "hello-1")")
wait_until 20 finished "$R"
req GET "/v1/platform/runs/$R" "$OP1"
check "agent run succeeded" "$(jbody .state)" succeeded
check "the answer quotes the tools" "$(jbody '.steps[0].result.content')" \
  "final: found q0 | did q1 | found q2"
check "three tool calls, four turns" "$(jbody '[.steps[0].result.turns, .steps[0].result.tool_calls] | join(",")')" "4,3"
check "sub-calls in the view" "$(jbody '[.steps[0].calls[] | .kind] | join(",")')" \
  "model,tool,model,tool,model,tool,model"
check "their names" "$(jbody '[.steps[0].calls[] | select(.kind == "tool") | .name] | join(",")')" \
  "lookup__web,effect__web,lookup__web"
check "every call done, with times" "$(jbody '[.steps[0].calls[] | select(.state == "done" and .started_at != null and .finished_at != null)] | length')" 7
check "the turns numbered" "$(jbody '[.steps[0].calls[] | .turn] | join(",")')" "1,1,2,2,3,3,4"
check "a model call names the tools it asked for" "$(jbody '.steps[0].calls[0].tool_calls | join(",")')" lookup__web
check "each turn asked once" "$(stats | jq '[.turns | to_entries[] | select(.key | startswith("hello-1#")) | .value] | (length == 4 and all(. == 1))')" true
check "the write tool carried the call's key" "$(effects | jq -r --arg k "$R-1-4" '.[$k]')" 1
check "the read-only tool carried none" "$(effects | jq -r '."-" // 0')" 0

# --- validation at submission
req POST /v1/platform/runs "$OP1" '{"workflow":[{"kind":"agent","args":{"model":"agent","input":"x","tool":["a"]}}]}'
expect "unknown member" 422 .code E-RUN-003
check "its pointer" "$(jbody .pointer)" /workflow/0/args/tool
req POST /v1/platform/runs "$OP1" '{"workflow":[{"kind":"agent","args":{"model":"agent","input":"x","tools":["ok","b a d"]}}]}'
expect "a bad tool name" 422 .code E-RUN-003
check "its pointer" "$(jbody .pointer)" /workflow/0/args/tools/1
req POST /v1/platform/runs "$OP1" '{"workflow":[{"kind":"agent","args":{"model":"agent","input":"x","tools":"lookup__web"}}]}'
expect "tools not a list" 422 .code E-RUN-003
check "its pointer" "$(jbody .pointer)" /workflow/0/args/tools
req POST /v1/platform/runs "$OP1" '{"workflow":[{"kind":"agent","args":{"model":"agent","input":"x","max_turns":0}}]}'
expect "max_turns 0" 422 .code E-RUN-003
check "its pointer" "$(jbody .pointer)" /workflow/0/args/max_turns
req POST /v1/platform/runs "$OP1" '{"workflow":[{"kind":"agent","args":{"model":"agent"}}]}'
expect "no input" 422 .code E-RUN-003
check "its pointer" "$(jbody .pointer)" /workflow/0/args/input

# --- a tool the project does not have: the step fails with the gate's code
R=$(submit "$(agent agent "hello-2" '["lookup__web","nosuch__web"]')")
wait_until 20 finished "$R"
req GET "/v1/platform/runs/$R" "$OP1"
check "unknown tool fails the run" "$(jbody .state)" failed
check "with the gate's code" "$(jbody .steps[0].error_code)" E-MCP-GATE-002

# --- max_turns
R=$(submit "$(agent long "hello-3" '["lookup__web"]' '"max_turns":3')")
wait_until 20 finished "$R"
req GET "/v1/platform/runs/$R" "$OP1"
check "out of turns" "$(jbody .state)" failed
check "E-RUN-014" "$(jbody .error_code // .steps[0].error_code)" E-RUN-014
check "not retried" "$(jbody .attempts)" 1
check "three turns were asked" "$(stats | jq '[.turns | to_entries[] | select(.key | startswith("hello-3#")) | .value] | add')" 3
check "the last turn's tool calls not made" "$(jbody '[.steps[0].calls[] | select(.kind == "tool")] | length')" 2

# --- response_format: the final answer's JSON
R=$(submit "$(agent agent "hello-4" '["lookup__web"]' '"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object","required":["answer"],"properties":{"answer":{"type":"string"}}}}}')")
wait_until 20 finished "$R"
req GET "/v1/platform/runs/$R" "$OP1"
check "structured answer" "$(jbody .steps[0].result.output.answer)" "final: found q0 | found q1 | found q2"

# --- data flow: a later step reads the agent's answer
R=$(submit "{\"input\":{\"q\":\"hello-5\"},\"workflow\":[{\"name\":\"a\",\"kind\":\"agent\",\"args\":{\"model\":\"final\",\"input\":{\"\$ref\":\"/input/q\"},\"tools\":[\"lookup__web\"]}},
  {\"kind\":\"noop\",\"when\":{\"\$ref\":\"/steps/a/result/content\",\"equals\":\"final: found q0\"}}]}")
wait_until 20 finished "$R"
req GET "/v1/platform/runs/$R" "$OP1"
check "the next step saw the answer" "$(jbody '.steps[1].state')" succeeded

# --- shadow: the loop it would run, nothing called
N0=$(stats | jq .requests)
req POST /v1/platform/runs "$OP1" "$(agent agent "hello-9" | jq -c '. + {mode: "shadow"}')"
R=$(jbody .run_id)
wait_until 20 finished "$R"
req GET "/v1/platform/runs/$R" "$OP1"
check "shadow: the intended loop" "$(jbody '.steps[0].result | [.shadow, .intended.would_run, .intended.model] | join(",")')" \
  "true,agent loop,agent"
check "shadow: no model call" "$(stats | jq .requests)" "$N0"

# --- cancellation mid-loop
R=$(submit "$(agent slow "hello-6" '["lookup__web"]' '"max_turns":50')")
wait_until 20 "[ \"\$(api GET /v1/platform/runs/$R \"\$OP1\" | jq '[.steps[0].calls[]? | select(.kind == \"tool\")] | length')\" -ge 2 ]"
req POST "/v1/platform/runs/$R/cancel" "$OP1" ""
wait_until 10 finished "$R"
check "cancelled mid-loop" "$(state "$R")" cancelled
N1=$(stats | jq '[.turns | to_entries[] | select(.key | startswith("hello-6#")) | .value] | add')
sleep 1
check "no turn after the cancel" "$(stats | jq '[.turns | to_entries[] | select(.key | startswith("hello-6#")) | .value] | add')" "$N1"

# --- a tool step waits on its call as an llm step does: its run's cancel and
# its run's timeout cut the call in flight (the upstream is told, the call's
# record says so at once), not when the tool answers 30 s later
slow_rec() { # the mcp.call record of run $1, once written: its code
  api GET "/v1/projects/agt/audit?action=mcp.call&order=desc&limit=50" "$OP1" |
    jq -r --arg r "$1" '[.items[] | select(.payload.run_id == $r)][0].payload.code // empty'
}
SLOW='[{"name":"t","kind":"tool","args":{"tool":"slow__web","arguments":{"ms":30000}}}]'
R=$(submit "{\"input\":{},\"max_attempts\":1,\"workflow\":$SLOW}")
wait_until 20 in_state "$R" running
sleep 1 # in the tool call
req POST "/v1/platform/runs/$R/cancel" "$OP1" ""
wait_until 3 "[ -n \"\$(slow_rec $R)\" ]"
check "a tool call cut by its run's cancel" "$(slow_rec "$R")" E-MCP-004
wait_until 10 finished "$R"
check "its run cancelled" "$(state "$R")" cancelled
R=$(submit "{\"input\":{},\"max_attempts\":1,\"timeout_s\":2,\"workflow\":$SLOW}")
wait_until 6 "[ -n \"\$(slow_rec $R)\" ]"
check "a tool call cut by its run's timeout" "$(slow_rec "$R")" E-MCP-004
wait_until 10 finished "$R"
check "its run timed out" "$(state "$R")" failed

# --- a per-run budget refused mid-loop: the gateway's code, never retried
setup agb
check "agb budget" "$(aw_activate agb budget '{"period":"day","token_limit":1000000,"per_run_token_limit":700,"action_on_exceed":"block"}' "$OP1" "$OP2")" true
R=$(submit "$(agent long "hello-7" '["lookup__web"]' '"max_tokens":50')")
wait_until 20 finished "$R"
req GET "/v1/platform/runs/$R" "$OP1"
check "budget stops the loop" "$(jbody .state)" failed
check "with the budget's code" "$(jbody .steps[0].error_code)" E-BUDGET-003
check "after some turns" "$(jbody '[.steps[0].calls[] | select(.kind == "model" and .state == "done")] | length >= 1')" true
check "the refused turn journaled" "$(jbody '.steps[0].calls[-1] | .kind + " " + .state + " " + .error_code')" "model failed E-BUDGET-003"
check "not retried" "$(jbody .attempts)" 1

# --- approval mid-loop: each call of the tool that needs one parks the run
setup agp approve
ALICE=$(mkkey agp alice operator); BOB=$(mkkey agp bob operator)
check "approval policy" "$(aw_activate agp approval '{"approvers":["alice"],"threshold":1,"window_s":3600,"mode":"enforce"}' "$OP1" "$OP2")" true
R=$(submit "$(agent writer "hello-8" '["effect__web"]')")
wait_until 20 in_state "$R" waiting_approval
check "parked mid-loop" "$(state "$R")" waiting_approval
req GET "/v1/platform/runs/$R" "$OP1"
check "the parked call" "$(jbody '.steps[0].calls[-1] | .name + " " + .state')" "effect__web parked"
check "the rule names the call" "$(jbody '.steps[0].result.call')" 2
# bob is no approver
T=$(AWOOOP_KEY=$BOB "$BIN" approval mint --run "$R" --ttl 120 2>/dev/null)
req POST "/v1/platform/runs/$R/approve" "" "{\"token\":\"$T\"}"
check "bob is not an approver" "$(jbody .code)" E-APPROVAL-009
T=$(AWOOOP_KEY=$ALICE "$BIN" approval mint --run "$R" --ttl 120)
req POST "/v1/platform/runs/$R/approve" "" "{\"token\":\"$T\"}"
expect "alice approves" 200 .moved true
wait_until 20 "in_state $R waiting_approval && [ \"\$(api GET /v1/platform/runs/$R \"\$OP1\" | jq -r '.steps[0].calls[-1].seq')\" = 4 ]"
req GET "/v1/platform/runs/$R" "$OP1"
check "the next call parks again" "$(jbody '.state + " " + (.steps[0].calls[-1] | .name + " " + .state)')" \
  "waiting_approval effect__web parked"
check "the first one passed" "$(jbody '.steps[0].calls[1].state')" done
check "its effect happened once" "$(effects | jq -r --arg k "$R-1-2" '.[$k]')" 1
T=$(AWOOOP_KEY=$ALICE "$BIN" approval mint --run "$R" --ttl 120)
req POST "/v1/platform/runs/$R/approve" "" "{\"token\":\"$T\"}"
expect "alice approves the second call" 200 .moved true
wait_until 20 finished "$R"
req GET "/v1/platform/runs/$R" "$OP1"
check "finished after two approvals" "$(jbody .state)" succeeded
check "both effects in the answer" "$(jbody .steps[0].result.content)" "final: did q0 | did q1"
check "each effect once" "$(effects | jq -r --arg a "$R-1-2" --arg b "$R-1-4" '[.[$a], .[$b]] | join(",")')" "1,1"
check "two approvals audited" "$(jbody '[.transitions[] | select(.event == "approved")] | length')" 2

aw_done agent_api
