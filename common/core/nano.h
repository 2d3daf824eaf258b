/* SPDX-License-Identifier: Apache-2.0 */
/* Privacy budget in integer nano-epsilon (1e-9 epsilon), the unit in which
 * the ledgers, the owner's lifetime budget and the simulator count
 * (docs/ledger.md §2).
 *
 * An amount of epsilon becomes nano-epsilon from the exact binary value of
 * the double, not from its decimal print-out: a charge is rounded UP and a
 * cap DOWN, so that rounding only ever makes the accounting more
 * conservative.  Every finite amount is at most DP_NANO_MAX; DP_NANO_INF
 * stands for an infinite amount (epsilon = inf, no noise: testing only).
 *
 * Pure functions: no state, safe from any thread. */
#ifndef DP_NANO_H
#define DP_NANO_H

#include <stdint.h>

#define DP_NANO_INF  UINT64_MAX
#define DP_NANO_MAX  (UINT64_MAX - 1)

/* Epsilon -> nano-epsilon from the exact binary value of eps (>= 0, finite):
 * _ceil rounds up (charges), _floor rounds down (caps).  out must not be
 * NULL; *out untouched on failure.
 * Errors: DP_EINVAL (negative or NaN), DP_ERANGE (above DP_NANO_MAX, or
 * infinite). */
int dp_nano_ceil(double eps, uint64_t *out);
int dp_nano_floor(double eps, uint64_t *out);

/* a + b, saturating: DP_NANO_INF when either is DP_NANO_INF or when the sum
 * would pass DP_NANO_MAX (which only an infinite cap can allow: a finite
 * cap is at most DP_NANO_MAX and is checked before anything is added). */
uint64_t dp_nano_add(uint64_t a, uint64_t b);

/* Nano-epsilon -> epsilon: v / 1e9, INFINITY for DP_NANO_INF. */
double dp_nano_to_eps(uint64_t v);

/* The largest per-answer epsilon eps_q such that `answers` charges of eps_q
 * fit in a cap of cap_eps after rounding (answers * ceil(eps_q) <=
 * floor(cap_eps)).  Use it instead of cap_eps / answers, which may round
 * up past the cap (1.0/3 charges 333333334 nano-eps, so only two such
 * answers fit in a cap of 1.0).  INFINITY for an infinite cap.  eps_q must
 * not be NULL; *eps_q untouched on failure.
 * Errors: DP_EINVAL (cap_eps not > 0 or NaN, answers 0, or cap below
 * `answers` nano-epsilon), DP_ERANGE (cap above DP_NANO_MAX). */
int dp_nano_share(double cap_eps, uint64_t answers, double *eps_q);

#endif
