/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for owner/answer.c: the decision for one Query (docs/privacy.md §5,
 * docs/ownerd.md "Threads").
 *
 * Built from its parts with no connection: a budget on a job-ledger
 * directory, a dataset from arrays, a bit source that notes every draw and
 * a loop that only runs the worker's answers.  The record of owntest.h
 * shows the order: the noise (N) is drawn after the check and before the
 * ledger's sync (S), and the reply to release exists only after that sync;
 * a refusal draws and writes nothing.
 *
 * Expected values are worked out by hand: two rows x = (1, 0), y = 1 and
 * x = (0, 1), y = -0.5 at theta = 0 have linear-loss gradients
 * 2 (theta.x - y) x = (-2, 0) and (0, 1) (common/core/model.h); clipped to
 * L1 norm 1 their mean is about (-0.5, 0.5), unclipped (clip 10) exactly
 * (-1, 0.5).  "About": a row is clipped to 1 - (p + 8) 2^-52 and truncated
 * to the grid 2^-40 (docs/privacy.md §2; k = 40, the largest allowed, as
 * n clip 2^40 <= 2^52), so each clipped coordinate is 1 - 2^-40.  An
 * epsilon of 1 over K = 4 is 0.25 per answer, and the Laplace scale
 * 2 clip / (n eps_q) (common/core/query.h) is 2 / (2 * 0.25) = 4.  A stop
 * exits 1: a failed sync or generator while running (docs/design.md §10
 * "Exit status"). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/dataset.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/log.h"
#include "common/net/metrics.h"

#include "owner/own.h"

#include "tmpdir.h"
#include "owntest.h"

struct fx {
	struct budget_fx bf;
	uv_loop_t loop;
	dp_dataset small;
	const dp_dataset *ds;
	struct noise_ctx nc;
	dp_bitsource bits;
	struct dp_metrics *reg;
	struct dp_metric *secs;
	struct own_answer a;
	struct own_job job;
	struct own_reply last;      /* what done() received last */
	int done_calls;
	size_t mark;                /* the record where done() noted X */
};

static void on_done(void *arg, const struct own_reply *rep)
{
	struct fx *f = arg;

	f->last = *rep;
	f->done_calls++;
	note('X');
}

/* More than OWN_ANSWER_INLINE_CELLS cells, answered on the worker: one
 * column, every value 0 (what is computed does not matter here, only
 * where).  Built once, for the tests that need it. */
static dp_dataset big;

static const dp_dataset *big_dataset(void)
{
	size_t n = OWN_ANSWER_INLINE_CELLS + 1;
	double *zeros;

	if (big.n != 0)
		return &big;
	zeros = calloc(n, sizeof(double));
	assert_non_null(zeros);
	assert_int_equal(dp_dataset_from_arrays(&big, n, 1, zeros, zeros, NULL), 0);
	free(zeros);
	return &big;
}

/* The two rows of the header comment, or the big dataset. */
static void fx_setup(struct fx *f, const char *name, double epsilon, double lifetime,
		     uint64_t K, bool use_big)
{
	static const double x[] = { 1, 0, 0, 1 }, y[] = { 1, -0.5 };

	memset(f, 0, sizeof(*f));
	budget_fx_init(&f->bf, name, epsilon, lifetime);
	f->bf.cfg.allow_inf = isinf(epsilon);
	budget_fx_bind(&f->bf, "J", K);
	if (use_big) {
		f->ds = big_dataset();
	} else {
		assert_int_equal(dp_dataset_from_arrays(&f->small, 2, 2, x, y, NULL), 0);
		f->ds = &f->small;
	}
	assert_int_equal(uv_loop_init(&f->loop), 0);
	f->bits = noise_bits(&f->nc);
	assert_int_equal(dp_metrics_new(&f->reg), 0);
	assert_int_equal(dp_metrics_histogram(f->reg, "secs", "", (const double[]){ 1 }, 1,
					      &f->secs), 0);
	assert_int_equal(own_answer_init(&f->a, &f->loop, f->ds, &f->bits, &f->bf.b, f->secs,
					 2.0, on_done, f), 0);
	f->job.have = true;
	f->job.model = DP_MODEL_LINEAR;
	f->job.clip = 1.0;
}

static void fx_teardown(struct fx *f)
{
	assert_false(own_answer_busy(&f->a));
	own_answer_free(&f->a);
	own_answer_free(&f->a);     /* idempotent */
	assert_int_equal(uv_loop_close(&f->loop), 0);
	dp_metrics_destroy(f->reg);
	dp_rng_csprng_destroy(f->nc.rng);
	dp_dataset_free(&f->small);
	own_budget_close(&f->bf.b);
}

/* Decide on Query k at theta (p values). */
static bool ask(struct fx *f, uint64_t k, const double *theta, size_t p, struct own_reply *out)
{
	Dpasync__Query q = DPASYNC__QUERY__INIT;

	q.k = k;
	q.n_theta = p;
	q.theta = (double *)theta;
	return own_answer_query(&f->a, &f->job, &q, out);
}

/* ev is one or more N, then tail. */
static void assert_noise_then(const char *ev, const char *tail)
{
	size_t n = strspn(ev, "N");

	if (n == 0 || strcmp(ev + n, tail) != 0)
		fail_msg("events \"%s\", expected N...N%s", ev, tail);
}

static bool all_zero(const double *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] != 0.0)
			return false;
	return true;
}

static uint64_t answers(const struct fx *f)
{
	struct own_budget_status st;

	own_budget_status(&f->bf.b, &st);
	return st.answers;
}

/* One answer, computed on the loop thread: noise after the check, the
 * charge synced (with its record in the file) before the reply exists, and
 * the reply to release carries what the ledger says after it. */
static void test_order(void **state)
{
	static const double theta[] = { 0, 0 };
	struct fx f;
	struct own_reply rep;
	size_t m;

	fx_setup(&f, "order", 1.0, INFINITY, 4, false);
	m = mark();
	assert_false(ask(&f, 1, theta, 2, &rep));
	note('X');
	assert_noise_then(events_since(m), "SX");
	assert_int_equal(synced_size(), LEDGER_SIZE(1));
	assert_int_equal(rep.kind, OWN_REPLY_ANSWER);
	assert_int_equal(rep.k, 1);
	assert_int_equal(rep.p, 2);
	assert_ptr_equal(rep.gradient, f.a.grad);
	assert_int_equal(rep.after.answers, 1);
	assert_double_exact(rep.after.spent, 0.25);
	assert_double_exact(rep.after.left, 0.75);
	assert_double_exact(rep.info.scale_b, 4.0);
	assert_double_exact(dp_metrics_value(f.secs), 1.0);
	assert_false(own_answer_busy(&f.a));
	own_answer_wipe(&f.a);
	assert_true(all_zero(f.a.grad, 2));
	fx_teardown(&f);
	(void)state;
}

/* With no noise (--allow-no-noise) the answer is the clipped mean itself,
 * and nothing is drawn. */
static void test_exact(void **state)
{
	static const double theta[] = { 0, 0 };
	struct fx f;
	struct own_reply rep;
	size_t m;

	fx_setup(&f, "exact", INFINITY, INFINITY, 4, false);
	m = mark();
	assert_false(ask(&f, 1, theta, 2, &rep));
	assert_string_equal(events_since(m), "S");
	assert_int_equal(rep.kind, OWN_REPLY_ANSWER);
	assert_int_equal(rep.info.grid_k, 40);
	assert_double_exact(rep.gradient[0], -(1 - 0x1p-40) / 2);
	assert_double_exact(rep.gradient[1], (1 - 0x1p-40) / 2);
	assert_double_exact(rep.info.scale_b, 0.0);
	own_answer_wipe(&f.a);
	f.job.clip = 10.0;
	assert_false(ask(&f, 2, theta, 2, &rep));
	assert_int_equal(rep.kind, OWN_REPLY_ANSWER);
	assert_double_exact(rep.gradient[0], -1.0);
	assert_double_exact(rep.gradient[1], 0.5);
	own_answer_wipe(&f.a);
	fx_teardown(&f);
	(void)state;
}

/* Step 1: a malformed query closes the connection, a theta beyond
 * --theta-max (2 here) is refused, one exactly at it is answered; the
 * first two draw, write and sync nothing. */
static void test_validate(void **state)
{
	static const double three[] = { 0, 0, 0 }, nan2[] = { 0, NAN }, inf2[] = { INFINITY, 0 },
			    far[] = { 2.5, 0 }, edge[] = { 2, -2 };
	struct fx f;
	struct own_reply rep;
	size_t m;

	fx_setup(&f, "validate", 1.0, INFINITY, 4, false);
	m = mark();
	assert_false(ask(&f, 1, three, 3, &rep));
	assert_int_equal(rep.kind, OWN_REPLY_DROP);
	assert_string_equal(rep.drop, "query k=1 has dimension 3, expected 2");
	assert_false(ask(&f, 1, NULL, 2, &rep));
	assert_int_equal(rep.kind, OWN_REPLY_DROP);
	assert_false(ask(&f, 1, nan2, 2, &rep));
	assert_int_equal(rep.kind, OWN_REPLY_DROP);
	assert_string_equal(rep.drop, "query k=1 theta[1] is not finite");
	assert_false(ask(&f, 1, inf2, 2, &rep));
	assert_string_equal(rep.drop, "query k=1 theta[0] is not finite");
	assert_false(ask(&f, 0, edge, 2, &rep));
	assert_int_equal(rep.kind, OWN_REPLY_DROP);
	assert_string_equal(rep.drop, "query k=0");
	assert_false(ask(&f, 1, far, 2, &rep));
	assert_int_equal(rep.kind, OWN_REPLY_REFUSE);
	assert_int_equal(rep.k, 1);
	assert_string_equal(rep.refuse, "theta outside the owner's bound (theta-max)");
	assert_string_equal(events_since(m), "");
	assert_int_equal(answers(&f), 0);
	assert_false(ask(&f, 1, edge, 2, &rep));
	assert_int_equal(rep.kind, OWN_REPLY_ANSWER);
	own_answer_wipe(&f.a);
	fx_teardown(&f);
	(void)state;
}

/* What the budget's refusals become: past the answer cap and a repeated k
 * are refused, a k below the last one that was never answered drops the
 * connection; nothing is drawn for any of them. */
static void test_refusals(void **state)
{
	static const double theta[] = { 0.5, -0.5 };
	struct fx f;
	struct own_reply rep;
	size_t m;

	fx_setup(&f, "refuse", 1.0, INFINITY, 2, false);
	assert_false(ask(&f, 1, theta, 2, &rep));
	assert_int_equal(rep.kind, OWN_REPLY_ANSWER);
	assert_false(ask(&f, 5, theta, 2, &rep));
	assert_int_equal(rep.kind, OWN_REPLY_ANSWER);
	m = mark();
	assert_false(ask(&f, 5, theta, 2, &rep));
	assert_int_equal(rep.kind, OWN_REPLY_REFUSE);
	assert_string_equal(rep.refuse, "repeated query");
	assert_false(ask(&f, 3, theta, 2, &rep));
	assert_int_equal(rep.kind, OWN_REPLY_DROP);
	assert_string_equal(rep.drop, "query k=3 is not above the last answered k=5");
	assert_false(ask(&f, 6, theta, 2, &rep));
	assert_int_equal(rep.kind, OWN_REPLY_REFUSE);
	assert_int_equal(rep.k, 6);
	assert_string_equal(rep.refuse, "budget exhausted");
	assert_string_equal(events_since(m), "");
	assert_int_equal(answers(&f), 2);
	fx_teardown(&f);

	/* The lifetime's cap, lowered to 0.25 (one answer) after the job
	 * began with its cap 1, says so (a new job's ledger is capped at what
	 * the lifetime leaves, docs/ledger.md §8). */
	fx_setup(&f, "refuselife", 1.0, 1.0, 4, false);
	budget_fx_lower_lifetime(&f.bf, "J", 4, 0.25);
	assert_false(ask(&f, 1, theta, 2, &rep));
	assert_int_equal(rep.kind, OWN_REPLY_ANSWER);
	m = mark();
	assert_false(ask(&f, 2, theta, 2, &rep));
	assert_int_equal(rep.kind, OWN_REPLY_REFUSE);
	assert_string_equal(rep.refuse, OWN_REFUSE_LIFETIME);
	assert_string_equal(events_since(m), "");
	fx_teardown(&f);
	(void)state;
}

/* The ledger's sync fails: stop (exit 1) after a final Refuse, with the
 * computed gradient wiped; and for good: the next query is not computed. */
static void test_failed_sync(void **state)
{
	static const double theta[] = { 0, 0 };
	struct fx f;
	struct own_reply rep;
	size_t m;

	fx_setup(&f, "failsync", 1.0, INFINITY, 4, false);
	fail_syncs(EIO);
	m = mark();
	assert_false(ask(&f, 1, theta, 2, &rep));
	fail_syncs(0);
	assert_noise_then(events_since(m), "S");
	assert_int_equal(rep.kind, OWN_REPLY_STOP);
	assert_string_equal(rep.refuse, "ledger failed");
	assert_int_equal(rep.exit_code, 1);     /* DP_EIO while running */
	assert_null(rep.gradient);
	assert_true(all_zero(f.a.grad, 2));
	m = mark();
	assert_false(ask(&f, 2, theta, 2, &rep));
	assert_int_equal(rep.kind, OWN_REPLY_STOP);
	assert_string_equal(events_since(m), "");
	fx_teardown(&f);
	(void)state;
}

/* The generator fails while the noise is drawn: stop (exit 1) with
 * nothing charged; the same k is answered once it works again.  A
 * computation that fails otherwise (a clip of 0) drops the connection,
 * also with nothing charged. */
static void test_compute_fails(void **state)
{
	static const double theta[] = { 0, 0 };
	struct fx f;
	struct own_reply rep;

	fx_setup(&f, "rngfail", 1.0, INFINITY, 4, false);
	f.nc.broken = true;
	assert_false(ask(&f, 1, theta, 2, &rep));
	f.nc.broken = false;
	assert_int_equal(rep.kind, OWN_REPLY_STOP);
	assert_null(rep.refuse);
	assert_int_equal(rep.exit_code, 1);     /* DP_ERNG while running */
	assert_int_equal(answers(&f), 0);
	assert_int_equal(file_size(dp_ledger_path(f.bf.b.ledger)), LEDGER_SIZE(0));
	assert_true(all_zero(f.a.grad, 2));

	f.job.clip = 0.0;
	assert_false(ask(&f, 1, theta, 2, &rep));
	assert_int_equal(rep.kind, OWN_REPLY_DROP);
	assert_string_equal(rep.drop, "cannot answer query k=1: query: clip 0 is not a positive "
			    "finite number");
	assert_int_equal(answers(&f), 0);

	f.job.clip = 1.0;
	assert_false(ask(&f, 1, theta, 2, &rep));
	assert_int_equal(rep.kind, OWN_REPLY_ANSWER);
	assert_int_equal(rep.after.answers, 1);
	own_answer_wipe(&f.a);
	fx_teardown(&f);
	(void)state;
}

/* A dataset above OWN_ANSWER_INLINE_CELLS is computed on the worker: the
 * query returns at once, and done() gets the answer on the loop thread,
 * after the noise and the sync. */
static void test_worker(void **state)
{
	static const double theta[] = { 0.5 };
	struct fx f;
	struct own_reply rep;

	fx_setup(&f, "worker", 1.0, INFINITY, 4, true);
	f.mark = mark();
	assert_true(ask(&f, 1, theta, 1, &rep));
	assert_true(own_answer_busy(&f.a));
	assert_int_equal(f.done_calls, 0);
	assert_int_equal(uv_run(&f.loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(f.done_calls, 1);
	assert_false(own_answer_busy(&f.a));
	assert_noise_then(events_since(f.mark), "SX");
	assert_int_equal(f.last.kind, OWN_REPLY_ANSWER);
	assert_int_equal(f.last.k, 1);
	assert_int_equal(f.last.p, 1);
	assert_int_equal(f.last.after.answers, 1);
	own_answer_wipe(&f.a);
	fx_teardown(&f);
	(void)state;
}

/* An answer in flight that is not wanted any more: done() gets a discard
 * (whether the work was cancelled before it started or ran to its end),
 * nothing is charged and the scratch is wiped; the same k is then
 * answered. */
static void test_cancel(void **state)
{
	static const double theta[] = { 0.5 };
	struct fx f;
	struct own_reply rep;

	fx_setup(&f, "cancel", 1.0, INFINITY, 4, true);
	own_answer_cancel(&f.a);        /* not busy: nothing */
	assert_true(ask(&f, 1, theta, 1, &rep));
	own_answer_cancel(&f.a);
	own_answer_cancel(&f.a);        /* once only */
	assert_int_equal(uv_run(&f.loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(f.done_calls, 1);
	assert_int_equal(f.last.kind, OWN_REPLY_DISCARD);
	assert_int_equal(f.last.k, 1);
	assert_int_equal(answers(&f), 0);
	assert_true(all_zero(f.a.grad, 1));
	assert_true(ask(&f, 1, theta, 1, &rep));
	assert_int_equal(uv_run(&f.loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(f.done_calls, 2);
	assert_int_equal(f.last.kind, OWN_REPLY_ANSWER);
	assert_int_equal(f.last.after.answers, 1);
	own_answer_wipe(&f.a);
	fx_teardown(&f);
	(void)state;
}

static int setup(void **state)
{
	(void)state;
	return owntest_setup("test_answer");
}

static int teardown(void **state)
{
	(void)state;
	dp_dataset_free(&big);
	return owntest_teardown();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_failed_sync),
		cmocka_unit_test(test_compute_fails),
		cmocka_unit_test(test_worker),
		cmocka_unit_test(test_cancel),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
