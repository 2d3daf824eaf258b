/* SPDX-License-Identifier: Apache-2.0 */
/* The equal split of an agent's (eps, delta) over its wake-ups
 * (docs/peer-agents.md "Privacy"). */
#include <math.h>

#include "common/core/compose.h"
#include "common/core/error.h"

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
