#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance (docs/protocol.md §6 "Admission"): a storm of 10,000 owner
connections from one address completes its job with learnerd's default
flags.

One bench_owner_stub process (tests/bench/bench_owner_stub.c: one libuv
loop, 10,000 mutual-TLS owner connections owner-1 .. owner-10000, the real
protocol, answers at once, no data or ledger) connects all of them from
127.0.0.1 to a learnerd configured for those 10,000 owners and nothing but
the defaults of the flood guard (max-pending, max-pending-per-addr,
handshake-timeout).  It starts them 100 per turn of its loop
(--connect-chunk 100), so all are under way within seconds while the stub
still answers each handshake it has begun, as 10,000 separate owners
would; started all before its loop runs, on a loaded machine its first
handshakes waited more than the 30 s handshake timeout on the stub itself
(it wrote every ClientHello before reading any answer).  The stub never
reconnects: a connection evicted, refused or timed out is an owner that
never joins, and the job, which starts only when all N have said Hello,
never starts.
Checked:
- learnerd completes T iterations and exits 0, within STORM_LIMIT;
- the stub exits 0: every one of its 10,000 connections received Done;
- learnerd logged no eviction and no refusal.

With the former defaults (64 pending, 16 per address, 3 s from accept to
the end of the handshake) 16 of the 10,000 were admitted after 10 minutes
and the job never started (issue 22, finding 11).

Needs 10,000 descriptors for the stub (and learnerd as many): skipped
(exit 77) when the hard RLIMIT_NOFILE is below that.  The certificates go
to /dev/shm when it exists (10,000 key pairs; no fsync cost there).
Times are printed: the storm (stub started to training), the job, the
whole test."""
import os, re, resource, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, run, cleanup, main

OWNERS = int(os.environ.get('E2E_STORM_OWNERS', '10000'))
T = 1000              # K_i = 1 for each owner: the storm, not the training, is the test
STORM_LIMIT = 420.0   # seconds from starting the stub to learnerd's exit


def test(argv):
    bindir, stub = argv[0], argv[1]
    dp = os.path.join(bindir, 'tools', 'dpasync')
    learnerd = os.path.join(bindir, 'learner', 'learnerd')
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = OWNERS + 200
    if hard != resource.RLIM_INFINITY and hard < need:
        print('SKIP: the hard limit on open files is %d; %d connections need %d'
              % (hard, OWNERS, need))
        sys.exit(77)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    t_all = time.monotonic()
    base = '/dev/shm' if os.path.isdir('/dev/shm') and os.access('/dev/shm', os.W_OK) else None
    d = tempfile.mkdtemp(prefix='dp-e2e-storm-', dir=base)
    lp = sp = None
    try:
        certs = os.path.join(d, 'certs')
        t0 = time.monotonic()
        run([dp, 'certs', '--out', certs, '--owners', str(OWNERS)])
        t_certs = time.monotonic() - t0
        pf = os.path.join(d, 'ports')
        llog = open(os.path.join(d, 'learnerd.log'), 'w')
        lp = subprocess.Popen(
            [learnerd, '--listen', '127.0.0.1:0', '--port-file', pf,
             '--ca', certs + '/ca.crt', '--cert', certs + '/learner.crt',
             '--key', certs + '/learner.key',
             '--owners', ','.join('owner-%d' % i for i in range(1, OWNERS + 1)),
             '--T', str(T), '--bias', '--out', os.path.join(d, 'learner')],
            stdout=subprocess.PIPE, stderr=llog, text=True)
        end = time.monotonic() + 30
        while not os.path.exists(pf):
            check(lp.poll() is None, 'learnerd exited at start:\n' +
                  open(os.path.join(d, 'learnerd.log')).read()[-2000:])
            check(time.monotonic() < end, 'learnerd did not write its port file')
            time.sleep(0.05)
        time.sleep(0.05)
        port = int(dict(l.split('=') for l in open(pf).read().split())['tls'])
        slog = open(os.path.join(d, 'stub.log'), 'w')
        t0 = time.monotonic()
        sp = subprocess.Popen(
            [stub, '--learner', '127.0.0.1:%d' % port, '--ca', certs + '/ca.crt',
             '--certs', certs, '--owners', str(OWNERS), '--p', '11', '--rows', '50',
             '--connect-chunk', '100'],
            stdout=subprocess.DEVNULL, stderr=slog)
        t_storm = None
        while lp.poll() is None and time.monotonic() - t0 < STORM_LIMIT:
            # learnerd says "training starts" once all N have said Hello.
            if t_storm is None and 'training starts' in open(os.path.join(d, 'learnerd.log')).read():
                t_storm = time.monotonic() - t0
            time.sleep(0.5)
        try:
            out, _ = lp.communicate(timeout=1)
        except subprocess.TimeoutExpired:
            text = open(os.path.join(d, 'learnerd.log')).read()
            reasons = {}
            for m in re.finditer(r'handshake failed peer=\S+ reason="([^"]*)"', text):
                r = re.sub(r'127\.0\.0\.1:\d+', 'PEER', m.group(1))
                reasons[r] = reasons.get(r, 0) + 1
            raise Fail('learnerd did not finish within %.0f s of the storm: %d of %d owners '
                       'said Hello; %d "evicting" and %d "refusing" lines in its log; '
                       'handshakes failed: %s; the stub says: %s'
                       % (STORM_LIMIT, text.count('hello id='), OWNERS,
                          text.count('evicting the oldest'), text.count('refusing a connection'),
                          reasons, open(os.path.join(d, 'stub.log')).read()[-300:]))
        t_job = time.monotonic() - t0
        text = open(os.path.join(d, 'learnerd.log')).read()
        check(lp.returncode == 0 and 'done k=%d' % T in out,
              'learnerd exited %d: %s' % (lp.returncode, text[-2000:]))
        check(sp.wait(timeout=60) == 0, 'the stub exited %d: %s'
              % (sp.returncode, open(os.path.join(d, 'stub.log')).read()[-1000:]))
        check('evicting the oldest' not in text and 'refusing a connection' not in text,
              'learnerd cut connections of the storm: %s'
              % [l for l in text.splitlines() if 'evicting' in l or 'refusing' in l][:3])
        print('%d connections from 127.0.0.1 with the default flood guard: all admitted, '
              'none evicted or refused, training from %s s and the job of T=%d done %.1f s '
              'after the stub started (certificates %.1f s, whole test %.1f s)'
              % (OWNERS, '%.1f' % t_storm if t_storm else '?', T, t_job, t_certs,
                 time.monotonic() - t_all))
    finally:
        for p in (sp, lp):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        cleanup(d)

main(test)
