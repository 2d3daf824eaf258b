/* The non-private optimum theta* = argmin over the box of f, and the
 * relative fitness psi (DESIGN.md §2).
 *
 * linear: closed form (Cholesky of X^T X / n + lambda I); logistic: Newton
 * with backtracking; svm: dual coordinate descent.  When the unconstrained
 * minimiser leaves the box, an accelerated projected-gradient method (on a
 * smoothed hinge for svm) takes over.  Tolerances are in optim.c and the
 * README. */
#ifndef DP_OPTIM_H
#define DP_OPTIM_H

#include <stddef.h>
#include "common/core/dataset.h"
#include "common/core/model.h"

/* theta_star[p] and f_star.  Errors: DP_EINVAL (no data, lambda < 0,
 * theta_max <= 0), DP_ENUMERIC (did not converge / factorisation failed). */
int dp_optimum(dp_model m, const dp_dataset *const *ds, size_t nds, double lambda,
	       double theta_max, double *theta_star, double *f_star);

/* psi = f / f_star - 1. */
double dp_psi(double f, double f_star);

#endif
