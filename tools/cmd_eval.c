/* dpasync eval: f and psi of a saved model against owner data files. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cmds.h"
#include "common/core/error.h"
#include "common/core/modelfile.h"
#include "tools/lib/optimum.h"
#include "common/core/num.h"
#include "tools/lib/simcli.h"

static const char dp__eval_usage[] =
	"usage: dpasync eval [options] MODEL.json FILE...\n"
	"\n"
	"Print, as one JSON line, the fitness f(theta) of a saved model on the\n"
	"union of the data files, f(theta*) of the non-private optimum over the\n"
	"box, and psi = f/f* - 1.\n"
	"\n"
	"  --model M        linear | logistic | svm (default: the model file's;\n"
	"                   an explicit value must match it)\n"
	"  --target COL     target column (default y; with --schema: the schema's)\n"
	"  --schema FILE    feature schema applied to raw FILEs\n"
	"  --lambda L       regulariser (default: the model file's)\n"
	"  --theta-max M    box bound for theta* (default: the model file's)\n"
	"  --help           this text\n"
	"The bias column is appended when the model file says \"bias\": true.\n";

int dp_cmd_eval(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "model", required_argument, NULL, 'M' },
		{ "target", required_argument, NULL, 't' },
		{ "schema", required_argument, NULL, 'S' },
		{ "lambda", required_argument, NULL, 'l' },
		{ "theta-max", required_argument, NULL, 'x' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *target = "y", *schema = NULL;
	int have_model = 0, have_lambda = 0, have_tmax = 0, c, rc = 2;
	double lambda = 0, theta_max = 0, f, f_star;
	dp_model model = DP_MODEL_LINEAR;
	dp_modelfile mf = { 0 };

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		int err = 0;
		switch (c) {
		case 'M': err = dp_model_parse(optarg, &model); have_model = 1; break;
		case 't': target = optarg; break;
		case 'S': schema = optarg; break;
		case 'l': err = dp_num_parse_double("--lambda", optarg, 0, &lambda); have_lambda = 1; break;
		case 'x': err = dp_num_parse_double("--theta-max", optarg, 0, &theta_max); have_tmax = 1; break;
		case 'h': fputs(dp__eval_usage, stdout); return 0;
		default: dp_tool_fail("eval", "bad usage: unknown option or missing value in '%s' (try dpasync eval --help)", argv[optind - 1]); return 2;
		}
		if (err) {
			dp_tool_fail("eval", "%s", dp_error_detail(err));
			return 2;
		}
	}
	if (argc - optind < 2) {
		dp_tool_fail("eval", "expected MODEL.json and at least one data FILE (try dpasync eval --help)");
		return 2;
	}
	rc = dp_modelfile_read(argv[optind], &mf);
	if (rc != 0) {
		dp_tool_fail("eval", "%s", dp_error_detail(rc));
		return 2;
	}
	rc = 2;
	if (have_model && model != mf.model) {
		dp_tool_fail("eval", "--model %s does not match the model file's '%s'", dp_model_name(model),
			     dp_model_name(mf.model));
		goto out;
	}
	model = mf.model;
	if (!have_lambda)
		lambda = mf.lambda;
	if (!have_tmax)
		theta_max = mf.theta_max > 0 ? mf.theta_max : INFINITY;
	if (lambda < 0 || !(theta_max > 0)) {
		dp_tool_fail("eval", "lambda must be >= 0 and theta-max > 0");
		goto out;
	}
	rc = dp_model_fitness_vs_optimum("eval", &mf, argv + optind + 1, (size_t)(argc - optind - 1),
					 target, schema, lambda, theta_max, &f, &f_star);
	if (rc != 0)
		goto out;
	printf("{\"model\": \"%s\", \"f\": %.17g, \"f_star\": %.17g, \"psi\": %.17g}\n", dp_model_name(model),
	       f, f_star, f_star > 0 ? dp_model_psi(f, f_star) : NAN);
	rc = 0;
out:
	dp_modelfile_free(&mf);
	return rc;
}
