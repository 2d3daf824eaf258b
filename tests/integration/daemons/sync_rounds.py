#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""learnerd's sync rounds when an owner stops answering (real learnerd + 3
ownerd on loopback, mutual TLS, T = 400 rounds, epsilon = 1):
- strict (no quorum): owner-3 is frozen (SIGSTOP) mid-job; the round it
  misses outlives --round-timeout 2 s and learnerd exits 1 with one line
  naming the round and owner-3; learnerd --resume on its out directory
  fails at startup with one line (exit 2): sync jobs are not resumed;
- --round-quorum 2: the same freeze does not stop the job; every round of
  rounds.csv closes with at least 2 answers, the rounds after the freeze
  with 2, owner-3 gave fewer than T - 1 answers and no owner more than its
  cap T - 1 (its ledger's answers), and the model is written."""
import json, os, signal, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, tmpdir, cleanup, main
from cluster import Cluster

T = 400

def freeze_mid_job(c, owners):
    """SIGSTOP owner-3 once some rounds are done; returns the trace length then."""
    deadline = time.time() + 60
    while time.time() < deadline:
        if len(c.trace_rows()) >= 30:
            owners[2].send_signal(signal.SIGSTOP)
            return len(c.trace_rows())
        time.sleep(0.01)
    raise AssertionError('no 30 answers within 60 s')

def test(argv):
    bindir = argv[0]
    d = tmpdir('sync-rounds')
    try:
        # Strict: the round waits for owner-3 and the timeout stops the job.
        c = Cluster(bindir, os.path.join(d, 'strict'), owners=3, rows=2000, features=5, T=T)
        try:
            c.start_learner(['--mode', 'sync1', '--round-timeout', '2', '--query-timeout', '60'])
            owners = [c.start_owner(i, eps='1', rate='50') for i in (1, 2, 3)]
            freeze_mid_job(c, owners)
            try:
                c.learner.wait(timeout=60)
            except Exception:
                check(False, 'strict: learnerd still runs 60 s after owner-3 froze')
            log = open(c.path('learnerd.log')).read()
            check(c.learner.returncode == 1, 'strict: learnerd exited %s' % c.learner.returncode)
            line = [l for l in log.splitlines() if 'round-timeout' in l]
            print('strict:', line[-1] if line else log[-500:])
            check(line and 'missing: owner-3' in line[-1], 'strict: no round-timeout line naming owner-3')
            check(not os.path.exists(c.path('learner', 'model.json')), 'strict: a model was written')
            owners[2].send_signal(signal.SIGCONT)
            # A sync job is not resumed: one line, exit 2.
            r = subprocess.run([c.learnerd, '--owners', ','.join(c.names), '--mode', 'sync1',
                                '--ca', c.path('certs', 'ca.crt'), '--cert', c.path('certs', 'learner.crt'),
                                '--key', c.path('certs', 'learner.key'), '--out', c.path('learner'),
                                '--resume'], capture_output=True, text=True, timeout=30)
            print('resume:', r.stderr.strip())
            check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and
                  'cannot be resumed' in r.stderr, 'resume of a sync job: exit %d %r'
                  % (r.returncode, r.stderr))
        finally:
            c.close()

        # Quorum 2: the job finishes without owner-3.
        c = Cluster(bindir, os.path.join(d, 'quorum'), owners=3, rows=2000, features=5, T=T)
        try:
            c.start_learner(['--mode', 'sync2', '--round-quorum', '2', '--round-timeout', '20'])
            owners = [c.start_owner(i, eps='1', rate='50') for i in (1, 2, 3)]
            freeze_mid_job(c, owners)
            out = c.wait_learner()
            owners[2].send_signal(signal.SIGCONT)
            check('done k=%d' % (T - 1) in out, 'quorum: learnerd did not report done')
            rounds = [l.split(',') for l in open(c.path('learner', 'rounds.csv')).read().splitlines()[1:]]
            check(len(rounds) == T - 1, 'quorum: %d rounds' % len(rounds))
            check(all(int(r[3]) >= 2 for r in rounds), 'quorum: a round closed with < 2 answers')
            check(all(int(r[3]) == 2 for r in rounds[-50:]), 'quorum: late rounds not at 2 answers')
            rows = c.trace_rows()
            n = {name: sum(1 for r in rows if r[2] == name) for name in c.names}
            print('quorum: answers per owner %r; rounds with 3 answers: %d' %
                  (n, sum(1 for r in rounds if r[3] == '3')))
            check(n['owner-3'] < T - 1 and max(n.values()) <= T - 1, 'quorum: answers %r' % n)
            model = json.load(open(c.path('learner', 'model.json')))
            check(model['mode'] == 'sync2', 'quorum: model.json mode %r' % model['mode'])
        finally:
            c.close()
    finally:
        cleanup(d)

main(test)
