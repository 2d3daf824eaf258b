/* SPDX-License-Identifier: Apache-2.0 */
/* Datasets: strict numeric loading, schema loading, arrays, CSV round trip,
 * compatibility checks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/core/dataset.h"
#include "common/core/error.h"
#include "common/core/schema.h"
#include "tools/lib/schema_build.h"

#include "tests/unit/tmpdir.h"

static int setup(void **state)
{
	return tmpdir_setup("test_dataset");
}

static int teardown(void **state)
{
	return tmpdir_teardown();
}

static void test_load_numeric(void **state)
{
	/* Target in the middle; bias appended; row_l1 by hand:
	 * row 1: |1| + |-2| + 1 = 4; row 2: |0.5| + |3e2| + 1 = 301.5. */
	const char *p = put("n.csv", "a,y,\"b, c\"\n1,10,-2\n0.5,-1e-3,3e2\n");
	dp_load_opts o = { .target = "y", .bias = 1 };
	dp_dataset ds;

	assert_int_equal(dp_dataset_load(&ds, p, &o), 0);
	assert_int_equal(ds.n, 2);
	assert_int_equal(ds.p, 3);
	assert_true(((uintptr_t)ds.x % 64) == 0);
	assert_string_equal(ds.names[0], "a");
	assert_string_equal(ds.names[1], "b, c");
	assert_string_equal(ds.names[2], "bias");
	assert_string_equal(ds.target, "y");
	assert_string_equal(ds.source, p);
	const double x[6] = { 1, -2, 1, 0.5, 300, 1 };

	for (size_t i = 0; i < 6; i++)
		assert_true(ds.x[i] == x[i]);
	assert_true(ds.y[0] == 10 && ds.y[1] == -1e-3);
	assert_true(ds.row_l1[0] == 4.0 && ds.row_l1[1] == 301.5);
	dp_dataset_free(&ds);
	assert_null(ds.x);
	dp_dataset_free(&ds); /* zeroed: harmless */
	dp_dataset_free(NULL);
}

static void test_load_many_rows(void **state)
{
	/* More rows than the first allocation, to exercise growth. */
	const char *p = path_of("many.csv");
	FILE *f = fopen(p, "w");
	dp_load_opts o = { .target = "y" };
	dp_dataset ds;

	assert_non_null(f);
	fputs("x1,x2,y\n", f);
	for (int i = 0; i < 5000; i++)
		fprintf(f, "%d,%d.5,%d\n", i, -i, 2 * i);
	fclose(f);
	assert_int_equal(dp_dataset_load(&ds, p, &o), 0);
	assert_int_equal(ds.n, 5000);
	assert_true(((uintptr_t)ds.x % 64) == 0);
	for (size_t i = 0; i < 5000; i += 499) {
		assert_true(ds.x[2 * i] == (double)i);
		assert_true(ds.x[2 * i + 1] == (i == 0 ? 0.5 : -((double)i + 0.5)));
		assert_true(ds.y[i] == 2.0 * (double)i);
	}
	dp_dataset_free(&ds);
}

static void expect_load_error(const char *text, const dp_load_opts *o, int code, const char *detail)
{
	const char *p = put("e.csv", text);
	char want[512];
	dp_dataset ds;

	memset(&ds, 0x55, sizeof(ds));
	assert_int_equal(dp_dataset_load(&ds, p, o), code);
	snprintf(want, sizeof(want), "%s%s", p, detail);
	if (strcmp(dp_error_detail(code), want) != 0)
		fail_msg("detail '%s', wanted '%s'", dp_error_detail(code), want);
	assert_null(ds.x); /* zeroed on failure */
	assert_int_equal(ds.n, 0);
}

static void test_load_errors(void **state)
{
	dp_load_opts o = { .target = "y" };
	dp_load_opts ob = { .target = "y", .bias = 1 };

	/* the cell's position, never its text (docs/privacy.md §8): the whole
	 * detail is compared */
	expect_load_error("a,y\n1,2\n1.5abc,3\n", &o, DP_EFORMAT,
			  ":3: column 'a': not a finite number");
	expect_load_error("a,y\nnan,2\n", &o, DP_EFORMAT, ":2: column 'a': not a finite number");
	expect_load_error("a,y\n1,inf\n", &o, DP_EFORMAT, ":2: column 'y': not a finite number");
	expect_load_error("a,y\n 1,2\n", &o, DP_EFORMAT, ":2: column 'a': not a finite number");
	expect_load_error("a,y\n1e400,2\n", &o, DP_EFORMAT,
			  ":2: column 'a': not a finite number");
	expect_load_error("a,y\n1,\n", &o, DP_EFORMAT,
			  ":2: column 'y': empty cell (missing value; dpasync does not impute)");
	expect_load_error("a,b\n1,2\n", &o, DP_EFORMAT,
			  ": target column 'y' not found (columns: a, b)");
	expect_load_error("a,y\n", &o, DP_EFORMAT, ": no data rows (only a header)");
	expect_load_error("y\n1\n", &o, DP_EFORMAT, ": no feature columns besides the target");
	expect_load_error("bias,y\n1,2\n", &ob, DP_EFORMAT,
			  ": a feature is already named 'bias'; cannot append the bias column");
	/* A target named 'bias' next to the bias column would be written as two
	 * columns of one name (found by fuzz_csv, docs/fuzz.md). */
	{
		dp_load_opts obias = { .target = "bias", .bias = 1 };

		expect_load_error("a,bias\n1,2\n", &obias, DP_EFORMAT,
				  ": the target is named 'bias'; cannot append the bias column");
	}
	expect_load_error("a,y\n1,2\n", NULL, DP_EINVAL, ": no target column given");
	/* a bias-only dataset is fine */
	{
		dp_dataset ds;

		assert_int_equal(dp_dataset_load(&ds, put("y.csv", "y\n1\n"), &ob), 0);
		assert_int_equal(ds.p, 1);
		assert_true(ds.x[0] == 1.0 && ds.row_l1[0] == 1.0);
		dp_dataset_free(&ds);
	}
	{
		dp_dataset ds;

		assert_int_equal(dp_dataset_load(&ds, path_of("nope.csv"), &o), DP_ENOENT);
	}
}

static void test_load_with_schema(void **state)
{
	/* Schema from the sample: a mean 2, sd 1 (values 1,2,3); c two levels
	 * p,q: one 0/1 feature c=q; target standardised: mean 20, sd 10. */
	const char *sample = put("s.csv", "a,c,note,y\n1,p,x,10\n2,q,,20\n3,p,z,30\n");
	static const char *const drop[] = { "note" };
	dp_schema_build_opts so = { 0 };
	dp_schema *s = NULL;
	dp_dataset ds;

	so.target = "y";
	so.drop = drop;
	so.ndrop = 1;
	so.standardize_target = 1;
	assert_int_equal(dp_schema_build(sample, &so, &s), 0);

	dp_load_opts o = { .bias = 1, .schema = s };

	assert_int_equal(dp_dataset_load(&ds, put("o.csv", "y,c,a,note\n40,q,4,\n"), &o), 0);
	assert_int_equal(ds.p, 3);
	assert_string_equal(ds.names[1], "c=q");
	assert_string_equal(ds.names[2], "bias");
	assert_string_equal(ds.target, "y");
	const double want[3] = { 2.0, 1.0, 1.0 };

	for (size_t j = 0; j < 3; j++)
		assert_true(fabs(ds.x[j] - want[j]) < 1e-12);
	assert_true(fabs(ds.y[0] - 2.0) < 1e-12);
	assert_true(fabs(ds.row_l1[0] - 4.0) < 1e-12);
	dp_dataset_free(&ds);

	/* A file already prepared with this schema (what prep writes: the
	 * features, then the target) is refused, not transformed twice. */
	assert_int_equal(dp_dataset_write_csv(&(dp_dataset){ .n = 1, .p = 2, .x = (double[]){ 2, 1 },
							      .y = (double[]){ 2 },
							      .names = (char *[]){ "a", "c=q" },
							      .target = "y" },
					      path_of("prepared.csv")),
			 0);
	assert_int_equal(dp_dataset_load(&ds, path_of("prepared.csv"), &o), DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT),
			       "prepared.csv is already prepared with this schema"));
	o.schema = NULL;
	o.target = "y";
	assert_int_equal(dp_dataset_load(&ds, path_of("prepared.csv"), &o), 0);
	assert_int_equal(ds.p, 3);
	dp_dataset_free(&ds);
	o.schema = s;
	o.target = NULL;

	/* an unseen level, and a target that contradicts the schema */
	assert_int_equal(dp_dataset_load(&ds, put("o.csv", "y,c,a,note\n40,r,4,\n"), &o),
			 DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "o.csv:2: column 'c': the level is not"));
	assert_null(strstr(dp_error_detail(DP_EFORMAT), "'r'"));
	o.target = "a";
	assert_int_equal(dp_dataset_load(&ds, put("o.csv", "y,c,a,note\n40,p,4,\n"), &o),
			 DP_EINVAL);
	o.target = "y";
	assert_int_equal(dp_dataset_load(&ds, put("o.csv", "y,c,a,note\n40,p,4,\n"), &o), 0);
	dp_dataset_free(&ds);
	dp_schema_destroy(s);
}

static void test_arrays_and_roundtrip(void **state)
{
	/* Awkward doubles must come back bit for bit. */
	const double x[6] = { 0.1, 1.0 / 3.0, -1e-300, 123456789.123456789, 5e-324, -0.0 };
	const double y[3] = { 2.0 / 3.0, -7, 1e300 };
	static const char *const names[2] = { "plain", "with, \"quotes\"" };
	dp_dataset ds, back;
	dp_load_opts o = { .target = "my target" };

	assert_int_equal(dp_dataset_from_arrays(&ds, 3, 2, x, y, names), 0);
	assert_true(((uintptr_t)ds.x % 64) == 0);
	assert_string_equal(ds.target, "y");
	assert_true(ds.row_l1[0] == 0.1 + 1.0 / 3.0);
	free(ds.target);
	ds.target = strdup("my target");
	{
		/* Rows are private: 0600 even under umask 000. */
		mode_t old = umask(0);
		struct stat st;

		assert_int_equal(dp_dataset_write_csv(&ds, path_of("rt.csv")), 0);
		umask(old);
		assert_int_equal(stat(path_of("rt.csv"), &st), 0);
		assert_int_equal(st.st_mode & 0777, 0600);
	}
	assert_int_equal(dp_dataset_load(&back, path_of("rt.csv"), &o), 0);
	assert_int_equal(back.n, 3);
	assert_int_equal(back.p, 2);
	assert_string_equal(back.names[1], names[1]);
	assert_memory_equal(back.x, ds.x, sizeof(x));
	assert_memory_equal(back.y, ds.y, sizeof(y));
	dp_dataset_free(&back);
	dp_dataset_free(&ds);

	/* default names, and bad arguments */
	assert_int_equal(dp_dataset_from_arrays(&ds, 3, 2, x, y, NULL), 0);
	assert_string_equal(ds.names[0], "x1");
	assert_string_equal(ds.names[1], "x2");
	dp_dataset_free(&ds);
	assert_int_equal(dp_dataset_from_arrays(&ds, 0, 2, x, y, NULL), DP_EINVAL);
	{
		double bad[2] = { 1, NAN };

		assert_int_equal(dp_dataset_from_arrays(&ds, 1, 2, bad, y, NULL), DP_ENUMERIC);
	}
	/* an unwritable path */
	assert_int_equal(dp_dataset_from_arrays(&ds, 3, 2, x, y, NULL), 0);
	assert_int_equal(dp_dataset_write_csv(&ds, path_of("no/such/dir/f.csv")), DP_EIO);
	dp_dataset_free(&ds);
}

static void test_compatible(void **state)
{
	const double x[4] = { 1, 2, 3, 4 }, y[2] = { 1, 2 };
	static const char *const n1[2] = { "a", "b" }, *const n2[2] = { "a", "c" };
	dp_dataset a, b, c, d;
	const dp_dataset *set[3];

	assert_int_equal(dp_dataset_from_arrays(&a, 2, 2, x, y, n1), 0);
	assert_int_equal(dp_dataset_from_arrays(&b, 2, 2, x, y, n1), 0);
	assert_int_equal(dp_dataset_from_arrays(&c, 2, 2, x, y, n2), 0);
	assert_int_equal(dp_dataset_from_arrays(&d, 1, 4, x, y, NULL), 0);
	free(c.source);
	c.source = strdup("owner-3.csv");
	free(d.source);
	d.source = strdup("owner-4.csv");
	set[0] = &a;
	set[1] = &b;
	assert_int_equal(dp_dataset_check_compatible(set, 2), 0);
	assert_int_equal(dp_dataset_check_compatible(set, 1), 0);
	set[2] = &c;
	assert_int_equal(dp_dataset_check_compatible(set, 3), DP_EINVAL);
	assert_string_equal(dp_error_detail(DP_EINVAL),
			    "owner-3.csv: feature 2 is 'c', but 'b' in (arrays)");
	set[2] = &d;
	assert_int_equal(dp_dataset_check_compatible(set, 3), DP_EINVAL);
	assert_string_equal(dp_error_detail(DP_EINVAL),
			    "owner-4.csv: 4 feature columns, but (arrays) has 2");
	dp_dataset_free(&a);
	dp_dataset_free(&b);
	dp_dataset_free(&c);
	dp_dataset_free(&d);
}

/* dp_dataset_norm_l2 against long double (64-bit mantissa: its own error
 * is far below the bound) on rows of every scale: the bound of dataset.h,
 * l >= ||x|| (1 - (p + 2) 2^-53), holds, and l is no further above than
 * that either; subnormal rows are within 2^-1074 + that; NaN and
 * infinities; the rows the loader stores. */
static void test_norm_l2(void **state)
{
	uint64_t st = 12345;
	double x[64];

	(void)state;
	for (int it = 0; it < 20000; it++) {
		size_t p = 1 + (size_t)(it % 64);
		int scale = (int)(it % 9) * 260 - 1070;  /* 2^-1070 .. 2^1010 */
		long double ss = 0, mx = 0;

		for (size_t q = 0; q < p; q++) {
			st = st * 6364136223846793005ULL + 1442695040888963407ULL;
			double u = (double)(st >> 11) * 0x1p-53 - 0.5;
			x[q] = (it % 5 == 0 && q != 0) ? 0.0 : ldexp(u, scale + (int)(st % 8));
			if (fabsl((long double)x[q]) > mx)
				mx = fabsl((long double)x[q]);
		}
		/* the sum of squares of (x / mx), then back: no underflow */
		for (size_t q = 0; q < p; q++)
			if (mx > 0)
				ss += ((long double)x[q] / mx) * ((long double)x[q] / mx);
		long double exact = mx * sqrtl(ss), l = dp_dataset_norm_l2(x, p);
		long double tol = (long double)(p + 2) * 0x1p-53L * exact + 0x1p-1074L;
		if (!(l >= exact - tol && l <= exact + tol))
			fail_msg("p %zu scale %d: %.20Lg vs %.20Lg", p, scale, l, exact);
	}
	x[0] = 3.0;
	x[1] = 4.0;
	assert_true(dp_dataset_norm_l2(x, 2) == 5.0);
	assert_true(dp_dataset_norm_l2(x, 0) == 0.0);
	x[1] = DBL_MAX;
	x[0] = DBL_MAX;
	assert_true(isinf(dp_dataset_norm_l2(x, 2)));
	x[0] = INFINITY;
	assert_true(isinf(dp_dataset_norm_l2(x, 2)));
	x[1] = NAN;
	assert_true(isnan(dp_dataset_norm_l2(x, 2)));

	double xa[4] = { 3, 4, 0, 0 }, ya[2] = { 0, 0 };
	dp_dataset ds;
	assert_int_equal(dp_dataset_from_arrays(&ds, 2, 2, xa, ya, NULL), 0);
	assert_true(ds.row_l2[0] == 5.0 && ds.row_l2[1] == 0.0);
	dp_dataset_free(&ds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_numeric),
		cmocka_unit_test(test_load_many_rows),
		cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_load_with_schema),
		cmocka_unit_test(test_arrays_and_roundtrip),
		cmocka_unit_test(test_compatible),
		cmocka_unit_test(test_norm_l2),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
