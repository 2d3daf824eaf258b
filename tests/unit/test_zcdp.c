/* SPDX-License-Identifier: Apache-2.0 */
/* zCDP accounting (common/core/zcdp.h, docs/zcdp.md §6): the conversion
 * against brute force in long double, the discrete Gaussian's rho against
 * the exact Renyi divergence, and the lifetime rule. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/core/error.h"
#include "common/core/nano.h"
#include "common/core/zcdp.h"

/* The conversion's expression at alpha in long double (11 more bits than
 * the code's doubles), with L = ln(1/delta) + slack. */
static long double conv_ld(long double rho, long double L, long double alpha)
{
	long double a = alpha - 1.0L;

	return alpha * rho + (L + a * log1pl(-1.0L / alpha) - log1pl(a)) / a;
}

/* Its minimum over a grid of n points of ln(alpha - 1) in [x0, x1]; the
 * best point's x in *bx. */
static long double grid_min(long double rho, long double L, long double x0, long double x1,
			    int n, long double *bx)
{
	long double best = INFINITY;

	for (int i = 0; i < n; i++) {
		long double x = x0 + (x1 - x0) * i / (n - 1);
		long double v = conv_ld(rho, L, 1.0L + expl(x));

		if (v < best) {
			best = v;
			*bx = x;
		}
	}
	return best;
}

/* The minimum to about 1e-20 relative: 10^5 points over alpha - 1 in
 * [1e-6, 1e6], then 10^4 and 10^3 points around the best so far.  *coarse
 * is the first grid's minimum. */
static long double brute_min(long double rho, long double L, long double *coarse)
{
	long double x0 = logl(1e-6L), x1 = logl(1e6L), bx = 0, h, m;

	h = (x1 - x0) / (100000 - 1);
	*coarse = grid_min(rho, L, x0, x1, 100000, &bx);
	m = grid_min(rho, L, bx - h, bx + h, 10000, &bx);
	h = 2 * h / (10000 - 1);
	m = fminl(m, grid_min(rho, L, bx - h, bx + h, 1000, &bx));
	return m;
}

static void test_conversion_vs_brute_force(void **state)
{
	const double rhos[] = { 1e-6, 1e-3, 0.05, 0.5, 3.0, 100.0 };
	const double deltas[] = { 1e-12, 1e-6, 1e-3, 0.5 };

	(void)state;
	for (size_t i = 0; i < sizeof(rhos) / sizeof(rhos[0]); i++) {
		for (size_t j = 0; j < sizeof(deltas) / sizeof(deltas[0]); j++) {
			long double coarse, m = brute_min(rhos[i], -logl(deltas[j]), &coarse);
			double e = -1;

			assert_int_equal(dp_zcdp_eps(rhos[i], 0, deltas[j], &e), 0);
			/* Clamped: a negative value is a (0, delta) guarantee. */
			m = fmaxl(m, 0);
			coarse = fmaxl(coarse, 0);
			if (!(e >= m && e <= m * (1 + 1e-9L) && e <= coarse))
				fail_msg("rho %g delta %g: eps %.17g, brute force %.20Lg (coarse "
					 "%.20Lg)", rhos[i], deltas[j], e, m, coarse);
		}
	}
}

/* A small deterministic generator: the test is not statistical. */
static uint64_t xs = 0x9e3779b97f4a7c15u;

static double uniform(void)
{
	xs ^= xs << 13;
	xs ^= xs >> 7;
	xs ^= xs << 17;
	return (double)(xs >> 11) / 9007199254740992.0;
}

/* The bound at a given alpha is never below the exact expression: this is
 * what the rounding margin is for (without it about half of the points
 * fail). */
static void test_eps_at_rounds_up(void **state)
{
	(void)state;
	for (int i = 0; i < 2000; i++) {
		double rho = exp(-14 + 18 * uniform());
		double delta = exp(-40 * uniform() - 1e-3);
		double slack = i % 3 == 0 ? 1e-3 * uniform() : 0;
		double alpha = 1 + exp(-20 + 35 * uniform());
		long double L = -logl(delta) + slack, want;
		double e = -1;

		assert_int_equal(dp_zcdp_eps_at(rho, slack, delta, alpha, &e), 0);
		want = conv_ld(rho, L, alpha);
		if (want < 0)
			want = 0;
		want += 2.0L * slack;
		if (!((long double)e >= want && (long double)e <= want + 1e-12L * (fabsl(want) + 1)))
			fail_msg("rho %g delta %g slack %g alpha %.17g: %.17g < %.20Lg", rho, delta,
				 slack, alpha, e, want);
	}
}

/* Recomputed with 40-digit arithmetic (docs/zcdp.md §6). */
static void test_known_values(void **state)
{
	const struct { double rho, delta; long double eps; } k[] = {
		{ 0.5, 1e-5, 4.728386984943313881512555L },
		{ 0.1, 1e-6, 2.141938928385473730358716L },
		{ 1e-9, 1e-6, 0.00008953361886779917636989L },
		{ 1000, 1e-6, 1231.879323091842423846090L },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		double e = 0;

		assert_int_equal(dp_zcdp_eps(k[i].rho, 0, k[i].delta, &e), 0);
		assert_true((long double)e >= k[i].eps);
		assert_true((long double)e <= k[i].eps * (1 + 1e-12L));
	}
}

static void test_monotone_and_zero(void **state)
{
	double prev = 0, e = -1, e2 = -1;

	(void)state;
	assert_int_equal(dp_zcdp_eps(0, 0, 1e-6, &e), 0);
	assert_true(e == 0);
	assert_int_equal(dp_zcdp_eps(0, 1e-4, 1e-6, &e), 0);
	assert_true(e == 2e-4);
	for (double rho = 1e-8; rho < 1e3; rho *= 1.1) {
		assert_int_equal(dp_zcdp_eps(rho, 0, 1e-6, &e), 0);
		assert_true(e > prev);
		prev = e;
	}
	prev = 0;
	for (double delta = 0.9; delta > 1e-15; delta /= 3) {
		assert_int_equal(dp_zcdp_eps(0.01, 0, delta, &e), 0);
		assert_true(e >= prev);
		prev = e;
	}
	prev = 0;
	for (double s = 0; s < 0.1; s = s * 2 + 1e-6) {
		assert_int_equal(dp_zcdp_eps(0.01, s, 1e-6, &e), 0);
		assert_true(e > prev);
		prev = e;
		/* The slack's rule (docs/zcdp.md §3): the conversion at
		 * delta e^-a, plus 2a. */
		assert_int_equal(dp_zcdp_eps(0.01, 0, 1e-6 * exp(-s), &e2), 0);
		assert_true(e >= e2 + 2 * s);
		assert_true(e <= (e2 + 2 * s) * (1 + 1e-12));
	}
	assert_int_equal(dp_zcdp_eps(INFINITY, 0, 1e-6, &e), 0);
	assert_true(isinf(e));
}

static void test_bad_arguments(void **state)
{
	double e = 7;

	(void)state;
	assert_int_equal(dp_zcdp_eps(-1, 0, 1e-6, &e), DP_EINVAL);
	assert_int_equal(dp_zcdp_eps(NAN, 0, 1e-6, &e), DP_EINVAL);
	assert_int_equal(dp_zcdp_eps(1, -1e-9, 1e-6, &e), DP_EINVAL);
	assert_int_equal(dp_zcdp_eps(1, 0, 0, &e), DP_EINVAL);
	assert_int_equal(dp_zcdp_eps(1, 0, 1, &e), DP_EINVAL);
	assert_int_equal(dp_zcdp_eps(1, 0, NAN, &e), DP_EINVAL);
	assert_int_equal(dp_zcdp_eps_at(1, 0, 1e-6, 1.0, &e), DP_EINVAL);
	assert_int_equal(dp_zcdp_rho_for(0, 0, 1e-6, &e), DP_EINVAL);
	assert_int_equal(dp_zcdp_rho_for(1, 0.6, 1e-6, &e), DP_EINVAL);
	assert_int_equal(dp_zcdp_rho_for(1, 0, 0, &e), DP_EINVAL);
	assert_int_equal(dp_zcdp_rho_dgauss(-1, 1, 1, &e), DP_EINVAL);
	assert_int_equal(dp_zcdp_rho_dgauss(1, 0, 1, &e), DP_EINVAL);
	assert_int_equal(dp_zcdp_rho_dgauss(1, 1, 0, &e), DP_EINVAL);
	assert_int_equal(dp_zcdp_sigma_for(0, 1, 1, &e), DP_EINVAL);
	assert_int_equal(dp_zcdp_sigma_for(1, 0, 1, &e), DP_EINVAL);
	assert_true(e == 7);
}

static void test_rho_for_round_trip(void **state)
{
	const double epss[] = { 0.01, 0.1, 1, 8 };
	const double deltas[] = { 1e-9, 1e-6, 1e-2 };
	const double slacks[] = { 0, 1e-4 };

	(void)state;
	for (size_t i = 0; i < 4; i++)
		for (size_t j = 0; j < 3; j++)
			for (size_t k = 0; k < 2; k++) {
				double r = -1, e = 0;

				assert_int_equal(dp_zcdp_rho_for(epss[i], slacks[k], deltas[j], &r),
						 0);
				assert_true(r > 0);
				assert_int_equal(dp_zcdp_eps(r, slacks[k], deltas[j], &e), 0);
				assert_true(e <= epss[i]);
				assert_int_equal(dp_zcdp_eps(r * (1 + 1e-9), slacks[k], deltas[j],
							     &e), 0);
				assert_true(e > epss[i]);
			}
}

static void test_rho_pure(void **state)
{
	(void)state;
	assert_true(dp_zcdp_rho_pure(0) == 0);
	assert_true(dp_zcdp_rho_pure(1) == 0.5);
	assert_true(dp_zcdp_rho_pure(0.5) == 0.125);
	assert_true(isinf(dp_zcdp_rho_pure(INFINITY)));
	for (int i = 0; i < 1000; i++) {
		double eps = exp(-20 + 25 * uniform()), r = dp_zcdp_rho_pure(eps);
		long double want = (long double)eps * eps / 2;

		assert_true((long double)r >= want);
		assert_true((long double)r <= want * (1 + 3e-16L));
	}
}

/* The discrete Gaussians of scale sigma centred at m1 and m2, both on the
 * integers, without their normalisers: the exponent of p1(y)^alpha
 * p2(y)^(1-alpha). */
struct dg { long double sigma, m1, m2, alpha; };

static long double expo(const struct dg *g, long double y)
{
	long double s2 = 2 * g->sigma * g->sigma;

	return -(g->alpha * (y - g->m1) * (y - g->m1) +
		 (1 - g->alpha) * (y - g->m2) * (y - g->m2)) / s2;
}

/* ln of the sum over the integers within w of mid of exp(expo(y)), by
 * log-sum-exp. */
static long double lse(const struct dg *g, long double mid, long double w)
{
	long double M = -INFINITY, s = 0;
	long double lo = floorl(mid - w), hi = ceill(mid + w);

	for (long double y = lo; y <= hi; y++)
		M = fmaxl(M, expo(g, y));
	for (long double y = lo; y <= hi; y++)
		s += expl(expo(g, y) - M);
	return M + logl(s);
}

/* ln of the normaliser of the discrete Gaussian of scale sigma centred at
 * m, on the integers. */
static long double log_norm(long double sigma, long double m)
{
	long double s = 0, w = 60 * sigma + 10;

	for (long double y = floorl(m - w); y <= ceill(m + w); y++)
		s += expl(-(y - m) * (y - m) / (2 * sigma * sigma));
	return logl(s);
}

/* D_alpha(p1 || p2) for the discrete Gaussians on the integers centred at
 * m1 and m2, summed directly over the integers around the maximiser of the
 * exponent, alpha m1 + (1 - alpha) m2 (terms beyond 60 sigma are below
 * e^-1800 of it). */
static long double renyi(long double sigma, long double m1, long double m2, long double alpha)
{
	struct dg g = { sigma, m1, m2, alpha };
	long double l = lse(&g, alpha * m1 + (1 - alpha) * m2, 60 * sigma + 10);

	l -= alpha * log_norm(sigma, m1) + (1 - alpha) * log_norm(sigma, m2);
	return l / (alpha - 1);
}

static void test_dgauss_vs_renyi(void **state)
{
	const double sigmas[] = { 0.5, 0.75, 1, 1.5, 2, 3 };
	const double alphas[] = { 1.01, 1.5, 2, 3.7, 8, 20, 64 };

	(void)state;
	for (size_t i = 0; i < 6; i++)
		for (int m = 1; m <= 4; m++)
			for (size_t j = 0; j < 7; j++) {
				double rho = 0;
				long double D1, D2, bound;

				assert_int_equal(dp_zcdp_rho_dgauss(m, sigmas[i], 1, &rho), 0);
				bound = alphas[j] * (long double)rho;
				/* Both directions: neighbours are symmetric. */
				D1 = renyi(sigmas[i], 0, m, alphas[j]);
				D2 = renyi(sigmas[i], m, 0, alphas[j]);
				if (!(D1 <= bound && D2 <= bound))
					fail_msg("sigma %g m %d alpha %g: D %.12Lg %.12Lg > %.12Lg",
						 sigmas[i], m, alphas[j], D1, D2, bound);
				/* Tight where the lattice is fine: a rho too small
				 * by 1e-9 relative fails. */
				if (sigmas[i] == 3)
					assert_true(D1 >= bound * (1 - 1e-9L));
			}
}

/* d coordinates add their divergences; an integer shift (1, 2) has L2 norm
 * sqrt(5), within a sensitivity of 2.5. */
static void test_dgauss_vector(void **state)
{
	(void)state;
	for (double s = 0.5; s <= 3; s += 0.5) {
		double rho5 = 0, rho25 = 0;

		assert_int_equal(dp_zcdp_rho_dgauss(sqrt(5), s, 2, &rho5), 0);
		assert_int_equal(dp_zcdp_rho_dgauss(2.5, s, 2, &rho25), 0);
		for (double alpha = 1.25; alpha < 40; alpha *= 2) {
			long double D = renyi(s, 0, 1, alpha) + renyi(s, 0, 2, alpha);

			assert_true(D <= alpha * (long double)rho5);
			assert_true(D <= alpha * (long double)rho25);
		}
	}
}

/* The negative control (docs/zcdp.md §1): two discrete Gaussians on the
 * same integers whose centres differ by half a step break the bound (their
 * normalisers differ: at alpha = 2, D = m^2/sigma^2 + 2 ln(Z0/Z_m), 6 %
 * above here), so the integrality condition is not vacuous and the
 * numerics above can see a violation. */
static void test_dgauss_half_step_breaks(void **state)
{
	double rho = 0;

	(void)state;
	assert_int_equal(dp_zcdp_rho_dgauss(0.5, 0.5, 1, &rho), 0);
	assert_true(renyi(0.5, 0.5, 0, 2) > 2 * (long double)rho * 1.05L);
}

static void test_sigma_for(void **state)
{
	(void)state;
	for (int i = 0; i < 200; i++) {
		double d2 = exp(-5 + 15 * uniform()), rho = exp(-12 + 14 * uniform());
		double s = 0, r = 0;

		assert_int_equal(dp_zcdp_sigma_for(d2, rho, 7, &s), 0);
		assert_int_equal(dp_zcdp_rho_dgauss(d2, s, 7, &r), 0);
		assert_true(r <= rho);
		assert_int_equal(dp_zcdp_rho_dgauss(d2, nextafter(s, 0), 7, &r), 0);
		assert_true(r > rho);
		assert_true(fabs(s - d2 / sqrt(2 * rho)) <= 1e-14 * s);
	}
}

static void test_charges(void **state)
{
	dp_zcdp_totals c;

	(void)state;
	c = dp_zcdp_charge_pure(1000000000u);          /* eps 1: rho 0.5 */
	assert_true(c.eps_pure == 1000000000u && c.rho_pure == 500000000u);
	assert_true(c.rho_gauss == 0 && c.slack == 0);
	c = dp_zcdp_charge_pure(100000u);              /* 1e-4: 5e-9 exactly */
	assert_true(c.rho_pure == 5);
	c = dp_zcdp_charge_pure(1);                    /* rounds up to 1 */
	assert_true(c.rho_pure == 1);
	c = dp_zcdp_charge_pure(123456789u);           /* by hand: 7620790 */
	assert_true(c.rho_pure == 7620790u);
	c = dp_zcdp_charge_pure(0);
	assert_true(c.rho_pure == 0);
	c = dp_zcdp_charge_pure(DP_NANO_INF);
	assert_true(c.eps_pure == DP_NANO_INF && c.rho_pure == DP_NANO_INF);
	assert_int_equal(dp_zcdp_charge_gauss(0.25, 1e-12, &c), 0);
	assert_true(c.eps_pure == 0 && c.rho_pure == 0);
	assert_true(c.rho_gauss == 250000000u && c.slack == 1);
	assert_int_equal(dp_zcdp_charge_gauss(-1, 0, &c), DP_EINVAL);
}

static dp_zcdp_totals laplace(uint64_t answers, uint64_t eps_nano)
{
	dp_zcdp_totals t = { 0 }, c = dp_zcdp_charge_pure(eps_nano);

	for (uint64_t i = 0; i < answers; i++)
		dp_zcdp_add(&t, &c);
	return t;
}

static void test_lifetime_laplace_only(void **state)
{
	dp_zcdp_totals t = laplace(7, 123456789u), none = { 0 };
	uint64_t n = 0;
	double e = 0;
	bool fits = false;

	(void)state;
	assert_true(t.eps_pure == 7 * 123456789u);
	for (int i = 0; i < 2; i++) {
		double delta = i ? 1e-6 : 0;

		assert_int_equal(dp_zcdp_best_nano(&t, delta, &n), 0);
		assert_true(n == 7 * 123456789u);
		assert_int_equal(dp_zcdp_best_eps(&t, delta, &e), 0);
		assert_true(e >= 0.864197523 && e <= 0.864197523 * (1 + 1e-15));
		/* The cap check is today's integer sum, bit for bit. */
		assert_int_equal(dp_zcdp_fits(&t, &none, 7 * 123456789u, delta, &fits), 0);
		assert_true(fits);
		assert_int_equal(dp_zcdp_fits(&t, &none, 7 * 123456789u - 1, delta, &fits), 0);
		assert_false(fits);
	}
}

/* The two bounds of docs/zcdp.md §5 for the totals *t (the charges as the
 * ledger rounded them: 0.001 is a little above 1e-3 in binary, so it is
 * charged 1000001 nano-rho). */
static void both(const dp_zcdp_totals *t, double *a, double *b)
{
	double s = t->slack / 1e9;

	assert_int_equal(dp_zcdp_eps(t->rho_gauss / 1e9, s, 1e-6, a), 0);
	*a += t->eps_pure / 1e9;
	assert_int_equal(dp_zcdp_eps((t->rho_pure + t->rho_gauss) / 1e9, s, 1e-6, b), 0);
}

static void test_lifetime_mixed(void **state)
{
	dp_zcdp_totals g = { 0 }, t;
	double e, a, b, best;

	(void)state;
	assert_int_equal(dp_zcdp_charge_gauss(0.001, 1e-6, &g), 0);

	/* One Laplace answer of eps 1: basic composition beside the Gaussian
	 * answer wins (1 + 0.25 against the conversion of rho 0.501). */
	t = laplace(1, 1000000000u);
	dp_zcdp_add(&t, &g);
	assert_int_equal(dp_zcdp_best_eps(&t, 1e-6, &best), 0);
	both(&t, &a, &b);
	assert_true(a < b);
	assert_true(fabs(best - a) <= 1e-12 * a);

	/* A hundred Laplace answers of 0.01: all in zCDP wins (rho 0.006
	 * against 1 + 0.25). */
	t = laplace(100, 10000000u);
	dp_zcdp_add(&t, &g);
	assert_int_equal(dp_zcdp_best_eps(&t, 1e-6, &best), 0);
	both(&t, &a, &b);
	assert_true(b < a);
	assert_true(fabs(best - b) <= 1e-12 * b);

	/* Gaussian spent and delta 0: no pure guarantee, refused. */
	assert_int_equal(dp_zcdp_best_eps(&t, 0, &e), 0);
	assert_true(isinf(e));
	assert_int_equal(dp_zcdp_best_eps(&t, -1, &e), DP_EINVAL);
	assert_int_equal(dp_zcdp_best_eps(&t, 1, &e), DP_EINVAL);
}

static void test_fits_and_rho_left(void **state)
{
	dp_zcdp_totals t = laplace(3, 50000000u), none = { 0 }, c;
	uint64_t cap = 1000000000u, left = 0, n = 0;
	bool fits = true;

	(void)state;
	/* delta 0: a Gaussian charge never fits, whatever the cap. */
	assert_int_equal(dp_zcdp_charge_gauss(1e-9, 0, &c), 0);
	assert_int_equal(dp_zcdp_fits(&t, &c, cap, 0, &fits), 0);
	assert_false(fits);
	assert_int_equal(dp_zcdp_rho_left(&t, 0, cap, 0, &left), 0);
	assert_true(left == 0);

	/* The largest Gaussian charge that fits, and one nano-rho more. */
	assert_int_equal(dp_zcdp_rho_left(&t, 100, cap, 1e-6, &left), 0);
	assert_true(left > 0);
	c = (dp_zcdp_totals){ 0, 0, left, 100 };
	assert_int_equal(dp_zcdp_fits(&t, &c, cap, 1e-6, &fits), 0);
	assert_true(fits);
	c.rho_gauss = left + 1;
	assert_int_equal(dp_zcdp_fits(&t, &c, cap, 1e-6, &fits), 0);
	assert_false(fits);

	/* The cap is compared with the rounded-up best figure. */
	dp_zcdp_add(&t, &c);
	assert_int_equal(dp_zcdp_best_nano(&t, 1e-6, &n), 0);
	assert_true(n > cap);
	assert_int_equal(dp_zcdp_fits(&t, &none, n, 1e-6, &fits), 0);
	assert_true(fits);
	assert_int_equal(dp_zcdp_fits(&t, &none, n - 1, 1e-6, &fits), 0);
	assert_false(fits);
	assert_int_equal(dp_zcdp_fits(&t, &none, DP_NANO_INF, 1e-6, &fits), 0);
	assert_true(fits);
	assert_int_equal(dp_zcdp_rho_left(&t, 0, DP_NANO_INF, 1e-6, &left), 0);
	assert_true(left == DP_NANO_INF);
}

/* A job's share (docs/zcdp.md §7): `answers` charges of rho_q rounded up,
 * with their slack, stay within (eps, delta) once the tail term is taken
 * off delta; the share is within 0.1 % of what the same budget gives with
 * no slack or tail (these are 1e-12 and 1e-216 per coordinate), less the
 * under one nano-rho per answer that the ledger's unit rounds away; and
 * the refusals. */
static void test_share(void **state)
{
	static const double eps_v[] = { 0.1, 1.0, 4.0, 30.0 };
	static const uint64_t k_v[] = { 1, 7, 100, 5000 };

	(void)state;
	for (size_t i = 0; i < sizeof(eps_v) / sizeof(eps_v[0]); i++) {
		for (size_t j = 0; j < sizeof(k_v) / sizeof(k_v[0]); j++) {
			double eps = eps_v[i], rho_q = -1, ideal, e, slack;
			uint64_t K = k_v[j], sn = 99, rn;
			const size_t d = 100;

			assert_int_equal(dp_zcdp_share(eps, 1e-6, K, d, 1e-12, 1e-216, &rho_q, &sn), 0);
			assert_int_equal(sn, 1);     /* 100 x 1e-12 = 1e-10, one nano rounded up */
			assert_int_equal(dp_nano_ceil(rho_q, &rn), 0);
			slack = (double)(K * sn) / 1e9;
			/* tail: e^(eps + slack) K d 1e-216 < 1e-190 here; 1e-12 of
			 * delta is far above it */
			assert_int_equal(dp_zcdp_eps((double)(K * rn) / 1e9 * (1 + 1e-15), slack,
						     1e-6 * (1 - 1e-12), &e), 0);
			assert_true(e <= eps);
			assert_int_equal(dp_zcdp_rho_for(eps, 0.0, 1e-6, &ideal), 0);
			/* what the ledger's unit loses: under one nano-rho per answer */
			assert_true(rho_q * (double)K >= 0.999 * ideal - (double)K * 1e-9);
		}
	}
	{
		double rho_q = -1;
		uint64_t sn = 99;

		assert_int_equal(dp_zcdp_share(INFINITY, 1e-6, 10, 5, 1e-12, 1e-216, &rho_q, &sn), 0);
		assert_true(isinf(rho_q));
		assert_int_equal(sn, 0);
		rho_q = -1;
		/* e^700 1e-216 is about 1e88: no delta survives the tail */
		assert_int_equal(dp_zcdp_share(700.0, 1e-6, 10, 5, 1e-12, 1e-216, &rho_q, &sn),
				 DP_ERANGE);
		assert_int_equal(dp_zcdp_share(1.0, 0.0, 10, 5, 1e-12, 1e-216, &rho_q, &sn),
				 DP_EINVAL);
		assert_int_equal(dp_zcdp_share(1.0, 1e-6, 0, 5, 1e-12, 1e-216, &rho_q, &sn),
				 DP_EINVAL);
		assert_int_equal(dp_zcdp_share(1.0, 1e-6, 10, 0, 1e-12, 1e-216, &rho_q, &sn),
				 DP_EINVAL);
		assert_int_equal(dp_zcdp_share(0.0, 1e-6, 10, 5, 1e-12, 1e-216, &rho_q, &sn),
				 DP_EINVAL);
		/* 2 x 10^6 answers of one nano-eps of slack each spend 4e-3 > eps */
		assert_int_equal(dp_zcdp_share(1e-3, 1e-6, 2000000, 5, 1e-12, 1e-216, &rho_q, &sn),
				 DP_EINVAL);
		assert_true(rho_q == -1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conversion_vs_brute_force),
		cmocka_unit_test(test_eps_at_rounds_up),
		cmocka_unit_test(test_known_values),
		cmocka_unit_test(test_monotone_and_zero),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_rho_for_round_trip),
		cmocka_unit_test(test_rho_pure),
		cmocka_unit_test(test_dgauss_vs_renyi),
		cmocka_unit_test(test_dgauss_vector),
		cmocka_unit_test(test_dgauss_half_step_breaks),
		cmocka_unit_test(test_sigma_for),
		cmocka_unit_test(test_charges),
		cmocka_unit_test(test_lifetime_laplace_only),
		cmocka_unit_test(test_lifetime_mixed),
		cmocka_unit_test(test_fits_and_rho_left),
		cmocka_unit_test(test_share),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
