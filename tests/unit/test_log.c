/* SPDX-License-Identifier: Apache-2.0 */
/* Levelled logging: level names, filtering, and the one-line format
 *   2026-11-21T19:40:00.123Z info ledger: charged k=12
 * on stderr (what the journal and the integration tests read). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/core/error.h"
#include "common/core/log.h"

/* Everything written to stderr while fn(arg) runs. */
static char *capture(void (*fn)(const void *), const void *arg)
{
	FILE *tmp = tmpfile();
	int saved = dup(2);
	long size;
	char *out;

	assert_non_null(tmp);
	assert_true(saved >= 0);
	fflush(stderr);
	assert_int_equal(dup2(fileno(tmp), 2), 2);
	fn(arg);
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	size = ftell(tmp);
	assert_true(size >= 0);
	out = calloc(1, (size_t)size + 1);
	assert_non_null(out);
	rewind(tmp);
	assert_int_equal(fread(out, 1, (size_t)size, tmp), (size_t)size);
	fclose(tmp);
	return out;
}

static void log_each_level(const void *arg)
{
	(void)arg;
	DP_DEBUG("sub", "d=%d", 1);
	DP_INFO("sub", "i=%d", 2);
	DP_WARN("sub", "w=%d", 3);
	DP_ERROR("sub", "e=%d", 4);
}

static void log_text(const void *arg)
{
	DP_INFO("ledger", "%s", (const char *)arg);
}

static void test_parse_level(void **state)
{
	static const char *names[] = { "debug", "info", "warn", "error" };
	enum dp_log_level lv = DP_LOG_ERROR;

	(void)state;
	for (int i = 0; i < 4; i++) {
		assert_int_equal(dp_log_parse_level(names[i], &lv), 0);
		assert_int_equal(lv, (enum dp_log_level)i);
		/* The one table the daemons' log-level setting uses. */
		assert_string_equal(dp_log_level_names[i], names[i]);
	}
	assert_null(dp_log_level_names[4]);
	lv = DP_LOG_WARN;
	assert_int_equal(dp_log_parse_level("INFO", &lv), DP_EINVAL);
	assert_int_equal(dp_log_parse_level("", &lv), DP_EINVAL);
	assert_int_equal(dp_log_parse_level("warning", &lv), DP_EINVAL);
	assert_int_equal(lv, DP_LOG_WARN);  /* untouched on failure */
	assert_string_equal(dp_error_detail(DP_EINVAL),
			    "log level 'warning': expected debug, info, warn or error");
}

static void test_format(void **state)
{
	regex_t re;
	char *out;

	(void)state;
	dp_log_set_level(DP_LOG_INFO);
	out = capture(log_text, "charged k=12 spent=0.05");
	assert_int_equal(regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
				 "\\.[0-9]{3}Z info ledger: charged k=12 spent=0\\.05\n$",
				 REG_EXTENDED), 0);
	if (regexec(&re, out, 0, NULL, 0) != 0)
		fail_msg("unexpected log line '%s'", out);
	regfree(&re);
	free(out);
}

static void test_filter(void **state)
{
	char *out;

	(void)state;
	dp_log_set_level(DP_LOG_DEBUG);
	out = capture(log_each_level, NULL);
	assert_non_null(strstr(out, " debug sub: d=1\n"));
	assert_non_null(strstr(out, " info sub: i=2\n"));
	assert_non_null(strstr(out, " warn sub: w=3\n"));
	assert_non_null(strstr(out, " error sub: e=4\n"));
	free(out);

	dp_log_set_level(DP_LOG_WARN);
	out = capture(log_each_level, NULL);
	assert_null(strstr(out, "d=1"));
	assert_null(strstr(out, "i=2"));
	assert_non_null(strstr(out, " warn sub: w=3\n"));
	assert_non_null(strstr(out, " error sub: e=4\n"));
	free(out);
	dp_log_set_level(DP_LOG_INFO);
}

static void test_long_line(void **state)
{
	char *text = malloc(5000), *out;

	(void)state;
	assert_non_null(text);
	memset(text, 'x', 4999);
	text[4999] = '\0';
	out = capture(log_text, text);
	/* Cut to the line buffer, but still exactly one whole line. */
	assert_true(strlen(out) < 1100);
	assert_int_equal(out[strlen(out) - 1], '\n');
	assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
	free(out);
	free(text);
}

static void log_plain(const void *arg)
{
	dp_log_plain("learnerd", "cannot listen on %s: %s", (const char *)arg, "in use");
}

static void test_plain(void **state)
{
	char *out;

	(void)state;
	/* No time or level, and not filtered. */
	dp_log_set_level(DP_LOG_ERROR);
	out = capture(log_plain, "[::1]:7000");
	assert_string_equal(out, "learnerd: cannot listen on [::1]:7000: in use\n");
	free(out);
	dp_log_set_level(DP_LOG_INFO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_level),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_plain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
