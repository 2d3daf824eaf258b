#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A model for every epsilon spent (docs/learnerd.md "Partial model"): a job
that stops before T still leaves model.json, from the last theta, marked
"partial": true with k and the reason; `dpasync eval` and `dpasync report`
say "partial"; the exit status is the stop's (docs/design.md §10 "Exit
status").  Real learnerd on loopback:

1. SIGTERM mid-job (3 real ownerd, T = 600): learnerd exits 0 (a daemon
   stopped by a signal), model.json is version 2 with partial, reason
   "signal" and k equal to the checkpoint's k_done; eval of it exits 0 with
   a warning line and "partial": true, k, T and the reason in its JSON
   line; report.md says "Partial model" and report.json "partial": true;
   the job then resumed with --resume ends with a complete model.json
   (version 1, no "partial") over the partial one.  Both record the schema
   fingerprint the owners agreed on, and eval refuses the data read with
   another target (--target x1: as many columns) with exit 2.
2. Every owner exhausted early (3 scripted owners, fake_owner --refuse-at
   2, T = 50): learnerd exits 1 at k = 3, model.json is partial with
   reason "exhausted", k 3 and the stop's message as detail; eval says
   partial.
3. No answer applied (no owner ever connects, idle-timeout): exit 1 and
   no model.json: a model of k = 0 is the starting point, not a result.

On the code before: no model.json in 1 and 2 (the job that stopped left
only its checkpoint), so the first check of each fails ("no model.json");
before the fingerprint was recorded, eval --target x1 printed a psi
(exit 0).

Each part alone: E2E_PARTIAL_PART=1, 2 or 3."""
import json, os, signal, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, run, tmpdir, cleanup, main
from cluster import Cluster


def in_cluster(tag, bindir, body, **kw):
    """body(c) on a new Cluster(**kw); its directory is removed when body
    passes, kept (and named) when it fails."""
    d = tmpdir(tag)
    c = Cluster(bindir, d, owners=3, **kw)
    ok = False
    try:
        body(c)
        ok = True
    finally:
        c.close()
        cleanup(d, ok)


def learner_log(c):
    return open(c.path('learnerd.log')).read()


def read_model(c):
    path = c.path('learner', 'model.json')
    check(os.path.exists(path), 'no model.json after the job stopped:\n%s'
          % learner_log(c)[-2000:])
    return json.load(open(path))


def check_partial(c, m, reason, k, T, p):
    check(m.get('version') == 2 and m.get('partial') is True and m.get('reason') == reason,
          'model.json is not a partial model of reason %s: %r'
          % (reason, {x: m.get(x) for x in ('version', 'partial', 'reason', 'k')}))
    check(m['k'] == k and m['T'] == T and len(m['theta']) == p,
          'partial model k=%r T=%r p=%d, expected k=%d T=%d p=%d'
          % (m['k'], m['T'], len(m['theta']), k, T, p))
    lines = [l for l in learner_log(c).splitlines() if 'partial model written' in l]
    check(len(lines) == 1 and 'k=%d of T=%d ' % (k, T) in lines[0], 'learnerd log: %r' % lines)


def eval_partial(c, k, T, reason, flags=()):
    """dpasync eval of the partial model: exit 0, a warning, partial in JSON."""
    files = [c.data(i) for i in (1, 2, 3)]
    r = run([c.dp, 'eval'] + list(flags) + [c.path('learner', 'model.json')] + files)
    out = json.loads(r.stdout)
    check(out.get('partial') is True and out.get('k') == k and out.get('T') == T and
          out.get('reason') == reason, 'eval JSON of a partial model: %r' % out)
    warn = [l for l in r.stderr.splitlines() if 'warning' in l]
    check(len(warn) == 1 and 'is a partial model' in warn[0] and 'k=%d of T=%d' % (k, T)
          in warn[0], 'eval stderr: %r' % r.stderr)
    return out, warn[0]


def ckpt_k(c):
    return json.load(open(c.path('learner', 'checkpoint.json')))['state']['k_done']


def sigterm(c):
    T = c.T
    c.start_learner(['--idle-timeout', '60'])
    owners = [c.start_owner(i) for i in (1, 2, 3)]
    c.wait_rows(60)
    c.learner.send_signal(signal.SIGTERM)
    out, _ = c.learner.communicate(timeout=30)
    check(c.learner.returncode == 0 and 'done' not in out,
          'SIGTERM: exit %s, stdout %r (0 and no done line: docs/design.md §10)'
          % (c.learner.returncode, out))
    k = ckpt_k(c)
    check(0 < k < T, 'checkpoint k_done %d' % k)
    m = read_model(c)
    check_partial(c, m, 'signal', k, T, 5)
    check('detail' not in m, 'a signal has no message: %r' % m.get('detail'))
    ev, warn = eval_partial(c, k, T, 'signal')
    # The schema the owners agreed on is recorded: data read with another
    # target (x1 for y: the same column count) are refused, not judged.
    ck = json.load(open(c.path('learner', 'checkpoint.json')))
    check(m.get('schema', '').startswith('sha256:') and m['schema'] == ck['job'].get('schema'),
          'model.json schema %r, checkpoint %r' % (m.get('schema'), ck['job'].get('schema')))
    # And what it is of, from the owners' Hello summaries (issue 22 finding
    # 8): eval reads the data with the job's target rather than guess.
    check(m.get('target') == 'y' and isinstance(m.get('features'), list) and
          len(m['features']) == 5, 'model.json target %r features %r'
          % (m.get('target'), m.get('features')))
    files = [c.data(i) for i in (1, 2, 3)]
    r = run([c.dp, 'eval', '--target', 'x1', c.path('learner', 'model.json')] + files, ok=False)
    check(r.returncode == 2 and 'not the schema' in r.stderr and "'x1'" in r.stderr,
          'eval with another target: exit %d %r' % (r.returncode, r.stderr))
    # The report says it too (it reads model.json, trace and checkpoint).
    run([c.dp, 'report', c.path('learner'), '--data', ','.join(files)])
    md = open(c.path('learner', 'report.md')).read()
    rj = json.load(open(c.path('learner', 'report.json')))
    check('**Partial model**: the job stopped at k = %d of T = %d (signal)' % (k, T) in md,
          'report.md does not say partial:\n%s' % md[:1500])
    check(rj.get('partial') is True and rj.get('partial_k') == k and
          rj.get('partial_reason') == 'signal', 'report.json: %r'
          % {x: rj.get(x) for x in ('partial', 'partial_k', 'partial_reason')})
    # The resumed job ends with the complete model over the partial one.
    c.start_learner(['--idle-timeout', '60'], resume=True)
    out = c.wait_learner(timeout=180)
    check('done k=%d' % T in out, 'resumed job: %r' % out)
    m2 = read_model(c)
    check(m2['version'] == 1 and 'partial' not in m2 and 'reason' not in m2 and
          m2.get('schema') == m['schema'],
          'model.json after the resumed job is not the complete one: %r'
          % {x: m2.get(x) for x in ('version', 'partial', 'k', 'schema')})
    check(m2.get('target') == m['target'] and m2.get('features') == m['features'],
          'resumed model.json target %r features %r' % (m2.get('target'), m2.get('features')))
    for i, p in enumerate(owners, 1):
        check(p.wait(timeout=30) == 0, 'ownerd %d exited %s' % (i, p.returncode))
    r = run([c.dp, 'eval', c.path('learner', 'model.json')] + files)
    check('partial' not in r.stdout and 'partial' not in r.stderr,
          'eval of the complete model: %r %r' % (r.stdout, r.stderr))
    print('SIGTERM at k=%d of T=%d: exit 0, partial model psi %.4g; eval: "%s"; resumed '
          'to T: complete model' % (k, T, ev['psi'], warn))


def fake(c, bindir, name, extra):
    exe = os.path.join(bindir, 'tests', 'integration', 'daemons', 'fake_owner')
    k = c.certs()
    cmd = [exe, '--learner', '127.0.0.1:%d' % c.port, '--ca', k + '/ca.crt',
           '--cert', '%s/%s.crt' % (k, name), '--key', '%s/%s.key' % (k, name), '--id', name,
           '--p', '5', '--rows', '400', '--grad-a', '0.5', '--grad-c', '0.1,-0.2,0.3,0,0.05']
    proc = subprocess.Popen(cmd + list(extra), stdout=subprocess.DEVNULL,
                            stderr=open(c.path('%s.log' % name), 'a'))
    c.procs.append(proc)
    return proc


def exhausted(c, bindir):
    T = c.T
    c.start_learner(['--idle-timeout', '60'])
    owners = [fake(c, bindir, n, ['--refuse-at', '2']) for n in c.names]
    try:
        c.learner.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        raise Fail('learnerd still runs after every owner refused')
    log = learner_log(c)
    check(c.learner.returncode == 1 and 'every owner has exhausted its budget at k=3' in log,
          'every owner exhausted: exit %s (1: docs/design.md §10)\n%s'
          % (c.learner.returncode, log[-2000:]))
    m = read_model(c)
    check_partial(c, m, 'exhausted', 3, T, 5)
    check(m.get('detail', '').startswith('every owner has exhausted its budget at k=3 of '
                                         'T=%d' % T), 'detail %r' % m.get('detail'))
    check(ckpt_k(c) == 3, 'checkpoint k_done %d' % ckpt_k(c))
    # fake_owner's Hello has no schema summary, so model.json names no
    # target and eval guesses none (docs/reliability.md §7.2, finding 8).
    ev, warn = eval_partial(c, 3, T, 'exhausted', ['--target', 'y'])
    check('every owner has exhausted' in warn, 'eval warning without the reason: %r' % warn)
    for p in owners:
        p.wait(timeout=10)
    print('every owner exhausted at k=3 of T=%d: exit 1, partial model, eval: "%s"'
          % (T, warn))


def nothing_applied(c):
    c.start_learner(['--idle-timeout', '0.5'])
    try:
        c.learner.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        raise Fail('idle-timeout did not stop learnerd')
    check(c.learner.returncode == 1 and 'idle-timeout' in learner_log(c),
          'idle-timeout: exit %s' % c.learner.returncode)
    check(not os.path.exists(c.path('learner', 'model.json')),
          'a model.json of k = 0 was written')
    print('idle-timeout before any answer: exit 1, no model.json')


def test(argv):
    part = os.environ.get('E2E_PARTIAL_PART', '')
    b = argv[0]
    # p = 5 with --bias in the first two.
    if part in ('', '1'):
        in_cluster('e2e-partial-1', b, sigterm, rows=400, features=4, T=600)
    if part in ('', '2'):
        in_cluster('e2e-partial-2', b, lambda c: exhausted(c, b), rows=400, features=4, T=50)
    if part in ('', '3'):
        in_cluster('e2e-partial-3', b, nothing_applied, rows=50, features=2, T=20)


main(test)
