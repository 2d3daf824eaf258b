/* SPDX-License-Identifier: Apache-2.0 */
/* Error codes (the one X-macro table), the per-thread detail, and the
 * DP_REQUIRE invariant check. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/core/error.h"

#define ROW(name, value, text) { #name, DP_##name, text },
static const struct {
	const char *name;
	int code;
	const char *text;
} table[] = { DP_ERRNO_MAP(ROW) };
#undef ROW
#define NCODES (sizeof(table) / sizeof(table[0]))

static void test_table(void **state)
{
	(void)state;
	assert_true(NCODES >= 10);
	for (size_t i = 0; i < NCODES; i++) {
		const char *s = dp_strerror(table[i].code);

		assert_true(table[i].code < 0);
		assert_non_null(s);
		assert_true(s[0] != '\0');
		for (size_t j = 0; j < i; j++)
			if (table[j].code == table[i].code)
				fail_msg("DP_%s and DP_%s share the value %d", table[j].name,
					 table[i].name, table[i].code);
		if (table[i].text == NULL) {
			/* errno-backed: the value is -errno and the text strerror's. */
			assert_true(table[i].code > DP__EBASE);
			assert_string_equal(s, strerror(-table[i].code));
		} else {
			assert_true(table[i].code < DP__EBASE);
			assert_string_equal(s, table[i].text);
		}
	}
	assert_int_equal(DP_ENOMEM, -ENOMEM);
	assert_int_equal(DP_EEXIST, -EEXIST);
	assert_string_equal(dp_strerror(DP_OK), "success");
	assert_string_equal(dp_strerror(DP_EBUDGET), "privacy budget exhausted");
	/* An errno outside the table still prints strerror's text... */
	assert_string_equal(dp_strerror(-ENOSPC), strerror(ENOSPC));
	/* ...but values that are no code at all do not. */
	assert_string_equal(dp_strerror(1), "unknown error");
	assert_string_equal(dp_strerror(DP__EBASE), "unknown error");
	assert_string_equal(dp_strerror(DP__EBASE - 999), "unknown error");
}

static void test_detail(void **state)
{
	char longer[2000];

	(void)state;
	assert_int_equal(dp_error_set(DP_EFORMAT, "f.csv:%d: bad", 3), DP_EFORMAT);
	assert_string_equal(dp_error_detail(DP_EFORMAT), "f.csv:3: bad");
	/* A stale detail is never shown for a different failure... */
	for (size_t i = 0; i < NCODES; i++)
		if (table[i].code != DP_EFORMAT)
			assert_string_equal(dp_error_detail(table[i].code),
					    dp_strerror(table[i].code));
	assert_string_equal(dp_error_detail(DP_OK), "success");
	/* ...nor after it was cleared. */
	dp_error_clear();
	assert_string_equal(dp_error_detail(DP_EFORMAT), "malformed input");
	/* A newer detail replaces the older one. */
	dp_error_set(DP_EIO, "first");
	dp_error_set(DP_EIO, "second");
	assert_string_equal(dp_error_detail(DP_EIO), "second");
	dp_error_set(DP_ENOENT, "other");
	assert_string_equal(dp_error_detail(DP_EIO), dp_strerror(DP_EIO));
	/* Setting 0 records nothing that could be shown. */
	dp_error_set(0, "not an error");
	assert_string_equal(dp_error_detail(0), "success");
	assert_string_equal(dp_error_detail(DP_ENOENT), dp_strerror(DP_ENOENT));
	/* A long detail is cut, still one NUL-terminated string. */
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	dp_error_set(DP_EINVAL, "%s", longer);
	assert_true(strlen(dp_error_detail(DP_EINVAL)) > 100);
	assert_true(strlen(dp_error_detail(DP_EINVAL)) < sizeof(longer) - 1);
	assert_int_equal(strspn(dp_error_detail(DP_EINVAL), "x"),
			 strlen(dp_error_detail(DP_EINVAL)));
	dp_error_clear();
}

struct seen {
	char before[64];  /* the detail the new thread saw first */
	char after[64];   /* and after setting its own */
};

static void *other_thread(void *arg)
{
	struct seen *seen = arg;

	snprintf(seen->before, sizeof(seen->before), "%s", dp_error_detail(DP_EFORMAT));
	dp_error_set(DP_EFORMAT, "from the other thread");
	snprintf(seen->after, sizeof(seen->after), "%s", dp_error_detail(DP_EFORMAT));
	return NULL;
}

static void test_detail_per_thread(void **state)
{
	struct seen seen;
	pthread_t t;

	(void)state;
	dp_error_set(DP_EFORMAT, "from the main thread");
	assert_int_equal(pthread_create(&t, NULL, other_thread, &seen), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	/* The other thread saw none of ours, and did not overwrite it. */
	assert_string_equal(seen.before, dp_strerror(DP_EFORMAT));
	assert_string_equal(seen.after, "from the other thread");
	assert_string_equal(dp_error_detail(DP_EFORMAT), "from the main thread");
	dp_error_clear();
}

/* Run fn in a child with stderr on a pipe; returns what it printed and its
 * wait status. */
static void run_child(void (*fn)(void), char *out, size_t size, int *status)
{
	int p[2];
	size_t n = 0;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit no_core = { 0, 0 };

		setrlimit(RLIMIT_CORE, &no_core);
		signal(SIGABRT, SIG_DFL);
		close(p[0]);
		dup2(p[1], 2);
		fn();
		_exit(0);
	}
	close(p[1]);
	for (;;) {
		ssize_t r = read(p[0], out + n, size - 1 - n);

		if (r <= 0)
			break;
		n += (size_t)r;
	}
	out[n] = '\0';
	close(p[0]);
	assert_int_equal(waitpid(pid, status, 0), pid);
}

static volatile int answer = 42;

static void broken_invariant(void)
{
	DP_REQUIRE(answer == 41);
}

static void kept_invariant(void)
{
	DP_REQUIRE(answer == 42);
}

static void test_require(void **state)
{
	char out[1024];
	int st;

	(void)state;
	run_child(broken_invariant, out, sizeof(out), &st);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGABRT);
	/* One line naming the function and the condition. */
	assert_non_null(strstr(out, "broken_invariant"));
	assert_non_null(strstr(out, "answer == 41"));
	assert_non_null(strstr(out, "test_error.c"));
	assert_non_null(strchr(out, '\n'));
	assert_int_equal(strchr(out, '\n')[1], '\0');

	run_child(kept_invariant, out, sizeof(out), &st);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_string_equal(out, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_detail),
		cmocka_unit_test(test_detail_per_thread),
		cmocka_unit_test(test_require),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
