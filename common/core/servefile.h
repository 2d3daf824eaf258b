/* SPDX-License-Identifier: Apache-2.0 */
/* The served model's file (docs/p2p.md §7): the model file of
 * common/core/modelfile.h, mode "served", marked not private, with what it
 * was fitted from.  Written by sim --mode p2p --serve refit and by
 * ownerd --peer --serve refit alike. */
#ifndef DP_SERVEFILE_H
#define DP_SERVEFILE_H

#include <stddef.h>
#include "common/core/modelfile.h"

/* What a served model was fitted from (the file's "fitted_from"). */
typedef struct dp_servefile_from {
	const char *release;       /* dp_serve_release_names */
	const char *prior;         /* dp_serve_prior_names */
	const char *curvature;     /* grad0: the public rows' file, or "own rows";
				      NULL: not written (models) */
	const char *mechanism;     /* of the releases */
	const char *prior_scale;   /* dp_serve_scale_names */
	double tau;                /* the tau chosen */
	size_t folds;
	const double *prior_theta; /* the prior, mf->p values */
	size_t pooled;             /* releases pooled into the prior */
	size_t expected;           /* releases the prior should pool (pooled <
				      expected: some never arrived) */
} dp_servefile_from;

/* Write mf (mode set to "served" here) with "served": true, "private":
 * false, a note saying why, and "fitted_from" from `from`, atomically at
 * path with the file mode `mode` (common/core/file.h).  Errors:
 * dp_modelfile_write's, dp_json_write_file's, DP_ENOMEM. */
int dp_servefile_write(const char *path, const dp_modelfile *mf, const dp_servefile_from *from,
		       int mode);

#endif
