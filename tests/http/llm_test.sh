#!/usr/bin/env bash
# Black-box test of the LLM gateway's HTTP front door against a real
# `awooop serve` and fake upstreams (tests/support/fake_llm.c) on loopback:
# the OpenAI-compatible API with curl and with the official `openai` npm
# client (installed here from npm, unmodified), streaming, errors, scopes,
# the `llm` run step through the API, a credential canary searched in every
# answer and log line, and (postgres) the emergency cap across two processes.
#   llm_test.sh AWOOOP_BINARY FAKE_LLM_BINARY sqlite|postgres
set -uo pipefail
BIN=$1
FAKE=$2
BACKEND=$3
TMP=$(mktemp -d /tmp/aw-llm.XXXXXX)
# the platform's emergency cap across processes is what this test counts: one
# project may use all of it (the per-project share is test_emergency_share's)
export AWOOOP_LLM_EMERGENCY_SHARE=100
# the budget crowds count the budget's refusals of one project's 64 streams at
# once: here its admissions may use every store connection of the process
# (the per-project bound of the pool is bulkheads_test.sh's)
export AWOOOP_PROJECT_POOL=64
PASS=0
FAIL=0
PIDS=()
PGDB=
# the clients are copied next to their node_modules under names of this run's
# own: the cache is shared with other runs (and checkouts) of this test
OCLIENT="client-$$.mjs"
ACLIENT="client-$$.mjs"
CANARY="sk-canary-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export AW_CANARY=$CANARY

cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  if [ -n "$PGDB" ]; then
    psql -q -h "$AWOOOP_TEST_PG_HOST" -p "$AWOOOP_TEST_PG_PORT" -U postgres -d postgres \
      -c "DROP DATABASE IF EXISTS $PGDB WITH (FORCE)" >/dev/null 2>&1
  fi
  rm -f "${NPMDIR:-/nonexistent}/$OCLIENT" "${ANPM:-/nonexistent}/$ACLIENT"
  rm -rf "$TMP"
}
trap cleanup EXIT

ok()   { PASS=$((PASS + 1)); }
bad()  { FAIL=$((FAIL + 1)); echo "FAIL: $*" >&2; }
check() { if [ "$2" == "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi; }

# req METHOD PATH KEY [BODY] [curl args...] -> $STATUS, body in $TMP/body
req() {
  local method=$1 path=$2 key=$3 body=${4:-}
  shift 4 2>/dev/null || shift $#
  local args=(-s -o "$TMP/body" -D "$TMP/hdr" -w '%{http_code}' -X "$method")
  [ -n "$key" ] && args+=(-H "Authorization: Bearer $key")
  if [ -n "$body" ]; then args+=(-H 'Content-Type: application/json' --data-binary "$body"); fi
  STATUS=$(curl "${args[@]}" "$@" "${U:-$URL}$path")
  cat "$TMP/hdr" "$TMP/body" >>"$TMP/responses" 2>/dev/null
  aw_record "$method" "$path"
}
. "$(dirname "$0")/record.sh"
jbody() { jq -r "$1" "$TMP/body" 2>/dev/null; }
# the Retry-After of the last answer, and the seconds to the next UTC midnight
retry_after() { tr -d '\r' <"$TMP/hdr" | awk -F': ' 'tolower($1) == "retry-after" { print $2 }'; }
to_midnight() { echo $(( 86400 - $(date -u +%s) % 86400 )); }
near() { [ -n "$1" ] && [ "$1" -ge $(($2 - 5)) ] && [ "$1" -le $(($2 + 5)) ] && echo yes; }
expect() { # expect DESCRIPTION STATUS [CODE]
  check "$1 status" "$STATUS" "$2"
  [ -n "${3:-}" ] && check "$1 code" "$(jbody .code)" "$3"
}

start_fake() { # start_fake NAME [--expect-key-env VAR] -> FAKE_PORT
  "$FAKE" --name "$@" >"$TMP/fake-$1" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 50); do
    FAKE_PORT=$(sed -n 's/^port //p' "$TMP/fake-$1")
    [ -n "$FAKE_PORT" ] && return 0
    sleep 0.1
  done
  echo "fake $1 did not start" >&2; exit 1
}

start_server() { # start_server LOGNAME [args...] -> URL
  local log=$TMP/$1.log
  shift
  "$BIN" serve --db "$DB" --listen 127.0.0.1:0 --llm-config "$TMP/llm.json" $EXTRA "$@" \
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

start_fake A --expect-key-env AW_CANARY; PA=$FAKE_PORT
start_fake G --expect-key-env AW_CANARY; PG=$FAKE_PORT
start_fake O1; PO1=$FAKE_PORT
start_fake O2; PO2=$FAKE_PORT
start_fake K --expect-key-env AW_CANARY; PK=$FAKE_PORT # Anthropic's Messages API
start_fake Z --expect-key-env AW_CANARY; PZ=$FAKE_PORT # Azure OpenAI
cat >"$TMP/llm.json" <<JSON
{"providers": {
  "openai": {"url": "http://127.0.0.1:$PA/v1", "api": "openai", "api_key": "env:AW_CANARY"},
  "gemini": {"url": "http://127.0.0.1:$PG/v1", "api_key": "env:AW_CANARY"},
  "anthropic": {"url": "http://127.0.0.1:$PK/v1", "api": "anthropic", "api_key": "env:AW_CANARY"},
  "azure_openai": {"url": "http://127.0.0.1:$PZ", "api": "azure_openai", "api_version": "2024-10-21",
                   "api_key": "env:AW_CANARY"}}}
JSON

EXTRA=""
if [ "$BACKEND" = postgres ]; then
  [ -n "${AWOOOP_TEST_PG_HOST:-}" ] && [ -n "${AWOOOP_TEST_REDIS_URL:-}" ] ||
    { echo "SKIP: needs PostgreSQL and Redis: AWOOOP_TEST_PG_HOST/PORT and AWOOOP_TEST_REDIS_URL are not set (make test starts them)" >&2; exit 77; }
  PGDB="aw_llm_$$_$RANDOM"
  psql -q -h "$AWOOOP_TEST_PG_HOST" -p "$AWOOOP_TEST_PG_PORT" -U postgres -d postgres \
    -c "CREATE DATABASE $PGDB" >/dev/null || exit 1
  "$BIN" migrate --db "postgresql://postgres@$AWOOOP_TEST_PG_HOST:$AWOOOP_TEST_PG_PORT/$PGDB" \
    >/dev/null || exit 1
  DB="postgresql://awooop_app@$AWOOOP_TEST_PG_HOST:$AWOOOP_TEST_PG_PORT/$PGDB"
  EXTRA="--redis $AWOOOP_TEST_REDIS_URL --budget-lease-ms 2000"
  export AWOOOP_PUBLISH_KEYS="kt:$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
else
  DB="sqlite:$TMP/awooop.db"
fi

# a config that holds a key instead of a reference is refused at start
echo '{"providers": {"openai": {"url": "http://x/v1", "api_key": "sk-plain"}}}' >"$TMP/bad.json"
"$BIN" serve --db "sqlite:$TMP/bad.db" --listen 127.0.0.1:0 --llm-config "$TMP/bad.json" \
  >/dev/null 2>"$TMP/bad.log"
check "plain key in config refused" $? 2
check "says why" "$(grep -c 'secret reference' "$TMP/bad.log")" 1

ADMIN=$("$BIN" key generate)
export AWOOOP_BOOTSTRAP_KEY=$ADMIN
start_server s1
unset AWOOOP_BOOTSTRAP_KEY

mkkey() { # mkkey PROJECT NAME SCOPE -> secret
  req POST "/v1/projects/$1/keys" "$ADMIN" "{\"name\":\"$2\",\"scope\":\"$3\"}" >/dev/null
  jbody .key
}
req POST /v1/projects "$ADMIN" '{"id":"acme"}'; expect "project" 201
OP1=$(mkkey acme op1 operator); OP2=$(mkkey acme op2 operator)
W=$(mkkey acme w1 worker); RD=$(mkkey acme r1 reader)
POP1=$(mkkey __platform__ pop1 platform-admin); POP2=$(mkkey __platform__ pop2 platform-admin)

activate() { # activate PROJECT FAMILY CONTRACT BODY KEY1 KEY2
  local base="/v1/projects/$1/contracts/$2/$3/revisions"
  req POST "$base" "$5" "{\"body\": $4}"; local rev; rev=$(jbody .revision_id)
  req POST "$base/$rev/publish" "$5" ""
  req POST "$base/$rev/approve" "$6" ""
  req POST "$base/$rev/activate" "$5" ""; expect "activate $2" 200
}

# --- no policy yet: fails closed
CHAT='{"model":"chat","messages":[{"role":"user","content":"hello"}]}'
req POST /v1/chat/completions "$W" "$CHAT"; expect "no policy" 403 E-LLM-001
check "openai error object" "$(jbody .error.code)" "E-LLM-001"

activate acme policy_routing default \
  '{"routes":[{"name":"chat","match":{"task":"chat"},"candidates":[{"provider":"openai","model":"gpt-x"}]},
    {"name":"slow","match":{"task":"slow"},"candidates":[{"provider":"openai","model":"s;tokens=50;tps=10"}]},
    {"name":"quiet","match":{"task":"quiet"},"candidates":[{"provider":"openai","model":"q;tokens=19;nousage=1"}]},
    {"name":"local","match":{"task":"local"},"candidates":[{"provider":"ollama","model":"llama3"}]}]}' "$OP1" "$OP2"

# --- non-streamed
req POST /v1/chat/completions "$W" "$CHAT"; expect "chat" 200
check "object" "$(jbody .object)" chat.completion
check "model as asked" "$(jbody .model)" chat
check "answered by A" "$(jbody '.choices[0].message.content' | cut -d: -f1)" A
hdr() { tr -d '\r' <"$TMP/hdr" | awk -F': ' -v h="$1" 'tolower($1) == h { print $2 }'; }
check "the route said" "$(hdr x-awooop-route)" chat
check "the upstream model said" "$(hdr x-awooop-upstream-model)" gpt-x
check "usage" "$(jbody .usage.total_tokens)" 17 # 9 billed for "hello" (as OpenAI counts), 8 answered
# --- routes of other providers' APIs, not served: their clients' error shape
req POST /v1/images/generations "$W" '{"model":"chat","prompt":"hi"}'; expect "images not served" 404 E-REQ-007
check "openai error object: message" "$(jbody .error.message | grep -c 'serves POST /v1/chat/completions')" 1
check "openai error object: type" "$(jbody .error.type)" invalid_request_error
req POST /v1/messages/count_tokens "$W" '{"model":"chat","messages":[]}'; expect "count_tokens not served" 404 E-REQ-007
check "anthropic error type" "$(jbody .error.type)" not_found_error
req GET /v1/projects/acme/nothing "$W"; expect "own API: problem only" 404 E-REQ-007
check "no sdk error object on the control plane's own" "$(jbody .error)" null
TP="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
req POST /v1/chat/completions "$W" "$CHAT" -H "traceparent: $TP"; expect "with trace" 200
check "trace continued upstream" \
  "$(curl -s "http://127.0.0.1:$PA/stats" | jq -r .last_traceparent | cut -d- -f2)" \
  0af7651916cd43dd8448eb211c80319c
check "answer carries the trace" "$(grep -i '^traceparent:' "$TMP/hdr" | cut -d- -f2)" \
  0af7651916cd43dd8448eb211c80319c

# --- streamed, SSE framing as OpenAI's
curl -sN -H "Authorization: Bearer $W" -H 'Content-Type: application/json' \
  -d '{"model":"chat","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}' \
  -D "$TMP/shdr" "$URL/v1/chat/completions" >"$TMP/sse"
check "stream content type" "$(grep -i '^content-type:' "$TMP/shdr" | tr -d '\r' | cut -d' ' -f2)" text/event-stream
check "stream chunks" "$(grep -c '^data: {' "$TMP/sse")" 10 # 8 tokens, finish, usage
check "stream ends with DONE" "$(tail -2 "$TMP/sse" | head -1)" "data: [DONE]"
check "usage chunk" "$(grep '"usage"' "$TMP/sse" | sed 's/^data: //' | jq -r .usage.completion_tokens)" 8

# --- errors, scopes, the body
req POST /v1/chat/completions "$RD" "$CHAT"; expect "reader scope" 403 E-AUTH-003
req POST /v1/chat/completions "" "$CHAT"; expect "no key" 401 E-AUTH-001
req POST /v1/chat/completions "$W" '{"model":"chat","messages":[]}'; expect "empty messages" 400 E-REQ-005
check "pointer" "$(jbody .pointer)" /messages
req POST /v1/chat/completions "$W" '{"model":"chat","messages":[{"role":"user","content":"x"}],"max_tokens":1e300}'
expect "huge number" 400 E-REQ-005
req POST /v1/chat/completions "$W" '{"model":"nope","messages":[{"role":"user","content":"x"}]}'
expect "no route" 404 E-LLM-002
req GET /v1/models "$W" ""; expect "models" 200
check "model list" "$(jbody '[.data[].id] | sort | join(",")')" "chat,gpt-x,llama3,local,q;tokens=19;nousage=1,quiet,s;tokens=50;tps=10,slow"
# Ollama requested with no topology and no ollama provider: no target
req POST /v1/chat/completions "$W" '{"model":"x","messages":[{"role":"user","content":"x"}]}' -H "X-Awooop-Task: local"
expect "no configured upstream" 502 E-LLM-003

# --- the CLI
export AWOOOP_URL=$URL AWOOOP_KEY=$W
check "cli llm" "$("$BIN" llm --model chat hello 2>/dev/null | cut -d: -f1)" A
check "cli llm tokens" "$("$BIN" llm --model chat hello 2>&1 >/dev/null)" "tokens: 9 in, 8 out"
check "cli llm stream" "$("$BIN" llm --model chat --stream hello 2>/dev/null | wc -w)" 9
echo hi | "$BIN" llm --model nope - >/dev/null 2>"$TMP/cli.err"
check "cli llm error exit" $? 1
check "cli llm error code" "$(grep -c 'E-LLM-002' "$TMP/cli.err")" 1
unset AWOOOP_URL AWOOOP_KEY

# --- the official openai client, unmodified
NPMDIR=${AWOOOP_NPM_CACHE:-$HOME/.cache/awooop-npm}/openai
if [ ! -d "$NPMDIR/node_modules/openai" ]; then
  mkdir -p "$NPMDIR"
  (cd "$NPMDIR" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund openai@4 >/dev/null 2>"$TMP/npm.log") \
    || { cat "$TMP/npm.log" >&2; bad "npm install openai"; }
fi
cp "$(dirname "$0")/openai_client.mjs" "$NPMDIR/$OCLIENT"
OUT=$(node "$NPMDIR/$OCLIENT" "$URL" "$W" 2>"$TMP/node.err")
check "openai client ran" $? 0
[ -s "$TMP/node.err" ] && cat "$TMP/node.err" >&2
jo() { echo "$OUT" | jq -r "$1" 2>/dev/null; }
check "openai plain" "$(jo .plain.content | cut -d: -f1)" A
check "openai plain usage" "$(jo .plain.usage.completion_tokens)" 8
check "openai stream text" "$(jo .stream.text | wc -w)" 9
check "openai stream usage" "$(jo .stream.usage.total_tokens)" 17
check "openai tools" "$(jo .tools.finish)" tool_calls
check "openai error status" "$(jo .error.status)" 404
check "openai error code" "$(jo .error.code)" E-LLM-002
check "openai error class" "$(jo .error.isApiError)" true
check "openai embeddings" "$(jo '[.embeddings.n, .embeddings.dims, .embeddings.usage.prompt_tokens, .embeddings.model] | join(",")')" 2,8,4,chat
check "openai responses" "$(jo '[.responses.object, .responses.status, (.responses.text | split(":")[0]), .responses.usage.input_tokens, .responses.usage.output_tokens] | join(",")')" response,completed,A,16,8
check "openai responses stream" "$(jo '[(.responses.stream.text | split(" ") | length), (.responses.stream.deltas == .responses.stream.text), .responses.stream.status, .responses.stream.usage.output_tokens] | join(",")')" 9,true,completed,8
check "openai responses function call" "$(jo '[.responses.call.name, .responses.call.args] | join(",")')" 'weather,{"city":"Oslo"}'
check "openai models" "$(jo '.models | join(",")')" "chat,gpt-x,llama3,local,q;tokens=19;nousage=1,quiet,s;tokens=50;tps=10,slow"

# --- the llm run step, through the run API
req POST /v1/platform/runs "$OP1" \
  '{"workflow":[{"kind":"llm","args":{"model":"chat","messages":[{"role":"user","content":"summarise"}]}}]}' \
  -H "Idempotency-Key: llm-step-1"
expect "submit llm run" 201
RID=$(jbody .run_id)
for _ in $(seq 1 100); do
  req GET "/v1/platform/runs/$RID" "$OP1" ""
  [ "$(jbody .state)" = succeeded ] && break
  sleep 0.1
done
check "llm run" "$(jbody .state)" succeeded
check "llm step answer" "$(jbody '.steps[0].result.content' | cut -d: -f1)" A

# --- the emergency cap across two processes (the cluster shape)
if [ "$BACKEND" = postgres ]; then
  curl -s -d '{"status":503}' "http://127.0.0.1:$PO1/control" >/dev/null
  curl -s -d '{"status":503}' "http://127.0.0.1:$PO2/control" >/dev/null
  activate __platform__ platform_resource ollama_topology \
    "{\"kind\":\"ollama_topology\",\"primary\":{\"url\":\"http://127.0.0.1:$PO1\"},\"secondary\":{\"url\":\"http://127.0.0.1:$PO2\"},
      \"emergency_cloud\":{\"provider\":\"gemini\",\"model\":\"g-flash\",\"daily_cap\":7}}" "$POP1" "$POP2"
  # the day's counter is shared by every process on this Redis (that is the
  # point): start the day afresh for this test, legacy and INV-1 names both
  D=$(date -u +%F)
  redis-cli -u "$AWOOOP_TEST_REDIS_URL" DEL "ollama:gemini_daily_count:$D" \
    "platform:ollama:gemini_daily_count:$D" >/dev/null
  redis-cli -u "$AWOOOP_TEST_REDIS_URL" --scan --pattern "*:llm:emergency:$D" |
    xargs -r redis-cli -u "$AWOOOP_TEST_REDIS_URL" DEL >/dev/null
  URL1=$URL
  start_server s2 --role api
  URL2=$URL
  S2PID=${PIDS[-1]}
  G0=$(curl -s "http://127.0.0.1:$PG/stats" | jq .requests)
  LOCAL='{"model":"local","messages":[{"role":"user","content":"x"}]}'
  for i in $(seq 1 32); do
    u=$URL1; [ $((i % 2)) -eq 0 ] && u=$URL2
    curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $W" \
      -H 'Content-Type: application/json' -d "$LOCAL" "$u/v1/chat/completions" >>"$TMP/cap" &
  done
  wait_for=0
  for _ in $(seq 1 100); do [ "$(wc -l <"$TMP/cap")" -ge 32 ] && break; sleep 0.1; done
  check "cap: answered across 2 processes" "$(grep -c '^200$' "$TMP/cap")" 7
  check "cap: refused" "$(grep -c '^429$' "$TMP/cap")" 25
  check "cap: upstream calls" "$(( $(curl -s "http://127.0.0.1:$PG/stats" | jq .requests) - G0 ))" 7
  # the cap counts UTC days: a refusal says to come back at midnight
  U=$URL1 req POST /v1/chat/completions "$W" "$LOCAL"; expect "cap: one more" 429 E-LLM-005
  check "cap: Retry-After is the next UTC midnight" "$(near "$(retry_after)" "$(to_midnight)")" yes
  echo "emergency cap 7, 32 callers over 2 processes: $(grep -c '^200$' "$TMP/cap") answered"
fi

# --- the token budget: status, suspend, resume (API and CLI)
activate acme budget default '{"period":"day","token_limit":1000000,"action_on_exceed":"kill"}' "$OP1" "$OP2"
req POST /v1/chat/completions "$W" "$CHAT"; expect "chat under a budget" 200
sleep 0.5 # the recorder settles
export AWOOOP_URL=${URL1:-$URL} AWOOOP_KEY=$OP1
check "budget status" "$("$BIN" budget status --project acme --json | jq '.settled > 0 and .reserved == 0 and .suspended == false')" true
"$BIN" budget suspend --project acme --reason "drill" >/dev/null; check "budget suspend" $? 0
U=${URL1:-$URL} req POST /v1/chat/completions "$W" "$CHAT"; expect "suspended" 402 E-BUDGET-001
check "suspended status" "$("$BIN" budget status --project acme --json | jq -r '.suspended, .reason' | paste -sd,)" "true,drill"
"$BIN" budget resume --project acme >/dev/null; check "budget resume" $? 0
U=${URL1:-$URL} req POST /v1/chat/completions "$W" "$CHAT"; expect "resumed" 200
"$BIN" budget status --project acme --json >/dev/null 2>&1
AWOOOP_KEY=$RD "$BIN" budget suspend --project acme >/dev/null 2>"$TMP/rd.err"
check "reader cannot suspend" "$(grep -c E-AUTH-003 "$TMP/rd.err")" 1
unset AWOOOP_URL AWOOOP_KEY
U=${URL1:-$URL} req GET "/v1/projects/acme/audit?action=budget.suspend" "$OP1" ""
check "suspension audited" "$(jbody '.items | length')" 1
if [ -n "${URL2:-}" ]; then
  # a suspension through process 1 cuts a stream served by process 2
  curl -sN -H "Authorization: Bearer $W" -H 'Content-Type: application/json' \
    -d '{"model":"slow","stream":true,"messages":[{"role":"user","content":"x"}]}' \
    "$URL2/v1/chat/completions" >"$TMP/cut.sse" &
  CURLPID=$!
  sleep 1
  T0=$(date +%s%N)
  U=$URL1 req POST /v1/projects/acme/budget/suspend "$OP1" ""; expect "suspend via process 1" 200
  wait $CURLPID
  MS=$(( ($(date +%s%N) - T0) / 1000000 ))
  check "stream on process 2 cut" "$(grep -c E-BUDGET-001 "$TMP/cut.sse")" 1
  check "cut within 1 s ($MS ms)" "$([ "$MS" -lt 1000 ] && echo yes)" yes
  echo "suspension through process 1 cut a stream of process 2 in $MS ms"
  U=$URL1 req POST /v1/projects/acme/budget/resume "$OP1" ""; expect "resume" 200
fi

# --- a suspension remembers who imposed it: the project lifts its own,
# never the platform's (E-BUDGET-006)
U=${URL1:-$URL} req POST /v1/projects/acme/budget/suspend "$POP1" '{"reason":"abuse report"}'
expect "platform suspends" 200
check "view: by" "$(jbody .suspension.by)" pop1
check "view: imposed by the platform" "$(jbody '.suspension.imposed_by, .suspension.platform, .suspension.lifted_by' | paste -sd,)" "platform,true,platform"
U=${URL1:-$URL} req POST /v1/chat/completions "$W" "$CHAT"; expect "platform-suspended" 402 E-BUDGET-001
check "says who lifts it" "$(jbody '.detail // .error.message' | grep -c 'only the platform lifts it')" 1
U=${URL1:-$URL} req POST /v1/projects/acme/budget/resume "$OP1" ""; expect "tenant cannot lift it" 403 E-BUDGET-006
U=${URL1:-$URL} req POST /v1/projects/acme/budget/suspend "$OP1" '{"reason":"mine"}'; expect "tenant suspends again" 200
check "still the platform's" "$(jbody '.suspension.imposed_by, .reason' | paste -sd,)" "platform,abuse report"
AWOOOP_URL=${URL1:-$URL} AWOOOP_KEY=$OP2 "$BIN" budget resume --project acme >/dev/null 2>"$TMP/res.err"
check "cli: tenant cannot lift it" "$(grep -c E-BUDGET-006 "$TMP/res.err")" 1
AWOOOP_URL=${URL1:-$URL} AWOOOP_KEY=$POP2 "$BIN" budget resume --project acme >/dev/null
check "cli: the platform lifts it" $? 0
U=${URL1:-$URL} req POST /v1/chat/completions "$W" "$CHAT"; expect "platform resumed" 200
U=${URL1:-$URL} req POST /v1/projects/acme/budget/suspend "$OP1" ""; expect "tenant suspends" 200
check "view: the project's" "$(jbody '.suspension.imposed_by, .suspension.by, .suspension.platform' | paste -sd,)" "project,op1,false"
U=${URL1:-$URL} req POST /v1/projects/acme/budget/resume "$OP2" ""; expect "tenant lifts its own" 200
check "view: none" "$(jbody '.suspended, .suspension' | paste -sd,)" "false,null"

# --- a per-run limit cannot be escaped by leaving out the run (E-BUDGET-007)
activate acme budget default '{"period":"day","token_limit":100000000,"per_run_token_limit":1000,"action_on_exceed":"block"}' "$OP1" "$OP2"
U=${URL1:-$URL} req POST /v1/chat/completions "$W" "$CHAT"; expect "no run id" 403 E-BUDGET-007
U=${URL1:-$URL} req POST /v1/chat/completions "$W" "$CHAT" -H "X-Awooop-Run-Id: 0190a5e2-7c3b-7d4e-8f00-000000000001"
expect "a made-up run id" 403 E-BUDGET-007
U=${URL1:-$URL} req POST /v1/platform/runs "$OP1" '{"workflow":[{"kind":"sleep","args":{"ms":3000}}]}' -H "Idempotency-Key: per-run-live-1"
expect "a live run" 201
LIVE=$(jbody .run_id)
U=${URL1:-$URL} req POST /v1/chat/completions "$W" "$CHAT" -H "X-Awooop-Run-Id: $LIVE"; expect "the live run's call" 200
U=${URL1:-$URL} req GET "/v1/projects/acme/budget?run=$LIVE" "$OP1" ""
check "the run's row" "$(jbody '.run.limit')" 1000
U=${URL1:-$URL} req POST "/v1/platform/runs/$LIVE/cancel" "$OP1" ""
U=${URL1:-$URL} req POST /v1/chat/completions "$W" "$CHAT" -H "X-Awooop-Run-Id: $LIVE"; expect "a finished run" 403 E-BUDGET-007
activate acme budget default '{"period":"day","token_limit":1000000,"action_on_exceed":"kill"}' "$OP1" "$OP2"
U=${URL1:-$URL} req POST /v1/chat/completions "$W" "$CHAT"; expect "no per-run limit: no run needed" 200
# a day's budget spent by settled calls frees at the next UTC midnight: the
# refusal's Retry-After says so (not the second of a bound that frees soon)
activate acme budget default '{"period":"day","token_limit":1,"action_on_exceed":"block"}' "$OP1" "$OP2"
U=${URL1:-$URL} req POST /v1/chat/completions "$W" "$CHAT"; expect "the day's budget spent" 429 E-BUDGET-002
check "budget spent: Retry-After is the next UTC midnight" "$(near "$(retry_after)" "$(to_midnight)")" yes
activate acme budget default '{"period":"day","token_limit":1000000,"action_on_exceed":"kill"}' "$OP1" "$OP2"

ledger_ok() { # the budget's ledger balances and nothing is held
  U=$URL1 req GET /v1/projects/acme/budget "$OP1" ""
  check "$1: nothing reserved" "$(jbody .reserved)" 0
  check "$1: ledger balances" "$(jbody '.ledger.reserve.tokens == .ledger.settle.tokens + .ledger.release.tokens + .ledger.reap.tokens')" true
  check "$1: within the limit" "$(jbody '.settled <= .limit')" true
}
# 64 streams of model $1 over two processes against a budget 600 tokens
# above what is settled; $2: curl's --max-time (clients that go away)
crowd() {
  U=$URL1 req GET /v1/projects/acme/budget "$OP1" ""
  LIMIT=$(( $(jbody .settled) + 600 ))
  activate acme budget default "{\"period\":\"day\",\"token_limit\":$LIMIT,\"action_on_exceed\":\"block\"}" "$OP1" "$OP2"
  : >"$TMP/crowd"
  rm -f "$TMP"/crowd.*
  CROWD=()
  for i in $(seq 1 64); do
    u=$URL1; [ $((i % 2)) -eq 0 ] && u=$URL2
    (curl -sN --max-time "${2:-30}" -o "$TMP/crowd.$i" -w '%{http_code}\n' -H "Authorization: Bearer $W" -H 'Content-Type: application/json' \
      -d "{\"model\":\"$1\",\"stream\":true,\"max_tokens\":40,\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}" \
      "$u/v1/chat/completions" >>"$TMP/crowd") &
    CROWD+=($!)
  done
  wait "${CROWD[@]}"
  OKS=$(grep -c '^200$' "$TMP/crowd"); REF=$(grep -c '^429$' "$TMP/crowd")
  # clients that go away ($2) may leave before the answer's head on a loaded
  # machine (curl's 000): gone, not lost - the ledger checks below still hold
  GONE=0; [ -n "${2:-}" ] && GONE=$(grep -c '^000$' "$TMP/crowd")
  check "$1: 64 streams, each answered or refused${2:+ (or its client gone first)}" $((OKS + REF + GONE)) 64
  check "$1: some refused" "$([ "$REF" -gt 0 ] && echo yes)" yes
  check "$1: refusals say why" "$(grep -l E-BUDGET-002 "$TMP"/crowd.* | wc -l)" "$REF"
  echo "budget over 2 processes ($1${2:+, clients gone after $2 s}): $OKS streams answered, $REF refused"
  for _ in $(seq 1 40); do # the calls of clients gone end, then settle
    U=$URL1 req GET /v1/projects/acme/budget "$OP1" ""
    [ "$(jbody .reserved)" = 0 ] && break
    sleep 0.25
  done
  ledger_ok "$1"
}
if [ -n "${URL2:-}" ]; then
  # no overshoot: 64 streams over two processes against a budget far
  # smaller than they want (64 x 19 tokens); again with an upstream that
  # sends no usage (the stream is counted), and with clients that go away
  # mid-stream (settled for what was streamed)
  crowd chat
  crowd quiet
  crowd slow 1
  # the ledger's lines and the status per model and per run
  U=$URL1 req GET "/v1/projects/acme/budget/ledger?limit=5" "$OP1" ""; expect "ledger lines" 200
  check "ledger page" "$(jbody '.entries | length')" 5
  NEXT=$(jbody .next)
  U=$URL1 req GET "/v1/projects/acme/budget/ledger?limit=5&after=$NEXT" "$OP1" ""
  check "next page follows" "$(jbody ".entries[0].seq > $NEXT")" true
  U=$URL1 req GET "/v1/projects/acme/budget/ledger?run=x" "$OP1" ""; expect "bad run id" 400 E-REQ-005
  U=$URL1 req GET "/v1/projects/acme/budget" "$OP1" ""
  # (a reservation reaped after its lease - a holder starved past it on a
  # loaded machine - is reported under the model "": reservations do not
  # carry their model)
  check "per model" "$(jbody '[.models[].model | select(. != "")] | sort | join(",")')" "gpt-x,q;tokens=19;nousage=1,s;tokens=50;tps=10"
  AWOOOP_URL=$URL1 AWOOOP_KEY=$OP1 "$BIN" budget history --project acme --limit 3 >"$TMP/hist.txt"
  check "CLI history" "$(grep -c ' reserve \| settle \| release ' "$TMP/hist.txt")" 3
  # a process dies with streams open: its reservations are reaped within the lease
  activate acme budget default '{"period":"day","token_limit":100000000,"action_on_exceed":"block"}' "$OP1" "$OP2"
  for i in 1 2 3 4; do
    curl -sN -o /dev/null -H "Authorization: Bearer $W" -H 'Content-Type: application/json' \
      -d '{"model":"slow","stream":true,"max_tokens":40,"messages":[{"role":"user","content":"x"}]}' \
      "$URL2/v1/chat/completions" &
  done
  sleep 1
  U=$URL1 req GET /v1/projects/acme/budget "$OP1" ""
  check "the dying process holds reservations" "$(jbody '.reserved > 0')" true
  REAP0=$(jbody .ledger.reap.tokens)
  kill -KILL "$S2PID"
  T0=$(date +%s)
  for _ in $(seq 1 60); do
    U=$URL1 req GET /v1/projects/acme/budget "$OP1" ""
    [ "$(jbody .reserved)" = 0 ] && break
    sleep 0.25
  done
  echo "reservations of a SIGKILLed process reaped in $(( $(date +%s) - T0 )) s (lease 2 s)"
  check "reaped" "$(jbody ".ledger.reap.tokens > $REAP0")" true
  ledger_ok "after the crash"
  URL=$URL1 # the survivor
fi

# --- other wire kinds: Anthropic's Messages API and Azure OpenAI upstreams,
# and the Anthropic-compatible POST /v1/messages on the way in
req POST /v1/projects "$ADMIN" '{"id":"wire"}'; expect "project wire" 201
WOP1=$(mkkey wire op1 operator); WOP2=$(mkkey wire op2 operator); WW=$(mkkey wire w1 worker)
activate wire policy_routing default \
  '{"routes":[{"name":"claude","match":{"task":"claude"},"candidates":[{"provider":"anthropic","model":"claude-x;cachew=2;cacher=3"}]},
    {"name":"azure","match":{"task":"azure"},"candidates":[{"provider":"azure_openai","model":"dep-1"}]},
    {"name":"gpt","match":{"task":"gpt"},"candidates":[{"provider":"openai","model":"gpt-x"}]},
    {"name":"over","match":{"task":"over"},"candidates":[{"provider":"anthropic","model":"claude-y;status=529"},{"provider":"openai","model":"gpt-x"}]}]}' "$WOP1" "$WOP2"
activate wire budget default '{"period":"day","token_limit":1000000,"action_on_exceed":"block"}' "$WOP1" "$WOP2"
req POST /v1/chat/completions "$WW" '{"model":"claude","messages":[{"role":"user","content":"hello"}]}'
expect "chat to an Anthropic upstream" 200
check "anthropic answered" "$(jbody '.choices[0].message.content' | cut -d: -f1)" K
check "anthropic usage, cache parts included" "$(jbody .usage.prompt_tokens),$(jbody .usage.prompt_tokens_details.cached_tokens)" 8,3
check "anthropic upstream model said" "$(hdr x-awooop-upstream-model)" "claude-x;cachew=2;cacher=3"
req POST /v1/chat/completions "$WW" '{"model":"azure","messages":[{"role":"user","content":"hello"}]}'
expect "chat to an Azure deployment" 200
check "azure answered" "$(jbody '.choices[0].message.content' | cut -d: -f1)" Z
check "azure deployment in the path" "$(curl -s "http://127.0.0.1:$PZ/stats" | jq -r .last_model)" dep-1
MSG='{"model":"claude","max_tokens":50,"system":"Be brief","messages":[{"role":"user","content":"hello"}]}'
req POST /v1/messages "" "$MSG" -H "x-api-key: $WW"; expect "messages (x-api-key)" 200
check "message type" "$(jbody .type),$(jbody .role),$(jbody .model)" message,assistant,claude
check "message text" "$(jbody '.content[0].text' | cut -d: -f1)" K
check "message usage: input apart from the cache" \
  "$(jbody '[.usage.input_tokens, .usage.cache_creation_input_tokens, .usage.cache_read_input_tokens, .usage.output_tokens] | join(",")')" 5,2,3,8
check "message stop_reason" "$(jbody .stop_reason)" end_turn
check "messages route said" "$(hdr x-awooop-route)" claude
req POST /v1/messages "$WW" '{"model":"over","max_tokens":50,"messages":[{"role":"user","content":"hello"}]}'
expect "messages failed over to OpenAI" 200
check "failover keeps the client's format" "$(jbody .type),$(jbody '.content[0].text' | cut -d: -f1)" message,A
req POST /v1/messages "$WW" '{"model":"claude","messages":[{"role":"user","content":"x"}]}'
expect "messages without max_tokens" 400 E-REQ-005
check "anthropic error: type" "$(jbody .error.type)" invalid_request_error
check "anthropic error: code" "$(jbody .error.code)" E-REQ-005
req POST /v1/messages "$WW" '{"model":"claude","max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}'
expect "server tools unpriced" 400 E-BUDGET-005
req POST /v1/messages "$WW" '{"model":"nope","max_tokens":5,"messages":[{"role":"user","content":"x"}]}'
expect "messages: no route" 404 E-LLM-002
check "anthropic not_found_error" "$(jbody .error.type)" not_found_error
req POST /v1/messages "" "$MSG" -H "x-api-key: nope"; expect "messages: bad key" 401
check "anthropic authentication_error" "$(jbody .error.type)" authentication_error
curl -sN -H "x-api-key: $WW" -H 'Content-Type: application/json' \
  -d '{"model":"claude","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}' \
  "$URL/v1/messages" >"$TMP/msse"
check "messages stream: the events in order" \
  "$(sed -n 's/^event: //p' "$TMP/msse" | uniq -c | awk '{printf "%s%s*%s", (NR>1?",":""), $2, $1}')" \
  "message_start*1,content_block_start*1,content_block_delta*8,content_block_stop*1,message_delta*1,message_stop*1"
check "messages stream: usage in message_delta" \
  "$(grep '"message_delta"' "$TMP/msse" | sed 's/^data: //' | jq -r '[.usage.input_tokens, .usage.cache_read_input_tokens, .usage.output_tokens] | join(",")')" 2,3,8
# the official clients, unmodified: openai (to an Anthropic and an Azure
# upstream) and @anthropic-ai/sdk (to an Anthropic, an OpenAI and an Azure upstream)
OUT=$(node "$NPMDIR/$OCLIENT" "$URL" "$WW" claude 2>"$TMP/node.err")
check "openai client to anthropic ran" $? 0
[ -s "$TMP/node.err" ] && cat "$TMP/node.err" >&2
check "openai->anthropic plain" "$(jo .plain.content | cut -d: -f1)" K
check "openai->anthropic stream" "$(jo .stream.text | wc -w),$(jo .stream.usage.completion_tokens)" 9,8
check "openai->anthropic tools" "$(jo .tools.finish)" tool_calls
check "openai->anthropic responses" "$(jo '[(.responses.text | split(":")[0]), (.responses.stream.text | split(" ") | length), .responses.call.name, (.responses.after | join("+"))] | join(",")')" K,9,weather,message
check "openai->anthropic embeddings refused" "$(jo .embeddings.status),$(jo .embeddings.code)" 400,E-LLM-010
OUT=$(node "$NPMDIR/$OCLIENT" "$URL" "$WW" azure 2>"$TMP/node.err")
check "openai client to azure ran" $? 0
check "openai->azure plain, stream" "$(jo .plain.content | cut -d: -f1),$(jo .stream.text | wc -w)" Z,9
check "openai->azure embeddings" "$(jo .embeddings.n),$(jo .embeddings.usage.prompt_tokens)" 2,4
req POST /v1/embeddings "$WW" '{"model":"gpt","input":"hello","dimensions":4}'; expect "embeddings" 200
check "embeddings answer" "$(jbody '[.object, (.data | length), (.data[0].embedding | length), .usage.prompt_tokens] | join(",")')" list,1,4,2
req POST /v1/embeddings "$WW" '{"model":"gpt","input":"hello","stream":true}'; expect "embeddings: unknown field" 400 E-REQ-004
check "embeddings error: openai error object" "$(jbody .error.code)" E-REQ-004
ANPM=${AWOOOP_NPM_CACHE:-$HOME/.cache/awooop-npm}/anthropic
if [ ! -d "$ANPM/node_modules/@anthropic-ai/sdk" ]; then
  mkdir -p "$ANPM"
  (cd "$ANPM" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund @anthropic-ai/sdk@0 >/dev/null 2>"$TMP/npm.log") \
    || { cat "$TMP/npm.log" >&2; bad "npm install @anthropic-ai/sdk"; }
fi
cp "$(dirname "$0")/anthropic_client.mjs" "$ANPM/$ACLIENT"
for route in claude gpt azure; do
  OUT=$(node "$ANPM/$ACLIENT" "$URL" "$WW" $route 2>"$TMP/node.err")
  check "anthropic client ($route) ran" $? 0
  [ -s "$TMP/node.err" ] && cat "$TMP/node.err" >&2
  want=$(case $route in claude) echo K ;; gpt) echo A ;; *) echo Z ;; esac)
  check "anthropic sdk ($route) plain" "$(jo .plain.type),$(jo .plain.model),$(jo .plain.text | cut -d: -f1),$(jo .plain.stop)" "message,$route,$want,end_turn"
  check "anthropic sdk ($route) stream" "$(jo .stream.text | wc -w),$(jo .stream.final | cut -d: -f1),$(jo .stream.stop),$(jo .stream.usage.output_tokens)" "9,$want,end_turn,8"
  check "anthropic sdk ($route) tools" "$(jo .tools.stop),$(jo .tools.name),$(jo .tools.input.city)" tool_use,weather,Oslo
  # (the OpenAI fake streams text even when tools are offered)
  [ $route = claude ] && check "anthropic sdk ($route) tool stream" "$(jo .toolStream.stop),$(jo .toolStream.input.city)" tool_use,Oslo
  check "anthropic sdk ($route) error" "$(jo .error.status),$(jo .error.type),$(jo .error.code),$(jo .error.notFound)" 404,not_found_error,E-LLM-002,true
done
check "anthropic sdk: the tool result answered" "$(node "$ANPM/$ACLIENT" "$URL" "$WW" claude 2>/dev/null | jq -r '.tools.after.stop')" end_turn
check "anthropic upstream: the key as x-api-key" "$(curl -s "http://127.0.0.1:$PK/stats" | jq '.auth_bad')" 0
check "azure upstream: the key as api-key" "$(curl -s "http://127.0.0.1:$PZ/stats" | jq '.auth_bad')" 0
for _ in $(seq 1 40); do
  req GET /v1/projects/wire/budget "$WOP1" ""
  [ "$(jbody .reserved)" = 0 ] && break
  sleep 0.25
done
check "wire budget: nothing left reserved" "$(jbody .reserved)" 0
check "wire budget: settled" "$(jbody '.settled > 0')" true
req GET "/v1/projects/wire/audit?limit=500" "$WOP1" ""
check "audit records name the front door" \
  "$(jbody '[.items[] | select(.action == "llm.call") | .payload.api] | unique | join(",")')" \
  chat.completions,embeddings,messages,responses

# --- the canary: reached the upstream, and nothing else
check "canary reached the upstream" "$(curl -s "http://127.0.0.1:$PA/stats" | jq '.auth_bad')" 0
check "canary in no answer" "$(grep -c "$CANARY" "$TMP/responses" "$TMP/sse")" "$(printf '%s:0\n%s:0' "$TMP/responses" "$TMP/sse")"
check "canary in no log line" "$(cat "$TMP"/s*.log | grep -c "$CANARY")" 0
req GET "/v1/projects/acme/audit?limit=500" "$OP1" ""
check "llm.call audit records" "$(jbody '[.items[] | select(.action == "llm.call")] | length > 5')" true
check "canary in no audit record" "$(grep -c "$CANARY" "$TMP/body")" 0
check "no prompt in audit" "$(grep -c summarise "$TMP/body")" 0

aw_openapi_verdict
echo "llm_test ($BACKEND): $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
