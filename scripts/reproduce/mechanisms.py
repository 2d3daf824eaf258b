#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""psi under Laplace and Gaussian answers: every shared table, eps 0.5/1/4, 4 owners, planned

For every shared table (prepared as forecast.py does: a public sample of
max(10 %, 500 rows), 4 owners) and eps in {0.5, 1, 4}: `dpasync forecast
--delta 1e-6` plans both mechanisms from the sample (docs/planner.md §7),
and `dpasync sim` runs each with the settings it planned (--mechanism
laplace, then gaussian at delta 1e-6), REPEATS repeats.  The table: mean
psi of each, the gain (Laplace over Gaussian), the forecast's call of the
lower one, and each forecast over its measured mean.  The issue's
criterion (at eps 1): Gaussian's mean psi at most half of Laplace's on at
least 5 of the table/target pairs.  --repeats R, --gaussian-repeats R
(Gaussian's long jobs cost minutes a repeat on the large tables),
--tables T1,T2 and --epsilons E1,E2 narrow the run; --quick: two small
tables at eps 1, 3 repeats.  --combine DIR1,DIR2 runs nothing: it writes
the table of the rows of earlier runs' DIRn/result.json (one row per
table and eps, the later DIR's when two have it).

Writes OUTDIR/result.json and OUTDIR/mechanisms.md.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402
import forecast as F  # noqa: E402

EPSILONS = (0.5, 1.0, 4.0)
REPEATS = 10
GAIN = 2.0    # the criterion: Gaussian at most half of Laplace ...
PAIRS = 5     # ... on at least this many pairs at eps 1


def md(rows):
    out = []
    reps = set((r['laplace']['repeats'], r['gaussian']['repeats']) for r in rows)
    for r in rows:
        lap, gau = r['laplace'], r['gaussian']
        out.append(['%s (%s, p=%d)' % (r['table'], lap['model'], lap['p']), '%g' % r['epsilon'],
                    '%s (T %d)' % (C.g3(lap['sim_mean']), lap['T']),
                    '%s (T %d)' % (C.g3(gau['sim_mean']), gau['T']),
                    '%.2f×' % r['gain'], r['called'] + ('' if r['call_right'] else ' (wrong)'),
                    '%.2f / %.2f' % (lap['ratio'], gau['ratio'])] +
                   (['%d / %d' % (lap['repeats'], gau['repeats'])] if len(reps) > 1 else []))
    return C.md_table(['table', 'ε', 'Laplace ψ', 'Gaussian ψ', 'gain', 'forecast calls',
                       'forecast/sim L / G'] + (['repeats L / G'] if len(reps) > 1 else []), out)


def combine(dirs):
    """The rows of earlier runs' result.json, in the order of TABLES then
    eps; a later DIR's row replaces an earlier one's."""
    got = {}
    for d in dirs:
        with open(os.path.join(d, 'result.json')) as f:
            for r in json.load(f)['rows']:
                got[(r['table'], r['epsilon'])] = r
    order = list(C.TABLES)
    return [got[k] for k in sorted(got, key=lambda k: (order.index(k[0]), k[1]))]


def main():
    def more(p):
        p.add_argument('--repeats', type=int, default=0, help='sim repeats (default %d)' % REPEATS)
        p.add_argument('--gaussian-repeats', type=int, default=0,
                       help='sim repeats of the Gaussian jobs (default: --repeats)')
        p.add_argument('--tables', default='', help='comma-separated tables (default all)')
        p.add_argument('--epsilons', default='',
                       help='comma-separated eps (default %s)' % ','.join('%g' % e for e in EPSILONS))
        p.add_argument('--combine', default='',
                       help='comma-separated DIRs of earlier runs: tabulate their rows, run nothing')
    a = C.args(__doc__, more)
    quick = C.quick(a)
    tools = C.Tools(a)
    unknown = [t for t in a.tables.split(',') if t and t not in C.TABLES]
    if unknown:
        sys.exit('mechanisms: no shared table %s (known: %s)' % (','.join(unknown),
                                                              ','.join(C.TABLES)))
    tables = a.tables.split(',') if a.tables else (['diabetes', 'breast_cancer'] if quick
                                                    else list(C.TABLES))
    epsilons = (tuple(float(e) for e in a.epsilons.split(',')) if a.epsilons else
                (1.0,) if quick else EPSILONS)
    repeats = a.repeats or (3 if quick else REPEATS)
    g_repeats = a.gaussian_repeats or repeats
    t_all = time.time()
    rows = combine(a.combine.split(',')) if a.combine else []
    for table in ([] if a.combine else tables):
        frac = F.sample_frac(F.table_rows(tools, table, a.out))
        label = 'all' if frac >= 1.0 else '%.3g %%' % (100 * frac)
        for eps in epsilons:
            r = {m: F.one_case(tools, table, frac, eps, g_repeats if m == 'gaussian' else repeats,
                               a.out, label, m)
                 for m in ('laplace', 'gaussian')}
            lap, gau = r['laplace'], r['gaussian']
            called = 'gaussian' if gau['forecast'] < lap['forecast'] else 'laplace'
            lower = 'gaussian' if gau['sim_mean'] < lap['sim_mean'] else 'laplace'
            rows.append(dict(table=table, epsilon=eps, laplace=lap, gaussian=gau,
                             gain=lap['sim_mean'] / gau['sim_mean'], called=called,
                             call_right=called == lower))
            # Each row as it comes: a long run stopped midway keeps what it measured.
            C.write_result(a.out, {'experiment': 'mechanisms', 'partial': True, 'rows': rows})
    at1 = [r for r in rows if r['epsilon'] == 1.0]
    halved = sum(1 for r in at1 if r['gain'] >= GAIN)
    ok = halved >= min(PAIRS, len(at1))
    reps = sorted(set(r[m]['repeats'] for r in rows for m in ('laplace', 'gaussian')))
    text = ('Laplace and Gaussian answers (delta %g), planned settings, 4 owners, %s repeats.\n\n'
            % (F.DELTA, '/'.join(map(str, reps))) + md(rows) +
            '\nCriterion (eps 1): Gaussian psi at most 1/%g of Laplace\'s on %d of %d pairs '
            '(at least %d): %s\n' % (GAIN, halved, len(at1), min(PAIRS, len(at1)),
                                     'PASS' if ok else 'FAIL'))
    C.write_text(a.out, 'mechanisms.md', text)
    C.write_result(a.out, {'experiment': 'mechanisms', 'quick': quick, 'repeats': repeats,
                           'gaussian_repeats': g_repeats,
                           'delta': F.DELTA, 'rows': rows, 'halved_at_eps1': halved,
                           'pass': ok, 'seconds': round(time.time() - t_all, 1)})
    return 0


if __name__ == '__main__':
    sys.exit(main())
