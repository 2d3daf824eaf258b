#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The deployment files (issue 4) without a Docker engine, systemd or a
Kubernetes cluster.  Every check runs; a missing tool is a failure naming
the Debian package to install, never a skip.  Runs as root (to run services
as uid 10001 or with a reduced capability set, as Docker and Kubernetes do).

Dockerfile (deploy/Dockerfile)
  - it has the targets runtime, tools, systemd and prometheus;
  - the build stage is debian:12, installs with scripts/deps.sh and builds
    the Debian package with scripts/deb.sh; the runtime stage is Debian 12,
    non-root, has a HEALTHCHECK and an ENTRYPOINT;
  - the build stage's build command is run as Docker would run it
    (/bin/sh -c, its ARGs in the environment) on a copy of exactly the files
    its COPY lines copy: it must build one dpasync_*.deb, which the runtime
    stage installs with apt from the build stage's DEB_DIR, and the
    package's three binaries must run (--version);
  - every shared library those binaries load (ldd) comes from a package the
    runtime stage installs or their dependencies, and so does everything
    the .deb Depends on (it is installed without package lists);
  - lintian finds no error and no warning in that package (the image build
    skips it);
  - the HEALTHCHECK command, run with bash, passes against a live learnerd
    metrics endpoint and fails against a closed port and a TLS port.
scripts/build.sh: refuses to delete a directory that is not a build.
Certificates: the two code blocks of docs/deploy.md 2.3 (an owner's own key
  and request, signed with openssl) run as written and the certificate runs
  a job with learnerd.
Compose (deploy/docker-compose.yml, deploy/compose/)
  - `docker-compose config` (Debian's docker-compose) accepts the file, and
    the file for 5 owners from generate.sh; the committed file is exactly
    generate.sh's default output; every service's image is built from
    deploy/Dockerfile (no registry), and the default clocks are 2/1/0.5;
  - promtool accepts compose/prometheus.yml; shellcheck the helper scripts;
  - the services are run without Docker, from the resolved configuration:
    each one's command with its environment, as its user (uid 10001, or
    root) with only its cap_add capabilities (setpriv), its named volumes as
    directories shared between services, each owned as Docker would leave it
    at its first mount: a job runs end to end (certs, data, learner, 3
    owners, eval), the model is in the learner-out volume, each owner's
    ledger in its own state volume, the CA key only in the `ca` volume, one
    Prometheus target file per owner; re-running is idempotent, an added
    owner gets a certificate from the existing CA, a finished owner does not
    reconnect.
systemd (deploy/systemd/)
  - `systemd-analyze verify` on both units (binary paths pointed at the
    build), no output; `systemd-analyze security --offline` exposure <= 2.0
    (the same units with the hardening lines removed score above it: the
    check can fail);
  - the required keys are present (parsed as INI: User, ProtectSystem=strict,
    StateDirectory, NoNewPrivileges, PrivateTmp, ProtectHome,
    RestrictAddressFamilies, empty CapabilityBoundingSet, Restart=on-failure,
    RestartPreventExitStatus=2);
  - each ExecStart, with %d/%i and /etc/dpasync resolved to a test tree,
    plus --check-config, is accepted by the daemon (the sample owner config
    too);
  - a job with both daemons under strace -f: every system call is in the
    unit's SystemCallFilter, every socket family in RestrictAddressFamilies.
Kubernetes (deploy/k8s/)
  - every YAML document parses and has apiVersion, kind, metadata.name;
    the learner is a one-shot Job (one pod at a time, restartPolicy Never,
    exit 2 fails the Job, no probe waiting for an idle wrapper) with a PVC
    and a Service; owners are a StatefulSet with volumeClaimTemplates; every
    mounted volume is defined, every ConfigMap exists, every Secret is
    created in docs/deploy.md; pods run as non-root without privileges;
    every object validates against the Kubernetes API schemas (npm
    kubernetes-models: types, required fields, enumerations; it does not
    flag unknown fields) and a broken Job does not;
  - run.sh (the wrapper in the ConfigMap) and the ConfigMaps' configs run a
    job as uid 10001 on files laid out as kubelet does with fsGroup 10001:
    learner + 3 owners with identities from their pod names, keys copied
    0600, synthetic data equal to a joint `dpasync gen`; after the job the
    learner's wrapper exits 0 and the owners' idle and exit on SIGTERM; SIGTERM during a run reaches learnerd
    (exit 0, no idling); an owner without a Secret is refused; the
    standalone owner's config passes --check-config.
"""
import glob, hashlib, json, math, os, re, shlex, shutil, signal, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, run, tmpdir, cleanup, main

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
DEPLOY = os.path.join(ROOT, 'deploy')

TOOLS = {  # program -> Debian package
    'docker-compose': 'docker-compose', 'systemd-analyze': 'systemd', 'promtool': 'prometheus',
    'shellcheck': 'shellcheck', 'meson': 'meson', 'ninja': 'ninja-build', 'ldd': 'libc-bin',
    'dpkg': 'dpkg', 'apt-cache': 'apt', 'openssl': 'openssl', 'bash': 'bash', 'setpriv': 'util-linux',
    'strace': 'strace', 'dpkg-buildpackage': 'dpkg-dev', 'dh': 'debhelper', 'fakeroot': 'fakeroot',
    'dpkg-deb': 'dpkg', 'lintian': 'lintian',
}

procs = []

def need_tools():
    missing = ['%s (Debian package %s)' % (t, p) for t, p in TOOLS.items() if shutil.which(t) is None]
    try:
        import yaml  # noqa: F401
    except ImportError:
        missing.append('python3 yaml module (Debian package python3-yaml)')
    check(not missing, 'missing tools, add them to scripts/deps.sh: ' + ', '.join(missing))
    # The services run as the users Docker and Kubernetes would use (uid
    # 10001, or root with only the listed capabilities): that needs root.
    check(os.geteuid() == 0, 'must run as root (scripts/test.sh does) to run the services as uid 10001')

def sha(path):
    return hashlib.sha256(open(path, 'rb').read()).hexdigest()

def start(cmd, env=None, log=None, cwd=None):
    p = subprocess.Popen([str(c) for c in cmd], env=env, cwd=cwd, text=True,
                         stdout=subprocess.PIPE, stderr=open(log, 'w') if log else subprocess.DEVNULL)
    procs.append(p)
    return p

def wait_file(path, p, what, secs=20):
    for _ in range(int(secs / 0.05)):
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return
        if p is not None and p.poll() is not None:
            raise Fail('%s exited (%d) before writing %s' % (what, p.returncode, path))
        time.sleep(0.05)
    raise Fail('%s did not write %s in %d s' % (what, path, secs))

def ports(path):
    return dict(l.split('=', 1) for l in open(path).read().split())

def finish(p, secs, what, log=None):
    try:
        out, _ = p.communicate(timeout=secs)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise Fail('%s did not finish in %d s%s' % (what, secs,
                   ('; log:\n' + open(log).read()[-3000:]) if log else ''))
    return p.returncode, out

def watch(lp, llog, owners, secs, until=None):
    """Wait until the learner process ends (or until() is true), failing
    early with the log of an owner that exits with an error."""
    end = time.time() + secs
    while (lp.poll() is None) if until is None else not until():
        for op, log in owners:
            if op.poll() not in (None, 0):
                raise Fail('owner exited %d during the job; its log:\n%s\nlearner log:\n%s'
                           % (op.returncode, open(log).read()[-3000:], open(llog).read()[-2000:]))
        if until is not None:
            check(lp.poll() is None, 'learner exited (%s):\n%s' % (lp.returncode, open(llog).read()[-3000:]))
        check(time.time() < end, 'the job did not finish in %d s; learner log:\n%s'
              % (secs, open(llog).read()[-3000:]))
        time.sleep(0.1)

# ---------------------------------------------------------------- Dockerfile

def dockerfile_stages():
    text = open(os.path.join(DEPLOY, 'Dockerfile')).read()
    lines, cur = [], ''
    for raw in text.splitlines():
        s = raw.strip()
        if s.startswith('#'):       # Docker drops comment lines, also inside continuations
            continue
        if s.endswith('\\'):
            cur += s[:-1] + ' '
            continue
        cur += s
        if cur.strip():
            lines.append(cur.strip())
        cur = ''
    stages = []
    for l in lines:
        word, _, rest = l.partition(' ')
        word = word.upper()
        if word == 'FROM':
            m = re.match(r'(\S+)(?:\s+AS\s+(\S+))?$', rest, re.I)
            stages.append({'from': m.group(1), 'name': m.group(2), 'ins': []})
        elif stages:
            stages[-1]['ins'].append((word, rest))
    return stages

def check_dockerfile(t):
    stages = dockerfile_stages()
    check(len(stages) >= 2, 'Dockerfile: want a build and a runtime stage, got %d' % len(stages))
    named = {st['name']: st for st in stages if st['name']}
    for n in ('runtime', 'tools', 'systemd', 'prometheus'):
        check(n in named, 'Dockerfile: no target %s (docs/deploy.md §5)' % n)
    build, rt = stages[0], named['runtime']
    # The runtime stage and the stages it is built FROM (its libraries).
    chain, st = [], rt
    while st is not None:
        chain.append(st)
        st = named.get(st['from'])
    base = chain[-1]
    check(build['from'] == 'debian:12' and build['name'] == 'build',
          'Dockerfile: first stage must be "FROM debian:12 AS build", is %s' % build['from'])
    check(re.match(r'debian:12(-slim)?$', base['from']) is not None,
          'Dockerfile: runtime stage must be Debian 12, is %s' % base['from'])
    runs = [r for w, r in build['ins'] if w == 'RUN']
    check(any('scripts/deps.sh' in r for r in runs), 'Dockerfile: the build stage does not run scripts/deps.sh')
    brun = [r for r in runs if 'scripts/deb.sh' in r]
    check(len(brun) == 1, 'Dockerfile: the build stage must run scripts/deb.sh exactly once')
    kw = {w for w, _ in rt['ins']}
    for k in ('USER', 'HEALTHCHECK', 'ENTRYPOINT'):
        check(k in kw, 'Dockerfile: runtime stage has no %s' % k)
    user = [r for w, r in rt['ins'] if w == 'USER'][-1]
    check(user.split(':')[0] not in ('0', 'root'), 'Dockerfile: runtime USER is root')

    # The build stage on a copy of exactly what it COPYs.
    src = os.path.join(t, 'docker-src')
    os.makedirs(src)
    workdir = '/'
    args = {}
    for w, r in build['ins']:
        if w == 'WORKDIR':
            workdir = r
        elif w == 'ARG':
            k, _, v = r.partition('=')
            args[k] = v
        elif w == 'COPY':
            parts = r.split()
            check(not parts[0].startswith('--'), 'Dockerfile: unexpected COPY option in build stage: ' + r)
            srcs, dst = parts[:-1], parts[-1]
            check(workdir == '/src', 'Dockerfile: test expects WORKDIR /src before COPY')
            dabs = os.path.join(src, os.path.normpath(dst))
            for s_ in srcs:
                sp = os.path.join(ROOT, s_)
                check(os.path.exists(sp), 'Dockerfile: COPY source %s does not exist' % s_)
                if os.path.isdir(sp):       # Docker copies a directory's contents
                    shutil.copytree(sp, dabs, dirs_exist_ok=True, symlinks=True,
                                    ignore=shutil.ignore_patterns('__pycache__'))
                else:
                    todir = dst.endswith('/') or len(srcs) > 1 or os.path.isdir(dabs)
                    target = os.path.join(dabs, os.path.basename(s_)) if todir else dabs
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    shutil.copy2(sp, target)
    # The package goes to DEB_DIR (/dist in the image); the runtime stage
    # installs it from there.
    check('DEB_DIR' in args and args['DEB_DIR'], 'Dockerfile: build stage needs ARG DEB_DIR=<dir>')
    ddir, sdir = os.path.join(t, 'docker-deb'), os.path.join(t, 'docker-staging')
    env = dict(os.environ, DEB_DIR=ddir)
    t0 = time.time()
    p = subprocess.run(['/bin/sh', '-c', brun[0]], cwd=src, env=env, capture_output=True, text=True,
                       timeout=900)
    check(p.returncode == 0, 'Dockerfile build command failed (%d): %s\n%s%s'
          % (p.returncode, brun[0], p.stdout[-3000:], p.stderr[-3000:]))
    debs = glob.glob(os.path.join(ddir, 'dpasync_*.deb'))
    check(len(debs) == 1, 'Dockerfile build command: want one dpasync_*.deb in DEB_DIR, got %r' % debs)
    print('ok: Dockerfile build stage built %s in %.0f s' % (os.path.basename(debs[0]), time.time() - t0))
    # lintian, which the image build leaves out (DP_NO_LINTIAN=1), on the
    # .changes and the .debs it lists (docs/deploy.md §4 "Debian package":
    # no error and no warning; the overrides have their reasons).
    t0 = time.time()
    changes = glob.glob(os.path.join(ddir, 'dpasync_*.changes'))
    check(len(changes) == 1, 'Dockerfile build command: want one .changes in DEB_DIR, got %r' % changes)
    p = run(['lintian', '--fail-on', 'error,warning', '--display-level', '>=warning', changes[0]], ok=False)
    check(p.returncode == 0, 'lintian on the package the Dockerfile builds (%d):\n%s%s'
          % (p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
    print('ok: lintian: no error, no warning (%.0f s)' % (time.time() - t0))

    # The runtime stage installs that .deb, from the build stage's DEB_DIR,
    # with apt; the three binaries are the package's.
    rtrun = ' '.join(r for st in chain for w, r in st['ins'] if w == 'RUN')
    m = re.findall(r'apt-get install (.*?)(?:&&|$)', rtrun)
    check(m, 'Dockerfile: runtime stage has no apt-get install')
    words = [w for g in m for w in g.split() if not w.startswith('-')]
    local = [w for w in words if w.endswith('.deb')]
    check(len(local) == 1 and os.path.basename(local[0]) == 'dpasync_*.deb'
          and os.path.dirname(local[0]) != '',
          'Dockerfile: the runtime stage must apt-get install the one dpasync_*.deb, installs %r' % local)
    # (mounted straight from the build stage, or from a stage holding the
    # .deb alone, copied from there)
    mnt = re.search(r'--mount=type=bind,from=(\S+?),source=(\S+?),target=(\S+)', rtrun)
    check(mnt is not None and mnt.group(3) == os.path.dirname(local[0]),
          'Dockerfile: the runtime stage must mount the package where it installs %s from' % local[0])
    src_ok = mnt.group(1) == 'build' and os.path.normpath(mnt.group(2)) == args['DEB_DIR']
    if mnt.group(1) in named and mnt.group(1) != 'build' and os.path.normpath(mnt.group(2)) == '/':
        src_ok = ['--from=build %s/dpasync_*.deb /' % args['DEB_DIR']] == \
            [r for w, r in named[mnt.group(1)]['ins'] if w == 'COPY']
    check(src_ok, 'Dockerfile: the runtime stage mounts %s:%s, not the package of the build stage\'s %s'
          % (mnt.group(1), mnt.group(2), args['DEB_DIR']))
    # The package's files, and one directory (as PATH) with its binaries.
    run(['dpkg-deb', '-x', debs[0], sdir])
    bdir = os.path.join(t, 'docker-bin')
    os.makedirs(bdir)
    bins = {}
    for b in ('usr/sbin/learnerd', 'usr/sbin/ownerd', 'usr/bin/dpasync'):
        path = os.path.join(sdir, b)
        check(os.access(path, os.X_OK), 'the package has no /%s' % b)
        bins[os.path.basename(b)] = os.path.join(bdir, os.path.basename(b))
        os.symlink(path, bins[os.path.basename(b)])
    for b, path in bins.items():
        v = run([path, '--version'])
        check(v.stdout.strip() != '', '%s --version printed nothing' % b)
    print('ok: runtime stage installs the package with learnerd, ownerd, dpasync (%s)'
          % run([bins['dpasync'], '--version']).stdout.strip())

    # Runtime libraries: every library loaded comes from a package the
    # runtime stage names, or their dependencies.
    pkgs = [w for w in words if w not in local]
    for pk in pkgs:
        check(run(['apt-cache', 'show', pk], ok=False).returncode == 0,
              'Dockerfile: runtime package %s does not exist in Debian' % pk)
    # The stage installs the .deb without apt-get update (no package
    # lists): what it Depends on must be installed before, by name.
    dep = run(['apt-cache', 'depends', '--recurse', '--no-recommends', '--no-suggests', '--no-conflicts',
               '--no-breaks', '--no-replaces', '--no-enhances'] + pkgs)
    closure = {l.strip() for l in dep.stdout.splitlines() if l and not l[0].isspace()}
    closure |= set(pkgs)
    depends = run(['dpkg-deb', '-f', debs[0], 'Depends']).stdout
    missing = [g.strip() for g in depends.split(',')
               if not any(re.sub(r'[\s(:].*', '', a.strip()) in closure for a in g.split('|'))]
    check(not missing, 'Dockerfile: the runtime stage installs the package without %s, which it Depends on'
          % ', '.join(missing))
    libs = set()
    for b in bins.values():
        for l in run(['ldd', b]).stdout.splitlines():
            mm = re.search(r'=> (/\S+)', l)
            if mm:
                libs.add(mm.group(1))
    check(libs, 'ldd found no libraries')
    bad = []
    for lib in sorted(libs):
        q = run(['dpkg', '-S', os.path.realpath(lib)], ok=False)
        if q.returncode != 0:
            q = run(['dpkg', '-S', lib], ok=False)
        check(q.returncode == 0, 'no Debian package owns %s' % lib)
        owner = q.stdout.split(':')[0]
        if owner not in closure:
            bad.append('%s (%s)' % (lib, owner))
    check(not bad, 'Dockerfile: the runtime stage lacks the packages of %s' % ', '.join(bad))
    print('ok: %d libraries, all from the runtime packages, which cover the .deb\'s Depends' % len(libs))

    # HEALTHCHECK command against a real endpoint.
    hc = [r for w, r in rt['ins'] if w == 'HEALTHCHECK'][0]
    mm = re.search(r'CMD (\[.*\])\s*$', hc)
    check(mm is not None, 'Dockerfile: HEALTHCHECK must use the exec form CMD [...]')
    hcmd = json.loads(mm.group(1))
    return bins, hcmd

def check_healthcheck(t, bins, hcmd):
    certs = os.path.join(t, 'hc-certs')
    run([bins['dpasync'], 'certs', '--out', certs, '--owners', '1'])
    pf = os.path.join(t, 'hc.ports')
    lp = start([bins['learnerd'], '--listen', '127.0.0.1:0', '--port-file', pf, '--ca', certs + '/ca.crt',
                '--cert', certs + '/learner.crt', '--key', certs + '/learner.key', '--owners', 'owner-1',
                '--out', os.path.join(t, 'hc-out'), '--metrics-listen', '127.0.0.1:0'],
               log=os.path.join(t, 'hc.log'))
    wait_file(pf, lp, 'learnerd')
    pt = ports(pf)
    def hcrun(port):
        return subprocess.run(hcmd, env=dict(os.environ, DP_METRICS_PORT=str(port)),
                              capture_output=True, timeout=30).returncode
    check(hcrun(pt['metrics']) == 0, 'HEALTHCHECK fails against a live /healthz')
    check(hcrun(pt['tls']) != 0, 'HEALTHCHECK passes against the TLS port')
    lp.terminate()
    rc, _ = finish(lp, 20, 'learnerd (SIGTERM)')
    check(rc == 0, 'learnerd exit %d on SIGTERM' % rc)
    check(hcrun(pt['metrics']) != 0, 'HEALTHCHECK passes with nothing listening')
    print('ok: HEALTHCHECK passes on /healthz, fails on a TLS port and a closed port')

def check_build_script(t):
    d = os.path.join(t, 'not-a-build')
    os.makedirs(d)
    open(os.path.join(d, 'keep'), 'w').write('x')
    p = run([os.path.join(ROOT, 'scripts', 'build.sh'), d], ok=False)
    check(p.returncode == 2 and os.path.exists(os.path.join(d, 'keep')),
          'build.sh on a non-build directory: exit %d, file %s' % (p.returncode,
          'kept' if os.path.exists(os.path.join(d, 'keep')) else 'DELETED'))
    p = run([os.path.join(ROOT, 'scripts', 'build.sh')], ok=False)
    check(p.returncode == 2, 'build.sh without arguments: exit %d' % p.returncode)
    print('ok: build.sh refuses a non-build directory and no arguments')

# ---------------------------------------------------------------- certificates

def doc_blocks(heading):
    """The indented code blocks of the docs/deploy.md section `heading`."""
    text = open(os.path.join(ROOT, 'docs', 'deploy.md')).read()
    i = text.index(heading)
    j = text.find('\n#', i + len(heading))
    sec = text[i:j if j >= 0 else len(text)]
    blocks, cur = [], []
    for l in sec.splitlines():
        if l.startswith('    '):
            cur.append(l[4:])
        elif cur and l.strip():
            blocks.append('\n'.join(cur))
            cur = []
    if cur:
        blocks.append('\n'.join(cur))
    return blocks

def check_csr(t, bins):
    """docs/deploy.md 2.3: an owner's own key and request, signed by the CA
    with openssl, runs a job with the learner."""
    blocks = doc_blocks('### 2.3 ')
    check(len(blocks) == 2, 'docs/deploy.md 2.3: want 2 code blocks (owner, CA), got %d' % len(blocks))
    d = os.path.join(t, 'csr')
    ca, own = os.path.join(d, 'ca'), os.path.join(d, 'owner')
    run([bins['dpasync'], 'certs', '--out', ca, '--names', 'someone', '--learner-name', 'learner'])
    os.makedirs(own)
    p = subprocess.run(['bash', '-euc', blocks[0]], cwd=own, capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, 'owner block of docs 2.3 failed: %s' % p.stderr)
    check(oct(os.stat(os.path.join(own, 'hospital-d.key')).st_mode & 0o777) == '0o600', 'owner key not 0600')
    shutil.copy(os.path.join(own, 'hospital-d.csr'), ca)
    p = subprocess.run(['bash', '-euc', blocks[1]], cwd=ca, capture_output=True, text=True, timeout=60)
    check(p.returncode == 0 and 'CN = hospital-d' in p.stdout, 'CA block of docs 2.3 failed: %s%s'
          % (p.stdout, p.stderr))
    run([bins['dpasync'], 'gen', '--rows', '300', '--features', '3', '--out', os.path.join(d, 'g')])
    pf = os.path.join(d, 'ports')
    llog = os.path.join(d, 'learner.log')
    lp = start([bins['learnerd'], '--listen', '127.0.0.1:0', '--port-file', pf, '--ca', ca + '/ca.crt',
                '--cert', ca + '/learner.crt', '--key', ca + '/learner.key', '--owners', 'hospital-d',
                '--T', '5', '--out', os.path.join(d, 'out')], log=llog)
    wait_file(pf, lp, 'learnerd')
    olog = os.path.join(d, 'owner.log')
    op = start([bins['ownerd'], '--learner', '127.0.0.1:' + ports(pf)['tls'], '--ca', ca + '/ca.crt',
                '--cert', os.path.join(ca, 'hospital-d.crt'), '--key', os.path.join(own, 'hospital-d.key'),
                '--data', os.path.join(d, 'g', 'owner-1.csv'), '--rate', '50',
                '--ledger', os.path.join(d, 'ledger'), '--once'], log=olog)
    watch(lp, llog, [(op, olog)], 60)
    rc, out = finish(lp, 10, 'learnerd', llog)
    check(rc == 0 and 'done k=5' in out, 'job with a CSR-issued owner: exit %d %r' % (rc, out))
    rc, _ = finish(op, 20, 'ownerd', olog)
    check(rc == 0, 'CSR-issued owner exit %d' % rc)
    print('ok: docs 2.3 (owner key + request, CA signs with openssl) gives a certificate that runs a job')

# ---------------------------------------------------------------- compose

COMPOSE_ENV_KEYS = re.compile(r'^(DP_|COMPOSE_)')

def compose_config(path, extra_env=None):
    import yaml
    env = {k: v for k, v in os.environ.items() if not COMPOSE_ENV_KEYS.match(k)}
    env.update(extra_env or {})
    # Relative paths (build context .., ./compose) resolve against deploy/, as
    # for a file generated there.
    p = subprocess.run(['docker-compose', '-f', path, '--project-directory', DEPLOY, 'config'],
                       env=env, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, 'docker-compose config rejects %s:\n%s' % (path, p.stderr))
    return yaml.safe_load(p.stdout)

def check_compose_files(t):
    gen = os.path.join(DEPLOY, 'compose', 'generate.sh')
    p = run([gen])
    check(p.stdout == open(os.path.join(DEPLOY, 'docker-compose.yml')).read(),
          'deploy/docker-compose.yml differs from deploy/compose/generate.sh output: regenerate it')
    cfg = compose_config(os.path.join(DEPLOY, 'docker-compose.yml'))
    sv = cfg['services']
    check(set(sv) == {'certs', 'data', 'learner', 'owner-1', 'owner-2', 'owner-3', 'prometheus', 'eval'},
          'compose services: %s' % sorted(sv))
    # `up` needs no registry: every image is built from deploy/Dockerfile
    # (Prometheus from its `prometheus` target), and the default clocks
    # give a job of about a minute (2 + 1 + 0.5 ticks a second).
    for name, svc in sv.items():
        check('build' in svc and svc['build']['dockerfile'].endswith('deploy/Dockerfile'),
              'compose service %s: image %s is not built here' % (name, svc.get('image')))
    check(sv['prometheus']['build'].get('target') == 'prometheus' and
          sv['prometheus']['image'] == 'dpasync-prometheus:latest',
          'compose prometheus: %s' % sv['prometheus'])
    rates = [float(sv['owner-%d' % i]['environment']['DP_RATE']) for i in (1, 2, 3)]
    check(rates == [2, 1, 0.5], 'compose default clocks %s' % rates)
    print('ok: docker-compose config accepts deploy/docker-compose.yml (= generate.sh output), '
          'needs no registry, default clocks %s' % rates)

    # Five owners.
    f5 = os.path.join(t, 'docker-compose.5.yml')
    open(f5, 'w').write(run([gen, '--owners', '5', '--rates', '1,2', '--epsilons', '0.5']).stdout)
    c5 = compose_config(f5, {'DP_OWNER_4_EPSILON': '3'})
    owners = sorted(s for s in c5['services'] if s.startswith('owner-'))
    check(owners == ['owner-%d' % i for i in range(1, 6)], '5-owner file has %s' % owners)
    envs = [c5['services'][o]['environment'] for o in owners]
    check([e['DP_RATE'] for e in envs] == ['1', '2', '1', '2', '1'], 'rates %s' % [e['DP_RATE'] for e in envs])
    check([e['DP_EPSILON'] for e in envs] == ['0.5', '0.5', '0.5', '3', '0.5'],
          'epsilons %s' % [e['DP_EPSILON'] for e in envs])
    dm = [v.split(':')[1] for v in c5['services']['data']['volumes'] if v.startswith('owner-')]
    check(dm == ['/var/lib/dpasync/owners/owner-%d' % i for i in range(1, 6)], 'data mounts %s' % dm)
    check(all(e['DP_OWNER_NAMES'] == ','.join(owners) for e in envs), 'owner names not propagated')
    pd = c5['services']['prometheus']['depends_on']
    check(all(o in pd for o in owners), 'prometheus depends_on %s' % pd)
    for bad in (['--owners', '0'], ['--owners', 'x'], ['--names', 'a,learner'], ['--bogus'],
                ['--peer', '--serve', 'x'], ['--peer', '--release', 'grad0'],
                ['--serve', 'refit']):
        p = run([gen] + bad, ok=False)
        check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1,
              'generate.sh %s: exit %d %r' % (bad, p.returncode, p.stderr))
    # netns-cluster.sh's served-model options, refused before anything is made
    for bad in (['--serve', 'x'], ['--serve', 'refit'], ['--peer', 'ring', '--serve', 'refit',
                                                         '--release', 'x'],
                ['--peer', 'ring', '--serve', 'refit', '--prior', 'none']):
        p = run(['bash', os.path.join(DEPLOY, 'netns-cluster.sh')] + bad, ok=False)
        check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1,
              'netns-cluster.sh %s: exit %d %r' % (bad, p.returncode, p.stderr))
    print('ok: generate.sh --owners 5 validates; per-owner rates/epsilons and overrides apply')

    p = run(['promtool', 'check', 'config', os.path.join(DEPLOY, 'compose', 'prometheus.yml')], ok=False)
    check(p.returncode == 0, 'promtool rejects prometheus.yml:\n' + p.stdout + p.stderr)
    scripts = sorted(glob.glob(os.path.join(DEPLOY, 'compose', '*.sh'))) + \
        [os.path.join(ROOT, 'scripts', s) for s in ('build.sh', 'deb.sh')] + \
        [os.path.join(DEPLOY, 'build-images.sh')]
    # build-images.sh: bad usage is exit 2, one line, before any build
    for bad in (['bogus'], ['--tag-template']):
        p = run([os.path.join(DEPLOY, 'build-images.sh')] + bad, ok=False)
        check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1,
              'build-images.sh %s: exit %d %r' % (bad, p.returncode, p.stderr))
    p = run(['shellcheck'] + scripts, ok=False)
    check(p.returncode == 0, 'shellcheck:\n' + p.stdout)
    print('ok: promtool accepts prometheus.yml; shellcheck clean on %d scripts' % len(scripts))

IMAGE_UID = 10001

def image_dirs():
    """The directories the runtime image creates for user dpasync, with
    their modes (an empty named volume mounted there takes both)."""
    rt = [st for st in dockerfile_stages() if st['name'] == 'runtime']
    check(len(rt) == 1, 'Dockerfile: no stage runtime')
    text = ' '.join(r for w, r in rt[0]['ins'] if w == 'RUN')
    dirs = {}
    for m in re.finditer(r'install -d -o dpasync -g dpasync -m (\d+) ((?:/\S+\s*)+)', text):
        for d in m.group(2).split():
            dirs[d] = int(m.group(1), 8)
    check('/var/lib/dpasync/state' in dirs, 'Dockerfile: image directories not found')
    return dirs

def as_user(cmd, uid, caps=()):
    """cmd as Docker would run it: uid (gid = uid, no other groups), no
    capabilities beyond caps (cap_drop ALL + cap_add), no-new-privileges."""
    bound = ','.join(['-all'] + ['+' + c.lower() for c in caps])
    return ['setpriv', '--reuid=%d' % uid, '--regid=%d' % uid, '--clear-groups', '--inh-caps=-all',
            '--bounding-set=' + bound, '--no-new-privs', '--'] + cmd

def compose_service(cfg, name, t, binpath, overrides=None):
    """A compose service run without Docker: its command and environment
    from the resolved configuration, as its user with its capabilities;
    named volumes are directories under t/vol shared between services, and
    a volume's first mount gives it the ownership Docker would (the image
    directory's owner and mode, else root 0755); ./compose is bind-mounted."""
    s = cfg['services'][name]
    check(s.get('cap_drop') == ['ALL'] and s.get('read_only') is True
          and 'no-new-privileges:true' in s.get('security_opt', []),
          'compose %s: not locked down (cap_drop ALL, read_only, no-new-privileges)' % name)
    imgdirs = image_dirs()
    root = os.path.join(t, 'ctr', name)
    os.makedirs(root, exist_ok=True)
    for x in (t, os.path.join(t, 'ctr'), root):
        os.chmod(x, 0o755)
    for v in s.get('volumes', []):
        src, dst = v.split(':')[:2]
        if dst.startswith('/opt/dpasync/compose'):
            check(os.path.realpath(src) == os.path.join(DEPLOY, 'compose'), 'bind mount %s' % v)
            continue
        check(dst.startswith('/var/lib/dpasync/'), '%s: unexpected mount %s' % (name, v))
        check('/' not in src, '%s: unexpected bind mount %s' % (name, v))
        vol = os.path.join(t, 'vol', src)
        os.makedirs(os.path.join(t, 'vol'), mode=0o755, exist_ok=True)
        if not os.path.exists(vol):
            os.mkdir(vol)
            if dst in imgdirs:
                os.chown(vol, IMAGE_UID, IMAGE_UID)
                os.chmod(vol, imgdirs[dst])
            else:
                os.chmod(vol, 0o755)
        link = os.path.join(root, dst[len('/var/lib/dpasync/'):])
        os.makedirs(os.path.dirname(link), mode=0o755, exist_ok=True)
        if not os.path.islink(link):
            os.symlink(vol, link)
    cmd = s['command']
    check(cmd[0] == '/bin/bash' and cmd[1].startswith('/opt/dpasync/compose/'), '%s command %s' % (name, cmd))
    # The services run as uid 10001, which may not traverse the checkout (a
    # CI clone can sit below a 0700 directory): run a copy of ./compose from t,
    # as the bind mount would expose it.
    src_copy = os.path.join(t, 'compose-src')
    if not os.path.isdir(src_copy):
        shutil.copytree(os.path.join(DEPLOY, 'compose'), src_copy)
        os.chmod(src_copy, 0o755)
    cmd = ['/bin/bash', os.path.join(src_copy, cmd[1][len('/opt/dpasync/compose/'):])] + cmd[2:]
    uid = int(str(s.get('user', IMAGE_UID)).split(':')[0])
    cmd = as_user(cmd, uid, s.get('cap_add', []))
    env = {k: str(v) for k, v in (s.get('environment') or {}).items()}
    env.update({'DP_ROOT': root, 'PATH': binpath + ':' + os.environ['PATH'], 'OPENBLAS_NUM_THREADS': '1',
                'TMPDIR': os.path.join(t, 'tmp')})
    os.makedirs(os.path.join(t, 'tmp'), exist_ok=True)
    os.chmod(os.path.join(t, 'tmp'), 0o1777)
    env.update(overrides or {})
    return cmd, env, root

def check_compose_run(t, bindir):
    cfg = compose_config(os.path.join(DEPLOY, 'docker-compose.yml'),
                         {'DP_T': '40', 'DP_ROWS': '3000', 'DP_OWNER_2_EPSILON': '2'})
    tt = os.path.join(t, 'compose')
    vol = lambda *p: os.path.join(tt, 'vol', *p)
    def oneshot(name, overrides=None, want=0):
        cmd, env, _ = compose_service(cfg, name, tt, bindir, overrides)
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        check(p.returncode == want, 'compose %s: exit %d (want %d)\n%s%s' % (name, p.returncode, want,
                                                                              p.stdout, p.stderr))
        return p
    oneshot('certs')
    check(os.path.exists(vol('ca', 'ca.key')) and not os.path.exists(vol('certs', 'ca.key')),
          'certs: the CA key must be in the ca volume only')
    for n in ('learner', 'owner-1', 'owner-2', 'owner-3'):
        check(os.path.exists(vol('certs', n + '.key')), 'certs: no key for %s' % n)
    oneshot('data')
    for i in (1, 2, 3):
        rows = sum(1 for _ in open(vol('owner-%d-data' % i, 'data.csv'))) - 1
        check(rows == 3000, 'data: owner-%d has %d rows' % (i, rows))

    pfd = os.path.join(tt, 'ports')
    os.makedirs(pfd)
    os.chown(pfd, IMAGE_UID, IMAGE_UID)
    pf = os.path.join(pfd, 'learner.ports')
    lcmd, lenv, _ = compose_service(cfg, 'learner', tt, bindir, {
        'DP_LISTEN': '127.0.0.1:0', 'DP_METRICS_LISTEN': '127.0.0.1', 'DP_METRICS_PORT': '0',
        'DP_LEARNER_ARGS': '--port-file ' + pf})
    llog = os.path.join(tt, 'learner.log')
    lp = start(lcmd, lenv, llog)
    wait_file(pf, lp, 'compose learner', 30)
    port = ports(pf)['tls']
    ops = []
    for i in (1, 2, 3):
        ocmd, oenv, _ = compose_service(cfg, 'owner-%d' % i, tt, bindir, {
            'DP_LEARNER': '127.0.0.1:' + port, 'DP_METRICS_LISTEN': '127.0.0.1', 'DP_METRICS_PORT': '0'})
        check(oenv['DP_EPSILON'] == ('2' if i == 2 else '1'), 'owner-%d epsilon %s' % (i, oenv['DP_EPSILON']))
        ops.append(start(ocmd, oenv, os.path.join(tt, 'owner-%d.log' % i)))
    watch(lp, llog, [(op, os.path.join(tt, 'owner-%d.log' % i)) for i, op in enumerate(ops, 1)], 120)
    rc, out = finish(lp, 10, 'compose learner', llog)
    check(rc == 0 and 'done k=40' in out, 'compose learner: exit %d, stdout %r' % (rc, out))
    for i, op in enumerate(ops, 1):
        rc, _ = finish(op, 30, 'compose owner-%d' % i, os.path.join(tt, 'owner-%d.log' % i))
        check(rc == 0, 'compose owner-%d exit %d' % (i, rc))
    model = json.load(open(vol('learner-out', 'model.json')))
    check(len(model['theta']) == 11 and model['bias'] is True, 'model.json: %s' % model)
    trace = open(vol('learner-out', 'trace.csv')).read().splitlines()
    check(len(trace) == 41, 'trace.csv has %d lines, want 41' % len(trace))
    for i in (1, 2, 3):
        st = vol('owner-%d-state' % i)
        jobs = os.path.join(st, 'ledger', 'jobs')
        check(any(f.endswith('.ledger') and os.path.getsize(os.path.join(jobs, f)) >= 256
                  for f in os.listdir(jobs)), 'owner-%d: no job ledger' % i)
        check(os.path.exists(os.path.join(st, 'model.json')), 'owner-%d: no model from Done' % i)
        tg = json.load(open(vol('targets', 'owner-%d.json' % i)))
        check(tg == [{'targets': ['owner-%d:0' % i], 'labels': {'owner': 'owner-%d' % i}}],
              'targets file of owner-%d: %s' % (i, tg))
    check(sorted(os.listdir(vol('targets'))) == ['owner-%d.json' % i for i in (1, 2, 3)],
          'targets volume: %s' % os.listdir(vol('targets')))
    e = json.loads(oneshot('eval').stdout)
    check(math.isfinite(e['psi']) and e['psi'] >= -1e-9, 'eval psi %s' % e)
    print('ok: compose services ran a job end to end: model in learner-out, psi = %.4g, '
          'a ledger per owner volume, 3 Prometheus targets' % e['psi'])

    # Re-runs are idempotent; a finished owner does not reconnect.
    before = {f: sha(f) for f in glob.glob(vol('*', '*')) if os.path.isfile(f)}
    p = oneshot('certs')
    check('all certificates present' in p.stdout, 'certs re-run: %r' % p.stdout)
    p = oneshot('data')
    check('every owner has data.csv' in p.stdout, 'data re-run: %r' % p.stdout)
    ocmd, oenv, _ = compose_service(cfg, 'owner-1', tt, bindir, {'DP_LEARNER': '127.0.0.1:1'})
    p = subprocess.run(ocmd, env=oenv, capture_output=True, text=True, timeout=20)
    check(p.returncode == 0 and 'already finished' in p.stderr, 'finished owner re-run: %d %r'
          % (p.returncode, p.stderr))
    after = {f: sha(f) for f in before}
    check(before == after, 're-runs changed %s' % [f for f in before if before[f] != after[f]])
    # An added owner gets its certificate from the existing CA; nothing else changes.
    p = oneshot('certs', {'DP_OWNER_NAMES': 'owner-1,owner-2,owner-3,owner-4'})
    check('owner-4' in p.stdout, 'certs with a new owner: %r' % p.stdout)
    run(['openssl', 'verify', '-CAfile', vol('certs', 'ca.crt'), vol('certs', 'owner-4.crt')])
    check(all(sha(f) == before[f] for f in before), 'adding an owner changed existing files')
    p = oneshot('data', {'DP_OWNER_NAMES': 'owner-1,owner-9'}, want=2)
    check('owner-9' in p.stderr, 'data without a volume: %r' % p.stderr)
    print('ok: compose re-runs are idempotent; an added owner is issued by the same CA')
    check_compose_peer(t, bindir)

def check_compose_peer(t, bindir):
    """generate.sh --peer (docs/peer-agents.md): no learner; certs.sh issues
    peer certificates and writes a ring graph and an address book; the
    three agents run from their compose services to the end, each ledger
    with DP_WAKEUPS charges, and with DP_SERVE=refit each writes its
    served model."""
    gen = os.path.join(DEPLOY, 'compose', 'generate.sh')
    f = os.path.join(t, 'docker-compose.peer.yml')
    open(f, 'w').write(run([gen, '--peer', '--wakeups', '6']).stdout)
    cfg = compose_config(f, {'DP_ROWS': '300'})
    check('learner' not in cfg['services'] and 'eval' not in cfg['services'],
          'peer compose still has a learner: %s' % sorted(cfg['services']))
    tt = os.path.join(t, 'compose-peer')
    vol = lambda *p: os.path.join(tt, 'vol', *p)
    for name in ('certs', 'data'):
        cmd, env, _ = compose_service(cfg, name, tt, bindir)
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, 'peer compose %s: exit %d %s' % (name, p.returncode, p.stderr))
    check(open(vol('certs', 'graph.csv')).read() ==
          'a,b,w\nowner-1,owner-2,1\nowner-2,owner-3,1\nowner-3,owner-1,1\n',
          'peer graph: %r' % open(vol('certs', 'graph.csv')).read())
    # the services' addresses (owner-i:7900) exist only on a compose
    # network: here each agent listens on a port of loopback (port 0, its
    # port file), and the address book is written once all are known (the
    # agents read it again at every dial)
    book = os.path.join(tt, 'tmp', 'peers.csv')
    ops, pfs = [], {}
    for i in (1, 2, 3):
        pfs[i] = os.path.join(tt, 'tmp', 'owner-%d.port' % i)
        ocmd, oenv, _ = compose_service(cfg, 'owner-%d' % i, tt, bindir, {
            'DP_PEERS': book, 'DP_PEER_LISTEN': '127.0.0.1:0', 'DP_OWNER_ARGS': '--port-file ' + pfs[i],
            'DP_METRICS_LISTEN': '127.0.0.1', 'DP_METRICS_PORT': '0', 'DP_RATE': '10',
            'DP_SERVE': 'refit', 'DP_PRIOR': 'all'})
        check(oenv['DP_PEER'] == 'true' and oenv['DP_WAKEUPS'] == '6', 'peer env %s' % oenv)
        ops.append(start(ocmd, oenv, os.path.join(tt, 'owner-%d.log' % i)))
    for i, op in enumerate(ops, 1):
        wait_file(pfs[i], op, 'peer compose owner-%d' % i, 30)
    lines = ['owner-%d,127.0.0.1:%s\n' % (i, ports(pfs[i])['peer']) for i in (1, 2, 3)]
    open(book + '.tmp', 'w').write('id,addr\n' + ''.join(lines))
    os.chmod(book + '.tmp', 0o644)
    os.replace(book + '.tmp', book)
    for i, op in enumerate(ops, 1):
        rc, _ = finish(op, 60, 'peer compose owner-%d' % i, os.path.join(tt, 'owner-%d.log' % i))
        check(rc == 0, 'peer compose owner-%d exit %d' % (i, rc))
        info = json.loads(run([os.path.join(bindir, 'dpasync'), 'ledger',
                               vol('owner-%d-state' % i, 'ledger')]).stdout)
        # An agent's ledger directory holds its one job, "peer".
        check(info['jobs_count'] == 1 and info['jobs'][0]['job'] == 'peer', 'ledger %s' % info)
        led = info['jobs'][0]
        check(led['answers'] == 6 and led['epsilon_spent'] <= 1 + 1e-12, 'ledger %s' % led)
        # DP_SERVE=refit: the served model in the state volume, from all three
        sv = json.load(open(vol('owner-%d-state' % i, 'ledger', 'served.json')))
        check(sv['private'] is False and sv['fitted_from']['releases_pooled'] == 3,
              'served model %s' % sv['fitted_from'])
    print('ok: generate.sh --peer: three agents ran from their compose services, 6 wake-ups '
          'each, and served models from the 3 releases')

# ---------------------------------------------------------------- systemd

def parse_unit(path):
    """systemd unit files as INI: [section] -> list of (key, value); keys may repeat."""
    secs, cur = {}, None
    for n, raw in enumerate(open(path), 1):
        l = raw.strip()
        if not l or l[0] in '#;':
            continue
        if l.startswith('[') and l.endswith(']'):
            cur = secs.setdefault(l[1:-1], [])
            continue
        check(cur is not None and '=' in l, '%s:%d: not a unit file line: %s' % (path, n, l))
        k, v = l.split('=', 1)
        cur.append((k.strip(), v.strip()))
    return secs

def syscall_groups():
    out = run(['systemd-analyze', 'syscall-filter']).stdout
    g, cur = {}, None
    for l in out.splitlines():
        if l.startswith('@'):
            cur = g.setdefault(l.strip(), [])
        elif cur is not None and l.startswith('    ') and not l.strip().startswith('#'):
            cur.append(l.strip())
    check('@system-service' in g and '@privileged' in g, 'systemd-analyze syscall-filter: no groups')
    return g

def unit_sandbox(svc):
    """The system calls and socket families a unit's [Service] permits."""
    G = syscall_groups()
    def expand(n):
        if not n.startswith('@'):
            return {n}
        check(n in G, 'unknown system call group %s' % n)
        return set().union(*(expand(m) for m in G[n]))
    allowed = None
    for k, v in svc:
        if k != 'SystemCallFilter':
            continue
        deny = v.startswith('~')
        names = set().union(*(expand(x) for x in v.lstrip('~').split()))
        if deny:
            allowed = (allowed if allowed is not None else set()) - names
        else:
            allowed = names if allowed is None else allowed | names
    fams = set(dict(svc)['RestrictAddressFamilies'].split())
    return allowed, fams

def traced_syscalls(path):
    used, fams = set(), set()
    for l in open(path):
        m = re.match(r'\d+\s+(?:<\.\.\. )?([a-z_0-9]+)[( ]', l)
        if m:
            used.add(m.group(1))
        m = re.search(r'\bsocket\((AF_[A-Z0-9]+)', l)
        if m:
            fams.add(m.group(1))
    return used, fams

def check_sandbox_job(t, bins):
    """A job with both daemons under strace -f: every system call they make
    must be permitted by the unit's SystemCallFilter, every socket family by
    RestrictAddressFamilies (otherwise the hardened service would fail)."""
    d = os.path.join(t, 'strace')
    os.makedirs(d)
    run([bins['dpasync'], 'certs', '--out', d + '/c', '--owners', '1'])
    run([bins['dpasync'], 'gen', '--rows', '2000', '--features', '5', '--out', d + '/g'])
    pf, llog, olog = d + '/ports', d + '/l.log', d + '/o.log'
    lp = start(['strace', '-f', '-qq', '-o', d + '/learnerd.trace', bins['learnerd'], '--listen', '127.0.0.1:0',
                '--port-file', pf, '--ca', d + '/c/ca.crt', '--cert', d + '/c/learner.crt',
                '--key', d + '/c/learner.key', '--owners', 'owner-1', '--T', '20', '--bias',
                '--out', d + '/out', '--metrics-listen', '127.0.0.1:0', '--checkpoint-every', '5'], log=llog)
    wait_file(pf, lp, 'learnerd (strace)', 30)
    op = start(['strace', '-f', '-qq', '-o', d + '/ownerd.trace', bins['ownerd'],
                '--learner', 'localhost:' + ports(pf)['tls'], '--ca', d + '/c/ca.crt',
                '--cert', d + '/c/owner-1.crt', '--key', d + '/c/owner-1.key', '--data', d + '/g/owner-1.csv',
                '--bias', '--rate', '50', '--ledger', d + '/ledger', '--metrics-listen', '127.0.0.1:0',
                '--once'], log=olog)
    watch(lp, llog, [(op, olog)], 120)
    rc, out = finish(lp, 10, 'learnerd (strace)', llog)
    check(rc == 0 and 'done k=20' in out, 'job under strace: exit %d %r' % (rc, out))
    rc, _ = finish(op, 20, 'ownerd (strace)', olog)
    check(rc == 0, 'ownerd under strace: exit %d' % rc)
    for unit, daemon in (('learnerd.service', 'learnerd'), ('ownerd@.service', 'ownerd')):
        allowed, fams = unit_sandbox(parse_unit(os.path.join(DEPLOY, 'systemd', unit))['Service'])
        used, ufams = traced_syscalls(os.path.join(d, daemon + '.trace'))
        check(len(used) > 20, '%s: strace saw only %s' % (daemon, sorted(used)))
        check(used <= allowed, '%s makes system calls %s that %s forbids'
              % (daemon, sorted(used - allowed), unit))
        check(ufams <= fams, '%s opens sockets %s that %s forbids' % (daemon, sorted(ufams - fams), unit))
        print('ok: %s: the %d system calls and socket families %s of a job are all permitted by %s'
              % (daemon, len(used), sorted(ufams), unit))

def check_systemd(t, bins):
    sd = os.path.join(DEPLOY, 'systemd')
    units = {'learnerd.service': 'learnerd.service', 'ownerd@.service': 'ownerd@owner-1.service'}
    req = {'User': None, 'ProtectSystem': 'strict', 'NoNewPrivileges': 'yes', 'PrivateTmp': 'yes',
           'ProtectHome': 'yes', 'CapabilityBoundingSet': '', 'Restart': 'on-failure',
           'RestartPreventExitStatus': None, 'StateDirectory': None, 'RestrictAddressFamilies': None}
    d = os.path.join(t, 'systemd')
    os.makedirs(d)
    bindir = os.path.dirname(bins['learnerd'])
    for src, inst in units.items():
        u = parse_unit(os.path.join(sd, src))
        svc = dict(u.get('Service', []))
        for k, v in req.items():
            check(k in svc, '%s: no %s=' % (src, k))
            if v is not None:
                check(svc[k] == v, '%s: %s=%s, want %s' % (src, k, svc[k], v))
        check('2' in svc['RestartPreventExitStatus'].split(), '%s: exit 2 would restart' % src)
        check(svc['User'] not in ('root', '0'), '%s: runs as root' % src)
        check(set(svc['RestrictAddressFamilies'].split()) <= {'AF_INET', 'AF_INET6', 'AF_UNIX'},
              '%s: RestrictAddressFamilies=%s' % (src, svc['RestrictAddressFamilies']))
        check(svc['StateDirectory'].startswith('dpasync/'), '%s: StateDirectory=%s' % (src, svc['StateDirectory']))
        text = open(os.path.join(sd, src)).read().replace('/usr/sbin/', bindir + '/')
        path = os.path.join(d, inst)
        open(path, 'w').write(text)
        p = run(['systemd-analyze', 'verify', path], ok=False)
        check(p.returncode == 0 and not (p.stdout + p.stderr).strip(),
              'systemd-analyze verify %s: exit %d\n%s%s' % (src, p.returncode, p.stdout, p.stderr))
        p = run(['systemd-analyze', 'security', '--offline=yes', '--threshold=20', path], ok=False)
        score = re.search(r'Overall exposure level for \S+: ([0-9.]+)', p.stdout)
        check(p.returncode == 0 and score, 'systemd-analyze security %s: exit %d\n%s'
              % (src, p.returncode, p.stdout[-2000:]))
        # The same unit without its hardening must score worse than 2.0.
        hard = ('Protect', 'Private', 'Restrict', 'NoNewPrivileges', 'Capability', 'SystemCall',
                'MemoryDeny', 'LockPersonality', 'DevicePolicy', 'RemoveIPC', 'KeyringMode', 'UMask')
        weak = os.path.join(d, 'weak', inst)
        os.makedirs(os.path.dirname(weak), exist_ok=True)
        open(weak, 'w').write(''.join(l for l in text.splitlines(True) if not l.startswith(hard)))
        p2 = run(['systemd-analyze', 'security', '--offline=yes', '--threshold=20', weak], ok=False)
        check(p2.returncode != 0, 'the exposure check passes even without hardening: it cannot fail')
        print('ok: %s: verify clean, exposure %s (<= 2.0), required hardening keys present'
              % (src, score.group(1)))

    # ExecStart lines, resolved, pass --check-config.
    etc = os.path.join(t, 'sd-etc')
    cred = os.path.join(t, 'sd-cred')
    state = os.path.join(t, 'sd-state')
    run([bins['dpasync'], 'certs', '--out', etc, '--owners', '1'])
    os.makedirs(cred)
    os.makedirs(os.path.join(state, 'owner-1'))
    run([bins['dpasync'], 'gen', '--rows', '50', '--features', '3', '--out', os.path.join(t, 'sd-gen')])
    shutil.copy(os.path.join(t, 'sd-gen', 'owner-1.csv'), os.path.join(state, 'owner-1', 'data.csv'))
    loc = lambda s: s.replace('/etc/dpasync/', etc + '/').replace('/var/lib/dpasync/', state + '/')
    open(os.path.join(etc, 'learnerd.conf'), 'w').write(loc(open(os.path.join(DEPLOY, 'learnerd.conf')).read()))
    open(os.path.join(etc, 'ownerd-owner-1.conf'), 'w').write(
        loc(open(os.path.join(sd, 'ownerd-owner-1.conf')).read()))
    for src, inst, inum in (('learnerd.service', None, None), ('ownerd@.service', 'owner-1', None)):
        svc = parse_unit(os.path.join(sd, src))['Service']
        es = [v for k, v in svc if k == 'ExecStart']
        check(len(es) == 1, '%s: want one ExecStart' % src)
        for k, v in svc:
            if k == 'LoadCredential':
                cid, _, cpath = v.partition(':')
                cpath = cpath.replace('%i', inst or '')
                check(cpath.startswith('/etc/dpasync/'), '%s: credential from %s' % (src, cpath))
                shutil.copy(loc(cpath), os.path.join(cred, cid))
                os.chmod(os.path.join(cred, cid), 0o400)
        line = es[0].replace('%d', cred).replace('%i', inst or '')
        argv = [loc(a) for a in shlex.split(line)]
        argv[0] = os.path.join(os.path.dirname(bins['learnerd']), os.path.basename(argv[0]))
        p = run(argv + ['--check-config'], ok=False)
        check(p.returncode == 0, '%s ExecStart with --check-config: exit %d\n%s' % (src, p.returncode, p.stderr))
    print('ok: ExecStart of both units (credentials, --resume) and the sample owner config pass --check-config')

# ---------------------------------------------------------------- Kubernetes

def k8s_docs():
    import yaml
    docs = []
    for f in sorted(glob.glob(os.path.join(DEPLOY, 'k8s', '*.yaml'))):
        try:
            for dd in yaml.safe_load_all(open(f)):
                if dd is not None:
                    docs.append((os.path.basename(f), dd))
        except yaml.YAMLError as e:
            raise Fail('%s does not parse: %s' % (f, e))
    return docs

def secret_created(name, doc):
    """docs/deploy.md creates Secret `name`: a `kubectl ... create secret TYPE name`
    line, or for dpasync-<owner> a `create secret TYPE "dpasync-$o"` line in a
    `for o in ...` loop over names that include <owner>."""
    for l in doc.splitlines():
        if re.search(r'create secret \S+ "?%s"?(\s|$)' % re.escape(name), l):
            return True
    m = re.search(r'for (\w+) in ([^;]*);.*\n?.*create secret \S+ "?dpasync-\$\{?\1\}?"?', doc)
    return bool(m) and name[len('dpasync-'):] in m.group(2).split()

def pod_checks(f, kind, name, spec, configmaps, secrets_doc, claims):
    vols = {v['name']: v for v in spec.get('volumes', [])}
    sc = spec.get('securityContext', {})
    check(sc.get('runAsNonRoot') is True and sc.get('runAsUser', 0) != 0,
          '%s %s: pod must run as non-root' % (kind, name))
    check(spec.get('automountServiceAccountToken') is False, '%s %s: service account token mounted' % (kind, name))
    for c in spec['containers']:
        csc = c.get('securityContext', {})
        check(csc.get('allowPrivilegeEscalation') is False and csc.get('readOnlyRootFilesystem') is True
              and csc.get('capabilities', {}).get('drop') == ['ALL'],
              '%s %s: container %s is not locked down' % (kind, name, c['name']))
        for m in c.get('volumeMounts', []):
            check(m['name'] in vols or m['name'] in claims,
                  '%s %s: mount %s has no volume' % (kind, name, m['name']))
    for v in vols.values():
        refs = []
        if 'configMap' in v:
            check(v['configMap']['name'] in configmaps, '%s %s: no ConfigMap %s' % (kind, name, v['configMap']['name']))
        if 'secret' in v:
            refs.append(v['secret']['secretName'])
        for s in v.get('projected', {}).get('sources', []):
            if 'secret' in s:
                refs.append(s['secret']['name'])
        if 'persistentVolumeClaim' in v:
            check(v['persistentVolumeClaim']['claimName'] in claims,
                  '%s %s: no PVC %s' % (kind, name, v['persistentVolumeClaim']['claimName']))
        for r in refs:
            check(secret_created(r, secrets_doc),
                  '%s %s: Secret %s is not created in docs/deploy.md' % (kind, name, r))
    return vols

def check_k8s(t):
    docs = k8s_docs()
    check(docs, 'no Kubernetes manifests')
    for f, dd in docs:
        check(isinstance(dd, dict) and dd.get('apiVersion') and dd.get('kind')
              and isinstance(dd.get('metadata'), dict) and dd['metadata'].get('name'),
              '%s: a document without apiVersion/kind/metadata.name' % f)
    by = {}
    for f, dd in docs:
        by.setdefault((dd['kind'], dd['metadata']['name'], f), dd)
    secrets_doc = open(os.path.join(ROOT, 'docs', 'deploy.md')).read()
    kust = [dd for f, dd in docs if dd['kind'] == 'Kustomization']
    check(len(kust) == 1, 'want one kustomization.yaml')
    res = kust[0]['resources']
    for r in res:
        check(os.path.exists(os.path.join(DEPLOY, 'k8s', r)), 'kustomization: missing %s' % r)
    files = {f for f in res}
    cms = {dd['metadata']['name'] for f, dd in docs if dd['kind'] == 'ConfigMap' and f in files}
    pvcs = {dd['metadata']['name'] for f, dd in docs if dd['kind'] == 'PersistentVolumeClaim' and f in files}
    jobs = [dd for f, dd in docs if dd['kind'] == 'Job' and f in files]
    deps = [dd for f, dd in docs if dd['kind'] == 'Deployment' and f in files]
    sts = [dd for f, dd in docs if dd['kind'] == 'StatefulSet' and f in files]
    svcs = {dd['metadata']['name']: dd for f, dd in docs if dd['kind'] == 'Service' and f in files}
    # The learner is a one-shot Job: one pod at a time, complete when
    # learnerd exits 0, failed at once on exit 2, nothing that idles.
    check(not deps, 'the test cluster has a Deployment: %s' % [dd['metadata']['name'] for dd in deps])
    check(len(jobs) == 1 and jobs[0]['metadata']['name'] == 'learner', 'want one Job "learner"')
    L = jobs[0]['spec']
    check(L.get('completions') == 1 and L.get('parallelism') == 1, 'learner Job: completions and parallelism 1')
    check(L.get('podReplacementPolicy') == 'Failed', 'learner Job: podReplacementPolicy Failed (one learner at a time)')
    check(L['template']['spec'].get('restartPolicy') == 'Never', 'learner Job: restartPolicy Never')
    fj = [r for r in L.get('podFailurePolicy', {}).get('rules', []) if r.get('action') == 'FailJob']
    check(any(r.get('onExitCodes', {}).get('operator') == 'In' and 2 in r['onExitCodes'].get('values', [])
              and r['onExitCodes'].get('containerName') == 'learnerd' for r in fj),
          'learner Job: exit 2 of learnerd must fail the Job (podFailurePolicy)')
    for c in L['template']['spec']['containers']:
        probes = json.dumps([c.get('livenessProbe'), c.get('readinessProbe')])
        check('/run/dpasync/done' not in probes, 'learner Job: a probe still expects an idle wrapper')
    lv = pod_checks('learner.yaml', 'Job', 'learner', L['template']['spec'], cms, secrets_doc, pvcs)
    check(any('persistentVolumeClaim' in v for v in lv.values()), 'learner: no PVC mounted')
    check('learner' in svcs and any(p['port'] == 7800 for p in svcs['learner']['spec']['ports']),
          'no Service learner on 7800')
    check(len(sts) == 1, 'want one StatefulSet')
    S = sts[0]['spec']
    claims = {c['metadata']['name'] for c in S.get('volumeClaimTemplates', [])}
    check(claims, 'owners: StatefulSet without volumeClaimTemplates')
    ov = pod_checks('owners.yaml', 'StatefulSet', sts[0]['metadata']['name'], S['template']['spec'],
                    cms, secrets_doc, claims | pvcs)
    mounts = [m['name'] for c in S['template']['spec']['containers'] for m in c['volumeMounts']]
    check(claims <= set(mounts), 'owners: the ledger claim is not mounted')
    proj = [s['secret'] for s in ov['owners-tls']['projected']['sources']]
    want = ['dpasync-%s-%d' % (sts[0]['metadata']['name'], i) for i in range(S['replicas'])]
    check([p['name'] for p in proj] == want, 'owners: projected Secrets %s, want %s' % ([p['name'] for p in proj], want))
    lconf = [dd for f, dd in docs if dd['kind'] == 'ConfigMap' and dd['metadata']['name'] == 'dpasync-learner'][0]
    ol = re.search(r'^owners\s*=\s*(.*)$', lconf['data']['learnerd.conf'], re.M).group(1)
    check([x.strip() for x in ol.split(',')] == [w[len('dpasync-'):] for w in want],
          'learnerd.conf owners %s do not match the StatefulSet pods' % ol)
    sa = [dd for f, dd in docs if f == 'owner-standalone.yaml' and dd['kind'] == 'Deployment']
    check(len(sa) == 1, 'owner-standalone.yaml: want one Deployment')
    scm = {dd['metadata']['name'] for f, dd in docs if f in ('owner-standalone.yaml', 'scripts.yaml') and dd['kind'] == 'ConfigMap'}
    spvc = {dd['metadata']['name'] for f, dd in docs if f == 'owner-standalone.yaml' and dd['kind'] == 'PersistentVolumeClaim'}
    pod_checks('owner-standalone.yaml', 'Deployment', 'owner', sa[0]['spec']['template']['spec'], scm, secrets_doc, spvc)
    print('ok: %d Kubernetes documents parse; Job/StatefulSet/Deployment/PVC/Service/Secret references consistent'
          % len(docs))
    check_k8s_schema(docs)
    return docs

def check_k8s_schema(docs):
    """Every object against the Kubernetes API schemas (npm kubernetes-models,
    installed by scripts/deps.sh; tests/integration/deploy/k8s_schema.mjs), and a
    broken copy of the learner Job is refused (the check can fail)."""
    mods = os.environ.get('DP_K8S_SCHEMA_DIR', '/var/cache/dpasync/k8s-schema')
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'k8s_schema.mjs')
    objs = [[f, dd] for f, dd in docs if dd['kind'] != 'Kustomization']
    def validate(objs):
        return subprocess.run(['node', script, mods], input=json.dumps(objs), capture_output=True,
                              text=True, timeout=120)
    check(shutil.which('node') is not None, 'no node (Debian package nodejs; scripts/deps.sh installs it)')
    p = validate(objs)
    check(p.returncode == 0, 'Kubernetes schema validation (%d):\n%s%s' % (p.returncode, p.stdout, p.stderr))
    n = len([l for l in p.stdout.splitlines() if l.startswith('ok ')])
    check(n == len(objs), 'schema validation checked %d of %d objects' % (n, len(objs)))
    broken = json.loads(json.dumps(objs))
    for f, dd in broken:
        if dd['kind'] == 'Job':
            dd['spec']['backoffLimit'] = 'five'
            del dd['spec']['template']['spec']['containers'][0]['name']
    p = validate(broken)
    check(p.returncode == 1 and 'backoffLimit' in p.stdout and 'name' in p.stdout,
          'schema validation accepted a broken Job:\n' + p.stdout)
    print('ok: %d Kubernetes objects valid against the API schemas (kubernetes-models); a broken Job is refused'
          % n)

def check_k8s_run(t, docs, bins):
    cm = lambda n, f: [dd for ff, dd in docs if ff == f and dd['kind'] == 'ConfigMap'
                       and dd['metadata']['name'] == n][0]['data']
    k = os.path.join(t, 'k8s')
    os.makedirs(k, mode=0o755)
    os.chmod(k, 0o755)
    pfd = os.path.join(k, 'ports')      # where the test's port files go
    os.makedirs(pfd)
    os.chown(pfd, IMAGE_UID, IMAGE_UID)
    script = os.path.join(k, 'run.sh')
    open(script, 'w').write(cm('dpasync-scripts', 'scripts.yaml')['run.sh'])
    os.chmod(script, 0o555)
    p = run(['shellcheck', script], ok=False)
    check(p.returncode == 0, 'shellcheck run.sh (scripts.yaml):\n' + p.stdout)
    certs = os.path.join(k, 'certs')
    names = ['owner-0', 'owner-1', 'owner-2']
    run([bins['dpasync'], 'certs', '--out', certs, '--names', ','.join(names), '--learner-name', 'learner'])
    binpath = os.path.dirname(bins['learnerd'])

    def pod(name, conf_name, conf_file, conf_key, secrets):
        """A pod's file system as kubelet makes it with runAsUser/runAsGroup/
        fsGroup 10001: ConfigMap files root 0644; Secret files root:10001 and
        group-readable (the mode | 0440); emptyDir and PVC roots root:10001
        02770."""
        r = os.path.join(k, name)
        etc, rund, state = r + '/etc', r + '/run', r + '/state'
        os.makedirs(etc + '/conf')
        os.makedirs(etc + '/ca')
        for x in (rund, state, r + '/out', r + '/tmp'):
            os.makedirs(x)
            os.chown(x, 0, IMAGE_UID)
            os.chmod(x, 0o2770)
        text = cm(conf_name, conf_file)[conf_key]
        text = text.replace('/etc/dpasync/', etc + '/').replace('/var/lib/dpasync/state', state)
        text = text.replace('/var/lib/dpasync/out', r + '/out')
        open(os.path.join(etc, 'conf', conf_key), 'w').write(text)
        os.chmod(os.path.join(etc, 'conf', conf_key), 0o644)
        shutil.copy(certs + '/ca.crt', etc + '/ca/ca.crt')
        os.chown(etc + '/ca/ca.crt', 0, IMAGE_UID)
        os.chmod(etc + '/ca/ca.crt', 0o644)
        for dst, src in secrets.items():
            os.makedirs(os.path.dirname(os.path.join(etc, dst)), exist_ok=True)
            shutil.copy(src, os.path.join(etc, dst))
            os.chown(os.path.join(etc, dst), 0, IMAGE_UID)
            os.chmod(os.path.join(etc, dst), 0o440)
        env = dict(os.environ, DP_ETC=etc, DP_RUN=rund, DP_STATE=state, HOSTNAME=name, TMPDIR=r + '/tmp',
                   PATH=binpath + ':' + os.environ['PATH'], OPENBLAS_NUM_THREADS='1')
        return env, r

    owner_secrets = {}
    for n in names:
        owner_secrets['owners/%s/tls.crt' % n] = '%s/%s.crt' % (certs, n)
        owner_secrets['owners/%s/tls.key' % n] = '%s/%s.key' % (certs, n)
    lenv, lr = pod('learner-7d9f-x2', 'dpasync-learner', 'learner.yaml', 'learnerd.conf',
                   {'tls/tls.crt': certs + '/learner.crt', 'tls/tls.key': certs + '/learner.key'})
    pf = os.path.join(pfd, 'learner.ports')
    llog = os.path.join(k, 'learner.log')
    lp = start(as_user(['/bin/bash', script, 'learnerd', '--listen', '127.0.0.1:0', '--port-file', pf,
                '--metrics-listen', '127.0.0.1:0', '--T', '30'], IMAGE_UID), lenv, llog)
    wait_file(pf, lp, 'k8s learner', 30)
    port = ports(pf)['tls']
    check(oct(os.stat(os.path.join(lr, 'run', 'tls.key')).st_mode & 0o777) == '0o600', 'learner key not 0600')
    ops = []
    for n in names:
        oenv, orr = pod(n, 'dpasync-owner', 'owners.yaml', 'ownerd.conf', owner_secrets)
        gen = [e for c in [dd for ff, dd in docs if dd['kind'] == 'StatefulSet'][0]['spec']['template']['spec']['containers']
               for e in c.get('env', [])]
        for e in gen:
            oenv[e['name']] = e['value']
        oenv['DP_GEN_ROWS'] = '1500'
        ops.append((n, orr, start(as_user(['/bin/bash', script, 'ownerd', '--learner', '127.0.0.1:' + port,
                                   '--metrics-listen', '127.0.0.1:0', '--rate', '20'], IMAGE_UID), oenv,
                                  os.path.join(k, n + '.log'))))
    # The job ends: the learner's wrapper exits 0 (its Job is Complete); the
    # owners' wrappers idle (a StatefulSet pod stays up, not restarted).
    watch(lp, llog, [(op, os.path.join(k, n + '.log')) for n, _, op in ops], 120)
    check(lp.returncode == 0 and not os.path.exists(os.path.join(lr, 'run', 'done')),
          'k8s learner wrapper after the job: exit %d, idle marker %s:\n%s'
          % (lp.returncode, os.path.exists(os.path.join(lr, 'run', 'done')), open(llog).read()[-2000:]))
    model = json.load(open(os.path.join(lr, 'out', 'job', 'model.json')))
    check(len(model['theta']) == 11, 'k8s model: %s' % model)
    for n, orr, op in ops:
        for _ in range(200):
            if os.path.exists(os.path.join(orr, 'run', 'done')):
                break
            check(op.poll() is None, 'k8s %s wrapper exited (%s):\n%s' % (n, op.returncode,
                  open(os.path.join(k, n + '.log')).read()[-2000:]))
            time.sleep(0.1)
        check(os.path.exists(os.path.join(orr, 'state', 'model.json')), 'k8s %s: no model' % n)
        jobs = os.path.join(orr, 'state', 'job.ledger', 'jobs')   # the ledger directory's job files
        check(any(os.path.getsize(os.path.join(jobs, f)) >= 256 for f in os.listdir(jobs)
                  if f.endswith('.ledger')), 'k8s %s: no job ledger in %s' % (n, jobs))
        check(oct(os.stat(os.path.join(orr, 'run', 'tls.key')).st_mode & 0o777) == '0o600', '%s key not 0600' % n)
    time.sleep(0.5)
    check(all(op.poll() is None for _, _, op in ops), 'an owner wrapper exited instead of idling')
    for p in [op for _, _, op in ops]:
        p.send_signal(signal.SIGTERM)
        finish(p, 10, 'idle wrapper after SIGTERM')
    # The owners' data is what a joint `dpasync gen` gives.
    run([bins['dpasync'], 'gen', '--rows', '1500,1500,1500', '--features', '10', '--seed', '1',
         '--out', os.path.join(k, 'joint')])
    for i, (n, orr, _) in enumerate(ops):
        check(sha(os.path.join(orr, 'state', 'data.csv')) == sha(os.path.join(k, 'joint', 'owner-%d.csv' % (i + 1))),
              'k8s %s: generated data differs from the joint generation' % n)
    print('ok: k8s run.sh ran a job (learner + 3 owners by pod name), keys 0600, data = joint gen; '
          'the learner exits 0 after the job, the owners idle and exit on SIGTERM')

    # SIGTERM during a run reaches learnerd: exit 0, no idling.
    env2, r2 = pod('learner-sigterm', 'dpasync-learner', 'learner.yaml', 'learnerd.conf',
                   {'tls/tls.crt': certs + '/learner.crt', 'tls/tls.key': certs + '/learner.key'})
    pf2 = os.path.join(pfd, 'learner2.ports')
    p2 = start(as_user(['/bin/bash', script, 'learnerd', '--listen', '127.0.0.1:0', '--port-file', pf2,
                '--metrics-listen', '127.0.0.1:0'], IMAGE_UID), env2, os.path.join(k, 'learner2.log'))
    wait_file(pf2, p2, 'k8s learner (signal test)', 30)
    p2.send_signal(signal.SIGTERM)
    rc, _ = finish(p2, 15, 'k8s learner wrapper after SIGTERM', os.path.join(k, 'learner2.log'))
    check(rc == 0 and not os.path.exists(os.path.join(r2, 'run', 'done')),
          'SIGTERM during a run: exit %d, idle marker %s' % (rc, os.path.exists(os.path.join(r2, 'run', 'done'))))
    log2 = open(os.path.join(k, 'learner2.log')).read()
    check('idle' not in log2, 'the wrapper idled after SIGTERM')
    # An owner pod without its Secret is refused with a clear message.
    env3, _ = pod('owner-7', 'dpasync-owner', 'owners.yaml', 'ownerd.conf', owner_secrets)
    p3 = subprocess.run(as_user(['/bin/bash', script, 'ownerd'], IMAGE_UID), env=env3, capture_output=True, text=True, timeout=20)
    check(p3.returncode == 2 and 'dpasync-owner-7' in p3.stderr, 'owner without Secret: %d %r'
          % (p3.returncode, p3.stderr))
    # The standalone owner's config passes --check-config.
    senv, sr = pod('hospital-a', 'dpasync-owner', 'owner-standalone.yaml', 'ownerd.conf',
                   {'owners/hospital-a/tls.crt': certs + '/owner-0.crt', 'owners/hospital-a/tls.key': certs + '/owner-0.key'})
    text = open(os.path.join(sr, 'etc', 'conf', 'ownerd.conf')).read().replace('/var/lib/dpasync/data', sr + '/state')
    open(os.path.join(sr, 'etc', 'conf', 'ownerd.conf'), 'w').write(text)
    shutil.copy(os.path.join(k, 'joint', 'owner-1.csv'), os.path.join(sr, 'state', 'data.csv'))
    p4 = subprocess.run(as_user(['/bin/bash', script, 'ownerd', '--check-config'], IMAGE_UID),
                        env=dict(senv, DP_OWNER='hospital-a'),
                        capture_output=True, text=True, timeout=30)
    check(p4.returncode == 0, 'owner-standalone config --check-config: %d\n%s' % (p4.returncode, p4.stderr))
    print('ok: SIGTERM reaches learnerd through run.sh (exit 0, no idling); an owner without a Secret is '
          'refused; the standalone owner config passes --check-config')

# ----------------------------------------------------------------

def test(argv):
    need_tools()
    t = tmpdir('deploy')
    os.chmod(t, 0o755)       # the services run as uid 10001 from here
    try:
        bins, hcmd = check_dockerfile(t)
        check_build_script(t)
        check_healthcheck(t, bins, hcmd)
        check_csr(t, bins)
        check_compose_files(t)
        check_compose_run(t, os.path.dirname(bins['learnerd']))
        check_systemd(t, bins)
        check_sandbox_job(t, bins)
        docs = check_k8s(t)
        check_k8s_run(t, docs, bins)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        cleanup(t)

main(test)
