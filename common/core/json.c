/* SPDX-License-Identifier: Apache-2.0 */
#include "common/core/json.h"
#include "common/core/csv.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/num.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct json_object *dp_json_double(double v)
{
	char buf[40];

	/* "-0" is exact for strtod, but json-c reads it as the integer 0 and
	 * the sign is lost; "-0.0" reads back as a double. */
	if (v == 0.0 && signbit(v))
		snprintf(buf, sizeof(buf), "-0.0");
	else
		dp_num_format(buf, sizeof(buf), v);
	return json_object_new_double_s(v, buf);
}

struct json_object *dp_json_double_inf(double v)
{
	return isinf(v) ? json_object_new_string("inf") : dp_json_double(v);
}

/* An array of n elements, element i made by item(v, i); NULL when any
 * allocation fails. */
static struct json_object *array_of(const void *v, size_t n,
				    struct json_object *(*item)(const void *v, size_t i))
{
	struct json_object *arr = json_object_new_array_ext((int)n);

	if (arr == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (dp_json_push(arr, item(v, i)) != 0) {
			json_object_put(arr);
			return NULL;
		}
	}
	return arr;
}

static struct json_object *double_item(const void *v, size_t i)
{
	return dp_json_double(((const double *)v)[i]);
}

static struct json_object *string_item(const void *v, size_t i)
{
	return json_object_new_string(((const char *const *)v)[i]);
}

struct json_object *dp_json_double_array(const double *v, size_t n)
{
	DP_REQUIRE(v != NULL || n == 0);
	return array_of(v, n, double_item);
}

struct json_object *dp_json_string_array(const char *const *v, size_t n)
{
	DP_REQUIRE(v != NULL || n == 0);
	return array_of(v, n, string_item);
}

struct json_object *dp_json_lines(const char *text)
{
	struct json_object *arr;

	DP_REQUIRE(text != NULL);
	arr = json_object_new_array();
	while (arr != NULL && *text) {
		size_t n = strcspn(text, "\n");

		if (dp_json_push(arr, json_object_new_string_len(text, (int)n)) != 0) {
			json_object_put(arr);
			return NULL;
		}
		text += n + (text[n] == '\n');
	}
	return arr;
}

int dp_json_add(struct json_object *obj, const char *key, struct json_object *val)
{
	DP_REQUIRE(obj != NULL && key != NULL);
	if (val == NULL)
		return DP_ENOMEM;
	if (json_object_object_add(obj, key, val) != 0) {
		json_object_put(val);
		return DP_ENOMEM;
	}
	return 0;
}

int dp_json_push(struct json_object *arr, struct json_object *val)
{
	DP_REQUIRE(arr != NULL);
	if (val == NULL)
		return DP_ENOMEM;
	if (json_object_array_add(arr, val) != 0) {
		json_object_put(val);
		return DP_ENOMEM;
	}
	return 0;
}

int dp_json_add_null(struct json_object *obj, const char *key)
{
	DP_REQUIRE(obj != NULL && key != NULL);
	/* json-c stores a NULL member as JSON null. */
	return json_object_object_add(obj, key, NULL) == 0 ? 0 : DP_ENOMEM;
}

int dp_json_write_file(const char *path, struct json_object *root, int mode)
{
	size_t len = 0;
	const char *text;

	DP_REQUIRE(path != NULL && root != NULL);
	text = json_object_to_json_string_length(
		root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	if (text == NULL)
		return dp_error_set(DP_ENOMEM, "%s: out of memory", path);
	return dp_file_write_atomic(path, text, len, mode);
}

/* Deliberately parallel to parse_strict in common/core/schema_file.c, which
 * parses schemas in json-c's strict mode with their own error texts. */
int dp_json_read_file(const char *path, size_t max, struct json_object **root)
{
	enum json_tokener_error jerr;
	struct json_tokener *tok;
	struct json_object *o;
	char *text = NULL;
	size_t len = 0, end;
	int rc;

	DP_REQUIRE(path != NULL && root != NULL);
	rc = dp_file_read_all(path, max, &text, &len);
	if (rc != 0)
		return rc;
	if (strlen(text) != len) {
		free(text);
		return dp_error_set(DP_EFORMAT, "%s: not JSON (contains a NUL byte)", path);
	}
	tok = json_tokener_new();
	if (tok == NULL) {
		free(text);
		return dp_error_set(DP_ENOMEM, "%s: out of memory", path);
	}
	/* Parsing stops after the first value, which would accept '{"a": 1} }'
	 * or two objects in a row: only white space may follow it. */
	o = json_tokener_parse_ex(tok, text, -1);  /* NUL-terminated, as checked */
	jerr = json_tokener_get_error(tok);
	if (o == NULL && jerr == json_tokener_continue)
		jerr = json_tokener_error_parse_eof;
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (o != NULL && jerr == json_tokener_success) {
		while (end < len && strchr(" \t\r\n", text[end]) != NULL)
			end++;
		if (end < len) {
			json_object_put(o);
			rc = dp_error_set(DP_EFORMAT, "%s: not JSON (text after the top-level value, "
					  "at byte %zu)", path, end + 1);
			free(text);
			return rc;
		}
	}
	free(text);
	if (o == NULL || jerr != json_tokener_success) {
		json_object_put(o);
		return dp_error_set(DP_EFORMAT, "%s: not JSON (%s)", path,
				    json_tokener_error_desc(jerr));
	}
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return dp_error_set(DP_EFORMAT, "%s: not a JSON object", path);
	}
	*root = o;
	return 0;
}

int dp_json_fail(dp_json_reader *r, const char *fmt, ...)
{
	char what[320];
	va_list ap;

	DP_REQUIRE(r != NULL && fmt != NULL);
	if (r->rc != 0)
		return r->rc;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (r->where != NULL)
		r->rc = dp_error_set(DP_EFORMAT, "%s: %s: %s", r->path, r->where, what);
	else
		r->rc = dp_error_set(DP_EFORMAT, "%s: %s", r->path, what);
	return r->rc;
}

/* The article and name of a json-c type, for "'K' must be <type name>". */
static const char *type_name(json_type type)
{
	switch (type) {
	case json_type_double:
		return "a number";
	case json_type_int:
		return "an integer";
	case json_type_string:
		return "a string";
	case json_type_boolean:
		return "a boolean (true or false)";
	case json_type_array:
		return "an array";
	case json_type_object:
		return "an object";
	default:
		return "a value";
	}
}

static bool has_type(struct json_object *v, json_type type)
{
	if (type == json_type_double)
		return json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int);
	return json_object_is_type(v, type);
}

struct json_object *dp_json_get(dp_json_reader *r, struct json_object *o, const char *key,
				json_type type, bool required)
{
	struct json_object *v = NULL;

	DP_REQUIRE(r != NULL && key != NULL);
	if (r->rc != 0)
		return NULL;
	if (!json_object_object_get_ex(o, key, &v)) {
		if (required)
			dp_json_fail(r, "missing key '%s'", key);
		return NULL;
	}
	if (!has_type(v, type)) {
		dp_json_fail(r, "'%s' must be %s", key, type_name(type));
		return NULL;
	}
	return v;
}

double dp_json_number(dp_json_reader *r, struct json_object *v, const char *what, double def)
{
	double d;

	DP_REQUIRE(r != NULL && what != NULL);
	if (r->rc != 0)
		return def;
	if (!has_type(v, json_type_double)) {
		dp_json_fail(r, "'%s' must be a number", what);
		return def;
	}
	d = json_object_get_double(v);
	if (!isfinite(d)) {
		dp_json_fail(r, "'%s' must be finite", what);
		return def;
	}
	return d;
}

double dp_json_get_double(dp_json_reader *r, struct json_object *o, const char *key,
			  bool required, double def)
{
	struct json_object *v = dp_json_get(r, o, key, json_type_double, required);

	return v ? dp_json_number(r, v, key, def) : def;
}

double dp_json_get_double_inf(dp_json_reader *r, struct json_object *o, const char *key,
			      bool required, double def)
{
	struct json_object *v = NULL;

	DP_REQUIRE(r != NULL && key != NULL);
	if (r->rc == 0 && json_object_object_get_ex(o, key, &v) &&
	    json_object_is_type(v, json_type_string) && strcmp(json_object_get_string(v), "inf") == 0)
		return INFINITY;
	return dp_json_get_double(r, o, key, required, def);
}

uint64_t dp_json_get_u64(dp_json_reader *r, struct json_object *o, const char *key,
			 bool required, uint64_t def)
{
	struct json_object *v = dp_json_get(r, o, key, json_type_int, required);

	if (v == NULL)
		return def;
	/* json-c keeps integers above INT64_MAX as uint64 and the rest as
	 * int64: a negative one reads as a negative int64. */
	if (json_object_get_int64(v) < 0) {
		dp_json_fail(r, "'%s' must not be negative", key);
		return def;
	}
	return json_object_get_uint64(v);
}

const char *dp_json_get_string(dp_json_reader *r, struct json_object *o, const char *key,
			       bool required, const char *def)
{
	struct json_object *v = dp_json_get(r, o, key, json_type_string, required);
	const char *s;

	if (v == NULL)
		return def;
	s = json_object_get_string(v);
	if ((size_t)json_object_get_string_len(v) != strlen(s)) {
		dp_json_fail(r, "'%s' contains a NUL character", key);
		return def;
	}
	if (*s == '\0') {
		dp_json_fail(r, "'%s' must not be empty", key);
		return def;
	}
	if (dp_csv_has_control(s)) {
		dp_json_fail(r, "'%s' contains a control character", key);
		return def;
	}
	return s;
}

bool dp_json_get_bool(dp_json_reader *r, struct json_object *o, const char *key, bool required,
		      bool def)
{
	struct json_object *v = dp_json_get(r, o, key, json_type_boolean, required);

	return v ? json_object_get_boolean(v) != 0 : def;
}

int dp_json_get_doubles(dp_json_reader *r, struct json_object *o, const char *key, double *out,
			size_t n)
{
	struct json_object *a;
	double *tmp;

	DP_REQUIRE(out != NULL || n == 0);
	a = dp_json_get(r, o, key, json_type_array, true);
	if (a == NULL)
		return r->rc;
	if (json_object_array_length(a) != n)
		return dp_json_fail(r, "'%s' must have %zu numbers, has %zu", key, n,
				    json_object_array_length(a));
	tmp = malloc((n ? n : 1) * sizeof(double));
	if (tmp == NULL) {
		r->rc = dp_error_set(DP_ENOMEM, "%s: out of memory", r->path);
		return r->rc;
	}
	for (size_t i = 0; i < n && r->rc == 0; i++)
		tmp[i] = dp_json_number(r, json_object_array_get_idx(a, i), key, 0.0);
	if (r->rc == 0 && n > 0)
		memcpy(out, tmp, n * sizeof(double));
	free(tmp);
	return r->rc;
}

int dp_json_only_keys(dp_json_reader *r, struct json_object *o, const char *const *allowed,
		      size_t n)
{
	DP_REQUIRE(r != NULL && (allowed != NULL || n == 0));
	if (r->rc != 0)
		return r->rc;
	json_object_object_foreach(o, key, val) {
		bool known = false;

		(void)val;
		for (size_t i = 0; i < n && !known; i++)
			known = strcmp(allowed[i], key) == 0;
		if (!known) {
			char shown[64];

			return dp_json_fail(r, "unknown key '%s'", dp_csv_show(key, shown, sizeof(shown)));
		}
	}
	return 0;
}
