/* SPDX-License-Identifier: Apache-2.0 */
/* Internals of the ledger set (ledgerset.h), shared by its files and its
 * unit test only: ledgerset.c opens and locks the directory and reads its
 * job files, ledgerset_format.c keeps the directory's format version and
 * migrates an older directory one step at a time (docs/ledger.md §10),
 * ledgerset_lifetime.c keeps the lifetime cap and its history (§11). */
#ifndef DP_LEDGERSET_IMPL_H
#define DP_LEDGERSET_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/core/ledgerset.h"

/* The file in the directory that records its format version. */
#define DP__LEDGERSET_FORMAT_FILE "format"
/* The file that records the lifetime cap and its changes (format 3 on). */
#define DP__LEDGERSET_LIFETIME_FILE "lifetime"
/* The first format that records the lifetime cap. */
#define DP__LEDGERSET_FORMAT_LIFETIME 3
/* The first format that keeps the job files in DIR/jobs/ as <job>.ledger
 * (before: DIR/job-<job>.ledger; docs/ledger.md §10 "The step from 4 to 5"). */
#define DP__LEDGERSET_FORMAT_JOBS 5
#define DP__LEDGERSET_JOBS_DIR "jobs"

/* A job file found in the directory itself in a directory of format 5 or
 * later: one the step from 4 to 5 (or a later open) has still to move into
 * jobs/ (`stale` false: it is counted, under its old path), or one whose
 * copy in jobs/ is what counts (`stale`: the same file, or a copy holding
 * no more; left by a crash or copied in).  A writable open tidies both
 * (dp__ledgerset_jobs_tidy). */
struct dp__ledgerset_loose {
	char *top;       /* DIR/job-....ledger */
	char *home;      /* DIR/jobs/....ledger, where it belongs */
	bool stale;
};

struct dp_ledgerset {
	char *dir;
	char *owner;     /* NULL: any */
	bool readonly;
	int dir_fd;      /* the directory itself, flock'ed (writable sets; -1 else) */
	int lock_fd;     /* DIR/lock, flock'ed too (for daemons from before dir_fd) */
	unsigned format; /* the directory's format version */
	dp_ledgerset_job *jobs;
	size_t n, cap;
	dp_ledgerset_change *changes;   /* the lifetime cap's history (NULL: none) */
	size_t n_changes;
	struct dp__ledgerset_loose *loose;   /* format 5 on: job files outside jobs/ */
	size_t n_loose, cap_loose;
};

/* What a step may need besides the directory: what the opener records as
 * the lifetime cap (NULL: nothing, a step that needs it fails) and
 * whether the directory was made by this open (nothing to migrate). */
struct dp__ledgerset_ctx {
	const struct dp_ledgerset_init *init;
	bool created;
};

/* One step of the format: the directory at version `from` becomes
 * from + 1.  dp__ledgerset_migrate runs `apply` under the directory's
 * lock, then commits the step by writing the format file of from + 1
 * atomically.  A crash anywhere before the commit leaves version `from`,
 * and the next open runs the step again from its start, so `apply` must:
 *   - be restartable: run again over what an interrupted run left, it
 *     ends in the same state;
 *   - leave every figure a reader of version `from` computes unchanged
 *     until the commit (add files that reader ignores; never rewrite,
 *     rename away or remove a ledger file it reads);
 *   - make each file it writes durable (dp_file_write_atomic,
 *     dp_file_sync_dir) before it returns.
 * Removing what version from + 1 no longer reads belongs after the commit,
 * where its loss to a crash costs nothing.  0 or a DP_E code with a
 * detail. */
struct dp__ledgerset_step {
	unsigned from;
	const char *what;                 /* what the step does, for the log line */
	int (*apply)(const char *dir, const struct dp__ledgerset_ctx *ctx);
					  /* NULL: the commit is the whole step */
};

/* The version of directory `dir` as found: the number in its format file,
 * or 1 when there is none (the layout from before versions).
 * Errors: DP_EFORMAT (a version above `newest`, which this build does not
 * know: the detail says so), DP_ECORRUPT (a format file that does not
 * parse), DP_EIO, DP_ENOMEM.  *version untouched on failure. */
int dp__ledgerset_format_read(const char *dir, unsigned newest, unsigned *version);

/* Write the format file of `version` atomically: a temporary file, fsync,
 * rename, fsync of the directory (file.h).  Errors: DP_EIO, DP_ENOMEM. */
int dp__ledgerset_format_write(const char *dir, unsigned version);

/* Bring `dir` from *version to `target` with chain[0..n), one step and its
 * commit at a time, each logged unless ctx->created (a directory this
 * process has just made holds nothing to migrate); *version follows every
 * commit, so on failure it says where the directory stands.  The caller
 * holds the directory's lock.  Errors: those of a step or of its commit;
 * DP_EFORMAT when no step starts at the current version (a bug in the
 * table). */
int dp__ledgerset_migrate(const char *dir, const struct dp__ledgerset_step *chain, size_t n,
			  unsigned target, const struct dp__ledgerset_ctx *ctx, unsigned *version);

/* dp__ledgerset_migrate with this build's steps, to DP_LEDGERSET_FORMAT. */
int dp__ledgerset_upgrade(const char *dir, const struct dp__ledgerset_ctx *ctx,
			  unsigned *version);

/* The step from format 2 to 3: record the lifetime cap.  A `lifetime` file
 * that is already whole (from an interrupted run of this step, or left in
 * the directory by a later format) is kept as it is, so that removing the
 * format file can never replace a recorded cap; otherwise the file is
 * written with one change, ctx->init's cap.  Errors: DP_EINVAL (no init),
 * DP_ECORRUPT (a damaged lifetime file), DP_EIO, DP_ENOMEM. */
int dp__ledgerset_lifetime_start(const char *dir, const struct dp__ledgerset_ctx *ctx);

/* Read the `lifetime` file of s->dir into s->changes (replacing them).
 * Errors: DP_ENOENT (no file; detail set), DP_ECORRUPT (a file that does
 * not parse or whose changes do not chain; the detail says what), DP_EIO,
 * DP_ENOMEM.  s unchanged on failure. */
int dp__ledgerset_lifetime_read(dp_ledgerset *s);

/* The file name of job `job` relative to the directory, at directory
 * format `format`: before DP__LEDGERSET_FORMAT_JOBS `job-<job>.ledger`, or
 * `job-sha256-<hex>.ledger` for a job id that is not plain (1..100 of
 * A-Z a-z 0-9 . _ -, not starting with '.'; hex: the first 128 bits of
 * its SHA-256); from it `jobs/<job>.ledger`, or `jobs/sha256=<hex>.ledger`
 * ('=' is never in a plain id, so the two forms cannot meet).  malloc'ed;
 * NULL when out of memory. */
char *dp__ledgerset_job_name(const char *job, unsigned format);

/* How the set reads a job file: read-only, an unlimited cap allowed,
 * nothing logged (a failed start stays one line). */
#define DP__LEDGERSET_READ_FLAGS (DP_LEDGER_READONLY | DP_LEDGER_ALLOW_INF | DP_LEDGER_QUIET)

/* The job field of a job file's identity "owner=<id> job=<job>" (or
 * "... job-sha256=<hex>"): what follows the first space. */
const char *dp__ledgerset_job_field(const char *ident);

/* A job file's name in the directory itself (`job-*.ledger`, the layout
 * before format 5), and in jobs/ (`*.ledger` but hidden names: the move's
 * temporary one). */
bool dp__ledgerset_old_name(const char *name);

/* Whether paths a and b name the same file (one inode, two names). */
bool dp__ledgerset_same_file(const char *a, const char *b);
bool dp__ledgerset_home_name(const char *name);

/* Where the job file `name` of the directory itself (`job-....ledger`,
 * the layout before format 5) belongs from format 5 on: its name relative
 * to the directory (malloc'ed, in *home).  `job` is the header's job field
 * ("job=ID", or "job-sha256=HEX" when the identity was too long to hold
 * the id: then the old name, checked against the hash, gives the id).
 * Errors: DP_ECORRUPT (a header with no job field, or a hashed one that
 * the file's name does not match), DP_ENOMEM. */
int dp__ledgerset_job_home(const char *name, const char *job, char **home);

/* The step from format 4 to 5: make jobs/ (0700) and give every job file
 * of the directory itself a second name there, its home
 * (dp__ledgerset_job_home), by link(2) to a temporary name and rename(2)
 * over the home: at format 4 the old name is what counts, so a file at
 * the home that is not the same inode (a copy left by an interrupted run)
 * is replaced.  jobs/ is synced before it returns; the old names stay
 * (a reader of format 4 counts them) until dp__ledgerset_jobs_tidy.
 * Errors: DP_ECORRUPT (a damaged job file, named; see job_home), DP_EIO,
 * DP_ENOMEM. */
int dp__ledgerset_jobs_move(const char *dir, const struct dp__ledgerset_ctx *ctx);

/* A writable set of format 5 or later: the job files its scan found
 * outside jobs/ (s->loose) are moved home (those not stale, as in the
 * step) and, once jobs/ is synced, their old names removed; then the
 * directory is synced and scanned again.  Nothing to do: no write.
 * Errors: those of the move, DP_EIO, DP_ENOMEM. */
int dp__ledgerset_jobs_tidy(dp_ledgerset *s);

/* Write a `lifetime` file holding only the first change, init's cap
 * (a directory that has none).  Errors: DP_EINVAL (a bad init), DP_EIO,
 * DP_ENOMEM. */
int dp__ledgerset_lifetime_create(const char *dir, const struct dp_ledgerset_init *init);

#endif
