/* dpasync eval: f and psi of a saved model against owner data files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/core/error.h"
#include "common/core/modelfile.h"
#include "common/net/config.h"
#include "tools/cmds.h"
#include "tools/lib/optimum.h"
#include "tools/lib/ownerdata.h"

struct eval_opts {
	int model;                     /* dp_model */
	char *target, *schema;
	double lambda, theta_max;
	bool have_model, have_lambda, have_tmax;
	struct dp_config_strings args; /* MODEL.json FILE... */
};

static int evaluate(void *arg)
{
	struct eval_opts *o = arg;
	dp_modelfile mf = { 0 };
	dp_ownerdata od = { 0 };
	double lambda = o->lambda, theta_max = o->theta_max, f, f_star, f_zero, *zero = NULL;
	const char *target;
	int rc;

	rc = dp_modelfile_read(o->args.v[0], &mf);
	if (rc != 0) {
		dp_cmd_fail("eval", "%s", dp_error_detail(rc));
		return 2;
	}
	rc = 2;
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
	target = o->schema ? NULL : o->target ? o->target : mf.target ? mf.target : "y";
	rc = dp_ownerdata_load(&od, o->args.v + 1, o->args.n - 1, target, mf.bias, o->schema,
			       mf.model);
	if (rc == 0)
		rc = dp_modelfile_check_data(&mf, o->args.v[0], &od.ds[0]);
	if (rc != 0) {
		dp_cmd_fail("eval", "%s", dp_error_detail(rc));
		rc = 2;
		goto out;
	}
	rc = dp_optimum_compare(mf.model, mf.theta, mf.p, od.view, od.N, lambda, theta_max, &f,
				&f_star);
	if (rc != 0) {
		dp_cmd_fail("eval", "%s", dp_error_detail(rc));
		rc = rc == DP_EFORMAT ? 2 : 1;
		goto out;
	}
	zero = calloc(mf.p, sizeof(*zero));
	if (zero == NULL) {
		dp_cmd_fail("eval", "out of memory");
		rc = 1;
		goto out;
	}
	f_zero = dp_model_fitness(mf.model, od.view, od.N, lambda, zero);
	/* psi_zero: the all-zero model's psi, the bar a private model must beat. */
	printf("{\"model\": \"%s\", \"f\": %.17g, \"f_star\": %.17g, \"psi\": %.17g, "
	       "\"psi_zero\": %.17g}\n",
	       dp_model_name(mf.model), f, f_star, f_star > 0 ? dp_model_psi(f, f_star) : NAN,
	       f_star > 0 ? dp_model_psi(f_zero, f_star) : NAN);
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
		  .help = "target column (default: the model file's,\n"
			  "else y; with --schema: the schema's)" },
		{ .name = "schema", DP_CFG_PATH(&o.schema), .metavar = "FILE",
		  .help = "feature schema applied to raw FILEs" },
		{ .name = "lambda", DP_CFG_DOUBLE(&o.lambda), .min = 0, .max = INFINITY,
		  .given = &o.have_lambda, .metavar = "L",
		  .help = "regulariser (default: the model file's)" },
		{ .name = "theta-max", DP_CFG_DOUBLE(&o.theta_max), .min = 0, .max = INFINITY,
		  .min_exclusive = true, .given = &o.have_tmax, .metavar = "M",
		  .help = "box bound for theta* (default: the model\nfile's)" },
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
			  "and --target is not needed.",
		.entries = entries,
		.args = &o.args,
		.args_metavar = "MODEL.json FILE...",
		.args_min = 2,
	};

	return dp_cmd_run(&spec, argc, argv, evaluate, &o);
}
