/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for learner/clock.c: learnerd's monotonic and wall time, against
 * the system's clocks read here directly. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <time.h>

#include "learner/job.h"

static double sys(clockid_t id)
{
	struct timespec ts;

	assert_int_equal(clock_gettime(id, &ts), 0);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Monotonic seconds: never backwards, and on CLOCK_MONOTONIC's scale (a
 * sleep of 50 ms shows as 50 ms, not 50 s or 50 µs). */
static void test_mono(void **state)
{
	double a, b, before, after, t0, t1;
	struct timespec nap = { 0, 50 * 1000 * 1000 };

	(void)state;
	a = lrn_clock_mono();
	for (int i = 0; i < 100000; i++) {
		b = lrn_clock_mono();
		assert_true(b >= a);
		a = b;
	}
	before = sys(CLOCK_MONOTONIC);
	t0 = lrn_clock_mono();
	assert_int_equal(nanosleep(&nap, NULL), 0);
	t1 = lrn_clock_mono();
	after = sys(CLOCK_MONOTONIC);
	assert_true(t1 - t0 >= 0.05 - 1e-3);
	/* Bounded by what the system clock saw around it (1 ms of slack for
	 * the reads themselves). */
	assert_true(t1 - t0 <= after - before + 1e-3);
}

/* Unix time: within a second of CLOCK_REALTIME and of time(). */
static void test_wall(void **state)
{
	double w = lrn_clock_wall(), r = sys(CLOCK_REALTIME);

	(void)state;
	assert_true(w - r < 1 && r - w < 1);
	assert_true(w - (double)time(NULL) < 2 && (double)time(NULL) - w < 2);
	assert_true(w > 1.6e9);   /* after 2020: seconds, not milliseconds or days */
	assert_true(w < 1e11);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mono),
		cmocka_unit_test(test_wall),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
