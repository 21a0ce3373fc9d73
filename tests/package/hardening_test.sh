#!/usr/bin/env bash
# hardening_test.sh BUILD_DIR - the packaged unit's hardening does not break
# what `awooop serve` does, its stdio MCP sandbox above all. No systemd runs
# here, so its parts are checked the ways they can be:
#   - the file system ones (ProtectSystem=strict with ReadWritePaths,
#     ProtectHome, PrivateTmp, PrivateDevices, ProtectControlGroups,
#     ProtectKernelModules) are built as systemd builds them, in a private
#     mount namespace, and the server runs in them as an unprivileged user
#     with no capabilities and no new privileges (User=,
#     CapabilityBoundingSet=, NoNewPrivileges=);
#   - the seccomp ones are checked against what the server really does,
#     under strace: every system call it and its sandboxed children make is
#     in the unit's SystemCallFilter (groups expanded by systemd-analyze),
#     every socket family in RestrictAddressFamilies, every namespace it
#     creates in RestrictNamespaces;
#   - what it does: onboards examples/ewoooc.json (publishing starts the
#     example MCP server in the sandbox to pin its tools), one tool call
#     through the MCP gateway, SIGTERM;
#   - and why ProtectKernelTunables= stays off: with /proc/sys mounted over
#     as it does, the kernel refuses the sandbox a /proc of its own.
# Needs root (mount namespaces, strace of another user); skips otherwise.
set -uo pipefail
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); }
bad() { FAIL=$((FAIL + 1)); echo "FAIL: $*" >&2; }
check() { if [ "$2" == "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi; }
UNIT=$SRC/packaging/debian/awooop.service
unit() { sed -n "s/^$1=//p" "$UNIT"; }

if [ "${1:-}" != "--inside" ]; then
  BUILD=$(cd "$1" && pwd)
  if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: the unit's hardening (needs root: mount namespaces, strace)"
    exit 77 # CTest: skipped, not passed (docs/testing.md)
  fi
  for tool in strace systemd-analyze setpriv unshare jq curl; do
    command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing (scripts/deps.sh --test installs it)" >&2; exit 1; }
  done
  id nobody >/dev/null || { echo "FAIL: no user nobody" >&2; exit 1; }
  # not under /tmp or /home, which the namespace covers (PrivateTmp=,
  # ProtectHome=)
  TMP=$(mktemp -d /run/aw-hardening.XXXXXX)
  trap '[ -n "${KEEP:-}" ] || rm -rf "$TMP"' EXIT
  mkdir -p "$TMP/bin" "$TMP/state" "$TMP/run"
  # what the namespace reads, copied out of the tree (which may be under a
  # home that ProtectHome= hides)
  cp "$BUILD/awooop" "$BUILD/awooop-example-mcp" "$TMP/bin/"
  cp "$UNIT" "$SRC/examples/ewoooc.json" "$TMP/run/"
  chown nobody:nogroup "$TMP/state"
  chmod 755 "$TMP" "$TMP/bin"
  unshare --mount --uts --propagation private bash "$SELF" --inside "$TMP"
  exit $?
fi

# ------------------------------------------------ in a private mount namespace
TMP=$2
# W/state writable as ReadWritePaths makes /var/lib/awooop, W/run for this
# test's own files
W=$TMP
UNIT=$W/run/awooop.service
# ProtectSystem=strict: every mount read-only but /dev, /proc, /sys
findmnt -rn -o TARGET | grep -vE '^/(proc|sys|dev)(/|$)' | sort -r | while read -r m; do
  mount -o remount,bind,ro "$m" || echo "FAIL: read-only $m" >&2
done
for d in state run; do mount --bind "$W"/$d "$W"/$d && mount -o remount,bind,rw "$W"/$d; done
# ProtectControlGroups=, ProtectKernelModules=
findmnt -rn -o TARGET | grep '^/sys/fs/cgroup' | while read -r m; do mount -o remount,bind,ro "$m"; done
for d in /usr/lib/modules /lib/modules; do
  [ -d "$d" ] && ! mountpoint -q "$d" && mount -t tmpfs -o mode=000 tmpfs "$d"
done
# ProtectHome=yes (inaccessible), PrivateTmp=
for d in /home /root /run/user; do [ -d "$d" ] && mount -t tmpfs -o mode=000 tmpfs "$d"; done
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /var/tmp
# PrivateDevices=: a /dev of the pseudo devices only
D=/tmp/.dev
mkdir -p $D && mount -t tmpfs -o mode=755 tmpfs $D
for n in null zero full random urandom tty; do touch $D/$n && mount --bind /dev/$n $D/$n; done
mkdir $D/shm $D/pts && mount -t tmpfs -o mode=1777 tmpfs $D/shm
mount --move $D /dev 2>/dev/null || mountpoint -q /dev || { echo "FAIL: private /dev" >&2; exit 1; }
# ProtectHostname=
hostname awooop-test

check "/ is read-only" "$(touch /.aw-rw 2>/dev/null && echo writable || echo ro)" ro
check "state dir writable" "$(setpriv --reuid=nobody --regid=nogroup --clear-groups touch "$W"/state/.w 2>/dev/null && echo yes)" yes

# the server as the unit runs it (umask, user, no capabilities, no new privileges)
ADMIN=$("$W"/bin/awooop key generate)
umask 077
strace -f -qq -o "$W"/run/trace \
  setpriv --reuid=nobody --regid=nogroup --clear-groups --no-new-privs --inh-caps=-all --bounding-set=-all -- \
  env -i PATH=/usr/bin:/bin AWOOOP_BOOTSTRAP_KEY="$ADMIN" AWOOOP_DB=sqlite:"$W"/state/awooop.db \
  "$W"/bin/awooop serve --listen 127.0.0.1:0 --mcp-stdio-allow "$W"/bin/awooop-example-mcp \
  >"$W"/run/out 2>"$W"/run/log &
for _ in $(seq 1 200); do grep -q '"awooop serving"' "$W"/run/log 2>/dev/null && break; sleep 0.1; done
PORT=$(grep '"awooop serving"' "$W"/run/log | jq -r .port)
SP=$(pgrep -f -o "^$W/bin/awooop serve")
if [ -z "$PORT" ] || [ -z "$SP" ]; then
  tail -5 "$W"/run/log >&2
  echo "FAIL: serve did not start under the hardening" >&2
  exit 1
fi
URL=http://127.0.0.1:$PORT
AWOOOP_URL=$URL AWOOOP_KEY=$ADMIN EXAMPLE_MCP="$W"/bin/awooop-example-mcp \
  "$W"/bin/awooop onboard --file "$W"/run/ewoooc.json --var EXAMPLE_MCP >"$W"/run/onboard.out 2>&1
check "onboard (tools pinned in the sandbox)" $? 0
EA=$(awk '$1 == "key" && $2 == "ewoooc-agent" {print $4}' "$W"/run/onboard.out)
meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}'
answer=$(curl -s -H "Authorization: Bearer $EA" -H 'Content-Type: application/json' \
  -H "MCP-Protocol-Version: 2026-07-28" -H "Mcp-Method: tools/call" -H "Mcp-Name: get_incident__ops" \
  --data-binary "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"get_incident__ops\",\"arguments\":{\"id\":\"INC-101\"},$meta}}" \
  "$URL/v1/projects/ewoooc/mcp" | jq -r '.result.content[0].text // .error.data.code // "none"')
check "a tool call through the sandbox" "${answer:0:7}" INC-101
kill -TERM "$SP"
for _ in $(seq 1 150); do kill -0 "$SP" 2>/dev/null || break; sleep 0.1; done
wait
check "SIGTERM: stopped" "$(kill -0 "$SP" 2>/dev/null && echo running || echo stopped)" stopped
check "no sandbox error logged" "$(grep -c 'E-MCP-007' "$W"/run/log)" 0

# what it did, against the unit's filters
expand() { # a SystemCallFilter group, recursively
  systemd-analyze syscall-filter "$1" 2>/dev/null | sed -n '2,$p' | sed 's/^ *//; /^#/d; /^$/d' |
    while read -r s; do if [[ $s == @* ]]; then expand "$s"; else echo "$s"; fi; done
}
for g in $(unit SystemCallFilter); do
  if [[ $g == @* ]]; then expand "$g"; else echo "$g"; fi
done | sort -u >"$W"/run/allowed
sed -nE 's/^[0-9]+ +([a-z_0-9]+)\(.*/\1/p' "$W"/run/trace | sort -u >"$W"/run/used
check "system calls seen" "$([ "$(wc -l <"$W"/run/used)" -gt 40 ] && echo many)" many
check "system calls outside SystemCallFilter" "$(comm -23 "$W"/run/used "$W"/run/allowed | tr '\n' ' ')" ""
check "the sandbox mounted and pivoted" "$(grep -cE '^[0-9]+ +pivot_root\(.*= 0$' "$W"/run/trace | awk '{print ($1 > 0)}')" 1
check "its /proc mounted" "$(grep -cE '^[0-9]+ +mount\("proc".*= 0$' "$W"/run/trace | awk '{print ($1 > 0)}')" 1
families=" $(unit RestrictAddressFamilies) "
bad_af=$(grep -oE 'socket\(AF_[A-Z0-9]+' "$W"/run/trace | sort -u | sed 's/socket(//' |
  while read -r f; do [[ $families == *" $f "* ]] || echo "$f"; done)
check "socket families outside RestrictAddressFamilies" "$bad_af" ""
allowed_ns=" $(unit RestrictNamespaces) "
bad_ns=$(grep -ohE 'CLONE_NEW[A-Z]+' "$W"/run/trace | sort -u | while read -r f; do
  case $f in
    CLONE_NEWUSER) n=user ;; CLONE_NEWNS) n=mnt ;; CLONE_NEWPID) n=pid ;; CLONE_NEWIPC) n=ipc ;;
    CLONE_NEWUTS) n=uts ;; CLONE_NEWNET) n=net ;; CLONE_NEWCGROUP) n=cgroup ;; *) n=$f ;;
  esac
  [[ $allowed_ns == *" $n "* ]] || echo "$n"
done)
check "namespaces outside RestrictNamespaces" "$bad_ns" ""

# ProtectKernelTunables= would mount over /proc/sys: a user namespace may
# then not mount a proc of its own (the sandbox's /proc)
mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys
check "with /proc/sys covered, no sandbox /proc" \
  "$(setpriv --reuid=nobody --regid=nogroup --clear-groups unshare -Urmpf --mount-proc true 2>&1 | grep -c 'mount /proc failed')" 1
umount /proc/sys

[ "$FAIL" -eq 0 ] || { tail -20 "$W"/run/log; cat "$W"/run/onboard.out; } >&2
echo "hardening: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
