#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance (real daemons on loopback; docs/protocol.md §6 "Admission"):
every owner comes back after a learner restart, with learnerd's default
flags.

200 real ownerd (each its own process and ledger directory, all from
127.0.0.1 as behind one NAT) join a learnerd job; once training runs,
learnerd is killed with -9 and restarted with --resume on the same port.
So that the owners come back at once, as after a learner's restart that
they all notice together, they are stopped (SIGSTOP) across the kill and
the restart and continued together: each sees its connection gone and
reconnects within its first backoff step (0-0.2 s, docs/ownerd.md
"Reconnection").  Then:
- all 200 are connected again (Hello said: learnerd's
  dpasync_learner_owners_connected back at 200) within REJOIN_LIMIT;
- the restarted learnerd evicted and refused none of their connections
  (dpasync_learner_connections_evicted_total and _refused_total 0): the
  defaults admit a storm of every owner from one address;
- the job completes and every ownerd exits 0.

With the former defaults (64 pending, 16 per address) the storm's newer
handshakes evicted the older ones of the same address, and the owners cut
off retried on a growing backoff.  The rejoin time is printed; it is a
benchmark figure (tests/bench/bench_rejoin.py, docs/scale.md), the
limit only a bound."""
import os, signal, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, tmpdir, cleanup, main
from cluster import Cluster

OWNERS = int(os.environ.get('E2E_REJOIN_OWNERS', '200'))
T = 2000             # 11 answers per owner at most (K_i = ceil(T/N * 1.1))
KILL_AT = 200        # trace rows before the kill: about one answer per owner
REJOIN_LIMIT = 60.0  # seconds from the restart to every owner's Hello


def connected(c):
    try:
        return c.metric('dpasync_learner_owners_connected')
    except OSError:
        return -1


def wait_connected(c, n, limit, what):
    t0 = time.monotonic()
    while True:
        got = connected(c)
        if got >= n:
            return time.monotonic() - t0
        check(c.learner.poll() is None, 'learnerd exited while waiting for %s' % what)
        if time.monotonic() - t0 > limit:
            raise Fail('%s: %d of %d owners connected after %.0f s' % (what, got, n, limit))
        time.sleep(0.1)


def test(argv):
    bindir = argv[0]
    d = tmpdir('e2e-rejoin')
    c = Cluster(bindir, d, owners=OWNERS, rows=40, features=3, T=T)
    t_start = time.monotonic()
    try:
        c.start_learner(['--checkpoint-every', '50'])
        owners = [c.start_owner(i, rate='20') for i in range(1, OWNERS + 1)]
        first = wait_connected(c, OWNERS, 120, 'first join')
        c.wait_rows(KILL_AT, timeout=120)
        for p in owners:
            p.send_signal(signal.SIGSTOP)
        c.learner.send_signal(signal.SIGKILL)
        c.learner.wait()
        killed_at = len(c.trace_rows())
        c.start_learner(['--checkpoint-every', '50'], resume=True)
        for p in owners:
            p.send_signal(signal.SIGCONT)
        rejoin = wait_connected(c, OWNERS, REJOIN_LIMIT, 'rejoin after kill -9 and --resume')
        evicted = c.metric('dpasync_learner_connections_evicted_total')
        refused = c.metric('dpasync_learner_connections_refused_total')
        check(evicted == 0 and refused == 0,
              'the restarted learnerd cut the owners\' storm: %d connections evicted, %d '
              'refused while they rejoined' % (evicted, refused))
        out = c.wait_learner(timeout=180)
        check('done k=%d' % T in out, 'resumed learnerd did not complete: %r' % out[-300:])
        bad = [i for i, p in enumerate(owners, 1) if p.wait(timeout=60) != 0]
        check(not bad, 'ownerd exited non-zero: %s' % bad[:10])
        ks = [int(r[0]) for r in c.trace_rows()]
        check(ks == list(range(1, T + 1)), 'trace after resume is not k = 1..T')
        print('%d ownerd: first join %.1f s; learnerd killed at k=%d, all %d back %.1f s '
              'after the restart, none evicted or refused; job completed, T=%d; %.0f s in all'
              % (OWNERS, first, killed_at, OWNERS, rejoin, T, time.monotonic() - t_start))
    finally:
        c.close()
        cleanup(d)

main(test)
