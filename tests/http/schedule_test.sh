#!/usr/bin/env bash
# Schedules against a real `awooop serve`: create (operator; a reader is
# 403, another project's key 404), the refusals with their codes and
# pointers (E-CRON-001 /cron, E-CRON-002 /timezone, E-SCHEDULE-002, a run
# template's own under /run), list and get (reader), delete (operator),
# each audited; the CLI (create from a file, list, get, delete, preview,
# --help, a bad expression); and the server's own scheduler firing an
# every-minute schedule at the next minute: one run, in the project, its
# fire and its audit record.
#   schedule_test.sh AWOOOP_BINARY sqlite|postgres
set -uo pipefail
BIN=$1
BACKEND=$2
. "$(dirname "$0")/lib.sh"

aw_db "$BACKEND"
aw_serve --schedule-ms 200
export AWOOOP_URL=$URL
api POST /v1/projects "$ADMIN" '{"id":"sa"}' >/dev/null
api POST /v1/projects "$ADMIN" '{"id":"sb"}' >/dev/null
SA_OP=$(mkkey sa op operator); SA_EYE=$(mkkey sa eye reader); SB_OP=$(mkkey sb op operator)
P=/v1/projects/sa/schedules
RUN='{"workflow":[{"kind":"noop"}],"input":{"report":"daily"}}'

# 1. the every-minute schedule first: the rest runs while its minute comes
req POST "$P" "$SA_OP" "{\"name\":\"tick\",\"cron\":\"* * * * *\",\"run\":$RUN}"
expect "create every minute" 201 .name tick
check "create: zone" "$(jbody .timezone)" UTC
check "create: policy" "$(jbody .catch_up)" skip
check "create: by" "$(jbody .created_by)" op
check "create: the run" "$(jbody .run.input.report)" daily
NEXT=$(jbody .next_fire_at)
check "create: next tick on a minute" "$(echo "$NEXT" | cut -c18-)" "00.000Z"
req POST "$P" "$SA_OP" "{\"name\":\"nightly\",\"cron\":\"30 2 * * MON-FRI\",\"timezone\":\"Europe/Berlin\",\"catch_up\":\"once\",\"run\":$RUN}"
expect "create Berlin" 201 .catch_up once

# 2. who may: a reader may not create, another project's key sees nothing
req POST "$P" "$SA_EYE" "{\"name\":\"x\",\"cron\":\"* * * * *\",\"run\":$RUN}"
expect "reader create" 403 .code E-AUTH-003
req POST "$P" "$SB_OP" "{\"name\":\"x\",\"cron\":\"* * * * *\",\"run\":$RUN}"
expect "other project create" 404 .code E-TENANT-001
req GET "$P/tick" "$SB_OP"; expect "other project get" 404 .code E-TENANT-001
req GET /v1/projects/sb/schedules "$SB_OP"; expect "sb list" 200 '.items | length' 0

# 3. refusals: stable codes, the field's pointer, nothing created
req POST "$P" "$SA_OP" "{\"name\":\"x\",\"cron\":\"0 24 * * *\",\"run\":$RUN}"
expect "bad hour" 422 .code E-CRON-001
check "bad hour: pointer" "$(jbody .pointer)" /cron
check "bad hour: detail" "$(jbody .detail)" "hour field: 24 is out of 0-23"
req POST "$P" "$SA_OP" "{\"name\":\"x\",\"cron\":\"0 0 31 2 *\",\"run\":$RUN}"
expect "never fires" 422 .code E-CRON-001
req POST "$P" "$SA_OP" "{\"name\":\"x\",\"cron\":\"* * * * *\",\"timezone\":\"Europe/Atlantis\",\"run\":$RUN}"
expect "bad zone" 422 .code E-CRON-002
check "bad zone: pointer" "$(jbody .pointer)" /timezone
req POST "$P" "$SA_OP" "{\"name\":\"x\",\"cron\":\"* * * * *\",\"timezone\":\"../../../etc/passwd\",\"run\":$RUN}"
expect "path as zone" 422 .code E-CRON-002
req POST "$P" "$SA_OP" "{\"name\":\"tick\",\"cron\":\"* * * * *\",\"run\":$RUN}"
expect "name taken" 409 .code E-SCHEDULE-002
req POST "$P" "$SA_OP" '{"name":"x","cron":"* * * * *","run":{"workflow":[{"kind":"sleep","args":{"ms":-1}}]}}'
expect "bad template" 422 .code E-RUN-003
check "bad template: pointer" "$(jbody .pointer)" /run/workflow/0/args/ms
req POST "$P" "$SA_OP" '{"name":"x","cron":"* * * * *","catch_up":"sometimes","run":{"workflow":[{"kind":"noop"}]}}'
expect "bad policy" 400 .code E-REQ-005
req POST "$P" "$SA_OP" '{"name":"x","cron":"* * * * *"}'
expect "no run" 400 .code E-REQ-005
req GET "$P" "$SA_EYE"; expect "list" 200 '.items | length' 2
check "list: by name" "$(jbody '[.items[].name] | join(",")')" "nightly,tick"

# 4. get, delete (operator), audited
req GET "$P/nightly" "$SA_EYE"; expect "get" 200 .timezone Europe/Berlin
check "get: no fires yet" "$(jbody '.fires | length')" 0
req GET "$P/nope" "$SA_EYE"; expect "get missing" 404 .code E-SCHEDULE-001
req DELETE "$P/nightly" "$SA_EYE"; expect "reader delete" 403 .code E-AUTH-003
req DELETE "$P/nightly" "$SA_OP"; expect "delete" 204
req DELETE "$P/nightly" "$SA_OP"; expect "delete again" 404 .code E-SCHEDULE-001
req GET "/v1/projects/sa/audit?action=schedule.created" "$SA_OP"
expect "audit created" 200 '.items | length' 2
req GET "/v1/projects/sa/audit?action=schedule.deleted" "$SA_OP"
expect "audit deleted" 200 '.items[0].payload.name' nightly

# 5. the CLI
echo '{"workflow":[{"kind":"noop"}]}' >"$TMP/run.json"
AWOOOP_KEY=$SA_OP "$BIN" schedule create weekly --cron '0 9 * * MON' --timezone America/New_York \
  --file "$TMP/run.json" >"$TMP/cli.out" 2>"$TMP/cli.err"
check "cli create exit" $? 0
check "cli create row" "$(grep -c '^weekly .*0 9 \* \* MON .*America/New_York' "$TMP/cli.out")" 1
AWOOOP_KEY=$SA_EYE "$BIN" schedule list >"$TMP/cli.out"
check "cli list exit" $? 0
check "cli list rows" "$(grep -cE '^(tick|weekly) ' "$TMP/cli.out")" 2
check "cli get" "$(AWOOOP_KEY=$SA_EYE "$BIN" schedule get weekly | jq -r .cron)" "0 9 * * MON"
AWOOOP_KEY=$SA_OP "$BIN" schedule create bad --cron '0 9 * * XYZ' --file "$TMP/run.json" \
  >/dev/null 2>"$TMP/cli.err"
check "cli bad cron exit" $? 1
check "cli bad cron says" "$(grep -c 'E-CRON-001.*day-of-week field' "$TMP/cli.err")" 1
AWOOOP_KEY=$SA_OP "$BIN" schedule delete weekly >/dev/null
check "cli delete exit" $? 0
check "cli preview" "$("$BIN" schedule preview '30 2 * * *' --timezone Europe/Berlin \
  --after 2026-03-28T12:00:00.000Z --count 2 | head -1)" "2026-03-29T01:00:00.000Z  2026-03-29 03:00 +02:00"
"$BIN" schedule preview '61 * * * *' >/dev/null 2>&1
check "cli preview bad exit" $? 2
"$BIN" schedule --help >"$TMP/help"
check "cli help exit" $? 0
check "cli help example" "$(grep -c 'awooop schedule create nightly' "$TMP/help")" 1

# 6. the server's scheduler fires "tick" at its minute: one run
fired=
for _ in $(seq 1 750); do
  req GET "$P/tick" "$SA_EYE"
  [ "$(jbody '.fires | length')" -ge 1 ] 2>/dev/null && { fired=1; break; }
  sleep 0.1
done
check "fired within its minute" "$fired" 1
check "fired: the tick" "$(jbody '.fires[-1].tick')" "$NEXT"
RUN_ID=$(jbody '.fires[-1].run_id')
check "fired: last_run_id" "$(jbody .last_run_id)" "$RUN_ID"
req GET "/v1/platform/runs/$RUN_ID" "$SA_EYE"; expect "the run" 200 .input.report daily
req GET "/v1/platform/runs/$RUN_ID" "$SB_OP"; expect "the run from sb" 404 .code E-RUN-001
req GET "/v1/projects/sa/audit?action=schedule.fired" "$SA_OP"
check "fired: audited" "$(jbody '[.items[] | select(.payload.tick == "'"$NEXT"'")] | length')" 1
check "scheduler loop metric" "$(api GET /metrics "$ADMIN" | grep -c '^awooop_loop_last_tick_seconds{loop="scheduler"}')" 1
aw_done schedule_test
