/* SPDX-License-Identifier: Apache-2.0 */
/* Strict number and list parsing for flags and config values. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
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

/* dp_num_format writes the fewest significant digits that read back
 * exactly.  Reference: the definition, tried digit count by digit count
 * (p = 1, 2, ...), here in the test; compared on special values and on
 * 50,000 doubles of random bit patterns (every exponent). */
static void reference(char *buf, size_t len, double v)
{
	for (int p = 1; p <= 17; p++) {
		snprintf(buf, len, "%.*g", p, v);
		if (strtod(buf, NULL) != v)
			continue;
		if (fabs(v) >= 1 && fabs(v) < 1e15 && strchr(buf, 'e')) {
			int digits = (int)floor(log10(fabs(v))) + 1;

			snprintf(buf, len, "%.*g", digits > p ? digits : p, v);
		}
		return;
	}
	fail_msg("17 digits did not read back");
}

static void test_format_shortest(void **state)
{
	const double special[] = { 0.1, 0.3, 1.0 / 3.0, 2.5, -2.5, 1e15, 1e16, 123456789012.0,
				   100.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
				   0.0, 1e-7, 9.999999999999999e22 };
	char got[40], want[40];
	uint64_t x = 0x9e3779b97f4a7c15u;

	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++) {
		dp_num_format(got, sizeof(got), special[i]);
		reference(want, sizeof(want), special[i]);
		assert_string_equal(got, want);
		assert_true(strtod(got, NULL) == special[i]);
	}
	assert_int_equal(strcmp((dp_num_format(got, sizeof(got), 0.1), got), "0.1"), 0);
	assert_int_equal(strcmp((dp_num_format(got, sizeof(got), 100.0), got), "100"), 0);
	for (int i = 0; i < 50000; i++) {
		double v;

		x ^= x << 13;   /* xorshift64: bit patterns over every exponent */
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(&v, &x, sizeof(v));
		if (!isfinite(v))
			continue;
		dp_num_format(got, sizeof(got), v);
		reference(want, sizeof(want), v);
		if (strcmp(got, want) != 0)
			fail_msg("%a: %s, want %s", v, got, want);
	}
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
		cmocka_unit_test(test_format_shortest),
		cmocka_unit_test(test_integers),
		cmocka_unit_test(test_lists),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
