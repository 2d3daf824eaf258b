#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The peer-mode tools on small inputs checked by hand (docs/p2p.md):

- dpasync graph --from-angles: W_ij = exp((cos phi - 1)/gamma), the
  --min-weight cut and --keep; --knn K on cosine similarity of ratings
  (computed here independently); the written file reads back; bad input is
  one line and exit 2.
- dpasync prep --split-by COL: one file VALUE.csv per value with that
  value's rows in file order, COL not a feature; bad values and usage are
  one line and exit 2, and nothing is written.
- dpasync eval --peer: per-agent test RMSE and accuracy, their mean and
  the pooled value, against numbers computed here; a missing model file
  is one line and exit 2.

usage: peer_tools.py DPASYNC
"""
import csv, json, math, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, run, tmpdir, cleanup, main


def read_graph(path):
    with open(path, newline='') as f:
        rows = list(csv.reader(f))
    check(rows[0] == ['a', 'b', 'w'], 'graph header %r' % rows[0])
    return {tuple(sorted((a, b))): float(w) for a, b, w in rows[1:]}


def one_line_error(p, want):
    lines = p.stderr.strip().splitlines()
    check(p.returncode == 2 and len(lines) == 1 and want in lines[0],
          'expected exit 2 and one line with %r, got %d: %r' % (want, p.returncode, p.stderr))


def graph_tests(dp, d):
    targets = os.path.join(d, 'targets.csv')
    with open(targets, 'w') as f:
        f.write('id,t1,t2\na,1,0\nb,0,1\nc,1,1\n')
    g = os.path.join(d, 'g.csv')
    w_ac = math.exp((1 / math.sqrt(2) - 1) / 0.1)
    run([dp, 'graph', '--from-angles', targets, '--out', g])
    got = read_graph(g)
    # a and b are orthogonal: exp(-10) < 1e-3, dropped by default.
    check(set(got) == {('a', 'c'), ('b', 'c')}, 'angles edges %r' % got)
    check(all(abs(w - w_ac) < 1e-12 for w in got.values()), 'angles weights %r' % got)
    run([dp, 'graph', '--from-angles', targets, '--min-weight', '0', '--gamma', '0.5',
         '--out', g])
    got = read_graph(g)
    check(len(got) == 3 and abs(got[('a', 'b')] - math.exp(-2)) < 1e-12, 'gamma 0.5: %r' % got)
    run([dp, 'graph', '--from-angles', targets, '--min-weight', '0', '--keep', '1', '--out', g])
    check(set(read_graph(g)) == {('a', 'c'), ('b', 'c')}, '--keep 1')

    ratings = {'u1': {'m1': 5, 'm2': 3}, 'u2': {'m1': 4, 'm2': 3}, 'u3': {'m3': 5},
               'u4': {'m1': 1, 'm3': 4, 'm9': 2}, 'u5': {'m7': 3}}
    files = []
    for u, r in ratings.items():
        files.append(os.path.join(d, u + '.csv'))
        with open(files[-1], 'w') as f:
            f.write('rating,movie\n' + ''.join('%g,%s\n' % (v, m) for m, v in r.items()))

    def cos(a, b):
        dot = sum(v * b.get(m, 0) for m, v in a.items())
        return dot / math.sqrt(sum(v * v for v in a.values()) * sum(v * v for v in b.values()))
    for k in (1, 2):
        want = {}
        for u in ratings:
            sims = sorted(((-cos(ratings[u], ratings[v]), v) for v in ratings if v != u))
            for s, v in [x for x in sims if x[0] < 0][:k]:
                want[tuple(sorted((u, v)))] = -s
        p = run([dp, 'graph', '--knn', str(k), '--item', 'movie', '--out', g] + files)
        got = read_graph(g)
        check(set(got) == set(want) and all(abs(got[e] - want[e]) < 1e-12 for e in want),
              'knn %d: got %r want %r' % (k, got, want))
        check('isolated=1' in p.stdout, 'u5 shares no movie: %r' % p.stdout)
    print('graph: angles (cut, gamma, keep) and knn 1, 2 as computed by hand')

    bad = os.path.join(d, 'bad.csv')
    with open(bad, 'w') as f:
        f.write('id,t1\na,1\nb,x\n')
    one_line_error(run([dp, 'graph', '--from-angles', bad, '--out', g], ok=False),
                   "bad.csv:3: column 't1': not a finite number")
    with open(bad, 'w') as f:
        f.write('id,t1\na,1\na,2\n')
    one_line_error(run([dp, 'graph', '--from-angles', bad, '--out', g], ok=False),
                   "'a' is given twice")
    with open(bad, 'w') as f:
        f.write('id,t1\na,1\nb,0\n')
    one_line_error(run([dp, 'graph', '--from-angles', bad, '--out', g], ok=False),
                   "agent 'b': its vector is zero")
    one_line_error(run([dp, 'graph', '--knn', '2', '--out', g] + files, ok=False),
                   "no column 'item'")
    one_line_error(run([dp, 'graph', '--out', g], ok=False), 'exactly one of')
    dup = os.path.join(d, 'dup.csv')
    with open(dup, 'w') as f:
        f.write('movie,rating\nm1,3\nm1,4\n')
    one_line_error(run([dp, 'graph', '--knn', '1', '--item', 'movie', '--out', g, dup,
                        files[0]], ok=False),
                   "dup.csv:3: column 'movie': this item is rated twice")
    print('graph: 6 bad inputs, one line and exit 2 each')


def prep_tests(dp, d):
    raw = os.path.join(d, 'raw.csv')
    rows = [('bob', 1, 'x', 2.5), ('alice', 2, 'y', 3), ('bob', 3, 'y', 1), ('carol', 4, 'x', 0),
            ('alice', 5, 'x', 4), ('bob', 6, 'x', 2)]
    with open(raw, 'w') as f:
        f.write('x,user,c,y\n' + ''.join('%g,%s,%s,%g\n' % (x, u, c, y) for u, x, c, y in rows))
    out = os.path.join(d, 'owners')
    p = run([dp, 'prep', '--target', 'y', '--raw-target', '--split-by', 'user', '--out', out, raw])
    check('3 owner files' in p.stdout, 'prep said %r' % p.stdout)
    for u in ('alice', 'bob', 'carol'):
        with open(os.path.join(out, u + '.csv'), newline='') as f:
            got = list(csv.reader(f))
        check(got[0] == ['x', 'c=y', 'y'], '%s header %r (user must not be a feature)' %
              (u, got[0]))
        want = [y for uu, _, _, y in rows if uu == u]
        check([float(r[-1]) for r in got[1:]] == want, '%s rows %r, want targets %r' %
              (u, got[1:], want))
    check(sorted(os.listdir(out)) == ['alice.csv', 'bob.csv', 'carol.csv', 'schema.json'],
          'files %r' % os.listdir(out))
    # Again: refuses to overwrite, then with the schema into another DIR.
    one_line_error(run([dp, 'prep', '--target', 'y', '--split-by', 'user', '--out', out, raw],
                       ok=False), 'exists (use --force')
    out2 = os.path.join(d, 'owners2')
    run([dp, 'prep', '--schema', os.path.join(out, 'schema.json'), '--split-by', 'user', '--out',
         out2, raw])
    with open(os.path.join(out, 'bob.csv')) as f, open(os.path.join(out2, 'bob.csv')) as g:
        check(f.read() == g.read(), 'the same schema gave a different bob.csv')
    bad = os.path.join(d, 'badusers.csv')
    with open(bad, 'w') as f:
        f.write('x,user,y\n1,ok,2\n2,../evil,3\n')
    p = run([dp, 'prep', '--target', 'y', '--split-by', 'user', '--out', os.path.join(d, 'o3'),
             bad], ok=False)
    one_line_error(p, "badusers.csv:3: column 'user': the value cannot name an owner file")
    check('evil' not in p.stderr, 'the cell value leaked into the message: %r' % p.stderr)
    check(not os.path.exists(os.path.join(d, 'o3')), 'a failed prep wrote files')
    one_line_error(run([dp, 'prep', '--target', 'y', '--split-by', 'nope', '--out',
                        os.path.join(d, 'o4'), raw], ok=False), "no column 'nope' (--split-by)")
    one_line_error(run([dp, 'prep', '--target', 'y', '--split-by', 'user', '--split', '2',
                        '--out', os.path.join(d, 'o4'), raw], ok=False), 'not both')
    one_line_error(run([dp, 'prep', '--target', 'y', '--split-by', 'y', '--out',
                        os.path.join(d, 'o4'), raw], ok=False), 'is the target')
    print('prep --split-by: 3 files by value, rows in order, COL dropped; 5 bad inputs refused')


def model_file(path, model, theta, features, target='y'):
    with open(path, 'w') as f:
        json.dump({'format': 'dpasync-model', 'version': 1, 'model': model, 'mode': 'peer',
                   'theta': theta, 'features': features, 'target': target, 'bias': False}, f)


def eval_tests(dp, d):
    models = os.path.join(d, 'models')
    os.makedirs(models)
    tests = {'a': [(1, 2, 3.5), (0, 1, 0.5), (2, 2, 5)], 'b': [(1, 1, 1), (-1, 2, 0)]}
    thetas = {'a': [1.5, 0.25], 'b': [-0.5, 0.75]}
    files, want, sq, n = [], {}, 0, 0
    for ag, rows in tests.items():
        model_file(os.path.join(models, ag + '.json'), 'linear', thetas[ag], ['x1', 'x2'])
        files.append(os.path.join(d, ag + '.csv'))
        with open(files[-1], 'w') as f:
            f.write('x1,x2,y\n' + ''.join('%g,%g,%g\n' % r for r in rows))
        e = [(y - thetas[ag][0] * x1 - thetas[ag][1] * x2) ** 2 for x1, x2, y in rows]
        want[ag] = math.sqrt(sum(e) / len(e))
        sq += sum(e)
        n += len(e)
    r = json.loads(run([dp, 'eval', '--peer', '--models', models] + files).stdout)
    check(r['metric'] == 'rmse' and r['agents'] == 2 and r['rows'] == 5, 'eval %r' % r)
    got = {x['id']: x['rmse'] for x in r['per_agent']}
    check(all(abs(got[k] - want[k]) < 1e-12 for k in want), 'rmse %r, want %r' % (got, want))
    check(abs(r['mean'] - sum(want.values()) / 2) < 1e-12, 'mean %r' % r['mean'])
    check(abs(r['pooled'] - math.sqrt(sq / n)) < 1e-12, 'pooled %r' % r['pooled'])

    # Logistic: accuracy is the share of rows with y t > 0 (t = 0 is wrong).
    cls = os.path.join(d, 'cls')
    os.makedirs(cls)
    model_file(os.path.join(cls, 'c.json'), 'logistic', [1, -1], ['x1', 'x2'])
    cf = os.path.join(d, 'c.csv')
    with open(cf, 'w') as f:
        f.write('x1,x2,y\n2,1,1\n1,2,1\n1,1,1\n0,3,-1\n')
    r = json.loads(run([dp, 'eval', '--peer', '--models', cls, cf]).stdout)
    check(r['metric'] == 'accuracy' and abs(r['mean'] - 0.5) < 1e-15, 'accuracy %r' % r)

    one_line_error(run([dp, 'eval', '--peer', '--models', cls, files[0]], ok=False),
                   'a.json: cannot open')
    one_line_error(run([dp, 'eval', '--peer', files[0]], ok=False), '--peer needs --models DIR')
    model_file(os.path.join(models, 'b.json'), 'linear', [1, 2], ['x1', 'zz'])
    one_line_error(run([dp, 'eval', '--peer', '--models', models] + files, ok=False),
                   "feature 2 is 'x2' but the model")
    print('eval --peer: rmse, mean, pooled and accuracy as computed here; 3 bad inputs refused')


def test(argv):
    dp = argv[0]
    d = tmpdir('peer-tools')
    try:
        graph_tests(dp, d)
        prep_tests(dp, d)
        eval_tests(dp, d)
    finally:
        cleanup(d)


main(test)
