/* SPDX-License-Identifier: Apache-2.0 */
/* The open files learnerd needs and its listener's limits
 * (common/net/nofile.h), against the figures docs/learnerd.md
 * "Descriptors", docs/protocol.md §6 and docs/deploy.md quote. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

static void test_listen(void **state)
{
	dp_nofile_limits lim;

	(void)state;
	/* The defaults, 200 owners: pending M + N, per address Ma + N, live
	 * M + 2 N + 4, the connections need counts. */
	lim = dp_nofile_listen(64, 16, 200);
	assert_int_equal(lim.max_pending, 264);
	assert_int_equal(lim.max_pending_per_addr, 216);
	assert_int_equal(lim.max_conns, 468);
	assert_int_equal(dp_nofile_need(64, 200, false), lim.max_conns + DP_NOFILE_OTHER);
	/* Room for every pending one and every admitted owner at once. */
	assert_true(lim.max_conns >= lim.max_pending + 200);
	/* max-pending-per-addr 0: no per-address limit, still none. */
	assert_int_equal(dp_nofile_listen(64, 0, 200).max_pending_per_addr, 0);
	/* No owners configured: the settings alone. */
	lim = dp_nofile_listen(1, 1, 0);
	assert_int_equal(lim.max_pending, 1);
	assert_int_equal(lim.max_pending_per_addr, 1);
	assert_int_equal(lim.max_conns, 5);
	/* Saturates instead of wrapping. */
	lim = dp_nofile_listen(SIZE_MAX - 1, SIZE_MAX, 10);
	assert_true(lim.max_pending == SIZE_MAX && lim.max_pending_per_addr == SIZE_MAX &&
		    lim.max_conns == SIZE_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_need_with_metrics),
		cmocka_unit_test(test_need_without_metrics),
		cmocka_unit_test(test_least),
		cmocka_unit_test(test_listen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
