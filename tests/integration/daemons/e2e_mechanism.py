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
mechanism an owner refuses.  ownerd's own refusal of a Gaussian Welcome at
delta 0 (the second line of defence) is tests/unit/test_mechanism.c."""
import os, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, tmpdir, cleanup, main
from cluster import Cluster


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
        jobs = [f for f in os.listdir(c.ledger(1)) if f.startswith('job-')]
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


def test(argv):
    refused(argv[0])


main(test)
