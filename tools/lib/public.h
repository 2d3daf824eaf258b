/* SPDX-License-Identifier: Apache-2.0 */
/* The planner's public constants measured on a public sample
 * (docs/planner.md "With a public sample").
 *
 * From the sample's rows alone: the optimum theta* and f* (optimum.h),
 * f(0), the sandwich constant tr(H^-1 G)/2 that predicts an owner's own
 * non-private model, and for each candidate clip bound Xi (quantiles of
 * the per-example gradients' L1 norms at theta*) the clipped fixed point
 * theta*_Xi, the eigenvalues of the clipped gradient's curvature there,
 * theta*_Xi in that eigenbasis, the unclipped curvature in the same basis,
 * f(theta*_Xi), the secant curvatures from 0, and the way from 0: the
 * gradient flow of the clipped objective from theta = 0, with f and the
 * curvatures along it (docs/planner.md §2).  The sample is public: nothing
 * here touches an owner's rows. */
#ifndef DP_TOOLS_PUBLIC_H
#define DP_TOOLS_PUBLIC_H

#include <stdbool.h>
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

/* dp_public_measure with the clip candidates as quantiles of the
 * per-example gradients' L2 norms when `l2` (Gaussian answers; pub->l2 set,
 * docs/planner.md §7), else dp_public_measure itself.  Same errors. */
int dp_public_measure_norm(dp_model model, const dp_dataset *sample, double lambda,
			   double theta_max, const char *source, bool l2, dp_plan_public *out);

/* Where a tool command takes its constants from (`dpasync sim` and
 * `dpasync forecast` flags). */
typedef struct dp_public_from {
	const char *sample;   /* a public CSV, loaded like the owners' files
				 (target, bias, schema) and measured; or NULL */
	const char *file;     /* constants saved by `dpasync forecast` (or prep's
				 public.json): dp_plan_public_read; or NULL */
	const char *target;   /* the sample's target column (NULL: the schema's) */
	int bias;
	const char *schema;   /* feature schema the sample goes through, or NULL */
	bool l2;              /* constants of L2-clipped gradients (Gaussian
				 answers); false: L1.  A file must hold the
				 same kind */
} dp_public_from;

/* The constants for a job of `model` with `lambda`: measured on
 * from->sample, read from from->file, or (neither given) assumed from the
 * data's shape with dp_plan_public_shape.  `like` (may be NULL) is an
 * owner's dataset: the sample must have its features, and its p is the
 * job's; without it p comes from the sample (a sample is then required).
 * A file must be for the same model, p and lambda.  Errors (one-line
 * detail, *out untouched): DP_EINVAL (both or, without `like`, neither
 * source; a sample or file that does not fit the job), those of
 * dp_ownerdata_load, dp_plan_public_read and dp_public_measure. */
int dp_public_obtain(const dp_public_from *from, dp_model model, const dp_dataset *like,
		     double lambda, double theta_max, dp_plan_public *out);

/* The other mechanism's plan beside `req` (Laplace <-> Gaussian at
 * `delta`), for the comparison `dpasync forecast` and `sim` print
 * (dp_plan_mech_line; docs/planner.md §7): its constants from `from` in
 * the other norm into *pub (the same sample measured again, or a file's
 * other object), and a clip of its own (a clip given is req's norm's).
 * Errors: dp_public_obtain's and dp_plan_make's, with their details;
 * outputs untouched then, else the caller frees both. */
int dp_public_plan_other(const dp_public_from *from, dp_model model, const dp_dataset *like,
			 double lambda, double theta_max, const dp_plan_request *req,
			 double delta, dp_plan_public *pub, dp_plan *other);

#endif
