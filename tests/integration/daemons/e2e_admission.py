#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance (real daemons on loopback):
- an owner with a certificate from another CA, an unknown identity (a valid
  certificate of the deployment CA for a name the learner does not list), and
  a second connection for an identity that is already connected are all
  refused, while the job completes with the legitimate owners;
- a malformed frame and an oversized frame close that connection with a
  logged reason, and learnerd keeps serving the others.
(A query with NaN or the wrong dimension is refused by ownerd: tests/integration/daemons/ownerd.py;
a NaN answer by learnerd: tests/integration/daemons/learnerd.py.)"""
import os, shutil, struct, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, run, tmpdir, cleanup, main
from cluster import Cluster, tls_client, closed_by_peer, ledger_records

def test(argv):
    bindir = argv[0]
    d = tmpdir('e2e-admission')
    c = Cluster(bindir, d, owners=3, rows=300, features=4, T=400)
    try:
        # Intruders: another CA's owner-1, and an unknown name from our CA.
        run([c.dp, 'certs', '--out', c.path('evil'), '--owners', '1'])
        # The other-CA owner trusts the real learner, so the refusal is the learner's.
        shutil.copy(c.path('certs', 'ca.crt'), c.path('evil', 'ca.crt'))
        run([c.dp, 'certs', '--out', c.path('extra'), '--names', 'intruder',
             '--ca-cert', c.path('certs', 'ca.crt'), '--ca-key', c.path('certs', 'ca.key')])
        c.start_learner()
        # Protocol abuse before owner-1 connects, under owner-1's identity.
        s = tls_client(c, 'owner-1')
        s.sendall(struct.pack('>I', 5) + b'\xff\xff\xff\xff\xff')
        check(closed_by_peer(s), 'learnerd kept a connection that sent a malformed frame')
        s = tls_client(c, 'owner-1')
        s.sendall(struct.pack('>I', 0x7fffffff) + b'\x00' * 16)
        check(closed_by_peer(s), 'learnerd kept a connection that announced an oversized frame')
        # Legitimate owners, slow clocks so the job is still running below.
        owners = [c.start_owner(i, rate='20') for i in (1, 2, 3)]
        c.wait_metric('dpasync_learner_owners_connected', 3)
        # ownerd itself refuses to start with a certificate its CA file does not
        # vouch for, so the other-CA client is a raw TLS client.
        s = tls_client(c, 'owner-1', certdir=c.path('evil'))
        try:
            s.sendall(b'\x00\x00\x00\x00')
            refused = closed_by_peer(s)
        except (OSError,):
            refused = True
        check(refused, 'learnerd accepted a certificate from another CA')
        intruder = c.start_owner(1, name='intruder', certdir=c.path('extra'),
                                 ledger=c.path('extra', 'ledger'))
        dup = c.start_owner(1, ledger=c.path('dup', 'ledger'))
        out = c.wait_learner()
        check('done k=400' in out, 'job did not complete: %r' % out)
        rows = c.trace_rows()
        check(len(rows) == 400 and {r[2] for r in rows} <= {'owner-1', 'owner-2', 'owner-3'},
              'trace has unexpected owners or length')
        for name, p, led in (('intruder', intruder, 'extra'),
                             ('duplicate owner-1', dup, 'dup')):
            n, _ = ledger_records(c.path(led, 'ledger'))
            check(n == 0, '%s answered %d queries' % (name, n))
        log = open(c.path('learnerd.log')).read()
        for needle in ('identity not in owners', 'handshake failed', 'already connected',
                       'not a valid envelope', 'exceeds the maximum'):
            check(needle in log.lower(), 'learnerd log does not mention %r' % needle)
        for i, p in enumerate(owners, 1):
            check(p.wait(timeout=30) == 0, 'legitimate ownerd %d exited %s' % (i, p.returncode))
        print('refused: other-CA, unknown identity, duplicate identity, malformed and oversized frames;'
              ' job completed with %d iterations' % len(rows))
    finally:
        c.close()
        cleanup(d)

main(test)
