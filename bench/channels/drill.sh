#!/usr/bin/env bash
# bench/channels: the channel hub's leader drill at the issue's scale.
#
#   bench/channels/drill.sh [UPDATES] [LEASE_MS]   (defaults 1000 1500)
#
# Three `awooop serve --role hub` processes on PostgreSQL 15 + Redis 7 share
# one bot of the Telegram double; UPDATES inbound updates arrive in batches
# of 20 every 200 ms while the leader (the holder of
# platform:telegram:polling:leader) is SIGKILLed every 1.5-2.5 s and
# replaced. Prints the updates, kills, slowest takeover and duplicated
# replies; fails unless every update was mirrored and audited exactly once
# and answered, and every takeover came within the lease (+ one tick).
# The checks are tests/http/channel_drill.sh (run in `make test` with 300).
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-1000}
LEASE=${2:-1500}
scripts/deps.sh --test >/dev/null
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target awooop fake_telegram >/dev/null
. scripts/services.sh
trap aw_services_stop EXIT
aw_services_start
bash tests/http/channel_drill.sh "$PWD/build/awooop" "$PWD/build/tests/fake_telegram" "$N" "$LEASE" 2>&1 |
  grep -v '^{"ts"' | grep -v 'Killed'
