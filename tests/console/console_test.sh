#!/usr/bin/env bash
# The web console in a real browser: Debian's chromium driven by
# playwright-core (npm), axe-core (npm) on every view, against a live
# `awooop serve` with the project's fakes: an OpenAI-compatible upstream
# (fake_llm) and an MCP server (fake_mcp), so the call log has LLM and tool
# calls to show. Project "alpha" is made here with runs in every state
# (two waiting for approval), calls that succeeded, failed and were refused,
# and a budget; twenty more projects for the overview's pages; the browser makes "webcon" itself. Two `awooop watch`
# processes serve the contract the browser activates, so its convergence
# panel must reach 2 of 2. Screenshots of every view (1400 px and 390 px
# wide) go to SHOTS.
#   console_test.sh AWOOOP_BINARY FAKE_LLM FAKE_MCP sqlite|postgres SHOTS_DIR
# DEV=1: set up, print the URL and the keys, and wait (no browser).
set -uo pipefail
BIN=$1
FAKE_LLM=$2
FAKE_MCP=$3
BACKEND=$4
SHOTS=$5
. "$(dirname "$0")/../http/lib.sh"

CHROMIUM=$(command -v chromium || true)
[ -n "$CHROMIUM" ] || { echo "chromium missing: scripts/deps.sh --test installs it" >&2; exit 1; }
NM=${AWOOOP_NPM_CACHE:-$HOME/.cache/awooop-npm}/console
if [ ! -d "$NM/node_modules/playwright-core" ] || [ ! -d "$NM/node_modules/axe-core" ]; then
  mkdir -p "$NM"
  (cd "$NM" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund playwright-core@1.65.1 axe-core@4.14.1 \
    >/dev/null 2>"$TMP/npm.log") || { cat "$TMP/npm.log" >&2; echo "npm install failed" >&2; exit 1; }
fi
cp "$(dirname "$0")/console.mjs" "$NM/"

# the fakes: an LLM upstream and an MCP server on loopback
"$FAKE_LLM" --name A >"$TMP/fake-llm" 2>&1 &
PIDS+=($!)
"$FAKE_MCP" --http 0 >"$TMP/fake-mcp" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do
  LPORT=$(sed -n 's/^port //p' "$TMP/fake-llm"); MPORT=$(head -1 "$TMP/fake-mcp")
  [ -n "$LPORT" ] && [ -n "$MPORT" ] && break
  sleep 0.1
done
cat >"$TMP/llm.json" <<JSON
{"providers": {"openai": {"url": "http://127.0.0.1:$LPORT/v1", "api": "openai"}}}
JSON
export AWOOOP_APPROVAL_KEYS="ka:$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"

aw_db "$BACKEND"
aw_serve --fleet-report-ms 300 --llm-config "$TMP/llm.json" --egress-allow-private alpha
# another tenant with a run: the browser, signed in to its own project, must
# be told "not found" for it
api POST /v1/projects "$ADMIN" '{"id":"outsider"}' >/dev/null
OUT_KEY=$(mkkey outsider op operator)
OTHER_RUN=$(api POST /v1/platform/runs "$OUT_KEY" '{"workflow":[{"kind":"noop"}]}' | jq -r .run_id)

# twenty more projects: the platform's overview pages them (20 a page)
for i in $(seq -w 1 20); do api POST /v1/projects "$ADMIN" "{\"id\":\"p$i\"}" >/dev/null; done
# --- alpha: policies, calls, runs
api POST /v1/projects "$ADMIN" '{"id":"alpha"}' >/dev/null
AOP1=$(mkkey alpha op1 operator); AOP2=$(mkkey alpha op2 operator); AW=$(mkkey alpha agent worker)
ok_act() { check "alpha: $1 active" "$(aw_activate alpha "$1" "$2" "$AOP1" "$AOP2")" true; }
ok_act policy_routing '{"routes":[{"name":"chat","match":{"task":"chat"},"candidates":[{"provider":"openai","model":"gpt-x"}]},
  {"name":"broken","match":{"task":"broken"},"candidates":[{"provider":"openai","model":"b;status=503"}]},
  {"name":"agent","match":{"task":"agent"},"candidates":[{"provider":"openai","model":"a;turns=2"}]}]}'
ok_act budget '{"period":"day","token_limit":1000000,"action_on_exceed":"kill",
  "prices":{"*":{"input_per_mtok":2.5,"output_per_mtok":10}}}'
ok_act mcp_tool "{\"upstreams\":{\"web\":{\"transport\":\"http\",\"url\":\"http://127.0.0.1:$MPORT/mcp\"}},
  \"tools\":[{\"name\":\"echo\",\"provider\":\"web\",\"mode\":\"read_only\"}]}"
chat() { api POST /v1/chat/completions "$AW" "{\"model\":\"$1\",\"messages\":[{\"role\":\"user\",\"content\":\"$2\"}]}" >/dev/null; }
for i in 1 2 3; do chat chat "hello $i"; done
chat broken "this one fails"
chat nosuchroute "this one is refused"
MCPH=(-H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28')
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}'
tool() {
  curl -s -X POST "$URL/v1/projects/alpha/mcp" -H "Authorization: Bearer $AW" -H 'Content-Type: application/json' \
    "${MCPH[@]}" -H 'Mcp-Method: tools/call' -H "Mcp-Name: $1" \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$1\",\"arguments\":$2,$META}}" >/dev/null
}
tool echo__web '{"text":"hi"}'
tool nosuch__web '{}'
# runs: one that asks the model (its call carries the run), one that fails,
# two that wait for an approval, one sleeping
run() { api POST /v1/platform/runs "$AOP1" "$1" | jq -r .run_id; }
# tenant strings that look like markup: the console shows them as text
XSS='<img src=x onerror=\"window.__xss=1\">'
LLM_RUN=$(run "{\"workflow\":[{\"kind\":\"llm\",\"args\":{\"model\":\"chat\",\"task\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"summarise\"}]}}],\"input\":{\"ticket\":\"$XSS\"}}")
run '{"workflow":[{"kind":"noop"},{"kind":"fail","args":{"message":"it broke"}}],"max_attempts":1}' >/dev/null
api PUT /v1/projects/alpha/queues/mail "$AOP1" '{"concurrency":2}' >/dev/null
MAIL_RUN=$(run '{"workflow":[{"kind":"noop"}],"queue":"mail"}')
# an agent: two turns that call the echo tool, then the answer
AGENT_RUN=$(run '{"workflow":[{"name":"answer","kind":"agent","args":{"model":"agent","input":"what is new?","tools":["echo__web"],"max_turns":4}}]}')
APPROVE_RUN=$(run '{"workflow":[{"kind":"noop"},{"kind":"approval","args":{"summary":"deploy to prod"}},{"kind":"noop"}]}')
DENY_RUN=$(run "{\"workflow\":[{\"kind\":\"approval\",\"args\":{\"summary\":\"drop the table $XSS\"}}]}")
for r in "$APPROVE_RUN" "$DENY_RUN" "$LLM_RUN" "$AGENT_RUN"; do
  for _ in $(seq 1 300); do
    s=$(api GET "/v1/platform/runs/$r" "$AOP1" | jq -r .state)
    [ "$s" = waiting_approval ] || [ "$s" = succeeded ] || [ "$s" = failed ] && break
    sleep 0.1
  done
done
check "alpha: the llm run succeeded" "$(api GET "/v1/platform/runs/$LLM_RUN" "$AOP1" | jq -r .state)" succeeded
check "alpha: the agent run succeeded" "$(api GET "/v1/platform/runs/$AGENT_RUN" "$AOP1" | jq -r .state)" succeeded
check "alpha: a run waits for approval" "$(api GET "/v1/platform/runs/$APPROVE_RUN" "$AOP1" | jq -r .state)" waiting_approval

# the project the browser creates: two watchers start at once and wait for
# its first activation (a watch whose project does not exist yet keeps
# calling; its fleet reports succeed once the project exists)
for w in 1 2; do
  "$BIN" watch --project webcon --contract default --db "$DB" $EXTRA --calls-per-sec 20 \
    --interval-ms 500 --fleet-report-ms 300 >"$TMP/w$w.changes" 2>"$TMP/w$w.stats" &
  PIDS+=($!)
done
if [ -n "${DEV:-}" ]; then
  echo "URL=$URL"; echo "ADMIN=$ADMIN"; echo "AOP1=$AOP1"; echo "AOP2=$AOP2"; echo "AW=$AW"
  echo "LLM_RUN=$LLM_RUN APPROVE_RUN=$APPROVE_RUN DENY_RUN=$DENY_RUN OTHER_RUN=$OTHER_RUN"
  echo "TMP=$TMP"
  while :; do sleep 60; done
fi
# the files are C strings in the binary: no trigraph may hide in them
check "no ?? in the console's files" "$(cat "$(dirname "$0")"/../../console/* | grep -c '??')" 0
mkdir -p "$SHOTS" && rm -f "$SHOTS"/*.png # this run's only
export AW_CONSOLE=$(jq -n --arg url "$URL" --arg admin "$ADMIN" --arg other_run "$OTHER_RUN" --arg shots "$SHOTS" \
  --arg chromium "$CHROMIUM" --arg approve_run "$APPROVE_RUN" --arg deny_run "$DENY_RUN" --arg llm_run "$LLM_RUN" --arg mail_run "$MAIL_RUN" --arg agent_run "$AGENT_RUN" \
  --arg agent "$AW" --arg op1 "$AOP1" '$ARGS.named')
(cd "$NM" && node console.mjs) >"$TMP/browser.out" 2>&1
rc=$?
# what failed first (CI shows the head of a failed test's output), then all
grep -E '^FAIL' "$TMP/browser.out" >&2
cat "$TMP/browser.out"
check "browser run" "$rc" 0
aw_done "console_$BACKEND"
