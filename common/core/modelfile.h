/* The trained-model file (docs/design.md §9): JSON
 *   {"format": "dpasync-model", "version": 1, "model": "linear",
 *    "theta": [...], "features": [...], "bias": true, "T": 1000,
 *    "lambda": ..., "theta_max": ..., "clip_l1": ..., "mode": "async"}
 * Written atomically (file.h). */
#ifndef DP_MODELFILE_H
#define DP_MODELFILE_H

#include <stddef.h>
#include "common/core/model.h"

typedef struct dp_modelfile {
	dp_model model;
	size_t p;
	double *theta;      /* p */
	char **features;    /* p names, or NULL */
	int bias;
	size_t T;
	double lambda;
	double theta_max;
	double clip;
	char mode[16];      /* async | sync1 | sync2 | peer */
} dp_modelfile;

/* path and mf (with theta when p > 0) must not be NULL.
 * Errors: DP_EIO, DP_ENOMEM, DP_EINVAL (non-finite theta). */
int dp_modelfile_write(const char *path, const dp_modelfile *mf);
/* Errors: DP_ENOENT, DP_EIO, DP_EFORMAT (detail names the field). mf is
 * filled only on success; free with dp_modelfile_free. */
int dp_modelfile_read(const char *path, dp_modelfile *mf);
/* Free what mf holds and zero it; NULL is allowed. */
void dp_modelfile_free(dp_modelfile *mf);

#endif
