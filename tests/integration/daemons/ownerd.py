#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test of ownerd against a fake learner (suite 'integration').

Usage: ownerd.py OWNERD DPASYNC [FAILSYNC_SHIM]

The fake learner is written here from scratch: TLS 1.3 with mutual
authentication (Python's ssl module, certificates from `dpasync certs`) and
the wire format of proto/dpasync.proto encoded and decoded by hand (4-byte
big-endian length + protobuf Envelope), so the test shares no code with the
daemon's framing.  It checks the Hello, answers (dimension, budget
accounting, exact value without noise, plausible noise with it), the
ledger (one record per answer, refusal past the cap, repeated k refused,
restart after kill -9 continues from it), that bad queries close the
connection and the daemon reconnects, Done, signals, metrics and startup
errors; the answer cap K from the Welcome (the learner's plan), an owner's
own --answers-cap kept over it, the rate and the cap in the Hello, and the
Welcome timeout.
"""
import json
import math
import os
import re
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check  # noqa: E402

HEADER = 256   # ledger header bytes (common/core/ledger.h)
RECORD = 64    # bytes per answer record


# ---- protobuf (proto3) by hand ---------------------------------------------
# Field types: u = varint, s = string, d = double, D = repeated double,
# m = sub-message.
SCHEMA = {
    'hello': [(1, 'version', 'u'), (2, 'owner_id', 's'), (3, 'n_rows', 'u'),
              (4, 'n_features', 'u'), (5, 'epsilon', 'd'), (6, 'answers_cap', 'u'),
              (7, 'answers_given', 'u'), (8, 'rate', 'd'), (9, 'schema', 's'), (10, 'job', 's'),
              (11, 'bias', 'u'), (12, 'job_answers_cap', 'u')],
    'welcome': [(1, 'job', 's'), (2, 'model', 's'), (3, 'T', 'u'), (4, 'N', 'u'),
                (5, 'n_total', 'u'), (6, 'rho', 'd'), (7, 'lambda', 'd'),
                (8, 'theta_max', 'd'), (9, 'clip_l1', 'd'), (10, 'mode', 'u'),
                (11, 'p', 'u'), (12, 'k_done', 'u'), (13, 'answers_cap', 'u'), (14, 'bias', 'u')],
    'update_request': [],
    'query': [(1, 'k', 'u'), (2, 'theta', 'D')],
    'answer': [(1, 'k', 'u'), (2, 'gradient', 'D'), (3, 'epsilon_spent', 'd'),
               (4, 'epsilon_left', 'd'), (5, 'answers_given', 'u')],
    'refuse': [(1, 'k', 'u'), (2, 'reason', 's')],
    'done': [(1, 'final_theta', 'D'), (2, 'T', 'u')],
    'goodbye': [(1, 'code', 'u'), (2, 'text', 's')],
}
KINDS = {2: 'hello', 3: 'welcome', 4: 'update_request', 5: 'query', 6: 'answer',
         7: 'refuse', 8: 'done', 9: 'goodbye'}
KIND_NO = {v: k for k, v in KINDS.items()}


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wt):
    return varint(field << 3 | wt)


def encode(kind, fields):
    body = b''
    for no, name, t in SCHEMA[kind]:
        if name not in fields:
            continue
        v = fields[name]
        if t == 'u':
            body += key(no, 0) + varint(v)
        elif t == 's':
            b = v.encode()
            body += key(no, 2) + varint(len(b)) + b
        elif t == 'd':
            body += key(no, 1) + struct.pack('<d', v)
        elif t == 'D':
            b = b''.join(struct.pack('<d', x) for x in v)
            body += key(no, 2) + varint(len(b)) + b
    env = key(1, 0) + varint(1) + key(KIND_NO[kind], 2) + varint(len(body)) + body
    return struct.pack('>I', len(env)) + env


def read_varint(b, i):
    v, s = 0, 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << s
        s += 7
        if not c & 0x80:
            return v, i


def fields_of(b):
    """Yield (field, wire type, value) of a protobuf message."""
    i = 0
    while i < len(b):
        k, i = read_varint(b, i)
        no, wt = k >> 3, k & 7
        if wt == 0:
            v, i = read_varint(b, i)
        elif wt == 1:
            v = b[i:i + 8]
            i += 8
        elif wt == 2:
            n, i = read_varint(b, i)
            v = b[i:i + n]
            i += n
        elif wt == 5:
            v = b[i:i + 4]
            i += 4
        else:
            raise Fail('bad wire type %d' % wt)
        yield no, wt, v


def decode(env):
    version, kind, body = 0, None, b''
    for no, wt, v in fields_of(env):
        if no == 1:
            version = v
        elif no in KINDS:
            kind, body = KINDS[no], v
    check(version == 1, 'envelope version %r' % version)
    check(kind is not None, 'envelope without message')
    spec = {no: (name, t) for no, name, t in SCHEMA[kind]}
    out = {}
    for no, name, t in SCHEMA[kind]:
        out[name] = {'u': 0, 's': '', 'd': 0.0, 'D': []}[t]
    for no, wt, v in fields_of(body):
        if no not in spec:
            continue
        name, t = spec[no]
        if t == 'u':
            out[name] = v
        elif t == 's':
            out[name] = v.decode()
        elif t == 'd':
            out[name] = struct.unpack('<d', v)[0]
        elif t == 'D':
            if wt == 2:   # packed
                out[name] = out[name] + list(struct.unpack('<%dd' % (len(v) // 8), v))
            else:
                out[name] = out[name] + [struct.unpack('<d', v)[0]]
    return kind, out


# ---- the fake learner --------------------------------------------------------

class Conn:
    def __init__(self, s):
        self.s = s
        self.buf = b''
        cert = s.getpeercert()
        self.peer_cn = dict(x[0] for x in cert['subject']).get('commonName')

    def send(self, kind, **fields):
        self.s.sendall(encode(kind, fields))

    def send_raw(self, data):
        self.s.sendall(data)

    def recv(self, timeout=5.0):
        """Next message as (kind, fields); None when the owner closed the
        connection; raises Fail on timeout."""
        deadline = time.time() + timeout
        while True:
            if len(self.buf) >= 4:
                n = struct.unpack('>I', self.buf[:4])[0]
                if len(self.buf) >= 4 + n:
                    env, self.buf = self.buf[4:4 + n], self.buf[4 + n:]
                    return decode(env)
            left = deadline - time.time()
            if left <= 0:
                raise Fail('no message from ownerd within %.1f s' % timeout)
            self.s.settimeout(left)
            try:
                d = self.s.recv(65536)
            except socket.timeout:
                continue
            except (ssl.SSLError, ConnectionError, OSError):
                return None
            if not d:
                return None
            self.buf += d

    def expect(self, kind, timeout=5.0):
        """Next message of this kind.  UpdateRequests the clock sends in
        between are skipped (their timing is random) unless asked for."""
        while True:
            m = self.recv(timeout)
            check(m is not None, 'connection closed while waiting for %s' % kind)
            if m[0] == 'update_request' and kind != 'update_request':
                continue
            check(m[0] == kind, 'expected %s, got %s %r' % (kind, m[0], m[1]))
            return m[1]

    def expect_closed(self, timeout=5.0):
        while True:
            m = self.recv(timeout)
            if m is None or m[0] != 'update_request':
                break
        check(m is None, 'expected the owner to close the connection, got %r' % (m,))

    def silent(self, secs):
        """Nothing arrives for secs seconds."""
        try:
            m = self.recv(secs)
        except Fail:
            return
        raise Fail('expected silence, got %r' % (m,))

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


class FakeLearner:
    def __init__(self, certs):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        ctx.load_cert_chain(os.path.join(certs, 'learner.crt'),
                            os.path.join(certs, 'learner.key'))
        ctx.load_verify_locations(os.path.join(certs, 'ca.crt'))
        ctx.verify_mode = ssl.CERT_REQUIRED
        self.ctx = ctx
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(('127.0.0.1', 0))
        self.ls.listen(8)
        self.port = self.ls.getsockname()[1]

    def accept(self, timeout=10.0):
        self.ls.settimeout(timeout)
        try:
            s, _ = self.ls.accept()
        except socket.timeout:
            raise Fail('ownerd did not connect within %.0f s' % timeout)
        s.settimeout(timeout)
        return Conn(self.ctx.wrap_socket(s, server_side=True))

    def drain(self):
        """Drop connections left in the backlog by owners that are gone."""
        self.ls.setblocking(False)
        try:
            while True:
                s, _ = self.ls.accept()
                s.close()
        except (BlockingIOError, socket.timeout):
            pass
        finally:
            self.ls.setblocking(True)

    def close(self):
        self.ls.close()


# ---- helpers ---------------------------------------------------------------

class Owner:
    """One ownerd process; stderr goes to a log file printed on failure."""
    all = []

    def __init__(self, exe, args, log, env=None):
        self.log = log
        self.f = open(log, 'a')
        self.p = subprocess.Popen([exe] + args, stdout=subprocess.DEVNULL, stderr=self.f,
                                  env=env)
        Owner.all.append(self)

    def wait(self, timeout=10.0):
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            raise Fail('ownerd did not exit within %.0f s' % timeout)

    def alive(self):
        return self.p.poll() is None

    def kill(self, sig=signal.SIGKILL):
        if self.alive():
            self.p.send_signal(sig)


def run(cmd, timeout=30):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                          timeout=timeout)


def expect_error(cmd, must_contain, code=2):
    p = run(cmd)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    check(p.returncode == code, 'exit %d, expected %d: %s\n%s' % (
        p.returncode, code, ' '.join(map(str, cmd[1:])), p.stderr))
    check(len(lines) == 1, 'expected one stderr line, got %d: %s\n%s' % (
        len(lines), ' '.join(map(str, cmd[1:])), p.stderr))
    for s in must_contain:
        check(s in lines[0], 'stderr %r does not mention %r' % (lines[0], s))
    print('ok error:', lines[0])


def job_file(path):
    """The job ledger in an ownerd ledger directory (docs/ledger.md §8): the
    newest job's file (DIR/none when there is none)."""
    if not os.path.isdir(path):
        return path
    jobs = os.path.join(path, 'jobs')   # format 5 on (docs/ledger.md §10)
    files = sorted((os.path.getmtime(os.path.join(jobs, f)), f) for f in os.listdir(jobs)
                   if f.endswith('.ledger') and not f.startswith('.')) if os.path.isdir(jobs) else []
    return os.path.join(jobs, files[-1][1]) if files else os.path.join(path, 'none')


def ledger_records(path):
    path = job_file(path)
    size = os.path.getsize(path)
    check((size - HEADER) % RECORD == 0, 'ledger size %d is not header + records' % size)
    return (size - HEADER) // RECORD


def metric(port, name):
    """The value of the series `name`, unlabelled or with labels (the job's
    gauges carry job_id, docs/operations.md §2)."""
    body = urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port, timeout=5).read()
    for line in body.decode().splitlines():
        if line.startswith(name + ' ') or line.startswith(name + '{'):
            return float(line.split()[-1])
    raise Fail('metric %s not found' % name)


def clipped_mean_grad_linear(X, y, theta, clip):
    """(1/n) sum clip(2 (theta.x - y) x), clip to L1 norm `clip` -- docs/design.md §2/§3."""
    c = 2.0 * (X @ theta - y)
    G = c[:, None] * X
    l1 = np.abs(G).sum(axis=1)
    scale = np.minimum(1.0, clip / np.where(l1 > 0, l1, 1.0))
    return (G * scale[:, None]).mean(axis=0)


def welcome(conn, p, job='test-job', model='linear', T=10, clip=1.0, mode=1, K=None):
    # 'lambda' is a Python keyword: build the fields as a dict.  K: the
    # learner's planned answer cap (None: not sent, as an older learner).
    f = {'job': job, 'model': model, 'T': T, 'N': 2, 'n_total': 120, 'rho': 1.0,
         'lambda': 0.01, 'theta_max': 10.0, 'clip_l1': clip, 'mode': mode, 'p': p}
    if K is not None:
        f['answers_cap'] = K
    conn.send_raw(encode('welcome', f))


# ---- the tests ---------------------------------------------------------------

def main(ownerd, dpasync, shim=None):
    work = tempfile.mkdtemp(prefix='dp-ownerd-')
    ok = False
    try:
        certs = os.path.join(work, 'certs')
        p = run([dpasync, 'certs', '--out', certs, '--owners', '2'])
        check(p.returncode == 0, 'dpasync certs failed: %s' % p.stderr)

        rng = np.random.default_rng(20261121)
        n, dfeat = 60, 3
        X = rng.normal(size=(n, dfeat))
        y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=n)
        data = os.path.join(work, 'owner-1.csv')
        with open(data, 'w') as f:
            f.write('x1,x2,x3,y\n')
            for i in range(n):
                f.write(','.join(repr(float(v)) for v in X[i]) + ',%r\n' % float(y[i]))
        Xb = np.hstack([X, np.ones((n, 1))])   # --bias appends a constant 1 last
        p = dfeat + 1

        fl = FakeLearner(certs)
        base = [ownerd, '--learner', '127.0.0.1:%d' % fl.port,
                '--ca', os.path.join(certs, 'ca.crt'),
                '--cert', os.path.join(certs, 'owner-1.crt'),
                '--key', os.path.join(certs, 'owner-1.key'),
                '--data', data, '--bias', '--log-level', 'debug', '--once']
        log = os.path.join(work, 'ownerd.log')

        test_cli(base, work, data)
        test_main_flow(ownerd, dpasync, base, work, fl, Xb, y, n, p, log)
        fl.drain()
        test_no_noise(ownerd, base, work, fl, Xb, y, p, log)
        fl.drain()
        test_broadcast(ownerd, base, work, fl, p, log)
        fl.drain()
        test_welcome_cap(ownerd, base, work, fl, p, log)
        fl.drain()
        test_theta_cap(ownerd, base, work, fl, p, log)
        fl.drain()
        test_no_values_logged(ownerd, base, work, fl, certs)
        fl.drain()
        test_reconnect_backoff(ownerd, base, work, log)
        test_connect_refused_quiet(ownerd, base, work)
        test_bad_server_name(ownerd, base, work, fl, log)
        fl.drain()
        test_reserve_flow(ownerd, base, work, fl, p, log)
        fl.drain()
        if shim:
            test_ledger_failure(ownerd, base, work, fl, p, log, shim, False)
            fl.drain()
            test_ledger_failure(ownerd, base, work, fl, p, log, shim, True)
            fl.drain()
            test_slow_settle(ownerd, base, work, fl, p, log, shim)
        fl.close()
        ok = True
    except Fail as e:
        print('FAIL:', e)
    finally:
        for o in Owner.all:
            o.kill()
            try:
                o.p.wait(5)
            except subprocess.TimeoutExpired:
                pass
        if not ok:
            log = os.path.join(work, 'ownerd.log')
            if os.path.exists(log):
                print('---- ownerd log (last 60 lines) ----')
                with open(log) as f:
                    print(''.join(f.readlines()[-60:]))
        shutil.rmtree(work, ignore_errors=True)
    if ok:
        print('PASS')
    return 0 if ok else 1


def test_cli(base, work, data):
    ownerd = base[0]
    led = os.path.join(work, 'cli', 'ledger')
    os.makedirs(os.path.dirname(led))
    args = base[1:] + ['--ledger', led]
    p = run([ownerd, '--help'])
    check(p.returncode == 0 and '--learner' in p.stdout and '--ledger' in p.stdout,
          '--help: %d %r' % (p.returncode, p.stdout[:200]))
    p = run([ownerd, '--version'])
    check(p.returncode == 0 and p.stdout.startswith('ownerd '), '--version: %r' % p.stdout)
    p = run([ownerd] + args + ['--check-config'])
    check(p.returncode == 0 and '[ownerd]' in p.stdout, '--check-config: %d %s%s' % (
        p.returncode, p.stdout, p.stderr))
    check(not os.path.exists(led), '--check-config created the ledger')

    expect_error([ownerd, '--bogus'], ['bogus'])
    expect_error([ownerd] + [a for a in args if a != '--bias'][:-2], ['ledger'])  # required
    expect_error([ownerd] + args + ['--epsilon', '0'], ['epsilon'])
    expect_error([ownerd] + args + ['--epsilon', 'inf'], ['--allow-no-noise'])
    expect_error([ownerd] + args + ['--rate', '-1'], ['rate'])
    expect_error([ownerd] + args + ['--learner', 'localhost'], ['--learner'])
    expect_error([ownerd] + args + ['--data', os.path.join(work, 'missing.csv')],
                 ['missing.csv'])
    bad = os.path.join(work, 'bad.csv')
    with open(bad, 'w') as f:
        f.write('x1,x2,x3,y\n1,2,3,4\n1,2,oops,4\n')
    expect_error([ownerd] + args + ['--data', bad], ['bad.csv:3'])
    expect_error([ownerd] + args + ['--target', 'price'], ['price'])
    expect_error([ownerd] + args + ['--cert', os.path.join(work, 'nocert.crt')],
                 ['nocert.crt'])
    expect_error([ownerd] + args + ['--key', os.path.join(work, 'certs', 'owner-2.key')],
                 ['owner-2.key'])
    expect_error([ownerd] + args + ['--ledger', os.path.join(work, 'nodir', 'ledger')],
                 ['nodir'])
    junk = os.path.join(work, 'junk.ledger')
    with open(junk, 'wb') as f:
        f.write(b'not a ledger' * 40)
    expect_error([ownerd] + args + ['--ledger', junk], ['junk.ledger'])
    expect_error([ownerd] + args + ['--metrics-listen', 'nohost'], ['metrics-listen'])
    # Config file and flag precedence.
    cfg = os.path.join(work, 'ownerd.ini')
    with open(cfg, 'w') as f:
        f.write('[ownerd]\nepsilon = 0.5\nrate = 3\n')
    p = run([ownerd, '--config', cfg] + args + ['--rate', '4', '--check-config'])
    check(p.returncode == 0 and re.search(r'epsilon = 0\.5\b', p.stdout)
          and re.search(r'rate = 4\b', p.stdout), 'config file: %s%s' % (p.stdout, p.stderr))
    with open(cfg, 'w') as f:
        f.write('[ownerd]\nnosuchkey = 1\n')
    expect_error([ownerd, '--config', cfg] + args, ['nosuchkey'])


def test_main_flow(ownerd, dpasync, base, work, fl, Xb, y, n, p, log):
    d = os.path.join(work, 'main')
    os.makedirs(d)
    led = os.path.join(d, 'owner-1.ledger')
    pf = os.path.join(d, 'ports')
    # The ledger as one synced record per answer (--no-reserve-ahead), so
    # that records can be counted while ownerd runs; the default protocol
    # (docs/ledger.md §9) is test_reserve_flow's.
    args = base[1:] + ['--no-reserve-ahead', '--ledger', led, '--epsilon', '1',
                       '--answers-cap', '3', '--rate', '20', '--metrics-listen', '127.0.0.1:0',
                       '--port-file', pf]
    o = Owner(ownerd, args, log)
    c = fl.accept()
    check(c.peer_cn == 'owner-1', 'client certificate CN %r' % c.peer_cn)
    h = c.expect('hello')
    fp = h.pop('schema', '')
    check(h.pop('job', '') == '' and h.pop('job_answers_cap', 0) == 0, 'Hello names a job %r' % h)
    check(h == {'version': 1, 'owner_id': 'owner-1', 'n_rows': n, 'n_features': p,
                'epsilon': 1.0, 'answers_cap': 3, 'answers_given': 0, 'rate': 20.0, 'bias': 1},
          'Hello %r' % h)
    check(re.fullmatch('sha256:[0-9a-f]{64}', fp), 'Hello.schema %r' % fp)
    check(not os.path.exists(job_file(led)), 'ledger created before the Welcome')
    welcome(c, p)
    c.expect('update_request', timeout=5)
    check(ledger_records(led) == 0, 'ledger not created empty at Welcome')
    # One request outstanding at most: the clock (20/s) stays quiet.
    c.silent(0.6)
    with open(pf) as f:
        mport = int(re.search(r'^metrics=(\d+)$', f.read(), re.M).group(1))
    check(metric(mport, 'dpasync_owner_connected') == 1, 'connected gauge')

    theta = np.array([0.3, -0.2, 0.1, 0.05])
    exact = clipped_mean_grad_linear(Xb, y, theta, 1.0)
    c.send('query', k=1, theta=list(theta))
    a = c.expect('answer')
    check(a['k'] == 1 and len(a['gradient']) == p, 'answer k/dim %r' % a)
    check(a['answers_given'] == 1, 'answers_given %r' % a)
    # eps_q = 1/3 rounded down to the nano-epsilon (ledger.h); left = 1 - spent.
    check(abs(a['epsilon_spent'] - 1 / 3) < 2e-9 and a['epsilon_spent'] <= 1 / 3,
          'epsilon_spent %r' % a['epsilon_spent'])
    check(abs(a['epsilon_left'] - (1 - a['epsilon_spent'])) < 2e-9, 'epsilon_left %r' % a)
    check(ledger_records(led) == 1, 'one ledger record per answer')
    # Noise: b = 2 clip K / (n eps) per coordinate (docs/design.md §3).  P(|Lap(b)| >
    # 40 b) = e^-40 ~ 4e-18 per coordinate, and exact equality in every
    # coordinate needs the discrete noise to be 0 on a 2^-40 grid four times.
    b = 2 * 1.0 * 3 / (n * 1.0)
    diff = np.abs(np.array(a['gradient']) - exact)
    check(np.all(diff < 40 * b), 'noise too large: %r (b=%g)' % (diff, b))
    check(np.any(diff > 0), 'answer carries no noise')

    c.expect('update_request', timeout=5)      # pending cleared by the Query
    c.send('query', k=1, theta=list(theta))
    r = c.expect('refuse')
    check(r['k'] == 1 and r['reason'] == 'repeated query', 'repeat refused: %r' % r)
    check(ledger_records(led) == 1, 'a refusal wrote to the ledger')
    c.send('query', k=2, theta=list(theta))
    a = c.expect('answer')
    check(a['k'] == 2 and a['answers_given'] == 2, 'second answer %r' % a)
    c.send('query', k=7, theta=list(theta))
    a = c.expect('answer')
    check(a['k'] == 7 and a['answers_given'] == 3, 'third answer %r' % a)
    check(a['epsilon_spent'] <= 1.0 and a['epsilon_spent'] > 1 - 1e-8,
          'spent after K answers %r' % a['epsilon_spent'])
    check(ledger_records(led) == 3, 'three records')
    c.silent(0.8)   # budget exhausted: no more UpdateRequest
    c.send('query', k=8, theta=list(theta))
    r = c.expect('refuse')
    check(r['k'] == 8 and r['reason'] == 'budget exhausted', 'past the cap: %r' % r)
    check(ledger_records(led) == 3, 'record past the cap')
    check(metric(mport, 'dpasync_owner_answers_total') == 3, 'answers_total')
    check(metric(mport, 'dpasync_owner_refusals_total') == 2, 'refusals_total')
    check(abs(metric(mport, 'dpasync_owner_epsilon_spent') - a['epsilon_spent']) < 1e-12,
          'epsilon_spent gauge')
    check(metric(mport, 'dpasync_owner_gradient_seconds_count') == 3, 'gradient histogram')
    # The clock: every request came from a tick; here the learner also sent
    # queries no request asked for, so only the ticks' own invariants hold.
    ticks = metric(mport, 'dpasync_owner_clock_ticks_total')
    skipped = metric(mport, 'dpasync_owner_clock_ticks_skipped_total')
    check(ticks >= 2 and 0 <= skipped <= ticks, 'clock ticks %g skipped %g' % (ticks, skipped))
    body = urllib.request.urlopen('http://127.0.0.1:%d/metrics' % mport, timeout=5).read().decode()
    check(re.search(r'^dpasync_build_info\{program="ownerd",version="[^"]+",openssl="OpenSSL [^"]+",'
                    r'libuv="1\.[^"]+"\} 1$', body, re.M), 'dpasync_build_info of ownerd')
    check(metric(mport, 'process_resident_memory_bytes') > 1e6 and
          metric(mport, 'process_open_fds') >= 3 and metric(mport, 'process_cpu_seconds_total') >= 0 and
          abs(metric(mport, 'process_start_time_seconds') - time.time()) < 600, 'process metrics')

    # A NaN in theta closes the connection; the daemon reconnects.
    c.send('query', k=9, theta=[0.1, float('nan'), 0.0, 0.0])
    c.expect_closed()
    c.close()
    c = fl.accept(timeout=15)
    h = c.expect('hello')
    check(h['answers_given'] == 3, 'Hello after reconnect %r' % h)
    check(metric(mport, 'dpasync_owner_reconnects_total') >= 1, 'reconnects_total')
    welcome(c, p)
    # Wrong dimension closes too.
    c.send('query', k=10, theta=[0.0] * (p + 1))
    c.expect_closed()
    c.close()
    # A query before the Welcome, and a message only owners send, close too.
    c = fl.accept(timeout=15)
    c.expect('hello')
    c.send('query', k=11, theta=[0.0] * p)
    c.expect_closed()
    c.close()
    c = fl.accept(timeout=15)
    c.expect('hello')
    welcome(c, p)
    c.send('update_request')
    c.expect_closed()
    c.close()
    check(o.alive(), 'ownerd exited after bad messages')

    # kill -9 and restart: the ledger carries on.  A torn partial record at
    # the end (a crash inside write()) is dropped: no answer left for it.
    o.kill()
    o.wait()
    with open(job_file(led), 'ab') as f:
        f.write(b'\x00torn-record\xff' * 2)
    o = Owner(ownerd, args, log)
    c = fl.accept()
    h = c.expect('hello')
    check(h['answers_given'] == 3, 'Hello after restart %r' % h)
    # One process per ledger; a ledger belongs to one owner.
    expect_error([ownerd] + args, ['in use'], code=1)
    other = [a.replace('owner-1.crt', 'owner-2.crt').replace('owner-1.key', 'owner-2.key')
             for a in args]
    expect_error([ownerd] + other, ['owner-2'])
    welcome(c, p)
    c.send('query', k=5, theta=list(theta))     # below the last k, never answered
    c.expect_closed()
    # The job's ledger was opened for writing at the Welcome: the tail is gone.
    check(ledger_records(led) == 3, 'torn tail not dropped')
    c.close()
    c = fl.accept(timeout=15)
    c.expect('hello')
    welcome(c, p)
    c.send('query', k=7, theta=list(theta))
    r = c.expect('refuse')
    check(r['reason'] == 'repeated query', 'repeat after restart %r' % r)
    c.send('query', k=12, theta=list(theta))
    r = c.expect('refuse')
    check(r['reason'] == 'budget exhausted', 'cap after restart %r' % r)
    check(ledger_records(led) == 3, 'records after restart')

    # Done: the model is saved in the ledger directory (its own: sibling
    # ledger directories share their parent) and ownerd exits 0.
    final = [0.5, -1.5, 0.25, 0.125]
    c.send('done', final_theta=final, T=10)
    rc = o.wait()
    check(rc == 0, 'exit code after Done %d' % rc)
    with open(os.path.join(led, 'model.json')) as f:
        mf = json.load(f)
    check(mf['theta'] == final and mf['model'] == 'linear' and mf['T'] == 10,
          'model.json %r' % mf)
    c.close()
    # --log-level debug: the per-answer lines are there (debug), and the
    # restarted process wrote its final summary with the ledger's totals.
    with open(log) as f:
        text = f.read()
    check(re.search(r' debug answer: answered k=7 answers=3/3 ', text), 'per-answer debug line')
    check(not re.search(r' info answer: answered ', text), 'per-answer line at info')
    check(re.search(r' info owner: summary final answers=0 refusals=2 ticks=\d+ skipped=\d+ '
                    r'ledger_answers=3/3 spent=\S+ left=\S+ connected=\d lifetime_spent=[\d.e+-]+\n',
                    text), 'final summary of the restarted ownerd (with the lifetime figure)')

    # The lifetime cap is the directory's, 1 from the first start (docs/ledger.md
    # §11): a configuration cannot raise it, the data owner does, on purpose.
    # Raised to 10 before the next start, so that test-job's cap 1 is not
    # what the lifetime leaves (docs/ledger.md §8 "A new job's cap is what is
    # left") and only --epsilon can explain it.
    p_raise = run([dpasync, 'ledger', 'raise-lifetime', led, '--to', '10', '--reason',
                   'another job'])
    check(p_raise.returncode == 0, 'raise-lifetime: %s' % p_raise.stderr)
    # A job's caps are bound for good: the same job with another epsilon stops
    # ownerd (exit 2).  Another job gets a ledger of its own, and its request
    # ids start again at 1 (docs/ledger.md §8).
    o = Owner(ownerd, args[:-4] + ['--epsilon', '2'] + args[-4:], log)
    c = fl.accept()
    h = c.expect('hello')
    check(h.get('job') == 'test-job' and h.get('job_answers_cap') == 3 and
          h['answers_given'] == 3, 'Hello names the job of its ledger %r' % h)
    welcome(c, p)
    rc = o.wait()
    check(rc == 2, 'same job with another epsilon: exit %d, expected 2' % rc)
    c.close()
    o = Owner(ownerd, args + ['--lifetime-epsilon', '10'], log)
    c = fl.accept()
    c.expect('hello')
    welcome(c, p, job='another-job')
    c.send('query', k=1, theta=list(theta))
    a = c.expect('answer')
    check(a['answers_given'] == 1, 'another job: its own ledger from k=1 %r' % a)
    check(len([f for f in os.listdir(os.path.join(led, 'jobs')) if f.endswith('.ledger')]) == 2,
          'two jobs, two ledger files: %r' % os.listdir(os.path.join(led, 'jobs')))
    o.kill(signal.SIGTERM)
    check(o.wait() == 0, 'SIGTERM exit code')
    c.close()
    print('ok main flow')


def test_no_noise(ownerd, base, work, fl, Xb, y, p, log):
    d = os.path.join(work, 'exact')
    os.makedirs(d)
    led = os.path.join(d, 'ledger')
    args = base[1:] + ['--no-reserve-ahead', '--ledger', led, '--epsilon', 'inf',
                       '--allow-no-noise', '--rate', '5', '--model-out', os.path.join(d, 'final.json')]
    o = Owner(ownerd, args, log)
    c = fl.accept()
    h = c.expect('hello')
    check(math.isinf(h['epsilon']) and h['answers_cap'] == 0, 'Hello %r' % h)
    # Regression targets do not fit a logistic job: the owner says why
    # (Goodbye BAD_DATA) and exits 2 (docs/ownerd.md "Exit codes").
    welcome(c, p, model='logistic', T=4)
    g = c.expect('goodbye')
    check(g['code'] == 3 and 'not -1 or +1' in g['text'], 'Goodbye %r' % g)
    c.expect_closed()
    c.close()
    check(o.wait() == 2, 'labels that do not fit the model: exit %s, expected 2' % o.p.returncode)
    o = Owner(ownerd, args, log)
    c = fl.accept(timeout=15)
    c.expect('hello')
    welcome(c, p, T=4, clip=0.7)   # K = T = 4
    for k, theta in enumerate([[0.0] * p, [1.0, -2.0, 0.5, 0.0], [0.3, 0.3, -0.3, 1.0],
                               [-5.0, 2.0, 9.0, -1.0]], start=1):
        c.send('query', k=k, theta=theta)
        a = c.expect('answer')
        exact = clipped_mean_grad_linear(Xb, y, np.array(theta), 0.7)
        err = np.max(np.abs(np.array(a['gradient']) - exact))
        check(err < 1e-9, 'exact answer off by %g: %r vs %r' % (err, a['gradient'], exact))
        check(math.isinf(a['epsilon_spent']) and a['answers_given'] == k, 'answer %r' % a)
    c.send('query', k=5, theta=[0.0] * p)
    r = c.expect('refuse')
    check(r['reason'] == 'budget exhausted', 'K = T caps answers: %r' % r)
    check(ledger_records(led) == 4, 'records')
    o.kill(signal.SIGTERM)
    rc = o.wait()
    check(rc == 0, 'SIGTERM exit %d' % rc)
    c.close()
    print('ok no-noise answers')


def test_broadcast(ownerd, base, work, fl, p, log):
    # In broadcast mode the learner queries on its own schedule: the clock
    # sends no UpdateRequest, queries are still answered.
    d = os.path.join(work, 'broadcast')
    os.makedirs(d)
    args = base[1:] + ['--ledger', os.path.join(d, 'ledger'), '--rate', '50']
    o = Owner(ownerd, args, log)
    c = fl.accept()
    c.expect('hello')
    welcome(c, p, mode=2)
    c.silent(1.0)
    c.send('query', k=3, theta=[0.1] * p)
    a = c.expect('answer')
    check(a['k'] == 3 and a['answers_given'] == 1, 'broadcast answer %r' % a)
    # K = T = 10 from the Welcome: eps_q = epsilon / 10.
    check(abs(a['epsilon_spent'] - 0.1) < 2e-9, 'eps_q with K = T: %r' % a)
    c.silent(0.5)
    o.kill(signal.SIGTERM)
    check(o.wait() == 0, 'SIGTERM exit code')
    c.close()
    print('ok broadcast')


def test_welcome_cap(ownerd, base, work, fl, p, log):
    # Without --answers-cap the ledger is bound with the Welcome's K (the
    # learner's plan), not T; the Hello reports that K from then on.
    d = os.path.join(work, 'wcap')
    os.makedirs(d)
    led = os.path.join(d, 'ledger')
    args = base[1:] + ['--no-reserve-ahead', '--ledger', led, '--rate', '2.5']
    o = Owner(ownerd, args, log)
    c = fl.accept()
    h = c.expect('hello')
    check(h['answers_cap'] == 0 and h['rate'] == 2.5, 'Hello before any ledger %r' % h)
    welcome(c, p, T=10, K=3)
    theta = [0.1] * p
    for k in (1, 2, 3):
        c.send('query', k=k, theta=theta)
        a = c.expect('answer')
        check(a['answers_given'] == k, 'answer %r' % a)
    # eps_q = epsilon / K = 1/3 (not 1/T = 0.1), rounded down to the nano-epsilon.
    check(abs(a['epsilon_spent'] - 1.0) < 1e-8 and a['epsilon_spent'] <= 1.0,
          'spent after K = 3 answers: %r' % a)
    c.send('query', k=4, theta=theta)
    r = c.expect('refuse')
    check(r['reason'] == 'budget exhausted', 'past the Welcome K: %r' % r)
    check(ledger_records(led) == 3, 'records with K from the Welcome')
    c.send('query', k=5, theta=[float('nan')] * p)    # close: the daemon reconnects
    c.expect_closed()
    c.close()
    c = fl.accept(timeout=15)
    h = c.expect('hello')
    check(h['job_answers_cap'] == 3 and h['job'] == 'test-job' and h['answers_given'] == 3
          and h['rate'] == 2.5 and h.get('answers_cap', 0) == 0,
          'Hello after the ledger was bound %r' % h)
    # Another K for the same job: the cap of a ledger never changes.
    welcome(c, p, T=10, K=4)
    check(o.wait() == 2, 'a changed K must stop ownerd with exit 2, got %s' % o.p.returncode)
    c.close()
    # A restarted process reports the ledger's K in its Hello.
    o = Owner(ownerd, args, log)
    c = fl.accept()
    h = c.expect('hello')
    check(h['job_answers_cap'] == 3 and h['answers_given'] == 3, 'Hello after restart %r' % h)
    o.kill(signal.SIGTERM)
    check(o.wait() == 0, 'SIGTERM exit code')
    c.close()
    fl.drain()

    # An owner's own --answers-cap is kept over the learner's K.
    led = os.path.join(d, 'own.ledger')
    args = base[1:] + ['--ledger', led, '--answers-cap', '5']
    o = Owner(ownerd, args, log)
    c = fl.accept()
    h = c.expect('hello')
    check(h['answers_cap'] == 5 and h['rate'] == 1.0, 'Hello with an own cap %r' % h)
    welcome(c, p, T=10, K=3)
    c.send('query', k=1, theta=theta)
    a = c.expect('answer')
    check(abs(a['epsilon_spent'] - 0.2) < 2e-9, 'eps_q with the own cap 5: %r' % a)
    for k in (2, 3, 4, 5):
        c.send('query', k=k, theta=theta)
        a = c.expect('answer')
    check(a['answers_given'] == 5, 'fifth answer %r' % a)
    o.kill(signal.SIGTERM)
    check(o.wait() == 0, 'SIGTERM exit code')
    c.close()
    with open(log) as f:
        check('keeping answers-cap 5 over the learner\'s planned 3' in f.read(),
              'the kept cap is not logged')
    fl.drain()

    # The Welcome timeout is a setting: with 1 s, a learner that sends no
    # Welcome is left and retried (the default is 10 minutes, since the
    # learner withholds it until every owner has said Hello).
    p2 = run([ownerd] + args + ['--check-config'])
    check(p2.returncode == 0 and re.search(r'welcome-timeout = (600|10m)\b', p2.stdout),
          'welcome-timeout default: %s%s' % (p2.stdout, p2.stderr))
    o = Owner(ownerd, args + ['--welcome-timeout', '1'], log)
    c = fl.accept()
    c.expect('hello')
    t0 = time.time()
    c.expect_closed(timeout=5)
    check(0.8 <= time.time() - t0 < 4, 'welcome-timeout 1 s closed after %.1f s' %
          (time.time() - t0))
    c.close()
    c = fl.accept(timeout=15)
    c.expect('hello')
    o.kill(signal.SIGTERM)
    check(o.wait() == 0, 'SIGTERM exit code')
    c.close()
    with open(log) as f:
        check('no Welcome within 1 s (welcome-timeout)' in f.read(), 'welcome timeout not logged')
    print('ok answer cap from the Welcome, own cap kept, welcome-timeout')


def test_theta_cap(ownerd, base, work, fl, p, log):
    # --theta-max (docs/privacy.md §7): a theta with some |theta_j| above it
    # is refused with a reason, nothing charged or written; at the bound it
    # is answered.  Set here through the config file key; the default is
    # printed by --check-config, a bound <= 0 is a startup error.
    d = os.path.join(work, 'thcap')
    os.makedirs(d)
    led = os.path.join(d, 'ledger')
    args = base[1:] + ['--no-reserve-ahead', '--ledger', led, '--answers-cap', '3', '--rate', '5']
    pr = run([ownerd] + args + ['--check-config'])
    check(pr.returncode == 0 and re.search(r'^theta-max = (1e\+?0?6|1000000)$', pr.stdout, re.M),
          'default theta-max not printed: %s%s' % (pr.stdout, pr.stderr))
    expect_error([ownerd] + args + ['--theta-max', '0'], ['theta-max'])
    expect_error([ownerd] + args + ['--theta-max', 'nan'], ['theta-max'])
    cfg = os.path.join(d, 'ownerd.ini')
    with open(cfg, 'w') as f:
        f.write('[ownerd]\ntheta-max = 100\n')
    o = Owner(ownerd, ['--config', cfg] + args, log)
    c = fl.accept()
    c.expect('hello')
    welcome(c, p)
    for k, theta in ((1, [0.0, 100.5, 0.0, 0.0]), (2, [0.0, 0.0, -1e300, 0.0]),
                     (3, [-float.fromhex('0x1.fffffffffffffp+1023')] + [0.0] * (p - 1))):
        c.send('query', k=k, theta=theta)
        r = c.expect('refuse')
        check(r['k'] == k and 'theta-max' in r['reason'], 'theta beyond the bound: %r' % r)
    check(ledger_records(led) == 0, 'a refused theta wrote to the ledger')
    c.send('query', k=4, theta=[100.0, -100.0, 0.5, 0.0])
    a = c.expect('answer')
    check(a['k'] == 4 and a['answers_given'] == 1, 'theta at the bound answered: %r' % a)
    check(abs(a['epsilon_spent'] - 1 / 3) < 2e-9, 'one share spent: %r' % a)
    check(ledger_records(led) == 1, 'records after the answer')
    o.kill(signal.SIGTERM)
    check(o.wait() == 0, 'SIGTERM exit')
    c.close()
    print('ok theta-max')


def test_no_values_logged(ownerd, base, work, fl, certs):
    # No cell value reaches ownerd's output (docs/privacy.md §8): a
    # regression target under a logistic Welcome (it hangs up: "not -1 or
    # +1"), a bad number at startup, a level the schema does not list.
    # Every cell is written with 6 significant digits, the way %g would
    # print it too, and searched for in all the daemon printed.
    d = os.path.join(work, 'values')
    os.makedirs(d)
    rng = np.random.default_rng(7)
    rows = [[float('%.6g' % v) for v in rng.normal(size=4) * [1, 1, 1, 3.7]]
            for _ in range(20)]
    cells = set()
    data = os.path.join(d, 'reg.csv')
    with open(data, 'w') as f:
        f.write('x1,x2,x3,y\n')
        for r in rows:
            f.write(','.join('%.6g' % v for v in r) + '\n')
            cells.update('%.6g' % v for v in r)
            cells.update('%g' % v for v in r)
    cells = {s for s in cells if len(s.lstrip('-').replace('.', '')) >= 4}
    check(len(cells) > 60, 'too few distinctive cells: %d' % len(cells))
    vlog = os.path.join(d, 'ownerd.log')
    i = base.index('--data')
    args = base[1:i] + base[i + 2:] + ['--ledger', os.path.join(d, 'ledger'), '--rate', '5']
    o = Owner(ownerd, args + ['--data', data], vlog)
    c = fl.accept()
    c.expect('hello')
    welcome(c, 4, model='logistic')
    c.expect('goodbye')
    c.expect_closed()
    c.close()
    o.kill(signal.SIGTERM)
    o.wait()
    # startup: a bad number, and a level outside the schema's list
    bad = os.path.join(d, 'bad.csv')
    with open(bad, 'w') as f:
        f.write('x1,x2,x3,y\n1,2,3,4\n1,2,7.31e2q,4\n')
    pr = run([ownerd] + args + ['--data', bad])
    schema = os.path.join(d, 'schema.json')
    with open(schema, 'w') as f:
        json.dump({'format': 'dpasync-schema', 'version': 1,
                   'target': {'name': 'y', 'kind': 'numeric'},
                   'columns': [{'name': 'x1', 'kind': 'onehot', 'levels': ['a', 'b']}]}, f)
    lv = os.path.join(d, 'levels.csv')
    with open(lv, 'w') as f:
        f.write('x1,y\na,1\nsecretlevel,2\n')
    ps = run([ownerd] + [a for a in args if a != '--bias'] + ['--data', lv, '--schema', schema])
    with open(vlog) as f:
        out = f.read() + pr.stderr + pr.stdout + ps.stderr + ps.stdout
    leaked = sorted(s for s in cells | {'7.31e2q', 'secretlevel'} if s in out)
    check(not leaked, 'cell values in ownerd output: %s\n%s' % (leaked[:10], out))
    # ... while each failure still names where it is
    check('row 1: target' in out and 'not -1 or +1' in out,
          'the logistic refusal is not logged:\n%s' % out)
    check(pr.returncode == 2 and 'bad.csv:3' in pr.stderr and 'x3' in pr.stderr,
          'bad number at startup: %d %s' % (pr.returncode, pr.stderr))
    check(ps.returncode == 2 and 'levels.csv:3' in ps.stderr,
          'unknown level at startup: %d %s' % (ps.returncode, ps.stderr))
    print('ok no cell values in the logs (%d cells searched)' % (len(cells) + 2))


def test_reconnect_backoff(ownerd, base, work, log):
    # A listener that drops every connection: ownerd keeps retrying with a
    # backoff of at most 0.1 + 0.2 + 0.4 s before its 4th attempt.
    ls = socket.socket()
    ls.bind(('127.0.0.1', 0))
    ls.listen(16)
    port = ls.getsockname()[1]
    d = os.path.join(work, 'backoff')
    os.makedirs(d)
    args = base[1:] + ['--learner', '127.0.0.1:%d' % port, '--ledger',
                       os.path.join(d, 'ledger')]
    o = Owner(ownerd, args, log)
    ls.settimeout(5)
    t0 = time.time()
    for _ in range(4):
        s, _ = ls.accept()
        s.close()
    check(time.time() - t0 < 4, '4 attempts took %.1f s' % (time.time() - t0))
    check(o.alive(), 'ownerd gave up')
    o.kill(signal.SIGINT)
    check(o.wait() == 0, 'SIGINT exit code')
    ls.close()
    print('ok reconnect')


def test_connect_refused_quiet(ownerd, base, work):
    # Nothing listens on the learner's address (an idle owner between
    # jobs): the first refusal is a warn line, the next ones info lines
    # with their attempt numbers (docs/ownerd.md "Reconnection").
    ls = socket.socket()
    ls.bind(('127.0.0.1', 0))
    port = ls.getsockname()[1]
    ls.close()   # bound, never listened: connect() is refused
    d = os.path.join(work, 'refused')
    os.makedirs(d)
    olog = os.path.join(d, 'ownerd.log')
    o = Owner(ownerd, base[1:] + ['--learner', '127.0.0.1:%d' % port, '--ledger',
                                  os.path.join(d, 'ledger')], olog)
    pat = re.compile(r' (warn|info) conn: attempt=(\d+) failed reason=connect ')
    end = time.time() + 10
    while time.time() < end and len(pat.findall(open(olog).read())) < 4:
        time.sleep(0.05)
    o.kill(signal.SIGINT)
    check(o.wait() == 0, 'SIGINT exit code')
    got = [(lvl, int(n)) for lvl, n in pat.findall(open(olog).read())]
    check(len(got) >= 4 and got[0] == ('warn', 1) and
          all(lvl == 'info' and n == k for k, (lvl, n) in enumerate(got[1:], 2)),
          'refused attempts logged as %r' % got)
    print('ok connect refused: 1 warn line, then info (%d attempts)' % len(got))


def failures(port):
    """{reason: count} of dpasync_owner_connect_failures_total."""
    body = urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port, timeout=5).read()
    return {m.group(1): float(m.group(2)) for m in
            re.finditer(r'^dpasync_owner_connect_failures_total\{reason="([a-z_]+)"\} (\S+)$',
                        body.decode(), re.M)}


def test_bad_server_name(ownerd, base, work, fl, log):
    # The learner's certificate does not carry this name: no Hello is sent.
    # What answered was not verified as the learner, so nothing it sends
    # may end the owner (docs/ownerd.md "Reconnection"): ownerd retries,
    # one warn line per attempt saying to check --server-name, each counted
    # in dpasync_owner_connect_failures_total{reason="name"}, and exits 0
    # on SIGTERM.  With --once it gives up after --connect-attempts: exit 1
    # (the old ownerd exited 2, then 1, at the first attempt).
    d = os.path.join(work, 'sname')
    os.makedirs(d)
    pf = os.path.join(d, 'ports')
    args = [a for a in base[1:] if a != '--once'] + [
        '--server-name', 'someone-else', '--ledger', os.path.join(d, 'l'),
        '--metrics-listen', '127.0.0.1:0', '--port-file', pf]
    start = open(log).read().count('\n') if os.path.exists(log) else 0
    o = Owner(ownerd, args, log)
    for i in range(3):
        try:
            c = fl.accept()
            m = c.recv(3)
            check(m is None, 'owner talked to a learner with the wrong name: %r' % (m,))
        except ssl.SSLError:
            pass
    end = time.time() + 10
    while time.time() < end:
        lines = [l for l in open(log).read().splitlines()[start:]
                 if re.search(r' warn conn: attempt=\d+ failed reason=name ', l)]
        if len(lines) >= 3:
            break
        time.sleep(0.05)
    check(len(lines) >= 3 and all('check --server-name' in l for l in lines),
          'wrong server name: %d warn lines of failed attempts saying to check --server-name'
          % len(lines))
    check(o.alive(), 'wrong server name: ownerd exited %s' % o.p.returncode)
    port = int(dict(l.split('=') for l in open(pf).read().split())['metrics'])
    n = failures(port)
    check(n.get('name', 0) >= 3 and sum(n.values()) == n['name'],
          'wrong server name: failures %r' % n)
    o.kill(signal.SIGTERM)
    check(o.wait() == 0, 'SIGTERM exit code %s' % o.p.returncode)
    fl.drain()
    # --once: a bounded number of attempts, then 1 with the last reason.
    args = base[1:] + ['--server-name', 'someone-else', '--ledger', os.path.join(d, 'l'),
                       '--connect-attempts', '2']
    o = Owner(ownerd, args, log)
    for i in range(2):
        try:
            c = fl.accept()
            c.recv(3)
        except ssl.SSLError:
            pass
    check(o.wait() == 1, '--once --connect-attempts 2: exit %s, expected 1' % o.p.returncode)
    tail = open(log).read().splitlines()[-6:]
    check(any('giving up after 2 attempts' in l and 'reason=name' in l and
              'check --server-name' in l for l in tail),
          '--once: no line giving up with the last reason: %r' % tail)
    print('ok server name: retried (%d attempts counted), --once gives up after 2' % n['name'])


def test_ledger_failure(ownerd, base, work, fl, p, log, shim, ahead):
    # The 2nd record's fdatasync fails.  Plain protocol: that is the 2nd
    # answer's; ownerd refuses it with "ledger failed", sends nothing else
    # and exits 1.  Reserve-ahead (docs/ledger.md §9): that is the share
    # reserved after the 1st answer, synced after its send; ownerd stops
    # (exit 1) before any other query.  Either way the record reached the
    # file, so after a restart the failed charge counts as spent
    # (docs/privacy.md §5).
    check(os.path.exists(shim), 'shim %s missing' % shim)
    d = os.path.join(work, 'failsync-ahead' if ahead else 'failsync')
    os.makedirs(d)
    led = os.path.join(d, 'ledger')
    args = base[1:] + ['--ledger', led, '--answers-cap', '5', '--rate', '2']
    if not ahead:
        args.append('--no-reserve-ahead')
    env = dict(os.environ, LD_PRELOAD=os.path.abspath(shim), DP_FAULT_CALLS='fdatasync',
               DP_FAULT_AT='2', DP_FAULT_STICKY='1')
    o = Owner(ownerd, args, log, env=env)
    c = fl.accept()
    c.expect('hello')
    welcome(c, p)
    c.send('query', k=1, theta=[0.0] * p)
    a = c.expect('answer')
    check(a['answers_given'] == 1, 'first answer %r' % a)
    if not ahead:
        c.send('query', k=2, theta=[0.0] * p)
        r = c.expect('refuse')
        check(r['k'] == 2 and r['reason'] == 'ledger failed', 'after a failed sync: %r' % r)
    c.expect_closed()
    rc = o.wait()
    check(rc == 1, 'exit code after a ledger failure %d, expected 1' % rc)
    c.close()
    o = Owner(ownerd, args, log)
    c = fl.accept()
    h = c.expect('hello')
    check(h['answers_given'] == 2, 'failed charge not counted after restart: %r' % h)
    o.kill(signal.SIGTERM)
    check(o.wait() == 0, 'SIGTERM exit code')
    c.close()
    print('ok ledger failure (%s)' % ('reserve-ahead' if ahead else 'plain'))


def test_slow_settle(ownerd, base, work, fl, p, log, shim):
    # The settle's fdatasync runs off the loop (docs/ledger.md §9 "Off the
    # loop"): with the disk made slow for that one sync (the shim holds the
    # 2nd fdatasync, the settle's after answer 1, for HOLD s), the loop
    # still answers /metrics and its clock still sends the next request
    # meanwhile; and answer 2, which needs the reserved share, leaves only
    # once a sync of that share has completed (ownerd syncs it itself), so
    # the ledger after the job is the normal one.  Bounds: /metrics within
    # 1.0 s while the sync is held 3 s (a synchronous settle would block it
    # for the whole 3 s; a machine stalled for 1 s would fail it, rare);
    # an UpdateRequest within 1.5 s at --rate 20 (P(none) = e^-30).
    HOLD = 3.0
    d = os.path.join(work, 'slowsync')
    os.makedirs(d)
    led = os.path.join(d, 'ledger')
    pf = os.path.join(d, 'ports')
    args = base[1:] + ['--ledger', led, '--answers-cap', '3', '--rate', '20',
                       '--metrics-listen', '127.0.0.1:0', '--port-file', pf]
    env = dict(os.environ, LD_PRELOAD=os.path.abspath(shim), DP_FAULT_CALLS='fdatasync',
               DP_FAULT_AT='2', DP_FAULT_ACTION='delay', DP_FAULT_DELAY_MS=str(int(HOLD * 1000)))
    o = Owner(ownerd, args, log, env=env)
    c = fl.accept()
    c.expect('hello')
    welcome(c, p)
    with open(pf) as f:
        mport = int(re.search(r'^metrics=(\d+)$', f.read(), re.M).group(1))
    c.send('query', k=1, theta=[0.0] * p)
    c.expect('answer')
    t_answer = time.monotonic()
    metric(mport, 'dpasync_owner_answers_total')
    dt = time.monotonic() - t_answer
    check(dt < 1.0, '/metrics took %.2f s while the settle was syncing' % dt)
    c.expect('update_request', timeout=1.5)
    check(time.monotonic() - t_answer < HOLD - 0.5,
          'the next request came only after the held sync')
    c.send('query', k=2, theta=[0.0] * p)
    a = c.expect('answer', timeout=HOLD + 5)
    check(a['k'] == 2 and a['answers_given'] == 2, 'answer 2 %r' % a)
    c.send('done', final_theta=[0.0] * p, T=10)
    check(o.wait() == 0, 'exit code after Done')
    c.close()
    recs = ledger_flags(led)
    check(recs[:3] == [(0, 1, 1), (5, 0, 2), (3, 2, 3)],
          'records with a slow settle (flags, k, count) %r' % recs)
    print('ok settle off the loop (a %.0f s sync held; /metrics in %.2f s)' % (HOLD, dt))


def ledger_flags(path):
    """(flags, k, count) of every record (docs/ledger.md §3, §9)."""
    with open(job_file(path), 'rb') as f:
        b = f.read()
    out = []
    for off in range(HEADER, len(b) - RECORD + 1, RECORD):
        flags, = struct.unpack_from('<I', b, off + 4)
        k, count = struct.unpack_from('<Q', b, off + 16)[0], struct.unpack_from('<Q', b, off + 40)[0]
        out.append((flags, k, count))
    return out


def test_reserve_flow(ownerd, base, work, fl, p, log):
    # The default protocol (docs/ledger.md §9), K = 3: the first answer is
    # charged and synced before it leaves (flags 0), then a share is
    # reserved alone (5); the next answers leave under the reservation and
    # their records reserve again (3), until K leaves no room (2).  Read once
    # ownerd has exited: the records after an answer are written after it.
    d = os.path.join(work, 'reserve')
    os.makedirs(d)
    led = os.path.join(d, 'ledger')
    args = base[1:] + ['--ledger', led, '--answers-cap', '3', '--rate', '2',
                       '--model-out', os.path.join(d, 'model.json')]
    o = Owner(ownerd, args, log)
    c = fl.accept()
    c.expect('hello')
    welcome(c, p)
    for k in (1, 2, 7):
        c.send('query', k=k, theta=[0.0] * p)
        a = c.expect('answer')
        check(a['k'] == k, 'answer %r' % a)
    c.send('query', k=8, theta=[0.0] * p)
    r = c.expect('refuse')
    check(r['reason'] == 'budget exhausted', 'past K: %r' % r)
    c.send('done', final_theta=[0.0] * p, T=10)
    check(o.wait() == 0, 'exit code after Done')
    c.close()
    recs = ledger_flags(led)
    check(recs == [(0, 1, 1), (5, 0, 2), (3, 2, 3), (2, 7, 3)],
          'reserve-ahead records (flags, k, count) %r' % recs)

    # kill -9 while a share is reserved: it counts as spent (the Hello says
    # 2 answers after 1), the next answer is charged anew, and only one
    # share was lost to the crash.
    led = os.path.join(d, 'crash.ledger')
    args = base[1:] + ['--ledger', led, '--answers-cap', '3', '--rate', '2']
    o = Owner(ownerd, args, log)
    c = fl.accept()
    c.expect('hello')
    welcome(c, p)
    c.send('query', k=1, theta=[0.0] * p)
    c.expect('answer')
    for _ in range(100):
        if len(ledger_flags(led)) == 2:
            break
        time.sleep(0.05)
    o.kill()
    o.wait()
    c.close()
    o = Owner(ownerd, args, log)
    c = fl.accept()
    h = c.expect('hello')
    check(h['answers_given'] == 2, 'Hello after a kill with a share reserved %r' % h)
    welcome(c, p)
    c.send('query', k=2, theta=[0.0] * p)
    c.expect('answer')
    c.send('query', k=3, theta=[0.0] * p)
    r = c.expect('refuse')
    check(r['reason'] == 'budget exhausted', 'the lost share is spent: %r' % r)
    o.kill(signal.SIGTERM)
    check(o.wait() == 0, 'SIGTERM exit code')
    c.close()
    recs = ledger_flags(led)
    check(recs == [(0, 1, 1), (5, 0, 2), (0, 2, 3)], 'records across the kill %r' % recs)
    print('ok reserve-ahead flow')


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
