/* SPDX-License-Identifier: Apache-2.0 */
/* A crash at a chosen sync, for the unit tests of what must survive one
 * (the ledger directory's migrations and its lifetime cap, docs/ledger.md
 * §10 and §11): every fsync of the core library goes through the hook
 * (common/core/file.h), which kills the child at its `at`-th call, before
 * or after the real sync, or makes that call fail.  Include once per test
 * program, after cmocka.h. */
#ifndef DP_TEST_SYNCCRASH_H
#define DP_TEST_SYNCCRASH_H

#include <errno.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/core/file.h"

/* The crash hook: sync call number `at` (1-based) kills the process
 * before or after the real sync; `fail` makes it fail with EIO instead. */
static int sync_calls, sync_at;
static enum { KILL_BEFORE, KILL_AFTER, FAIL } sync_mode;

static int crash_sync(int fd)
{
	int r;

	if (++sync_calls == sync_at && sync_mode == KILL_BEFORE)
		_exit(9);
	if (sync_calls == sync_at && sync_mode == FAIL) {
		errno = EIO;
		return -1;
	}
	r = fsync(fd);
	if (sync_calls == sync_at && sync_mode == KILL_AFTER)
		_exit(9);
	return r;
}

/* In a child: the hook armed at call `at`, then what `run` does.  Exit 9:
 * killed at that call; 0: `run` succeeded; 1: it failed. */
static int in_child(int at, int mode, int (*run)(const char *where), const char *where)
{
	pid_t pid = fork();
	int status = 0;

	assert_true(pid >= 0);
	if (pid == 0) {
		sync_calls = 0;
		sync_at = at;
		sync_mode = mode;
		dp_file_set_sync_hook(crash_sync);
		_exit(run(where) == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

#endif
