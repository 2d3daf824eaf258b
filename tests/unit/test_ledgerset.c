/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for common/core/ledgerset.c: an owner's per-job ledgers in one
 * directory and the lifetime total over them (docs/ledger.md §8), and
 * ledgerset_format.c: the directory's format version and its migrations
 * (docs/ledger.md §10).
 *
 * Charges are multiples of 0.25 epsilon, exact in binary and in
 * nano-epsilon (250,000,000 each), so the expected totals are exact. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/ledger.h"
#include "common/core/ledgerset.h"
#include "common/core/ledgerset_impl.h"
#include "common/core/log.h"
#include "common/core/nano.h"

#include "synccrash.h"

struct fx {
	char dir[64];
	char set[96];
};

/* What a writable open records as the lifetime cap of a directory that has
 * none (docs/ledger.md §11): the tests of the job files need no cap. */
static const struct dp_ledgerset_init life = { DP_NANO_INF, "test", NULL, 0 };

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_ledgerset.XXXXXX");
	if (mkdtemp(f->dir) == NULL) {
		free(f);
		return -1;
	}
	snprintf(f->set, sizeof(f->set), "%s/ledger", f->dir);
	*state = f;
	return 0;
}

static void rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[512];

	if (d == NULL) {
		unlink(dir);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		rm_tree(p);
	}
	closedir(d);
	rmdir(dir);
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	rm_tree(f->dir);
	free(f);
	return 0;
}

/* Give `n` answers of 0.25 epsilon in job `job` of owner `owner` (k = 1..n),
 * through the set's file name for the job, as ownerd does. */
static void spend(const dp_ledgerset *s, const char *owner, const char *job, unsigned n,
		  uint64_t K)
{
	char ident[DP_LEDGER_IDENTITY_MAX + 1], *path;
	dp_ledger *l = NULL;

	path = dp_ledgerset_job_path(s, job);
	assert_non_null(path);
	snprintf(ident, sizeof(ident), "owner=%s job=%s", owner, job);
	assert_int_equal(dp_ledger_open(path, 0.25 * (double)K, K, ident, 0, &l), 0);
	for (unsigned k = 1; k <= n; k++)
		assert_int_equal(dp_ledger_charge(l, k, 0.25, NULL), 0);
	dp_ledger_close(l);
	free(path);
}

static void test_two_jobs_sum(void **state)
{
	struct fx *f = *state;
	dp_ledgerset *s = NULL;
	const dp_ledgerset_job *a, *b;
	char *pa;

	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &s), 0);
	assert_int_equal(dp_ledgerset_count(s), 0);
	assert_int_equal(dp_ledgerset_spent_except(s, NULL), 0);
	/* Request ids start at 1 in each job: no "repeated query" across jobs. */
	spend(s, "alice", "job-a", 4, 4);   /* 1.0 */
	spend(s, "alice", "job-b", 2, 8);   /* 0.5 */
	assert_int_equal(dp_ledgerset_rescan(s), 0);
	assert_int_equal(dp_ledgerset_count(s), 2);
	assert_int_equal(dp_ledgerset_spent_except(s, NULL), 1500000000ull);
	pa = dp_ledgerset_job_path(s, "job-a");
	assert_non_null(pa);
	assert_int_equal(dp_ledgerset_spent_except(s, pa), 500000000ull);
	a = dp_ledgerset_find(s, pa);
	assert_non_null(a);
	assert_string_equal(a->job, "job=job-a");
	assert_int_equal(a->answers, 4);
	assert_int_equal(a->answers_cap, 4);
	assert_int_equal(a->spent_nano, 1000000000ull);
	assert_int_equal(a->cap_nano, 1000000000ull);
	/* Ordered by their last record: job-b was written last. */
	b = dp_ledgerset_at(s, 1);
	assert_string_equal(b->job, "job=job-b");
	assert_int_equal(b->answers, 2);
	assert_int_equal(b->answers_cap, 8);
	free(pa);
	dp_ledgerset_close(s);

	/* Read-only inspection sees the same. */
	assert_int_equal(dp_ledgerset_open(f->set, NULL, DP_LEDGERSET_READONLY, &life, &s), 0);
	assert_int_equal(dp_ledgerset_count(s), 2);
	assert_int_equal(dp_ledgerset_spent_except(s, NULL), 1500000000ull);
	dp_ledgerset_close(s);
}

static void test_names(void **state)
{
	struct fx *f = *state;
	dp_ledgerset *s = NULL;
	char *p, long_job[200];

	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &s), 0);
	p = dp_ledgerset_job_path(s, "job-20261124T111500Z-3f2a9c1e");
	assert_non_null(p);
	assert_true(strstr(p, "/jobs/job-20261124T111500Z-3f2a9c1e.ledger") != NULL);
	free(p);
	/* Slashes, spaces, a leading dot or a long name: a hash, never a path. */
	memset(long_job, 'x', sizeof(long_job) - 1);
	long_job[sizeof(long_job) - 1] = '\0';
	for (const char *j = "../../etc/passwd"; j != NULL; j = j == long_job ? NULL :
	     strcmp(j, "../../etc/passwd") == 0 ? "a b" : strcmp(j, "a b") == 0 ? ".hidden" :
	     long_job) {
		p = dp_ledgerset_job_path(s, j);
		assert_non_null(p);
		assert_true(strstr(p, "/jobs/sha256=") != NULL);
		assert_int_equal(strlen(strrchr(p, '/')), strlen("/sha256=.ledger") + 32);
		free(p);
	}
	dp_ledgerset_close(s);
}

static void test_lock_and_owner(void **state)
{
	struct fx *f = *state;
	dp_ledgerset *s = NULL, *t = NULL;

	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &s), 0);
	spend(s, "alice", "j1", 1, 4);
	/* One process per dataset. */
	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &t), DP_ESTATE);
	assert_null(t);
	/* Another owner's files are refused, even while the lock is held. */
	assert_int_equal(dp_ledgerset_open(f->set, "bob", 0, &life, &t), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "not to owner bob"));
	dp_ledgerset_close(s);
	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &t), 0);
	dp_ledgerset_close(t);
}

/* Write `len` bytes as a new file at `p` (a new inode). */
static void put_back(const char *p, const char *text, size_t len)
{
	FILE *fp = fopen(p, "wb");

	assert_non_null(fp);
	assert_int_equal(fwrite(text, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
}

/* The lock is the directory itself (docs/ledger.md §8): with a set open,
 * removing any file of the directory, or putting it back as a new file,
 * never lets a second writable open in, nor does a symbolic link to the
 * directory; a read-only open is never blocked and takes no lock. */
static void test_dir_lock(void **state)
{
	static const char *const files[] = { "lock", "format", "lifetime", "jobs/j1.ledger" };
	struct fx *f = *state;
	dp_ledgerset *s = NULL, *t = NULL, *r = NULL;
	char p[200], alias[160];

	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &s), 0);
	spend(s, "alice", "j1", 2, 4);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *text = NULL;
		size_t len = 0;

		snprintf(p, sizeof(p), "%s/%s", f->set, files[i]);
		assert_int_equal(dp_file_read_all(p, 1 << 20, &text, &len), 0);
		assert_int_equal(unlink(p), 0);
		assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &t), DP_ESTATE);
		assert_null(t);
		/* put back as a new file: `rm F; cp F.copy F` */
		put_back(p, text, len);
		free(text);
		assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &t), DP_ESTATE);
		assert_null(t);
	}
	snprintf(alias, sizeof(alias), "%s/alias", f->dir);
	assert_int_equal(symlink(f->set, alias), 0);
	assert_int_equal(dp_ledgerset_open(alias, "alice", 0, &life, &t), DP_ESTATE);
	assert_non_null(strstr(dp_error_detail(DP_ESTATE), "in use by another process"));
	/* Read-only: not blocked, and it blocks nobody. */
	assert_int_equal(dp_ledgerset_open(alias, NULL, DP_LEDGERSET_READONLY, &life, &r), 0);
	assert_int_equal(dp_ledgerset_spent_except(r, NULL), 500000000ull);
	dp_ledgerset_close(s);
	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &t), 0);
	assert_int_equal(dp_ledgerset_spent_except(t, NULL), 500000000ull);
	dp_ledgerset_close(t);
	dp_ledgerset_close(r);
	(void)state;
}

static void test_old_file_and_damage(void **state)
{
	struct fx *f = *state;
	dp_ledgerset *s = NULL;
	dp_ledger *l = NULL;
	char path[160];
	FILE *fp;

	/* A format-1 single-job file where the directory should be: a clear
	 * error that says how to move it, and nothing changed. */
	assert_int_equal(dp_ledger_open(f->set, 1.0, 4, "owner=alice job=old", 0, &l), 0);
	dp_ledger_close(l);
	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &s), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "job-old.ledger"));
	unlink(f->set);
	/* A missing directory is an error for inspection. */
	assert_int_equal(dp_ledgerset_open(f->set, NULL, DP_LEDGERSET_READONLY, &life, &s), DP_ENOENT);
	/* A missing parent is never created. */
	snprintf(path, sizeof(path), "%s/no/ledger", f->dir);
	assert_int_equal(dp_ledgerset_open(path, "alice", 0, &life, &s), DP_EINVAL);
	/* A damaged job file fails the whole set, naming the file. */
	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &s), 0);
	dp_ledgerset_close(s);
	snprintf(path, sizeof(path), "%s/job-bad.ledger", f->set);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("not a ledger", fp);
	fclose(fp);
	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &s), DP_ECORRUPT);
	assert_non_null(strstr(dp_error_detail(DP_ECORRUPT), "job-bad.ledger"));
}

/* ---- the format version and its migrations ---------------------------------- */

#define FORMAT_LINE "dpasync ledger directory format "

/* What a directory says about the budget: every job's summary and the
 * lifetime total.  A migration must keep all of it exactly. */
struct figures {
	size_t n;
	dp_ledgerset_job jobs[8];
	char paths[8][160];
	uint64_t lifetime_nano;
	dp_zcdp_totals totals;      /* both mechanisms (docs/ledger.md §8) */
	double delta;               /* the lifetime delta */
	unsigned format;
};

/* A job file's name, the same in every format (the paths are the set's
 * and directories differ): its name in jobs/ (format 5 on), or that of
 * an old name in the directory itself, job-X.ledger or
 * job-sha256-HEX.ledger, as it is named in jobs/. */
static void canon(const char *path, char *out, size_t size)
{
	const char *base = strrchr(path, '/') + 1;

	if (strstr(path, "/jobs/") != NULL)
		snprintf(out, size, "%s", base);
	else if (strncmp(base, "job-sha256-", 11) == 0)
		snprintf(out, size, "sha256=%s", base + 11);
	else
		snprintf(out, size, "%s", base + 4);
}

/* The figures of `dir` as a read-only open sees them (no lock, nothing
 * written), or the error of that open. */
static int figures_of(const char *dir, struct figures *fig)
{
	dp_ledgerset *s = NULL;
	int r = dp_ledgerset_open(dir, NULL, DP_LEDGERSET_READONLY, &life, &s);

	if (r != 0)
		return r;
	memset(fig, 0, sizeof(*fig));
	fig->n = dp_ledgerset_count(s);
	assert_true(fig->n <= 8);
	for (size_t i = 0; i < fig->n; i++) {
		fig->jobs[i] = *dp_ledgerset_at(s, i);
		canon(fig->jobs[i].path, fig->paths[i], sizeof(fig->paths[i]));
		fig->jobs[i].path = NULL;
	}
	fig->lifetime_nano = dp_ledgerset_spent_except(s, NULL);
	fig->totals = dp_ledgerset_totals_except(s, NULL);
	fig->delta = dp_ledgerset_lifetime_delta(s);
	fig->format = dp_ledgerset_format(s);
	dp_ledgerset_close(s);
	return 0;
}

static void assert_same_figures(const struct figures *a, const struct figures *b)
{
	assert_int_equal(a->n, b->n);
	assert_true(a->lifetime_nano == b->lifetime_nano);
	assert_memory_equal(&a->totals, &b->totals, sizeof(a->totals));
	assert_true(a->delta == b->delta);
	for (size_t i = 0; i < a->n; i++) {
		const dp_ledgerset_job *x = &a->jobs[i], *y = &b->jobs[i];

		assert_string_equal(a->paths[i], b->paths[i]);
		assert_string_equal(x->job, y->job);
		assert_true(x->answers == y->answers && x->answers_cap == y->answers_cap);
		assert_true(x->spent_nano == y->spent_nano && x->cap_nano == y->cap_nano);
		assert_true(x->last_time_ns == y->last_time_ns && x->torn == y->torn);
		assert_true(x->unit == y->unit && x->delta == y->delta &&
			    x->slack_nano == y->slack_nano);
		assert_memory_equal(&x->totals, &y->totals, sizeof(x->totals));
	}
}

/* Today's layout (format 1: no format file) as ownerd leaves it: the
 * directory (0700), its lock file, and owner alice's job ledgers written
 * by the ledger code itself: job-a spent in four plain charges of 0.25;
 * job-b through reserve-ahead (covered answers, a reservation alone and a
 * share still held at the end, docs/ledger.md §9); a job whose id is
 * stored under its hash; and an empty job.  Its figures go to *fig. */
static void make_v1(const char *dir, struct figures *fig)
{
	static const char *const jobs[] = { "job-a", "job-b", "x/y", "empty" };
	dp_ledgerset *s = NULL;
	char lock[200];
	int fd;

	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(lock, sizeof(lock), "%s/lock", dir);
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	/* Read-only: the file names of the jobs, with nothing written. */
	assert_int_equal(dp_ledgerset_open(dir, NULL, DP_LEDGERSET_READONLY, &life, &s), 0);
	for (size_t j = 0; j < sizeof(jobs) / sizeof(jobs[0]); j++) {
		char ident[DP_LEDGER_IDENTITY_MAX + 1], *path = dp_ledgerset_job_path(s, jobs[j]);
		dp_ledger *l = NULL;
		bool covered;

		assert_non_null(path);
		snprintf(ident, sizeof(ident), "owner=alice job=%s", jobs[j]);
		assert_int_equal(dp_ledger_open(path, 2.0, 8, ident, 0, &l), 0);
		for (uint64_t k = 1; j == 0 && k <= 4; k++)
			assert_int_equal(dp_ledger_charge(l, k, 0.25, NULL), 0);
		for (uint64_t k = 1; j == 1 && k <= 3; k++) {
			assert_int_equal(dp_ledger_charge_ahead(l, k, 0.25, &covered), 0);
			assert_int_equal(dp_ledger_settle(l, 0.25), 0);
		}
		if (j == 2)
			assert_int_equal(dp_ledger_charge(l, 7, 0.5, NULL), 0);
		dp_ledger_close(l);
		free(path);
	}
	dp_ledgerset_close(s);
	assert_int_equal(figures_of(dir, fig), 0);
	assert_int_equal(fig->format, 1);
	assert_int_equal(fig->n, 4);
	/* 1.0 + 4 shares of job-b (three answers, one held) + 0.5 */
	assert_true(fig->lifetime_nano == 2500000000ull);
	/* as zCDP: eight charges of 0.25, 250000000^2 / 2e9 = 31 250 000
	 * nano-rho each, and one of 0.5, 125 000 000 */
	assert_true(fig->totals.eps_pure == 2500000000ull &&
		    fig->totals.rho_pure == 8 * 31250000ull + 125000000ull &&
		    fig->totals.rho_gauss == 0 && fig->totals.slack == 0);
	assert_true(fig->delta == 0.0);
}

static bool exists(const char *dir, const char *name)
{
	char p[300];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

static void put_format(const char *dir, const char *text)
{
	char p[300];
	FILE *fp;

	snprintf(p, sizeof(p), "%s/" DP__LEDGERSET_FORMAT_FILE, dir);
	fp = fopen(p, "w");
	assert_non_null(fp);
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
}

static void test_format_new(void **state)
{
	struct fx *f = *state;
	dp_ledgerset *s = NULL;
	char p[200], want[64], *text = NULL;
	struct stat st;
	size_t len;

	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &s), 0);
	assert_int_equal(dp_ledgerset_format(s), DP_LEDGERSET_FORMAT);
	dp_ledgerset_close(s);
	snprintf(p, sizeof(p), "%s/" DP__LEDGERSET_FORMAT_FILE, f->set);
	assert_int_equal(dp_file_read_all(p, 100, &text, &len), 0);
	snprintf(want, sizeof(want), FORMAT_LINE "%d\n", DP_LEDGERSET_FORMAT);
	assert_string_equal(text, want);
	free(text);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(dp_ledgerset_open(f->set, NULL, DP_LEDGERSET_READONLY, &life, &s), 0);
	assert_int_equal(dp_ledgerset_format(s), DP_LEDGERSET_FORMAT);
	dp_ledgerset_close(s);
}

/* A directory in today's layout keeps every figure through the migration;
 * a read-only open reads it as it is and changes nothing. */
static void test_format_migrate(void **state)
{
	struct fx *f = *state;
	struct figures before, after;
	dp_ledgerset *s = NULL;
	struct stat st1, st2;
	char p[200];

	make_v1(f->set, &before);
	assert_false(exists(f->set, DP__LEDGERSET_FORMAT_FILE));
	assert_int_equal(figures_of(f->set, &after), 0);
	assert_int_equal(after.format, 1);
	assert_false(exists(f->set, DP__LEDGERSET_FORMAT_FILE));
	/* Another owner is still refused, and nothing migrated for it. */
	assert_int_equal(dp_ledgerset_open(f->set, "bob", 0, &life, &s), DP_EINVAL);
	assert_false(exists(f->set, DP__LEDGERSET_FORMAT_FILE));

	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &s), 0);
	assert_int_equal(dp_ledgerset_format(s), DP_LEDGERSET_FORMAT);
	assert_true(dp_ledgerset_spent_except(s, NULL) == before.lifetime_nano);
	dp_ledgerset_close(s);
	assert_int_equal(figures_of(f->set, &after), 0);
	assert_int_equal(after.format, DP_LEDGERSET_FORMAT);
	assert_same_figures(&before, &after);
	/* At the current version an open writes nothing. */
	snprintf(p, sizeof(p), "%s/" DP__LEDGERSET_FORMAT_FILE, f->set);
	assert_int_equal(stat(p, &st1), 0);
	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &s), 0);
	dp_ledgerset_close(s);
	assert_int_equal(stat(p, &st2), 0);
	assert_true(st1.st_ino == st2.st_ino && st1.st_mtim.tv_nsec == st2.st_mtim.tv_nsec);
}

static int open_alice(const char *dir)
{
	dp_ledgerset *s = NULL;
	int r = dp_ledgerset_open(dir, "alice", 0, &life, &s);

	dp_ledgerset_close(s);
	return r;
}

/* A crash at every sync of the migration (before and after each: the
 * temporary format file, then the directory after the rename), and a
 * failed sync at each: the directory opens read-only at a version from 1
 * to the current one
 * with the same figures, and the next open completes the migration with
 * the same figures again. */
static void test_format_crash(void **state)
{
	struct fx *f = *state;
	int modes[] = { KILL_BEFORE, KILL_AFTER, FAIL };

	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		int hit = 0;

		for (int at = 1;; at++) {
			struct figures before, mid, after;
			int code;

			rm_tree(f->set);
			make_v1(f->set, &before);
			code = in_child(at, modes[m], open_alice, f->set);
			if (code == 0)
				break;   /* fewer syncs than `at`: every point was hit */
			assert_int_equal(code, modes[m] == FAIL ? 1 : 9);
			hit++;
			assert_int_equal(figures_of(f->set, &mid), 0);
			assert_true(mid.format >= 1 && mid.format <= DP_LEDGERSET_FORMAT);
			assert_same_figures(&before, &mid);
			assert_int_equal(open_alice(f->set), 0);
			assert_int_equal(figures_of(f->set, &after), 0);
			assert_int_equal(after.format, DP_LEDGERSET_FORMAT);
			assert_same_figures(&before, &after);
		}
		/* The temporary file's sync and the directory's, at least. */
		assert_true(hit >= 2);
	}
}

/* A newer format than this build knows, and a damaged format file: refused
 * by every open, nothing changed. */
static void test_format_refused(void **state)
{
	struct fx *f = *state;
	static const char *const damaged[] = {
		FORMAT_LINE "0\n", FORMAT_LINE "02\n", FORMAT_LINE "2", FORMAT_LINE "2\n\n",
		FORMAT_LINE "2 \n", FORMAT_LINE "\n", "2\n", FORMAT_LINE "99999999999\n", "",
	};
	struct figures before, fig;
	dp_ledgerset *s = NULL;
	char line[64];

	make_v1(f->set, &before);
	snprintf(line, sizeof(line), FORMAT_LINE "%d\n", DP_LEDGERSET_FORMAT + 1);
	put_format(f->set, line);
	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &s), DP_EFORMAT);
	assert_null(s);
	snprintf(line, sizeof(line), "format %d, newer than the %d", DP_LEDGERSET_FORMAT + 1,
		 DP_LEDGERSET_FORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT), line));
	assert_int_equal(figures_of(f->set, &fig), DP_EFORMAT);
	for (size_t i = 0; i < sizeof(damaged) / sizeof(damaged[0]); i++) {
		put_format(f->set, damaged[i]);
		assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &s), DP_ECORRUPT);
		assert_non_null(strstr(dp_error_detail(DP_ECORRUPT), "is damaged"));
		assert_int_equal(figures_of(f->set, &fig), DP_ECORRUPT);
	}
	/* Version 2 written by hand is read as it is. */
	put_format(f->set, FORMAT_LINE "2\n");
	assert_int_equal(figures_of(f->set, &fig), 0);
	assert_int_equal(fig.format, 2);
	assert_same_figures(&before, &fig);
}

/* The framework over a longer chain, as later versions will have it: 1 -> 2
 * the commit alone, 2 -> 3 and 3 -> 4 each adding a file.  A crash at any
 * sync leaves a version from 1 to 4 whose steps' files are all there and
 * the job files untouched; running the chain again from there ends at 4. */
static int add_marker(const char *dir, const char *name)
{
	char p[300];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return dp_file_write_atomic(p, name, strlen(name), 0600);
}

static int add_m3(const char *dir, const struct dp__ledgerset_ctx *ctx)
{
	return add_marker(dir, "m3");
}

static int add_m4(const char *dir, const struct dp__ledgerset_ctx *ctx)
{
	return add_marker(dir, "m4");
}

static const struct dp__ledgerset_step chain[] = {
	{ 1, "format file", NULL },
	{ 2, "m3", add_m3 },
	{ 3, "m4", add_m4 },
};

static int run_chain(const char *dir)
{
	struct dp__ledgerset_ctx ctx = { &life, true };
	unsigned v;
	int r = dp__ledgerset_format_read(dir, 4, &v);

	if (r == 0)
		r = dp__ledgerset_migrate(dir, chain, 3, 4, &ctx, &v);
	return r == 0 && v == 4 ? 0 : -1;
}

static char *job_bytes(const char *dir, size_t *len)
{
	char p[300], *text = NULL;

	snprintf(p, sizeof(p), "%s/job-job-b.ledger", dir);
	assert_int_equal(dp_file_read_all(p, 1 << 20, &text, len), 0);
	return text;
}

static void test_format_chain(void **state)
{
	struct fx *f = *state;
	int hit = 0;

	for (int at = 1;; at++) {
		struct figures before;
		size_t len0, len1;
		char *b0, *b1;
		unsigned v = 0;
		int code;

		rm_tree(f->set);
		make_v1(f->set, &before);
		b0 = job_bytes(f->set, &len0);
		code = in_child(at, KILL_AFTER, run_chain, f->set);
		assert_int_equal(dp__ledgerset_format_read(f->set, 4, &v), 0);
		assert_true(v >= 1 && v <= 4);
		assert_true(v < 3 || exists(f->set, "m3"));
		assert_true(v < 4 || exists(f->set, "m4"));
		b1 = job_bytes(f->set, &len1);
		assert_true(len0 == len1 && memcmp(b0, b1, len0) == 0);
		free(b0);
		free(b1);
		if (code == 0) {
			assert_int_equal(v, 4);
			break;
		}
		assert_int_equal(code, 9);
		hit++;
		assert_int_equal(run_chain(f->set), 0);
		assert_true(exists(f->set, "m3") && exists(f->set, "m4"));
	}
	/* Two syncs per commit and two per marker: 10 points. */
	assert_int_equal(hit, 10);
}

/* The real steps up to format 4, as the builds of formats 2 to 4 ran them
 * (the step from 4 to 5 is ledgerset_jobs.c's). */
static const struct dp__ledgerset_step real_to_4[] = {
	{ 1, "format file", NULL },
	{ 2, "lifetime", dp__ledgerset_lifetime_start },
	{ 3, "delta", NULL },
};

/* make_v1's directory brought to format `to` (2..4) as the build of that
 * format left it: the job files in the directory itself, the lifetime
 * file from format 3 on with `init`'s cap. */
static void make_at(const char *dir, unsigned to, const struct dp_ledgerset_init *init,
		    struct figures *fig)
{
	struct dp__ledgerset_ctx ctx = { init, false };
	unsigned v = 1;

	make_v1(dir, fig);
	assert_int_equal(dp__ledgerset_migrate(dir, real_to_4, 3, to, &ctx, &v), 0);
	assert_int_equal(v, to);
}

/* Directories of formats 2, 3 and 4 (each as that format's build wrote
 * it, with the jobs of make_v1) keep every figure, the lifetime cap and
 * its history exactly: a read-only open reads them as they are; the
 * owner's open migrates them to the current format, the lifetime delta 0
 * (pure epsilon-DP), the job files moved into jobs/ (format 5) under
 * their job's id and no old name left.  The lifetime file is kept byte
 * for byte. */
static void test_format_from_2_to_4(void **state)
{
	static const char *const home[] = { "jobs/job-a.ledger", "jobs/job-b.ledger",
					    "jobs/empty.ledger" };
	struct fx *f = *state;
	const struct dp_ledgerset_init cap = { 3000000000ull, "test", NULL, 0 };
	struct figures before, mid, after;
	char p[200], *t1 = NULL, *t2 = NULL, *hashed;
	size_t n1 = 0, n2 = 0;
	dp_ledgerset *s = NULL;
	struct dirent *e;
	DIR *d;

	for (unsigned from = 2; from <= 4; from++) {
		rm_tree(f->set);
		make_at(f->set, from, &cap, &before);
		snprintf(p, sizeof(p), "%s/" DP__LEDGERSET_LIFETIME_FILE, f->set);
		assert_true(exists(f->set, DP__LEDGERSET_LIFETIME_FILE) == (from >= 3));
		assert_int_equal(figures_of(f->set, &mid), 0);
		assert_int_equal(mid.format, from);
		assert_same_figures(&before, &mid);
		free(t1);
		t1 = NULL;
		if (from >= 3)
			assert_int_equal(dp_file_read_all(p, 1 << 20, &t1, &n1), 0);
		assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &cap, &s), 0);
		assert_int_equal(dp_ledgerset_format(s), DP_LEDGERSET_FORMAT);
		assert_int_equal(dp_ledgerset_lifetime_count(s), 1);
		assert_true(dp_ledgerset_lifetime_delta(s) == 0.0);
		hashed = dp_ledgerset_job_path(s, "x/y");
		assert_non_null(hashed);
		assert_true(access(hashed, F_OK) == 0);
		free(hashed);
		dp_ledgerset_close(s);
		assert_int_equal(figures_of(f->set, &after), 0);
		assert_same_figures(&before, &after);
		for (size_t i = 0; i < 3; i++)
			assert_true(exists(f->set, home[i]));
		d = opendir(f->set);
		assert_non_null(d);
		while ((e = readdir(d)) != NULL)
			assert_true(strncmp(e->d_name, "job-", 4) != 0);
		closedir(d);
		if (from >= 3) {
			free(t2);
			t2 = NULL;
			assert_int_equal(dp_file_read_all(p, 1 << 20, &t2, &n2), 0);
			assert_int_equal(n1, n2);
			assert_memory_equal(t1, t2, n1);
			assert_null(strstr(t2, "delta"));
		}
	}
	free(t1);
	free(t2);
}

/* Link or copy (a new inode) `from` to `to`, both under dir. */
static void put_name(const char *dir, const char *from, const char *to, bool copy)
{
	char a[300], b[300], *text = NULL;
	size_t len = 0;

	snprintf(a, sizeof(a), "%s/%s", dir, from);
	snprintf(b, sizeof(b), "%s/%s", dir, to);
	if (!copy) {
		assert_int_equal(link(a, b), 0);
		return;
	}
	assert_int_equal(dp_file_read_all(a, 1 << 20, &text, &len), 0);
	put_back(b, text, len);
	free(text);
}

/* One more answer of 0.25 in make_v1's job-a (k = 5) through file `name`. */
static void charge_a(const char *dir, const char *name)
{
	char p[300];
	dp_ledger *l = NULL;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(dp_ledger_open(p, 2.0, 8, "owner=alice job=job-a", 0, &l), 0);
	assert_int_equal(dp_ledger_charge(l, 5, 0.25, NULL), 0);
	dp_ledger_close(l);
}

/* Job files outside jobs/ in a directory of format 5 (docs/ledger.md §10
 * "The step from 4 to 5"): a second name of a file in jobs/ (a crash
 * between the move and the removal) or a copy holding no more (such a
 * directory copied without its hard links) counts once, and the owner's
 * open removes it; a file with no home (put there by hand) counts, and
 * the owner's open moves it home; an old name holding more than its home
 * is refused by every open, naming both; a renamed file whose hashed
 * header does not match its name is refused; jobs/ missing is refused.
 * At format 4 the old name is what counts: a copy left in jobs/ by an
 * interrupted step that holds less is replaced by the migration. */
static void test_format_jobs_leftovers(void **state)
{
	struct fx *f = *state;
	struct figures before, fig;
	dp_ledgerset *s = NULL;
	dp_ledger *l = NULL;
	char p[300], q[300];

	/* A second name, then a copy, of jobs/job-a.ledger. */
	for (int copy = 0; copy <= 1; copy++) {
		rm_tree(f->set);
		make_v1(f->set, &before);
		assert_int_equal(open_alice(f->set), 0);
		put_name(f->set, "jobs/job-a.ledger", "job-job-a.ledger", copy);
		assert_int_equal(figures_of(f->set, &fig), 0);
		assert_same_figures(&before, &fig);
		assert_int_equal(open_alice(f->set), 0);
		assert_false(exists(f->set, "job-job-a.ledger"));
		assert_int_equal(figures_of(f->set, &fig), 0);
		assert_same_figures(&before, &fig);
	}
	/* A file with no home: counted where it is, then moved home. */
	rm_tree(f->set);
	make_v1(f->set, &before);
	assert_int_equal(open_alice(f->set), 0);
	snprintf(p, sizeof(p), "%s/jobs/job-a.ledger", f->set);
	snprintf(q, sizeof(q), "%s/job-job-a.ledger", f->set);
	assert_int_equal(rename(p, q), 0);
	assert_int_equal(figures_of(f->set, &fig), 0);
	assert_same_figures(&before, &fig);
	assert_int_equal(open_alice(f->set), 0);
	assert_true(exists(f->set, "jobs/job-a.ledger") && !exists(f->set, "job-job-a.ledger"));
	assert_int_equal(figures_of(f->set, &fig), 0);
	assert_same_figures(&before, &fig);
	/* An old name holding more than its home: refused, both kept. */
	put_name(f->set, "jobs/job-a.ledger", "job-job-a.ledger", true);
	charge_a(f->set, "job-job-a.ledger");
	assert_int_equal(figures_of(f->set, &fig), DP_ECORRUPT);
	assert_non_null(strstr(dp_error_detail(DP_ECORRUPT), "holds more than"));
	assert_int_equal(open_alice(f->set), DP_ECORRUPT);
	assert_true(exists(f->set, "jobs/job-a.ledger") && exists(f->set, "job-job-a.ledger"));
	assert_int_equal(unlink(q), 0);
	/* A hashed header whose file was renamed. */
	assert_int_equal(dp_ledger_open(q, 1.0, 4, "owner=alice job-sha256="
					"0123456789abcdef0123456789abcdef", 0, &l), 0);
	dp_ledger_close(l);
	assert_int_equal(figures_of(f->set, &fig), DP_ECORRUPT);
	assert_non_null(strstr(dp_error_detail(DP_ECORRUPT), "does not match"));
	assert_int_equal(unlink(q), 0);
	/* jobs/ gone: refused, never read as an empty directory. */
	snprintf(p, sizeof(p), "%s/jobs", f->set);
	snprintf(q, sizeof(q), "%s/jobs.away", f->dir);
	assert_int_equal(rename(p, q), 0);
	assert_int_equal(figures_of(f->set, &fig), DP_ECORRUPT);
	assert_int_equal(open_alice(f->set), DP_ECORRUPT);
	assert_non_null(strstr(dp_error_detail(DP_ECORRUPT), "restore it"));
	assert_int_equal(rename(q, p), 0);
	assert_int_equal(figures_of(f->set, &fig), 0);
	assert_same_figures(&before, &fig);

	/* Format 4 after an interrupted step, copied without hard links, and
	 * the old name charged since: the migration takes the old name. */
	rm_tree(f->set);
	make_at(f->set, 4, &life, &before);
	assert_int_equal(dp__ledgerset_jobs_move(f->set, NULL), 0);
	snprintf(p, sizeof(p), "%s/jobs/job-a.ledger", f->set);
	assert_int_equal(unlink(p), 0);
	put_name(f->set, "job-job-a.ledger", "jobs/job-a.ledger", true);
	charge_a(f->set, "job-job-a.ledger");
	assert_int_equal(figures_of(f->set, &fig), 0);
	assert_int_equal(fig.format, 4);
	assert_true(fig.lifetime_nano == before.lifetime_nano + 250000000ull);
	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &s), 0);
	assert_true(dp_ledgerset_spent_except(s, NULL) == before.lifetime_nano + 250000000ull);
	dp_ledgerset_close(s);
	assert_int_equal(figures_of(f->set, &before), 0);
	assert_int_equal(before.format, DP_LEDGERSET_FORMAT);
	assert_true(before.lifetime_nano == fig.lifetime_nano);
}

/* A Gaussian job for `job`: rho cap 0.5, delta 1e-6, slack 1e-12 (one
 * nano-epsilon per answer), K 10, n answers of rho 0.01. */
static void spend_gauss(const dp_ledgerset *s, const char *job, unsigned n)
{
	char ident[DP_LEDGER_IDENTITY_MAX + 1], *path = dp_ledgerset_job_path(s, job);
	dp_ledger *l = NULL;

	assert_non_null(path);
	snprintf(ident, sizeof(ident), "owner=alice job=%s", job);
	assert_int_equal(dp_ledger_open_gauss(path, 0.5, 1e-6, 1e-12, 10, ident, 0, &l), 0);
	for (unsigned k = 1; k <= n; k++)
		assert_int_equal(dp_ledger_charge(l, k, 0.01, NULL), 0);
	dp_ledger_close(l);
	free(path);
}

/* The lifetime bound over both mechanisms (docs/ledger.md §8), on the
 * directory's own totals: Laplace only is the plain sum, the old decision
 * to the nano-epsilon; with a Gaussian job the smaller of the two valid
 * bounds; at delta 0 a Gaussian job makes every charge refused. */
static void test_compose(void **state)
{
	struct fx *f = *state;
	const dp_zcdp_totals quarter = dp_zcdp_charge_pure(250000000ull);
	dp_zcdp_totals t, g;
	dp_ledgerset *s = NULL;
	double a = 0, b = 0, e = 0;
	uint64_t n = 0;
	bool fits = true;
	char *pg;

	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &s), 0);
	spend(s, "alice", "job-a", 4, 4);   /* 1.0 */
	spend(s, "alice", "job-b", 2, 8);   /* 0.5 */
	assert_int_equal(dp_ledgerset_rescan(s), 0);
	t = dp_ledgerset_totals_except(s, NULL);
	assert_true(t.eps_pure == 1500000000ull && t.rho_pure == 6 * 31250000ull &&
		    t.rho_gauss == 0 && t.slack == 0);
	/* Laplace only: exactly the sum, at any delta; a quarter fits a cap
	 * of 1.75 and not one nano-epsilon less */
	assert_int_equal(dp_zcdp_best_nano(&t, 1e-6, &n), 0);
	assert_true(n == 1500000000ull);
	assert_int_equal(dp_zcdp_fits(&t, &quarter, 1750000000ull, 0.0, &fits), 0);
	assert_true(fits);
	assert_int_equal(dp_zcdp_fits(&t, &quarter, 1749999999ull, 1e-6, &fits), 0);
	assert_false(fits);
	assert_true(dp_ledgerset_pure_left(&t, 2000000000ull, 0.0) == 500000000ull);
	assert_true(dp_ledgerset_pure_left(&t, 1000000000ull, 1e-6) == 0);
	assert_true(dp_ledgerset_pure_left(&t, DP_NANO_INF, 0.0) == DP_NANO_INF);

	/* A Gaussian job of two answers of rho 0.01, the double
	 * 0.01000000000000000020816...: 10 000 001 nano-rho each */
	spend_gauss(s, "job-g", 2);
	assert_int_equal(dp_ledgerset_rescan(s), 0);
	pg = dp_ledgerset_job_path(s, "job-g");
	assert_non_null(pg);
	assert_int_equal(dp_ledgerset_find(s, pg)->unit, DP_LEDGER_UNIT_RHO);
	assert_true(dp_ledgerset_spent_except(s, NULL) == 1500000000ull);  /* Laplace files */
	t = dp_ledgerset_totals_except(s, NULL);
	assert_true(t.eps_pure == 1500000000ull && t.rho_pure == 6 * 31250000ull &&
		    t.rho_gauss == 20000002ull && t.slack == 2);
	g = dp_ledgerset_totals_except(s, NULL);
	assert_true(memcmp(&g, &t, sizeof(g)) == 0);
	g = dp_ledgerset_totals_except(s, pg);
	assert_true(g.rho_gauss == 0 && g.eps_pure == 1500000000ull);
	/* mixed: the smaller of eps_pure + conv(rho_gauss) and conv(all rho) */
	assert_int_equal(dp_zcdp_eps(0.020000002, 2e-9, 1e-6, &a), 0);
	assert_int_equal(dp_zcdp_eps(0.207500002, 2e-9, 1e-6, &b), 0);
	assert_true(1.5 + a < b);   /* here Laplace beside the Gaussian conversion wins */
	assert_int_equal(dp_zcdp_best_eps(&t, 1e-6, &e), 0);
	assert_true(e >= 1.5 + a - 1e-12 && e <= 1.5 + a + 1e-9);
	/* delta 0 with a Gaussian job: no bound, nothing fits */
	assert_int_equal(dp_zcdp_best_nano(&t, 0.0, &n), 0);
	assert_true(n == DP_NANO_INF);
	assert_int_equal(dp_zcdp_fits(&t, &quarter, DP_NANO_MAX, 0.0, &fits), 0);
	assert_false(fits);
	assert_true(dp_ledgerset_pure_left(&t, 100000000000ull, 0.0) == 0);
	/* what is left for a Laplace job keeps the bound within the cap */
	n = dp_ledgerset_pure_left(&t, 5000000000ull, 1e-6);
	assert_true(n > 0 && n < 5000000000ull - 1500000000ull);
	g = dp_zcdp_charge_pure(n);
	assert_int_equal(dp_zcdp_fits(&t, &g, 5000000000ull, 1e-6, &fits), 0);
	assert_true(fits);
	free(pg);
	dp_ledgerset_close(s);

	/* Many small Laplace answers: all in zCDP wins (the min rule's
	 * other side).  100 of 0.05 and one Gaussian answer of rho 0.01 */
	rm_tree(f->set);
	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &life, &s), 0);
	{
		char *pa = dp_ledgerset_job_path(s, "many");
		dp_ledger *l = NULL;

		assert_int_equal(dp_ledger_open(pa, 5.5, 100, "owner=alice job=many", 0, &l), 0);
		for (uint64_t k = 1; k <= 100; k++)
			assert_int_equal(dp_ledger_charge(l, k, 0.05, NULL), 0);
		dp_ledger_close(l);
		free(pa);
	}
	spend_gauss(s, "job-g", 1);
	assert_int_equal(dp_ledgerset_rescan(s), 0);
	t = dp_ledgerset_totals_except(s, NULL);
	/* 0.05 is 50 000 001 nano-eps (0.05000000000000000277...): as zCDP
	 * ceil(50000001^2 / 2e9) = 1 250 001 nano-rho each */
	assert_true(t.eps_pure == 5000000100ull && t.rho_pure == 125000100ull &&
		    t.rho_gauss == 10000001ull && t.slack == 1);
	assert_int_equal(dp_zcdp_eps(0.010000001, 1e-9, 1e-6, &a), 0);
	assert_int_equal(dp_zcdp_eps(0.135000101, 1e-9, 1e-6, &b), 0);
	assert_true(b < 5.0000001 + a);
	assert_int_equal(dp_zcdp_best_eps(&t, 1e-6, &e), 0);
	assert_true(e >= b - 1e-12 && e <= b + 1e-9);
	dp_ledgerset_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_two_jobs_sum, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_names, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_lock_and_owner, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_dir_lock, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_old_file_and_damage, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_format_new, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_format_migrate, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_format_crash, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_format_refused, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_format_chain, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_format_from_2_to_4, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_format_jobs_leftovers, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_compose, fx_setup, fx_teardown),
	};

	dp_log_set_level(DP_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
