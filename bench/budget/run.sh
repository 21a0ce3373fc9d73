#!/usr/bin/env bash
# bench/budget: what the token budget ledger costs a model call. Two projects
# on one `awooop serve`, the same routing policy and fake upstream: "free"
# without a budget, "metered" with one (one conditional UPDATE + reservation
# row + ledger line at admission; settlement in the audit batch). Measured
# side by side with bench/llm's load generator, on the embedded SQLite store
# and on PostgreSQL 15 (+ Redis) started by scripts/services.sh:
#   added p50/p99 of a non-streamed call at concurrency 1 (metered - free;
#   free and metered alternate in 3 rounds of SECS each, medians: the
#   machine's drift over a minute is as large as what is measured)
#   calls/s at 64 concurrent.
#
#   bench/budget/run.sh [SECS]     (default 5)
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-5}
scripts/deps.sh --test >/dev/null
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target awooop fake_llm bench_llm_loadgen >/dev/null
BIN=$PWD/build/awooop
LG=$PWD/build/bench/bench_llm_loadgen
OUT=$(mktemp -d /tmp/aw-budget-bench.XXXXXX)
PIDS=()
# shellcheck source=scripts/services.sh
. scripts/services.sh
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; aw_services_stop || true; rm -rf "$OUT"; }
trap cleanup EXIT
aw_services_start >/dev/null

build/tests/fake_llm --name F >"$OUT/fake" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do FP=$(sed -n 's/^port //p' "$OUT/fake"); [ -n "$FP" ] && break; sleep 0.1; done
export BENCH_KEY=sk-bench
echo "{\"providers\":{\"openai\":{\"url\":\"http://127.0.0.1:$FP/v1\",\"api_key\":\"env:BENCH_KEY\"}}}" >"$OUT/llm.json"

serve() { # serve DB [extra] -> URL
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  AWOOOP_BOOTSTRAP_KEY=$ADMIN "$BIN" serve --db "$1" --listen "127.0.0.1:$port" --llm-config "$OUT/llm.json" \
    --log-level warn --http-threads 2 ${2:-} 2>>"$OUT/aw.log" >/dev/null &
  PIDS+=($!)
  URL=http://127.0.0.1:$port
  for _ in $(seq 1 100); do curl -sf "$URL/healthz" >/dev/null && return 0; sleep 0.1; done
  echo "serve did not start" >&2; cat "$OUT/aw.log" >&2; exit 1
}
api() { curl -sf -X "$1" -H "Authorization: Bearer $2" -H 'Content-Type: application/json' ${4:+--data-binary "$4"} "$URL$3"; }
setup_project() { # setup_project NAME BUDGET? -> worker key in W_<NAME>
  api POST "$ADMIN" /v1/projects "{\"id\":\"$1\"}" >/dev/null
  local op1 op2 w base rev
  op1=$(api POST "$ADMIN" "/v1/projects/$1/keys" '{"name":"op1","scope":"operator"}' | jq -r .key)
  op2=$(api POST "$ADMIN" "/v1/projects/$1/keys" '{"name":"op2","scope":"operator"}' | jq -r .key)
  w=$(api POST "$ADMIN" "/v1/projects/$1/keys" '{"name":"w","scope":"worker"}' | jq -r .key)
  act() {
    base=/v1/projects/$1/contracts/$2/default/revisions
    rev=$(api POST "$op1" "$base" "{\"body\":$3}" | jq -r .revision_id)
    api POST "$op1" "$base/$rev/publish" >/dev/null
    api POST "$op2" "$base/$rev/approve" >/dev/null
    api POST "$op1" "$base/$rev/activate" >/dev/null
  }
  act "$1" policy_routing '{"routes":[{"name":"chat","match":{"task":"chat"},"candidates":[{"provider":"openai","model":"m;tokens=16"}]}]}'
  [ -n "${2:-}" ] && act "$1" budget "$2"
  eval "W_$1=$w"
}
j() { echo "$1" | jq -r "$2"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }

med() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

figures() { # figures LABEL: free and metered alternate, 3 rounds, medians
  local f m r fp50=() fp99=() mp50=() mp99=()
  "$LG" "$URL/v1/chat/completions" chat 4 2 0 "Authorization: Bearer $W_free" >/dev/null
  "$LG" "$URL/v1/chat/completions" chat 4 2 0 "Authorization: Bearer $W_metered" >/dev/null
  for r in 1 2 3; do
    f=$("$LG" "$URL/v1/chat/completions" chat 1 "$SECS" 0 "Authorization: Bearer $W_free")
    m=$("$LG" "$URL/v1/chat/completions" chat 1 "$SECS" 0 "Authorization: Bearer $W_metered")
    fp50+=("$(j "$f" .p50_ms)"); fp99+=("$(j "$f" .p99_ms)")
    mp50+=("$(j "$m" .p50_ms)"); mp99+=("$(j "$m" .p99_ms)")
  done
  printf "   %-10s concurrency 1 (median of 3 alternating rounds): free p50 %.3f p99 %.3f | metered p50 %.3f p99 %.3f -> added p50 %s p99 %s ms\n" "$1" \
    "$(med "${fp50[@]}")" "$(med "${fp99[@]}")" "$(med "${mp50[@]}")" "$(med "${mp99[@]}")" \
    "$(sub "$(med "${mp50[@]}")" "$(med "${fp50[@]}")")" "$(sub "$(med "${mp99[@]}")" "$(med "${fp99[@]}")")"
  printf "   %-10s   rounds: added p50 %s | %s | %s ms\n" "$1" "$(sub "${mp50[0]}" "${fp50[0]}")" \
    "$(sub "${mp50[1]}" "${fp50[1]}")" "$(sub "${mp50[2]}" "${fp50[2]}")"
  f=$("$LG" "$URL/v1/chat/completions" chat 64 "$SECS" 0 "Authorization: Bearer $W_free")
  m=$("$LG" "$URL/v1/chat/completions" chat 64 "$SECS" 0 "Authorization: Bearer $W_metered")
  printf "   %-10s 64 concurrent: free %.0f calls/s | metered %.0f calls/s (errors %s)\n" "$1" \
    "$(j "$f" .rps)" "$(j "$m" .rps)" "$(j "$m" .errors)"
}

BUDGET='{"period":"day","token_limit":1000000000000,"action_on_exceed":"block"}'
echo "bench/budget: $(nproc) cores, ${SECS}s per figure, $(date -u +%F)"
ADMIN=$("$BIN" key generate)
serve "sqlite:$OUT/aw.db"
setup_project free; setup_project metered "$BUDGET"
figures sqlite

PGDB=aw_budget_bench_$$
psql -q -h "$AWOOOP_TEST_PG_HOST" -p "$AWOOOP_TEST_PG_PORT" -U postgres -d postgres -c "CREATE DATABASE $PGDB" >/dev/null
"$BIN" migrate --db "postgresql://postgres@$AWOOOP_TEST_PG_HOST:$AWOOOP_TEST_PG_PORT/$PGDB" >/dev/null 2>&1
export AWOOOP_PUBLISH_KEYS="kb:$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
ADMIN=$("$BIN" key generate)
serve "postgresql://awooop_app@$AWOOOP_TEST_PG_HOST:$AWOOOP_TEST_PG_PORT/$PGDB" "--redis $AWOOOP_TEST_REDIS_URL"
setup_project free; setup_project metered "$BUDGET"
figures postgres
