/* SPDX-License-Identifier: Apache-2.0 */
/* What the tests of ownerd's decisions (test_budget, test_answer,
 * test_settle) share: a budget on a job-ledger directory in the test's
 * temporary directory, and a record of the order in which things happened.
 * Include once per test, after cmocka.h and tmpdir.h.
 *
 * The record is a string of one letter per event:
 *   S  an fdatasync of a job ledger (dp_file_set_sync_hook sees every sync;
 *      the temporary file of a ledger's creation and the directory are
 *      not counted)
 *   N  random bits drawn (noise_bits below)
 *   X  whatever the test marks with note(): a send, say
 * so that "nothing leaves before its record is synced" reads as an "S"
 * before the "X". */
#ifndef DP_TEST_OWNTEST_H
#define DP_TEST_OWNTEST_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/log.h"
#include "common/core/rng.h"

#include "owner/budget.h"

/* The settle's sync runs on a worker thread: every field under the lock. */
static struct {
	pthread_mutex_t mu;
	char ev[1024];
	size_t n;
	off_t size;             /* the job ledger's size at its last sync */
	int fail;               /* errno for every job-ledger sync (0: sync) */
} rec = { .mu = PTHREAD_MUTEX_INITIALIZER };

static inline void note(char c)
{
	pthread_mutex_lock(&rec.mu);
	if (rec.n + 1 < sizeof(rec.ev)) {
		rec.ev[rec.n++] = c;
		rec.ev[rec.n] = '\0';
	}
	pthread_mutex_unlock(&rec.mu);
}

/* Where the record is now; events_since(mark) is what happened after. */
static inline size_t mark(void)
{
	size_t n;

	pthread_mutex_lock(&rec.mu);
	n = rec.n;
	pthread_mutex_unlock(&rec.mu);
	return n;
}

static inline const char *events_since(size_t from)
{
	return rec.ev + from;
}

static inline off_t synced_size(void)
{
	off_t s;

	pthread_mutex_lock(&rec.mu);
	s = rec.size;
	pthread_mutex_unlock(&rec.mu);
	return s;
}

/* Every ledger sync from now on fails with err (0: they succeed again). */
static inline void fail_syncs(int err)
{
	pthread_mutex_lock(&rec.mu);
	rec.fail = err;
	pthread_mutex_unlock(&rec.mu);
}

static inline bool is_job_ledger(const char *path)
{
	size_t n = strlen(path);

	return n > 7 && strcmp(path + n - 7, ".ledger") == 0;
}

/* The hook: note a job ledger's sync and its size, and succeed (or fail as
 * asked).  Nothing is synced for real: the tests read the order, and the
 * disk is left to the tests that time their syncs (test_ledger's kills). */
static inline int sync_hook(int fd)
{
	char link[64], path[PATH_MAX];
	struct stat st;
	ssize_t len;
	int err = 0;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	len = readlink(link, path, sizeof(path) - 1);
	path[len > 0 ? len : 0] = '\0';
	if (is_job_ledger(path)) {
		pthread_mutex_lock(&rec.mu);
		err = rec.fail;
		if (err == 0 && fstat(fd, &st) == 0)
			rec.size = st.st_size;
		if (rec.n + 1 < sizeof(rec.ev)) {
			rec.ev[rec.n++] = 'S';
			rec.ev[rec.n] = '\0';
		}
		pthread_mutex_unlock(&rec.mu);
	}
	if (err != 0) {
		errno = err;
		return -1;
	}
	return 0;
}

/* A bit source over the CSPRNG that notes 'N' for every draw, and fails
 * with DP_ERNG while `broken` is set. */
struct noise_ctx {
	dp_csprng *rng;
	dp_bitsource inner;
	bool broken;
	long fills;
};

static inline int noise_fill(void *ctx, void *buf, size_t len)
{
	struct noise_ctx *n = ctx;

	__atomic_add_fetch(&n->fills, 1, __ATOMIC_SEQ_CST);
	note('N');
	if (__atomic_load_n(&n->broken, __ATOMIC_SEQ_CST))
		return dp_error_set(DP_ERNG, "test: broken source");
	return n->inner.fill(n->inner.ctx, buf, len);
}

static inline dp_bitsource noise_bits(struct noise_ctx *n)
{
	assert_int_equal(dp_rng_csprng_new(&n->rng), 0);
	n->inner = dp_rng_csprng_bits(n->rng);
	n->broken = false;
	n->fills = 0;
	return (dp_bitsource){ .fill = noise_fill, .ctx = n };
}

/* A budget of owner "alice" on the directory `name` of the test's
 * temporary directory; the caller sets what else the test needs in cfg
 * before own_budget_open. */
struct budget_fx {
	char path[256];
	struct own_budget_config cfg;
	struct own_budget b;
};

static inline void budget_fx_init(struct budget_fx *f, const char *name, double epsilon,
				  double lifetime)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "%s/%s", dir, name);
	f->cfg.path = f->path;
	f->cfg.epsilon = epsilon;
	f->cfg.lifetime = lifetime;
	f->cfg.owner_id = "alice";
}

/* Open and bind `job` with cap K: the state every decision starts from. */
static inline void budget_fx_bind(struct budget_fx *f, const char *job, uint64_t K)
{
	assert_int_equal(own_budget_open(&f->b, &f->cfg), 0);
	assert_int_equal(own_budget_bind(&f->b, job, K), 0);
}

/* The lifetime cap lowered to `lifetime` after `job` (bound with K) began:
 * close, reopen, bind again.  The job's ledger keeps the cap it was made
 * with, so it allows more than the lifetime now does: the case the
 * lifetime's refusals are for, since a new job's ledger is capped at what
 * the lifetime leaves (docs/ledger.md §8). */
static inline void budget_fx_lower_lifetime(struct budget_fx *f, const char *job, uint64_t K,
					    double lifetime)
{
	own_budget_close(&f->b);
	f->cfg.lifetime = lifetime;
	budget_fx_bind(f, job, K);
}

/* The job ledger's size in bytes: a 256-byte header and 64 per record
 * (docs/ledger.md). */
static inline off_t file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

/* A test group's setup and teardown: error lines only, every sync through
 * sync_hook, and the temporary directory /tmp/<prefix>.XXXXXX. */
static inline int owntest_setup(const char *prefix)
{
	dp_log_set_level(DP_LOG_ERROR);
	dp_file_set_sync_hook(sync_hook);
	return tmpdir_setup(prefix);
}

static inline int owntest_teardown(void)
{
	dp_file_set_sync_hook(NULL);
	return tmpdir_teardown();
}

/* Exact equality of two doubles, both shown on failure (cmocka 1.1 only
 * compares floats, within a tolerance). */
#define assert_double_exact(a, b)                                              \
	do {                                                                   \
		double a_ = (a), b_ = (b);                                     \
		if (!(a_ == b_))                                               \
			fail_msg("%s = %.17g, expected %.17g", #a, a_, b_);    \
	} while (0)

#define LEDGER_SIZE(records) ((off_t)(256 + 64 * (records)))

#endif
