/* SPDX-License-Identifier: Apache-2.0 */
/* The privacy kernel's body (the rule it applies: kernel.c), written once
 * against a few vector primitives and compiled once per instruction set:
 * kernel_generic.c, kernel_avx2.c and kernel_avx512.c each define the
 * primitives and settings below, include this file, and export its
 * run() as their variant.  Not compiled on its own.
 *
 * Primitives (W lanes of double; all inline, no side effects):
 *   vec, vmask           the vector, a lane mask
 *   vzero vset1 vload vstore              unaligned loads and stores
 *   vload_mask vstore_mask                only the lanes in the mask (others
 *                                         read as 0, not touched, no fault)
 *   vadd vsub vmul vdiv vabs vneg         lane-wise, IEEE rounding
 *   vfma(a, b, c)        a*b + c with one rounding
 *   vtrunc               toward zero, exact
 *   vcopysign(m, s)      |m| with the sign of s (m >= 0 here)
 *   vlt vle vge          ordered compares (false with a NaN) -> vmask
 *   vblend(m, a, b)      b in the lanes of m, a elsewhere
 *   vmask_and vmask_all vmask_full vmask_first(k) vmask_last(k)
 *   vmask_count(m)       the number of lanes in m, without a branch
 *   vhsum(d)             W vectors -> one whose lane r sums the lanes of d[r]
 *   vpack_half(x, p, pt) with DP_KERNEL_FUSED: columns [0, pt) (pt = 1, 2)
 *                        of the W/2 rows at x (stride p) as lanes (2r, 2r+1)
 *   vdup_lo, vdup_hi     with DP_KERNEL_FUSED: lanes (0,0,1,1,..) and
 *                        (W/2,W/2,..) of a vector
 * Settings, enum constants (docs/bench.md has the measurements behind them):
 *   W                    lanes (1, 4, 8)
 *   BLOCK_BYTES, BLOCK_MIN    rows per block
 *   PF_BLOCK, PF_FUSED   prefetch distance in bytes (0: none)
 *   TAIL_OVERLAP         a row's ragged end is read as its last full vector
 *                        (else: a masked load)
 *   BLAS_SCORES          a block's scores come from one cblas_dgemv
 *   RESCORE              rows of a group that failed the vector test (a
 *                        norm that is not finite, a slow row) are scored
 *                        again one by one (else: the group's scores)
 * and the macro DP_KERNEL_FUSED: the software-pipelined path for p <= 4 W.
 *
 * TAIL_OVERLAP, BLAS_SCORES and RESCORE keep each variant's scores rounded
 * exactly as they were before the variants shared this source, so that
 * every variant's sums stayed bit-identical. */

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <cblas.h>

#include "common/core/kernel_isa.h"

#define DP_UNROLL _Pragma("GCC unroll 8")

/* A row's ragged end, its last p mod W columns. */
typedef struct tail {
	size_t rem;     /* p mod W (0: none) */
	size_t col;     /* first column of the vector that reads it */
	vmask m;        /* the lanes of that vector holding those columns */
	int masked;     /* read with vload_mask (else every lane is inside the row) */
	vec th;         /* theta in the lanes of m, 0 in the others */
} tail;

/* Read as the row's last full vector where the variant does so (the lanes
 * already counted meet theta = 0; plain loads inside the row measured
 * faster than a masked load running past its end), else masked. */
static tail tail_init(size_t p, const double *theta)
{
	tail tl = { .rem = p % W, .col = p, .m = vmask_full(), .masked = 0, .th = vzero() };

	if (tl.rem == 0)
		return tl;
	if (TAIL_OVERLAP && p >= W) {
		tl.col = p - W;
		tl.m = vmask_last(tl.rem);
	} else {
		tl.col = p - tl.rem;
		tl.m = vmask_first(tl.rem);
		tl.masked = 1;
	}
	tl.th = vload_mask(theta + tl.col, tl.m);
	return tl;
}

/* Ask for the lines `dist` bytes ahead of [x, x + len): the hardware
 * prefetcher alone left the loops waiting on L3 (docs/bench.md).  A
 * prefetch beyond the end of the matrix is harmless. */
DP_KERNEL_INLINE void prefetch_ahead(const double *x, size_t len, size_t dist)
{
	const char *c = (const char *)x + dist, *e = c + len * sizeof(double);

	if (dist == 0)
		return;
	for (; c < e; c += 64)
		__builtin_prefetch(c, 0, 3);
}

/* The score of one row outside the vector paths, in column order. */
static inline double row_dot(const dp__kernel_job *K, size_t j)
{
	const double *x = K->x + j * K->p;
	double s = 0.0;

	for (size_t q = 0; q < K->p; q++)
		s = fma(x[q], K->theta[q], s);
	return s;
}

/* A group that failed the vector test (group_scale: a row whose norm is
 * not finite, or a slow row; properties of the data, never of theta) is
 * done row by row by the scalar rule; tv: the group's scores, NULL to
 * score the rows again. */
static size_t redo_group(const dp__kernel_job *K, size_t j, const double *tv)
{
	size_t dropped = 0;

	for (size_t r = 0; r < W; r++)
		dropped += dp__kernel_row(K, j + r, tv != NULL ? tv[r] : row_dot(K, j + r));
	return dropped;
}

/* t[0] + ... + t[W-1], pairwise: short dependency chains.  The order does
 * not matter for the result: the terms are integers, the sums exact. */
DP_KERNEL_INLINE vec tree_sum(vec *t)
{
	DP_UNROLL
	for (int w = W / 2; w > 0; w /= 2) {
		DP_UNROLL
		for (int i = 0; i < w; i++)
			t[i] = vadd(t[i], t[i + w]);
	}
	return t[0];
}

/* trunc(b_r x_r[col .. col+W)) summed over the W rows of a group (row r at
 * xb + r p); the columns read with vload_mask(lm) if `masked`. */
DP_KERNEL_INLINE vec group_terms(const vec *b, const double *xb, size_t p, size_t col,
				 const int masked, vmask lm)
{
	vec t[W];

	DP_UNROLL
	for (int r = 0; r < W; r++) {
		const double *xr = xb + (size_t)r * p + col;

		t[r] = vtrunc(vmul(b[r], masked ? vload_mask(xr, lm) : vload(xr)));
	}
	return tree_sum(t);
}

/* How a row's ragged end is read. */
enum { TAIL_NONE, TAIL_LOAD, TAIL_MASKED };

DP_KERNEL_INLINE int tail_read(const tail *tl)
{
	if (tl->rem == 0)
		return TAIL_NONE;
	return tl->masked ? TAIL_MASKED : TAIL_LOAD;
}

/* The scores of the W rows at j: one accumulator per row over the nq full
 * vectors of columns and the ragged end (read as `how`), then the
 * transposing sum.  Both are constants in the fused path, where the
 * registers are scarce (a run-time tail test there cost 5-8 %). */
DP_KERNEL_INLINE vec group_dot(const dp__kernel_job *K, size_t j, const tail tl, size_t nq,
			       const int how)
{
	size_t p = K->p;
	const double *x = K->x + j * p, *th = K->theta, *xt = x + tl.col;
	vec d[W];

	DP_UNROLL
	for (int r = 0; r < W; r++)
		d[r] = vzero();
	for (size_t q = 0; q < W * nq; q += W) {
		vec tq = vload(th + q);

		DP_UNROLL
		for (int r = 0; r < W; r++)
			d[r] = vfma(vload(x + (size_t)r * p + q), tq, d[r]);
	}
	if (how == TAIL_MASKED) {
		DP_UNROLL
		for (int r = 0; r < W; r++)
			d[r] = vfma(vload_mask(xt + (size_t)r * p, tl.m), tl.th, d[r]);
	} else if (how == TAIL_LOAD) {
		DP_UNROLL
		for (int r = 0; r < W; r++)
			d[r] = vfma(vload(xt + (size_t)r * p), tl.th, d[r]);
	}
	return vhsum(d);
}

/* dp_model_coef in W lanes: linear and svm inline, logistic lane by lane. */
DP_KERNEL_INLINE vec coef_lanes(dp_model m, vec t, vec y)
{
	if (m == DP_MODEL_LINEAR)
		return vmul(vset1(2.0), vsub(t, y));
	if (m == DP_MODEL_SVM) {
		vec mt = vmul(y, t), one = vset1(1.0);
		/* NaN unless mt < 1 or mt >= 1: a NaN score must stay visible */
		vec c = vblend(vlt(mt, one), vset1(NAN), vneg(y));

		return vblend(vge(mt, one), c, vzero());
	}
	double tv[W], yv[W];

	vstore(tv, t);
	vstore(yv, y);
	for (int r = 0; r < W; r++)
		tv[r] = dp_model_coef(m, tv[r], yv[r]);
	return vload(tv);
}

/* The scale rule (kernel.c) for the W rows at j given their scores t:
 * a_j 2^k into *a.  A row whose coefficient is not finite is dropped by
 * masking: its scale is 0 (its terms are trunc(0 x) = 0) and it is counted
 * into *drop, with no branch.  Theta decides which rows those are, and the
 * learner times the answer: every row takes the same instructions
 * whichever they are (docs/privacy.md §7).  Returns the lanes fit for the
 * vector path: all but a row whose norm is above K->lmax (DBL_MAX in L1:
 * not finite, its x may hold a NaN or an infinity, which a zero scale would
 * not cancel; 2^600 in L2, docs/privacy.md §6 "Clipping in L2") and a slow
 * row (norm below 2^-848, docs/privacy.md §7); both are properties of the
 * data, and their groups go to redo_group. */
DP_KERNEL_INLINE vmask group_scale(const dp__kernel_job *K, dp_model m, size_t j, vec t, vec *a,
				   size_t *drop)
{
	const vec inf = vset1(INFINITY), clipm = vset1(K->clipm);
	vec l = vload(K->norm + j);
	vec c = coef_lanes(m, t, vload(K->y + j));
	vec ac = vabs(c);
	vmask finc = vlt(ac, inf);
	vmask unc = vle(vmul(ac, l), clipm);
	vec s = vmul(vblend(unc, vcopysign(vdiv(clipm, l), c), c), vset1(K->two_k));

	*a = vblend(finc, vzero(), s);
	*drop = (size_t)(W - vmask_count(finc));
	return vmask_and(vle(vabs(l), vset1(K->lmax)), vle(vabs(*a), vset1(DP_KERNEL_A_BIG)));
}

/* sum[col[v] ..] += s[v] for v < nv; the last vector only in the lanes of
 * lm (the others belong to the vector before it, or lie past the row). */
DP_KERNEL_INLINE void add_to_sum(double *sum, const size_t *col, const vec *s, const int nv,
				 vmask lm)
{
	DP_UNROLL
	for (int v = 0; v < nv; v++) {
		vmask m = v == nv - 1 ? lm : vmask_full();
		double *d = sum + col[v];

		vstore_mask(d, m, vadd(vload_mask(d, m), s[v]));
	}
}

/* ---- blocked: every shape ------------------------------------------------
 *
 * Blocks of about BLOCK_BYTES of x.  Phase A over the block:
 * scores, coefficients, the drop test and the scales a_j 2^k of each group
 * of W rows in vector lanes (scales into a buffer; a failed group is redone
 * at once by the scalar rule); phase B per panel of up to 4 vectors of
 * columns: trunc(a_r x_rq) summed over the groups into accumulators held
 * in registers, the block re-read from L1. */

/* Phase B for one panel: nv vectors of columns, the last at column lc
 * (stored in the lanes of lm; read with lm if `masked`), the others at
 * c0 + W v. */
DP_KERNEL_INLINE void panel(const dp__kernel_job *K, size_t j0, size_t ng, const double *abuf,
			    const unsigned char *skip, size_t c0, size_t lc, vmask lm, const int nv,
			    const int masked)
{
	size_t p = K->p, col[4];
	const double *xb = K->x + j0 * p;
	vec s[4];

	DP_UNROLL
	for (int v = 0; v < nv; v++) {
		col[v] = v == nv - 1 ? lc : c0 + W * (size_t)v;
		s[v] = vzero();
	}
	for (size_t g = 0; g < ng; g++, xb += W * p) {
		vec b[W];

		if (skip[g])
			continue;
		DP_UNROLL
		for (int r = 0; r < W; r++)
			b[r] = vset1(abuf[W * g + (size_t)r]);
		DP_UNROLL
		for (int v = 0; v < nv; v++)
			s[v] = vadd(s[v], group_terms(b, xb, p, col[v], masked && v == nv - 1, lm));
	}
	add_to_sum(K->sum, col, s, nv, lm);
}

/* The widths must be constants: one inlined copy per (nv, masked), so that
 * the offsets, the same for every block, are computed once (blocks are as
 * small as 8 rows). */
#define DP_PANELS(X, mk) X(1, mk) X(2, mk) X(3, mk) X(4, mk)
#define DP_PANEL_CASE(nv, mk)                                                  \
	case 4 * (mk) + (nv):                                                  \
		panel(K, j0, ng, abuf, skip, c0, lc, lm, nv, mk);              \
		break;

DP_KERNEL_INLINE void panel_any(const dp__kernel_job *K, size_t j0, size_t ng,
				const double *abuf, const unsigned char *skip, size_t c0,
				size_t lc, vmask lm, int nv, int masked)
{
	switch (4 * masked + nv) {
	DP_PANELS(DP_PANEL_CASE, 0)
	DP_PANELS(DP_PANEL_CASE, 1)
	}
}

static size_t block_rows(size_t p)
{
	size_t rows = BLOCK_BYTES / (p * sizeof(double));

	rows -= rows % W;
	if (rows < BLOCK_MIN)
		rows = BLOCK_MIN;
	if (rows > DP_KERNEL_BLOCK_MAX)
		rows = DP_KERNEL_BLOCK_MAX;
	return rows;
}

/* The scores of rows [j0, j0 + nb) into t, or NULL: computed per group. */
static const double *block_scores(const dp__kernel_job *K, size_t j0, size_t nb, double *t)
{
	if (!BLAS_SCORES)
		return NULL;
	cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)nb, (int)K->p, 1.0, K->x + j0 * K->p,
		    (int)K->p, K->theta, 1, 0.0, t, 1);
	return t;
}

static size_t blocked(const dp__kernel_job *K, const tail *tl)
{
	/* the scores need a buffer only when BLAS computes them per block */
	double abuf[DP_KERNEL_BLOCK_MAX], tbuf[BLAS_SCORES ? DP_KERNEL_BLOCK_MAX : 1];
	unsigned char skip[DP_KERNEL_BLOCK_MAX / W];
	size_t n = K->n, p = K->p, dropped = 0, rows = block_rows(p);
	size_t nfull = n - n % W, nvec = p / W + (tl->rem != 0);

	for (size_t j0 = 0; j0 < nfull; j0 += rows) {
		size_t nb = nfull - j0 < rows ? nfull - j0 : rows, ng = nb / W;
		const double *tb = block_scores(K, j0, nb, tbuf);

		for (size_t g = 0; g < ng; g++) {
			size_t j = j0 + W * g, nd;
			vec t, a;

			prefetch_ahead(K->x + j * p, W * p, PF_BLOCK);
			t = tb != NULL ? vload(tb + W * g) : group_dot(K, j, *tl, p / W, tail_read(tl));
			skip[g] = !vmask_all(group_scale(K, K->m, j, t, &a, &nd));
			vstore(abuf + W * g, a);
			if (skip[g]) {
				double tv[W];

				vstore(tv, t);
				nd = redo_group(K, j, RESCORE ? NULL : tv);
			}
			dropped += nd;
		}
		for (size_t v0 = 0; v0 < nvec; v0 += 4) {
			size_t nv = nvec - v0 < 4 ? nvec - v0 : 4;
			int ragged = tl->rem != 0 && v0 + nv == nvec;
			size_t lc = ragged ? tl->col : W * (v0 + nv - 1);

			panel_any(K, j0, ng, abuf, skip, W * v0, lc, ragged ? tl->m : vmask_full(),
				  (int)nv, ragged && tl->masked);
		}
	}
	for (size_t j = nfull; j < n; j++)
		dropped += dp__kernel_row(K, j, row_dot(K, j));
	return dropped;
}

#ifdef DP_KERNEL_FUSED
/* ---- fused: p <= 4 W, linear and svm --------------------------------------
 *
 * One loop over the groups, all accumulators in registers, software-
 * pipelined: the scales of group g+1 (a long dependency chain) are
 * computed in the iteration that accumulates group g, so the core always
 * has independent work.  Nothing in the loop calls a function (every
 * vector register is call-clobbered, so a call, even on a cold path, made
 * GCC keep the accumulators on the stack): groups that fail group_scale's
 * test (data only: a norm not finite, a slow row; dropped rows are masked
 * there) are listed and redone after each run of DP_FUSED_GROUPS groups.
 * The shape of a row's end, a constant of each specialisation: */
enum {
	END_FULL = 0,   /* p a multiple of W */
	END_PACK1 = 1,  /* a ragged end of 1 or 2 columns, packed W/2 rows per */
	END_PACK2 = 2,  /* vector: for p = 10, 10 vectors a group instead of 16 */
	END_MASKED = 3, /* a ragged end read with a masked load */
	END_LOAD = 4,   /* a ragged end read as the row's last full vector */
};
#define DP_FUSED_GROUPS 128

DP_KERNEL_INLINE size_t fused(const dp__kernel_job *K, const tail *tlp, size_t lc, vmask lm,
			      const int svm, const int kind, const int nv)
{
	const dp_model m = svm ? DP_MODEL_SVM : DP_MODEL_LINEAR;
	const int pt = kind == END_PACK1 || kind == END_PACK2 ? kind : 0;
	const int masked = kind == END_MASKED, nr = pt ? nv - 1 : nv;
	const int how = kind == END_FULL ? TAIL_NONE
		      : kind == END_MASKED || (pt && !TAIL_OVERLAP) ? TAIL_MASKED : TAIL_LOAD;
	const size_t nq = (size_t)(kind == END_FULL ? nv : nv - 1);
	const tail tl = *tlp;
	size_t n = K->n, p = K->p, dropped = 0, ng = n / W, tc = p - (size_t)pt, col[4];
	const double *x = K->x;
	vec s[4], st = vzero();
	size_t bad[DP_FUSED_GROUPS];
	double av[W] __attribute__((aligned(sizeof(vec))));

	DP_UNROLL
	for (int v = 0; v < nv; v++) {
		col[v] = v == nv - 1 ? lc : W * (size_t)v;
		s[v] = vzero();
	}
	for (size_t g0 = 0; g0 < ng; g0 += DP_FUSED_GROUPS) {
		size_t g1 = ng - g0 < DP_FUSED_GROUPS ? ng : g0 + DP_FUSED_GROUPS, nbad = 0;
		size_t nd, nd_next = 0;
		vec a, a_next = vzero();
		vmask ok = group_scale(K, m, W * g0, group_dot(K, W * g0, tl, nq, how), &a, &nd);
		vmask ok_next = ok;

		for (size_t g = g0; g < g1; g++) {
			const double *xb = x + W * g * p;

			prefetch_ahead(xb, W * p, PF_FUSED);
			if (g + 1 < g1)
				ok_next = group_scale(K, m, W * g + W,
						      group_dot(K, W * g + W, tl, nq, how), &a_next,
						      &nd_next);
			if (vmask_all(ok)) {
				vec b[W];

				/* broadcasts from memory use load ports, not
				 * the vector pipes that this loop saturates */
				vstore(av, a);
				DP_UNROLL
				for (int r = 0; r < W; r++)
					b[r] = vset1(av[r]);
				DP_UNROLL
				for (int v = 0; v < nr; v++)
					s[v] = vadd(s[v], group_terms(b, xb, p, col[v],
								      masked && v == nv - 1, lm));
				if (pt) {
					vec lo = vpack_half(xb + tc, p, pt);
					vec hi = vpack_half(xb + (W / 2) * p + tc, p, pt);

					st = vadd(st, vadd(vtrunc(vmul(vdup_lo(a), lo)),
							   vtrunc(vmul(vdup_hi(a), hi))));
				}
				dropped += nd;
			} else {
				bad[nbad++] = g;
			}
			a = a_next;
			ok = ok_next;
			nd = nd_next;
		}
		for (size_t i = 0; i < nbad; i++)
			dropped += redo_group(K, W * bad[i], NULL);
	}
	add_to_sum(K->sum, col, s, nr, pt ? vmask_full() : lm);
	if (pt) {
		double e[W], even = 0.0, odd = 0.0;

		vstore(e, st);
		for (int r = 0; r < W; r += 2) {
			even += e[r];
			odd += e[r + 1];
		}
		K->sum[tc] += even;
		if (pt == 2)
			K->sum[tc + 1] += odd;
	}
	for (size_t j = W * ng; j < n; j++)
		dropped += dp__kernel_row(K, j, row_dot(K, j));
	return dropped;
}

/* It keeps no scores for the groups it redoes: only where the blocked path
 * scores them again too, or a variant's sums would depend on the path. */
_Static_assert(RESCORE, "the fused path needs RESCORE");

/* One function per (model, end, nv). */
typedef size_t (*fused_fn)(const dp__kernel_job *K, const tail *tl, size_t lc, vmask lm);
#define DP_FUSED_NV(X, svm, kind) X(svm, kind, 1) X(svm, kind, 2) X(svm, kind, 3) X(svm, kind, 4)
#define DP_FUSED_ENDS(X, svm)                                                             \
	DP_FUSED_NV(X, svm, END_FULL) DP_FUSED_NV(X, svm, END_PACK1)                      \
	DP_FUSED_NV(X, svm, END_PACK2) DP_FUSED_NV(X, svm, END_MASKED)                    \
	DP_FUSED_NV(X, svm, END_LOAD)
#define DP_FUSED_FN(svm, kind, nv)                                                        \
	static size_t fused_##svm##_##kind##_##nv(const dp__kernel_job *K, const tail *tl, \
						  size_t lc, vmask lm)                    \
	{                                                                                 \
		return fused(K, tl, lc, lm, svm, kind, nv);                               \
	}
#define DP_FUSED_ENTRY(svm, kind, nv) [svm][kind][nv - 1] = fused_##svm##_##kind##_##nv,
DP_FUSED_ENDS(DP_FUSED_FN, 0)
DP_FUSED_ENDS(DP_FUSED_FN, 1)
static const fused_fn fused_fns[2][5][4] = {
	DP_FUSED_ENDS(DP_FUSED_ENTRY, 0) DP_FUSED_ENDS(DP_FUSED_ENTRY, 1)
};
#endif

static size_t run(const dp__kernel_job *K)
{
	tail tl = tail_init(K->p, K->theta);
#ifdef DP_KERNEL_FUSED
	size_t nvec = K->p / W + (tl.rem != 0);

	if (nvec <= 4 && K->m != DP_MODEL_LOGISTIC) {
		int kind = END_LOAD;

		if (tl.rem == 0)
			kind = END_FULL;
		else if (K->p > W && (tl.rem == 1 || tl.rem == 2))
			kind = tl.rem == 1 ? END_PACK1 : END_PACK2;
		else if (tl.masked)
			kind = END_MASKED;
		return fused_fns[K->m == DP_MODEL_SVM][kind][nvec - 1](
			K, &tl, tl.rem != 0 ? tl.col : W * (nvec - 1),
			tl.rem != 0 ? tl.m : vmask_full());
	}
#endif
	return blocked(K, &tl);
}
