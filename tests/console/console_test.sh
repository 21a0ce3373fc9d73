#!/usr/bin/env bash
# The web console in a real browser: Debian's chromium driven by
# playwright-core (npm), axe-core (npm) on every view. Two `awooop watch`
# processes serve the contract the browser activates, so its convergence
# panel must reach 2 of 2. Screenshots of every view (1280x800 and a phone
# width) go to SHOTS.
#   console_test.sh AWOOOP_BINARY sqlite|postgres SHOTS_DIR
set -uo pipefail
BIN=$1
BACKEND=$2
SHOTS=$3
. "$(dirname "$0")/../http/lib.sh"

CHROMIUM=$(command -v chromium || true)
[ -n "$CHROMIUM" ] || { echo "chromium missing: scripts/deps.sh --test installs it" >&2; exit 1; }
NM=${AWOOOP_NPM_CACHE:-$HOME/.cache/awooop-npm}/console
if [ ! -d "$NM/node_modules/playwright-core" ] || [ ! -d "$NM/node_modules/axe-core" ]; then
  mkdir -p "$NM"
  (cd "$NM" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund playwright-core@1.65.1 axe-core@4.14.1 \
    >/dev/null 2>"$TMP/npm.log") || { cat "$TMP/npm.log" >&2; echo "npm install failed" >&2; exit 1; }
fi
cp "$(dirname "$0")/console.mjs" "$NM/"

aw_db "$BACKEND"
aw_serve --fleet-report-ms 300
# another tenant with a run: the browser, signed in to its own project, must
# be told "not found" for it
api POST /v1/projects "$ADMIN" '{"id":"outsider"}' >/dev/null
OUT_KEY=$(mkkey outsider op operator)
OTHER_RUN=$(api POST /v1/platform/runs "$OUT_KEY" '{"workflow":[{"kind":"noop"}]}' | jq -r .run_id)
# the project the browser creates: two watchers start at once and wait for
# its first activation (a watch whose project does not exist yet keeps
# calling; its fleet reports succeed once the project exists)
for w in 1 2; do
  "$BIN" watch --project webcon --contract default --db "$DB" $EXTRA --calls-per-sec 20 \
    --interval-ms 500 --fleet-report-ms 300 >"$TMP/w$w.changes" 2>"$TMP/w$w.stats" &
  PIDS+=($!)
done
mkdir -p "$SHOTS"
(cd "$NM" && node console.mjs "$URL" "$ADMIN" "$OTHER_RUN" "$SHOTS" "$CHROMIUM") >"$TMP/browser.out" 2>&1
rc=$?
cat "$TMP/browser.out"
check "browser run" "$rc" 0
aw_done "console_$BACKEND"
