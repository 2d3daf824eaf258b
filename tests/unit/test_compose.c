/* SPDX-License-Identifier: Apache-2.0 */
/* The equal split of (eps, delta) over T wake-ups (common/core/compose.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>

#include "common/core/compose.h"
#include "common/core/error.h"

static void test_pure_is_equal_split(void **state)
{
	double e = 0;

	(void)state;
	assert_int_equal(dp_compose_split(1.0, 0.0, 4, &e), 0);
	assert_true(e == 0.25);
	assert_int_equal(dp_compose_split(INFINITY, 0.0, 4, &e), 0);
	assert_true(isinf(e));
}

static void test_advanced_by_hand(void **state)
{
	(void)state;
	/* T = 2, delta = e^-2: sqrt(2*2*2) = sqrt(8); eps_t = 0.1:
	 * sqrt(8)*0.1 + 2*0.1*(e^0.1 - 1). */
	double want = sqrt(8.0) * 0.1 + 0.2 * expm1(0.1);

	assert_true(fabs(dp_compose_advanced(0.1, exp(-2.0), 2) - want) < 1e-15);
}

static void test_advanced_wins_for_many_steps(void **state)
{
	/* eps = 1, delta = e^-5, T = 1000: basic gives 1e-3; advanced gives
	 * about 1/sqrt(2*1000*5) = 0.01 (less the second-order term). */
	double e = 0;

	(void)state;
	assert_int_equal(dp_compose_split(1.0, exp(-5.0), 1000, &e), 0);
	assert_true(e > 0.009 && e < 0.01);
	/* It is feasible, and barely: the guarantee holds for the value. */
	assert_true(dp_compose_advanced(e, exp(-5.0), 1000) <= 1.0);
	assert_true(dp_compose_advanced(e * (1 + 1e-9), exp(-5.0), 1000) > 1.0);
}

static void test_basic_wins_for_few_steps(void **state)
{
	/* T = 3, delta = 1e-6: sqrt(6 ln 1e6) = 8.1 > 3, advanced is worse. */
	double e = 0;

	(void)state;
	assert_int_equal(dp_compose_split(0.3, 1e-6, 3, &e), 0);
	assert_true(e == 0.3 / 3.0);
}

static void test_bad_arguments(void **state)
{
	double e = 7;

	(void)state;
	assert_int_equal(dp_compose_split(0.0, 0.0, 1, &e), DP_EINVAL);
	assert_int_equal(dp_compose_split(NAN, 0.0, 1, &e), DP_EINVAL);
	assert_int_equal(dp_compose_split(1.0, 1.0, 1, &e), DP_EINVAL);
	assert_int_equal(dp_compose_split(1.0, -0.1, 1, &e), DP_EINVAL);
	assert_int_equal(dp_compose_split(1.0, 0.0, 0, &e), DP_EINVAL);
	assert_true(e == 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pure_is_equal_split),
		cmocka_unit_test(test_advanced_by_hand),
		cmocka_unit_test(test_advanced_wins_for_many_steps),
		cmocka_unit_test(test_basic_wins_for_few_steps),
		cmocka_unit_test(test_bad_arguments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
