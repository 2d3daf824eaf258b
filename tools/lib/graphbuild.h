/* SPDX-License-Identifier: Apache-2.0 */
/* Building peer graphs for `dpasync graph` (docs/p2p.md "Building a graph"):
 * from the angles between the agents' target models (the synthetic setup of
 * the peer-to-peer papers) and by k nearest neighbours on the cosine
 * similarity of the agents' ratings (their MovieLens protocol). */
#ifndef DP_TOOLS_GRAPHBUILD_H
#define DP_TOOLS_GRAPHBUILD_H

#include <stddef.h>
#include "common/core/graph.h"

/* Largest number of agents the k-NN builder takes (it keeps an n x n
 * similarity matrix). */
#define DP_GRAPHBUILD_MAX_KNN 16384u

/* W_ij = exp((cos phi_ij - 1) / gamma), phi_ij the angle between v_i and
 * v_j (rows of v[n*p]).  An edge is kept when W_ij >= min_w and, when
 * keep > 0, W_ij is among the keep largest weights of i or of j (ties by
 * lower index).  A zero vector has no angle: DP_EINVAL naming its id, as
 * for gamma not > 0 or a non-finite value.  Errors: DP_EINVAL, DP_ENOMEM
 * (and dp_graph_new's); *out untouched on failure. */
int dp_graphbuild_angles(const char *const *ids, size_t n, const double *v, size_t p,
			 double gamma, double min_w, size_t keep, dp_graph **out);

/* One agent's ratings: sparse vector item -> value. */
typedef struct dp_graphbuild_ratings {
	size_t n;
	const size_t *item;        /* n item numbers, distinct */
	const double *value;       /* n values */
} dp_graphbuild_ratings;

/* The k-NN graph: each agent i links to the k agents j != i of largest
 * cosine similarity s_ij = <r_i, r_j> / (|r_i| |r_j|) with s_ij > 0
 * (ties by lower index); the graph is the union of these links, each with
 * W_ij = s_ij.  Errors: DP_EINVAL (k = 0, n above the maximum, a
 * non-finite value), DP_ENOMEM; *out untouched on failure. */
int dp_graphbuild_knn(const char *const *ids, size_t n, const dp_graphbuild_ratings *r,
		      size_t k, dp_graph **out);

#endif
