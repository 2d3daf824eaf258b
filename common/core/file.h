/* SPDX-License-Identifier: Apache-2.0 */
/* Whole files, crash-safe: atomic writes and exclusive creation through a
 * temporary file, bounded whole-file reads, directory creation, and the one
 * path every fsync/fdatasync of the core library takes (the ledger's too),
 * so that a test can make the disk fail.  Also the modes of the files the
 * daemons write, and the check of the files and directories they trust
 * (docs/ownerd.md "File permissions"). */
#ifndef DP_FILE_H
#define DP_FILE_H

#include <stddef.h>
#include <stdio.h>

/* The two modes of files written by this project (docs/ownerd.md "File
 * permissions"):
 * - DP_FILE_MODE_PRIVATE: a daemon's state and records (learnerd's lock,
 *   checkpoint, trace, rounds and model; ownerd's ledgers, lock, model and
 *   peer trace) and an owner's rows: 0600 whatever the umask, so that no
 *   other local user can read them, or hold a lock on them with flock(2);
 * - DP_FILE_MODE_SHARED: what is meant to be read by other users (the
 *   daemons' port files, the outputs of the dpasync subcommands): 0644 less
 *   the umask. */
#define DP_FILE_MODE_PRIVATE 0600
#define DP_FILE_MODE_SHARED  0644

/* Write `len` bytes to `path` atomically: a temporary file in the same
 * directory (path.tmp.XXXXXX) with `mode` less the process umask, as for
 * open(2), except that the umask never takes the owner's own bits (so
 * DP_FILE_MODE_PRIVATE is 0600 under any umask), fsync, rename over
 * `path`, fsync of the directory.  After a crash `path` holds either the old or the new
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

/* Open `path` as a daemon's private state file: created with mode
 * DP_FILE_MODE_PRIVATE whatever the umask, and an existing file of
 * another mode (one an older version created 0644) made
 * DP_FILE_MODE_PRIVATE.  flags: those of open(2) (O_RDONLY, O_RDWR,
 * O_WRONLY, O_CREAT, O_TRUNC, O_APPEND); O_CLOEXEC is added.  *fd is the
 * descriptor, which the caller closes.
 * Errors: DP_ENOENT (no such file and no O_CREAT; the directory missing),
 * DP_EIO (cannot open it or set its mode; detail names the path and the
 * errno); errno is left as the failing call set it.  *fd untouched on
 * failure. */
int dp_file_open_private(const char *path, int flags, int *fd);

/* The same as a stdio stream; `how` is "w" (create or truncate), "a"
 * (create, append) or "r+" (an existing file, read and write).  The caller
 * fcloses *out.  Errors: those of dp_file_open_private, DP_ENOMEM.
 * *out untouched on failure. */
int dp_file_fopen_private(const char *path, const char *how, FILE **out);

/* sshd's StrictModes for a file or directory a daemon trusts: its key, its
 * data, its ledger or output directory (docs/ownerd.md "File
 * permissions").  `path`, resolved through symbolic links (or, while it
 * cannot be resolved, e.g. does not exist yet, the nearest directory above
 * it that can: what opens it later says what is wrong), and every
 * directory above it up to / must each
 *   - be owned by root or by the process's effective user, and
 *   - be writable by nobody else: not by others, and by its group only
 *     when that group is the process's effective group (Kubernetes'
 *     fsGroup, systemd's Group=).
 * A directory above `path` that has the sticky bit (/tmp) may be writable
 * by others and by any group: nobody else can rename or remove what it
 * holds.  `what` names the setting in the message (e.g. "--ledger").
 * Errors: DP_EINVAL (one line: the setting, the path that is wrong, what is
 * wrong with it and its mode or owner; also an empty path), DP_EIO (a
 * resolved directory that cannot be examined), DP_ENOMEM. */
int dp_file_check_trusted(const char *what, const char *path);

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
