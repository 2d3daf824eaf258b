/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for common/core/noise.c: the geometric and discrete Laplace samplers and
 * the grid exponent (docs/privacy.md §4).
 *
 * Statistical tests draw from the seeded simulator generator (base seed from
 * DP_TEST_SEED if set, else fresh from the CSPRNG, printed so a failure can
 * be replayed) and, in one test per sampler, from the CSPRNG itself.  Each
 * threshold is chosen so that a correct sampler fails it with probability
 * <= 1e-6, as stated next to it; the suite as a whole (about 20 such
 * checks) falsely fails with probability < 3e-5. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/noise.h"
#include "tests/unit/stats.h"
#include "common/core/rng.h"
#include "tools/lib/simrng.h"

#define ALPHA 1e-6

static uint64_t base_seed;

/* ---- bit sources ---- */

/* Replays a byte string built with push32/push64 (host byte order, the
 * order the sampler reads words in); DP_ERNG once exhausted. */
struct bytes {
	unsigned char b[8192];
	size_t len, used;
};

static void push32(struct bytes *s, uint32_t v)
{
	assert_true(s->len + 4 <= sizeof(s->b));
	memcpy(s->b + s->len, &v, 4);
	s->len += 4;
}

static void push64(struct bytes *s, uint64_t v)
{
	assert_true(s->len + 8 <= sizeof(s->b));
	memcpy(s->b + s->len, &v, 8);
	s->len += 8;
}

static int bytes_fill(void *ctx, void *buf, size_t len)
{
	struct bytes *s = ctx;

	if (len > s->len - s->used)
		return DP_ERNG;
	memcpy(buf, s->b + s->used, len);
	s->used += len;
	return 0;
}

static dp_bitsource bytes_src(struct bytes *s)
{
	dp_bitsource src = { .fill = bytes_fill, .ctx = s };

	return src;
}

/* Passes another source through and records what it served. */
struct recorder {
	dp_bitsource inner;
	struct bytes rec;
};

static int recorder_fill(void *ctx, void *buf, size_t len)
{
	struct recorder *r = ctx;
	int rc = r->inner.fill(r->inner.ctx, buf, len);

	if (rc == 0) {
		assert_true(r->rec.len + len <= sizeof(r->rec.b));
		memcpy(r->rec.b + r->rec.len, buf, len);
		r->rec.len += len;
	}
	return rc;
}

static dp_simrng sim;

static dp_bitsource sim_src(uint64_t salt)
{
	dp_simrng_seed(&sim, base_seed ^ (salt * UINT64_C(0x9e3779b97f4a7c15)));
	return dp_simrng_bitsource(&sim);
}

/* ---- statistics helpers ---- */


/* Chi-square goodness of fit of counts[0..m) against probabilities
 * prob[0..m) (summing to 1); returns the p-value (df = m - 1). */
static double chi2_pvalue(const double *counts, const double *prob, int m, double n)
{
	double chi2 = 0;

	for (int b = 0; b < m; b++) {
		double e = n * prob[b];

		chi2 += (counts[b] - e) * (counts[b] - e) / e;
	}
	return chi2_sf(m - 1, chi2);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}


static double laplace_cdf(double x)
{
	return x < 0 ? 0.5 * exp(x) : 1 - 0.5 * exp(-x);
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static void test_helpers(void **state)
{
	(void)state;
	for (double x = 0.5; x < 80; x *= 1.7) {
		assert_true(fabs(chi2_sf(2, x) / exp(-x / 2) - 1) < 1e-9);
		assert_true(fabs(chi2_sf(1, x) / erfc(sqrt(x / 2)) - 1) < 1e-9);
	}
	assert_int_equal(floor_div(-1, 4), -1);
	assert_int_equal(floor_div(-4, 4), -1);
	assert_int_equal(floor_div(-5, 4), -2);
	assert_int_equal(floor_div(3, 4), 0);
}

/* ---- argument checks and error paths ---- */

static void test_invalid(void **state)
{
	struct bytes b = { .len = 0 };
	dp_bitsource s = bytes_src(&b);
	int64_t x = 12345;
	double bad[] = { 0.0, -1.0, NAN, INFINITY, -INFINITY };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(dp_noise_geometric(&s, bad[i], &x), DP_EINVAL);
		assert_int_equal(dp_noise_discrete_laplace(&s, bad[i], &x), DP_EINVAL);
	}
	assert_int_equal(dp_noise_geometric(&s, 0x1p-54, &x), DP_ERANGE);
	assert_int_equal(dp_noise_discrete_laplace(&s, nextafter(0x1p53, INFINITY), &x), DP_ERANGE);
	assert_true(x == 12345);
	/* The source's failure is reported, output untouched. */
	assert_int_equal(dp_noise_geometric(&s, 1.0, &x), DP_ERNG);
	assert_int_equal(dp_noise_discrete_laplace(&s, 1.0, &x), DP_ERNG);
	assert_true(x == 12345);
	/* A tie needs one more word; if the source fails there, same. */
	b.len = b.used = 0;
	for (int i = 0; i < 10; i++)
		push32(&b, 0);  /* lambda = 1: digit 5 ties (p < 2^-32) */
	assert_int_equal(dp_noise_geometric(&s, 1.0, &x), DP_ERNG);
	assert_true(x == 12345);
	/* Extremes that are valid: the largest scale, and a subnormal one
	 * (lambda 2^0 > 700: no digit can be 1, no word drawn, output 0). */
	b.len = b.used = 0;
	assert_int_equal(dp_noise_discrete_laplace(&s, 1e-320, &x), 0);
	assert_true(x == 0);
	assert_int_equal(b.used, 0);
	{
		dp_bitsource r = sim_src(1);

		assert_int_equal(dp_noise_discrete_laplace(&r, 0x1p53, &x), 0);
		assert_int_equal(dp_noise_geometric(&r, 0x1p-53, &x), 0);
		assert_true(x >= 0);
	}
}

/* ---- structure: known answers from crafted words ---- */

/* Digit i of the geometric is 1 with probability p_i = 1/(1+exp(lambda 2^i))
 * and digits with lambda 2^i > 700 are always 0.  For lambda = 1 that is
 * digits 0..9 (2^9 = 512 <= 700 < 1024): 10 words of 32 bits. */
static void test_kat_extremes(void **state)
{
	struct bytes b = { .len = 0 };
	dp_bitsource s = bytes_src(&b);
	int64_t x = -1;

	(void)state;
	/* All-ones words exceed every probability: X = 0, 10 words read. */
	memset(b.b, 0xff, 160);
	b.len = 160;
	assert_int_equal(dp_noise_geometric(&s, 1.0, &x), 0);
	assert_true(x == 0);
	assert_int_equal(b.used, 40);
	assert_int_equal(dp_noise_discrete_laplace(&s, 1.0, &x), 0);
	assert_true(x == 0);
	assert_int_equal(b.used, 120);

	/* All-zero words lie below every probability: every possible digit is
	 * 1, X = 2^10 - 1.  Digits 0..4 have p >= 2^-32 and are decided by
	 * their word; digits 5..9 have p < 2^-32, tie on it and read 64-bit
	 * words until the chunk holding p's leading binary digit at position
	 * P = floor(-log2 p) + 1 (p ~ e^-(2^i)):
	 *   i=5: P=47 -> 1 word, i=6: P=93 -> 1, i=7: P=185 -> 3,
	 *   i=8: P=370 -> 6, i=9: P=739 -> 12   (chunks 33..96, 97..160, ...)
	 * Total: 40 + 8 * 23 = 224 bytes. */
	memset(b.b, 0, 512);
	b.len = 512;
	b.used = 0;
	assert_int_equal(dp_noise_geometric(&s, 1.0, &x), 0);
	assert_true(x == 1023);
	assert_int_equal(b.used, 224);

	/* lambda = 50: digits 0..3 (50 * 8 <= 700 < 50 * 16) -> 15. */
	b.used = 0;
	assert_int_equal(dp_noise_geometric(&s, 50.0, &x), 0);
	assert_true(x == 15);
}

/* lambda = ln 3: p_0 = 1/4, p_1 = 1/10, p_2 = 1/82, p_3 = 1/6562, the
 * uniform V of digit i is w_i / 2^32 (10 digits: ln3 * 512 <= 700). */
static void test_kat_ln3(void **state)
{
	struct bytes b = { .len = 0 };
	dp_bitsource s = bytes_src(&b);
	const double lam = log(3.0);
	int64_t x = -1;

	(void)state;
	push32(&b, UINT32_C(3) << 28);  /* V = 0.1875 < 1/4     -> 1 */
	push32(&b, UINT32_C(1) << 29);  /* V = 0.125  > 1/10    -> 0 */
	push32(&b, UINT32_C(1) << 24);  /* V = 2^-8   < 1/82    -> 1 */
	push32(&b, UINT32_C(1) << 19);  /* V = 2^-13  < 1/6562  -> 1 */
	for (int i = 4; i < 10; i++)
		push32(&b, UINT32_MAX);     /* -> 0 */
	assert_int_equal(dp_noise_geometric(&s, lam, &x), 0);
	assert_true(x == 13);
	assert_int_equal(b.used, 40);

	/* Discrete Laplace = first geometric - second: 13 - 1 = 12. */
	b.used = 0;
	push32(&b, 0);                  /* V = 0 < 1/4 -> 1 */
	for (int i = 1; i < 10; i++)
		push32(&b, UINT32_MAX);
	assert_int_equal(dp_noise_discrete_laplace(&s, 1 / lam, &x), 0);
	assert_true(x == 12);
	assert_int_equal(b.used, 80);
}

/* The Bernoulli decision is exact for the double probability: with the
 * first 32 bits of V equal to those of p, the next 64 bits decide.  p's
 * expansion is derived here independently: r = p - head/2^32 is exact and
 * r * 2^96 is an integer (p = m 2^-54 for p in [1/4, 1/2)).  lambda = 0.3:
 * p_0 = 0.4256, 12 digits (0.3 * 2^11 <= 700). */
static void test_kat_exact_tie(void **state)
{
	const double lam = 0.3;
	const double p = 1.0 / (1.0 + exp(lam));
	const uint32_t head = (uint32_t)floor(ldexp(p, 32));
	const uint64_t tail = (uint64_t)ldexp(p - ldexp(head, -32), 96);
	const struct {
		uint64_t w;
		int64_t x;
	} cases[] = { { tail - 1, 1 }, { tail, 0 }, { tail + 1, 0 }, { 0, 1 }, { UINT64_MAX, 0 } };

	(void)state;
	assert_true(p >= 0.25 && p < 0.5);
	assert_true(ldexp((double)tail, -96) == p - ldexp(head, -32));
	assert_true(tail > 0 && tail < UINT64_MAX);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct bytes b = { .len = 0 };
		dp_bitsource s = bytes_src(&b);
		int64_t x = -1;

		push32(&b, head);
		for (int i = 1; i < 12; i++)
			push32(&b, UINT32_MAX);
		push64(&b, cases[c].w);
		push64(&b, 0);  /* must not be read: p has no digits past 96 */
		assert_int_equal(dp_noise_geometric(&s, lam, &x), 0);
		assert_true(x == cases[c].x);
		assert_int_equal(b.used, 56);
	}
}

/* Outputs are a pure function of the bytes consumed, and the noisy value
 * shifts exactly with the input. */
static void test_pure_and_shift(void **state)
{
	static const double ts[] = { 0.3, 1.0, 17.5, 1e3, 0x1p20, 1e12, 0x1p52 };
	static const int64_t xs[] = { 0, 1, -7, INT64_C(1) << 52, -(INT64_C(1) << 52) };
	static const int64_t deltas[] = { 1, 2, 1000, INT64_C(1) << 40 };
	struct recorder rec;

	(void)state;
	rec.inner = sim_src(2);
	for (int it = 0; it < 20000; it++) {
		double t = ts[it % 7];
		dp_bitsource rs = { .fill = recorder_fill, .ctx = &rec };
		dp_bitsource ps;
		int64_t n1, n2;

		rec.rec.len = rec.rec.used = 0;
		assert_int_equal(dp_noise_discrete_laplace(&rs, t, &n1), 0);
		/* Replaying exactly those bytes gives the same value and
		 * consumes all of them. */
		ps = bytes_src(&rec.rec);
		assert_int_equal(dp_noise_discrete_laplace(&ps, t, &n2), 0);
		assert_true(n1 == n2);
		assert_int_equal(rec.rec.used, rec.rec.len);
		/* M(x) = x + noise with the same bits: M(x + d) - M(x) = d. */
		for (size_t i = 0; i < 5; i++) {
			for (size_t j = 0; j < 4; j++) {
				int64_t a, b2;

				assert_false(__builtin_add_overflow(xs[i], n1, &a));
				assert_false(__builtin_add_overflow(xs[i] + deltas[j], n1, &b2));
				assert_true(b2 - a == deltas[j]);
			}
		}
	}
	/* The same for the geometric, interleaving lambdas (the per-thread
	 * table cache must not make the output depend on earlier calls). */
	for (int it = 0; it < 2000; it++) {
		double lam = it % 2 ? 0.001 : 2.5;
		dp_bitsource rs = { .fill = recorder_fill, .ctx = &rec };
		dp_bitsource ps;
		int64_t g1, g2;

		rec.rec.len = rec.rec.used = 0;
		assert_int_equal(dp_noise_geometric(&rs, lam, &g1), 0);
		assert_int_equal(dp_noise_discrete_laplace(&rs, 3.0, &g2), 0);
		ps = bytes_src(&rec.rec);
		assert_int_equal(dp_noise_geometric(&ps, lam, &g2), 0);
		assert_true(g1 == g2 && g1 >= 0);
	}
}

/* The accuracy premise of docs/noise.md: each digit probability
 * 1/(1 + exp(x)) is within relative 2^-51 of its true value, x = lambda 2^i
 * <= 700 (here checked against an 80-bit long double evaluation, itself
 * accurate to ~2^-63). */
static void test_exp_premise(void **state)
{
	dp_bitsource s = sim_src(3);

	(void)state;
#if LDBL_MANT_DIG >= 64
	for (int it = 0; it < 200000; it++) {
		double u, x;
		long double ref, got;

		assert_int_equal(dp_rng_uniform(&s, &u), 0);
		x = ldexp(1.0 + u, (it % 62) - 53);  /* 2^-53 .. 2^9 */
		if (x > 700)
			continue;
		ref = 1.0L / (1.0L + expl((long double)x));
		got = 1.0 / (1.0 + exp(x));
		assert_true(fabsl(got - ref) <= 0x1p-51L * ref);
	}
#else
	skip();
#endif
}

/* ---- distribution ---- */

static void chi2_geometric(dp_bitsource *s, double lam, int n)
{
	double counts[512] = { 0 }, prob[512];
	double q = exp(-lam), p1 = -expm1(-lam);
	int m = 0;

	/* Bins j = 0..J-1 with expected count >= 20, then the tail X >= J. */
	while (m < 510 && n * p1 * pow(q, m) >= 20) {
		prob[m] = p1 * pow(q, m);
		m++;
	}
	prob[m] = pow(q, m);  /* P(X >= J) */
	m++;
	for (int i = 0; i < n; i++) {
		int64_t x;

		assert_int_equal(dp_noise_geometric(s, lam, &x), 0);
		assert_true(x >= 0);
		counts[x < m - 1 ? x : m - 1]++;
	}
	/* p-value below 1e-6: false failure 1e-6. */
	assert_true(chi2_pvalue(counts, prob, m, n) > ALPHA);
}

static void test_chi2_geometric(void **state)
{
	dp_csprng *r;
	dp_bitsource s;

	(void)state;
	s = sim_src(10);
	chi2_geometric(&s, 0.1, 1000000);
	s = sim_src(11);
	chi2_geometric(&s, 1.0, 1000000);
	s = sim_src(12);
	chi2_geometric(&s, 3.0, 1000000);
	/* The production path: the same test fed by the CSPRNG. */
	assert_int_equal(dp_rng_csprng_new(&r), 0);
	s = dp_rng_csprng_bits(r);
	chi2_geometric(&s, 0.7, 1000000);
	dp_rng_csprng_destroy(r);
}

static void chi2_dlaplace(dp_bitsource *s, double t, int n)
{
	/* P(j) = c q^|j|, c = (1-q)/(1+q); P(X >= J) = q^J / (1+q), J >= 1. */
	double lam = 1 / t, q = exp(-lam), c = tanh(lam / 2);
	double counts[1024] = { 0 }, prob[1024];
	int J = 1, m;

	while (J < 500 && n * c * pow(q, J) >= 20)
		J++;
	/* Bins: X <= -J, -J+1 .. J-1, X >= J. */
	m = 2 * J + 1;
	prob[0] = prob[m - 1] = pow(q, J) / (1 + q);
	for (int j = -J + 1; j < J; j++)
		prob[j + J] = c * pow(q, abs(j));
	for (int i = 0; i < n; i++) {
		int64_t x;

		assert_int_equal(dp_noise_discrete_laplace(s, t, &x), 0);
		counts[x <= -J ? 0 : x >= J ? m - 1 : x + J]++;
	}
	assert_true(chi2_pvalue(counts, prob, m, n) > ALPHA);  /* false failure 1e-6 */
}

static void test_chi2_dlaplace(void **state)
{
	dp_csprng *r;
	dp_bitsource s;

	(void)state;
	s = sim_src(20);
	chi2_dlaplace(&s, 0.5, 1000000);
	s = sim_src(21);
	chi2_dlaplace(&s, 4.0, 1000000);
	assert_int_equal(dp_rng_csprng_new(&r), 0);
	s = dp_rng_csprng_bits(r);
	chi2_dlaplace(&s, 1.0, 1000000);
	dp_rng_csprng_destroy(r);
}

/* Large t: D/t against the continuous Laplace(0,1) CDF G.  The discrete
 * CDF F of D/t differs from G by at most 1/(4t) at lattice points and by
 * a further density * step <= 1/(2t) between them, so sup|F - G| < 1/t and
 * the KS statistic exceeds DKW(1e-6) + 1/t with probability <= 1e-6. */
static void test_ks_large_t(void **state)
{
	enum { N = 1000000 };
	const double t = 0x1p20;
	int64_t *x = malloc(N * sizeof(*x));
	dp_bitsource s = sim_src(30);
	double d = 0;

	(void)state;
	assert_non_null(x);
	for (int i = 0; i < N; i++)
		assert_int_equal(dp_noise_discrete_laplace(&s, t, &x[i]), 0);
	qsort(x, N, sizeof(*x), cmp_i64);
	for (int i = 0; i < N; i++) {
		double g = laplace_cdf((double)x[i] / t);

		d = fmax(d, fmax((double)(i + 1) / N - g, g - (double)i / N));
	}
	assert_true(d < dkw_bound(N, ALPHA) + 1 / t);
	free(x);
}

/* ---- moments ---- */

/* 6 standard errors: two-sided normal tail 2e-9; at N = 10^6 the skewness
 * correction to that is negligible, so false failure << 1e-6. */
static void test_moments_dlaplace(void **state)
{
	static const double ts[] = { 0.3, 1e3, 1e12 };
	enum { N = 1000000 };

	(void)state;
	for (int k = 0; k < 3; k++) {
		double t = ts[k], lam = 1 / t;
		double q = exp(-lam), p = -expm1(-lam);
		/* D = G1 - G2: Var = 2q/p^2; fourth central moment
		 * (24 q^2 + 2 p^2 q) / p^4 (cumulants of the geometric). */
		double var = 2 * q / (p * p);
		double mu4 = (24 * q * q + 2 * p * p * q) / (p * p * p * p);
		dp_bitsource s = sim_src(40 + k);
		long double sum = 0, sum2 = 0;

		for (int i = 0; i < N; i++) {
			int64_t x;

			assert_int_equal(dp_noise_discrete_laplace(&s, t, &x), 0);
			sum += x;
			sum2 += (long double)x * x;
		}
		/* mean (known 0) and the variance estimator sum x^2 / N,
		 * whose standard error is sqrt((mu4 - var^2) / N). */
		assert_true(fabsl(sum / N) < 6 * sqrt(var / N));
		assert_true(fabsl(sum2 / N - var) < 6 * sqrt((mu4 - var * var) / N));
		/* For large t this is 2 t^2 (Laplace). */
		if (t >= 1e3)
			assert_true(fabs(var / (2 * t * t) - 1) < 1e-3);
	}
}

/* A tiny lambda (mean ~ 2^40 and ~ 2^53): mean and variance of the
 * geometric, q/p and q/p^2, fourth central moment (9 + p^2/q) sigma^4. */
static void moments_geometric(dp_bitsource *s, double lam, int n)
{
	double q = exp(-lam), p = -expm1(-lam);
	double mean = q / p, var = q / (p * p), mu4 = (9 + p * p / q) * var * var;
	long double sum = 0, sum2 = 0;

	for (int i = 0; i < n; i++) {
		int64_t x;

		assert_int_equal(dp_noise_geometric(s, lam, &x), 0);
		assert_true(x >= 0);
		sum += x;
		sum2 += ((long double)x - mean) * ((long double)x - mean);
	}
	assert_true(fabsl(sum / n - mean) < 6 * sqrt(var / n));
	assert_true(fabsl(sum2 / n - var) < 6 * sqrt((mu4 - var * var) / n));
}

static void test_moments_tiny_lambda(void **state)
{
	dp_bitsource s;

	(void)state;
	s = sim_src(50);
	moments_geometric(&s, 0x1p-40, 1000000);
	s = sim_src(51);
	moments_geometric(&s, DP_NOISE_LAMBDA_MIN, 200000);
}

/* ---- privacy: empirical (eps, delta) check ---- */

/* In the style of Google's VerifyApproximateDp: the hockey-stick divergence
 * sum_b max(0, P_a(b) - e^eps P_b(b)) over histogram buckets, estimated
 * from samples, must be below delta + tol in both directions.
 *
 * Tolerance: for empirical bucket frequencies, L1 = sum_b |phat_b - p_b|
 * has E[L1] <= sqrt(m/N) (Cauchy-Schwarz) and bounded differences 2/N, so
 * P(L1 > sqrt(m/N) + a) <= exp(-N a^2 / 2) (McDiarmid).  The estimate is
 * off by at most (L1_a + e^eps L1_b) / 2 (a max over sets of buckets), so
 * with a = sqrt(2 ln(2/alpha) / N),
 *     tol = (1 + e^eps) / 2 * (sqrt(m/N) + a)
 * is exceeded with probability <= alpha in either direction.  The same
 * event bounds the estimate from below, so a mechanism whose true
 * divergence exceeds 2 tol is rejected except with probability alpha. */
static int verify_dp(const int64_t *a, const int64_t *b, int n, int64_t width,
                     int half, double eps, double delta, double *hs_out)
{
	int m = 2 * half + 1;
	double *ha = calloc((size_t)m, sizeof(double)), *hb = calloc((size_t)m, sizeof(double));
	double hab = 0, hba = 0, tol, e = exp(eps);

	assert_non_null(ha);
	assert_non_null(hb);
	for (int i = 0; i < n; i++) {
		int64_t ka = floor_div(a[i], width), kb = floor_div(b[i], width);

		ka = ka < -half ? -half : ka > half ? half : ka;
		kb = kb < -half ? -half : kb > half ? half : kb;
		ha[ka + half] += 1.0 / n;
		hb[kb + half] += 1.0 / n;
	}
	for (int k = 0; k < m; k++) {
		hab += fmax(0, ha[k] - e * hb[k]);
		hba += fmax(0, hb[k] - e * ha[k]);
	}
	free(ha);
	free(hb);
	tol = (1 + e) / 2 * (sqrt((double)m / n) + sqrt(2 * log(2 / ALPHA) / n));
	*hs_out = fmax(hab, hba);
	return hab < delta + tol && hba < delta + tol;
}

/* M(x) = x + DLap(t) on inputs x = 0 and x = delta_in, N samples each. */
static void sample_pair(dp_bitsource *s, double t, int64_t delta_in, int n,
                        int64_t *a, int64_t *b)
{
	for (int i = 0; i < n; i++) {
		int64_t z;

		assert_int_equal(dp_noise_discrete_laplace(s, t, &z), 0);
		a[i] = 0 + z;
		assert_int_equal(dp_noise_discrete_laplace(s, t, &z), 0);
		b[i] = delta_in + z;
	}
}

static void test_privacy(void **state)
{
	enum { N = 1000000 };
	int64_t *a = malloc(N * sizeof(*a)), *b = malloc(N * sizeof(*b));
	dp_bitsource s = sim_src(60);
	double hs;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);

	/* Small scale: Delta = 1 grid unit, eps = 1, t = Delta/eps = 1;
	 * buckets are single values in [-20, 20] (tails merged), m = 41,
	 * tol = 0.022. */
	sample_pair(&s, 1.0, 1, N, a, b);
	assert_true(verify_dp(a, b, N, 1, 20, 1.0, 0.0, &hs));
	/* Negative control: scale divided by 1.5 while claiming eps = 1 (the
	 * real eps is 1.5).  True divergence over these buckets:
	 * (1 - e^-0.5) / (1 + e^-1.5) = 0.32 > 2 tol: must be rejected. */
	sample_pair(&s, 1.0 / 1.5, 1, N, a, b);
	assert_false(verify_dp(a, b, N, 1, 20, 1.0, 0.0, &hs));
	assert_true(hs > 0.25);

	/* Large scale (tiny lambda = 2^-20): Delta = 2^19, eps = 0.5,
	 * t = 2^20; buckets of width t/4 over [-12t, 12t], m = 97,
	 * tol = 0.020. */
	sample_pair(&s, 0x1p20, INT64_C(1) << 19, N, a, b);
	assert_true(verify_dp(a, b, N, INT64_C(1) << 18, 48, 0.5, 0.0, &hs));
	/* Control (real eps 0.75): divergence on the set {y < 0} alone is
	 * 1/2 - e^0.5 e^-0.75 / 2 = 0.11 > 2 tol. */
	sample_pair(&s, 0x1p20 / 1.5, INT64_C(1) << 19, N, a, b);
	assert_false(verify_dp(a, b, N, INT64_C(1) << 18, 48, 0.5, 0.0, &hs));
	assert_true(hs > 0.07);

	free(a);
	free(b);
}

/* ---- grid exponent ---- */

static void test_grid(void **state)
{
	int k = 1234;

	(void)state;
	/* Expected values worked by hand from the two conditions
	 * n clip 2^k <= 2^52 and 2 clip 2^k / eps <= 2^52, capped at 40. */
	assert_int_equal(dp_noise_grid_exponent(1, 1.0, 1.0, &k), 0);
	assert_int_equal(k, 40);                 /* 52 and 51, capped */
	assert_int_equal(dp_noise_grid_exponent(4096, 1.0, INFINITY, &k), 0);
	assert_int_equal(k, 40);                 /* 2^12 2^40 = 2^52 */
	assert_int_equal(dp_noise_grid_exponent(4097, 1.0, INFINITY, &k), 0);
	assert_int_equal(k, 39);
	assert_int_equal(dp_noise_grid_exponent(4096, 1.0 + 0x1p-52, INFINITY, &k), 0);
	assert_int_equal(k, 39);                 /* just over 2^52 at 40 */
	assert_int_equal(dp_noise_grid_exponent(1, 1.0, 0x1p-20, &k), 0);
	assert_int_equal(k, 31);                 /* 2^(1+k+20) <= 2^52 */
	assert_int_equal(dp_noise_grid_exponent(1, 1.0, 0x1p-11, &k), 0);
	assert_int_equal(k, 40);                 /* equality allowed */
	assert_int_equal(dp_noise_grid_exponent(1, 1.0, nextafter(0x1p-11, 0), &k), 0);
	assert_int_equal(k, 39);
	assert_int_equal(dp_noise_grid_exponent(1, 1.0, 1e-5, &k), 0);
	assert_int_equal(k, 34);                 /* 2^52/2e5 = 2^34.39 */
	assert_int_equal(dp_noise_grid_exponent(1000000, 0.5, 0.01, &k), 0);
	assert_int_equal(k, 33);                 /* 2^52/5e5 = 2^33.07 */
	assert_int_equal(dp_noise_grid_exponent(1000, 1e300, INFINITY, &k), 0);
	assert_int_equal(k, -955);               /* 52 - log2(1e303) = -954.54 */

	k = 1234;
	assert_int_equal(dp_noise_grid_exponent(SIZE_MAX, DBL_MAX, INFINITY, &k), DP_ERANGE);
	assert_int_equal(dp_noise_grid_exponent(1, 1.0, DBL_TRUE_MIN, &k), DP_ERANGE);
	assert_int_equal(dp_noise_grid_exponent(0, 1.0, 1.0, &k), DP_EINVAL);
	assert_int_equal(dp_noise_grid_exponent(1, 0.0, 1.0, &k), DP_EINVAL);
	assert_int_equal(dp_noise_grid_exponent(1, -1.0, 1.0, &k), DP_EINVAL);
	assert_int_equal(dp_noise_grid_exponent(1, NAN, 1.0, &k), DP_EINVAL);
	assert_int_equal(dp_noise_grid_exponent(1, INFINITY, 1.0, &k), DP_EINVAL);
	assert_int_equal(dp_noise_grid_exponent(1, 1.0, 0.0, &k), DP_EINVAL);
	assert_int_equal(dp_noise_grid_exponent(1, 1.0, -1.0, &k), DP_EINVAL);
	assert_int_equal(dp_noise_grid_exponent(1, 1.0, NAN, &k), DP_EINVAL);
	assert_int_equal(k, 1234);
}

/* The grid exponent against a brute-force search in 80-bit long double
 * (exact here: n < 2^11 times a 53-bit clip fits in 64 bits). */
static void test_grid_bruteforce(void **state)
{
	dp_bitsource s = sim_src(70);

	(void)state;
#if LDBL_MANT_DIG >= 64
	for (int it = 0; it < 20000; it++) {
		double u1, u2, clip, eps;
		uint64_t n;
		int k, want = INT_MIN;

		assert_int_equal(dp_rng_uniform(&s, &u1), 0);
		assert_int_equal(dp_rng_uniform(&s, &u2), 0);
		assert_int_equal(dp_rng_below(&s, 2047, &n), 0);
		n += 1;
		clip = ldexp(0.5 + u1, (int)(it % 61) - 30);
		eps = it % 5 == 0 ? INFINITY : ldexp(0.5 + u2, (int)(it % 41) - 20);
		for (int kk = DP_NOISE_GRID_KMAX; kk >= -200; kk--) {
			long double c = ldexpl((long double)clip, kk);

			if ((long double)n * c <= 0x1p52L &&
			    (isinf(eps) || 2 * c <= 0x1p52L * (long double)eps)) {
				want = kk;
				break;
			}
		}
		assert_int_equal(dp_noise_grid_exponent((size_t)n, clip, eps, &k), 0);
		assert_int_equal(k, want);
	}
#else
	skip();
#endif
}

/* The Gaussian answer's grid exponent: hand-worked values from
 * n clip 2^k <= 2^52 and sigma 2^k <= 2^46, then against a brute-force
 * search in long double (exact: a 53-bit mantissa times n < 2^11). */
static void test_grid_l2(void **state)
{
	dp_bitsource s = sim_src(71);
	int k = 1234;

	(void)state;
	assert_int_equal(dp_noise_grid_exponent_l2(1, 1.0, 0.0, &k), 0);
	assert_int_equal(k, 40);                 /* no noise: 52, capped */
	assert_int_equal(dp_noise_grid_exponent_l2(10000, 1.0, 0.0, &k), 0);
	assert_int_equal(k, 38);                 /* 2^52 / 10^4 = 2^38.7 */
	assert_int_equal(dp_noise_grid_exponent_l2(1, 1.0, 0x1p6, &k), 0);
	assert_int_equal(k, 40);                 /* 2^46 exactly */
	assert_int_equal(dp_noise_grid_exponent_l2(1, 1.0, 0x1p7, &k), 0);
	assert_int_equal(k, 39);
	assert_int_equal(dp_noise_grid_exponent_l2(1, 1.0, nextafter(0x1p7, INFINITY), &k), 0);
	assert_int_equal(k, 38);
	assert_int_equal(dp_noise_grid_exponent_l2(1, 1.0, 3.0e6, &k), 0);
	assert_int_equal(k, 24);                 /* 2^46 / 3e6 = 2^24.5 */
	assert_int_equal(dp_noise_grid_exponent_l2(1, 1.0, 1e-300, &k), 0);
	assert_int_equal(k, 40);
	k = 1234;
	assert_int_equal(dp_noise_grid_exponent_l2(1, 1.0, DBL_MAX, &k), 0);
	assert_int_equal(k, -978);               /* 2^46 / 2^1024 */
	k = 1234;
	assert_int_equal(dp_noise_grid_exponent_l2(SIZE_MAX, DBL_MAX, 0.0, &k), DP_ERANGE);
	assert_int_equal(dp_noise_grid_exponent_l2(0, 1.0, 1.0, &k), DP_EINVAL);
	assert_int_equal(dp_noise_grid_exponent_l2(1, 0.0, 1.0, &k), DP_EINVAL);
	assert_int_equal(dp_noise_grid_exponent_l2(1, INFINITY, 1.0, &k), DP_EINVAL);
	assert_int_equal(dp_noise_grid_exponent_l2(1, 1.0, -1.0, &k), DP_EINVAL);
	assert_int_equal(dp_noise_grid_exponent_l2(1, 1.0, NAN, &k), DP_EINVAL);
	assert_int_equal(dp_noise_grid_exponent_l2(1, 1.0, INFINITY, &k), DP_EINVAL);
	assert_int_equal(k, 1234);
#if LDBL_MANT_DIG >= 64
	for (int it = 0; it < 5000; it++) {
		double u1, u2, clip, sigma;
		uint64_t n;
		int want = INT_MIN;

		assert_int_equal(dp_rng_uniform(&s, &u1), 0);
		assert_int_equal(dp_rng_uniform(&s, &u2), 0);
		assert_int_equal(dp_rng_below(&s, 2047, &n), 0);
		n += 1;
		clip = ldexp(0.5 + u1, (int)(it % 61) - 30);
		sigma = it % 5 == 0 ? 0.0 : ldexp(it % 7 == 0 ? 0.5 : 0.5 + u2, (int)(it % 81) - 20);
		for (int kk = DP_NOISE_GRID_KMAX; kk >= -200; kk--) {
			if ((long double)n * ldexpl((long double)clip, kk) <= 0x1p52L &&
			    ldexpl((long double)sigma, kk) <= 0x1p46L) {
				want = kk;
				break;
			}
		}
		assert_int_equal(dp_noise_grid_exponent_l2((size_t)n, clip, sigma, &k), 0);
		assert_int_equal(k, want);
	}
#else
	(void)s;
#endif
}

static int setup(void **state)
{
	(void)state;
	return stats_base_seed("test_noise", &base_seed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_helpers),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_kat_extremes),
		cmocka_unit_test(test_kat_ln3),
		cmocka_unit_test(test_kat_exact_tie),
		cmocka_unit_test(test_pure_and_shift),
		cmocka_unit_test(test_exp_premise),
		cmocka_unit_test(test_chi2_geometric),
		cmocka_unit_test(test_chi2_dlaplace),
		cmocka_unit_test(test_ks_large_t),
		cmocka_unit_test(test_moments_dlaplace),
		cmocka_unit_test(test_moments_tiny_lambda),
		cmocka_unit_test(test_privacy),
		cmocka_unit_test(test_grid),
		cmocka_unit_test(test_grid_bruteforce),
		cmocka_unit_test(test_grid_l2),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
