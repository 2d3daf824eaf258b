/* SPDX-License-Identifier: Apache-2.0 */
/* The privacy kernel for AVX-512 (F and DQ): 8 lanes, mask registers.  The
 * primitives and settings kernel.inc.c asks for, then its body. */
#include "common/core/kernel_isa.h"

DP_KERNEL_TARGET_BEGIN("avx512f,avx512dq")

#define DP_X86_BITS 512
#include "common/core/kernel_x86.h"

/* Blocks of 8 KB, prefetch 16 KB ahead (blocked) and 12 KB (fused): tuned
 * on the benchmark (docs/bench.md).  The fused path. */
enum { W = 8, BLOCK_BYTES = 8 * 1024, BLOCK_MIN = W, PF_BLOCK = 16384, PF_FUSED = 12288,
       TAIL_OVERLAP = 1, BLAS_SCORES = 0, RESCORE = 1 };
#define DP_KERNEL_FUSED

DP_KERNEL_INLINE vec vload_mask(const double *p, vmask m) { return _mm512_maskz_loadu_pd(m, p); }
DP_KERNEL_INLINE void vstore_mask(double *p, vmask m, vec v) { _mm512_mask_storeu_pd(p, m, v); }
DP_KERNEL_INLINE vec vtrunc(vec v)
{
	return _mm512_roundscale_pd(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
}
DP_KERNEL_INLINE vec vblend(vmask m, vec a, vec b) { return _mm512_mask_blend_pd(m, a, b); }
DP_KERNEL_INLINE vmask vmask_and(vmask a, vmask b) { return a & b; }
DP_KERNEL_INLINE int vmask_all(vmask m) { return m == 0xff; }
DP_KERNEL_INLINE int vmask_count(vmask m) { return __builtin_popcount(m); }
DP_KERNEL_INLINE vmask vmask_full(void) { return 0xff; }
DP_KERNEL_INLINE vmask vmask_first(size_t k) { return (vmask)((1u << k) - 1); }
DP_KERNEL_INLINE vmask vmask_last(size_t k) { return (vmask)(0xffu << (8 - k)); }

/* Transposing sum: unpack, then 128- and 256-bit shuffles. */
DP_KERNEL_INLINE vec vhsum(const vec *d)
{
	vec s01 = vadd(_mm512_unpacklo_pd(d[0], d[1]), _mm512_unpackhi_pd(d[0], d[1]));
	vec s23 = vadd(_mm512_unpacklo_pd(d[2], d[3]), _mm512_unpackhi_pd(d[2], d[3]));
	vec s45 = vadd(_mm512_unpacklo_pd(d[4], d[5]), _mm512_unpackhi_pd(d[4], d[5]));
	vec s67 = vadd(_mm512_unpacklo_pd(d[6], d[7]), _mm512_unpackhi_pd(d[6], d[7]));
	vec w03 = vadd(_mm512_shuffle_f64x2(s01, s23, 0x88), _mm512_shuffle_f64x2(s01, s23, 0xdd));
	vec w47 = vadd(_mm512_shuffle_f64x2(s45, s67, 0x88), _mm512_shuffle_f64x2(s45, s67, 0xdd));

	return vadd(_mm512_shuffle_f64x2(w03, w47, 0x88), _mm512_shuffle_f64x2(w03, w47, 0xdd));
}

/* 8- or 16-byte loads inside each of the 4 rows. */
DP_KERNEL_INLINE vec vpack_half(const double *x, size_t p, const int pt)
{
	__m128d e0 = pt == 2 ? _mm_loadu_pd(x) : _mm_load_sd(x);
	__m128d e1 = pt == 2 ? _mm_loadu_pd(x + p) : _mm_load_sd(x + p);
	__m128d e2 = pt == 2 ? _mm_loadu_pd(x + 2 * p) : _mm_load_sd(x + 2 * p);
	__m128d e3 = pt == 2 ? _mm_loadu_pd(x + 3 * p) : _mm_load_sd(x + 3 * p);
	vec v = _mm512_castpd128_pd512(e0);

	v = _mm512_insertf64x2(v, e1, 1);
	v = _mm512_insertf64x2(v, e2, 2);
	return _mm512_insertf64x2(v, e3, 3);
}

DP_KERNEL_INLINE vec vdup_lo(vec a)
{
	return _mm512_permutexvar_pd(_mm512_set_epi64(3, 3, 2, 2, 1, 1, 0, 0), a);
}

DP_KERNEL_INLINE vec vdup_hi(vec a)
{
	return _mm512_permutexvar_pd(_mm512_set_epi64(7, 7, 6, 6, 5, 5, 4, 4), a);
}

#include "common/core/kernel.inc.c"

size_t dp__kernel_avx512(const dp__kernel_job *K)
{
	return run(K);
}

DP_KERNEL_TARGET_END
