#!/usr/bin/env bash
# Style and layering checks that run in the test suite:
#  - no raw SQL outside src/store/ (services talk to the store interface);
#  - no Redis commands outside src/bus/ and (later) src/keys/;
#  - every .c file starts with a comment saying what it is for;
#  - no sprintf, strcpy, strcat, atoi or gets in src/ and include/;
#  - no snprintf(dst, n, "%s", src) copies in src/ (scripts/check-copies.py);
#  - includes point down the layers (scripts/check-layers.py has the table).
set -uo pipefail
cd "$(dirname "$0")/.."
fail=0
sql=$(grep -rnE '"(SELECT|INSERT INTO|UPDATE [a-z_]+ SET|DELETE FROM) ' src --include=*.c | grep -v '^src/store/' | grep -v 'redisCommand' || true)
if [ -n "$sql" ]; then echo "raw SQL outside src/store/:"; echo "$sql"; fail=1; fi
redis=$(grep -rn 'redisCommand' src --include=*.c | grep -vE '^src/(bus|keys)/' || true)
if [ -n "$redis" ]; then echo "Redis commands outside src/bus|keys/:"; echo "$redis"; fail=1; fi
# Redis key names are built only in src/keys/ (INV-1): no key-like literal of a
# registry prefix, and no SCAN/KEYS command, anywhere else in src/.
keylit=$(grep -rnE '"(incident|anomaly|hermes|playbook|consensus|session|tg_sent|telegram|telegram_silence|ai_rate|ollama|km|approval|platform):' src --include=*.c | grep -v '^src/keys/' || true)
if [ -n "$keylit" ]; then echo "Redis key literal outside src/keys/:"; echo "$keylit"; fail=1; fi
scan=$(grep -rnE '"(SCAN|KEYS) ' src --include=*.c | grep -v '^src/keys/' || true)
if [ -n "$scan" ]; then echo "SCAN/KEYS outside src/keys/:"; echo "$scan"; fail=1; fi
# unbounded string functions: a bounded buffer (aw_buf) or snprintf instead;
# atoi cannot report a bad number (strtol / aw_cli_int)
banned=$(grep -rnE '\b(sprintf|vsprintf|strcpy|strcat|atoi|atol|gets)[[:space:]]*\(' src include --include=*.[ch] || true)
if [ -n "$banned" ]; then echo "banned function (use aw_buf, snprintf, strtol):"; echo "$banned"; fail=1; fi
# timed waits count on the monotonic clock (aw_clock_cond_init): a wall-clock
# step neither stretches nor cuts them; the wall clock is read in clock.c only
wall=$(grep -rn 'CLOCK_REALTIME' src --include=*.c | grep -v '^src/core/clock.c' || true)
if [ -n "$wall" ]; then echo "CLOCK_REALTIME outside src/core/clock.c (aw_clock_wall_ms, or a monotonic wait):"; echo "$wall"; fail=1; fi
# every allocation goes through alloc.h's door, so the allocation-failure
# test reaches the project's own allocations (free() stays free())
alloc=$(grep -rnP '(?<![\w.>])(malloc|calloc|realloc|strdup|strndup)\(' src --include=*.c --include=*.h |
  grep -v '^src/core/alloc.c' | grep -vP '^\S+:\d+:\s*(/?\*|//)' || true)
if [ -n "$alloc" ]; then echo "bare allocation (use aw_malloc & co., alloc.h):"; echo "$alloc"; fail=1; fi
# dependencies point down: a folder includes only folders below it
python3 scripts/check-layers.py || fail=1
# never cut silently: no snprintf(dst, n, "%s", src) string copies (str.h)
python3 scripts/check-copies.py || fail=1
# one name, one file: backtraces and logs name files without their folder
dup=$(find src -name '*.[ch]' -printf '%f\n' | sort | uniq -d)
if [ -n "$dup" ]; then echo "file names used twice under src/:"; echo "$dup"; fail=1; fi
for f in $(find src tests fuzz -name '*.c'); do
  head -1 "$f" | grep -q '^/\*' || { echo "$f: missing top-of-file comment"; fail=1; }
done
# formatting is .clang-format's, checked not argued about
if command -v clang-format >/dev/null; then
  files=$(find include src tests fuzz bench tools -name '*.[ch]')
  if ! clang-format --dry-run -Werror $files 2>/tmp/aw-format.$$; then
    echo "not clang-formatted (run: clang-format -i FILES):"; grep -E '^[^ ].*error' /tmp/aw-format.$$ | cut -d: -f1 | sort -u
    fail=1
  fi
  rm -f /tmp/aw-format.$$
else
  echo "clang-format missing (scripts/deps.sh --test installs it)"; fail=1
fi
[ $fail -eq 0 ] && echo "style: ok"
exit $fail
