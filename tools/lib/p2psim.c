/* SPDX-License-Identifier: Apache-2.0 */
/* The peer-mode simulator (p2psim.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/algo.h"
#include "common/core/compose.h"
#include "common/core/error.h"
#include "common/core/query.h"
#include "common/core/serve.h"
#include "tools/lib/p2psim.h"
#include "tools/lib/simrng.h"

/* Streams for the clocks and the noise are separate, so that a run that
 * follows a schedule sees the same noise as the drawn run with that seed
 * (as tools/lib/sim.c does). */
static void seed_stream(dp_simrng *r, uint64_t seed, uint64_t stream)
{
	dp_simrng_seed(r, seed ^ (stream * 0x9E3779B97F4A7C15ULL));
}

size_t dp_p2psim_steps(const dp_p2psim_setup *s)
{
	size_t total = 0;

	DP_REQUIRE(s != NULL);
	if (s->schedule != NULL)
		return s->steps;
	for (size_t i = 0; i < s->N; i++)
		total += (size_t)s->wakeups[i];
	return total;
}

int dp_p2psim_check(const dp_p2psim_setup *s)
{
	uint64_t *count;

	DP_REQUIRE(s != NULL && (s->schedule == NULL || s->wakeups != NULL));
	if (s->schedule == NULL)
		return 0;
	count = calloc(s->N, sizeof(uint64_t));
	if (count == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t k = 0; k < s->steps; k++) {
		size_t i = s->schedule[k];

		DP_REQUIRE(i < s->N);
		if (count[i] == s->wakeups[i]) {
			free(count);
			return dp_error_set(DP_EBUDGET, "step %zu: agent '%s' has already woken %llu "
					    "times (its budget is split over --wakeups %llu)",
					    k + 1, dp_graph_id(s->graph, i),
					    (unsigned long long)s->wakeups[i],
					    (unsigned long long)s->wakeups[i]);
		}
		count[i]++;
	}
	free(count);
	return 0;
}

int dp_p2psim_run(const dp_p2psim_setup *s, uint64_t seed, double *theta, size_t *order_out,
		  uint64_t *done_out)
{
	size_t p, N, steps, maxdeg = 0;
	uint64_t *done = NULL;
	double *g = NULL;
	const double **nbt = NULL;
	dp_simrng clock, noise;
	dp_bitsource bits;
	int rc = 0;

	DP_REQUIRE(s != NULL && s->N > 0 && s->ds != NULL && s->graph != NULL && theta != NULL);
	DP_REQUIRE(dp_graph_nodes(s->graph) == s->N && s->mu > 0 && s->clip > 0);
	p = s->p;
	N = s->N;
	steps = dp_p2psim_steps(s);
	rc = dp_p2psim_check(s);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < N; i++) {
		size_t d = dp_graph_adj(s->graph, i, NULL, NULL);

		maxdeg = d > maxdeg ? d : maxdeg;
	}
	done = calloc(N, sizeof(uint64_t));
	g = calloc(p ? p : 1, sizeof(double));
	nbt = calloc(maxdeg ? maxdeg : 1, sizeof(double *));
	if (done == NULL || g == NULL || nbt == NULL) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	memset(theta, 0, N * p * sizeof(double));
	seed_stream(&clock, seed, 1);
	seed_stream(&noise, seed, 2);
	bits = dp_simrng_bitsource(&noise);
	for (size_t i = 0; i < N && s->warm != NULL; i++) {
		dp_algo_p2p_params a = { .p = p, .mu = s->mu, .c = s->c[i], .L_loc = s->L_loc[i],
					 .lambda = s->lambda[i] };

		for (uint64_t k = 0; k < s->warm[i]; k++) {
			rc = dp_query_answer_mech(s->model, s->ds[i], theta + i * p, s->clip,
						  s->mech, s->eps_warm[i], &bits, g, NULL);
			if (rc != 0)
				goto out;
			dp_algo_p2p_warm_step(&a, g, theta + i * p);
		}
	}
	for (size_t k = 0; k < steps; k++) {
		size_t i = s->schedule ? s->schedule[k] : dp_simrng_pick(&clock, s->rate, done, s->wakeups, s->N), n_nb;
		const size_t *nb;
		const double *w;
		dp_algo_p2p_params a = { .p = p, .mu = s->mu, .c = s->c[i], .L_loc = s->L_loc[i],
					 .lambda = s->lambda[i] };

		DP_REQUIRE(i < N);
		rc = dp_query_answer_mech(s->model, s->ds[i], theta + i * p, s->clip, s->mech,
					  s->eps_t[i], &bits, g, NULL);
		if (rc != 0)
			goto out;
		n_nb = dp_graph_adj(s->graph, i, &nb, &w);
		for (size_t j = 0; j < n_nb; j++)
			nbt[j] = theta + nb[j] * p;
		dp_algo_p2p_update(&a, n_nb, nbt, w, g, theta + i * p);
		done[i]++;
		if (order_out)
			order_out[k] = i;
	}
	if (done_out)
		memcpy(done_out, done, N * sizeof(uint64_t));
out:
	free(done);
	free(g);
	free(nbt);
	return rc;
}

int dp_p2psim_eps_split(double eps, double delta, uint64_t T, double *out)
{
	return dp_p2psim_warm_split(eps, 0, 0, delta, T, out, &(double){ 0 });
}

int dp_p2psim_warm_split(double eps, double warm, uint64_t K, double delta, uint64_t T,
			 double *eps_t, double *eps_warm)
{
	return dp_p2psim_mech_split(DP_MECH_LAPLACE, 1, eps, warm, K, delta, T, eps_t, eps_warm);
}

int dp_p2psim_mech_split(dp_mech mech, size_t d, double eps, double warm, uint64_t K,
			 double delta, uint64_t T, double *share_t, double *share_warm)
{
	dp_compose_budget b;
	uint64_t slack_nano;
	int rc;

	/* ownerd --peer's own plan of its ledger (common/core/compose.c). */
	if (mech == DP_MECH_GAUSSIAN)
		rc = dp_compose_plan_gauss(eps, warm, K, delta, T, d, &b, &slack_nano);
	else
		rc = dp_compose_plan(eps, warm, K, delta, T, &b);
	if (rc != 0)
		return rc;
	*share_t = b.eps_step;
	*share_warm = b.eps_warm;
	return 0;
}

int dp_p2psim_release_grad0(const dp_p2psim_setup *s, uint64_t seed, const double *share,
			    double *g)
{
	dp_simrng noise;
	dp_bitsource bits;
	int rc = 0;

	DP_REQUIRE(s != NULL && share != NULL && g != NULL);
	seed_stream(&noise, seed, 2);
	bits = dp_simrng_bitsource(&noise);
	for (size_t i = 0; i < s->N && rc == 0; i++)
		rc = dp_serve_release(s->model, s->ds[i], s->clip, s->mech, share[i], &bits,
				      g + i * s->p);
	return rc;
}

/* Agent i's pool (dp_p2psim_prior): vectors and weights into v and w,
 * their count returned. */
static size_t pool_of(const dp_p2psim_setup *s, const dp_p2psim_serve *v, size_t i,
		      const double *released, const double **vec, double *w)
{
	size_t k = 0;

	if (v->prior == DP_P2PSIM_PRIOR_ALL) {
		for (size_t j = 0; j < s->N; j++) {
			vec[k] = released + j * s->p;
			w[k++] = 1.0;
		}
	} else {
		const size_t *nb;
		const double *wt;
		size_t n_nb = dp_graph_adj(s->graph, i, &nb, &wt);

		vec[k] = released + i * s->p;
		w[k++] = 1.0;
		for (size_t j = 0; j < n_nb; j++) {
			vec[k] = released + nb[j] * s->p;
			w[k++] = wt[j];
		}
	}
	if (v->release == DP_P2PSIM_RELEASE_GRAD0)
		for (size_t j = 0; j < k; j++)
			w[j] *= (double)s->ds[(size_t)(vec[j] - released) / s->p]->n;
	return k;
}

int dp_p2psim_serve_all(const dp_p2psim_setup *s, const dp_p2psim_serve *v,
			const double *released, double *served, double *prior, size_t *chosen)
{
	const double **vec = calloc(s->N + 1, sizeof(double *));
	double *w = calloc(s->N + 1, sizeof(double));
	dp_serve_spec spec = { .gradients = v->release == DP_P2PSIM_RELEASE_GRAD0,
			       .curvature = v->curvature, .taus = v->taus, .ntau = v->ntau,
			       .folds = v->folds, .scale = v->scale, .bias_free = v->bias_free };
	int rc = 0;

	DP_REQUIRE(s != NULL && v != NULL && released != NULL && served != NULL);
	if (vec == NULL || w == NULL) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < s->N && rc == 0; i++) {
		size_t k = pool_of(s, v, i, released, vec, w);

		rc = dp_serve_agent(s->model, s->ds[i], s->lambda[i], &spec, k, vec, w,
				    served + i * s->p, prior ? prior + i * s->p : NULL,
				    chosen ? chosen + i : NULL);
		if (rc != 0) {
			char was[512];

			snprintf(was, sizeof(was), "%s", dp_error_detail(rc));
			rc = dp_error_set(rc, "agent '%s': %s", dp_graph_id(s->graph, i), was);
		}
	}
out:
	free(vec);
	free(w);
	return rc;
}
