/* SPDX-License-Identifier: Apache-2.0 */
/* Peer graphs from target-model angles and from rating similarity
 * (graphbuild.h). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "tools/lib/graphbuild.h"

/* Candidate edges, grown as they are found. */
struct edges {
	size_t *a, *b;
	double *w;
	size_t m, cap;
};

static int push(struct edges *e, size_t a, size_t b, double w)
{
	if (e->m == e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 256;
		size_t *na = realloc(e->a, cap * sizeof(size_t));

		if (na == NULL)
			return DP_ENOMEM;
		e->a = na;
		na = realloc(e->b, cap * sizeof(size_t));
		if (na == NULL)
			return DP_ENOMEM;
		e->b = na;
		{
			double *nw = realloc(e->w, cap * sizeof(double));

			if (nw == NULL)
				return DP_ENOMEM;
			e->w = nw;
		}
		e->cap = cap;
	}
	e->a[e->m] = a;
	e->b[e->m] = b;
	e->w[e->m] = w;
	e->m++;
	return 0;
}

static void edges_free(struct edges *e)
{
	free(e->a);
	free(e->b);
	free(e->w);
}

/* For row i of the n x n matrix s, mark in sel[i*n + j] the (up to) k
 * columns j != i of largest s with s > thr (ties by lower j). */
static void top_k(const double *s, size_t n, size_t i, size_t k, double thr, bool *sel)
{
	for (size_t t = 0; t < k; t++) {
		size_t best = n;

		for (size_t j = 0; j < n; j++) {
			if (j == i || sel[i * n + j] || !(s[i * n + j] > thr))
				continue;
			if (best == n || s[i * n + j] > s[i * n + best])
				best = j;
		}
		if (best == n)
			return;
		sel[i * n + best] = true;
	}
}

/* The graph of the pairs i < j selected from either side, W = s. */
static int from_selection(const char *const *ids, size_t n, const double *s, const bool *sel,
			  dp_graph **out)
{
	struct edges e = { 0 };
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		for (size_t j = i + 1; j < n && rc == 0; j++) {
			if (sel[i * n + j] || sel[j * n + i])
				rc = push(&e, i, j, s[i * n + j]);
		}
	}
	if (rc == 0)
		rc = dp_graph_new(ids, n, e.a, e.b, e.w, e.m, out);
	else
		rc = dp_error_set(DP_ENOMEM, "out of memory");
	edges_free(&e);
	return rc;
}

int dp_graphbuild_angles(const char *const *ids, size_t n, const double *v, size_t p,
			 double gamma, double min_w, size_t keep, dp_graph **out)
{
	double *norm = NULL, *s = NULL;
	bool *sel = NULL;
	int rc = 0;

	DP_REQUIRE(ids != NULL && (v != NULL || n * p == 0) && out != NULL);
	if (!(gamma > 0) || !isfinite(gamma) || !(min_w >= 0))
		return dp_error_set(DP_EINVAL, "gamma must be > 0 and the minimum weight >= 0");
	if (n > DP_GRAPHBUILD_MAX_KNN)
		return dp_error_set(DP_EINVAL, "%zu agents: at most %u", n, DP_GRAPHBUILD_MAX_KNN);
	norm = calloc(n ? n : 1, sizeof(double));
	s = calloc(n ? n * n : 1, sizeof(double));
	sel = calloc(n ? n * n : 1, sizeof(bool));
	if (norm == NULL || s == NULL || sel == NULL) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t q = 0; q < p; q++)
			norm[i] += v[i * p + q] * v[i * p + q];
		norm[i] = sqrt(norm[i]);
		if (!(norm[i] > 0) || !isfinite(norm[i])) {
			rc = dp_error_set(DP_EINVAL, "agent '%s': its vector is zero or not finite "
					  "(no angle)", ids[i]);
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < n; j++) {
			double dot = 0, cosv;

			for (size_t q = 0; q < p; q++)
				dot += v[i * p + q] * v[j * p + q];
			cosv = dot / (norm[i] * norm[j]);
			cosv = cosv > 1 ? 1 : cosv < -1 ? -1 : cosv;
			s[i * n + j] = exp((cosv - 1) / gamma);
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (keep > 0) {
			/* Below min_w never counts; "> thr" with thr just under it. */
			top_k(s, n, i, keep, nextafter(min_w, -INFINITY), sel);
		} else {
			for (size_t j = 0; j < n; j++)
				sel[i * n + j] = j != i && s[i * n + j] >= min_w && s[i * n + j] > 0;
		}
	}
	rc = from_selection(ids, n, s, sel, out);
out:
	free(norm);
	free(s);
	free(sel);
	return rc;
}

int dp_graphbuild_knn(const char *const *ids, size_t n, const dp_graphbuild_ratings *r,
		      size_t k, dp_graph **out)
{
	double *norm = NULL, *s = NULL, *dense = NULL;
	bool *sel = NULL;
	size_t items = 0;
	int rc = 0;

	DP_REQUIRE(ids != NULL && (r != NULL || n == 0) && out != NULL);
	if (k == 0)
		return dp_error_set(DP_EINVAL, "k must be >= 1");
	if (n > DP_GRAPHBUILD_MAX_KNN)
		return dp_error_set(DP_EINVAL, "%zu agents: the k-NN graph takes at most %u", n,
				    DP_GRAPHBUILD_MAX_KNN);
	for (size_t i = 0; i < n; i++) {
		for (size_t t = 0; t < r[i].n; t++) {
			if (!isfinite(r[i].value[t]))
				return dp_error_set(DP_EINVAL, "agent '%s': a value is not finite",
						    ids[i]);
			items = r[i].item[t] + 1 > items ? r[i].item[t] + 1 : items;
		}
	}
	norm = calloc(n ? n : 1, sizeof(double));
	s = calloc(n ? n * n : 1, sizeof(double));
	sel = calloc(n ? n * n : 1, sizeof(bool));
	dense = calloc(items ? items : 1, sizeof(double));
	if (norm == NULL || s == NULL || sel == NULL || dense == NULL) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t t = 0; t < r[i].n; t++)
			norm[i] += r[i].value[t] * r[i].value[t];
		norm[i] = sqrt(norm[i]);
	}
	/* Row i: scatter r_i into a dense vector, then one sparse dot per j. */
	for (size_t i = 0; i < n; i++) {
		for (size_t t = 0; t < r[i].n; t++)
			dense[r[i].item[t]] = r[i].value[t];
		for (size_t j = i + 1; j < n; j++) {
			double dot = 0;

			for (size_t t = 0; t < r[j].n; t++)
				dot += dense[r[j].item[t]] * r[j].value[t];
			if (norm[i] > 0 && norm[j] > 0)
				s[i * n + j] = s[j * n + i] = dot / (norm[i] * norm[j]);
		}
		for (size_t t = 0; t < r[i].n; t++)
			dense[r[i].item[t]] = 0;
	}
	for (size_t i = 0; i < n; i++)
		top_k(s, n, i, k, 0.0, sel);
	rc = from_selection(ids, n, s, sel, out);
out:
	free(norm);
	free(s);
	free(sel);
	free(dense);
	return rc;
}
