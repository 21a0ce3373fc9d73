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
# issue's bound: mixed no worse than 2x alone), and how many no-op runs took
# SLOW_MS or longer - the ones a batch moving in rounds would have held
# behind a slow step (head-of-line blocking: 0 expected). Phase "control":
# the slow runs in a database of their own with worker processes of their
# own, the no-op runs as alone - what 200 sleeping runs and the loader cost
# the no-op runs on this host whatever the queue does; mixed / control is
# what sharing the queue with them adds.
set -euo pipefail
cd "$(dirname "$0")/../.."
NOOPS=${1:-20000} SLOW=${2:-200} SLOW_MS=${3:-2000} PROCS=${4:-2} CONC=${5:-8} BATCH=${6:-64}
. bench/runs/lib.sh

phase() { # phase DB SLOW_COUNT [other] -> "p50 p99 blocked" of the no-op runs, ms
  fresh_db "$1" bench
  local NAPP=$APP
  workers "$PROCS" "$CONC" "$BATCH"
  if [ "${3:-}" = other ]; then # the slow runs in a deployment of their own
    fresh_db "${1}other" bench
    workers "$PROCS" "$CONC" "$BATCH"
  fi
  if [ "$2" -gt 0 ]; then
    "$BR" load "$APP" bench "$2" 2 "[{\"kind\":\"sleep\",\"args\":{\"ms\":$SLOW_MS}}]" >/dev/null 2>&1
  fi
  "$BR" load "$NAPP" bench "$NOOPS" 4 >/dev/null 2>&1
  [ "${3:-}" != other ] || "$BR" wait "$(pg_url "${1}other")" \
    "SELECT count(*) FROM awooop.runs WHERE finished_at IS NULL"
  drain "$1"
  echo "$(percentiles "$1" "workflow->0->>'kind' = 'noop'")" \
    "$(sql "$1" "SELECT count(*) FROM awooop.runs WHERE workflow->0->>'kind' = 'noop'
                 AND finished_at - created_at >= interval '$SLOW_MS milliseconds'")"
}
echo "bench/runs/mixed: $NOOPS no-op runs, $SLOW runs sleeping $SLOW_MS ms, $PROCS workers x $CONC, batch $BATCH (PostgreSQL)"
read -r A50 A99 AB <<<"$(phase mixalone 0)"
read -r M50 M99 MB <<<"$(phase mixmixed "$SLOW")"
read -r C50 C99 CB <<<"$(phase mixctl "$SLOW" other)"
echo "no-op submit -> finish                     p50 ms   p99 ms   >= $SLOW_MS ms"
printf '%-42s %8s %8s %10s\n' "alone" "$A50" "$A99" "$AB" "with the slow runs" "$M50" "$M99" "$MB" \
  "control: slow runs in another deployment" "$C50" "$C99" "$CB"
awk -v a="$A99" -v m="$M99" -v c="$C99" 'BEGIN {
  printf "p99 mixed / alone = %.2fx (bound: <= 2x); control / alone = %.2fx; mixed / control = %.2fx\n",
    m / a, c / a, m / c }'
echo "no-op runs held $SLOW_MS ms or longer beside the slow runs: $MB of $NOOPS (head-of-line blocking)"
