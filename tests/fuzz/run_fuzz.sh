#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# run_fuzz.sh TARGET SEED_DIR [libFuzzer flags...]
# One bounded fuzz run for the test suite: the seeds are read from SEED_DIR
# and never written (what the run adds to its corpus goes to a scratch
# directory, removed afterwards).  A crashing input is kept as
# crash-<sha1> (leak-, timeout-, oom-) in the directory the test started
# in, and printed in hex, so that a CI log alone is enough to reproduce it.
# Exit status: 0, or 1 on a crash, a leak, a timeout or a failed invariant.
# (libFuzzer's own code for a finding is 77, which meson reads as "skipped".)
set -u
target=$1 seeds=$2
shift 2
out=$(pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/fuzzrun.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
before=$(ls "$out")
"$target" "$@" -artifact_prefix="$out/" "$work" "$seeds"
rc=$?
[ "$rc" -eq 0 ] && exit 0
echo "run_fuzz.sh: $target exited $rc"
for f in $(ls "$out"); do
  case $f in crash-*|leak-*|timeout-*|oom-*|slow-unit-*) ;; *) continue ;; esac
  printf '%s\n' "$before" | grep -qxF "$f" && continue
  echo "run_fuzz.sh: input $out/$f ($(wc -c <"$out/$f") bytes):"
  od -A d -t x1 "$out/$f" | head -64
done
exit 1
