/* SPDX-License-Identifier: Apache-2.0 */
/* The equal split of (eps, delta) over T wake-ups and the plan of an
 * agent's ledger (common/core/compose.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/core/compose.h"
#include "common/core/error.h"
#include "common/core/nano.h"
#include "common/core/noise.h"
#include "common/core/zcdp.h"

static void test_pure_is_equal_split(void **state)
{
	double e = 0;

	(void)state;
	assert_int_equal(dp_compose_split(1.0, 0.0, 4, &e), 0);
	assert_true(e == 0.25);
	assert_int_equal(dp_compose_split(INFINITY, 0.0, 4, &e), 0);
	assert_true(isinf(e));
}

static void test_advanced_by_hand(void **state)
{
	(void)state;
	/* T = 2, delta = e^-2: sqrt(2*2*2) = sqrt(8); eps_t = 0.1:
	 * sqrt(8)*0.1 + 2*0.1*(e^0.1 - 1). */
	double want = sqrt(8.0) * 0.1 + 0.2 * expm1(0.1);

	assert_true(fabs(dp_compose_advanced(0.1, exp(-2.0), 2) - want) < 1e-15);
}

static void test_advanced_wins_for_many_steps(void **state)
{
	/* eps = 1, delta = e^-5, T = 1000: basic gives 1e-3; advanced gives
	 * about 1/sqrt(2*1000*5) = 0.01 (less the second-order term). */
	double e = 0;

	(void)state;
	assert_int_equal(dp_compose_split(1.0, exp(-5.0), 1000, &e), 0);
	assert_true(e > 0.009 && e < 0.01);
	/* It is feasible, and barely: the guarantee holds for the value. */
	assert_true(dp_compose_advanced(e, exp(-5.0), 1000) <= 1.0);
	assert_true(dp_compose_advanced(e * (1 + 1e-9), exp(-5.0), 1000) > 1.0);
}

static void test_basic_wins_for_few_steps(void **state)
{
	/* T = 3, delta = 1e-6: sqrt(6 ln 1e6) = 8.1 > 3, advanced is worse. */
	double e = 0;

	(void)state;
	assert_int_equal(dp_compose_split(0.3, 1e-6, 3, &e), 0);
	assert_true(e == 0.3 / 3.0);
}

static void test_bad_arguments(void **state)
{
	double e = 7;

	(void)state;
	assert_int_equal(dp_compose_split(0.0, 0.0, 1, &e), DP_EINVAL);
	assert_int_equal(dp_compose_split(NAN, 0.0, 1, &e), DP_EINVAL);
	assert_int_equal(dp_compose_split(1.0, 1.0, 1, &e), DP_EINVAL);
	assert_int_equal(dp_compose_split(1.0, -0.1, 1, &e), DP_EINVAL);
	assert_int_equal(dp_compose_split(1.0, 0.0, 0, &e), DP_EINVAL);
	assert_true(e == 7);
}

/* The charges of a plan fit its cap once rounded as the ledger rounds:
 * K warm-start charges and T wake-up charges up, the cap down. */
static void assert_fits(const dp_compose_budget *b, uint64_t K, uint64_t T)
{
	uint64_t cap, step, warm = 0;

	assert_int_equal(dp_nano_floor(b->cap, &cap), 0);
	assert_int_equal(dp_nano_ceil(b->eps_step, &step), 0);
	if (K)
		assert_int_equal(dp_nano_ceil(b->eps_warm, &warm), 0);
	assert_true(K * warm + T * step <= cap);
}

static void test_plan_pure(void **state)
{
	dp_compose_budget b;

	(void)state;
	assert_int_equal(dp_compose_plan(1.0, 0, 0, 0, 4, &b), 0);
	assert_true(b.cap == 1.0 && b.eps_step == 0.25 && b.eps_warm == 0);
	/* 1/3 is not a whole nano-epsilon: the share rounds down so that
	 * three charges fit the cap. */
	assert_int_equal(dp_compose_plan(1.0, 0, 0, 0, 3, &b), 0);
	assert_true(b.cap == 1.0 && b.eps_step < 1.0 / 3.0 && b.eps_step > 1.0 / 3.0 - 1e-9);
	assert_fits(&b, 0, 3);
}

static void test_plan_warm_start(void **state)
{
	dp_compose_budget b;

	(void)state;
	/* 0.4 over 10 warm-start steps, 0.6 over 3 wake-ups (1.0 - 0.4 is a
	 * hair below 0.6 in binary, so its share rounds down a nano-epsilon). */
	assert_int_equal(dp_compose_plan(1.0, 0.4, 10, 0, 3, &b), 0);
	assert_true(fabs(b.eps_warm - 0.04) < 1e-12);
	assert_true(b.eps_step <= 0.2 && b.eps_step > 0.2 - 2e-9);
	assert_true(fabs(b.cap - 1.0) < 1e-15);
	assert_fits(&b, 10, 3);
	/* Awkward parts: every rounding down, and they still fit. */
	for (uint64_t T = 1; T <= 50; T += 7)
		for (uint64_t K = 1; K <= 13; K += 4) {
			assert_int_equal(dp_compose_plan(1.0 / 3.0, 1.0 / 7.0, K, 0, T, &b), 0);
			assert_fits(&b, K, T);
		}
}

static void test_plan_advanced(void **state)
{
	dp_compose_budget b;
	double e = 0;

	(void)state;
	/* Under advanced composition the wake-ups' pure-epsilon total, the
	 * ledger's cap, is above eps. */
	assert_int_equal(dp_compose_split(1.0, exp(-5.0), 1000, &e), 0);
	assert_int_equal(dp_compose_plan(1.0, 0, 0, exp(-5.0), 1000, &b), 0);
	assert_true(b.cap == e * 1000 && b.cap > 1.0);
	assert_true(b.eps_step <= e && b.eps_step > e - 1e-9);
	assert_fits(&b, 0, 1000);
}

static void test_plan_infinite_and_errors(void **state)
{
	dp_compose_budget b = { 7, 7, 7 };

	(void)state;
	assert_int_equal(dp_compose_plan(INFINITY, 0.5, 10, 0, 4, &b), 0);
	assert_true(isinf(b.cap) && isinf(b.eps_step) && isinf(b.eps_warm));
	b = (dp_compose_budget){ 7, 7, 7 };
	assert_int_equal(dp_compose_plan(1.0, 1.0, 10, 0, 4, &b), DP_EINVAL);
	assert_string_equal(dp_error_detail(DP_EINVAL),
			    "--warm-start 1 leaves nothing of --epsilon 1 for the wake-ups");
	assert_int_equal(dp_compose_plan(1.0, -0.1, 10, 0, 4, &b), DP_EINVAL);
	assert_int_equal(dp_compose_plan(1.0, 0.5, 0, 0, 4, &b), DP_EINVAL);
	assert_int_equal(dp_compose_plan(1.0, 0, 0, 0, 0, &b), DP_EINVAL);
	assert_int_equal(dp_compose_plan(0, 0, 0, 0, 4, &b), DP_EINVAL);
	assert_string_equal(dp_error_detail(DP_EINVAL), "epsilon must be > 0");
	/* Below one nano-epsilon a wake-up: the ledger's detail, named. */
	assert_int_equal(dp_compose_plan(1e-6, 0, 0, 0, 10000, &b), DP_EINVAL);
	assert_true(strncmp(dp_error_detail(DP_EINVAL), "--epsilon cannot be split over the "
			    "wake-ups: ", 44) == 0);
	assert_true(b.cap == 7 && b.eps_step == 7 && b.eps_warm == 7);
}

/* The Gaussian agent's plan (docs/peer-agents.md "Privacy"): without a
 * warm start it is dp_zcdp_share's job split; with one the warm start
 * takes warm / eps of the rho cap; either way the rounded charges and
 * their slack stay within (eps, delta) (docs/zcdp.md §5). */
static void test_plan_gauss(void **state)
{
	const double delta = 1e-6;
	dp_compose_budget b = { 7, 7, 7 };
	dp_zcdp_totals t = { 0 };
	uint64_t sn = 7, sn2, tn, wn;
	double cap, rho_q, e;

	(void)state;
	assert_int_equal(dp_compose_plan_gauss(1.0, 0, 0, delta, 10, 5, &b, &sn), 0);
	assert_int_equal(dp_zcdp_cap(1.0, delta, 10, 5, DP_NOISE_DGAUSS_SLACK,
				     DP_NOISE_DGAUSS_TAIL, &cap, &sn2), 0);
	assert_int_equal(dp_zcdp_share(1.0, delta, 10, 5, DP_NOISE_DGAUSS_SLACK,
				       DP_NOISE_DGAUSS_TAIL, &rho_q, &sn2), 0);
	assert_true(b.cap == cap && b.eps_step == rho_q && b.eps_warm == 0 && sn == sn2);
	assert_fits(&b, 0, 10);
	for (uint64_t T = 1; T <= 50; T += 7)
		for (uint64_t K = 1; K <= 13; K += 4) {
			assert_int_equal(dp_compose_plan_gauss(1.0 / 3.0, 1.0 / 7.0, K, delta, T, 7,
							       &b, &sn), 0);
			assert_fits(&b, K, T);
			assert_int_equal(dp_nano_ceil(b.eps_step, &tn), 0);
			assert_int_equal(dp_nano_ceil(b.eps_warm, &wn), 0);
			/* the warm start's part is 3/7 of the cap, to a nano-rho */
			assert_true(fabs((double)(wn * K) / (double)(wn * K + tn * T) - 3.0 / 7.0) <
				    2.0 * (double)(K + T) * 1e-9 / b.cap);
			t = (dp_zcdp_totals){ .rho_gauss = wn * K + tn * T, .slack = sn * (K + T) };
			assert_int_equal(dp_zcdp_best_eps(&t, delta, &e), 0);
			assert_true(e <= 1.0 / 3.0 && e > 1.0 / 3.0 - 1e-3);
		}
	assert_int_equal(dp_compose_plan_gauss(INFINITY, 0.5, 10, delta, 4, 3, &b, &sn), 0);
	assert_true(isinf(b.cap) && isinf(b.eps_step) && isinf(b.eps_warm) && sn == 0);
	b = (dp_compose_budget){ 7, 7, 7 };
	sn = 7;
	assert_int_equal(dp_compose_plan_gauss(1.0, 0, 0, 0, 4, 3, &b, &sn), DP_EINVAL);
	assert_true(strncmp(dp_error_detail(DP_EINVAL), "--mechanism gaussian needs --delta > 0",
			    38) == 0);
	assert_int_equal(dp_compose_plan_gauss(1.0, 0, 0, 1.0, 4, 3, &b, &sn), DP_EINVAL);
	assert_string_equal(dp_error_detail(DP_EINVAL), "delta must be in (0, 1)");
	assert_int_equal(dp_compose_plan_gauss(1.0, 1.0, 10, delta, 4, 3, &b, &sn), DP_EINVAL);
	assert_int_equal(dp_compose_plan_gauss(1.0, 0.5, 0, delta, 4, 3, &b, &sn), DP_EINVAL);
	assert_int_equal(dp_compose_plan_gauss(1.0, 0, 0, delta, 0, 3, &b, &sn), DP_EINVAL);
	assert_true(b.cap == 7 && b.eps_step == 7 && b.eps_warm == 7 && sn == 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pure_is_equal_split),
		cmocka_unit_test(test_advanced_by_hand),
		cmocka_unit_test(test_advanced_wins_for_many_steps),
		cmocka_unit_test(test_basic_wins_for_few_steps),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_plan_pure),
		cmocka_unit_test(test_plan_warm_start),
		cmocka_unit_test(test_plan_advanced),
		cmocka_unit_test(test_plan_infinite_and_errors),
		cmocka_unit_test(test_plan_gauss),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
