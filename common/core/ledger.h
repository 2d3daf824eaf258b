/* SPDX-License-Identifier: Apache-2.0 */
/* The owner's durable privacy-budget ledger (docs/privacy.md §5, docs/design.md §3).
 *
 * One file per owner and job: a 256-byte header (magic, format version, the
 * caps, an identity string, CRC) followed by one 64-byte record per answer
 * {magic, seq, k, charge, new total, count, time, header CRC, CRC}.  The log
 * of records is the whole state; docs/ledger.md gives the byte layout.
 *
 * Budget is kept in integer nano units of the file's mechanism (ledger
 * units below: nano-epsilon for Laplace, nano-rho for Gaussian answers,
 * docs/ledger.md §2), written here as nano-epsilon (1e-9 epsilon, nano.h): every
 * charge is rounded UP to the next nano-epsilon and the cap DOWN, from the
 * exact binary value of the double, so the ledger never under-counts;
 * DP_NANO_INF stands for "infinite" (only with DP_LEDGER_ALLOW_INF).  A
 * charge is refused before anything is written if it would make the answer
 * count exceed the answer cap K or the spent total exceed the cap.
 *
 * Protocol for the owner:
 *   dp_ledger_check()   before computing/sampling anything (optional)
 *   dp_ledger_charge()  returns 0 only after the record is fdatasync'ed
 *   send the answer     only after dp_ledger_charge() returned 0
 * A failed write or sync puts the ledger in a permanent failed state (every
 * later call returns DP_EIO); the daemon must stop answering.  The fsync is
 * never retried (after a failed fsync Linux may drop the dirty pages and a
 * retry would wrongly report success).  Nothing is ever refunded.
 *
 * Request ids k must be strictly increasing per ledger; a repeated k is
 * refused (DP_ESTATE) so the same query never gets fresh noise, and
 * dp_ledger_lookup() tells whether k was already answered.
 *
 * A dp_ledger is not thread-safe; use it from one thread.  While open, the
 * file is held with an exclusive flock(2), so a second process (or a second
 * open in this process) on the same file fails with DP_ESTATE.
 *
 * Every function below requires a non-NULL ledger handle and non-NULL
 * output pointers unless it says "may be NULL"; a NULL there is a caller bug
 * (DP_REQUIRE, fatal), not an error code.  Every fsync/fdatasync goes
 * through dp_file_sync (file.h), so a test can make them fail. */
#ifndef DP_LEDGER_H
#define DP_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/core/nano.h"
#include "common/core/zcdp.h"

typedef struct dp_ledger dp_ledger;

/* Longest identity string (bytes, excluding the terminating NUL). */
#define DP_LEDGER_IDENTITY_MAX 127

/* Sizes of the on-disk structures (format versions 1 and 2). */
#define DP_LEDGER_HEADER_SIZE 256
#define DP_LEDGER_RECORD_SIZE 64

/* The unit of a ledger's caps, charges and totals (docs/ledger.md §2):
 * one for the whole file, recorded in its header.  Every amount the
 * functions below take or give (charge, reserve, cap, spent, left) is in
 * the ledger's unit; the names say "eps" for the unit of the first files. */
enum {
	DP_LEDGER_UNIT_EPS = 1,  /* nano-epsilon: Laplace answers, pure eps-DP (file version 1) */
	DP_LEDGER_UNIT_RHO = 2,  /* nano-rho: Gaussian answers, rho-zCDP (file version 2) */
};

/* Flags for dp_ledger_open(). */
enum {
	/* Allow cap_eps = INFINITY and charges of INFINITY (no noise; testing
	 * only).  Answers are still counted against the answer cap.  A ledger
	 * created with an infinite cap can only be reopened with this flag. */
	DP_LEDGER_ALLOW_INF   = 1u << 0,
	/* Accept an existing ledger whose header caps are HIGHER than the
	 * given ones; this session then enforces the given (lower) caps.  The
	 * header is not rewritten.  Raising a cap is never possible. */
	DP_LEDGER_ALLOW_LOWER = 1u << 1,
	/* Do not create a missing file (DP_ENOENT instead). */
	DP_LEDGER_NO_CREATE   = 1u << 2,
	/* Inspect only: O_RDONLY, no lock, no creation, a torn tail is reported
	 * (dp_ledger_torn_bytes) but not removed; cap_eps, cap_answers and
	 * identity are ignored and taken from the header; dp_ledger_charge()
	 * returns DP_ESTATE. */
	DP_LEDGER_READONLY    = 1u << 3,
	/* No log line from the open (the torn-tail warning, "opened"): for a
	 * caller that verifies many files before its own first line and
	 * reports what matters itself (ledgerset.h). */
	DP_LEDGER_QUIET       = 1u << 4,
};

/* One answer as recorded in the ledger. */
typedef struct dp_ledger_entry {
	uint32_t flags;        /* 0, or the reserve-ahead bits (docs/ledger.md §9):
				  1 = the charge includes a share reserved for the
				  next answer, 2 = this answer was covered by the
				  previous record's reservation */
	uint64_t seq;          /* 1-based position in the ledger */
	uint64_t k;            /* the request id that was answered */
	uint64_t charge_nano;  /* this answer's charge (DP_NANO_INF if infinite) */
	uint64_t total_nano;   /* spent after this answer (DP_NANO_INF if infinite) */
	uint64_t count;        /* answers that may have been released after this
				  record: seq, plus reservations (held or lost) */
	uint64_t time_ns;      /* wall clock at charge time, ns since 1970 (informational) */
} dp_ledger_entry;

/* Open the ledger at `path`, creating it if it does not exist.
 *
 * cap_eps: the owner's total epsilon, > 0 and finite (INFINITY only with
 *   DP_LEDGER_ALLOW_INF); rounded down to nano-epsilon, must be >= 1 nano.
 * cap_answers: the owner's answer cap K, >= 1.
 * identity: owner/job identity (e.g. "owner=alice job=loans-2026" or a hex
 *   hash), at most DP_LEDGER_IDENTITY_MAX bytes, no NUL; NULL means "".
 *
 * Creation is atomic (dp_file_create_atomic): the header is written to a
 * temporary file in the same directory, fsync'ed, hard-linked to `path`
 * (which fails if `path` appeared meanwhile, like O_CREAT|O_EXCL) and the
 * directory is fsync'ed; a file at `path` therefore always has a complete
 * header.  The file's mode is 0600.
 *
 * An existing file is verified completely: header CRC and fields, then every
 * record's CRC, magic, consecutive seq, strictly increasing k, count and
 * total (each total = previous total + charge), all within the header caps.
 * A torn final record (a partial record at the end, or a bad final record
 * when the length is a whole number of records) is removed with ftruncate,
 * logged as a warning and reported by dp_ledger_torn_bytes(); no answer can
 * have been sent for it (docs/ledger.md).  The file is then fsync'ed.
 *
 * The header's caps and identity must equal the given ones (with
 * DP_LEDGER_ALLOW_LOWER the given caps may be lower).
 *
 * On success *out owns the open ledger (free with dp_ledger_close).
 * path and out must not be NULL.
 * Errors: DP_EINVAL (empty path, unknown flags, bad cap or identity; caps or
 * identity differ from the header;
 * infinite ledger without DP_LEDGER_ALLOW_INF), DP_ENOENT (missing, with
 * NO_CREATE or READONLY), DP_ECORRUPT (not a ledger, bad header, file
 * shorter than the header, damaged or inconsistent record other than a torn
 * final one), DP_ESTATE (locked by another open ledger), DP_EIO (I/O or sync
 * failure), DP_ENOMEM.  *out is untouched on failure. */
int dp_ledger_open(const char *path, double cap_eps, uint64_t cap_answers,
		   const char *identity, unsigned flags, dp_ledger **out);

/* dp_ledger_open for a Gaussian job's ledger (docs/ledger.md §3, unit
 * nano-rho): cap_rho is the job's rho cap (rounded down to nano-rho, as
 * cap_eps; INFINITY only with DP_LEDGER_ALLOW_INF), every later charge is
 * a rho (rounded up), and the header also records the job's delta (in
 * (0, 1)) and the sampler's slack per answer, slack_eps >= 0 and finite
 * (rounded up to nano-epsilon).  A new file is written at file version 2,
 * which builds from before units refuse as an unsupported version.
 * Reopening needs the same unit, delta and slack (the rho cap as cap_eps
 * in dp_ledger_open, lower with DP_LEDGER_ALLOW_LOWER); a Laplace ledger
 * opened here, or a Gaussian one by dp_ledger_open, is DP_EINVAL.  With
 * DP_LEDGER_READONLY every argument is taken from the header, as for
 * dp_ledger_open, which then opens either unit.  Errors: those of
 * dp_ledger_open, and DP_EINVAL for a bad delta or slack. */
int dp_ledger_open_gauss(const char *path, double cap_rho, double delta, double slack_eps,
			 uint64_t cap_answers, const char *identity, unsigned flags,
			 dp_ledger **out);

/* Close the file and free l.  Every record was already synced by
 * dp_ledger_charge, so nothing is lost.  NULL is ignored. */
void dp_ledger_close(dp_ledger *l);

/* Would dp_ledger_charge(l, k, charge_eps) be accepted?  Writes nothing.
 * Call it before computing or sampling anything for request k.
 * 0 if it would; otherwise the error dp_ledger_charge would return before
 * writing: DP_EINVAL, DP_ERANGE, DP_ESTATE (repeat or non-increasing k,
 * read-only ledger), DP_EBUDGET, DP_EIO (failed state). */
int dp_ledger_check(const dp_ledger *l, uint64_t k, double charge_eps);

/* Charge `charge_eps` for answering request k and make it durable.
 *
 * charge_eps: > 0 and finite (INFINITY only with DP_LEDGER_ALLOW_INF),
 *   rounded up to the next nano-epsilon.
 * k: strictly greater than every k already in the ledger.
 *
 * A reservation held (dp_ledger_charge_ahead) covers the answer: it is
 * recorded without a new charge, once the reservation is durable.
 *
 * Appends one 64-byte record with a single write() to the O_APPEND file and
 * fdatasync()s it; returns 0 only after the sync succeeded, and only then may
 * the answer be sent.  out may be NULL; otherwise it receives the new entry.
 * Errors (nothing written unless stated):
 *   DP_EINVAL   charge not > 0, NaN, or infinite without ALLOW_INF
 *   DP_ERANGE   charge above DP_NANO_MAX nano-epsilon
 *   DP_ESTATE   k already answered (a repeat: resend nothing, refuse) or
 *               k not above the last k; or the ledger is read-only
 *   DP_EBUDGET  count + 1 > answer cap, or total + charge > cap
 *   DP_ENOMEM
 *   DP_EIO      the ledger is in the failed state, or this write/sync failed:
 *               the record may have reached the file and counts as spent
 *               (the counters below include it); the ledger is now failed
 *               for good and the caller must stop answering.  The detail
 *               names the file, k and the errno; nothing is logged here,
 *               the caller's one line says it. */
int dp_ledger_charge(dp_ledger *l, uint64_t k, double charge_eps, dp_ledger_entry *out);

/* Reserve-ahead (docs/ledger.md §9): no fdatasync between a query and its
 * answer, yet the durable total always covers every answer released.
 *
 * dp_ledger_charge_ahead: checks as dp_ledger_charge.  If the ledger holds
 * a reservation of at least the charge (one this process made: a share
 * found at open counts as used), the answer is *covered: nothing is
 * written, the reservation is used, and the answer may leave at once (its
 * share is durable); its record is written by the next dp_ledger_settle.
 * Otherwise the answer is charged and synced as by dp_ledger_charge.
 *
 * dp_ledger_settle, after the answer was sent: writes the covered
 * answer's record, or (after an uncovered one) a reservation alone, and
 * with reserve_eps > 0, when the caps allow, one share of reserve_eps for
 * the next answer; then syncs.  0 when there is nothing to do.
 *
 * A crash anywhere in that cycle loses at most one share: the reservation
 * (used by an answer that never left, or never used). */
int dp_ledger_charge_ahead(dp_ledger *l, uint64_t k, double charge_eps, bool *covered);
int dp_ledger_settle(dp_ledger *l, double reserve_eps);
/* dp_ledger_settle in two halves, for a caller that syncs on another
 * thread: dp_ledger_settle_write writes what dp_ledger_settle would,
 * without the sync, and sets *seq to the number of records written so far
 * (0: nothing was written, nothing to sync).  The caller then runs
 * fdatasync on the file at dp_ledger_path (any descriptor of it: the sync
 * is of the file) and reports the outcome, err 0 or an errno, with
 * dp_ledger_synced(l, seq, err) on the ledger's own thread.  Until then the
 * reservation is not durable, and dp_ledger_charge_ahead syncs it itself
 * before covering an answer with it, so the guarantee of §9 does not
 * depend on when, or whether, the report comes.  A failed sync puts the
 * ledger in the failed state (DP_EIO). */
int dp_ledger_settle_write(dp_ledger *l, double reserve_eps, uint64_t *seq);
int dp_ledger_synced(dp_ledger *l, uint64_t seq, int err);
/* The file's path (for a descriptor of one's own). */
const char *dp_ledger_path(const dp_ledger *l);
/* The share held for the next answer, in nano-epsilon: one this process
 * reserved (0: none). */
uint64_t dp_ledger_reserved_nano(const dp_ledger *l);

/* Was request k already answered?  0 and *out filled (out may be NULL) when
 * it was; DP_ENOENT when it was not; DP_EIO in the failed state or on a read
 * error; DP_ECORRUPT if the stored record no longer verifies. */
int dp_ledger_lookup(const dp_ledger *l, uint64_t k, dp_ledger_entry *out);

/* Accessors (l must be open).  Amounts are in nano-epsilon; the double
 * versions divide by 1e9 and return INFINITY for DP_NANO_INF.  Caps are
 * the ones this session enforces.  After a failed charge (DP_EIO) spent and
 * answers include the failed charge and left is 0. */
uint64_t dp_ledger_spent_nano(const dp_ledger *l);
double dp_ledger_spent(const dp_ledger *l);
uint64_t dp_ledger_left_nano(const dp_ledger *l);
double dp_ledger_left(const dp_ledger *l);
uint64_t dp_ledger_cap_nano(const dp_ledger *l);
double dp_ledger_cap(const dp_ledger *l);
uint64_t dp_ledger_answers(const dp_ledger *l);
uint64_t dp_ledger_answers_cap(const dp_ledger *l);
/* k of the last answer; 0 and *k untouched if there is none yet (returns
 * DP_ENOENT then). */
int dp_ledger_last_k(const dp_ledger *l, uint64_t *k);
/* Identity string from the header; valid while l is open. */
const char *dp_ledger_identity(const dp_ledger *l);
/* Bytes of a torn final record dropped (or, read-only, found) at open; 0 if
 * the file ended cleanly. */
size_t dp_ledger_torn_bytes(const dp_ledger *l);
/* The ledger's unit, DP_LEDGER_UNIT_EPS or DP_LEDGER_UNIT_RHO. */
unsigned dp_ledger_unit(const dp_ledger *l);
/* A nano-rho ledger's delta and sampler slack per answer (nano-epsilon);
 * 0 for a nano-epsilon one. */
double dp_ledger_delta(const dp_ledger *l);
uint64_t dp_ledger_slack_nano(const dp_ledger *l);
/* A nano-epsilon ledger's charges as zCDP (docs/ledger.md §8): the sum
 * over its records of charge^2 / 2, each rounded up to nano-rho (a pure
 * eps-DP answer is eps^2/2-zCDP), saturating at DP_NANO_INF; 0 for a
 * nano-rho ledger.  A record that also reserves a share counts as one
 * answer of its whole charge, which is never less. */
uint64_t dp_ledger_rho_pure_nano(const dp_ledger *l);
/* The ledger's spending for the lifetime bound (docs/ledger.md §8, the
 * fields of zcdp.h): a nano-epsilon ledger {spent, dp_ledger_rho_pure_nano,
 * 0, 0}; a nano-rho one {0, 0, spent, slack per answer x answers}, the
 * answers counting every share that may have left (saturating). */
void dp_ledger_totals(const dp_ledger *l, dp_zcdp_totals *t);
/* 1 if a write or sync failed (the ledger refuses everything), else 0. */
int dp_ledger_failed(const dp_ledger *l);

#endif
