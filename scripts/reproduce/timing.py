#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The timed simulator against a netns cluster: per-owner link delays, job length and shares (needs root)

Runs deploy/netns-cluster.sh --runs times (five owners, one-way delays
--delays ms, loss 0, clock rate --rate each, T --T, strict learner), and for
each run `dpasync sim` with the run's data, T, planned caps (checkpoint.json)
and rates, the timed pipeline given two ways:

  timing-from   --timing-from the run's trace.csv: each answer's time drawn
                from its owner's measured round trips (rtt_s);
  answer-time   --answer-time T1,...,T5: each owner's mean rtt_s.

Each sim runs --sim-repeats seeds (one repeat each, so that every seed's
shares are known).  Measured: the job length from the first query to the
last update (docs/plots.md "Throughput": max time_unix - min(time_unix -
rtt_s) of trace.csv) and each owner's share of the T iterations.  Simulated:
summary.json `timed` seconds_mean and `answers` / T, averaged over the
seeds.  The bound (docs/bench-daemons.md §7.6): the mean simulated length
and each owner's mean share within 10 % (relative) of the measured means
over the runs.

Writes OUTDIR/result.json (per run and mean: measured and simulated
lengths and shares, relative errors, met) and OUTDIR/timing.md (the
table).  --quick: 1 run of T = 100, 5 seeds (about 30 s).  Exit 77 when
network namespaces cannot be created here."""
import csv
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NETNS = os.path.join(HERE, '..', '..', 'deploy', 'netns-cluster.sh')
BOUND = 0.10


def options(p):
    p.add_argument('--runs', type=int, default=3, help='netns runs (default 3)')
    p.add_argument('--T', type=int, default=300, help='iterations per run (default 300)')
    p.add_argument('--delays', default='1,20,80,200,20',
                   help='one-way delay per owner, ms (default 1,20,80,200,20)')
    p.add_argument('--rate', type=float, default=10.0, help='clock rate of every owner (10/s)')
    p.add_argument('--sim-repeats', type=int, default=20, help='sim seeds per run (default 20)')


def netns_run(a, outdir, seed, T, delays):
    """One cluster run into outdir; exits 77 when there are no namespaces."""
    cmd = [NETNS, '--delays', delays, '--loss', '0', '--T', str(T), '--rate', repr(a.rate),
           '--bindir', a.build, '--out', outdir, '--seed', str(seed),
           '--id', 'tmg%d-%d' % (os.getpid() % 100000, seed)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    with open(outdir + '.log', 'w') as f:
        f.write(p.stdout + p.stderr)
    if p.returncode == 77:
        print('network namespaces cannot be created here (root, ip netns): not run')
        sys.exit(77)
    if p.returncode != 0:
        sys.exit('netns-cluster.sh exited %d (%s.log)' % (p.returncode, outdir))


def measured(trace):
    """Owner names, job length (first query to last update), shares."""
    with open(trace) as f:
        rows = list(csv.DictReader(f))
    t0 = min(float(r['time_unix']) - float(r['rtt_s']) for r in rows)
    t1 = max(float(r['time_unix']) for r in rows)
    names = sorted({r['owner'] for r in rows}, key=lambda s: (len(s), s))
    rtt = {n: [float(r['rtt_s']) for r in rows if r['owner'] == n] for n in names}
    shares = [len(rtt[n]) / len(rows) for n in names]
    return names, t1 - t0, shares, [sum(rtt[n]) / len(rtt[n]) for n in names]


def simulate(tools, rundir, how, seeds, rate):
    """Mean simulated length and shares over the seeds."""
    with open(os.path.join(rundir, 'learner', 'checkpoint.json')) as f:
        job = json.load(f)['job']
    files = [os.path.join(rundir, 'data', '%s.csv' % o) for o in job['owners']]
    flags = ['--target', 'y', '--model', job['model'], '--T', str(job['T']),
             '--eta', repr(job['eta']), '--clip', repr(job['clip_l1']),
             '--lambda', repr(job['lambda']), '--theta-max', repr(job['theta_max']),
             '--answers-cap', ','.join(str(c) for c in job['plan']['answers_cap']),
             '--rate', repr(rate), '--max-inflight', '1', '--repeats', '1',
             '--psi-every', str(job['T'])] + (['--bias'] if job['bias'] else []) + how
    secs, shares = [], []
    for seed in seeds:
        out = os.path.join(rundir, 'sim-%s-%d' % (how[0].lstrip('-'), seed))
        s = tools.sim(files, out, flags + ['--seed', str(seed)])
        secs.append(s['timed']['seconds_mean'])
        shares.append([x / s['T'] for x in s['answers']])
    n = len(seeds)
    return sum(secs) / n, [sum(sh[i] for sh in shares) / n for i in range(len(files))]


def rel(sim, meas):
    return sim / meas - 1


def main():
    a = _common.args(__doc__, options)
    if a.runs < 1 or a.T < 2 or a.sim_repeats < 1 or not a.rate > 0:
        print('timing.py: --runs and --sim-repeats must be >= 1, --T >= 2, --rate > 0',
              file=sys.stderr)
        sys.exit(2)
    quick = _common.quick(a)
    runs, T, S = (1, 100, 5) if quick else (a.runs, a.T, a.sim_repeats)
    tools = _common.Tools(a)
    os.makedirs(a.out, exist_ok=True)
    result = {'settings': {'runs': runs, 'T': T, 'delays_ms': a.delays, 'rate': a.rate,
                           'loss': 0, 'sim_seeds': S, 'bound': BOUND}, 'runs': []}
    for r in range(1, runs + 1):
        rundir = os.path.join(a.out, 'r%d' % r)
        netns_run(a, rundir, r, T, a.delays)
        names, length, shares, rtt = measured(os.path.join(rundir, 'learner', 'trace.csv'))
        one = {'owners': names, 'length_s': length, 'shares': shares, 'rtt_mean_s': rtt}
        seeds = list(range(1, S + 1))
        for key, how in (('timing_from', ['--timing-from',
                                          os.path.join(rundir, 'learner', 'trace.csv')]),
                         ('answer_time', ['--answer-time', ','.join(repr(x) for x in rtt)])):
            secs, sh = simulate(tools, rundir, how, seeds, a.rate)
            one[key] = {'length_s': secs, 'shares': sh}
        result['runs'].append(one)
        print('run %d: measured %.2f s, shares %s' % (r, length, ['%.3f' % x for x in shares]))

    def mean(get):
        v = [get(x) for x in result['runs']]
        return [sum(c) / len(v) for c in zip(*v)] if isinstance(v[0], list) else sum(v) / len(v)

    means = {'length_s': mean(lambda x: x['length_s']), 'shares': mean(lambda x: x['shares'])}
    met = True
    for key in ('timing_from', 'answer_time'):
        m = {'length_s': mean(lambda x: x[key]['length_s']),
             'shares': mean(lambda x: x[key]['shares'])}
        m['length_rel'] = rel(m['length_s'], means['length_s'])
        m['shares_rel'] = [rel(s, t) for s, t in zip(m['shares'], means['shares'])]
        m['met'] = all(abs(e) <= BOUND for e in [m['length_rel']] + m['shares_rel'])
        met = met and m['met']
        means[key] = m
    result['mean'] = means
    result['met'] = met

    names = result['runs'][0]['owners']
    head = ['run', 'source', 'job length s'] + ['share %s' % n for n in names]
    rows = []
    for i, x in enumerate(result['runs'], 1):
        rows.append([i, 'measured', '%.2f' % x['length_s']] + ['%.3f' % s for s in x['shares']])
        for key in ('timing_from', 'answer_time'):
            y = x[key]
            rows.append([i, 'sim --%s' % key.replace('_', '-'),
                         '%.2f (%+.1f %%)' % (y['length_s'], 100 * rel(y['length_s'], x['length_s']))]
                        + ['%.3f (%+.1f %%)' % (s, 100 * rel(s, t))
                           for s, t in zip(y['shares'], x['shares'])])
    rows.append(['mean', 'measured', '%.2f' % means['length_s']]
                + ['%.3f' % s for s in means['shares']])
    for key in ('timing_from', 'answer_time'):
        m = means[key]
        rows.append(['mean', 'sim --%s' % key.replace('_', '-'),
                     '**%.2f (%+.1f %%)**' % (m['length_s'], 100 * m['length_rel'])]
                    + ['**%.3f (%+.1f %%)**' % (s, 100 * e)
                       for s, e in zip(m['shares'], m['shares_rel'])])
    rtts = ', '.join('%s %.1f' % (n, 1e3 * t) for n, t in
                     zip(names, mean(lambda x: x['rtt_mean_s'])))
    text = _common.md_table(head, rows) + '\nmean rtt_s per owner, ms: %s\n' % rtts
    text += '\nwithin %d %% of the measured means: %s\n' % (100 * BOUND, 'met' if met else 'MISSED')
    _common.write_text(a.out, 'timing.md', text)
    _common.write_result(a.out, result)
    print(text)


if __name__ == '__main__':
    main()
