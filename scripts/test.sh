#!/usr/bin/env bash
# `make test`: installs what is missing, builds the normal (gcc) and sanitizer
# (clang, ASan+UBSan, libFuzzer) builds, starts throwaway PostgreSQL 15 and
# Redis 7 on loopback, and runs the whole CTest suite in both builds. Every
# store test runs on SQLite and on PostgreSQL. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}

scripts/deps.sh --test

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$JOBS"
cmake -S . -B build-asan -DCMAKE_C_COMPILER=clang -DAWOOOP_SANITIZE=ON -DAWOOOP_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j"$JOBS"

# shellcheck source=scripts/services.sh
. scripts/services.sh
# Stopping the services must never change the verdict of the tests.
cleanup() { local rc=$?; aw_services_stop || true; exit "$rc"; }
trap cleanup EXIT INT TERM
aw_services_start

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp:print_suppressions=0}

status=0
echo "== normal build (gcc, RelWithDebInfo) =="
(cd build && ctest --output-on-failure -j"$JOBS" --timeout 600) || status=1
echo "== sanitizer build (clang, ASan+UBSan, fuzzers) =="
(cd build-asan && ctest --output-on-failure -j"$JOBS" --timeout 600) || status=1
if [ $status -ne 0 ]; then echo "make test: FAILED" >&2; else echo "make test: all passed"; fi
exit $status
