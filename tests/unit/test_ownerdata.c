/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for tools/lib/ownerdata.c: owner files loaded together, checked
 * against each other and the model, and every failure leaves nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "common/core/error.h"
#include "tools/lib/ownerdata.h"
#include "tmpdir.h"

static int group_setup(void **state)
{
	(void)state;
	return tmpdir_setup("dp_test_ownerdata");
}

static int group_teardown(void **state)
{
	(void)state;
	return tmpdir_teardown();
}

static void assert_zeroed(const dp_ownerdata *od)
{
	assert_int_equal(od->N, 0);
	assert_null(od->ds);
	assert_null(od->view);
	assert_null(od->schema);
}

static void test_load(void **state)
{
	char *files[2];
	dp_ownerdata od;

	(void)state;
	files[0] = strdup(put("a.csv", "x1,x2,y\n1,2,3\n4,5,6\n"));
	files[1] = strdup(put("b.csv", "x1,x2,y\n7,8,9\n"));
	assert_int_equal(dp_ownerdata_load(&od, files, 2, "y", 0, NULL, DP_MODEL_LINEAR), 0);
	assert_int_equal(od.N, 2);
	assert_int_equal(od.ds[0].n, 2);
	assert_int_equal(od.ds[1].n, 1);
	assert_int_equal(od.ds[0].p, 2);
	assert_ptr_equal(od.view[1], &od.ds[1]);
	assert_true(od.ds[1].x[1] == 8.0 && od.ds[1].y[0] == 9.0);
	dp_ownerdata_free(&od);
	assert_zeroed(&od);
	dp_ownerdata_free(&od);   /* twice is fine */

	/* bias appends a constant-1 feature to every owner */
	assert_int_equal(dp_ownerdata_load(&od, files, 2, "y", 1, NULL, DP_MODEL_LINEAR), 0);
	assert_int_equal(od.ds[0].p, 3);
	assert_true(od.ds[0].x[2] == 1.0);
	dp_ownerdata_free(&od);
	free(files[0]);
	free(files[1]);
}

static void test_errors(void **state)
{
	char *files[2];
	dp_ownerdata od;
	int rc;

	(void)state;
	memset(&od, 0xff, sizeof(od));
	rc = dp_ownerdata_load(&od, NULL, 0, "y", 0, NULL, DP_MODEL_LINEAR);
	assert_int_equal(rc, DP_EINVAL);
	assert_string_equal(dp_error_detail(rc), "no owner data files given (one CSV per owner)");
	assert_zeroed(&od);

	/* Owners whose features differ. */
	files[0] = strdup(put("c.csv", "x1,x2,y\n1,2,3\n"));
	files[1] = strdup(put("d.csv", "x1,x3,y\n1,2,3\n"));
	rc = dp_ownerdata_load(&od, files, 2, "y", 0, NULL, DP_MODEL_LINEAR);
	assert_int_equal(rc, DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(rc), "d.csv"));
	assert_zeroed(&od);
	free(files[1]);

	/* Labels a classifier cannot take. */
	rc = dp_ownerdata_load(&od, files, 1, "y", 0, NULL, DP_MODEL_LOGISTIC);
	assert_true(rc < 0);
	assert_non_null(strstr(dp_error_detail(rc), "c.csv"));
	assert_zeroed(&od);

	/* A missing file, a missing target, a missing schema. */
	files[1] = strdup(path_of("none.csv"));
	rc = dp_ownerdata_load(&od, files, 2, "y", 0, NULL, DP_MODEL_LINEAR);
	assert_true(rc < 0);
	assert_non_null(strstr(dp_error_detail(rc), "none.csv"));
	assert_zeroed(&od);
	rc = dp_ownerdata_load(&od, files, 1, "price", 0, NULL, DP_MODEL_LINEAR);
	assert_true(rc < 0);
	assert_non_null(strstr(dp_error_detail(rc), "price"));
	assert_zeroed(&od);
	rc = dp_ownerdata_load(&od, files, 1, NULL, 0, path_of("none.json"), DP_MODEL_LINEAR);
	assert_true(rc < 0);
	assert_non_null(strstr(dp_error_detail(rc), "none.json"));
	assert_zeroed(&od);
	free(files[0]);
	free(files[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
