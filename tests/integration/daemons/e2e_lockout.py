#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance (real daemons on loopback; docs/protocol.md §6 "Admission"):
a stranger without a certificate cannot lock the owners out.

While 1,000 idle TCP connections are held open to learnerd from this
process (127.0.0.1, like the owners) and every one that learnerd closes is
opened again at once, as an attacker would, three real ownerd start one
after the other; each must complete Hello (its "hello id=..." line in
learnerd's log) within 2 s of being started, and the job must complete.

The 2 s bound is the issue's own; an ownerd on loopback joins in tens of
milliseconds without the flood, so it is a wide margin (the join times are
printed).  Without the admission limits the strangers fill learnerd's
connection cap and every owner is refused until it gives up or the
strangers do."""
import os, resource, selectors, socket, sys, threading, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, tmpdir, cleanup, main
from cluster import Cluster

# E2E_LOCKOUT_STRANGERS=0 measures the join time without a flood.
STRANGERS = int(os.environ.get('E2E_LOCKOUT_STRANGERS', '1000'))
JOIN_LIMIT = 2.0      # seconds from starting an ownerd to its Hello in learnerd's log


class Flood:
    """STRANGERS idle TCP connections to port, each reopened when closed."""

    def __init__(self, port):
        self.port = port
        self.sel = selectors.DefaultSelector()
        self.stop = threading.Event()
        self.opened = self.dropped = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def open_one(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex(('127.0.0.1', self.port))
        self.sel.register(s, selectors.EVENT_READ)
        self.opened += 1

    def run(self):
        for _ in range(STRANGERS):
            self.open_one()
        while not self.stop.is_set():
            for key, _ in self.sel.select(timeout=0.1):
                s = key.fileobj
                try:
                    data = s.recv(4096)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b''
                if data:
                    continue
                # Closed by learnerd (or refused): open another one.
                self.sel.unregister(s)
                s.close()
                self.dropped += 1
                self.open_one()
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()

    def start(self):
        self.thread.start()

    def close(self):
        self.stop.set()
        self.thread.join(timeout=10)


def hello_seen(log_path, name):
    with open(log_path) as f:
        return ('hello id=%s ' % name) in f.read()


def test(argv):
    bindir = argv[0]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 4096) if hard != resource.RLIM_INFINITY else 4096
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    d = tmpdir('e2e-lockout')
    c = Cluster(bindir, d, owners=3, rows=300, features=4, T=200)
    flood = None
    try:
        c.start_learner()
        flood = Flood(c.port)
        flood.start()
        # The flood is in place: every stranger has been offered to learnerd.
        time.sleep(1.5)
        check(c.learner.poll() is None, 'learnerd exited under the flood')
        joins = []
        owners = []
        for i in (1, 2, 3):
            t0 = time.monotonic()
            owners.append(c.start_owner(i))
            while not hello_seen(c.path('learnerd.log'), 'owner-%d' % i):
                if time.monotonic() - t0 > JOIN_LIMIT:
                    raise Fail('owner-%d did not join within %.1f s of starting while %d '
                               'strangers were connected (%d reopened so far)'
                               % (i, JOIN_LIMIT, STRANGERS, flood.dropped))
                time.sleep(0.01)
            joins.append(time.monotonic() - t0)
        pending = c.metric('dpasync_learner_connections_pending')
        evicted = c.metric('dpasync_learner_connections_evicted_total')
        out = c.wait_learner(timeout=120)
        check('done k=200' in out, 'job did not complete under the flood: %r' % out)
        for i, p in enumerate(owners, 1):
            check(p.wait(timeout=30) == 0, 'ownerd %d exited %s' % (i, p.returncode))
        check(evicted > 0 or STRANGERS == 0,
              'no stranger was ever evicted: the flood did not reach learnerd')
        print('joined in %s s under a flood of %d strangers (%d connections opened, %d closed '
              'or reset by learnerd; pending=%d evicted=%d at the last join); job completed'
              % (', '.join('%.3f' % j for j in joins), STRANGERS, flood.opened, flood.dropped,
                 pending, evicted))
    finally:
        if flood is not None:
            flood.close()
        c.close()
        cleanup(d)

main(test)
