#!/usr/bin/env bash
# The channel hub against the Telegram double: a message starts a run from
# the channel's template and gets one progress message edited every second
# (never "not modified") and a final answer; /status answers from the run
# runtime; a run that waits for approval gets Approve / Deny buttons and a
# mapped user's press resumes it as that user's principal (an unmapped one,
# and one mapped to a principal the approval policy does not list, are told
# no); queued
# messages are delivered exactly once under injected 429s and 5xx without
# exceeding 1 msg/s per chat or 30 msg/s per bot; a duplicate is sent once
# and a silenced chat gets nothing; the bot token never shows.
#   channel_test.sh AWOOOP_BINARY FAKE_TELEGRAM_BINARY sqlite|postgres [N_MESSAGES]
set -uo pipefail
BIN=$1
FAKE=$2
BACKEND=$3
N=${4:-300}
. "$(dirname "$0")/lib.sh"

export TG_SECRET="7000001:AAH-canary-bot-token-$$"
export AWOOOP_T_CHT__TG_TOKEN=$TG_SECRET
fake_telegram_start "$FAKE" TG_SECRET
stats() { curl -s "$TG/control/stats"; }
inject() { curl -s -X POST -H 'Content-Type: application/json' --data-binary "$1" "$TG/control/updates" >/dev/null; }
msg() { # msg CHAT USER TEXT -> an update body
  jq -nc --arg c "$1" --arg u "$2" --arg t "$3" \
    '{message: {message_id: 1, chat: {id: ($c | tonumber)}, from: {id: ($u | tonumber)}, text: $t}}'
}

aw_db "$BACKEND"
[ "$BACKEND" = postgres ] && aw_redis_db 3
sql() {
  if [ "$BACKEND" = postgres ]; then
    psql -qAt -h "$AWOOOP_TEST_PG_HOST" -p "$AWOOOP_TEST_PG_PORT" -U postgres -d "$PGDB" -c "SET search_path = awooop; $1"
  else
    sqlite3 "$TMP/awooop.db" "$1"
  fi
}
# sent COUNT JQ-FILTER: at least COUNT of the double's messages pass the filter
sent() { [ "$(stats | jq "[.messages[] | select($2)] | length")" -ge "$1" ]; }
export AWOOOP_T_CHW__TG_TOKEN=$TG_SECRET AWOOOP_T_CHW__HOOK_SECRET="hook-secret-$$"
aw_serve --telegram-api "$TG" --channel-poll-timeout-s 1 --channel-lease-ms 1500 \
  --channel-webhook-url https://hooks.example.com
api POST /v1/projects "$ADMIN" '{"id":"cht"}' >/dev/null
K1=$(mkkey cht pub operator); K2=$(mkkey cht appr operator)
CHATS=$(seq 1 99 | jq -R '{chat_id: ("-10" + .)}' | jq -sc '. + [{chat_id: "-100"}]')
BODY=$(jq -nc --argjson chats "$CHATS" '{
  channels: [{platform: "telegram", bot: {name: "ops", token: "env:TG_TOKEN"},
    chats: $chats,
    users: [{user_id: "111", principal: "alice"}, {user_id: "222", principal: "bob"}],
    rules: [{event: "command", command: "/deploy", run_template: "deploy"},
            {event: "message", match: "(?i)hello", run_template: "greet"}]}],
  templates: {
    deploy: {workflow: [{kind: "approval", args: {summary: "deploy to prod"}}, {kind: "noop"}]},
    greet: {workflow: [{kind: "sleep", args: {ms: 1500}}, {kind: "sleep", args: {ms: 1500}}, {kind: "noop"}]}},
  progress_interval_s: 1,
  silences: [{chat_id: "-2000", until: "2099-01-01T00:00:00Z", reason: "test"}]}')
check "activate" "$(aw_activate cht channel_event "$BODY" "$K1" "$K2")" true
# a rule's pattern is compiled when the revision is written: glibc's regcomp
# crashed the server (and again after each restart) on this one
BAD=$(echo "$BODY" | jq -c '.channels[0].rules[1].match = "(|)(\\1\\1)*"')
req POST /v1/projects/cht/contracts/channel_event/default/revisions "$K1" "{\"body\":$BAD}"
expect "back-reference pattern refused" 422 .code E-CONTRACT-001
check "its pointer" "$(jbody .pointer)" /channels/0/rules/1/match
BAD=$(echo "$BODY" | jq -c '.channels[0].rules[1].match = "(unclosed"')
req POST /v1/projects/cht/contracts/channel_event/default/revisions "$K1" "{\"body\":$BAD}"
expect "broken pattern refused" 422 .code E-CONTRACT-001

# --- a message starts a run; progress edited every second; final answer
inject "{\"updates\":[$(msg -100 111 'hello there')]}"
RUN=""
first_run() { RUN=$(api GET "/v1/platform/runs?limit=1" "$K1" | jq -r '.items[0].run_id // empty'); [ -n "$RUN" ]; }
wait_until 10 first_run
check "run started from the message" "$([ -n "$RUN" ] && echo yes)" yes
wait_until 15 sent 1 '.text | contains("Run '"$RUN"' succeeded")'
stats >"$TMP/s1"
check "final answer sent" "$(jq --arg r "$RUN" '[.messages[] | select(.text | contains("Run " + $r + " succeeded"))] | length' "$TMP/s1")" 1
check "the final message replies to the one that started the run" "$(jq --arg r "$RUN" '[.messages[] | select(.text | contains("Run " + $r + " succeeded"))][0].reply_to' "$TMP/s1")" 1
check "the run's input holds the message" "$(api GET "/v1/platform/runs/$RUN" "$K1" | jq -c '.input | {text, chat_id, user_id, message_id}')" '{"text":"hello there","chat_id":"-100","user_id":"111","message_id":1}'
PID_MSG=$(jq -r --arg s "${RUN:0:8}" '[.messages[] | select(.text | contains("Run " + $s + ":"))][0].message_id' "$TMP/s1")
check "one progress message" "$(jq --arg s "${RUN:0:8}" '[.messages[] | select(.text | contains("Run " + $s + ":"))] | length' "$TMP/s1")" 1
EDITS=$(jq --argjson m "$PID_MSG" '[.edits[] | select(.message_id == $m)] | length' "$TMP/s1")
check "progress edited (>= 2 edits)" "$([ "$EDITS" -ge 2 ] && echo yes)" yes
check "last edit says succeeded" "$(jq -r --argjson m "$PID_MSG" '[.edits[] | select(.message_id == $m)] | last | .text | contains("succeeded")' "$TMP/s1")" true
GAP=$(jq --argjson m "$PID_MSG" '[.edits[] | select(.message_id == $m) | .at_ms] | [range(1; length) as $i | .[$i] - .[$i-1]] | min // 9999' "$TMP/s1")
check "edits at least the interval apart (but the last)" "$(jq --argjson m "$PID_MSG" '[.edits[] | select(.message_id == $m) | .at_ms] | .[0:-1] | [range(1; length) as $i | .[$i] - .[$i-1]] | all(. >= 950)' "$TMP/s1")" true
check "never 'not modified'" "$(jq .not_modified "$TMP/s1")" 0
echo "progress: $EDITS edits, smallest gap ${GAP} ms" >&2

# --- /status from the run runtime
inject "{\"updates\":[$(msg -100 111 "/status $RUN")]}"
wait_until 5 sent 1 '.text == "Run '"$RUN"': succeeded, 3 of 3 steps done"'
check "/status answered" "$(stats | jq --arg r "$RUN" '[.messages[] | select(.text | startswith("Run " + $r + ": succeeded"))] | length')" 1

# --- approval buttons: a user decides as the principal mapped to it, and
# only where that principal is an approver (alice is, bob is not; 999 is
# nobody's)
check "approval policy" "$(aw_activate cht approval '{"approvers":["alice","appr"],"threshold":1,"window_s":3600,"mode":"enforce"}' "$K1" "$K2")" true
inject "{\"updates\":[$(msg -100 111 '/deploy now')]}"
DRUN=""
prompted() {
  DRUN=$(stats | jq -r '[.messages[] | select(.markup != null)][0].markup.inline_keyboard[0][0].callback_data // empty' | cut -d: -f2)
  [ -n "$DRUN" ]
}
wait_until 10 prompted
check "prompt with buttons" "$([ -n "$DRUN" ] && echo yes)" yes
check "run waits" "$(api GET "/v1/platform/runs/$DRUN" "$K1" | jq -r .state)" waiting_approval
cb() { jq -nc --arg d "$1" --arg u "$2" --arg id "$3" '{callback_query: {id: $id, from: {id: ($u | tonumber)}, message: {message_id: 5, chat: {id: -100}}, data: $d}}'; }
inject "{\"updates\":[$(cb "ap:$DRUN:a" 999 cbq-1)]}"
inject "{\"updates\":[$(cb "ap:$DRUN:a" 222 cbq-3)]}"
answered() { [ "$(stats | jq '.answers | length')" -ge "$1" ]; }
wait_until 5 answered 2
check "a mapped non-approver told no" "$(stats | jq -r '.answers[] | select(.callback_query_id == "cbq-3") | .text | startswith("E-APPROVAL-009")')" true
check "run still waits" "$(api GET "/v1/platform/runs/$DRUN" "$K1" | jq -r .state)" waiting_approval
inject "{\"updates\":[$(cb "ap:$DRUN:a" 111 cbq-2)]}"
wait_until 10 '[ "$(api GET "/v1/platform/runs/$DRUN" "$K1" | jq -r .state)" = succeeded ]'
check "approved by button, finished" "$(api GET "/v1/platform/runs/$DRUN" "$K1" | jq -r .state)" succeeded
wait_until 5 answered 3
check "unmapped user told no" "$(stats | jq -r '.answers[] | select(.callback_query_id == "cbq-1") | .text | contains("not an approver")')" true
check "mapped user's press recorded" "$(stats | jq -r '.answers[] | select(.callback_query_id == "cbq-2") | .text | startswith("Approval recorded")')" true
req GET "/v1/platform/runs/$DRUN" "$K1"
check "decision audited as telegram" "$(jbody '[.transitions[] | select(.event == "approved" and .via == "telegram" and .approver == "alice")] | length')" 1
check "no decision as anyone else" "$(jbody '[.transitions[] | select(.approver != null and .approver != "alice")] | length')" 0

# --- delivery: N messages, 10% 429 and 5% 5xx, each delivered once, rates held
curl -s -X POST --data-binary '{"p429":0.10,"p5xx":0.05,"retry_after":1}' "$TG/control/faults" >/dev/null
T0=$(date +%s%N)
for i in $(seq 1 "$N"); do
  printf '{"chat_id":"-10%d","text":"m-%d-%d"}\n' $(( (i % 99) + 1 )) $$ "$i"
done | while read -r b; do
  curl -s -o /dev/null -w '%{http_code}\n' -X POST -H "Authorization: Bearer $K1" -H 'Content-Type: application/json' \
    --data-binary "$b" "$URL/v1/projects/cht/channels/ops/messages" >>"$TMP/queued"
done
# a duplicate (same text, same chat) and a silenced chat
req POST /v1/projects/cht/channels/ops/messages "$K1" '{"chat_id":"-101","text":"dup-'"$$"'"}'
expect "queued" 202 .state pending
req POST /v1/projects/cht/channels/ops/messages "$K1" '{"chat_id":"-101","text":"dup-'"$$"'"}'
req POST /v1/projects/cht/channels/ops/messages "$K1" '{"chat_id":"-2000","text":"hush-'"$$"'"}'
req POST /v1/projects/cht/channels/ops/messages "$K1" '{"chat_id":"x","text":"bad"}'
expect "bad chat id" 400 .code E-REQ-005
check "all queued (202)" "$(grep -c 202 "$TMP/queued")" "$N"
wait_until 120 sent "$N" '.text | startswith("m-'"$$"'-")'
T1=$(date +%s%N)
# every message settled (sent, deduplicated, silenced or failed): nothing
# left to send twice
nothing_pending() { [ "$(sql "SELECT count(*) FROM outbound_messages WHERE state = 'pending'")" = 0 ]; }
wait_until 10 nothing_pending
Q="SELECT state, count(*), max(attempts), max(coalesce(error, '')) FROM outbound_messages GROUP BY state"
if [ "$BACKEND" = postgres ]; then
  psql -qAt -h "$AWOOOP_TEST_PG_HOST" -p "$AWOOOP_TEST_PG_PORT" -U postgres -d "$PGDB" -c "SET search_path = awooop; $Q" >&2
else
  sqlite3 "$TMP/awooop.db" "$Q" >&2
fi
stats >"$TMP/s2"
check "all $N delivered" "$(jq '[.messages[] | select(.text | startswith("m-'"$$"'-"))] | length' "$TMP/s2")" "$N"
check "each exactly once" "$(jq '[.messages[] | select(.text | startswith("m-'"$$"'-")) | .text] | (length == (unique | length))' "$TMP/s2")" true
check "429s were injected" "$(jq '.injected_429 > 0' "$TMP/s2")" true
check "5xx were injected" "$(jq '.injected_5xx > 0' "$TMP/s2")" true
check "no rate violation" "$(jq .rate_violations "$TMP/s2")" 0
check "per chat <= 1/s" "$(jq '.max_chat_per_s <= 1' "$TMP/s2")" true
check "per bot <= 30/s" "$(jq '.max_bot_per_s <= 30' "$TMP/s2")" true
check "duplicate sent once" "$(jq '[.messages[] | select(.text == "dup-'"$$"'")] | length' "$TMP/s2")" 1
check "silenced chat got nothing" "$(jq '[.messages[] | select(.chat_id == "-2000")] | length' "$TMP/s2")" 0
echo "delivery: $N messages in $(( (T1 - T0) / 1000000 )) ms; injected 429 $(jq .injected_429 "$TMP/s2"), 5xx $(jq .injected_5xx "$TMP/s2"); max per bot $(jq .max_bot_per_s "$TMP/s2")/s, per chat $(jq .max_chat_per_s "$TMP/s2")/s" >&2

# --- webhook mode: setWebhook with the secret; the secret checked; an update handled once
api POST /v1/projects "$ADMIN" '{"id":"chw"}' >/dev/null
W1=$(mkkey chw pub operator); W2=$(mkkey chw appr operator)
WB='{"channels":[{"platform":"telegram","mode":"webhook","bot":{"name":"hook","token":"env:TG_TOKEN"},
  "webhook_secret":"env:HOOK_SECRET","chats":[{"chat_id":"-300"}],
  "rules":[{"event":"message","run_template":"t"}]}],"templates":{"t":{"workflow":[{"kind":"noop"}]}}}'
check "activate webhook channel" "$(aw_activate chw channel_event "$WB" "$W1" "$W2")" true
wait_until 10 '[ -n "$(stats | jq -r ".webhook.url // empty")" ]'
check "setWebhook url" "$(stats | jq -r .webhook.url)" "https://hooks.example.com/v1/channels/telegram/chw/hook"
check "setWebhook secret" "$(stats | jq -r .webhook.secret_token)" "hook-secret-$$"
UPD='{"update_id":77,"message":{"message_id":1,"chat":{"id":-300},"from":{"id":5},"text":"/status nope"}}'
RESPONSES=$TMP/responses.hook
req POST /v1/channels/telegram/chw/hook "" "$UPD" -H "X-Telegram-Bot-Api-Secret-Token: wrong"
expect "wrong secret" 401 .code E-CHANNEL-005
WRONG=$(jbody .detail)
req POST /v1/channels/telegram/chw/hook "" "$UPD"
expect "no secret" 401 .code E-CHANNEL-005
check "no secret answered as a wrong one" "$(jbody .detail)" "$WRONG"
# no such bot, polling bot, no such project: answered as a wrong secret, so
# bots and projects cannot be enumerated
req POST /v1/channels/telegram/chw/nobot "" "$UPD" -H "X-Telegram-Bot-Api-Secret-Token: hook-secret-$$"
expect "unknown bot" 401 .code E-CHANNEL-005
check "unknown bot answered as a wrong secret" "$(jbody .detail)" "$WRONG"
req POST /v1/channels/telegram/cht/ops "" "$UPD" -H "X-Telegram-Bot-Api-Secret-Token: hook-secret-$$"
expect "a polling bot takes no webhook" 401 .code E-CHANNEL-005
req POST /v1/channels/telegram/nosuchproject/hook "" "$UPD" -H "X-Telegram-Bot-Api-Secret-Token: x"
expect "unknown project" 401 .code E-CHANNEL-005
check "unknown project answered as a wrong secret" "$(jbody .detail)" "$WRONG"
req POST /v1/channels/telegram/chw/hook "" "$UPD" -H "X-Telegram-Bot-Api-Secret-Token: hook-secret-$$"
expect "webhook update" 200 .ok true
req POST /v1/channels/telegram/chw/hook "" "$UPD" -H "X-Telegram-Bot-Api-Secret-Token: hook-secret-$$"
expect "Telegram's retry" 200 .ok true
wait_until 10 sent 1 '.chat_id == "-300"'
sleep 1.5 # on purpose: time for a second answer to the retry, which must not come
check "answered once" "$(stats | jq '[.messages[] | select(.chat_id == "-300" and (.text | startswith("No run nope")))] | length')" 1
check "webhook secret never answered" "$(grep -c "hook-secret-$$" "$TMP/responses.hook")" 0

# --- a poisoned update: a batch fetched POISON_TRIES (3) times at one offset
# without a commit (its handling crashed the process, or its commit kept
# failing) is not acted on again - its first update is mirrored as poisoned,
# audited and skipped, and the next one is handled as usual. The tries are
# set here as three crashed leaders would have left them.
nruns() { api GET "/v1/platform/runs?limit=100" "$K1" | jq '.items | length'; }
check "a handled batch counts one try" "$(sql "SELECT tries FROM channel_offsets WHERE project_id = 'cht' AND bot = 'ops'")" 1
R0=$(nruns)
sql "UPDATE channel_offsets SET tried_offset = next_offset, tries = 3 WHERE project_id = 'cht' AND bot = 'ops'" >/dev/null
inject "{\"updates\":[$(msg -100 111 "hello poison-$$")]}"
poisoned() { [ "$(sql "SELECT count(*) FROM conversation_events WHERE project_id = 'cht' AND action = 'poisoned'")" = 1 ]; }
wait_until 10 poisoned
check "poisoned update mirrored" "$(sql "SELECT count(*) FROM conversation_events WHERE project_id = 'cht' AND action = 'poisoned' AND text LIKE '%poison-$$%'")" 1
check "poisoned update not acted on" "$(nruns)" "$R0"
inject "{\"updates\":[$(msg -100 111 "hello after-$$")]}"
wait_until 10 '[ "$(nruns)" -gt "$R0" ]'
check "the next update handled" "$(nruns)" "$((R0 + 1))"
check "poisoning logged" "$(grep -c 'channel update poisoned' "$TMP/server.log")" 1

# --- the inbound mirror and the audit
req GET "/v1/projects/cht/audit?action=channel.inbound&limit=100" "$K1"
check "every inbound update audited once" "$(jbody '[.items[].target] | (length == (unique | length)) and length == 8')" true
check "token never in answers or logs" "$(cat "$TMP/responses" "$TMP/server.log" | grep -c "canary-bot-token")" 0
aw_done "channel_$BACKEND"
