#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The crash campaign (docs/reliability.md §2): randomized trials, each a
short real job (learnerd + 3 ownerd over mutual TLS on loopback) in which
one process is killed with SIGKILL and restarted, then the invariants are
checked on the files (tests/lib/cluster.py check_invariants):
every ledger within epsilon_i and K_i, every answer learnerd applied
(trace.csv) a record of that owner's ledger, no query id answered twice,
and the resumed job reaching T.

The kill lands at a random moment, or exactly at a chosen file operation
through the fault shim (tests/lib/iofault.c, DP_FAULT_ACTION=
kill-before/kill-after): an owner right after writing an answer's ledger
record and before syncing it, right after the sync and before the answer
is sent, or learnerd at any of its file operations (inside a checkpoint,
between the trace row and the checkpoint, ...).

    chaos.py BUILDDIR SHIM [--trials N] [--seed S] [--json FILE]

The seed is printed; DP_TEST_SEED=S replays a campaign.  Exit 0 when every
trial holds the invariants, 1 with the failing trial's seed and kind."""
import argparse, json, os, random, signal, sys, time
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'lib'))
from harness import Fail, check, tmpdir, cleanup
from cluster import Cluster, check_invariants, wait_owner, wait_target

T = 40               # iterations per job: about 0.1-0.3 s of training
OWNERS = 3
RATE = '300'         # clock ticks per second per owner
LEARNER_FLAGS = ['--checkpoint-every', '5',
                 # A learner crash wastes the answers given after its last
                 # checkpoint (at most checkpoint-every + in flight): the
                 # margin keeps every owner able to reach T after a crash.
                 '--answers-margin', '1',
                 '--query-timeout', '5', '--idle-timeout', '20']
# Index of the learner's first file operation after its port file is
# written (1: the sync of its new --out into the parent, docs/reliability.md
# §8.4; 2: lock file; 3: trace open; 4: trace header; 5-8: port file); the
# campaign kills the learner only after owners can know its port.
LEARNER_FIRST_OP = 9

KINDS = [
    # (name, weight)
    ('owner-time', 30),     # an owner, at a random moment
    ('learner-time', 20),   # learnerd, at a random moment
    ('owner-write', 15),    # an owner after write() of an answer record, before its fdatasync
    ('owner-sync', 15),     # an owner after the record's fdatasync, before the answer is sent
    ('learner-op', 20),     # learnerd before or after one of its file operations
]

def pick(rng):
    r = rng.uniform(0, sum(w for _, w in KINDS))
    for name, w in KINDS:
        r -= w
        if r < 0:
            return name
    return KINDS[-1][0]

def shim_env(shim, calls, at, action, log=None):
    e = dict(os.environ, LD_PRELOAD=shim, DP_FAULT_AT=str(at), DP_FAULT_ACTION=action)
    if calls:
        e['DP_FAULT_CALLS'] = calls
    if log:
        e['DP_FAULT_LOG'] = log
    return e

def killed(p):
    return p.poll() == -signal.SIGKILL

def trial(bindir, shim, shared, d, rng, n):
    """One trial; returns its record (kind, target, landed, ...)."""
    kind = pick(rng)
    c = Cluster(bindir, d, owners=OWNERS, T=T, shared=shared)
    rec = {'trial': n, 'kind': kind, 'landed': False}
    try:
        owners = {}
        lenv = None
        j = rng.randint(1, OWNERS)
        if kind == 'learner-op':
            # learnerd makes ~100 counted calls in this job (checkpoints,
            # trace rows): a random one of them.
            at = rng.randint(LEARNER_FIRST_OP, 100)
            act = rng.choice(['kill-before', 'kill-after'])
            lenv = shim_env(shim, None, at, act)
            rec.update(target='learner', at=at, action=act)
        c.start_learner(LEARNER_FLAGS, env=lenv)
        for i in range(1, OWNERS + 1):
            env = None
            if i == j and kind == 'owner-write':
                # Counted writes: 1 is the new ledger directory's format
                # file, 2 the job ledger's header (temp files, docs/ledger.md
                # §10 and §4), then one per answer record.
                at = rng.randint(3, 13)
                env = shim_env(shim, 'write', at, 'kill-after')
                rec.update(target='owner-%d' % i, at=at, action='kill-after')
            elif i == j and kind == 'owner-sync':
                at = rng.randint(1, 12)
                act = rng.choice(['kill-before', 'kill-after', 'kill-after'])
                env = shim_env(shim, 'fdatasync', at, act)
                rec.update(target='owner-%d' % i, at=at, action=act)
            owners[i] = c.start_owner(i, rate=RATE, env=env)
        if kind in ('owner-time', 'learner-time'):
            delay = rng.uniform(0.0, 0.2)
            rec.update(target='learner' if kind == 'learner-time' else 'owner-%d' % j,
                       delay=round(delay, 4))
            time.sleep(delay)
            p = c.learner if kind == 'learner-time' else owners[j]
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
                rec['landed'] = True
        else:
            # Wait for the shim's kill, or for the job to end without it.
            p = c.learner if rec['target'] == 'learner' else owners[j]
            wait_target(c, p, timeout=30, after=5)
            rec['landed'] = killed(p)
        rec['rows_at_kill'] = len(c.trace_rows())
        if rec['landed']:
            time.sleep(rng.uniform(0.0, 0.1))
            if rec['target'] == 'learner':
                c.start_learner(LEARNER_FLAGS, resume=True)
            elif c.learner.poll() is None:
                owners[j] = c.start_owner(j, rate=RATE)
        out = c.wait_learner(timeout=60)
        check('done k=%d' % T in out, 'learnerd did not report done k=%d: %r' % (T, out))
        for i, p in owners.items():
            rc = wait_owner(p)
            check(rc == 0 or (rec['landed'] and rec['target'] == 'owner-%d' % i and killed(p)),
                  'owner-%d exited %s' % (i, rc))
        inv = check_invariants(c)
        rec['answers'] = {k: v[0] for k, v in inv.items()}
        return rec
    except Fail as e:
        rec['error'] = str(e)
        return rec
    finally:
        c.close()

def campaign(bindir, shim, trials, seed, keep=False):
    d = tmpdir('chaos')
    rng = random.Random(seed)
    recs = []
    t0 = time.time()
    try:
        shared = Cluster(bindir, os.path.join(d, 'shared'), owners=OWNERS, rows=200, features=4).d
        for n in range(trials):
            tdir = os.path.join(d, 't%d' % n)
            rec = trial(bindir, shim, shared, tdir, rng, n)
            recs.append(rec)
            if 'error' in rec:
                print('trial %d FAILED: %s' % (n, json.dumps(rec)))
                keep = True
                continue
            cleanup(tdir)
    finally:
        if keep:
            print('kept', d)
        else:
            cleanup(d)
    return recs, time.time() - t0

def report(recs, secs, seed):
    by = {}
    for r in recs:
        s = by.setdefault(r['kind'], {'trials': 0, 'landed': 0, 'failed': 0})
        s['trials'] += 1
        s['landed'] += r['landed']
        s['failed'] += 'error' in r
    return {'seed': seed, 'trials': len(recs), 'seconds': round(secs, 1),
            'landed': sum(r['landed'] for r in recs),
            'failed': sum('error' in r for r in recs), 'by_kind': by,
            'failures': [r for r in recs if 'error' in r]}

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('bindir')
    ap.add_argument('shim')
    ap.add_argument('--trials', type=int, default=50)
    ap.add_argument('--seed', type=int)
    ap.add_argument('--json')
    ap.add_argument('--records')
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int(os.environ.get('DP_TEST_SEED') or
                                                 random.SystemRandom().randrange(1 << 31))
    print('chaos: %d trials, seed %d (replay: DP_TEST_SEED=%d)' % (a.trials, seed, seed))
    recs, secs = campaign(a.bindir, os.path.abspath(a.shim), a.trials, seed)
    rep = report(recs, secs, seed)
    print(json.dumps({k: v for k, v in rep.items() if k != 'failures'}, indent=1))
    if a.json:
        json.dump(rep, open(a.json, 'w'), indent=1)
    if a.records:
        json.dump(recs, open(a.records, 'w'), indent=0)
    check_ok = rep['failed'] == 0
    print('PASS' if check_ok else 'FAIL: %d of %d trials broke an invariant (seed %d)'
          % (rep['failed'], rep['trials'], seed))
    sys.exit(0 if check_ok else 1)

main()
