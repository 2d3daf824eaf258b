#include "common/core/defaults.h"

#include <math.h>

double dp_defaults_smoothness(dp_model model, size_t p, double lambda)
{
	double loss = model == DP_MODEL_LINEAR ? 2.0 * (double)p : 0.25 * (double)p;

	return loss + 2.0 * lambda;
}

double dp_defaults_async_eta(dp_model model, size_t p, double lambda, double max_weight,
			    size_t N, size_t T)
{
	double eta0 = 1.0 / (dp_defaults_smoothness(model, p, lambda) * max_weight);
	double t0 = 100.0 * (double)N;

	return (double)T > t0 ? eta0 * sqrt(t0 / (double)T) : eta0;
}

double dp_defaults_sync_step(dp_model model, size_t p, double lambda)
{
	double step = 1.0 / dp_defaults_smoothness(model, p, lambda);

	if (lambda > 0 && step > 1.0 / (2.0 * lambda))
		step = 1.0 / (2.0 * lambda);
	return step;
}

double dp_defaults_clip(size_t p)
{
	return (double)p;
}
