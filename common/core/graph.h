/* SPDX-License-Identifier: Apache-2.0 */
/* The peer graph of docs/design.md §6: agents (by id) joined by undirected
 * edges of weight W_ij > 0.  docs/p2p.md "Graph file" documents the file:
 *
 *   a,b,w            header, exactly these three names in this order
 *   alice,bob,0.75   one undirected edge per record, a != b, w > 0 finite
 *
 * Read with the strict CSV reader (common/core/csv.h, so quoting and gzip
 * work as for datasets).  An edge named twice (in either direction), a self
 * loop, an empty or non-printable id, an id not among the known agents and
 * a weight that is not a finite number > 0 are errors: DP_EFORMAT with one
 * line "file:line: ...".  A file with the header and no edge is a graph in
 * which every agent is alone.
 *
 * A graph is immutable once made; the adjacency lists are built once. */
#ifndef DP_GRAPH_H
#define DP_GRAPH_H

#include <stddef.h>

typedef struct dp_graph dp_graph;

/* Largest id (bytes) and largest number of edges accepted. */
#define DP_GRAPH_MAX_ID    255u
#define DP_GRAPH_MAX_EDGES (1u << 26)

/* Read `path`.  ids[n] are the known agents (the owner ids), in the order
 * the graph numbers its nodes; ids may be NULL (n = 0), and then the nodes
 * are the ids the file names, sorted bytewise.  On success *out owns the
 * graph (dp_graph_free it).  Errors: DP_ENOENT (cannot open), DP_EIO,
 * DP_EFORMAT (detail "file:line: ..."), DP_EINVAL (ids[] itself has an
 * empty, over-long or repeated id; the detail names it), DP_ENOMEM.
 * *out untouched on failure. */
int dp_graph_load(const char *path, const char *const *ids, size_t n, dp_graph **out);

/* A graph from edges given by node index: ids[n] as above (required),
 * edge e joins a[e] and b[e] (< n) with weight w[e].  The same rules as the
 * file (the detail names "edge E" instead of a line).  Errors: DP_EINVAL,
 * DP_ENOMEM; *out untouched on failure. */
int dp_graph_new(const char *const *ids, size_t n, const size_t *a, const size_t *b,
		 const double *w, size_t m, dp_graph **out);

/* Write `g` to `path` atomically (common/core/file.h): the header, then the
 * edges in the order they were given or read, weights as the shortest text
 * that reads back exactly, so load(write(g)) == g.  Errors: DP_EIO,
 * DP_ENOMEM. */
int dp_graph_write(const char *path, const dp_graph *g);

/* Free; NULL is allowed. */
void dp_graph_free(dp_graph *g);

/* Nodes and edges. */
size_t dp_graph_nodes(const dp_graph *g);
size_t dp_graph_edges(const dp_graph *g);
/* The id of node i (< nodes), valid while g lives. */
const char *dp_graph_id(const dp_graph *g, size_t i);
/* The node of `id`, or -1. */
long dp_graph_find(const dp_graph *g, const char *id);
/* Edge e (< edges): its two nodes and weight (outputs may be NULL). */
void dp_graph_edge(const dp_graph *g, size_t e, size_t *a, size_t *b, double *w);

/* The neighbours of node i (< nodes): their number, and in *nb and *w
 * (may be NULL) arrays of that many node indices and weights W_ij, in
 * increasing order of j; valid while g lives. */
size_t dp_graph_adj(const dp_graph *g, size_t i, const size_t **nb, const double **w);

/* The same by id: *ids (may be NULL) the neighbours' ids.  An id that is
 * not a node has no neighbours (0; check dp_graph_find when it matters). */
size_t dp_graph_neighbours(const dp_graph *g, const char *id, const char *const **ids,
			   const double **w);

/* D_ii = sum_j W_ij of node i. */
double dp_graph_degree(const dp_graph *g, size_t i);

#endif
