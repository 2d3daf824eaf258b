/* SPDX-License-Identifier: Apache-2.0 */
/* The discrete Gaussian sampler against the discrete Laplace, measured in
 * this process, single thread, CSPRNG source (docs/noise.md §6 "Speed").
 *
 *   bench_noise [--draws N] [--repeats R]
 *
 * 1. Speed: for sigma = t in {1, 20, 1000, 10^6}, R interleaved rounds of N
 *    draws of each sampler at the same scale; median ns per draw.
 * 2. Time against the value: single-trial draws of the discrete Gaussian at
 *    sigma = 20, recorded byte for byte and sorted by |value| into "small"
 *    (|x| <= sigma/2) and "large" (|x| >= 2 sigma); each class is replayed
 *    from its recorded bytes in blocks of 100 draws, the classes
 *    alternating block by block (20 R blocks each), thread CPU time,
 *    median ns per draw.  The same for the discrete Laplace at t = 20
 *    (small |x| <= 5, large |x| >= 60).
 * 3. exp(-z) alone, the one libm call of a trial, on ranges of z: the
 *    sampler's clamped range [2^-52, 500] in three parts, and the two ranges
 *    the clamp keeps out (z < 2^-54, z in [512, 700]).
 * Prints one JSON line per measurement. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/core/noise.h"
#include "common/core/rng.h"

#define REC_MAX 512   /* bytes of one recorded single-trial draw, at most */
#define CLASS_N 2000  /* recorded draws per class */
#define BLOCK 100     /* draws per timed block */

typedef int (*sampler_fn)(dp_bitsource *src, double scale, int64_t *out);

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* Records what another source serves (one draw at a time). */
struct recorder {
	dp_bitsource inner;
	unsigned char b[REC_MAX];
	size_t len;
	int fills, overflow;
};

static int recorder_fill(void *ctx, void *buf, size_t len)
{
	struct recorder *r = ctx;
	int rc = r->inner.fill(r->inner.ctx, buf, len);

	r->fills++;
	if (rc == 0 && r->len + len <= sizeof(r->b)) {
		memcpy(r->b + r->len, buf, len);
		r->len += len;
	} else {
		r->overflow = 1;
	}
	return rc;
}

/* Serves recorded bytes. */
struct replay {
	const unsigned char *b;
	size_t len, used;
};

static int replay_fill(void *ctx, void *buf, size_t len)
{
	struct replay *r = ctx;

	if (len > r->len - r->used)
		return -1;
	memcpy(buf, r->b + r->used, len);
	r->used += len;
	return 0;
}

static int dgauss(dp_bitsource *src, double scale, int64_t *out)
{
	return dp_noise_discrete_gaussian(src, scale, out);
}

static int dlaplace(dp_bitsource *src, double scale, int64_t *out)
{
	return dp_noise_discrete_laplace(src, scale, out);
}

static double time_draws(sampler_fn fn, dp_bitsource *src, double scale, long n)
{
	double t0 = cpu_now();
	int64_t x, acc = 0;

	for (long i = 0; i < n; i++) {
		if (fn(src, scale, &x) != 0) {
			fprintf(stderr, "bench_noise: sampler failed\n");
			exit(1);
		}
		acc += x;
	}
	if (acc == INT64_MIN)
		fputc(' ', stderr);  /* keep the draws */
	return (cpu_now() - t0) / (double)n * 1e9;
}

/* Records CLASS_N single-fill draws of each class ("small": |x| <= lo,
 * "large": |x| >= hi) into rec[2][CLASS_N]. */
static void record_classes(sampler_fn fn, dp_bitsource *src, double scale, int64_t lo,
                           int64_t hi, unsigned char (*rec)[CLASS_N][REC_MAX],
                           size_t (*len)[CLASS_N])
{
	int have[2] = { 0, 0 };

	while (have[0] < CLASS_N || have[1] < CLASS_N) {
		struct recorder r = { .inner = *src };
		dp_bitsource rs = { .fill = recorder_fill, .ctx = &r };
		int64_t x;
		int cls;

		if (fn(&rs, scale, &x) != 0) {
			fprintf(stderr, "bench_noise: sampler failed\n");
			exit(1);
		}
		if (r.fills != 1 || r.overflow)  /* one trial, no tie */
			continue;
		cls = llabs(x) <= lo ? 0 : llabs(x) >= hi ? 1 : -1;
		if (cls < 0 || have[cls] == CLASS_N)
			continue;
		memcpy(rec[cls][have[cls]], r.b, r.len);
		len[cls][have[cls]] = r.len;
		have[cls]++;
	}
}

static void value_timing(const char *name, sampler_fn fn, dp_bitsource *src, double scale,
                         int64_t lo, int64_t hi, int reps)
{
	static unsigned char rec[2][CLASS_N][REC_MAX];
	static size_t len[2][CLASS_N];
	double *ns[2];

	int rounds = reps * (CLASS_N / BLOCK);

	ns[0] = malloc((size_t)rounds * sizeof(double));
	ns[1] = malloc((size_t)rounds * sizeof(double));
	if (ns[0] == NULL || ns[1] == NULL) {
		fprintf(stderr, "bench_noise: out of memory\n");
		exit(1);
	}
	record_classes(fn, src, scale, lo, hi, rec, len);
	/* Blocks of BLOCK draws, the classes alternating block by block, so
	 * that both see the same load. */
	for (int r = 0; r < rounds; r++) {
		int first = (r % (CLASS_N / BLOCK)) * BLOCK;

		for (int c0 = 0; c0 < 2; c0++) {
			int c = (r + c0) % 2;  /* alternate which class goes first */
			double t0 = cpu_now();

			for (int i = first; i < first + BLOCK; i++) {
				struct replay rp = { .b = rec[c][i], .len = len[c][i] };
				dp_bitsource rs = { .fill = replay_fill, .ctx = &rp };
				int64_t x;

				if (fn(&rs, scale, &x) != 0) {
					fprintf(stderr, "bench_noise: replay failed\n");
					exit(1);
				}
			}
			ns[c][r] = (cpu_now() - t0) / BLOCK * 1e9;
		}
	}
	{
		double ms = median(ns[0], rounds), ml = median(ns[1], rounds);

		printf("{\"part\":\"value_timing\",\"sampler\":\"%s\",\"scale\":%g,\"small_max\":%lld,"
		       "\"large_min\":%lld,\"draws_per_class\":%d,\"rounds\":%d,\"small_ns\":%.1f,"
		       "\"large_ns\":%.1f,\"large_over_small\":%.4f}\n", name, scale, (long long)lo,
		       (long long)hi, CLASS_N, rounds, ms, ml, ml / ms);
	}
	free(ns[0]);
	free(ns[1]);
}

/* Median ns of exp(-z) for z spread log-uniformly over [lo, hi]. */
static void exp_timing(double lo, double hi, int reps)
{
	enum { N = 4096 };
	static double z[N];
	double *ns = malloc((size_t)reps * sizeof(double)), sink = 0;

	if (ns == NULL)
		exit(1);
	for (int i = 0; i < N; i++)
		z[i] = -exp(log(lo) + (log(hi) - log(lo)) * (double)((i * 2654435761u) % N) / (N - 1));
	for (int r = 0; r < reps; r++) {
		double t0 = cpu_now();

		for (int k = 0; k < 25; k++)
			for (int i = 0; i < N; i++)
				sink += exp(z[i]);
		ns[r] = (cpu_now() - t0) / (25.0 * N) * 1e9;
	}
	printf("{\"part\":\"exp_timing\",\"z_lo\":%g,\"z_hi\":%g,\"rounds\":%d,\"ns\":%.2f}\n",
	       lo, hi, reps, median(ns, reps));
	if (sink == 42)
		fputc(' ', stderr);
	free(ns);
}

int main(int argc, char **argv)
{
	static const double scales[] = { 1, 20, 1000, 1e6 };
	long draws = 100000;
	int reps = 21;
	dp_csprng *rng;
	dp_bitsource src;

	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && strcmp(argv[i], "--draws") == 0) {
			draws = strtol(argv[++i], NULL, 10);
		} else if (i + 1 < argc && strcmp(argv[i], "--repeats") == 0) {
			reps = (int)strtol(argv[++i], NULL, 10);
		} else {
			fprintf(stderr, "usage: bench_noise [--draws N] [--repeats R]\n");
			return 2;
		}
	}
	if (draws < 1 || reps < 1 || dp_rng_csprng_new(&rng) != 0) {
		fprintf(stderr, "bench_noise: bad arguments or no CSPRNG\n");
		return 2;
	}
	src = dp_rng_csprng_bits(rng);
	for (size_t k = 0; k < sizeof(scales) / sizeof(scales[0]); k++) {
		double *g = malloc((size_t)reps * sizeof(double));
		double *l = malloc((size_t)reps * sizeof(double));
		double mg, ml;

		if (g == NULL || l == NULL)
			return 1;
		for (int r = 0; r < reps; r++) {
			g[r] = time_draws(dgauss, &src, scales[k], draws);
			l[r] = time_draws(dlaplace, &src, scales[k], draws);
		}
		mg = median(g, reps);
		ml = median(l, reps);
		printf("{\"part\":\"speed\",\"scale\":%g,\"draws\":%ld,\"rounds\":%d,"
		       "\"dgauss_ns\":%.1f,\"dlaplace_ns\":%.1f,\"dgauss_per_s\":%.0f,"
		       "\"dlaplace_per_s\":%.0f,\"ratio\":%.3f}\n", scales[k], draws, reps, mg, ml,
		       1e9 / mg, 1e9 / ml, mg / ml);
		free(g);
		free(l);
	}
	value_timing("dgauss", dgauss, &src, 20, 10, 40, reps);
	value_timing("dlaplace", dlaplace, &src, 20, 5, 60, reps);
	exp_timing(0x1p-52, 1e-3, reps);
	exp_timing(1e-3, 10, reps);
	exp_timing(10, 500, reps);
	exp_timing(1e-30, 0x1p-55, reps);
	exp_timing(512, 700, reps);
	dp_rng_csprng_destroy(rng);
	return 0;
}
