/* SPDX-License-Identifier: Apache-2.0 */
/* The trained-model file (docs/design.md §9): JSON
 *   {"format": "dpasync-model", "version": 1, "model": "linear",
 *    "theta": [...], "features": [...], "target": "price", "bias": true,
 *    "T": 1000, "lambda": ..., "theta_max": ..., "clip_l1": ...,
 *    "mode": "async", "job": "job-20261124T111500Z-3f2a9c1e"}
 * "features" and "target" are optional (a writer that does not know them
 * leaves them out, and files written before "target" existed still read):
 * with them the file says which data it fits, and `dpasync eval` needs no
 * --target.  Written atomically (file.h). */
#ifndef DP_MODELFILE_H
#define DP_MODELFILE_H

#include <stddef.h>
#include "common/core/file.h"
#include "common/core/model.h"

typedef struct dp_modelfile {
	dp_model model;
	size_t p;
	double *theta;      /* p */
	char **features;    /* p names, or NULL */
	char *target;       /* the target column's name, or NULL */
	int bias;
	size_t T;
	double lambda;
	double theta_max;
	double clip;
	char mode[16];      /* async | sync1 | sync2 | peer */
	const char *job;    /* the job that trained it, written when not NULL;
			     * the reader leaves it NULL (the file's "job" is
			     * for people and scripts) */
} dp_modelfile;

struct dp_dataset;

/* path and mf (with theta when p > 0) must not be NULL; features and
 * target are written when not NULL (the writer keeps ownership).  mode:
 * DP_FILE_MODE_PRIVATE for a daemon's model, DP_FILE_MODE_SHARED for a
 * subcommand's output (file.h).
 * Errors: DP_EIO, DP_ENOMEM, DP_EINVAL (non-finite theta). */
int dp_modelfile_write(const char *path, const dp_modelfile *mf, int mode);
/* Errors: DP_ENOENT, DP_EIO, DP_EFORMAT (detail names the field). mf is
 * filled only on success (features and target NULL when the file has
 * none); free with dp_modelfile_free. */
int dp_modelfile_read(const char *path, dp_modelfile *mf);
/* Free what mf holds (a read file's arrays and strings) and zero it; NULL
 * is allowed. */
void dp_modelfile_free(dp_modelfile *mf);

/* Whether `ds` holds the data the model was trained on, as far as the file
 * says: the same number of columns (features, with bias) and, when the
 * file names its features, the same names in the same order.  `path` names
 * the model file in messages.  0, or DP_EFORMAT with "DATA: feature J is
 * 'A' but the model PATH has 'B'" (or the count). */
int dp_modelfile_check_data(const dp_modelfile *mf, const char *path,
			    const struct dp_dataset *ds);

#endif
