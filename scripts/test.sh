#!/usr/bin/env bash
# The test command of the README and of .ci/run: installs what is missing,
# builds from scratch, runs the unit and integration suites, then the unit
# suite again under AddressSanitizer + UndefinedBehaviorSanitizer.  The last
# line is "N passed, N failed" over all of it.
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh || { echo "dependency installation failed"; echo "0 passed, 1 failed"; exit 1; }

export OPENBLAS_NUM_THREADS=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
passed=0 failed=0

# Count results from meson's machine-readable log.
tally() {
  local log=$1/meson-logs/testlog.json
  [ -f "$log" ] || { failed=$((failed + 1)); return; }
  local p f
  p=$(grep -c '"result": "OK"' "$log" || true)
  f=$(grep -c -E '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log" || true)
  passed=$((passed + p)) failed=$((failed + f))
}

run_suite() {   # build-dir, meson setup args..., -- meson test args...
  local dir=$1; shift
  local setup=() testargs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do setup+=("$1"); shift; done
  shift
  testargs=("$@")
  rm -rf "$dir"
  # The same build script the Dockerfile's build stage runs.
  if ! scripts/build.sh "$dir" "${setup[@]}" >"$dir.build.log" 2>&1; then
    tail -50 "$dir.build.log"; failed=$((failed + 1)); return
  fi
  meson test -C "$dir" --print-errorlogs "${testargs[@]}"
  tally "$dir"
}

run_suite build-test -Dbuildtype=debugoptimized -- --suite unit --suite integration --num-processes 2
run_suite build-asan -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false \
  -- --suite unit --num-processes 2

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
