#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job in one command: on a fresh Debian 12 machine, install what is
# missing, build, generate data and certificates, start learnerd and N ownerd
# processes on loopback, wait for the job, print psi of the trained model
# against the non-private optimum next to psi of theta = 0 and the psi
# learnerd's planner predicted, and stop everything it started.  learnerd
# plans T, the step, the clip and every owner's answer cap (docs/planner.md)
# with constants that `dpasync forecast` measures on a public sample drawn
# from the same generator as the owners' rows (never from them); --T fixes
# T instead.
#
#   deploy/local-cluster.sh [--owners N] [--T T] [--epsilon E] [--rate R]
#                           [--rows R] [--mode request|broadcast|sync1|sync2]
#                           [--out DIR] [--bindir DIR]
#                           [--learnerd-args 'ARGS'] [--ownerd-args 'ARGS']
#
# --mode sync1|sync2 runs synchronous rounds (docs/learnerd.md §9); so does
# DP_MODE=sync1 in the environment (--mode wins).  --rate is the owners'
# clock rate (requests/s), used in request mode only.  --out is where
# everything goes (default out/local-cluster; --work is an older spelling).
# --bindir DIR uses the binaries in DIR (a build directory, a directory
# holding dpasync, learnerd and ownerd, or a prefix with bin/dpasync and
# sbin/learnerd, sbin/ownerd: /usr for the Debian package) and skips the
# dependency check and the build.  --learnerd-args and --ownerd-args add
# flags to every learnerd or ownerd (split on spaces, e.g.
# --ownerd-args '--log-level debug'); they come last, so they win.
# Bad usage (an unknown option, a missing or non-numeric value) is one line
# and exit 2, before anything is built.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

OWNERS=3 T=0 EPS=1 RATE=10 ROWS=20000 MODE=${DP_MODE:-request} WORK=$ROOT/out/local-cluster
BINDIR='' LEARNERD_ARGS='' OWNERD_ARGS=''
# The comment block at the top, without the first line.
usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; }
die() { echo "local-cluster: $*" >&2; exit 2; }
# value OPTION ARGC VALUE: the option's value, or exit 2 when it is missing.
value() { [ "$2" -ge 2 ] || die "$1 needs a value (try --help)"; }
uint() { [[ $2 =~ ^[0-9]+$ ]] || die "$1: expected a whole number, got '$2'"; }
posint() { uint "$1" "$2"; [ "$2" -gt 0 ] || die "$1: expected a number > 0, got '$2'"; }
posnum() {
  if ! [[ $2 =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$ ]] ||
     ! awk -v v="$2" 'BEGIN { exit !(v + 0 > 0) }'; then
    die "$1: expected a number > 0, got '$2'"
  fi
}
while [ $# -gt 0 ]; do
  case $1 in
    --owners|--T|--t|--epsilon|--rate|--rows|--mode|--out|--work|--bindir|--learnerd-args|--ownerd-args)
      value "$1" $# ;;
  esac
  case $1 in
    --owners) posint "$1" "$2"; OWNERS=$2; shift 2 ;;
    --T|--t) uint "$1" "$2"; T=$2; shift 2 ;;
    --epsilon) [ "$2" = inf ] || posnum "$1" "$2"; EPS=$2; shift 2 ;;
    --rate) posnum "$1" "$2"; RATE=$2; shift 2 ;;
    --rows) posint "$1" "$2"; ROWS=$2; shift 2 ;;
    --mode) MODE=$2; shift 2 ;;
    --out|--work) WORK=$2; shift 2 ;;
    --bindir) BINDIR=$2; shift 2 ;;
    --learnerd-args) LEARNERD_ARGS=$2; shift 2 ;;
    --ownerd-args) OWNERD_ARGS=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (try --help)" ;;
  esac
done
case $MODE in
  request|broadcast|sync1|sync2) ;;
  *) die "--mode: expected request, broadcast, sync1 or sync2, got '$MODE'" ;;
esac
read -r -a learnerd_args <<< "$LEARNERD_ARGS"
read -r -a ownerd_args <<< "$OWNERD_ARGS"

if [ -n "$BINDIR" ]; then
  [ -d "$BINDIR" ] || die "--bindir: no directory '$BINDIR'"
  BINDIR=$(cd "$BINDIR" && pwd)
  if [ -x "$BINDIR/tools/dpasync" ]; then   # a build directory
    DP=$BINDIR/tools/dpasync LEARNERD=$BINDIR/learner/learnerd OWNERD=$BINDIR/owner/ownerd
  elif [ -x "$BINDIR/sbin/learnerd" ]; then  # a prefix: the package's /usr
    DP=$BINDIR/bin/dpasync LEARNERD=$BINDIR/sbin/learnerd OWNERD=$BINDIR/sbin/ownerd
  else
    DP=$BINDIR/dpasync LEARNERD=$BINDIR/learnerd OWNERD=$BINDIR/ownerd
  fi
  for b in "$DP" "$LEARNERD" "$OWNERD"; do
    [ -x "$b" ] || die "--bindir: $b is missing or not executable"
  done
else
  scripts/deps.sh
  BUILD=$ROOT/build-release
  if [ ! -f "$BUILD/build.ninja" ]; then
    meson setup "$BUILD" -Dbuildtype=release >/dev/null
  fi
  ninja -C "$BUILD" >/dev/null
  DP=$BUILD/tools/dpasync LEARNERD=$BUILD/learner/learnerd OWNERD=$BUILD/owner/ownerd
fi

rm -rf "$WORK"
mkdir -p "$WORK"
pids=()
cleanup() {
  for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

rows=$(printf "$ROWS,%.0s" $(seq "$OWNERS")); rows=${rows%,}
names=$(printf "owner-%s," $(seq "$OWNERS")); names=${names%,}
# One more file from the same generator is the public sample.
"$DP" gen --rows "$rows,2000" --features 10 --seed 1 --out "$WORK/data" >/dev/null
mv "$WORK/data/owner-$((OWNERS + 1)).csv" "$WORK/data/public.csv"
"$DP" forecast --sample "$WORK/data/public.csv" --rows "$rows" --epsilon "$EPS" --bias \
  > "$WORK/forecast.json"
"$DP" certs --out "$WORK/certs" --owners "$OWNERS" >/dev/null

"$LEARNERD" --listen 127.0.0.1:0 --port-file "$WORK/learner.ports" \
  --ca "$WORK/certs/ca.crt" --cert "$WORK/certs/learner.crt" --key "$WORK/certs/learner.key" \
  --owners "$names" --T "$T" --mode "$MODE" --bias --out "$WORK/learner" \
  --public "$WORK/forecast.json" \
  --metrics-listen 127.0.0.1:0 "${learnerd_args[@]}" 2>"$WORK/learnerd.log" &
lpid=$!
pids+=("$lpid")
for _ in $(seq 100); do [ -s "$WORK/learner.ports" ] && break; sleep 0.1; done
[ -s "$WORK/learner.ports" ] || { echo "learnerd did not start:"; cat "$WORK/learnerd.log"; exit 1; }
PORT=$(sed -n 's/^tls=//p' "$WORK/learner.ports")

for i in $(seq "$OWNERS"); do
  mkdir -p "$WORK/owner-$i"
  "$OWNERD" --learner "127.0.0.1:$PORT" --ca "$WORK/certs/ca.crt" \
    --cert "$WORK/certs/owner-$i.crt" --key "$WORK/certs/owner-$i.key" \
    --data "$WORK/data/owner-$i.csv" --bias --epsilon "$EPS" --rate "$RATE" \
    --ledger "$WORK/owner-$i/ledger" --model-out "$WORK/owner-$i/model.json" --once \
    "${ownerd_args[@]}" 2>"$WORK/owner-$i/ownerd.log" &
  pids+=("$!")
done

if [ "$T" = 0 ]; then Tdesc="T planned"; else Tdesc="T=$T"; fi
# The owners' clocks only ask in request mode; otherwise the learner does.
if [ "$MODE" = request ]; then how="clocks at $RATE/s"; else how="$MODE mode"; fi
echo "learnerd on 127.0.0.1:$PORT, $OWNERS owners, $Tdesc, epsilon=$EPS each, $how"
if ! wait "$lpid"; then
  echo "learnerd failed; last lines of its log:"; tail -5 "$WORK/learnerd.log"; exit 1
fi
files=$(for i in $(seq "$OWNERS"); do printf "%s " "$WORK/data/owner-$i.csv"; done)
# shellcheck disable=SC2086
"$DP" eval "$WORK/learner/model.json" $files > "$WORK/eval.json"
# psi_zero is psi of theta = 0, the model that needs no data: a private
# model is only worth its budget when it beats it.
python3 - "$WORK/eval.json" "$WORK/learner/checkpoint.json" "$WORK/learner/trace.csv" \
  "$WORK/learnerd.log" <<'PY'
import json, re, sys
e, ck = (json.load(open(f)) for f in sys.argv[1:3])
job = ck["job"]; plan = job.get("plan", {}); T = job["T"]
# From the first query (the earliest time_unix - rtt_s of trace.csv) to the
# last update, as dpasync report and netns-cluster.sh count (docs/plots.md
# "Throughput"); not from this script's start, which includes startup.
rows = [l.split(",") for l in open(sys.argv[3]).read().splitlines()[1:]]
secs = float(rows[-1][1]) - min(float(r[1]) - float(r[4]) for r in rows)
print("trained %s model: f = %.6g, non-private optimum f* = %.6g, psi = f/f* - 1 = %.4g"
      % (e["model"], e["f"], e["f_star"], e["psi"]))
print("psi of theta = 0: %.4g; predicted psi (learnerd's plan, constants %s): %.4g"
      % (e["psi_zero"], "measured on the public sample" if plan.get("measured")
         else "assumed from the data's shape",
         plan.get("psi", float("nan"))))
print("%s: %s" % ("useful" if e["psi"] < e["psi_zero"] else "NOT useful (worse than theta = 0)",
                  "the private model beats theta = 0" if e["psi"] < e["psi_zero"]
                  else "more rows, a larger budget or fewer features are needed"))
# What the learner's plan warned of (collaborating that does not pay, a
# model predicted worse than theta = 0, shape-only constants) and its
# comparison of the mechanisms: said again here, where the user looks.
for line in open(sys.argv[4], errors="replace"):
    m = re.search(r" (warn|info) learner: plan: (.*)$", line)
    if m:
        print("%s: %s" % ("plan warning" if m.group(1) == "warn" else "plan", m.group(2)))
print("plan: T=%d eta=%.4g clip=%.4g answer caps K_i=%s" % (T, job["eta"], job["clip_l1"],
      ",".join(str(k) for k in plan.get("answers_cap", []))))
mode = ck["state"].get("mode", "request")
if mode.startswith("sync"):   # T - 1 rounds of every owner (docs/learnerd.md §9)
    print("%d %s rounds in %.1f s (%.1f rounds/s)" % (T - 1, mode, secs, (T - 1) / secs))
else:
    print("%d iterations in %.1f s (%.1f it/s)" % (T, secs, T / secs))
PY
echo "model:   $WORK/learner/model.json"
echo "trace:   $WORK/learner/trace.csv"
echo "ledgers: $WORK/owner-*/ledger"
echo "logs:    $WORK/*.log $WORK/owner-*/ownerd.log"
