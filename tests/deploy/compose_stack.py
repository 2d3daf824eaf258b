# SPDX-License-Identifier: Apache-2.0
"""The compose stack for real (docs/deploy.md §9): deploy/docker-compose.yml
with 3 owners and Prometheus on a Docker engine, on an internal network the
test creates (nothing outside it is reachable, no host port is bound)."""
import json, os, re, struct, subprocess, tempfile, time, urllib.parse
from harness import Fail, check
from engine import ROOT

OWNERS = ['owner-1', 'owner-2', 'owner-3']
# The compose file's default clocks (deploy/compose/generate.sh), which the
# test leaves as shipped: the job must outlast the test's two kills, each
# seen through `docker exec`, which takes seconds on a loaded machine, and a
# watcher must be able to follow it.  At 4/2/1 the job of T = 176 took 30 s
# from its first query; at 2/1/0.5 it takes about 45 s.
RATES = [2, 1, 0.5]
# SIGKILL to ownerd inside its container (no procps in the image).
KILL_OWNERD = ('for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = ownerd ] && '
               'kill -KILL "${p#/proc/}" && exit 0; done; exit 1')
PNG = b'\x89PNG\r\n\x1a\n'

# The documented series (docs/operations.md §2); histograms appear as _count.
LEARNER_SERIES = ['iterations_total', 'iterations_target', 'owners_connected', 'queue_depth',
                  'inflight', 'rtt_seconds_count', 'wait_seconds_count', 'owner_iterations_total',
                  'owner_epsilon_spent', 'refusals_total', 'query_timeouts_total',
                  'connections_rejected_total', 'connections_pending', 'connections_evicted_total',
                  'connections_refused_total']
OWNER_SERIES = ['answers_total', 'refusals_total', 'epsilon_spent', 'epsilon_left',
                'gradient_seconds_count', 'connected', 'reconnects_total']

class Stack:
    def __init__(self, eng, d, image, prom_image, tools_image):
        self.eng, self.d = eng, d
        self.project = 'dpdeploy%d' % os.getpid()
        self.image, self.prom, self.tools = image, prom_image, tools_image
        self.compose = shutilwhich('docker-compose')
        self.override = os.path.join(d, 'internal.yml')
        # An internal network: the containers reach each other and nothing
        # else, and no port is published on the host.
        open(self.override, 'w').write('version: "3.8"\nnetworks:\n  default:\n    internal: true\n')
        self.env = dict(eng.env, DP_IMAGE=image, DP_PROMETHEUS_IMAGE=prom_image,
                        COMPOSE_PROJECT_NAME=self.project, DOCKER_HOST=os.environ.get('DOCKER_HOST', ''))
        if not self.env['DOCKER_HOST']:
            del self.env['DOCKER_HOST']
        self.log = []
        self.up_done = False

    def dc(self, args, ok=True, timeout=600):
        cmd = [self.compose, '-p', self.project, '-f', os.path.join(ROOT, 'deploy', 'docker-compose.yml'),
               '-f', self.override] + list(args)
        p = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout)
        if ok and p.returncode != 0:
            raise Fail('docker-compose %s failed (%d):\n%s%s' % (' '.join(args), p.returncode,
                                                                p.stdout[-3000:], p.stderr[-3000:]))
        return p

    def cid(self, service):
        out = self.dc(['ps', '-a', '-q', service]).stdout.split()
        check(len(out) == 1, 'compose: want one container for %s, have %r' % (service, out))
        return out[0]

    def state(self, service):
        return json.loads(self.eng.run(['inspect', '-f', '{{json .State}}', self.cid(service)]).stdout)

    def logs(self, service):
        return self.dc(['logs', '--no-color', service], ok=False).stdout

    def volume(self, name):
        return '%s_%s' % (self.project, name)

    def in_volumes(self, vols, cmd, image=None, ok=True, timeout=300):
        """Run cmd (a shell line) in a fresh container of the runtime image
        with the named volumes (name -> path) mounted, no network."""
        args = ['run', '--rm', '--network', 'none']
        for v, path in vols.items():
            args += ['-v', '%s:%s' % (self.volume(v) if not v.startswith('/') else v, path)]
        args += [image or self.image, '/bin/bash', '-c', cmd]
        return self.eng.run(args, ok=ok, timeout=timeout)

    def trace_rows(self):
        p = self.eng.run(['exec', self.cid('learner'), '/bin/bash', '-c',
                          'wc -l < /var/lib/dpasync/out/trace.csv 2>/dev/null || echo 1'], ok=False)
        try:
            return int(p.stdout.strip() or 1) - 1
        except ValueError:
            return 0

    def wait_rows(self, n, secs):
        end = time.time() + secs
        while time.time() < end:
            if self.trace_rows() >= n:
                return
            st = self.state('learner')
            check(st['Status'] in ('running', 'restarting', 'created'),
                  'learner is %s (exit %s) before %d iterations:\n%s'
                  % (st['Status'], st.get('ExitCode'), n, self.logs('learner')[-3000:]))
            time.sleep(0.3)
        raise Fail('the learner did not reach %d iterations in %d s:\n%s' % (n, secs, self.logs('learner')[-3000:]))

    def ledger(self, owner, container=None):
        cmd = 'dpasync ledger /var/lib/dpasync/state/ledger'
        if container:
            p = self.eng.run(['exec', container, '/bin/bash', '-c', cmd])
        else:
            p = self.in_volumes({owner + '-state': '/var/lib/dpasync/state'}, cmd)
        # The ledger directory of one job per state volume (docs/ledger.md §8).
        info = json.loads(p.stdout.strip().splitlines()[-1])
        check(info.get('jobs_count') == 1, '%s: expected one job in its ledger: %r' % (owner, info))
        return info['jobs'][0]

    def prom_api(self, path, params):
        """GET Prometheus' HTTP API from a container on the stack's network."""
        q = path + '?' + urllib.parse.urlencode(params)
        sh = ('exec 3<>/dev/tcp/prometheus/9090 && printf "GET %s HTTP/1.0\\r\\nHost: prometheus\\r\\n\\r\\n" >&3 '
              '&& cat <&3' % q.replace('%', '%%'))
        net = '%s_default' % self.project
        p = self.eng.run(['run', '--rm', '--network', net, self.image, '/bin/bash', '-c', sh])
        # (text mode has turned the CRLFs into newlines)
        head, _, body = p.stdout.partition('\n\n')
        check(' 200 ' in head.split('\n')[0], 'Prometheus %s: %s' % (path, head[:200]))
        r = json.loads(body)
        check(r.get('status') == 'success', 'Prometheus %s: %s' % (path, body[:300]))
        return r['data']

    def down(self):
        p = self.dc(['--profile', 'tools', 'down', '-v', '--remove-orphans'], ok=False, timeout=300)
        return p.returncode

def shutilwhich(prog):
    import shutil
    w = shutil.which(prog)
    check(w is not None, 'no %s (Debian package docker-compose; scripts/deps.sh installs it)' % prog)
    return w

def png_size(path):
    b = open(path, 'rb').read(32)
    check(b[:8] == PNG, '%s is not a PNG' % path)
    return struct.unpack('>II', b[16:24])

def scenario(eng, d, images, out):
    """out: dict for the figures the caller prints."""
    s = Stack(eng, d, images['runtime'], images['prometheus'], images['tools'])
    t0 = time.time()
    try:
        # The owners (with the one-shot certs and data they depend on) and
        # Prometheus first, the learner once Prometheus has scraped every
        # owner (its self-registered file_sd target up): the first scrape
        # took 20-66 s on a loaded machine, and a job started with the
        # owners had once ended before it.  Until the learner is up the
        # owners poll for it, as they do between jobs.
        s.dc(['up', '-d', '--no-build'] + OWNERS)
        s.dc(['up', '-d', '--no-build', '--no-deps', 'prometheus'])
        end = time.time() + 180
        while True:
            try:
                r = s.prom_api('/api/v1/query', {'query': 'up{job="ownerd"} == 1'})
            except Fail as e:          # not listening yet
                r = {'result': [], 'error': str(e)[-300:]}
            if {x['metric'].get('owner') for x in r['result']} >= set(OWNERS):
                break
            check(time.time() < end, 'Prometheus did not scrape every owner in 180 s: %r' % r)
            time.sleep(1)
        out['owners scraped s'] = time.time() - t0
        s.dc(['up', '-d', '--no-build', '--no-deps', 'learner'])
        # A crash: once the job is under way, owner-1's ownerd is killed with
        # SIGKILL inside its container (as the kernel's OOM killer would):
        # its restart policy (on-failure) brings the container back.
        s.wait_rows(20, 240)
        c1 = s.cid('owner-1')
        before1 = s.ledger('owner-1', c1)
        eng.run(['exec', c1, '/bin/bash', '-c', KILL_OWNERD])
        # `docker kill -s KILL` of owner-2's container: Docker counts it as
        # a stop by hand and applies no restart policy (any policy); the
        # operator starts it again, as here.
        s.wait_rows(35, 240)
        c2 = s.cid('owner-2')
        before2 = s.ledger('owner-2', c2)
        eng.run(['kill', '-s', 'KILL', c2])
        time.sleep(2)
        st2 = s.state('owner-2')
        check(st2['Status'] == 'exited' and st2['ExitCode'] == 137,
              'owner-2 after docker kill: %s %s' % (st2['Status'], st2['ExitCode']))
        s.dc(['start', 'owner-2'])
        # Wait for done.
        end = time.time() + 300
        while True:
            st = s.state('learner')
            if st['Status'] == 'exited':
                break
            check(time.time() < end, 'the compose job did not finish in 300 s:\n' + s.logs('learner')[-3000:])
            time.sleep(0.5)
        llog = s.logs('learner')
        check(st['ExitCode'] == 0, 'learner exit %d:\n%s' % (st['ExitCode'], llog[-3000:]))
        m = re.findall(r'done k=(\d+)', llog)
        check(m, 'no "done k=" in the learner log:\n' + llog[-3000:])
        out['compose job s'] = time.time() - t0
        ck = json.loads(s.in_volumes({'learner-out': '/o'}, 'cat /o/checkpoint.json').stdout)
        job, plan = ck['job'], ck['job']['plan']
        T = job['T']
        check(int(m[-1]) == T, 'done k=%s, T = %d' % (m[-1], T))
        caps = dict(zip(job['owners'], plan['answers_cap']))
        eps = 1.0              # every owner's epsilon in the compose file

        # The crashed owners restarted and resumed from their ledgers.
        rc1 = json.loads(eng.run(['inspect', '-f', '{{.RestartCount}}', s.cid('owner-1')]).stdout)
        check(rc1 >= 1, 'owner-1 was not restarted after SIGKILL (RestartCount %d)' % rc1)
        for o, before in (('owner-1', before1), ('owner-2', before2)):
            # ownerd exits 0 after Done; an ownerd that serves successive
            # jobs may instead still be running, waiting for the next.
            st = s.state(o)
            check((st['Status'] == 'exited' and st['ExitCode'] == 0) or st['Status'] == 'running',
                  '%s ended %s/%s:\n%s' % (o, st['Status'], st['ExitCode'], s.logs(o)[-2000:]))
            # Its second start opened the ledger it had written before.
            starts = [int(x) for x in re.findall(r'owner: starting id=%s .*? answers=(\d+)' % o, s.logs(o))]
            check(len(starts) == 2 and starts[0] == 0 and starts[1] >= before['answers'],
                  '%s: starts with ledger answers %r, %d before the kill' % (o, starts, before['answers']))
        ledgers = {}
        for o in OWNERS:
            L = s.ledger(o)
            ledgers[o] = L
            check(L['answers'] <= caps[o] and L['answers'] <= L['answers_cap'],
                  '%s: %d answers, cap %d (plan %d)' % (o, L['answers'], L['answers_cap'], caps[o]))
            check(L['epsilon_spent'] <= L['epsilon_cap'] + 1e-12 and L['epsilon_cap'] <= eps + 1e-12,
                  '%s: spent %r of %r' % (o, L['epsilon_spent'], L['epsilon_cap']))
        for o, before in (('owner-1', before1), ('owner-2', before2)):
            # The others' caps could not cover T without more of its answers
            # (true unless the kill came very late): it answered after the
            # restart, on top of its ledger.
            need = T - sum(caps[x] for x in OWNERS if x != o)
            if before['answers'] < need:
                check(ledgers[o]['answers'] > before['answers'],
                      '%s answered nothing after its restart (%d before the kill, %d at the end)'
                      % (o, before['answers'], ledgers[o]['answers']))
        out['ledgers'] = {o: (L['answers'], L['answers_cap'], L['epsilon_spent']) for o, L in ledgers.items()}
        out['killed at'] = {'owner-1': before1['answers'], 'owner-2': before2['answers']}

        # eval, and the simulator's range for what learnerd planned.
        ev = s.dc(['--profile', 'tools', 'run', '--rm', '--no-deps', 'eval'])
        psi = json.loads(ev.stdout.strip().splitlines()[-1])['psi']
        K = ','.join(str(caps[o]) for o in OWNERS)
        data = {o + '-data': '/var/lib/dpasync/owners/' + o for o in OWNERS}
        sim = ('dpasync sim --target y --bias --epsilon 1 --repeats 20 --seed 4 --psi-every %d --T %d --eta %r '
               '--clip %r --answers-cap %s --rates %s --out /tmp/sim %s >/dev/null && cat /tmp/sim/summary.json'
               % (T, T, job['eta'], job['clip_l1'], K, ','.join(map(str, RATES)),
                  ' '.join('/var/lib/dpasync/owners/%s/data.csv' % o for o in OWNERS)))
        simpsi = json.loads(s.in_volumes(data, sim).stdout)['psi']
        lo, hi = min(simpsi) / 2, max(simpsi) * 2
        out['psi'] = (psi, min(simpsi), max(simpsi), T)
        check(lo <= psi <= hi, 'compose psi %.4g outside the simulator\'s [%.4g, %.4g] (T %d)'
              % (psi, lo, hi, T))

        # Prometheus, through its HTTP API from a container on the network.
        since = str(t0 - 60)
        series = s.prom_api('/api/v1/series', {'match[]': '{__name__=~"dpasync_.+"}', 'start': since})
        names = {x['__name__'] for x in series}
        want = {'dpasync_learner_' + n for n in LEARNER_SERIES} | {'dpasync_owner_' + n for n in OWNER_SERIES}
        missing = sorted(want - names)
        check(not missing, 'Prometheus lacks %s' % ', '.join(missing))
        scraped = {x.get('owner') for x in series if x['__name__'] == 'dpasync_owner_answers_total'}
        check(scraped >= set(OWNERS), 'Prometheus scraped owners %r' % sorted(map(str, scraped)))
        r = s.prom_api('/api/v1/query', {'query': 'max(max_over_time(dpasync_learner_iterations_total[1h]))'})
        its = float(r['result'][0]['value'][1]) if r['result'] else 0
        # A watcher follows the default job to its end: scraped every 2 s
        # at about 3.5 iterations a second, the last scrape before learnerd
        # exits misses a few; 0.8 T leaves 10 s of missed scrapes.
        check(0.8 * T <= its <= T, 'Prometheus: learner iterations %r (T %d)' % (its, T))
        out['prometheus'] = (len(names & want), len(want), its)

        # The tools image: plot and report of the learner's trace.
        pd = tempfile.mkdtemp(prefix='dp-plots-', dir=d)
        os.chmod(pd, 0o777)
        eng.run(['run', '--rm', '--network', 'none', '-v', '%s:/o:ro' % s.volume('learner-out'),
                 '-v', '%s:/plots' % pd, images['tools'], '/bin/bash', '-c',
                 'cp /o/trace.csv /o/model.json /o/checkpoint.json /plots/ && '
                 'dpasync plot --kind owners --out /plots/owners.png /plots/trace.csv && '
                 'dpasync report /plots'])
        w, h = png_size(os.path.join(pd, 'owners.png'))
        check(w >= 300 and h >= 200 and os.path.getsize(os.path.join(pd, 'owners.png')) > 2000,
              'owners.png is %dx%d' % (w, h))
        rep = open(os.path.join(pd, 'report.md')).read()
        pngs = re.findall(r'\((report-[\w.-]+\.png)\)', rep)
        check(pngs, 'report.md names no figure')
        for f in pngs:
            png_size(os.path.join(pd, f))
        out['plots'] = 1 + len(pngs)
    except Exception:
        for svc in ['learner'] + OWNERS + ['prometheus']:
            try:
                print('--- %s log (tail)\n%s' % (svc, s.logs(svc)[-1500:]))
            except Exception:
                pass
        raise
    finally:
        rc = s.down()
        left = eng.run(['ps', '-a', '-q', '--filter', 'label=com.docker.compose.project=' + s.project]).stdout.split()
        vols = eng.run(['volume', 'ls', '-q', '--filter', 'label=com.docker.compose.project=' + s.project]).stdout.split()
        out['down'] = (rc, len(left), len(vols))
    check(rc == 0 and not left and not vols,
          'down -v left %d containers, %d volumes (exit %d)' % (len(left), len(vols), rc))
