#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""default flags on every shared table: eps 1, 4 owners, mean psi below psi_zero or a warning

Every shared table (scripts/reproduce/_common.py TABLES), prepared as
docs/cli.md "dpasync prep" does (no sample), dealt into 4 owners (--split 4,
seed 1), then `dpasync sim` with only --target, --bias and --model: eps = 1
each, everything planned from shape-only constants, 10 repeats.  Per table:
the measured mean psi (and its 25-75 % range), psi_zero (theta = 0 on the
owners' data), the planner's predicted psi and settings, and its warnings.

The criterion: on every table the private model beats theta = 0 (mean psi <
psi_zero), or, where it does not, the user was warned of it -- by the
planner before the run ("predicted worse than the all-zero model") or by
sim after it ("worse than theta = 0 on the owners' data").  The
"no public sample" warning that every default run prints does not count.

Writes OUTDIR/result.json and OUTDIR/defaults.md.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

OWNERS = 4
REPEATS = 10
SEED = 1

# Warnings, by what they say (the texts of dp_plan_warnings and cmd_sim.c).
KINDS = (('predicted worse than the all-zero model', 'planner: worse than θ = 0'),
         ('worse than theta = 0 on the owners', 'sim: worse than θ = 0'),
         ('collaborating is predicted not to pay', 'planner: own models beat collaborating'),
         ('no public sample', 'planner: shape-only constants'))
ZERO_WARNINGS = KINDS[0][1], KINDS[1][1]


def kinds(warnings):
    out = []
    for w in warnings:
        for text, kind in KINDS:
            if text in w:
                out.append(kind)
                break
        else:
            out.append(w)
    return out


def one_table(tools, table, repeats, out):
    t = C.TABLES[table]
    files = tools.prep(table, os.path.join(out, 'data', table), OWNERS)
    rows = [C.count_rows(f) for f in files]
    t0 = time.time()
    s = tools.sim(files, os.path.join(out, 'sim', table),
                  ['--target', t['target'], '--bias', '--model', t['model'],
                   '--repeats', str(repeats), '--seed', str(SEED)])
    secs = time.time() - t0
    plan = s['plan']
    ks = kinds(s['warnings'])
    beats = s['psi_mean'] < s['psi_zero']
    warned = any(k in ZERO_WARNINGS for k in ks)
    if beats:
        verdict = 'beats θ = 0'
    elif warned:
        verdict = 'warned: ' + ', '.join(k for k in ks if k in ZERO_WARNINGS)
    else:
        verdict = 'FAIL: worse than θ = 0 and no warning'
    r = dict(table=table, model=t['model'], p=s['p'], rows=sum(rows), n_rows=rows,
             epsilon=1.0, T=s['T'], eta=s['eta'], clip=s['clip_l1'],
             answers_cap=s['answers_cap'], repeats=s['repeats'], psi_mean=s['psi_mean'],
             psi_p25=s['psi_p25'], psi_p75=s['psi_p75'], psi_zero=s['psi_zero'],
             psi_predicted=plan['psi_mean'], psi_zero_assumed=plan['psi_zero'],
             warnings=s['warnings'], warning_kinds=ks, beats_zero=beats,
             warned_zero=warned, ok=beats or warned, verdict=verdict,
             seconds=round(secs, 2))
    print('%-18s psi %.4g (zero %.4g, predicted %.3g) T %d K %s: %s  [%.1f s]'
          % (table, s['psi_mean'], s['psi_zero'], plan['psi_mean'], s['T'],
             s['answers_cap'][0], verdict, secs), flush=True)
    return r


def md(res):
    rows = []
    for r in res:
        caps = r['answers_cap']
        k = str(caps[0]) if len(set(caps)) == 1 else ','.join(map(str, caps))
        rows.append(['%s (%s, p=%d, %s rows)' % (r['table'], r['model'], r['p'],
                                                 '{:,}'.format(r['rows'])),
                     C.g3(r['psi_zero']),
                     '**%s** (%s–%s)' % (C.g3(r['psi_mean']), C.g3(r['psi_p25']),
                                         C.g3(r['psi_p75'])),
                     C.g3(r['psi_predicted']), '%d, %s' % (r['T'], k),
                     '; '.join(sorted(set(r['warning_kinds']))) or '—', r['verdict']])
    return C.md_table(['table (model, p, rows)', 'ψ_zero', 'ψ measured (25–75 %)',
                       'ψ predicted', 'T, K_i', 'warnings', 'verdict'], rows)


def main():
    a = C.args(__doc__)
    quick = C.quick(a)
    tools = C.Tools(a)
    tables = ['diabetes', 'breast_cancer'] if quick else list(C.TABLES)
    repeats = 3 if quick else REPEATS
    t_all = time.time()
    res = [one_table(tools, t, repeats, a.out) for t in tables]
    ok = all(r['ok'] for r in res)
    text = ('Default flags (--target, --bias, --model only), %d owners, ε = 1, %d repeats.\n\n'
            % (OWNERS, repeats) + md(res) +
            '\nCriterion: every table beats θ = 0 or was warned of it: %s\n'
            % ('PASS' if ok else 'FAIL'))
    C.write_text(a.out, 'defaults.md', text)
    C.write_result(a.out, {'experiment': 'defaults', 'quick': quick, 'owners': OWNERS,
                           'epsilon': 1.0, 'repeats': repeats, 'tables': res,
                           'beats_zero': [r['table'] for r in res if r['beats_zero']],
                           'warned': [r['table'] for r in res if r['warned_zero']],
                           'pass': ok, 'seconds': round(time.time() - t_all, 1)})
    return 0


if __name__ == '__main__':
    sys.exit(main())
