/* Crash-safe whole-file writes and bounded whole-file reads. */
#ifndef DP_FILE_H
#define DP_FILE_H

#include <stddef.h>

/* Write `len` bytes to `path` atomically: a temporary file in the same
 * directory, fsync, rename over `path`, fsync of the directory.  After a
 * crash `path` holds either the old or the new content, never a mix.
 * Errors: DP_EIO (detail names the step and errno), DP_ENOMEM. */
int dp_file_write_atomic(const char *path, const void *data, size_t len, int mode);

/* Read a whole file of at most `max` bytes into a NUL-terminated malloc'ed
 * buffer (*out; caller frees), length in *len (may be NULL).
 * Errors: DP_ENOENT, DP_EIO, DP_ERANGE (larger than max), DP_ENOMEM. */
int dp_file_read_all(const char *path, size_t max, char **out, size_t *len);

/* fsync the directory that contains `path` (after create/rename). */
int dp_file_sync_dir(const char *path);

/* mkdir -p with mode 0755 (0700 for private=1). */
int dp_file_mkdir_p(const char *dir, int private_);

#endif
