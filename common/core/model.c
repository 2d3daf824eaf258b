#include "common/core/model.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DP__X86_SIMD 1
#endif

/* Rows per block of the plain passes (loss, gradient): small enough that the
 * scores live on the stack. */
#define DP__PASS_ROWS 256

/* The portable variant of the privacy kernel works on blocks of about this
 * many bytes of x: fetched from memory once (by the gemv for the scores)
 * and read again from L1/L2 by the truncate-and-accumulate loop.  The SIMD
 * variants have their own sizes (DP__SIMD_BLOCK_BYTES, docs/bench.md). */
#define DP__BLOCK_BYTES (32 * 1024)
#define DP__BLOCK_MAX 1024
#define DP__BLOCK_MIN 8

int dp_model_parse(const char *s, dp_model *out)
{
	if (s != NULL) {
		if (strcmp(s, "linear") == 0) {
			*out = DP_MODEL_LINEAR;
			return 0;
		}
		if (strcmp(s, "logistic") == 0) {
			*out = DP_MODEL_LOGISTIC;
			return 0;
		}
		if (strcmp(s, "svm") == 0) {
			*out = DP_MODEL_SVM;
			return 0;
		}
	}
	return dp_error_set(DP_EINVAL, "unknown model '%s' (linear, logistic or svm)",
			    s != NULL ? s : "(null)");
}

const char *dp_model_name(dp_model m)
{
	switch (m) {
	case DP_MODEL_LINEAR: return "linear";
	case DP_MODEL_LOGISTIC: return "logistic";
	case DP_MODEL_SVM: return "svm";
	}
	return "unknown";
}

/* log(1 + exp(-m)) without overflow: for m < 0 the exponent is taken out,
 * -m + log1p(exp(m)), so exp never sees a large positive argument. */
static inline double dp__logistic_loss(double m)
{
	if (m > 0.0)
		return log1p(exp(-m));
	return -m + log1p(exp(m));
}

/* -y / (1 + exp(y t)) with m = y t: exp only of a non-positive number. */
static inline double dp__logistic_coef(double t, double y)
{
	double m = y * t;

	if (m > 0.0) {
		double e = exp(-m);
		return -y * e / (1.0 + e);
	}
	if (m <= 0.0)
		return -y / (1.0 + exp(m));
	return NAN;     /* m is NaN: keep it visible so the row is dropped */
}

static inline double dp__svm_coef(double t, double y)
{
	double m = y * t;

	if (m < 1.0)
		return -y;
	if (m >= 1.0)
		return 0.0;
	return NAN;     /* NaN score must not read as "no gradient" */
}

double dp_model_loss(dp_model m, double t, double y)
{
	switch (m) {
	case DP_MODEL_LINEAR: {
		double r = y - t;
		return r * r;
	}
	case DP_MODEL_LOGISTIC:
		return dp__logistic_loss(y * t);
	case DP_MODEL_SVM: {
		double h = 1.0 - y * t;
		if (isnan(h))
			return NAN;
		return h > 0.0 ? h : 0.0;
	}
	}
	return NAN;
}

double dp_model_coef(dp_model m, double t, double y)
{
	switch (m) {
	case DP_MODEL_LINEAR: return 2.0 * (t - y);
	case DP_MODEL_LOGISTIC: return dp__logistic_coef(t, y);
	case DP_MODEL_SVM: return dp__svm_coef(t, y);
	}
	return NAN;
}

int dp_model_check_data(dp_model m, const dp_dataset *ds)
{
	const char *src = ds->source != NULL ? ds->source : "(arrays)";

	for (size_t j = 0; j < ds->n; j++) {
		double y = ds->y[j];

		if (m == DP_MODEL_LINEAR) {
			if (!isfinite(y))
				return dp_error_set(DP_EFORMAT, "%s: row %zu: target '%s' is %g, not a finite number",
						    src, j + 1, ds->target != NULL ? ds->target : "y", y);
		} else if (y != 1.0 && y != -1.0) {
			return dp_error_set(DP_EFORMAT, "%s: row %zu: target '%s' is %g; %s needs -1 or +1",
					    src, j + 1, ds->target != NULL ? ds->target : "y", y,
					    dp_model_name(m));
		}
	}
	return 0;
}

/* Scores theta^T x_j of rows [j0, j0 + nb). */
static void dp__scores(const dp_dataset *ds, size_t j0, size_t nb, const double *theta,
		       double *t)
{
	cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)nb, (int)ds->p, 1.0, ds->x + j0 * ds->p,
		    (int)ds->p, theta, 1, 0.0, t, 1);
}

double dp_model_loss_sum(dp_model m, const dp_dataset *ds, const double *theta)
{
	double t[DP__PASS_ROWS];
	double total = 0.0;

	for (size_t j0 = 0; j0 < ds->n; j0 += DP__PASS_ROWS) {
		size_t nb = ds->n - j0 < DP__PASS_ROWS ? ds->n - j0 : DP__PASS_ROWS;
		double part = 0.0;

		dp__scores(ds, j0, nb, theta, t);
		for (size_t i = 0; i < nb; i++)
			part += dp_model_loss(m, t[i], ds->y[j0 + i]);
		total += part;
	}
	return total;
}

double dp_model_fitness(dp_model m, const dp_dataset *const *ds, size_t nds, double lambda,
			const double *theta)
{
	double loss = 0.0, reg = 0.0;
	size_t n = 0;

	if (nds == 0)
		return NAN;
	for (size_t i = 0; i < nds; i++) {
		loss += dp_model_loss_sum(m, ds[i], theta);
		n += ds[i]->n;
	}
	for (size_t q = 0; q < ds[0]->p; q++)
		reg += theta[q] * theta[q];
	if (n == 0)
		return lambda * reg;
	return lambda * reg + loss / (double)n;
}

double dp_model_psi(double f, double f_star)
{
	return f / f_star - 1.0;
}

void dp_model_mean_grad(dp_model m, const dp_dataset *ds, const double *theta, double *grad)
{
	double t[DP__PASS_ROWS];
	size_t p = ds->p;

	for (size_t q = 0; q < p; q++)
		grad[q] = 0.0;
	for (size_t j0 = 0; j0 < ds->n; j0 += DP__PASS_ROWS) {
		size_t nb = ds->n - j0 < DP__PASS_ROWS ? ds->n - j0 : DP__PASS_ROWS;

		dp__scores(ds, j0, nb, theta, t);
		for (size_t i = 0; i < nb; i++)
			t[i] = dp_model_coef(m, t[i], ds->y[j0 + i]);
		/* grad += X_block^T c_block */
		cblas_dgemv(CblasRowMajor, CblasTrans, (int)nb, (int)p, 1.0, ds->x + j0 * p,
			    (int)p, t, 1, 1.0, grad, 1);
	}
	if (ds->n > 0)
		for (size_t q = 0; q < p; q++)
			grad[q] /= (double)ds->n;
}

/* ---- the privacy kernel -------------------------------------------------
 *
 * What it computes, exactly (the unit test re-implements this rule with a
 * plain per-row loop and expects bit-identical sums):
 *
 *   c_j = coef(theta^T x_j, y_j);  drop the row (a_j = 0, counted) unless
 *         both c_j and row_l1[j] are finite (a NaN must never reach the
 *         clipping comparison: fmin(1, NaN) = 1 would skip clipping);
 *   clipm = clip * (1 - (p + 8) 2^-52);
 *   a_j = c_j                              if |c_j| row_l1[j] <= clipm,
 *         copysign(clipm / row_l1[j], c_j) otherwise (|c_j| row_l1 may
 *         overflow to inf; that row is clipped, not dropped);
 *   sum[q] = sum_j trunc((a_j 2^k) x_jq)   (a_j 2^k is exact)
 *
 * Why clipm: row_l1 is a rounded sum and a_j, a_j x_jq are rounded
 * products, so with clip itself the computed coordinates could exceed the
 * L1 bound by a few ulps.  With the margin (it covers the (p-1) roundings
 * of row_l1 and the handful in a_j x_jq and clipm), sum_q |a_j x_jq| <= clip
 * holds for the doubles actually used, truncation toward zero only shrinks
 * them, so every row's integer vector has L1 norm <= floor(clip 2^k):
 * replacing a row moves the sum by at most 2 clip 2^k grid units.
 *
 * Exactness: every term is an integer of magnitude <= clip 2^k and every
 * partial sum (in any order, any number of accumulators) is an integer of
 * magnitude <= n clip 2^k <= 2^52, so all additions are exact and the
 * result does not depend on blocking or vector width.
 *
 * (a_j 2^k) x_jq equals (a_j x_jq) 2^k rounded the same way unless a_j 2^k
 * overflows or the product is subnormal; subnormal products are far below
 * one grid unit (truncate to 0 either way) and rows whose a_j 2^k is not
 * finite or huge take a slow path in the safe order. */

/* Everything a kernel variant needs. */
typedef struct dp__kern {
	dp_model m;
	size_t n, p;
	const double *x, *y, *l1, *theta;
	double clipm;   /* clip less the rounding margin */
	double two_k;   /* 2^k */
	int k;
	double *sum;    /* p accumulators in grid units, zeroed by the caller */
} dp__kern;

/* |a_j 2^k| above this takes the slow order (see above). */
#define DP__A_BIG 0x1p900

enum { DP__ROW_OK, DP__ROW_DROP, DP__ROW_SLOW };

/* The scale rule for one row; every variant must agree with it. */
static inline int dp__row_scale(const dp__kern *K, double t, double y, double l, double *a2,
				double *a)
{
	double c = dp_model_coef(K->m, t, y);

	if (!(isfinite(c) && isfinite(l)))
		return DP__ROW_DROP;
	if (fabs(c) * l <= K->clipm)
		*a = c;
	else
		*a = copysign(K->clipm / l, c);
	*a2 = *a * K->two_k;
	if (!(fabs(*a2) <= DP__A_BIG))
		return DP__ROW_SLOW;
	return DP__ROW_OK;
}

/* trunc() for |v| <= 2^52 (all terms here: |a_j x_jq| 2^k <= clip 2^k <=
 * 2^52, checked on entry): the SSE2 conversion truncates toward zero and
 * is inline, where trunc() is a libm call on baseline x86-64 (the portable
 * variant ran 2-3x slower with it). */
static inline double dp__trunc(double v)
{
	return (double)(int64_t)v;
}

/* One row given its score, scalar; returns 1 if it was dropped.  Rows with
 * a = 0 are skipped, so a dropped row's non-finite x never reaches sum. */
static size_t dp__row_scalar(const dp__kern *K, size_t j, double t)
{
	const double *x = K->x + j * K->p;
	double a2, a;

	switch (dp__row_scale(K, t, K->y[j], K->l1[j], &a2, &a)) {
	case DP__ROW_DROP:
		return 1;
	case DP__ROW_SLOW:
		for (size_t q = 0; q < K->p; q++)
			K->sum[q] += dp__trunc(ldexp(a * x[q], K->k));
		return 0;
	default:
		if (a2 != 0.0)
			for (size_t q = 0; q < K->p; q++)
				K->sum[q] += dp__trunc(a2 * x[q]);
		return 0;
	}
}

/* Portable variant: blocks of rows, scores with cblas_dgemv while the block
 * is in cache, then the scalar rule. */
static size_t dp__kernel_blas(const dp__kern *K)
{
	double t[DP__BLOCK_MAX], a[DP__BLOCK_MAX];
	size_t p = K->p, n = K->n, dropped = 0, rows;
	dp_dataset view = { .n = n, .p = p, .x = (double *)K->x };

	rows = DP__BLOCK_BYTES / (p * sizeof(double));
	if (rows < DP__BLOCK_MIN)
		rows = DP__BLOCK_MIN;
	if (rows > DP__BLOCK_MAX)
		rows = DP__BLOCK_MAX;
	for (size_t j0 = 0; j0 < n; j0 += rows) {
		size_t nb = n - j0 < rows ? n - j0 : rows;

		dp__scores(&view, j0, nb, K->theta, t);
		for (size_t i = 0; i < nb; i++) {
			double araw;
			int st = dp__row_scale(K, t[i], K->y[j0 + i], K->l1[j0 + i], &a[i], &araw);

			if (st == DP__ROW_OK)
				continue;
			if (st == DP__ROW_DROP)
				dropped++;
			else
				dp__row_scalar(K, j0 + i, t[i]);
			a[i] = 0.0;
		}
		for (size_t i = 0; i < nb; i++) {
			const double *x = K->x + (j0 + i) * p;
			double ai = a[i];

			if (ai == 0.0)
				continue;
			for (size_t q = 0; q < p; q++)
				K->sum[q] += dp__trunc(ai * x[q]);
		}
	}
	return dropped;
}

#ifdef DP__X86_SIMD
/* The SIMD variants work on groups of rows (8 with AVX-512, 4 with AVX2).
 * Per group, phase A: dot products (one vector accumulator per row, then a
 * transposing horizontal sum), coefficients, the drop test and the scales
 * a_j 2^k in vector lanes; phase B: trunc(a_r x_rq) summed over the
 * group's rows into per-column accumulators.
 *
 *   dp__small8   AVX-512, linear and svm, p <= 32: one fused loop over the
 *                groups, software-pipelined (phase A of group g+1 next to
 *                phase B of group g), accumulators in registers;
 *   blocked      everything else: blocks of DP__SIMD_BLOCK_BYTES, phase A
 *                over the block (scales into a buffer), then phase B per
 *                panel of up to 4 column vectors, re-reading the block
 *                from L1.
 *
 * Why, measured with tests/bench (docs/bench.md): a BLAS gemv for the
 * scores of a 10-column row-major block runs at about half the streaming
 * bandwidth on its own, so the scores are computed here, fused; a vector
 * store does not forward quickly to the next (masked) load of the same
 * address, so accumulating through memory chained all groups (1.4x
 * slower); any call inside the hot loop, even on a cold path, made GCC
 * keep vector values on the stack (all vector registers are
 * call-clobbered), so bad groups are only listed in the loop and redone
 * afterwards; the hardware prefetcher alone left the loop waiting on L3
 * (1.5x slower), hence explicit prefetches.  Ragged row ends are read as
 * the row's last full vector (plain loads inside the row) rather than with
 * masked loads running past it.  Groups holding a dropped or slow row, and
 * the rows left over (n mod group), go through dp__row_scalar. */
#define DP__TZ (_MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)

/* Scores for rows outside the vector paths. */
static double dp__dot(const double *x, const double *theta, size_t p)
{
	double s = 0.0;

	for (size_t q = 0; q < p; q++)
		s += x[q] * theta[q];
	return s;
}

#ifndef DP__SIMD_BLOCK_BYTES
#define DP__SIMD_BLOCK_BYTES (8 * 1024)
#endif
#define DP__AI static inline __attribute__((always_inline))

#ifndef DP__PF_DIST
#define DP__PF_DIST 16384
#endif
/* Ask for the lines DP__PF_DIST bytes ahead of [x, x + len): during phase B
 * nothing new is read, and without this the next block's first loads wait
 * for L3 or memory.  A prefetch beyond the end of the matrix is harmless. */
DP__AI void dp__prefetch(const double *x, size_t len)
{
	const char *c = (const char *)x + DP__PF_DIST, *e = c + len * sizeof(double);

	for (; c < e; c += 64)
		__builtin_prefetch(c, 0, 3);
}

static size_t dp__simd_block_rows(size_t p, size_t group)
{
	size_t rows = DP__SIMD_BLOCK_BYTES / (p * sizeof(double));

	rows -= rows % group;
	if (rows < group)
		rows = group;
	if (rows > DP__BLOCK_MAX)
		rows = DP__BLOCK_MAX;
	return rows;
}

__attribute__((target("avx512f,avx512dq")))
DP__AI __m512d dp__hsum8(__m512d d0, __m512d d1, __m512d d2, __m512d d3, __m512d d4,
			 __m512d d5, __m512d d6, __m512d d7)
{
	__m512d s01 = _mm512_add_pd(_mm512_unpacklo_pd(d0, d1), _mm512_unpackhi_pd(d0, d1));
	__m512d s23 = _mm512_add_pd(_mm512_unpacklo_pd(d2, d3), _mm512_unpackhi_pd(d2, d3));
	__m512d s45 = _mm512_add_pd(_mm512_unpacklo_pd(d4, d5), _mm512_unpackhi_pd(d4, d5));
	__m512d s67 = _mm512_add_pd(_mm512_unpacklo_pd(d6, d7), _mm512_unpackhi_pd(d6, d7));
	__m512d w03 = _mm512_add_pd(_mm512_shuffle_f64x2(s01, s23, 0x88),
				    _mm512_shuffle_f64x2(s01, s23, 0xdd));
	__m512d w47 = _mm512_add_pd(_mm512_shuffle_f64x2(s45, s67, 0x88),
				    _mm512_shuffle_f64x2(s45, s67, 0xdd));

	return _mm512_add_pd(_mm512_shuffle_f64x2(w03, w47, 0x88),
			     _mm512_shuffle_f64x2(w03, w47, 0xdd));
}

__attribute__((target("avx512f,avx512dq")))
DP__AI __m512d dp__coef8(dp_model m, __m512d t, __m512d y)
{
	__m512d sign = _mm512_set1_pd(-0.0);

	if (m == DP_MODEL_LINEAR)
		return _mm512_mul_pd(_mm512_set1_pd(2.0), _mm512_sub_pd(t, y));
	if (m == DP_MODEL_SVM) {
		__m512d mt = _mm512_mul_pd(y, t), one = _mm512_set1_pd(1.0);
		__mmask8 lt = _mm512_cmp_pd_mask(mt, one, _CMP_LT_OQ);
		__mmask8 ge = _mm512_cmp_pd_mask(mt, one, _CMP_GE_OQ);
		__m512d c = _mm512_mask_blend_pd(lt, _mm512_set1_pd(NAN), _mm512_xor_pd(y, sign));

		return _mm512_mask_blend_pd(ge, c, _mm512_setzero_pd());
	}
	double tv[8], yv[8];

	_mm512_storeu_pd(tv, t);
	_mm512_storeu_pd(yv, y);
	for (int r = 0; r < 8; r++)
		tv[r] = dp_model_coef(m, tv[r], yv[r]);
	return _mm512_loadu_pd(tv);
}

/* Phase A for the 8 rows starting at j: a_j 2^k into *a_out; returns the
 * mask of rows fit for the vector path (the others are redone by the
 * scalar rule, scores included).
 * A ragged end of the row (p mod 8 columns) is read, for p >= 8, as the
 * row's last 8 elements with theta_tail = theta's last 8 with the lanes
 * already counted set to 0: plain loads inside the row (a masked load that
 * runs past the row end measured markedly slower).  A row with a non-finite
 * x gets a NaN score that way, but it is dropped anyway (row_l1). */
__attribute__((target("avx512f,avx512dq")))
DP__AI __mmask8 dp__g8_scale(const dp__kern *K, const dp_model m, size_t j, __m512d th_tail,
			     __m512d *a_out)
{
	size_t p = K->p, pf = p & ~(size_t)7, q;
	__mmask8 tail = (__mmask8)((1u << (p & 7)) - 1);
	const double *th = K->theta;
	const double *x0 = K->x + j * p, *x1 = x0 + p, *x2 = x1 + p, *x3 = x2 + p;
	const double *x4 = x3 + p, *x5 = x4 + p, *x6 = x5 + p, *x7 = x6 + p;
	const __m512d absm = _mm512_castsi512_pd(_mm512_set1_epi64(0x7fffffffffffffffLL));
	const __m512d sign = _mm512_set1_pd(-0.0), inf = _mm512_set1_pd(INFINITY);
	const __m512d clipm = _mm512_set1_pd(K->clipm);
	__m512d d0 = _mm512_setzero_pd(), d1 = d0, d2 = d0, d3 = d0;
	__m512d d4 = d0, d5 = d0, d6 = d0, d7 = d0;

	for (q = 0; q < pf; q += 8) {
		__m512d tq = _mm512_loadu_pd(th + q);
		d0 = _mm512_fmadd_pd(_mm512_loadu_pd(x0 + q), tq, d0);
		d1 = _mm512_fmadd_pd(_mm512_loadu_pd(x1 + q), tq, d1);
		d2 = _mm512_fmadd_pd(_mm512_loadu_pd(x2 + q), tq, d2);
		d3 = _mm512_fmadd_pd(_mm512_loadu_pd(x3 + q), tq, d3);
		d4 = _mm512_fmadd_pd(_mm512_loadu_pd(x4 + q), tq, d4);
		d5 = _mm512_fmadd_pd(_mm512_loadu_pd(x5 + q), tq, d5);
		d6 = _mm512_fmadd_pd(_mm512_loadu_pd(x6 + q), tq, d6);
		d7 = _mm512_fmadd_pd(_mm512_loadu_pd(x7 + q), tq, d7);
	}
	if (tail && pf > 0) {
		q = p - 8;
		d0 = _mm512_fmadd_pd(_mm512_loadu_pd(x0 + q), th_tail, d0);
		d1 = _mm512_fmadd_pd(_mm512_loadu_pd(x1 + q), th_tail, d1);
		d2 = _mm512_fmadd_pd(_mm512_loadu_pd(x2 + q), th_tail, d2);
		d3 = _mm512_fmadd_pd(_mm512_loadu_pd(x3 + q), th_tail, d3);
		d4 = _mm512_fmadd_pd(_mm512_loadu_pd(x4 + q), th_tail, d4);
		d5 = _mm512_fmadd_pd(_mm512_loadu_pd(x5 + q), th_tail, d5);
		d6 = _mm512_fmadd_pd(_mm512_loadu_pd(x6 + q), th_tail, d6);
		d7 = _mm512_fmadd_pd(_mm512_loadu_pd(x7 + q), th_tail, d7);
	} else if (tail) {
		d0 = _mm512_mul_pd(_mm512_maskz_loadu_pd(tail, x0), th_tail);
		d1 = _mm512_mul_pd(_mm512_maskz_loadu_pd(tail, x1), th_tail);
		d2 = _mm512_mul_pd(_mm512_maskz_loadu_pd(tail, x2), th_tail);
		d3 = _mm512_mul_pd(_mm512_maskz_loadu_pd(tail, x3), th_tail);
		d4 = _mm512_mul_pd(_mm512_maskz_loadu_pd(tail, x4), th_tail);
		d5 = _mm512_mul_pd(_mm512_maskz_loadu_pd(tail, x5), th_tail);
		d6 = _mm512_mul_pd(_mm512_maskz_loadu_pd(tail, x6), th_tail);
		d7 = _mm512_mul_pd(_mm512_maskz_loadu_pd(tail, x7), th_tail);
	}
	__m512d t = dp__hsum8(d0, d1, d2, d3, d4, d5, d6, d7);
	__m512d l = _mm512_loadu_pd(K->l1 + j);
	__m512d c = dp__coef8(m, t, _mm512_loadu_pd(K->y + j));
	__m512d ac = _mm512_and_pd(c, absm);
	__mmask8 fin = _mm512_cmp_pd_mask(ac, inf, _CMP_LT_OQ) &
		       _mm512_cmp_pd_mask(_mm512_and_pd(l, absm), inf, _CMP_LT_OQ);
	__mmask8 unc = _mm512_cmp_pd_mask(_mm512_mul_pd(ac, l), clipm, _CMP_LE_OQ);
	__m512d cl = _mm512_or_pd(_mm512_and_pd(c, sign), _mm512_div_pd(clipm, l));
	__m512d a = _mm512_mul_pd(_mm512_mask_blend_pd(unc, cl, c), _mm512_set1_pd(K->two_k));

	*a_out = a;
	return fin & _mm512_cmp_pd_mask(_mm512_and_pd(a, absm), _mm512_set1_pd(DP__A_BIG),
					_CMP_LE_OQ);
}

/* Phase B for one panel of nv (1..4, a constant after inlining) vectors of
 * columns: vector v < nv-1 covers columns c0 + 8v.. in full; the last one
 * starts at column `lc` and only its lanes in `lmask` are stored (the
 * overlapping ragged end, see dp__g8_scale); `masked` (a constant) loads it
 * with lmask, for rows shorter than 8. */
__attribute__((target("avx512f,avx512dq")))
DP__AI void dp__p8_accum(const dp__kern *K, size_t j0, size_t ng, const double *abuf,
			 const unsigned char *skip, size_t c0, const int nv, size_t lc,
			 __mmask8 lmask, const int masked)
{
	size_t p = K->p;
	const double *xb = K->x + j0 * p;
	__m512d s0 = _mm512_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
	size_t col0 = nv == 1 ? lc : c0, col1 = nv == 2 ? lc : c0 + 8, col2 = nv == 3 ? lc : c0 + 16;
	size_t col3 = lc;

#define DP__LD8(ptr, v) ((masked && (v) == nv - 1) ? _mm512_maskz_loadu_pd(lmask, (ptr)) \
						   : _mm512_loadu_pd(ptr))
#define DP__T8(r, v) _mm512_roundscale_pd(_mm512_mul_pd(b##r, \
	DP__LD8(xb + (r) * p + col##v, v)), DP__TZ)
#define DP__SUM8(v) _mm512_add_pd( \
	_mm512_add_pd(_mm512_add_pd(DP__T8(0, v), DP__T8(1, v)), \
		      _mm512_add_pd(DP__T8(2, v), DP__T8(3, v))), \
	_mm512_add_pd(_mm512_add_pd(DP__T8(4, v), DP__T8(5, v)), \
		      _mm512_add_pd(DP__T8(6, v), DP__T8(7, v))))
	for (size_t g = 0; g < ng; g++, xb += 8 * p) {
		const double *ab = abuf + 8 * g;

		if (skip[g])
			continue;
		__m512d b0 = _mm512_set1_pd(ab[0]), b1 = _mm512_set1_pd(ab[1]);
		__m512d b2 = _mm512_set1_pd(ab[2]), b3 = _mm512_set1_pd(ab[3]);
		__m512d b4 = _mm512_set1_pd(ab[4]), b5 = _mm512_set1_pd(ab[5]);
		__m512d b6 = _mm512_set1_pd(ab[6]), b7 = _mm512_set1_pd(ab[7]);

		s0 = _mm512_add_pd(s0, DP__SUM8(0));
		if (nv > 1)
			s1 = _mm512_add_pd(s1, DP__SUM8(1));
		if (nv > 2)
			s2 = _mm512_add_pd(s2, DP__SUM8(2));
		if (nv > 3)
			s3 = _mm512_add_pd(s3, DP__SUM8(3));
	}
#undef DP__SUM8
#undef DP__T8
#undef DP__LD8
	double *sum = K->sum;
	__mmask8 m0 = nv == 1 ? lmask : 0xff, m1 = nv == 2 ? lmask : 0xff;
	__mmask8 m2 = nv == 3 ? lmask : 0xff, m3 = lmask;

	_mm512_mask_storeu_pd(sum + col0, m0,
			      _mm512_add_pd(_mm512_maskz_loadu_pd(m0, sum + col0), s0));
	if (nv > 1)
		_mm512_mask_storeu_pd(sum + col1, m1,
				      _mm512_add_pd(_mm512_maskz_loadu_pd(m1, sum + col1), s1));
	if (nv > 2)
		_mm512_mask_storeu_pd(sum + col2, m2,
				      _mm512_add_pd(_mm512_maskz_loadu_pd(m2, sum + col2), s2));
	if (nv > 3)
		_mm512_mask_storeu_pd(sum + col3, m3,
				      _mm512_add_pd(_mm512_maskz_loadu_pd(m3, sum + col3), s3));
}

/* Columns [c, c + pt) (pt = 1 or 2) of the 4 rows at row0 (stride p) as
 * lanes (2r, 2r+1) of one vector; 8- or 16-byte loads inside each row. */
__attribute__((target("avx512f,avx512dq")))
DP__AI __m512d dp__pack4(const double *row0, size_t p, const int pt)
{
	__m128d e0 = pt == 2 ? _mm_loadu_pd(row0) : _mm_load_sd(row0);
	__m128d e1 = pt == 2 ? _mm_loadu_pd(row0 + p) : _mm_load_sd(row0 + p);
	__m128d e2 = pt == 2 ? _mm_loadu_pd(row0 + 2 * p) : _mm_load_sd(row0 + 2 * p);
	__m128d e3 = pt == 2 ? _mm_loadu_pd(row0 + 3 * p) : _mm_load_sd(row0 + 3 * p);
	__m512d v = _mm512_castpd128_pd512(e0);

	v = _mm512_insertf64x2(v, e1, 1);
	v = _mm512_insertf64x2(v, e2, 2);
	return _mm512_insertf64x2(v, e3, 3);
}

/* p <= 32 (at most 4 vectors of columns), linear and svm: one fused loop
 * over groups, all accumulators in registers, software-pipelined: the
 * scales of group g+1 (a long dependency chain) are computed in the
 * iteration that accumulates group g, so the core always has independent
 * work and the memory stream never pauses (no prefetch needed).  Nothing
 * in the loop calls a function (every vector register is call-clobbered,
 * so a call, even on a cold path, made GCC keep the accumulators on the
 * stack): groups with a dropped or slow row are listed and redone by
 * dp__row_scalar after each block. */
#define DP__SMALL_GROUPS 128
#ifndef DP__SMALL_PF
#define DP__SMALL_PF 12288
#endif
__attribute__((target("avx512f,avx512dq")))
DP__AI size_t dp__small8(const dp__kern *K, const dp_model m, const int nv, size_t lc,
			 __mmask8 lmask, const int masked, __m512d th_tail, const int pt)
{
	size_t n = K->n, p = K->p, dropped = 0, ng = n / 8, tc = p - (size_t)pt;
	const double *x = K->x;
	/* vectors of columns done row by row; with pt, the last one (a ragged
	 * end of pt = 1 or 2 columns) is done packed instead */
	const int nr = pt ? nv - 1 : nv;
	const __m512i ilo = _mm512_set_epi64(3, 3, 2, 2, 1, 1, 0, 0);
	const __m512i ihi = _mm512_set_epi64(7, 7, 6, 6, 5, 5, 4, 4);
	__m512d s0 = _mm512_setzero_pd(), s1 = s0, s2 = s0, s3 = s0, st = s0;
	size_t col0 = nv == 1 ? lc : 0, col1 = nv == 2 ? lc : 8, col2 = nv == 3 ? lc : 16;
	size_t col3 = lc;
	size_t bad[DP__SMALL_GROUPS];
	double tv[8], av[8] __attribute__((aligned(64)));

#define DP__LD8(ptr, v) ((masked && (v) == nv - 1) ? _mm512_maskz_loadu_pd(lmask, (ptr)) \
						   : _mm512_loadu_pd(ptr))
#define DP__T8(r, v) _mm512_roundscale_pd(_mm512_mul_pd(b##r, \
	DP__LD8(xb + (r) * p + col##v, v)), DP__TZ)
#define DP__SUM8(v) _mm512_add_pd( \
	_mm512_add_pd(_mm512_add_pd(DP__T8(0, v), DP__T8(1, v)), \
		      _mm512_add_pd(DP__T8(2, v), DP__T8(3, v))), \
	_mm512_add_pd(_mm512_add_pd(DP__T8(4, v), DP__T8(5, v)), \
		      _mm512_add_pd(DP__T8(6, v), DP__T8(7, v))))
	for (size_t g0 = 0; g0 < ng; g0 += DP__SMALL_GROUPS) {
		size_t g1 = ng - g0 < DP__SMALL_GROUPS ? ng : g0 + DP__SMALL_GROUPS, nbad = 0;
		__m512d a, a_next = _mm512_setzero_pd();
		__mmask8 ok = dp__g8_scale(K, m, 8 * g0, th_tail, &a), ok_next = 0;

		for (size_t g = g0; g < g1; g++) {
			const double *xb = x + 8 * g * p;

			/* 8 rows are p cache lines; ask for them about
			 * DP__SMALL_PF bytes ahead: the hardware prefetcher
			 * alone left the loop waiting on L3 (measured 1.5x
			 * slower on 20 MB) */
			for (size_t c = 0; c < p; c++)
				__builtin_prefetch((const char *)xb + DP__SMALL_PF + 64 * c, 0, 3);

			if (g + 1 < g1)
				ok_next = dp__g8_scale(K, m, 8 * g + 8, th_tail, &a_next);
			if (ok == 0xff) {
				/* broadcasts from memory use load ports, not
				 * the vector pipes that this loop saturates */
				_mm512_store_pd(av, a);
				__m512d b0 = _mm512_set1_pd(av[0]), b1 = _mm512_set1_pd(av[1]);
				__m512d b2 = _mm512_set1_pd(av[2]), b3 = _mm512_set1_pd(av[3]);
				__m512d b4 = _mm512_set1_pd(av[4]), b5 = _mm512_set1_pd(av[5]);
				__m512d b6 = _mm512_set1_pd(av[6]), b7 = _mm512_set1_pd(av[7]);

				if (nr > 0)
					s0 = _mm512_add_pd(s0, DP__SUM8(0));
				if (nr > 1)
					s1 = _mm512_add_pd(s1, DP__SUM8(1));
				if (nr > 2)
					s2 = _mm512_add_pd(s2, DP__SUM8(2));
				if (nr > 3)
					s3 = _mm512_add_pd(s3, DP__SUM8(3));
				if (pt) {
					/* the ragged ends of 4 rows in one vector,
					 * two lanes per row (an unused lane is 0) */
					__m512d tl = dp__pack4(xb + tc, p, pt);
					__m512d th = dp__pack4(xb + 4 * p + tc, p, pt);
					__m512d ml = _mm512_permutexvar_pd(ilo, a);
					__m512d mh = _mm512_permutexvar_pd(ihi, a);

					st = _mm512_add_pd(st, _mm512_add_pd(
						_mm512_roundscale_pd(_mm512_mul_pd(ml, tl), DP__TZ),
						_mm512_roundscale_pd(_mm512_mul_pd(mh, th), DP__TZ)));
				}
			} else {
				bad[nbad++] = g;
			}
			a = a_next;
			ok = ok_next;
		}
		for (size_t b = 0; b < nbad; b++) {
			size_t j = 8 * bad[b];

			for (int r = 0; r < 8; r++)
				tv[r] = dp__dot(x + (j + (size_t)r) * p, K->theta, p);
			for (int r = 0; r < 8; r++)
				dropped += dp__row_scalar(K, j + (size_t)r, tv[r]);
		}
	}
#undef DP__SUM8
#undef DP__T8
#undef DP__LD8
	double *sum = K->sum;
	/* with pt every row-by-row vector is full */
	__mmask8 m0 = nv == 1 && !pt ? lmask : 0xff, m1 = nv == 2 && !pt ? lmask : 0xff;
	__mmask8 m2 = nv == 3 && !pt ? lmask : 0xff, m3 = !pt ? lmask : 0xff;

	if (nr > 0)
		_mm512_mask_storeu_pd(sum + col0, m0,
				      _mm512_add_pd(_mm512_maskz_loadu_pd(m0, sum + col0), s0));
	if (nr > 1)
		_mm512_mask_storeu_pd(sum + col1, m1,
				      _mm512_add_pd(_mm512_maskz_loadu_pd(m1, sum + col1), s1));
	if (nr > 2)
		_mm512_mask_storeu_pd(sum + col2, m2,
				      _mm512_add_pd(_mm512_maskz_loadu_pd(m2, sum + col2), s2));
	if (nr > 3)
		_mm512_mask_storeu_pd(sum + col3, m3,
				      _mm512_add_pd(_mm512_maskz_loadu_pd(m3, sum + col3), s3));
	if (pt) {
		double tl[8];

		_mm512_storeu_pd(tl, st);
		sum[tc] += (tl[0] + tl[2]) + (tl[4] + tl[6]);
		if (pt == 2)
			sum[tc + 1] += (tl[1] + tl[3]) + (tl[5] + tl[7]);
	}
	for (size_t j = 8 * ng; j < n; j++)
		dropped += dp__row_scalar(K, j, dp__dot(x + j * p, K->theta, p));
	return dropped;
}

__attribute__((target("avx512f,avx512dq")))
static size_t dp__kernel_avx512(const dp__kern *K)
{
	double abuf[DP__BLOCK_MAX], tv[8];
	unsigned char skip[DP__BLOCK_MAX / 8];
	size_t n = K->n, p = K->p, dropped = 0, rows = dp__simd_block_rows(p, 8);
	size_t nfull = n - n % 8, rem = p % 8, nfv = p / 8, nvec = nfv + (rem != 0);
	/* the ragged end: columns p-rem..p-1, as lanes 8-rem..7 of a load at
	 * p-8 (p >= 8) or lanes 0..p-1 of a masked load at 0 (p < 8) */
	__mmask8 rmask = p >= 8 ? (__mmask8)(0xffu << (8 - rem)) : (__mmask8)((1u << p) - 1);
	size_t rcol = p >= 8 ? p - 8 : 0;
	__m512d th_tail = _mm512_maskz_loadu_pd(rmask, K->theta + rcol);

	if (nvec <= 4 && K->m != DP_MODEL_LOGISTIC) {
		size_t lc = rem ? rcol : 8 * (nvec - 1);
		__mmask8 lm = rem ? rmask : 0xff;

		/* a ragged end of 1 or 2 columns is packed (4 rows per
		 * vector): for p = 10, phase B does 10 vectors per group
		 * instead of 16 (measured 7-9% faster overall) */
		int pt = p > 8 && (rem == 1 || rem == 2) ? (int)rem : 0;
#define DP__SMALL(mm) do { \
		if (p < 8) \
			return dp__small8(K, mm, 1, 0, rmask, 1, th_tail, 0); \
		if (pt == 1) \
			switch (nvec) { \
			case 2: return dp__small8(K, mm, 2, lc, lm, 0, th_tail, 1); \
			case 3: return dp__small8(K, mm, 3, lc, lm, 0, th_tail, 1); \
			default: return dp__small8(K, mm, 4, lc, lm, 0, th_tail, 1); \
			} \
		if (pt == 2) \
			switch (nvec) { \
			case 2: return dp__small8(K, mm, 2, lc, lm, 0, th_tail, 2); \
			case 3: return dp__small8(K, mm, 3, lc, lm, 0, th_tail, 2); \
			default: return dp__small8(K, mm, 4, lc, lm, 0, th_tail, 2); \
			} \
		switch (nvec) { \
		case 1: return dp__small8(K, mm, 1, lc, lm, 0, th_tail, 0); \
		case 2: return dp__small8(K, mm, 2, lc, lm, 0, th_tail, 0); \
		case 3: return dp__small8(K, mm, 3, lc, lm, 0, th_tail, 0); \
		default: return dp__small8(K, mm, 4, lc, lm, 0, th_tail, 0); \
		} \
	} while (0)
		if (K->m == DP_MODEL_LINEAR)
			DP__SMALL(DP_MODEL_LINEAR);
		DP__SMALL(DP_MODEL_SVM);
#undef DP__SMALL
	}
	for (size_t j0 = 0; j0 < nfull; j0 += rows) {
		size_t nb = nfull - j0 < rows ? nfull - j0 : rows, ng = nb / 8;

		for (size_t g = 0; g < ng; g++) {
			size_t j = j0 + 8 * g;

			__m512d a;

			dp__prefetch(K->x + j * p, 8 * p);
			skip[g] = dp__g8_scale(K, K->m, j, th_tail, &a) != 0xff;
			_mm512_storeu_pd(abuf + 8 * g, a);
			if (skip[g]) {
				for (int r = 0; r < 8; r++)
					tv[r] = dp__dot(K->x + (j + (size_t)r) * p, K->theta, p);
				for (int r = 0; r < 8; r++)
					dropped += dp__row_scalar(K, j + (size_t)r, tv[r]);
			}
		}
		for (size_t v0 = 0; v0 < nvec; v0 += 4) {
			int nv = (int)(nvec - v0 < 4 ? nvec - v0 : 4);
			size_t vl = v0 + (size_t)nv - 1, c0 = 8 * v0;

			if (vl < nfv || rem == 0) {
				size_t lc = 8 * vl;
				switch (nv) {
				case 1: dp__p8_accum(K, j0, ng, abuf, skip, c0, 1, lc, 0xff, 0); break;
				case 2: dp__p8_accum(K, j0, ng, abuf, skip, c0, 2, lc, 0xff, 0); break;
				case 3: dp__p8_accum(K, j0, ng, abuf, skip, c0, 3, lc, 0xff, 0); break;
				default: dp__p8_accum(K, j0, ng, abuf, skip, c0, 4, lc, 0xff, 0); break;
				}
			} else if (p >= 8) {
				switch (nv) {
				case 1: dp__p8_accum(K, j0, ng, abuf, skip, c0, 1, rcol, rmask, 0); break;
				case 2: dp__p8_accum(K, j0, ng, abuf, skip, c0, 2, rcol, rmask, 0); break;
				case 3: dp__p8_accum(K, j0, ng, abuf, skip, c0, 3, rcol, rmask, 0); break;
				default: dp__p8_accum(K, j0, ng, abuf, skip, c0, 4, rcol, rmask, 0); break;
				}
			} else {
				dp__p8_accum(K, j0, ng, abuf, skip, 0, 1, 0, rmask, 1);
			}
		}
	}
	for (size_t j = nfull; j < n; j++)
		dropped += dp__row_scalar(K, j, dp__dot(K->x + j * p, K->theta, p));
	return dropped;
}

__attribute__((target("avx2,fma")))
DP__AI __m256d dp__hsum4(__m256d d0, __m256d d1, __m256d d2, __m256d d3)
{
	__m256d s01 = _mm256_hadd_pd(d0, d1), s23 = _mm256_hadd_pd(d2, d3);

	return _mm256_add_pd(_mm256_permute2f128_pd(s01, s23, 0x20),
			     _mm256_permute2f128_pd(s01, s23, 0x31));
}

__attribute__((target("avx2,fma")))
DP__AI __m256d dp__coef4(dp_model m, __m256d t, __m256d y)
{
	__m256d sign = _mm256_set1_pd(-0.0);

	if (m == DP_MODEL_LINEAR)
		return _mm256_mul_pd(_mm256_set1_pd(2.0), _mm256_sub_pd(t, y));
	if (m == DP_MODEL_SVM) {
		__m256d mt = _mm256_mul_pd(y, t), one = _mm256_set1_pd(1.0);
		__m256d lt = _mm256_cmp_pd(mt, one, _CMP_LT_OQ);
		__m256d ge = _mm256_cmp_pd(mt, one, _CMP_GE_OQ);
		__m256d c = _mm256_blendv_pd(_mm256_set1_pd(NAN), _mm256_xor_pd(y, sign), lt);

		return _mm256_blendv_pd(c, _mm256_setzero_pd(), ge);
	}
	double tv[4], yv[4];

	_mm256_storeu_pd(tv, t);
	_mm256_storeu_pd(yv, y);
	for (int r = 0; r < 4; r++)
		tv[r] = dp_model_coef(m, tv[r], yv[r]);
	return _mm256_loadu_pd(tv);
}

/* Lane mask with the first `w` (0..4) of 4 lanes set. */
__attribute__((target("avx2,fma")))
DP__AI __m256i dp__mask4(size_t w)
{
	return _mm256_set_epi64x(w > 3 ? -1 : 0, w > 2 ? -1 : 0, w > 1 ? -1 : 0, w > 0 ? -1 : 0);
}

__attribute__((target("avx2,fma")))
DP__AI int dp__g4_scale(const dp__kern *K, size_t j, double *t_out, double *a_out)
{
	size_t p = K->p, pf = p & ~(size_t)3, rem = p & 3, q;
	__m256i tail = dp__mask4(rem);
	const double *th = K->theta;
	const double *x0 = K->x + j * p, *x1 = x0 + p, *x2 = x1 + p, *x3 = x2 + p;
	const __m256d absm = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
	const __m256d sign = _mm256_set1_pd(-0.0), inf = _mm256_set1_pd(INFINITY);
	const __m256d clipm = _mm256_set1_pd(K->clipm);
	__m256d d0 = _mm256_setzero_pd(), d1 = d0, d2 = d0, d3 = d0;

	for (q = 0; q < pf; q += 4) {
		__m256d tq = _mm256_loadu_pd(th + q);
		d0 = _mm256_fmadd_pd(_mm256_loadu_pd(x0 + q), tq, d0);
		d1 = _mm256_fmadd_pd(_mm256_loadu_pd(x1 + q), tq, d1);
		d2 = _mm256_fmadd_pd(_mm256_loadu_pd(x2 + q), tq, d2);
		d3 = _mm256_fmadd_pd(_mm256_loadu_pd(x3 + q), tq, d3);
	}
	if (rem) {
		__m256d tq = _mm256_maskload_pd(th + q, tail);
		d0 = _mm256_fmadd_pd(_mm256_maskload_pd(x0 + q, tail), tq, d0);
		d1 = _mm256_fmadd_pd(_mm256_maskload_pd(x1 + q, tail), tq, d1);
		d2 = _mm256_fmadd_pd(_mm256_maskload_pd(x2 + q, tail), tq, d2);
		d3 = _mm256_fmadd_pd(_mm256_maskload_pd(x3 + q, tail), tq, d3);
	}
	__m256d t = dp__hsum4(d0, d1, d2, d3);
	__m256d l = _mm256_loadu_pd(K->l1 + j);
	__m256d c = dp__coef4(K->m, t, _mm256_loadu_pd(K->y + j));
	__m256d ac = _mm256_and_pd(c, absm);
	__m256d fin = _mm256_and_pd(_mm256_cmp_pd(ac, inf, _CMP_LT_OQ),
				    _mm256_cmp_pd(_mm256_and_pd(l, absm), inf, _CMP_LT_OQ));
	__m256d unc = _mm256_cmp_pd(_mm256_mul_pd(ac, l), clipm, _CMP_LE_OQ);
	__m256d cl = _mm256_or_pd(_mm256_and_pd(c, sign), _mm256_div_pd(clipm, l));
	__m256d a = _mm256_mul_pd(_mm256_blendv_pd(cl, c, unc), _mm256_set1_pd(K->two_k));
	__m256d ok = _mm256_and_pd(fin, _mm256_cmp_pd(_mm256_and_pd(a, absm),
						      _mm256_set1_pd(DP__A_BIG), _CMP_LE_OQ));

	_mm256_storeu_pd(t_out, t);
	_mm256_storeu_pd(a_out, a);
	return _mm256_movemask_pd(ok) == 0xf;
}

__attribute__((target("avx2,fma")))
DP__AI void dp__p4_accum(const dp__kern *K, size_t j0, size_t ng, const double *abuf,
			 const unsigned char *skip, size_t c0, const int nv, size_t wlast)
{
	size_t p = K->p;
	const double *xb = K->x + j0 * p + c0;
	__m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
	__m256i all = _mm256_set1_epi64x(-1), ml = dp__mask4(wlast);
	__m256i m0 = nv == 1 ? ml : all, m1 = nv == 2 ? ml : all;
	__m256i m2 = nv == 3 ? ml : all, m3 = ml;

#define DP__T4(r, v, m) _mm256_round_pd(_mm256_mul_pd(b##r, \
	_mm256_maskload_pd(xb + (r) * p + 4 * (v), (m))), DP__TZ)
#define DP__SUM4(v, m) _mm256_add_pd(_mm256_add_pd(DP__T4(0, v, m), DP__T4(1, v, m)), \
				     _mm256_add_pd(DP__T4(2, v, m), DP__T4(3, v, m)))
	for (size_t g = 0; g < ng; g++, xb += 4 * p) {
		const double *ab = abuf + 4 * g;

		if (skip[g])
			continue;
		__m256d b0 = _mm256_broadcast_sd(ab), b1 = _mm256_broadcast_sd(ab + 1);
		__m256d b2 = _mm256_broadcast_sd(ab + 2), b3 = _mm256_broadcast_sd(ab + 3);

		s0 = _mm256_add_pd(s0, DP__SUM4(0, m0));
		if (nv > 1)
			s1 = _mm256_add_pd(s1, DP__SUM4(1, m1));
		if (nv > 2)
			s2 = _mm256_add_pd(s2, DP__SUM4(2, m2));
		if (nv > 3)
			s3 = _mm256_add_pd(s3, DP__SUM4(3, m3));
	}
#undef DP__SUM4
#undef DP__T4
	double *sum = K->sum + c0;

	_mm256_maskstore_pd(sum, m0, _mm256_add_pd(_mm256_maskload_pd(sum, m0), s0));
	if (nv > 1)
		_mm256_maskstore_pd(sum + 4, m1, _mm256_add_pd(_mm256_maskload_pd(sum + 4, m1), s1));
	if (nv > 2)
		_mm256_maskstore_pd(sum + 8, m2, _mm256_add_pd(_mm256_maskload_pd(sum + 8, m2), s2));
	if (nv > 3)
		_mm256_maskstore_pd(sum + 12, m3,
				    _mm256_add_pd(_mm256_maskload_pd(sum + 12, m3), s3));
}

__attribute__((target("avx2,fma")))
static size_t dp__kernel_avx2(const dp__kern *K)
{
	double abuf[DP__BLOCK_MAX], tv[4];
	unsigned char skip[DP__BLOCK_MAX / 4];
	size_t n = K->n, p = K->p, dropped = 0, rows = dp__simd_block_rows(p, 4);
	size_t nfull = n - n % 4;

	for (size_t j0 = 0; j0 < nfull; j0 += rows) {
		size_t nb = nfull - j0 < rows ? nfull - j0 : rows, ng = nb / 4;

		for (size_t g = 0; g < ng; g++) {
			size_t j = j0 + 4 * g;

			dp__prefetch(K->x + j * p, 4 * p);
			skip[g] = !dp__g4_scale(K, j, tv, abuf + 4 * g);
			if (skip[g])
				for (int r = 0; r < 4; r++)
					dropped += dp__row_scalar(K, j + (size_t)r, tv[r]);
		}
		for (size_t c0 = 0; c0 < p; c0 += 16) {
			size_t w = p - c0 < 16 ? p - c0 : 16;
			int nv = (int)((w + 3) / 4);
			size_t wlast = w - 4 * (size_t)(nv - 1);

			switch (nv) {
			case 1: dp__p4_accum(K, j0, ng, abuf, skip, c0, 1, wlast); break;
			case 2: dp__p4_accum(K, j0, ng, abuf, skip, c0, 2, wlast); break;
			case 3: dp__p4_accum(K, j0, ng, abuf, skip, c0, 3, wlast); break;
			default: dp__p4_accum(K, j0, ng, abuf, skip, c0, 4, wlast); break;
			}
		}
	}
	for (size_t j = nfull; j < n; j++)
		dropped += dp__row_scalar(K, j, dp__dot(K->x + j * p, K->theta, p));
	return dropped;
}
#endif

typedef size_t (*dp__kernel_fn)(const dp__kern *);

/* Best variant for this CPU.  DP_KERNEL_ISA=blas|avx2|avx512 caps the
 * choice (tests exercise every variant; benchmarks compare them).  All
 * variants return the same sums: the terms are identical and their
 * additions exact; only the scores' rounding may differ between variants,
 * as it may between BLAS builds. */
static dp__kernel_fn dp__pick_kernel(void)
{
#ifdef DP__X86_SIMD
	const char *cap = getenv("DP_KERNEL_ISA");
	int lvl = 2;

	if (cap != NULL && strcmp(cap, "blas") == 0)
		lvl = 0;
	else if (cap != NULL && strcmp(cap, "avx2") == 0)
		lvl = 1;
	__builtin_cpu_init();
	if (lvl >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
		return dp__kernel_avx512;
	if (lvl >= 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return dp__kernel_avx2;
#endif
	return dp__kernel_blas;
}

int dp_model_clipped_grid_sum(dp_model m, const dp_dataset *ds, const double *theta,
			      double clip, int k, double *sum, size_t *dropped)
{
	size_t p = ds->p, n = ds->n, drop;

	if (!(clip > 0.0) || !isfinite(clip))
		return dp_error_set(DP_EINVAL, "clip bound must be positive and finite (got %g)", clip);
	if (p == 0)
		return dp_error_set(DP_EINVAL, "dataset has no columns");
	for (size_t q = 0; q < p; q++)
		if (!isfinite(theta[q]))
			return dp_error_set(DP_EINVAL, "theta[%zu] is not finite", q);
	if (k < -1022 || k > 1023 || !((double)n * clip * ldexp(1.0, k) <= 0x1p52))
		return dp_error_set(DP_EINVAL,
				    "grid 2^-%d too fine for %zu rows with clip %g (sum must stay below 2^52)",
				    k, n, clip);

	dp__kern K = {
		.m = m, .n = n, .p = p, .x = ds->x, .y = ds->y, .l1 = ds->row_l1,
		.theta = theta, .k = k, .two_k = ldexp(1.0, k), .sum = sum,
		/* 1 - (p+8) 2^-52 is exact for any p we can hold in memory */
		.clipm = clip * (1.0 - (double)(p + 8) * 0x1p-52),
	};
	for (size_t q = 0; q < p; q++)
		sum[q] = 0.0;
	drop = dp__pick_kernel()(&K);
	if (dropped != NULL)
		*dropped = drop;
	return 0;
}
