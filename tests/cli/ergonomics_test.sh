#!/usr/bin/env bash
# The CLI as an experienced user drives it, against `awooop serve` on a
# backend:   ergonomics_test.sh AWOOOP_BINARY sqlite|postgres
# - GET /v1/whoami and `awooop whoami`: the key's project, scope, principal;
# - the project comes from the key when not given, AWOOOP_PROJECT is honoured
#   by every client command that takes --project;
# - `contract apply` (draft + publish, then the exact approve and activate
#   commands), an unchanged body applied again makes nothing, the default
#   contract name, `contract list` with a header, --rev latest|active|previous
#   (and a clear error when there is none), `contract rollback`;
# - `audit verify|export` through the API (the same lines as on the store,
#   the same key rules) as well as on the store;
# - `run --help` and E-RUN-003 list the same step kinds (the registry's);
# - every command's --help: what it does, its options, an example;
# - no "(null)" in any output, a problem's title and detail said once.
set -uo pipefail
BIN=$1
BACKEND=${2:-sqlite}
. "$(dirname "$0")/../http/lib.sh"
aw_db "$BACKEND"
aw_serve

OUT=$TMP/all.out # every CLI output of this test, searched for "(null)" at the end
cli() { # cli ARGS...: the CLI's stdout in $TMP/o, stderr in $TMP/e, exit code in $RC
  "$BIN" "$@" >"$TMP/o" 2>"$TMP/e"
  RC=$?
  cat "$TMP/o" "$TMP/e" >>"$OUT"
}
export AWOOOP_URL=$URL
unset AWOOOP_PROJECT AWOOOP_KEY AWOOOP_KEY_FILE AWOOOP_DB

api POST /v1/projects "$ADMIN" '{"id":"alpha"}' >/dev/null
api POST /v1/projects "$ADMIN" '{"id":"beta"}' >/dev/null
OP1=$(mkkey alpha op1 operator)
OP2=$(mkkey alpha op2 operator)
BOSS=$(mkkey alpha boss project-admin)
RD=$(mkkey alpha rd reader)
BOP=$(mkkey beta bop operator)

# --- whoami
req GET /v1/whoami "$OP1" ""; expect "whoami" 200 .project alpha
check "whoami scope" "$(jbody .scope)" operator
check "whoami principal" "$(jbody .principal)" op1
check "whoami key id" "$(jbody '.key_id | test("^[0-9a-f-]{36}$")')" true
check "whoami: no secret" "$(grep -c "$OP1" "$TMP/body")" 0
check "whoami: no prefix" "$(jbody 'has("prefix") or has("key")')" false
req GET /v1/whoami "$ADMIN" ""; expect "whoami platform admin" 200 .project __platform__
req GET /v1/whoami "" ""; expect "whoami without a key" 401
AWOOOP_KEY=$BOP cli whoami; check "cli whoami" "$RC" 0
check "cli whoami project" "$(awk '$1 == "project" {print $2}' "$TMP/o")" beta
check "cli whoami principal" "$(awk '$1 == "principal" {print $2}' "$TMP/o")" bop

# --- contract apply with the project from the key, the default contract name
printf '{"period":"day","token_limit":1000,"action_on_exceed":"alert"}' >"$TMP/b1.json"
printf '{"period":"day","token_limit":2000,"action_on_exceed":"alert"}' >"$TMP/b2.json"
export AWOOOP_KEY=$OP1
cli contract apply --family budget --file "$TMP/b1.json"; check "apply exit" "$RC" 0
REV1=$(awk '/^applied/ {print $(NF-3)}' "$TMP/o")
check "apply: drafted and published" "$(grep -c "^applied budget/default of project alpha: revision $REV1 drafted and published" "$TMP/o")" 1
check "apply: the approve command" \
  "$(grep -cxF "  awooop contract approve --project alpha --family budget --contract default --rev $REV1" "$TMP/o")" 1
check "apply: the activate command" \
  "$(grep -cxF "  awooop contract activate --project alpha --family budget --contract default --rev $REV1" "$TMP/o")" 1
check "apply: who approves" "$(grep -c 'approval(s) by operators of alpha other than op1' "$TMP/o")" 1
req GET /v1/projects/alpha/contracts/budget/default/revisions/"$REV1" "$OP1" ""
expect "applied revision" 200 .state published
# the commands it printed work as printed (with the approver's key)
APPROVE=$(grep -F 'awooop contract approve' "$TMP/o" | sed 's/^ *awooop //')
ACTIVATE=$(grep -F 'awooop contract activate' "$TMP/o" | sed 's/^ *awooop //')
# shellcheck disable=SC2086
AWOOOP_KEY=$OP2 cli $APPROVE; check "printed approve command" "$RC" 0
# shellcheck disable=SC2086
cli $ACTIVATE; check "printed activate command" "$RC" 0
check "activated" "$(grep -c "^$REV1 activated" "$TMP/o")" 1
# the same body again: nothing new
cli contract apply --family budget --file "$TMP/b1.json"; check "apply unchanged exit" "$RC" 0
check "apply unchanged says so" "$(grep -c "^unchanged: revision $REV1 of budget/default has this body and is active" "$TMP/o")" 1
req GET /v1/projects/alpha/contracts/budget/default/revisions "$OP1" ""
check "apply unchanged: no new revision" "$(jbody '.items | length')" 1
# a second body: --rev latest for approve and activate
cli contract apply --family budget --file "$TMP/b2.json"; check "apply 2" "$RC" 0
REV2=$(awk '/^applied/ {print $(NF-3)}' "$TMP/o")
AWOOOP_KEY=$OP2 cli contract approve --family budget --rev latest; check "approve --rev latest" "$RC" 0
check "approve --rev latest: that revision" "$(grep -c "^approved $REV2 until" "$TMP/o")" 1
cli contract activate --family budget --rev latest; check "activate --rev latest" "$(grep -c "^$REV2 activated" "$TMP/o")" 1
# list: a header, then the rows
cli contract list --family budget
check "list header" "$(head -1 "$TMP/o" | awk '{print $1, $2, $3, $4}')" "REVISION STATE UPDATED BY"
check "list rows" "$(tail -n +2 "$TMP/o" | awk '{print $1 ":" $2}' | paste -sd,)" "$REV1:superseded,$REV2:active"
# latest / active / previous
cli contract get --family budget --rev active; check "get --rev active" "$(jq -r .revision_id "$TMP/o")" "$REV2"
cli contract get --family budget --rev previous; check "get --rev previous" "$(jq -r .revision_id "$TMP/o")" "$REV1"
cli contract get --family budget --rev latest; check "get --rev latest" "$(jq -r .revision_id "$TMP/o")" "$REV2"
cli contract diff --family budget --rev previous --to active
check "diff previous active" "$(jq -c '[.[].path]' "$TMP/o")" '["/token_limit"]'
cli contract get --family budget --rev newest; check "--rev newest: exit" "$RC" 2
check "--rev newest: says what is accepted" "$(grep -c 'E-CLI-001: --rev must be a revision id (UUID), latest, active or previous' "$TMP/e")" 1
cli contract get --family budget --contract nothing --rev latest; check "latest of nothing: exit" "$RC" 1
check "latest of nothing: says so" "$(grep -c 'E-CONTRACT-002: --rev latest: budget/nothing of project alpha has no revision yet' "$TMP/e")" 1
cli contract publish --family budget --contract nothing --rev active; check "active of nothing: exit" "$RC" 1
check "active of nothing: says so" "$(grep -c 'E-CONTRACT-002: --rev active: budget/nothing of project alpha has no active revision' "$TMP/e")" 1
cli contract diff --family budget --rev latest --to previous --contract nothing
check "previous of nothing: says so" "$(grep -c 'E-CONTRACT-002: --rev latest: budget/nothing' "$TMP/e")" 1
cli contract apply --family channel_event --contract tg --file /dev/null; check "apply: not JSON exit" "$RC" 2
# rollback: to previous by default, the next step printed, one approval activates
cli contract rollback --family budget; check "rollback exit" "$RC" 0
RB=$(awk '/rolls back/ {print $1}' "$TMP/o")
check "rollback: from and to" "$(grep -c "^$RB rolls back $REV2 to $REV1: published, waiting for 1 approval(s)" "$TMP/o")" 1
check "rollback: the approve command" \
  "$(grep -cxF "  awooop contract approve --project alpha --family budget --contract default --rev $RB" "$TMP/o")" 1
check "rollback: the approval activates" "$(grep -c 'completes the quorum activates it' "$TMP/o")" 1
AWOOOP_KEY=$OP2 cli contract approve --family budget --rev latest
check "rollback approved and activated" "$(grep -c "^rollback $RB activated" "$TMP/o")" 1
cli contract get --family budget --rev active; check "active after rollback" "$(jq -r .revision_id "$TMP/o")" "$RB"
check "previous after rollback" "$("$BIN" contract get --family budget --rev previous | jq -r .revision_id)" "$REV2"
# revoke (a project-admin's) of the latest: said in words (it once printed "(null)")
printf '{"period":"day","token_limit":3000,"action_on_exceed":"alert"}' >"$TMP/b3.json"
cli contract apply --family budget --file "$TMP/b3.json"; REV3=$(awk '/^applied/ {print $(NF-3)}' "$TMP/o")
AWOOOP_KEY=$BOSS cli contract revoke --family budget --rev latest
check "revoke --rev latest" "$(cat "$TMP/o")" "$REV3 revoked"
unset AWOOOP_KEY

# --- the project: the key's own unless given; AWOOOP_PROJECT honoured by every command
cli contract list --family budget; check "no key, no project: exit" "$RC" 2
check "no key, no project: says what to give" "$(grep -c 'give --project (or AWOOOP_PROJECT), or set AWOOOP_KEY' "$TMP/e")" 1
export AWOOOP_KEY=$BOSS
for c in "contract list --family budget" "key list" "budget status" "redaction get" "run queues" "audit verify" "audit export"; do
  # shellcheck disable=SC2086
  cli $c; check "$c: the key's project" "$RC" 0
  # shellcheck disable=SC2086
  AWOOOP_PROJECT=beta cli $c; check "$c: AWOOOP_PROJECT=beta exit" "$RC" 1
  check "$c: AWOOOP_PROJECT=beta is another tenant's" "$(grep -c '^awooop: E-TENANT-001: ' "$TMP/e")" 1
  # a problem whose detail repeats its title is said once
  check "$c: said once" "$(grep -c 'Project not found: project not found' "$TMP/e")" 0
  # shellcheck disable=SC2086
  AWOOOP_PROJECT='../x' cli $c; check "$c: a bad AWOOOP_PROJECT: exit" "$RC" 2
done
cli key list; check "key list: the key's project's keys" "$(grep -c '^[0-9a-f-]\{36\} *boss ' "$TMP/o")" 1
cli budget status; check "budget status: the key's project" "$(grep -c '^project alpha, period' "$TMP/o")" 1
AWOOOP_KEY=$OP1 AWOOOP_PROJECT=alpha cli run queue mail --concurrency 2; check "run queue via AWOOOP_PROJECT" "$RC" 0
cli run queues; check "run queues: the key's project" "$(grep -c '^mail  *2 ' "$TMP/o")" 1
unset AWOOOP_KEY

# --- audit through the API and on the store: the same trail
"$BIN" audit export --db "$DB" --project alpha >"$TMP/audit_store.jsonl"; check "store export" $? 0
AWOOOP_KEY=$OP1 "$BIN" audit export >"$TMP/audit_api.jsonl"; check "api export" $? 0
check "api export lines" "$(wc -l <"$TMP/audit_api.jsonl")" "$(wc -l <"$TMP/audit_store.jsonl")"
check "api export = store export" "$(cmp -s "$TMP/audit_api.jsonl" "$TMP/audit_store.jsonl" && echo same)" same
check "api export has the activations" "$(jq -r .action "$TMP/audit_api.jsonl" | grep -c '^contract.activate$')" 3
AWOOOP_KEY=$OP1 "$BIN" audit export --action contract.activate >"$TMP/api_act.jsonl"
"$BIN" audit export --db "$DB" --project alpha --action contract.activate >"$TMP/store_act.jsonl"
check "api export --action = store" "$(cmp -s "$TMP/api_act.jsonl" "$TMP/store_act.jsonl" && wc -l <"$TMP/api_act.jsonl")" 3
SINCE=$(jq -r .ts "$TMP/api_act.jsonl" | sed -n 2p)
AWOOOP_KEY=$OP1 cli audit export --action contract.activate --since "$SINCE"
check "api export --since" "$(wc -l <"$TMP/o")" 2
AWOOOP_KEY=$OP1 cli audit verify; check "api verify" "$(grep -c '^audit chain of alpha intact: [0-9]* records' "$TMP/o")" 1
AWOOOP_KEY=$OP1 cli audit verify --json; check "api verify --json" "$(jq -r '.project + " " + (.ok|tostring)' "$TMP/o")" "alpha true"
"$BIN" audit verify --db "$DB" --project alpha --json >"$TMP/sv.json"
check "api verify --json = store" "$(jq -c 'del(.records)' "$TMP/o")" "$(jq -c 'del(.records)' "$TMP/sv.json")"
AWOOOP_KEY=$RD cli audit export; check "api export with a reader key: exit" "$RC" 1
check "api export with a reader key: the scope" "$(grep -c '^awooop: E-AUTH-003' "$TMP/e")" 1
AWOOOP_KEY=$BOP cli audit export --project alpha; check "api export of another tenant" "$(grep -c '^awooop: E-TENANT-001' "$TMP/e")" 1
# AWOOOP_DB set: the store, unless --api
AWOOOP_DB=$DB AWOOOP_KEY=$RD cli audit verify --project alpha; check "AWOOOP_DB: the store" "$RC" 0
AWOOOP_DB=$DB AWOOOP_KEY=$RD cli audit verify --api; check "--api beats AWOOOP_DB" "$(grep -c '^awooop: E-AUTH-003' "$TMP/e")" 1
cli audit verify --db "$DB"; check "store without a project: exit" "$RC" 2

# --- step kinds: run --help and E-RUN-003 list the registry's, the same
cli run --help
HELP_KINDS=$(sed -n 's/^Step kinds: //p' "$TMP/o")
check "run --help: step kinds" "$(echo "$HELP_KINDS" | tr -d ' ' | tr , '\n' | sort | paste -sd,)" "agent,approval,fail,http,llm,noop,sleep,tool"
echo '{"workflow":[{"kind":"nope"}]}' >"$TMP/bad_run.json"
AWOOOP_KEY=$OP1 cli run submit --file "$TMP/bad_run.json"; check "unknown kind: exit" "$RC" 1
check "E-RUN-003 lists the kinds of run --help" "$(grep -c "E-RUN-003: .*unknown step kind (known: $HELP_KINDS)" "$TMP/e")" 1
req POST /v1/platform/runs "$OP1" '{"workflow":[{"kind":"nope"}]}'
expect "unknown kind over the API" 422 .pointer /workflow/0/kind

# --- every command's --help: what it does, its options, an example
CMDS=$("$BIN" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}' | grep -v '^version$')
check "commands listed" "$(echo "$CMDS" | wc -l)" 18
for c in $CMDS; do
  cli "$c" --help
  check "$c --help: exit" "$RC" 0
  check "$c --help: usage first" "$(head -1 "$TMP/o" | grep -c '^usage: awooop ')" 1
  check "$c --help: says what it does" "$([ "$(sed '/^Options:/,$d' "$TMP/o" | grep -cv '^ *usage:\|^  \|^$')" -ge 2 ] && echo yes)" yes
  check "$c --help: options" "$(grep -c '^Options:' "$TMP/o")" 1
  check "$c --help: an example" "$(grep -c '^Examples\?:' "$TMP/o")" 1
  check "$c --help: the example runs awooop $c" \
    "$(sed -n '/^Examples\?:/,/^$/p' "$TMP/o" | grep -cE "awooop $c( |$)" | sed 's/^[1-9][0-9]*$/yes/')" yes
done

check "no (null) in any output" "$(grep -c '(null)' "$OUT")" 0
aw_done "cli_ergonomics_$BACKEND"
