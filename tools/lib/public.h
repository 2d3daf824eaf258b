/* The planner's public constants measured on a public sample
 * (docs/planner.md "With a public sample").
 *
 * From the sample's rows alone: the optimum theta* and f* (optimum.h),
 * f(0), the sandwich constant tr(H^-1 G)/2 that predicts an owner's own
 * non-private model, and for each candidate clip bound Xi (quantiles of
 * the per-example gradients' L1 norms at theta*) the clipped fixed point
 * theta*_Xi, the eigenvalues of the clipped gradient's curvature there,
 * theta*_Xi in that eigenbasis, the unclipped curvature in the same basis,
 * and f(theta*_Xi).  The sample is public: nothing here touches an owner's
 * rows. */
#ifndef DP_TOOLS_PUBLIC_H
#define DP_TOOLS_PUBLIC_H

#include <stddef.h>

#include "common/core/dataset.h"
#include "common/core/model.h"
#include "common/core/plan.h"

/* Quantiles of the per-example gradient L1 norm at theta* that become the
 * clip candidates (1.0: the largest norm, i.e. no clipping on the
 * sample). */
#define DP_PUBLIC_NQ 7
extern const double dp_public_quantiles[DP_PUBLIC_NQ];

/* Measure the constants on `sample` (all its rows) for `model` and
 * `lambda`, theta* taken over the box |theta|_inf <= theta_max.  `source`
 * names the sample in pub->source.  Errors: DP_EINVAL (empty sample, data
 * that does not fit the model), DP_ENUMERIC (a solver failed), DP_ENOMEM;
 * each with a detail.  On success free *out with dp_plan_public_free. */
int dp_public_measure(dp_model model, const dp_dataset *sample, double lambda,
		      double theta_max, const char *source, dp_plan_public *out);

#endif
