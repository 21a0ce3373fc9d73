#!/usr/bin/env bash
# A project's custom redaction patterns against real `awooop serve`
# processes: the platform sets a list (audited), a tenant's key of any scope
# is refused (403) and sees only its own project's list, a bad list is 400
# E-REDACT-001 with the entry's pointer and changes nothing, the list
# redacts what the project is answered (a problem's detail) and nothing of
# another project's, the CLI does the same, and a second process on the same
# store follows a change within its poll interval.
#   redaction_test.sh AWOOOP_BINARY sqlite|postgres
set -uo pipefail
BIN=$1
BACKEND=$2
. "$(dirname "$0")/lib.sh"

aw_db "$BACKEND"
aw_serve --redaction-poll-ms 200
export AWOOOP_URL=$URL
api POST /v1/projects "$ADMIN" '{"id":"ra"}' >/dev/null
api POST /v1/projects "$ADMIN" '{"id":"rb"}' >/dev/null
RA_BOSS=$(mkkey ra boss project-admin); RA_OP=$(mkkey ra op operator); RA_EYE=$(mkkey ra eye reader)
RB_BOSS=$(mkkey rb boss project-admin)
P=/v1/projects/ra/redaction-patterns
LIST='{"patterns":[{"name":"employee_id","pattern":"EMP-[0-9]{6}"}]}'

# 1. nothing set yet; the platform sets a list
req GET "$P" "$RA_OP"; expect "get before" 200 .version 0
check "get before: no list" "$(jbody '.patterns | length')" 0
check "get before: updated_at" "$(jbody .updated_at)" null
req PUT "$P" "$ADMIN" "$LIST"; expect "platform put" 200 .version 1
check "platform put: by" "$(jbody .updated_by)" bootstrap
check "platform put: pattern" "$(jbody '.patterns[0].pattern')" 'EMP-[0-9]{6}'

# 2. tenants: their own key of any scope is 403, another project's 404;
#    a reader may not read it, an operator may
req PUT "$P" "$RA_BOSS" '{"patterns":[]}'; expect "tenant put" 403 .code E-AUTH-003
req PUT "$P" "$RB_BOSS" '{"patterns":[]}'; expect "other tenant put" 404 .code E-TENANT-001
req GET "$P" "$RB_BOSS"; expect "other tenant get" 404 .code E-TENANT-001
req GET "$P" "$RA_EYE"; expect "reader get" 403 .code E-AUTH-003
req GET "$P" "$RA_OP"; expect "operator get" 200 .version 1

# 3. bad lists: E-REDACT-001 with the entry, nothing changed
req PUT "$P" "$ADMIN" '{"patterns":[{"name":"ok","pattern":"OK"},{"name":"e","pattern":"a*"}]}'
expect "empty-matching pattern" 400 .code E-REDACT-001
check "empty-matching pattern: pointer" "$(jbody .pointer)" /patterns/1
req PUT "$P" "$ADMIN" '{"patterns":[{"name":"e","pattern":"(EMP"}]}'
expect "pattern that does not compile" 400 .code E-REDACT-001
check "does not compile: pointer" "$(jbody .pointer)" /patterns/0
req PUT "$P" "$ADMIN" '{"patterns":{"name":"e"}}'; expect "not a list" 400 .code E-REDACT-001
req PUT "$P" "$ADMIN" '{"patterns":[],"flags":"i"}'; expect "unknown member" 400 .code E-REQ-004
req PUT "$P" "$ADMIN" "$(jq -nc '{patterns:[range(17)|{name:"p\(.)",pattern:"X"}]}')"
expect "17 patterns" 400 .code E-REDACT-001
req GET "$P" "$RA_OP"; expect "after refusals" 200 .version 1

# 4. what the project is answered is redacted with its list; rb's is not
req PUT /v1/projects/ra/queues/q1 "$RA_OP" '{"EMP-123456":1}'
expect "ra detail" 400 .code E-REQ-004
check "ra detail redacted" "$(jbody .detail)" "unknown field /[REDACTED:custom:employee_id]"
RB_OP=$(mkkey rb op operator)
req PUT /v1/projects/rb/queues/q1 "$RB_OP" '{"EMP-123456":1}'
check "rb detail untouched" "$(jbody .detail)" "unknown field /EMP-123456"

# 5. the change is in ra's audit trail, not rb's
req GET "/v1/projects/ra/audit?action=redaction.patterns.set" "$RA_OP"
check "audited once" "$(jbody '.items | length')" 1
check "audit actor" "$(jbody '.items[0].actor')" bootstrap
req GET "/v1/projects/rb/audit?action=redaction.patterns.set" "$RB_OP"
check "not in rb's trail" "$(jbody '.items | length')" 0

# 6. the CLI
"$BIN" redaction --help >/dev/null; check "cli help exit" $? 0
AWOOOP_KEY=$ADMIN "$BIN" redaction set --project ra 'employee_id=EMP-[0-9]{6}' 'ticket=TCK-\d{4}' \
  --json >"$TMP/cli.out" 2>&1
check "cli set exit" $? 0
check "cli set version" "$(jq -r .version "$TMP/cli.out")" 2
AWOOOP_KEY=$RA_OP "$BIN" redaction get --project ra >"$TMP/cli.out" 2>&1
check "cli get exit" $? 0
check "cli get table" "$(grep -c '^ticket  *TCK-\\d{4}$' "$TMP/cli.out")" 1
AWOOOP_KEY=$RA_BOSS "$BIN" redaction clear --project ra >/dev/null 2>"$TMP/cli.err"
check "cli tenant clear exit" $? 1
check "cli tenant clear code" "$(grep -c 'E-AUTH-003' "$TMP/cli.err")" 1
AWOOOP_KEY=$ADMIN "$BIN" redaction set --project ra 'bad=(x' >/dev/null 2>"$TMP/cli.err"
check "cli bad pattern exit" $? 1
check "cli bad pattern code" "$(grep -c 'E-REDACT-001' "$TMP/cli.err")" 1
printf '[{"name":"ticket","pattern":"TCK-\\\\d{4}"}]' >"$TMP/list.json"
check "redact --custom" "$(echo 'see TCK-1234 and EMP-123456' | "$BIN" redact --custom "$TMP/list.json")" \
  "see [REDACTED:custom:ticket] and EMP-123456"

# 7. a second process on the same store follows a change it did not make
if [ "$BACKEND" = postgres ]; then
  URL1=$URL
  "$BIN" serve --db "$DB" --listen 127.0.0.1:0 --role api --redaction-poll-ms 200 $EXTRA \
    >"$TMP/stdout2" 2>"$TMP/server2.log" &
  PIDS+=($!)
  for _ in $(seq 1 100); do grep -q '"awooop serving"' "$TMP/server2.log" 2>/dev/null && break; sleep 0.1; done
  URL2="http://127.0.0.1:$(grep '"awooop serving"' "$TMP/server2.log" | jq -r .port)"
  URL=$URL2
  req PUT /v1/projects/ra/queues/q1 "$RA_OP" '{"TCK-9999":1}'
  check "process 2 knows version 2" "$(jbody .detail)" "unknown field /[REDACTED:custom:ticket]"
  URL=$URL1
  req PUT "$P" "$ADMIN" '{"patterns":[{"name":"order","pattern":"ORD-\\d{3}"}]}'
  expect "process 1 put" 200 .version 3
  URL=$URL2
  seen=
  for _ in $(seq 1 50); do
    req PUT /v1/projects/ra/queues/q1 "$RA_OP" '{"ORD-123":1}'
    [ "$(jbody .detail)" = "unknown field /[REDACTED:custom:order]" ] && { seen=1; break; }
    sleep 0.1
  done
  check "process 2 follows within its poll interval" "$seen" 1
  req PUT /v1/projects/ra/queues/q1 "$RA_OP" '{"TCK-9999":1}'
  check "process 2 dropped the old list" "$(jbody .detail)" "unknown field /TCK-9999"
  URL=$URL1
fi

# 8. the poller ticks
check "poller tick metric" "$(api GET /metrics "$ADMIN" | grep -c '^awooop_loop_last_tick_seconds{loop="redaction_sync"}')" 1
aw_done redaction_test
