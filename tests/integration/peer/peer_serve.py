# SPDX-License-Identifier: Apache-2.0
"""ownerd --peer --serve refit: served personal models from networked agents
(docs/peer-agents.md "Served models", docs/p2p.md §7).

  peer_serve.py BUILD_DIR CASE

CASE is one of
  refuse   the --serve options refused with one line and exit 2: without
           --peer, without --serve, --release grad0 with --wakeups, a tau
           grid without 0, --curvature with --release models; agents of one
           graph with different --prior or --release close the link with
           one warning and serve from what they hold at --linger;
  parity   at epsilon = inf, three quartets of agents run side by side and
           each served model (and its prior) equals `dpasync sim --mode p2p
           --serve refit`'s to 1e-12: --release models --prior graph on the
           simulator's schedule, --release models --prior all (the final
           models relayed over a path) and --release grad0 --prior all with
           --curvature (the gradients at 0 relayed);
  cluster  20 agents on a ring with chords, --release grad0 --prior all,
           Laplace and Gaussian releases: every agent completes (no linger)
           with all 20 releases pooled, each ledger holds exactly its one
           release within its budget (`dpasync ledger`), every link carried
           each release at most once in each direction, the served files
           say they are not private, and `dpasync eval --peer` scores them;
  restart  kill -9 an agent of a path after its release was charged, while
           a neighbour is not up yet: the restart charges nothing more,
           resends the saved release, and all three serve from 3 of 3;
           restarted alone once the run is over, it keeps that model.
"""
import json, os, re, shutil, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, run, tmpdir, cleanup, main
from peer_lib import (DPASYNC, OWNERD, Agent, write_peers, write_graph, setup, launch, wait_all,
                      ledger, check_gaussian, theta, ring_with_chords)


def served(root, i):
    with open(os.path.join(root, 'state-' + i, 'ledger', 'served.json')) as f:
        return json.load(f)


def case_refuse(root):
    ids = ['r1', 'r2']
    data, certs = setup(root, ids, [20, 20])
    graph = os.path.join(root, 'graph.csv')
    write_graph(graph, [('r1', 'r2', 1.0)])
    peers = os.path.join(root, 'peers.csv')
    write_peers(peers, [])
    base = ['--ca', os.path.join(certs, 'ca.crt'), '--cert', os.path.join(certs, 'r1.crt'),
            '--key', os.path.join(certs, 'r1.key'), '--data', os.path.join(data, 'r1.csv'),
            '--ledger', os.path.join(root, 'ledger')]
    peer = ['--peer', '--graph', graph, '--peers', peers]
    cases = [
        (['--learner', '127.0.0.1:1', '--serve', 'refit'], '--serve is for --peer only'),
        (peer + ['--release', 'grad0'], 'need --serve refit'),
        (peer + ['--served-out', os.path.join(root, 's.json')], 'need --serve refit'),
        (peer + ['--serve', 'refit', '--release', 'grad0', '--wakeups', 5],
         '--wakeups, --schedule and --warm-start do not apply'),
        (peer + ['--serve', 'refit', '--tau', '1,3'], 'a grid must include 0'),
        (peer + ['--serve', 'refit', '--curvature', os.path.join(data, 'r2.csv')],
         'it needs --release grad0'),
    ]
    for args, word in cases:
        p = run([OWNERD] + base + [str(a) for a in args], ok=False)
        err = p.stderr.strip().splitlines()
        check(p.returncode == 2 and len(err) == 1 and word in err[0],
              '%s: expected exit 2 and one line with %r, got %d: %r' % (args, word,
                                                                         p.returncode, err))
    check(not os.path.exists(os.path.join(root, 'ledger')), 'a refused start made a ledger')
    mixed(root)
    print('refuse: %d refusals, one line each; mixed settings close the links and each agent '
          'serves from what it holds' % len(cases))


def mixed(root):
    """Agents of one graph that disagree: on a path m1-m2-m3, m2 relays
    (--prior all) to neighbours that do not (--prior graph); on the edge
    m4-m5, m4 releases a gradient and m5 models.  The receiver closes the
    link (one warning), and each serves from what it holds (m4 and m5 at
    --linger without the other's release)."""
    d = os.path.join(root, 'mixed')
    os.makedirs(d)
    ids = ['m1', 'm2', 'm3', 'm4', 'm5']
    data, certs = setup(d, ids, [20, 25, 30, 35, 40])
    graph = os.path.join(d, 'graph.csv')
    write_graph(graph, [('m1', 'm2', 1.0), ('m2', 'm3', 1.0), ('m4', 'm5', 1.0)])
    grad0 = ['--serve', 'refit', '--release', 'grad0']
    extra = {'m1': grad0, 'm2': grad0 + ['--prior', 'all'], 'm3': grad0, 'm4': grad0,
             'm5': ['--serve', 'refit', '--release', 'models', '--wakeups', 2, '--rate', 20]}
    agents, _ = launch(d, ids, certs, graph, data,
                       lambda i: ['--epsilon', 1, '--model', 'logistic', '--linger', 3] + extra[i])
    try:
        wait_all(agents, 60)
    finally:
        for a in agents.values():
            a.kill()
    logs = {i: agents[i].logtext() for i in ids}
    check('relayed with --prior graph' in logs['m1'] + logs['m3'],
          'm1, m3 did not refuse m2\'s relays:\n%s' % (logs['m1'] + logs['m3'])[-3000:])
    check('every agent of the graph takes the same --release' in logs['m4'] + logs['m5'],
          'm4, m5 did not refuse each other\'s releases:\n%s' % (logs['m4'] + logs['m5'])[-3000:])
    for i in ids:   # each served (exit 0 checked), m4 and m5 without the other's
        f = served(d, i)['fitted_from']
        check(f['releases_pooled'] <= f['releases_expected'] and
              (i not in ('m4', 'm5') or f['releases_pooled'] < f['releases_expected']),
              '%s: served %s' % (i, f))


def largest(root, ids, sim, key='theta'):
    """Largest difference between the agents' served models (or priors)
    and the simulator's; the simulated ones must not be trivial."""
    worst = 0.0
    for i in ids:
        got, want = served(root, i), json.load(open(os.path.join(sim, 'served', i + '.json')))
        g = got[key] if key == 'theta' else got['fitted_from']['prior_theta']
        w = want[key] if key == 'theta' else want['fitted_from']['prior_theta']
        check(len(g) == len(w), '%s: p differs' % i)
        check(any(abs(v) > 1e-3 for v in w), '%s: the simulated %s is trivial' % (i, key))
        check(got['fitted_from']['tau'] == want['fitted_from']['tau'],
              '%s: tau %r, the simulator %r' % (i, got['fitted_from']['tau'],
                                                 want['fitted_from']['tau']))
        worst = max([worst] + [abs(a - b) for a, b in zip(g, w)])
    return worst


def case_parity(root):
    # three quartets: m (models, graph), a (models, all), g (grad0, all)
    groups = {k: [k + str(n) for n in range(1, 5)] for k in 'mag'}
    everyone = sum(groups.values(), [])
    rows = [25, 40, 30, 50]
    data, certs = setup(root, groups['m'], rows, features=3, seed=7, names=everyone[4:])
    for k in 'ag':
        for n in range(4):
            shutil.copy(os.path.join(data, 'm%d.csv' % (n + 1)),
                        os.path.join(data, '%s%d.csv' % (k, n + 1)))
    # a path for --prior all: m1's release reaches m4 only through relays
    edges = [(1, 2, 1.0), (2, 3, 0.5), (3, 4, 2.0)]
    graphs = {}
    for k in 'mag':
        graphs[k] = os.path.join(root, 'graph-%s.csv' % k)
        write_graph(graphs[k], [(k + str(a), k + str(b), w) for a, b, w in edges] +
                    ([('m1', 'm3', 0.25)] if k == 'm' else []))
    # public rows for the grad0 prior's Hessian: another draw of the task
    pub = os.path.join(root, 'public')
    run([DPASYNC, 'gen', '--rows', '60', '--out', pub, '--task', 'classification',
         '--features', 3, '--seed', 11])
    curv = os.path.join(pub, 'owner-1.csv')
    T = 5
    common = ['--mu', 1.5, '--clip', 1, '--lambda-per-row', 1, '--model', 'logistic']
    serve = {'m': ['--serve', 'refit', '--release', 'models', '--prior', 'graph'],
             'a': ['--serve', 'refit', '--release', 'models', '--prior', 'all'],
             'g': ['--serve', 'refit', '--release', 'grad0', '--prior', 'all',
                   '--curvature', curv]}
    sims = {k: os.path.join(root, 'sim-' + k) for k in 'mag'}
    files = lambda k: [os.path.join(data, i + '.csv') for i in groups[k]]
    run([DPASYNC, 'sim', '--target', 'y', '--mode', 'p2p', '--graph', graphs['m'], '--epsilon',
         'inf', '--wakeups', T, '--seed', 3, '--out', sims['m']] + common + serve['m'] +
        files('m'))
    schedule = {'m': os.path.join(sims['m'], 'schedule.csv'),
                'a': os.path.join(root, 'schedule-a.csv')}
    lines = open(schedule['m']).read().splitlines()
    with open(schedule['a'], 'w') as f:
        f.write('\n'.join([lines[0]] + [l.replace(',m', ',a') for l in lines[1:]]) + '\n')
    run([DPASYNC, 'sim', '--target', 'y', '--mode', 'p2p', '--graph', graphs['a'], '--epsilon',
         'inf', '--schedule', schedule['a'], '--out', sims['a']] + common + serve['a'] +
        files('a'))
    run([DPASYNC, 'sim', '--target', 'y', '--mode', 'p2p', '--graph', graphs['g'], '--epsilon',
         'inf', '--out', sims['g']] + common + serve['g'] + files('g'))
    mx = max(rows)

    def extra(i):
        k = i[0]
        e = ['--epsilon', 'inf', '--allow-no-noise',
             '--confidence', repr(rows[int(i[1:]) - 1] / mx)] + common + serve[k]
        return e + (['--schedule', schedule[k], '--wakeups', T] if k in 'ma' else [])

    agents, _ = launch(root, everyone, certs, lambda i: graphs[i[0]], data, extra)
    try:
        wait_all(agents, 60)
    finally:
        for a in agents.values():
            a.kill()
    for i in everyone:
        s = served(root, i)
        # graph: the agent and its neighbours (m3 has three); all: 4
        want = 4 if i[0] != 'm' else {'m1': 3, 'm2': 3, 'm3': 4, 'm4': 2}[i]
        check(s['served'] is True and s['private'] is False and s['mode'] == 'served' and
              s['fitted_from']['releases_pooled'] == want ==
              s['fitted_from']['releases_expected'],
              '%s: served file %r' % (i, {k: s[k] for k in s if k != 'theta'}))
        log = agents[i].logtext()
        check('NOT differentially private' in log and 'every neighbour done' in log,
              '%s: log:\n%s' % (i, log[-2000:]))
    out = []
    for k, what in (('m', 'models/graph'), ('a', 'models/all'), ('g', 'grad0/all')):
        w, wp = largest(root, groups[k], sims[k]), largest(root, groups[k], sims[k], 'prior')
        check(w <= 1e-12 and wp <= 1e-12, '%s: served models differ from the simulator by %g '
              '(priors by %g)' % (what, w, wp))
        out.append('%s %.3g (prior %.3g)' % (what, w, wp))
    # the relayed releases reached the ends of the path: a1 pools a4's
    check(served(root, 'a1')['fitted_from']['releases_pooled'] == 4, 'a1 lacks a relay')
    print('parity: largest differences ' + ', '.join(out))


RELAY = re.compile(r'link neighbour=(\S+) releases_sent=(\d+) releases_received=(\d+) '
                   r'complete=(yes|no) seen_complete=(yes|no)')


def case_cluster(root):
    n = 20
    ids, rows, data, certs, graph = ring_with_chords(root, 'sv', n)
    eps = {i: [0.5, 1.0, 2.0][k % 3] for k, i in enumerate(ids)}
    gauss = {i: k % 4 == 2 for k, i in enumerate(ids)}
    mx = max(rows)
    extra = lambda i: ['--epsilon', eps[i], '--model', 'logistic',
                       '--confidence', rows[ids.index(i)] / mx, '--serve', 'refit',
                       '--release', 'grad0', '--prior', 'all'] + \
        (['--mechanism', 'gaussian', '--delta', '1e-5'] if gauss[i] else [])
    t0 = time.time()
    agents, _ = launch(root, ids, certs, graph, data, extra)
    try:
        wait_all(agents, 120)
    finally:
        for a in agents.values():
            a.kill()
    secs = time.time() - t0
    degree, links = 4, {}
    for i in ids:
        log = agents[i].logtext()
        check('every neighbour done' in log and 'linger' not in log,
              '%s did not end with every neighbour done:\n%s' % (i, log[-3000:]))
        for nb, sent, got, comp, seen in RELAY.findall(log):
            links[(i, nb)] = (int(sent), int(got), comp == 'yes' and seen == 'yes')
        led_dir = os.path.join(root, 'state-' + i, 'ledger')
        if gauss[i]:
            check_gaussian(led_dir, eps[i], 1e-5, 1)
        else:
            led = ledger(led_dir)
            check(led['answers'] == 1 and led['answers_cap'] == 1 and
                  abs(led['epsilon_spent'] - eps[i]) < 1e-9,
                  '%s: one release of epsilon %g, but %r' % (i, eps[i], led))
        s = served(root, i)
        check(s['private'] is False and s['fitted_from']['releases_pooled'] == n and
              s['fitted_from']['mechanism'] == ('gaussian' if gauss[i] else 'laplace'),
              '%s: served %r' % (i, s['fitted_from']))
        check(os.stat(os.path.join(led_dir, 'served.json')).st_mode & 0o077 == 0,
              '%s: served.json readable by others' % i)
    check(len(links) == n * degree, '%d link lines, not %d' % (len(links), n * degree))
    # The bound (docs/peer-agents.md "Served models"): one connection per
    # link here, over which each origin's release goes at most once each
    # way and never back to where it came from: at most n - 1 per direction.
    for (a, b), (sent, got, done) in links.items():
        check(done and sent <= n - 1 and got <= n - 1 and links[(b, a)][1] == sent,
              'link %s->%s: sent %d, received %d, %s received %d' % (a, b, sent, got, b,
                                                                    links[(b, a)][1]))
    total = sum(v[0] for v in links.values())
    # eval --peer scores the served models against each agent's rows
    models = os.path.join(root, 'served')
    os.makedirs(models)
    for i in ids:
        shutil.copy(os.path.join(root, 'state-' + i, 'ledger', 'served.json'),
                    os.path.join(models, i + '.json'))
    p = run([DPASYNC, 'eval', '--peer', '--models', models] +
            [os.path.join(data, i + '.csv') for i in ids])
    ev = json.loads(p.stdout.splitlines()[-1])
    accs = [a['accuracy'] for a in ev['per_agent']]
    check(ev['agents'] == n and len(accs) == n and all(0 <= a <= 1 for a in accs),
          'eval --peer: %r' % ev)
    print('cluster: 20 agents served in %.1f s; %d releases over %d directed links (at most '
          '%d each); eval --peer mean accuracy %.3f' % (secs, total, len(links), n - 1,
                                                        sum(accs) / n))


def case_restart(root):
    ids = ['a', 'b', 'c']
    data, certs = setup(root, ids, [30, 40, 50])
    graph = os.path.join(root, 'graph.csv')
    write_graph(graph, [('a', 'b', 1.0), ('b', 'c', 1.0)])
    peers = os.path.join(root, 'peers.csv')
    write_peers(peers, [])
    extra = ['--epsilon', 1, '--model', 'logistic', '--serve', 'refit', '--release', 'grad0',
             '--prior', 'all']
    agents = {i: Agent(root, i, certs, graph, peers, os.path.join(data, i + '.csv'), extra)
              for i in ids}
    led = lambda i: os.path.join(root, 'state-' + i, 'ledger')
    try:
        for i in 'ab':
            agents[i].start()
        deadline = time.time() + 30
        ports = {i: agents[i].port(deadline) for i in 'ab'}
        write_peers(peers, sorted(ports.items()))
        while 'released' not in agents['a'].logtext() and time.time() < deadline:
            time.sleep(0.05)
        check(ledger(led('a'))['answers'] == 1, 'a: no charge before the kill')
        agents['a'].kill()   # c is not up: a cannot have served yet
        check(not os.path.exists(os.path.join(led('a'), 'served.json')), 'a served too early')
        agents['a'].start()
        agents['c'].start()
        deadline = time.time() + 30
        ports = {i: agents[i].port(deadline) for i in ids}
        write_peers(peers, sorted(ports.items()))
        wait_all(agents, 60)
    finally:
        for a in agents.values():
            a.kill()
    log = agents['a'].logtext()
    check('release restored' in log and log.count('released the noisy') == 1,
          'a: restart did not reuse its release:\n%s' % log[-3000:])
    for i in ids:
        l = ledger(led(i))
        check(l['answers'] == 1 and abs(l['epsilon_spent'] - 1) < 1e-9, '%s: ledger %r' % (i, l))
        check(served(root, i)['fitted_from']['releases_pooled'] == 3, '%s: not 3 of 3' % i)
    # Restarted alone after the run (its neighbours gone), it keeps the
    # model served from 3 releases over one from its own alone.
    before = served(root, 'a')
    agents['a'].args += ['--linger', '1']
    agents['a'].start()
    try:
        agents['a'].proc.wait(30)
    finally:
        agents['a'].kill()
    log = agents['a'].logtext()
    check(agents['a'].proc.returncode == 0 and 'kept the served model' in log and
          served(root, 'a') == before and ledger(led('a'))['answers'] == 1,
          'a restarted after the run: exit %s, served file %s:\n%s'
          % (agents['a'].proc.returncode, served(root, 'a')['fitted_from'], log[-2000:]))
    print('restart: a charged once, its release resent after kill -9; 3 of 3 served; '
          'restarted alone after the run, it kept that model')


CASES = {'refuse': case_refuse, 'parity': case_parity, 'cluster': case_cluster,
         'restart': case_restart}


def test(argv):
    case = argv[1]
    root = tmpdir('peer-serve-' + case)
    ok = False
    try:
        CASES[case](root)
        ok = True
    finally:
        cleanup(root, ok)


main(test)
