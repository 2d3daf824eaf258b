/* SPDX-License-Identifier: Apache-2.0 */
/* Statistical helpers shared by the sampler tests (test_rng, test_noise,
 * test_noise_dgauss). */
#ifndef DP_TEST_STATS_H
#define DP_TEST_STATS_H

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/core/rng.h"

/* Upper tail of the chi-square distribution, Q(df/2, x/2), by the series
 * or the continued fraction of the regularized incomplete gamma function
 * (Numerical Recipes §6.2).  Checked in test_chi2_helper against the closed
 * forms for df = 1 and df = 2. */
static inline double chi2_sf(double df, double x)
{
	double a = df / 2, y = x / 2, gln = lgamma(a);

	if (y <= 0)
		return 1.0;
	if (y < a + 1) {
		double ap = a, sum = 1.0 / a, del = sum;

		for (int i = 0; i < 10000; i++) {
			ap += 1;
			del *= y / ap;
			sum += del;
			if (fabs(del) < fabs(sum) * 1e-16)
				break;
		}
		return 1.0 - sum * exp(-y + a * log(y) - gln);
	} else {
		double b = y + 1 - a, c = 1 / 1e-300, d = 1 / b, h = d;

		for (int i = 1; i < 10000; i++) {
			double an = -i * (i - a), del;

			b += 2;
			d = an * d + b;
			if (fabs(d) < 1e-300)
				d = 1e-300;
			c = b + an / c;
			if (fabs(c) < 1e-300)
				c = 1e-300;
			d = 1 / d;
			del = d * c;
			h *= del;
			if (fabs(del - 1) < 1e-16)
				break;
		}
		return exp(-y + a * log(y) - gln) * h;
	}
}

/* DKW inequality with Massart's constant: P(sup|F_n - F| > a) <= 2 exp(-2 n a^2)
 * for any distribution; the a giving false-failure probability alpha. */
static inline double dkw_bound(size_t n, double alpha)
{
	return sqrt(log(2 / alpha) / (2.0 * (double)n));
}

/* The base seed of a statistical test: DP_TEST_SEED if set, else fresh from
 * the CSPRNG, printed on stderr with the test's name so that a failure can
 * be replayed (docs/privacy.md §4).  0, or -1 if the CSPRNG fails. */
static inline int stats_base_seed(const char *name, uint64_t *seed)
{
	const char *env = getenv("DP_TEST_SEED");

	if (env != NULL && *env != '\0') {
		*seed = strtoull(env, NULL, 0);
	} else {
		dp_csprng *r;
		dp_bitsource s;
		int rc;

		if (dp_rng_csprng_new(&r) != 0)
			return -1;
		s = dp_rng_csprng_bits(r);
		rc = dp_rng_u64(&s, seed);
		dp_rng_csprng_destroy(r);
		if (rc != 0)
			return -1;
	}
	fprintf(stderr, "%s: DP_TEST_SEED=0x%016" PRIx64 "\n", name, *seed);
	return 0;
}

#endif
