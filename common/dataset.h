/* An owner's rows held in memory, ready for the gradient kernels.
 *
 * Loaded from a CSV (optionally .csv.gz) with a header row.  Without a schema
 * every column must be numeric; with a schema (schema.h) the raw columns are
 * turned into features as the schema says.  Bad input is an error naming
 * file, line and column; no row is ever skipped. */
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
	char **names;      /* p feature names ("bias" last when present) */
	char *target;      /* name of the target column */
	char *source;      /* path it was loaded from (for messages) */
} dp_dataset;

typedef struct dp_load_opts {
	const char *target;            /* target column; NULL: the schema's */
	int bias;                      /* append a constant-1 column */
	const struct dp_schema *schema;/* NULL: all columns numeric */
} dp_load_opts;

/* Load `path` into `ds` (which is overwritten).  Errors: DP_ENOENT (cannot
 * open), DP_EFORMAT (malformed CSV, non-numeric or missing cell, unknown
 * target column, no rows), DP_ENOMEM; dp_error_detail() has file:line and
 * column.  On failure `ds` is left zeroed. */
int dp_dataset_load(dp_dataset *ds, const char *path, const dp_load_opts *opts);

/* Build a dataset from arrays (copied).  `names` may be NULL. */
int dp_dataset_from_arrays(dp_dataset *ds, size_t n, size_t p, const double *x,
			   const double *y, const char *const *names);

/* Write as CSV with header names...,target (full double precision). */
int dp_dataset_write_csv(const dp_dataset *ds, const char *path);

void dp_dataset_free(dp_dataset *ds);

/* Check that all datasets have the same p and feature names.  DP_EINVAL
 * with a detail naming the first mismatching file otherwise. */
int dp_dataset_check_compatible(const dp_dataset *const *ds, size_t m);

#endif
