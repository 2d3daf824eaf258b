/* SPDX-License-Identifier: Apache-2.0 */
/* A test-only ownerd that kills itself (SIGKILL, as kill -9 would) at one
 * chosen point of the answer cycle of docs/ledger.md §9, for
 * e2e_reserve.py.  Linked around the production sources with
 * --wrap=dp_file_sync --wrap=dp_conn_send; never installed.
 *
 *   DP_CRASH_AT=POINT:N   POINT one of
 *     sync-before  just before the Nth fdatasync of a ledger record
 *     sync-after   just after it returned
 *     send-before  just before the Nth Answer is handed to TLS
 *     send-after   just after (the bytes are in the socket)
 * Only data syncs (fdatasync) of a *.ledger file count: the creation and
 * open syncs and the model file's do not. */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/core/file.h"
#include "common/net/conn.h"

int __real_dp_file_sync(int fd, int data_only);
int __real_dp_conn_send(dp_conn *c, const Dpasync__Envelope *msg);
int __wrap_dp_file_sync(int fd, int data_only);
int __wrap_dp_conn_send(dp_conn *c, const Dpasync__Envelope *msg);

/* Set before the first sync (the loop thread's first answer), read after. */
static char point[32];
static long target = -1;
static long syncs, sends;

static void setup(void)
{
	const char *v = getenv("DP_CRASH_AT");
	const char *colon;

	if (target >= 0 || v == NULL)
		return;
	colon = strchr(v, ':');
	if (colon == NULL || (size_t)(colon - v) >= sizeof(point)) {
		fprintf(stderr, "crashpoints: DP_CRASH_AT=%s: want POINT:N\n", v);
		exit(1);
	}
	memcpy(point, v, (size_t)(colon - v));
	target = strtol(colon + 1, NULL, 10);
}

static void maybe_die(const char *where, long n)
{
	if (n == target && strcmp(point, where) == 0) {
		fprintf(stderr, "crashpoints: SIGKILL at %s:%ld\n", where, n);
		raise(SIGKILL);
	}
}

static int is_ledger(int fd)
{
	char link[64], path[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = '\0';
	return n > 7 && strcmp(path + n - 7, ".ledger") == 0;
}

/* The settle's sync runs on a worker thread (owner/settle.c): the count is
 * atomic, and each call dies at its own number. */
int __wrap_dp_file_sync(int fd, int data_only)
{
	int r, counted;
	long n = 0;

	setup();
	counted = data_only && is_ledger(fd);
	if (counted)
		maybe_die("sync-before", n = __atomic_add_fetch(&syncs, 1, __ATOMIC_SEQ_CST));
	r = __real_dp_file_sync(fd, data_only);
	if (counted)
		maybe_die("sync-after", n);
	return r;
}

int __wrap_dp_conn_send(dp_conn *c, const Dpasync__Envelope *msg)
{
	int answer = msg != NULL && msg->msg_case == DPASYNC__ENVELOPE__MSG_ANSWER, r;

	setup();
	if (answer)
		maybe_die("send-before", ++sends);
	r = __real_dp_conn_send(c, msg);
	if (answer)
		maybe_die("send-after", sends);
	return r;
}
