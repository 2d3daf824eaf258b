#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The ledger directory's lock cannot be lost while a daemon runs (issue 22
finding 3, docs/ledger.md §8 "Layout", docs/reliability.md §7.2).

The review's attack: ownerd A runs on `led`; after `rm led/lock` ownerd B
started on the same directory, and two learners' jobs each spent the
whole lifetime budget (`dpasync ledger led` reported 2 against a cap of 1).
Here, real learnerd and ownerd on loopback:

- job J0 spends 0.25 of owner-1's lifetime cap of 1 (recorded in `led`);
- ownerd A (owner-1, --epsilon 1 --answers-cap 4) runs on `led` for job J1
  of learner L1, which waits for owner-2 before it starts;
- every file of `led` (format, the job ledger, lifetime, lock) is removed
  in turn, and then put back as a new file with the same bytes; after each
  step ownerd B (owner-1 for job J2 of learner L2, the same flags) is
  started on `led`: it must exit 1 naming the directory "in use by another
  process", every time; so must B on a symbolic link to `led` (the old
  ownerd started on every one of them once `lock` was gone);
- meanwhile `dpasync ledger led` and `ownerd --check-config` on `led`
  answer at once (they take no lock: never blocked, never blocking);
- then both jobs run, J1 with A and J2 with owner-2 alone (no B): A's
  Hello says the 0.75 the cap leaves, J1's ledger is capped at it and its
  4 answers of 0.1875 are given with no refusal (docs/ledger.md §8 "A new
  job's cap is what is left"), and `dpasync ledger led` says lifetime
  spent 1 of a cap of 1, jobs J0 and J1 only;
- after J1, with A waiting for its next job, the same removals of J1's
  ledger still refuse B."""
import itertools, json, os, shutil, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, run, tmpdir, cleanup, main
from cluster import Cluster

T = 60
STARTS = itertools.count(1)


def owner1(c, led, port, extra, log, once=False):
    cmd = [c.ownerd, '--learner', '127.0.0.1:%d' % port, '--ca', c.certs() + '/ca.crt',
           '--cert', c.certs() + '/owner-1.crt', '--key', c.certs() + '/owner-1.key',
           '--data', c.data(1), '--bias', '--ledger', led,
           '--model-out', log + '.model.json', '--rate', '50'] + list(extra)
    if once:
        cmd.append('--once')
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(log, 'a'), text=True)
    c.procs.append(p)
    return p


def wait_log(path, needle, proc=None, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path) and needle in open(path).read():
            return
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.05)
    raise Fail('%r not in %s:\n%s' % (needle, path, open(path).read()[-2000:] if os.path.exists(path)
                                        else '(no log)'))


def ledger(c, led):
    t0 = time.time()
    info = json.loads(run([c.dp, 'ledger', led], timeout=20).stdout)
    return info, time.time() - t0


def refused(c, led, port, what):
    """ownerd B on `led` must refuse to start: exit 1, 'in use'."""
    log = c.path('B-%d.log' % next(STARTS))
    p = owner1(c, led, port, ['--epsilon', '1', '--answers-cap', '4'], log, once=True)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        raise Fail('%s: ownerd B started on the directory that ownerd A holds:\n%s'
                   % (what, open(log).read()[-2000:]))
    text = open(log).read()
    check(p.returncode == 1 and 'in use by another process' in text,
          '%s: ownerd B exit %s (want 1, "in use by another process"):\n%s'
          % (what, p.returncode, text[-2000:]))


def shuffle(c, led, port, names, tag):
    """Each file removed, B refused; put back as a new file, B refused."""
    n = 0
    for f in names:
        path = os.path.join(led, f)
        keep = c.path('keep-' + f.replace('/', '_'))
        shutil.copyfile(path, keep)
        os.unlink(path)
        n += 1
        refused(c, led, port, '%s: %s removed' % (tag, f))
        shutil.copyfile(keep, path)
        os.chmod(path, 0o600)
        n += 1
        refused(c, led, port, '%s: %s put back as a new file' % (tag, f))
    return n


def test(argv):
    d = tmpdir('ledgerlock')
    c1 = Cluster(argv[0], os.path.join(d, 'c1'), owners=2, rows=300, features=3, T=T)
    c2 = Cluster(argv[0], os.path.join(d, 'c2'), owners=2, T=T, shared=c1.d)
    c0 = Cluster(argv[0], os.path.join(d, 'c0'), owners=1, T=4, shared=c1.d)
    led = os.path.join(d, 'led')
    ok = False
    try:
        # J0: owner-1's directory records a lifetime cap of 1 and spends
        # 0.25 (4 answers of 0.0625, exact in binary and in nano-epsilon).
        c0.start_learner(['--job', 'J0'])
        o = owner1(c0, led, c0.port, ['--epsilon', '0.25', '--answers-cap', '4',
                                      '--lifetime-epsilon', '1'], c0.path('o0.log'), once=True)
        c0.wait_learner()
        o.wait(timeout=30)
        info, _ = ledger(c1, led)
        s0 = info['lifetime_epsilon_spent']
        check(info['lifetime_epsilon_cap'] == 1 and s0 == 0.25 and info['jobs_count'] == 1,
              'after J0: %r' % info)

        # A for J1 (L1 waits for owner-2), B's learner L2 for J2.
        c1.start_learner(['--job', 'J1'])
        c2.start_learner(['--job', 'J2'])
        alog = c1.path('A.log')
        a = owner1(c1, led, c1.port, ['--epsilon', '1', '--answers-cap', '4'], alog)
        wait_log(c1.path('learnerd.log'), 'hello id=owner-1', a)
        names = sorted(f for f in os.listdir(led) if '.tmp' not in f)
        jobs = sorted(os.listdir(os.path.join(led, 'jobs')))
        check(names == ['format', 'jobs', 'lifetime', 'lock'] and jobs == ['J0.ledger'],
              'files of led: %r, of led/jobs: %r' % (names, jobs))
        n = shuffle(c1, led, c2.port, ['format', 'jobs/J0.ledger', 'lifetime', 'lock'], 'A unbound')
        alias = os.path.join(d, 'alias')
        os.symlink(led, alias)
        refused(c1, alias, c2.port, 'a symbolic link to the directory')
        check(a.poll() is None, 'ownerd A exited:\n' + open(alog).read()[-2000:])

        # Readers take no lock: at once, while A holds the directory.
        info, secs = ledger(c1, led)
        check(secs < 5 and info['lifetime_epsilon_cap'] == 1 and info['jobs_count'] == 1,
              'dpasync ledger while A runs (%.1f s): %r' % (secs, info))
        t0 = time.time()
        p = run([c1.ownerd, '--learner', '127.0.0.1:1', '--ca', c1.certs() + '/ca.crt',
                 '--cert', c1.certs() + '/owner-1.crt', '--key', c1.certs() + '/owner-1.key',
                 '--data', c1.data(1), '--bias', '--ledger', led, '--check-config'], timeout=30)
        line = p.stdout.strip().splitlines()[-1]
        check(time.time() - t0 < 10 and line.startswith('# ledger ') and
              'lifetime cap 1 (recorded in the directory), spent %.9g, left %.9g' % (s0, 1 - s0)
              in line, 'ownerd --check-config while A runs: %r' % line)

        # Both jobs: J1 with A, J2 with owner-2 alone.
        c1.start_owner(2, rate='50', once=True)
        c2.start_owner(2, rate='50', once=True)
        out = c1.wait_learner(timeout=120)
        check('done k=%d' % T in out, 'J1: %r' % out)
        llog = open(c1.path('learnerd.log')).read()
        check('hello id=owner-1 ' in llog and ' epsilon_left=0.75 ' in llog and
              ' refused k=' not in llog,
              'owner-1 did not say 0.75 left, or refused a query:\n' + llog[-2000:])
        info, _ = ledger(c1, led)
        jobs = {j['job']: j for j in info['jobs']}
        check(set(jobs) == {'J0', 'J1'} and jobs['J1']['answers'] == 4 and
              abs(info['lifetime_epsilon_spent'] - 1.0) < 1e-9 and
              info['lifetime_epsilon_left'] == 0 and
              info['lifetime_epsilon_spent'] <= info['lifetime_epsilon_cap'],
              'after J1 and J2: lifetime over the cap or a job of B: %r' % info)
        print('J0 spent %.9g; J1 %d answers (%.9g); lifetime %.9g of cap %g; %d starts of B '
              'refused' % (s0, jobs['J1']['answers'], jobs['J1']['epsilon_spent'],
                           info['lifetime_epsilon_spent'], info['lifetime_epsilon_cap'], n + 1))

        # A waits for its next job: J1's ledger too.
        check(a.poll() is None, 'ownerd A exited after J1:\n' + open(alog).read()[-2000:])
        m = shuffle(c1, led, c2.port, ['jobs/J1.ledger', 'lock'], 'A idle')
        info2, _ = ledger(c1, led)
        check(info2['lifetime_epsilon_spent'] == info['lifetime_epsilon_spent'],
              'the figures changed: %r' % info2)
        print('after J1: %d more starts of B refused' % m)
        ok = True
    finally:
        for c in (c0, c1, c2):
            c.close()
        cleanup(d, ok)


if __name__ == '__main__':
    main(test)
