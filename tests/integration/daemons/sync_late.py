#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""No charged answer thrown away with --round-quorum (docs/learnerd.md §9
"Late answers"): real learnerd and 3 ownerd on loopback, sync2, T = 150,
epsilon = 1, --round-quorum 2; owner-3 is stopped (SIGSTOP) for 0.2 s
every 0.4 s, so that many rounds close without it and its answers arrive
after their round.  The job completes (exit 0, model.json), no answer is
`dropped` (but one still out when the last round closed), some of owner-3's trace rows are stale (staleness > 0), and
for every owner the answers that left it (its ledger's answer records,
docs/ledger.md §9) are its trace rows, but for at most one query still
out when the job ended; the ledgers keep their caps (check_invariants).
On the code before: a late answer was logged `dropped`, charged and not
used, and its owner asked again in the current round."""
import os, signal, sys, threading, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, tmpdir, cleanup, main
from cluster import Cluster, ledger_entries, check_invariants

T = 150

def stutter(p, stop):
    """SIGSTOP p for 0.2 s every 0.4 s until stop is set."""
    while not stop.wait(0.2):
        if p.poll() is not None:
            return
        p.send_signal(signal.SIGSTOP)
        time.sleep(0.2)
        p.send_signal(signal.SIGCONT)

def test(argv):
    bindir = argv[0]
    d = tmpdir('sync-late')
    c = Cluster(bindir, d, owners=3, rows=2000, features=5, T=T)
    stop = threading.Event()
    try:
        c.start_learner(['--mode', 'sync2', '--round-quorum', '2', '--round-timeout', '20'])
        owners = [c.start_owner(i, eps='1', rate='50') for i in (1, 2, 3)]
        c.wait_rows(10)
        th = threading.Thread(target=stutter, args=(owners[2], stop))
        th.start()
        try:
            out = c.wait_learner(timeout=300)
        finally:
            stop.set()
            th.join()
            if owners[2].poll() is None:
                owners[2].send_signal(signal.SIGCONT)
        check('done k=%d' % (T - 1) in out, 'learnerd did not report done: %r' % out)
        for i, p in enumerate(owners, 1):
            check(p.wait(timeout=30) == 0, 'ownerd %d exited %s' % (i, p.returncode))
        log = open(c.path('learnerd.log')).read()
        # Only an answer still out when the last round closed may be
        # dropped (docs/learnerd.md §9 "Late answers").
        dropped = [l for l in log.splitlines() if 'dropped' in l and 'rounds are done' not in l]
        check(not dropped, 'answers dropped: %d, e.g. %r' % (len(dropped), dropped[:2]))
        check(os.path.exists(c.path('learner', 'model.json')), 'no model.json')
        rows = c.trace_rows()
        stale = sum(1 for r in rows if r[2] == 'owner-3' and int(r[6]) > 0)
        check(stale > 0, 'no stale answer of owner-3 was used: the test did not stutter it')
        check_invariants(c, complete=False)
        left = {}
        for i, name in enumerate(c.names, 1):
            recs, _ = ledger_entries(c.ledger(i))
            left[name] = sum(1 for r in recs if r['flags'] != 5)
            used = sum(1 for r in rows if r[2] == name)
            check(0 <= left[name] - used <= 1, '%s: %d answers left its ledger, %d used'
                  % (name, left[name], used))
        rounds = open(c.path('learner', 'rounds.csv')).read().splitlines()[1:]
        print('done; %d rounds, %d with 3 answers; owner-3: %d stale answers used; answers '
              'that left each owner %r; 0 dropped' % (len(rounds), sum(
                  1 for l in rounds if l.split(',')[3] == '3'), stale, left))
    finally:
        stop.set()
        c.close()
        cleanup(d)

main(test)
