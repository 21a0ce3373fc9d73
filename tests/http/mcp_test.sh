#!/usr/bin/env bash
# Black-box test of the MCP gateway's HTTP front door against a real
# `awooop serve` and the MCP double (tests/support/fake_mcp.c) on loopback:
# gate 1 as JSON-RPC errors, publish pinning through the API, a legacy
# session (initialize, Mcp-Session-Id, DELETE), the stateless 2026-07-28
# protocol (server/discover, MCP-Protocol-Version / Mcp-Method / Mcp-Name
# checked against the body), the session's GET stream (405 without a
# session), answers as a stream when asked first, Origin checked (DNS
# rebinding), two tenants isolated, the
# audit trail, and credential canaries searched in every answer and log line.
#   mcp_test.sh AWOOOP_BINARY FAKE_MCP_BINARY sqlite|postgres
set -uo pipefail
BIN=$1
FAKE=$2
BACKEND=$3
. "$(dirname "$0")/lib.sh"
CANARY="canary-mcp-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export AWOOOP_T_ACME__TOKEN=$CANARY

"$FAKE" --http 0 >"$TMP/fake" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do FPORT=$(head -1 "$TMP/fake"); [ -n "$FPORT" ] && break; sleep 0.1; done
aw_db "$BACKEND"
aw_serve --mcp-stdio-allow "$FAKE" --egress-allow-private acme,beta

for p in acme beta gamma; do req POST /v1/projects "$ADMIN" "{\"id\":\"$p\"}"; expect "project $p" 201; done
OP1=$(mkkey acme op1 operator); OP2=$(mkkey acme op2 operator); W=$(mkkey acme w1 worker)
BOP1=$(mkkey beta op1 operator); BOP2=$(mkkey beta op2 operator); BW=$(mkkey beta w1 worker)
RD=$(mkkey acme r1 reader)

BODY="{\"upstreams\":{
  \"web\":{\"transport\":\"http\",\"url\":\"http://127.0.0.1:$FPORT/mcp\",
           \"headers\":{\"X-Key\":{\"secret\":\"env:TOKEN\"}}},
  \"local\":{\"transport\":\"stdio\",\"command\":[\"$FAKE\"]}},
  \"tools\":[{\"name\":\"echo\",\"provider\":\"web\",\"mode\":\"read_only\"},
             {\"name\":\"headers\",\"provider\":\"web\",\"mode\":\"read_only\"},
             {\"name\":\"slow\",\"provider\":\"web\",\"mode\":\"read_only\"},
             {\"name\":\"echo\",\"provider\":\"local\",\"mode\":\"read_only\"}]}"
base=/v1/projects/acme/contracts/mcp_tool/default/revisions
req POST "$base" "$OP1" "{\"body\": $BODY}"; expect "draft" 201; REV=$(jbody .revision_id)
check "no pin in the draft" "$(jbody '.body.tools[0].pin // "none"')" none
req POST "$base/$REV/publish" "$OP1" ""; expect "publish pins" 200
check "pinned (the whole definition)" "$(jbody '[.body.tools[].pin | startswith("sha256v2:")] | all')" true
req POST "$base/$REV/approve" "$OP2" ""; expect "approve" 201
req POST "$base/$REV/activate" "$OP1" ""; expect "activate" 200
# beta: an upstream that does not offer the tool: publish refused
BBODY="{\"upstreams\":{\"web\":{\"transport\":\"http\",\"url\":\"http://127.0.0.1:$FPORT/mcp\"}},
  \"tools\":[{\"name\":\"nosuch\",\"provider\":\"web\",\"mode\":\"read_only\"}]}"
req POST /v1/projects/beta/contracts/mcp_tool/default/revisions "$BOP1" "{\"body\": $BBODY}"
BREV=$(jbody .revision_id)
req POST "/v1/projects/beta/contracts/mcp_tool/default/revisions/$BREV/publish" "$BOP1" ""
expect "publish of a tool the upstream lacks" 400 .code E-MCP-001
# a URL within the schema's 2048 characters whose bytes (2 a character) do
# not fit the upstream's buffer: refused whole, never cut to another URL
LONGQ=$(printf '\xc3\xa9%.0s' $(seq 1 1900))
LBODY="{\"upstreams\":{\"web\":{\"transport\":\"http\",\"url\":\"http://127.0.0.1:$FPORT/mcp?q=$LONGQ\"}},
  \"tools\":[{\"name\":\"echo\",\"provider\":\"web\",\"mode\":\"read_only\"}]}"
req POST /v1/projects/beta/contracts/mcp_tool/default/revisions "$BOP1" "{\"body\": $LBODY}"
expect "a draft whose URL is 1,930 characters, 3,830 bytes" 201
LREV=$(jbody .revision_id)
req POST "/v1/projects/beta/contracts/mcp_tool/default/revisions/$LREV/publish" "$BOP1" ""
expect "its publish: the URL refused whole, not cut" 422 .code E-CONTRACT-001
check "the answer says the URL is too long" "$(jbody .detail | grep -c 'url is at most')" 1
# gamma: no operator grant of private egress. A contract cannot grant it
# (the field is gone: the schema refuses it), and publish never reaches the
# loopback upstream (refused at connect, the same answer open port or not)
GOP1=$(mkkey gamma op1 operator)
GBODY="{\"upstreams\":{\"web\":{\"transport\":\"http\",\"url\":\"http://127.0.0.1:$FPORT/mcp\"}},
  \"tools\":[{\"name\":\"echo\",\"provider\":\"web\",\"mode\":\"read_only\"}]}"
gbase=/v1/projects/gamma/contracts/mcp_tool/default/revisions
req POST "$gbase" "$GOP1" "{\"body\": $(jq -c '. + {allow_private_network: true}' <<<"$GBODY")}"
expect "a contract granting itself private egress" 422 .code E-CONTRACT-001
req POST "$gbase" "$GOP1" "{\"body\": $GBODY}"; expect "gamma draft" 201; GREV=$(jbody .revision_id)
req POST "$gbase/$GREV/publish" "$GOP1" ""
expect "publish to a loopback upstream without the grant" 502 .code E-MCP-GATE-009
check "refused by the egress policy" "$(jbody .detail | grep -c 'loopback or private')" 1
req POST "$gbase" "$GOP1" "{\"body\": ${GBODY//127.0.0.1:$FPORT/127.0.0.1:1}}"; GREV=$(jbody .revision_id)
req POST "$gbase/$GREV/publish" "$GOP1" ""
expect "a closed loopback port answers the same" 502 .code E-MCP-GATE-009
check "same refusal for a closed port" "$(jbody .detail | grep -c 'loopback or private')" 1

M=/v1/projects/acme/mcp
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
# --- gate 1
req POST $M "" "$INIT"; expect "no key" 401 .error.data.code E-MCP-GATE-001
check "json-rpc" "$(jbody .jsonrpc)" "2.0"
req POST $M "awk_unknownunknownunknownunknownunknownunknow" "$INIT"; expect "unknown key" 401 .error.data.code E-MCP-GATE-001
req POST $M "$BW" "$INIT"; expect "another project's key" 403 .error.data.code E-MCP-GATE-001
req POST $M "$RD" "$INIT"; expect "reader key" 403 .error.data.code E-MCP-GATE-001
# --- legacy session
req POST $M "$W" "$INIT"; expect "initialize" 200 .result.protocolVersion 2025-11-25
SID=$(grep -i '^mcp-session-id:' "$TMP/hdr" | tr -d '\r' | awk '{print $2}')
check "session id" "$([ ${#SID} -ge 20 ] && echo yes)" yes
req POST $M "$W" '{"jsonrpc":"2.0","method":"notifications/initialized"}' -H "Mcp-Session-Id: $SID"
check "notification" "$STATUS" 202
req POST $M "$W" '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' -H "Mcp-Session-Id: $SID"
expect "tools/list" 200 '.result.tools | map(.name) | sort | join(",")' "echo__local,echo__web,headers__web,slow__web"
req POST $M "$W" '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo__web","arguments":{"text":"hi"}}}' -H "Mcp-Session-Id: $SID"
expect "tools/call" 200 '.result.content[0].text' hi
req POST $M "$W" '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"headers__web"}}' -H "Mcp-Session-Id: $SID"
check "credential scrubbed" "$(jbody '.result.content[0].text' | grep -c 'REDACTED:credential')" 1
# cancellation: a 3 s call given up when its session says so
t0=$(date +%s%N)
curl -s -X POST "$URL$M" -H "Authorization: Bearer $W" -H 'Content-Type: application/json' \
  -H 'Accept: application/json, text/event-stream' -H "Mcp-Session-Id: $SID" \
  -d '{"jsonrpc":"2.0","id":"slow-1","method":"tools/call","params":{"name":"slow__web","arguments":{"ms":3000}}}' \
  >"$TMP/slow.out" &
SLOW=$!
sleep 0.5
req POST $M "$W" '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow-1"}}' -H "Mcp-Session-Id: $SID"
check "cancel notification" "$STATUS" 202
wait "$SLOW"
check "cancelled call answered E-MCP-004" "$(jq -r .error.data.code "$TMP/slow.out")" E-MCP-004
check "cancelled call answered at once" "$([ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 2000 ] && echo yes)" yes
req POST $M "$W" '{"jsonrpc":"2.0","id":5,"method":"tools/list"}'; expect "no session" 400 .error.data.code E-MCP-002
req POST $M "$W" '{"jsonrpc":"2.0","id":5,"method":"tools/list"}' -H "Mcp-Session-Id: nope"
expect "unknown session" 404 .error.data.code E-MCP-002
req POST $M "$OP1" '{"jsonrpc":"2.0","id":5,"method":"tools/list"}' -H "Mcp-Session-Id: $SID"
expect "another key's session" 404 .error.data.code E-MCP-002
req GET $M "$W" ""; expect "GET without a session" 405
# the session's own event stream (resource updates): open, its first bytes
STATUS=$(curl -s -N --max-time 1 -o "$TMP/get.out" -w '%{http_code}' -H "Authorization: Bearer $W" \
  -H 'Accept: text/event-stream' -H "Mcp-Session-Id: $SID" "$URL$M")
check "GET opens the session's stream" "$STATUS $(head -c 24 "$TMP/get.out")" "200 : awooop session stream"
req GET $M "$OP1" "" -H 'Accept: text/event-stream' -H "Mcp-Session-Id: $SID"
expect "GET of another key's session" 404 .error.data.code E-MCP-002
# a client that lists text/event-stream first gets its answer as a stream
req POST $M "$W" '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo__web","arguments":{"text":"sse"}}}' \
  -H "Mcp-Session-Id: $SID" -H 'Accept: text/event-stream, application/json'
check "answer as a stream" "$STATUS $(grep -ic '^content-type: text/event-stream' "$TMP/hdr")" "200 1"
check "the answer is the stream's event" "$(sed -n 's/^data: //p' "$TMP/body" | jq -r '.result.content[0].text')" sse
# DNS rebinding: a browser page of another origin is refused, loopback allowed
req POST $M "$W" "$INIT" -H 'Origin: http://evil.example.com'
expect "another site's Origin" 403 .error.data.code E-MCP-005
req POST $M "$W" "$INIT" -H 'Origin: http://localhost:5173'; expect "a loopback Origin" 200
req DELETE $M "$W" "" -H "Mcp-Session-Id: $SID"; check "DELETE" "$STATUS" 204
req POST $M "$W" '{"jsonrpc":"2.0","id":6,"method":"tools/list"}' -H "Mcp-Session-Id: $SID"
expect "ended session" 404 .error.data.code E-MCP-002
req POST $M "$W" '[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]'; expect "batch" 400 .error.code -32600
req POST $M "$W" '{"jsonrpc":"2.0","id":1,'; expect "not JSON" 400 .error.code -32700

# --- stateless 2026-07-28
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}'
H=(-H "MCP-Protocol-Version: 2026-07-28")
req POST $M "$W" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{$META}}" "${H[@]}" -H "Mcp-Method: server/discover"
expect "discover" 200 '.result.supportedVersions[0]' 2026-07-28
check "resultType" "$(jbody .result.resultType)" complete
CALL="{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo__local\",\"arguments\":{\"text\":\"stateless\"},$META}}"
req POST $M "$W" "$CALL" "${H[@]}" -H "Mcp-Method: tools/call" -H "Mcp-Name: echo__local"
expect "stateless call" 200 '.result.content[0].text' stateless
req POST $M "$W" "$CALL" "${H[@]}" -H "Mcp-Method: tools/call" -H "Mcp-Name: =?base64?ZWNob19fbG9jYWw=?="
expect "base64 Mcp-Name" 200 '.result.content[0].text' stateless
req POST $M "$W" "$CALL" "${H[@]}" -H "Mcp-Method: tools/call" -H "Mcp-Name: echo__web"
expect "Mcp-Name mismatch" 400 .error.code -32020
req POST $M "$W" "$CALL" "${H[@]}" -H "Mcp-Method: tools/list" -H "Mcp-Name: echo__local"
expect "Mcp-Method mismatch" 400 .error.code -32020
req POST $M "$W" "$CALL" -H "MCP-Protocol-Version: 2025-11-25" -H "Mcp-Method: tools/call" -H "Mcp-Name: echo__local"
check "version header mismatch" "$STATUS" 400
OLD=$(echo "$CALL" | sed 's/2026-07-28/2099-01-01/')
req POST $M "$W" "$OLD" -H "MCP-Protocol-Version: 2099-01-01" -H "Mcp-Method: tools/call" -H "Mcp-Name: echo__local"
expect "unsupported version" 400 .error.code -32022
check "lists supported" "$(jbody '.error.data.supported[0]')" 2026-07-28
req POST $M "$W" "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{$META}}" "${H[@]}" -H "Mcp-Method: tools/list"
expect "stateless list" 200 .result.cacheScope private
# --- tenants: beta sees none of acme's tools
req POST /v1/projects/beta/mcp "$BW" "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{$META}}" "${H[@]}" -H "Mcp-Method: tools/list"
expect "beta's list" 200 '.result.tools | length' 0
CALLB=$(echo "$CALL" | sed 's/echo__local/echo__web/')
req POST /v1/projects/beta/mcp "$BW" "$CALLB" "${H[@]}" -H "Mcp-Method: tools/call" -H "Mcp-Name: echo__web"
expect "beta calls acme's tool" 200 .error.data.code E-MCP-GATE-002
# --- audit (every tools/call made with acme's keys: 6)
sleep 0.3
req GET "/v1/projects/acme/audit?action=mcp.call" "$OP1" ""
check "audited calls" "$(jbody '[.items[] | select(.action=="mcp.call")] | length' )" 6
check "the cancelled call audited" "$(jbody '[.items[] | select(.payload.outcome=="cancelled")] | .[0].payload.code')" E-MCP-004
req GET "/v1/projects/beta/audit?action=mcp.call" "$BOP1" ""
check "beta's refusal audited in beta" "$(jbody '[.items[] | select(.action=="mcp.call")] | .[0].payload.code')" E-MCP-GATE-002
curl -s -H "Authorization: Bearer $ADMIN" "$URL/metrics" >"$TMP/metrics"
check "metrics" "$(grep -c '^awooop_mcp_calls_total{project="acme",tool="echo__web",outcome="ok"}' "$TMP/metrics")" 1

# --- the canary: nowhere
for f in "$TMP/responses" "$TMP/server.log" "$TMP/stdout" "$TMP/metrics"; do
  check "no canary in $(basename "$f")" "$(grep -c "$CANARY" "$f")" 0
done

aw_done "mcp_test ($BACKEND)"
