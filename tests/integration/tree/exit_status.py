#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""One exit-status policy (docs/design.md §10 "Exit status"): each binary's
error paths, each checked against the row of the table it exercises.

The expected statuses are read from the table in docs/design.md (code x
phase), so the documentation and the binaries cannot drift apart: every
case names its row (an error code, or "(none)" for success) and the phase
of the step that fails, and its exit status must be that cell.  Cases:
bad flags and usage, missing and malformed configuration files, data,
schedules, graphs, models, ledgers, checkpoints and certificates, outputs
that exist or cannot be written, a port in use, gnuplot missing, a ledger
locked by another process, and for ownerd an unauthenticated TLS peer on
the learner's address (an HTTP reply, a self-signed certificate, the wrong
server-name, learnerd's metrics port: retried, and with --once 1 after
--connect-attempts, never 2) and a permanent Goodbye over a verified
connection (2).  Every failure also says why on stderr."""
import fcntl, os, re, socket, ssl, subprocess, sys, threading, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, run, self_signed, tmpdir, cleanup, main

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..')
PHASES = ('args', 'load', 'run')


def read_table():
    """{row: {phase: status}} from the code x phase table of docs/design.md
    §10 "Exit status"; rows are named as written without the backquotes
    and the DP_ prefix: EINVAL, ..., "(none)", "other"."""
    rows, section, table = {}, False, False
    for line in open(os.path.join(ROOT, 'docs', 'design.md')):
        line = line.rstrip('\n')
        if line.startswith('### Exit status'):
            section = True
            continue
        if not section:
            continue
        if line.startswith('## ') or line.startswith('### '):
            break
        if not table:
            table = line.startswith('| code |')
            continue
        if line.startswith('|---'):
            continue
        if not line.startswith('|'):
            break
        cells = [c.strip() for c in line.strip('|').split('|')]
        check(len(cells) == 2 + len(PHASES), 'table row %r' % line)
        name = cells[0].strip('`')
        name = name[3:] if name.startswith('DP_') else name
        rows[name] = dict(zip(PHASES, (int(c) for c in cells[2:])))
    check('EINVAL' in rows and '(none)' in rows and 'other' in rows,
          'no exit-status table in docs/design.md: %r' % sorted(rows))
    return rows


class Cases:
    def __init__(self, table):
        self.table, self.n, self.by_binary = table, 0, {}

    def expect(self, binary, what, row, phase, cmd, env=None, needle=None, proc=None,
               timeout=60):
        """Run cmd (or wait for the already started proc) and check its
        status against the table's cell (row, phase)."""
        check(row in self.table and phase in PHASES, 'no cell %s/%s' % (row, phase))
        want = self.table[row][phase]
        if proc is None:
            p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                               timeout=timeout, env=env)
            code, err = p.returncode, p.stderr
        else:
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise Fail('%s: %s: still running after %d s' % (binary, what, timeout))
            err = open(cmd).read()   # cmd: the process's log file
        check(code == want, '%s: %s: exit %d, the table says %d (row %s, phase %s)\n%s'
              % (binary, what, code, want, row, phase, err[-2000:]))
        if want != 0:
            check(err.strip() != '', '%s: %s: exit %d without a word on stderr'
                  % (binary, what, code))
        if needle:
            check(needle in err, '%s: %s: stderr lacks %r:\n%s' % (binary, what, needle,
                                                                    err[-2000:]))
        self.n += 1
        self.by_binary[binary] = self.by_binary.get(binary, 0) + 1
        last = [l for l in err.strip().splitlines() if ' error ' in l or not l[:1].isdigit()]
        print('ok %-8s %-56s %-9s %-4s -> %d  %s' % (binary, what, row, phase, code,
                                                    last[-1][:110] if last else ''))


def write(d, name, text):
    """d/name holding text; its path."""
    path = os.path.join(d, name)
    with open(path, 'w') as f:
        f.write(text)
    return path


def free_port_in_use():
    """A listening socket (kept open by the caller) and its port."""
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    s.listen(1)
    return s, s.getsockname()[1]


def fake_server(reply, ctx=None):
    """A TCP server on the loopback that answers every connection with
    `reply` (plain bytes), or does a TLS handshake with ctx; its port.  It
    serves until the process ends (daemon thread)."""
    srv = socket.socket()
    srv.bind(('127.0.0.1', 0))
    srv.listen(8)

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            try:
                c.settimeout(5)
                if ctx is None:
                    c.recv(4096)
                    c.sendall(reply)
                else:
                    s = ctx.wrap_socket(c, server_side=True)
                    s.recv(4)
                    s.close()
            except (OSError, ssl.SSLError):
                pass
            finally:
                c.close()

    threading.Thread(target=serve, daemon=True).start()
    return srv, srv.getsockname()[1]


def tool_cases(K, dp, d):
    data = os.path.join(d, 'data')
    o1, o2 = os.path.join(data, 'owner-1.csv'), os.path.join(data, 'owner-2.csv')
    bad = write(d, 'bad.csv', 'x1,x2,x3,y\n1,2,3,4\n1,2,oops,4\n')         # a cell that is no number
    ragged = write(d, 'ragged.csv', 'x1,x2,x3,y\n1,2,3,4\n1,2,3\n')   # a row with a field missing
    afile = os.path.join(d, 'a-file')        # a regular file: nothing goes under it
    open(afile, 'w').close()
    under_file = os.path.join(afile, 'sub')
    missing = os.path.join(d, 'missing.csv')
    notjson = write(d, 'not.json', 'this is not JSON\n')

    # dpasync itself
    K.expect('dpasync', 'no command', 'EINVAL', 'args', [dp])
    K.expect('dpasync', 'unknown command', 'EINVAL', 'args', [dp, 'nosuch'])
    K.expect('dpasync', '--help', '(none)', 'args', [dp, '--help'])
    for sub in ('gen', 'prep', 'sim', 'forecast', 'eval', 'graph', 'certs', 'ledger', 'plot',
                'report'):
        K.expect('dpasync', '%s: an unknown flag' % sub, 'EINVAL', 'args', [dp, sub, '--bogus'],
                 needle='bad usage')

    # gen
    K.expect('gen', 'an owner with 0 rows', 'EINVAL', 'args',
             [dp, 'gen', '--rows', '10,0', '--out', os.path.join(d, 'g0')])
    K.expect('gen', 'owner files exist, no --force', 'EEXIST', 'load',
             [dp, 'gen', '--rows', '10', '--out', data], needle='--force')
    K.expect('gen', 'output directory under a regular file', 'EIO', 'run',
             [dp, 'gen', '--rows', '10', '--out', under_file])

    # prep
    prep = [dp, 'prep', '--target', 'y']
    K.expect('prep', 'input file missing', 'ENOENT', 'load',
             prep + ['--out', os.path.join(d, 'p1'), missing])
    K.expect('prep', 'a row with a field missing', 'EFORMAT', 'load',
             prep + ['--out', os.path.join(d, 'p2'), ragged], needle='ragged.csv:3')
    run(prep + ['--out', os.path.join(d, 'p3'), o1])
    K.expect('prep', 'outputs exist, no --force', 'EINVAL', 'load',
             prep + ['--out', os.path.join(d, 'p3'), o1], needle='--force')
    K.expect('prep', 'output directory under a regular file', 'EIO', 'run',
             prep + ['--out', under_file, o1])

    # sim
    sim = [dp, 'sim', '--target', 'y', '--T', '20', '--repeats', '1']
    simdir = os.path.join(d, 'sim')
    K.expect('sim', '--T 1', 'EINVAL', 'args', sim + ['--out', simdir, '--T', '1', o1])
    K.expect('sim', 'data file missing', 'ENOENT', 'load', sim + ['--out', simdir, missing])
    K.expect('sim', 'malformed cell', 'EFORMAT', 'load', sim + ['--out', simdir, bad, o1])
    K.expect('sim', '--schema not JSON', 'EFORMAT', 'load',
             sim + ['--out', simdir, '--schema', notjson, o1])
    sched = write(d, 'sched.txt', '1\n2\nthree\n')
    K.expect('sim', '--schedule with a bad line', 'EFORMAT', 'load',
             sim + ['--out', simdir, '--schedule', sched, o1, o2], needle='sched.txt:3')
    sched = write(d, 'sched.txt', '1\n' * 6 + '2\n' * 4)
    K.expect('sim', '--schedule beyond an owner\'s answer cap', 'EBUDGET', 'load',
             [dp, 'sim', '--target', 'y', '--repeats', '1', '--out', simdir, '--schedule', sched,
              '--answers-cap', '5', o1, o2], needle='already given')
    K.expect('sim', 'output directory under a regular file', 'EIO', 'run',
             sim + ['--out', under_file, o1, o2])
    run(sim + ['--out', simdir, o1, o2])   # a good run for plot and report below
    p2p = [dp, 'sim', '--mode', 'p2p', '--target', 'y', '--out', os.path.join(d, 'p2p')]
    graph = write(d, 'graph.csv', 'a,b,w\nowner-1,owner-2,1\n')
    badgraph = write(d, 'badgraph.csv', 'from,to\nowner-1,owner-2\n')
    K.expect('sim p2p', 'graph with a bad header', 'EFORMAT', 'load',
             p2p + ['--graph', badgraph, o1, o2])
    psched = write(d, 'p2p-sched.csv', 'step,agent\n' + ''.join('%d,owner-1\n' % k for k in range(1, 5)))
    K.expect('sim p2p', 'schedule wakes an agent more than --wakeups', 'EBUDGET', 'load',
             p2p + ['--graph', graph, '--schedule', psched, '--wakeups', '3', o1, o2],
             needle='already woken')

    # forecast
    K.expect('forecast', 'no --rows', 'EINVAL', 'args', [dp, 'forecast', '--sample', o1])
    K.expect('forecast', 'sample missing', 'ENOENT', 'load',
             [dp, 'forecast', '--sample', missing, '--rows', '10'])
    K.expect('forecast', 'malformed sample', 'EFORMAT', 'load',
             [dp, 'forecast', '--sample', bad, '--rows', '10'])
    flat = write(d, 'flat.csv', 'x1,x2,y\n0,0,1\n0,0,2\n0,0,3\n')
    K.expect('forecast', 'a sample with no curvature', 'ENUMERIC', 'load',
             [dp, 'forecast', '--sample', flat, '--rows', '10'], needle='no curvature')

    # eval
    K.expect('eval', 'model file missing', 'ENOENT', 'load',
             [dp, 'eval', os.path.join(d, 'nomodel.json'), o1])
    K.expect('eval', 'model file not JSON', 'EFORMAT', 'load', [dp, 'eval', notjson, o1])
    model = os.path.join(simdir, 'model.json')
    K.expect('eval', '--model other than the file\'s', 'EINVAL', 'args',
             [dp, 'eval', '--model', 'logistic', model, o1])
    K.expect('eval', 'data file missing', 'ENOENT', 'load', [dp, 'eval', model, missing])
    cls = os.path.join(d, 'cls')
    run([dp, 'gen', '--rows', '80', '--features', '3', '--task', 'classification', '--out', cls])
    run([dp, 'sim', '--target', 'y', '--model', 'logistic', '--lambda', '0.1', '--T', '20', '--repeats', '1',
         '--out', os.path.join(d, 'sim-logit'), os.path.join(cls, 'owner-1.csv')])
    K.expect('eval', '--lambda 0 for a logistic model', 'EINVAL', 'run',
             [dp, 'eval', '--lambda', '0', os.path.join(d, 'sim-logit', 'model.json'),
              os.path.join(cls, 'owner-1.csv')], needle='needs lambda > 0')

    # graph
    angles = write(d, 'angles.csv', 'id,t1,t2\na,1,0\nb,0,1\nc,1,1\n')
    badangles = write(d, 'badangles.csv', 'id,t1,t2\na,1,0\nb,0,nope\n')
    K.expect('graph', 'malformed angles file', 'EFORMAT', 'load',
             [dp, 'graph', '--from-angles', badangles, '--out', os.path.join(d, 'g.csv')])
    K.expect('graph', 'output under a regular file', 'EIO', 'run',
             [dp, 'graph', '--from-angles', angles, '--keep', '1', '--out',
              os.path.join(under_file, 'g.csv')])

    # certs
    certs = os.path.join(d, 'certs')
    K.expect('certs', 'a target exists, no --force', 'EEXIST', 'run',
             [dp, 'certs', '--out', certs, '--owners', '2'], needle='--force')
    K.expect('certs', '--pin of a missing file', 'ETLS', 'load',
             [dp, 'certs', '--pin', os.path.join(d, 'none.crt')])
    K.expect('certs', '--pin of a file that is no certificate', 'ETLS', 'load',
             [dp, 'certs', '--pin', notjson])
    K.expect('certs', '--crl with a CA certificate that is none', 'ETLS', 'load',
             [dp, 'certs', '--crl', os.path.join(d, 'x.crl'), '--ca-cert', notjson, '--ca-key',
              os.path.join(certs, 'ca.key')])
    K.expect('certs', 'output directory under a regular file', 'EIO', 'run',
             [dp, 'certs', '--out', under_file, '--owners', '1'])

    # ledger
    K.expect('ledger', 'ledger missing', 'ENOENT', 'load',
             [dp, 'ledger', os.path.join(d, 'none.ledger')])
    junk = os.path.join(d, 'junk.ledger')
    with open(junk, 'wb') as f:
        f.write(b'\x07' * 300)
    K.expect('ledger', 'not a ledger', 'ECORRUPT', 'load', [dp, 'ledger', junk],
             needle='bad magic')

    # plot and report
    empty = os.path.join(d, 'empty-path')
    os.makedirs(empty, exist_ok=True)
    nognuplot = dict(os.environ, PATH=empty)
    plot = [dp, 'plot', '--kind', 'owners', '--out', os.path.join(d, 'owners.png')]
    K.expect('plot', 'input missing', 'ENOENT', 'load', plot + [missing])
    K.expect('plot', 'input not a trace or schedule', 'EFORMAT', 'load', plot + [bad])
    K.expect('plot', 'gnuplot not on PATH', 'ENOENT', 'run',
             plot + [os.path.join(simdir, 'schedule.txt')], env=nognuplot, needle='gnuplot')
    K.expect('report', 'not a directory', 'EINVAL', 'args', [dp, 'report', o1])
    K.expect('report', 'gnuplot not on PATH', 'ENOENT', 'run', [dp, 'report', simdir],
             env=nognuplot, needle='gnuplot')
    badsim = os.path.join(d, 'badsim')
    os.makedirs(badsim)
    write(badsim, 'summary.json', '{ "truncated": ')
    write(badsim, 'psi.csv', open(os.path.join(simdir, 'psi.csv')).read())
    K.expect('report', 'summary.json not JSON', 'EFORMAT', 'load', [dp, 'report', badsim])


def learnerd_cases(K, learnerd, d):
    c = os.path.join(d, 'certs')
    base = [learnerd, '--ca', c + '/ca.crt', '--cert', c + '/learner.crt', '--key',
            c + '/learner.key', '--owners', 'owner-1,owner-2', '--T', '20']
    out = os.path.join(d, 'lrn')
    K.expect('learnerd', '--help', '(none)', 'args', [learnerd, '--help'])
    K.expect('learnerd', 'an unknown flag', 'EINVAL', 'args', base + ['--bogus'])
    conf = write(d, 'learnerd.conf', '[learnerd]\nthis line is not a setting\n')
    K.expect('learnerd', 'malformed configuration file', 'EINVAL', 'args',
             base + ['--config', conf])
    K.expect('learnerd', 'configuration file missing', 'ENOENT', 'args',
             base + ['--config', os.path.join(d, 'none.conf')])
    K.expect('learnerd', '--features that do not fit in --max-frame', 'EINVAL', 'args',
             base + ['--features', '1000000', '--max-frame', '64', '--out', out],
             needle='max-frame')
    K.expect('learnerd', 'certificate file missing', 'ETLS', 'load',
             [learnerd, '--ca', c + '/ca.crt', '--cert', os.path.join(d, 'none.crt'), '--key',
              c + '/learner.key', '--owners', 'owner-1', '--out', out])
    notjson = os.path.join(d, 'not.json')
    K.expect('learnerd', '--public not JSON', 'EFORMAT', 'load',
             base + ['--public', notjson, '--out', out])
    # A checkpoint in --out: without --resume it is not overwritten; a
    # malformed one is not resumed.
    ck = os.path.join(d, 'lrn-ck')
    os.makedirs(ck)
    write(ck, 'checkpoint.json', '{ "format": ')
    K.expect('learnerd', 'a checkpoint in --out, no --resume', 'EEXIST', 'load',
             base + ['--listen', '127.0.0.1:0', '--out', ck], needle='--resume')
    K.expect('learnerd', 'a malformed checkpoint with --resume', 'EFORMAT', 'load',
             base + ['--listen', '127.0.0.1:0', '--out', ck, '--resume'])
    busy, port = free_port_in_use()
    try:
        K.expect('learnerd', 'listen port in use', 'other', 'run',
                 base + ['--listen', '127.0.0.1:%d' % port, '--out', os.path.join(d, 'lrn-p')],
                 needle='in use')
    finally:
        busy.close()
    afile = os.path.join(d, 'a-file')
    K.expect('learnerd', '--out under a regular file', 'EIO', 'run',
             base + ['--listen', '127.0.0.1:0', '--out', os.path.join(afile, 'sub')])


def ownerd_cases(K, learnerd, ownerd, d):
    c = os.path.join(d, 'certs')
    data = os.path.join(d, 'data', 'owner-1.csv')

    def owner(name='owner-1', port=1, ledger=None, extra=()):
        ledger = ledger or os.path.join(d, 'led-%s-%d' % (name, port))
        return [ownerd, '--learner', '127.0.0.1:%d' % port, '--ca', c + '/ca.crt', '--cert',
                '%s/%s.crt' % (c, name), '--key', '%s/%s.key' % (c, name), '--data', data,
                '--epsilon', '1', '--ledger', ledger, '--once'] + list(extra)

    K.expect('ownerd', '--help', '(none)', 'args', [ownerd, '--help'])
    K.expect('ownerd', 'an unknown flag', 'EINVAL', 'args', owner() + ['--bogus'])
    # A startup kit's config leaves the target unset: ownerd refuses to
    # start until it is set (issue 22 finding 8).
    conf = write(d, 'ownerd-kit.conf', 'target =\n')
    K.expect('ownerd', 'target left unset (a startup kit)', 'EINVAL', 'args',
             owner() + ['--config', conf], needle='--target must not be empty')
    conf = write(d, 'ownerd.conf', 'epsilon = lots\n')
    K.expect('ownerd', 'malformed configuration file', 'EINVAL', 'args',
             owner() + ['--config', conf])
    K.expect('ownerd', 'data file missing', 'ENOENT', 'load',
             owner() + ['--data', os.path.join(d, 'missing.csv')])
    K.expect('ownerd', 'malformed cell in the data', 'EFORMAT', 'load',
             owner() + ['--data', os.path.join(d, 'bad.csv')], needle='bad.csv:3')
    K.expect('ownerd', 'certificate file missing', 'ETLS', 'load',
             owner() + ['--cert', os.path.join(d, 'none.crt')])
    led = os.path.join(d, 'led-corrupt')
    os.makedirs(led, mode=0o700)
    with open(os.path.join(led, 'job-x.ledger'), 'wb') as f:
        f.write(b'\x07' * 300)
    K.expect('ownerd', 'a corrupt job file in the ledger directory', 'ECORRUPT', 'load',
             owner(ledger=led))
    led = os.path.join(d, 'led-locked')
    os.makedirs(led, mode=0o700)
    with open(os.path.join(led, 'lock'), 'w') as lk:
        fcntl.flock(lk, fcntl.LOCK_EX | fcntl.LOCK_NB)
        K.expect('ownerd', 'ledger directory locked by another process', 'ESTATE', 'load',
                 owner(ledger=led), needle='in use')
    busy, port = free_port_in_use()
    try:
        K.expect('ownerd', '--metrics-listen port in use', 'other', 'run',
                 owner(extra=['--metrics-listen', '127.0.0.1:%d' % port]))
    finally:
        busy.close()
    K.expect('ownerd', '--port-file in a missing directory', 'EIO', 'run',
             owner(extra=['--metrics-listen', '127.0.0.1:0', '--port-file',
                          os.path.join(d, 'no', 'such', 'ports')]))

    # Unauthenticated peers on the learner's address: never 2, and not
    # even an exit without --once (docs/ownerd.md "Reconnection"); with
    # --once, 1 after --connect-attempts of them (2 here), each logged.
    retry = ['--connect-attempts', '2']
    srv, port = fake_server(b'HTTP/1.0 400 Bad Request\r\n\r\n')
    K.expect('ownerd', 'the learner\'s address answers HTTP/1.0 400', 'ETLS', 'run',
             owner(port=port, extra=retry), needle='attempt=2 failed reason=not_tls')
    srv.close()
    srv, port = fake_server(None, self_signed(d))
    K.expect('ownerd', 'the learner\'s address has a self-signed certificate', 'ETLS', 'run',
             owner(port=port, extra=retry), needle='attempt=2 failed reason=peer_cert')
    srv.close()

    # A permanent Goodbye over a verified connection: owner-2 is not one of
    # the job's owners.
    pf = os.path.join(d, 'learner.ports')
    lp = subprocess.Popen([learnerd, '--ca', c + '/ca.crt', '--cert', c + '/learner.crt',
                           '--key', c + '/learner.key', '--owners', 'owner-1', '--T', '20',
                           '--listen', '127.0.0.1:0', '--port-file', pf, '--metrics-listen',
                           '127.0.0.1:0', '--out', os.path.join(d, 'lrn-g')],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        end = time.time() + 20
        while not os.path.exists(pf) and lp.poll() is None and time.time() < end:
            time.sleep(0.05)
        check(os.path.exists(pf), 'learnerd did not start')
        ports = dict(l.split('=') for l in open(pf).read().split())
        port, mport = int(ports['tls']), int(ports['metrics'])
        # The real learner, but a name its certificate does not carry, or
        # its metrics port: what came back is not verified, so retried,
        # and 1 with --once after --connect-attempts.
        K.expect('ownerd', 'the learner\'s certificate lacks --server-name', 'ETLS', 'run',
                 owner(port=port, extra=['--server-name', 'other.example'] + retry),
                 needle='check --server-name')
        K.expect('ownerd', 'learnerd\'s metrics port as the learner\'s address', 'ETLS', 'run',
                 owner(port=mport, extra=retry), needle='does not speak TLS')
        log = os.path.join(d, 'goodbye.log')
        p = subprocess.Popen(owner('owner-2', port), stdout=subprocess.DEVNULL,
                             stderr=open(log, 'w'))
        K.expect('ownerd', 'Goodbye UNKNOWN_IDENTITY from the verified learner', 'EREFUSED',
                 'run', log, proc=p, needle='add \'owner-2\' to learnerd\'s owners')
    finally:
        lp.kill()
        lp.wait()


def test(argv):
    bindir = argv[0]
    dp = os.path.join(bindir, 'tools', 'dpasync')
    learnerd = os.path.join(bindir, 'learner', 'learnerd')
    ownerd = os.path.join(bindir, 'owner', 'ownerd')
    K = Cases(read_table())
    d = tmpdir('exit-status')
    ok = False
    try:
        run([dp, 'gen', '--rows', '60,60', '--features', '3', '--out', os.path.join(d, 'data')])
        run([dp, 'certs', '--out', os.path.join(d, 'certs'), '--owners', '2'])
        tool_cases(K, dp, d)
        learnerd_cases(K, learnerd, d)
        ownerd_cases(K, learnerd, ownerd, d)
        ok = True
    finally:
        cleanup(d, ok)
    print('%d cases, each as the table says: %s' % (
        K.n, ', '.join('%s %d' % kv for kv in sorted(K.by_binary.items()))))


if __name__ == '__main__':
    main(test)
