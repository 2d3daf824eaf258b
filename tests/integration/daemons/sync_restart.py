#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A sync job survives its owners' restarts (docs/learnerd.md §9 "Restarts",
docs/ledger.md §9 "Sync jobs"): real learnerd and 3 ownerd on loopback,
epsilon = 1, T = 150 (149 rounds), for sync1 and for sync2:
- owner-1 is sent SIGTERM about 60 answers in and started again at once
  (a clean stop forfeits the share its ledger reserved ahead);
- owner-2 is killed with SIGKILL about 200 answers in and started again
  (a crash forfeits at most one share);
and the job must end as if nothing happened: learnerd exits 0 with
`done k=T-1`, model.json is written in the job's mode, every round of
rounds.csv has all 3 answers and every owner T - 1 applied answers, no
owner refused a query (0 `refused k=` lines), and every ledger stays
within its caps (epsilon spent <= epsilon_i, answers <= K_i: the
invariants of check_invariants).
On the code before: K_i = T - 1 left a restarted owner without an answer
for its last round; learnerd stopped with `every owner has exhausted its
budget at k=... of T=...` (or a refusal in a strict round), exit 1, no
model, the ledgers spent.

Then learnerd itself (docs/learnerd.md §9 "Resume"), for sync1 and sync2
at epsilon = inf, T = 60: killed with SIGKILL about 60 answers in, started
again with --resume, it continues from its checkpoint (theta, theta_hat,
the round) and completes: rounds.csv numbers rounds 1..T-1 once each,
trace.csv k = 1..3(T-1), and the model equals the one `dpasync sim`
computes with the same plan to 1e-12 (as an uninterrupted job does,
e2e_modes).  On the code before, --resume of a sync job exited 2."""
import json, os, signal, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, tmpdir, cleanup, main
from cluster import Cluster, check_invariants

T = 150

def restart_at(c, owners, i, rows, sig):
    """Send sig to owner-i once trace.csv has `rows` rows; start it again
    on the same ledger when it is gone."""
    c.wait_rows(rows, timeout=120)
    owners[i - 1].send_signal(sig)
    rc = owners[i - 1].wait(timeout=30)
    print('  owner-%d stopped by %s at %d answers (exit %s)' % (
        i, signal.Signals(sig).name, len(c.trace_rows()), rc))
    owners[i - 1] = c.start_owner(i, eps='1', rate='50')

def job(bindir, d, mode):
    c = Cluster(bindir, d, owners=3, rows=2000, features=5, T=T)
    try:
        c.start_learner(['--mode', mode, '--round-timeout', '60'])
        owners = [c.start_owner(i, eps='1', rate='50') for i in (1, 2, 3)]
        restart_at(c, owners, 1, 60, signal.SIGTERM)
        restart_at(c, owners, 2, 200, signal.SIGKILL)
        try:
            out = c.wait_learner(timeout=300)
        except Fail:
            print(open(c.path('learnerd.log')).read()[-1500:])
            raise
        check('done k=%d' % (T - 1) in out, '%s: learnerd did not report done: %r' % (mode, out))
        for i, p in enumerate(owners, 1):
            check(p.wait(timeout=30) == 0, '%s: ownerd %d exited %s' % (mode, i, p.returncode))
        log = open(c.path('learnerd.log')).read()
        refused = [l for l in log.splitlines() if ' refused k=' in l]
        check(not refused, '%s: an owner refused a query: %r' % (mode, refused[:3]))
        model = json.load(open(c.path('learner', 'model.json')))
        check(model['mode'] == mode and not model.get('partial'), '%s: model.json %r' % (
            mode, {k: model.get(k) for k in ('mode', 'partial')}))
        rounds = open(c.path('learner', 'rounds.csv')).read().splitlines()[1:]
        check(len(rounds) == T - 1 and all(l.split(',')[3] == '3' for l in rounds),
              '%s: %d rounds, not all with 3 answers' % (mode, len(rounds)))
        rows = c.trace_rows()
        per = {n: sum(1 for r in rows if r[2] == n) for n in c.names}
        check(all(v == T - 1 for v in per.values()), '%s: applied answers %r' % (mode, per))
        spent = check_invariants(c, complete=False)
        K = c.settings()['K']
        print('%s: done; K_i %r; ledgers (answers, nano-epsilon) %r; 0 refusals'
              % (mode, K, spent))
    finally:
        c.close()

def learner_crash(bindir, d, mode):
    Ts = 60
    c = Cluster(bindir, d, owners=3, rows=2000, features=5, T=Ts)
    try:
        flags = ['--mode', mode, '--round-timeout', '60', '--checkpoint-every', '7']
        c.start_learner(flags)
        owners = [c.start_owner(i, eps='inf', rate='50') for i in (1, 2, 3)]
        c.wait_rows(60, timeout=120)
        c.learner.send_signal(signal.SIGKILL)
        c.learner.wait(timeout=30)
        at = len(c.trace_rows())
        c.start_learner(flags, resume=True)
        out = c.wait_learner(timeout=300)
        check('done k=%d' % (Ts - 1) in out, '%s: resumed learnerd did not report done: %r'
              % (mode, out))
        check('resuming job=' in open(c.path('learnerd.log')).read(), '%s: not resumed' % mode)
        rounds = [l.split(',') for l in open(c.path('learner', 'rounds.csv')).read().splitlines()[1:]]
        check([int(r[0]) for r in rounds] == list(range(1, Ts)), '%s: rounds.csv rounds %r'
              % (mode, [r[0] for r in rounds]))
        rows = c.trace_rows()
        check([int(r[0]) for r in rows] == list(range(1, 3 * (Ts - 1) + 1)),
              '%s: trace is not k = 1..3(T-1)' % mode)
        model = json.load(open(c.path('learner', 'model.json')))
        check(model['mode'] == mode, '%s: model.json mode %r' % (mode, model['mode']))
        err, _, _ = c.sync_sim_error(mode, os.path.join(d, 'sim'))
        print('%s: learnerd killed at %d answers, resumed, done; model vs sim: max relative '
              'difference %.3g' % (mode, at, err))
        check(err <= 1e-12, '%s: resumed model differs from sim by %.3g' % (mode, err))
    finally:
        c.close()

def test(argv):
    bindir = argv[0]
    d = tmpdir('sync-restart')
    try:
        for mode in ('sync1', 'sync2'):
            job(bindir, os.path.join(d, mode), mode)
        for mode in ('sync1', 'sync2'):
            learner_crash(bindir, os.path.join(d, 'crash-' + mode), mode)
    finally:
        cleanup(d)

main(test)
