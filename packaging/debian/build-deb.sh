#!/usr/bin/env bash
# build-deb.sh [--configure] BUILD_DIR OUT_DIR - writes
# OUT_DIR/awooop_<version>_<arch>.deb and prints its path.
#
#   --configure  first configure and build BUILD_DIR as a Debian package is
#                built: Release, with dpkg-buildflags' flags (hardening=+all);
#                `make deb` does this. Without it the binary and man page
#                already built in BUILD_DIR are packaged (the `package` test).
#
# The tree is staged with `cmake --install --strip` (the binary, its man
# page) plus the files beside this script, and built with dpkg-deb
# --root-owner-group (no fakeroot, no debhelper). The version is the binary's
# own (`awooop --version`, CMake's project VERSION); Depends comes from
# dpkg-shlibdeps. DEB_MAINTAINER overrides the Maintainer field.
set -euo pipefail
umask 022
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
configure=0
if [ "${1:-}" = "--configure" ]; then
  configure=1
  shift
fi
[ $# -eq 2 ] || { echo "usage: build-deb.sh [--configure] BUILD_DIR OUT_DIR" >&2; exit 2; }
BUILD=$1
OUT=$2

# Reproducible: file times, the man page's and the changelog's dates are the
# commit's (or now, outside a git checkout).
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$SRC" log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH

if [ $configure -eq 1 ]; then
  export DEB_BUILD_MAINT_OPTIONS=hardening=+all
  CFLAGS="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
  LDFLAGS=$(dpkg-buildflags --get LDFLAGS)
  export CFLAGS LDFLAGS
  cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DAWOOOP_MAN=ON >/dev/null
  cmake --build "$BUILD" -j"$(nproc)" --target awooop man >&2
fi
BUILD=$(cd "$BUILD" && pwd)
[ -x "$BUILD/awooop" ] || { echo "build-deb: no $BUILD/awooop (build it first)" >&2; exit 1; }
[ -f "$BUILD/awooop.1" ] || { echo "build-deb: no $BUILD/awooop.1 (help2man missing when $BUILD was configured? scripts/deps.sh installs it)" >&2; exit 1; }

VERSION=$("$BUILD/awooop" --version | awk '$1 == "awooop" {print $2}')
[[ "$VERSION" =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || { echo "build-deb: bad version '$VERSION'" >&2; exit 1; }
ARCH=$(dpkg --print-architecture)
MAINTAINER=${DEB_MAINTAINER:-awooop maintainers <maintainers@awooop.invalid>}

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
ROOT=$WORK/root

# The binary and its man page.
DESTDIR=$ROOT cmake --install "$BUILD" --prefix /usr --strip --component awooop >/dev/null
strip --remove-section=.comment --remove-section=.note "$ROOT/usr/bin/awooop"
gzip -9n "$ROOT/usr/share/man/man1/awooop.1"
# The service: its unit, its settings (a conffile, private: it may hold
# secrets; systemd reads it as root before it drops to the awooop user).
install -D -m 0644 "$HERE/awooop.service" "$ROOT/lib/systemd/system/awooop.service"
install -D -m 0600 "$SRC/packaging/awooop.env" "$ROOT/etc/awooop/awooop.env"
DOC=$ROOT/usr/share/doc/awooop
# the years of the history (of the commit alone outside a git checkout)
first=$(git -C "$SRC" log --reverse --format=%cd --date=format:%Y 2>/dev/null | awk 'NR == 1')
last=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y)
years=${first:-$last}
[ "$years" = "$last" ] || years="$years-$last"
mkdir -p "$DOC"
sed "s|@YEARS@|$years|" "$HERE/copyright" >"$DOC/copyright"
chmod 0644 "$DOC/copyright"
install -m 0644 "$SRC/docs/install.md" "$DOC/install.md" # the unit's Documentation=
install -D -m 0644 "$HERE/lintian-overrides" "$ROOT/usr/share/lintian/overrides/awooop"
commit=$(git -C "$SRC" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
{
  echo "awooop ($VERSION) unstable; urgency=medium"
  echo
  echo "  * Built from the awooop source tree at commit $commit."
  echo
  echo " -- $MAINTAINER  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n >"$DOC/changelog.gz"
chmod 0644 "$DOC/changelog.gz"

# Control: Depends from the libraries the binary links (dpkg-shlibdeps
# wants a debian/control to read; a minimal one in the scratch dir).
mkdir -p "$ROOT/DEBIAN" "$WORK/pkg/debian"
printf 'Source: awooop\n\nPackage: awooop\nArchitecture: any\n' >"$WORK/pkg/debian/control"
shlibs=$(cd "$WORK/pkg" && dpkg-shlibdeps -O -e"$ROOT/usr/bin/awooop" 2>/dev/null |
  sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "build-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
size=$(du -k -s --apparent-size --exclude=DEBIAN "$ROOT" | cut -f1)
sed -e "s|@VERSION@|$VERSION|" -e "s|@ARCH@|$ARCH|" -e "s|@MAINTAINER@|$MAINTAINER|" \
  -e "s|@SIZE@|$size|" -e "s|@DEPENDS@|$shlibs|" "$HERE/control.in" >"$ROOT/DEBIAN/control"
echo /etc/awooop/awooop.env >"$ROOT/DEBIAN/conffiles"
for s in postinst prerm postrm; do
  install -m 0755 "$HERE/$s" "$ROOT/DEBIAN/$s"
done
(cd "$ROOT" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z |
  xargs -0 md5sum) >"$ROOT/DEBIAN/md5sums"
chmod 0644 "$ROOT/DEBIAN/control" "$ROOT/DEBIAN/conffiles" "$ROOT/DEBIAN/md5sums"

mkdir -p "$OUT"
DEB=$(cd "$OUT" && pwd)/awooop_${VERSION}_${ARCH}.deb
dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$DEB" >/dev/null
echo "$DEB"
