# bench/runs/lib.sh - what mixed.sh and fairness.sh share (sourced from the
# repository root): the build, PostgreSQL and Redis started by
# scripts/services.sh, a fresh database per phase, worker processes, and the
# submit -> finish percentiles read from the runs themselves.
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
# the psql binary itself: Debian's psql is a Perl wrapper, and the benches
# poll ten times a second beside the system under test
sql() { "$AW_PGBIN/psql" -qtA -h "$PGH" -p "$PGP" -U postgres -d "$1" -c "$2"; }
# the waits poll over one connection (bench_runs wait): a psql started ten
# times a second, each with a TLS handshake, took a sixth of the 2 cores
pg_url() { echo "postgresql://postgres@$PGH:$PGP/$1?sslmode=disable"; }
export AWOOOP_BOOTSTRAP_KEY=$("$BIN" key generate)

# fresh_db DB PROJECT... -> APP (the app role's URL); the projects created
fresh_db() {
  local db=$1; shift
  sql postgres "CREATE DATABASE $db" >/dev/null
  "$BIN" migrate --db "postgresql://postgres@$PGH:$PGP/$db" >/dev/null 2>&1
  # plaintext on loopback, as run.sh (graphile-worker's node-postgres uses no TLS)
  APP="postgresql://awooop_app@$PGH:$PGP/$db?sslmode=disable"
  for p in "$@"; do "$BR" load "$APP" "$p" 0 1 >/dev/null 2>&1; done
}
# workers PROCS CONC BATCH: worker processes on $APP, given SETTLE seconds
# (default 1) to connect
workers() {
  for _ in $(seq 1 "$1"); do
    "$BIN" serve --role worker --db "$APP" --concurrency "$2" --batch "$3" \
      --log-level warn 2>/dev/null &
    PIDS+=($!)
  done
  sleep "${SETTLE:-1}"
}
# drain DB: waits until every run finished, then stops the workers
drain() {
  "$BR" wait "$(pg_url "$1")" "SELECT count(*) FROM awooop.runs WHERE finished_at IS NULL"
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  PIDS=()
}
# p50_p99 DB DIGITS QUERY -> "p50 p99" of QUERY's column d, rounded to DIGITS
# ("- -" when it has no rows)
p50_p99() {
  sql "$1" "SELECT coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY d)::numeric, $2) || ' ' ||
                   round(percentile_cont(0.99) WITHIN GROUP (ORDER BY d)::numeric, $2), '- -')
            FROM ($3) x"
}
# percentiles DB WHERE -> "p50 p99" of submit -> finish (ms) of those runs
percentiles() {
  p50_p99 "$1" 1 "SELECT extract(epoch FROM finished_at - created_at) * 1000 AS d
                  FROM awooop.runs WHERE $2"
}
