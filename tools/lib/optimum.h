/* The non-private optimum theta* = argmin over the box of f (docs/design.md §2),
 * against which psi is measured.
 *
 * linear: closed form (Cholesky of X^T X / n + lambda I); logistic: Newton
 * with backtracking; svm: dual coordinate descent.  When the unconstrained
 * minimiser leaves the box, an accelerated projected-gradient method (on a
 * smoothed hinge for svm) takes over.  Tolerances are in optimum.c and the
 * README. */
#ifndef DP_OPTIMUM_H
#define DP_OPTIMUM_H

#include <stddef.h>
#include "common/core/dataset.h"
#include "common/core/model.h"

/* theta_star[p] and f_star.  Errors: DP_EINVAL (no data, lambda < 0,
 * theta_max <= 0), DP_ENUMERIC (did not converge / factorisation failed). */
int dp_optimum_solve(dp_model m, const dp_dataset *const *ds, size_t nds, double lambda,
	       double theta_max, double *theta_star, double *f_star);

#endif
