#!/usr/bin/env bash
# bench/runs/mixed.sh: head-of-line blocking under mixed load, on PostgreSQL.
#
#   bench/runs/mixed.sh [NOOPS] [SLOW] [SLOW_MS] [PROCS] [CONC] [BATCH]
#                       (defaults 20000 200 2000 2 8 64)
#
# Phase "alone": PROCS worker processes (concurrency CONC, batch BATCH) run,
# NOOPS no-op runs are submitted (4 threads) and drained. Phase "mixed": in a
# fresh database the same, but SLOW runs whose one step sleeps SLOW_MS are
# submitted first. Prints the no-op runs' submit -> finish p50/p99 in both
# phases (from the runs' created_at and finished_at) and the p99 ratio (the
# issue's bound: mixed no worse than 2x alone).
set -euo pipefail
cd "$(dirname "$0")/../.."
NOOPS=${1:-20000} SLOW=${2:-200} SLOW_MS=${3:-2000} PROCS=${4:-2} CONC=${5:-8} BATCH=${6:-64}
scripts/deps.sh --test >/dev/null
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
BIN=$PWD/build/awooop
BR=$PWD/build/bench/bench_runs
. scripts/services.sh
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  aw_services_stop
}
trap cleanup EXIT
aw_services_start >/dev/null
PGH=$AWOOOP_TEST_PG_HOST PGP=$AWOOOP_TEST_PG_PORT
sql() { psql -qtA -h "$PGH" -p "$PGP" -U postgres -d "$1" -c "$2"; }
export AWOOOP_BOOTSTRAP_KEY=$("$BIN" key generate)

phase() { # phase DB SLOW_COUNT -> "p50 p99" of the no-op runs, ms
  local db=$1 slow=$2 app
  sql postgres "CREATE DATABASE $db" >/dev/null
  "$BIN" migrate --db "postgresql://postgres@$PGH:$PGP/$db" >/dev/null 2>&1
  app="postgresql://awooop_app@$PGH:$PGP/$db"
  "$BR" load "$app" bench 1 1 >/dev/null 2>&1   # creates the project
  for i in $(seq 1 "$PROCS"); do
    "$BIN" serve --role worker --db "$app" --concurrency "$CONC" --batch "$BATCH" \
      --log-level warn 2>/dev/null &
    PIDS+=($!)
  done
  sleep 1
  if [ "$slow" -gt 0 ]; then
    "$BR" load "$app" bench "$slow" 2 "[{\"kind\":\"sleep\",\"args\":{\"ms\":$SLOW_MS}}]" >/dev/null 2>&1
  fi
  "$BR" load "$app" bench "$NOOPS" 4 >/dev/null 2>&1
  while [ "$(sql "$db" "SELECT count(*) FROM awooop.runs WHERE finished_at IS NULL")" != 0 ]; do
    sleep 0.2
  done
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  PIDS=()
  sql "$db" "SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY d)::numeric, 1) || ' ' ||
                    round(percentile_cont(0.99) WITHIN GROUP (ORDER BY d)::numeric, 1)
             FROM (SELECT extract(epoch FROM finished_at - created_at) * 1000 AS d
                   FROM awooop.runs WHERE workflow->0->>'kind' = 'noop') x"
}
echo "bench/runs/mixed: $NOOPS no-op runs, $SLOW runs sleeping $SLOW_MS ms, $PROCS workers x $CONC, batch $BATCH (PostgreSQL)"
read -r A50 A99 <<<"$(phase mixalone 0)"
read -r M50 M99 <<<"$(phase mixmixed "$SLOW")"
echo "no-op submit -> finish   p50 ms   p99 ms"
printf '%-24s %8s %8s\n' "alone" "$A50" "$A99" "with the slow runs" "$M50" "$M99"
awk -v a="$A99" -v m="$M99" 'BEGIN { printf "p99 mixed / alone = %.2fx (bound: <= 2x)\n", m / a }'
