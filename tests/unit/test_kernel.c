/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for common/core/kernel.c: the privacy kernel dp_kernel_clipped_grid_sum
 * (docs/privacy.md §2) and the choice of its variant.
 *
 * Expected values come from a naive per-row reference written here: exact
 * scores on dyadic data (any summation order gives the same double), the
 * documented clipping rule per row, trunc(ldexp(v, k)) per coordinate,
 * sums in int64.  Every variant this CPU runs (generic, avx2, avx512,
 * forced with dp_kernel_select) is held to the same reference, bit for
 * bit.  No statistical tests here. */
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
#include "common/core/kernel.h"
#include "common/core/model.h"
#include "common/core/noise.h"
#include "tools/lib/simrng.h"

static const char *const variants[] = { "generic", "avx2", "avx512" };
#define DP_NVARIANTS (sizeof(variants) / sizeof(variants[0]))

/* Force variant v; 0 if this CPU cannot run it (skipped, not failed). */
static int use_variant(size_t v)
{
	return dp_kernel_select(variants[v]) == 0;
}

static uint64_t rnd_below(dp_simrng *r, uint64_t m)
{
	return dp_simrng_next(r) % m;
}

static double rnd_unif(dp_simrng *r)
{
	return (double)(dp_simrng_next(r) >> 11) * 0x1p-53;
}

/* Reference per the rule documented in kernel.c: scores t by a plain
 * sequential double sum (exact on dyadic data, and overflowing like the
 * kernel's on the huge rows of the drop test), c = coef(t, y), drop unless
 * c and ||x||_1 finite, clipm = clip (1 - (p + 8) 2^-52), a = c if
 * |c| ||x||_1 <= clipm else copysign(clipm / ||x||_1, c),
 * term = trunc(ldexp(a x_q, k)), int64 sums.  Counts rows clipped /
 * unclipped, and those whose |a 2^k| takes the kernel's slow order, for
 * the callers' coverage checks. */
struct ref {
	int64_t *sum;
	size_t dropped, clipped, unclipped, slow;
	int l2;         /* set by the caller: the L2 rule (row_l2, exact check) */
};

/* floor(M^2) for M = clip 2^k, exactly: M = mant 2^e, mant a 53-bit
 * integer. */
static unsigned __int128 floor_square(double clip, int k)
{
	int e;
	uint64_t mant = (uint64_t)ldexp(frexp(ldexp(clip, k), &e), 53);
	unsigned __int128 sq = (unsigned __int128)mant * mant;
	int sh = 2 * (e - 53);

	if (sh >= 0)
		return sq << sh;
	return -sh >= 128 ? 0 : sq >> -sh;
}

static unsigned __int128 square_norm(const int64_t *q, size_t p)
{
	unsigned __int128 s = 0;

	for (size_t i = 0; i < p; i++)
		s += (unsigned __int128)(q[i] < 0 ? -q[i] : q[i]) * (uint64_t)(q[i] < 0 ? -q[i] : q[i]);
	return s;
}

static void reference(dp_model m, const dp_dataset *ds, const double *theta, double clip, int k,
		      struct ref *out)
{
	size_t n = ds->n, p = ds->p;
	double clipm = clip * (1.0 - (double)(p + 8) * 0x1p-52);

	int64_t row[128];

	assert_true(p <= 128);
	memset(out->sum, 0, p * sizeof(int64_t));
	out->dropped = out->clipped = out->unclipped = out->slow = 0;
	for (size_t j = 0; j < n; j++) {
		const double *x = ds->x + j * p;
		double t = 0;
		long double l1 = 0;

		for (size_t q = 0; q < p; q++) {
			t += x[q] * theta[q];
			l1 += fabsl((long double)x[q]);
		}
		double c = dp_model_coef(m, t, ds->y[j]);
		double l = out->l2 ? ds->row_l2[j] : (double)l1, a;

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
		if (!(fabs(ldexp(a, k)) <= 0x1p900))
			out->slow++;
		for (size_t q = 0; q < p; q++)
			row[q] = (int64_t)trunc(ldexp(a * x[q], k));
		/* L2: the floating bound of docs/privacy.md §6 must make the
		 * kernel's exact check a no-op on these rows */
		if (out->l2 && square_norm(row, p) > floor_square(clip, k))
			fail_msg("row %zu: the L2 bound fails before the exact check", j);
		for (size_t q = 0; q < p; q++)
			out->sum[q] += row[q];
	}
}

/* Every variant the CPU runs returns the reference's sums and drop count
 * (sum is filled with junk first: the kernel must zero it). */
static void expect_reference(dp_model m, const dp_dataset *ds, const double *theta, double clip,
			     int k, const struct ref *ref, double *sum)
{
	for (size_t v = 0; v < DP_NVARIANTS; v++) {
		size_t dropped = 12345;

		if (!use_variant(v))
			continue;
		for (size_t q = 0; q < ds->p; q++)
			sum[q] = -7.0;
		if (ref->l2)
			assert_int_equal(dp_kernel_clipped_grid_sum_l2(m, ds, theta, clip, k, sum,
								       &dropped), 0);
		else
			assert_int_equal(dp_kernel_clipped_grid_sum(m, ds, theta, clip, k, sum,
								    &dropped), 0);
		if (dropped != ref->dropped)
			fail_msg("%s model %d n %zu p %zu k %d: dropped %zu != %zu", variants[v], m,
				 ds->n, ds->p, k, dropped, ref->dropped);
		for (size_t q = 0; q < ds->p; q++)
			if (!isfinite(sum[q]) || sum[q] != (double)ref->sum[q])
				fail_msg("%s model %d n %zu p %zu k %d q %zu: %.17g != %lld", variants[v],
					 m, ds->n, ds->p, k, q, sum[q], (long long)ref->sum[q]);
	}
	dp_kernel_select(NULL);
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

/* One dyadic case: data, theta, a clip in the middle of the gradient norms
 * (some rows clipped, some not) and the buffers for the sums. */
struct kcase {
	dp_dataset ds;
	double *theta, *sum, clip;
	struct ref ref;
};

static void kcase_init(struct kcase *c, dp_simrng *r, size_t n, size_t p, dp_model m)
{
	c->theta = malloc(p * sizeof(double));
	c->sum = malloc(p * sizeof(double));
	c->ref.sum = malloc(p * sizeof(int64_t));
	c->ref.l2 = 0;
	assert_true(c->theta != NULL && c->sum != NULL && c->ref.sum != NULL);
	c->clip = m == DP_MODEL_LINEAR ? 3.0 * (double)p : 0.6 * (double)p;
	dyadic_ds(r, &c->ds, n, p, m);
	dyadic_theta(r, c->theta, p, ldexp(1.0, -(int)ceil(0.5 * log2((double)p))));
}

static void kcase_free(struct kcase *c)
{
	dp_dataset_free(&c->ds);
	free(c->theta);
	free(c->sum);
	free(c->ref.sum);
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
				size_t n = ns[in], p = ps[ip];
				struct kcase c;
				int k;

				kcase_init(&c, &r, n, p, m);
				assert_int_equal(dp_noise_grid_exponent(n, c.clip, INFINITY, &k), 0);
				reference(m, &c.ds, c.theta, c.clip, k, &c.ref);
				total_clipped += c.ref.clipped;
				total_unclipped += c.ref.unclipped;
				expect_reference(m, &c.ds, c.theta, c.clip, k, &c.ref, c.sum);
				/* a coarser grid too */
				reference(m, &c.ds, c.theta, c.clip, 7, &c.ref);
				expect_reference(m, &c.ds, c.theta, c.clip, 7, &c.ref, c.sum);
				kcase_free(&c);
			}
		}
	}
	/* the data above exercised both sides of the clipping rule */
	assert_true(total_clipped > 1000);
	assert_true(total_unclipped > 1000);
	dp_kernel_select(NULL);
}

/* Semantics against exact clipping (long double, no margin), in L1 or
 * (l2) L2: each row's truncation loses less than one grid unit per
 * coordinate, and the margin changes a value by at most (p + 8) 2^-52
 * relative, so |sum - sum of exact clipped gradients 2^k| < n + tiny per
 * coordinate.  Also the bound |sum| <= n clip 2^k. */
static void close_to_exact(int l2, uint64_t seed, double clip)
{
	dp_simrng r;
	const size_t n = 999, p = 12;
	double theta[12], sum[12];
	dp_dataset ds;

	dp_simrng_seed(&r, seed);
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
		int k;
		if (l2)
			assert_int_equal(dp_noise_grid_exponent_l2(n, clip, 0.0, &k), 0);
		else
			assert_int_equal(dp_noise_grid_exponent(n, clip, INFINITY, &k), 0);

		long double ex[12] = { 0 };
		for (size_t j = 0; j < n; j++) {
			long double t = 0, nrm = 0;
			for (size_t q = 0; q < p; q++) {
				long double v = x[j * p + q];

				t += v * theta[q];
				nrm += l2 ? v * v : fabsl(v);
			}
			if (l2)
				nrm = sqrtl(nrm);
			long double c = dp_model_coef(m, (double)t, y[j]);
			long double s = fabsl(c) * nrm > clip ? clip / (fabsl(c) * nrm) : 1.0L;
			for (size_t q = 0; q < p; q++)
				ex[q] += ldexpl(s * c * x[j * p + q], k);
		}
		for (size_t v = 0; v < DP_NVARIANTS; v++) {
			if (!use_variant(v))
				continue;
			if (l2)
				assert_int_equal(dp_kernel_clipped_grid_sum_l2(m, &ds, theta, clip, k, sum,
									       NULL), 0);
			else
				assert_int_equal(dp_kernel_clipped_grid_sum(m, &ds, theta, clip, k, sum,
									    NULL), 0);
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
	dp_kernel_select(NULL);
}

static void test_grid_sum_close_to_exact_clipping(void **state)
{
	(void)state;
	close_to_exact(0, 77, 2.5);
}

static void test_l2_close_to_exact(void **state)
{
	(void)state;
	close_to_exact(1, 78, 1.5);
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
	for (size_t v = 0; v < DP_NVARIANTS; v++) {
		if (!use_variant(v))
			continue;
		assert_int_equal(dp_kernel_clipped_grid_sum(m, &ds, theta, clip, k, sum, NULL), 0);
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
	dp_kernel_select(NULL);
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
		size_t expect_drop = 0;

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
		expect_reference(m, &ds, th2, 1.5, 20, &ref, sum);
		dp_dataset_free(&ds);
		free(ref.sum);
	}
	dp_kernel_select(NULL);
}

/* Rows dropped for a non-finite gradient anywhere: in the vector groups of
 * every path (fused, blocked, each ragged end) and in the rows left over
 * (n mod W), on several grids; the other rows of a group with a dropped
 * row still count.  NaN or inf in x (row_l1 NaN or inf, as a loader
 * computes it); every model. */
static void test_grid_sum_drops_everywhere(void **state)
{
	static const size_t ps[] = { 1, 5, 8, 9, 10, 12, 17, 26, 33, 100 };
	static const size_t ns[] = { 7, 64, 515, 2053 };
	dp_simrng r;

	(void)state;
	dp_simrng_seed(&r, 31);
	for (size_t ip = 0; ip < sizeof(ps) / sizeof(ps[0]); ip++) {
		for (size_t in = 0; in < sizeof(ns) / sizeof(ns[0]); in++) {
			for (int m = 0; m < 3; m++) {
				size_t n = ns[in], p = ps[ip], ndrop = 0;
				struct kcase c;
				int k;

				kcase_init(&c, &r, n, p, m);
				for (size_t j = 0; j < n; j++) {
					if (rnd_below(&r, 9) != 0 && j != n - 1)
						continue;
					double bad = rnd_below(&r, 2) ? NAN : -INFINITY;

					c.ds.x[j * p + rnd_below(&r, p)] = bad;
					c.ds.row_l1[j] = fabs(bad);
					ndrop++;
				}
				assert_int_equal(dp_noise_grid_exponent(n, c.clip, INFINITY, &k), 0);
				const int ks[3] = { k, 7, 0 };
				for (int i = 0; i < 3; i++) {
					reference(m, &c.ds, c.theta, c.clip, ks[i], &c.ref);
					assert_int_equal(c.ref.dropped, ndrop);
					expect_reference(m, &c.ds, c.theta, c.clip, ks[i], &c.ref, c.sum);
				}
				kcase_free(&c);
			}
		}
	}
}

/* Rows dropped because theta makes their coefficient non-finite: the case
 * the learner controls, which the vector paths mask in place (kernel.inc.c,
 * group_scale) instead of sending the group to the scalar rule.
 * theta = (2^1023, 0, ...) on dyadic data: the score x_0 2^1023 is
 * infinite exactly when |x_0| >= 2 whatever the summation order (one
 * nonzero term; with two, an fma may keep finite what a product
 * overflows).  Linear: c = 2 (t - y) overflows from |x_0| >= 1, dropped
 * (about three quarters of the rows).  Logistic and svm have a
 * finite limit at +-inf, so a random half of their rows get y = 0 (any
 * finite y is the kernel's input): y t = 0 inf is NaN, dropped.  A random
 * pattern over the groups, plus a row with a NaN in x (its group still
 * takes the scalar rule).  Every variant agrees with the reference bit for
 * bit, on every path and ragged end. */
static void test_grid_sum_drops_by_theta(void **state)
{
	static const size_t ps[] = { 2, 5, 8, 9, 10, 12, 17, 33 };
	static const size_t ns[] = { 7, 64, 515, 2053 };
	dp_simrng r;

	(void)state;
	dp_simrng_seed(&r, 57);
	for (size_t ip = 0; ip < sizeof(ps) / sizeof(ps[0]); ip++) {
		for (size_t in = 0; in < sizeof(ns) / sizeof(ns[0]); in++) {
			for (int m = 0; m < 3; m++) {
				size_t n = ns[in], p = ps[ip];
				struct kcase c;
				int k;

				kcase_init(&c, &r, n, p, m);
				for (size_t q = 0; q < p; q++)
					c.theta[q] = q == 0 ? 0x1p1023 : 0.0;
				for (size_t j = 0; j < n && m != DP_MODEL_LINEAR; j++)
					if (rnd_below(&r, 2))
						c.ds.y[j] = 0.0;
				if (n > 100) {
					c.ds.x[(n / 3) * p] = NAN;
					c.ds.row_l1[n / 3] = NAN;
				}
				assert_int_equal(dp_noise_grid_exponent(n, c.clip, INFINITY, &k), 0);
				reference(m, &c.ds, c.theta, c.clip, k, &c.ref);
				if (n >= 64 && !(c.ref.dropped > n / 16))
					fail_msg("p %zu n %zu model %d: only %zu rows dropped", p, n, m,
						 c.ref.dropped);
				expect_reference(m, &c.ds, c.theta, c.clip, k, &c.ref, c.sum);
				kcase_free(&c);
			}
		}
	}
}

/* Rows whose scale a 2^k is above 2^900 take the slow order (ldexp after
 * the product; a 2^k itself overflows for the linear rows with |c| >= 2):
 * tiny rows (x ~ 2^-1000, dyadic, so scores stay exact) on the grid
 * 2^-1023, mixed with ordinary rows in the same groups. */
static void test_grid_sum_slow_rows(void **state)
{
	static const size_t ps[] = { 3, 8, 10, 33 };
	dp_simrng r;
	size_t total_slow = 0, total_fast = 0;

	(void)state;
	dp_simrng_seed(&r, 41);
	for (size_t ip = 0; ip < sizeof(ps) / sizeof(ps[0]); ip++) {
		for (int m = 0; m < 3; m++) {
			size_t n = 203, p = ps[ip];
			dp_dataset ds;
			double theta[33], sum[33];
			struct ref ref = { .sum = malloc(p * sizeof(int64_t)) };
			int k = 1023;
			double clip = ldexp(1.0, 52 - k - 8);    /* n clip 2^k <= 2^52 */

			dyadic_ds(&r, &ds, n, p, m);
			dyadic_theta(&r, theta, p, 1.0);
			for (size_t j = 0; j < n; j++) {
				if (j % 3 == 0)
					continue;
				ds.row_l1[j] = 0;
				for (size_t q = 0; q < p; q++) {
					ds.x[j * p + q] = ldexp(ds.x[j * p + q], -1000);
					ds.row_l1[j] += fabs(ds.x[j * p + q]);
				}
			}
			reference(m, &ds, theta, clip, k, &ref);
			total_slow += ref.slow;
			total_fast += n - ref.slow - ref.dropped;
			expect_reference(m, &ds, theta, clip, k, &ref, sum);
			dp_dataset_free(&ds);
			free(ref.sum);
		}
	}
	assert_true(total_slow > 1000);
	assert_true(total_fast > 500);
}

/* The variant in use is one of the three; forcing works for what the CPU
 * runs and fails cleanly otherwise; NULL returns to the choice made at
 * start, which DP_KERNEL_ISA caps. */
static void test_variant_choice(void **state)
{
	char start[16];
	int ran = 0;

	(void)state;
	assert_int_equal(dp_kernel_select(NULL), 0);
	snprintf(start, sizeof(start), "%s", dp_kernel_variant());
	assert_true(strcmp(start, "generic") == 0 || strcmp(start, "avx2") == 0 ||
		    strcmp(start, "avx512") == 0);
	assert_int_equal(dp_kernel_select("sse9"), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "sse9"));
	assert_string_equal(dp_kernel_variant(), start);
	for (size_t v = 0; v < DP_NVARIANTS; v++) {
		if (!use_variant(v))
			continue;
		assert_string_equal(dp_kernel_variant(), variants[v]);
		ran++;
	}
	/* the generic variant runs everywhere, and the one picked at start */
	assert_int_equal(dp_kernel_select("generic"), 0);
	assert_int_equal(dp_kernel_select(start), 0);
	assert_true(ran >= 1);
	setenv("DP_KERNEL_ISA", "generic", 1);
	assert_int_equal(dp_kernel_select(NULL), 0);
	assert_string_equal(dp_kernel_variant(), "generic");
	unsetenv("DP_KERNEL_ISA");
	assert_int_equal(dp_kernel_select(NULL), 0);
	/* no cap: the best this CPU runs, the last one forcing accepted */
	for (size_t v = DP_NVARIANTS; v-- > 0;) {
		if (dp_kernel_select(variants[v]) == 0) {
			assert_string_equal(variants[v], start);
			break;
		}
	}
	dp_kernel_select(NULL);
}

typedef int (*kernel_fn)(dp_model m, const dp_dataset *ds, const double *theta, double clip,
			 int k, double *sum, size_t *dropped);

static void invalid_args(kernel_fn kernel)
{
	double x[6] = { 1, 2, 3, 4, 5, 6 }, y[3] = { 1, -1, 1 }, theta[2] = { 0.1, 0.2 };
	double sum[2] = { 42.0, 43.0 };
	dp_dataset ds;
	size_t dropped = 99;

	assert_int_equal(dp_dataset_from_arrays(&ds, 3, 2, x, y, NULL), 0);
	assert_int_equal(kernel(DP_MODEL_LINEAR, &ds, theta, 0.0, 10, sum, &dropped), DP_EINVAL);
	assert_int_equal(kernel(DP_MODEL_LINEAR, &ds, theta, -1.0, 10, sum, &dropped), DP_EINVAL);
	assert_int_equal(kernel(DP_MODEL_LINEAR, &ds, theta, NAN, 10, sum, &dropped), DP_EINVAL);
	assert_int_equal(kernel(DP_MODEL_LINEAR, &ds, theta, INFINITY, 10, sum, &dropped), DP_EINVAL);
	theta[1] = NAN;
	assert_int_equal(kernel(DP_MODEL_LINEAR, &ds, theta, 1.0, 10, sum, &dropped), DP_EINVAL);
	theta[1] = INFINITY;
	assert_int_equal(kernel(DP_MODEL_LINEAR, &ds, theta, 1.0, 10, sum, &dropped), DP_EINVAL);
	theta[1] = 0.2;
	/* 3 rows * clip 1 * 2^51 > 2^52: the exact-sum guarantee would break */
	assert_int_equal(kernel(DP_MODEL_LINEAR, &ds, theta, 1.0, 51, sum, &dropped), DP_EINVAL);
	assert_float_equal(sum[0], 42.0, 0);
	assert_float_equal(sum[1], 43.0, 0);
	assert_int_equal(dropped, 99);
	/* 3 * 1 * 2^50 <= 2^52 is fine */
	assert_int_equal(kernel(DP_MODEL_LINEAR, &ds, theta, 1.0, 50, sum, &dropped), 0);
	assert_int_equal(dropped, 0);
	dp_dataset_free(&ds);
}

static void test_grid_sum_invalid(void **state)
{
	(void)state;
	invalid_args(dp_kernel_clipped_grid_sum);
}

/* ---- L2 clipping (docs/privacy.md §6 "Clipping in L2") ---------------- */

/* Every variant matches the per-row reference of the L2 rule bit for bit
 * (which also asserts that no row needed the exact check's shrinking):
 * dyadic data on every path and ragged end, rows dropped for NaN or inf in
 * x and for theta (2^1023 in one coordinate), and tiny rows that take the
 * slow order on the grid 2^-1023. */
static void test_l2_matches_reference(void **state)
{
	static const size_t ps[] = { 1, 3, 8, 9, 10, 17, 26, 33, 100 };
	static const size_t ns[] = { 7, 64, 515, 2053 };
	dp_simrng r;
	size_t clipped = 0, unclipped = 0, dropped = 0, slow = 0;

	(void)state;
	dp_simrng_seed(&r, 2323);
	for (size_t ip = 0; ip < sizeof(ps) / sizeof(ps[0]); ip++) {
		for (size_t in = 0; in < sizeof(ns) / sizeof(ns[0]); in++) {
			for (int m = 0; m < 3; m++) {
				size_t n = ns[in], p = ps[ip];
				struct kcase c;
				int k, variant = (int)rnd_below(&r, 4);

				kcase_init(&c, &r, n, p, m);
				c.ref.l2 = 1;
				c.clip /= sqrt((double)p);      /* L2 norms: about sqrt(p) smaller */
				for (size_t j = 0; j < n; j++) {
					double *x = c.ds.x + j * p;

					if (variant == 1 && rnd_below(&r, 9) == 0)
						x[rnd_below(&r, p)] = rnd_below(&r, 2) ? NAN : -INFINITY;
					if (variant == 3 && j % 3 != 0)
						for (size_t q = 0; q < p; q++)
							x[q] = ldexp(x[q], -1000);
					c.ds.row_l2[j] = dp_dataset_norm_l2(x, p);
				}
				if (variant == 2)
					for (size_t q = 0; q < p; q++)
						c.theta[q] = q == 0 ? 0x1p1023 : 0.0;
				if (variant == 3) {
					k = 1023;
					c.clip = ldexp(1.0, 52 - k - 12);
					dyadic_theta(&r, c.theta, p, 1.0);
				} else {
					assert_int_equal(dp_noise_grid_exponent_l2(n, c.clip, 0.0, &k), 0);
				}
				reference(m, &c.ds, c.theta, c.clip, k, &c.ref);
				clipped += c.ref.clipped;
				unclipped += c.ref.unclipped;
				dropped += c.ref.dropped;
				slow += c.ref.slow;
				expect_reference(m, &c.ds, c.theta, c.clip, k, &c.ref, c.sum);
				if (variant == 0) {
					reference(m, &c.ds, c.theta, c.clip, 7, &c.ref);
					expect_reference(m, &c.ds, c.theta, c.clip, 7, &c.ref, c.sum);
				}
				kcase_free(&c);
			}
		}
	}
	/* every side of the rule was exercised */
	if (clipped < 1000 || unclipped < 1000 || dropped < 1000 || slow < 500)
		fail_msg("clipped %zu unclipped %zu dropped %zu slow %zu", clipped, unclipped, dropped,
			 slow);
	dp_kernel_select(NULL);
}

/* One adversarial row (1 <= p <= 40) of the kind `kind`, and the y that
 * puts its linear gradient (theta = 0: c = -2y) where `kind` wants it. */
static double adversarial_row(dp_simrng *r, int kind, size_t p, double clip, double *x)
{
	int sc = 0;

	switch (kind) {
	case 0: sc = 0; break;                 /* ordinary */
	case 1: sc = 500; break;               /* huge, vector path */
	case 2: sc = 650; break;               /* huge, above lmax: scalar rule */
	case 3: sc = -500; break;              /* tiny */
	case 4: sc = -1000; break;             /* tinier: slow order */
	default: break;
	}
	for (size_t q = 0; q < p; q++)
		x[q] = (rnd_unif(r) - 0.5) * ldexp(1.0, (int)rnd_below(r, 40) - 20 + sc);
	if (kind == 5) {                       /* one-hot */
		for (size_t q = 0; q < p; q++)
			x[q] = 0.0;
		x[rnd_below(r, p)] = ldexp(1.0 + rnd_unif(r), (int)rnd_below(r, 80) - 40);
	}
	if (kind == 6)                         /* all equal: norm sqrt(p) v */
		for (size_t q = 0; q < p; q++)
			x[q] = x[0];
	double l = dp_dataset_norm_l2(x, p);
	/* |c| ||x|| a hair above or below clip, or far above */
	int hair = (int)rnd_below(r, 9) - 4;
	double y = rnd_below(r, 4) == 0 ? -1e6 * clip / l : -0.5 * clip / l * (1.0 + hair * 0x1p-52);

	return isfinite(y) ? y : -0x1p1020;   /* the tiniest rows: as far as y goes */
}

/* The bound on the integers actually added, exactly: single rows with
 * clip 2^k in [2^51, 2^52) (a relative excess of one ulp is a whole grid
 * unit there), then 8 copies of a row so that the vector groups take it
 * (sum = 8 q).  Ordinary, huge, tiny, one-hot and equal-coordinate rows,
 * |c| ||x|| within 4 ulps of clip; every variant. */
static void test_l2_row_bound(void **state)
{
	dp_simrng r;
	double x[8 * 40], y[8], theta[40] = { 0 }, sum[40];
	size_t checked = 0;

	(void)state;
	dp_simrng_seed(&r, 808);
	for (int it = 0; it < 6000; it++) {
		size_t copies = it % 3 == 0 ? 8 : 1, p = 1 + rnd_below(&r, 40);
		double clip = ldexp(1.0 + rnd_unif(&r), copies == 1 ? 11 : (int)rnd_below(&r, 10) - 5);
		int k = 40;
		dp_dataset ds;

		if (copies == 8)
			assert_int_equal(dp_noise_grid_exponent_l2(8, clip, 0.0, &k), 0);
		y[0] = adversarial_row(&r, (int)rnd_below(&r, 7), p, clip, x);
		for (size_t c = 1; c < copies; c++) {
			memcpy(x + c * p, x, p * sizeof(double));
			y[c] = y[0];
		}
		assert_int_equal(dp_dataset_from_arrays(&ds, copies, p, x, y, NULL), 0);
		unsigned __int128 m2 = floor_square(clip, k);
		for (size_t v = 0; v < DP_NVARIANTS; v++) {
			int64_t q[40];

			if (!use_variant(v))
				continue;
			assert_int_equal(dp_kernel_clipped_grid_sum_l2(DP_MODEL_LINEAR, &ds, theta, clip, k,
								       sum, NULL), 0);
			for (size_t i = 0; i < p; i++) {
				q[i] = (int64_t)sum[i] / (int64_t)copies;
				assert_true((double)(q[i] * (int64_t)copies) == sum[i]);
			}
			if (square_norm(q, p) > m2)
				fail_msg("it %d p %zu: the L2 bound fails", it, p);
			checked++;
		}
		dp_dataset_free(&ds);
	}
	assert_true(checked >= 6000);
	dp_kernel_select(NULL);
}

/* Why the check exists: a row whose naive scale overshoots.  x = (N, 1)
 * with fl(sqrt(N^2 + 1)) below the true norm, clip = that double, k = 0,
 * and a gradient far above clip: a = clip / ||x|| computed naively is
 * exactly 1, so q = (N, 1) with sum q^2 = N^2 + 1 > clip^2.  The kernel's
 * integers satisfy the bound on every variant. */
static void test_l2_naive_overshoots(void **state)
{
	double x[2], y[1] = { -1e6 }, theta[2] = { 0, 0 }, sum[2];
	double n0 = 0;
	dp_dataset ds;

	(void)state;
	for (double nn = 1000003; nn < 1001003; nn++) {
		double l = sqrt(nn * nn + 1);
		int e;
		uint64_t mant = (uint64_t)ldexp(frexp(l, &e), 53);
		/* l^2 = mant^2 2^(2e - 106) < nn^2 + 1 ? (here 2e - 106 < 0) */
		unsigned __int128 lhs = (unsigned __int128)mant * mant;
		unsigned __int128 rhs = ((unsigned __int128)(uint64_t)(nn * nn + 1)) << (106 - 2 * e);

		if (lhs < rhs) {
			n0 = nn;
			break;
		}
	}
	assert_true(n0 > 0);
	x[0] = n0;
	x[1] = 1;
	double clip = sqrt(n0 * n0 + 1);
	/* the naive rule */
	double a = clip / sqrt(x[0] * x[0] + x[1] * x[1]);
	int64_t naive[2] = { (int64_t)trunc(a * x[0]), (int64_t)trunc(a * x[1]) };
	unsigned __int128 m2 = floor_square(clip, 0);
	assert_true(a == 1.0);
	assert_true(square_norm(naive, 2) > m2);

	assert_int_equal(dp_dataset_from_arrays(&ds, 1, 2, x, y, NULL), 0);
	for (size_t v = 0; v < DP_NVARIANTS; v++) {
		if (!use_variant(v))
			continue;
		assert_int_equal(dp_kernel_clipped_grid_sum_l2(DP_MODEL_LINEAR, &ds, theta, clip, 0, sum,
							       NULL), 0);
		int64_t q[2] = { (int64_t)sum[0], (int64_t)sum[1] };
		assert_true(square_norm(q, 2) <= m2);
		assert_true(q[0] == (int64_t)n0 - 1 && q[1] == 0);
	}
	dp_kernel_select(NULL);
	dp_dataset_free(&ds);
}

/* The exact check itself: rows the scalar rule takes (norm above 2^600, or
 * any row when clip < 2^-400) with row_l2 understated by a factor 2, as a
 * broken floating bound would, come out shrunk to sum q^2 <= (clip 2^k)^2
 * but not to zero; the same on every variant (the shrinking is one
 * function of the row); ordinary rows beside them unaffected. */
static void test_l2_exact_check_shrinks(void **state)
{
	dp_simrng r;
	const size_t n = 37, p = 5;
	double x[37 * 5], y[37], theta[5] = { 0 }, sum[5], first[5];

	(void)state;
	dp_simrng_seed(&r, 4242);
	for (int tiny = 0; tiny < 2; tiny++) {
		dp_dataset ds;
		double clip = tiny ? 0x1p-420 : 3.0;
		int k;

		for (size_t j = 0; j < n; j++) {
			for (size_t q = 0; q < p; q++)
				x[j * p + q] = ldexp(rnd_unif(&r) - 0.5, j % 2 && !tiny ? 700 : 0);
			y[j] = -1e300;         /* every gradient far above clip */
		}
		assert_int_equal(dp_dataset_from_arrays(&ds, n, p, x, y, NULL), 0);
		assert_int_equal(dp_noise_grid_exponent_l2(n, clip, 0.0, &k), 0);
		if (tiny)
			k = 460;        /* clip 2^k = 2^40 (the cap of 40 would make it 2^-380) */
		unsigned __int128 m2 = floor_square(clip, k);
		for (size_t j = 0; j < n; j++)
			if (j % 2 || tiny)
				ds.row_l2[j] *= 0.5;
		for (size_t v = 0; v < DP_NVARIANTS; v++) {
			if (!use_variant(v))
				continue;
			/* one row at a time: each must meet the bound alone */
			for (size_t j = 0; j < n; j++) {
				dp_dataset one = ds;
				int64_t q[5];

				one.n = 1;
				one.x = ds.x + j * p;
				one.y = ds.y + j;
				one.row_l1 = ds.row_l1 + j;
				one.row_l2 = ds.row_l2 + j;
				assert_int_equal(dp_kernel_clipped_grid_sum_l2(DP_MODEL_LINEAR, &one, theta,
									       clip, k, sum, NULL), 0);
				for (size_t i = 0; i < p; i++)
					q[i] = (int64_t)sum[i];
				if (square_norm(q, p) > m2)
					fail_msg("tiny %d variant %zu row %zu", tiny, v, j);
				if (j % 2 || tiny)   /* shrunk, not zeroed: > (M/4)^2 */
					assert_true(square_norm(q, p) > m2 / 16);
			}
			/* all rows together: the same sums on every variant */
			assert_int_equal(dp_kernel_clipped_grid_sum_l2(DP_MODEL_LINEAR, &ds, theta, clip, k,
								       sum, NULL), 0);
			if (v == 0)
				memcpy(first, sum, sizeof(first));
			assert_memory_equal(first, sum, sizeof(first));
		}
		dp_dataset_free(&ds);
	}
	dp_kernel_select(NULL);
}

/* The L1 kernel's argument checks hold for the L2 one. */
static void test_l2_invalid(void **state)
{
	(void)state;
	invalid_args(dp_kernel_clipped_grid_sum_l2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grid_sum_matches_reference),
		cmocka_unit_test(test_grid_sum_close_to_exact_clipping),
		cmocka_unit_test(test_grid_sum_row_l1_bound),
		cmocka_unit_test(test_grid_sum_drops),
		cmocka_unit_test(test_grid_sum_drops_everywhere),
		cmocka_unit_test(test_grid_sum_drops_by_theta),
		cmocka_unit_test(test_grid_sum_slow_rows),
		cmocka_unit_test(test_grid_sum_invalid),
		cmocka_unit_test(test_variant_choice),
		cmocka_unit_test(test_l2_matches_reference),
		cmocka_unit_test(test_l2_row_bound),
		cmocka_unit_test(test_l2_naive_overshoots),
		cmocka_unit_test(test_l2_exact_check_shrinks),
		cmocka_unit_test(test_l2_close_to_exact),
		cmocka_unit_test(test_l2_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
