# record.sh - the API tests' responses held to docs/api/openapi.json (sourced
# by lib.sh, api_test.sh and llm_test.sh; needs TMP, ok and bad).
#   aw_record METHOD PATH   after a request whose head is in $TMP/hdr and body
#                           in $TMP/body: one JSON line to $TMP/api.jsonl
#   aw_openapi_verdict      at the end: tests/http/openapi_check.py on them
AW_OPENAPI_DOC="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/docs/api/openapi.json"
AW_OPENAPI_CHECK="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/openapi_check.py"
aw_record() {
  local ct hdrs
  ct=$(grep -i '^content-type:' "$TMP/hdr" 2>/dev/null | tail -1 | cut -d: -f2- | tr -d '\r ' )
  hdrs=$(grep -o '^[A-Za-z0-9-]*:' "$TMP/hdr" 2>/dev/null | tr -d ':' | tr 'A-Z' 'a-z' | sort -u | tr '\n' ' ')
  jq -nc --arg m "$1" --arg p "${2%%\?*}" --arg s "$STATUS" --arg ct "$ct" --arg h "$hdrs" \
    --rawfile b "$TMP/body" '{method:$m, path:$p, status:($s|tonumber? // 0), ctype:$ct, headers:($h|split(" ")), body:$b}' \
    >>"$TMP/api.jsonl" 2>/dev/null || true
}
aw_openapi_verdict() {
  [ -s "$TMP/api.jsonl" ] || return 0
  if python3 "$AW_OPENAPI_CHECK" "$AW_OPENAPI_DOC" "$TMP/api.jsonl" >"$TMP/openapi.out" 2>&1; then
    ok; tail -1 "$TMP/openapi.out"
  else
    bad "responses that do not match docs/api/openapi.json:"; cat "$TMP/openapi.out" >&2
  fi
}
