#!/usr/bin/env bash
# docs/api/openapi.json is what docs/api/openapi.py writes, and @redocly/cli
# (npm, installed on first use into the npm cache directory) lints it with no
# error and no warning.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
python3 "$ROOT/docs/api/openapi.py" --check
NM=${AWOOOP_NPM_CACHE:-$HOME/.cache/awooop-npm}/redocly
if [ ! -x "$NM/node_modules/.bin/redocly" ]; then
  mkdir -p "$NM"
  (cd "$NM" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund @redocly/cli@2.77.0 \
    >/dev/null 2>"$NM/npm.log") || { cat "$NM/npm.log" >&2; echo "npm install @redocly/cli failed" >&2; exit 1; }
fi
cd "$ROOT/docs/api"   # beside .redocly.lint-ignore.yaml
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
set +e
REDOCLY_TELEMETRY=off NO_UPDATE_NOTIFIER=1 "$NM/node_modules/.bin/redocly" lint openapi.json \
  --format stylish >"$OUT" 2>&1
rc=$?
set -e
cat "$OUT"
[ $rc -eq 0 ] || { echo "redocly lint failed" >&2; exit 1; }
if grep -qE 'You have [0-9]+ warnings?' "$OUT"; then
  echo "redocly lint: warnings" >&2; exit 1
fi
echo "openapi_lint: ok"
