/* Default training settings shared by learnerd and dpasync sim, chosen from
 * what the learner knows before training (model, p, N, owner sizes, T,
 * lambda) so that runs converge on standardised data (README "Defaults").
 *
 * They rest on one bound: on standardised features (each coordinate mean 0,
 * variance 1, plus an optional constant bias) E||x||^2 <= p, so the mean
 * loss gradient is L-Lipschitz with L <= 2p (linear) or p/4 (logistic; the
 * hinge of svm is treated like logistic), plus 2 lambda for g. */
#ifndef DP_DEFAULTS_H
#define DP_DEFAULTS_H

#include <stddef.h>
#include "common/core/model.h"

#define DP_DEFAULT_T          1000
#define DP_DEFAULT_LAMBDA     1e-2
#define DP_DEFAULT_THETA_MAX  10.0
#define DP_DEFAULT_CLIP       1.0   /* kept for callers without p; prefer dp_defaults_clip */
#define DP_DEFAULT_EPSILON    1.0

/* Default L1 clip bound Xi = p.  A per-example gradient is c x with
 * ||x||_1 about 0.8 p on standardised data and |c| about 2|residual| (linear)
 * or below 1 (logistic, svm), so Xi = p clips only the large ones: a
 * smaller Xi lowers the noise but biases the fixed point (README
 * "Defaults"). */
double dp_defaults_clip(size_t p);

/* The smoothness bound L above. */
double dp_defaults_smoothness(dp_model model, size_t p, double lambda);

/* Async owner-copy step eta = eta0 * min(1, sqrt(100 N / T)) with
 * eta0 = 1 / (L * max_i n_i/n), the largest step for which every owner's
 * update is a contraction (eta0 * w_i * L <= 1; N / L for equal owners).
 * With a constant step the random order of owners leaves a floor under psi
 * proportional to the step; shrinking it like 1/sqrt(T) past 100 N
 * iterations lowers that floor while the total progress eta * T still
 * grows, so a longer run is a better run. */
double dp_defaults_async_eta(dp_model model, size_t p, double lambda, double max_weight,
			    size_t N, size_t T);

/* Sync1 rho/T^2 and sync2 c: step 1/L at k = 1, never above 1/(2 lambda). */
double dp_defaults_sync_step(dp_model model, size_t p, double lambda);

#endif
