#!/usr/bin/env bash
# Contract rollback in one step over the API and the CLI against a real
# `awooop serve`: POST .../rollback publishes a revision restoring the
# previous active body; it waits for the approval policy's rollback quorum
# (never the requester or a key it minted), the approval that completes it
# activates it through the outbox (convergence lists it), and it is audited
# as contract.rollback. Targets that were never active, the active one,
# another contract's or another tenant's are refused.
#   rollback_test.sh AWOOOP_BINARY sqlite|postgres
set -uo pipefail
BIN=$1
BACKEND=$2
. "$(dirname "$0")/lib.sh"

aw_db "$BACKEND"
aw_serve
api POST /v1/projects "$ADMIN" '{"id":"rb"}' >/dev/null
api POST /v1/projects "$ADMIN" '{"id":"rb2"}' >/dev/null
ONCALL=$(mkkey rb oncall project-admin)
ALICE=$(mkkey rb alice operator); BOB=$(mkkey rb bob operator); CAROL=$(mkkey rb carol operator)
EYE=$(mkkey rb eye reader)
# a key the requester minted itself: its sock puppet
PUPPET=$(api POST /v1/projects/rb/keys "$ONCALL" '{"name":"puppet","scope":"operator"}' | jq -r .key)
OTHER=$(mkkey rb2 op2 operator); OTHER2=$(mkkey rb2 op3 operator)

# approval policy: 2 of alice, bob, carol, puppet; a rollback needs 1
check "approval policy active" "$(aw_activate rb approval \
  '{"approvers":["alice","bob","carol","puppet"],"threshold":2,"rollback_threshold":1,"window_s":3600,"mode":"enforce"}' \
  "$ONCALL" "$ALICE")" true

CB=/v1/projects/rb/contracts/budget/daily
# active_budget TOKENS: a revision approved by alice and bob, active; its id
active_budget() {
  local rev
  rev=$(api POST "$CB/revisions" "$ONCALL" "{\"body\":{\"period\":\"day\",\"token_limit\":$1,\"action_on_exceed\":\"kill\"}}" | jq -r .revision_id)
  api POST "$CB/revisions/$rev/publish" "$ONCALL" >/dev/null
  api POST "$CB/revisions/$rev/approve" "$ALICE" >/dev/null
  api POST "$CB/revisions/$rev/approve" "$BOB" >/dev/null
  api POST "$CB/revisions/$rev/activate" "$ONCALL" >/dev/null
  echo "$rev"
}
req POST $CB/rollback "$ONCALL" ""; expect "nothing to roll back" 409 .code E-CONTRACT-012
A=$(active_budget 1000)
req POST $CB/rollback "$ONCALL" ""; expect "nothing earlier" 409 .code E-CONTRACT-012
B=$(active_budget 2000)
req GET $CB/active "$EYE" ""; check "b active" "$(jbody .revision_id)" "$B"

# one call: published, waiting for the rollback quorum
req POST $CB/rollback "$EYE" ""; expect "reader rollback" 403 .code E-AUTH-003
req POST $CB/rollback "$ONCALL" ""; expect "rollback" 201
R1=$(jbody .revision_id)
check "rollback state" "$(jbody .state)" published
check "rollback_of" "$(jbody .rollback_of)" "$A"
check "rollback_from" "$(jbody .rollback_from)" "$B"
check "rollback body" "$(jbody .body.token_limit)" 1000
check "approvals needed" "$(jbody .approvals_needed)" 1
req GET "$CB/revisions/$R1" "$EYE" ""; check "rollback verified" "$(jbody .verified)" true
# the same guarantees as any activation
req POST "$CB/revisions/$R1/activate" "$ONCALL" ""; expect "rollback unapproved" 409 .code E-CONTRACT-005
req POST "$CB/revisions/$R1/approve" "$ONCALL" ""; expect "requester approves" 403 .code E-CONTRACT-006
req POST "$CB/revisions/$R1/approve" "$PUPPET" ""; expect "sock puppet approves" 403 .code E-CONTRACT-006
req POST "$CB/revisions/$R1/approve" "$EYE" ""; expect "reader approves" 403 .code E-AUTH-003
req GET $CB/active "$EYE" ""; check "still b" "$(jbody .revision_id)" "$B"
# the faster quorum: carol's approval activates it
req POST "$CB/revisions/$R1/approve" "$CAROL" ""; expect "approve rollback" 201
check "approve: rollback" "$(jbody .rollback)" true
check "approve: activated" "$(jbody .activated)" true
check "approve: old revision" "$(jbody .old_revision_id)" "$B"
check "approve: event" "$(jbody '.event_id | length')" 36
req GET $CB/active "$EYE" ""
check "rollback active" "$(jbody .revision_id)" "$R1"
check "restored body" "$(jbody .body.token_limit)" 1000
req GET "$CB/revisions/$B" "$EYE" ""; check "b superseded" "$(jbody .state)" superseded
# through the outbox like any activation: convergence lists it
req GET "$CB/convergence?limit=1" "$EYE" ""; expect "convergence" 200
check "convergence: newest activation" "$(jbody '.activations[0].revision_id')" "$R1"
# audited as a rollback, besides the usual records
req GET "/v1/projects/rb/audit?action=contract.rollback&limit=100" "$ONCALL" ""
check "audit rollback to" "$(jbody "[.items[] | select(.target == \"$R1\")][0].payload.to_revision_id")" "$A"
check "audit rollback from" "$(jbody "[.items[] | select(.target == \"$R1\")][0].payload.from_revision_id")" "$B"
for act in contract.draft contract.publish contract.approve contract.activate; do
  req GET "/v1/projects/rb/audit?action=$act&limit=100" "$ONCALL" ""
  check "audit $act" "$(jbody "[.items[] | select(.target == \"$R1\")] | length")" 1
done

# targets: never one that was not active, the active one, another
# contract's or another tenant's
PUB=$(api POST "$CB/revisions" "$ONCALL" '{"body":{"period":"day","token_limit":3,"action_on_exceed":"kill"}}' | jq -r .revision_id)
api POST "$CB/revisions/$PUB/publish" "$ONCALL" >/dev/null
req POST $CB/rollback "$ONCALL" "{\"to\":\"$PUB\"}"; expect "never active" 409 .code E-CONTRACT-012
req POST $CB/rollback "$ONCALL" "{\"to\":\"$R1\"}"; expect "the active one" 409 .code E-CONTRACT-012
OC=$(api POST /v1/projects/rb/contracts/budget/other/revisions "$ONCALL" '{"body":{"period":"day","token_limit":3,"action_on_exceed":"kill"}}' | jq -r .revision_id)
req POST $CB/rollback "$ONCALL" "{\"to\":\"$OC\"}"; expect "another contract's" 404 .code E-CONTRACT-002
F1=$(api POST /v1/projects/rb2/contracts/budget/daily/revisions "$OTHER" '{"body":{"period":"day","token_limit":1,"action_on_exceed":"kill"}}' | jq -r .revision_id)
api POST "/v1/projects/rb2/contracts/budget/daily/revisions/$F1/publish" "$OTHER" >/dev/null
api POST "/v1/projects/rb2/contracts/budget/daily/revisions/$F1/approve" "$OTHER2" >/dev/null
api POST "/v1/projects/rb2/contracts/budget/daily/revisions/$F1/activate" "$OTHER" >/dev/null
req POST $CB/rollback "$ONCALL" "{\"to\":\"$F1\"}"; expect "another tenant's" 404 .code E-CONTRACT-002
req POST /v1/projects/rb2/contracts/budget/daily/rollback "$ONCALL" ""; expect "another tenant's contract" 404 .code E-TENANT-001
req POST $CB/rollback "$ONCALL" '{"to":"nope"}'; expect "bad to" 400
req POST $CB/rollback "$ONCALL" '{"too":1}'; expect "unknown member" 400 .code E-REQ-004

# the CLI: one command back to b; a stale rollback does not activate
export AWOOOP_URL=$URL
"$BIN" contract rollback --help >"$TMP/help" 2>&1
check "cli rollback --help" "$(grep -c 'rollback \[--to R\]' "$TMP/help")" 1
AWOOOP_KEY=$ONCALL "$BIN" contract rollback --project rb --family budget --contract daily --json >"$TMP/rb.json"
check "cli rollback" $? 0
R2=$(jq -r .revision_id "$TMP/rb.json")
check "cli rollback_of" "$(jq -r .rollback_of "$TMP/rb.json")" "$B"
AWOOOP_KEY=$ONCALL "$BIN" contract rollback --project rb --family budget --contract daily --to "$A" >"$TMP/rb.txt"
check "cli rollback --to" "$(grep -c "to $A: published, waiting for 1 approval" "$TMP/rb.txt")" 1
R3=$(awk '/rolls back/ {print $1}' "$TMP/rb.txt")
AWOOOP_KEY=$CAROL "$BIN" contract approve --project rb --family budget --contract daily --rev "$R2" >"$TMP/ap.txt"
check "cli approve activates" "$(grep -c "rollback $R2 activated" "$TMP/ap.txt")" 1
req GET $CB/active "$EYE" ""; check "cli rollback active" "$(jbody .body.token_limit)" 2000
# R3 was requested from R1, which is no longer active
req POST "$CB/revisions/$R3/approve" "$CAROL" ""; expect "stale approve" 201
check "stale: not activated" "$(jbody .activated)" false
check "stale: why" "$(jbody .activation_error.code)" E-CONTRACT-014
req POST "$CB/revisions/$R3/activate" "$ONCALL" ""; expect "stale activate" 409 .code E-CONTRACT-014

aw_done rollback_test
