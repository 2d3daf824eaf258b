#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""peer mode on MovieLens: local (tuned, untuned), non-private CD, private CD at eps 1, 0.5, 0.1

The MovieLens comparison of the peer-to-peer paper (docs/p2p.md "MovieLens")
on the shared ratings (movielens_ratings.csv.gz, 671 users): one agent per
user, an 80/20 split of each user's ratings into training and test, and a
validation fifth carved from each user's training ratings for every choice
of hyper-parameter.  Movie features are public attributes known a priori:
the 19 genres (0/1) and the release year (centred and scaled by `dpasync
prep` on the training rows), and a bias column; the target is the rating
less the mean training rating.  The graph is `dpasync graph --knn 10` on the users' training
ratings (cosine similarity).  Per run (5 runs, each a different split):

  local (tuned)    each user's ridge model, lambda_i = v / m_i with v chosen
                   among LAMBDAS on the users' validation ratings, refit on
                   all training ratings (dpasync sim --mode p2p --local)
  local (untuned)  the same with lambda_i = 1/m_i, the paper's choice
  CD               dpasync sim --mode p2p, eps = inf, lambda_i = 1/m_i, mu and
                   the wake-ups T chosen on validation
  private          the same at eps in {1, 0.5, 0.1}, delta = e^-5 (the equal
                   split over T wake-ups, advanced composition when it gives
                   more), mu, T and the clip bound chosen on validation per
                   eps (the choice itself is not charged to any budget)

Each is the per-user test RMSE averaged over users (dpasync eval --peer
"mean"), then over the runs.  Writes OUTDIR/result.json (local_rmse,
local_untuned_rmse, cd_rmse, private_rmse {"1","0.5","0.1"}, with per-run
values and the choices made), OUTDIR/p2p-movielens.md and
OUTDIR/p2p-movielens.png.
"""
import csv
import gzip
import json
import itertools
import math
import os
import random
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# P2P_SERVED_ONLY=1 and P2P_PRIVATE_ONLY=1e-5 run some rows only (_common.py)
import _common as C  # noqa: E402


def f4(x):
    """A table cell: four decimals (the differences are in the third)."""
    return '%.4f' % x

PAPER = {'local': 1.2834, 'cd': 0.9502, '1': 0.9527, '0.5': 0.9545, '0.1': 0.9855}
EPS = ['1', '0.5', '0.1']
DELTA = math.exp(-5)
MECHANISM = 'laplace'                           # the private runs' (--mechanism)
LAMBDAS = [0.1, 1, 3, 10, 30]                   # lambda_i * m_i (one value for all users)
DELTAS = {'': DELTA, '_delta_1e-5': 1e-5}       # result key suffix -> delta
# served (docs/p2p.md §7): prior x clip x tau ('cv': each user's
# cross-validation; else one value for all), chosen on validation
SERVE_GRID = (['all', 'graph'], [3.0, 10.0, 30.0], ['cv', 3, 10])
# The grids mu x wake-ups x clip x warm-start share of eps tried on
# validation: the non-private runs need many small steps; the private ones
# are best with few (docs/p2p.md).  The warm start is one noisy step.
GRID = {'inf': ([10, 30, 100], [200, 1000], [10.0], [0]),
        'private': ([1, 3, 10], [10, 30, 100], [1.0], [0, 0.5])}
WARM_STEPS = 1
CLAMP = 1.5                                     # |year| after standardising
GENRES = ['Action', 'Adventure', 'Animation', 'Children', 'Comedy', 'Crime', 'Documentary',
          'Drama', 'Fantasy', 'Film-Noir', 'Horror', 'IMAX', 'Musical', 'Mystery', 'Romance',
          'Sci-Fi', 'Thriller', 'War', 'Western']


def load(path):
    """Ratings with a year (7 of 100,004 have none and are left out)."""
    users = {}
    with gzip.open(path, 'rt', newline='') as f:
        for row in csv.DictReader(f):
            if not row['year']:
                continue
            g = set(row['genres'].split('|'))
            feat = [1 if x in g else 0 for x in GENRES] + [int(row['year'])]
            users.setdefault(row['userId'], []).append((row['movieId'], feat,
                                                        float(row['rating'])))
    return users


def split(users, seed, users_max):
    """Per user: 20 % test, and of the rest 20 % validation (at least one
    rating each), by a seeded shuffle."""
    rng = random.Random(seed)
    parts = {'fit': [], 'val': [], 'train': [], 'test': []}
    for u in sorted(users, key=int)[:users_max]:
        r = list(users[u])
        rng.shuffle(r)
        nt = max(1, round(0.2 * len(r)))
        test, train = r[:nt], r[nt:]
        nv = max(1, round(0.2 * len(train)))
        for name, rows in (('test', test), ('train', train), ('val', train[:nv]),
                           ('fit', train[nv:])):
            parts[name] += [(u,) + x for x in rows]
    return parts


def write_raw(path, rows, centre):
    with open(path, 'w') as f:
        f.write('user,movie,' + ','.join('g_' + g.replace('-', '_') for g in GENRES) +
                ',year,rating\n')
        for u, movie, feat, y in rows:
            f.write('u%s,%s,%s,%r\n' % (u, movie, ','.join(str(v) for v in feat), y - centre))


def ratings_files(d, rows):
    """One (movie, rating) file per user, for dpasync graph --knn."""
    os.makedirs(d, exist_ok=True)
    by = {}
    for u, movie, _, y in rows:
        by.setdefault(u, []).append((movie, y))
    for u, rs in by.items():
        with open(os.path.join(d, 'u%s.csv' % u), 'w') as f:
            f.write('movie,rating\n')
            f.writelines('%s,%g\n' % r for r in rs)
    return sorted(os.path.join(d, 'u%s.csv' % u) for u in by)


class Run:
    """One split: the prepared files and the commands on them."""

    def __init__(self, tools, d, parts):
        self.t = tools
        self.d = d
        raw = os.path.join(d, 'raw')
        os.makedirs(raw, exist_ok=True)
        # The target is the rating less the mean training rating (one
        # number; the RMSE does not change, and theta = 0 predicts it).
        self.centre = sum(x[3] for x in parts['train']) / len(parts['train'])
        for name, rows in parts.items():
            write_raw(os.path.join(raw, name + '.csv'), rows, self.centre)
        # The schema is built on the rows used for fitting; the other parts
        # go through the same schema.
        # Genres stay 0/1 (--levels), the year is centred and scaled.
        levels = []
        for g in GENRES:
            levels += ['--levels', 'g_%s=0,1' % g.replace('-', '_')]
        tools.run(['prep', '--target', 'rating', '--raw-target', '--drop', 'movie', '--clamp',
                   repr(CLAMP)] + levels +
                  ['--split-by', 'user', '--out', os.path.join(d, 'fit'), '--force',
                   os.path.join(raw, 'fit.csv')])
        schema = os.path.join(d, 'fit', 'schema.json')
        for name in ('val', 'train', 'test'):
            tools.run(['prep', '--schema', schema, '--split-by', 'user', '--out',
                       os.path.join(d, name), '--force', os.path.join(raw, name + '.csv')])
        self.users = sorted(f[:-4] for f in os.listdir(os.path.join(d, 'fit'))
                            if f.endswith('.csv') and f != 'sample.csv')
        self.graph = {}
        for name in ('fit', 'train'):
            files = ratings_files(os.path.join(d, 'ratings-' + name), parts[name])
            self.graph[name] = os.path.join(d, 'graph-%s.csv' % name)
            tools.run(['graph', '--knn', '10', '--item', 'movie', '--value', 'rating',
                       '--out', self.graph[name]] + files)
        # x2max: the largest ||x||^2 over the prepared rows (movie features,
        # public), plus 1 for the bias.
        self.x2max = 1.0 + max(self.row_norms(name) for name in ('train', 'test'))
        self.catalogue = self.write_catalogue()

    def write_catalogue(self):
        """The movies' feature rows (public: genres and year), each
        distinct row once, target 0: the public second moment that turns
        the pooled released gradient into a prior (--curvature)."""
        rows, header = set(), None
        for name in ('fit', 'val', 'train', 'test'):
            for f in self.files(name):
                if not os.path.exists(f):
                    continue
                with open(f) as h:
                    lines = h.read().splitlines()
                header = lines[0]
                rows.update(line.rsplit(',', 1)[0] for line in lines[1:])
        path = os.path.join(self.d, 'catalogue.csv')
        with open(path, 'w') as f:
            f.write(header + '\n')
            f.writelines(r + ',0\n' for r in sorted(rows))
        return path
    def row_norms(self, name):
        best = 0.0
        for u in self.users:
            with open(self.files(name)[self.users.index(u)]) as f:
                next(f)
                for line in f:
                    x = [float(v) for v in line.split(',')[:-1]]
                    best = max(best, sum(v * v for v in x))
        return best

    def files(self, name):
        return [os.path.join(self.d, name, u + '.csv') for u in self.users]

    def sim(self, name, out, flags):
        self.t.run(['sim', '--mode', 'p2p', '--model', 'linear', '--bias', '--target', 'rating',
                    '--x2max', repr(self.x2max), '--out', out] + flags + self.files(name))
        return out

    def eval(self, out, name, models='agents'):
        r = json.loads(self.t.run(['eval', '--peer', '--models', os.path.join(out, models)] +
                                  self.files(name)))
        return r['mean'], {a['id']: a['rmse'] for a in r['per_agent']}

    def local_tuned(self):
        """lambda_i = v / m_i with v chosen on the users' validation ratings
        (mean RMSE), refit on all training ratings.  (Choosing v per user
        on its 3 to 480 validation ratings did worse than the untuned
        models in a trial run: it fits the validation noise.)"""
        best = None
        for v in LAMBDAS:
            out = self.sim('fit', os.path.join(self.d, 'loc-%g' % v),
                           ['--local', '--lambda-per-row', repr(v)])
            e = self.eval(out, 'val')[0]
            if best is None or e < best[0]:
                best = (e, v)
        out = self.sim('train', os.path.join(self.d, 'loc-tuned'),
                       ['--local', '--lambda-per-row', repr(best[1])])
        return self.eval(out, 'test')[0], best[1]

    def zero(self):
        """theta = 0: every rating predicted by the mean training rating."""
        per = []
        for f in self.files('test'):
            with open(f) as h:
                ys = [float(line.rsplit(',', 1)[1]) for line in h.read().splitlines()[1:]]
            per.append(math.sqrt(sum(y * y for y in ys) / len(ys)))
        return sum(per) / len(per)

    def local_untuned(self):
        out = self.sim('train', os.path.join(self.d, 'loc-untuned'), ['--local'])
        return self.eval(out, 'test')[0]

    def served(self, eps, delta, seed, v):
        """The served models (--serve refit --release grad0, docs/p2p.md
        §7): prior, clip and tau on validation (fit ratings, graph of the
        fit ratings), then the choice on all training ratings."""
        flags = ['--epsilon', eps, '--serve', 'refit', '--release', 'grad0', '--curvature',
                 self.catalogue, '--prior-scale', 'none', '--lambda-per-row', repr(v)]
        if eps != 'inf':
            flags += ['--delta', repr(delta), '--mechanism', MECHANISM]
        best = None
        for prior, clip, tau in itertools.product(*SERVE_GRID):
            f = flags + ['--prior', prior, '--clip', repr(clip)] + \
                ([] if tau == 'cv' else ['--tau', repr(tau)])
            out = self.sim('fit', os.path.join(self.d, 'serve-tune'),
                           f + ['--graph', self.graph['fit'], '--seed', str(seed)])
            e = self.eval(out, 'val', 'served')[0]
            if best is None or e < best[0]:
                best = (e, f, prior, clip, tau)
        out = self.sim('train', os.path.join(self.d, 'served-%s' % eps),
                       best[1] + ['--graph', self.graph['train'], '--seed', str(seed + 1000)])
        return self.eval(out, 'test', 'served')[0], {'prior': best[2], 'clip': best[3],
                                                    'tau': best[4], 'val_rmse': best[0]}

    def cd(self, eps, seed, delta=DELTA):
        """mu and T on validation (graph of the fit ratings), then the chosen
        setting on all training ratings, scored on test."""
        flags = ['--epsilon', eps] + ([] if eps == 'inf' else
                                      ['--delta', repr(delta), '--mechanism', MECHANISM])
        mus, wakeups, clips, warms = GRID['inf' if eps == 'inf' else 'private']
        best = None
        for mu, w, clip, warm in itertools.product(mus, wakeups, clips, warms):
            f = flags + ['--graph', self.graph['fit'], '--mu', repr(mu), '--wakeups', str(w),
                         '--clip', repr(clip), '--seed', str(seed)] + warm_flags(eps, warm)
            e = self.eval(self.sim('fit', os.path.join(self.d, 'cd-tune'), f), 'val')[0]
            if best is None or e < best[0]:
                best = (e, mu, w, clip, warm)
        _, mu, w, clip, warm = best
        f = flags + ['--graph', self.graph['train'], '--mu', repr(mu), '--wakeups', str(w),
                     '--clip', repr(clip), '--seed', str(seed + 1000)] + warm_flags(eps, warm)
        out = self.sim('train', os.path.join(self.d, 'cd-%s' % eps), f)
        return self.eval(out, 'test')[0], {'mu': mu, 'wakeups': w, 'clip': clip,
                                          'warm_share': warm, 'val_rmse': best[0]}


def warm_flags(eps, share):
    """The private warm start (ownerd --peer --warm-start): share of eps."""
    if share == 0:
        return []
    return ['--warm-start', repr(share * float(eps)), '--warm-steps', str(WARM_STEPS)]


def plot(out, res):
    """A bar chart of the five test RMSEs beside the paper's (gnuplot)."""
    dat = os.path.join(out, 'p2p-movielens.dat')
    rows = [('theta=0', res['zero_rmse'], float('nan')),
            ('local(untuned)', res['local_untuned_rmse'], PAPER['local']),
            ('local(tuned)', res['local_rmse'], float('nan')),
            ('CD', res['cd_rmse'], PAPER['cd'])] + \
           [('eps=' + e, res['private_rmse'][e], PAPER.get(e, float('nan'))) for e in EPS]
    with open(dat, 'w') as f:
        for name, ours, paper in rows:
            f.write('"%s" %.6f %s\n' % (name, ours, 'NaN' if math.isnan(paper) else paper))
    png = os.path.join(out, 'p2p-movielens.png')
    script = ('set terminal pngcairo size 800,450; set output "%s";'
              'set style data histogram; set style histogram clustered gap 1;'
              'set style fill solid 0.8 border -1; set ylabel "test RMSE (mean over users)";'
              'set yrange [0.8:1.4]; set key top right; set xtics rotate by -20;'
              'set title "MovieLens, one agent per user (671)";'
              'plot "%s" using 2:xtic(1) title "dpasync", "" using 3 title "paper (ML-100K)"'
              % (png, dat))
    if shutil.which('gnuplot'):
        subprocess.run(['gnuplot', '-e', script], check=True)
        print('wrote', png)
    return png


def options(p):
    p.add_argument('--mechanism', choices=['laplace', 'gaussian'], default='laplace',
                   help='the private runs\' mechanism (docs/peer-agents.md §2); --clip is L2 '
                        'for gaussian')
    p.add_argument('--eps', default=','.join(EPS),
                   help='the private and served rows\' epsilons (default %s)' % ','.join(EPS))
    p.add_argument('--runs', type=int, default=5, help='runs (splits), default 5')


def main():
    a = C.args(__doc__, options)
    global MECHANISM, EPS, SERVE_GRID
    MECHANISM = a.mechanism
    EPS = a.eps.split(',')
    tools = C.Tools(a)
    quick = C.quick(a)
    runs = 1 if quick else a.runs
    users_max = 40 if quick else 10 ** 9
    global GRID, LAMBDAS
    if quick:
        GRID = {'inf': ([10], [20], [10.0], [0]), 'private': ([1], [5], [1.0], [0, 0.5])}
        LAMBDAS = [1, 10]
        SERVE_GRID = (['all'], [10.0], ['cv', 10])
    users = load(os.path.join(a.data, 'movielens_ratings.csv.gz'))
    per_run = []
    t0 = time.time()
    for r in range(runs):
        d = os.path.join(a.out, 'run%d' % (r + 1))
        run = Run(tools, d, split(users, 1 + r, users_max))
        res = {'users': len(run.users), 'x2max': run.x2max, 'zero_rmse': run.zero()}
        res['local_rmse'], res['local_lambda_per_row'] = run.local_tuned()
        res['local_untuned_rmse'] = run.local_untuned()
        if not C.p2p_rows('')[0]:   # CD as docs/p2p.md §5.2 (same splits)
            res['cd_rmse'] = float('nan')
        else:
            res['cd_rmse'], res['cd_choice'] = run.cd('inf', 100 * r + 1)
        for suf, delta in DELTAS.items():
            res['private_rmse' + suf], res['private_choice' + suf] = {}, {}
            res['served_rmse' + suf], res['served_choice' + suf] = {}, {}
            _, private, served = C.p2p_rows(suf)
            for e in EPS:
                if not private:
                    res['private_rmse' + suf][e] = float('nan')
                else:
                    res['private_rmse' + suf][e], res['private_choice' + suf][e] = \
                        run.cd(e, 100 * r + 2, delta)
                if not served:
                    res['served_rmse' + suf][e] = float('nan')
                else:
                    res['served_rmse' + suf][e], res['served_choice' + suf][e] = \
                        run.served(e, delta, 100 * r + 3, res['local_lambda_per_row'])
        print('run %d: local %.4f untuned %.4f cd %.4f private %s served %s %s (%.0f s)' %
              (r + 1, res['local_rmse'], res['local_untuned_rmse'], res['cd_rmse'],
               ' '.join('%s:%.4f' % kv for kv in res['private_rmse'].items()),
               ' '.join('%s:%.4f' % kv for kv in res['served_rmse'].items()),
               ' '.join('%s:%.4f' % kv for kv in res['served_rmse_delta_1e-5'].items()),
               time.time() - t0), flush=True)
        per_run.append(res)
        with open(os.path.join(a.out, 'per_run.json'), 'w') as f:   # partial results
            json.dump(per_run, f, indent=1)
    mean = lambda k: sum(x[k] for x in per_run) / runs  # noqa: E731
    result = {
        'experiment': 'p2p-movielens', 'runs': runs, 'quick': quick,
        'users': per_run[0]['users'],
        'local_rmse': mean('local_rmse'),
        'local_untuned_rmse': mean('local_untuned_rmse'),
        'zero_rmse': mean('zero_rmse'),
        'cd_rmse': mean('cd_rmse'),
        'private_rmse': {e: sum(x['private_rmse'][e] for x in per_run) / runs for e in EPS},
        'eps': EPS,
        'delta': DELTA, 'mechanism': MECHANISM, 'grid': GRID, 'lambdas': LAMBDAS, 'paper_ml100k': PAPER, 'per_run': per_run,
        'seconds': round(time.time() - t0, 1),
    }
    for suf in DELTAS:
        for k in ('private_rmse', 'served_rmse'):
            result[k + suf] = {e: sum(x[k + suf][e] for x in per_run) / runs for e in EPS}
        # paired per run, positive = served better (lower RMSE)
        result['local_minus_served' + suf] = {
            e: C.paired([x['local_rmse'] for x in per_run],
                        [x['served_rmse' + suf][e] for x in per_run]) for e in EPS}
        result['served_gap_closed' + suf] = {
            e: (result['local_rmse'] - result['served_rmse' + suf][e]) /
               (result['local_rmse'] - result['cd_rmse'])
            if result['local_rmse'] > result['cd_rmse'] else None for e in EPS}
    result['cd_beats_tuned_local'] = result['cd_rmse'] < result['local_rmse']
    result['private_1_within_3pct_of_cd'] = result['private_rmse']['1'] <= 1.03 * result['cd_rmse']
    C.write_result(a.out, result)
    rows = [['theta = 0 (the mean training rating)', f4(result['zero_rmse']), '—'],
            ['purely local, lambda_i = v/m_i, v tuned on validation',
             f4(result['local_rmse']), '—'],
            ['purely local, lambda_i = 1/m_i', f4(result['local_untuned_rmse']),
             PAPER['local']],
            ['non-private CD', f4(result['cd_rmse']), PAPER['cd']]]
    rows += [['private CD, eps = %s' % e, f4(result['private_rmse'][e]), PAPER.get(e, '—')]
             for e in EPS]
    for suf, delta in DELTAS.items():
        rows += [['private CD, eps = %s, delta = %g' % (e, delta),
                  f4(result['private_rmse' + suf][e]), '—'] for e in EPS if suf]
        rows += [['served, eps = %s, delta = %g (tuned local - served per run: %s; gap '
                  'closed %s)' % (e, delta,
                                  C.paired_text(result['local_minus_served' + suf][e]),
                                  '—' if result['served_gap_closed' + suf][e] is None else
                                  '%.0f %%' % (100 * result['served_gap_closed' + suf][e])),
                  f4(result['served_rmse' + suf][e]), '—'] for e in EPS]
    C.write_text(a.out, 'p2p-movielens.md',
                 C.md_table(['model', 'test RMSE (mean over users, %d runs)' % runs,
                             'paper (MovieLens-100K)'], rows))
    plot(a.out, result)


if __name__ == '__main__':
    main()
