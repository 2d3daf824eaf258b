#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Answer time over TLS for a benign and an adversarial theta (docs/privacy.md §7).

Usage: answer_time.py OWNERD DPASYNC [ROUNDS]

A real ownerd on 50,000 rows x 10 features (ledger on /dev/shm, so that
fdatasync costs little), a learner written in Python as in
tests/integration/daemons/ownerd.py (TLS 1.3, mutual authentication), ROUNDS
(default 301) rounds of one Query with theta = 0 and one with every
coordinate DBL_MAX/2, in alternating order; prints the median round trip,
Query sent to Answer received, of each.  ownerd runs with --theta-max inf
when it has the option, so that the adversarial theta reaches the kernel;
OWNERD may be an older build, for a before/after comparison.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'integration', 'daemons'))
import ownerd as fake  # noqa: E402  (the fake learner of the integration test)


def main(ownerd, dpasync, rounds):
    work = tempfile.mkdtemp(prefix='dp-answer-time-',
                            dir='/dev/shm' if os.path.isdir('/dev/shm') else None)
    o = None
    try:
        certs = os.path.join(work, 'certs')
        subprocess.run([dpasync, 'certs', '--out', certs, '--owners', '1'], check=True,
                       capture_output=True)
        rng = np.random.default_rng(5)
        n, d = 50000, 9
        X = rng.normal(size=(n, d))
        y = X @ rng.normal(size=d) + rng.normal(size=n)
        data = os.path.join(work, 'owner.csv')
        with open(data, 'w') as f:
            f.write(','.join('x%d' % i for i in range(d)) + ',y\n')
            for i in range(n):
                f.write(','.join('%.6g' % v for v in X[i]) + ',%.6g\n' % y[i])
        p = d + 1   # with --bias
        fl = fake.FakeLearner(certs)
        args = ['--learner', '127.0.0.1:%d' % fl.port, '--ca', os.path.join(certs, 'ca.crt'),
                '--cert', os.path.join(certs, 'owner-1.crt'),
                '--key', os.path.join(certs, 'owner-1.key'), '--data', data, '--bias',
                '--ledger', os.path.join(work, 'ledger'), '--epsilon', '1000',
                '--answers-cap', str(2 * rounds + 10), '--rate', '0.001', '--log-level', 'warn']
        helptext = subprocess.run([ownerd, '--help'], capture_output=True, text=True).stdout
        if '--theta-max' in helptext:
            args += ['--theta-max', 'inf']
        o = fake.Owner(ownerd, args, os.path.join(work, 'ownerd.log'))
        c = fl.accept()
        c.expect('hello')
        fake.welcome(c, p, T=2 * rounds + 10, clip=1.0)
        thetas = {'benign': [0.0] * p, 'adversarial': [sys.float_info.max / 2] * p}
        secs = {h: [] for h in thetas}
        k = 1
        for i in range(rounds):
            for h in (('benign', 'adversarial') if i % 2 == 0 else ('adversarial', 'benign')):
                t0 = time.perf_counter()
                c.send('query', k=k, theta=thetas[h])
                c.expect('answer')
                secs[h].append(time.perf_counter() - t0)
                k += 1
        for h in thetas:
            print('%-11s median round trip %6.0f us over %d queries' % (
                h, 1e6 * float(np.median(secs[h])), rounds))
        c.close()
        return 0
    finally:
        if o is not None:
            o.kill(signal.SIGTERM)
            o.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 301))
