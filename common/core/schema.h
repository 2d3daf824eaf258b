/* SPDX-License-Identifier: Apache-2.0 */
/* Feature schema: how raw CSV columns become the numeric features and the
 * target of a deployment.  One schema (a JSON file) is shared by every owner
 * so that all of them produce the same feature vector.
 *
 * Column kinds:
 *   numeric  value -> (value - center) / scale, then clamped to [lo, hi]
 *            when the column has a clamp;
 *   onehot   fixed list of levels -> one 0/1 feature per level (named
 *            "column=level"); a level not in the list is an error;
 *   binary   exactly two levels -> ONE 0/1 feature, 1 for the second level
 *            and named "column=second" (two one-hot columns would always
 *            sum to 1: collinear, and one more coordinate to clip and
 *            noise); schema version 2;
 *   ordinal  ordered list of levels -> index 0..L-1, then (index - center) /
 *            scale (and the optional clamp);
 *   drop     ignored (its cells may be empty).
 * The target is `numeric` (optionally standardised: y = (raw - center) /
 * scale, so a prediction maps back as center + scale * y) or `binary`
 * (the `positive` label -> +1, every other listed label -> -1; a label not
 * in the list is an error).
 * Optionally the standardised feature vector z (length d) is projected on K
 * principal components: feature k = v_k . (z - mean), named "pc1".."pcK".
 *
 * JSON layout and every validation rule: docs/data.md.
 *
 * This module holds the schema type, its file (load with validation, save)
 * and its application to rows; it is what the daemons link.  Building a
 * schema from a sample is the offline tool's job: tools/lib/schema_build.h. */
#ifndef DP_SCHEMA_H
#define DP_SCHEMA_H

#include <stddef.h>

/* The newest schema file version this code reads.  1: the original kinds;
 * 2: adds kind binary.  A schema is saved with the oldest version that
 * holds it (1 unless it has a binary column), so files without binary
 * columns still read in older dpasync. */
#define DP_SCHEMA_VERSION 2

typedef struct dp_schema dp_schema;

/* Write as JSON (atomically: temporary file, fsync, rename), with doubles in
 * the shortest form that reads back exactly (json.h).  0, DP_EIO,
 * DP_ENOMEM. */
int dp_schema_save(const dp_schema *s, const char *path);

/* Read and validate a schema file.  Errors: DP_ENOENT (cannot open),
 * DP_EIO, DP_EFORMAT (invalid JSON, unknown or missing key, wrong type,
 * unknown kind, empty or duplicate levels, a binary column without exactly
 * two levels or in a version 1 file, scale <= 0, non-finite number, newer
 * version, inconsistent PCA sizes; the detail names file and key),
 * DP_ENOMEM.  *out untouched on failure. */
int dp_schema_load(const char *path, dp_schema **out);

/* Free; NULL is allowed. */
void dp_schema_destroy(dp_schema *s);

/* Number of output features (K with PCA, else d) and their names (valid
 * while the schema lives). */
size_t dp_schema_nfeatures(const dp_schema *s);
const char *const *dp_schema_feature_names(const dp_schema *s);
/* Name of the target column. */
const char *dp_schema_target(const dp_schema *s);
/* 1 for a binary target, 0 for a numeric one. */
int dp_schema_target_binary(const dp_schema *s);
/* How to map a model's y back to the raw target: raw = center + scale * y
 * (center 0, scale 1 when the target is not standardised or is binary). */
void dp_schema_target_scaling(const dp_schema *s, double *center, double *scale);
/* 1 when applying s reads the raw column named `column`: the target or a
 * column of any kind but drop; 0 for a dropped column and for a name the
 * schema does not list. */
int dp_schema_uses(const dp_schema *s, const char *column);

/* How feature j (0 <= j < dp_schema_nfeatures) is made, for the Hello's
 * schema summary (docs/protocol.md §5 "Schema summary"): kind is numeric,
 * ordinal, onehot, binary or pca (a static string); centre and scale of a
 * numeric or ordinal column (else 0 and 1) and its clamp; digest is 16
 * lower-case hex digits of the SHA-256 of the whole transform (those
 * numbers, the column's levels and which of them this is, a principal
 * component and the mean it is taken about).  Errors: DP_EINVAL (j out of
 * range), DP_ENOMEM. */
typedef struct dp_schema_feature {
	const char *kind;
	double center, scale;
	int clamp;
	double lo, hi;
	char digest[17];
} dp_schema_feature;
int dp_schema_feature_info(const dp_schema *s, size_t j, dp_schema_feature *out);

/* ---- applying a schema to CSV rows --------------------------------------- */

typedef struct dp_schema_bind dp_schema_bind;

/* Match the columns of one input file against the schema.  Every column of
 * the schema except `drop` ones, and the target, must be in `header`; every
 * column of `header` must be in the schema (as any kind, or the target).
 * Column order may differ.  A header that is exactly the schema's feature
 * names then its target (what applying the schema writes) is refused when
 * that differs from the raw columns: the file is already prepared, and
 * applying the schema again would silently transform it twice.  (When the
 * schema keeps every column's name, i.e. only numeric and ordinal columns
 * and no PCA, the two cannot be told apart.)  `source` names the file in
 * messages.  The binding copies what it needs and keeps a pointer to `s`,
 * which must outlive it.  Errors: DP_EFORMAT (detail names the file and
 * column, or says the file is already prepared), DP_ENOMEM.  *out
 * untouched on failure. */
int dp_schema_bind_new(const dp_schema *s, const char *source, const char *const *header,
		       size_t ncols, dp_schema_bind **out);

/* Transform one record (`fields` in the bound header's order, `line` for
 * messages): x gets dp_schema_nfeatures() values, *y the target.  Empty
 * cells of used columns, non-numbers, unknown levels and labels are
 * DP_EFORMAT with "file:line: column 'name': what"; x and *y are untouched
 * on failure.  Uses scratch space in `b`: one thread per binding. */
int dp_schema_bind_row(dp_schema_bind *b, const char *const *fields, size_t line, double *x,
		       double *y);

/* Free; NULL is allowed. */
void dp_schema_bind_destroy(dp_schema_bind *b);

/* After a whole file went through a binding: refuse it if its values show
 * the schema was applied to a file it had already prepared.  The header
 * check of dp_schema_bind_new cannot see that when every column keeps its
 * name (numeric and ordinal columns, no PCA); the values can: a column the
 * schema centres on c with scale s, |c/s| >= 3, averages near 0 on a raw
 * file and near -c/s on a prepared one.  When every such column (the
 * standardised target included) averages closer to -c/s than to 0, the
 * file was prepared already: DP_EFORMAT with a one-line detail naming
 * `source` and a column.  Files of fewer than 10 rows, and schemas with no
 * such column, are not judged.  x holds n rows of `stride` values whose
 * first dp_schema_nfeatures() are the schema's features; y the n
 * targets. */
int dp_schema_check_applied(const dp_schema *s, const char *source, const double *x,
			    const double *y, size_t n, size_t stride);

#endif
