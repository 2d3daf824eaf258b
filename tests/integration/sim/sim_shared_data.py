#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance: the four shared datasets go through `dpasync prep` and
`dpasync sim` without hand editing and give a finite psi that improves with
epsilon (mean psi at eps = 100 below mean psi at eps = 0.5, 8 repeats each)."""
import math, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, run, tmpdir, cleanup, summary, main

CASES = [
    ('lending_club.csv', 'linear', ['--target', 'int_rate', '--drop', 'sub_grade']),
    ('diamonds.csv', 'linear', ['--target', 'price', '--ordinal', 'cut=Fair,Good,Very Good,Premium,Ideal',
                                '--ordinal', 'color=J,I,H,G,F,E,D',
                                '--ordinal', 'clarity=I1,SI2,SI1,VS2,VS1,VVS2,VVS1,IF']),
    ('diabetes.csv', 'linear', ['--target', 'target']),
    ('breast_cancer.csv', 'logistic', ['--target', 'target', '--task', 'classification',
                                       '--positive', '1']),
]

def test(argv):
    dp = argv[0]
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..', 'shared', 'data')
    d = tmpdir('shared')
    try:
        for name, model, opts in CASES:
            src = os.path.join(data, name)
            check(os.path.exists(src), 'missing shared dataset %s' % src)
            out = os.path.join(d, name)
            run([dp, 'prep', '--split', '3', '--seed', '1', '--clamp', '5', '--out', out] + opts + [src])
            files = [os.path.join(out, 'owner-%d.csv' % i) for i in (1, 2, 3)]
            target = opts[opts.index('--target') + 1]
            res = []
            for eps in ('0.5', '100'):
                o = os.path.join(d, '%s-%s' % (name, eps))
                run([dp, 'sim', '--model', model, '--target', target, '--bias', '--T', '500',
                     '--epsilon', eps, '--repeats', '8', '--seed', '3', '--out', o] + files)
                res.append(summary(o)['psi_mean'])
            print('%s (%s): psi at eps 0.5: %.4g, at eps 100: %.4g' % (name, model, res[0], res[1]))
            check(all(math.isfinite(v) and v >= 0 for v in res), '%s: psi not finite: %s' % (name, res))
            check(res[1] < res[0], '%s: psi does not improve with epsilon: %s' % (name, res))
    finally:
        cleanup(d)

main(test)
