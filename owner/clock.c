/* ownerd: the Poisson clock (docs/design.md §4).
 *
 * Gaps are exponential with rate --rate, drawn from the CSPRNG (the
 * seeded simulation generator is never linked into the daemon).  The clock
 * ticks whether or not a request can be sent, so the ticks that do lead
 * to an UpdateRequest are still a thinned Poisson process; a tick sends
 * only when connected, welcomed in request mode, with budget left, and
 * with no request outstanding. */
#include <math.h>

#include "common/core/error.h"
#include "common/net/frame.h"
#include "common/core/log.h"

#include "owner/own.h"

static int own__clock_arm(struct own_daemon *d, int from_cb);

static void own__tick(struct own_daemon *d)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__UpdateRequest ur = DPASYNC__UPDATE_REQUEST__INIT;

	if (d->conn == NULL || !d->welcomed || d->job.broadcast || d->request_pending ||
	    !own_budget_left(d))
		return;
	env.version = DP_PROTO_VERSION;
	env.msg_case = DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST;
	env.update_request = &ur;
	if (own_client_send(d, &env) == 0) {
		d->request_pending = true;
		DP_DEBUG("clock", "update request sent");
	}
}

static void own__on_clock(uv_timer_t *t)
{
	struct own_daemon *d = t->data;
	int r;

	if (d->stopping)
		return;
	own__tick(d);
	if (d->stopping)
		return;
	/* While a request is outstanding every tick would be skipped, so
	 * the clock sleeps; own_clock_resume() restarts it when the request
	 * is answered.  Memoryless: the next request time has the same law. */
	if (d->request_pending)
		return;
	r = own__clock_arm(d, 1);
	if (r < 0) {
		DP_ERROR("clock", "random generator failed: %s; stopping", dp_error_detail(r));
		own_stop(d, OWN_EXIT_FAIL);
	}
}

static int own__clock_arm(struct own_daemon *d, int from_cb)
{
	double gap = 0.0, g;
	int r;

	/* Re-armed from its own callback, a 0 ms timer runs again
	 * at once inside uv__run_timers (libuv 1.44) and starves all I/O.
	 * Ticks within the same millisecond see the same state: fold them. */
	do {
		r = dp_rng_exponential(&d->bits, d->set.rate, &g);
		if (r < 0)
			return r;
		gap += g;
	} while (from_cb && ceil(gap * 1000.0 - 0.5) < 1.0);
	/* libuv timers count whole milliseconds. */
	gap = ceil(gap * 1000.0 - 0.5);
	if (gap > 1e12)
		gap = 1e12;
	return uv_timer_start(&d->clock_timer, own__on_clock, (uint64_t)gap, 0);
}

int own_clock_start(struct own_daemon *d)
{
	return own__clock_arm(d, 0);
}

void own_clock_resume(struct own_daemon *d)
{
	int r;

	if (d->stopping || uv_is_closing((uv_handle_t *)&d->clock_timer) ||
	    uv_is_active((uv_handle_t *)&d->clock_timer))
		return;
	r = own__clock_arm(d, 0);
	if (r < 0) {
		DP_ERROR("clock", "random generator failed: %s; stopping", dp_error_detail(r));
		own_stop(d, OWN_EXIT_FAIL);
	}
}

void own_clock_stop(struct own_daemon *d)
{
	if (!uv_is_closing((uv_handle_t *)&d->clock_timer))
		uv_timer_stop(&d->clock_timer);
}
