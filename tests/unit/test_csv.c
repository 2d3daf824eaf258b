/* SPDX-License-Identifier: Apache-2.0 */
/* Strict CSV reader: RFC 4180 quoting, gzip input, exact error locations. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "common/core/csv.h"
#include "common/core/error.h"

#include "tests/unit/tmpdir.h"

static int setup(void **state)
{
	return tmpdir_setup("test_csv");
}

static int teardown(void **state)
{
	return tmpdir_teardown();
}

/* Expect loading `text` to fail with DP_EFORMAT and exactly `detail`
 * (after the file path). */
static void expect_error(const char *text, size_t len, unsigned flags, const char *detail)
{
	const char *p = put_bytes("err.csv", text, len);
	char want[512];
	dp_csv_table t;

	memset(&t, 0x55, sizeof(t));
	assert_int_equal(dp_csv_table_load(&t, p, flags), DP_EFORMAT);
	snprintf(want, sizeof(want), "%s%s", p, detail);
	assert_string_equal(dp_error_detail(DP_EFORMAT), want);
	/* left zeroed on failure */
	assert_null(t.cells);
	assert_int_equal(t.nrows, 0);
}

static void test_quoting(void **state)
{
	/* Embedded commas, doubled quotes, a newline and a CRLF inside quotes,
	 * spaces kept, empty quoted header-less content avoided. */
	const char *p = put("q.csv",
			      "name,\"note, with comma\",y\n"
			      "\"a,b\",\"say \"\"hi\"\"\",1\n"
			      "\"multi\nline\",\" padded \",2\n"
			      "plain,\"x\r\ny\",3\n"
			      "last,z,4");
	dp_csv_table t;

	assert_int_equal(dp_csv_table_load(&t, p, 0), 0);
	assert_int_equal(t.ncols, 3);
	assert_int_equal(t.nrows, 4);
	assert_string_equal(t.header[1], "note, with comma");
	assert_string_equal(dp_csv_cell(&t, 0, 0), "a,b");
	assert_string_equal(dp_csv_cell(&t, 0, 1), "say \"hi\"");
	assert_string_equal(dp_csv_cell(&t, 1, 0), "multi\nline");
	assert_string_equal(dp_csv_cell(&t, 1, 1), " padded ");
	assert_string_equal(dp_csv_cell(&t, 2, 1), "x\r\ny");
	assert_string_equal(dp_csv_cell(&t, 3, 2), "4"); /* no final newline */
	/* Start lines: the two-line record starts on line 3, so the next
	 * record starts on 5, and the one after the CRLF-in-quotes on 7. */
	assert_int_equal(t.line[0], 2);
	assert_int_equal(t.line[1], 3);
	assert_int_equal(t.line[2], 5);
	assert_int_equal(t.line[3], 7);
	dp_csv_table_free(&t);
	assert_null(t.cells);
}

static void test_crlf_bom_and_spaces(void **state)
{
	const char *p = put("crlf.csv", "\xEF\xBB\xBF" "a, b\r\n1, 2\r\n 3,4 \r\n");
	dp_csv_table t;

	assert_int_equal(dp_csv_table_load(&t, p, 0), 0);
	assert_string_equal(t.header[0], "a");    /* BOM removed */
	assert_string_equal(t.header[1], " b");   /* spaces are data (RFC 4180) */
	assert_int_equal(t.nrows, 2);
	assert_string_equal(dp_csv_cell(&t, 0, 1), " 2");
	assert_string_equal(dp_csv_cell(&t, 1, 0), " 3");
	assert_string_equal(dp_csv_cell(&t, 1, 1), "4 ");
	assert_int_equal(t.line[1], 3);
	dp_csv_table_free(&t);
}

/* Only one byte-order mark is taken off; a first name that still starts
 * with one (a doubled mark, or one inside quotes) is refused, since it
 * would not survive being written back (found by fuzz_csv, docs/fuzz.md). */
static void test_second_bom(void **state)
{
	const char *p = put("bom2.csv", "\xEF\xBB\xBF\xEF\xBB\xBF" "a,b\n1,2\n");
	const char *q = put("bomq.csv", "\"\xEF\xBB\xBF" "a\",b\n1,2\n");
	dp_csv_table t;
	int rc;

	rc = dp_csv_table_load(&t, p, 0);
	assert_int_equal(rc, DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(rc), ":1: column '#1': column name starts with a "
				"second byte-order mark"));
	assert_null(t.cells);
	assert_int_equal(dp_csv_table_load(&t, q, 0), DP_EFORMAT);
}

static void test_streaming(void **state)
{
	const char *p = put("s.csv", "x,y\n1,2\n\"3\n\",4\n5,6\n");
	dp_csv_reader *r = NULL;
	const char *const *f;
	size_t line = 0;

	assert_int_equal(dp_csv_open(p, 0, &r), 0);
	assert_int_equal(dp_csv_ncols(r), 2);
	assert_string_equal(dp_csv_header(r)[1], "y");
	assert_string_equal(dp_csv_source(r), p);
	assert_int_equal(dp_csv_next(r, &f, &line), 1);
	assert_string_equal(f[0], "1");
	assert_int_equal(line, 2);
	assert_int_equal(dp_csv_next(r, &f, &line), 1);
	assert_string_equal(f[0], "3\n");
	assert_int_equal(line, 3);
	assert_int_equal(dp_csv_next(r, &f, &line), 1);
	assert_string_equal(f[1], "6");
	assert_int_equal(line, 5);
	assert_int_equal(dp_csv_next(r, &f, &line), 0);
	assert_int_equal(dp_csv_next(r, &f, &line), 0); /* stays at the end */
	dp_csv_close(r);
	dp_csv_close(NULL);
}

static void test_gzip(void **state)
{
	const char *p = path_of("g.csv.gz");
	const char *text = "a,\"b\"\n1,\"x,y\"\n2,\"z\nw\"\n";
	gzFile gz = gzopen(p, "wb");
	dp_csv_table t;

	assert_non_null(gz);
	assert_int_equal(gzwrite(gz, text, (unsigned)strlen(text)), (int)strlen(text));
	assert_int_equal(gzclose(gz), Z_OK);
	assert_int_equal(dp_csv_table_load(&t, p, 0), 0);
	assert_int_equal(t.nrows, 2);
	assert_string_equal(dp_csv_cell(&t, 0, 1), "x,y");
	assert_string_equal(dp_csv_cell(&t, 1, 1), "z\nw");
	assert_int_equal(t.line[1], 3);
	dp_csv_table_free(&t);

	/* A gzip stream cut in half is an error, not a short file. */
	{
		FILE *f = fopen(p, "rb");
		char buf[4096];
		size_t n;

		assert_non_null(f);
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		assert_true(n > 20);
		p = put_bytes("cut.csv.gz", buf, n / 2);
		assert_int_equal(dp_csv_table_load(&t, p, 0), DP_EFORMAT);
		assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "corrupt gzip data"));
	}
}

static void test_many_rows_gzip(void **state)
{
	/* Enough rows to cross the reader's 128 KiB block boundary many times. */
	const char *p = path_of("big.csv.gz");
	gzFile gz = gzopen(p, "wb");
	dp_csv_table t;

	assert_non_null(gz);
	gzprintf(gz, "i,label\n");
	for (int i = 0; i < 40000; i++)
		gzprintf(gz, "%d,\"row %d, quoted\"\n", i, i);
	assert_int_equal(gzclose(gz), Z_OK);
	assert_int_equal(dp_csv_table_load(&t, p, 0), 0);
	assert_int_equal(t.nrows, 40000);
	assert_string_equal(dp_csv_cell(&t, 39999, 0), "39999");
	assert_string_equal(dp_csv_cell(&t, 12345, 1), "row 12345, quoted");
	assert_int_equal(t.line[39999], 40001);
	dp_csv_table_free(&t);
}

#define EXPECT(text, detail) expect_error(text, sizeof(text) - 1, 0, detail)

static void test_errors(void **state)
{
	EXPECT("a,b,c\n1,2,3\n4,5\n",
		     ":3: column 'c': missing: the row has 2 fields, the header 3");
	EXPECT("a,b\n1,2\n3,4,5\n",
		     ":3: column '#3': extra field(s): the row has 3 fields, the header 2");
	EXPECT("a,b\n1,2\n3,\n",
		     ":3: column 'b': empty cell (missing value; dpasync does not impute)");
	EXPECT("a,b\n\"\",2\n",
		     ":2: column 'a': empty cell (missing value; dpasync does not impute)");
	EXPECT("a,b\n1,x\0y\n", ":2: column 'b': contains a NUL byte");
	EXPECT("a,b\n1,2\n3,\"open\n4,5\n",
		     ":3: column 'b': unterminated quoted field (no closing quote before the "
		     "end of the file, line 4)");
	EXPECT("", ": empty file (a header row is required)");
	EXPECT("a,b,a\n1,2,3\n",
		     ":1: column 'a': duplicate column name (also column 1)");
	EXPECT("a,,c\n1,2,3\n", ":1: column '#2': empty column name in the header");
	EXPECT("a,b\n1,2\n\n3,4\n", ":3: empty line (blank lines are not allowed)");
	EXPECT("a,b\n1,2\r3,4\n",
		     ":2: carriage return inside a line (outside quotes); lines "
		     "must end in LF or CRLF");
	EXPECT("a,b\n1,\"2\"x\n",
		     ":2: column 'b': malformed quoting at character 6 of the line (a quote "
		     "must open the field, be doubled inside it and close it)");
	EXPECT("a,b\n1,2\"\n",
		     ":2: column 'b': malformed quoting at character 4 of the line (a quote "
		     "must open the field, be doubled inside it and close it)");
	/* Messages stay on one line: control characters in names are refused. */
	EXPECT("a,\"b\nc\"\n1,2\n",
	       ":1: column '#2': column name 'b\\nc' contains a control character");
	/* Line numbers count physical lines, so a quoted newline shifts them. */
	EXPECT("a,b\n\"x\ny\",1\n2\n",
		     ":4: column 'b': missing: the row has 1 fields, the header 2");
}

static void test_allow_empty(void **state)
{
	const char *p = put("e.csv", "a,b\n,2\n\"\",\n");
	dp_csv_table t;

	assert_int_equal(dp_csv_table_load(&t, p, DP_CSV_ALLOW_EMPTY), 0);
	assert_int_equal(t.nrows, 2);
	assert_string_equal(dp_csv_cell(&t, 0, 0), "");
	assert_string_equal(dp_csv_cell(&t, 1, 1), "");
	dp_csv_table_free(&t);
	/* Header names stay mandatory. */
	p = put("e2.csv", "a,\n1,2\n");
	assert_int_equal(dp_csv_table_load(&t, p, DP_CSV_ALLOW_EMPTY), DP_EFORMAT);
	assert_int_equal(dp_csv_table_load(&t, p, 0x80), DP_EINVAL);
}

static void test_open_errors(void **state)
{
	dp_csv_reader *r = (dp_csv_reader *)0x1;
	dp_csv_table t;

	assert_int_equal(dp_csv_open(path_of("does-not-exist.csv"), 0, &r), DP_ENOENT);
	assert_true(r == (dp_csv_reader *)0x1); /* untouched */
	assert_non_null(strstr(dp_error_detail(DP_ENOENT), "does-not-exist.csv: cannot open"));
	/* Header only: a valid table with no rows. */
	assert_int_equal(dp_csv_table_load(&t, put("h.csv", "a,b\n"), 0), 0);
	assert_int_equal(t.nrows, 0);
	assert_int_equal(t.ncols, 2);
	dp_csv_table_free(&t);
}

static void test_numbers(void **state)
{
	static const char *good[] = { "0", "-1", "+2.5", "1e3", "1E-3", ".5", "5.", "-0.25e+2",
				      "123456789012345678901234567890" };
	static const double want[] = { 0, -1, 2.5, 1000, 0.001, 0.5, 5, -25,
				       1.2345678901234568e29 };
	static const char *bad[] = { "", " 1", "1 ", "1.5abc", "nan", "NaN", "inf", "-Infinity",
				     "0x10", "1e", "e5", ".", "-", "1e999", "1,5", "1..2", "--1" };
	double v;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(dp_csv_parse_number(good[i], &v), 0);
		assert_true(v == want[i]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 42;
		assert_int_equal(dp_csv_parse_number(bad[i], &v), DP_EFORMAT);
		assert_true(v == 42);
	}
}

static void test_write_field_roundtrip(void **state)
{
	static const char *fields[] = { "plain", "a,b", "say \"x\"", "two\nlines", " pad",
					"cr\rhere", "t\tab" };
	const size_t n = sizeof(fields) / sizeof(fields[0]);
	const char *p = path_of("w.csv");
	FILE *f = fopen(p, "wb");
	dp_csv_table t;

	assert_non_null(f);
	for (int row = 0; row < 2; row++) {
		for (size_t i = 0; i < n; i++) {
			/* header row: make the names distinct */
			char name[32];

			snprintf(name, sizeof(name), "h%zu", i);
			assert_int_equal(dp_csv_write_field(f, row ? fields[i] : name), 0);
			fputc(i + 1 < n ? ',' : '\n', f);
		}
	}
	fclose(f);
	assert_int_equal(dp_csv_table_load(&t, p, 0), 0);
	assert_int_equal(t.nrows, 1);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(dp_csv_cell(&t, 0, i), fields[i]);
	dp_csv_table_free(&t);
}

static void test_helpers(void **state)
{
	static const char *names[] = { "alpha", "beta", "gamma", "delta" };
	char buf[64];

	dp_csv_format_names(buf, sizeof(buf), names, 4);
	assert_string_equal(buf, "alpha, beta, gamma, delta");
	dp_csv_format_names(buf, 20, names, 4);
	assert_string_equal(buf, "alpha, beta, ...");
	assert_true(strlen(buf) < 20);
	assert_int_equal(dp_csv_find(names, 4, "gamma"), 2);
	assert_string_equal(dp_csv_show("a\nb\tc\r\x01", buf, sizeof(buf)), "a\\nb\\tc\\r\\x01");
	assert_string_equal(dp_csv_show("abcdefghijkl", buf, 10), "abcdef...");
	assert_string_equal(dp_csv_show("abcdefghi", buf, 10), "abcdefghi");
	{
		static const char *const odd[] = { "x\ny" };

		dp_csv_format_names(buf, sizeof(buf), odd, 1);
		assert_string_equal(buf, "x\\ny");
	}
	assert_int_equal(dp_csv_find(names, 4, "Gamma"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quoting),
		cmocka_unit_test(test_crlf_bom_and_spaces),
		cmocka_unit_test(test_second_bom),
		cmocka_unit_test(test_streaming),
		cmocka_unit_test(test_gzip),
		cmocka_unit_test(test_many_rows_gzip),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_allow_empty),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_write_field_roundtrip),
		cmocka_unit_test(test_helpers),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
