#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance of the reserve-ahead ledger (docs/ledger.md §9) with real
daemons on loopback: owner-1 runs a test-only ownerd (ownerd-crashpoints)
that SIGKILLs itself at one point of the answer cycle -- just before or
after the Nth ledger fdatasync, just before or after the Nth Answer leaves
-- is restarted with the production ownerd, and the job completes.  The
points cover the first (uncovered) answer, the reservation alone after it,
a covered answer and its record; two cases also cut the final record
before the restart, as a power loss may when that record was not synced.
After each job:
- every ledger verifies, stays within its caps, and every trace row (an
  answer learnerd applied) is one of its owner's records (check_invariants);
- owner-1's durable total covers the answers learnerd applied from it:
  total >= share * applied (the invariant of §9);
- the crash lost at most one share: answers counted in the ledger, minus
  answers applied, minus the reservation still held at the job's end (the
  final record reserves: flags 3 or 5), is 0 or 1;
- ownerd with --no-reserve-ahead writes one flags-0 record per answer (the
  old protocol)."""
import os, struct, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, tmpdir, cleanup, main
from cluster import Cluster, ledger_entries, check_invariants, job_file

T = 80
# (point, n, cut the final record before the restart)
CASES = [
    ('sync-before', 1, False),   # the first answer's record written, not synced
    ('sync-after', 1, False),    # ... synced, the answer not sent: its share lost
    ('send-after', 1, False),    # sent; no reservation yet
    ('sync-before', 2, True),    # the reservation alone written, not synced: cut
    ('sync-after', 2, False),    # the reservation synced, never used: lost
    ('send-before', 2, False),   # a covered answer computed, not sent: its share lost
    ('send-after', 2, False),    # a covered answer sent, its record not written
    ('sync-before', 3, True),    # its record written, not synced: cut
    ('sync-after', 3, False),    # its record and the next share synced
]

def cut_final(path):
    """Drop the final record, as a power loss may drop an unsynced one."""
    f = job_file(path)
    n = os.path.getsize(f)
    check(n >= 256 + 64, '%s: no record to cut' % f)
    with open(f, 'r+b') as fh:
        fh.truncate(n - 64)

def one(bindir, d, shared, point, n, cut):
    c = Cluster(bindir, d, owners=2, rows=100, features=3, T=T, shared=shared)
    try:
        c.start_learner()
        plain = c.ownerd
        c.ownerd = os.path.join(bindir, 'tests', 'integration', 'daemons', 'ownerd-crashpoints')
        env = dict(os.environ, DP_CRASH_AT='%s:%d' % (point, n))
        o1 = c.start_owner(1, rate='40', env=env)
        c.ownerd = plain
        c.start_owner(2, rate='40')
        try:
            rc = o1.wait(timeout=60)
        except Exception:
            raise Fail('%s:%d: the crash-point ownerd never reached its point' % (point, n))
        log = open(c.ledger(1) + '.log').read()
        check(rc == -9 and 'SIGKILL at %s:%d' % (point, n) in log,
              '%s:%d: ownerd ended with %s, not at its point' % (point, n, rc))
        if cut:
            cut_final(c.ledger(1))
        c.start_owner(1, rate='40')
        out = c.wait_learner(timeout=120)
        check('done k=%d' % T in out, '%s:%d: job did not complete' % (point, n))
        for p in c.procs[1:]:
            p.wait(timeout=30)
        check_invariants(c)
        recs, _ = ledger_entries(c.ledger(1))
        share = recs[0]['charge']
        check(recs[0]['flags'] == 0 and all(r['charge'] in (0, share, 2 * share) for r in recs),
              '%s:%d: charges are not whole shares: %s' % (point, n, recs[:4]))
        applied = sum(1 for r in c.trace_rows() if r[2] == 'owner-1')
        count, total = recs[-1]['count'], recs[-1]['total']
        check(total >= share * applied, '%s:%d: total %d < %d applied answers of %d' % (
            point, n, total, applied, share))
        held = recs[-1]['flags'] & 1
        lost = count - applied - held
        check(0 <= lost <= 1, '%s:%d: %d answers counted, %d applied, %d held at the end: %d '
              'shares lost to one crash' % (point, n, count, applied, held, lost))
        flags = sorted({r['flags'] for r in recs})
        print('%-11s %d%s: owner-1 %d answers applied, %d counted, %d held at the end, %d lost '
              'to the kill; %d records, flags %s' % (point, n, ' cut' if cut else '', applied,
                                                     count, held, lost, len(recs), flags))
        return flags
    finally:
        c.close()

def test(argv):
    bindir = argv[0]
    d = tmpdir('e2e-reserve')
    try:
        base = Cluster(bindir, os.path.join(d, 'base'), owners=2, rows=100, features=3, T=T)
        seen = set()
        for i, (point, n, cut) in enumerate(CASES):
            seen.update(one(bindir, os.path.join(d, 'case-%d' % i), base.d, point, n, cut))
        # The cycle of §9 was exercised: uncovered (0), covered reserving (3),
        # reservations alone (5).
        check({0, 3, 5} <= seen, 'record kinds seen: %s' % sorted(seen))

        # The old protocol on request: one synced, flags-0 record per answer.
        c = Cluster(bindir, os.path.join(d, 'plain'), owners=2, rows=100, features=3, T=T,
                    shared=base.d)
        try:
            c.start_learner()
            c.start_owner(1, rate='40', extra=['--no-reserve-ahead'])
            c.start_owner(2, rate='40')
            c.wait_learner(timeout=120)
            for p in c.procs[1:]:
                p.wait(timeout=30)
            check_invariants(c)
            recs, _ = ledger_entries(c.ledger(1))
            applied = sum(1 for r in c.trace_rows() if r[2] == 'owner-1')
            check(recs and all(r['flags'] == 0 for r in recs) and len(recs) == applied,
                  '--no-reserve-ahead: %d records for %d answers, flags %s' % (
                      len(recs), applied, sorted({r['flags'] for r in recs})))
            print('--no-reserve-ahead: %d answers, %d records, all flags 0' % (applied, len(recs)))
        finally:
            c.close()
    finally:
        os.environ.get('KEEP') or cleanup(d)

main(test)
