/* SPDX-License-Identifier: Apache-2.0 */
/* Floating-point-safe Laplace and Gaussian noise (docs/privacy.md §2).
 *
 * Noise is added on an integer lattice: gradients are quantised to a grid
 * u = 2^-k, summed exactly, and a discrete Laplace (two-sided geometric)
 * variable is added per coordinate in grid units.  Only integers are ever
 * sampled, so the output set does not depend on the input beyond the shift. */
#ifndef DP_NOISE_H
#define DP_NOISE_H

#include <stddef.h>
#include <stdint.h>
#include "common/core/rng.h"

/* Geometric on {0,1,2,...}: P(X = j) = (1 - e^-lambda) e^(-lambda j).
 * Exact up to double rounding of per-bit probabilities (relative error
 * <= 2^-50 each) and a tail of mass < e^-700 that is never produced; see
 * docs/noise.md.  Consumes a number of random 32-bit words fixed by lambda
 * (plus more only on a tie, probability 2^-32 each), not by the outcome.
 * Errors: DP_EINVAL (lambda not finite or <= 0), DP_ERANGE (lambda below
 * DP_NOISE_LAMBDA_MIN: the tail cut would no longer be negligible), or the
 * source's error.  *out untouched on failure. */
#define DP_NOISE_LAMBDA_MIN 0x1p-53
/* (In this header src, its fill, out and k must not be NULL: DP_REQUIRE.) */
int dp_noise_geometric(dp_bitsource *src, double lambda, int64_t *out);

/* Discrete Laplace on the integers: P(X = j) proportional to exp(-|j| / t),
 * t > 0 and finite (scale in grid units), the difference of two i.i.d.
 * geometrics with lambda = 1/t rounded down (the noise is never narrower
 * than t).  |*out| < 2^63, so no overflow.  Errors:
 * DP_EINVAL (t not finite or <= 0), DP_ERANGE (t > DP_NOISE_TMAX), or the
 * source's error.  *out untouched on failure. */
#define DP_NOISE_TMAX 0x1p53
int dp_noise_discrete_laplace(dp_bitsource *src, double t, int64_t *out);

/* Discrete Gaussian N_Z(0, sigma^2) on the integers: P(X = j) proportional
 * to exp(-j^2 / (2 sigma^2)), sigma in grid units, by rejection from a
 * discrete Laplace (Canonne, Kamath and Steinke 2020; docs/noise.md §6).
 * Every Bernoulli decision is exact for the double probability it uses, so
 * the output pmf P' is within a factor e^(+-DP_NOISE_DGAUSS_SLACK) of the
 * exact one at every integer, except on a tail of mass at most
 * DP_NOISE_DGAUSS_TAIL (|j| beyond about 32 sigma) that is never produced.
 * Over D coordinates in all (every answer's), an (eps, delta) guarantee of
 * the exact mechanism becomes (eps + 2 D eta,
 * e^(D eta) delta + e^(eps + D eta) D tail) with eta = DP_NOISE_DGAUSS_SLACK
 * and tail = DP_NOISE_DGAUSS_TAIL (docs/noise.md §6 "Slack").  The caller
 * rounds sigma up.  The digit table is cached per thread, as for the
 * discrete Laplace.
 * Each trial reads 2n + 1 random 32-bit words (n from the discrete
 * Laplace's table for t = floor(sigma) + 1; plus more on a tie, probability
 * 2^-32 each); the number of trials (mean <= 2.25) is independent of the
 * value, so the bytes consumed do not depend on it.
 * Errors: DP_EINVAL (sigma not finite or <= 0), DP_ERANGE (sigma outside
 * [DP_NOISE_DGAUSS_SIGMA_MIN, DP_NOISE_DGAUSS_SIGMA_MAX]: below, sigma^2
 * would lose precision; above, a value with a non-negligible probability
 * could exceed 2^52), DP_ERNG (1000 trials rejected in a row: a broken
 * source), or the source's error.  *out untouched on failure. */
#define DP_NOISE_DGAUSS_SIGMA_MIN 0x1p-20
#define DP_NOISE_DGAUSS_SIGMA_MAX 0x1p46
/* eta: per coordinate, e^-eta <= P'(j) / P(j) <= e^eta where P'(j) > 0
 * (derived in docs/noise.md §6 "Slack": 7665 * 2^-53 < 8.51e-13, rounded up). */
#define DP_NOISE_DGAUSS_SLACK 1e-12
/* Per coordinate, the exact pmf's mass on the values never produced. */
#define DP_NOISE_DGAUSS_TAIL 1e-216
int dp_noise_discrete_gaussian(dp_bitsource *src, double sigma, int64_t *out);

/* num / den rounded *up*: the smallest double >= the exact quotient, for
 * num >= 0 and den > 0 (a quotient above DBL_MAX gives INFINITY).
 * A noise scale is computed with it, never with a plain division, which
 * rounds to nearest and so can return a scale below the exact one
 * (docs/privacy.md §2 step 4). */
double dp_noise_div_up(double num, double den);

/* Grid exponent k for the lattice u = 2^-k used by an answer over n rows with
 * L1 clip bound `clip` and per-answer budget eps_q (INFINITY: no noise).
 * *k is the largest integer k <= DP_NOISE_GRID_KMAX such that, in exact
 * arithmetic,
 *     n * clip * 2^k <= 2^52            (every partial sum of quantised
 *                                        values is an exact integer)
 *     2 * clip * 2^k / eps_q <= 2^52    (noise scale t in grid units is
 *                                        <= 2^52 < DP_NOISE_TMAX)
 * The second condition is skipped when eps_q is +INFINITY.  k is negative
 * (u > 1) only for absurd settings such as n * clip > 2^52.  Public: depends
 * only on public settings.  Errors: DP_EINVAL (n == 0, clip not finite or
 * <= 0, eps_q NaN or <= 0), DP_ERANGE (k would be below DP_NOISE_GRID_KMIN, where
 * 2^k would not be a normal double).  *k untouched on failure. */
#define DP_NOISE_GRID_KMAX 40
#define DP_NOISE_GRID_KMIN (-1022)
int dp_noise_grid_exponent(size_t n, double clip, double eps_q, int *k);

/* The grid exponent for an answer with Gaussian noise (L2 clip bound
 * `clip`, standard deviation `sigma` of the noise on the sum of the n
 * clipped gradients, before the division by n; 0: no noise; docs/privacy.md §6 "Clipping in L2").  *k is the largest integer
 * k <= DP_NOISE_GRID_KMAX such that, in exact arithmetic,
 *     n * clip * 2^k <= 2^52        (|q_i| <= clip 2^k per coordinate under
 *                                    L2 too: every partial sum is exact)
 *     sigma * 2^k <= DP_NOISE_GRID_SIGMA_MAX   (the discrete Gaussian's
 *                                    scale in grid units, within the
 *                                    sampler's range)
 * Public settings only.  Errors: DP_EINVAL (n == 0, clip not finite or
 * <= 0, sigma NaN, infinite or < 0), DP_ERANGE (k below
 * DP_NOISE_GRID_KMIN).  *k untouched on failure. */
#define DP_NOISE_GRID_SIGMA_MAX DP_NOISE_DGAUSS_SIGMA_MAX
int dp_noise_grid_exponent_l2(size_t n, double clip, double sigma, int *k);

#endif
