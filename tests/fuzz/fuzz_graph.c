/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the peer-mode files: the graph file (graph.h) and
 * the schedule file (schedule.h).
 *
 * The first byte chooses the reader (even: graph, odd: schedule), the rest
 * is the file.  A graph that loads writes back and loads again to the same
 * nodes, edges and weights, bit for bit, with consistent adjacency lists
 * (every edge seen from both ends, degrees the sums of the weights); a
 * schedule that loads names known agents only and writes back to a file
 * that loads to the same steps.  Aborts on any inconsistency; the
 * sanitizers catch memory errors. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/graph.h"
#include "common/core/schedule.h"
#include "tests/fuzz/fuzz_util.h"

static void check_adjacency(const dp_graph *g)
{
	size_t arcs = 0;

	for (size_t i = 0; i < dp_graph_nodes(g); i++) {
		const size_t *nb;
		const double *w;
		size_t n = dp_graph_adj(g, i, &nb, &w);
		double deg = 0;

		for (size_t k = 0; k < n; k++) {
			FUZZ_CHECK(nb[k] != i && nb[k] < dp_graph_nodes(g) && w[k] > 0);
			FUZZ_CHECK(k == 0 || nb[k - 1] < nb[k]);
			deg += w[k];
		}
		FUZZ_CHECK(memcmp(&deg, &(double){ dp_graph_degree(g, i) }, sizeof(double)) == 0);
		FUZZ_CHECK(dp_graph_find(g, dp_graph_id(g, i)) == (long)i);
		arcs += n;
	}
	FUZZ_CHECK(arcs == 2 * dp_graph_edges(g));
}

static void graph(void)
{
	const char *in = fuzz_util_path("graph.csv"), *out = fuzz_util_path("graph2.csv");
	dp_graph *a = NULL, *b = NULL;
	int rc;

	if (dp_graph_load(in, NULL, 0, &a) != 0)
		return;
	check_adjacency(a);
	FUZZ_CHECK(dp_graph_write(out, a) == 0);
	rc = dp_graph_load(out, NULL, 0, &b);
	if (rc != 0)
		fprintf(stderr, "written graph does not load: %s\n", dp_error_detail(rc));
	FUZZ_CHECK(rc == 0);
	FUZZ_CHECK(dp_graph_nodes(a) == dp_graph_nodes(b) && dp_graph_edges(a) == dp_graph_edges(b));
	for (size_t i = 0; i < dp_graph_nodes(a); i++)
		FUZZ_CHECK(strcmp(dp_graph_id(a, i), dp_graph_id(b, i)) == 0);
	for (size_t e = 0; e < dp_graph_edges(a); e++) {
		size_t x1, y1, x2, y2;
		double w1, w2;

		dp_graph_edge(a, e, &x1, &y1, &w1);
		dp_graph_edge(b, e, &x2, &y2, &w2);
		FUZZ_CHECK(x1 == x2 && y1 == y2 && memcmp(&w1, &w2, sizeof(double)) == 0);
	}
	dp_graph_free(a);
	dp_graph_free(b);
}

static void schedule(void)
{
	static const char *const ids[] = { "a", "b", "c", "x,y", "1" };
	const char *in = fuzz_util_path("sched.csv"), *out = fuzz_util_path("sched2.csv");
	size_t *a = NULL, *b = NULL, na = 0, nb = 0;

	if (dp_schedule_load(in, ids, 5, &a, &na) != 0)
		return;
	FUZZ_CHECK(na >= 1);
	for (size_t k = 0; k < na; k++)
		FUZZ_CHECK(a[k] < 5);
	FUZZ_CHECK(dp_schedule_write(out, ids, a, na) == 0);
	FUZZ_CHECK(dp_schedule_load(out, ids, 5, &b, &nb) == 0);
	FUZZ_CHECK(na == nb && memcmp(a, b, na * sizeof(size_t)) == 0);
	free(a);
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	fuzz_util_write(fuzz_util_path(data[0] % 2 ? "sched.csv" : "graph.csv"), data + 1, size - 1);
	if (data[0] % 2)
		schedule();
	else
		graph();
	return 0;
}
