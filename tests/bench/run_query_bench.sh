#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Privacy-kernel throughput against the memory-bandwidth limit (a plain
# vectorised read of the same matrix, measured inside bench_query) and
# against the numpy baseline, single thread, on the two reference sizes
# and a third larger than any L3 (2,500,000 x 10, 200 MB).  Each summary
# says where the matrix lives between repeats: "L3" when it fits in the
# last-level cache (then the streaming read runs at L3 speed, and that is
# the read the kernel is held to), "DRAM" otherwise (docs/bench.md).
#
#   run_query_bench.sh BENCH_QUERY NUMPY_GRAD_PY [REPEATS]
#
# Prints each program's JSON line and a summary with the two ratios and the
# targets (>= 0.6 of the streaming read, >= 3x numpy), then the L2 clipping
# kernel against the L1 one and a whole Gaussian answer against a Laplace
# one at 10,000 x 100 (target for both: median ratio of the pairs <= 1.10;
# docs/bench.md "L2 clipping").  Exit status 0
# unless a program fails; with BENCH_STRICT=1 also 1 when a target is missed.
#
# BENCH_BASELINE=/path/to/another/bench_query (built from an earlier commit)
# adds, per size, BENCH_ROUNDS (default 5) runs of each program taken
# alternately, and a line "baseline ... new/old=" with the median ratio of
# kernel times (docs/bench.md).  DP_KERNEL_ISA applies to both.
set -eu
bench=$1
numpy=$2
reps=${3:-30}
py=/usr/bin/python3
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

[ -x "$bench" ] || { echo "run_query_bench: $bench is not executable" >&2; exit 2; }
[ -r "$numpy" ] || { echo "run_query_bench: $numpy not found" >&2; exit 2; }
"$py" -c 'import numpy' 2>/dev/null || { echo "run_query_bench: $py has no numpy" >&2; exit 2; }
base=${BENCH_BASELINE:-}
[ -z "$base" ] || [ -x "$base" ] || { echo "run_query_bench: $base is not executable" >&2; exit 2; }

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -srm)"
echo "# cpu: $(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2- | sed "s/^ *//") x $(getconf _NPROCESSORS_ONLN)"
miss=0
l3=$(cat /sys/devices/system/cpu/cpu0/cache/index3/size 2>/dev/null || echo 0K)
case $l3 in *K) l3=$((${l3%K} * 1024)) ;; *M) l3=$((${l3%M} * 1048576)) ;; *) l3=0 ;; esac
for size in "250000 10" "50000 100" "2500000 10"; do
	set -- $size
	c=$("$bench" --rows "$1" --features "$2" --repeats "$reps")
	n=$("$py" "$numpy" --rows "$1" --features "$2" --repeats "$reps")
	echo "$c"
	echo "$n"
	"$py" - "$c" "$n" "$l3" <<'PY' || miss=1
import json, sys
c, n = json.loads(sys.argv[1]), json.loads(sys.argv[2])
mb = c['rows'] * c['features'] * 8
where = 'L3' if mb <= int(sys.argv[3]) else 'DRAM'
r_stream = c['stream_seconds'] / c['kernel_seconds']
r_numpy = n['seconds'] / c['kernel_seconds']
ok = r_stream >= 0.6 and r_numpy >= 3.0
print('summary rows=%d features=%d matrix=%.0fMB in=%s kernel=%.1f GB/s stream=%.1f GB/s '
      'numpy=%.1f GB/s kernel/stream=%.2f (target 0.6) speedup_vs_numpy=%.1fx (target 3) %s'
      % (c['rows'], c['features'], mb / 1e6, where, c['kernel_gbytes_per_s'],
         c['stream_gbytes_per_s'], n['gbytes_per_s'], r_stream, r_numpy,
         'MET' if ok else 'MISSED'))
sys.exit(0 if ok else 1)
PY
	[ -n "$base" ] || continue
	"$py" - "$bench" "$base" "$1" "$2" "$reps" "${BENCH_ROUNDS:-5}" <<'PY'
import json, statistics, subprocess, sys
new, old, rows, feats, reps, rounds = sys.argv[1:7]
def run(prog):
    out = subprocess.run([prog, '--rows', rows, '--features', feats, '--repeats', reps],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)['kernel_seconds']
ratios = []
for r in range(int(rounds)):
    # alternate which goes first: the caches and the clock see both alike
    if r % 2 == 0:
        tn, to = run(new), run(old)
    else:
        to, tn = run(old), run(new)
    ratios.append(tn / to)
print('baseline rows=%s features=%s new/old=%.3f (min %.3f, max %.3f, %d rounds)'
      % (rows, feats, statistics.median(ratios), min(ratios), max(ratios), len(ratios)))
PY
done
# L2 clipping against L1, pair by pair in one process, at the answer size
# of issue 23: 10,000 x 100, at least 201 pairs: the kernels alone, then
# whole answers with their noise, Gaussian against Laplace (docs/bench.md
# "L2 clipping").
l2reps=$((reps > 201 ? reps : 201))
c=$("$bench" --rows 10000 --features 100 --repeats "$l2reps" --compare-l2 --compare-answers)
echo "$c"
"$py" - "$c" <<'PY' || miss=1
import json, sys
c = json.loads(sys.argv[1])
miss = 0
for key, a, b, what in (('l2_over_l1', 'l1', 'l2', 'kernel l2/l1'),
                        ('gaussian_over_laplace', 'answer_laplace', 'answer_gaussian',
                         'answer gaussian/laplace')):
    ok = c[key] <= 1.10
    miss |= not ok
    print('%s rows=%d features=%d variant=%s %.0f us vs %.0f us ratio=%.3f '
          '(p10 %.3f, p90 %.3f, %d pairs; target <= 1.10) %s'
          % (what, c['rows'], c['features'], c['kernel_variant'], 1e6 * c[a + '_seconds'],
             1e6 * c[b + '_seconds'], c[key], c[key + '_p10'], c[key + '_p90'],
             c[key + '_pairs'], 'MET' if ok else 'MISSED'))
sys.exit(miss)
PY
if [ "${BENCH_STRICT:-0}" = 1 ] && [ "$miss" = 1 ]; then
	exit 1
fi
exit 0
