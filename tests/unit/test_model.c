/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for common/core/model.c: the losses of docs/design.md §2 and the
 * plain passes (loss, fitness, mean gradient); the privacy kernel is
 * tests/unit/test_kernel.c.
 *
 * Expected values come from hand calculation (constants below were worked
 * out with the closed forms, checked once with /usr/bin/python3's math
 * module), finite differences, or plain loops in long double.  No
 * statistical tests here. */
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
#include "tools/lib/simrng.h"

static uint64_t rnd_below(dp_simrng *r, uint64_t m)
{
	return dp_simrng_next(r) % m;
}

static double rnd_unif(dp_simrng *r)
{
	return (double)(dp_simrng_next(r) >> 11) * 0x1p-53;
}

/* ---- losses and coefficients ---- */

static void test_parse_name(void **state)
{
	dp_model m;

	(void)state;
	assert_int_equal(dp_model_parse("linear", &m), 0);
	assert_int_equal(m, DP_MODEL_LINEAR);
	assert_int_equal(dp_model_parse("logistic", &m), 0);
	assert_int_equal(m, DP_MODEL_LOGISTIC);
	assert_int_equal(dp_model_parse("svm", &m), 0);
	assert_int_equal(m, DP_MODEL_SVM);
	m = DP_MODEL_SVM;
	assert_int_equal(dp_model_parse("ridge", &m), DP_EINVAL);
	assert_int_equal(dp_model_parse(NULL, &m), DP_EINVAL);
	assert_int_equal(m, DP_MODEL_SVM);
	assert_string_equal(dp_model_name(DP_MODEL_LINEAR), "linear");
	assert_string_equal(dp_model_name(DP_MODEL_LOGISTIC), "logistic");
	assert_string_equal(dp_model_name(DP_MODEL_SVM), "svm");
}

static void test_hand_values(void **state)
{
	(void)state;
	/* linear: (y - t)^2 and 2 (t - y) */
	assert_float_equal(dp_model_loss(DP_MODEL_LINEAR, 3.0, 1.0), 4.0, 0);
	assert_float_equal(dp_model_coef(DP_MODEL_LINEAR, 3.0, 1.0), 4.0, 0);
	assert_float_equal(dp_model_loss(DP_MODEL_LINEAR, -0.5, 2.0), 6.25, 0);
	assert_float_equal(dp_model_coef(DP_MODEL_LINEAR, -0.5, 2.0), -5.0, 0);
	/* logistic at t = 0: log 2 and -y/2 */
	assert_float_equal(dp_model_loss(DP_MODEL_LOGISTIC, 0.0, 1.0), 0.6931471805599453, 1e-16);
	assert_float_equal(dp_model_coef(DP_MODEL_LOGISTIC, 0.0, 1.0), -0.5, 0);
	assert_float_equal(dp_model_coef(DP_MODEL_LOGISTIC, 0.0, -1.0), 0.5, 0);
	/* t = 2, y = -1: log(1 + e^2), 1/(1 + e^-2) */
	assert_float_equal(dp_model_loss(DP_MODEL_LOGISTIC, 2.0, -1.0), 2.1269280110429727, 1e-15);
	assert_float_equal(dp_model_coef(DP_MODEL_LOGISTIC, 2.0, -1.0), 0.8807970779778823, 1e-16);
	/* t = 3.5, y = 1: log1p(e^-3.5), -1/(1 + e^3.5) */
	assert_float_equal(dp_model_loss(DP_MODEL_LOGISTIC, 3.5, 1.0), 0.029750418272620566, 1e-17);
	assert_float_equal(dp_model_coef(DP_MODEL_LOGISTIC, 3.5, 1.0), -0.02931223075135632, 1e-17);
	/* svm: hinge, kink at y t = 1 (subgradient 0 there, as the table says) */
	assert_float_equal(dp_model_loss(DP_MODEL_SVM, 0.5, 1.0), 0.5, 0);
	assert_float_equal(dp_model_coef(DP_MODEL_SVM, 0.5, 1.0), -1.0, 0);
	assert_float_equal(dp_model_loss(DP_MODEL_SVM, 0.5, -1.0), 1.5, 0);
	assert_float_equal(dp_model_coef(DP_MODEL_SVM, 0.5, -1.0), 1.0, 0);
	assert_float_equal(dp_model_loss(DP_MODEL_SVM, 2.0, 1.0), 0.0, 0);
	assert_float_equal(dp_model_coef(DP_MODEL_SVM, 2.0, 1.0), 0.0, 0);
	assert_float_equal(dp_model_loss(DP_MODEL_SVM, -1.0, -1.0), 0.0, 0);
	assert_float_equal(dp_model_coef(DP_MODEL_SVM, -1.0, -1.0), 0.0, 0);
}

/* d loss / dt = coef, by central differences away from the hinge kink. */
static void test_finite_differences(void **state)
{
	static const double ts[] = { -3.0, -0.7, 0.0, 0.3, 2.5, 7.0 };
	static const double ys[] = { -1.0, 1.0 };

	(void)state;
	for (int m = 0; m < 3; m++) {
		for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
			for (size_t k = 0; k < 2; k++) {
				double t = ts[i], y = ys[k], h = 1e-5;

				if (m == DP_MODEL_SVM && fabs(y * t - 1.0) < 0.1)
					continue;
				double fd = (dp_model_loss(m, t + h, y) - dp_model_loss(m, t - h, y)) /
					    (2 * h);
				double c = dp_model_coef(m, t, y);
				assert_float_equal(fd, c, 1e-8 * (1 + fabs(c)));
			}
		}
	}
	/* linear with a non-binary target too */
	double fd = (dp_model_loss(DP_MODEL_LINEAR, 1.3 + 1e-5, -4.2) -
		     dp_model_loss(DP_MODEL_LINEAR, 1.3 - 1e-5, -4.2)) / 2e-5;
	assert_float_equal(fd, dp_model_coef(DP_MODEL_LINEAR, 1.3, -4.2), 1e-8);
}

static void test_logistic_stability(void **state)
{
	(void)state;
	/* m = y t = 800: loss e^-800 (below the smallest double: 0), coef -0 */
	assert_float_equal(dp_model_loss(DP_MODEL_LOGISTIC, 800.0, 1.0), 0.0, 0);
	assert_float_equal(dp_model_coef(DP_MODEL_LOGISTIC, 800.0, 1.0), 0.0, 0);
	assert_float_equal(dp_model_loss(DP_MODEL_LOGISTIC, -800.0, -1.0), 0.0, 0);
	/* m = -800: loss 800 + log1p(e^-800) = 800, coef -y */
	assert_float_equal(dp_model_loss(DP_MODEL_LOGISTIC, -800.0, 1.0), 800.0, 0);
	assert_float_equal(dp_model_coef(DP_MODEL_LOGISTIC, -800.0, 1.0), -1.0, 0);
	assert_float_equal(dp_model_loss(DP_MODEL_LOGISTIC, 800.0, -1.0), 800.0, 0);
	assert_float_equal(dp_model_coef(DP_MODEL_LOGISTIC, 800.0, -1.0), 1.0, 0);
	/* infinite scores: the limits, not NaN */
	assert_float_equal(dp_model_coef(DP_MODEL_LOGISTIC, INFINITY, 1.0), 0.0, 0);
	assert_float_equal(dp_model_coef(DP_MODEL_LOGISTIC, -INFINITY, 1.0), -1.0, 0);
	assert_true(isinf(dp_model_loss(DP_MODEL_LOGISTIC, -INFINITY, 1.0)));
	/* a NaN score stays NaN (the kernel must see it to drop the row) */
	for (int m = 0; m < 3; m++)
		assert_true(isnan(dp_model_coef(m, NAN, 1.0)));
}

static void test_check_data(void **state)
{
	double x[4] = { 1, 2, 3, 4 }, y[4] = { 1, -1, 0.5, 1 };
	dp_dataset ds;

	(void)state;
	assert_int_equal(dp_dataset_from_arrays(&ds, 4, 1, x, y, NULL), 0);
	assert_int_equal(dp_model_check_data(DP_MODEL_LINEAR, &ds), 0);
	assert_int_equal(dp_model_check_data(DP_MODEL_LOGISTIC, &ds), DP_EFORMAT);
	const char *d = dp_error_detail(DP_EFORMAT);
	assert_non_null(strstr(d, ds.source));
	assert_non_null(strstr(d, "row 3"));
	assert_int_equal(dp_model_check_data(DP_MODEL_SVM, &ds), DP_EFORMAT);
	ds.y[2] = -1.0;
	assert_int_equal(dp_model_check_data(DP_MODEL_SVM, &ds), 0);
	assert_int_equal(dp_model_check_data(DP_MODEL_LOGISTIC, &ds), 0);
	dp_dataset_free(&ds);
}

/* ---- loss_sum, fitness, mean_grad against plain loops ---- */

static void random_ds(dp_simrng *r, dp_dataset *ds, size_t n, size_t p, int binary)
{
	double *x = malloc(n * p * sizeof(double)), *y = malloc(n * sizeof(double));

	assert_non_null(x);
	assert_non_null(y);
	for (size_t i = 0; i < n * p; i++)
		x[i] = 4.0 * rnd_unif(r) - 2.0;
	for (size_t j = 0; j < n; j++)
		y[j] = binary ? (rnd_below(r, 2) ? 1.0 : -1.0) : 6.0 * rnd_unif(r) - 3.0;
	assert_int_equal(dp_dataset_from_arrays(ds, n, p, x, y, NULL), 0);
	free(x);
	free(y);
}

static void test_passes(void **state)
{
	dp_simrng r;
	dp_dataset a, b;
	const size_t p = 7, na = 1003, nb = 300;
	double theta[7], g[7];

	(void)state;
	dp_simrng_seed(&r, 11);
	for (int m = 0; m < 3; m++) {
		random_ds(&r, &a, na, p, m != DP_MODEL_LINEAR);
		random_ds(&r, &b, nb, p, m != DP_MODEL_LINEAR);
		for (size_t q = 0; q < p; q++)
			theta[q] = rnd_unif(&r) - 0.5;

		long double la = 0, lb = 0, ga[7] = { 0 };
		for (size_t j = 0; j < na; j++) {
			long double t = 0;
			for (size_t q = 0; q < p; q++)
				t += (long double)a.x[j * p + q] * theta[q];
			la += dp_model_loss(m, (double)t, a.y[j]);
			double c = dp_model_coef(m, (double)t, a.y[j]);
			for (size_t q = 0; q < p; q++)
				ga[q] += (long double)c * a.x[j * p + q];
		}
		for (size_t j = 0; j < nb; j++) {
			long double t = 0;
			for (size_t q = 0; q < p; q++)
				t += (long double)b.x[j * p + q] * theta[q];
			lb += dp_model_loss(m, (double)t, b.y[j]);
		}
		assert_float_equal(dp_model_loss_sum(m, &a, theta), (double)la, 1e-11 * (double)la);

		const dp_dataset *both[2] = { &a, &b };
		long double reg = 0;
		for (size_t q = 0; q < p; q++)
			reg += (long double)theta[q] * theta[q];
		double lambda = 0.25;
		double f = (double)(lambda * reg + (la + lb) / (na + nb));
		assert_float_equal(dp_model_fitness(m, both, 2, lambda, theta), f, 1e-12 * f);

		dp_model_mean_grad(m, &a, theta, g);
		for (size_t q = 0; q < p; q++)
			assert_float_equal(g[q], (double)(ga[q] / na), 1e-12);
		dp_dataset_free(&a);
		dp_dataset_free(&b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_name),
		cmocka_unit_test(test_hand_values),
		cmocka_unit_test(test_finite_differences),
		cmocka_unit_test(test_logistic_stability),
		cmocka_unit_test(test_check_data),
		cmocka_unit_test(test_passes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
