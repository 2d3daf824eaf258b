/* SPDX-License-Identifier: Apache-2.0 */
#include "common/core/query.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include <openssl/crypto.h>

#include "common/core/error.h"
#include "common/core/kernel.h"
#include "common/core/noise.h"

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

/* Order of work, so that nothing partial can leave: validate, exact grid
 * sum, all noise into a buffer (a failing source aborts here, grad not yet
 * touched), then the conversion, which cannot fail.  The sum (the exact
 * clipped gradient, private) and the noise are wiped before returning. */
int dp_query_answer(dp_model m, const dp_dataset *ds, const double *theta, double clip,
		    double eps_q, dp_bitsource *src, double *grad, dp_query_info *info)
{
	double *sum = NULL;
	int64_t *noise = NULL;
	size_t p, n, dropped = 0;
	int k, err;

	if (ds == NULL || ds->n < 1 || ds->p < 1)
		return dp_error_set(DP_EINVAL, "query: no rows to answer from");
	if (!(eps_q > 0.0))
		return dp_error_set(DP_EINVAL, "query: epsilon %g is not positive", eps_q);
	if (!(clip > 0.0) || !isfinite(clip))
		return dp_error_set(DP_EINVAL, "query: clip %g is not a positive finite number", clip);
	n = ds->n;
	p = ds->p;
	for (size_t q = 0; q < p; q++)
		if (!isfinite(theta[q]))
			return dp_error_set(DP_EINVAL, "query: theta[%zu] = %g is not finite", q, theta[q]);
	if (isfinite(eps_q) && (src == NULL || src->fill == NULL))
		return dp_error_set(DP_EINVAL, "query: a noisy answer needs a random source");
	err = dp_noise_grid_exponent(n, clip, eps_q, &k);
	if (err != 0)
		return err;

	sum = malloc(p * sizeof(*sum));
	noise = calloc(p, sizeof(*noise));
	if (sum == NULL || noise == NULL) {
		err = dp_error_set(DP_ENOMEM, "query: out of memory for %zu coordinates", p);
		goto out;
	}
	err = dp_kernel_clipped_grid_sum(m, ds, theta, clip, k, sum, &dropped);
	if (err != 0)
		goto out;
	if (isfinite(eps_q)) {
		/* scale in grid units: sensitivity 2 clip 2^k over eps_q,
		 * rounded up; dp_noise_grid_exponent keeps it <= 2^52 */
		double t = dp_query_grid_scale(clip, k, eps_q);

		for (size_t q = 0; q < p; q++) {
			err = dp_noise_discrete_laplace(src, t, &noise[q]);
			if (err != 0)
				goto out;
		}
	}
	/* |sum| <= 2^52 and |noise| < 2^63: the total fits in __int128; the
	 * conversion to double and the scaling are post-processing. */
	for (size_t q = 0; q < p; q++) {
		__int128 tot = (__int128)(int64_t)sum[q] + noise[q];

		grad[q] = ldexp((double)tot, -k) / (double)n;
	}
	if (info != NULL) {
		info->grid_k = k;
		info->scale_b = dp_query_scale(n, clip, eps_q);
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
