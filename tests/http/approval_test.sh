#!/usr/bin/env bash
# Approval tokens over the API and the CLI against a real `awooop serve`: a
# run parks at its approval step, `awooop approval mint` (by the approver's
# own key: a token is its minter's own decision) and `decide` move it (the
# approve route needs no API key: the token is the credential), the
# pitfalls answer their stable codes, another tenant's key, token or run is
# refused, and jose (npm) interoperates both ways.
#   approval_test.sh AWOOOP_BINARY sqlite|postgres
set -uo pipefail
BIN=$1
BACKEND=$2
. "$(dirname "$0")/lib.sh"

NM=${AWOOOP_NPM_CACHE:-$HOME/.cache/awooop-npm}/jose
if [ ! -d "$NM/node_modules/jose" ]; then
  mkdir -p "$NM"
  (cd "$NM" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund jose@5 \
    >/dev/null 2>"$TMP/npm.log") || { cat "$TMP/npm.log" >&2; echo "npm install failed" >&2; exit 1; }
fi
cp "$(dirname "$0")/jose_interop.mjs" "$NM/"
jose() { (cd "$NM" && node jose_interop.mjs "$@"); }

HEX=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export AWOOOP_APPROVAL_KEYS="ka:$HEX"
aw_db "$BACKEND"
aw_serve
export AWOOOP_URL=$URL
api POST /v1/projects "$ADMIN" '{"id":"apv"}' >/dev/null
api POST /v1/projects "$ADMIN" '{"id":"apv2"}' >/dev/null
AD=$(mkkey apv boss project-admin); OP=$(mkkey apv op operator); RD=$(mkkey apv eye reader)
AD2=$(mkkey apv2 boss2 project-admin); OP2=$(mkkey apv2 op2 operator)
ALICE=$(mkkey apv alice operator); BOB=$(mkkey apv bob reader)

PARK='{"workflow":[{"kind":"noop"},{"kind":"approval","args":{"summary":"deploy"}},{"kind":"noop"}]}'
state() { api GET "/v1/platform/runs/$1" "$2" | jq -r .state; }
in_state() { [ "$(state "$1" "$2")" = "$3" ]; }
wait_state() { wait_until 10 in_state "$@"; } # wait_state ID KEY STATE
park() { # park KEY -> run id, once it waits
  local id; id=$(api POST /v1/platform/runs "$1" "$PARK" | jq -r .run_id)
  wait_state "$id" "$1" waiting_approval
  echo "$id"
}

# --- a run parks; the CLI mints; a keyless decide moves it
R1=$(park "$OP")
check "parked" "$(state "$R1" "$OP")" waiting_approval
req GET "/v1/platform/runs/$R1" "$OP"
check "journal says waiting" "$(jbody '.steps[1].state')" waiting
check "transition recorded" "$(jbody '[.transitions[] | select(.to == "waiting_approval")] | length')" 1
T1=$(AWOOOP_KEY=$ALICE "$BIN" approval mint --run "$R1" --ttl 120)
check "cli mint" $? 0
# nobody mints another principal's decision (a project-admin minted two
# approvers' votes and passed a 2-of-3 approval alone)
AWOOOP_KEY=$AD "$BIN" approval mint --run "$R1" --sub alice >/dev/null 2>"$TMP/other.err"
check "minting another's decision refused" $? 1
check "says E-APPROVAL-012" "$(grep -c 'E-APPROVAL-012' "$TMP/other.err")" 1
AWOOOP_KEY=$RD "$BIN" approval verify "$T1" >"$TMP/verify"
check "cli verify" "$(jq -r '.claims.sub + " " + .claims.action + " " + .claims.aud' "$TMP/verify")" "alice approve apv"
req POST "/v1/platform/runs/$R1/approve" "" "{\"token\":\"$T1\"}"
expect "keyless decide" 200 .moved true
wait_state "$R1" "$OP" succeeded
check "resumed and finished" $? 0
req GET "/v1/platform/runs/$R1" "$OP"
check "approval step succeeded" "$(jbody '.steps[1].state')" succeeded
check "three steps" "$(jbody '.steps | length')" 3
check "approver audited" "$(jbody '[.transitions[] | select(.event == "approved" and .approver == "alice")] | length')" 1
req POST "/v1/platform/runs/$R1/approve" "" "{\"token\":\"$T1\"}"
expect "replay" 409 .code E-APPROVAL-007
AWOOOP_KEY=$OP "$BIN" approval decide "$R1" "$T1" >/dev/null 2>&1
check "cli decide replay fails" $? 1

# --- pitfalls over HTTP
R2=$(park "$OP")
b64() { printf '%s' "$1" | base64 -w0 | tr '+/' '-_' | tr -d '='; }
NOW=$(date +%s)
CL="{\"iss\":\"awooop\",\"aud\":\"apv\",\"sub\":\"alice\",\"run_id\":\"$R2\",\"action\":\"approve\",\"iat\":$NOW,\"nbf\":$NOW,\"exp\":$((NOW + 60)),\"jti\":\"abcdefghijklmnopqrst\"}"
NONE="$(b64 '{"alg":"none","typ":"JWT","kid":"ka"}').$(b64 "$CL")."
req POST "/v1/platform/runs/$R2/approve" "" "{\"token\":\"$NONE\"}"
expect "alg none" 401 .code E-APPROVAL-002
T512=$(jose sign "$HEX" ka apv "$R2" alice approve HS512)
req POST "/v1/platform/runs/$R2/approve" "" "{\"token\":\"$T512\"}"
expect "HS512" 401 .code E-APPROVAL-002
TKID=$(jose sign "$HEX" nokey apv "$R2" alice approve)
req POST "/v1/platform/runs/$R2/approve" "" "{\"token\":\"$TKID\"}"
expect "unknown kid" 401 .code E-APPROVAL-003
# another last character (A or Q: both leave the unused trailing bits zero)
LAST=${T1: -1}; SWAP=A; [ "$LAST" = A ] && SWAP=Q
req POST "/v1/platform/runs/$R2/approve" "" "{\"token\":\"${T1%?}$SWAP\"}"
expect "tampered signature" 401 .code E-APPROVAL-004
req POST "/v1/platform/runs/$R2/approve" "" '{"token":"not.a.token"}'
expect "garbage" 401 .code E-APPROVAL-001
req POST "/v1/platform/runs/$R2/approve" "" '{"token":"x","extra":1}'
expect "unknown field" 400 .code E-REQ-004
check "still waiting" "$(state "$R2" "$OP")" waiting_approval

# --- tenants: another project's key, token and run
T2=$(AWOOOP_KEY=$ALICE "$BIN" approval mint --run "$R2" --ttl 60)
req POST "/v1/platform/runs/$R2/approve" "$OP2" "{\"token\":\"$T2\"}"
expect "other tenant's key" 403 .code E-APPROVAL-006
T3=$(AWOOOP_KEY=$AD2 "$BIN" approval mint --run "$R2" --ttl 60)
req POST "/v1/platform/runs/$R2/approve" "" "{\"token\":\"$T3\"}"
expect "own token, other tenant's run" 404 .code E-RUN-001
req POST "/v1/platform/runs/$R2/approve" "$OP" "{\"token\":\"$T3\"}"
expect "other tenant's token" 403 .code E-APPROVAL-006
req POST /v1/platform/approval-tokens:verify "$OP2" "{\"token\":\"$T2\"}"
expect "verify as another tenant" 403 .code E-APPROVAL-006
check "no other tenant's id leaked" "$(grep -c "apv2" "$TMP/responses" | tr -d ' ')" 0

# --- jose both ways
jose verify "$HEX" "$T2" apv >"$TMP/jv"
check "jose verifies awooop's token" "$(jq -r '.ok and .payload.run_id == "'"$R2"'" and .header.kid == "ka"' "$TMP/jv")" true
check "jose checks the audience too" "$(jose verify "$HEX" "$T2" apv2 | jq -r .code)" ERR_JWT_CLAIM_VALIDATION_FAILED
TJ=$(jose sign "$HEX" ka apv "$R2" alice approve)
req POST /v1/platform/approval-tokens:verify "$RD" "{\"token\":\"$TJ\"}"
expect "awooop verifies jose's token" 200 .claims.sub alice
req POST "/v1/platform/runs/$R2/approve" "$OP" "{\"token\":\"$TJ\"}"
expect "alice's token with op's key" 403 .code E-APPROVAL-012
req POST "/v1/platform/runs/$R2/approve" "$ALICE" "{\"token\":\"$TJ\"}"
expect "jose's token decides" 200 .moved true
wait_state "$R2" "$OP" succeeded
check "R2 finished" $? 0

# --- deny
R3=$(park "$OP")
TD=$(AWOOOP_KEY=$BOB "$BIN" approval mint --run "$R3" --action deny --ttl 60)
req POST "/v1/platform/runs/$R3/approve" "" "{\"token\":\"$TD\"}"
expect "deny" 200 .state failed
req GET "/v1/platform/runs/$R3" "$OP"
check "rejected" "$(jbody .error_code)" E-RUN-009

# --- deciding with one's own key
R4=$(park "$OP")
req POST "/v1/platform/runs/$R4/approve" "" '{"decision":"approve"}'
expect "a decision needs a key" 401 .code E-AUTH-001
req POST "/v1/platform/runs/$R4/approve" "$ALICE" '{"decision":"approve","token":"x"}'
expect "token or decision, not both" 400 .code E-REQ-005
AWOOOP_KEY=$BOB "$BIN" approval decide "$R4" --action approve >"$TMP/own"
check "cli decides with its own key" "$(jq -r '.moved and (.decisions[0].principal == "bob")' "$TMP/own")" true
wait_state "$R4" "$OP" succeeded
check "R4 finished" $? 0

# --- a platform admin decides in the project it names (?project=, the
# console's selector): the decision is the admin's own principal's
R5=$(park "$OP")
req POST "/v1/platform/runs/$R5/approve" "$ADMIN" '{"decision":"approve"}'
expect "the platform project has no such run" 404 .code E-RUN-001
req POST "/v1/platform/runs/$R5/approve?project=apv2" "$OP" '{"decision":"approve"}'
expect "a tenant key naming another project" 404 .code E-TENANT-001
req POST "/v1/platform/runs/$R5/approve?project=apv" "$ADMIN" '{"decision":"approve"}'
expect "the platform admin decides in apv" 200 .moved true
check "as its own principal" "$(jbody '.decisions[0].principal')" bootstrap
wait_state "$R5" "$OP" succeeded
check "R5 finished" $? 0

# --- the secret never shows
check "key never answered" "$(grep -c "$HEX" "$TMP/responses" "$TMP/server.log" | awk -F: '{s+=$2} END {print s}')" 0
aw_done "approval_api_$BACKEND"
