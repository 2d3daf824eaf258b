/* SPDX-License-Identifier: Apache-2.0 */
/* Building a feature schema from a sample (tools/lib/schema_build.c):
 * statistics against hand-computed values, detection of column kinds, level
 * and label lists, multi-table samples, build errors, PCA with known
 * answers, and a built schema surviving its file bit for bit. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/core/csv.h"
#include "common/core/error.h"
#include "common/core/schema.h"
#include "tools/lib/schema_build.h"

/* cmocka 1.1 compares floats only in single precision. */
#define assert_near(a, b, eps)                                                                    \
	do {                                                                                      \
		double a_ = (a), b_ = (b);                                                        \
		if (!(fabs(a_ - b_) <= (eps)))                                                    \
			fail_msg("%s = %.17g, expected %.17g (tolerance %g)", #a, a_, b_,         \
				 (double)(eps));                                                  \
	} while (0)

#include "tests/unit/tmpdir.h"

static int setup(void **state)
{
	return tmpdir_setup("test_schema_build");
}

static int teardown(void **state)
{
	return tmpdir_teardown();
}

/* Transform every row of `path` with `s` into x (rows*p) and y. */
static int apply_file(const dp_schema *s, const char *path, double *x, double *y, size_t maxrows,
		      size_t *nrows)
{
	dp_csv_table t;
	dp_schema_bind *b = NULL;
	size_t p = dp_schema_nfeatures(s);
	int rc;

	rc = dp_csv_table_load(&t, path, DP_CSV_ALLOW_EMPTY);
	if (rc != 0)
		return rc;
	rc = dp_schema_bind_new(s, t.source, (const char *const *)t.header, t.ncols, &b);
	for (size_t i = 0; rc == 0 && i < t.nrows && i < maxrows; i++)
		rc = dp_schema_bind_row(b, (const char *const *)&t.cells[i * t.ncols], t.line[i],
					x + i * p, y + i);
	if (nrows)
		*nrows = t.nrows;
	dp_schema_bind_destroy(b);
	dp_csv_table_free(&t);
	return rc;
}

#define SAMPLE                                                                                    \
	"num,cat,ord,const,skip,y\n"                                                              \
	"1,b,lo,5,,10\n"                                                                          \
	"2,a,hi,5,x,20\n"                                                                         \
	"3,c,mid,5,,30\n"                                                                         \
	"4,b,hi,5,,40\n"

static const char *const ord_levels[] = { "lo", "mid", "hi" };
static const char *const drop_skip[] = { "skip" };

static dp_schema_build_opts sample_opts(dp_schema_build_levels *lv)
{
	dp_schema_build_opts o = { 0 };

	lv->column = "ord";
	lv->ordered = 1;
	lv->levels = ord_levels;
	lv->nlevels = 3;
	o.target = "y";
	o.task = DP_TASK_REGRESSION;
	o.drop = drop_skip;
	o.ndrop = 1;
	o.levels = lv;
	o.nlevels = 1;
	o.standardize_target = 1;
	return o;
}

static void test_build_values(void **state)
{
	/* Hand-computed (n - 1 denominators):
	 *   num 1,2,3,4: mean 2.5, squared deviations 2.25+0.25+0.25+2.25 = 5,
	 *     sd = sqrt(5/3);
	 *   ord lo,hi,mid,hi -> 0,2,1,2: mean 1.25, squared deviations
	 *     1.5625+0.5625+0.0625+0.5625 = 2.75, sd = sqrt(2.75/3);
	 *   const: sd 0 -> scale 1, centre 5;
	 *   y 10..40: mean 25, squared deviations 225+25+25+225 = 500,
	 *     sd = sqrt(500/3);
	 *   cat: levels sorted a, b, c. */
	const char *p = put("s.csv", SAMPLE);
	const double sd_num = sqrt(5.0 / 3.0), sd_ord = sqrt(2.75 / 3.0), sd_y = sqrt(500.0 / 3.0);
	static const char *const want_names[] = { "num", "cat=a", "cat=b", "cat=c", "ord", "const" };
	const double want[4][6] = {
		{ (1 - 2.5) / sd_num, 0, 1, 0, (0 - 1.25) / sd_ord, 0 },
		{ (2 - 2.5) / sd_num, 1, 0, 0, (2 - 1.25) / sd_ord, 0 },
		{ (3 - 2.5) / sd_num, 0, 0, 1, (1 - 1.25) / sd_ord, 0 },
		{ (4 - 2.5) / sd_num, 0, 1, 0, (2 - 1.25) / sd_ord, 0 },
	};
	const double want_y[4] = { -15 / sd_y, -5 / sd_y, 5 / sd_y, 15 / sd_y };
	dp_schema_build_levels lv;
	dp_schema_build_opts o = sample_opts(&lv);
	dp_schema *s = NULL;
	double x[4 * 6], y[4], c, sc;
	size_t n;

	assert_int_equal(dp_schema_build(p, &o, &s), 0);
	assert_int_equal(dp_schema_nfeatures(s), 6);
	for (size_t j = 0; j < 6; j++)
		assert_string_equal(dp_schema_feature_names(s)[j], want_names[j]);
	assert_string_equal(dp_schema_target(s), "y");
	assert_int_equal(dp_schema_target_binary(s), 0);
	dp_schema_target_scaling(s, &c, &sc);
	assert_near(c, 25.0, 1e-12);
	assert_near(sc, sd_y, 1e-12);
	assert_int_equal(apply_file(s, p, x, y, 4, &n), 0);
	assert_int_equal(n, 4);
	for (size_t i = 0; i < 4; i++) {
		for (size_t j = 0; j < 6; j++)
			assert_near(x[i * 6 + j], want[i][j], 1e-12);
		assert_near(y[i], want_y[i], 1e-12);
		/* mapping back gives the raw target */
		assert_near(c + sc * y[i], 10.0 * (double)(i + 1), 1e-9);
	}
	dp_schema_destroy(s);
}

static void test_clamp_and_raw_target(void **state)
{
	const char *p = put("s.csv", SAMPLE);
	const double sd_num = sqrt(5.0 / 3.0), sd_ord = sqrt(2.75 / 3.0);
	dp_schema_build_levels lv;
	dp_schema_build_opts o = sample_opts(&lv);
	dp_schema *s = NULL;
	double x[4 * 6], y[4], c, sc;

	o.clamp_z = 1.0;
	o.standardize_target = 0;
	assert_int_equal(dp_schema_build(p, &o, &s), 0);
	assert_int_equal(apply_file(s, p, x, y, 4, NULL), 0);
	/* num: -1.5/1.291 = -1.162 -> -1; -0.387 and 0.387 stay; 1.162 -> 1 */
	assert_near(x[0], -1.0, 0);
	assert_near(x[6], -0.5 / sd_num, 1e-12);
	assert_near(x[18], 1.0, 0);
	/* the clamp applies to numeric columns only: ord keeps -1.306 */
	assert_near(x[4], -1.25 / sd_ord, 1e-12);
	assert_true(x[4] < -1.0);
	assert_near(y[0], 10.0, 0);
	dp_schema_target_scaling(s, &c, &sc);
	assert_true(c == 0.0 && sc == 1.0);
	dp_schema_destroy(s);
}

static void test_binary_target(void **state)
{
	const char *p = put("b.csv", "f,label\n1,yes\n2,no\n3,maybe\n4,yes\n");
	dp_schema_build_opts o = { 0 };
	dp_schema *s = NULL;
	double x[4], y[4];

	o.target = "label";
	o.task = DP_TASK_CLASSIFICATION;
	o.positive = "yes";
	assert_int_equal(dp_schema_build(p, &o, &s), 0);
	assert_int_equal(dp_schema_target_binary(s), 1);
	assert_int_equal(apply_file(s, p, x, y, 4, NULL), 0);
	assert_true(y[0] == 1.0 && y[1] == -1.0 && y[2] == -1.0 && y[3] == 1.0);

	/* A label the schema does not know is an error, never a silent -1. */
	p = put("b2.csv", "label,f\nyes,1\nunknown,2\n");
	assert_int_equal(apply_file(s, p, x, y, 4, NULL), DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT),
			       "b2.csv:3: column 'label': the target label is not in the "
			       "schema's list (maybe, no, yes)"));
	assert_null(strstr(dp_error_detail(DP_EFORMAT), "unknown"));
	dp_schema_destroy(s);

	/* A fixed label list may hold labels the sample lacks; a sample label
	 * outside it is an error. */
	{
		static const char *const labels[] = { "no", "yes", "maybe", "later" };

		o.labels = labels;
		o.nlabels = 4;
		assert_int_equal(dp_schema_build(put("b.csv", "f,label\n1,yes\n2,no\n3,maybe\n"), &o,
						 &s),
				 0);
		assert_int_equal(apply_file(s, put("b3.csv", "f,label\n1,later\n2,yes\n"), x, y, 2,
					    NULL),
				 0);
		assert_true(y[0] == -1.0 && y[1] == 1.0);
		dp_schema_destroy(s);
		s = NULL;
		o.nlabels = 2; /* no, yes */
		assert_int_equal(dp_schema_build(put("b.csv", "f,label\n1,yes\n2,no\n3,maybe\n"), &o,
						 &s),
				 DP_EFORMAT);
		assert_non_null(strstr(dp_error_detail(DP_EFORMAT),
				       "b.csv:4: column 'label': 'maybe' is not in the label list "
				       "given (no, yes)"));
		o.labels = NULL;
		o.nlabels = 0;
	}
	s = NULL;
	o.positive = "Yes";
	assert_int_equal(dp_schema_build(put("b.csv", "f,label\n1,yes\n2,no\n"), &o, &s),
			 DP_EFORMAT);
	assert_null(s);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "positive label 'Yes' is not among"));
	o.positive = "yes";
	assert_int_equal(dp_schema_build(put("b.csv", "f,label\n1,yes\n2,yes\n"), &o, &s),
			 DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "single label"));
	o.positive = NULL;
	assert_int_equal(dp_schema_build(p, &o, &s), DP_EINVAL);
	/* regression on a text target */
	o.task = DP_TASK_REGRESSION;
	assert_int_equal(dp_schema_build(put("b.csv", "f,label\n1,yes\n2,no\n"), &o, &s),
			 DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT),
			       "b.csv:2: column 'label': a regression target must be a finite "
			       "number, got 'yes'"));
}

static void test_build_errors(void **state)
{
	const char *p = put("s.csv", SAMPLE);
	static const char *const nosuch[] = { "nosuch" };
	static const char *const cat[] = { "cat" };
	dp_schema_build_levels lv;
	dp_schema_build_opts o = sample_opts(&lv);
	dp_schema *s = NULL;

	o.target = "price";
	assert_int_equal(dp_schema_build(p, &o, &s), DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT),
			       "s.csv: target column 'price' not found (columns: num, cat, ord, "
			       "const, skip, y)"));
	o = sample_opts(&lv);
	o.drop = nosuch;
	assert_int_equal(dp_schema_build(p, &o, &s), DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "drop column 'nosuch' not found"));
	/* without dropping it, the empty cells of 'skip' are missing values */
	o = sample_opts(&lv);
	o.ndrop = 0;
	assert_int_equal(dp_schema_build(p, &o, &s), DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "s.csv:2: column 'skip': empty cell"));
	o = sample_opts(&lv);
	o.max_levels = 2;
	assert_int_equal(dp_schema_build(p, &o, &s), DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT),
			       "column 'cat' is not numeric ('b' on "));
	o = sample_opts(&lv);
	lv.levels = ord_levels + 1; /* "mid", "hi": "lo" is not in the order */
	lv.nlevels = 2;
	assert_int_equal(dp_schema_build(p, &o, &s), DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT),
			       "s.csv:2: column 'ord': 'lo' is not in the ordinal order given"));
	o = sample_opts(&lv);
	o.onehot = cat;
	o.nonehot = 1;
	o.drop = cat;
	assert_int_equal(dp_schema_build(p, &o, &s), DP_EINVAL);
	o = sample_opts(&lv);
	o.pca = 7; /* only 6 features */
	assert_int_equal(dp_schema_build(p, &o, &s), DP_EINVAL);
	o = sample_opts(&lv);
	o.clamp_z = NAN;
	assert_int_equal(dp_schema_build(p, &o, &s), DP_EINVAL);
	o = sample_opts(&lv);
	o.target = NULL;
	assert_int_equal(dp_schema_build(p, &o, &s), DP_EINVAL);
	o = sample_opts(&lv);
	assert_int_equal(dp_schema_build(put("h.csv", "num,y\n"), &o, &s), DP_EFORMAT);
	assert_null(s);
	assert_int_equal(dp_schema_build(path_of("missing.csv"), &o, &s), DP_ENOENT);
}

static void test_onehot_forced_and_fixed(void **state)
{
	/* A numeric-looking code column forced to onehot (two codes: one 0/1
	 * feature), and a fixed level list that includes a level the sample
	 * lacks. */
	const char *p = put("c.csv", "zip,col,y\n10,red,1\n20,blue,2\n10,red,3\n");
	static const char *const zip[] = { "zip" };
	static const char *const colours[] = { "red", "green", "blue" };
	dp_schema_build_levels lv = { "col", 0, colours, 3 };
	dp_schema_build_opts o = { 0 };
	dp_schema *s = NULL;
	double x[3 * 4], y[3];

	o.target = "y";
	o.onehot = zip;
	o.nonehot = 1;
	o.levels = &lv;
	o.nlevels = 1;
	assert_int_equal(dp_schema_build(p, &o, &s), 0);
	assert_int_equal(dp_schema_nfeatures(s), 4);
	assert_string_equal(dp_schema_feature_names(s)[0], "zip=20");
	assert_string_equal(dp_schema_feature_names(s)[2], "col=green"); /* user order kept */
	assert_int_equal(apply_file(s, p, x, y, 3, NULL), 0);
	const double want1[4] = { 1, 0, 0, 1 }; /* zip=20, col=blue */

	for (size_t j = 0; j < 4; j++)
		assert_true(x[4 + j] == want1[j]);
	dp_schema_destroy(s);
}

static void test_two_levels(void **state)
{
	/* A detected column with two levels is ONE 0/1 feature, 1 for the
	 * second level in sorted order; a given list of two, 1 for the second
	 * as listed; three levels stay onehot.  The saved schema is version 2
	 * and reads back the same. */
	const char *p = put("t.csv", "sex,term,col,x,y\n"
				     "male,term_60,red,1,1\n"
				     "female,term_36,blue,2,2\n"
				     "male,term_36,green,3,3\n");
	static const char *const terms[] = { "term_60", "term_36" };
	dp_schema_build_levels lv = { "term", 0, terms, 2 };
	dp_schema_build_opts o = { 0 };
	dp_schema *s = NULL, *s2 = NULL;
	double x[3 * 6], y[3], x2[3 * 6], y2[3];
	static const char *const want_names[] = { "sex=male", "term=term_36", "col=blue", "col=green",
						   "col=red", "x" };
	const double want[3][5] = { { 1, 0, 0, 0, 1 }, { 0, 1, 1, 0, 0 }, { 1, 1, 0, 1, 0 } };

	o.target = "y";
	o.levels = &lv;
	o.nlevels = 1;
	assert_int_equal(dp_schema_build(p, &o, &s), 0);
	assert_int_equal(dp_schema_nfeatures(s), 6);
	for (size_t j = 0; j < 6; j++)
		assert_string_equal(dp_schema_feature_names(s)[j], want_names[j]);
	assert_int_equal(apply_file(s, p, x, y, 3, NULL), 0);
	for (size_t i = 0; i < 3; i++)
		for (size_t j = 0; j < 5; j++)
			assert_true(x[i * 6 + j] == want[i][j]);
	assert_int_equal(dp_schema_save(s, path_of("t.json")), 0);
	assert_int_equal(dp_schema_load(path_of("t.json"), &s2), 0);
	assert_int_equal(apply_file(s2, p, x2, y2, 3, NULL), 0);
	assert_memory_equal(x, x2, sizeof(x));
	dp_schema_destroy(s);
	dp_schema_destroy(s2);
}

static void test_multi_table_sample(void **state)
{
	/* Two files with the columns in different orders; the sample is rows
	 * {0, 2} of the first and {1} of the second: a = 1, 3, 10 -> mean
	 * 14/3.  The level tables add level 'z' that the sample lacks. */
	dp_csv_table t1, t2;
	const dp_csv_table *tabs[2] = { &t1, &t2 };
	const dp_schema_build_pick picks[3] = { { 0, 0 }, { 0, 2 }, { 1, 1 } };
	dp_schema_build_opts o = { 0 };
	dp_schema *s = NULL;

	assert_int_equal(dp_csv_table_load(&t1, put("m1.csv", "a,k,y\n1,p,0\n2,q,0\n3,p,0\n"), 0), 0);
	assert_int_equal(dp_csv_table_load(&t2, put("m2.csv", "y,k,a\n0,z,9\n0,q,10\n"), 0), 0);
	o.target = "y";
	assert_int_equal(dp_schema_build_tables(tabs, 2, picks, 3, &o, &s), 0);
	assert_int_equal(dp_schema_nfeatures(s), 2); /* a, k=q (two levels: one feature) */
	assert_string_equal(dp_schema_feature_names(s)[1], "k=q");
	{
		dp_schema_bind *b = NULL;
		/* t2's order: y, k, a; a = 14/3 maps to 0 */
		const char *row[3] = { "0", "q", "4.666666666666667" };
		double x[2], y;

		assert_int_equal(dp_schema_bind_new(s, "m2.csv", (const char *const *)t2.header, 3,
						    &b),
				 0);
		assert_int_equal(dp_schema_bind_row(b, row, 9, x, &y), 0);
		assert_near(x[0], 0.0, 1e-12);
		row[1] = "z"; /* not in the sample's levels */
		x[0] = 123;
		assert_int_equal(dp_schema_bind_row(b, row, 9, x, &y), DP_EFORMAT);
		assert_true(x[0] == 123); /* outputs untouched on failure */
		assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "m2.csv:9: column 'k'"));
		dp_schema_bind_destroy(b);
	}
	dp_schema_destroy(s);
	s = NULL;
	o.level_tables = tabs;
	o.nlevel_tables = 2;
	assert_int_equal(dp_schema_build_tables(tabs, 2, picks, 3, &o, &s), 0);
	assert_int_equal(dp_schema_nfeatures(s), 4); /* a, k=p, k=q, k=z */
	assert_string_equal(dp_schema_feature_names(s)[3], "k=z");
	dp_schema_destroy(s);
	/* a sample error names the row's own file */
	dp_csv_table_free(&t2);
	assert_int_equal(dp_csv_table_load(&t2, put("m2.csv", "y,k,a\n0,z,9\n0,q,ten\n"), 0), 0);
	o.level_tables = NULL;
	o.onehot = NULL;
	{
		static const char *const drop_k[] = { "k" };

		o.drop = drop_k;
		o.ndrop = 1;
		o.task = DP_TASK_REGRESSION;
		o.target = "a";
		assert_int_equal(dp_schema_build_tables(tabs, 2, picks, 3, &o, &s), DP_EFORMAT);
		assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "m2.csv:3: column 'a'"));
	}
	dp_csv_table_free(&t1);
	dp_csv_table_free(&t2);
}

static void test_pca_known(void **state)
{
	/* a = 1,2,3,4 and b = 1,3,2,4: both have mean 2.5 and squared
	 * deviations summing to 5; the cross products sum to 4, so the
	 * correlation of the standardised columns is 4/5.  Their covariance
	 * [[1, .8], [.8, 1]] has eigenvalues 1.8 and 0.2 with eigenvectors
	 * (1,1)/sqrt2 and (1,-1)/sqrt2 (sign rule: largest |entry| positive,
	 * the first one on ties).  So pc1 = (za + zb)/sqrt2, pc2 = (za - zb)/sqrt2. */
	const char *p = put("pca.csv", "a,b,y\n1,1,0\n2,3,0\n3,2,0\n4,4,0\n");
	const double sd = sqrt(5.0 / 3.0);
	const double a[4] = { 1, 2, 3, 4 }, bb[4] = { 1, 3, 2, 4 };
	dp_schema_build_opts o = { 0 };
	dp_schema *s = NULL;
	double x[4 * 2], y[4];

	o.target = "y";
	o.pca = 2;
	assert_int_equal(dp_schema_build(p, &o, &s), 0);
	assert_int_equal(dp_schema_nfeatures(s), 2);
	assert_string_equal(dp_schema_feature_names(s)[0], "pc1");
	assert_string_equal(dp_schema_feature_names(s)[1], "pc2");
	assert_int_equal(apply_file(s, p, x, y, 4, NULL), 0);
	for (size_t i = 0; i < 4; i++) {
		double za = (a[i] - 2.5) / sd, zb = (bb[i] - 2.5) / sd;

		assert_near(x[2 * i], (za + zb) / sqrt(2.0), 1e-12);
		assert_near(x[2 * i + 1], (za - zb) / sqrt(2.0), 1e-12);
	}
	/* the variances go to the file: check them through a save */
	assert_int_equal(dp_schema_save(s, path_of("pca.json")), 0);
	{
		json_object *root = json_object_from_file(path_of("pca.json")), *pca, *var;

		assert_non_null(root);
		assert_true(json_object_object_get_ex(root, "pca", &pca));
		assert_true(json_object_object_get_ex(pca, "variance", &var));
		assert_near(json_object_get_double(json_object_array_get_idx(var, 0)), 1.8,
				    1e-12);
		assert_near(json_object_get_double(json_object_array_get_idx(var, 1)), 0.2,
				    1e-12);
		json_object_put(root);
	}
	dp_schema_destroy(s);

	/* Points on a line, b = 7 - 3a: za = -zb exactly, covariance
	 * [[1,-1],[-1,1]]; the top component is (1,-1)/sqrt2 (first entry made
	 * positive on the tie), so pc1 = sqrt2 * za. */
	p = put("line.csv", "a,b,y\n1,4,0\n2,1,0\n4,-5,0\n");
	o.pca = 1;
	s = NULL;
	assert_int_equal(dp_schema_build(p, &o, &s), 0);
	assert_int_equal(apply_file(s, p, x, y, 3, NULL), 0);
	{
		/* a = 1,2,4: mean 7/3, squared deviations 16/9+1/9+25/9 = 42/9 */
		const double m = 7.0 / 3.0, sda = sqrt(42.0 / 9.0 / 2.0), av[3] = { 1, 2, 4 };

		for (size_t i = 0; i < 3; i++)
			assert_near(x[i], sqrt(2.0) * (av[i] - m) / sda, 1e-12);
	}
	dp_schema_destroy(s);

	/* too few rows for a covariance */
	s = NULL;
	assert_int_equal(dp_schema_build(put("one.csv", "a,b,y\n1,2,3\n"), &o, &s), DP_EFORMAT);
	assert_null(s);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = malloc(1 << 20);
	size_t n;

	assert_non_null(f);
	assert_non_null(buf);
	n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void test_roundtrip(void **state)
{
	/* Everything a schema can hold: numeric with clamp, onehot, ordinal,
	 * drop, standardised target, PCA; odd doubles must survive exactly. */
	const char *p = put("r.csv", "num,cat,ord,skip,y\n"
				     "0.1,\"x,1\",lo,a,1e-300\n"
				     "0.2,\"y \"\"q\"\"\",hi,b,3.3333333333333335\n"
				     "0.30000000000000004,\"x,1\",mid,c,-7\n"
				     "1e6,\"y \"\"q\"\"\",hi,d,2.5\n");
	dp_schema_build_levels lv;
	dp_schema_build_opts o = sample_opts(&lv);
	dp_schema *s = NULL, *s2 = NULL;
	double x1[4 * 3], y1[4], x2[4 * 3], y2[4];
	char *j1, *j2;

	o.clamp_z = 3;
	o.pca = 3;
	assert_int_equal(dp_schema_build(p, &o, &s), 0);
	assert_int_equal(dp_schema_save(s, path_of("r.json")), 0);
	assert_int_equal(dp_schema_load(path_of("r.json"), &s2), 0);
	assert_int_equal(dp_schema_nfeatures(s2), 3);
	assert_int_equal(apply_file(s, p, x1, y1, 4, NULL), 0);
	assert_int_equal(apply_file(s2, p, x2, y2, 4, NULL), 0);
	assert_memory_equal(x1, x2, sizeof(x1)); /* bit for bit */
	assert_memory_equal(y1, y2, sizeof(y1));
	assert_int_equal(dp_schema_save(s2, path_of("r2.json")), 0);
	j1 = slurp(path_of("r.json"));
	j2 = slurp(path_of("r2.json"));
	assert_string_equal(j1, j2);
	assert_non_null(strstr(j1, "\"clamp\""));
	assert_non_null(strstr(j1, "\"y \\\"q\\\"\""));
	free(j1);
	free(j2);
	dp_schema_destroy(s);
	dp_schema_destroy(s2);
	dp_schema_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_values),
		cmocka_unit_test(test_clamp_and_raw_target),
		cmocka_unit_test(test_binary_target),
		cmocka_unit_test(test_build_errors),
		cmocka_unit_test(test_onehot_forced_and_fixed),
		cmocka_unit_test(test_two_levels),
		cmocka_unit_test(test_multi_table_sample),
		cmocka_unit_test(test_pca_known),
		cmocka_unit_test(test_roundtrip),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
