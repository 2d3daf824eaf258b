# SPDX-License-Identifier: Apache-2.0
"""Small helpers shared by the integration tests (stdlib + numpy only)."""
import csv, json, os, shutil, subprocess, sys, tempfile

class Fail(Exception):
    pass

def load_xy(path, target, bias):
    """An owner CSV as numpy (X, y): every column but target as a feature,
    in file order, then a column of ones when bias (docs/design.md §2)."""
    import numpy as np
    with open(path, newline='') as f:
        rows = list(csv.reader(f))
    head, body = rows[0], rows[1:]
    t = head.index(target)
    X = np.array([[float(v) for j, v in enumerate(r) if j != t] for r in body])
    y = np.array([float(r[t]) for r in body])
    if bias:
        X = np.hstack([X, np.ones((X.shape[0], 1))])
    return X, y

def check(cond, msg):
    if not cond:
        raise Fail(msg)

def run(cmd, ok=True, timeout=600):
    """Run a command; with ok=True a non-zero exit fails the test."""
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    if ok and p.returncode != 0:
        raise Fail('command failed (%d): %s\n%s%s' % (p.returncode, ' '.join(map(str, cmd)),
                                                     p.stdout, p.stderr))
    return p

def self_signed(d):
    """A TLS server context (ssl module) with a self-signed certificate for
    the name 'learner', made in d with the openssl CLI: everything right
    but its issuer, as whoever takes the learner's address can make."""
    import ssl
    crt, key = os.path.join(d, 'self.crt'), os.path.join(d, 'self.key')
    run(['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256',
         '-nodes', '-keyout', key, '-out', crt, '-days', '2', '-subj', '/CN=learner',
         '-addext', 'subjectAltName=DNS:learner'])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(crt, key)
    return ctx

def tmpdir(name):
    d = tempfile.mkdtemp(prefix='dp-%s-' % name)
    return d

def cleanup(d, ok=True):
    """Remove the work directory d; a failed test's (ok false) is kept and
    named, for the post-mortem."""
    if ok:
        shutil.rmtree(d, ignore_errors=True)
    else:
        print('work directory kept:', d)

def summary(outdir):
    with open(os.path.join(outdir, 'summary.json')) as f:
        return json.load(f)

def write_schedule(path, T, N, seed):
    """A --schedule file: T owners (1-based) drawn uniformly from N with
    the given seed."""
    import random
    rnd = random.Random(seed)
    with open(path, 'w') as f:
        f.write(''.join('%d\n' % rnd.randint(1, N) for _ in range(T)))

def parity_flags(T):
    """The settings of the sim/numpy parity tests: clip 0.5 is below most
    per-example gradient norms of `dpasync gen`'s data, so clipping is
    active; with --bias."""
    return ['--rho', '2000', '--lambda', '0.05', '--theta-max', '0.3', '--clip', '0.5',
            '--T', str(T), '--bias']

def main(fn):
    """Run test function fn(argv) and exit 0/1 with one line of verdict."""
    try:
        fn(sys.argv[1:])
    except Fail as e:
        print('FAIL:', e)
        sys.exit(1)
    print('PASS')
    sys.exit(0)
