#!/usr/bin/env bash
# Redaction throughput and precision per log format, side by side in one run:
#   bench/redact/run.sh [MB] [FORMAT ...]      (default 100 MB, every format)
# For each format of bench/redact/loggen.h, a clean corpus (nothing to redact)
# and a dense one (a secret about every 1 KB):
#   command   the whole `awooop redact < FILE > /dev/null` (start, read, redact,
#             write to a pipe sink; best of 3 runs), what a log pipeline pays
#             (a run writing the output to a file counts the redactions)
#   engine    in process, the 64 KiB stream the command uses (median of 3)
#   baseline  each class's PCRE2-JIT regex in turn (same patterns and validators)
#   fp        lines of the clean corpus the engine changed (false positives)
# and prints the worst format. One thread; numbers are MB/s (10^6 bytes).
set -euo pipefail
cd "$(dirname "$0")/../.."
MB=${1:-100}
shift || true
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target awooop bench_redact bench_loggen >/dev/null
TMP=$(mktemp -d /tmp/aw-redact.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
formats=("$@")
[ ${#formats[@]} -gt 0 ] || mapfile -t formats < <(./build/bench/bench_loggen 2>&1 | sed -n 's/^formats: //p' | tr ' ' '\n')

# in-process figures (smaller corpora: the baseline is slow)
IN_MB=$(( MB < 20 ? MB : 20 ))
./build/bench/bench_redact "$IN_MB" "${formats[@]}" >"$TMP/inproc"

now() { date +%s.%N; }
printf '%-11s %-5s %12s %12s %12s %8s %9s %5s\n' format kind command engine baseline ratio redacted fp
worst=999999; worst_name=
for f in "${formats[@]}"; do
  for kind in clean dense; do
    ./build/bench/bench_loggen "$f" "$kind" "$MB" >"$TMP/in" 2>/dev/null
    bytes=$(stat -c %s "$TMP/in")
    best=999999
    for _ in 1 2 3; do
      t0=$(now); ./build/awooop redact <"$TMP/in" >/dev/null; t1=$(now)
      best=$(awk -v a="$t0" -v z="$t1" -v b="$best" 'BEGIN{d = z - a; print (d < b) ? d : b}')
    done
    cmd=$(awk -v b="$bytes" -v t="$best" 'BEGIN{printf "%.0f", b / 1e6 / t}')
    row=$(grep "^ROW $f $kind " "$TMP/inproc")
    eng=$(echo "$row" | awk '{printf "%.0f", $4}'); base=$(echo "$row" | awk '{printf "%.1f", $6}')
    fp=$(echo "$row" | awk '{print $10}')
    ./build/awooop redact <"$TMP/in" >"$TMP/out"
    red=$( (grep -o '\[REDACTED:' "$TMP/out" || true) | wc -l)
    printf '%-11s %-5s %7s MB/s %7s MB/s %7s MB/s %7.1fx %9s %5s\n' "$f" "$kind" "$cmd" "$eng" "$base" \
      "$(awk -v c="$cmd" -v b="$base" 'BEGIN{print c / b}')" "$red" "$fp"
    if [ "$kind" = clean ] && [ "$cmd" -lt "$worst" ]; then worst=$cmd; worst_name=$f; fi
  done
done
echo "worst clean format through the command: $worst_name at $worst MB/s"
