#!/usr/bin/env bash
# package_test.sh BUILD_DIR - the Debian package of `make deb`, built by
# packaging/debian/build-deb.sh from the binary and man page of BUILD_DIR:
#   1. its name, metadata and contents (dpkg-deb -f/-I/-c): the version is
#      the binary's, Depends has the libraries and adduser, the settings are
#      a private conffile, every file is root's, nothing unexpected;
#   2. lintian: no error or warning (each accepted tag is overridden in
#      packaging/debian/lintian-overrides with its reason);
#   3. the unit: runs `awooop serve` as awooop with its settings file and the
#      hardening options; `systemd-analyze verify` says nothing;
#   4. the settings file names only variables the binary reads;
#   5. unpacked without root (dpkg -x): the installed binary's libraries
#      resolve, its `serve` (on a loopback port, a temp state dir) answers
#      /healthz and /readyz, prints the platform-admin key once on stdout
#      (never in the log, not again at the next start), and that key works
#      (the API and the installed client); SIGTERM stops it with 0;
#   6. as root only (skipped otherwise, saying so): `dpkg -i` into an overlay
#      of this machine's root in a private mount namespace, so the machine is
#      not changed - the postinst's user and state directory, `serve` as that
#      user without capabilities, reinstall, remove (the settings stay),
#      purge (the state goes).
set -uo pipefail
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PASS=0
FAIL=0
SKIPS=0 # parts that could not run here: the test then reports a skip (77)
PIDS=()
ok() { PASS=$((PASS + 1)); }
bad() { FAIL=$((FAIL + 1)); echo "FAIL: $*" >&2; }
check() { if [ "$2" == "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi; }
has() { if grep -qE -- "$2" "$3"; then ok; else bad "$1: no /$2/ in $3"; fi; }

# serve_wait LOG: the port once "awooop serving" is logged (empty: it is not)
serve_wait() {
  local _
  for _ in $(seq 1 100); do
    grep -q '"awooop serving"' "$1" 2>/dev/null && break
    sleep 0.1
  done
  grep '"awooop serving"' "$1" 2>/dev/null | jq -r .port
}
http_code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

# unit_env UNIT ENVFILE: the environment the unit gives serve, one NAME=value
# a line - its Environment= lines, then the file's (EnvironmentFile wins)
unit_env() {
  sed -n 's/^Environment=//p' "$1"
  grep -E '^[A-Za-z_][A-Za-z0-9_]*=' "$2" || true
}

# ---------------------------------------------------------------- part 6
# (re-entered as root in a private mount namespace: unshare -m SELF --overlay)
if [ "${1:-}" = "--overlay" ]; then
  DEB=$2
  TMP=$3
  M=$TMP/ov
  mkdir -p "$M"
  mount -t tmpfs tmpfs "$M" || { echo "FAIL: tmpfs" >&2; exit 1; }
  mkdir "$M/upper" "$M/work" "$M/root"
  R=$M/root
  mount -t overlay overlay -o "lowerdir=/,upperdir=$M/upper,workdir=$M/work" "$R" ||
    { echo "FAIL: cannot mount an overlay of /" >&2; exit 1; }
  # no /run/systemd/system: the maintainer scripts start and stop nothing
  if ! { mount -t proc proc "$R/proc" && mount --rbind /dev "$R/dev" &&
    mount -t tmpfs tmpfs "$R/run" && mount -t tmpfs tmpfs "$R/tmp"; }; then
    echo "FAIL: mounts in the overlay root" >&2
    exit 1
  fi
  cp "$DEB" "$R/tmp/awooop.deb"
  in_root() { chroot "$R" "$@"; }

  in_root getent passwd awooop >/dev/null && bad "awooop user exists before the install"
  in_root dpkg -i /tmp/awooop.deb >"$TMP/dpkg-i.out" 2>&1
  check "dpkg -i: exit" $? 0
  # shellcheck disable=SC2016 # dpkg-query's own ${Status}
  check "installed" "$(in_root dpkg-query -W -f='${Status}' awooop)" "install ok installed"
  check "dpkg --verify" "$(in_root dpkg --verify awooop)" ""
  IFS=: read -r _ _ uid gid _ home shell < <(in_root getent passwd awooop)
  check "user: home" "$home" /var/lib/awooop
  check "user: no login shell" "$shell" /usr/sbin/nologin
  check "user: a system uid" "$([ "${uid:-1000}" -lt 1000 ] && echo yes)" yes
  check "user: its own group" "$(in_root getent group awooop | cut -d: -f3)" "$gid"
  check "state dir" "$(in_root stat -c '%U:%G %a' /var/lib/awooop)" "awooop:awooop 700"
  check "settings" "$(in_root stat -c '%U:%G %a' /etc/awooop/awooop.env)" "root:root 600"
  if in_root sh -c 'command -v systemd-analyze' >/dev/null; then
    (cd "$R" && in_root systemd-analyze verify /lib/systemd/system/awooop.service) >"$TMP/verify-root.out" 2>&1
    check "systemd-analyze verify (installed)" "$?:$(cat "$TMP/verify-root.out")" "0:"
  fi

  # serve as the unit would: its user, no capabilities, no new privileges,
  # umask 077, in its working directory, with its environment
  mapfile -t ENV < <(unit_env "$R/lib/systemd/system/awooop.service" "$R/etc/awooop/awooop.env")
  chroot "$R" setpriv --reuid=awooop --regid=awooop --clear-groups --no-new-privs \
    --inh-caps=-all --bounding-set=-all -- sh -c 'umask 077; cd /var/lib/awooop && exec "$@"' sh \
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "${ENV[@]}" /usr/bin/awooop serve --listen 127.0.0.1:0 \
    >"$TMP/ov.out" 2>"$TMP/ov.log" &
  pid=$!
  PORT=$(serve_wait "$TMP/ov.log")
  if [ -z "$PORT" ]; then
    bad "serve as awooop did not start: $(tail -3 "$TMP/ov.log")"
  else
    KEY=$(sed -n 2p "$TMP/ov.out")
    check "as awooop: /readyz" "$(http_code "http://127.0.0.1:$PORT/readyz")" 200
    check "as awooop: the key works" \
      "$(http_code -H "Authorization: Bearer $KEY" "http://127.0.0.1:$PORT/v1/projects")" 200
    check "as awooop: store" "$(in_root stat -c '%U %a' /var/lib/awooop/awooop.db)" "awooop 600"
    check "as awooop: publish keys" \
      "$(in_root stat -c '%U %a' /var/lib/awooop/publish-keys.json)" "awooop 600"
  fi
  kill -TERM "$pid" 2>/dev/null
  wait "$pid"
  check "as awooop: SIGTERM exit" $? 0

  # the upgrade path (configure with the old version), then remove and purge
  in_root dpkg -i /tmp/awooop.deb >"$TMP/dpkg-i2.out" 2>&1
  check "reinstall: exit" $? 0
  check "reinstall: one user" "$(in_root getent passwd | grep -c '^awooop:')" 1
  check "reinstall: the store stays" "$(in_root test -f /var/lib/awooop/awooop.db && echo yes)" yes
  in_root dpkg -r awooop >"$TMP/dpkg-r.out" 2>&1
  check "remove: exit" $? 0
  check "remove: binary gone" "$(in_root test -e /usr/bin/awooop || echo gone)" gone
  check "remove: settings stay" "$(in_root test -f /etc/awooop/awooop.env && echo yes)" yes
  check "remove: store stays" "$(in_root test -f /var/lib/awooop/awooop.db && echo yes)" yes
  in_root dpkg -P awooop >"$TMP/dpkg-p.out" 2>&1
  check "purge: exit" $? 0
  check "purge: settings gone" "$(in_root test -e /etc/awooop || echo gone)" gone
  check "purge: state gone" "$(in_root test -e /var/lib/awooop || echo gone)" gone
  check "purge: user stays" "$(in_root getent passwd awooop | cut -d: -f1)" awooop
  [ "$FAIL" -eq 0 ] || cat "$TMP"/dpkg-*.out >&2
  echo "overlay install: $PASS passed, $FAIL failed"
  [ "$FAIL" -eq 0 ]
  exit
fi

# ---------------------------------------------------------------- parts 1-5
BUILD=$(cd "$1" && pwd)
TMP=$(mktemp -d /tmp/aw-package.XXXXXX)
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  [ -n "${KEEP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT
for tool in dpkg-deb dpkg-shlibdeps lintian curl jq help2man; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing (scripts/deps.sh --test installs it)" >&2; exit 1; }
done

# 1. name, metadata, contents
VERSION=$("$BUILD/awooop" --version | awk '{print $2}')
ARCH=$(dpkg --print-architecture)
DEB=$("$SRC/packaging/debian/build-deb.sh" "$BUILD" "$TMP/out" 2>"$TMP/build.err")
check "build-deb: exit" $? 0
[ -f "$DEB" ] || { cat "$TMP/build.err" >&2; echo "FAIL: no package built" >&2; exit 1; }
check "file name" "$(basename "$DEB")" "awooop_${VERSION}_${ARCH}.deb"
check "Package" "$(dpkg-deb -f "$DEB" Package)" awooop
check "Version" "$(dpkg-deb -f "$DEB" Version)" "$VERSION"
check "Architecture" "$(dpkg-deb -f "$DEB" Architecture)" "$ARCH"
dpkg-deb -f "$DEB" Depends >"$TMP/depends"
for d in 'libc6 \(>= ' 'libsqlite3-0' 'libmicrohttpd12' 'libcurl4' 'libpq5' 'libhiredis' 'adduser'; do
  has "Depends: $d" "$d" "$TMP/depends"
done
dpkg-deb -I "$DEB" >"$TMP/info"
for f in conffiles md5sums postinst prerm postrm; do has "control member $f" " $f " "$TMP/info"; done
check "conffiles" "$(dpkg-deb --ctrl-tarfile "$DEB" | tar -xO ./conffiles)" /etc/awooop/awooop.env
dpkg-deb -c "$DEB" >"$TMP/contents"
check "every entry is root's" "$(awk '$2 != "root/root"' "$TMP/contents")" ""
awk '$1 !~ /^d/ {print $1, $6}' "$TMP/contents" | sort -k2 >"$TMP/files"
cat >"$TMP/want" <<'EOF'
-rw------- ./etc/awooop/awooop.env
-rw-r--r-- ./lib/systemd/system/awooop.service
-rwxr-xr-x ./usr/bin/awooop
-rw-r--r-- ./usr/share/doc/awooop/changelog.gz
-rw-r--r-- ./usr/share/doc/awooop/copyright
-rw-r--r-- ./usr/share/doc/awooop/install.md
-rw-r--r-- ./usr/share/lintian/overrides/awooop
-rw-r--r-- ./usr/share/man/man1/awooop.1.gz
EOF
check "files and modes" "$(diff "$TMP/want" "$TMP/files")" ""

# 2. lintian (as it says, it is meant to run unprivileged)
LINTIAN=(lintian --fail-on 'error,warning' --display-level '>=pedantic')
[ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1 && chmod 755 "$TMP" "$TMP/out" &&
  LINTIAN=(setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/tmp "${LINTIAN[@]}")
"${LINTIAN[@]}" "$DEB" >"$TMP/lintian.out" 2>&1
rc=$?
cat "$TMP/lintian.out"
check "lintian: no error or warning" $rc 0

# 3. the unit
ROOT=$TMP/root
dpkg -x "$DEB" "$ROOT"
UNIT=$ROOT/lib/systemd/system/awooop.service
for line in 'ExecStart=/usr/bin/awooop serve' 'EnvironmentFile=/etc/awooop/awooop.env' \
  'User=awooop' 'StateDirectory=awooop' 'NoNewPrivileges=yes' 'CapabilityBoundingSet=' \
  'ProtectSystem=strict' 'ReadWritePaths=/var/lib/awooop' 'ProtectHome=yes' 'PrivateTmp=yes' \
  'PrivateDevices=yes' 'ProtectKernelModules=yes' 'ProtectControlGroups=yes' \
  'RestrictNamespaces=user mnt pid ipc uts net' 'LockPersonality=yes' 'RestrictRealtime=yes' \
  'SystemCallArchitectures=native' 'KillMode=mixed'; do
  check "unit: $line" "$(grep -cxF -- "$line" "$UNIT")" 1
done
# off on purpose (the stdio MCP sandbox's /proc, JIT memory: the unit and
# docs/install.md say why)
for off in ProtectKernelTunables ProtectKernelLogs ProtectProc ProcSubset PrivateUsers \
  MemoryDenyWriteExecute; do
  check "unit: no $off" "$(grep -c "^$off=" "$UNIT")" 0
done
if command -v systemd-analyze >/dev/null; then
  # the unit as shipped, but its ExecStart the unpacked binary (verify
  # wants the commands to exist); no man page lookup (not installed here)
  mkdir -p "$TMP/unit"
  sed "s|/usr/bin/awooop|$ROOT/usr/bin/awooop|" "$UNIT" >"$TMP/unit/awooop.service"
  (cd "$TMP" && systemd-analyze verify --man=no "$TMP/unit/awooop.service") >"$TMP/verify.out" 2>&1
  check "systemd-analyze verify" "$?:$(cat "$TMP/verify.out")" "0:"
else
  echo "SKIP: systemd-analyze verify (systemd-analyze is not installed)"; SKIPS=$((SKIPS + 1))
fi

# 4. the settings file names only settings the binary reads (a line
#    "#AWOOOP_X=..." or "AWOOOP_X=...": X a serve flag's variable, or its _FILE)
ENVF=$ROOT/etc/awooop/awooop.env
"$ROOT/usr/bin/awooop" serve --help | grep -o '\[env AWOOOP_[A-Z0-9_]*\]' |
  sed 's/\[env \(.*\)\]/\1/' >"$TMP/known"
echo AWOOOP_BOOTSTRAP_KEY >>"$TMP/known"
n=0
while read -r var; do
  n=$((n + 1))
  base=${var%_FILE}
  grep -qxF "$var" "$TMP/known" || grep -qxF "$base" "$TMP/known" || bad "settings file: $var is not a setting"
done < <(sed -n 's/^#\{0,1\}\(AWOOOP_[A-Z0-9_]*\)=.*/\1/p' "$ENVF")
check "settings file: variables named" "$([ $n -ge 15 ] && echo enough)" enough
check "settings file: nothing set by default" "$(grep -cE '^[A-Za-z_]+=' "$ENVF")" 0

# 5. the unpacked binary serves
check "libraries resolve" "$(ldd "$ROOT/usr/bin/awooop" | grep -c 'not found')" 0
check "man page" "$(zcat "$ROOT/usr/share/man/man1/awooop.1.gz" | grep -c '^\.SS "awooop serve"')" 1
mapfile -t ENV < <(unit_env "$UNIT" "$ENVF")
serve() { # serve OUT LOG: the unpacked binary, the unit's environment, a temp state dir
  env -i PATH=/usr/bin:/bin "${ENV[@]}" AWOOOP_DB="sqlite:$TMP/state/awooop.db" \
    "$ROOT/usr/bin/awooop" serve --listen 127.0.0.1:0 >"$1" 2>"$2" &
  PIDS+=($!)
}
serve "$TMP/out1" "$TMP/log1"
PORT=$(serve_wait "$TMP/log1")
[ -n "$PORT" ] || { tail -5 "$TMP/log1" >&2; echo "FAIL: serve did not start" >&2; exit 1; }
U=http://127.0.0.1:$PORT
check "/healthz" "$(http_code "$U/healthz")" 200
check "/readyz" "$(http_code "$U/readyz")" 200
check "key announced on stdout" "$(sed -n 1p "$TMP/out1")" \
  "awooop: bootstrap platform-admin API key (shown once, store it now):"
KEY=$(sed -n 2p "$TMP/out1")
check "key shape" "$([[ "$KEY" =~ ^awk_[A-Za-z0-9_-]{43}$ ]] && echo ok)" ok
check "no key: 401" "$(http_code "$U/v1/projects")" 401
check "the key: 200" "$(http_code -H "Authorization: Bearer $KEY" "$U/v1/projects")" 200
AWOOOP_URL=$U AWOOOP_KEY=$KEY "$ROOT/usr/bin/awooop" project create demo >/dev/null 2>"$TMP/client.err"
check "client: project create" $? 0
check "client: project list" \
  "$(AWOOOP_URL=$U AWOOOP_KEY=$KEY "$ROOT/usr/bin/awooop" project list --json | jq -r '[.items[].id] | index("demo") != null')" true
check "state dir private" "$(stat -c %a "$TMP/state")" 700
check "store private" "$(stat -c %a "$TMP/state/awooop.db")" 600
kill -TERM "${PIDS[0]}"
wait "${PIDS[0]}"
check "SIGTERM: exit 0" $? 0
check "the key is in no log line" "$(grep -cF "$KEY" "$TMP/log1" "$TMP/client.err" | grep -vc ':0$')" 0
serve "$TMP/out2" "$TMP/log2"
PORT=$(serve_wait "$TMP/log2")
check "second start: serves" "$([ -n "$PORT" ] && echo yes)" yes
check "second start: no key printed" "$(cat "$TMP/out2")" ""
check "second start: the key still works" \
  "$(http_code -H "Authorization: Bearer $KEY" "http://127.0.0.1:$PORT/v1/projects/demo")" 200
kill -TERM "${PIDS[1]}"
wait "${PIDS[1]}"
PIDS=()

# 6. dpkg -i, as root, into an overlay root
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: dpkg -i into an overlay root (needs root: mount namespaces and chroot)"; SKIPS=$((SKIPS + 1))
elif ! grep -qw overlay /proc/filesystems; then
  echo "SKIP: dpkg -i into an overlay root (the kernel has no overlayfs)"; SKIPS=$((SKIPS + 1))
else
  unshare --mount --propagation private bash "$SELF" --overlay "$DEB" "$TMP"
  check "dpkg -i into an overlay root" $? 0
fi

echo "package: $PASS passed, $FAIL failed, $SKIPS part(s) skipped"
[ "$FAIL" -eq 0 ] || exit 1
[ "$SKIPS" -eq 0 ] || exit 77 # CTest: skipped, not passed (docs/testing.md)
