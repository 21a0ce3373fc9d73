#!/usr/bin/env bash
# bench/convergence: how fast does every worker stop using a policy once a new
# revision's activation commits (ADR-113)?
#
#   bench/convergence/run.sh [WORKERS] [ACTIVATIONS]      (defaults 32, 200)
#
# Starts PostgreSQL 15 + Redis 7 (scripts/services.sh), `awooop serve --role
# api` and a separate `--role relay`, WORKERS `awooop watch` processes making
# guarded calls (~1000/s in total, bounded mode, max_staleness 1 s), then
# activates ACTIVATIONS revisions one after another (GAP_MS apart). Scenarios:
#   1 bus up
#   2 Redis SIGKILLed for the middle third of the activations, then restarted
#   3 the relay stopped for the middle third, then restarted
#   4 SQLite, several processes on one file, no Redis (guard + fallback only)
# Prints per scenario: commit -> observed p50/p99/max over all (worker,
# activation) pairs, guard violations, store reads per 1000 guarded calls.
set -euo pipefail
cd "$(dirname "$0")/../.."
W=${1:-32}
M=${2:-200}
GAP_MS=${GAP_MS:-50}
INTERVAL_MS=${INTERVAL_MS:-5000}   # fallback re-check in this benchmark
STALE_MS=1000

scripts/deps.sh --test >/dev/null
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
BIN=$PWD/build/awooop
AN=$PWD/build/bench/bench_convergence_analyze
OUT=$(mktemp -d /tmp/aw-conv.XXXXXX)
chmod 755 "$OUT"
. scripts/services.sh
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  aw_services_stop
}
trap cleanup EXIT
aw_services_start
REDIS=$AWOOOP_TEST_REDIS_URL
PGH=$AWOOOP_TEST_PG_HOST PGP=$AWOOOP_TEST_PG_PORT
psql -q -h "$PGH" -p "$PGP" -U postgres -d postgres -c "CREATE DATABASE awconv" >/dev/null
"$BIN" migrate --db "postgresql://postgres@$PGH:$PGP/awconv" >/dev/null
PGAPP="postgresql://awooop_app@$PGH:$PGP/awconv"
export AWOOOP_PUBLISH_KEYS="kb:$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export AWOOOP_BOOTSTRAP_KEY=$("$BIN" key generate)
ADMIN=$AWOOOP_BOOTSTRAP_KEY

free_port() {
  local p
  for _ in $(seq 1 100); do
    p=$((20000 + RANDOM % 12000))   # below the ephemeral range (32768+)
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}
wait_http() { for _ in $(seq 1 100); do curl -sf "$1/healthz" >/dev/null && return; sleep 0.1; done; return 1; }
api() { # api METHOD URL PATH KEY [BODY]
  curl -sf -X "$1" -H "Authorization: Bearer $4" ${5:+-H 'Content-Type: application/json' --data-binary "$5"} "$2$3"
}

setup_project() { # URL -> exports OP1 OP2
  api POST "$1" /v1/projects "$ADMIN" '{"id":"bench"}' >/dev/null || true
  OP1=$(api POST "$1" /v1/projects/bench/keys "$ADMIN" '{"name":"op1","scope":"operator"}' | jq -r .key)
  OP2=$(api POST "$1" /v1/projects/bench/keys "$ADMIN" '{"name":"op2","scope":"operator"}' | jq -r .key)
}

prepare() { # URL CONTRACT N -> revision ids on stdout, published and approved
  local base="/v1/projects/bench/contracts/policy_routing/$2/revisions" i rev
  for i in $(seq 1 "$3"); do
    rev=$(api POST "$1" "$base" "$OP1" \
      "{\"body\":{\"routes\":[{\"name\":\"main\",\"match\":{\"task\":\"chat\"},\"candidates\":[{\"provider\":\"ollama\",\"model\":\"m$i\"}]}]}}" | jq -r .revision_id)
    api POST "$1" "$base/$rev/publish" "$OP1" >/dev/null
    api POST "$1" "$base/$rev/approve" "$OP2" >/dev/null
    echo "$rev"
  done
}

start_relay() {
  "$BIN" serve --role relay --db "$PGAPP" --redis "$REDIS" --log-level warn 2>>"$OUT/relay.log" &
  RELAY=$!
  PIDS+=("$RELAY")
}

# run_scenario NAME URL DB REDIS_FLAG HOOK
run_scenario() {
  local name=$1 url=$2 db=$3 redisflag=$4 hook=$5 dir="$OUT/$1" cid="route-$1"
  mkdir -p "$dir"
  mapfile -t REVS < <(prepare "$url" "$cid" "$M")
  local base="/v1/projects/bench/contracts/policy_routing/$cid/revisions"
  api POST "$url" "$base/${REVS[0]}/activate" "$OP1" >/dev/null
  local wpids=() w
  local cps=$((1000 / W)); [ "$cps" -lt 1 ] && cps=1
  for w in $(seq 0 $((W - 1))); do
    "$BIN" watch --project bench --family policy_routing --contract "$cid" --db "$db" $redisflag \
      --calls-per-sec "$cps" --interval-ms "$INTERVAL_MS" --max-staleness-ms "$STALE_MS" \
      --call-log "$dir/w$w.calls" >"$dir/w$w.changes" 2>"$dir/w$w.stats" &
    wpids+=($!)
  done
  sleep 3
  : >"$dir/acked"
  local k
  for k in $(seq 1 $((M - 1))); do
    [ "$k" -eq $((M / 3)) ] && $hook down
    [ "$k" -eq $((2 * M / 3)) ] && $hook up
    api POST "$url" "$base/${REVS[$k]}/activate" "$OP1" >/dev/null
    echo "${REVS[$k]} $(date +%s%N)" >>"$dir/acked"
    sleep "$(awk "BEGIN{print $GAP_MS/1000}")"
  done
  sleep $((INTERVAL_MS / 1000 + 3))
  # the convergence endpoint's view of the same activations, while the
  # watchers are alive (a stopped watcher deletes its fleet rows)
  api GET "$url" "/v1/projects/bench/contracts/policy_routing/$cid/convergence?limit=100" "$OP1" >"$dir/endpoint.json"
  for w in "${wpids[@]}"; do kill -TERM "$w" 2>/dev/null || true; done
  for w in "${wpids[@]}"; do wait "$w" 2>/dev/null || true; done
  if [ "$db" = "$PGAPP" ]; then
    psql -qAt -F ' ' -h "$PGH" -p "$PGP" -U postgres -d awconv -c \
      "SELECT new_revision_id, (extract(epoch FROM created_at) * 1e9)::bigint FROM awooop.contract_outbox
       WHERE contract_id = '$cid' AND event_type = 'revision_activated'" >"$dir/commits"
  else
    sqlite3 -separator ' ' "${db#sqlite:}" \
      "SELECT new_revision_id, CAST(round((julianday(created_at) - 2440587.5) * 86400000) AS INTEGER) * 1000000
       FROM contract_outbox WHERE contract_id = '$cid' AND event_type = 'revision_activated'" >"$dir/commits"
  fi
  awk 'NR==FNR {c[$1]=$2; next} ($1 in c) {print $1, c[$1], $2}' "$dir/commits" "$dir/acked" >"$dir/activations.log"
  echo "scenario $name:"
  "$AN" "$dir" "$W" "$STALE_MS" || true
  python3 "$(dirname "$0")/endpoint_agree.py" "$dir" "$W"
}

# run_steady NAME MODE: workers only, no activations: the guard's read budget
run_steady() {
  local name=$1 mode=$2 dir="$OUT/$1" w wpids=()
  mkdir -p "$dir"
  : >"$dir/activations.log"
  local cps=$((1000 / W)); [ "$cps" -lt 1 ] && cps=1
  for w in $(seq 0 $((W - 1))); do
    "$BIN" watch --project bench --family policy_routing --contract route-1-bus-up --db "$PGAPP" \
      --redis "$REDIS" --mode "$mode" --calls-per-sec "$cps" --max-staleness-ms "$STALE_MS" \
      --duration-s 10 >/dev/null 2>"$dir/w$w.stats" &
    wpids+=($!)
  done
  for w in "${wpids[@]}"; do wait "$w" 2>/dev/null || true; done
  echo "steady $mode mode, 10 s, no activations: $("$AN" "$dir" "$W" "$STALE_MS" | grep 'store reads')"
}

none() { :; }
redis_hook() {
  if [ "$1" = down ]; then kill -9 "$(cat "$AW_SVC_DIR/redis/redis.pid")"; echo "  (redis killed)";
  else
    redis-server --port "$AW_REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
      --dir "$AW_SVC_DIR/redis" --pidfile "$AW_SVC_DIR/redis/redis.pid" --logfile "$AW_SVC_DIR/redis/log"
    echo "  (redis restarted)"
  fi
}
relay_hook() {
  if [ "$1" = down ]; then kill -TERM "$RELAY"; wait "$RELAY" 2>/dev/null || true; echo "  (relay stopped)";
  else start_relay; echo "  (relay restarted)"; fi
}

echo "bench/convergence: $W workers, $M activations each $GAP_MS ms apart, fallback interval $INTERVAL_MS ms, max_staleness $STALE_MS ms"
PORT=$(free_port); URL="http://127.0.0.1:$PORT"
"$BIN" serve --role api --db "$PGAPP" --redis "$REDIS" --listen "127.0.0.1:$PORT" --log-level warn 2>>"$OUT/api.log" &
PIDS+=($!)
start_relay
wait_http "$URL"
setup_project "$URL"
run_scenario 1-bus-up "$URL" "$PGAPP" "--redis $REDIS" none
run_steady 0-steady-bounded bounded
run_steady 0-steady-strict strict
run_scenario 2-redis-killed "$URL" "$PGAPP" "--redis $REDIS" redis_hook
run_scenario 3-relay-stopped "$URL" "$PGAPP" "--redis $REDIS" relay_hook
psql -qAt -h "$PGH" -p "$PGP" -U postgres -d awconv -c \
  "SELECT 'outbox after scenario 3: ' || count(*) FILTER (WHERE delivered_at IS NULL) || ' undelivered of ' || count(*) FROM awooop.contract_outbox"

# scenario 4: the embedded shape, several processes on one SQLite file
SQ="sqlite:$OUT/embedded/awooop.db"
mkdir -p "$OUT/embedded"
PORT=$(free_port); URL="http://127.0.0.1:$PORT"
"$BIN" serve --db "$SQ" --listen "127.0.0.1:$PORT" --log-level warn 2>>"$OUT/embedded.log" &
PIDS+=($!)
wait_http "$URL"
setup_project "$URL"
run_scenario 4-sqlite-multiprocess "$URL" "$SQ" "" none
echo "logs: $OUT"
