/* Tests for common/core/model.c: the losses of docs/design.md §2, the plain passes
 * (loss, fitness, mean gradient) and the privacy kernel
 * dp_model_clipped_grid_sum.
 *
 * Expected values come from hand calculation (constants below were worked
 * out with the closed forms, checked once with /usr/bin/python3's math
 * module), finite differences, or a naive per-row reference written here:
 * exact scores in long double on dyadic data, the documented clipping rule
 * per row, trunc(ldexp(v, k)) per coordinate, sums in int64.  Every kernel
 * variant (DP_KERNEL_ISA=blas|avx2|avx512, capped to what the CPU has) is
 * run against the same reference.  No statistical tests here. */
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
#include "common/core/noise.h"
#include "tools/lib/simrng.h"

static const char *const isas[] = { "blas", "avx2", "avx512" };
#define NISA (sizeof(isas) / sizeof(isas[0]))

static void use_isa(const char *isa)
{
	setenv("DP_KERNEL_ISA", isa, 1);
}

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

/* ---- the privacy kernel ---- */

/* Reference per the rule documented in model.c: scores t by a plain
 * sequential double sum (exact on dyadic data, and overflowing like the
 * kernel's on the huge rows of the drop test), c = coef(t, y), drop unless c and ||x||_1 finite,
 * clipm = clip (1 - (p + 8) 2^-52), a = c if |c| ||x||_1 <= clipm else
 * copysign(clipm / ||x||_1, c), term = trunc(ldexp(a x_q, k)), int64 sums.
 * Counts rows clipped / unclipped for the caller's coverage checks. */
struct ref {
	int64_t *sum;
	size_t dropped, clipped, unclipped;
};

static void reference(dp_model m, const dp_dataset *ds, const double *theta, double clip, int k,
		      struct ref *out)
{
	size_t n = ds->n, p = ds->p;
	double clipm = clip * (1.0 - (double)(p + 8) * 0x1p-52);

	memset(out->sum, 0, p * sizeof(int64_t));
	out->dropped = out->clipped = out->unclipped = 0;
	for (size_t j = 0; j < n; j++) {
		const double *x = ds->x + j * p;
		double t = 0;
		long double l1 = 0;

		for (size_t q = 0; q < p; q++) {
			t += x[q] * theta[q];
			l1 += fabsl((long double)x[q]);
		}
		double c = dp_model_coef(m, t, ds->y[j]);
		double l = (double)l1, a;

		if (!isfinite(c) || !isfinite(l)) {
			out->dropped++;
			continue;
		}
		if (fabs(c) * l <= clipm) {
			a = c;
			out->unclipped++;
		} else {
			a = copysign(clipm / l, c);
			out->clipped++;
		}
		for (size_t q = 0; q < p; q++)
			out->sum[q] += (int64_t)trunc(ldexp(a * x[q], k));
	}
}

/* Dyadic data: x in {-4, -3.875, ..., 4}, theta in [-1, 1] step 1/16, so
 * every score is exact whatever the summation order. */
static void dyadic_ds(dp_simrng *r, dp_dataset *ds, size_t n, size_t p, dp_model m)
{
	double *x = malloc(n * p * sizeof(double)), *y = malloc(n * sizeof(double));

	assert_non_null(x);
	assert_non_null(y);
	for (size_t i = 0; i < n * p; i++)
		x[i] = ((double)rnd_below(r, 65) - 32.0) / 8.0;
	for (size_t j = 0; j < n; j++)
		y[j] = m == DP_MODEL_LINEAR ? ((double)rnd_below(r, 41) - 20.0) / 4.0
					    : (rnd_below(r, 2) ? 1.0 : -1.0);
	assert_int_equal(dp_dataset_from_arrays(ds, n, p, x, y, NULL), 0);
	free(x);
	free(y);
}

/* scale must be a power of two to keep theta dyadic */
static void dyadic_theta(dp_simrng *r, double *theta, size_t p, double scale)
{
	for (size_t q = 0; q < p; q++)
		theta[q] = scale * ((double)rnd_below(r, 33) - 16.0) / 16.0;
}

static void test_grid_sum_matches_reference(void **state)
{
	static const size_t ps[] = { 1, 3, 7, 8, 9, 10, 16, 17, 18, 25, 26, 31, 33, 40, 100 };
	static const size_t ns[] = { 1, 7, 8, 9, 515, 2053 };
	dp_simrng r;
	size_t total_clipped = 0, total_unclipped = 0;

	(void)state;
	dp_simrng_seed(&r, 2024);
	for (size_t ip = 0; ip < sizeof(ps) / sizeof(ps[0]); ip++) {
		for (size_t in = 0; in < sizeof(ns) / sizeof(ns[0]); in++) {
			for (int m = 0; m < 3; m++) {
				size_t n = ns[in], p = ps[ip], dropped;
				dp_dataset ds;
				double *theta = malloc(p * sizeof(double));
				double *sum = malloc(p * sizeof(double));
				struct ref ref = { .sum = malloc(p * sizeof(int64_t)) };
				/* a clip in the middle of the gradient norms: some rows
				 * clipped, some not */
				double clip = m == DP_MODEL_LINEAR ? 3.0 * (double)p : 0.6 * (double)p;
				int k;

				dyadic_ds(&r, &ds, n, p, m);
				dyadic_theta(&r, theta, p, ldexp(1.0, -(int)ceil(0.5 * log2((double)p))));
				assert_int_equal(dp_noise_grid_exponent(n, clip, INFINITY, &k), 0);
				reference(m, &ds, theta, clip, k, &ref);
				total_clipped += ref.clipped;
				total_unclipped += ref.unclipped;
				for (size_t v = 0; v < NISA; v++) {
					use_isa(isas[v]);
					assert_int_equal(dp_model_clipped_grid_sum(m, &ds, theta, clip,
										   k, sum, &dropped), 0);
					assert_int_equal(dropped, 0);
					for (size_t q = 0; q < p; q++) {
						if (sum[q] != (double)ref.sum[q])
							fail_msg("isa %s model %d n %zu p %zu q %zu: %.17g != %lld",
								 isas[v], m, n, p, q, sum[q],
								 (long long)ref.sum[q]);
					}
				}
				/* a coarser grid too */
				reference(m, &ds, theta, clip, 7, &ref);
				for (size_t v = 0; v < NISA; v++) {
					use_isa(isas[v]);
					assert_int_equal(dp_model_clipped_grid_sum(m, &ds, theta, clip,
										   7, sum, NULL), 0);
					for (size_t q = 0; q < p; q++)
						assert_true(sum[q] == (double)ref.sum[q]);
				}
				dp_dataset_free(&ds);
				free(theta);
				free(sum);
				free(ref.sum);
			}
		}
	}
	/* the data above exercised both sides of the clipping rule */
	assert_true(total_clipped > 1000);
	assert_true(total_unclipped > 1000);
	unsetenv("DP_KERNEL_ISA");
}

/* Semantics against exact clipping (long double, no margin): each row's
 * truncation loses less than one grid unit per coordinate, and the margin
 * changes a value by at most (p + 8) 2^-52 relative, so
 * |sum - sum of exact clipped gradients 2^k| < n + tiny per coordinate.
 * Also the bound |sum| <= n clip 2^k. */
static void test_grid_sum_close_to_exact_clipping(void **state)
{
	dp_simrng r;
	const size_t n = 999, p = 12;
	double theta[12], sum[12];
	dp_dataset ds;

	(void)state;
	dp_simrng_seed(&r, 77);
	for (int m = 0; m < 3; m++) {
		double *x = malloc(n * p * sizeof(double)), *y = malloc(n * sizeof(double));
		for (size_t i = 0; i < n * p; i++)
			x[i] = (rnd_unif(&r) - 0.5) * exp(4.0 * rnd_unif(&r));
		for (size_t j = 0; j < n; j++)
			y[j] = m == DP_MODEL_LINEAR ? 5.0 * (rnd_unif(&r) - 0.5)
						    : (rnd_below(&r, 2) ? 1.0 : -1.0);
		assert_int_equal(dp_dataset_from_arrays(&ds, n, p, x, y, NULL), 0);
		for (size_t q = 0; q < p; q++)
			theta[q] = rnd_unif(&r) - 0.5;
		double clip = 2.5;
		int k;
		assert_int_equal(dp_noise_grid_exponent(n, clip, INFINITY, &k), 0);

		long double ex[12] = { 0 };
		for (size_t j = 0; j < n; j++) {
			long double t = 0, l1 = 0;
			for (size_t q = 0; q < p; q++) {
				t += (long double)x[j * p + q] * theta[q];
				l1 += fabsl((long double)x[j * p + q]);
			}
			long double c = dp_model_coef(m, (double)t, y[j]);
			long double s = fabsl(c) * l1 > clip ? clip / (fabsl(c) * l1) : 1.0L;
			for (size_t q = 0; q < p; q++)
				ex[q] += ldexpl(s * c * x[j * p + q], k);
		}
		for (size_t v = 0; v < NISA; v++) {
			use_isa(isas[v]);
			assert_int_equal(dp_model_clipped_grid_sum(m, &ds, theta, clip, k, sum, NULL), 0);
			for (size_t q = 0; q < p; q++) {
				assert_true(fabs(sum[q]) <= ldexp((double)n * clip, k));
				assert_true(sum[q] == trunc(sum[q]));
				assert_true(fabsl((long double)sum[q] - ex[q]) <
					    (long double)n + 1e-9L * ldexpl(n * clip, k));
			}
		}
		dp_dataset_free(&ds);
		free(x);
		free(y);
	}
	unsetenv("DP_KERNEL_ISA");
}

/* The sensitivity bound on the doubles actually used: every row's integer
 * vector has L1 norm <= floor(clip 2^k), even with rounding in row_l1 and
 * in the products.  The bound is tight only when clip 2^k is close to
 * 2^52 (a relative excess of a few ulps is then a whole grid unit), which
 * needs n = 1: single rows, clip in [2^11, 2^12), k = 40.  (With the
 * rounding margin removed from the kernel this test fails.)  Then 8 copies
 * of a row, so that the SIMD group paths are the ones used (|sum|_1 = 8
 * |row|_1; less sensitive, clip 2^k <= 2^49). */
static void row_bound_case(dp_simrng *r, size_t copies, double clip, int k)
{
	size_t p = 1 + rnd_below(r, 20);
	double row[20], x[8 * 20], y[8], theta[20], sum[20];
	int m = (int)rnd_below(r, 3);
	dp_dataset ds;

	for (size_t q = 0; q < p; q++) {
		row[q] = (rnd_unif(r) - 0.5) * ldexp(1.0, (int)rnd_below(r, 40) - 20);
		theta[q] = rnd_unif(r) - 0.5;
	}
	y[0] = m == DP_MODEL_LINEAR ? 1e6 * (rnd_unif(r) - 0.5) : -1.0;
	for (size_t c = 0; c < copies; c++) {
		memcpy(x + c * p, row, p * sizeof(double));
		y[c] = y[0];
	}
	assert_int_equal(dp_dataset_from_arrays(&ds, copies, p, x, y, NULL), 0);
	double bound = floor(ldexp(clip, k));
	for (size_t v = 0; v < NISA; v++) {
		use_isa(isas[v]);
		assert_int_equal(dp_model_clipped_grid_sum(m, &ds, theta, clip, k, sum, NULL), 0);
		double l1 = 0;
		for (size_t q = 0; q < p; q++)
			l1 += fabs(sum[q]);
		assert_true(l1 <= (double)copies * bound);
	}
	dp_dataset_free(&ds);
}

static void test_grid_sum_row_l1_bound(void **state)
{
	dp_simrng r;

	(void)state;
	dp_simrng_seed(&r, 5);
	for (int it = 0; it < 20000; it++)
		row_bound_case(&r, 1, ldexp(1.0 + rnd_unif(&r), 11), 40);
	for (int it = 0; it < 2000; it++) {
		double clip = ldexp(1.0 + rnd_unif(&r), (int)rnd_below(&r, 10) - 5);
		int k;
		assert_int_equal(dp_noise_grid_exponent(8, clip, INFINITY, &k), 0);
		row_bound_case(&r, 8, clip, k);
	}
	unsetenv("DP_KERNEL_ISA");
}

/* Non-finite gradients: NaN in x (row_l1 NaN), a score overflowing to inf
 * (linear: c = inf) or to NaN (inf - inf: every model), are dropped and
 * counted; nothing non-finite reaches the sums; a logistic row whose score
 * is +-inf has a finite gradient and is kept. */
static void test_grid_sum_drops(void **state)
{
	dp_simrng r;
	const size_t n = 64, p = 3;
	double sum[3];

	(void)state;
	dp_simrng_seed(&r, 99);
	for (int m = 0; m < 3; m++) {
		dp_dataset ds;
		struct ref ref = { .sum = malloc(p * sizeof(int64_t)) };
		size_t dropped, expect_drop = 0;

		dyadic_ds(&r, &ds, n, p, m);
		/* row 3: NaN in x, as a loader computing row_l1 would see it */
		ds.x[3 * p + 1] = NAN;
		ds.row_l1[3] = NAN;
		expect_drop++;
		/* row 12: +inf in x */
		ds.x[12 * p + 0] = INFINITY;
		ds.row_l1[12] = INFINITY;
		expect_drop++;
		/* theta large enough that x = 1e300 overflows the score, with
		 * all large terms of one sign so that every evaluation order
		 * gives the same infinity: rows 40 and 41 (one SIMD group with
		 * row 47) score +inf, row 47 -inf.  Linear: c = +-inf, dropped;
		 * logistic and svm: c is the finite limit, the row is kept (and
		 * clipped: its norm is huge). */
		double th2[3] = { 1e10, 1e10, 0.125 };
		const double big[3][3] = { { 1e300, 1e300, 0 }, { 1e300, 1e300, 1 },
					   { -1e300, 0, -1e300 } };
		const size_t rows[3] = { 40, 41, 47 };
		for (int i = 0; i < 3; i++) {
			ds.row_l1[rows[i]] = 0;
			for (size_t q = 0; q < p; q++) {
				ds.x[rows[i] * p + q] = big[i][q];
				ds.row_l1[rows[i]] += fabs(big[i][q]);
			}
		}
		if (m == DP_MODEL_LINEAR)
			expect_drop += 3;
		reference(m, &ds, th2, 1.5, 20, &ref);
		assert_int_equal(ref.dropped, expect_drop);
		for (size_t v = 0; v < NISA; v++) {
			use_isa(isas[v]);
			for (size_t q = 0; q < p; q++)
				sum[q] = -7.0;
			assert_int_equal(dp_model_clipped_grid_sum(m, &ds, th2, 1.5, 20, sum, &dropped), 0);
			assert_int_equal(dropped, expect_drop);
			for (size_t q = 0; q < p; q++) {
				assert_true(isfinite(sum[q]));
				assert_true(sum[q] == (double)ref.sum[q]);
			}
		}
		dp_dataset_free(&ds);
		free(ref.sum);
	}
	unsetenv("DP_KERNEL_ISA");
}

static void test_grid_sum_invalid(void **state)
{
	double x[6] = { 1, 2, 3, 4, 5, 6 }, y[3] = { 1, -1, 1 }, theta[2] = { 0.1, 0.2 };
	double sum[2] = { 42.0, 43.0 };
	dp_dataset ds;
	size_t dropped = 99;

	(void)state;
	assert_int_equal(dp_dataset_from_arrays(&ds, 3, 2, x, y, NULL), 0);
	assert_int_equal(dp_model_clipped_grid_sum(DP_MODEL_LINEAR, &ds, theta, 0.0, 10, sum,
						   &dropped), DP_EINVAL);
	assert_int_equal(dp_model_clipped_grid_sum(DP_MODEL_LINEAR, &ds, theta, -1.0, 10, sum,
						   &dropped), DP_EINVAL);
	assert_int_equal(dp_model_clipped_grid_sum(DP_MODEL_LINEAR, &ds, theta, NAN, 10, sum,
						   &dropped), DP_EINVAL);
	assert_int_equal(dp_model_clipped_grid_sum(DP_MODEL_LINEAR, &ds, theta, INFINITY, 10, sum,
						   &dropped), DP_EINVAL);
	theta[1] = NAN;
	assert_int_equal(dp_model_clipped_grid_sum(DP_MODEL_LINEAR, &ds, theta, 1.0, 10, sum,
						   &dropped), DP_EINVAL);
	theta[1] = INFINITY;
	assert_int_equal(dp_model_clipped_grid_sum(DP_MODEL_LINEAR, &ds, theta, 1.0, 10, sum,
						   &dropped), DP_EINVAL);
	theta[1] = 0.2;
	/* 3 rows * clip 1 * 2^51 > 2^52: the exact-sum guarantee would break */
	assert_int_equal(dp_model_clipped_grid_sum(DP_MODEL_LINEAR, &ds, theta, 1.0, 51, sum,
						   &dropped), DP_EINVAL);
	assert_float_equal(sum[0], 42.0, 0);
	assert_float_equal(sum[1], 43.0, 0);
	assert_int_equal(dropped, 99);
	/* 3 * 1 * 2^50 <= 2^52 is fine */
	assert_int_equal(dp_model_clipped_grid_sum(DP_MODEL_LINEAR, &ds, theta, 1.0, 50, sum,
						   &dropped), 0);
	assert_int_equal(dropped, 0);
	dp_dataset_free(&ds);
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
		cmocka_unit_test(test_grid_sum_matches_reference),
		cmocka_unit_test(test_grid_sum_close_to_exact_clipping),
		cmocka_unit_test(test_grid_sum_row_l1_bound),
		cmocka_unit_test(test_grid_sum_drops),
		cmocka_unit_test(test_grid_sum_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
