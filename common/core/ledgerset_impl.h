/* SPDX-License-Identifier: Apache-2.0 */
/* Internals of the ledger set (ledgerset.h), shared by its files and its
 * unit test only: ledgerset.c opens the directory and reads its job files,
 * ledgerset_format.c keeps the directory's format version and migrates an
 * older directory one step at a time (docs/ledger.md §10). */
#ifndef DP_LEDGERSET_IMPL_H
#define DP_LEDGERSET_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/core/ledgerset.h"

/* The file in the directory that records its format version. */
#define DP__LEDGERSET_FORMAT_FILE "format"

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
	int (*apply)(const char *dir);    /* NULL: the commit is the whole step */
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
 * commit at a time, each logged unless `quiet` (a directory this process
 * has just made holds nothing to migrate); *version follows every commit,
 * so on failure it says where the directory stands.  The caller holds the
 * directory's lock.  Errors: those of a step or of its commit;
 * DP_EFORMAT when no step starts at the current version (a bug in the
 * table). */
int dp__ledgerset_migrate(const char *dir, const struct dp__ledgerset_step *chain, size_t n,
			  unsigned target, bool quiet, unsigned *version);

/* dp__ledgerset_migrate with this build's steps, to DP_LEDGERSET_FORMAT. */
int dp__ledgerset_upgrade(const char *dir, bool quiet, unsigned *version);

#endif
