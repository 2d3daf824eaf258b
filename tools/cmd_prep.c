/* SPDX-License-Identifier: Apache-2.0 */
/* dpasync prep: raw CSV files -> a feature schema, numeric owner files and
 * the public sample the schema was built from, transformed the same way.
 *
 * This file holds the options and the outputs; what is computed before
 * anything is written (reading, the schema, the transform, the sample and
 * the grouping) is tools/lib/prep.h, so a bad cell anywhere leaves DIR as
 * it was. */
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
#include "common/core/schema.h"
#include "common/net/config.h"
#include "tools/lib/prep.h"
#include "tools/lib/schema_build.h"

#define CMD_NAME "prep"

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
	/* What the pipeline is given (tools/lib/prep.h): lv as the schema
	 * builder's level lists, and --drop with the --split-by column. */
	dp_schema_build_levels *blv;
	const char **drop_all;
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
	free(a->blv);
	free(a->drop_all);
	a->blv = NULL;
	a->drop_all = NULL;
}

/* The options as the pipeline takes them (a->blv and a->drop_all hold its
 * arrays).  0 or DP_ENOMEM. */
static int pipeline_opts(struct prep *a, dp_prep_opts *o)
{
	dp_schema_build_opts *b = &o->build;

	a->blv = calloc(a->nlv ? a->nlv : 1, sizeof(*a->blv));
	a->drop_all = malloc((a->drop.n + 1) * sizeof(*a->drop_all));
	if (a->blv == NULL || a->drop_all == NULL)
		return DP_ENOMEM;
	for (size_t i = 0; i < a->nlv; i++) {
		a->blv[i].column = a->lv[i].column;
		a->blv[i].ordered = a->lv[i].ordered;
		a->blv[i].levels = (const char *const *)a->lv[i].levels.v;
		a->blv[i].nlevels = a->lv[i].levels.n;
	}
	/* The --split-by column names the owner: never a feature. */
	for (size_t i = 0; i < a->drop.n; i++)
		a->drop_all[i] = a->drop.v[i];
	if (a->split_by)
		a->drop_all[a->drop.n] = a->split_by;
	*o = (dp_prep_opts){
		.inputs = (const char *const *)a->inputs.v, .ninputs = a->inputs.n,
		.sample = a->sample, .frac = a->frac_set ? a->frac : 0, .seed = a->seed,
		.schema = a->schema, .target = a->target, .all_levels = a->all_levels,
		.drop_missing = a->drop_missing, .split_by = a->split_by,
		.split = a->split_set ? a->split : 0,
	};
	b->target = a->target;
	b->task = a->task;
	b->positive = a->positive;
	b->drop = a->drop_all;
	b->ndrop = a->drop.n + (a->split_by != NULL);
	b->onehot = (const char *const *)a->onehot.v;
	b->nonehot = a->onehot.n;
	b->levels = a->blv;
	b->nlevels = a->nlv;
	b->pca = a->pca;
	b->clamp_z = a->clamp_set ? a->clamp : 0.0;
	b->standardize_target = a->task == DP_TASK_REGRESSION && !a->raw_target;
	b->max_levels = a->max_levels;
	return 0;
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

/* --split-by without --force: no VALUE.csv may exist yet. */
static int check_split_outputs(const struct prep *a, const dp_prep *w)
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

/* DIR/sample.csv when this run has a sample; otherwise a sample.csv left by
 * an earlier run (only there with --force) goes, as it no longer matches
 * DIR/schema.json. */
static int write_sample(const struct prep *a, const dp_prep *w, char *path, size_t pathsz)
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
static int write_split(const struct prep *a, const dp_prep *w, char *path, size_t pathsz)
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

static int write_owners(const struct prep *a, const dp_prep *w, char *path, size_t pathsz)
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
		rc = dp_prep_shuffle(perm, n, n, a->seed);
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
	dp_prep w = { 0 };
	dp_prep_opts po;
	char path[4096];
	enum dp_exit_phase phase = DP_EXIT_PHASE_LOAD;
	int rc, status;

	rc = parse_lvspecs(a);
	if (rc == 0)
		rc = pipeline_opts(a, &po);
	if (rc != 0)
		goto fail;
	if (strlen(a->out) > sizeof(path) - 64) {
		dp_cmd_fail(CMD_NAME, "--out: path too long");
		status = dp_exit_status(DP_EINVAL, DP_EXIT_PHASE_ARGS);
		goto done;
	}
	rc = check_outputs(a, a->split_by ? 0 : a->split_set ? a->split : a->inputs.n);
	if (rc == 0)
		rc = dp_prep_run(&w, &po);
	if (rc == 0 && a->split_by != NULL)
		rc = check_split_outputs(a, &w);
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
	dp_prep_free(&w);
	prep_free(a);
	return status;
}

int dp_cmd_prep(int argc, char **argv)
{
	struct prep a = { 0 };
	const struct dp_config_entry entries[] = {
		{ .name = "target", DP_CFG_STRING(&a.target), .group = g_target, .metavar = "COL",
		  .help = "target column (required unless --schema)" },
		{ .name = "task", DP_CFG_ENUM(&a.task, dp_schema_build_tasks), .def = "regression",
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
