/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for tools/lib/public.c: the planner's constants measured on a
 * sample, against values computed here independently (3x3 algebra by
 * hand) on a small synthetic ridge regression. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/dataset.h"
#include "common/core/error.h"
#include "tools/lib/public.h"
#include "tools/lib/simrng.h"

#define NR 400
#define P 3

static double X[NR * P], Y[NR];

static double gauss(dp_simrng *r)
{
	double u = ((double)(dp_simrng_next(r) >> 11) + 0.5) * 0x1.0p-53;
	double v = ((double)(dp_simrng_next(r) >> 11) + 0.5) * 0x1.0p-53;

	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

static void make_data(dp_dataset *ds, int classify)
{
	dp_simrng r;

	dp_simrng_seed(&r, 7);
	for (size_t j = 0; j < NR; j++) {
		double a = gauss(&r), b = 0.5 * a + gauss(&r), z = 0.8 * a - 0.3 * b + 0.2;

		X[j * P] = a;
		X[j * P + 1] = b;
		X[j * P + 2] = 1.0;
		if (classify)
			Y[j] = z + 0.7 * gauss(&r) > 0 ? 1.0 : -1.0;
		else
			Y[j] = z + 0.5 * gauss(&r) * (1 + fabs(a));  /* heteroscedastic */
	}
	assert_int_equal(dp_dataset_from_arrays(ds, NR, P, X, Y, NULL), 0);
}

static double det3(const double m[9])
{
	return m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) +
	       m[2] * (m[3] * m[7] - m[4] * m[6]);
}

/* x = m^-1 b by Cramer's rule. */
static void solve3(const double m[9], const double b[3], double x[3])
{
	double d = det3(m);

	for (int c = 0; c < 3; c++) {
		double t[9];

		memcpy(t, m, sizeof(t));
		for (int r = 0; r < 3; r++)
			t[r * 3 + c] = b[r];
		x[c] = det3(t) / d;
	}
}

/* The clipped mean gradient of the ridge loss plus 2 lambda theta on the
 * rows above (L1 clip of every per-example gradient). */
static void clipped_grad(const double *th, double clip, double lambda, double *g)
{
	for (int a = 0; a < P; a++)
		g[a] = 2 * lambda * th[a];
	for (size_t j = 0; j < NR; j++) {
		double t = 0, c, l1 = 0, sc;

		for (int a = 0; a < P; a++) {
			t += X[j * P + a] * th[a];
			l1 += fabs(X[j * P + a]);
		}
		c = 2 * (t - Y[j]);
		sc = fabs(c) * l1 > clip ? clip / (fabs(c) * l1) : 1.0;
		for (int a = 0; a < P; a++)
			g[a] += c * sc * X[j * P + a] / NR;
	}
}

static double ridge_f(const double *th, double lambda)
{
	double f = 0;

	for (size_t j = 0; j < NR; j++) {
		double t = 0;

		for (int a = 0; a < P; a++)
			t += X[j * P + a] * th[a];
		f += (Y[j] - t) * (Y[j] - t) / NR;
	}
	for (int a = 0; a < P; a++)
		f += lambda * th[a] * th[a];
	return f;
}

/* The way from 0 of a candidate: tau from 0 and increasing, f at 0 is
 * f(0), the end is theta*_Xi's f, the curvature along it is the constant
 * one of a linear model (hf), and f along it is that of the gradient flow
 * of the clipped gradient integrated here independently (classical RK4
 * with small steps in the original coordinates). */
static void check_linear_path(const dp_plan_public *pub, const dp_plan_clip *k, double lambda)
{
	double th[P] = { 0 }, tau = 0;

	assert_true(k->npath >= 4 && k->tau[0] == 0.0);
	for (size_t s = 1; s < k->npath; s++)
		assert_true(k->tau[s] > k->tau[s - 1]);
	assert_true(fabs(k->path_f[0] - pub->f_zero) <= 1e-12 * pub->f_zero);
	assert_true(fabs(k->path_f[k->npath - 1] - k->f_clip) <= 1e-6 * pub->f_star);
	for (size_t s = 0; s < k->npath; s++)
		for (int q = 0; q < P; q++)
			assert_true(fabs(k->path_h[s * P + q] - k->hf[q]) <= 1e-9 * (1 + k->hf[q]));
	for (size_t s = 1; s < k->npath && s <= 8; s++) {
		double dt = k->tau[1] / 50;

		while (tau < k->tau[s] - 1e-15) {
			double g1[P], g2[P], g3[P], g4[P], tmp[P], d = fmin(dt, k->tau[s] - tau);

			clipped_grad(th, k->clip, lambda, g1);
			for (int a = 0; a < P; a++)
				tmp[a] = th[a] - 0.5 * d * g1[a];
			clipped_grad(tmp, k->clip, lambda, g2);
			for (int a = 0; a < P; a++)
				tmp[a] = th[a] - 0.5 * d * g2[a];
			clipped_grad(tmp, k->clip, lambda, g3);
			for (int a = 0; a < P; a++)
				tmp[a] = th[a] - d * g3[a];
			clipped_grad(tmp, k->clip, lambda, g4);
			for (int a = 0; a < P; a++)
				th[a] -= d / 6 * (g1[a] + 2 * g2[a] + 2 * g3[a] + g4[a]);
			tau += d;
		}
		if (!(fabs(ridge_f(th, lambda) - k->path_f[s]) <= 1e-5 * pub->f_star)) {
			fprintf(stderr, "clip %g tau %g: path f %.10g, flow here %.10g\n", k->clip,
				k->tau[s], k->path_f[s], ridge_f(th, lambda));
			fail();
		}
	}
}

static void test_linear_constants(void **state)
{
	const double lambda = 0.1;
	dp_dataset ds;
	dp_plan_public pub;
	double A[9] = { 0 }, c[3] = { 0 }, th[3], H[9], G[9] = { 0 }, f = 0, f0 = 0, tr = 0;
	double *norms = malloc(NR * sizeof(double));

	make_data(&ds, 0);
	assert_int_equal(dp_public_measure(DP_MODEL_LINEAR, &ds, lambda, 100.0, "synthetic", &pub), 0);
	assert_true(pub.measured);
	assert_int_equal(pub.p, P);

	/* Ridge optimum: (X^T X/n + lambda I) theta = X^T y / n. */
	for (size_t j = 0; j < NR; j++)
		for (int a = 0; a < 3; a++) {
			c[a] += X[j * P + a] * Y[j] / NR;
			for (int b = 0; b < 3; b++)
				A[a * 3 + b] += X[j * P + a] * X[j * P + b] / NR;
		}
	for (int a = 0; a < 9; a++)
		H[a] = 2 * A[a] + (a % 4 == 0 ? 2 * lambda : 0);
	memcpy(G, A, sizeof(G));
	for (int a = 0; a < 3; a++)
		G[a * 4] += lambda;
	solve3(G, c, th);
	memset(G, 0, sizeof(G));
	for (size_t j = 0; j < NR; j++) {
		double t = 0, g[3];

		for (int a = 0; a < 3; a++)
			t += X[j * P + a] * th[a];
		f += (Y[j] - t) * (Y[j] - t) / NR;
		f0 += Y[j] * Y[j] / NR;
		norms[j] = 2 * fabs(t - Y[j]) * (fabs(X[j * P]) + fabs(X[j * P + 1]) + 1.0);
		for (int a = 0; a < 3; a++)
			g[a] = 2 * (t - Y[j]) * X[j * P + a] + 2 * lambda * th[a];
		for (int a = 0; a < 3; a++)
			for (int b = 0; b < 3; b++)
				G[a * 3 + b] += g[a] * g[b] / NR;
	}
	f += lambda * (th[0] * th[0] + th[1] * th[1] + th[2] * th[2]);
	assert_true(fabs(pub.f_star - f) <= 1e-10 * f);
	assert_true(fabs(pub.f_zero - f0) <= 1e-12 * f0);
	/* Sandwich constant: tr(H^-1 G) / 2, column by column. */
	for (int col = 0; col < 3; col++) {
		double b[3] = { G[col], G[3 + col], G[6 + col] }, x[3];

		solve3(H, b, x);
		tr += x[col];
	}
	assert_true(fabs(pub.alone - tr / 2) <= 1e-9 * tr);

	/* The last candidate clips nothing: its fixed point is theta*, its
	 * curvature 2 X^T X / n (trace and determinant of the eigenvalues),
	 * and t is theta* rotated (same norm, same energy sum h t^2). */
	{
		const dp_plan_clip *k = &pub.clips[pub.nclip - 1];
		double sum = 0, prod = 1, n2 = 0, e = 0, ref = 0, H2[9];

		for (int a = 0; a < 9; a++)
			H2[a] = 2 * A[a];
		for (int q = 0; q < 3; q++) {
			sum += k->h[q];
			prod *= k->h[q];
			n2 += k->t[q] * k->t[q];
			e += k->h[q] * k->t[q] * k->t[q];
			assert_true(fabs(k->hf[q] - k->h[q]) <= 1e-10 * (1 + k->h[q]));
		}
		for (int a = 0; a < 3; a++)
			for (int b = 0; b < 3; b++)
				ref += th[a] * H2[a * 3 + b] * th[b];
		assert_true(fabs(k->f_clip - pub.f_star) <= 1e-10 * pub.f_star);
		assert_true(fabs(sum - (H2[0] + H2[4] + H2[8])) <= 1e-10 * sum);
		assert_true(fabs(prod - det3(H2)) <= 1e-9 * fabs(prod));
		assert_true(fabs(n2 - (th[0] * th[0] + th[1] * th[1] + th[2] * th[2])) <= 1e-9 * n2);
		assert_true(fabs(e - ref) <= 1e-9 * ref);
	}

	/* Candidates are quantiles of the per-example gradient norms at
	 * theta*; a smaller clip costs more (f_clip grows) and removes
	 * curvature (clipped rows contribute none). */
	{
		size_t idx = (size_t)floor(0.5 * (NR - 1) + 0.5);
		for (size_t i = 0; i < NR; i++)      /* insertion sort: NR is small */
			for (size_t j = i; j > 0 && norms[j] < norms[j - 1]; j--) {
				double t = norms[j];

				norms[j] = norms[j - 1];
				norms[j - 1] = t;
			}
		assert_int_equal(pub.nclip, DP_PUBLIC_NQ);
		assert_true(fabs(pub.clips[1].clip - norms[idx]) <= 1e-9 * norms[idx]);
		for (size_t k = 1; k < pub.nclip; k++) {
			double s0 = 0, s1 = 0;

			assert_true(pub.clips[k].clip > pub.clips[k - 1].clip);
			assert_true(pub.clips[k].f_clip <= pub.clips[k - 1].f_clip * (1 + 1e-12));
			for (int q = 0; q < 3; q++) {
				s0 += pub.clips[k - 1].h[q];
				s1 += pub.clips[k].h[q];
			}
			assert_true(s0 <= s1 * (1 + 1e-9));
		}
		assert_true(pub.clips[0].f_clip > pub.f_star);
	}
	/* Secant curvatures: G(0)_e = -(s_e + 2 lambda) t_e with G the
	 * clipped mean loss gradient, so sum_e (s_e + 2 lambda) t_e^2 =
	 * -G(0) . theta*_Xi, which for the candidate that clips nothing at
	 * the optimum is theta* (computed here from the rows).  hs is s when
	 * s <= h and sqrt(h s) above (docs/planner.md §2), so s is recovered
	 * from hs; the rows with large targets are clipped at 0, so the pull
	 * from 0 is weaker overall: sum hs t^2 < sum h t^2. */
	{
		const dp_plan_clip *k = &pub.clips[pub.nclip - 1];
		double g0[3] = { 0 }, lhs = 0, rhs = 0, e = 0, es = 0;
		size_t clipped = 0;

		for (size_t j = 0; j < NR; j++) {
			double cj = -2 * Y[j], l1 = fabs(X[j * P]) + fabs(X[j * P + 1]) + 1.0;
			double sc = fabs(cj) * l1 > k->clip ? k->clip / (fabs(cj) * l1) : 1.0;

			clipped += sc < 1.0;
			for (int a = 0; a < 3; a++)
				g0[a] += cj * sc * X[j * P + a] / NR;
		}
		assert_true(clipped > 0);
		for (int q = 0; q < 3; q++) {
			double sec = k->hs[q] <= k->h[q] ? k->hs[q] : k->hs[q] * k->hs[q] / k->h[q];

			assert_true(k->hs[q] >= 0.1 * k->h[q]);
			lhs += (sec + 2 * lambda) * k->t[q] * k->t[q];
			rhs -= g0[q] * th[q];
			e += k->h[q] * k->t[q] * k->t[q];
			es += k->hs[q] * k->t[q] * k->t[q];
		}
		assert_true(fabs(lhs - rhs) <= 1e-8 * fabs(rhs));
		assert_true(es < e);
	}
	/* The step bound is at least the largest curvature. */
	assert_true(pub.h_safe >= pub.clips[pub.nclip - 1].h[2] * (1 - 1e-12));
	/* The way from 0: for the candidate that clips most and for the one
	 * that clips nothing at the optimum (rows are clipped at 0). */
	check_linear_path(&pub, &pub.clips[0], lambda);
	check_linear_path(&pub, &pub.clips[pub.nclip - 1], lambda);
	free(norms);
	dp_plan_public_free(&pub);
	dp_dataset_free(&ds);
}

static void test_logistic_constants(void **state)
{
	dp_dataset ds;
	dp_plan_public pub;
	double m = 0;

	make_data(&ds, 1);
	assert_int_equal(dp_public_measure(DP_MODEL_LOGISTIC, &ds, 0.01, 100.0, "synthetic", &pub), 0);
	assert_true(fabs(pub.f_zero - log(2.0)) <= 1e-12);
	assert_true(pub.f_star < pub.f_zero && pub.f_star > 0);
	assert_true(pub.alone > 0 && isfinite(pub.alone));
	/* Logistic curvature is largest at 0: sigma'(0) = 1/4 of X^T X / n. */
	for (int q = 0; q < 3; q++)
		m = fmax(m, pub.clips[pub.nclip - 1].h[q]);
	assert_true(pub.h_safe >= m);
	/* ... so the pull from 0 is stronger than at the optimum: the secant
	 * is taken half-way (the geometric mean), never below h nor above
	 * sqrt(h h_safe). */
	for (size_t c = 0; c < pub.nclip; c++)
		for (int q = 0; q < 3; q++) {
			const dp_plan_clip *k = &pub.clips[c];

			assert_true(k->hs[q] > 0);
			if (k->hs[q] > k->h[q])
				assert_true(k->hs[q] <= sqrt(k->h[q] * pub.h_safe) * (1 + 1e-12));
		}
	{
		const dp_plan_clip *k = &pub.clips[pub.nclip - 1];
		double e = 0, es = 0;

		for (int q = 0; q < 3; q++) {
			e += k->h[q] * k->t[q] * k->t[q];
			es += k->hs[q] * k->t[q] * k->t[q];
		}
		assert_true(es > e);
	}
	/* The way from 0 starts at f(0) = log 2, where the curvature is
	 * sigma'(0) = 1/4 of X^T X / n (its trace: the sum along any
	 * orthonormal basis), and ends at theta*_Xi. */
	for (size_t c = 0; c < pub.nclip; c++) {
		const dp_plan_clip *k = &pub.clips[c];
		double tr = 0, sum = 0;

		for (size_t j = 0; j < NR * P; j++)
			tr += 0.25 * X[j] * X[j] / NR;
		for (int q = 0; q < 3; q++)
			sum += k->path_h[q];
		assert_true(k->npath >= 2 && fabs(k->path_f[0] - log(2.0)) <= 1e-12);
		assert_true(fabs(sum - tr) <= 1e-9 * tr);
		assert_true(fabs(k->path_f[k->npath - 1] - k->f_clip) <= 1e-6 * pub.f_star);
	}
	dp_plan_public_free(&pub);

	/* Labels must fit the model. */
	dp_dataset_free(&ds);
	Y[0] = 0.5;
	assert_int_equal(dp_dataset_from_arrays(&ds, NR, P, X, Y, NULL), 0);
	assert_int_equal(dp_public_measure(DP_MODEL_LOGISTIC, &ds, 0.01, 100.0, "bad", &pub),
			 DP_EFORMAT);
	dp_dataset_free(&ds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linear_constants),
		cmocka_unit_test(test_logistic_constants),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
