#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The lifetime cap lives with the ledgers (issue 21, docs/ledger.md §11):
real ownerd, learnerd and dpasync on loopback, owner-1's ledger directory
`led`.

- The first start records --lifetime-epsilon 1.5 in `led`: ownerd's start
  line, its /metrics (dpasync_owner_lifetime_epsilon_cap/spent/left) and
  `dpasync ledger` (JSON and --text) show 1.5, and who recorded it.
- A restart with --lifetime-epsilon 2 exits 2 with one line naming
  `dpasync ledger raise-lifetime`, and changes nothing; so does
  --check-config.  Without the flag the recorded 1.5 is used, not
  --epsilon's 1.  --check-config with 1.25 reports the lower cap and what
  is left, and writes nothing.
- A restart with --lifetime-epsilon 1.25 is accepted and lowers the cap
  for good (recorded: ownerd, 1.5 -> 1.25); its job J1 spends 1 (--epsilon
  1 --answers-cap 4).  Restarted without the flag for the next job J2,
  ownerd starts with cap 1.25 and 0.25 left; its Hello says
  epsilon_left=0.25, the recorded cap's (with --epsilon's 1 as the cap it
  would say 0 and be turned away), so J2's ledger is capped at 0.25 and
  its 4 answers of 0.0625 are all given with no refusal
  (docs/ledger.md §8 "A new job's cap is what is left"); its /metrics say
  cap 1.25, spent 1.25, left 0, with J2's id on the job's gauges.  1.5 is
  now a raise: refused.
- `dpasync ledger raise-lifetime led --to 2 --reason ...` is refused
  while ownerd runs (exit 1), and recorded once it is stopped (who, uid,
  host, when, 1.25 -> 2, why); a restarted ownerd then starts with cap 2,
  0.75 left, as its /metrics and `dpasync ledger` say.
- `raise-lifetime led --delta 1e-6` raises the lifetime delta (0 until
  then: no Gaussian job fits) and keeps the cap; a lower --delta is refused
  by raise-lifetime (one line naming lower-lifetime, exit 2) and taken by
  lower-lifetime.
- The raise killed before and after each of its file operations (the
  fault shim tests/lib/iofault.c), and each failed: `dpasync ledger` reads
  the old cap and history or the new ones, never a mix; both are seen.
- A directory of format 2 (before the record) takes its cap from the
  --lifetime-epsilon of the first ownerd that opens it."""
import getpass, json, os, re, shutil, signal, socket, subprocess, sys, time, urllib.request
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, run, tmpdir, cleanup, main
from cluster import Cluster, old_layout

T = 40
STARTED = re.compile(r'starting id=owner-1 .* lifetime_cap=(\S+) lifetime_left=(\S+)')


class Owner:
    """owner-1 on a ledger directory, with /metrics."""

    def __init__(self, c, led, extra, port=1, env=None):
        self.c, self.log, self.pf = c, c.path('owner-1-%d.log' % time.monotonic_ns()), None
        self.pf = self.log + '.ports'
        cmd = [c.ownerd, '--learner', '127.0.0.1:%d' % port, '--ca', c.certs() + '/ca.crt',
               '--cert', c.certs() + '/owner-1.crt', '--key', c.certs() + '/owner-1.key',
               '--data', c.data(1), '--bias', '--ledger', led, '--rate', '50',
               '--model-out', self.log + '.model.json', '--metrics-listen', '127.0.0.1:0',
               '--port-file', self.pf] + list(extra)
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(self.log, 'w'),
                                  text=True, env=env)
        c.procs.append(self.p)

    def text(self):
        return open(self.log).read()

    def started(self):
        """(lifetime cap, left) of its start line."""
        end = time.time() + 30
        while time.time() < end and self.p.poll() is None:
            m = STARTED.search(self.text())
            if m and os.path.exists(self.pf):
                return float(m.group(1)), float(m.group(2))
            time.sleep(0.05)
        raise Fail('ownerd did not start (exit %s):\n%s' % (self.p.poll(), self.text()[-2000:]))

    def metrics(self):
        port = int(dict(l.split('=') for l in open(self.pf).read().split())['metrics'])
        body = urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port, timeout=5).read().decode()
        return {m.group(1): float(m.group(2)) for m in
                re.finditer(r'^(dpasync_owner_[a-z_]+(?:\{[^}]*\})?) (\S+)$', body, re.M)}

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=20)
        check(self.p.returncode == 0, 'ownerd exit %d on SIGTERM' % self.p.returncode)

    def refused(self, what):
        """Exit 2 at start, one line naming the command that raises."""
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise Fail('%s: ownerd started (it must exit 2):\n%s' % (what, self.text()[-2000:]))
        lines = [l for l in self.text().splitlines() if l.strip()]
        check(self.p.returncode == 2 and len(lines) == 1 and
              'dpasync ledger raise-lifetime' in lines[0],
              '%s: exit %s, want 2 and one line naming raise-lifetime:\n%s'
              % (what, self.p.returncode, self.text()))
        return lines[0]


def ledger(c, led):
    return json.loads(run([c.dp, 'ledger', led]).stdout)


def check_config(c, led, extra):
    return run([c.ownerd, '--learner', '127.0.0.1:1', '--ca', c.certs() + '/ca.crt',
                '--cert', c.certs() + '/owner-1.crt', '--key', c.certs() + '/owner-1.key',
                '--data', c.data(1), '--bias', '--ledger', led, '--check-config'] + list(extra),
               ok=False)


def lifetime_file(led):
    return open(os.path.join(led, 'lifetime')).read()


def recorded_and_refused(c, led):
    o = Owner(c, led, ['--lifetime-epsilon', '1.5'])
    check(o.started() == (1.5, 1.5), 'first start: %r' % (o.started(),))
    m = o.metrics()
    check(m['dpasync_owner_lifetime_epsilon_cap'] == 1.5 and
          m['dpasync_owner_lifetime_epsilon_spent'] == 0 and
          m['dpasync_owner_lifetime_epsilon_left'] == 1.5, 'metrics: %r' % m)
    o.stop()
    info = ledger(c, led)
    ch = info['lifetime_changes']
    check(info['format_version'] == 5 and info['lifetime_epsilon_cap'] == 1.5 and
          info['lifetime_epsilon_left'] == 1.5 and len(ch) == 1 and ch[0]['program'] == 'ownerd'
          and 'old_epsilon' not in ch[0] and ch[0]['new_epsilon'] == 1.5,
          'dpasync ledger after the first start: %r' % info)
    text = run([c.dp, 'ledger', '--text', led]).stdout
    check('lifetime: cap 1.5, spent 0, left 1.5' in text and ': set 1.5: a new ledger directory'
          in text, 'dpasync ledger --text: %s' % text)

    before = lifetime_file(led)
    line = Owner(c, led, ['--lifetime-epsilon', '2']).refused('--lifetime-epsilon 2 above 1.5')
    p = check_config(c, led, ['--lifetime-epsilon', '2'])
    check(p.returncode == 2 and 'raise-lifetime' in p.stderr, '--check-config with 2: %d %s'
          % (p.returncode, p.stderr))
    check(lifetime_file(led) == before, 'a refused raise changed the record')
    print('a higher --lifetime-epsilon: exit 2, "%s"' % line.split(': ', 1)[-1][:110])

    o = Owner(c, led, [])
    check(o.started() == (1.5, 1.5), 'a start without the flag: %r' % (o.started(),))
    o.stop()
    p = check_config(c, led, ['--lifetime-epsilon', '1.25'])
    last = (p.stdout.strip().splitlines() or [''])[-1]
    check(p.returncode == 0 and 'lifetime cap 1.25 (lifetime-epsilon, below the recorded cap, '
          'which the start lowers), spent 0, left 1.25; a new job\'s epsilon 1' in last,
          '--check-config with 1.25: %d %r %s' % (p.returncode, last, p.stderr))
    check(lifetime_file(led) == before, '--check-config changed the record')


def lowered(c, led, bindir):
    c.start_learner(['--job', 'J1'])
    o = Owner(c, led, ['--lifetime-epsilon', '1.25', '--epsilon', '1', '--answers-cap', '4'],
              port=c.port)
    check(o.started() == (1.25, 1.25), 'a start with 1.25: %r' % (o.started(),))
    c.start_owner(2, once=True)
    out = c.wait_learner(timeout=120)
    check('done k=%d' % T in out, 'job J1: %r' % out)
    o.stop()
    info = ledger(c, led)
    last = info['lifetime_changes'][-1]
    check(info['lifetime_epsilon_cap'] == 1.25 and info['lifetime_epsilon_spent'] == 1 and
          len(info['lifetime_changes']) == 2 and last['program'] == 'ownerd' and
          last['old_epsilon'] == 1.5 and last['new_epsilon'] == 1.25 and
          'lifetime-epsilon 1.25' in last['reason'], 'after job J1: %r' % info)

    c2 = Cluster(bindir, c.path('c2'), owners=2, T=T, shared=c.d)
    try:
        c2.start_learner(['--job', 'J2'])
        o = Owner(c, led, ['--epsilon', '1', '--answers-cap', '4'], port=c2.port)
        check(o.started() == (1.25, 0.25), 'the restart for job J2: %r' % (o.started(),))
        c2.start_owner(2, once=True)
        out = c2.wait_learner(timeout=120)
    finally:
        c2.close()
    check('done k=%d' % T in out, 'job J2: %r' % out)
    llog = open(c2.path('learnerd.log')).read()
    check(' refused k=' not in llog and re.search(r'hello id=owner-1 .*epsilon_left=0\.25 ', llog),
          'owner-1 did not say 0.25 left, or refused a query:\n' + llog[-2000:])
    m = o.metrics()
    check(m['dpasync_owner_lifetime_epsilon_cap'] == 1.25 and
          m['dpasync_owner_lifetime_epsilon_spent'] == 1.25 and
          m['dpasync_owner_lifetime_epsilon_left'] == 0 and
          m.get('dpasync_owner_epsilon_spent{job_id="J2"}') == 0.25 and
          m.get('dpasync_owner_epsilon_left{job_id="J2"}') == 0, 'metrics after J2: %r' % m)
    o.stop()
    info = ledger(c, led)
    jobs = {j['job']: j for j in info['jobs']}
    check(info['lifetime_epsilon_spent'] == 1.25 and info['lifetime_epsilon_left'] == 0 and
          jobs['J2']['answers'] == 4 and jobs['J2']['epsilon_cap'] == 0.25,
          'after job J2: %r' % info)
    Owner(c, led, ['--lifetime-epsilon', '1.5']).refused('1.5 after lowering to 1.25')
    print('lowered to 1.25 at a start (recorded); J1 spent 1; J2\'s Hello said the 0.25 the '
          'record leaves, and its 4 answers of 0.0625 were given without a refusal')


def raised(c, led):
    o = Owner(c, led, [])
    o.started()
    reason = 'a second study, approved by the data protection officer'
    p = run([c.dp, 'ledger', 'raise-lifetime', led, '--to', '2', '--reason', reason], ok=False)
    check(p.returncode == 1 and 'in use by another process' in p.stderr,
          'raise-lifetime beside a running ownerd: %d %s' % (p.returncode, p.stderr))
    o.stop()
    p = run([c.dp, 'ledger', 'raise-lifetime', led, '--to', '2', '--reason', reason])
    check('lifetime cap 1.25 -> 2 (spent 1.25), recorded' in p.stdout, p.stdout)
    info = ledger(c, led)
    last = info['lifetime_changes'][-1]
    check(info['lifetime_epsilon_cap'] == 2 and info['lifetime_epsilon_left'] == 0.75 and
          last['program'] == 'dpasync ledger raise-lifetime' and last['old_epsilon'] == 1.25 and
          last['new_epsilon'] == 2 and last['reason'] == reason and
          last['user'] == getpass.getuser() and last['uid'] == os.geteuid() and
          last['host'] == socket.gethostname() and re.match(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$',
                                                             last['time']),
          'after raise-lifetime: %r' % info)
    text = run([c.dp, 'ledger', '--text', led]).stdout
    check('dpasync ledger raise-lifetime by %s (uid %d) on %s: 1.25 -> 2: %s'
          % (getpass.getuser(), os.geteuid(), socket.gethostname(), reason) in text, text)
    o = Owner(c, led, [])
    check(o.started() == (2, 0.75), 'a restart after the raise: %r' % (o.started(),))
    m = o.metrics()
    check(m['dpasync_owner_lifetime_epsilon_cap'] == 2 and
          m['dpasync_owner_lifetime_epsilon_left'] == 0.75, 'metrics after the raise: %r' % m)
    o.stop()
    run([c.dp, 'ledger', 'lower-lifetime', led, '--to', '1.75', '--reason', 'back to policy'])
    check(ledger(c, led)['lifetime_epsilon_cap'] == 1.75, 'lower-lifetime')
    # The lifetime delta (0 since the directory was made: pure epsilon-DP,
    # no Gaussian job) is raised on its own, the cap kept, and lowered.
    check(ledger(c, led)['lifetime_delta'] == 0, 'lifetime delta %r' % ledger(c, led))
    p = run([c.dp, 'ledger', 'raise-lifetime', led, '--delta', '1e-6', '--reason', 'gaussian'])
    info = ledger(c, led)
    check(info['lifetime_delta'] == 1e-6 and info['lifetime_epsilon_cap'] == 1.75 and
          'lifetime delta 0 -> 1e-06, recorded' in p.stdout, 'raise --delta: %r %r'
          % (p.stdout, info))
    p = run([c.dp, 'ledger', 'raise-lifetime', led, '--delta', '1e-7', '--reason', 'x'], ok=False)
    check(p.returncode == 2 and 'use dpasync ledger lower-lifetime' in p.stderr and
          len(p.stderr.strip().splitlines()) == 1, 'a lower --delta raised: %d %s'
          % (p.returncode, p.stderr))
    run([c.dp, 'ledger', 'lower-lifetime', led, '--delta', '1e-7', '--reason', 'tighter'])
    check(ledger(c, led)['lifetime_delta'] == 1e-7, 'lower --delta: %r' % ledger(c, led))
    print('raise-lifetime: refused beside ownerd, recorded once it stopped; ownerd, its '
          '/metrics and dpasync ledger all say cap 2, 0.75 left')


def crash_raise(c, led, bindir):
    shim = next((os.path.join(r, 'libiofault.so') for r, _, fs in os.walk(bindir)
                 if 'libiofault.so' in fs), None)
    check(shim is not None, 'the fault shim libiofault.so is not built under %s' % bindir)
    old = ledger(c, led)
    n_old = len(old['lifetime_changes'])
    kinds = 'open,write,fsync,rename,link'
    cmd = ['raise-lifetime', '--to', '3', '--reason', 'crash test']
    work = c.path('crash')

    def attempt(env):
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(led, work)
        p = subprocess.run([c.dp, 'ledger', cmd[0], work] + cmd[1:], capture_output=True,
                           text=True, env=dict(os.environ, **env), timeout=60)
        return p.returncode, ledger(c, work)

    count = c.path('crash-count')
    rc, info = attempt({'LD_PRELOAD': shim, 'DP_FAULT_CALLS': kinds, 'DP_FAULT_LOG': count})
    check(rc == 0 and info['lifetime_epsilon_cap'] == 3, 'an unfaulted raise: %d %r' % (rc, info))
    n = len(open(count).read().split('\n')) - 1
    seen = set()
    for action in ('kill-before', 'kill-after', 'fail'):
        for at in range(1, n + 1):
            rc, info = attempt({'LD_PRELOAD': shim, 'DP_FAULT_CALLS': kinds, 'DP_FAULT_AT': str(at),
                                'DP_FAULT_ACTION': action})
            ch = info['lifetime_changes']
            is_old = info['lifetime_epsilon_cap'] == 1.75 and len(ch) == n_old
            is_new = (info['lifetime_epsilon_cap'] == 3 and len(ch) == n_old + 1 and
                      ch[-1]['old_epsilon'] == 1.75 and ch[-1]['new_epsilon'] == 3)
            check((is_old or is_new) and ch[:n_old] == old['lifetime_changes'] and
                  info['lifetime_epsilon_spent'] == old['lifetime_epsilon_spent'],
                  'raise %s at call %d of %d (exit %d): a mix of old and new: %r'
                  % (action, at, n, rc, info))
            check(action != 'fail' or rc == 1 or is_new, 'a failed raise exit %d' % rc)
            seen.add('new' if is_new else 'old')
    check(seen == {'old', 'new'}, 'the faults never fell before and after the change: %r' % seen)
    print('raise-lifetime killed before and after each of its %d file operations, and each '
          'failed: old or new, never a mix' % n)


def migrated(c, led):
    v2 = c.path('led-v2')
    shutil.copytree(led, v2)
    os.unlink(os.path.join(v2, 'lifetime'))
    old_layout(v2)
    with open(os.path.join(v2, 'format'), 'w') as f:
        f.write('dpasync ledger directory format 2\n')
    info = ledger(c, v2)
    check(info['format_version'] == 2 and info['lifetime_recorded'] is False and
          'lifetime_epsilon_cap' not in info, 'a format-2 directory: %r' % info)
    o = Owner(c, v2, ['--lifetime-epsilon', '1.5'])
    check(o.started() == (1.5, 0.25), 'the first start on format 2: %r' % (o.started(),))
    o.stop()
    info = ledger(c, v2)
    ch = info['lifetime_changes']
    check(info['format_version'] == 5 and info['lifetime_epsilon_cap'] == 1.5 and len(ch) == 1 and
          'first open at format 3' in ch[0]['reason'], 'after the migration: %r' % info)
    o = Owner(c, v2, ['--epsilon', '1'])
    check(o.started()[0] == 1.5, 'the next start: %r' % (o.started(),))
    o.stop()
    print('a format-2 directory recorded the --lifetime-epsilon of its first start (1.5)')


def test(argv):
    d = tmpdir('lifetime')
    c = Cluster(argv[0], d, owners=2, rows=300, features=3, T=T)
    led = c.path('led')
    ok = False
    try:
        recorded_and_refused(c, led)
        lowered(c, led, argv[0])
        raised(c, led)
        crash_raise(c, led, argv[0])
        migrated(c, led)
        ok = True
    finally:
        c.close()
        cleanup(d, ok)


if __name__ == '__main__':
    main(test)
