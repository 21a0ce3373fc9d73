#!/usr/bin/env bash
# The alerting rules (deploy/prometheus/alerts.yml): promtool checks them and
# runs their unit tests (alerts_test.yml: a firing and a silent case per
# alert); every alert has a runbook_url whose anchor docs/ops/runbooks.md has.
#   alerts_test.sh SOURCE_DIR
set -uo pipefail
SRC=$1
DIR=$SRC/deploy/prometheus
fail=0
command -v promtool >/dev/null || { echo "promtool missing: scripts/deps.sh --test installs prometheus" >&2; exit 1; }
(cd "$DIR" && promtool check rules alerts.yml && promtool test rules alerts_test.yml) || fail=1
alerts=$(grep -c '^ *- alert:' "$DIR/alerts.yml")
urls=$(grep -c '^ *runbook_url: "docs/ops/runbooks.md#[a-z0-9-]*"$' "$DIR/alerts.yml")
[ "$alerts" -gt 0 ] && [ "$alerts" = "$urls" ] || { echo "FAIL: $alerts alerts, $urls runbook_urls" >&2; fail=1; }
for a in $(grep -o 'runbooks.md#[a-z0-9-]*' "$DIR/alerts.yml" | sed 's/.*#//' | sort -u); do
  grep -q "<a id=\"$a\"></a>" "$SRC/docs/ops/runbooks.md" || { echo "FAIL: no runbook anchor $a" >&2; fail=1; }
done
echo "alerts: $alerts rules, $([ $fail = 0 ] && echo ok || echo FAILED)"
exit $fail
