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

Sync jobs (docs/ledger.md §9 "Sync jobs", docs/learnerd.md §9): a
sync1 or sync2 job in which an owner is stopped (SIGTERM or SIGKILL) and
restarted, or learnerd is killed with SIGKILL and started with --resume;
the job must still complete its T - 1 rounds.  Spent owners (docs/ledger.md
§8): one owner starts with a partly spent lifetime budget (a first job of
that owner alone, run by the real daemons once per campaign, spent 0.5 or
0.9 of its lifetime cap 1; its ledger directory is copied into the trial),
then one process of the job is killed and restarted.

Counted over every trial and printed in the summary, each must be 0:
overspends (a ledger past epsilon_i or K_i, or a ledger directory past its
lifetime cap), unsynced answers (a trace row without a ledger record),
"eps spent with no model" (an owner spent epsilon in the trial's job and
the job, resumed after a kill of learnerd when there was one, left no
model.json, final or partial) and refusals by admitted owners (learnerd
log lines `refused k=`).

The seed is printed; DP_TEST_SEED=S replays a campaign.  Exit 0 when every
trial holds the invariants, 1 with the failing trial's seed and kind."""
import argparse, json, os, random, shutil, signal, subprocess, sys, time
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'lib'))
from harness import Fail, check, tmpdir, cleanup
from cluster import Cluster, check_invariants, job_file, ledger_records, wait_owner, wait_target

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
    ('owner-time', 20),     # an owner, at a random moment
    ('learner-time', 12),   # learnerd, at a random moment
    ('owner-write', 10),    # an owner after write() of an answer record, before its fdatasync
    ('owner-sync', 10),     # an owner after the record's fdatasync, before the answer is sent
    ('learner-op', 13),     # learnerd before or after one of its file operations
    ('sync-owner', 15),     # sync1/sync2: an owner stopped (SIGTERM or SIGKILL), restarted
    ('sync-learner', 10),   # sync1/sync2: learnerd killed, then --resume
    ('spent', 10),          # an owner with a partly spent lifetime; a random process killed
]
SYNC_FLAGS = ['--round-timeout', '30']
SPENT_LEVELS = ('0.5', '0.9')   # lifetime epsilon a first job spent (of a cap of 1)

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

def spent_ledger(bindir, shared, i, level, cache):
    """An ownerd ledger directory of owner-i whose lifetime cap 1 is spent
    to `level` by a first job of owner-i alone (real learnerd and ownerd,
    T = 10), made once per campaign and level; returns its path."""
    key = (i, level)
    if key in cache:
        return cache[key]
    d = os.path.join(shared, 'spent-%d-%s' % (i, level))
    c = Cluster(bindir, d, owners=OWNERS, T=10, shared=shared)
    try:
        c.names = ['owner-%d' % i]
        c.start_learner(['--idle-timeout', '20'])
        p = c.start_owner(i, rate=RATE, extra=['--epsilon', level, '--lifetime-epsilon', '1',
                                               '--answers-cap', '10'])
        c.wait_learner(timeout=60)
        check(p.wait(timeout=30) == 0, 'first job: owner-%d exited %s' % (i, p.returncode))
    finally:
        c.close()
    cache[key] = c.ledger(i)
    return cache[key]

def job_files(path):
    home = os.path.join(path, 'jobs')   # docs/ledger.md §8
    return set(f for f in os.listdir(home) if f.endswith('.ledger')) if os.path.isdir(home) else set()

def counters(c, rec, before):
    """The counted invariants of one trial, read from its files even when
    the trial failed: refusals (learnerd log lines `refused k=`) and
    owners that spent epsilon in this job with no model.json left."""
    logp = c.path('learnerd.log')
    log = open(logp).read() if os.path.exists(logp) else ''
    rec['refusals'] = sum(1 for l in log.splitlines() if ' refused k=' in l)
    model = os.path.exists(c.path('learner', 'model.json'))
    rec['spent_no_model'] = 0
    for i in range(1, OWNERS + 1):
        d = c.ledger(i)
        for f in job_files(d) - before.get(i, set()):
            if ledger_records(os.path.join(d, f))[1] > 0 and not model:
                rec['spent_no_model'] += 1

def classify(err):
    """Which counted invariant a check_invariants failure broke, if any."""
    if 'no ledger record' in err or 'applied twice' in err:
        return 'unsynced'
    if '> cap' in err or '> epsilon_i' in err or 'over its lifetime' in err:
        return 'overspend'
    return None

def trial(bindir, shim, shared, d, rng, n, cache):
    """One trial; returns its record (kind, target, landed, ...)."""
    kind = pick(rng)
    c = Cluster(bindir, d, owners=OWNERS, T=T, shared=shared)
    rec = {'trial': n, 'kind': kind, 'landed': False}
    before = {}
    try:
        owners = {}
        lenv = None
        j = rng.randint(1, OWNERS)
        flags = list(LEARNER_FLAGS)
        oextra = {}
        if kind.startswith('sync'):
            mode = rng.choice(['sync1', 'sync2'])
            flags += ['--mode', mode] + SYNC_FLAGS
            rec['mode'] = mode
        if kind == 'spent':
            level = rng.choice(SPENT_LEVELS)
            src = spent_ledger(bindir, shared, j, level, cache)
            os.makedirs(os.path.dirname(c.ledger(j)), exist_ok=True)
            shutil.copytree(src, c.ledger(j))
            before[j] = job_files(c.ledger(j))
            oextra[j] = ['--lifetime-epsilon', '1']
            # The process killed: the spent owner, another owner or learnerd.
            victim = rng.choice(['spent', 'other', 'learner'])
            rec.update(spent_owner='owner-%d' % j, spent=level)
            if victim == 'other':
                j = rng.choice([i for i in range(1, OWNERS + 1) if i != j])
        if kind == 'learner-op':
            # learnerd makes ~100 counted calls in this job (checkpoints,
            # trace rows): a random one of them.
            at = rng.randint(LEARNER_FIRST_OP, 100)
            act = rng.choice(['kill-before', 'kill-after'])
            lenv = shim_env(shim, None, at, act)
            rec.update(target='learner', at=at, action=act)
        c.start_learner(flags, env=lenv)
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
            owners[i] = c.start_owner(i, rate=RATE, env=env, extra=oextra.get(i, ()))
        sig = signal.SIGKILL
        if kind in ('owner-time', 'learner-time', 'sync-owner', 'sync-learner', 'spent'):
            to_learner = kind in ('learner-time', 'sync-learner') or (
                kind == 'spent' and victim == 'learner')
            if kind == 'sync-owner':
                sig = rng.choice([signal.SIGTERM, signal.SIGKILL])
            rec.update(target='learner' if to_learner else 'owner-%d' % j,
                       signal=signal.Signals(sig).name)
            if kind in ('owner-time', 'learner-time'):
                delay = rng.uniform(0.0, 0.2)
                rec['delay'] = round(delay, 4)
                time.sleep(delay)
            else:
                # The new kinds stop a process after a uniform number of
                # applied answers (a random moment lands mostly in the
                # handshakes): 0 .. 3 (T - 1) - 1 in sync, 0 .. T - 1.
                n_at = rng.randint(0, 3 * (T - 1) - 1 if 'mode' in rec else T - 1)
                rec['at_rows'] = n_at
                end = time.time() + 30
                while (time.time() < end and c.learner.poll() is None and
                       len(c.trace_rows()) < n_at):
                    time.sleep(0.002)
            p = c.learner if to_learner else owners[j]
            if p.poll() is None:
                p.send_signal(sig)
                p.wait()
                rec['landed'] = True
        else:
            # Wait for the shim's kill, or for the job to end without it.
            p = c.learner if rec['target'] == 'learner' else owners[j]
            wait_target(c, p, timeout=30, after=5)
            rec['landed'] = killed(p)
        rec['rows_at_kill'] = len(c.trace_rows())
        stopped = p if rec['landed'] else None
        if rec['landed']:
            time.sleep(rng.uniform(0.0, 0.1))
            if rec['target'] == 'learner':
                c.start_learner(flags, resume=True)
            elif c.learner.poll() is None:
                owners[j] = c.start_owner(j, rate=RATE, extra=oextra.get(j, ()))
        out = c.wait_learner(timeout=60)
        sync = 'mode' in rec
        done = T - 1 if sync else T
        check('done k=%d' % done in out, 'learnerd did not report done k=%d: %r' % (done, out))
        for i, p in owners.items():
            # An owner signalled and not restarted (the job had ended)
            # exits as the signal made it.
            rc = wait_owner(p)
            check(rc == 0 or (rec['landed'] and p is stopped),
                  'owner-%d exited %s' % (i, rc))
        inv = check_invariants(c, complete=not sync)
        if sync:
            rounds = [l.split(',')[0] for l in
                      open(c.path('learner', 'rounds.csv')).read().splitlines()[1:]]
            check(rounds == [str(k) for k in range(1, T)],
                  'rounds.csv is not rounds 1..%d: %r' % (T - 1, rounds[:50]))
        if kind == 'spent':
            info = json.loads(subprocess.run([c.dp, 'ledger', c.ledger(int(
                rec['spent_owner'][6:]))], capture_output=True, text=True, check=True).stdout)
            rec['lifetime_spent'] = info['lifetime_epsilon_spent']
            check(info['lifetime_epsilon_spent'] <= 1 + 1e-9, '%s: spent %r over its lifetime '
                  'cap 1' % (rec['spent_owner'], info['lifetime_epsilon_spent']))
        rec['answers'] = {k: v[0] for k, v in inv.items()}
        return rec
    except Fail as e:
        rec['error'] = str(e)
        inv = classify(rec['error'])
        if inv:
            rec[inv] = 1
        return rec
    finally:
        c.close()
        counters(c, rec, before)

def campaign(bindir, shim, trials, seed, keep=False):
    # SIGINT ends the campaign after the running trial, and the trials done
    # are reported (a long run cut short keeps its figures).
    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    d = tmpdir('chaos')
    rng = random.Random(seed)
    recs = []
    cache = {}
    t0 = time.time()
    try:
        shared = Cluster(bindir, os.path.join(d, 'shared'), owners=OWNERS, rows=200, features=4).d
        for n in range(trials):
            if stop:
                print('stopped by SIGINT after %d trials' % n)
                break
            tdir = os.path.join(d, 't%d' % n)
            t = time.time()
            rec = trial(bindir, shim, shared, tdir, rng, n, cache)
            rec['seconds'] = round(time.time() - t, 3)
            recs.append(rec)
            if 'error' in rec or any(rec.get(k) for k in COUNTED):
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

COUNTED = ('overspend', 'unsynced', 'spent_no_model', 'refusals')

def report(recs, secs, seed):
    by = {}
    for r in recs:
        s = by.setdefault(r['kind'], {'trials': 0, 'landed': 0, 'failed': 0, 'seconds': 0})
        s['trials'] += 1
        s['seconds'] = round(s['seconds'] + r['seconds'], 1)
        s['landed'] += r['landed']
        s['failed'] += 'error' in r or any(r.get(k) for k in COUNTED)
    inv = {k: sum(r.get(k, 0) for r in recs) for k in COUNTED}
    bad = [r for r in recs if 'error' in r or any(r.get(k) for k in COUNTED)]
    return {'seed': seed, 'trials': len(recs), 'seconds': round(secs, 1),
            'load': [round(x, 2) for x in os.getloadavg()],
            'landed': sum(r['landed'] for r in recs),
            'failed': len(bad), 'invariants': inv, 'by_kind': by,
            'failures': bad}

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
    print('invariants over %d trials: %d overspends, %d unsynced answers, %d "eps spent with '
          'no model", %d refusals by admitted owners' % ((rep['trials'],) + tuple(
              rep['invariants'][k] for k in COUNTED)))
    check_ok = rep['failed'] == 0
    print('PASS' if check_ok else 'FAIL: %d of %d trials broke an invariant (seed %d)'
          % (rep['failed'], rep['trials'], seed))
    sys.exit(0 if check_ok else 1)

main()
