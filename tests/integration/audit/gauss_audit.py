# SPDX-License-Identifier: Apache-2.0
"""Privacy audit of Gaussian answers (docs/privacy-audit.md §8).

The canary datasets D and D' of the Laplace audit (privacy_audit.py): 100
rows, the canary x = (1, 0, 0) with y = +100 in D and -100 in D'.  At
theta = 0 its gradient -y x has L2 norm 100, far beyond the L2 clip bound
C = 1: it is clipped to -e_1 in D and +e_1 in D', so the two clipped sums
differ by exactly 2C in L2, all of it on coordinate 1 and exactly on the
lattice.  On that coordinate the answers on D and D' are discrete
Gaussians of the same sigma whose centres are 2C/n apart: the claim rho_q
implies the Gaussian-DP parameter

    mu = (2C/n) / sigma  <=  mu_claim = sqrt(2 rho_q).

For two Gaussians of equal variance every threshold test has
TPR = Phi(Phi^-1(FPR) + mu).  The threshold and its direction are chosen
on one half of each sample (answers 1, 3, 5, ...); on the other half FPR
and TPR get 95 % Clopper-Pearson intervals, and

    mu_lb = Phi^-1(TPR_lower) - Phi^-1(FPR_upper)
    mu_hat = Phi^-1(TPR) - Phi^-1(FPR),  mu_ub = Phi^-1(TPR_upper) - Phi^-1(FPR_lower).

Pass: mu_claim / 2 <= mu_lb <= mu_claim.  Negative control: the same
answers with half the sigma (halfnoise.c, true mu = 2 mu_claim) must give
mu_lb > mu_claim.

The answers come from gauss_answers (dp_query_answer_mech called on the
canary datasets, no sockets) and, for the control, from
gauss_answers-halfnoise.

    gauss_audit.py BUILDDIR [--answers 20000] [--control-answers 2000]
                            [--rho 0.5] [--report FILE] [--keep]
    gauss_audit.py --simulate R [--answers N] [--control-answers M] [--rho R] [--seed S]
        (false-failure rates of the decision on simulated Gaussian samples)
"""
import argparse, json, math, os, random, subprocess, sys, time
from statistics import NormalDist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Fail, check, main, run, tmpdir, cleanup
from privacy_audit import (ROWS, Z95, threshold_test, write_data, nm_has, collect,
                           finish)

CLIP = 1.0          # L2 clip bound (a power of two: +-C e_1 exact on the lattice)
PHI = NormalDist()


def probit(p):
    """Phi^-1(p), with -inf / +inf at 0 and 1."""
    if p <= 0.0:
        return float('-inf')
    if p >= 1.0:
        return float('inf')
    return PHI.inv_cdf(p)


def probit_se(p, m):
    """Standard error of Phi^-1 of a proportion p of m (delta method)."""
    z = PHI.inv_cdf(p)
    return math.sqrt(p * (1.0 - p) / m) / PHI.pdf(z)


def mu_train_lb(fpr, tpr, m0, m1):
    """The normal-approximation lower bound on mu of a training-half
    threshold; None where Phi^-1 is infinite."""
    if fpr >= 1.0 or tpr >= 1.0:
        return None
    return probit(tpr) - probit(fpr) - Z95 * (probit_se(tpr, m1) + probit_se(fpr, m0))


def audit(x0, x1):
    """x0: answers from D, x1: from D' (the canary coordinate)."""
    r = threshold_test(x0, x1, mu_train_lb)
    (fpr_lo, fpr_hi), (tpr_lo, tpr_hi) = r['fpr_ci95'], r['tpr_ci95']
    lb, hat = probit(tpr_lo) - probit(fpr_hi), probit(r['tpr']) - probit(r['fpr'])
    r.update({'mu_lb': lb, 'mu_hat': hat, 'mu_ub': probit(tpr_hi) - probit(fpr_lo),
              'rho_lb': lb * lb / 2 if lb > 0 else 0.0, 'rho_hat': hat * hat / 2})
    return r


# ---- answers from dp_query_answer_mech ---------------------------------------

def start_driver(d, binary, tag, data, K, rho):
    ans = os.path.join(d, tag + '.answers')
    proc = subprocess.Popen([binary, '--data', data, '--answers', str(K), '--clip', repr(CLIP),
                             '--rho', repr(rho), '--out', ans],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, ans


def finish_driver(job, tag):
    proc, ans = job
    try:
        out, err = proc.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise Fail('%s: the answer driver did not finish' % tag)
    check(proc.returncode == 0, '%s: gauss_answers exited %d: %s' % (tag, proc.returncode, err))
    f = dict(kv.split('=') for kv in out.split()[1:])
    x = [float(line.split()[0]) for line in open(ans)]
    return x, {k: float(v) for k, v in f.items()}


def measure(d, binary, name, K, rho):
    jobs = [start_driver(d, binary, name + '-D', os.path.join(d, 'D.csv'), K, rho),
            start_driver(d, binary, name + '-Dprime', os.path.join(d, 'Dprime.csv'), K, rho)]
    x0, f0 = finish_driver(jobs[0], name + '-D')
    x1, f1 = finish_driver(jobs[1], name + '-Dprime')
    check(len(x0) == K and len(x1) == K, '%s: %d and %d answers, expected %d' %
          (name, len(x0), len(x1), K))
    check(f0['sigma'] == f1['sigma'], '%s: sigmas differ: %r %r' % (name, f0, f1))
    # The worst case is reached: the noiseless answers' canary coordinates
    # differ by the sensitivity 2C/n, short of it only by the kernel's
    # margin, a few lattice steps (docs/privacy-audit.md §8).
    gap, full = f1['exact'] - f0['exact'], 2 * CLIP / ROWS
    check(gap <= full and gap >= full * (1 - 1e-9),
          '%s: the canary moves the answer by %r, not 2C/n = %r' % (name, gap, full))
    r = audit(x0, x1)
    r['answers_per_dataset'] = K
    r['rho_q'] = rho
    r['mu_claim'] = math.sqrt(2 * rho)
    r['sigma'] = f0['sigma']
    r['mu_true'] = gap / f0['sigma']
    r['sensitivity_shortfall'] = full - gap
    return r


# ---- answers from a real ownerd (docs/privacy-audit.md §8.6) -----------------

DELTA = 1e-6        # the owner's --delta
# ownerd takes an --epsilon only while the samplers' tail term
# e^eps K p DP_NOISE_DGAUSS_TAIL stays below delta / 2 (docs/zcdp.md §7):
# eps below about 470, so one job holds about rho 330 in all.  The answers
# come from jobs of at most JOB_K each (a fresh ledger each), so that each
# answer's rho_q can be 0.125 (mu_claim 0.5, eps 444 per job of 2,500), where
# the decision has the power §8.4 measures; one job of 20,000 answers could
# only have rho_q 0.015, where it does not (docs/privacy-audit.md §8.6).
OWNERD_RHO = 0.125
JOB_K = 2500


def eps_for(K, rho):
    """An --epsilon whose Gaussian share over K answers is about rho each:
    the classical conversion eps = R + 2 sqrt(R ln(1/delta)) of R = K rho
    (the owner's tight one gives a little more; the claim is read from
    what it charged, not from this)."""
    R = K * rho
    return R + 2 * math.sqrt(R * math.log(1 / DELTA))


def owner_rho(build, job, tag, K):
    """The rho ownerd charged each answer: its job ledger's rho spent over
    its answers (docs/cli.md "dpasync ledger")."""
    info = json.loads(run([os.path.join(build, 'tools', 'dpasync'), 'ledger', job[3]]).stdout)
    jobs = [j for j in info.get('jobs', []) if j.get('job') == 'privacy-audit']
    check(len(jobs) == 1 and jobs[0].get('mechanism') == 'gaussian' and
          jobs[0].get('answers') == K, '%s: no Gaussian job ledger of %d answers: %r' %
          (tag, K, info))
    return jobs[0]['rho_spent'] / K


def measure_ownerd(d, build, ownerd, name, K, rho):
    """K answers per dataset from jobs of k = min(K, JOB_K) answers each
    (K a multiple of k), D's and D''s jobs two at a time; every job must
    have charged the same rho_q, the claim."""
    k = min(K, JOB_K)
    check(K % k == 0, '--answers %d with --ownerd must be a multiple of %d' % (K, k))
    x0, x1, rhos = [], [], set()
    for j in range(K // k):
        tags = ['%s-%s-job%d' % (name, t, j) for t in ('D', 'Dprime')]
        jobs = [collect(d, build, ownerd, tag, os.path.join(d, data), k, eps_for(k, rho),
                        ['--mechanism', 'gaussian'], ['--delta', repr(DELTA)])
                for tag, data in zip(tags, ('D.csv', 'Dprime.csv'))]
        x0 += finish(jobs[0], tags[0])[0]
        x1 += finish(jobs[1], tags[1])[0]
        rhos |= {owner_rho(build, job, tag, k) for job, tag in zip(jobs, tags)}
    check(len(x0) == K and len(x1) == K, '%s: %d and %d answers, expected %d' %
          (name, len(x0), len(x1), K))
    check(len(rhos) == 1, '%s: per-answer rho differ between jobs: %r' % (name, sorted(rhos)))
    r0 = rhos.pop()
    r = audit(x0, x1)
    r['answers_per_dataset'] = K
    r['rho_q'] = r0
    r['mu_claim'] = math.sqrt(2 * r0)
    return r


def decide(rep, real, ctrl, args):
    """Print and keep the report; pass or fail as §8.4 says."""
    print(json.dumps(rep, indent=1))
    if args.report:
        with open(args.report, 'w') as f:
            json.dump(rep, f, indent=1)
    mu = real['mu_claim']
    check(real['mu_lb'] <= mu, 'empirical mu lower bound %.4f exceeds the claimed mu %g '
          '(rho_q %g): the noise is too small' % (real['mu_lb'], mu, real['rho_q']))
    check(real['mu_lb'] >= 0.5 * mu, 'empirical mu lower bound %.4f is below half the '
          'claimed mu %g: the noise is over-calibrated' % (real['mu_lb'], mu))
    check(ctrl['mu_lb'] > ctrl['mu_claim'], 'negative control not flagged: half the sigma '
          'gave mu_lb %.4f <= %g' % (ctrl['mu_lb'], ctrl['mu_claim']))


def run_audit(args, plain, half, names, draw, dpasync=None):
    """The audit of the answers draw(d, binary, name, K, rho) collects
    from `plain` and from its half-noise variant `half` (names: their
    report keys); dpasync, when given, makes the TLS certificates first."""
    check(not nm_has(plain, '__wrap_dp_query_answer_mech'),
          '%s contains the half-noise wrapper' % names[0])
    check(nm_has(half, '__wrap_dp_query_answer_mech'),
          '%s lacks the half-noise wrapper' % names[1])
    d = tmpdir('gaudit')
    try:
        if dpasync:
            run([dpasync, 'certs', '--out', os.path.join(d, 'certs'), '--owners', '1'])
        write_data(os.path.join(d, 'D.csv'), 100.0)
        write_data(os.path.join(d, 'Dprime.csv'), -100.0)
        t0 = time.time()
        real = draw(d, plain, 'plain', args.answers, args.rho)
        t1 = time.time()
        ctrl = draw(d, half, 'halfnoise', args.control_answers, args.rho)
        real['seconds'], ctrl['seconds'] = round(t1 - t0, 1), round(time.time() - t1, 1)
        decide({names[0]: real, names[1]: ctrl}, real, ctrl, args)
    finally:
        if args.keep:
            print('kept', d)
        else:
            cleanup(d)


def test_ownerd(args):
    """The end-to-end audit: the auditor plays learnerd against the real
    ownerd (and the half-noise ownerd) with a Gaussian Welcome."""
    b = args.build
    run_audit(args, os.path.join(b, 'owner', 'ownerd'),
              os.path.join(b, 'tests', 'integration', 'audit', 'ownerd-audit-halfnoise'),
              ('ownerd', 'ownerd-audit-halfnoise'),
              lambda d, binary, name, K, rho: measure_ownerd(d, b, binary, name, K, rho),
              os.path.join(b, 'tools', 'dpasync'))


def test_real(args):
    adir = os.path.join(args.build, 'tests', 'integration', 'audit')
    run_audit(args, os.path.join(adir, 'gauss_answers'),
              os.path.join(adir, 'gauss_answers-halfnoise'),
              ('gauss_answers', 'gauss_answers-halfnoise'), measure)


def simulate(args):
    """The decision's error rates on exact (continuous) Gaussian samples;
    the discrete Gaussian at sigma of about 2^40 lattice steps is
    indistinguishable from it here."""
    rnd = random.Random(args.seed)
    mu = math.sqrt(2 * args.rho)
    out = {}
    for name, scale, K in (('gauss', 1.0, args.answers), ('halfnoise', 0.5, args.control_answers)):
        above_claim = below_half = 0
        vals = []
        for _ in range(args.simulate):
            x0 = [rnd.gauss(0.0, scale) for _ in range(K)]
            x1 = [rnd.gauss(mu, scale) for _ in range(K)]
            r = audit(x0, x1)
            vals.append(r['mu_lb'])
            above_claim += r['mu_lb'] > mu
            below_half += r['mu_lb'] < 0.5 * mu
        vals.sort()
        out[name] = {'replicates': args.simulate, 'answers_per_dataset': K, 'mu_claim': mu,
                     'mu_lb_above_claim': above_claim, 'mu_lb_below_half': below_half,
                     'mu_lb_median': vals[len(vals) // 2],
                     'mu_lb_min_max': [vals[0], vals[-1]]}
    print(json.dumps(out, indent=1))


def test(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?')
    ap.add_argument('--answers', type=int, default=20000)
    ap.add_argument('--control-answers', type=int, default=None,
                    help='default 2000; with --ownerd 5000 (two jobs)')
    ap.add_argument('--rho', type=float, default=None,
                    help='rho_q per answer (default 0.5; with --ownerd %g)' % OWNERD_RHO)
    ap.add_argument('--report')
    ap.add_argument('--keep', action='store_true')
    ap.add_argument('--ownerd', action='store_true',
                    help='collect the answers from the real ownerd (end to end, §8.6)')
    ap.add_argument('--simulate', type=int, default=0)
    ap.add_argument('--seed', type=int, default=13, help='of --simulate')
    args = ap.parse_args(argv)
    if args.rho is None:
        args.rho = OWNERD_RHO if args.ownerd else 0.5
    if args.control_answers is None:
        args.control_answers = 5000 if args.ownerd else 2000
    if args.simulate:
        simulate(args)
    else:
        check(args.build is not None, 'usage: gauss_audit.py BUILDDIR')
        if args.ownerd:
            test_ownerd(args)
        else:
            test_real(args)


if __name__ == '__main__':
    main(test)
