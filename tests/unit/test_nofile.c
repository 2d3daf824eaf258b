/* SPDX-License-Identifier: Apache-2.0 */
/* The open files learnerd needs (common/net/nofile.h), against the
 * figures docs/learnerd.md "Descriptors" and docs/deploy.md quote. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/net/nofile.h"

static void test_need_with_metrics(void **state)
{
	(void)state;
	/* max-pending 64, metrics on: 64 + 2 N + 4 + 65 + 32 = 2 N + 165. */
	assert_int_equal(dp_nofile_need(64, 1000, true), 2165);
	assert_int_equal(dp_nofile_need(64, 60, true), 285);
	assert_int_equal(dp_nofile_need(64, 200, true), 565);
	assert_int_equal(dp_nofile_need(64, 0, true), 165);
}

static void test_need_without_metrics(void **state)
{
	(void)state;
	/* No HTTP server: max-pending + 2 N + 4 + 32. */
	assert_int_equal(dp_nofile_need(64, 1000, false), 2100);
	assert_int_equal(dp_nofile_need(1, 1, false), 39);
}

static void test_least(void **state)
{
	(void)state;
	assert_int_equal(dp_nofile_least(200), 232);
	assert_int_equal(dp_nofile_least(0), DP_NOFILE_OTHER);
	/* Below need whatever max-pending and metrics are. */
	assert_true(dp_nofile_least(500) < dp_nofile_need(1, 500, false));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_need_with_metrics),
		cmocka_unit_test(test_need_without_metrics),
		cmocka_unit_test(test_least),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
