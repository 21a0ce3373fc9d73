#!/usr/bin/env bash
# `make run`: installs what is missing, builds, and starts `awooop serve` in the
# embedded default shape (SQLite at ./var/awooop.db, HTTP on 127.0.0.1:8080).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
exec ./build/awooop serve "$@"   # creates ./var (mode 0700) on first start
