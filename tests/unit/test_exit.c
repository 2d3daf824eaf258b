/* SPDX-License-Identifier: Apache-2.0 */
/* The exit-status policy (common/core/exit.h) against its table in
 * docs/design.md §10 "Exit status", cell by cell, and the rules the table
 * stands for.  argv[1] is the path of docs/design.md (tests/unit/meson.build). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/core/error.h"
#include "common/core/exit.h"
#include "common/core/file.h"

#define ROW(name, value, text) { "`DP_" #name "`", DP_##name },
static const struct {
	const char *name;   /* as the table writes it */
	int code;
} codes[] = { DP_ERRNO_MAP(ROW) };
#undef ROW
#define NCODES (sizeof(codes) / sizeof(codes[0]))

/* Codes outside DP_ERRNO_MAP that reach the policy: libuv's and the
 * system's errno values (the table's row "other"). */
static const int others[] = { -EADDRINUSE, -EACCES, -EAGAIN, -EPERM, -ENOTDIR,
			      -ECONNREFUSED };

static const enum dp_exit_phase phases[] = { DP_EXIT_PHASE_ARGS, DP_EXIT_PHASE_LOAD,
					     DP_EXIT_PHASE_RUN };
#define NPHASES (sizeof(phases) / sizeof(phases[0]))

static const char *design_md;

/* One row of the table: its first cell and its three statuses. */
struct row {
	char name[64];
	int status[NPHASES];
};

/* Cells of a Markdown table line "| a | b | ... |", trimmed, into cell[]
 * (at most max); their number. */
static size_t cells(char *line, char **cell, size_t max)
{
	size_t n = 0;
	char *p = line;

	if (*p != '|')
		return 0;
	p++;
	while (n < max) {
		char *end = strchr(p, '|'), *a, *b;

		if (end == NULL)
			break;
		*end = '\0';
		a = p;
		while (*a == ' ')
			a++;
		b = a + strlen(a);
		while (b > a && b[-1] == ' ')
			*--b = '\0';
		cell[n++] = a;
		p = end + 1;
	}
	return n;
}

/* The rows of the code x phase table under "### Exit status". */
static size_t read_table(struct row *rows, size_t max)
{
	char *text = NULL, *line, *next;
	bool in_section = false, in_table = false;
	size_t len, n = 0;

	assert_int_equal(dp_file_read_all(design_md, 1 << 22, &text, &len), 0);
	for (line = text; line != NULL; line = next) {
		char *cell[8];
		size_t nc;

		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';

		if (strncmp(line, "### Exit status", 15) == 0) {
			in_section = true;
			continue;
		}
		if (!in_section)
			continue;
		if (strncmp(line, "## ", 3) == 0 || strncmp(line, "### ", 4) == 0)
			break;
		if (!in_table) {
			in_table = strncmp(line, "| code |", 8) == 0;
			continue;
		}
		if (strncmp(line, "|---", 4) == 0)
			continue;
		nc = cells(line, cell, 8);
		if (nc == 0)
			break;   /* the table ended */
		assert_int_equal(nc, 2 + NPHASES);
		assert_true(n < max);
		snprintf(rows[n].name, sizeof(rows[n].name), "%s", cell[0]);
		for (size_t k = 0; k < NPHASES; k++) {
			assert_true(strlen(cell[2 + k]) == 1 && cell[2 + k][0] >= '0' &&
				    cell[2 + k][0] <= '2');
			rows[n].status[k] = cell[2 + k][0] - '0';
		}
		n++;
	}
	free(text);
	return n;
}

static const struct row *find(const struct row *rows, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(rows[i].name, name) == 0)
			return &rows[i];
	fail_msg("docs/design.md \"Exit status\" has no row %s", name);
	return NULL;
}

/* Every code has its row, every row is a code, and every cell is what
 * dp_exit_status gives. */
static void test_matches_table(void **state)
{
	struct row rows[64];
	size_t n;
	const struct row *r;

	(void)state;
	n = read_table(rows, 64);
	assert_int_equal(n, NCODES + 2);   /* the codes, "(none)" and "other" */
	for (size_t i = 0; i < NCODES; i++) {
		r = find(rows, n, codes[i].name);
		for (size_t k = 0; k < NPHASES; k++)
			if (dp_exit_status(codes[i].code, phases[k]) != r->status[k])
				fail_msg("%s in phase %zu: dp_exit_status %d, the table %d",
					 codes[i].name, k, dp_exit_status(codes[i].code, phases[k]),
					 r->status[k]);
	}
	r = find(rows, n, "(none)");
	for (size_t k = 0; k < NPHASES; k++)
		assert_int_equal(dp_exit_status(0, phases[k]), r->status[k]);
	r = find(rows, n, "other");
	for (size_t j = 0; j < sizeof(others) / sizeof(others[0]); j++)
		for (size_t k = 0; k < NPHASES; k++)
			assert_int_equal(dp_exit_status(others[j], phases[k]), r->status[k]);
}

/* The rules the table is built on (docs/design.md §10). */
static void test_rules(void **state)
{
	(void)state;
	for (size_t k = 0; k < NPHASES; k++) {
		assert_int_equal(dp_exit_status(0, phases[k]), DP_EXIT_OK);
		for (size_t i = 0; i < NCODES; i++) {
			int st = dp_exit_status(codes[i].code, phases[k]);

			/* Only success is 0. */
			assert_true(st == DP_EXIT_FAIL || st == DP_EXIT_CONFIG);
			/* A failure while running keeps a daemon down only
			 * when what was asked is wrong however often it is
			 * tried, or a verified peer refused for good. */
			if (phases[k] == DP_EXIT_PHASE_RUN && st == DP_EXIT_CONFIG)
				assert_true(codes[i].code == DP_EINVAL || codes[i].code == DP_EEXIST ||
					    codes[i].code == DP_EREFUSED);
		}
		/* The machine is never a human's to fix. */
		assert_int_equal(dp_exit_status(DP_ENOMEM, phases[k]), DP_EXIT_FAIL);
		assert_int_equal(dp_exit_status(DP_ERNG, phases[k]), DP_EXIT_FAIL);
		/* A lock another process holds goes away by itself. */
		assert_int_equal(dp_exit_status(DP_ESTATE, phases[k]), DP_EXIT_FAIL);
		assert_int_equal(dp_exit_status(DP_EREFUSED, phases[k]), DP_EXIT_CONFIG);
	}
	/* What an unauthenticated peer sends arrives as these while running:
	 * never 2, or whoever takes the learner's address could keep every
	 * owner down. */
	assert_int_equal(dp_exit_status(DP_ETLS, DP_EXIT_PHASE_RUN), DP_EXIT_FAIL);
	assert_int_equal(dp_exit_status(DP_EPROTO, DP_EXIT_PHASE_RUN), DP_EXIT_FAIL);
	/* But our own certificate or key that cannot be used is local. */
	assert_int_equal(dp_exit_status(DP_ETLS, DP_EXIT_PHASE_LOAD), DP_EXIT_CONFIG);
	/* A missing or malformed input is 2 when it is read; a program that is
	 * missing (gnuplot) while running is 1. */
	assert_int_equal(dp_exit_status(DP_ENOENT, DP_EXIT_PHASE_LOAD), DP_EXIT_CONFIG);
	assert_int_equal(dp_exit_status(DP_EFORMAT, DP_EXIT_PHASE_LOAD), DP_EXIT_CONFIG);
	assert_int_equal(dp_exit_status(DP_ENOENT, DP_EXIT_PHASE_RUN), DP_EXIT_FAIL);
	/* Every owner exhausted: the job cannot finish (1); a schedule that
	 * would overspend is refused as input (2). */
	assert_int_equal(dp_exit_status(DP_EBUDGET, DP_EXIT_PHASE_RUN), DP_EXIT_FAIL);
	assert_int_equal(dp_exit_status(DP_EBUDGET, DP_EXIT_PHASE_LOAD), DP_EXIT_CONFIG);
	/* An unreadable configuration file is the operator's; a disk error
	 * later may pass. */
	assert_int_equal(dp_exit_status(DP_EIO, DP_EXIT_PHASE_ARGS), DP_EXIT_CONFIG);
	assert_int_equal(dp_exit_status(DP_EIO, DP_EXIT_PHASE_LOAD), DP_EXIT_FAIL);
}

/* A positive code or an unknown phase is a caller's bug: DP_REQUIRE. */
static void call_child(int err, int phase)
{
	struct rlimit no_core = { 0, 0 };
	int devnull = open("/dev/null", O_WRONLY);

	setrlimit(RLIMIT_CORE, &no_core);
	if (devnull >= 0)
		dup2(devnull, STDERR_FILENO);
	(void)dp_exit_status(err, (enum dp_exit_phase)phase);
	_exit(0);
}

static int child_status(int err, int phase)
{
	pid_t pid = fork();
	int st = 0;

	assert_true(pid >= 0);
	if (pid == 0)
		call_child(err, phase);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

static void test_require(void **state)
{
	int st;

	(void)state;
	st = child_status(1, DP_EXIT_PHASE_RUN);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	st = child_status(DP_EIO, DP_EXIT_PHASE_RUN + 1);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	st = child_status(DP_EIO, DP_EXIT_PHASE_RUN);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_table),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_require),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: test_exit docs/design.md\n");
		return 2;
	}
	design_md = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
