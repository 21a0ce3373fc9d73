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
# Then the adversarial row (issue 40 s3): request shapes that made upstreams
# bill past a budget (n, images, a 6 KB schema, legacy functions and function
# calls in the history, schema retries) against a 2,000-token limit, each
# called until the budget refuses: what the fake upstream (which bills like
# OpenAI) billed vs the limit, and any overshoot (goal <= 1.0x, 0 overshoot).
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
setup_project() { # setup_project NAME BUDGET? MODEL? -> worker key in W_<NAME>, operator O1_<NAME>
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
  act "$1" policy_routing "{\"routes\":[{\"name\":\"chat\",\"match\":{\"task\":\"chat\"},\"candidates\":[{\"provider\":\"openai\",\"model\":\"${3:-m;tokens=16}\"}]}]}"
  [ -n "${2:-}" ] && act "$1" budget "$2"
  eval "W_$1=$w O1_$1=$op1"
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

adversarial() { # one project per shape, each against its own 2,000-token limit
  local line i name p w o body calls code st billed over
  echo "   adversarial shapes against a 2,000-token limit (called until refused, at most 8 calls):"
  python3 - >"$OUT/shapes" <<'PY'
import json
big = "".join("field %03d must hold a value. " % i for i in range(200))
img = lambda d: {"type": "image_url", "image_url": dict({"url": "https://example.com/a.png"}, **d)}
hello = [{"role": "user", "content": "hello"}]
small = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
bigs = dict(small, description=big)
shapes = [
  ("n=20", "gpt-4o;tokens=400", {"messages": hello, "n": 20, "max_tokens": 400}),
  ("8 image_url parts", "gpt-4o;tokens=400", {"messages": [{"role": "user", "content": [img({})] * 8}]}),
  ("8 image_url parts, detail low", "gpt-4o;tokens=400", {"messages": [{"role": "user", "content": [img({"detail": "low"})] * 8}]}),
  ("6 KB response_format schema", "gpt-4o;tokens=400", {"messages": hello, "response_format": {"type": "json_schema", "json_schema": {"name": "big", "schema": bigs}}}),
  ("legacy functions + function_call history", "gpt-4o;tokens=400", {"messages": [
      {"role": "user", "content": "look it up"},
      {"role": "assistant", "content": None, "function_call": {"name": "lookup", "arguments": big}},
      {"role": "function", "name": "lookup", "content": big}],
    "functions": [{"name": "lookup", "description": big, "parameters": {"type": "object"}}]}),
  ("schema retries (answers always invalid)", "gpt-4o;tokens=300;invalid=99", {"messages": hello, "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": small}}}),
  ("upstream ignores max_tokens (forced overshoot)", "gpt-4o;tokens=500;ignoremax=1", {"messages": hello, "max_tokens": 50}),
]
for i, (name, model, body) in enumerate(shapes):
  print(json.dumps({"i": i, "name": name, "model": model, "body": dict(body, model="chat")}))
PY
  printf "   | %-46s | %6s | %7s | %5s | %-12s | %9s |\n" shape billed "x limit" calls then overshoot
  while IFS= read -r line; do
    i=$(j "$line" .i); name=$(j "$line" .name); p=adv$i
    setup_project "$p" '{"period":"day","token_limit":2000,"action_on_exceed":"block"}' "$(j "$line" .model)"
    eval "w=\$W_$p o=\$O1_$p"
    body=$(echo "$line" | jq -c .body)
    calls=0; code=OK
    for _ in $(seq 1 8); do
      code=$(curl -s -o "$OUT/adv.out" -w '%{http_code}' -H "Authorization: Bearer $w" \
        -H 'Content-Type: application/json' --data-binary "$body" "$URL/v1/chat/completions")
      if [ "$code" = 200 ]; then calls=$((calls + 1)); code=OK; continue; fi
      code=$(jq -r '.code // "?"' "$OUT/adv.out")
      [ "$code" = E-SCHEMA-001 ] && continue
      break
    done
    sleep 0.5 # the recorder settles
    st=$(api GET "$o" "/v1/projects/$p/budget")
    billed=$(j "$st" .settled); over=$(j "$st" .ledger.overshoot.tokens)
    printf "   | %-46s | %6s | %7s | %5s | %-12s | %9s |\n" "$name" "$billed" \
      "$(awk -v a="$billed" 'BEGIN { printf "%.2fx", a / 2000 }')" "$calls" "$code" "$over"
  done <"$OUT/shapes"
}
adversarial

PGDB=aw_budget_bench_$$
psql -q -h "$AWOOOP_TEST_PG_HOST" -p "$AWOOOP_TEST_PG_PORT" -U postgres -d postgres -c "CREATE DATABASE $PGDB" >/dev/null
"$BIN" migrate --db "postgresql://postgres@$AWOOOP_TEST_PG_HOST:$AWOOOP_TEST_PG_PORT/$PGDB" >/dev/null 2>&1
export AWOOOP_PUBLISH_KEYS="kb:$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
ADMIN=$("$BIN" key generate)
serve "postgresql://awooop_app@$AWOOOP_TEST_PG_HOST:$AWOOOP_TEST_PG_PORT/$PGDB" "--redis $AWOOOP_TEST_REDIS_URL"
setup_project free; setup_project metered "$BUDGET"
figures postgres
