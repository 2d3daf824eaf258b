/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the planner, common/core/plan.c with plan_recursion.c and
 * plan_public.c: its prediction against the real update rule
 * (common/core/algo.c) run many times, its choices, and the public
 * constants' file form. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/algo.h"
#include "common/core/error.h"
#include "common/core/noise.h"
#include "common/core/plan.h"
#include "common/core/zcdp.h"
#include "tools/lib/simrng.h"

/* A public description of a quadratic problem with diagonal curvature:
 * mean loss gradient in direction q is h_q (theta_q - t_q) - 2 lambda t_q,
 * so the optimum of f = lambda |theta|^2 + loss is t. */
static void quad_public(dp_plan_public *pub, size_t p, const double *h, const double *t,
			double lambda, double f_star)
{
	memset(pub, 0, sizeof(*pub));
	pub->model = DP_MODEL_LINEAR;
	pub->p = p;
	pub->lambda = lambda;
	pub->f_star = f_star;
	pub->f_zero = f_star;
	for (size_t q = 0; q < p; q++)
		pub->f_zero += 0.5 * (h[q] + 2 * lambda) * t[q] * t[q];
	pub->alone = 1.0;
	pub->h_safe = 0;
	for (size_t q = 0; q < p; q++)
		if (h[q] > pub->h_safe)
			pub->h_safe = h[q];
	pub->measured = true;
	pub->nclip = 1;
	pub->clips = calloc(1, sizeof(*pub->clips));
	pub->clips[0].clip = 1.0;
	pub->clips[0].f_clip = f_star;
	pub->clips[0].h = calloc(p, sizeof(double));
	pub->clips[0].t = calloc(p, sizeof(double));
	pub->clips[0].hf = calloc(p, sizeof(double));
	memcpy(pub->clips[0].h, h, p * sizeof(double));
	memcpy(pub->clips[0].t, t, p * sizeof(double));
	memcpy(pub->clips[0].hf, h, p * sizeof(double));
}

/* The way from 0 of that quadratic problem, as public.c would measure it:
 * f along the linear flow, f_clip + sum_q (h_q/2 + lambda) t_q^2 exp(-2
 * (h_q + 2 lambda) tau), times `stretch` (1: the quadratic itself), and
 * the curvature along it, h times `hscale`. */
static void quad_path(dp_plan_public *pub, double stretch, double hscale)
{
	dp_plan_clip *k = &pub->clips[0];
	size_t n = 12, p = pub->p;

	k->npath = n;
	k->tau = calloc(n, sizeof(double));
	k->path_f = calloc(n, sizeof(double));
	k->path_h = calloc(n * p, sizeof(double));
	for (size_t s = 0; s < n; s++) {
		double ex = 0.0;

		k->tau[s] = s == 0 ? 0.0 : 1e-3 * pow(4.0, (double)(s - 1));
		for (size_t q = 0; q < p; q++) {
			ex += 0.5 * (k->hf[q] + 2 * pub->lambda) * k->t[q] * k->t[q] *
			      exp(-2.0 * (k->h[q] + 2 * pub->lambda) * k->tau[s]);
			k->path_h[s * p + q] = hscale * k->hf[q];
		}
		k->path_f[s] = k->f_clip + stretch * ex;
	}
}

static double uniform(dp_simrng *r)
{
	return ((double)(dp_simrng_next(r) >> 11) + 0.5) * 0x1.0p-53;
}

/* Laplace(0, b) by inversion: fine for a test of variances. */
static double laplace(dp_simrng *r, double b)
{
	double u = uniform(r) - 0.5;

	return -b * (u < 0 ? -1.0 : 1.0) * log(1.0 - 2.0 * fabs(u));
}

/* N(0, sigma^2) by Box-Muller: the planner models the noise by its
 * variance, which the discrete Gaussian of the answers matches to within
 * its lattice (docs/planner.md §7). */
static double gauss(dp_simrng *r, double sigma)
{
	return sigma * sqrt(-2.0 * log(uniform(r))) * cos(2.0 * M_PI * uniform(r));
}

/* The per-coordinate sigma of a Gaussian answer of clip 1 for an owner of
 * n rows spending (eps, delta) over K answers: 2 / (n sqrt(2 rho_q)), rho_q
 * as dp_zcdp_share gives it (docs/zcdp.md §7). */
static double gauss_sigma(double eps, double delta, uint64_t K, size_t p, double n)
{
	double rho_q;
	uint64_t slack;

	assert_int_equal(dp_zcdp_share(eps, delta, K, p, DP_NOISE_DGAUSS_SLACK,
				       DP_NOISE_DGAUSS_TAIL, &rho_q, &slack), 0);
	return 2.0 / (n * sqrt(2.0 * rho_q));
}

/* The planner's predicted excess of f against the mean excess of R runs of
 * the real async update rule (dp_algo_async_update) on the same quadratic,
 * owners picked uniformly at random, Laplace noise of scale b on every
 * answer (or, with gauss_eps > 0, Gaussian answers of owners spending
 * (gauss_eps, 1e-6) over K = 10 answers each, b unused).  The recursion is
 * exact for this problem, so the two must agree within the Monte-Carlo
 * error: the test allows 5 standard errors (a correct model fails with
 * probability below 1e-6). */
static void check_async_mech(size_t N, size_t T, double eta, double b, bool path,
			     double gauss_eps)
{
	enum { P = 3 };
	const double h[P] = { 0.3, 2.0, 6.0 }, t[P] = { 1.0, -0.5, 0.25 }, lambda = 0.01;
	const size_t R = 20000;
	dp_plan_public pub;
	uint64_t n[8], K[8];
	double eps[8], sum = 0, sum2 = 0, pred, opt, noise, cb, mean, se, gsig = 0;
	dp_simrng rng;

	assert_true(N <= 8);
	quad_public(&pub, P, h, t, lambda, 1.0);
	if (path)     /* on a quadratic the path is the linear flow: same model */
		quad_path(&pub, 1.0, 1.0);
	for (size_t i = 0; i < N; i++) {
		n[i] = 1000;
		K[i] = 10;
		/* b = 2 clip K / (n eps) with clip 1  =>  eps = 2 K / (n b) */
		eps[i] = b > 0 ? 2.0 * 10.0 / (1000.0 * b) : INFINITY;
	}
	dp_plan_request req = { .mode = DP_PLAN_ASYNC, .N = N, .n_rows = n, .epsilon = eps };
	if (gauss_eps > 0) {
		pub.l2 = true;
		req.mech = DP_MECH_GAUSSIAN;
		req.delta = 1e-6;
		for (size_t i = 0; i < N; i++)
			eps[i] = gauss_eps;
		gsig = gauss_sigma(gauss_eps, 1e-6, 10, P, 1000.0);
		b = 0;
	}
	pred = dp_plan_predict(&req, &pub, T, eta, 0, K, &opt, &noise, &cb);
	assert_true(fabs(opt + noise + cb - pred) <= 1e-12 * pred);
	assert_true(b > 0 || gsig > 0 ? noise > 0 : noise == 0);

	dp_simrng_seed(&rng, 12345 + N * 1000 + T);
	for (size_t r = 0; r < R; r++) {
		double L[P] = { 0 }, th[8][P] = { { 0 } }, bar[P], ans[P], ex = 0;
		dp_algo_async_params ap = { .p = P, .N = N, .eta = eta, .lambda = lambda,
					    .theta_max = 1e9 };

		for (size_t k = 0; k < T; k++) {
			size_t i = (size_t)(uniform(&rng) * (double)N);

			dp_algo_midpoint(P, L, th[i], bar);
			for (size_t q = 0; q < P; q++)
				ans[q] = h[q] * (bar[q] - t[q]) - 2 * lambda * t[q] +
					 (b > 0 ? laplace(&rng, b) : 0.0) +
					 (gsig > 0 ? gauss(&rng, gsig) : 0.0);
			dp_algo_async_update(&ap, bar, ans, 1.0 / (double)N, th[i], L);
		}
		for (size_t q = 0; q < P; q++)
			ex += 0.5 * (h[q] + 2 * lambda) * (L[q] - t[q]) * (L[q] - t[q]);
		sum += ex;
		sum2 += ex * ex;
	}
	mean = sum / (double)R;
	se = sqrt((sum2 / (double)R - mean * mean) / (double)R);
	/* f* = 1, so psi is the excess. */
	if (!(fabs(pred - mean) <= 5 * se + 1e-12)) {
		fprintf(stderr, "N=%zu T=%zu eta=%g b=%g sigma=%g: predicted %.6g, update rule "
			"%.6g +- %.3g\n", N, T, eta, b, gsig, pred, mean, se);
		fail();
	}
	dp_plan_public_free(&pub);
}

static void check_async_against_update_rule(size_t N, size_t T, double eta, double b,
					    bool path)
{
	check_async_mech(N, T, eta, b, path, 0.0);
}

static void test_prediction_matches_update_rule(void **state)
{
	for (int path = 0; path < 2; path++) {
		check_async_against_update_rule(4, 60, 0.3, 0.0, path);
		check_async_against_update_rule(4, 60, 0.3, 0.5, path);
		check_async_against_update_rule(2, 200, 0.8, 0.2, path);
		check_async_against_update_rule(1, 50, 0.2, 0.3, path);
		check_async_against_update_rule(7, 333, 0.05, 1.0, path);
	}
	/* Gaussian answers: sigma about 0.5 at eps 0.07, delta 1e-6. */
	check_async_mech(4, 60, 0.3, 0.0, false, 0.07);
}

/* The Gaussian noise term (docs/planner.md §7) against an independent
 * computation: the noise part of a prediction is the noise input times a
 * gain that does not depend on the mechanism, so at the same settings the
 * Gaussian part over the Laplace part is sum_i pi_i w_i^2 sigma_i^2 over
 * sum_i pi_i w_i^2 2 b_i^2, with b_i = 2 C K_i / (n_i eps_i) and sigma_i =
 * 2 C / (n_i sqrt(2 rho_i)); and K_i rho_i, the answers' shares of
 * (eps_i, delta), is within 0.1 % below the rho whose tight conversion
 * (tight_eps, by brute force over alpha) is eps_i: the slack and the tail
 * take a little, the rounding to nano units less.  Also: Laplace plans do
 * not depend on delta, the mechanism must match the constants' clips, and
 * a Gaussian plan is refused without a delta. */
/* eps(delta) of rho-zCDP by the tight conversion of docs/zcdp.md, the
 * minimum over a fine geometric grid of alpha in (1, 1e5), L = ln(1/delta). */
static double tight_eps(double rho, double L)
{
	double best = INFINITY;

	for (double a = 1.001; a < 1e5; a *= 1.001) {
		double v = a * rho + (L + (a - 1) * log(1 - 1 / a) - log(a)) / (a - 1);

		if (v < best)
			best = v;
	}
	return best;
}

static void test_gaussian_noise_term(void **state)
{
	enum { P = 3 };
	const double h[P] = { 0.3, 2.0, 6.0 }, t[P] = { 1.0, -0.5, 0.25 }, delta = 1e-6;
	dp_plan_public pub;
	uint64_t n[3] = { 1000, 3000, 500 }, K[3] = { 40, 25, 12 };
	double eps[3] = { 1.0, 0.5, 4.0 }, rate[3] = { 1, 2, 1 }, w[3], pi[3];
	double lap, gau, lap_noise, gau_noise, num = 0, den = 0, L = log(1.0 / delta);
	dp_plan pl;

	quad_public(&pub, P, h, t, 0.01, 1.0);
	dp_plan_request req = { .mode = DP_PLAN_ASYNC, .N = 3, .n_rows = n, .epsilon = eps,
				.rate = rate };
	lap = dp_plan_predict(&req, &pub, 80, 0.2, 0, K, NULL, &lap_noise, NULL);
	req.delta = 0.25;   /* unused by Laplace: the same bits */
	assert_true(dp_plan_predict(&req, &pub, 80, 0.2, 0, K, NULL, NULL, NULL) == lap);
	req.mech = DP_MECH_GAUSSIAN;
	req.delta = delta;
	pub.l2 = true;
	gau = dp_plan_predict(&req, &pub, 80, 0.2, 0, K, NULL, &gau_noise, NULL);
	assert_true(isfinite(gau) && gau < lap && gau_noise > 0);
	for (size_t i = 0; i < 3; i++) {
		double b = 2.0 * K[i] / ((double)n[i] * eps[i]);
		double sig = gauss_sigma(eps[i], delta, K[i], P, (double)n[i]);
		double rho = 2.0 / (sig * sig * (double)n[i] * (double)n[i]);
		double lo = 1e-9, hi = 10.0;

		for (int it = 0; it < 60; it++) {
			double mid = sqrt(lo * hi);

			if (tight_eps(mid, L) > eps[i])
				hi = mid;
			else
				lo = mid;
		}
		assert_true(rho * (double)K[i] <= lo * (1 + 1e-6) &&
			    rho * (double)K[i] >= lo * (1 - 1e-3));
		w[i] = (double)n[i] / 4500.0;
		pi[i] = rate[i] / 4.0;
		num += pi[i] * w[i] * w[i] * sig * sig;
		den += pi[i] * w[i] * w[i] * 2.0 * b * b;
	}
	assert_true(fabs(gau_noise / lap_noise - num / den) <= 1e-9 * num / den);
	/* The rest of the prediction is the mechanism's own business only
	 * through the noise. */
	assert_true(fabs((gau - gau_noise) - (lap - lap_noise)) <= 1e-12 * lap);

	/* A plan: the same search, the Gaussian term. */
	assert_int_equal(dp_plan_make(&req, &pub, &pl), 0);
	assert_true(isfinite(pl.psi) && pl.psi > 0);
	dp_plan_free(&pl);
	req.delta = 0;
	assert_int_equal(dp_plan_make(&req, &pub, &pl), DP_EINVAL);
	req.delta = delta;
	pub.l2 = false;   /* L1 candidates for L2 answers */
	assert_int_equal(dp_plan_make(&req, &pub, &pl), DP_EINVAL);
	req.mech = DP_MECH_LAPLACE;
	pub.l2 = true;    /* and the other way round */
	assert_int_equal(dp_plan_make(&req, &pub, &pl), DP_EINVAL);
	dp_plan_public_free(&pub);

	/* Shape-only L2 candidates scale with sqrt(p), not p sqrt(2/pi). */
	{
		dp_plan_public a, b2;

		assert_int_equal(dp_plan_public_shape(DP_MODEL_LINEAR, 16, 0.01, &a), 0);
		assert_int_equal(dp_plan_public_shape_norm(DP_MODEL_LINEAR, 16, 0.01, true, &b2),
				 0);
		struct json_object *ja, *jb;
		dp_plan_public c;

		assert_true(b2.l2 && !a.l2);
		assert_true(fabs(a.clips[0].clip / b2.clips[0].clip -
				 16.0 * sqrt(2.0 / M_PI) / 4.0) < 1e-12);
		/* "l2" is written only for L2 constants and read back. */
		ja = dp_plan_public_json(&a);
		jb = dp_plan_public_json(&b2);
		assert_non_null(ja);
		assert_non_null(jb);
		assert_false(json_object_object_get_ex(ja, "l2", NULL));
		assert_int_equal(dp_plan_public_parse("l2", jb, &c), 0);
		assert_true(c.l2);
		dp_plan_public_free(&c);
		json_object_put(ja);
		json_object_put(jb);
		dp_plan_public_free(&a);
		dp_plan_public_free(&b2);
	}
}

/* Sync1 without noise is deterministic: e' = (1 - s_k H) e.  Closed form:
 * the product of the factors. */
static void test_sync1_deterministic(void **state)
{
	const double h[1] = { 1.5 }, t[1] = { 2.0 }, lambda = 0.25;
	dp_plan_public pub;
	uint64_t n[2] = { 10, 10 }, K[2] = { 9, 9 };
	double eps[2] = { INFINITY, INFINITY }, e = -t[0], step = 0.3, pred;
	size_t T = 10;

	quad_public(&pub, 1, h, t, lambda, 1.0);
	dp_plan_request req = { .mode = DP_PLAN_SYNC1, .N = 2, .n_rows = n, .epsilon = eps };
	pred = dp_plan_predict(&req, &pub, T, step, 0, K, NULL, NULL, NULL);
	for (size_t k = 1; k < T; k++)
		e *= 1.0 - step / (double)k * (h[0] + 2 * lambda);
	assert_true(fabs(pred - 0.5 * (h[0] + 2 * lambda) * e * e) <= 1e-12);
	dp_plan_public_free(&pub);
}

/* Sync2: the output is the running average; check against iterating the
 * real step function without noise. */
static void test_sync2_deterministic(void **state)
{
	const double h[1] = { 0.8 }, t[1] = { -1.0 }, lambda = 0.1;
	dp_plan_public pub;
	uint64_t n[1] = { 10 }, K[1] = { 99 };
	double eps[1] = { INFINITY }, c = 0.2, pred, th = 0, hat = 0, agg;
	size_t T = 40;

	quad_public(&pub, 1, h, t, lambda, 1.0);
	dp_plan_request req = { .mode = DP_PLAN_SYNC2, .N = 1, .n_rows = n, .epsilon = eps };
	pred = dp_plan_predict(&req, &pub, T, c, 0, K, NULL, NULL, NULL);
	for (size_t k = 1; k < T; k++) {
		agg = h[0] * (th - t[0]) - 2 * lambda * t[0];
		dp_algo_sync2_step(1, c, k, T, lambda, 1e9, &agg, &th, &hat);
	}
	assert_true(fabs(pred - 0.5 * (h[0] + 2 * lambda) * (hat - t[0]) * (hat - t[0])) <= 1e-9);
	dp_plan_public_free(&pub);
}

static void test_choices(void **state)
{
	dp_plan_public pub;
	uint64_t n[3] = { 5000, 5000, 10000 }, fixed[3] = { 0, 77, 0 };
	double eps[3] = { 1, 1, 2 }, rate[3] = { 1, 1, 2 };
	dp_plan pl, lean;

	assert_int_equal(dp_plan_public_shape(DP_MODEL_LINEAR, 8, 0.01, &pub), 0);
	dp_plan_request req = { .mode = DP_PLAN_ASYNC, .N = 3, .n_rows = n, .epsilon = eps,
				.rate = rate };
	assert_int_equal(dp_plan_make(&req, &pub, &pl), 0);
	/* K_i = ceil(T pi_i 1.1), shares from the rates. */
	assert_true(fabs(pl.share[2] - 0.5) < 1e-15);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(pl.answers_cap[i], (uint64_t)ceil((double)pl.T * pl.share[i] * 1.1));
	/* The step never exceeds the contraction bound of the stiffest
	 * direction a standardised table allows (h_safe = 2p). */
	assert_true(pl.step <= 1.0 / (0.01 / 3 + 0.5 * 16.0) * (1 + 1e-12));
	assert_true(pl.psi > 0 && isfinite(pl.psi));
	assert_true(fabs(pl.psi - (pl.psi_opt + pl.psi_noise + pl.psi_clip)) <= 1e-12 * pl.psi);
	assert_false(pl.measured);
	/* More budget never predicts a worse model. */
	{
		double e2[3] = { 4, 4, 8 };
		dp_plan_request r2 = req;
		dp_plan p2;

		r2.epsilon = e2;
		assert_int_equal(dp_plan_make(&r2, &pub, &p2), 0);
		assert_true(p2.psi <= pl.psi);
		dp_plan_free(&p2);
	}
	dp_plan_free(&pl);

	/* Settings the user gives are kept. */
	req.T = 321;
	req.step = 0.01;
	req.clip = 3.5;
	req.answers_cap = fixed;
	assert_int_equal(dp_plan_make(&req, &pub, &pl), 0);
	assert_int_equal(pl.T, 321);
	assert_true(pl.step == 0.01);
	assert_true(pl.clip == 3.5);
	assert_int_equal(pl.answers_cap[1], 77);
	/* Owner 2 serves at most 77 of its expected 321/4: the iterations it
	 * leaves go to owners 1 and 3 in proportion to their rates (1 : 2). */
	assert_int_equal(pl.answers_cap[0], (uint64_t)ceil((321 - 77) * (1.0 / 3.0) * 1.1));
	assert_int_equal(pl.answers_cap[2], (uint64_t)ceil((321 - 77) * (2.0 / 3.0) * 1.1));
	dp_plan_free(&pl);

	/* Sync: every owner answers T - 1 rounds; a smaller cap is refused. */
	req.mode = DP_PLAN_SYNC1;
	req.step = 0;
	req.clip = 0;
	req.answers_cap = NULL;
	req.T = 50;
	assert_int_equal(dp_plan_make(&req, &pub, &pl), 0);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(pl.answers_cap[i], 49);
	dp_plan_free(&pl);
	/* ... plus the slack for restarts, which the prediction pays for;
	 * an owner's own cap is kept as it is. */
	req.slack = 2;
	assert_int_equal(dp_plan_make(&req, &pub, &pl), 0);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(pl.answers_cap[i], 51);
	req.slack = 0;
	req.clip = pl.clip;
	req.step = pl.step;
	assert_int_equal(dp_plan_make(&req, &pub, &lean), 0);
	assert_true(pl.psi > lean.psi);
	dp_plan_free(&lean);
	req.clip = 0;
	req.step = 0;
	dp_plan_free(&pl);
	req.slack = DP_PLAN_SLACK_MAX + 1;
	assert_int_equal(dp_plan_make(&req, &pub, &pl), DP_EINVAL);
	req.slack = 0;
	req.answers_cap = fixed;      /* owner 2 caps at 77: fine for T = 50 ... */
	assert_int_equal(dp_plan_make(&req, &pub, &pl), 0);
	dp_plan_free(&pl);
	req.T = 100;                  /* ... not for the 99 rounds of T = 100 */
	assert_int_equal(dp_plan_make(&req, &pub, &pl), DP_EINVAL);
	dp_plan_public_free(&pub);
}

static void test_bad_requests(void **state)
{
	dp_plan_public pub;
	uint64_t n[2] = { 10, 0 };
	double eps[2] = { 1, 1 };
	dp_plan pl;

	assert_int_equal(dp_plan_public_shape(DP_MODEL_LOGISTIC, 4, 0.01, &pub), 0);
	dp_plan_request req = { .mode = DP_PLAN_ASYNC, .N = 2, .n_rows = n, .epsilon = eps };
	assert_int_equal(dp_plan_make(&req, &pub, &pl), DP_EINVAL);   /* no rows */
	n[1] = 10;
	eps[0] = 0;
	assert_int_equal(dp_plan_make(&req, &pub, &pl), DP_EINVAL);   /* epsilon 0 */
	eps[0] = 1;
	req.T = 1;
	assert_int_equal(dp_plan_make(&req, &pub, &pl), DP_EINVAL);   /* T 1 */
	req.T = 0;
	/* What could reach an integer conversion (docs/protocol.md §5 "Limits
	 * on a Hello's claims"): two rates of 1.7e308 sum to inf and once gave
	 * every owner K = 2^63 (a NaN cast); refused.  A huge fixed cap does
	 * not wrap the sum of caps; T, t-max and margin are bounded. */
	{
		double huge[2] = { 1.7e308, 1.7e308 }, ok[2] = { 1e9, 1e9 };
		uint64_t caps[2] = { UINT64_MAX, UINT64_MAX };

		req.rate = huge;
		assert_int_equal(dp_plan_make(&req, &pub, &pl), DP_EINVAL);
		assert_non_null(strstr(dp_error_detail(DP_EINVAL), "rates sum to more than"));
		req.rate = ok;
		req.T_max = 200;
		assert_int_equal(dp_plan_make(&req, &pub, &pl), 0);
		assert_true(pl.answers_cap[0] == pl.answers_cap[1] &&
			    pl.answers_cap[0] == (uint64_t)ceil(pl.T * 0.5 * 1.1));
		dp_plan_free(&pl);
		req.answers_cap = caps;   /* every cap fixed: T <= their sum, no wrap */
		assert_int_equal(dp_plan_make(&req, &pub, &pl), 0);
		assert_true(pl.T >= 4 && pl.T <= 200);
		dp_plan_free(&pl);
		req.mode = DP_PLAN_SYNC1;   /* sync: T - 1 <= each cap, no wrap */
		assert_int_equal(dp_plan_make(&req, &pub, &pl), 0);
		assert_true(pl.T >= 2 && pl.T <= 200);
		dp_plan_free(&pl);
		req.mode = DP_PLAN_ASYNC;
		req.answers_cap = NULL;
		req.T_max = DP_PLAN_T_LIMIT + 1;
		assert_int_equal(dp_plan_make(&req, &pub, &pl), DP_EINVAL);
		req.T_max = 0;
		req.T = DP_PLAN_T_LIMIT + 1;
		assert_int_equal(dp_plan_make(&req, &pub, &pl), DP_EINVAL);
		req.T = 1000;
		req.margin = 1e300;
		assert_int_equal(dp_plan_make(&req, &pub, &pl), DP_EINVAL);
		assert_non_null(strstr(dp_error_detail(DP_EINVAL), "T (1 + margin)"));
		req.margin = NAN;
		assert_int_equal(dp_plan_make(&req, &pub, &pl), DP_EINVAL);
		req.margin = 0;
		req.rate = NULL;
		req.T = 0;
	}
	dp_plan_public_free(&pub);
	assert_int_equal(dp_plan_public_shape(DP_MODEL_LINEAR, 0, 0.01, &pub), DP_EINVAL);
}

/* Tiny owners at a small budget: the planner must say the private model
 * is worse than the zero model and that collaborating does not pay. */
static void test_warnings(void **state)
{
	dp_plan_public pub;
	uint64_t n[4] = { 30, 30, 30, 30 }, big[2] = { 1000000, 1000000 };
	double eps[4] = { 0.1, 0.1, 0.1, 0.1 };
	char buf[1024];
	dp_plan pl;

	assert_int_equal(dp_plan_public_shape(DP_MODEL_LINEAR, 20, 0.01, &pub), 0);
	dp_plan_request req = { .mode = DP_PLAN_ASYNC, .N = 4, .n_rows = n, .epsilon = eps };
	assert_int_equal(dp_plan_make(&req, &pub, &pl), 0);
	assert_true(pl.worse_than_zero);
	dp_plan_warnings(&pl, &pub, buf, sizeof(buf));
	assert_non_null(strstr(buf, "worse than the all-zero model"));
	assert_non_null(strstr(buf, "no public sample"));
	dp_plan_free(&pl);

	/* Two huge owners with plenty of budget: the joint model wins, no
	 * "worse than zero" line. */
	eps[0] = eps[1] = 10;
	req.N = 2;
	req.n_rows = big;
	assert_int_equal(dp_plan_make(&req, &pub, &pl), 0);
	assert_false(pl.worse_than_zero);
	dp_plan_warnings(&pl, &pub, buf, sizeof(buf));
	assert_null(strstr(buf, "worse than the all-zero model"));
	dp_plan_free(&pl);
	dp_plan_public_free(&pub);
}

static void test_public_json_round_trip(void **state)
{
	dp_plan_public a, b;
	struct json_object *o, *wrap;

	for (int m = 0; m < 3; m++) {
		assert_int_equal(dp_plan_public_shape((dp_model)m, 5, 0.02, &a), 0);
		if (m == 1) {   /* measured constants carry secant curvatures and a path */
			static char *const names[] = { "a", "b", "c", "d", "bias" };
			dp_plan_clip *k = &a.clips[0];

			/* ... and the sample's names (docs/planner.md "With a
			 * public sample") */
			assert_int_equal(dp_plan_public_set_names(&a, "price", names), 0);

			k->hs = calloc(a.p, sizeof(double));
			for (size_t q = 0; q < a.p; q++)
				k->hs[q] = 0.1 + 0.01 * (double)q;
			k->npath = 3;
			k->tau = calloc(3, sizeof(double));
			k->path_f = calloc(3, sizeof(double));
			k->path_h = calloc(3 * a.p, sizeof(double));
			for (size_t s = 0; s < 3; s++) {
				k->tau[s] = s == 0 ? 0.0 : 0.1 * (double)(s * s);
				k->path_f[s] = 1.0 / (1.0 + (double)s);
				for (size_t q = 0; q < a.p; q++)
					k->path_h[s * a.p + q] = 0.3 * (double)(s + q);
			}
		}
		o = dp_plan_public_json(&a);
		assert_non_null(o);
		wrap = json_object_new_object();
		json_object_object_add(wrap, "public", o);
		/* Through text, as a file would be. */
		{
			struct json_object *back = json_tokener_parse(json_object_to_json_string(wrap));

			assert_int_equal(dp_plan_public_parse("x.json", back, &b), 0);
			json_object_put(back);
		}
		assert_int_equal(b.model, a.model);
		assert_int_equal(b.p, a.p);
		assert_true(b.f_star == a.f_star && b.h_safe == a.h_safe && b.alone == a.alone);
		assert_int_equal(b.nclip, a.nclip);
		assert_true((a.target == NULL) == (b.target == NULL) &&
			    (a.features == NULL) == (b.features == NULL));
		if (a.target != NULL) {
			assert_string_equal(b.target, "price");
			assert_string_equal(b.features[0], "a");
			assert_string_equal(b.features[4], "bias");
		}
		for (size_t c = 0; c < a.nclip; c++) {
			assert_true((a.clips[c].hs == NULL) == (b.clips[c].hs == NULL));
			assert_int_equal(a.clips[c].npath, b.clips[c].npath);
			for (size_t s = 0; s < a.clips[c].npath; s++) {
				assert_true(a.clips[c].tau[s] == b.clips[c].tau[s]);
				assert_true(a.clips[c].path_f[s] == b.clips[c].path_f[s]);
				for (size_t q = 0; q < a.p; q++)
					assert_true(a.clips[c].path_h[s * a.p + q] ==
						    b.clips[c].path_h[s * a.p + q]);
			}
			for (size_t q = 0; q < a.p; q++) {
				assert_true(a.clips[c].h[q] == b.clips[c].h[q] &&
					    a.clips[c].t[q] == b.clips[c].t[q]);
				if (a.clips[c].hs != NULL)
					assert_true(a.clips[c].hs[q] == b.clips[c].hs[q]);
			}
		}
		json_object_put(wrap);
		dp_plan_public_free(&a);
		dp_plan_public_free(&b);
	}
}

/* A constants file with one candidate carrying the path members `path`. */
#define PATH_PUB(path) "{\"model\":\"linear\",\"p\":2,\"lambda\":0,\"f_star\":1,\"f_zero\":1," \
	"\"alone\":0,\"h_safe\":1,\"measured\":true,\"clips\":[{\"clip\":1,\"f_clip\":1," \
	"\"h\":[1,1],\"t\":[1,1],\"hf\":[1,1]," path "}]}"
/* A constants file with the sample's names `names`. */
#define NAMED_PUB(names) "{\"model\":\"linear\",\"p\":2,\"lambda\":0,\"f_star\":1," \
	"\"f_zero\":1,\"alone\":0,\"h_safe\":1,\"measured\":true," names ",\"clips\":[{" \
	"\"clip\":1,\"f_clip\":1,\"h\":[1,1],\"t\":[1,1],\"hf\":[1,1]}]}"

static void test_public_parse_errors(void **state)
{
	static const struct {
		const char *json, *want;
	} cases[] = {
		{ "{\"model\":\"x\"}", "unknown model" },
		{ "{\"model\":\"linear\",\"p\":2,\"lambda\":0,\"f_star\":1,\"f_zero\":1,\"alone\":0,"
		  "\"h_safe\":1,\"measured\":true,\"clips\":[]}", "1..64 candidates" },
		{ "{\"model\":\"linear\",\"p\":2,\"lambda\":0,\"f_star\":1,\"f_zero\":1,\"alone\":0,"
		  "\"h_safe\":1,\"measured\":true,\"clips\":[{\"clip\":1,\"f_clip\":1,\"h\":[1],"
		  "\"t\":[1,1],\"hf\":[1,1]}]}", "'h' must have 2 numbers" },
		{ "{\"model\":\"linear\",\"p\":2,\"lambda\":0,\"f_star\":1,\"f_zero\":1,\"alone\":0,"
		  "\"h_safe\":1,\"measured\":true,\"clips\":[{\"clip\":1,\"f_clip\":1,\"h\":[1,1],"
		  "\"t\":[1,1],\"hf\":[1,1],\"hs\":[0,1]}]}", "'hs' must be > 0" },
		{ PATH_PUB("\"tau\":[0.1,1],\"path_f\":[1,1],\"path_h\":[[1,1],[1,1]]"),
		  "'tau' must start at 0" },
		{ PATH_PUB("\"tau\":[0,1,1],\"path_f\":[1,1,1],\"path_h\":[[1,1],[1,1],[1,1]]"),
		  "'tau' must increase" },
		{ PATH_PUB("\"tau\":[0,1],\"path_f\":[1],\"path_h\":[[1,1],[1,1]]"),
		  "'path_f' must have 2 numbers" },
		{ PATH_PUB("\"tau\":[0,1],\"path_f\":[1,1],\"path_h\":[[1,1]]"),
		  "'path_h' must have 2 rows" },
		{ PATH_PUB("\"tau\":[0,1],\"path_f\":[1,1],\"path_h\":[[1,1],[1]]"),
		  "arrays of 2 numbers" },
		{ PATH_PUB("\"tau\":[0,1],\"path_f\":[1,1],\"path_h\":[[1,1],[1,-1]]"),
		  "'path_h' must be >= 0" },
		{ PATH_PUB("\"tau\":[0,1],\"path_f\":[1,1]"), "missing key 'path_h'" },
		{ PATH_PUB("\"tau\":[0],\"path_f\":[1],\"path_h\":[[1,1]]"), "2..64 times" },
		{ "{\"model\":\"linear\",\"p\":1,\"lambda\":0,\"f_star\":0,\"f_zero\":1,\"alone\":0,"
		  "\"h_safe\":1,\"measured\":true,\"clips\":[]}", "f_star and h_safe must be > 0" },
		{ "{\"model\":\"linear\",\"p\":1,\"lambda\":0,\"f_star\":1,\"f_zero\":1,\"alone\":0,"
		  "\"h_safe\":1,\"measured\":true,\"typo\":1,\"clips\":[]}", "unknown key 'typo'" },
		/* The names go together, p of them. */
		{ NAMED_PUB("\"target\":\"y\""), "missing key 'features'" },
		{ NAMED_PUB("\"target\":\"y\",\"features\":[\"a\"]"), "must hold p = 2 names" },
		{ NAMED_PUB("\"target\":\"y\",\"features\":[\"a\",1]"), "must hold names" },
		{ NAMED_PUB("\"features\":[\"a\",\"b\"]"), "missing key 'target'" },
		/* another dpasync file (prep's schema.json): named, not its key */
		{ "{\"format\":\"dpasync-schema\",\"version\":1,\"columns\":[]}",
		  "a 'dpasync-schema' file, not planner constants: give the output of dpasync "
		  "forecast" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *o = json_tokener_parse(cases[i].json);
		dp_plan_public pub;
		int rc;

		assert_non_null(o);
		rc = dp_plan_public_parse("pub.json", o, &pub);
		assert_int_equal(rc, DP_EFORMAT);
		if (strstr(dp_error_detail(rc), cases[i].want) == NULL) {
			fprintf(stderr, "case %zu: '%s' lacks '%s'\n", i, dp_error_detail(rc),
				cases[i].want);
			fail();
		}
		json_object_put(o);
	}
}


/* The secant curvatures drive the optimisation part and only it: with hs
 * set, the optimisation part is that of a problem whose curvature is hs
 * (excess still measured with hf), the noise part that of h. */
static void test_secant_parts(void **state)
{
	enum { P = 3 };
	const double h[P] = { 0.5, 2.0, 4.0 }, hs[P] = { 0.2, 2.0, 1.0 }, t[P] = { 1.0, -2.0, 0.5 };
	const double lambda = 0.02;
	dp_plan_public pub, ref;
	uint64_t n[3] = { 500, 700, 900 }, K[3] = { 40, 40, 40 };
	double eps[3] = { 1, 1, 2 };

	quad_public(&pub, P, h, t, lambda, 1.0);
	quad_public(&ref, P, hs, t, lambda, 1.0);
	memcpy(ref.clips[0].hf, h, sizeof(h));
	pub.clips[0].hs = malloc(sizeof(hs));
	memcpy(pub.clips[0].hs, hs, sizeof(hs));
	for (int m = 0; m < 3; m++) {
		dp_plan_request req = { .mode = (enum dp_plan_mode)m, .N = 3, .n_rows = n,
					.epsilon = eps };
		double o1, n1, o2, n2, o3, n3, step = m == DP_PLAN_ASYNC ? 0.4 : 0.2;
		size_t T = m == DP_PLAN_ASYNC ? 120 : 41;

		dp_plan_predict(&req, &pub, T, step, 0, K, &o1, &n1, NULL);
		dp_plan_predict(&req, &ref, T, step, 0, K, &o2, &n2, NULL);
		free(pub.clips[0].hs);
		pub.clips[0].hs = NULL;
		dp_plan_predict(&req, &pub, T, step, 0, K, &o3, &n3, NULL);
		pub.clips[0].hs = malloc(sizeof(hs));
		memcpy(pub.clips[0].hs, hs, sizeof(hs));
		assert_true(fabs(o1 - o2) <= 1e-12 * o2);
		assert_true(fabs(n1 - n3) <= 1e-12 * n3);
		/* A weaker pull leaves more of the way to go. */
		assert_true(o1 > o3);
	}
	dp_plan_public_free(&pub);
	dp_plan_public_free(&ref);
}

/* The way from 0: on a quadratic problem the path model is the quadratic
 * model (every mode, with and without noise, runs that end on and beyond
 * the path); an excess along the way twice the quadratic one doubles the
 * optimisation part of a run with no spread of its own (one owner), until
 * the way dips below f(theta*_Xi); curvatures three times hf triple the
 * noise part (lambda 0). */
static void test_path_model(void **state)
{
	enum { P = 3 };
	const double h[P] = { 0.5, 2.0, 4.0 }, t[P] = { 1.0, -2.0, 0.5 };
	const size_t Ts[3] = { 5, 60, 3000 };
	dp_plan_public quad, path;
	uint64_t n[3] = { 500, 700, 900 }, K[3] = { 40, 40, 40 };
	double eps[3] = { 1, 1, 2 };

	quad_public(&quad, P, h, t, 0.02, 0.7);
	quad_public(&path, P, h, t, 0.02, 0.7);
	quad_path(&path, 1.0, 1.0);
	for (int m = 0; m < 3; m++) {
		dp_plan_request req = { .mode = (enum dp_plan_mode)m, .N = 3, .n_rows = n,
					.epsilon = eps };
		double step = m == DP_PLAN_ASYNC ? 0.4 : 0.2;

		for (size_t i = 0; i < 3; i++) {
			double o1, n1, o2, n2;

			dp_plan_predict(&req, &quad, Ts[i], step, 0, K, &o1, &n1, NULL);
			dp_plan_predict(&req, &path, Ts[i], step, 0, K, &o2, &n2, NULL);
			if (!(fabs(o1 - o2) <= 1e-9 * o1 + 1e-300 && fabs(n1 - n2) <= 1e-9 * n1)) {
				fprintf(stderr, "mode %d T %zu: quadratic %.12g + %.12g, path %.12g + "
					"%.12g\n", m, Ts[i], o1, n1, o2, n2);
				fail();
			}
		}
	}
	dp_plan_public_free(&quad);
	dp_plan_public_free(&path);

	/* A stiffer way from 0, and more curvature along it. */
	quad_public(&quad, P, h, t, 0.0, 0.7);
	quad_public(&path, P, h, t, 0.0, 0.7);
	quad_path(&path, 2.0, 3.0);
	{
		uint64_t n1[1] = { 1000 }, K1[1] = { 30 };
		double e1[1] = { 1 }, o1, nz1, o2, nz2;
		dp_plan_request req = { .mode = DP_PLAN_ASYNC, .N = 1, .n_rows = n1,
					.epsilon = e1 };

		dp_plan_predict(&req, &quad, 30, 0.2, 0, K1, &o1, &nz1, NULL);
		dp_plan_predict(&req, &path, 30, 0.2, 0, K1, &o2, &nz2, NULL);
		assert_true(o1 > 0 && nz1 > 0);
		assert_true(fabs(o2 - 2.0 * o1) <= 1e-9 * o1);
		assert_true(fabs(nz2 - 3.0 * nz1) <= 1e-9 * nz1);

		/* A way that dips below f(theta*_Xi) from its 7th point on: a run
		 * that ends there (or beyond) gets the quadratic model, one that
		 * ends before the dip still the doubled excess. */
		for (size_t s = 6; s < path.clips[0].npath; s++)
			path.clips[0].path_f[s] = path.clips[0].f_clip - 1e-3;
		dp_plan_predict(&req, &quad, 70, 0.2, 0, K1, &o1, NULL, NULL);
		dp_plan_predict(&req, &path, 70, 0.2, 0, K1, &o2, NULL, NULL);
		assert_true(o1 > 1e-6 && fabs(o2 - o1) <= 1e-9 * o1);
		dp_plan_predict(&req, &quad, 3, 0.2, 0, K1, &o1, NULL, NULL);
		dp_plan_predict(&req, &path, 3, 0.2, 0, K1, &o2, NULL, NULL);
		assert_true(fabs(o2 - 2.0 * o1) <= 1e-9 * o1);
	}
	dp_plan_public_free(&quad);
	dp_plan_public_free(&path);
}

/* A T the planner chooses never outruns the caps the user fixed. */
static void test_caps_limit_T(void **state)
{
	dp_plan_public pub;
	uint64_t n[3] = { 100000, 100000, 100000 }, caps[3] = { 30, 40, 50 };
	uint64_t some[3] = { 30, 0, 0 };
	double eps[3] = { 10, 10, 10 };
	dp_plan pl;

	assert_int_equal(dp_plan_public_shape(DP_MODEL_LINEAR, 4, 0.01, &pub), 0);
	dp_plan_request req = { .mode = DP_PLAN_SYNC1, .N = 3, .n_rows = n, .epsilon = eps,
				.answers_cap = caps };
	assert_int_equal(dp_plan_make(&req, &pub, &pl), 0);
	assert_true(pl.T >= 2 && pl.T - 1 <= 30);
	assert_int_equal(pl.answers_cap[0], 30);
	assert_int_equal(pl.answers_cap[2], 50);
	dp_plan_free(&pl);
	req.mode = DP_PLAN_ASYNC;
	assert_int_equal(dp_plan_make(&req, &pub, &pl), 0);
	assert_true(pl.T <= 120);
	dp_plan_free(&pl);
	/* Big owners with a large budget want long jobs: with one cap fixed
	 * and the others planned, T is not held to that cap. */
	req.answers_cap = some;
	assert_int_equal(dp_plan_make(&req, &pub, &pl), 0);
	assert_true(pl.T > 120);
	assert_int_equal(pl.answers_cap[0], 30);
	dp_plan_free(&pl);
	dp_plan_public_free(&pub);
}

/* The mode names table matches parse and name. */
static void test_mode_names(void **state)
{
	enum dp_plan_mode m;

	for (int i = 0; i < 3; i++) {
		assert_int_equal(dp_plan_mode_parse(dp_plan_mode_names[i], &m), 0);
		assert_int_equal(m, i);
		assert_string_equal(dp_plan_mode_name(m), dp_plan_mode_names[i]);
	}
	assert_null(dp_plan_mode_names[3]);
	assert_int_equal(dp_plan_mode_parse("sync3", &m), DP_EINVAL);
}

/* An owner's own model is judged on the union, like the joint one: it
 * loses A/n_i on the others' rows and gains as much on its own, so
 * (1 - 2 n_i/n) A/(n_i f*); one owner alone holds the optimum.  With a
 * public sample of m rows, a model fitted on it alone predicts A/(m f*),
 * and a private model that does not beat it is flagged. */
static void test_alone_and_public_baseline(void **state)
{
	const double h[2] = { 1, 2 }, t[2] = { 0.5, -0.5 };
	dp_plan_public pub;
	uint64_t n[4] = { 1000, 1000, 2000, 4000 }, one[1] = { 500 };
	double eps[4] = { 1, 1, 1, 1 };
	char buf[1024];
	dp_plan pl;

	quad_public(&pub, 2, h, t, 0.01, 0.5);
	pub.alone = 3.0;
	pub.rows = 0;
	dp_plan_request req = { .mode = DP_PLAN_ASYNC, .N = 4, .n_rows = n, .epsilon = eps };
	assert_int_equal(dp_plan_make(&req, &pub, &pl), 0);
	for (size_t i = 0; i < 4; i++) {
		double want = (1.0 - 2.0 * (double)n[i] / 8000.0) * 3.0 / ((double)n[i] * 0.5);

		assert_true(fabs(pl.alone[i] - want) <= 1e-15 * want);
		assert_true(pl.collaborate[i] == (pl.psi < pl.alone[i]));
	}
	assert_true(isnan(pl.public_only));
	assert_false(pl.public_better);
	dp_plan_free(&pl);

	req.N = 1;
	req.n_rows = one;
	assert_int_equal(dp_plan_make(&req, &pub, &pl), 0);
	assert_true(pl.alone[0] == 0.0);        /* its model is the optimum */
	assert_false(pl.collaborate[0]);
	dp_plan_free(&pl);

	/* A public sample as large as the data: fitting on it beats any
	 * private model, and the planner says so. */
	pub.rows = 1000000;
	req.N = 4;
	req.n_rows = n;
	assert_int_equal(dp_plan_make(&req, &pub, &pl), 0);
	assert_true(fabs(pl.public_only - 3.0 / (1e6 * 0.5)) <= 1e-15);
	assert_true(pl.public_better == (pl.public_only < pl.psi));
	assert_true(pl.public_better);
	dp_plan_warnings(&pl, &pub, buf, sizeof(buf));
	assert_non_null(strstr(buf, "public sample alone (1000000 rows) is predicted better"));
	{
		struct json_object *o = dp_plan_json(&pl), *v;

		assert_true(json_object_object_get_ex(o, "public_only", &v));
		assert_true(json_object_get_double(v) == pl.public_only);
		json_object_put(o);
	}
	dp_plan_free(&pl);
	dp_plan_public_free(&pub);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prediction_matches_update_rule),
		cmocka_unit_test(test_gaussian_noise_term),
		cmocka_unit_test(test_sync1_deterministic),
		cmocka_unit_test(test_sync2_deterministic),
		cmocka_unit_test(test_choices),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_warnings),
		cmocka_unit_test(test_alone_and_public_baseline),
		cmocka_unit_test(test_public_json_round_trip),
		cmocka_unit_test(test_public_parse_errors),
		cmocka_unit_test(test_secant_parts),
		cmocka_unit_test(test_path_model),
		cmocka_unit_test(test_caps_limit_T),
		cmocka_unit_test(test_mode_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
