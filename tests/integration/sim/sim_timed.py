#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance: `dpasync sim --answer-time SECS` (the timed pipeline,
docs/learnerd.md "Staleness"): owners ask when their Poisson clock ticks,
each answer arrives SECS after its query, and the clock restarts then.

1. SECS far below the clocks' gaps: no query is ever out when the next one
   is sent, so staleness is 0 in every iteration and the run is the strict
   run on its own order: `--schedule` with the schedule.txt it wrote gives
   the same model bit for bit, whatever --max-inflight (the owner choice and the noise draw from
   separate generator streams, so the noise is the same too).
2. SECS far above the gaps, and more owners (3) than queries out (M = 2):
   a request is always waiting when an answer is in, so the pipeline is
   always full and the run is the queue-never-empty model replayed on its
   own schedule (`--schedule --max-inflight M`), bit for bit, staleness
   included.  (With M = N it is not: the owner just answered must tick
   again before it asks, which is the point of the timed model.)
3. In between, the mean staleness and the simulated job length agree with
   an independent event simulation written here (Python's own generator,
   100,000 iterations).  Tolerances: the sim's 20,000-iteration mean
   staleness has a standard deviation of about 0.004 (measured over seeds:
   0.015 at 1,000 iterations), the reference's about 0.002; the test
   allows 0.03 (over 6 standard deviations of the difference: a false
   failure well below 1e-8), and 3 % on the seconds per iteration (the same
   margin, measured 0.3 % between seeds).
   The stdout line gives the same staleness and simulated length.
4. Bad combinations are refused with one line: --answer-time with
   --schedule or a sync mode, and a negative time."""
import json, os, random, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, run, tmpdir, cleanup, summary, main, parity_flags


def reference(N, rate, D, M, T, seed):
    """Mean staleness and seconds per iteration of the timed pipeline,
    simulated event by event."""
    rnd = random.Random(seed)
    tick = [rnd.expovariate(rate) for _ in range(N)]   # None: waiting or out
    out = []          # (arrival, owner, updates applied when sent), send order
    done = stale = 0
    now = 0.0
    while done < T:
        first = min((i for i in range(N) if tick[i] is not None), key=lambda i: tick[i],
                    default=None)
        if len(out) < M and first is not None and (not out or tick[first] < out[0][0]):
            now = max(now, tick[first])
            tick[first] = None
            out.append((now + D, first, done))
            continue
        now, i, built = out.pop(0)
        stale += done - built
        done += 1
        tick[i] = now + rnd.expovariate(rate)
    return stale / T, now / T


def test(argv):
    dpasync = argv[0]
    d = tmpdir('timed')
    try:
        data = os.path.join(d, 'data')
        run([dpasync, 'gen', '--rows', '60,90,40', '--features', '4', '--seed', '5',
             '--out', data])
        files = [os.path.join(data, 'owner-%d.csv' % i) for i in (1, 2, 3)]

        stdout = {}

        def sim(name, T, extra, eps='inf'):
            out = os.path.join(d, name)
            p = run([dpasync, 'sim', '--target', 'y', '--epsilon', eps, '--answers-cap', str(T), '--repeats', '1',
                     '--seed', '7', '--out', out] + parity_flags(T) + extra + files)
            stdout[out] = p.stdout
            return out

        # 1 and 2: the two limits are the untimed runs on their own order
        for name, secs, M, replay_M, stale_want in (('fast', '1e-9', '1', '1', 0),
                                                     ('fast3', '1e-9', '3', '1', 0),
                                                     ('slow', '100', '2', '2', None)):
            for eps in ('inf', '1'):
                T = 300
                t = sim('%s-%s' % (name, eps), T, ['--rate', '1', '--answer-time', secs,
                                                     '--max-inflight', M], eps)
                ts = summary(t)
                sched = os.path.join(t, 'schedule.txt')
                r = summary(sim('%s-%s-replay' % (name, eps), T,
                                ['--schedule', sched, '--max-inflight', replay_M], eps))
                print('%s M=%s eps=%s: staleness %.4f (replay %.4f), simulated %.1f s'
                      % (name, M, eps, ts['staleness_mean'], r['staleness_mean'],
                         ts['timed']['seconds_mean']))
                check(ts['theta'] == r['theta'], '%s eps=%s: timed run %s, its schedule '
                      'replayed %s' % (name, eps, ts['theta'], r['theta']))
                check(ts['staleness_mean'] == r['staleness_mean'],
                      '%s: staleness %s, replay %s' % (name, ts['staleness_mean'],
                                                       r['staleness_mean']))
                if stale_want is not None:
                    check(ts['staleness_mean'] == stale_want, '%s: staleness %s'
                          % (name, ts['staleness_mean']))
                else:
                    # full pipeline: M - 1 = 1 from the second iteration on
                    want = (T - 1) / T
                    check(abs(ts['staleness_mean'] - want) < 1e-12,
                          'slow: staleness %s, want %s' % (ts['staleness_mean'], want))
                check(ts['timed']['answer_time'] == float(secs), 'timed %s' % ts['timed'])

        # 3: in between, against the event simulation above
        T = 20000
        for D, M in ((0.002, 3), (0.004, 2), (0.001, 1)):
            out = sim('mid-%g-%d' % (D, M), T, ['--rate', '1000', '--answer-time', repr(D),
                                                 '--max-inflight', str(M), '--psi-every', str(T)])
            ts = summary(out)
            ref = [reference(3, 1000.0, D, M, 100000, seed) for seed in (1, 2)]
            rs = sum(x[0] for x in ref) / len(ref)
            rt = sum(x[1] for x in ref) / len(ref)
            got_t = ts['timed']['seconds_mean'] / T
            print('D=%g M=%d: staleness %.4f (reference %.4f), %.3f ms/iteration '
                  '(reference %.3f)' % (D, M, ts['staleness_mean'], rs, 1e3 * got_t, 1e3 * rt))
            check(abs(ts['staleness_mean'] - rs) < 0.03, 'D=%g M=%d: staleness %.4f, '
                  'reference %.4f' % (D, M, ts['staleness_mean'], rs))
            check(abs(got_t / rt - 1) < 0.03, 'D=%g M=%d: %.4g s/iteration, reference %.4g'
                  % (D, M, got_t, rt))
            if M == 1:
                check(ts['staleness_mean'] == 0, 'M=1: staleness %s' % ts['staleness_mean'])
            # the result line carries both
            want = 'staleness=%.4g simulated_s=%.6g out=' % (ts['staleness_mean'],
                                                            ts['timed']['seconds_mean'])
            check(want in stdout[out], 'stdout %r lacks %r' % (stdout[out], want))

        # 4: refusals
        out = os.path.join(d, 'bad')
        sched = os.path.join(d, 'fast-inf', 'schedule.txt')
        for extra, why in ((['--answer-time', '0.01', '--schedule', sched],
                            'give --answer-time or --schedule, not both'),
                           (['--answer-time', '0.01', '--mode', 'sync1'],
                            '--answer-time applies to --mode async'),
                           (['--answer-time', '-1'], '--answer-time')):
            p = run([dpasync, 'sim', '--target', 'y', '--epsilon', 'inf', '--T', '20', '--out', out] + extra
                    + files, ok=False)
            lines = p.stderr.strip().splitlines()
            check(p.returncode == 2 and len(lines) == 1 and why in lines[0],
                  '%s: exit %d, stderr %r' % (extra, p.returncode, p.stderr))
    finally:
        cleanup(d)


if __name__ == '__main__':
    main(test)
