#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance (issue 8): the measured experiments run through their
dispatcher.  `scripts/reproduce.sh --list` names defaults, forecast and
slopes, each with a one-line description (its docstring's first line);
options after OUTDIR reach the experiment, which refuses one it does not
take or a bad value with exit 2 (issue 21: async-vs-sync --repeats), and
`reproduce.sh NAME --help` prints the experiment's options; the quick versions of defaults
and slopes (REPRODUCE_QUICK=1: the dispatcher passes no flags of its own)
run through `scripts/reproduce.sh NAME OUTDIR` on the shared data with this
build's binaries and write OUTDIR/result.json with their keys; the quick
defaults run gives, on every table it covers, a private model that beats
theta = 0 or a warning that it does not (its criterion passes); slopes
writes its figure."""
import json, os, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, run, tmpdir, cleanup, main

def result(out):
    path = os.path.join(out, 'result.json')
    check(os.path.exists(path), 'no %s' % path)
    with open(path) as f:
        return json.load(f)

def has(obj, keys, what):
    missing = [k for k in keys if k not in obj]
    check(not missing, '%s lacks %s: %s' % (what, missing, sorted(obj)))

def test(argv):
    build, script = argv[0], argv[1]
    env = dict(os.environ, BUILD_DIR=build, REPRODUCE_QUICK='1')
    d = tmpdir('reproduce')
    try:
        p = run([script, '--list'])
        names = {l.split()[0]: l for l in p.stdout.splitlines() if l.strip()}
        for n in ('defaults', 'forecast', 'slopes'):
            check(n in names and len(names[n].split()) > 1,
                  '--list does not describe %r: %r' % (n, p.stdout))
        check(not any(n.startswith('_') for n in names), '--list shows a helper: %r' % p.stdout)
        check(not any(l.split(None, 1)[1].startswith('#') for l in names.values()),
              '--list shows a comment line, not the docstring: %r' % p.stdout)

        # Options after OUTDIR go to the experiment; one it does not take,
        # or a bad value, is bad usage (exit 2) before anything runs.
        bad = os.path.join(d, 'bad')
        for args, what in ((['slopes'], 'no OUTDIR'),
                           (['slopes', bad, '--repeats', '2'], 'an option slopes does not take'),
                           (['async-vs-sync', bad, '--repeats', '0'], '--repeats 0'),
                           (['async-vs-sync', bad, '--modes', 'sync3'], 'an unknown mode')):
            q = subprocess.run([script] + args, capture_output=True, text=True, env=env,
                               timeout=60)
            check(q.returncode == 2 and q.stderr.strip(),
                  '%s: exit %d, stderr %r' % (what, q.returncode, q.stderr))
            check(not os.path.exists(os.path.join(bad, 'result.json')), '%s: a result' % what)
        q = subprocess.run([script, 'async-vs-sync', '--help'], capture_output=True, text=True,
                           env=env, timeout=60)
        check(q.returncode == 0 and '--repeats' in q.stdout and '--learner-args' in q.stdout,
              'async-vs-sync --help: exit %d, %r' % (q.returncode, q.stdout[-500:]))

        for name in ('defaults', 'slopes'):
            out = os.path.join(d, name)
            q = subprocess.run([script, name, out], capture_output=True, text=True, env=env,
                               timeout=300)
            check(q.returncode == 0, '%s failed (%d): %s%s' % (name, q.returncode, q.stdout,
                                                              q.stderr))
            r = result(out)
            check(r.get('experiment') == name and r.get('quick') is True,
                  '%s: experiment %r quick %r' % (name, r.get('experiment'), r.get('quick')))
            check(isinstance(r.get('pass'), bool), '%s: pass %r' % (name, r.get('pass')))
            check(os.path.exists(os.path.join(out, name + '.md')), '%s: no %s.md' % (name, name))
            if name == 'defaults':
                has(r, ('owners', 'epsilon', 'repeats', 'tables', 'beats_zero', 'warned',
                        'seconds'), 'defaults result')
                check(len(r['tables']) >= 2, 'defaults: %d tables' % len(r['tables']))
                for t in r['tables']:
                    has(t, ('table', 'model', 'p', 'rows', 'T', 'answers_cap', 'psi_mean',
                            'psi_zero', 'psi_predicted', 'warnings', 'beats_zero',
                            'warned_zero', 'verdict'), 'defaults table')
                    check(t['beats_zero'] or t['warned_zero'],
                          '%s: mean psi %.4g >= psi_zero %.4g and no warning: %s'
                          % (t['table'], t['psi_mean'], t['psi_zero'], t['warnings']))
                    check(t['beats_zero'] == (t['psi_mean'] < t['psi_zero']),
                          '%s: beats_zero %s' % (t['table'], t['beats_zero']))
                    print('defaults %s: psi %.4g, psi_zero %.4g: %s'
                          % (t['table'], t['psi_mean'], t['psi_zero'], t['verdict']))
                check(r['pass'] is True, 'defaults: criterion failed')
            else:
                has(r, ('settings', 'by_epsilon', 'by_rows', 'slope_epsilon', 'slope_rows',
                        'target', 'tolerance', 'figure', 'seconds'), 'slopes result')
                for c in r['by_epsilon'] + r['by_rows']:
                    has(c, ('n_i', 'epsilon', 'psi_mean', 'psi_noise_free', 'noise_part',
                            'noise_part_se', 'noise_dominates'), 'slopes cell')
                check(r['figure'] is not None and os.path.exists(os.path.join(out, r['figure'])),
                      'slopes: no figure %r' % r['figure'])
                print('slopes (quick): %.2f against eps, %.2f against n_i'
                      % (r['slope_epsilon'], r['slope_rows']))
    finally:
        cleanup(d)

main(test)
