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

/* The mechanism of an answer (docs/zcdp.md): the papers' Laplace, with the
 * gradient clipped in L1 and a budget share eps_q (pure eps-DP), or the
 * discrete Gaussian, clipped in L2, with a share rho_q (zCDP). */
typedef enum dp_mech {
	DP_MECH_LAPLACE = 0,
	DP_MECH_GAUSSIAN = 1,
} dp_mech;

/* The mechanisms' names, in dp_mech order ("laplace", "gaussian"),
 * NULL-terminated (a config enum), and one of them ("?" when unknown). */
extern const char *const dp_query_mech_names[];
const char *dp_query_mech_name(dp_mech mech);

typedef struct dp_query_info {
	int grid_k;        /* lattice 2^-grid_k used */
	double scale_b;    /* Laplace scale of the released answer (0: none) */
	double sigma;      /* Gaussian: the standard deviation of the released
			      answer's noise per coordinate (0: none) */
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

/* The same answer under either mechanism: dp_query_answer for
 * DP_MECH_LAPLACE (share = eps_q; bit for bit the same), and for
 * DP_MECH_GAUSSIAN (share = rho_q, this answer's zCDP budget; INFINITY: no
 * noise) the mean of the gradients clipped in L2 to `clip`
 * (dp_kernel_clipped_grid_sum_l2; ds->row_l2 must be set) plus discrete
 * Gaussian noise whose rho for the L2 sensitivity 2 clip of the lattice
 * sum is at most rho_q (dp_zcdp_sigma_for; docs/zcdp.md §1).  The caller
 * charges rho_q and, per answer, the sampler's slack p
 * DP_NOISE_DGAUSS_SLACK (docs/noise.md §6).  Errors as dp_query_answer,
 * and DP_ERANGE when the noise would leave the sampler's range (rho_q so
 * large that sigma is below a lattice step's 2^-20, or so small that it
 * is above 2^46 steps at the coarsest grid); DP_EINVAL for an unknown
 * mechanism. */
int dp_query_answer_mech(dp_model m, const dp_dataset *ds, const double *theta,
			 double clip, dp_mech mech, double share, dp_bitsource *src,
			 double *grad, dp_query_info *info);

/* Each answer's share when a job may spend eps over `answers` answers of d
 * coordinates, as the owner's ledger charges it (docs/zcdp.md §7): Laplace
 * dp_nano_share(eps, answers) in epsilon (*slack_nano 0); Gaussian
 * dp_zcdp_share at delta in rho, with the samplers' slack and tail
 * (*slack_nano each answer's slack charge).  The one computation ownerd
 * binds a job with, learnerd judges a plan by and dpasync sim noises with.
 * eps = INFINITY gives INFINITY.  Errors: those two functions' (a budget
 * too small for `answers` charges among them); outputs untouched then. */
int dp_query_share(dp_mech mech, double eps, double delta, uint64_t answers, size_t d,
		   double *share, uint64_t *slack_nano);

/* Laplace scale b = 2 clip / (n eps_q) of an answer (0 for eps_q = inf),
 * rounded up: never below the exact quotient (docs/privacy.md §2). */
double dp_query_scale(size_t n, double clip, double eps_q);

/* The noise scale in grid units, t = 2 clip 2^k / eps_q, rounded up: the
 * smallest double >= the exact value (0 for eps_q = inf).  clip > 0 and
 * finite, eps_q > 0; dp_query_answer draws its noise with this scale. */
double dp_query_grid_scale(double clip, int k, double eps_q);

#endif
