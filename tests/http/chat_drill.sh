#!/usr/bin/env bash
# The chat loop end to end (issue 42): the Telegram double, the fake model
# (turns=3: it asks for lookup, echo and effect, one per turn, then answers
# quoting their results) and the MCP double over HTTP (effect is not
# read-only and needs an approval).
# First one chat, watched closely:
#   - a message becomes a run whose input holds it; the agent calls tools;
#   - the progress message is edited with where the agent is ("..., turn N
#     of 8");
#   - the effect call parks the run and the chat gets Approve / Deny buttons;
#     a press by a mapped user whose principal is no approver is refused
#     (E-APPROVAL-009) and the run still waits; the approver's press lets it
#     go on, audited as that principal via telegram;
#   - the answer is posted once, as a reply to the message, and it is the
#     agent's content itself.
# Then RUNS chats at once while the `serve` process (worker and hub) is
# SIGKILLed at random points KILLS times (and started again each time), the
# approver pressing each prompt's button as it comes:
#   - every run succeeds with the same answer;
#   - no turn whose answer was journaled is asked again (one asked again had
#     its answer cut by a kill within WINDOW_MS - agent_drill.sh says why
#     "asked exactly once" cannot hold under SIGKILL);
#   - the effect happened once per call the journals show (one idempotency
#     key each, no other, none without);
#   - settled <= billed <= settled + reserved (the budget ledger against what
#     the fake model billed for the answers it delivered);
#   - each chat got its answer once (a second copy only where a kill cut a
#     send Telegram had recorded before it was marked sent: channels.md, "at
#     least once across a leader crash" - reported, and it must be that).
#   chat_drill.sh AWOOOP FAKE_LLM FAKE_MCP FAKE_TELEGRAM sqlite|postgres [RUNS] [KILLS]
set -uo pipefail
BIN=$1
FAKE_LLM=$2
FAKE_MCP=$3
FAKE_TG=$4
BACKEND=$5
RUNS=${6:-8}
KILLS=${7:-20}
. "$(dirname "$0")/lib.sh"

export TG_SECRET="7000002:AAH-chat-drill-token-$$"
export AWOOOP_T_CDR__TG_TOKEN=$TG_SECRET
fake_telegram_start "$FAKE_TG" TG_SECRET
"$FAKE_LLM" --name C >"$TMP/llm.out" 2>&1 &
PIDS+=($!)
"$FAKE_MCP" --http 0 --effect-ms 60 >"$TMP/mcp.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do
  LPORT=$(sed -n 's/^port //p' "$TMP/llm.out" 2>/dev/null); MPORT=$(head -1 "$TMP/mcp.out" 2>/dev/null)
  [ -n "$LPORT" ] && [ -n "$MPORT" ] && break; sleep 0.1
done
echo "{\"providers\": {\"openai\": {\"url\": \"http://127.0.0.1:$LPORT/v1\", \"api\": \"openai\"}}}" \
  >"$TMP/llm.json"
tg() { curl -s "$TG/control/stats"; }
inject() { curl -s -X POST -H 'Content-Type: application/json' --data-binary "{\"updates\":[$1]}" "$TG/control/updates" >/dev/null; }
msg() { # msg CHAT USER MESSAGE_ID TEXT
  jq -nc --arg c "$1" --arg u "$2" --arg m "$3" --arg t "$4" \
    '{message: {message_id: ($m | tonumber), chat: {id: ($c | tonumber)}, from: {id: ($u | tonumber)}, text: $t}}'
}
press() { # press RUN USER CALLBACK_ID CHAT
  inject "$(jq -nc --arg d "ap:$1:a" --arg u "$2" --arg id "$3" --arg c "$4" \
    '{callback_query: {id: $id, from: {id: ($u | tonumber)}, message: {message_id: 5, chat: {id: ($c | tonumber)}}, data: $d}}')"
}

aw_db "$BACKEND"
[ "$BACKEND" = postgres ] && aw_redis_db 8
FLAGS=(--llm-config "$TMP/llm.json" --egress-allow-private cdr --telegram-api "$TG"
  --channel-poll-timeout-s 1 --channel-lease-ms 1200 --heartbeat-ms 200 --lease-ms 1000
  --worker-poll-ms 100 --retry-base-ms 100 --retry-max-ms 500)
aw_serve "${FLAGS[@]}"
SERVE=${PIDS[-1]}
export AWOOOP_URL=$URL

api POST /v1/projects "$ADMIN" '{"id":"cdr"}' >/dev/null
OP1=$(mkkey cdr op1 operator); OP2=$(mkkey cdr op2 operator)
check "routing" "$(aw_activate cdr policy_routing '{"routes":[{"name":"agent","match":{"task":"agent"},
  "candidates":[{"provider":"openai","model":"c;turns=3;ttft=250"}]},
  {"name":"writer","match":{"task":"writer"},"candidates":[{"provider":"openai","model":"w;turns=2;pick=effect__web"}]}]}' "$OP1" "$OP2")" true
check "budget" "$(aw_activate cdr budget '{"period":"day","token_limit":100000000,"action_on_exceed":"block"}' "$OP1" "$OP2")" true
base=/v1/projects/cdr/contracts/mcp_tool/default/revisions
body=$(jq -nc --arg url "http://127.0.0.1:$MPORT/mcp" '{body: {
  upstreams: {web: {transport: "http", url: $url}},
  tools: [{name: "lookup", provider: "web", mode: "read_only"},
          {name: "echo", provider: "web", mode: "read_only"},
          {name: "effect", provider: "web", mode: "write", requires_approval: true},
          {name: "effects", provider: "web", mode: "read_only"}]}}')
rev=$(api POST "$base" "$OP1" "$body" | jq -r .revision_id)
api POST "$base/$rev/publish" "$OP1" >/dev/null
api POST "$base/$rev/approve" "$OP2" >/dev/null
check "tools" "$(api POST "$base/$rev/activate" "$OP1" | jq -r .activated)" true
CHATS=$(seq 1 "$RUNS" | jq -R '{chat_id: ("-20" + .)}' | jq -sc '. + [{chat_id: "-100"}]')
CH=$(jq -nc --argjson chats "$CHATS" '{
  channels: [{platform: "telegram", bot: {name: "ops", token: "env:TG_TOKEN"}, chats: $chats,
    users: [{user_id: "111", principal: "alice"}, {user_id: "222", principal: "bob"}],
    rules: [{event: "message", match: "^ask ", run_template: "ask"},
            {event: "message", match: "^write ", run_template: "write"}]}],
  templates: {write: {workflow: [{kind: "agent", args: {model: "writer",
    input: {"$ref": "/input/text"}, tools: ["effect__web"]}}]},
    ask: {max_attempts: 100, workflow: [{name: "agent", kind: "agent", args: {
    model: "agent", system: "You answer from the tools.", input: {"$ref": "/input/text"},
    tools: ["lookup__web", "echo__web", "effect__web"], max_turns: 8}}]}},
  progress_interval_s: 1}')
check "channel" "$(aw_activate cdr channel_event "$CH" "$OP1" "$OP2")" true
# last: once it is active, alice alone approves contracts too
check "approval policy" "$(aw_activate cdr approval '{"approvers":["alice"],"threshold":1,"window_s":3600,"mode":"enforce"}' "$OP1" "$OP2")" true
WANT="final: found q0 | q1 | did q2"

# --- one chat, watched closely
inject "$(msg -100 111 41 "ask one-$$")"
RUN=""
first_run() { RUN=$(api GET "/v1/platform/runs?limit=1" "$OP1" | jq -r '.items[0].run_id // empty'); [ -n "$RUN" ]; }
wait_until 10 first_run
check "a run started from the message" "$([ -n "$RUN" ] && echo yes)" yes
check "its input holds the message" "$(api GET "/v1/platform/runs/$RUN" "$OP1" | jq -c '.input | {text, chat_id, user_id, message_id}')" \
  "{\"text\":\"ask one-$$\",\"chat_id\":\"-100\",\"user_id\":\"111\",\"message_id\":41}"
prompted() { [ "$(tg | jq --arg r "ap:$RUN:a" '[.messages[] | select(.markup.inline_keyboard[0][0].callback_data == $r)] | length')" -ge 1 ]; }
wait_until 20 prompted
check "the chat got Approve / Deny" "$(tg | jq -r --arg r "$RUN" '[.messages[] | select(.markup != null and (.text | contains($r)))][0].text | contains("call the tool effect__web")')" true
check "the run waits mid-loop" "$(api GET "/v1/platform/runs/$RUN" "$OP1" | jq -r '.state + " " + (.steps[0].calls[-1] | .name + " " + .state)')" \
  "waiting_approval effect__web parked"
check "tools called before it" "$(api GET "/v1/platform/runs/$RUN" "$OP1" | jq -r '[.steps[0].calls[] | select(.kind == "tool" and .state == "done") | .name] | join(",")')" \
  "lookup__web,echo__web"
press "$RUN" 222 cbq-bob -100
answered() { [ "$(tg | jq --arg i "$1" '[.answers[] | select(.callback_query_id == $i)] | length')" -ge 1 ]; }
wait_until 10 answered cbq-bob
check "a mapped non-approver's press refused" "$(tg | jq -r '.answers[] | select(.callback_query_id == "cbq-bob") | .text | startswith("E-APPROVAL-009")')" true
check "the run still waits" "$(api GET "/v1/platform/runs/$RUN" "$OP1" | jq -r .state)" waiting_approval
press "$RUN" 111 cbq-alice -100
final_in() { [ "$(tg | jq --arg c "$1" --arg w "${2:-$WANT}" '[.messages[] | select(.chat_id == $c and .text == $w)] | length')" -ge 1 ]; }
wait_until 20 final_in -100
tg >"$TMP/s1"
check "the approver's press recorded" "$(jq -r '.answers[] | select(.callback_query_id == "cbq-alice") | .text | startswith("Approval recorded")' "$TMP/s1")" true
req GET "/v1/platform/runs/$RUN" "$OP1"
check "the run succeeded" "$(jbody .state)" succeeded
check "decided as alice via telegram" "$(jbody '[.transitions[] | select(.event == "approved") | .via + " " + .approver] | join(",")')" "telegram alice"
check "the answer is posted once, as the reply" "$(jq -c --arg w "$WANT" '[.messages[] | select(.chat_id == "-100" and .text == $w) | .reply_to]' "$TMP/s1")" "[41]"
PMSG=$(jq -r --arg s "${RUN:0:8}" '[.messages[] | select(.text | contains("Run " + $s + ":"))][0].message_id' "$TMP/s1")
check "one progress message" "$(jq --arg s "${RUN:0:8}" '[.messages[] | select(.text | contains("Run " + $s + ":"))] | length' "$TMP/s1")" 1
check "its edits say where the agent is" "$(jq --argjson m "$PMSG" '[.edits[] | select(.message_id == $m and (.text | test("(calling [a-z_]+|thinking|waiting for approval of [a-z_]+), turn [1-4] of 8")))] | length >= 1' "$TMP/s1")" true
jq -r --argjson m "$PMSG" '.edits[] | select(.message_id == $m) | "  edit: " + .text' "$TMP/s1" >&2

# --- an agent that needs two approvals: each wait gets its own buttons
inject "$(msg -100 111 42 "write two-$$")"
prompts() { [ "$(tg | jq '[.messages[] | select(.chat_id == "-100" and .markup != null)] | length')" -ge "$1" ]; }
wait_until 20 prompts 2
W=$(tg | jq -r '[.messages[] | select(.chat_id == "-100" and .markup != null)][1].markup.inline_keyboard[0][0].callback_data' | cut -d: -f2)
check "the first wait prompted" "$(api GET "/v1/platform/runs/$W" "$OP1" | jq -r .state)" waiting_approval
press "$W" 111 cbq-w1 -100
wait_until 20 prompts 3
check "the second wait prompted again" "$(tg | jq -r --arg r "$W" '[.messages[] | select(.markup != null and (.text | contains($r)))] | map(.text | test("call [0-9]+\\)$")) | [length, all] | map(tostring) | join(" ")')" "2 true"
press "$W" 111 cbq-w2 -100
wait_until 20 final_in -100 "final: did q0 | did q1"
check "two approvals, one answer" "$(tg | jq '[.messages[] | select(.chat_id == "-100" and .text == "final: did q0 | did q1")] | length')" 1

# --- RUNS chats while serve is SIGKILLed KILLS times
for i in $(seq 1 "$RUNS"); do inject "$(msg "-20$i" 111 "$((100 + i))" "ask drill-$i")"; done
# the approver presses each prompt once, as it comes (a press a kill cut is
# fetched again: the hub commits an update's offset with what it did)
(
  declare -A seen
  while :; do
    for d in $(tg | jq -r '.messages[] | select(.markup != null) | .markup.inline_keyboard[0][0].callback_data + "|" + .chat_id'); do
      r=${d#ap:}; r=${r%%:*}; c=${d##*|}
      [ -n "${seen[$r]:-}" ] && continue
      seen[$r]=1
      press "$r" 111 "cbq-$r" "$c"
    done
    sleep 0.2
  done
) &
PRESSER=$!
PIDS+=("$PRESSER")
T0=$EPOCHREALTIME
KILLED=(); KILLED_MONO=()
for k in $(seq 1 "$KILLS"); do
  sleep "0.$((RANDOM % 9 + 1))"
  KILLED+=("$(date +%s%3N)")
  KILLED_MONO+=("$(awk '{ printf "%d", $1 * 1000 }' /proc/uptime)")
  kill -9 "$SERVE"
  wait "$SERVE" 2>/dev/null
  aw_serve_again "${FLAGS[@]}"
done
finished_all() {
  [ "$(api GET "/v1/platform/runs?limit=200" "$OP1" | jq '[.items[] | select(.state == "succeeded" or .state == "failed" or .state == "cancelled")] | length')" = $((RUNS + 2)) ]
}
wait_until 60 finished_all
all_answered() {
  local i
  for i in $(seq 1 "$RUNS"); do final_in "-20$i" || return 1; done
}
wait_until 20 all_answered
T1=$EPOCHREALTIME
kill "$PRESSER" 2>/dev/null

IDS=$(api GET "/v1/platform/runs?limit=200" "$OP1" | jq -r --arg r "$RUN" --arg w "$W" '.items[] | select(.run_id != $r and .run_id != $w) | .run_id')
ok_runs=0; same=0; keys_want=()
for id in $IDS; do
  v=$(api GET "/v1/platform/runs/$id" "$OP1")
  [ "$(jq -r .state <<<"$v")" = succeeded ] && ok_runs=$((ok_runs + 1))
  [ "$(jq -r '.steps[0].result.content' <<<"$v")" = "$WANT" ] && same=$((same + 1))
  while read -r seq; do keys_want+=("$id-1-$seq"); done < <(jq -r \
    '.steps[0].calls[]? | select(.kind == "tool" and .name == "effect__web" and .state == "done") | .seq' <<<"$v")
done
check "every run succeeded" "$ok_runs" "$RUNS"
check "every run has the same answer" "$same" "$RUNS"

S=$(curl -s "http://127.0.0.1:$LPORT/stats")
check "each turn answered" "$(jq '[.answered | to_entries[] | select(.key | startswith("ask drill-"))] | length' <<<"$S")" $((RUNS * 4))
WINDOW_MS=${WINDOW_MS:-$(awk -v k="${AW_TEST_TIMEOUT_SCALE:-1}" 'BEGIN { printf "%d", 500 * k }')}
TWICE=$(jq -c '[.answered_at | to_entries[] | select((.key | startswith("ask drill-")) and (.value | length) > 1) | .value[0]]' <<<"$S")
KJ=$(printf '%s\n' "${KILLED[@]}" | jq -sc .)
LATE=$(jq -n --argjson t "$TWICE" --argjson k "$KJ" --argjson w "$WINDOW_MS" \
  '[$t[] | . as $a | select([$k[] | select(. >= $a - 50 and . <= $a + $w)] | length == 0)] | length')
check "no turn asked again but one a kill cut before its journal" "$LATE" 0
REASKED=$(jq '[.turns | to_entries[] | select(.key | startswith("ask drill-")) | .value - 1] | add' <<<"$S")

MSID=$(curl -s -D - -o /dev/null -X POST -H "Authorization: Bearer $OP1" -H 'Content-Type: application/json' \
  -H 'Accept: application/json' --data-binary '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
  "$URL/v1/projects/cdr/mcp" | tr -d '\r' | awk -F': ' 'tolower($1) == "mcp-session-id" { print $2 }')
EFF=$(curl -s -X POST -H "Authorization: Bearer $OP1" -H 'Content-Type: application/json' \
  -H 'Accept: application/json' -H "Mcp-Session-Id: $MSID" \
  --data-binary '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"effects__web","arguments":{}}}' \
  "$URL/v1/projects/cdr/mcp" | jq -r '.result.content[0].text')
EFF_DRILL=$(jq -c --arg r "$RUN" --arg w "$W" 'with_entries(select((.key | startswith($r)) or (.key | startswith($w)) | not))' <<<"$EFF")
check "one effect call per run in the journals" "${#keys_want[@]}" "$RUNS"
check "the effects are those calls' keys, each once" \
  "$(jq -c 'keys | sort' <<<"$EFF_DRILL")" "$(printf '%s\n' "${keys_want[@]}" | jq -R . | jq -sc sort)"
check "no call without a key" "$(jq -r '."-" // 0' <<<"$EFF")" 0
REPEATED=$(jq '[.[] | . - 1] | add' <<<"$EFF_DRILL")

B=$(api GET /v1/projects/cdr/budget "$OP1")
SETTLED=$(jq .settled <<<"$B"); HELD=$(jq .reserved <<<"$B"); BILLED=$(jq .billed_answered <<<"$S")
check "settled no more than the model billed" "$([ "$SETTLED" -le "$BILLED" ] && echo yes)" yes
check "the rest is held, to be charged in full" "$([ "$BILLED" -le $((SETTLED + HELD)) ] && echo yes)" yes

# each chat's answer: once, as the reply to its message; a second copy only
# where a kill landed within WINDOW_MS after Telegram recorded the first
# (the double's clock is CLOCK_MONOTONIC, /proc/uptime's is CLOCK_BOOTTIME:
# the same on a machine that does not sleep)
tg >"$TMP/s2"
KM=$(printf '%s\n' "${KILLED_MONO[@]}" | jq -sc .)
one=0; dup=0; dup_unexplained=0; replies=0
for i in $(seq 1 "$RUNS"); do
  n=$(jq --arg c "-20$i" --arg w "$WANT" '[.messages[] | select(.chat_id == $c and .text == $w)] | length' "$TMP/s2")
  [ "$(jq --arg c "-20$i" --arg w "$WANT" '[.messages[] | select(.chat_id == $c and .text == $w)][0].reply_to' "$TMP/s2")" = $((100 + i)) ] &&
    replies=$((replies + 1))
  if [ "$n" = 1 ]; then one=$((one + 1)); elif [ "$n" -gt 1 ]; then
    dup=$((dup + 1))
    at=$(jq --arg c "-20$i" --arg w "$WANT" '[.messages[] | select(.chat_id == $c and .text == $w)][0].at_ms' "$TMP/s2")
    [ "$(jq -n --argjson k "$KM" --argjson a "$at" --argjson w "$WINDOW_MS" '[$k[] | select(. >= $a - 50 and . <= $a + $w)] | length')" = 0 ] &&
      dup_unexplained=$((dup_unexplained + 1))
  fi
done
check "each chat got its answer" "$((one + dup))" "$RUNS"
check "as the reply to its message" "$replies" "$RUNS"
check "a second copy only where a kill cut its send" "$dup_unexplained" 0
check "the token never in logs" "$(grep -c "chat-drill-token" "$TMP/server.log")" 0
ELAPSED=$(awk -v a="$T0" -v b="$T1" 'BEGIN { printf "%.1f", b - a }')
echo "chat_drill ($BACKEND): $RUNS chats, $KILLS kills in ${ELAPSED}s; turns asked again after a kill cut them: $REASKED (answered before the cut: $(jq length <<<"$TWICE")); effect calls the keys absorbed: $REPEATED; billed $BILLED tokens, settled $SETTLED, $((BILLED - SETTLED)) held for the reaper; answers sent twice (a kill cut the send): $dup"
aw_done "chat_drill_$BACKEND"
