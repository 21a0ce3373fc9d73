#!/usr/bin/env bash
# The API over TLS, with certificates this test makes with openssl:
#   tls_test.sh AWOOOP_BINARY
# - a client without the CA is refused, with it answered; plain HTTP and
#   TLS 1.1 are refused;
# - SIGHUP: new connections get the new certificate while a long request on
#   a connection made before completes; a bad certificate file keeps the old;
# - the publish keys are reloaded too;
# - --tls-client-ca: no client certificate, or one another CA signed, is
#   refused (E-TLS-001); one the CA signed is answered.
set -uo pipefail
BIN=$1
TMP=$(mktemp -d /tmp/aw-tls.XXXXXX)
SERVER_PID=
PASS=0
FAIL=0
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
ok() { PASS=$((PASS + 1)); }
bad() { FAIL=$((FAIL + 1)); echo "FAIL: $*" >&2; }
check() { if [ "$2" == "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi; }

cd "$TMP" || exit 1
ca() { # ca NAME: a CA
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$1" -keyout "$1.key" -out "$1.pem" 2>/dev/null
}
leaf() { # leaf CA NAME CN EXT: a certificate CA signs
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$3" -keyout "$2.key" -out "$2.csr" 2>/dev/null
  printf '%s\n' "$4" >"$2.ext"
  openssl x509 -req -in "$2.csr" -CA "$1.pem" -CAkey "$1.key" -CAcreateserial -days 2 \
    -extfile "$2.ext" -out "$2.pem" 2>/dev/null
}
ca ca; ca other
leaf ca server1 127.0.0.1 "subjectAltName=IP:127.0.0.1"
leaf ca server2 127.0.0.1 "subjectAltName=IP:127.0.0.1"
leaf ca client 'agent-7' "extendedKeyUsage=clientAuth"
leaf other stranger 'stranger' "extendedKeyUsage=clientAuth"
cp server1.pem cert.pem; cp server1.key key.pem
serial() { openssl x509 -noout -serial -in "$1" | cut -d= -f2; }
served_serial() {
  openssl s_client -connect "127.0.0.1:$PORT" -CAfile ca.pem </dev/null 2>/dev/null |
    openssl x509 -noout -serial 2>/dev/null | cut -d= -f2
}

start() { # start [extra serve flags]
  AWOOOP_BOOTSTRAP_KEY=$ADMIN "$BIN" serve --db "sqlite:$TMP/aw.db" --listen 127.0.0.1:0 \
    --tls-cert cert.pem --tls-key key.pem --request-timeout-s 60 "$@" >/dev/null 2>"$TMP/log" &
  SERVER_PID=$!
  for _ in $(seq 1 100); do grep -q '"awooop serving"' "$TMP/log" && break; sleep 0.1; done
  PORT=$(grep '"awooop serving"' "$TMP/log" | jq -r .port)
  U="https://127.0.0.1:$PORT"
}
stop() { kill "$SERVER_PID"; wait "$SERVER_PID"; SERVER_PID=; }
ADMIN=$("$BIN" key generate)

# --- HTTPS, the CA, plain HTTP, old TLS
start
check "answered with the CA" "$(curl -s -o /dev/null -w '%{http_code}' --cacert ca.pem "$U/healthz")" 200
curl -s -o /dev/null "$U/healthz"; check "refused without the CA (curl: peer certificate)" $? 60
check "plain HTTP gets no answer" "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz")" 000
curl -s -o /dev/null --cacert ca.pem --tlsv1.1 --tls-max 1.1 "$U/healthz"; check "TLS 1.1 refused" "$([ $? -ne 0 ] && echo yes)" yes
check "the first certificate" "$(served_serial)" "$(serial server1.pem)"
AWOOOP_URL=$U AWOOOP_KEY=$ADMIN AWOOOP_CA=$TMP/ca.pem "$BIN" project create alpha >/dev/null 2>"$TMP/cli.err"
check "the CLI over TLS (AWOOOP_CA)" $? 0

# --- SIGHUP: a long request on an old connection completes; new ones get the new certificate
head -c 200000 /dev/zero | tr '\0' 'a' | sed 's/^/{"id":"slow-project","pad":"/; s/$/"}/' >big.json
curl -s -o "$TMP/slow.out" -w '%{http_code}' --cacert ca.pem --limit-rate 50k \
  -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
  --data-binary @big.json "$U/v1/projects" >"$TMP/slow.code" &
SLOW=$!
sleep 1
cp server2.pem cert.pem; cp server2.key key.pem
kill -HUP "$SERVER_PID"
sleep 0.5
check "reloaded" "$(grep -c '"TLS material reloaded' "$TMP/log")" 1
check "publish keys reloaded" "$(grep -c '"publish keys reloaded' "$TMP/log")" 1
check "new connections: the new certificate" "$(served_serial)" "$(serial server2.pem)"
kill -0 "$SLOW" 2>/dev/null; check "the long request still runs" $? 0
wait "$SLOW"
check "the long request on the old connection completed" "$(cat "$TMP/slow.code")" 400
check "with an answer (the unknown field)" "$(jq -r .code "$TMP/slow.out")" E-REQ-004
echo "not a certificate" >cert.pem
kill -HUP "$SERVER_PID"
sleep 0.5
check "a bad certificate file: said" "$(grep -c 'TLS reload failed; the old certificate stays' "$TMP/log")" 1
check "a bad certificate file: the old one stays" "$(served_serial)" "$(serial server2.pem)"
check "still answering" "$(curl -s -o /dev/null -w '%{http_code}' --cacert ca.pem "$U/healthz")" 200
kill -0 "$SERVER_PID"; check "alive after the reloads" $? 0
stop
cp server2.pem cert.pem

# --- client certificates
start --tls-client-ca ca.pem
curl -s -o "$TMP/none.out" -w '%{http_code}' --cacert ca.pem "$U/healthz" >"$TMP/none.code"
check "no client certificate: 401" "$(cat "$TMP/none.code")" 401
check "no client certificate: code" "$(jq -r .code "$TMP/none.out")" E-TLS-001
curl -s -o "$TMP/str.out" -w '%{http_code}' --cacert ca.pem --cert stranger.pem --key stranger.key "$U/healthz" >"$TMP/str.code"
check "another CA's client certificate: 401" "$(cat "$TMP/str.code")" 401
check "another CA's client certificate: says so" "$(jq -r .detail "$TMP/str.out" | grep -c 'not trusted')" 1
check "the CA's client certificate: answered" "$(curl -s -o /dev/null -w '%{http_code}' --cacert ca.pem --cert client.pem --key client.key "$U/healthz")" 200
check "transport trust only: the key still decides" "$(curl -s -o /dev/null -w '%{http_code}' --cacert ca.pem --cert client.pem --key client.key "$U/v1/projects")" 401
stop

grep -q '"level":"error"' "$TMP/log" && bad "the server logged errors: $(grep '"level":"error"' "$TMP/log" | head -3)"
check "the bootstrap key in no log line" "$(grep -c "$ADMIN" "$TMP/log")" 0
echo "tls_test: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
