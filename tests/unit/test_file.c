/* SPDX-License-Identifier: Apache-2.0 */
/* Whole files: atomic writes and exclusive creation, bounded reads,
 * mkdir -p, directory syncs and the sync hook. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/core/error.h"
#include "common/core/file.h"
#include "tests/unit/tmpdir.h"

static int group_setup(void **state)
{
	(void)state;
	umask(022);
	return tmpdir_setup("test_file");
}

static int group_teardown(void **state)
{
	(void)state;
	dp_file_set_sync_hook(NULL);
	return tmpdir_teardown();
}

static int mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (int)(st.st_mode & 07777);
}

/* Entries of dir whose name starts with `prefix`. */
static int count_entries(const char *prefix)
{
	DIR *d = opendir(dir);
	int n = 0;

	assert_non_null(d);
	for (;;) {
		struct dirent *e = readdir(d);

		if (e == NULL)
			break;
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	}
	closedir(d);
	return n;
}

static char *read_text(const char *path)
{
	char *text = NULL;

	assert_int_equal(dp_file_read_all(path, 1 << 20, &text, NULL), 0);
	return text;
}

static int sync_calls;

static int failing_sync(int fd)
{
	(void)fd;
	sync_calls++;
	errno = EIO;
	return -1;
}

static int counting_sync(int fd)
{
	sync_calls++;
	return fsync(fd);
}

static void test_write_atomic(void **state)
{
	const char *p = path_of("w.txt");
	char *text;

	(void)state;
	assert_int_equal(dp_file_write_atomic(p, "old", 3, 0640), 0);
	assert_int_equal(mode_of(p), 0640);
	text = read_text(p);
	assert_string_equal(text, "old");
	free(text);

	/* Replaced as a whole, mode from the new call, nothing left beside. */
	assert_int_equal(dp_file_write_atomic(p, "new content", 11, 0600), 0);
	assert_int_equal(mode_of(p), 0600);
	text = read_text(p);
	assert_string_equal(text, "new content");
	free(text);
	assert_int_equal(count_entries("w.txt"), 1);

	/* The umask applies, as for open(2): 0644 under 077 is 0600. */
	{
		mode_t old = umask(077);

		assert_int_equal(dp_file_write_atomic(p, "x", 1, 0644), 0);
		umask(old);
		assert_int_equal(mode_of(p), 0600);
	}

	/* An empty file; data may be NULL then. */
	assert_int_equal(dp_file_write_atomic(p, NULL, 0, 0644), 0);
	text = read_text(p);
	assert_string_equal(text, "");
	free(text);

	/* Every write is synced: the file, then its directory. */
	sync_calls = 0;
	dp_file_set_sync_hook(counting_sync);
	assert_int_equal(dp_file_write_atomic(p, "x", 1, 0644), 0);
	dp_file_set_sync_hook(NULL);
	assert_int_equal(sync_calls, 2);
}

static void test_write_atomic_failure(void **state)
{
	const char *p = path_of("f.txt");
	char *text;

	(void)state;
	assert_int_equal(dp_file_write_atomic(p, "old", 3, 0644), 0);
	/* The disk fails before the rename: the old content stays. */
	sync_calls = 0;
	dp_file_set_sync_hook(failing_sync);
	assert_int_equal(dp_file_write_atomic(p, "new", 3, 0644), DP_EIO);
	dp_file_set_sync_hook(NULL);
	assert_int_equal(sync_calls, 1);
	assert_non_null(strstr(dp_error_detail(DP_EIO), "f.txt"));
	text = read_text(p);
	assert_string_equal(text, "old");
	free(text);
	assert_int_equal(count_entries("f.txt"), 1);

	/* No directory: DP_EIO (the tools map exit codes from it). */
	assert_int_equal(dp_file_write_atomic(path_of("no-such-dir/x"), "x", 1, 0644), DP_EIO);
	assert_non_null(strstr(dp_error_detail(DP_EIO), "no-such-dir/x"));
}

/* A writer killed at random moments: the file always holds one complete
 * version, never a mix or a truncated one. */
static void test_write_atomic_kill(void **state)
{
	enum { SIZE = 256 << 10 };
	const char *p = path_of("k.bin");
	unsigned char *buf = malloc(SIZE);
	struct timespec ts;

	(void)state;
	assert_non_null(buf);
	memset(buf, 0, SIZE);
	assert_int_equal(dp_file_write_atomic(p, buf, SIZE, 0644), 0);
	srand(12345);
	for (int round = 0; round < 20; round++) {
		pid_t pid = fork();
		char *text;
		size_t len;
		int st;

		assert_true(pid >= 0);
		if (pid == 0) {
			for (unsigned v = 1;; v++) {
				memset(buf, (int)(v & 0xff), SIZE);
				if (dp_file_write_atomic(p, buf, SIZE, 0644) != 0)
					_exit(1);
			}
		}
		ts.tv_sec = 0;
		ts.tv_nsec = (long)(rand() % 20000) * 1000;
		nanosleep(&ts, NULL);
		assert_int_equal(kill(pid, SIGKILL), 0);
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFSIGNALED(st));
		assert_int_equal(dp_file_read_all(p, SIZE, &text, &len), 0);
		assert_int_equal(len, SIZE);
		for (size_t i = 1; i < len; i++)
			if (text[i] != text[0])
				fail_msg("round %d: byte %zu is %d, byte 0 is %d", round, i, text[i],
					 text[0]);
		free(text);
	}
	free(buf);
}

static void test_create_atomic(void **state)
{
	const char *p = path_of("c.txt");
	char *text;

	(void)state;
	assert_int_equal(dp_file_create_atomic(p, "first", 5, 0600), 0);
	assert_int_equal(mode_of(p), 0600);
	/* Never replaces: DP_EEXIST, and the first content stays. */
	assert_int_equal(dp_file_create_atomic(p, "second", 6, 0644), DP_EEXIST);
	assert_non_null(strstr(dp_error_detail(DP_EEXIST), "c.txt"));
	text = read_text(p);
	assert_string_equal(text, "first");
	free(text);
	assert_int_equal(mode_of(p), 0600);
	assert_int_equal(count_entries("c.txt"), 1);
	/* No directory: DP_ENOENT. */
	assert_int_equal(dp_file_create_atomic(path_of("no-such-dir/c"), "x", 1, 0600),
			 DP_ENOENT);
	/* A failing sync leaves nothing behind. */
	dp_file_set_sync_hook(failing_sync);
	assert_int_equal(dp_file_create_atomic(path_of("c2.txt"), "x", 1, 0600), DP_EIO);
	dp_file_set_sync_hook(NULL);
	assert_int_equal(count_entries("c2.txt"), 0);
}

static void test_read_all(void **state)
{
	char *text = (char *)"untouched";
	size_t len = 77;
	char big[10000];

	(void)state;
	/* Exactly max bytes is fine; one more is DP_ERANGE. */
	put("ten.txt", "0123456789");
	assert_int_equal(dp_file_read_all(path_of("ten.txt"), 10, &text, &len), 0);
	assert_int_equal(len, 10);
	assert_string_equal(text, "0123456789");
	free(text);
	text = (char *)"untouched";
	len = 77;
	assert_int_equal(dp_file_read_all(path_of("ten.txt"), 9, &text, &len), DP_ERANGE);
	assert_string_equal(text, "untouched");
	assert_int_equal(len, 77);
	assert_non_null(strstr(dp_error_detail(DP_ERANGE), "ten.txt: larger than 9 bytes"));

	/* Larger than one growth step, at the limit and just over it. */
	memset(big, 'b', sizeof(big));
	put_bytes("big.txt", big, sizeof(big));
	assert_int_equal(dp_file_read_all(path_of("big.txt"), sizeof(big), &text, &len), 0);
	assert_int_equal(len, sizeof(big));
	assert_int_equal(text[len], '\0');
	assert_int_equal(memcmp(text, big, sizeof(big)), 0);
	free(text);
	assert_int_equal(dp_file_read_all(path_of("big.txt"), sizeof(big) - 1, &text, &len),
			 DP_ERANGE);

	/* NUL-terminated; embedded NULs are kept and counted (len may be NULL). */
	put_bytes("nul.bin", "a\0b", 3);
	assert_int_equal(dp_file_read_all(path_of("nul.bin"), 100, &text, &len), 0);
	assert_int_equal(len, 3);
	assert_int_equal(strlen(text), 1);
	assert_int_equal(memcmp(text, "a\0b\0", 4), 0);
	free(text);
	assert_int_equal(dp_file_read_all(path_of("nul.bin"), 100, &text, NULL), 0);
	free(text);

	put("empty.txt", "");
	assert_int_equal(dp_file_read_all(path_of("empty.txt"), 0, &text, &len), 0);
	assert_int_equal(len, 0);
	assert_string_equal(text, "");
	free(text);

	text = (char *)"untouched";
	assert_int_equal(dp_file_read_all(path_of("missing.txt"), 10, &text, &len), DP_ENOENT);
	assert_non_null(strstr(dp_error_detail(DP_ENOENT), "missing.txt: cannot open"));
	/* A directory opens but cannot be read. */
	assert_int_equal(dp_file_read_all(dir, 10, &text, &len), DP_EIO);
	assert_string_equal(text, "untouched");
}

static void test_mkdir_p(void **state)
{
	const char *deep = path_of("m/a/b/c");

	(void)state;
	assert_int_equal(dp_file_mkdir_p(deep, 1), 0);
	assert_int_equal(mode_of(deep), 0700);
	assert_int_equal(mode_of(path_of("m/a")), 0700);
	/* Existing directories are kept as they are. */
	assert_int_equal(dp_file_mkdir_p(deep, 0), 0);
	assert_int_equal(mode_of(deep), 0700);
	assert_int_equal(dp_file_mkdir_p(path_of("m/pub/x/"), 0), 0);
	assert_int_equal(mode_of(path_of("m/pub/x")), 0755);
	/* A file in the way. */
	put("m/file", "x");
	assert_int_equal(dp_file_mkdir_p(path_of("m/file/sub"), 0), DP_EIO);
	/* The component in the way is named. */
	assert_non_null(strstr(dp_error_detail(DP_EIO), "m/file: cannot create directory: not a "
				"directory"));
	assert_int_equal(dp_file_mkdir_p(path_of("m/file"), 0), DP_EIO);
	assert_int_equal(dp_file_mkdir_p("", 0), DP_EINVAL);

	/* Each new directory is synced into its parent (a power cut keeps
	 * it); existing ones are not synced again. */
	sync_calls = 0;
	dp_file_set_sync_hook(counting_sync);
	assert_int_equal(dp_file_mkdir_p(path_of("m/s/t"), 0), 0);
	assert_int_equal(sync_calls, 2);
	assert_int_equal(dp_file_mkdir_p(path_of("m/s/t"), 0), 0);
	assert_int_equal(sync_calls, 2);
	dp_file_set_sync_hook(failing_sync);
	assert_int_equal(dp_file_mkdir_p(path_of("m/s/u/v"), 0), DP_EIO);
	dp_file_set_sync_hook(NULL);
	assert_int_equal(sync_calls, 3);
	assert_non_null(strstr(dp_error_detail(DP_EIO), "m/s/u: cannot sync directory"));
}

static void test_sync(void **state)
{
	const char *p = path_of("s.txt");

	(void)state;
	assert_int_equal(dp_file_sync_dir(p), 0);
	assert_int_equal(dp_file_sync_dir(path_of("no-such-dir/x")), DP_EIO);
	assert_non_null(strstr(dp_error_detail(DP_EIO), "no-such-dir/x: cannot sync directory"));

	sync_calls = 0;
	dp_file_set_sync_hook(failing_sync);
	assert_int_equal(dp_file_sync(1, 1), DP_EIO);
	assert_int_equal(errno, EIO);
	assert_int_equal(dp_file_sync_dir(p), DP_EIO);
	dp_file_set_sync_hook(NULL);
	assert_int_equal(sync_calls, 2);
	put("s.txt", "x");
	{
		FILE *f = fopen(p, "r");

		assert_non_null(f);
		assert_int_equal(dp_file_sync(fileno(f), 0), 0);
		assert_int_equal(dp_file_sync(fileno(f), 1), 0);
		fclose(f);
	}
	assert_int_equal(dp_file_sync(-1, 0), DP_EIO);
	assert_int_equal(errno, EBADF);
}

/* Private state files: 0600 under any umask, also a file an older
 * version left 0644 (docs/ownerd.md "File permissions"). */
static void test_private(void **state)
{
	mode_t old = umask(0);
	const char *p = path_of("priv.txt");
	char *text;
	FILE *f;
	int fd;

	(void)state;
	assert_int_equal(dp_file_write_atomic(p, "x", 1, DP_FILE_MODE_PRIVATE), 0);
	assert_int_equal(mode_of(p), 0600);
	assert_int_equal(dp_file_write_atomic(p, "x", 1, DP_FILE_MODE_SHARED), 0);
	assert_int_equal(mode_of(p), 0644);
	/* The umask never takes the owner's own bits. */
	umask(0277);
	assert_int_equal(dp_file_write_atomic(p, "x", 1, DP_FILE_MODE_PRIVATE), 0);
	assert_int_equal(mode_of(p), 0600);
	umask(0);

	p = path_of("lock");
	assert_int_equal(dp_file_open_private(p, O_RDWR | O_CREAT, &fd), 0);
	assert_int_equal(mode_of(p), 0600);
	close(fd);
	assert_int_equal(chmod(p, 0644), 0);
	assert_int_equal(dp_file_open_private(p, O_RDWR, &fd), 0);
	assert_int_equal(mode_of(p), 0600);
	close(fd);
	fd = -7;
	assert_int_equal(dp_file_open_private(path_of("absent"), O_RDWR, &fd), DP_ENOENT);
	assert_int_equal(fd, -7);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(dp_file_open_private(path_of("no-such-dir/x"), O_RDWR | O_CREAT, &fd),
			 DP_ENOENT);
	assert_non_null(strstr(dp_error_detail(DP_ENOENT), "no-such-dir/x"));

	/* The stdio forms: w truncates, a appends, r+ needs the file. */
	p = path_of("trace.csv");
	assert_int_equal(dp_file_fopen_private(p, "w", &f), 0);
	fputs("head\n", f);
	fclose(f);
	assert_int_equal(mode_of(p), 0600);
	assert_int_equal(chmod(p, 0666), 0);
	assert_int_equal(dp_file_fopen_private(p, "a", &f), 0);
	fputs("row\n", f);
	fclose(f);
	assert_int_equal(mode_of(p), 0600);
	text = read_text(p);
	assert_string_equal(text, "head\nrow\n");
	free(text);
	assert_int_equal(dp_file_fopen_private(p, "r+", &f), 0);
	fclose(f);
	f = NULL;
	assert_int_equal(dp_file_fopen_private(path_of("none.csv"), "r+", &f), DP_ENOENT);
	assert_null(f);
	assert_int_equal(dp_file_fopen_private(p, "w", &f), 0);
	fclose(f);
	text = read_text(p);
	assert_string_equal(text, "");
	free(text);
	umask(old);
}

/* sshd's StrictModes (docs/ownerd.md "File permissions").  Run as root the
 * foreign owner and group are made with chown; otherwise those cases are
 * left out (the integration test local_state runs them as root). */
static void test_check_trusted(void **state)
{
	char top[256], led[256], f[256];

	(void)state;
	/* Copies: path_of's buffers rotate. */
	snprintf(top, sizeof(top), "%s", path_of("t"));
	snprintf(led, sizeof(led), "%s", path_of("t/led"));
	snprintf(f, sizeof(f), "%s", path_of("t/key"));
	assert_int_equal(mkdir(top, 0755), 0);
	assert_int_equal(chmod(top, 0755), 0);
	/* Not there yet: the directories above it are checked. */
	assert_int_equal(dp_file_check_trusted("--ledger", led), 0);
	assert_int_equal(mkdir(led, 0700), 0);
	assert_int_equal(dp_file_check_trusted("--ledger", led), 0);
	assert_int_equal(chmod(led, 0777), 0);
	assert_int_equal(dp_file_check_trusted("--ledger", led), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "writable by every user (mode 0777)"));
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "--ledger "));
	/* Writable by its group: only when the group is ours (fsGroup). */
	assert_int_equal(chown(led, (uid_t)-1, getegid()), 0);
	assert_int_equal(chmod(led, 02770), 0);
	assert_int_equal(dp_file_check_trusted("--ledger", led), 0);
	/* The sticky bit helps a directory above, never the path itself. */
	assert_int_equal(chmod(led, 01777), 0);
	assert_int_equal(dp_file_check_trusted("--ledger", led), DP_EINVAL);
	assert_int_equal(chmod(led, 0700), 0);
	assert_int_equal(chmod(top, 0777), 0);
	assert_int_equal(dp_file_check_trusted("--ledger", led), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "above it"));
	/* Also for a path that does not exist yet. */
	assert_int_equal(dp_file_check_trusted("--ledger", path_of("t/new")), DP_EINVAL);
	assert_int_equal(chmod(top, 01777), 0);
	assert_int_equal(dp_file_check_trusted("--ledger", led), 0);
	assert_int_equal(chmod(top, 0755), 0);
	/* A file; through a symbolic link, the file it leads to. */
	put("t/key", "k");
	assert_int_equal(chmod(f, 0600), 0);
	assert_int_equal(dp_file_check_trusted("--key", f), 0);
	assert_int_equal(symlink(f, path_of("t/link")), 0);
	assert_int_equal(dp_file_check_trusted("--key", path_of("t/link")), 0);
	assert_int_equal(chmod(f, 0602), 0);
	assert_int_equal(dp_file_check_trusted("--key", f), DP_EINVAL);
	assert_int_equal(dp_file_check_trusted("--key", path_of("t/link")), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "where it leads"));
	assert_int_equal(chmod(f, 0600), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(f, (uid_t)-1, 12345), 0);
		assert_int_equal(chmod(f, 0620), 0);
		assert_int_equal(dp_file_check_trusted("--key", f), DP_EINVAL);
		assert_non_null(strstr(dp_error_detail(DP_EINVAL), "group 12345"));
		assert_int_equal(chmod(f, 0640), 0);
		assert_int_equal(dp_file_check_trusted("--key", f), 0);
		assert_int_equal(chown(f, 12345, (gid_t)-1), 0);
		assert_int_equal(dp_file_check_trusted("--key", f), DP_EINVAL);
		assert_non_null(strstr(dp_error_detail(DP_EINVAL), "owned by uid 12345"));
		assert_int_equal(chown(top, 12345, (gid_t)-1), 0);
		assert_int_equal(dp_file_check_trusted("--ledger", led), DP_EINVAL);
		assert_non_null(strstr(dp_error_detail(DP_EINVAL), "above it is owned by uid 12345"));
		assert_int_equal(chown(top, 0, (gid_t)-1), 0);
	}
	assert_int_equal(dp_file_check_trusted("--key", ""), DP_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_atomic),
		cmocka_unit_test(test_write_atomic_failure),
		cmocka_unit_test(test_write_atomic_kill),
		cmocka_unit_test(test_create_atomic),
		cmocka_unit_test(test_read_all),
		cmocka_unit_test(test_mkdir_p),
		cmocka_unit_test(test_sync),
		cmocka_unit_test(test_private),
		cmocka_unit_test(test_check_trusted),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
