/* SPDX-License-Identifier: Apache-2.0 */
/* The planner: every setting of a job chosen from public information, and
 * the utility it predicts (docs/planner.md).
 *
 * A private model is only worth its budget if it is useful.  The planner
 * chooses the iterations T, the step, the clip bound Xi and every owner's
 * answer cap K_i from what is public -- the owners' row counts n_i and
 * budgets eps_i, the model, p, lambda, N, the clock rates, and either
 * constants measured on a public sample or, without one, constants assumed
 * from the data's shape -- and never from an owner's rows.  learnerd,
 * `dpasync sim` and `dpasync forecast` all call dp_plan_make(), so the
 * simulator never reports a utility the daemons would not plan for.
 *
 * The prediction is exact for the async algorithm (docs/design.md §4) on a
 * quadratic objective with owners that hold alike data and are picked at
 * random: per eigen-direction of the curvature, the first and second
 * moments of (theta_L, theta_i) follow a linear recursion whose T-step map
 * is taken by repeated squaring.  The sync algorithms (§5) get the same
 * treatment with their own recursions.  Clipping enters through the
 * constants: the clipped fixed point theta*_Xi, its curvature, and the
 * cost f(theta*_Xi) - f* of the clip.  docs/planner.md derives it and
 * measures it against the simulator. */
#ifndef DP_PLAN_H
#define DP_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "common/core/model.h"
#include "common/core/query.h"

enum dp_plan_mode { DP_PLAN_ASYNC = 0, DP_PLAN_SYNC1 = 1, DP_PLAN_SYNC2 = 2 };

/* The mode names in enum order, NULL-terminated (a config table's ENUM
 * values). */
extern const char *const dp_plan_mode_names[];

/* "async" | "sync1" | "sync2"; DP_EINVAL otherwise. */
int dp_plan_mode_parse(const char *s, enum dp_plan_mode *out);
const char *dp_plan_mode_name(enum dp_plan_mode m);

/* One candidate clip bound and what clipping there does to the problem. */
typedef struct dp_plan_clip {
	double clip;     /* Xi, L1 */
	double f_clip;   /* f at the clipped fixed point theta*_Xi */
	double *h;       /* p: eigenvalues of the curvature of the clipped mean
			    loss gradient at theta*_Xi (regulariser excluded) */
	double *t;       /* p: theta*_Xi in that eigenbasis */
	double *hf;      /* p: curvature of the unclipped mean loss in the same
			    basis (what the excess of f is measured with) */
	double *hs;      /* p or NULL: the secant curvature from theta = 0 to
			    theta*_Xi in the same basis, -(G(0))_e / t_e - 2
			    lambda with G the clipped mean loss gradient: how
			    hard the clipped gradient pulls on the way from 0,
			    where large gradients are clipped more (linear) or
			    the loss is stiffer (logistic).  It drives the
			    optimisation part of the forecast; h the noise
			    part.  NULL: h */
	/* The way from theta = 0, measured on the sample (docs/planner.md §2
	 * "The way from theta = 0"): theta(tau), the gradient flow of the
	 * clipped objective (mean clipped loss gradient plus 2 lambda theta)
	 * from theta(0) = 0, at npath times tau[0] = 0 < tau[1] < ...  The
	 * mean iterate of a run is placed on it at the time whose quadratic
	 * excess equals the run's, and the excess of f is read off path_f
	 * instead of the quadratic model; the noise and the run's own spread
	 * are measured with the curvature there (path_h).  npath 0 (shape-only
	 * constants, files from before): the secant model above. */
	size_t npath;
	double *tau;     /* npath */
	double *path_f;  /* npath: f(theta(tau)) */
	double *path_h;  /* npath x p, row by row: the unclipped curvature of
			    the mean loss at theta(tau) along each
			    eigen-direction (hf at the end of the way) */
} dp_plan_clip;

/* Most points a path may have (dp_plan_public_parse refuses more). */
#define DP_PLAN_PATH_MAX 64

/* The excess of f over f(theta*_Xi) the linear flow from theta = 0 leaves
 * at time tau in the quadratic picture of candidate k (p directions):
 * sum_q (hf_q / 2 + lambda) t_q^2 exp(-2 (h_q + 2 lambda) tau).  The
 * measured way is compared with it (docs/planner.md §2). */
double dp_plan_flow_excess(const dp_plan_clip *k, size_t p, double lambda, double tau);

/* The public constants. */
typedef struct dp_plan_public {
	dp_model model;
	size_t p;
	double lambda;
	double f_star;     /* f(theta*) */
	double f_zero;     /* f(0) */
	double alone;      /* tr(H^-1 G) / 2 at theta*: a non-private model
			      fitted on m rows is expected to lose alone / m
			      over f* on fresh rows (the sandwich formula) */
	size_t rows;       /* rows of the public sample (0: none) */
	double h_safe;     /* curvature no direction can exceed: bounds the
			      step so that every update contracts */
	size_t nclip;
	dp_plan_clip *clips;
	bool measured;     /* true: from a public sample; false: shape-only */
	bool l2;           /* the clips are L2 bounds on the per-example
			      gradients (Gaussian answers, docs/planner.md §7);
			      false: L1 (Laplace) */
	char source[256];  /* one line saying where the constants come from */
	/* What the sample's rows were (docs/planner.md "With a public sample"):
	 * its target and its p feature names ("bias" last with a bias
	 * column), so that learnerd can check them against the owners'
	 * schema; NULL when unknown (shape-only, or a file written before
	 * them).  Owned (dp_plan_public_free). */
	char *target;
	char **features;
} dp_plan_public;

/* Constants assumed from the data's shape only, for runs without a public
 * sample: standardised, independent features; regression explaining half
 * of the target's variance; classification with a logistic link of
 * moderate margin.  The step is still bounded by the worst curvature a
 * standardised table can have (h_safe), so the plan is safe on any such
 * data; its psi prediction is only as good as those assumptions
 * (docs/planner.md "Without a public sample").  Errors: DP_EINVAL (p == 0,
 * lambda < 0), DP_ENOMEM.  *out untouched on failure. */
int dp_plan_public_shape(dp_model model, size_t p, double lambda, dp_plan_public *out);

/* The same with the clip candidates as L2 bounds when `l2` (for Gaussian
 * answers: the candidates scale with E ||x||_2, about sqrt(p), instead of
 * E ||x||_1; docs/planner.md §7); dp_plan_public_shape is l2 false. */
int dp_plan_public_shape_norm(dp_model model, size_t p, double lambda, bool l2,
			      dp_plan_public *out);

/* The constants as the JSON object {"model", "p", "lambda", "f_star",
 * "f_zero", "alone", "rows", "h_safe", "measured", "l2" (only when set),
 * "source", "target" and
 * "features" (when set), "clips": [{"clip",
 * "f_clip", "h", "t", "hf", "hs" (when set), "tau", "path_f", "path_h"
 * (an array of npath arrays of p; the three when npath > 0)}...]}; NULL
 * on allocation failure. */
struct json_object *dp_plan_public_json(const dp_plan_public *pub);

/* Read them back from `o` (that object, or an object holding it under
 * "public", as `dpasync forecast` writes); "target" and "features" are
 * optional (files written before them: both NULL), and go together.  `path` names the file in
 * messages.  Errors: DP_EFORMAT with a detail, DP_ENOMEM.  *out untouched
 * on failure. */
int dp_plan_public_parse(const char *path, struct json_object *o, dp_plan_public *out);

/* dp_plan_public_parse of a whole file (at most 64 MiB). */
int dp_plan_public_read(const char *path, dp_plan_public *out);

/* The constants of one norm's clips from a file: with `l2`, the object
 * under "public_l2" when the file has one (`dpasync forecast --delta`
 * writes both), else what dp_plan_public_read reads.  Constants of the
 * other norm are refused (DP_EINVAL, naming the file and the fix), so a
 * Gaussian job is never planned on L1 clips or the reverse.  Errors:
 * dp_plan_public_read's, DP_EINVAL. */
int dp_plan_public_read_norm(const char *path, bool l2, dp_plan_public *out);

/* Copy target and the p names into pub->target and pub->features
 * (replacing any).  0 or DP_ENOMEM (pub's names then NULL). */
int dp_plan_public_set_names(dp_plan_public *pub, const char *target, char *const *names);

void dp_plan_public_free(dp_plan_public *pub);

/* What the planner is asked.  Zero-initialise, then set.  A setting given
 * here (non-zero) is kept; the planner chooses the others. */
typedef struct dp_plan_request {
	enum dp_plan_mode mode;
	size_t N;
	const uint64_t *n_rows;        /* N, each >= 1 */
	const double *epsilon;         /* N, > 0 (INFINITY: no noise) */
	const double *rate;            /* N clock rates, or NULL for equal */
	size_t T;                      /* 0: choose */
	double step;                   /* 0: choose (async eta, sync1 rho/T^2,
					  sync2 c) */
	double clip;                   /* 0: choose among the candidates */
	const uint64_t *answers_cap;   /* N or NULL; an entry 0: choose */
	double margin;                 /* K_i = ceil(T pi_i (1 + margin));
					  0: DP_PLAN_MARGIN */
	size_t T_max;                  /* largest T considered; 0: DP_PLAN_T_MAX */
	size_t slack;                  /* sync: answers each chosen K_i holds
					  beyond the T - 1 rounds, at most
					  DP_PLAN_SLACK_MAX (a restart of an owner
					  costs at most one, docs/ledger.md §9
					  "Sync jobs"); async: unused */
	dp_mech mech;                  /* the answers' mechanism (0: Laplace,
					  the papers'); DP_MECH_GAUSSIAN
					  needs constants of L2-clipped
					  gradients (pub->l2) and delta > 0 */
	double delta;                  /* Gaussian: the owners' delta, each
					  owner's K_i answers sharing its
					  (epsilon_i, delta) by dp_zcdp_share
					  (docs/planner.md §7); Laplace: unused */
	const double *deltas;          /* Gaussian: N per-owner deltas, which
					  replace delta (learnerd: each owner's
					  Hello); NULL: delta for all */
} dp_plan_request;

#define DP_PLAN_SLACK_MAX 1000

#define DP_PLAN_MARGIN 0.1
#define DP_PLAN_T_MAX  100000
/* The largest T (given, or t-max) a request may carry, and the largest
 * T (1 + margin), which bounds every K_i: dp_plan_make refuses more
 * (DP_EINVAL), so that no value it computes overflows an integer. */
#define DP_PLAN_T_LIMIT ((size_t)1000000000000000)   /* 10^15 */
#define DP_PLAN_K_MAX   1e18

/* The plan and its forecast. */
typedef struct dp_plan {
	enum dp_plan_mode mode;
	size_t N, T;
	double step;             /* async eta; sync1 rho/T^2; sync2 c */
	double clip;
	uint64_t *answers_cap;   /* N: K_i (sync: T - 1) */
	double *share;           /* N: pi_i, expected share of the iterations */
	double psi;              /* predicted mean psi of the final model */
	double psi_opt;          /* of which: optimisation left after T steps */
	double psi_noise;        /* of which: the privacy noise */
	double psi_clip;         /* of which: the clip bias */
	double psi_zero;         /* f(0) / f* - 1 */
	double *alone;           /* N: predicted psi of owner i's own
				    non-private model, judged like the joint
				    model on the union of the owners' rows */
	bool *collaborate;       /* N: psi < alone[i] */
	double public_only;      /* predicted psi of a non-private model
				    fitted on the public sample alone; NAN
				    without a sample */
	bool public_better;      /* public_only < psi */
	bool worse_than_zero;    /* psi >= psi_zero */
	bool measured;           /* the constants came from a public sample */
} dp_plan;

/* Plan a job.  Every choice minimises the predicted psi: T over a
 * geometric grid up to T_max (async) or a smaller one (sync), the step over
 * (0, the largest step that keeps every update a contraction], Xi over
 * pub's candidates; K_i = ceil(T pi_i (1 + margin)) with pi_i the owner's
 * share of clock ticks (async; sync: T - 1).  A T the planner chooses never
 * outruns the caps the user fixed: sync T - 1 <= each fixed K_i; async,
 * when every K_i is fixed, T <= their sum.  `pub` must describe the same
 * model and p as the job: the request does not carry them, so the caller
 * checks.  Errors: DP_EINVAL (bad request, including a sync cap below a
 * fixed T - 1, rates whose sum overflows, T or t-max above
 * DP_PLAN_T_LIMIT, T (1 + margin) above DP_PLAN_K_MAX; a Gaussian request
 * without a delta in (0, 1); constants whose clips are of the other norm
 * than the mechanism's (pub->l2); or no setting with a finite prediction;
 * a Gaussian K_i whose budget cannot pay one nano-rho per answer predicts
 * INFINITY and is never chosen), DP_EBUDGET (no finite prediction, and a
 * Gaussian budget that cannot pay its K_i was among the reasons), DP_ENOMEM.  On success the caller frees *out with
 * dp_plan_free. */
int dp_plan_make(const dp_plan_request *req, const dp_plan_public *pub, dp_plan *out);

/* Predicted mean psi (and its three parts, each may be NULL) of fixed
 * settings: T, step, clip candidate index, caps K (N values).  For the
 * tests and for reporting a user's own settings. */
double dp_plan_predict(const dp_plan_request *req, const dp_plan_public *pub, size_t T,
		       double step, size_t clip_index, const uint64_t *K, double *opt,
		       double *noise, double *clipbias);

/* The plan's warnings, one line each, into buf (NUL-terminated, lines
 * separated by '\n'; "" when there is nothing to say): the private model
 * predicted worse than the all-zero model, owners for whom collaborating
 * is predicted not to pay, and shape-only constants. */
void dp_plan_warnings(const dp_plan *pl, const dp_plan_public *pub, char *buf, size_t size);

/* The two mechanisms' predictions side by side, in one line into buf
 * (docs/planner.md §7 "Which mechanism"): "predicted psi: laplace X,
 * gaussian Y (delta D): M is lower by Fx".  *gauss_lower (may be NULL)
 * receives whether Gaussian's is lower, and the return value is the higher
 * psi over the lower. */
double dp_plan_mech_line(const dp_plan *lap, const dp_plan *gau, double delta, char *buf,
			 size_t size, bool *gauss_lower);

/* The plan as JSON: {"mode", "T", "eta" | "rho_over_T2" | "c", "clip",
 * "answers_cap": [...], "share": [...], "psi_mean", "psi_parts":
 * {"optimisation", "noise", "clip"}, "psi_zero", "alone": [...],
 * "collaborate": [...], "public_only" (null without a sample), "measured"};
 * NULL on allocation failure. */
struct json_object *dp_plan_json(const dp_plan *pl);

void dp_plan_free(dp_plan *pl);

#endif
