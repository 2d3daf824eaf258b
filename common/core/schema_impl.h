/* SPDX-License-Identifier: Apache-2.0 */
/* Internals of the feature schema (schema.h).
 *
 * Only the schema's own files include this header: common/core/schema.c
 * (the type), schema_file.c (loading and saving), schema_bind.c (applying)
 * and tools/lib/schema_build.c (building from a sample, which only the
 * offline tool needs).  Everyone else sees the opaque dp_schema of
 * schema.h.
 *
 * Invariants of a complete dp_schema (what dp_schema_load checks and
 * dp_schema_build_tables produces): column names distinct and not the
 * target; levels non-empty and distinct (exactly two for binary); scale > 0;
 * feature names distinct; d >= 1; with PCA 1 <= k <= d and unit
 * components. */
#ifndef DP_SCHEMA_IMPL_H
#define DP_SCHEMA_IMPL_H

#include <stddef.h>

#include "common/core/schema.h"

enum dp__schema_kind {
	DP__SCHEMA_NUMERIC,
	DP__SCHEMA_ONEHOT,
	DP__SCHEMA_ORDINAL,
	DP__SCHEMA_DROP,
	DP__SCHEMA_BINARY,    /* two levels -> one 0/1 feature, 1 for the second
			         (schema version 2) */
	DP__SCHEMA_NKINDS
};

enum dp__schema_tkind {
	DP__SCHEMA_T_NUMERIC,
	DP__SCHEMA_T_BINARY,
};

/* The kinds' names in the schema file and in messages, by enum
 * dp__schema_kind. */
extern const char *const dp__schema_kind_names[DP__SCHEMA_NKINDS];

/* A level and its position in the list, sorted by name for lookup. */
struct dp__schema_lvl {
	const char *s;
	size_t i;
};

struct dp__schema_levels {
	char **v;             /* in the schema's order */
	size_t n;
	struct dp__schema_lvl *by_name;
};

struct dp__schema_col {
	char *name;
	int kind;             /* enum dp__schema_kind */
	double center, scale;
	int has_clamp;
	double lo, hi;
	struct dp__schema_levels lv;
	size_t off;           /* first feature of this column in z */
};

struct dp_schema {
	size_t ncols;
	struct dp__schema_col *cols;

	char *target;
	int tkind;            /* enum dp__schema_tkind */
	int tstd;             /* numeric target standardised */
	double tcenter, tscale;
	struct dp__schema_levels labels;
	size_t positive;      /* index in labels */

	size_t d;             /* standardised features before PCA */
	char **znames;
	size_t k;             /* principal components; 0: none */
	double *pmean;        /* d */
	double *pvec;         /* k x d, row-major */
	double *pvar;         /* k eigenvalues (informational) */
	char **pcnames;
	size_t p;             /* output features */
	char **names;         /* znames or pcnames */
};

/* Free v[0..n) and v; NULL is allowed. */
void dp__schema_strv_free(char **v, size_t n);

/* A copy of v[0..n) (n == 0 gives an empty, non-NULL array); NULL when out
 * of memory. */
char **dp__schema_strv_dup(const char *const *v, size_t n);

/* Take ownership of v[0..n) and index it for dp__schema_levels_find.  On a
 * duplicate, *dup points at its text (inside v), DP_EFORMAT is returned
 * without a detail and v stays the caller's; DP_ENOMEM likewise. */
int dp__schema_levels_set(struct dp__schema_levels *lv, char **v, size_t n, const char **dup);

/* Position of s in the list, or -1. */
long dp__schema_levels_find(const struct dp__schema_levels *lv, const char *s);

/* Lay out z from the columns: offsets and names ("col", or "col=level" for
 * each onehot level and for a binary column's second level), d;
 * p and names are set to z's (dp__schema_name_components replaces them).
 * DP_ENOMEM (what was allocated is freed by dp_schema_destroy). */
int dp__schema_layout(dp_schema *s);

/* Names "pc1".."pcK" for s->k components, which become the output
 * features.  DP_ENOMEM. */
int dp__schema_name_components(dp_schema *s);

/* One bound record -> the standardised vector z (s->d values, before PCA).
 * Errors as dp_schema_bind_row; z may be partly written on failure. */
int dp__schema_encode(const dp_schema_bind *b, const char *const *fields, size_t line,
		      double *z);

#endif
