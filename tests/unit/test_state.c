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

#include "common/core/error.h"
#include "common/core/log.h"
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
		J->owners[i].epsilon = 1.0;
		J->owners[i].rate = rates[i];
	}
	assert_int_equal(lrn_state_start(J), 0);
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

static void test_check_hello(void **state)
{
	struct lrn_settings s = lrnjob_settings();
	struct lrn_job J;
	char why[256];

	(void)state;
	s.max_frame = 1024;
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
	assert_int_equal(lrn_state_check_hello(&J, &J.owners[0], (UINT64_C(1) << 40) + 1, 3, why,
					       sizeof(why)), DP_ERANGE);
	assert_string_equal(why, "Hello n_rows 1099511627777 exceeds the maximum 1099511627776 "
			    "rows per owner");
	assert_int_equal(lrn_state_check_hello(&J, &J.owners[0], UINT64_C(1) << 40, 3, why,
					       sizeof(why)), 0);
	/* p not fixed yet: only the frame bounds n_features. */
	assert_int_equal(lrn_state_check_hello(&J, &J.owners[0], 5, 121, why, sizeof(why)),
			 DP_EINVAL);
	assert_string_equal(why, "Hello n_features 121 does not fit in max-frame 1024 bytes");
	assert_int_equal(lrn_state_set_p(&J, 3), 0);
	assert_int_equal(lrn_state_check_hello(&J, &J.owners[1], 5, 4, why, sizeof(why)),
			 DP_EINVAL);
	assert_non_null(strstr(why, "Hello n_features 4 differs from the job's p 3: give owner "
			       "owner-2 data"));
	assert_int_equal(lrn_state_check_hello(&J, &J.owners[1], 5, 3, why, sizeof(why)), 0);
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
	lrn_state_log_plan(&J, "hellos");
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
	assert_int_equal(lrn_state_start(&J), DP_ERANGE);
	assert_false(J.started);
	lrn_state_free(&J);
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
	assert_int_equal(lrn_state_load_public(&J), 0);   /* none given */
	assert_false(J.have_pub);
	lrn_state_free(&J);
	s.public_path = (char *)path_of("no-such-public.json");
	assert_int_equal(lrn_state_init(&J, &s, lrnjob_names, 2), 0);
	assert_true(lrn_state_load_public(&J) < 0);
	assert_false(J.have_pub);
	lrn_state_free(&J);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_set_p),
		cmocka_unit_test(test_check_hello),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_start),
		cmocka_unit_test(test_apply),
		cmocka_unit_test(test_round),
		cmocka_unit_test(test_public),
	};
	int rc;

	dp_log_set_level(DP_LOG_ERROR);
	tmpdir_setup("dp_test_state");
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	tmpdir_teardown();
	return rc;
}
