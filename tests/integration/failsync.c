/* Test-only LD_PRELOAD shim for tests/integration/ownerd.py: makes the
 * N-th and every later fdatasync(2) fail with EIO, where N comes from the
 * environment variable OWN_TEST_FAIL_FDATASYNC (unset or 0: never).  The
 * ledger syncs each answer record with fdatasync, so this injects "the
 * disk failed while charging answer N" into an unmodified ownerd.  Never
 * installed. */
#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static unsigned long calls;

int fdatasync(int fd)
{
	const char *e = getenv("OWN_TEST_FAIL_FDATASYNC");
	unsigned long n = e ? strtoul(e, NULL, 10) : 0;

	calls++;
	if (n != 0 && calls >= n) {
		errno = EIO;
		return -1;
	}
	return (int)syscall(SYS_fdatasync, fd);
}
