#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# compose one-shot `data`: synthetic rows for every owner that has none yet,
# written to data.csv in that owner's own data volume (mounted here at
# /var/lib/dpasync/owners/<name>).  An owner whose volume already holds a
# data.csv (real data, or an earlier run) is left alone.  Runs as root only
# to hand the fresh volumes to user dpasync (uid 10001; capabilities CHOWN,
# FOWNER, and DAC_OVERRIDE to write into a volume it handed over before);
# ownerd mounts its volume read-only.
#
# Environment: DP_OWNER_NAMES (a,b,c; required), DP_ROWS (20000 per owner),
# DP_FEATURES (10), DP_TASK (regression), DP_SEED (1), DP_GEN_ARGS (more
# `dpasync gen` flags), DP_ROOT (/var/lib/dpasync; tests only).
set -euo pipefail
R=${DP_ROOT:-/var/lib/dpasync}
names=${DP_OWNER_NAMES:?DP_OWNER_NAMES is not set}
IFS=, read -r -a all <<<"$names"

need=0
for n in "${all[@]}"; do
  d=$R/owners/$n
  if [ ! -d "$d" ]; then
    echo "data: no volume mounted at $d for owner '$n' (add it to the data service)" >&2
    exit 2
  fi
  [ -f "$d/data.csv" ] || need=1
done
if [ $need -eq 0 ]; then
  echo "data: every owner has data.csv"
  exit 0
fi

# The same seed gives the same files, so generating all owners again and
# taking only the missing ones keeps a partial re-run consistent.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rows=$(printf "${DP_ROWS:-20000},%.0s" "${all[@]}"); rows=${rows%,}
# shellcheck disable=SC2086
dpasync gen --rows "$rows" --features "${DP_FEATURES:-10}" --task "${DP_TASK:-regression}" \
  --seed "${DP_SEED:-1}" --out "$tmp" ${DP_GEN_ARGS:-} >/dev/null
i=0
for n in "${all[@]}"; do
  i=$((i + 1))
  d=$R/owners/$n
  if [ ! -f "$d/data.csv" ]; then
    cp "$tmp/owner-$i.csv" "$d/.data.csv.tmp"
    mv "$d/.data.csv.tmp" "$d/data.csv"
    echo "data: $n: $(($(wc -l <"$d/data.csv") - 1)) rows"
  fi
  if [ "$(id -u)" -eq 0 ]; then
    # ("$d/": the directory even where $d is a symbolic link to it)
    chmod 0750 "$d/"
    chmod 0640 "$d/data.csv"
    chown -R "${DP_UID:-10001}:${DP_UID:-10001}" "$d/"
  fi
done
