# SPDX-License-Identifier: Apache-2.0
"""What the experiments of scripts/reproduce/ share: their command line,
running the dpasync binaries, preparing the shared tables the way
docs/cli.md "dpasync prep" does, and writing OUTDIR/result.json."""
import argparse
import json
import os
import subprocess
import sys

# The shared tables and how docs/cli.md "dpasync prep" prepares each (prep flags,
# then the sim/forecast flags that go with the prepared files).
TABLES = {
    'diamonds': dict(file='diamonds.csv', model='linear', target='price',
                     prep=['--target', 'price',
                           '--ordinal', 'cut=Fair,Good,Very Good,Premium,Ideal',
                           '--ordinal', 'color=J,I,H,G,F,E,D',
                           '--ordinal', 'clarity=I1,SI2,SI1,VS2,VS1,VVS2,VVS1,IF']),
    'lending_club': dict(file='lending_club.csv', model='linear', target='int_rate',
                         prep=['--target', 'int_rate', '--drop', 'sub_grade']),
    'lending_club_class': dict(file='lending_club.csv', model='logistic', target='Class',
                               prep=['--target', 'Class', '--task', 'classification',
                                     '--positive', 'good', '--drop', 'sub_grade']),
    'diabetes': dict(file='diabetes.csv', model='linear', target='target',
                     prep=['--target', 'target']),
    'breast_cancer': dict(file='breast_cancer.csv', model='logistic', target='target',
                          prep=['--target', 'target', '--task', 'classification',
                                '--positive', '1']),
    'fertility': dict(file='fertility.csv.gz', model='linear', target='work',
                      prep=['--target', 'work']),
    'fertility_class': dict(file='fertility.csv.gz', model='logistic', target='morekids',
                            prep=['--target', 'morekids', '--task', 'classification',
                                  '--positive', 'yes']),
    'movielens': dict(file='movielens_ratings.csv.gz', model='linear', target='rating',
                      prep=['--target', 'rating', '--drop', 'title,genres,movieId,userId',
                            '--drop-missing']),
}


def args(doc, more=None):
    """The command line: --build, --data and --out (scripts/reproduce.sh
    passes them), --quick, and the experiment's own options added by
    more(parser) (scripts/reproduce.sh passes what follows OUTDIR).  Bad
    usage exits 2 (argparse)."""
    p = argparse.ArgumentParser(description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--build', required=True, help='meson build directory with the binaries')
    p.add_argument('--data', required=True, help='the shared data directory')
    p.add_argument('--out', required=True, help='output directory')
    p.add_argument('--quick', action='store_true',
                   help='a small version for the test suite (fewer cells and repeats)')
    if more is not None:
        more(p)
    return p.parse_args()


class Tools:
    def __init__(self, a):
        self.build = a.build
        self.data = a.data
        self.out = a.out
        self.dpasync = os.path.join(a.build, 'tools', 'dpasync')

    def run(self, argv, **kw):
        """Run dpasync with argv; its stdout.  A failure stops the
        experiment with the command and its stderr."""
        p = subprocess.run([self.dpasync] + argv, capture_output=True, text=True, **kw)
        if p.returncode != 0:
            sys.exit('dpasync %s failed (%d): %s' % (' '.join(argv), p.returncode,
                                                     p.stderr.strip()))
        return p.stdout

    def prep(self, table, outdir, split, extra=()):
        """Prepare one shared table into `split` owners in outdir (once)."""
        t = TABLES[table]
        if not os.path.exists(os.path.join(outdir, 'owner-1.csv')):
            self.run(['prep'] + t['prep'] + ['--split', str(split), '--out', outdir,
                                             '--force'] + list(extra) +
                     [os.path.join(self.data, t['file'])])
        return sorted(os.path.join(outdir, f) for f in os.listdir(outdir)
                      if f.startswith('owner-') and f.endswith('.csv'))

    def sim(self, files, outdir, flags):
        self.run(['sim', '--out', outdir] + list(flags) + list(files))
        with open(os.path.join(outdir, 'summary.json')) as f:
            return json.load(f)

    def forecast(self, flags):
        return json.loads(self.run(['forecast'] + list(flags)))


def write_result(out, result):
    path = os.path.join(out, 'result.json')
    with open(path, 'w') as f:
        json.dump(result, f, indent=2, sort_keys=True)
        f.write('\n')
    print('wrote', path)


# ---- added for defaults.py, forecast.py, slopes.py ---------------------------

QUICK_ENV = 'REPRODUCE_QUICK'


def quick(a):
    """--quick, or REPRODUCE_QUICK=1 in the environment (the way to ask
    for the small version through scripts/reproduce.sh, which passes no
    flags of its own)."""
    return bool(a.quick) or os.environ.get(QUICK_ENV, '') not in ('', '0')


def count_rows(path):
    """Data rows of a prepared CSV (dpasync prep writes one record a line,
    after one header line)."""
    with open(path) as f:
        return sum(1 for _ in f) - 1


def md_table(header, rows):
    """A markdown table: header cells, then rows of cells (str())."""
    out = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    out += ['| ' + ' | '.join(str(c) for c in r) + ' |' for r in rows]
    return '\n'.join(out) + '\n'


def write_text(out, name, text):
    path = os.path.join(out, name)
    with open(path, 'w') as f:
        f.write(text)
    print('wrote', path)
    return path


def g3(x):
    """A number for a table: three significant digits."""
    return '%.3g' % x


def paired(a, b):
    """Paired per-run differences a - b: mean, lowest, highest, and the
    runs where a > b, out of all."""
    d = [x - y for x, y in zip(a, b)]
    return {'mean': sum(d) / len(d), 'min': min(d), 'max': max(d),
            'wins': sum(1 for x in d if x > 0), 'runs': len(d)}


def paired_text(r, fmt='%+.4f'):
    """One cell: mean [min, max] wins/runs."""
    return '%s [%s, %s] %d/%d' % (fmt % r['mean'], fmt % r['min'], fmt % r['max'], r['wins'],
                                  r['runs'])


# The rows a peer-mode reproduction runs (p2p_synthetic.py, p2p_movielens.py):
# P2P_SERVED_ONLY=1, the local and served rows only (CD and private CD are
# deterministic and given in docs/p2p.md §5; a shorter measurement);
# P2P_PRIVATE_ONLY=1e-5, the local rows and the private CD rows at delta =
# 1e-5 only (the column docs/p2p.md §5.1 and §5.2 add).  The rows left out
# are nan.
P2P_SERVED_ONLY = os.environ.get('P2P_SERVED_ONLY') == '1'
P2P_PRIVATE_ONLY = os.environ.get('P2P_PRIVATE_ONLY') == '1e-5'


def p2p_rows(suf):
    """(CD, private CD, served): whether each runs for the delta of result
    key suffix suf ('' for the paper's e^-5, '_delta_1e-5')."""
    cd = not (P2P_SERVED_ONLY or P2P_PRIVATE_ONLY)
    private = not (P2P_SERVED_ONLY or (P2P_PRIVATE_ONLY and not suf))
    return cd, private, not P2P_PRIVATE_ONLY
