/* SPDX-License-Identifier: Apache-2.0 */
/* The vector types of kernel.inc.c for AVX2 and AVX-512, and the
 * primitives both spell alike (their intrinsics differ only in the prefix,
 * DP_X86(op)).  Included by kernel_avx2.c and kernel_avx512.c after they
 * define DP_X86_BITS (256, 512). */
#ifndef DP_KERNEL_X86_H
#define DP_KERNEL_X86_H

#include <immintrin.h>

#include "common/core/kernel_isa.h"

#if DP_X86_BITS == 512
typedef __m512d vec;
typedef __mmask8 vmask;         /* a mask register */
#define DP_X86(op) _mm512_##op
#define DP_X86_CMP _mm512_cmp_pd_mask
#else
typedef __m256d vec;
typedef __m256d vmask;          /* lanes all ones or all zeros */
#define DP_X86(op) _mm256_##op
#define DP_X86_CMP _mm256_cmp_pd
#endif

DP_KERNEL_INLINE vec vzero(void) { return DP_X86(setzero_pd)(); }
DP_KERNEL_INLINE vec vset1(double v) { return DP_X86(set1_pd)(v); }
DP_KERNEL_INLINE vec vload(const double *p) { return DP_X86(loadu_pd)(p); }
DP_KERNEL_INLINE void vstore(double *p, vec v) { DP_X86(storeu_pd)(p, v); }
DP_KERNEL_INLINE vec vadd(vec a, vec b) { return DP_X86(add_pd)(a, b); }
DP_KERNEL_INLINE vec vsub(vec a, vec b) { return DP_X86(sub_pd)(a, b); }
DP_KERNEL_INLINE vec vmul(vec a, vec b) { return DP_X86(mul_pd)(a, b); }
DP_KERNEL_INLINE vec vdiv(vec a, vec b) { return DP_X86(div_pd)(a, b); }
DP_KERNEL_INLINE vec vfma(vec a, vec b, vec c) { return DP_X86(fmadd_pd)(a, b, c); }
DP_KERNEL_INLINE vec vabs(vec v) { return DP_X86(andnot_pd)(vset1(-0.0), v); }
DP_KERNEL_INLINE vec vneg(vec v) { return DP_X86(xor_pd)(v, vset1(-0.0)); }
DP_KERNEL_INLINE vec vcopysign(vec m, vec s)
{
	return DP_X86(or_pd)(DP_X86(and_pd)(s, vset1(-0.0)), m);
}
DP_KERNEL_INLINE vmask vlt(vec a, vec b) { return DP_X86_CMP(a, b, _CMP_LT_OQ); }
DP_KERNEL_INLINE vmask vle(vec a, vec b) { return DP_X86_CMP(a, b, _CMP_LE_OQ); }
DP_KERNEL_INLINE vmask vge(vec a, vec b) { return DP_X86_CMP(a, b, _CMP_GE_OQ); }

#endif
