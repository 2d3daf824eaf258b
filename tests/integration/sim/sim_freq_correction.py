#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance (issue 4): the frequency correction of the paper's Remark 4.
Four owners hold differently distributed data (each its own true model,
`gen --concept-shift 2`) and owner 1's clock ticks 5x faster than the
others.  Over R = 40 repeats, mean psi with --freq-correction must be below
mean psi without it by more than 6 standard errors of the difference, both
noise-free (epsilon = inf) and with noise (epsilon = 10).  With 6 standard
errors a false failure needs the correction to really help and the estimate
to land 6 SEs low: probability about 1e-9 under the normal approximation."""
import math, os, statistics, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, run, tmpdir, cleanup, summary, main

# Fixed settings, so that both arms run the same job: T = 2000, the step
# 1/(L max_i n_i/n) * min(1, sqrt(100 N / T)) with L = 2p + 2 lambda (p = 6
# with the bias, lambda = 0.01), clip Xi = p, and caps that never bind
# (K = T; with planned caps owner 1's extra answers would be cut).
T, N, P = 2000, 4, 6
ETA = 1 / ((2 * P + 2 * 0.01) / N) * min(1, (100 * N / T) ** 0.5)

def test(argv):
    dp = argv[0]
    d = tmpdir('freq')
    try:
        run([dp, 'gen', '--rows', '1000,1000,1000,1000', '--features', '5', '--concept-shift', '2',
             '--seed', '4', '--out', d + '/data'])
        files = [d + '/data/owner-%d.csv' % i for i in (1, 2, 3, 4)]
        for eps in ('inf', '10'):
            res = {}
            for fc in (False, True):
                out = '%s/%s-%s' % (d, eps, fc)
                run([dp, 'sim', '--target', 'y', '--bias', '--epsilon', eps, '--rates', '5,1,1,1', '--T', str(T),
                     '--eta', repr(ETA), '--clip', str(P), '--answers-cap', str(T), '--repeats', '40', '--seed', '7', '--psi-every', '2000', '--out', out]
                    + (['--freq-correction'] if fc else []) + files)
                v = summary(out)['psi']
                res[fc] = (statistics.mean(v), statistics.stdev(v) / math.sqrt(len(v)))
            (m0, s0), (m1, s1) = res[False], res[True]
            se = math.hypot(s0, s1)
            print('epsilon %s: mean psi without correction %.4g (se %.2g), with %.4g (se %.2g)'
                  % (eps, m0, s0, m1, s1))
            check(m0 - m1 > 6 * se, 'epsilon %s: correction does not lower psi by 6 SE (%.4g vs %.4g, se %.2g)'
                  % (eps, m0, m1, se))
    finally:
        cleanup(d)

main(test)
