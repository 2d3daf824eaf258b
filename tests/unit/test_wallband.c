/* SPDX-License-Identifier: Apache-2.0 */
/* The band of repeated psi curves (tools/lib/wallband.c) against values
 * worked out by hand: the union of the time points, linear reading between
 * a curve's points, its last psi held after its end, no value before its
 * start, the later of two points at one time, and the errors. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "tools/lib/wallband.h"

/* cmocka 1.1 compares floats only in single precision. */
#define assert_near(a, b)                                                                         \
	do {                                                                                      \
		double a_ = (a), b_ = (b);                                                        \
		if (!(fabs(a_ - b_) <= 1e-12 * (1 + fabs(b_))))                                   \
			fail_msg("%s = %.17g, expected %.17g", #a, a_, b_);                       \
	} while (0)

static dp_rundata_wall curve(size_t n, double *t, double *psi)
{
	static size_t k[16];

	for (size_t i = 0; i < 16; i++)
		k[i] = i;
	return (dp_rundata_wall){ .n = n, .t = t, .psi = psi, .k = k };
}

static void test_three_runs(void **state)
{
	/* a: (0,4) (2,2) (4,1); b: (0,6) (1,3) (3,1), over at 3;
	 * c: (1,5) (4,3), starts at 1.  At t = 0: a 4, b 6 (c none);
	 * t = 1: a 3, b 3, c 5; t = 2: a 2, b 2, c 13/3; t = 3: a 1.5, b 1,
	 * c 11/3; t = 4: a 1, b 1 (held), c 3. */
	double ta[] = { 0, 2, 4 }, pa[] = { 4, 2, 1 };
	double tb[] = { 0, 1, 3 }, pb[] = { 6, 3, 1 };
	double tc[] = { 1, 4 }, pc[] = { 5, 3 };
	dp_rundata_wall a = curve(3, ta, pa), b = curve(3, tb, pb), c = curve(2, tc, pc);
	const dp_rundata_wall *runs[] = { &a, &b, &c };
	const double t[] = { 0, 1, 2, 3, 4 };
	const double lo[] = { 4, 3, 2, 1, 1 }, med[] = { 5, 3, 2, 1.5, 1 };
	const double hi[] = { 6, 5, 13.0 / 3, 11.0 / 3, 3 };
	const size_t n[] = { 2, 3, 3, 3, 3 };
	dp_wallband band = { 0 };

	(void)state;
	assert_int_equal(dp_wallband_build(runs, 3, &band), 0);
	assert_int_equal(band.n, 5);
	for (size_t i = 0; i < 5; i++) {
		assert_near(band.t[i], t[i]);
		assert_near(band.lo[i], lo[i]);
		assert_near(band.med[i], med[i]);
		assert_near(band.hi[i], hi[i]);
		assert_int_equal(band.runs[i], n[i]);
	}
	dp_wallband_free(&band);
	dp_wallband_free(&band);   /* zeroed: a no-op */
}

static void test_one_run_and_ties(void **state)
{
	/* One run is its own band; two points at t = 1 (a checkpoint and the
	 * final model at the same second): the later one counts. */
	double t[] = { 0, 1, 1, 2 }, psi[] = { 8, 4, 3, 2 };
	dp_rundata_wall a = curve(4, t, psi);
	const dp_rundata_wall *runs[] = { &a };
	dp_wallband band = { 0 };

	(void)state;
	assert_int_equal(dp_wallband_build(runs, 1, &band), 0);
	assert_int_equal(band.n, 3);
	assert_near(band.med[0], 8);
	assert_near(band.lo[1], 3);
	assert_near(band.hi[1], 3);
	assert_near(band.med[2], 2);
	assert_int_equal(band.runs[2], 1);
	dp_wallband_free(&band);
}

static void test_no_points(void **state)
{
	dp_rundata_wall a = curve(0, NULL, NULL);
	const dp_rundata_wall *runs[] = { &a, &a };
	dp_wallband band = { .n = 7 };

	(void)state;
	assert_int_equal(dp_wallband_build(runs, 2, &band), DP_EINVAL);
	assert_int_equal(band.n, 7);   /* untouched */
	assert_int_equal(dp_wallband_build(runs, 0, &band), DP_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_three_runs),
		cmocka_unit_test(test_one_run_and_ties),
		cmocka_unit_test(test_no_points),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
