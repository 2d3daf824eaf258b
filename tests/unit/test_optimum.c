/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for tools/lib/optimum.c: theta*, f against f*, and psi.
 *
 * Independent expectations: a 2x2 ridge problem solved by hand (checked
 * once with numpy.linalg.solve: [1.02222222, 1.42222222] for lambda = 0.5
 * and [4/3, 7/3] for lambda = 0), normal equations solved here by Gaussian
 * elimination in long double (not LAPACK), the box-constrained ridge
 * problem solved by enumerating all 3^p active sets, 1-D hinge problems
 * solved by hand, and first-order optimality / perturbation checks with
 * gradients and fitness recomputed here in long double.  No randomness
 * beyond fixed seeds; nothing statistical. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/dataset.h"
#include "common/core/error.h"
#include "common/core/model.h"
#include "tools/lib/optimum.h"
#include "tools/lib/simrng.h"

#define PMAX 8

static double rnd_unif(dp_simrng *r)
{
	return (double)(dp_simrng_next(r) >> 11) * 0x1p-53;
}

static double rnd_normal(dp_simrng *r)
{
	double u = rnd_unif(r) + 0x1p-54, v = rnd_unif(r);
	return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

/* f in long double, straight from docs/design.md §2. */
static long double fit_ld(dp_model m, const dp_dataset *const *ds, size_t nds, double lambda,
			  const double *theta)
{
	size_t p = ds[0]->p, n = 0;
	long double loss = 0, reg = 0;

	for (size_t i = 0; i < nds; i++) {
		for (size_t j = 0; j < ds[i]->n; j++) {
			long double t = 0, y = ds[i]->y[j];
			for (size_t q = 0; q < p; q++)
				t += (long double)ds[i]->x[j * p + q] * theta[q];
			if (m == DP_MODEL_LINEAR)
				loss += (y - t) * (y - t);
			else if (m == DP_MODEL_LOGISTIC)
				loss += y * t > 0 ? log1pl(expl(-y * t)) : -y * t + log1pl(expl(y * t));
			else
				loss += 1 - y * t > 0 ? 1 - y * t : 0;
		}
		n += ds[i]->n;
	}
	for (size_t q = 0; q < p; q++)
		reg += (long double)theta[q] * theta[q];
	return lambda * reg + loss / n;
}

/* gradient of f for the smooth models, long double */
static void grad_ld(dp_model m, const dp_dataset *const *ds, size_t nds, double lambda,
		    const double *theta, long double *g)
{
	size_t p = ds[0]->p, n = 0;

	for (size_t q = 0; q < p; q++)
		g[q] = 0;
	for (size_t i = 0; i < nds; i++) {
		for (size_t j = 0; j < ds[i]->n; j++) {
			long double t = 0, y = ds[i]->y[j], c;
			for (size_t q = 0; q < p; q++)
				t += (long double)ds[i]->x[j * p + q] * theta[q];
			if (m == DP_MODEL_LINEAR)
				c = 2 * (t - y);
			else
				c = -y / (1 + expl(y * t));
			for (size_t q = 0; q < p; q++)
				g[q] += c * ds[i]->x[j * p + q];
		}
		n += ds[i]->n;
	}
	for (size_t q = 0; q < p; q++)
		g[q] = g[q] / n + 2 * (long double)lambda * theta[q];
}

/* Solve A x = b (k x k, row-major, long double) by Gaussian elimination
 * with partial pivoting; A and b are destroyed.  Returns 0 or -1. */
static int gauss(long double *A, long double *b, size_t k)
{
	for (size_t c = 0; c < k; c++) {
		size_t piv = c;
		for (size_t r = c + 1; r < k; r++)
			if (fabsl(A[r * k + c]) > fabsl(A[piv * k + c]))
				piv = r;
		if (fabsl(A[piv * k + c]) < 1e-300L)
			return -1;
		for (size_t j = 0; j < k; j++) {
			long double t = A[c * k + j];
			A[c * k + j] = A[piv * k + j];
			A[piv * k + j] = t;
		}
		long double t = b[c];
		b[c] = b[piv];
		b[piv] = t;
		for (size_t r = c + 1; r < k; r++) {
			long double f = A[r * k + c] / A[c * k + c];
			for (size_t j = c; j < k; j++)
				A[r * k + j] -= f * A[c * k + j];
			b[r] -= f * b[c];
		}
	}
	for (size_t c = k; c-- > 0;) {
		long double s = b[c];
		for (size_t j = c + 1; j < k; j++)
			s -= A[c * k + j] * b[j];
		b[c] = s / A[c * k + c];
	}
	return 0;
}

/* A = X^T X / n + lambda I, b = X^T y / n over all datasets, long double */
static void normal_eq(const dp_dataset *const *ds, size_t nds, double lambda, long double *A,
		      long double *b)
{
	size_t p = ds[0]->p, n = 0;

	memset(A, 0, p * p * sizeof(long double));
	memset(b, 0, p * sizeof(long double));
	for (size_t i = 0; i < nds; i++) {
		for (size_t j = 0; j < ds[i]->n; j++) {
			const double *x = ds[i]->x + j * p;
			for (size_t r = 0; r < p; r++) {
				for (size_t c = 0; c < p; c++)
					A[r * p + c] += (long double)x[r] * x[c];
				b[r] += (long double)x[r] * ds[i]->y[j];
			}
		}
		n += ds[i]->n;
	}
	for (size_t r = 0; r < p; r++) {
		for (size_t c = 0; c < p; c++)
			A[r * p + c] /= n;
		A[r * p + r] += lambda;
		b[r] /= n;
	}
}

static void make_ds(dp_simrng *r, dp_dataset *ds, size_t n, size_t p, dp_model m,
		    const double *beta, double noise)
{
	double *x = malloc(n * p * sizeof(double)), *y = malloc(n * sizeof(double));

	assert_non_null(x);
	assert_non_null(y);
	for (size_t j = 0; j < n; j++) {
		double t = 0;
		for (size_t q = 0; q < p; q++) {
			/* last column a bias */
			x[j * p + q] = q + 1 == p ? 1.0 : rnd_normal(r);
			t += x[j * p + q] * beta[q];
		}
		t += noise * rnd_normal(r);
		y[j] = m == DP_MODEL_LINEAR ? t : (t >= 0 ? 1.0 : -1.0);
	}
	assert_int_equal(dp_dataset_from_arrays(ds, n, p, x, y, NULL), 0);
	free(x);
	free(y);
}

/* ---- linear ---- */

static void test_linear_by_hand(void **state)
{
	double x[6] = { 1, 0, 0, 1, 1, 1 }, y[3] = { 1, 2, 4 }, th[2], f;
	dp_dataset ds;
	const dp_dataset *d[1] = { &ds };

	(void)state;
	assert_int_equal(dp_dataset_from_arrays(&ds, 3, 2, x, y, NULL), 0);
	/* (X^T X/3 + I/2) theta = X^T y / 3: theta = (46/45, 64/45) */
	assert_int_equal(dp_optimum_solve(DP_MODEL_LINEAR, d, 1, 0.5, INFINITY, th, &f), 0);
	assert_float_equal(th[0], 46.0 / 45, 1e-14);
	assert_float_equal(th[1], 64.0 / 45, 1e-14);
	/* f = 0.5 |theta|^2 + ((1 - 46/45)^2 + (2 - 64/45)^2 + (4 - 110/45)^2) / 3 */
	double fe = 0.5 * (46.0 * 46 + 64.0 * 64) / (45.0 * 45) +
		    (pow(1 - 46.0 / 45, 2) + pow(2 - 64.0 / 45, 2) + pow(4 - 110.0 / 45, 2)) / 3;
	assert_float_equal(f, fe, 1e-14);
	/* lambda = 0, X^T X nonsingular: least squares (4/3, 7/3) */
	assert_int_equal(dp_optimum_solve(DP_MODEL_LINEAR, d, 1, 0.0, INFINITY, th, &f), 0);
	assert_float_equal(th[0], 4.0 / 3, 1e-14);
	assert_float_equal(th[1], 7.0 / 3, 1e-14);
	dp_dataset_free(&ds);
}

static void test_linear_vs_gauss(void **state)
{
	dp_simrng r;
	const size_t p = 6;
	double beta[6] = { 1.5, -2, 0.5, 0, 3, 0.7 }, th[6], f;
	long double A[36], b[6];
	dp_dataset a, c;

	(void)state;
	dp_simrng_seed(&r, 1);
	make_ds(&r, &a, 700, p, DP_MODEL_LINEAR, beta, 0.5);
	make_ds(&r, &c, 301, p, DP_MODEL_LINEAR, beta, 0.5);
	const dp_dataset *d[2] = { &a, &c };
	for (int il = 0; il < 3; il++) {
		double lambda = il == 0 ? 0.0 : (il == 1 ? 1e-3 : 0.7);

		assert_int_equal(dp_optimum_solve(DP_MODEL_LINEAR, d, 2, lambda, INFINITY, th, &f), 0);
		normal_eq(d, 2, lambda, A, b);
		assert_int_equal(gauss(A, b, p), 0);
		for (size_t q = 0; q < p; q++)
			assert_float_equal(th[q], (double)b[q], 1e-11 * (1 + fabsl(b[q])));
		assert_float_equal(f, (double)fit_ld(DP_MODEL_LINEAR, d, 2, lambda, th), 1e-13);
	}
	/* a box that is not active changes nothing */
	double th2[6];
	assert_int_equal(dp_optimum_solve(DP_MODEL_LINEAR, d, 2, 0.1, 100.0, th2, &f), 0);
	assert_int_equal(dp_optimum_solve(DP_MODEL_LINEAR, d, 2, 0.1, INFINITY, th, &f), 0);
	for (size_t q = 0; q < p; q++)
		assert_float_equal(th[q], th2[q], 0);
	dp_dataset_free(&a);
	dp_dataset_free(&c);
}

static void test_linear_singular(void **state)
{
	/* second column = 2 x first: X^T X singular */
	double x[8] = { 1, 2, 2, 4, -1, -2, 3, 6 }, y[4] = { 1, 2, 3, 4 }, th[2] = { 5, 6 }, f = 7;
	dp_dataset ds;
	const dp_dataset *d[1] = { &ds };

	(void)state;
	assert_int_equal(dp_dataset_from_arrays(&ds, 4, 2, x, y, NULL), 0);
	assert_int_equal(dp_optimum_solve(DP_MODEL_LINEAR, d, 1, 0.0, INFINITY, th, &f), DP_ENUMERIC);
	assert_float_equal(th[0], 5, 0);
	assert_float_equal(th[1], 6, 0);
	assert_float_equal(f, 7, 0);
	/* ridge makes it well posed */
	assert_int_equal(dp_optimum_solve(DP_MODEL_LINEAR, d, 1, 0.1, INFINITY, th, &f), 0);
	dp_dataset_free(&ds);
}

/* Box-constrained ridge by enumeration: for every assignment of each
 * coordinate to {free, +M, -M}, solve the free part of the normal
 * equations, keep feasible candidates, take the one with least f. */
static void box_ridge_enum(const dp_dataset *const *ds, size_t nds, double lambda, double M,
			   double *best)
{
	size_t p = ds[0]->p, combos = 1;
	long double A[PMAX * PMAX], b[PMAX], Af[PMAX * PMAX], bf[PMAX], bestf = INFINITY;
	double th[PMAX];

	normal_eq(ds, nds, lambda, A, b);
	for (size_t q = 0; q < p; q++)
		combos *= 3;
	for (size_t code = 0; code < combos; code++) {
		int st[PMAX];
		size_t c = code, fr[PMAX], nf = 0;

		for (size_t q = 0; q < p; q++) {
			st[q] = (int)(c % 3);   /* 0 free, 1 +M, 2 -M */
			c /= 3;
			if (st[q] == 0)
				fr[nf++] = q;
			else
				th[q] = st[q] == 1 ? M : -M;
		}
		for (size_t i = 0; i < nf; i++) {
			bf[i] = b[fr[i]];
			for (size_t q = 0; q < p; q++)
				if (st[q] != 0)
					bf[i] -= A[fr[i] * p + q] * th[q];
			for (size_t k = 0; k < nf; k++)
				Af[i * nf + k] = A[fr[i] * p + fr[k]];
		}
		if (nf > 0 && gauss(Af, bf, nf) != 0)
			continue;
		int ok = 1;
		for (size_t i = 0; i < nf; i++) {
			if (fabsl(bf[i]) > M)
				ok = 0;
			th[fr[i]] = (double)bf[i];
		}
		if (!ok)
			continue;
		long double f = fit_ld(DP_MODEL_LINEAR, ds, nds, lambda, th);
		if (f < bestf) {
			bestf = f;
			memcpy(best, th, p * sizeof(double));
		}
	}
}

/* KKT of min f over the box: free coordinates have zero gradient, a
 * coordinate at +M has g <= 0, at -M g >= 0.  Returns active count. */
static int check_box_kkt(const double *th, const long double *g, size_t p, double M, double tol)
{
	int active = 0;

	for (size_t q = 0; q < p; q++) {
		assert_true(fabs(th[q]) <= M);
		if (th[q] == M) {
			assert_true(g[q] <= tol);
			active++;
		} else if (th[q] == -M) {
			assert_true(g[q] >= -tol);
			active++;
		} else {
			assert_true(fabsl(g[q]) <= tol);
		}
	}
	return active;
}

static void test_linear_box(void **state)
{
	dp_simrng r;
	const size_t p = 4;
	double beta[4] = { 3, -2.5, 0.3, 1.2 }, th[4], best[4], f;
	long double g[4];
	dp_dataset a;

	(void)state;
	dp_simrng_seed(&r, 2);
	make_ds(&r, &a, 500, p, DP_MODEL_LINEAR, beta, 0.3);
	const dp_dataset *d[1] = { &a };
	for (int il = 0; il < 2; il++) {
		double lambda = il == 0 ? 0.0 : 0.05, M = 1.0;

		assert_int_equal(dp_optimum_solve(DP_MODEL_LINEAR, d, 1, lambda, M, th, &f), 0);
		grad_ld(DP_MODEL_LINEAR, d, 1, lambda, th, g);
		assert_true(check_box_kkt(th, g, p, M, 1e-9) >= 2);
		box_ridge_enum(d, 1, lambda, M, best);
		for (size_t q = 0; q < p; q++)
			assert_float_equal(th[q], best[q], 1e-9);
	}
	dp_dataset_free(&a);
}

/* ---- logistic ---- */

static void test_logistic_first_order(void **state)
{
	dp_simrng r;
	const size_t p = 5;
	double beta[5] = { 1, -1, 0.5, 2, 0.3 }, th[5], f;
	long double g[5];
	dp_dataset a, b;

	(void)state;
	dp_simrng_seed(&r, 3);
	make_ds(&r, &a, 400, p, DP_MODEL_LOGISTIC, beta, 1.0);
	make_ds(&r, &b, 250, p, DP_MODEL_LOGISTIC, beta, 1.0);
	const dp_dataset *d[2] = { &a, &b };
	for (int il = 0; il < 2; il++) {
		double lambda = il == 0 ? 1e-4 : 0.1;

		assert_int_equal(dp_optimum_solve(DP_MODEL_LOGISTIC, d, 2, lambda, INFINITY, th, &f), 0);
		grad_ld(DP_MODEL_LOGISTIC, d, 2, lambda, th, g);
		for (size_t q = 0; q < p; q++)
			assert_true(fabsl(g[q]) <= 1e-10);
		long double f0 = fit_ld(DP_MODEL_LOGISTIC, d, 2, lambda, th);
		assert_float_equal(f, (double)f0, 1e-13);
		/* no better point nearby or far */
		for (size_t q = 0; q < p; q++) {
			for (int s = -1; s <= 1; s += 2) {
				double t2[5];
				memcpy(t2, th, sizeof(t2));
				t2[q] += s * 1e-3;
				assert_true(fit_ld(DP_MODEL_LOGISTIC, d, 2, lambda, t2) >= f0);
			}
		}
		for (int k = 0; k < 20; k++) {
			double t2[5];
			for (size_t q = 0; q < p; q++)
				t2[q] = th[q] + rnd_normal(&r);
			assert_true(fit_ld(DP_MODEL_LOGISTIC, d, 2, lambda, t2) > f0);
		}
	}
	dp_dataset_free(&a);
	dp_dataset_free(&b);
}

static void test_logistic_box(void **state)
{
	dp_simrng r;
	const size_t p = 4;
	double beta[4] = { 4, -3, 0.2, 0.5 }, th[4], th_free[4], f;
	long double g[4];
	dp_dataset a;

	(void)state;
	dp_simrng_seed(&r, 4);
	make_ds(&r, &a, 600, p, DP_MODEL_LOGISTIC, beta, 0.5);
	const dp_dataset *d[1] = { &a };
	double lambda = 1e-3, M = 0.8;
	assert_int_equal(dp_optimum_solve(DP_MODEL_LOGISTIC, d, 1, lambda, INFINITY, th_free, &f), 0);
	assert_true(fabs(th_free[0]) > M);       /* the box will bind */
	assert_int_equal(dp_optimum_solve(DP_MODEL_LOGISTIC, d, 1, lambda, M, th, &f), 0);
	grad_ld(DP_MODEL_LOGISTIC, d, 1, lambda, th, g);
	assert_true(check_box_kkt(th, g, p, M, 1e-9) >= 1);
	long double f0 = fit_ld(DP_MODEL_LOGISTIC, d, 1, lambda, th);
	for (int k = 0; k < 50; k++) {
		double t2[4];
		for (size_t q = 0; q < p; q++)
			t2[q] = fmax(-M, fmin(M, th[q] + 0.3 * rnd_normal(&r)));
		assert_true(fit_ld(DP_MODEL_LOGISTIC, d, 1, lambda, t2) >= f0);
	}
	dp_dataset_free(&a);
}

/* ---- svm ---- */

/* x = +1 with y = +1 and x = -1 with y = -1: f(theta) = lambda theta^2 +
 * max(0, 1 - theta).  Minimiser 1/(2 lambda) if lambda > 1/2, else the
 * kink at 1; in a box [-M, M] with M < 1: M (f decreasing below 1). */
static void test_svm_by_hand(void **state)
{
	double x[2] = { 1, -1 }, y[2] = { 1, -1 }, th, f;
	dp_dataset ds;
	const dp_dataset *d[1] = { &ds };

	(void)state;
	assert_int_equal(dp_dataset_from_arrays(&ds, 2, 1, x, y, NULL), 0);
	assert_int_equal(dp_optimum_solve(DP_MODEL_SVM, d, 1, 1.0, INFINITY, &th, &f), 0);
	assert_float_equal(th, 0.5, 1e-9);
	assert_float_equal(f, 0.75, 1e-10);
	assert_int_equal(dp_optimum_solve(DP_MODEL_SVM, d, 1, 0.1, INFINITY, &th, &f), 0);
	assert_float_equal(th, 1.0, 1e-9);
	assert_float_equal(f, 0.1, 1e-10);
	assert_int_equal(dp_optimum_solve(DP_MODEL_SVM, d, 1, 0.1, 0.3, &th, &f), 0);
	assert_float_equal(th, 0.3, 0);
	assert_float_equal(f, 0.1 * 0.09 + 0.7, 1e-10);
	dp_dataset_free(&ds);
}

static void svm_perturbation_checks(dp_simrng *r, const dp_dataset *const *d, size_t nds,
				    double lambda, double M, const double *th, size_t p)
{
	long double f0 = fit_ld(DP_MODEL_SVM, d, nds, lambda, th);
	/* f(theta*) is within the duality-gap tolerance 1e-10 f of the
	 * optimum, so a neighbour may undercut it by that much, not more */
	long double slack = 2e-10L * f0;

	for (size_t q = 0; q < p; q++) {
		for (int s = -1; s <= 1; s += 2) {
			for (int e = 2; e <= 6; e += 2) {
				double t2[PMAX];
				memcpy(t2, th, p * sizeof(double));
				t2[q] = fmax(-M, fmin(M, t2[q] + s * pow(10, -e)));
				assert_true(fit_ld(DP_MODEL_SVM, d, nds, lambda, t2) >= f0 - slack);
			}
		}
	}
	for (int k = 0; k < 100; k++) {
		double t2[PMAX], sc = k < 50 ? 1e-3 : 1.0;
		for (size_t q = 0; q < p; q++)
			t2[q] = fmax(-M, fmin(M, th[q] + sc * rnd_normal(r)));
		assert_true(fit_ld(DP_MODEL_SVM, d, nds, lambda, t2) >= f0 - slack);
	}
}

static void test_svm_optimality(void **state)
{
	dp_simrng r;
	const size_t p = 5;
	double beta[5] = { 1, -2, 0.5, 1, -0.2 }, th[5], f;
	dp_dataset a, b;

	(void)state;
	dp_simrng_seed(&r, 5);
	make_ds(&r, &a, 300, p, DP_MODEL_SVM, beta, 0.8);
	make_ds(&r, &b, 200, p, DP_MODEL_SVM, beta, 0.8);
	const dp_dataset *d[2] = { &a, &b };
	for (int il = 0; il < 2; il++) {
		double lambda = il == 0 ? 1e-3 : 0.05;

		assert_int_equal(dp_optimum_solve(DP_MODEL_SVM, d, 2, lambda, INFINITY, th, &f), 0);
		assert_float_equal(f, (double)fit_ld(DP_MODEL_SVM, d, 2, lambda, th), 1e-13);
		svm_perturbation_checks(&r, d, 2, lambda, INFINITY, th, p);
	}
	dp_dataset_free(&a);
	dp_dataset_free(&b);
}

static void test_svm_box(void **state)
{
	dp_simrng r;
	const size_t p = 4;
	double beta[4] = { 3, -2, 0.5, 0.1 }, th[4], th_free[4], f;
	dp_dataset a;

	(void)state;
	dp_simrng_seed(&r, 6);
	make_ds(&r, &a, 400, p, DP_MODEL_SVM, beta, 0.3);
	const dp_dataset *d[1] = { &a };
	double lambda = 1e-3, M = 0.5;
	assert_int_equal(dp_optimum_solve(DP_MODEL_SVM, d, 1, lambda, INFINITY, th_free, &f), 0);
	assert_true(fabs(th_free[0]) > M);
	assert_int_equal(dp_optimum_solve(DP_MODEL_SVM, d, 1, lambda, M, th, &f), 0);
	int active = 0;
	for (size_t q = 0; q < p; q++) {
		assert_true(fabs(th[q]) <= M);
		active += fabs(th[q]) == M;
	}
	assert_true(active >= 1);
	svm_perturbation_checks(&r, d, 1, lambda, M, th, p);
	dp_dataset_free(&a);
}

/* ---- errors, psi ---- */

static void test_errors(void **state)
{
	double x[4] = { 1, 2, 3, 4 }, y[2] = { 1, 0 }, th[2] = { 5, 6 }, f = 7;
	double x3[3] = { 1, 2, 3 };
	dp_dataset ds, ds3;
	const dp_dataset *d[1] = { &ds };

	(void)state;
	assert_int_equal(dp_dataset_from_arrays(&ds, 2, 2, x, y, NULL), 0);
	assert_int_equal(dp_dataset_from_arrays(&ds3, 1, 3, x3, y, NULL), 0);
	const dp_dataset *mix[2] = { &ds, &ds3 };
	assert_int_equal(dp_optimum_solve(DP_MODEL_LINEAR, d, 0, 0.1, 1, th, &f), DP_EINVAL);
	assert_int_equal(dp_optimum_solve(DP_MODEL_LINEAR, d, 1, -0.1, 1, th, &f), DP_EINVAL);
	assert_int_equal(dp_optimum_solve(DP_MODEL_LINEAR, d, 1, NAN, 1, th, &f), DP_EINVAL);
	assert_int_equal(dp_optimum_solve(DP_MODEL_LINEAR, d, 1, 0.1, 0, th, &f), DP_EINVAL);
	assert_int_equal(dp_optimum_solve(DP_MODEL_LINEAR, d, 1, 0.1, -1, th, &f), DP_EINVAL);
	assert_int_equal(dp_optimum_solve(DP_MODEL_LINEAR, d, 1, 0.1, NAN, th, &f), DP_EINVAL);
	assert_int_equal(dp_optimum_solve(DP_MODEL_LINEAR, mix, 2, 0.1, 1, th, &f), DP_EINVAL);
	/* classification needs lambda > 0 and labels in {-1, +1} */
	assert_int_equal(dp_optimum_solve(DP_MODEL_LOGISTIC, d, 1, 0.0, 1, th, &f), DP_EINVAL);
	assert_int_equal(dp_optimum_solve(DP_MODEL_SVM, d, 1, 0.0, 1, th, &f), DP_EINVAL);
	assert_int_equal(dp_optimum_solve(DP_MODEL_SVM, d, 1, 0.1, 1, th, &f), DP_EFORMAT);
	assert_float_equal(th[0], 5, 0);
	assert_float_equal(th[1], 6, 0);
	assert_float_equal(f, 7, 0);
	dp_dataset_free(&ds);
	dp_dataset_free(&ds3);
}

/* dp_optimum_compare: f of a given model and f* of the optimum on the same
 * data (the 2x2 problem of test_linear_by_hand). */
static void test_compare(void **state)
{
	double x[6] = { 1, 0, 0, 1, 1, 1 }, y[3] = { 1, 2, 4 }, one[3] = { 1, 1, 1 };
	double f = -1, fs = -1, th[2], fe;
	dp_dataset ds;
	const dp_dataset *d[1] = { &ds };

	(void)state;
	assert_int_equal(dp_dataset_from_arrays(&ds, 3, 2, x, y, NULL), 0);
	assert_int_equal(dp_optimum_compare(DP_MODEL_LINEAR, one, 2, d, 1, 0.5, INFINITY, &f, &fs),
			 0);
	/* f(1, 1) = 0.5 * 2 + (0 + 1 + 4) / 3 */
	assert_float_equal(f, 1.0 + 5.0 / 3, 1e-14);
	assert_int_equal(dp_optimum_solve(DP_MODEL_LINEAR, d, 1, 0.5, INFINITY, th, &fe), 0);
	assert_true(fs == fe);
	assert_true(f > fs);

	/* The model's coefficients must be the data's features. */
	f = fs = -1;
	assert_int_equal(dp_optimum_compare(DP_MODEL_LINEAR, one, 3, d, 1, 0.5, INFINITY, &f, &fs),
			 DP_EFORMAT);
	assert_string_equal(dp_error_detail(DP_EFORMAT),
			    "(arrays) has 2 features but the model has 3 coefficients");
	/* The solver's errors come through, named as such. */
	assert_int_equal(dp_optimum_compare(DP_MODEL_LINEAR, one, 2, d, 1, -1, INFINITY, &f, &fs),
			 DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "computing the non-private optimum: "));
	assert_true(f == -1 && fs == -1);
	dp_dataset_free(&ds);
}

static void test_psi(void **state)
{
	(void)state;
	assert_float_equal(dp_model_psi(1.1, 1.0), 0.1, 1e-15);
	assert_float_equal(dp_model_psi(2.0, 2.0), 0.0, 0);
	assert_float_equal(dp_model_psi(3.0, 0.5), 5.0, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linear_by_hand),
		cmocka_unit_test(test_linear_vs_gauss),
		cmocka_unit_test(test_linear_singular),
		cmocka_unit_test(test_linear_box),
		cmocka_unit_test(test_logistic_first_order),
		cmocka_unit_test(test_logistic_box),
		cmocka_unit_test(test_svm_by_hand),
		cmocka_unit_test(test_svm_optimality),
		cmocka_unit_test(test_svm_box),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_compare),
		cmocka_unit_test(test_psi),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
