#!/usr/bin/env bash
# bench/runs: awooop's run runtime against graphile-worker 0.18 on one
# PostgreSQL 15 (scripts/services.sh), in one run, side by side:
#   1 burn-down: N no-op runs queued, then PROCS worker processes of
#     concurrency CONC are started; time until the last one completes -> runs/s
#   2 latency: LAT sequential submissions, submit -> step start, p50/p99
# Then awooop's own figures on the embedded SQLite store.
#
#   bench/runs/run.sh [N] [LAT] [PROCS] [CONC] [BATCH]   (defaults 100000 1000 2 8 64)
#
# graphile-worker is installed by this script from npm into a temp dir (never
# committed). awooop's worker threads claim BATCH runs at once (--batch);
# graphile-worker runs twice: with its defaults (one job per fetch) and with
# its own batching on (localQueue.size = BATCH, completeJobBatchDelay 0). The
# ratios are against the faster of the two.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-100000}
LAT=${2:-1000}
PROCS=${3:-2}
CONC=${4:-8}
BATCH=${5:-64}

scripts/deps.sh --test >/dev/null
if ! command -v npm >/dev/null; then # Debian's node and npm, only when there are none
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >&2
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
BIN=$PWD/build/awooop
BR=$PWD/build/bench/bench_runs
OUT=$(mktemp -d /tmp/aw-runs.XXXXXX)
chmod 755 "$OUT"
GW=$OUT/gw
mkdir -p "$GW"
cp bench/runs/gw.js "$GW/"
echo "installing graphile-worker@0.18.0 into $GW ..." >&2
(cd "$GW" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund graphile-worker@0.18.0 pg >/dev/null 2>"$OUT/npm.log")

. scripts/services.sh
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  aw_services_stop
  rm -rf "$OUT"
}
trap cleanup EXIT
aw_services_start
PGH=$AWOOOP_TEST_PG_HOST PGP=$AWOOOP_TEST_PG_PORT
# the psql binary itself: Debian's psql is a Perl wrapper, and the benches
# poll ten times a second beside the system under test
sql() { "$AW_PGBIN/psql" -qtA -h "$PGH" -p "$PGP" -U postgres -d "$1" -c "$2"; }
# the burn-downs end when nothing is left, polled every 0.1 s over one
# connection (bench_runs wait; a psql started ten times a second, each with a
# TLS handshake, took a sixth of the 2 cores from whichever queue ran) by an
# existence test (counting 100,000 rows took 50-60 ms of a core each time)
wait0() { "$BR" wait "postgresql://postgres@$PGH:$PGP/$1?sslmode=disable" "$2"; }
now_ms() { date +%s%3N; }

# --- awooop on PostgreSQL (the app role, under row-level security)
sql postgres "CREATE DATABASE awruns" >/dev/null
"$BIN" migrate --db "postgresql://postgres@$PGH:$PGP/awruns" >/dev/null 2>&1
# plaintext on loopback for both queues: graphile-worker's node-postgres
# connects without TLS unless told, libpq would negotiate it (sslmode=prefer)
# with this server
APP="postgresql://awooop_app@$PGH:$PGP/awruns?sslmode=disable"
export AWOOOP_BOOTSTRAP_KEY=$("$BIN" key generate)
echo "awooop: queueing $N runs ..." >&2
"$BR" load "$APP" bench "$N" 4 2>&1 | grep -v '^{' >&2
t0=$(now_ms)
for i in $(seq 1 "$PROCS"); do
  "$BIN" serve --role worker --db "$APP" --concurrency "$CONC" --batch "$BATCH" \
    --log-level warn 2>>"$OUT/aw-worker.log" &
  PIDS+=($!)
done
# open runs? (each queue's test through an index, not a scan of the
# finished rows; the SQLite phase counts them through the partial indexes)
OPEN="SELECT (SELECT count(*) FROM runs WHERE state IN ('queued', 'retry_wait'))
           + (SELECT count(*) FROM runs WHERE state IN ('claimed', 'running'))"
wait0 awruns "SET enable_seqscan = off; SELECT count(*) FROM (
                (SELECT 1 FROM awooop.runs WHERE state IN ('queued', 'retry_wait') LIMIT 1)
                UNION ALL (SELECT 1 FROM awooop.runs WHERE state IN ('claimed', 'running') LIMIT 1)) x"
AW_MS=$(( $(now_ms) - t0 ))
# a worker that died, or warned (a round abandoned: its runs wait for their
# leases, ~30 s), is named here: the figure above would otherwise hide it
for p in "${PIDS[@]}"; do
  kill -0 "$p" 2>/dev/null || echo "awooop: worker $p exited before the end" >&2
  kill "$p" 2>/dev/null || true
done
wait 2>/dev/null || true
PIDS=()
grep -v '"no key ring configured"' "$OUT/aw-worker.log" | head -5 | sed 's/^/awooop worker: /' >&2 || true
# latency in a database of its own, as for graphile-worker below, with the
# burn-down's database dropped first: its autovacuum of 100,000 finished runs
# would otherwise share the 2 cores with the latency runs
sql postgres "DROP DATABASE awruns" >/dev/null
sql postgres "CREATE DATABASE awlat" >/dev/null
"$BIN" migrate --db "postgresql://postgres@$PGH:$PGP/awlat" >/dev/null 2>&1
AW_LAT=$("$BR" latency "postgresql://awooop_app@$PGH:$PGP/awlat?sslmode=disable" latency "$LAT" "$CONC" \
  2>/dev/null | grep p50)

# --- graphile-worker on the same PostgreSQL: defaults, then its own batching
sql postgres "CREATE DATABASE gwruns" >/dev/null
GWURL="postgresql://postgres@$PGH:$PGP/gwruns"
node "$GW/gw.js" schema "$GWURL" 2>>"$OUT/gw.log"
gw_burn() { # gw_burn LOCAL_QUEUE_SIZE -> elapsed ms on stdout
  echo "graphile-worker: queueing $N jobs (local queue $1) ..." >&2
  node "$GW/gw.js" load "$GWURL" "$N" 2>>"$OUT/gw.log"
  local t0 p
  t0=$(now_ms)
  for i in $(seq 1 "$PROCS"); do
    node "$GW/gw.js" work "$GWURL" "$CONC" "$1" >>"$OUT/gw.log" 2>&1 &
    PIDS+=($!)
  done
  wait0 gwruns "SET enable_seqscan = off;
                SELECT count(*) FROM (SELECT 1 FROM graphile_worker._private_jobs LIMIT 1) x"
  echo $(( $(now_ms) - t0 ))
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  PIDS=()
}
GW_MS=$(gw_burn 0)
GWB_MS=$(gw_burn "$BATCH")
sql postgres "DROP DATABASE gwruns" >/dev/null
sql postgres "CREATE DATABASE gwlat" >/dev/null
GWLAT="postgresql://postgres@$PGH:$PGP/gwlat"
node "$GW/gw.js" schema "$GWLAT" 2>>"$OUT/gw.log"
GW_LAT=$(node "$GW/gw.js" latency "$GWLAT" "$LAT" "$CONC" 2>>"$OUT/gw.log" | grep p50)

# --- awooop on SQLite (embedded shape: one process)
SQ=$OUT/bench.db
"$BR" load "sqlite:$SQ" bench "$N" 1 2>&1 | grep -v '^{' >&2
t0=$(now_ms)
"$BIN" serve --role worker --db "sqlite:$SQ" --concurrency "$CONC" --batch "$BATCH" \
  --log-level warn 2>>"$OUT/aw-sqlite.log" &
PIDS+=($!)
while [ "$(sqlite3 "$SQ" "$OPEN")" != 0 ]; do
  sleep 0.1
done
SQ_MS=$(( $(now_ms) - t0 ))
kill "${PIDS[@]}" 2>/dev/null || true
wait 2>/dev/null || true
PIDS=()
SQ_LAT=$("$BR" latency "sqlite:$OUT/lat.db" latency "$LAT" "$CONC" 2>/dev/null | grep p50)

j() { echo "$1" | jq -r ".$2"; }
rate() { awk -v n="$N" -v ms="$1" 'BEGIN{printf "%.0f", n*1000/ms}'; }
awx=$(rate "$AW_MS") gwx=$(rate "$GW_MS") gwbx=$(rate "$GWB_MS") sqx=$(rate "$SQ_MS")
best=$(( gwx > gwbx ? gwx : gwbx ))
echo
echo "bench/runs: $N no-op runs, $PROCS worker processes x concurrency $CONC, batch $BATCH;" \
  "$LAT sequential submissions for latency (submit -> step start)"
printf "%-40s %10s %10s %10s\n" "" "runs/s" "p50 ms" "p99 ms"
printf "%-40s %10s %10s %10s\n" "awooop (PostgreSQL)" "$awx" "$(j "$AW_LAT" p50_ms)" "$(j "$AW_LAT" p99_ms)"
printf "%-40s %10s %10s %10s\n" "graphile-worker 0.18 (defaults)" "$gwx" "$(j "$GW_LAT" p50_ms)" "$(j "$GW_LAT" p99_ms)"
printf "%-40s %10s %10s %10s\n" "graphile-worker 0.18 (localQueue $BATCH)" "$gwbx" "-" "-"
printf "%-40s %10s %10s %10s\n" "awooop (SQLite, 1 process)" "$sqx" "$(j "$SQ_LAT" p50_ms)" "$(j "$SQ_LAT" p99_ms)"
awk -v a="$awx" -v g="$best" -v al="$(j "$AW_LAT" p50_ms)" -v gl="$(j "$GW_LAT" p50_ms)" \
  'BEGIN{printf "throughput awooop / best graphile-worker = %.2fx (target >= 1x)\np50 latency awooop / graphile-worker = %.2fx (target <= 0.5x)\n", a/g, al/gl}'
