#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance (issue 8): `dpasync sim` holds every owner to its answer cap K_i,
as ownerd's ledger does, and charges each answer the share eps_i/K_i.
- async, caps 10,100,100,100 at T = 200 (owner 1 would get ~50 iterations):
  owner 1 answers exactly 10 times and then drops out; the others share the
  rest in proportion to their rates; every "epsilon_spent" <= "epsilon";
- the planned caps (no --answers-cap) are never exceeded, with clock rates
  5,1,1,1, and the run completes;
- caps so small that every owner is exhausted before T (4 x 10 < 200, and
  the old silent case K = 10, T = 1000): exit 1 and the one line
  "every owner has exhausted its budget at k=40 of T=...";
- a --schedule naming an owner that has given the K_i answers fixed by
  --answers-cap: exit 2, naming the file's line (a planned cap the
  schedule exceeds becomes the owner's count there);
- sync1/sync2 with K < T - 1: exit 2 (bad usage); with K = T - 1 every owner
  answers exactly T - 1 times."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, run, tmpdir, cleanup, summary, main

def one_line_error(cmd, code, must):
    p = run(cmd, ok=False)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    check(p.returncode == code, 'exit %d, expected %d: %s\n%s' % (p.returncode, code, ' '.join(cmd), p.stderr))
    check(len(lines) == 1, 'expected one stderr line, got %d:\n%s' % (len(lines), p.stderr))
    for m in must:
        check(m in lines[0], 'stderr %r does not mention %r' % (lines[0], m))
    print('ok (exit %d): %s' % (code, lines[0]))

def test(argv):
    dp = argv[0]
    d = tmpdir('caps')
    try:
        run([dp, 'gen', '--rows', '500,500,500,500', '--features', '3', '--seed', '2',
             '--out', d + '/g'])
        files = [d + '/g/owner-%d.csv' % i for i in (1, 2, 3, 4)]
        base = [dp, 'sim', '--target', 'y', '--bias', '--repeats', '3', '--seed', '5']

        # A binding cap: owner 1 drops out after 10 answers.
        out = d + '/bind'
        run(base + ['--T', '200', '--answers-cap', '10,100,100,100', '--out', out] + files)
        s = summary(out)
        print('caps 10,100,100,100 at T=200: answers %s, epsilon_spent %s' % (s['answers'], s['epsilon_spent']))
        check(s['answers_cap'] == [10, 100, 100, 100], 'answers_cap %s' % s['answers_cap'])
        check(s['answers'][0] == 10, 'owner 1 answered %d times, cap 10' % s['answers'][0])
        check(all(a <= k for a, k in zip(s['answers'], s['answers_cap'])), 'a cap was exceeded: %s' % s['answers'])
        check(sum(s['answers']) == 200, 'answers %s do not add up to T = 200' % s['answers'])
        check(all(e <= 1.0 for e in s['epsilon_spent']), 'epsilon_spent %s above epsilon 1' % s['epsilon_spent'])
        check(s['epsilon_spent'][0] >= 0.999, 'owner 1 spent %s of its budget with all 10 answers' % s['epsilon_spent'][0])
        sched = [int(x) for x in open(out + '/schedule.txt').read().split()]
        check(len(sched) == 200 and sched.count(1) == 10, 'schedule: owner 1 appears %d times' % sched.count(1))
        # Owner 1 draws a quarter of the iterations until it drops out: its
        # 10th answer comes long before the end (~ iteration 40).
        last1 = max(k for k, o in enumerate(sched) if o == 1)
        check(last1 < 120, 'owner 1 still answering at iteration %d' % (last1 + 1))

        # The planned caps: never exceeded, the run completes, every budget kept.
        out = d + '/planned'
        run(base + ['--rates', '5,1,1,1', '--T', '400', '--out', out] + files)
        s = summary(out)
        print('planned caps with rates 5,1,1,1 at T=400: caps %s, answers %s' % (s['answers_cap'], s['answers']))
        check(s['answers_cap'] == s['plan']['answers_cap'], 'caps %s, plan %s' % (s['answers_cap'], s['plan']['answers_cap']))
        check(s['answers_cap'][0] > 4 * s['answers_cap'][1], 'caps do not follow the rates: %s' % s['answers_cap'])
        check(all(a <= k for a, k in zip(s['answers'], s['answers_cap'])), 'a cap was exceeded: %s' % s['answers'])
        check(sum(s['answers']) == 400, 'answers %s do not add up to T' % s['answers'])
        check(all(e <= 1.0 for e in s['epsilon_spent']), 'epsilon_spent %s' % s['epsilon_spent'])

        # Every owner exhausted before T: runtime failure, one line.
        for T in ('200', '1000'):
            one_line_error(base + ['--T', T, '--answers-cap', '10', '--out', d + '/ex'] + files, 1,
                           ['every owner has exhausted its budget at k=40 of T=%s' % T])

        # A schedule that asks an exhausted owner.
        sf = d + '/sched.txt'
        with open(sf, 'w') as f:
            f.write('2\n' + '1\n' * 7 + '3\n' * 12)
        one_line_error(base + ['--schedule', sf, '--answers-cap', '5,20,20,20', '--out', d + '/s'] + files,
                       2, ['sched.txt:7', 'owner 1', '5'])
        run(base + ['--schedule', sf, '--answers-cap', '7,20,20,20', '--out', d + '/s'] + files)
        check(summary(d + '/s')['answers'] == [7, 1, 12, 0], 'schedule answers %s' % summary(d + '/s')['answers'])
        # Without --answers-cap a schedule that asks more of an owner than
        # its planned cap (T/4 * 1.1 = 6 here) makes that count the cap.
        run(base + ['--schedule', sf, '--out', d + '/s'] + files)
        s = summary(d + '/s')
        check(s['answers'] == [7, 1, 12, 0] and s['answers_cap'][0] == 7 and s['answers_cap'][2] == 12
              and s['answers_cap'][1] == 6, 'schedule with planned caps: answers %s, caps %s'
              % (s['answers'], s['answers_cap']))

        # Sync: every owner answers each of the T-1 rounds.
        for mode in ('sync1', 'sync2'):
            one_line_error(base + ['--mode', mode, '--T', '50', '--answers-cap', '48', '--out', d + '/y'] + files,
                           2, ['bad usage', '49'])
            run(base + ['--mode', mode, '--T', '50', '--answers-cap', '49', '--out', d + '/y'] + files)
            s = summary(d + '/y')
            check(s['answers'] == [49] * 4, '%s answers %s' % (mode, s['answers']))
            check(all(e <= 1.0 for e in s['epsilon_spent']), '%s epsilon_spent %s' % (mode, s['epsilon_spent']))
            # Caps without T: the planner keeps T - 1 within them.
            run(base + ['--mode', mode, '--answers-cap', '30', '--out', d + '/y'] + files)
            s = summary(d + '/y')
            check(s['T'] <= 31 and s['answers'] == [s['T'] - 1] * 4, '%s with caps 30: T %d, answers %s'
                  % (mode, s['T'], s['answers']))
            print('%s: K = T-1 = 49 answers each; with caps 30 the planner chose T = %d' % (mode, s['T']))
    finally:
        cleanup(d)

main(test)
