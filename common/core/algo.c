/* SPDX-License-Identifier: Apache-2.0 */
#include "common/core/algo.h"
#include "common/core/error.h"
#include "common/core/model.h"

#include <math.h>

void dp_algo_project_box(size_t p, double theta_max, double *theta)
{
	DP_REQUIRE(theta != NULL || p == 0);
	for (size_t q = 0; q < p; q++) {
		if (theta[q] > theta_max)
			theta[q] = theta_max;
		else if (theta[q] < -theta_max)
			theta[q] = -theta_max;
	}
}

double dp_algo_eta_from_rho(size_t N, size_t T, double lambda, double rho)
{
	return (double)N * rho / ((double)T * (double)T * 2.0 * lambda);
}

double dp_algo_rho_from_eta(size_t N, size_t T, double lambda, double eta)
{
	return eta * (double)T * (double)T * 2.0 * lambda / (double)N;
}

void dp_algo_midpoint(size_t p, const double *theta_L, const double *theta_i, double *bar)
{
	DP_REQUIRE((theta_L != NULL && theta_i != NULL && bar != NULL) || p == 0);
	for (size_t q = 0; q < p; q++)
		bar[q] = (theta_L[q] + theta_i[q]) / 2.0;
}

void dp_algo_async_update(const dp_algo_async_params *a, const double *bar, const double *answer,
		     double weight, double *theta_i, double *theta_L)
{
	double N, eta_L;

	DP_REQUIRE(a != NULL && a->N >= 1);
	DP_REQUIRE((bar != NULL && answer != NULL && theta_i != NULL && theta_L != NULL) ||
		   a->p == 0);
	N = (double)a->N;
	/* The learner's step is (N-1) rho/(N T^2 sigma) = eta (N-1)/N^2. */
	eta_L = a->eta * (N - 1.0) / (N * N);
	for (size_t q = 0; q < a->p; q++) {
		double gg = 2.0 * a->lambda * bar[q];
		theta_i[q] = bar[q] - a->eta * (gg / (2.0 * N) + weight * answer[q]);
		theta_L[q] = bar[q] - eta_L * gg;
	}
	dp_algo_project_box(a->p, a->theta_max, theta_i);
	dp_algo_project_box(a->p, a->theta_max, theta_L);
}

double dp_algo_freq_weight(double base_weight, size_t N, uint64_t count_i, uint64_t k)
{
	double pi;

	DP_REQUIRE(N >= 1);
	pi = ((double)count_i + 1.0) / ((double)k + (double)N);
	return base_weight / ((double)N * pi);
}

void dp_algo_sync1_step(size_t p, double rho_over_T2, size_t k, double lambda,
		   const double *agg, double *theta)
{
	double step;

	DP_REQUIRE(k >= 1 && ((agg != NULL && theta != NULL) || p == 0));
	step = rho_over_T2 / (double)k;
	for (size_t q = 0; q < p; q++)
		theta[q] -= step * (2.0 * lambda * theta[q] + agg[q]);
}

void dp_algo_sync2_step(size_t p, double c, size_t k, size_t T, double lambda, double theta_max,
		   const double *agg, double *theta, double *theta_hat)
{
	double step, a, w_old, w_new;

	DP_REQUIRE(k >= 1 && T >= 1);
	DP_REQUIRE((agg != NULL && theta != NULL && theta_hat != NULL) || p == 0);
	step = c / sqrt((double)k);
	a = 1.0 / sqrt((double)T);
	w_old = ((double)k - 1.0) / (a + (double)k);
	w_new = (a + 1.0) / (a + (double)k);
	for (size_t q = 0; q < p; q++) {
		double prev = theta[q];
		theta_hat[q] = w_old * theta_hat[q] + w_new * prev;
		theta[q] = prev - step * (2.0 * lambda * prev + agg[q]);
	}
	dp_algo_project_box(p, theta_max, theta);
}

double dp_algo_p2p_alpha(double mu, double c, double L_loc)
{
	DP_REQUIRE(mu > 0 && c > 0 && c <= 1 && L_loc >= 0);
	return 1.0 / (1.0 + mu * c * L_loc);
}

double dp_algo_p2p_smoothness(int model, double x2max, double lambda)
{
	DP_REQUIRE(x2max >= 0 && lambda >= 0);
	switch (model) {
	case DP_MODEL_LINEAR:
		return 2.0 * x2max + 2.0 * lambda;
	case DP_MODEL_LOGISTIC:
		return x2max / 4.0 + 2.0 * lambda;
	default:
		return NAN;
	}
}

void dp_algo_p2p_update(const dp_algo_p2p_params *a, size_t n_nb, const double *const *theta_nb,
			const double *w, const double *g, double *theta_i)
{
	double alpha, D = 0.0, mc;

	DP_REQUIRE(a != NULL && a->mu > 0 && a->c > 0 && a->c <= 1 && a->L_loc >= 0);
	DP_REQUIRE((g != NULL && theta_i != NULL) || a->p == 0);
	DP_REQUIRE(n_nb == 0 || (theta_nb != NULL && w != NULL));
	alpha = dp_algo_p2p_alpha(a->mu, a->c, a->L_loc);
	mc = a->mu * a->c;
	for (size_t j = 0; j < n_nb; j++) {
		DP_REQUIRE(w[j] >= 0 && (theta_nb[j] != NULL || a->p == 0));
		D += w[j];
	}
	for (size_t q = 0; q < a->p; q++) {
		double smooth = 0.0;

		if (D > 0) {
			for (size_t j = 0; j < n_nb; j++)
				smooth += (w[j] / D) * theta_nb[j][q];
		} else {
			smooth = theta_i[q];
		}
		theta_i[q] = (1.0 - alpha) * theta_i[q] +
			     alpha * (smooth - mc * (g[q] + 2.0 * a->lambda * theta_i[q]));
	}
}

void dp_algo_p2p_warm_step(const dp_algo_p2p_params *a, const double *g, double *theta)
{
	DP_REQUIRE(a != NULL && a->L_loc > 0);
	DP_REQUIRE((g != NULL && theta != NULL) || a->p == 0);
	for (size_t q = 0; q < a->p; q++)
		theta[q] -= (g[q] + 2.0 * a->lambda * theta[q]) / a->L_loc;
}
