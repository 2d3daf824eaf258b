/* SPDX-License-Identifier: Apache-2.0 */
/* An owner's answer to one gradient query (docs/design.md §3, docs/privacy.md §2):
 *
 *   Qbar_i(theta) = (1/n_i) sum clip(grad l) + w,  w ~ Lap(0, 2 clip/(n_i eps_q))^p
 *
 * computed on the integer lattice: exact clipped grid sum, plus a discrete
 * Laplace variable of scale 2 clip/(u eps_q) grid units per coordinate,
 * then scaled by u/n_i (post-processing).  ownerd and the simulator call
 * this same function. */
#ifndef DP_QUERY_H
#define DP_QUERY_H

#include <stddef.h>
#include "common/core/dataset.h"
#include "common/core/model.h"
#include "common/core/rng.h"

typedef struct dp_query_info {
	int grid_k;        /* lattice 2^-grid_k used */
	double scale_b;    /* Laplace scale of the released answer (0: none) */
	size_t dropped;    /* rows dropped for a non-finite gradient */
} dp_query_info;

/* Compute the noisy answer into grad[p].  eps_q is this answer's share of
 * the budget (eps_i / K_i); INFINITY releases the exact clipped mean (no
 * noise, src may be NULL).  Validates: eps_q > 0, clip > 0 and finite,
 * n_i >= 1, theta finite (DP_EINVAL otherwise, grad untouched).  A source
 * failure returns its error and grad is untouched: nothing partial leaks.
 * `info` may be NULL. */
int dp_query_answer(dp_model m, const dp_dataset *ds, const double *theta,
		    double clip, double eps_q, dp_bitsource *src, double *grad,
		    dp_query_info *info);

/* Laplace scale b = 2 clip / (n eps_q) of an answer (0 for eps_q = inf),
 * rounded up: never below the exact quotient (docs/privacy.md §2). */
double dp_query_scale(size_t n, double clip, double eps_q);

/* The noise scale in grid units, t = 2 clip 2^k / eps_q, rounded up: the
 * smallest double >= the exact value (0 for eps_q = inf).  clip > 0 and
 * finite, eps_q > 0; dp_query_answer draws its noise with this scale. */
double dp_query_grid_scale(double clip, int k, double eps_q);

#endif
