#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build the Debian package of dpasync (debian/) and check it with lintian:
#
#   scripts/deb.sh [OUT_DIR]          (default OUT_DIR: dist/ in the tree)
#
# Copies the tree this script is in (its committed files and the working
# copy's changes, never build directories or dist/) to a temporary
# directory, runs `dpkg-buildpackage -b -us -uc` there (which compiles the
# project and runs the unit suite; DEB_BUILD_OPTIONS=nocheck skips it), and
# collects dpasync_VERSION_ARCH.deb (and its -dbgsym .deb), .changes and
# .buildinfo into OUT_DIR.
# dpkg-buildpackage writes its outputs to the parent of the tree it builds:
# that parent is the temporary directory, so nothing lands beside the
# clone.  The .deb's file list is checked against the layout of
# docs/deploy.md "Debian package".  Then lintian checks the .changes and the
# .deb it lists: an error or a warning fails the script (a warning that
# must stay is overridden, with its reason, in
# debian/dpasync.lintian-overrides).
#
# Environment: DEB_BUILD_OPTIONS=nocheck DEB_BUILD_PROFILES=nocheck build
# without the unit suite and without cmocka; DP_NO_LINTIAN=1 skips lintian
# (for an image's build stage: CI's run of this script has checked the same
# debian/).
#
# Needs debhelper, dpkg-dev, lintian, fakeroot and the Build-Depends of
# debian/control (scripts/deps.sh, plus scdoc):
#   sudo apt-get install debhelper dpkg-dev lintian fakeroot scdoc
# Exit status: 0 built, laid out as promised and lintian clean; 1 a file of
# the layout missing; 2 usage, or meson.build and debian/changelog naming
# two versions; otherwise that of the failing step (dpkg-buildpackage,
# lintian).  Guide: docs/deploy.md "Debian package".
set -euo pipefail

if [ $# -gt 1 ] || [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
  sed -n '3,32p' "$0" | sed 's/^# \{0,1\}//'
  [ $# -eq 1 ] && exit 0
  exit 2
fi
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$SRC/dist}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# One version (docs/deploy.md "Debian package"): meson.build's project
# version, which --version prints, is debian/changelog's top entry.
mver=$(sed -n "s/^ *version: '\([^']*\)'.*/\1/p" "$SRC/meson.build" | head -n 1)
dver=$(dpkg-parsechangelog -l "$SRC/debian/changelog" -S Version)
if [ "$mver" != "$dver" ]; then
  echo "deb.sh: meson.build says version $mver, debian/changelog $dver: make them one" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The tree as git sees it (tracked and new files, not ignored ones), so that
# build directories, dist/ and editor litter stay out; a tree that is not a
# git checkout is copied whole, without build* and dist.
mkdir "$tmp/dpasync-$dver"
if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
  # (a tracked file deleted in the working copy is left out, not an error)
  (cd "$SRC" && git ls-files -z --cached --others --exclude-standard |
     while IFS= read -r -d '' f; do
       if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
     done | tar --null -T - -cf -) | tar -xf - -C "$tmp/dpasync-$dver"
else
  tar -C "$SRC" --exclude='./build*' --exclude=./dist --exclude=./.git -cf - . |
    tar -xf - -C "$tmp/dpasync-$dver"
fi

# meson compiles through ccache where it is installed.  debhelper gives
# the build a HOME of its own, so name the cache of the caller's; and the
# temporary directory, in the compiler's -ffile-prefix-map, is a new one
# every time: ccache takes paths relative to it (the objects, which map it
# to ".", are the same either way).
export CCACHE_DIR="${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ccache}" \
  CCACHE_BASEDIR="$tmp" CCACHE_NOHASHDIR=true
(cd "$tmp/dpasync-$dver" && dpkg-buildpackage -b -us -uc)

arch=$(dpkg-architecture -qDEB_HOST_ARCH)
base=dpasync_${dver}_$arch
# The package, its debug symbols (dpasync-dbgsym, which the .changes lists
# too), the .changes and the .buildinfo.
cp "$tmp"/*_"${dver}"_"$arch".deb "$tmp/$base.changes" "$tmp/$base.buildinfo" "$OUT/"
echo "deb.sh: $OUT/$base.deb" >&2

# The layout docs/deploy.md "Debian package" promises: binaries and modes,
# units, sysusers and tmpfiles entries, examples, man pages.
list=$(dpkg-deb -c "$OUT/$base.deb")
bad=0
for want in \
    '^-rwxr-xr-x root/root .* \./usr/sbin/learnerd$' \
    '^-rwxr-xr-x root/root .* \./usr/sbin/ownerd$' \
    '^-rwxr-xr-x root/root .* \./usr/bin/dpasync$' \
    '^-rw-r--r-- root/root .* \./(usr/)?lib/systemd/system/learnerd\.service$' \
    '^-rw-r--r-- root/root .* \./(usr/)?lib/systemd/system/ownerd@\.service$' \
    '^-rw-r--r-- root/root .* \./usr/lib/sysusers\.d/dpasync\.conf$' \
    '^-rw-r--r-- root/root .* \./usr/lib/tmpfiles\.d/dpasync\.conf$' \
    '^-rw-r--r-- root/root .* \./usr/share/doc/dpasync/examples/ownerd-owner-1\.conf$' \
    '^-rw-r--r-- root/root .* \./usr/share/doc/dpasync/examples/grafana-dashboard\.json(\.gz)?$' \
    '^-rw-r--r-- root/root .* \./usr/share/doc/dpasync/README\.Debian(\.gz)?$' \
    '^-rw-r--r-- root/root .* \./usr/share/man/man8/learnerd\.8\.gz$' \
    '^-rw-r--r-- root/root .* \./usr/share/man/man8/ownerd\.8\.gz$' \
    '^-rw-r--r-- root/root .* \./usr/share/man/man1/dpasync\.1\.gz$' \
    '^-rw-r--r-- root/root .* \./usr/share/man/man5/dpasync-ledger\.5\.gz$'; do
  grep -Eq "$want" <<<"$list" || { echo "deb.sh: the .deb has no line matching $want" >&2; bad=1; }
done
# Nothing of the package lives in /var/lib/dpasync (tmpfiles.d creates it),
# so that dpkg never owns, and never removes, a ledger.
if grep -Eq ' \./var/' <<<"$list"; then
  echo "deb.sh: the .deb ships files under /var" >&2; bad=1
fi
[ "$bad" -eq 0 ] || exit 1

# lintian on the .changes checks the .deb files it lists as well.
[ -n "${DP_NO_LINTIAN:-}" ] && exit 0
lintian --fail-on error,warning --info --display-level '>=warning' \
  "$OUT/$base.changes"
