/* SPDX-License-Identifier: Apache-2.0 */
/* Building a feature schema (common/core/schema.h) from a public sample:
 * which columns are numeric or categorical, their levels, centre and scale,
 * the target's labels or standardisation, and optionally principal
 * components (tools/lib/pca.h).  Only `dpasync prep` needs this; the
 * daemons only load and apply a schema.  Everything here is deterministic:
 * the same sample and options give the same schema. */
#ifndef DP_SCHEMA_BUILD_H
#define DP_SCHEMA_BUILD_H

#include <stddef.h>

#include "common/core/csv.h"
#include "common/core/schema.h"

/* Default cap on the distinct levels of a detected categorical column. */
#define DP_SCHEMA_BUILD_MAX_LEVELS 100

typedef enum dp_task {
	DP_TASK_REGRESSION = 0,     /* numeric target */
	DP_TASK_CLASSIFICATION = 1, /* binary target with a positive label */
} dp_task;

/* The tasks' names, indexed by dp_task and ended by NULL: the values of
 * the --task option of prep, gen and forecast (DP_CFG_ENUM). */
extern const char *const dp_schema_build_tasks[];

/* A level list given by the user for one column. */
typedef struct dp_schema_build_levels {
	const char *column;
	int ordered;                  /* 1: ordinal in this order; 0: onehot with exactly
				         these levels (binary when there are two: 1
				         for the second as listed) */
	const char *const *levels;
	size_t nlevels;
} dp_schema_build_levels;

/* Options for dp_schema_build().  Zero-initialise, then set what you need. */
typedef struct dp_schema_build_opts {
	const char *target;           /* target column (required) */
	dp_task task;
	const char *positive;         /* classification: the +1 label (required) */
	const char *const *drop;      /* columns to ignore */
	size_t ndrop;
	const char *const *onehot;    /* numeric-looking columns to treat as onehot */
	size_t nonehot;
	const dp_schema_build_levels *levels; /* user level lists (ordinal or fixed
					 onehot) */
	size_t nlevels;
	const char *const *labels;    /* classification: full label list (NULL: the
					 distinct labels of the sample) */
	size_t nlabels;
	size_t pca;                   /* number of principal components; 0: none */
	double clamp_z;               /* > 0: clamp numeric columns to [-clamp_z, clamp_z]
					 after standardising; 0: no clamp */
	int standardize_target;       /* regression: standardise y with its sample mean
					 and standard deviation */
	size_t max_levels;            /* cap on detected levels; 0:
					 DP_SCHEMA_BUILD_MAX_LEVELS */
	const dp_csv_table *const *level_tables; /* non-NULL: take the levels of detected
					 onehot columns and the class labels from all
					 rows of these tables (same column set as the
					 sample) instead of from the sample */
	size_t nlevel_tables;
} dp_schema_build_opts;

/* Build a schema from the sample CSV at `sample_path` (all its rows).
 * Each column other than the target becomes: drop if listed in opts->drop;
 * ordinal / onehot if opts->levels names it; onehot (levels sorted by byte
 * value) if listed in opts->onehot or if any of its sample values is not a
 * strict number (csv.h); numeric otherwise, with center = sample mean and
 * scale = sample standard deviation (n - 1 denominator; 1 when it is 0 or
 * the sample has one row).  Ordinal indices are standardised the same way.
 * A onehot column with exactly two levels (given or found) becomes kind
 * binary: one 0/1 feature, 1 for the second level (in sorted order when
 * found, as listed when given), named "column=second level".
 * With opts->pca = K, the components are the top K principal components of
 * the standardised features (tools/lib/pca.h).
 * On success *out owns the schema (dp_schema_destroy()).  Errors:
 * DP_ENOENT/DP_EIO (cannot read), DP_EFORMAT (bad CSV, unknown or
 * inconsistent column names, a value not in a given level list, too many
 * levels, a non-numeric regression target, a missing positive label, too few
 * rows), DP_EINVAL (bad options), DP_ENUMERIC (eigen-decomposition failed),
 * DP_ENOMEM.  *out untouched on failure. */
int dp_schema_build(const char *sample_path, const dp_schema_build_opts *opts, dp_schema **out);

/* A sample row: row `row` of tables[table]. */
typedef struct dp_schema_build_pick {
	size_t table;
	size_t row;
} dp_schema_build_pick;

/* The same on rows picked from loaded tables (loaded with
 * DP_CSV_ALLOW_EMPTY if dropped columns may be empty).  All tables must have
 * the same set of columns (any order; the first table's order becomes the
 * schema's).  picks == NULL: every row of every table, in order; a pick out
 * of range is DP_EINVAL.  The tables are only read.  Messages name each
 * row's own file and line. */
int dp_schema_build_tables(const dp_csv_table *const *tables, size_t ntables,
			   const dp_schema_build_pick *picks, size_t npicks,
			   const dp_schema_build_opts *opts, dp_schema **out);

#endif
