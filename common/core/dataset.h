/* SPDX-License-Identifier: Apache-2.0 */
/* An owner's rows held in memory, ready for the gradient kernels.
 *
 * Loaded from a CSV (optionally .csv.gz) with a header row.  Without a schema
 * every column must be numeric; with a schema (schema.h) the raw columns are
 * turned into features as the schema says.  Bad input is an error naming
 * file, line and column; no row is ever skipped (dropping rows with
 * missing cells is `dpasync prep --drop-missing`'s job, done before the
 * owner files exist). */
#ifndef DP_DATASET_H
#define DP_DATASET_H

#include <stddef.h>

struct dp_schema;

typedef struct dp_dataset {
	size_t n;          /* rows */
	size_t p;          /* columns of x: features, plus 1 with the bias */
	double *x;         /* n*p, row-major, 64-byte aligned */
	double *y;         /* n targets */
	double *row_l1;    /* n: ||x_j||_1, computed once at load (clipping) */
	double *row_l2;    /* n: ||x_j||_2 by dp_dataset_norm_l2, at load (L2
	                    * clipping, docs/privacy.md §6 "Clipping in L2") */
	char **names;      /* p feature names ("bias" last when present) */
	char *target;      /* name of the target column */
	char *source;      /* path it was loaded from (for messages) */
} dp_dataset;
/* Every pointer above is owned by the dataset (malloc'ed; x with
 * posix_memalign) and released by dp_dataset_free(); a caller may replace
 * `target` or `source` with another malloc'ed string. */

typedef struct dp_load_opts {
	const char *target;            /* target column; NULL: the schema's */
	int bias;                      /* append a constant-1 column */
	const struct dp_schema *schema;/* NULL: all columns numeric */
} dp_load_opts;

/* (ds, path and the arrays must not be NULL: DP_REQUIRE.) */

/* Load `path` into `ds` (which is overwritten).  CSV rules: csv.h.
 * Without a schema every column other than the target must hold strict
 * finite numbers (dp_csv_parse_number); features keep the file's column
 * order.  With a schema the features and target are the schema's
 * (dp_schema_bind_row); opts->target must then be NULL or the schema's
 * target.  opts == NULL means no target, no bias, no schema.
 * Errors: DP_ENOENT (cannot open), DP_EIO, DP_EINVAL (no target given,
 * target differs from the schema's), DP_EFORMAT (malformed CSV, non-numeric
 * or missing cell, unknown target column, a feature or the target already
 * named "bias" with bias set, no rows, or with a schema a file already prepared with it:
 * dp_schema_bind_new), DP_ENOMEM; dp_error_detail() has file:line and
 * column.  On failure `ds` is left zeroed. */
int dp_dataset_load(dp_dataset *ds, const char *path, const dp_load_opts *opts);

/* Build a dataset from arrays (copied): x is n*p row-major, y has n values.
 * `names` may be NULL (then "x1".."xp"); the target is named "y" and the
 * source "(arrays)".  Errors: DP_EINVAL (n or p is 0), DP_ENUMERIC (a
 * non-finite value), DP_ENOMEM.  `ds` untouched on failure. */
int dp_dataset_from_arrays(dp_dataset *ds, size_t n, size_t p, const double *x,
			   const double *y, const char *const *names);

/* Write as CSV with header names...,target (full double precision: the
 * shortest decimal form that reads back to the same double), atomically
 * (temporary file, fsync, rename) with mode 0600: rows are an owner's
 * private data.  Names are quoted as RFC 4180 needs.
 * Errors: DP_EIO (detail names the file), DP_ENOMEM. */
int dp_dataset_write_csv(const dp_dataset *ds, const char *path);

/* The L2 norm of the p values at x, as the L2 clipping kernel needs it
 * (docs/privacy.md §6 "Clipping in L2"): NaN if a value is NaN, else
 * INFINITY if a value is infinite or the norm overflows, else a double l
 * with l >= ||x||_2 (1 - (p + 2) 2^-53) whenever l >= 2^-1022 (computed
 * with the largest |x_q| scaled to [1, 2), so no square underflows or
 * overflows on the way).  0 for p == 0 or an all-zero row.  Pure. */
double dp_dataset_norm_l2(const double *x, size_t p);

/* Free what `ds` holds and zero it; NULL and a zeroed dataset are allowed. */
void dp_dataset_free(dp_dataset *ds);

/* Check that all datasets have the same p and feature names.  DP_EINVAL
 * with a detail naming the first mismatching file otherwise. */
int dp_dataset_check_compatible(const dp_dataset *const *ds, size_t m);

#endif
