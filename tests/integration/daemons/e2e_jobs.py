#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Long-lived owners, jobs and the lifetime budget (docs/ownerd.md "Serving
successive jobs", docs/ledger.md §8), real learnerd and ownerd on loopback:

- two jobs in a row against the same two running ownerd (never restarted):
  each learnerd makes its own job id (in model.json and the owners'
  ledgers); owner-1 (--epsilon 1 --answers-cap 40 --lifetime-epsilon 1.5)
  gives all 40 answers in job 1; in job 2 its Hello says 0.5 is left, its
  ledger for job 2 is capped at 0.5 and it gives its 40 answers of 0.0125
  with no refusal (docs/planner.md §1 "Budget left"; before, it gave 20
  answers of 0.025 and refused the rest with "lifetime budget spent");
  owner-2 finishes both jobs; `dpasync ledger DIR` prints both jobs'
  totals and the lifetime total (1.5 for owner-1);
- after the last job the owners wait for the next one without spinning:
  over 6 s with no learner, an owner logs at most 4 polls (1 s doubling:
  3 expected) and uses under 0.5 s of CPU (it idles in a timer: a few ms);
- the lifetime budget and a resumed job: owner-1 (--epsilon 1
  --answers-cap 10 --lifetime-epsilon 1) spends its whole lifetime in a
  job; ownerd is then killed (-9) and restarted, and learnerd killed (-9)
  and resumed, so the same job welcomes owner-1 again each time: owner-1
  rejoins it (its ledger refuses everything) and
  stays to the end instead of leaving with exit 2 (the old ownerd did, and
  the job then ran without it); a new job afterwards is refused for good:
  exit 2 with "lifetime budget ... no job can be answered", learnerd logs
  the Goodbye, counts owner-1 exhausted and finishes the job with owner-2
  (the old learnerd waited for owner-1 until idle-timeout);
- bad input gives exit 2 and a reason on both sides (docs/design.md §10
  "Exit status"): a renamed column (x3 -> x3b; that owner says Hello first,
  and the job still takes the other's schema), an owner without the job's
  bias, an identity that is not one of the job's owners, an owner whose
  data has one feature column more than the others' (no schema file: the p
  check refuses it with Goodbye BAD_DATA; the old learnerd only closed the
  connection), and 0/1 labels in a logistic job.  Each owner must exit 2
  within 20 s (the old ownerd retried for ever) with one error line naming
  the cause; learnerd's log names it too;
- a wrong --server-name and the metrics port given as the learner's
  address: what answered was not verified as the learner, so ownerd does
  not stop at all (the old ownerd exited 2, and systemd kept it down for
  good; then 1): it is still running after 3 attempts, each a warn line
  with its reason (name, not_tls) saying what to check and counted in
  dpasync_owner_connect_failures_total, and exits 0 on SIGTERM (for the
  metrics port learnerd's HTTP side has nothing to say);
- the ledger directory's format (docs/ledger.md §10): owner-1's directory
  after the two jobs, its format and lifetime files removed and its job
  files moved back out of jobs/ under their old names (job-<id>.ledger),
  is the layout from before versions (format 1; `dpasync ledger` says so
  and reads it as it is); ownerd killed (the fault shim, before and after each file
  operation of its start) while it migrates a copy leaves a directory that
  `dpasync ledger` reads at a format from 1 to the current one with every
  figure unchanged (lifetime total, each job's spent, answers and caps),
  and the next start completes
  the migration with the same figures; a directory of a newer format stops
  ownerd with exit 2 and one line."""
import json, os, re, shutil, signal, subprocess, sys, time, urllib.request
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, run, tmpdir, cleanup, main
from cluster import Cluster, old_layout

T = 100
CURRENT = 5   # the ledger directory's format (docs/ledger.md §10)


class Daemons:
    """learnerd and ownerd started by hand (other flags than Cluster's); their
    processes join the Cluster's, which Cluster.close() stops."""

    def __init__(self, c):
        self.c, self.procs = c, c.procs

    def learner(self, tag, owners, extra=(), port=0):
        c = self.c
        pf = c.path(tag + '.ports')
        log = open(c.path(tag + '.log'), 'a')
        cmd = [c.learnerd, '--listen', '127.0.0.1:%d' % port, '--port-file', pf,
               '--ca', c.certs() + '/ca.crt', '--cert', c.certs() + '/learner.crt',
               '--key', c.certs() + '/learner.key', '--owners', owners,
               '--out', c.path(tag), '--metrics-listen', '127.0.0.1:0',
               '--query-timeout', '5'] + list(extra)
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
        self.procs.append(p)
        for _ in range(400):
            if os.path.exists(pf):
                ports = dict(l.split('=') for l in open(pf).read().split())
                return p, int(ports['tls']), int(ports.get('metrics', 0))
            if p.poll() is not None:
                raise Fail('learnerd %s exited at start:\n%s' % (tag, open(c.path(tag + '.log')).read()))
            time.sleep(0.05)
        raise Fail('learnerd %s did not write its port file' % tag)

    def owner(self, tag, name, port, data, extra=(), env=None):
        c = self.c
        d = c.path(tag)
        os.makedirs(d, exist_ok=True)
        cmd = [c.ownerd, '--learner', '127.0.0.1:%d' % port, '--ca', c.certs() + '/ca.crt',
               '--cert', '%s/%s.crt' % (c.certs(), name), '--key', '%s/%s.key' % (c.certs(), name),
               '--data', data, '--ledger', os.path.join(d, 'ledger'),
               '--model-out', os.path.join(d, 'model.json')] + list(extra)
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                             stderr=open(os.path.join(d, 'ownerd.log'), 'a'), env=env)
        self.procs.append(p)
        return p

    def log(self, tag):
        for p in (self.c.path(tag + '.log'), self.c.path(tag, 'ownerd.log')):
            if os.path.exists(p):
                return open(p).read()
        return ''

def wait_log(text_fn, needle, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        if needle in text_fn():
            return True
        time.sleep(0.05)
    return False


def finish(p, tag, D, timeout=120):
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Fail('learnerd %s did not finish:\n%s' % (tag, D.log(tag)[-3000:]))
    check(p.returncode == 0, 'learnerd %s exited %d:\n%s' % (tag, p.returncode, D.log(tag)[-3000:]))
    return out


def cpu_seconds(pid):
    f = open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf('SC_CLK_TCK')


def two_jobs(c, D):
    lext = ['--T', str(T), '--bias']
    l1, port, _ = D.learner('learner-1', 'owner-1,owner-2', lext)
    o1 = D.owner('o1', 'owner-1', port, c.data(1),
                 ['--bias', '--epsilon', '1', '--answers-cap', '40', '--lifetime-epsilon', '1.5',
                  '--rate', '400'])
    o2 = D.owner('o2', 'owner-2', port, c.data(2),
                 ['--bias', '--epsilon', '1', '--answers-cap', str(T), '--lifetime-epsilon', '10',
                  '--rate', '100'])
    finish(l1, 'learner-1', D)
    time.sleep(0.5)
    check(o1.poll() is None and o2.poll() is None,
          'an ownerd ended with job 1 (exit %s, %s); it must wait for the next job'
          % (o1.poll(), o2.poll()))
    m1 = json.load(open(c.path('learner-1', 'model.json')))
    check(m1.get('job', '').startswith('job-'), 'model.json of job 1 has no job id: %r' % m1.get('job'))

    # Job 2 on the same address, against the same processes.
    l2, _, _ = D.learner('learner-2', 'owner-1,owner-2', lext, port=port)
    finish(l2, 'learner-2', D)
    m2 = json.load(open(c.path('learner-2', 'model.json')))
    check(m2.get('job') and m2['job'] != m1['job'], 'job ids %r, %r' % (m1.get('job'), m2.get('job')))
    check(o1.poll() is None and o2.poll() is None, 'an ownerd exited during job 2')
    o2model = json.load(open(c.path('o2', 'model.json')))
    check(o2model.get('job') == m2['job'], 'owner-2 saved model of job %r' % o2model.get('job'))
    log2 = D.log('learner-2')
    check(' refused k=' not in log2 and 'hello id=owner-1 ' in log2 and
          'epsilon_left=0.5 ' in log2,
          'owner-1 did not say it had 0.5 left, or refused a query:\n' + log2[-3000:])

    info = json.loads(run([c.dp, 'ledger', c.path('o1', 'ledger')]).stdout)
    jobs = {j['job']: j for j in info['jobs']}
    check(info['jobs_count'] == 2 and set(jobs) == {m1['job'], m2['job']},
          'dpasync ledger: jobs %r' % info)
    a1, a2 = jobs[m1['job']], jobs[m2['job']]
    check(a1['answers'] == 40 and abs(a1['epsilon_spent'] - 1.0) < 1e-9,
          'owner-1 job 1: %r' % a1)
    check(a2['answers'] == 40 and abs(a2['epsilon_spent'] - 0.5) < 1e-9 and
          abs(a2['epsilon_cap'] - 0.5) < 1e-9,
          'owner-1 job 2 must give its 40 answers within the 0.5 left: %r' % a2)
    check(abs(info['lifetime_epsilon_spent'] - 1.5) < 1e-9 and info['lifetime_answers'] == 80,
          'owner-1 lifetime: %r' % info)
    info2 = json.loads(run([c.dp, 'ledger', c.path('o2', 'ledger')]).stdout)
    check(info2['jobs_count'] == 2 and
          info2['lifetime_answers'] == sum(j['answers'] for j in info2['jobs']),
          'owner-2 ledger: %r' % info2)
    print('jobs %s, %s: owner-1 answered 40 + 40 (lifetime 1.5 spent), owner-2 %s'
          % (m1['job'], m2['job'], [j['answers'] for j in info2['jobs']]))

    # No learner any more: polls back off, no busy loop.
    polls0 = D.log('o2').count('waiting for the next job')
    cpu0, t0 = cpu_seconds(o2.pid), time.time()
    time.sleep(6)
    polls = D.log('o2').count('waiting for the next job') - polls0
    cpu = cpu_seconds(o2.pid) - cpu0
    check(o2.poll() is None, 'owner-2 exited while waiting for a job')
    check(polls <= 4 and cpu < 0.5, 'owner-2 spins without a learner: %d polls, %.2f s CPU in %.1f s'
          % (polls, cpu, time.time() - t0))
    print('idle owner over %.1f s: %d polls, %.3f s CPU' % (time.time() - t0, polls, cpu))


def expect_exit2(D, p, tag, needles, lneedles, ltag, what, code=2):
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        raise Fail('%s: ownerd still running after 20 s (it must exit %d):\n%s'
                   % (what, code, D.log(tag)[-2000:]))
    olog = D.log(tag)
    errors = [l for l in olog.splitlines() if ' error ' in l]
    check(p.returncode == code, '%s: ownerd exit %s, expected %d:\n%s'
          % (what, p.returncode, code, olog[-2000:]))
    check(errors and all(any(n in l for l in errors) for n in needles),
          '%s: ownerd error line lacks %r:\n%s' % (what, needles, olog[-2000:]))
    if ltag:
        check(wait_log(lambda: D.log(ltag), lneedles, 10),
              '%s: learnerd log lacks %r:\n%s' % (what, lneedles, D.log(ltag)[-2000:]))
    print('%s: exit %d, "%s"' % (what, code, errors[-1].split(' owner: ', 1)[-1][:150]))


def metrics_flags(c, tag):
    return ['--metrics-listen', '127.0.0.1:0', '--port-file', c.path(tag, 'ports')]


def expect_retry(D, c, p, tag, reason, needle, lneedle, ltag, what, n=3):
    """What answered on the learner's address was not verified as the
    learner: ownerd retries (docs/ownerd.md "Reconnection").  n warn lines
    of failed attempts with this reason and needle, as many counted in
    /metrics, still running; then exit 0 on SIGTERM."""
    pat = re.compile(r' warn conn: attempt=\d+ failed reason=%s .*%s' % (reason, re.escape(needle)))
    end = time.time() + 20
    while time.time() < end and len(pat.findall(D.log(tag))) < n and p.poll() is None:
        time.sleep(0.05)
    olog = D.log(tag)
    check(p.poll() is None, '%s: ownerd exited %s (it must retry):\n%s'
          % (what, p.returncode, olog[-2000:]))
    check(len(pat.findall(olog)) >= n, '%s: fewer than %d warn lines "reason=%s ... %s" in 20 s:\n%s'
          % (what, n, reason, needle, olog[-2000:]))
    mport = int(dict(l.split('=') for l in open(c.path(tag, 'ports')).read().split())['metrics'])
    body = urllib.request.urlopen('http://127.0.0.1:%d/metrics' % mport, timeout=5).read().decode()
    m = re.search(r'^dpasync_owner_connect_failures_total\{reason="%s"\} (\S+)$' % reason, body,
                  re.M)
    check(m and float(m.group(1)) >= n, '%s: connect_failures_total{reason="%s"}: %s'
          % (what, reason, m and m.group(1)))
    check(' error ' not in olog, '%s: an error line:\n%s' % (what, olog[-2000:]))
    if ltag:
        check(wait_log(lambda: D.log(ltag), lneedle, 10),
              '%s: learnerd log lacks %r:\n%s' % (what, lneedle, D.log(ltag)[-2000:]))
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        raise Fail('%s: ownerd did not exit on SIGTERM' % what)
    check(p.returncode == 0, '%s: exit %d on SIGTERM' % (what, p.returncode))
    print('%s: retrying, %s attempts counted, exit 0 on SIGTERM: "%s"'
          % (what, m.group(1), pat.findall(olog)[-1].split(' conn: ', 1)[-1][:150]))


def lifetime_rejoin(c, D):
    lext = ['--T', '300', '--bias', '--checkpoint-every', '5']
    l, port, _ = D.learner('learner-r', 'owner-1,owner-2', lext)
    o1args = ['--bias', '--epsilon', '1', '--answers-cap', '10', '--lifetime-epsilon', '1',
              '--rate', '400']
    o1 = D.owner('r1', 'owner-1', port, c.data(1), o1args)
    o2 = D.owner('r2', 'owner-2', port, c.data(2),
                 ['--bias', '--epsilon', '1', '--answers-cap', '300', '--lifetime-epsilon', '10',
                  '--rate', '40'])
    ledger1 = c.path('r1', 'ledger')

    def kill_resume(tag, lproc, extra, rows, owner=None, between=None):
        """Once the trace has `rows` rows (of `owner`), call `between`, kill
        -9 learnerd and resume it; its output when done."""
        end = time.time() + 30
        tr = os.path.join(c.path(tag), 'trace.csv')
        while time.time() < end:
            if os.path.exists(tr) and sum(1 for r in open(tr).read().splitlines()[1:]
                                          if owner is None or ',%s,' % owner in r) >= rows:
                break
            time.sleep(0.05)
        else:
            raise Fail('%s: no %d trace rows:\n%s' % (tag, rows, D.log(tag)[-2000:]))
        if between:
            between()
        check(lproc.poll() is None, '%s finished before it could be killed' % tag)
        lproc.kill()
        lproc.wait()
        os.unlink(c.path(tag + '.ports'))
        l2, _, _ = D.learner(tag, 'owner-1,owner-2', extra + ['--resume'], port=port)
        return finish(l2, tag, D, timeout=60)

    def restart_owner1():
        # ownerd killed (-9) and started again mid-job: unbound at start, it
        # finds the job's ledger in its directory and rejoins
        nonlocal o1
        o1.kill()
        o1.wait()
        o1 = D.owner('r1', 'owner-1', port, c.data(1), o1args)
        end = time.time() + 20
        while D.log('learner-r').count('hello id=owner-1') < 2 and time.time() < end:
            time.sleep(0.05)
        check(D.log('learner-r').count('hello id=owner-1') >= 2,
              'owner-1 did not come back:\n' + D.log('r1')[-2000:])
        time.sleep(0.3)
        check(o1.poll() is None, 'restarted owner-1 left the job (exit %s):\n%s'
              % (o1.poll(), D.log('r1')[-2000:]))

    # owner-1 is done with its 10 answers long before owner-2's 290 (at
    # 40/s): restart it, then kill learnerd and resume it.
    out = kill_resume('learner-r', l, lext, 10, 'owner-1', restart_owner1)
    check('done k=300' in out, 'the resumed job did not finish: %r' % out)
    log1 = D.log('r1')
    check(o1.poll() is None and 'leaving for good' not in log1,
          'owner-1 left the resumed job (exit %s):\n%s' % (o1.poll(), log1[-2000:]))
    check(D.log('learner-r').count('hello id=owner-1') >= 3,
          'owner-1 did not rejoin the resumed job:\n' + D.log('learner-r')[-2000:])
    info = json.loads(run([c.dp, 'ledger', ledger1]).stdout)
    check(info['jobs_count'] == 1 and info['jobs'][0]['answers'] == 10 and
          abs(info['lifetime_epsilon_spent'] - 1.0) < 1e-9,
          'owner-1 ledger after the resumed job: %r' % info)
    # A new job: nothing can be answered, for good.
    l3ext = ['--T', '200', '--bias', '--checkpoint-every', '5']
    l3, _, _ = D.learner('learner-r3', 'owner-1,owner-2', l3ext, port=port)
    expect_exit2(D, o1, 'r1', ['lifetime budget', 'no job can be answered'],
                 'lifetime budget', 'learner-r3', 'a new job after the lifetime budget is spent')
    # learnerd marks it exhausted (in its checkpoint too) and, resumed, does
    # not wait for it (min-owners = N): owner-2 alone finishes the job (the
    # old learnerd waited for owner-1 until idle-timeout, an hour)
    out = kill_resume('learner-r3', l3, l3ext, 20)
    check('done k=200' in out, 'the new job did not finish without owner-1: %r' % out)
    check('owner id=owner-1 exhausted: it left' in D.log('learner-r3'),
          'learnerd did not mark owner-1 exhausted:\n' + D.log('learner-r3')[-2000:])
    o2.kill()
    print('owner-1 rejoined the resumed job with its lifetime spent; left the next job with '
          'exit 2, which owner-2 finished alone')


def bad_inputs(c, D):
    # Owner data with x3 renamed, and 0/1 labels.
    src = open(c.data(2)).read().splitlines()
    check(src[0].split(',')[2] == 'x3', 'unexpected header %r' % src[0])
    renamed = c.path('renamed.csv')
    open(renamed, 'w').write('\n'.join([src[0].replace('x3', 'x3b', 1)] + src[1:]) + '\n')
    labels = c.path('labels01.csv')
    rows = open(c.data(1)).read().splitlines()
    with open(labels, 'w') as f:
        f.write(rows[0] + '\n')
        for i, r in enumerate(rows[1:]):
            f.write(','.join(r.split(',')[:-1] + [str(i % 2)]) + '\n')

    wider = c.path('wider.csv')
    with open(wider, 'w') as f:
        for i, r in enumerate(src):
            cells = r.split(',')
            f.write(','.join(cells[:-1] + ['x9' if i == 0 else cells[0], cells[-1]]) + '\n')

    lb, port, mport = D.learner('learner-bad', 'owner-1,owner-2', ['--T', '50', '--bias'])
    # The misconfigured owner says Hello first: the job's schema is still
    # the one most owners send (ties: the first in --owners), not the first.
    p = D.owner('renamed', 'owner-2', port, renamed, ['--bias'])
    check(wait_log(lambda: D.log('learner-bad'), 'hello id=owner-2'),
          'owner-2 did not say Hello:\n' + D.log('learner-bad'))
    D.owner('ok1', 'owner-1', port, c.data(1), ['--bias', '--once'])
    expect_exit2(D, p, 'renamed', ['schema mismatch'], 'schema mismatch: owner owner-2',
                 'learner-bad', 'renamed column x3 -> x3b')
    # The Goodbye says what differs, from the Hellos' schema summaries
    # (docs/protocol.md §5 "Schema summary"), not only two hashes.
    words = "it differs in feature 3: 'x3b' vs 'x3'"
    check(wait_log(lambda: D.log('learner-bad'), words, 10),
          'learnerd log lacks %r:\n%s' % (words, D.log('learner-bad')[-2000:]))
    check(words in D.log('renamed'), 'ownerd log lacks %r:\n%s' % (words, D.log('renamed')[-2000:]))
    p = D.owner('nobias', 'owner-2', port, c.data(2))
    expect_exit2(D, p, 'nobias', ['bias=false'], 'has bias=false', 'learner-bad',
                 'owner without the job bias')
    p = D.owner('stranger', 'owner-3', port, c.data(3), ['--bias'])
    expect_exit2(D, p, 'stranger', ['not one of this job', 'owner-3'], 'identity not in owners',
                 'learner-bad', 'unknown identity owner-3')
    p = D.owner('name', 'owner-2', port, c.data(2), ['--bias', '--server-name', 'other.example']
                + metrics_flags(c, 'name'))
    expect_retry(D, c, p, 'name', 'name', 'check --server-name', 'handshake failed',
                 'learner-bad', 'wrong --server-name')
    p = D.owner('metrics', 'owner-2', mport, c.data(2), ['--bias'] + metrics_flags(c, 'metrics'))
    expect_retry(D, c, p, 'metrics', 'not_tls', 'does not speak TLS', None, None,
                 'metrics port as the learner address')
    # One feature column more than owner-1 (no schema file on either
    # side), after p = 5 was fixed by the first Hellos: refused on p.
    p = D.owner('wider', 'owner-2', port, wider, ['--bias'])
    expect_exit2(D, p, 'wider', ["n_features 6 differs from the job's p 5", 'feature columns'],
                 "Hello n_features 6 differs from the job's p 5", 'learner-bad',
                 'one feature column more, p fixed (p = 6 against 5)')
    lb.kill()

    # The same owner among the first Hellos, before p is fixed: the p
    # agreement (ties: the first in --owners) refuses it before any
    # fingerprint is compared.
    lp, port, _ = D.learner('learner-p', 'owner-1,owner-2', ['--T', '20', '--bias'])
    p = D.owner('wider2', 'owner-2', port, wider, ['--bias'])
    check(wait_log(lambda: D.log('learner-p'), 'hello id=owner-2'),
          'owner-2 did not say Hello:\n' + D.log('learner-p'))
    D.owner('ok1p', 'owner-1', port, c.data(1), ['--bias', '--once'])
    expect_exit2(D, p, 'wider2', ['n_features 6 differs from p = 5 said by 1 of the 2 owners',
                                  'same feature columns'],
                 'Hello n_features 6 differs from p = 5', 'learner-p',
                 'one feature column more, among the first Hellos')
    lp.kill()

    ll, port, _ = D.learner('learner-logit', 'owner-1', ['--T', '20', '--bias', '--model', 'logistic'])
    p = D.owner('labels', 'owner-1', port, labels, ['--bias'])
    expect_exit2(D, p, 'labels', ['not -1 or +1'], 'not -1 or +1', 'learner-logit',
                 '0/1 labels in a logistic job')
    ll.kill()


def ledger_figures(c, led):
    """(format_version, every budget figure) of a ledger directory as
    `dpasync ledger` reads it."""
    info = json.loads(run([c.dp, 'ledger', led]).stdout)
    fig = {k: info[k] for k in ('jobs_count', 'lifetime_epsilon_spent', 'lifetime_answers')}
    fig['jobs'] = sorted((j['job'], j['answers'], j['answers_cap'], j['epsilon_spent'],
                          j['epsilon_cap'], j['torn_bytes']) for j in info['jobs'])
    return info['format_version'], fig


def start_once(c, D, fixture, env=None):
    """owner-1 started on a fresh copy of `fixture` (its learner address
    refuses connections: the start is all it does), until its log says it
    started or it dies; then stopped.  Returns (exit status, log, dir)."""
    shutil.rmtree(c.path('mig'), ignore_errors=True)
    os.makedirs(c.path('mig'))
    led = c.path('mig', 'ledger')
    shutil.copytree(fixture, led)
    p = D.owner('mig', 'owner-1', 1, c.data(1),
                ['--bias', '--epsilon', '1', '--answers-cap', '40', '--lifetime-epsilon', '10'],
                env=env)
    end = time.time() + 20
    while p.poll() is None and 'starting id=owner-1' not in D.log('mig') and time.time() < end:
        time.sleep(0.02)
    if p.poll() is None:
        p.kill()
    p.wait(timeout=20)
    return p.returncode, D.log('mig'), led


def format_migration(c, D, bindir, sanitized=False):
    shim = next((os.path.join(r, 'libiofault.so') for r, _, fs in os.walk(bindir)
                 if 'libiofault.so' in fs), None)
    check(shim is not None, 'the fault shim libiofault.so is not built under %s' % bindir)
    fixture = c.path('led-v1')
    shutil.copytree(c.path('o1', 'ledger'), fixture)
    os.unlink(os.path.join(fixture, 'format'))
    os.unlink(os.path.join(fixture, 'lifetime'))   # format 3's (docs/ledger.md §11)
    old_layout(fixture)                            # format 5's jobs/ (docs/ledger.md §10)
    version, want = ledger_figures(c, fixture)
    check(version == 1 and want['jobs_count'] == 2 and abs(want['lifetime_epsilon_spent'] - 1.5) < 1e-9,
          'the directory without its format file: format %r, %r' % (version, want))
    check(not os.path.exists(os.path.join(fixture, 'format')), 'dpasync ledger wrote a format file')

    # The file operations of one start, counted by the shim.
    kinds = 'open,write,fsync,rename,link'
    count = c.path('mig-count')
    rc, _, led = start_once(c, D, fixture, dict(os.environ, LD_PRELOAD=shim, DP_FAULT_CALLS=kinds,
                                                DP_FAULT_LOG=count))
    n = len(open(count).read().split('\n')) - 1
    check(ledger_figures(c, led) == (CURRENT, want), 'a clean start: %r' % (ledger_figures(c, led),))
    seen = set()
    for action in ('kill-before', 'kill-after'):
        # Under the sanitizers every other point (meson.build).
        for at in range(1, n + 1, 2 if sanitized else 1):
            env = dict(os.environ, LD_PRELOAD=shim, DP_FAULT_CALLS=kinds, DP_FAULT_AT=str(at),
                       DP_FAULT_ACTION=action)
            rc, log, led = start_once(c, D, fixture, env)
            version, fig = ledger_figures(c, led)
            seen.add(version)
            check(1 <= version <= CURRENT and fig == want,
                  'ownerd %s call %d of %d (exit %s): format %r, figures %r, want %r\n%s'
                  % (action, at, n, rc, version, fig, want, log[-2000:]))
            again = c.path('mig-again')
            shutil.rmtree(again, ignore_errors=True)
            shutil.copytree(led, again)
            rc, log, led = start_once(c, D, again)
            check(ledger_figures(c, led) == (CURRENT, want),
                  'restart after %s call %d: %r\n%s' % (action, at, ledger_figures(c, led), log[-2000:]))
    check((sanitized and {1, CURRENT} <= seen) or set(range(1, CURRENT + 1)) <= seen,
          'the kills did not fall before and after every step of the migration: formats %r' % seen)
    print('ledger directory format 1 -> %d: killed before and after each of %d file operations '
          'of a start, the figures held (lifetime %.9g over %d jobs; formats seen %s)'
          % (CURRENT, n, want['lifetime_epsilon_spent'], want['jobs_count'], sorted(seen)))

    # A newer format than this build knows: exit 2, one line, nothing changed.
    newer = c.path('led-v99')
    shutil.copytree(c.path('o1', 'ledger'), newer)
    with open(os.path.join(newer, 'format'), 'w') as f:
        f.write('dpasync ledger directory format 99\n')
    rc, log, led = start_once(c, D, newer)
    errs = [l for l in log.splitlines() if l.strip()]
    check(rc == 2 and len(errs) == 1 and 'format 99, newer than' in errs[0],
          'ownerd on a format-99 directory: exit %s\n%s' % (rc, log))
    check(open(os.path.join(led, 'format')).read() == 'dpasync ledger directory format 99\n',
          'the format-99 file was changed')
    p = run([c.dp, 'ledger', led], ok=False)
    check(p.returncode == 2 and 'newer than' in p.stderr, 'dpasync ledger on format 99: %d %s'
          % (p.returncode, p.stderr))


def test(argv):
    d = tmpdir('jobs')
    c = Cluster(argv[0], d, owners=3, rows=400, features=4, T=T)
    D = Daemons(c)
    ok = False
    try:
        two_jobs(c, D)
        format_migration(c, D, argv[0], '--sanitized' in argv[1:])
        lifetime_rejoin(c, D)
        bad_inputs(c, D)
        ok = True
    finally:
        c.close()
        cleanup(d, ok)


if __name__ == '__main__':
    main(test)
