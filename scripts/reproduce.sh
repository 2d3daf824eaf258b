#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Reproduce one of the measured experiments of docs/planner.md and
# docs/collaboration.md:
#
#   scripts/reproduce.sh NAME OUTDIR [--quick]
#                                        run experiment NAME, write OUTDIR/result.json
#                                        (--quick: a small version, seconds)
#   scripts/reproduce.sh --list          the NAMEs, one line each
#
# Each experiment is scripts/reproduce/NAME.py (Python 3 + numpy from
# Debian); it builds nothing itself: it runs the dpasync binaries of
# BUILD_DIR (default build/, built with scripts/build.sh when missing) on
# the shared data beside the repository (../shared/data) and writes
# OUTDIR/result.json, plus the tables (.md) and figures (.png) it names
# there.  Exit status: 0 done, 2 usage, otherwise the experiment's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)

list() {
  for f in "$here"/reproduce/*.py; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .py)
    [ "${name#_}" = "$name" ] || continue   # _helpers.py and the like
    # The first line of the module docstring says what it measures.
    what=$(sed -n '2,/^"""/{s/^"""//;p;q}' "$f" | head -1)
    [ -n "$what" ] || what=$(sed -n '1s/^"""//p' "$f")
    printf '%-14s %s\n' "${name//_/-}" "$what"
  done
}

case "${1:-}" in
  --list|-l) list; exit 0 ;;
  -h|--help|'') sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; [ -n "${1:-}" ]; exit $? ;;
esac
if [ $# -eq 3 ] && [ "$3" = --quick ]; then
  quick=--quick
elif [ $# -eq 2 ]; then
  quick=
else
  echo "reproduce.sh: usage: reproduce.sh NAME OUTDIR [--quick] (or --list)" >&2; exit 2
fi
name=$1 out=$2
script="$here/reproduce/${name//-/_}.py"   # async-vs-sync: async_vs_sync.py
case $name in
  */*|.*|_*|'') echo "reproduce.sh: no experiment named '$name' (see --list)" >&2; exit 2 ;;
esac
[ -f "$script" ] || { echo "reproduce.sh: no experiment named '$name' (see --list)" >&2; exit 2; }
build=${BUILD_DIR:-$src/build}
if [ ! -x "$build/tools/dpasync" ]; then
  "$src/scripts/deps.sh"
  "$src/scripts/build.sh" "$build" -Dbuildtype=release >/dev/null
fi
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1
exec /usr/bin/python3 "$script" --build "$build" --data "$src/../shared/data" --out "$out" $quick
