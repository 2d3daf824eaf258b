/* SPDX-License-Identifier: Apache-2.0 */
/* The three losses of docs/design.md §2 and the plain passes over an
 * owner's rows (loss, fitness, mean gradient).  The privacy kernel, the
 * clipped pass behind every answer, is kernel.h.
 *
 * For every model the per-example gradient is a multiple of the example:
 * grad l(theta; x, y) = c(theta^T x, y) * x, so its L1 norm is |c| * ||x||_1
 * (dataset.row_l1), its L2 norm |c| * ||x||_2 (dataset.row_l2), and
 * clipping costs nothing extra. */
#ifndef DP_MODEL_H
#define DP_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "common/core/dataset.h"

typedef enum dp_model {
	DP_MODEL_LINEAR = 0,    /* (y - t)^2,            c = 2(t - y)          */
	DP_MODEL_LOGISTIC = 1,  /* log(1 + exp(-y t)),   c = -y / (1 + e^{y t}) */
	DP_MODEL_SVM = 2,       /* max(0, 1 - y t),      c = -y if y t < 1     */
} dp_model;

/* The names, indexed by dp_model and ended by NULL (an option's choices). */
extern const char *const dp_model_names[];

/* "linear" | "logistic" | "svm" -> model; DP_EINVAL otherwise. */
int dp_model_parse(const char *s, dp_model *out);
/* The name of m; "unknown" for a value outside the enum. */
const char *dp_model_name(dp_model m);

/* Per-example loss and gradient coefficient at score t = theta^T x. */
double dp_model_loss(dp_model m, double t, double y);
double dp_model_coef(dp_model m, double t, double y);

/* Check targets fit the model: classification needs y in {-1,+1}.
 * DP_EFORMAT with a detail (file, row) otherwise. */
int dp_model_check_data(dp_model m, const dp_dataset *ds);

/* Sum of losses over the rows of ds (no regulariser, not divided by n). */
double dp_model_loss_sum(dp_model m, const dp_dataset *ds, const double *theta);

/* Fitness f(theta) = lambda ||theta||^2 + (1/n) sum over all rows of all m
 * datasets (docs/design.md §2). */
double dp_model_fitness(dp_model m, const dp_dataset *const *ds, size_t nds,
			double lambda, const double *theta);

/* Relative fitness psi = f / f_star - 1 (docs/design.md §2): 0 at the optimum,
 * the quality measure every run reports. */
double dp_model_psi(double f, double f_star);

/* Unclipped mean gradient of the loss part: (1/n_i) sum grad l.  For
 * solvers and tests. */
void dp_model_mean_grad(dp_model m, const dp_dataset *ds, const double *theta,
			double *grad);

#endif
