#!/usr/bin/env bash
# OpenTelemetry traces end to end: a real `awooop serve` with the fake LLM
# upstream (tests/support/fake_llm.c) and the MCP double (fake_mcp.c) exports
# to tests/otel/receiver.mjs, which decodes every request with the
# OpenTelemetry JS packages from npm (pinned, installed here into a cache).
# Checked: the spans of a chat call, a failed one, a tool call, a refused
# one and a run (llm and tool steps) - names, kinds, GenAI and HTTP
# attributes, the caller's trace id, the parent links, the upstream's
# traceparent naming the LLM span; an unsampled trace exports nothing; no
# prompt, completion, tool argument or result anywhere in what was sent; the
# headers and resource from the OTEL_* variables; a 503 retried; the
# metrics. Then a dead receiver (it accepts and never answers): the calls'
# p50 stays within noise of a server that exports nothing, the spans that
# found the queue full are counted, and the server still stops promptly.
#   otel_test.sh AWOOOP_BINARY FAKE_LLM_BINARY FAKE_MCP_BINARY
set -uo pipefail
BIN=$1
FAKE_LLM=$2
FAKE_MCP=$3
. "$(dirname "$0")/../http/lib.sh"

# --- the receiver and its packages (pinned: a new release is a deliberate change)
PKGS="@opentelemetry/otlp-transformer@0.301.2 @opentelemetry/resources@3.1.1 @opentelemetry/api@1.10.0"
NM=${AWOOOP_NPM_CACHE:-$HOME/.cache/awooop-npm}/otel
if [ "$(cat "$NM/.pinned" 2>/dev/null)" != "$PKGS" ]; then
  rm -rf "$NM" && mkdir -p "$NM"
  # shellcheck disable=SC2086
  (cd "$NM" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund $PKGS \
    >/dev/null 2>"$TMP/npm.log") || { cat "$TMP/npm.log" >&2; echo "npm install failed" >&2; exit 1; }
  echo "$PKGS" >"$NM/.pinned"
fi
cp "$(dirname "$0")/receiver.mjs" "$NM/receiver.mjs"
mkdir -p "$TMP/rx"
node "$NM/receiver.mjs" "$TMP/rx" --fail-first 1 >"$TMP/rx.out" 2>"$TMP/rx.err" &
PIDS+=($!)
for _ in $(seq 1 100); do RP=$(sed -n 's/^port //p' "$TMP/rx.out"); [ -n "$RP" ] && break; sleep 0.1; done
[ -n "$RP" ] || { echo "the receiver did not start" >&2; cat "$TMP/rx.err" >&2; exit 1; }

# --- the fakes: an LLM upstream whose completions say COMPLX7, an MCP server
"$FAKE_LLM" --name COMPLX7 >"$TMP/fake-llm" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do FP=$(sed -n 's/^port //p' "$TMP/fake-llm"); [ -n "$FP" ] && break; sleep 0.1; done
[ -n "$FP" ] || { echo "the fake LLM did not start" >&2; cat "$TMP/fake-llm" >&2; exit 1; }
"$FAKE_MCP" --http 0 >"$TMP/fake-mcp" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do MP=$(head -1 "$TMP/fake-mcp"); [ -n "$MP" ] && break; sleep 0.1; done
[ -n "$MP" ] || { echo "the MCP double did not start" >&2; cat "$TMP/fake-mcp" >&2; exit 1; }
cat >"$TMP/llm.json" <<JSON
{"providers": {"openai": {"url": "http://127.0.0.1:$FP/v1", "api": "openai"}}}
JSON

aw_db sqlite
export OTEL_SERVICE_NAME=awooop-otel-test
export OTEL_RESOURCE_ATTRIBUTES="deployment.environment.name=otel%20test"
export OTEL_EXPORTER_OTLP_HEADERS="x-test-token=tok%2Cen%20one"
export OTEL_BSP_SCHEDULE_DELAY=100
aw_serve --llm-config "$TMP/llm.json" --egress-allow-private acme --otlp-endpoint "http://127.0.0.1:$RP/"
unset OTEL_SERVICE_NAME OTEL_RESOURCE_ATTRIBUTES OTEL_EXPORTER_OTLP_HEADERS
check "the server says where it exports (no header value)" \
  "$(grep '"trace export on' "$TMP/server.log" | jq -r '[(.endpoint | sub(".*:"; "")), .headers] | join(" ")')" \
  "$RP/v1/traces 1"
check "no header value in the log" "$(grep -c 'tok,en' "$TMP/server.log")" 0

req POST /v1/projects "$ADMIN" '{"id":"acme"}'; expect "project" 201
OP1=$(mkkey acme op1 operator); OP2=$(mkkey acme op2 operator); W=$(mkkey acme w1 worker)
check "routing" "$(aw_activate acme policy_routing '{"routes":[
  {"name":"chat","match":{"task":"chat"},"candidates":[{"provider":"openai","model":"gpt-x"}]},
  {"name":"bad","match":{"task":"bad"},"candidates":[{"provider":"openai","model":"b;status=400"}]}]}' "$OP1" "$OP2")" true
check "tools" "$(aw_activate acme mcp_tool "{\"upstreams\":{\"web\":{\"transport\":\"http\",\"url\":\"http://127.0.0.1:$MP/mcp\"}},
  \"tools\":[{\"name\":\"echo\",\"provider\":\"web\",\"mode\":\"read_only\"}]}" "$OP1" "$OP2")" true

PROMPT=PRMPTX7$RANDOM
T1=4bf92f3577b34da6a3ce929d0e0e4736; P1=00f067aa0ba902b7
T2=5cf92f3577b34da6a3ce929d0e0e4737; P2=11f067aa0ba902b8
T3=6df92f3577b34da6a3ce929d0e0e4738; P3=22f067aa0ba902b9
T4=7ef92f3577b34da6a3ce929d0e0e4739; P4=33f067aa0ba902ba
T5=8ff92f3577b34da6a3ce929d0e0e473a; P5=44f067aa0ba902bb
T6=9af92f3577b34da6a3ce929d0e0e473b; P6=55f067aa0ba902bc
hdr() { tr -d '\r' <"$TMP/hdr" | awk -F': ' -v h="$1" 'tolower($1) == h { print $2 }'; }

# a chat call, continuing the caller's trace
req POST /v1/chat/completions "$W" "{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"$PROMPT\"}]}" \
  -H "traceparent: 00-$T1-$P1-01"
expect "chat" 200
check "answered by the fake" "$(jbody '.choices[0].message.content' | cut -d: -f1)" COMPLX7
CHAT_SPAN=$(hdr traceparent | cut -d- -f3)
USAGE=$(jbody '[.usage.prompt_tokens, .usage.completion_tokens] | join(" ")')
UP_TP=$(curl -s "http://127.0.0.1:$FP/stats" | jq -r .last_traceparent)
# a call the upstream refuses
req POST /v1/chat/completions "$W" "{\"model\":\"bad\",\"messages\":[{\"role\":\"user\",\"content\":\"$PROMPT\"}]}" \
  -H "traceparent: 00-$T5-$P5-01"
check "a failed call fails" "$([ "$STATUS" -ge 400 ] && echo yes)" yes
# a model no route takes
req POST /v1/chat/completions "$W" "{\"model\":\"nosuchmodelX7\",\"messages\":[{\"role\":\"user\",\"content\":\"$PROMPT\"}]}" \
  -H "traceparent: 00-$T6-$P6-01"
expect "unknown model" 404
# a tool call and a refused one (stateless MCP)
M=/v1/projects/acme/mcp
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}'
H=(-H "MCP-Protocol-Version: 2026-07-28" -H "Mcp-Method: tools/call")
req POST $M "$W" "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo__web\",\"arguments\":{\"text\":\"ARGX7$PROMPT\"},$META}}" \
  "${H[@]}" -H "Mcp-Name: echo__web" -H "traceparent: 00-$T2-$P2-01"
expect "tool call" 200 '.result.content[0].text' "ARGX7$PROMPT"
req POST $M "$W" "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"nosuchtoolX7\",\"arguments\":{},$META}}" \
  "${H[@]}" -H "Mcp-Name: nosuchtoolX7" -H "traceparent: 00-$T2-$P2-01"
check "unknown tool refused" "$(jbody .error.data.code)" E-MCP-GATE-002
# a run: an llm step, then a tool step
req POST /v1/platform/runs "$OP1" "{\"workflow\":[
  {\"kind\":\"llm\",\"args\":{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"$PROMPT\"}]}},
  {\"kind\":\"tool\",\"args\":{\"tool\":\"echo__web\",\"arguments\":{\"text\":\"ARGX7$PROMPT\"}}}]}" \
  -H "traceparent: 00-$T3-$P3-01"
expect "submit" 201
RID=$(jbody .run_id)
for _ in $(seq 1 100); do
  req GET "/v1/platform/runs/$RID" "$OP1" ""
  [ "$(jbody .state)" = succeeded ] && break
  sleep 0.1
done
check "run" "$(jbody .state)" succeeded
# a caller that samples nothing
req POST /v1/chat/completions "$W" "{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"$PROMPT\"}]}" \
  -H "traceparent: 00-$T4-$P4-00"
expect "unsampled chat" 200

# --- what arrived (the first export was refused 503 and retried)
S=$TMP/rx/spans.jsonl
want_spans() { # wait until trace $1 has at least $2 spans
  for _ in $(seq 1 100); do
    local n
    n=$(jq -s --arg t "$1" '[.[] | select(.traceId == $t)] | length' "$S" 2>/dev/null | head -1)
    [ "${n:-0}" -ge "$2" ] && return 0
    sleep 0.1
  done
  return 1
}
want_spans $T1 2; want_spans $T2 4; want_spans $T3 6; want_spans $T5 2; want_spans $T6 2
sp() { jq -s -r --arg t "$1" "[.[] | select(.traceId == \$t)] | $2" "$S"; }
check "the receiver found no problem" "$(cat "$TMP/rx/problems.jsonl" 2>/dev/null)" ""

# the chat call: the request's span under the caller's, the call's under it
check "chat: spans" "$(sp $T1 '[.[].name] | sort | join(",")')" "POST /v1/chat/completions,chat chat"
SRV=$(sp $T1 '.[] | select(.kind == "SERVER")')
LLM=$(sp $T1 '.[] | select(.kind == "CLIENT")')
j() { echo "$1" | jq -r "$2"; }
check "server span's parent: the caller's span" "$(j "$SRV" .parentSpanId)" $P1
check "the caller is remote" "$(j "$SRV" .remote)" true
check "server span: the id answered in traceparent" "$(j "$SRV" .spanId)" "$CHAT_SPAN"
check "server span: method" "$(j "$SRV" '.attributes."http.request.method"')" POST
check "server span: the route template" "$(j "$SRV" '.attributes."http.route"')" /v1/chat/completions
check "server span: status" "$(j "$SRV" '.attributes."http.response.status_code"')" 200
check "server span: project" "$(j "$SRV" '.attributes."awooop.project"')" acme
check "server span: not an error" "$(j "$SRV" .status)" UNSET
check "llm span's parent: the request's span" "$(j "$LLM" .parentSpanId)" "$CHAT_SPAN"
check "llm span: local parent" "$(j "$LLM" .remote)" false
check "the upstream's traceparent: the llm span" "$UP_TP" "00-$T1-$(j "$LLM" .spanId)-01"
check "gen_ai.operation.name" "$(j "$LLM" '.attributes."gen_ai.operation.name"')" chat
check "gen_ai.provider.name" "$(j "$LLM" '.attributes."gen_ai.provider.name"')" openai
check "gen_ai.system" "$(j "$LLM" '.attributes."gen_ai.system"')" openai
check "gen_ai.request.model" "$(j "$LLM" '.attributes."gen_ai.request.model"')" chat
check "gen_ai.response.model" "$(j "$LLM" '.attributes."gen_ai.response.model"')" gpt-x
check "gen_ai.usage: the tokens the answer said" \
  "$(j "$LLM" '[.attributes."gen_ai.usage.input_tokens", .attributes."gen_ai.usage.output_tokens"] | join(" ")')" "$USAGE"
check "awooop.route" "$(j "$LLM" '.attributes."awooop.route"')" chat
check "awooop.outcome" "$(j "$LLM" '.attributes."awooop.outcome"')" ok
check "llm span: project" "$(j "$LLM" '.attributes."awooop.project"')" acme
check "llm span inside the request's" \
  "$(jq -n --argjson s "$SRV" --argjson l "$LLM" '($l.start[0]*1e9+$l.start[1]) >= ($s.start[0]*1e9+$s.start[1]) and ($l.end[0]*1e9+$l.end[1]) <= ($s.end[0]*1e9+$s.end[1])')" true
check "resource: service.name" "$(j "$SRV" '.resource."service.name"')" awooop-otel-test
check "resource: service.version" "$(j "$SRV" '.resource."service.version"')" "$("$BIN" --version | awk '{print $2}')"
check "resource: host.name" "$(j "$SRV" '.resource."host.name"')" "$(hostname)"
check "resource: from OTEL_RESOURCE_ATTRIBUTES" "$(j "$SRV" '.resource."deployment.environment.name"')" "otel test"
check "scope" "$(j "$SRV" .scope.name)" awooop

# the failed call: an error, with its stable code
BAD=$(sp $T5 '.[] | select(.kind == "CLIENT")')
check "failed llm span: error status" "$(j "$BAD" .status)" ERROR
check "failed llm span: outcome" "$(j "$BAD" '.attributes."awooop.outcome" != "ok"')" true
check "failed llm span: error.type is a code" "$(j "$BAD" '.attributes."error.type" | startswith("E-")')" true

# the refused one: no route took the model, so its name stays out of the span's
UNK=$(sp $T6 '.[] | select(.kind == "CLIENT")')
check "refused llm span: named by the operation alone" "$(j "$UNK" .name)" chat
check "refused llm span: code" "$(j "$UNK" '[.attributes."error.type", .attributes."awooop.outcome", .status] | join(" ")')" "E-LLM-002 refused ERROR"
check "refused llm span: the model asked" "$(j "$UNK" '.attributes."gen_ai.request.model"')" nosuchmodelX7

# the tool calls
TOOL=$(sp $T2 '.[] | select(.name == "execute_tool echo__web")')
REF=$(sp $T2 '.[] | select(.name == "execute_tool")')
check "tool span: kind" "$(j "$TOOL" .kind)" INTERNAL
check "tool span: operation" "$(j "$TOOL" '.attributes."gen_ai.operation.name"')" execute_tool
check "tool span: tool" "$(j "$TOOL" '.attributes."gen_ai.tool.name"')" echo__web
check "tool span: outcome" "$(j "$TOOL" '.attributes."awooop.outcome"')" ok
check "tool span: under its request's" "$(sp $T2 "[.[] | select(.kind == \"SERVER\") | .spanId] | index(\"$(j "$TOOL" .parentSpanId)\") != null")" true
check "refused tool span: gate (1: the tool's visibility)" "$(j "$REF" '.attributes."awooop.gate"')" 1
check "refused tool span: code" "$(j "$REF" '.attributes."error.type"')" E-MCP-GATE-002
check "refused tool span: error" "$(j "$REF" .status)" ERROR
check "refused tool span: the client's name not repeated" "$(j "$REF" '.attributes."gen_ai.tool.name" // "none"')" none
check "server spans of MCP: the route template" "$(sp $T2 '[.[] | select(.kind == "SERVER") | .attributes."http.route"] | unique | join(",")')" "/v1/projects/{project}/mcp"

# the run: request -> run -> steps -> the calls each step made
RSRV=$(sp $T3 '.[] | select(.kind == "SERVER" and .attributes."http.route" == "/v1/platform/runs")')
RUN=$(sp $T3 '.[] | select(.name == "run")')
S1=$(sp $T3 '.[] | select(.name == "run.step llm")')
S2=$(sp $T3 '.[] | select(.name == "run.step tool")')
check "run span under the submit request's" "$(j "$RUN" .parentSpanId)" "$(j "$RSRV" .spanId)"
check "run span: run id" "$(j "$RUN" '.attributes."awooop.run.id"')" "$RID"
check "step spans under the run's" "$(j "$S1" .parentSpanId) $(j "$S2" .parentSpanId)" "$(j "$RUN" .spanId) $(j "$RUN" .spanId)"
check "step span: run id" "$(j "$S1" '.attributes."awooop.run.id"')" "$RID"
check "step span: number and kind" "$(j "$S2" '[.attributes."awooop.run.step", .attributes."awooop.step.kind"] | join(" ")')" "2 tool"
check "step span: outcome" "$(j "$S1" '.attributes."awooop.outcome"')" ok
check "the step's llm call under its step" "$(sp $T3 '.[] | select(.kind == "CLIENT") | .parentSpanId')" "$(j "$S1" .spanId)"
check "the step's tool call under its step" "$(sp $T3 '.[] | select(.name == "execute_tool echo__web") | .parentSpanId')" "$(j "$S2" .spanId)"
check "the step's llm call: run id" "$(sp $T3 '.[] | select(.kind == "CLIENT") | .attributes."awooop.run.id"')" "$RID"

# nothing of an unsampled trace; nothing of what was said
sleep 0.5
check "unsampled: nothing exported" "$(sp $T4 'length')" 0
check "no prompt in any export" "$(grep -c "$PROMPT" "$TMP/rx/raw.jsonl")" 0
check "no completion in any export" "$(grep -c COMPLX7 "$TMP/rx/raw.jsonl")" 0
check "no tool argument or result in any export" "$(grep -c ARGX7 "$TMP/rx/raw.jsonl")" 0
check "no prompt anywhere in a span (decoded)" "$(grep -c "$PROMPT\|COMPLX7\|ARGX7" "$S")" 0
check "headers from OTEL_EXPORTER_OTLP_HEADERS, decoded" "$(jq -r .token "$TMP/rx/headers.jsonl" | sort -u)" "tok,en one"
check "the refused export was retried" "$(wc -l <"$TMP/rx/refused.jsonl")" 1
MET=$(curl -s -H "Authorization: Bearer $ADMIN" "$URL/metrics")
check "exports retried, counted" "$(echo "$MET" | awk '/^awooop_otel_exports_total\{outcome="retry"\}/ {print ($2 >= 1)}')" 1
check "spans exported, counted" "$(echo "$MET" | awk '/^awooop_otel_spans_exported_total/ {print ($2 >= 15)}')" 1
check "the exporter's loop ticks" "$(echo "$MET" | grep -c '^awooop_loop_last_tick_seconds{loop="otel_exporter"}')" 1
check "nothing dropped" "$(echo "$MET" | grep -c '^awooop_otel_spans_dropped_total')" 0
kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null

# --- over HTTPS: the receiver's CA from OTEL_EXPORTER_OTLP_CERTIFICATE
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$TMP/rx.key" -out "$TMP/rx.crt" >/dev/null 2>&1
mkdir -p "$TMP/rxs"
node "$NM/receiver.mjs" "$TMP/rxs" --tls "$TMP/rx.key" "$TMP/rx.crt" >"$TMP/rxs.out" 2>"$TMP/rxs.err" &
PIDS+=($!)
for _ in $(seq 1 100); do RPS=$(sed -n 's/^port //p' "$TMP/rxs.out"); [ -n "$RPS" ] && break; sleep 0.1; done
OTEL_EXPORTER_OTLP_CERTIFICATE=$TMP/rx.crt aw_serve --llm-config "$TMP/llm.json" --otlp-endpoint "https://127.0.0.1:$RPS"
T7=aaf92f3577b34da6a3ce929d0e0e473c
req POST /v1/chat/completions "$W" '{"model":"chat","messages":[{"role":"user","content":"hi"}]}' \
  -H "traceparent: 00-$T7-66f067aa0ba902bd-01"
expect "chat (https export)" 200
S=$TMP/rxs/spans.jsonl
want_spans $T7 2
check "spans over HTTPS, the receiver's CA trusted" "$(sp $T7 '[.[].name] | sort | join(",")')" "POST /v1/chat/completions,chat chat"
check "no problem over HTTPS" "$(cat "$TMP/rxs/problems.jsonl" 2>/dev/null)" ""
kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null

# --- a dead receiver: it accepts connections and never answers
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True); time.sleep(600)' >"$TMP/hole" &
PIDS+=($!)
for _ in $(seq 1 50); do HP=$(head -1 "$TMP/hole"); [ -n "$HP" ] && break; sleep 0.1; done
CHAT='{"model":"chat","messages":[{"role":"user","content":"hi"}]}'
p50() { # p50 of 40 chat calls, in ms
  for _ in $(seq 1 40); do
    curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $W" -H 'Content-Type: application/json' \
      -d "$CHAT" "$URL/v1/chat/completions"
  done | sort -n | awk '{a[NR] = $1} END {printf "%d\n", a[int((NR + 1) / 2)] * 1000000}'
}
aw_serve --llm-config "$TMP/llm.json"
P_OFF=$(p50)
kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null
export OTEL_BSP_MAX_QUEUE_SIZE=16 OTEL_BSP_MAX_EXPORT_BATCH_SIZE=8 OTEL_BSP_SCHEDULE_DELAY=20 \
  OTEL_EXPORTER_OTLP_TIMEOUT=3000
LOG0=$(wc -l <"$TMP/server.log")
aw_serve --llm-config "$TMP/llm.json" --otlp-endpoint "http://127.0.0.1:$HP"
P_DEAD=$(p50)
echo "p50 of a chat call: ${P_OFF} us without export, ${P_DEAD} us exporting to a dead receiver"
check "a dead receiver slows no call (p50 within 2x + 10 ms)" \
  "$([ "$P_DEAD" -le $((2 * P_OFF + 10000)) ] && echo yes)" yes
MET=$(curl -s -H "Authorization: Bearer $ADMIN" "$URL/metrics")
# (one project's spans: its share of the queue, half, is full first)
check "spans that found the queue full are counted" \
  "$(echo "$MET" | awk '/^awooop_otel_spans_dropped_total\{reason="(queue_full|project_share)"\}/ {n += $2} END {print (n > 0)}')" 1
T0=$(date +%s%N)
kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null
RC=$?
STOP_MS=$((($(date +%s%N) - T0) / 1000000))
echo "stopped in $STOP_MS ms with the receiver dead"
check "stops promptly with the receiver dead (the last try is bounded)" "$([ "$STOP_MS" -lt 15000 ] && echo yes)" yes
check "exits 0 on SIGTERM with the receiver dead" "$RC" 0
check "said why the spans were lost, once" "$(tail -n +"$((LOG0 + 1))" "$TMP/server.log" | grep -c 'trace export failed')" 1

aw_done otel_test
