#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance for the file formats around `dpasync prep` (docs/data.md):
- --drop-missing drops exactly the rows with an empty cell in a used column
  (not in a dropped one), says how many on one stderr line (also when none),
  and without it the first such cell is an error naming file:line and column;
- a two-level column is one 0/1 feature named after its second level (sorted,
  or as listed with --levels); three levels stay one-hot; a version 1 schema
  with a two-level onehot column still applies as two features;
- DIR/sample.csv is the sample the schema was built from, transformed like
  the owner files (--sample-frac: rows of the owner files; --sample FILE:
  that file), and is not written without a sample option;
- a file prep already transformed is refused by every user of the schema
  (sim, eval, prep --schema) with exit 2 and one line, not transformed twice;
- eval takes the target from model.json, checks the data's features against
  the model's, and prints psi_zero = f(0)/f* - 1;
- the files of rows (owner-N.csv, sample.csv) are written 0600 whatever the
  umask (even 000), schema.json 0644 less the umask (0600 under 077);
- --names A,B,... names the owner files DIR/A.csv, DIR/B.csv (with --split
  and with one FILE each), holding what owner-1.csv, owner-2.csv hold
  without it; no owner-N.csv is written then; a wrong count, a name that
  is not a file name, a repeated name or "schema"/"sample" is exit 2 and
  one line, and an existing DIR/A.csv is not replaced without --force."""
import json, math, os, random, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, run, tmpdir, cleanup, main

def expect_error(cmd, must_contain, code=2):
    p = run(cmd, ok=False)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    check(p.returncode == code, 'exit %d, expected %d: %s\n%s' % (p.returncode, code, ' '.join(cmd), p.stderr))
    check(len(lines) == 1, 'expected one stderr line, got %d: %s\n%s' % (len(lines), ' '.join(cmd), p.stderr))
    for s in must_contain:
        check(s in lines[0], 'stderr %r does not mention %r' % (lines[0], s))
    print('ok:', lines[0])

def read_csv(path):
    with open(path) as f:
        rows = [l.rstrip('\n').split(',') for l in f]
    return rows[0], [[float(v) for v in r] for r in rows[1:]]

def raw_table(path, n, seed, empties):
    """x1 numeric, smoker yes/no, region a/b/c, note (dropped, often empty),
    price the target; the rows in `empties` have an empty x1."""
    rng = random.Random(seed)
    with open(path, 'w') as f:
        f.write('x1,smoker,region,note,price\n')
        for i in range(n):
            x1 = '' if i in empties else '%.3f' % rng.gauss(0, 2)
            smoker = rng.choice(['yes', 'no'])
            region = rng.choice(['a', 'b', 'c'])
            note = '' if rng.random() < 0.5 else 'n%d' % i
            price = 3 + (float(x1) if x1 else 0) + (2 if smoker == 'yes' else 0) + rng.gauss(0, 1)
            f.write('%s,%s,%s,%s,%.4f\n' % (x1, smoker, region, note, price))

def prep_modes(dp, raw, d):
    """Modes of what prep writes under umask 000 and 077."""
    for mask, schema_mode in ((0o000, 0o644), (0o077, 0o600)):
        out = os.path.join(d, 'modes-%03o' % mask)
        old = os.umask(mask)
        try:
            run([dp, 'prep', '--target', 'price', '--drop', 'note', '--drop-missing',
                 '--sample-frac', '0.25', '--split', '2', '--out', out, raw])
        finally:
            os.umask(old)
        want = {'owner-1.csv': 0o600, 'owner-2.csv': 0o600, 'sample.csv': 0o600,
                'schema.json': schema_mode}
        got = {f: os.stat(os.path.join(out, f)).st_mode & 0o777 for f in want}
        check(got == want, 'umask %03o: modes %s, want %s' % (
            mask, {f: oct(m) for f, m in got.items()}, {f: oct(m) for f, m in want.items()}))
    print('ok: rows written 0600 under umask 000 and 077, schema.json 0644 less the umask')

def prep_names(dp, raw, d, plain):
    """--names: the same files as owner-1.csv, owner-2.csv under other names."""
    out = os.path.join(d, 'named')
    common = ['prep', '--target', 'price', '--drop', 'note', '--drop-missing', '--sample-frac', '0.25',
              '--split', '2', '--seed', '5']
    p = run([dp] + common + ['--names', 'north,south-2', '--out', out, raw])
    check(sorted(os.listdir(out)) == ['north.csv', 'sample.csv', 'schema.json', 'south-2.csv'],
          '--names wrote %s' % sorted(os.listdir(out)))
    for name, old in (('north.csv', 'owner-1.csv'), ('south-2.csv', 'owner-2.csv')):
        check(open(os.path.join(out, name)).read() == open(os.path.join(plain, old)).read(),
              '%s differs from %s without --names' % (name, old))
    check(os.stat(os.path.join(out, 'north.csv')).st_mode & 0o777 == 0o600, 'north.csv not 0600')
    for names, words in (('a', ['1 name(s) for 2']), ('a,b,c', ['3 name(s) for 2']), ('a/b,c', ["'a/b'"]),
                         ('.x,c', ["'.x'"]), ('a,a', ["'a' given twice"]), ('schema,b', ["'schema'"])):
        expect_error([dp] + common + ['--names', names, '--out', os.path.join(d, 'n2'), raw], words)
    expect_error([dp] + common + ['--names', 'north,south-2', '--out', out, raw], ['exists', '--force'])
    run([dp] + common + ['--names', 'north,south-2', '--force', '--out', out, raw])
    files = [os.path.join(d, 'f%d.csv' % i) for i in (1, 2)]
    for i, f in enumerate(files):
        raw_table(f, 30, 10 + i, set())
    out2 = os.path.join(d, 'named2')
    run([dp, 'prep', '--target', 'price', '--drop', 'note', '--names', 'site-a,site-b', '--out', out2] + files)
    check(sorted(os.listdir(out2)) == ['schema.json', 'site-a.csv', 'site-b.csv'],
          '--names with two FILEs wrote %s' % sorted(os.listdir(out2)))
    print('ok: --names names the owner files; bad names refused')

def test(argv):
    dp, data = argv[0], argv[1]
    d = tmpdir('prep-formats')
    try:
        raw = os.path.join(d, 'raw.csv')
        empties = {3, 50, 51, 120}
        raw_table(raw, 200, 1, empties)

        # Missing cells: an error naming file:line and column without the
        # flag (row index 3 is line 5); dropped and counted with it.
        expect_error([dp, 'prep', '--target', 'price', '--drop', 'note', '--out', os.path.join(d, 'x'), raw],
                     ['raw.csv:5', "column 'x1'", '--drop-missing'])
        check(not os.path.exists(os.path.join(d, 'x')), 'a failed prep created its output')
        out = os.path.join(d, 'p')
        p = run([dp, 'prep', '--target', 'price', '--drop', 'note', '--drop-missing', '--sample-frac', '0.25',
                 '--split', '2', '--seed', '5', '--out', out, raw])
        err = [l for l in p.stderr.splitlines() if l.strip()]
        check(len(err) == 1 and 'dropped 4 of 200 rows with a missing cell in a used column' in err[0],
              'drop line: %r' % p.stderr)
        print('ok:', err[0])
        hdr, o1 = read_csv(os.path.join(out, 'owner-1.csv'))
        hdr2, o2 = read_csv(os.path.join(out, 'owner-2.csv'))
        check(len(o1) + len(o2) == 196, 'owners hold %d rows, want 196' % (len(o1) + len(o2)))
        # Two levels: one feature, 1 for the second in sorted order (yes).
        check(hdr == ['x1', 'smoker=yes', 'region=a', 'region=b', 'region=c', 'price'], 'header %s' % hdr)
        # The sample: round(0.25 * 196) rows of the owner files, same header.
        shdr, sm = read_csv(os.path.join(out, 'sample.csv'))
        check(shdr == hdr, 'sample.csv header %s' % shdr)
        check(len(sm) == 49, 'sample.csv has %d rows, want 49' % len(sm))
        owned = set(map(tuple, o1 + o2))
        check(all(tuple(r) in owned for r in sm), 'a sample.csv row is not an owner row')
        schema = json.load(open(os.path.join(out, 'schema.json')))
        check(schema['version'] == 2, 'schema version %s' % schema['version'])
        kinds = {c['name']: c['kind'] for c in schema['columns']}
        check(kinds == {'x1': 'numeric', 'smoker': 'binary', 'region': 'onehot', 'note': 'drop'}, 'kinds %s' % kinds)
        print('ok: two levels -> one feature, sample.csv = %d owner rows' % len(sm))
        prep_modes(dp, raw, d)
        prep_names(dp, raw, d, out)

        # --levels with two levels: the second as listed; 0 dropped is said.
        clean = os.path.join(d, 'clean.csv')
        raw_table(clean, 60, 2, set())
        out2 = os.path.join(d, 'lv')
        p = run([dp, 'prep', '--target', 'price', '--drop', 'note', '--drop-missing', '--levels', 'smoker=yes,no',
                 '--out', out2, clean])
        check('dropped 0 of 60 rows' in p.stderr, 'no drop line for 0 rows: %r' % p.stderr)
        check(read_csv(os.path.join(out2, 'owner-1.csv'))[0][1] == 'smoker=no', '--levels smoker=yes,no')
        check(not os.path.exists(os.path.join(out2, 'sample.csv')), 'sample.csv written without a sample')
        # --sample FILE: that file's rows, transformed.
        out3 = os.path.join(d, 'sf')
        run([dp, 'prep', '--target', 'price', '--drop', 'note', '--sample', clean, '--out', out3, raw,
             '--drop-missing'])
        s3 = read_csv(os.path.join(out3, 'sample.csv'))
        check(len(s3[1]) == 60 and s3[0] == hdr, 'sample.csv from --sample: %d rows' % len(s3[1]))
        # a stale sample.csv goes with --force when the new run has none
        p = run([dp, 'prep', '--target', 'price', '--drop', 'note', '--force', '--out', out3, clean])
        check(not os.path.exists(os.path.join(out3, 'sample.csv')), 'stale sample.csv kept')

        # A version 1 schema (before kind binary) applies as before: the
        # two-level onehot column stays two features.
        v1 = os.path.join(d, 'v1.json')
        with open(v1, 'w') as f:
            json.dump({'version': 1, 'columns': [
                {'name': 'x1', 'kind': 'numeric', 'center': 0, 'scale': 1},
                {'name': 'smoker', 'kind': 'onehot', 'levels': ['no', 'yes']},
                {'name': 'region', 'kind': 'drop'}, {'name': 'note', 'kind': 'drop'}],
                'target': {'name': 'price', 'kind': 'numeric'}}, f)
        run([dp, 'prep', '--schema', v1, '--out', os.path.join(d, 'v1out'), clean])
        h1 = read_csv(os.path.join(d, 'v1out', 'owner-1.csv'))[0]
        check(h1 == ['x1', 'smoker=no', 'smoker=yes', 'price'], 'version 1 schema gives %s' % h1)

        # Prepared files are refused by every user of the schema.
        sj, own = os.path.join(out, 'schema.json'), os.path.join(out, 'owner-1.csv')
        expect_error([dp, 'sim', '--schema', sj, '--T', '10', '--repeats', '1', '--out', os.path.join(d, 's'), own],
                     ['owner-1.csv is already prepared', 'without --schema'])
        expect_error([dp, 'prep', '--schema', sj, '--out', os.path.join(d, 'again'), own], ['already prepared'])
        # also where only a dropped column tells them apart (all numeric)
        dia = os.path.join(d, 'dia')
        run([dp, 'prep', '--target', 'target', '--drop', 'sex', '--split', '2', '--out', dia,
             os.path.join(data, 'diabetes.csv')])
        expect_error([dp, 'sim', '--schema', os.path.join(dia, 'schema.json'), '--T', '10', '--repeats', '1',
                      '--out', os.path.join(d, 's2'), os.path.join(dia, 'owner-1.csv')], ['already prepared'])
        # and where nothing in the header does (every column numeric, none
        # dropped): the values show it (age is centred near 48, scale 13)
        dia2 = os.path.join(d, 'dia2')
        run([dp, 'prep', '--target', 'target', '--split', '2', '--out', dia2,
             os.path.join(data, 'diabetes.csv')])
        expect_error([dp, 'sim', '--schema', os.path.join(dia2, 'schema.json'), '--T', '10',
                      '--repeats', '1', '--out', os.path.join(d, 's3'),
                      os.path.join(dia2, 'owner-1.csv')], ['looks already prepared', 'without --schema'])
        # while the raw table goes through that schema as before
        run([dp, 'sim', '--schema', os.path.join(dia2, 'schema.json'), '--T', '10', '--repeats', '1',
             '--out', os.path.join(d, 's4'), os.path.join(data, 'diabetes.csv')])

        # eval: the target from model.json, the features checked, psi_zero.
        files = [own, os.path.join(out, 'owner-2.csv')]
        so = os.path.join(d, 'sim')
        run([dp, 'sim', '--target', 'price', '--bias', '--T', '200', '--epsilon', 'inf', '--repeats', '1',
             '--out', so] + files)
        mpath = os.path.join(so, 'model.json')
        model = json.load(open(mpath))
        model.pop('target', None)
        json.dump(model, open(mpath, 'w'))
        want = json.loads(run([dp, 'eval', '--target', 'price', mpath] + files).stdout)
        # no target anywhere: refused, no column guessed (docs/reliability.md §7.2, finding 8)
        expect_error([dp, 'eval', mpath] + files, ['names no target column', '--target'])
        model['target'] = 'price'
        json.dump(model, open(mpath, 'w'))
        got = json.loads(run([dp, 'eval', mpath] + files).stdout)
        check(got == want, 'eval with the model file target %s, with --target %s' % (got, want))
        ys = [r[-1] for r in o1 + o2]
        f0 = sum(v * v for v in ys) / len(ys)     # linear loss (y - 0)^2, no regulariser at 0
        check(abs(got['psi_zero'] - (f0 / got['f_star'] - 1)) <= 1e-9 * max(1, abs(got['psi_zero'])),
              'psi_zero %s, computed %s' % (got['psi_zero'], f0 / got['f_star'] - 1))
        check(got['psi'] < got['psi_zero'], 'noise-free model no better than zero: %s' % got)
        print('ok: eval without --target: psi %.4g, psi_zero %.4g' % (got['psi'], got['psi_zero']))
        model['features'][1] = 'smoker=no'
        json.dump(model, open(mpath, 'w'))
        expect_error([dp, 'eval', mpath] + files, ["feature 2 is 'smoker=yes'", "'smoker=no'"])
    finally:
        cleanup(d)

main(test)
