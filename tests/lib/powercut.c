/* SPDX-License-Identifier: Apache-2.0 */
/* The power-cut recorder of the fault shim (iofault.c; docs/reliability.md
 * §8).  A kill -9 keeps the page cache; a power cut keeps only what a sync
 * made durable.  This file records that durable state as the daemon goes,
 * and tests/integration/campaigns/powercut.py rolls the files back to it after the shim's
 * kill (DP_FAULT_ACTION=kill-before|kill-after).  What counts as durable:
 *   - a file's content as it was when a successful fsync or fdatasync of
 *     it (on any descriptor) began: a write made during the sync may or
 *     may not be in it, so it is not counted;
 *   - a directory's entries (names and the inodes they name) as they were
 *     when a successful fsync of that directory began;
 *   - everything in the tracked directories at the start of the process.
 *
 * Environment (the recorder is off without DP_POWER_STORE):
 *   DP_POWER_STORE  an existing directory to write the record into
 *   DP_POWER_DIRS   colon-separated directories whose files the roll-back
 *                   covers; their state at start counts as durable
 *   DP_POWER_DROP   KIND:N, KIND fsync, fdatasync or dirsync (an fsync of a
 *                   directory): the N-th such call (N = 0: every one)
 *                   returns 0 without syncing, and nothing is recorded (a
 *                   sync missing from the code, for the negative controls)
 *
 * STORE/index has one line per event, each written with one write(2):
 *   base SEQ KEY PATH    a tracked directory at start, its listing in STORE/SEQ
 *   base-absent PATH     a tracked directory missing at start
 *   img SEQ KEY PATH     STORE/SEQ holds the durable content of inode KEY
 *   dir SEQ KEY PATH     STORE/SEQ holds the durable listing of directory KEY
 *   drop KIND N PATH     the N-th sync of KIND was dropped
 *   crash SEQ KEY PATH   a tracked directory at the crash point (listing)
 *   crash-absent PATH    a tracked directory missing at the crash point
 *   end                  the crash record is complete
 * A listing has one line per entry, "TYPE KEY NAME" (TYPE f: regular file,
 * d: directory, o: other).  KEY is MAJOR.MINOR:INO:BIRTH, BIRTH the birth
 * time in ns from statx (0 where the file system has none), so an inode
 * number used again by a new file is a new key.  Every file access here
 * is a raw system call: nothing is counted or faulted by the shim. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "powercut.h"

struct dirent64_raw {
	unsigned long long d_ino;
	long long d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

enum { LINE_CAP = 4608, KEY_MAX = 96 };

static int on, index_fd = -1;
static char store[2048], dirs[8192], drop_kind[16];
static unsigned long seq, drop_n, drop_seen;
/* The line a sync commits, prepared by powercut_sync_begin on the same
 * thread (ownerd syncs on a worker thread too). */
static __thread char pending[LINE_CAP];

static int sys_open(int dirfd, const char *path, int flags)
{
	int fd;

	do
		fd = (int)syscall(SYS_openat, dirfd, path, flags | O_CLOEXEC, 0600);
	while (fd < 0 && errno == EINTR);
	return fd;
}

static void sys_close(int fd)
{
	if (fd >= 0)
		(void)syscall(SYS_close, fd);
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		long w = syscall(SYS_write, fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void index_line(const char *fmt, ...)
{
	char line[LINE_CAP];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sizeof(line))
		(void)write_all(index_fd, line, (size_t)n);
}

static unsigned long next_seq(void)
{
	return __atomic_add_fetch(&seq, 1, __ATOMIC_SEQ_CST);
}

/* The key and type of name in dirfd ("" with AT_EMPTY_PATH: dirfd itself). */
static int key_of(int dirfd, const char *name, int flags, char *key, char *type)
{
	struct statx st;
	unsigned long long birth = 0;

	if (syscall(SYS_statx, dirfd, name, flags | AT_SYMLINK_NOFOLLOW,
		    STATX_TYPE | STATX_INO | STATX_BTIME, &st) != 0)
		return -1;
	if (st.stx_mask & STATX_BTIME)
		birth = (unsigned long long)st.stx_btime.tv_sec * 1000000000ull +
			st.stx_btime.tv_nsec;
	snprintf(key, KEY_MAX, "%u.%u:%llu:%llu", st.stx_dev_major, st.stx_dev_minor,
		 (unsigned long long)st.stx_ino, birth);
	*type = S_ISREG(st.stx_mode) ? 'f' : S_ISDIR(st.stx_mode) ? 'd' : 'o';
	return 0;
}

static void fd_path(int fd, char *out, size_t n)
{
	char link[64];
	long r;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	r = syscall(SYS_readlinkat, AT_FDCWD, link, out, n - 1);
	out[r > 0 ? (size_t)r : 0] = '\0';
}

static int store_file(unsigned long s)
{
	char name[sizeof(store) + 32];

	snprintf(name, sizeof(name), "%s/%lu", store, s);
	return sys_open(AT_FDCWD, name, O_WRONLY | O_CREAT | O_TRUNC);
}

/* STORE/s := the content of the open regular file src (read with pread,
 * so its offset is untouched). */
static int copy_content(int src, unsigned long s)
{
	char buf[16384];
	long long off = 0;
	int out = store_file(s), rc = 0;

	if (out < 0)
		return -1;
	for (;;) {
		long r = syscall(SYS_pread64, src, buf, sizeof(buf), off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (r > 0 && write_all(out, buf, (size_t)r) != 0)) {
			rc = -1;
			break;
		}
		if (r == 0)
			break;
		off += r;
	}
	sys_close(out);
	return rc;
}

/* Call fn for every entry of the directory open as dirfd, but . and .. */
static int each_entry(int dirfd, int (*fn)(int d, const char *name, void *arg), void *arg)
{
	char buf[8192];
	int d = sys_open(dirfd, ".", O_RDONLY | O_DIRECTORY), rc = 0;

	if (d < 0)
		return -1;
	for (;;) {
		long n = syscall(SYS_getdents64, d, buf, sizeof(buf));

		if (n <= 0) {
			rc = n < 0 ? -1 : 0;
			break;
		}
		for (long off = 0; off < n;) {
			struct dirent64_raw *e = (struct dirent64_raw *)(buf + off);

			off += e->d_reclen;
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
			    strchr(e->d_name, '\n') != NULL)
				continue;
			if (fn(d, e->d_name, arg) != 0)
				rc = -1;
		}
	}
	sys_close(d);
	return rc;
}

static int list_one(int d, const char *name, void *arg)
{
	char line[LINE_CAP], key[KEY_MAX], type;
	int n;

	if (key_of(d, name, 0, key, &type) != 0)
		return 0;   /* gone meanwhile */
	n = snprintf(line, sizeof(line), "%c %s %s\n", type, key, name);
	return n > 0 && (size_t)n < sizeof(line) ? write_all(*(int *)arg, line, (size_t)n) : -1;
}

/* STORE/s := the listing of the directory open as dirfd. */
static int copy_listing(int dirfd, unsigned long s)
{
	int out = store_file(s), rc;

	if (out < 0)
		return -1;
	rc = each_entry(dirfd, list_one, &out);
	sys_close(out);
	return rc;
}

/* At start: a tracked directory's regular files are durable as they are. */
static int base_file(int d, const char *name, void *arg)
{
	char key[KEY_MAX], type;
	unsigned long s;
	int fd, rc;

	if (key_of(d, name, 0, key, &type) != 0 || type != 'f')
		return 0;
	fd = sys_open(d, name, O_RDONLY | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	s = next_seq();
	rc = copy_content(fd, s);
	sys_close(fd);
	if (rc == 0)
		index_line("img %lu %s %s/%s\n", s, key, (const char *)arg, name);
	return rc;
}

/* "base" or "crash": every tracked directory as it is now. */
static void snapshot(const char *tag, int files)
{
	char key[KEY_MAX], type;

	for (const char *p = dirs; *p != '\0';) {
		size_t len = strcspn(p, ":");
		char path[sizeof(dirs)];
		unsigned long s;
		int d;

		snprintf(path, sizeof(path), "%.*s", (int)len, p);
		p += len + (p[len] == ':');
		if (len == 0)
			continue;
		d = sys_open(AT_FDCWD, path, O_RDONLY | O_DIRECTORY);
		if (d < 0 || key_of(d, "", AT_EMPTY_PATH, key, &type) != 0) {
			index_line("%s-absent %s\n", tag, path);
			sys_close(d);
			continue;
		}
		s = next_seq();
		if (copy_listing(d, s) == 0)
			index_line("%s %lu %s %s\n", tag, s, key, path);
		if (files)
			(void)each_entry(d, base_file, path);
		sys_close(d);
	}
}

__attribute__((constructor)) static void powercut_start(void)
{
	const char *e = getenv("DP_POWER_STORE"), *colon;
	char name[sizeof(store) + 16];

	if (e == NULL || *e == '\0')
		return;
	snprintf(store, sizeof(store), "%s", e);
	snprintf(name, sizeof(name), "%s/index", store);
	index_fd = sys_open(AT_FDCWD, name, O_WRONLY | O_APPEND | O_CREAT);
	if (index_fd < 0)
		return;
	e = getenv("DP_POWER_DIRS");
	snprintf(dirs, sizeof(dirs), "%s", e ? e : "");
	e = getenv("DP_POWER_DROP");
	colon = e ? strchr(e, ':') : NULL;
	if (colon != NULL && (size_t)(colon - e) < sizeof(drop_kind)) {
		memcpy(drop_kind, e, (size_t)(colon - e));
		drop_n = strtoul(colon + 1, NULL, 10);
	}
	on = 1;
	snapshot("base", 1);
}

int powercut_drop(const char *kind, int fd)
{
	char key[KEY_MAX], type, path[2048];
	unsigned long n;

	if (!on || drop_kind[0] == '\0' || key_of(fd, "", AT_EMPTY_PATH, key, &type) != 0)
		return 0;
	if (type == 'd')
		kind = "dirsync";
	if (strcmp(kind, drop_kind) != 0)
		return 0;
	n = __atomic_add_fetch(&drop_seen, 1, __ATOMIC_SEQ_CST);
	if (drop_n != 0 && n != drop_n)
		return 0;
	fd_path(fd, path, sizeof(path));
	index_line("drop %s %lu %s\n", kind, n, path);
	return 1;
}

unsigned long powercut_sync_begin(int fd)
{
	char key[KEY_MAX], type, path[2048], proc[64];
	unsigned long s;
	int rc = -1;

	if (!on || key_of(fd, "", AT_EMPTY_PATH, key, &type) != 0 || type == 'o')
		return 0;
	fd_path(fd, path, sizeof(path));
	s = next_seq();
	if (type == 'd') {
		rc = copy_listing(fd, s);
	} else {
		/* A descriptor open for writing only cannot be read: open the
		 * same file again, for reading. */
		int r;

		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		r = sys_open(AT_FDCWD, proc, O_RDONLY);
		if (r >= 0)
			rc = copy_content(r, s);
		sys_close(r);
	}
	if (rc != 0)
		return 0;
	snprintf(pending, sizeof(pending), "%s %lu %s %s\n", type == 'd' ? "dir" : "img", s, key,
		 path);
	return s;
}

void powercut_sync_end(unsigned long token, int ok)
{
	if (token != 0 && ok)
		(void)write_all(index_fd, pending, strlen(pending));
}

void powercut_crash(void)
{
	if (!on)
		return;
	snapshot("crash", 0);
	index_line("end\n");
}
