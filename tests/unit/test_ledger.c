/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for common/core/ledger.c: the owner's durable privacy-budget ledger.
 *
 * Expected nano-epsilon values are derived by hand from the exact binary
 * value of each double (shown next to each), not from the code under test.
 * Crafted files are built by an encoder written here from docs/ledger.md,
 * independently of ledger.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/ledger.h"
#include "common/core/log.h"

#define HS DP_LEDGER_HEADER_SIZE
#define RS DP_LEDGER_RECORD_SIZE

/* ---- fixture: a fresh temporary directory per test ---- */

struct fx {
	char dir[64];
	char path[128];
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	strcpy(f->dir, "/tmp/test_ledger.XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/ledger", f->dir);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	DIR *d = opendir(f->dir);
	struct dirent *de;
	char p[512];

	dp_file_set_sync_hook(NULL);
	if (d) {
		for (;;) {
			de = readdir(d);
			if (de == NULL)
				break;
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			snprintf(p, sizeof(p), "%s/%s", f->dir, de->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(f->dir);
	free(f);
	return 0;
}

/* ---- small file helpers ---- */

static unsigned char *slurp(const char *path, size_t *len)
{
	struct stat st;
	unsigned char *b;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	b = malloc((size_t)st.st_size + 1);
	assert_non_null(b);
	assert_int_equal(read(fd, b, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return b;
}

static void spit(const char *path, const unsigned char *b, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, len), (ssize_t)len);
	close(fd);
}

static off_t fsize(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

/* The unit the tests that run for both units use (docs/ledger.md §2):
 * open_ok opens a nano-rho ledger, with the delta and slack below, while
 * it is DP_LEDGER_UNIT_RHO.  The amounts are the same numbers in either
 * unit. */
static unsigned unit_under_test = DP_LEDGER_UNIT_EPS;
#define GAUSS_DELTA 1e-6
#define GAUSS_SLACK 1e-12   /* 1 nano-epsilon, rounded up */

static dp_ledger *open_ok(const char *path, double cap, uint64_t k, const char *id,
			  unsigned flags)
{
	dp_ledger *l = NULL;
	int rc = unit_under_test == DP_LEDGER_UNIT_RHO ?
		dp_ledger_open_gauss(path, cap, GAUSS_DELTA, GAUSS_SLACK, k, id, flags, &l) :
		dp_ledger_open(path, cap, k, id, flags, &l);

	if (rc != 0)
		fail_msg("dp_ledger_open(%s): %d %s", path, rc, dp_error_detail(rc));
	assert_non_null(l);
	assert_int_equal(dp_ledger_unit(l), unit_under_test);
	return l;
}

/* Run test `fn` for a nano-rho ledger. */
static void in_rho(void (*fn)(void **), void **state)
{
	unit_under_test = DP_LEDGER_UNIT_RHO;
	fn(state);
	unit_under_test = DP_LEDGER_UNIT_EPS;
}

static void charge_ok(dp_ledger *l, uint64_t k, double eps)
{
	int rc = dp_ledger_charge(l, k, eps, NULL);

	if (rc != 0)
		fail_msg("charge k=%llu eps=%g: %d %s", (unsigned long long)k, eps, rc,
			 dp_error_detail(rc));
}

/* Open must fail with `want`, leave *out untouched and the file unchanged. */
static void open_fails(const char *path, double cap, uint64_t k, const char *id,
		       unsigned flags, int want)
{
	dp_ledger *sentinel = (dp_ledger *)(uintptr_t)0x1234;
	dp_ledger *l = sentinel;
	int rc = dp_ledger_open(path, cap, k, id, flags, &l);

	if (rc != want)
		fail_msg("open %s: got %d (%s), want %d", path, rc, dp_error_detail(rc), want);
	assert_ptr_equal(l, sentinel);
}

/* ---- independent encoder for the documented format (docs/ledger.md) ---- */

static void le32(unsigned char *p, uint32_t v)
{
	p[0] = v & 0xff; p[1] = (v >> 8) & 0xff; p[2] = (v >> 16) & 0xff; p[3] = v >> 24;
}

static void le64(unsigned char *p, uint64_t v)
{
	le32(p, (uint32_t)v);
	le32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t crc(const unsigned char *p, size_t n)
{
	return (uint32_t)crc32(0, p, (uInt)n);
}

/* Header bytes; returns its CRC (which records carry). */
static uint32_t mk_header(unsigned char *h, uint32_t version, uint64_t cap_nano, uint64_t capk,
			  const char *id)
{
	memset(h, 0, HS);
	memcpy(h, "DPLEDGER", 8);
	le32(h + 8, version);
	le32(h + 12, HS);
	le32(h + 16, RS);
	le32(h + 20, 0);
	le64(h + 24, cap_nano);
	le64(h + 32, capk);
	le64(h + 40, 1700000000ull * 1000000000ull);
	memcpy(h + 48, id, strlen(id));
	le32(h + 252, crc(h, 252));
	return crc(h, 252);
}

static void mk_record(unsigned char *r, uint64_t seq, uint64_t k, uint64_t charge,
		      uint64_t total, uint64_t count, uint32_t hcrc)
{
	memset(r, 0, RS);
	r[0] = 'D'; r[1] = 'P'; r[2] = 'L'; r[3] = 'R';
	le32(r + 4, 0);
	le64(r + 8, seq);
	le64(r + 16, k);
	le64(r + 24, charge);
	le64(r + 32, total);
	le64(r + 40, count);
	le64(r + 48, 1700000001ull * 1000000000ull);
	le32(r + 56, hcrc);
	le32(r + 60, crc(r, 60));
}

/* ---- rounding (the rules themselves: test_nano.c) ---- */

static void test_rounding_cap_third(void **state)
{
	struct fx *f = *state;
	dp_ledger *l = open_ok(f->path, 1.0, 10, "owner=a", 0);
	dp_ledger_entry e;

	/* cap 1.0 = 1000000000 nano exactly; each 1/3 costs 333333334 (above). */
	assert_int_equal(dp_ledger_cap_nano(l), 1000000000u);
	assert_int_equal(dp_ledger_charge(l, 1, 1.0 / 3, &e), 0);
	assert_int_equal(e.charge_nano, 333333334u);
	assert_int_equal(e.total_nano, 333333334u);
	assert_int_equal(e.seq, 1);
	assert_int_equal(dp_ledger_charge(l, 2, 1.0 / 3, &e), 0);
	assert_int_equal(e.total_nano, 666666668u);
	/* 666666668 + 333333334 = 1000000002 > 1000000000: refused. */
	assert_int_equal(dp_ledger_check(l, 3, 1.0 / 3), DP_EBUDGET);
	assert_int_equal(dp_ledger_charge(l, 3, 1.0 / 3, &e), DP_EBUDGET);
	assert_int_equal(dp_ledger_answers(l), 2);
	assert_int_equal(dp_ledger_spent_nano(l), 666666668u);
	assert_int_equal(dp_ledger_left_nano(l), 333333332u);
	assert_true(fabs(dp_ledger_left(l) - 0.333333332) < 1e-15);
	assert_int_equal(fsize(f->path), HS + 2 * RS);
	/* A charge that fits exactly in what is left is accepted. */
	/* 0.333333332 is just below that in binary (333333331.99999998 nano): ceil 333333332. */
	charge_ok(l, 3, 0.333333332);
	assert_int_equal(dp_ledger_spent_nano(l), 1000000000u);
	assert_int_equal(dp_ledger_left_nano(l), 0);
	dp_ledger_close(l);
}

static void test_rounding_cap_down(void **state)
{
	struct fx *f = *state;
	dp_ledger *l = open_ok(f->path, 0.3, 10, "", 0);

	/* cap 0.3 -> 299999999 nano (rounded down); 0.1 -> 100000001 (up). */
	assert_int_equal(dp_ledger_cap_nano(l), 299999999u);
	charge_ok(l, 1, 0.1);
	charge_ok(l, 2, 0.1);
	assert_int_equal(dp_ledger_spent_nano(l), 200000002u);
	/* 300000003 > 299999999 */
	assert_int_equal(dp_ledger_charge(l, 3, 0.1, NULL), DP_EBUDGET);
	assert_int_equal(dp_ledger_left_nano(l), 99999997u);
	assert_int_equal(dp_ledger_answers(l), 2);
	dp_ledger_close(l);
}

/* K charges of dp_nano_share(eps, K) fill the ledger to the nano-epsilon. */
static void test_eps_share(void **state)
{
	struct fx *f = *state;
	double q = 0;
	dp_ledger *l;

	/* floor(1e9 / 3) = 333333333 nano per answer (test_nano.c). */
	assert_int_equal(dp_nano_share(1.0, 3, &q), 0);
	l = open_ok(f->path, 1.0, 3, "", 0);
	charge_ok(l, 1, q);
	charge_ok(l, 2, q);
	charge_ok(l, 3, q);
	assert_int_equal(dp_ledger_spent_nano(l), 999999999u);
	assert_int_equal(dp_ledger_charge(l, 4, 1e-12, NULL), DP_EBUDGET);  /* K = 3 */
	dp_ledger_close(l);
}

/* ---- caps ---- */

static void test_eps_cap_exact(void **state)
{
	struct fx *f = *state;
	dp_ledger *l = open_ok(f->path, 1.0, 100, "", 0);

	for (uint64_t k = 1; k <= 4; k++)
		charge_ok(l, k, 0.25);  /* exactly 250000000 each */
	assert_int_equal(dp_ledger_spent_nano(l), 1000000000u);
	assert_int_equal(dp_ledger_left_nano(l), 0);
	assert_true(dp_ledger_spent(l) == 1.0);
	assert_int_equal(dp_ledger_charge(l, 5, 0.25, NULL), DP_EBUDGET);
	assert_int_equal(dp_ledger_charge(l, 5, 1e-12, NULL), DP_EBUDGET);  /* 1 nano */
	assert_int_equal(dp_ledger_check(l, 5, 1e-12), DP_EBUDGET);
	assert_int_equal(dp_ledger_answers(l), 4);
	assert_int_equal(fsize(f->path), HS + 4 * RS);
	assert_int_equal(dp_ledger_failed(l), 0);
	dp_ledger_close(l);
}

static void test_answer_cap_exact(void **state)
{
	struct fx *f = *state;
	dp_ledger *l = open_ok(f->path, 10.0, 5, "", 0);

	for (uint64_t k = 1; k <= 5; k++) {
		assert_int_equal(dp_ledger_check(l, k, 0.5), 0);
		charge_ok(l, k, 0.5);
	}
	assert_int_equal(dp_ledger_answers(l), 5);
	assert_int_equal(dp_ledger_answers_cap(l), 5);
	assert_int_equal(dp_ledger_check(l, 6, 0.5), DP_EBUDGET);
	assert_int_equal(dp_ledger_charge(l, 6, 0.5, NULL), DP_EBUDGET);
	assert_int_equal(dp_ledger_spent_nano(l), 2500000000u);
	assert_int_equal(dp_ledger_left_nano(l), 7500000000u);
	assert_int_equal(fsize(f->path), HS + 5 * RS);
	dp_ledger_close(l);
	/* Still refused after a reopen. */
	l = open_ok(f->path, 10.0, 5, "", 0);
	assert_int_equal(dp_ledger_charge(l, 7, 0.5, NULL), DP_EBUDGET);
	dp_ledger_close(l);
}

/* ---- reopen ---- */

static void test_reopen_keeps_totals(void **state)
{
	struct fx *f = *state;
	dp_ledger_entry e;
	uint64_t k = 0;
	dp_ledger *l = open_ok(f->path, 2.0, 10, "owner=a job=j", 0);

	assert_int_equal(dp_ledger_last_k(l, &k), DP_ENOENT);
	charge_ok(l, 10, 0.25);
	charge_ok(l, 20, 0.1);
	charge_ok(l, 35, 0.5);
	dp_ledger_close(l);

	l = open_ok(f->path, 2.0, 10, "owner=a job=j", 0);
	/* 250000000 + 100000001 + 500000000 */
	assert_int_equal(dp_ledger_spent_nano(l), 850000001u);
	assert_int_equal(dp_ledger_left_nano(l), 1149999999u);
	assert_int_equal(dp_ledger_answers(l), 3);
	assert_int_equal(dp_ledger_torn_bytes(l), 0);
	assert_string_equal(dp_ledger_identity(l), "owner=a job=j");
	assert_int_equal(dp_ledger_last_k(l, &k), 0);
	assert_int_equal(k, 35);
	assert_int_equal(dp_ledger_lookup(l, 20, &e), 0);
	assert_int_equal(e.seq, 2);
	assert_int_equal(e.k, 20);
	assert_int_equal(e.charge_nano, 100000001u);
	assert_int_equal(e.total_nano, 350000001u);
	assert_int_equal(e.count, 2);
	assert_int_equal(dp_ledger_lookup(l, 10, NULL), 0);
	assert_int_equal(dp_ledger_lookup(l, 21, &e), DP_ENOENT);
	assert_int_equal(dp_ledger_lookup(l, 36, &e), DP_ENOENT);
	assert_int_equal(dp_ledger_charge(l, 36, 0.25, &e), 0);
	assert_int_equal(e.seq, 4);
	assert_int_equal(e.total_nano, 1100000001u);
	dp_ledger_close(l);
}

static void test_reopen_caps_mismatch(void **state)
{
	struct fx *f = *state;
	dp_ledger *l = open_ok(f->path, 1.0, 10, "owner=a", 0);
	int rc;

	charge_ok(l, 1, 0.4);
	charge_ok(l, 2, 0.4);  /* 800000002 spent */
	dp_ledger_close(l);

	open_fails(f->path, 2.0, 10, "owner=a", 0, DP_EINVAL);
	open_fails(f->path, 0.5, 10, "owner=a", 0, DP_EINVAL);
	open_fails(f->path, 1.0, 11, "owner=a", 0, DP_EINVAL);
	open_fails(f->path, 1.0, 9, "owner=a", 0, DP_EINVAL);
	rc = dp_ledger_open(f->path, 1.0, 9, "owner=a", 0, &l);
	assert_non_null(strstr(dp_error_detail(rc), "caps differ"));
	open_fails(f->path, 1.0, 10, "owner=b", 0, DP_EINVAL);
	open_fails(f->path, 1.0, 10, NULL, 0, DP_EINVAL);
	open_fails(f->path, 2.0, 10, "owner=a", DP_LEDGER_ALLOW_LOWER, DP_EINVAL);
	open_fails(f->path, 1.0, 11, "owner=a", DP_LEDGER_ALLOW_LOWER, DP_EINVAL);
	open_fails(f->path, 0.5, 11, "owner=a", DP_LEDGER_ALLOW_LOWER, DP_EINVAL);
	/* Caps are compared in nano: 1.0000000001 rounds down to the same cap. */
	l = open_ok(f->path, 1.0000000001, 10, "owner=a", 0);
	dp_ledger_close(l);
	/* Lowering is allowed with the flag; the session enforces the lower caps. */
	l = open_ok(f->path, 0.5, 5, "owner=a", DP_LEDGER_ALLOW_LOWER);
	assert_int_equal(dp_ledger_cap_nano(l), 500000000u);
	assert_int_equal(dp_ledger_answers_cap(l), 5);
	assert_int_equal(dp_ledger_spent_nano(l), 800000002u);
	assert_int_equal(dp_ledger_left_nano(l), 0);
	assert_int_equal(dp_ledger_charge(l, 3, 1e-12, NULL), DP_EBUDGET);
	dp_ledger_close(l);
	l = open_ok(f->path, 0.9, 2, "owner=a", DP_LEDGER_ALLOW_LOWER);
	assert_int_equal(dp_ledger_charge(l, 3, 1e-12, NULL), DP_EBUDGET);  /* K = 2 */
	dp_ledger_close(l);
	/* The header was not rewritten: the original caps still open it. */
	l = open_ok(f->path, 1.0, 10, "owner=a", 0);
	assert_int_equal(dp_ledger_left_nano(l), 199999998u);
	charge_ok(l, 3, 0.1);
	dp_ledger_close(l);
}

static void test_lock(void **state)
{
	struct fx *f = *state;
	dp_ledger *l = open_ok(f->path, 1.0, 10, "", 0);
	dp_ledger *r;

	open_fails(f->path, 1.0, 10, "", 0, DP_ESTATE);
	/* Read-only inspection takes no lock. */
	r = open_ok(f->path, 0, 0, NULL, DP_LEDGER_READONLY);
	dp_ledger_close(r);
	dp_ledger_close(l);
	l = open_ok(f->path, 1.0, 10, "", 0);
	dp_ledger_close(l);
}

static void test_creation(void **state)
{
	struct fx *f = *state;
	dp_ledger *l;
	struct stat st;
	struct dirent *de;
	DIR *d;
	int n = 0;
	char id[DP_LEDGER_IDENTITY_MAX + 2];

	open_fails(f->path, 1.0, 10, "", DP_LEDGER_NO_CREATE, DP_ENOENT);
	open_fails(f->path, 1.0, 10, "", DP_LEDGER_READONLY, DP_ENOENT);
	memset(id, 'x', sizeof(id));
	id[DP_LEDGER_IDENTITY_MAX + 1] = '\0';
	open_fails(f->path, 1.0, 10, id, 0, DP_EINVAL);  /* 128 bytes: too long */
	open_fails(f->path, 0.0, 10, "", 0, DP_EINVAL);
	open_fails(f->path, -1.0, 10, "", 0, DP_EINVAL);
	open_fails(f->path, NAN, 10, "", 0, DP_EINVAL);
	open_fails(f->path, 1e-10, 10, "", 0, DP_EINVAL);  /* below one nano */
	open_fails(f->path, 1.0, 0, "", 0, DP_EINVAL);
	open_fails(f->path, INFINITY, 10, "", 0, DP_EINVAL);
	open_fails(f->path, 1.0, 10, "", 1u << 20, DP_EINVAL);
	open_fails("/nonexistent-dir-xyz/ledger", 1.0, 10, "", 0, DP_ENOENT);
	assert_int_equal(access(f->path, F_OK), -1);

	id[DP_LEDGER_IDENTITY_MAX] = '\0';  /* 127 bytes: fits */
	l = open_ok(f->path, 1.0, 10, id, 0);
	assert_string_equal(dp_ledger_identity(l), id);
	dp_ledger_close(l);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_size, HS);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* No temporary file left behind. */
	d = opendir(f->dir);
	assert_non_null(d);
	for (;;) {
		de = readdir(d);
		if (de == NULL)
			break;
		if (de->d_name[0] != '.')
			n++;
	}
	closedir(d);
	assert_int_equal(n, 1);
	l = open_ok(f->path, 1.0, 10, id, DP_LEDGER_NO_CREATE);
	dp_ledger_close(l);
	dp_ledger_close(NULL);
}

/* ---- repeats ---- */

static void test_repeat_k(void **state)
{
	struct fx *f = *state;
	dp_ledger *l = open_ok(f->path, 1.0, 10, "", 0);
	dp_ledger_entry e;
	int rc;

	charge_ok(l, 0, 0.1);  /* k = 0 is a valid first id */
	charge_ok(l, 5, 0.1);
	assert_int_equal(dp_ledger_check(l, 5, 0.1), DP_ESTATE);
	rc = dp_ledger_charge(l, 5, 0.1, &e);
	assert_int_equal(rc, DP_ESTATE);
	assert_non_null(strstr(dp_error_detail(rc), "already answered"));
	assert_int_equal(dp_ledger_charge(l, 0, 0.1, NULL), DP_ESTATE);
	assert_int_equal(dp_ledger_lookup(l, 5, &e), 0);
	assert_int_equal(e.seq, 2);
	/* Not a repeat, but below the last k: refused too. */
	rc = dp_ledger_charge(l, 3, 0.1, NULL);
	assert_int_equal(rc, DP_ESTATE);
	assert_non_null(strstr(dp_error_detail(rc), "not above"));
	assert_int_equal(dp_ledger_lookup(l, 3, NULL), DP_ENOENT);
	assert_int_equal(dp_ledger_answers(l), 2);
	assert_int_equal(dp_ledger_spent_nano(l), 200000002u);
	assert_int_equal(fsize(f->path), HS + 2 * RS);
	charge_ok(l, 6, 0.1);
	dp_ledger_close(l);
	/* The refusal survives a restart. */
	l = open_ok(f->path, 1.0, 10, "", 0);
	assert_int_equal(dp_ledger_charge(l, 5, 0.1, NULL), DP_ESTATE);
	assert_int_equal(dp_ledger_charge(l, 6, 0.1, NULL), DP_ESTATE);
	charge_ok(l, UINT64_MAX, 0.1);
	assert_int_equal(dp_ledger_lookup(l, UINT64_MAX, &e), 0);
	assert_int_equal(e.seq, 4);
	dp_ledger_close(l);
}

static void test_bad_charge_args(void **state)
{
	struct fx *f = *state;
	dp_ledger *l = open_ok(f->path, 1e9, 10, "", 0);
	dp_ledger_entry e = { .seq = 99 };

	assert_int_equal(dp_ledger_charge(l, 1, 0.0, &e), DP_EINVAL);
	assert_int_equal(dp_ledger_charge(l, 1, -0.1, &e), DP_EINVAL);
	assert_int_equal(dp_ledger_charge(l, 1, NAN, &e), DP_EINVAL);
	assert_int_equal(dp_ledger_charge(l, 1, INFINITY, &e), DP_EINVAL);
	assert_int_equal(dp_ledger_charge(l, 1, 2e10, &e), DP_ERANGE);
	assert_int_equal(dp_ledger_charge(l, 1, 2e9, &e), DP_EBUDGET);
	assert_int_equal(e.seq, 99);
	assert_int_equal(dp_ledger_answers(l), 0);
	assert_int_equal(fsize(f->path), HS);
	dp_ledger_close(l);
}

static void test_infinite(void **state)
{
	struct fx *f = *state;
	char p2[160];
	dp_ledger *l;

	open_fails(f->path, INFINITY, 3, "", 0, DP_EINVAL);
	l = open_ok(f->path, INFINITY, 3, "", DP_LEDGER_ALLOW_INF);
	assert_true(dp_ledger_cap_nano(l) == DP_NANO_INF);
	assert_true(isinf(dp_ledger_cap(l)));
	charge_ok(l, 1, 0.5);
	assert_int_equal(dp_ledger_spent_nano(l), 500000000u);
	charge_ok(l, 2, INFINITY);
	assert_true(dp_ledger_spent_nano(l) == DP_NANO_INF);
	assert_true(isinf(dp_ledger_spent(l)));
	assert_true(isinf(dp_ledger_left(l)));
	charge_ok(l, 3, 0.5);
	/* Answers are still counted: K = 3. */
	assert_int_equal(dp_ledger_charge(l, 4, INFINITY, NULL), DP_EBUDGET);
	dp_ledger_close(l);
	l = open_ok(f->path, INFINITY, 3, "", DP_LEDGER_ALLOW_INF);
	assert_int_equal(dp_ledger_answers(l), 3);
	assert_true(dp_ledger_spent_nano(l) == DP_NANO_INF);
	dp_ledger_close(l);
	/* A testing ledger never opens without the flag, even to lower it. */
	open_fails(f->path, 1.0, 3, "", DP_LEDGER_ALLOW_LOWER, DP_EINVAL);
	open_fails(f->path, 1.0, 3, "", 0, DP_EINVAL);

	/* Finite ledger: an infinite charge is invalid without the flag and
	 * over budget with it. */
	snprintf(p2, sizeof(p2), "%s/finite", f->dir);
	l = open_ok(p2, 1.0, 3, "", 0);
	assert_int_equal(dp_ledger_charge(l, 1, INFINITY, NULL), DP_EINVAL);
	dp_ledger_close(l);
	l = open_ok(p2, 1.0, 3, "", DP_LEDGER_ALLOW_INF);
	assert_int_equal(dp_ledger_charge(l, 1, INFINITY, NULL), DP_EBUDGET);
	charge_ok(l, 1, 1.0);
	dp_ledger_close(l);
}

/* ---- torn tails and corruption ---- */

/* A 5-record ledger (k = 1..5, 0.1 each = 100000001 nano); returns its bytes. */
static unsigned char *five_records(struct fx *f, size_t *len)
{
	dp_ledger *l = open_ok(f->path, 1.0, 10, "owner=t", 0);

	for (uint64_t k = 1; k <= 5; k++)
		charge_ok(l, k, 0.1);
	dp_ledger_close(l);
	return slurp(f->path, len);
}

static void expect_four(struct fx *f, size_t torn)
{
	dp_ledger *l = open_ok(f->path, 1.0, 10, "owner=t", 0);
	dp_ledger_entry e;
	uint64_t k;

	assert_int_equal(dp_ledger_answers(l), 4);
	assert_int_equal(dp_ledger_spent_nano(l), 400000004u);
	assert_int_equal(dp_ledger_torn_bytes(l), torn);
	assert_int_equal(dp_ledger_last_k(l, &k), 0);
	assert_int_equal(k, 4);
	assert_int_equal(fsize(f->path), HS + 4 * RS);
	/* k = 5 never got an answer, so it may be charged now. */
	assert_int_equal(dp_ledger_lookup(l, 5, NULL), DP_ENOENT);
	assert_int_equal(dp_ledger_charge(l, 5, 0.1, &e), 0);
	assert_int_equal(e.seq, 5);
	assert_int_equal(e.total_nano, 500000005u);
	dp_ledger_close(l);
	assert_int_equal(fsize(f->path), HS + 5 * RS);
}

static void test_torn_every_offset(void **state)
{
	struct fx *f = *state;
	size_t len;
	unsigned char *b = five_records(f, &len);
	unsigned char *c = malloc(len);

	assert_int_equal(len, HS + 5 * RS);
	/* Cut inside the last record at every byte: 4 whole records + cut. */
	for (size_t cut = 0; cut < RS; cut++) {
		spit(f->path, b, HS + 4 * RS + cut);
		expect_four(f, cut);
	}
	/* The whole last record present but damaged at any byte (bad CRC). */
	for (size_t i = 0; i < RS; i++) {
		memcpy(c, b, len);
		c[HS + 4 * RS + i] ^= 0x5a;
		spit(f->path, c, len);
		expect_four(f, RS);
	}
	/* The file size reached the disk but the data did not: zeros. */
	memcpy(c, b, len);
	memset(c + HS + 4 * RS, 0, RS);
	spit(f->path, c, len);
	expect_four(f, RS);
	/* Untouched, all five remain. */
	spit(f->path, b, len);
	{
		dp_ledger *l = open_ok(f->path, 1.0, 10, "owner=t", 0);

		assert_int_equal(dp_ledger_answers(l), 5);
		assert_int_equal(dp_ledger_torn_bytes(l), 0);
		dp_ledger_close(l);
	}
	free(c);
	free(b);
}

static void test_corrupt_middle(void **state)
{
	struct fx *f = *state;
	size_t len;
	unsigned char *b = five_records(f, &len);
	unsigned char *c = malloc(len + RS);
	int rc;

	/* Any flipped byte in records 1..4 refuses to open. */
	for (size_t r = 0; r < 4; r++) {
		for (size_t i = 0; i < RS; i++) {
			memcpy(c, b, len);
			c[HS + r * RS + i] ^= 0x01;
			spit(f->path, c, len);
			open_fails(f->path, 1.0, 10, "owner=t", 0, DP_ECORRUPT);
			assert_int_equal(fsize(f->path), (off_t)len);  /* nothing truncated */
		}
	}
	memcpy(c, b, len);
	c[HS + RS + 7] ^= 0x80;
	spit(f->path, c, len);
	rc = dp_ledger_open(f->path, 1.0, 10, "owner=t", 0, &(dp_ledger *){ NULL });
	assert_int_equal(rc, DP_ECORRUPT);
	assert_non_null(strstr(dp_error_detail(rc), "record 2"));
	/* Damaged last whole record AND a partial one after it: two damaged
	 * records, not a single torn write. */
	memcpy(c, b, len);
	c[HS + 4 * RS + 10] ^= 0x01;
	spit(f->path, c, len + 0);
	{
		int fd = open(f->path, O_WRONLY | O_APPEND);

		assert_int_equal(write(fd, b + HS, 20), 20);
		close(fd);
	}
	open_fails(f->path, 1.0, 10, "owner=t", 0, DP_ECORRUPT);
	/* A whole record duplicated at the end (valid CRC, wrong seq). */
	memcpy(c, b, len);
	memcpy(c + len, b + HS + 4 * RS, RS);
	spit(f->path, c, len + RS);
	open_fails(f->path, 1.0, 10, "owner=t", 0, DP_ECORRUPT);
	/* Read-only inspection refuses the same way. */
	open_fails(f->path, 0, 0, NULL, DP_LEDGER_READONLY, DP_ECORRUPT);
	free(c);
	free(b);
}

static void test_bad_header(void **state)
{
	struct fx *f = *state;
	size_t len;
	unsigned char *b = five_records(f, &len);
	unsigned char *c = malloc(len);

	for (size_t i = 0; i < HS; i++) {
		memcpy(c, b, len);
		c[i] ^= 0x10;
		spit(f->path, c, len);
		open_fails(f->path, 1.0, 10, "owner=t", 0, DP_ECORRUPT);
	}
	/* Shorter than the header, down to empty. */
	for (size_t n = 0; n < HS; n++) {
		spit(f->path, b, n);
		open_fails(f->path, 1.0, 10, "owner=t", 0, DP_ECORRUPT);
		open_fails(f->path, 1.0, 10, "owner=t", DP_LEDGER_READONLY, DP_ECORRUPT);
		assert_int_equal(fsize(f->path), (off_t)n);
	}
	/* Not a ledger at all. */
	memset(c, 'a', len);
	spit(f->path, c, len);
	open_fails(f->path, 1.0, 10, "owner=t", 0, DP_ECORRUPT);
	/* A directory in its place. */
	unlink(f->path);
	assert_int_equal(mkdir(f->path, 0700), 0);
	assert_true(dp_ledger_open(f->path, 1.0, 10, "owner=t", 0,
				   &(dp_ledger *){ NULL }) < 0);
	rmdir(f->path);
	free(c);
	free(b);
}

/* Files built by the independent encoder: a correct one opens with the
 * expected state (cross-checks the documented format); each consistency
 * rule, broken with valid CRCs, is refused. */
static void test_crafted(void **state)
{
	struct fx *f = *state;
	unsigned char buf[HS + 4 * RS];
	uint32_t hc;
	dp_ledger *l;
	dp_ledger_entry e;
	const uint64_t cap = 1000000000u, K = 3;
	/* Rows: seq, k, charge, total, count. */
	struct { uint64_t r[3][5]; const char *what; } bad[] = {
		{ { { 1, 1, 10, 10, 1 }, { 2, 2, 10, 20, 2 }, { 4, 3, 10, 30, 4 } }, "seq gap" },
		{ { { 1, 1, 10, 10, 1 }, { 2, 2, 10, 25, 2 }, { 3, 3, 10, 35, 3 } }, "total" },
		{ { { 1, 1, 10, 10, 1 }, { 2, 2, 10, 20, 2 }, { 3, 3, 10, 31, 3 } }, "last total" },
		{ { { 1, 5, 10, 10, 1 }, { 2, 5, 10, 20, 2 }, { 3, 6, 10, 30, 3 } }, "k repeat" },
		{ { { 1, 5, 10, 10, 1 }, { 2, 4, 10, 20, 2 }, { 3, 6, 10, 30, 3 } }, "k down" },
		{ { { 1, 1, 10, 10, 1 }, { 2, 2, 10, 20, 1 }, { 3, 3, 10, 30, 3 } }, "count" },
		{ { { 1, 1, 10, 10, 1 }, { 2, 2, 0, 10, 2 }, { 3, 3, 10, 20, 3 } }, "zero charge" },
		{ { { 1, 1, 10, 10, 1 }, { 2, 2, cap, cap + 10, 2 }, { 3, 3, 1, cap + 11, 3 } },
		  "over eps cap" },
		{ { { 0, 1, 10, 10, 0 }, { 1, 2, 10, 20, 1 }, { 2, 3, 10, 30, 2 } }, "seq from 0" },
	};

	/* The good one: 3 records of 10, 20, 30 nano. */
	hc = mk_header(buf, 1, cap, K, "crafted");
	mk_record(buf + HS, 1, 7, 10, 10, 1, hc);
	mk_record(buf + HS + RS, 2, 8, 20, 30, 2, hc);
	mk_record(buf + HS + 2 * RS, 3, 100, 30, 60, 3, hc);
	spit(f->path, buf, HS + 3 * RS);
	l = open_ok(f->path, 1.0, K, "crafted", 0);
	assert_int_equal(dp_ledger_spent_nano(l), 60);
	assert_int_equal(dp_ledger_answers(l), 3);
	assert_int_equal(dp_ledger_lookup(l, 8, &e), 0);
	assert_int_equal(e.charge_nano, 20);
	assert_int_equal(e.time_ns, 1700000001ull * 1000000000ull);
	assert_int_equal(dp_ledger_charge(l, 101, 1e-9, NULL), DP_EBUDGET);  /* K = 3 */
	dp_ledger_close(l);

	for (size_t t = 0; t < sizeof(bad) / sizeof(bad[0]); t++) {
		hc = mk_header(buf, 1, cap, K, "crafted");
		for (int i = 0; i < 3; i++)
			mk_record(buf + HS + i * RS, bad[t].r[i][0], bad[t].r[i][1],
				  bad[t].r[i][2], bad[t].r[i][3], bad[t].r[i][4], hc);
		spit(f->path, buf, HS + 3 * RS);
		if (dp_ledger_open(f->path, 1.0, K, "crafted", 0, &l) != DP_ECORRUPT)
			fail_msg("crafted '%s' not refused", bad[t].what);
	}
	/* Four records under an answer cap of 3. */
	hc = mk_header(buf, 1, cap, K, "crafted");
	for (int i = 0; i < 4; i++)
		mk_record(buf + HS + i * RS, i + 1, i + 1, 10, 10 * (i + 1), i + 1, hc);
	spit(f->path, buf, HS + 4 * RS);
	open_fails(f->path, 1.0, K, "crafted", 0, DP_ECORRUPT);
	/* An intact final record bound to another header is not "torn". */
	hc = mk_header(buf, 1, cap, K, "crafted");
	mk_record(buf + HS, 1, 1, 10, 10, 1, hc);
	mk_record(buf + HS + RS, 2, 2, 10, 20, 2, hc ^ 1);
	spit(f->path, buf, HS + 2 * RS);
	open_fails(f->path, 1.0, K, "crafted", 0, DP_ECORRUPT);
	/* An unknown format version, with a valid CRC. */
	mk_header(buf, 2, cap, K, "crafted");
	spit(f->path, buf, HS);
	open_fails(f->path, 1.0, K, "crafted", 0, DP_ECORRUPT);
	/* Garbage after the identity's NUL, with a valid CRC. */
	mk_header(buf, 1, cap, K, "crafted");
	buf[200] = 1;
	le32(buf + 252, crc(buf, 252));
	spit(f->path, buf, HS);
	open_fails(f->path, 1.0, K, "crafted", 0, DP_ECORRUPT);
}

/* ---- reserve-ahead (docs/ledger.md §9) ---- */

static int sync_calls;

static int counting_sync(int fd)
{
	sync_calls++;
	return fdatasync(fd);
}

/* The flags of record seq (1-based), read from the file. */
/* A little-endian field of record seq (1-based), read from the file:
 * `bytes` bytes at offset `off` of the record. */
static uint64_t rec_field(const char *path, uint64_t seq, int off, int bytes)
{
	unsigned char r[RS];
	uint64_t v = 0;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, r, RS, (off_t)(HS + (seq - 1) * RS)), RS);
	close(fd);
	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | r[off + i];
	return v;
}

/* The record's flags (offset 4) and k (offset 16), docs/ledger.md §2. */
static uint32_t rec_flags(const char *path, uint64_t seq)
{
	return (uint32_t)rec_field(path, seq, 4, 4);
}

static uint64_t rec_k(const char *path, uint64_t seq)
{
	return rec_field(path, seq, 16, 8);
}

static void test_ahead_cycle(void **state)
{
	struct fx *f = *state;
	/* 0.25 is exact: 250000000 nano; K = 4 and cap 1.0 fit four shares. */
	dp_ledger *l = open_ok(f->path, 1.0, 4, "ahead", 0);
	bool cov = true;

	dp_file_set_sync_hook(counting_sync);
	sync_calls = 0;
	/* 1: nothing reserved yet, so charged and synced before it may leave */
	assert_int_equal(dp_ledger_charge_ahead(l, 1, 0.25, &cov), 0);
	assert_false(cov);
	assert_int_equal(sync_calls, 1);
	assert_int_equal(fsize(f->path), HS + RS);
	assert_int_equal(dp_ledger_spent_nano(l), 250000000u);
	/* after the send: a reservation alone, synced */
	assert_int_equal(dp_ledger_settle(l, 0.25), 0);
	assert_int_equal(sync_calls, 2);
	assert_int_equal(dp_ledger_reserved_nano(l), 250000000u);
	assert_int_equal(fsize(f->path), HS + 2 * RS);
	assert_int_equal(rec_flags(f->path, 2), 5);
	assert_int_equal(dp_ledger_answers(l), 2);
	assert_int_equal(dp_ledger_spent_nano(l), 500000000u);
	/* 2: covered -- no write, no sync before the answer leaves */
	assert_int_equal(dp_ledger_charge_ahead(l, 2, 0.25, &cov), 0);
	assert_true(cov);
	assert_int_equal(sync_calls, 2);
	assert_int_equal(fsize(f->path), HS + 2 * RS);
	assert_int_equal(dp_ledger_charge_ahead(l, 2, 0.25, &cov), DP_ESTATE);  /* a repeat */
	assert_int_equal(dp_ledger_settle(l, 0.25), 0);   /* its record + the next share */
	assert_int_equal(sync_calls, 3);
	assert_int_equal(rec_flags(f->path, 3), 3);
	assert_int_equal(dp_ledger_answers(l), 3);
	assert_int_equal(dp_ledger_spent_nano(l), 750000000u);
	/* 3 and 4: covered; the last share fits the caps, then nothing more */
	assert_int_equal(dp_ledger_charge_ahead(l, 3, 0.25, &cov), 0);
	assert_true(cov);
	assert_int_equal(dp_ledger_settle(l, 0.25), 0);
	assert_int_equal(dp_ledger_spent_nano(l), 1000000000u);
	assert_int_equal(dp_ledger_charge_ahead(l, 7, 0.25, &cov), 0);
	assert_true(cov);
	assert_int_equal(dp_ledger_settle(l, 0.25), 0);   /* K reached: no share */
	assert_int_equal(rec_flags(f->path, 5), 2);
	assert_int_equal(dp_ledger_reserved_nano(l), 0);
	assert_int_equal(dp_ledger_answers(l), 4);
	assert_int_equal(dp_ledger_spent_nano(l), 1000000000u);
	assert_int_equal(dp_ledger_charge_ahead(l, 8, 0.25, &cov), DP_EBUDGET);
	assert_int_equal(dp_ledger_settle(l, 0.25), 0);   /* nothing to do */
	assert_int_equal(fsize(f->path), HS + 5 * RS);
	dp_ledger_close(l);

	/* Reopened: the same totals; every answer found, the reservation
	 * record is not an answer. */
	l = open_ok(f->path, 1.0, 4, "ahead", 0);
	assert_int_equal(dp_ledger_answers(l), 4);
	assert_int_equal(dp_ledger_spent_nano(l), 1000000000u);
	for (uint64_t k = 1; k <= 3; k++)
		assert_int_equal(dp_ledger_lookup(l, k, NULL), 0);
	assert_int_equal(dp_ledger_lookup(l, 7, NULL), 0);
	assert_int_equal(dp_ledger_lookup(l, 4, NULL), DP_ENOENT);
	assert_int_equal(dp_ledger_lookup(l, 5, NULL), DP_ENOENT);
	dp_ledger_close(l);

	/* A reservation found at open counts as used: the next answer is
	 * charged anew (the crash bound of docs/ledger.md §9). */
	snprintf(f->path, sizeof(f->path), "%s/second", f->dir);
	l = open_ok(f->path, 1.0, 10, "ahead", 0);
	assert_int_equal(dp_ledger_charge_ahead(l, 1, 0.25, &cov), 0);
	assert_int_equal(dp_ledger_settle(l, 0.25), 0);
	dp_ledger_close(l);
	l = open_ok(f->path, 1.0, 10, "ahead", 0);
	assert_int_equal(dp_ledger_reserved_nano(l), 0);
	assert_int_equal(dp_ledger_charge_ahead(l, 2, 0.25, &cov), 0);
	assert_false(cov);
	assert_int_equal(dp_ledger_answers(l), 3);
	assert_int_equal(dp_ledger_spent_nano(l), 750000000u);
	dp_ledger_close(l);
}

/* The settle in two halves (owner/settle.c syncs on a worker): the record
 * is written without a sync; until a sync begun after it is reported the
 * reservation is not durable, and charge_ahead syncs it itself before it
 * covers an answer.  A report older than the last record does not count;
 * a failed one stops the ledger. */
static void test_settle_halves(void **state)
{
	struct fx *f = *state;
	dp_ledger *l = open_ok(f->path, 1.0, 8, "halves", 0);
	uint64_t seq, seq1;
	bool cov = false;

	dp_file_set_sync_hook(counting_sync);
	sync_calls = 0;
	assert_int_equal(dp_ledger_charge_ahead(l, 1, 0.125, &cov), 0);
	assert_false(cov);
	assert_int_equal(sync_calls, 1);
	/* written, not synced */
	assert_int_equal(dp_ledger_settle_write(l, 0.125, &seq), 0);
	assert_int_equal(seq, 2);
	assert_int_equal(sync_calls, 1);
	assert_int_equal(fsize(f->path), HS + 2 * RS);
	assert_int_equal(dp_ledger_reserved_nano(l), 125000000u);
	assert_string_equal(dp_ledger_path(l), f->path);
	/* no report yet: covering answer 2 syncs first */
	assert_int_equal(dp_ledger_charge_ahead(l, 2, 0.125, &cov), 0);
	assert_true(cov);
	assert_int_equal(sync_calls, 2);
	/* reported: covering answer 3 needs no sync */
	assert_int_equal(dp_ledger_settle_write(l, 0.125, &seq), 0);
	assert_int_equal(seq, 3);
	assert_int_equal(dp_ledger_synced(l, seq, 0), 0);
	assert_int_equal(dp_ledger_charge_ahead(l, 3, 0.125, &cov), 0);
	assert_true(cov);
	assert_int_equal(sync_calls, 2);
	/* a stale report (of record 4, after record 5 was written) does not
	 * make record 5's share durable */
	assert_int_equal(dp_ledger_settle_write(l, 0.125, &seq1), 0);
	assert_int_equal(dp_ledger_charge_ahead(l, 4, 0.125, &cov), 0);
	assert_true(cov);
	assert_int_equal(sync_calls, 3);
	assert_int_equal(dp_ledger_settle_write(l, 0.125, &seq), 0);
	assert_int_equal(seq, seq1 + 1);
	assert_int_equal(dp_ledger_synced(l, seq1, 0), 0);
	assert_int_equal(dp_ledger_charge_ahead(l, 5, 0.125, &cov), 0);
	assert_true(cov);
	assert_int_equal(sync_calls, 4);
	/* a record whose sync has not reported is synced before another one
	 * is written after it (only the final record may be torn) */
	assert_int_equal(dp_ledger_settle_write(l, 0, &seq), 0);   /* 5's record, no share */
	assert_int_equal(rec_flags(f->path, seq), 2);
	sync_calls = 0;
	assert_int_equal(dp_ledger_charge(l, 6, 0.125, NULL), 0);
	assert_int_equal(sync_calls, 2);
	/* nothing to write: seq 0 */
	dp_ledger_close(l);
	l = open_ok(f->path, 1.0, 8, "halves", 0);
	assert_int_equal(dp_ledger_settle_write(l, 0, &seq), 0);
	assert_int_equal(seq, 0);
	/* a failed report stops the ledger: no answer after it */
	assert_int_equal(dp_ledger_settle_write(l, 0.125, &seq), 0);
	assert_true(seq > 0);
	assert_int_equal(dp_ledger_synced(l, seq, EIO), DP_EIO);
	assert_true(dp_ledger_failed(l));
	assert_int_equal(dp_ledger_charge_ahead(l, 9, 0.125, &cov), DP_EIO);
	dp_ledger_close(l);
	dp_file_set_sync_hook(NULL);
}

/* Hand-built reserve-ahead logs: the consistency rules of §9. */
static void test_ahead_crafted(void **state)
{
	struct fx *f = *state;
	unsigned char buf[HS + 3 * RS];
	const uint64_t cap = 1000000000u, K = 10;
	/* Rows: flags, seq, k, charge, total, count. */
	struct { uint64_t r[3][6]; const char *what; } bad[] = {
		{ { { 0, 1, 1, 10, 10, 1 }, { 2, 2, 2, 0, 10, 1 }, { 0, 3, 3, 10, 20, 2 } },
		  "covered without a reservation before it" },
		{ { { 0, 1, 1, 10, 10, 1 }, { 5, 2, 9, 10, 20, 2 }, { 2, 3, 3, 0, 20, 2 } },
		  "reservation with a k" },
		{ { { 0, 1, 1, 10, 10, 1 }, { 4, 2, 0, 10, 20, 2 }, { 0, 3, 3, 10, 30, 3 } },
		  "no-answer without the reserve bit" },
		{ { { 1, 1, 1, 20, 20, 1 }, { 2, 2, 2, 0, 20, 2 }, { 0, 3, 3, 10, 30, 3 } },
		  "count not grown by the reservation" },
		{ { { 0, 1, 1, 10, 10, 1 }, { 5, 2, 0, 0, 10, 2 }, { 2, 3, 3, 0, 10, 2 } },
		  "reservation of zero" },
		{ { { 0, 1, 1, 10, 10, 1 }, { 5, 2, 0, 10, 20, 2 }, { 2, 3, 3, 5, 25, 2 } },
		  "charge on a covered answer that reserves nothing" },
		{ { { 0, 1, 1, 10, 10, 1 }, { 5, 2, 0, 10, 20, 2 }, { 8, 3, 3, 0, 20, 2 } },
		  "unknown flag" },
	};
	/* The good one: answer, reservation, covered answer reserving again. */
	uint64_t good[3][6] = { { 0, 1, 1, 10, 10, 1 }, { 5, 2, 0, 10, 20, 2 }, { 3, 3, 4, 10, 30, 3 } };
	dp_ledger *l;

	for (int t = -1; t < (int)(sizeof(bad) / sizeof(bad[0])); t++) {
		uint32_t hc = mk_header(buf, 1, cap, K, "crafted");

		for (int i = 0; i < 3; i++) {
			const uint64_t *r = t < 0 ? good[i] : bad[t].r[i];
			unsigned char *p = buf + HS + i * RS;

			mk_record(p, r[1], r[2], r[3], r[4], r[5], hc);
			le32(p + 4, (uint32_t)r[0]);
			le32(p + 60, crc(p, 60));
		}
		spit(f->path, buf, HS + 3 * RS);
		if (t < 0) {
			l = open_ok(f->path, 1.0, K, "crafted", 0);
			assert_int_equal(dp_ledger_answers(l), 3);
			assert_int_equal(dp_ledger_spent_nano(l), 30);
			assert_int_equal(dp_ledger_lookup(l, 4, NULL), 0);
			assert_int_equal(dp_ledger_lookup(l, 2, NULL), DP_ENOENT);
			assert_int_equal(dp_ledger_reserved_nano(l), 0);
			dp_ledger_close(l);
		} else if (dp_ledger_open(f->path, 1.0, K, "crafted", 0, &l) != DP_ECORRUPT) {
			fail_msg("crafted '%s' not refused", bad[t].what);
		}
	}
}

/* ---- I/O failure ---- */

static int hook_calls;

static int failing_sync(int fd)
{
	(void)fd;
	hook_calls++;
	errno = EIO;
	return -1;
}

static void test_sync_failure(void **state)
{
	struct fx *f = *state;
	dp_ledger *l = open_ok(f->path, 1.0, 10, "", 0);
	dp_ledger_entry e = { .seq = 99 };

	charge_ok(l, 1, 0.25);
	hook_calls = 0;
	dp_file_set_sync_hook(failing_sync);
	assert_int_equal(dp_ledger_charge(l, 2, 0.25, &e), DP_EIO);
	assert_int_equal(hook_calls, 1);
	assert_int_equal(e.seq, 99);
	assert_int_equal(dp_ledger_failed(l), 1);
	/* Counted (it may be on disk), and nothing is left. */
	assert_int_equal(dp_ledger_answers(l), 2);
	assert_int_equal(dp_ledger_spent_nano(l), 500000000u);
	assert_int_equal(dp_ledger_left_nano(l), 0);
	/* Permanently failed; the sync is never tried again. */
	assert_int_equal(dp_ledger_charge(l, 3, 0.25, NULL), DP_EIO);
	dp_file_set_sync_hook(NULL);
	assert_int_equal(dp_ledger_charge(l, 4, 0.25, NULL), DP_EIO);
	assert_int_equal(dp_ledger_check(l, 4, 0.25), DP_EIO);
	assert_int_equal(dp_ledger_lookup(l, 1, NULL), DP_EIO);
	assert_int_equal(hook_calls, 1);
	assert_int_equal(fsize(f->path), HS + 2 * RS);  /* only the one attempt */
	dp_ledger_close(l);

	/* The record reached the file, so it counts: Σ ledger >= Σ released. */
	l = open_ok(f->path, 1.0, 10, "", 0);
	assert_int_equal(dp_ledger_answers(l), 2);
	assert_int_equal(dp_ledger_spent_nano(l), 500000000u);
	assert_int_equal(dp_ledger_lookup(l, 2, &e), 0);
	assert_int_equal(dp_ledger_charge(l, 2, 0.25, NULL), DP_ESTATE);
	charge_ok(l, 3, 0.25);
	dp_ledger_close(l);

	/* A failing sync at creation leaves no ledger behind. */
	{
		char p2[160];

		snprintf(p2, sizeof(p2), "%s/new", f->dir);
		dp_file_set_sync_hook(failing_sync);
		open_fails(p2, 1.0, 10, "", 0, DP_EIO);
		assert_int_equal(access(p2, F_OK), -1);
		/* ...and a failing sync at open refuses to open. */
		open_fails(f->path, 1.0, 10, "", 0, DP_EIO);
		dp_file_set_sync_hook(NULL);
	}
}

/* A real write failure: RLIMIT_FSIZE in a child makes write() short (limit
 * inside the record) or fail (limit at the end).  Exit code 0 = as expected. */
static int write_failure_child(const char *path, off_t extra)
{
	struct rlimit rl;
	dp_ledger *l;

	signal(SIGXFSZ, SIG_IGN);
	if (dp_ledger_open(path, 1.0, 10, "", 0, &l) != 0)
		return 10;
	rl.rlim_cur = rl.rlim_max = (rlim_t)(HS + 2 * RS + extra);
	if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
		return 11;
	if (dp_ledger_charge(l, 3, 0.25, NULL) != DP_EIO)
		return 12;
	if (!dp_ledger_failed(l) || dp_ledger_answers(l) != 3 || dp_ledger_left_nano(l) != 0)
		return 13;
	if (dp_ledger_charge(l, 4, 0.25, NULL) != DP_EIO)
		return 14;
	dp_ledger_close(l);
	return 0;
}

static void test_write_failure(void **state)
{
	struct fx *f = *state;
	const off_t extras[] = { 10, 0 };

	for (size_t t = 0; t < 2; t++) {
		dp_ledger *l;
		pid_t pid;
		int st;

		unlink(f->path);
		l = open_ok(f->path, 1.0, 10, "", 0);
		charge_ok(l, 1, 0.25);
		charge_ok(l, 2, 0.25);
		dp_ledger_close(l);
		fflush(NULL);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(write_failure_child(f->path, extras[t]));
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
		assert_int_equal(fsize(f->path), HS + 2 * RS + extras[t]);
		/* The short write left a torn tail, dropped at open. */
		l = open_ok(f->path, 1.0, 10, "", 0);
		assert_int_equal(dp_ledger_torn_bytes(l), (size_t)extras[t]);
		assert_int_equal(dp_ledger_answers(l), 2);
		assert_int_equal(dp_ledger_spent_nano(l), 500000000u);
		charge_ok(l, 3, 0.25);
		dp_ledger_close(l);
	}
}

/* ---- read-only inspection ---- */

static void test_readonly(void **state)
{
	struct fx *f = *state;
	dp_ledger *l = open_ok(f->path, 2.0, 7, "owner=ro", 0);
	int fd;

	charge_ok(l, 1, 0.5);
	charge_ok(l, 2, 0.5);
	dp_ledger_close(l);
	fd = open(f->path, O_WRONLY | O_APPEND);
	assert_int_equal(write(fd, "0123456789abcdefghij", 20), 20);
	close(fd);
	l = open_ok(f->path, 0, 0, NULL, DP_LEDGER_READONLY);
	assert_int_equal(dp_ledger_answers(l), 2);
	assert_int_equal(dp_ledger_torn_bytes(l), 20);
	assert_int_equal(dp_ledger_cap_nano(l), 2000000000u);
	assert_int_equal(dp_ledger_answers_cap(l), 7);
	assert_string_equal(dp_ledger_identity(l), "owner=ro");
	assert_int_equal(dp_ledger_charge(l, 3, 0.5, NULL), DP_ESTATE);
	assert_int_equal(dp_ledger_lookup(l, 2, NULL), 0);
	dp_ledger_close(l);
	assert_int_equal(fsize(f->path), HS + 2 * RS + 20);  /* kept */
}

/* ---- crash test: SIGKILL at random moments ----
 *
 * A child opens the ledger and charges k = last+1, last+2, ... in a loop; it
 * reports k to the parent over a pipe only after dp_ledger_charge returned 0
 * (the answer "leaves" only after the sync).  A sync hook sleeps 0-2 ms before
 * the real fdatasync and the child sleeps 0-0.5 ms before "sending", so kills
 * land between write and sync and between sync and send as well.  The parent
 * SIGKILLs it after a random 0-25 ms, reopens and checks the invariants. */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void sleep_us(uint64_t us)
{
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int slow_sync(int fd)
{
	sleep_us(rnd() % 2000);
	return fdatasync(fd);
}

struct crash_cfg {
	double cap;
	uint64_t K;
	double charge;
	uint64_t charge_nano;  /* by hand: ceil of the exact double */
	uint64_t final;        /* answers when exhausted, by hand; 0 = not exhausted */
};

static void crash_child(const char *path, const struct crash_cfg *c, int wfd, uint64_t seed,
			bool ahead, uint64_t sent)
{
	dp_ledger *l;
	uint64_t k = 0;

	rng_state = seed;
	dp_file_set_sync_hook(slow_sync);
	if (dp_ledger_open(path, c->cap, c->K, "crash", 0, &l) != 0)
		_exit(10);
	if (dp_ledger_last_k(l, &k) != 0)
		k = 0;
	/* Ids never repeat (the learner's never do): an answer sent under a
	 * reservation may be missing from the ledger. */
	if (ahead && sent > k)
		k = sent;
	/* Charge, "send" (the pipe), and with reserve-ahead (docs/ledger.md
	 * §9) settle with the next share. */
	for (;;) {
		bool cov;
		int rc = ahead ? dp_ledger_charge_ahead(l, ++k, c->charge, &cov)
			       : dp_ledger_charge(l, ++k, c->charge, NULL);

		if (rc == DP_EBUDGET) {
			for (;;)
				pause();
		}
		if (rc != 0)
			_exit(11);
		sleep_us(rnd() % 500);  /* "sending" */
		if (write(wfd, &k, sizeof(k)) != (ssize_t)sizeof(k))
			_exit(12);
		if (!ahead)
			continue;
		sleep_us(rnd() % 200);
		if (dp_ledger_settle(l, c->charge) != 0)
			_exit(14);
	}
}

/* A power cut after the kill: a record written after its answer left (a
 * covered answer's, or a reservation alone, docs/ledger.md §9) may not be
 * synced yet -- unless a later answer was sent under it, which waits for
 * that sync.  Drop such a final record half of the time, as the disk
 * might. */
static bool power_cut(const char *path, uint64_t last_sent)
{
	off_t n = access(path, F_OK) == 0 ? fsize(path) : 0;   /* killed before creating it */
	uint64_t seq = n > HS ? (uint64_t)(n - HS) / RS : 0, before;
	uint32_t fl;

	if (seq == 0 || (rnd() & 1))
		return false;
	fl = rec_flags(path, seq);
	if (fl & 2)
		before = rec_k(path, seq);           /* its own answer */
	else if ((fl & 4) && seq > 1)
		before = rec_k(path, seq - 1);       /* the answer it follows */
	else
		return false;
	if (before != last_sent)
		return false;
	assert_int_equal(truncate(path, n - RS), 0);
	return true;
}

static void crash_rounds(struct fx *f, bool ahead);

static void test_crash_kill(void **state)
{
	crash_rounds(*state, false);
}

/* The same kills at random points of the charge/send/settle cycle, and
 * power cuts: the durable total still covers every answer sent, and each
 * kill loses at most one share. */
static void test_crash_kill_ahead(void **state)
{
	crash_rounds(*state, true);
}

static void crash_rounds(struct fx *f, bool ahead)
{
	/* 1/30 = 0.0333...33 in binary is above 1/30: 33333334 nano;
	 * floor(1e9 / 33333334) = 29.  0.01 is above 0.01: 10000001;
	 * 25 by K.  0.02 is above: 20000001; 24 * 20000001 = 480000024 and
	 * 25 * that = 500000025 > 5e8, so 24.  0.001 is above: 1000001. */
	const struct crash_cfg cfgs[] = {
		{ 1.0, 1000, 1.0 / 30, 33333334u, 29 },
		{ 100.0, 25, 0.01, 10000001u, 25 },
		{ 0.5, 1000, 0.02, 20000001u, 24 },
		{ 1000.0, 1000000, 0.001, 1000001u, 0 },
		{ 1000.0, 1000000, 0.001, 1000001u, 0 },
		{ 1000.0, 1000000, 0.001, 1000001u, 0 },
	};
	const int kills_per_round = 10;
	const char *env = getenv("DP_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 0x1ed9e5eedull;
	int total_kills = 0, idle_at_cap = 0, cuts = 0;

	print_message("crash test seed=0x%llx (set DP_TEST_SEED to vary)\n",
		      (unsigned long long)seed);
	rng_state = seed;
	for (size_t r = 0; r < sizeof(cfgs) / sizeof(cfgs[0]); r++) {
		const struct crash_cfg *c = &cfgs[r];
		uint64_t reported = 0, last_reported = 0, in_ledger = 0, v;
		uint64_t *ks = calloc(200000, sizeof(*ks));
		uint64_t unrecorded[16] = { 0 };
		char path[160];
		dp_ledger *l;

		assert_non_null(ks);
		snprintf(path, sizeof(path), "%s/crash%zu", f->dir, r);
		for (int kill_no = 0; kill_no < kills_per_round; kill_no++) {
			int p[2], st;
			uint64_t child_seed = rnd();
			pid_t pid;
			ssize_t n;

			assert_int_equal(pipe(p), 0);
			fflush(NULL);
			pid = fork();
			assert_true(pid >= 0);
			if (pid == 0) {
				close(p[0]);
				crash_child(path, c, p[1], child_seed, ahead, last_reported);
				_exit(13);
			}
			close(p[1]);
			/* Every other kill waits (up to 2 s) for the child's first
			 * answer, so that a loaded machine, where a child may not
			 * run at all within the random delay, still kills inside
			 * the charge/send/settle cycle; the others can land
			 * anywhere, the ledger's open included. */
			if (kill_no % 2 == 1) {
				struct pollfd pf = { .fd = p[0], .events = POLLIN };

				if (poll(&pf, 1, 2000) == 1 &&
				    read(p[0], &v, sizeof(v)) == (ssize_t)sizeof(v)) {
					assert_true(v > last_reported);
					last_reported = v;
					ks[reported++] = v;
				}
			}
			sleep_us(rnd() % 25000);
			assert_int_equal(kill(pid, SIGKILL), 0);
			assert_int_equal(waitpid(pid, &st, 0), pid);
			if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))
				fail_msg("child ended on its own: status 0x%x", st);
			total_kills++;
			for (;;) {
				n = read(p[0], &v, sizeof(v));
				if (n != (ssize_t)sizeof(v))
					break;
				assert_true(v > last_reported);  /* ids strictly increase */
				last_reported = v;
				assert_true(reported < 200000);
				ks[reported++] = v;
			}
			assert_int_equal(n, 0);
			close(p[0]);

			if (ahead) {
				cuts += power_cut(path, last_reported);
				/* The last answer sent may have no record: it left
				 * under the previous record's share. */
				if (reported > 0)
					unrecorded[kill_no] = ks[reported - 1];
			}
			/* The parent restarts the "daemon": it must open. */
			l = open_ok(path, c->cap, c->K, "crash", 0);
			assert_true(dp_ledger_answers(l) >= reported);
			assert_true(dp_ledger_spent_nano(l) >= reported * c->charge_nano);
			assert_int_equal(dp_ledger_spent_nano(l),
					 dp_ledger_answers(l) * c->charge_nano);
			assert_true(dp_ledger_answers(l) <= c->K);
			assert_true(dp_ledger_spent_nano(l) <= dp_ledger_cap_nano(l));
			/* At most one share per kill was lost: an answer recorded
			 * but not sent, or a reservation. */
			assert_true(dp_ledger_answers(l) - reported <= (uint64_t)kill_no + 1);
			for (uint64_t i = 0; i < reported; i++) {
				bool may_miss = false;

				for (int j = 0; ahead && j <= kill_no; j++)
					may_miss |= unrecorded[j] == ks[i];
				if (!may_miss)
					assert_int_equal(dp_ledger_lookup(l, ks[i], NULL), 0);
			}
			if (c->final && dp_ledger_answers(l) == c->final)
				idle_at_cap++;
			in_ledger = dp_ledger_answers(l);
			dp_ledger_close(l);
		}
		/* Finally exhaust it without kills: exactly the hand-computed cap. */
		l = open_ok(path, c->cap, c->K, "crash", 0);
		if (c->final) {
			uint64_t k = 0;
			int rc;

			dp_ledger_last_k(l, &k);
			do {
				bool cov;

				if (!ahead) {
					rc = dp_ledger_charge(l, ++k, c->charge, NULL);
					continue;
				}
				rc = dp_ledger_charge_ahead(l, ++k, c->charge, &cov);
				if (rc == 0)
					assert_int_equal(dp_ledger_settle(l, c->charge), 0);
			} while (rc == 0);
			assert_int_equal(rc, DP_EBUDGET);
			assert_int_equal(dp_ledger_answers(l), c->final);
			assert_int_equal(dp_ledger_spent_nano(l), c->final * c->charge_nano);
		}
		print_message("round %zu: after %d kills %llu answers sent, %llu in the ledger "
			      "(recorded, never sent: conservative)\n", r, kills_per_round,
			      (unsigned long long)reported, (unsigned long long)in_ledger);
		dp_ledger_close(l);
		free(ks);
	}
	assert_true(total_kills >= 50);
	print_message("%s: %d kills, %d power cuts, %d reopen checks found the answer cap "
		      "reached\n", ahead ? "reserve-ahead" : "charge-then-send", total_kills, cuts,
		      idle_at_cap);
	if (ahead)
		assert_true(cuts >= 5);   /* 13-24 of 60 over 8 seeds: fewer means the
					     emulation no longer finds a record to cut */
}

/* ---- units (docs/ledger.md §2, §3) ---- */

static void test_torn_every_offset_rho(void **state)
{
	in_rho(test_torn_every_offset, state);
}

static void test_ahead_cycle_rho(void **state)
{
	in_rho(test_ahead_cycle, state);
}

static uint64_t get64le(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* A Gaussian ledger's header: version 2, the unit, the slack and the
 * delta where docs/ledger.md §3 puts them; a Laplace one is version 1
 * with the bytes of units zero, byte for byte the file of before units. */
static void test_unit_header(void **state)
{
	struct fx *f = *state;
	const double delta = 1e-6;
	unsigned char *b;
	uint64_t bits;
	size_t len;
	dp_ledger *l;

	l = open_ok(f->path, 1.0, 4, "owner=l job=a", 0);
	dp_ledger_close(l);
	b = slurp(f->path, &len);
	assert_int_equal(len, HS);
	assert_int_equal(b[8], 1);
	for (size_t i = 48 + strlen("owner=l job=a"); i < 252; i++)
		assert_int_equal(b[i], 0);
	free(b);
	snprintf(f->path, sizeof(f->path), "%s/gauss", f->dir);
	/* the slack 3e-9 is the double 2.99999999999999998004...e-9:
	 * rounded up, 3 nano-epsilon */
	assert_int_equal(dp_ledger_open_gauss(f->path, 0.5, delta, 3e-9, 4, "owner=g job=b", 0, &l),
			 0);
	assert_int_equal(dp_ledger_unit(l), DP_LEDGER_UNIT_RHO);
	assert_true(dp_ledger_delta(l) == delta);
	assert_int_equal(dp_ledger_slack_nano(l), 3);
	assert_int_equal(dp_ledger_cap_nano(l), 500000000u);
	dp_ledger_close(l);
	b = slurp(f->path, &len);
	assert_int_equal(b[8], 2);
	assert_int_equal(get64le(b + 24), 500000000u);
	assert_int_equal(b[176], 2);
	assert_int_equal(get64le(b + 184), 3);
	memcpy(&bits, &delta, sizeof(bits));
	assert_true(get64le(b + 192) == bits);
	for (size_t i = 200; i < 252; i++)
		assert_int_equal(b[i], 0);
	free(b);
	/* reopened with the same mechanism; read-only, by either open */
	assert_int_equal(dp_ledger_open_gauss(f->path, 0.5, delta, 3e-9, 4, "owner=g job=b", 0, &l),
			 0);
	dp_ledger_close(l);
	assert_int_equal(dp_ledger_open(f->path, 0, 0, NULL, DP_LEDGER_READONLY, &l), 0);
	assert_int_equal(dp_ledger_unit(l), DP_LEDGER_UNIT_RHO);
	assert_true(dp_ledger_delta(l) == delta);
	assert_int_equal(dp_ledger_slack_nano(l), 3);
	dp_ledger_close(l);
	/* another unit, delta or slack is refused: a job keeps its mechanism */
	open_fails(f->path, 0.5, 4, "owner=g job=b", 0, DP_EINVAL);
	assert_int_equal(dp_ledger_open_gauss(f->path, 0.5, 2e-6, 3e-9, 4, "owner=g job=b", 0, &l),
			 DP_EINVAL);
	assert_int_equal(dp_ledger_open_gauss(f->path, 0.5, delta, 5e-9, 4, "owner=g job=b", 0, &l),
			 DP_EINVAL);
	assert_int_equal(dp_ledger_open_gauss(f->path, 0.6, delta, 3e-9, 4, "owner=g job=b", 0, &l),
			 DP_EINVAL);
	/* in the file's unit: its cap is a rho */
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "caps differ from the file (file: rho "
			       "0.500000000, 4 answers; given: rho 0.59"));
	snprintf(f->path, sizeof(f->path), "%s/ledger", f->dir);
	assert_int_equal(dp_ledger_open_gauss(f->path, 1.0, delta, 3e-9, 4, "owner=l job=a", 0, &l),
			 DP_EINVAL);
	/* bad arguments */
	snprintf(f->path, sizeof(f->path), "%s/bad", f->dir);
	assert_int_equal(dp_ledger_open_gauss(f->path, 1.0, 0.0, 0, 4, "x", 0, &l), DP_EINVAL);
	assert_int_equal(dp_ledger_open_gauss(f->path, 1.0, 1.0, 0, 4, "x", 0, &l), DP_EINVAL);
	assert_int_equal(dp_ledger_open_gauss(f->path, 1.0, NAN, 0, 4, "x", 0, &l), DP_EINVAL);
	assert_int_equal(dp_ledger_open_gauss(f->path, 1.0, delta, -1e-9, 4, "x", 0, &l), DP_EINVAL);
	assert_int_equal(dp_ledger_open_gauss(f->path, 1.0, delta, INFINITY, 4, "x", 0, &l),
			 DP_EINVAL);
	assert_int_equal(access(f->path, F_OK), -1);
}

/* Charges in nano-rho, up to the cap exactly: the worked example of
 * docs/ledger.md §2 in rho.  A Laplace ledger's charges as zCDP. */
static void test_unit_charges(void **state)
{
	struct fx *f = *state;
	dp_ledger *l;
	double q;

	/* 1/3 is 333 333 333.33... nano-rho, charged 333 333 334: two fit in
	 * 1.0, the third would reach 1 000 000 002 */
	assert_int_equal(dp_ledger_open_gauss(f->path, 1.0, 1e-6, 0, 10, "g", 0, &l), 0);
	charge_ok(l, 1, 1.0 / 3);
	charge_ok(l, 2, 1.0 / 3);
	assert_int_equal(dp_ledger_spent_nano(l), 666666668u);
	assert_int_equal(dp_ledger_charge(l, 3, 1.0 / 3, NULL), DP_EBUDGET);
	assert_int_equal(dp_ledger_rho_pure_nano(l), 0);
	dp_ledger_close(l);
	/* the share that fits K = 3 times: exactly 999 999 999 */
	snprintf(f->path, sizeof(f->path), "%s/share", f->dir);
	assert_int_equal(dp_nano_share(1.0, 3, &q), 0);
	assert_int_equal(dp_ledger_open_gauss(f->path, 1.0, 1e-6, 0, 3, "g", 0, &l), 0);
	for (uint64_t k = 1; k <= 3; k++)
		charge_ok(l, k, q);
	assert_int_equal(dp_ledger_spent_nano(l), 999999999u);
	assert_int_equal(dp_ledger_left_nano(l), 1);
	assert_int_equal(dp_ledger_charge(l, 4, 1e-9, NULL), DP_EBUDGET);
	dp_ledger_close(l);
	assert_int_equal(dp_ledger_open_gauss(f->path, 1.0, 1e-6, 0, 3, "g", 0, &l), 0);
	assert_int_equal(dp_ledger_spent_nano(l), 999999999u);
	dp_ledger_close(l);
	/* Laplace: 0.1 is 100 000 001 nano-eps; as zCDP
	 * 100000001^2 / 2e9 = 5 000 000.1000000005 -> 5 000 001 nano-rho each,
	 * kept across a reopen */
	snprintf(f->path, sizeof(f->path), "%s/laplace", f->dir);
	l = open_ok(f->path, 1.0, 10, "l", 0);
	for (uint64_t k = 1; k <= 5; k++)
		charge_ok(l, k, 0.1);
	assert_int_equal(dp_ledger_rho_pure_nano(l), 25000005u);
	dp_ledger_close(l);
	l = open_ok(f->path, 0, 0, NULL, DP_LEDGER_READONLY);
	assert_int_equal(dp_ledger_rho_pure_nano(l), 25000005u);
	assert_int_equal(dp_ledger_slack_nano(l), 0);
	assert_true(dp_ledger_delta(l) == 0.0);
	dp_ledger_close(l);
}

/* What a build from before units does with a Gaussian file: its reader
 * accepts version 1 only, so the version field must say 2; a crafted
 * version-1 header with the unit bytes set is refused as damaged (the
 * reserved bytes of version 1), by this build as by the old one, so the
 * unit can never be dropped silently.  Damaged unit fields of version 2
 * are refused too. */
static void test_unit_old_reader(void **state)
{
	struct fx *f = *state;
	unsigned char h[HS + RS], g[HS];
	uint32_t hc;
	size_t len;
	unsigned char *b;
	dp_ledger *l;

	assert_int_equal(dp_ledger_open_gauss(f->path, 1.0, 1e-6, 0, 10, "g", 0, &l), 0);
	charge_ok(l, 1, 0.5);
	dp_ledger_close(l);
	b = slurp(f->path, &len);
	assert_int_equal(len, HS + RS);
	memcpy(g, b, HS);
	assert_true(b[8] == 2 && b[9] == 0 && b[10] == 0 && b[11] == 0);
	/* the same header claiming version 1: refused */
	memcpy(h, g, HS);
	h[8] = 1;
	le32(h + 252, crc(h, 252));
	spit(f->path, h, HS);
	assert_int_equal(dp_ledger_open(f->path, 0, 0, NULL, DP_LEDGER_READONLY, &l), DP_ECORRUPT);
	/* version 2 with a bad unit, delta or stray byte: refused */
	{
		const struct { size_t off; unsigned char v; } bad[] = {
			{ 176, 1 }, { 176, 3 }, { 180, 1 }, { 199, 0x7f }, { 199, 0xbf }, { 200, 1 },
			{ 251, 1 }, { 190, 0xff },
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			memcpy(h, g, HS);
			h[bad[i].off] = bad[i].v;
			if (bad[i].off == 190)   /* slack above DP_NANO_MAX */
				memset(h + 184, 0xff, 8);
			le32(h + 252, crc(h, 252));
			spit(f->path, h, HS);
			assert_int_equal(dp_ledger_open(f->path, 0, 0, NULL, DP_LEDGER_READONLY, &l),
					 DP_ECORRUPT);
		}
	}
	/* an independent encoder's version-2 file with one record reads back */
	hc = mk_header(h, 2, 1000000000u, 10, "g");
	h[176] = 2;
	le64(h + 184, 7);
	memcpy(h + 192, g + 192, 8);
	le32(h + 252, crc(h, 252));
	hc = crc(h, 252);
	mk_record(h + HS, 1, 1, 500000000u, 500000000u, 1, hc);
	spit(f->path, h, HS + RS);
	assert_int_equal(dp_ledger_open(f->path, 0, 0, NULL, DP_LEDGER_READONLY, &l), 0);
	assert_int_equal(dp_ledger_unit(l), DP_LEDGER_UNIT_RHO);
	assert_int_equal(dp_ledger_slack_nano(l), 7);
	assert_int_equal(dp_ledger_spent_nano(l), 500000000u);
	dp_ledger_close(l);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rounding_cap_third, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_rounding_cap_down, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_eps_share, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_eps_cap_exact, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_answer_cap_exact, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_reopen_keeps_totals, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_reopen_caps_mismatch, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_lock, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_creation, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_repeat_k, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_bad_charge_args, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_infinite, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_torn_every_offset, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_middle, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_bad_header, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_crafted, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_sync_failure, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_write_failure, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_readonly, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_crash_kill, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_ahead_cycle, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_settle_halves, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_crash_kill_ahead, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_ahead_crafted, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_torn_every_offset_rho, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_ahead_cycle_rho, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_unit_header, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_unit_charges, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_unit_old_reader, fx_setup, fx_teardown),
	};

	/* The torn-record tests log one warning per case; keep errors only. */
	dp_log_set_level(DP_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
