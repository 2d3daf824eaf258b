#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance: bad input exits non-zero with exactly one clear stderr line
naming the problem, for every subcommand that reads user input.

One spelling (issue 10 §6): --rate and --answers-margin are the documented
flags of sim and forecast, --rates and --margin their documented aliases
(--help lists both); sim --t and --T both work; `gen` refuses to replace
owner files without --force and replaces them with it;
deploy/local-cluster.sh refuses a missing or bad value with one line and
exit 2 within 5 s, before any dependency check or build (no build-release
directory appears), and its --help documents --bindir and the pass-through
flags."""
import json, os, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, run, tmpdir, cleanup, main

def expect_error(cmd, must_contain, code=2):
    p = run(cmd, ok=False)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    check(p.returncode != 0, 'expected failure, exit 0: %s' % ' '.join(cmd))
    check(p.returncode == code, 'exit %d, expected %d: %s\n%s' % (p.returncode, code, ' '.join(cmd), p.stderr))
    check(len(lines) == 1, 'expected one stderr line, got %d: %s\n%s' % (len(lines), ' '.join(cmd), p.stderr))
    for s in must_contain:
        check(s in lines[0], 'stderr %r does not mention %r' % (lines[0], s))
    print('ok:', lines[0])

def test(argv):
    dp = argv[0]
    d = tmpdir('cli')
    try:
        run([dp, 'gen', '--rows', '50,60', '--features', '3', '--out', os.path.join(d, 'g')])
        run([dp, 'gen', '--rows', '50', '--features', '4', '--out', os.path.join(d, 'g4')])
        o1, o2 = os.path.join(d, 'g', 'owner-1.csv'), os.path.join(d, 'g', 'owner-2.csv')
        o4 = os.path.join(d, 'g4', 'owner-1.csv')
        bad = os.path.join(d, 'bad.csv')
        with open(bad, 'w') as f:
            f.write('x1,x2,x3,y\n1,2,3,4\n1,2,oops,4\n')
        ragged = os.path.join(d, 'ragged.csv')
        with open(ragged, 'w') as f:
            f.write('x1,x2,x3,y\n1,2,3,4\n1,2,3\n')
        out = os.path.join(d, 'out')
        sim = [dp, 'sim', '--target', 'y', '--T', '10', '--repeats', '1', '--out', out]
        expect_error(sim + [bad, o1], ['bad.csv:3', 'x3'])
        expect_error(sim + [ragged], ['ragged.csv:3'])
        expect_error(sim + ['--target', 'price', o1], ['price'])
        expect_error(sim + ['--epsilon', '0', o1], ['--epsilon'])
        expect_error(sim + ['--epsilon', '-1', o1], ['--epsilon'])
        expect_error(sim + ['--epsilon', 'abc', o1], ['--epsilon'])
        expect_error(sim + [o1, o4], ['owner-1.csv'])
        expect_error(sim + ['--schema', os.path.join(d, 'nope.json'), o1], ['nope.json'])
        notjson = os.path.join(d, 'schema.json')
        with open(notjson, 'w') as f:
            f.write('{"version": 1, "features": [ {"name": "x1", "kind": "weird"} ]')
        expect_error(sim + ['--schema', notjson, o1], ['schema.json'])
        expect_error(sim + ['--epsilon', '1,2,3', o1, o2], ['--epsilon'])
        expect_error(sim + ['--model', 'tree', o1], ['tree'])
        expect_error(sim + ['--model', 'logistic', o1], ['owner-1.csv'])  # y not in {-1,+1}
        expect_error(sim + ['--T', '1', o1], ['--T'])
        expect_error(sim + ['--bogus', o1], ['bad usage'])
        expect_error(sim + [os.path.join(d, 'missing.csv')], ['missing.csv'])
        expect_error([dp, 'sim', o1], ['--out'])
        expect_error(sim + ['--sample', o1, '--public', o1, o1], ['--sample', '--public'])
        expect_error(sim + ['--mode', 'sync1', '--eta', '1', o1], ['--eta'])
        expect_error(sim + ['--c', '1', o1], ['--c'])
        expect_error(sim + ['--answers-cap', '3,4,5', o1, o2], ['--answers-cap'])
        expect_error(sim + ['--answers-cap', '0', o1], ['--answers-cap'])
        expect_error(sim + ['--margin', '-1', o1], ['--margin'])
        expect_error(sim + ['--sample', o4, o1], ['owner-1.csv'])         # 4 features, owners 3
        expect_error(sim + ['--sample', os.path.join(d, 'nosample.csv'), o1], ['nosample.csv'])
        expect_error(sim + ['--public', notjson, o1], ['schema.json'])
        pub = os.path.join(d, 'public.json')
        with open(pub, 'w') as f:
            f.write(run([dp, 'forecast', '--sample', o4, '--rows', '50']).stdout)
        expect_error(sim + ['--public', pub, o1], ['public.json', 'p = '])
        expect_error(sim + ['--mode', 'sync1', '--answers-cap', '5', o1], ['bad usage', 'T-1 = 9'])
        fc = [dp, 'forecast', '--sample', o1]
        expect_error([dp, 'forecast', '--rows', '10'], ['--sample'])
        expect_error(fc, ['--rows'])
        expect_error(fc + ['--rows', '10,0'], ['--rows', 'owner 2'])
        expect_error(fc + ['--rows', 'x'], ['--rows'])
        expect_error(fc + ['--rows', '10,20', '--epsilon', '1,2,3'], ['--epsilon'])
        expect_error(fc + ['--rows', '10', '--epsilon', '0'], ['--epsilon'])
        expect_error(fc + ['--rows', '10,20', '--rates', '1,2,3'], ['--rate'])
        expect_error(fc + ['--rows', '10,20', '--answers-cap', '1,2,3'], ['--answers-cap'])
        expect_error(fc + ['--rows', '10', '--T', '1'], ['--T'])
        expect_error(fc + ['--rows', '10', '--mode', 'sync3'], ['sync3'])
        expect_error(fc + ['--rows', '10', '--task', 'ranking'], ['ranking'])
        expect_error(fc + ['--rows', '10', '--model', 'logistic'], ['owner-1.csv'])
        expect_error(fc + ['--rows', '10', '--target', 'price'], ['price'])
        expect_error(fc + ['--rows', '10', '--mode', 'sync2', '--T', '20', '--answers-cap', '5'], ['T-1 = 19'])
        expect_error([dp, 'forecast', '--sample', bad, '--rows', '10'], ['bad.csv:3'])
        expect_error([dp, 'forecast', '--sample', os.path.join(d, 'missing.csv'), '--rows', '10'], ['missing.csv'])
        expect_error([dp, 'forecast', '--sample', o1, '--rows', '10', o2], ['unexpected'])
        expect_error([dp, 'gen', '--rows', '10,0', '--out', d], ['owner 2'])
        expect_error([dp, 'gen', '--rows', 'x', '--out', d], ['--rows'])
        expect_error([dp, 'eval', os.path.join(d, 'nomodel.json'), o1], ['nomodel.json'])
        expect_error([dp, 'nosuch'], ['nosuch'])
        check_no_guess(dp, d, o1, o2)
        check_spelling(dp, d, o1, o2)
        check_local_cluster()
        check_local_cluster_run(dp, d)
        for sub in ('gen', 'prep', 'sim', 'forecast', 'eval', 'ledger'):
            p = run([dp, sub, '--help'])
            check(p.stdout.startswith('usage: dpasync ' + sub), '%s --help: %r' % (sub, p.stdout[:60]))
        check(run([dp, '--version']).stdout.startswith('dpasync '), '--version')
    finally:
        cleanup(d)

def check_no_guess(dp, d, o1, o2):
    """No tool guesses the target (docs/reliability.md §7.2, finding 8):
    without --target or --schema, and with a model file that names none,
    sim, sim --mode p2p, eval and report refuse with one line naming
    --target, exit 2, although the data have a column y."""
    out = os.path.join(d, 'noguess')
    expect_error([dp, 'sim', '--T', '10', '--repeats', '1', '--out', out, o1], ['--target'])
    graph = os.path.join(d, 'noguess-graph.csv')
    with open(graph, 'w') as f:
        f.write('a,b,w\nowner-1,owner-2,1\n')
    expect_error([dp, 'sim', '--mode', 'p2p', '--graph', graph, '--out', out, o1, o2], ['--target'])
    run([dp, 'sim', '--target', 'y', '--T', '10', '--repeats', '1', '--out', out, o1])
    mpath = os.path.join(out, 'model.json')
    m = json.load(open(mpath))
    check(m.get('target') == 'y', 'sim --target y wrote target %r' % m.get('target'))
    del m['target']   # as learnerd wrote it before a schema summary, or a fake owner's job
    m.pop('features', None)
    with open(mpath, 'w') as f:
        json.dump(m, f)
    expect_error([dp, 'eval', mpath, o1], ['model.json', '--target'])
    check(run([dp, 'eval', '--target', 'y', mpath, o1]).returncode == 0, 'eval --target y')
    with open(os.path.join(out, 'trace.csv'), 'w') as f:
        f.write('k,time_unix,owner,wait_s,rtt_s,eps_spent\n'
                '1,1000.0,owner-1,0,0.01,0.1\n2,1000.5,owner-1,0,0.01,0.2\n')
    expect_error([dp, 'report', '--data', o1, out], ['model.json', '--target'])

def check_spelling(dp, d, o1, o2):
    """One spelling per concept, the old ones as documented aliases."""
    outs = []
    for flags in (['--rate', '2,1', '--answers-margin', '0.2', '--T', '30'],
                  ['--rates', '2,1', '--margin', '0.2', '--t', '30']):
        out = os.path.join(d, 'spell-%d' % len(outs))
        run([dp, 'sim', '--target', 'y', '--repeats', '1', '--out', out] + flags + [o1, o2])
        outs.append(open(os.path.join(out, 'schedule.txt')).read())
    check(outs[0] == outs[1], 'sim: --rate/--rates or --answers-margin/--margin differ')
    for sub in ('sim', 'forecast'):
        h = run([dp, sub, '--help']).stdout
        for both in ('--rate, --rates', '--answers-margin, --margin', '--t, --T'):
            check(both in h, '%s --help does not list %r' % (sub, both))
    print('ok: sim and forecast take --rate/--rates, --answers-margin/--margin, --t/--T')
    # gen: no silent overwrite.
    g = os.path.join(d, 'g')
    before = open(o1).read()
    expect_error([dp, 'gen', '--rows', '10,10', '--seed', '9', '--out', g], ['owner-1.csv exists', '--force'])
    check(open(o1).read() == before, 'a refused gen changed owner-1.csv')
    g2 = os.path.join(d, 'g-force')
    run([dp, 'gen', '--rows', '10', '--out', g2])
    run([dp, 'gen', '--rows', '12', '--force', '--out', g2])
    check(len(open(os.path.join(g2, 'owner-1.csv')).read().splitlines()) == 13, 'gen --force did not replace')

def check_local_cluster_run(dp, d):
    """A short run of the Quick start's cluster (the binaries of this build):
    its summary repeats the learner's plan warnings, here that collaborating
    does not pay for the 3 owners of 400 rows, beside psi and psi_zero."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..')
    bindir = os.path.dirname(os.path.dirname(os.path.abspath(dp)))
    work = os.path.join(d, 'cluster')
    p = subprocess.run(['bash', os.path.join(root, 'deploy', 'local-cluster.sh'), '--bindir', bindir,
                        '--owners', '3', '--T', '60', '--rows', '400', '--work', work],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, 'local-cluster.sh run: exit %d\n%s%s' % (p.returncode, p.stdout[-2000:],
                                                                  p.stderr[-2000:]))
    warned = [l for l in p.stdout.splitlines() if l.startswith('plan warning: ')]
    logged = [l for l in open(os.path.join(work, 'learnerd.log')) if ' warn learner: plan: ' in l]
    check(len(warned) == len(logged) >= 1 and
          any('collaborating is predicted not to pay for 3 of 3 owners' in l for l in warned) and
          'psi of theta = 0: ' in p.stdout,
          'the summary does not repeat the plan warnings %r:\n%s' % (logged, p.stdout))
    print('ok: local-cluster.sh summary repeats the %d plan warning(s)' % len(warned))

def check_local_cluster():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..')
    script = os.path.join(root, 'deploy', 'local-cluster.sh')
    had_build = os.path.exists(os.path.join(root, 'build-release'))
    for args, word in ((['--owners'], '--owners'), (['--owners', 'x'], '--owners'),
                       (['--rate', 'fast'], '--rate'), (['--rate', '0'], '--rate'),
                       (['--T', '-5'], '--T'), (['--rows', '1e3'], '--rows'),
                       (['--epsilon', 'lots'], '--epsilon'), (['--mode', 'fast'], '--mode'),
                       (['--bindir', '/nonexistent/dir'], '--bindir'), (['--bogus'], '--bogus'),
                       (['--owners', '2', '--learnerd-args'], '--learnerd-args')):
        t0 = time.monotonic()
        p = subprocess.run(['bash', script] + args, capture_output=True, text=True, timeout=60)
        secs = time.monotonic() - t0
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        check(p.returncode == 2 and len(lines) == 1 and word in lines[0],
              'local-cluster.sh %s: exit %d, stderr %r' % (' '.join(args), p.returncode, p.stderr))
        # Generous: the refusal comes before deps.sh and the build, which take minutes.
        check(secs < 5, 'local-cluster.sh %s took %.1f s' % (' '.join(args), secs))
    check(had_build or not os.path.exists(os.path.join(root, 'build-release')),
          'a refused local-cluster.sh started a build')
    h = subprocess.run(['bash', script, '--help'], capture_output=True, text=True, timeout=60).stdout
    for w in ('--bindir', '--learnerd-args', '--ownerd-args', '--out'):
        check(w in h, 'local-cluster.sh --help does not document %s' % w)
    check('set -e' not in h and h.strip().endswith('before anything is built.'),
          'local-cluster.sh --help ends with %r' % h.strip()[-60:])
    print('ok: local-cluster.sh: 11 bad usages exit 2 with one line before building; --help complete')

main(test)
