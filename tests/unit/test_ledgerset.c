/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for common/core/ledgerset.c: an owner's per-job ledgers in one
 * directory and the lifetime total over them (docs/ledger.md §8).
 *
 * Charges are multiples of 0.25 epsilon, exact in binary and in
 * nano-epsilon (250,000,000 each), so the expected totals are exact. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/core/error.h"
#include "common/core/ledger.h"
#include "common/core/ledgerset.h"
#include "common/core/log.h"

struct fx {
	char dir[64];
	char set[96];
};

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

	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &s), 0);
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
	assert_int_equal(dp_ledgerset_open(f->set, NULL, DP_LEDGERSET_READONLY, &s), 0);
	assert_int_equal(dp_ledgerset_count(s), 2);
	assert_int_equal(dp_ledgerset_spent_except(s, NULL), 1500000000ull);
	dp_ledgerset_close(s);
}

static void test_names(void **state)
{
	struct fx *f = *state;
	dp_ledgerset *s = NULL;
	char *p, long_job[200];

	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &s), 0);
	p = dp_ledgerset_job_path(s, "job-20261124T111500Z-3f2a9c1e");
	assert_non_null(p);
	assert_true(strstr(p, "/job-job-20261124T111500Z-3f2a9c1e.ledger") != NULL);
	free(p);
	/* Slashes, spaces, a leading dot or a long name: a hash, never a path. */
	memset(long_job, 'x', sizeof(long_job) - 1);
	long_job[sizeof(long_job) - 1] = '\0';
	for (const char *j = "../../etc/passwd"; j != NULL; j = j == long_job ? NULL :
	     strcmp(j, "../../etc/passwd") == 0 ? "a b" : strcmp(j, "a b") == 0 ? ".hidden" :
	     long_job) {
		p = dp_ledgerset_job_path(s, j);
		assert_non_null(p);
		assert_true(strstr(p, "/job-sha256-") != NULL);
		assert_int_equal(strlen(strrchr(p, '/')), strlen("/job-sha256-.ledger") + 32);
		free(p);
	}
	dp_ledgerset_close(s);
}

static void test_lock_and_owner(void **state)
{
	struct fx *f = *state;
	dp_ledgerset *s = NULL, *t = NULL;

	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &s), 0);
	spend(s, "alice", "j1", 1, 4);
	/* One process per dataset. */
	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &t), DP_ESTATE);
	assert_null(t);
	/* Another owner's files are refused, even while the lock is held. */
	assert_int_equal(dp_ledgerset_open(f->set, "bob", 0, &t), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "not to owner bob"));
	dp_ledgerset_close(s);
	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &t), 0);
	dp_ledgerset_close(t);
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
	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &s), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "job-old.ledger"));
	unlink(f->set);
	/* A missing directory is an error for inspection. */
	assert_int_equal(dp_ledgerset_open(f->set, NULL, DP_LEDGERSET_READONLY, &s), DP_ENOENT);
	/* A missing parent is never created. */
	snprintf(path, sizeof(path), "%s/no/ledger", f->dir);
	assert_int_equal(dp_ledgerset_open(path, "alice", 0, &s), DP_EINVAL);
	/* A damaged job file fails the whole set, naming the file. */
	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &s), 0);
	dp_ledgerset_close(s);
	snprintf(path, sizeof(path), "%s/job-bad.ledger", f->set);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("not a ledger", fp);
	fclose(fp);
	assert_int_equal(dp_ledgerset_open(f->set, "alice", 0, &s), DP_ECORRUPT);
	assert_non_null(strstr(dp_error_detail(DP_ECORRUPT), "job-bad.ledger"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_two_jobs_sum, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_names, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_lock_and_owner, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_old_file_and_damage, fx_setup, fx_teardown),
	};

	dp_log_set_level(DP_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
