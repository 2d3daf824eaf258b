/* SPDX-License-Identifier: Apache-2.0 */
/* Served personal models of the peer mode (docs/p2p.md §7): the math an
 * agent does, in the simulator and in ownerd --peer alike.
 *
 * An agent releases private messages only: either its exchanged noisy
 * models (the paper's CD, docs/design.md §6) or one noisy clipped gradient
 * at theta = 0 (dp_serve_release).  From released messages it computes a
 * prior pi_i (post-processing; its own rows give the curvature), then
 * fits on its own rows
 *
 *   theta_i = argmin (1/m) sum_rows l(theta) + lambda ||theta||^2
 *                    + (tau/m) ||theta - pi_i||^2
 *
 * with tau chosen from a grid (0, the local model, among it) by K-fold
 * cross-validation on its rows, fold of row r = r mod K.  The served
 * model uses the agent's raw rows and is NOT private: it never leaves the
 * agent.  Everything here is deterministic. */
#ifndef DP_SERVE_H
#define DP_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include "common/core/dataset.h"
#include "common/core/model.h"
#include "common/core/query.h"
#include "common/core/rng.h"

/* The names of what agents release, whose releases a prior pools, and
 * whether the prior's length is fitted (NULL-ended, in the order of the
 * enums of tools/lib/p2psim.h and of ownerd's settings): the values of
 * --release, --prior and --prior-scale of sim --mode p2p and ownerd --peer. */
extern const char *const dp_serve_release_names[];   /* models, grad0 */
extern const char *const dp_serve_prior_names[];     /* graph, all */
extern const char *const dp_serve_scale_names[];     /* fit, none */

/* The default tau grid (DP_SERVE_TAUS values, 0 first) and fold count. */
#define DP_SERVE_TAUS 8
extern const double dp_serve_taus[DP_SERVE_TAUS];
#define DP_SERVE_FOLDS 5

/* The one-shot release: dp_query_answer_mech at theta = 0 with the
 * agent's whole share (epsilon for Laplace, rho for Gaussian; INFINITY:
 * the exact clipped mean), into g[ds->p].  For linear this is the noisy
 * clipped -2 X^T y / m.  Errors: dp_query_answer_mech's, DP_ENOMEM; g
 * untouched on failure. */
int dp_serve_release(dp_model m, const dp_dataset *ds, double clip, dp_mech mech, double share,
		     dp_bitsource *src, double *g);

/* out[p] = sum_j w[j] v[j] / sum_j w[j] over k vectors v[j][p] (0 when
 * the weights sum to 0).  Weights >= 0.  Pure. */
void dp_serve_pool(size_t p, size_t k, const double *const *v, const double *w, double *out);

/* The prior from a pooled gradient gbar[p] (dp_serve_pool of released
 * gradients at 0): one Newton step from 0 on the agent's quadratic model,
 * prior = -(H + 2 lambda I)^-1 gbar, H the Hessian of the agent's mean
 * loss at 0 ((2/m) X^T X for linear, (1/4m) X^T X for logistic).
 * Errors: DP_EINVAL (svm, lambda < 0), DP_ENUMERIC (H + 2 lambda I not
 * positive definite), DP_ENOMEM; prior untouched on failure. */
int dp_serve_prior_newton(dp_model m, const dp_dataset *ds, double lambda, const double *gbar,
			  double *prior);

/* The fit of the header over the rows r with r % folds != skip (folds 0
 * or skip >= folds: every row; the m of the formula is the count of rows
 * used), from theta = 0: linear in closed form, logistic by Newton with
 * backtracking to |grad|_inf <= 1e-13 max(1, |f|).  With bias_free the
 * last coordinate (the bias column) is the agent's own intercept: the
 * tau term leaves it out (lambda still applies).  theta[p] receives it.
 * Errors: DP_EINVAL (svm, lambda or tau < 0, no row), DP_ENUMERIC
 * (singular system; Newton did not converge), DP_ENOMEM; theta untouched
 * on failure. */
int dp_serve_fit(dp_model m, const dp_dataset *ds, size_t folds, size_t skip, double lambda,
		 double tau, const double *prior, bool bias_free, double *theta);

/* The prior's length fitted on the rows of (folds, skip) as dp_serve_fit
 * counts them: *scale = max(0, s*), s* the minimiser over s (and, with
 * bias_free, the intercept b) of the fit's objective without the tau term
 * on the line theta = s prior (+ b on the bias column): (1/m) sum l(s
 * prior^T x + b) + lambda (s^2 ||prior||^2 + b^2), by dp_serve_fit on
 * those one or two columns; 0 for a zero prior.  A released direction
 * whose length is off (clipping shrinks it) becomes the best model on its
 * line.  Errors: dp_serve_fit's, DP_ENOMEM. */
int dp_serve_scale(dp_model m, const dp_dataset *ds, size_t folds, size_t skip, double lambda,
		   const double *prior, bool bias_free, double *scale);

/* The served model's choice and fit: for each taus[t] the summed loss
 * (no regulariser) on the held-out rows of min(folds, m) folds, the best
 * (lowest; the first on ties) chosen, then dp_serve_fit on every row.
 * With `scale`, each fit's prior is prior times dp_serve_scale on that
 * fit's rows.  With fewer than 2 rows (or folds < 2) taus[0] is taken.
 * *chosen (may be NULL) gets the index in taus, val[ntau] (may be NULL)
 * the scores (a grid of one value: tau fixed, nothing scored).  bias_free
 * as dp_serve_fit.  Errors: dp_serve_fit's and dp_serve_scale's; outputs
 * untouched on failure. */
int dp_serve_refit(dp_model m, const dp_dataset *ds, size_t folds, double lambda,
		   const double *prior, bool scale, bool bias_free, const double *taus,
		   size_t ntau, double *theta, size_t *chosen, double *val);

/* What an agent's served model is made of (dp_serve_agent). */
typedef struct dp_serve_spec {
	bool gradients;                /* the releases are gradients at 0 (a Newton
					  step makes the prior), else models (the
					  pool is the prior) */
	const dp_dataset *curvature;   /* gradients: public rows for the Hessian,
					  or NULL: the agent's own */
	const double *taus;            /* the tau grid (0 among it, or one value) */
	size_t ntau;
	size_t folds;
	bool scale;                    /* dp_serve_refit's scale */
	bool bias_free;                /* dp_serve_fit's bias_free */
} dp_serve_spec;

/* One agent's served model from the k released vectors v[j] it holds,
 * with pool weights w[j] (for gradients already times the releasing
 * agent's row count, so that the pool is a mean gradient over the pooled
 * rows): dp_serve_pool, then for gradients dp_serve_prior_newton (with
 * curvature rows the ridge becomes lambda m / sum w, the agent's ridge
 * spread over the pooled rows), then dp_serve_refit on the agent's rows
 * with its lambda.  The one path of sim --mode p2p --serve refit and
 * ownerd --peer --serve refit.  served[p] gets the model, prior[p] and
 * *chosen (the index in taus) may be NULL.  Errors: those functions',
 * DP_ENOMEM; outputs untouched on failure. */
int dp_serve_agent(dp_model m, const dp_dataset *ds, double lambda, const dp_serve_spec *s,
		   size_t k, const double *const *v, const double *w, double *served,
		   double *prior, size_t *chosen);

#endif
