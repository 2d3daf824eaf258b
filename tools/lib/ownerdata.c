/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/lib/ownerdata.h"

#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/schema.h"

int dp_ownerdata_load(dp_ownerdata *od, char *const *files, size_t nfiles, const char *target,
		      int bias, const char *schema_path, dp_model model)
{
	dp_load_opts lo = { .target = target, .bias = bias, .schema = NULL };
	dp_ownerdata d = { 0 };
	int rc;

	DP_REQUIRE(od != NULL && (files != NULL || nfiles == 0));
	memset(od, 0, sizeof(*od));
	if (nfiles == 0)
		return dp_error_set(DP_EINVAL, "no owner data files given (one CSV per owner)");
	/* No default column: a real column named "y" would be read silently
	 * (docs/reliability.md §7.2, finding 8). */
	if (schema_path == NULL && target == NULL)
		return dp_error_set(DP_EINVAL, "no target column given, and none is guessed: "
				    "pass --target COL (or --schema FILE)");
	if (schema_path) {
		rc = dp_schema_load(schema_path, &d.schema);
		if (rc != 0)
			return rc;
		lo.schema = d.schema;
	}
	d.ds = calloc(nfiles, sizeof(dp_dataset));
	d.view = calloc(nfiles, sizeof(dp_dataset *));
	if (d.ds == NULL || d.view == NULL) {
		dp_ownerdata_free(&d);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nfiles; i++) {
		rc = dp_dataset_load(&d.ds[i], files[i], &lo);
		d.N = i + 1;   /* a failed load leaves ds[i] freeable */
		if (rc == 0)
			rc = dp_model_check_data(model, &d.ds[i]);
		if (rc != 0) {
			dp_ownerdata_free(&d);
			return rc;
		}
		d.view[i] = &d.ds[i];
	}
	rc = dp_dataset_check_compatible(d.view, d.N);
	if (rc != 0) {
		dp_ownerdata_free(&d);
		return rc;
	}
	*od = d;
	return 0;
}

void dp_ownerdata_free(dp_ownerdata *od)
{
	DP_REQUIRE(od != NULL);
	if (od->ds)
		for (size_t i = 0; i < od->N; i++)
			dp_dataset_free(&od->ds[i]);
	free(od->ds);
	free(od->view);
	if (od->schema)
		dp_schema_destroy(od->schema);
	memset(od, 0, sizeof(*od));
}

char *dp_ownerdata_id(const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n;

	DP_REQUIRE(path != NULL);
	base = base ? base + 1 : path;
	n = strlen(base);
	if (n > 7 && strcmp(base + n - 7, ".csv.gz") == 0)
		n -= 7;
	else if (n > 4 && strcmp(base + n - 4, ".csv") == 0)
		n -= 4;
	return strndup(base, n);
}
