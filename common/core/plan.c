/* SPDX-License-Identifier: Apache-2.0 */
/* The planner's prediction and search; the mathematics is in
 * docs/planner.md.  The public constants are plan_public.c, the recursions
 * the prediction runs are plan_recursion.c. */
#include "common/core/plan.h"
#include "common/core/plan_impl.h"
#include "common/core/error.h"
#include "common/core/json.h"
#include "common/core/noise.h"
#include "common/core/zcdp.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Search grids. */
#define T_GRID      24
#define SYNC_T_MAX  2000
#define STEP_GRID   12
#define STEP_SPAN   100.0  /* smallest step tried: the largest / STEP_SPAN */

const char *const dp_plan_mode_names[] = { "async", "sync1", "sync2", NULL };

int dp_plan_mode_parse(const char *s, enum dp_plan_mode *out)
{
	for (int i = 0; i < 3; i++) {
		if (s != NULL && strcmp(s, dp_plan_mode_names[i]) == 0) {
			*out = (enum dp_plan_mode)i;
			return 0;
		}
	}
	return dp_error_set(DP_EINVAL, "mode '%s': expected async, sync1 or sync2", s ? s : "");
}

const char *dp_plan_mode_name(enum dp_plan_mode m)
{
	return (unsigned)m < 3 ? dp_plan_mode_names[m] : "?";
}

/* ---- the excess of f where a run ends ------------------------------------ */

double dp_plan_flow_excess(const dp_plan_clip *k, size_t p, double lambda, double tau)
{
	double s = 0.0;

	DP_REQUIRE(k != NULL && (p == 0 || (k->h != NULL && k->t != NULL && k->hf != NULL)));

	for (size_t q = 0; q < p; q++)
		s += 0.5 * (k->hf[q] + 2.0 * lambda) * k->t[q] * k->t[q] *
		     exp(-2.0 * (k->h[q] + 2.0 * lambda) * tau);
	return s;
}

/* The time of the linear flow whose excess is M (M below its value at 0
 * and above its value at tau_end): geometric bisection. */
static double flow_time(const dp_plan_clip *k, size_t p, double lambda, double M, double tau_end)
{
	double lo = 0.0, hi = tau_end;

	for (int it = 0; it < 80 && (lo == 0.0 || hi > lo * (1.0 + 1e-9)); it++) {
		double mid = lo > 0.0 ? sqrt(lo * hi) : hi * 1e-2;

		if (dp_plan_flow_excess(k, p, lambda, mid) > M)
			lo = mid;
		else
			hi = mid;
	}
	return lo > 0.0 ? sqrt(lo * hi) : hi;
}

/* The measured excess along the path over the quadratic one at path point
 * s: (f(theta(tau_s)) - f(theta*_Xi)) / the linear flow's excess; 1 on a
 * quadratic problem.  The way may reach f(theta*_Xi) before theta*_Xi
 * (which is not the minimiser of f: grad f there is not 0) and pass by
 * lower f; from the first point where it does on, the ratio says nothing
 * about the curvature the run sees, and the quadratic model is kept (1).
 * A plan that counted on stopping in such a dip would bet on where exactly
 * a noisy run stops, and the search would seek it out (measured: forecasts
 * up to 50x too low on synthetic logistic data). */
static double path_ratio(const dp_plan_clip *k, size_t p, double lambda, double f_clip,
			 size_t s)
{
	for (size_t j = 0; j <= s; j++) {
		double lin = dp_plan_flow_excess(k, p, lambda, k->tau[j]);
		double ex = k->path_f[j] - f_clip;

		if (!(ex > 0.0) || !(lin > 1e-12 * f_clip))
			return 1.0;
		if (j == s)
			return ex / lin;
	}
	return 1.0;
}

/* Excess of f over f(theta*_Xi) where the run ends, split into the part
 * without noise (*opt) and the gain per unit of noise input (*gain), from
 * the moments of the recursion.  Without a path: the quadratic model with
 * hf.  With one: the mean iterate is placed on the path at the time tau
 * whose linear-flow excess equals the recursion's mean excess M, and the
 * mean excess is M times the path's ratio there (path_ratio: so that on a
 * quadratic problem the two models agree exactly); the spread and the
 * noise are weighed with the curvatures along the path at tau.  Between
 * path points the ratio and the curvatures are interpolated in log tau
 * (linearly in tau before the first point); beyond the last point they
 * keep its values. */
static void excess(const dp_plan_clip *k, size_t p, double lambda, double f_clip,
		   const double *m, const double *vd, const double *vn, double *opt, double *gain)
{
	double M = 0.0, tau, w = 0.0;
	size_t s = 0, last = k->npath - 1;

	*opt = 0.0;
	*gain = 0.0;
	if (k->npath < 2) {
		for (size_t q = 0; q < p; q++) {
			double cf = 0.5 * (k->hf[q] + 2.0 * lambda);

			*opt += cf * (m[q] * m[q] + vd[q]);
			*gain += cf * vn[q];
		}
		return;
	}
	for (size_t q = 0; q < p; q++)
		M += 0.5 * (k->hf[q] + 2.0 * lambda) * m[q] * m[q];
	if (M >= dp_plan_flow_excess(k, p, lambda, 0.0)) {
		w = 0.0;   /* no way made (or overshot): the start of the path */
	} else if (M <= dp_plan_flow_excess(k, p, lambda, k->tau[last])) {
		s = last - 1;
		w = 1.0;
	} else {
		tau = flow_time(k, p, lambda, M, k->tau[last]);
		while (s + 1 < last && k->tau[s + 1] < tau)
			s++;
		if (s == 0)
			w = tau / k->tau[1];
		else
			w = log(tau / k->tau[s]) / log(k->tau[s + 1] / k->tau[s]);
		w = w < 0.0 ? 0.0 : w > 1.0 ? 1.0 : w;
	}
	*opt = M * ((1.0 - w) * path_ratio(k, p, lambda, f_clip, s) +
		    w * path_ratio(k, p, lambda, f_clip, s + 1));
	for (size_t q = 0; q < p; q++) {
		double hq = (1.0 - w) * k->path_h[s * p + q] + w * k->path_h[(s + 1) * p + q];
		double cf = 0.5 * (hq + 2.0 * lambda);

		*opt += cf * vd[q];
		*gain += cf * vn[q];
	}
}

/* ---- prediction and search ------------------------------------------------- */

struct job {
	const dp_plan_request *req;
	const dp_plan_public *pub;
	double n;          /* total rows */
	double *share;     /* N: pi_i */
	double wmax;
	double *mom;       /* 3 p: scratch for the moments (m, vd, vn) */
	/* Gaussian: each owner's rho_q for the K_i it was last asked about
	 * (dp_zcdp_share is the search's costly part, and K depends on T
	 * only); rho_K[i] 0: not computed yet. */
	uint64_t *rho_K;
	double *rho_q;     /* N; NAN: no valid share for that K_i */
	bool unpaid;       /* some K_i had no valid share (a prediction was
			      INFINITY for the budget's sake) */
};

/* Gaussian: the variance per coordinate of one answer's noise on owner
 * i's mean gradient, clip C and K_i answers: sigma^2 with sigma = 2 C /
 * (n_i sqrt(2 rho_q)), rho_q the share of (eps_i, delta) dp_zcdp_share gives
 * each of the K_i answers (docs/planner.md §7); INFINITY when the budget
 * cannot pay for K_i answers. */
static double gauss_var(struct job *jb, size_t i, double clip, uint64_t K)
{
	const dp_plan_request *req = jb->req;
	double sigma;

	if (jb->rho_K[i] != K) {
		double delta = req->deltas ? req->deltas[i] : req->delta, rho;
		uint64_t slack;

		jb->rho_K[i] = K;
		jb->rho_q[i] = NAN;
		if (dp_zcdp_share(req->epsilon[i], delta, K, jb->pub->p, DP_NOISE_DGAUSS_SLACK,
				  DP_NOISE_DGAUSS_TAIL, &rho, &slack) == 0)
			jb->rho_q[i] = rho;
		dp_error_clear();
	}
	if (!(jb->rho_q[i] > 0.0)) {
		jb->unpaid = true;
		return INFINITY;
	}
	sigma = 2.0 * clip / ((double)req->n_rows[i] * sqrt(2.0 * jb->rho_q[i]));
	return sigma * sigma;
}

/* Noise input: async E over the owner picked of w_i^2 times the variance
 * of its answer's noise, Laplace (w_i b_i)^2 * 2 with b_i = 2 C K_i / (n_i
 * eps_i), i.e. sum_i pi_i w_i^2 2 b_i^2; sync: sum_i w_i^2 2 b_i^2 per step.
 * Gaussian: the same with sigma_i^2 (gauss_var) for 2 b_i^2. */
static double noise_input(struct job *jb, double clip, const uint64_t *K)
{
	const dp_plan_request *req = jb->req;
	double nu = 0.0;

	for (size_t i = 0; i < req->N; i++) {
		double w = (double)req->n_rows[i] / jb->n, b;
		double pick = req->mode == DP_PLAN_ASYNC ? jb->share[i] : 1.0;

		if (isinf(req->epsilon[i]))
			continue;
		if (req->mech == DP_MECH_GAUSSIAN) {
			nu += pick * w * w * gauss_var(jb, i, clip, K[i]);
			continue;
		}
		b = 2.0 * clip * (double)K[i] / ((double)req->n_rows[i] * req->epsilon[i]);
		nu += pick * w * w * 2.0 * b * b;
	}
	return nu;
}

static double predict(struct job *jb, size_t T, double step, size_t ci, const uint64_t *K,
		      double *opt, double *noise, double *clipbias)
{
	const dp_plan_public *pub = jb->pub;
	const dp_plan_clip *k = &pub->clips[ci];
	double clip = jb->req->clip > 0 ? jb->req->clip : k->clip;
	double o, g, nu = noise_input(jb, clip, K), cb = k->f_clip - pub->f_star;
	double *m = jb->mom, *vd = jb->mom + pub->p, *vn = jb->mom + 2 * pub->p;
	bool secant = k->npath < 2;

	if (jb->req->mode == DP_PLAN_ASYNC)
		dp__plan_async_moments(k, pub->p, pub->lambda, (double)jb->req->N, T, step, secant,
				       m, vd, vn);
	else
		dp__plan_sync_moments(jb->req->mode, k, pub->p, pub->lambda, T, step, secant, m, vd,
				      vn);
	excess(k, pub->p, pub->lambda, k->f_clip, m, vd, vn, &o, &g);
	if (cb < 0.0)
		cb = 0.0;
	if (opt)
		*opt = o / pub->f_star;
	if (noise)
		*noise = nu * g / pub->f_star;
	if (clipbias)
		*clipbias = cb / pub->f_star;
	return (o + nu * g + cb) / pub->f_star;
}

/* Async: owner i is expected to serve T pi_i iterations.  An owner that
 * fixed its own cap serves at most that many, and the iterations it leaves
 * go to the owners whose caps are planned, in proportion to their rates;
 * each of those gets its expected count plus the margin, so that its whole
 * budget is spent and a few stragglers do not stop the job short of T.
 * Sync: every owner answers each of the T - 1 rounds, plus the slack its
 * restarts may forfeit (docs/ledger.md §9 "Sync jobs"). */
static void caps_for(const struct job *jb, size_t T, uint64_t *K)
{
	const dp_plan_request *req = jb->req;
	double margin = req->margin > 0 ? req->margin : DP_PLAN_MARGIN;
	double left = (double)T, free_share = 0.0;

	for (size_t i = 0; i < req->N; i++) {
		bool fixed = req->answers_cap != NULL && req->answers_cap[i] != 0;

		if (fixed)
			left -= fmin((double)req->answers_cap[i], (double)T * jb->share[i]);
		else
			free_share += jb->share[i];
	}
	if (left < 0.0)
		left = 0.0;
	for (size_t i = 0; i < req->N; i++) {
		if (req->answers_cap != NULL && req->answers_cap[i] != 0)
			K[i] = req->answers_cap[i];
		else if (req->mode != DP_PLAN_ASYNC)
			K[i] = (T > 1 ? T - 1 : 1) + req->slack;
		else {
			/* share_i <= free_share and left <= T: at most T (1 + margin),
			 * which check() bounds. */
			double v = ceil(left * jb->share[i] / free_share * (1.0 + margin));

			DP_REQUIRE(v >= 0.0 && v <= DP_PLAN_K_MAX);
			K[i] = (uint64_t)v;
		}
		if (K[i] == 0)
			K[i] = 1;
	}
}

/* The largest step for which every update contracts in the stiffest
 * direction (h_safe, or a larger measured curvature). */
static double step_max(const struct job *jb, size_t ci)
{
	const dp_plan_public *pub = jb->pub;
	double h = pub->h_safe, N = (double)jb->req->N;

	for (size_t q = 0; q < pub->p; q++) {
		if (pub->clips[ci].h[q] > h)
			h = pub->clips[ci].h[q];
		if (pub->clips[ci].hs != NULL && pub->clips[ci].hs[q] > h)
			h = pub->clips[ci].hs[q];
	}
	if (jb->req->mode == DP_PLAN_ASYNC)
		return 1.0 / (pub->lambda / N + jb->wmax * h);
	return 1.0 / (h + 2.0 * pub->lambda);
}

/* Every value the search turns into an integer (a T of the grid, a K_i) is
 * bounded by what is checked here: the rates' sum finite, so that every
 * share is a number in [0, 1]; T and t-max at most DP_PLAN_T_LIMIT; T times
 * 1 + margin at most DP_PLAN_K_MAX. */
static int check(const dp_plan_request *req, const dp_plan_public *pub)
{
	double rsum = 0.0, tm;

	if (req->N == 0 || req->n_rows == NULL || req->epsilon == NULL)
		return dp_error_set(DP_EINVAL, "plan: no owners");
	for (size_t i = 0; i < req->N; i++) {
		if (req->n_rows[i] == 0)
			return dp_error_set(DP_EINVAL, "plan: owner %zu has no rows", i + 1);
		if (!(req->epsilon[i] > 0.0))
			return dp_error_set(DP_EINVAL, "plan: owner %zu: epsilon must be > 0", i + 1);
		if (req->rate != NULL && !(req->rate[i] > 0.0 && isfinite(req->rate[i])))
			return dp_error_set(DP_EINVAL, "plan: owner %zu: rate must be > 0", i + 1);
		rsum += req->rate != NULL ? req->rate[i] : 1.0;
	}
	if (!isfinite(rsum))
		return dp_error_set(DP_EINVAL, "plan: the owners' rates sum to more than %g",
				    DBL_MAX);
	if (req->T > DP_PLAN_T_LIMIT || req->T_max > DP_PLAN_T_LIMIT)
		return dp_error_set(DP_EINVAL, "plan: T and t-max must be at most %g",
				    (double)DP_PLAN_T_LIMIT);
	tm = (double)(req->T ? req->T : req->T_max ? req->T_max : DP_PLAN_T_MAX);
	if (!(req->margin >= 0.0) || !(tm * (1.0 + req->margin) <= DP_PLAN_K_MAX))
		return dp_error_set(DP_EINVAL, "plan: margin %g: T (1 + margin) must be at most %g",
				    req->margin, DP_PLAN_K_MAX);
	if (req->slack > DP_PLAN_SLACK_MAX)
		return dp_error_set(DP_EINVAL, "plan: slack %zu: at most %d answers", req->slack,
				    DP_PLAN_SLACK_MAX);
	if (req->mode != DP_PLAN_ASYNC && req->answers_cap != NULL && req->T > 1) {
		for (size_t i = 0; i < req->N; i++)
			if (req->answers_cap[i] != 0 && req->answers_cap[i] < req->T - 1)
				return dp_error_set(DP_EINVAL, "plan: %s: every owner answers each of "
						    "the T-1 = %zu rounds; owner %zu's cap %llu is "
						    "smaller", dp_plan_mode_name(req->mode),
						    req->T - 1, i + 1,
						    (unsigned long long)req->answers_cap[i]);
	}
	if (req->T == 1)
		return dp_error_set(DP_EINVAL, "plan: T must be at least 2");
	if (req->step < 0.0 || !isfinite(req->step) || req->clip < 0.0 || !isfinite(req->clip))
		return dp_error_set(DP_EINVAL, "plan: step and clip must be finite and >= 0");
	if (pub->nclip == 0 || pub->p == 0)
		return dp_error_set(DP_EINVAL, "plan: the public constants hold no clip candidate");
	if (req->mech != DP_MECH_LAPLACE && req->mech != DP_MECH_GAUSSIAN)
		return dp_error_set(DP_EINVAL, "plan: unknown mechanism %d", (int)req->mech);
	if (req->mech == DP_MECH_GAUSSIAN && req->deltas == NULL &&
	    !(req->delta > 0.0 && req->delta < 1.0))
		return dp_error_set(DP_EINVAL, "plan: Gaussian answers need a delta in (0, 1)");
	for (size_t i = 0; req->mech == DP_MECH_GAUSSIAN && req->deltas != NULL && i < req->N; i++)
		if (!(req->deltas[i] > 0.0 && req->deltas[i] < 1.0))
			return dp_error_set(DP_EINVAL, "plan: Gaussian answers need a delta in "
					    "(0, 1); owner %zu's is %g", i + 1, req->deltas[i]);
	if ((req->mech == DP_MECH_GAUSSIAN) != pub->l2)
		return dp_error_set(DP_EINVAL, "plan: %s answers need clip candidates in %s, and "
				    "the public constants hold %s ones",
				    dp_query_mech_name(req->mech),
				    req->mech == DP_MECH_GAUSSIAN ? "L2" : "L1", pub->l2 ? "L2" : "L1");
	return 0;
}

static void job_free(struct job *jb)
{
	free(jb->share);
	free(jb->mom);
	free(jb->rho_K);
	free(jb->rho_q);
	jb->share = NULL;
	jb->mom = NULL;
	jb->rho_K = NULL;
	jb->rho_q = NULL;
}

static int job_init(struct job *jb, const dp_plan_request *req, const dp_plan_public *pub)
{
	double rsum = 0.0;

	memset(jb, 0, sizeof(*jb));
	jb->req = req;
	jb->pub = pub;
	jb->share = calloc(req->N, sizeof(double));
	jb->mom = calloc(3 * pub->p, sizeof(double));
	jb->rho_K = calloc(req->N, sizeof(uint64_t));
	jb->rho_q = calloc(req->N, sizeof(double));
	if (jb->share == NULL || jb->mom == NULL || jb->rho_K == NULL || jb->rho_q == NULL) {
		job_free(jb);
		return DP_ENOMEM;
	}
	for (size_t i = 0; i < req->N; i++) {
		jb->n += (double)req->n_rows[i];
		rsum += req->rate ? req->rate[i] : 1.0;
	}
	for (size_t i = 0; i < req->N; i++) {
		double w = (double)req->n_rows[i] / jb->n;

		jb->share[i] = (req->rate ? req->rate[i] : 1.0) / rsum;
		if (w > jb->wmax)
			jb->wmax = w;
	}
	return 0;
}

/* The longest job the caps the user fixed allow: sync, T - 1 <= every
 * fixed K_i; async, with every K_i fixed, T <= their sum (an exhausted
 * owner drops out and the others go on, but no further). */
static size_t caps_t_limit(const dp_plan_request *req, size_t tmax)
{
	uint64_t sum = 0;
	bool all = true;

	if (req->answers_cap == NULL)
		return tmax;
	for (size_t i = 0; i < req->N; i++) {
		uint64_t k = req->answers_cap[i];

		if (k == 0) {
			all = false;
			continue;
		}
		if (req->mode != DP_PLAN_ASYNC && k < tmax - 1)
			tmax = (size_t)k + 1;
		sum = k > UINT64_MAX - sum ? UINT64_MAX : sum + k;
	}
	if (req->mode == DP_PLAN_ASYNC && all && sum < tmax)
		tmax = (size_t)sum;
	return tmax < 2 ? 2 : tmax;
}

/* The candidate whose clip is nearest (in ratio) to a clip the user set. */
static size_t nearest_clip(const dp_plan_public *pub, double clip)
{
	size_t best = 0;

	for (size_t c = 1; c < pub->nclip; c++)
		if (fabs(log(pub->clips[c].clip / clip)) < fabs(log(pub->clips[best].clip / clip)))
			best = c;
	return best;
}

double dp_plan_predict(const dp_plan_request *req, const dp_plan_public *pub, size_t T,
		       double step, size_t clip_index, const uint64_t *K, double *opt,
		       double *noise, double *clipbias)
{
	struct job jb;
	double psi;

	DP_REQUIRE(req != NULL && pub != NULL && K != NULL && clip_index < pub->nclip && T >= 1);
	if (job_init(&jb, req, pub) != 0)
		return NAN;
	psi = predict(&jb, T, step, clip_index, K, opt, noise, clipbias);
	job_free(&jb);
	return psi;
}

int dp_plan_make(const dp_plan_request *req, const dp_plan_public *pub, dp_plan *out)
{
	struct job jb;
	dp_plan pl = { 0 };
	uint64_t *K = NULL;
	size_t Ts[T_GRID], nT = 0, c_lo = 0, c_hi;
	double best = INFINITY;
	size_t bestT = 0, bestC = 0;
	double bestStep = 0.0;
	int rc;

	DP_REQUIRE(req != NULL && pub != NULL && out != NULL);
	rc = check(req, pub);
	if (rc != 0)
		return rc;
	rc = job_init(&jb, req, pub);
	if (rc != 0)
		return rc;
	K = calloc(req->N, sizeof(uint64_t));
	pl.answers_cap = calloc(req->N, sizeof(uint64_t));
	pl.share = calloc(req->N, sizeof(double));
	pl.alone = calloc(req->N, sizeof(double));
	pl.collaborate = calloc(req->N, sizeof(bool));
	if (K == NULL || pl.answers_cap == NULL || pl.share == NULL || pl.alone == NULL ||
	    pl.collaborate == NULL) {
		rc = DP_ENOMEM;
		goto out;
	}

	/* The T grid: geometric from a couple of rounds over the owners to
	 * T_max; or the user's T. */
	if (req->T != 0) {
		Ts[nT++] = req->T;
	} else {
		size_t tmax = req->T_max ? req->T_max : DP_PLAN_T_MAX;
		size_t tmin = req->mode == DP_PLAN_ASYNC ? 2 * req->N : 2;

		if (req->mode != DP_PLAN_ASYNC && tmax > SYNC_T_MAX)
			tmax = SYNC_T_MAX;
		tmax = caps_t_limit(req, tmax);
		if (tmin < 4)
			tmin = 4;
		if (tmin > tmax)
			tmin = tmax;
		for (size_t g = 0; g < T_GRID; g++) {
			double v = (double)tmin * pow((double)tmax / (double)tmin,
						      (double)g / (T_GRID - 1));
			size_t T;

			DP_REQUIRE(v >= 1.0 && v <= 2.0 * DP_PLAN_T_LIMIT);   /* tmax: check() */
			T = (size_t)llround(v);

			if (nT == 0 || T != Ts[nT - 1])
				Ts[nT++] = T;
		}
	}
	if (req->clip > 0) {
		c_lo = nearest_clip(pub, req->clip);
		c_hi = c_lo + 1;
	} else {
		c_hi = pub->nclip;
	}
	for (size_t ci = c_lo; ci < c_hi; ci++) {
		double smax = step_max(&jb, ci);

		for (size_t ti = 0; ti < nT; ti++) {
			size_t T = Ts[ti];

			caps_for(&jb, T, K);
			if (req->step > 0) {
				double v = predict(&jb, T, req->step, ci, K, NULL, NULL, NULL);

				if (v < best) {
					best = v;
					bestT = T;
					bestC = ci;
					bestStep = req->step;
				}
				continue;
			}
			/* A geometric grid over the step, then two rounds of
			 * refinement around the best point. */
			{
				double lo = smax / STEP_SPAN, hi = smax, bs = hi, bv = INFINITY;

				for (int round = 0; round < 3; round++) {
					for (int g = 0; g < STEP_GRID; g++) {
						double s = lo * pow(hi / lo, (double)g / (STEP_GRID - 1));
						double v = predict(&jb, T, s, ci, K, NULL, NULL, NULL);

						if (v < bv) {
							bv = v;
							bs = s;
						}
					}
					lo = bs / pow(hi / lo, 1.0 / (STEP_GRID - 1));
					hi = bs * pow(hi / (lo > 0 ? lo : hi), 1.0 / (STEP_GRID - 1));
					if (hi > smax)
						hi = smax;
					if (lo >= hi)
						break;
				}
				if (bv < best) {
					best = bv;
					bestT = T;
					bestC = ci;
					bestStep = bs;
				}
			}
		}
	}
	if (!isfinite(best) && jb.unpaid) {
		/* A budget, not the request, is what fails: say so. */
		rc = dp_error_set(DP_EBUDGET, "plan: no setting gives a finite prediction: an "
				  "owner's budget cannot pay its K_i Gaussian answers one nano-rho "
				  "each (docs/zcdp.md §7) at any T considered; lower T or raise "
				  "its epsilon");
		goto out;
	}
	if (!isfinite(best)) {
		rc = dp_error_set(DP_EINVAL, "plan: no setting gives a finite prediction");
		goto out;
	}
	pl.mode = req->mode;
	pl.N = req->N;
	pl.T = bestT;
	pl.step = bestStep;
	pl.clip = req->clip > 0 ? req->clip : pub->clips[bestC].clip;
	caps_for(&jb, bestT, pl.answers_cap);
	memcpy(pl.share, jb.share, req->N * sizeof(double));
	pl.psi = predict(&jb, bestT, bestStep, bestC, pl.answers_cap, &pl.psi_opt, &pl.psi_noise,
			 &pl.psi_clip);
	pl.psi_zero = pub->f_zero / pub->f_star - 1.0;
	pl.worse_than_zero = pl.psi >= pl.psi_zero;
	pl.measured = pub->measured;
	/* An owner's own model is judged where the joint one is, on the union
	 * of the owners' rows: on the n - n_i others it loses A/n_i (fresh
	 * rows), on its own n_i it gains as much (in-sample optimism), so
	 * (1 - 2 n_i/n) A/n_i in all; a single owner's model is the optimum. */
	for (size_t i = 0; i < req->N; i++) {
		double ni = (double)req->n_rows[i], frac = 1.0 - 2.0 * ni / jb.n;

		pl.alone[i] = (frac > 0.0 ? frac : 0.0) * pub->alone / (ni * pub->f_star);
		pl.collaborate[i] = pl.psi < pl.alone[i];
	}
	/* The sample is public: a model fitted on it alone costs no budget,
	 * and the private model is only worth its budget if it beats it. */
	pl.public_only = pub->rows > 0 ? pub->alone / ((double)pub->rows * pub->f_star) : NAN;
	pl.public_better = pub->rows > 0 && pl.public_only < pl.psi;
	*out = pl;
	memset(&pl, 0, sizeof(pl));
	rc = 0;
out:
	dp_plan_free(&pl);
	free(K);
	job_free(&jb);
	return rc;
}

void dp_plan_warnings(const dp_plan *pl, const dp_plan_public *pub, char *buf, size_t size)
{
	size_t used = 0, nalone = 0;
	double best_alone = 0.0;
	int n;

	DP_REQUIRE(pl != NULL && pub != NULL && buf != NULL && size > 0);
	buf[0] = '\0';
	if (pl->worse_than_zero) {
		n = snprintf(buf + used, size - used,
			     "%sthe private model is predicted worse than the all-zero model "
			     "(psi %.3g >= %.3g): more rows, a larger budget or fewer features are "
			     "needed", used ? "\n" : "", pl->psi, pl->psi_zero);
		if (n > 0)
			used += (size_t)n < size - used ? (size_t)n : size - used - 1;
	}
	for (size_t i = 0; i < pl->N; i++) {
		if (pl->collaborate[i])
			continue;
		if (nalone == 0 || pl->alone[i] < best_alone)
			best_alone = pl->alone[i];
		nalone++;
	}
	if (nalone > 0 && used < size) {
		n = snprintf(buf + used, size - used,
			     "%scollaborating is predicted not to pay for %zu of %zu owners: their own "
			     "non-private models (psi %.3g at best) beat the private joint model "
			     "(psi %.3g)", used ? "\n" : "", nalone, pl->N, best_alone, pl->psi);
		if (n > 0)
			used += (size_t)n < size - used ? (size_t)n : size - used - 1;
	}
	if (pl->public_better && used < size) {
		n = snprintf(buf + used, size - used,
			     "%sa non-private model fitted on the public sample alone (%zu rows) is "
			     "predicted better (psi %.3g) than the private joint model (psi %.3g)",
			     used ? "\n" : "", pub->rows, pl->public_only, pl->psi);
		if (n > 0)
			used += (size_t)n < size - used ? (size_t)n : size - used - 1;
	}
	if (!pub->measured && used < size) {
		n = snprintf(buf + used, size - used, "%sno public sample: %s", used ? "\n" : "",
			     pub->source);
		if (n > 0)
			used += (size_t)n < size - used ? (size_t)n : size - used - 1;
	}
}

double dp_plan_mech_line(const dp_plan *lap, const dp_plan *gau, double delta, char *buf,
			 size_t size, bool *gauss_lower)
{
	bool g = gau->psi < lap->psi;
	double factor = g ? lap->psi / gau->psi : gau->psi / lap->psi;

	DP_REQUIRE(lap != NULL && gau != NULL && buf != NULL && size > 0);
	snprintf(buf, size, "predicted psi: laplace %.4g, gaussian %.4g (delta %g): %s is lower "
		 "by %.3gx", lap->psi, gau->psi, delta, g ? "gaussian" : "laplace", factor);
	if (gauss_lower != NULL)
		*gauss_lower = g;
	return factor;
}

struct json_object *dp_plan_json(const dp_plan *pl)
{
	struct json_object *o = json_object_new_object(), *parts = json_object_new_object();
	struct json_object *caps = json_object_new_array(), *collab = json_object_new_array();
	const char *stepkey = pl->mode == DP_PLAN_ASYNC ? "eta"
			      : pl->mode == DP_PLAN_SYNC1 ? "rho_over_T2" : "c";
	int rc = 0;

	if (o == NULL || parts == NULL || caps == NULL || collab == NULL) {
		json_object_put(o);
		json_object_put(parts);
		json_object_put(caps);
		json_object_put(collab);
		return NULL;
	}
	for (size_t i = 0; rc == 0 && i < pl->N; i++)
		rc = dp_json_push(caps, json_object_new_uint64(pl->answers_cap[i]));
	for (size_t i = 0; rc == 0 && i < pl->N; i++)
		rc = dp_json_push(collab, json_object_new_boolean(pl->collaborate[i]));
	if (rc == 0)
		rc = dp_json_add(parts, "optimisation", dp_json_double(pl->psi_opt));
	if (rc == 0)
		rc = dp_json_add(parts, "noise", dp_json_double(pl->psi_noise));
	if (rc == 0)
		rc = dp_json_add(parts, "clip", dp_json_double(pl->psi_clip));
	if (rc == 0)
		rc = dp_json_add(o, "mode", json_object_new_string(dp_plan_mode_name(pl->mode)));
	if (rc == 0)
		rc = dp_json_add(o, "T", json_object_new_uint64(pl->T));
	if (rc == 0)
		rc = dp_json_add(o, stepkey, dp_json_double(pl->step));
	if (rc == 0)
		rc = dp_json_add(o, "clip", dp_json_double(pl->clip));
	if (rc == 0) {
		rc = dp_json_add(o, "answers_cap", caps);
		caps = NULL;
	}
	if (rc == 0)
		rc = dp_json_add(o, "share", dp_json_double_array(pl->share, pl->N));
	if (rc == 0)
		rc = dp_json_add(o, "psi_mean", dp_json_double(pl->psi));
	if (rc == 0) {
		rc = dp_json_add(o, "psi_parts", parts);
		parts = NULL;
	}
	if (rc == 0)
		rc = dp_json_add(o, "psi_zero", dp_json_double(pl->psi_zero));
	if (rc == 0)
		rc = dp_json_add(o, "alone", dp_json_double_array(pl->alone, pl->N));
	if (rc == 0) {
		rc = dp_json_add(o, "collaborate", collab);
		collab = NULL;
	}
	if (rc == 0 && isnan(pl->public_only))
		rc = dp_json_add_null(o, "public_only");
	else if (rc == 0)
		rc = dp_json_add(o, "public_only", dp_json_double(pl->public_only));
	if (rc == 0)
		rc = dp_json_add(o, "measured", json_object_new_boolean(pl->measured));
	json_object_put(parts);
	json_object_put(caps);
	json_object_put(collab);
	if (rc != 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

void dp_plan_free(dp_plan *pl)
{
	if (pl == NULL)
		return;
	free(pl->answers_cap);
	free(pl->share);
	free(pl->alone);
	free(pl->collaborate);
	memset(pl, 0, sizeof(*pl));
}
