/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for owner/budget.c: the privacy order of one answer (check, then
 * the caller's computation, then the durable charge, and only then the
 * send: docs/privacy.md §5), the caps of a job and of the lifetime
 * (docs/ledger.md §8) and reserve-ahead (docs/ledger.md §9).
 *
 * The budget is built without a loop or a connection: a job-ledger
 * directory in a temporary directory.  Every fdatasync goes through the
 * test's sync hook (owntest.h), which notes it and the file's size then,
 * so a test sees which syncs happened, in which order against the send,
 * and that the record was in the file when it was synced.
 *
 * Expected values are worked out by hand from the documents, not from the
 * code: an epsilon of 1 over K = 4 answers is 0.25 each, exact in binary
 * and in nano-epsilon, and 1 over K = 3 is 333,333,333 nano-epsilon each
 * (docs/ledger.md §2); the record flags of a reserve-ahead job are 0, 5,
 * 3, 3, 2 (docs/ledger.md §9); a record is 64 bytes after a 256-byte
 * header, little-endian (docs/ledger.md §3). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/ledger.h"
#include "common/core/ledgerset.h"
#include "common/core/nano.h"
#include "common/core/noise.h"
#include "common/core/zcdp.h"
#include "common/core/log.h"
#include "common/net/metrics.h"

#include "owner/budget.h"

#include "tmpdir.h"
#include "owntest.h"

/* One record of a job ledger as the document lays it out. */
struct rec_view {
	uint32_t flags;
	uint64_t k, charge, total, count;
};

static uint64_t le(const unsigned char *p, int bytes)
{
	uint64_t v = 0;

	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static struct rec_view record_at(const char *path, unsigned i)
{
	unsigned char r[64];
	struct rec_view v;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, r, sizeof(r), 256 + 64 * (off_t)i), 64);
	close(fd);
	assert_memory_equal(r, "DPLR", 4);
	v.flags = (uint32_t)le(r + 4, 4);
	v.k = le(r + 16, 8);
	v.charge = le(r + 24, 8);
	v.total = le(r + 32, 8);
	v.count = le(r + 40, 8);
	return v;
}

/* dir/name/jobs/<job>.ledger, the file of a job with a plain name (docs/ledger.md §8). */
static const char *job_file(const struct budget_fx *f, const char *job)
{
	static char p[320];

	snprintf(p, sizeof(p), "%s/jobs/%s.ledger", f->path, job);
	return p;
}

/* begin + commit of request k, which must succeed. */
static void answer(struct budget_fx *f, uint64_t k, struct own_budget_status *after)
{
	struct own_budget_ticket t;

	assert_int_equal(own_budget_begin(&f->b, k, &t), 0);
	assert_int_equal(t.k, k);
	assert_int_equal(own_budget_commit(&f->b, &t, after), 0);
}

/* settle, then the caller's sync reported as err. */
static int settle(struct budget_fx *f, uint64_t want_seq, int err)
{
	struct own_budget_sync s;

	assert_int_equal(own_budget_settle(&f->b, &s), 0);
	assert_non_null(s.path);
	assert_string_equal(s.path, dp_ledger_path(f->b.ledger));
	assert_int_equal(s.seq, want_seq);
	return own_budget_synced(&f->b, &s, err);
}

/* Check, compute, charge, sync, send: each answer's record is synced, with
 * the record in the file, before the test "sends" it (X); the check writes
 * and syncs nothing. */
static void test_order(void **state)
{
	struct budget_fx f;
	struct own_budget_ticket t;
	struct own_budget_status st;
	struct dp_metrics *reg;
	struct dp_metric *spent, *left;
	size_t m;

	assert_int_equal(dp_metrics_new(&reg), 0);
	assert_int_equal(dp_metrics_gauge(reg, "spent", "", &spent), 0);
	assert_int_equal(dp_metrics_gauge(reg, "left", "", &left), 0);
	budget_fx_init(&f, "order", 1.0, INFINITY);
	f.cfg.spent = spent;
	f.cfg.left = left;
	budget_fx_bind(&f, "J", 4);
	assert_double_exact(f.b.eps_q, 0.25);
	assert_int_equal(file_size(job_file(&f, "J")), LEDGER_SIZE(0));
	for (uint64_t k = 1; k <= 4; k++) {
		m = mark();
		assert_int_equal(own_budget_begin(&f.b, k, &t), 0);
		assert_double_exact(t.eps_q, 0.25);
		/* the check: nothing written, nothing synced */
		assert_string_equal(events_since(m), "");
		assert_int_equal(file_size(job_file(&f, "J")), LEDGER_SIZE(k - 1));
		assert_int_equal(own_budget_commit(&f.b, &t, &st), 0);
		note('X');
		assert_string_equal(events_since(m), "SX");
		assert_int_equal(synced_size(), LEDGER_SIZE(k));
		assert_int_equal(st.answers, k);
		assert_double_exact(st.spent, 0.25 * (double)k);
		assert_double_exact(st.left, 1.0 - 0.25 * (double)k);
		assert_double_exact(dp_metrics_value(spent), 0.25 * (double)k);
		assert_double_exact(dp_metrics_value(left), 1.0 - 0.25 * (double)k);
	}
	for (unsigned i = 0; i < 4; i++) {
		struct rec_view r = record_at(job_file(&f, "J"), i);

		assert_int_equal(r.flags, 0);
		assert_int_equal(r.k, i + 1);
		assert_int_equal(r.charge, 250000000u);
		assert_int_equal(r.total, 250000000u * (i + 1));
	}
	own_budget_close(&f.b);
	own_budget_close(&f.b);   /* idempotent */
	dp_metrics_destroy(reg);
	(void)state;
}

/* The job's caps: the answer that reaches epsilon exactly is given, the
 * next is refused before anything is written; the answer cap refuses too,
 * also when epsilon is not yet spent. */
static void test_caps(void **state)
{
	struct budget_fx f;
	struct own_budget_ticket t;
	struct own_budget_status st;
	size_t m;

	budget_fx_init(&f, "caps", 1.0, INFINITY);
	budget_fx_bind(&f, "J", 4);
	for (uint64_t k = 1; k <= 3; k++)
		answer(&f, k, &st);
	assert_true(own_budget_left(&f.b));
	answer(&f, 4, &st);
	assert_double_exact(st.spent, 1.0);     /* exactly at the cap: given */
	assert_double_exact(st.left, 0.0);
	assert_false(own_budget_left(&f.b));
	assert_false(own_budget_lifetime_blocks(&f.b));
	m = mark();
	assert_int_equal(own_budget_begin(&f.b, 5, &t), DP_EBUDGET);
	assert_false(own_budget_lifetime_hit(&f.b));
	assert_string_equal(events_since(m), "");
	assert_int_equal(file_size(job_file(&f, "J")), LEDGER_SIZE(4));
	own_budget_close(&f.b);

	/* 1/3 does not split 1 exactly: three answers of 0.333333333 (rounded
	 * down so that 3 of them fit in 10^9 nano-epsilon), then the answer
	 * cap, with 1 nano-epsilon still left. */
	budget_fx_init(&f, "third", 1.0, INFINITY);
	budget_fx_bind(&f, "J", 3);
	for (uint64_t k = 1; k <= 3; k++)
		answer(&f, k, &st);
	assert_int_equal(record_at(job_file(&f, "J"), 2).total, 999999999u);
	assert_false(own_budget_left(&f.b));
	assert_int_equal(own_budget_begin(&f.b, 4, &t), DP_EBUDGET);
	own_budget_close(&f.b);

	/* --answers-cap 2 wins over the learner's K = 4: 0.5 each. */
	budget_fx_init(&f, "anscap", 1.0, INFINITY);
	f.cfg.answers_cap = 2;
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	assert_int_equal(own_budget_cap_for(&f.b, 4), 2);
	assert_int_equal(own_budget_bind(&f.b, "J", 4), 0);
	assert_int_equal(f.b.K, 2);
	assert_double_exact(f.b.eps_q, 0.5);
	answer(&f, 1, &st);
	answer(&f, 2, &st);
	assert_int_equal(own_budget_begin(&f.b, 3, &t), DP_EBUDGET);
	own_budget_close(&f.b);
	(void)state;
}

/* A repeated k is refused (never fresh noise), also after a restart; a k
 * below the last one that was never answered is a protocol error; neither
 * writes or syncs anything. */
static void test_repeated_k(void **state)
{
	struct budget_fx f;
	struct own_budget_ticket t;
	struct own_budget_status st;
	size_t m;

	budget_fx_init(&f, "repeat", 1.0, INFINITY);
	budget_fx_bind(&f, "J", 4);
	answer(&f, 1, &st);
	answer(&f, 5, &st);
	m = mark();
	assert_int_equal(own_budget_begin(&f.b, 5, &t), DP_ESTATE);
	assert_int_equal(own_budget_begin(&f.b, 1, &t), DP_ESTATE);
	assert_int_equal(own_budget_begin(&f.b, 3, &t), DP_EPROTO);
	assert_string_equal(dp_error_detail(DP_EPROTO),
			    "query k=3 is not above the last answered k=5");
	assert_string_equal(events_since(m), "");
	assert_int_equal(file_size(job_file(&f, "J")), LEDGER_SIZE(2));

	/* A restart: the same job resumes from its ledger. */
	own_budget_close(&f.b);
	budget_fx_bind(&f, "J", 4);
	own_budget_status(&f.b, &st);
	assert_int_equal(st.answers, 2);
	assert_double_exact(st.spent, 0.5);
	assert_int_equal(own_budget_begin(&f.b, 5, &t), DP_ESTATE);
	answer(&f, 6, &st);
	assert_int_equal(st.answers, 3);
	own_budget_close(&f.b);
	(void)state;
}

/* A failed sync: the charge is not released (the caller gets DP_EIO), and
 * nothing is answered again, even once the disk is back. */
static void test_failed_sync(void **state)
{
	struct budget_fx f;
	struct own_budget_ticket t;
	struct own_budget_status st;

	budget_fx_init(&f, "failsync", 1.0, INFINITY);
	budget_fx_bind(&f, "J", 4);
	answer(&f, 1, &st);
	assert_int_equal(own_budget_begin(&f.b, 2, &t), 0);
	fail_syncs(EIO);
	assert_int_equal(own_budget_commit(&f.b, &t, &st), DP_EIO);
	fail_syncs(0);
	assert_false(own_budget_left(&f.b));
	assert_false(own_budget_lifetime_blocks(&f.b));
	assert_int_equal(own_budget_begin(&f.b, 3, &t), DP_EIO);
	assert_int_equal(own_budget_begin(&f.b, 4, &t), DP_EIO);
	/* The failed charge counts as spent; nothing is left. */
	own_budget_status(&f.b, &st);
	assert_int_equal(st.answers, 2);
	assert_double_exact(st.left, 0.0);
	own_budget_close(&f.b);
	(void)state;
}

/* The directory no longer reads when a job is closed (a damaged job file
 * appeared in it): the lifetime total is unknown, so nothing is answered
 * again by this budget, whatever job is bound next. */
static void test_directory_fails(void **state)
{
	struct budget_fx f;
	struct own_budget_ticket t;
	struct own_budget_status st;
	char bad[320];
	FILE *fp;

	budget_fx_init(&f, "dirfail", 1.0, INFINITY);
	budget_fx_bind(&f, "A", 4);
	answer(&f, 1, &st);
	snprintf(bad, sizeof(bad), "%s/job-X.ledger", f.path);
	fp = fopen(bad, "w");
	assert_non_null(fp);
	fputs("not a ledger", fp);
	fclose(fp);
	assert_int_equal(own_budget_bind(&f.b, "B", 4), DP_EIO);
	assert_false(own_budget_left(&f.b));
	unlink(bad);
	assert_int_equal(own_budget_bind(&f.b, "B", 4), 0);
	assert_false(own_budget_left(&f.b));
	assert_int_equal(own_budget_begin(&f.b, 1, &t), DP_EIO);
	own_budget_close(&f.b);
	(void)state;
}

/* A computation that is not wanted closes its ticket without a charge;
 * the same k can then be asked again. */
static void test_abandon(void **state)
{
	struct budget_fx f;
	struct own_budget_ticket t;
	struct own_budget_status st;
	size_t m;

	budget_fx_init(&f, "abandon", 1.0, INFINITY);
	budget_fx_bind(&f, "J", 4);
	m = mark();
	assert_int_equal(own_budget_begin(&f.b, 1, &t), 0);
	own_budget_abandon(&f.b, &t);
	assert_string_equal(events_since(m), "");
	assert_int_equal(file_size(job_file(&f, "J")), LEDGER_SIZE(0));
	answer(&f, 1, &st);
	assert_int_equal(st.answers, 1);
	own_budget_close(&f.b);
	(void)state;
}

/* The lifetime cap over jobs (docs/ledger.md §8), lowered to 0.5 after job
 * A began with its cap 1: 0.5 over K = 4 answers of 0.25 is two answers,
 * the second exactly at the cap; then refusals that say it was the
 * lifetime's. */
static void test_lifetime(void **state)
{
	struct budget_fx f;
	struct own_budget_ticket t;
	struct own_budget_status st;

	budget_fx_init(&f, "life", 1.0, 1.0);
	budget_fx_bind(&f, "A", 4);
	budget_fx_lower_lifetime(&f, "A", 4, 0.5);
	assert_false(own_budget_lifetime_spent(&f.b));
	answer(&f, 1, &st);
	assert_double_exact(st.lifetime_spent, 0.25);
	assert_double_exact(st.lifetime_left, 0.25);
	answer(&f, 2, &st);
	assert_double_exact(st.lifetime_left, 0.0);
	assert_false(own_budget_left(&f.b));
	assert_true(own_budget_lifetime_blocks(&f.b));
	assert_true(own_budget_lifetime_spent(&f.b));
	assert_int_equal(own_budget_begin(&f.b, 3, &t), DP_EBUDGET);
	assert_true(own_budget_lifetime_hit(&f.b));
	/* Spent to the last nano-epsilon: a job with no ledger here is
	 * refused for good, the bound one is not. */
	assert_false(own_budget_refuses_job(&f.b, "A"));
	assert_true(own_budget_refuses_job(&f.b, "B"));
	own_budget_close(&f.b);

	/* After a restart, unbound: the newest job is the one the Hello
	 * speaks of, and a job with a file here is rejoined. */
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	own_budget_status(&f.b, &st);
	assert_false(st.bound);
	assert_string_equal(st.job, "A");
	assert_int_equal(st.answers, 2);
	assert_int_equal(st.cap, 4);
	assert_double_exact(st.left, 1.0);
	assert_double_exact(st.lifetime_spent, 0.5);
	assert_false(own_budget_refuses_job(&f.b, "A"));
	assert_true(own_budget_refuses_job(&f.b, "B"));
	own_budget_close(&f.b);
	(void)state;
}

/* A second job counts the first's spend towards the lifetime cap (0.75,
 * lowered after job A began with its cap 1): job A spends 0.5; job B's
 * ledger is capped at the 0.25 the lifetime leaves, so its 4 answers are
 * 0.0625 each and all fit; then its answer cap, not the lifetime, stops
 * it (docs/ledger.md §8 "A new job's cap is what is left"). */
static void test_lifetime_jobs(void **state)
{
	struct budget_fx f;
	struct own_budget_ticket t;
	struct own_budget_status st;

	budget_fx_init(&f, "jobs", 1.0, 1.0);
	budget_fx_bind(&f, "A", 4);
	budget_fx_lower_lifetime(&f, "A", 4, 0.75);
	answer(&f, 1, &st);
	answer(&f, 2, &st);
	assert_false(own_budget_refuses_job(&f.b, "B"));   /* 0.25 still left */
	assert_int_equal(own_budget_bind(&f.b, "B", 4), 0);
	assert_string_equal(f.b.job, "B");
	own_budget_status(&f.b, &st);
	assert_true(st.bound);
	assert_string_equal(st.job, "B");
	assert_int_equal(st.answers, 0);
	assert_double_exact(st.lifetime_spent, 0.5);
	assert_double_exact(st.lifetime_left, 0.25);
	assert_double_exact(st.job_left, 0.25);   /* the Hello's epsilon_left */
	for (uint64_t k = 1; k <= 4; k++)       /* B's request ids start at 1 again */
		answer(&f, k, &st);
	assert_double_exact(st.spent, 0.25);
	assert_double_exact(st.lifetime_spent, 0.75);
	assert_int_equal(own_budget_begin(&f.b, 5, &t), DP_EBUDGET);
	assert_false(own_budget_lifetime_hit(&f.b));   /* its own caps: all answered */
	/* Rebinding A: its own ledger again, nothing more to give. */
	assert_int_equal(own_budget_bind(&f.b, "A", 4), 0);
	assert_int_equal(own_budget_begin(&f.b, 3, &t), DP_EBUDGET);
	assert_true(own_budget_lifetime_hit(&f.b));
	assert_true(own_budget_refuses_job(&f.b, "C"));
	assert_false(own_budget_refuses_job(&f.b, "B"));
	own_budget_close(&f.b);
	(void)state;
}

/* The lifetime cap is the directory's (docs/ledger.md §11): the first
 * open records the configured one; a given one above it is refused (the
 * check too), one below it lowers it for good and is recorded (a check
 * only reports it); one not given gives way to the recorded cap, which is
 * the one enforced. */
static void test_lifetime_recorded(void **state)
{
	struct budget_fx f;
	struct own_budget_ticket t;
	struct own_budget_status st;
	const dp_ledgerset_change *c;
	char line[512];

	budget_fx_init(&f, "recorded", 1.0, 1.5);
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	own_budget_status(&f.b, &st);
	assert_double_exact(st.lifetime_cap, 1.5);
	assert_double_exact(st.lifetime_left, 1.5);
	assert_int_equal(dp_ledgerset_lifetime_count(f.b.set), 1);
	own_budget_close(&f.b);

	f.cfg.lifetime = 1.0;           /* the default, --epsilon: not given */
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	own_budget_status(&f.b, &st);
	assert_double_exact(st.lifetime_cap, 1.5);
	own_budget_close(&f.b);

	f.cfg.lifetime = 2.0;
	f.cfg.lifetime_given = true;
	assert_int_equal(own_budget_open(&f.b, &f.cfg), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "dpasync ledger raise-lifetime"));
	assert_null(f.b.set);
	f.cfg.check_only = true;
	assert_int_equal(own_budget_open(&f.b, &f.cfg), DP_EINVAL);

	f.cfg.lifetime = 0.5;           /* a check: reported, not written */
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	own_budget_status(&f.b, &st);
	assert_double_exact(st.lifetime_cap, 0.5);
	assert_int_equal(dp_ledgerset_lifetime_count(f.b.set), 1);
	own_budget_describe(&f.b, line, sizeof(line));
	assert_non_null(strstr(line, "lifetime cap 0.5 ("));
	assert_non_null(strstr(line, "which the start lowers"));
	assert_non_null(strstr(line, "left 0.5; a new job's epsilon 0.5"));
	own_budget_close(&f.b);

	f.cfg.check_only = false;       /* lowered for good, recorded */
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	own_budget_status(&f.b, &st);
	assert_double_exact(st.lifetime_cap, 0.5);
	assert_int_equal(dp_ledgerset_lifetime_count(f.b.set), 2);
	c = dp_ledgerset_lifetime_at(f.b.set, 1);
	assert_true(c->old_nano == 1500000000u && c->new_nano == 500000000u);
	assert_string_equal(c->program, "ownerd");
	own_budget_close(&f.b);
	f.cfg.lifetime = 1.5;           /* now a raise */
	assert_int_equal(own_budget_open(&f.b, &f.cfg), DP_EINVAL);

	/* Not given: 0.5 is enforced.  What is left, which the Hello says
	 * and which caps a new job's ledger (docs/ledger.md §8 "A new job's
	 * cap is what is left"), is the recorded cap's, not the configured 10's
	 * nor --epsilon's: J's K = 4 answers are 0.125 each. */
	f.cfg.lifetime = 10;
	f.cfg.lifetime_given = false;
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	own_budget_status(&f.b, &st);
	assert_double_exact(st.lifetime_left, 0.5);
	assert_double_exact(st.job_left, 0.5);
	assert_int_equal(own_budget_bind(&f.b, "J", 4), 0);
	assert_true(dp_ledger_cap(f.b.ledger) == 0.5);
	for (uint64_t k = 1; k <= 4; k++)
		answer(&f, k, &st);
	assert_double_exact(st.lifetime_spent, 0.5);
	assert_double_exact(st.lifetime_left, 0.0);
	assert_int_equal(own_budget_begin(&f.b, 5, &t), DP_EBUDGET);
	own_budget_close(&f.b);
	(void)state;
}

/* The lifetime delta (docs/ownerd.md "Mechanisms and delta"): a new
 * directory records the configured one; later, not given, the recorded one
 * is in force; given and lower, it is lowered for good (recorded); given
 * and higher, the start is refused. */
static void test_lifetime_delta(void **state)
{
	struct budget_fx f;
	struct own_budget_status st;

	(void)state;
	budget_fx_init(&f, "delta", 1.0, 1.0);
	f.cfg.lifetime_delta = 1e-6;
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	own_budget_status(&f.b, &st);
	assert_true(st.lifetime_delta == 1e-6);
	assert_true(dp_ledgerset_lifetime_delta(f.b.set) == 1e-6);
	own_budget_close(&f.b);

	f.cfg.lifetime_delta = 0;   /* --delta 0 now, lifetime-delta not given */
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	own_budget_status(&f.b, &st);
	assert_true(st.lifetime_delta == 1e-6);
	own_budget_close(&f.b);

	f.cfg.lifetime_delta = 1e-5;
	f.cfg.lifetime_delta_given = true;
	assert_int_equal(own_budget_open(&f.b, &f.cfg), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "--lifetime-delta 1e-05 is above the "
			       "lifetime delta 1e-06"));
	assert_null(f.b.set);

	f.cfg.lifetime_delta = 1e-7;
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	own_budget_status(&f.b, &st);
	assert_true(st.lifetime_delta == 1e-7);
	assert_int_equal(dp_ledgerset_lifetime_count(f.b.set), 2);
	own_budget_close(&f.b);
	f.cfg.lifetime_delta_given = false;
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	assert_true(dp_ledgerset_lifetime_delta(f.b.set) == 1e-7);
	own_budget_close(&f.b);
}

/* Write `len` bytes as a new file at `path` (a new inode, as `cp` over a
 * removed file leaves it). */
static void new_file(const char *path, const char *bytes, size_t len)
{
	FILE *fp;

	fp = fopen(path, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(bytes, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
}

/* A job file this process closed, replaced by an older copy or removed
 * while the daemon runs, gives no budget back: the lifetime still counts
 * what the process's own ledger held, and binding that job again is
 * refused as a rollback (docs/ledger.md §8). */
static void test_closed_rollback(void **state)
{
	struct budget_fx f;
	struct own_budget_status st;
	char a[320], *old = NULL;
	size_t len = 0;

	budget_fx_init(&f, "rollback", 1.0, 1.0);
	budget_fx_bind(&f, "A", 4);
	snprintf(a, sizeof(a), "%s", job_file(&f, "A"));
	answer(&f, 1, &st);
	assert_int_equal(dp_file_read_all(a, 1 << 20, &old, &len), 0);   /* 0.25 */
	answer(&f, 2, &st);
	assert_int_equal(own_budget_bind(&f.b, "B", 4), 0);             /* A closed at 0.5 */
	assert_int_equal(unlink(a), 0);
	new_file(a, old, len);
	assert_int_equal(own_budget_bind(&f.b, "C", 4), 0);
	own_budget_status(&f.b, &st);
	assert_double_exact(st.lifetime_spent, 0.5);
	assert_int_equal(unlink(a), 0);
	assert_int_equal(own_budget_bind(&f.b, "D", 4), 0);
	own_budget_status(&f.b, &st);
	assert_double_exact(st.lifetime_spent, 0.5);
	new_file(a, old, len);
	assert_int_equal(own_budget_bind(&f.b, "A", 4), DP_ECORRUPT);
	assert_non_null(strstr(dp_error_detail(DP_ECORRUPT), "replaced while the daemon ran"));
	assert_null(f.b.ledger);
	free(old);
	own_budget_close(&f.b);
	(void)state;
}

/* The gauges: the two of a job's ledger carry its id in job_id (none
 * while unbound), and follow the bound job without a series per old job;
 * the lifetime cap, spent and left (docs/operations.md §2). */
static void test_gauges(void **state)
{
	static const char *const job_id[] = { "job_id", NULL }, *const unbound[] = { "" };
	static const char *const delta[] = { "delta", NULL }, *const pure[] = { "0" };
	struct dp_metric_family *fs, *fl, *fd;
	struct dp_metric *cap, *lspent, *lleft, *lrho;
	struct own_budget_status st;
	struct dp_metrics *reg;
	struct budget_fx f;
	char *text = NULL;
	size_t len;

	assert_int_equal(dp_metrics_new(&reg), 0);
	assert_int_equal(dp_metrics_family(reg, DP_METRIC_GAUGE, "spent", "", job_id, NULL, 0, &fs),
			 0);
	assert_int_equal(dp_metrics_family(reg, DP_METRIC_GAUGE, "left", "", job_id, NULL, 0, &fl),
			 0);
	assert_int_equal(dp_metrics_gauge(reg, "cap", "", &cap), 0);
	assert_int_equal(dp_metrics_gauge(reg, "lspent", "", &lspent), 0);
	assert_int_equal(dp_metrics_gauge(reg, "lleft", "", &lleft), 0);
	assert_int_equal(dp_metrics_gauge(reg, "lrho", "", &lrho), 0);
	assert_int_equal(dp_metrics_family(reg, DP_METRIC_GAUGE, "latdelta", "", delta, NULL, 0,
					   &fd), 0);
	budget_fx_init(&f, "gauges", 1.0, 1.5);
	assert_int_equal(dp_metrics_series(fd, pure, &f.cfg.life_at_delta), 0);
	f.cfg.life_rho = lrho;
	assert_int_equal(dp_metrics_series(fs, unbound, &f.cfg.spent), 0);
	assert_int_equal(dp_metrics_series(fl, unbound, &f.cfg.left), 0);
	f.cfg.life_cap = cap;
	f.cfg.life_spent = lspent;
	f.cfg.life_left = lleft;
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	assert_double_exact(dp_metrics_value(cap), 1.5);
	assert_double_exact(dp_metrics_value(lleft), 1.5);
	assert_int_equal(own_budget_bind(&f.b, "J1", 4), 0);
	answer(&f, 1, &st);
	assert_int_equal(dp_metrics_render(reg, &text, &len), 0);
	assert_non_null(strstr(text, "spent{job_id=\"J1\"} 0.25\n"));
	assert_non_null(strstr(text, "left{job_id=\"J1\"} 0.75\n"));
	assert_non_null(strstr(text, "\nlspent 0.25\n"));
	assert_non_null(strstr(text, "\nlleft 1.25\n"));
	/* as zCDP 0.25^2 / 2; the spent epsilon at the lifetime delta 0 */
	assert_non_null(strstr(text, "\nlrho 0.03125\n"));
	assert_non_null(strstr(text, "\nlatdelta{delta=\"0\"} 0.25\n"));
	free(text);
	assert_int_equal(own_budget_bind(&f.b, "J2", 4), 0);
	assert_int_equal(dp_metrics_render(reg, &text, &len), 0);
	assert_non_null(strstr(text, "spent{job_id=\"J2\"} 0\n"));
	assert_null(strstr(text, "J1"));
	assert_non_null(strstr(text, "\nlspent 0.25\n"));
	free(text);
	own_budget_close(&f.b);
	dp_metrics_destroy(reg);
	(void)state;
}

/* The lifetime cap that f's directory records raised to `to`, as
 * `dpasync ledger raise-lifetime` does it (the budget is closed). */
static void raise_recorded(struct budget_fx *f, double to)
{
	dp_ledgerset *s = NULL;
	uint64_t nano = 0;

	assert_int_equal(dp_nano_floor(to, &nano), 0);
	assert_int_equal(dp_ledgerset_open(f->path, NULL, 0, NULL, &s), 0);
	assert_int_equal(dp_ledgerset_lifetime_set(s, nano, DP_LEDGERSET_ALLOW_RAISE, "test",
						   "raised by the test"), 0);
	dp_ledgerset_close(s);
}

/* A new job's ledger is capped at what the lifetime leaves (docs/ledger.md
 * §8 "A new job's cap is what is left"), the figure the Hello says
 * (job_left): after job A spent 0.9 of a lifetime 1, job B's cap is 0.1 and
 * its K = 10 answers of 0.01 all fit, none refused as the lifetime's.
 * Reopened, B keeps its cap; with the lifetime raised since, the cap is no
 * longer explained and the file is refused, as any other cap. */
static void test_new_job_cap(void **state)
{
	struct budget_fx f;
	struct own_budget_ticket t;
	struct own_budget_status st;

	budget_fx_init(&f, "newcap", 1.0, 1.0);
	budget_fx_bind(&f, "A", 10);
	own_budget_status(&f.b, &st);
	assert_double_exact(st.job_left, 1.0);
	for (uint64_t k = 1; k <= 9; k++)
		answer(&f, k, &st);
	assert_double_exact(st.lifetime_spent, 0.9);
	own_budget_status(&f.b, &st);
	assert_double_exact(st.job_left, 0.1);   /* A's own ledger: 0.1 left */
	assert_int_equal(own_budget_bind(&f.b, "B", 10), 0);
	assert_true(dp_ledger_cap(f.b.ledger) == 0.1);
	{
		uint64_t q = 0;   /* 0.01 as the ledger charges it: 10^7 nano-epsilon */

		assert_int_equal(dp_nano_ceil(f.b.eps_q, &q), 0);
		assert_int_equal(q, 10000000);
	}
	own_budget_status(&f.b, &st);
	assert_double_exact(st.job_left, 0.1);
	for (uint64_t k = 1; k <= 10; k++)
		answer(&f, k, &st);
	assert_double_exact(st.lifetime_spent, 1.0);
	assert_int_equal(own_budget_begin(&f.b, 11, &t), DP_EBUDGET);
	assert_false(own_budget_lifetime_hit(&f.b));
	own_budget_close(&f.b);

	/* Restarted, unbound: the Hello speaks of B, nothing left. */
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	own_budget_status(&f.b, &st);
	assert_string_equal(st.job, "B");
	assert_double_exact(st.job_left, 0.0);
	assert_int_equal(own_budget_bind(&f.b, "B", 10), 0);   /* its cap 0.1, explained */
	assert_true(dp_ledger_cap(f.b.ledger) == 0.1);
	own_budget_close(&f.b);
	/* Raised by the data owner (the directory's record, docs/ledger.md
	 * §11): B's 0.1 is no longer what it leaves. */
	raise_recorded(&f, 2.0);
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	assert_int_equal(own_budget_bind(&f.b, "B", 10), DP_EINVAL);
	own_budget_close(&f.b);
	(void)state;
}

/* Reserve-ahead, a whole job (docs/ledger.md §9): the first answer is
 * charged and synced; after it a reservation alone (flags 5); each later
 * answer leaves covered, with nothing written or synced before it, and
 * its settle records it and reserves the next share (3), until the caps
 * leave no room (2). */
static void test_reserve_ahead(void **state)
{
	static const uint32_t flags[] = { 0, 5, 3, 3, 2 };
	static const uint64_t ks[] = { 1, 0, 2, 3, 4 };
	static const uint64_t totals[] = { 250000000u, 500000000u, 750000000u, 1000000000u,
					   1000000000u };
	static const uint64_t counts[] = { 1, 2, 3, 4, 4 };
	struct budget_fx f;
	struct own_budget_ticket t;
	struct own_budget_status st;
	struct own_budget_sync s;
	size_t m;

	budget_fx_init(&f, "ahead", 1.0, INFINITY);
	f.cfg.reserve_ahead = true;
	budget_fx_bind(&f, "J", 4);
	m = mark();
	answer(&f, 1, &st);
	note('X');
	assert_string_equal(events_since(m), "SX");
	assert_int_equal(settle(&f, 2, 0), 0);
	own_budget_status(&f.b, &st);
	assert_double_exact(st.spent, 0.5);      /* the answer and the held share */
	assert_int_equal(st.answers, 2);
	for (uint64_t k = 2; k <= 4; k++) {
		assert_true(own_budget_left(&f.b));
		m = mark();
		answer(&f, k, &st);
		note('X');
		/* covered: out at once, nothing written before it */
		assert_string_equal(events_since(m), "X");
		assert_int_equal(file_size(job_file(&f, "J")), LEDGER_SIZE(k));
		assert_int_equal(settle(&f, k + 1, 0), 0);
	}
	assert_false(own_budget_left(&f.b));
	assert_int_equal(own_budget_begin(&f.b, 5, &t), DP_EBUDGET);
	for (unsigned i = 0; i < 5; i++) {
		struct rec_view r = record_at(job_file(&f, "J"), i);

		assert_int_equal(r.flags, flags[i]);
		assert_int_equal(r.k, ks[i]);
		assert_int_equal(r.total, totals[i]);
		assert_int_equal(r.count, counts[i]);
	}
	/* Nothing more to write: no sync asked. */
	assert_int_equal(own_budget_settle(&f.b, &s), 0);
	assert_null(s.path);
	own_budget_close(&f.b);
	(void)state;
}

/* A reservation whose sync has not reported is synced by the next answer
 * itself, before that answer may leave; a late report is harmless. */
static void test_reserve_unsynced(void **state)
{
	struct budget_fx f;
	struct own_budget_status st;
	struct own_budget_sync s;
	size_t m;

	budget_fx_init(&f, "unsynced", 1.0, INFINITY);
	f.cfg.reserve_ahead = true;
	budget_fx_bind(&f, "J", 4);
	answer(&f, 1, &st);
	m = mark();
	assert_int_equal(own_budget_settle(&f.b, &s), 0);
	assert_non_null(s.path);
	assert_string_equal(events_since(m), "");   /* the sync is the caller's */
	answer(&f, 2, &st);
	note('X');
	assert_string_equal(events_since(m), "SX");
	assert_int_equal(synced_size(), LEDGER_SIZE(2));
	assert_int_equal(own_budget_synced(&f.b, &s, 0), 0);
	assert_null(s.path);
	own_budget_close(&f.b);
	(void)state;
}

/* The caller's sync of a settle failed: the ledger has failed for good. */
static void test_reserve_sync_fails(void **state)
{
	struct budget_fx f;
	struct own_budget_ticket t;
	struct own_budget_status st;
	struct own_budget_sync s;

	budget_fx_init(&f, "settlefail", 1.0, INFINITY);
	f.cfg.reserve_ahead = true;
	budget_fx_bind(&f, "J", 4);
	answer(&f, 1, &st);
	assert_int_equal(settle(&f, 2, EIO), DP_EIO);
	assert_false(own_budget_left(&f.b));
	assert_int_equal(own_budget_begin(&f.b, 2, &t), DP_EIO);
	assert_int_equal(own_budget_settle(&f.b, &s), DP_EIO);
	own_budget_close(&f.b);
	(void)state;
}

/* A report for a ledger closed since (a new job was bound) is only
 * logged, whatever it says. */
static void test_reserve_stale_report(void **state)
{
	struct budget_fx f;
	struct own_budget_ticket t;
	struct own_budget_status st;
	struct own_budget_sync s;

	budget_fx_init(&f, "stale", 1.0, INFINITY);
	f.cfg.reserve_ahead = true;
	budget_fx_bind(&f, "A", 4);
	answer(&f, 1, &st);
	assert_int_equal(own_budget_settle(&f.b, &s), 0);
	assert_non_null(s.path);
	assert_int_equal(own_budget_bind(&f.b, "B", 4), 0);
	assert_int_equal(own_budget_synced(&f.b, &s, EIO), 0);
	assert_null(s.path);
	assert_int_equal(own_budget_begin(&f.b, 1, &t), 0);
	own_budget_abandon(&f.b, &t);
	own_budget_close(&f.b);
	(void)state;
}

/* Reserve-ahead under a lifetime cap lowered to 0.5: the share after the first
 * answer fits (0.25 + 0.25), the one after the second does not, so its
 * record reserves nothing (flags 2) and the third is the lifetime's
 * refusal. */
static void test_reserve_lifetime(void **state)
{
	struct budget_fx f;
	struct own_budget_ticket t;
	struct own_budget_status st;

	budget_fx_init(&f, "aheadlife", 1.0, 1.0);
	f.cfg.reserve_ahead = true;
	budget_fx_bind(&f, "J", 4);
	budget_fx_lower_lifetime(&f, "J", 4, 0.5);   /* J keeps its cap 1 */
	answer(&f, 1, &st);
	assert_int_equal(settle(&f, 2, 0), 0);
	answer(&f, 2, &st);
	assert_int_equal(settle(&f, 3, 0), 0);
	assert_int_equal(record_at(job_file(&f, "J"), 2).flags, 2);
	own_budget_status(&f.b, &st);
	assert_double_exact(st.lifetime_spent, 0.5);
	assert_false(own_budget_left(&f.b));
	assert_true(own_budget_lifetime_blocks(&f.b));
	assert_int_equal(own_budget_begin(&f.b, 3, &t), DP_EBUDGET);
	assert_true(own_budget_lifetime_hit(&f.b));
	own_budget_close(&f.b);
	(void)state;
}

/* Without --reserve-ahead, or with no job bound, a settle has nothing to
 * do. */
static void test_settle_noop(void **state)
{
	struct budget_fx f;
	struct own_budget_status st;
	struct own_budget_sync s;

	budget_fx_init(&f, "noahead", 1.0, INFINITY);
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	assert_int_equal(own_budget_settle(&f.b, &s), 0);
	assert_null(s.path);
	assert_int_equal(own_budget_bind(&f.b, "J", 4), 0);
	answer(&f, 1, &st);
	assert_int_equal(own_budget_settle(&f.b, &s), 0);
	assert_null(s.path);
	assert_int_equal(file_size(job_file(&f, "J")), LEDGER_SIZE(1));
	own_budget_close(&f.b);
	(void)state;
}

/* Binding: the same job again is a no-op, with other caps an error; a
 * reopened job must keep its epsilon; an epsilon too small to split over K
 * is refused. */
static void test_bind(void **state)
{
	struct budget_fx f;
	struct own_budget_status st;

	budget_fx_init(&f, "bind", 1.0, INFINITY);
	budget_fx_bind(&f, "J", 4);
	answer(&f, 1, &st);
	assert_int_equal(own_budget_bind(&f.b, "J", 4), 0);
	own_budget_status(&f.b, &st);
	assert_int_equal(st.answers, 1);
	assert_int_equal(own_budget_bind(&f.b, "J", 5), DP_EINVAL);
	own_budget_close(&f.b);

	f.cfg.epsilon = 2.0;
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	assert_int_equal(own_budget_bind(&f.b, "J", 4), DP_EINVAL);
	assert_null(f.b.ledger);
	own_budget_close(&f.b);
	/* 2 nano-epsilon cannot be split over 3 answers */
	f.cfg.epsilon = 2e-9;
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	assert_int_equal(own_budget_bind(&f.b, "K", 3), DP_EINVAL);
	assert_null(f.b.ledger);
	own_budget_close(&f.b);
	(void)state;
}

/* The ledger header binds owner and job: "owner=alice job=<job>" while it
 * fits in 127 bytes (a job of 111 characters), else the first 128 bits of
 * the job's SHA-256 (computed with sha256sum). */
static void test_identity(void **state)
{
	char job[113];
	struct budget_fx f;

	budget_fx_init(&f, "ident", 1.0, INFINITY);
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	memset(job, 'y', 111);
	job[111] = '\0';
	assert_int_equal(own_budget_bind(&f.b, job, 4), 0);
	assert_int_equal(strlen(dp_ledger_identity(f.b.ledger)), 127);
	assert_int_equal(strncmp(dp_ledger_identity(f.b.ledger), "owner=alice job=yyy", 19), 0);
	job[111] = 'y';
	job[112] = '\0';
	assert_int_equal(own_budget_bind(&f.b, job, 4), 0);
	assert_string_equal(dp_ledger_identity(f.b.ledger),
			    "owner=alice job-sha256=105711f926338dd767e5e6931a4c5f0d");
	own_budget_close(&f.b);
	(void)state;
}

/* Peer mode's fixed share per wake-up, and the warm start's own share
 * charged in the same ledger. */
static void test_peer_shares(void **state)
{
	struct budget_fx f;
	struct own_budget_ticket t;
	struct own_budget_status st;

	budget_fx_init(&f, "peer", 1.0, INFINITY);
	f.cfg.eps_step = 0.125;
	budget_fx_bind(&f, "J", 100);
	assert_double_exact(f.b.eps_q, 0.125);
	assert_int_equal(own_budget_begin_eps(&f.b, 1, 0.5, &t), 0);
	assert_double_exact(t.eps_q, 0.5);
	assert_int_equal(own_budget_commit(&f.b, &t, &st), 0);
	answer(&f, 2, &st);
	assert_double_exact(st.spent, 0.625);
	assert_int_equal(record_at(job_file(&f, "J"), 1).charge, 125000000u);
	own_budget_close(&f.b);
	(void)state;
}

/* --allow-no-noise: an infinite epsilon, still counted against K. */
static void test_infinite(void **state)
{
	struct budget_fx f;
	struct own_budget_ticket t;
	struct own_budget_status st;

	budget_fx_init(&f, "inf", INFINITY, INFINITY);
	f.cfg.allow_inf = true;
	budget_fx_bind(&f, "J", 2);
	assert_true(isinf(f.b.eps_q));
	answer(&f, 1, &st);
	assert_true(isinf(st.spent));
	assert_true(isinf(st.lifetime_spent));
	assert_true(isinf(st.lifetime_left));
	answer(&f, 2, &st);
	assert_int_equal(own_budget_begin(&f.b, 3, &t), DP_EBUDGET);
	own_budget_close(&f.b);
	(void)state;
}

/* Opening: a fresh directory, --check-config (creates nothing, takes no
 * lock), a file where the directory should be, a directory another
 * process holds, a lifetime that is not a number of epsilon. */
static void test_open(void **state)
{
	struct budget_fx f, g;
	struct own_budget_status st;

	budget_fx_init(&f, "open", 1.0, INFINITY);
	f.cfg.check_only = true;
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	assert_int_equal(access(f.path, F_OK), -1);
	own_budget_status(&f.b, &st);
	assert_false(st.bound);
	assert_string_equal(st.job, "");
	assert_double_exact(st.left, 1.0);
	assert_true(isinf(st.lifetime_left));
	own_budget_close(&f.b);

	f.cfg.check_only = false;
	budget_fx_bind(&f, "J", 4);
	/* held: a second daemon on it is refused, a check is not */
	g = f;
	assert_int_equal(own_budget_open(&g.b, &f.cfg), DP_ESTATE);
	g.cfg.check_only = true;
	assert_int_equal(own_budget_open(&g.b, &g.cfg), 0);
	own_budget_status(&g.b, &st);
	assert_string_equal(st.job, "J");
	own_budget_close(&g.b);
	own_budget_close(&f.b);

	budget_fx_init(&f, "afile", 1.0, INFINITY);
	close(open(f.path, O_CREAT | O_WRONLY, 0600));
	assert_int_equal(own_budget_open(&f.b, &f.cfg), DP_EINVAL);

	budget_fx_init(&f, "badlife", 1.0, -1.0);
	assert_int_equal(own_budget_open(&f.b, &f.cfg), DP_EINVAL);
	(void)state;
}

static int setup(void **state)
{
	(void)state;
	return owntest_setup("test_budget");
}

static int teardown(void **state)
{
	(void)state;
	return owntest_teardown();
}

/* ownerd's lifetime check beside a Gaussian job (docs/ledger.md §8): the
 * directory holds job G, two Gaussian answers of rho 0.01 (10 000 001
 * nano-rho each, one nano-epsilon of slack each).  At the lifetime delta 0
 * (never set) no bound exists: a Laplace job gets nothing, the lifetime
 * counts as spent.  Once the owner sets delta 1e-6 the bound is the
 * smaller of the two of docs/zcdp.md §5 and a Laplace job of 4 x 0.25
 * fits under the cap 3; the figures follow the four sums. */
static void test_lifetime_gaussian(void **state)
{
	const struct dp_ledgerset_init init = { 3000000000ull, "test", NULL, 0 };
	dp_zcdp_totals t = { 1000000000ull, 4 * 31250000ull, 20000002ull, 2 };
	struct own_budget_ticket tk;
	struct own_budget_status st;
	struct budget_fx f;
	dp_ledgerset *s = NULL;
	dp_ledger *l = NULL;
	double a = 0, want = 0;
	char *pg;

	budget_fx_init(&f, "gauss", 1.0, 3.0);
	assert_int_equal(dp_ledgerset_open(f.path, "alice", 0, &init, &s), 0);
	pg = dp_ledgerset_job_path(s, "G");
	assert_int_equal(dp_ledger_open_gauss(pg, 0.5, 1e-6, 1e-12, 10, "owner=alice job=G", 0, &l),
			 0);
	assert_int_equal(dp_ledger_charge(l, 1, 0.01, NULL), 0);
	assert_int_equal(dp_ledger_charge(l, 2, 0.01, NULL), 0);
	dp_ledger_close(l);
	free(pg);
	dp_ledgerset_close(s);

	/* delta 0: refused, and said so */
	budget_fx_bind(&f, "L", 4);
	own_budget_status(&f.b, &st);
	assert_true(isinf(st.lifetime_spent));
	assert_double_exact(st.lifetime_left, 0.0);
	assert_double_exact(st.lifetime_delta, 0.0);
	assert_true(own_budget_lifetime_spent(&f.b));
	assert_false(own_budget_left(&f.b));
	assert_int_equal(own_budget_begin(&f.b, 1, &tk), DP_EBUDGET);
	assert_true(own_budget_lifetime_hit(&f.b));
	own_budget_close(&f.b);

	/* the owner allows Gaussian answers at delta 1e-6 */
	assert_int_equal(dp_ledgerset_open(f.path, "alice", 0, &init, &s), 0);
	assert_int_equal(dp_ledgerset_lifetime_set_delta(s, 1e-6, DP_LEDGERSET_ALLOW_RAISE, "test",
							 "gaussian answers approved"), 0);
	dp_ledgerset_close(s);
	budget_fx_bind(&f, "L", 4);
	own_budget_status(&f.b, &st);
	assert_double_exact(st.lifetime_delta, 1e-6);
	assert_int_equal(dp_zcdp_eps(0.020000002, 2e-9, 1e-6, &a), 0);
	assert_true(st.lifetime_spent >= a && st.lifetime_spent <= a + 2e-9);
	assert_true(fabs(st.lifetime_rho - 0.020000002) < 1e-15);
	for (uint64_t k = 1; k <= 4; k++)
		answer(&f, k, &st);
	assert_int_equal(dp_zcdp_best_eps(&t, 1e-6, &want), 0);
	assert_true(st.lifetime_spent >= want && st.lifetime_spent <= want + 2e-9);
	assert_true(st.lifetime_spent <= 1.0 + a + 2e-9);
	assert_true(fabs(st.lifetime_rho - 0.145000002) < 1e-15);
	assert_false(own_budget_lifetime_spent(&f.b));
	own_budget_close(&f.b);
	(void)state;
}

/* A lifetime cap in nano-epsilon as a double that dp_nano_floor turns back
 * into exactly n. */
static double eps_exact(uint64_t n)
{
	double d = (double)n / 1e9;
	uint64_t got = 0;

	while (dp_nano_floor(d, &got) == 0 && got < n)
		d = nextafter(d, INFINITY);
	return d;
}

/* A Gaussian job (docs/zcdp.md §7): epsilon 1 at delta 1e-6 over K = 4
 * answers of p = 5 coordinates is shared as dp_zcdp_share says, the ledger
 * is in nano-rho with the job's delta, the four charges of ceil(rho_q)
 * fill the rho cap to within less than one nano-rho per answer (one more
 * nano each would not fit), and the status shows epsilon at delta, never
 * rho.  Reopened as a Laplace job it is refused; reopened as Gaussian it
 * keeps its share.  Then the lifetime cap at delta: lowered to exactly the
 * bound of three charges, the third answer is given and the fourth, which
 * the job's own cap allows, is refused as the lifetime's. */
static void test_gaussian(void **state)
{
	struct budget_fx f;
	struct own_budget_ticket t;
	struct own_budget_status st;
	dp_zcdp_totals tot = { 0, 0, 0, 0 }, one, three;
	double rho_q = 0, cap_rho = 0, e = 0;
	uint64_t slack = 0, q, capn, lim3;

	(void)state;
	assert_int_equal(dp_zcdp_share(1.0, 1e-6, 4, 5, DP_NOISE_DGAUSS_SLACK, DP_NOISE_DGAUSS_TAIL,
				       &rho_q, &slack), 0);
	assert_int_equal(dp_zcdp_cap(1.0, 1e-6, 4, 5, DP_NOISE_DGAUSS_SLACK, DP_NOISE_DGAUSS_TAIL,
				     &cap_rho, &slack), 0);
	assert_int_equal(dp_nano_ceil(rho_q, &q), 0);
	assert_int_equal(dp_nano_floor(cap_rho, &capn), 0);
	assert_true(4 * q <= capn && 4 * (q + 1) > capn);

	budget_fx_init(&f, "gaussian-job", 1.0, INFINITY);
	f.cfg.delta = 1e-6;
	f.cfg.lifetime_delta = 1e-6;
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	assert_int_equal(own_budget_bind_mech(&f.b, "G", 4, DP_MECH_GAUSSIAN, 5), 0);
	assert_true(f.b.eps_q == rho_q);
	assert_int_equal(dp_ledger_unit(f.b.ledger), DP_LEDGER_UNIT_RHO);
	assert_true(dp_ledger_delta(f.b.ledger) == 1e-6);
	for (uint64_t k = 1; k <= 2; k++) {
		answer(&f, k, &st);
		assert_int_equal(dp_zcdp_charge_gauss(rho_q, 5 * DP_NOISE_DGAUSS_SLACK, &one), 0);
		dp_zcdp_add(&tot, &one);
	}
	assert_int_equal(dp_ledger_spent_nano(f.b.ledger), 2 * q);
	assert_int_equal(dp_zcdp_best_eps(&tot, 1e-6, &e), 0);
	assert_true(st.gaussian && st.answers == 2);
	assert_true(st.spent == e && e > 0.5 && e < 1.0);   /* epsilon, not rho (~0.01) */
	assert_true(st.left == 1.0 - e);
	assert_true(st.rho_left == dp_nano_to_eps(capn - 2 * q));
	assert_true(st.lifetime_spent >= e && st.lifetime_spent < e + 1e-8);
	own_budget_close(&f.b);

	/* The mechanism of a job never changes. */
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	assert_int_equal(own_budget_bind(&f.b, "G", 4), DP_EINVAL);
	assert_null(f.b.ledger);
	own_budget_close(&f.b);

	/* The lifetime lowered to exactly the bound of three charges. */
	three = tot;
	dp_zcdp_add(&three, &one);
	assert_int_equal(dp_zcdp_best_nano(&three, 1e-6, &lim3), 0);
	f.cfg.lifetime = eps_exact(lim3);
	f.cfg.lifetime_given = true;
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	assert_int_equal(own_budget_bind_mech(&f.b, "G", 4, DP_MECH_GAUSSIAN, 5), 0);
	assert_true(f.b.eps_q == rho_q);
	assert_int_equal(own_budget_begin(&f.b, 3, &t), 0);
	assert_true(t.eps_q == rho_q);
	assert_int_equal(own_budget_commit(&f.b, &t, &st), 0);
	assert_int_equal(dp_ledger_spent_nano(f.b.ledger), 3 * q);
	assert_true(own_budget_lifetime_blocks(&f.b));
	assert_false(own_budget_left(&f.b));
	assert_int_equal(own_budget_begin(&f.b, 4, &t), DP_EBUDGET);
	assert_true(own_budget_lifetime_hit(&f.b));
	assert_int_equal(dp_ledger_spent_nano(f.b.ledger), 3 * q);
	own_budget_close(&f.b);
}

/* Reserve-ahead with a Gaussian job (docs/ledger.md §9): the share held
 * after each answer is rho_q in nano-rho, each answer is covered by it, and
 * the K answers spend exactly K ceil(rho_q), no more. */
static void test_gaussian_reserve(void **state)
{
	struct budget_fx f;
	struct own_budget_ticket t;
	struct own_budget_status st;
	struct own_budget_sync sy;
	double rho_q = 0;
	uint64_t slack = 0, q;

	(void)state;
	assert_int_equal(dp_zcdp_share(1.0, 1e-6, 4, 5, DP_NOISE_DGAUSS_SLACK, DP_NOISE_DGAUSS_TAIL,
				       &rho_q, &slack), 0);
	assert_int_equal(dp_nano_ceil(rho_q, &q), 0);
	budget_fx_init(&f, "gaussian-reserve", 1.0, 1.0);
	f.cfg.delta = 1e-6;
	f.cfg.lifetime_delta = 1e-6;
	f.cfg.reserve_ahead = true;
	assert_int_equal(own_budget_open(&f.b, &f.cfg), 0);
	assert_int_equal(own_budget_bind_mech(&f.b, "R", 4, DP_MECH_GAUSSIAN, 5), 0);
	for (uint64_t k = 1; k <= 4; k++) {
		answer(&f, k, &st);
		assert_int_equal(own_budget_settle(&f.b, &sy), 0);
		if (sy.path != NULL)
			assert_int_equal(own_budget_synced(&f.b, &sy, 0), 0);
		if (k < 4)
			assert_int_equal(dp_ledger_reserved_nano(f.b.ledger), q);
	}
	assert_int_equal(dp_ledger_answers(f.b.ledger), 4);
	assert_int_equal(dp_ledger_spent_nano(f.b.ledger), 4 * q);
	assert_int_equal(own_budget_begin(&f.b, 5, &t), DP_EBUDGET);
	own_budget_status(&f.b, &st);
	assert_true(st.gaussian && st.spent > 0.9 && st.spent <= 1.0 && st.lifetime_spent <= 1.0);
	own_budget_close(&f.b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_repeated_k),
		cmocka_unit_test(test_failed_sync),
		cmocka_unit_test(test_directory_fails),
		cmocka_unit_test(test_abandon),
		cmocka_unit_test(test_lifetime),
		cmocka_unit_test(test_lifetime_jobs),
		cmocka_unit_test(test_lifetime_recorded),
		cmocka_unit_test(test_lifetime_delta),
		cmocka_unit_test(test_closed_rollback),
		cmocka_unit_test(test_gauges),
		cmocka_unit_test(test_new_job_cap),
		cmocka_unit_test(test_lifetime_gaussian),
		cmocka_unit_test(test_reserve_ahead),
		cmocka_unit_test(test_reserve_unsynced),
		cmocka_unit_test(test_reserve_sync_fails),
		cmocka_unit_test(test_reserve_stale_report),
		cmocka_unit_test(test_reserve_lifetime),
		cmocka_unit_test(test_settle_noop),
		cmocka_unit_test(test_bind),
		cmocka_unit_test(test_gaussian),
		cmocka_unit_test(test_gaussian_reserve),
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_peer_shares),
		cmocka_unit_test(test_infinite),
		cmocka_unit_test(test_open),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
