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
   --schedule or a sync mode, and a negative time.
5. Per-owner answer times (`--answer-time T1,T2,T3`): N equal values are
   the one-value run bit for bit; with M = N every owner is served at
   once, so owner i's requests are a renewal process of cycle 1/r + D_i
   and its share is (1/(1/r + D_i)) / sum_j (1/(1/r + D_j)), the job
   length T / sum_j (1/(1/r + D_j)) (the count's standard deviation is
   0.5 % of owner 1's at T = 20,000, measured over seeds; the test allows
   3 %, 6 of them); with M = 1 and M = 2 the shares, staleness and
   seconds per iteration agree with the event simulation above given one
   D per owner (one reference run of 100,000 iterations; tolerances as in
   3; shares within 0.02 absolute, over 6 standard deviations of a
   binomial share at T = 20,000).
6. `--timing-from TRACE.csv` on hand-written traces: owners matched in
   natural name order (owner-2 before owner-10); one round trip per owner
   is `--answer-time` with those values bit for bit; with several per
   owner a seed fixes the run (twice the same seed: the same summary) and
   another seed changes it, and owner 3's share at M = N follows its mean
   round trip (as in 5).  A trace whose owners do not match the data files,
   a schedule instead of a trace, a negative rtt_s, --timing-from with
   --answer-time, --schedule or a sync mode, and a list of the wrong
   length are refused with one line, exit 2."""
import json, os, random, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, run, tmpdir, cleanup, summary, main, parity_flags


def reference(N, rate, D, M, T, seed, shares=None):
    """Mean staleness and seconds per iteration of the timed pipeline,
    simulated event by event; D is one answer time or one per owner, and
    shares (a list, may be None) receives each owner's share."""
    rnd = random.Random(seed)
    Ds = D if isinstance(D, (list, tuple)) else [D] * N
    count = [0] * N
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
            out.append((now + Ds[first], first, done))
            continue
        now, i, built = out.pop(0)
        stale += done - built
        count[i] += 1
        done += 1
        tick[i] = now + rnd.expovariate(rate)
    if shares is not None:
        shares.extend(c / T for c in count)
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
            refused(dpasync, out, extra, why, files)

        per_owner(dpasync, d, sim, files)
    finally:
        cleanup(d)


def refused(dpasync, out, extra, why, files):
    """sim with these flags exits 2 with one line of stderr saying why."""
    p = run([dpasync, 'sim', '--target', 'y', '--epsilon', 'inf', '--T', '20', '--out', out] + extra
            + files, ok=False)
    lines = p.stderr.strip().splitlines()
    check(p.returncode == 2 and len(lines) == 1 and why in lines[0],
          '%s: exit %d, stderr %r' % (extra, p.returncode, p.stderr))


def share_of(ts):
    T = ts['T']
    return [a / T for a in ts['answers']]


def per_owner(dpasync, d, sim, files):
    """5 and 6."""
    # 5: N equal values are the one-value run
    one = summary(sim('one', 300, ['--rate', '10', '--answer-time', '0.01', '--max-inflight', '2'], '1'))
    three = summary(sim('three', 300, ['--rate', '10', '--answer-time', '0.01,0.01,0.01',
                                       '--max-inflight', '2'], '1'))
    check(one['theta'] == three['theta'] and one['timed']['seconds_mean']
          == three['timed']['seconds_mean'], 'equal values %s, one value %s'
          % (three['timed'], one['timed']))
    check(three['timed']['answer_time_mean'] == [0.01] * 3, 'timed %s' % three['timed'])

    T, rate = 20000, 100.0
    Ds = [0.01, 0.01, 0.09]
    flow = [1 / (1 / rate + x) for x in Ds]
    out = sim('pern', T, ['--rate', repr(rate), '--answer-time', ','.join(map(repr, Ds)),
                          '--max-inflight', '3', '--psi-every', str(T)])
    ts = summary(out)
    got = share_of(ts)
    want = [f / sum(flow) for f in flow]
    secs = T / sum(flow)
    print('per owner M=N: shares %s (renewal %s), %.3f s (renewal %.3f)'
          % (['%.4f' % x for x in got], ['%.4f' % x for x in want],
             ts['timed']['seconds_mean'], secs))
    for i in range(3):
        check(abs(got[i] / want[i] - 1) < 0.03, 'owner %d: share %.4f, renewal %.4f'
              % (i + 1, got[i], want[i]))
    check(abs(ts['timed']['seconds_mean'] / secs - 1) < 0.03, 'length %.4f s, renewal %.4f'
          % (ts['timed']['seconds_mean'], secs))

    Ds = [0.0005, 0.001, 0.004]
    for M in (1, 2):
        out = sim('perm-%d' % M, T, ['--rate', '1000', '--answer-time', ','.join(map(repr, Ds)),
                                     '--max-inflight', str(M), '--psi-every', str(T)])
        ts = summary(out)
        rsh = []
        rs, rt = reference(3, 1000.0, Ds, M, 100000, 1, rsh)
        got = share_of(ts)
        got_t = ts['timed']['seconds_mean'] / T
        print('per owner M=%d: shares %s (reference %s), staleness %.4f (%.4f), %.3f ms/it '
              '(%.3f)' % (M, ['%.4f' % x for x in got], ['%.4f' % x for x in rsh],
                          ts['staleness_mean'], rs, 1e3 * got_t, 1e3 * rt))
        for i in range(3):
            check(abs(got[i] - rsh[i]) < 0.02, 'M=%d owner %d: share %.4f, reference %.4f'
                  % (M, i + 1, got[i], rsh[i]))
        check(abs(ts['staleness_mean'] - rs) < 0.03, 'M=%d: staleness %.4f, reference %.4f'
              % (M, ts['staleness_mean'], rs))
        check(abs(got_t / rt - 1) < 0.03, 'M=%d: %.4g s/iteration, reference %.4g'
              % (M, got_t, rt))

    # 6: --timing-from.  Names sort naturally: owner-2 before owner-10.
    def trace(name, rows):
        path = os.path.join(d, name)
        with open(path, 'w') as f:
            f.write('k,time_unix,owner,wait_s,rtt_s,eps_spent,staleness,job\n')
            for k, (owner, rtt) in enumerate(rows, 1):
                f.write('%d,%.6f,%s,0,%r,0,0,j\n' % (k, 1e9 + k, owner, rtt))
        return path

    single = trace('single.csv', [('owner-10', 0.004), ('owner-1', 0.0005), ('owner-2', 0.001)])
    a = summary(sim('tf-single', 2000, ['--rate', '1000', '--timing-from', single,
                                        '--max-inflight', '2'], '1'))
    b = summary(sim('tf-values', 2000, ['--rate', '1000', '--answer-time', '0.0005,0.001,0.004',
                                        '--max-inflight', '2'], '1'))
    check(a['theta'] == b['theta'] and a['timed']['seconds_mean'] == b['timed']['seconds_mean']
          and a['staleness_mean'] == b['staleness_mean'],
          'one rtt each %s, the same values %s' % (a['timed'], b['timed']))
    check(a['timed']['answer_time_mean'] == [0.0005, 0.001, 0.004]
          and a['timed']['timing_from'] == single, 'timed %s' % a['timed'])

    rows = []
    for k in range(40):
        rows += [('owner-1', 0.008 + 0.001 * (k % 5)), ('owner-2', 0.009 + 0.001 * (k % 3)),
                 ('owner-10', (0.02, 0.16)[k % 2])]
    many = trace('many.csv', rows)
    runs = {}
    for name, seed in (('tf-a', '3'), ('tf-b', '3'), ('tf-c', '4')):
        run([dpasync, 'sim', '--target', 'y', '--epsilon', 'inf', '--answers-cap', str(T),
                 '--repeats', '1', '--seed', seed, '--out', os.path.join(d, name), '--rate',
                 repr(rate), '--timing-from', many, '--max-inflight', '3', '--psi-every',
                 str(T)] + parity_flags(T) + files)
        runs[name] = summary(os.path.join(d, name))
    same = ('theta', 'timed', 'answers', 'staleness_mean')
    check(all(runs['tf-a'][k] == runs['tf-b'][k] for k in same),
          'seed 3 twice: %s, %s' % (runs['tf-a']['timed'], runs['tf-b']['timed']))
    check(runs['tf-a']['timed']['seconds_mean'] != runs['tf-c']['timed']['seconds_mean'],
          'seeds 3 and 4 give the same length %s' % runs['tf-c']['timed'])
    means = runs['tf-a']['timed']['answer_time_mean']
    flow = [1 / (1 / rate + x) for x in means]
    got = share_of(runs['tf-a'])
    want = [f / sum(flow) for f in flow]
    print('timing-from M=N: shares %s (renewal on the mean rtt %s), mean rtt %s'
          % (['%.4f' % x for x in got], ['%.4f' % x for x in want], means))
    check(abs(means[2] - 0.09) < 1e-12 and abs(means[0] - 0.010) < 1e-12,
          'mean rtt per owner %s' % means)
    for i in range(3):
        check(abs(got[i] / want[i] - 1) < 0.03, 'timing-from owner %d: share %.4f, renewal '
              '%.4f' % (i + 1, got[i], want[i]))

    out = os.path.join(d, 'bad2')
    two = trace('two.csv', [('owner-1', 0.001), ('owner-2', 0.002)])
    neg = trace('neg.csv', [('owner-1', 0.001), ('owner-2', -0.002), ('owner-3', 0.001)])
    sched = os.path.join(d, 'fast-inf', 'schedule.txt')
    for extra, why in ((['--timing-from', two], '2 owners have rows (owner-1, owner-2), the '
                        'sim has 3 data files'),
                       (['--timing-from', sched], 'a schedule, not a trace.csv'),
                       (['--timing-from', neg], "rtt_s: expected a finite number >= 0, got '-0.002'"),
                       (['--timing-from', single, '--answer-time', '0.1'],
                        'give --answer-time or --timing-from, not both'),
                       (['--timing-from', single, '--schedule', sched],
                        'give --timing-from or --schedule, not both'),
                       (['--timing-from', single, '--mode', 'sync2'],
                        '--timing-from applies to --mode async'),
                       (['--answer-time', '0.1,0.2'], '--answer-time has 2 values for 3 owners'),
                       (['--answer-time', '0.1,-1,0.2'], '--answer-time')):
        refused(dpasync, out, extra, why, files)


if __name__ == '__main__':
    main(test)
