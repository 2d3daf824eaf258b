#include "common/core/modelfile.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/num.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DP_MODELFILE_MAX (64u << 20)

struct json_object *dp_json_double(double v)
{
	char buf[40];

	dp_format_double(buf, sizeof(buf), v);
	return json_object_new_double_s(v, buf);
}

struct json_object *dp_json_double_array(const double *v, size_t n)
{
	struct json_object *arr = json_object_new_array_ext((int)n);

	if (arr == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (json_object_array_add(arr, dp_json_double(v[i])) != 0) {
			json_object_put(arr);
			return NULL;
		}
	}
	return arr;
}

int dp_modelfile_write(const char *path, const dp_modelfile *mf)
{
	struct json_object *o, *names;
	const char *text;
	int rc;

	for (size_t q = 0; q < mf->p; q++)
		if (!isfinite(mf->theta[q]))
			return dp_error_set(DP_EINVAL, "%s: theta[%zu] is not finite", path, q);
	o = json_object_new_object();
	if (o == NULL)
		return DP_ENOMEM;
	json_object_object_add(o, "format", json_object_new_string("dpasync-model"));
	json_object_object_add(o, "version", json_object_new_int(1));
	json_object_object_add(o, "model", json_object_new_string(dp_model_name(mf->model)));
	json_object_object_add(o, "mode", json_object_new_string(mf->mode));
	json_object_object_add(o, "T", json_object_new_uint64(mf->T));
	json_object_object_add(o, "lambda", json_object_new_double(mf->lambda));
	json_object_object_add(o, "theta_max", json_object_new_double(mf->theta_max));
	json_object_object_add(o, "clip_l1", json_object_new_double(mf->clip));
	json_object_object_add(o, "bias", json_object_new_boolean(mf->bias));
	if (mf->features) {
		names = json_object_new_array_ext((int)mf->p);
		for (size_t q = 0; q < mf->p; q++)
			json_object_array_add(names, json_object_new_string(mf->features[q]));
		json_object_object_add(o, "features", names);
	}
	json_object_object_add(o, "theta", dp_json_double_array(mf->theta, mf->p));
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (text == NULL) {
		json_object_put(o);
		return DP_ENOMEM;
	}
	rc = dp_file_write_atomic(path, text, strlen(text), 0644);
	json_object_put(o);
	return rc;
}

static int dp__get(struct json_object *o, const char *path, const char *key, json_type type,
		   struct json_object **out)
{
	if (!json_object_object_get_ex(o, key, out) || !json_object_is_type(*out, type))
		return dp_error_set(DP_EFORMAT, "%s: field '%s' missing or of the wrong type", path, key);
	return 0;
}

static int dp__get_number(struct json_object *o, const char *path, const char *key, double *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
		return dp_error_set(DP_EFORMAT, "%s: field '%s' missing or not a number", path, key);
	*out = json_object_get_double(v);
	if (!isfinite(*out))
		return dp_error_set(DP_EFORMAT, "%s: field '%s' is not finite", path, key);
	return 0;
}

int dp_modelfile_read(const char *path, dp_modelfile *mf)
{
	struct json_object *o, *v, *theta, *names = NULL;
	dp_modelfile m = { 0 };
	char *text;
	int rc;

	rc = dp_file_read_all(path, DP_MODELFILE_MAX, &text, NULL);
	if (rc != 0)
		return rc;
	o = json_tokener_parse(text);
	free(text);
	if (o == NULL || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return dp_error_set(DP_EFORMAT, "%s: not a JSON object", path);
	}
	if ((rc = dp__get(o, path, "format", json_type_string, &v)) != 0)
		goto out;
	if (strcmp(json_object_get_string(v), "dpasync-model") != 0) {
		rc = dp_error_set(DP_EFORMAT, "%s: not a dpasync model file", path);
		goto out;
	}
	if ((rc = dp__get(o, path, "version", json_type_int, &v)) != 0)
		goto out;
	if (json_object_get_int(v) != 1) {
		rc = dp_error_set(DP_EFORMAT, "%s: unsupported model file version %d", path,
				  json_object_get_int(v));
		goto out;
	}
	if ((rc = dp__get(o, path, "model", json_type_string, &v)) != 0)
		goto out;
	if (dp_model_parse(json_object_get_string(v), &m.model) != 0) {
		rc = dp_error_set(DP_EFORMAT, "%s: unknown model '%s'", path, json_object_get_string(v));
		goto out;
	}
	if ((rc = dp__get(o, path, "theta", json_type_array, &theta)) != 0)
		goto out;
	m.p = json_object_array_length(theta);
	if (m.p == 0) {
		rc = dp_error_set(DP_EFORMAT, "%s: theta is empty", path);
		goto out;
	}
	m.theta = calloc(m.p, sizeof(double));
	if (m.theta == NULL) {
		rc = DP_ENOMEM;
		goto out;
	}
	for (size_t q = 0; q < m.p; q++) {
		v = json_object_array_get_idx(theta, q);
		if (!(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)) ||
		    !isfinite(json_object_get_double(v))) {
			rc = dp_error_set(DP_EFORMAT, "%s: theta[%zu] is not a finite number", path, q);
			goto out;
		}
		m.theta[q] = json_object_get_double(v);
	}
	if (json_object_object_get_ex(o, "features", &names)) {
		if (!json_object_is_type(names, json_type_array) ||
		    json_object_array_length(names) != m.p) {
			rc = dp_error_set(DP_EFORMAT, "%s: 'features' must list %zu names", path, m.p);
			goto out;
		}
		m.features = calloc(m.p, sizeof(char *));
		if (m.features == NULL) {
			rc = DP_ENOMEM;
			goto out;
		}
		for (size_t q = 0; q < m.p; q++) {
			v = json_object_array_get_idx(names, q);
			if (!json_object_is_type(v, json_type_string)) {
				rc = dp_error_set(DP_EFORMAT, "%s: features[%zu] is not a string", path, q);
				goto out;
			}
			m.features[q] = strdup(json_object_get_string(v));
			if (m.features[q] == NULL) {
				rc = DP_ENOMEM;
				goto out;
			}
		}
	}
	if (json_object_object_get_ex(o, "bias", &v))
		m.bias = json_object_get_boolean(v);
	if (json_object_object_get_ex(o, "T", &v))
		m.T = (size_t)json_object_get_uint64(v);
	if (json_object_object_get_ex(o, "mode", &v) && json_object_is_type(v, json_type_string))
		snprintf(m.mode, sizeof(m.mode), "%s", json_object_get_string(v));
	{
		/* Optional settings: absent is 0, present must be a finite number. */
		const struct { const char *key; double *field; } opt[] = {
			{ "lambda", &m.lambda }, { "theta_max", &m.theta_max }, { "clip_l1", &m.clip },
		};

		for (size_t i = 0; i < sizeof(opt) / sizeof(opt[0]); i++)
			if (json_object_object_get_ex(o, opt[i].key, &v) &&
			    (rc = dp__get_number(o, path, opt[i].key, opt[i].field)) != 0)
				goto out;
	}
	*mf = m;
	json_object_put(o);
	return 0;
out:
	json_object_put(o);
	dp_modelfile_free(&m);
	return rc;
}

void dp_modelfile_free(dp_modelfile *mf)
{
	if (mf->features)
		for (size_t q = 0; q < mf->p; q++)
			free(mf->features[q]);
	free(mf->features);
	free(mf->theta);
	memset(mf, 0, sizeof(*mf));
}
