#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`dpasync sim` says how many repeats ended worse than theta = 0, and
whether the model it wrote (the first repeat's) is one of them (issue 22,
finding 10; docs/cli.md "dpasync sim").

On 3 owners of `dpasync gen` (80 rows each, 4 features, seed 3), ridge
with a bias, 10 repeats at epsilon = 0.5:
- seed 3: the mean psi is below psi_zero (so the warning on the mean says
  nothing), yet some repeats end at or above psi_zero, the first among
  them: sim must count them on its result line (worse_than_zero=K/10), in
  summary.json ("repeats_worse_than_zero", "model_psi",
  "model_worse_than_zero") and in a warning (stderr and "warnings") that
  says the model written is one of them;
- seed 1: some repeats are worse, the first is not: the warning counts
  them and says the model written is not one of them;
- epsilon = 1: no repeat is worse: no such warning, a count of 0.
The expected counts come from the per-repeat psi of summary.json ("psi",
in repeat order) against psi_zero, and the model's psi is computed here
with numpy from model.json and the owners' files (f = mean squared error
+ lambda |theta|^2, psi = f / f* - 1), so the flag does not rest on sim's
own arithmetic.  The code before printed none of this: on seed 3 it wrote
a model worse than theta = 0 without a word."""
import json, os, re, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, run, tmpdir, cleanup, summary, main, load_xy
import numpy as np

R = 10


def warnings_on_stderr(p):
    return [l[len('dpasync sim: warning: '):] for l in p.stderr.splitlines()
            if l.startswith('dpasync sim: warning: ')]


def model_psi(out, files, lam, f_star):
    theta = np.array(json.load(open(os.path.join(out, 'model.json')))['theta'])
    X = np.vstack([load_xy(f, 'y', True)[0] for f in files])
    y = np.concatenate([load_xy(f, 'y', True)[1] for f in files])
    f = np.mean((y - X @ theta) ** 2) + lam * theta @ theta
    return f / f_star - 1


def one(dp, d, files, eps, seed, want_any, want_first):
    out = os.path.join(d, 'eps%s-seed%d' % (eps, seed))
    p = run([dp, 'sim', '--target', 'y', '--bias', '--repeats', R, '--seed', seed, '--epsilon', eps,
             '--out', out] + files)
    s = summary(out)
    pz, psi = s['psi_zero'], s['psi']
    worse = sum(v >= pz for v in psi)
    mpsi = model_psi(out, files, s['lambda'], s['f_star'])
    check(abs(mpsi - psi[0]) <= 1e-6 * abs(psi[0]),
          'psi of model.json %r (numpy) is not the first repeat\'s %r' % (mpsi, psi[0]))
    first = bool(mpsi >= pz)
    check(first == want_first and (worse > 0) == want_any,
          'the seeded case changed: %d of %d worse, first %s (want %s): pick another seed'
          % (worse, R, first, want_first))
    m = re.search(r'worse_than_zero=(\d+)/(\d+)', p.stdout)
    check(m is not None and (int(m.group(1)), int(m.group(2))) == (worse, R),
          'result line: want worse_than_zero=%d/%d, got %r' % (worse, R, p.stdout))
    for k in ('repeats_worse_than_zero', 'model_psi', 'model_worse_than_zero'):
        check(k in s, 'summary.json has no %r' % k)
    check(s['repeats_worse_than_zero'] == worse, 'summary count %r, want %d'
          % (s['repeats_worse_than_zero'], worse))
    check(abs(s['model_psi'] - mpsi) <= 1e-6 * abs(mpsi), 'summary model_psi %r, numpy %r'
          % (s['model_psi'], mpsi))
    check(s['model_worse_than_zero'] is first, 'summary model_worse_than_zero %r, want %r'
          % (s['model_worse_than_zero'], first))
    warn = warnings_on_stderr(p)
    check(warn == s['warnings'], 'stderr warnings %s, summary %s' % (warn, s['warnings']))
    counted = [w for w in warn if '%d of %d repeats' % (worse, R) in w]
    if worse == 0:
        check(not [w for w in warn if 'repeats' in w and 'theta = 0' in w],
              'a warning about repeats worse than theta = 0 when none is: %s' % warn)
    else:
        check(len(counted) == 1, 'no warning counting %d of %d repeats: %s' % (worse, R, warn))
        says = 'is one of them' if first else 'is not one of them'
        check(says in counted[0] and 'model.json' in counted[0],
              'the warning does not say the model written %s: %r' % (says, counted[0]))
    print('epsilon %s seed %d: mean psi %.4g, psi_zero %.4g, %d of %d repeats worse, model.json '
          'psi %.4g (%s)%s' % (eps, seed, s['psi_mean'], pz, worse, R, mpsi,
                               'worse' if first else 'better',
                               ': ' + counted[0] if counted else ''))
    return s


def test(argv):
    dp = argv[0]
    d = tmpdir('sim-worse')
    try:
        run([dp, 'gen', '--rows', '80,80,80', '--features', '4', '--seed', '3', '--out', d + '/g'])
        files = [d + '/g/owner-%d.csv' % i for i in (1, 2, 3)]
        s = one(dp, d, files, '0.5', 3, True, True)
        check(s['psi_mean'] < s['psi_zero'], 'seed 3: the mean is not below psi_zero (the case '
              'where only the new count warns)')
        one(dp, d, files, '0.5', 1, True, False)
        one(dp, d, files, '1', 1, False, False)
    finally:
        cleanup(d)


if __name__ == '__main__':
    main(test)
