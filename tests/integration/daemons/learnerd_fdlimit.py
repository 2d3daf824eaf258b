# SPDX-License-Identifier: Apache-2.0
"""learnerd raises RLIMIT_NOFILE to what the job needs (docs/learnerd.md
"Descriptors").

usage: learnerd_fdlimit.py LEARNERD DPASYNC

Each learnerd starts with a soft limit of 64 open files (set in the child
before exec) and a hard limit chosen per case; no owner connects.
  A  hard 20000, 500 owners, metrics on: need = (64 + 2*500 + 4) + (64 + 1)
     + 32 = 1165; /proc/PID/limits shows soft 1165, hard 20000, and the log
     says it was raised;
  B  hard 200, 60 owners, metrics on: need 285, at least 92: the soft limit
     goes to 200 and one WARN line gives the numbers;
  C  hard 100, 200 owners: below the 232 that one descriptor per owner
     needs: exit 2 with one line on stderr naming the limit.
"""
import os, re, resource, shutil, signal, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check

LEARNERD, DPASYNC = sys.argv[1:3]


def limits(soft, hard):
    def pre():
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return pre


def cmd(work, certs, n, name):
    owners = ','.join('owner-%d' % i for i in range(1, n + 1))
    return [LEARNERD, '--listen', '127.0.0.1:0', '--port-file', os.path.join(work, name + '.port'),
            '--ca', certs + '/ca.crt', '--cert', certs + '/learner.crt',
            '--key', certs + '/learner.key', '--owners', owners,
            '--metrics-listen', '127.0.0.1:0', '--out', os.path.join(work, name),
            '--log-level', 'info']


def nofile(pid):
    with open('/proc/%d/limits' % pid) as f:
        for line in f:
            if line.startswith('Max open files'):
                v = line.split()
                return int(v[3]), int(v[4])
    raise Fail('no "Max open files" in /proc/%d/limits' % pid)


def started(work, certs, n, hard, name):
    """Start learnerd with soft 64 / the given hard limit; wait until it
    listens; return (its limits, its log), after stopping it."""
    errf = os.path.join(work, name + '.err')
    pf = os.path.join(work, name + '.port')
    with open(errf, 'w') as ef:
        p = subprocess.Popen(cmd(work, certs, n, name), stdout=subprocess.DEVNULL, stderr=ef,
                             preexec_fn=limits(64, hard))
    try:
        end = time.time() + 20
        while not (os.path.exists(pf) and 'tls=' in open(pf).read()):
            check(p.poll() is None, 'learnerd exited early (%s): %s' % (
                p.returncode, open(errf).read()))
            check(time.time() < end, 'learnerd did not listen within 20 s')
            time.sleep(0.05)
        lim = nofile(p.pid)
        p.send_signal(signal.SIGTERM)
        rc = p.wait(20)
        check(rc == 0, 'learnerd exit %d after SIGTERM: %s' % (rc, open(errf).read()))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return lim, open(errf).read()


def main():
    hard_here = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    work = tempfile.mkdtemp(prefix='dp-fdlimit-')
    try:
        certs = os.path.join(work, 'certs')
        r = subprocess.run([DPASYNC, 'certs', '--out', certs, '--owners', '1'],
                           capture_output=True, text=True)
        check(r.returncode == 0, 'dpasync certs: %s' % r.stderr)

        # A: raised to what it needs.
        hard = min(20000, hard_here) if hard_here != resource.RLIM_INFINITY else 20000
        check(hard >= 1165, 'this machine allows only %d open files' % hard)
        (soft, h), log = started(work, certs, 500, hard, 'a')
        print('A: 500 owners, soft 64 -> %d (hard %d)' % (soft, h))
        check(soft == 1165 and h == hard, 'limits %d/%d, expected 1165/%d' % (soft, h, hard))
        check('raised the soft limit from 64 to 1165' in log, 'no "raised" line:\n' + log)

        # B: the hard limit is short of the need but every owner fits.
        (soft, h), log = started(work, certs, 60, 200, 'b')
        warn = [l for l in log.splitlines() if ' warn ' in l and 'open files' in l]
        print('B: 60 owners, hard 200: soft %d; %s' % (soft, warn[0] if warn else '(no line)'))
        check(soft == 200 and h == 200, 'limits %d/%d, expected 200/200' % (soft, h))
        check(len(warn) == 1 and 'need 285' in warn[0] and 'hard limit is 200' in warn[0],
              'expected one WARN line with need 285 and hard 200:\n' + log)

        # C: not even one descriptor per owner: refused at start.
        r = subprocess.run(cmd(work, certs, 200, 'c'), capture_output=True, text=True,
                           preexec_fn=limits(64, 100), timeout=30)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        print('C: 200 owners, hard 100: exit %d: %s' % (r.returncode, lines))
        check(r.returncode == 2 and len(lines) == 1, 'expected exit 2 and one line, got %d: %s'
              % (r.returncode, r.stderr))
        check(lines[0].startswith('learnerd: ') and 'hard limit' in lines[0] and
              '100' in lines[0] and '232' in lines[0], 'the line does not give the numbers: '
              + lines[0])
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    try:
        main()
    except Fail as e:
        print('FAIL:', e)
        sys.exit(1)
    print('PASS')
