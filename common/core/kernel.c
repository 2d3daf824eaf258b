/* SPDX-License-Identifier: Apache-2.0 */
#include "common/core/kernel.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/kernel_isa.h"

/* What the kernel computes, exactly (tests/unit/test_kernel.c re-implements
 * this rule with a plain per-row loop and expects bit-identical sums):
 *
 * (written for L1; the L2 kernel applies the same rule with row_l2 in
 * place of row_l1, plus the exact check below, docs/privacy.md §6):
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
 * finite or huge take a slow path in the safe order.
 *
 * The variants (kernel.inc.c) apply the same rule in vector lanes and send
 * every row they do not take there through dp__kernel_row below. */

enum { ROW_OK, ROW_DROP, ROW_SLOW };

/* The scale rule for one row; every variant must agree with it. */
static int row_scale(const dp__kernel_job *K, double t, double y, double l, double *a2,
		     double *a)
{
	double c = dp_model_coef(K->m, t, y);

	if (!(isfinite(c) && isfinite(l)))
		return ROW_DROP;
	if (fabs(c) * l <= K->clipm)
		*a = c;
	else
		*a = copysign(K->clipm / l, c);
	*a2 = *a * K->two_k;
	if (!(fabs(*a2) <= DP_KERNEL_A_BIG))
		return ROW_SLOW;
	return ROW_OK;
}

/* trunc() for |v| <= 2^52 (all terms here: |a_j x_jq| 2^k <= clip 2^k <=
 * 2^52, checked on entry): the conversion truncates toward zero and is
 * inline, where trunc() is a libm call on baseline x86-64. */
static double trunc_small(double v)
{
	return (double)(int64_t)v;
}

/* ---- L2: the exact check (docs/privacy.md §6 "Clipping in L2") ----------
 *
 * A row's lattice vector q is computed here from x as the vector path
 * computes it (trunc(a 2^k x_q), or trunc(ldexp(a x_q, k)) on the slow
 * order), and only added once sum q^2 <= m2 = floor((clip 2^k)^2) holds in
 * 128-bit integers.  Rows of the vector path satisfy it by the floating
 * bound of docs/privacy.md §6 (so the check changes nothing there and the
 * variants agree); the scalar rule checks every row it takes all the same,
 * and the slow order and rows with norms above lmax rely on it.  A failing
 * row is shrunk: q_q -> trunc(f q_q) with f < 1 from the excess, checked
 * again, f halved while it still fails, and 0 after 64 halvings: one
 * deterministic function of the row, so every variant gets the same. */

/* The magnitudes compared are at most 2^53 (clamped: a term past that
 * could only come from a row the check then shrinks, and (int64_t) of
 * a larger value would be undefined). */
static double lattice_term(const dp__kernel_job *K, double a, double a2, int slow, double x)
{
	double v = slow ? ldexp(a * x, K->k) : a2 * x;

	v = fmin(fmax(v, -0x1p53), 0x1p53);
	return (double)(int64_t)v;
}

/* sum over the row of trunc(f q_q)^2, stopping once it exceeds m2 (so no
 * overflow: m2 <= 2^104 and each square <= 2^106). */
static unsigned __int128 sum_squares(const dp__kernel_job *K, const double *x, double a,
				     double a2, int slow, double f)
{
	unsigned __int128 s = 0;

	for (size_t q = 0; q < K->p && s <= K->m2; q++) {
		double v = trunc(f * lattice_term(K, a, a2, slow, x[q]));
		uint64_t u = (uint64_t)fabs(v);

		s += (unsigned __int128)u * u;
	}
	return s;
}

/* The largest f in the sequence above whose vector passes (0: none). */
static double l2_shrink(const dp__kernel_job *K, const double *x, double a, double a2, int slow)
{
	unsigned __int128 s = sum_squares(K, x, a, a2, slow, 1.0);
	double f;

	if (s <= K->m2)
		return 1.0;
	/* f^2 s <= m2 (1 - 2^-19) up to roundings of 2^-50: passes at once */
	f = sqrt((double)K->m2 / (double)s) * (1.0 - 0x1p-20);
	for (int i = 0; i < 64; i++, f *= 0.5)
		if (sum_squares(K, x, a, a2, slow, f) <= K->m2)
			return f;
	return 0.0;
}

static void l2_row(const dp__kernel_job *K, const double *x, double a, double a2, int slow)
{
	double f = l2_shrink(K, x, a, a2, slow);

	if (f == 0.0)
		return;
	for (size_t q = 0; q < K->p; q++)
		K->sum[q] += trunc(f * lattice_term(K, a, a2, slow, x[q]));
}

/* Rows with a = 0 are skipped, so a dropped row's non-finite x never
 * reaches sum. */
size_t dp__kernel_row(const dp__kernel_job *K, size_t j, double t)
{
	const double *x = K->x + j * K->p;
	double a2, a;
	int rule = row_scale(K, t, K->y[j], K->norm[j], &a2, &a);

	if (K->l2 && rule != ROW_DROP) {
		if (a2 != 0.0 || rule == ROW_SLOW)
			l2_row(K, x, a, a2, rule == ROW_SLOW);
		return 0;
	}
	switch (rule) {
	case ROW_DROP:
		return 1;
	case ROW_SLOW:
		for (size_t q = 0; q < K->p; q++)
			K->sum[q] += trunc_small(ldexp(a * x[q], K->k));
		return 0;
	default:
		if (a2 != 0.0)
			for (size_t q = 0; q < K->p; q++)
				K->sum[q] += trunc_small(a2 * x[q]);
		return 0;
	}
}

/* ---- choosing a variant -------------------------------------------------- */

#ifdef DP_KERNEL_X86
static int has_avx2(void)
{
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

static int has_avx512(void)
{
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
}
#endif

typedef struct variant {
	const char *name;
	size_t (*run)(const dp__kernel_job *K);
	int (*usable)(void);    /* NULL: any CPU */
} variant;

/* Best last.  All return the same sums: the terms are identical and their
 * additions exact; only the scores' rounding differs between variants. */
static const variant variants[] = {
	{ "generic", dp__kernel_generic, NULL },
#ifdef DP_KERNEL_X86
	{ "avx2", dp__kernel_avx2, has_avx2 },
	{ "avx512", dp__kernel_avx512, has_avx512 },
#endif
};
#define DP_NVARIANTS (sizeof(variants) / sizeof(variants[0]))

static const variant *current = &variants[0];

static int usable(const variant *v)
{
	return v->usable == NULL || v->usable();
}

/* The best variant this CPU runs, no better than the one DP_KERNEL_ISA
 * names (an unknown name caps nothing). */
__attribute__((constructor)) static void pick_at_start(void)
{
	const char *cap = getenv("DP_KERNEL_ISA");

#ifdef DP_KERNEL_X86
	__builtin_cpu_init();
#endif
	for (size_t i = 0; i < DP_NVARIANTS; i++) {
		if (usable(&variants[i]))
			current = &variants[i];
		if (cap != NULL && strcmp(cap, variants[i].name) == 0)
			break;
	}
}

const char *dp_kernel_variant(void)
{
	return current->name;
}

int dp_kernel_select(const char *name)
{
	if (name == NULL) {
		current = &variants[0];
		pick_at_start();
		return 0;
	}
	for (size_t i = 0; i < DP_NVARIANTS; i++) {
		if (strcmp(name, variants[i].name) != 0)
			continue;
		if (!usable(&variants[i]))
			return dp_error_set(DP_EINVAL, "kernel variant '%s' needs instructions this CPU lacks",
					    name);
		current = &variants[i];
		return 0;
	}
	return dp_error_set(DP_EINVAL, "unknown kernel variant '%s'", name);
}

/* floor((clip 2^k)^2) exactly: clip = mc 2^(ec-53) with mc < 2^53, so the
 * square is mc^2 2^(2(ec-53+k)), mc^2 < 2^106.  With a row, the caller's
 * check n clip 2^k <= 2^52 makes the shift <= 0; without one (n = 0) the
 * value is not used, and saturates instead of shifting past 128 bits. */
static unsigned __int128 clip_square(double clip, int k)
{
	int ec, sh;
	uint64_t mc = (uint64_t)ldexp(frexp(clip, &ec), 53);
	unsigned __int128 sq = (unsigned __int128)mc * mc;

	sh = 2 * (ec - 53 + k);
	if (sh > 20)
		return ~(unsigned __int128)0;
	if (sh >= 0)
		return sq << sh;
	return -sh >= 128 ? 0 : sq >> -sh;
}

/* Both norms: validation, the job, the variant. */
static int grid_sum(dp_model m, const dp_dataset *ds, int l2, const double *theta, double clip,
		    int k, double *sum, size_t *dropped)
{
	size_t p, n, drop;

	DP_REQUIRE(ds != NULL && theta != NULL && sum != NULL);
	DP_REQUIRE(m == DP_MODEL_LINEAR || m == DP_MODEL_LOGISTIC || m == DP_MODEL_SVM);
	DP_REQUIRE(!l2 || ds->row_l2 != NULL);
	p = ds->p;
	n = ds->n;
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

	dp__kernel_job K = {
		.m = m, .n = n, .p = p, .x = ds->x, .y = ds->y,
		.norm = l2 ? ds->row_l2 : ds->row_l1,
		.theta = theta, .k = k, .two_k = ldexp(1.0, k), .sum = sum,
		/* 1 - (p+8) 2^-52 is exact for any p we can hold in memory */
		.clipm = clip * (1.0 - (double)(p + 8) * 0x1p-52),
		.lmax = DBL_MAX, .l2 = l2,
	};
	if (l2) {
		K.m2 = clip_square(clip, k);
		/* the floating bound needs clip >= 2^-400 and norms <= 2^600
		 * (docs/privacy.md §6 "Clipping in L2"); otherwise every row
		 * takes the exact scalar rule */
		K.lmax = clip >= 0x1p-400 ? 0x1p600 : -1.0;
	}
	for (size_t q = 0; q < p; q++)
		sum[q] = 0.0;
	drop = current->run(&K);
	if (dropped != NULL)
		*dropped = drop;
	return 0;
}

int dp_kernel_clipped_grid_sum(dp_model m, const dp_dataset *ds, const double *theta,
			       double clip, int k, double *sum, size_t *dropped)
{
	return grid_sum(m, ds, 0, theta, clip, k, sum, dropped);
}

int dp_kernel_clipped_grid_sum_l2(dp_model m, const dp_dataset *ds, const double *theta,
				  double clip, int k, double *sum, size_t *dropped)
{
	return grid_sum(m, ds, 1, theta, clip, k, sum, dropped);
}
