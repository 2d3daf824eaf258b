#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A squatter on the learner's address (docs/ownerd.md "Reconnection",
docs/design.md §10 "Exit status").  Between jobs the learner's port is
free, and any local user can take it.  A fake server there answers each
ClientHello of a long-lived ownerd (no --once) in turn with
  (a) a plaintext TLS alert unknown_ca,
  (b) a plaintext TLS alert handshake_failure,
  (c) `HTTP/1.0 400 Bad Request`,
  (d) a TLS handshake with a self-signed certificate,
and again (a), (b): six answers, each of the four at least once.  ownerd
must still be running after them (the old ownerd exited at the first: 2,
then 1), with one warn line per failed attempt naming its reason and the
attempt's number, and every attempt counted in
dpasync_owner_connect_failures_total{reason} (tls for (a) and (b), not_tls
for (c), peer_cert for (d)).  Then the squatter goes, the real learnerd
takes the same address, and the same ownerd joins and finishes the job
(learnerd prints done, the owner writes the model), and exits 0 on
SIGTERM.

--once gives up after --connect-attempts such attempts in a row: an ownerd
with --once --connect-attempts 3 against a squatter answering HTTP exits 1
after exactly 3 attempts, with an error line giving the last reason.

The journal stays bounded: a third ownerd (no --once) against a squatter
answering HTTP has, once 12 attempts are counted in its metric, written
one warn line and one `reconnecting` line for each of the first 10, and
after them at most a line a minute whose unlogged=N accounts for the
attempts left out before it (normally none yet: the 12th attempt comes at
most 20 s after the 10th, the backoff being capped at 10 s).  The 12
attempts take some 26 s on average (53 s at most) of backoff: the test's
longest part."""
import os, re, signal, socket, ssl, subprocess, sys, threading, time, urllib.request
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, run, self_signed, tmpdir, cleanup, main
from cluster import Cluster

T = 30
# A plaintext alert record: type 21, TLS 1.2 record version, length 2,
# level fatal, description.
ALERT_UNKNOWN_CA = bytes([21, 3, 3, 0, 2, 2, 48])
ALERT_HANDSHAKE_FAILURE = bytes([21, 3, 3, 0, 2, 2, 40])
HTTP_400 = b'HTTP/1.0 400 Bad Request\r\nContent-Length: 0\r\n\r\n'


class Squatter:
    """A TCP server on the loopback that answers its n-th connection with
    answers[n % len(answers)]: plain bytes after reading the ClientHello,
    or an ssl.SSLContext to run a server handshake with."""

    def __init__(self, answers):
        self.answers, self.served = answers, 0
        self.srv = socket.socket()
        # Its closed connections stay in TIME_WAIT on the port: with
        # SO_REUSEADDR there (as every server sets it) learnerd can bind.
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(('127.0.0.1', 0))
        self.srv.listen(8)
        self.port = self.srv.getsockname()[1]
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            a = self.answers[self.served % len(self.answers)]
            try:
                c.settimeout(5)
                if isinstance(a, ssl.SSLContext):
                    s = a.wrap_socket(c, server_side=True)
                    s.recv(4)
                    s.close()
                else:
                    c.recv(4096)
                    c.sendall(a)
            except (OSError, ssl.SSLError):
                pass
            finally:
                c.close()
                self.served += 1

    def close(self):
        # shutdown wakes the accept() blocked in the thread; close alone
        # would leave the port bound until it returned.
        try:
            self.srv.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.srv.close()
        self.thread.join(5)
        check(not self.thread.is_alive(), 'the squatter did not stop')


def failures(port):
    """{reason: count} of dpasync_owner_connect_failures_total ({} when
    /metrics does not answer: the process has gone)."""
    try:
        body = urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port, timeout=5).read()
    except OSError:
        return {}
    out = {}
    for m in re.finditer(r'^dpasync_owner_connect_failures_total\{reason="([a-z_]+)"\} (\S+)$',
                         body.decode(), re.M):
        out[m.group(1)] = float(m.group(2))
    return out


def read_port(pf, proc, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(pf):
            return dict(l.split('=') for l in open(pf).read().split())
        check(proc.poll() is None, 'process exited at start')
        time.sleep(0.05)
    raise Fail('%s not written' % pf)


def owner_cmd(c, port, tag, extra=()):
    d = c.path(tag)
    os.makedirs(d, exist_ok=True)
    return [c.ownerd, '--learner', '127.0.0.1:%d' % port, '--ca', c.certs() + '/ca.crt',
            '--cert', c.certs() + '/owner-1.crt', '--key', c.certs() + '/owner-1.key',
            '--data', c.data(1), '--bias', '--epsilon', '1', '--rate', '50',
            '--ledger', os.path.join(d, 'ledger'), '--model-out', os.path.join(d, 'model.json'),
            '--metrics-listen', '127.0.0.1:0', '--port-file', os.path.join(d, 'ports')] + \
        list(extra)


def attempt_lines(log, unlogged=False):
    """The warn lines of failed attempts: [(attempt, reason)], or with
    unlogged [(attempt, unlogged)]."""
    return [(int(m.group(1)), int(m.group(3)) if unlogged else m.group(2)) for m in
            re.finditer(r' warn conn: attempt=(\d+) failed reason=([a-z_]+) unlogged=(\d+):',
                        log)]


def test(argv):
    bindir = argv[0]
    d = tmpdir('squatter')
    c = Cluster(bindir, d, owners=1, rows=200, features=3, T=T)
    ok = False
    sq = None
    try:
        sq = Squatter([ALERT_UNKNOWN_CA, ALERT_HANDSHAKE_FAILURE, HTTP_400, self_signed(d)])
        port = sq.port
        log = c.path('o', 'ownerd.log')
        os.makedirs(c.path('o'))
        o = subprocess.Popen(owner_cmd(c, port, 'o'), stdout=subprocess.DEVNULL,
                             stderr=open(log, 'w'))
        c.procs.append(o)
        mport = int(read_port(c.path('o', 'ports'), o)['metrics'])

        # --once with a bound, beside it, against its own squatter.
        sq1 = Squatter([HTTP_400])
        olog = c.path('once', 'ownerd.log')
        os.makedirs(c.path('once'))
        once = subprocess.Popen(owner_cmd(c, sq1.port, 'once', ['--once', '--connect-attempts',
                                                                 '3']),
                                stdout=subprocess.DEVNULL, stderr=open(olog, 'w'))
        c.procs.append(once)

        # The journal's bound, beside them, against its own squatter.
        sq2 = Squatter([HTTP_400])
        flog = c.path('flood', 'ownerd.log')
        os.makedirs(c.path('flood'))
        flood = subprocess.Popen(owner_cmd(c, sq2.port, 'flood'), stdout=subprocess.DEVNULL,
                                 stderr=open(flog, 'w'))
        c.procs.append(flood)
        fport = int(read_port(c.path('flood', 'ports'), flood)['metrics'])

        want = {'tls': 4, 'not_tls': 1, 'peer_cert': 1}
        end = time.time() + 60
        got = {}
        while time.time() < end:
            check(o.poll() is None, 'ownerd exited %s after %d answers of the squatter:\n%s'
                  % (o.returncode, sq.served, open(log).read()[-3000:]))
            got = failures(mport)
            if all(got.get(r, 0) >= n for r, n in want.items()):
                break
            time.sleep(0.05)
        else:
            raise Fail('after 60 s: failures %r, expected at least %r:\n%s'
                       % (got, want, open(log).read()[-3000:]))
        time.sleep(0.3)   # ownerd has not given up right after its 6th attempt either
        check(o.poll() is None, 'ownerd exited %s:\n%s' % (o.returncode, open(log).read()[-3000:]))
        text = open(log).read()
        lines = attempt_lines(text)
        check(len(lines) >= 6 and [n for n, _ in lines[:6]] == list(range(1, 7)) and
              [r for _, r in lines[:6]] == ['tls', 'tls', 'not_tls', 'peer_cert', 'tls', 'tls'],
              'warn lines of the failed attempts: %r\n%s' % (lines, text[-3000:]))
        for needle in ('unknown ca', 'handshake failure', 'does not speak TLS',
                       'certificate verify'):
            check(needle in text, 'ownerd log lacks %r:\n%s' % (needle, text[-3000:]))
        check(' error ' not in text, 'ownerd logged an error:\n' + text[-3000:])
        print('ownerd: still running after %d answers of the squatter; failures %r; e.g. %s'
              % (sq.served, {k: int(v) for k, v in sorted(got.items())},
                 [l for l in text.splitlines() if 'reason=not_tls' in l][0][:200]))

        try:
            once.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise Fail('ownerd --once --connect-attempts 3 still running after 30 s:\n'
                       + open(olog).read()[-3000:])
        otext = open(olog).read()
        check(once.returncode == 1, 'ownerd --once --connect-attempts 3: exit %s, expected 1\n%s'
              % (once.returncode, otext[-3000:]))
        check(len(attempt_lines(otext)) == 3 and sq1.served == 3,
              '--connect-attempts 3: %d attempt lines, %d connections\n%s'
              % (len(attempt_lines(otext)), sq1.served, otext[-3000:]))
        errors = [l for l in otext.splitlines() if ' error ' in l]
        check(errors and 'after 3 attempts' in errors[0] and 'not_tls' in errors[0],
              '--once: no error line with the last reason:\n' + otext[-3000:])
        print('--once --connect-attempts 3: exit 1, "%s"' % errors[0].split(' owner: ', 1)[-1])
        sq1.close()

        # The squatter goes, the real learner takes the address: the same
        # ownerd joins and finishes the job.
        sq.close()
        sq = None
        c.port = port
        lp = subprocess.Popen([c.learnerd, '--listen', '127.0.0.1:%d' % port, '--ca',
                               c.certs() + '/ca.crt', '--cert', c.certs() + '/learner.crt',
                               '--key', c.certs() + '/learner.key', '--owners', 'owner-1',
                               '--T', str(T), '--bias', '--out', c.path('learner'),
                               '--query-timeout', '5'],
                              stdout=subprocess.PIPE, stderr=open(c.path('learnerd.log'), 'w'),
                              text=True)
        c.procs.append(lp)
        c.learner = lp
        out = c.wait_learner(timeout=90)
        check('done k=%d' % T in out, 'learnerd did not report done: %r' % out)
        end = time.time() + 10
        while 'done job=' not in open(log).read() and time.time() < end:
            time.sleep(0.05)
        text = open(log).read()
        check('done job=' in text and os.path.exists(c.path('o', 'model.json')),
              'ownerd did not finish the job:\n' + text[-3000:])
        check(o.poll() is None, 'ownerd exited after the job (it waits for the next)')
        o.send_signal(signal.SIGTERM)
        try:
            rc = o.wait(timeout=10)
        except subprocess.TimeoutExpired:
            raise Fail('ownerd did not exit on SIGTERM')
        check(rc == 0, 'ownerd exit %d on SIGTERM' % rc)
        print('the same ownerd joined the real learner, finished the job and exited 0 on SIGTERM')

        end = time.time() + 90
        while time.time() < end and failures(fport).get('not_tls', 0) < 12:
            check(flood.poll() is None, 'ownerd exited %s against a squatter answering HTTP:\n%s'
                  % (flood.returncode, open(flog).read()[-3000:]))
            time.sleep(0.1)
        n = failures(fport).get('not_tls', 0)
        ftext = open(flog).read()
        check(n >= 12, '%d attempts counted after 90 s:\n%s' % (n, ftext[-3000:]))
        lines = attempt_lines(ftext, unlogged=True)
        retries = ftext.count(' info conn: reconnecting in=')
        # Normally exactly the first 10; a line a minute after them if this
        # machine was slow enough to get there, each accounting for the
        # attempts left out before it.
        later = all(a == b + u + 1 and u >= 1 for (b, _), (a, u) in zip(lines[9:], lines[10:]))
        check(lines[:10] == [(a, 0) for a in range(1, 11)] and later and len(lines) < n and
              retries == len(lines),
              '%d attempts counted: warn lines (attempt, unlogged) %r, %d reconnecting lines\n%s'
              % (n, lines, retries, ftext[-3000:]))
        flood.send_signal(signal.SIGTERM)
        check(flood.wait(timeout=10) == 0, 'ownerd against HTTP: exit %s on SIGTERM'
              % flood.returncode)
        sq2.close()
        print('journal: %d attempts counted, %d warn lines and %d reconnecting lines'
              % (n, len(lines), retries))
        ok = True
    finally:
        if sq is not None:
            sq.close()
        c.close()
        cleanup(d, ok)


if __name__ == '__main__':
    main(test)
