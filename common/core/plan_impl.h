/* SPDX-License-Identifier: Apache-2.0 */
/* Internals of the planner (plan.h), shared by its files and by nobody
 * else: plan.c (the prediction and the search) runs the recursions of
 * plan_recursion.c; plan_public.c (the public constants) needs none of
 * this.
 *
 * Both recursions take one candidate k of the public constants in p
 * eigen-directions and say where a run of T iterations from theta = 0
 * ends, per direction q (each array holds p values, caller-allocated):
 *   m[q]   the mean error E theta - t_q,
 *   vd[q]  the spread the run itself gives (which owner each iteration
 *          picks; 0 for the sync algorithms, whose run is deterministic),
 *   vn[q]  the noise gain: variance per unit of the noise input.
 * `secant`: the means and the spread with the secant curvatures hs (the
 * model without a path), else with h (docs/planner.md §2). */
#ifndef DP_PLAN_IMPL_H
#define DP_PLAN_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/core/plan.h"

/* The async algorithm (docs/design.md §4): N owners picked with equal
 * probability, owner step eta; the first and second moments follow an
 * affine map whose T-th power is taken by repeated squaring. */
void dp__plan_async_moments(const dp_plan_clip *k, size_t p, double lambda, double N, size_t T,
			    double eta, bool secant, double *m, double *vd, double *vn);

/* The sync algorithms (docs/design.md §5), mode DP_PLAN_SYNC1 (step
 * rho/T^2 over k) or DP_PLAN_SYNC2 (c over sqrt(k), the output the running
 * average). */
void dp__plan_sync_moments(enum dp_plan_mode mode, const dp_plan_clip *k, size_t p, double lambda,
			   size_t T, double step, bool secant, double *m, double *vd, double *vn);

#endif
