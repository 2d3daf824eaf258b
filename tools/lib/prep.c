/* SPDX-License-Identifier: Apache-2.0 */
/* dpasync prep's reading, schema and transform (prep.h).  Everything is
 * read and transformed before the command writes anything, so a bad cell
 * anywhere leaves its output directory as it was. */
#include "tools/lib/prep.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/rng.h"
#include "tools/lib/simrng.h"

/* Stream separation for the sample draw ("SAMPLE" in ASCII). */
#define SAMPLE_STREAM UINT64_C(0x53414d504c45)

void dp_prep_free(dp_prep *w)
{
	if (w == NULL)
		return;
	for (size_t i = 0; w->tabs != NULL && i < w->ntabs; i++)
		dp_csv_table_free(&w->tabs[i]);
	for (size_t i = 0; w->xs != NULL && i < w->ntabs; i++)
		free(w->xs[i]);
	for (size_t i = 0; w->ys != NULL && i < w->ntabs; i++)
		free(w->ys[i]);
	free(w->tabs);
	free(w->xs);
	free(w->ys);
	dp_csv_table_free(&w->sample);
	dp_schema_destroy(w->s);
	free(w->picks);
	free(w->sx);
	free(w->sy);
	free(w->by);
	memset(w, 0, sizeof(*w));
}

int dp_prep_shuffle(size_t *perm, size_t n, size_t k, uint64_t seed)
{
	dp_simrng rng;
	dp_bitsource src;

	dp_simrng_seed(&rng, seed);
	src = dp_simrng_bitsource(&rng);
	for (size_t i = 0; i < n; i++)
		perm[i] = i;
	for (size_t i = 0; i < k && i + 1 < n; i++) {
		uint64_t j;
		int rc = dp_rng_below(&src, (uint64_t)(n - i), &j);
		size_t t;

		if (rc != 0)
			return rc;
		t = perm[i];
		perm[i] = perm[i + (size_t)j];
		perm[i + (size_t)j] = t;
	}
	return 0;
}

static int pick_cmp(const void *a, const void *b)
{
	const dp_schema_build_pick *x = a, *y = b;

	if (x->table != y->table)
		return x->table < y->table ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

/* --sample-frac: round(F * total) rows of the inputs, sorted back into file
 * order. */
static int draw_sample(double frac, uint64_t seed, const dp_csv_table *tabs, size_t ntabs,
		       dp_schema_build_pick **out, size_t *nout)
{
	size_t total = 0, m, *perm;
	dp_schema_build_pick *picks;
	int rc;

	for (size_t t = 0; t < ntabs; t++)
		total += tabs[t].nrows;
	m = (size_t)llround(frac * (double)total);
	if (m > total)
		m = total;
	if (m == 0)
		return dp_error_set(DP_EINVAL, "--sample-frac %g of %zu rows selects no row",
				    frac, total);
	perm = malloc(total * sizeof(*perm));
	picks = malloc(m * sizeof(*picks));
	if (perm == NULL || picks == NULL) {
		free(perm);
		free(picks);
		return DP_ENOMEM;
	}
	rc = dp_prep_shuffle(perm, total, m, seed ^ SAMPLE_STREAM);
	if (rc == 0) {
		for (size_t i = 0; i < m; i++) {
			size_t g = perm[i], t = 0;

			while (g >= tabs[t].nrows) {
				g -= tabs[t].nrows;
				t++;
			}
			picks[i].table = t;
			picks[i].row = g;
		}
		qsort(picks, m, sizeof(*picks), pick_cmp);
		*out = picks;
		*nout = m;
		picks = NULL;
	}
	free(perm);
	free(picks);
	return rc;
}

/* What run() reads, builds and transforms before it writes anything. */

static int build_schema(const dp_prep_opts *o, dp_prep *w)
{
	size_t ntabs = w->ntabs;
	dp_schema_build_opts bo = o->build;
	const dp_csv_table **tp = NULL, **ltp = NULL;
	int rc = DP_ENOMEM;

	tp = malloc((ntabs + 1) * sizeof(*tp));
	ltp = malloc((ntabs + 1) * sizeof(*ltp));
	if (tp == NULL || ltp == NULL)
		goto out;
	for (size_t t = 0; t < ntabs; t++)
		tp[t] = ltp[t] = &w->tabs[t];
	if (o->sample != NULL) {
		const dp_csv_table *sp = &w->sample;

		if (o->all_levels) {
			/* The sample's own levels count too. */
			ltp[ntabs] = &w->sample;
			bo.level_tables = ltp;
			bo.nlevel_tables = ntabs + 1;
		}
		rc = dp_schema_build_tables(&sp, 1, NULL, 0, &bo, &w->s);
		goto out;
	}
	if (o->frac > 0) {
		rc = draw_sample(o->frac, o->seed, w->tabs, ntabs, &w->picks, &w->npicks);
		if (rc != 0)
			goto out;
		if (o->all_levels) {
			bo.level_tables = ltp;
			bo.nlevel_tables = ntabs;
		}
	}
	rc = dp_schema_build_tables(tp, ntabs, w->picks, w->npicks, &bo, &w->s);
out:
	free(tp);
	free(ltp);
	return rc;
}

/* Whether the schema reads a column: when it is being built, every column
 * but the dropped ones (the target too); when it is given, dp_schema_uses. */
static bool column_used(const dp_prep_opts *o, const dp_schema *s, const char *name)
{
	if (o->split_by != NULL && strcmp(o->split_by, name) == 0)
		return true;   /* every row needs an owner */
	if (s != NULL)
		return dp_schema_uses(s, name) != 0;
	for (size_t i = 0; i < o->build.ndrop; i++)
		if (strcmp(o->build.drop[i], name) == 0)
			return false;
	return true;
}

/* Rows of t with an empty cell in a used column.  Without --drop-missing
 * the first one is an error naming file:line and column; with it they are
 * taken out of t (compacted in place: t keeps its storage) and counted in
 * *dropped.  A table left without rows is an error either way. */
static int missing_cells(const dp_prep_opts *o, const dp_schema *s, dp_csv_table *t,
			 size_t *dropped)
{
	bool *used = malloc((t->ncols ? t->ncols : 1) * sizeof(*used));
	size_t keep = 0, n = t->nrows;

	if (used == NULL)
		return DP_ENOMEM;
	for (size_t j = 0; j < t->ncols; j++)
		used[j] = column_used(o, s, t->header[j]);
	for (size_t i = 0; i < n; i++) {
		char **row = &t->cells[i * t->ncols];
		size_t j = 0;

		while (j < t->ncols && !(used[j] && row[j][0] == '\0'))
			j++;
		if (j < t->ncols && !o->drop_missing) {
			free(used);
			return dp_error_set(DP_EFORMAT,
					    "%s:%zu: column '%s': empty cell (missing value; dpasync "
					    "does not impute: fill it, drop the column, or drop such "
					    "rows with --drop-missing)",
					    t->source, t->line[i], t->header[j]);
		}
		if (j < t->ncols)
			continue;
		if (keep != i) {
			memmove(&t->cells[keep * t->ncols], row, t->ncols * sizeof(*row));
			t->line[keep] = t->line[i];
		}
		keep++;
	}
	free(used);
	t->nrows = keep;
	*dropped = n - keep;
	if (keep == 0 && n > 0)
		return dp_error_set(DP_EFORMAT, "%s: every one of its %zu rows has a missing cell in "
				    "a used column (--drop-missing leaves none)", t->source, n);
	return 0;
}

/* One input through the schema: x (n*p) and y. */
static int transform(const dp_schema *s, const dp_csv_table *t, double **xo, double **yo)
{
	size_t p = dp_schema_nfeatures(s);
	dp_schema_bind *b = NULL;
	double *x, *y;
	int rc;

	if (t->nrows == 0)
		return dp_error_set(DP_EFORMAT, "%s: no data rows (only a header)", t->source);
	if (t->nrows > SIZE_MAX / sizeof(double) / p)
		return DP_ENOMEM;
	rc = dp_schema_bind_new(s, t->source, (const char *const *)t->header, t->ncols, &b);
	if (rc != 0)
		return rc;
	x = malloc(t->nrows * p * sizeof(*x));
	y = malloc(t->nrows * sizeof(*y));
	if (x == NULL || y == NULL) {
		rc = DP_ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < t->nrows; i++) {
		rc = dp_schema_bind_row(b, (const char *const *)&t->cells[i * t->ncols], t->line[i],
					x + i * p, y + i);
		if (rc != 0)
			goto fail;
	}
	dp_schema_bind_destroy(b);
	*xo = x;
	*yo = y;
	return 0;
fail:
	dp_schema_bind_destroy(b);
	free(x);
	free(y);
	return rc;
}

/* --sample-frac: the picked rows of the transformed inputs, in file order. */
static int gather_sample(dp_prep *w, size_t p)
{
	w->sx = malloc((w->npicks ? w->npicks : 1) * p * sizeof(*w->sx));
	w->sy = malloc((w->npicks ? w->npicks : 1) * sizeof(*w->sy));
	if (w->sx == NULL || w->sy == NULL)
		return DP_ENOMEM;
	for (size_t i = 0; i < w->npicks; i++) {
		const dp_schema_build_pick *pk = &w->picks[i];

		memcpy(w->sx + i * p, w->xs[pk->table] + pk->row * p, p * sizeof(*w->sx));
		w->sy[i] = w->ys[pk->table][pk->row];
	}
	w->sn = w->npicks;
	return 0;
}

/* --split-by: a value names its owner file VALUE.csv, so it must be a
 * plain file name.  The detail never shows the value (docs/privacy.md
 * §8: an error about a cell names its place, not its content). */
static bool file_name_ok(const char *v)
{
	size_t n = strlen(v);

	if (n == 0 || n > 128 || v[0] == '.' || v[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = v[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static const dp_csv_table *by_table;
static size_t by_column;

static int by_cmp(const void *x, const void *y)
{
	size_t a = *(const size_t *)x, b = *(const size_t *)y;
	int c = strcmp(dp_csv_cell(by_table, a, by_column), dp_csv_cell(by_table, b, by_column));

	if (c != 0)
		return c;
	return a < b ? -1 : a > b;
}

/* Group the rows of the one input by the --split-by column (w->by). */
static int group_rows(const dp_prep_opts *o, dp_prep *w)
{
	const dp_csv_table *t = &w->tabs[0];
	long col = dp_csv_find((const char *const *)t->header, t->ncols, o->split_by);

	if (col < 0)
		return dp_error_set(DP_EFORMAT, "%s:1: no column '%s' (--split-by)", t->source,
				    o->split_by);
	for (size_t i = 0; i < t->nrows; i++) {
		if (!file_name_ok(dp_csv_cell(t, i, (size_t)col)))
			return dp_error_set(DP_EFORMAT, "%s:%zu: column '%s': the value cannot name "
					    "an owner file (--split-by takes 1 to 128 letters, "
					    "digits, '.', '_' or '-', not starting with '.' or "
					    "'-')", t->source, t->line[i], o->split_by);
	}
	w->by = malloc((t->nrows ? t->nrows : 1) * sizeof(size_t));
	if (w->by == NULL)
		return DP_ENOMEM;
	for (size_t i = 0; i < t->nrows; i++)
		w->by[i] = i;
	by_table = t;
	by_column = (size_t)col;
	qsort(w->by, t->nrows, sizeof(size_t), by_cmp);
	by_table = NULL;
	w->by_col = (size_t)col;
	return 0;
}

/* --split-by without --force: no VALUE.csv may exist yet. */

/* Read the inputs (and --sample, and --schema), take out or refuse rows with
 * missing cells, build the schema, transform every row: nothing is written. */
int dp_prep_run(dp_prep *w, const dp_prep_opts *o)
{
	size_t n, p;
	char msg[4096];
	int rc;

	DP_REQUIRE(w != NULL && o != NULL && o->ninputs > 0);
	memset(w, 0, sizeof(*w));
	n = o->ninputs;
	w->ntabs = n;
	w->tabs = calloc(n, sizeof(*w->tabs));
	w->xs = calloc(n, sizeof(*w->xs));
	w->ys = calloc(n, sizeof(*w->ys));
	if (w->tabs == NULL || w->xs == NULL || w->ys == NULL)
		return DP_ENOMEM;
	/* Empty cells pass the reader so that dropped columns may have them;
	 * missing_cells then deals with those in used columns. */
	for (size_t i = 0; i < n; i++) {
		rc = dp_csv_table_load(&w->tabs[i], o->inputs[i], DP_CSV_ALLOW_EMPTY);
		if (rc != 0)
			return rc;
	}
	if (o->sample != NULL) {
		rc = dp_csv_table_load(&w->sample, o->sample, DP_CSV_ALLOW_EMPTY);
		if (rc != 0)
			return rc;
	}
	if (o->schema != NULL) {
		rc = dp_schema_load(o->schema, &w->s);
		if (rc != 0)
			return rc;
		if (o->target != NULL && strcmp(o->target, dp_schema_target(w->s)) != 0)
			return dp_error_set(DP_EINVAL, "--target '%s' differs from the schema's "
					    "target '%s'", dp_csv_show(o->target, msg, 64),
					    dp_schema_target(w->s));
	}
	if (o->split_by != NULL &&
	    dp_csv_find((const char *const *)w->tabs[0].header, w->tabs[0].ncols, o->split_by) < 0)
		return dp_error_set(DP_EFORMAT, "%s:1: no column '%s' (--split-by)", w->tabs[0].source,
				    o->split_by);
	for (size_t i = 0; i < n; i++) {
		size_t d = 0;

		w->total += w->tabs[i].nrows;
		rc = missing_cells(o, w->s, &w->tabs[i], &d);
		if (rc != 0)
			return rc;
		w->dropped += d;
	}
	if (o->sample != NULL) {
		w->stotal = w->sample.nrows;
		rc = missing_cells(o, w->s, &w->sample, &w->sdropped);
		if (rc != 0)
			return rc;
	}
	if (o->schema == NULL) {
		rc = build_schema(o, w);
		if (rc != 0)
			return rc;
	}
	p = dp_schema_nfeatures(w->s);
	for (size_t i = 0; i < n; i++) {
		rc = transform(w->s, &w->tabs[i], &w->xs[i], &w->ys[i]);
		if (rc == DP_EFORMAT && o->schema == NULL && (o->sample || o->frac > 0) &&
		    !o->all_levels && strstr(dp_error_detail(rc), "is not in the schema's list")) {
			/* The sample lacked a level the owners have: say how to fix it. */
			snprintf(msg, sizeof(msg), "%s; the sample lacks it: use --all-levels, or give "
				 "the full list with --levels or --ordinal", dp_error_detail(rc));
			return dp_error_set(DP_EFORMAT, "%s", msg);
		}
		if (rc != 0)
			return rc;
	}
	if (o->sample != NULL) {
		rc = transform(w->s, &w->sample, &w->sx, &w->sy);
		if (rc != 0)
			return rc;
		w->sn = w->sample.nrows;
	} else if (w->picks != NULL) {
		rc = gather_sample(w, p);
		if (rc != 0)
			return rc;
	}
	if (o->split_by != NULL) {
		rc = group_rows(o, w);
		if (rc != 0)
			return rc;
	}
	if (o->split > 0 && o->split > w->tabs[0].nrows)
		return dp_error_set(DP_EINVAL, "--split %zu: %s has only %zu rows%s", o->split,
				    o->inputs[0], w->tabs[0].nrows,
				    w->dropped ? " left after --drop-missing" : "");
	return 0;
}
