#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance (real learnerd and ownerd on loopback; docs/protocol.md §5,
docs/learnerd.md §3): one owner's claims in its Hello cannot stop or
derail the job.  learnerd runs as users run it, without `features`.

1. A liar with owner-1's certificate says Hello first, claiming
   n_rows = 2^64 - 1 and p = 99; a second liar with owner-2's certificate
   then claims p = 99 with a plausible n_rows and vanishes (killed) before
   the real owner-2 comes.  The first is refused with the reason in the log
   (it exits 3: closed before any Welcome); the real owners 1-3 then join,
   p is the one they agree on and the job completes.
2. Real owners 1 and 2 say Hello, then a liar with owner-3's certificate
   claims n_rows = 2^64 - 1 with the right p, the last Hello the plan waits
   for.  It is refused, learnerd keeps serving, the real owner-3 joins and
   the job completes.

On the code before the fix, (1) took p = 99 from the first Hello and
refused every real owner, and (2) made learnerd exit 1 ("the owners' row
counts overflow")."""
import os, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, tmpdir, cleanup, main
from cluster import Cluster

HUGE = str(2 ** 64 - 1)
T = 150


def liar(c, bindir, name, rows, p):
    fake = os.path.join(bindir, 'tests', 'integration', 'daemons', 'fake_owner')
    k = c.path('certs')
    cmd = [fake, '--learner', '127.0.0.1:%d' % c.port, '--ca', k + '/ca.crt',
           '--cert', '%s/%s.crt' % (k, name), '--key', '%s/%s.key' % (k, name), '--id', name,
           '--p', str(p), '--rows', rows, '--grad-a', '0', '--grad-c', ','.join(['0'] * p)]
    log = open(c.path('liar-%s.log' % name), 'a')
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
    c.procs.append(proc)
    return proc


def exit_code(proc, what, timeout=20):
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Fail('%s still connected after %d s: learnerd did not refuse it' % (what, timeout))


def wait_log(c, needle, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        log = open(c.path('learnerd.log')).read()
        if needle in log:
            return log
        check(c.learner.poll() is None, 'learnerd exited %s waiting for %r:\n%s'
              % (c.learner.returncode, needle, log[-2000:]))
        time.sleep(0.05)
    raise Fail('learnerd log has no %r after %d s:\n%s' % (needle, timeout, log[-2000:]))


def finish(c, owners):
    out = c.wait_learner(timeout=120)
    check('done k=%d' % T in out, 'job did not complete: %r' % out)
    for i, p in enumerate(owners, 1):
        check(p.wait(timeout=30) == 0, 'ownerd %d exited %s' % (i, p.returncode))
    rows = c.trace_rows()
    check(len(rows) == T and {r[2] for r in rows} <= {'owner-1', 'owner-2', 'owner-3'},
          'trace has unexpected owners or length')


def liar_first(bindir):
    d = tmpdir('e2e-claims-1')
    c = Cluster(bindir, d, owners=3, rows=300, features=4, T=T)   # p = 5 with --bias
    try:
        c.start_learner()
        a = liar(c, bindir, 'owner-1', HUGE, 99)
        rc = exit_code(a, 'the n_rows liar')
        check(rc == 3, 'the n_rows liar exited %s, not 3 (refused before any Welcome)' % rc)
        wait_log(c, 'exceeds the maximum')
        b = liar(c, bindir, 'owner-2', '300', 99)
        wait_log(c, 'hello id=owner-2 n_rows=300 p=99')
        b.kill()
        b.wait()
        owners = [c.start_owner(i) for i in (1, 2, 3)]
        log = wait_log(c, 'training starts')
        check('p=5 from the Hellos of all 3 owners' in log, 'p not agreed by the owners')
        finish(c, owners)
        print('liar first: n_rows 2^64-1 refused, p=99 forgotten, p=5 agreed, job done')
    finally:
        c.close()
        cleanup(d)


def liar_last(bindir):
    d = tmpdir('e2e-claims-2')
    c = Cluster(bindir, d, owners=3, rows=300, features=4, T=T)
    try:
        c.start_learner()
        owners = [c.start_owner(i) for i in (1, 2)]
        wait_log(c, 'hello id=owner-1 ')
        wait_log(c, 'hello id=owner-2 ')
        a = liar(c, bindir, 'owner-3', HUGE, 5)
        rc = exit_code(a, 'the n_rows liar')
        check(rc == 3, 'the n_rows liar exited %s, not 3' % rc)
        log = wait_log(c, 'exceeds the maximum')
        check('training starts' not in log, 'the plan was made with the liar\'s n_rows')
        owners.append(c.start_owner(3))
        finish(c, owners)
        print('liar last: n_rows 2^64-1 refused as the last Hello, job done')
    finally:
        c.close()
        cleanup(d)


def test(argv):
    # Each part on its own: E2E_CLAIMS_PART=1 or 2 (to show each fails on old code).
    part = os.environ.get('E2E_CLAIMS_PART', '')
    if part in ('', '1'):
        liar_first(argv[0])
    if part in ('', '2'):
        liar_last(argv[0])

main(test)
