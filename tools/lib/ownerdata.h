/* SPDX-License-Identifier: Apache-2.0 */
/* Owner datasets for the tool's in-process work (sim, eval, report): one
 * CSV per owner, optionally through a feature schema, checked against
 * each other and against the model they will train or evaluate. */
#ifndef DP_TOOLS_OWNERDATA_H
#define DP_TOOLS_OWNERDATA_H

#include <stddef.h>

#include "common/core/dataset.h"
#include "common/core/model.h"

typedef struct dp_ownerdata {
	size_t N;
	dp_dataset *ds;          /* N datasets */
	const dp_dataset **view; /* N pointers into ds */
	struct dp_schema *schema;
} dp_ownerdata;

/* Load files[0..nfiles) into *od: with schema_path (not NULL) the raw
 * files go through that schema; otherwise they are numeric CSVs whose
 * target column is `target`, which must then be given (no default).  bias appends a constant-1 feature.  Every
 * file must fit `model` (dp_model_check_data) and all must agree on their
 * features (dp_dataset_check_compatible).  Free with dp_ownerdata_free.
 * Errors (od zeroed, one-line detail): DP_EINVAL (no files, neither
 * target nor schema_path, or a file that does not fit), and those of dp_schema_load and dp_dataset_load
 * (DP_ENOENT, DP_EIO, DP_EFORMAT, DP_ENOMEM). */
int dp_ownerdata_load(dp_ownerdata *od, char *const *files, size_t nfiles, const char *target,
		      int bias, const char *schema_path, dp_model model);

/* The id of the owner (or peer agent) whose data file is `path`: its base
 * name without .csv.gz or .csv ("data/u12.csv" -> "u12"); malloc'ed, NULL
 * when out of memory. */
char *dp_ownerdata_id(const char *path);

/* Free what dp_ownerdata_load made; *od is zeroed.  Safe on a zeroed od. */
void dp_ownerdata_free(dp_ownerdata *od);

#endif
