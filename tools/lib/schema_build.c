/* SPDX-License-Identifier: Apache-2.0 */
/* Building a feature schema from a sample (schema_build.h).  The schema's
 * internals are shared with common/core/schema.c through schema_impl.h. */
#include "tools/lib/schema_build.h"
#include "common/core/csv.h"
#include "common/core/error.h"
#include "common/core/schema.h"
#include "common/core/schema_impl.h"
#include "tools/lib/pca.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const dp_schema_build_tasks[] = {
	[DP_TASK_REGRESSION] = "regression",
	[DP_TASK_CLASSIFICATION] = "classification",
	NULL,
};

/* The sample: rows picked from one or more tables whose columns are the
 * same set (column j means column j of table 0; map[] finds it elsewhere). */
struct sample {
	const dp_csv_table *const *tabs;
	size_t ntabs;
	dp_schema_build_pick *picks;
	size_t n;
	size_t ncols;
	size_t *map;          /* ntabs x ncols */
	char name[256];       /* for messages without a row */
};

static const char *scell(const struct sample *sm, size_t r, size_t j)
{
	const dp_schema_build_pick *pk = &sm->picks[r];

	return dp_csv_cell(sm->tabs[pk->table], pk->row, sm->map[pk->table * sm->ncols + j]);
}

static size_t sline(const struct sample *sm, size_t r)
{
	return sm->tabs[sm->picks[r].table]->line[sm->picks[r].row];
}

static const char *ssource(const struct sample *sm, size_t r)
{
	return sm->tabs[sm->picks[r].table]->source;
}

static void sample_free(struct sample *sm)
{
	free(sm->picks);
	free(sm->map);
	sm->picks = NULL;
	sm->map = NULL;
}

static int sample_init(struct sample *sm, const dp_csv_table *const *tabs, size_t ntabs,
		       const dp_schema_build_pick *picks, size_t npicks)
{
	const dp_csv_table *t0;
	size_t total = 0;

	memset(sm, 0, sizeof(*sm));
	if (tabs == NULL || ntabs == 0)
		return dp_error_set(DP_EINVAL, "schema: no sample table");
	t0 = tabs[0];
	sm->tabs = tabs;
	sm->ntabs = ntabs;
	sm->ncols = t0->ncols;
	if (ntabs == 1)
		snprintf(sm->name, sizeof(sm->name), "%s", t0->source);
	else
		snprintf(sm->name, sizeof(sm->name), "%s and %zu other file%s", t0->source,
			 ntabs - 1, ntabs > 2 ? "s" : "");
	for (size_t t = 0; t < ntabs; t++) {
		if (total > SIZE_MAX - tabs[t]->nrows)
			return DP_ENOMEM;
		total += tabs[t]->nrows;
	}
	sm->map = malloc(ntabs * sm->ncols * sizeof(*sm->map) + 1);
	sm->n = picks ? npicks : total;
	sm->picks = malloc((sm->n ? sm->n : 1) * sizeof(*sm->picks));
	if (sm->map == NULL || sm->picks == NULL) {
		sample_free(sm);
		return DP_ENOMEM;
	}
	for (size_t t = 0; t < ntabs; t++) {
		if (tabs[t]->ncols != sm->ncols) {
			sample_free(sm);
			return dp_error_set(DP_EFORMAT, "%s: %zu columns, but %s has %zu",
					    tabs[t]->source, tabs[t]->ncols, t0->source, sm->ncols);
		}
		for (size_t j = 0; j < sm->ncols; j++) {
			long k = dp_csv_find((const char *const *)tabs[t]->header, tabs[t]->ncols,
					     t0->header[j]);

			if (k < 0) {
				sample_free(sm);
				return dp_error_set(DP_EFORMAT, "%s: no column '%s' (which %s has)",
						    tabs[t]->source, t0->header[j], t0->source);
			}
			sm->map[t * sm->ncols + j] = (size_t)k;
		}
	}
	if (picks != NULL) {
		for (size_t r = 0; r < npicks; r++) {
			if (picks[r].table >= ntabs || picks[r].row >= tabs[picks[r].table]->nrows) {
				sample_free(sm);
				return dp_error_set(DP_EINVAL, "schema: sample pick %zu out of range", r);
			}
			sm->picks[r] = picks[r];
		}
	} else {
		size_t r = 0;

		for (size_t t = 0; t < ntabs; t++)
			for (size_t i = 0; i < tabs[t]->nrows; i++, r++) {
				sm->picks[r].table = t;
				sm->picks[r].row = i;
			}
	}
	return 0;
}

static int in_list(const char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return 1;
	return 0;
}

/* Mean and standard deviation (n - 1; 1 when zero or undefined). */
static void moments(const double *v, size_t n, double *mean, double *sd)
{
	double m = 0.0, ss = 0.0;

	for (size_t i = 0; i < n; i++)
		m += v[i];
	m /= (double)n;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - m) * (v[i] - m);
	*mean = m;
	*sd = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
	if (!(*sd > 0.0) || !isfinite(*sd))
		*sd = 1.0;
}

static int strptr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Distinct values of column j over the sample, sorted; at most `cap`.
 * Returns DP_ERANGE (no detail) when there are more. */
static int distinct(const struct sample *sm, size_t j, size_t cap, char ***out, size_t *n)
{
	const char **tmp = malloc((sm->n ? sm->n : 1) * sizeof(*tmp));
	size_t u = 0;
	char **v;

	if (tmp == NULL)
		return DP_ENOMEM;
	for (size_t r = 0; r < sm->n; r++)
		tmp[r] = scell(sm, r, j);
	qsort(tmp, sm->n, sizeof(*tmp), strptr_cmp);
	for (size_t r = 0; r < sm->n; r++)
		if (u == 0 || strcmp(tmp[u - 1], tmp[r]) != 0)
			tmp[u++] = tmp[r];
	if (u > cap) {
		free(tmp);
		*n = u;
		return DP_ERANGE;
	}
	v = dp__schema_strv_dup(tmp, u);
	free(tmp);
	if (v == NULL)
		return DP_ENOMEM;
	*out = v;
	*n = u;
	return 0;
}

static int opt_column(const dp_csv_table *t, long tcol, const char *what, const char *name)
{
	char list[200], shown[64];

	if (name == NULL || *name == '\0')
		return dp_error_set(DP_EINVAL, "schema: empty column name in the %s list", what);
	if (dp_csv_find((const char *const *)t->header, t->ncols, name) < 0) {
		dp_csv_format_names(list, sizeof(list), (const char *const *)t->header, t->ncols);
		return dp_error_set(DP_EFORMAT, "%s: %s column '%s' not found (columns: %s)",
				    t->source, what, dp_csv_show(name, shown, sizeof(shown)), list);
	}
	if (strcmp(name, t->header[tcol]) == 0)
		return dp_error_set(DP_EINVAL, "schema: the target '%s' cannot be in the %s list",
				    name, what);
	return 0;
}

static int check_opts(const dp_csv_table *t, long *tcol_out, const dp_schema_build_opts *o)
{
	char list[200], shown[64];
	long tcol = -1;
	int rc;

	if (o->target == NULL || *o->target == '\0')
		return dp_error_set(DP_EINVAL, "schema: no target column given");
	tcol = dp_csv_find((const char *const *)t->header, t->ncols, o->target);
	if (tcol < 0) {
		dp_csv_format_names(list, sizeof(list), (const char *const *)t->header, t->ncols);
		return dp_error_set(DP_EFORMAT, "%s: target column '%s' not found (columns: %s)",
				    t->source, dp_csv_show(o->target, shown, sizeof(shown)), list);
	}
	if (o->task != DP_TASK_REGRESSION && o->task != DP_TASK_CLASSIFICATION)
		return dp_error_set(DP_EINVAL, "schema: unknown task %d", (int)o->task);
	if (o->task == DP_TASK_CLASSIFICATION && (o->positive == NULL || *o->positive == '\0'))
		return dp_error_set(DP_EINVAL, "schema: classification needs a positive label");
	if (o->positive != NULL && dp_csv_has_control(o->positive))
		return dp_error_set(DP_EINVAL,
				    "schema: the positive label contains a control character");
	if (o->task == DP_TASK_REGRESSION && (o->positive != NULL || o->labels != NULL))
		return dp_error_set(DP_EINVAL,
				    "schema: a positive label or label list only applies to "
				    "classification");
	if (!isfinite(o->clamp_z) || o->clamp_z < 0.0)
		return dp_error_set(DP_EINVAL, "schema: clamp must be a finite number >= 0");
	for (size_t i = 0; i < o->ndrop; i++) {
		rc = opt_column(t, tcol, "drop", o->drop[i]);
		if (rc != 0)
			return rc;
	}
	for (size_t i = 0; i < o->nonehot; i++) {
		rc = opt_column(t, tcol, "onehot", o->onehot[i]);
		if (rc != 0)
			return rc;
		if (in_list(o->drop, o->ndrop, o->onehot[i]))
			return dp_error_set(DP_EINVAL, "schema: column '%s' is both dropped and onehot",
					    o->onehot[i]);
	}
	for (size_t i = 0; i < o->nlevels; i++) {
		const dp_schema_build_levels *lv = &o->levels[i];

		rc = opt_column(t, tcol, "levels", lv->column);
		if (rc != 0)
			return rc;
		if (in_list(o->drop, o->ndrop, lv->column))
			return dp_error_set(DP_EINVAL,
					    "schema: column '%s' is dropped and also given levels",
					    lv->column);
		if (lv->ordered && in_list(o->onehot, o->nonehot, lv->column))
			return dp_error_set(DP_EINVAL, "schema: column '%s' is both onehot and ordinal",
					    lv->column);
		for (size_t k = 0; k < i; k++)
			if (strcmp(o->levels[k].column, lv->column) == 0)
				return dp_error_set(DP_EINVAL,
						    "schema: levels given twice for column '%s'",
						    lv->column);
		if (lv->nlevels == 0)
			return dp_error_set(DP_EINVAL, "schema: empty level list for column '%s'",
					    lv->column);
		for (size_t k = 0; k < lv->nlevels; k++)
			if (lv->levels[k] == NULL || *lv->levels[k] == '\0')
				return dp_error_set(DP_EINVAL,
						    "schema: empty level in the list for column '%s'",
						    lv->column);
	}
	if (o->labels != NULL && o->nlabels == 0)
		return dp_error_set(DP_EINVAL, "schema: empty label list");
	*tcol_out = tcol;
	return 0;
}

/* Copy a user level list into col->lv, rejecting duplicates. */
static int col_set_levels(struct dp__schema_col *col, const char *const *v, size_t n,
			  const char *what)
{
	char **copy = dp__schema_strv_dup(v, n);
	const char *dup = NULL;
	char shown[64];
	int rc;

	if (copy == NULL)
		return DP_ENOMEM;
	rc = dp__schema_levels_set(&col->lv, copy, n, &dup);
	if (rc == DP_EFORMAT) {
		rc = dp_error_set(DP_EINVAL, "schema: %s for '%s' lists '%s' twice", what, col->name,
				  dp_csv_show(dup, shown, sizeof(shown)));
		dp__schema_strv_free(copy, n);
	} else if (rc != 0) {
		dp__schema_strv_free(copy, n);
	}
	return rc;
}

/* Every sample value of column j must be in lv. */
static int check_levels(const struct sample *sm, size_t j, const struct dp__schema_levels *lv,
			const char *colname, const char *what)
{
	char shown[64], list[200];

	for (size_t r = 0; r < sm->n; r++) {
		const char *v = scell(sm, r, j);

		if (dp__schema_levels_find(lv, v) < 0) {
			dp_csv_format_names(list, sizeof(list), (const char *const *)lv->v, lv->n);
			return dp_error_set(DP_EFORMAT,
					    "%s:%zu: column '%s': '%s' is not in the %s (%s)",
					    ssource(sm, r), sline(sm, r), colname,
					    dp_csv_show(v, shown, sizeof(shown)), what, list);
		}
	}
	return 0;
}

/* Distinct values of the column named `name` (index j in the sample) for a
 * level list: from the level tables when given (every cell there must be
 * non-empty, and the sample's values must be among them), else from the
 * sample itself. */
static int level_values(const struct sample *sm, const struct sample *lsm, size_t j,
			const char *name, size_t cap, char ***out, size_t *n,
			const struct sample **from)
{
	const struct sample *src = lsm ? lsm : sm;
	size_t jj = j;
	int rc;

	if (lsm != NULL) {
		jj = (size_t)dp_csv_find((const char *const *)lsm->tabs[0]->header, lsm->ncols, name);
		for (size_t r = 0; r < lsm->n; r++)
			if (*scell(lsm, r, jj) == '\0')
				return dp_error_set(DP_EFORMAT,
						    "%s:%zu: column '%s': empty cell (missing value; "
						    "dpasync does not impute: fill it or drop the "
						    "column)",
						    ssource(lsm, r), sline(lsm, r), name);
	}
	*from = src;
	rc = distinct(src, jj, cap, out, n);
	return rc;
}

static int build_column(struct dp__schema_col *col, const struct sample *sm,
			const struct sample *lsm, size_t j, const dp_schema_build_opts *o,
			double *vals)
{
	const dp_schema_build_levels *given = NULL;
	size_t max_levels = o->max_levels ? o->max_levels : DP_SCHEMA_BUILD_MAX_LEVELS;
	size_t first_bad = SIZE_MAX;
	int rc;

	for (size_t i = 0; i < o->nlevels; i++)
		if (strcmp(o->levels[i].column, col->name) == 0)
			given = &o->levels[i];
	if (in_list(o->drop, o->ndrop, col->name)) {
		col->kind = DP__SCHEMA_DROP;
		return 0;
	}
	for (size_t r = 0; r < sm->n; r++) {
		const char *v = scell(sm, r, j);

		if (*v == '\0')
			return dp_error_set(DP_EFORMAT,
					    "%s:%zu: column '%s': empty cell (missing value; dpasync "
					    "does not impute: fill it or drop the column)",
					    ssource(sm, r), sline(sm, r), col->name);
		if (first_bad == SIZE_MAX && dp_csv_parse_number(v, &vals[r]) != 0)
			first_bad = r;
	}
	if (given != NULL) {
		col->kind = given->ordered ? DP__SCHEMA_ORDINAL : DP__SCHEMA_ONEHOT;
		rc = col_set_levels(col, given->levels, given->nlevels,
				    given->ordered ? "the ordinal order" : "the level list");
		if (rc != 0)
			return rc;
		rc = check_levels(sm, j, &col->lv, col->name,
				  given->ordered ? "ordinal order given" : "level list given");
		if (rc != 0)
			return rc;
		if (col->kind == DP__SCHEMA_ONEHOT && col->lv.n == 2)
			col->kind = DP__SCHEMA_BINARY;
		if (col->kind == DP__SCHEMA_ORDINAL) {
			for (size_t r = 0; r < sm->n; r++)
				vals[r] = (double)dp__schema_levels_find(&col->lv, scell(sm, r, j));
			moments(vals, sm->n, &col->center, &col->scale);
		}
		return 0;
	}
	if (first_bad != SIZE_MAX || in_list(o->onehot, o->nonehot, col->name)) {
		char **v = NULL;
		size_t n = 0;
		const char *dup = NULL;
		const struct sample *from = sm;

		col->kind = DP__SCHEMA_ONEHOT;
		rc = level_values(sm, lsm, j, col->name, max_levels, &v, &n, &from);
		if (rc == DP_ERANGE) {
			char shown[64];

			if (first_bad != SIZE_MAX)
				return dp_error_set(
					DP_EFORMAT,
					"%s: column '%s' is not numeric ('%s' on %s:%zu) and has "
					"%zu distinct values, more than the %zu allowed for a "
					"categorical column: drop it, give its levels, or fix the value",
					from->name, col->name,
					dp_csv_show(scell(sm, first_bad, j), shown, sizeof(shown)),
					ssource(sm, first_bad), sline(sm, first_bad), n,
					max_levels);
			return dp_error_set(DP_EFORMAT,
					    "%s: column '%s' has %zu distinct values, more than the "
					    "%zu allowed for a onehot column",
					    from->name, col->name, n, max_levels);
		}
		if (rc != 0)
			return rc;
		rc = dp__schema_levels_set(&col->lv, v, n, &dup);
		if (rc != 0) {
			dp__schema_strv_free(v, n);
			return rc;
		}
		if (n == 2)
			col->kind = DP__SCHEMA_BINARY;
		if (lsm != NULL)
			return check_levels(sm, j, &col->lv, col->name,
					    "levels of the level tables");
		return 0;
	}
	col->kind = DP__SCHEMA_NUMERIC;
	moments(vals, sm->n, &col->center, &col->scale);
	if (o->clamp_z > 0.0) {
		col->has_clamp = 1;
		col->lo = -o->clamp_z;
		col->hi = o->clamp_z;
	}
	return 0;
}

static int build_target(dp_schema *s, const struct sample *sm, const struct sample *lsm,
			size_t tcol, const dp_schema_build_opts *o, double *vals)
{
	char shown[64], list[200];
	const char *dup = NULL;
	char **v = NULL;
	size_t n = 0;
	long pos;
	int rc;

	for (size_t r = 0; r < sm->n; r++) {
		if (*scell(sm, r, tcol) == '\0')
			return dp_error_set(DP_EFORMAT,
					    "%s:%zu: column '%s': empty target cell (missing value)",
					    ssource(sm, r), sline(sm, r), s->target);
	}
	if (o->task == DP_TASK_REGRESSION) {
		s->tkind = DP__SCHEMA_T_NUMERIC;
		for (size_t r = 0; r < sm->n; r++) {
			const char *c = scell(sm, r, tcol);

			if (dp_csv_parse_number(c, &vals[r]) != 0)
				return dp_error_set(DP_EFORMAT,
						    "%s:%zu: column '%s': a regression target must be "
						    "a finite number, got '%s'",
						    ssource(sm, r), sline(sm, r), s->target,
						    dp_csv_show(c, shown, sizeof(shown)));
		}
		if (o->standardize_target) {
			s->tstd = 1;
			moments(vals, sm->n, &s->tcenter, &s->tscale);
		} else {
			s->tcenter = 0.0;
			s->tscale = 1.0;
		}
		return 0;
	}
	s->tkind = DP__SCHEMA_T_BINARY;
	if (o->labels != NULL) {
		v = dp__schema_strv_dup(o->labels, o->nlabels);
		n = o->nlabels;
		if (v == NULL)
			return DP_ENOMEM;
		for (size_t i = 0; i < n; i++) {
			if (v[i][0] == '\0') {
				dp__schema_strv_free(v, n);
				return dp_error_set(DP_EINVAL, "schema: empty label in the label list");
			}
		}
	} else {
		const struct sample *from;

		rc = level_values(sm, lsm, tcol, s->target, SIZE_MAX, &v, &n, &from);
		if (rc != 0)
			return rc;
	}
	rc = dp__schema_levels_set(&s->labels, v, n, &dup);
	if (rc != 0) {
		dp__schema_strv_free(v, n);
		if (rc == DP_EFORMAT)
			rc = dp_error_set(DP_EINVAL, "schema: label '%s' listed twice",
					  dp_csv_show(dup, shown, sizeof(shown)));
		return rc;
	}
	if (o->labels != NULL || lsm != NULL) {
		rc = check_levels(sm, tcol, &s->labels, s->target,
				  o->labels ? "label list given" : "labels of the level tables");
		if (rc != 0)
			return rc;
	}
	dp_csv_format_names(list, sizeof(list), (const char *const *)s->labels.v, s->labels.n);
	pos = dp__schema_levels_find(&s->labels, o->positive);
	if (pos < 0)
		return dp_error_set(DP_EFORMAT, "%s: positive label '%s' is not among the labels of "
				    "target '%s' (%s)", sm->name,
				    dp_csv_show(o->positive, shown, sizeof(shown)), s->target, list);
	if (s->labels.n < 2)
		return dp_error_set(DP_EFORMAT,
				    "%s: target '%s' has a single label (%s); a binary target needs "
				    "two",
				    sm->name, s->target, list);
	s->positive = (size_t)pos;
	return 0;
}

/* What dp_pca_compute asks of the sample: its rows, standardised through
 * one binding per table (so that messages name the right file). */
struct pca_points {
	const struct sample *sm;
	dp_schema_bind **b;
	const char **fields;
};

static int pca_point(void *ctx, size_t i, double *z)
{
	const struct pca_points *pp = ctx;
	const dp_schema_build_pick *pk = &pp->sm->picks[i];
	const dp_csv_table *t = pp->sm->tabs[pk->table];

	for (size_t j = 0; j < t->ncols; j++)
		pp->fields[j] = dp_csv_cell(t, pk->row, j);
	return dp__schema_encode(pp->b[pk->table], pp->fields, t->line[pk->row], z);
}

/* Principal components of the standardised sample (see schema_build.h). */
static int build_pca(dp_schema *s, const struct sample *sm, size_t K)
{
	struct pca_points pp = { sm, NULL, NULL };
	dp_pca pca = { 0 };
	size_t d = s->d, m = sm->n;
	int rc = 0;

	if (K > d)
		return dp_error_set(DP_EINVAL, "schema: %zu principal components requested but there "
				    "are only %zu features", K, d);
	if (m < 2)
		return dp_error_set(DP_EFORMAT, "%s: PCA needs at least 2 sample rows, got %zu",
				    sm->name, m);
	if (d > DP_PCA_MAX_DIM || d * d > SIZE_MAX / sizeof(double) / 2)
		return dp_error_set(DP_EINVAL, "schema: too many features (%zu) for PCA", d);
	pp.b = calloc(sm->ntabs, sizeof(*pp.b));
	pp.fields = malloc(sm->ncols * sizeof(*pp.fields));
	if (pp.b == NULL || pp.fields == NULL)
		rc = DP_ENOMEM;
	for (size_t t = 0; t < sm->ntabs && rc == 0; t++)
		rc = dp_schema_bind_new(s, sm->tabs[t]->source,
					(const char *const *)sm->tabs[t]->header, sm->tabs[t]->ncols,
					&pp.b[t]);
	if (rc == 0)
		rc = dp_pca_compute(m, d, K, pca_point, &pp, &pca);
	if (rc == 0) {
		s->pmean = pca.mean;
		s->pvec = pca.vec;
		s->pvar = pca.var;
		s->k = K;
		rc = dp__schema_name_components(s);
	}
	for (size_t t = 0; pp.b != NULL && t < sm->ntabs; t++)
		dp_schema_bind_destroy(pp.b[t]);
	free(pp.b);
	free(pp.fields);
	return rc;
}

int dp_schema_build_tables(const dp_csv_table *const *tables, size_t ntables,
			   const dp_schema_build_pick *picks, size_t npicks, const dp_schema_build_opts *o,
			   dp_schema **out)
{
	struct sample sm, lsm_store;
	const struct sample *lsm = NULL;
	const dp_csv_table *t;
	dp_schema *s = NULL;
	double *vals = NULL;
	long tcol = -1;
	int rc;

	DP_REQUIRE(tables != NULL && ntables > 0 && o != NULL && out != NULL);
	rc = sample_init(&sm, tables, ntables, picks, npicks);
	if (rc != 0)
		return rc;
	memset(&lsm_store, 0, sizeof(lsm_store));
	if (o->level_tables != NULL) {
		rc = sample_init(&lsm_store, o->level_tables, o->nlevel_tables, NULL, 0);
		if (rc != 0)
			goto fail;
		lsm = &lsm_store;
		/* Same column set as the sample, so names resolve in both. */
		if (lsm->ncols != sm.ncols) {
			rc = dp_error_set(DP_EFORMAT, "%s: %zu columns, but the sample has %zu",
					  lsm->name, lsm->ncols, sm.ncols);
			goto fail;
		}
		for (size_t j = 0; j < sm.ncols; j++) {
			if (dp_csv_find((const char *const *)o->level_tables[0]->header, lsm->ncols,
					tables[0]->header[j]) < 0) {
				rc = dp_error_set(DP_EFORMAT, "%s: no column '%s' (which %s has)",
						  lsm->name, tables[0]->header[j], sm.name);
				goto fail;
			}
		}
	}
	t = tables[0];
	rc = check_opts(t, &tcol, o);
	if (rc != 0)
		goto fail;
	if (sm.n == 0) {
		rc = dp_error_set(DP_EFORMAT, "%s: the sample has no data rows", sm.name);
		goto fail;
	}
	s = calloc(1, sizeof(*s));
	vals = malloc(sm.n * sizeof(*vals));
	if (s == NULL || vals == NULL) {
		rc = DP_ENOMEM;
		goto fail;
	}
	s->target = strdup(o->target);
	s->cols = calloc(t->ncols, sizeof(*s->cols));
	if (s->target == NULL || s->cols == NULL) {
		rc = DP_ENOMEM;
		goto fail;
	}
	for (size_t j = 0; j < t->ncols; j++) {
		struct dp__schema_col *col;

		if ((long)j == tcol)
			continue;
		col = &s->cols[s->ncols++];
		col->name = strdup(t->header[j]);
		if (col->name == NULL) {
			rc = DP_ENOMEM;
			goto fail;
		}
		rc = build_column(col, &sm, lsm, j, o, vals);
		if (rc != 0)
			goto fail;
	}
	rc = build_target(s, &sm, lsm, (size_t)tcol, o, vals);
	if (rc != 0)
		goto fail;
	rc = dp__schema_layout(s);
	if (rc != 0)
		goto fail;
	if (s->d == 0) {
		rc = dp_error_set(DP_EFORMAT, "%s: no features left (every column but the target "
				  "is dropped)", sm.name);
		goto fail;
	}
	for (size_t c = 0; c < s->d; c++) {
		for (size_t k = 0; k < c; k++) {
			if (strcmp(s->znames[c], s->znames[k]) == 0) {
				char shown[64];

				rc = dp_error_set(DP_EFORMAT, "%s: two features would both be named "
						  "'%s'; rename a column", sm.name,
						  dp_csv_show(s->znames[c], shown, sizeof(shown)));
				goto fail;
			}
		}
		if (strcmp(s->znames[c], s->target) == 0) {
			rc = dp_error_set(DP_EFORMAT, "%s: feature name '%s' equals the target name",
					  sm.name, s->target);
			goto fail;
		}
	}
	if (o->pca > 0) {
		rc = build_pca(s, &sm, o->pca);
		if (rc != 0)
			goto fail;
	}
	free(vals);
	sample_free(&sm);
	sample_free(&lsm_store);
	*out = s;
	return 0;
fail:
	free(vals);
	sample_free(&sm);
	sample_free(&lsm_store);
	dp_schema_destroy(s);
	return rc;
}

int dp_schema_build(const char *sample_path, const dp_schema_build_opts *opts, dp_schema **out)
{
	const dp_csv_table *tp;
	dp_csv_table t;
	int rc;

	DP_REQUIRE(sample_path != NULL && opts != NULL && out != NULL);
	/* Empty cells are allowed through the reader so that a dropped column
	 * may have them; every used column is checked while building. */
	rc = dp_csv_table_load(&t, sample_path, DP_CSV_ALLOW_EMPTY);
	if (rc != 0)
		return rc;
	tp = &t;
	rc = dp_schema_build_tables(&tp, 1, NULL, 0, opts, out);
	dp_csv_table_free(&t);
	return rc;
}

