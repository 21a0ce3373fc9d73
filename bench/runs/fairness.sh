#!/usr/bin/env bash
# bench/runs/fairness.sh: one tenant floods, another's latency, on PostgreSQL.
#
#   bench/runs/fairness.sh [FLOOD] [N] [INTERVAL_MS] [PROCS] [CONC] [BATCH] [SHAPE]
#                          (defaults 50000 100 20 2 8 64 apart)
#
# SHAPE apart: quiet submits from a process of its own (a client writing to
# the database); hosted: quiet's submitting process is one of the PROCS
# worker processes (as `serve` with its API and a worker role, the default
# shape, where a submission may be handed straight to an idle thread).
#
# Phase "alone": PROCS worker processes (concurrency CONC, batch BATCH) run;
# tenant "quiet" submits N no-op runs, one every INTERVAL_MS. Phase "flood":
# in a fresh database, tenant "flood" submits FLOOD no-op runs in bulk (1,000
# a transaction, as a client of POST /v1/platform/runs:batch would), then the
# workers start and "quiet" submits the same N paced runs while the flood's
# backlog drains. Prints quiet's submit -> finish p50/p99 in both phases (from
# the runs' created_at and finished_at), the p99 ratio (the issue's bound:
# within 2x of alone) and how deep flood's backlog still was when quiet's
# last run finished.
set -euo pipefail
cd "$(dirname "$0")/../.."
FLOOD=${1:-50000} N=${2:-100} IV=${3:-20} PROCS=${4:-2} CONC=${5:-8} BATCH=${6:-64}
SHAPE=${7:-apart}
case $SHAPE in apart | hosted) ;; *) echo "fairness.sh: SHAPE is apart or hosted" >&2; exit 2 ;; esac
. bench/runs/lib.sh

phase() { # phase DB FLOOD_COUNT -> "p50 p99 backlog" of quiet's runs
  fresh_db "$1" quiet flood
  # the flood's backlog is queued whole before the workers start: quiet's
  # runs arrive while it is at its deepest
  [ "$2" -eq 0 ] || "$BR" flood "$APP" flood "$2" >/dev/null 2>&1
  local host=()
  if [ "$SHAPE" = hosted ]; then
    [ "$PROCS" -le 1 ] || workers $((PROCS - 1)) "$CONC" "$BATCH"
    host=("$CONC" "$BATCH")
  else
    workers "$PROCS" "$CONC" "$BATCH"
  fi
  local before
  before=$(sql "$1" "SELECT count(*) FROM awooop.runs WHERE project_id = 'flood' AND finished_at IS NULL")
  "$BR" paced "$APP" quiet "$N" "$IV" "${host[@]}" >/dev/null 2>&1
  "$BR" wait "$(pg_url "$1")" "SELECT count(*) FROM awooop.runs WHERE project_id = 'quiet' AND finished_at IS NULL"
  local backlog
  backlog=$(sql "$1" "SELECT count(*) FROM awooop.runs WHERE project_id = 'flood' AND finished_at IS NULL")
  drain "$1"
  # where the time went: submit -> claim (the claim's time is in the run's
  # audit record) and claim -> finished
  sql "$1" "SET search_path = awooop;
    SELECT 'quiet: submit -> claim p50 ' || round(percentile_cont(0.5) WITHIN GROUP (ORDER BY c)::numeric, 1)
      || ' p99 ' || round(percentile_cont(0.99) WITHIN GROUP (ORDER BY c)::numeric, 1)
      || ' ms; claim -> finish p50 ' || round(percentile_cont(0.5) WITHIN GROUP (ORDER BY f)::numeric, 1)
      || ' p99 ' || round(percentile_cont(0.99) WITHIN GROUP (ORDER BY f)::numeric, 1) || ' ms'
    FROM (SELECT extract(epoch FROM (a.payload::jsonb->'transitions'->0->>'at')::timestamptz - r.created_at) * 1000 AS c,
                 extract(epoch FROM r.finished_at - (a.payload::jsonb->'transitions'->0->>'at')::timestamptz) * 1000 AS f
          FROM runs r CROSS JOIN LATERAL (SELECT coalesce(
            (SELECT a.payload::jsonb FROM audit_events a WHERE a.project_id = r.project_id
               AND a.target = r.run_id::text AND a.action = 'run.succeeded'),
            -- or the run's item in its round's record (runs that made the same move)
            (SELECT i FROM audit_targets t JOIN audit_events a ON a.event_id = t.event_id
               AND a.action = 'run.succeeded', jsonb_array_elements(a.payload::jsonb->'items') i
             WHERE t.project_id = r.project_id AND t.target = r.run_id::text
               AND i->>'target' = r.run_id::text)) AS payload) a
          WHERE r.project_id = 'quiet') x" | tail -1 >&2
  echo "$(percentiles "$1" "project_id = 'quiet'") $before $backlog"
}
echo "bench/runs/fairness: tenant flood submits $FLOOD runs in bulk, tenant quiet $N runs one every $IV ms;" \
  "$PROCS workers x $CONC, batch $BATCH (PostgreSQL), quiet's submitter $SHAPE"
read -r A50 A99 _ _ <<<"$(phase fairalone 0)"
read -r F50 F99 BL0 BL <<<"$(phase fairflood "$FLOOD")"
echo "quiet submit -> finish          p50 ms   p99 ms"
printf '%-30s %8s %8s\n' "alone" "$A50" "$A99" "beside the flood" "$F50" "$F99"
echo "flood's backlog: $BL0 runs when quiet began, $BL when quiet's last run finished"
awk -v a="$A99" -v m="$F99" 'BEGIN { printf "p99 flood / alone = %.2fx (bound: <= 2x)\n", m / a }'
