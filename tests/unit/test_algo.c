/* SPDX-License-Identifier: Apache-2.0 */
/* Step functions against values worked out by hand from docs/design.md §4-5. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>

#include "common/core/algo.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) <= 1e-12 * (1.0 + fabs(b)))

static void test_async_step_by_hand(void **state)
{
	/* p=2, N=3, eta=0.6, lambda=0.5; theta_L=(1,2), theta_i=(3,-2),
	 * answer=(0.3,-0.6), weight 1/4.  bar=(2,0), grad g(bar)=(2,0).
	 * theta_i = bar - 0.6 (grad g/6 + ans/4) = (1.755, 0.09)
	 * theta_L = bar - 0.6 (2/9) grad g = (2 - 0.8/3, 0). */
	dp_algo_async_params a = { .p = 2, .N = 3, .eta = 0.6, .lambda = 0.5, .theta_max = 10 };
	double L[2] = { 1, 2 }, ti[2] = { 3, -2 }, bar[2], ans[2] = { 0.3, -0.6 };

	dp_algo_midpoint(2, L, ti, bar);
	NEAR(bar[0], 2.0);
	NEAR(bar[1], 0.0);
	dp_algo_async_update(&a, bar, ans, 0.25, ti, L);
	NEAR(ti[0], 1.755);
	NEAR(ti[1], 0.09);
	NEAR(L[0], 2.0 - 0.8 / 3.0);
	NEAR(L[1], 0.0);
}

static void test_async_projection(void **state)
{
	/* theta_max = 1: bar=(2,0) would leave the box; both copies are clamped. */
	dp_algo_async_params a = { .p = 2, .N = 3, .eta = 0.6, .lambda = 0.5, .theta_max = 1 };
	double L[2] = { 1, 2 }, ti[2] = { 3, -2 }, bar[2] = { 2, 0 }, ans[2] = { 0.3, -10 };

	dp_algo_async_update(&a, bar, ans, 0.25, ti, L);
	NEAR(ti[0], 1.0);
	NEAR(ti[1], 1.0); /* 0 - 0.6 * (-2.5) = 1.5 -> 1 */
	NEAR(L[0], 1.0);
}

static void test_rho_eta(void **state)
{
	/* N=3, T=10, lambda=0.5 (sigma=1), rho=2: eta = 3*2/(100*1) = 0.06. */
	NEAR(dp_algo_eta_from_rho(3, 10, 0.5, 2.0), 0.06);
	NEAR(dp_algo_rho_from_eta(3, 10, 0.5, 0.06), 2.0);
}

static void test_sync1_by_hand(void **state)
{
	/* theta=(1,-1), lambda=0.5, agg=(0.2,0.4), rho/T^2=0.5, k=2: step 0.25,
	 * theta - 0.25 (theta + agg) = (0.7, -0.85). */
	double th[2] = { 1, -1 }, agg[2] = { 0.2, 0.4 };

	dp_algo_sync1_step(2, 0.5, 2, 0.5, agg, th);
	NEAR(th[0], 0.7);
	NEAR(th[1], -0.85);
}

static void test_sync2_by_hand(void **state)
{
	/* c=1, k=4, T=16 (1/sqrt T = 0.25), lambda=0, agg=(1,-2), theta=(1,1),
	 * theta_hat=(2,0): step 0.5, theta_hat = (3/4.25)(2,0) + (1.25/4.25)(1,1),
	 * theta = (0.5, 2). */
	double th[2] = { 1, 1 }, hat[2] = { 2, 0 }, agg[2] = { 1, -2 };

	dp_algo_sync2_step(2, 1.0, 4, 16, 0.0, 10.0, agg, th, hat);
	NEAR(hat[0], 7.25 / 4.25);
	NEAR(hat[1], 1.25 / 4.25);
	NEAR(th[0], 0.5);
	NEAR(th[1], 2.0);
	/* The box applies to theta, not to the average. */
	dp_algo_sync2_step(2, 1.0, 4, 16, 0.0, 1.0, agg, th, hat);
	NEAR(th[1], 1.0);
}

static void test_p2p_by_hand(void **state)
{
	/* mu=1, c=0.5, L_loc=2: alpha = 1/(1+1) = 0.5.  theta_i=(1,-1);
	 * neighbours (2,0) with W=1 and (0,4) with W=3: D=4, smoothing term
	 * (0.5,3).  g=(0.2,-0.4), lambda=0.5: g + 2 lambda theta_i = (1.2,-1.4),
	 * times mu c = (0.6,-0.7).  theta_i = 0.5 (1,-1) + 0.5 (-0.1,3.7)
	 * = (0.45, 1.35). */
	dp_algo_p2p_params a = { .p = 2, .mu = 1, .c = 0.5, .L_loc = 2, .lambda = 0.5 };
	double ti[2] = { 1, -1 }, t1[2] = { 2, 0 }, t2[2] = { 0, 4 }, g[2] = { 0.2, -0.4 };
	const double *nb[2] = { t1, t2 };
	double w[2] = { 1, 3 };

	NEAR(dp_algo_p2p_alpha(1, 0.5, 2), 0.5);
	dp_algo_p2p_update(&a, 2, nb, w, g, ti);
	NEAR(ti[0], 0.45);
	NEAR(ti[1], 1.35);
}

static void test_p2p_alone(void **state)
{
	/* No neighbour: a plain gradient step of size alpha mu c = 0.25,
	 * (1,-1) - 0.25 (1.2,-1.4) = (0.7,-0.65). */
	dp_algo_p2p_params a = { .p = 2, .mu = 1, .c = 0.5, .L_loc = 2, .lambda = 0.5 };
	double ti[2] = { 1, -1 }, g[2] = { 0.2, -0.4 };

	dp_algo_p2p_update(&a, 0, NULL, NULL, g, ti);
	NEAR(ti[0], 0.7);
	NEAR(ti[1], -0.65);
}

static void test_p2p_warm_step(void **state)
{
	/* Gradient descent with step 1/L_loc = 1/2, mu and c unused:
	 * g + 2 lambda theta = (1.2,-1.4), (1,-1) - (0.6,-0.7) = (0.4,-0.3). */
	dp_algo_p2p_params a = { .p = 2, .mu = 7, .c = 0.25, .L_loc = 2, .lambda = 0.5 };
	double ti[2] = { 1, -1 }, g[2] = { 0.2, -0.4 };

	dp_algo_p2p_warm_step(&a, g, ti);
	NEAR(ti[0], 0.4);
	NEAR(ti[1], -0.3);
}

static void test_p2p_smoothness(void **state)
{
	/* ||x||^2 <= 3, lambda = 0.5: linear 2*3 + 1 = 7, logistic 3/4 + 1. */
	NEAR(dp_algo_p2p_smoothness(0, 3, 0.5), 7.0);
	NEAR(dp_algo_p2p_smoothness(1, 3, 0.5), 1.75);
	assert_true(isnan(dp_algo_p2p_smoothness(2, 3, 0.5)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_async_step_by_hand),
		cmocka_unit_test(test_async_projection),
		cmocka_unit_test(test_rho_eta),
		cmocka_unit_test(test_sync1_by_hand),
		cmocka_unit_test(test_sync2_by_hand),
		cmocka_unit_test(test_p2p_by_hand),
		cmocka_unit_test(test_p2p_alone),
		cmocka_unit_test(test_p2p_warm_step),
		cmocka_unit_test(test_p2p_smoothness),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
