/* Floating-point-safe Laplace noise (PRIVACY.md §2).
 *
 * Noise is added on an integer lattice: gradients are quantised to a grid
 * u = 2^-k, summed exactly, and a discrete Laplace (two-sided geometric)
 * variable is added per coordinate in grid units.  Only integers are ever
 * sampled, so the output set does not depend on the input beyond the shift. */
#ifndef DP_NOISE_H
#define DP_NOISE_H

#include <stddef.h>
#include <stdint.h>
#include "rng.h"

/* Geometric on {0,1,2,...}: P(X = j) = (1 - e^-lambda) e^(-lambda j),
 * lambda > 0 and finite.  Errors: DP_EINVAL, or the source's error. */
int dp_geometric_sample(dp_bitsource *src, double lambda, int64_t *out);

/* Discrete Laplace on the integers: P(X = j) proportional to exp(-|j| / t),
 * t > 0 and finite (scale in grid units).  Errors as above. */
int dp_discrete_laplace_sample(dp_bitsource *src, double t, int64_t *out);

/* Grid exponent k for the lattice u = 2^-k used by an answer over n rows with
 * L1 clip bound `clip` and per-answer budget eps_q (INFINITY: no noise).
 * Chosen so that the exact sum n*clip/u and the noise scale 2*clip/(u*eps_q)
 * both stay below 2^52 (every partial sum is an exactly representable
 * integer), and k <= DP_GRID_KMAX.  Public: depends only on public settings. */
#define DP_GRID_KMAX 40
int dp_grid_exponent(size_t n, double clip, double eps_q);

#endif
