/* SPDX-License-Identifier: Apache-2.0 */
/* Seeded, reproducible generator for offline simulation ONLY.
 *
 * Compiled into libdptool, which dpasync and the tests link and the daemons
 * do not: no code path of ownerd can reach it.  dp_simrng_next is the hot
 * path and does not check its argument. */
#ifndef DP_SIMRNG_H
#define DP_SIMRNG_H

#include <stddef.h>
#include <stdint.h>
#include "common/core/rng.h"

typedef struct dp_simrng {
	uint64_t s[4];
} dp_simrng;

/* Seed deterministically (any seed, including 0, is valid). */
void dp_simrng_seed(dp_simrng *r, uint64_t seed);
uint64_t dp_simrng_next(dp_simrng *r);
/* A bitsource view of r; its fill never fails. */
dp_bitsource dp_simrng_bitsource(dp_simrng *r);

/* Which of n independent Poisson clocks ticks first, among those with
 * count[i] < cap[i] (every one when cap is NULL): i with probability
 * rate[i] / (sum of their rates), from one draw of r.  n when none is left.
 * The simulators' choice of the next owner or agent. */
size_t dp_simrng_pick(dp_simrng *r, const double *rate, const uint64_t *count,
		      const uint64_t *cap, size_t n);

#endif
