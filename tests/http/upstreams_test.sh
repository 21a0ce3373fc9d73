#!/usr/bin/env bash
# Black-box test of named LLM upstreams (issue 43 item 1) against a real
# `awooop serve` - two of them on PostgreSQL + Redis, sharing one store - and
# fake upstreams (tests/support/fake_llm.c) on loopback:
#  - an upstream added by activating a platform_resource llm_upstreams
#    revision (publish, approve, activate, converge) answers the very next
#    call in every process, with no restart; a removed one is refused
#    502 E-LLM-003 in every process;
#  - a changed URL gives only that upstream a new connection;
#  - a project's own upstream (policy_routing upstreams[]) with its own key
#    (the fake checks it) answers that project; another project cannot use
#    it (E-LLM-003), and its same reference names its own, unset, secret;
#  - a literal key in either revision is refused E-CONTRACT-011 with its
#    pointer; the keys are in no answer, log line or audit record.
#   upstreams_test.sh AWOOOP_BINARY FAKE_LLM_BINARY sqlite|postgres
set -uo pipefail
BIN=$1
FAKE=$2
BACKEND=$3
# shellcheck source=tests/http/lib.sh
. "$(dirname "$0")/lib.sh"
CANARY="sk-upcanary-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export AW_UP_CANARY=$CANARY            # the platform's key (env:AW_UP_CANARY)
export AWOOOP_T_ACME__OWNKEY=$CANARY   # acme's own (env:OWNKEY in acme's revision)
unset AWOOOP_T_BETA__OWNKEY

start_fake() { # start_fake NAME [--expect-key-env VAR] -> FAKE_PORT
  "$FAKE" --name "$@" >"$TMP/fake-$1" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 50); do
    FAKE_PORT=$(sed -n 's/^port //p' "$TMP/fake-$1" 2>/dev/null)
    [ -n "$FAKE_PORT" ] && return 0
    sleep 0.1
  done
  echo "fake $1 did not start" >&2; exit 1
}
stat() { curl -s "http://127.0.0.1:$1/stats" | jq -r ".$2"; }

start_fake P; PP=$FAKE_PORT                              # the --llm-config default
start_fake K --expect-key-env AW_UP_CANARY; PK=$FAKE_PORT # a platform upstream
start_fake T --expect-key-env AW_UP_CANARY; PT=$FAKE_PORT # acme's own
echo "{\"providers\": {\"openai\": {\"url\": \"http://127.0.0.1:$PP/v1\"}}}" >"$TMP/llm.json"

aw_db "$BACKEND"
# loopback fakes: acme (only) may reach private addresses from its own upstreams
aw_serve --llm-config "$TMP/llm.json" --egress-allow-private acme
URL1=$URL
URLS=("$URL1")
if [ "$BACKEND" = postgres ]; then
  # shellcheck disable=SC2086 # EXTRA is words (lib.sh)
  "$BIN" serve --db "$DB" --listen 127.0.0.1:0 --role api --llm-config "$TMP/llm.json" \
    --egress-allow-private acme $EXTRA >/dev/null 2>>"$TMP/server2.log" &
  PIDS+=($!)
  for _ in $(seq 1 100); do
    grep -q '"awooop serving"' "$TMP/server2.log" 2>/dev/null && break
    sleep 0.1
  done
  URL2="http://127.0.0.1:$(grep '"awooop serving"' "$TMP/server2.log" | tail -1 | jq -r .port)"
  curl -sf "$URL2/healthz" >/dev/null || { echo "server 2 did not start" >&2; exit 1; }
  URLS+=("$URL2")
fi

for p in acme beta; do req POST /v1/projects "$ADMIN" "{\"id\":\"$p\"}"; done
OP1=$(mkkey acme op1 operator); OP2=$(mkkey acme op2 operator); W=$(mkkey acme w1 worker)
BOP1=$(mkkey beta op1 operator); BOP2=$(mkkey beta op2 operator); BW=$(mkkey beta w1 worker)
POP1=$(mkkey __platform__ pop1 platform-admin); POP2=$(mkkey __platform__ pop2 platform-admin)

# activate PROJECT FAMILY CONTRACT BODY KEY1 KEY2: drafted, published,
# approved, activated; the platform's then converged (every live process
# serves it: `awooop contract convergence`). A project's policy is read by
# the call's own guard; its fleet rows exist once a process served the
# project, so a project's first activation has no process to converge.
activate() {
  local base="/v1/projects/$1/contracts/$2/$3/revisions" rev
  req POST "$base" "$5" "{\"body\": $4}"
  rev=$(jbody .revision_id)
  req POST "$base/$rev/publish" "$5" ""
  req POST "$base/$rev/approve" "$6" ""
  req POST "$base/$rev/activate" "$5" ""; expect "activate $2/$3" 200
  [ "$1" = __platform__ ] || return 0
  AWOOOP_URL=$URL1 AWOOOP_KEY=$5 "$BIN" contract convergence --project "$1" --family "$2" \
    --contract "$3" --wait-s 30 >/dev/null 2>"$TMP/conv.err"
  local rc=$?
  [ $rc = 0 ] || cat "$TMP/conv.err" >&2
  check "converged $2/$3" $rc 0
}
upstreams() { # upstreams JSON-ARRAY: the platform's llm_upstreams revision
  activate __platform__ platform_resource llm_upstreams \
    "{\"kind\":\"llm_upstreams\",\"upstreams\":$1}" "$POP1" "$POP2"
}
# call URL KEY MODEL -> STATUS; the answer's first word (the fake) in ANSWER
call() {
  local u=$URL
  URL=$1
  req POST /v1/chat/completions "$2" "{\"model\":\"$3\",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}"
  URL=$u
  ANSWER=$(jbody '.choices[0].message.content // .error.code' | cut -d: -f1)
}

ROUTES='"routes":[{"name":"r-new","match":{"task":"r-new"},"candidates":[{"provider":"k-new","model":"m"}]},
  {"name":"r-def","match":{"task":"r-def"},"candidates":[{"provider":"openai","model":"m"}]},
  {"name":"r-own","match":{"task":"r-own"},"candidates":[{"provider":"own","model":"m"}]}]'
activate acme policy_routing default "{$ROUTES}" "$OP1" "$OP2"

# --- not yet declared: refused in every process; the bootstrap default answers
for i in "${!URLS[@]}"; do
  call "${URLS[$i]}" "$W" r-new; check "process $((i + 1)): undeclared upstream" "$STATUS,$ANSWER" 502,E-LLM-003
  call "${URLS[$i]}" "$W" r-def; check "process $((i + 1)): --llm-config default" "$STATUS,$ANSWER" 200,P
done

# --- a literal key is refused with its pointer, before anything is stored
req POST /v1/projects/__platform__/contracts/platform_resource/llm_upstreams/revisions "$POP1" \
  "{\"body\":{\"kind\":\"llm_upstreams\",\"upstreams\":[{\"name\":\"x\",\"api\":\"openai\",\"url\":\"https://x.example/v1\",\"api_key\":\"$CANARY\"}]}}"
check "literal platform key refused" "$STATUS,$(jbody .code),$(jbody .pointer)" 422,E-CONTRACT-011,/upstreams/0/api_key

# --- added: the very next call in every process
upstreams "[{\"name\":\"k-new\",\"api\":\"openai\",\"url\":\"http://127.0.0.1:$PK/v1\",\"api_key\":\"env:AW_UP_CANARY\"},
  {\"name\":\"openai\",\"api\":\"openai\",\"url\":\"http://localhost:$PK/v1\",\"api_key\":\"env:AW_UP_CANARY\"}]"
for i in "${!URLS[@]}"; do
  call "${URLS[$i]}" "$W" r-new; check "process $((i + 1)): added upstream answers" "$STATUS,$ANSWER" 200,K
  call "${URLS[$i]}" "$W" r-def; check "process $((i + 1)): the contract overrides the config's openai" "$STATUS,$ANSWER" 200,K
done
check "platform key reached the upstream" "$(stat "$PK" auth_bad)" 0

# --- a changed URL: a new connection for that upstream only (process 1)
for _ in 1 2; do call "$URL1" "$W" r-new; call "$URL1" "$W" r-def; done
C0=$(stat "$PK" connections)
upstreams "[{\"name\":\"k-new\",\"api\":\"openai\",\"url\":\"http://localhost:$PK/v1\",\"api_key\":\"env:AW_UP_CANARY\"},
  {\"name\":\"openai\",\"api\":\"openai\",\"url\":\"http://localhost:$PK/v1\",\"api_key\":\"env:AW_UP_CANARY\"}]"
call "$URL1" "$W" r-def; check "unchanged upstream answers" "$STATUS,$ANSWER" 200,K
check "unchanged upstream: its pool kept" "$(stat "$PK" connections)" "$C0"
call "$URL1" "$W" r-new; check "changed upstream answers" "$STATUS,$ANSWER" 200,K
check "changed upstream: a new connection" "$(stat "$PK" connections)" $((C0 + 1))

# --- removed: refused in every process; the config's openai is the default again
upstreams '[]'
for i in "${!URLS[@]}"; do
  call "${URLS[$i]}" "$W" r-new; check "process $((i + 1)): removed upstream refused" "$STATUS,$ANSWER" 502,E-LLM-003
  call "${URLS[$i]}" "$W" r-def; check "process $((i + 1)): default back" "$STATUS,$ANSWER" 200,P
done

# --- bring your own key: acme's own upstream, acme's own secret
req POST /v1/projects/acme/contracts/policy_routing/default/revisions "$OP1" \
  "{\"body\":{$ROUTES,\"upstreams\":[{\"name\":\"own\",\"api\":\"openai\",\"url\":\"http://127.0.0.1:$PT/v1\",\"api_key\":\"$CANARY\"}]}}"
check "literal tenant key refused" "$STATUS,$(jbody .code),$(jbody .pointer)" 422,E-CONTRACT-011,/upstreams/0/api_key
req POST /v1/projects/acme/contracts/policy_routing/default/revisions "$OP1" \
  "{\"body\":{$ROUTES,\"upstreams\":[{\"name\":\"own\",\"api\":\"openai\",\"url\":\"http://127.0.0.1:$PT/v1\",\"api_key\":\"file:/etc/passwd\"}]}}"
check "absolute file reference refused" "$STATUS,$(jbody .code),$(jbody .pointer)" 422,E-SECRET-001,/upstreams/0/api_key
OWN="{\"name\":\"own\",\"api\":\"openai\",\"url\":\"http://127.0.0.1:$PT/v1\",\"api_key\":\"env:OWNKEY\"}"
activate acme policy_routing default "{$ROUTES,\"upstreams\":[$OWN]}" "$OP1" "$OP2"
for i in "${!URLS[@]}"; do
  call "${URLS[$i]}" "$W" r-own; check "process $((i + 1)): acme's own upstream answers" "$STATUS,$ANSWER" 200,T
done
check "acme's key reached its upstream" "$(stat "$PT" auth_bad)" 0
T0=$(stat "$PT" requests)
# beta: acme's upstream is not there; beta's same reference is beta's own secret
activate beta policy_routing default "{$ROUTES}" "$BOP1" "$BOP2"
call "$URL1" "$BW" r-own; check "beta cannot use acme's upstream" "$STATUS,$ANSWER" 502,E-LLM-003
activate beta policy_routing default "{$ROUTES,\"upstreams\":[$OWN]}" "$BOP1" "$BOP2"
call "$URL1" "$BW" r-own; check "beta's env:OWNKEY is not acme's" "$STATUS,$ANSWER" 502,E-LLM-003
check "beta's calls never reached acme's upstream" "$(stat "$PT" requests)" "$T0"

# --- the key: in no answer, log line or audit record
check "key in no answer" "$(grep -c "$CANARY" "$TMP/responses")" 0
sleep 0.5 # the recorders write
check "key in no log line" "$(cat "$TMP"/server*.log | grep -c "$CANARY")" 0
for p in acme beta __platform__; do
  K=$OP1; [ $p = beta ] && K=$BOP1; [ $p = __platform__ ] && K=$POP1
  req GET "/v1/projects/$p/audit?limit=500" "$K" ""
  check "$p: key in no audit record" "$(grep -c "$CANARY" "$TMP/body")" 0
done
req GET "/v1/projects/acme/audit?limit=500&action=llm.call" "$OP1" ""
check "acme's audit names its own upstream" "$(jbody '[.items[] | select(.payload.upstream == "own")] | length > 0')" true

aw_done "upstreams_test ($BACKEND)"
