#!/usr/bin/env bash
# --listen takes IPv6 and host names, and the client reaches a server by
# either (issue 45): serve on [::1] (not on IPv4), on localhost (its IPv4
# address), on [::] (IPv4 too), each answering /healthz and a client command
# (AWOOOP_URL with a bracketed address or a host name); malformed or
# unresolvable addresses refused at start with what a good one looks like
# (exit 2).
#   listen_test.sh AWOOOP_BINARY
set -uo pipefail
BIN=$1
BACKEND=sqlite
. "$(dirname "$0")/lib.sh"
[ -e /proc/net/if_inet6 ] || aw_skip "no IPv6 on this machine (no /proc/net/if_inet6)"

aw_db sqlite
ADMIN=$("$BIN" key generate)
# listen_on ADDR -> P (pid) and PORT (from the serving line)
listen_on() {
  local log=$TMP/serve.$RANDOM.log
  AWOOOP_BOOTSTRAP_KEY=$ADMIN "$BIN" serve --db "$DB" --listen "$1" --channels off \
    >/dev/null 2>"$log" &
  P=$!
  PIDS+=($P)
  wait_until 10 grep -q '"awooop serving"' "$log"
  PORT=$(grep '"awooop serving"' "$log" | tail -1 | jq -r .port)
}
stop() { kill -TERM "$P"; wait "$P" 2>/dev/null; }
healthz() { curl -sg -o /dev/null -w '%{http_code}' --max-time 5 "$1/healthz"; }
# client URL: a client command through the server at URL (exit status)
client() { AWOOOP_URL=$1 AWOOOP_KEY=$ADMIN "$BIN" project list >/dev/null 2>"$TMP/client.err"; }

listen_on '[::1]:0'
check "[::1]: /healthz over IPv6" "$(healthz "http://[::1]:$PORT")" 200
check "[::1]: not on 127.0.0.1" "$(healthz "http://127.0.0.1:$PORT")" 000
client "http://[::1]:$PORT"
check "[::1]: a client command with AWOOOP_URL=http://[::1]:PORT" "$?" 0
stop

listen_on 'localhost:0'
check "localhost: /healthz" "$(healthz "http://localhost:$PORT")" 200
check "localhost: on its IPv4 address" "$(healthz "http://127.0.0.1:$PORT")" 200
check "localhost: not on [::1]" "$(healthz "http://[::1]:$PORT")" 000
client "http://localhost:$PORT"
check "localhost: a client command with AWOOOP_URL=http://localhost:PORT" "$?" 0
stop

listen_on '[::]:0'
check "[::]: /healthz over IPv6" "$(healthz "http://[::1]:$PORT")" 200
check "[::]: /healthz over IPv4 too" "$(healthz "http://127.0.0.1:$PORT")" 200
client "http://127.0.0.1:$PORT"
check "[::]: a client command over IPv4" "$?" 0
stop

# refused at start: exit 2 (configuration) and what a good one looks like
refused() { # refused ADDR -> $RC, the message in $TMP/refused
  "$BIN" serve --db "$DB" --listen "$1" --channels off >/dev/null 2>"$TMP/refused" &
  local pid=$!
  PIDS+=($pid)
  wait "$pid"
  RC=$?
}
refused '::1:8080'
check "an IPv6 address without brackets: exit 2" "$RC" 2
check "... told to use brackets" "$(grep -c 'goes in brackets' "$TMP/refused")" 1
refused '127.0.0.1:99999'
check "a port over 65535: exit 2" "$RC" 2
check "... told the range" "$(grep -c '0..65535' "$TMP/refused")" 1
refused 'no-such-host.invalid:8080'
check "a host name that does not resolve: exit 2" "$RC" 2
check "... said so" "$(grep -c 'cannot resolve no-such-host.invalid' "$TMP/refused")" 1
refused '8080'
check "no host: exit 2" "$RC" 2
check "... with the forms" "$(grep -c '\[::1\]:8080, localhost:8080' "$TMP/refused")" 1
# the client on a server that is not there: exit 3, naming the URL
AWOOOP_URL="http://[::1]:1" AWOOOP_KEY=$ADMIN "$BIN" project list >/dev/null 2>"$TMP/client.err"
check "client: an unreachable [::1] server exits 3" "$?" 3
check "... naming it" "$(grep -c 'cannot reach http://\[::1\]:1' "$TMP/client.err")" 1
aw_done listen
