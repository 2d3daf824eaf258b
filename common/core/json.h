/* SPDX-License-Identifier: Apache-2.0 */
/* JSON files through json-c: the one layer every file of ours that is JSON
 * (model.json, schema.json, checkpoint.json, summary.json, reports) is
 * written and read with.
 *
 * Writing keeps doubles exact: each is printed as the shortest decimal text
 * that reads back to the same double (num.h dp_num_format), so a file read
 * back gives bit-identical numbers.
 *
 * Reading goes through a dp_json_reader, which remembers the file and the
 * first error: every getter after a failure does nothing and returns its
 * default, so a loader can read all its fields and check r.rc once.  Each
 * error is DP_EFORMAT with a one-line detail "PATH: WHERE: what" (WHERE is
 * the reader's current location, e.g. "columns[3]", or left out). */
#ifndef DP_JSON_H
#define DP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* ---- writing ------------------------------------------------------------- */

/* A number printed as the shortest text that reads back exactly (-0.0 as
 * "-0.0", which keeps its sign).  A non-finite v gives "nan" or "inf",
 * which no JSON reader accepts: check values first.  NULL on allocation
 * failure (dp_json_add/push turn that into DP_ENOMEM). */
struct json_object *dp_json_double(double v);
/* A number that may be infinite (an unlimited privacy budget): then the
 * string "inf", since JSON has no infinity; else as dp_json_double.  NULL
 * on allocation failure. */
struct json_object *dp_json_double_inf(double v);
/* Arrays of such numbers and of strings; NULL on allocation failure. */
struct json_object *dp_json_double_array(const double *v, size_t n);
struct json_object *dp_json_string_array(const char *const *v, size_t n);
/* The '\n'-separated lines of `text` (a final '\n' ends the last line, it
 * does not start an empty one) as an array of strings; NULL on allocation
 * failure. */
struct json_object *dp_json_lines(const char *text);

/* Add `val` to an object under `key`, or append it to an array.  `val` may
 * be NULL (a constructor that failed): DP_ENOMEM.  Ownership of val passes
 * to the container, or it is released on failure. */
int dp_json_add(struct json_object *obj, const char *key, struct json_object *val);
int dp_json_push(struct json_object *arr, struct json_object *val);
/* Add JSON null under `key` (a value JSON cannot hold, such as infinity, or
 * one that does not exist).  0 or DP_ENOMEM. */
int dp_json_add_null(struct json_object *obj, const char *key);

/* Write `root` as pretty-printed text, atomically (file.h), with `mode`.
 * Errors: DP_ENOMEM, DP_EIO (detail names the file). */
int dp_json_write_file(const char *path, struct json_object *root, int mode);

/* ---- reading ------------------------------------------------------------- */

/* Read and parse a file of at most `max` bytes whose top level must be an
 * object, with nothing but white space after it; *root receives it
 * (json_object_put when done), untouched on failure.  Errors: DP_ENOENT,
 * DP_EIO, DP_ERANGE (larger than max), DP_ENOMEM, DP_EFORMAT (not JSON --
 * also a NUL byte or text after the object -- or not an object; the detail
 * has json-c's reason). */
int dp_json_read_file(const char *path, size_t max, struct json_object **root);

typedef struct dp_json_reader {
	const char *path;    /* the file, for messages */
	const char *where;   /* location inside it ("columns[2]"), or NULL */
	int rc;              /* 0, or the first error (sticky) */
} dp_json_reader;

/* Fail the reader (if it has not failed yet) with DP_EFORMAT and the detail
 * "PATH: WHERE: <fmt...>".  Returns r->rc. */
int dp_json_fail(dp_json_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The member `key` of object `o`, of json-c type `type` (json_type_double
 * also accepts integers).  Absent: NULL, and an error "missing key 'K'"
 * when `required`.  Wrong type: an error "'K' must be a T". */
struct json_object *dp_json_get(dp_json_reader *r, struct json_object *o, const char *key,
				json_type type, bool required);

/* Typed members; `def` is returned when absent (and not required) or after
 * an error.  double: finite ("'K' must be finite").  u64: a non-negative
 * integer ("'K' must be an integer", "'K' must not be negative").  string:
 * non-empty, no NUL and no control character (they end up in one-line
 * messages); it belongs to `o` and lives as long as `o`.  bool: true/false.
 * r and key must not be NULL; o may be NULL (then every key is absent). */
double dp_json_get_double(dp_json_reader *r, struct json_object *o, const char *key,
			  bool required, double def);
/* dp_json_get_double, but the string "inf" (dp_json_double_inf) reads as
 * +infinity. */
double dp_json_get_double_inf(dp_json_reader *r, struct json_object *o, const char *key,
			      bool required, double def);
uint64_t dp_json_get_u64(dp_json_reader *r, struct json_object *o, const char *key,
			 bool required, uint64_t def);
const char *dp_json_get_string(dp_json_reader *r, struct json_object *o, const char *key,
			       bool required, const char *def);
bool dp_json_get_bool(dp_json_reader *r, struct json_object *o, const char *key, bool required,
		      bool def);

/* Exactly n finite numbers from the array member `key` into out[0..n)
 * ("'K' must have N numbers, has M").  out is untouched on failure.
 * Returns r->rc. */
int dp_json_get_doubles(dp_json_reader *r, struct json_object *o, const char *key, double *out,
			size_t n);

/* A finite number held by `v` itself (an array element, say), named `what`
 * in messages; def after an error. */
double dp_json_number(dp_json_reader *r, struct json_object *v, const char *what, double def);

/* Refuse any member of `o` whose name is not in allowed[0..n) ("unknown key
 * 'K'"): a typo must never be silently ignored.  Returns r->rc. */
int dp_json_only_keys(dp_json_reader *r, struct json_object *o, const char *const *allowed,
		      size_t n);

#endif
