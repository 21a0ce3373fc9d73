#!/usr/bin/env bash
# bench/drill-runs: the run runtime's crash drill on PostgreSQL 15.
#
#   bench/drill-runs/run.sh [RUNS] [WORKERS] [KILL_EVERY_MS]   (defaults 1000 3 300)
#
# Queues RUNS runs of 3 steps (sleep 200 ms; an http POST to a local counting
# server that answers after 50 ms, so kills also land between an effect and
# its journal entry; noop), starts WORKERS `awooop serve --role worker` processes and,
# until every run has finished, SIGKILLs a random worker every ~KILL_EVERY_MS
# (uniform 0.5x..1.5x) and starts a replacement. Then checks: every run ended
# `succeeded`, none is missing, every journal has 3 succeeded steps, the
# counting server saw exactly one distinct Idempotency-Key per run (the http
# step's "<run>-2"), nothing without a key, and the audit chain verifies.
# Prints the raw number of requests too (re-executions after a kill that the
# key lets the server deduplicate). Exit 1 when a check fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-1000}
W=${2:-3}
KILL_MS=${3:-300}

scripts/deps.sh --test >/dev/null
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
BIN=$PWD/build/awooop
BR=$PWD/build/bench/bench_runs
OUT=$(mktemp -d /tmp/aw-drill.XXXXXX)
chmod 755 "$OUT"
. scripts/services.sh
WORKERS=()
CPID=
cleanup() {
  for p in "${WORKERS[@]}" $CPID; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  aw_services_stop
  rm -rf "$OUT"
}
trap cleanup EXIT
aw_services_start
PGH=$AWOOOP_TEST_PG_HOST PGP=$AWOOOP_TEST_PG_PORT
# the psql binary itself: Debian's psql is a Perl wrapper, and the benches
# poll ten times a second beside the system under test
sql() { "$AW_PGBIN/psql" -qtA -h "$PGH" -p "$PGP" -U postgres -d awdrill -c "$1"; }
"$AW_PGBIN/psql" -q -h "$PGH" -p "$PGP" -U postgres -d postgres -c "CREATE DATABASE awdrill" >/dev/null
"$BIN" migrate --db "postgresql://postgres@$PGH:$PGP/awdrill" >/dev/null 2>&1
APP="postgresql://awooop_app@$PGH:$PGP/awdrill"
export AWOOOP_BOOTSTRAP_KEY=$("$BIN" key generate)

PORT=$((20000 + RANDOM % 12000))
"$BR" counter "$PORT" "$OUT/counter.json" 50 2>/dev/null &
CPID=$!
for _ in $(seq 1 50); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
WF="[{\"kind\":\"sleep\",\"args\":{\"ms\":200}},{\"kind\":\"http\",\"args\":{\"url\":\"http://127.0.0.1:$PORT/effect\",\"body\":{\"drill\":true}}},{\"kind\":\"noop\"}]"
echo "queueing $RUNS runs ..." >&2
AWOOOP_LOG_LEVEL=warn "$BR" load "$APP" drill "$RUNS" 4 "$WF" 2>&1 | grep -v '^{' >&2
sql "UPDATE awooop.runs SET max_attempts = 100" >/dev/null

start_worker() {
  "$BIN" serve --role worker --db "$APP" --egress-allow-private "*" --concurrency 4 --batch 4 --heartbeat-ms 300 \
    --lease-ms 1500 --retry-base-ms 50 --retry-max-ms 500 --worker-poll-ms 200 \
    --log-level error 2>>"$OUT/workers.log" &
  WORKERS+=($!)
}
for _ in $(seq 1 "$W"); do start_worker; done
KILLS=0
t0=$(date +%s)
while :; do
  left=$(sql "SELECT count(*) FROM awooop.runs WHERE state NOT IN ('succeeded','failed','cancelled')")
  [ "$left" = 0 ] && break
  if [ $(( $(date +%s) - t0 )) -gt 600 ]; then echo "drill: timed out with $left runs open" >&2; break; fi
  sleep "$(awk -v m="$KILL_MS" -v r="$RANDOM" 'BEGIN{printf "%.3f", m*(0.5+r/32767)/1000}')"
  i=$((RANDOM % ${#WORKERS[@]}))
  kill -9 "${WORKERS[$i]}" 2>/dev/null || true
  wait "${WORKERS[$i]}" 2>/dev/null || true
  KILLS=$((KILLS + 1))
  WORKERS=("${WORKERS[@]:0:$i}" "${WORKERS[@]:$((i + 1))}")
  start_worker
  printf "\rkills %d, runs open %s   " "$KILLS" "$left" >&2
done
SECS=$(( $(date +%s) - t0 ))
echo >&2
for p in "${WORKERS[@]}"; do kill "$p" 2>/dev/null || true; done
wait "${WORKERS[@]}" 2>/dev/null || true
WORKERS=()
kill "$CPID"; wait "$CPID" 2>/dev/null || true
CPID=

FAIL=0
check() { if [ "$2" = "$3" ]; then echo "ok   $1: $2"; else echo "FAIL $1: $2 (want $3)"; FAIL=1; fi; }
total=$(sql "SELECT count(*) FROM awooop.runs")
succ=$(sql "SELECT count(*) FROM awooop.runs WHERE state = 'succeeded'")
# the journal as readers see it: run_steps and the last step's entry in the run row
journ=$(sql "SELECT count(*) FROM (SELECT run_id FROM awooop.run_journal WHERE state = 'succeeded' GROUP BY run_id HAVING count(*) = 3) x")
retried=$(sql "SELECT count(*) FROM awooop.runs WHERE attempts > 1")
maxatt=$(sql "SELECT max(attempts) FROM awooop.runs")
req=$(jq -r .requests "$OUT/counter.json")
keys=$(jq -r .keys "$OUT/counter.json")
unkeyed=$(jq -r .unkeyed "$OUT/counter.json")
sql "SELECT run_id || '-2' FROM awooop.runs" | sort >"$OUT/want.keys"
awk '{print $1}' "$OUT/counter.json.keys" | sort >"$OUT/got.keys"
match=$(comm -3 "$OUT/want.keys" "$OUT/got.keys" | wc -l)
echo "drill: $RUNS runs x 3 steps, $W workers, $KILLS SIGKILLs over ${SECS}s"
check "runs in the store" "$total" "$RUNS"
check "runs succeeded" "$succ" "$RUNS"
check "runs with 3 succeeded journal steps" "$journ" "$RUNS"
check "distinct effects at the server (after dedup by Idempotency-Key)" "$keys" "$RUNS"
check "keys that are not exactly one per run's http step" "$match" 0
check "requests without a key" "$unkeyed" 0
if "$BIN" audit verify --db "$APP" --project drill >/dev/null; then
  echo "ok   audit chain of project drill verifies"
else
  echo "FAIL audit chain of project drill"; FAIL=1
fi
echo "raw http executions: $req for $keys effects ($((req - keys)) re-executed after a kill and deduplicated by key)"
echo "runs retried after a kill: $retried (max attempts used: $maxatt)"
exit $FAIL
