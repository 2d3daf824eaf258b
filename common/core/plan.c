/* SPDX-License-Identifier: Apache-2.0 */
/* The planner's model and search; the mathematics is in docs/planner.md. */
#include "common/core/plan.h"
#include "common/core/error.h"
#include "common/core/json.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PUBLIC_MAX ((size_t)64 << 20)

/* Shape-only assumptions (docs/planner.md "Without a public sample"). */
#define SHAPE_R2       0.5   /* share of the target's variance a linear model explains */
#define SHAPE_MARGIN   1.5   /* sd of the true score theta^T x (classification) */
#define SHAPE_SVM_FSTAR 0.6  /* hinge at the optimum, assumed */

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

/* ---- public constants ------------------------------------------------------ */

void dp_plan_public_free(dp_plan_public *pub)
{
	if (pub == NULL)
		return;
	for (size_t c = 0; pub->clips != NULL && c < pub->nclip; c++) {
		free(pub->clips[c].h);
		free(pub->clips[c].t);
		free(pub->clips[c].hf);
		free(pub->clips[c].hs);
		free(pub->clips[c].tau);
		free(pub->clips[c].path_f);
		free(pub->clips[c].path_h);
	}
	free(pub->clips);
	memset(pub, 0, sizeof(*pub));
}

static int alloc_clips(dp_plan_public *pub, size_t nclip)
{
	pub->clips = calloc(nclip, sizeof(*pub->clips));
	if (pub->clips == NULL)
		return DP_ENOMEM;
	pub->nclip = nclip;
	for (size_t c = 0; c < nclip; c++) {
		pub->clips[c].h = calloc(pub->p, sizeof(double));
		pub->clips[c].t = calloc(pub->p, sizeof(double));
		pub->clips[c].hf = calloc(pub->p, sizeof(double));
		if (pub->clips[c].h == NULL || pub->clips[c].t == NULL || pub->clips[c].hf == NULL)
			return DP_ENOMEM;
	}
	return 0;
}

static double normal_cdf(double x)
{
	return 0.5 * erfc(-x / sqrt(2.0));
}

static double sigmoid(double z)
{
	return z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z));
}

/* Expectations over the true score z ~ N(0, s^2) and y = +1 with
 * probability sigmoid(z): trapezoid rule on [-8s, 8s], which is exact to
 * far better than the assumptions it serves. */
struct score_moments {
	double f_star;      /* logistic: entropy of the label; svm: unused */
	double curv;        /* E[curvature], logistic sigma' or smoothed hinge */
	double active;      /* svm: P(y z < 1) */
};

static double coef_abs_quantile_frac(double g, double s)
{
	/* P(|c| <= g) for logistic, c = sigma(-y z). */
	const int n = 801;
	double acc = 0.0, wsum = 0.0;

	for (int i = 0; i < n; i++) {
		double z = -8.0 * s + 16.0 * s * i / (n - 1);
		double w = exp(-0.5 * (z / s) * (z / s)) * (i == 0 || i == n - 1 ? 0.5 : 1.0);
		double pp = sigmoid(z);

		acc += w * (pp * (sigmoid(-z) <= g) + (1.0 - pp) * (sigmoid(z) <= g));
		wsum += w;
	}
	return acc / wsum;
}

static struct score_moments score_moments(dp_model model, double s, double clip_g)
{
	struct score_moments m = { 0 };
	const int n = 801;
	double wsum = 0.0;

	for (int i = 0; i < n; i++) {
		double z = -8.0 * s + 16.0 * s * i / (n - 1);
		double w = exp(-0.5 * (z / s) * (z / s)) * (i == 0 || i == n - 1 ? 0.5 : 1.0);
		double pp = sigmoid(z), qq = 1.0 - pp;

		wsum += w;
		if (model == DP_MODEL_LOGISTIC) {
			double ent = 0.0, sp = pp * qq;

			if (pp > 0.0)
				ent -= pp * log(pp);
			if (qq > 0.0)
				ent -= qq * log(qq);
			m.f_star += w * ent;
			/* Curvature of the rows left unclipped (|c| <= clip_g). */
			m.curv += w * sp * (pp * (sigmoid(-z) <= clip_g) + qq * (sigmoid(z) <= clip_g));
		} else {
			/* Hinge smoothed over a unit width: curvature 1 on 0 < yz < 1. */
			double in_p = (z > 0.0 && z < 1.0), in_q = (-z > 0.0 && -z < 1.0);

			m.curv += w * (pp * in_p + qq * in_q);
			m.active += w * (pp * (z < 1.0) + qq * (-z < 1.0));
		}
	}
	m.f_star /= wsum;
	m.curv /= wsum;
	m.active /= wsum;
	return m;
}

int dp_plan_public_shape(dp_model model, size_t p, double lambda, dp_plan_public *out)
{
	/* |r| quantiles of a normal residual, for q = 0.5 .. 0.999: z((1+q)/2). */
	static const double lin_q[] = { 0.5, 0.75, 0.9, 0.95, 0.99, 0.999 };
	static const double lin_z[] = { 0.6745, 1.1503, 1.6449, 1.9600, 2.5758, 3.2905 };
	static const double cls_g[] = { 0.25, 0.5, 0.75, 0.9, 1.0 };
	dp_plan_public pub = { 0 };
	double l1 = (double)p * sqrt(2.0 / M_PI);   /* E ||x||_1 of standardised features */
	size_t nclip;
	int rc;

	if (p == 0 || !(lambda >= 0.0) || !isfinite(lambda))
		return dp_error_set(DP_EINVAL, "plan: bad shape p=%zu lambda=%g", p, lambda);
	pub.model = model;
	pub.p = p;
	pub.lambda = lambda;
	pub.measured = false;
	nclip = model == DP_MODEL_LINEAR ? sizeof(lin_q) / sizeof(lin_q[0])
					 : sizeof(cls_g) / sizeof(cls_g[0]);
	rc = alloc_clips(&pub, nclip);
	if (rc != 0) {
		dp_plan_public_free(&pub);
		return rc;
	}
	if (model == DP_MODEL_LINEAR) {
		double sig2 = 1.0 - SHAPE_R2, tk = sqrt(SHAPE_R2 / (double)p) / (1.0 + lambda);

		pub.f_zero = 1.0;
		pub.f_star = sig2 + sig2 * lambda / (1.0 + lambda) * 0.0 +
			     SHAPE_R2 * lambda / (1.0 + lambda);
		pub.alone = 0.5 * (double)p * 4.0 * sig2 / (2.0 * (1.0 + lambda));
		pub.h_safe = 2.0 * (double)p;
		for (size_t c = 0; c < nclip; c++) {
			dp_plan_clip *k = &pub.clips[c];

			k->clip = 2.0 * sqrt(sig2) * lin_z[c] * l1;
			k->f_clip = pub.f_star;   /* symmetric residuals: no clip bias */
			for (size_t q = 0; q < p; q++) {
				k->h[q] = 2.0 * lin_q[c];
				k->t[q] = tk;
				k->hf[q] = 2.0;
			}
		}
	} else {
		struct score_moments all = score_moments(model, SHAPE_MARGIN, 2.0);
		double tk = SHAPE_MARGIN / sqrt((double)p);

		pub.f_zero = model == DP_MODEL_LOGISTIC ? log(2.0) : 1.0;
		pub.f_star = model == DP_MODEL_LOGISTIC ? all.f_star : SHAPE_SVM_FSTAR;
		/* Well specified: G = H, so tr(H^-1 G)/2 = p/2 (logistic); the
		 * hinge is treated alike. */
		pub.alone = 0.5 * (double)p;
		pub.h_safe = model == DP_MODEL_LOGISTIC ? 0.25 * (double)p : (double)p;
		for (size_t c = 0; c < nclip; c++) {
			dp_plan_clip *k = &pub.clips[c];
			double hk;

			if (model == DP_MODEL_LOGISTIC) {
				k->clip = cls_g[c] * l1;
				hk = score_moments(model, SHAPE_MARGIN, cls_g[c]).curv;
			} else {
				/* Hinge gradients are x or 0: clip relative to ||x||_1,
				 * whose spread is about sd 0.6 sqrt(p). */
				double g = 0.75 + 0.25 * (double)c;
				double sd = sqrt((double)p * (1.0 - 2.0 / M_PI));

				k->clip = g * l1;
				hk = all.curv * normal_cdf((k->clip - l1) / (sd > 0 ? sd : 1.0));
			}
			k->f_clip = pub.f_star;
			for (size_t q = 0; q < p; q++) {
				k->h[q] = hk;
				k->t[q] = tk;
				k->hf[q] = all.curv;
			}
		}
		(void)coef_abs_quantile_frac;
	}
	snprintf(pub.source, sizeof(pub.source),
		 "assumed from the data's shape (p=%zu, standardised features%s); give a public "
		 "sample for a forecast of this data", p,
		 model == DP_MODEL_LINEAR ? ", R^2 = 0.5" : ", moderate margins");
	*out = pub;
	return 0;
}

/* "tau", "path_f", "path_h" of one candidate into e. */
static int path_json(struct json_object *e, const dp_plan_clip *k, size_t p)
{
	struct json_object *rows = json_object_new_array();
	int rc = rows != NULL ? 0 : DP_ENOMEM;

	for (size_t s = 0; rc == 0 && s < k->npath; s++)
		rc = dp_json_push(rows, dp_json_double_array(k->path_h + s * p, p));
	if (rc != 0) {
		json_object_put(rows);
		return rc;
	}
	rc = dp_json_add(e, "tau", dp_json_double_array(k->tau, k->npath));
	if (rc == 0)
		rc = dp_json_add(e, "path_f", dp_json_double_array(k->path_f, k->npath));
	if (rc == 0)
		return dp_json_add(e, "path_h", rows);
	json_object_put(rows);
	return rc;
}

struct json_object *dp_plan_public_json(const dp_plan_public *pub)
{
	struct json_object *o = json_object_new_object(), *clips = json_object_new_array();
	int rc = 0;

	if (o == NULL || clips == NULL) {
		json_object_put(o);
		json_object_put(clips);
		return NULL;
	}
	rc = dp_json_add(o, "model", json_object_new_string(dp_model_name(pub->model)));
	if (rc == 0)
		rc = dp_json_add(o, "p", json_object_new_uint64(pub->p));
	if (rc == 0)
		rc = dp_json_add(o, "lambda", dp_json_double(pub->lambda));
	if (rc == 0)
		rc = dp_json_add(o, "f_star", dp_json_double(pub->f_star));
	if (rc == 0)
		rc = dp_json_add(o, "f_zero", dp_json_double(pub->f_zero));
	if (rc == 0)
		rc = dp_json_add(o, "alone", dp_json_double(pub->alone));
	if (rc == 0)
		rc = dp_json_add(o, "rows", json_object_new_uint64(pub->rows));
	if (rc == 0)
		rc = dp_json_add(o, "h_safe", dp_json_double(pub->h_safe));
	if (rc == 0)
		rc = dp_json_add(o, "measured", json_object_new_boolean(pub->measured));
	if (rc == 0)
		rc = dp_json_add(o, "source", json_object_new_string(pub->source));
	for (size_t c = 0; rc == 0 && c < pub->nclip; c++) {
		const dp_plan_clip *k = &pub->clips[c];
		struct json_object *e = json_object_new_object();

		rc = dp_json_push(clips, e);
		if (rc == 0)
			rc = dp_json_add(e, "clip", dp_json_double(k->clip));
		if (rc == 0)
			rc = dp_json_add(e, "f_clip", dp_json_double(k->f_clip));
		if (rc == 0)
			rc = dp_json_add(e, "h", dp_json_double_array(k->h, pub->p));
		if (rc == 0)
			rc = dp_json_add(e, "t", dp_json_double_array(k->t, pub->p));
		if (rc == 0)
			rc = dp_json_add(e, "hf", dp_json_double_array(k->hf, pub->p));
		if (rc == 0 && k->hs != NULL)
			rc = dp_json_add(e, "hs", dp_json_double_array(k->hs, pub->p));
		if (rc == 0 && k->npath > 0)
			rc = path_json(e, k, pub->p);
	}
	if (rc == 0)
		rc = dp_json_add(o, "clips", clips);
	else
		json_object_put(clips);
	if (rc != 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* The path of one candidate, when "tau" is there: tau[0] = 0 and
 * increasing, as many path_f, and as many path_h rows of p curvatures >=
 * 0.  Errors through r; DP_ENOMEM returned. */
static int path_parse(dp_json_reader *r, struct json_object *e, dp_plan_clip *k, size_t p)
{
	struct json_object *tau, *rows;
	size_t n;

	tau = dp_json_get(r, e, "tau", json_type_array, false);
	if (tau == NULL || r->rc != 0)
		return 0;
	n = json_object_array_length(tau);
	if (n < 2 || n > DP_PLAN_PATH_MAX) {
		dp_json_fail(r, "'tau' must hold 2..%d times", DP_PLAN_PATH_MAX);
		return 0;
	}
	k->tau = calloc(n, sizeof(double));
	k->path_f = calloc(n, sizeof(double));
	k->path_h = calloc(n * p, sizeof(double));
	if (k->tau == NULL || k->path_f == NULL || k->path_h == NULL)
		return DP_ENOMEM;
	k->npath = n;
	dp_json_get_doubles(r, e, "tau", k->tau, n);
	dp_json_get_doubles(r, e, "path_f", k->path_f, n);
	rows = dp_json_get(r, e, "path_h", json_type_array, true);
	if (r->rc == 0 && json_object_array_length(rows) != n)
		dp_json_fail(r, "'path_h' must have %zu rows, one per time", n);
	for (size_t s = 0; r->rc == 0 && s < n; s++) {
		struct json_object *row = json_object_array_get_idx(rows, s);

		if (!json_object_is_type(row, json_type_array) ||
		    json_object_array_length(row) != p) {
			dp_json_fail(r, "'path_h' rows must be arrays of %zu numbers", p);
			break;
		}
		for (size_t q = 0; r->rc == 0 && q < p; q++) {
			double v = dp_json_number(r, json_object_array_get_idx(row, q), "path_h", 0);

			if (r->rc == 0 && !(v >= 0.0))
				dp_json_fail(r, "curvatures 'path_h' must be >= 0");
			k->path_h[s * p + q] = v;
		}
	}
	if (r->rc == 0 && k->tau[0] != 0.0)
		dp_json_fail(r, "'tau' must start at 0");
	for (size_t s = 1; r->rc == 0 && s < n; s++)
		if (!(k->tau[s] > k->tau[s - 1]))
			dp_json_fail(r, "'tau' must increase");
	return 0;
}

int dp_plan_public_parse(const char *path, struct json_object *o, dp_plan_public *out)
{
	static const char *const keys[] = { "model", "p", "lambda", "f_star", "f_zero", "alone",
					    "rows", "h_safe", "measured", "source", "clips" };
	static const char *const ckeys[] = { "clip", "f_clip", "h", "t", "hf", "hs", "tau",
					     "path_f", "path_h" };
	dp_json_reader r = { .path = path };
	dp_plan_public pub = { 0 };
	struct json_object *inner = NULL, *clips;
	const char *s;
	char where[48];
	size_t nclip;
	int rc;

	if (json_object_object_get_ex(o, "public", &inner)) {
		r.where = "public";
		if (!json_object_is_type(inner, json_type_object))
			return dp_json_fail(&r, "must be an object");
		o = inner;
	}
	dp_json_only_keys(&r, o, keys, sizeof(keys) / sizeof(keys[0]));
	s = dp_json_get_string(&r, o, "model", true, "linear");
	if (r.rc == 0 && dp_model_parse(s, &pub.model) != 0)
		dp_json_fail(&r, "unknown model '%s'", s);
	pub.p = (size_t)dp_json_get_u64(&r, o, "p", true, 0);
	if (r.rc == 0 && (pub.p == 0 || pub.p > (1u << 20)))
		dp_json_fail(&r, "'p' must be 1..%u", 1u << 20);
	pub.lambda = dp_json_get_double(&r, o, "lambda", true, 0.0);
	pub.f_star = dp_json_get_double(&r, o, "f_star", true, 1.0);
	pub.f_zero = dp_json_get_double(&r, o, "f_zero", true, 1.0);
	pub.alone = dp_json_get_double(&r, o, "alone", true, 0.0);
	pub.rows = (size_t)dp_json_get_u64(&r, o, "rows", false, 0);   /* older files: none */
	pub.h_safe = dp_json_get_double(&r, o, "h_safe", true, 1.0);
	pub.measured = dp_json_get_bool(&r, o, "measured", true, false);
	s = dp_json_get_string(&r, o, "source", false, "");
	snprintf(pub.source, sizeof(pub.source), "%s", s);
	if (r.rc == 0 && !(pub.f_star > 0.0 && pub.f_zero >= 0.0 && pub.alone >= 0.0 &&
			   pub.h_safe > 0.0 && pub.lambda >= 0.0))
		dp_json_fail(&r, "f_star and h_safe must be > 0; f_zero, alone, lambda >= 0");
	clips = dp_json_get(&r, o, "clips", json_type_array, true);
	if (r.rc != 0)
		return r.rc;
	nclip = json_object_array_length(clips);
	if (nclip == 0 || nclip > 64)
		return dp_json_fail(&r, "'clips' must hold 1..64 candidates");
	rc = alloc_clips(&pub, nclip);
	if (rc != 0) {
		dp_plan_public_free(&pub);
		return dp_error_set(rc, "%s: out of memory", path);
	}
	for (size_t c = 0; c < nclip && r.rc == 0; c++) {
		struct json_object *e = json_object_array_get_idx(clips, c);
		dp_plan_clip *k = &pub.clips[c];

		snprintf(where, sizeof(where), "clips[%zu]", c);
		r.where = where;
		if (!json_object_is_type(e, json_type_object)) {
			dp_json_fail(&r, "must be an object");
			break;
		}
		dp_json_only_keys(&r, e, ckeys, sizeof(ckeys) / sizeof(ckeys[0]));
		k->clip = dp_json_get_double(&r, e, "clip", true, 1.0);
		k->f_clip = dp_json_get_double(&r, e, "f_clip", true, 1.0);
		dp_json_get_doubles(&r, e, "h", k->h, pub.p);
		dp_json_get_doubles(&r, e, "t", k->t, pub.p);
		dp_json_get_doubles(&r, e, "hf", k->hf, pub.p);
		if (r.rc == 0 && json_object_object_get_ex(e, "hs", NULL)) {
			k->hs = calloc(pub.p, sizeof(double));
			if (k->hs == NULL) {
				dp_plan_public_free(&pub);
				return dp_error_set(DP_ENOMEM, "%s: out of memory", path);
			}
			dp_json_get_doubles(&r, e, "hs", k->hs, pub.p);
			for (size_t q = 0; r.rc == 0 && q < pub.p; q++)
				if (!(k->hs[q] > 0.0))
					dp_json_fail(&r, "secant curvatures 'hs' must be > 0");
		}
		if (r.rc == 0 && path_parse(&r, e, k, pub.p) != 0) {
			dp_plan_public_free(&pub);
			return dp_error_set(DP_ENOMEM, "%s: out of memory", path);
		}
		if (r.rc == 0 && !(k->clip > 0.0 && k->f_clip >= pub.f_star * (1.0 - 1e-9)))
			dp_json_fail(&r, "'clip' must be > 0 and 'f_clip' >= f_star");
		for (size_t q = 0; r.rc == 0 && q < pub.p; q++)
			if (k->h[q] < 0.0 || k->hf[q] < 0.0)
				dp_json_fail(&r, "curvatures 'h' and 'hf' must be >= 0");
	}
	if (r.rc != 0) {
		dp_plan_public_free(&pub);
		return r.rc;
	}
	*out = pub;
	return 0;
}

int dp_plan_public_read(const char *path, dp_plan_public *out)
{
	struct json_object *o = NULL;
	int rc = dp_json_read_file(path, PUBLIC_MAX, &o);

	if (rc != 0)
		return rc;
	rc = dp_plan_public_parse(path, o, out);
	json_object_put(o);
	return rc;
}

/* ---- the async recursion --------------------------------------------------- */

/* State per direction: the means a = E theta_L, b = E theta_i, the second
 * moments P = E theta_L^2, Q = E theta_L theta_j, R = E theta_j^2,
 * S = E theta_j theta_k (j != k), a constant 1 and the noise input nu (the
 * per-step noise variance E[(eta w_i xi)^2] / eta^2, held constant).  One
 * iteration is an affine map, i.e. an 8x8 matrix M; T iterations are M^T,
 * by repeated squaring. */
enum { A_, B_, P_, Q_, R_, S_, ONE_, NU_, DIM_ };

typedef double mat8[DIM_][DIM_];

static void mat_mul(const mat8 x, const mat8 y, mat8 out)
{
	mat8 tmp;

	for (int i = 0; i < DIM_; i++) {
		for (int j = 0; j < DIM_; j++) {
			double s = 0.0;

			for (int k = 0; k < DIM_; k++)
				s += x[i][k] * y[k][j];
			tmp[i][j] = s;
		}
	}
	memcpy(out, tmp, sizeof(tmp));
}

static void mat_pow(const mat8 m, uint64_t e, mat8 out)
{
	mat8 base, acc;

	memcpy(base, m, sizeof(base));
	memset(acc, 0, sizeof(acc));
	for (int i = 0; i < DIM_; i++)
		acc[i][i] = 1.0;
	while (e != 0) {
		if (e & 1)
			mat_mul(acc, base, acc);
		e >>= 1;
		if (e != 0)
			mat_mul(base, base, base);
	}
	memcpy(out, acc, sizeof(acc));
}

/* One direction with curvature h and target t; eta the owner step; N
 * owners picked with equal probability.  Fills m. */
static void async_matrix(double h, double t, double lambda, double N, double eta, mat8 m)
{
	double w = 1.0 / N, I = 1.0 / N, J = 1.0 - 1.0 / N;
	double beta = 1.0 - eta * lambda / N - eta * w * h;
	double gam = 1.0 - 2.0 * lambda * eta * (N - 1.0) / (N * N);
	double d = eta * w * t * (h + 2.0 * lambda);

	memset(m, 0, sizeof(mat8));
	/* midpoint bar = (theta_L + theta_i)/2: E bar = (a+b)/2, E bar^2 = (P+2Q+R)/4 */
	m[A_][A_] = gam / 2;
	m[A_][B_] = gam / 2;
	m[B_][A_] = beta * I / 2;
	m[B_][B_] = beta * I / 2 + J;
	m[B_][ONE_] = d * I;
	m[P_][P_] = gam * gam / 4;
	m[P_][Q_] = gam * gam / 2;
	m[P_][R_] = gam * gam / 4;
	m[Q_][P_] = gam * beta * I / 4;
	m[Q_][Q_] = gam * beta * I / 2 + J * gam / 2;
	m[Q_][R_] = gam * beta * I / 4;
	m[Q_][S_] = J * gam / 2;
	m[Q_][A_] = gam * d * I / 2;
	m[Q_][B_] = gam * d * I / 2;
	m[R_][P_] = beta * beta * I / 4;
	m[R_][Q_] = beta * beta * I / 2;
	m[R_][R_] = beta * beta * I / 4 + J;
	m[R_][A_] = beta * d * I;
	m[R_][B_] = beta * d * I;
	m[R_][ONE_] = d * d * I;
	m[R_][NU_] = eta * eta * I;
	if (N > 1.0) {
		m[S_][Q_] = beta * I;
		m[S_][S_] = beta * I + 1.0 - 2.0 * I;
		m[S_][B_] = 2.0 * d * I;
	} else {
		m[S_][S_] = 1.0;
	}
	m[ONE_][ONE_] = 1.0;
	m[NU_][NU_] = 1.0;
}

/* Where a run of T iterations from theta = 0 ends, per direction q: the
 * mean error m[q] = E theta_L - t, the spread the run itself gives
 * vd[q] (which owner each iteration picks), and the noise gain vn[q]
 * (variance per unit of the noise input nu).  `secant`: the means and the
 * spread with the secant curvatures hs (the model without a path), else
 * with h. */
static void async_moments(const dp_plan_clip *k, size_t p, double lambda, double N, size_t T,
			  double eta, bool secant, double *m, double *vd, double *vn)
{
	mat8 mx, mt;

	for (size_t q = 0; q < p; q++) {
		double t = k->t[q], a;

		async_matrix(k->h[q], t, lambda, N, eta, mx);
		mat_pow(mx, T, mt);
		/* From theta = 0: only the constants are non-zero. */
		vn[q] = mt[P_][NU_];
		if (secant && k->hs != NULL && k->hs[q] != k->h[q]) {
			async_matrix(k->hs[q], t, lambda, N, eta, mx);
			mat_pow(mx, T, mt);
		}
		a = mt[A_][ONE_];
		m[q] = a - t;
		vd[q] = mt[P_][ONE_] - a * a;
	}
}

/* ---- the sync recursions --------------------------------------------------- */

/* Per direction, e = theta - t: sync1 e' = (1 - s_k H) e - s_k zeta with
 * s_k = step / k; sync2 the same with s_k = c / sqrt(k) and the output the
 * running average (docs/design.md §5).  Means and variances are tracked
 * with the noise variance factored out (var = sigma2 * gain); the run
 * itself is deterministic (vd = 0). */
static void sync_moments(enum dp_plan_mode mode, const dp_plan_clip *k, size_t p, double lambda,
			 size_t T, double step, bool secant, double *m, double *vd, double *vn)
{
	double a_sq = 1.0 / sqrt((double)T);

	for (size_t q = 0; q < p; q++) {
		double H = k->h[q] + 2.0 * lambda, t = k->t[q];
		double Hs = (secant && k->hs != NULL ? k->hs[q] : k->h[q]) + 2.0 * lambda;
		double me = -t, ve = 0.0;              /* iterate: mean error, noise variance / sigma2 */
		double mh = 0.0, vh = 0.0, ch = 0.0;   /* average: mean, variance, covariance */

		mh = -t;   /* theta_hat starts at theta[1] = 0 */
		for (size_t kk = 1; kk < T; kk++) {
			double s = mode == DP_PLAN_SYNC1 ? step / (double)kk : step / sqrt((double)kk);
			double g = 1.0 - s * H, gs = 1.0 - s * Hs;

			if (mode == DP_PLAN_SYNC2) {
				double wo = ((double)kk - 1.0) / (a_sq + (double)kk);
				double wn = (a_sq + 1.0) / (a_sq + (double)kk);
				double nvh = wo * wo * vh + 2.0 * wo * wn * ch + wn * wn * ve;

				ch = g * (wo * ch + wn * ve);
				mh = wo * mh + wn * me;
				vh = nvh;
			}
			me = gs * me;
			ve = g * g * ve + s * s;
		}
		m[q] = mode == DP_PLAN_SYNC2 ? mh : me;
		vd[q] = 0.0;
		vn[q] = mode == DP_PLAN_SYNC2 ? vh : ve;
	}
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
};

/* Noise input: async E over the owner picked of (w_i b_i)^2 * 2, i.e.
 * sum_i pi_i w_i^2 2 b_i^2; sync: sum_i w_i^2 2 b_i^2 per step. */
static double noise_input(const struct job *jb, double clip, const uint64_t *K)
{
	const dp_plan_request *req = jb->req;
	double nu = 0.0;

	for (size_t i = 0; i < req->N; i++) {
		double w = (double)req->n_rows[i] / jb->n, b;

		if (isinf(req->epsilon[i]))
			continue;
		b = 2.0 * clip * (double)K[i] / ((double)req->n_rows[i] * req->epsilon[i]);
		nu += (req->mode == DP_PLAN_ASYNC ? jb->share[i] : 1.0) * w * w * 2.0 * b * b;
	}
	return nu;
}

static double predict(const struct job *jb, size_t T, double step, size_t ci, const uint64_t *K,
		      double *opt, double *noise, double *clipbias)
{
	const dp_plan_public *pub = jb->pub;
	const dp_plan_clip *k = &pub->clips[ci];
	double clip = jb->req->clip > 0 ? jb->req->clip : k->clip;
	double o, g, nu = noise_input(jb, clip, K), cb = k->f_clip - pub->f_star;
	double *m = jb->mom, *vd = jb->mom + pub->p, *vn = jb->mom + 2 * pub->p;
	bool secant = k->npath < 2;

	if (jb->req->mode == DP_PLAN_ASYNC)
		async_moments(k, pub->p, pub->lambda, (double)jb->req->N, T, step, secant, m, vd,
			      vn);
	else
		sync_moments(jb->req->mode, k, pub->p, pub->lambda, T, step, secant, m, vd, vn);
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
 * budget is spent and a few stragglers do not stop the job short of T. */
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
			K[i] = T > 1 ? T - 1 : 1;
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
	return 0;
}

static void job_free(struct job *jb)
{
	free(jb->share);
	free(jb->mom);
	jb->share = NULL;
	jb->mom = NULL;
}

static int job_init(struct job *jb, const dp_plan_request *req, const dp_plan_public *pub)
{
	double rsum = 0.0;

	memset(jb, 0, sizeof(*jb));
	jb->req = req;
	jb->pub = pub;
	jb->share = calloc(req->N, sizeof(double));
	jb->mom = calloc(3 * pub->p, sizeof(double));
	if (jb->share == NULL || jb->mom == NULL) {
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
