# SPDX-License-Identifier: Apache-2.0
"""The Docker engine and images for the deploy suite (docs/deploy.md §9).

- The client is the one that matches the daemon: Debian's docker.io puts
  dockerd in /usr/sbin and its client in /usr/bin; another client earlier in
  PATH (a newer static one in /usr/local/bin, say) may want an API or a
  buildx plugin that this daemon does not have.
- A daemon that is not running is started, and stopped again by close();
  one that was running is left alone.
- The base image debian:12 (and debian:12-slim) is pulled, or where no
  registry answers, made with debootstrap from the Debian mirror apt uses
  and imported.  It is kept for later runs.
- Images are built from deploy/Dockerfile with BuildKit, each target under
  its own tag dpasync-test:<target>; the build stage is shared.
"""
import glob, os, re, shutil, subprocess, tempfile, threading, time
from harness import Fail, check

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
TAG = 'dpasync-test'

def docker_bin():
    dockerd = shutil.which('dockerd')
    if dockerd:
        twin = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(dockerd))), 'bin', 'docker')
        if os.access(twin, os.X_OK):
            return twin
    d = shutil.which('docker')
    check(d is not None, 'no docker client (Debian package docker.io; scripts/deps.sh installs it)')
    return d

class Engine:
    def __init__(self, log_dir):
        self.docker = docker_bin()
        self.env = dict(os.environ, DOCKER_BUILDKIT='1')
        self.started = None
        self.log_dir = log_dir
        self.times = {}

    def run(self, args, ok=True, timeout=600, input=None, capture=True):
        p = subprocess.run([self.docker] + [str(a) for a in args], env=self.env, input=input,
                           capture_output=capture, text=True, timeout=timeout)
        if ok and p.returncode != 0:
            raise Fail('docker %s failed (%d):\n%s%s' % (' '.join(map(str, args))[:300], p.returncode,
                                                         (p.stdout or '')[-3000:], (p.stderr or '')[-3000:]))
        return p

    def up(self):
        """Use the running daemon, or start one (close() stops it)."""
        if self.run(['info'], ok=False, timeout=60).returncode == 0:
            return
        dockerd = shutil.which('dockerd')
        check(dockerd is not None, 'no dockerd (Debian package docker.io; scripts/deps.sh installs it)')
        t0 = time.time()
        log = open(os.path.join(self.log_dir, 'dockerd.log'), 'w')
        self.started = subprocess.Popen([dockerd], stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        for _ in range(600):
            if self.started.poll() is not None:
                raise Fail('dockerd exited %d:\n%s' % (self.started.returncode,
                           open(os.path.join(self.log_dir, 'dockerd.log')).read()[-3000:]))
            if self.run(['info'], ok=False, timeout=60).returncode == 0:
                self.times['dockerd start'] = time.time() - t0
                return
            time.sleep(0.1)
        raise Fail('dockerd did not answer in 60 s')

    def close(self):
        if self.started is not None and self.started.poll() is None:
            self.started.terminate()
            try:
                self.started.wait(60)
            except subprocess.TimeoutExpired:
                self.started.kill()
                self.started.wait()

    def has_image(self, ref):
        return self.run(['image', 'inspect', ref], ok=False, timeout=60).returncode == 0

    def pull(self, ref, secs=60):
        try:
            return self.run(['pull', ref], ok=False, timeout=secs).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def base_image(self):
        """debian:12 and debian:12-slim, pulled or made with debootstrap."""
        t0 = time.time()
        if not self.has_image('debian:12'):
            if not self.pull('debian:12'):
                self.debootstrap()
        if not self.has_image('debian:12-slim'):
            if not self.pull('debian:12-slim'):
                self.run(['tag', 'debian:12', 'debian:12-slim'])
        self.times['base image'] = time.time() - t0

    def debootstrap(self):
        check(shutil.which('debootstrap') is not None,
              'no debootstrap to make the base image (Debian package debootstrap; scripts/deps.sh)')
        mirror = apt_mirror()
        d = tempfile.mkdtemp(prefix='dp-debootstrap-')
        try:
            p = subprocess.run(['debootstrap', '--variant=minbase', 'bookworm', d, mirror],
                               capture_output=True, text=True, timeout=900)
            check(p.returncode == 0, 'debootstrap from %s failed (%d):\n%s%s'
                  % (mirror, p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
            tar = subprocess.Popen(['tar', '-C', d, '-c', '.'], stdout=subprocess.PIPE)
            imp = subprocess.run([self.docker, 'import', '-', 'debian:12'], stdin=tar.stdout,
                                 capture_output=True, text=True, env=self.env, timeout=600)
            tar.stdout.close()
            check(tar.wait() == 0 and imp.returncode == 0, 'docker import failed: %s' % imp.stderr)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def build(self, target):
        """Build deploy/Dockerfile's target as dpasync-test:<target>; the
        Debian archive is the only thing reached (--network host, for apt)."""
        t0 = time.time()
        log = os.path.join(self.log_dir, 'build-%s.log' % target)
        with open(log, 'w') as f:
            p = subprocess.run([self.docker, 'build', '--network', 'host', '--progress', 'plain',
                                '--target', target, '-f', os.path.join(ROOT, 'deploy', 'Dockerfile'),
                                '-t', '%s:%s' % (TAG, target), ROOT],
                               stdout=f, stderr=subprocess.STDOUT, env=self.env, timeout=1200)
        check(p.returncode == 0, 'docker build --target %s failed (%d):\n%s'
              % (target, p.returncode, open(log).read()[-4000:]))
        self.times['image ' + target] = time.time() - t0
        if target in ('tools', 'systemd'):
            check_reused(open(log).read(), target)
        return '%s:%s' % (TAG, target)

    def build_all(self, targets):
        """runtime first (it builds the shared build stage), then the rest
        side by side; prometheus needs no build stage and starts at once."""
        errs = []
        def one(t):
            try:
                self.build(t)
            except Exception as e:    # reported below, in the caller's thread
                errs.append(e)
        first = [t for t in targets if t in ('runtime', 'prometheus')]
        rest = [t for t in targets if t not in first]
        th = [threading.Thread(target=one, args=(t,)) for t in first]
        for x in th:
            x.start()
        th[0].join()
        th2 = [threading.Thread(target=one, args=(t,)) for t in rest]
        for x in th2:
            x.start()
        for x in th[1:] + th2:
            x.join()
        if errs:
            raise errs[0]

def check_reused(text, target):
    """A target built after runtime reuses the build stage: BuildKit's
    plain log shows its compile step (the RUN of scripts/deb.sh, which
    builds the package) as CACHED, not compiled again (docs/deploy.md §5
    "Images")."""
    ids = re.findall(r'^(#\d+) \[build +\d+/\d+\] RUN .*scripts/deb\.sh', text, re.M)
    check(ids, 'docker build --target %s: no compile step in its log' % target)
    check(all(re.search(r'^%s CACHED$' % i, text, re.M) for i in ids),
          'docker build --target %s compiled the build stage again:\n%s'
          % (target, '\n'.join(l for l in text.splitlines() if l.startswith(ids[0]))[-2000:]))

def apt_mirror():
    """The Debian archive apt uses for bookworm (deb822 .sources or
    one-line .list files); deb.debian.org when none is found."""
    files = glob.glob('/etc/apt/sources.list') + sorted(glob.glob('/etc/apt/sources.list.d/*'))
    for f in files:
        try:
            text = open(f).read()
        except OSError:
            continue
        if f.endswith('.sources'):
            for stanza in re.split(r'\n\s*\n', text):
                uris = re.search(r'^URIs:\s*(.+)$', stanza, re.M)
                suites = re.search(r'^Suites:\s*(.+)$', stanza, re.M)
                if uris and suites and 'bookworm' in suites.group(1).split():
                    for u in uris.group(1).split():
                        if u.rstrip('/').endswith('/debian'):
                            return u
        else:
            for l in text.splitlines():
                m = re.match(r'\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s', l)
                if m and m.group(1).rstrip('/').endswith('/debian'):
                    return m.group(1)
    return 'http://deb.debian.org/debian'
