/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for common/core/nano.c: epsilon in integer nano-epsilon.
 *
 * Expected values are derived by hand from the exact binary value of each
 * double (shown next to each), not from the code under test.  The ledger's
 * own use of them (charges up to the cap, K shares filling it) is in
 * test_ledger.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "common/core/error.h"
#include "common/core/nano.h"

/* Rounding up (charges) and down (caps) from the exact binary value. */
static void test_rounding(void **state)
{
	uint64_t v = 7;

	(void)state;
	/* 1/3 = 6004799503160661 * 2^-54 (2^54/3 = ...661.33 rounds down), so
	 * 1e9/3 in the double is 333333333.33333331...: ceil ...334, floor ...333. */
	assert_int_equal(dp_nano_ceil(1.0 / 3, &v), 0);
	assert_int_equal(v, 333333334u);
	assert_int_equal(dp_nano_floor(1.0 / 3, &v), 0);
	assert_int_equal(v, 333333333u);
	/* 0.1 = 3602879701896397 * 2^-55 (2^55/10 = ...396.8 rounds up) =
	 * 0.1000000000000000055...: 1e8 + 5.5e-9 nano. */
	assert_int_equal(dp_nano_ceil(0.1, &v), 0);
	assert_int_equal(v, 100000001u);
	assert_int_equal(dp_nano_floor(0.1, &v), 0);
	assert_int_equal(v, 100000000u);
	/* 0.3 = 5404319552844595 * 2^-54 (2^54*0.3 = ...595.2 rounds down) =
	 * 0.29999999999999998889...: floor 299999999, ceil 300000000. */
	assert_int_equal(dp_nano_floor(0.3, &v), 0);
	assert_int_equal(v, 299999999u);
	assert_int_equal(dp_nano_ceil(0.3, &v), 0);
	assert_int_equal(v, 300000000u);
	/* Exact binary fractions: no rounding either way. */
	assert_int_equal(dp_nano_ceil(0.25, &v), 0);
	assert_int_equal(v, 250000000u);
	assert_int_equal(dp_nano_floor(0.25, &v), 0);
	assert_int_equal(v, 250000000u);
	assert_int_equal(dp_nano_ceil(3.0, &v), 0);
	assert_int_equal(v, 3000000000u);
	/* Tiny positive charges cost one nano; the smallest subnormal too. */
	assert_int_equal(dp_nano_ceil(1e-12, &v), 0);
	assert_int_equal(v, 1u);
	assert_int_equal(dp_nano_floor(1e-12, &v), 0);
	assert_int_equal(v, 0u);
	assert_int_equal(dp_nano_ceil(5e-324, &v), 0);
	assert_int_equal(v, 1u);
	assert_int_equal(dp_nano_ceil(0.0, &v), 0);
	assert_int_equal(v, 0u);
	/* 1.7e10 is an integer double: exactly 1.7e19 nano, below 2^64. */
	assert_int_equal(dp_nano_ceil(1.7e10, &v), 0);
	assert_true(v == 17000000000000000000ull);
	/* Out of range / invalid; v untouched. */
	v = 7;
	assert_int_equal(dp_nano_ceil(1.9e10, &v), DP_ERANGE);
	assert_int_equal(dp_nano_ceil(INFINITY, &v), DP_ERANGE);
	assert_int_equal(dp_nano_ceil(-1e-9, &v), DP_EINVAL);
	assert_int_equal(dp_nano_floor(NAN, &v), DP_EINVAL);
	assert_int_equal(v, 7u);
}

/* The largest share that fits K times, and the ones that cannot. */
static void test_share(void **state)
{
	double q = 0;
	uint64_t v;

	(void)state;
	/* floor(1e9 / 3) = 333333333 nano per answer. */
	assert_int_equal(dp_nano_share(1.0, 3, &q), 0);
	assert_int_equal(dp_nano_ceil(q, &v), 0);
	assert_int_equal(v, 333333333u);
	/* Largest such double: the next one up costs more. */
	assert_int_equal(dp_nano_ceil(nextafter(q, 1.0), &v), 0);
	assert_int_equal(v, 333333334u);
	/* cap 0.3 -> 299999999; / 3 = 99999999 (remainder 2). */
	assert_int_equal(dp_nano_share(0.3, 3, &q), 0);
	assert_int_equal(dp_nano_ceil(q, &v), 0);
	assert_int_equal(v, 99999999u);
	assert_int_equal(dp_nano_share(INFINITY, 5, &q), 0);
	assert_true(isinf(q));
	q = 5;
	assert_int_equal(dp_nano_share(1e-9, 2, &q), DP_EINVAL);  /* 1 nano / 2 */
	assert_int_equal(dp_nano_share(1.0, 0, &q), DP_EINVAL);
	assert_int_equal(dp_nano_share(0.0, 1, &q), DP_EINVAL);
	assert_int_equal(dp_nano_share(NAN, 1, &q), DP_EINVAL);
	/* 2^34 epsilon is past DP_NANO_MAX. */
	assert_int_equal(dp_nano_share(17179869184.0, 1, &q), DP_ERANGE);
	assert_true(q == 5);
}

/* Sums saturate at DP_NANO_INF; nothing finite wraps around. */
static void test_add(void **state)
{
	(void)state;
	assert_true(dp_nano_add(0, 0) == 0);
	assert_true(dp_nano_add(250000000u, 750000000u) == 1000000000u);
	assert_true(dp_nano_add(DP_NANO_MAX - 1, 1) == DP_NANO_MAX);
	assert_true(dp_nano_add(DP_NANO_MAX, 0) == DP_NANO_MAX);
	/* One past the largest finite amount, or any overflow: infinite. */
	assert_true(dp_nano_add(DP_NANO_MAX, 1) == DP_NANO_INF);
	assert_true(dp_nano_add(DP_NANO_MAX, DP_NANO_MAX) == DP_NANO_INF);
	assert_true(dp_nano_add(DP_NANO_INF, 0) == DP_NANO_INF);
	assert_true(dp_nano_add(0, DP_NANO_INF) == DP_NANO_INF);
	assert_true(dp_nano_add(5, DP_NANO_INF) == DP_NANO_INF);
}

static void test_to_eps(void **state)
{
	(void)state;
	assert_true(dp_nano_to_eps(0) == 0.0);
	assert_true(dp_nano_to_eps(1000000000u) == 1.0);
	assert_true(dp_nano_to_eps(250000000u) == 0.25);
	assert_true(dp_nano_to_eps(1u) == 1e-9);
	assert_true(isinf(dp_nano_to_eps(DP_NANO_INF)));
	/* Round trip of a floor: never above the double it came from. */
	{
		uint64_t v;

		assert_int_equal(dp_nano_floor(0.3, &v), 0);
		assert_true(dp_nano_to_eps(v) <= 0.3);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rounding),
		cmocka_unit_test(test_share),
		cmocka_unit_test(test_add),
		cmocka_unit_test(test_to_eps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
