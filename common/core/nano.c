/* SPDX-License-Identifier: Apache-2.0 */
/* Nano-epsilon arithmetic.  See nano.h and docs/ledger.md §2.  The error
 * details keep the "ledger:" tag they had when this lived in ledger.c: the
 * amounts are always a ledger's or the budget a ledger will enforce. */
#include "common/core/nano.h"
#include "common/core/error.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

/* eps is finite and >= 0.  Writes eps * 1e9 of the exact binary value of eps,
 * rounded as asked: eps = m * 2^-t exactly, so eps * 1e9 = m * 1e9 / 2^t and
 * m * 1e9 < 2^83 fits in 128 bits. */
static int to_nano(double eps, bool round_up, uint64_t *out)
{
	unsigned __int128 p, q, rem;
	uint64_t m;
	int e, t;
	double f;

	if (eps == 0.0) {
		*out = 0;
		return 0;
	}
	/* 2^34 eps = 1.7e19 nano is just below UINT64_MAX; anything at least
	 * that large is out of range, and below it t > 0 always. */
	if (eps >= 17179869184.0)
		return dp_error_set(DP_ERANGE, "ledger: epsilon %g exceeds the representable %g",
				    eps, (double)DP_NANO_MAX / 1e9);
	f = frexp(eps, &e);                  /* eps = f 2^e, f in [0.5, 1) */
	m = (uint64_t)ldexp(f, 53);          /* exact: f has <= 53 significant bits */
	t = 53 - e;                          /* eps = m 2^-t, t >= 20 */
	p = (unsigned __int128)m * 1000000000u;
	if (t >= 128) {
		q = 0;
		rem = p;
	} else {
		q = p >> t;
		rem = p & ((((unsigned __int128)1) << t) - 1);
	}
	if (round_up && rem != 0)
		q++;
	if (q > DP_NANO_MAX)
		return dp_error_set(DP_ERANGE, "ledger: epsilon %g exceeds the representable %g",
				    eps, (double)DP_NANO_MAX / 1e9);
	*out = (uint64_t)q;
	return 0;
}

static int nano_checked(double eps, bool round_up, uint64_t *out)
{
	DP_REQUIRE(out != NULL);
	if (isnan(eps) || eps < 0.0)
		return dp_error_set(DP_EINVAL, "ledger: epsilon %g is negative or NaN", eps);
	if (isinf(eps))
		return dp_error_set(DP_ERANGE, "ledger: epsilon is infinite");
	return to_nano(eps, round_up, out);
}

int dp_nano_ceil(double eps, uint64_t *out)
{
	return nano_checked(eps, true, out);
}

int dp_nano_floor(double eps, uint64_t *out)
{
	return nano_checked(eps, false, out);
}

uint64_t dp_nano_add(uint64_t a, uint64_t b)
{
	if (a == DP_NANO_INF || b == DP_NANO_INF)
		return DP_NANO_INF;
	if (b > DP_NANO_MAX - a)
		return DP_NANO_INF;
	return a + b;
}

double dp_nano_to_eps(uint64_t v)
{
	if (v == DP_NANO_INF)
		return INFINITY;
	return (double)v / 1e9;
}

int dp_nano_share(double cap_eps, uint64_t answers, double *eps_q)
{
	uint64_t cap = 0, q, c = 0;   /* set by to_nano; gcc -O3 cannot see it */
	double d;
	int rc;

	DP_REQUIRE(eps_q != NULL);
	if (isnan(cap_eps) || !(cap_eps > 0.0) || answers == 0)
		return dp_error_set(DP_EINVAL, "ledger: share of epsilon %g over %llu answers: "
				    "need epsilon > 0 and answers >= 1",
				    cap_eps, (unsigned long long)answers);
	if (isinf(cap_eps)) {
		*eps_q = INFINITY;
		return 0;
	}
	rc = to_nano(cap_eps, false, &cap);
	if (rc < 0)
		return rc;
	q = cap / answers;
	if (q == 0)
		return dp_error_set(DP_EINVAL, "ledger: epsilon %g is below one nano-epsilon per "
				    "answer for %llu answers", cap_eps, (unsigned long long)answers);
	/* (double)q / 1e9 may round up past q nano; step down until it fits. */
	d = (double)q / 1e9;
	for (;;) {
		rc = to_nano(d, true, &c);
		if (rc < 0)
			return rc;
		if (c <= q)
			break;
		d = nextafter(d, 0.0);
	}
	*eps_q = d;
	return 0;
}
