#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""peer mode, synthetic classification: local vs CD vs private CD (eps 0.15, 0.5, 1) over p

The synthetic linear-classification experiment of the peer-to-peer papers
(docs/p2p.md "Synthetic"): 100 agents, agent i's target model t_i in R^p
has its first two coordinates drawn from N(0, 1) and the others 0; it holds
m_i ~ uniform{10..100} training points x ~ U[-1, 1]^p labelled sign(t_i.x),
each label flipped with probability 0.05, and 100 validation and 100 test
points drawn the same way.  The graph is `dpasync graph --from-angles` with
gamma = 0.1 (W_ij = exp((cos phi_ij - 1)/gamma), edges below 1e-3 dropped).
Logistic loss, lambda_i = 1/m_i, clip 1.  Per p and run (5 runs):

  local     each agent's own minimiser (dpasync sim --mode p2p --local)
  CD        dpasync sim --mode p2p at eps = inf, mu and T chosen on
            validation accuracy
  private   the same at eps in {0.15, 0.5, 1} (delta = e^-5, the equal
            split over T wake-ups), mu and T chosen on validation per eps

  local tuned  lambda_i = v/m_i, v in {0.1, 1, 10} on validation accuracy
  served    dpasync sim --mode p2p --serve refit --release grad0 (docs/p2p.md
            §7) at each eps and delta (e^-5 and 1e-5): one noisy clipped
            gradient at 0 per agent (Laplace; Gaussian for p = 50), the
            prior pooled over the agent and its neighbours, each agent's
            refit on its rows with lambda of the tuned local model; clip
            and tau (per-agent cross-validation, or one value for all) on
            validation accuracy
The private CD rows also run at delta = 1e-5.

The score is the test accuracy averaged over agents (dpasync eval --peer
"mean"), then over runs; served rows give paired per-run differences
against the local models (untuned and tuned).  Writes OUTDIR/result.json (per p, and at the top
level for P_MAIN: local_accuracy, cd_accuracy, private_accuracy {"0.15",
"0.5","1"}), OUTDIR/p2p-synthetic.md and OUTDIR/p2p-synthetic.png.
"""
import json
import itertools
import math
import os
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# P2P_SERVED_ONLY=1 and P2P_PRIVATE_ONLY=1e-5 run some rows only (_common.py)
import _common as C  # noqa: E402


def f4(x):
    """A table cell: four decimals (the differences are in the third)."""
    return '%.4f' % x

AGENTS = 100
PS = [2, 10, 50]
P_MAIN = 10
EPS = ['0.15', '0.5', '1']
DELTA = math.exp(-5)
# mu x wake-ups x clip x warm-start share of eps, chosen on validation
# (docs/p2p.md): the private choice was the smallest mu and T = 1 with mu in
# {0.3, 1, 3}, so the grid goes down to 0.01; a small clip saturates every
# row's gradient (the noise shrinks with it, the signal no more); the warm
# start is one noisy step (WARM_STEPS).
GRID = {'inf': ([0.3, 1, 3], [10, 50, 200], [1.0], [0]),
        'private': ([0.01, 0.1, 1], [1, 3, 10], [0.1, 1.0], [0, 0.9])}
WARM_STEPS = 1
RUNS = 5
DELTAS = {'': DELTA, '_delta_1e-5': 1e-5}       # result key suffix -> delta
LAMBDAS = [0.1, 1, 10]                           # tuned local: lambda_i * m_i
# served: clip x tau ('cv': each agent's cross-validation; else one value)
SERVE_GRID = ([0.1, 1.0], ['cv', 0, 3, 30])
# P2P_PRIVATE_DELTAS=e-5 runs the private CD rows at delta = e^-5 only (a
# shorter measurement: those rows are 80 % of its time)


def write(path, X, y):
    with open(path, 'w') as f:
        f.write(','.join('x%d' % q for q in range(X.shape[1])) + ',y\n')
        for r in range(len(y)):
            f.write(','.join('%.6f' % v for v in X[r]) + ',%d\n' % y[r])


def make_data(d, p, seed, agents):
    """Targets, sizes, and train/val/test files per agent; the agents'
    train files in id order."""
    rng = np.random.default_rng(seed)
    t = np.zeros((agents, p))
    t[:, :2] = rng.normal(size=(agents, 2))
    m = rng.integers(10, 101, size=agents)

    def draw(i, k):
        X = rng.uniform(-1, 1, size=(k, p))
        y = np.where(X @ t[i] > 0, 1, -1)
        y[rng.random(k) < 0.05] *= -1
        return X, y
    for sub in ('train', 'val', 'test'):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    for i in range(agents):
        for sub, k in (('train', m[i]), ('val', 100), ('test', 100)):
            write(os.path.join(d, sub, 'a%03d.csv' % i), *draw(i, k))
    with open(os.path.join(d, 'targets.csv'), 'w') as f:
        f.write('id,' + ','.join('t%d' % q for q in range(p)) + '\n')
        for i in range(agents):
            f.write('a%03d,' % i + ','.join('%.17g' % v for v in t[i]) + '\n')
    return [os.path.join(d, 'train', 'a%03d.csv' % i) for i in range(agents)]


class Run:
    def __init__(self, tools, d, p, seed, agents):
        self.t, self.d = tools, d
        self.train = make_data(d, p, seed, agents)
        self.graph = os.path.join(d, 'graph.csv')
        self.graph_line = tools.run(['graph', '--from-angles', os.path.join(d, 'targets.csv'),
                                     '--gamma', '0.1', '--out', self.graph]).strip()

    def acc(self, out, sub, models='agents'):
        files = [f.replace(os.sep + 'train' + os.sep, os.sep + sub + os.sep) for f in self.train]
        r = json.loads(self.t.run(['eval', '--peer', '--models', os.path.join(out, models)] +
                                  files))
        return r['mean']

    def local_tuned(self):
        """lambda_i = v/m_i, v on validation accuracy."""
        best = None
        for v in LAMBDAS:
            out = self.sim(os.path.join(self.d, 'loc-%g' % v),
                           ['--local', '--lambda-per-row', repr(v)])
            a = self.acc(out, 'val')
            if best is None or a > best[0]:
                best = (a, v, self.acc(out, 'test'))
        return best[2], best[1]

    def served(self, eps, delta, seed, v, mech):
        """The served models (--serve refit --release grad0): clip and tau
        on validation accuracy, then a fresh seed for the reported run."""
        base = ['--graph', self.graph, '--epsilon', eps, '--serve', 'refit', '--release',
                'grad0', '--lambda-per-row', repr(v), '--mechanism', mech]
        if eps != 'inf':
            base += ['--delta', repr(delta)]
        best = None
        for clip, tau in itertools.product(*SERVE_GRID):
            f = base + ['--clip', repr(clip)] + ([] if tau == 'cv' else ['--tau', repr(tau)])
            out = self.sim(os.path.join(self.d, 'serve-tune'), f + ['--seed', str(seed)])
            a = self.acc(out, 'val', 'served')
            if best is None or a > best[0]:
                best = (a, f, clip, tau)
        out = self.sim(os.path.join(self.d, 'served-%s' % eps),
                       best[1] + ['--seed', str(seed + 1000)])
        return self.acc(out, 'test', 'served'), {'clip': best[2], 'tau': best[3],
                                                 'mechanism': mech, 'val_accuracy': best[0]}

    def sim(self, out, flags):
        self.t.run(['sim', '--mode', 'p2p', '--model', 'logistic', '--target', 'y', '--out', out] +
                   flags + self.train)
        return out

    def local(self):
        return self.acc(self.sim(os.path.join(self.d, 'local'), ['--local']), 'test')

    def cd(self, eps, seed, delta=DELTA):
        flags = ['--graph', self.graph, '--epsilon', eps, '--seed', str(seed)]
        if eps != 'inf':
            flags += ['--delta', repr(delta)]
        mus, wakeups, clips, warms = GRID['inf' if eps == 'inf' else 'private']
        best = None
        for mu, w, clip, warm in itertools.product(mus, wakeups, clips, warms):
            out = self.sim(os.path.join(self.d, 'tune'),
                           flags + ['--mu', repr(mu), '--wakeups', str(w), '--clip', repr(clip)] +
                           warm_flags(eps, warm))
            a = self.acc(out, 'val')
            if best is None or a > best[0]:
                best = (a, mu, w, clip, warm)
        _, mu, w, clip, warm = best
        # A fresh seed for the reported run: its noise is not the one tuned on.
        flags[flags.index('--seed') + 1] = str(seed + 1000)
        out = self.sim(os.path.join(self.d, 'cd-' + eps),
                       flags + ['--mu', repr(mu), '--wakeups', str(w), '--clip', repr(clip)] +
                       warm_flags(eps, warm))
        return self.acc(out, 'test'), {'mu': mu, 'wakeups': w, 'clip': clip, 'warm_share': warm,
                                       'val_accuracy': best[0]}


def warm_flags(eps, share):
    """The private warm start (ownerd --peer --warm-start): share of eps."""
    if share == 0:
        return []
    return ['--warm-start', repr(share * float(eps)), '--warm-steps', str(WARM_STEPS)]


def plot(out, by_p):
    dat = os.path.join(out, 'p2p-synthetic.dat')
    with open(dat, 'w') as f:
        for p in sorted(by_p, key=int):
            r = by_p[p]
            f.write('%s %.6f %.6f %s\n' % (p, r['local_accuracy'], r['cd_accuracy'],
                                           ' '.join('%.6f' % r['private_accuracy'][e]
                                                    for e in EPS)))
    png = os.path.join(out, 'p2p-synthetic.png')
    cols = ['"%s" using 1:2 with linespoints title "local"' % dat,
            '"" using 1:3 with linespoints title "CD (non-private)"']
    cols += ['"" using 1:%d with linespoints title "private CD, eps = %s"' % (4 + k, e)
             for k, e in enumerate(EPS)]
    script = ('set terminal pngcairo size 800,450; set output "%s"; set logscale x;'
              'set xlabel "dimension p"; set ylabel "test accuracy (mean over agents)";'
              'set key bottom left; set yrange [0.4:1];'
              'set title "Synthetic: 100 agents, m_i in [10,100], label noise 0.05";'
              'plot %s' % (png, ', '.join(cols)))
    if shutil.which('gnuplot'):
        subprocess.run(['gnuplot', '-e', script], check=True)
        print('wrote', png)


def main():
    a = C.args(__doc__)
    tools = C.Tools(a)
    quick = C.quick(a)
    global GRID, SERVE_GRID, LAMBDAS
    ps, runs, agents = (PS, RUNS, AGENTS) if not quick else ([P_MAIN], 1, 20)
    runs = int(os.environ.get('P2P_RUNS', runs))
    if os.environ.get('P2P_PS'):   # a subset of p, for a partial measurement
        ps = [int(x) for x in os.environ['P2P_PS'].split(',')]
    if quick:
        GRID = {'inf': ([1], [10], [1.0], [0]), 'private': ([0.1], [1], [0.1], [0, 0.9])}
        SERVE_GRID = ([1.0], ['cv', 3])
        LAMBDAS = [1]
    t0 = time.time()
    by_p = {}
    for p in ps:
        per_run = []
        for r in range(runs):
            run = Run(tools, os.path.join(a.out, 'p%d' % p, 'run%d' % (r + 1)), p, 1000 * p + r,
                      agents)
            res = {'graph': run.graph_line.split(' out=')[0], 'local_accuracy': run.local()}
            res['local_tuned_accuracy'], res['local_lambda_per_row'] = run.local_tuned()
            if not C.p2p_rows('')[0]:   # CD as docs/p2p.md §5.1 (same seeds)
                res['cd_accuracy'] = float('nan')
            else:
                res['cd_accuracy'], res['cd_choice'] = run.cd('inf', 10 * r + 1)
            mech = 'gaussian' if p >= 50 else 'laplace'
            for suf, delta in DELTAS.items():
                res['private_accuracy' + suf], res['private_choice' + suf] = {}, {}
                res['served_accuracy' + suf], res['served_choice' + suf] = {}, {}
                _, private, served = C.p2p_rows(suf)
                private = private and not (suf and os.environ.get('P2P_PRIVATE_DELTAS') == 'e-5')
                for e in EPS:
                    if not private:
                        res['private_accuracy' + suf][e] = float('nan')
                    else:
                        res['private_accuracy' + suf][e], res['private_choice' + suf][e] = \
                            run.cd(e, 10 * r + 2, delta)
                    if not served:
                        res['served_accuracy' + suf][e] = float('nan')
                    else:
                        res['served_accuracy' + suf][e], res['served_choice' + suf][e] = \
                            run.served(e, delta, 10 * r + 3, res['local_lambda_per_row'], mech)
            print('p=%d run %d: local %.4f tuned %.4f cd %.4f private %s served %s (%.0f s)' %
                  (p, r + 1, res['local_accuracy'], res['local_tuned_accuracy'],
                   res['cd_accuracy'],
                   ' '.join('%s:%.4f' % kv for kv in res['private_accuracy'].items()),
                   ' '.join('%s:%.4f' % kv for kv in res['served_accuracy'].items()),
                   time.time() - t0), flush=True)
            per_run.append(res)
            with open(os.path.join(a.out, 'per_run_p%d.json' % p), 'w') as f:   # partial
                json.dump(per_run, f, indent=1)
        by_p[str(p)] = {
            'local_accuracy': sum(x['local_accuracy'] for x in per_run) / runs,
            'cd_accuracy': sum(x['cd_accuracy'] for x in per_run) / runs,
            'local_tuned_accuracy': sum(x['local_tuned_accuracy'] for x in per_run) / runs,
            'per_run': per_run,
        }
        for suf in DELTAS:
            for k in ('private_accuracy', 'served_accuracy'):
                by_p[str(p)][k + suf] = {e: sum(x[k + suf][e] for x in per_run) / runs
                                         for e in EPS}
            by_p[str(p)]['served_minus_local' + suf] = {
                e: C.paired([x['served_accuracy' + suf][e] for x in per_run],
                            [x['local_accuracy'] for x in per_run]) for e in EPS}
            by_p[str(p)]['served_minus_local_tuned' + suf] = {
                e: C.paired([x['served_accuracy' + suf][e] for x in per_run],
                            [x['local_tuned_accuracy'] for x in per_run]) for e in EPS}
    main_p = by_p[str(P_MAIN)]
    result = {'experiment': 'p2p-synthetic', 'agents': agents, 'runs': runs, 'quick': quick,
              'p_main': P_MAIN, 'local_accuracy': main_p['local_accuracy'],
              'cd_accuracy': main_p['cd_accuracy'],
              'private_accuracy': main_p['private_accuracy'], 'by_p': by_p,
              'delta': DELTA, 'grid': GRID, 'seconds': round(time.time() - t0, 1)}
    result['private_015_beats_local'] = {
        p: r['private_accuracy']['0.15'] > r['local_accuracy'] for p, r in by_p.items()}
    for suf in DELTAS:
        result['served_accuracy' + suf] = {p: r['served_accuracy' + suf] for p, r in by_p.items()}
        result['private_accuracy_by_p' + suf] = {p: r['private_accuracy' + suf]
                                                 for p, r in by_p.items()}
    C.write_result(a.out, result)
    rows = []
    for p in sorted(by_p, key=int):
        r = by_p[p]
        rows.append([p, f4(r['local_accuracy']), f4(r['cd_accuracy'])] +
                    [f4(r['private_accuracy'][e]) for e in EPS])
    table = C.md_table(['p', 'local', 'CD (non-private)'] +
                       ['private CD, eps = %s' % e for e in EPS], rows)
    for suf, delta in DELTAS.items():
        rows = []
        for p in sorted(by_p, key=int):
            r = by_p[p]
            rows.append([p, f4(r['local_accuracy']), f4(r['local_tuned_accuracy'])] +
                        ['%s / %s' % (f4(r['served_accuracy' + suf][e]),
                                      f4(r['private_accuracy' + suf][e])) for e in EPS] +
                        [' '.join('%s:%s' % (e, C.paired_text(r['served_minus_local' + suf][e]))
                                  for e in EPS)] +
                        [' '.join('%s:%s' % (e, C.paired_text(
                            r['served_minus_local_tuned' + suf][e])) for e in EPS)])
        table += '\n\ndelta = %g: served / private CD, and served - local per run\n\n' % delta
        table += C.md_table(['p', 'local', 'local tuned'] +
                            ['served / private, eps = %s' % e for e in EPS] +
                            ['served - local (mean [min, max] wins/runs)',
                             'served - local tuned'], rows)
    C.write_text(a.out, 'p2p-synthetic.md', table)
    plot(a.out, by_p)


if __name__ == '__main__':
    main()
