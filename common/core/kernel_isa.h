/* SPDX-License-Identifier: Apache-2.0 */
/* Inside the kernel module: what the dispatcher (kernel.c) and the variants
 * (kernel_generic.c, kernel_avx2.c, kernel_avx512.c, each one compilation
 * of the generic body kernel.inc.c) share.  Not for other modules. */
#ifndef DP_KERNEL_ISA_H
#define DP_KERNEL_ISA_H

#include <stddef.h>
#include "common/core/model.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define DP_KERNEL_X86 1     /* meson adds the AVX2 and AVX-512 variants */
#endif

/* One call's work, validated by dp_kernel_clipped_grid_sum or its L2
 * twin.  The two differ only in the row norms, in lmax and in the scalar
 * rule's exact check (kernel.c); the vector body is the same. */
typedef struct dp__kernel_job {
	dp_model m;
	size_t n, p;
	const double *x, *y, *norm, *theta;   /* norm: ds->row_l1 or row_l2 */
	double clipm;   /* clip less the rounding margin (kernel.c) */
	double lmax;    /* rows with a larger norm take the scalar rule */
	int l2;         /* the scalar rule checks sum q^2 <= m2 exactly */
	unsigned __int128 m2;   /* floor((clip 2^k)^2), with l2 */
	double two_k;   /* 2^k */
	int k;
	double *sum;    /* p accumulators in grid units, zeroed by the caller */
} dp__kernel_job;

/* |a_j 2^k| above this takes the slow order (kernel.c). */
#define DP_KERNEL_A_BIG 0x1p900

/* Rows per block at most (the variants' stack buffers). */
#define DP_KERNEL_BLOCK_MAX 1024

/* The vector primitives and the body's helpers must be inlined for the
 * specialisations (constant widths, models) to exist. */
#define DP_KERNEL_INLINE static inline __attribute__((always_inline))

/* Compile what follows, up to DP_KERNEL_TARGET_END, for the instruction
 * set `isa` (a string: "avx2,fma"), with GCC or clang.  Only code the
 * dispatcher runs after checking the CPU may sit in between. */
#define DP_KERNEL_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define DP_KERNEL_TARGET_BEGIN(isa) \
	DP_KERNEL_PRAGMA(clang attribute push(__attribute__((target(isa))), apply_to = function))
#define DP_KERNEL_TARGET_END DP_KERNEL_PRAGMA(clang attribute pop)
#else
#define DP_KERNEL_TARGET_BEGIN(isa) DP_KERNEL_PRAGMA(GCC push_options) DP_KERNEL_PRAGMA(GCC target(isa))
#define DP_KERNEL_TARGET_END DP_KERNEL_PRAGMA(GCC pop_options)
#endif

/* The rule for one row given its score, in the scalar order: adds the
 * row's terms to K->sum; returns 1 if the row was dropped, else 0.  Every
 * row a variant does not take in its vector path goes through here. */
size_t dp__kernel_row(const dp__kernel_job *K, size_t j, double t);

/* The variants: the sums into K->sum; return the number of dropped rows.
 * Only the dispatcher calls them, and only on a CPU that has what they
 * were compiled for. */
size_t dp__kernel_generic(const dp__kernel_job *K);
#ifdef DP_KERNEL_X86
size_t dp__kernel_avx2(const dp__kernel_job *K);
size_t dp__kernel_avx512(const dp__kernel_job *K);
#endif

#endif
