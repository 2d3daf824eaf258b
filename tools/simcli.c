#include "simcli.h"

#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "error.h"
#include "schema.h"

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
