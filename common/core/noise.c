/* SPDX-License-Identifier: Apache-2.0 */
/* Integer-valued noise: geometric, discrete Laplace and discrete Gaussian
 * (docs/noise.md).
 *
 * Construction.  For X geometric with P(X = j) proportional to q^j,
 * q = e^-lambda, restricted to [0, 2^m), write X = sum_i b_i 2^i.  Then
 * q^X = prod_i (q^(2^i))^(b_i), so the binary digits are independent with
 *     P(b_i = 1) = q^(2^i) / (1 + q^(2^i)) = 1 / (1 + exp(lambda 2^i)).
 * We draw the 63 digits of an int64 as independent Bernoulli variables.
 * lambda 2^i is exact (power-of-two scaling), each probability is computed
 * in double to a relative error of about 2^-51 and then sampled *exactly*
 * for that double by comparing uniform bits with its binary expansion, so
 * no probability is ever rounded to 0, 1 or a coarse 53-bit grid.  Digits
 * with lambda 2^i > XMAX are set to 0: that conditions X on
 * X < 2^i, removing a tail of mass < e^-700.
 *
 * Each digit takes one 32-bit word, compared with the first 32 binary
 * digits of its probability; only on equality (probability 2^-32) are more
 * words drawn to compare the remaining digits.  The number of words thus
 * depends only on lambda, never on the value drawn (except through those
 * rare ties), so the running time does not reveal the noise.  The discrete
 * Laplace is the difference of two such geometrics. */
#include "common/core/noise.h"

#include <math.h>

#include <openssl/crypto.h>

#include "common/core/error.h"

#define GEOM_BITS 63
/* Cut-off for lambda 2^i.  1/(1 + e^700) ~ 1e-304 is still a normal double,
 * so every probability used keeps full relative precision. */
#define XMAX 700.0

/* Digit probabilities for one lambda.  Computing them costs one exp() per
 * digit, more than sampling; an answer draws all its coordinates with the
 * same lambda, so the last table is kept per thread (lambda is public). */
struct geom_table {
	double key;                     /* lambda or t; 0: empty */
	int by_t;                       /* key is a Laplace scale t */
	double lambda;                  /* the rate actually sampled */
	int n;                          /* digits that can be 1 */
	double p[GEOM_BITS];        /* P(digit i = 1), in (0, 1/2] */
	uint32_t head[GEOM_BITS];   /* floor(p[i] 2^32): digits 1..32 */
};

static _Thread_local struct geom_table last_table;

/* The table for a geometric of parameter `key` or, if by_t, for the
 * geometrics of a discrete Laplace of scale t = key: then lambda = 1/t
 * rounded *down* (fma gives the exact sign of lambda t - 1), so the noise
 * is never narrower than the scale asked for. */
static const struct geom_table *table_for(double key, int by_t)
{
	struct geom_table *tb = &last_table;
	double lambda = key;
	int n;

	if (tb->key == key && tb->by_t == by_t)
		return tb;
	if (by_t) {
		lambda = 1.0 / key;
		if (fma(lambda, key, -1.0) > 0)
			lambda = nextafter(lambda, 0.0);
	}
	for (n = 0; n < GEOM_BITS; n++) {
		double x = ldexp(lambda, n);

		if (!(x <= XMAX))
			break;
		tb->p[n] = 1.0 / (1.0 + exp(x));
		tb->head[n] = (uint32_t)(tb->p[n] * 0x1p32);  /* exact floor */
	}
	tb->n = n;
	tb->lambda = lambda;
	tb->key = key;
	tb->by_t = by_t;
	return tb;
}

/* The tie case of a Bernoulli(p) draw: the uniform V agreed with p on
 * binary digits 1..32.  Compare digits 33.. in 64-bit chunks, drawing one
 * word per chunk, until they differ (V < p gives 1) or p's expansion ends
 * (then V >= p, 0). */
static int bernoulli_tail(dp_bitsource *src, double p, int *bit)
{
	int e, s;
	uint64_t m = (uint64_t)ldexp(frexp(p, &e), 53);  /* p = m 2^s exactly */

	s = e - 53;
	for (int start = 32;; start += 64) {
		/* digits start+1 .. start+64 = floor(p 2^(start+64)) mod 2^64 */
		int sh = s + start + 64;
		uint64_t w, pc;
		int rc;

		if (-s <= start) {
			*bit = 0;
			return 0;
		}
		if (sh >= 0)
			pc = m << sh;  /* sh < 64 since s + start < 0 */
		else if (sh > -64)
			pc = m >> -sh;
		else
			pc = 0;
		rc = src->fill(src->ctx, &w, sizeof(w));
		if (rc != 0)
			return rc;
		if (w != pc) {
			*bit = w < pc;
			return 0;
		}
	}
}

/* Bernoulli(p) for the double p in (0, 1), from the pre-drawn word w and
 * head = floor(p 2^32): exact for p (docs/noise.md §2). */
static int bernoulli(dp_bitsource *src, double p, uint32_t head, uint32_t w, int *bit)
{
	if (w != head) {
		*bit = w < head;
		return 0;
	}
	return bernoulli_tail(src, p, bit);
}

/* One geometric from the table and n pre-drawn words. */
static int geom_digits(dp_bitsource *src, const struct geom_table *tb,
                           const uint32_t *w, int64_t *out)
{
	uint64_t x = 0;

	for (int i = 0; i < tb->n; i++) {
		int bit, rc = bernoulli(src, tb->p[i], tb->head[i], w[i], &bit);

		if (rc != 0)
			return rc;
		x |= (uint64_t)bit << i;
	}
	*out = (int64_t)x;  /* < 2^63 */
	return 0;
}

int dp_noise_geometric(dp_bitsource *src, double lambda, int64_t *out)
{
	const struct geom_table *tb;
	uint32_t w[GEOM_BITS];
	int64_t x = 0;
	int rc;

	DP_REQUIRE(src != NULL && src->fill != NULL && out != NULL);
	if (!(lambda > 0.0) || !isfinite(lambda))
		return dp_error_set(DP_EINVAL, "geometric: lambda %g is not a positive finite number",
				    lambda);
	if (lambda < DP_NOISE_LAMBDA_MIN)
		return dp_error_set(DP_ERANGE, "geometric: lambda %g below %g", lambda,
				    DP_NOISE_LAMBDA_MIN);
	tb = table_for(lambda, 0);
	rc = src->fill(src->ctx, w, (size_t)tb->n * sizeof(w[0]));
	if (rc == 0)
		rc = geom_digits(src, tb, w, &x);
	OPENSSL_cleanse(w, sizeof(w));
	if (rc == 0)
		*out = x;
	return rc;
}

int dp_noise_discrete_laplace(dp_bitsource *src, double t, int64_t *out)
{
	const struct geom_table *tb;
	uint32_t w[2 * GEOM_BITS];
	int64_t a = 0, b = 0;
	int rc;

	DP_REQUIRE(src != NULL && src->fill != NULL && out != NULL);
	if (!(t > 0.0) || !isfinite(t))
		return dp_error_set(DP_EINVAL, "discrete laplace: scale %g is not a positive finite "
				    "number", t);
	if (t > DP_NOISE_TMAX)
		return dp_error_set(DP_ERANGE, "discrete laplace: scale %g above %g", t, DP_NOISE_TMAX);
	/* lambda >= 2^-53 here; for tiny t no digit can be 1: output 0. */
	tb = table_for(t, 1);
	/* One fill for both halves: one copy, one fork check. */
	rc = src->fill(src->ctx, w, 2 * (size_t)tb->n * sizeof(w[0]));
	if (rc == 0)
		rc = geom_digits(src, tb, w, &a);
	if (rc == 0)
		rc = geom_digits(src, tb, w + tb->n, &b);
	OPENSSL_cleanse(w, sizeof(w));
	if (rc == 0)
		*out = a - b;  /* both in [0, 2^63): no overflow */
	return rc;
}

/* Canonne-Kamath-Steinke's rejection from a discrete Laplace, with the
 * proposal's rate lambda as sampled (docs/noise.md §6): a trial draws
 * Y ~ DLap(lambda) and accepts with probability
 * exp(-(|Y| - sigma^2 lambda)^2 / (2 sigma^2)); the product of the two is
 * exp(-Y^2 / (2 sigma^2)) times a constant, for any lambda.
 *
 * A trial reads its 2n + 1 words in one fill (ties aside) and does the
 * same arithmetic whatever Y is: the exponent is kept in
 * [2^-52, DGAUSS_ZMAX], where exp takes its one ordinary path, and an
 * exponent beyond DGAUSS_ZMAX rejects (the tail cut of docs/noise.md §6).
 * Rejected trials are independent of the accepted value, so only the
 * accepting trial's work matters, and it is fixed.  The digit table is
 * the Laplace's, cached per thread for t. */
#define DGAUSS_ZMAX 500.0
/* Trials before giving up on the source: each accepts with probability
 * >= 0.44, so a working source needs more than this with probability
 * < 1e-250. */
#define DGAUSS_MAX_TRIALS 1000

int dp_noise_discrete_gaussian(dp_bitsource *src, double sigma, int64_t *out)
{
	const struct geom_table *tb;
	uint32_t w[2 * GEOM_BITS + 1];
	double s;
	int64_t y = 0;
	int rc = 0, accepted = 0;

	DP_REQUIRE(src != NULL && src->fill != NULL && out != NULL);
	if (!(sigma > 0.0) || !isfinite(sigma))
		return dp_error_set(DP_EINVAL, "discrete gaussian: sigma %g is not a positive finite "
				    "number", sigma);
	if (sigma < DP_NOISE_DGAUSS_SIGMA_MIN || sigma > DP_NOISE_DGAUSS_SIGMA_MAX)
		return dp_error_set(DP_ERANGE, "discrete gaussian: sigma %g outside [%g, %g]", sigma,
				    DP_NOISE_DGAUSS_SIGMA_MIN, DP_NOISE_DGAUSS_SIGMA_MAX);
	/* t = floor(sigma) + 1 <= 2^46 + 1 is exact; lambda <= 1/t < 1/sigma. */
	tb = table_for(floor(sigma) + 1.0, 1);
	s = sigma * sigma * tb->lambda;  /* < sigma; two roundings */
	for (int trial = 0; trial < DGAUSS_MAX_TRIALS && !accepted; trial++) {
		int64_t a = 0, b = 0;
		uint64_t sign;
		double r, z, zc, p;

		rc = src->fill(src->ctx, w, (2 * (size_t)tb->n + 1) * sizeof(w[0]));
		if (rc == 0)
			rc = geom_digits(src, tb, w, &a);
		if (rc == 0)
			rc = geom_digits(src, tb, w + tb->n, &b);
		if (rc != 0)
			break;
		y = a - b;
		/* |y| < 2^63 without a branch on the sign (a mask); exact as a
		 * double whenever z <= ZMAX (sigma <= 2^46). */
		sign = -((uint64_t)y >> 63);
		r = ((double)(int64_t)(((uint64_t)y ^ sign) - sign) - s) / sigma;
		z = 0.5 * (r * r);
		/* + 2^-52 (not a clamp, which compiles to a branch on z) keeps
		 * p < 1 and exp off its shortcut below 2^-54; the cap at ZMAX
		 * binds only in trials that reject anyway. */
		zc = z + 0x1p-52;
		zc = zc < DGAUSS_ZMAX ? zc : DGAUSS_ZMAX;
		p = exp(-zc);  /* in [e^-500, 1 - 2^-53] */
		rc = bernoulli(src, p, (uint32_t)(p * 0x1p32), w[2 * tb->n], &accepted);
		if (rc != 0)
			break;
		accepted &= z <= DGAUSS_ZMAX;
	}
	OPENSSL_cleanse(w, sizeof(w));
	if (rc == 0 && !accepted)
		rc = dp_error_set(DP_ERNG, "discrete gaussian: %d trials rejected: broken random source",
				  DGAUSS_MAX_TRIALS);
	if (rc == 0)
		*out = y;
	return rc;
}

/* q = num/den rounded to nearest is at most half an ulp below the exact
 * quotient, so one step up suffices when it is below.  Whether it is:
 * the sign of q den - num, from one fma (the residual of a correctly
 * rounded quotient is exactly representable; should it underflow, it
 * becomes -0, whose sign bit still says "below", while an exact quotient
 * gives +0). */
double dp_noise_div_up(double num, double den)
{
	double q;

	DP_REQUIRE(num >= 0.0 && den > 0.0);
	q = num / den;
	if (isfinite(q) && signbit(fma(q, den, -num)))
		q = nextafter(q, INFINITY);
	return q;
}

static int bitlen128(unsigned __int128 v)
{
	uint64_t hi = (uint64_t)(v >> 64), lo = (uint64_t)v;

	if (hi != 0)
		return 128 - __builtin_clzll(hi);
	if (lo != 0)
		return 64 - __builtin_clzll(lo);
	return 0;
}

int dp_noise_grid_exponent(size_t n, double clip, double eps_q, int *k)
{
	unsigned __int128 prod;
	uint64_t mc;
	double fc, fe;
	int ec, ee, clog;
	long kk;

	DP_REQUIRE(k != NULL);
	if (n == 0)
		return dp_error_set(DP_EINVAL, "grid: no rows");
	if (!(clip > 0.0) || !isfinite(clip))
		return dp_error_set(DP_EINVAL, "grid: clip %g is not a positive finite number", clip);
	if (!(eps_q > 0.0))
		return dp_error_set(DP_EINVAL, "grid: epsilon %g is not positive", eps_q);

	/* Everything in exact integer arithmetic: clip = mc 2^(ec-53). */
	fc = frexp(clip, &ec);
	mc = (uint64_t)ldexp(fc, 53);

	/* n clip 2^k <= 2^52  <=>  n mc <= 2^(105 - ec - k). */
	prod = (unsigned __int128)n * mc;
	clog = bitlen128(prod);
	if ((prod & (prod - 1)) == 0)
		clog--;  /* exact power of two: ceil(log2) = bitlen - 1 */
	kk = 105L - ec - clog;
	if (kk > DP_NOISE_GRID_KMAX)
		kk = DP_NOISE_GRID_KMAX;

	if (isfinite(eps_q)) {
		/* 2 clip 2^k / eps_q <= 2^52  <=>  fc 2^j <= fe with
		 * j = ec - ee + k - 51 and fc, fe in [1/2, 1): true for j < 0,
		 * false for j > 0, fc <= fe for j = 0. */
		long kn;

		fe = frexp(eps_q, &ee);
		kn = (long)ee - ec + 51 - (fc <= fe ? 0 : 1);
		if (kn < kk)
			kk = kn;
	}
	if (kk < DP_NOISE_GRID_KMIN)
		return dp_error_set(DP_ERANGE, "grid: settings need k = %ld < %d (n=%zu clip=%g eps=%g)",
		                    kk, DP_NOISE_GRID_KMIN, n, clip, eps_q);
	*k = (int)kk;
	return 0;
}

/* The first condition is the L1 one (same bound per coordinate); the
 * second, sigma = fs 2^es with fs in [1/2, 1) and DP_NOISE_GRID_SIGMA_MAX
 * = 2^m (the sampler's largest sigma): fs 2^(es+k) <= 2^m holds for
 * es + k <= m, and for es + k = m + 1 only when fs = 1/2. */
int dp_noise_grid_exponent_l2(size_t n, double clip, double sigma, int *k)
{
	int kk, es, rc;
	double fs;

	DP_REQUIRE(k != NULL);
	if (!(sigma >= 0.0) || !isfinite(sigma))
		return dp_error_set(DP_EINVAL, "grid: sigma %g is not a finite number >= 0", sigma);
	rc = dp_noise_grid_exponent(n, clip, INFINITY, &kk);
	if (rc != 0)
		return rc;
	if (sigma > 0.0) {
		long ks;

		fs = frexp(sigma, &es);
		/* m = 46 (ilogb of a power of two is exact): >= -978 */
		ks = (long)ilogb(DP_NOISE_GRID_SIGMA_MAX) - es + (fs == 0.5 ? 1 : 0);
		if (ks < kk)
			kk = (int)ks;
	}
	*k = kk;
	return 0;
}
