#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""forecast vs sim with a public sample: every shared table, eps 1 and 4, 4 owners (within 2x)

`dpasync prep --sample-frac F --split 4` of each shared table (F: the
sample holds max(10 %, 500 rows) of the table, all of it when that is more
than the table: see SAMPLE_* below), then for eps in {1, 4}:
`dpasync forecast --sample DIR/sample.csv --rows n1,..,n4` (the public
sample and the owners' row counts only) and `dpasync sim --sample
DIR/sample.csv` on the owners' files with the same planned settings (they
are checked equal), REPEATS repeats.  The criterion: forecast psi / sim mean
psi within [1/2, 2] on every table at both budgets.  The full run adds, for
information and outside the criterion, the tables whose sample rule took
more than 10 %, with a 10 % sample (tens of rows).  One-hot levels are
taken from every row (--all-levels: a 10 % sample of lending_club misses a
state; the lists of levels are public knowledge, the rows are not).

The full run also repeats the synthetic check of docs/planner.md §5
(outside the criterion): `dpasync gen` with 4 owners and a fifth file of
2,000 rows from the same generator as the sample, 5 features + bias,
linear and logistic, 500 or 2,000 rows per owner, generator seeds 1 and 2,
eps in {0.5, 1, 4}: 24 cases.

--mechanism gaussian|both (default laplace) runs the same cases with
Gaussian answers (docs/planner.md §7): `forecast --delta DELTA` (its
"mechanisms" plans) and `sim --mechanism gaussian --delta DELTA`, the same
criterion; --repeats R and --tables T1,T2 narrow the run.

Writes OUTDIR/result.json and OUTDIR/forecast.md.
"""
import json
import math
import statistics
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

SAMPLE_FRAC = 0.10     # at least this fraction of the table ...
SAMPLE_ROWS = 500      # ... and at least this many rows (all of a smaller table)
EPSILONS = (1.0, 4.0)
REPEATS = 20
BOUND = 2.0
SEED = 1
DELTA = 1e-6


def sample_frac(total):
    return min(1.0, max(SAMPLE_FRAC, SAMPLE_ROWS / float(total)))


def table_rows(tools, table, out):
    """Rows of the prepared table (after --drop-missing): a prep without a
    sample, whose owner files hold every row."""
    d = os.path.join(out, 'data', table + '-rows')
    files = tools.prep(table, d, 1)
    return C.count_rows(files[0])


def one_case(tools, table, frac, eps, repeats, out, label, mech='laplace'):
    t = C.TABLES[table]
    d = os.path.join(out, 'data', '%s-f%g' % (table, frac))
    # --all-levels: a small sample can miss a level (lending_club's addr_state
    # WY); the list of levels (US states, grades) is public knowledge.
    files = tools.prep(table, d, 4, ['--sample-frac', repr(frac), '--seed', str(SEED),
                                     '--all-levels'])
    sample = os.path.join(d, 'sample.csv')
    rows = [C.count_rows(f) for f in files]
    common = ['--target', t['target'], '--bias', '--model', t['model'], '--epsilon', repr(eps)]
    gauss = mech == 'gaussian'
    t0 = time.time()
    f = tools.forecast(['--sample', sample, '--rows', ','.join(map(str, rows))] + common +
                       (['--delta', repr(DELTA)] if gauss else []))
    t_forecast = time.time() - t0
    if gauss:
        f = dict(f, **f['mechanisms']['gaussian'])
        common = common + ['--mechanism', 'gaussian', '--delta', repr(DELTA)]
    st = f['settings']
    sd = os.path.join(out, 'sim', '%s-f%g-eps%g%s' % (table, frac, eps, '-gauss' if gauss else ''))
    t0 = time.time()
    s = tools.sim(files, sd, ['--sample', sample, '--repeats', str(repeats), '--seed', str(SEED),
                              '--psi-every', str(st['T'])] + common)
    t_sim = time.time() - t0
    ran = (s['T'], s['eta'], s['clip_l2' if gauss else 'clip_l1'], s['answers_cap'])
    said = (st['T'], st['eta'], st['clip'], st['answers_cap'])
    if ran != said:
        sys.exit('%s eps %g: sim ran %s, the forecast said %s' % (table, eps, ran, said))
    psi = s['psi']
    mean = s['psi_mean']
    se = math.sqrt(sum((x - mean) ** 2 for x in psi) / (len(psi) - 1) / len(psi)) \
        if len(psi) > 1 else float('nan')
    ratio = f['psi_mean'] / mean
    r = dict(table=table, mechanism=mech, model=t['model'], p=f['p'], rows=sum(rows), sample=label,
             sample_rows=C.count_rows(sample), sample_frac=frac, epsilon=eps, T=st['T'],
             eta=st['eta'], clip=st['clip'], answers_cap=st['answers_cap'],
             forecast=f['psi_mean'], forecast_parts=f['psi_parts'], sim_mean=mean,
             sim_se=se, sim_p25=s['psi_p25'], sim_p75=s['psi_p75'], repeats=len(psi),
             psi_zero=s['psi_zero'], ratio=ratio,
             within=1.0 / BOUND <= ratio <= BOUND, seconds_forecast=round(t_forecast, 2),
             seconds_sim=round(t_sim, 2))
    print('%-18s %-8s %-6s eps %g: T %d forecast %.4g sim %.4g (se %.2g) ratio %.2f  [%.1f s]'
          % (table, mech, label, eps, st['T'], f['psi_mean'], mean, se, ratio, t_forecast + t_sim),
          flush=True)
    return r


SYN_ROWS = (500, 2000)
SYN_SEEDS = (1, 2)
SYN_EPS = (0.5, 1.0, 4.0)


def synthetic(tools, out, repeats):
    cases = []
    for task, model in (('regression', 'linear'), ('classification', 'logistic')):
        for rows in SYN_ROWS:
            for seed in SYN_SEEDS:
                g = os.path.join(out, 'synthetic', '%s-%d-s%d' % (model, rows, seed))
                if not os.path.exists(os.path.join(g, 'owner-5.csv')):
                    tools.run(['gen', '--task', task, '--rows', ','.join([str(rows)] * 4 + ['2000']),
                               '--features', '5', '--seed', str(seed), '--out', g])
                files = [os.path.join(g, 'owner-%d.csv' % i) for i in (1, 2, 3, 4)]
                sample = os.path.join(g, 'owner-5.csv')
                for eps in SYN_EPS:
                    common = ['--target', 'y', '--bias', '--model', model, '--epsilon', repr(eps)]
                    f = tools.forecast(['--sample', sample, '--rows', ','.join([str(rows)] * 4)] +
                                       common)
                    T = f['settings']['T']
                    sm = tools.sim(files, os.path.join(g, 'sim-eps%g' % eps),
                                   ['--sample', sample, '--repeats', str(repeats), '--seed', '3',
                                    '--psi-every', str(T)] + common)
                    r = dict(model=model, rows=rows, seed=seed, epsilon=eps, T=T,
                             forecast=f['psi_mean'], sim_mean=sm['psi_mean'],
                             ratio=f['psi_mean'] / sm['psi_mean'])
                    print('synthetic %-8s %4d rows seed %d eps %-3g: forecast %.4g sim %.4g '
                          'ratio %.2f' % (model, rows, seed, eps, r['forecast'], r['sim_mean'],
                                          r['ratio']), flush=True)
                    cases.append(r)
    return cases


def md(cases):
    rows = []
    for r in cases:
        rows.append(['%s (%s, p=%d, %s rows)' % (r['table'], r['model'], r['p'],
                                                 '{:,}'.format(r['rows'])),
                     r.get('mechanism', 'laplace'), '%g' % r['epsilon'], '%s (%s rows)' % (r['sample'],
                                                           '{:,}'.format(r['sample_rows'])),
                     r['T'], C.g3(r['forecast']),
                     '%s (%s–%s)' % (C.g3(r['sim_mean']), C.g3(r['sim_p25']), C.g3(r['sim_p75'])),
                     '**%.2f**' % r['ratio'] if not r['within'] else '%.2f' % r['ratio']])
    return C.md_table(['table', 'mechanism', 'ε', 'sample', 'T', 'forecast ψ', 'sim ψ (25–75 %)',
                       'forecast/sim'], rows)


def main():
    def more(p):
        p.add_argument('--mechanism', choices=('laplace', 'gaussian', 'both'),
                       default='laplace', help='the answers\' mechanism (default laplace)')
        p.add_argument('--repeats', type=int, default=0, help='sim repeats (default %d)'
                       % REPEATS)
        p.add_argument('--tables', default='', help='comma-separated tables (default all)')
        p.add_argument('--no-extra', action='store_true',
                       help='skip the small samples and the synthetic cases')
    a = C.args(__doc__, more)
    quick = C.quick(a)
    tools = C.Tools(a)
    tables = ['diabetes', 'breast_cancer'] if quick else list(C.TABLES)
    if a.tables:
        tables = a.tables.split(',')
    mechs = ('laplace', 'gaussian') if a.mechanism == 'both' else (a.mechanism,)
    epsilons = (1.0,) if quick else EPSILONS
    repeats = a.repeats or (4 if quick else REPEATS)
    t_all = time.time()
    cases, small = [], []
    for table in tables:
        total = table_rows(tools, table, a.out)
        frac = sample_frac(total)
        label = 'all' if frac >= 1.0 else '%.3g %%' % (100 * frac)
        for mech in mechs:
            for eps in epsilons:
                cases.append(one_case(tools, table, frac, eps, repeats, a.out, label, mech))
        if not quick and not a.no_extra and frac > SAMPLE_FRAC:
            for eps in epsilons:
                small.append(one_case(tools, table, SAMPLE_FRAC, eps, repeats, a.out, '10 %'))
    syn = [] if quick or a.no_extra else synthetic(tools, a.out, repeats)
    ok = all(r['within'] for r in cases)
    text = ('Forecast against sim (%d repeats), 4 owners; sample rule max(%g %%, %d rows).\n\n'
            % (repeats, 100 * SAMPLE_FRAC, SAMPLE_ROWS) + md(cases))
    if small:
        text += '\nSmall samples (10 %, outside the criterion):\n\n' + md(small)
    if syn:
        rs = sorted(r['ratio'] for r in syn)
        text += ('\nSynthetic (%d cases, outside the criterion): forecast/sim %.2f–%.2f, '
                 'median %.2f\n' % (len(rs), rs[0], rs[-1], statistics.median(rs)))
    text += '\nCriterion: every ratio within [1/%g, %g]: %s\n' % (BOUND, BOUND,
                                                                'PASS' if ok else 'FAIL')
    C.write_text(a.out, 'forecast.md', text)
    C.write_result(a.out, {
        'experiment': 'forecast', 'quick': quick, 'repeats': repeats, 'mechanisms': mechs,
        'delta': DELTA,
        'sample_rule': {'frac': SAMPLE_FRAC, 'rows': SAMPLE_ROWS}, 'bound': BOUND,
        'cases': cases, 'small_samples': small, 'synthetic': syn,
        'ratio_min': min(r['ratio'] for r in cases), 'ratio_max': max(r['ratio'] for r in cases),
        'pass': ok, 'seconds': round(time.time() - t_all, 1)})
    return 0


if __name__ == '__main__':
    sys.exit(main())
