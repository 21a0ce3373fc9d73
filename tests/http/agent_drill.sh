#!/usr/bin/env bash
# The agent step's kill drill: agent runs in flight while the `serve`
# process that works them is SIGKILLed at random points 20 times (and started
# again each time). Then:
#   - every run finished, succeeded, with the same answer (it quotes every
#     tool's result, in order);
#   - the fake model was asked each turn of each run once, but for a turn
#     whose call a kill cut before its answer was journaled: asked again, as
#     it must be (the drill reports how many; for one whose answer had
#     reached the worker, a kill must have landed within WINDOW_MS of it);
#   - each call of the non-read-only tool carried its idempotency key
#     "<run>-1-<seq>", one key per call the journals show and no other: the
#     tool server performed each effect once (the drill reports repetitions
#     the keys absorbed);
#   - the budget settled no more than the fake model billed for the answers
#     it delivered, and what it has not settled yet (a kill between an answer
#     and its settlement) is still reserved, to be charged at the held amount.
#   agent_drill.sh AWOOOP_BINARY FAKE_LLM FAKE_MCP sqlite|postgres [RUNS] [KILLS]
set -uo pipefail
BIN=$1
FAKE_LLM=$2
FAKE_MCP=$3
BACKEND=$4
RUNS=${5:-16}
KILLS=${6:-20}
. "$(dirname "$0")/lib.sh"

"$FAKE_LLM" --name D >"$TMP/llm.out" 2>&1 &
PIDS+=($!)
"$FAKE_MCP" --http 0 --effect-ms 60 >"$TMP/mcp.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do
  LPORT=$(sed -n 's/^port //p' "$TMP/llm.out"); MPORT=$(head -1 "$TMP/mcp.out")
  [ -n "$LPORT" ] && [ -n "$MPORT" ] && break; sleep 0.1
done
echo "{\"providers\": {\"openai\": {\"url\": \"http://127.0.0.1:$LPORT/v1\", \"api\": \"openai\"}}}" \
  >"$TMP/llm.json"
aw_db "$BACKEND"
FLAGS=(--llm-config "$TMP/llm.json" --egress-allow-private drl --heartbeat-ms 200
  --lease-ms 1000 --worker-poll-ms 100 --retry-base-ms 100 --retry-max-ms 500)
aw_serve "${FLAGS[@]}"
SERVE=${PIDS[-1]}
export AWOOOP_URL=$URL


api POST /v1/projects "$ADMIN" '{"id":"drl"}' >/dev/null
OP1=$(mkkey drl op1 operator); OP2=$(mkkey drl op2 operator)
check "routing" "$(aw_activate drl policy_routing '{"routes":[{"name":"agent","match":{"task":"agent"},
  "candidates":[{"provider":"openai","model":"d;turns=6;ttft=150"}]}]}' "$OP1" "$OP2")" true
check "budget" "$(aw_activate drl budget '{"period":"day","token_limit":100000000,"action_on_exceed":"block"}' "$OP1" "$OP2")" true
base=/v1/projects/drl/contracts/mcp_tool/default/revisions
body=$(jq -nc --arg url "http://127.0.0.1:$MPORT/mcp" '{body: {
  upstreams: {web: {transport: "http", url: $url}},
  tools: [{name: "lookup", provider: "web", mode: "read_only"},
          {name: "effect", provider: "web", mode: "write"},
          {name: "effects", provider: "web", mode: "read_only"}]}}')
rev=$(api POST "$base" "$OP1" "$body" | jq -r .revision_id)
api POST "$base/$rev/publish" "$OP1" >/dev/null
api POST "$base/$rev/approve" "$OP2" >/dev/null
check "tools" "$(api POST "$base/$rev/activate" "$OP1" | jq -r .activated)" true

IDS=()
T0=$EPOCHREALTIME
for i in $(seq 1 "$RUNS"); do
  IDS+=("$(api POST /v1/platform/runs "$OP1" "{\"input\":{\"q\":\"drill-$i\"},\"max_attempts\":100,
    \"workflow\":[{\"kind\":\"agent\",\"args\":{\"model\":\"agent\",\"input\":{\"\$ref\":\"/input/q\"},
    \"tools\":[\"lookup__web\",\"effect__web\"],\"max_turns\":10}}]}" | jq -r .run_id)")
done
check "submitted" "$(printf '%s\n' "${IDS[@]}" | grep -c -- -)" "$RUNS"

finished_all() {
  local n
  n=$(api GET "/v1/platform/runs?limit=200" "$OP1" |
    jq '[.items[] | select(.state == "succeeded" or .state == "failed" or .state == "cancelled")] | length')
  [ "$n" = "$RUNS" ]
}
# the kills: at a random point 0.1..0.9 s after each start
KILLED=()
for k in $(seq 1 "$KILLS"); do
  sleep "0.$((RANDOM % 9 + 1))"
  KILLED+=("$(date +%s%3N)")
  kill -9 "$SERVE"
  wait "$SERVE" 2>/dev/null
  aw_serve_again "${FLAGS[@]}"
done
wait_until 60 finished_all
T1=$EPOCHREALTIME

WANT="final: found q0 | did q1 | found q2 | did q3 | found q4 | did q5"
ok_runs=0; same=0; keys_want=()
for id in "${IDS[@]}"; do
  v=$(api GET "/v1/platform/runs/$id" "$OP1")
  [ "$(jq -r .state <<<"$v")" = succeeded ] && ok_runs=$((ok_runs + 1))
  [ "$(jq -r '.steps[0].result.content' <<<"$v")" = "$WANT" ] && same=$((same + 1))
  while read -r seq; do keys_want+=("$id-1-$seq"); done < <(jq -r \
    '.steps[0].calls[]? | select(.kind == "tool" and .name == "effect__web") | .seq' <<<"$v")
done
check "every run succeeded" "$ok_runs" "$RUNS"
check "every run has the same answer" "$same" "$RUNS"

S=$(curl -s "http://127.0.0.1:$LPORT/stats")
turns=$((RUNS * 7))
check "each turn answered" "$(jq '[.answered | to_entries[] | select(.key | startswith("drill-"))] | length' <<<"$S")" "$turns"
# a turn answered twice: its first answer reached a worker that was killed
# before it journaled it - a kill within WINDOW_MS after that answer (the
# answer's read, its settlement and the journal's commit); an answer the
# worker outlived by more is never asked for again
WINDOW_MS=${WINDOW_MS:-$(awk -v k="${AW_TEST_TIMEOUT_SCALE:-1}" 'BEGIN { printf "%d", 500 * k }')}
TWICE=$(jq -c '[.answered_at | to_entries[] | select((.key | startswith("drill-")) and (.value | length) > 1) | .value[0]]' <<<"$S")
LATE=$(jq -n --argjson t "$TWICE" --argjson k "$(printf '%s\n' "${KILLED[@]}" | jq -sc .)" --argjson w "$WINDOW_MS" \
  '[$t[] | . as $a | select([$k[] | select(. >= $a - 50 and . <= $a + $w)] | length == 0)] | length')
check "no turn asked again but one a kill cut before its journal" "$LATE" 0
[ "$LATE" = 0 ] || jq -c --argjson k "$(printf '%s\n' "${KILLED[@]}" | jq -sc .)" \
  '{kills: $k, twice: [.answered_at | to_entries[] | select((.key | startswith("drill-")) and (.value | length) > 1)]}' <<<"$S" >&2
REASKED=$(jq '[.turns | to_entries[] | select(.key | startswith("drill-")) | .value - 1] | add' <<<"$S")

# the effects: one key per effect call of the journals, no other key
MSID=$(curl -s -D - -o /dev/null -X POST -H "Authorization: Bearer $OP1" -H 'Content-Type: application/json' \
  -H 'Accept: application/json' --data-binary '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
  "$URL/v1/projects/drl/mcp" | tr -d '\r' | awk -F': ' 'tolower($1) == "mcp-session-id" { print $2 }')
EFF=$(curl -s -X POST -H "Authorization: Bearer $OP1" -H 'Content-Type: application/json' \
  -H 'Accept: application/json' -H "Mcp-Session-Id: $MSID" \
  --data-binary '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"effects__web","arguments":{}}}' \
  "$URL/v1/projects/drl/mcp" | jq -r '.result.content[0].text')
check "three effect calls per run in the journals" "${#keys_want[@]}" $((RUNS * 3))
check "the effects are those calls' keys, each once" \
  "$(jq -c 'keys | sort' <<<"$EFF")" "$(printf '%s\n' "${keys_want[@]}" | jq -R . | jq -sc sort)"
check "no call without a key" "$(jq -r '."-" // 0' <<<"$EFF")" 0
REPEATED=$(jq '[.[] | . - 1] | add' <<<"$EFF")

B=$(api GET /v1/projects/drl/budget "$OP1"); [ -n "${KEEP:-}" ] && echo "$B" && jq -c "{answered, billed_answered, billed_prompt, billed_completion}" <<<"$S"
SETTLED=$(jq .settled <<<"$B"); HELD=$(jq .reserved <<<"$B"); BILLED=$(jq .billed_answered <<<"$S")
# the gateway settles a call after it answers (its recorder): a kill in
# between leaves the call's reservation held until the budget reaper charges
# it at the held amount - never less than what the model billed
check "settled no more than the model billed" "$([ "$SETTLED" -le "$BILLED" ] && echo yes)" yes
check "the rest is held, to be charged in full" "$([ "$BILLED" -le $((SETTLED + HELD)) ] && echo yes)" yes
check "the ledger's settled lines are the calls'" "$(jq '.ledger.settle.tokens' <<<"$B")" "$SETTLED"
ELAPSED=$(awk -v a="$T0" -v b="$T1" 'BEGIN { printf "%.1f", b - a }')
echo "agent_drill ($BACKEND): $RUNS runs, $KILLS kills in ${ELAPSED}s; turns asked again after a kill cut them: $REASKED (answered before the cut: $(jq length <<<"$TWICE")); effect calls the keys absorbed: $REPEATED; billed $BILLED tokens, settled $SETTLED, $((BILLED - SETTLED)) of them still held for the reaper"
aw_done agent_drill
