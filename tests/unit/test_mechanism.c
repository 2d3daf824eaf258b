/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for owner/mechanism.c: the checks of ownerd's --delta and
 * --lifetime-delta, what its Hello says about the mechanisms, and its
 * refusal of a Welcome whose mechanism it does not allow, the second line
 * of defence behind the learner's check of the Hello (docs/ownerd.md
 * "Mechanisms and delta", docs/protocol.md §5 "Mechanisms"). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/zcdp.h"

#include "owner/own.h"

static struct own_settings settings(double delta, double lifetime_delta, bool peer)
{
	struct own_settings s;

	memset(&s, 0, sizeof(s));
	s.delta = delta;
	s.lifetime_delta = lifetime_delta;
	s.peer = peer;
	return s;
}

static void test_validate(void **state)
{
	struct own_settings s;

	(void)state;
	s = settings(0, -1, false);   /* the defaults */
	assert_int_equal(own_mechanism_validate(&s), 0);
	s = settings(1e-6, -1, false);
	assert_int_equal(own_mechanism_validate(&s), 0);
	s = settings(0.9, 0.95, false);
	assert_int_equal(own_mechanism_validate(&s), 0);
	s = settings(1, -1, false);
	assert_int_equal(own_mechanism_validate(&s), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "[0, 1)"));
	s = settings(-1e-9, -1, false);
	assert_int_equal(own_mechanism_validate(&s), DP_EINVAL);
	s = settings(NAN, -1, false);
	assert_int_equal(own_mechanism_validate(&s), DP_EINVAL);
	/* Peer mode keeps its bound of 0.5 (docs/peer-agents.md §2). */
	s = settings(0.5, -1, true);
	assert_int_equal(own_mechanism_validate(&s), 0);
	s = settings(0.6, -1, true);
	assert_int_equal(own_mechanism_validate(&s), DP_EINVAL);
	s = settings(0.6, -1, false);
	assert_int_equal(own_mechanism_validate(&s), 0);
	/* The lifetime delta: -1 (not given), else in [delta, 1). */
	s = settings(1e-6, 1e-5, false);
	assert_int_equal(own_mechanism_validate(&s), 0);
	s = settings(1e-6, 1e-7, false);
	assert_int_equal(own_mechanism_validate(&s), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "below --delta"));
	s = settings(1e-6, 0, false);
	assert_int_equal(own_mechanism_validate(&s), DP_EINVAL);
	s = settings(0, 0, false);
	assert_int_equal(own_mechanism_validate(&s), 0);
	s = settings(0, 1, false);
	assert_int_equal(own_mechanism_validate(&s), DP_EINVAL);
	s = settings(0, -0.5, false);
	assert_int_equal(own_mechanism_validate(&s), DP_EINVAL);
}

static void test_lifetime_and_warning(void **state)
{
	struct own_settings s = settings(1e-6, -1, false);

	(void)state;
	assert_true(own_mechanism_lifetime_delta(&s) == 1e-6);
	s.lifetime_delta = 1e-5;
	assert_true(own_mechanism_lifetime_delta(&s) == 1e-5);
	/* delta >= 1/n is warned of: 1e-6 with a million rows, not below. */
	assert_false(own_mechanism_delta_large(&s, 999999));
	assert_true(own_mechanism_delta_large(&s, 1000000));
	s.delta = 0;
	assert_false(own_mechanism_delta_large(&s, 1000000000));
}

static Dpasync__Welcome welcome(int mechanism)
{
	Dpasync__Welcome w = DPASYNC__WELCOME__INIT;

	w.job = "j1";
	w.mechanism = mechanism;
	w.clip_l2 = mechanism == DPASYNC__MECHANISM__MECHANISM_GAUSSIAN ? 1.0 : 0.0;
	return w;
}

static void test_welcome(void **state)
{
	struct own_settings s = settings(0, -1, false);
	Dpasync__Welcome lap = welcome(DPASYNC__MECHANISM__MECHANISM_LAPLACE);
	Dpasync__Welcome gau = welcome(DPASYNC__MECHANISM__MECHANISM_GAUSSIAN);
	char why[300] = "";

	(void)state;
	/* Laplace is every owner's, whatever its delta. */
	assert_int_equal(own_mechanism_check_welcome(&s, own_mechanism_lifetime_delta(&s), &lap, why, sizeof(why)), 0);
	s.delta = 1e-6;
	assert_int_equal(own_mechanism_check_welcome(&s, own_mechanism_lifetime_delta(&s), &lap, why, sizeof(why)), 0);
	/* Gaussian at delta 0: refused, naming the job and the fix. */
	s.delta = 0;
	assert_int_equal(own_mechanism_check_welcome(&s, own_mechanism_lifetime_delta(&s), &gau, why, sizeof(why)), DP_EREFUSED);
	assert_non_null(strstr(why, "job j1"));
	assert_non_null(strstr(why, "--delta"));
	/* Gaussian with delta > 0 but a lifetime delta of 0. */
	s = settings(0, 0, false);
	s.delta = 1e-6;   /* validate refuses this; the check does not rely on it */
	assert_int_equal(own_mechanism_check_welcome(&s, own_mechanism_lifetime_delta(&s), &gau, why, sizeof(why)), DP_EREFUSED);
	assert_non_null(strstr(why, "lifetime delta is 0"));
	/* Gaussian with delta > 0: allowed exactly when the Hello says so. */
	s = settings(1e-6, -1, false);
	assert_int_equal(own_mechanism_check_welcome(&s, own_mechanism_lifetime_delta(&s), &gau, why, sizeof(why)) == 0,
			 own_mechanism_gaussian(&s, 1e-6));
}

static void test_hello(void **state)
{
	struct own_settings s = settings(0, -1, false);
	double rho = 0;

	(void)state;
	/* At delta 0 the Hello says Laplace only, and no rho. */
	assert_false(own_mechanism_gaussian(&s, 1e-6));
	assert_true(own_mechanism_rho_left(&s, 1e-6, 1.0) == 0);
	assert_true(own_mechanism_rho_left(&s, 1e-6, INFINITY) == 0);
	s.delta = 1e-6;
	if (!own_mechanism_gaussian(&s, 1e-6))
		return;   /* a build that does not answer with Gaussian noise */
	assert_int_equal(dp_zcdp_rho_for(1.0, 0, 1e-6, &rho), 0);
	assert_true(own_mechanism_rho_left(&s, 1e-6, 1.0) == rho);
	assert_true(own_mechanism_rho_left(&s, 1e-6, 0) == 0);
	assert_true(isinf(own_mechanism_rho_left(&s, 1e-6, INFINITY)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_lifetime_and_warning),
		cmocka_unit_test(test_welcome),
		cmocka_unit_test(test_hello),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
