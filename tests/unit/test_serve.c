/* SPDX-License-Identifier: Apache-2.0 */
/* Served personal models (common/core/serve.h): the release is
 * dp_query_answer_mech at 0; the prior, the ridge refit and its fold
 * scores against closed forms solved here independently (2 x 2 systems by
 * Cramer's rule); tau = 0 is the local fit (dp_optimum_solve); a large tau
 * tends to the prior; the logistic fit is a stationary point; the choice
 * of tau is deterministic and picks the prior when the prior is the truth. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/dataset.h"
#include "common/core/error.h"
#include "common/core/query.h"
#include "common/core/serve.h"
#include "tools/lib/optimum.h"
#include "tools/lib/simrng.h"

/* Five rows, p = 2 (no bias). */
static const double X5[] = { 1, 0.5, -0.5, 2, 1.5, 1, 0.25, -1, 2, 0.75 };
static const double Y5[] = { 1, 2, 0.5, -1, 3 };
static const double YC5[] = { 1, -1, 1, -1, 1 };

static void load(dp_dataset *ds, const double *y)
{
	assert_int_equal(dp_dataset_from_arrays(ds, 5, 2, X5, y, NULL), 0);
}

/* Solve [a b; b d] t = (u, v). */
static void solve2(double a, double b, double d, double u, double v, double *t)
{
	double det = a * d - b * b;

	t[0] = (d * u - b * v) / det;
	t[1] = (a * v - b * u) / det;
}

/* The ridge refit over the rows r with r % K != skip (K 0: all): the
 * normal equations (X^T X + (n lambda + tau) I) t = X^T y + tau prior. */
static void ridge_ref(const double *y, size_t K, size_t skip, double lambda, double tau,
		      const double *prior, double *t)
{
	double a = 0, b = 0, d = 0, u = 0, v = 0, n = 0;

	for (size_t r = 0; r < 5; r++) {
		const double *x = X5 + 2 * r;

		if (K != 0 && r % K == skip)
			continue;
		a += x[0] * x[0];
		b += x[0] * x[1];
		d += x[1] * x[1];
		u += x[0] * y[r];
		v += x[1] * y[r];
		n++;
	}
	solve2(a + n * lambda + tau, b, d + n * lambda + tau, u + tau * prior[0],
	       v + tau * prior[1], t);
}

static void test_release_is_query_at_zero(void **state)
{
	dp_dataset ds;
	dp_simrng r1, r2;
	dp_bitsource b1, b2;
	const double zero[2] = { 0, 0 };
	double g1[2], g2[2];

	(void)state;
	load(&ds, Y5);
	for (int mech = 0; mech < 2; mech++) {
		dp_simrng_seed(&r1, 7);
		dp_simrng_seed(&r2, 7);
		b1 = dp_simrng_bitsource(&r1);
		b2 = dp_simrng_bitsource(&r2);
		assert_int_equal(dp_serve_release(DP_MODEL_LINEAR, &ds, 3.0, (dp_mech)mech, 0.5,
						  &b1, g1), 0);
		assert_int_equal(dp_query_answer_mech(DP_MODEL_LINEAR, &ds, zero, 3.0,
						      (dp_mech)mech, 0.5, &b2, g2, NULL), 0);
		assert_memory_equal(g1, g2, sizeof(g1));
	}
	/* exact, clip not active: -2 X^T y / m */
	assert_int_equal(dp_serve_release(DP_MODEL_LINEAR, &ds, 1e6, DP_MECH_LAPLACE, INFINITY,
					  NULL, g1), 0);
	{
		double u = 0, v = 0;

		for (size_t r = 0; r < 5; r++) {
			u += X5[2 * r] * Y5[r];
			v += X5[2 * r + 1] * Y5[r];
		}
		assert_true(fabs(g1[0] + 2 * u / 5) < 1e-12);
		assert_true(fabs(g1[1] + 2 * v / 5) < 1e-12);
	}
	dp_dataset_free(&ds);
}

static void test_pool(void **state)
{
	const double a[] = { 1, 2 }, b[] = { 3, -2 }, *v[] = { a, b };
	const double w[] = { 1, 3 }, w0[] = { 0, 0 };
	double out[2];

	(void)state;
	dp_serve_pool(2, 2, v, w, out);
	assert_true(fabs(out[0] - 2.5) < 1e-15 && fabs(out[1] + 1) < 1e-15);
	dp_serve_pool(2, 2, v, w0, out);
	assert_true(out[0] == 0 && out[1] == 0);
}

static void test_prior_newton(void **state)
{
	dp_dataset ds;
	const double gbar[] = { 0.3, -0.7 };
	double pr[2], t[2], a = 0, b = 0, d = 0;

	(void)state;
	load(&ds, Y5);
	for (size_t r = 0; r < 5; r++) {
		a += X5[2 * r] * X5[2 * r];
		b += X5[2 * r] * X5[2 * r + 1];
		d += X5[2 * r + 1] * X5[2 * r + 1];
	}
	/* linear: H = (2/5) X^T X; logistic: (1/20) X^T X; lambda 0.1 */
	assert_int_equal(dp_serve_prior_newton(DP_MODEL_LINEAR, &ds, 0.1, gbar, pr), 0);
	solve2(0.4 * a + 0.2, 0.4 * b, 0.4 * d + 0.2, -gbar[0], -gbar[1], t);
	assert_true(fabs(pr[0] - t[0]) < 1e-12 && fabs(pr[1] - t[1]) < 1e-12);
	assert_int_equal(dp_serve_prior_newton(DP_MODEL_LOGISTIC, &ds, 0.1, gbar, pr), 0);
	solve2(a / 20 + 0.2, b / 20, d / 20 + 0.2, -gbar[0], -gbar[1], t);
	assert_true(fabs(pr[0] - t[0]) < 1e-12 && fabs(pr[1] - t[1]) < 1e-12);
	assert_int_equal(dp_serve_prior_newton(DP_MODEL_SVM, &ds, 0.1, gbar, pr), DP_EINVAL);
	dp_dataset_free(&ds);
}

static void test_ridge_closed_form(void **state)
{
	dp_dataset ds;
	const double prior[] = { 0.5, -1 };
	const double taus[] = { 0, 2.5, 40 };
	double th[2], t[2];

	(void)state;
	load(&ds, Y5);
	for (size_t k = 0; k < 3; k++) {
		for (size_t skip = 0; skip < 4; skip++) {   /* skip 3 >= K 3: all rows */
			assert_int_equal(dp_serve_fit(DP_MODEL_LINEAR, &ds, 3, skip, 0.2, taus[k],
						      prior, false, th), 0);
			ridge_ref(Y5, skip < 3 ? 3 : 0, skip, 0.2, taus[k], prior, t);
			assert_true(fabs(th[0] - t[0]) < 1e-12 && fabs(th[1] - t[1]) < 1e-12);
		}
	}
	/* tau = 0 is the local ridge (dp_optimum_solve) */
	{
		const dp_dataset *v[] = { &ds };
		double loc[2];

		assert_int_equal(dp_optimum_solve(DP_MODEL_LINEAR, v, 1, 0.2, 100, loc, NULL), 0);
		assert_int_equal(dp_serve_fit(DP_MODEL_LINEAR, &ds, 0, 0, 0.2, 0, prior, false, th), 0);
		assert_true(fabs(th[0] - loc[0]) < 1e-12 && fabs(th[1] - loc[1]) < 1e-12);
	}
	/* a large tau tends to the prior */
	assert_int_equal(dp_serve_fit(DP_MODEL_LINEAR, &ds, 0, 0, 0.2, 1e12, prior, false, th), 0);
	assert_true(fabs(th[0] - prior[0]) < 1e-9 && fabs(th[1] - prior[1]) < 1e-9);
	assert_int_equal(dp_serve_fit(DP_MODEL_LINEAR, &ds, 0, 0, -1, 0, prior, false, th), DP_EINVAL);
	assert_int_equal(dp_serve_fit(DP_MODEL_LINEAR, &ds, 0, 0, 0.2, -1, prior, false, th), DP_EINVAL);
	dp_dataset_free(&ds);
}

static void test_logistic(void **state)
{
	dp_dataset ds;
	const dp_dataset *v[1];
	const double prior[] = { 2, -3 };
	double th[2], loc[2];

	(void)state;
	load(&ds, YC5);
	v[0] = &ds;
	/* tau = 0: the local model */
	assert_int_equal(dp_optimum_solve(DP_MODEL_LOGISTIC, v, 1, 0.2, 100, loc, NULL), 0);
	assert_int_equal(dp_serve_fit(DP_MODEL_LOGISTIC, &ds, 0, 0, 0.2, 0, prior, false, th), 0);
	assert_true(fabs(th[0] - loc[0]) < 1e-9 && fabs(th[1] - loc[1]) < 1e-9);
	/* tau = 3: the gradient of the objective is 0 (computed here) */
	assert_int_equal(dp_serve_fit(DP_MODEL_LOGISTIC, &ds, 0, 0, 0.2, 3, prior, false, th), 0);
	{
		double g[2] = { 0, 0 };

		for (size_t r = 0; r < 5; r++) {
			const double *x = X5 + 2 * r;
			double t = th[0] * x[0] + th[1] * x[1];
			double c = -YC5[r] / (1 + exp(YC5[r] * t));

			g[0] += c * x[0] / 5;
			g[1] += c * x[1] / 5;
		}
		for (int q = 0; q < 2; q++) {
			g[q] += 2 * 0.2 * th[q] + 2 * 3.0 / 5 * (th[q] - prior[q]);
			assert_true(fabs(g[q]) < 1e-12);
		}
	}
	assert_int_equal(dp_serve_fit(DP_MODEL_LOGISTIC, &ds, 0, 0, 0.2, 1e12, prior, false, th), 0);
	assert_true(fabs(th[0] - prior[0]) < 1e-9 && fabs(th[1] - prior[1]) < 1e-9);
	dp_dataset_free(&ds);
}

/* The free intercept (bias_free) and the prior's fitted length, linear,
 * against 2 x 2 closed forms. */
static void test_bias_free_and_scale(void **state)
{
	dp_dataset ds;
	const double prior[] = { 0.5, -1 };
	double a = 0, b = 0, d = 0, u = 0, v = 0, zz = 0, zy = 0, th[2], t[2], sc;

	(void)state;
	load(&ds, Y5);
	for (size_t r = 0; r < 5; r++) {
		const double *x = X5 + 2 * r;
		double z = prior[0] * x[0] + prior[1] * x[1];

		a += x[0] * x[0];
		b += x[0] * x[1];
		d += x[1] * x[1];
		u += x[0] * Y5[r];
		v += x[1] * Y5[r];
		zz += z * z;
		zy += z * Y5[r];
	}
	/* tau pulls coordinate 0 only */
	assert_int_equal(dp_serve_fit(DP_MODEL_LINEAR, &ds, 0, 0, 0.2, 4, prior, true, th), 0);
	solve2(a + 1 + 4, b, d + 1, u + 4 * prior[0], v, t);
	assert_true(fabs(th[0] - t[0]) < 1e-12 && fabs(th[1] - t[1]) < 1e-12);
	/* the length on the line s prior: s = z.y / (z.z + n lambda |prior|^2) */
	assert_int_equal(dp_serve_scale(DP_MODEL_LINEAR, &ds, 0, 0, 0.2, prior, false, &sc), 0);
	assert_true(fabs(sc - fmax(0, zy / (zz + 1 * 1.25))) < 1e-12);
	/* with a free intercept (column 1): (s prior_0 x_0 + c x_1), penalties
	 * lambda (s^2 prior_0^2 + c^2); in q = s prior_0 the normal equations
	 * are [a + n lambda, b; b, d + n lambda] (q, c) = (u, v) */
	assert_int_equal(dp_serve_scale(DP_MODEL_LINEAR, &ds, 0, 0, 0.2, prior, true, &sc), 0);
	solve2(a + 1, b, d + 1, u, v, t);
	assert_true(fabs(sc - fmax(0, t[0] / prior[0])) < 1e-12);
	/* a zero prior has no length */
	assert_int_equal(dp_serve_scale(DP_MODEL_LINEAR, &ds, 0, 0, 0.2, (double[]){ 0, 0 }, false,
					&sc), 0);
	assert_true(sc == 0);
	dp_dataset_free(&ds);
}

/* The fold scores of dp_serve_refit, against the closed form per fold. */
static void test_refit_choice(void **state)
{
	dp_dataset ds;
	const double taus[] = { 0, 1, 10, 1000 };
	const double bad[] = { -5, 5 };
	double th[2], val[4], th2[2], val2[4], t[2];
	size_t chosen, chosen2;

	(void)state;
	load(&ds, Y5);
	assert_int_equal(dp_serve_refit(DP_MODEL_LINEAR, &ds, 5, 0.1, bad, false, false, taus, 4, th, &chosen,
					val), 0);
	for (size_t k = 0; k < 4; k++) {
		double s = 0;

		for (size_t f = 0; f < 5; f++) {   /* leave-one-out: fold f = row f */
			double e;

			ridge_ref(Y5, 5, f, 0.1, taus[k], bad, t);
			e = Y5[f] - t[0] * X5[2 * f] - t[1] * X5[2 * f + 1];
			s += e * e;
		}
		assert_true(fabs(val[k] - s) < 1e-12 * fmax(1, s));
	}
	assert_int_equal(chosen, 0);   /* the prior is far off: the local model */
	ridge_ref(Y5, 0, 0, 0.1, 0, bad, t);
	assert_true(fabs(th[0] - t[0]) < 1e-12 && fabs(th[1] - t[1]) < 1e-12);
	/* deterministic */
	assert_int_equal(dp_serve_refit(DP_MODEL_LINEAR, &ds, 5, 0.1, bad, false, false, taus, 4, th2, &chosen2,
					val2), 0);
	assert_memory_equal(th, th2, sizeof(th));
	assert_memory_equal(val, val2, sizeof(val));
	dp_dataset_free(&ds);
	/* the truth as the prior, targets without noise: the largest tau */
	{
		const double truth[] = { 1.5, -0.5 };
		double y[5];

		for (size_t r = 0; r < 5; r++)
			y[r] = truth[0] * X5[2 * r] + truth[1] * X5[2 * r + 1];
		load(&ds, y);
		assert_int_equal(dp_serve_refit(DP_MODEL_LINEAR, &ds, 5, 0.1, truth, false, false, taus, 4, th,
						&chosen, NULL), 0);
		assert_int_equal(chosen, 3);
		/* one row: no validation, taus[0] */
		dp_dataset_free(&ds);
	}
	assert_int_equal(dp_dataset_from_arrays(&ds, 1, 2, X5, Y5, NULL), 0);
	assert_int_equal(dp_serve_refit(DP_MODEL_LINEAR, &ds, 5, 0.1, bad, false, false, taus, 4, th, &chosen,
					NULL), 0);
	assert_int_equal(chosen, 0);
	dp_dataset_free(&ds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_release_is_query_at_zero),
		cmocka_unit_test(test_pool),
		cmocka_unit_test(test_prior_newton),
		cmocka_unit_test(test_ridge_closed_form),
		cmocka_unit_test(test_logistic),
		cmocka_unit_test(test_bias_free_and_scale),
		cmocka_unit_test(test_refit_choice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
