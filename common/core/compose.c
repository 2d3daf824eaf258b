/* SPDX-License-Identifier: Apache-2.0 */
/* The equal split of an agent's (eps, delta) over its wake-ups
 * (docs/peer-agents.md "Privacy"). */
#include <math.h>
#include <stdio.h>

#include "common/core/compose.h"
#include "common/core/error.h"
#include "common/core/nano.h"

double dp_compose_advanced(double eps_t, double delta, uint64_t T)
{
	double t = (double)T;

	DP_REQUIRE(eps_t >= 0 && delta > 0 && delta < 1 && T >= 1);
	return sqrt(2.0 * t * log(1.0 / delta)) * eps_t + t * eps_t * expm1(eps_t);
}

int dp_compose_split(double eps, double delta, uint64_t T, double *eps_t)
{
	double basic, lo, hi;

	if (!(eps > 0))
		return dp_error_set(DP_EINVAL, "epsilon must be > 0");
	if (!(delta >= 0 && delta < 1))
		return dp_error_set(DP_EINVAL, "delta must be in [0, 1)");
	if (T == 0)
		return dp_error_set(DP_EINVAL, "the number of wake-ups must be >= 1");
	if (isinf(eps)) {
		*eps_t = INFINITY;
		return 0;
	}
	basic = eps / (double)T;
	if (delta == 0) {
		*eps_t = basic;
		return 0;
	}
	/* dp_compose_advanced is increasing in eps_t.  Bisect on [0, eps]
	 * keeping lo feasible, so the value returned keeps the guarantee
	 * (when the root lies beyond eps, as for a delta near 1, the answer is
	 * merely conservative). */
	lo = 0.0;
	hi = eps;
	for (int i = 0; i < 200 && lo < hi; i++) {
		double mid = lo + (hi - lo) / 2.0;

		if (mid <= lo || mid >= hi)
			break;
		if (dp_compose_advanced(mid, delta, T) <= eps)
			lo = mid;
		else
			hi = mid;
	}
	*eps_t = lo > basic ? lo : basic;
	return 0;
}

/* A share that cannot be charged: the detail says which budget. */
static int no_share(int rc)
{
	char why[512];

	snprintf(why, sizeof(why), "%s", dp_error_detail(rc));
	return dp_error_set(rc, "--epsilon cannot be split over the wake-ups: %s", why);
}

int dp_compose_plan(double eps, double warm, uint64_t K, double delta, uint64_t T,
		    dp_compose_budget *out)
{
	double avail, eps_t, E, C, step_q = 0, warm_q = 0;
	uint64_t capn, wn, tn, steps;
	int rc;

	DP_REQUIRE(out != NULL);
	if (isinf(eps)) {
		*out = (dp_compose_budget){ INFINITY, INFINITY, INFINITY };
		return 0;
	}
	if (warm > 0 && K == 0)
		return dp_error_set(DP_EINVAL, "--warm-steps must be >= 1");
	/* Without a warm start, an eps that is not > 0 is dp_compose_split's
	 * error. */
	if (warm != 0 && !(warm > 0 && warm < eps))
		return dp_error_set(DP_EINVAL, "--warm-start %g leaves nothing of --epsilon %g "
				    "for the wake-ups", warm, eps);
	avail = eps - warm;
	steps = warm > 0 ? K : 0;
	rc = dp_compose_split(avail, delta, T, &eps_t);
	if (rc < 0)
		return rc;
	E = eps_t * (double)T;
	if (E < avail)
		E = avail;
	C = warm + E;
	/* Shares whose rounded-up charges fit the rounded-down cap (nano.h),
	 * shaving a nano-epsilon at a time when the two parts' roundings
	 * collide. */
	for (int tries = 0; tries < 8; tries++) {
		rc = dp_nano_share(E - tries * 1e-9, T, &step_q);
		if (rc == 0 && steps)
			rc = dp_nano_share(warm, steps, &warm_q);
		if (rc < 0)
			return no_share(rc);
		rc = dp_nano_floor(C, &capn);
		if (rc == 0)
			rc = dp_nano_ceil(step_q, &tn);
		wn = 0;
		if (rc == 0 && steps)
			rc = dp_nano_ceil(warm_q, &wn);
		if (rc < 0)
			return rc;
		if (wn * steps + tn * T <= capn) {
			*out = (dp_compose_budget){ .cap = C, .eps_step = step_q, .eps_warm = warm_q };
			return 0;
		}
	}
	return dp_error_set(DP_EINVAL, "--epsilon %g cannot be split over %llu wake-ups", eps,
			    (unsigned long long)T);
}
