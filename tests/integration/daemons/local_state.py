#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What another local user can do to the daemons' files (issue 22, findings
5, 6 and 7; docs/ownerd.md "File permissions"), with the real learnerd and
ownerd.  Runs as root: it hands files to other users (uid/gid 12345) and
acts as one.

  local_state.py BUILD_DIR CASE

CASE is one of
  strict_modes  ownerd refuses to start (exit 2, one line naming the path and
                what is wrong) when its ledger directory is writable by
                every user, writable by a group that is not its own, or
                owned by another user; when a directory above it is
                writable by every user without the sticky bit (with it, as
                /tmp, it starts); when its key or its data is writable by
                others or owned by another user; also through a symbolic
                link, and on a real start (nothing created in the ledger
                directory).  Group-writable with its own group (Kubernetes'
                fsGroup) is accepted.  learnerd does the same for its key
                and its out directory.  The code before accepted them all.
  file_modes    under umask 000, a job (learnerd + 2 ownerd) and a sync1
                job leave every state file 0600: learnerd's lock,
                checkpoint, trace, rounds and model, the owners' ledgers,
                locks and models; the port files are 0644 (meant to be
                read by others).  Another user cannot open learnerd's lock,
                so cannot hold it with flock and stop `learnerd --resume`
                (the code before created it 0644, and the resume exited 1).
                Files an older version made 0644 are 0600 after a resume.
  siblings      two owners and two peer agents whose ledger directories are
                siblings (st/a.ledger, st/b.ledger) each keep their own
                model.json and trace.csv, inside their ledger directory; a
                restarted agent resumes from its own model; a model at the
                old default place (the ledger directory's parent) is never
                read or overwritten: a restarted agent with charges but no
                model of its own refuses to start (exit 2, naming both
                paths) instead of resuming from what may be another
                agent's.  The code before wrote one shared model.json and
                one interleaved trace.csv.
"""
import fcntl, json, os, shutil, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, run, tmpdir, cleanup, main
from cluster import Cluster

BUILD = os.path.abspath(sys.argv[1])
DPASYNC = os.path.join(BUILD, 'tools', 'dpasync')
LEARNERD = os.path.join(BUILD, 'learner', 'learnerd')
OWNERD = os.path.join(BUILD, 'owner', 'ownerd')
OTHER = 12345     # another user and group


def mode(path):
    return os.stat(path).st_mode & 0o7777


def refused(p, path, words, what):
    lines = p.stderr.strip().splitlines()
    check(p.returncode == 2 and len(lines) == 1 and path in lines[0] and
          all(w in lines[0] for w in words),
          '%s: expected exit 2 and one line naming %s (%s), got %d: %r'
          % (what, path, ', '.join(words), p.returncode, p.stderr))
    print('refused (%s): %s' % (what, lines[0]))


def accepted(p, what):
    check(p.returncode == 0, '%s: expected exit 0, got %d: %r' % (what, p.returncode, p.stderr))


# ---- finding 5 -------------------------------------------------------------

def case_strict_modes(d):
    certs, data = os.path.join(d, 'certs'), os.path.join(d, 'data')
    run([DPASYNC, 'certs', '--out', certs, '--owners', '1'])
    run([DPASYNC, 'gen', '--rows', '50', '--features', '3', '--out', data])
    key, csv = os.path.join(certs, 'owner-1.key'), os.path.join(data, 'owner-1.csv')
    os.chmod(csv, 0o644)
    st = os.path.join(d, 'st')
    os.makedirs(st)
    os.chmod(st, 0o755)
    led = os.path.join(st, 'led')
    base = [OWNERD, '--learner', '127.0.0.1:9', '--ca', os.path.join(certs, 'ca.crt'),
            '--cert', os.path.join(certs, 'owner-1.crt'), '--key', key, '--data', csv,
            '--bias']

    def owner(ledger=led, check_only=True):
        return run(base + ['--ledger', ledger, '--once'] +
                   (['--check-config'] if check_only else []), ok=False, timeout=30)

    me, grp = os.geteuid(), os.getegid()
    accepted(owner(), 'no ledger directory yet')
    check(not os.path.exists(led), '--check-config created the ledger directory')
    os.mkdir(led, 0o700)
    accepted(owner(), 'ledger 0700')
    os.chmod(led, 0o777)
    refused(owner(), led, ['writable by every user', '0777'], 'ledger 0777')
    os.chmod(led, 0o770)
    accepted(owner(), 'ledger 0770, the daemon\'s own group (fsGroup)')
    os.chmod(led, 0o2770)
    accepted(owner(), 'ledger 2770, the daemon\'s own group (fsGroup)')
    os.chown(led, me, OTHER)
    refused(owner(), led, ['group %d' % OTHER], 'ledger 0770 of another group')
    os.chmod(led, 0o750)
    accepted(owner(), 'ledger 0750 of another group (not writable by it)')
    os.chown(led, OTHER, grp)
    os.chmod(led, 0o700)
    refused(owner(), led, ['uid %d' % OTHER], 'ledger of another user')
    os.chown(led, me, grp)
    # A directory above the ledger: writable by everyone lets anyone rename
    # the ledger directory away; with the sticky bit (as /tmp) nobody can.
    os.chmod(st, 0o777)
    refused(owner(), st, ['above', 'writable by every user'], 'parent 0777')
    os.chmod(st, 0o1777)
    accepted(owner(), 'parent 1777 (sticky, like /tmp)')
    os.chmod(st, 0o755)
    # Through a symbolic link: the directory it points to is checked.
    wild = os.path.join(d, 'wild')
    os.mkdir(wild)
    os.chmod(wild, 0o777)
    link = os.path.join(st, 'link')
    os.symlink(wild, link)
    refused(owner(link), wild, ['writable by every user'], 'ledger through a symbolic link')
    # A real start refuses as --check-config does, before creating anything.
    os.chmod(led, 0o777)
    p = owner(check_only=False)
    refused(p, led, ['writable by every user'], 'ledger 0777, real start')
    check(os.listdir(led) == [], 'ownerd created %s in a ledger directory it refused'
          % os.listdir(led))
    os.chmod(led, 0o700)
    # The key and the data.
    os.chmod(key, 0o602)
    refused(owner(), key, ['writable by every user'], 'key 0602')
    os.chmod(key, 0o620)
    os.chown(key, me, OTHER)
    refused(owner(), key, ['group %d' % OTHER], 'key 0620 of another group')
    os.chown(key, OTHER, grp)
    os.chmod(key, 0o600)
    refused(owner(), key, ['uid %d' % OTHER], 'key of another user')
    os.chown(key, me, grp)
    os.chmod(csv, 0o646)
    refused(owner(), csv, ['writable by every user'], 'data 0646')
    os.chmod(csv, 0o644)
    os.chown(csv, OTHER, OTHER)
    refused(owner(), csv, ['uid %d' % OTHER], 'data of another user')
    os.chown(csv, me, grp)
    accepted(owner(), 'everything restored')

    # learnerd: its key and its out directory (checkpoint, trace, model).
    lkey, out = os.path.join(certs, 'learner.key'), os.path.join(st, 'out')
    lbase = [LEARNERD, '--listen', '127.0.0.1:0', '--ca', os.path.join(certs, 'ca.crt'),
             '--cert', os.path.join(certs, 'learner.crt'), '--key', lkey,
             '--owners', 'owner-1', '--out', out, '--check-config']
    learner = lambda: run(lbase, ok=False, timeout=30)
    accepted(learner(), 'learnerd, no out directory yet')
    os.mkdir(out, 0o755)
    accepted(learner(), 'learnerd, out 0755')
    os.chmod(out, 0o777)
    refused(learner(), out, ['writable by every user'], 'learnerd out 0777')
    os.chmod(out, 0o775)
    os.chown(out, me, OTHER)
    refused(learner(), out, ['group %d' % OTHER], 'learnerd out 0775 of another group')
    os.chown(out, me, grp)
    os.chmod(out, 0o755)
    os.chmod(lkey, 0o602)
    refused(learner(), lkey, ['writable by every user'], 'learnerd key 0602')
    os.chmod(lkey, 0o600)
    accepted(learner(), 'learnerd, everything restored')


# ---- finding 6 -------------------------------------------------------------

def wait_done(c, timeout=120):
    try:
        out, _ = c.learner.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Fail('learnerd did not finish:\n' + open(c.path('learnerd.log')).read()[-3000:])
    check(c.learner.returncode == 0 and 'done k=' in out,
          'learnerd exited %d (%r):\n%s' % (c.learner.returncode, out,
                                            open(c.path('learnerd.log')).read()[-3000:]))


def wait_procs(procs, what, timeout=60):
    for p in procs:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Fail('%s did not exit' % what)
        check(p.returncode == 0, '%s exited %d' % (what, p.returncode))


def umask0(fn, *args, **kw):
    """fn (which starts daemons) under umask 000; the test's own
    directories are made under its usual umask."""
    old = os.umask(0)
    try:
        return fn(*args, **kw)
    finally:
        os.umask(old)


def check_modes(want):
    got = {p: mode(p) for p in want}
    bad = {p: '%04o, want %04o' % (got[p], m) for p, m in want.items() if got[p] != m}
    check(not bad, 'modes: %s' % bad)


def owner_files(c, i):
    led = c.ledger(i)
    home = os.path.join(led, 'jobs')   # docs/ledger.md §8
    jobs = [os.path.join(home, f) for f in os.listdir(home) if f.endswith('.ledger')]
    check(len(jobs) == 1, 'owner-%d: job ledgers %r' % (i, jobs))
    return {led: 0o700, home: 0o700, jobs[0]: 0o600, os.path.join(led, 'lock'): 0o600,
            led + '.model.json': 0o600, c.path('owner-%d' % i, 'ports'): 0o644}


def case_file_modes(d):
    os.chmod(d, 0o755)          # so that another user can reach the files
    c = Cluster(BUILD, os.path.join(d, 'async'), owners=2, rows=300, features=3, T=40)
    try:
        for i in (1, 2):
            os.makedirs(c.path('owner-%d' % i))
        umask0(c.start_learner)
        owners = [umask0(c.start_owner, i, extra=['--port-file', c.path('owner-%d' % i, 'ports'),
                                                  '--metrics-listen', '127.0.0.1:0'])
                  for i in (1, 2)]
        wait_done(c)
        wait_procs(owners, 'ownerd')
        L = c.path('learner')
        lock = os.path.join(L, '.learnerd.lock')
        want = {lock: 0o600, os.path.join(L, 'checkpoint.json'): 0o600,
                os.path.join(L, 'trace.csv'): 0o600, os.path.join(L, 'model.json'): 0o600,
                c.path('learner.ports'): 0o644, L: 0o755}
        for i in (1, 2):
            want.update(owner_files(c, i))
        check_modes(want)
        print('async job under umask 000: %d files with the modes wanted' % len(want))

        # Another user tries to hold learnerd's lock (flock needs only a
        # descriptor, which any mode readable by others gives).
        hold = ('import fcntl, sys, time\n'
                'f = open(sys.argv[1])\n'
                'fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n'
                'print("held", flush=True)\n'
                'time.sleep(60)\n')
        other = subprocess.Popen([sys.executable, '-c', hold, lock], user=OTHER, group=OTHER,
                                 extra_groups=[], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        c.procs.append(other)
        line = other.stdout.readline()
        if line.strip() == 'held':
            other.kill()
            raise Fail('another user (uid %d) opened %s (mode %04o) and holds it with flock: '
                       'learnerd --resume would exit 1' % (OTHER, lock, mode(lock)))
        other.wait(timeout=10)
        check('Permission' in other.stderr.read(), 'the other user failed for another reason')
        print('another user cannot open %s to hold it' % lock)

        # Files an older version made 0644 are private again after a resume
        # (of the finished job, which only writes its outputs again).
        for f in (lock, os.path.join(L, 'trace.csv'), os.path.join(L, 'checkpoint.json')):
            os.chmod(f, 0o644)
        umask0(c.start_learner, resume=True)
        wait_done(c, 60)
        check_modes({lock: 0o600, os.path.join(L, 'trace.csv'): 0o600,
                     os.path.join(L, 'checkpoint.json'): 0o600})
        print('after --resume: lock, trace and checkpoint 0600 again')
    finally:
        c.close()

    # A sync job writes rounds.csv.
    s = Cluster(BUILD, os.path.join(d, 'sync'), owners=2, rows=300, features=3, T=12,
                shared=c.d)
    try:
        for i in (1, 2):
            os.makedirs(s.path('owner-%d' % i))
        umask0(s.start_learner, ['--mode', 'sync1'])
        owners = [umask0(s.start_owner, i) for i in (1, 2)]
        wait_done(s)
        wait_procs(owners, 'ownerd (sync)')
        L = s.path('learner')
        check_modes({os.path.join(L, f): 0o600 for f in
                     ('.learnerd.lock', 'checkpoint.json', 'trace.csv', 'rounds.csv', 'model.json')})
        print('sync1 job under umask 000: rounds.csv and the rest 0600')
    finally:
        s.close()


# ---- finding 7 -------------------------------------------------------------

def start_owner(c, i, ledger, log):
    cmd = [c.ownerd, '--learner', '127.0.0.1:%d' % c.port, '--ca', c.certs() + '/ca.crt',
           '--cert', '%s/owner-%d.crt' % (c.certs(), i), '--key', '%s/owner-%d.key' % (c.certs(), i),
           '--data', c.data(i), '--bias', '--rate', '50', '--ledger', ledger, '--once']
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(log, 'w'))
    c.procs.append(p)
    return p


class Agent:
    def __init__(self, root, ident, certs, graph, peers, data, ledger):
        self.id, self.root, self.ledger = ident, root, ledger
        self.pf = os.path.join(root, ident + '.port')
        self.args = [OWNERD, '--peer', '--graph', graph, '--peers', peers,
                     '--ca', os.path.join(certs, 'ca.crt'),
                     '--cert', os.path.join(certs, ident + '.crt'),
                     '--key', os.path.join(certs, ident + '.key'),
                     '--data', data, '--ledger', ledger, '--port-file', self.pf,
                     '--wakeups', '10', '--rate', '20', '--epsilon', '1']
        self.runs = 0

    def start(self, extra=()):
        if os.path.exists(self.pf):
            os.unlink(self.pf)
        self.runs += 1
        self.log = os.path.join(self.root, '%s.log%d' % (self.id, self.runs))
        self.proc = umask0(subprocess.Popen, self.args + list(extra),
                           stdout=subprocess.DEVNULL, stderr=open(self.log, 'w'))
        return self.proc

    def port(self):
        for _ in range(600):
            if self.proc.poll() is not None:
                raise Fail('%s exited %d at start: %s' % (self.id, self.proc.returncode,
                                                          open(self.log).read()))
            if os.path.exists(self.pf):
                for line in open(self.pf):
                    if line.startswith('peer='):
                        return int(line.split('=')[1])
            time.sleep(0.05)
        raise Fail('%s wrote no port file' % self.id)

    def text(self):
        return open(self.log).read()


def trace_wakeups(path):
    rows = open(path).read().splitlines()
    check(rows and rows[0].startswith('wakeup,'), '%s: not a peer trace' % path)
    return [int(r.split(',')[0]) for r in rows[1:]]


def case_siblings(d):
    # Two owners of one job, ledgers st/owner-1.ledger and st/owner-2.ledger.
    c = Cluster(BUILD, os.path.join(d, 'owners'), owners=2, rows=300, features=3, T=40)
    try:
        st = c.path('st')
        os.makedirs(st)
        os.chmod(st, 0o755)
        old = os.path.join(st, 'model.json')
        open(old, 'w').write('{"not": "touched"}\n')
        umask0(c.start_learner)
        leds = [os.path.join(st, 'owner-%d.ledger' % i) for i in (1, 2)]
        owners = [umask0(start_owner, c, i, leds[i - 1], os.path.join(st, 'owner-%d.log' % i))
                  for i in (1, 2)]
        wait_done(c)
        wait_procs(owners, 'ownerd')
        final = json.load(open(c.path('learner', 'model.json')))['theta']
        for i, led in enumerate(leds, 1):
            m = os.path.join(led, 'model.json')
            check(os.path.exists(m), 'owner-%d: no model in its ledger directory %s' % (i, m))
            check(json.load(open(m))['theta'] == final, 'owner-%d: model differs from the job\'s' % i)
            check(mode(m) == 0o600, 'owner-%d: model mode %04o' % (i, mode(m)))
            log = open(os.path.join(st, 'owner-%d.log' % i)).read()
            check(old in log, 'owner-%d did not warn about the model at the old default %s:\n%s'
                  % (i, old, log[-2000:]))
        check(open(old).read() == '{"not": "touched"}\n', 'the old default model.json was written')
        print('two owners with sibling ledger directories: a model each, in its ledger directory; '
              'the file at the old default untouched, and named in a warning')
    finally:
        c.close()

    # Two peer agents a and b, ledgers st/a.ledger and st/b.ledger.
    root = os.path.join(d, 'agents')
    os.makedirs(root)
    data, certs = os.path.join(root, 'data'), os.path.join(root, 'certs')
    run([DPASYNC, 'gen', '--rows', '30,40', '--out', data, '--task', 'classification',
         '--features', '3', '--seed', '3'])
    run([DPASYNC, 'certs', '--out', certs, '--names', 'a,b', '--peer'])
    graph, peers = os.path.join(root, 'graph.csv'), os.path.join(root, 'peers.csv')
    open(graph, 'w').write('a,b,w\na,b,1\n')
    open(peers, 'w').write('id,addr\n')
    st = os.path.join(root, 'st')
    os.makedirs(st)
    os.chmod(st, 0o755)
    agents = {i: Agent(root, i, certs, graph, peers, os.path.join(data, 'owner-%d.csv' % k),
                       os.path.join(st, i + '.ledger'))
              for k, i in ((1, 'a'), (2, 'b'))}
    try:
        for a in agents.values():
            a.start(['--linger', '20'])
        book = 'id,addr\n' + ''.join('%s,127.0.0.1:%d\n' % (i, a.port()) for i, a in agents.items())
        open(peers + '.tmp', 'w').write(book)
        os.replace(peers + '.tmp', peers)
        for a in agents.values():
            try:
                a.proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                raise Fail('agent %s did not finish:\n%s' % (a.id, a.text()[-2000:]))
            check(a.proc.returncode == 0, 'agent %s exited %d:\n%s' % (a.id, a.proc.returncode,
                                                                      a.text()[-2000:]))
        models = {}
        for i, a in agents.items():
            m, t = os.path.join(a.ledger, 'model.json'), os.path.join(a.ledger, 'trace.csv')
            check(os.path.exists(m) and os.path.exists(t),
                  'agent %s: no model.json and trace.csv in its ledger directory %s (%s)'
                  % (i, a.ledger, sorted(os.listdir(st))))
            check(trace_wakeups(t) == list(range(1, 11)),
                  'agent %s: trace wake-ups %r, want 1..10 (its own only)' % (i, trace_wakeups(t)))
            check(mode(m) == 0o600 and mode(t) == 0o600,
                  'agent %s: model %04o trace %04o under umask 000' % (i, mode(m), mode(t)))
            models[i] = json.load(open(m))['theta']
        check(models['a'] != models['b'], 'the two agents hold the same model %r' % models['a'])
        for f in ('model.json', 'trace.csv'):
            check(not os.path.exists(os.path.join(st, f)), 'a shared %s in %s' % (f, st))
        print('two agents with sibling ledger directories: a model and a 10-row trace each')

        # A restart of a resumes from its own model.
        a = agents['a']
        a.start(['--linger', '0.5'])
        a.proc.wait(timeout=30)
        own = os.path.join(a.ledger, 'model.json')
        check(a.proc.returncode == 0 and 'resuming wakeups=10 ' in a.text() and
              'model=%s' % own in a.text(),
              'restarted a: exit %s, log:\n%s' % (a.proc.returncode, a.text()[-2000:]))
        print('restarted agent a resumed from %s' % own)

        # The old layout: a's model where every agent kept it before.  It
        # may be b's: a refuses to resume from it, naming both paths.
        oldm = os.path.join(st, 'model.json')
        os.replace(own, oldm)
        a.start(['--linger', '0.5'])
        a.proc.wait(timeout=30)
        lines = open(a.log).read().strip().splitlines()
        check(a.proc.returncode == 2 and len(lines) == 1 and oldm in lines[0] and own in lines[0],
              'a with only a model at the old default: exit %s, %r' % (a.proc.returncode, lines))
        print('refused: %s' % lines[0])
        check(not os.path.exists(own), 'a wrote a model after refusing')
    finally:
        for a in agents.values():
            if getattr(a, 'proc', None) and a.proc.poll() is None:
                a.proc.kill()


CASES = {'strict_modes': case_strict_modes, 'file_modes': case_file_modes,
         'siblings': case_siblings}


def test(argv):
    check(len(argv) == 2 and argv[1] in CASES, 'usage: local_state.py BUILD_DIR %s'
          % '|'.join(CASES))
    check(os.geteuid() == 0, 'must run as root (scripts/test.sh does): it hands files to '
          'another user and acts as one')
    d = tmpdir('local-' + argv[1])
    try:
        CASES[argv[1]](d)
    finally:
        cleanup(d)


if __name__ == '__main__':
    main(test)
