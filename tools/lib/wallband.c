/* SPDX-License-Identifier: Apache-2.0 */
/* The spread of repeated measured psi curves (wallband.h). */
#include "tools/lib/wallband.h"

#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"

static int cmp_time(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* psi of curve w at time t, *cur being the index of its last point at or
 * before the previous t asked (times are asked in increasing order).
 * Returns 0 when the curve has no point at or before t. */
static int value_at(const dp_rundata_wall *w, double t, size_t *cur, double *psi)
{
	size_t j = *cur;

	if (w->n == 0 || t < w->t[0])
		return 0;
	while (j + 1 < w->n && w->t[j + 1] <= t)
		j++;
	*cur = j;
	if (j + 1 == w->n || w->t[j] == t)
		*psi = w->psi[j];
	else
		*psi = w->psi[j] + (w->psi[j + 1] - w->psi[j]) * (t - w->t[j]) /
			(w->t[j + 1] - w->t[j]);
	return 1;
}

int dp_wallband_build(const dp_rundata_wall *const *runs, size_t nrun, dp_wallband *b)
{
	dp_wallband r = { 0 };
	size_t total = 0, *cur = NULL;
	double *v = NULL;
	int rc = 0;

	DP_REQUIRE(runs != NULL && b != NULL);
	for (size_t s = 0; s < nrun; s++)
		total += runs[s]->n;
	if (total == 0)
		return dp_error_set(DP_EINVAL, "no psi curve has a point");
	r.t = malloc(total * sizeof(double));
	r.lo = malloc(total * sizeof(double));
	r.med = malloc(total * sizeof(double));
	r.hi = malloc(total * sizeof(double));
	r.runs = malloc(total * sizeof(size_t));
	cur = calloc(nrun, sizeof(size_t));
	v = malloc(nrun * sizeof(double));
	if (r.t == NULL || r.lo == NULL || r.med == NULL || r.hi == NULL || r.runs == NULL ||
	    cur == NULL || v == NULL) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t s = 0; s < nrun; s++) {
		memcpy(r.t + r.n, runs[s]->t, runs[s]->n * sizeof(double));
		r.n += runs[s]->n;
	}
	qsort(r.t, r.n, sizeof(double), cmp_time);
	total = r.n;
	r.n = 0;
	for (size_t i = 0; i < total; i++) {
		size_t m = 0;

		if (r.n > 0 && r.t[i] == r.t[r.n - 1])
			continue;
		r.t[r.n] = r.t[i];
		for (size_t s = 0; s < nrun; s++)
			m += (size_t)value_at(runs[s], r.t[r.n], &cur[s], &v[m]);
		/* The earliest time is some curve's first point: m >= 1. */
		r.med[r.n] = dp_rundata_percentile(v, m, 50);   /* sorts v */
		r.lo[r.n] = v[0];
		r.hi[r.n] = v[m - 1];
		r.runs[r.n] = m;
		r.n++;
	}
out:
	free(cur);
	free(v);
	if (rc != 0) {
		dp_wallband_free(&r);
		return rc;
	}
	*b = r;
	return 0;
}

void dp_wallband_free(dp_wallband *b)
{
	if (b == NULL)
		return;
	free(b->t);
	free(b->lo);
	free(b->med);
	free(b->hi);
	free(b->runs);
	memset(b, 0, sizeof(*b));
}
