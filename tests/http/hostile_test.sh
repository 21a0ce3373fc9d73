#!/usr/bin/env bash
# Hostile clients against a real `awooop serve` (sqlite or postgres): paths the
# server must not act on, framing tricks, answers before the body, the body
# memory budget, 1,000 slowloris connections. The checks are in hostile.py.
#   hostile_test.sh AWOOOP_BINARY sqlite|postgres
set -uo pipefail
BIN=$1 BACKEND=$2
TMP=$(mktemp -d /tmp/aw-hostile.XXXXXX)
SERVER_PID= PGDB=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  [ -n "$PGDB" ] && psql -q -h "$AWOOOP_TEST_PG_HOST" -p "$AWOOOP_TEST_PG_PORT" -U postgres -d postgres \
    -c "DROP DATABASE IF EXISTS $PGDB WITH (FORCE)" >/dev/null 2>&1
  rm -rf "$TMP"
}
trap cleanup EXIT
if [ "$BACKEND" = postgres ]; then
  PGDB="aw_hostile_$$_$RANDOM"
  psql -q -h "$AWOOOP_TEST_PG_HOST" -p "$AWOOOP_TEST_PG_PORT" -U postgres -d postgres -c "CREATE DATABASE $PGDB" >/dev/null || exit 1
  "$BIN" migrate --db "postgresql://postgres@$AWOOOP_TEST_PG_HOST:$AWOOOP_TEST_PG_PORT/$PGDB" >/dev/null 2>"$TMP/migrate.log" || { cat "$TMP/migrate.log"; exit 1; }
  DB="postgresql://awooop_app@$AWOOOP_TEST_PG_HOST:$AWOOOP_TEST_PG_PORT/$PGDB"
  export AWOOOP_PUBLISH_KEYS="kt:$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
else
  DB="sqlite:$TMP/awooop.db"
fi
ADMIN=$("$BIN" key generate)
AWOOOP_BOOTSTRAP_KEY=$ADMIN "$BIN" serve --db "$DB" --listen 127.0.0.1:0 --head-timeout-ms 1500 \
  --max-per-ip 64 --body-limit 2048 --body-memory 4096 --project-body-memory 8192 >/dev/null 2>"$TMP/log" &
SERVER_PID=$!
for _ in $(seq 1 100); do grep -q '"awooop serving"' "$TMP/log" && break; sleep 0.1; done
PORT=$(grep '"awooop serving"' "$TMP/log" | jq -r .port)
U="http://127.0.0.1:$PORT"
api() { curl -s -H "Authorization: Bearer $1" -H 'Content-Type: application/json' -X "$2" "$U$3" ${4:+-d "$4"}; }
api "$ADMIN" POST /v1/projects '{"id":"alpha"}' >/dev/null
OP=$(api "$ADMIN" POST /v1/projects/alpha/keys '{"name":"op","scope":"operator"}' | jq -r .key)
KID=$(api "$ADMIN" POST /v1/projects/alpha/keys '{"name":"victim","scope":"reader"}' | jq -r .key_id)
RID=$(api "$OP" POST /v1/platform/runs '{"workflow":[{"kind":"sleep","args":{"ms":60000}}]}' | jq -r .run_id)
python3 "$(dirname "$0")/hostile.py" "$PORT" "$ADMIN" alpha "$OP" "$KID" "$RID"
rc=$?
grep -q '"level":"error"' "$TMP/log" && { echo "FAIL: the server logged errors:"; grep '"level":"error"' "$TMP/log" | head; rc=1; }
exit $rc
