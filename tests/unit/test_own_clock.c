/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for owner/clock.c: ownerd's Poisson clock (docs/design.md §4).
 *
 * The clock draws its gaps from a bit source that the test controls: it
 * returns the same 64 bits every time, counting the draws.  The bits
 * 0x8000000000000000 make the uniform 2^52 / 2^53 = 1/2
 * (common/core/rng.h: the top 53 bits over 2^53), so each gap is
 * ln 2 / rate; 0x4000000000000000 make it 1/4 and the gap ln 4 / rate.
 * libuv counts whole milliseconds and the clock rounds to the nearest
 * one: at rate 1, ln 2 s = 693.147 ms is 693 ms and ln 4 s 1386 ms.  The
 * test reads the timer's due time right after the clock armed it, before
 * the loop's time moves; once the loop runs, only what a later tick sees. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>

#include "common/core/error.h"
#include "common/core/log.h"

#include "owner/own.h"

#define HALF    0x8000000000000000u
#define QUARTER 0x4000000000000000u

struct src {
	uint64_t bits;
	int draws;
	int fail_after;     /* draws that succeed before DP_ERNG (-1: never) */
};

static int fill(void *ctx, void *buf, size_t len)
{
	struct src *s = ctx;

	assert_int_equal(len, sizeof(uint64_t));
	if (s->fail_after >= 0 && s->draws >= s->fail_after)
		return dp_error_set(DP_ERNG, "test: source failed");
	s->draws++;
	memcpy(buf, &s->bits, sizeof(s->bits));
	return 0;
}

struct fx {
	uv_loop_t loop;
	struct src src;
	dp_bitsource bits;
	struct own_clock c;
	int ticks, stop_at;     /* on_tick returns true at tick stop_at */
	uint64_t at[8];         /* the loop's time (ms) at each tick */
	bool close_in_tick;
	int fails, err;
};

static bool on_tick(void *arg)
{
	struct fx *f = arg;

	if (f->ticks < 8)
		f->at[f->ticks] = uv_now(&f->loop);
	f->ticks++;
	if (f->close_in_tick) {
		own_clock_close(&f->c);
		return false;
	}
	return f->ticks == f->stop_at;
}

static void on_fail(void *arg, int err)
{
	struct fx *f = arg;

	f->fails++;
	f->err = err;
}

static void fx_init(struct fx *f, uint64_t bits)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(uv_loop_init(&f->loop), 0);
	f->src.bits = bits;
	f->src.fail_after = -1;
	f->bits = (dp_bitsource){ .fill = fill, .ctx = &f->src };
}

static int fx_start(struct fx *f, double rate)
{
	return own_clock_start(&f->c, &f->loop, &f->bits, rate, on_tick, on_fail, f);
}

/* Close the clock and check that the loop has nothing left. */
static void fx_done(struct fx *f)
{
	own_clock_close(&f->c);
	own_clock_close(&f->c);     /* idempotent */
	assert_int_equal(uv_run(&f->loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&f->loop), 0);
}

/* The first gap: one draw, ln 2 / rate rounded to the millisecond. */
static void test_first_gap(void **state)
{
	struct fx f;

	fx_init(&f, HALF);
	assert_int_equal(fx_start(&f, 1.0), 0);
	assert_int_equal(f.src.draws, 1);
	assert_int_equal(uv_timer_get_due_in(&f.c.timer), 693);
	assert_int_equal(f.ticks, 0);
	fx_done(&f);

	fx_init(&f, QUARTER);
	assert_int_equal(fx_start(&f, 10.0), 0);   /* 138.6 ms */
	assert_int_equal(uv_timer_get_due_in(&f.c.timer), 139);
	fx_done(&f);
	(void)state;
}

/* Ticks until the client says stop: one draw per gap, none after. */
static void test_ticks(void **state)
{
	struct fx f;

	fx_init(&f, HALF);
	f.stop_at = 5;
	assert_int_equal(fx_start(&f, 1000.0), 0);   /* 0.693 ms: 1 ms */
	assert_int_equal(uv_timer_get_due_in(&f.c.timer), 1);
	assert_int_equal(uv_run(&f.loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(f.ticks, 5);
	assert_int_equal(f.src.draws, 5);
	assert_false(uv_is_active((uv_handle_t *)&f.c.timer));
	assert_int_equal(f.fails, 0);
	fx_done(&f);
	(void)state;
}

/* Gaps below half a millisecond: the first may be a 0 ms timer; from the
 * timer's own callback they are folded until the sum rounds to at least
 * 1 ms (ln 2 / 2000 s = 0.347 ms: two draws, 0.693 ms, 1 ms), so that a
 * 0 ms timer never re-arms itself: the next tick comes a millisecond of
 * the loop's time later, or more. */
static void test_fold(void **state)
{
	struct fx f;

	fx_init(&f, HALF);
	f.stop_at = 2;
	assert_int_equal(fx_start(&f, 2000.0), 0);
	assert_int_equal(f.src.draws, 1);
	assert_int_equal(uv_timer_get_due_in(&f.c.timer), 0);
	assert_int_equal(uv_run(&f.loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(f.ticks, 2);
	assert_int_equal(f.src.draws, 3);
	assert_true(f.at[1] >= f.at[0] + 1);
	fx_done(&f);
	(void)state;
}

/* A gap beyond 10^12 ms (rate 10^-12: ln 2 10^12 s) is held at 10^12 ms. */
static void test_cap(void **state)
{
	struct fx f;

	fx_init(&f, HALF);
	assert_int_equal(fx_start(&f, 1e-12), 0);
	assert_int_equal(uv_timer_get_due_in(&f.c.timer), 1000000000000u);
	fx_done(&f);
	(void)state;
}

/* A restart draws the next gap afresh from now; after close it does
 * nothing. */
static void test_restart(void **state)
{
	struct fx f;

	fx_init(&f, HALF);
	assert_int_equal(fx_start(&f, 1.0), 0);
	assert_int_equal(uv_timer_get_due_in(&f.c.timer), 693);
	f.src.bits = QUARTER;
	own_clock_restart(&f.c);
	assert_int_equal(f.src.draws, 2);
	assert_int_equal(uv_timer_get_due_in(&f.c.timer), 1386);
	own_clock_close(&f.c);
	own_clock_restart(&f.c);
	assert_int_equal(f.src.draws, 2);
	fx_done(&f);
	(void)state;
}

/* A tick that closes the clock (the daemon stopping): no further draw. */
static void test_close_in_tick(void **state)
{
	struct fx f;

	fx_init(&f, HALF);
	f.close_in_tick = true;
	assert_int_equal(fx_start(&f, 1000.0), 0);
	assert_int_equal(uv_run(&f.loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(f.ticks, 1);
	assert_int_equal(f.src.draws, 1);
	fx_done(&f);
	(void)state;
}

/* The generator fails: at start the error is returned; while ticking or
 * at a restart the clock reports it through on_fail and stops. */
static void test_failures(void **state)
{
	struct fx f;

	fx_init(&f, HALF);
	f.src.fail_after = 0;
	assert_int_equal(fx_start(&f, 1.0), DP_ERNG);
	assert_int_equal(f.fails, 0);
	fx_done(&f);

	fx_init(&f, HALF);
	f.src.fail_after = 1;
	assert_int_equal(fx_start(&f, 1000.0), 0);
	assert_int_equal(uv_run(&f.loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(f.ticks, 1);
	assert_int_equal(f.fails, 1);
	assert_int_equal(f.err, DP_ERNG);
	assert_false(uv_is_active((uv_handle_t *)&f.c.timer));
	fx_done(&f);

	fx_init(&f, HALF);
	f.src.fail_after = 1;
	assert_int_equal(fx_start(&f, 1.0), 0);
	own_clock_restart(&f.c);
	assert_int_equal(f.fails, 1);
	assert_int_equal(f.err, DP_ERNG);
	fx_done(&f);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_gap),
		cmocka_unit_test(test_ticks),
		cmocka_unit_test(test_fold),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_restart),
		cmocka_unit_test(test_close_in_tick),
		cmocka_unit_test(test_failures),
	};

	dp_log_set_level(DP_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
