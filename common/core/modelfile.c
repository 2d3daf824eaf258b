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

/* Whether s is a partial model's reason: 1 to DP_MODELFILE_REASON - 1
 * characters of [a-z0-9-] (a word a script can match, never a message). */
static int reason_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= DP_MODELFILE_REASON)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return 0;
	return 1;
}

/* A partial model's fields (docs/design.md §9 "Partial model").  0 or
 * DP_ENOMEM. */
static int add_partial(struct json_object *o, const dp_modelfile *mf)
{
	int rc = dp_json_add(o, "partial", json_object_new_boolean(1));

	if (rc == 0)
		rc = dp_json_add(o, "k", json_object_new_uint64(mf->k));
	if (rc == 0)
		rc = dp_json_add(o, "reason", json_object_new_string(mf->reason));
	if (rc == 0 && mf->detail)
		rc = dp_json_add(o, "detail", json_object_new_string(mf->detail));
	return rc;
}

/* The partial model's fields of a version-2 file into m.  Fails r with the
 * field's name; DP_ENOMEM. */
static int read_partial(dp_json_reader *r, struct json_object *o, dp_modelfile *m)
{
	const char *s;

	if (!dp_json_get_bool(r, o, "partial", true, false) && r->rc == 0)
		dp_json_fail(r, "version 2 is a partial model: 'partial' must be true");
	m->partial = 1;
	m->k = dp_json_get_u64(r, o, "k", true, 0);
	if (r->rc == 0 && m->T > 0 && m->k > m->T)
		dp_json_fail(r, "'k' %llu is over T %zu", (unsigned long long)m->k, m->T);
	s = dp_json_get_string(r, o, "reason", true, "");
	if (r->rc == 0 && !reason_ok(s))
		dp_json_fail(r, "'reason' must be a word of a-z, 0-9 and '-' (at most %d)",
			     DP_MODELFILE_REASON - 1);
	if (r->rc == 0)
		snprintf(m->reason, sizeof(m->reason), "%s", s);
	s = dp_json_get_string(r, o, "detail", false, NULL);
	if (r->rc == 0 && s != NULL) {
		m->detail = strdup(s);
		if (m->detail == NULL)
			return DP_ENOMEM;
	}
	return 0;
}

int dp_modelfile_write(const char *path, const dp_modelfile *mf, int mode)
{
	struct json_object *o;
	int rc = 0;

	DP_REQUIRE(path != NULL && mf != NULL && (mf->theta != NULL || mf->p == 0));
	for (size_t q = 0; q < mf->p; q++)
		if (!isfinite(mf->theta[q]))
			return dp_error_set(DP_EINVAL, "%s: theta[%zu] is not finite", path, q);
	if (mf->schema[0] != '\0' && !dp_fingerprint_ok(mf->schema))
		return dp_error_set(DP_EINVAL, "%s: schema '%s' is not a fingerprint", path,
				    mf->schema);
	if (mf->partial && !reason_ok(mf->reason))
		return dp_error_set(DP_EINVAL, "%s: a partial model's reason must be a word",
				    path);
	if (mf->partial && mf->T > 0 && mf->k > mf->T)
		return dp_error_set(DP_EINVAL, "%s: a partial model's k is over T", path);
	o = json_object_new_object();
	if (o == NULL)
		return DP_ENOMEM;
	rc = dp_json_add(o, "format", json_object_new_string("dpasync-model"));
	if (rc == 0)
		rc = dp_json_add(o, "version", json_object_new_int(mf->partial ? 2 : 1));
	if (rc == 0)
		rc = dp_json_add(o, "model", json_object_new_string(dp_model_name(mf->model)));
	/* The reader takes an absent mode as "" and refuses an empty one. */
	if (rc == 0 && mf->mode[0] != '\0')
		rc = dp_json_add(o, "mode", json_object_new_string(mf->mode));
	if (rc == 0 && mf->job)
		rc = dp_json_add(o, "job", json_object_new_string(mf->job));
	if (rc == 0 && mf->schema[0] != '\0')
		rc = dp_json_add(o, "schema", json_object_new_string(mf->schema));
	if (rc == 0)
		rc = dp_json_add(o, "T", json_object_new_uint64(mf->T));
	if (rc == 0 && mf->partial)
		rc = add_partial(o, mf);
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
	uint64_t version = 0;
	int rc;

	DP_REQUIRE(path != NULL && mf != NULL);
	rc = dp_json_read_file(path, DP_MODELFILE_MAX, &o);
	if (rc != 0)
		return rc;
	s = dp_json_get_string(&r, o, "format", true, "");
	if (r.rc == 0 && strcmp(s, "dpasync-model") != 0)
		dp_json_fail(&r, "not a dpasync model file (format '%s')", s);
	if (r.rc == 0)
		version = dp_json_get_u64(&r, o, "version", true, 0);
	if (r.rc == 0 && version != 1 && version != 2)
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
	s = dp_json_get_string(&r, o, "schema", false, NULL);
	if (r.rc == 0 && s != NULL && !dp_fingerprint_ok(s))
		dp_json_fail(&r, "'schema' must be sha256: and 64 lower-case hex digits");
	if (r.rc == 0 && s != NULL)
		memcpy(m.schema, s, DP_FINGERPRINT_SIZE);
	m.T = (size_t)dp_json_get_u64(&r, o, "T", false, 0);
	/* Version 1 is a complete model: a "partial" there is not read. */
	if (r.rc == 0 && version == 2 && read_partial(&r, o, &m) != 0) {
		rc = DP_ENOMEM;
		goto out;
	}
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
	free(mf->detail);
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

int dp_modelfile_check_schema(const dp_modelfile *mf, const char *path, const dp_dataset *ds,
			      const char *schema_path)
{
	char fp[DP_FINGERPRINT_SIZE], applied[4096];
	int rc;

	DP_REQUIRE(mf != NULL && path != NULL && ds != NULL);
	if (mf->schema[0] == '\0')
		return 0;
	if (schema_path == NULL) {
		/* A prepared file: the schema it was made with, as ownerd. */
		rc = dp_fingerprint_applied(ds, mf->bias, applied, sizeof(applied));
		if (rc < 0)
			return rc;
		if (rc == 1)
			schema_path = applied;
	}
	rc = dp_fingerprint_schema(ds, mf->bias, schema_path, fp);
	if (rc != 0)
		return rc;
	if (strcmp(fp, mf->schema) == 0)
		return 0;
	return dp_error_set(DP_EINVAL, "%s: its rows are not the schema the model %s was trained "
			    "on (another target? '%s' now; other columns, bias or --schema?): %s, "
			    "the model's %s", ds->source, path, ds->target ? ds->target : "?", fp,
			    mf->schema);
}
