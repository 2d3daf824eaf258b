#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# run_fuzz.sh TARGET SEED_DIR [libFuzzer flags...]
# One bounded fuzz run for the test suite: the seeds are read from SEED_DIR
# and never written (what the run adds to its corpus goes to a scratch
# directory, removed afterwards).  A crashing input is kept as
# crash-<sha1> (leak-, timeout-, oom-) in the directory the test started
# in.  Exit status is the target's: non-zero on a crash, a leak, a timeout
# or a failed invariant.
set -u
target=$1 seeds=$2
shift 2
out=$(pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/fuzzrun.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
"$target" "$@" -artifact_prefix="$out/" "$work" "$seeds"
