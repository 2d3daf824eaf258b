#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Identities, roles, pins and revocation with real daemons on loopback
(docs/protocol.md §1-2, docs/deploy.md "Revoking a certificate"):
- `dpasync certs` refuses owner names that could pass for the learner (its
  name in any case, localhost, an IP literal) and gives the learner
  serverAuth only, owners clientAuth only;
- ownerd refuses a "learner" whose certificate has no extendedKeyUsage, an
  owner certificate serving as a learner (no serverAuth), a certificate
  whose key is not the pinned one (--learner-pin; the pin printed by
  `dpasync certs --pin` equals the one the openssl CLI computes), and a
  learner revoked in its --crl; it accepts the real learner certificate
  with the right pin and a current CRL;
- learnerd refuses an owner certificate without extendedKeyUsage or with
  serverAuth only, and a revoked owner (--crl), while admitting the others;
  the revoked ownerd keeps retrying (the alert is not verified as the
  learner's): 3 warn lines naming its certificate, counted as
  dpasync_owner_connect_failures_total{reason="refused_cert"}, then exit 0
  on SIGTERM;
- both daemons refuse to start on a malformed CRL, a CRL from another CA
  or a malformed pin, with one line on stderr and exit status 2.
The fake learner is Python's ssl module (it does not check its own
certificate's usage, as an attacker's would not); the odd certificates are
made with the openssl CLI, signed by the deployment CA."""
import os, re, shutil, signal, socket, ssl, subprocess, sys, time, urllib.request
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, run, tmpdir, cleanup, main
from cluster import Cluster, tls_client, closed_by_peer, ledger_records

EXT = {
    'none': '',
    'client': 'extendedKeyUsage = clientAuth\n',
    'server': 'extendedKeyUsage = serverAuth\n',
    'both': 'extendedKeyUsage = serverAuth, clientAuth\n',
}


def openssl_leaf(c, outdir, cn, eku):
    """outdir/<cn>.crt/.key (plus ca.crt) signed by the deployment CA with
    the openssl CLI: CN and SAN DNS = cn, extendedKeyUsage per EKU[eku]."""
    os.makedirs(outdir, exist_ok=True)
    ca, cakey = c.path('certs', 'ca.crt'), c.path('certs', 'ca.key')
    shutil.copy(ca, os.path.join(outdir, 'ca.crt'))
    base = os.path.join(outdir, cn)
    cnf = base + '.ext'
    with open(cnf, 'w') as f:
        f.write('[v3]\nbasicConstraints = critical, CA:FALSE\n'
                'keyUsage = critical, digitalSignature\n'
                'subjectAltName = DNS:%s\n%s' % (cn, EXT[eku]))
    run(['openssl', 'req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256',
         '-nodes', '-keyout', base + '.key', '-subj', '/CN=' + cn, '-out', base + '.csr'])
    run(['openssl', 'x509', '-req', '-in', base + '.csr', '-CA', ca, '-CAkey', cakey,
         '-days', '30', '-sha256', '-extfile', cnf, '-extensions', 'v3', '-out', base + '.crt'])
    return base + '.crt', base + '.key'


def openssl_pin(crt):
    der = subprocess.run('openssl x509 -in %s -pubkey -noout | openssl pkey -pubin -outform der'
                         ' | openssl dgst -sha256 -binary | base64' % crt, shell=True,
                         capture_output=True, text=True, check=True).stdout.strip()
    return 'sha256//' + der


def ownerd_cmd(c, i, port, ledger, extra=()):
    crt = c.path('certs', 'owner-%d' % i)
    return [c.ownerd, '--learner', '127.0.0.1:%d' % port, '--ca', c.path('certs', 'ca.crt'),
            '--cert', crt + '.crt', '--key', crt + '.key', '--data', c.data(i), '--bias',
            '--epsilon', '1', '--ledger', ledger] + list(extra)


def fake_learner(c, tag, crt, key, extra=()):
    """A TLS server with crt/key playing the learner for a real ownerd
    (owner-1).  True when ownerd completed the handshake and sent its Hello
    (it accepted the server), False when it aborted the handshake.  Returns
    (accepted, ownerd log)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_cert_chain(crt, key)
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(c.path('certs', 'ca.crt'))
    srv = socket.socket()
    srv.bind(('127.0.0.1', 0))
    srv.listen(4)
    srv.settimeout(0.1)
    d = c.path('fake-' + tag)
    os.makedirs(d)
    log = open(os.path.join(d, 'ownerd.log'), 'w')
    p = subprocess.Popen(ownerd_cmd(c, 1, srv.getsockname()[1], os.path.join(d, 'ledger'),
                                    extra), stdout=subprocess.DEVNULL, stderr=log)
    accepted, conn, end = False, None, time.time() + 20
    try:
        # Until ownerd connects, or exits (a flag it does not know, say).
        while conn is None and p.poll() is None and time.time() < end:
            try:
                conn, _ = srv.accept()
            except socket.timeout:
                pass
        if conn is None:
            raise OSError('ownerd did not connect')
        conn.settimeout(20)
        try:
            s = ctx.wrap_socket(conn, server_side=True)
            accepted = len(s.recv(4)) > 0
            s.close()
        except (ssl.SSLError, ConnectionError, socket.timeout):
            accepted = False
        # ownerd logs the refusal as it closes; give it a moment to write it.
        time.sleep(0.3)
    except OSError:
        accepted = False
    finally:
        p.kill()
        p.wait()
        srv.close()
        log.close()
    return accepted, open(os.path.join(d, 'ownerd.log')).read()


def wait_log(path, needle, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path) and needle in open(path).read().lower():
            return True
        time.sleep(0.1)
    return False


def start_fails(cmd, what):
    p = run(cmd, ok=False, timeout=60)
    lines = p.stderr.strip().splitlines()
    check(p.returncode == 2, '%s: exit %d, expected 2\n%s' % (what, p.returncode, p.stderr))
    check(len(lines) == 1, '%s: %d lines on stderr, expected 1:\n%s' % (what, len(lines), p.stderr))
    return lines[0]


def test(argv):
    bindir = argv[0]
    d = tmpdir('e2e-identity')
    c = Cluster(bindir, d, owners=3, rows=200, features=3, T=100)
    certs = c.path('certs')
    ca = ['--ca-cert', certs + '/ca.crt', '--ca-key', certs + '/ca.key']
    try:
        # --- dpasync certs: names and usages (finding 3).
        for bad in ('learner', 'Learner', 'localhost', '127.0.0.1', '10.1'):
            p = run([c.dp, 'certs', '--out', c.path('bad-names'), '--names', bad] + ca, ok=False)
            check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1,
                  'dpasync certs issued an owner certificate named %r (exit %d): %s'
                  % (bad, p.returncode, p.stderr))
        check(not os.path.exists(c.path('bad-names', 'learner.crt')), 'a refused name left a file')
        for f, want in (('learner.crt', 'TLS Web Server Authentication'),
                        ('owner-1.crt', 'TLS Web Client Authentication')):
            eku = run(['openssl', 'x509', '-in', os.path.join(certs, f), '-noout', '-ext',
                       'extendedKeyUsage']).stdout.strip().splitlines()
            check(len(eku) == 2 and eku[1].strip() == want,
                  '%s: extendedKeyUsage %r, expected only %r' % (f, eku[1:], want))
        pin = run([c.dp, 'certs', '--pin', certs + '/learner.crt']).stdout.strip()
        check(pin == openssl_pin(certs + '/learner.crt'),
              'dpasync certs --pin %r differs from the openssl CLI' % pin)
        # --- revocation lists: the initial (empty) one, one revoking owner-2,
        # one revoking the learner, and bad ones.
        run([c.dp, 'certs', '--crl', certs + '/ca.crl'] + ca)
        shutil.copy(certs + '/ca.crl', c.path('empty.crl'))
        run([c.dp, 'certs', '--crl', c.path('learner-revoked.crl'), '--revoke',
             certs + '/learner.crt'] + ca)
        out = run([c.dp, 'certs', '--crl', certs + '/ca.crl', '--revoke',
                   certs + '/owner-2.crt'] + ca).stdout
        check('cn=owner-2' in out and 'revoked' in out, 'no revocation report: %r' % out)
        listing = run(['openssl', 'crl', '-in', certs + '/ca.crl', '-noout', '-text']).stdout
        serial = run(['openssl', 'x509', '-in', certs + '/owner-2.crt', '-noout',
                      '-serial']).stdout.strip().split('=')[1]
        check(serial.upper() in listing.upper().replace(':', ''), 'owner-2 not in the CRL')
        run([c.dp, 'certs', '--out', c.path('other'), '--owners', '1'])
        run([c.dp, 'certs', '--crl', c.path('other.crl'), '--ca-cert', c.path('other', 'ca.crt'),
             '--ca-key', c.path('other', 'ca.key')])
        with open(c.path('garbage.crl'), 'w') as f:
            f.write('-----BEGIN X509 CRL-----\nbm90IGEgQ1JM\n-----END X509 CRL-----\n')

        # --- ownerd against fake learners (findings 3, 4, 9).
        lcrt, lkey = certs + '/learner.crt', certs + '/learner.key'
        ok, log = fake_learner(c, 'good', lcrt, lkey,
                               ['--learner-pin', pin, '--crl', c.path('empty.crl')])
        check(ok, 'ownerd refused the real learner with its pin and a current CRL:\n' + log)
        ncrt, nkey = openssl_leaf(c, c.path('noeku'), 'learner', 'none')
        ok, log = fake_learner(c, 'noeku', ncrt, nkey)
        check(not ok, 'ownerd accepted a learner certificate without extendedKeyUsage')
        check('serverauth' in log.lower(), 'ownerd log does not name the missing usage:\n' + log)
        ok, log = fake_learner(c, 'ownercert', certs + '/owner-2.crt', certs + '/owner-2.key',
                               ['--server-name', 'owner-2'])
        check(not ok, "ownerd accepted an owner's certificate as its learner")
        # What the old `dpasync certs --names learner` made: both usages.
        bcrt, bkey = openssl_leaf(c, c.path('both'), 'learner', 'both')
        ok, log = fake_learner(c, 'pin', bcrt, bkey, ['--learner-pin', pin])
        check(not ok, 'ownerd accepted a learner certificate whose key is not pinned')
        check('not pinned' in log and openssl_pin(bcrt) in log,
              'ownerd log does not show the refused key:\n' + log)
        ok, log = fake_learner(c, 'revoked', lcrt, lkey, ['--crl', c.path('learner-revoked.crl')])
        check(not ok, 'ownerd accepted a revoked learner certificate')
        check('revoked' in log, 'ownerd log does not say revoked:\n' + log)

        # --- learnerd with the CRL revoking owner-2 (findings 4, 9).
        c.start_learner(['--crl', certs + '/ca.crl'])
        o1 = c.start_owner(1, extra=['--learner-pin', pin, '--crl', certs + '/ca.crl'])
        c.wait_metric('dpasync_learner_owners_connected', 1)
        o2 = c.start_owner(2, once=False, extra=['--metrics-listen', '127.0.0.1:0',
                                                 '--port-file', c.path('owner-2.ports')])
        check(wait_log(c.path('learnerd.log'), 'certificate revoked'),
              'learnerd did not log refusing the revoked owner-2')
        for eku in ('none', 'server'):
            crt, key = openssl_leaf(c, c.path('owner-' + eku), 'owner-3', eku)
            # Nothing is sent: a refused certificate gets an alert right after
            # the client's handshake, an admitted one is logged and kept open.
            seen = open(c.path('learnerd.log')).read().count('owner connected id=owner-3')
            s = tls_client(c, 'owner-3', certdir=c.path('owner-' + eku))
            closed = closed_by_peer(s)
            s.close()
            admitted = open(c.path('learnerd.log')).read().count(
                'owner connected id=owner-3') > seen
            check(closed and not admitted,
                  'learnerd admitted an owner certificate with extendedKeyUsage %s' % eku)
        check(wait_log(c.path('learnerd.log'), 'clientauth'),
              'learnerd log does not name the missing usage')
        check(c.metric('dpasync_learner_owners_connected') == 1,
              'learnerd counts more than owner-1 as connected')
        n, _ = ledger_records(c.path('owner-2', 'ledger'))
        check(n == 0, 'revoked owner-2 answered %d queries' % n)
        check(o1.poll() is None, 'ownerd owner-1 exited')
        # The revoked owner is told by a TLS alert after its handshake.  That
        # alert is not verified as the learner's (whoever holds the address
        # can send one), so ownerd retries (docs/ownerd.md "Reconnection"):
        # a warn line per attempt naming its certificate, each counted as
        # refused_cert, and exit 0 on SIGTERM.  Only a Goodbye is a refusal
        # for good (docs/design.md §10 "Exit status"); the old ownerd exited
        # (2, then 1).
        pat = re.compile(r" warn conn: attempt=\d+ failed reason=refused_cert .*"
                         r"refused this owner's certificate")
        end = time.time() + 20
        while time.time() < end and o2.poll() is None and \
                len(pat.findall(open(c.ledger(2) + '.log').read())) < 3:
            time.sleep(0.05)
        olog = open(c.ledger(2) + '.log').read()
        check(o2.poll() is None and len(pat.findall(olog)) >= 3,
              'revoked owner-2: exit %s, %d attempts refused\n%s'
              % (o2.returncode, len(pat.findall(olog)), olog[-1500:]))
        mport = int(dict(l.split('=') for l in open(c.path('owner-2.ports')).read().split())
                    ['metrics'])
        body = urllib.request.urlopen('http://127.0.0.1:%d/metrics' % mport,
                                      timeout=5).read().decode()
        m = re.search(r'^dpasync_owner_connect_failures_total\{reason="refused_cert"\} (\S+)$',
                      body, re.M)
        check(m and float(m.group(1)) >= 3, 'revoked owner-2: refused_cert count %s'
              % (m and m.group(1)))
        o2.send_signal(signal.SIGTERM)
        try:
            o2.wait(timeout=10)
        except subprocess.TimeoutExpired:
            raise Fail('revoked owner-2 did not exit on SIGTERM')
        check(o2.returncode == 0, 'revoked owner-2: exit %d on SIGTERM' % o2.returncode)
        c.close()
        for p in (c.path('owner-1', 'ledger'), c.path('owner-2', 'ledger')):
            if os.path.exists(p):   # a ledger directory of per-job files (docs/ledger.md §8)
                home = os.path.join(p, 'jobs')
                for d in (p, home):
                    check(os.stat(d).st_mode & 0o777 == 0o700, '%s is not 0700' % d)
                for f in os.listdir(home):
                    if f.endswith('.ledger'):
                        q = os.path.join(home, f)
                        check(os.stat(q).st_mode & 0o777 == 0o600, '%s is not 0600' % q)

        # --- bad CRLs and pins stop the daemons at start (finding 9).
        base = [c.learnerd, '--listen', '127.0.0.1:0', '--ca', certs + '/ca.crt', '--cert', lcrt,
                '--key', lkey, '--owners', 'owner-1', '--out', c.path('learner-bad')]
        own = ownerd_cmd(c, 1, 1, c.path('bad', 'ledger'))
        os.makedirs(c.path('bad'))
        lines = []
        for crl, needle in ((c.path('garbage.crl'), 'malformed crl'),
                            (c.path('other.crl'), 'not signed by a ca'),
                            (c.path('missing.crl'), 'no such file')):
            for name, cmd in (('learnerd', base), ('ownerd', own)):
                line = start_fails(cmd + ['--crl', crl], '%s --crl %s' % (name, crl))
                check(needle in line.lower(), '%s: %r does not say %r' % (name, line, needle))
                lines.append(line)
        line = start_fails(own + ['--learner-pin', 'sha256//AAAA'], 'ownerd bad pin')
        check('learner-pin' in line, 'bad pin line: %r' % line)
        print('refused: owner names learner/localhost/IP; no-EKU, owner and unpinned learners;'
              ' revoked learner and owner-2; no-EKU and serverAuth-only owners; bad CRLs, e.g. %r'
              % lines[0])
    finally:
        c.close()
        cleanup(d)

if __name__ == '__main__':
    main(test)
