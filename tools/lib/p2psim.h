/* SPDX-License-Identifier: Apache-2.0 */
/* The in-process peer-mode simulator behind `dpasync sim --mode p2p`
 * (docs/design.md §6, docs/p2p.md): N agents with their own rows, a graph
 * of weights W_ij, and one wake-up at a time.  Each wake-up of agent i
 * answers its own noisy gradient query at Theta_i with dp_query_answer_mech
 * (the owner's clipping and lattice noise, Laplace or Gaussian, at the
 * agent's per-wake-up share) and applies dp_algo_p2p_update with the current
 * models of its neighbours, exactly what an agent does on loopback when it
 * holds every neighbour's latest model.  The seeded generator replaces the
 * CSPRNG, so a run is a function of its seed. */
#ifndef DP_TOOLS_P2PSIM_H
#define DP_TOOLS_P2PSIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/core/dataset.h"
#include "common/core/graph.h"
#include "common/core/model.h"
#include "common/core/query.h"

typedef struct dp_p2psim_setup {
	dp_model model;
	size_t N, p;
	const dp_dataset *const *ds;   /* N agents' rows, all with p columns */
	const dp_graph *graph;         /* N nodes, node i = agent i */
	double mu;                     /* the trade-off, > 0 */
	const double *c;               /* N confidences in (0, 1] */
	const double *lambda;          /* N: lambda_i >= 0 */
	const double *L_loc;           /* N: public smoothness of L_i */
	dp_mech mech;                  /* Laplace (L1 clip, eps shares) or Gaussian
					  (L2 clip, rho shares; docs/peer-agents.md
					  "Privacy") */
	const double *eps_t;           /* N: epsilon (rho for Gaussian) of one
					  wake-up (inf: exact) */
	const uint64_t *warm;          /* N: warm-start steps (0: none), or NULL: none */
	const double *eps_warm;        /* N: epsilon (rho) of one warm-start step (inf: exact) */
	double clip;                   /* L1 (Laplace) or L2 (Gaussian) clip bound of a
					  per-row gradient */
	const uint64_t *wakeups;       /* N: T_i, the most wake-ups of agent i */
	const double *rate;            /* N: Poisson clock rates (drawn order) */
	const size_t *schedule;        /* steps agent indices to follow, or NULL */
	size_t steps;                  /* its length (schedule only) */
} dp_p2psim_setup;

/* Number of steps a run makes: the schedule's length, else sum T_i. */
size_t dp_p2psim_steps(const dp_p2psim_setup *s);

/* Refuse a schedule that wakes an agent more often than its T_i =
 * s->wakeups[i] (its budget is split over T_i wake-ups): the inputs do not
 * fit together, before anything runs.  0 without a schedule.
 * Errors: DP_EBUDGET ("step K: agent ID has already woken T times"),
 * DP_ENOMEM. */
int dp_p2psim_check(const dp_p2psim_setup *s);

/* One run from Theta_i = 0 for every agent.  First each agent with
 * warm[i] > 0, in index order, takes its private warm start as ownerd
 * --peer does: warm[i] steps of dp_algo_p2p_warm_step on its own noisy
 * gradient at eps_warm[i] each.  Then, without a schedule the agent
 * of each step is drawn in proportion to the rates of the agents with
 * wake-ups left (the first of independent Poisson clocks to tick; an agent
 * stops after T_i wake-ups, its budget spent), until none is left.  With a
 * schedule it is followed as given; an agent named more than T_i times is
 * refused before anything runs (dp_p2psim_check).  theta[N*p] receives the final models
 * (row i = agent i), order_out[steps] (may be NULL) the agent of each
 * step, done_out[N] (may be NULL) each agent's wake-ups.
 * Errors: DP_EBUDGET ("step K: agent ID has already woken T times"),
 * dp_query_answer_mech's (DP_EINVAL for a model that became non-finite;
 * DP_ERANGE for a Gaussian share outside the sampler's range),
 * DP_ENOMEM; the outputs are undefined on failure. */
int dp_p2psim_run(const dp_p2psim_setup *s, uint64_t seed, double *theta, size_t *order_out,
		  uint64_t *done_out);

/* The per-wake-up epsilon of an agent with budget (eps, delta) over T
 * wake-ups and no warm start, the equal split (docs/p2p.md §2): the
 * eps_step of dp_compose_plan(eps, 0, 0, delta, T), the share
 * an agent's ledger charges (with delta = 0, dp_nano_share(eps, T);
 * with delta > 0 the larger of that and the advanced composition's, of
 * docs/peer-agents.md "Privacy").  eps = inf gives inf.  Errors:
 * dp_compose_plan's (DP_EINVAL: eps not > 0, delta not in [0, 1), T = 0)
 * with a detail; *out untouched then. */
int dp_p2psim_eps_split(double eps, double delta, uint64_t T, double *out);

/* The split of an agent's budget with a private warm start spending warm
 * of eps (0 <= warm < eps) in K steps: dp_compose_plan's charges, as
 * ownerd --peer plans its ledger (docs/peer-agents.md "Privacy"): each
 * warm-start step's in *eps_warm (0 when warm = 0), each wake-up's in
 * *eps_t; the two parts compose by basic composition.  eps = inf gives inf
 * for both.  Errors: dp_compose_plan's, with a detail. */
int dp_p2psim_warm_split(double eps, double warm, uint64_t K, double delta, uint64_t T,
			 double *eps_t, double *eps_warm);

/* dp_p2psim_warm_split for either mechanism: Laplace is exactly that
 * (d unused); Gaussian is dp_compose_plan_gauss's plan over answers of d
 * coordinates, *share_t and *share_warm in rho (docs/peer-agents.md
 * "Privacy").  Errors: the plan's, with a detail (Gaussian with delta 0:
 * DP_EINVAL, "--mechanism gaussian needs --delta > 0 ..."). */
int dp_p2psim_mech_split(dp_mech mech, size_t d, double eps, double warm, uint64_t K,
			 double delta, uint64_t T, double *share_t, double *share_warm);

/* Served personal models (docs/p2p.md §7, common/core/serve.h). */
typedef enum dp_p2psim_release {
	DP_P2PSIM_RELEASE_MODELS = 0,   /* the exchanged noisy models of the run */
	DP_P2PSIM_RELEASE_GRAD0 = 1,    /* one noisy clipped gradient at 0 each */
} dp_p2psim_release;

/* Whose releases agent i's prior pools: GRAPH, itself (weight 1) and its
 * neighbours (weight W_ij), what an agent receives from its neighbours
 * alone; ALL, every agent (weight 1), what relaying over the graph
 * delivers.  Released gradients are weighted by the row count m_j too,
 * so that the pool is a mean gradient over the pooled rows. */
typedef enum dp_p2psim_prior {
	DP_P2PSIM_PRIOR_GRAPH = 0,
	DP_P2PSIM_PRIOR_ALL = 1,
} dp_p2psim_prior;

typedef struct dp_p2psim_serve {
	dp_p2psim_release release;
	dp_p2psim_prior prior;
	const double *taus;            /* the tau grid (0 among it) */
	size_t ntau;
	size_t folds;                  /* K of the cross-validation */
	bool scale;                    /* fit the prior's length (dp_serve_scale) */
	bool bias_free;                /* the last column is the agents' own
					  intercept, not pulled (dp_serve_fit) */
	const dp_dataset *curvature;   /* public rows for dp_serve_prior_newton's
					  Hessian, or NULL: each agent's own */
} dp_p2psim_serve;

/* The one-shot releases: agent i in index order draws dp_serve_release
 * at share[i] (epsilon, or rho for Gaussian; inf: exact) with s->clip and
 * s->mech from the noise stream of seed (the stream of dp_p2psim_run's
 * wake-ups), into g[N*p].  Errors: dp_serve_release's. */
int dp_p2psim_release_grad0(const dp_p2psim_setup *s, uint64_t seed, const double *share,
			    double *g);

/* Every agent's served model: its prior from released[N*p] (the final
 * models of a run, or the gradients of dp_p2psim_release_grad0, as
 * v->release says) pooled as v->prior says (dp_serve_pool; gradients
 * then dp_serve_prior_newton with the agent's lambda), then
 * dp_serve_refit on its rows.  served[N*p], prior[N*p] (may be NULL) and
 * chosen[N] (the index in v->taus; may be NULL) receive them.  Errors:
 * those functions', the agent's id in the detail; DP_ENOMEM. */
int dp_p2psim_serve_all(const dp_p2psim_setup *s, const dp_p2psim_serve *v,
			const double *released, double *served, double *prior, size_t *chosen);

#endif
