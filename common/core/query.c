/* SPDX-License-Identifier: Apache-2.0 */
#include "common/core/query.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include <openssl/crypto.h>

#include "common/core/error.h"
#include "common/core/kernel.h"
#include "common/core/nano.h"
#include "common/core/noise.h"
#include "common/core/zcdp.h"

const char *const dp_query_mech_names[] = { "laplace", "gaussian", NULL };

const char *dp_query_mech_name(dp_mech mech)
{
	return mech == DP_MECH_LAPLACE || mech == DP_MECH_GAUSSIAN ? dp_query_mech_names[mech] : "?";
}

/* Both scales are rounded up (docs/privacy.md §2 step 4): a scale one
 * ulp below Delta/eps would spend slightly more than eps_q. */
double dp_query_scale(size_t n, double clip, double eps_q)
{
	double den;

	if (isinf(eps_q) && eps_q > 0)
		return 0.0;
	/* n eps_q rounded down (n < 2^53 is exact), so the quotient of the
	 * two roundings still lies above the exact b; the residual's sign as
	 * in dp_noise_div_up */
	den = (double)n * eps_q;
	if (signbit(fma((double)n, eps_q, -den)))
		den = nextafter(den, 0.0);
	if (!(den > 0.0))
		return INFINITY;
	return dp_noise_div_up(2.0 * clip, den);
}

double dp_query_grid_scale(double clip, int k, double eps_q)
{
	if (isinf(eps_q) && eps_q > 0)
		return 0.0;
	/* 2 clip 2^k is exact: a power-of-two scaling of a normal double */
	return dp_noise_div_up(ldexp(clip, k + 1), eps_q);
}

/* The lattice and the noise scale of one answer, from public settings
 * only.  Laplace: t grid units (dp_query_grid_scale).  Gaussian: sigma
 * grid units for the L2 sensitivity 2 clip of the sum, found in the sum's
 * own units and scaled by 2^k, which is exact (docs/zcdp.md §1); the grid
 * keeps sigma 2^k within the sampler's range. */
struct answer_grid {
	int k;
	double t;        /* Laplace scale in grid units, 0: no noise */
	double sigma_u;  /* Gaussian sigma in grid units, 0: no noise */
	double sigma;    /* Gaussian sigma of the sum, in its own units */
};

static int answer_grid(dp_mech mech, size_t n, size_t p, double clip, double share,
		       struct answer_grid *g)
{
	int err;

	*g = (struct answer_grid){ 0 };
	if (mech == DP_MECH_LAPLACE) {
		err = dp_noise_grid_exponent(n, clip, share, &g->k);
		if (err == 0)
			g->t = dp_query_grid_scale(clip, g->k, share);
		return err;
	}
	if (isfinite(share)) {
		err = dp_zcdp_sigma_for(2.0 * clip, share, p, &g->sigma);
		if (err != 0)
			return err;
	}
	err = dp_noise_grid_exponent_l2(n, clip, g->sigma, &g->k);
	if (err == 0)
		g->sigma_u = ldexp(g->sigma, g->k);
	return err;
}

/* Order of work, so that nothing partial can leave: validate, exact grid
 * sum, all noise into a buffer (a failing source aborts here, grad not yet
 * touched), then the conversion, which cannot fail.  The sum (the exact
 * clipped gradient, private) and the noise are wiped before returning. */
int dp_query_answer_mech(dp_model m, const dp_dataset *ds, const double *theta, double clip,
			 dp_mech mech, double share, dp_bitsource *src, double *grad,
			 dp_query_info *info)
{
	const char *unit = mech == DP_MECH_GAUSSIAN ? "rho" : "epsilon";
	struct answer_grid g;
	double *sum = NULL;
	int64_t *noise = NULL;
	size_t p, n, dropped = 0;
	int err;

	if (mech != DP_MECH_LAPLACE && mech != DP_MECH_GAUSSIAN)
		return dp_error_set(DP_EINVAL, "query: unknown mechanism %d", (int)mech);
	if (ds == NULL || ds->n < 1 || ds->p < 1)
		return dp_error_set(DP_EINVAL, "query: no rows to answer from");
	if (!(share > 0.0))
		return dp_error_set(DP_EINVAL, "query: %s %g is not positive", unit, share);
	if (!(clip > 0.0) || !isfinite(clip))
		return dp_error_set(DP_EINVAL, "query: clip %g is not a positive finite number", clip);
	n = ds->n;
	p = ds->p;
	for (size_t q = 0; q < p; q++)
		if (!isfinite(theta[q]))
			return dp_error_set(DP_EINVAL, "query: theta[%zu] = %g is not finite", q, theta[q]);
	if (isfinite(share) && (src == NULL || src->fill == NULL))
		return dp_error_set(DP_EINVAL, "query: a noisy answer needs a random source");
	err = answer_grid(mech, n, p, clip, share, &g);
	if (err != 0)
		return err;

	sum = malloc(p * sizeof(*sum));
	noise = calloc(p, sizeof(*noise));
	if (sum == NULL || noise == NULL) {
		err = dp_error_set(DP_ENOMEM, "query: out of memory for %zu coordinates", p);
		goto out;
	}
	if (mech == DP_MECH_LAPLACE)
		err = dp_kernel_clipped_grid_sum(m, ds, theta, clip, g.k, sum, &dropped);
	else
		err = dp_kernel_clipped_grid_sum_l2(m, ds, theta, clip, g.k, sum, &dropped);
	if (err != 0)
		goto out;
	/* Laplace: scale in grid units, sensitivity 2 clip 2^k over eps_q,
	 * rounded up, <= 2^52 by the grid. */
	for (size_t q = 0; q < p && g.t > 0.0; q++) {
		err = dp_noise_discrete_laplace(src, g.t, &noise[q]);
		if (err != 0)
			goto out;
	}
	for (size_t q = 0; q < p && g.sigma_u > 0.0; q++) {
		err = dp_noise_discrete_gaussian(src, g.sigma_u, &noise[q]);
		if (err != 0)
			goto out;
	}
	/* |sum| <= 2^52 and |noise| < 2^63: the total fits in __int128; the
	 * conversion to double and the scaling are post-processing. */
	for (size_t q = 0; q < p; q++) {
		__int128 tot = (__int128)(int64_t)sum[q] + noise[q];

		grad[q] = ldexp((double)tot, -g.k) / (double)n;
	}
	if (info != NULL) {
		info->grid_k = g.k;
		info->scale_b = mech == DP_MECH_LAPLACE ? dp_query_scale(n, clip, share) : 0.0;
		info->sigma = g.sigma / (double)n;
		info->dropped = dropped;
	}
out:
	if (sum != NULL) {
		OPENSSL_cleanse(sum, p * sizeof(*sum));
		free(sum);
	}
	if (noise != NULL) {
		OPENSSL_cleanse(noise, p * sizeof(*noise));
		free(noise);
	}
	return err;
}

int dp_query_answer(dp_model m, const dp_dataset *ds, const double *theta, double clip,
		    double eps_q, dp_bitsource *src, double *grad, dp_query_info *info)
{
	return dp_query_answer_mech(m, ds, theta, clip, DP_MECH_LAPLACE, eps_q, src, grad, info);
}

int dp_query_share(dp_mech mech, double eps, double delta, uint64_t answers, size_t d,
		   double *share, uint64_t *slack_nano)
{
	DP_REQUIRE(share != NULL && slack_nano != NULL);
	if (mech == DP_MECH_GAUSSIAN)
		return dp_zcdp_share(eps, delta, answers, d, DP_NOISE_DGAUSS_SLACK,
				     DP_NOISE_DGAUSS_TAIL, share, slack_nano);
	*slack_nano = 0;
	return dp_nano_share(eps, answers, share);
}
