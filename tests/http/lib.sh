# lib.sh - what the black-box test scripts share (sourced): a temporary
# directory and child processes cleaned up on exit, the check counters, a
# fresh database of the backend, starting `awooop serve`, waiting for
# something to happen, skipping when a service is missing.
#   . lib.sh; aw_db BACKEND; aw_serve ARGS... ; ...; aw_done NAME
# AW_TEST_CASE=GLOB runs the script up to the checks whose description
# matches (what they build on runs, its failures said but not counted) and
# stops after the last of them (docs/testing.md).
TMP=$(mktemp -d /tmp/aw-test.XXXXXX)
PASS=0
FAIL=0
PIDS=()
PGDB=
aw_cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  if [ -n "$PGDB" ]; then
    psql -q -h "$AWOOOP_TEST_PG_HOST" -p "$AWOOOP_TEST_PG_PORT" -U postgres -d postgres \
      -c "DROP DATABASE IF EXISTS $PGDB WITH (FORCE)" >/dev/null 2>&1
  fi
  [ -n "${KEEP:-}" ] || rm -rf "$TMP"
}
trap aw_cleanup EXIT

# AW_TEST_CASE: 0 before the selected checks, 1 among them
AW_CASE_IN=0
aw__case() { # aw__case DESCRIPTION: 0 when the check counts
  [ -z "${AW_TEST_CASE:-}" ] && return 0
  # shellcheck disable=SC2053 # a glob on purpose
  if [[ "$1" == $AW_TEST_CASE ]]; then AW_CASE_IN=1; return 0; fi
  if [ "$AW_CASE_IN" = 1 ]; then
    echo "AW_TEST_CASE='$AW_TEST_CASE': the selected checks are done" >&2
    aw_done "$(basename "$0" .sh)"
    exit $?
  fi
  return 1
}
aw__before() { [ -n "${AW_TEST_CASE:-}" ] && [ "$AW_CASE_IN" != 1 ]; }
ok()   { aw__before || PASS=$((PASS + 1)); }
bad()  {
  if aw__before; then echo "(before the selected checks) FAIL: $*" >&2; return 0; fi
  FAIL=$((FAIL + 1)); echo "FAIL: $*" >&2
}
check() {
  if ! aw__case "$1"; then
    [ "$2" == "$3" ] || echo "(before the selected checks) $1: got '$2', want '$3'" >&2
    return 0
  fi
  if [ "$2" == "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi
}
# aw_done NAME: the summary line; the exit status of the script. A pattern in
# AW_TEST_CASE that no check matched is a failure, not an empty pass.
aw_done() {
  aw_openapi_verdict
  if [ -n "${AW_TEST_CASE:-}" ] && [ "$AW_CASE_IN" != 1 ]; then
    echo "$1: no check matches AW_TEST_CASE='$AW_TEST_CASE'" >&2
    return 2
  fi
  echo "$1: $PASS passed, $FAIL failed${AW_TEST_CASE:+ (AW_TEST_CASE='$AW_TEST_CASE')}"
  [ "$FAIL" -eq 0 ]
}

# aw_skip WHY: this script cannot run here (a service it needs is missing):
# said on stderr, exit 77 - CTest's SKIP_RETURN_CODE, a skip and not a pass;
# `make test` fails on it unless AWOOOP_TEST_ALLOW_SKIP=1.
aw_skip() { echo "SKIP: $*" >&2; exit 77; }
# aw_need_pg, aw_need_redis: skip unless `make test`'s (or
# scripts/services.sh's) PostgreSQL / Redis are given
aw_need_pg() {
  [ -n "${AWOOOP_TEST_PG_HOST:-}" ] && [ -n "${AWOOOP_TEST_PG_PORT:-}" ] ||
    aw_skip "needs PostgreSQL: AWOOOP_TEST_PG_HOST/PORT are not set (make test starts one; docs/testing.md)"
}
aw_need_redis() {
  [ -n "${AWOOOP_TEST_REDIS_URL:-}" ] ||
    aw_skip "needs Redis: AWOOOP_TEST_REDIS_URL is not set (make test starts one; docs/testing.md)"
}

# wait_until SECONDS COND...: runs COND (a command and its arguments, or one
# string, evaluated each time) every 0.05 s until it succeeds (0) or SECONDS
# pass (1). SECONDS may be a fraction; $AW_TEST_TIMEOUT_SCALE multiplies it.
# Use it, then check, rather than a sleep before a check: it returns as soon
# as what it waits for happened. A test that measures time keeps its sleeps.
wait_until() {
  local us end
  us=$(awk -v s="$1" -v k="${AW_TEST_TIMEOUT_SCALE:-1}" 'BEGIN { printf "%d", s * k * 1000000 }')
  shift
  end=$(( ${EPOCHREALTIME/[.,]/} + us ))
  while :; do
    if [ $# -eq 1 ]; then eval "$1" && return 0; else "$@" && return 0; fi
    [ "${EPOCHREALTIME/[.,]/}" -ge "$end" ] && return 1
    sleep 0.05
  done
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 1 100); do (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "port $1 never opened" >&2; exit 1
}

# aw_db sqlite|postgres -> DB (the URL serve uses) and EXTRA (serve flags the
# shape needs): a fresh SQLite file, or a fresh PostgreSQL database migrated
# by the owner and used through the app role, with Redis and publish keys.
aw_db() {
  EXTRA=""
  if [ "$1" = postgres ]; then
    aw_need_pg
    aw_need_redis
    PGDB="aw_t_$$_$RANDOM"
    psql -q -h "$AWOOOP_TEST_PG_HOST" -p "$AWOOOP_TEST_PG_PORT" -U postgres -d postgres \
      -c "CREATE DATABASE $PGDB" >/dev/null || exit 1
    "$BIN" migrate --db "postgresql://postgres@$AWOOOP_TEST_PG_HOST:$AWOOOP_TEST_PG_PORT/$PGDB" \
      >/dev/null || exit 1
    DB="postgresql://awooop_app@$AWOOOP_TEST_PG_HOST:$AWOOOP_TEST_PG_PORT/$PGDB"
    EXTRA="--redis $AWOOOP_TEST_REDIS_URL"
    export AWOOOP_PUBLISH_KEYS="kt:$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  else
    DB="sqlite:$TMP/awooop.db"
  fi
}

# aw_serve ARGS... -> URL and ADMIN (the bootstrap platform-admin key); the
# server's stderr in $TMP/server.log. Port 0 and the port it logs: a port
# picked beforehand could be taken by a test running beside this one.
aw_serve() {
  ADMIN=$("$BIN" key generate)
  AWOOOP_BOOTSTRAP_KEY=$ADMIN "$BIN" serve --db "$DB" --listen 127.0.0.1:0 $EXTRA "$@" \
    >"$TMP/stdout" 2>>"$TMP/server.log" &
  PIDS+=($!)
  for _ in $(seq 1 100); do
    if grep -q '"awooop serving"' "$TMP/server.log" 2>/dev/null; then
      URL="http://127.0.0.1:$(grep '"awooop serving"' "$TMP/server.log" | tail -1 | jq -r .port)"
      curl -sf "$URL/healthz" >/dev/null && return 0
    fi
    sleep 0.1
  done
  echo "server did not start" >&2; cat "$TMP/server.log" >&2; exit 1
}

# aw_serve_again ARGS...: `awooop serve` once more on the same database (a
# drill's restart after a SIGKILL) -> URL (the port it logs this time) and
# SERVE (its pid)
aw_serve_again() {
  local log=$TMP/server.log n
  n=$(grep -c '"awooop serving"' "$log")
  AWOOOP_BOOTSTRAP_KEY=$ADMIN "$BIN" serve --db "$DB" --listen 127.0.0.1:0 $EXTRA "$@" \
    >>"$TMP/stdout" 2>>"$log" &
  SERVE=$!
  PIDS+=("$SERVE")
  for _ in $(seq 1 200); do
    if [ "$(grep -c '"awooop serving"' "$log")" -gt "$n" ]; then
      URL="http://127.0.0.1:$(grep '"awooop serving"' "$log" | tail -1 | jq -r .port)"
      curl -sf "$URL/healthz" >/dev/null && return 0
    fi
    sleep 0.05
  done
  echo "server did not start again" >&2; tail -5 "$log" >&2; exit 1
}

# req METHOD PATH KEY [BODY] [curl args...] -> $STATUS, body in $TMP/body
# (U=URL before it: another server than $URL),
# headers in $TMP/hdr; both appended to $RESPONSES (default $TMP/responses),
# where a test searches for what must never be answered. An empty KEY sends
# no Authorization.
req() {
  local method=$1 path=$2 key=$3 body=${4:-}
  shift 4 2>/dev/null || shift $#
  local args=(-s -o "$TMP/body" -D "$TMP/hdr" -w '%{http_code}' -X "$method")
  [ -n "$key" ] && args+=(-H "Authorization: Bearer $key")
  if [ -n "$body" ]; then args+=(-H 'Content-Type: application/json' --data-binary "$body"); fi
  STATUS=$(curl "${args[@]}" "$@" "${U:-$URL}$path")
  { cat "$TMP/hdr" "$TMP/body"; echo; } >>"${RESPONSES:-$TMP/responses}" 2>/dev/null
  aw_record "$method" "$path"
}
# shellcheck source=tests/http/record.sh
. "$(dirname "${BASH_SOURCE[0]}")/record.sh"
jbody() { jq -r "$1" "$TMP/body" 2>/dev/null; }
expect() { # expect DESCRIPTION STATUS [JQ-PATH VALUE]
  check "$1 status" "$STATUS" "$2"
  [ -n "${3:-}" ] && check "$1 $3" "$(jbody "$3")" "$4"
}

# api METHOD PATH KEY [BODY]: the answer's body on stdout
api() { curl -s -X "$1" -H "Authorization: Bearer $3" -H 'Content-Type: application/json' ${4:+--data-binary "$4"} "$URL$2"; }
# mkkey PROJECT NAME SCOPE: a new key's secret (as ADMIN)
mkkey() { api POST "/v1/projects/$1/keys" "$ADMIN" "{\"name\":\"$2\",\"scope\":\"$3\"}" | jq -r .key; }

# aw_activate PROJECT FAMILY BODY PUBLISHER_KEY APPROVER_KEY: the contract
# "default" drafted, published, approved by another key and activated;
# prints "true" when it is active
aw_activate() {
  local base=/v1/projects/$1/contracts/$2/default/revisions rev
  rev=$(api POST "$base" "$4" "{\"body\":$3}" | jq -r .revision_id)
  api POST "$base/$rev/publish" "$4" >/dev/null
  api POST "$base/$rev/approve" "$5" >/dev/null
  api POST "$base/$rev/activate" "$4" | jq -r .activated
}

# aw_redis_db N: this test's serve (and redis-cli) use Redis database N. The
# channel hub's leader lease is one platform key per Redis: tests beside each
# other that run hubs must not share it.
aw_redis_db() {
  aw_need_redis
  REDIS_URL="$AWOOOP_TEST_REDIS_URL/$1"
  EXTRA="--redis $REDIS_URL"
}

# fake_telegram_start BINARY TOKEN_ENV -> TG (the double's base URL)
fake_telegram_start() {
  "$1" --token-env "$2" >"$TMP/fake.out" 2>"$TMP/fake.err" &
  PIDS+=($!)
  for _ in $(seq 1 50); do grep -q '^port' "$TMP/fake.out" && break; sleep 0.1; done
  TG="http://127.0.0.1:$(awk '/^port/ {print $2}' "$TMP/fake.out")"
}
