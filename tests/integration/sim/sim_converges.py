#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance: noise-free async runs converge — psi(theta_L, T) falls as T
grows (default step sizes, so the defaults are what is being tested)."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, run, tmpdir, cleanup, summary, main

def test(argv):
    dpasync = argv[0]
    d = tmpdir('converge')
    try:
        for model, task in (('linear', 'regression'), ('logistic', 'classification'),
                            ('svm', 'classification')):
            data = os.path.join(d, model)
            run([dpasync, 'gen', '--task', task, '--rows', '300,500,400', '--features', '6',
                 '--seed', '11', '--out', data])
            files = [os.path.join(data, 'owner-%d.csv' % i) for i in (1, 2, 3)]
            psis = []
            for T in (30, 300, 3000):
                out = os.path.join(d, '%s-%d' % (model, T))
                # clip 1e6: clipping inactive, so theta_L should approach theta*.
                run([dpasync, 'sim', '--target', 'y', '--model', model, '--epsilon', 'inf', '--clip', '1e6',
                     '--bias', '--T', str(T), '--repeats', '6', '--seed', '5', '--out', out] + files)
                psis.append(summary(out)['psi_mean'])
            print('%s: psi at T=30,300,3000: %s' % (model, ' '.join('%.3g' % v for v in psis)))
            check(psis[0] > psis[1] > psis[2], '%s: psi does not fall with T: %s' % (model, psis))
            check(psis[2] < 0.05 * psis[0], '%s: psi(3000) = %.3g is not well below psi(30) = %.3g'
                  % (model, psis[2], psis[0]))
    finally:
        cleanup(d)

main(test)
