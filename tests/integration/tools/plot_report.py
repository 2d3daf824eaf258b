#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Acceptance of `dpasync plot` and `dpasync report` (gnuplot from Debian):
- a real run (learnerd + 3 ownerd over mutual TLS, T = 200, owners' clocks
  at 50, 20 and 5 requests/s) and sim runs give every figure kind; every
  PNG is complete and valid: signature, IHDR of the requested size, chunk
  CRCs, IEND, IDAT inflating to exactly height x (1 + width x bytes per
  pixel) bytes with valid filter bytes, and at least 10 kB (a blank
  1000x600 figure is about 3 kB);
- `dpasync report` on the learnerd directory writes report.md whose numbers
  equal those computed here from trace.csv with numpy: iterations, per-owner
  iterations (exact), shares, last eps_spent per owner, median/p95 round
  trip and wait (to the printed 4 significant digits), iterations/s counted
  from the first query (the earliest time_unix - rtt_s), staleness; psi
  equals `dpasync eval` of model.json (the report calls the library);
  report-schedule.txt is the trace's owner order; every figure it links
  exists and is valid; report.json parses and holds the same numbers; the
  reproduce commands carry --target and run as printed (placeholders
  filled, 2 repeats); a trace with a 30 s hole (a resume's
  downtime) gets exactly that gap marked; a trace of the older six-column
  format still reads;
- the logs of the real run: learnerd wrote progress lines with sane fields
  and one summary; no ownerd wrote a per-answer line at the default level,
  each wrote a final summary, and owner-1 (--progress-every 0.5) periodic
  ones;
- `dpasync report` on a sim directory: psi statistics from summary.json and
  per-owner iterations counted here from schedule.txt;
- without --labels, two psi-wall curves in one directory are labelled by
  their file names and two sim runs by their directories; `shares` with
  equal clock rates leaves the rate panel out and says the rate in the
  title;
- `plot --kind psi-wall` draws two measured psi(t) curves (time_s,k,psi)
  as a valid PNG, and refuses a trace, a curve whose time goes back and a
  wrong number of labels; three curves with one label are drawn as a band
  of repeats whose --data-out (runs, min, median, max on the union of their
  times) equals the band computed here;
- figures for a paper (issue 10 §5): --out x.svg is an SVG document
  (XML, <svg> root of the requested size, closed), x.pdf a PDF (%PDF-
  header, %%EOF trailer), any other extension exit 2 and no file; the
  default title names the job (learnerd's --job, from checkpoint.json) and
  the dataset; --kind owners-wall draws the owner of each iteration against
  seconds since the first query; --data-out writes what a figure draws,
  checked against the trace computed here: owners (k, owner; with --kmax),
  owners-wall (time_s = time_unix - min(time_unix - rtt_s), exact to 1e-6 s),
  psi-time (the same clock, so it starts at the first query), shares
  (iterations per owner), cdf (every round trip and wait of every owner),
  psi (the psi.csv columns);
- `dpasync report --ledgers` on the real run's owners' ledger directories
  (docs/plots.md "ε charged"): each owner's ε charged is its job ledger's
  spent as `dpasync ledger` reads it, also the owners table's budget
  spent; the ledger's answers beyond the trace's applied ones are
  (charged − applied × ε_q) / ε_q, and the sentence names the forfeited
  reservation when there are some;
- bad input to plot and report: exit 2, exactly one line on stderr, the
  output file untouched (also --ledgers naming a missing directory,
  another owner's, and one without this job's ledger); gnuplot missing
  from PATH: exit 1, one line."""
import csv, json, os, re, struct, sys, zlib
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, run, tmpdir, cleanup, summary, main
from cluster import Cluster
import numpy as np

T = 200
RATES = {'owner-1': 50, 'owner-2': 20, 'owner-3': 5}

def png_info(path, size=(1000, 600)):
    """Check a PNG file completely; returns (width, height)."""
    b = open(path, 'rb').read()
    check(len(b) >= 10000, '%s: only %d bytes' % (path, len(b)))
    check(b[:8] == b'\x89PNG\r\n\x1a\n', '%s: no PNG signature' % path)
    pos, chunks, idat = 8, [], b''
    while pos < len(b):
        check(pos + 12 <= len(b), '%s: truncated chunk at %d' % (path, pos))
        n, typ = struct.unpack('>I4s', b[pos:pos + 8])
        data = b[pos + 8:pos + 8 + n]
        crc, = struct.unpack('>I', b[pos + 8 + n:pos + 12 + n])
        check(zlib.crc32(typ + data) & 0xffffffff == crc, '%s: bad CRC in %s' % (path, typ))
        chunks.append(typ)
        if typ == b'IDAT':
            idat += data
        pos += 12 + n
    check(chunks[0] == b'IHDR' and chunks[-1] == b'IEND', '%s: chunks %s' % (path, chunks[:3]))
    ihdr = b[16:29]
    w, h, depth, ctype, _, _, interlace = struct.unpack('>IIBBBBB', ihdr)
    check((w, h) == size, '%s: %dx%d, expected %dx%d' % (path, w, h, size[0], size[1]))
    check(interlace == 0, '%s: interlaced' % path)
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]
    stride = (w * channels * depth + 7) // 8
    raw = zlib.decompress(idat)
    check(len(raw) == h * (1 + stride), '%s: image data %d bytes, expected %d' % (path, len(raw), h * (1 + stride)))
    check(all(raw[r * (1 + stride)] <= 4 for r in range(h)), '%s: bad row filter byte' % path)
    return w, h

def trace(path):
    rows = [l.split(',') for l in open(path).read().splitlines()[1:]]
    return {'k': np.array([int(r[0]) for r in rows]), 't': np.array([float(r[1]) for r in rows]),
            'owner': [r[2] for r in rows], 'wait': np.array([float(r[3]) for r in rows]),
            'rtt': np.array([float(r[4]) for r in rows]), 'eps': np.array([float(r[5]) for r in rows]),
            'stale': np.array([int(r[6]) for r in rows]), 'job': [r[7] if len(r) == 8 else None for r in rows]}

def close(got, want, rel, what):
    check(abs(got - want) <= rel * abs(want) + 1e-12, '%s: report says %r, computed %r' % (what, got, want))

def table_rows(md, first_col):
    """Cells of the Markdown table rows whose first cell matches first_col."""
    out = {}
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if cells and re.fullmatch(first_col, cells[0]):
            out[cells[0]] = cells[1:]
    return out

def num(cell):
    return float(cell.split()[0])

def expect_fail(dp, args, code=2, out=None, env=None):
    """Exit `code`, exactly one stderr line; `out` (if given) untouched."""
    before = open(out, 'rb').read() if out and os.path.exists(out) else None
    import subprocess
    p = subprocess.run([dp] + args, capture_output=True, text=True, env=env, timeout=120)
    lines = p.stderr.strip().splitlines()
    check(p.returncode == code, '%s: exit %d, expected %d (%s)' % (' '.join(args), p.returncode, code, p.stderr))
    check(len(lines) == 1 and lines[0].startswith('dpasync '), '%s: stderr %r' % (' '.join(args), p.stderr))
    if out:
        check((open(out, 'rb').read() if os.path.exists(out) else None) == before, '%s changed on failure' % out)
    return lines[0]

SNAP = 40   # learnerd --snapshot-every: T / SNAP + 1 rows


def check_snapshots(dp, L, files, md, j):
    """learnerd's snapshots.csv (k = 0, SNAP, ..., T; the last the model
    model.json holds, to the last bit) and the psi report --data measures
    on them: report-psi-measured.csv and report.json's psi_measured say the
    same, each psi dpasync eval's for that snapshot as a model file, the
    last that of model.json."""
    rows = [l.split(',') for l in open(os.path.join(L, 'snapshots.csv')).read().splitlines()]
    model = json.load(open(os.path.join(L, 'model.json')))
    check(rows[0][:2] == ['k', 'time_unix'] and len(rows[0]) == 2 + len(model['theta']),
          'snapshots.csv header %r' % rows[0])
    check([int(r[0]) for r in rows[1:]] == list(range(0, T + 1, SNAP)),
          'snapshots at k = %r' % [r[0] for r in rows[1:]])
    check([float(x) for x in rows[-1][2:]] == model['theta'], 'the last snapshot is not model.json')
    check(all(float(x) == 0 for x in rows[1][2:]), 'the k = 0 snapshot is not theta = 0')
    meas = read_rows(os.path.join(L, 'report-psi-measured.csv'))
    check([int(m['k']) for m in meas] == list(range(0, T + 1, SNAP)) and
          [p['k'] for p in j['psi_measured']] == list(range(0, T + 1, SNAP)),
          'report-psi-measured.csv / psi_measured k')
    for m, p, r in zip(meas, j['psi_measured'], rows[1:]):
        mf = dict(model, theta=[float(x) for x in r[2:]])
        path = os.path.join(L, 'snap-%s.json' % r[0])
        json.dump(mf, open(path, 'w'))
        ev = json.loads(run([dp, 'eval', path] + files).stdout)
        os.unlink(path)
        close(float(m['psi']), ev['psi'], 1e-8, 'psi of the k = %s snapshot' % r[0])
        close(p['psi'], ev['psi'], 1e-12, 'report.json psi_measured at k = %s' % r[0])
    close(j['psi_measured'][-1]['psi'], j['psi'], 1e-12, 'last snapshot psi against model.json')
    check('| ψ the run reached | ' in md, 'report.md has no measured psi row')


def real_run(bindir, d):
    c = Cluster(bindir, d, owners=3, rows=2000, features=5, T=T)
    try:
        c.start_learner(extra=['--progress-every', '0.5', '--snapshot-every', str(SNAP)])
        owners = [c.start_owner(i, rate=str(RATES['owner-%d' % i]),
                                extra=['--progress-every', '0.5'] if i == 1 else [])
                  for i in (1, 2, 3)]
        out = c.wait_learner()
        check('done k=%d' % T in out, 'learnerd did not finish: %r' % out)
        for p in owners:   # they exit on Done, after their final summary
            check(p.wait(timeout=30) == 0, 'ownerd exit %s' % p.returncode)
    finally:
        c.close()
    return c

def check_logs(c):
    """Progress and summary lines of the real run (T = 200 at 75 requests/s
    in all lasts over 2 s: a line every 0.5 s gives at least one)."""
    log = open(c.path('learnerd.log')).read()
    prog = re.findall(r' progress k=(\d+)/%d it_s=([\d.e+-]+) it_s_avg=([\d.e+-]+) eta_s=(\S+) '
                      r'owners=(\d)/3 eps_spent=([\d.e+-]+)\n' % T, log)
    check(len(prog) >= 1 and all(int(p[0]) <= T for p in prog), 'learnerd progress lines: %r' % prog)
    check(len(re.findall(r' summary end=done k=%d/%d ' % (T, T), log)) == 1, 'learnerd summary line')
    for i in (1, 2, 3):
        log = open(c.ledger(i) + '.log').read()
        check(' answered k=' not in log, 'owner-%d logs every answer at info' % i)
        fin = re.findall(r' summary final answers=(\d+) refusals=\d+ ticks=(\d+) skipped=(\d+) ', log)
        check(len(fin) == 1, 'owner-%d: final summary %r' % (i, fin))
        answers, ticks, skipped = map(int, fin[0])
        check(answers >= 1 and ticks >= answers and skipped <= ticks,
              'owner-%d: answers %d ticks %d skipped %d' % (i, answers, ticks, skipped))
        periodic = re.findall(r' summary answers=', log)
        check(len(periodic) >= 1 if i == 1 else not periodic,
              'owner-%d: %d periodic summaries' % (i, len(periodic)))
    return len(prog)

def check_json(L, md_key, own, tr):
    """report.json against report.md and the trace."""
    j = json.load(open(os.path.join(L, 'report.json')))
    check(j['format'] == 'dpasync-report' and j['kind'] == 'learnerd', 'report.json header')
    # The job: the trace's job column, the id of model.json.
    job = json.load(open(os.path.join(L, 'model.json')))['job']
    check(j.get('job') == job and set(tr['job']) == {job},
          'report.json job %r, trace %r, model.json %r' % (j.get('job'), set(tr['job']), job))
    check(' · job %s ' % job in open(os.path.join(L, 'report.md')).read(), 'report.md job')
    n = len(tr['k'])
    check(j['iterations'] == n and j['T'] == T, 'report.json iterations %r' % j['iterations'])
    close(j['iterations_per_s'], num(md_key['iterations/s'][0]), 1e-3, 'report.json iterations/s')
    close(j['duration_s'], num(md_key['duration'][0]), 1e-3, 'report.json duration')
    close(j['start_unix'], float(np.min(tr['t'] - tr['rtt'])), 1e-12, 'report.json start')
    med_p95 = md_key['query round trip, median / p95'][0].split()
    close(j['rtt_median_ms'], float(med_p95[0]), 1e-3, 'report.json rtt median')
    close(j['rtt_p95_ms'], float(med_p95[2]), 1e-3, 'report.json rtt p95')
    check(j['staleness_max'] == tr['stale'].max(), 'report.json staleness max')
    close(j['psi'], num(md_key['ψ of model.json'][0]), 1e-5, 'report.json psi')
    check([o['owner'] for o in j['owners']] == sorted(own), 'report.json owners')
    for o in j['owners']:
        cells = own[o['owner']]
        check(o['iterations'] == int(cells[0]), 'report.json %s iterations' % o['owner'])
        close(o['epsilon_spent'], float(cells[2]), 1e-5, 'report.json %s eps' % o['owner'])
        close(o['rtt_median_ms'], float(cells[3]), 1e-3, 'report.json %s rtt' % o['owner'])
    md = open(os.path.join(L, 'report.md')).read()
    block = md.split('## Reproduce', 1)[1]
    for cmd in j['reproduce']:
        check(cmd in block, 'report.json reproduce line %r not in report.md' % cmd)
    sims = [cmd for cmd in j['reproduce'] if cmd.startswith('dpasync sim ')]
    check(len(sims) == 1 and ' --target y ' in sims[0] and ' --bias ' in sims[0]
          and ' --model linear ' in sims[0] and ' --eta ' in sims[0], 'sim command %r' % sims)
    # The run's budgets, not a placeholder: each owner's last eps_spent in
    # the trace, in the schedule's (natural) owner order.
    args = sims[0].split()
    want = [tr['eps'][[i for i, o in enumerate(tr['owner']) if o == n][-1]] for n in sorted(own)]
    got = [float(v) for v in args[args.index('--epsilon') + 1].split(',')]
    check(len(got) == len(want) and all(abs(g - w) <= 1e-8 * w for g, w in zip(got, want)),
          'sim command --epsilon %r, the trace says %r' % (got, want))
    return j

def check_ledgers(dp, c, L, tr, job):
    """report --ledgers against `dpasync ledger` of each owner's directory."""
    names = ['owner-1', 'owner-2', 'owner-3']
    run([dp, 'report', '--ledgers', ','.join('%s=%s' % (n, c.ledger(i + 1)) for i, n in enumerate(names)), L])
    j = json.load(open(os.path.join(L, 'report.json')))
    md = open(os.path.join(L, 'report.md')).read()
    check('\n## ε charged (owners\' ledgers)\n' in md, 'report.md has no ledger table')
    check([l['owner'] for l in j['ledgers']] == names, 'report.json ledgers %r' % j['ledgers'])
    shown = []
    for i, (l, o) in enumerate(zip(j['ledgers'], j['owners'])):
        led = json.loads(run([dp, 'ledger', c.ledger(i + 1)]).stdout)
        e = [x for x in led['jobs'] if x['job'] == job]
        check(len(e) == 1, '%s: ledger jobs %r' % (l['owner'], led['jobs']))
        e = e[0]
        applied = tr['owner'].count(l['owner'])
        check(l['epsilon_charged'] == e['epsilon_spent'] and o['epsilon_spent'] == e['epsilon_spent']
              and o['epsilon_spent_from'] == 'ledger',
              '%s: charged %r, budget spent %r, ledger file %r' % (l['owner'], l['epsilon_charged'],
                                                                 o['epsilon_spent'], e['epsilon_spent']))
        check(l['ledger_answers'] == e['answers'] and l['applied_answers'] == applied,
              '%s: answers %r/%r, applied %r/%r' % (l['owner'], l['ledger_answers'], e['answers'],
                                                    l['applied_answers'], applied))
        unapplied = e['answers'] - applied
        # Every unit of the ledger's count is one share ε_q (docs/ledger.md §9).
        check(unapplied >= 0 and l['unapplied_shares'] == unapplied
              and abs(l['difference'] - unapplied * l['epsilon_q']) <= 1e-9 * e['answers'] + 1e-12
              and abs(l['applied_epsilon'] + l['difference'] - e['epsilon_spent']) <= 1e-9,
              '%s: difference %r for %d unapplied shares of %r' % (l['owner'], l['difference'], unapplied,
                                                                  l['epsilon_q']))
        want = 'forfeited at a restart or at the job\'s end' if unapplied else 'Equal to the applied answers'
        check(want in l['why'] and l['why'] in md, '%s: why %r' % (l['owner'], l['why']))
        shown.append('%s %.6g = %d applied + %d unapplied' % (l['owner'], e['epsilon_spent'], applied, unapplied))
    print('report --ledgers: ε charged = the ledger files\' spent; %s' % '; '.join(shown))

def run_reproduce(dp, j, d):
    """The reproduce commands run as printed, with the placeholders filled
    (SIMDIR, psi-time.png in d) and 2 repeats instead of 10."""
    simdir = os.path.join(d, 'repro-sim')
    for cmd in j['reproduce']:
        args = cmd.split()
        check(args[0] == 'dpasync', 'reproduce line %r' % cmd)
        args = [simdir if a == 'SIMDIR' else
                os.path.join(d, a) if a == 'psi-time.png' else
                a.replace('SIMDIR/', simdir + '/') for a in args[1:]]
        if args[0] == 'sim':
            args[args.index('--repeats') + 1] = '2'
        run([dp] + args)
    check(os.path.exists(os.path.join(d, 'psi-time.png')), 'reproduced psi-time.png')
    return len(j['reproduce'])

def check_gap(dp, L, d):
    """A copy of the run with every update after k = 100 moved 30 s later,
    and the first request waiting 5 s for the gate (owners connecting): that
    wait is before the first query, so it is not part of the run."""
    g = os.path.join(d, 'gap')
    os.makedirs(g)
    lines = open(os.path.join(L, 'trace.csv')).read().splitlines()
    out = [lines[0]]
    for l in lines[1:]:
        f = l.split(',')
        if int(f[0]) > 100:
            f[1] = '%.6f' % (float(f[1]) + 30)
        if int(f[0]) == 1:
            f[3] = '5.000000'
        out.append(','.join(f))
    open(os.path.join(g, 'trace.csv'), 'w').write('\n'.join(out) + '\n')
    run([dp, 'report', g])
    j = json.load(open(os.path.join(g, 'report.json')))
    rows = [l.split(',') for l in out[1:]]
    first_query = min(float(r[1]) - float(r[4]) for r in rows)
    check(abs(j['start_unix'] - first_query) < 1e-6 and
          abs(j['duration_s'] - (float(rows[-1][1]) - first_query)) < 1e-6,
          'gap copy: start %r duration %r, first query at %r' % (j['start_unix'], j['duration_s'],
                                                                 first_query))
    # A loaded machine may leave gaps of its own in the real run: those
    # stay where they were, and the one moved in is added.
    natural = sorted(x['after_k'] for x in json.load(open(os.path.join(L, 'report.json')))['gaps']
                     if x['after_k'] != 100)
    ours = [x for x in j['gaps'] if x['after_k'] == 100]
    check(len(ours) == 1 and 30 < ours[0]['seconds'] < 40 and
          sorted(x['after_k'] for x in j['gaps'] if x['after_k'] != 100) == natural,
          'gap: %r (the run itself: after k in %r)' % (j['gaps'], natural))
    md = open(os.path.join(g, 'report.md')).read()
    check(re.search(r'\| gaps \| %d .*after k = 100: 3\d\.\d+ s' % (len(natural) + 1), md),
          'gap row of report.md')
    close(j['iterations_per_s_without_gaps'], T / (j['duration_s'] - j['gaps_s']), 1e-9, 'rate without gaps')
    # The older trace format (no staleness column) still reads.
    open(os.path.join(g, 'trace.csv'), 'w').write(
        '\n'.join(','.join(l.split(',')[:6]) for l in out) + '\n')
    run([dp, 'report', g])
    check(json.load(open(os.path.join(g, 'report.json')))['staleness_max'] is None, 'six-column trace')
    # A seven-column trace (before the job column) reads too; without a
    # checkpoint.json beside it the job is unknown.
    open(os.path.join(g, 'trace.csv'), 'w').write(
        '\n'.join(','.join(l.split(',')[:7]) for l in out) + '\n')
    run([dp, 'report', g])
    j7 = json.load(open(os.path.join(g, 'report.json')))
    check(j7['staleness_max'] is not None and j7['job'] is None, 'seven-column trace: %r' % j7['job'])
    # Rows of two jobs (two traces concatenated) are refused by name.
    two = out + [l.rsplit(',', 1)[0] + ',other-job' for l in out[1:2]]
    open(os.path.join(g, 'trace.csv'), 'w').write('\n'.join(two) + '\n')
    line = expect_fail(dp, ['report', g])
    check("job 'other-job' after rows of job" in line, 'two jobs in one trace: %r' % line)
    return ours[0]['seconds']

def test(argv):
    bindir = argv[0]
    dp = os.path.join(bindir, 'tools', 'dpasync')
    d = tmpdir('plot-report')
    try:
        c = real_run(bindir, os.path.join(d, 'run'))
        L = c.path('learner')
        files = [c.data(i) for i in (1, 2, 3)]
        tr = trace(os.path.join(L, 'trace.csv'))
        n = len(tr['k'])
        check(n == T, 'trace has %d rows' % n)
        owners = sorted(set(tr['owner']))
        check(owners == ['owner-1', 'owner-2', 'owner-3'], 'owners in the trace: %s' % owners)
        sched = os.path.join(d, 'schedule.txt')
        with open(sched, 'w') as f:
            f.write(''.join('%s\n' % o.split('-')[1] for o in tr['owner']))
        model = json.load(open(os.path.join(L, 'model.json')))
        ck = json.load(open(os.path.join(L, 'checkpoint.json')))

        # Sim runs: one on the trace's owner order (for psi-time), two free ones.
        sim_sched = os.path.join(d, 'sim-sched')
        run([dp, 'sim', '--target', 'y', '--schedule', sched, '--T', str(T), '--eta', repr(ck['job']['eta']), '--bias',
             '--epsilon', '1', '--repeats', '5', '--out', sim_sched] + files)
        sim_a, sim_s = os.path.join(d, 'sim-async'), os.path.join(d, 'sim-sync1')
        run([dp, 'sim', '--target', 'y', '--bias', '--T', '300', '--repeats', '5', '--rates', '3,1,1', '--out', sim_a] + files)
        run([dp, 'sim', '--target', 'y', '--bias', '--mode', 'sync1', '--T', '300', '--repeats', '5', '--out', sim_s] + files)

        # Every figure kind.
        figs = os.path.join(d, 'figs')
        os.makedirs(figs)
        tcsv = os.path.join(L, 'trace.csv')
        kinds = [
            ('owners-trace', ['--kind', 'owners', tcsv]),
            ('owners-kmax', ['--kind', 'owners', '--kmax', '50', tcsv]),
            ('owners-sched', ['--kind', 'owners', os.path.join(sim_a, 'schedule.txt')]),
            ('psi', ['--kind', 'psi', os.path.join(sim_a, 'psi.csv')]),
            ('psi-two', ['--kind', 'psi', '--labels', 'async,sync1', '--logx',
                         os.path.join(sim_a, 'psi.csv'), os.path.join(sim_s, 'psi.csv')]),
            ('psi-time', ['--kind', 'psi-time', '--trace', tcsv, os.path.join(sim_sched, 'psi.csv')]),
            ('shares', ['--kind', 'shares', tcsv]),
            ('shares-rates', ['--kind', 'shares', '--rates', 'owner-1=50,owner-2=20,owner-3=5', tcsv]),
            ('cdf', ['--kind', 'cdf', tcsv]),
            ('cdf-linear', ['--kind', 'cdf', '--linear-x', '--title', 'a "quoted" title\\', tcsv]),
        ]
        for name, args in kinds:
            out = os.path.join(figs, name + '.png')
            p = run([dp, 'plot', '--out', out] + args)
            check(p.stdout.strip() == 'wrote ' + out, 'plot %s: stdout %r' % (name, p.stdout))
            png_info(out)
        # psi-wall: measured psi(t) curves (time_s,k,psi), two of them.
        walls = []
        for i, scale in enumerate((1.0, 3.0)):
            w = os.path.join(d, 'wall-%d.csv' % i)
            with open(w, 'w') as f:
                f.write('time_s,k,psi\n' + ''.join('%.3f,%d,%.6g\n' % (scale * k / 10, k, 5 / (1 + k))
                                                   for k in range(0, 60, 3)))
            walls.append(w)
        out = os.path.join(figs, 'psi-wall.png')
        p = run([dp, 'plot', '--kind', 'psi-wall', '--labels', 'fast,slow', '--out', out] + walls)
        check(p.stdout.strip() == 'wrote ' + out, 'plot psi-wall: stdout %r' % p.stdout)
        # Without --labels the legend tells the inputs apart: two curves in
        # one directory by their file names (not twice the directory's,
        # which would also draw them as repeats of one run), two sim runs
        # by their directories.
        svg = os.path.join(d, 'psi-wall-default.svg')
        run([dp, 'plot', '--kind', 'psi-wall', '--out', svg] + walls)
        b = open(svg, 'rb').read()
        check(re.search(rb'>wall-0[:<]', b) and re.search(rb'>wall-1[:<]', b),
              'psi-wall default labels: %r' % re.findall(rb'>(wall[^<]*)<', b))
        svg = os.path.join(d, 'psi-default.svg')
        run([dp, 'plot', '--kind', 'psi', '--out', svg, os.path.join(sim_a, 'psi.csv'),
             os.path.join(sim_s, 'psi.csv')])
        b = open(svg, 'rb').read()
        check(b'>sim-async: median<' in b and b'>sim-sync1: median<' in b,
              'psi default labels: %r' % re.findall(rb'>(sim[^<]*)<', b))
        # Equal clock rates: no rate panel (all points on one x), the rate
        # said in the title; different rates keep it.
        for rates, panel in (('owner-1=5,owner-2=5,owner-3=5', False),
                             ('owner-1=50,owner-2=20,owner-3=5', True)):
            svg = os.path.join(d, 'shares.svg')
            run([dp, 'plot', '--kind', 'shares', '--rates', rates, '--out', svg, tcsv])
            b = open(svg, 'rb').read()
            check((b"against the owner's clock rate" in b) == panel and
                  (b'every clock at 5 requests/s' in b) == (not panel),
                  'shares with rates %s: rate panel %s' % (rates, not panel))
        png_info(out)
        check_wall_band(dp, d, figs, walls)
        out = os.path.join(figs, 'small.png')
        run([dp, 'plot', '--kind', 'cdf', '--size', '640x400', '--out', out, tcsv])
        png_info(out, (640, 400))
        print('plot: %d figures, all valid PNG' % (len(kinds) + 2))
        check_formats_and_data(dp, d, figs, tcsv, tr, ck['job']['name'], os.path.join(sim_a, 'psi.csv'),
                               os.path.join(sim_sched, 'psi.csv'))

        # The report of the real run, against numbers computed here.
        nprog = check_logs(c)
        r = run([dp, 'report', '--data', ','.join(files[:2]), '--data', files[2], '--target', 'y',
                 '--rates', '50,20,5', '--sim', sim_sched, L])
        check('report.md (6 figures)' in r.stdout, 'report: %r' % r.stdout)
        md = open(os.path.join(L, 'report.md')).read()
        for img in re.findall(r'!\[[^\]]*\]\(([^)]+)\)', md):
            png_info(os.path.join(L, img))
        check(len(re.findall(r'!\[', md)) == 6, 'report.md links %d figures' % len(re.findall(r'!\[', md)))
        check_snapshots(dp, L, files, md, json.load(open(os.path.join(L, 'report.json'))))
        got = [l for l in open(os.path.join(L, 'report-schedule.txt')).read().split()]
        check(got == [o.split('-')[1] for o in tr['owner']], 'report-schedule.txt is not the trace order')
        key = table_rows(md, r'[a-zψ].*')
        check(key['iterations'][0] == '%d of T = %d' % (n, T), 'iterations: %s' % key['iterations'])
        start = np.min(tr['t'] - tr['rtt'])   # the first query (docs/plots.md "Throughput")
        close(num(key['iterations/s'][0]), n / (tr['t'][-1] - start), 1e-3, 'iterations/s')
        stale = key['staleness, median / max'][0].split()
        check(float(stale[0]) == np.median(tr['stale']) and float(stale[2]) == tr['stale'].max(),
              'staleness: %s' % stale)
        med_p95 = key['query round trip, median / p95'][0].split()
        close(float(med_p95[0]), np.percentile(tr['rtt'], 50) * 1e3, 1e-3, 'median rtt')
        close(float(med_p95[2]), np.percentile(tr['rtt'], 95) * 1e3, 1e-3, 'p95 rtt')
        med_p95 = key['request wait, median / p95'][0].split()
        close(float(med_p95[0]), np.percentile(tr['wait'], 50) * 1e3, 1e-3, 'median wait')
        close(float(med_p95[2]), np.percentile(tr['wait'], 95) * 1e3, 1e-3, 'p95 wait')
        ev = json.loads(run([dp, 'eval', os.path.join(L, 'model.json')] + files).stdout)
        close(num(key['ψ of model.json'][0]), ev['psi'], 1e-5, 'psi')
        own = table_rows(md, r'owner-\d+')
        check(sorted(own) == owners, 'owner table rows: %s' % sorted(own))
        for o in owners:
            sel = np.array([x == o for x in tr['owner']])
            cells = own[o]
            check(int(cells[0]) == sel.sum(), '%s: %s iterations, trace has %d' % (o, cells[0], sel.sum()))
            share = 100.0 * sel.sum() / n
            check(abs(num(cells[1]) - share) <= 0.05 + 1e-9, '%s: share %s, computed %.4f %%' % (o, cells[1], share))
            close(float(cells[2]), tr['eps'][sel][-1], 1e-5, o + ' eps spent')
            for j, (col, q) in enumerate([('rtt', 50), ('rtt', 95), ('wait', 50), ('wait', 95)]):
                close(float(cells[3 + j]), np.percentile(tr[col][sel], q) * 1e3, 1e-3, '%s %s p%d' % (o, col, q))
        print('report (learnerd): %d iterations, %s, psi %.4g = eval, iterations/s %s' % (
            n, {o: own[o][0] for o in owners}, ev['psi'], key['iterations/s'][0]))
        j = check_json(L, key, own, tr)
        nrep = run_reproduce(dp, j, d)
        gap = check_gap(dp, L, d)
        print('report.json agrees with report.md; --target carried over; its %d reproduce commands '
              'run; a %.1f s gap marked; %d progress lines, owner summaries' % (nrep, gap, nprog))

        # The report of a sim directory.
        run([dp, 'report', sim_a])
        md = open(os.path.join(sim_a, 'report.md')).read()
        js = json.load(open(os.path.join(sim_a, 'report.json')))
        check(js['kind'] == 'sim' and js['psi_mean'] == summary(sim_a)['psi_mean']
              and [o['owner'] for o in js['owners']] == ['owner-1', 'owner-2', 'owner-3']
              and all(cmd in md for cmd in js['reproduce']), 'sim report.json %r' % js)
        for img in ('report-psi.png', 'report-owners.png'):
            check('(%s)' % img in md, 'sim report does not link %s' % img)
            png_info(os.path.join(sim_a, img))
        s = summary(sim_a)
        key = table_rows(md, r'[a-zψ].*')
        close(num(key['ψ at k = T, mean over the runs'][0]), s['psi_mean'], 1e-5, 'sim psi mean')
        close(num(key['ψ at k = T, median (25–75 %)'][0]), s['psi_median'], 1e-5, 'sim psi median')
        sch = [int(x) for x in open(os.path.join(sim_a, 'schedule.txt')).read().split()]
        own = table_rows(md, r'owner-\d+')
        for i in (1, 2, 3):
            check(int(own['owner-%d' % i][2]) == sch.count(i), 'sim owner-%d: %s, schedule has %d' % (
                i, own['owner-%d' % i][2], sch.count(i)))
            check(js['owners'][i - 1]['iterations'] == sch.count(i), 'sim report.json owner-%d' % i)
        print('report (sim): psi mean %.4g; iterations %s' % (s['psi_mean'], [sch.count(i) for i in (1, 2, 3)]))

        for sub, words in (('plot', ['owners', 'psi', 'psi-time', 'shares', 'cdf', 'psi-wall',
                                     '--rates', '--trace']),
                           ('report', ['--data', '--sim', '--rates', 'report.md'])):
            h = run([dp, sub, '--help']).stdout
            check(h.startswith('usage: dpasync ' + sub), '%s --help: %r' % (sub, h[:60]))
            check(all(w in h for w in words), '%s --help does not document %s' % (
                sub, [w for w in words if w not in h]))

        # Bad input: exit 2, one line, output untouched.
        keep = os.path.join(figs, 'keep.png')
        open(keep, 'wb').write(b'not touched')
        bad = os.path.join(d, 'bad.csv')
        open(bad, 'w').write('a,b\n1,2\n')
        badwall = os.path.join(d, 'badwall.csv')
        open(badwall, 'w').write('time_s,k,psi\n2,1,0.5\n1,2,0.4\n')   # time goes back
        badrow = os.path.join(d, 'badrow.csv')
        open(badrow, 'w').write('k,time_unix,owner,wait_s,rtt_s,eps_spent\n1,5,o,0,x,1\n2,6,o,0,1,1\n')
        for args in (['--kind', 'owners', '--out', keep, os.path.join(d, 'missing.csv')],
                     ['--kind', 'owners', '--out', keep, bad],
                     ['--kind', 'cdf', '--out', keep, badrow],
                     ['--kind', 'nope', '--out', keep, tcsv],
                     ['--kind', 'cdf', tcsv],
                     ['--kind', 'cdf', '--out', keep],
                     ['--kind', 'psi', '--out', keep, tcsv],
                     ['--kind', 'cdf', '--out', keep, os.path.join(sim_a, 'schedule.txt')],
                     ['--kind', 'shares', '--rates', '1,2', '--out', keep, tcsv],
                     ['--kind', 'shares', '--rates', 'owner-9=1', '--out', keep, tcsv],
                     ['--kind', 'psi-time', '--out', keep, os.path.join(sim_sched, 'psi.csv')],
                     ['--kind', 'psi-time', '--trace', tcsv, '--out', keep, os.path.join(sim_a, 'psi.csv')],
                     ['--kind', 'owners', '--kmax', '0', '--out', keep, tcsv],
                     ['--kind', 'owners', '--size', '5x5', '--out', keep, tcsv],
                     ['--kind', 'psi', '--labels', 'a,b', '--out', keep, os.path.join(sim_a, 'psi.csv')],
                     ['--kind', 'owners', '--out', os.path.join(d, 'no', 'dir.png'), tcsv],
                     ['--kind', 'owners', '--bogus', '--out', keep, tcsv],
                     ['--kind', 'psi-wall', '--out', keep, tcsv],
                     ['--kind', 'psi-wall', '--out', keep, badwall],
                     ['--kind', 'psi-wall', '--labels', 'a', '--out', keep, walls[0], walls[1]],
                     ['--kind', 'owners', '--data-out', os.path.join(d, 'x.png'), '--out', keep, tcsv],
                     ['--kind', 'owners-wall', '--out', keep, os.path.join(sim_a, 'schedule.txt')]):
            expect_fail(dp, ['plot'] + args, out=keep)
        for ext in ('xyz', 'jpg', 'PNG.txt'):
            other = os.path.join(figs, 'fig.' + ext)
            line = expect_fail(dp, ['plot', '--kind', 'owners', '--out', other, tcsv])
            check('.png, .svg or .pdf' in line and not os.path.exists(other), '--out fig.%s: %r' % (ext, line))
        check_ledgers(dp, c, L, tr, ck['job']['name'])
        ncases = 25
        md_before = open(os.path.join(L, 'report.md')).read()
        os.makedirs(os.path.join(d, 'empty-ledger'))
        for args in ([], [d], [os.path.join(d, 'missing')], ['--sim', sim_a, L], ['--rates', '1', L],
                     ['--data', os.path.join(d, 'missing.csv'), L], ['--data', files[0], sim_a], [L, L],
                     ['--ledgers', 'owner-1=' + os.path.join(d, 'missing'), L],
                     ['--ledgers', 'owner-2=' + c.ledger(1), L],
                     ['--ledgers', 'owner-1=' + os.path.join(d, 'empty-ledger'), L],
                     ['--ledgers', 'owner-1', L]):
            expect_fail(dp, ['report'] + args)
            ncases += 1
        check(open(os.path.join(L, 'report.md')).read() == md_before, 'a failed report changed report.md')
        env = dict(os.environ, PATH=os.path.join(d, 'empty-path'))
        line = expect_fail(dp, ['plot', '--kind', 'cdf', '--out', keep, tcsv], code=1, out=keep, env=env)
        check('gnuplot' in line, 'missing gnuplot message: %r' % line)
        expect_fail(dp, ['report', L], code=1, env=env)
        print('bad input: %d cases exit 2 and 2 without gnuplot exit 1, one line each, outputs untouched'
              % ncases)
    finally:
        cleanup(d)

def read_rows(path):
    with open(path, newline='') as f:
        return list(csv.DictReader(f))

def wall_at(curve, t):
    """psi of a measured curve [(t, psi)] at time t as docs/plots.md
    "psi-wall" reads a repeat: linear between its points, its last psi
    after its end, None before its start."""
    if t < curve[0][0]:
        return None
    j = max(i for i, (ti, _) in enumerate(curve) if ti <= t)
    if j + 1 == len(curve) or curve[j][0] == t:
        return curve[j][1]
    (t0, p0), (t1, p1) = curve[j], curve[j + 1]
    return p0 + (p1 - p0) * (t - t0) / (t1 - t0)

def check_wall_band(dp, d, figs, walls):
    """psi-wall with repeats: INPUTs that share a label are drawn as their
    median and min-max band; --data-out against the band computed here."""
    third = os.path.join(d, 'wall-2.csv')
    with open(third, 'w') as f:   # starts late, ends early
        f.write('time_s,k,psi\n' + ''.join('%.3f,%d,%.6g\n' % (0.5 + 2 * k / 10, k, 7 / (1 + k))
                                           for k in range(1, 40, 4)))
    out, csvp = os.path.join(figs, 'psi-wall-band.png'), os.path.join(d, 'psi-wall-band.csv')
    p = run([dp, 'plot', '--kind', 'psi-wall', '--labels', 'rep,rep,rep,single', '--data-out',
             csvp, '--out', out] + walls + [third, walls[0]])
    check(p.stdout.split() == ['wrote', out, 'wrote', csvp], 'psi-wall band: stdout %r' % p.stdout)
    png_info(out)
    curves = []
    for w in walls + [third]:
        rows = read_rows(w)
        curves.append([(float(r['time_s']), float(r['psi'])) for r in rows])
    rows = read_rows(csvp)
    check(list(rows[0]) == ['series', 'time_s', 'runs', 'psi_min', 'psi_median', 'psi_max'],
          'psi-wall band csv header %r' % list(rows[0]))
    band = [r for r in rows if r['series'] == 'rep']
    times = sorted({t for c in curves for t, _ in c})
    check([float(r['time_s']) for r in band] == times, 'psi-wall band: not the union of the times')
    for r in band:
        v = [x for x in (wall_at(c, float(r['time_s'])) for c in curves) if x is not None]
        want = (len(v), min(v), float(np.median(v)), max(v))
        got = (int(r['runs']), float(r['psi_min']), float(r['psi_median']), float(r['psi_max']))
        check(got[0] == want[0] and all(abs(g - w) <= 1e-6 * w for g, w in zip(got[1:], want[1:])),
              'psi-wall band at t=%s: %r, expected %r' % (r['time_s'], got, want))
    single = [r for r in rows if r['series'] == 'single']
    check(len(single) == len(curves[0]) and all(r['runs'] == '1' and r['psi_min'] == r['psi_max']
                                                for r in single),
          'psi-wall band: the single curve is not one run')
    print('plot psi-wall: a band of 3 repeats (%d times) equals the one computed here' % len(band))

def check_formats_and_data(dp, d, figs, tcsv, tr, job, psi_csv, psi_sched_csv):
    svg = os.path.join(figs, 'owners.svg')
    p = run([dp, 'plot', '--kind', 'owners', '--out', svg, tcsv])
    check(p.stdout.strip() == 'wrote ' + svg, 'plot svg: stdout %r' % p.stdout)
    b = open(svg, 'rb').read()
    check(b.startswith(b'<?xml') and re.search(rb'<svg[^>]*width="1000" height="600"', b[:800]) and
          b.rstrip().endswith(b'</svg>'), '%s is not a complete 1000x600 SVG: %r' % (svg, b[:120]))
    # The title names the job (the trace's job column, learnerd's generated
    # id) and the dataset.
    check(('job %s' % tr['job'][0]).encode() in b and tr['job'][0] == job and job.startswith('job-') and
          b'dataset: 6000 rows, 6 coefficients' in b,
          'the SVG title does not name the job and dataset')
    pdf = os.path.join(figs, 'cdf.pdf')
    run([dp, 'plot', '--kind', 'cdf', '--out', pdf, tcsv])
    b = open(pdf, 'rb').read()
    check(b.startswith(b'%PDF-') and b'%%EOF' in b[-64:] and len(b) > 5000, '%s is not a PDF' % pdf)
    # Printed sizes (docs/plots.md "Sizes"): a PDF is a column (3.5 x 2.6
    # in = 252 x 187 pt), the two panels of cdf the page's width (7.0 x
    # 4.3 in); --size column draws PNG at 150 px/in; no default title.
    def mediabox(path):
        m = re.search(rb'/MediaBox \[ 0 0 ([\d.]+) ([\d.]+)', open(path, 'rb').read())
        return m and (round(float(m.group(1))), round(float(m.group(2))))
    check(mediabox(pdf) in ((504, 309), (504, 310)), 'cdf.pdf is %r pt, not the page (504 x 309.6)' % (mediabox(pdf),))
    pdf = os.path.join(d, 'owners.pdf')
    run([dp, 'plot', '--kind', 'owners', '--out', pdf, tcsv])
    check(mediabox(pdf) == (252, 187), 'owners.pdf is %r pt, not a column (252 x 187)' % (mediabox(pdf),))
    run([dp, 'plot', '--kind', 'owners', '--size', '800x500', '--out', pdf, tcsv])
    check(mediabox(pdf) in ((799, 499), (800, 500)), '--size 800x500 PDF is %r pt' % (mediabox(pdf),))
    col = os.path.join(d, 'col.png')
    run([dp, 'plot', '--kind', 'owners', '--size', 'column', '--out', col, tcsv])
    png_info(col, (525, 390))
    svg = os.path.join(d, 'col.svg')
    run([dp, 'plot', '--kind', 'owners', '--size', 'page', '--out', svg, tcsv])
    b = open(svg, 'rb').read()
    check(re.search(rb'<svg[^>]*width="1050" height="645"', b[:800]) and b'dataset: 6000 rows' not in b,
          'page SVG: size or default title: %r' % b[:300])
    run([dp, 'plot', '--kind', 'owners', '--size', 'page', '--title', 'mine', '--out', svg, tcsv])
    check(b'>mine<' in open(svg, 'rb').read(), 'a --title is kept at a printed size')
    t0 = min(tr['t'] - tr['rtt'])
    # owners-wall and its data.
    ow, owc = os.path.join(figs, 'owners-wall.png'), os.path.join(d, 'owners-wall.csv')
    p = run([dp, 'plot', '--kind', 'owners-wall', '--data-out', owc, '--out', ow, tcsv])
    check(p.stdout.split() == ['wrote', ow, 'wrote', owc], 'owners-wall stdout %r' % p.stdout)
    png_info(ow)
    rows = read_rows(owc)
    check([int(r['k']) for r in rows] == list(tr['k']) and [r['owner'] for r in rows] == tr['owner'],
          'owners-wall.csv: k or owner differ from the trace')
    got = np.array([float(r['time_s']) for r in rows])
    check(np.max(np.abs(got - (tr['t'] - t0))) <= 1e-6 and got.min() >= 0,
          'owners-wall.csv: time_s is not seconds since the first query')
    # owners with --kmax.
    oc = os.path.join(d, 'owners.csv')
    run([dp, 'plot', '--kind', 'owners', '--kmax', '50', '--data-out', oc, '--out', os.path.join(figs, 'o.png'), tcsv])
    rows = read_rows(oc)
    sel = tr['k'] <= 50
    check([int(r['k']) for r in rows] == list(tr['k'][sel]) and
          [r['owner'] for r in rows] == [o for o, s in zip(tr['owner'], sel) if s], 'owners.csv differs')
    # psi-time: the clock starts at the first query.
    pc = os.path.join(d, 'psi-time.csv')
    run([dp, 'plot', '--kind', 'psi-time', '--trace', tcsv, '--data-out', pc, '--out',
         os.path.join(figs, 'pt.svg'), psi_sched_csv])
    rows = read_rows(pc)
    for r in rows:
        i = list(tr['k']).index(int(r['k']))
        check(abs(float(r['time_s']) - (tr['t'][i] - t0)) <= 1e-6, 'psi-time.csv k=%s: time_s %s' % (r['k'], r['time_s']))
    # shares: iterations per owner.
    sc = os.path.join(d, 'shares.csv')
    run([dp, 'plot', '--kind', 'shares', '--rate', '50,20,5', '--data-out', sc, '--out',
         os.path.join(figs, 'sh.pdf'), tcsv])
    for r in read_rows(sc):
        check(int(r['iterations']) == tr['owner'].count(r['owner']), 'shares.csv %s' % r)
    # cdf: every wait and round trip, per owner and overall, in ms.
    cc = os.path.join(d, 'cdf.csv')
    run([dp, 'plot', '--kind', 'cdf', '--data-out', cc, '--out', os.path.join(figs, 'c.png'), tcsv])
    rows = read_rows(cc)
    for q, col in (('rtt', 'rtt'), ('wait', 'wait')):
        got = sorted(float(r['value_ms']) for r in rows if r['quantity'] == q and r['series'] == 'all')
        want = sorted(tr[col] * 1e3)
        check(len(got) == len(want) and np.allclose(got, want, rtol=1e-8, atol=1e-9), 'cdf.csv %s/all' % q)
        for o in set(tr['owner']):
            n = sum(1 for r in rows if r['quantity'] == q and r['series'] == o)
            check(n == tr['owner'].count(o), 'cdf.csv %s/%s: %d values' % (q, o, n))
    # psi: the columns of the psi.csv drawn.
    qc = os.path.join(d, 'psi-data.csv')
    run([dp, 'plot', '--kind', 'psi', '--data-out', qc, '--out', os.path.join(figs, 'p.png'), psi_csv])
    src, rows = read_rows(psi_csv), read_rows(qc)
    check(len(src) == len(rows) and all(int(a['k']) == int(b['k']) and
                                        abs(float(a['psi_median']) - float(b['psi_median'])) <= 1e-9 * (1 + abs(float(a['psi_median'])))
                                        for a, b in zip(src, rows)), 'psi data-out differs from psi.csv')
    print('plot: SVG and PDF by extension; owners-wall; --data-out of owners, owners-wall, psi-time, '
          'shares, cdf, psi equals the trace')

main(test)
