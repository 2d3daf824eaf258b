/* SPDX-License-Identifier: Apache-2.0 */
/* Feature schema (common/core/schema.c, schema_file.c, schema_bind.c):
 * applying a schema to rows and its errors, the JSON file round trip,
 * hand-written files, and rejection of bad schema files.  The schemas here are written by hand; building them from a
 * sample is tested in test_schema_build.c. */
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
	return tmpdir_setup("test_schema");
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

/* The schema that tools/lib/schema_build.c makes from the sample
 *   num,cat,ord,const,skip,y / 1,b,lo,5,,10 / 2,a,hi,5,x,20 / 3,c,mid,5,,30 /
 *   4,b,hi,5,,40
 * with 'ord' ordinal (lo, mid, hi), 'skip' dropped and y standardised
 * (test_schema_build.c), written by hand: num mean 2.5, sd sqrt(5/3); cat
 * levels a, b, c; ord indices mean 1.25, sd sqrt(2.75/3); const scale 1; y
 * mean 25, sd sqrt(500/3).  %.17g reads back as the same doubles. */
static const char *sample_schema(void)
{
	char text[1024];

	snprintf(text, sizeof(text),
		 "{\"format\": \"dpasync-schema\", \"version\": 1, \"columns\": ["
		 "{\"name\": \"num\", \"kind\": \"numeric\", \"center\": 2.5, \"scale\": %.17g},"
		 "{\"name\": \"cat\", \"kind\": \"onehot\", \"levels\": [\"a\", \"b\", \"c\"]},"
		 "{\"name\": \"ord\", \"kind\": \"ordinal\", \"levels\": [\"lo\", \"mid\", \"hi\"],"
		 " \"center\": 1.25, \"scale\": %.17g},"
		 "{\"name\": \"const\", \"kind\": \"numeric\", \"center\": 5, \"scale\": 1},"
		 "{\"name\": \"skip\", \"kind\": \"drop\"}],"
		 "\"target\": {\"name\": \"y\", \"kind\": \"numeric\", \"center\": 25,"
		 " \"scale\": %.17g}}",
		 sqrt(5.0 / 3.0), sqrt(2.75 / 3.0), sqrt(500.0 / 3.0));
	return put("sample.json", text);
}

static void test_accessors(void **state)
{
	static const char *const want_names[] = { "num", "cat=a", "cat=b", "cat=c", "ord",
						   "const" };
	dp_schema *s = NULL;
	double c, sc;

	assert_int_equal(dp_schema_load(sample_schema(), &s), 0);
	assert_int_equal(dp_schema_nfeatures(s), 6);
	for (size_t j = 0; j < 6; j++)
		assert_string_equal(dp_schema_feature_names(s)[j], want_names[j]);
	assert_string_equal(dp_schema_target(s), "y");
	assert_int_equal(dp_schema_target_binary(s), 0);
	dp_schema_target_scaling(s, &c, &sc);
	assert_true(c == 25.0 && sc == sqrt(500.0 / 3.0));
	dp_schema_destroy(s);
}

static void test_apply_errors(void **state)
{
	dp_schema *s = NULL;
	double x[8 * 6], y[8];

	assert_int_equal(dp_schema_load(sample_schema(), &s), 0);
	/* column order may differ, and the dropped column may be absent */
	assert_int_equal(apply_file(s, put("ok.csv", "y,const,ord,cat,num\n1,5,mid,c,3\n"), x, y,
				    8, NULL),
			 0);
	assert_near(x[0], 0.5 / sqrt(5.0 / 3.0), 1e-12);
	assert_true(x[3] == 1.0);

	/* the cell's position and what is wrong, never its text
	 * (docs/privacy.md §8): the bad cell is not in the detail */
#define APPLY_FAILS_CELL(text, detail, cell)                                                      \
	do {                                                                                      \
		assert_int_equal(apply_file(s, put("e.csv", text), x, y, 8, NULL), DP_EFORMAT);   \
		assert_non_null(strstr(dp_error_detail(DP_EFORMAT), detail));                     \
		assert_null(strstr(dp_error_detail(DP_EFORMAT), cell));                           \
	} while (0)
#define APPLY_FAILS(text, detail) APPLY_FAILS_CELL(text, detail, "\x01")

	APPLY_FAILS_CELL("num,cat,ord,const,y\n1,b,lo,5,1\n1,d,lo,5,1\n",
			 "e.csv:3: column 'cat': the level is not in the schema's list (a, b, c)",
			 "'d'");
	APPLY_FAILS_CELL("num,cat,ord,const,y\n1,\"d\ne\",lo,5,1\n",
			 "e.csv:2: column 'cat': the level is not in the schema's list (a, b, c)",
			 "d\\ne");
	APPLY_FAILS_CELL("num,cat,ord,const,y\n1,b,top,5,1\n",
			 "e.csv:2: column 'ord': the level is not in the schema's list (lo, mid, hi)",
			 "top");
	APPLY_FAILS_CELL("num,cat,ord,const,y\n1,b,lo,5,1\n1.5x,b,lo,5,1\n",
			 "e.csv:3: column 'num': not a finite number", "1.5x");
	APPLY_FAILS_CELL("num,cat,ord,const,y\nnan,b,lo,5,1\n",
			 "e.csv:2: column 'num': not a finite number", "nan");
	APPLY_FAILS("num,cat,ord,const,y\n1,b,lo,,1\n",
		    "e.csv:2: column 'const': empty cell");
	APPLY_FAILS("num,cat,ord,const,y\n1,b,lo,5,\n", "e.csv:2: column 'y': empty target cell");
	APPLY_FAILS("num,cat,ord,y\n1,b,lo,1\n",
		    "e.csv: column 'const' (numeric in the schema) is missing from the header");
	APPLY_FAILS("num,cat,ord,const,y,extra\n1,b,lo,5,1,2\n",
		    "e.csv: column 'extra' is not in the schema");
	APPLY_FAILS("num,cat,ord,const\n1,b,lo,5\n",
		    "e.csv: target column 'y' is missing from the header");
	dp_schema_destroy(s);
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

static void test_roundtrip_file(void **state)
{
	/* Everything a schema file can hold: numeric with clamp, onehot and
	 * ordinal levels that need escaping, drop, a binary target, PCA; odd
	 * doubles must survive save and load exactly. */
	const char *p = put("in.json",
			    "{\"version\": 1, \"columns\": ["
			    "{\"name\": \"num\", \"kind\": \"numeric\", \"center\": 0.30000000000000004,"
			    " \"scale\": 3.3333333333333335, \"clamp\": [-1e-300, 1e300]},"
			    "{\"name\": \"cat\", \"kind\": \"onehot\", \"levels\": [\"x,1\", \"y \\\"q\\\"\"]},"
			    "{\"name\": \"ord\", \"kind\": \"ordinal\", \"levels\": [\"lo\", \"hi\"],"
			    " \"center\": 0.1, \"scale\": 1e-7},"
			    "{\"name\": \"skip\", \"kind\": \"drop\"}],"
			    "\"target\": {\"name\": \"y\", \"kind\": \"binary\", \"positive\": \"a b\","
			    " \"labels\": [\"c\", \"a b\"]},"
			    "\"pca\": {\"mean\": [0.1, 0.2, -0.30000000000000004, 5e-324],"
			    " \"variance\": [2.5, 0],"
			    " \"components\": [[0.6, 0.8, 0, 0], [0, 0, -0.8, 0.6]]}}");
	const char *rows = put("r.csv", "y,skip,ord,cat,num\n"
					"c,,hi,\"x,1\",0.7\n"
					"a b,z,lo,\"y \"\"q\"\"\",-2\n");
	dp_schema *s = NULL, *s2 = NULL;
	double x1[2 * 2], y1[2], x2[2 * 2], y2[2];
	char *j1, *j2;

	assert_int_equal(dp_schema_load(p, &s), 0);
	assert_int_equal(dp_schema_nfeatures(s), 2);
	assert_string_equal(dp_schema_feature_names(s)[1], "pc2");
	assert_int_equal(dp_schema_target_binary(s), 1);
	assert_int_equal(dp_schema_save(s, path_of("out.json")), 0);
	assert_int_equal(dp_schema_load(path_of("out.json"), &s2), 0);
	assert_int_equal(apply_file(s, rows, x1, y1, 2, NULL), 0);
	assert_int_equal(apply_file(s2, rows, x2, y2, 2, NULL), 0);
	assert_memory_equal(x1, x2, sizeof(x1)); /* bit for bit */
	assert_memory_equal(y1, y2, sizeof(y1));
	assert_true(y1[0] == -1.0 && y1[1] == 1.0);
	/* row 1: z = ((0.7 - c) / s, 1, 0, (1 - 0.1) / 1e-7); pc1 = .6 z0 + .8 z1
	 * after the mean is taken off */
	assert_near(x1[0], 0.6 * ((0.7 - 0.30000000000000004) / 3.3333333333333335 - 0.1) +
				   0.8 * (1.0 - 0.2),
		    1e-12);
	assert_int_equal(dp_schema_save(s2, path_of("out2.json")), 0);
	j1 = slurp(path_of("out.json"));
	j2 = slurp(path_of("out2.json"));
	assert_string_equal(j1, j2);
	assert_non_null(strstr(j1, "dpasync-schema"));
	assert_non_null(strstr(j1, "0.30000000000000004"));
	assert_non_null(strstr(j1, "5e-324"));
	assert_non_null(strstr(j1, "\"y \\\"q\\\"\""));
	free(j1);
	free(j2);
	dp_schema_destroy(s);
	dp_schema_destroy(s2);
	dp_schema_destroy(NULL);
}

static void test_hand_written(void **state)
{
	const char *p = put("h.json",
			    "{\"version\": 1, \"columns\": ["
			    "{\"name\": \"x\", \"kind\": \"numeric\", \"center\": 1, \"scale\": 2,"
			    " \"clamp\": [-1, 1]},"
			    "{\"name\": \"c\", \"kind\": \"onehot\", \"levels\": [\"b\", \"a\"]},"
			    "{\"name\": \"d\", \"kind\": \"drop\"}],"
			    "\"target\": {\"name\": \"y\", \"kind\": \"binary\", \"positive\": \"t\","
			    " \"labels\": [\"t\", \"f\"]}}");
	dp_schema *s = NULL;
	double x[2 * 3], y[2];

	assert_int_equal(dp_schema_load(p, &s), 0);
	assert_int_equal(
		apply_file(s, put("d.csv", "d,c,x,y\n,a,2,f\nq,b,9,t\n"), x, y, 2, NULL), 0);
	/* (2-1)/2 = 0.5; c=a is the second level; (9-1)/2 = 4 -> clamp 1 */
	const double want[6] = { 0.5, 0, 1, 1, 1, 0 };

	for (size_t j = 0; j < 6; j++)
		assert_true(x[j] == want[j]);
	assert_true(y[0] == -1 && y[1] == 1);
	dp_schema_destroy(s);
}

static void test_bad_files(void **state)
{
	static const struct {
		const char *json, *detail;
	} cases[] = {
#define COLS(c) "{\"version\":1,\"columns\":[" c "],\"target\":{\"name\":\"y\",\"kind\":\"numeric\"}}"
#define NUM "{\"name\":\"x\",\"kind\":\"numeric\",\"center\":0,\"scale\":1}"
		{ COLS("{\"name\":\"x\",\"kind\":\"numerc\"}"), "column 'x': unknown kind 'numerc'" },
		{ COLS("{\"name\":\"x\",\"kind\":\"numeric\",\"center\":\"0\",\"scale\":1}"),
		  "column 'x': 'center' must be a number" },
		{ COLS("{\"name\":\"x\",\"kind\":\"onehot\",\"levels\":[]}"),
		  "column 'x': 'levels' must not be empty" },
		{ COLS("{\"name\":\"x\",\"kind\":\"onehot\",\"levels\":[\"a\",\"a\"]}"),
		  "'levels' lists 'a' twice" },
		{ COLS("{\"name\":\"x\",\"kind\":\"onehot\",\"levels\":[1]}"),
		  "'levels'[0] must be a string" },
		{ COLS("{\"name\":\"x\",\"kind\":\"onehot\",\"levels\":[\"\"]}"),
		  "'levels'[0] must be a non-empty string" },
		{ COLS("{\"name\":\"x\",\"kind\":\"numeric\",\"center\":0,\"scale\":0}"),
		  "'scale' must be > 0, got 0" },
		{ COLS("{\"name\":\"x\",\"kind\":\"ordinal\",\"levels\":[\"a\"],\"center\":0,"
		       "\"scale\":-1}"),
		  "'scale' must be > 0, got -1" },
		{ COLS("{\"name\":\"x\",\"kind\":\"numeric\",\"center\":1e999,\"scale\":1}"),
		  "'center' must be finite" },
		{ COLS("{\"name\":\"x\",\"kind\":\"numeric\",\"center\":NaN,\"scale\":1}"),
		  "'center' must be finite" },
		{ COLS("{\"name\":\"x\",\"kind\":\"numeric\",\"center\":0}"),
		  "missing key 'scale'" },
		{ COLS("{\"name\":\"x\",\"kind\":\"numeric\",\"centre\":0,\"scale\":1}"),
		  "unknown key 'centre'" },
		{ COLS("{\"name\":\"x\",\"kind\":\"numeric\",\"center\":0,\"scale\":1,"
		       "\"clamp\":[1,-1]}"),
		  "'clamp' must be [lo, hi] with lo < hi" },
		{ COLS("{\"name\":\"x\",\"kind\":\"drop\",\"center\":0}"), "do not apply to kind 'drop'" },
		{ COLS("{\"name\":\"\",\"kind\":\"drop\"}"), "'name' must not be empty" },
		{ COLS(NUM "," NUM), "column 'x' appears twice" },
		{ COLS("{\"name\":\"x\",\"kind\":\"drop\"}"), "no features" },
		{ COLS("{\"name\":\"y\",\"kind\":\"numeric\",\"center\":0,\"scale\":1}"),
		  "'y' is also listed in 'columns'" },
		{ "{\"columns\":[" NUM "],\"target\":{\"name\":\"y\",\"kind\":\"numeric\"}}",
		  "missing key 'version'" },
		{ "{\"version\":3,\"columns\":[" NUM "],\"target\":{\"name\":\"y\",\"kind\":\"numeric\"}}",
		  "version: 3 is newer than this dpasync reads (2)" },
		{ COLS("{\"name\":\"x\",\"kind\":\"binary\",\"levels\":[\"a\",\"b\"]}"),
		  "column 'x': kind 'binary' needs \"version\": 2 (the file says 1)" },
		{ "{\"version\":2,\"columns\":[{\"name\":\"x\",\"kind\":\"binary\",\"levels\":"
		  "[\"a\",\"b\",\"c\"]}],\"target\":{\"name\":\"y\",\"kind\":\"numeric\"}}",
		  "column 'x': kind 'binary' needs exactly two levels, got 3" },
		{ "{\"version\":2,\"columns\":[{\"name\":\"x\",\"kind\":\"binary\",\"levels\":"
		  "[\"a\",\"b\"],\"center\":0,\"scale\":1}],\"target\":{\"name\":\"y\",\"kind\":"
		  "\"numeric\"}}",
		  "do not apply to kind 'binary'" },
		{ "{\"version\":2,\"columns\":[{\"name\":\"x\",\"kind\":\"binary\"}],"
		  "\"target\":{\"name\":\"y\",\"kind\":\"numeric\"}}",
		  "column 'x': missing key 'levels'" },
		{ "{\"version\":\"1\",\"columns\":[" NUM "],\"target\":{\"name\":\"y\",\"kind\":\"numeric\"}}",
		  "version: must be an integer" },
		{ "{\"version\":1,\"format\":\"other\",\"columns\":[" NUM "],\"target\":{\"name\":\"y\","
		  "\"kind\":\"numeric\"}}",
		  "'other' is not a dpasync schema" },
		{ "{\"version\":1,\"columns\":[],\"target\":{\"name\":\"y\",\"kind\":\"numeric\"}}",
		  "columns: must be a non-empty array" },
		{ "{\"version\":1,\"columns\":[" NUM "]}", "missing key 'target'" },
		{ "{\"version\":1,\"columns\":[" NUM "],\"target\":{\"name\":\"y\",\"kind\":\"multi\"}}",
		  "target: unknown kind 'multi'" },
		{ "{\"version\":1,\"columns\":[" NUM "],\"target\":{\"name\":\"y\",\"kind\":\"binary\","
		  "\"positive\":\"a\",\"labels\":[\"b\",\"c\"]}}",
		  "positive label 'a' is not in 'labels'" },
		{ "{\"version\":1,\"columns\":[" NUM "],\"target\":{\"name\":\"y\",\"kind\":\"binary\","
		  "\"positive\":\"a\",\"labels\":[\"a\"]}}",
		  "'labels' needs at least two labels" },
		{ "{\"version\":1,\"columns\":[" NUM "],\"target\":{\"name\":\"y\",\"kind\":\"numeric\","
		  "\"center\":1}}",
		  "'center' and 'scale' go together" },
		{ "{\"version\":1,\"columns\":[" NUM "],\"target\":{\"name\":\"y\",\"kind\":\"numeric\"},"
		  "\"pca\":{\"mean\":[0,0],\"components\":[[1]]}}",
		  "'mean' must have 1 numbers, has 2" },
		{ "{\"version\":1,\"columns\":[" NUM "],\"target\":{\"name\":\"y\",\"kind\":\"numeric\"},"
		  "\"pca\":{\"mean\":[0],\"components\":[[0.5]]}}",
		  "not a unit vector" },
		{ "{\"version\":1,\"columns\":[" NUM "],\"target\":{\"name\":\"y\",\"kind\":\"numeric\"},"
		  "\"pca\":{\"mean\":[0],\"components\":[[1],[1]]}}",
		  "2 components for 1 features" },
		{ COLS(NUM) " x", "invalid JSON at byte" },
		{ "[1, 2]", "top level: must be a JSON object" },
		{ "{\"version\":1,", "unexpected end of" },
		{ "", "unexpected end of" },
		{ "null", "JSON null" },
#undef COLS
#undef NUM
	};
	dp_schema *s = NULL;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *p = put("bad.json", cases[i].json);
		int rc = dp_schema_load(p, &s);

		if (rc != DP_EFORMAT || strstr(dp_error_detail(rc), cases[i].detail) == NULL)
			fail_msg("case %zu: rc %d, detail '%s', wanted '%s'", i, rc,
				 dp_error_detail(rc), cases[i].detail);
		assert_null(s);
		/* the detail starts with the file name */
		assert_true(strncmp(dp_error_detail(rc), p, strlen(p)) == 0);
	}
	assert_int_equal(dp_schema_load(path_of("none.json"), &s), DP_ENOENT);
	assert_null(s);
}

static void test_binary_column(void **state)
{
	/* Version 2: a two-level column is one 0/1 feature, 1 for the second
	 * level as listed, named after it. */
	const char *p = put("b.json",
			    "{\"version\": 2, \"columns\": ["
			    "{\"name\": \"x\", \"kind\": \"numeric\", \"center\": 0, \"scale\": 1},"
			    "{\"name\": \"smoker\", \"kind\": \"binary\", \"levels\": [\"yes\", \"no\"]},"
			    "{\"name\": \"c\", \"kind\": \"onehot\", \"levels\": [\"p\", \"q\"]}],"
			    "\"target\": {\"name\": \"y\", \"kind\": \"numeric\"}}");
	dp_schema *s = NULL, *s2 = NULL;
	double x[3 * 4], y[3];
	char *j;

	assert_int_equal(dp_schema_load(p, &s), 0);
	assert_int_equal(dp_schema_nfeatures(s), 4);
	assert_string_equal(dp_schema_feature_names(s)[1], "smoker=no");
	/* a two-level onehot stays two features: only kind binary is one */
	assert_string_equal(dp_schema_feature_names(s)[2], "c=p");
	assert_int_equal(apply_file(s, put("b.csv", "y,c,smoker,x\n1,p,yes,2\n2,q,no,3\n"), x, y,
				    2, NULL),
			 0);
	const double want[8] = { 2, 0, 1, 0, 3, 1, 0, 1 };

	for (size_t k = 0; k < 8; k++)
		assert_true(x[k] == want[k]);
	assert_int_equal(apply_file(s, put("b.csv", "y,c,smoker,x\n1,p,maybe,2\n"), x, y, 1, NULL),
			 DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT),
			       "b.csv:2: column 'smoker': the level is not in the schema's list "
			       "(yes, no)"));
	assert_null(strstr(dp_error_detail(DP_EFORMAT), "maybe"));
	/* saved as version 2 (it needs it), and read back the same */
	assert_int_equal(dp_schema_save(s, path_of("b2.json")), 0);
	j = slurp(path_of("b2.json"));
	assert_non_null(strstr(j, "\"version\":2"));
	assert_non_null(strstr(j, "\"binary\""));
	free(j);
	assert_int_equal(dp_schema_load(path_of("b2.json"), &s2), 0);
	assert_string_equal(dp_schema_feature_names(s2)[1], "smoker=no");
	dp_schema_destroy(s2);
	dp_schema_destroy(s);

	/* A version 1 schema (written before kind binary) loads and applies as
	 * before, two-level onehot and all, and is saved as version 1 again. */
	assert_int_equal(dp_schema_load(sample_schema(), &s), 0);
	assert_int_equal(dp_schema_save(s, path_of("v1.json")), 0);
	j = slurp(path_of("v1.json"));
	assert_non_null(strstr(j, "\"version\":1"));
	free(j);
	dp_schema_destroy(s);
}

static void test_uses(void **state)
{
	dp_schema *s = NULL;

	assert_int_equal(dp_schema_load(sample_schema(), &s), 0);
	assert_int_equal(dp_schema_uses(s, "num"), 1);
	assert_int_equal(dp_schema_uses(s, "cat"), 1);
	assert_int_equal(dp_schema_uses(s, "y"), 1);
	assert_int_equal(dp_schema_uses(s, "skip"), 0);   /* drop */
	assert_int_equal(dp_schema_uses(s, "cat=a"), 0);  /* a feature, not a column */
	assert_int_equal(dp_schema_uses(s, "nosuch"), 0);
	dp_schema_destroy(s);
}

static void test_already_prepared(void **state)
{
	/* A file whose header is the schema's features then its target is what
	 * applying the schema wrote: applying it again is refused (it would
	 * standardise twice), also when only a dropped column tells them
	 * apart. */
	static const char *const prepared[] = { "num", "cat=a", "cat=b", "cat=c", "ord", "const",
						"y" };
	static const char *const num_only[] = { "a", "b", "y" };
	dp_schema *s = NULL;
	dp_schema_bind *b = NULL;
	double x[8 * 6], y[8];

	assert_int_equal(dp_schema_load(sample_schema(), &s), 0);
	assert_int_equal(dp_schema_bind_new(s, "owner-1.csv", prepared, 7, &b), DP_EFORMAT);
	assert_null(b);
	assert_string_equal(dp_error_detail(DP_EFORMAT),
			    "owner-1.csv is already prepared with this schema (its header is the "
			    "schema's features and target): pass it without --schema");
	/* the raw columns bind as before */
	assert_int_equal(apply_file(s, put("raw.csv", "num,cat,ord,const,y\n1,b,lo,5,1\n"), x, y, 8,
				    NULL),
			 0);
	dp_schema_destroy(s);

	/* Numeric columns and a dropped one: the prepared header lacks only the
	 * dropped column, which a raw file may also lack; in schema order with
	 * the target last it is the prepared file. */
	assert_int_equal(dp_schema_load(put("n.json",
					    "{\"version\": 1, \"columns\": ["
					    "{\"name\": \"a\", \"kind\": \"numeric\", \"center\": 1,"
					    " \"scale\": 2},"
					    "{\"name\": \"d\", \"kind\": \"drop\"},"
					    "{\"name\": \"b\", \"kind\": \"numeric\", \"center\": 0,"
					    " \"scale\": 1}],"
					    "\"target\": {\"name\": \"y\", \"kind\": \"numeric\"}}"),
					&s),
			 0);
	assert_int_equal(dp_schema_bind_new(s, "p.csv", num_only, 3, &b), DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "p.csv is already prepared"));
	assert_int_equal(apply_file(s, put("r.csv", "y,a,b,d\n1,3,4,\n"), x, y, 8, NULL), 0);
	assert_true(x[0] == 1.0 && x[1] == 4.0);
	dp_schema_destroy(s);

	/* Only numeric columns and no drop: the prepared header is the raw one,
	 * and nothing tells them apart (docs/data.md). */
	assert_int_equal(dp_schema_load(put("n2.json",
					    "{\"version\": 1, \"columns\": ["
					    "{\"name\": \"a\", \"kind\": \"numeric\", \"center\": 1,"
					    " \"scale\": 2},"
					    "{\"name\": \"b\", \"kind\": \"numeric\", \"center\": 0,"
					    " \"scale\": 1}],"
					    "\"target\": {\"name\": \"y\", \"kind\": \"numeric\"}}"),
					&s),
			 0);
	assert_int_equal(dp_schema_bind_new(s, "p.csv", num_only, 3, &b), 0);
	dp_schema_bind_destroy(b);
	dp_schema_destroy(s);
}

/* The values show a second application when the header cannot: columns
 * centred far from 0 on their own scale (|c/s| >= 3) average near -c/s
 * once a prepared file is transformed again. */
static void test_applied_twice(void **state)
{
	dp_schema *s = NULL;
	double x[20 * 2], y[20];
	const char *path = put("twice.json",
		"{\"version\": 1, \"columns\": ["
		"{\"name\": \"age\", \"kind\": \"numeric\", \"center\": 50, \"scale\": 10},"
		"{\"name\": \"z\", \"kind\": \"numeric\", \"center\": 0.5, \"scale\": 1}],"
		"\"target\": {\"name\": \"y\", \"kind\": \"numeric\", \"center\": 200,"
		" \"scale\": 40}}");

	assert_int_equal(dp_schema_load(path, &s), 0);
	/* A raw file: age around 50 -> transformed around 0; so is y. */
	for (size_t j = 0; j < 20; j++) {
		x[j * 2] = ((double)j - 9.5) / 6.0;
		x[j * 2 + 1] = (double)(j % 3);
		y[j] = ((double)j - 9.5) / 7.0;
	}
	assert_int_equal(dp_schema_check_applied(s, "raw.csv", x, y, 20, 2), 0);
	/* A prepared file transformed again: age averages -5, y -5. */
	for (size_t j = 0; j < 20; j++) {
		x[j * 2] = (x[j * 2] - 50.0) / 10.0;
		y[j] = (y[j] - 200.0) / 40.0;
	}
	assert_int_equal(dp_schema_check_applied(s, "prep.csv", x, y, 20, 2), DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "prep.csv looks already prepared"));
	/* Too few rows to judge; a column near 0 on its scale (z) never votes;
	 * one eligible column that looks raw (y back near 0) is enough to let
	 * the file through. */
	assert_int_equal(dp_schema_check_applied(s, "few.csv", x, y, 9, 2), 0);
	for (size_t j = 0; j < 20; j++)
		y[j] = ((double)j - 9.5) / 7.0;
	assert_int_equal(dp_schema_check_applied(s, "mixed.csv", x, y, 20, 2), 0);
	dp_schema_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accessors),
		cmocka_unit_test(test_apply_errors),
		cmocka_unit_test(test_roundtrip_file),
		cmocka_unit_test(test_hand_written),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_binary_column),
		cmocka_unit_test(test_uses),
		cmocka_unit_test(test_already_prepared),
		cmocka_unit_test(test_applied_twice),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
