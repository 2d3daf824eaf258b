/* SPDX-License-Identifier: Apache-2.0 */
/* One step of each training algorithm (docs/design.md §4, §5).  learnerd and
 * dpasync sim call exactly these functions.  Vectors have p entries and may
 * be NULL only when p is 0; N, k and T count from 1.  A broken one of these
 * is a caller bug (DP_REQUIRE). */
#ifndef DP_ALGO_H
#define DP_ALGO_H

#include <stddef.h>
#include <stdint.h>

/* Projection onto the box: clamp every coordinate to [-theta_max, theta_max]. */
void dp_algo_project_box(size_t p, double theta_max, double *theta);

/* ---- Async (Algorithm 1 of "The Cost of Privacy in Asynchronous DP ML") */

typedef struct dp_algo_async_params {
	size_t p;
	size_t N;          /* number of owners */
	double eta;        /* owner-copy step N rho / (T^2 sigma) */
	double lambda;     /* g(theta) = lambda ||theta||^2, grad g = 2 lambda theta */
	double theta_max;
} dp_algo_async_params;

/* eta from the paper's rho: N rho / (T^2 * 2 lambda).  lambda > 0. */
double dp_algo_eta_from_rho(size_t N, size_t T, double lambda, double rho);
double dp_algo_rho_from_eta(size_t N, size_t T, double lambda, double eta);

/* bar = (theta_L + theta_i) / 2. */
void dp_algo_midpoint(size_t p, const double *theta_L, const double *theta_i, double *bar);

/* Apply the update for an answer computed at `bar`:
 *   theta_i <- P[bar - eta ((1/(2N)) grad g(bar) + weight * answer)]
 *   theta_L <- P[bar - eta ((N-1)/N^2) grad g(bar)]
 * weight is n_i/n (or the frequency-corrected weight of Remark 4). */
void dp_algo_async_update(const dp_algo_async_params *a, const double *bar, const double *answer,
		     double weight, double *theta_i, double *theta_L);

/* Remark 4 of the async paper: owner i's weight n_i/n scaled by 1/(N pi_i),
 * pi_i its observed share of iterations, so that an owner whose clock ticks
 * more often does not pull theta towards its own data.  count_i and k count
 * the iterations so far including this one; pi_i is the add-one estimate
 * (count_i + 1) / (k + N), which is 1/N in expectation under equal clocks
 * and avoids the 1/N factor a raw share of 1 would give the first owner. */
double dp_algo_freq_weight(double base_weight, size_t N, uint64_t count_i, uint64_t k);

/* ---- Sync baselines (Algorithms 1 and 2 of "The Value of Collaboration") */

/* theta <- theta - (rho/(T^2 k)) (2 lambda theta + agg), agg = sum (n_i/n) Qbar_i. */
void dp_algo_sync1_step(size_t p, double rho_over_T2, size_t k, double lambda,
		   const double *agg, double *theta);

/* theta_next = P[theta - (c/sqrt k)(2 lambda theta + agg)], then the running
 * average theta_hat[k+1] = ((k-1)/(1/sqrt T + k)) theta_hat[k]
 *                          + ((1/sqrt T + 1)/(1/sqrt T + k)) theta[k]
 * (theta[k] is the iterate before this step).  Updates theta and theta_hat. */
void dp_algo_sync2_step(size_t p, double c, size_t k, size_t T, double lambda, double theta_max,
		   const double *agg, double *theta, double *theta_hat);

/* ---- Peer mode (Personalized and Private P2P ML, docs/design.md §6) */

/* alpha = 1 / (1 + mu c L_loc): the agent's step, mu > 0 the trade-off,
 * c in (0, 1] its confidence, L_loc >= 0 the Lipschitz constant of the
 * gradient of its local loss L_i (regulariser included). */
double dp_algo_p2p_alpha(double mu, double c, double L_loc);

/* Public smoothness of the local loss L_i(theta) = (1/m) sum l + lambda ||theta||^2
 * for rows with ||x||_2^2 <= x2max: 2 x2max (linear), x2max/4 (logistic),
 * plus 2 lambda.  The hinge loss is not smooth: NAN for svm. */
double dp_algo_p2p_smoothness(int model, double x2max, double lambda);

typedef struct dp_algo_p2p_params {
	size_t p;
	double mu;
	double c;          /* the agent's confidence c_i */
	double L_loc;      /* dp_algo_p2p_smoothness of its loss */
	double lambda;     /* its lambda_i */
} dp_algo_p2p_params;

/* One wake-up of agent i (block coordinate descent):
 *   theta_i <- (1-alpha) theta_i
 *              + alpha ( sum_j (W_ij / D_ii) theta_j - mu c (g + 2 lambda theta_i) )
 * with D_ii = sum_j W_ij over the n_nb neighbours, theta_nb[j] their last
 * models, w[j] = W_ij > 0, and g the agent's noisy mean loss gradient
 * (dp_query_answer at theta_i: the regulariser's gradient is public and
 * added here).  With no neighbour (or D_ii = 0) the smoothing term is
 * theta_i itself, so the agent descends its own loss. */
void dp_algo_p2p_update(const dp_algo_p2p_params *a, size_t n_nb, const double *const *theta_nb,
			const double *w, const double *g, double *theta_i);

/* Default steps of the private warm start (the paper's supplement,
 * docs/peer-agents.md): before its first wake-up an agent with a warm-start
 * budget takes this many noisy gradient steps on its own loss (ownerd and
 * sim --warm-steps), each at an equal share of that budget. */
#define DP_ALGO_P2P_WARM_STEPS 10u

/* One step of the warm start, gradient descent on L_i with step 1/L_loc:
 *   theta <- theta - (g + 2 lambda theta) / L_loc
 * with g the agent's noisy mean loss gradient at theta (as in
 * dp_algo_p2p_update; mu and c are not used).  L_loc > 0. */
void dp_algo_p2p_warm_step(const dp_algo_p2p_params *a, const double *g, double *theta);

#endif
