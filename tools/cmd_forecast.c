/* SPDX-License-Identifier: Apache-2.0 */
/* dpasync forecast: the settings learnerd and `dpasync sim` would plan for
 * a job, and the psi they are predicted to give, from a public sample and
 * the owners' public numbers only (docs/planner.md "Using it"). */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/exit.h"
#include "common/core/json.h"
#include "common/core/plan.h"
#include "common/net/config.h"
#include "tools/cmds.h"
#include "tools/lib/public.h"
#include "tools/lib/schema_build.h"
#include "tools/lib/sim.h"

static const char forecast_summary[] =
	"Forecast a private training job without touching any owner's rows: the\n"
	"planner (docs/planner.md) measures its constants on the public sample\n"
	"PUBLIC.csv (read with --target, --bias and --schema like the owners'\n"
	"files), takes each owner's row count (--rows) and budget (--epsilon), and\n"
	"prints one JSON object on stdout: the settings learnerd and dpasync sim\n"
	"would plan for the same inputs (\"settings\": T, the step, the clip bound,\n"
	"the answer caps), the predicted mean psi of the private model\n"
	"(\"psi_mean\", \"psi_parts\"), psi of theta = 0 on the sample (\"psi_zero\"),\n"
	"each owner's predicted psi training alone without privacy (\"alone\",\n"
	"judged on the union of the owners' rows like the joint model) and\n"
	"whether joining is predicted to beat that (\"collaborate\"), the psi of a\n"
	"model fitted on the public sample alone (\"public_only\"), the planner's\n"
	"\"warnings\", and the measured constants (\"public\"), which learnerd\n"
	"--public and dpasync sim --public read back.  These are for the papers'\n"
	"Laplace answers.  With --delta D > 0 (the owners allow (epsilon,\n"
	"delta)-DP) it also plans Gaussian answers (L2 clip, zCDP) on constants\n"
	"of L2-clipped gradients, and \"mechanisms\" holds both plans' psi and\n"
	"settings, which is lower and by what factor; that comparison is also\n"
	"printed on stderr.";

static const char forecast_synopsis[] =
	"--sample PUBLIC.csv --rows N1,...,NN [--epsilon E | E1,...,EN] [options]";

struct forecast_opts {
	int mode, model, task;
	bool have_model, bias, have_clip, have_margin;
	char *sample, *target, *schema;
	size_t T, T_max;
	double lambda, theta_max, clip, margin, delta;
	struct dp_config_sizes rows, caps;
	struct dp_config_doubles eps, rates;
};

static int check_opts(void *arg)
{
	const struct forecast_opts *o = arg;
	dp_model m = o->have_model ? (dp_model)o->model
		     : o->task == DP_TASK_CLASSIFICATION ? DP_MODEL_LOGISTIC : DP_MODEL_LINEAR;

	if (!(o->lambda > 0) && m != DP_MODEL_LINEAR)
		return dp_error_set(DP_EINVAL, "--lambda must be > 0 for logistic and svm "
				    "(strong convexity)");
	if (o->T == 1)
		return dp_error_set(DP_EINVAL, "--T must be at least 2 (or 0: planned)");
	for (size_t i = 0; i < o->rows.n; i++)
		if (o->rows.v[i] == 0)
			return dp_error_set(DP_EINVAL, "--rows: owner %zu has no rows", i + 1);
	return 0;
}

/* Move the members keys[0..] (NULL-terminated) of `from` into `to`, in
 * that order (json-c shares them by reference). */
static int take(struct json_object *to, struct json_object *from, const char *const *keys)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && keys[i] != NULL; i++) {
		struct json_object *v;

		if (!json_object_object_get_ex(from, keys[i], &v))
			return DP_ENOMEM;
		rc = dp_json_add(to, keys[i], json_object_get(v));
	}
	return rc;
}

/* The plan's key of its step (dp_plan_json). */
static const char *step_key(enum dp_plan_mode mode)
{
	return mode == DP_PLAN_ASYNC ? "eta" : mode == DP_PLAN_SYNC1 ? "rho_over_T2" : "c";
}

/* The output object: the plan's fields regrouped ("settings") plus the
 * inputs and the constants. */
static struct json_object *result(const struct forecast_opts *o, dp_model model,
				  const dp_plan *pl, const dp_plan_public *pub, const double *eps,
				  const char *warnings)
{
	struct json_object *pj = dp_plan_json(pl), *j = json_object_new_object();
	struct json_object *set = json_object_new_object();
	const char *stepkey = step_key(pl->mode);
	int rc = pj && j && set ? 0 : DP_ENOMEM;

	if (rc == 0)
		rc = dp_json_add(j, "mode", json_object_new_string(dp_plan_mode_name(pl->mode)));
	if (rc == 0)
		rc = dp_json_add(j, "model", json_object_new_string(dp_model_name(model)));
	if (rc == 0)
		rc = dp_json_add(j, "p", json_object_new_uint64(pub->p));
	if (rc == 0)
		rc = dp_json_add(j, "N", json_object_new_uint64(pl->N));
	if (rc == 0) {
		struct json_object *rows = json_object_new_array();

		rc = dp_json_add(j, "n_rows", rows);
		for (size_t i = 0; rc == 0 && i < pl->N; i++)
			rc = dp_json_push(rows, json_object_new_uint64(o->rows.v[i]));
	}
	if (rc == 0) {
		struct json_object *ea = json_object_new_array();

		rc = dp_json_add(j, "epsilon", ea);
		for (size_t i = 0; rc == 0 && i < pl->N; i++)
			rc = dp_json_push(ea, dp_json_double_inf(eps[i]));
	}
	if (rc == 0)
		rc = dp_json_add(j, "lambda", dp_json_double(o->lambda));
	if (rc == 0)
		rc = dp_json_add(j, "theta_max", dp_json_double(o->theta_max));
	if (rc == 0)
		rc = take(j, pj, (const char *const[]){ "psi_mean", "psi_parts", "psi_zero", NULL });
	if (rc == 0)
		rc = take(set, pj, (const char *const[]){ "T", stepkey, "clip", "answers_cap", "share",
							  NULL });
	if (rc == 0) {
		rc = dp_json_add(j, "settings", set);
		set = NULL;
	}
	if (rc == 0)
		rc = take(j, pj, (const char *const[]){ "alone", "collaborate", "public_only", NULL });
	if (rc == 0)
		rc = dp_json_add(j, "warnings", dp_json_lines(warnings));
	if (rc == 0)
		rc = dp_json_add(j, "public", dp_plan_public_json(pub));
	json_object_put(pj);
	json_object_put(set);
	if (rc != 0) {
		json_object_put(j);
		return NULL;
	}
	return j;
}

/* One mechanism's plan: {"psi_mean", "psi_parts", "settings": {"T", the
 * step, "clip", "answers_cap"}, "collaborate"}; NULL on allocation
 * failure. */
static struct json_object *mech_json(const dp_plan *pl)
{
	struct json_object *pj = dp_plan_json(pl), *m = json_object_new_object();
	struct json_object *set = json_object_new_object();
	const char *stepkey = step_key(pl->mode);
	int rc = pj && m && set ? 0 : DP_ENOMEM;

	if (rc == 0)
		rc = take(m, pj, (const char *const[]){ "psi_mean", "psi_parts", NULL });
	if (rc == 0)
		rc = take(set, pj, (const char *const[]){ "T", stepkey, "clip", "answers_cap", NULL });
	if (rc == 0) {
		rc = dp_json_add(m, "settings", set);
		set = NULL;
	}
	if (rc == 0)
		rc = take(m, pj, (const char *const[]){ "collaborate", NULL });
	json_object_put(pj);
	json_object_put(set);
	if (rc != 0) {
		json_object_put(m);
		return NULL;
	}
	return m;
}

/* "mechanisms": {"delta", "laplace": mech_json, "gaussian": mech_json,
 * "lower": the mechanism of the lower predicted psi, "factor": the higher
 * psi over the lower} and "public_l2" (pub2, the Gaussian plan's
 * constants) into j, and the comparison in one line into line (docs/cli.md
 * "dpasync forecast"). */
static int add_mechanisms(struct json_object *j, double delta, const dp_plan *lap,
			  const dp_plan *gau, const dp_plan_public *pub2, char *line, size_t size)
{
	struct json_object *ms = json_object_new_object();
	bool g_lower;
	double factor = dp_plan_mech_line(lap, gau, delta, line, size, &g_lower);
	int rc = ms != NULL ? 0 : DP_ENOMEM;

	if (rc == 0)
		rc = dp_json_add(ms, "delta", dp_json_double(delta));
	if (rc == 0)
		rc = dp_json_add(ms, "laplace", mech_json(lap));
	if (rc == 0)
		rc = dp_json_add(ms, "gaussian", mech_json(gau));
	if (rc == 0)
		rc = dp_json_add(ms, "lower", json_object_new_string(g_lower ? "gaussian"
									   : "laplace"));
	if (rc == 0)
		rc = dp_json_add(ms, "factor", dp_json_double(factor));
	if (rc != 0) {
		json_object_put(ms);
		return rc;
	}
	rc = dp_json_add(j, "mechanisms", ms);
	/* The L2 constants beside "public", for learnerd --mechanism gaussian
	 * --public and sim --public (dp_plan_public_read_norm). */
	if (rc == 0)
		rc = dp_json_add(j, "public_l2", dp_plan_public_json(pub2));
	return rc;
}

/* The Gaussian plan beside the Laplace one `lap` (its request `req`):
 * constants of L2-clipped gradients measured on the same sample, the
 * owners' delta (dp_public_plan_other).  0 or an error, reported. */
static int plan_gaussian(const struct forecast_opts *o, dp_model model, dp_public_from from,
			 const dp_plan_request *req, dp_plan_public *pub2, dp_plan *gau)
{
	int rc = dp_public_plan_other(&from, model, NULL, o->lambda, o->theta_max, req, o->delta,
				      pub2, gau);

	if (rc != 0) {
		dp_cmd_fail("forecast", "gaussian: %s", dp_error_detail(rc));
		/* the sample loaded once already: what fails now is the plan */
		return dp_exit_status(rc, DP_EXIT_PHASE_RUN);
	}
	return 0;
}

static int forecast(void *arg)
{
	const struct forecast_opts *o = arg;
	dp_model model = o->have_model ? (dp_model)o->model
			 : o->task == DP_TASK_CLASSIFICATION ? DP_MODEL_LOGISTIC : DP_MODEL_LINEAR;
	size_t N = o->rows.n;
	dp_public_from from = { .sample = o->sample,
				.target = o->schema ? NULL : (o->target ? o->target : "y"),
				.bias = o->bias, .schema = o->schema };
	dp_plan_public pub = { 0 }, pub2 = { 0 };
	dp_plan_request req = { 0 };
	dp_plan plan = { 0 }, gau = { 0 };
	double *eps = calloc(N, sizeof(double)), *rates = calloc(N, sizeof(double));
	uint64_t *rows = calloc(N, sizeof(uint64_t)), *caps = calloc(N, sizeof(uint64_t));
	struct json_object *j = NULL;
	char warnings[2048], line[256] = "";
	int rc, status;

	if (!eps || !rates || !rows || !caps) {
		dp_cmd_fail("forecast", "out of memory");
		status = dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_ARGS);
		goto out;
	}
	rc = dp_sim_per_owner("--epsilon", o->eps.v, o->eps.n, N, 1.0, eps);
	if (rc == 0)
		rc = dp_sim_per_owner("--rate", o->rates.v, o->rates.n, N, 1.0, rates);
	if (rc == 0)
		rc = dp_sim_per_owner_u64("--answers-cap", o->caps.v, o->caps.n, N, 0, caps);
	if (rc != 0) {
		dp_cmd_fail("forecast", "%s", dp_error_detail(rc));
		status = dp_exit_status(rc, DP_EXIT_PHASE_ARGS);
		goto out;
	}
	for (size_t i = 0; i < N; i++)
		rows[i] = o->rows.v[i];
	rc = dp_public_obtain(&from, model, NULL, o->lambda, o->theta_max, &pub);
	if (rc != 0) {
		dp_cmd_fail("forecast", "%s", dp_error_detail(rc));
		status = dp_exit_status(rc, DP_EXIT_PHASE_LOAD);
		goto out;
	}
	req.mode = (enum dp_plan_mode)o->mode;
	req.N = N;
	req.n_rows = rows;
	req.epsilon = eps;
	req.rate = rates;
	req.T = o->T;
	req.clip = o->have_clip ? o->clip : 0.0;
	req.answers_cap = caps;
	req.margin = o->have_margin ? o->margin : 0.0;
	req.T_max = o->T_max;
	rc = dp_plan_make(&req, &pub, &plan);
	if (rc == DP_EINVAL)
		dp_cmd_fail("forecast", "bad usage: %s (try dpasync forecast --help)",
			    dp_error_detail(rc));
	else if (rc != 0)
		dp_cmd_fail("forecast", "%s", dp_error_detail(rc));
	if (rc != 0) {
		status = dp_exit_status(rc, DP_EXIT_PHASE_RUN);
		goto out;
	}
	if (o->delta > 0) {
		status = plan_gaussian(o, model, from, &req, &pub2, &gau);
		if (status != 0)
			goto out;
	}
	dp_plan_warnings(&plan, &pub, warnings, sizeof(warnings));
	j = result(o, model, &plan, &pub, eps, warnings);
	if (j != NULL && o->delta > 0 &&
	    add_mechanisms(j, o->delta, &plan, &gau, &pub2, line, sizeof(line)) != 0) {
		json_object_put(j);
		j = NULL;
	}
	if (j == NULL) {
		dp_cmd_fail("forecast", "out of memory");
		status = dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_RUN);
		goto out;
	}
	if (puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY |
					       JSON_C_TO_STRING_NOSLASHESCAPE)) == EOF ||
	    fflush(stdout) != 0) {
		dp_cmd_fail("forecast", "stdout: write failed");
		status = dp_exit_status(DP_EIO, DP_EXIT_PHASE_RUN);
		goto out;
	}
	if (line[0] != '\0')
		fprintf(stderr, "dpasync forecast: %s\n", line);
	status = DP_EXIT_OK;
out:
	json_object_put(j);
	dp_plan_free(&plan);
	dp_plan_free(&gau);
	dp_plan_public_free(&pub);
	dp_plan_public_free(&pub2);
	free(eps);
	free(rates);
	free(rows);
	free(caps);
	return status;
}

int dp_cmd_forecast(int argc, char **argv)
{
	struct forecast_opts o = { 0 };
	const struct dp_config_entry entries[] = {
		{ .name = "sample", DP_CFG_PATH(&o.sample), .flags = DP_CONFIG_REQUIRED,
		  .metavar = "FILE", .group = "The job",
		  .help = "the public sample the constants are measured\non" },
		{ .name = "rows", DP_CFG_SIZES(&o.rows), .flags = DP_CONFIG_REQUIRED,
		  .metavar = "N1,..", .group = "The job",
		  .help = "each owner's row count (N owners)" },
		{ .name = "epsilon", DP_CFG_DOUBLES_INF(&o.eps), .def = "1", .min = 0,
		  .max = INFINITY, .min_exclusive = true, .metavar = "E[,..]", .group = "The job",
		  .help = "budget per owner, one value for all or one\nper owner; inf = no noise" },
		{ .name = "model", DP_CFG_ENUM(&o.model, dp_model_names), .given = &o.have_model,
		  .metavar = "M", .group = "The job",
		  .help = "linear | logistic | svm (default: from --task)" },
		{ .name = "task", DP_CFG_ENUM(&o.task, dp_schema_build_tasks), .def = "regression",
		  .metavar = "T", .group = "The job",
		  .help = "regression | classification: picks the\n"
			  "model (linear | logistic) when --model is\nabsent" },
		{ .name = "target", DP_CFG_STRING(&o.target), .metavar = "COL", .group = "The job",
		  .help = "the sample's target column (default y; with\n--schema: the schema's)" },
		{ .name = "bias", DP_CFG_BOOL(&o.bias), .group = "The job",
		  .help = "append a constant-1 feature" },
		{ .name = "schema", DP_CFG_PATH(&o.schema), .metavar = "FILE", .group = "The job",
		  .help = "feature schema from dpasync prep, applied to\nthe sample" },
		{ .name = "mode", DP_CFG_ENUM(&o.mode, dp_plan_mode_names), .def = "async",
		  .metavar = "M", .group = "The job", .help = "async | sync1 | sync2" },
		{ .name = "rate", .alias = "rates", DP_CFG_DOUBLES(&o.rates),
		  .min = 0, .max = INFINITY,
		  .min_exclusive = true, .metavar = "R[,..]", .group = "The job",
		  .help = "async: owners' clock rates (default 1 each)" },
		{ .name = "lambda", DP_CFG_DOUBLE(&o.lambda), .def = "0.01", .min = 0,
		  .max = INFINITY, .metavar = "L", .group = "The job",
		  .help = "regulariser g = lambda ||theta||^2" },
		{ .name = "delta", DP_CFG_DOUBLE(&o.delta), .def = "0", .min = 0, .max = 0.5,
		  .metavar = "D", .group = "The job",
		  .help = "the owners' delta; > 0: also plan Gaussian\n"
			  "answers (L2 clip, zCDP) and compare\n"
			  "(\"mechanisms\"); 0: pure epsilon-DP, Laplace\nonly" },
		{ .name = "theta-max", DP_CFG_DOUBLE(&o.theta_max), .def = "10", .min = 0,
		  .max = INFINITY, .min_exclusive = true, .metavar = "M", .group = "The job",
		  .help = "box bound on every coordinate" },
		{ .name = "t", .alias = "T", DP_CFG_SIZE(&o.T), .def = "0", .metavar = "N",
		  .group = "Settings the planner would choose",
		  .help = "iterations (0: planned)" },
		{ .name = "t-max", DP_CFG_SIZE(&o.T_max), .min = 2, .max = INFINITY, .metavar = "N",
		  .group = "Settings the planner would choose",
		  .help = "largest T considered (default 100000 async,\n2000 sync)" },
		{ .name = "clip", DP_CFG_DOUBLE(&o.clip), .min = 0, .max = INFINITY,
		  .min_exclusive = true, .given = &o.have_clip, .metavar = "X",
		  .group = "Settings the planner would choose",
		  .help = "L1 clip bound on per-example gradients\n"
			  "(Laplace's; the Gaussian plan chooses its L2\nbound)" },
		{ .name = "answers-cap", DP_CFG_SIZES(&o.caps), .min = 1, .max = INFINITY,
		  .metavar = "K[,..]", .group = "Settings the planner would choose",
		  .help = "answers per owner, one value for all or one\nper owner" },
		{ .name = "answers-margin", .alias = "margin", DP_CFG_DOUBLE(&o.margin),
		  .min = 0, .max = INFINITY,
		  .min_exclusive = true, .given = &o.have_margin, .metavar = "M",
		  .group = "Settings the planner would choose",
		  .help = "async: planned caps exceed an owner's\n"
			  "expected answers by this fraction (default\n0.1)" },
		DP_CONFIG_END,
	};
	const struct dp_config_spec spec = {
		.program = "dpasync forecast",
		.command = true,
		.summary = forecast_summary,
		.synopsis = forecast_synopsis,
		.entries = entries,
		.validate = check_opts,
		.validate_arg = &o,
	};

	return dp_cmd_run(&spec, argc, argv, forecast, &o);
}
