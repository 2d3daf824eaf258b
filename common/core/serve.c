/* SPDX-License-Identifier: Apache-2.0 */
/* Served personal models (serve.h, docs/p2p.md §7). */
#include "common/core/serve.h"

#include <lapacke.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"

const char *const dp_serve_release_names[] = { "models", "grad0", NULL };
const char *const dp_serve_prior_names[] = { "graph", "all", NULL };
const char *const dp_serve_scale_names[] = { "fit", "none", NULL };

const double dp_serve_taus[DP_SERVE_TAUS] = { 0, 1, 3, 10, 30, 100, 300, 1000 };

/* Newton stops when |grad|_inf is below this (scaled by max(1, |f|)), or
 * when the decrement is below the resolution of f (then one full step). */
#define GTOL 1e-13
#define FRES 1e-15
#define MAXIT 200

int dp_serve_release(dp_model m, const dp_dataset *ds, double clip, dp_mech mech, double share,
		     dp_bitsource *src, double *g)
{
	double *zero;
	int rc;

	DP_REQUIRE(ds != NULL && g != NULL);
	zero = calloc(ds->p ? ds->p : 1, sizeof(double));
	if (zero == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	rc = dp_query_answer_mech(m, ds, zero, clip, mech, share, src, g, NULL);
	free(zero);
	return rc;
}

void dp_serve_pool(size_t p, size_t k, const double *const *v, const double *w, double *out)
{
	double sw = 0;

	DP_REQUIRE(out != NULL && (k == 0 || (v != NULL && w != NULL)));
	memset(out, 0, p * sizeof(double));
	for (size_t j = 0; j < k; j++) {
		DP_REQUIRE(w[j] >= 0);
		sw += w[j];
		for (size_t q = 0; q < p; q++)
			out[q] += w[j] * v[j][q];
	}
	if (sw > 0)
		for (size_t q = 0; q < p; q++)
			out[q] /= sw;
}

static bool used(size_t r, size_t folds, size_t skip)
{
	return folds == 0 || skip >= folds || r % folds != skip;
}

/* A[p*p] += sum over the used rows of s_r x_r x_r^T (s NULL: 1), the upper
 * triangle and the lower mirrored. */
static void gram(const dp_dataset *ds, size_t folds, size_t skip, const double *s, double *A)
{
	size_t p = ds->p;

	for (size_t r = 0; r < ds->n; r++) {
		const double *x = ds->x + r * p;
		double sr = s ? s[r] : 1.0;

		if (!used(r, folds, skip))
			continue;
		for (size_t a = 0; a < p; a++)
			for (size_t b = a; b < p; b++)
				A[a * p + b] += sr * x[a] * x[b];
	}
	for (size_t a = 0; a < p; a++)
		for (size_t b = 0; b < a; b++)
			A[a * p + b] = A[b * p + a];
}

/* Solve A x = b in place (b becomes x); A (destroyed) positive definite. */
static int solve_pd(size_t p, double *A, double *b)
{
	lapack_int info = LAPACKE_dposv(LAPACK_ROW_MAJOR, 'U', (lapack_int)p, 1, A, (lapack_int)p,
					b, 1);

	if (info != 0)
		return dp_error_set(DP_ENUMERIC, "serve: the system is not positive definite "
				    "(LAPACK info %d)", (int)info);
	return 0;
}

int dp_serve_prior_newton(dp_model m, const dp_dataset *ds, double lambda, const double *gbar,
			  double *prior)
{
	size_t p;
	double *A, *b, c2;
	int rc;

	DP_REQUIRE(ds != NULL && gbar != NULL && prior != NULL && ds->n > 0);
	if (m != DP_MODEL_LINEAR && m != DP_MODEL_LOGISTIC)
		return dp_error_set(DP_EINVAL, "serve: the model must be linear or logistic");
	if (!(lambda >= 0))
		return dp_error_set(DP_EINVAL, "serve: lambda must be >= 0");
	p = ds->p;
	A = calloc(p * p + p, sizeof(double));
	if (A == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	b = A + p * p;
	/* l'' at score 0: 2 for (y - t)^2, 1/4 for log(1 + e^{-yt}). */
	c2 = m == DP_MODEL_LINEAR ? 2.0 : 0.25;
	gram(ds, 0, 0, NULL, A);
	for (size_t q = 0; q < p * p; q++)
		A[q] *= c2 / (double)ds->n;
	for (size_t q = 0; q < p; q++) {
		A[q * p + q] += 2.0 * lambda;
		b[q] = -gbar[q];
	}
	rc = solve_pd(p, A, b);
	if (rc == 0)
		memcpy(prior, b, p * sizeof(double));
	free(A);
	return rc;
}

static size_t count_used(size_t n, size_t folds, size_t skip)
{
	size_t k = 0;

	for (size_t r = 0; r < n; r++)
		k += used(r, folds, skip);
	return k;
}

/* The tau term pulls the coordinates q < np (p, or p - 1 when the bias
 * is the agent's own). */

/* Linear: (X^T X + n lambda I + tau I) theta = X^T y + tau prior, the
 * normal equations of the fit times n/2. */
static int fit_linear(const dp_dataset *ds, size_t folds, size_t skip, size_t n, double lambda,
		      double tau, const double *prior, size_t np, double *A, double *b)
{
	size_t p = ds->p;

	gram(ds, folds, skip, NULL, A);
	for (size_t q = 0; q < p; q++) {
		double t = q < np ? tau : 0;

		A[q * p + q] += (double)n * lambda + t;
		b[q] = t * prior[q];
	}
	for (size_t r = 0; r < ds->n; r++)
		if (used(r, folds, skip))
			for (size_t q = 0; q < p; q++)
				b[q] += ds->y[r] * ds->x[r * p + q];
	return solve_pd(p, A, b);
}

/* The logistic objective (times n) at th, with the gradient into g and the
 * Hessian weights into s when they are not NULL. */
static double logistic_eval(const dp_dataset *ds, size_t folds, size_t skip, double n,
			    double lambda, double tau, const double *prior, size_t np,
			    const double *th, double *g, double *s)
{
	size_t p = ds->p;
	double f = 0;

	if (g)
		memset(g, 0, p * sizeof(double));
	for (size_t r = 0; r < ds->n; r++) {
		const double *x = ds->x + r * p;
		double t = 0;

		if (!used(r, folds, skip))
			continue;
		for (size_t q = 0; q < p; q++)
			t += th[q] * x[q];
		f += dp_model_loss(DP_MODEL_LOGISTIC, t, ds->y[r]);
		if (g) {
			double c = dp_model_coef(DP_MODEL_LOGISTIC, t, ds->y[r]);

			for (size_t q = 0; q < p; q++)
				g[q] += c * x[q];
		}
		if (s) {
			double e = exp(-fabs(t));

			s[r] = e / ((1 + e) * (1 + e));   /* sigma(t) (1 - sigma(t)) */
		}
	}
	for (size_t q = 0; q < p; q++) {
		double d = q < np ? th[q] - prior[q] : 0;

		f += n * lambda * th[q] * th[q] + tau * d * d;
		if (g)
			g[q] += 2 * n * lambda * th[q] + 2 * tau * d;
	}
	return f;
}

static double norm_inf(const double *v, size_t p)
{
	double m = 0;

	for (size_t q = 0; q < p; q++)
		m = fmax(m, fabs(v[q]));
	return m;
}

/* Newton with Armijo backtracking from 0 on the objective times n; A, d
 * and the row weights s are scratch (p*p, p, ds->n). */
static int fit_logistic(const dp_dataset *ds, size_t folds, size_t skip, size_t n,
			double lambda, double tau, const double *prior, size_t np, double *A,
			double *th, double *s)
{
	size_t p = ds->p;
	double *g = th + p, *d = g + p, *tn = d + p, f, dn = (double)n;

	memset(th, 0, p * sizeof(double));
	f = logistic_eval(ds, folds, skip, dn, lambda, tau, prior, np, th, g, s);
	for (int it = 0; it < MAXIT; it++) {
		double gd = 0, alpha = 1, fn = f;
		int rc;

		if (norm_inf(g, p) <= GTOL * fmax(1.0, fabs(f)))
			return 0;
		memset(A, 0, p * p * sizeof(double));
		gram(ds, folds, skip, s, A);
		for (size_t q = 0; q < p; q++) {
			A[q * p + q] += 2 * dn * lambda + (q < np ? 2 * tau : 0);
			d[q] = -g[q];
		}
		rc = solve_pd(p, A, d);
		if (rc != 0)
			return rc;
		for (size_t q = 0; q < p; q++)
			gd += g[q] * d[q];
		if (-gd / 2 <= FRES * fmax(1.0, fabs(f))) {
			/* the quadratic model is exact to rounding: one full step */
			for (size_t q = 0; q < p; q++)
				th[q] += d[q];
			return 0;
		}
		for (int ls = 0; ls < 60; ls++) {
			for (size_t q = 0; q < p; q++)
				tn[q] = th[q] + alpha * d[q];
			fn = logistic_eval(ds, folds, skip, dn, lambda, tau, prior, np, tn, NULL, NULL);
			if (fn <= f + 1e-4 * alpha * gd)
				break;
			alpha *= 0.5;
		}
		if (!(fn <= f))
			return 0;   /* no decrease at all: at the resolution of f */
		memcpy(th, tn, p * sizeof(double));
		f = logistic_eval(ds, folds, skip, dn, lambda, tau, prior, np, th, g, s);
	}
	return dp_error_set(DP_ENUMERIC, "serve: Newton did not converge in %d iterations", MAXIT);
}

int dp_serve_fit(dp_model m, const dp_dataset *ds, size_t folds, size_t skip, double lambda,
		 double tau, const double *prior, bool bias_free, double *theta)
{
	size_t p, n;
	double *A, *work, *s;
	int rc;

	DP_REQUIRE(ds != NULL && prior != NULL && theta != NULL);
	if (m != DP_MODEL_LINEAR && m != DP_MODEL_LOGISTIC)
		return dp_error_set(DP_EINVAL, "serve: the model must be linear or logistic");
	if (!(lambda >= 0) || !(tau >= 0) || !isfinite(lambda) || !isfinite(tau))
		return dp_error_set(DP_EINVAL, "serve: lambda and tau must be finite and >= 0");
	p = ds->p;
	n = count_used(ds->n, folds, skip);
	if (n == 0)
		return dp_error_set(DP_EINVAL, "serve: no row to fit on");
	A = calloc(p * p + 4 * p + ds->n, sizeof(double));
	if (A == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	work = A + p * p;
	s = work + 4 * p;
	if (m == DP_MODEL_LINEAR)
		rc = fit_linear(ds, folds, skip, n, lambda, tau, prior, p - (bias_free && p), A,
				work);
	else
		rc = fit_logistic(ds, folds, skip, n, lambda, tau, prior, p - (bias_free && p), A,
				  work, s);
	if (rc == 0)
		memcpy(theta, work, p * sizeof(double));
	free(A);
	return rc;
}

int dp_serve_scale(dp_model m, const dp_dataset *ds, size_t folds, size_t skip, double lambda,
		   const double *prior, bool bias_free, double *scale)
{
	size_t p, np, n, k = 0, cols;
	double P = 0, *x, *y, zero[2] = { 0, 0 }, coef[2];
	dp_dataset line = { 0 };
	int rc;

	DP_REQUIRE(ds != NULL && prior != NULL && scale != NULL);
	p = ds->p;
	np = p - (bias_free && p);
	cols = 1 + (np < p);
	n = count_used(ds->n, folds, skip);
	for (size_t q = 0; q < np; q++)
		P += prior[q] * prior[q];
	if (!(P > 0) || n == 0) {
		*scale = 0;
		return 0;
	}
	/* The line's rows: z_r = prior^T x_r / ||prior||, so that lambda s'^2
	 * on s' = s ||prior|| is the fit's lambda ||s prior||^2; the agent's
	 * intercept beside it when it is free. */
	x = calloc(2 * n + n, sizeof(double));
	if (x == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	y = x + 2 * n;
	for (size_t r = 0; r < ds->n; r++) {
		double z = 0;

		if (!used(r, folds, skip))
			continue;
		for (size_t q = 0; q < np; q++)
			z += prior[q] * ds->x[r * p + q];
		x[k * cols] = z / sqrt(P);
		if (cols == 2)
			x[k * cols + 1] = ds->x[r * p + p - 1];
		y[k++] = ds->y[r];
	}
	rc = dp_dataset_from_arrays(&line, n, cols, x, y, NULL);
	if (rc == 0)
		rc = dp_serve_fit(m, &line, 0, 0, lambda, 0, zero, false, coef);
	if (rc == 0)
		*scale = coef[0] > 0 ? coef[0] / sqrt(P) : 0;
	dp_dataset_free(&line);
	free(x);
	return rc;
}

/* The loss summed over the rows of fold `k` at theta. */
static double held_out(dp_model m, const dp_dataset *ds, size_t folds, size_t k,
		       const double *theta)
{
	double f = 0;

	for (size_t r = k; r < ds->n; r += folds) {
		double t = 0;

		for (size_t q = 0; q < ds->p; q++)
			t += theta[q] * ds->x[r * ds->p + q];
		f += dp_model_loss(m, t, ds->y[r]);
	}
	return f;
}

/* The prior the fit over the rows of (folds, skip) uses, into pr[p]. */
static int fold_prior(dp_model m, const dp_dataset *ds, size_t folds, size_t skip,
		      double lambda, const double *prior, bool scale, bool bias_free, double *pr)
{
	double s = 1;
	int rc = scale ? dp_serve_scale(m, ds, folds, skip, lambda, prior, bias_free, &s) : 0;

	for (size_t q = 0; q < ds->p && rc == 0; q++)
		pr[q] = s * prior[q];
	return rc;
}

int dp_serve_refit(dp_model m, const dp_dataset *ds, size_t folds, double lambda,
		   const double *prior, bool scale, bool bias_free, const double *taus,
		   size_t ntau, double *theta, size_t *chosen, double *val)
{
	size_t K, best = 0;
	double *score, *th, *pr;
	int rc = 0;

	DP_REQUIRE(ds != NULL && taus != NULL && ntau > 0 && theta != NULL);
	K = folds < ds->n ? folds : ds->n;
	score = calloc(ntau + 2 * ds->p, sizeof(double));
	if (score == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	th = score + ntau;
	pr = th + ds->p;
	for (size_t k = 0; k < K && K >= 2 && ntau > 1 && rc == 0; k++) {
		rc = fold_prior(m, ds, K, k, lambda, prior, scale, bias_free, pr);
		for (size_t t = 0; t < ntau && rc == 0; t++) {
			rc = dp_serve_fit(m, ds, K, k, lambda, taus[t], pr, bias_free, th);
			if (rc == 0)
				score[t] += held_out(m, ds, K, k, th);
		}
	}
	for (size_t t = 1; t < ntau && K >= 2; t++)
		if (score[t] < score[best])
			best = t;
	if (rc == 0)
		rc = fold_prior(m, ds, 0, 0, lambda, prior, scale, bias_free, pr);
	if (rc == 0)
		rc = dp_serve_fit(m, ds, 0, 0, lambda, taus[best], pr, bias_free, th);
	if (rc == 0) {
		memcpy(theta, th, ds->p * sizeof(double));
		if (chosen)
			*chosen = best;
		if (val)
			memcpy(val, score, ntau * sizeof(double));
	}
	free(score);
	return rc;
}

int dp_serve_agent(dp_model m, const dp_dataset *ds, double lambda, const dp_serve_spec *s,
		   size_t k, const double *const *v, const double *w, double *served,
		   double *prior, size_t *chosen)
{
	double *pool, *pi, rows = 0, lam = lambda;
	size_t t = 0;
	int rc = 0;

	DP_REQUIRE(ds != NULL && s != NULL && served != NULL);
	pool = calloc(2 * ds->p + 1, sizeof(double));
	if (pool == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	pi = pool + ds->p;
	dp_serve_pool(ds->p, k, v, w, pool);
	for (size_t j = 0; j < k; j++)
		rows += w[j];
	/* Public rows stand for the pooled rows (sum of w_j m_j), whose ridge
	 * is the agent's lambda m over them; its own rows keep its lambda. */
	if (s->curvature && rows > 0)
		lam = lambda * (double)ds->n / rows;
	if (s->gradients)
		rc = dp_serve_prior_newton(m, s->curvature ? s->curvature : ds, lam, pool, pi);
	else
		memcpy(pi, pool, ds->p * sizeof(double));
	if (rc == 0)
		rc = dp_serve_refit(m, ds, s->folds, lambda, pi, s->scale, s->bias_free, s->taus,
				    s->ntau, served, &t, NULL);
	if (rc == 0 && prior)
		memcpy(prior, pi, ds->p * sizeof(double));
	if (rc == 0 && chosen)
		*chosen = t;
	free(pool);
	return rc;
}
