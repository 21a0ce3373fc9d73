#!/usr/bin/env bash
# The MCP gateway with real peers, all from npm and unmodified (installed
# here): @modelcontextprotocol/server-everything as a stdio upstream (a child
# of the gateway) and as a Streamable HTTP upstream, federated in one
# project; the official clients @modelcontextprotocol/sdk (2025-11-25) and
# @modelcontextprotocol/client (2026-07-28) list and call through the gateway.
#   mcp_sdk_test.sh AWOOOP_BINARY
set -uo pipefail
BIN=$1
TMP=$(mktemp -d /tmp/aw-mcp-sdk.XXXXXX)
PASS=0
FAIL=0
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  [ -n "${KEEP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT
ok()   { PASS=$((PASS + 1)); }
bad()  { FAIL=$((FAIL + 1)); echo "FAIL: $*" >&2; }
check() { if [ "$2" == "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi; }

NM=${AWOOOP_NPM_CACHE:-$HOME/.cache/awooop-npm}/mcp
if [ ! -d "$NM/node_modules/@modelcontextprotocol/client" ] || [ ! -d "$NM/node_modules/@modelcontextprotocol/server-everything" ]; then
  mkdir -p "$NM"
  (cd "$NM" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund \
    @modelcontextprotocol/sdk @modelcontextprotocol/client @modelcontextprotocol/server-everything \
    mcp-proxy >/dev/null 2>"$TMP/npm.log") || { cat "$TMP/npm.log" >&2; echo "npm install failed" >&2; exit 1; }
fi
cp "$(dirname "$0")/mcp_clients.mjs" "$NM/mcp_clients.mjs"
NODE=$(command -v node)
EVERY=$NM/node_modules/@modelcontextprotocol/server-everything/dist/index.js
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 100); do (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; exit 1; }

PE=$(free_port)
(cd "$TMP" && PORT=$PE exec "$NODE" "$EVERY" streamableHttp >/dev/null 2>&1) &
PIDS+=($!)
AW=$(free_port)
ADMIN=$("$BIN" key generate)
AWOOOP_BOOTSTRAP_KEY=$ADMIN "$BIN" serve --db "sqlite:$TMP/aw.db" --listen 127.0.0.1:$AW \
  --mcp-stdio-allow "$NODE" >/dev/null 2>"$TMP/server.log" &
PIDS+=($!)
wait_port "$PE"; wait_port "$AW"
URL=http://127.0.0.1:$AW
api() { curl -s -X "$1" -H "Authorization: Bearer $3" -H 'Content-Type: application/json' ${4:+--data-binary "$4"} "$URL$2"; }
api POST /v1/projects "$ADMIN" '{"id":"peers"}' >/dev/null
K1=$(api POST /v1/projects/peers/keys "$ADMIN" '{"name":"op1","scope":"operator"}' | jq -r .key)
K2=$(api POST /v1/projects/peers/keys "$ADMIN" '{"name":"op2","scope":"operator"}' | jq -r .key)
W=$(api POST /v1/projects/peers/keys "$ADMIN" '{"name":"agent","scope":"worker"}' | jq -r .key)
BODY="{\"allow_private_network\":true,\"upstreams\":{
  \"ev\":{\"transport\":\"stdio\",\"command\":[\"$NODE\",\"$EVERY\",\"stdio\"]},
  \"evh\":{\"transport\":\"http\",\"url\":\"http://127.0.0.1:$PE/mcp\",\"relay\":[\"resources\",\"prompts\"]}},
  \"tools\":[{\"name\":\"echo\",\"provider\":\"ev\",\"mode\":\"read_only\",
              \"args_schema\":{\"type\":\"object\",\"required\":[\"message\"],\"properties\":{\"message\":{\"type\":\"string\"}}}},
             {\"name\":\"get-sum\",\"provider\":\"evh\",\"mode\":\"read_only\"},
             {\"name\":\"echo\",\"provider\":\"evh\",\"mode\":\"read_only\"}]}"
base=/v1/projects/peers/contracts/mcp_tool/default/revisions
REV=$(api POST "$base" "$K1" "{\"body\":$BODY}" | jq -r .revision_id)
check "publish pins server-everything's tools" "$(api POST "$base/$REV/publish" "$K1" | jq -r '[.body.tools[].pin | startswith("sha256:")] | all')" true
api POST "$base/$REV/approve" "$K2" >/dev/null
check "activate" "$(api POST "$base/$REV/activate" "$K1" | jq -r .activated)" true

(cd "$NM" && timeout 120 "$NODE" mcp_clients.mjs "$URL/v1/projects/peers/mcp" "$W") >"$TMP/clients" 2>"$TMP/clients.err"
check "clients ran" $? 0
cat "$TMP/clients.err" >&2
for c in sdk-v1 client-v2-pinned client-v2-auto; do
  line=$(grep "\"client\":\"$c\"" "$TMP/clients")
  j() { echo "$line" | jq -r "$1"; }
  check "$c error" "$(j '.error // "none"')" none
  check "$c tools" "$(j '.tools | join(",")')" "echo__ev,echo__evh,get-sum__evh"
  check "$c echo over stdio" "$(j .echo)" "Echo: over stdio"
  check "$c sum over http" "$(j .sum | grep -o 42)" 42
  check "$c refusal code" "$(j .refusal.data)" E-MCP-GATE-002
  check "$c bad arguments" "$(j .bad_args.data)" E-MCP-GATE-005
  check "$c resources relayed" "$(j '.resources > 0 and .read > 0')" true
  check "$c prompts relayed" "$(j '.prompts > 0')" true
done
check "v1 speaks 2025-11-25" "$(grep '"client":"sdk-v1"' "$TMP/clients" | jq -r .version)" 2025-11-25
check "v2 pinned speaks 2026-07-28" "$(grep '"client":"client-v2-pinned"' "$TMP/clients" | jq -r .version)" 2026-07-28

echo "mcp_sdk_test: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
