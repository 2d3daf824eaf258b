/* The in-process simulator behind `dpasync sim`: runs the same step
 * functions (algo.h) and the same query answer (query.h) as the daemons,
 * with the seeded generator instead of the CSPRNG. */
#ifndef DP_TOOLS_SIM_H
#define DP_TOOLS_SIM_H

#include <stddef.h>
#include <stdint.h>
#include "common/core/dataset.h"
#include "common/core/model.h"

enum dp_sim_mode { DP_SIM_ASYNC, DP_SIM_SYNC1, DP_SIM_SYNC2 };

typedef struct dp_sim_setup {
	enum dp_sim_mode mode;
	dp_model model;
	size_t N, p, T;
	const dp_dataset *const *ds;   /* N owners */
	double *weight;                /* N: n_i / n */
	double *eps_q;                 /* N: per-answer budget eps_i / K_i (inf: none) */
	double *rate;                  /* N: clock rates (async owner choice) */
	double eta;                    /* async: N rho/(T^2 sigma) */
	double rho_over_T2;            /* sync1 */
	double c;                      /* sync2 */
	double lambda, theta_max, clip;
	const size_t *schedule;        /* T owner indices (0-based) or NULL */
	int freq_correction;           /* async: Remark 4 weights (dp_algo_freq_weight) */
	size_t psi_every;
	double f_star;
} dp_sim_setup;

/* One repeat.  psi_out receives one value per checkpoint (k = psi_every,
 * 2 psi_every, ..., and T), theta_out[p] the final model, owner_out[T]
 * (may be NULL) the owner of each async iteration.  Errors from the query
 * (DP_EINVAL, DP_ENOMEM). */
int dp_sim_run(const dp_sim_setup *s, uint64_t seed, double *psi_out, double *theta_out,
	       size_t *owner_out);

/* Number of psi checkpoints dp_sim_run writes. */
size_t dp_sim_checkpoints(const dp_sim_setup *s);
/* Iteration number of checkpoint c (0-based). */
size_t dp_sim_checkpoint_k(const dp_sim_setup *s, size_t c);

#endif
