/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON layer: exact doubles, the sticky reader and its messages, and
 * whole-file reading. */
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

#include "common/core/error.h"
#include "common/core/json.h"
#include "tests/unit/tmpdir.h"

static int group_setup(void **state)
{
	(void)state;
	return tmpdir_setup("test_json");
}

static int group_teardown(void **state)
{
	(void)state;
	return tmpdir_teardown();
}

/* Parse `text` (written to a file) into an object; the reader's path is the
 * file's. */
static struct json_object *parse(const char *text, const char **path)
{
	struct json_object *o = NULL;

	*path = put("in.json", text);
	if (dp_json_read_file(*path, 1 << 20, &o) != 0)
		fail_msg("parse '%s': %s", text, dp_error_detail(DP_EFORMAT));
	return o;
}

static void expect_detail(const char *path, const char *what)
{
	char want[512];

	snprintf(want, sizeof(want), "%s: %s", path, what);
	assert_string_equal(dp_error_detail(DP_EFORMAT), want);
}

static int same_bits(double a, double b)
{
	return memcmp(&a, &b, sizeof(a)) == 0;
}

static void test_double_roundtrip(void **state)
{
	const double v[] = {
		0.1, 1e300, -0.0, 0.0, 5e-324, -5e-324, DBL_MIN, nextafter(DBL_MIN, 0.0),
		DBL_MAX, -DBL_MAX, 1.0 / 3.0, -2.0 / 3.0, 90.0, 1e15, 123456789012345.0,
		9007199254740993.0, 6.02214076e23, 1e-300, 0.30000000000000004,
	};
	enum { NRAND = 2000 };
	const size_t n = sizeof(v) / sizeof(v[0]);
	double *all = malloc((n + NRAND) * sizeof(double)), *back;
	const char *p = path_of("d.json");
	struct json_object *o = json_object_new_object(), *rd = NULL;
	dp_json_reader r = { .path = p };
	uint64_t s = 88172645463325252ull;

	(void)state;
	assert_non_null(all);
	memcpy(all, v, sizeof(v));
	/* Random bit patterns: every exponent, subnormals included. */
	for (size_t i = n; i < n + NRAND;) {
		double d;

		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		memcpy(&d, &s, sizeof(d));
		if (isfinite(d))
			all[i++] = d;
	}
	assert_int_equal(dp_json_add(o, "v", dp_json_double_array(all, n + NRAND)), 0);
	assert_int_equal(dp_json_add(o, "neg0", dp_json_double(-0.0)), 0);
	assert_int_equal(dp_json_add(o, "tiny", dp_json_double(5e-324)), 0);
	assert_int_equal(dp_json_write_file(p, o, 0640), 0);
	json_object_put(o);
	{
		struct stat st;

		assert_int_equal(stat(p, &st), 0);
		assert_int_equal(st.st_mode & 0777, 0640);
	}

	assert_int_equal(dp_json_read_file(p, 1 << 24, &rd), 0);
	back = malloc((n + NRAND) * sizeof(double));
	assert_non_null(back);
	assert_int_equal(dp_json_get_doubles(&r, rd, "v", back, n + NRAND), 0);
	for (size_t i = 0; i < n + NRAND; i++)
		if (!same_bits(all[i], back[i]))
			fail_msg("v[%zu]: wrote %.17g, read %.17g", i, all[i], back[i]);
	assert_true(same_bits(dp_json_get_double(&r, rd, "neg0", true, 1.0), -0.0));
	assert_true(same_bits(dp_json_get_double(&r, rd, "tiny", true, 1.0), 5e-324));
	assert_int_equal(r.rc, 0);
	json_object_put(rd);
	free(all);
	free(back);
}

static void test_strings_roundtrip(void **state)
{
	const char *names[] = { "a", "b c", "\xc3\xa9t\xc3\xa9", "x/y" };
	const char *p = path_of("s.json");
	struct json_object *o = json_object_new_object(), *rd = NULL, *a;
	dp_json_reader r = { .path = p };

	(void)state;
	assert_int_equal(dp_json_add(o, "names", dp_json_string_array(names, 4)), 0);
	assert_int_equal(dp_json_add(o, "flag", json_object_new_boolean(1)), 0);
	assert_int_equal(dp_json_write_file(p, o, 0644), 0);
	json_object_put(o);
	assert_int_equal(dp_json_read_file(p, 1 << 20, &rd), 0);
	a = dp_json_get(&r, rd, "names", json_type_array, true);
	assert_non_null(a);
	assert_int_equal(json_object_array_length(a), 4);
	for (size_t i = 0; i < 4; i++)
		assert_string_equal(json_object_get_string(json_object_array_get_idx(a, i)),
				    names[i]);
	assert_true(dp_json_get_bool(&r, rd, "flag", true, false));
	assert_int_equal(r.rc, 0);
	json_object_put(rd);
}

static void test_add_push(void **state)
{
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();

	(void)state;
	/* A failed constructor (NULL) becomes DP_ENOMEM. */
	assert_int_equal(dp_json_add(o, "k", NULL), DP_ENOMEM);
	assert_int_equal(dp_json_push(a, NULL), DP_ENOMEM);
	assert_int_equal(dp_json_push(a, dp_json_double(1.5)), 0);
	assert_int_equal(json_object_array_length(a), 1);
	assert_int_equal(dp_json_add(o, "a", a), 0);
	assert_int_equal(json_object_object_length(o), 1);
	/* null is a member whose value is JSON null. */
	assert_int_equal(dp_json_add_null(o, "none"), 0);
	assert_int_equal(json_object_object_length(o), 2);
	assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
			    "{\"a\":[1.5],\"none\":null}");
	json_object_put(o);
}

static void test_messages(void **state)
{
	const char *p;
	struct json_object *o = parse("{\"s\": \"x\", \"inf\": 1e999, \"n\": 2, \"a\": [1, 2],"
				      " \"extra\": 1, \"b\": 1}", &p);
	dp_json_reader r = { .path = p };

	(void)state;
	/* Absent and not required: the default, no error. */
	assert_true(dp_json_get_double(&r, o, "absent", false, 7.5) == 7.5);
	assert_int_equal(dp_json_get_u64(&r, o, "absent", false, 9), 9);
	assert_string_equal(dp_json_get_string(&r, o, "absent", false, "def"), "def");
	assert_int_equal(r.rc, 0);

	assert_true(dp_json_get_double(&r, o, "k", true, 3.0) == 3.0);
	assert_int_equal(r.rc, DP_EFORMAT);
	expect_detail(p, "missing key 'k'");

	r = (dp_json_reader){ .path = p, .where = "columns[2]" };
	dp_json_get_double(&r, o, "k", true, 0);
	expect_detail(p, "columns[2]: missing key 'k'");

	r = (dp_json_reader){ .path = p };
	assert_true(dp_json_get_double(&r, o, "s", true, 4.0) == 4.0);
	expect_detail(p, "'s' must be a number");
	r = (dp_json_reader){ .path = p, .where = "target" };
	dp_json_get_double(&r, o, "s", false, 0);
	expect_detail(p, "target: 's' must be a number");

	r = (dp_json_reader){ .path = p };
	assert_true(dp_json_get_double(&r, o, "inf", true, 5.0) == 5.0);
	expect_detail(p, "'inf' must be finite");

	r = (dp_json_reader){ .path = p };
	dp_json_get(&r, o, "n", json_type_array, true);
	expect_detail(p, "'n' must be an array");
	r = (dp_json_reader){ .path = p };
	dp_json_get(&r, o, "n", json_type_object, true);
	expect_detail(p, "'n' must be an object");
	r = (dp_json_reader){ .path = p };
	dp_json_get_string(&r, o, "n", true, NULL);
	expect_detail(p, "'n' must be a string");
	r = (dp_json_reader){ .path = p };
	assert_true(dp_json_get_bool(&r, o, "b", true, true));
	expect_detail(p, "'b' must be a boolean (true or false)");

	/* Array elements through dp_json_number. */
	r = (dp_json_reader){ .path = p };
	assert_true(dp_json_number(&r, json_object_array_get_idx(
					   dp_json_get(&r, o, "a", json_type_array, true), 1),
				   "a[1]", 0) == 2.0);
	assert_true(dp_json_number(&r, json_object_object_get(o, "s"), "s", -1) == -1);
	expect_detail(p, "'s' must be a number");

	{
		static const char *const allowed[] = { "s", "inf", "n", "a", "b" };

		r = (dp_json_reader){ .path = p };
		assert_int_equal(dp_json_only_keys(&r, o, allowed, 5), DP_EFORMAT);
		expect_detail(p, "unknown key 'extra'");
		r = (dp_json_reader){ .path = p, .where = "pca" };
		dp_json_only_keys(&r, o, allowed, 5);
		expect_detail(p, "pca: unknown key 'extra'");
	}
	json_object_put(o);
}

static void test_sticky(void **state)
{
	const char *p;
	struct json_object *o = parse("{\"x\": 1.5, \"s\": \"ok\", \"t\": true}", &p);
	dp_json_reader r = { .path = p };

	(void)state;
	dp_json_get_double(&r, o, "missing", true, 0);
	assert_int_equal(r.rc, DP_EFORMAT);
	/* Every later getter does nothing and returns its default... */
	assert_true(dp_json_get_double(&r, o, "x", true, -1) == -1);
	assert_string_equal(dp_json_get_string(&r, o, "s", true, "def"), "def");
	assert_false(dp_json_get_bool(&r, o, "t", true, false));
	assert_null(dp_json_get(&r, o, "x", json_type_double, true));
	assert_int_equal(dp_json_get_u64(&r, o, "x", true, 4), 4);
	/* ...and the first error stays, detail included. */
	assert_int_equal(dp_json_fail(&r, "later %d", 2), DP_EFORMAT);
	assert_int_equal(dp_json_get_double(&r, o, "other", true, 0), 0);
	expect_detail(p, "missing key 'missing'");
	json_object_put(o);
}

static void test_u64(void **state)
{
	const char *p;
	struct json_object *o = parse("{\"zero\": 0, \"max\": 18446744073709551615,"
				      " \"big\": 9223372036854775808, \"neg\": -1,"
				      " \"frac\": 1.5, \"s\": \"3\"}", &p);
	dp_json_reader r = { .path = p };

	(void)state;
	assert_int_equal(dp_json_get_u64(&r, o, "zero", true, 7), 0);
	assert_true(dp_json_get_u64(&r, o, "max", true, 7) == UINT64_MAX);
	assert_true(dp_json_get_u64(&r, o, "big", true, 7) == 9223372036854775808ull);
	assert_int_equal(r.rc, 0);
	assert_int_equal(dp_json_get_u64(&r, o, "neg", true, 7), 7);
	expect_detail(p, "'neg' must not be negative");
	r = (dp_json_reader){ .path = p };
	assert_int_equal(dp_json_get_u64(&r, o, "frac", true, 7), 7);
	expect_detail(p, "'frac' must be an integer");
	r = (dp_json_reader){ .path = p };
	assert_int_equal(dp_json_get_u64(&r, o, "s", true, 7), 7);
	expect_detail(p, "'s' must be an integer");
	json_object_put(o);
}

static void test_strings(void **state)
{
	const char *p;
	struct json_object *o = parse("{\"ok\": \"a b\\u00e9\", \"nul\": \"a\\u0000b\","
				      " \"nl\": \"a\\nb\", \"del\": \"a\\u007fb\", \"empty\": \"\"}",
				      &p);
	dp_json_reader r = { .path = p };

	(void)state;
	assert_string_equal(dp_json_get_string(&r, o, "ok", true, NULL), "a b\xc3\xa9");
	assert_int_equal(r.rc, 0);
	assert_string_equal(dp_json_get_string(&r, o, "nul", true, "d"), "d");
	expect_detail(p, "'nul' contains a NUL character");
	r = (dp_json_reader){ .path = p };
	assert_string_equal(dp_json_get_string(&r, o, "nl", true, "d"), "d");
	expect_detail(p, "'nl' contains a control character");
	r = (dp_json_reader){ .path = p };
	dp_json_get_string(&r, o, "del", true, "d");
	expect_detail(p, "'del' contains a control character");
	r = (dp_json_reader){ .path = p };
	assert_string_equal(dp_json_get_string(&r, o, "empty", false, "d"), "d");
	expect_detail(p, "'empty' must not be empty");
	json_object_put(o);
}

static void test_get_doubles(void **state)
{
	const char *p;
	struct json_object *o = parse("{\"three\": [1, 2.5, -3], \"two\": [1, 2],"
				      " \"bad\": [1, \"x\", 3], \"inf\": [1, 2, 1e999],"
				      " \"nul\": [1, null, 3], \"empty\": []}", &p);
	double out[3] = { 7, 7, 7 };
	dp_json_reader r = { .path = p };

	(void)state;
	assert_int_equal(dp_json_get_doubles(&r, o, "three", out, 3), 0);
	assert_true(out[0] == 1 && out[1] == 2.5 && out[2] == -3);
	assert_int_equal(dp_json_get_doubles(&r, o, "empty", NULL, 0), 0);

	/* Any failure leaves every output untouched. */
	static const char *const bad[] = { "two", "bad", "inf", "nul", "absent" };
	static const char *const why[] = {
		"'two' must have 3 numbers, has 2", "'bad' must be a number",
		"'inf' must be finite", "'nul' must be a number", "missing key 'absent'",
	};
	for (size_t i = 0; i < 5; i++) {
		out[0] = out[1] = out[2] = 7;
		r = (dp_json_reader){ .path = p };
		assert_int_equal(dp_json_get_doubles(&r, o, bad[i], out, 3), DP_EFORMAT);
		assert_true(out[0] == 7 && out[1] == 7 && out[2] == 7);
		expect_detail(p, why[i]);
	}
	json_object_put(o);
}

/* Unlimited budgets are the string "inf" both ways; lines become strings. */
static void test_inf_and_lines(void **state)
{
	const char *p;
	struct json_object *o = json_object_new_object(), *back;
	dp_json_reader r = { 0 };

	(void)state;
	assert_int_equal(dp_json_add(o, "e", dp_json_double_inf(INFINITY)), 0);
	assert_int_equal(dp_json_add(o, "f", dp_json_double_inf(0.25)), 0);
	assert_int_equal(dp_json_add(o, "w", dp_json_lines("one\ntwo\n")), 0);
	assert_int_equal(dp_json_add(o, "none", dp_json_lines("")), 0);
	assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
			    "{\"e\":\"inf\",\"f\":0.25,\"w\":[\"one\",\"two\"],\"none\":[]}");
	back = parse(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), &p);
	r.path = p;
	assert_true(isinf(dp_json_get_double_inf(&r, back, "e", true, 0)));
	assert_true(dp_json_get_double_inf(&r, back, "f", true, 0) == 0.25);
	assert_true(dp_json_get_double_inf(&r, back, "absent", false, 7) == 7);
	assert_int_equal(r.rc, 0);
	/* Any other string is still not a number. */
	assert_true(dp_json_get_double_inf(&r, back, "w", true, 3) == 3);
	assert_int_equal(r.rc, DP_EFORMAT);
	json_object_put(back);
	json_object_put(o);
}

static void test_read_file(void **state)
{
	struct json_object *sentinel = (struct json_object *)(uintptr_t)0x1234, *o = sentinel;
	static const struct {
		const char *text;
		size_t len;
		const char *why;
	} bad[] = {
		{ "not json", 8, "not JSON (" },
		{ "", 0, "not JSON (" },
		{ "{\"a\": 1", 7, "not JSON (" },
		{ "[1, 2]", 6, "not a JSON object" },
		{ "\"text\"", 6, "not a JSON object" },
		{ "{\"a\": 1}\0{}", 11, "not JSON (contains a NUL byte)" },
		{ "{\"a\":\0 1}", 9, "not JSON (contains a NUL byte)" },
		{ "{\"a\": 1} x", 10, "not JSON (text after the top-level value, at byte 10)" },
		{ "{\"a\": 1}}", 9, "not JSON (text after the top-level value, at byte 9)" },
		{ "{} {}", 5, "not JSON (text after the top-level value, at byte 4)" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *p = put_bytes("bad.json", bad[i].text, bad[i].len);

		o = sentinel;
		assert_int_equal(dp_json_read_file(p, 1 << 20, &o), DP_EFORMAT);
		assert_ptr_equal(o, sentinel);
		if (strstr(dp_error_detail(DP_EFORMAT), bad[i].why) == NULL)
			fail_msg("'%s': detail '%s', wanted '%s'", bad[i].text,
				 dp_error_detail(DP_EFORMAT), bad[i].why);
		assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "bad.json: "));
	}
	/* White space around the object is fine. */
	assert_int_equal(dp_json_read_file(put("ws.json", "\n {\"a\": 1}\n\n"), 100, &o), 0);
	json_object_put(o);
	o = sentinel;
	assert_int_equal(dp_json_read_file(path_of("missing.json"), 100, &o), DP_ENOENT);
	assert_int_equal(dp_json_read_file(put("big.json", "{\"a\": 12345}"), 5, &o), DP_ERANGE);
	assert_ptr_equal(o, sentinel);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_double_roundtrip),
		cmocka_unit_test(test_strings_roundtrip),
		cmocka_unit_test(test_add_push),
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_sticky),
		cmocka_unit_test(test_u64),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_get_doubles),
		cmocka_unit_test(test_inf_and_lines),
		cmocka_unit_test(test_read_file),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
