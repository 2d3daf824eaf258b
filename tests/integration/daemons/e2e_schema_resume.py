#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A resumed learnerd keeps the job's schema (docs/protocol.md §5 "Schema
agreement", docs/learnerd.md §5): real learnerd and three ownerd on
loopback.  The job runs; learnerd and every ownerd are killed (-9);
learnerd is resumed and a misconfigured owner-3 (its column x3 renamed x3b:
another schema fingerprint) says Hello first.  It is refused with Goodbye
SCHEMA_MISMATCH (it exits 2, naming the mismatch), the honest owner-1 and
owner-2 are then admitted, the honest owner-3 rejoins and the job
completes.  owner-3's refusal says what differs (the feature x3b), from
the job's schema summary kept in the checkpoint (version 4).

On the code before: the checkpoint did not keep the fingerprint, the
resumed learnerd took the first Hello's ("schema=... from the first owner
id=owner-3"), and the honest owners got SCHEMA_MISMATCH and exited 2; before version 4 the
refusal named two fingerprints only.

`learnerd --public` checks its forecast against the owners' schema
(docs/learnerd.md §3): a public.json made by `dpasync forecast` for target
price (the same rows, the column renamed) stops learnerd before the plan,
exit 2, with one line naming both targets; one made for y plans and the
job completes; one without the names (written before they were recorded)
is read with a warning.  On the code before, the first was planned from
silently.

Prepared files carry their transform (docs/ownerd.md "Prepared data"):
`dpasync prep` splits owner-1's rows for three owners; owner-3's copy has
a schema.json whose feature 3 is scaled 2.1.  Run without --schema, owner-3
is refused (exit 2, "feature 3 'x3': scale 2.1 vs ..."); with the same
schema.json as the others it is admitted and the job completes.  On the
code before, all three had the fingerprint of "no schema" and owner-3 was
admitted."""
import json, os, shutil, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, run, tmpdir, cleanup, main
from cluster import Cluster

T = 300


def wait_for(what, fn, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        if fn():
            return
        time.sleep(0.05)
    raise Fail('timed out waiting for ' + what)


def owner3_until_exit(c, data, timeout, admitted):
    """ownerd owner-3 on `data` (--once) until it exits: its exit status and
    error lines; Fail(admitted()) when it still runs after timeout s."""
    os.makedirs(c.path('bad3'), exist_ok=True)
    cmd = [c.ownerd, '--learner', '127.0.0.1:%d' % c.port, '--ca', c.certs() + '/ca.crt',
           '--cert', c.certs() + '/owner-3.crt', '--key', c.certs() + '/owner-3.key',
           '--data', data, '--bias', '--epsilon', '1', '--rate', '30',
           '--ledger', c.path('bad3', 'ledger'), '--model-out', c.path('bad3', 'model.json'),
           '--once']
    blog = c.path('bad3', 'ownerd.log')
    bad = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(blog, 'a'))
    c.procs.append(bad)
    try:
        rc = bad.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Fail(admitted())
    return rc, [l for l in open(blog).read().splitlines() if ' error ' in l]


def public_check(bindir, d, shared):
    """learnerd --public against the owners' agreed schema."""
    c = Cluster(bindir, d, owners=3, T=20, shared=shared)
    try:
        src = open(c.data(1)).read().splitlines()
        check(src[0].split(',')[-1] == 'y', 'unexpected header %r' % src[0])
        renamed = c.path('sample-price.csv')
        open(renamed, 'w').write('\n'.join([src[0][:-1] + 'price'] + src[1:]) + '\n')
        rows = ['--rows', '400,400,400', '--bias']
        bad, good, old = c.path('bad.json'), c.path('good.json'), c.path('old.json')
        open(bad, 'w').write(run([c.dp, 'forecast', '--sample', renamed, '--target', 'price']
                                 + rows).stdout)
        g = run([c.dp, 'forecast', '--sample', c.data(1), '--target', 'y'] + rows).stdout
        open(good, 'w').write(g)
        pub = json.loads(g)['public']
        check(pub.get('target') == 'y' and pub.get('features') == src[0].split(',')[:-1] + ['bias'] and
              pub['features'][-1] == 'bias', 'public.json names %r %r'
              % (pub.get('target'), pub.get('features')))
        del pub['target'], pub['features']
        open(old, 'w').write(json.dumps({'public': pub}))

        c.start_learner(['--public', bad])
        owners = [c.start_owner(i) for i in (1, 2, 3)]
        try:
            rc = c.learner.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise Fail('learnerd planned from a forecast for another target')
        for p in owners:
            p.kill()
            p.wait()
        log = open(c.path('learnerd.log')).read()
        errors = [l for l in log.splitlines() if ' error ' in l]
        check(rc == 2 and any("its forecast is for target 'price', but the owners' schema has "
                              "target 'y'" in l for l in errors),
              '--public for price: exit %s, %r' % (rc, errors))
        print('--public for price: exit 2 ("%s")' % errors[-1].split(' learner: ', 1)[-1][:160])

        for f, tag in ((good, 'good'), (old, 'old')):
            c.learner_log.close()
            os.rename(c.path('learner'), c.path('learner-' + tag + '-before'))
            c.start_learner(['--public', f])
            owners = [c.start_owner(i, ledger=c.path(tag, 'owner-%d' % i, 'ledger'))
                      for i in (1, 2, 3)]
            out = c.wait_learner(timeout=60)
            check('done k=20' in out, '--public %s: %r' % (tag, out))
            for p in owners:
                p.wait(timeout=30)
        log = open(c.path('learnerd.log')).read()
        check(log.count('names no target or features') == 1,
              'no warning for the old public.json')
        print('--public for y, and one without names (a warning): both jobs done')
    finally:
        c.close()


def prepared_check(bindir, d, shared):
    """Owners of files prepared with different schemas, without --schema."""
    os.makedirs(d, exist_ok=True)
    os.symlink(os.path.join(shared, 'certs'), os.path.join(d, 'certs'))
    c = Cluster(bindir, d, owners=3, T=20, shared=d)
    try:
        run([c.dp, 'prep', '--target', 'y', '--split', '3', '--out', c.path('data'),
             os.path.join(shared, 'data', 'owner-1.csv')])
        other = c.path('other')
        os.makedirs(other)
        shutil.copy(c.data(3), os.path.join(other, 'owner-3.csv'))
        schema = json.load(open(c.path('data', 'schema.json')))
        schema['columns'][2]['scale'] = 2.1
        json.dump(schema, open(os.path.join(other, 'schema.json'), 'w'))

        c.start_learner()
        owners = [c.start_owner(i) for i in (1, 2)]
        rc, errors = owner3_until_exit(
            c, os.path.join(other, 'owner-3.csv'), 30,
            lambda: 'owner-3, prepared with another schema, is still in the job')
        check(rc == 2 and any("feature 3 'x3': scale 2.1 vs " in l for l in errors),
              'owner-3 prepared with another schema: exit %s, %r' % (rc, errors))
        owners.append(c.start_owner(3))
        out = c.wait_learner(timeout=60)
        check('done k=20' in out, 'owners prepared alike: %r' % out)
        for i, p in enumerate(owners, 1):
            check(p.wait(timeout=30) == 0, 'ownerd %d exited %s' % (i, p.returncode))
        print('prepared with scale 2.1 for x3: refused ("%s"); prepared alike: done'
              % errors[-1].split('it differs in ', 1)[-1][:80])
    finally:
        c.close()


def test(argv):
    d = tmpdir('schema-resume')
    c = Cluster(argv[0], d, owners=3, rows=400, features=4, T=T)
    ok = False
    try:
        src = open(c.data(3)).read().splitlines()
        check(src[0].split(',')[2] == 'x3', 'unexpected header %r' % src[0])
        renamed = c.path('renamed.csv')
        open(renamed, 'w').write('\n'.join([src[0].replace('x3', 'x3b', 1)] + src[1:]) + '\n')

        c.start_learner(['--checkpoint-every', '5'])
        owners = [c.start_owner(i, rate='30') for i in (1, 2, 3)]
        c.wait_rows(60)
        c.learner.kill()
        c.learner.wait()
        for p in owners:
            p.kill()
            p.wait()
        log = lambda: open(c.path('learnerd.log')).read()
        before = log().count('\n')
        c.start_learner(['--checkpoint-every', '5'], resume=True)

        # The misconfigured owner-3 says Hello first.
        rc, errors = owner3_until_exit(
            c, renamed, 20, lambda: 'the misconfigured owner-3 was admitted by the resumed '
            'learnerd:\n%s' % '\n'.join(log().splitlines()[before:])[-2000:])
        check(rc == 2 and any('schema mismatch' in l for l in errors),
              'misconfigured owner-3: exit %s, %r' % (rc, errors))
        # ... and told what differs, although no matching owner has said
        # Hello since the resume: the checkpoint keeps the job's summary
        # (docs/reliability.md §7.2, finding 9).
        check(any('it differs in' in l and "'x3b'" in l for l in errors),
              'the mismatch after a resume names no difference: %r' % errors)
        after = '\n'.join(log().splitlines()[before:])
        check('from the first owner id=owner-3' not in after,
              'the resumed learnerd took owner-3\'s schema:\n' + after[-2000:])

        # The honest owners are admitted, owner-3 rejoins fixed.
        owners = [c.start_owner(i, rate='30') for i in (1, 2, 3)]
        out = c.wait_learner(timeout=120)
        check('done k=%d' % T in out, 'the resumed job did not complete: %r' % out)
        for i, p in enumerate(owners, 1):
            check(p.wait(timeout=30) == 0, 'ownerd %d exited %s' % (i, p.returncode))
        after = '\n'.join(log().splitlines()[before:])
        refused = [l for l in after.splitlines() if 'schema mismatch' in l]
        check(refused and all('owner-3' in l for l in refused),
              'only owner-3 may be refused: %r' % refused)
        print('resumed: owner-3 (x3 -> x3b) refused with exit 2 ("%s"); owners 1-3 finished'
              % errors[-1].split(' owner: ', 1)[-1][:150])
        c.close()
        public_check(argv[0], os.path.join(d, 'public'), d)
        prepared_check(argv[0], os.path.join(d, 'prepared'), d)
        ok = True
    finally:
        c.close()
        cleanup(d, ok)


main(test)
