# SPDX-License-Identifier: Apache-2.0
"""ownerd --peer: agents as real processes on loopback (docs/peer-agents.md).

  peer_agents.py BUILD_DIR CASE

CASE is one of
  refuse    a bad graph, an agent missing from it, owner-only certificates
            and a flag clash are refused with one line and exit 2, and so
            are --mechanism gaussian with --delta 0, --mechanism without
            --peer, and a restart with the other --mechanism (either way)
            or another plan; a Gaussian agent restarted with its plan
            resumes from its ledger; a stranger with a certificate of the
            same CA that is not a neighbour is refused at the handshake and
            the run completes;
  cluster   20 agents on a ring with chords complete, and `dpasync ledger`
            shows every ledger within its agent's budget (T_i charges, spent
            <= epsilon), with advanced composition for some agents and
            Gaussian releases for others (--mechanism gaussian: a ledger in
            rho whose epsilon at their delta is within their epsilon); one
            agent's /metrics, scraped while it runs, counts its wake-ups,
            the models it sent and received and its live neighbours; at
            exit every agent holds each neighbour's final model and every
            link delivered exactly the models its sender queued;
  restart   kill -9 one agent of a path a-b-c mid-run: its neighbours keep
            waking with its last model, it restarts from its ledger (no
            charge twice) and model, reconnects, and all three complete;
  parity    4 agents at epsilon = inf on the schedule of `dpasync sim --mode
            p2p` end with the simulator's models to 1e-12; 4 Gaussian twins
            (same rows, their own identities, --mechanism gaussian, an L2
            clip that binds), run beside them, end with `sim --mechanism
            gaussian`'s on the same schedule to 1e-12, and away from the
            Laplace simulator's at that clip (the L2 path, not L1's);
  parity_warm  the same with a private warm start of 3 steps
            (--warm-start, --warm-steps): ownerd and the simulator take the
            same warm-start steps (exact at epsilon = inf).
"""
import json, math, os, re, signal, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, run, tmpdir, cleanup, main
from peer_lib import (DPASYNC, OWNERD, Agent, write_peers, write_graph, setup, launch, wait_all,
                      peer_metrics, ledger, check_gaussian, theta, ring_with_chords)


# ---- cases -----------------------------------------------------------------

def case_refuse(root):
    ids = ['b1', 'c2']
    data, certs = setup(root, ids, [20, 20])
    good = os.path.join(root, 'graph.csv')
    write_graph(good, [('b1', 'c2', 1.0)])
    base = ['--ca', os.path.join(certs, 'ca.crt'), '--cert', os.path.join(certs, 'b1.crt'),
            '--key', os.path.join(certs, 'b1.key'), '--data', os.path.join(data, 'b1.csv'),
            '--peers', os.path.join(root, 'nobody.csv')]
    bad = [('selfloop.csv', 'a,b,w\nb1,b1,1\n', 'graph'),
           ('negative.csv', 'a,b,w\nb1,c2,-1\n', 'graph'),
           ('dup.csv', 'a,b,w\nb1,c2,1\nc2,b1,1\n', 'graph'),
           ('header.csv', 'x,y,z\nb1,c2,1\n', 'graph'),
           ('absent.csv', 'a,b,w\nc2,d3,1\n', 'not in the graph')]
    for name, text, word in bad:
        g = os.path.join(root, name)
        with open(g, 'w') as f:
            f.write(text)
        st = os.path.join(root, 'st-' + name)
        os.makedirs(st)
        p = run([OWNERD, '--peer', '--graph', g, '--ledger', os.path.join(st, 'ledger')] + base,
                ok=False, timeout=30)
        lines = p.stderr.strip().splitlines()
        check(p.returncode == 2 and len(lines) == 1 and word in lines[0],
              '%s: expected exit 2 and one line naming the %s, got %d: %r' %
              (name, word, p.returncode, p.stderr))
    # an owner certificate (clientAuth only) cannot listen for neighbours
    oc = os.path.join(root, 'ownercerts')
    run([DPASYNC, 'certs', '--out', oc, '--names', 'b1'])
    st = os.path.join(root, 'st-ownercert')
    os.makedirs(st)
    p = run([OWNERD, '--peer', '--graph', good, '--ledger', os.path.join(st, 'ledger'),
             '--ca', os.path.join(oc, 'ca.crt'), '--cert', os.path.join(oc, 'b1.crt'),
             '--key', os.path.join(oc, 'b1.key'), '--data', os.path.join(data, 'b1.csv'),
             '--peers', good], ok=False, timeout=30)
    check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and
          'certs --peer' in p.stderr, 'owner certificate: got %d %r' % (p.returncode, p.stderr))
    p = run([OWNERD, '--peer', '--learner', '127.0.0.1:1', '--graph', good, '--ledger',
             os.path.join(st, 'ledger')] + base, ok=False, timeout=30)
    check(p.returncode == 2 and 'exclude' in p.stderr, 'flag clash: %r' % p.stderr)
    # exact (unnoised) models leave only with the explicit flag, as for owners
    p = run([OWNERD, '--peer', '--graph', good, '--epsilon', 'inf', '--ledger',
             os.path.join(st, 'ledger')] + base, ok=False, timeout=30)
    check(p.returncode == 2 and 'allow-no-noise' in p.stderr, 'epsilon inf: %r' % p.stderr)

    # Advanced composition where it wins: epsilon 1, delta e^-5 over 400
    # wake-ups (its neighbour never comes: it lingers 0.5 s and exits).
    st = os.path.join(root, 'st-advanced')
    os.makedirs(st)
    import math
    T, d = 400, math.exp(-5)
    p = run([OWNERD, '--peer', '--graph', good, '--ledger', os.path.join(st, 'ledger'),
             '--epsilon', 1, '--delta', repr(d), '--wakeups', T, '--rate', 2000,
             '--linger', 0.5] + base, timeout=60)
    led = ledger(os.path.join(st, 'ledger'))
    e = led['epsilon_spent'] / T
    adv = math.sqrt(2 * T * math.log(1 / d)) * e + T * e * math.expm1(e)
    check(led['answers'] == T and led['epsilon_cap'] > 1.5 and adv <= 1 + 1e-9 and e > 2.0 / T,
          'advanced composition: ledger %r, eps_t %g, composed %g' % (led, e, adv))

    # --mechanism (docs/peer-agents.md "Privacy"): refused with one line
    # without a delta, without --peer, and on a ledger of the other
    # mechanism; a Gaussian ledger reopens only with its own plan.
    def refused(args, word, what, one_line=True):
        p = run([OWNERD] + [str(a) for a in args] + base, ok=False, timeout=30)
        lines = p.stderr.strip().splitlines()
        check(p.returncode == 2 and (len(lines) == 1 or not one_line) and word in lines[-1],
              '%s: expected exit 2 and a line with %r, got %d: %r' % (what, word, p.returncode,
                                                                     p.stderr))
    st = os.path.join(root, 'st-gauss')
    os.makedirs(st)
    gl = os.path.join(st, 'ledger')
    gauss = ['--peer', '--graph', good, '--ledger', gl, '--mechanism', 'gaussian',
             '--epsilon', 1, '--wakeups', 5, '--rate', 2000, '--linger', 0.1]
    refused(gauss, 'needs --delta > 0', 'gaussian with delta 0')
    check(not os.path.exists(gl), 'a refused start created its ledger')
    refused(['--learner', '127.0.0.1:1', '--ledger', gl, '--mechanism', 'laplace'],
            'for --peer only', '--mechanism without --peer')
    refused(['--peer', '--graph', good, '--ledger', os.path.join(root, 'st-advanced', 'ledger'),
             '--epsilon', 1, '--delta', repr(d), '--wakeups', T, '--mechanism', 'gaussian'],
            'never changes', 'a Laplace ledger restarted as gaussian')
    gauss += ['--delta', '1e-5']
    run([OWNERD] + [str(a) for a in gauss] + base, timeout=60)
    check_gaussian(gl, 1, 1e-5, 5)
    refused([a if a != 'gaussian' else 'laplace' for a in gauss], 'never changes',
            'a Gaussian ledger restarted as laplace')
    # another plan (epsilon 2): the ledger's rho cap is not its
    refused(gauss + ['--epsilon', 2], 'caps differ', 'a Gaussian ledger with another plan',
            one_line=False)
    p = run([OWNERD] + [str(a) for a in gauss] + base, timeout=60)
    check('resuming wakeups=5 of 5' in p.stdout + p.stderr and ledger(gl)['answers'] == 5, 'Gaussian restart with its plan: %r' % p.stderr[-2000:])

    # a stranger: a0 (certificate of the same CA, so TLS alone would admit
    # it) lists b1 as its neighbour and dials it (a0 sorts first); b1's
    # graph does not name a0.
    sc = os.path.join(root, 'certs')
    run([DPASYNC, 'certs', '--out', sc, '--names', 'a0', '--peer', '--ca-cert',
         os.path.join(sc, 'ca.crt'), '--ca-key', os.path.join(sc, 'ca.key')])
    extra = lambda i: ['--wakeups', 15, '--rate', 10, '--epsilon', 1]
    agents, peers = launch(root, ids, certs, good, data, extra)
    sg = os.path.join(root, 'stranger-graph.csv')
    write_graph(sg, [('a0', 'b1', 1.0)])
    stranger = Agent(root, 'a0', sc, sg, peers, os.path.join(data, 'b1.csv'),
                     ['--wakeups', 200, '--rate', 10])
    stranger.start()
    port = stranger.port(time.time() + 30)
    try:
        deadline = time.time() + 30
        while time.time() < deadline and 'id=a0 reason=not a neighbour' not in \
                agents['b1'].logtext():
            time.sleep(0.1)
        check('id=a0 reason=not a neighbour' in agents['b1'].logtext(),
              'b1 did not refuse the stranger a0:\n' + agents['b1'].logtext()[-2000:])
        wait_all(agents, 60)
        check('neighbour=a0' not in agents['b1'].logtext(), 'b1 admitted a0')
    finally:
        stranger.kill()
        for a in agents.values():
            a.kill()
    del port


LINK = re.compile(r'link neighbour=(\S+) sent=(\d+) received=(\d+) connections=(\d+) '
                  r'final=(yes|no) seen_final=(yes|no) step=(\d+)')


def check_links(agents, T):
    """Every agent's link lines at exit (docs/peer-agents.md "Delivery at
    exit"), checked against its neighbours': every agent exited with every
    neighbour done, holding each neighbour's final model of step T, and each
    directed link delivered exactly the messages its sender queued when
    neither side's connection was replaced (at most as many when one was).
    Returns {(agent, neighbour): counts of agent's side}."""
    links = {}
    for a in agents.values():
        log = a.logtext()
        check('every neighbour done' in log and 'linger' not in log,
              '%s did not end with every neighbour done:\n%s' % (a.id, log[-3000:]))
        for nb, sent, got, conns, fin, seen, step in LINK.findall(log):
            links[(a.id, nb)] = {'sent': int(sent), 'received': int(got),
                                 'connections': int(conns), 'final': fin == 'yes',
                                 'seen_final': seen == 'yes', 'step': int(step)}
    for (a, b), l in sorted(links.items()):
        back = links.get((b, a))
        check(back is not None, '%s logs a link to %s, which logs none back' % (a, b))
        check(l['final'] and l['seen_final'] and l['step'] == T,
              '%s does not hold the final model (step %d) of %s: %r' % (a, T, b, l))
        one = l['connections'] == 1 and back['connections'] == 1
        check(back['received'] == l['sent'] if one else back['received'] <= l['sent'],
              '%s queued %d models to %s, which received %d (connections %d and %d)'
              % (a, l['sent'], b, back['received'], l['connections'], back['connections']))
    return links


def case_cluster(root):
    n = 20
    ids, rows, data, certs, graph = ring_with_chords(root, 'ag', n)
    T = 8
    eps = {i: [0.5, 1.0, 2.0][k % 3] for k, i in enumerate(ids)}
    # Gaussian releases for a quarter of them (one also warm-starts),
    # advanced composition for another quarter
    gauss = {i: k % 4 == 2 for k, i in enumerate(ids)}
    delta = {i: (1e-3 if k % 4 == 0 else 1e-5 if gauss[i] else 0) for k, i in enumerate(ids)}
    # a private warm start for a fifth of them: 10 more charges, same budget
    warm = {i: (0.1 if k % 5 == 1 else 0) for k, i in enumerate(ids)}
    mx = max(rows)
    extra = lambda i: ['--wakeups', T, '--rate', 8, '--epsilon', eps[i], '--delta', delta[i],
                       '--confidence', rows[ids.index(i)] / mx, '--mu', 2,
                       '--warm-start', warm[i]] + (['--metrics-listen', '127.0.0.1:0']
                                                   if i == ids[0] else []) + \
        (['--mechanism', 'gaussian'] if gauss[i] else [])
    t0 = time.time()
    agents, _ = launch(root, ids, certs, graph, data, extra)
    try:
        # ids[0]'s metrics while it runs (it waits for its neighbours' final
        # models before it exits, so most scrapes see it mid-run)
        seen = []
        while agents[ids[0]].proc.poll() is None and time.time() - t0 < 120:
            m = peer_metrics(agents[ids[0]])
            if m:
                seen.append(m)
            time.sleep(0.02)
        check(seen, '%s: /metrics never answered' % ids[0])
        keys = ('dpasync_peer_wakeups_total', 'dpasync_peer_models_sent_total',
                'dpasync_peer_models_received_total', 'dpasync_peer_neighbours_connected')
        top = {k: max(m.get(k, 0) for m in seen) for k in keys}
        degree = 4   # ring +-1 and chords +-5
        print('%s /metrics over %d scrapes, highest: %s' % (ids[0], len(seen), top))
        check(1 <= top['dpasync_peer_wakeups_total'] <= T, 'wake-ups %s' % top)
        check(1 <= top['dpasync_peer_neighbours_connected'] <= degree,
              'neighbours connected: %s' % top)
        for a, b in zip(seen, seen[1:]):
            check(all(b[k] >= a[k] for k in keys[:3]), 'a counter went down: %s then %s'
                  % (a, b))
        wait_all(agents, 120)
    finally:
        for a in agents.values():
            a.kill()
    # What the models counters count (owner/peerlink.c): one PeerModel
    # message to or from one neighbour -- at each wake-up to the neighbours
    # connected then (none before the address book lists them), at each new
    # connection, at the end (final) and to confirm a neighbour's final
    # model -- so they have no fixed ratio to the wake-ups, and the last
    # scrape sees neither the end's messages nor, when the agent exits at
    # once, its last wake-up.  The exact account is each agent's link lines
    # at exit: every agent ends 'every neighbour done' (no linger), holds
    # each neighbour's final model of step T, and each link carried exactly
    # what its sender queued (with one connection each side; never more).
    links = check_links(agents, T)
    check(len(links) == n * degree, '%d link lines, not %d' % (len(links), n * degree))
    sent = sum(links[(ids[0], b)]['sent'] for b in ids if (ids[0], b) in links)
    got = sum(links[(ids[0], b)]['received'] for b in ids if (ids[0], b) in links)
    check(top['dpasync_peer_models_sent_total'] <= sent and
          top['dpasync_peer_models_received_total'] <= got,
          '%s scraped more than its links carried (sent %d, received %d): %s'
          % (ids[0], sent, got, top))
    print('%s links at exit: %d models sent, %d received; %d links, each as sent'
          % (ids[0], sent, got, len(links)))
    secs = time.time() - t0
    for i in ids:
        read = ledger(os.path.join(root, 'state-' + i, 'ledger'), whole=True)
        led = read[1]
        want = T + (10 if warm[i] else 0)
        check(led['answers'] == want and led['answers_cap'] == want,
              '%s: ledger has %s charges of cap %s, expected %d' % (i, led['answers'],
                                                                   led['answers_cap'], want))
        if gauss[i]:
            check_gaussian(os.path.join(root, 'state-' + i, 'ledger'), eps[i], delta[i], want,
                           read)
        else:
            check(led['epsilon_spent'] <= led['epsilon_cap'] + 1e-12,
                  '%s: spent %r above cap %r' % (i, led['epsilon_spent'], led['epsilon_cap']))
        if not gauss[i] and delta[i] == 0:
            # pure composition: the ledger's cap is the agent's epsilon
            check(abs(led['epsilon_cap'] - eps[i]) < 1e-9 and
                  led['epsilon_spent'] <= eps[i] + 1e-12,
                  '%s: pure epsilon %g but ledger %r' % (i, eps[i], led))
        elif not gauss[i]:
            # advanced composition: T charges of eps_t with
            # sqrt(2T ln 1/delta) eps_t + T eps_t (e^eps_t - 1) <= eps
            import math
            e = (led['epsilon_spent'] - warm[i]) / T
            adv = warm[i] + math.sqrt(2 * T * math.log(1 / delta[i])) * e + T * e * math.expm1(e)
            check(min(adv, led['epsilon_spent']) <= eps[i] + 1e-9,
                  '%s: (eps, delta) = (%g, %g) exceeded: %r' % (i, eps[i], delta[i], led))
        th = theta(os.path.join(root, 'state-' + i, 'ledger', 'model.json'))
        check(len(th) == 4 and all(abs(v) < 1e6 for v in th), '%s: model %r' % (i, th))
        check(agents[i].trace_rows() == T, '%s: trace has %d rows' % (i, agents[i].trace_rows()))
    # dpasync report on the run's directory (the agents' state directories)
    run([DPASYNC, 'report', root])
    md = open(os.path.join(root, 'report.md')).read()
    check('20 agents, %d wake-ups' % (n * T) in md, 'report: %s' % md[:300])
    for i in ids:
        check('| state-%s | %d |' % (i, T) in md, 'report lacks agent %s:\n%s' % (i, md))
    print('20 agents completed in %.1f s' % secs)


def case_restart(root):
    ids = ['a', 'b', 'c']
    data, certs = setup(root, ids, [30, 40, 50])
    graph = os.path.join(root, 'graph.csv')
    write_graph(graph, [('a', 'b', 1.0), ('b', 'c', 1.0)])
    T = 40
    extra = lambda i: ['--wakeups', T, '--rate', 10, '--epsilon', 2]
    agents, peers = launch(root, ids, certs, graph, data, extra)
    try:
        b = agents['b']
        deadline = time.time() + 60
        while b.trace_rows() < 8 and time.time() < deadline:
            time.sleep(0.05)
        check(b.trace_rows() >= 8, 'b did not wake 8 times')
        b.kill()
        before = {i: agents[i].trace_rows() for i in 'ac'}
        spent_at_kill = ledger(os.path.join(b.dir, 'ledger'))['answers']
        # 2 s at 10 wake-ups/s: no tick at all has probability e^-20
        time.sleep(2.0)
        for i in 'ac':
            check(agents[i].trace_rows() > before[i] or agents[i].trace_rows() == T,
                  '%s stopped waking while b was down' % i)
            check('neighbour=b disconnected' in agents[i].logtext(),
                  '%s did not notice b going down' % i)
        b.start()
        port = b.port(time.time() + 30)
        # b listens on a new port: the neighbours read the address book
        # again at their next dial
        write_peers(peers, [(i, port if i == 'b' else agents[i].port(time.time() + 1))
                            for i in ids])
        wait_all(agents, 90)
    finally:
        for a in agents.values():
            a.kill()
    log = agents['b'].logtext()
    check('resuming wakeups=%d ' % spent_at_kill in log,
          'b did not resume from its ledger at %d:\n%s' % (spent_at_kill, log[-2000:]))
    for i in ids:
        led = ledger(os.path.join(root, 'state-' + i, 'ledger'))
        check(led['answers'] == T and led['epsilon_spent'] <= 2 + 1e-12,
              '%s: ledger %r' % (i, led))
    # the trace of b: no wake-up twice across the restart (the row of a
    # wake-up charged just before the kill may be missing)
    rows = open(os.path.join(agents['b'].dir, 'ledger', 'trace.csv')).read().splitlines()
    wakeups = [int(r.split(',')[0]) for r in rows if not r.startswith('wakeup')]
    check(wakeups == sorted(set(wakeups)) and wakeups[-1] == T and len(wakeups) >= T - 1,
          'b trace wake-ups %r' % wakeups)
    for i in 'ac':
        check(agents[i].logtext().count('neighbour=b connected') >= 2,
              '%s did not reconnect to b' % i)


def rename_csv(src, dst, col, f):
    """Copy CSV src to dst with f applied to column col (the agent ids)."""
    lines = open(src).read().splitlines()
    with open(dst, 'w') as out:
        out.write(lines[0] + '\n')
        for l in lines[1:]:
            c = l.split(',')
            c[col] = f(c[col])
            out.write(','.join(c) + '\n')


def largest_difference(root, ids, sim):
    """The largest |theta| difference between the agents' models and the
    simulator's (whose model of each agent must not be trivial)."""
    worst = 0.0
    for i in ids:
        got = theta(os.path.join(root, 'state-' + i, 'ledger', 'model.json'))
        want = theta(os.path.join(sim, 'agents', i + '.json'))
        check(len(got) == len(want), '%s: p differs' % i)
        for g, w in zip(got, want):
            worst = max(worst, abs(g - w))
        check(any(abs(w) > 1e-3 for w in want), '%s: the simulated model is trivial' % i)
    return worst


def case_parity(root, warm=()):
    ids = ['p1', 'p2', 'p3', 'p4']
    # Their Gaussian twins: the same rows under their own identities, run
    # beside them on the same schedule with --mechanism gaussian.
    gids = ['g' + i[1:] for i in ids]
    twin = lambda i: 'g' + i[1:]
    rows = [25, 40, 30, 50]
    data, certs = setup(root, ids, rows, features=3, seed=7, names=gids)
    for i in ids:
        rename_csv(os.path.join(data, i + '.csv'), os.path.join(data, twin(i) + '.csv'), 0,
                   lambda v: v)
    edges = [('p1', 'p2', 1.0), ('p2', 'p3', 0.5), ('p3', 'p4', 2.0), ('p1', 'p3', 0.25)]
    graph = os.path.join(root, 'graph.csv')
    write_graph(graph, edges)
    ggraph = os.path.join(root, 'graph-g.csv')
    write_graph(ggraph, [(twin(a), twin(b), w) for a, b, w in edges])
    sim = os.path.join(root, 'sim')
    T = 6
    common = ['--mu', 1.5, '--clip', 1, '--lambda-per-row', 1, '--model', 'logistic'] + list(warm)
    run([DPASYNC, 'sim', '--target', 'y', '--mode', 'p2p', '--graph', graph, '--epsilon', 'inf',
         '--wakeups', T, '--seed', 3, '--out', sim] + common +
        [os.path.join(data, i + '.csv') for i in ids])
    schedule = os.path.join(sim, 'schedule.csv')
    order = [l.split(',')[1] for l in open(schedule).read().splitlines()[1:]]
    check(len(order) == T * len(ids), 'schedule has %d steps' % len(order))
    check(order != sorted(order), 'the schedule interleaves the agents')
    # The twins: noise off (epsilon inf) through the Gaussian path, whose
    # clip is L2.  GCLIP binds: at theta = 0, where every agent's first
    # noisy gradient is taken (its first wake-up, or its warm start's first
    # step), a row's logistic gradient is y x / 2 (common/core/model.h), of
    # L2 norm ||x||_2 / 2, and some rows' is above GCLIP (checked below).
    # The Laplace simulator at the same clip (L1) must then end elsewhere:
    # parity through the L1 path would fail.
    GCLIP = 0.5
    gsched = os.path.join(root, 'schedule-g.csv')
    rename_csv(schedule, gsched, 1, twin)
    gcommon = ['--mu', 1.5, '--clip', GCLIP, '--lambda-per-row', 1, '--model', 'logistic',
               '--mechanism', 'gaussian', '--delta', '1e-6'] + list(warm)
    gsim, l1sim = os.path.join(root, 'sim-g'), os.path.join(root, 'sim-g-l1')
    for out, mech in ((gsim, 'gaussian'), (l1sim, 'laplace')):
        run([DPASYNC, 'sim', '--target', 'y', '--mode', 'p2p', '--graph', ggraph, '--epsilon',
             'inf', '--schedule', gsched, '--out', out] +
            [a if a != 'gaussian' else mech for a in gcommon] +
            [os.path.join(data, twin(i) + '.csv') for i in ids])
    norms = [math.sqrt(sum(float(v) ** 2 for v in l.split(',')[:3])) / 2
             for i in ids for l in open(os.path.join(data, i + '.csv')).read().splitlines()[1:]]
    binding = sum(v > GCLIP for v in norms)
    check(binding > 0, 'no row gradient above the L2 clip %g at theta = 0' % GCLIP)
    mx = max(rows)
    extra = lambda i: ['--schedule', gsched if i in gids else schedule, '--wakeups', T,
                       '--epsilon', 'inf', '--allow-no-noise',
                       '--confidence', repr(rows[(ids + gids).index(i) % len(ids)] / mx)] + \
        (gcommon if i in gids else common)
    agents, _ = launch(root, ids + gids, certs, lambda i: ggraph if i in gids else graph, data,
                       extra)
    try:
        wait_all(agents, 60)
    finally:
        for a in agents.values():
            a.kill()
    worst = largest_difference(root, ids, sim)
    check(worst <= 1e-12, 'networked agents differ from the simulator by %g' % worst)
    gworst = largest_difference(root, gids, gsim)
    check(gworst <= 1e-12, 'networked Gaussian agents differ from sim --mechanism gaussian '
          'by %g' % gworst)
    check('mechanism=gaussian' in agents[gids[0]].logtext(), 'g1 did not run Gaussian')
    l1gap = largest_difference(root, gids, l1sim)
    check(l1gap > 1e-6, 'the L1 clip ends where the L2 clip does (%g): the clip does not '
          'distinguish them' % l1gap)
    print('parity: largest difference %g; Gaussian %g (L2 clip %g binds for %d of %d rows at '
          'theta = 0; %g from the L1 path)' % (worst, gworst, GCLIP, binding, len(norms), l1gap))


def case_parity_warm(root):
    case_parity(root, ['--warm-start', 0.5, '--warm-steps', 3])


CASES = {'refuse': case_refuse, 'cluster': case_cluster, 'restart': case_restart,
         'parity': case_parity, 'parity_warm': case_parity_warm}


def test(argv):
    case = argv[1]
    root = tmpdir('peer-' + case)
    try:
        CASES[case](root)
    finally:
        cleanup(root)


main(test)
