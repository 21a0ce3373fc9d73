#!/usr/bin/env bash
# Runs the black-box API suite N times in a row on one backend while busy
# loops keep every core loaded - the check that a flaky answer (such as a run
# shown without its history) is gone, not merely rare:
#   tests/http/soak.sh AWOOOP_BINARY sqlite|postgres [N]     (default 50)
# postgres needs the variables of scripts/services.sh, as api_test.sh does.
set -uo pipefail
BIN=$1 BACKEND=$2 N=${3:-50}
here=$(dirname "$0")
load=()
for _ in $(seq 1 "$(nproc)"); do (while :; do :; done) & load+=($!); done
trap 'kill "${load[@]}" 2>/dev/null' EXIT
fail=0
for i in $(seq 1 "$N"); do
  if bash "$here/api_test.sh" "$BIN" "$BACKEND" >"/tmp/aw-soak-$BACKEND.log" 2>&1; then
    echo "run $i/$N: ok"
  else
    fail=$((fail + 1))
    echo "run $i/$N: FAILED"; grep '^FAIL' "/tmp/aw-soak-$BACKEND.log"
  fi
done
echo "soak $BACKEND: $((N - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
