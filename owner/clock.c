/* SPDX-License-Identifier: Apache-2.0 */
/* ownerd: the Poisson clock (docs/design.md §4).
 *
 * Gaps are exponential with rate --rate, drawn from the CSPRNG (the
 * seeded simulation generator is never linked into the daemon).  The clock
 * ticks whether or not a request can be sent, so the ticks that do lead
 * to an UpdateRequest are still a thinned Poisson process; what a tick
 * does is the client's (own_clock_tick_fn).  The clock knows nothing else:
 * it calls no other file of the daemon. */
#include <math.h>

#include "common/core/error.h"
#include "common/core/log.h"

#include "owner/own.h"

static void on_timer(uv_timer_t *t);

/* Draw the next gap and start the timer. */
static int arm(struct own_clock *c, int from_cb)
{
	double gap = 0.0, g;
	int r;

	/* Re-armed from its own callback, a 0 ms timer runs again
	 * at once inside uv__run_timers (libuv 1.44) and starves all I/O.
	 * Ticks within the same millisecond see the same state: fold them. */
	do {
		r = dp_rng_exponential(c->bits, c->rate, &g);
		if (r < 0)
			return r;
		gap += g;
	} while (from_cb && ceil(gap * 1000.0 - 0.5) < 1.0);
	/* libuv timers count whole milliseconds. */
	gap = ceil(gap * 1000.0 - 0.5);
	if (gap > 1e12)
		gap = 1e12;
	return uv_timer_start(&c->timer, on_timer, (uint64_t)gap, 0);
}

static void fail(struct own_clock *c, int err)
{
	DP_ERROR("clock", "random generator failed: %s; stopping", dp_error_detail(err));
	c->on_fail(c->arg, err);
}

static void on_timer(uv_timer_t *t)
{
	struct own_clock *c = t->data;
	bool stop;
	int r;

	if (c->closed)
		return;
	stop = c->on_tick(c->arg);
	/* The tick may have closed the clock (the daemon is stopping), or
	 * asked it to stop (an agent whose wake-ups are done). */
	if (c->closed || stop)
		return;
	r = arm(c, 1);
	if (r < 0)
		fail(c, r);
}

int own_clock_start(struct own_clock *c, uv_loop_t *loop, dp_bitsource *bits, double rate,
		    own_clock_tick_fn on_tick, own_clock_fail_fn on_fail, void *arg)
{
	DP_REQUIRE(c != NULL && loop != NULL && bits != NULL && rate > 0 && on_tick != NULL &&
		   on_fail != NULL);
	c->bits = bits;
	c->rate = rate;
	c->on_tick = on_tick;
	c->on_fail = on_fail;
	c->arg = arg;
	c->closed = false;
	uv_timer_init(loop, &c->timer);
	c->timer.data = c;
	return arm(c, 0);
}

/* The owner has just become free to ask (its answer is out): draw the
 * next tick afresh from now.  By memorylessness the first tick of the
 * running clock after this instant comes at exactly this law, so the
 * request times do not change in distribution; what changes is that a
 * gap below half a millisecond may now be 0 ms (this is not the timer's
 * own callback, so a 0 ms timer cannot starve the loop), and an owner
 * with a fast clock asks again at once instead of at the next whole
 * millisecond (docs/bench-daemons.md, "Clock restart"). */
void own_clock_restart(struct own_clock *c)
{
	int r;

	DP_REQUIRE(c != NULL);
	if (c->closed)
		return;
	r = arm(c, 0);
	if (r < 0)
		fail(c, r);
}

void own_clock_close(struct own_clock *c)
{
	DP_REQUIRE(c != NULL);
	if (c->closed)
		return;
	c->closed = true;
	uv_timer_stop(&c->timer);
	uv_close((uv_handle_t *)&c->timer, NULL);
}
