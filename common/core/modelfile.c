/* SPDX-License-Identifier: Apache-2.0 */
/* The trained-model file: writing, reading with validation, and the check
 * that data fits a model read from one. */
#include "common/core/modelfile.h"
#include "common/core/dataset.h"
#include "common/core/error.h"
#include "common/core/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DP_MODELFILE_MAX (64u << 20)

int dp_modelfile_write(const char *path, const dp_modelfile *mf, int mode)
{
	struct json_object *o;
	int rc = 0;

	DP_REQUIRE(path != NULL && mf != NULL && (mf->theta != NULL || mf->p == 0));
	for (size_t q = 0; q < mf->p; q++)
		if (!isfinite(mf->theta[q]))
			return dp_error_set(DP_EINVAL, "%s: theta[%zu] is not finite", path, q);
	o = json_object_new_object();
	if (o == NULL)
		return DP_ENOMEM;
	rc = dp_json_add(o, "format", json_object_new_string("dpasync-model"));
	if (rc == 0)
		rc = dp_json_add(o, "version", json_object_new_int(1));
	if (rc == 0)
		rc = dp_json_add(o, "model", json_object_new_string(dp_model_name(mf->model)));
	/* The reader takes an absent mode as "" and refuses an empty one. */
	if (rc == 0 && mf->mode[0] != '\0')
		rc = dp_json_add(o, "mode", json_object_new_string(mf->mode));
	if (rc == 0 && mf->job)
		rc = dp_json_add(o, "job", json_object_new_string(mf->job));
	if (rc == 0)
		rc = dp_json_add(o, "T", json_object_new_uint64(mf->T));
	if (rc == 0)
		rc = dp_json_add(o, "lambda", dp_json_double(mf->lambda));
	if (rc == 0)
		rc = dp_json_add(o, "theta_max", dp_json_double(mf->theta_max));
	if (rc == 0)
		rc = dp_json_add(o, "clip_l1", dp_json_double(mf->clip));
	if (rc == 0)
		rc = dp_json_add(o, "bias", json_object_new_boolean(mf->bias));
	if (rc == 0 && mf->features)
		rc = dp_json_add(o, "features",
				 dp_json_string_array((const char *const *)mf->features, mf->p));
	if (rc == 0 && mf->target)
		rc = dp_json_add(o, "target", json_object_new_string(mf->target));
	if (rc == 0)
		rc = dp_json_add(o, "theta", dp_json_double_array(mf->theta, mf->p));
	if (rc == 0)
		rc = dp_json_write_file(path, o, mode);
	json_object_put(o);
	return rc;
}

int dp_modelfile_read(const char *path, dp_modelfile *mf)
{
	dp_json_reader r = { .path = path };
	struct json_object *o = NULL, *theta, *names;
	dp_modelfile m = { 0 };
	const char *s;
	int rc;

	DP_REQUIRE(path != NULL && mf != NULL);
	rc = dp_json_read_file(path, DP_MODELFILE_MAX, &o);
	if (rc != 0)
		return rc;
	s = dp_json_get_string(&r, o, "format", true, "");
	if (r.rc == 0 && strcmp(s, "dpasync-model") != 0)
		dp_json_fail(&r, "not a dpasync model file (format '%s')", s);
	if (r.rc == 0 && dp_json_get_u64(&r, o, "version", true, 0) != 1)
		dp_json_fail(&r, "unsupported model file version");
	s = dp_json_get_string(&r, o, "model", true, "");
	if (r.rc == 0 && dp_model_parse(s, &m.model) != 0)
		dp_json_fail(&r, "unknown model '%s'", s);
	theta = dp_json_get(&r, o, "theta", json_type_array, true);
	if (r.rc == 0) {
		m.p = json_object_array_length(theta);
		if (m.p == 0)
			dp_json_fail(&r, "'theta' is empty");
	}
	if (r.rc == 0) {
		m.theta = calloc(m.p, sizeof(double));
		if (m.theta == NULL) {
			rc = DP_ENOMEM;
			goto out;
		}
		dp_json_get_doubles(&r, o, "theta", m.theta, m.p);
	}
	names = dp_json_get(&r, o, "features", json_type_array, false);
	if (names != NULL && json_object_array_length(names) != m.p)
		dp_json_fail(&r, "'features' must list %zu names", m.p);
	if (names != NULL && r.rc == 0) {
		m.features = calloc(m.p, sizeof(char *));
		if (m.features == NULL) {
			rc = DP_ENOMEM;
			goto out;
		}
		for (size_t q = 0; q < m.p && r.rc == 0; q++) {
			struct json_object *v = json_object_array_get_idx(names, q);

			if (!json_object_is_type(v, json_type_string)) {
				dp_json_fail(&r, "features[%zu] is not a string", q);
				break;
			}
			m.features[q] = strdup(json_object_get_string(v));
			if (m.features[q] == NULL) {
				rc = DP_ENOMEM;
				goto out;
			}
		}
	}
	s = dp_json_get_string(&r, o, "target", false, NULL);
	if (r.rc == 0 && s != NULL) {
		m.target = strdup(s);
		if (m.target == NULL) {
			rc = DP_ENOMEM;
			goto out;
		}
	}
	m.bias = dp_json_get_bool(&r, o, "bias", false, false);
	m.T = (size_t)dp_json_get_u64(&r, o, "T", false, 0);
	snprintf(m.mode, sizeof(m.mode), "%s", dp_json_get_string(&r, o, "mode", false, ""));
	/* Optional settings: absent is 0, present must be a finite number. */
	m.lambda = dp_json_get_double(&r, o, "lambda", false, 0.0);
	m.theta_max = dp_json_get_double(&r, o, "theta_max", false, 0.0);
	m.clip = dp_json_get_double(&r, o, "clip_l1", false, 0.0);
	rc = r.rc;
	if (rc == 0) {
		*mf = m;
		json_object_put(o);
		return 0;
	}
out:
	json_object_put(o);
	dp_modelfile_free(&m);
	return rc;
}

void dp_modelfile_free(dp_modelfile *mf)
{
	if (mf == NULL)
		return;
	if (mf->features)
		for (size_t q = 0; q < mf->p; q++)
			free(mf->features[q]);
	free(mf->features);
	free(mf->target);
	free(mf->theta);
	memset(mf, 0, sizeof(*mf));
}

int dp_modelfile_check_data(const dp_modelfile *mf, const char *path, const dp_dataset *ds)
{
	DP_REQUIRE(mf != NULL && path != NULL && ds != NULL);
	if (ds->p != mf->p)
		return dp_error_set(DP_EFORMAT, "%s has %zu features but the model %s has %zu "
				    "coefficients", ds->source, ds->p, path, mf->p);
	if (mf->features == NULL)
		return 0;
	for (size_t q = 0; q < mf->p; q++)
		if (strcmp(ds->names[q], mf->features[q]) != 0)
			return dp_error_set(DP_EFORMAT, "%s: feature %zu is '%s' but the model %s "
					    "has '%s'", ds->source, q + 1, ds->names[q], path,
					    mf->features[q]);
	return 0;
}
