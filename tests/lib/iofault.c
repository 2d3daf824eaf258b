/* SPDX-License-Identifier: Apache-2.0 */
/* Test-only LD_PRELOAD shim: injects I/O faults into an unmodified learnerd,
 * ownerd or dpasync (docs/reliability.md).  Never installed.
 *
 * The calls it counts, one running index over all of them, on regular
 * files only (sockets, pipes and the terminal are never counted):
 *   write pwrite fdatasync fsync rename link ftruncate open fflush
 * `open` counts opens for writing (O_WRONLY, O_RDWR or O_CREAT) through
 * open/open64/openat; `fflush` counts flushes of a stdio stream on a
 * regular file other than stdout/stderr (glibc's own stdio writes do not go
 * through the interposable write(), so a stream is seen at its flush).  A
 * rename or link counts when its source is a regular file.
 *
 * Environment:
 *   DP_FAULT_CALLS   comma-separated kinds to count (default: all of them)
 *   DP_FAULT_AT      1-based index of the counted call to hit (unset or 0:
 *                    only count)
 *   DP_FAULT_ERRNO   EIO (default) or ENOSPC: the error the call fails with
 *   DP_FAULT_STICKY  1: every counted call from DP_FAULT_AT on fails too
 *                    (a disk that stays broken or full)
 *   DP_FAULT_ACTION  fail (default); kill-before: SIGKILL the process
 *                    instead of making the call; kill-after: make the call,
 *                    then SIGKILL (a crash right after a write or a sync);
 *                    delay: sleep DP_FAULT_DELAY_MS (default 2000), then
 *                    make the call (a slow disk)
 *   DP_FAULT_LOG     append "INDEX KIND" for every counted call to this
 *                    file (written with raw syscalls, so never counted)
 *   DP_POWER_*       record what the syncs made durable, for a power cut
 *                    at the kill (powercut.c)
 * The older OWN_TEST_FAIL_FDATASYNC=N still means DP_FAULT_CALLS=fdatasync
 * DP_FAULT_AT=N DP_FAULT_STICKY=1. */
/* Both the plain and the 64-bit names are defined below (the same on
 * 64-bit Linux): keep the headers from renaming one into the other. */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "powercut.h"

enum { ACT_FAIL, ACT_KILL_BEFORE, ACT_KILL_AFTER, ACT_DELAY };

static int inited, sticky, action, fault_errno = EIO, log_fd = -1;
static long delay_ms = 2000;
static unsigned long at, counted;
static __thread unsigned long mine;   /* this thread's last counted call */
static char kinds[256] = "all";

static void init(void)
{
	const char *e;

	if (inited)
		return;
	inited = 1;
	e = getenv("DP_FAULT_CALLS");
	if (e != NULL && *e)
		snprintf(kinds, sizeof(kinds), "%s", e);
	e = getenv("DP_FAULT_AT");
	if (e != NULL)
		at = strtoul(e, NULL, 10);
	e = getenv("DP_FAULT_STICKY");
	if (e != NULL)
		sticky = strcmp(e, "1") == 0;
	e = getenv("DP_FAULT_ERRNO");
	if (e != NULL && strcmp(e, "ENOSPC") == 0)
		fault_errno = ENOSPC;
	e = getenv("DP_FAULT_ACTION");
	if (e != NULL && strcmp(e, "kill-before") == 0)
		action = ACT_KILL_BEFORE;
	else if (e != NULL && strcmp(e, "kill-after") == 0)
		action = ACT_KILL_AFTER;
	else if (e != NULL && strcmp(e, "delay") == 0)
		action = ACT_DELAY;
	e = getenv("DP_FAULT_DELAY_MS");
	if (e != NULL)
		delay_ms = strtol(e, NULL, 10);
	e = getenv("DP_FAULT_LOG");
	if (e != NULL && *e)
		log_fd = (int)syscall(SYS_openat, AT_FDCWD, e,
				      O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

static int wanted(const char *kind)
{
	size_t n = strlen(kind);

	if (strcmp(kinds, "all") == 0)
		return 1;
	for (const char *p = strstr(kinds, kind); p != NULL; p = strstr(p + n, kind))
		if ((p == kinds || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return 1;
	return 0;
}

static int regular_fd(int fd)
{
	struct stat st;

	return fd >= 0 && syscall(SYS_fstat, fd, &st) == 0 && S_ISREG(st.st_mode);
}

static int regular_path(const char *path)
{
	struct stat st;

	return path != NULL && syscall(SYS_newfstatat, AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(st.st_mode);
}

/* Count one call of `kind`.  1: the caller must fail it with errno set;
 * 0: make the call (then call after() when it returns). */
static int hit(const char *kind)
{
	char line[64];
	int len, h;
	unsigned long n;

	init();
	mine = 0;
	if (!wanted(kind))
		return 0;
	/* ownerd syncs on a worker thread too (owner/settle.c). */
	n = mine = __atomic_add_fetch(&counted, 1, __ATOMIC_SEQ_CST);
	h = at != 0 && (n == at || (sticky && n > at));
	if (log_fd >= 0) {
		len = snprintf(line, sizeof(line), "%lu %s%s\n", n, kind, h ? " fault" : "");
		if (len > 0)
			(void)syscall(SYS_write, log_fd, line, (size_t)len);
	}
	if (!h)
		return 0;
	if (action == ACT_KILL_BEFORE) {
		powercut_crash();
		raise(SIGKILL);
	}
	if (action == ACT_KILL_AFTER)
		return 0;
	if (action == ACT_DELAY) {
		struct timespec ts = { delay_ms / 1000, (delay_ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		return 0;
	}
	errno = fault_errno;
	return 1;
}

/* After a call that was made: the kill-after action. */
static void after(void)
{
	if (action == ACT_KILL_AFTER && at != 0 && (mine == at || (sticky && mine > at))) {
		powercut_crash();
		raise(SIGKILL);
	}
}

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

ssize_t write(int fd, const void *buf, size_t n)
{
	ssize_t r;

	if (!regular_fd(fd) || fd <= 2)
		return syscall(SYS_write, fd, buf, n);
	if (hit("write"))
		return -1;
	r = syscall(SYS_write, fd, buf, n);
	after();
	return r;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	ssize_t r;

	if (!regular_fd(fd))
		return syscall(SYS_pwrite64, fd, buf, n, off);
	if (hit("pwrite"))
		return -1;
	r = syscall(SYS_pwrite64, fd, buf, n, off);
	after();
	return r;
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	return pwrite(fd, buf, n, off);
}

/* A sync that is counted: the fault first, then the power-cut recorder
 * around the real call (powercut.h). */
static int counted_sync(const char *kind, long nr, int fd)
{
	unsigned long token;
	int r;

	if (hit(kind))
		return -1;
	if (powercut_drop(kind, fd)) {
		after();
		return 0;
	}
	token = powercut_sync_begin(fd);
	r = (int)syscall(nr, fd);
	powercut_sync_end(token, r == 0);
	after();
	return r;
}

static int sync_call(const char *kind, long nr, int fd)
{
	if (!regular_fd(fd))
		return (int)syscall(nr, fd);
	return counted_sync(kind, nr, fd);
}

int fdatasync(int fd)
{
	return sync_call("fdatasync", SYS_fdatasync, fd);
}

int fsync(int fd)
{
	/* A directory's fsync (after a rename) is a sync of metadata the
	 * daemon relies on: counted like a file's. */
	struct stat st;

	if (fd < 0 || syscall(SYS_fstat, fd, &st) != 0 ||
	    !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
		return (int)syscall(SYS_fsync, fd);
	return counted_sync("fsync", SYS_fsync, fd);
}

int ftruncate(int fd, off_t len)
{
	int r;

	if (!regular_fd(fd))
		return (int)syscall(SYS_ftruncate, fd, len);
	if (hit("ftruncate"))
		return -1;
	r = (int)syscall(SYS_ftruncate, fd, len);
	after();
	return r;
}

int ftruncate64(int fd, off_t len)
{
	return ftruncate(fd, len);
}

int rename(const char *from, const char *to)
{
	int r;

	if (!regular_path(from))
		return (int)syscall(SYS_renameat, AT_FDCWD, from, AT_FDCWD, to);
	if (hit("rename"))
		return -1;
	r = (int)syscall(SYS_renameat, AT_FDCWD, from, AT_FDCWD, to);
	after();
	return r;
}

int link(const char *from, const char *to)
{
	int r;

	if (!regular_path(from))
		return (int)syscall(SYS_linkat, AT_FDCWD, from, AT_FDCWD, to, 0);
	if (hit("link"))
		return -1;
	r = (int)syscall(SYS_linkat, AT_FDCWD, from, AT_FDCWD, to, 0);
	after();
	return r;
}

static int open_call(int dirfd, const char *path, int flags, mode_t mode)
{
	int r;

	if (!(flags & (O_WRONLY | O_RDWR | O_CREAT)) || (flags & O_DIRECTORY))
		return (int)syscall(SYS_openat, dirfd, path, flags, mode);
	if (hit("open"))
		return -1;
	r = (int)syscall(SYS_openat, dirfd, path, flags, mode);
	after();
	return r;
}

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t m;

	va_start(ap, flags);
	m = mode_arg(flags, ap);
	va_end(ap);
	return open_call(AT_FDCWD, path, flags, m);
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t m;

	va_start(ap, flags);
	m = mode_arg(flags, ap);
	va_end(ap);
	return open_call(AT_FDCWD, path, flags, m);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t m;

	va_start(ap, flags);
	m = mode_arg(flags, ap);
	va_end(ap);
	return open_call(dirfd, path, flags, m);
}

/* A failed flush exactly as glibc has one: its write(2) fails, the
 * buffered bytes are dropped and the stream's error flag is set (a later
 * fflush then returns 0).  The stream's descriptor points at /dev/full for
 * the one call (ENOSPC; errno is then set to the chosen error). */
static int failed_flush(FILE *f, int fd, int (*real)(FILE *))
{
	int saved = (int)syscall(SYS_dup, fd);
	int full = (int)syscall(SYS_openat, AT_FDCWD, "/dev/full", O_WRONLY | O_CLOEXEC, 0);

	if (saved >= 0 && full >= 0 && syscall(SYS_dup2, full, fd) >= 0) {
		(void)real(f);
		(void)syscall(SYS_dup2, saved, fd);
	}
	if (saved >= 0)
		(void)syscall(SYS_close, saved);
	if (full >= 0)
		(void)syscall(SYS_close, full);
	errno = fault_errno;
	return EOF;
}

int fflush(FILE *f)
{
	static int (*real)(FILE *);
	int r, fd;

	if (real == NULL)
		real = NEXT(fflush);
	fd = f ? fileno(f) : -1;
	if (f == NULL || fd <= 2 || !regular_fd(fd))
		return real(f);
	if (hit("fflush"))
		return failed_flush(f, fd, real);
	r = real(f);
	after();
	return r;
}
