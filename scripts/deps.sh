#!/usr/bin/env bash
# Installs the Debian packages awooop needs to build, run and test
# (--test), and benchmark (--bench: the test packages and the bench's peers).
# Idempotent: calls apt-get only when a package is missing. Safe to run often.
set -euo pipefail

# libcmocka-dev: the default build (`make run`) configures the tests too
# (BUILD_TESTING), and tests/CMakeLists.txt requires cmocka; it also builds
# the fakes the README's quickstart uses (build/tests/fake_llm). curl: the
# quickstart's requests.
BUILD_PKGS=(build-essential cmake pkg-config clang libclang-rt-14-dev
  libjansson-dev libmicrohttpd-dev libcurl4-openssl-dev libsqlite3-dev libpq-dev
  libhiredis-dev libssl-dev libgnutls28-dev libjwt-dev libpcre2-dev libhyperscan-dev
  help2man libcmocka-dev curl tzdata)
TEST_PKGS=(postgresql-15 redis-server jq sqlite3 json-schema-test-suite clang-format
  python3 python3-jsonschema util-linux prometheus chromium
  dpkg-dev lintian systemd strace adduser)

# nginx-light: bench/llm and bench/mcp's bare relay, the ceiling any proxy
# on this machine can reach (--bench only)
BENCH_PKGS=(nginx-light)

want=("${BUILD_PKGS[@]}")
[ "${1:-}" = "--bench" ] && want+=("${BENCH_PKGS[@]}")
if [ "${1:-}" = "--test" ] || [ "${1:-}" = "--bench" ]; then
  want+=("${TEST_PKGS[@]}")
  # the LLM gateway test runs the official `openai` npm client: Debian's node
  # and npm, unless the machine has a node of its own
  command -v npm >/dev/null || want+=(nodejs npm)
fi

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# Do not let the Debian packages start system-wide servers on their default ports;
# tests start their own throwaway instances.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
