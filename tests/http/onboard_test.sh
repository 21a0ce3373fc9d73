#!/usr/bin/env bash
# `awooop onboard`: examples/ewoooc.json onboards ewoooc (4 read-only tools of
# the shipped example MCP server, a routing policy, a Telegram channel whose
# template is an agent over those tools, a budget, an approval policy): a chat
# message to the Telegram double is answered by the agent (the fake model
# asking for each tool); and a second
# tenant is onboarded beside it; then the two are shown isolated end to end:
# tools, keys, runs, audit, Redis keys, metrics labels and error texts.
#   onboard_test.sh AWOOOP_BINARY EXAMPLE_MCP_BINARY SOURCE_DIR sqlite|postgres FAKE_LLM FAKE_TELEGRAM
set -uo pipefail
BIN=$1
EXAMPLE=$2
SRC=$3
BACKEND=$4
FAKE_LLM=$5
FAKE_TG=$6
. "$(dirname "$0")/lib.sh"

export TG_SECRET="7000003:AAH-onboard-token-$$" AWOOOP_T_EWOOOC__TG_TOKEN="7000003:AAH-onboard-token-$$"
fake_telegram_start "$FAKE_TG" TG_SECRET
"$FAKE_LLM" >"$TMP/llm.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do LPORT=$(sed -n 's/^port //p' "$TMP/llm.out" 2>/dev/null); [ -n "$LPORT" ] && break; sleep 0.1; done
echo "{\"providers\": {\"openai\": {\"url\": \"http://127.0.0.1:$LPORT/v1\"}}}" >"$TMP/llm.json"
aw_db "$BACKEND"
[ "$BACKEND" = postgres ] && aw_redis_db 9
aw_serve --mcp-stdio-allow "$EXAMPLE" --llm-config "$TMP/llm.json" --telegram-api "$TG" \
  --channel-poll-timeout-s 1
export AWOOOP_URL=$URL EXAMPLE_MCP=$EXAMPLE

# --- onboarding
AWOOOP_KEY=$ADMIN "$BIN" onboard --file "$SRC/examples/ewoooc.json" --var EXAMPLE_MCP >"$TMP/ewoooc.out" 2>"$TMP/ewoooc.err"
check "onboard ewoooc" $? 0
check "five contracts active" "$(grep -c ' active$' "$TMP/ewoooc.out")" 5
check "approval last" "$(grep ' active$' "$TMP/ewoooc.out" | tail -1 | awk '{print $2}')" approval/default
check "four keys shown" "$(grep -c '^key ' "$TMP/ewoooc.out")" 4
keyof() { awk -v n="$2" '$1=="key" && $2==n {print $4}' "$1"; }
EA=$(keyof "$TMP/ewoooc.out" ewoooc-agent); EAD=$(keyof "$TMP/ewoooc.out" ewoooc-admin)
EO1=$(keyof "$TMP/ewoooc.out" ewoooc-oncall-1); EO2=$(keyof "$TMP/ewoooc.out" ewoooc-oncall-2)
AWOOOP_KEY=$ADMIN "$BIN" onboard --file "$SRC/examples/ewoooc.json" --var EXAMPLE_MCP >/dev/null 2>"$TMP/again.err"
check "onboarding twice refused" $? 1
check "says where it stopped" "$(grep -c 'stopped at: the project' "$TMP/again.err")" 1
sed 's/ewoooc/tenant2/g' "$SRC/examples/ewoooc.json" >"$TMP/tenant2.json"
AWOOOP_KEY=$ADMIN "$BIN" onboard --file "$TMP/tenant2.json" --var EXAMPLE_MCP >"$TMP/t2.out" 2>&1
check "onboard tenant2" $? 0
TA=$(keyof "$TMP/t2.out" tenant2-agent); TAD=$(keyof "$TMP/t2.out" tenant2-admin)
TO1=$(keyof "$TMP/t2.out" tenant2-oncall-1)
AWOOOP_KEY=$ADMIN "$BIN" onboard --file /dev/null >/dev/null 2>&1
check "bad file" $? 2
(unset EXAMPLE_MCP; AWOOOP_KEY=$ADMIN "$BIN" onboard --file "$SRC/examples/ewoooc.json" --var EXAMPLE_MCP 2>&1 | grep -c 'EXAMPLE_MCP}, which is not set' >"$TMP/unset")
check "an unset \${NAME} named" "$(cat "$TMP/unset")" 1
# only what --var names is expanded, never AWOOOP_*: the operator's own key
# must not land in a body the tenant reads
sed 's/ewoooc/tenant3/g' "$SRC/examples/ewoooc.json" >"$TMP/tenant3.json"
AWOOOP_KEY=$ADMIN "$BIN" onboard --file "$TMP/tenant3.json" >/dev/null 2>"$TMP/novar.err"
check "a \${NAME} not named by --var refused" $? 2
check "says so" "$(grep -c 'EXAMPLE_MCP}, which is not named by --var' "$TMP/novar.err")" 1
jq --arg k '${AWOOOP_KEY}' '.contracts[0].body.upstreams.ops.command = [$k]' "$TMP/tenant3.json" >"$TMP/leak.json"
AWOOOP_KEY=$ADMIN "$BIN" onboard --file "$TMP/leak.json" --var EXAMPLE_MCP,AWOOOP_KEY >"$TMP/leak.out" 2>"$TMP/leak.err"
check "AWOOOP_* never expanded" $? 2
check "says why" "$(grep -c 'AWOOOP_KEY}, which is never expanded' "$TMP/leak.err")" 1
check "the key nowhere" "$(grep -c -- "$ADMIN" "$TMP/leak.out" "$TMP/leak.err" | awk -F: '{s += $2} END {print s}')" 0
# a credential written into a contract body is refused, with its pointer
jq --arg t "$(printf 'ghp_%s' wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx)" '.contracts[0].body.upstreams.ops.env = {"GITHUB_TOKEN": $t}' "$TMP/tenant3.json" >"$TMP/cred.json"
AWOOOP_KEY=$ADMIN "$BIN" onboard --file "$TMP/cred.json" --var EXAMPLE_MCP >/dev/null 2>"$TMP/cred.err"
check "plain credential in a body refused" $? 1
check "E-CONTRACT-011" "$(grep -c 'E-CONTRACT-011' "$TMP/cred.err")" 1
# the onboarding keys were revoked
RESPONSES=$TMP/responses.ewoooc
req GET /v1/projects/ewoooc/keys "$EAD"
check "onboarding keys revoked" "$(jbody '[.items[] | select(.name | startswith("onboard-")) | .revoked_at != null] | all')" true
req GET /v1/projects/ewoooc/contracts/approval/default/active "$EAD"
check "approval policy active" "$(jbody .body.threshold)" 2

# --- tools
MCP() { # MCP PROJECT KEY METHOD PARAMS-JSON
  local meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}'
  local name; name=$(echo "$4" | jq -r '.name // empty')
  local params; params=$(echo "$4" | jq -c ". + {$meta}")
  req POST "/v1/projects/$1/mcp" "$2" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$3\",\"params\":$params}" \
    -H "MCP-Protocol-Version: 2026-07-28" -H "Mcp-Method: $3" ${name:+-H "Mcp-Name: $name"}
}
MCP ewoooc "$EA" tools/list '{}'
check "ewoooc's four tools" "$(jbody '.result.tools | map(.name) | sort | join(",")')" \
  "get_incident__ops,get_metrics__ops,list_pods__ops,search_logs__ops"
MCP ewoooc "$EA" tools/call '{"name":"get_incident__ops","arguments":{"id":"INC-101"}}'
check "a tool answers" "$(jbody '.result.content[0].text' | cut -c1-7)" "INC-101"
MCP ewoooc "$EA" tools/call '{"name":"get_incident__ops","arguments":{"id":"../etc"}}'
check "arguments checked" "$(jbody .error.data.code)" E-MCP-GATE-005
MCP ewoooc "$EA" tools/call '{"name":"list_pods__ops","arguments":{"namespace":"shop"}}'
check "list_pods" "$(jbody '.result.content[0].text' | grep -c shop/)" 3
RESPONSES=$TMP/responses.tenant2
MCP ewoooc "$TA" tools/list '{}'
check "tenant2's key on ewoooc's endpoint" "$(jbody .error.data.code)" E-MCP-GATE-001
MCP tenant2 "$TA" tools/call '{"name":"get_incident__ops","arguments":{"id":"INC-102"}}'
check "tenant2's own tool" "$(jbody '.result.content[0].text' | cut -c1-7)" "INC-102"
# --- the chat: a message to the bot is answered by the agent, with the tools
curl -s -X POST -H 'Content-Type: application/json' "$TG/control/updates" --data-binary \
  '{"updates":[{"message":{"message_id":7,"chat":{"id":-1001},"from":{"id":111},"text":"What is wrong with the order API?"}}]}' >/dev/null
answer() { curl -s "$TG/control/stats" | jq -r '[.messages[] | select(.chat_id == "-1001" and .reply_to == 7)][0].text // empty'; }
wait_until 30 '[ -n "$(answer)" ]'
ANSWER=$(answer)
check "the agent answered in the chat" "${ANSWER:0:7}" "final: "
check "from the logs" "$(grep -c 'worker-2b1d ERROR job failed' <<<"$ANSWER")" 1
check "the metrics" "$(grep -c 'cpu (cores)' <<<"$ANSWER")" 1
check "the pods" "$(grep -c 'cron-55aa CrashLoopBackOff' <<<"$ANSWER")" 1
check "and the incident" "$(grep -c 'INC-101: Order API latency above SLO' <<<"$ANSWER")" 1
check "progress shown" "$(curl -s "$TG/control/stats" | jq '[.messages[] | select(.chat_id == "-1001" and (.text | test("Run [0-9a-f]{8}: ")))] | length')" 1

# --- keys
req GET /v1/projects/ewoooc/keys "$TAD"; check "tenant2 lists ewoooc's keys" "$STATUS" 404
# --- runs
RESPONSES=$TMP/responses.ewoooc
req POST /v1/platform/runs "$EO1" '{"workflow":[{"kind":"noop","args":{}}]}'
RUN=$(jbody .run_id); check "ewoooc run" "$STATUS" 201
check "run id" "$(echo "$RUN" | grep -cE "^[0-9a-f-]{36}$")" 1
RESPONSES=$TMP/responses.tenant2
req GET "/v1/platform/runs/$RUN" "$TO1"; check "tenant2 reads ewoooc's run" "$STATUS" 404
req POST "/v1/platform/runs/$RUN/cancel" "$TO1"; check "tenant2 cancels ewoooc's run" "$STATUS" 404
# --- audit
sleep 0.3
RESPONSES=$TMP/responses.ewoooc
req GET "/v1/projects/ewoooc/audit?limit=1000" "$EO1"
# three here, four by the chat's agent
check "ewoooc's trail has its tool calls" "$(jbody '[.items[] | select(.action=="mcp.call")] | length')" 7
check "ewoooc's trail never names tenant2" "$(grep -c tenant2 "$TMP/body")" 0
RESPONSES=$TMP/responses.tenant2
req GET "/v1/projects/tenant2/audit?limit=1000" "$TO1"
check "tenant2's trail never names ewoooc" "$(grep -c ewoooc "$TMP/body")" 0
req GET "/v1/projects/ewoooc/audit" "$TO1"; check "tenant2 reads ewoooc's trail" "$STATUS" 404
# --- errors tenant2 received never name ewoooc (its URLs aside)
check "no ewoooc in tenant2's answers" "$(grep -c ewoooc "$TMP/responses.tenant2")" 0
# --- metrics: tenant labels are project ids only, one per series
curl -s -H "Authorization: Bearer $ADMIN" "$URL/metrics" >"$TMP/metrics"
check "ewoooc metric series (its tools and outcomes)" "$(grep -c '^awooop_mcp_calls_total{project="ewoooc"' "$TMP/metrics")" 5
check "no series mixes tenants" "$(grep 'ewoooc' "$TMP/metrics" | grep -c tenant2)" 0
# --- Redis keys (cluster shape): every key naming a tenant is under its prefix
if [ "$BACKEND" = postgres ]; then
  R=${AWOOOP_TEST_REDIS_URL#redis://}
  redis-cli -h "${R%:*}" -p "${R##*:}" -n 9 --scan >"$TMP/rkeys" 2>/dev/null
  check "redis keys of ewoooc under ewoooc:" "$(grep ewoooc "$TMP/rkeys" | grep -vc '^ewoooc:')" 0
  check "redis keys of tenant2 under tenant2:" "$(grep tenant2 "$TMP/rkeys" | grep -vc '^tenant2:')" 0
fi
# --- no key secret in the server's log
for k in "$EA" "$EAD" "$EO1" "$TA"; do
  check "key not logged" "$(grep -c "$k" "$TMP/server.log")" 0
done

aw_done "onboard_test ($BACKEND)"
