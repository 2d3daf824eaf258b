#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance (Debian's prometheus against real daemons on loopback):
learnerd and 3 ownerd serve /metrics on ports chosen at run time; a
Prometheus with scrape_interval 1s scrapes all four while a job of about
20 s runs (slow owner clocks), and its HTTP API (/api/v1/query) shows, at
one evaluation time during the job:
- up == 1 for all four targets;
- every metric of the table in docs/operations.md §2 exists (histograms
  as _bucket, _sum and _count);
- 0 < dpasync_learner_iterations_total <= T, iterations_target == T,
  1 <= owners_connected <= 3, rate(iterations_total) > 0;
- the round-trip histogram has count > 0, its +Inf bucket equals the count,
  and histogram_quantile(0.5) lies in (0, query-timeout];
- the per-owner iteration counters sum to iterations_total (same scrape);
- each owner's epsilon as seen by the learner and by its ledger is in
  [0, epsilon], spent + left == epsilon (to the ledger's nano-epsilon), and
  answers_total > 0 and <= K_i <= T (K_i the learner's planned cap, read
  from its checkpoint), spent == answers * epsilon / K_i; each ownerd is
  connected; each ownerd's clock ticks >= its answers and its ticks skipped
  <= its ticks;
- dpasync_build_info is 1 for each target with its program and version,
  and the process metrics of every target are plausible (resident memory
  over 1 MB, 3 or more open descriptors, CPU seconds >= 0, started within
  the last 10 minutes);
Then deploy/grafana-dashboard.json: valid JSON, every expression uses only
metric names of that table, and each expression (with the Grafana
variables substituted) is accepted by this Prometheus and returns data.
The owners join Prometheus by file-based discovery, so Prometheus is
ready before the job starts.  The job then completes (learnerd exits 0); everything started is killed."""
import json, os, re, socket, subprocess, sys, time, urllib.parse, urllib.request
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, tmpdir, cleanup, main
from cluster import Cluster

PROMETHEUS = '/usr/bin/prometheus'
# 3 owners x 4 requests/s: about 20 s of job.  Prometheus applies newly
# discovered targets at most every 5 s, so the owners are scraped from about
# 5-7 s on; the checks need two scrapes of every target inside a 5 s window.
T, RATE, EPS = 240, '4', 1.0
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))

def documented_metrics():
    """{name: type} from the metrics table of docs/operations.md §2."""
    text = open(os.path.join(ROOT, 'docs', 'operations.md')).read()
    got = {}
    for m in re.finditer(r'^\| `((?:dpasync|process)_[a-z_]+)(?:\{[a-z_,]+\})?` \| (learnerd|ownerd|both) '
                         r'\| (counter|gauge|histogram) \|', text, re.M):
        got[m.group(1)] = m.group(3)
    check(len(got) >= 19, 'docs/operations.md metrics table: found only %d metrics' % len(got))
    return got

def series_names(doc):
    """Names a scrape exposes for the documented metrics."""
    names = set()
    for n, t in doc.items():
        names |= {n + s for s in ('_bucket', '_sum', '_count')} if t == 'histogram' else {n}
    return names

def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    p = s.getsockname()[1]
    s.close()
    return p

def read_port(path, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path):
            kv = dict(l.split('=') for l in open(path).read().split())
            return int(kv['metrics'])
        time.sleep(0.05)
    raise Fail('%s was not written' % path)

class Prom:
    def __init__(self, port):
        self.base = 'http://127.0.0.1:%d' % port

    def query(self, expr, at=None):
        q = {'query': expr}
        if at is not None:
            q['time'] = '%.3f' % at
        url = self.base + '/api/v1/query?' + urllib.parse.urlencode(q)
        try:
            body = json.loads(urllib.request.urlopen(url, timeout=10).read().decode())
        except urllib.error.HTTPError as e:
            raise Fail('prometheus rejected %r: %s' % (expr, e.read().decode()[:300]))
        check(body.get('status') == 'success', 'query %r: %s' % (expr, body))
        return body['data']['result']

    def values(self, expr, at=None):
        """[(labels, float)] of an instant vector."""
        return [(r['metric'], float(r['value'][1])) for r in self.query(expr, at)]

    def one(self, expr, at=None):
        v = self.values(expr, at)
        check(len(v) == 1, '%s: expected one series, got %d: %s' % (expr, len(v), v))
        return v[0][1]

def start_prometheus(c, d, learner_port):
    """Prometheus scraping learnerd, and the owners listed later in
    owners.json (file-based discovery, so the job need not wait for it)."""
    cfg = os.path.join(d, 'prometheus.yml')
    lines = ['global:', '  scrape_interval: 1s', '  scrape_timeout: 900ms', '  evaluation_interval: 1s',
             'scrape_configs:', '  - job_name: learnerd', '    static_configs:',
             "      - targets: ['127.0.0.1:%d']" % learner_port, '  - job_name: ownerd',
             '    file_sd_configs:', "      - files: ['%s']" % os.path.join(d, 'owners.json'),
             '        refresh_interval: 1s']
    open(cfg, 'w').write('\n'.join(lines) + '\n')
    port = free_port()
    log = open(os.path.join(d, 'prometheus.log'), 'w')
    p = subprocess.Popen([PROMETHEUS, '--config.file=' + cfg, '--web.listen-address=127.0.0.1:%d' % port,
                          '--storage.tsdb.path=' + os.path.join(d, 'tsdb'), '--log.level=warn'],
                         stdout=log, stderr=log)
    c.procs.append(p)
    end = time.time() + 30
    while time.time() < end:
        if p.poll() is not None:
            raise Fail('prometheus exited %d:\n%s' % (p.returncode, open(os.path.join(d, 'prometheus.log')).read()[-2000:]))
        try:
            if urllib.request.urlopen('http://127.0.0.1:%d/-/ready' % port, timeout=2).status == 200:
                return Prom(port)
        except OSError:
            pass
        time.sleep(0.2)
    raise Fail('prometheus did not become ready in 30 s')

def wait_scraped(prom, c, timeout=60):
    """An evaluation time at which every target is up, iterations > 0 and
    every owner has answered: all during the job."""
    end = time.time() + timeout
    while time.time() < end:
        check(c.learner.poll() is None, 'the job ended before prometheus saw it (make it slower)')
        at = time.time()
        up = prom.values('up', at)
        answers = prom.values('dpasync_owner_answers_total', at)
        it = prom.values('dpasync_learner_iterations_total', at)
        if (len(up) == 4 and all(v == 1 for _, v in up) and it and it[0][1] > 0
                and len(answers) == 3 and all(v > 0 for _, v in answers)
                and prom.values('dpasync_learner_rtt_seconds_count', at)
                and prom.values('rate(dpasync_learner_iterations_total[5s])', at)
                and len(prom.values('rate(dpasync_owner_answers_total[5s])', at)) == 3):
            return at
        time.sleep(0.5)
    raise Fail('prometheus never saw all four targets up with iterations and answers')

def check_series(prom, at, doc, caps):
    up = prom.values('up', at)
    jobs = sorted(l['job'] for l, _ in up)
    check(jobs == ['learnerd', 'ownerd', 'ownerd', 'ownerd'], 'up targets: %s' % up)
    check(all(v == 1 for _, v in up), 'a target is down: %s' % up)
    present = {l['__name__'] for l, _ in prom.values(
        'count by (__name__) ({__name__=~"dpasync_.+|process_.+"})', at)}
    missing = sorted(series_names(doc) - present)
    check(not missing, 'documented series missing in prometheus: %s' % missing)
    undocumented = sorted(present - series_names(doc))
    check(not undocumented, 'series not in the docs/operations.md table: %s' % undocumented)

    it = prom.one('dpasync_learner_iterations_total', at)
    check(0 < it <= T, 'iterations_total %g not in (0, %d]' % (it, T))
    check(prom.one('dpasync_learner_iterations_target', at) == T, 'iterations_target is not T')
    conn = prom.one('dpasync_learner_owners_connected', at)
    check(1 <= conn <= 3, 'owners_connected %g not in [1, 3]' % conn)
    check(prom.one('dpasync_learner_queue_depth', at) >= 0, 'negative queue depth')
    check(0 <= prom.one('dpasync_learner_inflight', at) <= 1, 'inflight not in [0, max-inflight 1]')
    rate = prom.one('rate(dpasync_learner_iterations_total[5s])', at)
    check(rate > 0, 'rate(iterations_total) is %g' % rate)

    cnt = prom.one('dpasync_learner_rtt_seconds_count', at)
    check(0 < cnt <= it + 1, 'rtt histogram count %g (iterations %g)' % (cnt, it))
    inf = prom.one('dpasync_learner_rtt_seconds_bucket{le="+Inf"}', at)
    check(inf == cnt, 'rtt +Inf bucket %g != count %g' % (inf, cnt))
    med = prom.one('histogram_quantile(0.5, dpasync_learner_rtt_seconds_bucket)', at)
    check(0 < med <= 5, 'median round trip %g s not in (0, query-timeout 5 s]' % med)
    check(prom.one('dpasync_learner_wait_seconds_count', at) > 0, 'wait histogram is empty')

    per = prom.values('dpasync_learner_owner_iterations_total', at)
    check(sorted(l['owner'] for l, _ in per) == ['owner-1', 'owner-2', 'owner-3'], 'owner labels: %s' % per)
    s = sum(v for _, v in per)
    check(s <= it, 'per-owner iterations sum %g > iterations %g' % (s, it))
    # One scrape of one single-threaded process: the counters agree exactly.
    check(s == it, 'per-owner iterations sum %g != iterations %g in the same scrape' % (s, it))
    for l, v in prom.values('dpasync_learner_owner_epsilon_spent', at):
        check(0 <= v <= EPS, 'learner: %s epsilon_spent %g not in [0, %g]' % (l['owner'], v, EPS))

    spent = {l['owner']: v for l, v in prom.values('dpasync_owner_epsilon_spent', at)}
    left = {l['owner']: v for l, v in prom.values('dpasync_owner_epsilon_left', at)}
    answers = {l['owner']: v for l, v in prom.values('dpasync_owner_answers_total', at)}
    connected = {l['owner']: v for l, v in prom.values('dpasync_owner_connected', at)}
    for o in ('owner-1', 'owner-2', 'owner-3'):
        check(0 < spent[o] <= EPS, '%s: epsilon_spent %g not in (0, %g]' % (o, spent[o], EPS))
        check(0 <= left[o] <= EPS, '%s: epsilon_left %g not in [0, %g]' % (o, left[o], EPS))
        check(abs(spent[o] + left[o] - EPS) <= 1e-9, '%s: spent + left = %.12g, not epsilon' % (o, spent[o] + left[o]))
        check(0 < answers[o] <= T, '%s: answers_total %g not in (0, T]' % (o, answers[o]))
        K = caps[o]
        check(answers[o] <= K <= T, '%s: answers_total %g, planned cap %d, T %d' % (o, answers[o], K, T))
        # Each answer costs eps/K with K the learner's planned K_i (sent in the
        # Welcome): spent is answers * eps/K, rounded down to nano-eps, plus
        # the share reserved for the next answer when one is held
        # (docs/ledger.md §9).
        check(any(abs(spent[o] - (answers[o] + r) * EPS / K) <= 1e-9 * (answers[o] + 2)
                  for r in (0, 1)),
              '%s: epsilon_spent %g for %g answers of %g each (and at most one reserved)' % (
                  o, spent[o], answers[o], EPS / K))
        check(connected[o] == 1, '%s: connected %g' % (o, connected[o]))
    # One scrape of each owner: its clock ticked at least once per answer.
    ticks = {l['owner']: v for l, v in prom.values('dpasync_owner_clock_ticks_total', at)}
    skipped = {l['owner']: v for l, v in prom.values('dpasync_owner_clock_ticks_skipped_total', at)}
    for o in ('owner-1', 'owner-2', 'owner-3'):
        check(ticks[o] >= answers[o] and 0 <= skipped[o] <= ticks[o],
              '%s: ticks %g, skipped %g, answers %g' % (o, ticks[o], skipped[o], answers[o]))
    info = prom.values('dpasync_build_info', at)
    check(sorted(l['program'] for l, _ in info) == ['learnerd', 'ownerd', 'ownerd', 'ownerd']
          and all(v == 1 and l['version'] and l['openssl'] and l['libuv'] for l, v in info),
          'dpasync_build_info: %s' % info)
    for name, lo, hi in (('process_resident_memory_bytes', 1e6, 1e11), ('process_open_fds', 3, 1e5),
                         ('process_cpu_seconds_total', 0, 3600),
                         ('process_start_time_seconds', time.time() - 600, time.time() + 60)):
        vals = prom.values(name, at)
        check(len(vals) == 4 and all(lo <= v <= hi for _, v in vals), '%s: %s' % (name, vals))
    print('at t=%.1f: iterations %g of %d, rate %.2f/s, owners connected %g, rtt count %g median %.2g s, '
          'answers %s, clock ticks %s' % (at, it, T, rate, conn, cnt, med,
                                          {o: int(v) for o, v in sorted(answers.items())},
                                          {o: int(v) for o, v in sorted(ticks.items())}))

METRIC_TOKEN = re.compile(r'\b(dpasync_[a-z_]+|[a-z_]+)\b')
PROMQL_WORDS = {'rate', 'increase', 'sum', 'by', 'on', 'ignoring', 'group_left', 'group_right',
                'histogram_quantile', 'le', 'instance', 'owner', 'job', 'avg', 'max', 'min'}

def dashboard_static(doc):
    """The dashboard's expressions, after checking the JSON and the names."""
    path = os.path.join(ROOT, 'deploy', 'grafana-dashboard.json')
    try:
        dash = json.load(open(path))
    except ValueError as e:
        raise Fail('%s: not JSON: %s' % (path, e))
    check(35 <= dash.get('schemaVersion', 0) <= 41, 'schemaVersion %s' % dash.get('schemaVersion'))
    var = [v for v in dash['templating']['list'] if v.get('type') == 'datasource']
    check(var and var[0].get('query') == 'prometheus', 'no Prometheus datasource variable')
    names = series_names(doc)
    exprs = [t['expr'] for p in dash['panels'] for t in p.get('targets', [])]
    check(len(exprs) >= 10, 'dashboard has only %d expressions' % len(exprs))
    used = set()
    for e in exprs:
        bare = re.sub(r'"[^"]*"', '""', e)   # label values are not names
        bare = re.sub(r'\[[^\]]*\]', '', bare)
        for tok in METRIC_TOKEN.findall(bare):
            if tok in PROMQL_WORDS:
                continue
            check(tok in names, 'dashboard expression uses %r, not a documented metric: %s' % (tok, e))
            used.add(tok)
    for want in ('dpasync_learner_iterations_total', 'dpasync_learner_owners_connected',
                 'dpasync_learner_queue_depth', 'dpasync_learner_rtt_seconds_bucket',
                 'dpasync_learner_owner_iterations_total', 'dpasync_learner_owner_epsilon_spent',
                 'dpasync_owner_answers_total', 'dpasync_owner_epsilon_left',
                 'dpasync_peer_wakeups_total', 'dpasync_peer_neighbours_connected'):
        check(want in used, 'dashboard has no panel on %s' % want)
    return dash, exprs

def check_dashboard(prom, at, dash, exprs):
    empty = []
    for e in exprs:
        q = e.replace('$__rate_interval', '5s').replace('$owner', '.*')
        check('$' not in q, 'unsubstituted variable in %s' % e)
        if not prom.query(q, at):
            empty.append(e)
    # Refusal/timeout/rejection increases are 0, never empty; every panel has data.
    check(not empty, 'dashboard expressions with no data during the job: %s' % empty)
    print('dashboard: %d panels, %d expressions, all accepted by prometheus with data' % (
        len(dash['panels']), len(exprs)))

def test(argv):
    bindir = argv[0]
    doc = documented_metrics()
    dash, exprs = dashboard_static(doc)
    check(os.path.exists(PROMETHEUS), '%s not found: install Debian\'s prometheus package '
          '(scripts/deps.sh)' % PROMETHEUS)
    d = tmpdir('prometheus')
    c = Cluster(bindir, d, owners=3, rows=500, features=4, T=T)
    try:
        c.start_learner()
        prom = start_prometheus(c, d, c.metrics_port)
        sd = []
        for i in (1, 2, 3):
            pf = c.path('owner-%d.ports' % i)
            c.start_owner(i, rate=RATE, extra=['--metrics-listen', '127.0.0.1:0', '--port-file', pf])
            sd.append({'targets': ['127.0.0.1:%d' % read_port(pf)], 'labels': {'owner': 'owner-%d' % i}})
        with open(os.path.join(d, 'owners.json.tmp'), 'w') as f:
            json.dump(sd, f)
        os.rename(os.path.join(d, 'owners.json.tmp'), os.path.join(d, 'owners.json'))
        t_owners = time.time()
        at = wait_scraped(prom, c)
        print('checks at %.1f s after the owners started' % (at - t_owners))
        check_series(prom, at, doc, dict(zip(c.names, c.settings()['K'])))
        check_dashboard(prom, at, dash, exprs)
        out = c.wait_learner(timeout=120)
        check('done k=%d' % T in out, 'learnerd did not report done: %r' % out)
    finally:
        c.close()
        cleanup(d)

main(test)
