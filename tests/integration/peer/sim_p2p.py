#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""dpasync sim --mode p2p (docs/p2p.md).

1. Parity at eps = inf: following a schedule, every agent's final model
   equals an independent numpy reference of docs/design.md §6
   (ref_p2p.py) to 1e-10, for logistic (with clipping active, a bias
   column and an isolated agent) and linear models.  The simulator sums on
   a 2^-40 lattice, so 1e-10 is about a hundred lattice steps; a wrong
   weight, step or sign moves the models by more than 1e-3.
2. Determinism: a seed fixes the drawn run, noise included; its
   schedule.csv replayed with --schedule gives the same models byte for
   byte; another seed does not.
3. Bad input: one line on stderr and exit 2.
4. Served models (--serve refit, docs/p2p.md §7) at eps = inf equal an
   independent numpy reference (ref_serve.py) to 1e-10, with the same tau
   for every agent: one-shot releases (linear with a bias, the prior over
   all agents with public curvature rows and a fitted length, tau fixed
   at 5; logistic
   with clipping, the graph prior) and exchanged models (logistic, the
   parity run's schedule); some agents choose tau > 0 and some tau = 0.

usage: sim_p2p.py DPASYNC
"""
import json, os, random, sys
import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, run, tmpdir, cleanup, main

HERE = os.path.dirname(os.path.abspath(__file__))


def write_agents(d, sizes, model, p, seed):
    rng = np.random.default_rng(seed)
    files = []
    for k, m in enumerate(sizes):
        X = rng.uniform(-1, 1, size=(m, p))
        w = rng.normal(size=p)
        if model == 'logistic':
            y = np.where(X @ w + 0.2 * rng.normal(size=m) > 0, 1, -1)
        else:
            y = X @ w + 0.1 * rng.normal(size=m)
        os.makedirs(os.path.join(d, model), exist_ok=True)
        path = os.path.join(d, model, 'ag%d.csv' % k)
        with open(path, 'w') as f:
            f.write(','.join('x%d' % q for q in range(p)) + ',y\n')
            for r in range(m):
                f.write(','.join(repr(float(v)) for v in X[r]) + ',' + repr(float(y[r])) + '\n')
        files.append(path)
    return files


def models(d, ids):
    out = {}
    for i in ids:
        with open(os.path.join(d, 'agents', i + '.json')) as f:
            out[i] = json.load(f)['theta']
    return out


def parity(dpasync, d, model, flags, sizes):
    files = write_agents(d, sizes, model, 3, 11 if model == 'logistic' else 12)
    ids = ['ag%d' % k for k in range(len(sizes))]
    graph = os.path.join(d, 'graph.csv')
    with open(graph, 'w') as f:   # ag5 (when there) is alone
        f.write('a,b,w\nag0,ag1,1\nag1,ag2,0.25\nag2,ag0,2.5\nag3,ag1,0.7\nag4,ag3,1e-2\n')
    rnd = random.Random(3)
    sched = os.path.join(d, 'sched.csv')
    with open(sched, 'w') as f:
        f.write('step,agent\n')
        for k in range(40):
            f.write('%d,%s\n' % (k + 1, rnd.choice(ids)))
    out = os.path.join(d, 'sim-' + model)
    run([dpasync, 'sim', '--target', 'y', '--mode', 'p2p', '--model', model, '--graph', graph,
         '--schedule', sched, '--epsilon', 'inf', '--out', out] + flags + files)
    ref = os.path.join(d, 'ref-%s.json' % model)
    rflags = [f for f in flags if f == '--bias']
    pairs = [f for f in flags if f != '--bias']
    vals = dict(zip(pairs[::2], pairs[1::2]))
    gauss = vals.get('--mechanism') == 'gaussian'
    p = run(['/usr/bin/python3', os.path.join(HERE, 'ref_p2p.py'), '--model', model,
             '--mu', vals['--mu'], '--clip', vals['--clip'], '--x2max', vals['--x2max'],
             '--norm', 'l2' if gauss else 'l1',
             '--graph', graph, '--schedule', sched, '--out', ref] + rflags + files)
    clipped = int(p.stdout.split()[1])
    with open(ref) as f:
        want = json.load(f)
    got = models(out, ids)
    err = max(abs(a - b) for i in ids for a, b in zip(got[i], want[i]))
    moved = max(abs(v) for i in ids for v in got[i])
    print('%s%s: max |sim - ref| = %.3g over %d agents (largest |theta| %.3g), %d clipped '
          'gradients' % (model, ' gaussian' if gauss else '', err, len(ids), moved, clipped))
    if gauss:   # the L2 clip must bite, or the L2 path is not tested
        check(clipped > 0, 'gaussian: no gradient was clipped in L2')
    check(err <= 1e-10, '%s: sim and reference differ by %g' % (model, err))
    check(moved > 0.05, '%s: the models barely moved (%g): the test proves nothing' %
          (model, moved))
    return files, graph, ids


def determinism(dpasync, d, files, graph, ids):
    base = ['sim', '--target', 'y', '--mode', 'p2p', '--model', 'logistic', '--bias', '--graph', graph,
            '--epsilon', '0.5', '--wakeups', '4']
    runs = {}
    for name, extra in [('a', ['--seed', '5']), ('b', ['--seed', '5']), ('c', ['--seed', '6'])]:
        runs[name] = os.path.join(d, 'det-' + name)
        run([dpasync] + base + extra + ['--out', runs[name]] + files)
    runs['r'] = os.path.join(d, 'det-r')
    run([dpasync] + base + ['--seed', '5', '--schedule', os.path.join(runs['a'], 'schedule.csv'),
                            '--out', runs['r']] + files)

    def raw(name):
        out = {}
        for i in ids:
            with open(os.path.join(runs[name], 'agents', i + '.json'), 'rb') as f:
                out[i] = f.read()
        with open(os.path.join(runs[name], 'schedule.csv'), 'rb') as f:
            out['schedule'] = f.read()
        return out
    a, b, c, r = raw('a'), raw('b'), raw('c'), raw('r')
    check(a == b, 'the same seed gave different runs')
    check(a == r, 'replaying schedule.csv with the same seed gave different models')
    check(a != c, 'another seed gave the same run')
    s = json.load(open(os.path.join(runs['a'], 'summary.json')))
    check(s['steps'] == 4 * len(ids), 'steps %s, expected %d' % (s['steps'], 4 * len(ids)))
    check(all(x['wakeups'] == 4 and x['epsilon_per_wakeup'] == 0.125 for x in s['agents']),
          'every agent wakes 4 times at eps/4: %s' % s['agents'])
    print('determinism: same seed identical, schedule replay identical, other seed differs')


def gaussian(dpasync, d, files, graph, ids):
    """Gaussian answers (docs/peer-agents.md "Privacy"): at eps = inf the L2
    clip against the reference (parity above); with noise and a warm start
    a seeded run is reproducible, differs from Laplace, and every agent's
    shares fit its rho cap."""
    parity(dpasync, d, 'logistic', ['--bias', '--mu', '0.7', '--clip', '0.3', '--x2max', '4',
                                    '--mechanism', 'gaussian', '--delta', '1e-6'],
           [5, 12, 30, 8, 20, 9])
    base = [dpasync, 'sim', '--mode', 'p2p', '--target', 'y', '--model', 'logistic', '--bias',
            '--graph', graph, '--epsilon', '1', '--delta', '1e-6', '--wakeups', '6',
            '--warm-start', '0.25', '--warm-steps', '2', '--seed', '5']
    outs = []
    for k, extra in enumerate((['--mechanism', 'gaussian'], ['--mechanism', 'gaussian'], [])):
        out = os.path.join(d, 'gauss-%d' % k)
        run(base + extra + ['--out', out] + files)
        outs.append(out)
    a, b, lap = (models(o, ids) for o in outs)
    check(a == b, 'gaussian: the same seed gave different models')
    check(a != lap, 'gaussian: the same models as laplace')
    with open(os.path.join(outs[0], 'summary.json')) as f:
        s = json.load(f)
    check(s['mechanism'] == 'gaussian' and s['clip_l2'] == 1, 'gaussian summary: %r' % s)
    for ag in s['agents']:
        rt, rw = ag['rho_per_wakeup'], ag['rho_per_warm_step']
        # warm 0.25 of eps 1: the warm start's 2 steps get a quarter of the
        # cap, the 6 wake-ups the rest (a nano-rho of rounding each)
        check(abs(2 * rw / (2 * rw + 6 * rt) - 0.25) < 1e-6 and rt > 0,
              'gaussian shares %r' % ag)
    print('gaussian: seeded runs agree, differ from laplace; rho per wake-up %.6g, per warm '
          'step %.6g' % (rt, rw))


def served(dpasync, d, lin_files, log_files, graph, ids):
    curv = os.path.join(d, 'public.csv')
    rng = np.random.default_rng(4)
    with open(curv, 'w') as f:
        f.write('x0,x1,x2,y\n')
        for r in rng.uniform(-1, 1, size=(40, 3)):
            f.write(','.join(repr(float(v)) for v in r) + ',0\n')
    sched = os.path.join(d, 'sched.csv')
    cases = [
        ('linear', lin_files, ['--bias', '--release', 'grad0', '--prior', 'all', '--curvature',
                               curv, '--clip', '3', '--tau', '5'], ['--scale', '--taus', '5']),
        ('logistic', log_files, ['--release', 'grad0', '--clip', '0.8', '--prior-scale',
                                 'none'], []),
        ('logistic', log_files, ['--bias', '--schedule', sched, '--mu', '0.7', '--clip', '0.8',
                                 '--x2max', '4', '--tau', '0,0.5,2,8', '--folds', '3'],
         ['--scale', '--taus', '0,0.5,2,8', '--folds', '3']),
    ]
    taus = []
    for k, (model, files, flags, rflags) in enumerate(cases):
        out = os.path.join(d, 'serve-%d' % k)
        agent_ids = [os.path.basename(f)[:-4] for f in files]
        run([dpasync, 'sim', '--mode', 'p2p', '--target', 'y', '--model', model, '--graph',
             graph, '--epsilon', 'inf', '--serve', 'refit', '--out', out] + flags + files)
        vals = dict(zip(flags[::2], flags[1::2])) if '--bias' not in flags else \
            dict(zip(flags[1::2], flags[2::2]))
        ref = os.path.join(d, 'ref-serve-%d.json' % k)
        release = vals.get('--release', 'models')
        run(['/usr/bin/python3', os.path.join(HERE, 'ref_serve.py'), '--model', model,
             '--release', release, '--agents', os.path.join(out, 'agents'),
             '--prior', vals.get('--prior', 'graph'), '--clip', vals['--clip'],
             '--graph', graph, '--out', ref] +
            (['--taus', '0,1,3,10,30,100,300,1000'] if '--taus' not in rflags else []) +
            (['--curvature', curv] if '--curvature' in vals else []) +
            (['--bias'] if '--bias' in flags else []) + rflags + files)
        with open(ref) as f:
            want = json.load(f)
        got = {}
        for i in agent_ids:
            with open(os.path.join(out, 'served', i + '.json')) as f:
                got[i] = json.load(f)
            check(got[i]['served'] is True and got[i]['private'] is False and
                  got[i]['mode'] == 'served' and got[i]['fitted_from']['release'] == release,
                  'served file %s: %r' % (i, got[i]))
            check(got[i]['fitted_from']['tau'] == want[i]['tau'],
                  'case %d agent %s: tau %s, reference %s' % (k, i, got[i]['fitted_from']['tau'],
                                                             want[i]['tau']))
            taus.append(want[i]['tau'])
        err = max(abs(x - y) for i in agent_ids for x, y in zip(got[i]['theta'],
                                                                want[i]['theta']))
        perr = max(abs(x - y) for i in agent_ids
                   for x, y in zip(got[i]['fitted_from']['prior_theta'], want[i]['prior']))
        print('served %d (%s, %s): max |sim - ref| = %.3g, prior %.3g, taus %s' %
              (k, model, release, err, perr, [want[i]['tau'] for i in agent_ids]))
        check(err <= 1e-10 and perr <= 1e-10, 'served case %d differs by %g (prior %g)' %
              (k, err, perr))
        s = json.load(open(os.path.join(out, 'summary.json')))
        check(s['serve'] == 'refit' and all(x['tau'] == want[x['id']]['tau'] and
                                             x['releases'] == x['wakeups'] + x['warm_steps']
                                             for x in s['agents']),
              'summary: %r' % s['agents'])
        if release == 'grad0':
            check(all(x['releases'] == 1 and 'epsilon_per_release' in x for x in s['agents']),
                  'grad0: one release per agent: %r' % s['agents'])
    check(any(t > 0 for t in taus) and any(t == 0 for t in taus),
          'served: every agent chose the same kind of tau (%s): the test proves little' % taus)
    e = json.loads(run([dpasync, 'eval', '--peer', '--models',
                        os.path.join(d, 'serve-0', 'served')] + lin_files).stdout)
    check(e['agents'] == len(lin_files), 'eval --peer on served models: %r' % e)


def bad_input(dpasync, d, files, graph):
    bad_graph = os.path.join(d, 'bad-graph.csv')
    with open(bad_graph, 'w') as f:
        f.write('a,b,w\nag0,ag1,1\nag0,nobody,1\n')
    over = os.path.join(d, 'over.csv')
    with open(over, 'w') as f:
        f.write('step,agent\n1,ag0\n2,ag0\n3,ag1\n')
    cases = [
        (['--graph', bad_graph], "bad-graph.csv:3: column 'b': unknown agent id 'nobody'"),
        (['--graph', graph, '--schedule', over, '--wakeups', '1'],
         "step 2: agent 'ag0' has already woken 1 times"),
        (['--graph', graph, '--model', 'svm'], 'hinge loss is not smooth'),
        ([], '--graph FILE is required'),
        (['--graph', graph, '--lambda', '0.1', '--lambda-per-row', '2'],
         'give --lambda or --lambda-per-row, not both'),
        (['--graph', graph, '--epsilon', '1,2'], '--epsilon has 2 values'),
        (['--graph', graph, '--epsilon', '0.5', '--warm-start', '0.5'],
         "agent 'ag0': --warm-start 0.5 leaves nothing of --epsilon 0.5 for the wake-ups"),
        (['--graph', graph, '--warm-start', '0.1', '--warm-steps', '0'], '--warm-steps'),
        (['--local', '--warm-start', '0.1'], '--warm-start does not apply'),
        (['--graph', graph, '--mechanism', 'gaussian'], '--mechanism gaussian needs --delta > 0'),
        (['--local', '--serve', 'refit'], '--local and --serve exclude each other'),
        (['--graph', graph, '--serve', 'refit', '--release', 'grad0', '--wakeups', '3'],
         '--release grad0 makes one release per agent'),
        (['--graph', graph, '--serve', 'refit', '--tau', '1,2'], '--tau: a grid must include 0'),
        (['--graph', graph, '--release', 'grad0'], 'need --serve refit'),
        (['--graph', graph, '--serve', 'refit', '--curvature', graph],
         '--curvature turns released gradients into a prior: it needs --release grad0'),
    ]
    for extra, want in cases:
        p = run([dpasync, 'sim', '--mode', 'p2p', '--target', 'y', '--out', os.path.join(d, 'bad')] + extra + files,
                ok=False)
        lines = p.stderr.strip().splitlines()
        check(p.returncode == 2 and len(lines) == 1 and want in lines[0],
              'expected exit 2 and one line with %r, got %d: %r' % (want, p.returncode, p.stderr))
    print('bad input: %d cases, one line and exit 2 each' % len(cases))


def test(argv):
    dpasync = argv[0]
    d = tmpdir('sim-p2p')
    try:
        files, graph, ids = parity(dpasync, d, 'logistic',
                                   ['--bias', '--mu', '0.7', '--clip', '0.8', '--x2max', '4'],
                                   [5, 12, 30, 8, 20, 9])
        lin_files = parity(dpasync, d, 'linear', ['--mu', '2', '--clip', '3', '--x2max', '3'],
                           [7, 15, 10, 25, 6])[0]
        served(dpasync, d, lin_files, files, graph, ids)
        determinism(dpasync, d, files, graph, ids)
        gaussian(dpasync, d, files, graph, ids)
        bad_input(dpasync, d, files, graph)
    finally:
        cleanup(d)


main(test)
