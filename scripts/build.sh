#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The one build command, shared by CI (scripts/test.sh) and the container
# image (deploy/Dockerfile), so that what CI builds and tests is built the
# same way as what ships:
#
#   scripts/build.sh BUILD_DIR [meson setup options...]
#
# Configures BUILD_DIR from scratch with `meson setup` (an existing BUILD_DIR
# is removed first: options given now are the only ones that apply), then
# compiles everything with ninja.  Dependencies are not installed here; run
# scripts/deps.sh first.  Examples:
#
#   scripts/build.sh build-test -Dbuildtype=debugoptimized           # CI
#   scripts/build.sh /build -Dbuildtype=release -Dprefix=/usr/local   # image
#
# Exit status: 0 built; 2 usage; otherwise that of the failing step (meson's
# log is printed on a failed setup, ninja's output is always shown).
set -euo pipefail

if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'
  [ $# -ge 1 ] && exit 0
  exit 2
fi
BUILD=$1; shift
SRC=$(cd "$(dirname "$0")/.." && pwd)

case $BUILD in
  ''|/|.|..) echo "build.sh: refusing build directory '$BUILD'" >&2; exit 2 ;;
esac
# A build directory is meson's (meson-info/ or build.ninja inside) or new;
# never delete anything else, e.g. a typo that names the source tree.
if [ -e "$BUILD" ]; then
  if [ -d "$BUILD/meson-info" ] || [ -f "$BUILD/build.ninja" ] || [ -z "$(ls -A "$BUILD")" ]; then
    rm -rf "$BUILD"
  else
    echo "build.sh: '$BUILD' exists and is not a meson build directory; not touching it" >&2
    exit 2
  fi
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! meson setup "$BUILD" "$SRC" "$@" >"$log" 2>&1; then
  cat "$log" >&2
  echo "build.sh: meson setup failed" >&2
  exit 1
fi
ninja -C "$BUILD"
