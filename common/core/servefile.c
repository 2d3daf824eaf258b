/* SPDX-License-Identifier: Apache-2.0 */
/* The served model's file (servefile.h). */
#include "common/core/servefile.h"

#include <stdio.h>

#include "common/core/error.h"
#include "common/core/json.h"

static int add_from(struct json_object *from, const dp_servefile_from *f, size_t p)
{
	int rc = dp_json_add(from, "release", json_object_new_string(f->release));

	if (rc == 0)
		rc = dp_json_add(from, "prior", json_object_new_string(f->prior));
	if (rc == 0 && f->curvature)
		rc = dp_json_add(from, "curvature", json_object_new_string(f->curvature));
	if (rc == 0)
		rc = dp_json_add(from, "mechanism", json_object_new_string(f->mechanism));
	if (rc == 0)
		rc = dp_json_add(from, "tau", dp_json_double(f->tau));
	if (rc == 0)
		rc = dp_json_add(from, "folds", json_object_new_uint64(f->folds));
	if (rc == 0)
		rc = dp_json_add(from, "prior_scale", json_object_new_string(f->prior_scale));
	if (rc == 0)
		rc = dp_json_add(from, "releases_pooled", json_object_new_uint64(f->pooled));
	if (rc == 0)
		rc = dp_json_add(from, "releases_expected", json_object_new_uint64(f->expected));
	if (rc == 0)
		rc = dp_json_add(from, "prior_theta", dp_json_double_array(f->prior_theta, p));
	return rc;
}

int dp_servefile_write(const char *path, const dp_modelfile *mf, const dp_servefile_from *from,
		       int mode)
{
	dp_modelfile m;
	struct json_object *j = NULL, *f;
	int rc;

	DP_REQUIRE(path != NULL && mf != NULL && from != NULL);
	m = *mf;
	snprintf(m.mode, sizeof(m.mode), "served");
	/* The model file first (its keys and checks), then the marks on it. */
	rc = dp_modelfile_write(path, &m, mode);
	if (rc == 0)
		rc = dp_json_read_file(path, 1 << 24, &j);
	if (rc != 0)
		return rc;
	f = json_object_new_object();
	rc = dp_json_add(j, "fitted_from", f);   /* j owns f from here */
	if (rc == 0)
		rc = dp_json_add(j, "served", json_object_new_boolean(1));
	if (rc == 0)
		rc = dp_json_add(j, "private", json_object_new_boolean(0));
	if (rc == 0)
		rc = dp_json_add(j, "note", json_object_new_string(
			"fitted on the agent's own rows: not differentially private, never sent"));
	if (rc == 0)
		rc = add_from(f, from, mf->p);
	if (rc != 0)
		rc = dp_error_set(DP_ENOMEM, "out of memory");
	else
		rc = dp_json_write_file(path, j, mode);
	json_object_put(j);
	return rc;
}
