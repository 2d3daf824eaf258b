#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Line coverage of the daemons' code by the unit tests alone
# (docs/style.md "Coverage"):
#
#   scripts/coverage.sh [BUILD_DIR]        default BUILD_DIR: build-coverage
#
# Configures BUILD_DIR from scratch through scripts/build.sh (debug, with
# -Db_coverage=true; an existing BUILD_DIR is replaced), runs only the
# unit suite (meson test --suite unit), and prints gcovr's line coverage of
# every file under learner/ and owner/, one line per file and the total.
# The integration tests are not run: the figures say what the unit tests
# reach on their own.  Needs gcovr (scripts/deps.sh installs it).
# DP_JOBS sets the tests run at once (default 2).  Delete BUILD_DIR after.
#
# Exit status: 0 printed; 2 usage or gcovr missing; otherwise that of the
# failing step (a failing unit test fails the run: its figures would not
# mean much).
set -euo pipefail

if [ $# -gt 1 ] || [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
  sed -n '3,19p' "$0" | sed 's/^# \{0,1\}//'
  [ "${1:-}" = -h ] || [ "${1:-}" = --help ] && exit 0
  exit 2
fi
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build-coverage}
if ! command -v gcovr >/dev/null; then
  echo "coverage.sh: gcovr not found (scripts/deps.sh installs it)" >&2
  exit 2
fi

"$SRC/scripts/build.sh" "$BUILD" -Dbuildtype=debug -Db_coverage=true >/dev/null
BUILD=$(cd "$BUILD" && pwd)
# Counters of an earlier run in the same tree would add up.
find "$BUILD" -name '*.gcda' -delete
meson test -C "$BUILD" --no-rebuild --suite unit --num-processes "${DP_JOBS:-2}" >/dev/null
cd "$SRC"
# File, lines, executed, percentage: the list of missed lines is left out.
gcovr --root "$SRC" --object-directory "$BUILD" --filter 'learner/' --filter 'owner/' \
  --sort-percentage --txt |
  awk '$4 ~ /%$/ { printf "%-40s %7s %7s %6s\n", $1, $2, $3, $4; next }
       { sub(/ +Missing$/, ""); print }'
