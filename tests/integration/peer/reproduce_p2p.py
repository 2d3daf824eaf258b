#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The peer-mode experiments through their dispatcher (docs/p2p.md
§5 "Reproduction"): `scripts/reproduce.sh --list` names p2p-synthetic and
p2p-movielens; their quick versions (REPRODUCE_QUICK=1: 20 agents and one
setting each; 40 MovieLens users) run on the shared data with this build's
binaries and write OUTDIR/result.json with every key the issue names, with
accuracies in [0, 1] and RMSEs finite and positive, plus the table and the
figure.  A smoke test: the quick sizes say nothing about who wins.

usage: reproduce_p2p.py BUILD_DIR scripts/reproduce.sh
"""
import json, math, os, shutil, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, run, tmpdir, cleanup, main


def test(argv):
    build, script = argv[0], argv[1]
    env = dict(os.environ, BUILD_DIR=build, REPRODUCE_QUICK='1')
    d = tmpdir('reproduce-p2p')
    try:
        listed = run([script, '--list']).stdout
        for n in ('p2p-synthetic', 'p2p-movielens'):
            check(any(l.split()[0] == n and len(l.split()) > 1 for l in listed.splitlines()),
                  '--list does not describe %s: %r' % (n, listed))
        keys = {'p2p-synthetic': ('local_accuracy', 'cd_accuracy', 'private_accuracy',
                                  ('0.15', '0.5', '1')),
                'p2p-movielens': ('local_rmse', 'cd_rmse', 'private_rmse', ('1', '0.5', '0.1'))}
        for name, (loc, cd, priv, eps) in keys.items():
            out = os.path.join(d, name)
            q = subprocess.run([script, name, out], capture_output=True, text=True, env=env,
                               timeout=300)
            check(q.returncode == 0, '%s failed (%d): %s%s' % (name, q.returncode, q.stdout,
                                                              q.stderr))
            with open(os.path.join(out, 'result.json')) as f:
                r = json.load(f)
            check(r.get('experiment') == name and r.get('quick') is True, '%s: %r' % (name, r))
            vals = [r[loc], r[cd]] + [r[priv][e] for e in eps]
            if name == 'p2p-movielens':
                vals.append(r['local_untuned_rmse'])
                check(all(math.isfinite(v) and v > 0 for v in vals), 'rmse %r' % vals)
            else:
                check(all(0 <= v <= 1 for v in vals), 'accuracies %r' % vals)
            check(sorted(r[priv]) == sorted(eps), '%s: %s keys %r' % (name, priv, r[priv]))
            # the served rows (docs/p2p.md §7), at both deltas, keyed by eps
            # (synthetic: by p, then eps)
            served = 'served_rmse' if name == 'p2p-movielens' else 'served_accuracy'
            for suf in ('', '_delta_1e-5'):
                sv = r[served + suf]
                if name == 'p2p-synthetic':
                    check(sorted(sv) == ['10'], '%s: %s keys %r' % (name, served + suf, sv))
                    sv = sv['10']
                check(sorted(sv) == sorted(eps), '%s: %s keys %r' % (name, served + suf, sv))
                vals += list(sv.values())
                check(all(math.isfinite(v) and v > 0 for v in sv.values()), 'served %r' % sv)
            check(os.path.exists(os.path.join(out, name + '.md')), '%s: no table' % name)
            if shutil.which('gnuplot'):
                check(os.path.exists(os.path.join(out, name + '.png')), '%s: no figure' % name)
            print('%s (quick): %s' % (name, ' '.join('%.3f' % v for v in vals)))
    finally:
        cleanup(d)


main(test)
