#!/usr/bin/env bash
# The channel hub's delivery across a leader crash: a message whose
# sendMessage is in flight when the leader is SIGKILLed is delivered by the
# successor. Embedded shape (sqlite): one process, its successor is a restart
# on the same SQLite file. Cluster shape (postgres): two `awooop serve --role
# hub` processes on PostgreSQL + Redis, the standby takes over.
#   before: the Telegram double holds the send before recording it (it never
#           reached Telegram) - delivered exactly once, by the successor
#   after:  the double records the message and holds the answer (Telegram
#           delivered it, the leader could not know) - delivered at least
#           once (the Bot API has no idempotency key: twice here)
# The same text queued while the send hangs is deduplicated against it (the
# dead leader's claim on the fingerprint names a message the successor sends
# first), as is the same text queued after; nothing else is lost.
#   channel_crash.sh AWOOOP_BINARY FAKE_TELEGRAM_BINARY sqlite|postgres
set -uo pipefail
BIN=$1
FAKE=$2
BACKEND=$3
. "$(dirname "$0")/lib.sh"

export TG_SECRET="7000003:crash-token-$$"
export AWOOOP_T_CRS__TG_TOKEN=$TG_SECRET
fake_telegram_start "$FAKE" TG_SECRET
stats() { curl -s "$TG/control/stats"; }
faults() { curl -s -X POST --data-binary "$1" "$TG/control/faults" >/dev/null; }
sql() {
  if [ "$BACKEND" = postgres ]; then
    psql -qAt -h "$AWOOOP_TEST_PG_HOST" -p "$AWOOOP_TEST_PG_PORT" -U postgres -d "$PGDB" -c "SET search_path = awooop; $1"
  else
    sqlite3 "$TMP/awooop.db" "$1"
  fi
}
delivered() { stats | jq --arg t "$1" '[.messages[] | select(.text == $t)] | length'; }
once() { [ "$(delivered "$1")" = 1 ]; }
row_state() { sql "SELECT state FROM outbound_messages WHERE msg_id = '$1'"; }
settled() { [ "$(row_state "$1")" != pending ]; }

aw_db "$BACKEND"
LEASE=1500
HUBS=()
if [ "$BACKEND" = postgres ]; then
  aw_redis_db 7
  aw_serve --channels off # the API; the hubs are processes of their own
  RC="redis-cli -u $REDIS_URL --no-auth-warning"
  hub() {
    "$BIN" serve --role hub --db "$DB" $EXTRA --telegram-api "$TG" --channel-poll-timeout-s 1 \
      --channel-lease-ms "$LEASE" >/dev/null 2>>"$TMP/hub.log" &
    HUBS+=($!)
    PIDS+=($!)
  }
  leader() { # the lease holder's pid, whichever key form the INV-1 phase uses
    { $RC GET telegram:polling:leader; $RC GET platform:telegram:polling:leader; } 2>/dev/null |
      grep -o -- '-[0-9]*-[0-9a-f]*$' | head -1 | cut -d- -f2
  }
  successor() { hub; } # the standby takes over; a new standby beside it
  hub
  hub
else
  serve() { aw_serve --telegram-api "$TG" --channel-poll-timeout-s 1 --channel-lease-ms "$LEASE"; }
  serve
  leader() { echo "${PIDS[-1]}"; }
  successor() { serve; } # a restart on the same SQLite file
fi
api POST /v1/projects "$ADMIN" '{"id":"crs"}' >/dev/null
K1=$(mkkey crs pub operator)
K2=$(mkkey crs appr operator)
BODY='{"channels":[{"platform":"telegram","bot":{"name":"ops","token":"env:TG_TOKEN"},
  "chats":[{"chat_id":"-100"},{"chat_id":"-101"}],
  "rules":[{"event":"command","command":"/go","run_template":"go"}]}],
  "templates":{"go":{"workflow":[{"kind":"noop"}]}}}'
check "activate" "$(aw_activate crs channel_event "$BODY" "$K1" "$K2")" true

# a message that goes through: the hub leads and sends
send() { api POST /v1/projects/crs/channels/ops/messages "$K1" "{\"chat_id\":\"$1\",\"text\":\"$2\"}" | jq -r .msg_id; }
send -101 "warm-$$" >/dev/null
wait_until 10 once "warm-$$"
check "a message before the crash" "$(delivered "warm-$$")" 1

crash() { # crash MODE: a send in flight (held by the double) when the leader dies
  local mode=$1 text="crash-$1-$$" id twin L
  faults "{\"stall_send\":\"$mode\"}"
  id=$(send -100 "$text")
  wait_until 10 '[ "$(stats | jq .stalled_sends)" = 1 ]'
  check "$mode: the send is in flight" "$(stats | jq .stalled_sends)" 1
  # the same text queued meanwhile: the dead leader's claim on the text is
  # a claim, not a send - it goes after that message and is deduplicated
  # against it once that one is sent
  twin=$(send -100 "$text")
  L=$(leader)
  [ -n "$L" ] || { bad "$mode: no leader to kill"; return; }
  kill -9 "$L"
  while kill -0 "$L" 2>/dev/null; do sleep 0.05; done
  faults '{"stall_send":false}' # the dead leader's connection goes; the double answers again
  successor
  wait_until 20 settled "$id" && wait_until 20 settled "$twin"
  # one of the two is sent, the other deduplicated against it (the first
  # goes first unless the double's per-chat limit sends it back: in "after"
  # the held send counts, and a restart comes within its second)
  check "$mode: one row sent, its twin deduplicated" \
    "$(sql "SELECT state FROM outbound_messages WHERE msg_id IN ('$id', '$twin') ORDER BY state" | paste -sd,)" \
    deduplicated,sent
  N=$(delivered "$text")
  echo "$mode: delivered $N time(s)" >&2
  if [ "$mode" = before ]; then
    check "$mode: delivered exactly once" "$N" 1
  else
    check "$mode: delivered at least once" "$([ "$N" -ge 1 ] && echo yes)" yes
  fi
  # the same text again: deduplicated against the sent row, not sent again
  local again
  again=$(send -100 "$text")
  wait_until 10 settled "$again"
  check "$mode: the same text again is deduplicated" \
    "$(sql "SELECT state FROM outbound_messages WHERE msg_id = '$again'")" deduplicated
  check "$mode: and not sent again" "$(delivered "$text")" "$N"
}
crash before
crash after

# a send that did not happen leaves no claim: a message Telegram refused
# (400) does not make the same text within 10 minutes a duplicate of it
faults '{"fail_chat":"-101"}'
id=$(send -101 "refused-$$")
wait_until 10 settled "$id"
check "refused by Telegram: failed" "$(sql "SELECT state FROM outbound_messages WHERE msg_id = '$id'")" failed
faults '{"fail_chat":false}'
id=$(send -101 "refused-$$")
wait_until 10 once "refused-$$"
check "the same text later: delivered" "$(delivered "refused-$$")" 1
check "its row" "$(sql "SELECT state FROM outbound_messages WHERE msg_id = '$id'")" sent

# after the crashes a new message still goes through, once
send -101 "late-$$" >/dev/null
wait_until 10 once "late-$$"
sleep 1 # on purpose: time for a second delivery, which must not come
check "a message after the crashes" "$(delivered "late-$$")" 1
check "nothing left pending" "$(sql "SELECT count(*) FROM outbound_messages WHERE state = 'pending'")" 0
aw_done "channel_crash_$BACKEND"
