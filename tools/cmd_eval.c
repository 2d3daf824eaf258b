/* SPDX-License-Identifier: Apache-2.0 */
/* dpasync eval: f and psi of a saved model against owner data files; with
 * --peer, each agent's model against its own test file. */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/exit.h"
#include "common/core/json.h"
#include "common/core/modelfile.h"
#include "common/net/config.h"
#include "tools/cmds.h"
#include "tools/lib/optimum.h"
#include "tools/lib/ownerdata.h"

struct eval_opts {
	int model;                     /* dp_model */
	char *target, *schema;
	double lambda, theta_max;
	bool have_model, have_lambda, have_tmax, peer;
	char *models;                  /* --peer: DIR of ID.json */
	struct dp_config_strings args; /* MODEL.json FILE... (--peer: FILE...) */
};

/* Sum over the rows of ds of the squared error (linear) or of the correct
 * signs, y t > 0 (logistic, svm; a score of 0 counts as wrong). */
static double error_sum(dp_model m, const dp_dataset *ds, const double *theta)
{
	double sum = 0;

	for (size_t r = 0; r < ds->n; r++) {
		double t = 0;

		for (size_t q = 0; q < ds->p; q++)
			t += theta[q] * ds->x[r * ds->p + q];
		if (m == DP_MODEL_LINEAR)
			sum += (ds->y[r] - t) * (ds->y[r] - t);
		else
			sum += ds->y[r] * t > 0;
	}
	return sum;
}

/* One agent's metric into the JSON array and the running totals. */
static int peer_agent(const struct eval_opts *o, const char *file, dp_model *kind,
		      struct json_object *arr, double *mean, double *pooled, size_t *rows)
{
	char *id = dp_ownerdata_id(file), path[4096];
	dp_modelfile mf = { 0 };
	dp_ownerdata od = { 0 };
	struct json_object *a = NULL;
	char *files[1] = { (char *)file };
	double sum, v;
	int rc;

	if (id == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	snprintf(path, sizeof(path), "%s/%s.json", o->models, id);
	rc = dp_modelfile_read(path, &mf);
	if (rc == 0 && *kind != (dp_model)-1 && mf.model != *kind)
		rc = dp_error_set(DP_EFORMAT, "%s: model '%s', but the first agent's is '%s'", path,
				  dp_model_name(mf.model), dp_model_name(*kind));
	if (rc == 0 && o->have_model && mf.model != (dp_model)o->model)
		rc = dp_error_set(DP_EFORMAT, "--model %s does not match %s ('%s')",
				  dp_model_name((dp_model)o->model), path, dp_model_name(mf.model));
	if (rc == 0)
		rc = dp_ownerdata_load(&od, files, 1, o->schema ? NULL : o->target ? o->target :
				       mf.target, mf.bias, o->schema, mf.model);
	if (rc == 0)
		rc = dp_modelfile_check_data(&mf, path, &od.ds[0]);
	if (rc != 0)
		goto out;
	*kind = mf.model;
	sum = error_sum(mf.model, &od.ds[0], mf.theta);
	v = mf.model == DP_MODEL_LINEAR ? sqrt(sum / (double)od.ds[0].n) : sum / (double)od.ds[0].n;
	*mean += v;
	*pooled += sum;
	*rows += od.ds[0].n;
	a = json_object_new_object();
	rc = dp_json_push(arr, a);
	if (rc == 0)
		rc = dp_json_add(a, "id", json_object_new_string(id));
	if (rc == 0)
		rc = dp_json_add(a, "rows", json_object_new_uint64(od.ds[0].n));
	if (rc == 0)
		rc = dp_json_add(a, mf.model == DP_MODEL_LINEAR ? "rmse" : "accuracy",
				 dp_json_double(v));
	if (rc != 0)
		rc = dp_error_set(DP_ENOMEM, "out of memory");
out:
	free(id);
	dp_modelfile_free(&mf);
	dp_ownerdata_free(&od);
	return rc;
}

/* --peer: every agent's test metric, their mean and the pooled value, as
 * one JSON line. */
static int evaluate_peer(struct eval_opts *o)
{
	struct json_object *j = json_object_new_object(), *arr = json_object_new_array();
	dp_model kind = (dp_model)-1;
	double mean = 0, pooled = 0;
	size_t rows = 0, n = o->args.n;
	const char *metric;
	int rc = j && arr ? 0 : DP_ENOMEM;

	if (o->models == NULL) {
		json_object_put(j);
		json_object_put(arr);
		dp_cmd_fail("eval", "bad usage: --peer needs --models DIR (try dpasync eval --help)");
		return dp_exit_status(DP_EINVAL, DP_EXIT_PHASE_ARGS);
	}
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = peer_agent(o, o->args.v[i], &kind, arr, &mean, &pooled, &rows);
	if (rc != 0) {
		json_object_put(j);
		json_object_put(arr);
		dp_cmd_fail("eval", "%s", rc == DP_ENOMEM ? "out of memory" : dp_error_detail(rc));
		return dp_exit_status(rc, DP_EXIT_PHASE_LOAD);
	}
	metric = kind == DP_MODEL_LINEAR ? "rmse" : "accuracy";
	mean /= (double)n;
	pooled = kind == DP_MODEL_LINEAR ? sqrt(pooled / (double)rows) : pooled / (double)rows;
	rc = dp_json_add(j, "model", json_object_new_string(dp_model_name(kind)));
	if (rc == 0)
		rc = dp_json_add(j, "metric", json_object_new_string(metric));
	if (rc == 0)
		rc = dp_json_add(j, "agents", json_object_new_uint64(n));
	if (rc == 0)
		rc = dp_json_add(j, "rows", json_object_new_uint64(rows));
	if (rc == 0)
		rc = dp_json_add(j, "mean", dp_json_double(mean));
	if (rc == 0)
		rc = dp_json_add(j, "pooled", dp_json_double(pooled));
	if (rc == 0)
		rc = dp_json_add(j, "per_agent", arr);
	else
		json_object_put(arr);
	if (rc == 0)
		puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_SPACED |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(j);
	if (rc != 0) {
		dp_cmd_fail("eval", "out of memory");
		return dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_RUN);
	}
	return 0;
}

/* A partial model (docs/design.md §9 "Partial model") is judged like any
 * other, and said so: one warning line, and "partial" with k and the
 * reason in the JSON line (its tail, from ", " on, into buf). */
static void partial_note(const dp_modelfile *mf, const char *path, char *buf, size_t size)
{
	buf[0] = '\0';
	if (!mf->partial)
		return;
	fprintf(stderr, "dpasync eval: warning: %s is a partial model: its job stopped at k=%llu "
		"of T=%zu (%s)%s%s\n", path, (unsigned long long)mf->k, mf->T, mf->reason,
		mf->detail ? ": " : "", mf->detail ? mf->detail : "");
	snprintf(buf, size, ", \"partial\": true, \"k\": %llu, \"T\": %zu, \"reason\": \"%s\"",
		 (unsigned long long)mf->k, mf->T, mf->reason);
}

static int evaluate(void *arg)
{
	struct eval_opts *o = arg;
	dp_modelfile mf = { 0 };
	dp_ownerdata od = { 0 };
	double lambda = o->lambda, theta_max = o->theta_max, f, f_star, f_zero, *zero = NULL;
	char partial[128];
	const char *target;
	int rc;

	if (o->peer)
		return evaluate_peer(o);
	if (o->models != NULL) {
		dp_cmd_fail("eval", "bad usage: --models applies to --peer (try dpasync eval --help)");
		return dp_exit_status(DP_EINVAL, DP_EXIT_PHASE_ARGS);
	}
	if (o->args.n < 2) {
		dp_cmd_fail("eval", "bad usage: give MODEL.json and at least one data FILE (try "
			    "dpasync eval --help)");
		return dp_exit_status(DP_EINVAL, DP_EXIT_PHASE_ARGS);
	}
	rc = dp_modelfile_read(o->args.v[0], &mf);
	if (rc != 0) {
		dp_cmd_fail("eval", "%s", dp_error_detail(rc));
		return dp_exit_status(rc, DP_EXIT_PHASE_LOAD);
	}
	rc = dp_exit_status(DP_EINVAL, DP_EXIT_PHASE_ARGS);
	if (o->have_model && (dp_model)o->model != mf.model) {
		dp_cmd_fail("eval", "--model %s does not match the model file's '%s'",
			    dp_model_name((dp_model)o->model), dp_model_name(mf.model));
		goto out;
	}
	if (!o->have_lambda)
		lambda = mf.lambda;
	if (!o->have_tmax)
		theta_max = mf.theta_max > 0 ? mf.theta_max : INFINITY;
	if (lambda < 0 || !(theta_max > 0)) {
		dp_cmd_fail("eval", "lambda must be >= 0 and theta-max > 0");
		goto out;
	}
	/* The model file names its target (and features) when its writer knew
	 * them: then the data need no --target, and must have those features. */
	target = o->schema ? NULL : o->target ? o->target : mf.target;
	if (target == NULL && o->schema == NULL) {
		dp_cmd_fail("eval", "%s names no target column, and none is guessed: pass "
			    "--target COL (or --schema FILE)", o->args.v[0]);
		goto out;
	}
	rc = dp_ownerdata_load(&od, o->args.v + 1, o->args.n - 1, target, mf.bias, o->schema,
			       mf.model);
	/* The schema first: its message names the target and both
	 * fingerprints, the likelier mistake than a renamed column. */
	for (size_t i = 0; rc == 0 && i < od.N; i++)
		rc = dp_modelfile_check_schema(&mf, o->args.v[0], &od.ds[i], o->schema);
	if (rc == 0)
		rc = dp_modelfile_check_data(&mf, o->args.v[0], &od.ds[0]);
	if (rc != 0) {
		dp_cmd_fail("eval", "%s", dp_error_detail(rc));
		rc = dp_exit_status(rc, DP_EXIT_PHASE_LOAD);
		goto out;
	}
	rc = dp_optimum_compare(mf.model, mf.theta, mf.p, od.view, od.N, lambda, theta_max, &f,
				&f_star);
	if (rc != 0) {
		dp_cmd_fail("eval", "%s", dp_error_detail(rc));
		rc = dp_exit_status(rc, DP_EXIT_PHASE_RUN);
		goto out;
	}
	zero = calloc(mf.p, sizeof(*zero));
	if (zero == NULL) {
		dp_cmd_fail("eval", "out of memory");
		rc = dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_RUN);
		goto out;
	}
	f_zero = dp_model_fitness(mf.model, od.view, od.N, lambda, zero);
	partial_note(&mf, o->args.v[0], partial, sizeof(partial));
	/* psi_zero: the all-zero model's psi, the bar a private model must beat. */
	printf("{\"model\": \"%s\", \"f\": %.17g, \"f_star\": %.17g, \"psi\": %.17g, "
	       "\"psi_zero\": %.17g%s}\n",
	       dp_model_name(mf.model), f, f_star, f_star > 0 ? dp_model_psi(f, f_star) : NAN,
	       f_star > 0 ? dp_model_psi(f_zero, f_star) : NAN, partial);
	rc = 0;
out:
	free(zero);
	dp_ownerdata_free(&od);
	dp_modelfile_free(&mf);
	return rc;
}

int dp_cmd_eval(int argc, char **argv)
{
	struct eval_opts o = { 0 };
	const struct dp_config_entry entries[] = {
		{ .name = "model", DP_CFG_ENUM(&o.model, dp_model_names), .given = &o.have_model,
		  .metavar = "M", .help = "linear | logistic | svm (default: the model\n"
		  "file's; an explicit value must match it)" },
		{ .name = "target", DP_CFG_STRING(&o.target), .metavar = "COL",
		  .help = "target column (default: the model file's;\n"
			  "with --schema: the schema's; no other)" },
		{ .name = "schema", DP_CFG_PATH(&o.schema), .metavar = "FILE",
		  .help = "feature schema applied to raw FILEs" },
		{ .name = "lambda", DP_CFG_DOUBLE(&o.lambda), .min = 0, .max = INFINITY,
		  .given = &o.have_lambda, .metavar = "L",
		  .help = "regulariser (default: the model file's)" },
		{ .name = "theta-max", DP_CFG_DOUBLE(&o.theta_max), .min = 0, .max = INFINITY,
		  .min_exclusive = true, .given = &o.have_tmax, .metavar = "M",
		  .help = "box bound for theta* (default: the model\nfile's)" },
		{ .name = "peer", DP_CFG_BOOL(&o.peer),
		  .help = "per-agent test error of a peer run: FILE...\n"
			  "are the agents' test files, ID.csv, and\n"
			  "each is scored with --models DIR/ID.json" },
		{ .name = "models", DP_CFG_PATH(&o.models), .metavar = "DIR",
		  .help = "--peer: the agents' model files (a sim's\n"
			  "OUT/agents)" },
		DP_CONFIG_END,
	};
	const struct dp_config_spec spec = {
		.program = "dpasync eval",
		.command = true,
		.summary = "Print, as one JSON line, the fitness f(theta) of a saved model on the\n"
			   "union of the data files, f(theta*) of the non-private optimum over the\n"
			   "box, psi = f/f* - 1, and psi_zero = f(0)/f* - 1, the psi of the\n"
			   "all-zero model (a private model is useful only below it).",
		.epilog = "The bias column is appended when the model file says \"bias\": true.\n"
			  "When the model file names its features and target (dpasync sim and\n"
			  "ownerd write them), the data must have those features, in that order,\n"
			  "and --target is not needed; when it names no target and neither\n"
			  "--target nor --schema is given, eval refuses (exit 2) rather than\n"
			  "guess a column.  When it records the schema fingerprint\n"
			  "the owners agreed on (learnerd writes it), every FILE must have it:\n"
			  "data read with another target, other columns, bias or --schema are\n"
			  "refused (exit 2) instead of judged.\n"
			  "A partial model (learnerd's model.json of a job that stopped before\n"
			  "T) is evaluated all the same, with a warning on stderr and \"partial\":\n"
			  "true, \"k\", \"T\" and \"reason\" in the JSON line; the exit status is 0.\n"
			  "\n"
			  "With --peer (docs/p2p.md) it prints instead, as one JSON line, each\n"
			  "agent's test RMSE (linear) or accuracy (logistic, svm: the share of rows\n"
			  "with y t > 0), their unweighted mean over the agents (\"mean\"), and the\n"
			  "value over all rows together (\"pooled\").",
		.entries = entries,
		.args = &o.args,
		.args_metavar = "MODEL.json FILE... | --peer --models DIR FILE...",
		.args_min = 1,
	};

	return dp_cmd_run(&spec, argc, argv, evaluate, &o);
}
