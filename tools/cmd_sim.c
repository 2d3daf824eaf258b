/* dpasync sim: in-process runs of async | sync1 | sync2 over owner CSVs,
 * R repeats, psi statistics (the data of the paper's Fig. 2). */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/algo.h"
#include "common/core/defaults.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/json.h"
#include "common/core/ledger.h"
#include "common/core/modelfile.h"
#include "common/core/num.h"
#include "common/net/config.h"
#include "tools/cmds.h"
#include "tools/lib/optimum.h"
#include "tools/lib/ownerdata.h"
#include "tools/lib/plot.h"
#include "tools/lib/sim.h"

/* A default of defaults.h as the text the table wants. */
#define STR_(x) #x
#define STR(x) STR_(x)

static const char sim_summary[] =
	"Simulate training over owner datasets FILE... (one CSV per owner) in one\n"
	"process, with the daemons' update and query code and a seeded generator.\n"
	"Writes DIR/summary.json, DIR/psi.csv (percentiles of psi(theta,k) over the\n"
	"repeats), DIR/model.json (the first repeat's model) and DIR/schedule.txt\n"
	"(the first repeat's owner per async iteration, usable as --schedule).";

static const char *const modes[] = { "async", "sync1", "sync2", NULL };

struct sim_opts {
	int mode;                      /* enum dp_sim_mode, index into modes[] */
	int model;                     /* dp_model */
	char *target, *schema, *schedule, *out;
	bool bias, freq_correction, have_eta, have_rho, have_c, have_clip;
	size_t T, answers_cap, repeats, psi_every;
	uint64_t seed;
	double eta, rho, c, lambda, theta_max, clip;
	struct dp_config_doubles eps, rates;
	struct dp_config_strings files;
};

/* Cross-field rules of the options (the table checks each one alone). */
static int check_opts(void *arg)
{
	const struct sim_opts *o = arg;

	if (!(o->lambda > 0) && o->model != DP_MODEL_LINEAR)
		return dp_error_set(DP_EINVAL, "--lambda must be > 0 for logistic and svm "
				    "(strong convexity)");
	if (o->have_eta && o->have_rho)
		return dp_error_set(DP_EINVAL, "give --eta or --rho, not both");
	if (o->have_rho && o->mode == DP_SIM_ASYNC && o->lambda <= 0)
		return dp_error_set(DP_EINVAL, "--rho needs --lambda > 0 (sigma = 2 lambda); use "
				    "--eta");
	return 0;
}

/* --schedule FILE: T owner numbers 1..N, one per line, into *out (0-based);
 * the exit status. */
static int read_schedule(const char *path, size_t T, size_t N, size_t **out)
{
	FILE *f = fopen(path, "r");
	size_t *s, k = 0, line = 0;
	char buf[64];

	if (f == NULL) {
		dp_cmd_fail("sim", "%s: cannot open: %s", path, strerror(errno));
		return 2;
	}
	s = calloc(T, sizeof(size_t));
	if (s == NULL) {
		fclose(f);
		dp_cmd_fail("sim", "out of memory");
		return 1;
	}
	while (fgets(buf, sizeof(buf), f)) {
		size_t v;

		line++;
		buf[strcspn(buf, "\r\n")] = '\0';
		if (dp_num_parse_size("owner", buf, &v) != 0 || v < 1 || v > N) {
			dp_cmd_fail("sim", "%s:%zu: expected an owner number 1..%zu, got '%s'", path,
				    line, N, buf);
			goto fail;
		}
		if (k == T) {
			dp_cmd_fail("sim", "%s:%zu: more than T = %zu lines", path, line, T);
			goto fail;
		}
		s[k++] = v - 1;
	}
	if (k < T) {
		dp_cmd_fail("sim", "%s: %zu lines, expected T = %zu", path, k, T);
		goto fail;
	}
	fclose(f);
	*out = s;
	return 0;
fail:
	fclose(f);
	free(s);
	return 2;
}

/* Owner i's budget: one --epsilon value for all or one each. */
static double eps_of(const struct sim_opts *o, size_t i)
{
	return o->eps.n == 1 ? o->eps.v[0] : o->eps.v[i];
}

static double rate_of(const struct sim_opts *o, size_t i)
{
	return o->rates.n == 0 ? 1.0 : o->rates.n == 1 ? o->rates.v[0] : o->rates.v[i];
}

/* JSON has no infinity: an unlimited budget is written as null. */
static int push_eps(struct json_object *arr, double e)
{
	if (!isinf(e))
		return dp_json_push(arr, dp_json_double(e));
	return json_object_array_add(arr, NULL) == 0 ? 0 : DP_ENOMEM;
}

/* DIR/summary.json.  final[R] (psi at k = T of each repeat) is sorted
 * here. */
static int write_summary(const struct sim_opts *o, const dp_sim_setup *s,
			 const dp_ownerdata *od, double *final, const double *theta1,
			 const double *theta_star, const char *path)
{
	struct json_object *j = json_object_new_object(), *ea = NULL, *psi = NULL;
	size_t R = o->repeats;
	double mean = 0, *rows = NULL;
	int rc = 0;

	if (j == NULL)
		return DP_ENOMEM;
	for (size_t r = 0; r < R; r++)
		mean += final[r];
	mean /= (double)R;
	psi = dp_json_double_array(final, R);   /* in repeat order, before sorting */
	rows = malloc(s->N * sizeof(double));
	ea = json_object_new_array();
	if (psi == NULL || rows == NULL || ea == NULL) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < s->N && rc == 0; i++) {
		rc = push_eps(ea, eps_of(o, i));
		rows[i] = (double)od->ds[i].n;
	}
	if (rc == 0)
		rc = dp_json_add(j, "mode", json_object_new_string(modes[s->mode]));
	if (rc == 0)
		rc = dp_json_add(j, "model", json_object_new_string(dp_model_name(s->model)));
	if (rc == 0)
		rc = dp_json_add(j, "N", json_object_new_uint64(s->N));
	if (rc == 0)
		rc = dp_json_add(j, "p", json_object_new_uint64(s->p));
	if (rc == 0)
		rc = dp_json_add(j, "T", json_object_new_uint64(s->T));
	if (rc == 0)
		rc = dp_json_add(j, "repeats", json_object_new_uint64(R));
	if (rc == 0)
		rc = dp_json_add(j, "seed", json_object_new_uint64(o->seed));
	if (rc == 0)
		rc = dp_json_add(j, "lambda", dp_json_double(s->lambda));
	if (rc == 0)
		rc = dp_json_add(j, "theta_max", dp_json_double(s->theta_max));
	if (rc == 0)
		rc = dp_json_add(j, "clip_l1", dp_json_double(s->clip));
	if (rc == 0)
		rc = dp_json_add(j, "freq_correction", json_object_new_boolean(s->freq_correction));
	if (rc == 0 && s->mode == DP_SIM_ASYNC) {
		rc = dp_json_add(j, "eta", dp_json_double(s->eta));
		if (rc == 0 && s->lambda > 0)
			rc = dp_json_add(j, "rho", dp_json_double(
				dp_algo_rho_from_eta(s->N, s->T, s->lambda, s->eta)));
	} else if (rc == 0 && s->mode == DP_SIM_SYNC1) {
		rc = dp_json_add(j, "rho", dp_json_double(s->rho_over_T2 * (double)s->T *
							   (double)s->T));
	} else if (rc == 0) {
		rc = dp_json_add(j, "c", dp_json_double(s->c));
	}
	if (rc == 0) {
		rc = dp_json_add(j, "epsilon", ea);
		ea = NULL;
	}
	if (rc == 0)
		rc = dp_json_add(j, "n_rows", dp_json_double_array(rows, s->N));
	if (rc == 0)
		rc = dp_json_add(j, "f_star", dp_json_double(s->f_star));
	if (rc == 0)
		rc = dp_json_add(j, "psi_mean", dp_json_double(mean));
	if (rc == 0)
		rc = dp_json_add(j, "psi_median", dp_json_double(dp_plot_percentile(final, R, 50)));
	if (rc == 0)
		rc = dp_json_add(j, "psi_p25", dp_json_double(dp_plot_percentile(final, R, 25)));
	if (rc == 0)
		rc = dp_json_add(j, "psi_p75", dp_json_double(dp_plot_percentile(final, R, 75)));
	if (rc == 0) {
		rc = dp_json_add(j, "psi", psi);
		psi = NULL;
	}
	if (rc == 0)
		rc = dp_json_add(j, "theta", dp_json_double_array(theta1, s->p));
	if (rc == 0)
		rc = dp_json_add(j, "theta_star", dp_json_double_array(theta_star, s->p));
	if (rc != 0)   /* the constructors fail only for memory */
		rc = dp_error_set(DP_ENOMEM, "out of memory");
	else
		rc = dp_json_write_file(path, j, 0644);
out:
	json_object_put(ea);
	json_object_put(psi);
	json_object_put(j);
	free(rows);
	return rc;
}

/* DIR/psi.csv, DIR/schedule.txt (async), DIR/summary.json, DIR/model.json;
 * the exit status. */
static int write_outputs(const struct sim_opts *o, const dp_sim_setup *s, const dp_ownerdata *od,
			 const double *psi, const double *theta1, const double *theta_star,
			 const size_t *owners1)
{
	size_t ncp = dp_sim_checkpoints(s), R = o->repeats;
	double *col = malloc(R * sizeof(double)), *final = malloc(R * sizeof(double));
	char path[4096];
	FILE *f;
	int rc = 1, err;

	if (col == NULL || final == NULL) {
		dp_cmd_fail("sim", "out of memory");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/psi.csv", o->out);
	f = fopen(path, "w");
	if (f == NULL) {
		dp_cmd_fail("sim", "%s: cannot create: %s", path, strerror(errno));
		goto out;
	}
	fputs("k,psi_p25,psi_median,psi_p75,psi_mean\n", f);
	for (size_t c = 0; c < ncp; c++) {
		double m = 0;

		for (size_t r = 0; r < R; r++) {
			col[r] = psi[r * ncp + c];
			m += col[r];
		}
		fprintf(f, "%zu,%.10g,%.10g,%.10g,%.10g\n", dp_sim_checkpoint_k(s, c),
			dp_plot_percentile(col, R, 25), dp_plot_percentile(col, R, 50),
			dp_plot_percentile(col, R, 75), m / (double)R);
	}
	if (fclose(f) != 0) {
		dp_cmd_fail("sim", "%s: write failed", path);
		goto out;
	}
	if (owners1) {
		snprintf(path, sizeof(path), "%s/schedule.txt", o->out);
		f = fopen(path, "w");
		if (f == NULL) {
			dp_cmd_fail("sim", "%s: cannot create: %s", path, strerror(errno));
			goto out;
		}
		for (size_t k = 0; k < s->T; k++)
			fprintf(f, "%zu\n", owners1[k] + 1);
		if (fclose(f) != 0) {
			dp_cmd_fail("sim", "%s: write failed", path);
			goto out;
		}
	}
	for (size_t r = 0; r < R; r++)
		final[r] = psi[r * ncp + ncp - 1];
	snprintf(path, sizeof(path), "%s/summary.json", o->out);
	err = write_summary(o, s, od, final, theta1, theta_star, path);
	if (err != 0) {
		dp_cmd_fail("sim", "%s", dp_error_detail(err));
		goto out;
	}
	{
		dp_modelfile mf = { .model = s->model, .p = s->p, .theta = (double *)theta1,
				    .features = od->ds[0].names, .bias = o->bias, .T = s->T,
				    .lambda = s->lambda, .theta_max = s->theta_max, .clip = s->clip };

		snprintf(mf.mode, sizeof(mf.mode), "%s", modes[s->mode]);
		snprintf(path, sizeof(path), "%s/model.json", o->out);
		err = dp_modelfile_write(path, &mf);
		if (err != 0) {
			dp_cmd_fail("sim", "%s", dp_error_detail(err));
			goto out;
		}
	}
	rc = 0;
out:
	free(col);
	free(final);
	return rc;
}

/* Everything after the options; the exit status. */
static int simulate(const struct sim_opts *o)
{
	dp_ownerdata od = { 0 };
	dp_sim_setup s = { 0 };
	size_t *schedule = NULL, *owners1 = NULL, ncp, N, nrows = 0;
	double *psi = NULL, *theta = NULL, *theta1 = NULL, *theta_star = NULL, maxw = 0;
	int rc;

	rc = dp_ownerdata_load(&od, o->files.v, o->files.n,
			       o->schema ? NULL : (o->target ? o->target : "y"), o->bias, o->schema,
			       (dp_model)o->model);
	if (rc != 0) {
		dp_cmd_fail("sim", "%s", dp_error_detail(rc));
		rc = 2;
		goto out;
	}
	rc = 2;
	N = od.N;
	if (o->eps.n != 1 && o->eps.n != N) {
		dp_cmd_fail("sim", "--epsilon has %zu values for %zu owners (give 1 or %zu)",
			    o->eps.n, N, N);
		goto out;
	}
	if (o->rates.n != 0 && o->rates.n != 1 && o->rates.n != N) {
		dp_cmd_fail("sim", "--rates has %zu values for %zu owners (give 1 or %zu)",
			    o->rates.n, N, N);
		goto out;
	}
	if (o->freq_correction && o->mode != DP_SIM_ASYNC) {
		dp_cmd_fail("sim", "--freq-correction applies to --mode async only");
		goto out;
	}
	if (o->schedule && o->mode != DP_SIM_ASYNC) {
		dp_cmd_fail("sim", "--schedule applies to --mode async only");
		goto out;
	}
	if (o->schedule) {
		rc = read_schedule(o->schedule, o->T, N, &schedule);
		if (rc != 0)
			goto out;
	}
	rc = 1;
	s.mode = (enum dp_sim_mode)o->mode;
	s.model = (dp_model)o->model;
	s.N = N;
	s.p = od.ds[0].p;
	s.T = o->T;
	s.ds = od.view;
	s.lambda = o->lambda;
	s.theta_max = o->theta_max;
	s.clip = o->have_clip ? o->clip : dp_defaults_clip(s.p);
	s.schedule = schedule;
	s.freq_correction = o->freq_correction;
	s.psi_every = o->psi_every ? o->psi_every : (o->T / 200 ? o->T / 200 : 1);
	s.weight = calloc(N, sizeof(double));
	s.eps_q = calloc(N, sizeof(double));
	s.rate = calloc(N, sizeof(double));
	ncp = dp_sim_checkpoints(&s);
	psi = calloc(ncp * o->repeats, sizeof(double));
	theta = calloc(s.p, sizeof(double));
	theta1 = calloc(s.p, sizeof(double));
	theta_star = calloc(s.p, sizeof(double));
	owners1 = calloc(o->T, sizeof(size_t));
	if (!s.weight || !s.eps_q || !s.rate || !psi || !theta || !theta1 || !theta_star ||
	    !owners1) {
		dp_cmd_fail("sim", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < N; i++)
		nrows += od.ds[i].n;
	for (size_t i = 0; i < N; i++) {
		size_t K = o->answers_cap ? o->answers_cap : o->T;

		s.weight[i] = (double)od.ds[i].n / (double)nrows;
		/* The same per-answer share ownerd's ledger charges (nano-epsilon, rounded down). */
		if (dp_ledger_eps_share(eps_of(o, i), K, &s.eps_q[i]) != 0) {
			dp_cmd_fail("sim", "%s", dp_error_detail(DP_EINVAL));
			rc = 2;
			goto out;
		}
		s.rate[i] = rate_of(o, i);
		if (s.weight[i] > maxw)
			maxw = s.weight[i];
	}
	if (o->mode == DP_SIM_ASYNC)
		s.eta = o->have_eta ? o->eta
			: o->have_rho ? dp_algo_eta_from_rho(N, o->T, o->lambda, o->rho)
			: dp_defaults_async_eta(s.model, s.p, o->lambda, maxw, N, o->T);
	s.rho_over_T2 = o->have_rho ? o->rho / ((double)o->T * (double)o->T)
		: dp_defaults_sync_step(s.model, s.p, o->lambda);
	s.c = o->have_c ? o->c : dp_defaults_sync_step(s.model, s.p, o->lambda);

	rc = dp_optimum_solve(s.model, od.view, N, o->lambda, o->theta_max, theta_star, &s.f_star);
	if (rc != 0) {
		dp_cmd_fail("sim", "computing the non-private optimum: %s", dp_error_detail(rc));
		rc = 1;
		goto out;
	}
	if (!(s.f_star > 0)) {
		dp_cmd_fail("sim", "f(theta*) = %g: psi = f/f* - 1 is undefined when the optimum "
			    "has zero cost", s.f_star);
		rc = 1;
		goto out;
	}
	if (dp_file_mkdir_p(o->out, 0) != 0) {
		dp_cmd_fail("sim", "%s", dp_error_detail(DP_EIO));
		rc = 1;
		goto out;
	}
	for (size_t r = 0; r < o->repeats; r++) {
		rc = dp_sim_run(&s, o->seed + r, psi + r * ncp, r == 0 ? theta1 : theta,
				r == 0 ? owners1 : NULL);
		if (rc != 0) {
			dp_cmd_fail("sim", "repeat %zu: %s", r + 1, dp_error_detail(rc));
			rc = 1;
			goto out;
		}
	}
	rc = write_outputs(o, &s, &od, psi, theta1, theta_star,
			   o->mode == DP_SIM_ASYNC ? owners1 : NULL);
	if (rc == 0) {
		double m = 0;

		for (size_t r = 0; r < o->repeats; r++)
			m += psi[r * ncp + ncp - 1];
		printf("mode=%s model=%s N=%zu T=%zu repeats=%zu psi_mean=%.6g f_star=%.10g out=%s\n",
		       modes[o->mode], dp_model_name(s.model), N, o->T, o->repeats,
		       m / (double)o->repeats, s.f_star, o->out);
	}
out:
	dp_ownerdata_free(&od);
	free(schedule);
	free(owners1);
	free(psi);
	free(theta);
	free(theta1);
	free(theta_star);
	free(s.weight);
	free(s.eps_q);
	free(s.rate);
	return rc;
}

int dp_cmd_sim(int argc, char **argv)
{
	struct sim_opts o = { 0 };
	const char *const models[] = { dp_model_name(DP_MODEL_LINEAR),
				       dp_model_name(DP_MODEL_LOGISTIC),
				       dp_model_name(DP_MODEL_SVM), NULL };
	const struct dp_config_entry entries[] = {
		{ .name = "mode", DP_CFG_ENUM(&o.mode, modes), .def = "async", .metavar = "M",
		  .help = "async | sync1 | sync2" },
		{ .name = "model", DP_CFG_ENUM(&o.model, models), .def = "linear", .metavar = "M",
		  .help = "linear | logistic | svm" },
		{ .name = "target", DP_CFG_STRING(&o.target), .metavar = "COL",
		  .help = "target column (default y; with --schema:\nthe schema's)" },
		{ .name = "bias", DP_CFG_BOOL(&o.bias), .help = "append a constant-1 feature" },
		{ .name = "schema", DP_CFG_PATH(&o.schema), .metavar = "FILE",
		  .help = "feature schema from dpasync prep, applied to\nraw FILEs" },
		{ .name = "t", .alias = "T", DP_CFG_SIZE(&o.T), .def = STR(DP_DEFAULT_T), .min = 2,
		  .max = INFINITY, .help = "iterations" },
		{ .name = "eta", DP_CFG_DOUBLE(&o.eta), .min = 0, .max = INFINITY,
		  .min_exclusive = true, .given = &o.have_eta, .metavar = "E",
		  .help = "async: owner-copy step N rho/(T^2 sigma)\n"
			  "(default 1/(L max_i n_i/n) * min(1,\n"
			  "sqrt(100N/T)), L = 2p+2lambda linear,\n"
			  "p/4+2lambda logistic/svm)" },
		{ .name = "rho", DP_CFG_DOUBLE(&o.rho), .min = 0, .max = INFINITY,
		  .min_exclusive = true, .given = &o.have_rho, .metavar = "R",
		  .help = "async: the paper's rho instead of --eta;\n"
			  "sync1: step rho/(T^2 k) (default rho/T^2 =\n"
			  "min(1/L, 1/(2lambda)))" },
		{ .name = "c", DP_CFG_DOUBLE(&o.c), .min = 0, .max = INFINITY, .min_exclusive = true,
		  .given = &o.have_c, .metavar = "C",
		  .help = "sync2: step c/sqrt(k) (default as sync1's\nrho/T^2)" },
		{ .name = "lambda", DP_CFG_DOUBLE(&o.lambda), .def = STR(DP_DEFAULT_LAMBDA), .min = 0,
		  .max = INFINITY, .metavar = "L", .help = "regulariser g = lambda ||theta||^2" },
		{ .name = "theta-max", DP_CFG_DOUBLE(&o.theta_max), .def = STR(DP_DEFAULT_THETA_MAX),
		  .min = 0, .max = INFINITY, .min_exclusive = true, .metavar = "M",
		  .help = "box bound on every coordinate" },
		{ .name = "clip", DP_CFG_DOUBLE(&o.clip), .min = 0, .max = INFINITY,
		  .min_exclusive = true, .given = &o.have_clip, .metavar = "X",
		  .help = "L1 clip bound on per-example gradients\n"
			  "(default p, the number of model coordinates)" },
		{ .name = "epsilon", DP_CFG_DOUBLES_INF(&o.eps), .def = STR(DP_DEFAULT_EPSILON),
		  .min = 0, .max = INFINITY, .min_exclusive = true, .metavar = "E[,..]",
		  .help = "budget per owner, one value for all or one\n"
			  "per owner; inf = no noise" },
		{ .name = "answers-cap", DP_CFG_SIZE(&o.answers_cap), .metavar = "K",
		  .help = "answers each owner's budget is split over\n(default T)" },
		{ .name = "rates", DP_CFG_DOUBLES(&o.rates), .min = 0, .max = INFINITY,
		  .min_exclusive = true, .metavar = "R[,..]",
		  .help = "async: owners' Poisson clock rates (default 1\neach)" },
		{ .name = "freq-correction", DP_CFG_BOOL(&o.freq_correction),
		  .help = "async: scale owner i's weight by 1/(N pi_i),\n"
			  "pi_i its observed share of iterations (the\n"
			  "paper's Remark 4)" },
		{ .name = "schedule", DP_CFG_PATH(&o.schedule), .metavar = "FILE",
		  .help = "async: owner (1-based) of each iteration,\none per line" },
		{ .name = "repeats", DP_CFG_SIZE(&o.repeats), .def = "10", .min = 1, .max = INFINITY,
		  .metavar = "R", .help = "independent runs" },
		{ .name = "seed", DP_CFG_U64(&o.seed), .def = "1", .metavar = "S", .help = "seed" },
		{ .name = "psi-every", DP_CFG_SIZE(&o.psi_every), .metavar = "M",
		  .help = "evaluate psi every M iterations (default\nmax(1, T/200))" },
		{ .name = "out", DP_CFG_PATH(&o.out), .flags = DP_CONFIG_REQUIRED, .metavar = "DIR",
		  .help = "output directory" },
		DP_CONFIG_END,
	};
	const struct dp_config_spec spec = {
		.program = "dpasync sim",
		.command = true,
		.summary = sim_summary,
		.entries = entries,
		.validate = check_opts,
		.validate_arg = &o,
		.args = &o.files,
		.args_metavar = "FILE...",
		.args_min = 1,
	};
	int status;

	if (!dp_cmd_args(&spec, argc, argv, &status))
		return status;
	status = simulate(&o);
	dp_config_free(&spec);
	return status;
}
