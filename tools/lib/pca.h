/* SPDX-License-Identifier: Apache-2.0 */
/* Principal components of a set of points: the top eigenvectors of their
 * sample covariance (n - 1 denominator).  Used to build a feature schema
 * with projected features (tools/lib/schema_build.h); only the offline tool
 * links it.
 *
 * The points are never held in memory at once: they are asked for one by
 * one through a callback, in two passes (mean, then the centred covariance
 * accumulated in blocks), so memory is O(d^2) whatever their number.  The
 * result is deterministic: each component is a unit vector whose
 * largest-magnitude entry is positive (the first such entry on ties), with
 * no negative zeros. */
#ifndef DP_PCA_H
#define DP_PCA_H

#include <stddef.h>

/* Largest dimension accepted: d * d must fit in a LAPACK int. */
#define DP_PCA_MAX_DIM 46340

/* Write point i (0 <= i < m) as d doubles into z.  0, or a negative DP_E
 * code (with its detail set), which stops the computation and is returned
 * as is.  Called twice per point, in order 0..m-1 each time. */
typedef int (*dp_pca_point_fn)(void *ctx, size_t i, double *z);

typedef struct dp_pca {
	size_t d, k;
	double *mean;         /* d: the points' mean */
	double *vec;          /* k x d, row-major: the components, largest
				 eigenvalue first */
	double *var;          /* k: their eigenvalues (the variance along each;
				 a negative one from rounding is stored as 0) */
} dp_pca;

/* The top k principal components of the m points given by point(ctx, i).
 * Preconditions (caller bugs, checked with DP_REQUIRE): point and out not
 * NULL, 1 <= k <= d <= DP_PCA_MAX_DIM, m >= 2.  On success *out owns its
 * arrays (dp_pca_free).  Errors: whatever point() returns, DP_ENOMEM,
 * DP_ENUMERIC (the eigen-decomposition failed).  *out untouched on
 * failure. */
int dp_pca_compute(size_t m, size_t d, size_t k, dp_pca_point_fn point, void *ctx,
		   dp_pca *out);

/* Free the arrays and zero *p; a zeroed dp_pca is allowed. */
void dp_pca_free(dp_pca *p);

#endif
