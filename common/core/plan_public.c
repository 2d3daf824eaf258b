/* SPDX-License-Identifier: Apache-2.0 */
/* The planner's public constants: assumed from the data's shape, and their
 * JSON file (docs/planner.md "Without a public sample", plan.h).  Measuring
 * them on a public sample is tools/lib/public.c. */
#include "common/core/plan.h"
#include "common/core/csv.h"
#include "common/core/error.h"
#include "common/core/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PUBLIC_MAX ((size_t)64 << 20)

/* Shape-only assumptions (docs/planner.md "Without a public sample"). */
#define SHAPE_R2       0.5   /* share of the target's variance a linear model explains */
#define SHAPE_MARGIN   1.5   /* sd of the true score theta^T x (classification) */
#define SHAPE_SVM_FSTAR 0.6  /* hinge at the optimum, assumed */

static void free_names(dp_plan_public *pub)
{
	for (size_t q = 0; pub->features != NULL && q < pub->p; q++)
		free(pub->features[q]);
	free(pub->features);
	free(pub->target);
	pub->features = NULL;
	pub->target = NULL;
}

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
	free_names(pub);
	memset(pub, 0, sizeof(*pub));
}

int dp_plan_public_set_names(dp_plan_public *pub, const char *target, char *const *names)
{
	DP_REQUIRE(pub != NULL && target != NULL && names != NULL && pub->p > 0);
	free_names(pub);
	pub->target = strdup(target);
	pub->features = calloc(pub->p, sizeof(char *));
	for (size_t q = 0; pub->target != NULL && pub->features != NULL && q < pub->p; q++) {
		pub->features[q] = strdup(names[q]);
		if (pub->features[q] == NULL) {
			free_names(pub);
			break;
		}
	}
	if (pub->target == NULL || pub->features == NULL) {
		free_names(pub);
		return DP_ENOMEM;
	}
	return 0;
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
	return dp_plan_public_shape_norm(model, p, lambda, false, out);
}

int dp_plan_public_shape_norm(dp_model model, size_t p, double lambda, bool l2,
			      dp_plan_public *out)
{
	/* |r| quantiles of a normal residual, for q = 0.5 .. 0.999: z((1+q)/2). */
	static const double lin_q[] = { 0.5, 0.75, 0.9, 0.95, 0.99, 0.999 };
	static const double lin_z[] = { 0.6745, 1.1503, 1.6449, 1.9600, 2.5758, 3.2905 };
	static const double cls_g[] = { 0.25, 0.5, 0.75, 0.9, 1.0 };
	dp_plan_public pub = { 0 };
	/* E ||x||_1 of standardised features, or about E ||x||_2, which the
	 * clip candidates scale with (docs/planner.md §7). */
	double l1 = l2 ? sqrt((double)p) : (double)p * sqrt(2.0 / M_PI);
	size_t nclip;
	int rc;

	if (p == 0 || !(lambda >= 0.0) || !isfinite(lambda))
		return dp_error_set(DP_EINVAL, "plan: bad shape p=%zu lambda=%g", p, lambda);
	pub.model = model;
	pub.p = p;
	pub.lambda = lambda;
	pub.measured = false;
	pub.l2 = l2;
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
				 * whose spread is about sd 0.6 sqrt(p) (||x||_2: about
				 * sd sqrt(1/2)). */
				double g = 0.75 + 0.25 * (double)c;
				double sd = l2 ? sqrt(0.5) : sqrt((double)p * (1.0 - 2.0 / M_PI));

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
		 "assumed from the data's shape (p=%zu, standardised features%s%s); give a public "
		 "sample for a forecast of this data", p, l2 ? ", L2 clips" : "",
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
	if (rc == 0 && pub->l2)   /* L1 constants keep the format they had */
		rc = dp_json_add(o, "l2", json_object_new_boolean(true));
	if (rc == 0)
		rc = dp_json_add(o, "source", json_object_new_string(pub->source));
	if (rc == 0 && pub->target != NULL && pub->features != NULL) {
		struct json_object *names = json_object_new_array();

		rc = dp_json_add(o, "target", json_object_new_string(pub->target));
		if (rc == 0)
			rc = dp_json_add(o, "features", names);
		else
			json_object_put(names);
		for (size_t q = 0; rc == 0 && q < pub->p; q++)
			rc = dp_json_push(names, json_object_new_string(pub->features[q]));
	}
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

/* "target" and "features" (p strings), both or neither: a file written
 * before them has neither (docs/planner.md "With a public sample"). */
static void parse_names(dp_json_reader *r, struct json_object *o, dp_plan_public *pub)
{
	struct json_object *arr = NULL;
	const char *target;

	r->where = NULL;
	if (!json_object_object_get_ex(o, "target", NULL) &&
	    !json_object_object_get_ex(o, "features", NULL))
		return;
	target = dp_json_get_string(r, o, "target", true, NULL);
	arr = dp_json_get(r, o, "features", json_type_array, true);
	if (r->rc != 0)
		return;
	if (json_object_array_length(arr) != pub->p) {
		dp_json_fail(r, "'features' must hold p = %zu names", pub->p);
		return;
	}
	for (size_t q = 0; q < pub->p; q++)
		if (!json_object_is_type(json_object_array_get_idx(arr, q), json_type_string)) {
			dp_json_fail(r, "'features' must hold names");
			return;
		}
	pub->features = calloc(pub->p, sizeof(char *));
	pub->target = strdup(target);
	for (size_t q = 0; pub->features != NULL && pub->target != NULL && q < pub->p; q++) {
		pub->features[q] = strdup(json_object_get_string(json_object_array_get_idx(arr, q)));
		if (pub->features[q] == NULL)
			break;
	}
	if (pub->features == NULL || pub->target == NULL || pub->features[pub->p - 1] == NULL)
		r->rc = dp_error_set(DP_ENOMEM, "%s: out of memory", r->path);
}

int dp_plan_public_parse(const char *path, struct json_object *o, dp_plan_public *out)
{
	static const char *const keys[] = { "model", "p", "lambda", "f_star", "f_zero", "alone",
					    "rows", "h_safe", "measured", "l2", "source",
					    "target", "features", "clips" };
	static const char *const ckeys[] = { "clip", "f_clip", "h", "t", "hf", "hs", "tau",
					     "path_f", "path_h" };
	dp_json_reader r = { .path = path };
	dp_plan_public pub = { 0 };
	struct json_object *inner = NULL, *clips;
	const char *s;
	char where[48], shown[48];
	size_t nclip;
	int rc;

	if (json_object_object_get_ex(o, "public", &inner)) {
		r.where = "public";
		if (!json_object_is_type(inner, json_type_object))
			return dp_json_fail(&r, "must be an object");
		o = inner;
	}
	/* Another of dpasync's JSON files (prep's schema.json says its
	 * "format"): name what was expected rather than its first key. */
	if (json_object_object_get_ex(o, "format", &inner) &&
	    !json_object_object_get_ex(o, "clips", NULL))
		return dp_error_set(DP_EFORMAT, "%s: a '%s' file, not planner constants: give "
				    "the output of dpasync forecast (its \"public\") or prep's "
				    "public.json (docs/planner.md \"With a public sample\")", path,
				    dp_csv_show(json_object_is_type(inner, json_type_string)
							? json_object_get_string(inner) : "?",
						shown, sizeof(shown)));
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
	pub.l2 = dp_json_get_bool(&r, o, "l2", false, false);
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
	if (r.rc == 0)
		parse_names(&r, o, &pub);
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

int dp_plan_public_read_norm(const char *path, bool l2, dp_plan_public *out)
{
	struct json_object *o = NULL, *inner;
	dp_plan_public pub;
	int rc = dp_json_read_file(path, PUBLIC_MAX, &o);

	if (rc != 0)
		return rc;
	if (l2 && json_object_object_get_ex(o, "public_l2", &inner))
		rc = dp_plan_public_parse(path, inner, &pub);
	else
		rc = dp_plan_public_parse(path, o, &pub);
	json_object_put(o);
	if (rc != 0)
		return rc;
	if (pub.l2 != l2) {
		rc = dp_error_set(DP_EINVAL, "%s: constants of %s clips, and the job clips in %s "
				  "(%s)", path, pub.l2 ? "L2" : "L1", l2 ? "L2" : "L1",
				  l2 ? "write them with dpasync forecast --delta D, which adds "
				       "\"public_l2\", or give the public sample"
				     : "these are for Gaussian answers; give the Laplace ones");
		dp_plan_public_free(&pub);
		return rc;
	}
	*out = pub;
	return 0;
}
