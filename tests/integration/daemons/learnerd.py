#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test of learnerd against scripted owners (fake_owner.c).

usage: learnerd.py LEARNERD FAKE_OWNER DPASYNC

The fake owners answer the deterministic "gradient" ga_i * theta + gc_i, so
theta_L and every theta_i can be recomputed here from trace.csv alone, with
the update written out from docs/design.md section 4 (not from common/core/algo.c).

Scenarios:
  A  request mode: T iterations complete; theta_L, theta_i equal the replay;
     the owners admitted through --owners-file; an unknown identity and a
     second connection of a connected identity are refused while the job runs; a NaN answer closes that owner; a silent
     owner is timed out, reconnects and rejoins; /metrics and /healthz.
  B  SIGTERM (checkpoint, exit 0), --resume, kill -9, a refused resume
     without --resume, with another T and on a trace of the older
     six-column format, --resume again: T rows, replay
     exact, no query id ever repeated (the fake owners exit 5 otherwise).
  B2 --checkpoint-every 0: the query-id reservation alone checkpoints;
     kill -9 past it and --resume.
  C  broadcast mode, and request mode, with max-inflight 3.
  D  every owner refuses, or reaches its answer cap: exit 1 with a
     checkpoint; idle-timeout: exit 1.
  E  startup errors: bad flag / unreadable certificate / an owners file with
     a duplicate, an invalid identity, none, missing, or beside --owners (2),
     port in use (1), --check-config (0).
  F  planning: no Welcome before the last owner's first Hello; the Welcome
     carries the plan's K_i = ceil(T pi_i 1.1), pi_i = rate_i / sum of rates
     (equal rates, then 1,1,2); no owner is ever queried past its K_i (a fast
     owner is exhausted and the others finish T); the plan is logged and
     stored in the checkpoint; without --T the planner chooses T (<= --t-max)
     and the Welcome, checkpoint and log agree on it.
Dev convenience: LRN_TEST_CERTS=DIR uses existing certificates (ca.crt,
learner.*, owner-1..4.*) instead of running `dpasync certs`.
"""
import json, os, re, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check

LEARNERD, FAKE, DPASYNC = sys.argv[1:4]
P = 3
ROWS = {'owner-1': 10, 'owner-2': 20, 'owner-3': 30}
GA = {'owner-1': 0.75, 'owner-2': 1.0, 'owner-3': 1.25}
GC = {'owner-1': [0.3, -0.2, 1.0], 'owner-2': [-0.5, 0.1, 0.4], 'owner-3': [0.2, 0.6, -0.9]}
ETA, LAMBDA, TMAX = 0.05, 0.01, 10.0
OWNERS = ['owner-1', 'owner-2', 'owner-3']
procs = []


def wait_for(pred, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    raise Fail('timed out waiting for ' + what)


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ''


class Learner:
    def __init__(self, work, out, certs, extra=(), port=0, name='learner', owners_file=False):
        """owners_file: admit OWNERS through --owners-file (one per line,
        with a comment and a blank line) instead of --owners."""
        self.out, self.pf = out, os.path.join(work, name + '.port')
        self.errf = os.path.join(work, name + '.err')
        if os.path.exists(self.pf):
            os.unlink(self.pf)
        self.cmd = [LEARNERD, '--listen', '127.0.0.1:%d' % port, '--port-file', self.pf,
                    '--ca', certs + '/ca.crt', '--cert', certs + '/learner.crt',
                    '--key', certs + '/learner.key', '--owners', ','.join(OWNERS),
                    '--eta', str(ETA), '--lambda', str(LAMBDA), '--theta-max', str(TMAX),
                    '--out', out, '--log-level', 'info'] + list(extra)
        if owners_file:
            f = os.path.join(work, name + '.owners')
            open(f, 'w').write('# admitted owners\n' + '\n'.join(OWNERS) + '\n\n')
            i = self.cmd.index('--owners')
            self.cmd[i:i + 2] = ['--owners-file', f]
        self.p = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=open(self.errf, 'w'),
                                  text=True)
        procs.append(self.p)
        ports = wait_for(lambda: self._ports(), 10, 'the port file of ' + name)
        self.port, self.mport = ports.get('tls'), ports.get('metrics')

    def _ports(self):
        if self.p.poll() is not None:
            raise Fail('learnerd exited early (%d): %s' % (self.p.returncode, read(self.errf)))
        txt = read(self.pf)
        if 'tls=' not in txt:
            return None
        return {k: int(v) for k, v in (l.split('=') for l in txt.split())}

    def wait(self, timeout=60):
        try:
            out, _ = self.p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Fail('learnerd did not finish: ' + read(self.errf)[-3000:])
        return self.p.returncode, out

    def err(self):
        return read(self.errf)


def owner(work, certs, port, oid, cert=None, extra=(), tag=None):
    tag = tag or oid
    cert = cert or oid
    errf = open(os.path.join(work, tag + '.err'), 'w')
    rows = ROWS.get(oid, 5)
    gc = GC.get(oid, [0.0] * P)
    cmd = [FAKE, '--learner', '127.0.0.1:%d' % port, '--ca', certs + '/ca.crt',
           '--cert', '%s/%s.crt' % (certs, cert), '--key', '%s/%s.key' % (certs, cert),
           '--id', oid, '--p', str(P), '--rows', str(rows), '--grad-a', str(GA.get(oid, 1.0)),
           '--grad-c', ','.join(repr(v) for v in gc),
           '--done-file', os.path.join(work, tag + '.done')] + list(extra)
    p = subprocess.Popen(cmd, stdout=errf, stderr=errf)
    procs.append(p)
    return p


def trace_rows(out, running=False):
    """The rows of trace.csv.  running: learnerd is still writing it, and
    writes through a buffer, so the last line may be cut at a buffer
    boundary: a final line without its newline is not read yet."""
    text = read(os.path.join(out, 'trace.csv'))
    if running and not text.endswith('\n'):
        text = text[:text.rfind('\n') + 1]
    lines = text.splitlines()
    check(lines and lines[0] == 'k,time_unix,owner,wait_s,rtt_s,eps_spent,staleness,job',
          'trace.csv header: %r' % (lines[:1],))
    rows = []
    for l in lines[1:]:
        f = l.split(',')
        check(len(f) == 8 and f[6].isdigit() and f[7], 'trace row %r' % l)
        rows.append((int(f[0]), float(f[1]), f[2], float(f[3]), float(f[4]), float(f[5]),
                     int(f[6]), f[7]))
    return rows


def progress_lines(err, T, N=3):
    """learnerd's progress lines (docs/learnerd.md "Progress"), each checked
    for sane fields; returns their k values."""
    ks = []
    for l in err.splitlines():
        m = re.search(r' progress k=(\d+)/(\S+) it_s=(\S+) it_s_avg=(\S+) eta_s=(\S+) '
                      r'owners=(\d+)/(\d+) eps_spent=(\S+)$', l)
        if not m:
            check(' progress ' not in l, 'malformed progress line %r' % l)
            continue
        k, goal = int(m.group(1)), m.group(2)
        check(goal in (str(T), '?') and k <= T, 'progress k/T %r' % l)
        check(float(m.group(3)) >= 0 and float(m.group(4)) >= 0, 'progress rates %r' % l)
        check(m.group(5) == '-' or float(m.group(5)) >= 0, 'progress eta %r' % l)
        check(int(m.group(6)) <= int(m.group(7)) == N, 'progress owners %r' % l)
        check(float(m.group(8)) >= 0, 'progress eps %r' % l)
        ks.append(k)
    check(ks == sorted(ks), 'progress k goes back: %r' % ks)
    return ks


def process_metrics(text, program):
    """dpasync_build_info and the process metrics: present and plausible."""
    m = re.search(r'^dpasync_build_info\{program="%s",version="([^"]+)",openssl="[^"]+",'
                  r'libuv="[^"]+"\} 1$' % program, text, re.M)
    check(m is not None, '%s: no dpasync_build_info line' % program)
    vals = {}
    for name in ('process_cpu_seconds_total', 'process_resident_memory_bytes',
                 'process_open_fds', 'process_start_time_seconds'):
        mm = re.search(r'^%s (\S+)$' % name, text, re.M)
        check(mm is not None, '%s: %s missing' % (program, name))
        vals[name] = float(mm.group(1))
    check(0 <= vals['process_cpu_seconds_total'] < 3600, 'cpu seconds %r' % vals)
    check(1e6 < vals['process_resident_memory_bytes'] < 1e11, 'rss %r' % vals)
    check(3 <= vals['process_open_fds'] < 10000, 'open fds %r' % vals)
    check(abs(vals['process_start_time_seconds'] - time.time()) < 600, 'start time %r' % vals)
    return m.group(1), vals


def clamp(v):
    return max(-TMAX, min(TMAX, v))


def replay(owner_seq):
    """docs/design.md section 4, iteration by iteration, in plain Python."""
    N, n = len(OWNERS), sum(ROWS.values())
    thL = [0.0] * P
    th = {o: [0.0] * P for o in OWNERS}
    for o in owner_seq:
        bar = [(thL[q] + th[o][q]) / 2 for q in range(P)]
        ans = [GA[o] * bar[q] + GC[o][q] for q in range(P)]
        w = ROWS[o] / n
        # grad g = 2 lambda theta; owner step eta, learner step eta (N-1)/N^2
        th[o] = [clamp(bar[q] - ETA * ((1 / (2 * N)) * 2 * LAMBDA * bar[q] + w * ans[q]))
                 for q in range(P)]
        thL = [clamp(bar[q] - ETA * (N - 1) / N ** 2 * 2 * LAMBDA * bar[q]) for q in range(P)]
    return thL, th


def close(a, b, tol=1e-12):
    return len(a) == len(b) and all(abs(x - y) <= tol * max(1.0, abs(x), abs(y))
                                   for x, y in zip(a, b))


def check_outputs(out, T):
    rows = trace_rows(out)
    check([r[0] for r in rows] == list(range(1, T + 1)),
          'trace k column is not 1..%d (%d rows)' % (T, len(rows)))
    check(all(r[2] in OWNERS for r in rows), 'unknown owner in trace')
    seq = [r[2] for r in rows]
    thL, th = replay(seq)
    with open(os.path.join(out, 'model.json')) as f:
        model = json.load(f)
    check(model['T'] == T and model['model'] == 'linear', 'model.json header %r' % model)
    # Every row names the job (docs/learnerd.md §4), the id of model.json.
    check(model['job'] and all(r[7] == model['job'] for r in rows),
          'trace job column %r, model.json job %r' % (sorted({r[7] for r in rows}), model['job']))
    check(close(model['theta'], thL),
          'theta_L %r differs from the replay %r' % (model['theta'], thL))
    with open(os.path.join(out, 'checkpoint.json')) as f:
        ck = json.load(f)
    check(ck['state']['k_done'] == T, 'final checkpoint k_done %r' % ck['state']['k_done'])
    for o in ck['state']['owners']:
        check(close(o['theta'], th[o['id']]),
              'theta_i of %s %r differs from the replay %r' % (o['id'], o['theta'], th[o['id']]))
    # The replay must be able to fail: the same answers in another order
    # give another theta_L.  (Not the first two: from theta = 0 both
    # orders agree.)
    if len(set(seq)) > 1:
        i = max(j for j in range(len(seq) - 1) if seq[j] != seq[j + 1])
        alt = seq[:i] + [seq[i + 1], seq[i]] + seq[i + 2:]
        check(not close(replay(alt)[0], thL, 1e-9) or not close(replay(alt)[1][seq[i]],
                                                               th[seq[i]], 1e-9),
              'self-check: the replay cannot tell two orders apart')
    return rows, model


def kcap(T, rates, i, margin=0.1):
    """K_i = ceil(T pi_i (1 + margin)), in the planner's order of operations."""
    import math
    return math.ceil(T * (rates[i] / sum(rates)) * (1.0 + margin))


def plan_line(err, src='hellos'):
    """The fields of learnerd's plan log line (from=SRC), without from=."""
    for l in err.splitlines():
        if ' plan from=%s ' % src in l:
            f = dict(kv.split('=', 1) for kv in l.split(' plan ', 1)[1].split() if '=' in kv)
            f.pop('from')
            return f
    raise Fail('no plan from=%s line in the log' % src)


def welcomes(work, tag):
    lines = read(os.path.join(work, tag + '.welcome')).splitlines()
    return [dict(kv.split('=') for kv in l.split()) for l in lines]


def scenario_f(work, certs):
    # F1: equal rates, T given.  The Welcome waits for the last Hello.
    out = os.path.join(work, 'f1')
    T = 90
    L = Learner(work, out, certs, ['--T', str(T), '--idle-timeout', '30'], name='f1')
    # owner-1 is fast, the others slow: without caps it would take most of
    # the iterations; with them it stops at K_1 and the others finish T.
    ivl = {'owner-1': '0', 'owner-2': '0.02', 'owner-3': '0.02'}
    first = [owner(work, certs, L.port, o, extra=['--interval', ivl[o], '--welcome-file',
                                                  os.path.join(work, 'f1' + o + '.welcome')],
                   tag='f1' + o) for o in OWNERS[:2]]
    wait_for(lambda: L.err().count('hello id=') >= 2, 10, 'two Hellos')
    time.sleep(1.0)
    check(not welcomes(work, 'f1owner-1') and not welcomes(work, 'f1owner-2'),
          'a Welcome was sent before every owner had said Hello')
    check(not os.path.exists(os.path.join(out, 'trace.csv')) or not trace_rows(out),
          'training started before every owner had said Hello')
    last = owner(work, certs, L.port, 'owner-3', extra=['--interval', ivl['owner-3'],
                                                        '--welcome-file',
                                                        os.path.join(work, 'f1owner-3.welcome')],
                 tag='f1owner-3')
    rc, stdout = L.wait(60)
    check(rc == 0, 'F1: learnerd exit %d: %s' % (rc, L.err()[-2000:]))
    K = [kcap(T, [1, 1, 1], i) for i in range(3)]
    for i, o in enumerate(OWNERS):
        w = welcomes(work, 'f1' + o)
        check(w and all(int(x['T']) == T and int(x['K']) == K[i] for x in w),
              'F1: Welcome of %s %r, expected T=%d K=%d' % (o, w, T, K[i]))
    rows = trace_rows(out)
    check([r[0] for r in rows] == list(range(1, T + 1)), 'F1 trace k column')
    used = {o: sum(1 for r in rows if r[2] == o) for o in OWNERS}
    check(all(used[o] <= K[i] for i, o in enumerate(OWNERS)),
          'F1: an owner was queried past its K_i: used %r, K %r' % (used, K))
    check(used['owner-1'] == K[0], 'F1: the fast owner should have given all its K_1 = %d '
          'answers, gave %d' % (K[0], used['owner-1']))
    for p in first + [last]:
        check(p.wait(10) == 0, 'F1 owner exit %s (7: a query past its cap)' % p.returncode)
    pl = plan_line(L.err())
    check(int(pl['T']) == T and pl['K'] == ','.join('%s:%d' % (o, K[i])
                                                    for i, o in enumerate(OWNERS))
          and float(pl['eta']) == ETA and 'psi' in pl and 'psi_zero' in pl
          and pl['measured'] == 'false', 'F1 plan line %r' % pl)
    with open(os.path.join(out, 'checkpoint.json')) as f:
        ck = json.load(f)['job']
    check(ck['plan']['answers_cap'] == K and ck['plan']['T'] == T and ck['plan']['eta'] == ETA
          and ck['plan']['psi'] > 0 and ck['clip_l1'] == ck['plan']['clip'] > 0,
          'F1 checkpoint plan %r' % ck['plan'])
    check('exhausted: its last answer was given' in L.err(), 'F1: owner-1 not exhausted')

    # F2: rates 1, 1, 2: the shares follow the rates.
    out = os.path.join(work, 'f2')
    T, rates = 80, [1, 1, 2]
    L = Learner(work, out, certs, ['--T', str(T)], name='f2')
    os_ = [owner(work, certs, L.port, o, extra=['--rate', str(rates[i]), '--welcome-file',
                                                os.path.join(work, 'f2' + o + '.welcome')],
                 tag='f2' + o) for i, o in enumerate(OWNERS)]
    rc, _ = L.wait(60)
    check(rc == 0, 'F2: learnerd exit %d: %s' % (rc, L.err()[-2000:]))
    K = [kcap(T, rates, i) for i in range(3)]
    check(K[2] > K[0], 'F2 self-check: K %r' % K)
    for i, o in enumerate(OWNERS):
        w = welcomes(work, 'f2' + o)
        check(w and int(w[0]['K']) == K[i], 'F2: Welcome of %s %r, expected K=%d' % (o, w, K[i]))
        check(os_[i].wait(10) == 0, 'F2 owner exit %s' % os_[i].returncode)
    check('rate=2 ' in L.err(), 'F2: the Hello rate is not logged')

    # F3: T planned (bounded by --t-max): Welcome, checkpoint and log agree.
    out = os.path.join(work, 'f3')
    L = Learner(work, out, certs, ['--t-max', '150', '--clip', '2'], name='f3')
    os_ = [owner(work, certs, L.port, o, extra=['--welcome-file',
                                                os.path.join(work, 'f3' + o + '.welcome')],
                 tag='f3' + o) for o in OWNERS]
    rc, stdout = L.wait(60)
    check(rc == 0, 'F3: learnerd exit %d: %s' % (rc, L.err()[-2000:]))
    pl = plan_line(L.err())
    T = int(pl['T'])
    check(6 <= T <= 150 and stdout.strip() == 'done k=%d out=%s' % (T, out),
          'F3: planned T=%d, stdout %r' % (T, stdout))
    with open(os.path.join(out, 'checkpoint.json')) as f:
        ck = json.load(f)['job']
    check(ck['T'] == T and ck['plan']['T'] == T and ck['clip_l1'] == 2.0
          and ck['plan']['answers_cap'] == [kcap(T, [1, 1, 1], i) for i in range(3)],
          'F3 checkpoint %r' % ck)
    for o, p in zip(OWNERS, os_):
        w = welcomes(work, 'f3' + o)
        check(w and int(w[0]['T']) == T and int(w[0]['K']) == kcap(T, [1, 1, 1], 0),
              'F3: Welcome of %s %r' % (o, w))
        check(p.wait(10) == 0, 'F3 owner exit %s' % p.returncode)

    # F4: --public: constants of a public sample (here made by hand) are
    # used and said to be measured; constants of another objective refused.
    pub = {'model': 'linear', 'p': P, 'lambda': LAMBDA, 'f_star': 0.5, 'f_zero': 1.0,
           'alone': 1.5, 'h_safe': 6.0, 'measured': True, 'source': 'hand-made constants',
           'clips': [{'clip': c, 'f_clip': 0.5 + 0.01 / c, 'h': [2.0] * P, 't': [0.3] * P,
                      'hf': [2.0] * P} for c in (0.5, 1.0, 2.0)]}
    pf = os.path.join(work, 'public.json')
    with open(pf, 'w') as f:
        json.dump({'public': pub}, f)
    out = os.path.join(work, 'f4')
    L = Learner(work, out, certs, ['--public', pf, '--t-max', '60'], name='f4')
    os_ = [owner(work, certs, L.port, o, tag='f4' + o) for o in OWNERS]
    rc, _ = L.wait(60)
    check(rc == 0, 'F4: learnerd exit %d: %s' % (rc, L.err()[-2000:]))
    pl = plan_line(L.err())
    check(pl['measured'] == 'true' and float(pl['clip']) in (0.5, 1.0, 2.0),
          'F4: plan with public constants %r' % pl)
    check('no public sample' not in L.err(), 'F4: the shape-only warning with --public')
    for p in os_:
        check(p.wait(10) == 0, 'F4 owner exit %s' % p.returncode)
    with open(pf, 'w') as f:
        json.dump(dict(pub, model='logistic'), f)
    base = [LEARNERD, '--ca', certs + '/ca.crt', '--cert', certs + '/learner.crt', '--key',
            certs + '/learner.key', '--owners', 'owner-1', '--out', os.path.join(work, 'f5')]
    p = subprocess.run(base + ['--public', pf], capture_output=True, text=True, timeout=20)
    check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
          and 'model logistic' in p.stderr, 'F4: public of another model: %d %r'
          % (p.returncode, p.stderr))
    print('F ok: Welcome after the last Hello, K_i from the rates, caps never exceeded, '
          'planned T=%d, public constants' % T)


def scenario_a(work, certs):
    out = os.path.join(work, 'a')
    T = 120
    L = Learner(work, out, certs, ['--T', str(T), '--checkpoint-every', '25', '--query-timeout',
                                   '1', '--idle-timeout', '30', '--metrics-listen',
                                   '127.0.0.1:0', '--progress-every', '0.2'], name='a',
                owners_file=True)
    # Their own caps (T): owner-3 leaves after its NaN, so the planned
    # K_i = ceil(T/3 1.1) of the others could not cover T.
    cap = ['--answers-cap', str(T)]
    o1 = owner(work, certs, L.port, 'owner-1', extra=['--interval', '0.005'] + cap, tag='a1')
    o2 = owner(work, certs, L.port, 'owner-2', extra=['--interval', '0.005', '--silent-at', '6',
                                                      '--reconnect', '20'] + cap, tag='a2')
    o3 = owner(work, certs, L.port, 'owner-3', extra=['--interval', '0.005', '--nan-at', '3']
               + cap, tag='a3')
    wait_for(lambda: len(trace_rows(out, running=True)) >= 3 if os.path.exists(out + '/trace.csv') else 0, 10,
             'the first iterations')
    # Intruders while the job runs (owner-2's silent query keeps it
    # running for at least the 1 s query timeout).
    stranger = owner(work, certs, L.port, 'owner-4', tag='a4')
    twin = owner(work, certs, L.port, 'owner-1', tag='a1twin')
    check(stranger.wait(10) == 3, 'unknown identity: fake owner exit %s' % stranger.returncode)
    check(twin.wait(10) == 3, 'second connection: fake owner exit %s' % twin.returncode)
    check(L.p.poll() is None, 'the job ended before the intruders were refused')
    health = urllib.request.urlopen('http://127.0.0.1:%d/healthz' % L.mport, timeout=5)
    check(health.status == 200 and health.read().decode().strip() == 'ok', '/healthz')
    metrics = urllib.request.urlopen('http://127.0.0.1:%d/metrics' % L.mport,
                                     timeout=5).read().decode()
    for name in ['dpasync_learner_iterations_total', 'dpasync_learner_owners_connected',
                 'dpasync_learner_queue_depth', 'dpasync_learner_inflight',
                 'dpasync_learner_rtt_seconds_bucket', 'dpasync_learner_wait_seconds_count',
                 'dpasync_learner_owner_iterations_total{owner="owner-1"}',
                 'dpasync_learner_owner_epsilon_spent{owner="owner-3"}',
                 'dpasync_learner_refusals_total']:
        check(name in metrics, 'metric %s missing' % name)
    check('dpasync_learner_connections_rejected_total 2' in metrics,
          'rejected connections not counted')
    process_metrics(metrics, 'learnerd')
    rc, stdout = L.wait()
    err = L.err()
    check(rc == 0, 'learnerd exit %d: %s' % (rc, err[-2000:]))
    check(stdout.strip() == 'done k=%d out=%s' % (T, out), 'stdout %r' % stdout)
    rows, model = check_outputs(out, T)
    check(sum(1 for r in rows if r[2] == 'owner-3') == 2,
          'owner-3 should count exactly its 2 answers before the NaN')
    check(all(r[3] >= 0 and r[4] >= 0 and r[5] > 0 for r in rows), 'trace wait/rtt/eps')
    # Strict mode (one query in flight): every answer updates the theta_L
    # its query was built on.
    check(all(r[6] == 0 for r in rows), 'strict mode: staleness %r' % sorted({r[6] for r in rows}))
    # The job lasts at least the 1 s query timeout: with a line every 0.2 s
    # there is at least one (a 5x margin), then the summary at the end.
    ks = progress_lines(err, T)
    check(len(ks) >= 1, 'no progress line in %s' % err[-2000:])
    summ = [l for l in err.splitlines() if ' summary end=' in l]
    check(len(summ) == 1 and re.search(r' summary end=done k=%d/%d secs=\S+ it_s_avg=\S+ '
                                       r'owners=\d/3 eps_spent=\S+$' % (T, T), summ[0]),
          'summary line %r' % summ)
    check('identity not in owners' in err and 'already connected' in err,
          'refusals not logged')
    check('invalid answer' in err, 'NaN answer not logged as invalid')
    check('not answered within' in err, 'query timeout not logged')
    check(o1.wait(10) == 0 and o2.wait(10) == 0, 'owners 1/2 exit %s %s' % (o1.returncode,
                                                                             o2.returncode))
    check(o3.wait(10) == 4, 'NaN owner exit %s (expected closed: 4)' % o3.returncode)
    for t in ('a1', 'a2'):
        done = [float(v) for v in read(os.path.join(work, t + '.done')).split(',')]
        check(done == model['theta'], 'Done theta of %s differs from model.json' % t)
    print('A ok: %d iterations, replay exact, intruders refused, NaN closed, timeout rejoined' % T)


def scenario_b(work, certs):
    out = os.path.join(work, 'b')
    T = 300
    args = ['--T', str(T), '--checkpoint-every', '20', '--idle-timeout', '60']
    L = Learner(work, out, certs, args, name='b1')
    port = L.port
    os_ = [owner(work, certs, port, o, extra=['--interval', '0.01', '--reconnect', '60'],
                 tag='b' + o) for o in OWNERS]
    wait_for(lambda: len(trace_rows(out, running=True)) >= 40 if os.path.exists(out + '/trace.csv') else 0, 20,
             '40 iterations')
    L.p.send_signal(signal.SIGTERM)
    rc, stdout = L.wait(20)
    check(rc == 0 and stdout == '', 'SIGTERM: exit %d stdout %r' % (rc, stdout))
    with open(os.path.join(out, 'checkpoint.json')) as f:
        k1 = json.load(f)['state']['k_done']
    check(k1 == len(trace_rows(out)) and k1 < T, 'SIGTERM checkpoint k=%d, trace %d rows' %
          (k1, len(trace_rows(out))))
    with open(os.path.join(out, 'checkpoint.json')) as f:
        plan1 = json.load(f)['job']['plan']
    check(plan1['T'] == T and plan1['answers_cap'] == [kcap(T, [1, 1, 1], i) for i in range(3)],
          'checkpoint plan %r' % plan1)
    line1 = plan_line(L.err())

    L = Learner(work, out, certs, args + ['--resume'], port=port, name='b2')
    wait_for(lambda: len(trace_rows(out, running=True)) >= k1 + 60, 20, 'progress after the resume')
    L.p.send_signal(signal.SIGKILL)
    L.p.wait()
    with open(os.path.join(out, 'checkpoint.json')) as f:
        k2 = json.load(f)['state']['k_done']
    check(k2 > k1, 'no checkpoint after the resume (k=%d)' % k2)

    p = subprocess.run(L.cmd[:-1], capture_output=True, text=True, timeout=20)
    check(p.returncode == 2 and '--resume' in p.stderr and len(p.stderr.splitlines()) == 1,
          'existing checkpoint without --resume: %d %r' % (p.returncode, p.stderr))
    bad = [a if a != str(T) else str(T + 1) for a in L.cmd]
    p = subprocess.run(bad, capture_output=True, text=True, timeout=20)
    check(p.returncode == 2 and 'T is %d in the checkpoint but %d now' % (T, T + 1) in p.stderr,
          'resume with another T: %d %r' % (p.returncode, p.stderr))
    # Traces of the formats before the staleness and the job columns
    # cannot be continued.
    tpath = os.path.join(out, 'trace.csv')
    text = read(tpath)
    for old, what in ((',staleness,job\n', 'six'), (',job\n', 'seven')):
        with open(tpath, 'w') as f:
            f.write(text.replace(old, '\n', 1))
        p = subprocess.run(L.cmd, capture_output=True, text=True, timeout=20)
        last = p.stderr.splitlines()[-1:] or ['']
        check(p.returncode == 1 and last[0].startswith('learnerd: ') and
              'before the job column' in last[0] and 'restart' in last[0],
              'resume of a %s-column trace: %d %r' % (what, p.returncode, p.stderr))
    with open(tpath, 'w') as f:
        f.write(text)

    L = Learner(work, out, certs, args + ['--resume'], port=port, name='b3')
    rc, stdout = L.wait(60)
    check(rc == 0, 'resumed learnerd exit %d: %s' % (rc, L.err()[-2000:]))
    # The resumed job used the checkpoint's plan (the fake owners exit 6 on
    # a Welcome whose K differs from the one they bound).
    line3 = plan_line(L.err(), 'checkpoint')
    check(line3 == line1, 'resumed plan %r differs from %r' % (line3, line1))
    check(stdout.strip() == 'done k=%d out=%s' % (T, out), 'stdout %r' % stdout)
    check_outputs(out, T)
    for o in os_:
        check(o.wait(20) == 0, 'owner exit %s (5: a query id repeated)' % o.returncode)
    print('B ok: SIGTERM at k=%d, kill -9 after checkpoint k=%d, resumed to T=%d, replay exact'
          % (k1, k2, T))


def scenario_b2(work, certs):
    """--checkpoint-every 0: only the query-id reservation forces
    checkpoints (every 1024 + 64 N ids, docs/learnerd.md §5); kill -9 past
    the first block."""
    out = os.path.join(work, 'b2')
    T = 3000
    block = 1024 + 64 * len(OWNERS)
    args = ['--T', str(T), '--checkpoint-every', '0']
    L = Learner(work, out, certs, args, name='b21')
    os_ = [owner(work, certs, L.port, o, extra=['--reconnect', '60', '--interval', '0.001'],
                 tag='b2' + o) for o in OWNERS]
    wait_for(lambda: len(trace_rows(out, running=True)) >= block + 80
             if os.path.exists(out + '/trace.csv') else 0, 60, '%d iterations' % (block + 80))
    L.p.send_signal(signal.SIGKILL)
    L.p.wait()
    check(L.p.returncode == -signal.SIGKILL, 'B2: the job ended before kill -9 (%d rows)' %
          len(trace_rows(out, running=True)))
    with open(os.path.join(out, 'checkpoint.json')) as f:
        st = json.load(f)['state']
    check(st['k_done'] >= block - 80 and st['query_id_reserved'] > block + 80,
          'reservation checkpoint: %r' % {k: st[k] for k in ('k_done', 'query_id_reserved')})
    L = Learner(work, out, certs, args + ['--resume'], port=L.port, name='b22')
    rc, stdout = L.wait(60)
    check(rc == 0, 'b2 resumed exit %d: %s' % (rc, L.err()[-2000:]))
    check_outputs(out, T)
    for o in os_:
        check(o.wait(20) == 0, 'owner exit %s (5: a query id repeated)' % o.returncode)
    print('B2 ok: reservation checkpoint at k=%d, kill -9, resumed to T=%d' % (st['k_done'], T))


def scenario_c(work, certs):
    out = os.path.join(work, 'c')
    T = 60
    L = Learner(work, out, certs, ['--T', str(T), '--mode', 'broadcast', '--max-inflight', '3',
                                   '--broadcast-interval', '0.01'], name='c')
    os_ = [owner(work, certs, L.port, o, extra=['--no-request'], tag='c' + o) for o in OWNERS]
    rc, stdout = L.wait(60)
    check(rc == 0, 'broadcast: exit %d %s' % (rc, L.err()[-2000:]))
    rows = trace_rows(out)
    check([r[0] for r in rows] == list(range(1, T + 1)), 'broadcast trace k column')
    check(all(r[3] == 0 for r in rows), 'broadcast wait_s must be 0')
    check(len(set(r[2] for r in rows)) == 3, 'broadcast: not every owner was asked')
    # A round's queries are all built in one pass of the loop before any
    # answer is read, so the round's later answers meet a newer theta_L.
    check(all(r[6] >= 0 for r in rows) and max(r[6] for r in rows) > 0,
          'broadcast, max-inflight 3: staleness %r' % sorted({r[6] for r in rows}))
    for o in os_:
        check(o.wait(10) == 0, 'broadcast owner exit %s' % o.returncode)
    out = os.path.join(work, 'c2')
    L = Learner(work, out, certs, ['--T', str(T), '--max-inflight', '3'], name='c2')
    os_ = [owner(work, certs, L.port, o, tag='c2' + o) for o in OWNERS]
    rc, stdout = L.wait(60)
    check(rc == 0, 'request, max-inflight 3: exit %d %s' % (rc, L.err()[-2000:]))
    rows = trace_rows(out)
    check([r[0] for r in rows] == list(range(1, T + 1)), 'c2 trace k column')
    # Whether queries overlap depends on timing here: only the range.
    check(all(0 <= r[6] < T for r in rows), 'c2 staleness %r' % sorted({r[6] for r in rows}))
    for o in os_:
        check(o.wait(10) == 0, 'c2 owner exit %s' % o.returncode)
    print('C ok: broadcast and request mode with max-inflight 3')


def scenario_d(work, certs):
    out = os.path.join(work, 'd')
    L = Learner(work, out, certs, ['--T', '50'], name='d')
    os_ = [owner(work, certs, L.port, o, extra=['--refuse-at', '2'], tag='d' + o)
           for o in OWNERS]
    rc, _ = L.wait(30)
    check(rc == 1 and 'every owner has exhausted its budget' in L.err(),
          'all refused: exit %d %s' % (rc, L.err()[-1500:]))
    with open(os.path.join(out, 'checkpoint.json')) as f:
        ck = json.load(f)
    check(ck['state']['k_done'] == 3 and all(o['exhausted'] for o in ck['state']['owners']),
          'checkpoint after exhaustion: %r' % ck['state']['k_done'])
    for o in os_:
        o.wait(10)
    out = os.path.join(work, 'd1')
    L = Learner(work, out, certs, ['--T', '50'], name='d1')
    os_ = [owner(work, certs, L.port, o, extra=['--answers-cap', '2'], tag='d1' + o)
           for o in OWNERS]
    rc, _ = L.wait(30)
    # Caps of 2 + 2 + 2 cannot reach T = 50: the job refuses to start before
    # any query, so no owner spends budget on a job that cannot end
    # (docs/planner.md §1 "Budget left"; before, it ran until "every owner
    # has exhausted its budget at k=6").
    check(rc == 1 and 'no plan reaches T=50' in L.err() and 'can give 6 answers' in L.err()
          and 'query k=' not in L.err(), 'answer caps that cannot reach T: exit %d %s'
          % (rc, L.err()[-1500:]))
    for o in os_:
        o.wait(10)
    out = os.path.join(work, 'd2')
    t0 = time.time()
    L = Learner(work, out, certs, ['--idle-timeout', '0.5'], name='d2')
    rc, _ = L.wait(20)
    check(rc == 1 and 'idle-timeout' in L.err() and 'never said Hello: owner-1 owner-2 owner-3'
          in L.err(), 'idle timeout: %d %s' % (rc, L.err()[-1000:]))
    check(time.time() - t0 < 10, 'idle timeout took too long')
    print('D ok: exhaustion and idle-timeout stop with exit 1')


def owners_file(work, name, text):
    f = os.path.join(work, name + '.owners')
    open(f, 'w').write(text)
    return f


def scenario_e(work, certs):
    base = [LEARNERD, '--ca', certs + '/ca.crt', '--cert', certs + '/learner.crt', '--key',
            certs + '/learner.key', '--owners', 'owner-1', '--out', os.path.join(work, 'e')]
    for args, code, what in [
            (['--bogus'], 2, 'unknown option'),
            (['--T', 'x'], 2, 'bad value'),
            (['--eta', '1', '--rho', '1'], 2, 'eta and rho'),
            (['--owners', 'a,a'], 2, 'duplicate owner'),
            (['--owners-file', owners_file(work, 'dup', 'a\nb\na\n')], 2,
             'owners-file: duplicate owner'),
            (['--owners-file', owners_file(work, 'bad', 'a\nb c\n')], 2,
             'owners-file: invalid identity'),
            (['--owners-file', owners_file(work, 'none', '# only this\n')], 2,
             'owners-file: no owner'),
            (['--owners-file', os.path.join(work, 'nope.owners')], 2, 'owners-file: missing'),
            (['--owners-file', owners_file(work, 'ok', 'a\n')], 2,
             'owners and owners-file both'),
            (['--job', 'a,b'], 2, 'a comma in the job id (a trace.csv column)'),
            (['--cert', os.path.join(work, 'nope.crt')], 2, 'missing certificate')]:
        p = subprocess.run(base + args, capture_output=True, text=True, timeout=20)
        check(p.returncode == code and len(p.stderr.strip().splitlines()) == 1
              and p.stderr.startswith('learnerd: '),
              '%s: exit %d stderr %r' % (what, p.returncode, p.stderr))
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    s.listen(1)
    p = subprocess.run(base + ['--listen', '127.0.0.1:%d' % s.getsockname()[1]],
                       capture_output=True, text=True, timeout=20)
    s.close()
    lines = [l for l in p.stderr.splitlines() if l.startswith('learnerd: ')]
    check(p.returncode == 1 and len(lines) == 1 and 'in use' in lines[0],
          'port in use: %d %r' % (p.returncode, p.stderr))
    p = subprocess.run(base + ['--check-config'], capture_output=True, text=True, timeout=20)
    check(p.returncode == 0 and 'owners = owner-1' in p.stdout, 'check-config %r' % p.stdout)
    print('E ok: startup errors')


def main():
    work = tempfile.mkdtemp(prefix='dp-learnerd-')
    ok = False
    try:
        certs = os.environ.get('LRN_TEST_CERTS')
        if not certs:
            certs = os.path.join(work, 'certs')
            p = subprocess.run([DPASYNC, 'certs', '--out', certs, '--owners', '4'],
                               capture_output=True, text=True, timeout=120)
            check(p.returncode == 0, 'dpasync certs: %s' % p.stderr)
        scenario_e(work, certs)
        scenario_a(work, certs)
        scenario_b(work, certs)
        scenario_b2(work, certs)
        scenario_c(work, certs)
        scenario_d(work, certs)
        scenario_f(work, certs)
        ok = True
    except Fail as e:
        print('FAIL:', e)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if not os.environ.get('LRN_TEST_KEEP'):
            shutil.rmtree(work, ignore_errors=True)
        else:
            print('kept', work)
    print('PASS' if ok else 'FAILED')
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
