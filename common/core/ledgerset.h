/* SPDX-License-Identifier: Apache-2.0 */
/* An owner's ledgers across jobs: one directory, one ledger file per job
 * (docs/ledger.md §8 "Jobs and the lifetime budget").
 *
 * Each job keeps its own dp_ledger (ledger.h): its header binds
 * "owner=<id> job=<job>", the job's mechanism and unit (Laplace in
 * nano-epsilon, Gaussian in nano-rho), its cap and its answer cap K, and
 * its records are that job's answers with that job's request ids.  What
 * the whole dataset has spent -- what `lifetime-epsilon` bounds -- is
 * computed from the job files' totals (the sum for Laplace only, the
 * bound of docs/ledger.md §8 over both mechanisms), so it is as durable
 * as each file's records and needs no file of its own: a crash can lose
 * nothing that a job ledger did not lose.
 *
 * The directory holds `jobs/<name>.ledger` files (format 5; before,
 * `job-<name>.ledger` beside `format`), a `format` file with the
 * directory's format version, a `lifetime` file with the lifetime cap and
 * the history of its changes (format 3; and the lifetime delta, format
 * 4), and a `lock` file.  A writable set
 * holds the directory itself with flock(2) for its whole life (and the
 * `lock` file too, for daemons from before the directory lock), so two
 * daemons can never spend the same dataset's budget side by side: removing
 * or replacing any file of the directory, or naming it through a symbolic
 * link, cannot free the lock while the set is open.  Job names of 1..100
 * characters of A-Z a-z 0-9 . _ - (not starting with '.') are used as they
 * are; any other name is stored as `jobs/sha256=<32 hex>.ledger`.
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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/core/ledger.h"
#include "common/core/zcdp.h"

typedef struct dp_ledgerset dp_ledgerset;
struct json_object;

/* The directory format this build writes (and the newest it reads). */
#define DP_LEDGERSET_FORMAT 5

/* Flags for dp_ledgerset_open(). */
enum {
	/* Inspect only: no lock, no creation, every job file opened with
	 * DP_LEDGER_READONLY (a torn tail is reported, not removed). */
	DP_LEDGERSET_READONLY = 1u << 0,
	/* Writable: a directory of format 3 or later whose `lifetime` file is
	 * missing gets init's cap as the first entry of a new history instead
	 * of being refused (dpasync ledger raise-lifetime, docs/ledger.md §11). */
	DP_LEDGERSET_RECOVER_LIFETIME = 1u << 1,
};

/* What a writable open records as the lifetime cap when the directory has
 * none yet: a new directory, one migrated from format 2 (its first open
 * by this build), or one being recovered (DP_LEDGERSET_RECOVER_LIFETIME). */
struct dp_ledgerset_init {
	uint64_t lifetime_nano;     /* the cap; DP_NANO_INF: no lifetime cap */
	const char *program;        /* who records it, e.g. "ownerd" */
	const char *reason;         /* why (NULL: a default naming the event) */
	double lifetime_delta;      /* the lifetime delta in [0, 1); 0: pure eps-DP only,
				       so no Gaussian answer fits (docs/ledger.md §11) */
};

/* The longest reason of a change of the lifetime cap, in bytes. */
#define DP_LEDGERSET_REASON_MAX 512

/* One change of the lifetime cap, as recorded in the directory's
 * `lifetime` file (docs/ledger.md §11).  The first change records the
 * cap the directory started with (first = true, old_nano meaningless);
 * every later one the cap before it (old_nano) and after it. */
typedef struct dp_ledgerset_change {
	char time[32];              /* UTC, "2026-11-24T11:15:00Z" */
	char user[64];              /* the effective user's name, or "uid N" */
	uint64_t uid;               /* the effective user id */
	char host[256];             /* gethostname() */
	char program[64];           /* "ownerd", "dpasync ledger raise-lifetime", ... */
	bool first;
	uint64_t old_nano, new_nano;   /* DP_NANO_INF: no lifetime cap */
	double delta;               /* the lifetime delta from this change on (format 4;
				       0: pure eps-DP only, the default) */
	char reason[DP_LEDGERSET_REASON_MAX + 1];
} dp_ledgerset_change;

/* Flags for dp_ledgerset_lifetime_set(). */
enum {
	/* Raising is allowed: the data owner's decision, taken through
	 * `dpasync ledger raise-lifetime` only (docs/privacy.md §5). */
	DP_LEDGERSET_ALLOW_RAISE = 1u << 0,
};

/* One job as found in the directory when the set was opened.  Amounts are
 * in the job file's unit (ledger.h): nano-epsilon, or nano-rho for a
 * Gaussian job. */
typedef struct dp_ledgerset_job {
	char job[DP_LEDGER_IDENTITY_MAX + 1];   /* from the header: "job=..." or "job-sha256=..." */
	char *path;
	uint64_t answers, answers_cap;
	uint64_t spent_nano, cap_nano;          /* DP_NANO_INF for an unlimited ledger */
	uint64_t last_time_ns;                  /* time of its last record (0: none) */
	size_t torn;
	unsigned unit;                          /* DP_LEDGER_UNIT_EPS or _RHO */
	double delta;                           /* nano-rho: the job's delta (else 0) */
	uint64_t slack_nano;                    /* nano-rho: sampler slack per answer */
	dp_zcdp_totals totals;                  /* its spending for the lifetime bound
						   (dp_ledger_totals) */
} dp_ledgerset_job;

/* Open the directory `dir` of owner `owner_id` (NULL: any owner, for
 * inspection), creating it (mode 0700) unless READONLY.  Every job file in it
 * is verified completely (dp_ledger_open read-only and quiet, with
 * DP_LEDGER_ALLOW_INF: nothing is logged, so a daemon's failed start stays
 * one line; a torn tail shows in the entry's `torn`)
 * and must belong to owner_id; the set then holds their summaries.
 * A regular file at `dir` is a format-1 single-job ledger from before jobs:
 * DP_EINVAL, with a detail saying how to move it into a directory.
 * Unless READONLY, the directory is locked (flock on the directory itself
 * and on its `lock` file, held until dp_ledgerset_close; never blocks) and
 * brought to DP_LEDGERSET_FORMAT (each step logged; an older directory's
 * figures are kept exactly, and a crash at any point leaves it readable at
 * the old or the new version); a directory that has no lifetime cap yet
 * records init's (init may be NULL when the caller has none: such a
 * directory is then refused with DP_EINVAL).  READONLY takes no lock at
 * all, so it is never blocked by a daemon and never blocks one: it reads
 * the directory at the format found, and the lifetime cap when that
 * format records one.
 * Errors: DP_EINVAL (not a directory, another owner's file, no cap to
 * record), DP_ECORRUPT (a damaged job ledger, named, or a damaged format
 * or lifetime file), DP_EFORMAT (a format newer than DP_LEDGERSET_FORMAT),
 * DP_ESTATE (locked by another process), DP_ENOENT (READONLY and
 * missing), DP_EIO (also a failed migration step: the directory keeps the
 * version it had reached), DP_ENOMEM.  *out untouched on failure. */
int dp_ledgerset_open(const char *dir, const char *owner_id, unsigned flags,
		      const struct dp_ledgerset_init *init, dp_ledgerset **out);
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
 * caller frees it), whether it exists or not, in the layout of the
 * directory's format as found (a writable set: the current one).  NULL on
 * ENOMEM. */
char *dp_ledgerset_job_path(const dp_ledgerset *s, const char *job);

/* The hash a job id is known by where the id itself does not fit (a file
 * name, or a ledger header's identity): the first 128 bits of its SHA-256
 * in lower-case hex.  The file names and the headers must agree on it
 * (docs/ledger.md §10 "The step from 4 to 5" checks one against the
 * other), so both take it from here. */
void dp_ledgerset_job_hash(const char *job, char hex[33]);

/* Jobs found at open, in the order of their last record (oldest first;
 * files without records first). */
size_t dp_ledgerset_count(const dp_ledgerset *s);
const dp_ledgerset_job *dp_ledgerset_at(const dp_ledgerset *s, size_t i);
/* The entry for job file `path`, or NULL. */
const dp_ledgerset_job *dp_ledgerset_find(const dp_ledgerset *s, const char *path);
/* Sum of the spent totals of every job file found at open except `path`
 * (NULL: all), in nano-epsilon; DP_NANO_INF if one of them is infinite.
 * The sum of the nano-epsilon (Laplace) files only: a dataset's bound
 * with Gaussian jobs is dp_zcdp_best_nano of dp_ledgerset_totals_except. */
uint64_t dp_ledgerset_spent_except(const dp_ledgerset *s, const char *path);

/* ---- both mechanisms over the lifetime (docs/ledger.md §8) ------------ */

/* The spending of every job file found at open except `path` (NULL: all),
 * summed field by field (saturating): the Laplace files' nano-epsilon and
 * their charges as zCDP, the Gaussian files' nano-rho and slack.  The
 * dataset's bound at the lifetime delta is dp_zcdp_best_nano of it:
 * exactly the eps_pure field, basic composition, without Gaussian
 * answers; DP_NANO_INF for Gaussian answers at delta 0. */
dp_zcdp_totals dp_ledgerset_totals_except(const dp_ledgerset *s, const char *path);
/* What a Laplace job can surely still spend, in nano-epsilon, under a
 * lifetime cap cap_nano at `delta` after *t: the cap less t->eps_pure and
 * the Gaussian answers' conversion alone (the first term of the bound), so
 * that any pure charges up to it keep the bound within the cap; exactly
 * cap - eps_pure (0 when spent) without Gaussian answers; DP_NANO_INF
 * for no cap; 0 on a bad delta. */
uint64_t dp_ledgerset_pure_left(const dp_zcdp_totals *t, uint64_t cap_nano, double delta);

/* ---- the lifetime cap (ledgerset_lifetime.c, docs/ledger.md §11) ------- */

/* The lifetime cap recorded in the directory, in nano-epsilon (DP_NANO_INF:
 * no lifetime cap): 0 with *nano set, or DP_ENOENT when the set has none
 * (a read-only open of a directory of format 1 or 2). */
int dp_ledgerset_lifetime_get(const dp_ledgerset *s, uint64_t *nano);
/* The recorded changes of the cap, oldest first (0 without a cap); the
 * last one's new_nano is the cap.  The pointer is the set's, valid until
 * the next change or close. */
size_t dp_ledgerset_lifetime_count(const dp_ledgerset *s);
/* The lifetime delta in force (the last change's; 0 without a record, or
 * for a directory that never set one: pure eps-DP only). */
double dp_ledgerset_lifetime_delta(const dp_ledgerset *s);
const dp_ledgerset_change *dp_ledgerset_lifetime_at(const dp_ledgerset *s, size_t i);
/* Add who made change `c` and when (the keys time, user, uid, host and
 * program) to the JSON object `o`: the lifetime file and `dpasync ledger`
 * print them alike.  0 or DP_ENOMEM (o may then hold some of them). */
int dp_ledgerset_change_add_who(struct json_object *o, const dp_ledgerset_change *c);
/* Change the lifetime cap of a writable set to `nano` (DP_NANO_INF: none),
 * recording who (the effective user, the host, `program`), when, the cap
 * before and after, and `reason` (1..DP_LEDGERSET_REASON_MAX bytes of
 * printable text).  The whole history with the new change is written
 * atomically (a temporary file, fsync, rename, fsync of the directory), so
 * after a crash the directory holds the old cap and history or the new
 * ones, never a mix.  Lowering is always allowed; raising only with
 * DP_LEDGERSET_ALLOW_RAISE.  The same cap again writes nothing (0).
 * Errors: DP_EINVAL (a raise without the flag, a bad reason or program, a
 * cap of 0), DP_ESTATE (a read-only set, or one without a cap), DP_EIO
 * (the write or a sync failed: the file holds the old or the new
 * history; the set keeps the old), DP_ENOMEM. */
int dp_ledgerset_lifetime_set(dp_ledgerset *s, uint64_t nano, unsigned flags,
			      const char *program, const char *reason);
/* The same for the lifetime delta (in [0, 1), the cap kept), recorded as
 * a change of its own: lowering it is always allowed (a stronger
 * promise), raising it, like 0 -> 1e-6 which first allows Gaussian
 * answers, only with DP_LEDGERSET_ALLOW_RAISE.  Errors as above
 * (DP_EINVAL also for a delta out of range). */
int dp_ledgerset_lifetime_set_delta(dp_ledgerset *s, double delta, unsigned flags,
				    const char *program, const char *reason);

#endif
