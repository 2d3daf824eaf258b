#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The I/O-fault campaign (docs/reliability.md §3): a short real job
(learnerd + 3 ownerd on loopback) is run once with the fault shim counting
the file operations of one daemon (tests/lib/iofault.c: write,
pwrite, fdatasync, fsync, rename, link, ftruncate, open for writing,
fflush of a stream, on regular files only), then once per call index with
that call failing (EIO or ENOSPC; once, or from that call on: a disk that
stays broken).  For every run:
- the daemon either carries on and the job completes, or it exits 1 with
  exactly one error line, which names the failure (the errno's text);
- the invariants of tests/lib/cluster.py check_invariants hold on
  the files it left (no answer applied without a synced ledger record, no
  ledger past its caps, no query id answered twice);
- restarted without the shim (learnerd with --resume, ownerd on the same
  ledger), it loads its checkpoint or ledger and the job reaches T with the
  invariants intact.

    iofault_sweep.py BUILDDIR SHIM [--daemon learner|owner|both] [--errno EIO,ENOSPC]
                     [--modes once,sticky] [--calls KINDS] [--every N] [--bounded [--sanitized]]
                     [--json FILE]

--calls counts (and fails) only those kinds; --every N sweeps every N-th
index only; --bounded runs the subset of the test command (BOUNDED below),
--sanitized with it every other index of those sweeps (the ASan build's).
Exit 0 when every run holds."""
import argparse, json, os, re, signal, subprocess, sys, time
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'lib'))
from harness import Fail, check, tmpdir, cleanup
from cluster import Cluster, check_invariants, wait_target
from cluster import SHORT_T as T, SHORT_OWNERS as OWNERS, SHORT_RATE as RATE
from cluster import SHORT_LEARNER_FLAGS as LEARNER_FLAGS

TEXT = {'EIO': 'Input/output error', 'ENOSPC': 'No space left on device'}

# The test command's subset: (daemon, errno, mode, calls, every).  The
# fflush sweep of learnerd is the regression test of the one violation the
# full sweep found (a failed trace row, then a final checkpoint that counted
# it: the resumed trace had a gap; docs/reliability.md §4).
BOUNDED = [
    ('owner', 'EIO', 'once', 'all', 3),
    ('owner', 'ENOSPC', 'sticky', 'all', 5),
    ('learner', 'EIO', 'once', 'fflush', 6),
    ('learner', 'ENOSPC', 'sticky', 'all', 9),
    ('learner', 'EIO', 'once', 'fsync,rename,write,open', 4),
]

def shim_env(shim, at, err, sticky, log=None, calls='all'):
    e = dict(os.environ, LD_PRELOAD=shim, DP_FAULT_AT=str(at), DP_FAULT_ERRNO=err,
             DP_FAULT_STICKY='1' if sticky else '0', DP_FAULT_CALLS=calls)
    if log:
        e['DP_FAULT_LOG'] = log
    return e

def error_lines(text):
    return [l for l in text.splitlines() if ' error ' in l or re.match(r'^\S+: ', l)]

def run_one(bindir, shared, d, daemon, shim_e):
    """One job with the shim in `daemon` (learner or owner-1).  Returns the
    outcome record; raises Fail on a broken invariant."""
    c = Cluster(bindir, d, owners=OWNERS, T=T, shared=shared)
    rec = {}
    try:
        lenv = shim_e if daemon == 'learner' else None
        try:
            c.start_learner(LEARNER_FLAGS, env=lenv)
        except Fail:
            # Failed before its port file: a startup error, one line.
            rc = c.learner.wait()
            log = open(c.path('learnerd.log')).read()
            rec.update(outcome='stopped', phase='start', exit=rc, lines=error_lines(log))
            c.port = getattr(c, 'port', 0)   # no port yet: any
            c.start_learner(LEARNER_FLAGS, resume=True)
        owners = {}
        for i in range(1, OWNERS + 1):
            env = shim_e if (daemon == 'owner' and i == 1) else None
            owners[i] = c.start_owner(i, rate=RATE, env=env)
        target = c.learner if daemon == 'learner' else owners[1]
        wait_target(c, target)
        rc = target.poll()
        if 'outcome' not in rec:
            if rc is None or rc == 0:
                rec.update(outcome='continued')
            else:
                log = open(c.path('learnerd.log') if daemon == 'learner'
                           else c.ledger(1) + '.log').read()
                rec.update(outcome='stopped', phase='run', exit=rc, lines=error_lines(log))
        if rec['outcome'] == 'stopped':
            check(rec['exit'] == 1, '%s exited %s (expected 1)' % (daemon, rec['exit']))
            # The files as the failed daemon left them: nothing applied
            # without a record, nothing past a cap.
            if daemon == 'owner':
                check_invariants(c, complete=False, settled=False)
            # Restart without the shim: it must load its state and finish.
            if daemon == 'learner' and rec['phase'] == 'run':
                c.start_learner(LEARNER_FLAGS, resume=True)
            elif daemon == 'owner' and c.learner.poll() is None:
                owners[1] = c.start_owner(1, rate=RATE)
        out = c.wait_learner(timeout=90)
        check('done k=%d' % T in out, 'learnerd did not report done: %r' % out)
        for i, p in owners.items():
            try:
                orc = p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGTERM)
                orc = p.wait(timeout=10)
            if not (daemon == 'owner' and i == 1 and rec['outcome'] == 'stopped' and p is target):
                check(orc == 0, 'owner-%d exited %s' % (i, orc))
        check_invariants(c)
        return rec
    finally:
        c.close()

def count_calls(bindir, shim, shared, d, daemon, kinds):
    log = os.path.join(d, 'calls.log')
    os.makedirs(d, exist_ok=True)
    e = dict(os.environ, LD_PRELOAD=shim, DP_FAULT_LOG=log, DP_FAULT_CALLS=kinds)
    run_one(bindir, shared, os.path.join(d, 'job'), daemon, e)
    calls = [l.split()[1] for l in open(log).read().splitlines()]
    return calls

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('bindir')
    ap.add_argument('shim')
    ap.add_argument('--daemon', default='both')
    ap.add_argument('--errno', default='EIO,ENOSPC')
    ap.add_argument('--modes', default='once,sticky')
    ap.add_argument('--every', type=int, default=1)
    ap.add_argument('--calls', default='all')
    ap.add_argument('--bounded', action='store_true')
    ap.add_argument('--sanitized', action='store_true',
                    help='with --bounded: every other index of its sweeps (a sanitizer '
                    'build runs the daemons 3-5 times slower)')
    ap.add_argument('--json')
    a = ap.parse_args()
    shim = os.path.abspath(a.shim)
    if a.bounded:
        plans = [(dm, err, mode, calls, every * (2 if a.sanitized else 1))
                 for dm, err, mode, calls, every in BOUNDED]
    else:
        daemons = ['learner', 'owner'] if a.daemon == 'both' else [a.daemon]
        plans = [(dm, err, mode, a.calls, a.every) for dm in daemons
                 for err in a.errno.split(',') for mode in a.modes.split(',')]
    d = tmpdir('iofault')
    t0 = time.time()
    results, failures, keep, counts = [], [], False, {}
    try:
        shared = Cluster(a.bindir, os.path.join(d, 'shared'), owners=OWNERS, rows=200,
                         features=4).d
        for daemon, err, mode, kinds, every in plans:
            if (daemon, kinds) not in counts:
                calls = count_calls(a.bindir, shim, shared, os.path.join(
                    d, 'count-%s-%d' % (daemon, len(counts))), daemon, kinds)
                counts[(daemon, kinds)] = calls
                print('%s (%s): %d counted calls in a clean job (%s)' % (
                    daemon, kinds, len(calls), ', '.join(
                        '%s %d' % (k, calls.count(k)) for k in sorted(set(calls)))))
            calls = counts[(daemon, kinds)]
            for at in range(1, len(calls) + 1, every):
                run_d = os.path.join(d, '%s-%s-%s-%s-%d' % (daemon, err, mode,
                                                            kinds.replace(',', '+'), at))
                os.makedirs(run_d)
                flog = os.path.join(run_d, 'calls.log')
                e = shim_env(shim, at, err, mode == 'sticky', flog, kinds)
                r = {'daemon': daemon, 'errno': err, 'mode': mode, 'calls': kinds, 'at': at}
                try:
                    r.update(run_one(a.bindir, shared, run_d, daemon, e))
                    hits = [l.split()[1] for l in open(flog).read().splitlines()
                            if l.endswith(' fault')]
                    # The call actually failed (indices shift a little
                    # between runs), none when the job made fewer calls.
                    r['call'] = hits[0] if hits else None
                    r['faults'] = len(hits)
                    if r['outcome'] == 'stopped':
                        check(len(r['lines']) == 1 and TEXT[err] in r['lines'][0],
                              'not one error line naming %s: %r' % (TEXT[err], r['lines']))
                    cleanup(run_d)
                except Fail as ex:
                    r['error'] = str(ex)
                    failures.append(r)
                    keep = True
                    print('FAILED:', json.dumps(r))
                results.append(r)
    finally:
        print('kept' if keep else 'removed', d)
        if not keep:
            cleanup(d)
    summary = {}
    for r in results:
        key = '%s %s %s %s' % (r['daemon'], r['errno'], r['mode'], r['calls'])
        s = summary.setdefault(key, {'runs': 0, 'continued': 0, 'stopped': 0, 'failed': 0})
        s['runs'] += 1
        s['failed'] += 'error' in r
        if r.get('outcome'):
            s[r['outcome']] += 1
    rep = {'seconds': round(time.time() - t0, 1), 'runs': len(results), 'failed': len(failures),
           'summary': summary, 'failures': failures}
    print(json.dumps(rep, indent=1))
    if a.json:
        json.dump(dict(rep, results=results), open(a.json, 'w'), indent=1)
    print('PASS' if not failures else 'FAIL: %d runs broke an invariant' % len(failures))
    sys.exit(0 if not failures else 1)

main()
