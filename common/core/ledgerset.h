/* SPDX-License-Identifier: Apache-2.0 */
/* An owner's ledgers across jobs: one directory, one ledger file per job
 * (docs/ledger.md §8 "Jobs and the lifetime budget").
 *
 * Each job keeps its own dp_ledger (ledger.h, file format 1, unchanged): its
 * header binds "owner=<id> job=<job>", the job's epsilon cap and its answer
 * cap K, and its records are that job's answers with that job's request
 * ids.  What the whole dataset has spent -- the lifetime total that
 * `lifetime-epsilon` bounds -- is the sum of the job files' totals, so it is
 * as durable as each file's records and needs no file of its own: a crash
 * can lose nothing that a job ledger did not lose.
 *
 * The directory holds `job-<name>.ledger` files, a `lock` file, which
 * an open set holds with flock(2) for its whole life, so two daemons can
 * never spend the same dataset's budget side by side, and a `format` file
 * with the directory's format version.  Job names of 1..100 characters of
 * A-Z a-z 0-9 . _ - (not starting with '.') are used as they are; any
 * other name is stored as `job-sha256-<32 hex>.ledger`.
 *
 * The directory's format version (docs/ledger.md §10; not the job files'
 * format of ledger.h): a directory without the `format` file is version 1,
 * the layout from before versions.  A writable open migrates an older
 * directory up to DP_LEDGERSET_FORMAT under the lock, one crash-safe step
 * at a time; a read-only open reads it as it is.  A newer version than this
 * build knows is refused, and nothing is changed.
 *
 * Not thread-safe; use a set from one thread. */
#ifndef DP_LEDGERSET_H
#define DP_LEDGERSET_H

#include <stddef.h>
#include <stdint.h>

#include "common/core/ledger.h"

typedef struct dp_ledgerset dp_ledgerset;

/* The directory format this build writes (and the newest it reads). */
#define DP_LEDGERSET_FORMAT 2

/* Flags for dp_ledgerset_open(). */
enum {
	/* Inspect only: no lock, no creation, every job file opened with
	 * DP_LEDGER_READONLY (a torn tail is reported, not removed). */
	DP_LEDGERSET_READONLY = 1u << 0,
};

/* One job as found in the directory when the set was opened. */
typedef struct dp_ledgerset_job {
	char job[DP_LEDGER_IDENTITY_MAX + 1];   /* from the header: "job=..." or "job-sha256=..." */
	char *path;
	uint64_t answers, answers_cap;
	uint64_t spent_nano, cap_nano;          /* DP_NANO_INF for an unlimited ledger */
	uint64_t last_time_ns;                  /* time of its last record (0: none) */
	size_t torn;
} dp_ledgerset_job;

/* Open the directory `dir` of owner `owner_id` (NULL: any owner, for
 * inspection), creating it (mode 0700) unless READONLY.  Every job file in it
 * is verified completely (dp_ledger_open read-only and quiet, with
 * DP_LEDGER_ALLOW_INF: nothing is logged, so a daemon's failed start stays
 * one line; a torn tail shows in the entry's `torn`)
 * and must belong to owner_id; the set then holds their summaries.
 * A regular file at `dir` is a format-1 single-job ledger from before jobs:
 * DP_EINVAL, with a detail saying how to move it into a directory.
 * Unless READONLY, the directory is then brought to DP_LEDGERSET_FORMAT
 * under the lock (each step logged; an older directory's figures are kept
 * exactly, and a crash at any point leaves it readable at the old or the
 * new version).
 * Errors: DP_EINVAL (not a directory, another owner's file), DP_ECORRUPT
 * (a damaged job ledger, named, or a damaged format file), DP_EFORMAT (a
 * format newer than DP_LEDGERSET_FORMAT), DP_ESTATE (locked by another
 * process), DP_ENOENT (READONLY and missing), DP_EIO (also a failed
 * migration step: the directory keeps the version it had reached),
 * DP_ENOMEM.  *out untouched on failure. */
int dp_ledgerset_open(const char *dir, const char *owner_id, unsigned flags,
		      dp_ledgerset **out);
/* Read every job file's summary again (after a job ledger of this process
 * was written and closed).  The lock is kept.  Errors as for open; on
 * failure the set holds no jobs. */
int dp_ledgerset_rescan(dp_ledgerset *s);
/* The directory's format version: DP_LEDGERSET_FORMAT after a writable
 * open; as found after a read-only one (1: no format file). */
unsigned dp_ledgerset_format(const dp_ledgerset *s);
/* Release the lock and free the set.  NULL is ignored. */
void dp_ledgerset_close(dp_ledgerset *s);

/* The path of job `job`'s ledger file in the set's directory (malloc'ed, the
 * caller frees it), whether it exists or not.  NULL on ENOMEM. */
char *dp_ledgerset_job_path(const dp_ledgerset *s, const char *job);

/* Jobs found at open, in the order of their last record (oldest first;
 * files without records first). */
size_t dp_ledgerset_count(const dp_ledgerset *s);
const dp_ledgerset_job *dp_ledgerset_at(const dp_ledgerset *s, size_t i);
/* The entry for job file `path`, or NULL. */
const dp_ledgerset_job *dp_ledgerset_find(const dp_ledgerset *s, const char *path);
/* Sum of the spent totals of every job file found at open except `path`
 * (NULL: all), in nano-epsilon; DP_NANO_INF if one of them is infinite. */
uint64_t dp_ledgerset_spent_except(const dp_ledgerset *s, const char *path);

#endif
