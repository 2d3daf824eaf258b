/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the discrete Gaussian of common/core/noise.c (docs/noise.md §6).
 *
 * Statistical tests draw from the seeded simulator generator (base seed from
 * DP_TEST_SEED if set, else fresh from the CSPRNG, printed so a failure can
 * be replayed) and once from the CSPRNG itself.  Each threshold is chosen
 * so that a correct sampler fails it with probability <= 1e-6, as stated
 * next to it; the file as a whole (23 such checks) falsely fails with
 * probability < 3e-5.  DP_LONG_TESTS=1 multiplies the sample sizes by 50
 * (the figures of docs/noise.md §6 "Tests"). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/noise.h"
#include "common/core/rng.h"
#include "tests/unit/stats.h"
#include "tools/lib/simrng.h"

#define ALPHA 1e-6

static uint64_t base_seed;
static int scale = 1;  /* 50 with DP_LONG_TESTS=1 */
static dp_simrng sim;

static dp_bitsource sim_src(uint64_t salt)
{
	dp_simrng_seed(&sim, base_seed ^ (salt * UINT64_C(0x9e3779b97f4a7c15)));
	return dp_simrng_bitsource(&sim);
}

/* ---- bit sources ---- */

/* Serves the words pushed, then fails with DP_ERNG. */
struct words {
	uint32_t w[512];
	size_t len, used;  /* in words */
};

static int words_fill(void *ctx, void *buf, size_t len)
{
	struct words *s = ctx;

	if (len % 4 != 0 || len / 4 > s->len - s->used)
		return DP_ERNG;
	memcpy(buf, s->w + s->used, len);
	s->used += len / 4;
	return 0;
}

static void push(struct words *s, uint32_t v, int count)
{
	for (int i = 0; i < count; i++) {
		assert_true(s->len < sizeof(s->w) / sizeof(s->w[0]));
		s->w[s->len++] = v;
	}
}

/* An endless source of one byte value. */
static int const_fill(void *ctx, void *buf, size_t len)
{
	memset(buf, *(const unsigned char *)ctx, len);
	return 0;
}

/* Passes another source through and counts its fills by size. */
struct counter {
	dp_bitsource inner;
	size_t trial_bytes;    /* the size of one trial's fill */
	long trials, ties, other;
};

static int counter_fill(void *ctx, void *buf, size_t len)
{
	struct counter *c = ctx;

	if (len == c->trial_bytes)
		c->trials++;
	else if (len == 8)
		c->ties++;
	else
		c->other++;
	return c->inner.fill(c->inner.ctx, buf, len);
}

/* ---- the exact distribution, computed here independently ---- */

/* The proposal's rate: 1/t rounded down, t = floor(sigma) + 1, decided in
 * long double; and its number of geometric digits, #{i : lambda 2^i <= 700}. */
static double proposal_lambda(double sigma)
{
	double t = floor(sigma) + 1, l = 1 / t;

	if ((long double)l * t > 1.0L)
		l = nextafter(l, 0);
	return l;
}

static int proposal_digits(double sigma)
{
	double l = proposal_lambda(sigma);
	int n = 0;

	while (n < 63 && ldexp(l, n) <= 700)
		n++;
	return n;
}

/* pmf[j + L] = P(X = j) for |j| <= L = ceil(40 sigma) + 1, by direct
 * summation in long double (the mass beyond is below e^-800). */
static long double *exact_pmf(double sigma, int *L_out)
{
	int L = (int)ceil(40 * sigma) + 1;
	long double *pmf = malloc((2 * (size_t)L + 1) * sizeof(*pmf)), tot = 0;
	long double two_s2 = 2.0L * sigma * sigma;

	assert_non_null(pmf);
	for (int j = -L; j <= L; j++) {
		pmf[j + L] = expl(-(long double)j * j / two_s2);
		tot += pmf[j + L];
	}
	for (int j = -L; j <= L; j++)
		pmf[j + L] /= tot;
	*L_out = L;
	return pmf;
}

typedef int (*sampler_fn)(dp_bitsource *src, double sigma, int64_t *out);

static int dgauss(dp_bitsource *src, double sigma, int64_t *out)
{
	return dp_noise_discrete_gaussian(src, sigma, out);
}

/* Negative controls. */
static int dgauss_narrow(dp_bitsource *src, double sigma, int64_t *out)
{
	return dp_noise_discrete_gaussian(src, 0.95 * sigma, out);
}

static int proposal_only(dp_bitsource *src, double sigma, int64_t *out)
{
	return dp_noise_discrete_laplace(src, floor(sigma) + 1, out);
}

/* Chi-square p-value of n draws of `fn` against N_Z(0, sigma^2).  Bins are
 * runs of consecutive integers, each closed once its expected count
 * reaches max(20, n / 1000) (at most ~1,000 bins); the two tails beyond the
 * outermost bins are merged into them. */
static double chi2_dgauss(sampler_fn fn, dp_bitsource *s, double sigma, long n)
{
	int L, m = 0;
	long double *pmf = exact_pmf(sigma, &L);
	int *bin = malloc((2 * (size_t)L + 1) * sizeof(*bin));
	double *prob = calloc(2 * (size_t)L + 1, sizeof(double));
	double *counts = calloc(2 * (size_t)L + 1, sizeof(double));
	double target = fmax(20.0, (double)n / 1000), pv, chi2 = 0;
	long double acc = 0;

	assert_non_null(bin);
	assert_non_null(prob);
	assert_non_null(counts);
	for (int j = -L; j <= L; j++) {
		bin[j + L] = m;
		acc += pmf[j + L];
		if (acc * n >= target) {
			prob[m++] = (double)acc;
			acc = 0;
		}
	}
	if (acc > 0) {  /* the rest joins the last bin */
		for (int j = L; j >= -L && bin[j + L] == m; j--)
			bin[j + L] = m - 1;
		prob[m - 1] += (double)acc;
	}
	for (long i = 0; i < n; i++) {
		int64_t x;

		assert_int_equal(fn(s, sigma, &x), 0);
		x = x < -L ? -L : x > L ? L : x;
		counts[bin[x + L]]++;
	}
	for (int b = 0; b < m; b++) {
		double e = (double)n * prob[b];

		chi2 += (counts[b] - e) * (counts[b] - e) / e;
	}
	pv = chi2_sf(m - 1, chi2);
	fprintf(stderr, "chi2 sigma=%g n=%ld bins=%d chi2=%.1f p=%.3g\n", sigma, n, m, chi2, pv);
	free(pmf);
	free(bin);
	free(prob);
	free(counts);
	return pv;
}

/* ---- argument checks and error paths ---- */

static void test_invalid(void **state)
{
	struct words b = { .len = 0 };
	dp_bitsource s = { .fill = words_fill, .ctx = &b };
	unsigned char ones = 0xff;
	dp_bitsource c1 = { .fill = const_fill, .ctx = &ones };
	double bad[] = { 0.0, -1.0, NAN, INFINITY, -INFINITY };
	int64_t x = 12345;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(dp_noise_discrete_gaussian(&s, bad[i], &x), DP_EINVAL);
	assert_int_equal(dp_noise_discrete_gaussian(&s, nextafter(DP_NOISE_DGAUSS_SIGMA_MIN, 0), &x),
			 DP_ERANGE);
	assert_int_equal(dp_noise_discrete_gaussian(&s, nextafter(DP_NOISE_DGAUSS_SIGMA_MAX,
							      INFINITY), &x), DP_ERANGE);
	/* The source fails at once, or after a rejected trial. */
	assert_int_equal(dp_noise_discrete_gaussian(&s, 1.0, &x), DP_ERNG);
	push(&b, UINT32_MAX, 23);  /* sigma 1: Y = 0, V ~ 1 > p: rejected */
	assert_int_equal(dp_noise_discrete_gaussian(&s, 1.0, &x), DP_ERNG);
	assert_int_equal(b.used, 23);
	/* A source of all-one bits never accepts: refused after 1000 trials
	 * (each: ties on the acceptance word, decided against V > p). */
	assert_int_equal(dp_noise_discrete_gaussian(&c1, 1.0, &x), DP_ERNG);
	assert_true(x == 12345);
	/* Valid extremes. */
	{
		dp_bitsource r = sim_src(1);

		assert_int_equal(dp_noise_discrete_gaussian(&r, DP_NOISE_DGAUSS_SIGMA_MIN, &x), 0);
		assert_true(x == 0);
		assert_int_equal(dp_noise_discrete_gaussian(&r, DP_NOISE_DGAUSS_SIGMA_MAX, &x), 0);
		assert_true(llabs(x) < INT64_C(1) << 52);
	}
}

/* ---- known answers from crafted words ---- */

/* sigma = 1: t = 2, lambda = 1/2, 11 digits per geometric (0.5 * 2^10 <= 700
 * < 0.5 * 2^11), 23 words per trial; acceptance of y is
 * p(y) = exp(-(|y| - 1/2)^2 / 2), decided by the 23rd word V against
 * floor(p 2^32) (computed here in long double). */
static uint32_t head_of(long double p)
{
	return (uint32_t)floorl(p * 0x1p32L);
}

static void test_kat(void **state)
{
	const uint32_t h0 = head_of(expl(-0.125L));  /* |y| = 0 or 1 */
	const uint32_t h3 = head_of(expl(-3.125L));  /* |y| = 3 */
	struct words b = { .len = 0 };
	dp_bitsource s = { .fill = words_fill, .ctx = &b };
	int64_t x = -99;

	(void)state;
	assert_int_equal(proposal_digits(1.0), 11);
	/* Y = 0, V just below the head: accepted, 23 words. */
	push(&b, UINT32_MAX, 22);
	push(&b, h0 - 1, 1);
	assert_int_equal(dp_noise_discrete_gaussian(&s, 1.0, &x), 0);
	assert_true(x == 0);
	assert_int_equal(b.used, 23);
	/* Y = 0 rejected (V just above), then Y = 1 - 0 = 1 accepted. */
	b.len = b.used = 0;
	push(&b, UINT32_MAX, 22);
	push(&b, h0 + 1, 1);
	push(&b, 0, 1);             /* digit 0 of the first geometric: 1 */
	push(&b, UINT32_MAX, 21);
	push(&b, h0 - 1, 1);
	assert_int_equal(dp_noise_discrete_gaussian(&s, 1.0, &x), 0);
	assert_true(x == 1);
	assert_int_equal(b.used, 46);
	/* Y = 0 - 3 = -3: accepted below its own head, rejected above it. */
	for (int k = 0; k < 2; k++) {
		b.len = b.used = 0;
		push(&b, UINT32_MAX, 11);
		push(&b, 0, 2);             /* second geometric: digits 0, 1 */
		push(&b, UINT32_MAX, 9);
		push(&b, k == 0 ? h3 - 1 : h3 + 1, 1);
		x = -99;
		assert_int_equal(dp_noise_discrete_gaussian(&s, 1.0, &x), k == 0 ? 0 : DP_ERNG);
		assert_true(x == (k == 0 ? -3 : -99));
	}
	/* sigma = 0.5: t = 1, lambda = 1, 10 digits; p(0) = exp(-1/8). */
	b.len = b.used = 0;
	push(&b, UINT32_MAX, 20);
	push(&b, h0 - 1, 1);
	assert_int_equal(dp_noise_discrete_gaussian(&s, 0.5, &x), 0);
	assert_true(x == 0 && b.used == 21);
}

/* The accuracy premise of docs/noise.md §6 "Slack": exp(-z) for z in the
 * sampler's range [2^-52, 500] is within relative 2^-52 (1 ulp) of the true
 * value, checked on 2*10^5 points against an 80-bit evaluation. */
static void test_exp_premise(void **state)
{
	dp_bitsource s = sim_src(2);

	(void)state;
#if LDBL_MANT_DIG >= 64
	for (int it = 0; it < 200000; it++) {
		double u, z;
		long double ref;

		assert_int_equal(dp_rng_uniform(&s, &u), 0);
		z = ldexp(1.0 + u, (it % 61) - 52);  /* 2^-52 .. 2^9 */
		if (z > 500)
			continue;
		ref = expl(-(long double)z);
		assert_true(fabsl(exp(-z) - ref) <= 0x1p-52L * ref);
	}
#else
	skip();
#endif
}

/* ---- distribution ---- */

static void test_chi2(void **state)
{
	static const double sigmas[] = { 0.5, 1.0, 3.0, 20.0, 1000.0 };
	dp_csprng *r;
	dp_bitsource s;

	(void)state;
	for (int k = 0; k < 5; k++) {
		s = sim_src(10 + (uint64_t)k);
		/* p-value below 1e-6: false failure 1e-6 each. */
		assert_true(chi2_dgauss(dgauss, &s, sigmas[k], 100000L * scale) > ALPHA);
	}
	/* A scale that is not an integer plus a half, and one whose proposal
	 * rate 1/t is rounded down (t = 7), fed by the CSPRNG. */
	assert_int_equal(dp_rng_csprng_new(&r), 0);
	s = dp_rng_csprng_bits(r);
	assert_true(chi2_dgauss(dgauss, &s, 6.3, 100000L * scale) > ALPHA);
	dp_rng_csprng_destroy(r);
}

/* The same test must reject a sampler whose sigma is 5 % too small and the
 * proposal without its acceptance step.  With 10^5 draws the chi-square
 * excess (noncentrality) is about 500 for the narrow sampler at sigma = 3
 * and at sigma = 20 (19 and 107 bins) and over 10^5 for the proposal,
 * against 1e-6 critical values below 200: the controls pass by accident
 * with probability far below 1e-6. */
static void test_chi2_negative_control(void **state)
{
	dp_bitsource s;

	(void)state;
	s = sim_src(20);
	assert_true(chi2_dgauss(dgauss_narrow, &s, 3.0, 100000) < ALPHA);
	s = sim_src(21);
	assert_true(chi2_dgauss(dgauss_narrow, &s, 20.0, 100000) < ALPHA);
	s = sim_src(22);
	assert_true(chi2_dgauss(proposal_only, &s, 3.0, 100000) < ALPHA);
}

/* Mean 0 and variance against the exact pmf, 6 standard errors (two-sided
 * normal tail 2e-9; at these sample sizes false failure << 1e-6). */
static void test_moments(void **state)
{
	static const double sigmas[] = { 0.7, 5.0, 1e4, 0x1p40 };

	(void)state;
	for (int k = 0; k < 4; k++) {
		double sigma = sigmas[k], var = sigma * sigma, mu4 = 3 * var * var;
		long n = 100000L * scale;
		dp_bitsource s = sim_src(30 + (uint64_t)k);
		long double sum = 0, sum2 = 0;

		if (sigma < 100) {  /* exact moments by summation */
			int L;
			long double *pmf = exact_pmf(sigma, &L), v = 0, m4 = 0;

			for (int j = -L; j <= L; j++) {
				v += pmf[j + L] * j * j;
				m4 += pmf[j + L] * j * j * (long double)j * j;
			}
			var = (double)v;
			mu4 = (double)m4;
			free(pmf);
		}  /* else the continuous moments, exact to ~1e-(10^4) relative */
		for (long i = 0; i < n; i++) {
			int64_t x;

			assert_int_equal(dp_noise_discrete_gaussian(&s, sigma, &x), 0);
			sum += x;
			sum2 += (long double)x * x;
		}
		assert_true(fabsl(sum / n) < 6 * sqrt(var / n));
		assert_true(fabsl(sum2 / n - var) < 6 * sqrt((mu4 - var * var) / n));
	}
}

/* ---- randomness consumed against the value ---- */

/* Every fill is one trial of exactly 2n + 1 words or an 8-byte tie word;
 * the number of trials is independent of the value: chi-square test of
 * independence between the trial count (1, 2, 3, >= 4) and |value| in
 * three classes cut at the exact pmf's terciles (df = 6, false failure
 * 1e-6); and the mean trial count is 1/Z, Z the acceptance probability
 * tanh(lambda/2) e^(-sigma^2 lambda^2 / 2) sum_j e^(-j^2/(2 sigma^2)),
 * within 6 standard errors. */
static void bytes_vs_value(double sigma, long n, uint64_t salt)
{
	int L, n_dig = proposal_digits(sigma);
	long double *pmf = exact_pmf(sigma, &L), cum = 0, theta = 0;
	struct counter c = { .inner = sim_src(salt), .trial_bytes = (2 * (size_t)n_dig + 1) * 4 };
	dp_bitsource s = { .fill = counter_fill, .ctx = &c };
	double lam = proposal_lambda(sigma), z, cnt[4][3] = { { 0 } }, row[4] = { 0 }, col[3] = { 0 };
	double chi2 = 0, tsum = 0, tsum2 = 0, pv;
	int cut1 = -1, cut2 = -1;

	/* |X| <= cut1 with probability ~1/3, cut1 < |X| <= cut2 ~1/3. */
	for (int a = 0; a <= L; a++) {
		cum += a == 0 ? pmf[L] : 2 * pmf[L + a];
		theta += a == 0 ? 1 : 2 * expl(-(long double)a * a / (2.0L * sigma * sigma));
		if (cut1 < 0 && cum >= 1.0L / 3)
			cut1 = a;
		if (cut2 < 0 && cum >= 2.0L / 3)
			cut2 = a;
	}
	z = (double)(tanhl(lam / 2.0L) * expl(-(long double)sigma * sigma * lam * lam / 2) * theta);
	free(pmf);
	for (long i = 0; i < n; i++) {
		long before = c.trials, tr;
		int64_t x, ax;
		int cls;

		assert_int_equal(dp_noise_discrete_gaussian(&s, sigma, &x), 0);
		tr = c.trials - before;
		assert_true(tr >= 1);
		tsum += (double)tr;
		tsum2 += (double)tr * (double)tr;
		ax = llabs(x);
		cls = ax <= cut1 ? 0 : ax <= cut2 ? 1 : 2;
		cnt[tr >= 4 ? 3 : tr - 1][cls]++;
	}
	assert_int_equal(c.other, 0);
	/* A tie has probability 2^-32 per word: over these few 10^6 words,
	 * more than 3 ties happen with probability < 1e-7. */
	assert_true(c.ties <= 3);
	for (int r = 0; r < 4; r++)
		for (int k = 0; k < 3; k++) {
			row[r] += cnt[r][k];
			col[k] += cnt[r][k];
		}
	for (int r = 0; r < 4; r++)
		for (int k = 0; k < 3; k++) {
			double e = row[r] * col[k] / (double)n;

			if (e > 0)
				chi2 += (cnt[r][k] - e) * (cnt[r][k] - e) / e;
		}
	pv = chi2_sf(6, chi2);
	fprintf(stderr, "bytes sigma=%g n=%ld words/trial=%d mean trials=%.4f (1/Z=%.4f) "
		"independence chi2=%.2f p=%.3g\n", sigma, n, 2 * n_dig + 1, tsum / (double)n, 1 / z,
		chi2, pv);
	assert_true(pv > ALPHA);
	{
		double mean = tsum / (double)n, var = (1 - z) / (z * z);  /* geometric trials */

		assert_true(fabs(mean - 1 / z) < 6 * sqrt(var / (double)n));
		(void)tsum2;
	}
}

static void test_bytes_vs_value(void **state)
{
	(void)state;
	bytes_vs_value(1.0, 100000L * scale, 40);
	bytes_vs_value(20.0, 100000L * scale, 41);
	bytes_vs_value(1000.0, 50000L * scale, 42);
}

static int setup(void **state)
{
	const char *lg = getenv("DP_LONG_TESTS");

	(void)state;
	if (lg != NULL && strcmp(lg, "1") == 0)
		scale = 50;
	fprintf(stderr, "test_noise_dgauss: scale %d\n", scale);
	return stats_base_seed("test_noise_dgauss", &base_seed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_kat),
		cmocka_unit_test(test_exp_premise),
		cmocka_unit_test(test_chi2),
		cmocka_unit_test(test_chi2_negative_control),
		cmocka_unit_test(test_moments),
		cmocka_unit_test(test_bytes_vs_value),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
