#!/usr/bin/env bash
# The MCP gateway with real peers, all from npm and unmodified (installed
# here): @modelcontextprotocol/server-everything as a stdio upstream (a child
# of the gateway) and as a Streamable HTTP upstream, federated in one
# project; the official clients @modelcontextprotocol/sdk (2025-11-25) and
# @modelcontextprotocol/client (2026-07-28) list and call through the gateway.
#   mcp_sdk_test.sh AWOOOP_BINARY
set -uo pipefail
BIN=$1
. "$(dirname "$0")/lib.sh"

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
PE=$(free_port)
(cd "$TMP" && PORT=$PE exec "$NODE" "$EVERY" streamableHttp >/dev/null 2>&1) &
PIDS+=($!)
DB="sqlite:$TMP/aw.db"
EXTRA=""
# the whole argv, and node_modules shown read-only in the child's sandbox:
# a copy the sandbox uid can walk to ($HOME is 0700)
chmod 755 "$TMP" && mkdir -p "$TMP/nm" && cp -a "$NM/node_modules" "$TMP/nm/" || exit 1
EVERY_S=$TMP/nm/node_modules/@modelcontextprotocol/server-everything/dist/index.js
aw_serve --mcp-stdio-allow "[{\"argv\":[\"$NODE\",\"$EVERY_S\",\"stdio\"],\"paths\":[\"$TMP/nm\"]}]" --egress-allow-private peers
wait_port "$PE"
api POST /v1/projects "$ADMIN" '{"id":"peers"}' >/dev/null
K1=$(mkkey peers op1 operator); K2=$(mkkey peers op2 operator); W=$(mkkey peers agent worker)
BODY="{\"upstreams\":{
  \"ev\":{\"transport\":\"stdio\",\"command\":[\"$NODE\",\"$EVERY_S\",\"stdio\"]},
  \"evh\":{\"transport\":\"http\",\"url\":\"http://127.0.0.1:$PE/mcp\",\"relay\":[\"resources\",\"prompts\"]}},
  \"tools\":[{\"name\":\"echo\",\"provider\":\"ev\",\"mode\":\"read_only\",
              \"args_schema\":{\"type\":\"object\",\"required\":[\"message\"],\"properties\":{\"message\":{\"type\":\"string\"}}}},
             {\"name\":\"get-sum\",\"provider\":\"evh\",\"mode\":\"read_only\"},
             {\"name\":\"echo\",\"provider\":\"evh\",\"mode\":\"read_only\"},
             {\"name\":\"trigger-sampling-request\",\"provider\":\"ev\",\"mode\":\"read_only\"},
             {\"name\":\"trigger-elicitation-request\",\"provider\":\"evh\",\"mode\":\"read_only\"},
             {\"name\":\"trigger-long-running-operation\",\"provider\":\"ev\",\"mode\":\"read_only\"},
             {\"name\":\"trigger-long-running-operation\",\"provider\":\"evh\",\"mode\":\"read_only\"},
             {\"name\":\"toggle-subscriber-updates\",\"provider\":\"evh\",\"mode\":\"read_only\"}]}"
base=/v1/projects/peers/contracts/mcp_tool/default/revisions
REV=$(api POST "$base" "$K1" "{\"body\":$BODY}" | jq -r .revision_id)
PUB=$(api POST "$base/$REV/publish" "$K1"); check "publish pins server-everything's tools" "$(echo "$PUB" | jq -r '[.body.tools[].pin | startswith("sha256v2:")] | all')" true
api POST "$base/$REV/approve" "$K2" >/dev/null
check "activate" "$(api POST "$base/$REV/activate" "$K1" | jq -r .activated)" true

(cd "$NM" && timeout 120 "$NODE" mcp_clients.mjs "$URL/v1/projects/peers/mcp" "$W") >"$TMP/clients" 2>"$TMP/clients.err"
check "clients ran" $? 0
cat "$TMP/clients.err" >&2
for c in sdk-v1 client-v2-pinned client-v2-auto; do
  line=$(grep "\"client\":\"$c\"" "$TMP/clients")
  j() { echo "$line" | jq -r "$1"; }
  check "$c error" "$(j '.error // "none"')" none
  check "$c tools" "$(j '.tools | join(",")')" "echo__ev,echo__evh,get-sum__evh,toggle-subscriber-updates__evh,trigger-elicitation-request__evh,trigger-long-running-operation__ev,trigger-long-running-operation__evh,trigger-sampling-request__ev"
  check "$c echo over stdio" "$(j .echo)" "Echo: over stdio"
  check "$c sum over http" "$(j .sum | grep -o 42)" 42
  check "$c refusal code" "$(j .refusal.data)" E-MCP-GATE-002
  check "$c bad arguments" "$(j .bad_args.data)" E-MCP-GATE-005
  check "$c resources relayed" "$(j '.resources > 0 and .read > 0')" true
  check "$c prompts relayed" "$(j '.prompts > 0')" true
done
v1=$(grep '"client":"sdk-v1"' "$TMP/clients")
check "sampling asked of the v1 client during a stdio call" "$(echo "$v1" | jq -r '.sampling | contains("sampled-by-client")')" true
check "elicitation asked of the v1 client during an http call" "$(echo "$v1" | jq -r '.elicitation | contains("Name: Ada")')" true
check "progress relayed from the stdio upstream" "$(echo "$v1" | jq -c .progress_ev)" "[1,2,3]"
check "progress relayed from the http upstream" "$(echo "$v1" | jq -c .progress_evh)" "[1,2,3]"
check "a subscribed resource's update reaches the v1 client's GET stream (http upstream)" "$(echo "$v1" | jq -r .updated)" true
for c in client-v2-pinned client-v2-auto; do
  check "$c (no stream to ask on): sampling refused" "$(grep "\"client\":\"$c\"" "$TMP/clients" | jq -r .sampling)" refused
done
check "v1 speaks 2025-11-25" "$(grep '"client":"sdk-v1"' "$TMP/clients" | jq -r .version)" 2025-11-25
check "v2 pinned speaks 2026-07-28" "$(grep '"client":"client-v2-pinned"' "$TMP/clients" | jq -r .version)" 2026-07-28

aw_done mcp_sdk_test
