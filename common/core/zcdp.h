/* SPDX-License-Identifier: Apache-2.0 */
/* Zero-concentrated DP (zCDP) accounting for Gaussian answers, and the
 * lifetime bound of a dataset that answered with Laplace, Gaussian or both
 * (docs/zcdp.md).
 *
 * An amount rho is a zCDP parameter: a mechanism is rho-zCDP when the
 * Renyi divergence of order alpha between its outputs on neighbouring
 * datasets is at most alpha * rho for every alpha > 1.  rho-zCDP implies
 * (eps, delta)-DP through the tight conversion of docs/zcdp.md §2; a
 * "slack" a >= 0 is the sampler's pointwise pmf error (the real sampler's
 * output is within a factor e^{+-a} of the ideal one), charged as in
 * docs/zcdp.md §3.
 *
 * Every double returned is rounded in the safe direction: amounts charged
 * (rho, eps) up, amounts allowed (rho for a cap, sigma's rho) so that the
 * guarantee holds for the value returned.  The ledger's integer form is
 * nano units (1e-9), like nano-epsilon (common/core/nano.h).
 *
 * Pure functions: no state, safe from any thread.  Outputs are untouched on
 * failure. */
#ifndef DP_ZCDP_H
#define DP_ZCDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The eps of the conversion at one Renyi order alpha (docs/zcdp.md §2):
 *     eps = alpha rho + (ln(1/delta') + (alpha-1) ln(1 - 1/alpha) - ln alpha)
 *                       / (alpha - 1),        delta' = delta e^{-slack},
 * plus 2 slack, clamped below at 2 slack, rounded up (docs/zcdp.md §4).
 * Any alpha > 1 gives a valid (eps, delta)-DP guarantee for a rho-zCDP
 * mechanism with that slack.  rho >= 0, slack >= 0 (either infinite gives
 * INFINITY), 0 < delta < 1, 1 < alpha <= 2^53.
 * Errors: DP_EINVAL (an argument out of range or NaN), with a detail. */
int dp_zcdp_eps_at(double rho, double slack, double delta, double alpha, double *eps);

/* The (eps, delta)-DP guarantee of a rho-zCDP mechanism with that slack:
 * dp_zcdp_eps_at at the alpha that (numerically) minimises it, so the value
 * is valid whatever alpha the search settles on.  rho = 0 gives 2 slack
 * (exactly 0 for no slack); an infinite rho or slack gives INFINITY.
 * Errors: DP_EINVAL (rho or slack negative or NaN, delta not in (0, 1)). */
int dp_zcdp_eps(double rho, double slack, double delta, double *eps);

/* The largest rho (found by bisection, rounded down) with
 * dp_zcdp_eps(rho, slack, delta) <= eps, so the guarantee holds for the
 * value returned.  eps = INFINITY gives INFINITY.
 * Errors: DP_EINVAL (eps not > 0 or NaN, slack negative, NaN or infinite,
 * delta not in (0, 1), or 2 slack > eps: the slack alone spends more than
 * eps). */
int dp_zcdp_rho_for(double eps, double slack, double delta, double *rho);

/* The rho of a pure eps-DP answer: eps^2 / 2, rounded up (docs/zcdp.md §1).
 * eps >= 0 (DP_REQUIRE); INFINITY for INFINITY. */
double dp_zcdp_rho_pure(double eps);

/* The rho of one answer of d independent discrete Gaussian coordinates of
 * scale sigma, whose exact (unnoised) answers on neighbouring datasets
 * differ by an integer vector of L2 norm at most delta2, both in lattice
 * units: delta2^2 / (2 sigma^2), rounded up.  The bound does not depend on
 * d (docs/zcdp.md §1 proves it and says why no correction term applies);
 * d >= 1 is checked all the same.  delta2 = 0 gives 0.
 * Errors: DP_EINVAL (delta2 negative, NaN or infinite; sigma not > 0 or not
 * finite; d = 0). */
int dp_zcdp_rho_dgauss(double delta2, double sigma, size_t d, double *rho);

/* The smallest sigma (to the last bits, rounded up) with
 * dp_zcdp_rho_dgauss(delta2, sigma, d) <= rho: about delta2 / sqrt(2 rho).
 * rho = INFINITY gives 0 (no noise: testing only).
 * Errors: DP_EINVAL (delta2 not > 0 or not finite, rho not > 0 or NaN,
 * d = 0). */
int dp_zcdp_sigma_for(double delta2, double rho, size_t d, double *sigma);

/* The rho cap of a job that may spend (eps, delta) over `answers` Gaussian
 * answers of d coordinates, before it is shared (docs/zcdp.md §7): the cap
 * dp_zcdp_share below divides, rounded down, and in *slack_nano each
 * answer's sampler slack charge (nano units, rounded up).  For callers that
 * share the cap unequally (a peer agent's warm start and wake-ups,
 * docs/peer-agents.md "Privacy").  eps = INFINITY gives INFINITY and no
 * slack.  Errors: dp_zcdp_share's, but for the one-nano-rho-per-answer
 * check; outputs untouched then. */
int dp_zcdp_cap(double eps, double delta, uint64_t answers, size_t d, double eta, double tail,
		double *cap_rho, uint64_t *slack_nano);

/* A job's budget over Gaussian answers (docs/zcdp.md §7): the rho of each
 * of `answers` answers of d coordinates when the job may spend (eps, delta)
 * at most.  Each answer is charged, in nano units rounded up, its rho and
 * its sampler's slack d eta (*slack_nano receives that per-answer slack
 * charge); the samplers' tail, at most tail per coordinate, is taken off
 * delta as e^(eps + slack) answers d tail (docs/noise.md §6 "Slack").  The
 * job's rho cap is then dp_zcdp_rho_for(eps, answers * slack, delta - tail
 * term), and *rho_q its share as dp_nano_share computes it, so `answers`
 * charges of *rho_q, rounded up, fit the cap rounded down.  eps = INFINITY
 * gives INFINITY (no noise) and no slack.  rho_q, slack_nano not NULL.
 * Errors: DP_EINVAL (eps not > 0, delta not in (0, 1), answers or d 0, eta
 * or tail negative or not finite, or a budget too small for the slack
 * alone or for one nano-rho per answer), DP_ERANGE (a tail term that is
 * not below half of delta: eps too large for the sampler); outputs
 * untouched then. */
int dp_zcdp_share(double eps, double delta, uint64_t answers, size_t d, double eta, double tail,
		  double *rho_q, uint64_t *slack_nano);

/* The second half of dp_zcdp_share, for a caller that keeps the cap too:
 * *rho_q, the share of cap_rho (dp_zcdp_cap's, for eps at delta) over
 * `answers` (INFINITY for an infinite cap).  eps and delta only name the
 * budget in the error.  Errors: DP_EINVAL (below one nano-rho per answer),
 * DP_ERANGE; *rho_q untouched then. */
int dp_zcdp_share_cap(double cap_rho, uint64_t answers, double eps, double delta, double *rho_q);

/* A dataset's spending in the ledger's integer nano units (1e-9; each
 * charge rounded up when it is made), for the lifetime bound of
 * docs/zcdp.md §5.  Any field may be DP_NANO_INF (an infinite charge). */
typedef struct dp_zcdp_totals {
	uint64_t eps_pure;   /* Laplace answers: sum of their nano-eps */
	uint64_t rho_pure;   /* the same answers: sum of their nano-rho, eps^2/2 */
	uint64_t rho_gauss;  /* Gaussian answers: sum of their nano-rho */
	uint64_t slack;      /* Gaussian answers: sum of their samplers' nano-slack */
} dp_zcdp_totals;

/* The charge of one pure answer of eps_nano nano-eps (as the ledger
 * charges it today): { eps_nano, ceil(eps_nano^2 / 2e9), 0, 0 }, exact in
 * integers.  DP_NANO_INF gives DP_NANO_INF in both fields. */
dp_zcdp_totals dp_zcdp_charge_pure(uint64_t eps_nano);

/* The charge of one Gaussian answer of rho (dp_zcdp_rho_dgauss) and its
 * sampler's slack: { 0, 0, ceil(rho), ceil(slack) } in nano units.
 * Errors: DP_EINVAL (negative or NaN), DP_ERANGE (above DP_NANO_MAX, or
 * infinite), from dp_nano_ceil. */
int dp_zcdp_charge_gauss(double rho, double slack, dp_zcdp_totals *charge);

/* *t += *c field by field, saturating at DP_NANO_INF (dp_nano_add). */
void dp_zcdp_add(dp_zcdp_totals *t, const dp_zcdp_totals *c);

/* The best valid eps at delta of a dataset that spent *t (docs/zcdp.md §5),
 * rounded up:
 *   - no Gaussian answer (rho_gauss = slack = 0): eps_pure, the figure of
 *     basic composition the ledger shows today, whatever delta (even 0);
 *   - Gaussian answers and delta = 0: INFINITY (no pure-DP guarantee
 *     exists; a ledger refuses such a charge);
 *   - otherwise the smaller of eps_pure + dp_zcdp_eps(rho_gauss, slack,
 *     delta) and dp_zcdp_eps(rho_pure + rho_gauss, slack, delta).
 * A field at DP_NANO_INF gives INFINITY.
 * Errors: DP_EINVAL (delta not in [0, 1) or NaN). */
int dp_zcdp_best_eps(const dp_zcdp_totals *t, double delta, double *eps);

/* dp_zcdp_best_eps in nano-eps, rounded up: exactly t->eps_pure without
 * Gaussian answers; DP_NANO_INF for INFINITY or above DP_NANO_MAX.
 * Errors: dp_zcdp_best_eps's. */
int dp_zcdp_best_nano(const dp_zcdp_totals *t, double delta, uint64_t *eps_nano);

/* Whether a charge fits the lifetime cap: *fits = dp_zcdp_best_nano of
 * (*spent + *charge) <= cap_nano, the cap in nano-eps rounded down
 * (dp_nano_floor; DP_NANO_INF: no cap).  Without Gaussian answers it is the
 * plain sum the ledger checks today.
 * Errors: dp_zcdp_best_eps's; *fits untouched then. */
int dp_zcdp_fits(const dp_zcdp_totals *spent, const dp_zcdp_totals *charge, uint64_t cap_nano,
		 double delta, bool *fits);

/* The largest Gaussian charge, in nano-rho, that still fits after *spent
 * with a sampler slack of slack_nano (dp_zcdp_fits, found by bisection on
 * the integers, so that exactly this charge fits).  0 when nothing fits
 * (or delta = 0); DP_NANO_INF for an infinite cap.
 * Errors: dp_zcdp_best_eps's. */
int dp_zcdp_rho_left(const dp_zcdp_totals *spent, uint64_t slack_nano, uint64_t cap_nano,
		     double delta, uint64_t *rho_nano);

#endif
