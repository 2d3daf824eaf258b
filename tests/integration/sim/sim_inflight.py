#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance: `dpasync sim --max-inflight M` runs learnerd's pipeline of M
queries out at once (docs/learnerd.md, staleness).  With --epsilon inf and
a --schedule it reproduces the numpy reference (ref_async.py
--max-inflight M) to 1e-9 relative error on theta_L and its mean staleness
exactly, for M = 2 and 3; M = 1 is the strict run, bit for bit, with
staleness 0; a sync mode refuses the flag.  And --threads: 5 noisy repeats
on 1 and on 3 threads give the same psi, model and schedule, bit for bit."""
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, run, tmpdir, cleanup, summary, main, write_schedule, parity_flags
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def test(argv):
    dpasync = argv[0]
    d = tmpdir('inflight')
    try:
        T, N = 300, 3
        sched = os.path.join(d, 'schedule.txt')
        write_schedule(sched, T, N, 11)
        data = os.path.join(d, 'data')
        run([dpasync, 'gen', '--rows', '120,200,80', '--features', '5', '--seed', '3',
             '--out', data])
        files = [os.path.join(data, 'owner-%d.csv' % i) for i in (1, 2, 3)]
        common = parity_flags(T)
        thetas = {}
        for M in (1, 2, 3):
            out = os.path.join(d, 'sim-%d' % M)
            flag = [] if M == 1 else ['--max-inflight', str(M)]
            run([dpasync, 'sim', '--target', 'y', '--epsilon', 'inf', '--schedule', sched, '--answers-cap', str(T),
                 '--repeats', '1', '--out', out] + flag + common + files)
            s = summary(out)
            thetas[M] = s['theta']
            ref = os.path.join(d, 'ref-%d.json' % M)
            run(['/usr/bin/python3', os.path.join(HERE, 'ref_async.py'), '--model', 'linear',
                 '--schedule', sched, '--max-inflight', str(M), '--out', ref] + common + files)
            r = json.load(open(ref))
            got, want = np.array(s['theta']), np.array(r['theta'])
            err = np.abs(got - want).max() / np.abs(want).max()
            print('M=%d: max relative error %.3g, staleness mean %.4f (reference %.4f)'
                  % (M, err, s['staleness_mean'], r['staleness_mean']))
            check(s['max_inflight'] == M, 'summary max_inflight %s' % s['max_inflight'])
            check(err <= 1e-9, 'M=%d: relative error %.3g > 1e-9\n got %s\nwant %s'
                  % (M, err, got, want))
            check(abs(s['staleness_mean'] - r['staleness_mean']) < 1e-12,
                  'M=%d: staleness mean %s, reference %s' % (M, s['staleness_mean'],
                                                             r['staleness_mean']))
            check((s['staleness_mean'] == 0) == (M == 1),
                  'M=%d: staleness mean %s' % (M, s['staleness_mean']))
        check(thetas[2] != thetas[1] and thetas[3] != thetas[2],
              'the pipeline changed nothing: %s' % thetas)
        # the default is the strict run itself
        out = os.path.join(d, 'sim-1b')
        run([dpasync, 'sim', '--target', 'y', '--epsilon', 'inf', '--schedule', sched, '--answers-cap', str(T),
             '--repeats', '1', '--max-inflight', '1', '--out', out] + common + files)
        check(summary(out)['theta'] == thetas[1], '--max-inflight 1 differs from the default')
        p = run([dpasync, 'sim', '--target', 'y', '--mode', 'sync1', '--max-inflight', '2', '--epsilon', 'inf',
                 '--T', '10', '--repeats', '1', '--out', os.path.join(d, 'sync')] + files,
                ok=False)
        check(p.returncode == 2 and '--max-inflight applies to --mode async' in p.stderr,
              'sync1 with --max-inflight: exit %d, stderr %r' % (p.returncode, p.stderr))
        outs = []
        for J in (1, 3):
            out = os.path.join(d, 'threads-%d' % J)
            run([dpasync, 'sim', '--target', 'y', '--T', '200', '--repeats', '5', '--threads', str(J),
                 '--max-inflight', '2', '--out', out] + files)
            outs.append(out)
        s1, s3 = summary(outs[0]), summary(outs[1])
        check(s1['psi'] == s3['psi'] and s1['theta'] == s3['theta'] and len(set(s1['psi'])) == 5,
              '--threads 1 and 3 differ: %s %s' % (s1['psi'], s3['psi']))
        check(open(os.path.join(outs[0], 'schedule.txt')).read() ==
              open(os.path.join(outs[1], 'schedule.txt')).read(), 'schedules differ')
    finally:
        cleanup(d)

main(test)
