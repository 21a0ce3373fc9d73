#!/usr/bin/env bash
# The channel hub's leader drill (PostgreSQL + Redis): 3 `awooop serve
# --role hub` processes share one bot; N inbound updates ("/status x<i>",
# each answered by a reply) arrive in batches while the leader - whoever
# holds platform:telegram:polling:leader - is SIGKILLed every 1.5-2.5 s and
# replaced. Checks: every update mirrored exactly once (conversation_events
# and one channel.inbound audit record each), every update answered, the
# fake confirmed them all, and each takeover came within the lease (+ one
# lease tick). Duplicated replies (a leader killed between a send and its
# mark: delivery is at least once across crashes) are counted and printed.
#   channel_drill.sh AWOOOP_BINARY FAKE_TELEGRAM_BINARY [N] [LEASE_MS]
set -uo pipefail
BIN=$1
FAKE=$2
N=${3:-300}
LEASE=${4:-1500}
. "$(dirname "$0")/lib.sh"

export TG_SECRET="7000002:drill-token-$$"
export AWOOOP_T_DRL__TG_TOKEN=$TG_SECRET
fake_telegram_start "$FAKE" TG_SECRET
stats() { curl -s "$TG/control/stats"; }

aw_db postgres
aw_redis_db 4
aw_serve --channels off
api POST /v1/projects "$ADMIN" '{"id":"drl"}' >/dev/null
K1=$(mkkey drl pub operator); K2=$(mkkey drl appr operator)
CHATS=$(seq 1001 1099 | jq -R '{chat_id: ("-" + .)}' | jq -sc .)
BODY=$(jq -nc --argjson chats "$CHATS" '{channels: [{platform: "telegram",
  bot: {name: "drill", token: "env:TG_TOKEN"}, chats: $chats,
  rules: [{event: "command", command: "/go", run_template: "go"}]}],
  templates: {go: {workflow: [{kind: "noop"}]}}}')
check "activate" "$(aw_activate drl channel_event "$BODY" "$K1" "$K2")" true

HUBS=()
hub() { # starts one hub process; its log in $TMP/hub.<n>.log
  "$BIN" serve --role hub --db "$DB" $EXTRA --telegram-api "$TG" --channel-poll-timeout-s 1 \
    --channel-lease-ms "$LEASE" >/dev/null 2>>"$TMP/hub.$1.log" &
  HUBS+=($!)
  PIDS+=($!)
}
for i in 1 2 3; do hub $i; done
RC="redis-cli -u $REDIS_URL --no-auth-warning"
holder() { # the lease holder's pid, whichever key form the phase uses
  { $RC GET telegram:polling:leader; $RC GET platform:telegram:polling:leader; } 2>/dev/null |
    grep -o -- '-[0-9]*-[0-9a-f]*$' | head -1 | cut -d- -f2
}
for _ in $(seq 1 100); do [ -n "$(holder)" ] && break; sleep 0.1; done
check "a leader" "$([ -n "$(holder)" ] && echo yes)" yes

# inject the updates in batches of 20 while killing leaders
(
  for b in $(seq 0 20 $((N - 1))); do
    jq -nc --argjson b "$b" --argjson n "$N" '{updates: [range($b; [$b + 20, $n] | min) |
      {message: {message_id: 1, chat: {id: (-1000 - (. % 99) - 1)}, from: {id: 7},
                 text: ("/status x" + tostring)}}]}' |
      curl -s -X POST -H 'Content-Type: application/json' --data-binary @- "$TG/control/updates" >/dev/null
    sleep 0.2
  done
) &
INJ=$!
KILLS=0
MAXTAKE=0
n=3
while kill -0 "$INJ" 2>/dev/null || [ "$KILLS" -lt 3 ]; do
  sleep "$(awk -v r=$RANDOM 'BEGIN {printf "%.2f", 1.5 + r / 32767}')"
  L=$(holder)
  [ -n "$L" ] || continue
  kill -9 "$L" 2>/dev/null || continue
  T0=$(date +%s%N)
  KILLS=$((KILLS + 1))
  n=$((n + 1)); hub $n
  while :; do
    NL=$(holder)
    if [ -n "$NL" ] && [ "$NL" != "$L" ]; then break; fi
    [ $(( ($(date +%s%N) - T0) / 1000000 )) -gt 20000 ] && break
    sleep 0.02
  done
  TAKE=$(( ($(date +%s%N) - T0) / 1000000 ))
  [ "$TAKE" -gt "$MAXTAKE" ] && MAXTAKE=$TAKE
  [ "$KILLS" -ge 20 ] && break
done
wait "$INJ"
for _ in $(seq 1 600); do # until every update has its answer (duplicates do not count)
  s=$(stats)
  [ "$(echo "$s" | jq .confirmed)" -gt "$N" ] && \
    [ "$(echo "$s" | jq '[.messages[] | select(.text | startswith("No run x")) | .text] | unique | length')" -ge "$N" ] && break
  sleep 0.2
done
stats >"$TMP/s"
PSQL="psql -qAt -h $AWOOOP_TEST_PG_HOST -p $AWOOOP_TEST_PG_PORT -U postgres -d $PGDB"
MIRRORED=$($PSQL -c "SELECT count(*), count(DISTINCT update_id) FROM awooop.conversation_events")
AUDITED=$($PSQL -c "SELECT count(*), count(DISTINCT target) FROM awooop.audit_events WHERE action = 'channel.inbound'")
check "every update mirrored exactly once" "$MIRRORED" "$N|$N"
check "one inbound audit record each" "$AUDITED" "$N|$N"
check "the fake confirmed every update" "$(jq .confirmed "$TMP/s")" $((N + 1))
ANSWERED=$(jq '[.messages[] | select(.text | startswith("No run x")) | .text] | unique | length' "$TMP/s")
TOTAL=$(jq '[.messages[] | select(.text | startswith("No run x"))] | length' "$TMP/s")
check "every update answered" "$ANSWERED" "$N"
check "killed leaders" "$([ "$KILLS" -ge 3 ] && echo yes)" yes
LIMIT=$((LEASE + LEASE / 3 + 1000))
check "takeover within the lease (+ a tick)" "$([ "$MAXTAKE" -le "$LIMIT" ] && echo yes)" yes
check "no rate violation" "$(jq .rate_violations "$TMP/s")" 0
echo "drill: $N updates, $KILLS leaders killed, slowest takeover ${MAXTAKE} ms (lease ${LEASE} ms), 409 conflicts $(jq .conflicts "$TMP/s"), replies $TOTAL for $ANSWERED updates ($((TOTAL - ANSWERED)) duplicated by kills)" >&2
aw_done channel_drill
