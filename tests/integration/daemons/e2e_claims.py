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
counts overflow").

3-6. Every other claim has a bound (docs/protocol.md §5 "Limits on a
   Hello's claims"); learnerd plans T (no --T) with a real owner-1 and a
   liar with owner-2's certificate:
   3. answers_cap = 1000000, above the largest T the job may have: refused
      with Goodbye BAD_CLAIM (the liar exits 3, closed before any Welcome);
      the real owner-2 joins and the job completes.  Before: the liar was
      planned with its cap (in the review, T = 4 for the whole job).
   4. rate = 1e6: planned as 10 times the median rate (logged), so owner-1
      keeps its share (K at least T/11); the liar answers and the job
      completes.  Before: owner-1 got K = 1 (of T = 16).
   5. epsilon = 5e-324, below the floor 1e-3: refused with BAD_CLAIM; the
      real owner-2 joins and the job completes.  Before: learnerd exited 1,
      "plan: no setting gives a finite prediction".
   6. Two liars (owner-1 and owner-2) each claim rate = 1.7e308: planned as
      equal rates, every K_i at most ceil(1.1 T) + 1.  Before: every K was
      9223372036854775808 (a NaN converted to an integer; T = 400, the
      t-max, here, 100000 in the review).
   7. theta_max = 5 (Hello.limits), below the job's theta-max 10: refused
      with BAD_CLAIM, since it would refuse queries inside the job's box."""
import os, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, tmpdir, cleanup, main
from cluster import Cluster

HUGE = str(2 ** 64 - 1)
T = 150


def liar(c, bindir, name, rows, p, extra=()):
    return c.start_fake_owner(name, rows, p, extra, log=c.path('liar-%s.log' % name))


def exit_code(proc, what, timeout=20):
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Fail('%s still connected after %d s: learnerd did not refuse it' % (what, timeout))


def wait_log(c, needle, timeout=20):
    return c.wait_learner_log(needle, timeout)


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


def plan_of(log):
    """T and {owner: K} of the last plan line in learnerd's log."""
    line = [l for l in log.splitlines() if ' plan from=' in l][-1]
    f = dict(kv.split('=', 1) for kv in line.split(' learner: ', 1)[1].split() if '=' in kv)
    return int(f['T']), {o: int(k) for o, k in (e.split(':') for e in f['K'].split(','))}


def planned(bindir, tag):
    """A 2-owner cluster whose learnerd plans T (at most 400)."""
    d = tmpdir('e2e-claims-' + tag)
    c = Cluster(bindir, d, owners=2, rows=300, features=4, T=0)
    c.start_learner(['--t-max', '400'])
    return d, c


def refused_claim(bindir, tag, flags, needle):
    """A liar with owner-2's certificate claims flags; it is refused with a
    Goodbye naming the claim and the real owners then finish the job."""
    d, c = planned(bindir, tag)
    try:
        o1 = c.start_owner(1)
        wait_log(c, 'hello id=owner-1 ')
        a = liar(c, bindir, 'owner-2', '300', 5, flags)
        rc = exit_code(a, 'the %s liar' % tag)
        log = wait_log(c, needle)
        check(rc == 3, 'the %s liar exited %s, not 3 (refused before any Welcome)' % (tag, rc))
        check('training starts' not in log, 'the plan was made with the liar\'s claim')
        lie = open(c.path('liar-owner-2.log')).read()
        check('goodbye code=7' in lie, 'the liar got no Goodbye BAD_CLAIM: %r' % lie[-500:])
        o2 = c.start_owner(2)
        out = c.wait_learner(timeout=120)
        T, K = plan_of(open(c.path('learnerd.log')).read())
        check('done k=%d' % T in out and T > 4, 'job: %r, T = %d' % (out, T))
        for i, p in enumerate((o1, o2), 1):
            check(p.wait(timeout=30) == 0, 'ownerd %d exited %s' % (i, p.returncode))
        print('%s: refused ("%s"), then T = %d, K = %r' % (
            tag, [l for l in log.splitlines() if needle in l][0].split('reason=', 1)[-1][:120],
            T, K))
    finally:
        c.close()
        cleanup(d)


def fast_rate(bindir):
    d, c = planned(bindir, 'rate')
    try:
        o1 = c.start_owner(1)
        wait_log(c, 'hello id=owner-1 ')
        a = liar(c, bindir, 'owner-2', '300', 5, ['--rate', '1e6'])
        log = wait_log(c, 'plan from=hellos')
        T, K = plan_of(log)
        # The liar's rate is planned as at most 10 times owner-1's: owner-1
        # keeps a share of at least 1/11 (K = ceil(1.1 T / 11)).
        check(K['owner-1'] * 11 >= T, 'the rate 1e6 claim took owner-1\'s share: T %d, K %r'
              % (T, K))
        check('rate=1e+06' in log and 'planned as' in log, 'the clamp of the rate is not logged')
        out = c.wait_learner(timeout=120)
        check('done k=%d' % T in out, 'job: %r' % out)
        check(o1.wait(timeout=30) == 0 and a.wait(timeout=30) == 0, 'an owner failed')
        print('rate 1e6: T = %d, K = %r' % (T, K))
    finally:
        c.close()
        cleanup(d)


def huge_rates(bindir):
    d, c = planned(bindir, 'rates')
    try:
        fakes = [liar(c, bindir, 'owner-%d' % i, '300', 5, ['--rate', '1.7e308'])
                 for i in (1, 2)]
        log = wait_log(c, 'plan from=hellos')
        T, K = plan_of(log)
        check(all(k <= int(1.1 * T) + 2 for k in K.values()) and len(set(K.values())) == 1,
              'two rates of 1.7e308: T %d, K %r' % (T, K))
        out = c.wait_learner(timeout=120)
        check('done k=%d' % T in out, 'job: %r' % out)
        for f in fakes:
            check(f.wait(timeout=30) == 0, 'a fake owner exited %s' % f.returncode)
        print('two rates 1.7e308: T = %d, K = %r' % (T, K))
    finally:
        c.close()
        cleanup(d)


def test(argv):
    # Each part on its own: E2E_CLAIMS_PART=1..7 (to show each fails on old code).
    part = os.environ.get('E2E_CLAIMS_PART', '')
    if part in ('', '1'):
        liar_first(argv[0])
    if part in ('', '2'):
        liar_last(argv[0])
    if part in ('', '3'):
        refused_claim(argv[0], 'cap', ['--answers-cap', '1000000'], 'answers_cap 1000000')
    if part in ('', '4'):
        fast_rate(argv[0])
    if part in ('', '5'):
        refused_claim(argv[0], 'epsilon', ['--epsilon', '5e-324'], 'epsilon 4.94066e-324')
    if part in ('', '6'):
        huge_rates(argv[0])
    if part in ('', '7'):
        refused_claim(argv[0], 'theta', ['--theta-max', '5'], 'theta_max 5 is below')

main(test)
