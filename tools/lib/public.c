/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/lib/public.h"
#include "common/core/error.h"
#include "tools/lib/optimum.h"
#include "tools/lib/ownerdata.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double dp_public_quantiles[DP_PUBLIC_NQ] = { 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0 };

/* The hinge has no curvature; the planner models it smoothed over this
 * width of margin (docs/planner.md). */
#define HINGE_WIDTH 0.5
#define BLOCK 256
#define FIXED_ITERS 100

/* The way from theta = 0 (docs/planner.md §2): stored points after tau =
 * 0, geometric from PATH_FIRST / (the largest curvature) over PATH_SPAN;
 * integration steps between two of them; the path ends early where the
 * quadratic excess left is below PATH_END f*. */
#define PATH_POINTS 16
#define PATH_FIRST 0.01
#define PATH_SPAN 1e6
#define PATH_SUB 12
#define PATH_END 1e-9

static double curvature(dp_model m, double t, double y)
{
	switch (m) {
	case DP_MODEL_LINEAR:
		return 2.0;
	case DP_MODEL_LOGISTIC: {
		double s = t >= 0 ? 1.0 / (1.0 + exp(-t)) : exp(t) / (1.0 + exp(t));

		return s * (1.0 - s);
	}
	case DP_MODEL_SVM: {
		double mg = y * t;

		return mg > 1.0 - HINGE_WIDTH && mg < 1.0 ? 1.0 / HINGE_WIDTH : 0.0;
	}
	}
	return 0.0;
}

/* Per-example gradient coefficient and L1 norm at theta. */
static void row_coef(dp_model m, const dp_dataset *ds, const double *theta, size_t j,
		     double *t, double *c, double *norm)
{
	*t = cblas_ddot((int)ds->p, ds->x + j * ds->p, 1, theta, 1);
	*c = dp_model_coef(m, *t, ds->y[j]);
	*norm = fabs(*c) * ds->row_l1[j];
}

/* H = (1/n) sum over the rows kept of curvature * x x^T (upper triangle
 * filled, then mirrored): all rows when clip is INFINITY, else the rows
 * whose gradient the clip leaves alone.  `hinge_bound` replaces the
 * curvature by its largest value (for the step bound). */
static int hessian(dp_model m, const dp_dataset *ds, const double *theta, double clip,
		   int bound, double *H)
{
	size_t p = ds->p, n = ds->n;
	double *buf = malloc(BLOCK * p * sizeof(double));

	if (buf == NULL)
		return DP_ENOMEM;
	memset(H, 0, p * p * sizeof(double));
	for (size_t j0 = 0; j0 < n; j0 += BLOCK) {
		size_t nb = n - j0 < BLOCK ? n - j0 : BLOCK, used = 0;

		for (size_t j = j0; j < j0 + nb; j++) {
			double t, c, norm, k;

			row_coef(m, ds, theta, j, &t, &c, &norm);
			if (norm > clip)
				continue;
			if (bound)
				k = m == DP_MODEL_LINEAR ? 2.0 : m == DP_MODEL_LOGISTIC ? 0.25
									 : 1.0 / HINGE_WIDTH;
			else
				k = curvature(m, t, ds->y[j]);
			if (k <= 0.0)
				continue;
			for (size_t q = 0; q < p; q++)
				buf[used * p + q] = sqrt(k) * ds->x[j * p + q];
			used++;
		}
		if (used > 0)
			cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)p, (int)used,
				    1.0 / (double)n, buf, (int)p, 1.0, H, (int)p);
	}
	for (size_t a = 0; a < p; a++)
		for (size_t b = 0; b < a; b++)
			H[a * p + b] = H[b * p + a];
	free(buf);
	return 0;
}

/* g = 2 lambda theta + mean clipped gradient. */
static void clipped_grad(dp_model m, const dp_dataset *ds, const double *theta, double clip,
			 double lambda, double *g)
{
	size_t p = ds->p;

	for (size_t q = 0; q < p; q++)
		g[q] = 0.0;
	for (size_t j = 0; j < ds->n; j++) {
		double t, c, norm, s;

		row_coef(m, ds, theta, j, &t, &c, &norm);
		s = norm > clip ? clip / norm : 1.0;
		cblas_daxpy((int)p, c * s / (double)ds->n, ds->x + j * p, 1, g, 1);
	}
	for (size_t q = 0; q < p; q++)
		g[q] += 2.0 * lambda * theta[q];
}

static double norm_inf(const double *v, size_t p)
{
	double mx = 0.0;

	for (size_t q = 0; q < p; q++)
		if (fabs(v[q]) > mx)
			mx = fabs(v[q]);
	return mx;
}

/* Solve (A + 2 lambda I) x = b for symmetric positive semi-definite A
 * (copied; b overwritten with x). */
static int solve_spd(const double *A, double lambda, size_t p, double *b, size_t nrhs,
		     double *work)
{
	lapack_int info;

	memcpy(work, A, p * p * sizeof(double));
	for (size_t q = 0; q < p; q++)
		work[q * p + q] += 2.0 * lambda + 1e-12;
	info = LAPACKE_dposv(LAPACK_ROW_MAJOR, 'U', (lapack_int)p, (lapack_int)nrhs, work,
			     (lapack_int)p, b, (lapack_int)nrhs);
	return info == 0 ? 0 : dp_error_set(DP_ENUMERIC, "public sample: a curvature matrix is "
					    "singular (give lambda > 0)");
}

/* The zero of the clipped gradient (plus regulariser) near theta: Newton
 * steps with the curvature of the rows left unclipped, halved until the
 * gradient shrinks.  Clipped gradients are piecewise smooth, so the best
 * point found is kept. */
static int clipped_fixed_point(dp_model m, const dp_dataset *ds, double lambda, double clip,
			       double *theta, double *H, double *work, double *g, double *step,
			       double *trial)
{
	size_t p = ds->p;
	double gn;
	int rc;

	clipped_grad(m, ds, theta, clip, lambda, g);
	gn = norm_inf(g, p);
	for (int it = 0; it < FIXED_ITERS && gn > 1e-13; it++) {
		double a = 1.0, gt = INFINITY;

		rc = hessian(m, ds, theta, clip, 0, H);
		if (rc != 0)
			return rc;
		memcpy(step, g, p * sizeof(double));
		rc = solve_spd(H, lambda, p, step, 1, work);
		if (rc != 0)
			return rc;
		for (int h = 0; h < 30; h++, a *= 0.5) {
			for (size_t q = 0; q < p; q++)
				trial[q] = theta[q] - a * step[q];
			clipped_grad(m, ds, trial, clip, lambda, work);
			gt = norm_inf(work, p);
			if (gt < gn)
				break;
		}
		if (!(gt < gn))
			break;
		memcpy(theta, trial, p * sizeof(double));
		memcpy(g, work, p * sizeof(double));
		gn = gt;
		if (a * norm_inf(step, p) <= 1e-12 * (1.0 + norm_inf(theta, p)))
			break;
	}
	return 0;
}

/* Secant curvature of direction e from theta = 0 to theta*_Xi: G(0)_e =
 * -(hs + 2 lambda) t_e, with G the clipped mean loss gradient (and
 * G(theta*_Xi) = -2 lambda theta*_Xi).  A direction the optimum hardly
 * moves along (t_e ~ 0) keeps the local curvature h; the value is kept
 * within [h/10, max(h, h_safe)], where the quadratic picture still
 * holds. */
static double secant(double h, double t, double g0, double lambda, double tmax, double h_safe)
{
	double hs;

	if (!(fabs(t) > 1e-6 * tmax) || !(h > 0.0))
		return h > 0.0 ? h : h_safe * 1e-6;
	hs = -g0 / t - 2.0 * lambda;
	if (!(hs >= 0.1 * h))
		hs = 0.1 * h;
	if (hs > h)
		hs = sqrt(h * (hs < h_safe ? hs : h_safe));
	return hs;
}

/* phi1(x) = (e^x - 1)/x and phi2(x) = (e^x - 1 - x)/x^2, the weights of
 * the exponential integrator, without cancellation near 0. */
static double phi1(double x)
{
	return fabs(x) < 1e-5 ? 1.0 + 0.5 * x : expm1(x) / x;
}

static double phi2(double x)
{
	return fabs(x) < 1e-3 ? 0.5 + x / 6.0 + x * x / 24.0 : (expm1(x) - x) / (x * x);
}

/* The flow's state and scratch, in the eigenbasis U (p x p, row-major,
 * eigenvectors in columns) of the clipped curvature at theta*_Xi: u = U^T
 * theta - t, so u = 0 at theta*_Xi and the linear part of the flow is
 * du/dtau = -A u, A_q = h_q + 2 lambda. */
struct flow {
	dp_model model;
	const dp_dataset *ds;
	double lambda, clip;
	const double *U, *t, *A;
	size_t p;
	double *theta, *g;   /* p each */
};

static void flow_theta(const struct flow *fl, const double *u)
{
	for (size_t q = 0; q < fl->p; q++)
		fl->g[q] = u[q] + fl->t[q];
	cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)fl->p, (int)fl->p, 1.0, fl->U, (int)fl->p,
		    fl->g, 1, 0.0, fl->theta, 1);
}

/* The non-linear rest of the flow's right side at u: -(U^T G(theta) - A u),
 * G the clipped mean loss gradient plus 2 lambda theta. */
static void flow_rest(const struct flow *fl, const double *u, double *out)
{
	flow_theta(fl, u);
	clipped_grad(fl->model, fl->ds, fl->theta, fl->clip, fl->lambda, fl->g);
	cblas_dgemv(CblasRowMajor, CblasTrans, (int)fl->p, (int)fl->p, 1.0, fl->U, (int)fl->p,
		    fl->g, 1, 0.0, out, 1);
	for (size_t q = 0; q < fl->p; q++)
		out[q] = -(out[q] - fl->A[q] * u[q]);
}

/* One step of length d of the exponential Runge-Kutta method of order 2
 * (Cox and Matthews): exact on the linear part, so the stiff directions
 * cost no small steps; u advanced in place.  w: 3 p scratch. */
static void flow_step(const struct flow *fl, double *u, double d, double *w)
{
	double *rn = w, *a = w + fl->p, *ra = w + 2 * fl->p;

	flow_rest(fl, u, rn);
	for (size_t q = 0; q < fl->p; q++) {
		double x = -fl->A[q] * d;

		a[q] = exp(x) * u[q] + d * phi1(x) * rn[q];
	}
	flow_rest(fl, a, ra);
	for (size_t q = 0; q < fl->p; q++)
		u[q] = a[q] + d * phi2(-fl->A[q] * d) * (ra[q] - rn[q]);
}

/* Record f and the unclipped curvature along each eigen-direction at the
 * flow's point u as path point s.  Hb, HU: p x p scratch. */
static int path_point(const struct flow *fl, dp_plan_clip *k, size_t s, const double *u,
		      double *Hb, double *HU)
{
	const dp_dataset *view[1] = { fl->ds };
	size_t p = fl->p;
	int rc;

	flow_theta(fl, u);
	k->path_f[s] = dp_model_fitness(fl->model, view, 1, fl->lambda, fl->theta);
	if (!isfinite(k->path_f[s]))
		return DP_ENUMERIC;
	rc = hessian(fl->model, fl->ds, fl->theta, INFINITY, 0, Hb);
	if (rc != 0)
		return rc;
	cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)p, (int)p, (int)p, 1.0, Hb,
		    (int)p, fl->U, (int)p, 0.0, HU, (int)p);
	for (size_t e = 0; e < p; e++) {
		double v = 0.0;

		for (size_t a = 0; a < p; a++)
			v += fl->U[a * p + e] * HU[a * p + e];
		k->path_h[s * p + e] = v > 0.0 ? v : 0.0;
	}
	return 0;
}

/* The way from theta = 0 to theta*_Xi of candidate k: its gradient flow
 * at tau = 0 and PATH_POINTS geometric times (docs/planner.md §2).  U the
 * eigenvectors of the clipped curvature h; h_max the largest curvature on
 * the way (h_safe), which with h + 2 lambda sets the first time.  Fills
 * k->npath, tau, path_f, path_h. */
static int flow_path(dp_model model, const dp_dataset *ds, double lambda, dp_plan_clip *k,
		     const double *U, double h_max, double f_star)
{
	size_t p = ds->p, n = PATH_POINTS + 1;
	double *A = calloc(p, sizeof(double)), *u = calloc(p, sizeof(double));
	double *w = calloc(3 * p, sizeof(double)), *theta = calloc(p, sizeof(double));
	double *g = calloc(p, sizeof(double)), *Hb = calloc(p * p, sizeof(double));
	double *HU = calloc(p * p, sizeof(double)), tau = 0.0, tau1, ratio;
	struct flow fl = { .model = model, .ds = ds, .lambda = lambda, .clip = k->clip, .U = U,
			   .t = k->t, .A = A, .p = p, .theta = theta, .g = g };
	int rc = DP_ENOMEM;

	k->tau = calloc(n, sizeof(double));
	k->path_f = calloc(n, sizeof(double));
	k->path_h = calloc(n * p, sizeof(double));
	if (!A || !u || !w || !theta || !g || !Hb || !HU || !k->tau || !k->path_f || !k->path_h)
		goto out;
	h_max += 2.0 * lambda;
	for (size_t q = 0; q < p; q++) {
		A[q] = k->h[q] + 2.0 * lambda;
		u[q] = -k->t[q];    /* theta = 0 */
		if (A[q] > h_max)
			h_max = A[q];
	}
	tau1 = PATH_FIRST / h_max;
	ratio = pow(PATH_SPAN, 1.0 / (PATH_POINTS - 1));
	rc = path_point(&fl, k, 0, u, Hb, HU);
	k->npath = 1;
	for (size_t s = 1; rc == 0 && s < n; s++) {
		double end = tau1 * pow(ratio, (double)(s - 1));

		/* Uniform steps up to the first time, geometric after it. */
		for (int j = 1; j <= PATH_SUB; j++) {
			double next = s == 1 ? end * j / PATH_SUB
					     : end / ratio * pow(ratio, (double)j / PATH_SUB);

			flow_step(&fl, u, next - tau, w);
			tau = next;
		}
		k->tau[s] = end;
		rc = path_point(&fl, k, s, u, Hb, HU);
		k->npath = s + 1;
		if (dp_plan_flow_excess(k, p, lambda, end) < PATH_END * f_star)
			break;
	}
out:
	if (rc != 0)
		rc = dp_error_set(rc, "public sample: measuring the way from 0 failed");
	free(A);
	free(u);
	free(w);
	free(theta);
	free(g);
	free(Hb);
	free(HU);
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double max_eigen(double *A, size_t p, double *w)
{
	if (LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'N', 'U', (lapack_int)p, A, (lapack_int)p, w) != 0)
		return NAN;
	return w[p - 1];
}

int dp_public_measure(dp_model model, const dp_dataset *sample, double lambda,
		      double theta_max, const char *source, dp_plan_public *out)
{
	const dp_dataset *view[1] = { sample };
	dp_plan_public pub = { 0 };
	size_t p, n;
	double *th = NULL, *thc = NULL, *H = NULL, *Hf = NULL, *work = NULL, *g = NULL;
	double *step = NULL, *trial = NULL, *norms = NULL, *w = NULL, *G = NULL, tmax;
	int rc;

	DP_REQUIRE(sample != NULL && out != NULL);
	p = sample->p;
	n = sample->n;
	if (n == 0 || p == 0)
		return dp_error_set(DP_EINVAL, "public sample %s has no rows", source);
	rc = dp_model_check_data(model, sample);
	if (rc != 0)
		return rc;
	th = calloc(p, sizeof(double));
	thc = calloc(p, sizeof(double));
	H = calloc(p * p, sizeof(double));
	Hf = calloc(p * p, sizeof(double));
	G = calloc(p * p, sizeof(double));
	work = calloc(p * p + p, sizeof(double));
	g = calloc(p, sizeof(double));
	step = calloc(p, sizeof(double));
	trial = calloc(p, sizeof(double));
	w = calloc(p, sizeof(double));
	norms = calloc(n, sizeof(double));
	pub.clips = calloc(DP_PUBLIC_NQ, sizeof(*pub.clips));
	if (!th || !thc || !H || !Hf || !G || !work || !g || !step || !trial || !w || !norms ||
	    !pub.clips) {
		rc = dp_error_set(DP_ENOMEM, "public sample: out of memory");
		goto out;
	}
	pub.model = model;
	pub.p = p;
	pub.lambda = lambda;
	pub.measured = true;
	pub.rows = n;
	snprintf(pub.source, sizeof(pub.source), "public sample %s (%zu rows)", source, n);

	rc = dp_optimum_solve(model, view, 1, lambda, theta_max, th, &pub.f_star);
	if (rc != 0)
		goto out;
	if (!(pub.f_star > 0.0)) {
		rc = dp_error_set(DP_EINVAL, "public sample %s: f(theta*) = %g, psi is undefined",
				  source, pub.f_star);
		goto out;
	}
	pub.f_zero = dp_model_fitness(model, view, 1, lambda, w /* zeros */);

	/* The sandwich constant tr(H^-1 G)/2 at theta*: H the curvature of f,
	 * G the covariance of the per-example gradients of f. */
	rc = hessian(model, sample, th, INFINITY, 0, Hf);
	if (rc != 0)
		goto out;
	for (size_t j = 0; j < n; j++) {
		double t, c, nm;

		row_coef(model, sample, th, j, &t, &c, &nm);
		norms[j] = nm;
		for (size_t q = 0; q < p; q++)
			step[q] = c * sample->x[j * p + q] + 2.0 * lambda * th[q];
		cblas_dsyr(CblasRowMajor, CblasUpper, (int)p, 1.0 / (double)n, step, 1, G, (int)p);
	}
	for (size_t a = 0; a < p; a++)
		for (size_t b = 0; b < a; b++)
			G[a * p + b] = G[b * p + a];
	rc = solve_spd(Hf, lambda, p, G, p, work);
	if (rc != 0)
		goto out;
	for (size_t q = 0; q < p; q++)
		pub.alone += 0.5 * G[q * p + q];

	/* The step bound: the largest curvature along the way from 0 to
	 * theta* (logistic is stiffest at 0, the smoothed hinge anywhere). */
	memcpy(work, Hf, p * p * sizeof(double));
	pub.h_safe = max_eigen(work, p, w);
	rc = hessian(model, sample, th, INFINITY, model != DP_MODEL_LINEAR, H);
	if (rc != 0)
		goto out;
	{
		double hb = max_eigen(H, p, w);

		if (hb > pub.h_safe || !isfinite(pub.h_safe))
			pub.h_safe = hb;
	}
	if (!(pub.h_safe > 0.0) || !isfinite(pub.h_safe)) {
		rc = dp_error_set(DP_ENUMERIC, "public sample %s: no curvature", source);
		goto out;
	}

	qsort(norms, n, sizeof(double), cmp_double);
	for (size_t c = 0; c < DP_PUBLIC_NQ; c++) {
		double q = dp_public_quantiles[c], clip;
		size_t idx = (size_t)floor(q * (double)(n - 1) + 0.5);
		dp_plan_clip *k;

		clip = q >= 1.0 ? norms[n - 1] * (1.0 + 1e-9) : norms[idx];
		if (!(clip > 0.0))
			continue;   /* a quantile at 0: every gradient there is clipped away */
		k = &pub.clips[pub.nclip++];
		k->h = calloc(p, sizeof(double));
		k->t = calloc(p, sizeof(double));
		k->hf = calloc(p, sizeof(double));
		k->hs = calloc(p, sizeof(double));
		if (k->h == NULL || k->t == NULL || k->hf == NULL || k->hs == NULL) {
			rc = dp_error_set(DP_ENOMEM, "public sample: out of memory");
			goto out;
		}
		k->clip = clip;
		memcpy(thc, th, p * sizeof(double));
		rc = clipped_fixed_point(model, sample, lambda, clip, thc, H, work, g, step, trial);
		if (rc != 0)
			goto out;
		k->f_clip = dp_model_fitness(model, view, 1, lambda, thc);
		if (k->f_clip < pub.f_star)
			k->f_clip = pub.f_star;
		rc = hessian(model, sample, thc, clip, 0, H);
		if (rc == 0)
			rc = hessian(model, sample, thc, INFINITY, 0, Hf);
		if (rc != 0)
			goto out;
		if (LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', (lapack_int)p, H, (lapack_int)p,
				   k->h) != 0) {
			rc = dp_error_set(DP_ENUMERIC, "public sample: eigen-decomposition failed");
			goto out;
		}
		/* The clipped mean loss gradient at theta = 0, for the secant
		 * curvatures (w holds zeros here). */
		memset(trial, 0, p * sizeof(double));
		clipped_grad(model, sample, trial, clip, 0.0, g);
		tmax = norm_inf(thc, p);
		for (size_t e = 0; e < p; e++) {
			double tt = 0.0, hf = 0.0, g0 = 0.0;

			if (k->h[e] < 0.0)
				k->h[e] = 0.0;
			for (size_t a = 0; a < p; a++) {
				double ua = H[a * p + e];

				tt += ua * thc[a];
				g0 += ua * g[a];
				for (size_t b = 0; b < p; b++)
					hf += ua * Hf[a * p + b] * H[b * p + e];
			}
			k->t[e] = tt;
			k->hf[e] = hf > 0.0 ? hf : 0.0;
			k->hs[e] = secant(k->h[e], tt, g0, lambda, tmax, pub.h_safe);
		}
		rc = flow_path(model, sample, lambda, k, H, pub.h_safe, pub.f_star);
		if (rc != 0)
			goto out;
	}
	if (pub.nclip == 0) {
		rc = dp_error_set(DP_EINVAL, "public sample %s: every per-example gradient is 0 at "
				  "the optimum", source);
		goto out;
	}
	/* What the rows were, for learnerd --public to check against the
	 * owners' schema (docs/planner.md "With a public sample"). */
	if (sample->target != NULL && sample->names != NULL &&
	    dp_plan_public_set_names(&pub, sample->target, sample->names) != 0) {
		rc = dp_error_set(DP_ENOMEM, "public sample: out of memory");
		goto out;
	}
	*out = pub;
	memset(&pub, 0, sizeof(pub));
	rc = 0;
out:
	dp_plan_public_free(&pub);
	free(th);
	free(thc);
	free(H);
	free(Hf);
	free(G);
	free(work);
	free(g);
	free(step);
	free(trial);
	free(w);
	free(norms);
	return rc;
}

int dp_public_measure_norm(dp_model model, const dp_dataset *sample, double lambda,
			   double theta_max, const char *source, bool l2, dp_plan_public *out)
{
	dp_dataset view;
	int rc;

	DP_REQUIRE(sample != NULL && out != NULL);
	if (!l2)
		return dp_public_measure(model, sample, lambda, theta_max, source, out);
	DP_REQUIRE(sample->row_l2 != NULL || sample->n == 0);
	/* The measurement reads each row's norm from row_l1: a shallow view of
	 * the sample whose row_l1 holds the L2 norms measures L2 clipping with
	 * the same code (docs/planner.md §7). */
	view = *sample;
	view.row_l1 = sample->row_l2;
	rc = dp_public_measure(model, &view, lambda, theta_max, source, out);
	if (rc == 0)
		out->l2 = true;
	return rc;
}

/* A file's constants must be those of this job: the recursions use its
 * lambda, and its curvatures have its p. */
static int check_file(const char *path, const dp_plan_public *pub, dp_model model, size_t p,
		      double lambda)
{
	if (pub->model != model)
		return dp_error_set(DP_EINVAL, "%s: constants for model %s, the job is %s", path,
				    dp_model_name(pub->model), dp_model_name(model));
	if (pub->p != p)
		return dp_error_set(DP_EINVAL, "%s: constants for p = %zu, the job has p = %zu "
				    "(the bias counts)", path, pub->p, p);
	if (fabs(pub->lambda - lambda) > 1e-12 * fabs(lambda))
		return dp_error_set(DP_EINVAL, "%s: constants measured with lambda = %g, the job "
				    "has lambda = %g", path, pub->lambda, lambda);
	return 0;
}

int dp_public_obtain(const dp_public_from *from, dp_model model, const dp_dataset *like,
		     double lambda, double theta_max, dp_plan_public *out)
{
	dp_ownerdata od = { 0 };
	char *files[1];
	int rc;

	DP_REQUIRE(from != NULL && out != NULL);
	if (from->sample != NULL && from->file != NULL)
		return dp_error_set(DP_EINVAL, "give a public sample or a constants file, not both");
	if (from->file != NULL) {
		dp_plan_public pub;

		if (like == NULL)
			return dp_error_set(DP_EINVAL, "a constants file needs the job's data shape");
		rc = dp_plan_public_read_norm(from->file, from->l2, &pub);
		if (rc != 0)
			return rc;
		rc = check_file(from->file, &pub, model, like->p, lambda);
		if (rc != 0) {
			dp_plan_public_free(&pub);
			return rc;
		}
		*out = pub;
		return 0;
	}
	if (from->sample == NULL) {
		if (like == NULL)
			return dp_error_set(DP_EINVAL, "no public sample given");
		return dp_plan_public_shape_norm(model, like->p, lambda, from->l2, out);
	}
	files[0] = (char *)from->sample;
	rc = dp_ownerdata_load(&od, files, 1, from->target, from->bias, from->schema, model);
	if (rc != 0)
		return rc;
	if (like != NULL) {
		const dp_dataset *pair[2] = { like, &od.ds[0] };

		rc = dp_dataset_check_compatible(pair, 2);
	}
	if (rc == 0)
		rc = dp_public_measure_norm(model, &od.ds[0], lambda, theta_max, from->sample,
					    from->l2, out);
	dp_ownerdata_free(&od);
	return rc;
}

int dp_public_plan_other(const dp_public_from *from, dp_model model, const dp_dataset *like,
			 double lambda, double theta_max, const dp_plan_request *req,
			 double delta, dp_plan_public *pub, dp_plan *other)
{
	dp_public_from f = *from;
	dp_plan_request r = *req;
	dp_plan_public got;
	int rc;

	DP_REQUIRE(from != NULL && req != NULL && pub != NULL && other != NULL);
	f.l2 = req->mech != DP_MECH_GAUSSIAN;
	rc = dp_public_obtain(&f, model, like, lambda, theta_max, &got);
	if (rc != 0)
		return rc;
	r.mech = f.l2 ? DP_MECH_GAUSSIAN : DP_MECH_LAPLACE;
	r.delta = delta;
	r.deltas = NULL;
	r.clip = 0.0;
	rc = dp_plan_make(&r, &got, other);
	if (rc != 0) {
		dp_plan_public_free(&got);
		return rc;
	}
	*pub = got;
	return 0;
}
