/* SPDX-License-Identifier: Apache-2.0 */
#include "common/core/file.h"
#include "common/core/error.h"
#include "common/core/mem.h"

#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int (*sync_hook)(int fd);

void dp_file_set_sync_hook(int (*fn)(int fd))
{
	sync_hook = fn;
}

int dp_file_sync(int fd, int data_only)
{
	int r;

	if (sync_hook != NULL)
		r = sync_hook(fd);
	else if (data_only)
		r = fdatasync(fd);
	else
		r = fsync(fd);
	return r == 0 ? 0 : DP_EIO;
}

int dp_file_sync_dir(const char *path)
{
	char *copy;
	int fd, rc = 0;

	DP_REQUIRE(path != NULL);
	copy = strdup(path);
	if (copy == NULL)
		return DP_ENOMEM;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || dp_file_sync(fd, 0) != 0)
		rc = dp_error_set(DP_EIO, "%s: cannot sync directory: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(copy);
	return rc;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* The process umask, read without changing it: umask(2) can only set it,
 * which would race with another thread creating a file.  Linux reports it
 * in /proc/self/status (since 4.7); unknown, it is taken as 0. */
static mode_t process_umask(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned m = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Umask: %o", &m) == 1)
			break;
	fclose(f);
	return (mode_t)(m & 0777);
}

/* The common first half of both atomic writes: a synced temporary file
 * next to `path` holding the data, whose name is returned in *tmp (the
 * caller renames or links it, then unlinks and frees the name).  A missing
 * directory gives `missing_dir`. */
static int write_temp(const char *path, const void *data, size_t len, int mode,
		      int missing_dir, char **tmp)
{
	size_t plen = strlen(path);
	char *name = malloc(plen + 16);
	int fd, rc;

	if (name == NULL)
		return DP_ENOMEM;
	snprintf(name, plen + 16, "%s.tmp.XXXXXX", path);
	fd = mkostemp(name, O_CLOEXEC);
	if (fd < 0) {
		rc = dp_error_set(errno == ENOENT ? missing_dir : DP_EIO,
				  "%s: cannot create temporary file: %s", path, strerror(errno));
		free(name);
		return rc;
	}
	/* mkostemp made it 0600; the mode asked for, less the umask, as
	 * open(2) would give a new file, but never less than the owner's own
	 * bits asked for: a daemon reads its state back whatever the umask. */
	if (fchmod(fd, (mode_t)mode & ~(process_umask() & 077)) != 0 ||
	    write_all(fd, data, len) != 0 ||
	    dp_file_sync(fd, 0) != 0) {
		rc = dp_error_set(DP_EIO, "%s: cannot write: %s", path, strerror(errno));
		close(fd);
		goto fail;
	}
	if (close(fd) != 0) {
		rc = dp_error_set(DP_EIO, "%s: cannot write: %s", path, strerror(errno));
		goto fail;
	}
	*tmp = name;
	return 0;
fail:
	unlink(name);
	free(name);
	return rc;
}

int dp_file_write_atomic(const char *path, const void *data, size_t len, int mode)
{
	char *tmp;
	int rc;

	DP_REQUIRE(path != NULL && (data != NULL || len == 0));
	rc = write_temp(path, data, len, mode, DP_EIO, &tmp);
	if (rc != 0)
		return rc;
	if (rename(tmp, path) != 0) {
		rc = dp_error_set(DP_EIO, "%s: cannot write: %s", path, strerror(errno));
		unlink(tmp);
		free(tmp);
		return rc;
	}
	free(tmp);
	return dp_file_sync_dir(path);
}

int dp_file_create_atomic(const char *path, const void *data, size_t len, int mode)
{
	char *tmp;
	int rc;

	DP_REQUIRE(path != NULL && (data != NULL || len == 0));
	rc = write_temp(path, data, len, mode, DP_ENOENT, &tmp);
	if (rc != 0)
		return rc;
	/* link() refuses an existing name: O_EXCL, with the content already
	 * complete and durable. */
	if (link(tmp, path) != 0) {
		if (errno == EEXIST)
			rc = dp_error_set(DP_EEXIST, "%s: already exists", path);
		else
			rc = dp_error_set(DP_EIO, "%s: cannot create: %s", path, strerror(errno));
	}
	unlink(tmp);
	free(tmp);
	if (rc != 0)
		return rc;
	return dp_file_sync_dir(path);
}

int dp_file_read_all(const char *path, size_t max, char **out, size_t *len)
{
	FILE *f;
	char *buf = NULL;
	size_t cap = 0, n = 0, limit;
	int rc = 0;

	DP_REQUIRE(path != NULL && out != NULL);
	f = fopen(path, "rb");
	if (f == NULL)
		return dp_error_set(errno == ENOENT ? DP_ENOENT : DP_EIO, "%s: cannot open: %s",
				    path, strerror(errno));
	/* Read up to one byte more than max: getting it means "too large". */
	if (max > SIZE_MAX - 2)
		max = SIZE_MAX - 2;
	limit = max + 1;
	for (;;) {
		size_t room, got;

		/* Room for at least one more byte and the final NUL. */
		rc = dp_mem_reserve(&buf, &cap, n + 2, 1, 4096);
		if (rc != 0)
			break;
		room = cap - n - 1;
		if (room > limit - n)
			room = limit - n;
		got = fread(buf + n, 1, room, f);
		n += got;
		if (got == 0)
			break;
	}
	if (rc == 0 && ferror(f))
		rc = dp_error_set(DP_EIO, "%s: read error", path);
	if (rc == 0 && n > max)
		rc = dp_error_set(DP_ERANGE, "%s: larger than %zu bytes", path, max);
	fclose(f);
	if (rc != 0) {
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

int dp_file_mkdir_p(const char *dir, int private_)
{
	mode_t mode = private_ ? 0700 : 0755;
	char *copy;
	int rc = 0;

	DP_REQUIRE(dir != NULL);
	if (*dir == '\0')
		return dp_error_set(DP_EINVAL, "cannot create a directory with an empty name");
	copy = strdup(dir);
	if (copy == NULL)
		return DP_ENOMEM;
	for (char *s = copy + 1;; s++) {
		char c = *s;

		if (c == '/' || c == '\0') {
			*s = '\0';
			if (mkdir(copy, mode) == 0) {
				/* A new directory is an entry of its parent: durable
				 * only once the parent is synced, or a power cut can
				 * take it, and whatever is synced inside it, away. */
				rc = dp_file_sync_dir(copy);
				if (rc < 0)
					break;
			} else {
				int e = errno;
				struct stat st;

				/* EEXIST is fine only for a directory. */
				if (e != EEXIST || stat(copy, &st) != 0 || !S_ISDIR(st.st_mode)) {
					rc = dp_error_set(DP_EIO, "%s: cannot create directory: %s",
							  copy, e == EEXIST ? "not a directory"
									    : strerror(e));
					break;
				}
			}
			*s = c;
			if (c == '\0')
				break;
		}
	}
	free(copy);
	return rc;
}

int dp_file_open_private(const char *path, int flags, int *fd)
{
	struct stat st;
	int f, e, rc;

	DP_REQUIRE(path != NULL && fd != NULL);
	f = open(path, flags | O_CLOEXEC, DP_FILE_MODE_PRIVATE);
	if (f < 0) {
		e = errno;
		rc = dp_error_set(e == ENOENT ? DP_ENOENT : DP_EIO, "%s: %s", path, strerror(e));
		errno = e;
		return rc;
	}
	/* A umask that takes the owner's bits, or a file an older version
	 * made 0644.  Only a regular file: a trace sent to /dev/null must not
	 * change /dev/null. */
	if (fstat(f, &st) != 0 ||
	    (S_ISREG(st.st_mode) && (st.st_mode & 07777) != DP_FILE_MODE_PRIVATE &&
	     fchmod(f, DP_FILE_MODE_PRIVATE) != 0)) {
		e = errno;
		close(f);
		rc = dp_error_set(DP_EIO, "%s: cannot make it private (mode 0600): %s", path,
				  strerror(e));
		errno = e;
		return rc;
	}
	*fd = f;
	return 0;
}

int dp_file_fopen_private(const char *path, const char *how, FILE **out)
{
	int flags, fd, rc;
	FILE *f;

	DP_REQUIRE(path != NULL && how != NULL && out != NULL);
	DP_REQUIRE(strcmp(how, "w") == 0 || strcmp(how, "a") == 0 || strcmp(how, "r+") == 0);
	if (how[0] == 'w')
		flags = O_WRONLY | O_CREAT | O_TRUNC;
	else if (how[0] == 'a')
		flags = O_WRONLY | O_CREAT | O_APPEND;
	else
		flags = O_RDWR;
	rc = dp_file_open_private(path, flags, &fd);
	if (rc != 0)
		return rc;
	f = fdopen(fd, how);
	if (f == NULL) {
		close(fd);
		return dp_error_set(DP_ENOMEM, "%s: out of memory", path);
	}
	*out = f;
	return 0;
}

/* The refusal of dp_file_check_trusted: `entry` is the path itself or,
 * when above, a directory above it. */
static int untrusted(const char *what, const char *path, const char *entry, bool above,
		     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int untrusted(const char *what, const char *path, const char *entry, bool above,
		     const char *fmt, ...)
{
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (above)
		return dp_error_set(DP_EINVAL, "%s %s: the directory %s above it %s, so another user "
				    "could replace it; refusing to use it (docs/ownerd.md \"File "
				    "permissions\")", what, path, entry, why);
	if (strcmp(entry, path) == 0)
		return dp_error_set(DP_EINVAL, "%s %s: %s, so another user could change or replace "
				    "it; refusing to use it (docs/ownerd.md \"File permissions\")",
				    what, path, why);
	return dp_error_set(DP_EINVAL, "%s %s: %s, where it leads, %s, so another user could "
			    "change or replace it; refusing to use it (docs/ownerd.md \"File "
			    "permissions\")", what, path, entry, why);
}

/* realpath() of `path`, or while it cannot be resolved (it does not exist
 * yet, or is not reachable: what opens it says why) of the nearest
 * directory above it that can (*above is then true).  Caller frees. */
static int resolve(const char *what, const char *path, char **out, bool *above)
{
	char *copy = strdup(path), *dir = copy, *real = NULL, *up;
	int e;

	if (copy == NULL)
		return dp_error_set(DP_ENOMEM, "%s: out of memory", what);
	*above = false;
	for (;;) {
		real = realpath(dir, NULL);
		e = errno;
		if (real != NULL || e == ENOMEM || strcmp(dir, ".") == 0 || strcmp(dir, "/") == 0)
			break;
		/* dirname() may return a static string: copy it back. */
		up = dirname(dir);
		memmove(copy, up, strlen(up) + 1);
		dir = copy;
		*above = true;
	}
	free(copy);
	if (real == NULL)
		return e == ENOMEM ? dp_error_set(DP_ENOMEM, "%s: out of memory", what)
				   : dp_error_set(DP_EIO, "%s %s: cannot resolve it: %s", what, path,
						  strerror(e));
	*out = real;
	return 0;
}

int dp_file_check_trusted(const char *what, const char *path)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	bool above = false;
	char *cur = NULL;
	int rc;

	DP_REQUIRE(what != NULL && path != NULL);
	if (*path == '\0')
		return dp_error_set(DP_EINVAL, "%s: empty path", what);
	rc = resolve(what, path, &cur, &above);
	if (rc != 0)
		return rc;
	for (;;) {
		struct stat st;
		mode_t m;
		bool sticky;
		char *slash;

		if (stat(cur, &st) != 0) {
			rc = dp_error_set(DP_EIO, "%s %s: cannot examine %s: %s", what, path, cur,
					  strerror(errno));
			break;
		}
		m = st.st_mode & 07777;
		/* Nobody can rename or remove another's entry of a sticky
		 * directory; the path itself gets no such pass. */
		sticky = above && S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX);
		if (st.st_uid != 0 && st.st_uid != uid)
			rc = untrusted(what, path, cur, above, "is owned by uid %u, neither this user "
				       "(uid %u) nor root", (unsigned)st.st_uid, (unsigned)uid);
		else if ((m & S_IWOTH) && !sticky)
			rc = untrusted(what, path, cur, above, "is writable by every user (mode %04o)",
				       (unsigned)m);
		else if ((m & S_IWGRP) && st.st_gid != gid && !sticky)
			rc = untrusted(what, path, cur, above, "is writable by group %u, which is not "
				       "this process's group %u (mode %04o)", (unsigned)st.st_gid,
				       (unsigned)gid, (unsigned)m);
		if (rc != 0 || strcmp(cur, "/") == 0)
			break;
		/* realpath() gives an absolute path without a trailing '/'. */
		slash = strrchr(cur, '/');
		if (slash == cur)
			slash[1] = '\0';
		else
			*slash = '\0';
		above = true;
	}
	free(cur);
	return rc;
}
