#!/usr/bin/env bash
# Connections that end and processes that stop (issue 38, item 9), black box:
#   - 200 sessions of the official MCP SDK client, opened and closed one
#     after another from one address under the default --max-per-ip (64),
#     all succeed and leave no server socket in CLOSE-WAIT (the session's
#     GET stream is parked; its client's hang-up must still be noticed);
#   - SIGTERM to `serve` (role all) while an MCP session's GET stream, an MCP
#     tool call, a short and a long LLM stream are open and the channel hub
#     is in a getUpdates and a sendMessage the Bot API double never answers
#     (a stalled send used to hold the stop for 15 s): no new connection
#     is taken, a request on an open connection is refused 503 E-REQ-013, the
#     GET stream ends cleanly at once, the tool call and the short stream
#     finish, the long one is cut at --drain-s, and the process exits 0
#     within the bound (MHD used to abort: "suspended connections");
#   - the same SIGTERM for roles worker (a run in a 30 s step: queued
#     again), relay, hub (mid-poll against the stalled Bot API) and api
#     (open streams): exit 0 within the bound.
#   drain_test.sh AWOOOP FAKE_LLM FAKE_TELEGRAM FAKE_MCP sqlite|postgres
set -uo pipefail
BIN=$1
FAKE_LLM=$2
FAKE_TG=$3
FAKE_MCP=$4
BACKEND=$5
. "$(dirname "$0")/lib.sh"
DRAIN_S=3
SLACK_MS=2500 # the bound plus this: the services' own stops, process exit

NM=${AWOOOP_NPM_CACHE:-$HOME/.cache/awooop-npm}/mcp
if [ ! -d "$NM/node_modules/@modelcontextprotocol/sdk" ]; then
  mkdir -p "$NM"
  (cd "$NM" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --silent --no-audit --no-fund @modelcontextprotocol/sdk >/dev/null 2>"$TMP/npm.log") ||
    { cat "$TMP/npm.log" >&2; echo "npm install failed" >&2; exit 1; }
fi
cp "$(dirname "$0")/drain_sessions.mjs" "$NM/drain_sessions.mjs"

# the doubles: an LLM upstream, an MCP upstream, the Bot API
"$FAKE_LLM" --name A >"$TMP/fake-llm" 2>&1 &
PIDS+=($!)
"$FAKE_MCP" --http 0 >"$TMP/fake-mcp" 2>&1 &
PIDS+=($!)
doubles_up() { PL=$(sed -n 's/^port //p' "$TMP/fake-llm"); PM=$(head -1 "$TMP/fake-mcp"); [ -n "$PL" ] && [ -n "$PM" ]; }
wait_until 5 doubles_up
export TG_SECRET="7000002:AAH-drain-bot-token-$$" AWOOOP_T_DRN__TG_TOKEN="7000002:AAH-drain-bot-token-$$"
fake_telegram_start "$FAKE_TG" TG_SECRET
echo "{\"providers\": {\"openai\": {\"url\": \"http://127.0.0.1:$PL/v1\", \"api\": \"openai\"}}}" >"$TMP/llm.json"

aw_db "$BACKEND"
[ "$BACKEND" = postgres ] && aw_redis_db 6
COMMON=(--llm-config "$TMP/llm.json" --telegram-api "$TG" --channel-poll-timeout-s 20
  --drain-s "$DRAIN_S" --egress-allow-private drn)
aw_serve "${COMMON[@]}"
S1=${PIDS[-1]}
PORT=${URL##*:}
api POST /v1/projects "$ADMIN" '{"id":"drn"}' >/dev/null
K1=$(mkkey drn op1 operator); K2=$(mkkey drn op2 operator); W=$(mkkey drn agent worker)
check "routing active" "$(aw_activate drn policy_routing '{"routes":[
  {"name":"short","match":{"task":"short"},"candidates":[{"provider":"openai","model":"s;tokens=15;tps=10"}]},
  {"name":"long","match":{"task":"long"},"candidates":[{"provider":"openai","model":"l;tokens=600;tps=10"}]}]}' \
  "$K1" "$K2")" true
check "tools active" "$(aw_activate drn mcp_tool "{\"upstreams\":{\"web\":{\"transport\":\"http\",\"url\":\"http://127.0.0.1:$PM/mcp\"}},
  \"tools\":[{\"name\":\"slow\",\"provider\":\"web\",\"mode\":\"read_only\"}]}" "$K1" "$K2")" true
check "channel active" "$(aw_activate drn channel_event '{"channels":[{"platform":"telegram",
  "bot":{"name":"ops","token":"env:TG_TOKEN"},"chats":[{"chat_id":"-100"}],
  "rules":[{"event":"message","match":"hello","run_template":"greet"}]}],
  "templates":{"greet":{"workflow":[{"kind":"noop"}]}}}' "$K1" "$K2")" true

# --- 200 short SDK sessions from one address: no CLOSE-WAIT, no lock-out
close_wait() { ss -tanH state close-wait "( sport = :$1 )" | wc -l; }
(cd "$NM" && timeout 120 node drain_sessions.mjs "$URL/v1/projects/drn/mcp" "$W" 200) >"$TMP/sessions" 2>&1
check "200 SDK sessions succeed under the default --max-per-ip (64)" "$(jq -c '[.ok, .failed]' "$TMP/sessions" 2>/dev/null)" "[200,0]"
jq -r '.error // empty' "$TMP/sessions" 2>/dev/null | head -1 >&2
# hang-ups are noticed within a second
wait_until 3 '[ "$(close_wait "$PORT")" = 0 ]'
CW=$(close_wait "$PORT")
check "no server socket left in CLOSE-WAIT" "$CW" 0
echo "CLOSE-WAIT after 200 SDK sessions: $CW" >&2

# --- SIGTERM with streams and calls in flight (role all)
MCP=/v1/projects/drn/mcp
mcp_session() { # -> SID
  curl -s -D "$TMP/init.hdr" -o /dev/null -X POST "$URL$MCP" -H "Authorization: Bearer $W" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"drain","version":"1"}}}'
  SID=$(grep -i '^mcp-session-id:' "$TMP/init.hdr" | tr -d '\r' | awk '{print $2}')
}
open_streams() { # open_streams TAG: the GET stream, a tool call, a short and a long model stream
  mcp_session
  curl -s -N -o "$TMP/$1.get" -H "Authorization: Bearer $W" -H 'Accept: text/event-stream' \
    -H "Mcp-Session-Id: $SID" "$URL$MCP" &
  GET_PID=$!
  curl -s -o "$TMP/$1.tool" -X POST "$URL$MCP" -H "Authorization: Bearer $W" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H "Mcp-Session-Id: $SID" \
    -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow__web","arguments":{"ms":1500}}}' &
  TOOL_PID=$!
  for t in short long; do
    curl -s -N -o "$TMP/$1.$t" -H "Authorization: Bearer $W" -H 'Content-Type: application/json' \
      -H "X-Awooop-Task: $t" "$URL/v1/chat/completions" \
      -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}' &
    eval "${t^^}_PID=$!"
  done
  wait_until 5 '[ -s "$TMP/'"$1"'.get" ] && [ -s "$TMP/'"$1"'.short" ] && [ -s "$TMP/'"$1"'.long" ]'
}
# term PID: SIGTERM, then -> RC (its exit status) and MS (how long it took)
term() {
  local t0
  t0=$(date +%s%N)
  kill -TERM "$1"
  wait "$1"
  RC=$?
  MS=$(( ($(date +%s%N) - t0) / 1000000 ))
}
within() { [ "$1" -le $((DRAIN_S * 1000 + SLACK_MS)) ] && echo yes || echo "no ($1 ms)"; }
stalled() { curl -s "$TG/control/stats" | jq -r .stalled; }
wait_stalled() { # until one more getUpdates hangs than before ($1)
  wait_until 10 '[ "$(stalled)" -gt '"$1"' ] 2>/dev/null'
}

N0=$(stalled)
curl -s -X POST -H 'Content-Type: application/json' -d '{"stall":true}' "$TG/control/faults" >/dev/null
wait_stalled "$N0"
check "the hub is mid-poll against the stalled Bot API" "$?" 0
# and its sender in a sendMessage the double does not answer either
N0=$(stalled)
api POST /v1/projects/drn/channels/ops/messages "$K1" '{"chat_id":"-100","text":"into the stall"}' >/dev/null
wait_stalled "$N0"
check "the hub is mid-send to the stalled Bot API" "$?" 0
open_streams all
# a keep-alive connection that asks again once the drain has begun
python3 - "$PORT" "$TMP/asked" "$TMP/ka_ready" >"$TMP/keepalive" 2>&1 <<'PY' &
import http.client, json, os, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
c.request("GET", "/healthz"); r = c.getresponse(); r.read()
first = r.status
open(sys.argv[3], "w").close()
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
c.request("GET", "/healthz"); r = c.getresponse(); body = r.read()
print(first, r.status, json.loads(body).get("code"), r.getheader("Connection"))
PY
KA_PID=$!
# its connection is open (a loaded machine may take longer than a fixed sleep
# to start python)
wait_until 10 '[ -e "$TMP/ka_ready" ]'
t0=$(date +%s%N)
kill -TERM "$S1"
# the drain has begun once the listening socket is gone
listening() { [ -n "$(ss -tlnH "( sport = :$PORT )")" ]; }
wait_until 5 '! listening'
check "the listening socket closed on SIGTERM" "$(listening && echo open || echo closed)" closed
touch "$TMP/asked"
check "no new connection once draining" "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$URL/healthz")" 000
wait "$KA_PID"
check "a request on an open connection: 503 E-REQ-013, then closed" "$(cat "$TMP/keepalive")" "200 503 E-REQ-013 close"
wait "$GET_PID"
check "the session's GET stream ended cleanly" "$?" 0
GET_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
check "... at once" "$([ "$GET_MS" -lt 1500 ] && echo yes || echo "no ($GET_MS ms)")" yes
wait "$S1"
RC=$?
MS=$(( ($(date +%s%N) - t0) / 1000000 ))
check "role all: exit status" "$RC" 0
check "role all: exits within --drain-s $DRAIN_S" "$(within "$MS")" yes
echo "role all: SIGTERM to exit $MS ms (GET stream ended after $GET_MS ms)" >&2
wait "$TOOL_PID"
check "the tool call in flight was answered" "$(jq -r '.result.content[0].text' "$TMP/all.tool" 2>/dev/null | head -c 4)" late
wait "$SHORT_PID"
check "the short model stream finished" "$(grep -c '^data: \[DONE\]' "$TMP/all.short")" 1
wait "$LONG_PID"
LONG_RC=$?
check "the long model stream was cut at the bound (no [DONE], curl 18)" \
  "$(grep -c '^data: \[DONE\]' "$TMP/all.long") $LONG_RC" "0 18"
check "the drain was logged" "$(grep '"HTTP drained"' "$TMP/server.log" | jq -r '.streams_ended + " " + .requests_cut')" "1 1"
check "no abort" "$(grep -c 'suspended connections' "$TMP/server.log")" 0

# --- the other roles (one process each, the same database)
serve_role() { # serve_role ROLE ARGS... -> P (its pid); URL when it serves HTTP
  local log=$TMP/$1.log role=$1
  shift
  AWOOOP_BOOTSTRAP_KEY=$ADMIN "$BIN" serve --db "$DB" --listen 127.0.0.1:0 $EXTRA --role "$role" \
    "${COMMON[@]}" "$@" >/dev/null 2>>"$log" &
  P=$!
  PIDS+=($P)
  wait_until 10 grep -q '"awooop serving"' "$log"
  URL="http://127.0.0.1:$(grep '"awooop serving"' "$log" | tail -1 | jq -r .port)"
}
serve_role api
API=$P
API_URL=$URL
# worker: a run sleeping in a step when SIGTERM comes
RUN=$(api POST /v1/platform/runs "$K1" '{"workflow":[{"kind":"sleep","args":{"ms":30000}}]}' | jq -r .run_id)
run_state() { api GET "/v1/platform/runs/$RUN" "$K1" | jq -r .state; }
for role in worker relay hub; do
  N0=$(stalled)
  serve_role "$role"
  URL=$API_URL
  if [ "$role" = worker ]; then
    wait_until 10 '[ "$(run_state)" = running ]'
    check "role worker: a run is in a step" "$(run_state)" running
  fi
  if [ "$role" = hub ]; then
    wait_stalled "$N0"
    check "role hub: mid-poll against the stalled Bot API" "$?" 0
  fi
  sleep 0.3 # under way (not waiting for anything to check): then stopped
  term "$P"
  check "role $role: exit status" "$RC" 0
  check "role $role: exits within --drain-s $DRAIN_S" "$(within "$MS")" yes
  echo "role $role: SIGTERM to exit $MS ms" >&2
  [ "$role" = worker ] && check "role worker: the run is queued again" "$(run_state)" queued
done
open_streams api
term "$API"
check "role api: exit status" "$RC" 0
check "role api: exits within --drain-s $DRAIN_S" "$(within "$MS")" yes
echo "role api: SIGTERM to exit $MS ms" >&2
wait "$GET_PID" "$TOOL_PID" "$SHORT_PID" "$LONG_PID" 2>/dev/null
check "role api: the short model stream finished" "$(grep -c '^data: \[DONE\]' "$TMP/api.short")" 1
check "role api: the long model stream was cut" "$(grep -c '^data: \[DONE\]' "$TMP/api.long")" 0
curl -s -X POST -H 'Content-Type: application/json' -d '{"stall":false}' "$TG/control/faults" >/dev/null

aw_done "drain_test ($BACKEND)"
