#!/usr/bin/env bash
# bench/fair: the noisy neighbour of issue 39, side by side in one run. For
# each shared resource, tenant B's cheap call (bench/fair/fairgen.c, one
# client, a call at most every 10 ms, every call started in the window
# counted, however late it ends) is measured three ways:
#   alone    B alone on deployment "main"
#   control  tenant A's flood against a separate `awooop serve` (its own
#            SQLite file and port, same host, same upstream doubles) while B
#            calls "main": what A's load costs B on two shared cores whatever
#            the gateways do
#   flood    A's flood against "main", beside B: what sharing the gateway adds
# The floods, the worst shape of each finding of issue 39:
#   MCP workers     A: 40 clients calling its own upstream's `slow {ms:20000}`
#                   (tests/support/fake_mcp.c); B: tools/list and tools/call of
#                   `echo` on its own upstream
#   LLM in flight   A: 300 parked streams (`m;ttft=20000`, Retry-After honoured
#                   after a 429); B: a 4-token chat (tests/support/fake_llm.c)
#   shared breaker  A: 8 clients on a route with timeout_ms 100 to the same
#                   openai upstream answering after 300 ms; B: the 4-token chat
#   emergency cap   A: the same lever on an ollama candidate (platform Ollama
#                   topology, emergency cloud model with a daily cap of 50);
#                   B: a 4-token chat on a healthy Ollama host
#   body memory     A: 80 slow uploads of 1 MiB (all but the last byte sent,
#                   then held; again after each answer, Retry-After honoured)
#                   against the 64 MiB --body-memory; B: the 4-token chat
#   store pool      A: 32 clients writing its queue setting (PUT .../queues/q:
#                   on SQLite each write waits for the one writer, holding a
#                   store connection of the pool of 8); B: a read of its queues
# Goal per row: B's p99 within 2x of alone, 0 failures. The table prints
# flood / alone and flood / control.
#
#   bench/fair/run.sh [SECS] [BEFORE_REF]   (default 10; ~3 minutes a build, the before build longer)
# ROWS (default all) picks rows by their flood: ROWS="upload store" runs the
# body-memory and store-pool rows only.
# With BEFORE_REF (e.g. 834a7c4^, the build before the bulkheads) that commit
# is exported (git archive) and built under build/fair-before-SHA, the same
# rows run against it, and a before / after table follows.
# Every server listens on 127.0.0.1 and is stopped at exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-10}
BEFORE=${2:-}
MCP_FLOOD=${MCP_FLOOD:-40}
LLM_FLOOD=${LLM_FLOOD:-300}
UPLOAD_FLOOD=${UPLOAD_FLOOD:-80}
POOL_FLOOD=${POOL_FLOOD:-32}
ROWS=${ROWS:-mcp park lever olever upload store}

scripts/deps.sh --test >/dev/null
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target awooop fake_llm fake_mcp bench_fairgen >/dev/null
FG=$PWD/build/bench/bench_fairgen
FAKE_LLM=$PWD/build/tests/fake_llm
FAKE_MCP=$PWD/build/tests/fake_mcp
declare -A BINS=([after]=$PWD/build/awooop)
BUILDS=(after)
if [ -n "$BEFORE" ]; then
  SHA=$(git rev-parse --short "$BEFORE")
  BD=$PWD/build/fair-before-$SHA
  if [ ! -x "$BD/build/awooop" ]; then
    echo "building $SHA (before) in $BD ..." >&2
    rm -rf "$BD/src"; mkdir -p "$BD/src"
    git archive "$SHA" | tar -x -C "$BD/src"
    cmake -S "$BD/src" -B "$BD/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$BD/build" -j"$(nproc)" --target awooop >/dev/null
  fi
  BINS[before]=$BD/build/awooop
  BUILDS=(before after)
fi

OUT=$(mktemp -d /tmp/aw-fair-bench.XXXXXX)
PIDS=()
stop_all() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; PIDS=(); }
cleanup() { stop_all; rm -rf "$OUT"; }
trap cleanup EXIT

start_fakes() { # -> PMA PMB (MCP doubles of A and B), PF (openai), PO1 PO2 (Ollama), PG (emergency)
  rm -f "$OUT"/mcp-*.port "$OUT"/fake-* # a port of the previous build's doubles is not theirs
  "$FAKE_MCP" --http 0 >"$OUT/mcp-a.port" & PIDS+=($!)
  "$FAKE_MCP" --http 0 >"$OUT/mcp-b.port" & PIDS+=($!)
  local n
  for n in F O1 O2 G; do "$FAKE_LLM" --name $n >"$OUT/fake-$n" 2>&1 & PIDS+=($!); done
  for _ in $(seq 1 50); do
    PMA=$(head -1 "$OUT/mcp-a.port"); PMB=$(head -1 "$OUT/mcp-b.port")
    PF=$(sed -n 's/^port //p' "$OUT/fake-F"); PO1=$(sed -n 's/^port //p' "$OUT/fake-O1")
    PO2=$(sed -n 's/^port //p' "$OUT/fake-O2"); PG=$(sed -n 's/^port //p' "$OUT/fake-G")
    [ -n "$PMA" ] && [ -n "$PMB" ] && [ -n "$PF" ] && [ -n "$PO1" ] && [ -n "$PO2" ] && [ -n "$PG" ] && break
    sleep 0.1
  done
  [ -n "$PG" ] || { echo "the upstream doubles did not start" >&2; exit 1; }
  export BENCH_KEY=sk-bench
  cat >"$OUT/llm.json" <<JSON
{"providers": {
  "openai": {"url": "http://127.0.0.1:$PF/v1", "api_key": "env:BENCH_KEY"},
  "gemini": {"url": "http://127.0.0.1:$PG/v1", "api_key": "env:BENCH_KEY"}}}
JSON
}

api() { curl -s -X "$1" -H "Authorization: Bearer $3" -H 'Content-Type: application/json' ${4:+--data-binary "$4"} "$U$2"; }
mkkey() { api POST "/v1/projects/$1/keys" "$ADMIN" "{\"name\":\"$2\",\"scope\":\"$3\"}" | jq -r .key; }
activate() { # activate PROJECT FAMILY NAME BODY KEY1 KEY2
  local base=/v1/projects/$1/contracts/$2/$3/revisions rev
  rev=$(api POST "$base" "$5" "{\"body\":$4}" | jq -r .revision_id)
  api POST "$base/$rev/publish" "$5" >/dev/null
  api POST "$base/$rev/approve" "$6" >/dev/null
  local a; a=$(api POST "$base/$rev/activate" "$5")
  [ "$(echo "$a" | jq -r .activated)" = true ] || { echo "activating $1 $2 failed: $a" >&2; exit 1; }
}

deploy() { # deploy NAME BIN -> URL_NAME, and (main) the keys WA WB
  local name=$1 bin=$2 log=$OUT/$1.log
  ADMIN=$("$bin" key generate)
  rm -f "$log" # the previous build's serving line is not this server's
  AWOOOP_BOOTSTRAP_KEY=$ADMIN "$bin" serve --db "sqlite:$OUT/$name.db" --listen 127.0.0.1:0 \
    --llm-config "$OUT/llm.json" --egress-allow-private tenant-a,tenant-b --max-per-ip 4096 \
    >/dev/null 2>"$log" &
  PIDS+=($!)
  U=
  for _ in $(seq 1 100); do
    if grep -q '"awooop serving"' "$log" 2>/dev/null; then
      U="http://127.0.0.1:$(grep '"awooop serving"' "$log" | tail -1 | jq -r .port)"
      curl -sf "$U/healthz" >/dev/null && break
    fi
    sleep 0.1
  done
  [ -n "$U" ] || { echo "$name did not start" >&2; cat "$log" >&2; exit 1; }
  local p k1 k2 pop1 pop2
  pop1=$(mkkey __platform__ pop1 platform-admin); pop2=$(mkkey __platform__ pop2 platform-admin)
  activate __platform__ platform_resource ollama_topology \
    "{\"kind\":\"ollama_topology\",\"primary\":{\"url\":\"http://127.0.0.1:$PO1\"},\"secondary\":{\"url\":\"http://127.0.0.1:$PO2\"},
      \"emergency_cloud\":{\"provider\":\"gemini\",\"model\":\"g-flash\",\"daily_cap\":50}}" "$pop1" "$pop2"
  for p in tenant-a tenant-b; do
    api POST /v1/projects "$ADMIN" "{\"id\":\"$p\"}" >/dev/null
    k1=$(mkkey $p op1 operator); k2=$(mkkey $p op2 operator)
    eval "W_${p#tenant-}=\$(mkkey $p w worker)"
    eval "O_${p#tenant-}=\$k1"
    if [ $p = tenant-a ]; then
      activate $p mcp_tool default "{\"suffix\":false,\"upstreams\":{\"a\":{\"transport\":\"http\",\"url\":\"http://127.0.0.1:$PMA/mcp\"}},
        \"tools\":[{\"name\":\"slow\",\"provider\":\"a\",\"mode\":\"read_only\",\"timeout_ms\":60000,
          \"args_schema\":{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\"}}},
          \"rate_limit\":{\"per_minute\":6000000,\"burst\":1000000}}]}" "$k1" "$k2"
      activate $p policy_routing default '{"routes":[
        {"name":"park","match":{"task":"park"},"candidates":[{"provider":"openai","model":"m;ttft=20000;tokens=4"}]},
        {"name":"lever","match":{"task":"lever"},"candidates":[{"provider":"openai","model":"m;ttft=300;tokens=4","timeout_ms":100}]},
        {"name":"olever","match":{"task":"olever"},"candidates":[{"provider":"ollama","model":"llama3;ttft=300;tokens=4","timeout_ms":100}]}]}' "$k1" "$k2"
    else
      activate $p mcp_tool default "{\"suffix\":false,\"upstreams\":{\"b\":{\"transport\":\"http\",\"url\":\"http://127.0.0.1:$PMB/mcp\"}},
        \"tools\":[{\"name\":\"echo\",\"provider\":\"b\",\"mode\":\"read_only\",
          \"args_schema\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\",\"maxLength\":100}}},
          \"rate_limit\":{\"per_minute\":6000000,\"burst\":1000000}}]}" "$k1" "$k2"
      activate $p policy_routing default '{"routes":[
        {"name":"chat","match":{"task":"chat"},"candidates":[{"provider":"openai","model":"m;tokens=4"}]},
        {"name":"local","match":{"task":"local"},"candidates":[{"provider":"ollama","model":"llama3;tokens=4"}]}]}' "$k1" "$k2"
    fi
  done
  eval "URL_$name=\$U"
}

# probe ROW KIND ARGS... : B's calls on main, SECS s -> R[ROW]
declare -A R A
probe() {
  local row=$1 kind=$2; shift 2
  case $kind in
    list) R[$row]=$("$FG" -k mcp-list -c 1 -i 10 -d "$SECS" "$URL_main/v1/projects/tenant-b/mcp" "Authorization: Bearer $W_b") ;;
    call) R[$row]=$("$FG" -k mcp-call -t echo -a '{"text":"hi"}' -c 1 -i 10 -d "$SECS" "$URL_main/v1/projects/tenant-b/mcp" "Authorization: Bearer $W_b") ;;
    chat) R[$row]=$("$FG" -m chat -c 1 -i 10 -d "$SECS" "$URL_main/v1/chat/completions" "Authorization: Bearer $W_b") ;;
    local) R[$row]=$("$FG" -m local -c 1 -i 10 -d "$SECS" "$URL_main/v1/chat/completions" "Authorization: Bearer $W_b") ;;
    get) R[$row]=$("$FG" -k http -c 1 -i 10 -d "$SECS" "$URL_main/v1/projects/tenant-b/queues" "Authorization: Bearer $W_b") ;;
  esac
}
# flood_start TARGET(main|ctl) SHAPE : A's load in the background -> FLOOD_PID, its output in $OUT/flood
flood_start() {
  local u args key=$W_a; eval "u=\$URL_$1"
  case $2 in
    mcp)    args=(-k mcp-call -t slow -a '{"ms":20000}' -c "$MCP_FLOOD" "$u/v1/projects/tenant-a/mcp") ;;
    park)   args=(-r -s -m park -c "$LLM_FLOOD" "$u/v1/chat/completions") ;;
    lever)  args=(-m lever -c 8 "$u/v1/chat/completions") ;;
    olever) args=(-m olever -c 8 "$u/v1/chat/completions") ;;
    upload) args=(-k upload -b 1048576 -r -c "$UPLOAD_FLOOD" "$u/v1/chat/completions") ;;
    store)  args=(-k http -X PUT -b '{"concurrency":5}' -c "$POOL_FLOOD" "$u/v1/projects/tenant-a/queues/q")
            key=$O_a ;;
  esac
  "$FG" -f -d 3600 "${args[@]}" "Authorization: Bearer $key" >"$OUT/flood" 2>"$OUT/flood.err" &
  FLOOD_PID=$!
  PIDS+=($!)
  sleep 3 # A's sessions opened and its calls parked before B starts
}
flood_stop() { # flood_stop ROW...: A's figures beside each row
  kill -TERM "$FLOOD_PID" 2>/dev/null || true
  wait "$FLOOD_PID" 2>/dev/null || true
  local r; for r in "$@"; do A[$r]=$(cat "$OUT/flood"); done
}
gem() { curl -s "http://127.0.0.1:$PG/stats" | jq .requests; }

run_build() { # run_build before|after: every row against that build's awooop
  local b=$1 g0
  rm -f "$OUT"/*.db* # a fresh store per build: bootstrap keys are taken by an empty one only
  start_fakes
  deploy main "${BINS[$b]}"; WB_main=$W_b; WA_main=$W_a; OA_main=$O_a
  deploy ctl "${BINS[$b]}"; WA_ctl=$W_a; OA_ctl=$O_a
  W_b=$WB_main # B always calls main; A's key of the deployment it floods
  echo "[$b] main $URL_main, control $URL_ctl" >&2
  "$FG" -k mcp-list -c 1 -d 1 "$URL_main/v1/projects/tenant-b/mcp" "Authorization: Bearer $W_b" >/dev/null # warm up
  "$FG" -m chat -c 1 -d 1 "$URL_main/v1/chat/completions" "Authorization: Bearer $W_b" >/dev/null
  probe "$b,mcp,list,alone" list; probe "$b,mcp,call,alone" call
  probe "$b,llm,chat,alone" chat; probe "$b,ollama,local,alone" local
  probe "$b,pool,get,alone" get
  R["$b,breaker,chat,alone"]=${R["$b,llm,chat,alone"]}
  R["$b,body,chat,alone"]=${R["$b,llm,chat,alone"]}
  local shape res call
  for shape in $ROWS; do
    case $shape in
      mcp) res=mcp ;; park) res=llm ;; lever) res=breaker ;; olever) res=ollama ;;
      upload) res=body ;; store) res=pool ;;
    esac
    local where; for where in ctl main; do
      local ph=control; [ $where = main ] && ph=flood
      W_a=$WA_main; [ $where = ctl ] && W_a=$WA_ctl
      O_a=$OA_main; [ $where = ctl ] && O_a=$OA_ctl
      g0=$(gem)
      echo "[$b] $res: A's flood on $where ..." >&2
      flood_start $where $shape
      case $shape in
        mcp) probe "$b,mcp,list,$ph" list; probe "$b,mcp,call,$ph" call
             flood_stop "$b,mcp,list,$ph" "$b,mcp,call,$ph" ;;
        park) probe "$b,llm,chat,$ph" chat; flood_stop "$b,llm,chat,$ph" ;;
        lever) probe "$b,breaker,chat,$ph" chat; flood_stop "$b,breaker,chat,$ph" ;;
        olever) probe "$b,ollama,local,$ph" local; flood_stop "$b,ollama,local,$ph" ;;
        upload) probe "$b,body,chat,$ph" chat; flood_stop "$b,body,chat,$ph" ;;
        store) probe "$b,pool,get,$ph" get; flood_stop "$b,pool,get,$ph" ;;
      esac
      A["$b,$res,emergency,$ph"]=$(( $(gem) - g0 ))
    done
    # A's parked streams may outlive its client: let them end before the next row
    [ $shape = park ] && sleep 21
  done
  stop_all
}

# the rows run, as "res call" words joined by commas (for key in ...: one each)
row_keys() {
  local r; for r in $ROWS; do
    case $r in
      mcp) echo "mcp,list mcp,call" ;; park) echo "llm,chat" ;; lever) echo "breaker,chat" ;;
      olever) echo "ollama,local" ;; upload) echo "body,chat" ;; store) echo "pool,get" ;;
    esac
  done
}
j() { echo "$1" | jq -r "$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a <= 0 || b <= 0) print "-"; else printf "%.2fx", a / b }'; }
bfail() { echo $(( $(j "$1" .failed) + $(j "$1" .unfinished) )); }

table() { # table BUILD
  local b=$1 key res call ph
  echo "| resource | B's call | A's load | B p50 ms | B p99 ms | B failed / calls | p99 / alone | A's calls: ok / 429 / other failed / in flight at the end |"
  echo "|---|---|---|---|---|---|---|---|"
  for key in $(row_keys); do
    IFS=, read -r res call <<<"$key"
    local label cdesc adesc
    case $res in
      mcp) label="MCP workers"; [ $call = list ] && cdesc="tools/list" || cdesc="tools/call echo"
           adesc="$MCP_FLOOD x slow 20 s" ;;
      llm) label="LLM calls in flight"; cdesc="chat, 4 tokens"; adesc="$LLM_FLOOD parked streams" ;;
      breaker) label="shared breaker"; cdesc="chat, 4 tokens"; adesc="8 x timeout_ms 100 vs 300 ms" ;;
      ollama) label="emergency cap"; cdesc="ollama chat, 4 tokens"; adesc="8 x ollama timeout_ms 100 vs 300 ms" ;;
      body) label="body memory"; cdesc="chat, 4 tokens"; adesc="$UPLOAD_FLOOD slow uploads of 1 MiB" ;;
      pool) label="store pool"; cdesc="GET its queues"; adesc="$POOL_FLOOD x PUT its queue (SQLite writes)" ;;
    esac
    local alone=${R["$b,$res,$call,alone"]}
    for ph in alone control flood; do
      local r=${R["$b,$res,$call,$ph"]} a=${A["$b,$res,$call,$ph"]:-} al
      case $ph in alone) al="none" ;; control) al="$adesc, other deployment" ;; flood) al="$adesc, same deployment" ;; esac
      local acol="-"
      if [ -n "$a" ]; then
        acol="$(j "$a" .ok) / $(j "$a" .rejected) / $(( $(j "$a" .failed) - $(j "$a" .rejected) )) / $(j "$a" .unfinished)"
        [ $res = ollama ] && acol="$acol; emergency calls $(echo "${A["$b,$res,emergency,$ph"]}")"
      fi
      printf '| %s | %s | %s | %.2f | %.2f | %s / %s | %s | %s |\n' "$label" "$cdesc" "$al" \
        "$(j "$r" .p50_ms)" "$(j "$r" .p99_ms)" "$(bfail "$r")" "$(j "$r" .calls)" \
        "$( [ $ph = alone ] && echo 1.00x || ratio "$(j "$r" .p99_ms)" "$(j "$alone" .p99_ms)")" "$acol"
    done
  done
  echo
  echo "flood / control (B's p99, what sharing the deployment adds over sharing the host):"
  for key in $(row_keys); do
    IFS=, read -r res call <<<"$key"
    local f=${R["$b,$res,$call,flood"]} c=${R["$b,$res,$call,control"]} al=${R["$b,$res,$call,alone"]}
    local verdict="met"
    if [ "$(bfail "$f")" -ne 0 ] || [ "$(j "$f" .ok)" -eq 0 ]; then verdict="not met ($(bfail "$f") failures: $(j "$f" .first_status) $(j "$f" .first_failure | cut -c1-100))"
    elif ! awk -v a="$(j "$f" .p99_ms)" -v b="$(j "$al" .p99_ms)" 'BEGIN { exit !(a <= 2 * b) }'; then verdict="p99 over 2x alone"; fi
    printf '  %-8s %-6s flood/control %s, flood/alone %s: %s\n' "$res" "$call" \
      "$(ratio "$(j "$f" .p99_ms)" "$(j "$c" .p99_ms)")" "$(ratio "$(j "$f" .p99_ms)" "$(j "$al" .p99_ms)")" "$verdict"
  done
}

for b in "${BUILDS[@]}"; do run_build "$b"; done

echo
echo "bench/fair: $(nproc) cores (shared), ${SECS}s per row, B one client paced at 10 ms, $(date -u '+%F %H:%M') UTC, $(git rev-parse --short HEAD)"
for b in "${BUILDS[@]}"; do
  echo
  if [ "$b" = before ]; then echo "### before: $SHA"; else echo "### after: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include || echo '+')"; fi
  echo
  table "$b"
done
if [ -n "$BEFORE" ]; then
  echo
  echo "### before -> after, A's flood on the same deployment"
  echo
  echo "| resource | B's call | B p99 ms before | after | B failed / calls before | after |"
  echo "|---|---|---|---|---|---|"
  for key in $(row_keys); do
    IFS=, read -r res call <<<"$key"
    x=${R["before,$res,$call,flood"]}; y=${R["after,$res,$call,flood"]}
    printf '| %s | %s | %.2f | %.2f | %s / %s | %s / %s |\n' "$res" "$call" "$(j "$x" .p99_ms)" "$(j "$y" .p99_ms)" \
      "$(bfail "$x")" "$(j "$x" .calls)" "$(bfail "$y")" "$(j "$y" .calls)"
  done
fi
