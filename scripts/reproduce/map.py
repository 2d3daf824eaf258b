#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Where collaborating pays: the private joint model against each owner's own non-private one.

The measurements behind docs/collaboration.md.  For every cell of a grid
(N owners x n_i rows each x budget eps) of the census table fertility.csv.gz
(target `work`), owners holding disjoint random subsets of the rows:

  joint    `dpasync sim --sample PUBLIC` with the planned settings (async),
           psi of the final model over REPEATS repeats;
  alone    each owner's exact non-private ridge model on its own rows (same
           lambda, numpy), psi evaluated on the union of the cell's owners,
           the population the joint model is judged on;
  forecast `dpasync forecast --sample PUBLIC --rows n_i,...`: its psi_mean,
           alone and collaborate, from the public sample only.

"Collaboration pays" in a cell when the measured joint psi (mean over the
repeats) is below the owners' mean alone psi; the forecast agrees when its
collaborate decision says the same.  PUBLIC is a disjoint random sample of
the table drawn once and never dealt to an owner.  Where the table leaves
enough rows nobody drew, each cell is also judged from the owners' own
view: both models on held-out rows of the owner's population.  Each cell
also reports psi of theta = 0 and of a ridge model of the public sample.

Further parts: the paper's sync algorithms in its claimed region; owners
with 100 or 250 rows; non-i.i.d. owners (the census dealt in order of age,
or of ethnicity, more kids and age; `dpasync gen` data with a covariate or
a concept shift).

--mechanism gaussian measures the same cells with the discrete Gaussian
answers of docs/zcdp.md at delta DELTA (sim --mechanism gaussian, the
forecast's "mechanisms" plan and calls); --repeats R, --iid-only (the
i.i.d. grid alone) and --cell N,n_i,eps (repeatable: only these i.i.d.
cells, no figures) narrow the run.  Gaussian plans run up to T = 100,000
steps, so its full grid costs far more than Laplace's (docs/collaboration.md).

Writes OUT/result.json, OUT/map.md (the tables) and the figures
OUT/map-iid.png, OUT/map-agreement.png, OUT/map-noniid.png.  Full run:
about 16 minutes on one core; --quick (a handful of cells): about 20 s.
"""
import json
import math
import os
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

LAMBDA = 0.01           # dpasync's default, used by sim, forecast and the ridge
DELTA = 1e-6            # the owners' delta with --mechanism gaussian
MECH = 'laplace'        # --mechanism (set once by main)
PUBLIC_ROWS = 4000      # the public sample; leaves 250,654 rows for owners
SEED = 8

GRID_N = [5, 10, 25, 100, 250]
GRID_ROWS = [500, 1000, 2500, 10000]
GRID_EPS = [0.5, 1, 2.5, 5, 10]
# Repeats of sim per cell.  A repeat costs milliseconds to a second here;
# 20 puts the standard error of the mean joint psi near 5 % of it.
REPEATS = 20
QUICK_REPEATS = 5
SYNC_REPEATS = 5

# The paper's claim: collaboration pays above 10 owners with >= 10,000 rows
# each at eps >= 1.
def in_paper_region(N, n, eps):
    return N > 10 and n >= 10000 and eps >= 1


# ---------------------------------------------------------------- data

class Pool:
    """Prepared rows: the text lines of a prepared CSV (written back to
    owner files unchanged) and the same rows as numbers, X with the
    constant-1 feature `--bias` appends, y the target."""

    def __init__(self, header, lines):
        self.header = header
        self.lines = lines
        a = np.array([[float(v) for v in ln.split(',')] for ln in lines])
        self.X = np.hstack([a[:, :-1], np.ones((len(lines), 1))])
        self.y = a[:, -1]
        self.names = header.split(',')[:-1]

    def column(self, name):
        return self.X[:, self.names.index(name)]

    def write(self, path, idx):
        with open(path, 'w') as f:
            f.write(self.header + '\n')
            for i in idx:
                f.write(self.lines[i] + '\n')


def read_prepared(path):
    with open(path) as f:
        header = f.readline().rstrip('\n')
        lines = [ln.rstrip('\n') for ln in f if ln.strip()]
    return header, lines


def census(t, work):
    """fertility.csv.gz split once into a public sample of PUBLIC_ROWS raw
    rows and the rest, prepared with `dpasync prep --sample` (the schema is
    built from the public sample only).  Returns (sample path, Pool of the
    other rows)."""
    import csv
    import gzip
    import random
    prep = os.path.join(work, 'census')
    sample = os.path.join(prep, 'sample.csv')
    if not os.path.exists(os.path.join(prep, 'owner-1.csv')):
        os.makedirs(work, exist_ok=True)
        with gzip.open(os.path.join(t.data, 'fertility.csv.gz'), 'rt', newline='') as f:
            rows = list(csv.reader(f))
        head, rows = rows[0], rows[1:]
        pick = list(range(len(rows)))
        random.Random(SEED).shuffle(pick)
        public = set(pick[:PUBLIC_ROWS])
        raw_pub = os.path.join(work, 'public.csv')
        raw_rest = os.path.join(work, 'rest.csv')
        with open(raw_pub, 'w', newline='') as fp, open(raw_rest, 'w', newline='') as fr:
            wp, wr = csv.writer(fp), csv.writer(fr)
            wp.writerow(head)
            wr.writerow(head)
            for i, r in enumerate(rows):
                (wp if i in public else wr).writerow(r)
        t.run(['prep', '--target', 'work', '--sample', raw_pub, '--out', prep, '--force',
               raw_rest])
    return sample, Pool(*read_prepared(os.path.join(prep, 'owner-1.csv')))


# ------------------------------------------------------------ measures

def ridge(X, y, lam):
    """argmin lam ||theta||^2 + mean (y - X theta)^2: dpasync's objective
    (docs/design.md §2), the bias included in the regulariser."""
    n = len(y)
    return np.linalg.solve(X.T @ X / n + lam * np.eye(X.shape[1]), X.T @ y / n)


def quadratic(X, y, lam=LAMBDA):
    """f(theta) = lam ||theta||^2 + mean (y - X theta)^2 as (G, b, c) with
    f = theta G theta - 2 b theta + c, and its minimum f*."""
    n = len(y)
    G = X.T @ X / n + lam * np.eye(X.shape[1])
    b = X.T @ y / n
    c = y @ y / n
    return G, b, c, c - b @ np.linalg.solve(G, b)


def fval(q, th):
    G, b, c, _ = q
    return th @ G @ th - 2 * b @ th + c


def alone(Xs, ys, lam=LAMBDA):
    """Each owner's exact non-private model.  Returns (f* on the union,
    psi of theta = 0 on the union, [psi_i on the union], [theta_i])."""
    q = quadratic(np.vstack(Xs), np.concatenate(ys), lam)
    thetas = [ridge(Xi, yi, lam) for Xi, yi in zip(Xs, ys)]
    return q[3], q[2] / q[3] - 1, [fval(q, th) / q[3] - 1 for th in thetas], thetas


def own_view(tests, alone_thetas, joint_thetas):
    """Each owner judged on held-out rows of its own population (tests[i] =
    (X, y); i.i.d. owners share one) rather than on the union:
    psi_i(theta) = f_i(theta) / f_i* - 1.  Returns the owners' mean psi of
    their own models and of the joint ones (mean over the repeats), and the
    fraction of owners for whom the joint model is the better one."""
    own, joint, quad = [], [], {}
    for (X, y), th in zip(tests, alone_thetas):
        if id(X) not in quad:
            q = quadratic(X, y)
            quad[id(X)] = (q, [fval(q, tj) / q[3] - 1 for tj in joint_thetas])
        q, js = quad[id(X)]
        own.append(fval(q, th) / q[3] - 1)
        joint.append(float(np.mean(js)))
    return dict(alone=float(np.mean(own)), joint=float(np.mean(joint)),
                pays_fraction=float(np.mean([j < o for j, o in zip(joint, own)])),
                test_rows=int(min(len(y) for _, y in tests)))


def stats(v):
    v = np.asarray(v, dtype=float)
    return dict(mean=float(v.mean()), min=float(v.min()), max=float(v.max()),
                p25=float(np.percentile(v, 25)), p75=float(np.percentile(v, 75)))


def run_cell(t, cdir, files, Xs, ys, sample, target, eps, repeats, seed, cache, tests=None,
             mode='async'):
    """Measure one cell: sim (joint), numpy (alone), forecast.  With
    `tests` (each owner's own held-out rows) also the owners' own view,
    which needs every repeat's model: sim then runs one repeat at a time
    (repeat r of `--seed S --repeats R` is `--seed S+r --repeats 1`, so the
    numbers are the same runs)."""
    N = len(files)
    rows = [len(y) for y in ys]
    common = ['--target', target, '--bias', '--epsilon', repr(float(eps)), '--mode', mode]
    gauss = MECH == 'gaussian'
    sim_common = common + (['--mechanism', 'gaussian', '--delta', repr(DELTA)] if gauss else [])
    sim_dir = os.path.join(cdir, 'sim-%s-%g' % (mode, eps))
    t0 = time.time()
    if tests is None:
        s = t.sim(files, sim_dir, ['--sample', sample, '--repeats', str(repeats),
                                   '--seed', str(seed)] + sim_common)
        psi = s['psi']
    else:
        psi, models = [], []
        for r in range(repeats):
            s = t.sim(files, sim_dir, ['--sample', sample, '--repeats', '1',
                                       '--seed', str(seed + r)] + sim_common)
            psi += s['psi']
            with open(os.path.join(sim_dir, 'model.json')) as f:
                models.append(np.array(json.load(f)['theta']))
    sim_s = time.time() - t0
    fc = t.forecast(['--sample', sample, '--rows', ','.join(map(str, rows))] + common +
                    (['--delta', repr(DELTA)] if gauss else []))
    if gauss:
        # The Gaussian plan's prediction and calls (docs/cli.md "dpasync forecast").
        fc = dict(fc, **fc['mechanisms']['gaussian'])
    if not cache:
        cache['f_star'], cache['psi_zero'], cache['psi'], cache['theta'] = alone(Xs, ys)
        # A non-private model trained on the public sample alone, judged on
        # the union: what the sample the planner reads is worth by itself.
        q = quadratic(np.vstack(Xs), np.concatenate(ys))
        ps = Pool(*read_prepared(sample))
        cache['public'] = fval(q, ridge(ps.X, ps.y, LAMBDA)) / q[3] - 1
    # numpy and sim must agree on the problem, or the comparison is void.
    if abs(s['f_star'] / cache['f_star'] - 1) > 1e-7:
        sys.exit('map: f* from numpy %.10g and sim %.10g differ' % (cache['f_star'],
                                                                    s['f_star']))
    alone_psi = cache['psi']
    joint = float(np.mean(psi))
    pays_owner = [joint < a for a in alone_psi]
    coll = fc['collaborate']
    agree_owner = [c == p for c, p in zip(coll, pays_owner)]
    fc_alone = float(np.mean(fc['alone']))
    alone_mean = float(np.mean(alone_psi))
    pays = joint < alone_mean
    fc_coll = sum(coll) * 2 > N            # the owners' majority (all alike here)
    c = dict(
        N=N, n_i=rows[0] if len(set(rows)) == 1 else rows, eps=eps, mode=mode,
        mechanism=MECH, T=s['T'], T_forecast=fc['settings']['T'],
        clip=s['clip_l2' if gauss else 'clip_l1'],
        answers_cap=s['answers_cap'][0],
        joint=dict(mean=joint, p25=float(np.percentile(psi, 25)),
                   p75=float(np.percentile(psi, 75)), median=float(np.median(psi)),
                   sem=float(np.std(psi, ddof=1) / math.sqrt(len(psi))) if len(psi) > 1
                   else None,
                   psi=[float('%.6g' % v) for v in psi]),
        alone=stats(alone_psi),
        psi_zero=s['psi_zero'],
        psi_public=cache['public'],
        forecast=dict(psi=fc['psi_mean'], parts=fc['psi_parts'], alone=fc_alone,
                      psi_zero=fc['psi_zero'], collaborate=fc_coll,
                      collaborate_fraction=sum(coll) / N),
        ratio=joint / alone_mean,
        forecast_ratio=fc['psi_mean'] / fc_alone,
        forecast_over_sim=fc['psi_mean'] / joint,
        pays=pays, pays_fraction=sum(pays_owner) / N,
        agree=(fc_coll == pays), agree_owner_fraction=sum(agree_owner) / N,
        paper_region=in_paper_region(N, min(rows), eps),
        sim_seconds=round(sim_s, 2))
    if tests is not None:
        c['own'] = own_view(tests, cache['theta'], models)
    return c


MIN_TEST_IID = 20000    # held-out rows for the population view of i.i.d. owners
MIN_TEST_OWNER = 1000   # ... and for each non-i.i.d. owner's own population


def deal_census(pool, N, n, rng, key=None):
    """N n rows drawn at random from the pool, dealt into N owners of n
    rows: in random order (i.i.d. owners), or in order of `key` (a list of
    arrays, the primary key last, as numpy.lexsort takes them) so that each
    owner holds a slice of the key's distribution.  Returns the owners' row
    indices and each owner's held-out population: the rows of the pool
    nobody drew (i.i.d.), or those of them whose key lies in the owner's
    slice; None when there are too few (MIN_TEST_*)."""
    idx = rng.choice(len(pool.y), size=N * n, replace=False)
    rest = np.ones(len(pool.y), dtype=bool)
    rest[idx] = False
    if key is None:
        blocks = [idx[i * n:(i + 1) * n] for i in range(N)]
        sel = np.nonzero(rest)[0]
        if len(sel) < MIN_TEST_IID:
            return blocks, None
        test = (pool.X[sel], pool.y[sel])
        return blocks, [test] * N
    code = np.zeros(len(pool.y), dtype=np.int64)
    for k in reversed(key):                     # the primary key first
        levels, inv = np.unique(k, return_inverse=True)
        code = code * len(levels) + inv
    idx = idx[np.lexsort((rng.random(N * n), code[idx]))]
    blocks = [idx[i * n:(i + 1) * n] for i in range(N)]
    tests = []
    for b in blocks:
        lo, hi = code[b].min(), code[b].max()
        sel = np.nonzero(rest & (code >= lo) & (code <= hi))[0]
        if len(sel) < MIN_TEST_OWNER:
            return blocks, None
        tests.append((pool.X[sel], pool.y[sel]))
    return blocks, tests


def census_group(t, pool, sample, work, N, n, eps_list, repeats, seed, key=None, label='iid',
                 modes=('async',)):
    """All the eps cells of one census (N, n_i) split: the owners are dealt
    once and measured at every eps (paired comparisons across eps)."""
    rng = np.random.default_rng([seed, N, n])
    blocks, tests = deal_census(pool, N, n, rng, key)
    cdir = os.path.join(work, 'cell-%s-%d-%d' % (label, N, n))
    os.makedirs(cdir, exist_ok=True)
    files = []
    for i, b in enumerate(blocks):
        files.append(os.path.join(cdir, 'owner-%d.csv' % (i + 1)))
        pool.write(files[-1], b)
    Xs = [pool.X[b] for b in blocks]
    ys = [pool.y[b] for b in blocks]
    cache = {}
    out = []
    for mode in modes:
        for eps in eps_list:
            c = run_cell(t, cdir, files, Xs, ys, sample, 'work', eps, repeats, seed, cache,
                         tests, mode)
            c['split'] = label
            c['table'] = 'fertility'
            out.append(c)
            say(c)
    shutil.rmtree(cdir)
    return out


TEST_ROWS = 20000


def gen_group(t, work, N, n, shift, concept, eps_list, repeats, seed, label, features=5):
    """Synthetic owners from `dpasync gen` (covariate shift `shift`, concept
    shift `concept`).  Each owner's file carries extra rows from its own
    distribution: ceil(PUBLIC_ROWS / N) of them from every owner together
    are the public sample, so that the sample mirrors the union of the
    owners as the census's does, and TEST_ROWS more are the owner's own
    held-out population."""
    extra = -(-PUBLIC_ROWS // N)
    cdir = os.path.join(work, 'cell-%s-%d-%d' % (label, N, n))
    raw = os.path.join(cdir, 'raw')
    t.run(['gen', '--force', '--rows', ','.join([str(n + extra + TEST_ROWS)] * N),
           '--features', str(features), '--shift', repr(shift), '--concept-shift', repr(concept),
           '--seed', str(seed), '--out', raw])
    files, Xs, ys, pub, tests = [], [], [], [], []
    header = None
    for i in range(N):
        header, lines = read_prepared(os.path.join(raw, 'owner-%d.csv' % (i + 1)))
        p = Pool(header, lines)
        files.append(os.path.join(cdir, 'owner-%d.csv' % (i + 1)))
        p.write(files[-1], range(n))
        Xs.append(p.X[:n])
        ys.append(p.y[:n])
        pub += lines[n:n + extra]
        tests.append((p.X[n + extra:], p.y[n + extra:]))
    sample = os.path.join(cdir, 'sample.csv')
    with open(sample, 'w') as f:
        f.write(header + '\n' + '\n'.join(pub) + '\n')
    cache = {}
    out = []
    for eps in eps_list:
        c = run_cell(t, cdir, files, Xs, ys, sample, 'y', eps, repeats, seed, cache, tests)
        c.update(split=label, table='gen', shift=shift, concept_shift=concept)
        out.append(c)
        say(c)
    shutil.rmtree(cdir)
    return out


def say(c):
    print('%-10s N=%-3d n=%-5s eps=%-4g %-5s T=%-6d joint %.5f alone %.5f (ratio %.2f) '
          'forecast %.5f/%.5f (ratio %.2f) pays=%d forecast=%d %s  [%.1fs]'
          % (c['split'], c['N'], c['n_i'], c['eps'], c['mode'], c['T'], c['joint']['mean'],
             c['alone']['mean'], c['ratio'], c['forecast']['psi'], c['forecast']['alone'],
             c['forecast_ratio'], c['pays'], c['forecast']['collaborate'],
             'agree' if c['agree'] else 'DISAGREE', c['sim_seconds']) +
          ('  own view: joint %.5f alone %.5f pays for %.0f %%'
           % (c['own']['joint'], c['own']['alone'], 100 * c['own']['pays_fraction'])
           if c.get('own') else ''), flush=True)


# ------------------------------------------------------------- figures

_TERM = []


def gnuplot(script, out):
    """Run gnuplot on script (its terminal written @TERM@): pngcairo when
    gnuplot has it, as dpasync plot does (docs/plots.md)."""
    if not _TERM:
        p = subprocess.run(['gnuplot', '-e', 'set terminal'], capture_output=True, text=True)
        _TERM.append('pngcairo' if 'pngcairo' in p.stdout + p.stderr else 'png')
    p = subprocess.run(['gnuplot'], input=script.replace('@TERM@', _TERM[0]),
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit('map: gnuplot failed for %s: %s' % (out, p.stderr.strip()))


def figure_map(cells, path):
    """One panel per eps: (N, n_i) grid coloured by log10(joint/alone),
    the ratio printed in each cell, an X where the forecast disagrees, and
    the paper's region outlined."""
    eps_list = sorted({c['eps'] for c in cells})
    Ns = sorted({c['N'] for c in cells})
    ns = sorted({c['n_i'] for c in cells})
    cols = min(len(eps_list), 3)
    rows = -(-len(eps_list) // cols)
    s = ['set terminal @TERM@ size %d,%d font "DejaVu Sans,10"' % (480 * cols, 400 * rows + 60),
         'set output "%s"' % path,
         'set multiplot layout %d,%d title "fertility.csv.gz (target work), i.i.d. owners: '
         'measured joint psi / owners\' mean alone psi\\n(blue: collaboration pays; '
         'X: the forecast decides otherwise; box: the paper\'s claimed region)"' % (rows, cols),
         'set palette defined (-1.5 "#2166ac", 0 "#f7f7f7", 1.5 "#b2182b")',
         'set cbrange [-1.5:1.5]', 'set cblabel "log10(joint / alone)"',
         'set xrange [-0.5:%g]' % (len(ns) - 0.5), 'set yrange [-0.5:%g]' % (len(Ns) - 0.5),
         'set xtics (%s)' % ', '.join('"%d" %d' % (n, i) for i, n in enumerate(ns)),
         'set ytics (%s)' % ', '.join('"%d" %d' % (N, i) for i, N in enumerate(Ns)),
         'set xlabel "rows per owner n_i"', 'set ylabel "owners N"',
         'set style fill solid 1.0 noborder', 'unset key']
    for e in eps_list:
        sub = [c for c in cells if c['eps'] == e]
        s.append('set title "eps = %g"' % e)
        s.append('unset label; unset object')
        k = 1
        for c in sub:
            x, y = ns.index(c['n_i']), Ns.index(c['N'])
            s.append('set label %d "%s%.2g" at %d,%d center front font ",9"'
                     % (k, '' if c['agree'] else 'X ', c['ratio'], x, y))
            k += 1
        if e >= 1:
            reg = [(ns.index(c['n_i']), Ns.index(c['N'])) for c in sub if c['paper_region']]
            if reg:
                x0 = min(r[0] for r in reg) - 0.5
                x1 = max(r[0] for r in reg) + 0.5
                y0 = min(r[1] for r in reg) - 0.5
                y1 = max(r[1] for r in reg) + 0.5
                s.append('set object 1 rect from %g,%g to %g,%g front fs empty border '
                         'lc rgb "black" lw 3' % (x0, y0, x1, y1))
        s.append("plot '-' using 1:2:(0.5):(0.5):3 with boxxyerror fc palette")
        for c in sub:
            s.append('%d %d %g' % (ns.index(c['n_i']), Ns.index(c['N']),
                                   max(-1.5, min(1.5, math.log10(c['ratio'])))))
        s.append('e')
    s.append('unset multiplot')
    gnuplot('\n'.join(s) + '\n', path)


def group_label(c):
    if c['split'] == 'iid':
        return 'census, i.i.d.' + (' (n_i < 500, beyond the grid)' if c['n_i'] < 500 else '')
    if c['split'] == 'gen-iid':
        return 'synthetic, i.i.d.'
    return ('synthetic' if c['table'] == 'gen' else 'census') + ', non-i.i.d.: ' + c['split']


def figure_agreement(cells, path):
    """Forecast ratio (predicted joint / predicted alone) against the
    measured ratio: the forecast decides right in the two quadrants where
    both are on the same side of 1."""
    groups = {}
    for c in cells:
        groups.setdefault(group_label(c), []).append(c)
    s = ['set terminal @TERM@ size 900,700 font "DejaVu Sans,11"',
         'set output "%s"' % path,
         'set title "Does the forecast call it right? (%d cells; right when both ratios '
         'are on the same side of 1)"' % len(cells),
         'set logscale xy', 'set xlabel "measured joint psi / owners\' alone psi"',
         'set ylabel "forecast psi / forecast alone"',
         'set arrow from 1, graph 0 to 1, graph 1 nohead dt 2',
         'set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2',
         'set key top left box opaque',
         'set label "collaboration pays" at graph 0.03, graph 0.05',
         'set label "alone is better" at graph 0.97, graph 0.95 right',
         'set label "pays, forecast says alone" at graph 0.03, graph 0.6 tc rgb "#b2182b"',
         'set label "does not pay, forecast says join" at graph 0.97, graph 0.05 right '
         'tc rgb "#b2182b"']
    plots = []
    data = []
    for i, (g, cs) in enumerate(sorted(groups.items())):
        plots.append("'-' using 1:2 with points pt %d ps 1.3 title '%s'" % (i + 5 if i else 7, g))
        data.append('\n'.join('%g %g' % (c['ratio'], c['forecast_ratio']) for c in cs) + '\ne')
    s.append('plot ' + ', '.join(plots))
    s += data
    gnuplot('\n'.join(s) + '\n', path)


def figure_noniid(cells, base, path):
    """Measured joint/alone for each non-i.i.d. cell beside the i.i.d. cell
    with the same N, n_i, eps (census) or the unshifted generator (gen)."""
    s = ['set terminal @TERM@ size 1100,700 font "DejaVu Sans,10"',
         'set output "%s"' % path,
         'set title "Non-i.i.d. owners: measured joint psi / owners\' alone psi '
         '(below 1: collaboration pays)"',
         'set logscale y', 'set ylabel "joint / alone"', 'set bmargin 8', 'set rmargin 10',
         'set xrange [-0.5:%g]' % (len(cells) - 0.5),
         'set xtics rotate by -45 font ",8" (%s)'
         % ', '.join('"%s %dx%d eps %g" %d' % (c['split'], c['N'], c['n_i'], c['eps'], i)
                     for i, c in enumerate(cells)),
         'set key top left box opaque',
         'set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 2']
    plots, data = [], []
    pairs = [(i, base[key_of(c)]['ratio']) for i, c in enumerate(cells) if key_of(c) in base]
    if pairs:
        plots.append("'-' using 1:2 with points pt 6 ps 1.5 lc rgb '#555555' "
                     "title 'the same cell with i.i.d. owners'")
        data.append('\n'.join('%d %g' % p for p in pairs) + '\ne')
    plots.append("'-' using 1:2 with points pt 7 ps 1.5 lc rgb '#b2182b' "
                 "title 'shifted owners'")
    data.append('\n'.join('%d %g' % (i, c['ratio']) for i, c in enumerate(cells)) + '\ne')
    own = [(i, c['own']['joint'] / c['own']['alone']) for i, c in enumerate(cells) if c.get('own')]
    if own:
        plots.append("'-' using 1:2 with points pt 9 ps 1.5 lc rgb '#2166ac' "
                     "title 'shifted owners, each judged on its own population'")
        data.append('\n'.join('%d %g' % p for p in own) + '\ne')
    s.append('plot ' + ', '.join(plots))
    s += data
    gnuplot('\n'.join(s) + '\n', path)


def key_of(c):
    if c['table'] == 'gen':
        return ('gen', c['N'], c['n_i'], c['eps'])
    return ('fertility', c['N'], c['n_i'], c['eps'])


# --------------------------------------------------------------- tables

def table(cells):
    """The cells as a markdown table; the own view (each owner judged on
    held-out rows of its own population) where it was measured."""
    h = ['| split | mode | N | n_i | ε | T | joint ψ mean (25–75 %) | alone ψ mean (min–max) '
         '| ψ_zero / ψ_public | joint/alone | pays (owners) | forecast ψ / alone | forecast | agree '
         '| own view: joint / alone (pays) |',
         '|' + '---|' * 15]
    for c in cells:
        o = c.get('own')
        h.append('| %s | %s | %d | %s | %g | %d | %.4g (%.3g–%.3g) | %.3g (%.3g–%.3g) '
                 '| %.3g / %.3g '
                 '| %.2f | %s (%d %%) | %.3g / %.3g | %s | %s | %s |'
                 % (c['split'], c['mode'], c['N'], c['n_i'], c['eps'], c['T'],
                    c['joint']['mean'], c['joint']['p25'], c['joint']['p75'],
                    c['alone']['mean'], c['alone']['min'], c['alone']['max'], c['psi_zero'],
                    c['psi_public'],
                    c['ratio'], 'yes' if c['pays'] else 'no', round(100 * c['pays_fraction']),
                    c['forecast']['psi'], c['forecast']['alone'],
                    'collaborate' if c['forecast']['collaborate'] else 'alone',
                    'yes' if c['agree'] else '**no**',
                    '%.3g / %.3g (%d %%)' % (o['joint'], o['alone'], round(100 * o['pays_fraction']))
                    if o else '–'))
    return '\n'.join(h) + '\n'


# ----------------------------------------------------------------- main

def main():
    global MECH

    def more(p):
        p.add_argument('--mechanism', choices=('laplace', 'gaussian'), default='laplace',
                       help='the answers\' noise (default laplace)')
        p.add_argument('--repeats', type=int, default=0,
                       help='sim repeats per cell (default %d, --quick %d)'
                       % (REPEATS, QUICK_REPEATS))
        p.add_argument('--iid-only', action='store_true',
                       help='the i.i.d. grid alone (no sync, small or non-i.i.d. parts)')
        p.add_argument('--cell', action='append', default=[], metavar='N,n_i,eps',
                       help='only this i.i.d. cell (repeatable; no figures)')
    a = _common.args(__doc__.split('\n')[0], more)
    MECH = a.mechanism
    t = _common.Tools(a)
    t0 = time.time()
    work = os.path.join(a.out, 'work')
    sample, pool = census(t, work)
    repeats = a.repeats or (QUICK_REPEATS if a.quick else REPEATS)
    narrow = a.iid_only or bool(a.cell)

    if a.cell:
        plan = []
        for spec in a.cell:
            N, n, eps = spec.split(',')
            plan.append((int(N), int(n), [float(eps)]))
    elif a.quick:
        plan = [(5, 10000, [1]), (25, 1000, [1, 10]), (250, 1000, [10])]
    else:
        plan = [(N, n, GRID_EPS) for N in GRID_N for n in GRID_ROWS
                if N * n <= len(pool.y)]
    cells = []
    for N, n, eps_list in plan:
        cells += census_group(t, pool, sample, work, N, n, eps_list, repeats, SEED)
    t_map = time.time() - t0

    # The paper's own (sync) algorithms in its claimed region: a sync round
    # asks every owner, so these runs cost up to 6 s a repeat; SYNC_REPEATS.
    sync = []
    if not a.quick and not narrow:
        sync = census_group(t, pool, sample, work, 25, 10000, [1, 5, 10], SYNC_REPEATS, SEED,
                            modes=('sync1', 'sync2'))
    t_sync = time.time() - t0 - t_map

    # Beyond the grid: owners with very few rows, where an owner's own
    # model is weakest (same measurements; not counted in the agreement).
    small = []
    if not a.quick and not narrow:
        for N in (25, 100, 250):
            for n in (100, 250):
                small += census_group(t, pool, sample, work, N, n, [0.5, 1, 2.5], repeats, SEED)
    t_small = time.time() - t0 - t_map - t_sync

    # Non-i.i.d. owners.  Census: the drawn rows dealt in order of age (each
    # owner an age band), or of ethnicity, then more kids, then age (owners
    # differ in who they are, as hospitals or regions would).
    age = pool.column('age')
    eth = (pool.column('afam=yes') + 2 * pool.column('hispanic=yes') +
           4 * pool.column('other=yes'))
    kids = pool.column('morekids=yes')
    keys = {'age': [age], 'group': [age, kids, eth]}
    if narrow:
        nplan, gplan = [], []
    elif a.quick:
        nplan = [('group', 10, 1000, [1])]
        gplan = [('concept', 10, 1000, 0.0, 1.0, [1])]
    else:
        nplan = [(k, N, n, [1, 5]) for k in ('age', 'group')
                 for N, n in [(10, 1000), (10, 10000), (25, 1000), (25, 10000), (100, 1000)]]
        gplan = [(lab, N, n, sh, cs, [1, 5])
                 for lab, sh, cs in [('gen-iid', 0.0, 0.0), ('shift', 1.0, 0.0),
                                     ('concept', 0.0, 1.0), ('concept-0.3', 0.0, 0.3)]
                 for N, n in [(10, 1000), (10, 10000), (25, 1000)]]
    noniid = []
    for k, N, n, eps_list in nplan:
        noniid += census_group(t, pool, sample, work, N, n, eps_list, repeats, SEED,
                               key=keys[k], label=k)
    for lab, N, n, sh, cs, eps_list in gplan:
        noniid += gen_group(t, work, N, n, sh, cs, eps_list, repeats, SEED, lab)
    t_all = time.time() - t0
    t_noniid = t_all - t_map - t_sync - t_small

    agree = sum(c['agree'] for c in cells)
    owned = [c for c in cells if c.get('own')]
    base = {key_of(c): c for c in cells}
    base.update({key_of(c): c for c in noniid if c['split'] == 'gen-iid'})
    result = dict(
        experiment='map', quick=a.quick, mechanism=MECH, delta=DELTA if MECH == 'gaussian' else 0.0,
        table='fertility.csv.gz', target='work',
        model='linear', bias=True, **{'lambda': LAMBDA}, public_rows=PUBLIC_ROWS,
        owner_rows=len(pool.y), repeats=repeats, seed=SEED,
        grid=dict(N=GRID_N, n_i=GRID_ROWS, eps=GRID_EPS),
        paper_region='N > 10, n_i >= 10000, eps >= 1',
        agreement=dict(cells=len(cells), agree=agree,
                       fraction=agree / len(cells),
                       owner_fraction=float(np.mean([c['agree_owner_fraction'] for c in cells])),
                       disagree=[dict(N=c['N'], n_i=c['n_i'], eps=c['eps'], ratio=c['ratio'],
                                      forecast_ratio=c['forecast_ratio'])
                                 for c in cells if not c['agree']]),
        # The same decision judged on held-out rows of the population (the
        # owners' own view), where the table leaves enough of them.
        agreement_own=dict(
            cells=len(owned), agree=sum(c['forecast']['collaborate'] ==
                                        (c['own']['joint'] < c['own']['alone']) for c in owned),
            pays=sum(c['own']['joint'] < c['own']['alone'] for c in owned)),
        pays=dict(cells=sum(c['pays'] for c in cells),
                  forecast=sum(c['forecast']['collaborate'] for c in cells)),
        cells=cells, noniid=noniid, sync=sync, sync_repeats=SYNC_REPEATS, small=small,
        small_agreement=dict(cells=len(small), agree=sum(c['agree'] for c in small),
                             pays=sum(c['pays'] for c in small)),
        noniid_agreement=dict(
            cells=len(noniid), agree=sum(c['agree'] for c in noniid),
            own_cells=sum(1 for c in noniid if c.get('own')),
            own_agree=sum(c['forecast']['collaborate'] == (c['own']['joint'] < c['own']['alone'])
                          for c in noniid if c.get('own')),
            own_pays=sum(c['own']['joint'] < c['own']['alone'] for c in noniid if c.get('own'))),
        seconds=dict(map=round(t_map, 1), sync=round(t_sync, 1), small=round(t_small, 1),
                     noniid=round(t_noniid, 1),
                     total=round(t_all, 1)))
    _common.write_result(a.out, result)
    with open(os.path.join(a.out, 'map.md'), 'w') as f:
        f.write('## i.i.d. owners\n\n' + table(cells) +
                '\n## The sync algorithms in the paper\'s region\n\n' + table(sync) +
                '\n## Owners with very few rows\n\n' + table(small) +
                '\n## Non-i.i.d. owners\n\n' + table(noniid))
    if not a.cell:
        figure_map(cells, os.path.join(a.out, 'map-iid.png'))
        figure_agreement(cells + small + noniid, os.path.join(a.out, 'map-agreement.png'))
    if noniid:
        figure_noniid([c for c in noniid if c['split'] != 'gen-iid'], base,
                      os.path.join(a.out, 'map-noniid.png'))
    shutil.rmtree(os.path.join(work))
    print('agreement: %d of %d cells (%.0f %%); %.0f s (map %.0f s)'
          % (agree, len(cells), 100 * agree / len(cells), t_all, t_map))


if __name__ == '__main__':
    main()
