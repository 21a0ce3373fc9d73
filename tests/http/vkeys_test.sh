#!/usr/bin/env bash
# Black-box test of virtual keys against a real `awooop serve` (two of them
# on PostgreSQL + Redis, sharing one store) and a fake upstream: a key's
# limits written and checked through the API (422 E-KEY-005 with a pointer)
# and the CLI; its models (403 E-KEY-006), requests per minute (429
# E-KEY-007), tokens per minute (429 E-KEY-008) and budget (429 E-KEY-009),
# each refused at its boundary and exact under concurrent calls spread over
# both processes; the project's budget still binding under a key's; expiry
# (401 E-AUTH-004); the key's team and user in every call's audit record;
# another project's admin seeing none of it.
#   vkeys_test.sh AWOOOP_BINARY FAKE_LLM_BINARY sqlite|postgres
set -uo pipefail
BIN=$1
FAKE=$2
BACKEND=$3
. "$(dirname "$0")/lib.sh"
export AWOOOP_PROJECT_POOL=64
# expect DESCRIPTION STATUS [CODE] [POINTER]: this suite's form (lib.sh's
# takes a jq path); U=URL before req asks another process
expect() {
  check "$1 status" "$STATUS" "$2"
  [ -n "${3:-}" ] && check "$1 code" "$(jbody .code)" "$3"
  [ -n "${4:-}" ] && check "$1 pointer" "$(jbody .pointer)" "$4"
}
retry_after() { tr -d '\r' <"$TMP/hdr" | awk -F': ' 'tolower($1) == "retry-after" { print $2 }'; }

start_fake() {
  "$FAKE" --name A >"$TMP/fake" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 50); do
    FAKE_PORT=$(sed -n 's/^port //p' "$TMP/fake")
    [ -n "$FAKE_PORT" ] && return 0
    sleep 0.1
  done
  echo "fake did not start" >&2; exit 1
}

start_server() { # start_server LOGNAME -> URL
  local log=$TMP/$1.log
  "$BIN" serve --db "$DB" --listen 127.0.0.1:0 --llm-config "$TMP/llm.json" $EXTRA \
    >"$TMP/stdout" 2>>"$log" &
  PIDS+=($!)
  for _ in $(seq 1 100); do
    if grep -q '"awooop serving"' "$log" 2>/dev/null; then
      URL="http://127.0.0.1:$(grep '"awooop serving"' "$log" | tail -1 | jq -r .port)"
      curl -sf "$URL/healthz" >/dev/null && return 0
    fi
    sleep 0.1
  done
  echo "server did not start" >&2; cat "$log" >&2; exit 1
}

start_fake
cat >"$TMP/llm.json" <<JSON
{"providers": {"openai": {"url": "http://127.0.0.1:$FAKE_PORT/v1", "api": "openai"}}}
JSON

aw_db "$BACKEND"

ADMIN=$("$BIN" key generate)
export AWOOOP_BOOTSTRAP_KEY=$ADMIN
start_server s1
URL1=$URL
URL2=$URL
if [ "$BACKEND" = postgres ]; then start_server s2; URL2=$URL; fi
URL=$URL1
unset AWOOOP_BOOTSTRAP_KEY

mkkey() { # mkkey PROJECT NAME SCOPE [LIMITS-MEMBERS] -> $SECRET, $KEY_ID
  req POST "/v1/projects/$1/keys" "$ADMIN" "{\"name\":\"$2\",\"scope\":\"$3\"${4:+,$4}}"
  [ "$STATUS" = 201 ] || bad "mkkey $2: $STATUS $(cat "$TMP/body")"
  KEY_ID=$(jbody .key_id)
  SECRET=$(jbody .key)
}
req POST /v1/projects "$ADMIN" '{"id":"acme"}'; expect "project" 201
req POST /v1/projects "$ADMIN" '{"id":"other"}'; expect "project 2" 201
mkkey acme pa project-admin; PA=$SECRET
mkkey acme op1 operator; OP1=$SECRET
mkkey acme op2 operator; OP2=$SECRET
mkkey other oa project-admin; OTHER=$SECRET

activate() { # activate PROJECT FAMILY CONTRACT BODY
  local base="/v1/projects/$1/contracts/$2/$3/revisions"
  req POST "$base" "$OP1" "{\"body\": $4}"; local rev; rev=$(jbody .revision_id)
  req POST "$base/$rev/publish" "$OP1" ""
  req POST "$base/$rev/approve" "$OP2" ""
  req POST "$base/$rev/activate" "$OP1" ""; expect "activate $2" 200
}
activate acme policy_routing default \
  '{"routes":[{"name":"chat","match":{"task":"chat"},"candidates":[{"provider":"openai","model":"gpt-x"}]},
    {"name":"other","match":{"task":"other"},"candidates":[{"provider":"openai","model":"gpt-y"}]}]}'

CHAT='{"model":"chat","max_tokens":8,"messages":[{"role":"user","content":"hello"}]}'

# --- validation: 422 E-KEY-005 with the member's pointer, nothing created
bad_limits() { # bad_limits DESCRIPTION MEMBERS POINTER
  req POST /v1/projects/acme/keys "$PA" "{\"name\":\"bad$RANDOM\",\"scope\":\"worker\",$2}"
  expect "$1" 422 E-KEY-005 "$3"
}
bad_limits "rpm zero" '"rpm":0' /rpm
bad_limits "rpm string" '"rpm":"10"' /rpm
bad_limits "rpm fraction" '"rpm":1.5' /rpm
bad_limits "tpm huge" '"tpm":1e12' /tpm
bad_limits "models empty" '"models":[]' /models
bad_limits "model name" '"models":["chat","bad model"]' /models/1
bad_limits "model twice" '"models":["chat","chat"]' /models/1
bad_limits "budget period" '"budget":{"tokens":5,"period":"week"}' /budget/period
bad_limits "budget empty" '"budget":{"period":"day"}' /budget
bad_limits "budget member" '"budget":{"tokens":5,"usd":1}' /budget/usd
bad_limits "budget cost" '"budget":{"cost_usd":-1}' /budget/cost_usd
bad_limits "expiry shape" '"expires_at":"tomorrow"' /expires_at
bad_limits "expiry date" '"expires_at":"2030-02-30T00:00:00Z"' /expires_at
bad_limits "expiry past" '"expires_at":"2001-01-01T00:00:00Z"' /expires_at
bad_limits "team" '"metadata":{"team":"a b"}' /metadata/team
bad_limits "metadata member" '"metadata":{"org":"x"}' /metadata/org
req POST /v1/projects/acme/keys "$PA" '{"name":"bad1","scope":"worker","rate":5}'
expect "unknown member" 400 E-REQ-004 /rate
req GET /v1/projects/acme/keys "$PA"
check "no bad key was made" "$(jbody '[.items[] | select(.name | startswith("bad"))] | length')" 0

# --- allowed models
mkkey acme m1 worker '"models":["chat"]'; M=$SECRET; M_ID=$KEY_ID
req POST /v1/chat/completions "$M" "$CHAT"; expect "allowed model" 200
req POST /v1/chat/completions "$M" '{"model":"other","messages":[{"role":"user","content":"hi"}]}'
expect "other model refused" 403 E-KEY-006 /model
check "openai error object" "$(jbody .error.code)" E-KEY-006
req POST /v1/chat/completions "$M" '{"model":"gpt-y","messages":[{"role":"user","content":"hi"}]}'
expect "other route's upstream model refused" 403 E-KEY-006
# changed later through the API: the next call sees it
req PATCH "/v1/projects/acme/keys/$M_ID" "$PA" '{"models":["chat","other"]}'; expect "widen models" 200
check "limits shown" "$(jbody '.limits.models | join(",")')" chat,other
req POST /v1/chat/completions "$M" '{"model":"other","messages":[{"role":"user","content":"hi"}]}'
expect "widened" 200
req PATCH "/v1/projects/acme/keys/$M_ID" "$PA" '{"models":null}'; expect "drop models" 200
check "no models limit" "$(jbody '.limits.models')" null
req PATCH "/v1/projects/acme/keys/$M_ID" "$PA" '{"rpm":-4}'; expect "bad patch" 422 E-KEY-005 /rpm
req PATCH "/v1/projects/acme/keys/$M_ID" "$PA" '{"name":"x"}'; expect "patch names only limits" 400 E-REQ-004 /name
req PATCH "/v1/projects/acme/keys/$M_ID" "$PA" '{"budget":{"period":"day"}}'
expect "a budget's period needs a limit (merged)" 422 E-KEY-005 /budget
req PATCH "/v1/projects/acme/keys/$M_ID" "$PA" '[1]'; expect "patch not an object" 400
req PATCH "/v1/projects/acme/keys/not-a-uuid" "$PA" '{"rpm":4}'; expect "patch bad id" 400 E-REQ-008
req PATCH "/v1/projects/acme/keys/01a226c4-e9a2-74b7-930b-5aecf7f19c7d" "$PA" '{"rpm":4}'
expect "patch unknown key" 404 E-KEY-001
req PATCH "/v1/projects/acme/keys/$M_ID" "$OP1" '{"rpm":4}'; expect "operator may not" 403 E-AUTH-003
req PATCH "/v1/projects/acme/keys/$M_ID" "$OTHER" '{"rpm":4}'; expect "other tenant" 404 E-TENANT-001
req GET "/v1/projects/acme/keys/$M_ID" "$OTHER"; expect "other tenant sees nothing" 404 E-TENANT-001

# the minute windows: start the per-minute checks early in a minute
wait_minute_start() {
  local s; s=$(date -u +%S); s=${s#0}
  if [ "$s" -gt 35 ]; then sleep $((61 - s)); fi
}

# fire N KEY BODY -> statuses and codes in $TMP/fire (one line per call),
# half of them at each server
fire() {
  local n=$1 key=$2 body=$3
  rm -f "$TMP/fire"; mkdir -p "$TMP/f"
  for i in $(seq 1 "$n"); do
    local u=$URL1; [ $((i % 2)) = 0 ] && u=$URL2
    ( curl -s -o "$TMP/f/$i" -w '%{http_code}' -H "Authorization: Bearer $key" \
        -H 'Content-Type: application/json' --data-binary "$body" "$u/v1/chat/completions" \
        >"$TMP/f/$i.st" ) &
  done
  wait_jobs
  for i in $(seq 1 "$n"); do
    echo "$(cat "$TMP/f/$i.st") $(jq -r '.code // .usage.total_tokens' "$TMP/f/$i" 2>/dev/null)"
  done >"$TMP/fire"
}
wait_jobs() { for j in $(jobs -p); do case " ${PIDS[*]} " in *" $j "*) ;; *) wait "$j";; esac; done; }
count() { grep -c "^$1" "$TMP/fire"; }

# --- requests per minute: the boundary, then exact under a crowd
wait_minute_start
mkkey acme r1 worker '"rpm":3'; R=$SECRET
for i in 1 2 3; do req POST /v1/chat/completions "$R" "$CHAT"; expect "rpm call $i" 200; done
req POST /v1/chat/completions "$R" "$CHAT"; expect "rpm 4th" 429 E-KEY-007
RA=$(retry_after)
check "rpm retry-after within the minute" "$([ -n "$RA" ] && [ "$RA" -ge 1 ] && [ "$RA" -le 60 ] && echo yes)" yes
wait_minute_start
mkkey acme r2 worker '"rpm":20'; R2=$SECRET
fire 40 "$R2" "$CHAT"
check "rpm crowd: admitted" "$(count 200)" 20
check "rpm crowd: refused" "$(grep -c '^429 E-KEY-007' "$TMP/fire")" 20

# --- tokens per minute: reserved at admission, settled after; never more
wait_minute_start
mkkey acme t1 worker '"tpm":400'; T=$SECRET; T_ID=$KEY_ID
fire 40 "$T" "$CHAT"
req GET "/v1/projects/acme/keys/$T_ID" "$PA"; expect "key view" 200
SETTLED=$(jbody .usage.tokens_settled)
check "tpm crowd: nothing left reserved" "$(jbody .usage.tokens_reserved)" 0
check "tpm crowd: some admitted" "$([ "$(count 200)" -ge 1 ] && echo yes)" yes
check "tpm crowd: some refused" "$([ "$(grep -c '^429 E-KEY-008' "$TMP/fire")" -ge 1 ] && echo yes)" yes
check "tpm crowd: within the limit" "$([ "$SETTLED" -le 400 ] && echo yes)" yes
USED=$(awk '$1 == 200 { s += $2 } END { print s + 0 }' "$TMP/fire")
check "tpm crowd: settled is what the answers billed" "$SETTLED" "$USED"
check "tpm crowd: only 200 or E-KEY-008" "$(grep -vc '^200 \|^429 E-KEY-008' "$TMP/fire")" 0
# a call that cannot fit even its prompt in what is left is refused with Retry-After
req POST /v1/chat/completions "$T" "$CHAT"
if [ "$STATUS" = 429 ]; then
  expect "tpm spent" 429 E-KEY-008
  check "tpm retry-after" "$([ -n "$(retry_after)" ] && echo yes)" yes
fi

# --- the key's budget: exact like the project's, and the project's still binds
mkkey acme b1 worker '"budget":{"tokens":300,"period":"total"},"metadata":{"team":"search","user":"alice"}'; K=$SECRET
K_ID=$KEY_ID
fire 40 "$K" "$CHAT"
req GET "/v1/projects/acme/keys/$K_ID" "$PA"
KSET=$(jbody .usage.budget.tokens_settled)
check "key budget crowd: nothing left reserved" "$(jbody .usage.budget.tokens_reserved)" 0
check "key budget crowd: within the budget" "$([ "$KSET" -le 300 ] && echo yes)" yes
check "key budget crowd: settled is what the answers billed" "$KSET" \
  "$(awk '$1 == 200 { s += $2 } END { print s + 0 }' "$TMP/fire")"
check "key budget crowd: some refused" "$([ "$(grep -c '^429 E-KEY-009' "$TMP/fire")" -ge 1 ] && echo yes)" yes
check "key budget crowd: only 200 or E-KEY-009" "$(grep -vc '^200 \|^429 E-KEY-009' "$TMP/fire")" 0
# what is left is handed out (answers clamped to it) until not one more fits
for _ in $(seq 1 30); do req POST /v1/chat/completions "$K" "$CHAT"; [ "$STATUS" = 429 ] && break; done
expect "key budget spent" 429 E-KEY-009
req GET "/v1/projects/acme/keys/$K_ID" "$PA"
check "key budget: spent to the token, never past" \
  "$([ "$(jbody .usage.budget.tokens_settled)" -le 300 ] && echo yes)" yes
# raised through the API: the next call passes
req PATCH "/v1/projects/acme/keys/$K_ID" "$PA" '{"budget":{"tokens":100000}}'; expect "raise budget" 200
check "merge keeps the period" "$(jbody .limits.budget.period)" total
req POST /v1/chat/completions "$K" "$CHAT"; expect "after the raise" 200
# the project's budget still applies to a key with room of its own
# (a revision reaches every process within the bounded guard's staleness:
# the call is asked again until it has, at most 5 s)
status_is() { # status_is CODE: asks until the call answers CODE, at most 5 s
  for _ in $(seq 1 50); do
    req POST /v1/chat/completions "$K" "$CHAT"; [ "$STATUS" = "$1" ] && return 0; sleep 0.1
  done
  return 1
}
activate acme budget default '{"period":"day","token_limit":1,"action_on_exceed":"block"}'
status_is 429; expect "project budget binds" 429 E-BUDGET-002
activate acme budget default '{"period":"day","token_limit":100000000,"action_on_exceed":"block"}'
status_is 200; expect "project budget room again" 200

# --- metadata in every call's audit record (refusals too)
req GET "/v1/projects/acme/audit?action=llm.call&limit=500" "$PA"
check "team in the envelope" \
  "$(jbody "[.items[] | select(.payload.key.id == \"$K_ID\") | .payload.key.team] | unique | join(\",\")")" search
check "user in the envelope" \
  "$(jbody "[.items[] | select(.payload.key.id == \"$K_ID\") | .payload.key.user] | unique | join(\",\")")" alice
check "refusals carry it" \
  "$(jbody "[.items[] | select(.payload.key.id == \"$K_ID\" and .payload.code == \"E-KEY-009\")] | length > 0")" true
curl -s -H "Authorization: Bearer $ADMIN" "$URL1/metrics" >"$TMP/metrics"
check "team as a metric label" \
  "$(grep -c '^awooop_llm_team_calls_total{project="acme",team="search"} ' "$TMP/metrics")" 1
check "user never a label" "$(grep -c 'alice' "$TMP/metrics")" 0
req GET "/v1/projects/other/audit?limit=500" "$OTHER"
check "other tenant's audit has no acme key" "$(grep -c "$K_ID" "$TMP/body")" 0

# --- expiry: refused like a revoked key, with its own code
EXP=$(date -u -d '+3 seconds' +%Y-%m-%dT%H:%M:%SZ)
mkkey acme e1 worker "\"expires_at\":\"$EXP\""; E=$SECRET; E_ID=$KEY_ID
req POST /v1/chat/completions "$E" "$CHAT"; expect "before expiry" 200
sleep 4
req POST /v1/chat/completions "$E" "$CHAT"; expect "expired" 401 E-AUTH-004
req GET /v1/whoami "$E"; expect "expired everywhere" 401 E-AUTH-004
req PATCH "/v1/projects/acme/keys/$E_ID" "$PA" '{"expires_at":null}'; expect "unexpire" 200
req POST /v1/chat/completions "$E" "$CHAT"; expect "expiry removed" 200
req PATCH "/v1/projects/acme/keys/$E_ID" "$PA" '{"expires_at":"2001-01-01T00:00:00Z"}'
expect "expire now" 200
U=$URL2 req GET /v1/whoami "$E"; expect "expired at once, in every process" 401 E-AUTH-004
req DELETE "/v1/projects/acme/keys/$E_ID" "$PA"; expect "revoke" 204
req PATCH "/v1/projects/acme/keys/$E_ID" "$PA" '{"rpm":1}'; expect "revoked key's limits are final" 409 E-KEY-004

# --- the CLI
export AWOOOP_URL=$URL1 AWOOOP_KEY=$PA
"$BIN" key create --name c1 --scope worker --models chat,other --rpm 30 --tpm 9000 \
  --budget-tokens 5000 --budget-period day --team ops --user bob --json >"$TMP/c1" 2>"$TMP/c1.err"
check "cli create" $? 0
C1=$(jq -r .key_id "$TMP/c1")
check "cli limits" "$(jq -c '.limits | [.rpm, .tpm, .budget.tokens, .budget.period, .metadata.team]' "$TMP/c1")" \
  '[30,9000,5000,"day","ops"]'
"$BIN" key update "$C1" --rpm none --user none --expires-at 2099-01-01T00:00:00Z --json >"$TMP/c1u"
check "cli update" "$(jq -c '[.limits.rpm, .limits.metadata.user, .limits.metadata.team, .expires_at]' "$TMP/c1u")" \
  '[null,null,"ops","2099-01-01T00:00:00.000Z"]'
"$BIN" key show "$C1" >"$TMP/c1s"; check "cli show" $? 0
check "cli show limits" "$(grep -c 'tpm=9000' "$TMP/c1s")" 1
"$BIN" key list >"$TMP/kl"; check "cli list shows limits" "$(grep c1 "$TMP/kl" | grep -c 'team=ops')" 1
"$BIN" key update "$C1" --rpm 0 2>"$TMP/c1e"; check "cli bad value exit" $? 1
check "cli bad value says why and where" "$(grep -c 'E-KEY-005.* at /rpm' "$TMP/c1e")" 1
"$BIN" key update "$C1" >/dev/null 2>&1; check "cli update without a limit" $? 2

aw_done "vkeys ($BACKEND)"
