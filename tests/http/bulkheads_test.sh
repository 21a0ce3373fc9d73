#!/usr/bin/env bash
# Per-project bounds of the API server's shared resources (issue 39) against
# a real `awooop serve` (sqlite or postgres): the request-body memory one
# project's uploads may hold, the allowance of requests without a key, and
# the store connections one project's requests may hold. The checks are in
# bulkheads.py.
#   bulkheads_test.sh AWOOOP_BINARY sqlite|postgres
set -uo pipefail
BIN=$1 BACKEND=$2
. "$(dirname "$0")/lib.sh"
aw_db "$BACKEND"
# --role api: no workers or relay waiting for SQLite's writer beside the
# requests (the pool is the requests' alone, and 8: a project's default
# bound is 2); the bounds small enough to fill with a few sockets
aw_serve --role api --pool-size 8 --project-pool 2,gamma=3 --max-per-ip 256 \
  --body-limit 4096 --body-memory 65536 --project-body-memory 8192,gamma=16384 \
  --anon-body-memory 4096
for p in alpha beta gamma; do api POST /v1/projects "$ADMIN" "{\"id\":\"$p\"}" >/dev/null; done
A=$(mkkey alpha op operator)
AA=$(mkkey alpha admin project-admin)
B=$(mkkey beta op operator)
G=$(mkkey gamma op operator)
if [ "$BACKEND" = postgres ]; then
  HOLD="psql://postgres@$AWOOOP_TEST_PG_HOST:$AWOOOP_TEST_PG_PORT/$PGDB"
else
  HOLD="sqlite:$TMP/awooop.db"
fi
python3 "$(dirname "$0")/bulkheads.py" "$URL" "$HOLD" "$ADMIN" "$A" "$AA" "$B" "$G"
rc=$?
grep -q '"level":"error"' "$TMP/server.log" && {
  echo "FAIL: the server logged errors:"; grep '"level":"error"' "$TMP/server.log" | head; rc=1; }
for k in "$A" "$AA" "$B" "$G"; do
  grep -qF "$k" "$TMP/server.log" && { echo "FAIL: a key in the log"; rc=1; }
done
exit $rc
