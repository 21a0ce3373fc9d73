#!/usr/bin/env bash
# bench/keys: the INV-1 tools on a big keyspace.
#   bench/keys/run.sh [KEYS]        (default 1000000)
# Loads KEYS keys into a throwaway Redis 7 (legacy and prefixed forms of the
# inventoried patterns, with TTLs, plus unknown keys), then times
#   awooop keys inventory   (SCAN of the whole keyspace, classify, PTTL checks)
#   awooop keys backfill    (legacy tg_sent keys -> awoooi:tg_sent:..., DUMP/RESTORE)
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-1000000}
scripts/deps.sh --test >/dev/null
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
BIN=$PWD/build/awooop
. scripts/services.sh
trap aw_services_stop EXIT
aw_services_start
REDIS=$AWOOOP_TEST_REDIS_URL
TMP=$(mktemp -d /tmp/aw-keys.XXXXXX)
# the key mix: 5 parts legacy (tg_sent carries the backfill), 3 parts
# prefixed, 1 part unknown, 1 part keys missing a TTL they should have
awk -v n="$N" 'BEGIN {
  for (i = 0; i < n; i++) {
    m = i % 10
    if (m < 3)       { k = "tg_sent:fp" i; ttl = 600 }
    else if (m == 3) { k = "anomaly:timeline:a" i; ttl = 604800 }
    else if (m == 4) { k = "incident:" i; ttl = 86400 }
    else if (m < 8)  { k = "awoooi:incident:" i; ttl = 86400 }
    else if (m == 8) { k = "misc:unknown:" i; ttl = 0 }
    else             { k = "hermes:rl:" i; ttl = -1 }
    if (ttl > 0) printf "*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nv\r\n$2\r\nEX\r\n$%d\r\n%d\r\n", length(k), k, length(ttl ""), ttl
    else printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nv\r\n", length(k), k
  }
}' >"$TMP/load.resp"
PORT=${REDIS##*:}
redis-cli -p "$PORT" --pipe <"$TMP/load.resp" >/dev/null
echo "bench/keys: $(redis-cli -p "$PORT" dbsize) keys loaded"
echo "== awooop keys inventory"
"$BIN" keys inventory --redis "$REDIS" 2>/dev/null
"$BIN" migrate --db "sqlite:$TMP/awooop.db" >/dev/null
echo "== awooop keys backfill (tg_sent, $((N * 3 / 10)) legacy keys)"
"$BIN" keys backfill --redis "$REDIS" --db "sqlite:$TMP/awooop.db" --project awoooi --pattern tg_sent 2>/dev/null
echo "== again (idempotent: everything already present)"
"$BIN" keys backfill --redis "$REDIS" --db "sqlite:$TMP/awooop.db" --project awoooi --pattern tg_sent 2>/dev/null
rm -rf "$TMP"
