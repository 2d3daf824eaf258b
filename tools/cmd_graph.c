/* SPDX-License-Identifier: Apache-2.0 */
/* dpasync graph: build the peer graph file (common/core/graph.h) from the
 * agents' target models (--from-angles) or from their ratings (--knn). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/csv.h"
#include "common/core/error.h"
#include "common/core/exit.h"
#include "common/core/graph.h"
#include "common/net/config.h"
#include "tools/cmds.h"
#include "tools/lib/graphbuild.h"
#include "tools/lib/ownerdata.h"

static const char graph_summary[] =
	"Build a peer graph file (a,b,w; docs/p2p.md) for dpasync sim --mode p2p and\n"
	"ownerd --peer, in one of two ways:\n"
	"  --from-angles FILE   FILE has a header 'id,...' and one row per agent: its id,\n"
	"                       then its target model; W_ij = exp((cos phi_ij - 1)/gamma)\n"
	"                       with phi_ij the angle between the two models (the\n"
	"                       synthetic setup of the peer-to-peer papers).\n"
	"  --knn K FILE...      one ratings file per agent (its id: the file name without\n"
	"                       .csv or .csv.gz); each agent links to the K agents whose\n"
	"                       ratings (--item, --value) have the largest cosine\n"
	"                       similarity s_ij > 0, W_ij = s_ij; the graph is the union.";

static const char graph_epilog[] =
	"With --from-angles an edge is kept when W_ij >= --min-weight and, with\n"
	"--keep K, when it is among the K largest weights of one of its ends.\n"
	"Prints the number of agents and edges, the degrees and the isolated agents.\n"
	"\n"
	"Example: dpasync graph --knn 10 --item movieId --value rating --out graph.csv \\\n"
	"    train/*.csv";

struct graph_opts {
	char *angles, *item, *value, *out;
	double gamma, min_w;
	size_t keep, knn;
	bool have_knn;
	struct dp_config_strings files;
};

static int check_opts(void *arg)
{
	const struct graph_opts *o = arg;

	if ((o->angles != NULL) == o->have_knn)
		return dp_error_set(DP_EINVAL, "give exactly one of --from-angles FILE and --knn K");
	if (o->angles && o->files.n > 0)
		return dp_error_set(DP_EINVAL, "--from-angles takes no FILE arguments");
	if (o->have_knn && o->files.n == 0)
		return dp_error_set(DP_EINVAL, "--knn needs the agents' ratings files");
	if (o->have_knn && o->keep > 0)
		return dp_error_set(DP_EINVAL, "--keep applies to --from-angles (--knn K keeps K)");
	return 0;
}

/* --from-angles FILE: ids (column 1) and vectors (the other columns). */
static int build_angles(const struct graph_opts *o, dp_graph **g)
{
	dp_csv_table t = { 0 };
	const char **ids = NULL;
	double *v = NULL;
	size_t p;
	int rc;

	rc = dp_csv_table_load(&t, o->angles, 0);
	if (rc != 0)
		return rc;
	p = t.ncols - 1;
	if (strcmp(t.header[0], "id") != 0 || p == 0) {
		rc = dp_error_set(DP_EFORMAT, "%s:1: the header must be id, then the model's "
				  "coordinates", o->angles);
		goto out;
	}
	if (t.nrows == 0) {
		rc = dp_error_set(DP_EFORMAT, "%s: no agents", o->angles);
		goto out;
	}
	ids = calloc(t.nrows, sizeof(char *));
	v = calloc(t.nrows * p, sizeof(double));
	if (ids == NULL || v == NULL) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t r = 0; r < t.nrows; r++) {
		ids[r] = dp_csv_cell(&t, r, 0);
		for (size_t q = 0; q < p; q++) {
			if (dp_csv_parse_number(dp_csv_cell(&t, r, q + 1), &v[r * p + q]) != 0) {
				rc = dp_error_set(DP_EFORMAT, "%s:%zu: column '%s': not a finite "
						  "number", o->angles, t.line[r], t.header[q + 1]);
				goto out;
			}
		}
	}
	rc = dp_graphbuild_angles(ids, t.nrows, v, p, o->gamma, o->min_w, o->keep, g);
	if (rc == DP_EINVAL) {
		/* The detail is copied: dp_error_set writes where it lives. */
		char was[512];

		snprintf(was, sizeof(was), "%s", dp_error_detail(rc));
		rc = dp_error_set(DP_EFORMAT, "%s: %s", o->angles, was);
	}
out:
	free(ids);
	free(v);
	dp_csv_table_free(&t);
	return rc;
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The ratings of --knn: every table's (item, value) pairs, items numbered
 * by their rank among all distinct item names. */
struct knn_input {
	size_t n;
	dp_csv_table *t;
	char **ids;
	const char **names;          /* distinct item names, sorted */
	size_t nnames;
	size_t **item;
	double **value;
	dp_graphbuild_ratings *r;
};

static void knn_free(struct knn_input *k)
{
	for (size_t i = 0; i < k->n; i++) {
		if (k->t)
			dp_csv_table_free(&k->t[i]);
		if (k->ids)
			free(k->ids[i]);
		if (k->item)
			free(k->item[i]);
		if (k->value)
			free(k->value[i]);
	}
	free(k->t);
	free(k->ids);
	free(k->names);
	free(k->item);
	free(k->value);
	free(k->r);
}

/* Read the n files, check their columns and cells. */
static int knn_read(const struct graph_opts *o, struct knn_input *k, long *ci, long *cv)
{
	size_t total = 0;
	int rc;

	for (size_t i = 0; i < k->n; i++) {
		rc = dp_csv_table_load(&k->t[i], o->files.v[i], 0);
		if (rc != 0)
			return rc;
		k->ids[i] = dp_ownerdata_id(o->files.v[i]);
		if (k->ids[i] == NULL)
			return dp_error_set(DP_ENOMEM, "out of memory");
		ci[i] = dp_csv_find((const char *const *)k->t[i].header, k->t[i].ncols, o->item);
		cv[i] = dp_csv_find((const char *const *)k->t[i].header, k->t[i].ncols, o->value);
		if (ci[i] < 0 || cv[i] < 0)
			return dp_error_set(DP_EFORMAT, "%s:1: no column '%s'", o->files.v[i],
					    ci[i] < 0 ? o->item : o->value);
		total += k->t[i].nrows;
	}
	k->names = malloc((total ? total : 1) * sizeof(char *));
	if (k->names == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t i = 0; i < k->n; i++) {
		for (size_t row = 0; row < k->t[i].nrows; row++)
			k->names[k->nnames++] = dp_csv_cell(&k->t[i], row, (size_t)ci[i]);
	}
	qsort(k->names, k->nnames, sizeof(char *), cmp_str);
	{
		size_t u = 0;

		for (size_t j = 0; j < k->nnames; j++) {
			if (u == 0 || strcmp(k->names[u - 1], k->names[j]) != 0)
				k->names[u++] = k->names[j];
		}
		k->nnames = u;
	}
	return 0;
}

/* Number the items and parse the values of agent i. */
static int knn_agent(const struct graph_opts *o, struct knn_input *k, size_t i, long ci,
		     long cv)
{
	const dp_csv_table *t = &k->t[i];
	bool *seen = NULL;

	k->item[i] = malloc((t->nrows ? t->nrows : 1) * sizeof(size_t));
	k->value[i] = malloc((t->nrows ? t->nrows : 1) * sizeof(double));
	if (k->item[i] == NULL || k->value[i] == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t row = 0; row < t->nrows; row++) {
		const char *name = dp_csv_cell(t, row, (size_t)ci);
		const char **hit = bsearch(&name, k->names, k->nnames, sizeof(char *), cmp_str);

		k->item[i][row] = (size_t)(hit - k->names);
		if (dp_csv_parse_number(dp_csv_cell(t, row, (size_t)cv), &k->value[i][row]) != 0)
			return dp_error_set(DP_EFORMAT, "%s:%zu: column '%s': not a finite number",
					    o->files.v[i], t->line[row], o->value);
	}
	/* An item twice in one agent's ratings is ambiguous: refused. */
	seen = calloc(k->nnames ? k->nnames : 1, sizeof(bool));
	if (seen == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t row = 0; row < t->nrows; row++) {
		if (seen[k->item[i][row]]) {
			free(seen);
			return dp_error_set(DP_EFORMAT, "%s:%zu: column '%s': this item is rated "
					    "twice", o->files.v[i], t->line[row], o->item);
		}
		seen[k->item[i][row]] = true;
	}
	free(seen);
	k->r[i] = (dp_graphbuild_ratings){ .n = t->nrows, .item = k->item[i],
					   .value = k->value[i] };
	return 0;
}

static int build_knn(const struct graph_opts *o, dp_graph **g)
{
	struct knn_input k = { .n = o->files.n };
	long *ci = calloc(k.n, sizeof(long)), *cv = calloc(k.n, sizeof(long));
	int rc = 0;

	k.t = calloc(k.n, sizeof(*k.t));
	k.ids = calloc(k.n, sizeof(char *));
	k.item = calloc(k.n, sizeof(size_t *));
	k.value = calloc(k.n, sizeof(double *));
	k.r = calloc(k.n, sizeof(*k.r));
	if (!ci || !cv || !k.t || !k.ids || !k.item || !k.value || !k.r)
		rc = dp_error_set(DP_ENOMEM, "out of memory");
	if (rc == 0)
		rc = knn_read(o, &k, ci, cv);
	for (size_t i = 0; i < k.n && rc == 0; i++)
		rc = knn_agent(o, &k, i, ci[i], cv[i]);
	if (rc == 0)
		rc = dp_graphbuild_knn((const char *const *)k.ids, k.n, k.r, o->knn, g);
	knn_free(&k);
	free(ci);
	free(cv);
	return rc;
}

static int cmp_size(const void *x, const void *y)
{
	size_t a = *(const size_t *)x, b = *(const size_t *)y;

	return a < b ? -1 : a > b;
}

/* One line: agents, edges, degrees, isolated agents. */
static int report(const dp_graph *g, const char *out)
{
	size_t n = dp_graph_nodes(g), *deg = calloc(n ? n : 1, sizeof(size_t)), alone = 0;

	if (deg == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		deg[i] = dp_graph_adj(g, i, NULL, NULL);
		alone += deg[i] == 0;
	}
	qsort(deg, n, sizeof(size_t), cmp_size);
	printf("agents=%zu edges=%zu degree_min=%zu degree_median=%zu degree_max=%zu isolated=%zu "
	       "out=%s\n", n, dp_graph_edges(g), n ? deg[0] : 0, n ? deg[n / 2] : 0,
	       n ? deg[n - 1] : 0, alone, out);
	free(deg);
	return 0;
}

static int build(void *arg)
{
	const struct graph_opts *o = arg;
	enum dp_exit_phase phase = DP_EXIT_PHASE_LOAD;
	dp_graph *g = NULL;
	int rc;

	rc = o->angles ? build_angles(o, &g) : build_knn(o, &g);
	if (rc == 0) {
		phase = DP_EXIT_PHASE_RUN;
		rc = dp_graph_write(o->out, g);
	}
	if (rc == 0)
		rc = report(g, o->out);
	dp_graph_free(g);
	if (rc != 0) {
		dp_cmd_fail("graph", "%s", rc == DP_ENOMEM ? "out of memory" : dp_error_detail(rc));
		return dp_exit_status(rc, phase);
	}
	return 0;
}

int dp_cmd_graph(int argc, char **argv)
{
	struct graph_opts o = { 0 };
	const struct dp_config_entry entries[] = {
		{ .name = "from-angles", DP_CFG_PATH(&o.angles), .metavar = "FILE",
		  .help = "agents' target models, 'id,...' (see above)" },
		{ .name = "gamma", DP_CFG_DOUBLE(&o.gamma), .def = "0.1", .min = 0, .max = INFINITY,
		  .min_exclusive = true, .metavar = "G",
		  .help = "--from-angles: the bandwidth gamma" },
		{ .name = "min-weight", DP_CFG_DOUBLE(&o.min_w), .def = "0.001", .min = 0,
		  .max = 1, .metavar = "W",
		  .help = "--from-angles: drop edges with W_ij below W" },
		{ .name = "keep", DP_CFG_SIZE(&o.keep), .def = "0", .metavar = "K",
		  .help = "--from-angles: keep only each agent's K\nlargest weights (0: all)" },
		{ .name = "knn", DP_CFG_SIZE(&o.knn), .min = 1, .max = INFINITY,
		  .given = &o.have_knn, .metavar = "K",
		  .help = "k-nearest-neighbour graph over the FILEs" },
		{ .name = "item", DP_CFG_STRING(&o.item), .def = "item", .metavar = "COL",
		  .help = "--knn: the column naming the rated item" },
		{ .name = "value", DP_CFG_STRING(&o.value), .def = "rating", .metavar = "COL",
		  .help = "--knn: the column holding the rating" },
		{ .name = "out", DP_CFG_PATH(&o.out), .flags = DP_CONFIG_REQUIRED, .metavar = "FILE",
		  .help = "the graph file to write" },
		DP_CONFIG_END,
	};
	const struct dp_config_spec spec = {
		.program = "dpasync graph",
		.command = true,
		.summary = graph_summary,
		.epilog = graph_epilog,
		.entries = entries,
		.validate = check_opts,
		.validate_arg = &o,
		.args = &o.files,
		.args_metavar = "[FILE...]",
		.args_min = 0,
	};

	return dp_cmd_run(&spec, argc, argv, build, &o);
}
