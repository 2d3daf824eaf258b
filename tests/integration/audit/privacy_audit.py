# SPDX-License-Identifier: Apache-2.0
"""Privacy audit of ownerd (docs/privacy-audit.md).

An auditor (audit_learner.c) plays the learner against real ownerd processes
over mutual TLS 1.3 and collects many answers at theta = 0 from an owner
holding D and from one holding D', neighbouring datasets that differ in one
canary row.  With the L1 clip bound 1 the canary's clipped gradient is
-1 * e_1 in D and +1 * e_1 in D', so the first coordinate of the answer
sum moves by exactly the sensitivity 2 * clip: the two answer
distributions on that coordinate are Laplace laws of scale b whose centres
differ by eps_q * b, the worst case of the mechanism.

The distinguishing test is a threshold on that coordinate (for two Laplace
laws of equal scale the likelihood ratio is monotone in x, so a threshold
test is the likelihood-ratio test).  The threshold and its direction are
chosen on one half of each sample (answers 1, 3, 5, ...); on the
other half the false-positive rate (an answer from D called D') and the
true-positive rate get 95 % Clopper-Pearson intervals, and

    eps_lb = ln(TPR_lower / FPR_upper)        (delta = 0)
    eps_hat = ln(TPR / FPR),  eps_ub = ln(TPR_upper / FPR_lower).

Pass: eps_lb <= eps_q (the claim holds) and eps_lb >= eps_q / 2 (the noise
is not grossly over-calibrated).  Negative control: ownerd-audit-halfnoise,
the same daemon with half the Laplace scale (tests/integration/audit/halfnoise.c), must
be flagged: its eps_lb must exceed eps_q.

    privacy_audit.py BUILDDIR [--answers 20000] [--control-answers 2000]
                              [--eps 1] [--ownerd BIN] [--report FILE] [--keep]
    privacy_audit.py --simulate R [--answers N] [--eps E]
        (false-failure rates of the decision on simulated Laplace samples)
"""
import argparse, bisect, json, math, os, random, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, main, run, tmpdir, cleanup

ROWS = 100          # rows of each dataset (the canary and 99 shared rows)
CLIP = 1.0          # clip bound sent in the Welcome (L1; L2 in the Gaussian audit; a power
                    # of two: exact on the grid)
Z95 = 1.959963984540054
MIN_RATE = 0.02     # a candidate threshold must keep FPR and TPR >= 2 % on the training half


# ---- Clopper-Pearson --------------------------------------------------------

def betacf(a, b, x):
    """Continued fraction of the incomplete beta function (Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        de = d * c
        h *= de
        if abs(de - 1.0) < 1e-15:
            break
    return h


def betainc(a, b, x):
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbt = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) +
           a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbt) * betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * betacf(b, a, 1.0 - x) / b


def beta_ppf(q, a, b):
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if betainc(a, b, mid) < q:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-15:
            break
    return 0.5 * (lo + hi)


def clopper_pearson(k, n, level=0.95):
    """Two-sided interval for a binomial proportion k/n."""
    a = (1.0 - level) / 2.0
    lo = 0.0 if k == 0 else beta_ppf(a, k, n - k + 1)
    hi = 1.0 if k == n else beta_ppf(1.0 - a, k + 1, n - k)
    return lo, hi


# ---- the distinguishing test ------------------------------------------------

def above(sorted_x, t):
    return len(sorted_x) - bisect.bisect_right(sorted_x, t)


def eps_train_lb(fpr, tpr, m0, m1):
    """The normal-approximation lower bound on eps of a training-half
    threshold (the exact bound is computed on the test half only)."""
    return (math.log(tpr) - math.log(fpr) -
            Z95 * (math.sqrt((1 - tpr) / (m1 * tpr)) + math.sqrt((1 - fpr) / (m0 * fpr))))


def choose_threshold(x0, x1, train_lb=eps_train_lb):
    """On the training half: among 199 thresholds (the pooled sample's
    0.5 %..99.5 % quantiles) and both directions, the one with the best
    train_lb(fpr, tpr, m0, m1) (None: not usable)."""
    s0, s1 = sorted(x0), sorted(x1)
    pooled = sorted(x0 + x1)
    m0, m1 = len(x0), len(x1)
    floor0, floor1 = max(5, MIN_RATE * m0), max(5, MIN_RATE * m1)
    best = None
    for i in range(1, 200):
        t = pooled[int(i / 200.0 * (len(pooled) - 1))]
        for sign in (1, -1):
            if sign > 0:
                fp, tp = above(s0, t), above(s1, t)
            else:
                fp, tp = m0 - above(s0, t), m1 - above(s1, t)
            # Far-tail thresholds rest on a handful of counts: their
            # training bound is mostly luck and generalises badly.
            if fp < floor0 or tp < floor1:
                continue
            lb = train_lb(fp / m0, tp / m1, m0, m1)
            if lb is not None and (best is None or lb > best[0]):
                best = (lb, t, sign)
    check(best is not None, 'no usable threshold on the training half')
    return best[1], best[2]


def threshold_test(x0, x1, train_lb=eps_train_lb):
    """The threshold chosen on answers 1, 3, 5, ... of each sample,
    measured on answers 2, 4, 6, ...: the report's common fields, with the
    95 % Clopper-Pearson intervals of FPR and TPR."""
    t, sign = choose_threshold(x0[0::2], x1[0::2], train_lb)
    y0, y1 = x0[1::2], x1[1::2]
    fp = sum(1 for v in y0 if sign * v > sign * t)
    tp = sum(1 for v in y1 if sign * v > sign * t)
    m0, m1 = len(y0), len(y1)
    return {'threshold': t, 'direction': '>' if sign > 0 else '<', 'test_d': m0,
            'test_d_prime': m1, 'fp': fp, 'tp': tp, 'fpr': fp / m0, 'tpr': tp / m1,
            'fpr_ci95': list(clopper_pearson(fp, m0)), 'tpr_ci95': list(clopper_pearson(tp, m1))}


def audit(x0, x1):
    """x0: answers from D, x1: from D' (the canary coordinate)."""
    r = threshold_test(x0, x1)
    (fpr_lo, fpr_hi), (tpr_lo, tpr_hi) = r['fpr_ci95'], r['tpr_ci95']
    r['eps_lb'] = math.log(tpr_lo / fpr_hi) if tpr_lo > 0 else float('-inf')
    r['eps_ub'] = math.log(tpr_hi / fpr_lo) if fpr_lo > 0 else float('inf')
    r['eps_hat'] = (math.log(r['tpr'] / r['fpr']) if r['fp'] > 0 and r['tp'] > 0
                    else float('nan'))
    return r


# ---- real ownerd runs ---------------------------------------------------------

def write_data(path, canary_y):
    """100 rows x1,x2,x3,y: the canary (1,0,0,canary_y) and 99 rows shared by
    D and D' (fixed seed).  At theta = 0 the linear model's per-row gradient
    is -y x: the canary's, 100 in L1, clips to -sign(canary_y) * e_1."""
    rnd = random.Random(5)
    with open(path, 'w') as f:
        f.write('x1,x2,x3,y\n')
        f.write('1,0,0,%r\n' % canary_y)
        for _ in range(ROWS - 1):
            f.write(','.join('%.6f' % rnd.gauss(0, 1) for _ in range(4)) + '\n')


def wait_port(pf, proc, what):
    for _ in range(400):
        if os.path.exists(pf):
            txt = open(pf).read()
            if txt.startswith('tls='):
                return int(txt.split('=')[1])
        if proc.poll() is not None:
            raise Fail('%s exited at start (%d)' % (what, proc.returncode))
        time.sleep(0.025)
    raise Fail('%s wrote no port file' % what)


def collect(d, build, ownerd, tag, data, K, epsilon, learner_args=(), owner_args=()):
    """One real ownerd on `data` with --epsilon `epsilon` answering K
    queries of the auditor; extra arguments for each (the Gaussian audit's,
    docs/privacy-audit.md §8.6)."""
    certs = os.path.join(d, 'certs')
    pf = os.path.join(d, tag + '.port')
    ans = os.path.join(d, tag + '.answers')
    led = os.path.join(d, tag + '.ledger')
    aud = subprocess.Popen([os.path.join(build, 'tests', 'integration', 'audit', 'audit_learner'),
                            '--ca', certs + '/ca.crt', '--cert', certs + '/learner.crt',
                            '--key', certs + '/learner.key', '--port-file', pf,
                            '--answers', str(K), '--clip', repr(CLIP), '--out', ans] +
                           list(learner_args),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    port = wait_port(pf, aud, 'audit_learner')
    own = subprocess.Popen([ownerd, '--learner', '127.0.0.1:%d' % port,
                            '--ca', certs + '/ca.crt', '--cert', certs + '/owner-1.crt',
                            '--key', certs + '/owner-1.key', '--data', data,
                            '--epsilon', repr(epsilon), '--ledger', led,
                            '--log-level', 'warn', '--once'] + list(owner_args),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return aud, own, ans, led


def finish(job, tag):
    """The answers' first coordinates and audit_learner's summary."""
    aud, own, ans, _ = job
    try:
        aout, aerr = aud.communicate(timeout=900)
        _, oerr = own.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        aud.kill()
        own.kill()
        raise Fail('%s: the audit run did not finish' % tag)
    check(aud.returncode == 0, '%s: audit_learner exited %d: %s' % (tag, aud.returncode, aerr))
    check(own.returncode == 0, '%s: ownerd exited %d: %s' % (tag, own.returncode, oerr))
    f = dict(kv.split('=') for kv in aout.split()[1:])
    x = [float(line.split()[0]) for line in open(ans)]
    return x, f


def measure(d, build, ownerd, name, K, eps):
    # epsilon_i = K * eps: each of the K answers gets the share eps.
    jobs = [collect(d, build, ownerd, name + '-D', os.path.join(d, 'D.csv'), K, K * eps),
            collect(d, build, ownerd, name + '-Dprime', os.path.join(d, 'Dprime.csv'), K,
                    K * eps)]
    x0, f0 = finish(jobs[0], name + '-D')
    x1, f1 = finish(jobs[1], name + '-Dprime')
    e0, e1 = float(f0['eps_q']), float(f1['eps_q'])
    check(len(x0) == K and len(x1) == K, '%s: %d and %d answers, expected %d' %
          (name, len(x0), len(x1), K))
    check(e0 == e1, '%s: per-answer shares differ: %r %r' % (name, e0, e1))
    r = audit(x0, x1)
    r['answers_per_dataset'] = K
    r['eps_q'] = e0
    r['laplace_scale_b'] = 2 * CLIP / (ROWS * e0)
    return r


def nm_has(path, sym):
    out = run(['nm', path]).stdout
    return any(line.split()[-1] == sym for line in out.splitlines() if line.strip())


def test_real(args):
    build = args.build
    production = os.path.join(build, 'owner', 'ownerd')
    ownerd = args.ownerd or production
    half = os.path.join(build, 'tests', 'integration', 'audit', 'ownerd-audit-halfnoise')
    # The negative control must not be reachable from the production daemon.
    for sym in ('__wrap_dp_query_answer', '__wrap_dp_query_answer_mech'):
        check(not nm_has(production, sym),
              'the production ownerd contains the half-noise wrapper %s' % sym)
    check(nm_has(half, '__wrap_dp_query_answer'),
          'ownerd-audit-halfnoise lacks the half-noise wrapper')
    d = tmpdir('audit')
    try:
        run([os.path.join(build, 'tools', 'dpasync'), 'certs', '--out', os.path.join(d, 'certs'),
             '--owners', '1'])
        write_data(os.path.join(d, 'D.csv'), 100.0)
        write_data(os.path.join(d, 'Dprime.csv'), -100.0)
        t0 = time.time()
        real = measure(d, build, ownerd, 'ownerd', args.answers, args.eps)
        t1 = time.time()
        ctrl = measure(d, build, half, 'halfnoise', args.control_answers, args.eps)
        t2 = time.time()
        real['seconds'], ctrl['seconds'] = round(t1 - t0, 1), round(t2 - t1, 1)
        rep = {'ownerd': real, 'ownerd-audit-halfnoise': ctrl}
        print(json.dumps(rep, indent=1))
        if args.report:
            with open(args.report, 'w') as f:
                json.dump(rep, f, indent=1)
        e = real['eps_q']
        check(real['eps_lb'] <= e, 'ownerd: empirical epsilon lower bound %.4f exceeds the '
              'claimed per-answer epsilon %g: the noise is too small' % (real['eps_lb'], e))
        check(real['eps_lb'] >= 0.5 * e, 'ownerd: empirical epsilon lower bound %.4f is below '
              'half the claimed %g: the noise is over-calibrated' % (real['eps_lb'], e))
        check(ctrl['eps_lb'] > ctrl['eps_q'], 'negative control not flagged: half the noise '
              'gave eps_lb %.4f <= %g' % (ctrl['eps_lb'], ctrl['eps_q']))
    finally:
        if args.keep:
            print('kept', d)
        else:
            cleanup(d)


def simulate(args):
    """The decision's error rates on exact Laplace samples (continuous; the
    daemon's discrete Laplace on a 2^-40 grid is indistinguishable here)."""
    rnd = random.Random(11)
    e = args.eps
    b = 1.0
    lap = lambda mu: mu + b * (rnd.expovariate(1.0) - rnd.expovariate(1.0))
    out = {}
    for name, scale, K in (('ownerd', 1.0, args.answers), ('halfnoise', 0.5, args.control_answers)):
        above_claim = below_half = lbs = 0
        vals = []
        for _ in range(args.simulate):
            x0 = [lap(0.0) * scale for _ in range(K)]
            x1 = [(lap(0.0) * scale) + e * b for _ in range(K)]
            r = audit(x0, x1)
            vals.append(r['eps_lb'])
            above_claim += r['eps_lb'] > e
            below_half += r['eps_lb'] < 0.5 * e
        vals.sort()
        out[name] = {'replicates': args.simulate, 'answers_per_dataset': K,
                     'eps_lb_above_claim': above_claim, 'eps_lb_below_half': below_half,
                     'eps_lb_median': vals[len(vals) // 2],
                     'eps_lb_min_max': [vals[0], vals[-1]]}
    print(json.dumps(out, indent=1))


def test(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?')
    ap.add_argument('--answers', type=int, default=20000)
    ap.add_argument('--ownerd', help='audit this binary instead of BUILDDIR/owner/ownerd')
    ap.add_argument('--control-answers', type=int, default=2000)
    ap.add_argument('--eps', type=float, default=1.0)
    ap.add_argument('--report')
    ap.add_argument('--keep', action='store_true')
    ap.add_argument('--simulate', type=int, default=0)
    args = ap.parse_args(argv)
    if args.simulate:
        simulate(args)
    else:
        check(args.build is not None, 'usage: privacy_audit.py BUILDDIR')
        test_real(args)


if __name__ == '__main__':
    main(test)
