/* SPDX-License-Identifier: Apache-2.0 */
/* The in-process simulator behind `dpasync sim`: runs the same step
 * functions (algo.h) and the same query answer (query.h) as the daemons,
 * with the seeded generator instead of the CSPRNG, and holds every owner
 * to its answer cap K_i as ownerd's ledger does. */
#ifndef DP_TOOLS_SIM_H
#define DP_TOOLS_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/core/dataset.h"
#include "common/core/model.h"
#include "common/core/plan.h"
#include "common/core/query.h"

/* One owner's answer times in the timed pipeline: each of its answers
 * arrives a time drawn uniformly from rtt[0..n) after its query (n = 1:
 * always rtt[0]; n > 1: an empirical distribution, e.g. the owner's
 * trace.csv rtt_s). */
typedef struct dp_sim_rtt {
	const double *rtt;             /* n seconds, each >= 0 */
	size_t n;                      /* >= 1 */
} dp_sim_rtt;

typedef struct dp_sim_setup {
	enum dp_plan_mode mode;
	dp_model model;
	size_t N, p, T;
	const dp_dataset *const *ds;   /* N owners */
	double *weight;                /* N: n_i / n */
	dp_mech mech;                  /* the answers' mechanism (query.h) */
	double *eps_q;                 /* N: per-answer budget, the share of eps_i
					  the ledger charges for one of K_i
					  answers: eps_q for Laplace, rho_q for
					  Gaussian (inf: none) */
	double *rate;                  /* N: clock rates (async owner choice) */
	const uint64_t *answers_cap;   /* N: K_i, the most answers owner i gives;
					  sync: each >= T - 1 */
	double eta;                    /* async: N rho/(T^2 sigma) */
	double rho_over_T2;            /* sync1 */
	double c;                      /* sync2 */
	double lambda, theta_max, clip;
	const size_t *schedule;        /* T owner indices (0-based) or NULL */
	int freq_correction;           /* async: Remark 4 weights (dp_algo_freq_weight) */
	size_t max_inflight;           /* async: queries out at once, as learnerd's
					  max-inflight (0 or 1: strict, the paper) */
	double answer_time;            /* async, no schedule: > 0 runs the timed
					  pipeline (below), seconds from a query to
					  its answer; 0: the queue never empty */
	const dp_sim_rtt *answer_rtt;  /* N or NULL: owner i's answer times
					  (timed pipeline, no schedule),
					  replacing answer_time */
	size_t psi_every;
	double f_star;
} dp_sim_setup;

/* One repeat.  psi_out receives one value per checkpoint (k = psi_every,
 * 2 psi_every, ..., and T), theta_out[p] the final model, owner_out[T]
 * (may be NULL) the owner of each async iteration, answers_out[N] (may be
 * NULL) the answers each owner gave.
 *
 * Async: an owner that has given its K_i answers drops out, and the owner
 * of each later iteration is drawn among the others in proportion to their
 * rates.  With max_inflight M > 1 the iterations run as learnerd's request
 * mode with its queue never empty (docs/learnerd.md, staleness): up to M
 * queries are out, each to a different owner and built from the models
 * of send time; they are applied oldest first, so an update lands M - 1
 * updates late once the pipeline is full.  The schedule, when given, is
 * the order of the queries; stale_out[T] (may be NULL) receives each
 * iteration's staleness as learnerd's trace counts it.
 *
 * The timed pipeline (answer_time > 0, no schedule) models the owners'
 * clocks instead of a full queue: each owner asks when its Poisson clock
 * (rate[i]) ticks, and its clock starts again when its answer is in, as
 * ownerd's does (docs/ownerd.md, "Poisson clock"); requests are served in
 * the order they were made while fewer than M queries are out, and each
 * answer arrives answer_time after its query, or, with answer_rtt, a time
 * drawn from its owner's answer_rtt (a generator stream of its own, so
 * the owner choice and the noise streams are those of the same seed).
 * The staleness then follows
 * from the rates, the answer times and M, as in a networked job;
 * *clock_out (may be NULL) receives the simulated seconds at k = T (0
 * when not timed).  Errors: DP_EBUDGET when every owner is exhausted before k = T
 * ("every owner has exhausted its budget at k=K of T=T", as learnerd
 * stops) or when the schedule names an exhausted owner ("iteration K:
 * owner I has given its K_I answers"); DP_EINVAL (a sync cap below T - 1,
 * a bad query); DP_ENOMEM.  The outputs are undefined on failure. */
int dp_sim_run(const dp_sim_setup *s, uint64_t seed, double *psi_out, double *theta_out,
	       size_t *owner_out, uint64_t *answers_out, uint64_t *stale_out, double *clock_out);

/* Repeats r = 0 .. R-1 of dp_sim_run with seeds seed + r, on `threads`
 * threads (0: one per online CPU; never more than R): psi_out[r ncp ..)
 * for repeat r (ncp = dp_sim_checkpoints), clock_out[r] (may be NULL)
 * its simulated seconds, the other outputs those of repeat 0.  The results do not depend on the number of threads: each
 * repeat has its own generator streams and its own buffers, and the
 * datasets are only read.  On failure: the error of the lowest failing
 * repeat (as a sequential loop would stop at), its index in *failed and
 * its detail recorded for this thread; or DP_ENOMEM.  A thread that
 * cannot be started leaves its share to the others. */
int dp_sim_repeats(const dp_sim_setup *s, uint64_t seed, size_t R, size_t threads,
		   double *psi_out, double *theta_out, size_t *owner_out, uint64_t *answers_out,
		   uint64_t *stale_out, double *clock_out, size_t *failed);

/* Whether dp_sim_run runs the timed pipeline: an answer time given
 * (answer_time > 0 or answer_rtt) and no schedule. */
bool dp_sim_timed(const dp_sim_setup *s);

/* Answer times for dp_sim_setup.answer_rtt, and the storage behind them. */
typedef struct dp_sim_timing {
	dp_sim_rtt *owner;             /* N */
	double *store;                 /* the values owner[i].rtt point into */
	size_t N;
} dp_sim_timing;

/* One answer time per owner: v[0..N) seconds (each >= 0), copied.
 * Errors: DP_ENOMEM. */
int dp_sim_timing_values(dp_sim_timing *t, const double *v, size_t N);

/* Each owner's measured round trips: the rtt_s column of the learnerd
 * trace.csv at `path` (docs/learnerd.md §4), owner i (0-based) being
 * the trace's i-th owner name in natural order, the order of the data
 * files as `dpasync report` numbers them in report-schedule.txt
 * (docs/plots.md).  The trace must name exactly N owners, each with rows.
 * Errors: those of dp_rundata_trace_read (which refuses a negative
 * rtt_s); DP_EFORMAT ("PATH: a schedule, not a trace.csv: no rtt_s
 * column"); DP_EINVAL (detail "PATH: 4 owners have rows (owner-1, ...),
 * the sim has 5 data files ..."); DP_ENOMEM.  On failure *t is empty
 * (dp_sim_timing_free is still safe). */
int dp_sim_timing_trace(dp_sim_timing *t, const char *path, size_t N);

/* Mean of r's answer times. */
double dp_sim_rtt_mean(const dp_sim_rtt *r);

void dp_sim_timing_free(dp_sim_timing *t);

/* Number of psi checkpoints dp_sim_run writes. */
size_t dp_sim_checkpoints(const dp_sim_setup *s);
/* Iteration number of checkpoint c (0-based). */
size_t dp_sim_checkpoint_k(const dp_sim_setup *s, size_t c);

/* A per-owner setting given on the command line as one value for all
 * owners or one each: n values v[0..n) (n = 1 or N; n = 0 gives `def` to
 * all) into out[0..N).  `flag` ("--epsilon") names it in the error.
 * Errors: DP_EINVAL ("--epsilon has 3 values for 2 owners (give 1 or 2)"),
 * out untouched. */
int dp_sim_per_owner(const char *flag, const double *v, size_t n, size_t N, double def,
		     double *out);
int dp_sim_per_owner_u64(const char *flag, const size_t *v, size_t n, size_t N, uint64_t def,
			 uint64_t *out);

#endif
