/* SPDX-License-Identifier: Apache-2.0 */
/* Identity -> index (common/core/idmap.h): 100,000 keys each found at its
 * index, absent keys not found, a duplicate reported with the index it
 * had, the map full at its size, and keys that collide in the table
 * (a map of 4 slots for 2 keys: every probe wraps) still told apart. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/core/error.h"
#include "common/core/idmap.h"

#define N 100000

static void test_many(void **state)
{
	char (*id)[16] = calloc(N, sizeof(*id));
	dp_idmap *m = NULL;
	size_t had = 0;

	(void)state;
	assert_non_null(id);
	assert_int_equal(dp_idmap_new(N, &m), 0);
	for (size_t i = 0; i < N; i++) {
		snprintf(id[i], sizeof(id[i]), "owner-%zu", i + 1);
		assert_int_equal(dp_idmap_put(m, id[i], i, NULL), 0);
	}
	for (size_t i = 0; i < N; i++)
		assert_int_equal(dp_idmap_get(m, id[i]), (long)i);
	assert_int_equal(dp_idmap_get(m, "owner-0"), -1);
	assert_int_equal(dp_idmap_get(m, "owner-100001"), -1);
	assert_int_equal(dp_idmap_get(m, ""), -1);
	assert_int_equal(dp_idmap_put(m, "owner-77", 5, &had), 1);
	assert_int_equal(had, 76);
	assert_int_equal(dp_idmap_get(m, "owner-77"), 76);
	/* full: a new key is refused, a known one still reported */
	assert_int_equal(dp_idmap_put(m, "owner-x", 0, NULL), DP_EINVAL);
	assert_int_equal(dp_idmap_put(m, "owner-1", 9, &had), 1);
	assert_int_equal(had, 0);
	dp_idmap_free(m);
	free(id);
}

static void test_small(void **state)
{
	dp_idmap *m = NULL;

	(void)state;
	assert_int_equal(dp_idmap_new(2, &m), 0);
	assert_int_equal(dp_idmap_put(m, "a", 7, NULL), 0);
	assert_int_equal(dp_idmap_put(m, "b", 8, NULL), 0);
	assert_int_equal(dp_idmap_get(m, "a"), 7);
	assert_int_equal(dp_idmap_get(m, "b"), 8);
	assert_int_equal(dp_idmap_get(m, "c"), -1);
	assert_int_equal(dp_idmap_put(m, "c", 9, NULL), DP_EINVAL);
	dp_idmap_free(m);
	assert_int_equal(dp_idmap_new(0, &m), 0);
	assert_int_equal(dp_idmap_get(m, "a"), -1);
	assert_int_equal(dp_idmap_put(m, "a", 0, NULL), DP_EINVAL);
	dp_idmap_free(m);
	dp_idmap_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_small),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
