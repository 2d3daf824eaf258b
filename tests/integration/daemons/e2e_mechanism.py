#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance (real learnerd and ownerd on loopback; docs/protocol.md §5
"Mechanisms"): learnerd --mechanism gaussian refuses, at its Hello and
before any Welcome or query, every owner that does not allow Gaussian
answers, with a Goodbye BAD_CLAIM whose reason names the owner and the
fix (ownerd's --delta):

1. a real ownerd at its default --delta 0 (pure epsilon-DP only): refused,
   it exits 2 with the reason in its log; its ledger directory has no job
   ledger (nothing bound, nothing spent) and it never saw a Welcome;
2. an owner whose Hello predates delta (fake_owner, which sends no delta,
   lifetime_delta or gaussian): read as delta 0 and refused the same way
   (it exits 3: closed before any Welcome, with Goodbye code 7).

No plan is made and no trace row written: the learner never planned a
mechanism an owner refuses.

3. a real Gaussian job: learnerd --mechanism gaussian with three real
   ownerd at --delta 1e-6 and --epsilon 1 runs to done; each owner's ledger
   (`dpasync ledger DIR`) holds one Gaussian job in nano-rho with rho spent
   > 0, epsilon at delta 1e-6 in (0, 1], and the lifetime within its cap;
   the last epsilon_spent each owner's Answer told learnerd (its trace) is
   an epsilon at delta up to that, not a rho; learnerd's model.json is
   written.  learnerd planned it with the Gaussian noise term (its plan
   line's clip is the L2 one the Welcome carried) and logged both
   mechanisms' predictions ("plan: predicted psi: laplace ..., gaussian
   ...": every owner allows both).
4. parity through the L2 clip, noise off (epsilon = inf, delta 1e-6):
   request mode, T = 150, feeding learnerd's trace to `dpasync sim
   --mechanism gaussian --schedule` reproduces theta_L to 1e-12; and
   `learnerd --mode sync1` and `--mode sync2` (T = 30) end with the model
   `dpasync sim --mode sync1|sync2 --mechanism gaussian` computes, to
   1e-12.  The clip 0.3 binds: sim
   with the clip lifted (1e6), or with Laplace's L1 clip at 0.3, moves
   theta by more than 1e-4 relative, so the parity is the L2 path's.
ownerd's own refusal of a Gaussian Welcome at delta 0 (the second line
of defence) is tests/unit/test_mechanism.c."""
import json, os, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, tmpdir, cleanup, main, run, summary
from cluster import Cluster

DELTA = '1e-6'
GAUSS = ['--mechanism', 'gaussian', '--delta', DELTA]


def refused(bindir):
    """Parts 1 and 2 on one learnerd (one cluster: the test is short)."""
    d = tmpdir('e2e-mechanism')
    c = Cluster(bindir, d, owners=2, rows=300, features=4, T=50)   # p = 5 with --bias
    ok = False
    try:
        c.start_learner(['--mechanism', 'gaussian'])
        o1 = c.start_owner(1)
        try:
            rc = o1.wait(timeout=20)
        except subprocess.TimeoutExpired:
            raise Fail('ownerd at delta 0 still runs after 20 s: not refused')
        check(rc == 2, 'ownerd at delta 0 exited %s, not 2 (refused for good)' % rc)
        log = c.wait_learner_log('owner owner-1 allows pure epsilon-DP only')
        check("set ownerd's --delta" in log, 'the reason does not name the fix: %r'
              % log[-1500:])
        olog = open(c.ledger(1) + '.log').read()
        check('the learner refused this owner' in olog and '--delta' in olog,
              'ownerd does not log the reason: %r' % olog[-1500:])
        check('welcome job=' not in olog, 'ownerd at delta 0 was welcomed')
        home = os.path.join(c.ledger(1), 'jobs')
        jobs = [f for f in os.listdir(home) if f.endswith('.ledger')] if os.path.isdir(home) else []
        check(jobs == [], 'the refused owner has a job ledger: %r' % jobs)

        o2 = c.start_fake_owner('owner-2', '300', 5)   # its Hello has no delta fields
        try:
            rc = o2.wait(timeout=20)
        except subprocess.TimeoutExpired:
            raise Fail('an owner without delta still connected after 20 s: not refused')
        check(rc == 3, 'the owner without delta exited %s, not 3 (closed before any Welcome)'
              % rc)
        log = c.wait_learner_log('owner owner-2 allows pure epsilon-DP only')
        olog = open(c.path('fake-owner-2.log')).read()
        check('goodbye code=7' in olog, 'the owner without delta got no Goodbye BAD_CLAIM: %r'
              % olog[-500:])
        check('training starts' not in log and ' plan from=' not in log,
              'a plan was made with owners that refuse Gaussian answers')
        check(c.trace_rows() == [], 'queries were answered')
        print('gaussian job: ownerd at delta 0 and an owner without delta refused at their '
              'Hello, no job ledger, no plan')
        ok = True
    finally:
        c.close()
        cleanup(d, ok)


def gaussian(bindir):
    """Part 3: a Gaussian job to done through the real daemons."""
    d = tmpdir('e2e-mechanism-gauss')
    c = Cluster(bindir, d, owners=3, rows=300, features=4, T=60)
    ok = False
    try:
        t0 = time.monotonic()
        c.start_learner(['--mechanism', 'gaussian'])
        owners = [c.start_owner(i, extra=['--delta', '1e-6']) for i in (1, 2, 3)]
        c.wait_learner(timeout=120)
        log = open(c.path('learnerd.log')).read()
        check('info learner: plan: predicted psi: laplace ' in log and ', gaussian ' in log,
              'learnerd did not log both mechanisms\' predictions: %r' % log[-2000:])
        for i, o in enumerate(owners, 1):
            check(o.wait(timeout=30) == 0, 'owner-%d exited %s after the job:\n%s'
                  % (i, o.returncode, open(c.ledger(i) + '.log').read()[-1500:]))
        model = c.path('learner', 'model.json')
        check(os.path.exists(model), 'learnerd wrote no model.json')
        json.load(open(model))
        # The Answer's epsilon_spent, as learnerd's trace keeps it: the
        # owner's last one traced is its epsilon at delta after that answer
        # (above 0.1: one answer's is about 0.25; an answer the job no
        # longer needed is not traced), never a rho (below 0.025 for the
        # whole job).
        last = {r[2]: float(r[5]) for r in c.trace_rows()}
        for i in (1, 2, 3):
            info = json.loads(run([c.dp, 'ledger', c.ledger(i)]).stdout)
            got = last.get('owner-%d' % i)
            check(got is not None and 0.1 < got <= info['lifetime_epsilon_spent'] + 1e-9,
                  'owner-%d: the Answer says epsilon_spent %r, its ledger epsilon at delta %r'
                  % (i, got, info['lifetime_epsilon_spent']))
            jobs = info['jobs']
            check(len(jobs) == 1, 'owner-%d: %d job ledgers: %r' % (i, len(jobs), info))
            j = jobs[0]
            check(j['mechanism'] == 'gaussian' and j['unit'] == 'rho',
                  'owner-%d: not a Gaussian ledger in rho: %r' % (i, j))
            check(j['rho_spent'] > 0 and j['answers'] > 0,
                  'owner-%d: nothing spent: %r' % (i, j))
            # One job: the lifetime figure at the lifetime delta (--delta) is its.
            check(0 < info['lifetime_epsilon_spent'] <= 1 and j['delta'] == 1e-6 and
                  info['lifetime_delta'] == 1e-6,
                  'owner-%d: epsilon at delta not in (0, 1]: %r' % (i, info))
            check(info['lifetime_epsilon_spent'] <= info['lifetime_epsilon_cap'],
                  'owner-%d: lifetime beyond its cap: %r' % (i, info))
            olog = open(c.ledger(i) + '.log').read()
            check('mechanism=gaussian' in olog and ' refused k=' not in olog,
                  'owner-%d: not bound Gaussian, or refused: %r' % (i, olog[-1500:]))
        print('gaussian job: 3 owners at delta 1e-6 answered to done in %.1f s; ledgers in '
              'rho, epsilon at delta %s' % (time.monotonic() - t0, ', '.join(
                  '%.6f' % json.loads(run([c.dp, 'ledger', c.ledger(i)]).stdout)
                  ['lifetime_epsilon_spent'] for i in (1, 2, 3))))
        ok = True
    finally:
        c.close()
        cleanup(d, ok)


def rel(a, b):
    return max(abs(x - y) for x, y in zip(a, b)) / max(abs(y) for y in b)


def parity(bindir):
    """Part 4: noise-free parity through the L2 clip, request and sync1."""
    d = tmpdir('e2e-mechanism-parity')
    ok = False
    try:
        c = Cluster(bindir, os.path.join(d, 'request'), owners=3, rows=400, features=4, T=150)
        try:
            c.start_learner(['--mechanism', 'gaussian', '--clip', '0.3'])
            owners = [c.start_owner(i, eps='inf', extra=['--delta', DELTA]) for i in (1, 2, 3)]
            c.wait_learner(timeout=120)
            for i, o in enumerate(owners, 1):
                check(o.wait(timeout=30) == 0, 'owner-%d exited %s' % (i, o.returncode))
            rows = c.trace_rows()
            used = c.settings()
            check(used['clip'] == 0.3, 'learnerd did not keep --clip 0.3: %r' % used)
            sched = c.path('schedule.txt')
            with open(sched, 'w') as f:
                f.write(''.join(r[2].split('-')[1] + '\n' for r in rows))
            flags = c.sim_flags(max(used['K']))
            flags[flags.index('--answers-cap') + 1] = ','.join(str(k) for k in used['K'])
            got = json.load(open(c.path('learner', 'model.json')))['theta']
            sims = {}
            for tag, more in (('gaussian', GAUSS), ('unclipped', GAUSS + ['--clip', '1e6']),
                              ('laplace-l1', [])):
                out = c.path('sim-' + tag)
                run([c.dp, 'sim', '--target', 'y', '--bias', '--epsilon', 'inf', '--repeats', '1',
                     '--schedule', sched, '--out', out] + flags + more + [c.data(i) for i in (1, 2, 3)])
                sims[tag] = summary(out)['theta']
            err = rel(got, sims['gaussian'])
            print('request parity (gaussian, L2 clip 0.3): max relative difference %.3g; sim '
                  'unclipped differs by %.3g, sim with the L1 clip by %.3g'
                  % (err, rel(sims['unclipped'], sims['gaussian']),
                     rel(sims['laplace-l1'], sims['gaussian'])))
            check(err <= 1e-12, 'networked Gaussian theta_L differs from sim --schedule by %.3g'
                  % err)
            for tag in ('unclipped', 'laplace-l1'):
                check(rel(sims[tag], sims['gaussian']) > 1e-4,
                      'the clip does not bind (%s): the parity would not be the L2 path\'s' % tag)
        finally:
            c.close()
        for mode in ('sync1', 'sync2'):
            c = Cluster(bindir, os.path.join(d, mode), owners=3, rows=400, features=4, T=30)
            try:
                c.start_learner(['--mode', mode, '--round-timeout', '60', '--mechanism',
                                 'gaussian', '--clip', '0.3'])
                owners = [c.start_owner(i, eps='inf', extra=['--delta', DELTA])
                          for i in (1, 2, 3)]
                c.wait_learner(timeout=120)
                for i, o in enumerate(owners, 1):
                    check(o.wait(timeout=30) == 0, 'owner-%d exited %s' % (i, o.returncode))
                err, n, big = c.sync_sim_error(mode, c.path('sim'), GAUSS)
                print('%s parity (gaussian): max relative difference %.3g over %d coordinates, '
                      '|theta| %.3g' % (mode, err, n, big))
                check(err <= 1e-12, '%s: networked Gaussian model differs from sim by %.3g'
                      % (mode, err))
            finally:
                c.close()
        ok = True
    finally:
        cleanup(d, ok)


def test(argv):
    refused(argv[0])
    gaussian(argv[0])
    parity(argv[0])


main(test)
