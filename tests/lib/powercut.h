/* SPDX-License-Identifier: Apache-2.0 */
/* The power-cut half of the fault shim (iofault.c): what a disk has made
 * durable, recorded for tests/integration/campaigns/powercut.py to roll a daemon's files
 * back to after a kill (docs/reliability.md §8).  Test only; the symbols
 * are hidden, so they can never interpose a daemon's own. */
#ifndef DP_TESTS_POWERCUT_H
#define DP_TESTS_POWERCUT_H

#define PC_HIDDEN __attribute__((visibility("hidden")))

/* 1 when this sync must be dropped (DP_POWER_DROP): the caller returns 0
 * without syncing, and nothing is recorded.  `kind` is "fsync" or
 * "fdatasync"; a directory's fsync counts as "dirsync". */
PC_HIDDEN int powercut_drop(const char *kind, int fd);

/* Before a sync of fd (a regular file or a directory): copy what it holds
 * now, the content or the listing, which is all a successful sync of it
 * promises.  Returns a token for powercut_sync_end (0: nothing recorded,
 * the power-cut mode is off or the copy failed). */
PC_HIDDEN unsigned long powercut_sync_begin(int fd);

/* After the sync: ok != 0 commits the copy as the durable state of that
 * inode (or listing of that directory). */
PC_HIDDEN void powercut_sync_end(unsigned long token, int ok);

/* The crash point, just before the shim's SIGKILL: record the tracked
 * directories as they are now (the page cache's view). */
PC_HIDDEN void powercut_crash(void);

#endif
