/* SPDX-License-Identifier: Apache-2.0 */
/* Throughput of the privacy kernel dp_kernel_clipped_grid_sum against a plain
 * vectorised streaming read of the same matrix (the memory-bandwidth limit),
 * both measured in this process, interleaved, single thread.
 *
 *   bench_query [--rows N] [--features D] [--repeats R] [--clip C]
 *               [--model linear|logistic|svm] [--compare-l2] [--compare-answers]
 *
 * --compare-l2 adds R pairs of answers, the L1 kernel and the L2 one
 * (dp_kernel_clipped_grid_sum_l2, clip C / sqrt(D): about the same share of
 * rows clipped on this data, each on its own grid), taken back to back in
 * alternating order, and reports the median ratio L2/L1 of the pairs with
 * its 10th and 90th percentiles, and each kernel's median time
 * (docs/bench.md "L2 clipping").  --compare-answers does the same for
 * whole answers with their noise from the CSPRNG: Laplace (eps_q 0.01)
 * against Gaussian (rho_q of one of 100 answers at eps 1, delta 1e-6).
 *
 * Data as in the numpy baseline (docs/bench.md): X standard normal, y =
 * X beta + 0.1 noise, theta = 0.1 normal, row L1 norms precomputed (load
 * time).  Prints one JSON line; bytes are rows*features*8 per gradient;
 * DP_KERNEL_ISA caps the kernel variant (kernel.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/core/dataset.h"
#include "common/core/error.h"
#include "common/core/kernel.h"
#include "common/core/model.h"
#include "common/core/noise.h"
#include "common/core/query.h"
#include "common/core/rng.h"
#include "common/core/zcdp.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

static uint64_t bench_rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t bench_next(void)
{
	/* splitmix64: data generation only */
	uint64_t z = (bench_rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double bench_normal(void)
{
	double u = ((double)(bench_next() >> 11) + 0.5) * 0x1p-53;
	double v = ((double)(bench_next() >> 11) + 0.5) * 0x1p-53;
	return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The bandwidth reference: sum of all elements, 8 independent vector
 * accumulators so that only memory limits it. */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2")))
static double stream_sum_avx2(const double *x, size_t len)
{
	__m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
	__m256d s4 = s0, s5 = s0, s6 = s0, s7 = s0;
	size_t i = 0;

	for (; i + 32 <= len; i += 32) {
		s0 = _mm256_add_pd(s0, _mm256_load_pd(x + i));
		s1 = _mm256_add_pd(s1, _mm256_load_pd(x + i + 4));
		s2 = _mm256_add_pd(s2, _mm256_load_pd(x + i + 8));
		s3 = _mm256_add_pd(s3, _mm256_load_pd(x + i + 12));
		s4 = _mm256_add_pd(s4, _mm256_load_pd(x + i + 16));
		s5 = _mm256_add_pd(s5, _mm256_load_pd(x + i + 20));
		s6 = _mm256_add_pd(s6, _mm256_load_pd(x + i + 24));
		s7 = _mm256_add_pd(s7, _mm256_load_pd(x + i + 28));
	}
	s0 = _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3));
	s4 = _mm256_add_pd(_mm256_add_pd(s4, s5), _mm256_add_pd(s6, s7));
	s0 = _mm256_add_pd(s0, s4);
	double lanes[4];
	_mm256_storeu_pd(lanes, s0);
	double s = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
	for (; i < len; i++)
		s += x[i];
	return s;
}

__attribute__((target("avx512f")))
static double stream_sum_avx512(const double *x, size_t len)
{
	__m512d s0 = _mm512_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
	__m512d s4 = s0, s5 = s0, s6 = s0, s7 = s0;
	size_t i = 0;

	for (; i + 64 <= len; i += 64) {
		s0 = _mm512_add_pd(s0, _mm512_load_pd(x + i));
		s1 = _mm512_add_pd(s1, _mm512_load_pd(x + i + 8));
		s2 = _mm512_add_pd(s2, _mm512_load_pd(x + i + 16));
		s3 = _mm512_add_pd(s3, _mm512_load_pd(x + i + 24));
		s4 = _mm512_add_pd(s4, _mm512_load_pd(x + i + 32));
		s5 = _mm512_add_pd(s5, _mm512_load_pd(x + i + 40));
		s6 = _mm512_add_pd(s6, _mm512_load_pd(x + i + 48));
		s7 = _mm512_add_pd(s7, _mm512_load_pd(x + i + 56));
	}
	s0 = _mm512_add_pd(_mm512_add_pd(s0, s1), _mm512_add_pd(s2, s3));
	s4 = _mm512_add_pd(_mm512_add_pd(s4, s5), _mm512_add_pd(s6, s7));
	double s = _mm512_reduce_add_pd(_mm512_add_pd(s0, s4));
	for (; i < len; i++)
		s += x[i];
	return s;
}
#endif

/* The streaming read: AVX-512 or AVX2 when the CPU has them (whichever
 * STREAM_ISA=avx2|avx512 asks, default the widest), else 4 scalar
 * accumulators. */
static double stream_sum(const double *x, size_t len)
{
#if defined(__x86_64__) && defined(__GNUC__)
	const char *isa = getenv("STREAM_ISA");

	if ((isa == NULL || strcmp(isa, "avx512") == 0) && __builtin_cpu_supports("avx512f"))
		return stream_sum_avx512(x, len);
	if (__builtin_cpu_supports("avx2"))
		return stream_sum_avx2(x, len);
#endif
	double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	size_t i = 0;
	for (; i + 4 <= len; i += 4) {
		s0 += x[i];
		s1 += x[i + 1];
		s2 += x[i + 2];
		s3 += x[i + 3];
	}
	for (; i < len; i++)
		s0 += x[i];
	return (s0 + s1) + (s2 + s3);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_query [--rows N] [--features D] [--repeats R] [--clip C] "
		"[--model linear|logistic|svm] [--compare-l2] [--compare-answers]\n");
}

/* v sorted: the value at quantile f (nearest rank). */
static double quantile(const double *v, size_t n, double f)
{
	size_t i = (size_t)(f * (double)(n - 1) + 0.5);

	return v[i < n ? i : n - 1];
}

/* One timed operation of a pair: 0 or an error. */
struct timed {
	int (*run)(const struct timed *t);
	dp_model model;
	const dp_dataset *ds;
	const double *theta;
	double clip, share;
	int k;
	dp_mech mech;
	dp_bitsource *src;
	double *out;
};

static int run_l1(const struct timed *t)
{
	size_t dropped;

	return dp_kernel_clipped_grid_sum(t->model, t->ds, t->theta, t->clip, t->k, t->out,
					  &dropped);
}

static int run_l2(const struct timed *t)
{
	size_t dropped;

	return dp_kernel_clipped_grid_sum_l2(t->model, t->ds, t->theta, t->clip, t->k, t->out,
					     &dropped);
}

static int run_answer(const struct timed *t)
{
	return dp_query_answer_mech(t->model, t->ds, t->theta, t->clip, t->mech, t->share, t->src,
				    t->out, NULL);
}

/* reps pairs of a and b, back to back in alternating order (caches and
 * clock see both alike), after 3 warm-ups of each, as JSON fields
 * "<name>_<a>_seconds", "<name>_<b>_seconds" (medians) and the median,
 * 10th and 90th percentile of the pairs' ratios b/a appended to out;
 * 0 or -1. */
static int paired(const struct timed *a, const struct timed *b, const char *na, const char *nb,
		  const char *ratio_key, size_t reps, char *out, size_t outlen)
{
	double *ta = malloc(reps * sizeof(double)), *tb = malloc(reps * sizeof(double));
	double *ratio = malloc(reps * sizeof(double));
	size_t used = strlen(out);
	int rc = -1;

	if (ta == NULL || tb == NULL || ratio == NULL)
		goto out;
	for (int w = 0; w < 3; w++)
		if (a->run(a) != 0 || b->run(b) != 0)
			goto out;
	for (size_t r = 0; r < reps; r++) {
		for (int i = 0; i < 2; i++) {
			int second = (int)((r + (size_t)i) % 2);
			const struct timed *t = second ? b : a;
			double t0 = now();

			if (t->run(t) != 0)
				goto out;
			*(second ? &tb[r] : &ta[r]) = now() - t0;
		}
		ratio[r] = tb[r] / ta[r];
	}
	qsort(ratio, reps, sizeof(double), cmp_double);
	snprintf(out + used, outlen - used,
		 ", \"%s_seconds\": %.6g, \"%s_seconds\": %.6g, \"%s\": %.4f, "
		 "\"%s_p10\": %.4f, \"%s_p90\": %.4f, \"%s_pairs\": %zu",
		 na, median(ta, reps), nb, median(tb, reps), ratio_key, quantile(ratio, reps, 0.5),
		 ratio_key, quantile(ratio, reps, 0.1), ratio_key, quantile(ratio, reps, 0.9),
		 ratio_key, reps);
	rc = 0;
out:
	free(ta);
	free(tb);
	free(ratio);
	return rc;
}

/* --compare-l2: the kernels alone, clip C in L1 and C / sqrt(D) in L2. */
static int compare_l2(dp_model model, const dp_dataset *ds, const double *theta, double clip,
		      int k, size_t reps, double *sum, char *out, size_t outlen)
{
	struct timed a = { .run = run_l1, .model = model, .ds = ds, .theta = theta, .clip = clip,
			   .k = k, .out = sum };
	struct timed b = a;

	b.run = run_l2;
	b.clip = clip / sqrt((double)ds->p);
	if (dp_noise_grid_exponent_l2(ds->n, b.clip, 0.0, &b.k) != 0)
		return -1;
	return paired(&a, &b, "l1", "l2", "l2_over_l1", reps, out, outlen);
}

/* --compare-answers: whole answers with noise from the CSPRNG, Laplace
 * (clip C in L1, eps_q = 1/100: one of 100 answers of eps 1) against
 * Gaussian (clip C / sqrt(D) in L2, rho_q of one of 100 answers of eps 1
 * at delta 1e-6, dp_zcdp_share). */
static int compare_answers(dp_model model, const dp_dataset *ds, const double *theta,
			   double clip, size_t reps, double *grad, char *out, size_t outlen)
{
	dp_csprng *rng = NULL;
	dp_bitsource src;
	uint64_t slack;
	struct timed a = { .run = run_answer, .model = model, .ds = ds, .theta = theta,
			   .clip = clip, .share = 0.01, .mech = DP_MECH_LAPLACE, .out = grad };
	struct timed b = a;
	int rc = -1;

	if (dp_rng_csprng_new(&rng) != 0)
		return -1;
	src = dp_rng_csprng_bits(rng);
	a.src = b.src = &src;
	b.mech = DP_MECH_GAUSSIAN;
	b.clip = clip / sqrt((double)ds->p);
	if (dp_zcdp_share(1.0, 1e-6, 100, ds->p, DP_NOISE_DGAUSS_SLACK, DP_NOISE_DGAUSS_TAIL,
			  &b.share, &slack) == 0)
		rc = paired(&a, &b, "answer_laplace", "answer_gaussian", "gaussian_over_laplace",
			    reps, out, outlen);
	dp_rng_csprng_destroy(rng);
	return rc;
}

int main(int argc, char **argv)
{
	size_t n = 250000, d = 10, reps = 30;
	double clip = 10.0;
	dp_model model = DP_MODEL_LINEAR;
	int l2 = 0, answers = 0;
	char l2json[1024] = "";

	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && strcmp(argv[i], "--rows") == 0)
			n = strtoul(argv[++i], NULL, 10);
		else if (i + 1 < argc && strcmp(argv[i], "--features") == 0)
			d = strtoul(argv[++i], NULL, 10);
		else if (i + 1 < argc && strcmp(argv[i], "--repeats") == 0)
			reps = strtoul(argv[++i], NULL, 10);
		else if (i + 1 < argc && strcmp(argv[i], "--clip") == 0)
			clip = strtod(argv[++i], NULL);
		else if (strcmp(argv[i], "--compare-l2") == 0)
			l2 = 1;
		else if (strcmp(argv[i], "--compare-answers") == 0)
			answers = 1;
		else if (i + 1 < argc && strcmp(argv[i], "--model") == 0) {
			if (dp_model_parse(argv[++i], &model) != 0) {
				usage();
				return 2;
			}
		} else {
			usage();
			return 2;
		}
	}
	if (n == 0 || d == 0 || reps < 1 || !(clip > 0)) {
		usage();
		return 2;
	}

	double *x = malloc(n * d * sizeof(double)), *y = malloc(n * sizeof(double));
	double *beta = malloc(d * sizeof(double)), *theta = malloc(d * sizeof(double));
	double *sum = malloc(d * sizeof(double));
	double *tk = malloc(reps * sizeof(double)), *ts = malloc(reps * sizeof(double));
	if (!x || !y || !beta || !theta || !sum || !tk || !ts) {
		fprintf(stderr, "bench_query: out of memory\n");
		return 1;
	}
	for (size_t q = 0; q < d; q++)
		beta[q] = bench_normal();
	for (size_t j = 0; j < n; j++) {
		double t = 0;
		for (size_t q = 0; q < d; q++) {
			x[j * d + q] = bench_normal();
			t += x[j * d + q] * beta[q];
		}
		y[j] = t + 0.1 * bench_normal();
		if (model != DP_MODEL_LINEAR)
			y[j] = t >= 0 ? 1.0 : -1.0;
	}
	for (size_t q = 0; q < d; q++)
		theta[q] = 0.1 * bench_normal();

	dp_dataset ds;
	int err = dp_dataset_from_arrays(&ds, n, d, x, y, NULL);
	if (err != 0) {
		fprintf(stderr, "bench_query: %s\n", dp_error_detail(err));
		return 1;
	}
	free(x);
	int k;
	err = dp_noise_grid_exponent(n, clip, INFINITY, &k);
	if (err != 0) {
		fprintf(stderr, "bench_query: %s\n", dp_error_detail(err));
		return 1;
	}
	size_t dropped = 0;
	volatile double sink = 0;

	/* warm-up: page in, caches, frequency */
	for (int w = 0; w < 3; w++) {
		sink += stream_sum(ds.x, n * d);
		if (dp_kernel_clipped_grid_sum(model, &ds, theta, clip, k, sum, &dropped) != 0) {
			fprintf(stderr, "bench_query: kernel failed\n");
			return 1;
		}
	}
	for (size_t r = 0; r < reps; r++) {
		double t0 = now();
		sink += stream_sum(ds.x, n * d);
		double t1 = now();
		dp_kernel_clipped_grid_sum(model, &ds, theta, clip, k, sum, &dropped);
		double t2 = now();
		ts[r] = t1 - t0;
		tk[r] = t2 - t1;
	}
	double checksum = 0;
	for (size_t q = 0; q < d; q++)
		checksum += fabs(ldexp(sum[q], -k) / (double)n);
	if (l2 && compare_l2(model, &ds, theta, clip, k, reps, sum, l2json, sizeof(l2json)) != 0) {
		fprintf(stderr, "bench_query: L2 kernel failed\n");
		return 1;
	}
	if (answers && compare_answers(model, &ds, theta, clip, reps, sum, l2json,
				       sizeof(l2json)) != 0) {
		fprintf(stderr, "bench_query: an answer failed\n");
		return 1;
	}
	double mk = median(tk, reps), ms = median(ts, reps);
	double bytes = (double)n * (double)d * 8.0;

	const char *isa = getenv("DP_KERNEL_ISA");

	printf("{\"impl\": \"c\", \"kernel_isa_cap\": \"%s\", \"kernel_variant\": \"%s\", "
	       "\"model\": \"%s\", \"rows\": %zu, \"features\": %zu, "
	       "\"repeats\": %zu, \"grid_k\": %d, "
	       "\"kernel_seconds\": %.6g, \"kernel_gbytes_per_s\": %.4g, "
	       "\"stream_seconds\": %.6g, \"stream_gbytes_per_s\": %.4g, "
	       "\"kernel_over_stream\": %.4f, \"checksum\": %.17g, \"dropped\": %zu%s}\n",
	       isa != NULL ? isa : "auto", dp_kernel_variant(), dp_model_name(model), n, d, reps, k, mk, bytes / mk / 1e9, ms, bytes / ms / 1e9,
	       ms / mk, checksum, dropped, l2json);
	(void)sink;
	dp_dataset_free(&ds);
	free(y);
	free(beta);
	free(theta);
	free(sum);
	free(tk);
	free(ts);
	return 0;
}
