/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for common/core/ledgerset_lifetime.c: the lifetime cap that an
 * owner's ledger directory records, the history of its changes
 * (docs/ledger.md §11), and the step of the directory's format that
 * records it (format 2 -> 3, docs/ledger.md §10).
 *
 * Caps and charges are multiples of 0.25 epsilon (Q nano-epsilon), exact
 * in binary and in nano-epsilon, so every expected figure is exact. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/ledger.h"
#include "common/core/ledgerset.h"
#include "common/core/ledgerset_impl.h"
#include "common/core/log.h"
#include "common/core/nano.h"

#include "tmpdir.h"
#include "synccrash.h"

#define Q 250000000ull   /* 0.25 epsilon */
#define FORMAT_LINE "dpasync ledger directory format "

static const struct dp_ledgerset_init one = { 4 * Q, "test", NULL, 0 };

/* The path of directory `name` under the group's temporary directory. */
#define DIRNAME(buf, name) snprintf(buf, sizeof(buf), "%s/%s", dir, name)

static char *read_text(const char *d, const char *name)
{
	char p[300], *text = NULL;

	snprintf(p, sizeof(p), "%s/%s", d, name);
	if (dp_file_read_all(p, 1 << 20, &text, NULL) != 0)
		return NULL;
	return text;
}

static void write_text(const char *d, const char *name, const char *text)
{
	char p[300];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", d, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static bool has(const char *d, const char *name)
{
	char p[300];

	snprintf(p, sizeof(p), "%s/%s", d, name);
	return access(p, F_OK) == 0;
}

/* A directory of format 2 (the layout before the lifetime file) of owner
 * alice: its lock file, its format file and job J, which spent 0.5 in
 * two answers. */
static void make_v2(const char *d)
{
	char p[300];
	dp_ledger *l = NULL;
	int fd;

	assert_int_equal(mkdir(d, 0700), 0);
	snprintf(p, sizeof(p), "%s/lock", d);
	fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	write_text(d, DP__LEDGERSET_FORMAT_FILE, FORMAT_LINE "2\n");
	snprintf(p, sizeof(p), "%s/job-J.ledger", d);
	assert_int_equal(dp_ledger_open(p, 1.0, 4, "owner=alice job=J", 0, &l), 0);
	assert_int_equal(dp_ledger_charge(l, 1, 0.25, NULL), 0);
	assert_int_equal(dp_ledger_charge(l, 2, 0.25, NULL), 0);
	dp_ledger_close(l);
}

/* The cap, the number of changes and the format a read-only open sees. */
struct seen {
	int rc;             /* of dp_ledgerset_lifetime_get */
	uint64_t cap;
	size_t changes;
	unsigned format;
	uint64_t spent;
};

static struct seen look(const char *d)
{
	struct seen v = { 0 };
	dp_ledgerset *s = NULL;

	assert_int_equal(dp_ledgerset_open(d, NULL, DP_LEDGERSET_READONLY, NULL, &s), 0);
	v.rc = dp_ledgerset_lifetime_get(s, &v.cap);
	v.changes = dp_ledgerset_lifetime_count(s);
	v.format = dp_ledgerset_format(s);
	v.spent = dp_ledgerset_spent_except(s, NULL);
	dp_ledgerset_close(s);
	return v;
}

static void assert_same_change(const dp_ledgerset_change *a, const dp_ledgerset_change *b)
{
	assert_string_equal(a->time, b->time);
	assert_string_equal(a->user, b->user);
	assert_true(a->uid == b->uid);
	assert_string_equal(a->host, b->host);
	assert_string_equal(a->program, b->program);
	assert_true(a->first == b->first);
	assert_true(a->first || a->old_nano == b->old_nano);
	assert_true(a->new_nano == b->new_nano);
	assert_string_equal(a->reason, b->reason);
}

/* A new directory records the cap it is opened with, once: who, when,
 * where, the default reason; a later open with another cap keeps it. */
static void test_new(void **state)
{
	const struct dp_ledgerset_init cap15 = { 6 * Q, "ownerd", NULL, 0 },
				       cap25 = { 100 * Q, "ownerd", NULL, 0 };
	const dp_ledgerset_change *c;
	dp_ledgerset *s = NULL;
	struct passwd *pw = getpwuid(geteuid());
	char host[256] = "";
	struct stat st;
	uint64_t cap = 0;
	char p[300], d[256], *text;

	DIRNAME(d, "new");
	assert_int_equal(dp_ledgerset_open(d, "alice", 0, &cap15, &s), 0);
	assert_int_equal(dp_ledgerset_format(s), DP_LEDGERSET_FORMAT);
	assert_int_equal(dp_ledgerset_lifetime_get(s, &cap), 0);
	assert_true(cap == 6 * Q);
	assert_int_equal(dp_ledgerset_lifetime_count(s), 1);
	c = dp_ledgerset_lifetime_at(s, 0);
	assert_true(c->first && c->new_nano == 6 * Q);
	assert_string_equal(c->program, "ownerd");
	assert_string_equal(c->reason, "a new ledger directory");
	assert_true(c->uid == geteuid());
	if (pw != NULL)
		assert_string_equal(c->user, pw->pw_name);
	gethostname(host, sizeof(host) - 1);
	assert_string_equal(c->host, host);
	/* "2026-11-24T11:15:00Z" */
	assert_int_equal(strlen(c->time), 20);
	assert_true(c->time[10] == 'T' && c->time[19] == 'Z');
	dp_ledgerset_close(s);
	snprintf(p, sizeof(p), "%s/" DP__LEDGERSET_LIFETIME_FILE, d);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	/* Recorded once: another cap at the next open changes nothing. */
	assert_int_equal(dp_ledgerset_open(d, "alice", 0, &cap25, &s), 0);
	assert_int_equal(dp_ledgerset_lifetime_get(s, &cap), 0);
	assert_true(cap == 6 * Q);
	assert_int_equal(dp_ledgerset_lifetime_count(s), 1);
	dp_ledgerset_close(s);
	assert_true(look(d).cap == 6 * Q);

	/* No lifetime cap at all is recorded as such. */
	DIRNAME(d, "new-inf");
	assert_int_equal(dp_ledgerset_open(d, "alice", 0, &(struct dp_ledgerset_init){
		DP_NANO_INF, "ownerd", NULL, 0 }, &s), 0);
	dp_ledgerset_close(s);
	assert_true(look(d).cap == DP_NANO_INF);
	text = read_text(d, DP__LEDGERSET_LIFETIME_FILE);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"inf\""));
	free(text);
	(void)state;
}

/* A directory of format 2 migrates to 3 with the cap the first writable
 * open gives (and none: refused, nothing changed); every figure is kept;
 * the cap, once recorded, is never replaced by removing the format file. */
static void test_migrate(void **state)
{
	const struct dp_ledgerset_init big = { 40 * Q, "ownerd", NULL, 0 };
	dp_ledgerset *s = NULL;
	struct seen v;
	char d[256], *history, *text;

	DIRNAME(d, "v2");
	make_v2(d);
	v = look(d);
	assert_int_equal(v.format, 2);
	assert_int_equal(v.rc, DP_ENOENT);
	assert_int_equal(v.changes, 0);
	assert_true(v.spent == 2 * Q);

	assert_int_equal(dp_ledgerset_open(d, "alice", 0, NULL, &s), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "records no lifetime cap"));
	assert_int_equal(look(d).format, 2);
	assert_false(has(d, DP__LEDGERSET_LIFETIME_FILE));

	assert_int_equal(dp_ledgerset_open(d, "alice", 0, &one, &s), 0);
	assert_int_equal(dp_ledgerset_format(s), DP_LEDGERSET_FORMAT);
	assert_non_null(strstr(dp_ledgerset_lifetime_at(s, 0)->reason, "first open at format 3"));
	dp_ledgerset_close(s);
	v = look(d);
	assert_true(v.format == DP_LEDGERSET_FORMAT && v.rc == 0 && v.cap == 4 * Q && v.changes == 1);
	assert_true(v.spent == 2 * Q);

	/* Without its format file the directory reads as format 1 and is
	 * migrated again, but the recorded cap stays, byte for byte. */
	history = read_text(d, DP__LEDGERSET_LIFETIME_FILE);
	assert_non_null(history);
	assert_int_equal(unlink(path_of("v2/" DP__LEDGERSET_FORMAT_FILE)), 0);
	assert_int_equal(look(d).format, 1);
	assert_int_equal(dp_ledgerset_open(d, "alice", 0, &big, &s), 0);
	dp_ledgerset_close(s);
	v = look(d);
	assert_true(v.format == DP_LEDGERSET_FORMAT && v.cap == 4 * Q && v.changes == 1);
	text = read_text(d, DP__LEDGERSET_LIFETIME_FILE);
	assert_string_equal(text, history);
	free(text);
	free(history);
	(void)state;
}

static int open_one(const char *d)
{
	dp_ledgerset *s = NULL;
	int r = dp_ledgerset_open(d, "alice", 0, &one, &s);

	dp_ledgerset_close(s);
	return r;
}

/* The migration from 2 to 3 killed before and after each of its syncs,
 * and each sync failed: the directory reads as format 2 with no cap or as
 * 3 with the cap, with the same spend; the next open completes it. */
static void test_migrate_crash(void **state)
{
	int modes[] = { KILL_BEFORE, KILL_AFTER, FAIL };
	char name[32], d[256];

	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		int hit = 0;

		for (int at = 1;; at++) {
			struct seen v;
			int code;

			snprintf(name, sizeof(name), "mc-%zu-%d", m, at);
			DIRNAME(d, name);
			make_v2(d);
			code = in_child(at, modes[m], open_one, d);
			if (code == 0)
				break;
			assert_int_equal(code, modes[m] == FAIL ? 1 : 9);
			hit++;
			v = look(d);
			assert_true(v.spent == 2 * Q);
			assert_true((v.format == 2 && v.rc == DP_ENOENT) ||
				    (v.format >= 3 && v.rc == 0 && v.cap == 4 * Q));
			assert_int_equal(open_one(d), 0);
			v = look(d);
			assert_true(v.format == DP_LEDGERSET_FORMAT && v.cap == 4 * Q && v.changes == 1 &&
				    v.spent == 2 * Q);
		}
		/* the lifetime file's sync and its directory's, then the format's */
		assert_true(hit >= 4);
	}
	(void)state;
}

/* Lowering is recorded; raising is refused without the flag and recorded
 * with it; the same cap writes nothing; bad reasons and programs are
 * refused; a read-only set changes nothing; the history reads back. */
static void test_change(void **state)
{
	dp_ledgerset *s = NULL, *r = NULL;
	const dp_ledgerset_change *c;
	char d[256], *before, *after, longr[DP_LEDGERSET_REASON_MAX + 2];
	uint64_t cap = 0;

	DIRNAME(d, "change");
	assert_int_equal(dp_ledgerset_open(d, "alice", 0, &one, &s), 0);
	assert_int_equal(dp_ledgerset_lifetime_set(s, 2 * Q, 0, "ownerd", "stricter policy"), 0);
	assert_int_equal(dp_ledgerset_lifetime_count(s), 2);
	c = dp_ledgerset_lifetime_at(s, 1);
	assert_true(!c->first && c->old_nano == 4 * Q && c->new_nano == 2 * Q);
	assert_string_equal(c->program, "ownerd");
	assert_string_equal(c->reason, "stricter policy");

	before = read_text(d, DP__LEDGERSET_LIFETIME_FILE);
	assert_int_equal(dp_ledgerset_lifetime_set(s, 8 * Q, 0, "ownerd", "more"), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "raise-lifetime"));
	assert_int_equal(dp_ledgerset_lifetime_set(s, 2 * Q, 0, "x", "same"), 0);
	after = read_text(d, DP__LEDGERSET_LIFETIME_FILE);
	assert_string_equal(before, after);
	free(after);
	/* bad reasons and programs, a cap of 0 */
	memset(longr, 'x', sizeof(longr) - 1);
	longr[sizeof(longr) - 1] = '\0';
	assert_int_equal(dp_ledgerset_lifetime_set(s, Q, 0, "t", ""), DP_EINVAL);
	assert_int_equal(dp_ledgerset_lifetime_set(s, Q, 0, "t", "two\nlines"), DP_EINVAL);
	assert_int_equal(dp_ledgerset_lifetime_set(s, Q, 0, "t", longr), DP_EINVAL);
	assert_int_equal(dp_ledgerset_lifetime_set(s, Q, 0, "", "ok"), DP_EINVAL);
	assert_int_equal(dp_ledgerset_lifetime_set(s, 0, 0, "t", "ok"), DP_EINVAL);
	after = read_text(d, DP__LEDGERSET_LIFETIME_FILE);
	assert_string_equal(before, after);
	free(before);
	free(after);
	/* the longest reason, and a raise with the flag, to no cap at all */
	longr[DP_LEDGERSET_REASON_MAX] = '\0';
	assert_int_equal(dp_ledgerset_lifetime_set(s, 8 * Q, DP_LEDGERSET_ALLOW_RAISE,
						   "dpasync ledger raise-lifetime", longr), 0);
	assert_int_equal(dp_ledgerset_lifetime_set(s, DP_NANO_INF, DP_LEDGERSET_ALLOW_RAISE,
						   "dpasync ledger raise-lifetime", "testing"), 0);
	assert_int_equal(dp_ledgerset_lifetime_set(s, 3 * Q, 0, "ownerd", "back"), 0);
	assert_int_equal(dp_ledgerset_lifetime_get(s, &cap), 0);
	assert_true(cap == 3 * Q);
	assert_int_equal(dp_ledgerset_lifetime_count(s), 5);
	assert_true(dp_ledgerset_lifetime_at(s, 3)->new_nano == DP_NANO_INF);
	assert_true(dp_ledgerset_lifetime_at(s, 4)->old_nano == DP_NANO_INF);

	/* A read-only set reads the same history and changes nothing. */
	assert_int_equal(dp_ledgerset_open(d, NULL, DP_LEDGERSET_READONLY, NULL, &r), 0);
	assert_int_equal(dp_ledgerset_lifetime_count(r), 5);
	for (size_t i = 0; i < 5; i++)
		assert_same_change(dp_ledgerset_lifetime_at(s, i), dp_ledgerset_lifetime_at(r, i));
	assert_int_equal(dp_ledgerset_lifetime_set(r, Q, 0, "t", "no"), DP_ESTATE);
	dp_ledgerset_close(r);
	dp_ledgerset_close(s);
	(void)state;
}

static int raise_to_8(const char *d)
{
	dp_ledgerset *s = NULL;
	int r = dp_ledgerset_open(d, "alice", 0, &one, &s);

	if (r == 0)
		r = dp_ledgerset_lifetime_set(s, 8 * Q, DP_LEDGERSET_ALLOW_RAISE,
					      "dpasync ledger raise-lifetime", "a new study");
	dp_ledgerset_close(s);
	return r;
}

/* A raise killed before and after each sync, and each sync failed: the
 * directory reads the old cap and history or the new ones, never a mix. */
static void test_change_crash(void **state)
{
	int modes[] = { KILL_BEFORE, KILL_AFTER, FAIL };
	char name[32], d[256];

	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		int hit = 0;

		for (int at = 1;; at++) {
			dp_ledgerset *s = NULL, *r = NULL;
			size_t n;
			int code;

			snprintf(name, sizeof(name), "cc-%zu-%d", m, at);
			DIRNAME(d, name);
			assert_int_equal(dp_ledgerset_open(d, "alice", 0, &one, &s), 0);
			assert_int_equal(dp_ledgerset_lifetime_set(s, 2 * Q, 0, "ownerd", "lower"), 0);
			dp_ledgerset_close(s);
			assert_int_equal(dp_ledgerset_open(d, NULL, DP_LEDGERSET_READONLY, NULL, &s), 0);
			code = in_child(at, modes[m], raise_to_8, d);
			assert_int_equal(dp_ledgerset_open(d, NULL, DP_LEDGERSET_READONLY, NULL, &r), 0);
			n = dp_ledgerset_lifetime_count(r);
			assert_true(n == 2 || n == 3);
			for (size_t i = 0; i < 2; i++)
				assert_same_change(dp_ledgerset_lifetime_at(s, i),
						   dp_ledgerset_lifetime_at(r, i));
			assert_true(dp_ledgerset_lifetime_at(r, n - 1)->new_nano ==
				    (n == 2 ? 2 * Q : 8 * Q));
			dp_ledgerset_close(r);
			dp_ledgerset_close(s);
			if (code == 0) {
				assert_int_equal(n, 3);
				break;
			}
			assert_int_equal(code, modes[m] == FAIL ? 1 : 9);
			hit++;
		}
		/* the temporary file's sync and the directory's */
		assert_true(hit >= 2);
	}
	(void)state;
}

/* Damaged records are refused by every open, naming the problem; a
 * missing one at format 3 too, unless it is recovered on purpose. */
static void test_damaged(void **state)
{
	static const char *const bad[] = {
		"not json",
		"{}",
		"{\"changes\": []}",
		"{\"changes\": [{\"time\": \"t\", \"user\": \"u\", \"uid\": 1, \"host\": \"h\", "
		"\"program\": \"p\", \"old_nano\": 5, \"new_nano\": 1000000000, \"reason\": \"r\"}]}",
		"{\"changes\": [{\"time\": \"t\", \"user\": \"u\", \"uid\": 1, \"host\": \"h\", "
		"\"program\": \"p\", \"old_nano\": null, \"new_nano\": 0, \"reason\": \"r\"}]}",
		"{\"changes\": [{\"time\": \"t\", \"user\": \"u\", \"uid\": 1, \"host\": \"h\", "
		"\"program\": \"p\", \"old_nano\": null, \"new_nano\": \"infinite\", \"reason\": \"r\"}]}",
		"{\"changes\": [{\"time\": \"t\", \"user\": \"u\", \"uid\": 1, \"host\": \"h\", "
		"\"program\": \"p\", \"old_nano\": null, \"new_nano\": 1000000000, \"reason\": \"r\"}, "
		"{\"time\": \"t\", \"user\": \"u\", \"uid\": 1, \"host\": \"h\", \"program\": \"p\", "
		"\"old_nano\": 2000000000, \"new_nano\": 3000000000, \"reason\": \"r\"}]}",
		"{\"changes\": [{\"time\": \"t\", \"user\": \"u\", \"uid\": 1, \"host\": \"h\", "
		"\"program\": \"p\", \"old_nano\": null, \"new_nano\": 1000000000, \"reason\": \"r\"}, "
		"{\"time\": \"t\", \"user\": \"u\", \"uid\": 1, \"host\": \"h\", \"program\": \"p\", "
		"\"old_nano\": 1000000000, \"new_nano\": 1000000000, \"reason\": \"r\"}]}",
		"{\"changes\": [{\"time\": \"t\", \"user\": \"u\", \"uid\": 1, \"host\": \"h\", "
		"\"program\": \"p\", \"old_nano\": null, \"new_nano\": 1000000000, \"reason\": \"r\", "
		"\"who\": \"x\"}]}",
		"{\"changes\": [{\"time\": \"t\", \"user\": \"u\", \"uid\": 1, \"host\": \"h\", "
		"\"program\": \"p\", \"old_nano\": null, \"new_nano\": 1000000000}]}",
		"{\"changes\": [{\"time\": \"t\", \"user\": \"u\", \"uid\": -1, \"host\": \"h\", "
		"\"program\": \"p\", \"old_nano\": null, \"new_nano\": 1000000000, \"reason\": \"r\"}]}",
		"{\"changes\": [{\"time\": \"t\", \"user\": \"u\", \"uid\": 1, \"host\": \"h\", "
		"\"program\": \"p\", \"old_nano\": null, \"new_nano\": 1000000000, \"reason\": \"\\u0001\"}]}",
	};
	const struct dp_ledgerset_init rec = { 6 * Q, "dpasync ledger raise-lifetime", "restored", 0 };
	dp_ledgerset *s = NULL;
	struct seen v;
	char d[256];

	DIRNAME(d, "damaged");
	assert_int_equal(dp_ledgerset_open(d, "alice", 0, &one, &s), 0);
	dp_ledgerset_close(s);
	s = NULL;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_text(d, DP__LEDGERSET_LIFETIME_FILE, bad[i]);
		assert_int_equal(dp_ledgerset_open(d, NULL, DP_LEDGERSET_READONLY, NULL, &s),
				 DP_ECORRUPT);
		assert_non_null(strstr(dp_error_detail(DP_ECORRUPT), "is damaged"));
		assert_int_equal(dp_ledgerset_open(d, "alice", 0, &one, &s), DP_ECORRUPT);
		assert_null(s);
	}
	/* The valid one of the list, for contrast. */
	write_text(d, DP__LEDGERSET_LIFETIME_FILE, "{\"changes\": [{\"time\": \"t\", \"user\": "
		   "\"u\", \"uid\": 1, \"host\": \"h\", \"program\": \"p\", \"old_nano\": null, "
		   "\"new_nano\": 1000000000, \"reason\": \"r\"}]}");
	assert_true(look(d).cap == 4 * Q);

	/* Lost: refused by both opens, and by a recovery without a cap. */
	assert_int_equal(unlink(path_of("damaged/" DP__LEDGERSET_LIFETIME_FILE)), 0);
	assert_int_equal(dp_ledgerset_open(d, NULL, DP_LEDGERSET_READONLY, NULL, &s), DP_ECORRUPT);
	assert_non_null(strstr(dp_error_detail(DP_ECORRUPT), "raise-lifetime"));
	assert_int_equal(dp_ledgerset_open(d, "alice", 0, &one, &s), DP_ECORRUPT);
	assert_int_equal(dp_ledgerset_open(d, NULL, DP_LEDGERSET_RECOVER_LIFETIME, NULL, &s),
			 DP_ECORRUPT);
	assert_false(has(d, DP__LEDGERSET_LIFETIME_FILE));
	assert_int_equal(dp_ledgerset_open(d, NULL, DP_LEDGERSET_RECOVER_LIFETIME, &rec, &s), 0);
	dp_ledgerset_close(s);
	v = look(d);
	assert_true(v.cap == 6 * Q && v.changes == 1);
	(void)state;
}

static int setup(void **state)
{
	(void)state;
	dp_log_set_level(DP_LOG_ERROR);
	return tmpdir_setup("test_ledgerset_lifetime");
}

static int teardown(void **state)
{
	(void)state;
	return tmpdir_teardown();
}

/* The lifetime delta (format 4, docs/ledger.md §11): 0 unless set; a new
 * directory may start with one; raising it is refused without the flag,
 * recorded with it as a change of its own (the key "delta" only where it
 * changes), lowering always allowed, the same delta writes nothing; a
 * delta out of [0, 1) is refused; and a file whose change repeats both the
 * cap and the delta, or has a bad delta, is refused as damaged. */
static void test_delta(void **state)
{
	const struct dp_ledgerset_init gauss = { 4 * Q, "test", NULL, 1e-6 };
	const struct dp_ledgerset_init bad = { 4 * Q, "test", NULL, 1.0 };
	dp_ledgerset *s = NULL, *r = NULL;
	const dp_ledgerset_change *c;
	char d[256], *text, *at;

	DIRNAME(d, "delta");
	assert_int_equal(dp_ledgerset_open(d, "alice", 0, &one, &s), 0);
	assert_true(dp_ledgerset_lifetime_delta(s) == 0.0);
	text = read_text(d, DP__LEDGERSET_LIFETIME_FILE);
	assert_null(strstr(text, "delta"));
	free(text);
	assert_int_equal(dp_ledgerset_lifetime_set_delta(s, 1e-6, 0, "test", "gaussian"),
			 DP_EINVAL);
	assert_int_equal(dp_ledgerset_lifetime_count(s), 1);
	assert_int_equal(dp_ledgerset_lifetime_set_delta(s, 1e-6, DP_LEDGERSET_ALLOW_RAISE, "test",
							 "gaussian answers approved"), 0);
	assert_int_equal(dp_ledgerset_lifetime_count(s), 2);
	c = dp_ledgerset_lifetime_at(s, 1);
	assert_true(c->old_nano == 4 * Q && c->new_nano == 4 * Q && c->delta == 1e-6);
	assert_int_equal(dp_ledgerset_lifetime_set_delta(s, 1e-6, 0, "test", "same"), 0);
	assert_int_equal(dp_ledgerset_lifetime_count(s), 2);
	assert_int_equal(dp_ledgerset_lifetime_set_delta(s, -1e-9, DP_LEDGERSET_ALLOW_RAISE, "test",
							 "x"), DP_EINVAL);
	assert_int_equal(dp_ledgerset_lifetime_set_delta(s, 1.0, DP_LEDGERSET_ALLOW_RAISE, "test",
							 "x"), DP_EINVAL);
	/* a change of the cap keeps the delta */
	assert_int_equal(dp_ledgerset_lifetime_set(s, 2 * Q, 0, "test", "stricter"), 0);
	assert_true(dp_ledgerset_lifetime_delta(s) == 1e-6);
	assert_int_equal(dp_ledgerset_lifetime_set_delta(s, 1e-7, 0, "test", "stricter delta"), 0);
	dp_ledgerset_close(s);
	/* read back, read-only */
	assert_int_equal(dp_ledgerset_open(d, NULL, DP_LEDGERSET_READONLY, NULL, &r), 0);
	assert_int_equal(dp_ledgerset_lifetime_count(r), 4);
	assert_true(dp_ledgerset_lifetime_at(r, 0)->delta == 0.0);
	assert_true(dp_ledgerset_lifetime_at(r, 2)->delta == 1e-6);
	assert_true(dp_ledgerset_lifetime_delta(r) == 1e-7);
	dp_ledgerset_close(r);
	/* written where it changes only: changes 1 and 3 */
	text = read_text(d, DP__LEDGERSET_LIFETIME_FILE);
	at = strstr(text, "\"delta\"");
	assert_non_null(at);
	at = strstr(at + 1, "\"delta\"");
	assert_non_null(at);
	assert_null(strstr(at + 1, "\"delta\""));
	free(text);
	/* a change that changes nothing, and a bad delta: damaged; the same
	 * file with a changed delta reads (the control) */
	{
		static const char *const second[] = { "", ", \"delta\": 2", ", \"delta\": -1e-9",
						      ", \"delta\": 1e-6" };
		char buf[1024];

		for (size_t i = 0; i < sizeof(second) / sizeof(second[0]); i++) {
			snprintf(buf, sizeof(buf), "{\"changes\": [{\"time\": \"t\", \"user\": "
				 "\"u\", \"uid\": 0, \"host\": \"h\", \"program\": \"p\", "
				 "\"old_nano\": null, \"new_nano\": 5, \"reason\": \"r\"}, "
				 "{\"time\": \"t\", \"user\": \"u\", \"uid\": 0, \"host\": "
				 "\"h\", \"program\": \"p\", \"old_nano\": 5, \"new_nano\": 5%s, "
				 "\"reason\": \"r\"}]}\n", second[i]);
			write_text(d, DP__LEDGERSET_LIFETIME_FILE, buf);
			assert_int_equal(dp_ledgerset_open(d, NULL, DP_LEDGERSET_READONLY, NULL, &r),
					 i == 3 ? 0 : DP_ECORRUPT);
			if (i == 3) {
				assert_true(dp_ledgerset_lifetime_delta(r) == 1e-6);
				dp_ledgerset_close(r);
			}
		}
	}
	/* a new directory with a delta from the start, and a bad one refused */
	DIRNAME(d, "delta-new");
	assert_int_equal(dp_ledgerset_open(d, "alice", 0, &gauss, &s), 0);
	assert_true(dp_ledgerset_lifetime_delta(s) == 1e-6);
	dp_ledgerset_close(s);
	DIRNAME(d, "delta-bad");
	assert_int_equal(dp_ledgerset_open(d, "alice", 0, &bad, &s), DP_EINVAL);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new),
		cmocka_unit_test(test_migrate),
		cmocka_unit_test(test_migrate_crash),
		cmocka_unit_test(test_change),
		cmocka_unit_test(test_change_crash),
		cmocka_unit_test(test_damaged),
		cmocka_unit_test(test_delta),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
