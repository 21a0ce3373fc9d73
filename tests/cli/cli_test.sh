#!/usr/bin/env bash
# Black-box test of client commands that open the store themselves, on a fresh
# embedded store, with the real Redis of the test services:
#   cli_test.sh AWOOOP_BINARY        (needs AWOOOP_TEST_REDIS_URL)
# - `keys migrate` on a brand-new SQLite file migrates it (as serve does);
# - a project that does not exist is named as such (E-TENANT-001);
# - numeric settings: 0 means what it says, garbage is refused (exit 2).
set -uo pipefail
BIN=$1
TMP=$(mktemp -d /tmp/aw-cli.XXXXXX)
PASS=0
FAIL=0
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
ok() { PASS=$((PASS + 1)); }
bad() { FAIL=$((FAIL + 1)); echo "FAIL: $*" >&2; }
check() { if [ "$2" == "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi; }
[ -n "${AWOOOP_TEST_REDIS_URL:-}" ] ||
  { echo "SKIP: needs Redis: AWOOOP_TEST_REDIS_URL is not set (make test starts one)" >&2; exit 77; }
R=$AWOOOP_TEST_REDIS_URL
DB="sqlite:$TMP/new.db"
# a pattern per run, so runs sharing the Redis do not meet
keys() { "$BIN" keys "$@" --redis "$R" --db "$DB" --pattern tg_sent >"$TMP/out" 2>"$TMP/err"; }

# 1. a fresh store, a project that does not exist
keys migrate --project awoooi --to A; check "fresh store: exit" $? 1
check "fresh store: not-found code" "$(grep -c '^awooop: E-TENANT-001: project awoooi does not exist' "$TMP/err")" 1
check "fresh store: no missing-table error" "$(grep -c 'no such table' "$TMP/err")" 0

# a project to migrate (created through the API of a server on the same
# file); the bootstrap key, the client's key and the Redis URL come from
# files (*_FILE), a group-readable one with a warning
"$BIN" key generate >"$TMP/boot.key"; chmod 600 "$TMP/boot.key"
cp "$TMP/boot.key" "$TMP/client.key"; chmod 644 "$TMP/client.key"
echo "$R" >"$TMP/redis.url"; chmod 600 "$TMP/redis.url"
AWOOOP_BOOTSTRAP_KEY_FILE=$TMP/boot.key "$BIN" serve --db "$DB" --listen 127.0.0.1:0 --role api >/dev/null 2>"$TMP/log" &
SERVER_PID=$!
for _ in $(seq 1 100); do grep -q '"awooop serving"' "$TMP/log" && break; sleep 0.1; done
PORT=$(grep '"awooop serving"' "$TMP/log" | jq -r .port)
AWOOOP_URL="http://127.0.0.1:$PORT" AWOOOP_KEY_FILE=$TMP/client.key "$BIN" project create awoooi >/dev/null 2>"$TMP/client.err"
check "project created (keys from files)" $? 0
check "group-readable secret file: warned" "$(grep -c 'readable by its group or others' "$TMP/client.err")" 1
check "the key is in no log line" "$(grep -c "$(cat "$TMP/boot.key")" "$TMP/log" "$TMP/client.err" | grep -vc ':0$')" 0
AWOOOP_URL="http://127.0.0.1:$PORT" AWOOOP_KEY=x AWOOOP_KEY_FILE=$TMP/client.key "$BIN" project list >/dev/null 2>"$TMP/both.err"
check "KEY and KEY_FILE: exit" $? 2
check "KEY and KEY_FILE: says so" "$(grep -c 'E-CONFIG-001: set AWOOOP_KEY or AWOOOP_KEY_FILE, not both' "$TMP/both.err")" 1
AWOOOP_URL="http://127.0.0.1:$PORT" AWOOOP_KEY_FILE=$TMP/missing "$BIN" project list >/dev/null 2>"$TMP/miss.err"
check "missing KEY_FILE: refused" "$(grep -c 'E-CONFIG-001: AWOOOP_KEY_FILE' "$TMP/miss.err")" 1
kill "$SERVER_PID"; wait "$SERVER_PID"; SERVER_PID=
AWOOOP_REDIS_FILE=$TMP/redis.url "$BIN" keys status --project awoooi --db "$DB" --pattern tg_sent >/dev/null 2>"$TMP/rf.err"
check "redis URL from a file" $? 0

# 2. windows: the default waits 30 days, 0 does not wait, garbage is refused
keys migrate --project awoooi --to A; check "to A" $? 0
keys migrate --project awoooi --to B; check "to B inside the default window: exit" $? 1
check "to B inside the default window: gate" "$(grep -c '^awooop: E-KEYS-003' "$TMP/err")" 1
AWOOOP_KEYS_WINDOW_A_S=abc keys migrate --project awoooi --to B; check "window abc: exit" $? 2
check "window abc: says which" "$(grep -c 'E-CONFIG-001: AWOOOP_KEYS_WINDOW_A_S must be a whole number' "$TMP/err")" 1
AWOOOP_KEYS_WINDOW_A_S=-3 keys migrate --project awoooi --to B; check "window -3: exit" $? 2
AWOOOP_KEYS_WINDOW_A_S=0 keys migrate --project awoooi --to B; check "window 0 = no wait" $? 0
check "phase B" "$(grep -c '^phase B' "$TMP/out")" 1
keys backfill --project awoooi --rate x; check "rate x: exit" $? 2

# 2b. a bootstrap key rotated out cannot come back, and the error says why
K1=$("$BIN" key generate); K2=$("$BIN" key generate)
boot() { # boot KEY: start and stop a server on a fresh store with that key; exit code of serve
  AWOOOP_BOOTSTRAP_KEY=$1 "$BIN" serve --db "sqlite:$TMP/boot.db" --listen 127.0.0.1:0 --role api \
    >/dev/null 2>"$TMP/boot.log" &
  local pid=$! _
  for _ in $(seq 1 50); do grep -q '"awooop serving"' "$TMP/boot.log" && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  kill $pid 2>/dev/null; wait $pid
}
boot "$K1"; check "bootstrap K1" $? 0
boot "$K2"; check "rotate to K2" $? 0
boot "$K1"; check "K1 again: refused" $? 2
check "K1 again: says it was revoked" "$(grep -c 'E-CONFIG-001: AWOOOP_BOOTSTRAP_KEY was revoked at' "$TMP/boot.log")" 1

# 3. numeric options of serve: refused before anything starts
for bad_opt in "--pool-size=" "--concurrency=0" "--heartbeat-ms=5x" "--relay-poll-ms=-1" "--body-limit=1e6"; do
  "$BIN" serve --db "sqlite:$TMP/never.db" --listen 127.0.0.1:0 "$bad_opt" >/dev/null 2>"$TMP/err"
  check "serve $bad_opt: exit" $? 2
  check "serve $bad_opt: code" "$(grep -c 'E-CONFIG-001' "$TMP/err")" 1
done
check "refused options created no store" "$(ls "$TMP"/never.db 2>/dev/null | wc -l)" 0

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
