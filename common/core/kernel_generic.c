/* SPDX-License-Identifier: Apache-2.0 */
/* The privacy kernel for any CPU: "vectors" of one double, scores from
 * BLAS.  The primitives and settings kernel.inc.c asks for, then its
 * body. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/core/kernel_isa.h"

typedef double vec;
typedef int vmask;

/* Blocks of 32 KB: fetched from memory once by the BLAS call for the
 * scores, read again from L1/L2 for the sums. */
enum { W = 1, BLOCK_BYTES = 32 * 1024, BLOCK_MIN = 8, PF_BLOCK = 0, PF_FUSED = 0,
       TAIL_OVERLAP = 0, BLAS_SCORES = 1, RESCORE = 0 };

DP_KERNEL_INLINE vec vzero(void) { return 0.0; }
DP_KERNEL_INLINE vec vset1(double v) { return v; }
DP_KERNEL_INLINE vec vload(const double *p) { return *p; }
DP_KERNEL_INLINE vec vload_mask(const double *p, vmask m) { return m ? *p : 0.0; }
DP_KERNEL_INLINE void vstore(double *p, vec v) { *p = v; }
DP_KERNEL_INLINE void vstore_mask(double *p, vmask m, vec v)
{
	if (m)
		*p = v;
}
DP_KERNEL_INLINE vec vadd(vec a, vec b) { return a + b; }
DP_KERNEL_INLINE vec vsub(vec a, vec b) { return a - b; }
DP_KERNEL_INLINE vec vmul(vec a, vec b) { return a * b; }
DP_KERNEL_INLINE vec vdiv(vec a, vec b) { return a / b; }
DP_KERNEL_INLINE vec vfma(vec a, vec b, vec c) { return fma(a, b, c); }
/* |v| <= 2^52 here: the conversion truncates and is inline, where trunc()
 * is a libm call on baseline x86-64 (2-3x slower) */
DP_KERNEL_INLINE vec vtrunc(vec v) { return (double)(int64_t)v; }
DP_KERNEL_INLINE vec vabs(vec v) { return fabs(v); }
DP_KERNEL_INLINE vec vneg(vec v) { return -v; }
DP_KERNEL_INLINE vec vcopysign(vec m, vec s) { return copysign(m, s); }
DP_KERNEL_INLINE vmask vlt(vec a, vec b) { return a < b; }
DP_KERNEL_INLINE vmask vle(vec a, vec b) { return a <= b; }
DP_KERNEL_INLINE vmask vge(vec a, vec b) { return a >= b; }
/* In bit operations, not ?: (which the compiler may turn into a jump):
 * the choice depends on the data, and its time must not (kernel.inc.c,
 * group_scale). */
DP_KERNEL_INLINE vec vblend(vmask m, vec a, vec b)
{
	uint64_t ua, ub, mask = (uint64_t)0 - (uint64_t)(m != 0);

	memcpy(&ua, &a, sizeof(ua));
	memcpy(&ub, &b, sizeof(ub));
	ua = (ua & ~mask) | (ub & mask);
	memcpy(&a, &ua, sizeof(a));
	return a;
}
DP_KERNEL_INLINE vmask vmask_and(vmask a, vmask b) { return a & b; }
DP_KERNEL_INLINE int vmask_all(vmask m) { return m; }
DP_KERNEL_INLINE vmask vmask_full(void) { return 1; }
DP_KERNEL_INLINE int vmask_count(vmask m) { return m; }
DP_KERNEL_INLINE vmask vmask_first(size_t k) { return k > 0; }
DP_KERNEL_INLINE vmask vmask_last(size_t k) { return k > 0; }
DP_KERNEL_INLINE vec vhsum(const vec *d) { return d[0]; }

#include "common/core/kernel.inc.c"

size_t dp__kernel_generic(const dp__kernel_job *K)
{
	return run(K);
}
