/* SPDX-License-Identifier: Apache-2.0 */
/* dpasync prep: raw CSV files -> a feature schema, numeric owner files and
 * the public sample the schema was built from, transformed the same way.
 *
 * Everything is read and transformed before anything is written, so a bad
 * cell anywhere leaves DIR as it was.  Row selection is deterministic for a
 * seed: the public sample (--sample-frac) and the split (--split) use two
 * independent streams of the seeded simulation generator. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/cmds.h"
#include "common/core/csv.h"
#include "common/core/dataset.h"
#include "common/core/error.h"
#include "common/core/exit.h"
#include "common/core/file.h"
#include "common/core/num.h"
#include "common/core/rng.h"
#include "common/core/schema.h"
#include "common/net/config.h"
#include "tools/lib/schema_build.h"
#include "tools/lib/simrng.h"

#define CMD_NAME "prep"
/* Stream separation for the sample draw ("SAMPLE" in ASCII). */
#define SAMPLE_STREAM UINT64_C(0x53414d504c45)

static const char prep_summary[] =
	"Turn raw CSV files (plain or .gz, header row required) into a feature schema\n"
	"DIR/schema.json and numeric owner files DIR/owner-1.csv, DIR/owner-2.csv, ...\n"
	"(or the names given with --names; header: the feature names, then the\n"
	"target).  Without --split each FILE\n"
	"becomes one owner file, in the order given; with --split N the rows of the\n"
	"single FILE are shuffled (by --seed) and dealt into N owner files whose sizes\n"
	"differ by at most one; with --split-by COL they are grouped by the value of\n"
	"COL into DIR/VALUE.csv, one owner file per value (COL is not a feature).\n"
	"Every row of the input goes to exactly one owner\n"
	"(unless --drop-missing drops it).  With --sample or --sample-frac, the sample\n"
	"the schema was built from is written too, transformed like the owner files,\n"
	"as DIR/sample.csv (for `dpasync sim --sample` and `dpasync forecast --sample`).";

static const char prep_epilog[] =
	"Features: every column but the target is used unless dropped.  A column whose\n"
	"sample values are all numbers is numeric: centred on the sample mean and\n"
	"divided by the sample standard deviation.  Any other column is one-hot, one\n"
	"0/1 feature 'COL=level' per level (sorted); a column with two levels is one\n"
	"0/1 feature 'COL=second level' (yes/no -> 'COL=yes'; with --levels the second\n"
	"as listed).  In lists, write '\\,' for a comma and '\\\\' for a backslash\n"
	"inside a name or level.\n"
	"\n"
	"The sample the schema is built from (the paper's public sample) is --sample,\n"
	"or --sample-frac of the input rows (either is written to DIR/sample.csv), or\n"
	"with neither all input rows: fine for simulations, not for a real deployment\n"
	"where owners' data must stay private (and no sample.csv then).\n"
	"\n"
	"Input rules (docs/data.md): RFC 4180 quoting, the same number of fields on every\n"
	"row, no empty cells in used columns (no imputation; --drop-missing drops such\n"
	"rows and says how many), numbers in plain decimal.\n"
	"Any problem stops prep with one line naming file:line and column; exit status 2\n"
	"for bad usage or input, 1 for a runtime failure (memory, disk).\n"
	"\n"
	"Example: dpasync prep --target price --drop depth \\\n"
	"    --ordinal 'cut=Fair,Good,Very Good,Premium,Ideal' \\\n"
	"    --sample-frac 0.1 --split 4 --seed 7 --out owners diamonds.csv";

static const char *const tasks[] = { "regression", "classification", NULL };

/* --help groups. */
static const char g_target[] = "Target and task";
static const char g_features[] = "Features (every column but the target is used unless dropped)";
static const char g_sample[] = "The sample the schema is built from (the paper's public sample)";
static const char g_out[] = "Owners and output";

struct lvspec {
	char *column;
	struct dp_config_strings levels;
	int ordered;
};

struct prep {
	char *target, *positive, *sample, *schema, *out, *split_by;
	int task;                      /* dp_task */
	bool task_set, raw_target, all_levels, force, drop_missing;
	struct dp_config_strings drop, onehot, ordinal, levels, names;
	size_t pca, max_levels, split;
	double clamp, frac;
	bool frac_set, clamp_set, pca_set, max_levels_set, split_set;
	uint64_t seed;
	struct dp_config_strings inputs;
	/* --ordinal and --levels parsed */
	struct lvspec *lv;
	size_t nlv;
};

/* 'COL=L1,L2,...' (the first unescaped '=' separates the column). */
static int parse_lvspec(struct prep *a, const char *what, const char *s, int ordered)
{
	struct lvspec *lv, spec = { 0 };
	size_t len = strlen(s), k = 0, i;
	int rc;

	spec.ordered = ordered;
	spec.column = malloc(len + 1);
	if (spec.column == NULL)
		return DP_ENOMEM;
	for (i = 0; s[i] != '\0' && s[i] != '='; i++) {
		if (s[i] == '\\' && (s[i + 1] == ',' || s[i + 1] == '\\' || s[i + 1] == '='))
			i++;
		spec.column[k++] = s[i];
	}
	spec.column[k] = '\0';
	if (s[i] != '=' || k == 0 || s[i + 1] == '\0') {
		free(spec.column);
		return dp_error_set(DP_EINVAL, "%s: expected 'COLUMN=LEVEL1,LEVEL2,...', got '%s'",
				    what, s);
	}
	rc = dp_config_split(what, s + i + 1, &spec.levels);
	if (rc == 0) {
		lv = realloc(a->lv, (a->nlv + 1) * sizeof(*lv));
		if (lv == NULL) {
			rc = DP_ENOMEM;
		} else {
			a->lv = lv;
			a->lv[a->nlv++] = spec;
			return 0;
		}
	}
	free(spec.column);
	dp_config_strings_free(&spec.levels);
	return rc;
}

/* --ordinal then --levels, each in the order given. */
static int parse_lvspecs(struct prep *a)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < a->ordinal.n; i++)
		rc = parse_lvspec(a, "--ordinal", a->ordinal.v[i], 1);
	for (size_t i = 0; rc == 0 && i < a->levels.n; i++)
		rc = parse_lvspec(a, "--levels", a->levels.v[i], 0);
	return rc;
}

static void prep_free(struct prep *a)
{
	for (size_t i = 0; i < a->nlv; i++) {
		free(a->lv[i].column);
		dp_config_strings_free(&a->lv[i].levels);
	}
	free(a->lv);
	a->lv = NULL;
	a->nlv = 0;
}

/* The error line and the exit status of rc failing in phase. */
static int fail_rc(int rc, enum dp_exit_phase phase)
{
	dp_cmd_fail(CMD_NAME, "%s", rc == DP_ENOMEM ? "out of memory" : dp_error_detail(rc));
	return dp_exit_status(rc, phase);
}

/* --names: one file stem per owner file, usable as a file name and not
 * one of prep's other outputs. */
static int check_names(const struct prep *a)
{
	size_t n = a->split_set ? a->split : a->inputs.n;

	if (a->names.n == 0)
		return 0;
	if (a->names.n != n)
		return dp_error_set(DP_EINVAL, "--names: %zu name(s) for %zu owner files", a->names.n, n);
	for (size_t i = 0; i < n; i++) {
		const char *v = a->names.v[i];

		if (strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
		    strlen(v) || v[0] == '.' || strlen(v) > 48)
			return dp_error_set(DP_EINVAL, "--names: '%s' is not a file name (letters, "
					    "digits, '.', '_', '-'; not starting with '.'; at most 48)",
					    v);
		if (strcmp(v, "schema") == 0 || strcmp(v, "sample") == 0)
			return dp_error_set(DP_EINVAL, "--names: '%s' is the name of another output", v);
		for (size_t j = 0; j < i; j++)
			if (strcmp(v, a->names.v[j]) == 0)
				return dp_error_set(DP_EINVAL, "--names: '%s' given twice", v);
	}
	return 0;
}

/* File name of owner file i (0-based): NAME.csv from --names, else
 * owner-<i+1>.csv. */
static void owner_file(const struct prep *a, size_t i, char *buf, size_t size)
{
	if (a->names.n)
		snprintf(buf, size, "%s.csv", a->names.v[i]);
	else
		snprintf(buf, size, "owner-%zu.csv", i + 1);
}

/* Cross-field rules of the options (the table checks each one alone). */
static int check_opts(void *arg)
{
	const struct prep *a = arg;
	int rc;

	if (a->split_set && a->inputs.n != 1)
		return dp_error_set(DP_EINVAL, "--split deals the rows of one FILE; %zu files given",
				    a->inputs.n);
	if (a->split_by && a->split_set)
		return dp_error_set(DP_EINVAL, "give --split N or --split-by COL, not both");
	if (a->split_by && a->inputs.n != 1)
		return dp_error_set(DP_EINVAL, "--split-by splits the rows of one FILE; %zu files "
				    "given", a->inputs.n);
	if (a->split_by && a->target && strcmp(a->split_by, a->target) == 0)
		return dp_error_set(DP_EINVAL, "--split-by: '%s' is the target", a->split_by);
	if (a->names.n && a->split_by)
		return dp_error_set(DP_EINVAL, "--names and --split-by exclude each other (--split-by "
				    "names the files after the values)");
	rc = check_names(a);
	if (rc != 0)
		return rc;
	if (a->sample != NULL && a->frac_set)
		return dp_error_set(DP_EINVAL, "--sample and --sample-frac exclude each other");
	if (a->schema != NULL) {
		const char *bad = a->task_set ? "--task" : a->positive ? "--positive" :
				  a->raw_target ? "--raw-target" : a->drop.n ? "--drop" :
				  a->ordinal.n || a->levels.n ? "--ordinal/--levels" :
				  a->onehot.n ? "--onehot" : a->max_levels_set ? "--max-levels" :
				  a->all_levels ? "--all-levels" : a->clamp_set ? "--clamp" :
				  a->pca_set ? "--pca" : a->sample ? "--sample" :
				  a->frac_set ? "--sample-frac" : NULL;

		if (bad != NULL)
			return dp_error_set(DP_EINVAL, "%s builds a schema and cannot be combined "
					    "with --schema", bad);
		return 0;
	}
	if (a->target == NULL)
		return dp_error_set(DP_EINVAL, "--target COL is required (or --schema)");
	if (a->task == DP_TASK_CLASSIFICATION && a->positive == NULL)
		return dp_error_set(DP_EINVAL, "classification needs --positive LABEL (the class "
				    "mapped to +1)");
	if (a->task == DP_TASK_REGRESSION && a->positive != NULL)
		return dp_error_set(DP_EINVAL, "--positive applies to --task classification");
	if (a->task == DP_TASK_CLASSIFICATION && a->raw_target)
		return dp_error_set(DP_EINVAL, "--raw-target applies to --task regression");
	return 0;
}

/* Fisher-Yates with the seeded generator: perm becomes a permutation of
 * 0..n-1; only the first `k` places are drawn (a partial shuffle). */
static int shuffle(size_t *perm, size_t n, size_t k, uint64_t seed)
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
static int draw_sample(const struct prep *a, const dp_csv_table *tabs, size_t ntabs,
			   dp_schema_build_pick **out, size_t *nout)
{
	size_t total = 0, m, *perm;
	dp_schema_build_pick *picks;
	int rc;

	for (size_t t = 0; t < ntabs; t++)
		total += tabs[t].nrows;
	m = (size_t)llround(a->frac * (double)total);
	if (m > total)
		m = total;
	if (m == 0)
		return dp_error_set(DP_EINVAL, "--sample-frac %g of %zu rows selects no row",
				    a->frac, total);
	perm = malloc(total * sizeof(*perm));
	picks = malloc(m * sizeof(*picks));
	if (perm == NULL || picks == NULL) {
		free(perm);
		free(picks);
		return DP_ENOMEM;
	}
	rc = shuffle(perm, total, m, a->seed ^ SAMPLE_STREAM);
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
struct work {
	dp_csv_table *tabs;            /* the inputs, a->inputs.n */
	dp_csv_table sample;           /* --sample FILE, else zeroed */
	dp_schema *s;
	double **xs, **ys;             /* each input transformed */
	dp_schema_build_pick *picks;   /* --sample-frac: the sample's rows */
	size_t npicks;
	double *sx, *sy;               /* the sample transformed (sn rows) */
	size_t sn;
	size_t dropped, total;         /* --drop-missing: input rows dropped, of total */
	size_t sdropped, stotal;       /* the same for --sample FILE */
	size_t *by;                    /* --split-by: the rows of the one input, grouped
					  by value (sorted), file order within a group */
	size_t by_col;                 /* its column */
};

static void work_free(struct work *w, size_t ninputs)
{
	for (size_t i = 0; w->tabs != NULL && i < ninputs; i++)
		dp_csv_table_free(&w->tabs[i]);
	for (size_t i = 0; w->xs != NULL && i < ninputs; i++)
		free(w->xs[i]);
	for (size_t i = 0; w->ys != NULL && i < ninputs; i++)
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

static int build_schema(const struct prep *a, struct work *w)
{
	size_t ntabs = a->inputs.n;
	dp_schema_build_opts o = { 0 };
	dp_schema_build_levels *lv = NULL;
	const dp_csv_table **tp = NULL, **ltp = NULL;
	const char **drop = NULL;
	int rc = DP_ENOMEM;

	tp = malloc((ntabs + 1) * sizeof(*tp));
	ltp = malloc((ntabs + 1) * sizeof(*ltp));
	lv = calloc(a->nlv ? a->nlv : 1, sizeof(*lv));
	if (tp == NULL || ltp == NULL || lv == NULL)
		goto out;
	for (size_t t = 0; t < ntabs; t++)
		tp[t] = ltp[t] = &w->tabs[t];
	for (size_t i = 0; i < a->nlv; i++) {
		lv[i].column = a->lv[i].column;
		lv[i].ordered = a->lv[i].ordered;
		lv[i].levels = (const char *const *)a->lv[i].levels.v;
		lv[i].nlevels = a->lv[i].levels.n;
	}
	o.target = a->target;
	o.task = a->task;
	o.positive = a->positive;
	/* The --split-by column names the owner: never a feature. */
	drop = malloc((a->drop.n + 1) * sizeof(*drop));
	if (drop == NULL)
		goto out;
	for (size_t i = 0; i < a->drop.n; i++)
		drop[i] = a->drop.v[i];
	if (a->split_by)
		drop[a->drop.n] = a->split_by;
	o.drop = drop;
	o.ndrop = a->drop.n + (a->split_by != NULL);
	o.onehot = (const char *const *)a->onehot.v;
	o.nonehot = a->onehot.n;
	o.levels = lv;
	o.nlevels = a->nlv;
	o.pca = a->pca;
	o.clamp_z = a->clamp_set ? a->clamp : 0.0;
	o.standardize_target = a->task == DP_TASK_REGRESSION && !a->raw_target;
	o.max_levels = a->max_levels;

	if (a->sample != NULL) {
		const dp_csv_table *sp = &w->sample;

		if (a->all_levels) {
			/* The sample's own levels count too. */
			ltp[ntabs] = &w->sample;
			o.level_tables = ltp;
			o.nlevel_tables = ntabs + 1;
		}
		rc = dp_schema_build_tables(&sp, 1, NULL, 0, &o, &w->s);
		goto out;
	}
	if (a->frac_set) {
		rc = draw_sample(a, w->tabs, ntabs, &w->picks, &w->npicks);
		if (rc != 0)
			goto out;
		if (a->all_levels) {
			o.level_tables = ltp;
			o.nlevel_tables = ntabs;
		}
	}
	rc = dp_schema_build_tables(tp, ntabs, w->picks, w->npicks, &o, &w->s);
out:
	free(tp);
	free(ltp);
	free(lv);
	free(drop);
	return rc;
}

/* Whether the schema reads a column: when it is being built, every column
 * but the dropped ones (the target too); when it is given, dp_schema_uses. */
static bool column_used(const struct prep *a, const dp_schema *s, const char *name)
{
	if (a->split_by != NULL && strcmp(a->split_by, name) == 0)
		return true;   /* every row needs an owner */
	if (s != NULL)
		return dp_schema_uses(s, name) != 0;
	for (size_t i = 0; i < a->drop.n; i++)
		if (strcmp(a->drop.v[i], name) == 0)
			return false;
	return true;
}

/* Rows of t with an empty cell in a used column.  Without --drop-missing
 * the first one is an error naming file:line and column; with it they are
 * taken out of t (compacted in place: t keeps its storage) and counted in
 * *dropped.  A table left without rows is an error either way. */
static int missing_cells(const struct prep *a, const dp_schema *s, dp_csv_table *t,
			 size_t *dropped)
{
	bool *used = malloc((t->ncols ? t->ncols : 1) * sizeof(*used));
	size_t keep = 0, n = t->nrows;

	if (used == NULL)
		return DP_ENOMEM;
	for (size_t j = 0; j < t->ncols; j++)
		used[j] = column_used(a, s, t->header[j]);
	for (size_t i = 0; i < n; i++) {
		char **row = &t->cells[i * t->ncols];
		size_t j = 0;

		while (j < t->ncols && !(used[j] && row[j][0] == '\0'))
			j++;
		if (j < t->ncols && !a->drop_missing) {
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
static int gather_sample(struct work *w, size_t p)
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
static int group_rows(const struct prep *a, struct work *w)
{
	const dp_csv_table *t = &w->tabs[0];
	long col = dp_csv_find((const char *const *)t->header, t->ncols, a->split_by);

	if (col < 0)
		return dp_error_set(DP_EFORMAT, "%s:1: no column '%s' (--split-by)", t->source,
				    a->split_by);
	for (size_t i = 0; i < t->nrows; i++) {
		if (!file_name_ok(dp_csv_cell(t, i, (size_t)col)))
			return dp_error_set(DP_EFORMAT, "%s:%zu: column '%s': the value cannot name "
					    "an owner file (--split-by takes 1 to 128 letters, "
					    "digits, '.', '_' or '-', not starting with '.' or "
					    "'-')", t->source, t->line[i], a->split_by);
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
static int check_split_outputs(const struct prep *a, const struct work *w)
{
	const dp_csv_table *t = &w->tabs[0];
	struct stat st;
	char path[4096];

	if (a->force)
		return 0;
	for (size_t k = 0; k < t->nrows; k++) {
		const char *v = dp_csv_cell(t, w->by[k], w->by_col);

		if (k > 0 && strcmp(v, dp_csv_cell(t, w->by[k - 1], w->by_col)) == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s.csv", a->out, v);
		if (stat(path, &st) == 0)
			return dp_error_set(DP_EINVAL, "%s exists (use --force to overwrite)", path);
	}
	return 0;
}

/* Refuse to overwrite outputs unless --force. */
static int check_outputs(const struct prep *a, size_t nowners)
{
	struct stat st;
	char path[4096], name[64];

	if (a->force)
		return 0;
	for (size_t i = 0; i <= nowners + 1; i++) {
		if (i == 0)
			snprintf(path, sizeof(path), "%s/schema.json", a->out);
		else if (i == 1)
			snprintf(path, sizeof(path), "%s/sample.csv", a->out);
		else
			owner_file(a, i - 2, name, sizeof(name));
		if (i >= 2)
			snprintf(path, sizeof(path), "%s/%s", a->out, name);
		if (stat(path, &st) == 0)
			return dp_error_set(DP_EINVAL, "%s exists (use --force to overwrite)", path);
	}
	return 0;
}

/* n transformed rows as DIR/NAME (path gets the file's path). */
static int write_rows(const struct prep *a, const dp_schema *s, const char *name, size_t n,
		      const double *x, const double *y, char *path, size_t pathsz)
{
	dp_dataset ds;
	char *target;
	int rc;

	snprintf(path, pathsz, "%s/%s", a->out, name);
	rc = dp_dataset_from_arrays(&ds, n, dp_schema_nfeatures(s), x, y,
				    dp_schema_feature_names(s));
	if (rc != 0)
		return rc;
	target = strdup(dp_schema_target(s));
	if (target == NULL) {
		dp_dataset_free(&ds);
		return DP_ENOMEM;
	}
	free(ds.target);
	ds.target = target;
	rc = dp_dataset_write_csv(&ds, path);
	dp_dataset_free(&ds);
	return rc;
}

/* Read the inputs (and --sample, and --schema), take out or refuse rows with
 * missing cells, build the schema, transform every row: nothing is written. */
static int read_and_transform(struct prep *a, struct work *w, char *msg, size_t msgsz)
{
	size_t n = a->inputs.n, p;
	int rc;

	w->tabs = calloc(n, sizeof(*w->tabs));
	w->xs = calloc(n, sizeof(*w->xs));
	w->ys = calloc(n, sizeof(*w->ys));
	if (w->tabs == NULL || w->xs == NULL || w->ys == NULL)
		return DP_ENOMEM;
	/* Empty cells pass the reader so that dropped columns may have them;
	 * missing_cells then deals with those in used columns. */
	for (size_t i = 0; i < n; i++) {
		rc = dp_csv_table_load(&w->tabs[i], a->inputs.v[i], DP_CSV_ALLOW_EMPTY);
		if (rc != 0)
			return rc;
	}
	if (a->sample != NULL) {
		rc = dp_csv_table_load(&w->sample, a->sample, DP_CSV_ALLOW_EMPTY);
		if (rc != 0)
			return rc;
	}
	if (a->schema != NULL) {
		rc = dp_schema_load(a->schema, &w->s);
		if (rc != 0)
			return rc;
		if (a->target != NULL && strcmp(a->target, dp_schema_target(w->s)) != 0)
			return dp_error_set(DP_EINVAL, "--target '%s' differs from the schema's "
					    "target '%s'", dp_csv_show(a->target, msg, 64),
					    dp_schema_target(w->s));
	}
	if (a->split_by != NULL &&
	    dp_csv_find((const char *const *)w->tabs[0].header, w->tabs[0].ncols, a->split_by) < 0)
		return dp_error_set(DP_EFORMAT, "%s:1: no column '%s' (--split-by)", w->tabs[0].source,
				    a->split_by);
	for (size_t i = 0; i < n; i++) {
		size_t d = 0;

		w->total += w->tabs[i].nrows;
		rc = missing_cells(a, w->s, &w->tabs[i], &d);
		if (rc != 0)
			return rc;
		w->dropped += d;
	}
	if (a->sample != NULL) {
		w->stotal = w->sample.nrows;
		rc = missing_cells(a, w->s, &w->sample, &w->sdropped);
		if (rc != 0)
			return rc;
	}
	if (a->schema == NULL) {
		rc = build_schema(a, w);
		if (rc != 0)
			return rc;
	}
	p = dp_schema_nfeatures(w->s);
	for (size_t i = 0; i < n; i++) {
		rc = transform(w->s, &w->tabs[i], &w->xs[i], &w->ys[i]);
		if (rc == DP_EFORMAT && a->schema == NULL && (a->sample || a->frac_set) &&
		    !a->all_levels && strstr(dp_error_detail(rc), "is not in the schema's list")) {
			/* The sample lacked a level the owners have: say how to fix it. */
			snprintf(msg, msgsz, "%s; the sample lacks it: use --all-levels, or give "
				 "the full list with --levels or --ordinal", dp_error_detail(rc));
			return dp_error_set(DP_EFORMAT, "%s", msg);
		}
		if (rc != 0)
			return rc;
	}
	if (a->sample != NULL) {
		rc = transform(w->s, &w->sample, &w->sx, &w->sy);
		if (rc != 0)
			return rc;
		w->sn = w->sample.nrows;
	} else if (w->picks != NULL) {
		rc = gather_sample(w, p);
		if (rc != 0)
			return rc;
	}
	if (a->split_by != NULL) {
		rc = group_rows(a, w);
		if (rc == 0)
			rc = check_split_outputs(a, w);
		if (rc != 0)
			return rc;
	}
	if (a->split_set && a->split > w->tabs[0].nrows)
		return dp_error_set(DP_EINVAL, "--split %zu: %s has only %zu rows%s", a->split,
				    a->inputs.v[0], w->tabs[0].nrows,
				    w->dropped ? " left after --drop-missing" : "");
	return 0;
}

/* DIR/sample.csv when this run has a sample; otherwise a sample.csv left by
 * an earlier run (only there with --force) goes, as it no longer matches
 * DIR/schema.json. */
static int write_sample(const struct prep *a, const struct work *w, char *path, size_t pathsz)
{
	int rc;

	if (w->sx == NULL) {
		snprintf(path, pathsz, "%s/sample.csv", a->out);
		if (unlink(path) == 0) {
			printf("%s: removed (from an earlier run; this one has no sample)\n", path);
			return 0;
		}
		if (errno == ENOENT)
			return 0;
		return dp_error_set(DP_EIO, "%s: cannot remove: %s", path, strerror(errno));
	}
	rc = write_rows(a, w->s, "sample.csv", w->sn, w->sx, w->sy, path, pathsz);
	if (rc == 0)
		printf("%s: %zu rows, the sample the schema was built from (%s)\n", path, w->sn,
		       a->sample ? a->sample : "--sample-frac");
	return rc;
}

/* --split-by: one owner file VALUE.csv per value, rows in file order. */
static int write_split(const struct prep *a, const struct work *w, char *path, size_t pathsz)
{
	const dp_csv_table *t = &w->tabs[0];
	size_t p = dp_schema_nfeatures(w->s), n = t->nrows, files = 0, least = n, most = 0;
	double *ox = malloc((n ? n : 1) * p * sizeof(*ox)), *oy = malloc((n ? n : 1) * sizeof(*oy));
	char name[160];
	int rc = 0;

	if (ox == NULL || oy == NULL)
		rc = DP_ENOMEM;
	for (size_t k = 0; k < n && rc == 0;) {
		const char *v = dp_csv_cell(t, w->by[k], w->by_col);
		size_t m = 0;

		for (; k < n && strcmp(dp_csv_cell(t, w->by[k], w->by_col), v) == 0; k++, m++) {
			memcpy(ox + m * p, w->xs[0] + w->by[k] * p, p * sizeof(*ox));
			oy[m] = w->ys[0][w->by[k]];
		}
		snprintf(name, sizeof(name), "%s.csv", v);
		rc = write_rows(a, w->s, name, m, ox, oy, path, pathsz);
		files++;
		least = m < least ? m : least;
		most = m > most ? m : most;
	}
	if (rc == 0)
		printf("%s: %zu owner files VALUE.csv by column '%s', %zu to %zu rows each\n", a->out,
		       files, a->split_by, least, most);
	free(ox);
	free(oy);
	return rc;
}

static int write_owners(const struct prep *a, const struct work *w, char *path, size_t pathsz)
{
	size_t p = dp_schema_nfeatures(w->s), n = w->tabs[0].nrows, *perm = NULL;
	double *ox = NULL, *oy = NULL;
	char name[64];
	int rc = 0;

	if (!a->split_set) {
		for (size_t i = 0; i < a->inputs.n && rc == 0; i++) {
			owner_file(a, i, name, sizeof(name));
			rc = write_rows(a, w->s, name, w->tabs[i].nrows, w->xs[i], w->ys[i], path,
					pathsz);
			if (rc == 0)
				printf("%s: %zu rows from %s\n", path, w->tabs[i].nrows, a->inputs.v[i]);
		}
		return rc;
	}
	perm = malloc(n * sizeof(*perm));
	ox = malloc((n / a->split + 1) * p * sizeof(*ox));
	oy = malloc((n / a->split + 1) * sizeof(*oy));
	if (perm == NULL || ox == NULL || oy == NULL)
		rc = DP_ENOMEM;
	if (rc == 0)
		rc = shuffle(perm, n, n, a->seed);
	for (size_t o = 0; o < a->split && rc == 0; o++) {
		size_t m = 0;

		/* Round-robin over the shuffled order: sizes differ by <= 1. */
		for (size_t k = o; k < n; k += a->split, m++) {
			memcpy(ox + m * p, w->xs[0] + perm[k] * p, p * sizeof(*ox));
			oy[m] = w->ys[0][perm[k]];
		}
		owner_file(a, o, name, sizeof(name));
		rc = write_rows(a, w->s, name, m, ox, oy, path, pathsz);
		if (rc == 0)
			printf("%s: %zu rows\n", path, m);
	}
	free(perm);
	free(ox);
	free(oy);
	return rc;
}

/* Everything after the options; the exit status. */
static int run(void *arg)
{
	struct prep *a = arg;
	struct work w = { 0 };
	char path[4096];
	enum dp_exit_phase phase = DP_EXIT_PHASE_LOAD;
	int rc, status;

	rc = parse_lvspecs(a);
	if (rc != 0)
		goto fail;
	if (strlen(a->out) > sizeof(path) - 64) {
		dp_cmd_fail(CMD_NAME, "--out: path too long");
		status = dp_exit_status(DP_EINVAL, DP_EXIT_PHASE_ARGS);
		goto done;
	}
	rc = check_outputs(a, a->split_by ? 0 : a->split_set ? a->split : a->inputs.n);
	if (rc == 0)
		rc = read_and_transform(a, &w, path, sizeof(path));
	if (rc != 0)
		goto fail;
	if (a->drop_missing) {
		fprintf(stderr, "dpasync %s: dropped %zu of %zu rows with a missing cell in a used "
			"column", CMD_NAME, w.dropped, w.total);
		if (a->sample != NULL)
			fprintf(stderr, "; %zu of %zu rows of the sample %s", w.sdropped, w.stotal,
				a->sample);
		fputc('\n', stderr);
	}

	/* Everything is valid: now write. */
	phase = DP_EXIT_PHASE_RUN;
	rc = dp_file_mkdir_p(a->out, 0);
	if (rc != 0)
		goto fail;
	snprintf(path, sizeof(path), "%s/schema.json", a->out);
	rc = dp_schema_save(w.s, path);
	if (rc != 0)
		goto fail;
	printf("%s: %zu features, target '%s' (%s)\n", path, dp_schema_nfeatures(w.s),
	       dp_schema_target(w.s),
	       dp_schema_target_binary(w.s) ? "binary, y in {-1,+1}" : "numeric");
	rc = write_sample(a, &w, path, sizeof(path));
	if (rc == 0 && a->split_by != NULL)
		rc = write_split(a, &w, path, sizeof(path));
	else if (rc == 0)
		rc = write_owners(a, &w, path, sizeof(path));
	if (rc != 0)
		goto fail;
	status = 0;
	goto done;
fail:
	status = fail_rc(rc, phase);
done:
	work_free(&w, a->inputs.n);
	prep_free(a);
	return status;
}

int dp_cmd_prep(int argc, char **argv)
{
	struct prep a = { 0 };
	const struct dp_config_entry entries[] = {
		{ .name = "target", DP_CFG_STRING(&a.target), .group = g_target, .metavar = "COL",
		  .help = "target column (required unless --schema)" },
		{ .name = "task", DP_CFG_ENUM(&a.task, tasks), .def = "regression",
		  .given = &a.task_set, .group = g_target, .metavar = "T",
		  .help = "regression | classification" },
		{ .name = "positive", DP_CFG_STRING(&a.positive), .group = g_target,
		  .metavar = "LABEL",
		  .help = "classification: the label mapped to y=+1;\n"
			  "every other label of the target becomes\n"
			  "y=-1 (required)" },
		{ .name = "raw-target", DP_CFG_BOOL(&a.raw_target), .group = g_target,
		  .help = "regression: keep y as is (default:\n"
			  "standardise y with the sample mean and\n"
			  "standard deviation, recorded in the schema\n"
			  "so that predictions can be mapped back)" },
		{ .name = "drop", DP_CFG_STRINGS(&a.drop), .flags = DP_CONFIG_APPEND,
		  .group = g_features, .help = "ignore these columns (their cells may be\n"
		  "empty); repeatable" },
		{ .name = "drop-missing", DP_CFG_BOOL(&a.drop_missing), .group = g_features,
		  .help = "drop every row (of the inputs and of\n"
			  "--sample) with an empty cell in a used\n"
			  "column, and say how many on stderr\n"
			  "(default: such a cell is an error)" },
		{ .name = "ordinal", DP_CFG_STRINGS(&a.ordinal),
		  .flags = DP_CONFIG_APPEND | DP_CONFIG_WHOLE, .group = g_features,
		  .metavar = "'COL=L1,L2,...'",
		  .help = "COL is ordinal with this order (index\n"
			  "0,1,... then standardised); repeatable" },
		{ .name = "levels", DP_CFG_STRINGS(&a.levels),
		  .flags = DP_CONFIG_APPEND | DP_CONFIG_WHOLE, .group = g_features,
		  .metavar = "'COL=L1,L2,...'",
		  .help = "COL is one-hot with exactly these levels\n"
			  "(two levels: one 0/1 feature, 1 for the\n"
			  "second); repeatable" },
		{ .name = "onehot", DP_CFG_STRINGS(&a.onehot), .flags = DP_CONFIG_APPEND,
		  .group = g_features, .help = "one-hot encode these columns even if they\n"
		  "look numeric; repeatable" },
		{ .name = "max-levels", DP_CFG_SIZE(&a.max_levels), .min = 1, .max = INFINITY,
		  .given = &a.max_levels_set, .group = g_features,
		  .help = "most distinct values a detected categorical\n"
			  "column may have (default 100)" },
		{ .name = "all-levels", DP_CFG_BOOL(&a.all_levels), .group = g_features,
		  .help = "take one-hot levels and class labels from\n"
			  "every input row, not only the sample\n"
			  "(otherwise a level missing from the sample is\n"
			  "an error later); this reveals which levels\n"
			  "occur in the owners' data" },
		{ .name = "clamp", DP_CFG_DOUBLE(&a.clamp), .min = 0, .max = INFINITY,
		  .min_exclusive = true, .given = &a.clamp_set, .group = g_features, .metavar = "Z",
		  .help = "clamp standardised numeric features to\n[-Z, Z]" },
		{ .name = "pca", DP_CFG_SIZE(&a.pca), .min = 1, .max = INFINITY,
		  .given = &a.pca_set, .group = g_features, .metavar = "K",
		  .help = "replace the features by their projections\n"
			  "on the top K principal components of the\n"
			  "sample (pc1..pcK)" },
		{ .name = "sample", DP_CFG_PATH(&a.sample), .group = g_sample, .metavar = "FILE",
		  .help = "a separate public CSV with the same columns" },
		{ .name = "sample-frac", DP_CFG_DOUBLE(&a.frac), .min = 0, .max = 1,
		  .min_exclusive = true, .given = &a.frac_set, .group = g_sample, .metavar = "F",
		  .help = "a random fraction of the input rows (drawn\n"
			  "by --seed; those rows stay in the owner\nfiles)" },
		{ .name = "schema", DP_CFG_PATH(&a.schema), .group = g_sample, .metavar = "SCHEMA",
		  .help = "apply an existing schema instead of building\n"
			  "one (no feature or sample options then); it\n"
			  "is copied to DIR/schema.json" },
		{ .name = "split", DP_CFG_SIZE(&a.split), .min = 1, .max = INFINITY,
		  .given = &a.split_set, .group = g_out, .metavar = "N",
		  .help = "deal the rows of the one FILE into N owner\nfiles" },
		{ .name = "split-by", DP_CFG_STRING(&a.split_by), .group = g_out, .metavar = "COL",
		  .help = "one owner file DIR/VALUE.csv per value of\n"
			  "COL in the one FILE (e.g. a user id: the\n"
			  "peer mode's agents); COL is not a feature" },
		{ .name = "seed", DP_CFG_U64(&a.seed), .def = "1", .group = g_out, .metavar = "S",
		  .help = "seed for --split and --sample-frac" },
		{ .name = "out", DP_CFG_PATH(&a.out), .flags = DP_CONFIG_REQUIRED, .group = g_out,
		  .metavar = "DIR", .help = "output directory (created if missing)" },
		{ .name = "names", DP_CFG_STRINGS(&a.names), .group = g_out, .metavar = "A,B,...",
		  .help = "owner files DIR/A.csv, DIR/B.csv, ... (one name\n"
			  "per FILE, or per --split owner) instead of\n"
			  "DIR/owner-1.csv, ..." },
		{ .name = "force", DP_CFG_BOOL(&a.force), .group = g_out,
		  .help = "overwrite DIR/schema.json, DIR/sample.csv\n"
			  "and DIR/owner-*.csv (or the --split-by\n"
			  "files) if they exist, and\n"
			  "remove a sample.csv an earlier run left when\n"
			  "this one has no sample (other files in DIR\n"
			  "are left alone)" },
		DP_CONFIG_END,
	};
	const struct dp_config_spec spec = {
		.program = "dpasync prep",
		.command = true,
		.synopsis = "--target COL --out DIR [options] FILE...\n"
			    "--schema SCHEMA --out DIR [--split N --seed S | --split-by COL] FILE...",
		.summary = prep_summary,
		.epilog = prep_epilog,
		.entries = entries,
		.validate = check_opts,
		.validate_arg = &a,
		.args = &a.inputs,
		.args_metavar = "FILE...",
		.args_min = 1,
	};

	return dp_cmd_run(&spec, argc, argv, run, &a);
}
