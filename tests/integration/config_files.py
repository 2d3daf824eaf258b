#!/usr/bin/python3
"""The shipped example configurations (deploy/learnerd.conf, ownerd.conf,
ownerd-peer.conf)
pass `--check-config` once their paths point at real files, flags override
them, and a bad key is one stderr line with exit 2."""
import os, re, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, run, tmpdir, cleanup, main

DEPLOY = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'deploy')

def localise(src, dst, d):
    text = open(os.path.join(DEPLOY, src)).read()
    text = text.replace('/etc/dpasync/', d + '/certs/').replace('/var/lib/dpasync/', d + '/state/')
    open(dst, 'w').write(text)

def test(argv):
    b = argv[0]
    dp, learnerd, ownerd = (os.path.join(b, x) for x in ('tools/dpasync', 'learner/learnerd', 'owner/ownerd'))
    d = tmpdir('config')
    try:
        run([dp, 'certs', '--out', d + '/certs', '--owners', '3'])
        os.makedirs(d + '/state')
        run([dp, 'gen', '--rows', '20', '--features', '3', '--out', d + '/g'])
        os.rename(d + '/g/owner-1.csv', d + '/state/owner-1.csv')
        lc, oc = d + '/learnerd.conf', d + '/ownerd.conf'
        localise('learnerd.conf', lc, d)
        localise('ownerd.conf', oc, d)
        p = run([learnerd, '--config', lc, '--check-config'])
        # T is planned (0) unless given; the file's answers-margin is applied.
        check(re.search(r'^t = 0$', p.stdout, re.M) and
              re.search(r'^answers-margin = 0\.1$', p.stdout, re.M),
              'effective T (planned: 0) or answers-margin not printed: %s' % p.stdout)
        p = run([ownerd, '--config', oc, '--check-config'])
        check(re.search(r'^welcome-timeout = (600|10m)$', p.stdout, re.M),
              'effective welcome-timeout not printed: %s' % p.stdout)
        p = run([learnerd, '--config', lc, '--check-config', '--T', '77'])
        check('77' in p.stdout, 'flag did not override the file: %s' % p.stdout)
        run([ownerd, '--config', oc, '--check-config'])
        # the peer-mode example (docs/peer-agents.md), with peer certificates
        run([dp, 'certs', '--out', d + '/pcerts', '--names', 'agent-1,agent-2', '--peer'])
        pc = d + '/ownerd-peer.conf'
        localise('ownerd-peer.conf', pc, d)
        text = open(pc).read().replace(d + '/certs/agent-', d + '/pcerts/agent-')
        text = text.replace(d + '/certs/ca.crt', d + '/pcerts/ca.crt')
        open(pc, 'w').write(text)
        with open(d + '/certs/graph.csv', 'w') as f:
            f.write('a,b,w\nagent-1,agent-2,1\n')
        with open(d + '/certs/peers.csv', 'w') as f:
            f.write('id,addr\nagent-2,127.0.0.1:7901\n')
        run([dp, 'gen', '--rows', '20', '--features', '3', '--task', 'classification',
             '--out', d + '/pg'])
        os.rename(d + '/pg/owner-1.csv', d + '/state/agent-1.csv')
        p = run([ownerd, '--config', pc, '--check-config'])
        check(re.search(r'^peer = true$', p.stdout, re.M) and
              re.search(r'^wakeups = 20$', p.stdout, re.M),
              'peer settings not printed: %s' % p.stdout)
        with open(lc, 'a') as f:
            f.write('no-such-key = 1\n')
        p = run([learnerd, '--config', lc, '--check-config'], ok=False)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        check(p.returncode == 2 and len(lines) == 1 and 'no-such-key' in lines[0],
              'bad key: exit %d, stderr %r' % (p.returncode, p.stderr))
        print('ok:', lines[0])
    finally:
        cleanup(d)

main(test)
