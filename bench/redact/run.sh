#!/usr/bin/env bash
# Redaction throughput and precision, side by side in one run:
#   bench/redact/run.sh [MB] [FORMAT ...]   every format of bench/redact/loggen.h (default 100 MB)
#   bench/redact/run.sh grid [MB]           the shape grid (default 20 MB per cell)
#   bench/redact/run.sh custom [MB] [FORMAT ...]   the engine without and with one custom
#                                           pattern of a project (PATTERN, default EMP-[0-9]{6}),
#                                           side by side (default 10 MB, every format)
#   OLD=/path/to/other/build bench/redact/run.sh ...   also times that build's awooop,
#                                           interleaved with this one, and prints the ratio
# For each format, a clean corpus (nothing to redact) and a dense one (a secret
# about every 1 KB):
#   command   the whole `awooop redact < FILE > /dev/null` (start, read, redact,
#             write to a pipe sink; best of 3 wall-clock runs), what a log pipeline pays
#   cpu       the same command's CPU time (user + system, best of 3): on a shared
#             machine the figure the neighbours move least
#   engine    in process, the 64 KiB stream the command uses (median of 3)
#   baseline  each class's PCRE2-JIT regex in turn (same patterns and validators)
#   fp        lines of the clean corpus the engine changed (false positives)
# The grid: lines of 40-200 bytes with 0-12 digit runs (timestamps, ports,
# pids, counters, label values, line numbers), a number at the line's end or
# not (loggen_grid); clean corpora through the command, the worst cell, and
# the worst cell's dense corpus.
# One thread; numbers are MB/s (10^6 bytes).
set -euo pipefail
cd "$(dirname "$0")/../.."
GRID=0
if [ "${1:-}" = grid ]; then GRID=1; shift; fi
if [ "${1:-}" = custom ]; then
  shift
  MB=${1:-10}
  shift || true
  scripts/deps.sh
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)" --target bench_redact >/dev/null
  exec ./build/bench/bench_redact --custom "${PATTERN:-EMP-[0-9]{6}}" "$MB" "$@" | grep -v '^CROW'
fi
MB=${1:-$([ $GRID = 1 ] && echo 20 || echo 100)}
shift || true
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target awooop bench_redact bench_loggen bench_cputime >/dev/null
TMP=$(mktemp -d /tmp/aw-redact.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
OLD_BIN=${OLD:+$OLD/awooop}

# best of 3 interleaved runs of each binary on $1: sets wall_<i>, cpu_<i> (seconds)
time_cmds() {
  local in=$1 i=0 b
  local bins=(./build/awooop ${OLD_BIN:+"$OLD_BIN"})
  for i in "${!bins[@]}"; do eval "wall_$i=999999 cpu_$i=999999"; done
  for _ in 1 2 3; do
    for i in "${!bins[@]}"; do
      read -r w c < <(./build/bench/bench_cputime "$in" "${bins[$i]}" redact)
      eval "wall_$i=\$(awk -v a=$w -v b=\$wall_$i 'BEGIN{print a < b ? a : b}')"
      eval "cpu_$i=\$(awk -v a=$c -v b=\$cpu_$i 'BEGIN{print a < b ? a : b}')"
    done
  done
}
mbs() { awk -v b="$1" -v t="$2" 'BEGIN{printf "%.0f", b / 1e6 / t}'; }

if [ $GRID = 1 ]; then
  printf '%-16s %-5s %9s %9s' cell kind command cpu
  [ -n "$OLD_BIN" ] && printf ' %9s %9s %9s' "old cmd" "old cpu" "cpu new/old"
  printf '\n'
  worst=999999; worst_cell=
  for L in 40 80 120 200; do for D in 0 2 4 8 12; do for E in 0 1; do
    [ "$D" = 0 ] && [ "$E" = 1 ] && continue
    cell=grid:$L:$D:$E
    ./build/bench/bench_loggen "$cell" clean "$MB" >"$TMP/in" 2>/dev/null
    bytes=$(stat -c %s "$TMP/in")
    time_cmds "$TMP/in"
    cmd=$(mbs "$bytes" "$wall_0"); cpu=$(mbs "$bytes" "$cpu_0")
    printf '%-16s %-5s %9s %9s' "$cell" clean "$cmd" "$cpu"
    [ -n "$OLD_BIN" ] && printf ' %9s %9s %8.2fx' "$(mbs "$bytes" "$wall_1")" "$(mbs "$bytes" "$cpu_1")" \
      "$(awk -v a="$cpu_1" -v b="$cpu_0" 'BEGIN{print a / b}')"
    ./build/awooop redact <"$TMP/in" >"$TMP/out"
    printf '  fp=%s\n' "$(diff "$TMP/in" "$TMP/out" | grep -c '^<' || true)"
    if [ "$cpu" -lt "$worst" ]; then worst=$cpu; worst_cell=$cell; fi
  done; done; done
  echo "worst clean cell (CPU time through the command): $worst_cell at $worst MB/s"
  ./build/bench/bench_loggen "$worst_cell" dense "$MB" >"$TMP/in" 2>/dev/null
  bytes=$(stat -c %s "$TMP/in")
  time_cmds "$TMP/in"
  printf '%-16s %-5s %9s %9s' "$worst_cell" dense "$(mbs "$bytes" "$wall_0")" "$(mbs "$bytes" "$cpu_0")"
  [ -n "$OLD_BIN" ] && printf ' %9s %9s %8.2fx' "$(mbs "$bytes" "$wall_1")" "$(mbs "$bytes" "$cpu_1")" \
    "$(awk -v a="$cpu_1" -v b="$cpu_0" 'BEGIN{print a / b}')"
  printf '  redacted=%s\n' "$(./build/awooop redact <"$TMP/in" | grep -o '\[REDACTED:' | wc -l)"
  exit 0
fi

formats=("$@")
[ ${#formats[@]} -gt 0 ] || mapfile -t formats < <(./build/bench/bench_loggen 2>&1 | sed -n 's/^formats: //p' | tr ' ' '\n')

# in-process figures (smaller corpora: the baseline is slow)
IN_MB=$(( MB < 20 ? MB : 20 ))
./build/bench/bench_redact "$IN_MB" "${formats[@]}" >"$TMP/inproc"

printf '%-11s %-5s %9s %9s' format kind command cpu
[ -n "$OLD_BIN" ] && printf ' %9s %9s %9s' "old cmd" "old cpu" "cpu new/old"
printf ' %9s %9s %8s %9s %5s\n' engine baseline ratio redacted fp
worst=999999; worst_name=
for f in "${formats[@]}"; do
  for kind in clean dense; do
    ./build/bench/bench_loggen "$f" "$kind" "$MB" >"$TMP/in" 2>/dev/null
    bytes=$(stat -c %s "$TMP/in")
    time_cmds "$TMP/in"
    cmd=$(mbs "$bytes" "$wall_0"); cpu=$(mbs "$bytes" "$cpu_0")
    row=$(grep "^ROW $f $kind " "$TMP/inproc")
    eng=$(echo "$row" | awk '{printf "%.0f", $4}'); base=$(echo "$row" | awk '{printf "%.1f", $6}')
    fp=$(echo "$row" | awk '{print $10}')
    ./build/awooop redact <"$TMP/in" >"$TMP/out"
    red=$( (grep -o '\[REDACTED:' "$TMP/out" || true) | wc -l)
    printf '%-11s %-5s %9s %9s' "$f" "$kind" "$cmd" "$cpu"
    [ -n "$OLD_BIN" ] && printf ' %9s %9s %8.2fx' "$(mbs "$bytes" "$wall_1")" "$(mbs "$bytes" "$cpu_1")" \
      "$(awk -v a="$cpu_1" -v b="$cpu_0" 'BEGIN{print a / b}')"
    printf ' %9s %9s %7.1fx %9s %5s\n' "$eng" "$base" "$(awk -v c="$cmd" -v b="$base" 'BEGIN{print c / b}')" "$red" "$fp"
    if [ "$kind" = clean ] && [ "$cmd" -lt "$worst" ]; then worst=$cmd; worst_name=$f; fi
  done
done
echo "worst clean format through the command: $worst_name at $worst MB/s"
