/* SPDX-License-Identifier: Apache-2.0 */
/* What `dpasync prep` computes before it writes anything (docs/data.md §5):
 * the raw inputs read, rows with a missing cell refused or dropped, the
 * schema built from the sample (or loaded), every row transformed, the
 * public sample's rows, and the grouping of --split-by.  The command
 * (tools/cmd_prep.c) parses the options and writes the files.
 *
 * Row selection is deterministic for a seed: the public sample
 * (--sample-frac) and the split (--split) use two independent streams of
 * the seeded simulation generator (tools/lib/simrng.h). */
#ifndef DP_TOOLS_PREP_H
#define DP_TOOLS_PREP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/core/csv.h"
#include "common/core/schema.h"
#include "tools/lib/schema_build.h"

typedef struct dp_prep_opts {
	const char *const *inputs;     /* the raw CSV files (plain or .gz) */
	size_t ninputs;
	const char *sample;            /* --sample FILE: the schema's sample, or NULL */
	double frac;                   /* --sample-frac F (0: none): F of the input rows */
	uint64_t seed;                 /* the draw of --sample-frac (and of --split) */
	const char *schema;            /* --schema FILE: applied instead of built, or NULL */
	const char *target;            /* with schema: must be its target, or NULL */
	dp_schema_build_opts build;    /* without schema: how to build it; build.drop
					* lists split_by too; level_tables is set here */
	bool all_levels;               /* levels and labels from every input row */
	bool drop_missing;             /* drop rows with an empty used cell, not refuse */
	const char *split_by;          /* --split-by COL: group the one input by it, or NULL */
	size_t split;                  /* --split N (0: none): deal the one input's rows */
} dp_prep_opts;

/* Everything computed, nothing written. */
typedef struct dp_prep {
	dp_csv_table *tabs;            /* the inputs, ninputs */
	size_t ntabs;
	dp_csv_table sample;           /* --sample FILE, else zeroed */
	dp_schema *s;
	double **xs, **ys;             /* each input transformed (tabs[i].nrows rows) */
	dp_schema_build_pick *picks;   /* --sample-frac: the sample's rows */
	size_t npicks;
	double *sx, *sy;               /* the sample transformed (sn rows), or NULL */
	size_t sn;
	size_t dropped, total;         /* --drop-missing: input rows dropped, of total */
	size_t sdropped, stotal;       /* the same for --sample FILE */
	size_t *by;                    /* --split-by: the rows of the one input, grouped
					* by value (sorted), file order within a group */
	size_t by_col;                 /* its column */
} dp_prep;

/* Read, check, build and transform (w is zeroed first).  Errors (w holds
 * what was done so far; free it with dp_prep_free either way): the
 * readers' (DP_ENOENT, DP_EIO, DP_EFORMAT with file:line and column),
 * DP_EFORMAT (a missing cell without drop_missing, a table left without
 * rows, a --split-by value that cannot name a file, a level the sample
 * lacks, with how to fix it), DP_EINVAL (target differs from the schema's,
 * --split above the rows), dp_schema_build_tables', DP_ENOMEM. */
int dp_prep_run(dp_prep *w, const dp_prep_opts *o);
void dp_prep_free(dp_prep *w);

/* Fisher-Yates with the seeded generator: perm becomes a permutation of
 * 0..n-1, of which only the first k places are drawn (a partial shuffle).
 * 0 or the generator's error. */
int dp_prep_shuffle(size_t *perm, size_t n, size_t k, uint64_t seed);

#endif
