/* SPDX-License-Identifier: Apache-2.0 */
/* Splitting an agent's budget (eps, delta) over its T wake-ups
 * (docs/peer-agents.md "Privacy"; Theorem 1 of the peer-to-peer paper,
 * docs/design.md §6).
 *
 * Each wake-up releases one model computed from one noisy gradient, an
 * eps_t-DP mechanism.  T of them compose:
 *   - basic (pure) composition: T eps_t-DP answers are (T eps_t, 0)-DP;
 *   - advanced composition (Dwork, Rothblum, Vadhan 2010), for delta > 0:
 *     they are (eps', delta)-DP with
 *         eps' = sqrt(2 T ln(1/delta)) eps_t + T eps_t (e^eps_t - 1).
 * The equal split gives every wake-up the largest eps_t that either
 * composition keeps within (eps, delta); for few wake-ups or a tiny delta
 * that is the basic one, eps / T. */
#ifndef DP_COMPOSE_H
#define DP_COMPOSE_H

#include <stddef.h>
#include <stdint.h>

/* The eps' of T-fold advanced composition of eps_t-DP steps at delta
 * (the formula above).  eps_t >= 0, 0 < delta < 1, T >= 1 (DP_REQUIRE). */
double dp_compose_advanced(double eps_t, double delta, uint64_t T);

/* The per-wake-up epsilon of the equal split of (eps, delta) over T
 * wake-ups: eps / T when delta is 0, else the larger of eps / T and the
 * largest eps_t with dp_compose_advanced(eps_t, delta, T) <= eps (found by
 * bisection and rounded down, so the guarantee holds for the value
 * returned).  eps = INFINITY gives INFINITY.
 * Errors: DP_EINVAL (eps not > 0 or NaN, delta not in [0, 1), T = 0), with
 * a detail; *eps_t untouched then. */
int dp_compose_split(double eps, double delta, uint64_t T, double *eps_t);

/* The budget plan of an agent's ledger (docs/peer-agents.md "Privacy"). */
typedef struct dp_compose_budget {
	double cap;          /* the ledger's cap */
	double eps_step;     /* one wake-up's charge */
	double eps_warm;     /* one warm-start step's charge; 0 without a warm start */
} dp_compose_budget;

/* The plan of an agent with budget (eps, delta) over T wake-ups after a
 * private warm start that spends warm of eps in K steps (warm = 0: none,
 * K unused), as ownerd --peer opens its ledger and `dpasync sim --mode p2p`
 * simulates it.  The wake-ups get the equal split of eps - warm
 * (dp_compose_split); the ledger counts pure-epsilon charges, so its cap
 * is their sum, warm + max(T eps_t, eps - warm): eps under basic
 * composition, more under advanced composition (where (eps, delta) is the
 * guarantee).  Each charge is the ledger's share (dp_nano_share) of
 * its part, so that the rounded-up charges fit the rounded-down cap; when
 * the two parts' roundings collide the wake-ups' total is shaved a
 * nano-epsilon at a time.  eps = inf gives inf for all three.
 * Errors (DP_EINVAL, *out untouched): warm > 0 with K = 0; warm not 0 and
 * not in (0, eps) ("--warm-start W leaves nothing of --epsilon E for the
 * wake-ups"); dp_compose_split's (eps not > 0, delta, T = 0); a share
 * below one nano-epsilon ("--epsilon cannot be split over the wake-ups:
 * ..."). */
int dp_compose_plan(double eps, double warm, uint64_t K, double delta, uint64_t T,
		    dp_compose_budget *out);

/* The plan of a Gaussian agent (docs/peer-agents.md "Privacy"): its T
 * wake-ups and K warm-start steps (when warm > 0) are all Gaussian answers
 * of d coordinates.  The cap is dp_zcdp_cap's rho for (eps, delta) over
 * T + K answers (the samplers' slack and tail charged, docs/zcdp.md §7);
 * the warm start gets the fraction warm / eps of it split over its K
 * steps, the wake-ups the rest split over T, each share in rho
 * (eps_step, eps_warm hold rho here) such that the rounded-up charges fit
 * the rounded-down cap.  *slack_nano receives each answer's sampler slack
 * charge, the ledger's slack_eps.  eps = inf gives inf for all three and
 * slack 0.  Errors (DP_EINVAL unless said, outputs untouched): those of
 * dp_compose_plan for warm and K, eps not > 0, T = 0, delta 0
 * ("--mechanism gaussian needs --delta > 0 ...") or not in (0, 1), dp_zcdp_cap's
 * (DP_ERANGE for an eps too large for the sampler's tail), a share below
 * one nano-rho. */
int dp_compose_plan_gauss(double eps, double warm, uint64_t K, double delta, uint64_t T,
			  size_t d, dp_compose_budget *out, uint64_t *slack_nano);

#endif
