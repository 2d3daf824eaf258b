/* SPDX-License-Identifier: Apache-2.0 */
/* The privacy kernel for AVX2 with FMA: 4 lanes.  The primitives and
 * settings kernel.inc.c asks for, then its body. */
#include "common/core/kernel_isa.h"

DP_KERNEL_TARGET_BEGIN("avx2,fma")

#define DP_X86_BITS 256
#include "common/core/kernel_x86.h"

/* Blocks of 8 KB, prefetch 16 KB ahead (docs/bench.md). */
enum { W = 4, BLOCK_BYTES = 8 * 1024, BLOCK_MIN = W, PF_BLOCK = 16384, PF_FUSED = 0,
       TAIL_OVERLAP = 0, BLAS_SCORES = 0, RESCORE = 0 };

DP_KERNEL_INLINE __m256i lanes(vmask m) { return _mm256_castpd_si256(m); }
DP_KERNEL_INLINE vec vload_mask(const double *p, vmask m) { return _mm256_maskload_pd(p, lanes(m)); }
DP_KERNEL_INLINE void vstore_mask(double *p, vmask m, vec v) { _mm256_maskstore_pd(p, lanes(m), v); }
DP_KERNEL_INLINE vec vtrunc(vec v) { return _mm256_round_pd(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
DP_KERNEL_INLINE vec vblend(vmask m, vec a, vec b) { return _mm256_blendv_pd(a, b, m); }
DP_KERNEL_INLINE vmask vmask_and(vmask a, vmask b) { return _mm256_and_pd(a, b); }
DP_KERNEL_INLINE int vmask_all(vmask m) { return _mm256_movemask_pd(m) == 0xf; }
DP_KERNEL_INLINE int vmask_count(vmask m) { return __builtin_popcount((unsigned)_mm256_movemask_pd(m)); }

/* Lanes lo..hi-1 set. */
DP_KERNEL_INLINE vmask lane_range(size_t lo, size_t hi)
{
	__m256i idx = _mm256_set_epi64x(3, 2, 1, 0);

	return _mm256_castsi256_pd(_mm256_and_si256(
		_mm256_cmpgt_epi64(idx, _mm256_set1_epi64x((long long)lo - 1)),
		_mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)hi), idx)));
}
DP_KERNEL_INLINE vmask vmask_full(void) { return _mm256_castsi256_pd(_mm256_set1_epi64x(-1)); }
DP_KERNEL_INLINE vmask vmask_first(size_t k) { return lane_range(0, k); }
DP_KERNEL_INLINE vmask vmask_last(size_t k) { return lane_range(4 - k, 4); }

/* Transposing sum: horizontal adds, then the 128-bit halves. */
DP_KERNEL_INLINE vec vhsum(const vec *d)
{
	vec s01 = _mm256_hadd_pd(d[0], d[1]), s23 = _mm256_hadd_pd(d[2], d[3]);

	return vadd(_mm256_permute2f128_pd(s01, s23, 0x20), _mm256_permute2f128_pd(s01, s23, 0x31));
}

#include "common/core/kernel.inc.c"

size_t dp__kernel_avx2(const dp__kernel_job *K)
{
	return run(K);
}

DP_KERNEL_TARGET_END
