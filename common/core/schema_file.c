/* SPDX-License-Identifier: Apache-2.0 */
/* The feature schema's JSON file: saving, and loading with a complete
 * validation of what is read (the invariants of schema_impl.h). */
#include "common/core/schema.h"
#include "common/core/schema_impl.h"
#include "common/core/csv.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/json.h"

#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCHEMA_FORMAT "dpasync-schema"
#define SCHEMA_MAX_FILE (64u << 20)

/* ---- saving ----------------------------------------------------------------- */

static int column_to_json(const struct dp__schema_col *col, struct json_object *jc)
{
	int rc;

	rc = dp_json_add(jc, "name", json_object_new_string(col->name));
	if (rc == 0)
		rc = dp_json_add(jc, "kind",
				 json_object_new_string(dp__schema_kind_names[col->kind]));
	if (rc == 0 && (col->kind == DP__SCHEMA_ONEHOT || col->kind == DP__SCHEMA_ORDINAL ||
			col->kind == DP__SCHEMA_BINARY))
		rc = dp_json_add(jc, "levels",
				 dp_json_string_array((const char *const *)col->lv.v, col->lv.n));
	if (col->kind != DP__SCHEMA_NUMERIC && col->kind != DP__SCHEMA_ORDINAL)
		return rc;
	if (rc == 0)
		rc = dp_json_add(jc, "center", dp_json_double(col->center));
	if (rc == 0)
		rc = dp_json_add(jc, "scale", dp_json_double(col->scale));
	if (rc == 0 && col->has_clamp) {
		double lh[2] = { col->lo, col->hi };

		rc = dp_json_add(jc, "clamp", dp_json_double_array(lh, 2));
	}
	return rc;
}

static int target_to_json(const dp_schema *s, struct json_object *tg)
{
	int binary = s->tkind == DP__SCHEMA_T_BINARY;
	int rc;

	rc = dp_json_add(tg, "name", json_object_new_string(s->target));
	if (rc == 0)
		rc = dp_json_add(tg, "kind", json_object_new_string(binary ? "binary" : "numeric"));
	if (binary) {
		if (rc == 0)
			rc = dp_json_add(tg, "positive",
					 json_object_new_string(s->labels.v[s->positive]));
		if (rc == 0)
			rc = dp_json_add(tg, "labels",
					 dp_json_string_array((const char *const *)s->labels.v,
							      s->labels.n));
	} else if (s->tstd) {
		if (rc == 0)
			rc = dp_json_add(tg, "center", dp_json_double(s->tcenter));
		if (rc == 0)
			rc = dp_json_add(tg, "scale", dp_json_double(s->tscale));
	}
	return rc;
}

static int pca_to_json(const dp_schema *s, struct json_object *pca)
{
	struct json_object *comps = NULL;
	int rc;

	rc = dp_json_add(pca, "mean", dp_json_double_array(s->pmean, s->d));
	if (rc == 0)
		rc = dp_json_add(pca, "variance", dp_json_double_array(s->pvar, s->k));
	if (rc == 0) {
		comps = json_object_new_array();
		rc = dp_json_add(pca, "components", comps);
	}
	for (size_t k = 0; k < s->k && rc == 0; k++)
		rc = dp_json_push(comps, dp_json_double_array(s->pvec + k * s->d, s->d));
	return rc;
}

/* The oldest version that holds everything in s, so that a schema without
 * binary columns still reads in a dpasync that knows only version 1. */
static int version_needed(const dp_schema *s)
{
	for (size_t c = 0; c < s->ncols; c++)
		if (s->cols[c].kind == DP__SCHEMA_BINARY)
			return 2;
	return 1;
}

/* Each container is added to its parent as soon as it exists, so that on
 * any failure freeing root frees everything. */
static int schema_to_json(const dp_schema *s, struct json_object *root)
{
	struct json_object *cols = NULL, *tg = NULL, *pca = NULL;
	int rc;

	rc = dp_json_add(root, "format", json_object_new_string(SCHEMA_FORMAT));
	if (rc == 0)
		rc = dp_json_add(root, "version", json_object_new_int(version_needed(s)));
	if (rc == 0) {
		cols = json_object_new_array();
		rc = dp_json_add(root, "columns", cols);
	}
	for (size_t c = 0; c < s->ncols && rc == 0; c++) {
		struct json_object *jc = json_object_new_object();

		rc = dp_json_push(cols, jc);
		if (rc == 0)
			rc = column_to_json(&s->cols[c], jc);
	}
	if (rc == 0) {
		tg = json_object_new_object();
		rc = dp_json_add(root, "target", tg);
	}
	if (rc == 0)
		rc = target_to_json(s, tg);
	if (rc == 0 && s->k > 0) {
		pca = json_object_new_object();
		rc = dp_json_add(root, "pca", pca);
		if (rc == 0)
			rc = pca_to_json(s, pca);
	}
	return rc;
}

int dp_schema_save(const dp_schema *s, const char *path)
{
	struct json_object *root;
	int rc;

	DP_REQUIRE(s != NULL && path != NULL);
	root = json_object_new_object();
	if (root == NULL)
		return DP_ENOMEM;
	rc = schema_to_json(s, root);
	if (rc == 0)
		rc = dp_json_write_file(path, root, 0644);
	json_object_put(root);
	return rc;
}

/* ---- loading and validation ------------------------------------------------- */

/* Strict JSON (RFC 8259 plus NaN/Infinity, which the number checks then
 * refuse) with nothing after the document but whitespace.  Deliberately
 * parallel to dp_json_read_file (json.c), which is lenient: a schema is
 * parsed strictly and its errors keep the texts prep's users read. */
static int parse_strict(const char *path, struct json_object **out)
{
	struct json_tokener *tok;
	struct json_object *root;
	enum json_tokener_error e;
	char *text = NULL;
	size_t len = 0, end;
	int rc;

	rc = dp_file_read_all(path, SCHEMA_MAX_FILE, &text, &len);
	if (rc == DP_ERANGE)
		return dp_error_set(DP_EFORMAT, "%s: larger than %u bytes: not a schema", path,
				    SCHEMA_MAX_FILE);
	if (rc != 0)
		return rc;
	if (strlen(text) != len) {
		free(text);
		return dp_error_set(DP_EFORMAT, "%s: contains a NUL byte: not a JSON schema", path);
	}
	tok = json_tokener_new();
	if (tok == NULL) {
		free(text);
		return DP_ENOMEM;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	/* The terminating NUL is passed too: it ends a bare literal such as "null". */
	root = json_tokener_parse_ex(tok, text, (int)len + 1);
	e = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (e != json_tokener_success) {
		rc = dp_error_set(DP_EFORMAT, "%s: invalid JSON at byte %zu: %s", path, end,
				  e == json_tokener_continue ? "unexpected end of the file"
							     : json_tokener_error_desc(e));
	} else {
		/* Only whitespace may follow the document. */
		while (end < len && strchr(" \t\r\n", text[end]) != NULL)
			end++;
		if (end < len) {
			json_object_put(root);
			root = NULL;
			rc = dp_error_set(DP_EFORMAT, "%s: invalid JSON at byte %zu: data after the "
					  "end of the document", path, end);
		} else if (root == NULL) {
			rc = dp_error_set(DP_EFORMAT, "%s: the schema is JSON null", path);
		}
	}
	json_tokener_free(tok);
	free(text);
	if (root == NULL)
		return rc;
	*out = root;
	return 0;
}

/* The object member `key`, which must be a non-empty array of distinct
 * non-empty strings -> lv. */
static int read_levels(dp_json_reader *r, struct json_object *o, const char *key,
		       struct dp__schema_levels *lv)
{
	struct json_object *a = dp_json_get(r, o, key, json_type_array, true);
	const char *dup = NULL;
	char shown[64];
	char **v;
	size_t n;
	int rc;

	if (a == NULL)
		return r->rc;
	n = json_object_array_length(a);
	if (n == 0)
		return dp_json_fail(r, "'%s' must not be empty", key);
	v = calloc(n, sizeof(*v));
	if (v == NULL)
		return DP_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(a, i);
		const char *str;

		if (!json_object_is_type(e, json_type_string)) {
			dp__schema_strv_free(v, n);
			return dp_json_fail(r, "'%s'[%zu] must be a string", key, i);
		}
		str = json_object_get_string(e);
		if (*str == '\0' || (size_t)json_object_get_string_len(e) != strlen(str)) {
			dp__schema_strv_free(v, n);
			return dp_json_fail(r, "'%s'[%zu] must be a non-empty string without NUL",
					    key, i);
		}
		v[i] = strdup(str);
		if (v[i] == NULL) {
			dp__schema_strv_free(v, n);
			return DP_ENOMEM;
		}
	}
	rc = dp__schema_levels_set(lv, v, n, &dup);
	if (rc == DP_EFORMAT)
		rc = dp_json_fail(r, "'%s' lists '%s' twice", key,
				  dp_csv_show(dup, shown, sizeof(shown)));
	if (rc != 0)
		dp__schema_strv_free(v, n);
	return rc;
}

/* `center` and `scale` (scale > 0), both or neither; required: both.
 * *present says which. */
static int read_center_scale(dp_json_reader *r, struct json_object *o, bool required,
			     double *center, double *scale, int *present)
{
	struct json_object *jc = dp_json_get(r, o, "center", json_type_double, required);
	double c = jc ? dp_json_number(r, jc, "center", 0.0) : 0.0;
	struct json_object *js = dp_json_get(r, o, "scale", json_type_double, required);
	double sc = js ? dp_json_number(r, js, "scale", 0.0) : 0.0;

	if (r->rc != 0)
		return r->rc;
	if ((jc == NULL) != (js == NULL))
		return dp_json_fail(r, "'center' and 'scale' go together");
	if (js != NULL && !(sc > 0.0))
		return dp_json_fail(r, "'scale' must be > 0, got %g", sc);
	*center = c;
	*scale = sc;
	*present = jc != NULL;
	return 0;
}

/* The object o at r->where: an object with none but the keys keys[0..n).
 * Returns r->rc. */
static int read_object(dp_json_reader *r, struct json_object *o, const char *const *keys,
		       size_t n)
{
	if (!json_object_is_type(o, json_type_object))
		return dp_json_fail(r, "must be an object");
	return dp_json_only_keys(r, o, keys, n);
}

/* columns[idx] of a file of the given version; `where` (size `size`)
 * holds the reader's location and must outlive every message made while
 * r->where points at it. */
static int read_column(dp_json_reader *r, struct json_object *jc, size_t idx, int version,
		       struct dp__schema_col *col, char *where, size_t size)
{
	static const char *const keys[] = { "name", "kind", "levels", "center", "scale", "clamp" };
	const char *name, *kind;
	int present, rc;

	snprintf(where, size, "columns[%zu]", idx);
	r->where = where;
	if (read_object(r, jc, keys, sizeof(keys) / sizeof(keys[0])) != 0)
		return r->rc;
	name = dp_json_get_string(r, jc, "name", true, NULL);
	if (r->rc != 0)
		return r->rc;
	col->name = strdup(name);
	if (col->name == NULL)
		return DP_ENOMEM;
	snprintf(where, size, "column '%.60s'", name);
	kind = dp_json_get_string(r, jc, "kind", true, NULL);
	if (r->rc != 0)
		return r->rc;
	col->kind = -1;
	for (int k = 0; k < DP__SCHEMA_NKINDS; k++)
		if (strcmp(kind, dp__schema_kind_names[k]) == 0)
			col->kind = k;
	if (col->kind < 0)
		return dp_json_fail(r, "unknown kind '%s' (numeric, onehot, binary, ordinal or drop)",
				    kind);
	if (col->kind == DP__SCHEMA_BINARY && version < 2)
		return dp_json_fail(r, "kind 'binary' needs \"version\": 2 (the file says %d)",
				    version);
	if (col->kind == DP__SCHEMA_ONEHOT || col->kind == DP__SCHEMA_ORDINAL ||
	    col->kind == DP__SCHEMA_BINARY) {
		rc = read_levels(r, jc, "levels", &col->lv);
		if (rc != 0)
			return rc;
		if (col->kind == DP__SCHEMA_BINARY && col->lv.n != 2)
			return dp_json_fail(r, "kind 'binary' needs exactly two levels, got %zu",
					    col->lv.n);
	} else if (json_object_object_get_ex(jc, "levels", NULL)) {
		return dp_json_fail(r, "'levels' does not apply to kind '%s'", kind);
	}
	if (col->kind != DP__SCHEMA_NUMERIC && col->kind != DP__SCHEMA_ORDINAL) {
		if (json_object_object_get_ex(jc, "center", NULL) ||
		    json_object_object_get_ex(jc, "scale", NULL) ||
		    json_object_object_get_ex(jc, "clamp", NULL))
			return dp_json_fail(r, "'center', 'scale' and 'clamp' do not apply to kind "
					    "'%s'", kind);
		return 0;
	}
	rc = read_center_scale(r, jc, true, &col->center, &col->scale, &present);
	if (rc != 0)
		return rc;
	if (json_object_object_get_ex(jc, "clamp", NULL)) {
		double lh[2];

		rc = dp_json_get_doubles(r, jc, "clamp", lh, 2);
		if (rc != 0)
			return rc;
		if (!(lh[0] < lh[1]))
			return dp_json_fail(r, "'clamp' must be [lo, hi] with lo < hi");
		col->has_clamp = 1;
		col->lo = lh[0];
		col->hi = lh[1];
	}
	return 0;
}

static int read_target(dp_json_reader *r, struct json_object *jt, dp_schema *s)
{
	static const char *const keys[] = { "name", "kind", "center", "scale", "positive", "labels" };
	const char *name, *kind, *positive;
	int present, rc;
	long pos;

	r->where = "target";
	if (read_object(r, jt, keys, sizeof(keys) / sizeof(keys[0])) != 0)
		return r->rc;
	name = dp_json_get_string(r, jt, "name", true, NULL);
	kind = dp_json_get_string(r, jt, "kind", true, NULL);
	if (r->rc != 0)
		return r->rc;
	s->target = strdup(name);
	if (s->target == NULL)
		return DP_ENOMEM;
	if (strcmp(kind, "numeric") == 0) {
		s->tkind = DP__SCHEMA_T_NUMERIC;
		if (json_object_object_get_ex(jt, "positive", NULL) ||
		    json_object_object_get_ex(jt, "labels", NULL))
			return dp_json_fail(r, "'positive' and 'labels' apply to kind 'binary'");
		rc = read_center_scale(r, jt, false, &s->tcenter, &s->tscale, &present);
		if (rc != 0)
			return rc;
		s->tstd = present;
		if (!present) {
			s->tcenter = 0.0;
			s->tscale = 1.0;
		}
		return 0;
	}
	if (strcmp(kind, "binary") != 0)
		return dp_json_fail(r, "unknown kind '%s' (numeric or binary)", kind);
	s->tkind = DP__SCHEMA_T_BINARY;
	if (json_object_object_get_ex(jt, "center", NULL) ||
	    json_object_object_get_ex(jt, "scale", NULL))
		return dp_json_fail(r, "'center' and 'scale' apply to kind 'numeric'");
	positive = dp_json_get_string(r, jt, "positive", true, NULL);
	if (r->rc != 0)
		return r->rc;
	rc = read_levels(r, jt, "labels", &s->labels);
	if (rc != 0)
		return rc;
	if (s->labels.n < 2)
		return dp_json_fail(r, "'labels' needs at least two labels");
	pos = dp__schema_levels_find(&s->labels, positive);
	if (pos < 0)
		return dp_json_fail(r, "positive label '%s' is not in 'labels'", positive);
	s->positive = (size_t)pos;
	return 0;
}

/* Exactly n finite numbers held by the array `a` (an element of another
 * array, which json.h's member getters do not reach), named `what`. */
static int read_number_array(dp_json_reader *r, struct json_object *a, const char *what,
			     double *out, size_t n)
{
	if (!json_object_is_type(a, json_type_array))
		return dp_json_fail(r, "'%s' must be an array of numbers", what);
	if (json_object_array_length(a) != n)
		return dp_json_fail(r, "'%s' must have %zu numbers, has %zu", what, n,
				    json_object_array_length(a));
	for (size_t i = 0; i < n && r->rc == 0; i++)
		out[i] = dp_json_number(r, json_object_array_get_idx(a, i), what, 0.0);
	return r->rc;
}

static int read_pca(dp_json_reader *r, struct json_object *jp, dp_schema *s)
{
	static const char *const keys[] = { "mean", "components", "variance" };
	struct json_object *comps;
	size_t K, d = s->d;
	char where[48];
	int rc;

	r->where = "pca";
	if (read_object(r, jp, keys, sizeof(keys) / sizeof(keys[0])) != 0)
		return r->rc;
	if (!json_object_object_get_ex(jp, "components", &comps))
		return dp_json_fail(r, "missing key 'components'");
	if (!json_object_is_type(comps, json_type_array) || json_object_array_length(comps) == 0)
		return dp_json_fail(r, "'components' must be a non-empty array of arrays");
	K = json_object_array_length(comps);
	if (K > d)
		return dp_json_fail(r, "%zu components for %zu features", K, d);
	if (dp_json_get(r, jp, "mean", json_type_array, true) == NULL)
		return r->rc;
	s->pmean = malloc(d * sizeof(*s->pmean));
	s->pvec = malloc(K * d * sizeof(*s->pvec));
	s->pvar = calloc(K, sizeof(*s->pvar));
	if (s->pmean == NULL || s->pvec == NULL || s->pvar == NULL)
		return DP_ENOMEM;
	rc = dp_json_get_doubles(r, jp, "mean", s->pmean, d);
	if (rc != 0)
		return rc;
	for (size_t k = 0; k < K; k++) {
		double norm = 0.0;

		snprintf(where, sizeof(where), "pca: components[%zu]", k);
		r->where = where;
		rc = read_number_array(r, json_object_array_get_idx(comps, k), "components",
				       s->pvec + k * d, d);
		if (rc != 0)
			return rc;
		for (size_t i = 0; i < d; i++)
			norm += s->pvec[k * d + i] * s->pvec[k * d + i];
		/* A component that is not a unit vector means a damaged or
		 * mismatched file, not a choice. */
		if (fabs(sqrt(norm) - 1.0) > 1e-6)
			return dp_json_fail(r, "not a unit vector (norm %.9g)", sqrt(norm));
	}
	r->where = "pca";
	if (json_object_object_get_ex(jp, "variance", NULL)) {
		rc = dp_json_get_doubles(r, jp, "variance", s->pvar, K);
		if (rc != 0)
			return rc;
		for (size_t k = 0; k < K; k++)
			if (s->pvar[k] < 0.0)
				return dp_json_fail(r, "'variance' must be >= 0");
	}
	s->k = K;
	return dp__schema_name_components(s);
}

/* The version member by hand: it must be an integer, which json.h's number
 * getters do not insist on.  *out: the version. */
static int read_version(dp_json_reader *r, struct json_object *root, int *out)
{
	struct json_object *v;
	int64_t version;

	r->where = "top level";
	if (!json_object_object_get_ex(root, "version", &v))
		return dp_json_fail(r, "missing key 'version'");
	r->where = "version";
	if (!json_object_is_type(v, json_type_int))
		return dp_json_fail(r, "must be an integer");
	version = json_object_get_int64(v);
	if (version > DP_SCHEMA_VERSION)
		return dp_json_fail(r, "%lld is newer than this dpasync reads (%d)",
				    (long long)version, DP_SCHEMA_VERSION);
	if (version < 1)
		return dp_json_fail(r, "must be >= 1, got %lld", (long long)version);
	*out = (int)version;
	return 0;
}

static int read_columns(dp_json_reader *r, struct json_object *root, int version, dp_schema *s)
{
	struct json_object *cols;
	char where[96];
	size_t n;
	int rc;

	r->where = "top level";
	if (!json_object_object_get_ex(root, "columns", &cols))
		return dp_json_fail(r, "missing key 'columns'");
	r->where = "columns";
	if (!json_object_is_type(cols, json_type_array) || json_object_array_length(cols) == 0)
		return dp_json_fail(r, "must be a non-empty array");
	n = json_object_array_length(cols);
	s->cols = calloc(n, sizeof(*s->cols));
	if (s->cols == NULL)
		return DP_ENOMEM;
	for (size_t c = 0; c < n; c++) {
		s->ncols++;
		rc = read_column(r, json_object_array_get_idx(cols, c), c, version, &s->cols[c],
				 where, sizeof(where));
		r->where = "columns";
		if (rc != 0)
			return rc;
		for (size_t k = 0; k < c; k++)
			if (strcmp(s->cols[k].name, s->cols[c].name) == 0)
				return dp_json_fail(r, "column '%s' appears twice", s->cols[c].name);
	}
	return 0;
}

static int schema_from_json(dp_json_reader *r, struct json_object *root, dp_schema *s)
{
	static const char *const keys[] = { "format", "version", "columns", "target", "pca" };
	struct json_object *v;
	const char *fmt;
	int rc, version = 0;

	r->where = "top level";
	if (!json_object_is_type(root, json_type_object))
		return dp_json_fail(r, "must be a JSON object");
	dp_json_only_keys(r, root, keys, sizeof(keys) / sizeof(keys[0]));
	fmt = dp_json_get_string(r, root, "format", false, NULL);
	if (r->rc != 0)
		return r->rc;
	if (fmt != NULL && strcmp(fmt, SCHEMA_FORMAT) != 0) {
		r->where = "format";
		return dp_json_fail(r, "'%s' is not a dpasync schema", fmt);
	}
	rc = read_version(r, root, &version);
	if (rc == 0)
		rc = read_columns(r, root, version, s);
	if (rc != 0)
		return rc;
	r->where = "top level";
	if (!json_object_object_get_ex(root, "target", &v))
		return dp_json_fail(r, "missing key 'target'");
	rc = read_target(r, v, s);
	if (rc != 0)
		return rc;
	for (size_t c = 0; c < s->ncols; c++)
		if (strcmp(s->cols[c].name, s->target) == 0)
			return dp_json_fail(r, "'%s' is also listed in 'columns'", s->target);
	rc = dp__schema_layout(s);
	if (rc != 0)
		return rc;
	r->where = "columns";
	if (s->d == 0)
		return dp_json_fail(r, "no features (every column is 'drop')");
	for (size_t i = 0; i < s->d; i++)
		for (size_t k = 0; k < i; k++)
			if (strcmp(s->znames[i], s->znames[k]) == 0)
				return dp_json_fail(r, "two features are both named '%s'",
						    s->znames[i]);
	if (json_object_object_get_ex(root, "pca", &v))
		return read_pca(r, v, s);
	return 0;
}

int dp_schema_load(const char *path, dp_schema **out)
{
	dp_json_reader r = { .path = path };
	struct json_object *root = NULL;
	dp_schema *s;
	int rc;

	DP_REQUIRE(path != NULL && out != NULL);
	rc = parse_strict(path, &root);
	if (rc != 0)
		return rc;
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		json_object_put(root);
		return DP_ENOMEM;
	}
	rc = schema_from_json(&r, root, s);
	json_object_put(root);
	if (rc != 0) {
		dp_schema_destroy(s);
		return rc;
	}
	*out = s;
	return 0;
}
