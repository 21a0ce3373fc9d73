#!/usr/bin/env bash
# /metrics against Prometheus' own linter and the Grafana dashboard: after
# traffic of every kind `promtool check metrics` (Debian's prometheus
# package) finds nothing, the process_* families, awooop_build_info, the
# queue depth and the run duration histogram are there, label values never come from the request (a
# thousand made-up paths and tool names add no series), and every metric the
# dashboard in docs/grafana/ queries is one the server exports; the OpenAPI
# document is served.
#   metrics_test.sh AWOOOP_BINARY
set -uo pipefail
BIN=$1
BACKEND=sqlite
. "$(dirname "$0")/lib.sh"
DASH="$(dirname "$0")/../../docs/grafana/awooop.json"
command -v promtool >/dev/null || { echo "promtool missing: scripts/deps.sh --test installs prometheus" >&2; exit 1; }

aw_db sqlite
aw_serve --fleet-report-ms 300 --heartbeat-ms 200 --queue-age-ms 200
api POST /v1/projects "$ADMIN" '{"id":"met"}' >/dev/null
OP=$(mkkey met op operator); OP2=$(mkkey met op2 operator)
check "activation" "$(aw_activate met policy_routing '{"routes":[{"name":"main","match":{"task":"chat"},"candidates":[{"provider":"ollama","model":"m"}]}]}' "$OP" "$OP2")" true
RUN=$(api POST /v1/platform/runs "$OP" '{"workflow":[{"kind":"noop"}]}' | jq -r .run_id)
for _ in $(seq 1 100); do
  [ "$(api GET "/v1/platform/runs/$RUN" "$OP" | jq -r .state)" = succeeded ] && break; sleep 0.05
done
check "a run finished" "$(api GET "/v1/platform/runs/$RUN" "$OP" | jq -r .state)" succeeded
# the queue alerts' series: a queue of one place held by a slow run, a second
# run waiting behind it; the finished run counted in its queue
api PUT /v1/projects/met/queues/held "$OP" '{"concurrency":1}' >/dev/null
SLOW=$(api POST /v1/platform/runs "$OP" '{"workflow":[{"kind":"sleep","args":{"ms":30000}}],"queue":"held"}' | jq -r .run_id)
for _ in $(seq 1 100); do
  [ "$(api GET "/v1/platform/runs/$SLOW" "$OP" | jq -r .state)" = running ] && break; sleep 0.05
done
WAITING=$(api POST /v1/platform/runs "$OP" '{"workflow":[{"kind":"noop"}],"queue":"held"}' | jq -r .run_id)
sleep 1.5
# made-up paths, methods, tools and models: none may become a label value
for i in $(seq 1 200); do
  curl -s -o /dev/null "$URL/zz-made-up-$i"
  curl -s -o /dev/null -X PATCH "$URL/v1/projects/met"
  [ "$i" -le 50 ] && curl -s -o /dev/null -X "ZZMETHOD$i" "$URL/healthz"
done
req POST /v1/projects/met/mcp "$OP" '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"zz-tool-x","arguments":{}}}' -H 'Accept: application/json, text/event-stream'
req POST /v1/chat/completions "$OP" '{"model":"zz-model-x","messages":[{"role":"user","content":"hi"}]}'
curl -s -H "Authorization: Bearer $ADMIN" "$URL/metrics" >"$TMP/metrics"
promtool check metrics <"$TMP/metrics" >"$TMP/promtool" 2>&1
check "promtool check metrics" $? 0
[ -s "$TMP/promtool" ] && bad "promtool: $(cat "$TMP/promtool")" || ok
grep -qi 'zz-\|zzmethod' "$TMP/metrics" && bad "a request's own words became a label value: $(grep -i 'zz-\|zzmethod' "$TMP/metrics" | head -3)" || ok
age=$(sed -n 's/^awooop_run_queue_oldest_age_seconds{project="met",queue="held"} //p' "$TMP/metrics")
[ -n "$age" ] && awk -v a="$age" 'BEGIN{exit !(a >= 1 && a < 60)}' && ok || bad "queue age of met/held: '$age'"
check "runs finished per queue" "$(grep -c '^awooop_run_finished_total{project="met",queue="default",outcome="succeeded"} 1$' "$TMP/metrics")" 1
check "the run waiting in held counted" "$(grep -c '^awooop_run_queue_depth{project="met",queue="held"} 1$' "$TMP/metrics")" 1
check "the finished run's duration observed" \
  "$(grep -c '^awooop_run_duration_seconds_count{project="met",queue="default",outcome="succeeded"} 1$' "$TMP/metrics")" 1
check "... in the buckets of a run (up to a day)" \
  "$(grep -c '^awooop_run_duration_seconds_bucket{project="met",queue="default",outcome="succeeded",le="86400"} 1$' "$TMP/metrics")" 1
for m in process_cpu_seconds_total process_resident_memory_bytes process_virtual_memory_bytes \
  process_open_fds process_max_fds process_start_time_seconds; do
  check "$m" "$(grep -cE "^$m [0-9.e+]+$" "$TMP/metrics")" 1
done
check "process_open_fds below process_max_fds" \
  "$(awk '/^process_open_fds / {o = $2} /^process_max_fds / {m = $2} END {print (o > 3 && o < m)}' "$TMP/metrics")" 1
check "awooop_build_info names this binary's version" \
  "$(grep -c "^awooop_build_info{version=\"$("$BIN" version | awk '{print $2}')\",compiler=\"[^\"]*\",sanitized=\"\(yes\|no\)\"} 1$" "$TMP/metrics")" 1
# (the channel hub reads each project's channel_event contract)
check "convergence lag of a converged process" \
  "$(grep -c '^awooop_policy_convergence_lag_seconds{project="met",family="[a-z_]*"} 0$' "$TMP/metrics" | awk '{print ($1 >= 1)}')" 1
api POST "/v1/platform/runs/$SLOW/cancel" "$OP" >/dev/null
api POST "/v1/platform/runs/$WAITING/cancel" "$OP" >/dev/null
check "unmatched routes share one label" "$(grep -c '^awooop_http_requests_total{route="unmatched"' "$TMP/metrics")" 1
SERIES=$(grep -vc '^#' "$TMP/metrics")
[ "$SERIES" -lt 400 ] && ok || bad "$SERIES series after the made-up traffic"
# the dashboard's metrics are the server's
grep -oE '(awooop|process)_[a-z_]*' "$DASH" | sed -E 's/_(bucket|sum|count)$//' | sort -u >"$TMP/dash"
grep '^# TYPE' "$TMP/metrics" | awk '{print $3}' | sort -u >"$TMP/have"
check "dashboard metrics not exported" "$(comm -23 "$TMP/dash" "$TMP/have" | tr '\n' ' ')" ""
check "dashboard covers runs, relay, convergence, gateways, budget" \
  "$(grep -cE 'awooop_(run_events|outbox_undelivered|policy_changes|llm_calls|mcp_refusals|budget_events)_total|awooop_outbox_undelivered' "$DASH" | awk '{print ($1 >= 6)}')" 1
check "dashboard covers queue age, runs finished per queue, convergence lag" \
  "$(grep -oE 'awooop_(run_queue_oldest_age_seconds|run_finished_total|policy_convergence_lag_seconds)\b' "$DASH" | sort -u | wc -l)" 3
check "dashboard covers in-flight, cost, budget share, emergency cap" \
  "$(grep -oE 'awooop_(llm_inflight|budget_cost_usd_total|budget_used_ratio|llm_emergency_cap)\b' "$DASH" | sort -u | wc -l)" 4
check "dashboard covers queue depth, run durations, the process, the build" \
  "$(grep -oE '(awooop_run_queue_depth|awooop_run_duration_seconds_bucket|process_cpu_seconds_total|process_resident_memory_bytes|process_open_fds|awooop_build_info)\b' "$DASH" | sort -u | wc -l)" 6
jq -e '.panels | length > 10' "$DASH" >/dev/null && ok || bad "dashboard JSON"
# the OpenAPI document is served as built into the binary, without a key
req GET /v1/openapi.json ""
expect "openapi.json" 200 .openapi 3.1.0
check "served document = docs/api/openapi.json" "$(jq -S . "$TMP/body" | md5sum)" "$(jq -S . "$(dirname "$0")/../../docs/api/openapi.json" | md5sum)"
aw_done metrics
