/* SPDX-License-Identifier: Apache-2.0 */
/* The wake-up schedule file (common/core/schedule.h): round trip and one
 * rejection per malformed case. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/schedule.h"
#include "tests/unit/tmpdir.h"

static int setup(void **state)
{
	(void)state;
	return tmpdir_setup("dp-schedule");
}

static int teardown(void **state)
{
	(void)state;
	return tmpdir_teardown();
}

static const char *const agents[] = { "zed", "a,b", "u1" };

static void test_load(void **state)
{
	size_t *a = NULL, n = 0;

	(void)state;
	assert_int_equal(dp_schedule_load(put("s.csv", "step,agent\n1,u1\n2,\"a,b\"\n3,u1\n"
					      "4,zed\n"), agents, 3, &a, &n), 0);
	assert_int_equal(n, 4);
	assert_true(a[0] == 2 && a[1] == 1 && a[2] == 2 && a[3] == 0);
	free(a);
}

static void test_roundtrip(void **state)
{
	const size_t order[] = { 1, 0, 2, 2, 1 };
	size_t *a = NULL, n = 0;
	const char *p = path_of("rt.csv");

	(void)state;
	assert_int_equal(dp_schedule_write(p, agents, order, 5), 0);
	assert_int_equal(dp_schedule_load(p, agents, 3, &a, &n), 0);
	assert_int_equal(n, 5);
	assert_memory_equal(a, order, sizeof(order));
	free(a);
}

static void test_malformed(void **state)
{
	static const struct {
		const char *text, *detail;
	} bad[] = {
		{ "", "empty" },
		{ "step,agent\n", "bad.csv: 0 steps" },
		{ "agent,step\n1,u1\n", "bad.csv:1: the header must be exactly step,agent" },
		{ "step,agent,x\n1,u1,2\n", "bad.csv:1: the header must be exactly step,agent" },
		{ "step\n1\n", "bad.csv:1: the header must be exactly step,agent" },
		{ "step,agent\n0,u1\n", "bad.csv:2: column 'step': expected 1" },
		{ "step,agent\n2,u1\n", "bad.csv:2: column 'step': expected 1" },
		{ "step,agent\n1,u1\n1,u1\n", "bad.csv:3: column 'step': expected 2" },
		{ "step,agent\n1,u1\n3,u1\n", "bad.csv:3: column 'step': expected 2" },
		{ "step,agent\n1,u1\n-2,u1\n", "bad.csv:3: column 'step': expected 2" },
		{ "step,agent\n1,u1\nx,u1\n", "bad.csv:3: column 'step': expected 2" },
		{ "step,agent\n1.0,u1\n", "bad.csv:2: column 'step': expected 1" },
		{ "step,agent\n1,u9\n", "bad.csv:2: column 'agent': unknown agent id 'u9'" },
		{ "step,agent\n1,a\n", "bad.csv:2: column 'agent': unknown agent id 'a'" },
		{ "step,agent\n1,\n", "bad.csv:2" },
		{ "step,agent\n1,u1,3\n", "bad.csv:2" },
	};
	size_t *a = (size_t *)&a, n = 99;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = dp_schedule_load(put("bad.csv", bad[i].text), agents, 3, &a, &n);

		if (rc != DP_EFORMAT || strstr(dp_error_detail(rc), bad[i].detail) == NULL)
			fail_msg("case %zu: rc %d detail '%s'", i, rc, dp_error_detail(rc));
		assert_ptr_equal(a, (size_t *)&a);
		assert_int_equal(n, 99);
	}
	assert_int_equal(dp_schedule_load(path_of("none.csv"), agents, 3, &a, &n), DP_ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_malformed),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
