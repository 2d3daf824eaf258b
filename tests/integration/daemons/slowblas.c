/* SPDX-License-Identifier: Apache-2.0 */
/* Test-only LD_PRELOAD shim for tests/integration/daemons/ownerd_worker.py: every
 * cblas_dgemv(3) call sleeps OWN_TEST_DGEMV_US_PER_ROW microseconds per row
 * of its matrix (unset or 0: none) before doing the real work, so that an
 * answer sleeps n times that whatever the kernel's block size.  With DP_KERNEL_ISA=generic, the
 * kernel variant whose scores come from one cblas_dgemv per block
 * (common/core/kernel.inc.c), an answer on a small dataset then takes as
 * long as one on gigabytes of data would, in whichever thread computes it.
 * Never installed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

#include <cblas.h>

#define C OPENBLAS_CONST

typedef void (*dgemv_fn)(C enum CBLAS_ORDER, C enum CBLAS_TRANSPOSE, C blasint, C blasint,
			 C double, C double *, C blasint, C double *, C blasint, C double,
			 double *, C blasint);

void cblas_dgemv(C enum CBLAS_ORDER order, C enum CBLAS_TRANSPOSE trans, C blasint m,
		 C blasint n, C double alpha, C double *a, C blasint lda, C double *x,
		 C blasint incx, C double beta, double *y, C blasint incy)
{
	const char *e = getenv("OWN_TEST_DGEMV_US_PER_ROW");
	unsigned long long us = e ? strtoull(e, NULL, 10) : 0;
	dgemv_fn real = (dgemv_fn)dlsym(RTLD_NEXT, "cblas_dgemv");

	us *= (unsigned long long)(m > 0 ? m : 0);
	if (us != 0) {
		struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000L };

		while (nanosleep(&ts, &ts) != 0)
			;
	}
	real(order, trans, m, n, alpha, a, lda, x, incx, beta, y, incy);
}
