/* SPDX-License-Identifier: Apache-2.0 */
/* Strict number and list parsing for flags and config values. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/num.h"

static void test_double(void **state)
{
	double v = 7;

	assert_int_equal(dp_num_parse_double("x", "1.5e-3", 0, &v), 0);
	assert_true(v == 1.5e-3);
	assert_int_equal(dp_num_parse_double("x", "inf", 1, &v), 0);
	assert_true(isinf(v) && v > 0);
	v = 7;
	assert_int_equal(dp_num_parse_double("x", "inf", 0, &v), DP_EINVAL);
	assert_int_equal(dp_num_parse_double("x", "nan", 1, &v), DP_EINVAL);
	assert_int_equal(dp_num_parse_double("x", "1.5abc", 0, &v), DP_EINVAL);
	assert_int_equal(dp_num_parse_double("x", "", 0, &v), DP_EINVAL);
	assert_int_equal(dp_num_parse_double("x", " 1", 0, &v), DP_EINVAL);
	assert_int_equal(dp_num_parse_double("x", "1e999", 0, &v), DP_EINVAL);
	assert_true(v == 7); /* untouched on failure */
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "x:"));
}

static void test_integers(void **state)
{
	uint64_t u = 3;
	size_t s;

	assert_int_equal(dp_num_parse_u64("n", "18446744073709551615", &u), 0);
	assert_true(u == UINT64_MAX);
	assert_int_equal(dp_num_parse_u64("n", "18446744073709551616", &u), DP_EINVAL);
	assert_int_equal(dp_num_parse_u64("n", "-1", &u), DP_EINVAL);
	assert_int_equal(dp_num_parse_u64("n", "+1", &u), DP_EINVAL);
	assert_int_equal(dp_num_parse_u64("n", "12x", &u), DP_EINVAL);
	assert_int_equal(dp_num_parse_size("n", "42", &s), 0);
	assert_int_equal(s, 42);
}

static void test_lists(void **state)
{
	double *d = NULL;
	size_t *z = NULL, n = 0;

	assert_int_equal(dp_num_parse_double_list("e", "1,2.5,inf", 1, &d, &n), 0);
	assert_int_equal(n, 3);
	assert_true(d[0] == 1 && d[1] == 2.5 && isinf(d[2]));
	free(d);
	assert_int_equal(dp_num_parse_double_list("e", "1,,2", 1, &d, &n), DP_EINVAL);
	assert_int_equal(dp_num_parse_double_list("e", "1,", 1, &d, &n), DP_EINVAL);
	assert_int_equal(dp_num_parse_double_list("e", "", 1, &d, &n), DP_EINVAL);
	assert_int_equal(dp_num_parse_size_list("r", "10,20", &z, &n), 0);
	assert_int_equal(n, 2);
	assert_true(z[0] == 10 && z[1] == 20);
	free(z);
	assert_int_equal(dp_num_parse_size_list("r", "10,-2", &z, &n), DP_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_double),
		cmocka_unit_test(test_integers),
		cmocka_unit_test(test_lists),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
