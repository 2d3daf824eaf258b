#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""psi against eps and n_i with fixed settings: slopes of log(psi - psi_noise-free) near -2

Where the privacy noise dominates, the excess it adds to psi grows as the
noise variance, i.e. as eps^-2 and, since each answer's noise scale is
2 Xi K / (n_i eps), as n_i^-2 (the async paper's Fig. 4-5).  Fixed
settings, as the paper runs them (nothing planned): T, eta, the clip Xi,
and K_i = T (each owner's budget split over T answers).  The data: the
shared fertility table (linear regression of `work`), prepared as
docs/cli.md "dpasync prep" does and dealt into 4 owners; the n_i grid takes the first n_i rows
of each owner's file.  For every cell `dpasync sim` runs REPEATS repeats
at eps and again with eps = inf (the same seeds: the same owner order), and
the noise's part is the mean of the paired differences of psi at k = T.
The slopes of log(that part) against log eps (at n_i = N_FIXED) and log n_i
(at eps = EPS_FIXED), by least squares over the cells where the noise
dominates (its part at least the noise-free psi; the others are shown,
not fitted), must lie within -2 +- 0.3.

--mechanism gaussian runs the discrete Gaussian answers of docs/zcdp.md
instead (delta DELTA, the same T, eta, K_i and clip, now an L2 bound: it
clips no more often): each answer's sigma is 2 Xi / (n_i sqrt(2 rho_q)),
rho_q about eps^2 / (4 K_i ln(1/delta)) for eps well below ln(1/delta), so
the noise's part falls again about as eps^-2 and n_i^-2, at about 1/36 of
Laplace's level with K_i = 500.  Its grids are shifted down (eps from
EPSILONS_GAUSS, the n_i grid at EPS_FIXED_GAUSS) so that the noise
dominates in enough cells to fit.

Writes OUTDIR/result.json, OUTDIR/slopes.md and OUTDIR/slopes.png (the
log-log figure, drawn with gnuplot).
"""
import math
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

TABLE = 'fertility'
OWNERS = 4
T = 500
ETA = 0.1
CLIP = 25.0          # about the largest per-example gradient norm at theta*: rarely clips
EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
N_FIXED = 8000
N_ROWS = (2000, 4000, 8000, 16000, 32000, 63000)
EPS_FIXED = 0.5
# Gaussian answers (--mechanism gaussian): their noise is about 1/36 of
# Laplace's here, so the grids move to smaller eps.
DELTA = 1e-6
EPSILONS_GAUSS = (0.0625, 0.125, 0.25, 0.5, 1.0, 2.0)
EPS_FIXED_GAUSS = 0.125
REPEATS = 20
SEED = 1
TARGET, TOL = -2.0, 0.3


def subset(src_files, n, out):
    """The first n rows of each owner file (they are shuffled by --split)."""
    d = os.path.join(out, 'data', 'slopes-n%d' % n)
    os.makedirs(d, exist_ok=True)
    files = []
    for i, src in enumerate(src_files):
        dst = os.path.join(d, 'owner-%d.csv' % (i + 1))
        with open(src) as f, open(dst, 'w') as g:
            for j, line in enumerate(f):
                if j > n:
                    break
                g.write(line)
        files.append(dst)
    return files


def psi_list(tools, files, eps, repeats, out, tag, mech='laplace'):
    t = C.TABLES[TABLE]
    s = tools.sim(files, os.path.join(out, 'sim', tag),
                  ['--target', t['target'], '--bias', '--model', t['model'], '--T', str(T),
                   '--eta', repr(ETA), '--clip', repr(CLIP), '--answers-cap', str(T),
                   '--epsilon', eps, '--repeats', str(repeats), '--seed', str(SEED),
                   '--psi-every', str(T)] +
                  (['--mechanism', 'gaussian', '--delta', repr(DELTA)] if mech == 'gaussian'
                   else []))
    return s['psi']


def cell(tools, files, n, eps, repeats, out, base, mech='laplace'):
    noisy = psi_list(tools, files, repr(eps), repeats, out, 'n%d-eps%g' % (n, eps), mech)
    d = [a - b for a, b in zip(noisy, base)]
    mean = sum(d) / len(d)
    se = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1) / len(d)) if len(d) > 1 else 0
    r = dict(n_i=n, epsilon=eps, psi_mean=sum(noisy) / len(noisy),
             psi_noise_free=sum(base) / len(base), noise_part=mean, noise_part_se=se)
    r['noise_dominates'] = mean >= r['psi_noise_free']
    print('n_i %6d eps %-4g psi %.4g noise-free %.4g noise part %.4g (se %.2g)%s'
          % (n, eps, r['psi_mean'], r['psi_noise_free'], mean, se,
             '' if r['noise_dominates'] else ': noise does not dominate'), flush=True)
    return r


def slope(xs, ys):
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    b = sum((a - mx) * (c - my) for a, c in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)
    return b, math.exp(my - b * mx)


def figure(out, by_eps, by_n, fit_eps, fit_n, repeats, mech, eps_fixed):
    """slopes.png: two log-log panels, the cells with their standard
    errors, the least-squares line and a line of slope -2 through the same
    centre; None when gnuplot is missing."""
    gp = shutil.which('gnuplot')
    if gp is None:
        print('gnuplot not found: no figure', file=sys.stderr)
        return None
    dat = os.path.join(out, 'slopes.dat')
    with open(dat, 'w') as f:
        # Four blocks: by eps fitted, not fitted; by n_i fitted, not fitted
        # (an empty block gets one NaN line, which keeps the numbering).
        for rows, key in ((by_eps, 'epsilon'), (by_n, 'n_i')):
            for fitted in (True, False):
                sel = [r for r in rows if r['noise_dominates'] == fitted]
                for r in sel:
                    f.write('%g %g %g\n' % (r[key], r['noise_part'], r['noise_part_se']))
                if not sel:
                    f.write('%g NaN 0\n' % rows[0][key])
                f.write('\n\n')
    png = os.path.join(out, 'slopes.png')
    (be, ae), (bn, an) = fit_eps, fit_n
    # A line of slope -2 through the fit's centre (geometric means).
    fe = [r for r in by_eps if r['noise_dominates']]
    fn = [r for r in by_n if r['noise_dominates']]
    ce = math.exp(sum(math.log(r['epsilon']) for r in fe) / len(fe))
    cn = math.exp(sum(math.log(r['n_i']) for r in fn) / len(fn))
    script = f"""
set terminal pngcairo size 1100,460 font ',11'
set output '{png}'
set multiplot layout 1,2 title "{TABLE}, {OWNERS} owners, linear, {mech}; T = {T}, eta = {ETA}, clip = {CLIP:g}, K_i = T: the noise's part of psi"
set logscale xy
set grid
set key top right
set ylabel 'psi - psi(eps = inf)'
set xlabel 'eps (n_i = {N_FIXED})'
set xrange [{min(r['epsilon'] for r in by_eps) / 1.5:g}:{max(r['epsilon'] for r in by_eps) * 1.5:g}]
plot '{dat}' index 0 using 1:2:3 with yerrorbars pt 7 lc rgb '#1f77b4' title 'sim, mean of {repeats} paired repeats', \\
     '{dat}' index 1 using 1:2:3 with yerrorbars pt 6 lc rgb '#1f77b4' title 'noise not dominant (not fitted)', \\
     {ae:.10g}*x**({be:.10g}) lw 2 lc rgb '#1f77b4' title sprintf('fit: slope %.2f', {be:.10g}), \\
     {ae:.10g}*{ce:.10g}**({be:.10g})*(x/{ce:.10g})**(-2) dt 2 lw 2 lc rgb 'black' title 'slope -2'
set xlabel 'rows per owner n_i (eps = {eps_fixed:g})'
set xrange [{min(r['n_i'] for r in by_n) / 1.5:g}:{max(r['n_i'] for r in by_n) * 1.5:g}]
set xtics ({', '.join("'%dk' %d" % (r['n_i'] // 1000, r['n_i']) for r in by_n)})
plot '{dat}' index 2 using 1:2:3 with yerrorbars pt 7 lc rgb '#d62728' title 'sim', \\
     '{dat}' index 3 using 1:2:3 with yerrorbars pt 6 lc rgb '#d62728' title 'noise not dominant (not fitted)', \\
     {an:.10g}*x**({bn:.10g}) lw 2 lc rgb '#d62728' title sprintf('fit: slope %.2f', {bn:.10g}), \\
     {an:.10g}*{cn:.10g}**({bn:.10g})*(x/{cn:.10g})**(-2) dt 2 lw 2 lc rgb 'black' title 'slope -2'
unset multiplot
"""
    p = subprocess.run([gp], input=script, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit('gnuplot failed: %s' % p.stderr.strip())
    print('wrote', png)
    return png


def main():
    def more(p):
        p.add_argument('--mechanism', choices=('laplace', 'gaussian'), default='laplace',
                       help='the answers\' noise (default laplace)')
    a = C.args(__doc__, more)
    quick = C.quick(a)
    tools = C.Tools(a)
    mech = a.mechanism
    gauss = mech == 'gaussian'
    eps_fixed = EPS_FIXED_GAUSS if gauss else EPS_FIXED
    epsilons = ((0.125, 0.5) if gauss else (1.0, 4.0)) if quick else \
        (EPSILONS_GAUSS if gauss else EPSILONS)
    n_rows = (4000, 16000) if quick else N_ROWS
    repeats = 4 if quick else REPEATS
    t_all = time.time()
    full = tools.prep(TABLE, os.path.join(a.out, 'data', TABLE), OWNERS)
    bases, files = {}, {}
    for n in sorted(set(n_rows) | {N_FIXED}):
        files[n] = subset(full, n, a.out)
        bases[n] = psi_list(tools, files[n], 'inf', repeats, a.out, 'n%d-inf' % n)
    by_eps = [cell(tools, files[N_FIXED], N_FIXED, e, repeats, a.out, bases[N_FIXED], mech)
              for e in epsilons]
    by_n = [cell(tools, files[n], n, eps_fixed, repeats, a.out, bases[n], mech)
            for n in n_rows]
    ok_cells = all(r['noise_part'] > 0 for r in by_eps + by_n)
    if not ok_cells:
        sys.exit('a cell has no positive noise part: %s' % [r for r in by_eps + by_n
                                                            if r['noise_part'] <= 0])
    fe = [r for r in by_eps if r['noise_dominates']]
    fn = [r for r in by_n if r['noise_dominates']]
    if len(fe) < 2 or len(fn) < 2:
        sys.exit('noise dominates in too few cells to fit a slope (%d by eps, %d by n_i)'
                 % (len(fe), len(fn)))
    fit_eps = slope([r['epsilon'] for r in fe], [r['noise_part'] for r in fe])
    fit_n = slope([r['n_i'] for r in fn], [r['noise_part'] for r in fn])
    ok = abs(fit_eps[0] - TARGET) <= TOL and abs(fit_n[0] - TARGET) <= TOL
    png = figure(a.out, by_eps, by_n, fit_eps, fit_n, repeats, mech, eps_fixed)
    rows = [[grid, '%g' % r['epsilon'], '{:,}'.format(r['n_i']), C.g3(r['psi_mean']),
             C.g3(r['psi_noise_free']), '%s ± %s' % (C.g3(r['noise_part']),
                                                    C.g3(r['noise_part_se'])),
             'yes' if r['noise_dominates'] else 'no']
            for grid, rs in (('ε', by_eps), ('n_i', by_n)) for r in rs]
    text = ('%s (%s), %d owners, %s answers%s; T = %d, η = %g, Ξ = %g, K_i = T; '
            '%d paired repeats per cell.\n\n'
            % (TABLE, C.TABLES[TABLE]['model'], OWNERS, mech,
               ' (δ = %g)' % DELTA if gauss else '', T, ETA, CLIP, repeats) +
            C.md_table(['grid', 'ε', 'n_i', 'ψ', 'ψ (ε = ∞)', 'noise part ± se',
                        'fitted (noise dominates)'], rows) +
            '\nSlope against log ε: %.3f; against log n_i: %.3f (want %g ± %g): %s\n'
            % (fit_eps[0], fit_n[0], TARGET, TOL, 'PASS' if ok else 'FAIL'))
    C.write_text(a.out, 'slopes.md', text)
    C.write_result(a.out, {
        'experiment': 'slopes', 'quick': quick, 'table': TABLE, 'owners': OWNERS,
        'mechanism': mech, 'delta': DELTA if gauss else 0.0,
        'settings': {'T': T, 'eta': ETA, 'clip': CLIP, 'answers_cap': T},
        'repeats': repeats, 'n_fixed': N_FIXED, 'eps_fixed': eps_fixed,
        'by_epsilon': by_eps, 'by_rows': by_n,
        'slope_epsilon': fit_eps[0], 'slope_rows': fit_n[0], 'target': TARGET,
        'tolerance': TOL, 'figure': os.path.basename(png) if png else None,
        'pass': ok, 'seconds': round(time.time() - t_all, 1)})
    return 0


if __name__ == '__main__':
    sys.exit(main())
