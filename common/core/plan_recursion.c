/* SPDX-License-Identifier: Apache-2.0 */
/* The planner's recursions: where a run of T iterations from theta = 0
 * ends, per eigen-direction, for the async algorithm and for the sync ones
 * (docs/planner.md §2).  Internals of the plan module (plan_impl.h); the
 * prediction and the search that use them are in plan.c. */
#include "common/core/plan_impl.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

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
void dp__plan_async_moments(const dp_plan_clip *k, size_t p, double lambda, double N, size_t T,
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
void dp__plan_sync_moments(enum dp_plan_mode mode, const dp_plan_clip *k, size_t p, double lambda,
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
