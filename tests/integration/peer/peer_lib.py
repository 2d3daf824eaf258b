# SPDX-License-Identifier: Apache-2.0
"""What the tests of ownerd --peer share (peer_agents.py, peer_serve.py):
agents as real processes on loopback, their data, certificates, graph and
address book, and readers of their ledgers and models.  BUILD_DIR is the
first argument of the test that imports this."""
import json, os, subprocess, sys, time, urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, run

BUILD = os.path.abspath(sys.argv[1])
DPASYNC = os.path.join(BUILD, 'tools', 'dpasync')
OWNERD = os.path.join(BUILD, 'owner', 'ownerd')


class Agent:
    def __init__(self, root, ident, certs, graph, peers, data, extra):
        self.id = ident
        self.dir = os.path.join(root, 'state-' + ident)
        os.makedirs(self.dir, exist_ok=True)
        self.args = [OWNERD, '--peer', '--graph', graph, '--peers', peers,
                     '--ca', os.path.join(certs, 'ca.crt'),
                     '--cert', os.path.join(certs, ident + '.crt'),
                     '--key', os.path.join(certs, ident + '.key'),
                     '--data', data, '--ledger', os.path.join(self.dir, 'ledger'),
                     '--port-file', os.path.join(self.dir, 'port'),
                     '--linger', '30'] + [str(a) for a in extra]
        self.proc = None
        self.runs = 0

    def start(self):
        pf = os.path.join(self.dir, 'port')
        if os.path.exists(pf):
            os.unlink(pf)
        self.runs += 1
        self.log = open(os.path.join(self.dir, 'log%d' % self.runs), 'w')
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT)

    def port(self, deadline):
        pf = os.path.join(self.dir, 'port')
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise Fail('%s exited %d at start: %s' % (self.id, self.proc.returncode,
                                                          self.logtext()))
            if os.path.exists(pf):
                for line in open(pf):
                    if line.startswith('peer='):
                        return int(line.split('=')[1])
            time.sleep(0.02)
        raise Fail('%s wrote no port file' % self.id)

    def logtext(self):
        out = ''
        for r in range(1, self.runs + 1):
            p = os.path.join(self.dir, 'log%d' % r)
            if os.path.exists(p):
                out += open(p).read()
        return out

    def trace_rows(self):
        p = os.path.join(self.dir, 'ledger', 'trace.csv')
        if not os.path.exists(p):
            return 0
        return max(0, len(open(p).read().splitlines()) - 1)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def write_peers(path, agents):
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        f.write('id,addr\n')
        for a, port in agents:
            f.write('%s,127.0.0.1:%d\n' % (a, port))
    os.replace(tmp, path)


def write_graph(path, edges):
    with open(path, 'w') as f:
        f.write('a,b,w\n')
        for a, b, w in edges:
            f.write('%s,%s,%r\n' % (a, b, w))


def setup(root, ids, rows, features=3, seed=1, names=()):
    data = os.path.join(root, 'data')
    run([DPASYNC, 'gen', '--rows', ','.join(map(str, rows)), '--out', data, '--task',
         'classification', '--features', features, '--seed', seed])
    # gen names its files owner-1..N; the agents are named after ids
    for k, ident in enumerate(ids):
        os.replace(os.path.join(data, 'owner-%d.csv' % (k + 1)),
                   os.path.join(data, ident + '.csv'))
    certs = os.path.join(root, 'certs')
    run([DPASYNC, 'certs', '--out', certs, '--names', ','.join(list(ids) + list(names)),
         '--peer'])
    return data, certs


def launch(root, ids, certs, graph, data, extra_of):
    peers = os.path.join(root, 'peers.csv')
    write_peers(peers, [])
    graph_of = graph if callable(graph) else (lambda i: graph)
    agents = {i: Agent(root, i, certs, graph_of(i), peers, os.path.join(data, i + '.csv'),
                       extra_of(i)) for i in ids}
    for a in agents.values():
        a.start()
    deadline = time.time() + 60
    ports = [(i, agents[i].port(deadline)) for i in ids]
    write_peers(peers, ports)
    return agents, peers


def wait_all(agents, timeout):
    deadline = time.time() + timeout
    for a in agents.values():
        try:
            a.proc.wait(max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            for b in agents.values():
                b.kill()
            raise Fail('agent %s did not finish within %g s:\n%s' % (a.id, timeout,
                                                                     a.logtext()[-3000:]))
        check(a.proc.returncode == 0, 'agent %s exited %d:\n%s' % (a.id, a.proc.returncode,
                                                                    a.logtext()[-3000:]))


def peer_metrics(agent):
    """The dpasync_peer_* series of an agent started with --metrics-listen
    (its port file's metrics= line), or None when it cannot be read (not
    yet listening, or gone)."""
    try:
        kv = dict(l.split('=') for l in open(os.path.join(agent.dir, 'port')).read().split())
        with urllib.request.urlopen('http://127.0.0.1:%s/metrics' % kv['metrics'],
                                    timeout=2) as r:
            text = r.read().decode()
    except (OSError, KeyError, ValueError):
        return None
    return {l.split()[0]: float(l.split()[1]) for l in text.splitlines()
            if l.startswith('dpasync_peer_')}


def ledger(path, whole=False):
    """The agent's ledger: job "peer" of its ledger directory (docs/ledger.md §8);
    whole: (the directory's summary, the job)."""
    p = run([DPASYNC, 'ledger', path])
    info = json.loads(p.stdout.splitlines()[0])
    jobs = [j for j in info.get('jobs', []) if j.get('job') == 'peer']
    check(len(jobs) == 1 and info.get('jobs_count') == 1,
          '%s: expected the one job "peer", got %r' % (path, info))
    return (info, jobs[0]) if whole else jobs[0]


def check_gaussian(path, eps, delta, answers, read=None):
    """A Gaussian agent's ledger (read: ledger(path, whole=True) already
    read): rho charges, `answers` of them, and its epsilon at its delta (the
    directory's best valid bound, docs/ledger.md §8; the agent's one job)
    within its --epsilon."""
    info, led = read or ledger(path, whole=True)
    check(led.get('mechanism') == 'gaussian' and led.get('unit') == 'rho' and
          led.get('delta') == delta and led['answers'] == answers and
          led['rho_spent'] <= led['rho_cap'] + 1e-12 and info['lifetime_delta'] == delta and
          0 < info['lifetime_epsilon_spent'] <= eps + 1e-9,
          '%s: Gaussian (epsilon %g, delta %g, %d answers) but %r' % (path, eps, delta,
                                                                     answers, info))
    return info['lifetime_epsilon_spent']


def theta(path):
    with open(path) as f:
        return json.load(f)['theta']


def ring_with_chords(root, prefix, n=20):
    """n agents PREFIX00.. on a ring (weight 1) with chords to the fifth
    next (0.5), degree 4, rows 20 + 3i, 4 features: ids, rows, data and
    certificate directories, and the graph file."""
    ids = ['%s%02d' % (prefix, i) for i in range(n)]
    rows = [20 + 3 * i for i in range(n)]
    data, certs = setup(root, ids, rows, features=4)
    edges = []
    for i in range(n):
        edges.append((ids[i], ids[(i + 1) % n], 1.0))
        edges.append((ids[i], ids[(i + 5) % n], 0.5))
    graph = os.path.join(root, 'graph.csv')
    write_graph(graph, edges)
    return ids, rows, data, certs, graph
