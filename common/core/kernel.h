/* SPDX-License-Identifier: Apache-2.0 */
/* The privacy kernel (docs/privacy.md §2 steps 2-3): the one streaming pass
 * over an owner's rows behind every answer -- scores, gradient
 * coefficients (model.h), L1 or L2 clipping, truncation onto the grid 2^-k
 * and the exact sum.
 *
 * It exists in variants for instruction sets (generic, avx2, avx512), all
 * compiled from one source; the best one this CPU runs is chosen once at
 * program start.  DP_KERNEL_ISA=generic|avx2|avx512 in the environment at
 * start caps the choice (benchmarks compare variants that way). */
#ifndef DP_KERNEL_H
#define DP_KERNEL_H

#include <stddef.h>
#include "common/core/dataset.h"
#include "common/core/model.h"

/* For every row, c_j x_j clipped to L1 norm `clip`, each coordinate
 * truncated toward zero onto the grid 2^-k, summed exactly.  sum[q]
 * (p = ds->p values, caller's memory) receives the sum in grid units (an
 * integer held in a double; |sum| <= n*clip*2^k <= 2^52 by
 * dp_noise_grid_exponent).  Rows whose gradient is not finite are dropped
 * and counted in *dropped (may be NULL).  The sums are the same, bit for
 * bit, whichever variant runs, given the same scores theta^T x_j; scores
 * are rounded per variant (as they would be by another BLAS).
 * Errors: DP_EINVAL (theta not finite, clip <= 0 or not finite, p == 0,
 * k such that n*clip*2^k > 2^52); sum and *dropped untouched then. */
int dp_kernel_clipped_grid_sum(dp_model m, const dp_dataset *ds, const double *theta,
			       double clip, int k, double *sum, size_t *dropped);

/* The same with the gradient clipped in L2 (docs/privacy.md §6 "Clipping
 * in L2"): for every row, c_j x_j scaled to L2 norm <= clip (norms from
 * ds->row_l2, which must be set: DP_REQUIRE), each coordinate truncated
 * toward zero onto the grid 2^-k, summed exactly.  Every row's integer
 * vector q satisfies sum q^2 <= (clip 2^k)^2 exactly (checked in 128-bit
 * integers where a floating bound does not prove it, and shrunk if it
 * fails), so |q_i| <= clip 2^k and the same k as for L1 keeps the sums
 * exact (dp_noise_grid_exponent_l2).  Drops, variants, errors and
 * outputs as dp_kernel_clipped_grid_sum. */
int dp_kernel_clipped_grid_sum_l2(dp_model m, const dp_dataset *ds, const double *theta,
				  double clip, int k, double *sum, size_t *dropped);

/* Name of the variant in use ("generic", "avx2" or "avx512"). */
const char *dp_kernel_variant(void);

/* For tests: use the variant `name` from now on; NULL goes back to the
 * choice made at start (reading DP_KERNEL_ISA again).  Not thread-safe:
 * call it while no kernel runs.  Errors: DP_EINVAL (unknown name, or a
 * variant this CPU cannot run; the variant in use is kept). */
int dp_kernel_select(const char *name);

#endif
