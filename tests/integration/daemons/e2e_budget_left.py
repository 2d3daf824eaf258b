#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Plan on the budget that is left (docs/planner.md §1 "Budget left",
docs/protocol.md §5 "Budget left and bounds"), real learnerd and ownerd on
loopback:

1. A second job with a partly spent lifetime budget.  owner-3 (bank-c)
   spends 0.9 of its lifetime 1 in a first job; then owner-1 and owner-2
   (lifetime 2) and owner-3 (--epsilon 1, lifetime 1: 0.1 left) start a
   job whose T is planned.  owner-3's Hello says what it has left, the plan
   gives it a K_i for 0.1, and the job completes with every owner inside
   its budget and 0 refusals.  On the code before: owner-3's Hello said
   epsilon=1, the plan gave it K = T/3 * 1.1, it refused "lifetime budget
   spent" after 0.1's worth of answers and learnerd stopped with "every
   owner has exhausted its budget" (exit 1, no model).
2. An owner whose lifetime is spent (owner-3 spent 0.999999999 of 1 in a
   first job: three answers of 0.333333333) is left out of the next job
   with one log line; with --once it exits 2 at once (Goodbye
   BUDGET_SPENT); the job completes with owner-1 and owner-2 and 0
   refusals.  On the code before: owner-3 was planned, logged "staying
   connected (refusing)", learnerd stopped at k=44 of T=60 and owner-3
   kept reconnecting.

Each part alone: E2E_BUDGET_PART=1 or 2."""
import json, os, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, run, tmpdir, cleanup, main
from cluster import Cluster


def learner(c, tag, owners, extra):
    """learnerd for `owners` writing to out/TAG, logging to TAG.log; returns
    (process, port)."""
    pf = c.path(tag + '.ports')
    k = c.certs()
    cmd = [c.learnerd, '--listen', '127.0.0.1:0', '--port-file', pf, '--ca', k + '/ca.crt',
           '--cert', k + '/learner.crt', '--key', k + '/learner.key', '--owners', owners,
           '--bias', '--out', c.path(tag), '--query-timeout', '5',
           '--idle-timeout', '60'] + list(extra)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(c.path(tag + '.log'), 'a'),
                         text=True)
    c.procs.append(p)
    for _ in range(400):
        if os.path.exists(pf):
            ports = dict(l.split('=') for l in open(pf).read().split())
            c.port = int(ports['tls'])
            return p
        if p.poll() is not None:
            raise Fail('learnerd %s exited at start:\n%s' % (tag, log(c, tag)))
        time.sleep(0.05)
    raise Fail('learnerd %s wrote no port file' % tag)


def log(c, tag):
    p = c.path(tag + '.log')
    return open(p).read() if os.path.exists(p) else ''


def owner_log(c, i):
    p = c.ledger(i) + '.log'
    return open(p).read() if os.path.exists(p) else ''


def finish(c, p, tag, timeout=120):
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Fail('learnerd %s did not finish:\n%s' % (tag, log(c, tag)[-3000:]))
    check(p.returncode == 0, 'learnerd %s exited %d:\n%s' % (tag, p.returncode,
                                                             log(c, tag)[-3000:]))
    return out


def ledger(c, i):
    return json.loads(run([c.dp, 'ledger', c.ledger(i)]).stdout)


def no_refusals(c, tag):
    refused = [l for l in log(c, tag).splitlines() if ' refused k=' in l]
    check(not refused, '%s: an admitted owner refused a query (a defect):\n%s'
          % (tag, '\n'.join(refused[:5])))


def spend_first(c, extra, T):
    """owner-3 alone in a first job of T iterations, with its ownerd flags."""
    l0 = learner(c, 'first', 'owner-3', ['--T', str(T)])
    o3 = c.start_owner(3, extra=extra)
    finish(c, l0, 'first')
    check(o3.wait(timeout=30) == 0, 'owner-3 exited %s after the first job' % o3.returncode)
    return ledger(c, 3)


def partial(bindir):
    d = tmpdir('budget-left-1')
    c = Cluster(bindir, d, owners=3, rows=400, features=4)
    ok = False
    try:
        info = spend_first(c, ['--epsilon', '0.9', '--lifetime-epsilon', '1',
                               '--answers-cap', '30'], 30)
        check(abs(info['lifetime_epsilon_spent'] - 0.9) < 1e-9, 'first job: %r' % info)
        l1 = learner(c, 'second', 'owner-1,owner-2,owner-3', ['--t-max', '300'])
        owners = [c.start_owner(i, extra=['--lifetime-epsilon', '2']) for i in (1, 2)]
        owners.append(c.start_owner(3, extra=['--lifetime-epsilon', '1']))
        out = finish(c, l1, 'second')
        check('done k=' in out, 'the second job did not complete: %r' % out)
        for i, p in enumerate(owners, 1):
            check(p.wait(timeout=30) == 0, 'ownerd %d exited %s:\n%s'
                  % (i, p.returncode, owner_log(c, i)[-2000:]))
        no_refusals(c, 'second')
        check(os.path.exists(c.path('second', 'model.json')), 'no model.json')
        job2 = json.load(open(c.path('second', 'model.json')))['job']
        for i in (1, 2, 3):
            info = ledger(c, i)
            check(info['lifetime_epsilon_spent'] <= (1 if i == 3 else 2) + 1e-9,
                  'owner-%d spent %r over its lifetime' % (i, info['lifetime_epsilon_spent']))
        last3 = [j for j in ledger(c, 3)['jobs'] if j['job'] == job2]
        check(len(last3) == 1 and last3[0]['epsilon_spent'] <= 0.1 + 1e-9 and
              last3[0]['answers'] > 0, 'owner-3 in the second job %s: %r' % (job2, ledger(c, 3)))
        last3 = last3[0]
        plan = [l for l in log(c, 'second').splitlines() if ' plan from=hellos ' in l]
        check(plan, 'no plan line')
        print('second job: %s; owner-3 spent %.9g of its 0.1 left in %d answers; 0 refusals'
              % (plan[-1].split(' learner: ', 1)[-1][:160], last3['epsilon_spent'],
                 last3['answers']))
        ok = True
    finally:
        c.close()
        cleanup(d, ok)


def spent(bindir):
    d = tmpdir('budget-left-2')
    c = Cluster(bindir, d, owners=3, rows=400, features=4)
    ok = False
    try:
        # Three answers of 0.333333333: 1 nano-epsilon of the lifetime is left.
        info = spend_first(c, ['--epsilon', '1', '--answers-cap', '3'], 3)
        check(1 - 2e-9 < info['lifetime_epsilon_spent'] < 1,
              'first job: %r' % info['lifetime_epsilon_spent'])
        T = 60
        l1 = learner(c, 'next', 'owner-1,owner-2,owner-3', ['--T', str(T)])
        seen = len(owner_log(c, 3))   # the first job's lines
        t0 = time.time()
        o3 = c.start_owner(3)
        try:
            rc = o3.wait(timeout=15)
        except subprocess.TimeoutExpired:
            raise Fail('owner-3, its lifetime spent, still running after 15 s (--once must '
                       'exit 2 at once):\n%s' % owner_log(c, 3)[-2000:])
        took = time.time() - t0
        log3 = owner_log(c, 3)[seen:]
        errors = [l for l in log3.splitlines() if ' error ' in l]
        check(rc == 2 and errors and 'lifetime' in errors[-1],
              'owner-3 exit %s, error lines %r' % (rc, errors))
        check('staying connected (refusing)' not in log3, 'owner-3 stayed to refuse')
        owners = [c.start_owner(i) for i in (1, 2)]
        out = finish(c, l1, 'next')
        check('done k=%d' % T in out, 'the job did not complete: %r' % out)
        for i, p in enumerate(owners, 1):
            check(p.wait(timeout=30) == 0, 'ownerd %d exited %s' % (i, p.returncode))
        no_refusals(c, 'next')
        lines = [l for l in log(c, 'next').splitlines() if 'owner id=owner-3 exhausted' in l]
        check(len(lines) == 1 and 'left out' in lines[0],
              'learnerd must log one line leaving owner-3 out: %r' % lines)
        info = ledger(c, 3)
        check(info['jobs_count'] == 1, 'owner-3 bound a ledger for the new job: %r' % info)
        print('owner-3 (lifetime spent) exited 2 after %.2f s: "%s"; learnerd: "%s"; job done '
              'with owner-1 and owner-2' % (took, errors[-1].split(' owner: ', 1)[-1][:120],
                                            lines[0].split(' learner: ', 1)[-1][:160]))
        ok = True
    finally:
        c.close()
        cleanup(d, ok)


def test(argv):
    part = os.environ.get('E2E_BUDGET_PART', '')
    if part in ('', '1'):
        partial(argv[0])
    if part in ('', '2'):
        spent(argv[0])


main(test)
