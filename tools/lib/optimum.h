/* SPDX-License-Identifier: Apache-2.0 */
/* The non-private optimum theta* = argmin over the box of f (docs/design.md §2),
 * against which psi is measured.
 *
 * linear: closed form (Cholesky of X^T X / n + lambda I); logistic: Newton
 * with backtracking; svm: dual coordinate descent.  When the unconstrained
 * minimiser leaves the box, an accelerated projected-gradient method (on a
 * smoothed hinge for svm) takes over.  Tolerances are in optimum.c (the
 * solvers also in docs/cli.md "dpasync eval"). */
#ifndef DP_OPTIMUM_H
#define DP_OPTIMUM_H

#include <stddef.h>
#include "common/core/dataset.h"
#include "common/core/model.h"

/* theta_star[p] and f_star (f_star may be NULL), p the datasets' column
 * count.  Errors: DP_EINVAL (no data, lambda < 0, theta_max <= 0, data
 * the model cannot fit), DP_ENUMERIC (did not converge / factorisation
 * failed), DP_ENOMEM.  Outputs untouched on failure. */
int dp_optimum_solve(dp_model m, const dp_dataset *const *ds, size_t nds, double lambda,
		     double theta_max, double *theta_star, double *f_star);

/* The two numbers psi = f/f* - 1 (dp_model_psi) compares: *f = f(theta)
 * of a model of kind m with coefficients theta[p], and *f_star =
 * f(theta*) of the non-private optimum over the box |theta|_inf <=
 * theta_max, both with regulariser lambda on ds[0..nds) (what `dpasync
 * eval` and `dpasync report` print).  Errors, outputs untouched:
 * DP_EFORMAT when the data's features are not the model's coefficients
 * (detail "FILE has P features but the model has Q coefficients"), else
 * dp_optimum_solve's, the detail prefixed "computing the non-private
 * optimum: ". */
int dp_optimum_compare(dp_model m, const double *theta, size_t p, const dp_dataset *const *ds,
		       size_t nds, double lambda, double theta_max, double *f, double *f_star);

#endif
