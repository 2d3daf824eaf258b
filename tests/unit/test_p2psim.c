/* SPDX-License-Identifier: Apache-2.0 */
/* The peer-mode simulator (tools/lib/p2psim.h): steps at eps = inf against
 * values computed by hand in exact rational arithmetic from docs/design.md
 * §6 (the script is in the comment below), the schedule and budget rules,
 * and the equal split of (eps, delta). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/algo.h"
#include "common/core/dataset.h"
#include "common/core/error.h"
#include "common/core/graph.h"
#include "common/core/nano.h"
#include "tools/lib/p2psim.h"

/* Three agents, linear model, p = 2, dyadic data so that the query's
 * lattice sums are exact:
 *   A: x = (1, 1/2), y = 1;  x = (1/2, -1), y = 0
 *   B: x = (1/4, 1), y = -1
 *   C: x = (-1/2, 1/2), y = 1/2
 * edges A-B (w 1), B-C (w 1/2); mu = 1, c = m/max m = (1, 1/2, 1/2),
 * lambda_i = 1/m_i, x2max = 2, L_i = 2 x2max + 2 lambda_i; schedule
 * A, B, C, A, B.  Expected values in exact rationals (Python's
 * fractions.Fraction), rounded once to 17 digits:
 *   grad_i = (1/m_i) sum clip(2 (theta.x - y) x), clip to L1 <= Xi
 *   alpha = 1/(1 + mu c L);  D = sum_j W_ij
 *   theta_i <- (1-alpha) theta_i
 *              + alpha (sum_j W_ij theta_j / D - mu c (grad_i + 2 lambda_i theta_i))
 * and, for the private warm start, first 10 steps of each agent in order A,
 * B, C:  theta_i <- theta_i - (grad_i + 2 lambda_i theta_i) / L_i. */
struct fixture {
	dp_dataset ds[3];
	const dp_dataset *view[3];
	dp_graph *g;
	double c[3], lambda[3], L[3], eps_t[3], rate[3], eps_warm[3];
	uint64_t wakeups[3], warm[3];
	size_t schedule[5];
	dp_p2psim_setup s;
};

static void make(struct fixture *f, double clip)
{
	static const char *const ids[] = { "A", "B", "C" };
	const double xa[] = { 1, 0.5, 0.5, -1 }, ya[] = { 1, 0 };
	const double xb[] = { 0.25, 1 }, yb[] = { -1 };
	const double xc[] = { -0.5, 0.5 }, yc[] = { 0.5 };
	const size_t ea[] = { 0, 1 }, eb[] = { 1, 2 }, order[] = { 0, 1, 2, 0, 1 };
	const double ew[] = { 1, 0.5 };

	memset(f, 0, sizeof(*f));
	assert_int_equal(dp_dataset_from_arrays(&f->ds[0], 2, 2, xa, ya, NULL), 0);
	assert_int_equal(dp_dataset_from_arrays(&f->ds[1], 1, 2, xb, yb, NULL), 0);
	assert_int_equal(dp_dataset_from_arrays(&f->ds[2], 1, 2, xc, yc, NULL), 0);
	assert_int_equal(dp_graph_new(ids, 3, ea, eb, ew, 2, &f->g), 0);
	for (size_t i = 0; i < 3; i++) {
		f->view[i] = &f->ds[i];
		f->c[i] = (double)f->ds[i].n / 2.0;
		f->lambda[i] = 1.0 / (double)f->ds[i].n;
		f->L[i] = 2 * 2 + 2 * f->lambda[i];
		f->eps_t[i] = INFINITY;
		f->eps_warm[i] = INFINITY;
		f->warm[i] = DP_ALGO_P2P_WARM_STEPS;
		f->rate[i] = 1;
		f->wakeups[i] = 2;
	}
	memcpy(f->schedule, order, sizeof(order));
	f->s = (dp_p2psim_setup){ .model = DP_MODEL_LINEAR, .N = 3, .p = 2, .ds = f->view,
				  .graph = f->g, .mu = 1, .c = f->c, .lambda = f->lambda,
				  .L_loc = f->L, .eps_t = f->eps_t, .clip = clip,
				  .wakeups = f->wakeups, .rate = f->rate, .schedule = f->schedule,
				  .steps = 5 };
}

static void unmake(struct fixture *f)
{
	for (size_t i = 0; i < 3; i++)
		dp_dataset_free(&f->ds[i]);
	dp_graph_free(f->g);
}

static void check(const double *theta, const double *want, double tol)
{
	for (size_t k = 0; k < 6; k++) {
		if (!(fabs(theta[k] - want[k]) <= tol))
			fail_msg("theta[%zu] = %.17g, want %.17g", k, theta[k], want[k]);
	}
}

static void test_hand_computed(void **state)
{
	/* Clip 10: no per-row gradient reaches it.  After the first step the
	 * models are no longer dyadic, and the query sums on a 2^-40 lattice:
	 * 1e-12 is a few hundred lattice steps, far below any wrong rule. */
	static const double want[6] = {
		0.23726851851851852, 0.08217592592592593,
		-0.030948591820987654, -0.29287229938271603,
		-0.071180555555555552, 0.003472222222222222 };
	struct fixture f;
	double theta[6];
	size_t order[5];
	uint64_t done[3];

	(void)state;
	make(&f, 10);
	assert_int_equal(dp_p2psim_steps(&f.s), 5);
	assert_int_equal(dp_p2psim_run(&f.s, 7, theta, order, done), 0);
	check(theta, want, 1e-12);
	assert_memory_equal(order, f.schedule, sizeof(order));
	assert_true(done[0] == 2 && done[1] == 2 && done[2] == 1);
	unmake(&f);
}

static void test_hand_computed_clipped(void **state)
{
	/* Clip 1/2: every per-row gradient of the first steps is scaled down
	 * (the lattice rounds the scaled rows at 2^-40 or finer). */
	static const double want[6] = {
		0.044984567901234569, 0.015200617283950618,
		-0.011705889917695474, -0.069698431069958849,
		-0.03321759259259259, 0.019328703703703702 };
	struct fixture f;
	double theta[6];

	(void)state;
	make(&f, 0.5);
	assert_int_equal(dp_p2psim_run(&f.s, 7, theta, NULL, NULL), 0);
	check(theta, want, 1e-12);
	unmake(&f);
}

static void test_warm_start(void **state)
{
	/* The warm start alone (an empty schedule), then followed by the five
	 * steps, with and without clipping: values from the exact rational
	 * computation above. */
	static const double warm_only[6] = {
		0.4433186881683594, 0.2216593440841797,
		-0.12121104463221855, -0.48484417852887418,
		-0.16650390625, 0.16650390625 };
	static const double warm_then[6] = {
		0.31917263277409319, 0.075653804500965149,
		-0.022437323332750909, -0.31409947681985712,
		-0.13656614928821925, 0.041837284150105861 };
	static const double warm_clipped[6] = {
		0.099984515244953498, 0.016996793011478852,
		-0.017884944464746689, -0.10866854575784728,
		-0.099543042767724729, 0.059438862800365047 };
	struct fixture f;
	double theta[6];
	uint64_t done[3];

	(void)state;
	assert_int_equal(DP_ALGO_P2P_WARM_STEPS, 10);
	make(&f, 10);
	f.s.warm = f.warm;
	f.s.eps_warm = f.eps_warm;
	f.s.steps = 0;
	assert_int_equal(dp_p2psim_run(&f.s, 7, theta, NULL, done), 0);
	check(theta, warm_only, 1e-12);
	assert_true(done[0] == 0 && done[1] == 0 && done[2] == 0);
	f.s.steps = 5;
	assert_int_equal(dp_p2psim_run(&f.s, 7, theta, NULL, NULL), 0);
	check(theta, warm_then, 1e-12);
	unmake(&f);
	make(&f, 0.5);
	f.s.warm = f.warm;
	f.s.eps_warm = f.eps_warm;
	assert_int_equal(dp_p2psim_run(&f.s, 7, theta, NULL, NULL), 0);
	check(theta, warm_clipped, 1e-12);
	unmake(&f);
}

static void test_warm_split(void **state)
{
	double t, w, share;

	(void)state;
	/* eps 1 with 0.4 of it on the warm start over 3 wake-ups, delta 0:
	 * each warm step the ledger's share of 0.4 over 10 (0.04), each
	 * wake-up its share of 0.6 over 3 (0.2), as ownerd --peer plans. */
	assert_int_equal(dp_p2psim_warm_split(1.0, 0.4, 10, 0, 3, &t, &w), 0);
	assert_int_equal(dp_nano_share(0.4, 10, &share), 0);
	assert_true(w == share && fabs(w - 0.04) < 1e-9);
	assert_int_equal(dp_p2psim_eps_split(0.6, 0, 3, &share), 0);
	assert_true(t == share && fabs(t - 0.2) < 2e-9);
	assert_true(10 * w + 3 * t <= 1.0);
	/* One warm step: the whole 0.4 on it. */
	assert_int_equal(dp_p2psim_warm_split(1.0, 0.4, 1, 0, 3, &t, &w), 0);
	assert_int_equal(dp_nano_share(0.4, 1, &share), 0);
	assert_true(w == share && fabs(w - 0.4) < 2e-9);
	/* No warm start: the plain split, and no warm share. */
	assert_int_equal(dp_p2psim_warm_split(1.0, 0, 10, exp(-5), 50, &t, &w), 0);
	assert_int_equal(dp_p2psim_eps_split(1.0, exp(-5), 50, &share), 0);
	assert_true(t == share && w == 0);
	/* With delta the wake-ups' part may use advanced composition. */
	assert_int_equal(dp_p2psim_warm_split(1.0, 0.5, 10, exp(-5), 1000, &t, &w), 0);
	assert_int_equal(dp_p2psim_eps_split(0.5, exp(-5), 1000, &share), 0);
	assert_true(t == share && fabs(w - 0.05) < 1e-9);
	assert_int_equal(dp_p2psim_warm_split(INFINITY, 0.5, 10, 0, 4, &t, &w), 0);
	assert_true(isinf(t) && isinf(w));
	t = w = 42;
	assert_int_equal(dp_p2psim_warm_split(1.0, 1.0, 10, 0, 4, &t, &w), DP_EINVAL);
	assert_string_equal(dp_error_detail(DP_EINVAL),
			    "--warm-start 1 leaves nothing of --epsilon 1 for the wake-ups");
	assert_int_equal(dp_p2psim_warm_split(1.0, -0.1, 10, 0, 4, &t, &w), DP_EINVAL);
	assert_int_equal(dp_p2psim_warm_split(1.0, 0.5, 10, 0, 0, &t, &w), DP_EINVAL);
	assert_int_equal(dp_p2psim_warm_split(1.0, 0.5, 0, 0, 4, &t, &w), DP_EINVAL);
	assert_true(t == 42 && w == 42);
}

static void test_schedule_over_budget(void **state)
{
	struct fixture f;
	double theta[6];

	(void)state;
	make(&f, 10);
	f.wakeups[0] = 1;   /* A is scheduled twice */
	assert_int_equal(dp_p2psim_run(&f.s, 7, theta, NULL, NULL), DP_EBUDGET);
	assert_string_equal(dp_error_detail(DP_EBUDGET),
			    "step 4: agent 'A' has already woken 1 times (its budget is split "
			    "over --wakeups 1)");
	unmake(&f);
}

static void test_drawn_order(void **state)
{
	/* Without a schedule every agent wakes exactly T_i times, and a seed
	 * fixes the run, noise included. */
	struct fixture f;
	double t1[6], t2[6];
	size_t o1[6], o2[6];
	uint64_t done[3];

	(void)state;
	make(&f, 1);
	f.s.schedule = NULL;
	f.wakeups[2] = 2;
	for (size_t i = 0; i < 3; i++)
		f.eps_t[i] = 0.5;
	assert_int_equal(dp_p2psim_steps(&f.s), 6);
	assert_int_equal(dp_p2psim_run(&f.s, 3, t1, o1, done), 0);
	assert_true(done[0] == 2 && done[1] == 2 && done[2] == 2);
	assert_int_equal(dp_p2psim_run(&f.s, 3, t2, o2, NULL), 0);
	assert_memory_equal(t1, t2, sizeof(t1));
	assert_memory_equal(o1, o2, sizeof(o1));
	/* The same order given as a schedule sees the same noise. */
	f.s.schedule = o1;
	f.s.steps = 6;
	assert_int_equal(dp_p2psim_run(&f.s, 3, t2, NULL, NULL), 0);
	assert_memory_equal(t1, t2, sizeof(t1));
	unmake(&f);
}

static void test_eps_split(void **state)
{
	double e, share;

	(void)state;
	/* delta = 0: the ledger's share of eps over T. */
	assert_int_equal(dp_p2psim_eps_split(1.0, 0, 3, &e), 0);
	assert_int_equal(dp_nano_share(1.0, 3, &share), 0);
	assert_true(e == share);
	/* Few wake-ups: advanced composition gives less than eps/T, so the
	 * basic split stays. */
	assert_int_equal(dp_p2psim_eps_split(1.0, exp(-5), 5, &e), 0);
	assert_int_equal(dp_nano_share(1.0, 5, &share), 0);
	assert_true(e == share);
	/* Many wake-ups: advanced composition wins, and its eps' stays within
	 * eps; tight to 1e-6, the effect of rounding eps_t down to whole
	 * nano-epsilon, times sqrt(2 T ln(1/delta)) = 316. */
	assert_int_equal(dp_p2psim_eps_split(1.0, exp(-5), 10000, &e), 0);
	assert_int_equal(dp_nano_share(1.0, 10000, &share), 0);
	assert_true(e > 2 * share);
	{
		double T = 10000, c = sqrt(2 * T * 5) * e + T * e * expm1(e);

		assert_true(c <= 1.0 && c > 1.0 - 1e-6);
		uint64_t nano;

		/* The ledger's charges of the 10,000 wake-ups fit its pure-epsilon
		 * cap, T eps_t (ownerd --peer's ledger). */
		assert_int_equal(dp_nano_ceil(e, &nano), 0);
		assert_true(nano * 10000 <= (uint64_t)ceil(T * e * 1e9));
	}
	assert_int_equal(dp_p2psim_eps_split(INFINITY, 0, 4, &e), 0);
	assert_true(isinf(e));
	e = 42;
	assert_int_equal(dp_p2psim_eps_split(0, 0, 4, &e), DP_EINVAL);
	assert_int_equal(dp_p2psim_eps_split(1, 1, 4, &e), DP_EINVAL);
	assert_int_equal(dp_p2psim_eps_split(1, 0, 0, &e), DP_EINVAL);
	assert_true(e == 42);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hand_computed),
		cmocka_unit_test(test_hand_computed_clipped),
		cmocka_unit_test(test_schedule_over_budget),
		cmocka_unit_test(test_drawn_order),
		cmocka_unit_test(test_eps_split),
		cmocka_unit_test(test_warm_start),
		cmocka_unit_test(test_warm_split),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
