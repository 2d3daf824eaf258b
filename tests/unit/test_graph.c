/* SPDX-License-Identifier: Apache-2.0 */
/* The peer graph file (common/core/graph.h): parsing, adjacency, the exact
 * round trip, and one rejection per malformed case. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/graph.h"
#include "tests/unit/tmpdir.h"

static int setup(void **state)
{
	(void)state;
	return tmpdir_setup("dp-graph");
}

static int teardown(void **state)
{
	(void)state;
	return tmpdir_teardown();
}

static const char *const agents[] = { "u1", "u2", "u3", "u4" };

static void test_load_known_ids(void **state)
{
	const char *p = put("g.csv", "a,b,w\nu1,u2,0.5\nu3,u1,2\nu2,u3,1e-3\n");
	const size_t *nb;
	const double *w;
	const char *const *ids;
	dp_graph *g = NULL;

	(void)state;
	assert_int_equal(dp_graph_load(p, agents, 4, &g), 0);
	assert_int_equal(dp_graph_nodes(g), 4);
	assert_int_equal(dp_graph_edges(g), 3);
	assert_string_equal(dp_graph_id(g, 2), "u3");
	assert_int_equal(dp_graph_find(g, "u4"), 3);
	assert_int_equal(dp_graph_find(g, "u5"), -1);
	/* u1's neighbours in increasing node order: u2 (0.5), u3 (2). */
	assert_int_equal(dp_graph_adj(g, 0, &nb, &w), 2);
	assert_int_equal(nb[0], 1);
	assert_int_equal(nb[1], 2);
	assert_true(w[0] == 0.5 && w[1] == 2);
	assert_true(dp_graph_degree(g, 0) == 2.5);
	/* The same by id, from the other end of the edges. */
	assert_int_equal(dp_graph_neighbours(g, "u3", &ids, &w), 2);
	assert_string_equal(ids[0], "u1");
	assert_string_equal(ids[1], "u2");
	assert_true(w[0] == 2 && w[1] == 1e-3);
	/* u4 is alone; an unknown id has no neighbours. */
	assert_int_equal(dp_graph_adj(g, 3, NULL, NULL), 0);
	assert_true(dp_graph_degree(g, 3) == 0);
	assert_int_equal(dp_graph_neighbours(g, "zz", NULL, NULL), 0);
	dp_graph_free(g);
}

static void test_load_ids_from_file(void **state)
{
	const char *p = put("g2.csv", "a,b,w\r\nzed,\"x,y\",1\r\nalpha,zed,3\r\n");
	dp_graph *g = NULL;
	size_t a, b;
	double w;

	(void)state;
	assert_int_equal(dp_graph_load(p, NULL, 0, &g), 0);
	/* Nodes sorted bytewise; a quoted id may hold a comma. */
	assert_int_equal(dp_graph_nodes(g), 3);
	assert_string_equal(dp_graph_id(g, 0), "alpha");
	assert_string_equal(dp_graph_id(g, 1), "x,y");
	assert_string_equal(dp_graph_id(g, 2), "zed");
	dp_graph_edge(g, 0, &a, &b, &w);
	assert_int_equal(a, 2);
	assert_int_equal(b, 1);
	assert_true(w == 1);
	dp_graph_free(g);
}

static void test_header_only(void **state)
{
	dp_graph *g = NULL;

	(void)state;
	assert_int_equal(dp_graph_load(put("empty.csv", "a,b,w\n"), agents, 4, &g), 0);
	assert_int_equal(dp_graph_edges(g), 0);
	assert_int_equal(dp_graph_adj(g, 1, NULL, NULL), 0);
	dp_graph_free(g);
}

static void test_roundtrip_exact(void **state)
{
	const size_t a[] = { 0, 1, 3 }, b[] = { 1, 2, 0 };
	const double w[] = { 0.1, 1.0 / 3.0, 6.02214076e23 };
	const char *const ids[] = { "p", "q, r", "s\"t", "u" };
	dp_graph *g = NULL, *h = NULL;
	const char *path = path_of("rt.csv");

	(void)state;
	assert_int_equal(dp_graph_new(ids, 4, a, b, w, 3, &g), 0);
	assert_int_equal(dp_graph_write(path, g), 0);
	assert_int_equal(dp_graph_load(path, ids, 4, &h), 0);
	assert_int_equal(dp_graph_edges(h), 3);
	for (size_t e = 0; e < 3; e++) {
		size_t x, y;
		double v;

		dp_graph_edge(h, e, &x, &y, &v);
		assert_int_equal(x, a[e]);
		assert_int_equal(y, b[e]);
		assert_true(v == w[e]);
	}
	dp_graph_free(g);
	dp_graph_free(h);
}

/* Each malformed file: DP_EFORMAT, *out untouched, and a detail that names
 * the file and the line (or the header) and says what is wrong. */
static void test_malformed(void **state)
{
	static const struct {
		const char *text, *detail;
	} bad[] = {
		{ "", "empty" },
		{ "a,b\nu1,u2\n", "bad.csv:1: the header must be exactly a,b,w" },
		{ "b,a,w\nu1,u2,1\n", "bad.csv:1: the header must be exactly a,b,w" },
		{ "a,b,w,x\nu1,u2,1,2\n", "bad.csv:1: the header must be exactly a,b,w" },
		{ "a,b,weight\nu1,u2,1\n", "bad.csv:1: the header must be exactly a,b,w" },
		{ "a,b,w\nu1,u2\n", "bad.csv:2" },
		{ "a,b,w\nu1,u2,1,3\n", "bad.csv:2" },
		{ "a,b,w\nu1,,1\n", "bad.csv:2" },
		{ "a,b,w\nu1,u2,1\n\n", "bad.csv:3" },
		{ "a,b,w\nu1,\"u\t2\",1\n", "bad.csv:2: column 'b': an agent id must be" },
		{ "a,b,w\nu1,u9,1\n", "bad.csv:2: column 'b': unknown agent id 'u9'" },
		{ "a,b,w\nU1,u2,1\n", "bad.csv:2: column 'a': unknown agent id 'U1'" },
		{ "a,b,w\nu1,u2,1\nu2,u2,1\n", "bad.csv:3: self loop on 'u2'" },
		{ "a,b,w\nu1,u2,1\nu3,u4,1\nu1,u2,2\n", "bad.csv:4: edge 'u1'-'u2' repeats line 2" },
		{ "a,b,w\nu1,u2,1\nu2,u1,1\n", "bad.csv:3: edge 'u2'-'u1' repeats line 2" },
		{ "a,b,w\nu1,u2,0\n", "bad.csv:2: column 'w': weight must be a finite number > 0" },
		{ "a,b,w\nu1,u2,-0.5\n", "bad.csv:2: column 'w': weight must be a finite number > 0" },
		{ "a,b,w\nu1,u2,-0\n", "bad.csv:2: column 'w': weight must be a finite number > 0" },
		{ "a,b,w\nu1,u2,nan\n", "bad.csv:2: column 'w': not a finite number" },
		{ "a,b,w\nu1,u2,inf\n", "bad.csv:2: column 'w': not a finite number" },
		{ "a,b,w\nu1,u2,1e999\n", "bad.csv:2: column 'w': not a finite number" },
		{ "a,b,w\nu1,u2,0x10\n", "bad.csv:2: column 'w': not a finite number" },
		{ "a,b,w\nu1,u2, 1\n", "bad.csv:2: column 'w': not a finite number" },
		{ "a,b,w\nu1,u2,1.5.2\n", "bad.csv:2: column 'w': not a finite number" },
		{ "a,b,w\nu1,u2,\n", "bad.csv:2" },
		{ "a,b,w\nu1,u2,\"1\n", "bad.csv" },
	};
	dp_graph *g = (dp_graph *)&g;   /* a sentinel: must stay as it is */

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *p = put("bad.csv", bad[i].text);
		int rc = dp_graph_load(p, agents, 4, &g);

		if (rc != DP_EFORMAT || strstr(dp_error_detail(rc), bad[i].detail) == NULL)
			fail_msg("case %zu: rc %d detail '%s'", i, rc, dp_error_detail(rc));
		assert_ptr_equal(g, (dp_graph *)&g);
	}
	/* Without known ids, the same edge rules hold. */
	assert_int_equal(dp_graph_load(put("bad.csv", "a,b,w\nx,y,1\ny,x,2\n"), NULL, 0, &g),
			 DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "repeats"));
	assert_int_equal(dp_graph_load(path_of("missing.csv"), agents, 4, &g), DP_ENOENT);
	assert_ptr_equal(g, (dp_graph *)&g);
}

static void test_overlong_id(void **state)
{
	char text[600] = "a,b,w\nu1,", *p = text + strlen(text);
	dp_graph *g = NULL;

	(void)state;
	memset(p, 'x', DP_GRAPH_MAX_ID + 1);
	strcpy(p + DP_GRAPH_MAX_ID + 1, ",1\n");
	assert_int_equal(dp_graph_load(put("long.csv", text), NULL, 0, &g), DP_EFORMAT);
	assert_non_null(strstr(dp_error_detail(DP_EFORMAT), "long.csv:2: column 'b'"));
	assert_null(g);
}

/* The known ids themselves are the caller's input: checked, DP_EINVAL. */
static void test_bad_known_ids(void **state)
{
	const char *const twice[] = { "u1", "u2", "u1" }, *const empty[] = { "u1", "" };
	const size_t a[] = { 0, 0 }, b[] = { 1, 1 }, self[] = { 0 }, out[] = { 5 };
	const double w[] = { 1, 1 }, wnan[] = { NAN };
	dp_graph *g = NULL;
	const char *p = put("ok.csv", "a,b,w\nu1,u2,1\n");

	(void)state;
	assert_int_equal(dp_graph_load(p, twice, 3, &g), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "'u1' is given twice"));
	assert_int_equal(dp_graph_load(p, empty, 2, &g), DP_EINVAL);
	assert_null(g);
	/* dp_graph_new: the same edge rules, named by edge number. */
	assert_int_equal(dp_graph_new(agents, 4, a, b, w, 2, &g), DP_EINVAL);
	assert_non_null(strstr(dp_error_detail(DP_EINVAL), "edge 2: edge 'u1'-'u2' repeats edge 1"));
	assert_int_equal(dp_graph_new(agents, 4, self, self, w, 1, &g), DP_EINVAL);
	assert_int_equal(dp_graph_new(agents, 4, a, out, w, 1, &g), DP_EINVAL);
	assert_int_equal(dp_graph_new(agents, 4, a, b, wnan, 1, &g), DP_EINVAL);
	assert_null(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_known_ids),
		cmocka_unit_test(test_load_ids_from_file),
		cmocka_unit_test(test_header_only),
		cmocka_unit_test(test_roundtrip_exact),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_overlong_id),
		cmocka_unit_test(test_bad_known_ids),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
