/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for learner/state.c: the job's plan and the algorithm's state.
 *
 * The update rules are written out here from docs/design.md §4 and §5, not
 * taken from common/core/algo.c, and the worked numbers next to them were
 * computed by hand:
 *   async, owner i at bar, answer a, w_i = n_i / n, sigma = 2 lambda:
 *     theta_i <- P[bar - eta (sigma bar / (2N) + w_i a)]
 *     theta_L <- P[bar - eta (N - 1)/N^2 sigma bar]
 *   Remark 4: w_i / (N pi_i), pi_i = (c_i + 1)/(k + N);
 *   sync1: theta <- theta - (rho / (T^2 k)) (sigma theta + agg);
 *   sync2: theta <- P[theta - (c / sqrt k)(sigma theta + agg)],
 *     theta_hat[k+1] = ((k - 1)/(a + k)) theta_hat[k] + ((a + 1)/(a + k)) theta[k],
 *     a = 1/sqrt T;
 * the plan's caps K_i = ceil(T pi_i (1 + margin)), pi_i = rate_i / sum of
 * rates (docs/learnerd.md §3), and rho = eta T^2 sigma / N. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/core/error.h"
#include "common/core/log.h"
#include "common/core/plan.h"
#include "learner/job.h"
#include "tests/unit/tmpdir.h"
#include "tests/unit/lrnjob.h"

#define LAMBDA 0.01

static void near(double got, double want, double tol)
{
	if (!(fabs(got - want) <= tol))
		fail_msg("%.17g, want %.17g (tolerance %g)", got, want, tol);
}

static double clamp(double v, double m)
{
	return v > m ? m : v < -m ? -m : v;
}

/* A job of N owners with these rows and rates, planned. */
static void planned(struct lrn_job *J, struct lrn_settings *s, size_t N, size_t p,
		    const uint64_t *rows, const double *rates)
{
	assert_int_equal(lrn_state_init(J, s, lrnjob_names, N), 0);
	assert_int_equal(lrn_state_set_p(J, p), 0);
	assert_int_equal(lrn_stats_init(J), 0);
	for (size_t i = 0; i < N; i++) {
		J->owners[i].n_rows = rows[i];
		J->owners[i].epsilon = J->owners[i].eps_left = 1.0;
		J->owners[i].rate = rates[i];
	}
	assert_int_equal(lrn_plan_start(J), 0);
}

static void done(struct lrn_job *J)
{
	lrn_stats_free(J);
	lrn_state_free(J);
}

static void test_init_set_p(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;

	(void)state;
	s.max_frame = 1024;
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
	assert_int_equal(J.N, 2);
	assert_string_equal(J.owners[1].id, "owner-2");
	assert_int_equal(J.owners[1].idx, 1);
	assert_int_equal(J.T, 10);
	assert_int_equal(J.next_qid, 1);
	assert_true(isnan(J.psi_pred) && J.stall_since < 0 && J.first_query < 0);
	assert_int_equal(lrn_state_set_p(&J, 0), DP_EINVAL);
	/* A query carries 8 p + 64 bytes at most: 121 does not fit 1024. */
	assert_int_equal(lrn_state_set_p(&J, 121), DP_EINVAL);
	assert_int_equal(J.p, 0);
	assert_int_equal(lrn_state_set_p(&J, 120), 0);
	assert_int_equal(J.p, 120);
	assert_true(J.theta_L[119] == 0 && J.owners[1].theta[119] == 0);
	lrn_state_free(&J);
}

/* A Hello's claims: n_rows, n_features, epsilon 1, nothing else said. */
static struct lrn_claims claim(uint64_t n_rows, uint32_t n_features)
{
	return (struct lrn_claims){ .n_rows = n_rows, .n_features = n_features, .epsilon = 1.0 };
}

static int check(struct lrn_job *J, size_t i, const struct lrn_claims *c, int *goodbye,
		 char *why)
{
	return lrn_state_check_hello(J, &J->owners[i], c, goodbye, why, 256);
}

static void test_check_hello(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	struct lrn_claims c;
	char why[256];
	int bye;

	(void)state;
	s.max_frame = 1024;
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
	c = claim((UINT64_C(1) << 40) + 1, 3);
	assert_int_equal(check(&J, 0, &c, &bye, why), DP_ERANGE);
	assert_int_equal(bye, 0);   /* closed, no Goodbye */
	assert_string_equal(why, "Hello n_rows 1099511627777 exceeds the maximum 1099511627776 "
			    "rows per owner");
	c = claim(UINT64_C(1) << 40, 3);
	assert_int_equal(check(&J, 0, &c, &bye, why), 0);
	/* p not fixed yet: only the frame bounds n_features. */
	c = claim(5, 121);
	assert_int_equal(check(&J, 0, &c, &bye, why), DP_EINVAL);
	assert_int_equal(bye, DPASYNC__GOODBYE_CODE__GOODBYE_BAD_DATA);
	assert_string_equal(why, "Hello n_features 121 does not fit in max-frame 1024 bytes");
	assert_int_equal(lrn_state_set_p(&J, 3), 0);
	c = claim(5, 4);
	assert_int_equal(check(&J, 1, &c, &bye, why), DP_EINVAL);
	assert_non_null(strstr(why, "Hello n_features 4 differs from the job's p 3: give owner "
			       "owner-2 data"));
	c = claim(5, 3);
	assert_int_equal(check(&J, 1, &c, &bye, why), 0);
	assert_int_equal(bye, 0);
	lrn_state_free(&J);
}

/* The claims of docs/protocol.md §5 "Limits on a Hello's claims", with the
 * values the second review sent (issue: answers_cap 10^6 gave T = 4,
 * epsilon 5e-324 no finite prediction): each out of its bound is refused
 * with Goodbye BAD_CLAIM and the reason; at the bound it is taken. */
static void test_check_claims(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	struct lrn_claims c;
	char why[256];
	int bye;

	(void)state;
	s.T = 0;   /* planned: the largest T is t-max, DP_PLAN_T_MAX */
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
	assert_int_equal(lrn_state_set_p(&J, 3), 0);
	assert_int_equal(lrn_state_t_limit(&J), DP_PLAN_T_MAX);
	c = claim(5, 3);
	c.epsilon = 5e-324;
	assert_int_equal(check(&J, 0, &c, &bye, why), DP_EREFUSED);
	assert_int_equal(bye, DPASYNC__GOODBYE_CODE__GOODBYE_BAD_CLAIM);
	assert_string_equal(why, "Hello epsilon 4.94066e-324 is below the floor 0.001: each "
			    "answer would be noise; raise ownerd's epsilon");
	c.epsilon = LRN_EPSILON_MIN;
	assert_int_equal(check(&J, 0, &c, &bye, why), 0);
	c.epsilon = INFINITY;   /* no noise: allowed (testing) */
	assert_int_equal(check(&J, 0, &c, &bye, why), 0);

	c = claim(5, 3);
	c.own_cap = c.answers_cap = 1000000;
	assert_int_equal(check(&J, 0, &c, &bye, why), DP_EREFUSED);
	assert_int_equal(bye, DPASYNC__GOODBYE_CODE__GOODBYE_BAD_CLAIM);
	assert_non_null(strstr(why, "Hello answers_cap 1000000 exceeds the largest T of this "
			       "job, 100000 (t-max)"));
	c.own_cap = c.answers_cap = DP_PLAN_T_MAX;
	assert_int_equal(check(&J, 0, &c, &bye, why), 0);
	/* A given T above t-max is the limit; t-max below it is not. */
	s.T = 200000;
	assert_int_equal(lrn_state_t_limit(&J), 200000);
	c.own_cap = c.answers_cap = 150000;
	assert_int_equal(check(&J, 0, &c, &bye, why), 0);
	s.T = 0;
	s.T_max = 400;
	assert_int_equal(check(&J, 0, &c, &bye, why), DP_EREFUSED);
	/* A same-job ledger's K: the plan's K_i with its margin at most. */
	c.own_cap = 0;
	c.answers_cap = 442;   /* ceil(400 * 1.1) = 441 in doubles, as the planner rounds */
	c.same_job = true;
	assert_int_equal(check(&J, 0, &c, &bye, why), DP_EREFUSED);
	assert_non_null(strstr(why, "Hello job_answers_cap 442 exceeds"));
	c.answers_cap = 441;
	assert_int_equal(check(&J, 0, &c, &bye, why), 0);
	/* Once planned, a cap changes nothing but the owner's own noise. */
	J.started = true;
	c.own_cap = c.answers_cap = 1000000;
	assert_int_equal(check(&J, 0, &c, &bye, why), 0);
	J.started = false;

	/* The owner's bound on theta must hold the job's box (theta-max 10). */
	c = claim(5, 3);
	c.has_limits = true;
	c.epsilon_left = c.lifetime_left = 1;
	c.theta_max = 5;
	assert_int_equal(check(&J, 0, &c, &bye, why), DP_EREFUSED);
	assert_int_equal(bye, DPASYNC__GOODBYE_CODE__GOODBYE_BAD_CLAIM);
	assert_string_equal(why, "Hello theta_max 5 is below the job's theta-max 10: queries "
			    "inside the job's box would be refused; raise ownerd's theta-max to at "
			    "least 10");
	c.theta_max = 10;
	assert_int_equal(check(&J, 0, &c, &bye, why), 0);
	c.theta_max = INFINITY;
	assert_int_equal(check(&J, 0, &c, &bye, why), 0);
	lrn_state_free(&J);
}

/* What an owner can spend on this job (docs/protocol.md §5 "Budget left
 * and bounds"): without limits its epsilon; with them, epsilon_left when
 * its counters are this job's, else the smaller of epsilon and what its
 * lifetime leaves (a new ledger's cap); below LRN_EPSILON_MIN nothing. */
static void test_take_hello(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	struct lrn_claims c = claim(5, 3);
	struct lrn_owner *o;

	(void)state;
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
	o = &J.owners[0];
	c.rate = 2;
	c.answers_cap = 7;
	c.answers_given = 3;
	lrn_state_take_hello(&J, o, &c);
	assert_true(o->eps_left == 1.0 && isinf(o->theta_bound) && isinf(o->lifetime_left));
	assert_true(o->rate == 2 && o->answers_cap == 7 && o->answers_given == 3 && o->n_rows == 5);
	assert_false(lrn_state_no_budget(o));
	c.has_limits = true;
	c.epsilon_left = 0.25;
	c.lifetime_left = 0.1;   /* the bank-c: 0.1 of its lifetime left */
	c.theta_max = 1e6;
	lrn_state_take_hello(&J, o, &c);   /* another job's counters */
	assert_true(o->eps_left == 0.1 && o->theta_bound == 1e6 && o->lifetime_left == 0.1);
	c.same_job = true;
	lrn_state_take_hello(&J, o, &c);
	assert_true(o->eps_left == 0.25);
	c.same_job = false;
	c.lifetime_left = 1e-9;   /* a rounding residue of a spent lifetime */
	lrn_state_take_hello(&J, o, &c);
	assert_true(lrn_state_no_budget(o));
	c.lifetime_left = INFINITY;
	c.epsilon = INFINITY;
	lrn_state_take_hello(&J, o, &c);
	assert_false(lrn_state_no_budget(o));
	lrn_state_free(&J);
}

/* A Gaussian job (docs/protocol.md §5 "Mechanisms"): an owner whose Hello
 * does not allow Gaussian answers (delta 0, or a Hello from before delta:
 * the same zeros) is refused with BAD_CLAIM and the fix; one that allows
 * them is taken, and judged on its rho left; a Laplace job takes all. */
static void test_mechanism(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	struct lrn_claims c = claim(5, 3);
	struct lrn_owner *o;
	char why[256];
	int bye;

	(void)state;
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
	assert_int_equal(check(&J, 0, &c, &bye, why), 0);   /* Laplace: delta 0 is fine */
	s.mechanism = DP_MECH_GAUSSIAN;
	assert_int_equal(check(&J, 0, &c, &bye, why), DP_EREFUSED);
	assert_int_equal(bye, DPASYNC__GOODBYE_CODE__GOODBYE_BAD_CLAIM);
	assert_non_null(strstr(why, "owner owner-1 allows pure epsilon-DP only"));
	assert_non_null(strstr(why, "set ownerd's --delta"));
	c.delta = 1e-6;   /* delta but a lifetime delta of 0 */
	assert_int_equal(check(&J, 0, &c, &bye, why), DP_EREFUSED);
	assert_non_null(strstr(why, "has lifetime delta 0"));
	c.lifetime_delta = 1e-6;   /* both, and a build that cannot answer */
	assert_int_equal(check(&J, 0, &c, &bye, why), DP_EREFUSED);
	assert_non_null(strstr(why, "cannot answer with Gaussian noise"));
	c.gaussian = true;
	assert_int_equal(check(&J, 0, &c, &bye, why), 0);

	/* Planned on what is left, in rho: its job's rho_left, else what the
	 * smaller of epsilon and lifetime_left is worth at its delta. */
	o = &J.owners[0];
	c.has_limits = true;
	c.epsilon_left = 0.5;
	c.lifetime_left = 2;
	c.theta_max = INFINITY;
	c.same_job = true;
	c.rho_left = 0.01;
	lrn_state_take_hello(&J, o, &c);
	assert_true(o->rho_left == 0.01 && o->eps_left == 0.5);
	assert_false(lrn_state_no_budget(o));
	c.rho_left = 0;
	lrn_state_take_hello(&J, o, &c);
	assert_true(lrn_state_no_budget(o));
	c.same_job = false;
	lrn_state_take_hello(&J, o, &c);
	assert_true(o->eps_left == 1.0 && o->rho_left > 0 && o->rho_left < 1.0);
	c.lifetime_left = 0;
	lrn_state_take_hello(&J, o, &c);
	assert_true(o->rho_left == 0 && lrn_state_no_budget(o));
	lrn_state_free(&J);
}

/* What an owner can give: its own cap, else the plan's K_i, else T; 0
 * before the plan. */
static void test_cap(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;

	(void)state;
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
	J.owners[0].answers_cap = 7;
	assert_int_equal(lrn_state_cap(&J, &J.owners[0]), 7);
	assert_int_equal(lrn_state_cap(&J, &J.owners[1]), 0);
	J.started = true;
	assert_int_equal(lrn_state_cap(&J, &J.owners[1]), 10);
	J.owners[1].planned_cap = 4;
	assert_int_equal(lrn_state_cap(&J, &J.owners[1]), 4);
	assert_int_equal(lrn_state_cap(&J, &J.owners[0]), 7);
	lrn_state_free(&J);
}

/* The plan at the start: n, T and eta as given, rho from them, K_i from
 * the rates. */
static void test_start(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	const uint64_t rows[] = { 10, 30 };
	const double rates[] = { 1, 3 };

	(void)state;
	planned(&J, &s, 2, 2, rows, rates);
	assert_true(J.started);
	assert_int_equal(J.n_total, 40);
	assert_int_equal(J.T, 10);
	assert_true(J.eta == 0.05);
	assert_true(J.clip == 1);
	near(J.rho, 0.05 * 100 * 2 * LAMBDA / 2, 1e-15);   /* 0.05 */
	/* pi = 1/4, 3/4: K = ceil(2.75) = 3, ceil(8.25) = 9. */
	assert_int_equal(J.owners[0].planned_cap, 3);
	assert_int_equal(J.owners[1].planned_cap, 9);
	assert_int_equal(lrn_state_goal(&J), 10);
	assert_ptr_equal(lrn_state_output(&J), J.theta_L);
	lrn_plan_log(&J, "hellos");
	done(&J);

	/* rho without T: the planner picks T, then eta = N rho / (sigma T^2). */
	s.T = 0;
	s.eta = 0;
	s.rho = 0.5;
	s.T_max = 200;
	planned(&J, &s, 2, 2, rows, rates);
	assert_true(J.T >= 2 && J.T <= 200);
	near(J.eta, 2 * 0.5 / (2 * LAMBDA * (double)J.T * (double)J.T), 1e-12 * J.eta);
	near(J.rho, 0.5, 1e-12);
	done(&J);

	/* sync1: the step rho / T^2, every K_i = T - 1. */
	s = lrnjob_settings();
	s.mode = LRN_MODE_SYNC1;
	s.eta = 0;
	s.rho = 1;
	s.T = 5;
	planned(&J, &s, 2, 2, rows, rates);
	assert_true(J.step == 1.0 / 25);
	assert_true(J.eta == J.step);
	near(J.rho, 1, 1e-15);
	assert_int_equal(J.owners[0].planned_cap, 4);
	assert_int_equal(lrn_state_goal(&J), 4);
	assert_non_null(J.theta_hat);
	done(&J);

	/* Row counts that overflow: refused. */
	s = lrnjob_settings();
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
	assert_int_equal(lrn_state_set_p(&J, 2), 0);
	J.owners[0].n_rows = UINT64_MAX / 2 + 1;
	J.owners[1].n_rows = UINT64_MAX / 2 + 1;
	assert_int_equal(lrn_plan_start(&J), DP_ERANGE);
	assert_false(J.started);
	lrn_state_free(&J);
}

/* ceil(T pi (1 + 0.1)) with pi = r / sum, rounded as the planner does. */
static uint64_t kcap(double T, double r, double sum)
{
	double share = r / sum;

	return (uint64_t)ceil(T * share / (share + (sum - r) / sum) * 1.1);
}

/* The plan on what is left (docs/planner.md §1 "Budget left"): each
 * owner's eps_i is what it has left; an exhausted owner is left out (not
 * in n, N or the plan); the claims give finite caps; a plan the
 * owners cannot serve is refused before anything starts. */
/* Two owners of 10 rows with LRN_EPSILON_MIN left for T = 3,000,000 (their
 * delta: 0, or > 0 allowing Gaussian answers): too little to split. */
static void starved(struct lrn_job *J, struct lrn_settings *s, double delta)
{
	s->T = 3000000;
	assert_int_equal(lrn_state_init(J, s, lrnjob_names, 2), 0);
	assert_int_equal(lrn_state_set_p(J, 2), 0);
	assert_int_equal(lrn_stats_init(J), 0);
	for (size_t i = 0; i < 2; i++) {
		J->owners[i].n_rows = 10;
		J->owners[i].epsilon = 1.0;
		J->owners[i].eps_left = LRN_EPSILON_MIN;
		J->owners[i].rate = 1;
		J->owners[i].delta = delta;
		J->owners[i].gaussian = delta > 0;
	}
}

static void test_plan_left(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J, K;
	const uint64_t rows[] = { 100, 100, 100 };
	const double rates[] = { 1, 1, 1 };
	char why[256];
	int bye;

	(void)state;
	s.T = 0;
	s.eta = 0;
	s.clip = 0;
	s.T_max = 400;
	/* bank-c: 0.1 of its lifetime left.  The plan's K_i follow the rates
	 * (ceil(T / 3 * 1.1)), and the prediction is that of eps 0.1: worse
	 * than with 1 for everyone, better than with 0.1 for everyone. */
	planned(&J, &s, 3, 2, rows, rates);
	assert_int_equal(lrn_state_init(&K, &s, lrnjob_names, 3), 0);
	assert_int_equal(lrn_state_set_p(&K, 2), 0);
	assert_int_equal(lrn_stats_init(&K), 0);
	for (size_t i = 0; i < 3; i++) {
		K.owners[i].n_rows = rows[i];
		K.owners[i].epsilon = 1.0;
		K.owners[i].eps_left = i == 2 ? 0.1 : 1.0;
		K.owners[i].rate = 1;
	}
	assert_int_equal(lrn_plan_start(&K), 0);
	assert_true(K.psi_pred > J.psi_pred);
	assert_int_equal(K.owners[2].planned_cap, kcap((double)K.T, 1, 3));
	assert_int_equal(K.n_planned, 3);
	done(&K);
	done(&J);

	/* An owner with nothing left is left out: n, N and K_i are the
	 * others'; rho is computed with N = 2. */
	s = lrnjob_settings();
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 3), 0);
	assert_int_equal(lrn_state_set_p(&J, 2), 0);
	assert_int_equal(lrn_stats_init(&J), 0);
	for (size_t i = 0; i < 3; i++) {
		J.owners[i].n_rows = rows[i] * (i + 1);
		J.owners[i].epsilon = J.owners[i].eps_left = 1.0;
		J.owners[i].rate = 1;
	}
	J.owners[2].eps_left = 0;
	lrn_state_count(&J, &J.owners[2], -1);
	J.owners[2].exhausted = true;
	lrn_state_count(&J, &J.owners[2], 1);
	assert_int_equal(lrn_plan_start(&J), 0);
	assert_true(J.owners[2].left_out && !J.owners[0].left_out);
	assert_int_equal(J.n_planned, 2);
	assert_int_equal(J.n_total, 300);
	assert_int_equal(J.owners[0].planned_cap, 6);   /* ceil(10 / 2 * 1.1) */
	assert_int_equal(J.owners[2].planned_cap, 0);
	near(J.rho, 0.05 * 100 * 2 * LAMBDA / 2, 1e-15);
	done(&J);

	/* The claims through the Hello check and the plan: two rates
	 * of 1.7e308 are planned as equal (K finite, ceil(T / 2 * 1.1)); a
	 * rate 1e6 beside a rate 1 as 10 (the other keeps 1/11). */
	s = lrnjob_settings();
	s.T = 100;
	{
		const double huge[] = { 1.7e308, 1.7e308 }, fast[] = { 1e6, 1 };
		const uint64_t two[] = { 100, 100 };
		struct lrn_claims c = claim(100, 2);

		c.rate = 1.7e308;
		assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
		assert_int_equal(lrn_state_set_p(&J, 2), 0);
		assert_int_equal(check(&J, 0, &c, &bye, why), 0);   /* a rate is never refused */
		lrn_state_free(&J);
		planned(&J, &s, 2, 2, two, huge);
		assert_int_equal(J.owners[0].planned_cap, kcap(100, 1, 2));
		assert_int_equal(J.owners[1].planned_cap, kcap(100, 1, 2));
		done(&J);
		planned(&J, &s, 2, 2, two, fast);
		assert_int_equal(J.owners[1].planned_cap, kcap(100, 1, 11));
		assert_int_equal(J.owners[0].planned_cap, kcap(100, 10, 11));
		done(&J);
	}

	/* Owners that cannot reach T with what they have left: refused, and
	 * nothing of the job is started. */
	s = lrnjob_settings();
	s.T = 50;
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 3), 0);
	assert_int_equal(lrn_state_set_p(&J, 2), 0);
	assert_int_equal(lrn_stats_init(&J), 0);
	for (size_t i = 0; i < 3; i++) {
		J.owners[i].n_rows = 10;
		J.owners[i].epsilon = J.owners[i].eps_left = 1.0;
		J.owners[i].rate = 1;
		J.owners[i].answers_cap = 2;   /* their own caps */
	}
	assert_int_equal(lrn_plan_start(&J), DP_EBUDGET);
	assert_string_equal(dp_error_detail(DP_EBUDGET), "no plan reaches T=50 with what the "
			    "owners have left: they can give 6 answers (owner-1 2, owner-2 2, "
			    "owner-3 2); lower T or raise their budgets");
	assert_false(J.started);
	assert_int_equal(J.T, 50);
	J.owners[0].answers_cap = 46;
	assert_int_equal(lrn_plan_start(&J), 0);
	done(&J);
	/* Sync: every owner answers T - 1 rounds; one whose ledger for this
	 * job has given 5 of its 9 cannot. */
	s = lrnjob_settings();
	s.mode = LRN_MODE_SYNC1;
	s.rho = 1;
	s.eta = 0;
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
	assert_int_equal(lrn_state_set_p(&J, 2), 0);
	assert_int_equal(lrn_stats_init(&J), 0);
	for (size_t i = 0; i < 2; i++) {
		J.owners[i].n_rows = 10;
		J.owners[i].epsilon = J.owners[i].eps_left = 1.0;
		J.owners[i].rate = 1;
	}
	J.owners[1].answers_cap = 9;
	J.owners[1].answers_given = 5;
	J.owners[1].same_job = true;
	assert_int_equal(lrn_plan_start(&J), DP_EBUDGET);
	assert_non_null(strstr(dp_error_detail(DP_EBUDGET), "owner owner-2 can give 4 more "
			       "answers and a sync job asks every owner in each of the T-1 = 9 "
			       "rounds"));
	done(&J);
	/* A budget left too small to split over K_i in nano-epsilon. */
	s = lrnjob_settings();
	starved(&J, &s, 0.0);
	assert_int_equal(lrn_plan_start(&J), DP_EBUDGET);
	assert_non_null(strstr(dp_error_detail(DP_EBUDGET), "owner owner-1 has 0.001 left, too "
			       "little for its K_i = 1650001 answers"));   /* ceil(1.65e6) in doubles */
	done(&J);
}

/* The async update against the rule written out above. */
static void test_apply(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	const uint64_t rows[] = { 10, 30 };
	const double rates[] = { 1, 1 };
	double bar[2] = { 2, -1 }, a[2] = { 0.5, 0.25 };
	double ti[2], tl[2], w, eta = 0.05;
	struct lrn_query qr = { .owner = 0, .bar = bar };

	(void)state;
	for (int variant = 0; variant < 3; variant++) {
		s = lrnjob_settings();
		if (variant == 1)
			s.theta_max = 1.5;
		if (variant == 2)
			s.freq_correction = true;
		planned(&J, &s, 2, 2, rows, rates);
		J.theta_L[0] = 1;
		J.theta_L[1] = -2;
		J.owners[0].theta[0] = 3;
		J.owners[0].theta[1] = 0;   /* bar = (theta_L + theta_1)/2 = (2, -1) */
		w = 10.0 / 40;
		if (variant == 2)
			w = w / (2 * (1.0 + 1) / (1.0 + 2));   /* c_1 = 1, k = 1: 0.1875 */
		for (int q = 0; q < 2; q++) {
			double g = 2 * LAMBDA * bar[q];

			ti[q] = clamp(bar[q] - eta * (g / (2 * 2) + w * a[q]), s.theta_max);
			tl[q] = clamp(bar[q] - eta * (2 - 1) / (2.0 * 2) * g, s.theta_max);
		}
		lrn_state_apply(&J, &qr, a);
		assert_int_equal(J.k_done, 1);
		assert_int_equal(J.owners[0].iterations, 1);
		for (int q = 0; q < 2; q++) {
			near(J.owners[0].theta[q], ti[q], 1e-15);
			near(J.theta_L[q], tl[q], 1e-15);
		}
		if (variant == 0) {
			/* By hand: theta_1 = (2 - 0.05 (0.01 + 0.125), -1 - 0.05 (-0.005 + 0.0625)),
			 * theta_L = (2 - 0.05 * 0.25 * 0.04, -1 + 0.05 * 0.25 * 0.02). */
			near(J.owners[0].theta[0], 1.99325, 1e-12);
			near(J.owners[0].theta[1], -1.002875, 1e-12);
			near(J.theta_L[0], 1.9995, 1e-12);
			near(J.theta_L[1], -0.99975, 1e-12);
		}
		if (variant == 1)
			assert_true(J.theta_L[0] == 1.5 && J.owners[0].theta[0] == 1.5);
		if (variant == 2)   /* 2 - 0.05 (0.01 + 0.1875 * 0.5) */
			near(J.owners[0].theta[0], 1.9948125, 1e-12);
		assert_true(J.owners[1].theta[0] == 0);   /* the other owner's copy */
		done(&J);
	}
}

/* sync1 and sync2 rounds, with every owner and with a quorum. */
static void test_round(void **state)
{
	struct lrn_settings s;
	struct lrn_job J;
	const uint64_t rows[] = { 10, 30 };
	const double rates[] = { 1, 1 };
	const double a0[2] = { 1, 2 }, a1[2] = { -1, 0.5 };
	double th[2] = { 0.2, -0.1 }, hat[2] = { 0, 0 }, agg[2], prev[2], ak, c = 0.5;

	(void)state;
	/* sync1, k = 1 and then a quorum round of owner 2 alone at k = 2. */
	s = lrnjob_settings();
	s.mode = LRN_MODE_SYNC1;
	s.eta = 0;
	s.rho = 1;
	s.T = 5;
	planned(&J, &s, 2, 2, rows, rates);
	memcpy(J.theta_L, th, sizeof(th));
	memcpy(J.round_ans, a0, sizeof(a0));
	memcpy(J.round_ans + 2, a1, sizeof(a1));
	J.owners[0].round_has = J.owners[1].round_has = true;
	J.round_got = 2;
	lrn_state_round(&J);
	for (int q = 0; q < 2; q++) {
		agg[q] = 0.25 * a0[q] + 0.75 * a1[q];
		th[q] -= (1.0 / 25) / 1 * (2 * LAMBDA * th[q] + agg[q]);
		near(J.theta_L[q], th[q], 1e-15);
	}
	assert_int_equal(J.k_done, 1);
	J.owners[0].round_has = false;
	J.round_got = 1;
	lrn_state_round(&J);
	for (int q = 0; q < 2; q++) {   /* 30 of the 30 rows that answered: w = 1 */
		th[q] -= (1.0 / 25) / 2 * (2 * LAMBDA * th[q] + a1[q]);
		near(J.theta_L[q], th[q], 1e-15);
	}
	done(&J);

	/* sync2, c = 0.5, T = 4 (a = 1/2): two rounds. */
	s = lrnjob_settings();
	s.mode = LRN_MODE_SYNC2;
	s.eta = 0;
	s.c = c;
	s.T = 4;
	s.theta_max = 0.5;
	planned(&J, &s, 2, 2, rows, rates);
	assert_true(J.step == c);
	th[0] = 0.2;
	th[1] = -0.1;
	memcpy(J.theta_L, th, sizeof(th));
	memcpy(J.round_ans, a0, sizeof(a0));
	memcpy(J.round_ans + 2, a1, sizeof(a1));
	J.owners[0].round_has = J.owners[1].round_has = true;
	J.round_got = 2;
	ak = 0.5;
	for (int k = 1; k <= 2; k++) {
		lrn_state_round(&J);
		for (int q = 0; q < 2; q++) {
			agg[q] = 0.25 * a0[q] + 0.75 * a1[q];
			prev[q] = th[q];
			th[q] = clamp(th[q] - c / sqrt(k) * (2 * LAMBDA * th[q] + agg[q]), 0.5);
			hat[q] = (k - 1) / (ak + k) * hat[q] + (ak + 1) / (ak + k) * prev[q];
			near(J.theta_L[q], th[q], 1e-15);
			near(J.theta_hat[q], hat[q], 1e-15);
		}
	}
	/* After round 1 the average is theta[1] itself. */
	assert_ptr_equal(lrn_state_output(&J), J.theta_hat);
	assert_int_equal(J.k_done, 2);
	done(&J);
}

static void test_public(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;

	(void)state;
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
	assert_int_equal(lrn_plan_load_public(&J), 0);   /* none given */
	assert_false(J.have_pub);
	lrn_state_free(&J);
	s.public_path = (char *)path_of("no-such-public.json");
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
	assert_true(lrn_plan_load_public(&J) < 0);
	assert_false(J.have_pub);
	lrn_state_free(&J);
}

/* A Gaussian job owner by owner (docs/learnerd.md "Mechanisms"): the plan
 * is dp_plan_make's for the L2 shape constants with each owner's own
 * delta, not one delta for all; a budget whose rho share over K_i falls
 * below a nano-rho refuses the plan (DP_EBUDGET) before anyone is charged. */
static void test_plan_gauss(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	const double deltas[2] = { 1e-6, 1e-3 }, eps[2] = { 1.0, 1.0 }, one[2] = { 1e-6, 1e-6 };
	const uint64_t rows[2] = { 500, 800 };
	dp_plan_request req = { 0 };
	dp_plan_public pub;
	dp_plan want, same;
	struct lrn_job J;

	(void)state;
	s.mechanism = DP_MECH_GAUSSIAN;
	s.T = 400;
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
	assert_int_equal(lrn_state_set_p(&J, 3), 0);
	assert_int_equal(lrn_stats_init(&J), 0);
	for (size_t i = 0; i < 2; i++) {
		J.owners[i].n_rows = rows[i];
		J.owners[i].epsilon = J.owners[i].eps_left = eps[i];
		J.owners[i].rate = 1;
		J.owners[i].delta = deltas[i];
		J.owners[i].gaussian = true;
	}
	assert_int_equal(lrn_plan_start(&J), 0);
	assert_int_equal(dp_plan_public_shape_norm(J.model, 3, s.lambda, true, &pub), 0);
	req.mode = DP_PLAN_ASYNC;
	req.N = 2;
	req.n_rows = rows;
	req.epsilon = eps;
	req.T = 400;
	req.step = s.eta;
	req.clip = s.clip;
	req.margin = s.answers_margin;
	req.mech = DP_MECH_GAUSSIAN;
	req.deltas = deltas;
	assert_int_equal(dp_plan_make(&req, &pub, &want), 0);
	assert_true(J.psi_pred == want.psi && J.clip == want.clip && J.eta == want.step);
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(J.owners[i].planned_cap, want.answers_cap[i]);
	req.deltas = one;   /* owner 2's larger delta is used: less noise than at 1e-6 */
	assert_int_equal(dp_plan_make(&req, &pub, &same), 0);
	assert_true(same.psi > J.psi_pred);
	dp_plan_free(&want);
	dp_plan_free(&same);
	dp_plan_public_free(&pub);
	done(&J);

	starved(&J, &s, 1e-6);
	assert_int_equal(lrn_plan_start(&J), DP_EBUDGET);
	assert_non_null(strstr(dp_error_detail(DP_EBUDGET), "an owner's budget cannot pay its "
			       "K_i Gaussian answers one nano-rho each"));
	assert_false(J.started);
	done(&J);
}

/* --public for a Gaussian job: L2 constants only (the file's "public_l2"
 * beside "public", as forecast --delta writes it), with the L1 ones kept
 * for the comparison; a file of L1 constants alone is refused. */
static void test_public_norm(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	const char *l1 = path_of("public-l1.json"), *both = path_of("public-both.json");
	struct json_object *o = json_object_new_object(), *ja;
	dp_plan_public a, b;
	struct lrn_job J;

	(void)state;
	assert_int_equal(dp_plan_public_shape_norm(DP_MODEL_LINEAR, 3, s.lambda, false, &a), 0);
	assert_int_equal(dp_plan_public_shape_norm(DP_MODEL_LINEAR, 3, s.lambda, true, &b), 0);
	ja = dp_plan_public_json(&a);
	assert_int_equal(json_object_to_file(l1, ja), 0);
	json_object_put(ja);
	json_object_object_add(o, "public", dp_plan_public_json(&a));
	json_object_object_add(o, "public_l2", dp_plan_public_json(&b));
	assert_int_equal(json_object_to_file(both, o), 0);
	json_object_put(o);
	s.mechanism = DP_MECH_GAUSSIAN;
	s.public_path = (char *)l1;
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
	assert_int_equal(lrn_plan_load_public(&J), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "constants of L1 clips, and the job "
			       "clips in L2"));
	assert_false(J.have_pub);
	lrn_state_free(&J);
	s.public_path = (char *)both;
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
	assert_int_equal(lrn_plan_load_public(&J), 0);
	assert_true(J.have_pub && J.pub.l2 && J.have_pub_other && !J.pub_other.l2);
	assert_true(J.pub.clips[0].clip == b.clips[0].clip);
	lrn_state_free(&J);
	s.mechanism = DP_MECH_LAPLACE;   /* the same file for a Laplace job: its "public" */
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
	assert_int_equal(lrn_plan_load_public(&J), 0);
	assert_true(J.have_pub && !J.pub.l2 && J.have_pub_other && J.pub_other.l2);
	lrn_state_free(&J);
	dp_plan_public_free(&a);
	dp_plan_public_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_set_p),
		cmocka_unit_test(test_check_hello),
		cmocka_unit_test(test_check_claims),
		cmocka_unit_test(test_take_hello),
		cmocka_unit_test(test_mechanism),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_start),
		cmocka_unit_test(test_plan_left),
		cmocka_unit_test(test_apply),
		cmocka_unit_test(test_round),
		cmocka_unit_test(test_public),
		cmocka_unit_test(test_plan_gauss),
		cmocka_unit_test(test_public_norm),
	};
	int rc;

	dp_log_set_level(DP_LOG_ERROR);
	tmpdir_setup("dp_test_state");
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	tmpdir_teardown();
	return rc;
}
