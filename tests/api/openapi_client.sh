#!/usr/bin/env bash
# Generated clients type-check (issue 45): openapi-typescript (npm, pinned;
# installed on first use into the npm cache directory) writes the TypeScript
# types of docs/api/openapi.json, and tsc --strict compiles a client that
# fills and reads the free-form members (tests/api/openapi_client.ts).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NM=${AWOOOP_NPM_CACHE:-$HOME/.cache/awooop-npm}/openapi-ts
if [ ! -x "$NM/node_modules/.bin/tsc" ] || [ ! -x "$NM/node_modules/.bin/openapi-typescript" ]; then
  mkdir -p "$NM"
  (cd "$NM" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --silent --no-audit --no-fund openapi-typescript@7.13.0 typescript@5.9.3 \
      >/dev/null 2>"$NM/npm.log") || { cat "$NM/npm.log" >&2; echo "npm install failed" >&2; exit 1; }
fi
TMP=$(mktemp -d /tmp/aw-openapi-ts.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
cp "$ROOT/tests/api/openapi_client.ts" "$TMP/"
NO_UPDATE_NOTIFIER=1 "$NM/node_modules/.bin/openapi-typescript" "$ROOT/docs/api/openapi.json" \
  -o "$TMP/api.d.ts" >"$TMP/gen.log" 2>&1 || { cat "$TMP/gen.log" >&2; exit 1; }
if ! "$NM/node_modules/.bin/tsc" --noEmit --strict --target es2020 --module es2020 \
  --moduleResolution node "$TMP/openapi_client.ts" >"$TMP/tsc.log" 2>&1; then
  cat "$TMP/tsc.log" >&2
  echo "FAIL: a client of the generated types does not type-check" >&2
  exit 1
fi
echo "openapi_client: the generated types hold a client's runs, contracts and answers"
