#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance: with --epsilon inf and a --schedule, `dpasync sim --mode async`
reproduces an independent numpy implementation of docs/design.md §4 (ref_async.py)
to 1e-9 relative error on theta_L, for each model, with clipping active."""
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, run, tmpdir, cleanup, summary, main, write_schedule, parity_flags
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

def test(argv):
    dpasync = argv[0]
    d = tmpdir('parity')
    try:
        T, N = 300, 3
        sched = os.path.join(d, 'schedule.txt')
        write_schedule(sched, T, N, 7)
        for model, task in (('linear', 'regression'), ('logistic', 'classification'),
                            ('svm', 'classification')):
            data = os.path.join(d, model)
            run([dpasync, 'gen', '--task', task, '--rows', '120,200,80', '--features', '5',
                 '--seed', '3', '--out', data])
            files = [os.path.join(data, 'owner-%d.csv' % i) for i in (1, 2, 3)]
            common = parity_flags(T)
            out = os.path.join(d, model + '-sim')
            # --answers-cap T: the schedule is drawn freely, so no cap may bind.
            run([dpasync, 'sim', '--target', 'y', '--mode', 'async', '--model', model, '--epsilon', 'inf',
                 '--schedule', sched, '--answers-cap', str(T), '--repeats', '1', '--out', out]
                + common + files)
            ref = os.path.join(d, model + '-ref.json')
            run(['/usr/bin/python3', os.path.join(HERE, 'ref_async.py'), '--model', model,
                 '--schedule', sched, '--out', ref] + common + files)
            got = np.array(summary(out)['theta'])
            r = json.load(open(ref))
            want = np.array(r['theta'])
            check(r['clipped'] > 1000, '%s: clipping was not active (%d clipped)' % (model, r['clipped']))
            check(np.abs(want).max() > 1e-3, '%s: reference theta is trivially zero' % model)
            err = np.abs(got - want).max() / np.abs(want).max()
            print('%s: max relative error %.3g (clipped %d gradients) theta_L %s' % (model, err, r['clipped'], np.round(want, 4)))
            check(err <= 1e-9, '%s: relative error %.3g > 1e-9\n got %s\nwant %s' % (model, err, got, want))
    finally:
        cleanup(d)

main(test)
