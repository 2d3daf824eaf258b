/* SPDX-License-Identifier: Apache-2.0 */
/* Whole files, crash-safe: atomic writes and exclusive creation through a
 * temporary file, bounded whole-file reads, directory creation, and the one
 * path every fsync/fdatasync of the core library takes (the ledger's too),
 * so that a test can make the disk fail. */
#ifndef DP_FILE_H
#define DP_FILE_H

#include <stddef.h>

/* Write `len` bytes to `path` atomically: a temporary file in the same
 * directory (path.tmp.XXXXXX) with `mode` less the process umask (as for
 * open(2); private files pass 0600, never more), fsync, rename over `path`, fsync
 * of the directory.  After a crash `path` holds either the old or the new
 * content, never a mix.  path non-NULL; data may be NULL when len is 0.
 * Errors: DP_EIO (detail names the step and errno; also when the directory
 * does not exist), DP_ENOMEM. */
int dp_file_write_atomic(const char *path, const void *data, size_t len, int mode);

/* The same steps, but the last one is link(2) instead of rename(2): an
 * existing `path` is never replaced, so concurrent creators cannot clobber
 * each other and a file at `path` is always complete.
 * Errors: DP_EEXIST (path exists; nothing changed), DP_ENOENT (the directory
 * does not exist), DP_EIO, DP_ENOMEM. */
int dp_file_create_atomic(const char *path, const void *data, size_t len, int mode);

/* Read a whole file of at most `max` bytes into a NUL-terminated malloc'ed
 * buffer (*out; caller frees), length in *len (may be NULL).  The content
 * may itself hold NUL bytes: compare strlen(*out) with *len to refuse them.
 * Errors: DP_ENOENT, DP_EIO, DP_ERANGE (larger than max), DP_ENOMEM.
 * *out and *len untouched on failure. */
int dp_file_read_all(const char *path, size_t max, char **out, size_t *len);

/* fsync the directory that contains `path` (after create/rename).
 * Errors: DP_EIO (cannot open or sync it), DP_ENOMEM. */
int dp_file_sync_dir(const char *path);

/* mkdir -p with mode 0755 (0700 for private_=1); existing directories are
 * kept as they are.  Each directory it creates is synced into its parent
 * (dp_file_sync_dir) before the next: what is later synced inside it
 * survives a power cut.  Errors: DP_EINVAL (empty name), DP_EIO (detail
 * names the component), DP_ENOMEM. */
int dp_file_mkdir_p(const char *dir, int private_);

/* fsync(fd), or fdatasync(fd) when data_only.  Callers never retry a failed
 * sync: Linux may drop the dirty pages after reporting the error, and a
 * second call would then report success.  0, or DP_EIO with errno set for
 * the caller's message (no detail is recorded: the caller knows what it was
 * syncing). */
int dp_file_sync(int fd, int data_only);

/* TEST ONLY: make every dp_file_sync (hence the atomic writes, the directory
 * syncs, the ledger's syncs and learnerd's trace) call fn(fd) instead,
 * which returns 0 or -1 with errno set.  NULL restores the real calls.
 * Process-wide, not thread-safe; never used by the daemons. */
void dp_file_set_sync_hook(int (*fn)(int fd));

#endif
