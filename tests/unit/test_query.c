/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for common/core/query.c: the noisy answer of docs/design.md §3 on the
 * integer lattice of docs/privacy.md §2.
 *
 * Expected values: the exact clipped mean is computed here in long double
 * from the definition (no grid); the answer without noise must be within
 * one grid unit of it.  Statistical checks use the seeded simulator
 * generator (seed from DP_TEST_SEED if set, else a fixed default, printed)
 * and 6-standard-error thresholds: 3 coordinates x (mean, variance) = 6
 * checks, each with a Gaussian-approximation false-failure probability of
 * 2e-9; the sample variance of Laplace noise is somewhat skewed at
 * N = 200000, so allow an order of magnitude more: the suite falsely fails
 * with probability well under 1e-6. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/dataset.h"
#include "common/core/error.h"
#include "common/core/noise.h"
#include "common/core/query.h"
#include "tools/lib/simrng.h"

static uint64_t seed = 20240611;

static double rnd_unif(dp_simrng *r)
{
	return (double)(dp_simrng_next(r) >> 11) * 0x1p-53;
}

/* A small dataset: n rows, p = 3, targets for the model. */
static void make_ds(dp_simrng *r, dp_dataset *ds, size_t n, dp_model m)
{
	double *x = malloc(n * 3 * sizeof(double)), *y = malloc(n * sizeof(double));

	assert_non_null(x);
	assert_non_null(y);
	for (size_t i = 0; i < 3 * n; i++)
		x[i] = 4.0 * rnd_unif(r) - 2.0;
	for (size_t j = 0; j < n; j++)
		y[j] = m == DP_MODEL_LINEAR ? 6.0 * rnd_unif(r) - 3.0 : (rnd_unif(r) < 0.5 ? 1.0 : -1.0);
	assert_int_equal(dp_dataset_from_arrays(ds, n, 3, x, y, NULL), 0);
	free(x);
	free(y);
}

/* The clipped mean by definition, in long double, no grid. */
static void exact_clipped_mean(dp_model m, const dp_dataset *ds, const double *theta,
			       double clip, long double *out)
{
	size_t n = ds->n, p = ds->p;

	for (size_t q = 0; q < p; q++)
		out[q] = 0;
	for (size_t j = 0; j < n; j++) {
		const double *x = ds->x + j * p;
		long double t = 0, l1 = 0;

		for (size_t q = 0; q < p; q++) {
			t += (long double)x[q] * theta[q];
			l1 += fabsl((long double)x[q]);
		}
		long double c = dp_model_coef(m, (double)t, ds->y[j]);
		long double s = fabsl(c) * l1 > clip ? clip / (fabsl(c) * l1) : 1.0L;
		for (size_t q = 0; q < p; q++)
			out[q] += s * c * x[q];
	}
	for (size_t q = 0; q < p; q++)
		out[q] /= n;
}

static void test_scale(void **state)
{
	(void)state;
	assert_float_equal(dp_query_scale(100, 1.0, 0.5), 0.04, 1e-17);
	assert_float_equal(dp_query_scale(250, 3.0, 0.01), 2.4, 1e-15);
	assert_float_equal(dp_query_scale(100, 1.0, INFINITY), 0.0, 0);
}

/* ---- rounding of the scales (docs/privacy.md §2 step 4) ------------------
 *
 * The exact comparison: the sign of f1 f2 f3 - num for positive doubles,
 * in integer arithmetic (three 53-bit significands make at most 159 bits,
 * so f3 is an integer below 2^20 here, read as itself: 126 bits). */
static int bits128(unsigned __int128 v)
{
	int b = 0;

	while (v != 0) {
		v >>= 1;
		b++;
	}
	return b;
}

static void split(double v, uint64_t *m, int *e)
{
	int ex;

	*m = (uint64_t)ldexp(frexp(v, &ex), 53);
	*e = ex - 53;
}

/* sign(a * b * n - num), exactly; n a positive integer below 2^20. */
static int cmp_exact(double a, double b, uint64_t n, double num)
{
	uint64_t ma, mb, mn;
	int ea, eb, en, el, er, ll, lr;
	unsigned __int128 L, R;

	split(a, &ma, &ea);
	split(b, &mb, &eb);
	split(num, &mn, &en);
	L = (unsigned __int128)ma * mb * n;
	R = mn;
	el = ea + eb;
	er = en;
	ll = bits128(L) + el;
	lr = bits128(R) + er;
	if (ll != lr)
		return ll < lr ? -1 : 1;
	if (el >= er)
		L <<= el - er;   /* bits128(L) + el - er = bits128(R) <= 53 */
	else
		R <<= er - el;   /* bits128(R) + er - el = bits128(L) <= 126 */
	return L < R ? -1 : L > R;
}

static double rnd_pos(dp_simrng *r, int lo, int hi)
{
	return ldexp(0.5 + 0.5 * rnd_unif(r), lo + (int)(dp_simrng_next(r) % (uint64_t)(hi - lo)));
}

/* Both scales are never below the exact quotient, and at most one (grid
 * scale) or three (b: n eps_q rounded down first, a relative 2^-52 that is
 * up to two ulps of b, then the quotient up) ulps above it, on random settings that
 * include cases where a division rounded to nearest falls below: the test
 * first checks it met enough of those, so that it fails for the plain
 * division (it did, before the scales were rounded up). */
static void test_scale_rounds_up(void **state)
{
	dp_simrng r;
	size_t below_b = 0, below_t = 0;

	(void)state;
	dp_simrng_seed(&r, seed ^ 0x5ca1e);
	for (int i = 0; i < 20000; i++) {
		uint64_t n = 1 + dp_simrng_next(&r) % 100000;
		double clip = rnd_pos(&r, -20, 20), eps = rnd_pos(&r, -30, 4);
		int k = -20 + (int)(dp_simrng_next(&r) % 60);
		double b = dp_query_scale(n, clip, eps), t = dp_query_grid_scale(clip, k, eps);
		double delta_t = ldexp(clip, k + 1);

		/* how often the plain roundings fall below the exact value */
		below_b += cmp_exact(2.0 * clip / ((double)n * eps), eps, n, 2.0 * clip) < 0;
		below_t += cmp_exact(delta_t / eps, eps, 1, delta_t) < 0;

		if (cmp_exact(b, eps, n, 2.0 * clip) < 0)
			fail_msg("b = %a below 2 clip/(n eps) for n=%llu clip=%a eps=%a", b,
				 (unsigned long long)n, clip, eps);
		if (cmp_exact(nextafter(nextafter(nextafter(b, 0), 0), 0), eps, n, 2.0 * clip) >= 0)
			fail_msg("b = %a more than 3 ulps above for n=%llu clip=%a eps=%a", b,
				 (unsigned long long)n, clip, eps);
		if (cmp_exact(t, eps, 1, delta_t) < 0)
			fail_msg("t = %a below 2 clip 2^k/eps for clip=%a k=%d eps=%a", t, clip, k, eps);
		if (cmp_exact(nextafter(t, 0), eps, 1, delta_t) >= 0)
			fail_msg("t = %a not the smallest double above, clip=%a k=%d eps=%a", t, clip,
				 k, eps);
	}
	printf("test_query: rounding to nearest fell below the exact b in %zu and t in %zu of "
	       "20000 cases\n", below_b, below_t);
	assert_true(below_b > 1000 && below_t > 1000);
	/* exact quotients stay exact; eps = inf gives no noise */
	assert_true(dp_query_grid_scale(1.0, 3, 0.5) == 32.0);
	assert_true(dp_query_grid_scale(1.0, 3, INFINITY) == 0.0);
	assert_true(dp_noise_div_up(0.0, 3.0) == 0.0);
	assert_true(dp_noise_div_up(6.0, 3.0) == 2.0);
	for (double num = 1.0; num < 20.0; num += 1.0) {
		double q = dp_noise_div_up(num, 3.0);

		assert_true(cmp_exact(q, 3.0, 1, num) >= 0);
		assert_true(cmp_exact(nextafter(q, 0), 3.0, 1, num) < 0);
	}
}

/* eps = inf: the clipped mean, to the grid.  Each row loses less than one
 * grid unit per coordinate to truncation, so after dividing by n the
 * answer is within 2^-k of the exact mean (plus the kernel's relative
 * rounding margin, far smaller). */
static void test_noiseless_is_clipped_mean(void **state)
{
	dp_simrng r;

	(void)state;
	dp_simrng_seed(&r, 1);
	for (int m = 0; m < 3; m++) {
		for (size_t n = 1; n <= 2001; n += 250) {
			dp_dataset ds;
			double theta[3], grad[3], clip = 1.5;
			long double ex[3];
			dp_query_info info = { .grid_k = -1, .scale_b = -1, .dropped = 9 };
			int k;

			make_ds(&r, &ds, n, m);
			for (int q = 0; q < 3; q++)
				theta[q] = rnd_unif(&r) - 0.5;
			assert_int_equal(dp_query_answer(m, &ds, theta, clip, INFINITY, NULL, grad,
							 &info), 0);
			assert_int_equal(dp_noise_grid_exponent(n, clip, INFINITY, &k), 0);
			assert_int_equal(info.grid_k, k);
			assert_float_equal(info.scale_b, 0.0, 0);
			assert_int_equal(info.dropped, 0);
			exact_clipped_mean(m, &ds, theta, clip, ex);
			for (int q = 0; q < 3; q++) {
				assert_true(fabsl((long double)grad[q] - ex[q]) <=
					    ldexpl(1.0L, -k) + 1e-12L * clip);
				/* the clipped mean has L1 norm <= clip per row */
				assert_true(fabs(grad[q]) <= clip);
			}
			dp_dataset_free(&ds);
		}
	}
}

/* With noise: N answers at a fixed theta.  The mean approaches the
 * noiseless answer and the variance of each coordinate is that of the
 * discrete Laplace with t = 2 clip 2^k / eps grid units, 2a/(1-a)^2 with
 * a = e^(-1/t), scaled by (2^-k / n)^2 -- which equals 2 b^2 up to a
 * relative 1/(12 t^2) (t is about 2^45 here), b = 2 clip/(n eps). */
static void test_noise_moments(void **state)
{
	const size_t N = 200000, n = 40;
	const double clip = 1.0, eps = 2.0;
	dp_simrng r, rs;
	dp_bitsource src;
	dp_dataset ds;
	double theta[3] = { 0.3, -0.2, 0.1 }, mu[3], grad[3];
	long double s1[3] = { 0 }, s2[3] = { 0 };
	dp_query_info info;

	(void)state;
	dp_simrng_seed(&r, 2);
	make_ds(&r, &ds, n, DP_MODEL_LINEAR);
	assert_int_equal(dp_query_answer(DP_MODEL_LINEAR, &ds, theta, clip, INFINITY, NULL, mu,
					 NULL), 0);
	dp_simrng_seed(&rs, seed);
	src = dp_simrng_bitsource(&rs);
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(dp_query_answer(DP_MODEL_LINEAR, &ds, theta, clip, eps, &src, grad,
						 &info), 0);
		for (int q = 0; q < 3; q++) {
			long double d = (long double)grad[q] - mu[q];
			s1[q] += d;
			s2[q] += d * d;
		}
	}
	double b = dp_query_scale(n, clip, eps);
	assert_float_equal(info.scale_b, b, 1e-17);
	double t = ldexp(2.0 * clip, info.grid_k) / eps;
	double a = exp(-1.0 / t), em1 = expm1(-1.0 / t);
	double var = 2.0 * a / (em1 * em1) * pow(ldexp(1.0, -info.grid_k) / (double)n, 2);
	assert_float_equal(var, 2 * b * b, 1e-9 * var);
	for (int q = 0; q < 3; q++) {
		long double mean = s1[q] / N;
		long double v = s2[q] / N - mean * mean;
		/* SE of the mean: sqrt(var / N); of the variance of Laplace
		 * noise: sqrt((mu4 - var^2) / N) = sqrt(20 b^4 / N) */
		double se_mean = sqrt(var / N), se_var = sqrt(20.0 * pow(b, 4) / N);

		if (fabsl(mean) > 6 * se_mean || fabsl(v - var) > 6 * se_var)
			fail_msg("seed %" PRIu64 " coordinate %d: mean %Lg (6 SE %g), var %Lg vs %g (6 SE %g)",
				 seed, q, mean, 6 * se_mean, v, var, 6 * se_var);
	}
	dp_dataset_free(&ds);
}

/* The L2-clipped mean by definition, in long double, no grid. */
static void exact_l2_clipped_mean(dp_model m, const dp_dataset *ds, const double *theta,
				  double clip, long double *out)
{
	size_t n = ds->n, p = ds->p;

	for (size_t q = 0; q < p; q++)
		out[q] = 0;
	for (size_t j = 0; j < n; j++) {
		const double *x = ds->x + j * p;
		long double t = 0, l2 = 0;

		for (size_t q = 0; q < p; q++) {
			t += (long double)x[q] * theta[q];
			l2 += (long double)x[q] * x[q];
		}
		l2 = sqrtl(l2);
		long double c = dp_model_coef(m, (double)t, ds->y[j]);
		long double s = fabsl(c) * l2 > clip ? clip / (fabsl(c) * l2) : 1.0L;
		for (size_t q = 0; q < p; q++)
			out[q] += s * c * x[q];
	}
	for (size_t q = 0; q < p; q++)
		out[q] /= n;
}

/* Gaussian without noise (rho = inf): the mean of the gradients clipped in
 * L2, within one grid step per coordinate, on the grid of
 * dp_noise_grid_exponent_l2. */
static void test_gauss_noiseless_is_l2_clipped_mean(void **state)
{
	dp_simrng r;

	(void)state;
	dp_simrng_seed(&r, 3);
	for (int m = 0; m < 3; m++) {
		for (size_t n = 1; n <= 2001; n += 250) {
			dp_dataset ds;
			double theta[3], grad[3], clip = 0.7;
			long double ex[3], l2 = 0;
			dp_query_info info = { .grid_k = -1, .sigma = -1, .dropped = 9 };
			int k;

			make_ds(&r, &ds, n, m);
			for (int q = 0; q < 3; q++)
				theta[q] = rnd_unif(&r) - 0.5;
			assert_int_equal(dp_query_answer_mech(m, &ds, theta, clip, DP_MECH_GAUSSIAN,
							      INFINITY, NULL, grad, &info), 0);
			assert_int_equal(dp_noise_grid_exponent_l2(n, clip, 0.0, &k), 0);
			assert_int_equal(info.grid_k, k);
			assert_float_equal(info.sigma, 0.0, 0);
			assert_float_equal(info.scale_b, 0.0, 0);
			exact_l2_clipped_mean(m, &ds, theta, clip, ex);
			for (int q = 0; q < 3; q++) {
				assert_true(fabsl((long double)grad[q] - ex[q]) <=
					    ldexpl(1.0L, -k) + 1e-12L * clip);
				l2 += (long double)grad[q] * grad[q];
			}
			/* a mean of rows of L2 norm <= clip */
			assert_true(sqrtl(l2) <= clip);
			dp_dataset_free(&ds);
		}
	}
}

/* Gaussian with noise: N answers at a fixed theta.  Each coordinate's noise
 * must have mean 0 and the variance of sigma = Delta_2 / sqrt(2 rho) for
 * Delta_2 = 2 clip / n (the formula of docs/zcdp.md §1 written out here,
 * not taken from the code); the discrete Gaussian's variance differs from
 * sigma^2 by a relative e^(-2 pi^2 sigma_u^2) or so, nothing at the
 * sigma_u of about 2^40 grid steps used here.  Thresholds: 6 standard
 * errors (SE of a normal sample's variance sqrt(2/N) var), a false failure
 * below 2e-9 per check, 6 checks. */
static void test_gauss_noise_moments(void **state)
{
	const size_t N = 50000, n = 40;
	const double clip = 1.0, rho = 0.05;
	dp_simrng r, rs;
	dp_bitsource src;
	dp_dataset ds;
	double theta[3] = { 0.3, -0.2, 0.1 }, mu[3], grad[3];
	long double s1[3] = { 0 }, s2[3] = { 0 };
	dp_query_info info;

	(void)state;
	dp_simrng_seed(&r, 4);
	make_ds(&r, &ds, n, DP_MODEL_LINEAR);
	assert_int_equal(dp_query_answer_mech(DP_MODEL_LINEAR, &ds, theta, clip, DP_MECH_GAUSSIAN,
					      INFINITY, NULL, mu, NULL), 0);
	dp_simrng_seed(&rs, seed);
	src = dp_simrng_bitsource(&rs);
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(dp_query_answer_mech(DP_MODEL_LINEAR, &ds, theta, clip,
						      DP_MECH_GAUSSIAN, rho, &src, grad, &info), 0);
		for (int q = 0; q < 3; q++) {
			long double d = (long double)grad[q] - mu[q];
			s1[q] += d;
			s2[q] += d * d;
		}
	}
	double sigma = 2.0 * clip / (double)n / sqrt(2.0 * rho), var = sigma * sigma;

	/* the released sigma: the smallest with rho <= 0.05, to the last bits */
	assert_float_equal(info.sigma, sigma, 1e-12 * sigma);
	for (int q = 0; q < 3; q++) {
		long double mean = s1[q] / N;
		long double v = s2[q] / N - mean * mean;
		double se_mean = sqrt(var / N), se_var = sqrt(2.0 / N) * var;

		if (fabsl(mean) > 6 * se_mean || fabsl(v - var) > 6 * se_var)
			fail_msg("seed %" PRIu64 " coordinate %d: mean %Lg (6 SE %g), var %Lg vs %g (6 SE %g)",
				 seed, q, mean, 6 * se_mean, v, var, 6 * se_var);
	}
	dp_dataset_free(&ds);
}

/* dp_query_answer_mech with Laplace is dp_query_answer, bit for bit, on
 * the same random words; unknown mechanisms and a rho <= 0 are refused with
 * grad untouched. */
static void test_mech_laplace_same_and_refusals(void **state)
{
	dp_simrng r, r1, r2;
	dp_bitsource s1, s2;
	dp_dataset ds;
	double theta[3] = { 0.2, 0.1, -0.4 }, a[3], b[3], g[3] = { 7, 7, 7 };

	(void)state;
	dp_simrng_seed(&r, 5);
	make_ds(&r, &ds, 300, DP_MODEL_LOGISTIC);
	for (int i = 0; i < 50; i++) {
		dp_simrng_seed(&r1, seed + (uint64_t)i);
		dp_simrng_seed(&r2, seed + (uint64_t)i);
		s1 = dp_simrng_bitsource(&r1);
		s2 = dp_simrng_bitsource(&r2);
		assert_int_equal(dp_query_answer(DP_MODEL_LOGISTIC, &ds, theta, 1.0, 0.5, &s1, a,
						 NULL), 0);
		assert_int_equal(dp_query_answer_mech(DP_MODEL_LOGISTIC, &ds, theta, 1.0,
						      DP_MECH_LAPLACE, 0.5, &s2, b, NULL), 0);
		assert_memory_equal(a, b, sizeof(a));
	}
	assert_int_equal(dp_query_answer_mech(DP_MODEL_LOGISTIC, &ds, theta, 1.0, (dp_mech)2, 0.5,
					      &s1, g, NULL), DP_EINVAL);
	assert_int_equal(dp_query_answer_mech(DP_MODEL_LOGISTIC, &ds, theta, 1.0,
					      DP_MECH_GAUSSIAN, 0.0, &s1, g, NULL), DP_EINVAL);
	assert_int_equal(dp_query_answer_mech(DP_MODEL_LOGISTIC, &ds, theta, 1.0,
					      DP_MECH_GAUSSIAN, NAN, &s1, g, NULL), DP_EINVAL);
	assert_int_equal(dp_query_answer_mech(DP_MODEL_LOGISTIC, &ds, theta, 1.0,
					      DP_MECH_GAUSSIAN, 0.1, NULL, g, NULL), DP_EINVAL);
	for (int q = 0; q < 3; q++)
		assert_float_equal(g[q], 7.0, 0);
	assert_string_equal(dp_query_mech_name(DP_MECH_GAUSSIAN), "gaussian");
	assert_string_equal(dp_query_mech_name((dp_mech)9), "?");
	dp_dataset_free(&ds);
}

static void test_invalid_untouched(void **state)
{
	dp_simrng r, rs;
	dp_dataset ds, empty = { 0 };
	dp_bitsource src;
	double theta[3] = { 0.1, 0.2, 0.3 }, grad[3] = { 7, 8, 9 };
	dp_query_info info = { .grid_k = 123, .scale_b = 4.5, .dropped = 6 };

	(void)state;
	dp_simrng_seed(&r, 3);
	dp_simrng_seed(&rs, 4);
	src = dp_simrng_bitsource(&rs);
	make_ds(&r, &ds, 10, DP_MODEL_LINEAR);
	const double bad_eps[] = { 0.0, -1.0, NAN, -INFINITY };
	for (size_t i = 0; i < sizeof(bad_eps) / sizeof(bad_eps[0]); i++)
		assert_int_equal(dp_query_answer(DP_MODEL_LINEAR, &ds, theta, 1.0, bad_eps[i], &src,
						 grad, &info), DP_EINVAL);
	const double bad_clip[] = { 0.0, -1.0, NAN, INFINITY };
	for (size_t i = 0; i < sizeof(bad_clip) / sizeof(bad_clip[0]); i++)
		assert_int_equal(dp_query_answer(DP_MODEL_LINEAR, &ds, theta, bad_clip[i], 1.0, &src,
						 grad, &info), DP_EINVAL);
	theta[1] = NAN;
	assert_int_equal(dp_query_answer(DP_MODEL_LINEAR, &ds, theta, 1.0, 1.0, &src, grad, &info),
			 DP_EINVAL);
	theta[1] = -INFINITY;
	assert_int_equal(dp_query_answer(DP_MODEL_LINEAR, &ds, theta, 1.0, INFINITY, NULL, grad,
					 &info), DP_EINVAL);
	theta[1] = 0.2;
	empty.p = 3;
	assert_int_equal(dp_query_answer(DP_MODEL_LINEAR, &empty, theta, 1.0, 1.0, &src, grad,
					 &info), DP_EINVAL);
	/* finite epsilon needs a source */
	assert_int_equal(dp_query_answer(DP_MODEL_LINEAR, &ds, theta, 1.0, 1.0, NULL, grad, &info),
			 DP_EINVAL);
	assert_float_equal(grad[0], 7, 0);
	assert_float_equal(grad[1], 8, 0);
	assert_float_equal(grad[2], 9, 0);
	assert_int_equal(info.grid_k, 123);
	assert_int_equal(info.dropped, 6);
	dp_dataset_free(&ds);
}

/* A source that serves `ok` fills and then fails. */
struct flaky {
	int ok, calls;
	dp_simrng r;
};

static int flaky_fill(void *ctx, void *buf, size_t len)
{
	struct flaky *f = ctx;

	if (f->calls++ >= f->ok)
		return DP_ERNG;
	dp_bitsource s = dp_simrng_bitsource(&f->r);
	return s.fill(s.ctx, buf, len);
}

static void test_failing_source_untouched(void **state)
{
	dp_simrng r;
	dp_dataset ds;
	double theta[3] = { 0.1, 0.2, 0.3 }, grad[3];

	(void)state;
	dp_simrng_seed(&r, 5);
	make_ds(&r, &ds, 50, DP_MODEL_LOGISTIC);
	/* fail at the first fill, then after some successful fills (part of
	 * the noise already drawn) */
	for (int ok = 0; ok < 6; ok++) {
		struct flaky f = { .ok = ok };
		dp_bitsource src = { .fill = flaky_fill, .ctx = &f };
		int err;

		dp_simrng_seed(&f.r, 6);
		grad[0] = 7;
		grad[1] = 8;
		grad[2] = 9;
		err = dp_query_answer(DP_MODEL_LOGISTIC, &ds, theta, 1.0, 0.5, &src, grad, NULL);
		if (err == 0) {
			/* enough fills for all three coordinates: a real answer */
			assert_true(f.calls <= ok);
			continue;
		}
		assert_int_equal(err, DP_ERNG);
		assert_float_equal(grad[0], 7, 0);
		assert_float_equal(grad[1], 8, 0);
		assert_float_equal(grad[2], 9, 0);
	}
	/* with zero successful fills it must have failed */
	struct flaky f0 = { .ok = 0 };
	dp_bitsource s0 = { .fill = flaky_fill, .ctx = &f0 };
	assert_int_equal(dp_query_answer(DP_MODEL_LOGISTIC, &ds, theta, 1.0, 0.5, &s0, grad, NULL),
			 DP_ERNG);
	dp_dataset_free(&ds);
}

/* A row with a non-finite gradient is dropped and counted in info, and
 * the answer is the clipped mean of the others over all n rows. */
static void test_dropped_counted(void **state)
{
	double x[6] = { 1, 2, 3, 4, 5, 6 }, y[3] = { 1, 2, 3 }, theta[2] = { 0.5, -0.5 };
	double grad[2], g2[2];
	dp_dataset ds;
	dp_query_info info;

	(void)state;
	assert_int_equal(dp_dataset_from_arrays(&ds, 3, 2, x, y, NULL), 0);
	assert_int_equal(dp_query_answer(DP_MODEL_LINEAR, &ds, theta, 100.0, INFINITY, NULL, g2,
					 &info), 0);
	assert_int_equal(info.dropped, 0);
	/* rows: c = 2(t - y); t = (-0.5, -0.5, -0.5), c = (-3, -5, -7);
	 * unclipped (|c| ||x||_1 <= 91 < 100): mean of c x = ((-3 - 15 - 35)/3,
	 * (-6 - 20 - 42)/3) = (-53/3, -68/3) */
	assert_float_equal(g2[0], -53.0 / 3, 1e-9);
	assert_float_equal(g2[1], -68.0 / 3, 1e-9);
	ds.x[2] = NAN;           /* row 1 (0-based) */
	ds.row_l1[1] = NAN;
	assert_int_equal(dp_query_answer(DP_MODEL_LINEAR, &ds, theta, 100.0, INFINITY, NULL, grad,
					 &info), 0);
	assert_int_equal(info.dropped, 1);
	assert_float_equal(grad[0], (-3.0 - 35.0) / 3, 1e-9);
	assert_float_equal(grad[1], (-6.0 - 42.0) / 3, 1e-9);
	dp_dataset_free(&ds);
}

int main(void)
{
	const char *s = getenv("DP_TEST_SEED");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scale),
		cmocka_unit_test(test_scale_rounds_up),
		cmocka_unit_test(test_noiseless_is_clipped_mean),
		cmocka_unit_test(test_noise_moments),
		cmocka_unit_test(test_gauss_noiseless_is_l2_clipped_mean),
		cmocka_unit_test(test_gauss_noise_moments),
		cmocka_unit_test(test_mech_laplace_same_and_refusals),
		cmocka_unit_test(test_invalid_untouched),
		cmocka_unit_test(test_failing_source_untouched),
		cmocka_unit_test(test_dropped_counted),
	};

	if (s != NULL)
		seed = strtoull(s, NULL, 0);
	printf("test_query: seed %" PRIu64 " (set DP_TEST_SEED to replay)\n", seed);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
