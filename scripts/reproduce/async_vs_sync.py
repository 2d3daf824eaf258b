#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""async vs sync on the wall clock: netns cluster, 4 owners at 1/20/80/200 ms, a slow and a bouncing owner (needs root)

Runs deploy/netns-cluster.sh once per mode and repeat -- async request
strict (max-inflight 1), async request --max-inflight 4, sync1, sync2 --
on the same cluster: 4 owners in network namespaces with one-way delays 1,
20, 80 and 200 ms, clock rates 40, 20, 10 and 5 /s, epsilon 1 each, 20
features + bias; owner-1 holds 10x the rows of the others (200,000 against
20,000), so its answers take about 10x longer to compute (an honest slow
owner: more data, no sleep); owner-3 is killed (SIGKILL) BOUNCE_AT s after
learnerd's first query (netns-cluster.sh --bounce-from training: the owners
take seconds to load their rows, and a kill before training would test
nothing) and restarted, with its ledger, BOUNCE_DOWN s after the kill.

Both sync modes run T = 60 (59 rounds of 4 answers: 236 answers in all);
the async modes run T = 236 iterations, the same number of answers, so
every owner spends its epsilon over comparable work.  Everything else
(step, clip, caps) is learnerd's plan for its mode.

psi against wall-clock time is measured, not simulated: learnerd writes its
checkpoint every CK_EVERY_* iterations (rounds in sync), the experiment
copies every checkpoint it sees (polling every 20 ms; checkpoints are
replaced atomically) and computes psi of its model (theta_L; sync2: the
running average theta_hat, the model sync2 publishes) on the owners' data:
f(theta*) and psi of the final model by `dpasync eval`, f of the
checkpoints' models with numpy once that reproduces eval's f of the final
model to 1e-9 (else by eval, each; psi_by in result.json says which).
t = 0 is the checkpoint written when training starts.

Repeats: every mode runs --repeats R times (default 3); the modes take
turns within a repeat (repeat 1 of every mode, then repeat 2, ...), so that
a change in the machine's load falls on every mode alike.  A repeat fails
when netns-cluster.sh exits non-zero (learnerd stopped or did not start,
or the job outlived its timeout).  A failed repeat is kept with its reason
(learnerd's "stopping:" line, else the cluster script's own last line),
the exit statuses, how far it got (k_done of its last checkpoint, answers,
wall_s to its last update) and the psi(t) of the checkpoints it wrote; the
other repeats and modes go on, and result.json and the table are rewritten
after every repeat, so that even an interrupted run keeps what it measured.

Per repeat, result.json has status ("ok" or "failed"; failed: reason,
exit_status of netns-cluster.sh, learnerd_exit), k_done, wall_s (training
start to the last update), psi_final (psi of model.json; null without one;
partial true when learnerd marked it partial) and psi_last (psi of the last
model measured), time_to_2x_final_s (first
checkpoint with psi <= 2 psi_final), time_to_common_target_s (first
checkpoint with psi <= the common target; null: never), idle (per owner:
the share of wall_s with no query of the job outstanding, 1 - sum of its
round trips / wall_s), round trips and answers per owner, the sync round
summary, learnerd's plan, when the bounce happened (s since t = 0) and the
psi(t) points.  Per mode: how many repeats were ok and failed, and the
median, min and max of each figure over the repeats that were ok
("summary").  The common target is twice the median psi_final of
async-strict (else of the first mode with a repeat that was ok), the same
for every mode; time_to_2x_final_s alone flatters a mode that ends high.

Writes OUTDIR/async-vs-sync.md (per mode: median (min-max) over the
repeats that were ok, and how many failed; then one line per repeat, with
the reason of each failure), the figure OUTDIR/psi-wall.png (`dpasync plot
--kind psi-wall`: per mode the median psi(t) of its repeats that were ok
with a min-max band, and its failed repeats as "MODE (failed)" up to where
they stopped) with its numbers in OUTDIR/psi-wall.csv, and per repeat
OUTDIR/MODE/rN/ (netns-cluster.sh's output without the data), rN.log (its
console) and rN-psi.csv (psi(t)).

Exit status: 0 every repeat of every mode was ok; 1 some repeat failed
(everything measured is still written); 2 bad usage; 77 network namespaces
cannot be created here (nothing was run).

--quick: T 11 / 40, a twentieth of the rows, about 6 checkpoints a run,
owner-3 away from 1 s to 2 s, for the integration test.  --modes A,B: only these modes.  --learner-args
MODE[@R]=FLAGS: more learnerd flags for MODE (in repeat R only), replacing
a default flag of the same name; the integration test makes sync1 fail
with 'sync1@1=--round-timeout 0.1' (a round waits >= 0.4 s for owner-4).
"""
import datetime
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NETNS = os.path.join(HERE, '..', '..', 'deploy', 'netns-cluster.sh')

OWNERS = 4
DELAYS = '1,20,80,200'
RATES = '40,20,10,5'
ROWS = '200000,20000,20000,20000'
ROWS_QUICK = '10000,1000,1000,1000'
FEATURES = 20
EPS = '1'
BOUNCE_OWNER, BOUNCE_AT, BOUNCE_DOWN = 3, 5, 3
BOUNCE_QUICK = 1, 1     # AT, DOWN: inside the quick runs' few seconds
T_SYNC, T_SYNC_QUICK = 60, 11
POINTS, POINTS_QUICK = 40, 6       # checkpoints per run, about
TIMEOUT, TIMEOUT_QUICK = 400, 120  # netns-cluster.sh --timeout, s
REPEATS = 3

MODES = [
    # name, netns --mode, learnerd flags, T
    ('async-strict', 'request', ['--max-inflight', '1'], 'async'),
    ('async-inflight4', 'request', ['--max-inflight', '4'], 'async'),
    ('sync1', 'sync1', ['--round-timeout', '60'], 'sync'),
    ('sync2', 'sync2', ['--round-timeout', '60'], 'sync'),
]
NAMES = [m[0] for m in MODES]


class NoNamespaces(Exception):
    """netns-cluster.sh exit 77: network namespaces cannot be created."""


class Poller(threading.Thread):
    """Copies every new checkpoint.json of a running learnerd."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path, self.stop, self.seen = path, False, {}

    def run(self):
        while not self.stop:
            self.grab()
            time.sleep(0.02)
        self.grab()

    def grab(self):
        try:
            with open(self.path) as f:
                ck = json.load(f)
        except (OSError, ValueError):
            return
        k = ck['state']['k_done']
        if k not in self.seen:
            self.seen[k] = ck


def options(p):
    p.add_argument('--repeats', type=int, default=REPEATS, metavar='R',
                   help='runs of every mode (default %d)' % REPEATS)
    p.add_argument('--modes', default=','.join(NAMES), metavar='A,B',
                   help='the modes to run, of %s (default: all)' % ','.join(NAMES))
    p.add_argument('--learner-args', action='append', default=[], metavar='MODE[@R]=FLAGS',
                   help='more learnerd flags for MODE (in repeat R only); replaces a default '
                        'flag of the same name')


def parse_options(a):
    """Checked --repeats, --modes and --learner-args, or exit 2."""
    def bad(msg):
        sys.stderr.write('async_vs_sync: %s\n' % msg)
        sys.exit(2)
    if not 1 <= a.repeats <= 100:
        bad('--repeats must be 1..100, not %d' % a.repeats)
    modes = [m for m in a.modes.split(',') if m]
    unknown = [m for m in modes if m not in NAMES]
    if not modes or unknown or len(set(modes)) != len(modes):
        bad('--modes: expected distinct names of %s, got %r' % (','.join(NAMES), a.modes))
    extra = []
    for spec in a.learner_args:
        m = re.match(r'^([a-z0-9-]+)(?:@([0-9]+))?=(.*)$', spec, re.S)
        if not m or m.group(1) not in NAMES:
            bad('--learner-args: expected MODE[@R]=FLAGS with MODE of %s, got %r'
                % (','.join(NAMES), spec))
        try:
            flags = shlex.split(m.group(3))
        except ValueError as e:
            bad('--learner-args %r: %s' % (spec, e))
        extra.append((m.group(1), int(m.group(2)) if m.group(2) else None, flags))
    return [s for s in MODES if s[0] in modes], extra


def merge_flags(base, extra):
    """base (pairs --flag value) with the flags of extra added; a flag of
    extra replaces base's flag of the same name (learnerd refuses a flag
    given twice)."""
    names = {t.split('=', 1)[0] for t in extra if t.startswith('--')}
    out = []
    for i in range(0, len(base), 2):
        if base[i] not in names:
            out += base[i:i + 2]
    return out + extra


def failure(d, console, rc):
    """Why a run failed: learnerd's "stopping:" line, else the cluster
    script's own last line (and learnerd's last log line after it); and
    learnerd's exit status when the script names it."""
    stop, last = None, None
    try:
        with open(os.path.join(d, 'learnerd.log'), errors='replace') as f:
            for line in f:
                if line.strip():
                    last = line.strip()
                m = re.search(r'\bstopping: (.*)$', line)
                if m:
                    stop = m.group(1).strip()
    except OSError:
        pass
    m = re.search(r'learnerd failed \(exit (\d+)\)', console)
    lexit = int(m.group(1)) if m else None
    if stop is not None:
        return stop, lexit
    own = [l.strip() for l in console.splitlines() if l.startswith('netns-cluster:')]
    why = own[-1] if own else 'netns-cluster.sh exited %d' % rc
    if last and 'did not start' in why:
        why += ' ' + last
    return why, lexit


def model_of(ck, theta, path):
    """A model file of checkpoint ck's job with theta, for dpasync eval,
    which guesses no target: the cluster's data (dpasync gen) has it in
    column y."""
    job = ck['job']
    m = {'format': 'dpasync-model', 'version': 1, 'model': job['model'], 'job': job['name'],
         'T': job['T'], 'lambda': job['lambda'], 'theta_max': job['theta_max'],
         'clip_l1': job['clip_l1'], 'bias': job['bias'], 'target': 'y', 'theta': theta}
    with open(path, 'w') as f:
        json.dump(m, f)


class Psi:
    """psi of the many models of one run on its data.  `dpasync eval` of
    one reference model gives f(theta*) (and psi_zero); f of the others is
    computed here with numpy (docs/design.md §2, linear model: lambda
    |theta|^2 + the mean of (y - theta.x)^2 over every owner's rows),
    after checking that it gives eval's f for the reference to 1e-9: one
    eval reads the whole data and solves for theta* again, seconds a
    checkpoint on these 260,000 rows.  Where the check fails (or the model
    is not linear), every model goes through eval."""

    def __init__(self, tools, files, ref_path):
        self.tools, self.files = tools, files
        ev = json.loads(tools.run(['eval', ref_path] + files))
        self.ref, self.f_star, self.psi_zero = ev['psi'], ev['f_star'], ev['psi_zero']
        with open(ref_path) as f:
            ref = json.load(f)
        self.partial = bool(ref.get('partial', False))
        self.lam, self.X, self.by = ref.get('lambda', 0.0), None, 'eval'
        if ref['model'] != 'linear':
            return
        target = ref.get('target', 'y')
        xs, ys = [], []
        for path in files:
            with open(path) as f:
                head = f.readline().strip().split(',')
            a = np.loadtxt(path, delimiter=',', skiprows=1, ndmin=2)
            t = head.index(target)
            xs.append(np.delete(a, t, axis=1))
            ys.append(a[:, t])
        X, self.y = np.vstack(xs), np.concatenate(ys)
        self.X = np.hstack([X, np.ones((X.shape[0], 1))]) if ref.get('bias') else X
        if abs(self.f(ref['theta']) - ev['f']) <= 1e-9 * ev['f']:
            self.by = 'numpy'
        else:
            self.X = None

    def f(self, theta):
        th = np.asarray(theta, dtype=float)
        r = self.y - self.X @ th
        return self.lam * float(th @ th) + float(r @ r) / len(r)

    def of(self, path, theta):
        """psi of the model theta (written to path when eval is needed)."""
        if self.X is not None:
            return self.f(theta) / self.f_star - 1
        return json.loads(self.tools.run(['eval', path] + self.files))['psi']


def read_csv_rows(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [l.split(',') for l in f.read().splitlines()[1:] if l]


def bounce_times(d, t0):
    """When owner BOUNCE_OWNER was killed and started again, s since t0."""
    out = {}
    try:
        with open(os.path.join(d, 'bounce.txt')) as f:
            for line in f:
                t, what = line.split()
                out[what + '_s'] = round(float(t) - t0, 3) if t0 is not None else None
    except (OSError, ValueError):
        pass
    return out


def measure(tools, d, name, mode, snaps, rec, out, rep):
    """What run d measured, into rec (also for a failed run: as far as it
    got).  Raises SystemExit (a dpasync failure) or OSError/ValueError/
    KeyError when its files cannot be read."""
    L = os.path.join(d, 'learner')
    files = [os.path.join(d, 'data', 'owner-%d.csv' % i) for i in range(1, OWNERS + 1)]
    trace = read_csv_rows(os.path.join(L, 'trace.csv'))
    snaps = sorted(snaps.items())
    t0 = snaps[0][1]['written_unix'] if snaps and snaps[0][0] == 0 else \
        (float(trace[0][1]) - float(trace[0][4]) if trace else None)
    mpath = os.path.join(L, 'model.json')
    psi_final = psi_zero = None
    pts = []
    tmp = os.path.join(d, 'snap-model.json')
    theta = lambda ck: (ck['state'].get('theta_hat') if mode == 'sync2' else None) or \
        ck['state']['theta_L']  # noqa: E731
    psi = None
    if os.path.exists(mpath):
        psi = Psi(tools, files, mpath)
        psi_final, rec['partial'] = psi.ref, psi.partial
    elif snaps:
        model_of(snaps[-1][1], theta(snaps[-1][1]), tmp)
        psi = Psi(tools, files, tmp)
    for k, ck in snaps:
        model_of(ck, theta(ck), tmp)
        pts.append((ck['written_unix'] - t0, k, psi.of(tmp, theta(ck))))
    if psi is not None:
        psi_zero, rec['psi_by'] = psi.psi_zero, psi.by
    t_end = float(trace[-1][1]) if trace else (snaps[-1][1]['written_unix'] if snaps else None)
    wall = t_end - t0 if t0 is not None and t_end is not None else None
    if psi_final is not None and wall is not None:
        pts.append((wall, snaps[-1][0] if snaps else 0, psi_final))
    pts.sort()
    ckpath = os.path.join(L, 'checkpoint.json')
    ck = json.load(open(ckpath)) if os.path.exists(ckpath) else (snaps[-1][1] if snaps else None)
    owners = {}
    for i in range(1, OWNERS + 1):
        n = 'owner-%d' % i
        rtt = [float(r[4]) for r in trace if r[2] == n]
        owners[n] = {'answers': len(rtt), 'busy_s': sum(rtt),
                     'idle': 1 - sum(rtt) / wall if wall else None,
                     'rtt_median_ms': 1e3 * statistics.median(rtt) if rtt else None}
    rounds = None
    rr = read_csv_rows(os.path.join(L, 'rounds.csv'))
    if rr:
        slow = {}
        for r in rr:
            slow[r[6]] = slow.get(r[6], 0) + 1
        rounds = {'rounds': len(rr), 'round_median_s': statistics.median(float(r[2]) for r in rr),
                  'round_max_s': max(float(r[2]) for r in rr), 'slowest_owner_count': slow}
    psi_csv = os.path.join(out, name, 'r%d-psi.csv' % rep)
    with open(psi_csv, 'w') as f:
        f.write('time_s,k,psi\n')
        for t, k, psi in pts:
            f.write('%.6f,%d,%.9g\n' % (t, k, psi))
    rec.update({
        'k_done': ck['state']['k_done'] if ck else 0, 'answers': len(trace), 'wall_s': wall,
        'psi_final': psi_final, 'psi_last': pts[-1][2] if pts else None, 'psi_zero': psi_zero,
        'time_to_2x_final_s': next((t for t, _, psi in pts if psi <= 2 * psi_final), wall)
        if psi_final is not None else None,
        'owners': owners, 'rounds': rounds, 'plan': ck['job'].get('plan') if ck else None,
        'bounce': bounce_times(d, t0), 'psi_csv': os.path.relpath(psi_csv, out),
        'psi_t': [[round(t, 6), k, psi] for t, k, psi in pts]})


def run_one(tools, a, spec, T, rep, extra, quick, out):
    """One repeat of one mode: a dict with its status and what it measured."""
    name, mode, lflags, kind = spec
    d = os.path.join(out, name, 'r%d' % rep)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(os.path.dirname(d), exist_ok=True)
    steps = T - 1 if kind == 'sync' else T   # sync: rounds
    every = max(1, steps // (POINTS_QUICK if quick else POINTS))
    flags = merge_flags(lflags + ['--checkpoint-every', str(every)], extra)
    cmd = [NETNS, '--bindir', a.build, '--owners', str(OWNERS), '--delays', DELAYS,
           '--rate', RATES, '--rows', ROWS_QUICK if quick else ROWS,
           '--features', str(FEATURES), '--epsilon', EPS, '--T', str(T), '--mode', mode,
           '--out', d, '--id', 'avs%d' % os.getpid(),
           '--bounce', '%d:%g:%g' % ((BOUNCE_OWNER,) + (BOUNCE_QUICK if quick else
                                                       (BOUNCE_AT, BOUNCE_DOWN))),
           '--bounce-from', 'training',
           '--learner-args', ' '.join(shlex.quote(f) for f in flags),
           '--timeout', str(TIMEOUT_QUICK if quick else TIMEOUT)]
    print('== %s repeat %d: %s' % (name, rep, ' '.join(shlex.quote(c) for c in cmd[1:])),
          flush=True)
    pol = Poller(os.path.join(d, 'learner', 'checkpoint.json'))
    pol.start()
    p = subprocess.run(cmd, capture_output=True, text=True)
    pol.stop = True
    pol.join()
    console = p.stdout + p.stderr
    with open(os.path.join(out, name, 'r%d.log' % rep), 'w') as f:
        f.write(console)
    if p.returncode == 77:
        raise NoNamespaces(console.strip().splitlines()[-1] if console.strip() else 'exit 77')
    rec = {'repeat': rep, 'learner_flags': flags, 'status': 'ok' if p.returncode == 0 else 'failed',
           'exit_status': p.returncode}
    if p.returncode != 0:
        rec['reason'], rec['learnerd_exit'] = failure(d, console, p.returncode)
    try:
        measure(tools, d, name, mode, pol.seen, rec, out, rep)
    except (SystemExit, OSError, ValueError, KeyError, IndexError, TypeError) as e:
        rec['measure_error'] = str(e)
        if rec['status'] == 'ok':
            rec['status'], rec['reason'] = 'failed', 'not measured: %s' % e
    finally:
        # The cluster's data is regenerated per run (same seed): keep the
        # results, drop the bulky data.
        shutil.rmtree(os.path.join(d, 'data'), ignore_errors=True)
    if rec['status'] == 'ok':
        print('%s repeat %d: wall %.1f s, psi_final %.4g, time to 2x final %.1f s, idle %s' % (
            name, rep, rec['wall_s'], rec['psi_final'], rec['time_to_2x_final_s'],
            ' '.join('%s=%.2f' % (n, o['idle']) for n, o in rec['owners'].items())), flush=True)
    else:
        print('%s repeat %d FAILED (exit %d): %s' % (name, rep, p.returncode, rec['reason']),
              flush=True)
    return rec


# ---- over the repeats -------------------------------------------------------

def spread(values):
    """median, min, max and n of the numbers among values (None: left out);
    None when there is none."""
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    return {'median': statistics.median(v), 'min': v[0], 'max': v[-1], 'n': len(v)}


def spread_reach(values):
    """spread of times that may be None (never reached, counted as
    infinitely late): median/min/max None where that is never."""
    v = sorted(float('inf') if x is None else x for x in values)
    if not v:
        return None
    fin = lambda x: None if x == float('inf') else x  # noqa: E731
    return {'median': fin(statistics.median(v)), 'min': fin(v[0]), 'max': fin(v[-1]),
            'n': len(v), 'not_reached': sum(1 for x in values if x is None)}


def summarize(res):
    """Per mode: ok/failed counts and spreads over its repeats that were
    ok; the common target and each repeat's time to it."""
    m = res['modes']
    ok = {n: [r for r in m[n]['repeats'] if r['status'] == 'ok'] for n in m}
    base = next((n for n in ['async-strict'] + list(m) if ok.get(n)), None)
    target = 2 * statistics.median(r['psi_final'] for r in ok[base]) if base else None
    res['common_target_psi'], res['common_target_from'] = target, base
    for n, mode in m.items():
        for r in mode['repeats']:
            r['time_to_common_target_s'] = next(
                (t for t, _, psi in r.get('psi_t', []) if psi <= target), None) \
                if target is not None else None
        good = ok[n]
        mode['ok'], mode['failed'] = len(good), len(mode['repeats']) - len(good)
        ref = {r['repeat']: r['wall_s'] for r in ok.get('sync1', [])}
        mode['summary'] = {
            'wall_s': spread(r['wall_s'] for r in good),
            'psi_final': spread(r['psi_final'] for r in good),
            'time_to_2x_final_s': spread(r['time_to_2x_final_s'] for r in good),
            'time_to_common_target_s': spread_reach([r['time_to_common_target_s'] for r in good]),
            'idle': {o: spread(r['owners'][o]['idle'] for r in good)
                     for o in ('owner-%d' % i for i in range(1, OWNERS + 1))},
            'speedup_vs_sync1': spread(ref[r['repeat']] / r['wall_s'] for r in good
                                       if r['repeat'] in ref and r['wall_s'])}
    res['pass'] = all(mode['failed'] == 0 for mode in m.values())


def cell(s, fmt=C.g3, never='never'):
    """A spread as "median (min–max)"; one value alone; '—' for none."""
    if s is None:
        return '—'
    f = lambda v: fmt(v) if v is not None else never  # noqa: E731
    if s['n'] == 1 or s['min'] == s['max']:
        return f(s['median'])
    return '%s (%s–%s)' % (f(s['median']), f(s['min']), f(s['max']))


def table(res):
    m, target, su = res['modes'], res['common_target_psi'], res['setup']
    R = su['repeats']
    head = ('%d repeat%s per mode%s, %s to %s UTC; median (min–max) over the repeats that '
            'finished; %d CPUs, load average %s at the start and %s at the end; links: %s.\n'
            % (R, 's' if R > 1 else '', ' (quick)' if su['quick'] else '', su['started_utc'],
               su.get('finished_utc', '…'), su['cpus'], su['loadavg_start'],
               su.get('loadavg_end', '…'),
               {'user': 'emulated in user space', 'netem': 'tc netem'}.get(su.get('link'), '?')))
    zero = next((r['psi_zero'] for mode in m.values() for r in mode['repeats']
                 if r.get('psi_zero') is not None), None)
    if zero is not None:
        head += 'ψ of θ = 0 is %.3g. ' % zero
    if target is not None:
        head += ('"to ψ ≤ %.3g" is the common target, twice the median final ψ of %s.\n'
                 % (target, res['common_target_from']))
    else:
        head += 'No mode finished a repeat: no common target.\n'
    if 'sync1' in m and not m['sync1']['ok']:
        head += 'sync1 finished no repeat: no speed-up against it.\n'
    rows = []
    for n, mode in m.items():
        s = mode['summary']
        rows.append([n, mode['T'], '%d / %d' % (mode['ok'], mode['failed']),
                     cell(s['wall_s']), cell(s['time_to_2x_final_s']),
                     cell(s['time_to_common_target_s']), cell(s['psi_final']),
                     ' / '.join(('%.2f' % s['idle'][o]['median']) if s['idle'][o] else '—'
                                for o in sorted(s['idle'])),
                     cell(s['speedup_vs_sync1'], lambda v: '%.2f' % v)])
    text = head + '\n' + C.md_table(
        ['mode', 'T', 'repeats ok / failed', 'wall s', 'to 2× final s',
         'to ψ ≤ %.3g s' % target if target is not None else 'to target s', 'ψ final',
         'idle owner-1..4 (median)', 'speed-up vs sync1 (wall)'], rows)
    rows = []
    for n, mode in m.items():
        for r in mode['repeats']:
            g = lambda v: C.g3(v) if v is not None else '—'  # noqa: E731
            why = r.get('reason', '').replace('|', '\\|')
            final = g(r.get('psi_final')) + (' (partial)' if r.get('partial') else '')
            rows.append([n, r['repeat'], 'ok' if r['status'] == 'ok' else
                         'failed (exit %d)' % r['exit_status'], g(r.get('wall_s')),
                         r.get('k_done', '—'), final, g(r.get('psi_last')),
                         g(r.get('bounce', {}).get('killed_s')), why])
    text += '\nEach repeat (k: iterations, sync: rounds, of its last checkpoint; wall s: to ' \
            'its last update; owner-3 killed at s since training started, negative: before):\n\n'
    text += C.md_table(['mode', 'repeat', 'status', 'wall s', 'k', 'ψ final', 'ψ last measured',
                        'owner-3 killed at s', 'reason'], rows)
    return text


def write_all(res, out, quiet=True):
    """result.json and the table, as far as measured."""
    summarize(res)
    text = table(res)
    if quiet:
        with open(os.path.join(out, 'async-vs-sync.md'), 'w') as f:
            f.write(text)
        with open(os.path.join(out, 'result.json'), 'w') as f:
            json.dump(res, f, indent=2, sort_keys=True)
            f.write('\n')
    else:
        C.write_text(out, 'async-vs-sync.md', text)
        C.write_result(out, res)


def figure(tools, res, out):
    """psi-wall.png: per mode the band of its repeats that were ok, and its
    failed ones as "MODE (failed)"; None when there is nothing to draw."""
    labels, files = [], []
    for n, mode in res['modes'].items():
        for failed in (False, True):
            for r in mode['repeats']:
                if (r['status'] != 'ok') == failed and r.get('psi_t'):
                    labels.append(n + (' (failed)' if failed else ''))
                    files.append(os.path.join(out, r['psi_csv']))
    if not files:
        return None
    try:
        tools.run(['plot', '--kind', 'psi-wall', '--out', os.path.join(out, 'psi-wall.png'),
                   '--data-out', os.path.join(out, 'psi-wall.csv'), '--labels', ','.join(labels)]
                  + files)
    except SystemExit as e:
        print('figure not drawn:', e, flush=True)
        return None
    return 'psi-wall.png'


def utc():
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M')


def load():
    return '%.1f' % os.getloadavg()[0]


def main():
    a = C.args(__doc__, options)
    quick = C.quick(a)
    specs, extra = parse_options(a)
    tools = C.Tools(a)
    os.makedirs(a.out, exist_ok=True)
    t_sync = T_SYNC_QUICK if quick else T_SYNC
    t_async = OWNERS * (t_sync - 1)
    res = {'experiment': 'async-vs-sync', 'quick': quick,
           'setup': {'owners': OWNERS, 'delays_ms': DELAYS, 'rates': RATES,
                     'rows': ROWS_QUICK if quick else ROWS, 'features': FEATURES, 'epsilon': EPS,
                     'bounce': dict(zip(('owner', 'at_s', 'down_s'), (BOUNCE_OWNER,) + (
                         BOUNCE_QUICK if quick else (BOUNCE_AT, BOUNCE_DOWN)))),
                     'T_sync': t_sync, 'T_async': t_async, 'quick': quick, 'repeats': a.repeats,
                     'modes': [s[0] for s in specs], 'learner_args': a.learner_args,
                     'started_utc': utc(), 'cpus': os.cpu_count(), 'loadavg_start': load()},
           'modes': {s[0]: {'mode': s[1], 'learner_flags': s[2],
                            'T': t_sync if s[3] == 'sync' else t_async, 'repeats': []}
                     for s in specs}}
    started = time.time()
    try:
        for rep in range(1, a.repeats + 1):
            for spec in specs:
                more = [f for n, r, fl in extra if n == spec[0] and r in (None, rep) for f in fl]
                mode = res['modes'][spec[0]]
                mode['repeats'].append(run_one(tools, a, spec, mode['T'], rep, more, quick, a.out))
                if not res['setup'].get('link'):
                    res['setup']['link'] = link_of(os.path.join(a.out, spec[0], 'r%d' % rep))
                write_all(res, a.out)
            if rep < a.repeats:
                res['figure'] = figure(tools, res, a.out)
    except NoNamespaces as e:
        if not any(mode['repeats'] for mode in res['modes'].values()):
            print('network namespaces cannot be created here (root, ip netns): not run (%s)' % e)
            sys.exit(77)
        print('network namespaces could no longer be created (%s): stopping' % e)
    res['setup'].update(finished_utc=utc(), loadavg_end=load(), seconds=time.time() - started)
    summarize(res)
    res['figure'] = figure(tools, res, a.out)
    write_all(res, a.out, quiet=False)
    print(open(os.path.join(a.out, 'async-vs-sync.md')).read())
    if not res['pass']:
        print('not every repeat finished: %s' % ', '.join(
            '%s %d of %d failed' % (n, mode['failed'], len(mode['repeats']))
            for n, mode in res['modes'].items() if mode['failed']))
    sys.exit(0 if res['pass'] else 1)


def link_of(d):
    """How netns-cluster.sh emulated the links ("netem" or "user")."""
    try:
        with open(os.path.join(d, 'links.txt')) as f:
            m = re.match(r'link emulation: (\S+)', f.readline())
        return m.group(1) if m else None
    except OSError:
        return None


if __name__ == '__main__':
    main()
