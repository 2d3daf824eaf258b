/* SPDX-License-Identifier: Apache-2.0 */
/* Principal components (tools/lib/pca.c): known answers, the sign rule,
 * blocks larger than one dsyrk call checked against a direct computation,
 * the order points are asked for, and errors from the point callback. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "tools/lib/pca.h"

/* cmocka 1.1 compares floats only in single precision. */
#define assert_near(a, b, eps)                                                                    \
	do {                                                                                      \
		double a_ = (a), b_ = (b);                                                        \
		if (!(fabs(a_ - b_) <= (eps)))                                                    \
			fail_msg("%s = %.17g, expected %.17g (tolerance %g)", #a, a_, b_,         \
				 (double)(eps));                                                  \
	} while (0)

/* Points stored row-major, handed out by the callback; it records the
 * order it is called in and can fail at one call. */
struct points {
	const double *x;
	size_t d;
	size_t calls;
	size_t *order;        /* NULL: not recorded */
	size_t fail_at;       /* SIZE_MAX: never */
};

static int point(void *ctx, size_t i, double *z)
{
	struct points *p = ctx;

	if (p->calls == p->fail_at)
		return dp_error_set(DP_EFORMAT, "point %zu is bad", i);
	if (p->order != NULL)
		p->order[p->calls] = i;
	p->calls++;
	memcpy(z, p->x + i * p->d, p->d * sizeof(*z));
	return 0;
}

static void test_known_2d(void **state)
{
	/* a = 1,2,3,4 and b = 1,3,2,4: both have mean 2.5 and variance 5/3,
	 * covariance 4/3.  [[5/3, 4/3], [4/3, 5/3]] has eigenvalues 3 and 1/3
	 * with eigenvectors (1,1)/sqrt2 and (1,-1)/sqrt2 (sign rule: the
	 * largest |entry| positive, the first one on ties). */
	const double x[] = { 1, 1, 2, 3, 3, 2, 4, 4 };
	struct points pts = { x, 2, 0, NULL, SIZE_MAX };
	const double r = 1.0 / sqrt(2.0);
	dp_pca pca = { 0 };

	assert_int_equal(dp_pca_compute(4, 2, 2, point, &pts, &pca), 0);
	assert_int_equal(pca.d, 2);
	assert_int_equal(pca.k, 2);
	assert_near(pca.mean[0], 2.5, 0);
	assert_near(pca.mean[1], 2.5, 0);
	assert_near(pca.var[0], 3.0, 1e-12);
	assert_near(pca.var[1], 1.0 / 3.0, 1e-12);
	assert_near(pca.vec[0], r, 1e-12);
	assert_near(pca.vec[1], r, 1e-12);
	assert_near(pca.vec[2], r, 1e-12);
	assert_near(pca.vec[3], -r, 1e-12);
	dp_pca_free(&pca);
	assert_null(pca.mean);
	dp_pca_free(&pca); /* a zeroed dp_pca is allowed */

	/* only the top component */
	pts.calls = 0;
	assert_int_equal(dp_pca_compute(4, 2, 1, point, &pts, &pca), 0);
	assert_int_equal(pca.k, 1);
	assert_near(pca.var[0], 3.0, 1e-12);
	assert_near(pca.vec[1], r, 1e-12);
	dp_pca_free(&pca);
}

static void test_sign_rule_and_zeros(void **state)
{
	/* Points on the line b = 7 - 3a (a = 1, 2, 4): the top component is
	 * (1, -3)/sqrt10 up to sign; the entry largest in magnitude (the second)
	 * is made positive: (-1, 3)/sqrt10.  The other eigenvalue is 0 (stored
	 * as 0 if rounding makes it negative).  The third coordinate is
	 * constant: its entries are exactly 0, never -0. */
	const double x[] = { 1, 4, 9, 2, 1, 9, 4, -5, 9 };
	struct points pts = { x, 3, 0, NULL, SIZE_MAX };
	const double r = 1.0 / sqrt(10.0);
	dp_pca pca = { 0 };

	assert_int_equal(dp_pca_compute(3, 3, 3, point, &pts, &pca), 0);
	assert_near(pca.vec[0], -r, 1e-12);
	assert_near(pca.vec[1], 3 * r, 1e-12);
	assert_true(pca.vec[2] == 0.0 && !signbit(pca.vec[2]));
	for (size_t k = 0; k < 3; k++) {
		double big = 0.0;

		assert_true(pca.var[k] >= 0.0);
		for (size_t i = 0; i < 3; i++) {
			double v = pca.vec[k * 3 + i];

			if (v == 0.0)
				assert_false(signbit(v));
			if (fabs(v) > fabs(big) + 1e-12)
				big = v;
		}
		assert_true(big > 0.0);
	}
	assert_near(pca.var[1], 0.0, 1e-12);
	assert_near(pca.var[2], 0.0, 1e-12);
	dp_pca_free(&pca);
}

/* A small deterministic generator, so that the test needs no seed. */
static double lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005u + 1442695040888963407u;
	return (double)(*s >> 11) / 9007199254740992.0 - 0.5;
}

static void test_blocks_against_direct(void **state)
{
	/* 1300 points (more than two dsyrk blocks) in 4 correlated dimensions:
	 * the mean and, for each component, C v = lambda v against the
	 * covariance computed directly; unit and orthogonal components;
	 * eigenvalues in decreasing order.  Every point is asked for twice, in
	 * order 0..m-1 each time. */
	enum { M = 1300, D = 4 };
	double *x = malloc(M * D * sizeof(*x));
	size_t *order = malloc(2 * M * sizeof(*order));
	double mean[D] = { 0 }, cov[D][D] = { { 0 } };
	struct points pts = { x, D, 0, order, SIZE_MAX };
	dp_pca pca = { 0 };
	uint64_t seed = 42;

	assert_non_null(x);
	assert_non_null(order);
	for (size_t i = 0; i < M; i++) {
		double u = lcg(&seed), v = lcg(&seed), w = lcg(&seed);

		x[i * D + 0] = 3 * u + 1;
		x[i * D + 1] = u + 0.5 * v - 2;
		x[i * D + 2] = 0.2 * w;
		x[i * D + 3] = v - u + 0.1 * w + 7;
	}
	for (size_t i = 0; i < M; i++)
		for (size_t a = 0; a < D; a++)
			mean[a] += x[i * D + a] / M;
	for (size_t i = 0; i < M; i++)
		for (size_t a = 0; a < D; a++)
			for (size_t b = 0; b < D; b++)
				cov[a][b] += (x[i * D + a] - mean[a]) * (x[i * D + b] - mean[b]) /
					     (M - 1);
	assert_int_equal(dp_pca_compute(M, D, D, point, &pts, &pca), 0);
	assert_int_equal(pts.calls, 2 * M);
	for (size_t c = 0; c < 2 * M; c++)
		assert_int_equal(order[c], c % M);
	for (size_t a = 0; a < D; a++)
		assert_near(pca.mean[a], mean[a], 1e-12);
	for (size_t k = 0; k < D; k++) {
		const double *v = pca.vec + k * D;

		if (k > 0)
			assert_true(pca.var[k] <= pca.var[k - 1]);
		for (size_t a = 0; a < D; a++) {
			double cv = 0.0;

			for (size_t b = 0; b < D; b++)
				cv += cov[a][b] * v[b];
			assert_near(cv, pca.var[k] * v[a], 1e-10);
		}
		for (size_t j = 0; j <= k; j++) {
			double dot = 0.0;

			for (size_t a = 0; a < D; a++)
				dot += v[a] * pca.vec[j * D + a];
			assert_near(dot, j == k ? 1.0 : 0.0, 1e-12);
		}
	}
	dp_pca_free(&pca);
	free(x);
	free(order);
}

static void test_point_error(void **state)
{
	/* A failing point stops the computation with its own code and detail
	 * (here in the second block of the first pass, then in the second
	 * pass); the output is untouched. */
	enum { M = 600, D = 2 };
	double *x = calloc(M * D, sizeof(*x));
	struct points pts = { x, D, 0, NULL, 550 };
	dp_pca pca, before;

	assert_non_null(x);
	for (size_t i = 0; i < M; i++)
		x[i * D] = (double)i;
	memset(&pca, 0x5a, sizeof(pca));
	before = pca;
	assert_int_equal(dp_pca_compute(M, D, 1, point, &pts, &pca), DP_EFORMAT);
	assert_string_equal(dp_error_detail(DP_EFORMAT), "point 550 is bad");
	assert_memory_equal(&pca, &before, sizeof(pca));
	pts.calls = 0;
	pts.fail_at = M + 3;
	assert_int_equal(dp_pca_compute(M, D, 1, point, &pts, &pca), DP_EFORMAT);
	assert_string_equal(dp_error_detail(DP_EFORMAT), "point 3 is bad");
	assert_memory_equal(&pca, &before, sizeof(pca));
	free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_2d),
		cmocka_unit_test(test_sign_rule_and_zeros),
		cmocka_unit_test(test_blocks_against_direct),
		cmocka_unit_test(test_point_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
