#!/usr/bin/env bash
# bench/mcp: the MCP gateway's cost, side by side in one run, tools/call of
# server-everything's `echo` (the official @modelcontextprotocol/server-everything,
# installed here from npm) through four paths:
#   a direct        server-everything over Streamable HTTP
#   b mcp-proxy     stdio server-everything behind mcp-proxy (npm)
#   c awooop stdio  the same stdio server behind `awooop serve` (SQLite)
#   d awooop http   the HTTP server-everything of (a) behind `awooop serve`
#   e fake direct   the MCP double of the tests (C, tests/support/fake_mcp.c)
#   f awooop fake   the double behind `awooop serve`: f - e is the gateway's own
#                   cost, which node's own latency and its variance (a) hide
#   g relay fake    the double behind nginx as a bare reverse proxy
#                   (bench/relay.sh): what relaying alone costs here, the
#                   ceiling for any gateway
# awooop with all five gates on: key and tenant, policy and pin, an args
# schema, a rate limit and the budget check, the approval check, an audit
# record per call. Two clients: the official SDK client (one node process,
# @modelcontextprotocol/sdk) and bench/mcp/loadgen.c (libcurl, keep-alive),
# at 1 and 32 concurrent clients, SECS s each; every run prints p50/p99 and
# calls/s, then the ratios the issue asks for: (d) - (a) added p50 with the
# lean client, and (c) / (b) calls/s at 32 clients.
#
#   bench/mcp/run.sh [SECS]    (default 10)
#   AWOOOP_BIN=/other/build/awooop bench/mcp/run.sh   that build's gateway instead
#               (before/after: the same loads, doubles and load generator)
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-10}

scripts/deps.sh --bench >/dev/null
if ! command -v npm >/dev/null; then # Debian's node and npm, only when there are none
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >&2
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target awooop bench_mcp_loadgen fake_mcp >/dev/null
BIN=${AWOOOP_BIN:-$PWD/build/awooop}
LG=$PWD/build/bench/bench_mcp_loadgen
OUT=$(mktemp -d /tmp/aw-mcp-bench.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$OUT"; }
trap cleanup EXIT

# The stdio server runs in awooop's sandbox, which shows the child only the
# paths it was given, reachable by others: a cache under a home others may
# not enter (root's, mode 700) is kept in /var/tmp instead.
CACHE=${AWOOOP_NPM_CACHE:-$HOME/.cache/awooop-npm}
if [ -z "${AWOOOP_NPM_CACHE:-}" ] && [ "$(($(stat -c %a "$HOME") % 10 & 1))" = 0 ]; then
  CACHE=/var/tmp/awooop-npm-$(id -u)
fi
NM=$CACHE/mcp
if [ ! -d "$NM/node_modules/mcp-proxy" ] || [ ! -d "$NM/node_modules/@modelcontextprotocol/server-everything" ]; then
  echo "installing @modelcontextprotocol/sdk, server-everything and mcp-proxy into $NM ..." >&2
  mkdir -p "$NM"
  (cd "$NM" && npm init -y >/dev/null &&
    npm install --silent --no-audit --no-fund @modelcontextprotocol/sdk \
      @modelcontextprotocol/server-everything mcp-proxy >/dev/null)
fi
ver() { jq -r .version "$NM/node_modules/$1/package.json"; }
EVERY=$NM/node_modules/@modelcontextprotocol/server-everything/dist/index.js
NODE=$(command -v node)
cp bench/mcp/sdk_client.mjs "$NM/sdk_client.mjs"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 100); do (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; exit 1; }

PA=$(free_port)
(cd "$OUT" && PORT=$PA exec "$NODE" "$EVERY" streamableHttp >/dev/null 2>&1) &
PIDS+=($!)
PB=$(free_port)
"$NODE" "$NM/node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs" --port "$PB" --host 127.0.0.1 \
  --server stream -- "$NODE" "$EVERY" stdio >/dev/null 2>&1 &
PIDS+=($!)
"$PWD/build/tests/fake_mcp" --http 0 >"$OUT/fake.port" &
PIDS+=($!)
wait_port "$PA"; wait_port "$PB"
for _ in $(seq 1 50); do PE=$(head -1 "$OUT/fake.port"); [ -n "$PE" ] && break; sleep 0.1; done
PG=$(bench/relay.sh "$OUT/relay" "$PE")
PIDS+=("$(cat "$OUT/relay/nginx.pid")")

ADMIN=$("$BIN" key generate)
AW=$(free_port)
AWOOOP_BOOTSTRAP_KEY=$ADMIN "$BIN" serve --db "sqlite:$OUT/aw.db" --listen 127.0.0.1:$AW \
  --log-level warn --max-per-ip 1024 --mcp-stdio-allow "[{\"argv\":[\"$NODE\",\"$EVERY\",\"stdio\"],\"paths\":[\"$NM/node_modules\"]}]" --egress-allow-private "*" 2>"$OUT/aw.log" >/dev/null &
PIDS+=($!)
wait_port "$AW"
export AWOOOP_URL=http://127.0.0.1:$AW
api() { curl -sf -X "$1" -H "Authorization: Bearer $3" -H 'Content-Type: application/json' ${4:+--data-binary "$4"} "$AWOOOP_URL$2"; }
TOOL='{"name":"echo","provider":"ev","mode":"read_only",
  "args_schema":{"type":"object","required":["message"],"properties":{"message":{"type":"string","maxLength":10000}}},
  "rate_limit":{"per_minute":6000000,"burst":1000000}}'
for p in stdio http fake; do
  api POST /v1/projects "$ADMIN" "{\"id\":\"bench-$p\"}" >/dev/null
  K1=$(api POST "/v1/projects/bench-$p/keys" "$ADMIN" '{"name":"op1","scope":"operator"}' | jq -r .key)
  K2=$(api POST "/v1/projects/bench-$p/keys" "$ADMIN" '{"name":"op2","scope":"operator"}' | jq -r .key)
  W=$(api POST "/v1/projects/bench-$p/keys" "$ADMIN" '{"name":"agent","scope":"worker"}' | jq -r .key)
  if [ $p = stdio ]; then UP="{\"transport\":\"stdio\",\"command\":[\"$NODE\",\"$EVERY\",\"stdio\"]}"
  elif [ $p = http ]; then UP="{\"transport\":\"http\",\"url\":\"http://127.0.0.1:$PA/mcp\"}"
  else UP="{\"transport\":\"http\",\"url\":\"http://127.0.0.1:$PE/mcp\"}"; fi
  BODY="{\"suffix\":false,\"upstreams\":{\"ev\":$UP},\"tools\":[$TOOL]}"
  base="/v1/projects/bench-$p/contracts/mcp_tool/default/revisions"
  REV=$(api POST "$base" "$K1" "{\"body\":$BODY}" | jq -r .revision_id)
  api POST "$base/$REV/publish" "$K1" >/dev/null
  api POST "$base/$REV/approve" "$K2" >/dev/null
  api POST "$base/$REV/activate" "$K1" >/dev/null
  eval "KEY_$p=\$W"
done

declare -A URLS=(
  [a]="http://127.0.0.1:$PA/mcp"
  [b]="http://127.0.0.1:$PB/mcp"
  [c]="$AWOOOP_URL/v1/projects/bench-stdio/mcp"
  [d]="$AWOOOP_URL/v1/projects/bench-http/mcp"
  [e]="http://127.0.0.1:$PE/mcp"
  [f]="$AWOOOP_URL/v1/projects/bench-fake/mcp"
  [g]="http://127.0.0.1:$PG/mcp")
declare -A NAMES=([a]="a direct (HTTP)" [b]="b mcp-proxy (stdio)" [c]="c awooop (stdio)"
  [d]="d awooop (HTTP)" [e]="e fake direct" [f]="f awooop -> fake"
  [g]="g relay -> fake")
hdr_of() { case $1 in c) echo "Authorization: Bearer $KEY_stdio";; d) echo "Authorization: Bearer $KEY_http";;
  f) echo "Authorization: Bearer $KEY_fake";; *) echo "X-Bench: 1";; esac; }

declare -A R
run() { # run CLIENTKIND TARGET N
  local h; h=$(hdr_of "$2")
  if [ "$1" = lean ]; then "$LG" "${URLS[$2]}" echo "$3" 2 "$h" >/dev/null; R[$1,$2,$3]=$("$LG" "${URLS[$2]}" echo "$3" "$SECS" "$h")
  else R[$1,$2,$3]=$(cd "$NM" && "$NODE" sdk_client.mjs "${URLS[$2]}" echo "$3" "$SECS" "$h"); fi
}
for kind in lean sdk; do
  for n in 1 32; do
    for t in a b c d e f g; do run $kind $t $n; done
  done
done

f() { echo "${R[$1,$2,$3]}" | jq -r ".$4"; }
echo
echo "bench/mcp: tools/call echo, ${SECS}s per cell, $(nproc) cores; server-everything $(ver @modelcontextprotocol/server-everything), mcp-proxy $(ver mcp-proxy), SDK client $(ver @modelcontextprotocol/sdk), node $($NODE --version)"
for kind in lean sdk; do
  echo
  echo "client: $([ $kind = lean ] && echo 'lean (bench/mcp/loadgen.c, libcurl keep-alive)' || echo 'official SDK (one node process)')"
  printf '%-22s %12s %10s %10s %12s %10s %10s %8s\n' path "1: calls/s" "p50 ms" "p99 ms" "32: calls/s" "p50 ms" "p99 ms" errors
  for t in a b c d e f g; do
    printf '%-22s %12s %10s %10s %12s %10s %10s %8s\n' "${NAMES[$t]}" \
      "$(f $kind $t 1 calls_per_s)" "$(f $kind $t 1 p50_ms)" "$(f $kind $t 1 p99_ms)" \
      "$(f $kind $t 32 calls_per_s)" "$(f $kind $t 32 p50_ms)" "$(f $kind $t 32 p99_ms)" \
      "$(( $(f $kind $t 1 errors) + $(f $kind $t 32 errors) ))"
  done
done
echo
for kind in lean sdk; do
  for n in 1 32; do
    add=$(echo "$(f $kind d $n p50_ms) - $(f $kind a $n p50_ms)" | bc -l)
    ratio=$(echo "$(f $kind c $n calls_per_s) / $(f $kind b $n calls_per_s)" | bc -l)
    own=$(echo "$(f $kind f $n p50_ms) - $(f $kind e $n p50_ms)" | bc -l)
    printf '%s, %2d clients: awooop adds %.3f ms p50 over server-everything (d - a), %.3f ms over the C double (f - e); awooop stdio = %.2fx mcp-proxy calls/s (c / b)\n' \
      "$kind" "$n" "$add" "$own" "$ratio"
    printf '%s, %2d clients: in front of the C double awooop = %.2fx direct calls/s (f / e; target >= 0.5 at 32), the bare relay %.2fx (g / e) adding %.3f ms p50 (g - e)\n' \
      "$kind" "$n" "$(echo "$(f $kind f $n calls_per_s) / $(f $kind e $n calls_per_s)" | bc -l)" \
      "$(echo "$(f $kind g $n calls_per_s) / $(f $kind e $n calls_per_s)" | bc -l)" \
      "$(echo "$(f $kind g $n p50_ms) - $(f $kind e $n p50_ms)" | bc -l)"
  done
done
