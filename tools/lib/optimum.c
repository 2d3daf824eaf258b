/* SPDX-License-Identifier: Apache-2.0 */
/* The non-private optimum theta* of docs/design.md §2 and psi.
 *
 * Solvers and tolerances (the solvers also in docs/cli.md "dpasync eval"):
 *
 *   linear    closed form: Cholesky of X^T X / n + lambda I (dsyrk, dpotrf,
 *             dpotrs); exact up to rounding.  lambda = 0 is allowed when
 *             X^T X is nonsingular: reciprocal condition number (dpocon)
 *             >= 1e-12, else DP_ENUMERIC.
 *   logistic  Newton with backtracking (Armijo 1e-4, halving), Hessian
 *             (1/n) X^T D X + 2 lambda I; stops when
 *             ||grad f||_inf <= 1e-12 max(1, |f|) or when the Newton
 *             decrement^2 / 2 <= 1e-24 max(1, |f|); once the predicted
 *             decrease is below 1e-14 max(1, |f|) (what doubles resolve of f)
 *             one full Newton step is taken without line search and the
 *             iteration stops; at most 100 iterations.
 *   svm       dual coordinate descent (Hsieh et al., ICML 2008, L1-loss SVM;
 *             C = 1/(2 lambda n) after dividing f by 2 lambda, the bias an
 *             ordinary regularised feature), random order each sweep,
 *             shrinking as in the paper, until the duality gap <= 1e-10 f
 *             (at most the work of 20000 full passes).  The box is
 *             handled inside the dual: with h(theta) = lambda ||theta||^2 +
 *             indicator(box), theta(alpha) = clamp(v / (2 lambda), +-theta_max)
 *             and each coordinate step is solved exactly (a piecewise-linear
 *             equation, walked breakpoint by breakpoint).  Without a box (or
 *             when the box is inactive) this is exactly Hsieh's algorithm;
 *             with it the duality gap still certifies the answer.  This
 *             replaces the accelerated projected gradient on a smoothed
 *             hinge (mu -> 1e-9) that was planned for the box case: its
 *             condition number grows like 1/mu (about 1e11 here), i.e.
 *             millions of passes over the data, while the dual method
 *             needs tens and proves its accuracy.
 *
 *   box       linear and logistic: if the unconstrained minimiser has
 *             ||theta||_inf > theta_max, accelerated projected gradient
 *             (FISTA, step 1/L, gradient-based restart of O'Donoghue and
 *             Candes 2015) from its projection, until the gradient mapping
 *             L ||theta - P(theta - grad f / L)||_inf <= 1e-10.  L is
 *             2 lambda_max(X^T X / n) + 2 lambda (linear) or
 *             lambda_max(X^T X / n) / 4 + 2 lambda (logistic).
 */
#include "tools/lib/optimum.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"

#define NEWTON_GTOL 1e-12
#define NEWTON_DECR 1e-24
#define NEWTON_MAXIT 100
#define NEWTON_FRES 1e-14   /* predicted decrease below f's resolution */
#define FISTA_TOL 1e-10
#define FISTA_MAXIT 2000000
#define DCD_GAP 1e-10
#define DCD_MAXEPOCH 20000
#define DCD_MAXSWEEP 100000000
#define BLOCK_ROWS 256
#define RCOND_MIN 1e-12

/* All owners' data seen as one problem. */
typedef struct problem {
	dp_model m;
	const dp_dataset *const *ds;
	size_t nds, n, p;
	double lambda, tmax;
} problem;

static double clamp(double v, double tmax)
{
	return v > tmax ? tmax : (v < -tmax ? -tmax : v);
}

static double norm_inf(const double *v, size_t p)
{
	double s = 0.0;

	for (size_t q = 0; q < p; q++)
		if (fabs(v[q]) > s || isnan(v[q]))
			s = isnan(v[q]) ? INFINITY : fabs(v[q]);
	return s;
}

static double objective(const problem *P, const double *theta)
{
	return dp_model_fitness(P->m, P->ds, P->nds, P->lambda, theta);
}

/* grad f = 2 lambda theta + (1/n) sum over all rows of c x. */
static void gradient(const problem *P, const double *theta, double *g, double *tmp)
{
	for (size_t q = 0; q < P->p; q++)
		g[q] = 2.0 * P->lambda * theta[q];
	for (size_t i = 0; i < P->nds; i++) {
		double w = (double)P->ds[i]->n / (double)P->n;

		if (P->ds[i]->n == 0)
			continue;
		dp_model_mean_grad(P->m, P->ds[i], theta, tmp);
		cblas_daxpy((int)P->p, w, tmp, 1, g, 1);
	}
}

/* G = X^T X / n (full symmetric), b = X^T y / n, yy = y^T y / n. */
static void gram(const problem *P, double *G, double *b, double *yy)
{
	size_t p = P->p;
	double inv = 1.0 / (double)P->n;

	memset(G, 0, p * p * sizeof(double));
	if (b != NULL)
		memset(b, 0, p * sizeof(double));
	if (yy != NULL)
		*yy = 0.0;
	for (size_t i = 0; i < P->nds; i++) {
		const dp_dataset *d = P->ds[i];

		if (d->n == 0)
			continue;
		cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)p, (int)d->n, inv, d->x,
			    (int)p, 1.0, G, (int)p);
		if (b != NULL)
			cblas_dgemv(CblasRowMajor, CblasTrans, (int)d->n, (int)p, inv, d->x, (int)p,
				    d->y, 1, 1.0, b, 1);
		if (yy != NULL)
			*yy += inv * cblas_ddot((int)d->n, d->y, 1, d->y, 1);
	}
	for (size_t r = 0; r < p; r++)
		for (size_t c = 0; c < r; c++)
			G[r * p + c] = G[c * p + r];
}

/* Largest eigenvalue of the symmetric p x p matrix A (A is overwritten). */
static int lambda_max(double *A, size_t p, double *out)
{
	double *w = malloc(p * sizeof(double));
	lapack_int info;

	if (w == NULL)
		return dp_error_set(DP_ENOMEM, "optimum: out of memory");
	info = LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'N', 'U', (lapack_int)p, A, (lapack_int)p, w);
	if (info != 0) {
		free(w);
		return dp_error_set(DP_ENUMERIC, "optimum: eigenvalues failed (info %d)", (int)info);
	}
	*out = w[p - 1] > 0.0 ? w[p - 1] : 0.0;
	free(w);
	return 0;
}

/* ---- FISTA with restart on the box ----------------------------------- */

/* Gradient oracle: linear uses the p x p quadratic form (A = G + lambda I,
 * grad = 2 (A theta - b)); logistic passes over the data. */
typedef struct oracle {
	const problem *P;
	const double *A, *b;    /* linear only */
	double *tmp;
} oracle;

static void oracle_grad(const oracle *o, const double *theta, double *g)
{
	size_t p = o->P->p;

	if (o->A != NULL) {
		cblas_dcopy((int)p, o->b, 1, g, 1);
		cblas_dsymv(CblasRowMajor, CblasUpper, (int)p, 2.0, o->A, (int)p, theta, 1, -2.0,
			    g, 1);
		return;
	}
	gradient(o->P, theta, g, o->tmp);
}

static int fista(const oracle *o, double L, double *theta)
{
	const problem *P = o->P;
	size_t p = P->p;
	double *x = malloc(4 * p * sizeof(double)), *y, *xn, *g;
	double t = 1.0;
	int err = DP_ENUMERIC;

	if (x == NULL)
		return dp_error_set(DP_ENOMEM, "optimum: out of memory");
	y = x + p;
	xn = y + p;
	g = xn + p;
	for (size_t q = 0; q < p; q++)
		x[q] = y[q] = clamp(theta[q], P->tmax);
	for (long it = 0; it < FISTA_MAXIT; it++) {
		double gm = 0.0, dot = 0.0, tn, beta;

		oracle_grad(o, y, g);
		for (size_t q = 0; q < p; q++) {
			xn[q] = clamp(y[q] - g[q] / L, P->tmax);
			double gmq = L * fabs(y[q] - xn[q]);
			if (!(gmq <= gm))
				gm = gmq;
			/* restart test: <G(y), xn - x> > 0 means the momentum
			 * points uphill */
			dot += (y[q] - xn[q]) * (xn[q] - x[q]);
		}
		if (!isfinite(gm))
			break;
		if (gm <= FISTA_TOL) {
			memcpy(theta, xn, p * sizeof(double));
			err = 0;
			break;
		}
		if (dot > 0.0)
			t = 1.0;
		tn = 0.5 * (1.0 + sqrt(1.0 + 4.0 * t * t));
		beta = (t - 1.0) / tn;
		for (size_t q = 0; q < p; q++) {
			y[q] = clamp(xn[q] + beta * (xn[q] - x[q]), P->tmax);
			x[q] = xn[q];
		}
		t = tn;
	}
	free(x);
	if (err != 0)
		return dp_error_set(DP_ENUMERIC, "optimum: projected gradient did not converge");
	return 0;
}

/* ---- linear ------------------------------------------------------------ */

static int solve_linear(const problem *P, double *theta)
{
	size_t p = P->p;
	double *G = malloc((2 * p * p + 2 * p) * sizeof(double)), *A, *b, *rhs;
	lapack_int info;
	int err = 0;

	if (G == NULL)
		return dp_error_set(DP_ENOMEM, "optimum: out of memory");
	A = G + p * p;
	b = A + p * p;
	rhs = b + p;
	gram(P, G, b, NULL);
	for (size_t q = 0; q < p; q++)
		G[q * p + q] += P->lambda;
	memcpy(A, G, p * p * sizeof(double));
	memcpy(rhs, b, p * sizeof(double));
	info = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', (lapack_int)p, A, (lapack_int)p);
	if (info == 0 && P->lambda == 0.0) {
		/* rounding can let an exactly singular X^T X through Cholesky:
		 * ask for its condition instead */
		double anorm = LAPACKE_dlansy(LAPACK_ROW_MAJOR, '1', 'U', (lapack_int)p, G,
					      (lapack_int)p), rcond = 0.0;

		info = LAPACKE_dpocon(LAPACK_ROW_MAJOR, 'U', (lapack_int)p, A, (lapack_int)p, anorm,
				      &rcond);
		if (info == 0 && !(rcond >= RCOND_MIN))
			info = -1000;
	}
	if (info == 0)
		info = LAPACKE_dpotrs(LAPACK_ROW_MAJOR, 'U', (lapack_int)p, 1, A, (lapack_int)p, rhs, 1);
	if (info != 0) {
		err = dp_error_set(DP_ENUMERIC, "optimum: X^T X / n + lambda I is singular or "
				   "numerically so; use lambda > 0");
		goto out;
	}
	for (size_t q = 0; q < p; q++)
		if (!isfinite(rhs[q])) {
			err = dp_error_set(DP_ENUMERIC, "optimum: non-finite solution");
			goto out;
		}
	if (norm_inf(rhs, p) > P->tmax) {
		double lmax;
		oracle o = { .P = P, .A = G, .b = b };

		memcpy(A, G, p * p * sizeof(double));
		err = lambda_max(A, p, &lmax);
		if (err == 0)
			err = fista(&o, 2.0 * lmax, rhs);
		if (err != 0)
			goto out;
	}
	memcpy(theta, rhs, p * sizeof(double));
out:
	free(G);
	return err;
}

/* ---- logistic ---------------------------------------------------------- */

/* l''(t) = 1 / ((1 + e^t)(1 + e^-t)), the same for both labels. */
static double logistic_w(double t)
{
	double e = exp(-fabs(t));

	return e / ((1.0 + e) * (1.0 + e));
}

/* H = (1/n) X^T D X + 2 lambda I (upper triangle, row-major). */
static void logistic_hess(const problem *P, const double *theta, double *H, double *zb,
			      double *t)
{
	size_t p = P->p;
	double inv = 1.0 / (double)P->n;

	memset(H, 0, p * p * sizeof(double));
	for (size_t i = 0; i < P->nds; i++) {
		const dp_dataset *d = P->ds[i];

		for (size_t j0 = 0; j0 < d->n; j0 += BLOCK_ROWS) {
			size_t nb = d->n - j0 < BLOCK_ROWS ? d->n - j0 : BLOCK_ROWS;

			cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)nb, (int)p, 1.0, d->x + j0 * p,
				    (int)p, theta, 1, 0.0, t, 1);
			for (size_t r = 0; r < nb; r++) {
				double s = sqrt(logistic_w(t[r]) * inv);
				for (size_t q = 0; q < p; q++)
					zb[r * p + q] = s * d->x[(j0 + r) * p + q];
			}
			cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)p, (int)nb, 1.0, zb,
				    (int)p, 1.0, H, (int)p);
		}
	}
	for (size_t q = 0; q < p; q++)
		H[q * p + q] += 2.0 * P->lambda;
}

static int solve_logistic(const problem *P, double *theta)
{
	size_t p = P->p;
	double *buf = calloc(6 * p + p * p + BLOCK_ROWS * p + BLOCK_ROWS, sizeof(double));
	double *th, *g, *d, *tn, *tmp, *H, *zb, *t, *gsave;
	double f;
	int err = DP_ENUMERIC, it;

	if (buf == NULL)
		return dp_error_set(DP_ENOMEM, "optimum: out of memory");
	th = buf;
	g = th + p;
	d = g + p;
	tn = d + p;
	tmp = tn + p;
	gsave = tmp + p;
	H = gsave + p;
	zb = H + p * p;
	t = zb + BLOCK_ROWS * p;

	f = objective(P, th);
	for (it = 0; it < NEWTON_MAXIT; it++) {
		double gd = 0.0, alpha = 1.0, fn = f;
		lapack_int info;

		gradient(P, th, g, tmp);
		if (!isfinite(f) || !isfinite(norm_inf(g, p)))
			break;
		if (norm_inf(g, p) <= NEWTON_GTOL * fmax(1.0, fabs(f))) {
			err = 0;
			break;
		}
		logistic_hess(P, th, H, zb, t);
		for (size_t q = 0; q < p; q++)
			d[q] = -g[q];
		info = LAPACKE_dposv(LAPACK_ROW_MAJOR, 'U', (lapack_int)p, 1, H, (lapack_int)p, d, 1);
		if (info != 0)
			break;
		for (size_t q = 0; q < p; q++)
			gd += g[q] * d[q];
		if (-gd / 2.0 <= NEWTON_DECR * fmax(1.0, fabs(f))) {
			err = 0;
			break;
		}
		/* Below the resolution of f (a few ulps) Armijo cannot see the
		 * decrease any more and the line search would shrink the step to
		 * nothing, stalling with |grad| ~ 1e-11.  The quadratic model is
		 * exact to rounding here: take the full Newton step and stop. */
		if (-gd / 2.0 <= NEWTON_FRES * fmax(1.0, fabs(f))) {
			for (size_t q = 0; q < p; q++)
				th[q] += d[q];
			err = 0;
			break;
		}
		for (int ls = 0; ls < 60; ls++) {
			for (size_t q = 0; q < p; q++)
				tn[q] = th[q] + alpha * d[q];
			fn = objective(P, tn);
			if (fn <= f + 1e-4 * alpha * gd)
				break;
			alpha *= 0.5;
		}
		if (!(fn <= f)) {
			/* no decrease at all: we are at the resolution of f */
			err = 0;
			break;
		}
		memcpy(th, tn, p * sizeof(double));
		f = fn;
	}
	if (err != 0) {
		free(buf);
		return dp_error_set(DP_ENUMERIC, "optimum: Newton did not converge for logistic "
				    "regression (%d iterations)", it);
	}
	if (norm_inf(th, p) > P->tmax) {
		double lmax;
		oracle o = { .P = P, .tmp = tmp };

		gram(P, H, NULL, NULL);
		err = lambda_max(H, p, &lmax);
		if (err == 0)
			err = fista(&o, lmax / 4.0 + 2.0 * P->lambda, th);
		if (err != 0) {
			free(buf);
			return err;
		}
	}
	memcpy(theta, th, p * sizeof(double));
	free(buf);
	return 0;
}

/* ---- svm: dual coordinate descent with the box in the dual ----------------
 *
 * Dual of min lambda ||theta||^2 + I_box(theta) + (1/n) sum max(0, 1 - y x.theta):
 *   max over alpha in [0,1]^n of  (1/n) sum alpha_j - sum_q phi(v_q),
 *   v = (1/n) sum alpha_j y_j x_j,  theta(v) = clamp(v / (2 lambda)),
 *   phi(v) = v^2 / (4 lambda) if |v| <= 2 lambda M, else M |v| - lambda M^2.
 * Coordinate j: maximise over delta in [-alpha_j, 1 - alpha_j]; the
 * derivative is r(delta) / n with r(delta) = 1 - y_j x_j.theta(v + delta u),
 * u = y_j x_j / n, non-increasing and piecewise linear in delta. */

typedef struct svm_state {
	size_t n, p;
	const double **x;
	const double *y;
	double *alpha, *v;
	double lam2, vmax;  /* 2 lambda, 2 lambda M */
	double tmax;
} svm_state;

static double svm_theta(const svm_state *S, double vq)
{
	return clamp(vq / S->lam2, S->tmax);
}

/* r at v + delta u for row j */
static double svm_r(const svm_state *S, size_t j, double delta)
{
	const double *x = S->x[j];
	double yj = S->y[j], s = 0.0, c = delta * yj / (double)S->n;

	for (size_t q = 0; q < S->p; q++)
		s += x[q] * svm_theta(S, S->v[q] + c * x[q]);
	return 1.0 - yj * s;
}

static int cmp_abs(const void *a, const void *b)
{
	double x = fabs(*(const double *)a), y = fabs(*(const double *)b);

	return (x > y) - (x < y);
}

/* The exact coordinate step for row j given r0 = r(0) (bp: scratch of 2p
 * doubles). */
static double svm_step(const svm_state *S, size_t j, double r0, double *bp)
{
	const double *x = S->x[j];
	double yj = S->y[j], aj = S->alpha[j], n = (double)S->n;
	double end, dir, curv = 0.0, delta;
	size_t nb = 0;

	if (r0 > 0.0 && aj < 1.0) {
		dir = 1.0;
		end = 1.0 - aj;
	} else if (r0 < 0.0 && aj > 0.0) {
		dir = -1.0;
		end = -aj;
	} else {
		return 0.0;
	}
	/* Breakpoints strictly inside (0, end]: where a coordinate of
	 * v + delta u reaches +-2 lambda M. */
	for (size_t q = 0; q < S->p; q++) {
		double uq = yj * x[q] / n;

		if (uq == 0.0)
			continue;
		for (int s = -1; s <= 1; s += 2) {
			double b = ((double)s * S->vmax - S->v[q]) / uq;
			if (b * dir > 0.0 && b * dir < end * dir)
				bp[nb++] = b;
		}
		/* curvature of r on the first piece: coordinates not clamped
		 * just after delta = 0 in direction dir */
		if (fabs(S->v[q]) < S->vmax || (S->v[q] == S->vmax && uq * dir < 0.0) ||
		    (S->v[q] == -S->vmax && uq * dir > 0.0))
			curv += x[q] * x[q];
	}
	/* fast path: the Newton step on the first piece stays in it */
	if (curv > 0.0) {
		delta = r0 * S->lam2 * n / curv;
		if (delta * dir > end * dir)
			delta = end;
		int crosses = 0;
		for (size_t i = 0; i < nb; i++)
			if (bp[i] * dir < delta * dir)
				crosses = 1;
		if (!crosses)
			return delta;
	}
	/* walk the pieces */
	qsort(bp, nb, sizeof(double), cmp_abs);
	double prev = 0.0, rprev = r0;
	for (size_t i = 0; i <= nb; i++) {
		double b = i < nb ? bp[i] : end;
		double rb = svm_r(S, j, b);

		if (rb * dir <= 0.0) {
			if (rprev == rb)
				return b;
			return prev + rprev * (b - prev) / (rprev - rb);
		}
		prev = b;
		rprev = rb;
	}
	return end;
}

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* v = (1/n) sum alpha_j y_j x_j from scratch (no drift) */
static void svm_v(const svm_state *S)
{
	memset(S->v, 0, S->p * sizeof(double));
	for (size_t j = 0; j < S->n; j++) {
		double c = S->alpha[j] * S->y[j] / (double)S->n;
		if (c != 0.0)
			cblas_daxpy((int)S->p, c, S->x[j], 1, S->v, 1);
	}
}

/* Duality gap at alpha (v recomputed from scratch, no drift); theta(v)
 * into th, the primal value into *primal. */
static double svm_gap(const problem *P, const svm_state *S, double *th, double *primal)
{
	double dual = 0.0;

	svm_v(S);
	for (size_t j = 0; j < S->n; j++)
		dual += S->alpha[j];
	dual /= (double)S->n;
	for (size_t q = 0; q < S->p; q++) {
		double vq = S->v[q];

		th[q] = svm_theta(S, vq);
		if (fabs(vq) <= S->vmax)
			dual -= vq * vq / (2.0 * S->lam2);
		else
			dual -= P->tmax * fabs(vq) - P->lambda * P->tmax * P->tmax;
	}
	*primal = objective(P, th);
	return *primal - dual;
}

static int solve_svm(const problem *P, double *theta)
{
	size_t n = P->n, p = P->p, k = 0;
	svm_state S = { .n = n, .p = p, .lam2 = 2.0 * P->lambda, .tmax = P->tmax };
	size_t *perm = malloc(n * sizeof(size_t));
	double *bp = malloc(2 * p * sizeof(double)), *th = malloc(p * sizeof(double));
	double *yy = malloc(n * sizeof(double));
	uint64_t rs = 0x9e3779b97f4a7c15ULL;
	int err = DP_ENUMERIC, epoch;
	double gap = INFINITY, primal = NAN;

	S.x = malloc(n * sizeof(*S.x));
	S.alpha = calloc(n, sizeof(double));
	S.v = calloc(p, sizeof(double));
	if (perm == NULL || bp == NULL || th == NULL || S.x == NULL ||
	    S.alpha == NULL || S.v == NULL || yy == NULL) {
		err = dp_error_set(DP_ENOMEM, "optimum: out of memory");
		goto out;
	}
	S.vmax = isinf(P->tmax) ? INFINITY : S.lam2 * P->tmax;
	for (size_t i = 0; i < P->nds; i++)
		for (size_t j = 0; j < P->ds[i]->n; j++, k++) {
			S.x[k] = P->ds[i]->x + j * p;
			yy[k] = P->ds[i]->y[j];
			perm[k] = k;
		}
	S.y = yy;
	/* Shrinking (Hsieh et al. section 3.2): G_j = -r_j is the gradient of
	 * the (minimised) dual; a row whose alpha sits at a bound with G_j
	 * pushing outward by more than last sweep's largest projected gradient
	 * leaves the active set.  When the projected gradients of the active
	 * rows span less than eps, all rows come back and the duality gap is
	 * checked; eps shrinks tenfold each time the gap is not yet small
	 * enough. */
	size_t nact = n;
	double pgmax_old = INFINITY, pgmin_old = -INFINITY, eps = 1e-3;

	/* the budget counts work, in full passes: sweeps over a few active
	 * rows are cheap and may be many */
	double work = 0.0;

	for (epoch = 0; work < DCD_MAXEPOCH && epoch < DCD_MAXSWEEP; epoch++) {
		double pgmax = -INFINITY, pgmin = INFINITY;

		work += (double)nact / (double)n;

		for (size_t i = nact - 1; i > 0; i--) {
			size_t r = (size_t)(xorshift(&rs) % (i + 1)), tmpi = perm[i];
			perm[i] = perm[r];
			perm[r] = tmpi;
		}
		for (size_t i = 0; i < nact; i++) {
			size_t j = perm[i];
			double r0 = svm_r(&S, j, 0.0), G = -r0, pg = 0.0, delta, na, dd;

			if (S.alpha[j] == 0.0) {
				if (G > pgmax_old) {
					perm[i--] = perm[--nact];
					perm[nact] = j;
					continue;
				}
				if (G < 0.0)
					pg = G;
			} else if (S.alpha[j] == 1.0) {
				if (G < pgmin_old) {
					perm[i--] = perm[--nact];
					perm[nact] = j;
					continue;
				}
				if (G > 0.0)
					pg = G;
			} else {
				pg = G;
			}
			pgmax = fmax(pgmax, pg);
			pgmin = fmin(pgmin, pg);
			if (pg == 0.0)
				continue;
			delta = svm_step(&S, j, r0, bp);
			if (delta == 0.0)
				continue;
			na = S.alpha[j] + delta;
			na = na < 0.0 ? 0.0 : (na > 1.0 ? 1.0 : na);
			dd = na - S.alpha[j];
			S.alpha[j] = na;
			cblas_daxpy((int)p, dd * S.y[j] / (double)n, S.x[j], 1, S.v, 1);
		}
		if (pgmax - pgmin > eps && nact > 0) {
			pgmax_old = pgmax > 0.0 ? pgmax : INFINITY;
			pgmin_old = pgmin < 0.0 ? pgmin : -INFINITY;
			continue;
		}
		pgmax_old = INFINITY;
		pgmin_old = -INFINITY;
		if (nact < n) {
			/* the active rows are converged to eps: bring all back
			 * (no shrinking in the next sweep) */
			nact = n;
			continue;
		}
		/* a full sweep converged to eps: check the certificate */
		gap = svm_gap(P, &S, th, &primal);
		if (!isfinite(gap))
			break;
		if (gap <= DCD_GAP * primal) {
			err = 0;
			break;
		}
		eps = fmax(eps * 0.1, 1e-15);
	}
	if (err != 0) {
		if (err == DP_ENUMERIC)
			dp_error_set(DP_ENUMERIC, "optimum: svm dual coordinate descent did not reach "
				     "gap %g (gap %g, f %g after %d sweeps, %.0f passes)", DCD_GAP,
				     gap, primal, epoch, work);
		goto out;
	}
	memcpy(theta, th, p * sizeof(double));
out:
	free(perm);
	free(bp);
	free(th);
	free(S.x);
	free(S.alpha);
	free(S.v);
	free(yy);
	return err;
}

/* ---- entry point ------------------------------------------------------- */

int dp_optimum_solve(dp_model m, const dp_dataset *const *ds, size_t nds, double lambda,
	       double theta_max, double *theta_star, double *f_star)
{
	problem P = { .m = m, .ds = ds, .nds = nds, .lambda = lambda, .tmax = theta_max };
	double *th;
	int err;

	DP_REQUIRE(theta_star != NULL);
	if (ds == NULL || nds == 0)
		return dp_error_set(DP_EINVAL, "optimum: no data");
	P.p = ds[0]->p;
	for (size_t i = 0; i < nds; i++) {
		if (ds[i]->p != P.p || P.p == 0)
			return dp_error_set(DP_EINVAL, "optimum: %s has %zu columns, expected %zu",
					    ds[i]->source != NULL ? ds[i]->source : "(arrays)",
					    ds[i]->p, P.p);
		P.n += ds[i]->n;
	}
	if (P.n == 0)
		return dp_error_set(DP_EINVAL, "optimum: no rows");
	if (!(lambda >= 0.0) || !isfinite(lambda))
		return dp_error_set(DP_EINVAL, "optimum: lambda %g must be finite and >= 0", lambda);
	if (m != DP_MODEL_LINEAR && !(lambda > 0.0))
		return dp_error_set(DP_EINVAL, "optimum: %s needs lambda > 0 (strong convexity)",
				    dp_model_name(m));
	if (!(theta_max > 0.0))
		return dp_error_set(DP_EINVAL, "optimum: theta_max %g must be > 0", theta_max);
	for (size_t i = 0; i < nds; i++) {
		err = dp_model_check_data(m, ds[i]);
		if (err != 0)
			return err;
		for (size_t j = 0; j < ds[i]->n; j++)
			if (!isfinite(ds[i]->row_l1[j]) || !isfinite(ds[i]->y[j]))
				return dp_error_set(DP_ENUMERIC, "optimum: %s: row %zu is not finite",
						    ds[i]->source != NULL ? ds[i]->source : "(arrays)",
						    j + 1);
	}

	th = calloc(P.p, sizeof(double));
	if (th == NULL)
		return dp_error_set(DP_ENOMEM, "optimum: out of memory");
	switch (m) {
	case DP_MODEL_LINEAR:
		err = solve_linear(&P, th);
		break;
	case DP_MODEL_LOGISTIC:
		err = solve_logistic(&P, th);
		break;
	case DP_MODEL_SVM:
		err = solve_svm(&P, th);
		break;
	default:
		err = dp_error_set(DP_EINVAL, "optimum: unknown model %d", (int)m);
	}
	if (err == 0) {
		double f = objective(&P, th);

		if (!isfinite(f)) {
			err = dp_error_set(DP_ENUMERIC, "optimum: f(theta*) is not finite");
		} else {
			memcpy(theta_star, th, P.p * sizeof(double));
			if (f_star != NULL)
				*f_star = f;
		}
	}
	free(th);
	return err;
}

int dp_optimum_compare(dp_model m, const double *theta, size_t p, const dp_dataset *const *ds,
		       size_t nds, double lambda, double theta_max, double *f, double *f_star)
{
	double *theta_star, fv, fs;
	int rc;

	DP_REQUIRE(theta != NULL && ds != NULL && nds > 0 && f != NULL && f_star != NULL);
	if (ds[0]->p != p)
		return dp_error_set(DP_EFORMAT, "%s has %zu features but the model has %zu "
				    "coefficients", ds[0]->source, ds[0]->p, p);
	theta_star = calloc(p ? p : 1, sizeof(double));
	if (theta_star == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	fv = dp_model_fitness(m, ds, nds, lambda, theta);
	rc = dp_optimum_solve(m, ds, nds, lambda, theta_max, theta_star, &fs);
	free(theta_star);
	if (rc != 0) {
		char why[512];

		snprintf(why, sizeof(why), "%s", dp_error_detail(rc));
		return dp_error_set(rc, "computing the non-private optimum: %s", why);
	}
	*f = fv;
	*f_star = fs;
	return 0;
}
