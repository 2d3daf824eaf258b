# SPDX-License-Identifier: Apache-2.0
"""A local dpasync deployment for integration tests: certificates, data,
learnerd and ownerd processes on loopback ports chosen at run time.  Every
process started is killed when the cluster is closed."""
import json, os, signal, socket, ssl, struct, subprocess, time, urllib.request, zlib
from harness import Fail, check, run

# The short job of the I/O-fault and power-cut campaigns (docs/reliability.md
# §3, §8): 3 owners at 300 clock ticks a second, T = 30.  learnerd
# checkpoints every 5 iterations; the margin keeps every owner able to reach
# T after a learnerd crash wastes the answers since its last checkpoint.
SHORT_T = 30
SHORT_OWNERS = 3
SHORT_RATE = '300'
SHORT_LEARNER_FLAGS = ['--checkpoint-every', '5', '--answers-margin', '1',
                       '--query-timeout', '5', '--idle-timeout', '20']

class Cluster:
    def __init__(self, bindir, d, owners=3, rows=400, features=5, T=300, seed=1, shared=None):
        """shared: the directory of an earlier Cluster whose data and
        certificates this one reuses (many short jobs on the same data)."""
        self.dp = os.path.join(bindir, 'tools', 'dpasync')
        self.learnerd = os.path.join(bindir, 'learner', 'learnerd')
        self.ownerd = os.path.join(bindir, 'owner', 'ownerd')
        self.d, self.N, self.T = d, owners, T
        self.names = ['owner-%d' % i for i in range(1, owners + 1)]
        self.procs = []
        self.learner = None
        self.shared = shared or d
        # Beside the learner's --out by default; a test may move it (a
        # power cut must not find the out directory synced by its write).
        self.port_file = self.path('learner.ports')
        os.makedirs(d, exist_ok=True)
        if shared:
            return
        run([self.dp, 'gen', '--rows', ','.join([str(rows)] * owners), '--features', str(features),
             '--seed', str(seed), '--out', self.path('data')])
        run([self.dp, 'certs', '--out', self.path('certs'), '--owners', str(owners)])

    def path(self, *p):
        return os.path.join(self.d, *p)

    def data(self, i):
        return os.path.join(self.shared, 'data', 'owner-%d.csv' % i)

    def certs(self):
        return os.path.join(self.shared, 'certs')

    def start_learner(self, extra=(), resume=False, env=None, wait_port=True):
        """env: the environment of learnerd (e.g. an LD_PRELOAD fault shim);
        wait_port=False returns at once (a learnerd expected to fail at
        start)."""
        pf = self.port_file
        if os.path.exists(pf):
            os.unlink(pf)
        c = self.certs()
        # A resumed learner comes back on the same port: owners keep its address.
        listen = '127.0.0.1:%d' % (self.port if resume else 0)
        cmd = [self.learnerd, '--listen', listen, '--port-file', pf,
               '--ca', c + '/ca.crt', '--cert', c + '/learner.crt', '--key', c + '/learner.key',
               '--owners', ','.join(self.names), '--T', str(self.T), '--bias',
               '--out', self.path('learner'), '--metrics-listen', '127.0.0.1:0',
               '--query-timeout', '5'] + list(extra)
        if resume:
            cmd.append('--resume')
        self.learner_log = open(self.path('learnerd.log'), 'a')
        self.learner = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.learner_log, text=True,
                                        env=env)
        self.procs.append(self.learner)
        if not wait_port:
            return
        for _ in range(200):
            if os.path.exists(pf):
                ports = dict(l.split('=') for l in open(pf).read().split())
                self.port, self.metrics_port = int(ports['tls']), int(ports.get('metrics', 0))
                return
            if self.learner.poll() is not None:
                raise Fail('learnerd exited at start:\n' + open(self.path('learnerd.log')).read())
            time.sleep(0.05)
        raise Fail('learnerd did not write its port file')

    def start_owner(self, i, name=None, certdir=None, ledger=None, extra=(), eps='1', rate='50',
                    env=None, once=True):
        name = name or 'owner-%d' % i
        c = certdir or self.certs()
        ledger = ledger or self.path('owner-%d' % i, 'ledger')
        os.makedirs(os.path.dirname(ledger), exist_ok=True)
        cmd = [self.ownerd, '--learner', '127.0.0.1:%d' % self.port, '--ca', c + '/ca.crt',
               '--cert', '%s/%s.crt' % (c, name), '--key', '%s/%s.key' % (c, name),
               '--data', self.data(i), '--bias', '--epsilon', eps, '--rate', rate,
               '--ledger', ledger, '--model-out', ledger + '.model.json'] + list(extra)
        if once:   # these tests run one job: the owner ends with it
            cmd.append('--once')
        if eps == 'inf':
            cmd.append('--allow-no-noise')
        log = open(ledger + '.log', 'a')
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=env)
        self.procs.append(p)
        return p

    def ledger(self, i):
        return self.path('owner-%d' % i, 'ledger')

    def metric(self, name):
        """The value of an unlabelled series from learnerd's /metrics."""
        body = urllib.request.urlopen('http://127.0.0.1:%d/metrics' % self.metrics_port,
                                      timeout=5).read().decode()
        for line in body.splitlines():
            if line.startswith(name + ' '):
                return float(line.split()[1])
        raise Fail('metric %s not found' % name)

    def wait_metric(self, name, value, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            try:
                if self.metric(name) >= value:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise Fail('%s did not reach %s' % (name, value))

    def settings(self):
        """The settings learnerd actually used (its plan, from checkpoint.json):
        T, eta, clip and the answer caps K_i in the order of owner-1..N, and
        the predicted psi with psi_zero when the plan has them."""
        ck = json.load(open(self.path('learner', 'checkpoint.json')))
        job, plan = ck['job'], ck['job']['plan']
        K = dict(zip(job['owners'], plan['answers_cap']))
        return {'T': job['T'], 'eta': job['eta'], 'clip': job['clip_l1'],
                'K': [K[n] for n in self.names], 'psi': plan.get('psi'),
                'psi_zero': plan.get('psi_zero')}

    def sim_flags(self, K=None):
        """`dpasync sim` flags that fix what learnerd used, so the simulator
        does not plan on its own: --T --eta --clip --answers-cap (K, or the
        one K every owner has)."""
        s = self.settings()
        if K is None:
            check(len(set(s['K'])) == 1, 'owners have different caps %r: give K' % s['K'])
            K = s['K'][0]
        return ['--T', str(s['T']), '--eta', repr(s['eta']), '--clip', repr(s['clip']),
                '--answers-cap', str(K)]

    def sync_sim_error(self, mode, out, extra=()):
        """An epsilon = inf sync job's model.json against `dpasync sim
        --mode MODE` with its plan (T, clip, rho or c) on the same data
        (output in `out`; `extra` sim flags, e.g. the mechanism): (max
        relative difference, coordinates, |theta| of the simulator's model)."""
        model = json.load(open(self.path('learner', 'model.json')))
        ck = json.load(open(self.path('learner', 'checkpoint.json')))['job']
        step = ['--rho', repr(ck['rho'])] if mode == 'sync1' else ['--c', repr(ck['eta'])]
        run([self.dp, 'sim', '--target', 'y', '--bias', '--mode', mode, '--epsilon', 'inf', '--repeats', '1',
             '--T', str(self.T), '--clip', repr(ck['clip_l1']), '--out', out] + step
            + list(extra) + [self.data(i) for i in range(1, self.N + 1)])
        want = json.load(open(os.path.join(out, 'summary.json')))['theta']
        big = max(abs(w) for w in want)
        err = max(abs(g - w) for g, w in zip(model['theta'], want)) / big
        return err, len(want), big

    def trace_rows(self):
        p = self.path('learner', 'trace.csv')
        if not os.path.exists(p):
            return []
        lines = open(p).read().splitlines()[1:]
        # Whole rows only (a learnerd killed mid-write leaves a torn one):
        # k,time_unix,owner,wait_s,rtt_s,eps_spent,staleness,job.
        return [l.split(',') for l in lines if l.count(',') == 7]

    def wait_rows(self, n, timeout=60):
        """Wait until trace.csv has n rows; Fail if learnerd exits first."""
        end = time.time() + timeout
        while time.time() < end:
            if len(self.trace_rows()) >= n:
                return
            if self.learner.poll() is not None:
                break
            time.sleep(0.02)
        raise Fail('trace did not reach %d rows' % n)

    def start_fake_owner(self, name, rows, p, extra=(), log=None):
        """A scripted owner (tests/integration/daemons/fake_owner.c) with
        name's certificate claiming rows and p, answering zero gradients;
        its stderr goes to log (default: fake-NAME.log)."""
        fake = os.path.join(os.path.dirname(self.learnerd), '..', 'tests', 'integration',
                            'daemons', 'fake_owner')
        k = self.certs()
        cmd = [fake, '--learner', '127.0.0.1:%d' % self.port, '--ca', k + '/ca.crt',
               '--cert', '%s/%s.crt' % (k, name), '--key', '%s/%s.key' % (k, name),
               '--id', name, '--p', str(p), '--rows', rows, '--grad-a', '0',
               '--grad-c', ','.join(['0'] * p)] + list(extra)
        err = open(log or self.path('fake-%s.log' % name), 'a')
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        self.procs.append(proc)
        return proc

    def wait_learner_log(self, needle, timeout=20):
        """Wait until learnerd.log holds needle and return the log; Fail
        when learnerd exits first or after timeout seconds."""
        end = time.time() + timeout
        while time.time() < end:
            log = open(self.path('learnerd.log')).read()
            if needle in log:
                return log
            check(self.learner.poll() is None, 'learnerd exited %s waiting for %r:\n%s'
                  % (self.learner.returncode, needle, log[-2000:]))
            time.sleep(0.05)
        raise Fail('learnerd log has no %r after %d s:\n%s' % (needle, timeout, log[-2000:]))

    def wait_learner(self, timeout=120):
        try:
            out, _ = self.learner.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Fail('learnerd did not finish in %d s' % timeout)
        check(self.learner.returncode == 0, 'learnerd exited %d:\n%s' % (
            self.learner.returncode, open(self.path('learnerd.log')).read()[-3000:]))
        return out

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

def wait_target(c, target, timeout=60, after=10):
    """Until the daemon a campaign faults (learnerd or an ownerd) has
    stopped, or learnerd has ended; an ownerd then gets `after` seconds
    more to end after learnerd."""
    end = time.time() + timeout
    while time.time() < end and target.poll() is None and c.learner.poll() is None:
        time.sleep(0.005)
    if target is not c.learner and c.learner.poll() is not None:
        try:
            target.wait(timeout=after)
        except subprocess.TimeoutExpired:
            pass

def wait_owner(p, timeout=5):
    """An ownerd's exit status once the job is over: it exits by itself
    within timeout, or it is stopped with SIGTERM (one restarted after the
    job ended: nobody will send it Done)."""
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
        return p.wait(timeout=10)

def tls_client(cluster, name, certdir=None):
    """A raw TLS 1.3 client with an owner's certificate (for protocol abuse)."""
    c = certdir or cluster.certs()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_verify_locations(c + '/ca.crt')
    ctx.load_cert_chain(c + '/%s.crt' % name, c + '/%s.key' % name)
    s = socket.create_connection(('127.0.0.1', cluster.port), timeout=10)
    return ctx.wrap_socket(s, server_hostname='learner')

def closed_by_peer(s, timeout=10):
    """True when the peer closes the TLS connection within timeout."""
    s.settimeout(timeout)
    try:
        while True:
            if not s.recv(4096):
                return True
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False

def old_layout(led):
    """Put the job files of ledger directory `led` back where directories
    of format 4 and older keep them (docs/ledger.md §10): jobs/<id>.ledger
    becomes job-<id>.ledger beside `format`, and jobs/ goes.  For ids that
    are plain names (learnerd's and the tests'); the caller writes the
    older `format` it wants."""
    home = os.path.join(led, 'jobs')
    for f in os.listdir(home):
        check(not f.startswith('sha256='), 'old_layout: a hashed job file %s' % f)
        os.rename(os.path.join(home, f), os.path.join(led, 'job-' + f))
    os.rmdir(home)

def job_file(path):
    """The job ledger of an ownerd ledger directory (docs/ledger.md §8):
    the one job's file, or the newest when there are several; a file is
    itself."""
    if not os.path.isdir(path):
        return path
    jobs = os.path.join(path, 'jobs')   # format 5 on (docs/ledger.md §10)
    files = sorted((os.path.getmtime(os.path.join(jobs, f)), f) for f in os.listdir(jobs)
                   if f.endswith('.ledger') and not f.startswith('.')) if os.path.isdir(jobs) else []
    return os.path.join(jobs, files[-1][1]) if files else os.path.join(path, 'none')

def ledger_records(path):
    """(answers, total nano-epsilon) of a ledger file (docs/ledger.md §3),
    or of the job ledger in an ownerd ledger directory: the last record's
    count (answers that may have left, a reserved share included, §9) and
    total."""
    path = job_file(path)
    if not os.path.exists(path):
        return 0, 0
    b = open(path, 'rb').read()
    check(b[:8] == b'DPLEDGER', '%s: not a ledger' % path)
    n = (len(b) - 256) // 64
    if not n:
        return 0, 0
    total, count = struct.unpack_from('<QQ', b, 256 + 64 * (n - 1) + 32)
    return count, total

def ledger_entries(path):
    """Every record of a ledger file as dicts {seq, k, charge, total, count,
    flags}
    (nano-epsilon), and the header's caps (cap_nano, cap_answers), read
    independently of the C code (docs/ledger.md §3).  A torn final record
    (a partial one, or a final one whose checksum fails) is left out, as
    ownerd does at its next start; any other damage fails."""
    path = job_file(path)
    if not os.path.exists(path):
        return [], None
    b = open(path, 'rb').read()
    check(len(b) >= 256 and b[:8] == b'DPLEDGER', '%s: not a ledger' % path)
    check(zlib.crc32(b[:252]) == struct.unpack_from('<I', b, 252)[0], '%s: header CRC' % path)
    cap_nano, cap_answers = struct.unpack_from('<QQ', b, 24)
    n = (len(b) - 256) // 64
    out = []
    for i in range(n):
        r = b[256 + 64 * i: 256 + 64 * (i + 1)]
        ok = (struct.unpack_from('<I', r, 0)[0] == 0x524c5044 and
              zlib.crc32(r[:60]) == struct.unpack_from('<I', r, 60)[0])
        if not ok and i == n - 1 and (len(b) - 256) % 64 == 0:
            break
        check(ok, '%s: record %d of %d damaged' % (path, i + 1, n))
        flags = struct.unpack_from('<I', r, 4)[0]
        seq, k, charge, total, count = struct.unpack_from('<QQQQQ', r, 8)
        out.append({'seq': seq, 'k': k, 'charge': charge, 'total': total, 'count': count,
                    'flags': flags})
    return out, (cap_nano, cap_answers)

def check_invariants(c, eps_cap_nano=10 ** 9, complete=True, settled=True):
    """The crash and I/O-fault invariants of docs/reliability.md on a
    cluster's files (read after the processes stopped):
    - each ledger: answers <= K_i and epsilon <= epsilon_i (the caps learnerd
      planned, and the header's), records consecutive, k strictly rising;
    - `dpasync ledger` reads the same counts and totals;
    - every row of trace.csv (an answer learnerd applied) is a record of
      that owner's ledger: the row's eps_spent is the owner's spent total
      after that answer, so (owner, total) names exactly one record, and no
      record is used by two rows;
    - no query id appears in two records (of one ledger or of two owners);
    - complete: the trace is k = 1..T.
    settled=False: other processes may still be appending (the trace is read
    before the ledgers, so a row's record is always there already), and
    `dpasync ledger` may see more records than were read here.
    Returns {owner: (answers, nano)}."""
    rows = c.trace_rows()
    K = c.settings()['K'] if os.path.exists(c.path('learner', 'checkpoint.json')) else None
    seen_k, out = {}, {}
    for i, name in enumerate(c.names, 1):
        recs, caps = ledger_entries(c.ledger(i))
        nano = recs[-1]['total'] if recs else 0
        count = recs[-1]['count'] if recs else 0
        out[name] = (count, nano)
        if caps is None:
            check(not any(r[2] == name for r in rows), '%s: trace rows but no ledger' % name)
            continue
        check(caps[0] <= eps_cap_nano, '%s: ledger cap %d > epsilon_i' % (name, caps[0]))
        check(count <= caps[1], '%s: %d answers > cap %d' % (name, count, caps[1]))
        if K is not None:
            check(caps[1] == K[i - 1], '%s: ledger K %d, plan %d' % (name, caps[1], K[i - 1]))
        check(nano <= caps[0], '%s: spent %d > cap %d nano' % (name, nano, caps[0]))
        # docs/ledger.md §9: flags 1 = reserves the next share, 2 = covered
        # by the previous record's, 4 (with 1) = a reservation alone (k 0).
        prev_total, prev_k, prev_count, prev_flags = 0, 0, 0, 0
        for j, r in enumerate(recs, 1):
            f = r['flags']
            alone = f == 5
            grow = 1 if alone else (0 if f & 2 else 1) + (f & 1)
            check(f in (0, 1, 2, 3, 5) and r['seq'] == j and r['count'] == prev_count + grow and
                  (alone and r['k'] == 0 or not alone and r['k'] > prev_k) and
                  (not f & 2 or prev_flags & 1) and
                  r['total'] == prev_total + r['charge'], '%s: record %d inconsistent' % (name, j))
            if not alone:
                check(r['k'] not in seen_k, 'query id %d answered by %s and %s' % (
                    r['k'], seen_k.get(r['k']), name))
                seen_k[r['k']] = name
                prev_k = r['k']
            prev_total, prev_count, prev_flags = r['total'], r['count'], f
        info = json.loads(run([c.dp, 'ledger', job_file(c.ledger(i))]).stdout)
        check(info['answers'] == count and abs(info['epsilon_spent'] - nano / 1e9) < 1e-9
              or (not settled and info['answers'] >= count),
              '%s: dpasync ledger %s, file %d answers %d nano' % (name, info, count, nano))
        by_total = {'%.9g' % (r['total'] / 1e9): r for r in recs}
        used = set()
        for row in rows:
            if row[2] != name:
                continue
            r = by_total.get(row[5])
            check(r is not None, 'trace row k=%s of %s (eps_spent %s) has no ledger record'
                  % (row[0], name, row[5]))
            check(r['seq'] not in used, 'ledger record %d of %s applied twice (trace k=%s)'
                  % (r['seq'], name, row[0]))
            used.add(r['seq'])
    if complete:
        ks = [int(r[0]) for r in rows]
        check(ks == list(range(1, c.T + 1)), 'trace is not k = 1..%d (%d rows)' % (c.T, len(ks)))
    return out
