/* SPDX-License-Identifier: Apache-2.0 */
/* Principal components through LAPACKE_dsyevd on the sample covariance. */
#include "tools/lib/pca.h"
#include "common/core/error.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Points per dsyrk call in the covariance pass. */
#define BLOCK 512

void dp_pca_free(dp_pca *p)
{
	if (p == NULL)
		return;
	free(p->mean);
	free(p->vec);
	free(p->var);
	memset(p, 0, sizeof(*p));
}

/* Two passes over the points (mean, then centred blocks into dsyrk) keep
 * memory at O(d^2) whatever m is.  cov gets the upper triangle. */
static int covariance(size_t m, size_t d, dp_pca_point_fn point, void *ctx, double *zb,
		      double *mean, double *cov)
{
	int rc;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t r0 = 0; r0 < m; r0 += BLOCK) {
			size_t nb = m - r0 < BLOCK ? m - r0 : BLOCK;

			for (size_t r = 0; r < nb; r++) {
				double *z = zb + r * d;

				rc = point(ctx, r0 + r, z);
				if (rc != 0)
					return rc;
				if (pass == 0) {
					for (size_t i = 0; i < d; i++)
						mean[i] += z[i];
				} else {
					for (size_t i = 0; i < d; i++)
						z[i] -= mean[i];
				}
			}
			if (pass == 1)
				cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)d, (int)nb,
					    1.0 / (double)(m - 1), zb, (int)d, 1.0, cov, (int)d);
		}
		if (pass == 0)
			for (size_t i = 0; i < d; i++)
				mean[i] /= (double)m;
	}
	return 0;
}

int dp_pca_compute(size_t m, size_t d, size_t k, dp_pca_point_fn point, void *ctx,
		   dp_pca *out)
{
	double *zb = NULL, *cov = NULL, *w = NULL, *mean = NULL, *vec = NULL, *var = NULL;
	lapack_int info;
	int rc;

	DP_REQUIRE(point != NULL && out != NULL);
	DP_REQUIRE(k >= 1 && k <= d && d <= DP_PCA_MAX_DIM && m >= 2);
	zb = malloc(BLOCK * d * sizeof(*zb));
	cov = calloc(d * d, sizeof(*cov));
	w = malloc(d * sizeof(*w));
	mean = calloc(d, sizeof(*mean));
	vec = malloc(k * d * sizeof(*vec));
	var = malloc(k * sizeof(*var));
	if (zb == NULL || cov == NULL || w == NULL || mean == NULL || vec == NULL || var == NULL) {
		rc = DP_ENOMEM;
		goto out;
	}
	rc = covariance(m, d, point, ctx, zb, mean, cov);
	if (rc != 0)
		goto out;
	/* Eigenvalues come back ascending, eigenvectors in the columns. */
	info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', (lapack_int)d, cov, (lapack_int)d, w);
	if (info != 0) {
		rc = dp_error_set(DP_ENUMERIC, "pca: eigen-decomposition of the %zux%zu sample "
				  "covariance failed (LAPACKE_dsyevd info %d)", d, d, (int)info);
		goto out;
	}
	for (size_t j = 0; j < k; j++) {
		size_t col = d - 1 - j, big = 0;
		double *v = vec + j * d;

		for (size_t i = 0; i < d; i++) {
			v[i] = cov[i * d + col];
			if (fabs(v[i]) > fabs(v[big]))
				big = i;
		}
		/* Eigenvectors are defined up to sign: make the result reproducible. */
		if (v[big] < 0.0)
			for (size_t i = 0; i < d; i++)
				v[i] = -v[i];
		for (size_t i = 0; i < d; i++)
			if (v[i] == 0.0)
				v[i] = 0.0; /* no "-0" in a file written from it */
		var[j] = w[col] > 0.0 ? w[col] : 0.0;
	}
	out->d = d;
	out->k = k;
	out->mean = mean;
	out->vec = vec;
	out->var = var;
	mean = vec = var = NULL;
out:
	free(zb);
	free(cov);
	free(w);
	free(mean);
	free(vec);
	free(var);
	return rc;
}
