/* SPDX-License-Identifier: Apache-2.0 */
/* The equal split of an agent's (eps, delta) over its wake-ups
 * (docs/peer-agents.md "Privacy"). */
#include <math.h>
#include <stdio.h>

#include "common/core/compose.h"
#include "common/core/error.h"
#include "common/core/nano.h"
#include "common/core/noise.h"
#include "common/core/zcdp.h"

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

/* Shares of the wake-ups' part E over T and the warm start's part warm
 * over `steps` whose rounded-up charges fit the rounded-down cap C
 * (nano.h), shaving a nano-unit at a time off E when the two parts'
 * roundings collide. */
static int fit_shares(double eps, double C, double warm, uint64_t steps, double E, uint64_t T,
		      dp_compose_budget *out)
{
	double step_q = 0, warm_q = 0;
	uint64_t capn, wn, tn;
	int rc;

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

/* The checks both plans share: warm needs K >= 1 and must leave some of
 * eps for the wake-ups. */
static int check_warm(double eps, double warm, uint64_t K)
{
	if (warm > 0 && K == 0)
		return dp_error_set(DP_EINVAL, "--warm-steps must be >= 1");
	/* Without a warm start, an eps that is not > 0 is the split's error. */
	if (warm != 0 && !(warm > 0 && warm < eps))
		return dp_error_set(DP_EINVAL, "--warm-start %g leaves nothing of --epsilon %g "
				    "for the wake-ups", warm, eps);
	return 0;
}

int dp_compose_plan(double eps, double warm, uint64_t K, double delta, uint64_t T,
		    dp_compose_budget *out)
{
	double avail, eps_t, E;
	int rc;

	DP_REQUIRE(out != NULL);
	if (isinf(eps)) {
		*out = (dp_compose_budget){ INFINITY, INFINITY, INFINITY };
		return 0;
	}
	rc = check_warm(eps, warm, K);
	if (rc < 0)
		return rc;
	avail = eps - warm;
	rc = dp_compose_split(avail, delta, T, &eps_t);
	if (rc < 0)
		return rc;
	E = eps_t * (double)T;
	if (E < avail)
		E = avail;
	return fit_shares(eps, warm + E, warm, warm > 0 ? K : 0, E, T, out);
}

int dp_compose_plan_gauss(double eps, double warm, uint64_t K, double delta, uint64_t T,
			  size_t d, dp_compose_budget *out, uint64_t *slack_nano)
{
	uint64_t steps = warm > 0 ? K : 0, sn;
	double cap, W;
	int rc;

	DP_REQUIRE(out != NULL && slack_nano != NULL);
	if (isinf(eps)) {
		*out = (dp_compose_budget){ INFINITY, INFINITY, INFINITY };
		*slack_nano = 0;
		return 0;
	}
	rc = check_warm(eps, warm, K);
	if (rc < 0)
		return rc;
	if (!(eps > 0))
		return dp_error_set(DP_EINVAL, "epsilon must be > 0");
	if (delta == 0)
		return dp_error_set(DP_EINVAL, "--mechanism gaussian needs --delta > 0 (delta 0 "
				    "is pure epsilon-DP, which only laplace gives)");
	if (!(delta > 0 && delta < 1))
		return dp_error_set(DP_EINVAL, "delta must be in (0, 1)");
	if (T == 0)
		return dp_error_set(DP_EINVAL, "the number of wake-ups must be >= 1");
	/* One rho cap for all T + K answers, their slack and tail charged
	 * (docs/zcdp.md §7); the warm start takes the fraction warm / eps of
	 * it, rounded down, the wake-ups the rest (docs/peer-agents.md
	 * "Privacy"). */
	rc = dp_zcdp_cap(eps, delta, T + steps, d, DP_NOISE_DGAUSS_SLACK, DP_NOISE_DGAUSS_TAIL,
			 &cap, &sn);
	if (rc < 0)
		return rc;
	W = steps ? nextafter(nextafter(warm / eps, 0.0) * cap, 0.0) : 0.0;
	rc = fit_shares(eps, cap, W, steps, steps ? nextafter(cap - W, 0.0) : cap, T, out);
	if (rc < 0)
		return rc;
	*slack_nano = sn;
	return 0;
}
