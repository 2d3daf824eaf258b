#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance (real daemons on loopback):
- kill -9 of an owner mid-job and restart: it resumes from its ledger (its
  Hello reports the answers already given), the ledger never shows more than
  K_i answers (the learner's planned K_i, or the owner's own cap) or more
  than epsilon spent, every answer the learner used is in
  the ledger, and the job completes; an owner with a small answer cap stops
  at exactly K answers and the job still completes;
- the same kill -9 and restart of an owner in a Gaussian job (learnerd
  --mechanism gaussian, owners at --delta 1e-6): its ledger stays one job in
  rho within its cap, epsilon at delta within --epsilon (gaussian_owner_crash);
- kill -9 of learnerd mid-job and restart with --resume: the job completes
  T iterations with a continuous trace, and its snapshots.csv
  (--snapshot-every 20) one row per k = 0, 20, ..., T, the rows after the
  checkpoint cut at the resume, the last model.json's model."""
import json, math, os, re, signal, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, run, tmpdir, cleanup, main
from cluster import (Cluster, ledger_records, ledger_entries, check_invariants, job_file,
                     wait_owner)

def owner_crash(bindir, d):
    T, K3 = 600, 50
    c = Cluster(bindir, d, owners=3, rows=300, features=4, T=T)
    try:
        # owner-3 keeps its own cap K3, far below its share of T: the
        # planner hands the iterations it leaves to the others (their K_i
        # cover T - K3 with the margin), or every owner would be exhausted
        # before T.
        c.start_learner()
        o1 = c.start_owner(1, rate='30')
        o2 = c.start_owner(2, rate='30')
        o3 = c.start_owner(3, rate='30', extra=['--answers-cap', str(K3)])
        c.wait_rows(150)
        o2.send_signal(signal.SIGKILL)
        o2.wait()
        before, _ = ledger_records(c.path('owner-2', 'ledger'))
        check(before > 0, 'owner-2 had answered nothing before the kill')
        o2 = c.start_owner(2, rate='30')
        out = c.wait_learner()
        check('done k=%d' % T in out, 'job did not complete after the owner crash')
        rows = c.trace_rows()
        log = open(c.path('learnerd.log')).read()
        given = [int(g) for g in re.findall(r'hello id=owner-2 .*answers_given=(\d+)', log)]
        check(len(given) >= 2 and given[-1] >= before,
              'restarted owner-2 did not resume from its ledger (Hellos: %s, ledger had %d)' % (given, before))
        K = c.settings()['K']
        check(K[2] == K3 and K[0] == K[1] == math.ceil((T - K3) / 2 * 1.1),
              'planned caps %r (owner-3 keeps its own %d)' % (K, K3))
        for i, cap in ((1, K[0]), (2, K[1]), (3, K3)):
            n, nano = ledger_records(c.path('owner-%d' % i, 'ledger'))
            used = sum(1 for r in rows if r[2] == 'owner-%d' % i)
            check(n <= cap, 'owner-%d ledger has %d answers, cap %d' % (i, n, cap))
            check(nano <= 10 ** 9, 'owner-%d ledger spent %d nano-epsilon > 1' % (i, nano))
            check(used <= n, 'owner-%d: learner used %d answers, ledger has %d' % (i, used, n))
            print('owner-%d: ledger %d answers (cap %d), %.6f epsilon; learner used %d'
                  % (i, n, cap, nano / 1e9, used))
        n3, _ = ledger_records(c.path('owner-3', 'ledger'))
        check(n3 == K3, 'owner-3 should stop at exactly K = %d answers, has %d' % (K3, n3))
        # `dpasync ledger` reads the same totals, and refuses a damaged copy.
        for i in (1, 2, 3):
            led = job_file(c.path('owner-%d' % i, 'ledger'))
            info = json.loads(run([c.dp, 'ledger', led]).stdout)
            n, nano = ledger_records(led)
            check(info['answers'] == n and abs(info['epsilon_spent'] - nano / 1e9) < 1e-9
                  and info['identity'].startswith('owner=owner-%d ' % i),
                  'dpasync ledger disagrees with the file: %s vs %d answers, %d nano' % (info, n, nano))
        bad = c.path('owner-1', 'ledger.damaged')
        b = bytearray(open(job_file(c.path('owner-1', 'ledger')), 'rb').read())
        b[256 + 64 * 5 + 20] ^= 0xff     # inside the 6th record, not the last
        open(bad, 'wb').write(bytes(b))
        p = run([c.dp, 'ledger', bad], ok=False)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        check(p.returncode == 2 and len(lines) == 1 and 'ledger.damaged' in lines[0],
              'damaged ledger: exit %d, stderr %r' % (p.returncode, p.stderr))
        for p in (o1, o2, o3):
            check(p.wait(timeout=30) == 0, 'an ownerd exited %s' % p.returncode)
        check_invariants(c)
    finally:
        c.close()

def learner_crash(bindir, d):
    T = 500
    c = Cluster(bindir, d, owners=3, rows=300, features=4, T=T)
    try:
        c.start_learner(['--checkpoint-every', '50', '--snapshot-every', '20'])
        owners = [c.start_owner(i, rate='30') for i in (1, 2, 3)]
        c.wait_rows(220)
        c.learner.send_signal(signal.SIGKILL)
        c.learner.wait()
        killed_at = len(c.trace_rows())
        time.sleep(0.3)
        c.start_learner(['--checkpoint-every', '50', '--snapshot-every', '20'], resume=True)
        out = c.wait_learner()
        check('done k=%d' % T in out, 'resumed learnerd did not complete: %r' % out)
        ks = [int(r[0]) for r in c.trace_rows()]
        check(ks == list(range(1, T + 1)), 'trace after resume is not k = 1..T')
        # The snapshots after the checkpoint's k were cut at the resume
        # (those iterations were done again): one row per k, the last
        # model.json's.
        snaps = [l.split(',') for l in open(c.path('learner', 'snapshots.csv')).read().splitlines()[1:]]
        check([int(r[0]) for r in snaps] == list(range(0, T + 1, 20)),
              'snapshots after the resume at k = %r' % [r[0] for r in snaps])
        check([float(x) for x in snaps[-1][2:]] ==
              json.load(open(c.path('learner', 'model.json')))['theta'],
              'the last snapshot is not model.json')
        for p in owners:
            check(p.wait(timeout=30) == 0, 'an ownerd exited %s' % p.returncode)
        check_invariants(c)
        print('learnerd killed at k=%d, resumed and completed T=%d' % (killed_at, T))
    finally:
        c.close()

def fast_clocks(bindir, d):
    """Clocks far faster than the learner can serve (100,000 ticks/s): every
    owner still completes its handshake and the job completes; an owner whose
    clock ticks that fast with no learner still exits 0 on SIGTERM (a 0 ms
    timer re-armed from its own callback used to starve the event loop)."""
    T = 300
    c = Cluster(bindir, d, owners=3, rows=200, features=4, T=T)
    try:
        c.start_learner()
        owners = [c.start_owner(i, rate='100000') for i in (1, 2, 3)]
        out = c.wait_learner(timeout=60)
        check('done k=%d' % T in out, 'job with fast clocks did not complete')
        for p in owners:
            check(p.wait(timeout=30) == 0, 'a fast-clock ownerd exited %s' % p.returncode)
        # With the learner gone the clock keeps ticking at 100,000/s while
        # the owner reconnects: the loop must still serve signals.
        lone = c.start_owner(1, rate='100000', ledger=c.path('lone', 'ledger'))
        time.sleep(1.0)
        lone.send_signal(signal.SIGTERM)
        check(lone.wait(timeout=10) == 0, 'fast-clock ownerd did not exit 0 on SIGTERM')
        print('fast clocks: job completed, SIGTERM honoured')
    finally:
        c.close()

def gaussian_owner_crash(bindir, d, shared):
    """kill -9 of an owner mid-way through a Gaussian job (learnerd
    --mechanism gaussian, owners at --delta 1e-6) and restart: the job
    completes; the restarted owner resumes from its ledger; its ledger
    (`dpasync ledger`) is its one job, Gaussian in rho, whose running total
    never exceeds the rho cap in any record; the answers it gave (records of
    docs/ledger.md §9 other than reservations alone) cover the learner's
    trace rows of that owner and exceed them by at most 2 (one in flight at
    the kill, one the finished job no longer needed); its count exceeds the
    answers given by at most 2 reserved shares (the reservation a restart
    treats as used, and the one left after the last answer, §9); the
    epsilon at delta its Answers told the learner never goes down across the
    restart, and its ledger's epsilon at delta 1e-6 stays within --epsilon 1."""
    T, delta = 60, 1e-6
    c = Cluster(bindir, d, owners=3, T=T, shared=shared)
    try:
        t0 = time.monotonic()
        c.start_learner(['--mechanism', 'gaussian'])
        gauss = ['--delta', repr(delta)]
        owners = [c.start_owner(i, rate='30', extra=gauss) for i in (1, 2, 3)]
        c.wait_rows(T // 3)
        owners[1].send_signal(signal.SIGKILL)
        owners[1].wait()
        before, _ = ledger_records(c.ledger(2))
        check(before > 0, 'owner-2 had answered nothing before the kill')
        owners[1] = c.start_owner(2, rate='30', extra=gauss)
        out = c.wait_learner()
        check('done k=%d' % T in out, 'the Gaussian job did not complete after the owner crash')
        log = open(c.path('learnerd.log')).read()
        given = [int(g) for g in re.findall(r'hello id=owner-2 .*answers_given=(\d+)', log)]
        check(len(given) >= 2 and given[-1] >= before,
              'restarted owner-2 did not resume from its ledger (Hellos: %s, ledger had %d)'
              % (given, before))
        for p in owners:
            check(wait_owner(p) == 0, 'an ownerd exited %s' % p.returncode)
        rows = c.trace_rows()
        info = json.loads(run([c.dp, 'ledger', c.ledger(2)]).stdout)
        jobs = info['jobs']
        check(info['jobs_count'] == 1 and len(jobs) == 1,
              'owner-2: not one job ledger: %r' % info)
        j = jobs[0]
        check(j['mechanism'] == 'gaussian' and j['unit'] == 'rho' and j['delta'] == delta,
              'owner-2: not a Gaussian ledger in rho at delta %g: %r' % (delta, j))
        recs, caps = ledger_entries(c.ledger(2))
        check(recs and all(r['total'] <= caps[0] for r in recs) and
              0 < j['rho_spent'] <= j['rho_cap'] and
              abs(j['rho_spent'] - recs[-1]['total'] / 1e9) < 1e-9,
              'owner-2: rho beyond its cap %r: %r' % (caps, j))
        mine = [r for r in rows if r[2] == 'owner-2']
        gave = sum(1 for r in recs if r['k'] != 0)   # every record but a reservation alone
        reserved = j['answers'] - gave
        check(j['answers'] == recs[-1]['count'] <= j['answers_cap'] and
              len(mine) <= gave <= len(mine) + 2 and 0 <= reserved <= 2,
              'owner-2: ledger %d answers (cap %d): %d given, %d reserved; learner used %d'
              % (j['answers'], j['answers_cap'], gave, reserved, len(mine)))
        eps = [float(r[5]) for r in mine]
        check(eps == sorted(eps) and eps[-1] <= info['lifetime_epsilon_spent'] + 1e-9,
              'owner-2: the epsilon at delta its Answers told %r, its ledger %r'
              % (eps, info['lifetime_epsilon_spent']))
        check(0 < info['lifetime_epsilon_spent'] <= 1 and info['lifetime_delta'] == delta,
              'owner-2: epsilon at delta %g beyond 1: %r' % (delta, info))
        print('gaussian owner crash: owner-2 killed after %d answers, restarted; ledger %d '
              'answers (cap %d, %d reserved), learner used %d; rho %.6f of %.6f, epsilon at '
              'delta %.6f; %.1f s' % (before, j['answers'], j['answers_cap'], reserved,
                                      len(mine), j['rho_spent'],
                          j['rho_cap'], info['lifetime_epsilon_spent'], time.monotonic() - t0))
    finally:
        c.close()

def test(argv):
    d = tmpdir('e2e-crash')
    try:
        fast_clocks(argv[0], os.path.join(d, 'fast'))
        gaussian_owner_crash(argv[0], os.path.join(d, 'gauss'), os.path.join(d, 'fast'))
        if not os.environ.get('ONLY_LEARNER'):
            owner_crash(argv[0], os.path.join(d, 'owner'))
        learner_crash(argv[0], os.path.join(d, 'learner'))
    finally:
        os.environ.get('KEEP') or cleanup(d)

main(test)
