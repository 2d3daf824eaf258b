/* SPDX-License-Identifier: Apache-2.0 */
/* The peer graph: parse, check, write, and adjacency lists (graph.h). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/csv.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/graph.h"
#include "common/core/num.h"

struct dp_graph {
	size_t n, m;
	char **ids;            /* n owned copies */
	size_t *by_name;       /* n node indices sorted by id, for find */
	size_t *ea, *eb;       /* m edges as given */
	double *ew;
	size_t *off;           /* n + 1: node i's arcs are [off[i], off[i+1]) */
	size_t *nb;            /* 2m neighbour indices */
	double *nw;            /* 2m weights */
	const char **nid;      /* 2m neighbour ids */
	double *deg;           /* n: D_ii */
};

/* One directed arc, for sorting into adjacency order. */
struct arc {
	size_t from, to, edge;
};

/* Where an edge came from, for the error detail: a file line or an index. */
struct origin {
	const char *path;      /* NULL: edges given in memory */
	const size_t *line;    /* m lines (file only) */
};

static int cmp_arc(const void *x, const void *y)
{
	const struct arc *a = x, *b = y;

	if (a->from != b->from)
		return a->from < b->from ? -1 : 1;
	if (a->to != b->to)
		return a->to < b->to ? -1 : 1;
	return a->edge < b->edge ? -1 : a->edge > b->edge;
}

/* qsort over node indices by their id; the ids come through a static
 * because qsort has no context argument (the graph is built on one
 * thread at a time per call, and the pointer is reset after). */
static _Thread_local char *const *sort_ids;

static int cmp_by_name(const void *x, const void *y)
{
	return strcmp(sort_ids[*(const size_t *)x], sort_ids[*(const size_t *)y]);
}

/* "file:LINE" or "edge E" for edge e, into buf. */
static const char *where(const struct origin *o, size_t e, char *buf, size_t size)
{
	if (o->path)
		snprintf(buf, size, "%s:%zu", o->path, o->line[e]);
	else
		snprintf(buf, size, "edge %zu", e + 1);
	return buf;
}

/* The other edge of a duplicate: "line L" or "edge E". */
static const char *which(const struct origin *o, size_t e, char *buf, size_t size)
{
	if (o->path)
		snprintf(buf, size, "line %zu", o->line[e]);
	else
		snprintf(buf, size, "edge %zu", e + 1);
	return buf;
}

/* malloc'ed array sizes: at least one element, so that 0 is not NULL. */
static size_t at_least1(size_t n)
{
	return n ? n : 1;
}

static bool id_ok(const char *s)
{
	size_t len = strlen(s);

	return len > 0 && len <= DP_GRAPH_MAX_ID && !dp_csv_has_control(s);
}

void dp_graph_free(dp_graph *g)
{
	if (g == NULL)
		return;
	for (size_t i = 0; g->ids && i < g->n; i++)
		free(g->ids[i]);
	free(g->ids);
	free(g->by_name);
	free(g->ea);
	free(g->eb);
	free(g->ew);
	free(g->off);
	free(g->nb);
	free(g->nw);
	free(g->nid);
	free(g->deg);
	free(g);
}

/* Copy and check the ids (code: the error code for a bad one). */
static int take_ids(dp_graph *g, const char *const *ids, size_t n)
{
	char shown[64];

	g->ids = calloc(at_least1(n), sizeof(char *));
	g->by_name = calloc(at_least1(n), sizeof(size_t));
	if (g->ids == NULL || g->by_name == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	g->n = n;
	for (size_t i = 0; i < n; i++) {
		if (!id_ok(ids[i]))
			return dp_error_set(DP_EINVAL, "agent id %zu ('%s') is empty, longer than "
					    "%u bytes or holds a control character", i + 1,
					    dp_csv_show(ids[i], shown, sizeof(shown)), DP_GRAPH_MAX_ID);
		g->ids[i] = strdup(ids[i]);
		if (g->ids[i] == NULL)
			return dp_error_set(DP_ENOMEM, "out of memory");
		g->by_name[i] = i;
	}
	sort_ids = g->ids;
	qsort(g->by_name, n, sizeof(size_t), cmp_by_name);
	sort_ids = NULL;
	for (size_t k = 1; k < n; k++) {
		if (strcmp(g->ids[g->by_name[k - 1]], g->ids[g->by_name[k]]) == 0)
			return dp_error_set(DP_EINVAL, "agent id '%s' is given twice",
					    dp_csv_show(g->ids[g->by_name[k]], shown, sizeof(shown)));
	}
	return 0;
}

/* Check the edges, keep them and build the adjacency lists.  code is the
 * error for a bad edge (DP_EFORMAT from a file, DP_EINVAL in memory). */
static int take_edges(dp_graph *g, const size_t *a, const size_t *b, const double *w, size_t m,
		      const struct origin *o, int code)
{
	struct arc *arcs = NULL;
	char at[4200], at2[64];
	int rc = 0;

	if (m > DP_GRAPH_MAX_EDGES)
		return dp_error_set(code, "%s: more than %u edges", o->path ? o->path : "graph",
				    DP_GRAPH_MAX_EDGES);
	g->ea = malloc(at_least1(m) * sizeof(size_t));
	g->eb = malloc(at_least1(m) * sizeof(size_t));
	g->ew = malloc(at_least1(m) * sizeof(double));
	g->off = calloc(g->n + 1, sizeof(size_t));
	g->nb = malloc(at_least1(2 * m) * sizeof(size_t));
	g->nw = malloc(at_least1(2 * m) * sizeof(double));
	g->nid = malloc(at_least1(2 * m) * sizeof(char *));
	g->deg = calloc(at_least1(g->n), sizeof(double));
	arcs = malloc(at_least1(2 * m) * sizeof(*arcs));
	if (!g->ea || !g->eb || !g->ew || !g->off || !g->nb || !g->nw || !g->nid || !g->deg ||
	    !arcs) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t e = 0; e < m; e++) {
		if (a[e] >= g->n || b[e] >= g->n) {
			rc = dp_error_set(code, "%s: node index out of range (%zu nodes)",
					  where(o, e, at, sizeof(at)), g->n);
			goto out;
		}
		if (a[e] == b[e]) {
			rc = dp_error_set(code, "%s: self loop on '%s' (a and b must differ)",
					  where(o, e, at, sizeof(at)), g->ids[a[e]]);
			goto out;
		}
		if (!(w[e] > 0) || !isfinite(w[e])) {
			rc = dp_error_set(code, "%s: column 'w': weight must be a finite number > 0",
					  where(o, e, at, sizeof(at)));
			goto out;
		}
		g->ea[e] = a[e];
		g->eb[e] = b[e];
		g->ew[e] = w[e];
		arcs[2 * e] = (struct arc){ a[e], b[e], e };
		arcs[2 * e + 1] = (struct arc){ b[e], a[e], e };
	}
	g->m = m;
	qsort(arcs, 2 * m, sizeof(*arcs), cmp_arc);
	for (size_t k = 0; k < 2 * m; k++) {
		if (k > 0 && arcs[k].from == arcs[k - 1].from && arcs[k].to == arcs[k - 1].to) {
			size_t first = arcs[k - 1].edge, again = arcs[k].edge;

			rc = dp_error_set(code, "%s: edge '%s'-'%s' repeats %s (each undirected "
					  "edge once)", where(o, again, at, sizeof(at)),
					  g->ids[g->ea[again]], g->ids[g->eb[again]],
					  which(o, first, at2, sizeof(at2)));
			goto out;
		}
		g->off[arcs[k].from + 1]++;
		g->nb[k] = arcs[k].to;
		g->nw[k] = g->ew[arcs[k].edge];
		g->nid[k] = g->ids[arcs[k].to];
		g->deg[arcs[k].from] += g->nw[k];
	}
	for (size_t i = 0; i < g->n; i++)
		g->off[i + 1] += g->off[i];
out:
	free(arcs);
	return rc;
}

int dp_graph_new(const char *const *ids, size_t n, const size_t *a, const size_t *b,
		 const double *w, size_t m, dp_graph **out)
{
	dp_graph *g = calloc(1, sizeof(*g));
	struct origin o = { 0 };
	int rc;

	DP_REQUIRE(ids != NULL || n == 0);
	DP_REQUIRE((a != NULL && b != NULL && w != NULL) || m == 0);
	DP_REQUIRE(out != NULL);
	if (g == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	rc = take_ids(g, ids, n);
	if (rc == 0)
		rc = take_edges(g, a, b, w, m, &o, DP_EINVAL);
	if (rc != 0) {
		dp_graph_free(g);
		return rc;
	}
	*out = g;
	return 0;
}

/* The node of `id` among g's ids (binary search), or -1. */
long dp_graph_find(const dp_graph *g, const char *id)
{
	size_t lo = 0, hi = g->n;

	DP_REQUIRE(g != NULL && id != NULL);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(g->ids[g->by_name[mid]], id);

		if (c == 0)
			return (long)g->by_name[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Without known ids, the nodes are the distinct ids the file names, sorted;
 * *names (malloc'ed pointers into t) and *n receive them. */
static int ids_from_table(const dp_csv_table *t, const char ***names, size_t *n)
{
	const char **v = malloc(at_least1(2 * t->nrows) * sizeof(char *));
	size_t k = 0;

	if (v == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t r = 0; r < t->nrows; r++) {
		v[2 * r] = dp_csv_cell(t, r, 0);
		v[2 * r + 1] = dp_csv_cell(t, r, 1);
	}
	qsort(v, 2 * t->nrows, sizeof(char *), cmp_str);
	for (size_t r = 0; r < 2 * t->nrows; r++) {
		if (k == 0 || strcmp(v[k - 1], v[r]) != 0)
			v[k++] = v[r];
	}
	*names = v;
	*n = k;
	return 0;
}

int dp_graph_load(const char *path, const char *const *ids, size_t n, dp_graph **out)
{
	static const char *const cols[3] = { "a", "b", "w" };
	dp_csv_table t = { 0 };
	dp_graph *g = NULL;
	const char **found = NULL;
	size_t *a = NULL, *b = NULL, nfound = 0;
	double *w = NULL;
	char shown[64];
	int rc;

	DP_REQUIRE(path != NULL && out != NULL && (ids != NULL || n == 0));
	rc = dp_csv_table_load(&t, path, 0);
	if (rc != 0)
		return rc;
	if (t.ncols != 3 || strcmp(t.header[0], "a") || strcmp(t.header[1], "b") ||
	    strcmp(t.header[2], "w")) {
		rc = dp_error_set(DP_EFORMAT, "%s:1: the header must be exactly a,b,w", path);
		goto out;
	}
	if (t.nrows > DP_GRAPH_MAX_EDGES) {
		rc = dp_error_set(DP_EFORMAT, "%s: more than %u edges", path, DP_GRAPH_MAX_EDGES);
		goto out;
	}
	for (size_t r = 0; r < t.nrows; r++) {
		for (size_t c = 0; c < 2; c++) {
			if (!id_ok(dp_csv_cell(&t, r, c))) {
				rc = dp_error_set(DP_EFORMAT, "%s:%zu: column '%s': an agent id must be "
						  "1 to %u bytes without control characters", path,
						  t.line[r], cols[c], DP_GRAPH_MAX_ID);
				goto out;
			}
		}
	}
	if (ids == NULL) {
		rc = ids_from_table(&t, &found, &nfound);
		if (rc != 0)
			goto out;
		ids = found;
		n = nfound;
	}
	g = calloc(1, sizeof(*g));
	a = malloc(at_least1(t.nrows) * sizeof(size_t));
	b = malloc(at_least1(t.nrows) * sizeof(size_t));
	w = malloc(at_least1(t.nrows) * sizeof(double));
	if (!g || !a || !b || !w) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	rc = take_ids(g, ids, n);
	if (rc != 0)
		goto out;
	for (size_t r = 0; r < t.nrows; r++) {
		size_t *end[2] = { &a[r], &b[r] };

		for (size_t c = 0; c < 2; c++) {
			long i = dp_graph_find(g, dp_csv_cell(&t, r, c));

			if (i < 0) {
				rc = dp_error_set(DP_EFORMAT, "%s:%zu: column '%s': unknown agent id "
						  "'%s'", path, t.line[r], cols[c],
						  dp_csv_show(dp_csv_cell(&t, r, c), shown,
							      sizeof(shown)));
				goto out;
			}
			*end[c] = (size_t)i;
		}
		if (dp_csv_parse_number(dp_csv_cell(&t, r, 2), &w[r]) != 0) {
			rc = dp_error_set(DP_EFORMAT, "%s:%zu: column 'w': not a finite number", path,
					  t.line[r]);
			goto out;
		}
	}
	{
		struct origin o = { .path = path, .line = t.line };

		rc = take_edges(g, a, b, w, t.nrows, &o, DP_EFORMAT);
	}
out:
	if (rc == 0)
		*out = g;
	else
		dp_graph_free(g);
	free(found);
	free(a);
	free(b);
	free(w);
	dp_csv_table_free(&t);
	return rc;
}

int dp_graph_write(const char *path, const dp_graph *g)
{
	char *buf = NULL, num[40];
	size_t len = 0;
	FILE *f;
	int rc = 0;

	DP_REQUIRE(path != NULL && g != NULL);
	f = open_memstream(&buf, &len);
	if (f == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	fputs("a,b,w\n", f);
	for (size_t e = 0; e < g->m && rc == 0; e++) {
		dp_num_format(num, sizeof(num), g->ew[e]);
		rc = dp_csv_write_field(f, g->ids[g->ea[e]]);
		if (rc == 0 && fputc(',', f) == EOF)
			rc = DP_EIO;
		if (rc == 0)
			rc = dp_csv_write_field(f, g->ids[g->eb[e]]);
		if (rc == 0 && fprintf(f, ",%s\n", num) < 0)
			rc = DP_EIO;
	}
	if (fclose(f) != 0 || rc != 0) {
		free(buf);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	rc = dp_file_write_atomic(path, buf, len, 0644);
	free(buf);
	return rc;
}

size_t dp_graph_nodes(const dp_graph *g)
{
	DP_REQUIRE(g != NULL);
	return g->n;
}

size_t dp_graph_edges(const dp_graph *g)
{
	DP_REQUIRE(g != NULL);
	return g->m;
}

const char *dp_graph_id(const dp_graph *g, size_t i)
{
	DP_REQUIRE(g != NULL && i < g->n);
	return g->ids[i];
}

void dp_graph_edge(const dp_graph *g, size_t e, size_t *a, size_t *b, double *w)
{
	DP_REQUIRE(g != NULL && e < g->m);
	if (a)
		*a = g->ea[e];
	if (b)
		*b = g->eb[e];
	if (w)
		*w = g->ew[e];
}

size_t dp_graph_adj(const dp_graph *g, size_t i, const size_t **nb, const double **w)
{
	DP_REQUIRE(g != NULL && i < g->n);
	if (nb)
		*nb = g->nb + g->off[i];
	if (w)
		*w = g->nw + g->off[i];
	return g->off[i + 1] - g->off[i];
}

size_t dp_graph_neighbours(const dp_graph *g, const char *id, const char *const **ids,
			   const double **w)
{
	long i = dp_graph_find(g, id);

	if (i < 0)
		return 0;
	if (ids)
		*ids = g->nid + g->off[i];
	return dp_graph_adj(g, (size_t)i, NULL, w);
}

double dp_graph_degree(const dp_graph *g, size_t i)
{
	DP_REQUIRE(g != NULL && i < g->n);
	return g->deg[i];
}
