#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance (real learnerd + 3 ownerd on loopback, mutual TLS):
- request mode and broadcast mode, T = 300: the job completes, every owner
  gets Done and saves the final model, and psi of the networked model lies in
  the range the simulator gives for the same settings -- those learnerd
  planned and used (T, eta, clip, K_i, read from its checkpoint and passed to
  `dpasync sim` explicitly) -- (between half the
  smallest and twice the largest psi of 30 simulated runs: psi is a scaled
  chi-square-like variable with p = 6 degrees of freedom, for which falling
  outside that band has probability well below 1e-4);
- parity: with epsilon = inf, feeding learnerd's trace (owner per iteration)
  to `dpasync sim --schedule` reproduces the networked theta_L to 1e-12, also
  with --freq-correction (Remark 4) and one owner ticking 5x faster, and
  with caps that bind: owner-1 keeps its own cap of 40 answers, far below
  its share, so it drops out mid-job and the others finish T; the trace
  holds exactly 40 of its answers, and `sim --schedule` with the same caps
  reproduces theta_L to 1e-12;
- sync parity: `learnerd --mode sync1|sync2` (T = 60 rounds, epsilon = inf)
  ends with the model `dpasync sim --mode sync1|sync2` computes with the
  same plan (T, step, clip) to 1e-12; the trace holds N (T - 1) answers,
  each owner T - 1 of them, and rounds.csv one row per round with N answers."""
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, run, tmpdir, cleanup, summary, main
from cluster import Cluster
import numpy as np

T = 300

def no_refusals(c):
    """No admitted owner refused a query: learnerd plans on what each has
    left and never sends one it would refuse (docs/learnerd.md §3 "Caps")."""
    refused = [l for l in open(c.path('learnerd.log')).read().splitlines() if ' refused k=' in l]
    check(not refused, 'an owner refused a query: %r' % refused[:3])

def job(bindir, d, mode, eps, extra=(), rates=('50', '50', '50'), owner_extra=((), (), ())):
    c = Cluster(bindir, d, owners=3, rows=2000, features=5, T=T)
    try:
        extra = ['--mode', mode] + (['--broadcast-interval', '0.005'] if mode == 'broadcast' else []) \
            + list(extra)
        c.start_learner(extra)
        owners = [c.start_owner(i, eps=eps, rate=rates[i - 1], extra=owner_extra[i - 1])
                  for i in (1, 2, 3)]
        out = c.wait_learner()
        check('done k=%d' % T in out, 'learnerd did not report done: %r' % out)
        no_refusals(c)
        rows = c.trace_rows()
        check([int(r[0]) for r in rows] == list(range(1, T + 1)), 'trace is not k = 1..T')
        model = json.load(open(c.path('learner', 'model.json')))
        used = c.settings()
        check(used['T'] == T and model['T'] == T and model['clip_l1'] == used['clip'],
              'model.json %r and checkpoint %r disagree' % (model, used))
        for i, p in enumerate(owners, 1):
            check(p.wait(timeout=30) == 0, 'ownerd %d exited %s' % (i, p.returncode))
            got = json.load(open(c.path('owner-%d' % i, 'ledger.model.json')))
            check(got['theta'] == model['theta'], 'owner %d saved a different model' % i)
        return c, rows, model, used
    finally:
        c.close()

def sync_parity(bindir, d, mode):
    Ts = 60
    c = Cluster(bindir, d, owners=3, rows=2000, features=5, T=Ts)
    try:
        c.start_learner(['--mode', mode, '--round-timeout', '60'])
        owners = [c.start_owner(i, eps='inf', rate='50') for i in (1, 2, 3)]
        out = c.wait_learner()
        check('done k=%d' % (Ts - 1) in out, '%s: learnerd did not report done: %r' % (mode, out))
        no_refusals(c)
        for i, p in enumerate(owners, 1):
            check(p.wait(timeout=30) == 0, 'ownerd %d exited %s' % (i, p.returncode))
        rows = c.trace_rows()
        check([int(r[0]) for r in rows] == list(range(1, 3 * (Ts - 1) + 1)),
              '%s: trace is not k = 1..N(T-1)' % mode)
        for n in c.names:
            check(sum(1 for r in rows if r[2] == n) == Ts - 1, '%s: %s did not answer T-1 times'
                  % (mode, n))
        rounds = open(c.path('learner', 'rounds.csv')).read().splitlines()
        check(rounds[0].startswith('round,') and len(rounds) == Ts,
              '%s: rounds.csv has %d lines' % (mode, len(rounds)))
        check(all(l.split(',')[3] == '3' for l in rounds[1:]), '%s: a round without 3 answers' % mode)
        model = json.load(open(c.path('learner', 'model.json')))
        check(model['mode'] == mode, 'model.json mode %r' % model['mode'])
        err, n, big = c.sync_sim_error(mode, os.path.join(d, 'sim'))
        print('%s parity: max relative difference %.3g over %d coordinates, |theta| %.3g'
              % (mode, err, n, big))
        check(err <= 1e-12, '%s: networked model differs from sim by %.3g' % (mode, err))
    finally:
        c.close()

def psi_of(c, bindir):
    files = [c.data(i) for i in (1, 2, 3)]
    e = json.loads(run([os.path.join(bindir, 'tools', 'dpasync'), 'eval',
                        c.path('learner', 'model.json')] + files).stdout)
    return e['psi']

def test(argv):
    bindir = argv[0]
    dp = os.path.join(bindir, 'tools', 'dpasync')
    d = tmpdir('e2e-modes')
    try:
        for mode in ('sync1', 'sync2'):
            sync_parity(bindir, os.path.join(d, mode), mode)
        sims = {}
        for mode in ('request', 'broadcast'):
            c, rows, model, used = job(bindir, os.path.join(d, mode), mode, '1')
            # The simulator gets exactly what learnerd planned and used.
            flags = c.sim_flags()
            if tuple(flags) not in sims:
                sim_out = os.path.join(d, 'sim-%d' % len(sims))
                run([dp, 'sim', '--target', 'y', '--bias', '--epsilon', '1', '--repeats', '30', '--seed', '4',
                     '--psi-every', str(T), '--out', sim_out] + flags
                    + [c.data(i) for i in (1, 2, 3)])
                sims[tuple(flags)] = summary(sim_out)['psi']
            sim_psi = sims[tuple(flags)]
            psi = psi_of(c, bindir)
            lo, hi = min(sim_psi) / 2, max(sim_psi) * 2
            print('%s mode: psi %.4g; simulator %.4g .. %.4g (median %.4g); planned psi %.4g, '
                  'psi of theta = 0 %.4g; %s' % (mode, psi, min(sim_psi), max(sim_psi),
                                              sorted(sim_psi)[15], used['psi'],
                                              used['psi_zero'], ' '.join(flags)))
            check(lo <= psi <= hi, '%s: psi %.4g outside [%.4g, %.4g]' % (mode, psi, lo, hi))
            if mode == 'request':
                waits = [float(r[3]) for r in rows]
                check(any(w > 0 for w in waits), 'request mode: no request ever waited')
        # Parity with the simulator, noise-free; then with the frequency
        # correction of Remark 4 and owner-1's clock 5x faster.
        K1 = 40
        for tag, lflags, rates, oextra in (
                ('parity', [], ('50', '50', '50'), ((), (), ())),
                ('parity-freq', ['--freq-correction'], ('150', '30', '30'), ((), (), ())),
                ('parity-caps', [], ('50', '50', '50'), (('--answers-cap', str(K1)), (), ()))):
            pd = os.path.join(d, tag)
            c, rows, model, used = job(bindir, pd, 'request', 'inf', lflags, rates, oextra)
            sched = os.path.join(pd, 'schedule.txt')
            with open(sched, 'w') as f:
                f.write(''.join(r[2].split('-')[1] + '\n' for r in rows))
            out = os.path.join(pd, 'sim')
            # No noise: the caps only bound the schedule, which learnerd's
            # trace obeys; sim gets every owner's cap as learnerd had it, so a
            # schedule past one would be refused.
            flags = c.sim_flags(max(used['K']))
            flags[flags.index('--answers-cap') + 1] = ','.join(str(k) for k in used['K'])
            run([dp, 'sim', '--target', 'y', '--bias', '--epsilon', 'inf', '--repeats', '1',
                 '--schedule', sched, '--out', out] + flags + lflags
                + [c.data(i) for i in (1, 2, 3)])
            if tag == 'parity-caps':
                n1 = sum(1 for r in rows if r[2] == 'owner-1')
                check(used['K'][0] == K1 and n1 == K1,
                      'owner-1 (own cap %d) answered %d times; caps %r' % (K1, n1, used['K']))
                check(summary(out)['answers'][0] == K1,
                      'sim counted %r answers' % summary(out)['answers'])
            want = np.array(summary(out)['theta'])
            got = np.array(model['theta'])
            err = np.abs(got - want).max() / np.abs(want).max()
            share = sum(1 for r in rows if r[2] == 'owner-1') / len(rows)
            print('%s: max relative difference %.3g over %d coordinates (owner-1 share %.2f)'
                  % (tag, err, len(got), share))
            check(err <= 1e-12, '%s: networked theta_L differs from sim --schedule by %.3g' % (tag, err))
    finally:
        cleanup(d)

main(test)
