/* SPDX-License-Identifier: Apache-2.0 */
#include "common/core/model.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/core/error.h"

/* Rows per block of the plain passes (loss, gradient): small enough that the
 * scores live on the stack. */
#define DP_PASS_ROWS 256

const char *const dp_model_names[] = { "linear", "logistic", "svm", NULL };

int dp_model_parse(const char *s, dp_model *out)
{
	DP_REQUIRE(out != NULL);
	for (int i = 0; s != NULL && dp_model_names[i] != NULL; i++) {
		if (strcmp(s, dp_model_names[i]) == 0) {
			*out = (dp_model)i;
			return 0;
		}
	}
	return dp_error_set(DP_EINVAL, "unknown model '%s' (linear, logistic or svm)",
			    s != NULL ? s : "(null)");
}

const char *dp_model_name(dp_model m)
{
	return (unsigned)m <= DP_MODEL_SVM ? dp_model_names[m] : "unknown";
}

/* log(1 + exp(-m)) without overflow: for m < 0 the exponent is taken out,
 * -m + log1p(exp(m)), so exp never sees a large positive argument. */
static inline double logistic_loss(double m)
{
	if (m > 0.0)
		return log1p(exp(-m));
	return -m + log1p(exp(m));
}

/* Above this |y t| the logistic coefficient's exp is taken as 0: exp(-500)
 * is below 1e-217, and libm's exp leaves its usual path from |x| >= 512
 * (and returns at once below 2^-54, where e^-|m| rounds to 1: taken as
 * 1 here without calling it). */
#define LOGISTIC_EXP_MAX 500.0

/* cond ? a : b in bit operations: a compiler turns a plain ?: into a jump
 * when it likes, and the jump's cost would depend on the data. */
static inline double pick(int cond, double a, double b)
{
	uint64_t ua, ub, mask = (uint64_t)0 - (uint64_t)(cond != 0);

	memcpy(&ua, &a, sizeof(ua));
	memcpy(&ub, &b, sizeof(ub));
	ua = (ua & mask) | (ub & ~mask);
	memcpy(&a, &ua, sizeof(a));
	return a;
}

/* -y / (1 + exp(y t)) with m = y t, with no branch on the data.  The
 * owner's kernel computes this for every row of every answer, and the
 * learner, who chooses theta and times the answer, must not learn from
 * the time which rows have which sign of m, a large |m| or a NaN
 * (docs/privacy.md §7): one exp, always of an argument in [-500, -2^-54]
 * (its usual path), and selections in bit operations.  The value is
 * -y e^-m / (1 + e^-m) for m > 0 and -y / (1 + e^m) otherwise, as the two
 * branches computed it before, except for m > 500, where the coefficient,
 * below 1e-217 in size, is now 0.  A NaN m gives NaN: the row is dropped. */
static inline double logistic_coef(double t, double y)
{
	double m = y * t, am = fabs(m);
	int small = am <= LOGISTIC_EXP_MAX;     /* false for a NaN */
	int tiny = am < 0x1p-54;                /* e^-|m| rounds to 1 */
	double e = exp(-pick(small && !tiny, am, 1.0));
	double c;

	e = pick(small, pick(tiny, 1.0, e), 0.0);
	c = -y * pick(m > 0.0, e, 1.0) / (1.0 + e);
	return pick(m == m, c, NAN);
}

static inline double svm_coef(double t, double y)
{
	double m = y * t;

	if (m < 1.0)
		return -y;
	if (m >= 1.0)
		return 0.0;
	return NAN;     /* NaN score must not read as "no gradient" */
}

double dp_model_loss(dp_model m, double t, double y)
{
	switch (m) {
	case DP_MODEL_LINEAR: {
		double r = y - t;
		return r * r;
	}
	case DP_MODEL_LOGISTIC:
		return logistic_loss(y * t);
	case DP_MODEL_SVM: {
		double h = 1.0 - y * t;
		if (isnan(h))
			return NAN;
		return h > 0.0 ? h : 0.0;
	}
	}
	return NAN;
}

double dp_model_coef(dp_model m, double t, double y)
{
	switch (m) {
	case DP_MODEL_LINEAR: return 2.0 * (t - y);
	case DP_MODEL_LOGISTIC: return logistic_coef(t, y);
	case DP_MODEL_SVM: return svm_coef(t, y);
	}
	return NAN;
}

int dp_model_check_data(dp_model m, const dp_dataset *ds)
{
	const char *src;

	DP_REQUIRE(ds != NULL);
	src = ds->source != NULL ? ds->source : "(arrays)";

	for (size_t j = 0; j < ds->n; j++) {
		double y = ds->y[j];

		if (m == DP_MODEL_LINEAR) {
			if (!isfinite(y))
				return dp_error_set(DP_EFORMAT, "%s: row %zu: target '%s' is not a finite number",
						    src, j + 1, ds->target != NULL ? ds->target : "y");
		} else if (y != 1.0 && y != -1.0) {
			/* position and kind only: a daemon logs this (docs/privacy.md §8) */
			return dp_error_set(DP_EFORMAT, "%s: row %zu: target '%s' is not -1 or +1, as %s needs",
					    src, j + 1, ds->target != NULL ? ds->target : "y",
					    dp_model_name(m));
		}
	}
	return 0;
}

/* Scores theta^T x_j of rows [j0, j0 + nb). */
static void scores(const dp_dataset *ds, size_t j0, size_t nb, const double *theta, double *t)
{
	cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)nb, (int)ds->p, 1.0, ds->x + j0 * ds->p,
		    (int)ds->p, theta, 1, 0.0, t, 1);
}

double dp_model_loss_sum(dp_model m, const dp_dataset *ds, const double *theta)
{
	double t[DP_PASS_ROWS];
	double total = 0.0;

	DP_REQUIRE(ds != NULL && theta != NULL);
	for (size_t j0 = 0; j0 < ds->n; j0 += DP_PASS_ROWS) {
		size_t nb = ds->n - j0 < DP_PASS_ROWS ? ds->n - j0 : DP_PASS_ROWS;
		double part = 0.0;

		scores(ds, j0, nb, theta, t);
		for (size_t i = 0; i < nb; i++)
			part += dp_model_loss(m, t[i], ds->y[j0 + i]);
		total += part;
	}
	return total;
}

double dp_model_fitness(dp_model m, const dp_dataset *const *ds, size_t nds, double lambda,
			const double *theta)
{
	double loss = 0.0, reg = 0.0;
	size_t n = 0;

	if (nds == 0)
		return NAN;
	DP_REQUIRE(ds != NULL && theta != NULL);
	for (size_t i = 0; i < nds; i++) {
		loss += dp_model_loss_sum(m, ds[i], theta);
		n += ds[i]->n;
	}
	for (size_t q = 0; q < ds[0]->p; q++)
		reg += theta[q] * theta[q];
	if (n == 0)
		return lambda * reg;
	return lambda * reg + loss / (double)n;
}

double dp_model_psi(double f, double f_star)
{
	return f / f_star - 1.0;
}

void dp_model_mean_grad(dp_model m, const dp_dataset *ds, const double *theta, double *grad)
{
	double t[DP_PASS_ROWS];
	size_t p;

	DP_REQUIRE(ds != NULL && theta != NULL && grad != NULL);
	p = ds->p;
	for (size_t q = 0; q < p; q++)
		grad[q] = 0.0;
	for (size_t j0 = 0; j0 < ds->n; j0 += DP_PASS_ROWS) {
		size_t nb = ds->n - j0 < DP_PASS_ROWS ? ds->n - j0 : DP_PASS_ROWS;

		scores(ds, j0, nb, theta, t);
		for (size_t i = 0; i < nb; i++)
			t[i] = dp_model_coef(m, t[i], ds->y[j0 + i]);
		/* grad += X_block^T c_block */
		cblas_dgemv(CblasRowMajor, CblasTrans, (int)nb, (int)p, 1.0, ds->x + j0 * p,
			    (int)p, t, 1, 1.0, grad, 1);
	}
	if (ds->n > 0)
		for (size_t q = 0; q < p; q++)
			grad[q] /= (double)ds->n;
}
