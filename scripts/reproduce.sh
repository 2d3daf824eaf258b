#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Reproduce one of the measured experiments of docs/planner.md,
# docs/collaboration.md and docs/async-vs-sync.md:
#
#   scripts/reproduce.sh NAME OUTDIR [--quick] [OPTION...]
#                                        run experiment NAME, write OUTDIR/result.json
#                                        (--quick: a small version, seconds to minutes;
#                                        the OPTIONs after OUTDIR go to the experiment,
#                                        e.g. async-vs-sync --repeats R)
#   scripts/reproduce.sh NAME --help     the experiment's protocol and its OPTIONs
#   scripts/reproduce.sh --list          the NAMEs, one line each
#
# Each experiment is scripts/reproduce/NAME.py (Python 3 + numpy from
# Debian); it builds nothing itself: it runs the dpasync binaries of
# BUILD_DIR (default build-release/, the Quick start's release build, made
# with scripts/build.sh when missing) on
# the shared data beside the repository (../shared/data) and writes
# OUTDIR/result.json, plus the tables (.md) and figures (.png) it names
# there.  An OPTION the experiment does not take is bad usage.  Exit
# status: 0 done, 2 usage, otherwise the experiment's (async-vs-sync: 1
# when some repeat of some mode failed, its results still written; 77 when
# network namespaces cannot be created here).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)

list() {
  for f in "$here"/reproduce/*.py; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .py)
    [ "${name#_}" = "$name" ] || continue   # _helpers.py and the like
    # The first line of the module docstring (after the #! and SPDX
    # lines) says what it measures.
    what=$(awk '!s && /^"""/ { s = 1; sub(/^"""/, "") } s && $0 != "" { sub(/"""$/, ""); print; exit }' "$f")
    printf '%-14s %s\n' "${name//_/-}" "$what"
  done
}

usage() { echo "reproduce.sh: usage: reproduce.sh NAME OUTDIR [--quick] [OPTION...] (or NAME --help, or --list)" >&2; exit 2; }
case "${1:-}" in
  --list|-l) list; exit 0 ;;
  -h|--help|'') sed -n '3,23p' "$0" | sed 's/^# \{0,1\}//'; [ -n "${1:-}" ]; exit $? ;;
  -*) usage ;;
esac
name=$1
script="$here/reproduce/${name//-/_}.py"   # async-vs-sync: async_vs_sync.py
case $name in
  */*|.*|_*|'') echo "reproduce.sh: no experiment named '$name' (see --list)" >&2; exit 2 ;;
esac
[ -f "$script" ] || { echo "reproduce.sh: no experiment named '$name' (see --list)" >&2; exit 2; }
case "${2:-}" in
  -h|--help)
    # The experiment's own help: its protocol and options (this script
    # supplies --build, --data and --out).
    exec /usr/bin/python3 "$script" --help ;;
  -*|'') usage ;;
esac
out=$2
shift 2
build=${BUILD_DIR:-$src/build-release}
if [ ! -x "$build/tools/dpasync" ]; then
  "$src/scripts/deps.sh"
  "$src/scripts/build.sh" "$build" -Dbuildtype=release >/dev/null
fi
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1
exec /usr/bin/python3 "$script" --build "$build" --data "$src/../shared/data" --out "$out" "$@"
