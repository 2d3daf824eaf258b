#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance: the paper's scaling (Theorem 2) in the regime where noise
dominates: mean psi at fixed T has log-log slope -2 +- 0.3 against epsilon
(equal for all owners) and against n_i (equal sizes).

The slope is the least-squares fit of log(mean psi) on log(x) over four
points spanning a factor 8.  Each point averages R runs; psi of one run is
roughly a scaled chi-square with p = 6 degrees of freedom, so the relative
standard error of a mean of R = 40 is about sqrt(2/p / R) ~ 0.09 and the slope's
standard error about 0.06: a +-0.3 band is five standard errors (false
failure probability below 1e-6 under that normal approximation)."""
import math, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, run, tmpdir, cleanup, summary, main

# CLIP 20 is above almost every per-example gradient norm here, so clipping
# does not bias the optimum and the noise-free floor stays ~50x below the noise.
T, R, N, D, CLIP = 1000, 40, 4, 5, 20
# The theorem is about fixed settings: the step and the answer caps are given
# (the planner would adapt them to epsilon and n_i).  ETA is the step
# 1/(L max_i n_i/n) * min(1, sqrt(100 N / T)) with L = 2p + 2 lambda, p = D + 1
# (bias), lambda = 0.01; every owner's budget is split over K = T answers.
ETA = 1 / ((2 * (D + 1) + 2 * 0.01) / N) * min(1, (100 * N / T) ** 0.5)

def slope(xs, ys):
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)

def sim(dpasync, d, tag, rows, eps):
    data = os.path.join(d, 'data-%d' % rows)
    if not os.path.isdir(data):
        run([dpasync, 'gen', '--rows', ','.join([str(rows)] * N), '--features', str(D),
             '--seed', '2', '--out', data])
    files = [os.path.join(data, 'owner-%d.csv' % i) for i in range(1, N + 1)]
    out = os.path.join(d, tag)
    run([dpasync, 'sim', '--target', 'y', '--model', 'linear', '--epsilon', str(eps), '--clip', str(CLIP), '--bias',
         '--T', str(T), '--eta', repr(ETA), '--answers-cap', str(T), '--repeats', str(R), '--seed', '9', '--psi-every', str(T), '--out', out]
        + files)
    return summary(out)['psi_mean']

def test(argv):
    dpasync = argv[0]
    d = tmpdir('scaling')
    try:
        base = sim(dpasync, d, 'noisefree', 2000, 'inf')
        epss = [25.0, 50.0, 100.0, 200.0]
        by_eps = [sim(dpasync, d, 'eps-%g' % e, 2000, e) for e in epss]
        rows = [1000, 2000, 4000, 8000]
        by_n = [sim(dpasync, d, 'n-%d' % n, n, 50.0) for n in rows]
        print('noise-free psi %.3g' % base)
        print('psi vs eps %s: %s' % (epss, ' '.join('%.3g' % v for v in by_eps)))
        print('psi vs n_i %s: %s' % (rows, ' '.join('%.3g' % v for v in by_n)))
        # The regime where noise dominates: the optimisation error is small.
        check(min(by_eps + by_n) > 20 * base, 'noise does not dominate: noise-free psi %.3g' % base)
        s_eps, s_n = slope(epss, by_eps), slope(rows, by_n)
        print('slope vs eps %.3f, vs n_i %.3f' % (s_eps, s_n))
        check(abs(s_eps + 2) <= 0.3, 'slope against epsilon %.3f not in -2 +- 0.3' % s_eps)
        check(abs(s_n + 2) <= 0.3, 'slope against n_i %.3f not in -2 +- 0.3' % s_n)
    finally:
        cleanup(d)

main(test)
