/* SPDX-License-Identifier: Apache-2.0 */
/* dpasync sim --mode p2p: the peer mode of docs/design.md §6 in one
 * process (tools/lib/p2psim.h), one agent per data file, the graph from a
 * graph file; writes every agent's model as ownerd --peer would.  Reached
 * from dp_cmd_sim when --mode is p2p (its options differ from the learner
 * modes', so it has its own table). */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/algo.h"
#include "common/core/error.h"
#include "common/core/exit.h"
#include "common/core/file.h"
#include "common/core/graph.h"
#include "common/core/json.h"
#include "common/core/modelfile.h"
#include "common/core/query.h"
#include "common/core/schedule.h"
#include "common/core/serve.h"
#include "common/core/servefile.h"
#include "common/net/config.h"
#include "tools/cmds.h"
#include "tools/lib/optimum.h"
#include "tools/lib/ownerdata.h"
#include "tools/lib/p2psim.h"
#include "tools/lib/sim.h"

static const char p2p_summary[] =
	"Simulate the peer mode (docs/p2p.md) over agent datasets FILE... (one CSV\n"
	"per agent; the agent's id is the file name without .csv or .csv.gz) in one\n"
	"process: agent i wakes on its own Poisson clock, answers its own noisy\n"
	"gradient query at its model (clipped, lattice Laplace noise at its\n"
	"per-wake-up epsilon, as ownerd) and smooths its model with its neighbours'\n"
	"(dp_algo_p2p_update), T_i times.  Writes DIR/agents/ID.json (each agent's\n"
	"model, the model file format), DIR/schedule.csv (the order of wake-ups,\n"
	"usable as --schedule) and DIR/summary.json.";

static const char p2p_epilog[] =
	"Per agent i: confidence c_i = m_i / max_j m_j (m_i its rows), lambda_i =\n"
	"--lambda or --lambda-per-row / m_i, smoothness L_i = 2 x2max + 2 lambda_i\n"
	"(linear) or x2max/4 + 2 lambda_i (logistic), step alpha_i = 1/(1 + mu c_i\n"
	"L_i); its budget (--epsilon, --delta) is split equally over its --wakeups.\n"
	"--local instead writes each agent's own minimiser of its regularised loss\n"
	"(no graph, no noise): the purely local baseline.\n"
	"--serve refit also writes each agent's served model DIR/served/ID.json: its\n"
	"own rows' fit towards a prior pooled from released messages (--release\n"
	"models: the run's noisy models; grad0: one noisy clipped gradient at 0 per\n"
	"agent, its whole budget), tau chosen by --folds cross-validation on its\n"
	"rows.  The served model is NOT private: it never leaves the agent.\n"
	"\n"
	"Example: dpasync sim --mode p2p --model logistic --graph graph.csv \\\n"
	"    --mu 1 --epsilon 0.5 --wakeups 20 --out run agents/*.csv";

static const char *const p2p_modes[] = { "p2p", NULL };
static const char *const serve_names[] = { "none", "refit", NULL };
#define release_names dp_serve_release_names
#define prior_names dp_serve_prior_names
#define scale_names dp_serve_scale_names

struct p2p_opts {
	int mode, model, mechanism, serve, release, prior, prior_scale;
	char *target, *schema, *graph, *schedule, *out, *curvature;
	bool bias, local, have_lambda, have_lpr, have_x2max, have_release, have_prior, have_tau,
	     have_scale,
	     have_folds, have_wakeups;
	double mu, lambda_per_row, delta, clip, x2max, theta_max, warm_start;
	uint64_t seed, warm_steps, folds;
	struct dp_config_doubles eps, rates, lambda, taus;
	struct dp_config_sizes wakeups;
	struct dp_config_strings files;
};

/* The --serve options together (docs/p2p.md §7). */
static int check_serve(const struct p2p_opts *o)
{
	bool zero = false;

	if (!o->serve) {
		if (o->have_release || o->have_prior || o->have_tau || o->have_folds ||
		    o->have_scale || o->curvature)
			return dp_error_set(DP_EINVAL, "--release, --prior, --prior-scale, --curvature, "
					    "--tau and --folds need --serve refit");
		return 0;
	}
	if (o->curvature && o->release != DP_P2PSIM_RELEASE_GRAD0)
		return dp_error_set(DP_EINVAL, "--curvature turns released gradients into a prior: "
				    "it needs --release grad0");
	if (o->local)
		return dp_error_set(DP_EINVAL, "--local and --serve exclude each other (the local "
				    "model is the served model's tau = 0)");
	if (o->release == DP_P2PSIM_RELEASE_GRAD0 && (o->warm_start > 0 || o->schedule ||
						       o->have_wakeups))
		return dp_error_set(DP_EINVAL, "--release grad0 makes one release per agent: "
				    "--wakeups, --schedule and --warm-start do not apply");
	for (size_t t = 0; t < o->taus.n; t++)
		zero = zero || o->taus.v[t] == 0;
	if (o->have_tau && o->taus.n > 1 && !zero)
		return dp_error_set(DP_EINVAL, "--tau: a grid must include 0 (the local model is "
				    "always a candidate; one value fixes tau)");
	return 0;
}

static int check_opts(void *arg)
{
	const struct p2p_opts *o = arg;

	if (o->model == DP_MODEL_SVM)
		return dp_error_set(DP_EINVAL, "--model svm: the hinge loss is not smooth; the peer "
				    "update needs linear or logistic");
	if (o->mechanism == DP_MECH_GAUSSIAN && !(o->delta > 0))
		return dp_error_set(DP_EINVAL, "--mechanism gaussian needs --delta > 0 (delta 0 is "
				    "pure epsilon-DP, which only laplace gives)");
	if (o->have_lambda && o->have_lpr)
		return dp_error_set(DP_EINVAL, "give --lambda or --lambda-per-row, not both");
	if (!o->local && o->graph == NULL)
		return dp_error_set(DP_EINVAL, "--graph FILE is required (but for --local)");
	if (o->local && o->warm_start > 0)
		return dp_error_set(DP_EINVAL, "--local trains no peer model: --warm-start does not "
				    "apply");
	if (o->local && o->schedule)
		return dp_error_set(DP_EINVAL, "--local trains no peer model: --schedule does not "
				    "apply");
	return check_serve(o);
}

/* dp_error_set with the current detail inside the new one: the detail is
 * copied first, as it lives in the buffer dp_error_set writes. */
static int prefix_detail(int rc, const char *prefix)
{
	char was[512];

	snprintf(was, sizeof(was), "%s", dp_error_detail(rc));
	return dp_error_set(rc, "%s%s", prefix, was);
}

/* Everything the command allocates, freed in one place. */
struct p2p_run {
	dp_ownerdata od, curv;
	dp_graph *graph;
	char **ids;
	double *c, *lambda, *L_loc, *eps, *eps_t, *eps_warm, *rate, *theta, *served, *prior;
	size_t *tau_idx;
	uint64_t *wakeups, *done, *warm;
	size_t *schedule, *order;
	size_t steps;
};

static void run_free(struct p2p_run *r)
{
	for (size_t i = 0; r->ids && i < r->od.N; i++)
		free(r->ids[i]);
	free(r->ids);
	dp_ownerdata_free(&r->od);
	dp_ownerdata_free(&r->curv);
	dp_graph_free(r->graph);
	free(r->c);
	free(r->lambda);
	free(r->L_loc);
	free(r->eps);
	free(r->eps_t);
	free(r->eps_warm);
	free(r->warm);
	free(r->rate);
	free(r->theta);
	free(r->served);
	free(r->prior);
	free(r->tau_idx);
	free(r->wakeups);
	free(r->done);
	free(r->schedule);
	free(r->order);
}

/* rc's detail prefixed with the agent's id. */
static int agent_error(int rc, const char *id)
{
	char prefix[300];

	snprintf(prefix, sizeof(prefix), "agent '%s': ", id);
	return prefix_detail(rc, prefix);
}

static bool grad0(const struct p2p_opts *o)
{
	return o->serve && o->release == DP_P2PSIM_RELEASE_GRAD0;
}

/* Agent i's per-wake-up and per-warm-step epsilon, or rho for Gaussian
 * (docs/p2p.md, docs/peer-agents.md "Privacy"). */
static int agent_split(const struct p2p_opts *o, struct p2p_run *r, size_t i)
{
	r->warm[i] = o->warm_start > 0 ? o->warm_steps : 0;
	return dp_p2psim_mech_split((dp_mech)o->mechanism, r->od.ds[0].p, r->eps[i],
				    o->warm_start, o->warm_steps, o->delta, r->wakeups[i],
				    &r->eps_t[i], &r->eps_warm[i]);
}

/* The per-agent parameters of the epilog. */
static int agent_params(const struct p2p_opts *o, struct p2p_run *r, size_t p)
{
	size_t N = r->od.N, mmax = 0;
	double x2max = o->have_x2max ? o->x2max : (double)p;
	int rc;

	rc = dp_sim_per_owner("--epsilon", o->eps.v, o->eps.n, N, 1.0, r->eps);
	if (rc == 0)
		rc = dp_sim_per_owner("--rate", o->rates.v, o->rates.n, N, 1.0, r->rate);
	if (rc == 0 && o->have_lambda)
		rc = dp_sim_per_owner("--lambda", o->lambda.v, o->lambda.n, N, 0.0, r->lambda);
	if (rc == 0)
		rc = dp_sim_per_owner_u64("--wakeups", o->wakeups.v, o->wakeups.n, N, 10, r->wakeups);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < N; i++)
		mmax = r->od.ds[i].n > mmax ? r->od.ds[i].n : mmax;
	for (size_t i = 0; i < N; i++) {
		double m = (double)r->od.ds[i].n;

		r->c[i] = m / (double)mmax;
		if (!o->have_lambda)
			r->lambda[i] = o->lambda_per_row / m;
		if (!(r->lambda[i] > 0) && o->model != DP_MODEL_LINEAR)
			return dp_error_set(DP_EINVAL, "agent '%s': lambda must be > 0 for logistic",
					    r->ids[i]);
		r->L_loc[i] = dp_algo_p2p_smoothness(o->model, x2max, r->lambda[i]);
		if (grad0(o))
			r->wakeups[i] = 1;   /* the one release spends the whole budget */
		rc = agent_split(o, r, i);
		if (rc != 0)
			return agent_error(rc, r->ids[i]);
	}
	return 0;
}

/* --local: each agent's own minimiser of L_i into r->theta. */
static int local_models(const struct p2p_opts *o, struct p2p_run *r, size_t p)
{
	for (size_t i = 0; i < r->od.N; i++) {
		double f;
		int rc = dp_optimum_solve(o->model, &r->od.view[i], 1, r->lambda[i], o->theta_max,
					  r->theta + i * p, &f);

		if (rc != 0)
			return agent_error(rc, r->ids[i]);
	}
	return 0;
}

static double tau_of(const struct p2p_opts *o, size_t k)
{
	return o->taus.n ? o->taus.v[k] : dp_serve_taus[k];
}

static int write_summary(const struct p2p_opts *o, const struct p2p_run *r, size_t p,
			 const char *path)
{
	struct json_object *j = json_object_new_object(), *agents;
	bool gauss = o->mechanism == DP_MECH_GAUSSIAN;
	int rc;

	if (j == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	agents = json_object_new_array();
	rc = dp_json_add(j, "mode", json_object_new_string(o->local ? "local" : "p2p"));
	if (rc == 0)
		rc = dp_json_add(j, "model", json_object_new_string(dp_model_name(o->model)));
	if (rc == 0)
		rc = dp_json_add(j, "N", json_object_new_uint64(r->od.N));
	if (rc == 0)
		rc = dp_json_add(j, "p", json_object_new_uint64(p));
	if (rc == 0)
		rc = dp_json_add(j, "mu", dp_json_double(o->mu));
	if (rc == 0)
		rc = dp_json_add(j, "mechanism",
				 json_object_new_string(dp_query_mech_name((dp_mech)o->mechanism)));
	if (rc == 0)
		rc = dp_json_add(j, gauss ? "clip_l2" : "clip_l1", dp_json_double(o->clip));
	if (rc == 0)
		rc = dp_json_add(j, "delta", dp_json_double(o->delta));
	if (rc == 0)
		rc = dp_json_add(j, "warm_start", dp_json_double(o->warm_start));
	if (rc == 0)
		rc = dp_json_add(j, "warm_steps", json_object_new_uint64(o->warm_start > 0 ?
									  o->warm_steps : 0));
	if (rc == 0)
		rc = dp_json_add(j, "serve", json_object_new_string(serve_names[o->serve]));
	if (rc == 0 && o->serve)
		rc = dp_json_add(j, "release", json_object_new_string(release_names[o->release]));
	if (rc == 0 && o->serve)
		rc = dp_json_add(j, "prior", json_object_new_string(prior_names[o->prior]));
	if (rc == 0 && o->serve)
		rc = dp_json_add(j, "folds", json_object_new_uint64(o->folds));
	if (rc == 0 && o->serve)
		rc = dp_json_add(j, "prior_scale", json_object_new_string(
			scale_names[o->prior_scale]));
	if (rc == 0 && o->serve)
		rc = dp_json_add(j, "tau_grid", dp_json_double_array(
			o->taus.n ? o->taus.v : dp_serve_taus, o->taus.n ? o->taus.n : DP_SERVE_TAUS));
	if (rc == 0)
		rc = dp_json_add(j, "seed", json_object_new_uint64(o->seed));
	if (rc == 0)
		rc = dp_json_add(j, "steps", json_object_new_uint64(r->steps));
	if (rc == 0)
		rc = dp_json_add(j, "edges", json_object_new_uint64(dp_graph_edges(r->graph)));
	if (rc == 0)
		rc = dp_json_add(j, "agents", agents);
	for (size_t i = 0; i < r->od.N && rc == 0; i++) {
		struct json_object *a = json_object_new_object();

		rc = dp_json_push(agents, a);
		if (rc == 0)
			rc = dp_json_add(a, "id", json_object_new_string(r->ids[i]));
		if (rc == 0)
			rc = dp_json_add(a, "rows", json_object_new_uint64(r->od.ds[i].n));
		if (rc == 0)
			rc = dp_json_add(a, "neighbours", json_object_new_uint64(
				dp_graph_adj(r->graph, i, NULL, NULL)));
		if (rc == 0)
			rc = dp_json_add(a, "confidence", dp_json_double(r->c[i]));
		if (rc == 0)
			rc = dp_json_add(a, "lambda", dp_json_double(r->lambda[i]));
		if (rc == 0)
			rc = dp_json_add(a, "smoothness", dp_json_double(r->L_loc[i]));
		if (rc == 0)
			rc = dp_json_add(a, "alpha", dp_json_double(
				dp_algo_p2p_alpha(o->mu, r->c[i], r->L_loc[i])));
		if (rc == 0)
			rc = dp_json_add(a, "epsilon", dp_json_double_inf(r->eps[i]));
		if (rc == 0)
			rc = dp_json_add(a, "wakeups_cap", json_object_new_uint64(r->wakeups[i]));
		if (rc == 0)
			rc = dp_json_add(a, "wakeups", json_object_new_uint64(r->done[i]));
		if (rc == 0)
			rc = dp_json_add(a, grad0(o) ? (gauss ? "rho_per_release" : "epsilon_per_release")
					 : gauss ? "rho_per_wakeup" : "epsilon_per_wakeup",
					 dp_json_double_inf(r->eps_t[i]));
		if (rc == 0)
			rc = dp_json_add(a, "warm_steps", json_object_new_uint64(r->warm[i]));
		if (rc == 0)
			rc = dp_json_add(a, "releases", json_object_new_uint64(r->done[i] + r->warm[i]));
		if (rc == 0 && o->serve)
			rc = dp_json_add(a, "tau", dp_json_double(tau_of(o, r->tau_idx[i])));
		if (rc == 0)
			rc = dp_json_add(a, gauss ? "rho_per_warm_step" : "epsilon_per_warm_step",
					 dp_json_double_inf(r->eps_warm[i]));
	}
	if (rc != 0)
		rc = dp_error_set(DP_ENOMEM, "out of memory");
	else
		rc = dp_json_write_file(path, j, 0644);
	json_object_put(j);
	return rc;
}

/* DIR/served/ID.json: the model file, mode "served", with what it was
 * fitted from and that it is not private. */
static int write_served(const struct p2p_opts *o, const struct p2p_run *r, size_t p, size_t i,
			const char *path)
{
	dp_modelfile mf = { .model = o->model, .p = p, .theta = r->served + i * p,
			    .features = r->od.ds[i].names, .target = r->od.ds[i].target,
			    .bias = o->bias, .T = r->done[i], .lambda = r->lambda[i],
			    .theta_max = o->theta_max };
	const size_t *nb;
	const double *w;
	size_t k = o->prior == DP_P2PSIM_PRIOR_ALL ? r->od.N :
		   1 + dp_graph_adj(r->graph, i, &nb, &w);
	dp_servefile_from from = {
		.release = release_names[o->release], .prior = prior_names[o->prior],
		.curvature = o->release == DP_P2PSIM_RELEASE_GRAD0 ?
			     (o->curvature ? o->curvature : "own rows") : NULL,
		.mechanism = dp_query_mech_name((dp_mech)o->mechanism),
		.prior_scale = scale_names[o->prior_scale], .tau = tau_of(o, r->tau_idx[i]),
		.folds = o->folds, .prior_theta = r->prior + i * p, .pooled = k, .expected = k };

	return dp_servefile_write(path, &mf, &from, DP_FILE_MODE_SHARED);
}

/* DIR/agents/ID.json (the released models: none for --release grad0),
 * DIR/schedule.csv, DIR/served/ID.json with --serve, DIR/summary.json. */
static int write_outputs(const struct p2p_opts *o, const struct p2p_run *r, size_t p)
{
	char path[4096];
	int rc;

	snprintf(path, sizeof(path), "%s/%s", o->out, grad0(o) ? "served" : "agents");
	rc = dp_file_mkdir_p(path, 0);
	for (size_t i = 0; i < r->od.N && rc == 0 && !grad0(o); i++) {
		dp_modelfile mf = { .model = o->model, .p = p, .theta = r->theta + i * p,
				    .features = r->od.ds[i].names, .target = r->od.ds[i].target,
				    .bias = o->bias, .T = r->done[i], .lambda = r->lambda[i],
				    .theta_max = o->theta_max,
				    /* the file's clip is L1 (clip_l1): none for
				     * Gaussian, whose L2 clip is in summary.json */
				    .clip = o->mechanism == DP_MECH_GAUSSIAN ? 0.0 : o->clip };

		snprintf(mf.mode, sizeof(mf.mode), "%s", o->local ? "local" : "peer");
		snprintf(path, sizeof(path), "%s/agents/%s.json", o->out, r->ids[i]);
		rc = dp_modelfile_write(path, &mf, DP_FILE_MODE_SHARED);
	}
	if (rc == 0 && o->serve) {
		snprintf(path, sizeof(path), "%s/served", o->out);
		rc = dp_file_mkdir_p(path, 0);
	}
	for (size_t i = 0; i < r->od.N && rc == 0 && o->serve; i++) {
		snprintf(path, sizeof(path), "%s/served/%s.json", o->out, r->ids[i]);
		rc = write_served(o, r, p, i, path);
	}
	if (rc == 0 && !o->local && !grad0(o)) {
		snprintf(path, sizeof(path), "%s/schedule.csv", o->out);
		rc = dp_schedule_write(path, (const char *const *)r->ids, r->order, r->steps);
	}
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/summary.json", o->out);
		rc = write_summary(o, r, p, path);
	}
	return rc;
}

/* The simulator's setup from the options and the agents' parameters. */
static void setup(const struct p2p_opts *o, const struct p2p_run *r, dp_p2psim_setup *s)
{
	s->model = o->model;
	s->N = r->od.N;
	s->p = r->od.ds[0].p;
	s->ds = r->od.view;
	s->graph = r->graph;
	s->mu = o->mu;
	s->c = r->c;
	s->lambda = r->lambda;
	s->L_loc = r->L_loc;
	s->mech = (dp_mech)o->mechanism;
	s->eps_t = r->eps_t;
	s->warm = r->warm;
	s->eps_warm = r->eps_warm;
	s->clip = o->clip;
	s->wakeups = r->wakeups;
	s->rate = r->rate;
	s->schedule = r->schedule;
	s->steps = r->steps;
}

/* --serve refit: every agent's served model from the releases in
 * r->theta (the run's models, or the one-shot gradients). */
static int serve(const struct p2p_opts *o, struct p2p_run *r, const dp_p2psim_setup *s)
{
	dp_p2psim_serve v = { .release = (dp_p2psim_release)o->release,
			      .prior = (dp_p2psim_prior)o->prior,
			      .taus = o->have_tau ? o->taus.v : dp_serve_taus,
			      .ntau = o->have_tau ? o->taus.n : DP_SERVE_TAUS,
			      .folds = o->folds, .scale = o->prior_scale == 0,
			      .bias_free = o->bias };
	int rc;

	if (o->curvature) {
		rc = dp_ownerdata_load(&r->curv, (char *const *)&o->curvature, 1,
				       o->schema ? NULL : o->target, o->bias, o->schema,
				       (dp_model)o->model);
		if (rc == 0 && r->curv.ds[0].p != s->p)
			rc = dp_error_set(DP_EINVAL, "--curvature %s: %zu columns, the agents' "
					  "data %zu", o->curvature, r->curv.ds[0].p, s->p);
		if (rc != 0)
			return rc;
		v.curvature = &r->curv.ds[0];
	}

	r->served = calloc(s->N * s->p, sizeof(double));
	r->prior = calloc(s->N * s->p, sizeof(double));
	r->tau_idx = calloc(s->N, sizeof(size_t));
	if (r->served == NULL || r->prior == NULL || r->tau_idx == NULL)
		return DP_ENOMEM;
	return dp_p2psim_serve_all(s, &v, r->theta, r->served, r->prior, r->tau_idx);
}

static int simulate(void *arg)
{
	const struct p2p_opts *o = arg;
	struct p2p_run r = { 0 };
	dp_p2psim_setup s = { 0 };
	enum dp_exit_phase phase = DP_EXIT_PHASE_LOAD;
	size_t N, p;
	int rc, status;

	rc = dp_ownerdata_load(&r.od, o->files.v, o->files.n,
			       o->schema ? NULL : o->target, o->bias, o->schema,
			       (dp_model)o->model);
	if (rc != 0)
		goto fail;
	N = r.od.N;
	p = r.od.ds[0].p;
	r.ids = calloc(N, sizeof(char *));
	r.c = calloc(N, sizeof(double));
	r.lambda = calloc(N, sizeof(double));
	r.L_loc = calloc(N, sizeof(double));
	r.eps = calloc(N, sizeof(double));
	r.eps_t = calloc(N, sizeof(double));
	r.eps_warm = calloc(N, sizeof(double));
	r.warm = calloc(N, sizeof(uint64_t));
	r.rate = calloc(N, sizeof(double));
	r.theta = calloc(N * p, sizeof(double));
	r.wakeups = calloc(N, sizeof(uint64_t));
	r.done = calloc(N, sizeof(uint64_t));
	if (!r.ids || !r.c || !r.lambda || !r.L_loc || !r.eps || !r.eps_t || !r.eps_warm || !r.warm || !r.rate || !r.theta ||
	    !r.wakeups || !r.done) {
		rc = DP_ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < N; i++) {
		r.ids[i] = dp_ownerdata_id(o->files.v[i]);
		if (r.ids[i] == NULL) {
			rc = DP_ENOMEM;
			goto fail;
		}
	}
	if (o->graph)
		rc = dp_graph_load(o->graph, (const char *const *)r.ids, N, &r.graph);
	else   /* --local: every agent alone */
		rc = dp_graph_new((const char *const *)r.ids, N, NULL, NULL, NULL, 0, &r.graph);
	if (rc == DP_EINVAL)   /* the ids themselves: two files with one name */
		rc = prefix_detail(rc, "agent data files: ");
	if (rc == 0)
		rc = agent_params(o, &r, p);
	if (rc == 0 && o->schedule) {
		rc = dp_schedule_load(o->schedule, (const char *const *)r.ids, N, &r.schedule,
				      &r.steps);
		if (rc == 0 && o->wakeups.n == 0) {
			/* T_i defaults to the agent's count in the schedule. */
			memset(r.wakeups, 0, N * sizeof(uint64_t));
			for (size_t k = 0; k < r.steps; k++)
				r.wakeups[r.schedule[k]]++;
			for (size_t i = 0; i < N && rc == 0; i++) {
				if (r.wakeups[i] == 0)
					r.wakeups[i] = 1;   /* never woken: no budget used */
				rc = agent_split(o, &r, i);
			}
		}
	}
	if (rc != 0)
		goto fail;
	if (o->local) {
		phase = DP_EXIT_PHASE_RUN;
		rc = local_models(o, &r, p);
	} else if (grad0(o)) {
		setup(o, &r, &s);
		r.steps = 0;
		phase = DP_EXIT_PHASE_RUN;
		rc = dp_p2psim_release_grad0(&s, o->seed, r.eps_t, r.theta);
		for (size_t i = 0; i < N; i++)
			r.done[i] = 1;
	} else {
		setup(o, &r, &s);
		r.steps = dp_p2psim_steps(&s);
		r.order = calloc(r.steps ? r.steps : 1, sizeof(size_t));
		if (r.order == NULL) {
			rc = DP_ENOMEM;
			goto fail;
		}
		rc = dp_p2psim_check(&s);   /* the schedule against --wakeups */
		if (rc != 0)
			goto fail;
		phase = DP_EXIT_PHASE_RUN;
		rc = dp_p2psim_run(&s, o->seed, r.theta, r.order, r.done);
	}
	if (rc == 0 && o->serve)
		rc = serve(o, &r, &s);
	if (rc == 0)
		rc = write_outputs(o, &r, p);
	if (rc != 0)
		goto fail;
	printf("mode=p2p model=%s N=%zu p=%zu edges=%zu steps=%zu%s%s out=%s\n",
	       dp_model_name(o->model), N, p, dp_graph_edges(r.graph), r.steps,
	       o->local ? " local=1" : "",
	       o->mechanism == DP_MECH_GAUSSIAN ? " mechanism=gaussian" : "", o->out);
	status = DP_EXIT_OK;
	goto done;
fail:
	dp_cmd_fail("sim", "%s", rc == DP_ENOMEM ? "out of memory" : dp_error_detail(rc));
	status = dp_exit_status(rc, phase);
done:
	run_free(&r);
	return status;
}

int dp_cmd_sim_p2p(int argc, char **argv)
{
	struct p2p_opts o = { 0 };
	const struct dp_config_entry entries[] = {
		{ .name = "mode", DP_CFG_ENUM(&o.mode, p2p_modes), .def = "p2p", .metavar = "M",
		  .help = "p2p (for async | sync1 | sync2 see dpasync\nsim --help)" },
		{ .name = "model", DP_CFG_ENUM(&o.model, dp_model_names), .def = "linear",
		  .metavar = "M", .help = "linear | logistic" },
		{ .name = "target", DP_CFG_STRING(&o.target), .metavar = "COL",
		  .help = "target column (required: no default; with\n--schema: the schema's)" },
		{ .name = "bias", DP_CFG_BOOL(&o.bias), .help = "append a constant-1 feature" },
		{ .name = "schema", DP_CFG_PATH(&o.schema), .metavar = "FILE",
		  .help = "feature schema from dpasync prep, applied to\nraw FILEs" },
		{ .name = "graph", DP_CFG_PATH(&o.graph), .metavar = "FILE", .help = "graph file a,b,w over the agents' ids\n(docs/p2p.md)" },
		{ .name = "mu", DP_CFG_DOUBLE(&o.mu), .def = "1", .min = 0, .max = INFINITY,
		  .min_exclusive = true, .metavar = "MU",
		  .help = "trade-off between smoothness over the graph\nand the local losses" },
		{ .name = "lambda", DP_CFG_DOUBLES(&o.lambda), .min = 0, .max = INFINITY,
		  .given = &o.have_lambda, .metavar = "L[,..]",
		  .help = "lambda_i, one for all or one per agent" },
		{ .name = "lambda-per-row", DP_CFG_DOUBLE(&o.lambda_per_row), .def = "1", .min = 0,
		  .max = INFINITY, .min_exclusive = true, .given = &o.have_lpr, .metavar = "V",
		  .help = "lambda_i = V / m_i (when --lambda is not\ngiven)" },
		{ .name = "epsilon", DP_CFG_DOUBLES_INF(&o.eps), .def = "1", .min = 0,
		  .max = INFINITY, .min_exclusive = true, .metavar = "E[,..]",
		  .help = "each agent's budget, one for all or one per\nagent; inf = no noise" },
		{ .name = "mechanism", DP_CFG_ENUM(&o.mechanism, dp_query_mech_names),
		  .def = "laplace", .metavar = "M",
		  .help = "laplace (L1 clip, the paper's) | gaussian\n(L2 clip, zCDP at --delta; "
			  "docs/peer-agents.md)" },
		{ .name = "delta", DP_CFG_DOUBLE(&o.delta), .def = "0", .min = 0, .max = 1,
		  .metavar = "D",
		  .help = "each agent's delta: > 0 allows the advanced\ncomposition over its wake-ups "
			  "(gaussian:\nneeded, its zCDP budget is taken at it)" },
		{ .name = "wakeups", DP_CFG_SIZES(&o.wakeups), .min = 1, .max = INFINITY,
		  .given = &o.have_wakeups, .metavar = "T[,..]",
		  .help = "T_i, the wake-ups the budget is split over,\none for all or one per "
			  "agent (default 10;\nwith --schedule: the agent's count there)" },
		{ .name = "rate", .alias = "rates", DP_CFG_DOUBLES(&o.rates),
		  .min = 0, .max = INFINITY,
		  .min_exclusive = true, .metavar = "R[,..]",
		  .help = "agents' Poisson clock rates (default 1 each)" },
		{ .name = "clip", DP_CFG_DOUBLE(&o.clip), .def = "1", .min = 0, .max = INFINITY,
		  .min_exclusive = true, .metavar = "X",
		  .help = "clip bound on per-row gradients: L1 (the\npaper's L0), L2 for gaussian" },
		{ .name = "warm-start", DP_CFG_DOUBLE(&o.warm_start), .def = "0", .min = 0,
		  .max = INFINITY, .metavar = "EPS",
		  .help = "private local warm start spending EPS of\neach agent's --epsilon, as "
			  "ownerd --peer\n(0: none)" },
		{ .name = "warm-steps", DP_CFG_U64(&o.warm_steps), .def = "10", .min = 1,
		  .max = 1000, .metavar = "K",
		  .help = "noisy gradient steps of the warm start\n(EPS/K each)" },
		{ .name = "x2max", DP_CFG_DOUBLE(&o.x2max), .min = 0, .max = INFINITY,
		  .given = &o.have_x2max, .metavar = "B",
		  .help = "public bound on ||x||_2^2 for the smoothness\n(default p: features in "
			  "[-1, 1])" },
		{ .name = "schedule", DP_CFG_PATH(&o.schedule), .metavar = "FILE",
		  .help = "follow this order of wake-ups (step,agent;\ndocs/p2p.md) instead of "
			  "the clocks" },
		{ .name = "local", DP_CFG_BOOL(&o.local),
		  .help = "write each agent's own minimiser instead\n(the local baseline)" },
		{ .name = "theta-max", DP_CFG_DOUBLE(&o.theta_max), .def = "100", .min = 0,
		  .max = INFINITY, .min_exclusive = true, .metavar = "M",
		  .help = "--local: box bound of the minimiser" },
		{ .name = "serve", DP_CFG_ENUM(&o.serve, serve_names), .def = "none", .metavar = "S",
		  .help = "refit: also write each agent's served model\nDIR/served/ID.json "
			  "(docs/p2p.md §7; not\nprivate, never sent)" },
		{ .name = "release", DP_CFG_ENUM(&o.release, release_names), .def = "models",
		  .given = &o.have_release, .metavar = "R",
		  .help = "--serve: what agents release: models (the\nrun's noisy models) | grad0 "
			  "(one noisy\nclipped gradient at 0, the whole budget)" },
		{ .name = "prior", DP_CFG_ENUM(&o.prior, prior_names), .def = "graph",
		  .given = &o.have_prior, .metavar = "P",
		  .help = "--serve: the prior pools the releases of\ngraph (the agent and its "
			  "neighbours, W_ij)\n| all (every agent)" },
		{ .name = "prior-scale", DP_CFG_ENUM(&o.prior_scale, scale_names), .def = "fit",
		  .given = &o.have_scale, .metavar = "S",
		  .help = "--serve: fit (the prior's length fitted on\nthe agent's rows) | none" },
		{ .name = "curvature", DP_CFG_PATH(&o.curvature), .metavar = "FILE",
		  .help = "--release grad0: public rows (the agents'\ncolumns) whose second moment "
			  "turns the\npooled gradient into the prior (default:\nthe agent's own rows)" },
		{ .name = "tau", DP_CFG_DOUBLES(&o.taus), .min = 0, .max = INFINITY,
		  .given = &o.have_tau, .metavar = "T,..",
		  .help = "--serve: the tau grid, 0 among it (default\n0,1,3,10,30,100,300,1000)" },
		{ .name = "folds", DP_CFG_U64(&o.folds), .def = "5", .min = 2, .max = 1000,
		  .given = &o.have_folds, .metavar = "K",
		  .help = "--serve: cross-validation folds for tau (row\nr in fold r mod K)" },
		{ .name = "seed", DP_CFG_U64(&o.seed), .def = "1", .metavar = "S", .help = "seed" },
		{ .name = "out", DP_CFG_PATH(&o.out), .flags = DP_CONFIG_REQUIRED, .metavar = "DIR",
		  .help = "output directory" },
		DP_CONFIG_END,
	};
	const struct dp_config_spec spec = {
		.program = "dpasync sim",
		.command = true,
		.summary = p2p_summary,
		.epilog = p2p_epilog,
		.entries = entries,
		.validate = check_opts,
		.validate_arg = &o,
		.args = &o.files,
		.args_metavar = "FILE...",
		.args_min = 1,
	};

	return dp_cmd_run(&spec, argc, argv, simulate, &o);
}
