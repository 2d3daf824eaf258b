#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance (issue 8): what `dpasync sim` reports besides psi.
- summary.json keeps its keys and adds "answers", "epsilon_spent",
  "answers_cap", "psi_zero", "plan", "warnings" and "public"; an unlimited
  budget is the string "inf" in "epsilon" and "epsilon_spent";
- the settings run are the plan's (T, eta, clip, caps), and each answer's
  share is the ledger's: epsilon_spent = answers * eps/K rounded as the
  ledger charges (within 1e-9);
- psi_zero = f(0)/f* - 1 on the owners' data, computed here with numpy;
- every warning is in "warnings" and once on stderr as
  "dpasync sim: warning: ..."; shape-only constants say so, a sample does
  not; a model worse than theta = 0 adds a warning;
- `sim --public FILE` with the output of `dpasync forecast` plans exactly
  as `sim --sample` on the same sample;
- the result line on stdout has psi_predicted and psi_zero."""
import json, math, os, re, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, run, tmpdir, cleanup, summary, main
import numpy as np

KEYS = ['mode', 'model', 'N', 'p', 'T', 'repeats', 'seed', 'lambda', 'theta_max', 'clip_l1',
        'freq_correction', 'eta', 'rho', 'epsilon', 'n_rows', 'f_star', 'psi_mean', 'psi_median',
        'psi_p25', 'psi_p75', 'psi', 'theta', 'theta_star', 'answers', 'epsilon_spent',
        'answers_cap', 'psi_zero', 'plan', 'warnings', 'public']
PLAN_KEYS = ['mode', 'T', 'eta', 'clip', 'answers_cap', 'share', 'psi_mean', 'psi_parts',
             'psi_zero', 'alone', 'collaborate', 'measured']

def warnings_on_stderr(p):
    return [l[len('dpasync sim: warning: '):] for l in p.stderr.splitlines()
            if l.startswith('dpasync sim: warning: ')]

def load(path):
    a = np.loadtxt(path, delimiter=',', skiprows=1, ndmin=2)
    return a[:, :-1], a[:, -1]

def test(argv):
    dp = argv[0]
    d = tmpdir('summary')
    try:
        run([dp, 'gen', '--rows', '400,600,500,800', '--features', '4', '--seed', '6', '--out', d + '/g'])
        files = [d + '/g/owner-%d.csv' % i for i in (1, 2, 3)]
        sample = d + '/g/owner-4.csv'
        base = [dp, 'sim', '--target', 'y', '--bias', '--repeats', '4', '--seed', '2']

        # Shape-only constants, finite budgets.
        out = d + '/shape'
        p = run(base + ['--epsilon', '1,2,0.5', '--out', out] + files)
        s = summary(out)
        for k in KEYS:
            check(k in s, 'summary.json has no %r' % k)
        for k in PLAN_KEYS:
            check(k in s['plan'], 'plan has no %r' % k)
        pl = s['plan']
        check((s['T'], s['eta'], s['clip_l1'], s['answers_cap']) == (pl['T'], pl['eta'], pl['clip'], pl['answers_cap']),
              'settings run differ from the plan: %s vs %s' % ((s['T'], s['eta'], s['clip_l1'], s['answers_cap']), pl))
        check(set(pl['psi_parts']) == {'optimisation', 'noise', 'clip'}, 'psi_parts %s' % pl['psi_parts'])
        check(s['public']['measured'] is False and 'shape' in s['public']['source'], 'public %s' % s['public'])
        check(any('no public sample' in w for w in s['warnings']), 'warnings %s' % s['warnings'])
        check(warnings_on_stderr(p) == s['warnings'], 'stderr warnings %s, summary %s' % (warnings_on_stderr(p), s['warnings']))
        eps = [1.0, 2.0, 0.5]
        check(s['epsilon'] == eps, 'epsilon %s' % s['epsilon'])
        for i in range(3):
            share = math.floor(eps[i] * 1e9 / s['answers_cap'][i]) / 1e9
            want = s['answers'][i] * share
            check(abs(s['epsilon_spent'][i] - want) <= 1e-9 and s['epsilon_spent'][i] <= eps[i],
                  'owner %d: epsilon_spent %r, answers %d x %r = %r' % (i + 1, s['epsilon_spent'][i], s['answers'][i], share, want))
        # psi_zero on the owners' data: f(0) = mean(y^2) for ridge.
        y = np.concatenate([load(f)[1] for f in files])
        pz = np.mean(y ** 2) / s['f_star'] - 1
        check(abs(s['psi_zero'] - pz) <= 1e-9 * pz, 'psi_zero %r, numpy %r' % (s['psi_zero'], pz))
        m = re.search(r'psi_mean=(\S+) psi_predicted=(\S+) psi_zero=(\S+)', p.stdout)
        check(m is not None, 'result line: %r' % p.stdout)
        check(abs(float(m.group(2)) - pl['psi_mean']) <= 1e-5 * pl['psi_mean'], 'psi_predicted %s, plan %s' % (m.group(2), pl['psi_mean']))
        check(abs(float(m.group(3)) - pz) <= 1e-5 * pz, 'psi_zero %s' % m.group(3))
        print('shape-only: T %d eta %.4g clip %.4g caps %s; psi %.4g predicted %.4g psi_zero %.4g; %d warnings'
              % (s['T'], s['eta'], s['clip_l1'], s['answers_cap'], s['psi_mean'], pl['psi_mean'], s['psi_zero'], len(s['warnings'])))

        # Unlimited budgets are "inf".
        out = d + '/inf'
        run(base + ['--epsilon', 'inf', '--out', out] + files)
        s = summary(out)
        check(s['epsilon'] == ['inf'] * 3 and s['epsilon_spent'] == ['inf'] * 3,
              'epsilon %s, epsilon_spent %s' % (s['epsilon'], s['epsilon_spent']))

        # A public sample: measured constants, no shape warning; --public from
        # forecast gives the same plan.
        out = d + '/sample'
        p = run(base + ['--sample', sample, '--out', out] + files)
        s = summary(out)
        check(s['public']['measured'] is True and sample in s['public']['source'], 'public %s' % s['public'])
        check(not any('no public sample' in w for w in s['warnings']), 'warnings %s' % s['warnings'])
        check(warnings_on_stderr(p) == s['warnings'], 'stderr warnings %s' % warnings_on_stderr(p))
        rows = ','.join(str(n) for n in s['n_rows'])
        fc = run([dp, 'forecast', '--sample', sample, '--rows', rows, '--bias']).stdout
        with open(d + '/forecast.json', 'w') as f:
            f.write(fc)
        out2 = d + '/public'
        run(base + ['--public', d + '/forecast.json', '--out', out2] + files)
        s2 = summary(out2)
        check(s2['plan'] == s['plan'], '--public plan %s differs from --sample plan %s' % (s2['plan'], s['plan']))
        check(s2['psi'] == s['psi'], '--public run differs from the --sample run')
        fj = json.loads(fc)
        check(fj['settings']['T'] == s['T'] and fj['settings']['eta'] == s['eta'] and
              fj['settings']['answers_cap'] == s['answers_cap'] and fj['psi_mean'] == s['plan']['psi_mean'],
              'forecast %s differs from sim\'s plan %s' % (fj['settings'], s['plan']))
        print('sample: T %d, psi %.4g predicted %.4g; --public and forecast agree' % (s['T'], s['psi_mean'], s['plan']['psi_mean']))

        # Worse than theta = 0: targets that are nearly all noise, a small
        # budget, and a step the planner would not choose (it keeps theta
        # near 0 on such data).
        run([dp, 'gen', '--rows', '60,60', '--features', '4', '--noise', '30', '--seed', '3', '--out', d + '/n'])
        out = d + '/worse'
        p = run(base + ['--epsilon', '0.05', '--T', '200', '--eta', '2', '--out', out,
                        d + '/n/owner-1.csv', d + '/n/owner-2.csv'])
        s = summary(out)
        check(s['psi_mean'] >= s['psi_zero'], 'test design: psi %.4g below psi_zero %.4g' % (s['psi_mean'], s['psi_zero']))
        worse = [w for w in s['warnings'] if 'worse than theta = 0' in w]
        check(len(worse) == 1, 'warnings %s' % s['warnings'])
        check(worse[0] in warnings_on_stderr(p), 'stderr %s' % p.stderr)
        print('worse than zero: psi %.4g >= psi_zero %.4g: %r' % (s['psi_mean'], s['psi_zero'], worse[0]))
    finally:
        cleanup(d)

main(test)
