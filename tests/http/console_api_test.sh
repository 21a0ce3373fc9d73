#!/usr/bin/env bash
# What the console asks the API for beyond the plain lists: the runs list's
# server-side filters (queue, created_from/created_to, q: a run id's
# beginning or a part of a step's kind or name) with their 400s, and spend
# over time (GET .../budget/spend: per hour or day, per model or key, from
# the model calls' audit records, bounded) - each within its project only:
# project beta's key sees none of alpha's runs or spend.
#   console_api_test.sh AWOOOP_BINARY FAKE_LLM sqlite|postgres
set -uo pipefail
BIN=$1
FAKE_LLM=$2
BACKEND=$3
. "$(dirname "$0")/lib.sh"

"$FAKE_LLM" --name A >"$TMP/fake-llm" 2>&1 &
PIDS+=($!)
wait_until 5 '[ -n "$(sed -n "s/^port //p" "$TMP/fake-llm")" ]'
LPORT=$(sed -n 's/^port //p' "$TMP/fake-llm")
cat >"$TMP/llm.json" <<JSON
{"providers": {"openai": {"url": "http://127.0.0.1:$LPORT/v1", "api": "openai"}}}
JSON
aw_db "$BACKEND"
aw_serve --llm-config "$TMP/llm.json"

for p in alpha beta; do api POST /v1/projects "$ADMIN" "{\"id\":\"$p\"}" >/dev/null; done
A1=$(mkkey alpha op1 operator); A2=$(mkkey alpha op2 operator); AR=$(mkkey alpha viewer reader)
AW=$(mkkey alpha agent worker); AW2=$(mkkey alpha batch worker)
B1=$(mkkey beta op1 operator); B2=$(mkkey beta op2 operator); BW=$(mkkey beta agent worker)

# ---- runs: filters
run() { api POST "/v1/platform/runs" "$1" "$2" | jq -r .run_id; }
api PUT /v1/projects/alpha/queues/mail "$A1" '{"concurrency":1}' >/dev/null
R1=$(run "$A1" '{"workflow":[{"kind":"noop","name":"Fetch-Tickets"}],"mode":"shadow"}')
R2=$(run "$A1" '{"workflow":[{"kind":"noop"},{"kind":"fail","args":{"message":"x"}}],"queue":"mail","mode":"shadow"}')
sleep 0.05
MID=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
sleep 0.05
R3=$(run "$A1" '{"workflow":[{"kind":"approval","args":{"summary":"100%_done"}}],"queue":"mail","mode":"shadow"}')
BR=$(run "$B1" '{"workflow":[{"kind":"noop","name":"fetch-tickets"}],"mode":"shadow"}')
ids() { jq -r '[.items[].run_id] | join(" ")' "$TMP/body"; }
req GET "/v1/platform/runs?queue=mail" "$AR" ""; expect "runs of queue mail" 200
check "runs of queue mail: the two, newest first" "$(ids)" "$R3 $R2"
req GET "/v1/platform/runs?queue=nosuch" "$AR" ""; expect "runs of a queue with none" 200 '.items | length' 0
req GET "/v1/platform/runs?created_from=$MID" "$AR" ""; expect "runs created from MID" 200
check "runs created from MID: the last one" "$(ids)" "$R3"
req GET "/v1/platform/runs?created_to=$MID" "$AR" ""; expect "runs created before MID" 200
check "runs created before MID: the first two" "$(ids)" "$R2 $R1"
req GET "/v1/platform/runs?created_from=$MID&created_to=$MID" "$AR" ""
expect "an empty time window" 400 .code E-REQ-005
check "an empty time window names created_to" "$(jbody .detail | grep -c created_to)" 1
req GET "/v1/platform/runs?q=fetch" "$AR" ""; expect "q: a step's name, any case" 200
check "q=fetch: alpha's only (not beta's fetch-tickets)" "$(ids)" "$R1"
req GET "/v1/platform/runs?q=FAIL" "$AR" ""; check "q=FAIL: a step's kind" "$(ids)" "$R2"
req GET "/v1/platform/runs?q=${R2:0:13}" "$AR" ""; check "q: a run id's beginning" "$(ids)" "$R2"
req GET "/v1/platform/runs?q=${R2:20}" "$AR" ""; check "q: the middle of a run id is no match" "$(ids)" ""
req GET "/v1/platform/runs?q=%25" "$AR" ""; check "q=%: a literal percent sign, not a wildcard" "$(ids)" ""
req GET "/v1/platform/runs?q=_" "$AR" ""; check "q=_: a literal underscore, not a wildcard" "$(ids)" ""
req GET "/v1/platform/runs?q=approval&queue=mail&created_from=$MID" "$AR" ""
check "filters together" "$(ids)" "$R3"
req GET "/v1/platform/runs?queue=mail&limit=1" "$AR" ""; CUR=$(jbody .next_cursor)
check "queue filter, first page" "$(ids)" "$R3"
req GET "/v1/platform/runs?queue=mail&limit=1&cursor=$CUR" "$AR" ""
check "queue filter, next page" "$(ids)" "$R2"
req GET "/v1/platform/runs?queue=no%20spaces" "$AR" ""; expect "a queue that is no queue name" 400 .code E-REQ-005
req GET "/v1/platform/runs?created_from=yesterday" "$AR" ""; expect "created_from not a time" 400 .code E-REQ-005
check "created_from not a time: the pointer" "$(jbody .pointer)" created_from
req GET "/v1/platform/runs?created_to=2026-13-01T00:00:00.000Z" "$AR" ""; expect "created_to not a time" 400 .code E-REQ-005
req GET "/v1/platform/runs?q=" "$AR" ""; expect "an empty q" 400 .code E-REQ-005
req GET "/v1/platform/runs?q=$(printf 'x%.0s' $(seq 1 201))" "$AR" ""; expect "q of 201 bytes" 400 .code E-REQ-005
req GET "/v1/platform/runs?q=a%0Ab" "$AR" ""; expect "q with a newline" 400 .code E-REQ-005
# beta's key: none of alpha's runs, whatever the filter; alpha asked by name: refused
req GET "/v1/platform/runs?q=${R2:0:13}" "$B1" ""; check "beta: alpha's run id is no match" "$(ids)" ""
req GET "/v1/platform/runs?q=fetch" "$B1" ""; check "beta: q=fetch finds beta's own" "$(ids)" "$BR"
req GET "/v1/platform/runs?project=alpha&queue=mail" "$B1" ""; expect "beta asks for alpha's runs" 404 .code E-TENANT-001
# the platform admin, alpha selected
req GET "/v1/platform/runs?project=alpha&queue=mail" "$ADMIN" ""; check "admin, alpha selected: the same filter" "$(ids)" "$R3 $R2"

# ---- spend over time
check "alpha: routing active" "$(aw_activate alpha policy_routing '{"routes":[{"name":"chat","match":{"task":"chat"},"candidates":[{"provider":"openai","model":"gpt-x"}]},{"name":"other","match":{"task":"other"},"candidates":[{"provider":"openai","model":"gpt-y"}]}]}' "$A1" "$A2")" true
check "alpha: budget active" "$(aw_activate alpha budget '{"period":"day","token_limit":1000000,"action_on_exceed":"kill","prices":{"*":{"input_per_mtok":2.5,"output_per_mtok":10}}}' "$A1" "$A2")" true
check "beta: routing active" "$(aw_activate beta policy_routing '{"routes":[{"name":"chat","match":{"task":"chat"},"candidates":[{"provider":"openai","model":"gpt-x"}]}]}' "$B1" "$B2")" true
check "beta: budget active" "$(aw_activate beta budget '{"period":"day","token_limit":1000000,"action_on_exceed":"kill","prices":{"*":{"input_per_mtok":2.5,"output_per_mtok":10}}}' "$B1" "$B2")" true
chat() { api POST /v1/chat/completions "$1" "{\"model\":\"$2\",\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}" >/dev/null; }
for _ in 1 2 3; do chat "$AW" chat; done
chat "$AW2" other
chat "$BW" chat
# the records are written by a recorder, a little after the answer
wait_until 10 '[ "$(api GET /v1/projects/alpha/budget/spend "$AR" | jq -r .totals.calls)" = 4 ]'
req GET "/v1/projects/alpha/budget/spend" "$AR" ""; expect "alpha spend (defaults)" 200 .bucket hour
check "alpha spend: by model by default" "$(jbody .by)" model
check "alpha spend: four calls" "$(jbody .totals.calls)" 4
check "alpha spend: two models" "$(jbody '[.items[].model] | unique | join(",")')" "gpt-x,gpt-y"
check "alpha spend: gpt-x's calls" "$(jbody '[.items[] | select(.model=="gpt-x") | .calls] | add')" 3
check "alpha spend: tokens are in + out" "$(jbody '[.items[] | .tokens == .tokens_in + .tokens_out] | all')" true
check "alpha spend: some tokens" "$(jbody '.totals.tokens > 0')" true
check "alpha spend: some cost" "$(jbody '.totals.cost_usd > 0')" true
check "alpha spend: the bucket is an hour's start" "$(jbody '.items[0].at | test("T[0-9]{2}:00:00.000Z$")')" true
check "alpha spend: not truncated" "$(jbody .truncated)" false
req GET "/v1/projects/alpha/budget/spend?by=key&bucket=day" "$AR" ""; expect "alpha spend by key per day" 200 .bucket day
check "alpha spend by key: each key's calls" "$(jbody '[.items[] | "\(.key)=\(.calls)"] | sort | join(",")')" \
  "$(api GET /v1/whoami "$AW" | jq -r .principal)=3,$(api GET /v1/whoami "$AW2" | jq -r .principal)=1"
check "alpha spend by key per day: a day's start" "$(jbody '.items[0].at | test("T00:00:00.000Z$")')" true
req GET "/v1/projects/alpha/budget/spend?by=none&limit=1" "$AR" ""; expect "alpha spend in all, one row" 200 '.items | length' 1
check "alpha spend in all: no group member" "$(jbody '.items[0] | has("model") or has("key")')" false
SINCE=$(date -u -d '-2 hours' +%Y-%m-%dT%H:%M:%S.000Z)
req GET "/v1/projects/alpha/budget/spend?since=$SINCE&by=model&limit=1" "$AR" ""
check "limit 1 of two rows: truncated" "$(jbody .truncated)" true
check "since floored to the hour" "$(jbody .since)" "$(date -u -d "$SINCE" +%Y-%m-%dT%H:00:00.000Z)"
req GET "/v1/projects/alpha/budget/spend?until=2020-01-01T00:00:00.000Z" "$AR" ""; expect "a window with no call" 200 '.items | length' 0
# beta's key: its own spend only; alpha's refused
req GET "/v1/projects/beta/budget/spend" "$BW" ""; expect "beta spend" 200 .totals.calls 1
req GET "/v1/projects/alpha/budget/spend" "$B1" ""; expect "beta's key asks for alpha's spend" 404 .code E-TENANT-001
req GET "/v1/projects/alpha/budget/spend?by=key" "$BW" ""; expect "beta's worker asks for alpha's spend by key" 404 .code E-TENANT-001
check "beta spend by key: beta's own key only" "$(api GET '/v1/projects/beta/budget/spend?by=key' "$B1" | jq -r '[.items[].key] | unique | join(",")')" \
  "$(api GET /v1/whoami "$BW" | jq -r .principal)"
# the errors
for q in "bucket=minute" "by=route" "limit=0" "limit=5001" "since=soon" "until=later" \
  "since=2026-01-01T00:00:00.000Z&until=2025-01-01T00:00:00.000Z" "since=2026-01-01T00:00:00Z" \
  "bucket=hour&since=2025-01-01T00:00:00.000Z&until=2025-03-01T00:00:00.000Z" \
  "bucket=day&since=2020-01-01T00:00:00.000Z&until=2025-01-01T00:00:00.000Z"; do
  req GET "/v1/projects/alpha/budget/spend?$q" "$AR" ""; expect "spend ?$q" 400 .code E-REQ-005
done
req GET "/v1/projects/alpha/budget/spend" "" ""; expect "spend without a key" 401
aw_done "console_api_$BACKEND"
