/* Feature schema: how raw CSV columns become the numeric features and the
 * target of a deployment.  One schema (a JSON file) is shared by every owner
 * so that all of them produce the same feature vector.
 *
 * Column kinds:
 *   numeric  value -> (value - center) / scale, then clamped to [lo, hi]
 *            when the column has a clamp;
 *   onehot   fixed list of levels -> one 0/1 feature per level (named
 *            "column=level"); a level not in the list is an error;
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
 * JSON layout and every validation rule: docs/data.md.  Everything here is
 * deterministic: the same sample and options give the same schema. */
#ifndef DP_SCHEMA_H
#define DP_SCHEMA_H

#include <stddef.h>

#include "common/core/csv.h"

#define DP_SCHEMA_VERSION 1
/* Default cap on the distinct levels of a detected categorical column. */
#define DP_SCHEMA_MAX_LEVELS 100

typedef struct dp_schema dp_schema;

typedef enum dp_task {
	DP_TASK_REGRESSION = 0,     /* numeric target */
	DP_TASK_CLASSIFICATION = 1, /* binary target with a positive label */
} dp_task;

/* A level list given by the user for one column. */
typedef struct dp_schema_levels {
	const char *column;
	int ordered;                  /* 1: ordinal in this order; 0: onehot with exactly
				         these levels */
	const char *const *levels;
	size_t nlevels;
} dp_schema_levels;

/* Options for dp_schema_build().  Zero-initialise, then set what you need. */
typedef struct dp_schema_opts {
	const char *target;           /* target column (required) */
	dp_task task;
	const char *positive;         /* classification: the +1 label (required) */
	const char *const *drop;      /* columns to ignore */
	size_t ndrop;
	const char *const *onehot;    /* numeric-looking columns to treat as onehot */
	size_t nonehot;
	const dp_schema_levels *levels; /* user level lists (ordinal or fixed onehot) */
	size_t nlevels;
	const char *const *labels;    /* classification: full label list (NULL: the
					 distinct labels of the sample) */
	size_t nlabels;
	size_t pca;                   /* number of principal components; 0: none */
	double clamp_z;               /* > 0: clamp numeric columns to [-clamp_z, clamp_z]
					 after standardising; 0: no clamp */
	int standardize_target;       /* regression: standardise y with its sample mean
					 and standard deviation */
	size_t max_levels;            /* cap on detected levels; 0: DP_SCHEMA_MAX_LEVELS */
	const dp_csv_table *const *level_tables; /* non-NULL: take the levels of detected
					 onehot columns and the class labels from all
					 rows of these tables (same column set as the
					 sample) instead of from the sample */
	size_t nlevel_tables;
} dp_schema_opts;

/* Build a schema from the sample CSV at `sample_path` (all its rows).
 * Each column other than the target becomes: drop if listed in opts->drop;
 * ordinal / onehot if opts->levels names it; onehot (levels sorted by byte
 * value) if listed in opts->onehot or if any of its sample values is not a
 * strict number (csv.h); numeric otherwise, with center = sample mean and
 * scale = sample standard deviation (n - 1 denominator; 1 when it is 0 or
 * the sample has one row).  Ordinal indices are standardised the same way.
 * With opts->pca = K, the components are the top K eigenvectors of the
 * sample covariance (n - 1) of the standardised features, each with its
 * largest-magnitude entry made positive (first such entry on ties).
 * On success *out owns the schema (dp_schema_destroy()).  Errors:
 * DP_ENOENT/DP_EIO (cannot read), DP_EFORMAT (bad CSV, unknown or
 * inconsistent column names, a value not in a given level list, too many
 * levels, a non-numeric regression target, a missing positive label, too few
 * rows), DP_EINVAL (bad options), DP_ENUMERIC (eigen-decomposition failed),
 * DP_ENOMEM.  *out untouched on failure. */
int dp_schema_build(const char *sample_path, const dp_schema_opts *opts, dp_schema **out);

/* A sample row: row `row` of tables[table]. */
typedef struct dp_schema_pick {
	size_t table;
	size_t row;
} dp_schema_pick;

/* The same on rows picked from loaded tables (loaded with
 * DP_CSV_ALLOW_EMPTY if dropped columns may be empty).  All tables must have
 * the same set of columns (any order; the first table's order becomes the
 * schema's).  picks == NULL: every row of every table, in order.  The
 * tables are only read.  Messages name each row's own file and line. */
int dp_schema_build_tables(const dp_csv_table *const *tables, size_t ntables,
			   const dp_schema_pick *picks, size_t npicks, const dp_schema_opts *opts,
			   dp_schema **out);

/* Write as JSON (atomically: temporary file, fsync, rename), with doubles in
 * the shortest form that reads back exactly.  0, DP_EIO, DP_ENOMEM. */
int dp_schema_save(const dp_schema *s, const char *path);

/* Read and validate a schema file.  Errors: DP_ENOENT (cannot open),
 * DP_EIO, DP_EFORMAT (invalid JSON, unknown or missing key, wrong type,
 * unknown kind, empty or duplicate levels, scale <= 0, non-finite number,
 * newer version, inconsistent PCA sizes; the detail names file and key),
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

/* ---- applying a schema to CSV rows --------------------------------------- */

typedef struct dp_schema_bind dp_schema_bind;

/* Match the columns of one input file against the schema.  Every column of
 * the schema except `drop` ones, and the target, must be in `header`; every
 * column of `header` must be in the schema (as any kind, or the target).
 * Column order may differ.  `source` names the file in messages.  The
 * binding copies what it needs and keeps a pointer to `s`, which must
 * outlive it.  Errors: DP_EFORMAT (detail names the file and column),
 * DP_ENOMEM.  *out untouched on failure. */
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

#endif
