/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for common/core/rng.c (CSPRNG, generic draws) and tools/lib/simrng.c.
 *
 * Statistical checks use the CSPRNG (fresh randomness each run); each is
 * given a threshold whose false-failure probability for a correct generator
 * is stated next to it and is <= 1e-6.  Deterministic checks use injected
 * word sequences. */
#define OPENSSL_SUPPRESS_DEPRECATED  /* RAND_set_rand_method: failure injection */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "common/core/error.h"
#include "common/core/rng.h"
#include "tests/unit/stats.h"
#include "tools/lib/simrng.h"

/* ---- helpers ---- */

/* A bit source replaying a fixed array of 64-bit words (host byte order);
 * DP_ERNG once exhausted.  Requests must be multiples of 8 bytes. */
struct replay {
	const uint64_t *w;
	size_t n, used;
};

static int replay_fill(void *ctx, void *buf, size_t len)
{
	struct replay *r = ctx;
	size_t k = len / 8;

	assert_int_equal(len % 8, 0);
	if (r->n - r->used < k)
		return DP_ERNG;
	memcpy(buf, r->w + r->used, len);
	r->used += k;
	return 0;
}

static dp_bitsource replay_src(struct replay *r)
{
	dp_bitsource s = { .fill = replay_fill, .ctx = r };

	return s;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Kolmogorov-Smirnov distance between the sample and a continuous CDF. */
static double ks_distance(double *x, size_t n, double (*cdf)(double, double), double par)
{
	double d = 0;

	qsort(x, n, sizeof(x[0]), cmp_double);
	for (size_t i = 0; i < n; i++) {
		double f = cdf(x[i], par);
		double hi = (double)(i + 1) / (double)n - f, lo = f - (double)i / (double)n;

		d = fmax(d, fmax(hi, lo));
	}
	return d;
}

static double uniform_cdf(double x, double par)
{
	(void)par;
	return x <= 0 ? 0 : x >= 1 ? 1 : x;
}

static double exp_cdf(double x, double rate)
{
	return x <= 0 ? 0 : -expm1(-rate * x);
}

/* ---- the statistical helper itself ---- */

static void test_chi2_helper(void **state)
{
	(void)state;
	/* df = 2: Q = exp(-x/2); df = 1: Q = erfc(sqrt(x/2)). */
	for (double x = 0.5; x < 80; x *= 1.7) {
		assert_true(fabs(chi2_sf(2, x) / exp(-x / 2) - 1) < 1e-9);
		assert_true(fabs(chi2_sf(1, x) / erfc(sqrt(x / 2)) - 1) < 1e-9);
	}
	/* The df = 1 quantile at 1e-6 is z^2 with z = 4.8916: */
	assert_true(fabs(chi2_sf(1, 4.891638 * 4.891638) / 1e-6 - 1) < 1e-3);
}

/* ---- simrng ---- */

/* Known answers computed once with an independent Python implementation of
 * splitmix64 and xoshiro256** (arbitrary-precision ints masked to 64 bits,
 * written from the published algorithm descriptions, /usr/bin/python3):
 *   def sm(x): x=(x+0x9e3779b97f4a7c15)&M; z=x; z=((z^(z>>30))*0xbf58476d1ce4e5b9)&M;
 *              z=((z^(z>>27))*0x94d049bb133111eb)&M; return x, z^(z>>31)
 *   seed: s[i] = 4 successive sm outputs from x = seed
 *   next: r=rotl(s1*5,7)*9; t=s1<<17; s2^=s0; s3^=s1; s1^=s2; s0^=s3; s2^=t; s3=rotl(s3,45)
 * The first splitmix64 output for 0 (0xe220a8397b1dcdaf) is also the value
 * commonly quoted for that generator. */
static void test_simrng_kat(void **state)
{
	static const uint64_t s0[4] = {
		UINT64_C(0xe220a8397b1dcdaf), UINT64_C(0x6e789e6aa1b965f4),
		UINT64_C(0x06c45d188009454f), UINT64_C(0xf88bb8a8724c81ec),
	};
	static const uint64_t out0[5] = {
		UINT64_C(0x99ec5f36cb75f2b4), UINT64_C(0xbf6e1f784956452a),
		UINT64_C(0x1a5f849d4933e6e0), UINT64_C(0x6aa594f1262d2d2c),
		UINT64_C(0xbba5ad4a1f842e59),
	};
	static const uint64_t outd[5] = {
		UINT64_C(0xc5555444a74d7e83), UINT64_C(0x65c30d37b4b16e38),
		UINT64_C(0x54f773200a4efa23), UINT64_C(0x429aed75fb958af7),
		UINT64_C(0xfb0e1dd69c255b2e),
	};
	dp_simrng r;

	(void)state;
	dp_simrng_seed(&r, 0);
	for (int i = 0; i < 4; i++)
		assert_true(r.s[i] == s0[i]);
	for (int i = 0; i < 5; i++)
		assert_true(dp_simrng_next(&r) == out0[i]);
	dp_simrng_seed(&r, UINT64_C(0xdeadbeef));
	for (int i = 0; i < 5; i++)
		assert_true(dp_simrng_next(&r) == outd[i]);
}

static void test_simrng_determinism(void **state)
{
	dp_simrng a, b, c;
	int same = 0;

	(void)state;
	dp_simrng_seed(&a, 42);
	dp_simrng_seed(&b, 42);
	dp_simrng_seed(&c, 43);
	for (int i = 0; i < 10000; i++) {
		uint64_t x = dp_simrng_next(&a);

		assert_true(x == dp_simrng_next(&b));
		same += x == dp_simrng_next(&c);
	}
	/* Equal outputs at the same position: probability 10^4 * 2^-64. */
	assert_int_equal(same, 0);
}

static void test_simrng_bitsource(void **state)
{
	dp_simrng a, b;
	dp_bitsource src;
	unsigned char buf[16], one[3];

	(void)state;
	dp_simrng_seed(&a, 7);
	dp_simrng_seed(&b, 7);
	src = dp_simrng_bitsource(&a);
	assert_int_equal(src.fill(src.ctx, buf, sizeof(buf)), 0);
	for (int w = 0; w < 2; w++) {
		uint64_t v = dp_simrng_next(&b);

		for (int i = 0; i < 8; i++)
			assert_int_equal(buf[8 * w + i], (unsigned char)(v >> (8 * i)));
	}
	/* A short request takes one whole output; the next starts fresh. */
	assert_int_equal(src.fill(src.ctx, one, sizeof(one)), 0);
	{
		uint64_t v = dp_simrng_next(&b);

		for (int i = 0; i < 3; i++)
			assert_int_equal(one[i], (unsigned char)(v >> (8 * i)));
	}
	assert_int_equal(src.fill(src.ctx, buf, 8), 0);
	{
		uint64_t v = dp_simrng_next(&b);

		assert_int_equal(buf[0], (unsigned char)v);
	}
	assert_int_equal(src.fill(src.ctx, buf, 0), 0);
}

/* ---- generic draws, deterministic ---- */

static void test_uniform_bounds(void **state)
{
	/* 53 bits are taken from the top: k = w >> 11, u = k / 2^53. */
	uint64_t w1[] = { 0, 0x7ff, 0x800 };
	uint64_t w2[] = { UINT64_MAX };
	uint64_t w3[100] = { 0 };
	struct replay r1 = { w1, 3, 0 }, r2 = { w2, 1, 0 }, r3 = { w3, 100, 0 };
	dp_bitsource s1 = replay_src(&r1), s2 = replay_src(&r2), s3 = replay_src(&r3);
	double u = 0.25;

	(void)state;
	/* k = 0 is redrawn (twice here), k = 1 gives the smallest value. */
	assert_int_equal(dp_rng_uniform(&s1, &u), 0);
	assert_true(u == 0x1p-53);
	assert_int_equal(r1.used, 3);
	/* The largest value is 1 - 2^-53 < 1. */
	assert_int_equal(dp_rng_uniform(&s2, &u), 0);
	assert_true(u == 1.0 - 0x1p-53);
	assert_true(u < 1.0);
	/* A source stuck at zero is refused after 64 words; u untouched. */
	u = 0.25;
	assert_int_equal(dp_rng_uniform(&s3, &u), DP_ERNG);
	assert_int_equal(r3.used, 64);
	assert_true(u == 0.25);
	/* Source errors propagate. */
	r2.used = 1;
	assert_int_equal(dp_rng_uniform(&s2, &u), DP_ERNG);
	assert_true(u == 0.25);
}

static void test_below_deterministic(void **state)
{
	/* bound = 3 * 2^62: 2^64 mod bound = 2^62 words are rejected. */
	const uint64_t bound = UINT64_C(3) << 62;
	uint64_t w[] = { (UINT64_C(1) << 62) - 1, UINT64_C(1) << 62, UINT64_MAX, 5 };
	struct replay r = { w, 4, 0 };
	dp_bitsource s = replay_src(&r);
	uint64_t x = 99;

	(void)state;
	assert_int_equal(dp_rng_below(&s, 0, &x), DP_EINVAL);
	assert_true(x == 99);
	assert_int_equal(dp_rng_below(&s, 1, &x), 0);
	assert_true(x == 0);
	assert_int_equal(dp_rng_below(&s, bound, &x), 0);
	assert_int_equal(r.used, 2);             /* first word rejected */
	assert_true(x == UINT64_C(1) << 62);     /* 2^62 mod 3*2^62 */
	assert_int_equal(dp_rng_below(&s, bound, &x), 0);
	assert_true(x == (UINT64_C(1) << 62) - 1);  /* (2^64-1) - 3*2^62 */
	/* bound 10: 2^64 mod 10 = 6, so 5 is rejected and the source ends. */
	assert_int_equal(dp_rng_below(&s, 10, &x), DP_ERNG);
	assert_true(x == (UINT64_C(1) << 62) - 1);
}

static void test_exponential_deterministic(void **state)
{
	uint64_t w[] = { UINT64_C(1) << 63 };  /* u = 1/2 */
	struct replay r = { w, 1, 0 };
	dp_bitsource s = replay_src(&r);
	double x = -1;

	(void)state;
	assert_int_equal(dp_rng_exponential(&s, 0.0, &x), DP_EINVAL);
	assert_int_equal(dp_rng_exponential(&s, -1.0, &x), DP_EINVAL);
	assert_int_equal(dp_rng_exponential(&s, NAN, &x), DP_EINVAL);
	assert_int_equal(dp_rng_exponential(&s, INFINITY, &x), DP_EINVAL);
	assert_true(x == -1);
	assert_int_equal(dp_rng_exponential(&s, 2.0, &x), 0);
	assert_true(fabs(x - log(2.0) / 2) < 1e-15);
}

/* ---- CSPRNG ---- */

static void test_csprng_fills(void **state)
{
	static const size_t sizes[] = { 0, 1, 7, 8, 100, 65535, 65536, 65537, 200000 };
	dp_csprng *r = NULL;
	dp_bitsource s;
	unsigned char *buf = malloc(200000), a[32], b[32];

	(void)state;
	assert_non_null(buf);
	assert_int_equal(dp_rng_csprng_new(&r), 0);
	s = dp_rng_csprng_bits(r);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t zeros = 0;

		memset(buf, 0, 200000);
		assert_int_equal(s.fill(s.ctx, buf, sizes[i]), 0);
		for (size_t j = 0; j < sizes[i]; j++)
			zeros += buf[j] == 0;
		/* Binomial(n, 1/256) zeros: mean n/256; > n/256 + 6 sqrt(n/256) + 8
		 * has probability < 1e-7 (Chernoff). */
		assert_true((double)zeros <= sizes[i] / 256.0 + 6 * sqrt(sizes[i] / 256.0) + 8);
	}
	/* Successive draws differ (equal with probability 2^-256), across
	 * refills too. */
	for (int i = 0; i < 5000; i++) {
		assert_int_equal(s.fill(s.ctx, a, sizeof(a)), 0);
		assert_int_equal(s.fill(s.ctx, b, sizeof(b)), 0);
		assert_memory_not_equal(a, b, sizeof(a));
	}
	dp_rng_csprng_destroy(r);
	dp_rng_csprng_destroy(NULL);
	free(buf);
}

static void test_csprng_byte_chi2(void **state)
{
	enum { NB = 1 << 22 };
	unsigned char *buf = malloc(NB);
	double cnt[256] = { 0 }, chi2 = 0, e = NB / 256.0;
	dp_csprng *r;
	dp_bitsource s;

	(void)state;
	assert_non_null(buf);
	assert_int_equal(dp_rng_csprng_new(&r), 0);
	s = dp_rng_csprng_bits(r);
	/* In 100-byte requests so that the buffered path is what is tested. */
	for (size_t off = 0; off + 100 <= NB; off += 100)
		assert_int_equal(s.fill(s.ctx, buf + off, 100), 0);
	for (size_t i = 0; i < NB / 100 * 100; i++)
		cnt[buf[i]]++;
	e = (NB / 100 * 100) / 256.0;
	for (int v = 0; v < 256; v++)
		chi2 += (cnt[v] - e) * (cnt[v] - e) / e;
	/* 255 degrees of freedom; fails a uniform source with p < 1e-6. */
	assert_true(chi2_sf(255, chi2) > 1e-6);
	dp_rng_csprng_destroy(r);
	free(buf);
}

static void test_uniform_stats(void **state)
{
	enum { N = 1000000 };
	double *x = malloc(N * sizeof(double)), sum = 0;
	dp_csprng *r;
	dp_bitsource s;

	(void)state;
	assert_non_null(x);
	assert_int_equal(dp_rng_csprng_new(&r), 0);
	s = dp_rng_csprng_bits(r);
	for (int i = 0; i < N; i++) {
		assert_int_equal(dp_rng_uniform(&s, &x[i]), 0);
		assert_true(x[i] > 0 && x[i] < 1);
		sum += x[i];
	}
	/* Mean: Hoeffding for [0,1] variables, P(|mean - 1/2| > a) <= 2e^{-2Na^2}
	 * = 1e-6 at a = 0.00269. */
	assert_true(fabs(sum / N - 0.5) < dkw_bound(N, 1e-6));
	/* KS against U(0,1), DKW bound at 1e-6. */
	assert_true(ks_distance(x, N, uniform_cdf, 0) < dkw_bound(N, 1e-6));
	dp_rng_csprng_destroy(r);
	free(x);
}

static void test_exponential_stats(void **state)
{
	enum { N = 1000000 };
	double *x = malloc(N * sizeof(double));
	dp_csprng *r;
	dp_bitsource s;

	(void)state;
	assert_non_null(x);
	assert_int_equal(dp_rng_csprng_new(&r), 0);
	s = dp_rng_csprng_bits(r);
	for (int i = 0; i < N; i++) {
		assert_int_equal(dp_rng_exponential(&s, 3.0, &x[i]), 0);
		assert_true(x[i] > 0 && isfinite(x[i]));
	}
	/* KS against Exp(3); DKW bound, false failure 1e-6.  (The 53-bit
	 * discreteness of u moves the CDF by < 2^-52, far below the bound.) */
	assert_true(ks_distance(x, N, exp_cdf, 3.0) < dkw_bound(N, 1e-6));
	dp_rng_csprng_destroy(r);
	free(x);
}

static void test_below_stats(void **state)
{
	enum { N = 1000000 };
	const uint64_t big = UINT64_C(3) << 62;
	double cnt[6] = { 0 }, chi2 = 0, low = 0;
	dp_csprng *r;
	dp_bitsource s;

	(void)state;
	assert_int_equal(dp_rng_csprng_new(&r), 0);
	s = dp_rng_csprng_bits(r);
	for (int i = 0; i < N; i++) {
		uint64_t x;

		assert_int_equal(dp_rng_below(&s, 6, &x), 0);
		assert_true(x < 6);
		cnt[x]++;
		assert_int_equal(dp_rng_below(&s, big, &x), 0);
		assert_true(x < big);
		low += x < (UINT64_C(1) << 62);
	}
	for (int v = 0; v < 6; v++)
		chi2 += (cnt[v] - N / 6.0) * (cnt[v] - N / 6.0) / (N / 6.0);
	assert_true(chi2_sf(5, chi2) > 1e-6);
	/* Without rejection, v mod 3*2^62 would land below 2^62 with
	 * probability 1/2 instead of 1/3.  Hoeffding: |freq - 1/3| < 0.00269
	 * fails with probability <= 1e-6. */
	assert_true(fabs(low / N - 1.0 / 3) < dkw_bound(N, 1e-6));
	dp_rng_csprng_destroy(r);
}

static void test_csprng_fork(void **state)
{
	unsigned char pre[100], mine[64], child[64], zero[64] = { 0 };
	int fd[2], status;
	dp_csprng *r;
	dp_bitsource s;
	pid_t pid;

	(void)state;
	assert_int_equal(dp_rng_csprng_new(&r), 0);
	s = dp_rng_csprng_bits(r);
	/* Leave most of a generated buffer unused at the fork. */
	assert_int_equal(s.fill(s.ctx, pre, sizeof(pre)), 0);
	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		unsigned char c[64];
		int ok = s.fill(s.ctx, c, sizeof(c)) == 0;

		if (!ok)
			memset(c, 0, sizeof(c));
		if (write(fd[1], c, sizeof(c)) != (ssize_t)sizeof(c))
			_exit(2);
		_exit(ok ? 0 : 1);
	}
	close(fd[1]);
	assert_int_equal(s.fill(s.ctx, mine, sizeof(mine)), 0);
	assert_int_equal(read(fd[0], child, sizeof(child)), (ssize_t)sizeof(child));
	close(fd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* Without fork detection both would serve the same next 64 bytes. */
	assert_memory_not_equal(mine, child, sizeof(mine));
	assert_memory_not_equal(child, zero, sizeof(child));
	dp_rng_csprng_destroy(r);
}

/* Failure injection without a test hook in the library: RAND_priv_bytes in
 * OpenSSL 3 defers to a RAND_METHOD installed with RAND_set_rand_method
 * (deprecated, still built in Debian's OpenSSL 3.0). */
static int inj_fail;
static size_t inj_calls, inj_bytes;
static unsigned char inj_next;

static int inj_bytes_fn(unsigned char *buf, int num)
{
	inj_calls++;
	if (inj_fail) {
		memset(buf, 0x5a, (size_t)num / 2);  /* partial garbage */
		return 0;
	}
	for (int i = 0; i < num; i++)
		buf[i] = inj_next++;
	inj_bytes += (size_t)num;
	return 1;
}

static int inj_status(void)
{
	return 1;
}

static RAND_METHOD inj_method = { .bytes = inj_bytes_fn, .status = inj_status };

static void test_csprng_injected(void **state)
{
	const RAND_METHOD *saved = RAND_get_rand_method();
	unsigned char out[64], pat[64], big[70000];
	dp_csprng *r;
	dp_bitsource s;
	size_t i;

	(void)state;
	assert_int_equal(RAND_set_rand_method(&inj_method), 1);
	assert_int_equal(dp_rng_csprng_new(&r), 0);
	s = dp_rng_csprng_bits(r);

	/* Buffering: one 64 KiB request serves 8192 draws of 8 bytes, in
	 * order; the next draw regenerates the used 64 KiB. */
	inj_fail = 0;
	inj_calls = inj_bytes = 0;
	inj_next = 0;
	for (i = 0; i < 8192; i++) {
		assert_int_equal(s.fill(s.ctx, out, 8), 0);
		for (int j = 0; j < 8; j++)
			assert_int_equal(out[j], (unsigned char)(8 * i + j));
	}
	assert_int_equal(inj_calls, 1);
	assert_int_equal(inj_bytes, 65536);
	assert_int_equal(s.fill(s.ctx, out, 8), 0);
	assert_int_equal(inj_calls, 2);

	/* Leave 10 unused bytes, then break the generator. */
	assert_int_equal(s.fill(s.ctx, big, 65536 - 8 - 10), 0);
	inj_fail = 1;
	memset(pat, 0xa5, sizeof(pat));
	memcpy(out, pat, sizeof(out));
	assert_int_equal(s.fill(s.ctx, out, 20), DP_ERNG);
	assert_memory_equal(out, pat, sizeof(out));   /* untouched */
	assert_int_equal(s.fill(s.ctx, out, 10), 0);  /* the 10 good bytes */
	assert_memory_not_equal(out, pat, 10);
	assert_int_equal(s.fill(s.ctx, out, 1), DP_ERNG);
	/* Oversized requests go straight to OpenSSL; on failure the caller's
	 * buffer is wiped, never left half filled. */
	memset(big, 0xa5, sizeof(big));
	assert_int_equal(s.fill(s.ctx, big, sizeof(big)), DP_ERNG);
	for (i = 0; i < sizeof(big); i++)
		assert_int_equal(big[i], 0);
	/* Generic draws report the failure and leave outputs untouched. */
	{
		double u = 0.25;
		uint64_t x = 7;

		assert_int_equal(dp_rng_uniform(&s, &u), DP_ERNG);
		assert_true(u == 0.25);
		assert_int_equal(dp_rng_below(&s, 10, &x), DP_ERNG);
		assert_true(x == 7);
	}
	/* Recovery once the generator works again. */
	inj_fail = 0;
	assert_int_equal(s.fill(s.ctx, out, 32), 0);
	dp_rng_csprng_destroy(r);
	assert_int_equal(RAND_set_rand_method(saved), 1);

	/* And the real generator is back. */
	assert_int_equal(dp_rng_csprng_new(&r), 0);
	s = dp_rng_csprng_bits(r);
	inj_calls = 0;
	assert_int_equal(s.fill(s.ctx, out, 32), 0);
	assert_int_equal(inj_calls, 0);
	dp_rng_csprng_destroy(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chi2_helper),
		cmocka_unit_test(test_simrng_kat),
		cmocka_unit_test(test_simrng_determinism),
		cmocka_unit_test(test_simrng_bitsource),
		cmocka_unit_test(test_uniform_bounds),
		cmocka_unit_test(test_below_deterministic),
		cmocka_unit_test(test_exponential_deterministic),
		cmocka_unit_test(test_csprng_fills),
		cmocka_unit_test(test_csprng_byte_chi2),
		cmocka_unit_test(test_uniform_stats),
		cmocka_unit_test(test_exponential_stats),
		cmocka_unit_test(test_below_stats),
		cmocka_unit_test(test_csprng_fork),
		cmocka_unit_test(test_csprng_injected),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
