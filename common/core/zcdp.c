/* SPDX-License-Identifier: Apache-2.0 */
/* zCDP accounting: the conversion to (eps, delta), the discrete Gaussian's
 * rho and the lifetime bound (zcdp.h, docs/zcdp.md). */
#include <float.h>
#include <math.h>

#include "common/core/error.h"
#include "common/core/nano.h"
#include "common/core/zcdp.h"

/* The rounding margin, in units of DBL_EPSILON / 2 relative to the sum of
 * the magnitudes of the terms (docs/zcdp.md §4: the analysed error is below
 * 9 of them when log and log1p are within 1 ulp, 12 within 2 ulps). */
#define MARGIN_ULPS 32.0
#define HALF_ULP (DBL_EPSILON / 2.0)

/* The search range of alpha - 1: below 2^-40, 1 + a loses too many bits of
 * a; above 2^50, alpha - 1 would no longer be exact (and the optimum is
 * there only for rho far below a nano-rho). */
#define LOG_A_MIN (-40.0 * M_LN2)
#define LOG_A_MAX (50.0 * M_LN2)
#define GRID 128
#define GOLDEN_STEPS 64

static double up(double x)
{
	return nextafter(x, INFINITY);
}

/* The conversion's eps at alpha, before the slack's 2a, with L =
 * ln(1/delta) + a.  alpha - 1 is exact for 1 < alpha <= 2^53.  The term
 * (alpha-1) ln(1 - 1/alpha) is computed in the form that is
 * well-conditioned on each side of alpha = 2 (docs/zcdp.md §4).  safe adds
 * the rounding margin and rounds up. */
static double conv_at(double rho, double L, double alpha, bool safe)
{
	double a = alpha - 1.0;
	double B, C, N, t1, v, S;

	if (alpha >= 2.0)
		B = a * log1p(-1.0 / alpha);
	else
		B = a * log(a / alpha);
	C = log1p(a);
	N = L + B - C;
	t1 = alpha * rho;
	v = t1 + N / a;
	if (!safe)
		return v;
	S = t1 + (L - B + C) / a;
	v = v + MARGIN_ULPS * HALF_ULP * S;
	return up(v);
}

/* alpha = 1 + e^x, rounded; alpha - 1 is then exact. */
static double alpha_of(double x)
{
	return 1.0 + exp(x);
}

/* The alpha that minimises conv_at: a grid over log(alpha - 1), then a
 * golden-section search between the best point's neighbours.  Any alpha
 * is valid: the search only needs to be good, not right. */
static double best_alpha(double rho, double L)
{
	const double step = (LOG_A_MAX - LOG_A_MIN) / (GRID - 1);
	const double g = (sqrt(5.0) - 1.0) / 2.0;
	double bx = LOG_A_MIN, bv = INFINITY, lo, hi, x1, x2, f1, f2;

	for (int i = 0; i < GRID; i++) {
		double x = LOG_A_MIN + step * i;
		double v = conv_at(rho, L, alpha_of(x), false);

		if (v < bv) {
			bv = v;
			bx = x;
		}
	}
	lo = fmax(bx - step, LOG_A_MIN);
	hi = fmin(bx + step, LOG_A_MAX);
	x1 = hi - g * (hi - lo);
	x2 = lo + g * (hi - lo);
	f1 = conv_at(rho, L, alpha_of(x1), false);
	f2 = conv_at(rho, L, alpha_of(x2), false);
	for (int i = 0; i < GOLDEN_STEPS; i++) {
		if (f1 <= f2) {
			hi = x2;
			x2 = x1;
			f2 = f1;
			x1 = hi - g * (hi - lo);
			f1 = conv_at(rho, L, alpha_of(x1), false);
		} else {
			lo = x1;
			x1 = x2;
			f1 = f2;
			x2 = lo + g * (hi - lo);
			f2 = conv_at(rho, L, alpha_of(x2), false);
		}
	}
	if (f1 < bv) {
		bv = f1;
		bx = x1;
	}
	if (f2 < bv)
		bx = x2;
	return alpha_of(bx);
}

static int check_args(double rho, double slack, double delta)
{
	if (isnan(rho) || rho < 0)
		return dp_error_set(DP_EINVAL, "zcdp: rho %g is negative or NaN", rho);
	if (isnan(slack) || slack < 0)
		return dp_error_set(DP_EINVAL, "zcdp: slack %g is negative or NaN", slack);
	if (!(delta > 0 && delta < 1))
		return dp_error_set(DP_EINVAL, "zcdp: delta %g is not in (0, 1)", delta);
	return 0;
}

/* conv (the conversion's eps, safe) clamped at 0, plus 2 slack, rounded
 * up.  A negative conv is a valid (0, delta) guarantee. */
static double with_slack(double conv, double slack)
{
	double e;

	if (!(conv > 0))
		conv = 0;
	if (slack == 0)
		return conv;
	e = conv + 2.0 * slack;
	return conv == 0 ? e : up(e);
}

int dp_zcdp_eps_at(double rho, double slack, double delta, double alpha, double *eps)
{
	int rc = check_args(rho, slack, delta);
	double L;

	DP_REQUIRE(eps != NULL);
	if (rc < 0)
		return rc;
	if (!(alpha > 1 && alpha <= 9007199254740992.0))
		return dp_error_set(DP_EINVAL, "zcdp: alpha %g is not in (1, 2^53]", alpha);
	if (isinf(rho) || isinf(slack)) {
		*eps = INFINITY;
		return 0;
	}
	L = up(-log(delta) + slack);
	*eps = with_slack(conv_at(rho, L, alpha, true), slack);
	return 0;
}

int dp_zcdp_eps(double rho, double slack, double delta, double *eps)
{
	int rc = check_args(rho, slack, delta);
	double L;

	DP_REQUIRE(eps != NULL);
	if (rc < 0)
		return rc;
	if (isinf(rho) || isinf(slack)) {
		*eps = INFINITY;
		return 0;
	}
	/* rho = 0: the ideal mechanism's outputs are identical, so the real one
	 * is (2 slack, 0)-DP. */
	if (rho == 0) {
		*eps = 2.0 * slack;
		return 0;
	}
	L = up(-log(delta) + slack);
	*eps = with_slack(conv_at(rho, L, best_alpha(rho, L), true), slack);
	return 0;
}

int dp_zcdp_rho_for(double eps, double slack, double delta, double *rho)
{
	int rc = check_args(0, slack, delta);
	double lo = 0, hi, e = 0;

	DP_REQUIRE(rho != NULL);
	if (rc < 0)
		return rc;
	if (!(eps > 0))
		return dp_error_set(DP_EINVAL, "zcdp: epsilon %g is not > 0", eps);
	if (isinf(eps)) {
		*rho = INFINITY;
		return 0;
	}
	if (isinf(slack) || 2.0 * slack > eps)
		return dp_error_set(DP_EINVAL, "zcdp: the sampler's slack %g alone spends more "
				    "than epsilon %g", slack, eps);
	/* dp_zcdp_eps grows at least as fast as rho (alpha > 1), so a
	 * bracket is found within a few doublings of eps. */
	hi = eps;
	for (int i = 0; i < 1100; i++) {
		(void)dp_zcdp_eps(hi, slack, delta, &e);
		if (e > eps)
			break;
		lo = hi;
		hi *= 2;
	}
	for (int i = 0; i < 200; i++) {
		double mid = lo + (hi - lo) / 2.0;

		if (mid <= lo || mid >= hi)
			break;
		(void)dp_zcdp_eps(mid, slack, delta, &e);
		if (e <= eps)
			lo = mid;
		else
			hi = mid;
	}
	*rho = lo;
	return 0;
}

double dp_zcdp_rho_pure(double eps)
{
	double r, h;

	DP_REQUIRE(eps >= 0);
	r = eps * eps;
	/* fma gives the exact error of the product: round it up. */
	if (fma(eps, eps, -r) > 0)
		r = up(r);
	h = r / 2.0;
	if (h * 2.0 != r)
		h = up(h);
	return h;
}

/* delta2^2 / (2 sigma^2) with its three roundings (each at most half an ulp)
 * covered by 8 half-ulps and one step up. */
static double rho_of(double delta2, double sigma)
{
	double r = (delta2 * delta2) / (2.0 * sigma * sigma);

	if (r == 0)
		return 0;
	return up(r + 8.0 * HALF_ULP * r);
}

int dp_zcdp_rho_dgauss(double delta2, double sigma, size_t d, double *rho)
{
	DP_REQUIRE(rho != NULL);
	if (!(delta2 >= 0 && isfinite(delta2)))
		return dp_error_set(DP_EINVAL, "zcdp: L2 sensitivity %g is not finite and >= 0",
				    delta2);
	if (!(sigma > 0 && isfinite(sigma)))
		return dp_error_set(DP_EINVAL, "zcdp: sigma %g is not finite and > 0", sigma);
	if (d == 0)
		return dp_error_set(DP_EINVAL, "zcdp: an answer needs at least one coordinate");
	*rho = rho_of(delta2, sigma);
	return 0;
}

int dp_zcdp_sigma_for(double delta2, double rho, size_t d, double *sigma)
{
	double s, lower;

	DP_REQUIRE(sigma != NULL);
	if (!(delta2 > 0 && isfinite(delta2)))
		return dp_error_set(DP_EINVAL, "zcdp: L2 sensitivity %g is not finite and > 0",
				    delta2);
	if (!(rho > 0))
		return dp_error_set(DP_EINVAL, "zcdp: rho %g is not > 0", rho);
	if (d == 0)
		return dp_error_set(DP_EINVAL, "zcdp: an answer needs at least one coordinate");
	if (isinf(rho)) {
		*sigma = 0;
		return 0;
	}
	s = delta2 / sqrt(2.0 * rho);
	if (!(s > 0 && isfinite(s)))
		return dp_error_set(DP_EINVAL, "zcdp: no sigma gives rho %g for sensitivity %g",
				    rho, delta2);
	/* The rounding of rho_of moves the answer by a few ulps: step up until
	 * it holds, then down while it still holds. */
	for (int i = 0; rho_of(delta2, s) > rho; i++) {
		if (i == 4096)
			return dp_error_set(DP_ENUMERIC, "zcdp: no sigma found for rho %g", rho);
		s = up(s);
	}
	for (int i = 0; i < 64; i++) {
		lower = nextafter(s, 0);
		if (!(lower > 0) || rho_of(delta2, lower) > rho)
			break;
		s = lower;
	}
	*sigma = s;
	return 0;
}

dp_zcdp_totals dp_zcdp_charge_pure(uint64_t eps_nano)
{
	unsigned __int128 sq, q;
	const unsigned __int128 den = 2000000000u;

	if (eps_nano == DP_NANO_INF)
		return (dp_zcdp_totals){ DP_NANO_INF, DP_NANO_INF, 0, 0 };
	/* (e 1e-9)^2 / 2 = e^2 / 2e9 nano-rho, rounded up. */
	sq = (unsigned __int128)eps_nano * eps_nano;
	q = sq / den + (sq % den != 0);
	return (dp_zcdp_totals){ eps_nano, q > DP_NANO_MAX ? DP_NANO_INF : (uint64_t)q, 0, 0 };
}

int dp_zcdp_charge_gauss(double rho, double slack, dp_zcdp_totals *charge)
{
	uint64_t r = 0, s = 0;
	int rc;

	DP_REQUIRE(charge != NULL);
	rc = dp_nano_ceil(rho, &r);
	if (rc == 0)
		rc = dp_nano_ceil(slack, &s);
	if (rc < 0)
		return rc;
	*charge = (dp_zcdp_totals){ 0, 0, r, s };
	return 0;
}

void dp_zcdp_add(dp_zcdp_totals *t, const dp_zcdp_totals *c)
{
	DP_REQUIRE(t != NULL && c != NULL);
	t->eps_pure = dp_nano_add(t->eps_pure, c->eps_pure);
	t->rho_pure = dp_nano_add(t->rho_pure, c->rho_pure);
	t->rho_gauss = dp_nano_add(t->rho_gauss, c->rho_gauss);
	t->slack = dp_nano_add(t->slack, c->slack);
}

/* A nano amount as a double at least as large as v / 1e9 (v < DP_NANO_INF):
 * the division may round down, and dp_nano_floor tells exactly. */
static double nano_up(uint64_t v)
{
	double d = (double)v / 1e9;
	uint64_t back = 0;

	for (;;) {
		if (dp_nano_floor(d, &back) < 0)
			return up(up(d));   /* beyond 2^34: two roundings, two ulps */
		if (back >= v)
			return d;
		d = up(d);
	}
}

int dp_zcdp_best_eps(const dp_zcdp_totals *t, double delta, double *eps)
{
	double slack, a, b;

	DP_REQUIRE(t != NULL && eps != NULL);
	if (!(delta >= 0 && delta < 1))
		return dp_error_set(DP_EINVAL, "zcdp: delta %g is not in [0, 1)", delta);
	if (t->eps_pure == DP_NANO_INF || t->rho_pure == DP_NANO_INF ||
	    t->rho_gauss == DP_NANO_INF || t->slack == DP_NANO_INF) {
		*eps = INFINITY;
		return 0;
	}
	if (t->rho_gauss == 0 && t->slack == 0) {
		*eps = nano_up(t->eps_pure);
		return 0;
	}
	if (delta == 0) {
		*eps = INFINITY;
		return 0;
	}
	slack = nano_up(t->slack);
	/* Laplace answers by basic composition beside the Gaussian ones
	 * converted alone ... */
	(void)dp_zcdp_eps(nano_up(t->rho_gauss), slack, delta, &a);
	if (t->eps_pure > 0)
		a = up(a + nano_up(t->eps_pure));
	/* ... or everything in zCDP. */
	(void)dp_zcdp_eps(nano_up(dp_nano_add(t->rho_pure, t->rho_gauss)), slack, delta, &b);
	*eps = a < b ? a : b;
	return 0;
}

int dp_zcdp_best_nano(const dp_zcdp_totals *t, double delta, uint64_t *eps_nano)
{
	double e = 0;
	int rc;

	DP_REQUIRE(t != NULL && eps_nano != NULL);
	if (!(delta >= 0 && delta < 1))
		return dp_error_set(DP_EINVAL, "zcdp: delta %g is not in [0, 1)", delta);
	if (t->rho_gauss == 0 && t->slack == 0) {
		*eps_nano = t->eps_pure;
		return 0;
	}
	rc = dp_zcdp_best_eps(t, delta, &e);
	if (rc < 0)
		return rc;
	if (isinf(e) || dp_nano_ceil(e, eps_nano) < 0)
		*eps_nano = DP_NANO_INF;
	return 0;
}

int dp_zcdp_fits(const dp_zcdp_totals *spent, const dp_zcdp_totals *charge, uint64_t cap_nano,
		 double delta, bool *fits)
{
	dp_zcdp_totals t;
	uint64_t e = 0;
	int rc;

	DP_REQUIRE(spent != NULL && charge != NULL && fits != NULL);
	t = *spent;
	dp_zcdp_add(&t, charge);
	rc = dp_zcdp_best_nano(&t, delta, &e);
	if (rc < 0)
		return rc;
	*fits = cap_nano == DP_NANO_INF || (e != DP_NANO_INF && e <= cap_nano);
	return 0;
}

int dp_zcdp_rho_left(const dp_zcdp_totals *spent, uint64_t slack_nano, uint64_t cap_nano,
		     double delta, uint64_t *rho_nano)
{
	dp_zcdp_totals c = { 0, 0, 0, slack_nano };
	uint64_t lo = 0, hi = DP_NANO_MAX;
	bool ok = false;
	int rc;

	DP_REQUIRE(spent != NULL && rho_nano != NULL);
	if (!(delta >= 0 && delta < 1))
		return dp_error_set(DP_EINVAL, "zcdp: delta %g is not in [0, 1)", delta);
	if (cap_nano == DP_NANO_INF) {
		*rho_nano = DP_NANO_INF;
		return 0;
	}
	/* Bisection on [0, DP_NANO_MAX] keeping lo fitting: a charge at the
	 * top saturates the totals to DP_NANO_INF, which never fits. */
	rc = dp_zcdp_fits(spent, &c, cap_nano, delta, &ok);
	if (rc < 0)
		return rc;
	if (!ok) {
		*rho_nano = 0;
		return 0;
	}
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;

		c.rho_gauss = mid;
		rc = dp_zcdp_fits(spent, &c, cap_nano, delta, &ok);
		if (rc < 0)
			return rc;
		if (ok)
			lo = mid;
		else
			hi = mid - 1;
	}
	*rho_nano = lo;
	return 0;
}

int dp_zcdp_cap(double eps, double delta, uint64_t answers, size_t d, double eta, double tail,
		double *cap_rho, uint64_t *slack_nano)
{
	double slack_q, slack, tail_delta, cap;
	uint64_t sn;
	int rc;

	DP_REQUIRE(cap_rho != NULL && slack_nano != NULL);
	if (!(eps > 0))
		return dp_error_set(DP_EINVAL, "zcdp: epsilon %g is not > 0", eps);
	if (!(delta > 0 && delta < 1))
		return dp_error_set(DP_EINVAL, "zcdp: delta %g is not in (0, 1)", delta);
	if (answers == 0 || d == 0)
		return dp_error_set(DP_EINVAL, "zcdp: no answers or no coordinates to share over");
	if (!(eta >= 0) || !isfinite(eta) || !(tail >= 0) || !isfinite(tail))
		return dp_error_set(DP_EINVAL, "zcdp: sampler slack %g or tail %g out of range",
				    eta, tail);
	if (isinf(eps)) {
		*cap_rho = INFINITY;
		*slack_nano = 0;
		return 0;
	}
	/* d eta and every product below rounded up: one step per operation
	 * covers its rounding. */
	slack_q = nextafter((double)d * eta, INFINITY);
	rc = dp_nano_ceil(slack_q, &sn);
	if (rc != 0)
		return rc;
	if (sn != 0 && answers > DP_NANO_MAX / sn)
		return dp_error_set(DP_EINVAL, "zcdp: the samplers' slack over %llu answers "
				    "overflows", (unsigned long long)answers);
	slack = nextafter((double)(answers * sn) / 1e9, INFINITY);
	tail_delta = nextafter(exp(nextafter(eps + slack, INFINITY)), INFINITY);
	tail_delta = nextafter(tail_delta * (double)answers, INFINITY);
	tail_delta = nextafter(tail_delta * (double)d, INFINITY);
	tail_delta = nextafter(tail_delta * tail, INFINITY);
	if (!(tail_delta < delta / 2))
		return dp_error_set(DP_ERANGE, "zcdp: epsilon %g is too large for the discrete "
				    "Gaussian's tail at delta %g (docs/zcdp.md §7)", eps, delta);
	rc = dp_zcdp_rho_for(eps, slack, nextafter(delta - tail_delta, 0.0), &cap);
	if (rc != 0)
		return rc;
	*cap_rho = cap;
	*slack_nano = sn;
	return 0;
}

int dp_zcdp_share(double eps, double delta, uint64_t answers, size_t d, double eta, double tail,
		  double *rho_q, uint64_t *slack_nano)
{
	double cap;
	uint64_t sn;
	int rc;

	DP_REQUIRE(rho_q != NULL && slack_nano != NULL);
	rc = dp_zcdp_cap(eps, delta, answers, d, eta, tail, &cap, &sn);
	if (rc != 0)
		return rc;
	rc = dp_zcdp_share_cap(cap, answers, eps, delta, rho_q);
	if (rc != 0)
		return rc;
	*slack_nano = isinf(cap) ? 0 : sn;
	return 0;
}

int dp_zcdp_share_cap(double cap_rho, uint64_t answers, double eps, double delta, double *rho_q)
{
	int rc;

	DP_REQUIRE(rho_q != NULL);
	if (isinf(cap_rho)) {
		*rho_q = INFINITY;
		return 0;
	}
	rc = dp_nano_share(cap_rho, answers, rho_q);
	if (rc != 0)
		return dp_error_set(rc, "zcdp: epsilon %g at delta %g leaves rho %g, less than "
				    "1e-9 for each of %llu answers", eps, delta, cap_rho,
				    (unsigned long long)answers);
	return 0;
}
