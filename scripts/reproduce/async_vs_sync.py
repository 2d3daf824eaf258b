#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""async vs sync on the wall clock: netns cluster, 4 owners at 1/20/80/200 ms, a slow and a bouncing owner (needs root)

Runs deploy/netns-cluster.sh once per mode -- async request strict
(max-inflight 1), async request --max-inflight 4, sync1, sync2 -- on the
same cluster: 4 owners in network namespaces with one-way delays 1, 20, 80
and 200 ms, clock rates 40, 20, 10 and 5 /s, epsilon 1 each, 20 features +
bias; owner-1 holds 10x the rows of the others (200,000 against 20,000),
so its answers take about 10x longer to compute (an honest slow owner: more
data, no sleep); owner-3 is killed (SIGKILL) BOUNCE_AT s after the owners
start and restarted, with its ledger, BOUNCE_DOWN s later.

Both sync modes run T = 60 (59 rounds of 4 answers: 236 answers in all);
the async modes run T = 236 iterations, the same number of answers, so
every owner spends its epsilon over comparable work.  Everything else
(step, clip, caps) is learnerd's plan for its mode.

psi against wall-clock time is measured, not simulated: learnerd writes its
checkpoint every CK_EVERY_* iterations (rounds in sync), the experiment
copies every checkpoint it sees (polling every 20 ms; checkpoints are
replaced atomically) and `dpasync eval` computes psi of its model (theta_L;
sync2: the running average theta_hat, the model sync2 publishes) on the
owners' data.  t = 0 is the checkpoint written when training starts.

Per mode, OUTDIR/result.json has wall_s (training start to the last update),
psi_final (psi of model.json), time_to_2x_final_s (first checkpoint with psi
<= 2 psi_final), time_to_common_target_s (first checkpoint with psi <= twice
async-strict's psi_final, the same target for every mode; null: never), idle (per owner: the share of wall_s with no query of the
job outstanding, 1 - sum of its round trips / wall_s), round trips and
answers per owner, and the psi(t) points.  Writes OUTDIR/async-vs-sync.md
and the figure OUTDIR/psi-wall.png (`dpasync plot --kind psi-wall`).
--quick: T 30/116, for a smoke test.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NETNS = os.path.join(HERE, '..', '..', 'deploy', 'netns-cluster.sh')

OWNERS = 4
DELAYS = '1,20,80,200'
RATES = '40,20,10,5'
ROWS = '200000,20000,20000,20000'
FEATURES = 20
EPS = '1'
BOUNCE_OWNER, BOUNCE_AT, BOUNCE_DOWN = 3, 5, 3
T_SYNC = 60
POINTS = 40            # checkpoints per run, about

MODES = [
    # name, netns --mode, learnerd flags, T
    ('async-strict', 'request', ['--max-inflight', '1'], 'async'),
    ('async-inflight4', 'request', ['--max-inflight', '4'], 'async'),
    ('sync1', 'sync1', ['--round-timeout', '60'], 'sync'),
    ('sync2', 'sync2', ['--round-timeout', '60'], 'sync'),
]


class Poller(threading.Thread):
    """Copies every new checkpoint.json of a running learnerd."""

    def __init__(self, path, dest):
        super().__init__(daemon=True)
        self.path, self.dest, self.stop, self.seen = path, dest, False, {}

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


def model_file(template, theta, path):
    m = dict(template)
    m['theta'] = theta
    with open(path, 'w') as f:
        json.dump(m, f)


def run_mode(tools, a, name, mode, lflags, T, out):
    d = os.path.join(out, name)
    if os.path.exists(d):
        shutil.rmtree(d)
    steps = T - 1 if mode.startswith('sync') else T   # sync: rounds
    every = max(1, steps // POINTS)
    cmd = [NETNS, '--bindir', a.build, '--owners', str(OWNERS), '--delays', DELAYS,
           '--rate', RATES, '--rows', ROWS, '--features', str(FEATURES), '--epsilon', EPS,
           '--T', str(T), '--mode', mode, '--out', d, '--id', 'dpa-avs',
           '--bounce', '%d:%g:%g' % (BOUNCE_OWNER, BOUNCE_AT, BOUNCE_DOWN),
           '--learner-args', ' '.join(lflags + ['--checkpoint-every', str(every)]),
           '--timeout', '400']
    print('==', name, ' '.join(cmd[1:]), flush=True)
    pol = Poller(os.path.join(d, 'learner', 'checkpoint.json'), d)
    pol.start()
    p = subprocess.run(cmd, capture_output=True, text=True)
    pol.stop = True
    pol.join()
    with open(os.path.join(out, name + '.log'), 'w') as f:
        f.write(p.stdout + p.stderr)
    if p.returncode == 77:
        sys.exit('network namespaces cannot be created here (root, ip netns): not run')
    if p.returncode != 0:
        sys.exit('%s: netns-cluster.sh exited %d:\n%s' % (name, p.returncode,
                                                           (p.stdout + p.stderr)[-2000:]))
    L = os.path.join(d, 'learner')
    files = [os.path.join(d, 'data', 'owner-%d.csv' % i) for i in range(1, OWNERS + 1)]
    final = json.load(open(os.path.join(L, 'model.json')))
    ev = json.loads(tools.run(['eval', os.path.join(L, 'model.json')] + files))
    psi_final = ev['psi']
    trace = [l.split(',') for l in open(os.path.join(L, 'trace.csv')).read().splitlines()[1:]]
    snaps = sorted(pol.seen.items())
    t0 = snaps[0][1]['written_unix'] if snaps and snaps[0][0] == 0 else \
        float(trace[0][1]) - float(trace[0][4])
    t_end = float(trace[-1][1])
    wall = t_end - t0
    # psi of each checkpoint's model.
    pts = []
    tmp = os.path.join(d, 'snap-model.json')
    for k, ck in snaps:
        th = ck['state'].get('theta_hat') if mode == 'sync2' else None
        theta = th if th is not None else ck['state']['theta_L']
        if k == 0:
            psi = ev['psi_zero']
        else:
            model_file(final, theta, tmp)
            psi = json.loads(tools.run(['eval', tmp] + files))['psi']
        pts.append((ck['written_unix'] - t0, k, psi))
    pts.append((wall, snaps[-1][0] if snaps else 0, psi_final))
    pts.sort()
    t2 = next((t for t, _, psi in pts if psi <= 2 * psi_final), wall)
    owners = {}
    for i in range(1, OWNERS + 1):
        n = 'owner-%d' % i
        rtt = [float(r[4]) for r in trace if r[2] == n]
        owners[n] = {'answers': len(rtt), 'busy_s': sum(rtt),
                     'idle': 1 - sum(rtt) / wall if wall > 0 else None,
                     'rtt_median_ms': 1e3 * statistics.median(rtt) if rtt else None}
    rounds = None
    rp = os.path.join(L, 'rounds.csv')
    if os.path.exists(rp):
        rr = [l.split(',') for l in open(rp).read().splitlines()[1:]]
        slow = {}
        for r in rr:
            slow[r[6]] = slow.get(r[6], 0) + 1
        rounds = {'rounds': len(rr), 'round_median_s': statistics.median(float(r[2]) for r in rr),
                  'round_max_s': max(float(r[2]) for r in rr), 'slowest_owner_count': slow}
    with open(os.path.join(out, name + '-psi.csv'), 'w') as f:
        f.write('time_s,k,psi\n')
        for t, k, psi in pts:
            f.write('%.6f,%d,%.9g\n' % (t, k, psi))
    ck = json.load(open(os.path.join(L, 'checkpoint.json')))
    res = {'mode': mode, 'learner_flags': lflags, 'T': T, 'wall_s': wall, 'psi_final': psi_final,
           'psi_zero': ev['psi_zero'], 'time_to_2x_final_s': t2, 'owners': owners,
           'rounds': rounds, 'plan': ck['job']['plan'], 'answers': len(trace),
           'psi_t': [[round(t, 6), k, psi] for t, k, psi in pts]}
    print('%s: wall %.1f s, psi_final %.4g, time to 2x final %.1f s, idle %s' % (
        name, wall, psi_final, t2,
        ' '.join('%s=%.2f' % (n, o['idle']) for n, o in owners.items())), flush=True)
    # The cluster's data is regenerated per run (same seed): keep the
    # results, drop the bulky data.
    shutil.rmtree(os.path.join(d, 'data'), ignore_errors=True)
    return res


def main():
    a = C.args(__doc__)
    quick = C.quick(a)
    tools = C.Tools(a)
    os.makedirs(a.out, exist_ok=True)
    t_sync = 31 if quick else T_SYNC
    t_async = OWNERS * (t_sync - 1)
    res = {'setup': {'owners': OWNERS, 'delays_ms': DELAYS, 'rates': RATES, 'rows': ROWS,
                     'features': FEATURES, 'epsilon': EPS,
                     'bounce': {'owner': BOUNCE_OWNER, 'at_s': BOUNCE_AT, 'down_s': BOUNCE_DOWN},
                     'T_sync': t_sync, 'T_async': t_async, 'quick': quick},
           'modes': {}}
    for name, mode, lflags, kind in MODES:
        T = t_sync if kind == 'sync' else t_async
        res['modes'][name] = run_mode(tools, a, name, mode, lflags, T, a.out)
    m = res['modes']
    # A common target: twice the final psi of the paper's async algorithm
    # (strict); time_to_2x_final_s alone flatters a mode that ends high.
    target = 2 * m['async-strict']['psi_final']
    res['common_target_psi'] = target
    for r in m.values():
        r['time_to_common_target_s'] = next((t for t, _, psi in r['psi_t'] if psi <= target), None)
    base = m['sync1']['wall_s']
    rows = []
    fmt = lambda v: C.g3(v) if v is not None else 'not reached'
    for name, r in m.items():
        rows.append([name, r['T'], C.g3(r['wall_s']), C.g3(r['time_to_2x_final_s']),
                     fmt(r['time_to_common_target_s']), C.g3(r['psi_final']),
                     ' / '.join('%.2f' % r['owners']['owner-%d' % i]['idle']
                                for i in range(1, OWNERS + 1)),
                     '%.2f' % (base / r['wall_s'])])
    C.write_text(a.out, 'async-vs-sync.md', C.md_table(
        ['mode', 'T', 'wall s', 'to 2x final s', 'to psi <= %.3g s' % target, 'psi final',
         'idle owner-1..4',
         'speed-up vs sync1'], rows))
    try:
        tools.run(['plot', '--kind', 'psi-wall', '--out', os.path.join(a.out, 'psi-wall.png'),
                   '--labels', ','.join(m)] + [os.path.join(a.out, n + '-psi.csv') for n in m])
        res['figure'] = 'psi-wall.png'
    except SystemExit as e:
        print('figure not drawn:', e)
    C.write_result(a.out, res)


if __name__ == '__main__':
    main()
