#include "tools/lib/simcli.h"

#include <stdlib.h>
#include <string.h>

#include "tools/cmds.h"
#include "common/core/error.h"
#include "common/core/modelfile.h"
#include "tools/lib/optimum.h"
#include "common/core/schema.h"

int dp_owner_data_load(dp_owner_data *od, const char *cmd, char **files, size_t nfiles,
		       const char *target, int bias, const char *schema_path, dp_model model)
{
	dp_load_opts lo = { .target = target, .bias = bias, .schema = NULL };
	int rc;

	memset(od, 0, sizeof(*od));
	if (nfiles == 0) {
		dp_tool_fail(cmd, "no owner data files given (one CSV per owner)");
		return DP_EINVAL;
	}
	if (schema_path) {
		rc = dp_schema_load(schema_path, &od->schema);
		if (rc != 0) {
			dp_tool_fail(cmd, "%s", dp_error_detail(rc));
			return rc;
		}
		lo.schema = od->schema;
	}
	od->ds = calloc(nfiles, sizeof(dp_dataset));
	od->view = calloc(nfiles, sizeof(dp_dataset *));
	if (od->ds == NULL || od->view == NULL) {
		dp_tool_fail(cmd, "out of memory");
		dp_owner_data_free(od);
		return DP_ENOMEM;
	}
	for (size_t i = 0; i < nfiles; i++) {
		rc = dp_dataset_load(&od->ds[i], files[i], &lo);
		if (rc == 0)
			rc = dp_model_check_data(model, &od->ds[i]);
		if (rc != 0) {
			dp_tool_fail(cmd, "%s", dp_error_detail(rc));
			od->N = i + 1;
			dp_owner_data_free(od);
			return rc;
		}
		od->view[i] = &od->ds[i];
		od->N = i + 1;
	}
	rc = dp_dataset_check_compatible(od->view, od->N);
	if (rc != 0) {
		dp_tool_fail(cmd, "%s", dp_error_detail(rc));
		dp_owner_data_free(od);
		return rc;
	}
	return 0;
}

void dp_owner_data_free(dp_owner_data *od)
{
	if (od->ds)
		for (size_t i = 0; i < od->N; i++)
			dp_dataset_free(&od->ds[i]);
	free(od->ds);
	free(od->view);
	if (od->schema)
		dp_schema_destroy(od->schema);
	memset(od, 0, sizeof(*od));
}

int dp_model_fitness_vs_optimum(const char *cmd, const struct dp_modelfile *mf, char **files,
				size_t nfiles, const char *target, const char *schema_path,
				double lambda, double theta_max, double *f, double *f_star)
{
	dp_owner_data od;
	double *theta_star = NULL, fv, fs;
	int rc = 2, err;

	if (dp_owner_data_load(&od, cmd, files, nfiles, schema_path ? NULL : target, mf->bias,
			       schema_path, mf->model) != 0)
		return 2;
	if (od.ds[0].p != mf->p) {
		dp_tool_fail(cmd, "%s has %zu features but the model has %zu coefficients",
			     od.ds[0].source, od.ds[0].p, mf->p);
		goto out;
	}
	rc = 1;
	theta_star = calloc(mf->p, sizeof(double));
	if (theta_star == NULL) {
		dp_tool_fail(cmd, "out of memory");
		goto out;
	}
	fv = dp_model_fitness(mf->model, od.view, od.N, lambda, mf->theta);
	err = dp_optimum_solve(mf->model, od.view, od.N, lambda, theta_max, theta_star, &fs);
	if (err != 0) {
		dp_tool_fail(cmd, "computing the non-private optimum: %s", dp_error_detail(err));
		goto out;
	}
	*f = fv;
	*f_star = fs;
	rc = 0;
out:
	free(theta_star);
	dp_owner_data_free(&od);
	return rc;
}
