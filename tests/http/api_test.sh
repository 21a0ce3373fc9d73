#!/usr/bin/env bash
# Black-box test of the HTTP API and the CLI against a real `awooop serve`.
#   api_test.sh AWOOOP_BINARY sqlite|postgres
# postgres: a fresh database, migrated by the superuser, served as the app role
# with Redis configured (needs AWOOOP_TEST_PG_HOST/PORT, AWOOOP_TEST_REDIS_URL).
set -uo pipefail
BIN=$1
BACKEND=$2
# (a Redis of its own: /readyz losing it)
command -v redis-server >/dev/null ||
  { echo "SKIP: needs redis-server on PATH (scripts/deps.sh --test installs it)" >&2; exit 77; }
TMP=$(mktemp -d /tmp/aw-api.XXXXXX)
PASS=0
FAIL=0
SERVER_PID=
PGDB=

cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  if [ -n "$PGDB" ]; then
    psql -q -h "$AWOOOP_TEST_PG_HOST" -p "$AWOOOP_TEST_PG_PORT" -U postgres -d postgres \
      -c "DROP DATABASE IF EXISTS $PGDB WITH (FORCE)" >/dev/null 2>&1
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT

ok()   { PASS=$((PASS + 1)); }
bad()  { FAIL=$((FAIL + 1)); echo "FAIL: $*" >&2; }
check() { # check DESCRIPTION ACTUAL EXPECTED
  if [ "$2" == "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi
}

# req METHOD PATH KEY [BODY] [curl args...] -> $STATUS, body in $TMP/body, headers in $TMP/hdr
req() {
  local method=$1 path=$2 key=$3 body=${4:-}
  shift 4 2>/dev/null || shift $#
  local args=(-s -o "$TMP/body" -D "$TMP/hdr" -w '%{http_code}' -X "$method")
  [ -n "$key" ] && args+=(-H "Authorization: Bearer $key")
  if [ -n "$body" ]; then args+=(-H 'Content-Type: application/json' --data-binary "$body"); fi
  STATUS=$(curl "${args[@]}" "$@" "$URL$path")
  cat "$TMP/hdr" "$TMP/body" >>"$TMP/responses" 2>/dev/null
  aw_record "$method" "$path"
}
. "$(dirname "$0")/record.sh"
jbody() { jq -r "$1" "$TMP/body" 2>/dev/null; }
expect() { # expect DESCRIPTION STATUS [CODE]
  check "$1 status" "$STATUS" "$2"
  if [ -n "${3:-}" ]; then
    check "$1 code" "$(jbody .code)" "$3"
    check "$1 content-type" "$(grep -i '^content-type:' "$TMP/hdr" | tr -d '\r' | cut -d' ' -f2)" \
      "application/problem+json"
  fi
}

start_server() {
  # port 0: the kernel picks a free port (no probe-then-bind race); read it back
  # from the server's "awooop serving" log line
  local before
  before=$(grep -c '"awooop serving"' "$TMP/log" 2>/dev/null || true)
  "$BIN" serve --db "$DB" --listen "127.0.0.1:0" $EXTRA >"$TMP/stdout" 2>>"$TMP/log" &
  SERVER_PID=$!
  for _ in $(seq 1 100); do
    if [ "$(grep -c '"awooop serving"' "$TMP/log")" -gt "${before:-0}" ]; then
      PORT=$(grep '"awooop serving"' "$TMP/log" | tail -1 | jq -r .port)
      URL="http://127.0.0.1:$PORT"
      curl -sf "$URL/healthz" >/dev/null 2>&1 && return 0
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "server did not start:" >&2; cat "$TMP/log" >&2; exit 1
}

stop_server() {
  kill -TERM "$SERVER_PID"
  wait "$SERVER_PID"
  local rc=$?
  SERVER_PID=
  return $rc
}

EXTRA=""
if [ "$BACKEND" = postgres ]; then
  [ -n "${AWOOOP_TEST_PG_HOST:-}" ] && [ -n "${AWOOOP_TEST_REDIS_URL:-}" ] ||
    { echo "SKIP: needs PostgreSQL and Redis: AWOOOP_TEST_PG_HOST/PORT and AWOOOP_TEST_REDIS_URL are not set (make test starts them)" >&2; exit 77; }
  PGDB="aw_api_$$_$RANDOM"
  psql -q -h "$AWOOOP_TEST_PG_HOST" -p "$AWOOOP_TEST_PG_PORT" -U postgres -d postgres \
    -c "CREATE DATABASE $PGDB" >/dev/null || exit 1
  "$BIN" migrate --db "postgresql://postgres@$AWOOOP_TEST_PG_HOST:$AWOOOP_TEST_PG_PORT/$PGDB" \
    >/dev/null || exit 1
  DB="postgresql://awooop_app@$AWOOOP_TEST_PG_HOST:$AWOOOP_TEST_PG_PORT/$PGDB"
  EXTRA="--redis $AWOOOP_TEST_REDIS_URL"
  # the cluster shape is given its publish keys; the embedded one makes its own
  export AWOOOP_PUBLISH_KEYS="kt:$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
else
  DB="sqlite:$TMP/awooop.db"
fi

ADMIN=$("$BIN" key generate)
export AWOOOP_BOOTSTRAP_KEY=$ADMIN
start_server
unset AWOOOP_BOOTSTRAP_KEY
check "bootstrap with env key prints nothing" "$(cat "$TMP/stdout")" ""

# --- a port in use is an error: a second server must not share it (SO_REUSEPORT)
"$BIN" serve --db "sqlite:$TMP/second.db" --listen "127.0.0.1:$PORT" >/dev/null 2>"$TMP/second.log" &
SECOND=$!
for _ in $(seq 1 50); do kill -0 $SECOND 2>/dev/null || break; sleep 0.1; done
if kill -0 $SECOND 2>/dev/null; then kill $SECOND; bad "second server on a port in use kept running"; fi
wait $SECOND; check "second server exit code" $? 2
check "second server says why" "$(grep -c 'E-CONFIG-001: cannot listen on 127.0.0.1:'"$PORT"': Address already in use' "$TMP/second.log")" 1

# --- operations endpoints
req GET /healthz "" ""; expect "healthz" 200
req GET / "" ""; check "/ redirects" "$STATUS $(grep -i '^location:' "$TMP/hdr" | tr -d '\r' | cut -d' ' -f2)" "302 /console/"
check "the log names the console's URL, the address unredacted" \
  "$(grep '"awooop serving"' "$TMP/log" | tail -1 | jq -r '.console + " " + .listen')" "$URL/console/ 127.0.0.1:$PORT"
req GET /readyz "" ""; expect "readyz" 200
check "readyz store" "$(jbody .store)" "$( [ "$BACKEND" = postgres ] && echo postgres || echo sqlite)"
[ "$BACKEND" = postgres ] && check "readyz redis" "$(jbody .redis)" "ok"
# /readyz is open: a failure says "not ready" and nothing of the deployment
# (the Redis address went into the answer)
DEAD=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$DEAD" --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
RPID=$!
for _ in $(seq 1 50); do redis-cli -p "$DEAD" ping >/dev/null 2>&1 && break; sleep 0.1; done
AWOOOP_BOOTSTRAP_KEY=$("$BIN" key generate) "$BIN" serve --db "sqlite:$TMP/ready.db" --listen 127.0.0.1:0 \
  --redis "redis://127.0.0.1:$DEAD" --channels off >/dev/null 2>"$TMP/ready.log" &
READY_PID=$!
for _ in $(seq 1 100); do grep -q '"awooop serving"' "$TMP/ready.log" && break; sleep 0.1; done
RURL="http://127.0.0.1:$(grep '"awooop serving"' "$TMP/ready.log" | tail -1 | jq -r .port)"
kill "$RPID"; wait "$RPID" 2>/dev/null
RSTATUS=$(curl -s -o "$TMP/ready.body" -w '%{http_code}' "$RURL/readyz")
kill "$READY_PID"; wait "$READY_PID" 2>/dev/null
check "readyz without redis" "$RSTATUS" 503
check "readyz failure names no port" "$(grep -c "$DEAD" "$TMP/ready.body")" 0
check "the log does" "$(grep '"not ready"' "$TMP/ready.log" | grep -c "$DEAD")" 1

# --- authentication
req GET /v1/projects "" ""; expect "no key" 401 E-AUTH-001
req GET /v1/projects "awk_nope" ""; expect "malformed key" 401 E-AUTH-002
req GET /v1/projects "$("$BIN" key generate)" ""; expect "unknown key" 401 E-AUTH-002
req GET /v1/projects "" "" -H "Authorization: Basic Zm9vOmJhcg=="; expect "basic auth" 401 E-AUTH-001

# --- projects
req POST /v1/projects "$ADMIN" '{"id":"alpha"}'; expect "create alpha" 201
check "alpha id" "$(jbody .id)" alpha
req POST /v1/projects "$ADMIN" '{"id":"beta"}'; expect "create beta" 201
req POST /v1/projects "$ADMIN" '{"id":"alpha"}'; expect "duplicate project" 409 E-TENANT-003

# --- bad input changes nothing
req POST /v1/projects "$ADMIN" '{"id":'; expect "malformed json" 400 E-REQ-001
req POST /v1/projects "$ADMIN" '[]'; expect "array body" 400 E-REQ-001
req POST /v1/projects "$ADMIN" '{"id":"gamma","extra":1}'; expect "unknown field" 400 E-REQ-004
check "unknown field pointer" "$(jbody .pointer)" "/extra"
req POST /v1/projects "$ADMIN" '{"id":"gamma","id":"delta"}'; expect "duplicate member" 400 E-REQ-001
req POST /v1/projects "$ADMIN" '{"id":"Alpha!"}'; expect "bad slug" 400 E-TENANT-002
req POST /v1/projects "$ADMIN" "{\"id\":\"x'; DROP TABLE projects;--\"}"; expect "injection id" 400 E-TENANT-002
req POST /v1/projects "$ADMIN" '{"id":"__platform__"}'; expect "reserved id" 400 E-TENANT-002
req POST /v1/projects "$ADMIN" '{"id":7}'; expect "id not a string" 400 E-REQ-005
req POST /v1/projects "$ADMIN" '' -H 'Content-Type: text/plain' --data-binary '{"id":"gamma"}'
expect "wrong content type" 415 E-REQ-003
head -c 2000000 /dev/zero | tr '\0' 'a' >"$TMP/big"
req POST /v1/projects "$ADMIN" '' -H 'Content-Type: application/json' --data-binary @"$TMP/big"
expect "oversized body" 413 E-REQ-002
req GET /v1/projects "$ADMIN" ""; expect "list projects" 200
check "bad input wrote nothing" "$(jbody '[.items[].id] | join(",")')" "__platform__,alpha,beta"

# --- keys
req POST /v1/projects/alpha/keys "$ADMIN" '{"name":"alice","scope":"operator"}'; expect "alice" 201
ALICE=$(jbody .key); ALICE_ID=$(jbody .key_id)
check "alice key shape" "$(echo "$ALICE" | grep -cE '^awk_[A-Za-z0-9_-]{43}$')" 1
check "alice project" "$(jbody .project)" alpha
req POST /v1/projects/alpha/keys "$ADMIN" '{"name":"aadmin","scope":"project-admin"}'; expect "aadmin" 201
AADMIN=$(jbody .key)
req POST /v1/projects/beta/keys "$ADMIN" '{"name":"bob","scope":"operator"}'; expect "bob" 201
BOB=$(jbody .key); BOB_ID=$(jbody .key_id)
req POST /v1/projects/alpha/keys "$ADMIN" '{"name":"alice","scope":"reader"}'; expect "dup key name" 409 E-KEY-003
req POST /v1/projects/alpha/keys "$ADMIN" '{"name":"x","scope":"root"}'; expect "bad scope" 400 E-KEY-002
req POST /v1/projects/alpha/keys "$AADMIN" '{"name":"p","scope":"platform-admin"}'; expect "escalation" 400 E-KEY-002
req GET /v1/projects/alpha/keys "$AADMIN" ""; expect "list keys" 200
check "no secret in key list" "$(grep -c "$ALICE" "$TMP/body")" 0
check "alpha keys" "$(jbody '[.items[].name] | join(",")')" "alice,aadmin"

# --- tenant isolation through the API: another tenant's resource == a missing one
req GET /v1/projects/beta "$AADMIN" ""; expect "alpha admin reads beta" 404 E-TENANT-001
OTHER=$(jq -c '{code,status,title,detail}' "$TMP/body")
req GET /v1/projects/nosuch "$AADMIN" ""; expect "alpha admin reads missing" 404 E-TENANT-001
check "beta looks like missing" "$(jq -c '{code,status,title,detail}' "$TMP/body")" "$OTHER"
req GET /v1/projects/beta/keys "$AADMIN" ""; expect "alpha admin lists beta keys" 404 E-TENANT-001
req DELETE "/v1/projects/alpha/keys/$BOB_ID" "$AADMIN" ""; expect "revoke beta key via alpha" 404 E-KEY-001
OTHER=$(jq -c '{code,status,title,detail}' "$TMP/body")
req DELETE /v1/projects/alpha/keys/01a226c4-e9a2-74b7-930b-5aecf7f19c7d "$AADMIN" ""
expect "revoke missing key" 404 E-KEY-001
check "beta key looks like missing" "$(jq -c '{code,status,title,detail}' "$TMP/body")" "$OTHER"
req GET /v1/projects/beta "$BOB" ""; expect "bob still works" 200
req DELETE "/v1/projects/alpha/keys/1%27%20OR%201=1" "$AADMIN" ""; expect "injection key id" 400 E-REQ-008
req GET "/v1/projects/alpha%27%20OR%201=1/keys" "$AADMIN" ""; expect "injection project" 400 E-TENANT-002

# --- scopes
req GET /v1/projects/alpha "$ALICE" ""; expect "operator reads project" 200
req GET /v1/projects/alpha/keys "$ALICE" ""; expect "operator lists keys" 403 E-AUTH-003
req POST /v1/projects "$ALICE" '{"id":"zeta"}'; expect "operator creates project" 403 E-AUTH-003
req GET /v1/projects "$ALICE" ""; expect "operator lists projects" 200
check "operator sees own project" "$(jbody '[.items[].id] | join(",")')" "alpha"

# --- revocation
req DELETE "/v1/projects/alpha/keys/$ALICE_ID" "$AADMIN" ""; expect "revoke alice" 204
req GET /v1/projects/alpha "$ALICE" ""; expect "revoked key" 401 E-AUTH-002
req DELETE "/v1/projects/alpha/keys/$ALICE_ID" "$AADMIN" ""; expect "revoke twice" 409 E-KEY-004

# --- routing
req GET /v1/nothing "$ADMIN" ""; expect "unknown route" 404 E-REQ-007
req PUT /v1/projects "$ADMIN" ""; expect "wrong method" 405 E-REQ-006

# --- trace context
TP=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
req GET /v1/projects/nosuch "$ADMIN" "" -H "traceparent: $TP"
RTP=$(grep -i '^traceparent:' "$TMP/hdr" | tr -d '\r' | cut -d' ' -f2)
check "trace continued" "$(echo "$RTP" | cut -d- -f2)" 4bf92f3577b34da6a3ce929d0e0e4736
check "new parent id" "$( [ "$(echo "$RTP" | cut -d- -f3)" != 00f067aa0ba902b7 ] && echo yes)" yes
check "problem trace id" "$(jbody .trace_id)" 4bf92f3577b34da6a3ce929d0e0e4736
req GET /healthz "" "" -H "traceparent: ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
RTP=$(grep -i '^traceparent:' "$TMP/hdr" | tr -d '\r' | cut -d' ' -f2)
check "invalid traceparent starts a new trace" \
  "$(echo "$RTP" | grep -cE '^00-[0-9a-f]{32}-[0-9a-f]{16}-01$')$( [ "$(echo "$RTP" | cut -d- -f2)" != 4bf92f3577b34da6a3ce929d0e0e4736 ] && echo new)" "1new"

# --- metrics
# every tenant's series: a key of the platform project only
req GET /metrics "" ""; expect "metrics without a key" 401 E-AUTH-001
req GET /metrics "$AADMIN" ""; expect "metrics with a tenant admin's key" 404
check "no series to a tenant" "$(grep -c awooop_ "$TMP/body")" 0
req GET /metrics "$ADMIN" ""; expect "metrics" 200
check "metrics requests" "$(grep -c '^awooop_http_requests_total{route="/v1/projects",method="POST",status="201"}' "$TMP/body")" 1
check "metrics store latency" "$(grep -c '^awooop_store_query_duration_seconds_count' "$TMP/body")" 1


# --- audit trail through the API and the CLI
req GET /v1/projects/alpha/audit "$AADMIN" ""; expect "audit list" 200
check "audit actions" "$(jbody '[.items[].action] | join(",")')" \
  "project.create,key.create,key.create,key.revoke"
check "audit actor" "$(jbody '.items[1].actor')" "bootstrap"
check "audit chain links" "$(jbody '.items[1].prev_hash == .items[0].hash')" "true"
req GET "/v1/projects/alpha/audit?action=key.revoke" "$AADMIN" ""; expect "audit filter" 200
check "audit filter count" "$(jbody '.items | length')" 1
req GET "/v1/projects/alpha/audit?limit=2" "$AADMIN" ""; expect "audit page 1" 200
CUR=$(jbody .next_cursor)
req GET "/v1/projects/alpha/audit?limit=2&cursor=$CUR" "$AADMIN" ""; expect "audit page 2" 200
check "audit page 2 starts at 3" "$(jbody '.items[0].seq')" 3
req GET /v1/projects/beta/audit "$AADMIN" ""; expect "audit other tenant" 404 E-TENANT-001
req GET "/v1/projects/alpha/audit?since=yesterday" "$AADMIN" ""; expect "audit bad since" 400 E-REQ-005
req GET /v1/projects/beta/audit "$BOB" ""; expect "bob reads beta audit" 200
# newest first, a cursor counting down; several actions; the principal
req GET "/v1/projects/alpha/audit?order=desc&limit=3" "$AADMIN" ""; expect "audit newest first" 200
check "audit newest first order" "$(jbody '[.items[].seq] | join(",")')" "4,3,2"
req GET "/v1/projects/alpha/audit?order=desc&limit=3&cursor=$(jbody .next_cursor)" "$AADMIN" ""
check "audit newest first, next page" "$(jbody '[.items[].seq] | join(",")')" "1"
req GET "/v1/projects/alpha/audit?action=project.create,key.revoke" "$AADMIN" ""; expect "audit actions" 200
check "audit two actions" "$(jbody '[.items[].action] | join(",")')" "project.create,key.revoke"
req GET "/v1/projects/alpha/audit?actor=bootstrap&until=2999-01-01T00:00:00.000Z" "$AADMIN" ""
check "audit by principal, until" "$(jbody '[.items[].actor] | unique | join(",")') $(jbody '.items | length')" "bootstrap 3"
req GET "/v1/projects/alpha/audit?outcome=ok&action=llm.call" "$AADMIN" ""; expect "audit calls by outcome" 200
check "no calls yet" "$(jbody '.items | length')" 0
req GET "/v1/projects/alpha/audit?outcome=!ok" "$AADMIN" ""; expect "audit: every outcome but ok" 200
check "records without an outcome are no calls" "$(jbody '.items | length')" 0
req GET "/v1/projects/alpha/audit?order=up" "$AADMIN" ""; expect "audit bad order" 400 E-REQ-005
req GET "/v1/projects/alpha/audit?run=nope" "$AADMIN" ""; expect "audit bad run" 400 E-REQ-005
req GET "/v1/projects/alpha/audit?until=soon" "$AADMIN" ""; expect "audit bad until" 400 E-REQ-005
req GET "/v1/projects/alpha/audit?action=a,b,c,d,e,f,g,h,i" "$AADMIN" ""; expect "audit nine actions" 400 E-REQ-005
req GET "/v1/projects/alpha/audit?outcome=$(head -c 40 /dev/zero | tr '\0' x)" "$AADMIN" ""
expect "audit outcome too long" 400 E-REQ-005
"$BIN" audit verify --db "$DB" --project alpha >"$TMP/verify" 2>&1; check "audit verify exit" $? 0
check "audit verify says intact" "$(grep -c intact "$TMP/verify")" 1
check "audit export lines" "$("$BIN" audit export --db "$DB" --project alpha | jq -s length)" 4

# --- canaries: secrets planted everywhere a client can put them never come back
CAN_AWS=AKIAQWERTYUIOPASDFGH
CAN_GH=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  # checksum-valid: GitHub CRC32 (redact.c)
CAN_MAIL=canary.leak@example.org
CAN_PW=CanaryPassw0rdValue
: >"$TMP/responses"
req GET /v1/projects "$AADMIN" "" -H "X-Canary: $CAN_AWS" -A "$CAN_GH" -H "traceparent: $CAN_MAIL"
req GET /v1/projects "$CAN_GH" ""
req GET /v1/projects "" "" -H "Authorization: Bearer $CAN_AWS"
req POST /v1/projects "$ADMIN" "{\"id\":\"gamma\",\"$CAN_AWS\":1}"; expect "canary field name" 400 E-REQ-004
req POST /v1/projects "$ADMIN" "{\"id\":\"$CAN_MAIL\"}"; expect "canary slug" 400 E-TENANT-002
req POST /v1/projects "$ADMIN" "{\"id\": $CAN_GH}"; expect "canary in broken json" 400 E-REQ-001
req POST /v1/projects "$ADMIN" "{\"id\":\"x\",\"password\":\"$CAN_PW\"}"; expect "canary password field" 400 E-REQ-004
req POST /v1/projects/alpha/keys "$AADMIN" "{\"name\":\"n1\",\"scope\":\"$CAN_AWS\"}"; expect "canary scope" 400 E-KEY-002
req POST /v1/projects/alpha/keys "$AADMIN" "{\"name\":\"$CAN_MAIL\",\"scope\":\"reader\"}"; expect "canary name" 400 E-REQ-005
req POST /v1/projects/alpha/keys "$AADMIN" "{\"name\":\"canary-ok\",\"scope\":\"reader\",\"note\":\"password=$CAN_PW\"}"
expect "canary note" 400 E-REQ-004
req GET "/v1/projects?limit=$CAN_AWS" "$ADMIN" ""; expect "canary limit" 400 E-REQ-005
req GET "/v1/projects/alpha/audit?since=$CAN_MAIL&action=$CAN_GH" "$AADMIN" ""; expect "canary since" 400 E-REQ-005
req GET "/v1/projects/alpha/audit?cursor=$CAN_AWS" "$AADMIN" ""; expect "canary cursor" 400 E-REQ-005
req GET "/v1/projects/$CAN_MAIL" "$ADMIN" ""; expect "canary path" 400 E-TENANT-002
req DELETE "/v1/projects/alpha/keys/$CAN_GH" "$AADMIN" ""; expect "canary key id" 400 E-REQ-008
for c in "$CAN_AWS" "$CAN_GH" "$CAN_MAIL" "$CAN_PW"; do
  check "canary absent from responses" "$(grep -c -- "$c" "$TMP/responses")" 0
  check "canary absent from log" "$(grep -c -- "$c" "$TMP/log")" 0
done
for p in __platform__ alpha beta; do
  "$BIN" audit export --db "$DB" --project "$p" >>"$TMP/audit_dump"
done
if [ "$BACKEND" = postgres ]; then
  psql -qAt -h "$AWOOOP_TEST_PG_HOST" -p "$AWOOOP_TEST_PG_PORT" -U postgres -d "$PGDB" \
    -c "SELECT row_to_json(a) FROM awooop.audit_events a" >>"$TMP/audit_dump"
else
  sqlite3 "${DB#sqlite:}" "SELECT * FROM audit_events" >>"$TMP/audit_dump"
fi
check "audit dump not empty" "$( [ -s "$TMP/audit_dump" ] && echo yes)" yes
for c in "$CAN_AWS" "$CAN_GH" "$CAN_MAIL" "$CAN_PW" "$ADMIN" "$ALICE" "$AADMIN" "$BOB"; do
  check "secret absent from audit table" "$(grep -c -- "$c" "$TMP/audit_dump")" 0
done

# --- contract registry: draft, validate, publish, approve, activate
req POST /v1/projects/alpha/keys "$AADMIN" '{"name":"op1","scope":"operator"}'; OP1=$(jbody .key)
req POST /v1/projects/alpha/keys "$AADMIN" '{"name":"op2","scope":"operator"}'; OP2=$(jbody .key)
CB=/v1/projects/alpha/contracts/budget/daily
req POST $CB/revisions "$OP1" '{"body":{"period":"day","token_limit":1000,"action_on_exceed":"kill"}}'
expect "contract draft" 201
REV1=$(jbody .revision_id)
check "draft state" "$(jbody .state)" draft
req POST $CB/revisions "$OP1" '{"body":{"period":"day","token_limit":1000,"action_on_exceed":"kill","oops":1}}'
expect "contract unknown field" 422 E-CONTRACT-001
check "contract error pointer" "$(jbody .pointer)" "/oops"
req POST $CB/revisions "$OP1" '{"bodyx":{}}'; expect "contract request unknown field" 400 E-REQ-004
req POST /v1/projects/alpha/contracts/nonsense/x/revisions "$OP1" '{"body":{}}'; expect "unknown family" 404 E-CONTRACT-004
req POST "/v1/projects/alpha/contracts/budget/Bad%20Id/revisions" "$OP1" '{"body":{}}'; expect "bad contract id" 400 E-CONTRACT-009
req POST "$CB/revisions/$REV1/activate" "$OP1" ""; expect "activate draft" 409 E-CONTRACT-003
req POST "$CB/revisions/$REV1/publish" "$OP1" ""; expect "publish" 200
check "published" "$(jbody .state)" published
check "signed" "$(jbody '.signature | length')" 64
req POST "$CB/revisions/$REV1/approve" "$OP1" ""; expect "self approval" 403 E-CONTRACT-006
req POST "$CB/revisions/$REV1/activate" "$OP1" ""; expect "activate unapproved" 409 E-CONTRACT-005
req POST "$CB/revisions/$REV1/approve" "$OP2" ""; expect "approve" 201
req POST "$CB/revisions/$REV1/approve" "$OP2" ""; expect "approve twice" 409 E-CONTRACT-007
req POST "$CB/revisions/$REV1/activate" "$OP1" ""; expect "activate" 200
check "activated" "$(jbody .activated)" true
req GET $CB/active "$OP2" ""; expect "active" 200
check "active revision" "$(jbody .revision_id)" "$REV1"
check "active body" "$(jbody .body.token_limit)" 1000
req GET "$CB/revisions/$REV1" "$OP2" ""; expect "get revision" 200
check "verified" "$(jbody .verified)" true
req GET $CB/active "$BOB" ""; expect "other tenant contract" 404 E-TENANT-001
req POST "$CB/revisions/$REV1/revoke" "$OP1" ""; expect "operator revoke" 403 E-AUTH-003
req POST "$CB/revisions/$REV1/frobnicate" "$OP1" ""; expect "unknown action" 404 E-REQ-007
# the same through the CLI, with a second revision and a diff
printf '{"period":"day","token_limit":2000,"action_on_exceed":"alert"}' >"$TMP/b2.json"
REV2=$(AWOOOP_URL=$URL AWOOOP_KEY=$OP1 "$BIN" contract create --project alpha --family budget \
  --contract daily --file "$TMP/b2.json" --json | jq -r .revision_id)
check "cli contract create" "$(echo "$REV2" | grep -cE '^[0-9a-f-]{36}$')" 1
AWOOOP_URL=$URL AWOOOP_KEY=$OP1 "$BIN" contract publish --project alpha --family budget --contract daily --rev "$REV2" >/dev/null
check "cli publish" $? 0
AWOOOP_URL=$URL AWOOOP_KEY=$OP2 "$BIN" contract approve --project alpha --family budget --contract daily --rev "$REV2" >/dev/null
check "cli approve" $? 0
AWOOOP_URL=$URL AWOOOP_KEY=$OP2 "$BIN" contract activate --project alpha --family budget --contract daily --rev "$REV2" >"$TMP/act"
check "cli activate" "$(grep -c activated "$TMP/act")" 1
check "cli diff" "$(AWOOOP_URL=$URL AWOOOP_KEY=$OP2 "$BIN" contract diff --project alpha --family budget \
  --contract daily --rev "$REV1" --to "$REV2" | jq -c '[.[].path]')" '["/action_on_exceed","/token_limit"]'
check "cli list" "$(AWOOOP_URL=$URL AWOOOP_KEY=$OP2 "$BIN" contract list --project alpha --family budget \
  --contract daily | tail -n +2 | awk '{print $2}' | sort | tr '\n' ,)" "active,superseded,"
# regression: a member name over 1 KiB (with '~' and '/' to escape) in two valid
# mcp_tool revisions; the diff once overflowed a 1,024-byte stack buffer and cut paths
LONG=$(printf 'a%.0s' $(seq 1 1500))
LONGTOOL="{\"upstreams\":{\"p\":{\"transport\":\"http\",\"url\":\"http://127.0.0.1:9/mcp\"}},\"tools\":[{\"name\":\"t\",\"provider\":\"p\",\"mode\":\"read_only\",\"args_schema\":{\"properties\":{\"${LONG}~/x\":{\"type\":"
req POST "/v1/projects/alpha/contracts/mcp_tool/tools/revisions" "$OP1" "{\"body\":${LONGTOOL}\"string\"}}}}]}}"
expect "long member rev a" 201; LA=$(jbody .revision_id)
req POST "/v1/projects/alpha/contracts/mcp_tool/tools/revisions" "$OP1" "{\"body\":${LONGTOOL}\"integer\"}}}}]}}"
expect "long member rev b" 201; LB=$(jbody .revision_id)
req GET "/v1/projects/alpha/contracts/mcp_tool/tools/revisions/$LA/diff/$LB" "$OP2" ""; expect "long member diff" 200
check "long member diff path" "$(jbody '.[0].path')" "/tools/0/args_schema/properties/${LONG}~0~1x/type"
check "long member diff ops" "$(jbody 'length')" 1
req POST "$CB/revisions/$REV2/revoke" "$AADMIN" ""; expect "admin revoke active" 200
req GET $CB/active "$OP2" ""; expect "no active after revoke" 404 E-CONTRACT-002
"$BIN" audit verify --db "$DB" --project alpha >/dev/null; check "audit chain after contracts" $? 0

# --- CLI against the server
export AWOOOP_URL=$URL AWOOOP_KEY=$ADMIN
"$BIN" project create gamma >/dev/null 2>&1; check "cli project create" $? 0
"$BIN" project create gamma >/dev/null 2>"$TMP/err"; check "cli duplicate exit" $? 1
check "cli duplicate code" "$(grep -c E-TENANT-003 "$TMP/err")" 1
check "cli project list" "$("$BIN" project list --json | jq -r '[.items[].id] | join(",")')" \
  "__platform__,alpha,beta,gamma"
"$BIN" key create --project gamma --name carol --scope reader --json >"$TMP/k.json"
check "cli key create" $? 0
CAROL_ID=$(jq -r .key_id "$TMP/k.json")
check "cli key list" "$("$BIN" key list --project gamma | grep -c carol)" 1
"$BIN" key revoke --project gamma "$CAROL_ID" >/dev/null; check "cli key revoke" $? 0
AWOOOP_KEY=$BOB "$BIN" project create delta >/dev/null 2>&1; check "cli forbidden exit" $? 1
AWOOOP_URL=http://127.0.0.1:1 "$BIN" project list >/dev/null 2>&1; check "cli unreachable exit" $? 3
"$BIN" serve --role bogus >/dev/null 2>&1; check "cli bad role exit" $? 2
"$BIN" project frobnicate >/dev/null 2>&1; check "cli bad subcommand exit" $? 2
"$BIN" key --help >/dev/null; check "cli help exit" $? 0
"$BIN" --nonsense >/dev/null 2>&1; check "cli unknown command exit" $? 2
unset AWOOOP_URL AWOOOP_KEY

# --- runs (project from the key; workers run in the same process)
req POST /v1/projects/alpha/keys "$ADMIN" '{"name":"runner","scope":"operator"}'; expect "runner key" 201
RUNNER=$(jbody .key)
TPID=4bf92f3577b34da6a3ce929d0e0e4736
TP="00-$TPID-00f067aa0ba902b7-01"
RB='{"workflow":[{"kind":"noop"}],"input":{"q":1}}'
req POST /v1/platform/runs "$RUNNER" "$RB" -H "Idempotency-Key: k-1" -H "traceparent: $TP"
expect "run submit" 201
RUN1=$(jbody .run_id)
check "run id is UUIDv7" "$(echo "$RUN1" | cut -c15)" 7
check "run project from key" "$(jbody .project)" alpha
check "run trace continued" "$(jbody .trace_id)" "$TPID"
RTP=$(grep -i '^traceparent:' "$TMP/hdr" | tr -d '\r' | cut -d' ' -f2)
check "traceparent returned, same trace" "$(echo "$RTP" | cut -d- -f2)" "$TPID"
check "traceparent new parent id" "$([ "$(echo "$RTP" | cut -d- -f3)" != 00f067aa0ba902b7 ] && echo new)" new
req POST /v1/platform/runs "$RUNNER" '{"input":{"q":1},"workflow":[{"kind":"noop"}]}' -H "Idempotency-Key: k-1"
expect "idempotent replay" 200
check "replay same run" "$(jbody .run_id)" "$RUN1"
req POST /v1/platform/runs "$RUNNER" '{"workflow":[{"kind":"noop"}],"input":{"q":2}}' -H "Idempotency-Key: k-1"
expect "idempotency key reused" 409 E-RUN-IDEMPOTENCY
req POST /v1/platform/runs "$BOB" "$RB" -H "Idempotency-Key: k-1"; expect "keys are per project" 201
BOBRUN=$(jbody .run_id)
req POST /v1/platform/runs "$RUNNER" "$RB" -H "traceparent: 00-zz-bad"; expect "bad traceparent" 201
check "bad traceparent starts a new trace" "$(jbody .trace_id | grep -cE '^[0-9a-f]{32}$')" 1
req POST /v1/platform/runs "$RUNNER" '{"workflow":[{"kind":"rm-rf"}]}'; expect "unknown step kind" 422 E-RUN-003
check "unknown step kind pointer" "$(jbody .pointer)" "/workflow/0/kind"
# data flow between steps: a reference to no step, or to a later one, is
# refused with the pointer of its $ref and nothing is kept (the key is free)
req POST /v1/platform/runs "$RUNNER" '{"workflow":[{"name":"a","kind":"noop"},{"name":"b","kind":"noop"},{"kind":"http","args":{"url":{"$ref":"/steps/c/result/url"}}}]}' -H "Idempotency-Key: flow-1"
expect "reference to no step" 422 E-RUN-011
check "reference to no step pointer" "$(jbody .pointer)" "/workflow/2/args/url"
req POST /v1/platform/runs "$RUNNER" '{"workflow":[{"kind":"sleep","args":{"ms":{"$ref":"/steps/b/result/ms"}}},{"name":"b","kind":"noop"}]}'
expect "reference to a later step" 422 E-RUN-011
check "reference to a later step pointer" "$(jbody .pointer)" "/workflow/0/args/ms"
req POST /v1/platform/runs "$RUNNER" '{"workflow":[{"kind":"noop","when":{"$ref":"/input/x","equals":1,"exists":true}}]}'
expect "condition with two tests" 422 E-RUN-003
check "condition pointer" "$(jbody .pointer)" "/workflow/0/when"
FLOW='{"input":{"ms":1,"env":"dev"},"workflow":[{"name":"wait","kind":"sleep","args":{"ms":{"$ref":"/input/ms"}}},{"kind":"fail","when":{"$ref":"/input/env","equals":"prod"}},{"kind":"noop","when":{"$ref":"/steps/wait/state","equals":"succeeded"},"retry":{"attempts":2,"backoff_ms":10}}]}'
req POST /v1/platform/runs "$RUNNER" "$FLOW" -H "Idempotency-Key: flow-1"
expect "data flow run (the refused request's key is free)" 201
FRUN=$(jbody .run_id)
req POST /v1/platform/runs "$RUNNER" '{"workflow":[{"kind":"noop"}],"priority":"high"}'
expect "bad priority" 400 E-REQ-005
req POST /v1/platform/runs "" "$RB"; expect "run without key" 401 E-AUTH-001
# bulk submission: one transaction, a result per run, per-item idempotency
BATCH='{"runs":[{"workflow":[{"kind":"noop"}],"input":{"q":1},"idempotency_key":"k-1"},
  {"workflow":[{"kind":"noop"}],"idempotency_key":"b-1"},{"workflow":[{"kind":"noop"}],"idempotency_key":"b-1"},
  {"workflow":[{"kind":"rm-rf"}]},{"workflow":[{"kind":"noop"}],"input":{"q":9},"idempotency_key":"k-1"},
  {"workflow":[{"kind":"noop"}],"idempotency_key":7}]}'
req POST /v1/platform/runs:batch "$RUNNER" "$BATCH"; expect "batch" 200
check "batch statuses" "$(jbody '[.results[].status] | map(tostring) | join(",")')" "200,201,200,422,409,400"
check "batch replays the earlier run" "$(jbody '.results[0].run_id')" "$RUN1"
check "batch replays within itself" "$(jbody '.results[2].run_id == .results[1].run_id')" true
check "batch item error pointer" "$(jbody '.results[3].pointer')" "/workflow/0/kind"
check "batch counts" "$(jbody '[.created, .replayed, .refused] | map(tostring) | join(",")')" "1,2,3"
req POST /v1/platform/runs:batch "$RUNNER" '{"runs":[]}'; expect "empty batch" 400 E-REQ-005
req POST /v1/platform/runs:batch "$BOB" "$BATCH"; expect "batch in another project" 200
check "keys are per project in a batch" "$(jbody '.created')" 1
for i in $(seq 1 1500); do echo "{\"workflow\":[{\"kind\":\"noop\"}],\"idempotency_key\":\"line-$i\"}"; done >"$TMP/runs.jsonl"
AWOOOP_URL=$URL AWOOOP_KEY=$RUNNER "$BIN" run submit --file "$TMP/runs.jsonl" >"$TMP/jl.out" 2>"$TMP/jl.err"
check "cli JSON lines" $? 0
check "cli JSON lines: a result per line" "$(grep -c '"status":201' "$TMP/jl.out")" 1500
check "cli JSON lines: summary" "$(cat "$TMP/jl.err")" "runs: 1500 created, 0 replayed, 0 refused"
AWOOOP_URL=$URL AWOOOP_KEY=$RUNNER "$BIN" run submit --file "$TMP/runs.jsonl" >/dev/null 2>"$TMP/jl.err"
check "cli JSON lines again: replayed" "$(cat "$TMP/jl.err")" "runs: 0 created, 1500 replayed, 0 refused"
# named queues: declared before use, a limit per queue, per project
req GET /v1/projects/alpha/queues "$RUNNER" ""; expect "queues" 200
check "default queue always listed" "$(jbody '[.items[].name] | join(",")')" default
req POST /v1/platform/runs "$RUNNER" '{"workflow":[{"kind":"noop"}],"queue":"mail"}'
expect "undeclared queue" 400 E-REQ-005; check "undeclared queue pointer" "$(jbody .pointer)" /queue
req PUT /v1/projects/alpha/queues/mail "$RUNNER" '{"concurrency":2}'; expect "declare queue" 200
check "queue limit" "$(jbody .concurrency)" 2
req PUT /v1/projects/alpha/queues/mail "$RUNNER" '{"concurrency":0}'; expect "queue limit 0" 400 E-REQ-005
req PUT /v1/projects/alpha/queues/mail "$RUNNER" '{"concurrency":"2"}'; expect "queue limit text" 400 E-REQ-005
req PUT /v1/projects/alpha/queues/mail "$RUNNER" '{"concurrency":2,"x":1}'; expect "queue unknown field" 400 E-REQ-004
req PUT '/v1/projects/alpha/queues/a%20b' "$RUNNER" '{"concurrency":2}'; expect "queue bad name" 400 E-REQ-005
req PUT /v1/projects/beta/queues/mail "$RUNNER" '{"concurrency":2}'; expect "queue of another project" 404 E-TENANT-001
req POST /v1/platform/runs "$RUNNER" '{"workflow":[{"kind":"noop"}],"queue":"mail"}'; expect "run in a queue" 201
check "run's queue" "$(jbody .queue)" mail
req POST /v1/platform/runs "$BOB" '{"workflow":[{"kind":"noop"}],"queue":"mail"}'
expect "queues are per project" 400 E-REQ-005
AWOOOP_URL=$URL AWOOOP_KEY=$RUNNER "$BIN" run queue mail --project alpha --concurrency none >/dev/null
check "cli queue none" $? 0
AWOOOP_URL=$URL AWOOOP_KEY=$RUNNER "$BIN" run queues --project alpha >"$TMP/q.out"
check "cli queues" "$(awk '$1 == "mail" {print $2}' "$TMP/q.out")" none
req GET "/v1/platform/runs/$RUN1" "$BOB" ""; expect "other project's run" 404 E-RUN-001
req GET "/v1/platform/runs/not-a-uuid" "$RUNNER" ""; expect "malformed run id" 404 E-RUN-001
# the project selector (?project=): a platform admin acts in the project it
# names (the console's selector); any other key may name only its own
req GET "/v1/platform/runs/$RUN1" "$ADMIN" ""; expect "platform key, no selector: its own project's" 404 E-RUN-001
req GET "/v1/platform/runs/$RUN1?project=alpha" "$ADMIN" ""; expect "platform key reads alpha's run" 200
check "alpha's run" "$(jbody .run_id) $(jbody .project)" "$RUN1 alpha"
req POST "/v1/platform/runs?project=alpha" "$ADMIN" '{"workflow":[{"kind":"noop"}]}'
expect "platform key submits in alpha" 201; check "submitted in alpha" "$(jbody .project)" alpha
ARUN=$(jbody .run_id)
req GET "/v1/platform/runs?project=alpha&limit=1" "$ADMIN" ""; expect "platform key lists alpha's runs" 200
check "alpha's newest run listed" "$(jbody '.items[0].run_id')" "$ARUN"
req GET "/v1/platform/runs/$RUN1?project=alpha" "$RUNNER" ""; expect "a key naming its own project" 200
req GET "/v1/platform/runs/$RUN1?project=alpha" "$BOB" ""; expect "a key naming another project" 404 E-TENANT-001
req GET "/v1/platform/runs?project=alpha" "$BOB" ""; expect "listing another project's runs" 404 E-TENANT-001
req POST "/v1/platform/runs/$RUN1/cancel?project=alpha" "$BOB" ""; expect "cancel in another project" 404 E-TENANT-001
req GET "/v1/platform/runs?project=No%20Such" "$ADMIN" ""; expect "a selector that is no project id" 400 E-TENANT-002
req GET "/v1/platform/runs/${RUN1^^}" "$RUNNER" ""; expect "uppercase run id, same on both backends" 404 E-RUN-001
# the number policy: what cannot read back equal is refused with its pointer
req POST /v1/platform/runs "$RUNNER" '{"workflow":[{"kind":"noop"}],"input":{"n":1e19}}'
expect "run input 1e19" 400 E-REQ-005; check "run input 1e19 pointer" "$(jbody .pointer)" "/input/n"
req POST /v1/platform/runs "$RUNNER" '{"workflow":[{"kind":"noop"}],"input":{"n":9007199254740993}}'
expect "run input past 2^53" 400 E-REQ-005
req POST /v1/platform/runs "$RUNNER" '{"workflow":[{"kind":"noop"}],"input":{"n":9007199254740992,"f":0.1}}'
expect "run input at 2^53" 201; check "run input reads back" "$(jq -c .input "$TMP/body")" '{"n":9007199254740992,"f":0.1}'
for _ in $(seq 1 50); do
  req GET "/v1/platform/runs/$RUN1" "$RUNNER" ""
  [ "$(jbody .state)" = succeeded ] && break
  sleep 0.1
done
check "run succeeded" "$(jbody .state)" succeeded
check "run journal" "$(jbody '[.steps[] | .kind + ":" + .state] | join(",")')" "noop:succeeded"
check "run step key" "$(jbody '.steps[0].idempotency_key')" "$RUN1-1"
check "run transitions" "$(jbody '[.transitions[].to] | join(",")')" "queued,claimed,running,succeeded"
for _ in $(seq 1 50); do
  req GET "/v1/platform/runs/$FRUN" "$RUNNER" ""
  [ "$(jbody .state)" = succeeded ] && break
  sleep 0.1
done
check "data flow run: input into args, a condition skips" "$(jbody '.state + " " + ([.steps[] | .kind + ":" + .state + ":" + (.tries | tostring)] | join(","))')" \
  "succeeded sleep:succeeded:1,fail:skipped:1,noop:succeeded:1"
req GET "/v1/platform/runs?limit=1" "$RUNNER" ""; expect "run list" 200
check "run list page" "$(jbody '.items | length')" 1
CUR=$(jbody .next_cursor)
req GET "/v1/platform/runs?limit=1000&cursor=$CUR" "$RUNNER" ""; expect "run list next page" 200
check "run list only own" "$(jbody '[.items[].project] | unique | join(",")')" alpha
check "run list newest first" "$(jbody '[.items[].run_id] | (. == (sort | reverse))')" true
req GET "/v1/platform/runs?state=bogus" "$RUNNER" ""; expect "run list bad state" 400 E-REQ-005
req POST /v1/platform/runs "$RUNNER" '{"workflow":[{"kind":"sleep","args":{"ms":20000}}]}'
SLOW=$(jbody .run_id)
req POST "/v1/platform/runs/$SLOW/cancel" "$BOB" ""; expect "cancel other project's run" 404 E-RUN-001
req POST "/v1/platform/runs/$SLOW/cancel" "$RUNNER" ""; expect "cancel" 200
check "cancelled" "$(jbody .state)" cancelled
req POST "/v1/platform/runs/$SLOW/cancel" "$RUNNER" ""; expect "cancel twice" 409 E-RUN-002
# credentials never travel in a run definition (every reader of the project
# would see them): refused with their pointer, and never in the log, the audit
# trail, an error answer or a journal; steps name them by reference
: >"$TMP/responses"
req POST /v1/platform/runs "$RUNNER" "{\"max_attempts\":1,\"workflow\":[{\"kind\":\"http\",\"args\":{\"url\":\"http://127.0.0.1:1/x?token=$CAN_GH\",\"body\":{\"password\":\"$CAN_PW\",\"k\":\"$CAN_AWS\"}}}]}"
expect "run with secrets in its args" 422 E-RUN-008
check "secret in args pointer" "$(jbody .pointer)" "/workflow/0/args/url"
req POST /v1/platform/runs "$RUNNER" "{\"workflow\":[{\"kind\":\"http\",\"args\":{\"url\":\"http://u:$CAN_PW@127.0.0.1:1/x\"}}]}"
expect "URL userinfo" 422 E-RUN-008
req POST /v1/platform/runs "$RUNNER" '{"max_attempts":1,"workflow":[{"kind":"http","args":{"url":"http://127.0.0.1:1/x","headers":{"Authorization":{"secret_ref":"env:AW_NOT_SET","prefix":"Bearer "}},"body":{"k":"v"}}}]}'
expect "secret by reference" 201
CRUN=$(jbody .run_id)
req POST /v1/platform/runs "$RUNNER" "{\"workflow\":[{\"kind\":\"noop\",\"$CAN_AWS\":1}]}"
expect "canary step field" 400 E-REQ-004
req POST /v1/platform/runs "$RUNNER" "{\"workflow\":[{\"kind\":\"sleep\",\"args\":{\"ms\":\"$CAN_PW\"}}]}"
expect "canary step arg" 422 E-RUN-003
req POST /v1/platform/runs "$RUNNER" "$RB" -H "Idempotency-Key: $CAN_MAIL x"
expect "canary idempotency key" 400 E-REQ-005
for c in "$CAN_AWS" "$CAN_GH" "$CAN_PW" "$CAN_MAIL"; do
  check "run canary absent from error answers" "$(grep -c -- "$c" "$TMP/responses")" 0
done
for _ in $(seq 1 50); do
  req GET "/v1/platform/runs/$CRUN" "$RUNNER" ""
  [ "$(jbody .state)" = failed ] && break
  sleep 0.1
done
check "an unresolvable reference fails the run" "$(jbody .state):$(jbody .error_code)" "failed:E-SECRET-002"
jq -c '[.steps, .transitions]' "$TMP/body" >"$TMP/journal"
if [ "$BACKEND" = postgres ]; then
  psql -qAt -h "$AWOOOP_TEST_PG_HOST" -p "$AWOOOP_TEST_PG_PORT" -U postgres -d "$PGDB" \
    -c "SELECT row_to_json(a) FROM awooop.audit_events a" >"$TMP/audit_runs"
else
  sqlite3 "${DB#sqlite:}" "SELECT * FROM audit_events" >"$TMP/audit_runs"
fi
for c in "$CAN_AWS" "$CAN_GH" "$CAN_PW"; do
  check "step arg absent from the journal" "$(grep -c -- "$c" "$TMP/journal")" 0
  check "step arg absent from the audit table" "$(grep -c -- "$c" "$TMP/audit_runs")" 0
  check "step arg absent from the log" "$(grep -c -- "$c" "$TMP/log")" 0
done
echo '{"workflow":[{"kind":"noop"},{"kind":"noop"}],"mode":"shadow"}' >"$TMP/run.json"
export AWOOOP_URL=$URL AWOOOP_KEY=$RUNNER
"$BIN" run submit --file "$TMP/run.json" --wait >"$TMP/out" 2>"$TMP/err"; check "cli run submit --wait" $? 0
# its first state: queued, or claimed when an idle worker of the server took it at once
check "cli run submit --wait shows progress" "$(grep -cE "^run $(cut -d' ' -f1 "$TMP/out"): (queued|claimed)" "$TMP/err")" 1
SH=$(cut -d' ' -f1 "$TMP/out")
"$BIN" run get "$SH" | jq -r .mode >"$TMP/out"; check "cli run get" "$(cat "$TMP/out")" shadow
check "cli run list" "$("$BIN" run list --state cancelled | grep -c "$SLOW")" 1
"$BIN" run diff "$SH" "$RUN1" | jq -r .same >"$TMP/out"; check "cli run diff" "$(cat "$TMP/out")" false
"$BIN" run cancel "$SLOW" >/dev/null 2>&1; check "cli cancel finished run exit" $? 1
"$BIN" run get nope >/dev/null 2>&1; check "cli run get bad id exit" $? 2
unset AWOOOP_URL AWOOOP_KEY

# --- secrets never reach the log; restart is durable and prints no new key
for s in "$ADMIN" "$ALICE" "$AADMIN" "$BOB" "$RUNNER"; do
  check "secret absent from log" "$(grep -c -- "$s" "$TMP/log")" 0
done
check "log is JSON lines" "$(jq -c . "$TMP/log" >/dev/null 2>&1 && echo yes)" yes
stop_server; check "graceful stop exit" $? 0
start_server
check "restart prints no key" "$(cat "$TMP/stdout")" ""
req GET /v1/projects/beta "$BOB" ""; expect "data survives restart" 200
stop_server

aw_openapi_verdict
echo "api ($BACKEND): $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
