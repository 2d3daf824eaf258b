/* dpasync prep: raw CSV files -> a feature schema and numeric owner files.
 *
 * Everything is read and transformed before anything is written, so a bad
 * cell anywhere leaves DIR as it was.  Row selection is deterministic for a
 * seed: the public sample (--sample-frac) and the split (--split) use two
 * independent streams of the seeded simulation generator. */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/cmds.h"
#include "common/core/csv.h"
#include "common/core/dataset.h"
#include "common/core/error.h"
#include "common/core/file.h"
#include "common/core/num.h"
#include "common/core/rng.h"
#include "common/core/schema.h"
#include "tools/lib/schema_build.h"
#include "tools/lib/simrng.h"

#define DP__PREP "prep"
/* Stream separation for the sample draw ("SAMPLE" in ASCII). */
#define DP__SAMPLE_STREAM UINT64_C(0x53414d504c45)

static const char dp__prep_usage[] =
	"usage: dpasync prep --target COL --out DIR [options] FILE...\n"
	"       dpasync prep --schema SCHEMA --out DIR [--split N --seed S] FILE...\n"
	"\n"
	"Turn raw CSV files (plain or .gz, header row required) into a feature schema\n"
	"DIR/schema.json and numeric owner files DIR/owner-1.csv, DIR/owner-2.csv, ...\n"
	"(header: the feature names, then the target).  Without --split each FILE\n"
	"becomes one owner file, in the order given; with --split N the rows of the\n"
	"single FILE are shuffled (by --seed) and dealt into N owner files whose sizes\n"
	"differ by at most one.  Every row of the input goes to exactly one owner.\n"
	"\n"
	"Target and task:\n"
	"  --target COL          target column (required unless --schema)\n"
	"  --task T              regression (default) | classification\n"
	"  --positive LABEL      classification: the label mapped to y=+1; every other\n"
	"                        label of the target becomes y=-1 (required)\n"
	"  --raw-target          regression: keep y as is (default: standardise y with\n"
	"                        the sample mean and standard deviation, recorded in the\n"
	"                        schema so that predictions can be mapped back)\n"
	"\n"
	"Features (every column but the target is used unless dropped):\n"
	"  --drop A,B,...        ignore these columns (their cells may be empty)\n"
	"  --ordinal 'COL=L1,L2,...'\n"
	"                        COL is ordinal with this order (index 0,1,... then\n"
	"                        standardised); repeatable\n"
	"  --levels 'COL=L1,L2,...'\n"
	"                        COL is one-hot with exactly these levels; repeatable\n"
	"  --onehot A,B,...      one-hot encode these columns even if they look numeric\n"
	"  --max-levels N        most distinct values a detected categorical column may\n"
	"                        have (default 100)\n"
	"  --all-levels          take one-hot levels and class labels from every input\n"
	"                        row, not only the sample (otherwise a level missing\n"
	"                        from the sample is an error later); this reveals which\n"
	"                        levels occur in the owners' data\n"
	"  --clamp Z             clamp standardised numeric features to [-Z, Z]\n"
	"  --pca K               replace the features by their projections on the top K\n"
	"                        principal components of the sample (pc1..pcK)\n"
	"  A column whose sample values are all numbers is numeric: centred on the\n"
	"  sample mean and divided by the sample standard deviation.  Any other column\n"
	"  is one-hot, one 0/1 feature 'COL=level' per level (sorted).  In lists, write\n"
	"  '\\,' for a comma and '\\\\' for a backslash inside a name or level.\n"
	"\n"
	"The sample the schema is built from (the paper's public sample):\n"
	"  --sample FILE         a separate public CSV with the same columns\n"
	"  --sample-frac F       a random fraction 0 < F <= 1 of the input rows (drawn\n"
	"                        by --seed; those rows stay in the owner files)\n"
	"  (neither)             all input rows: fine for simulations, not for a real\n"
	"                        deployment where owners' data must stay private\n"
	"  --schema SCHEMA       apply an existing schema instead of building one\n"
	"                        (no feature or sample options then); it is copied to\n"
	"                        DIR/schema.json\n"
	"\n"
	"Owners and output:\n"
	"  --split N             deal the rows of the one FILE into N owner files\n"
	"  --seed S              seed for --split and --sample-frac (default 1)\n"
	"  --out DIR             output directory (created if missing; required)\n"
	"  --force               overwrite DIR/schema.json and DIR/owner-*.csv if they\n"
	"                        exist (other files in DIR are left alone)\n"
	"  --help                this text\n"
	"\n"
	"Input rules (docs/data.md): RFC 4180 quoting, the same number of fields on every\n"
	"row, no empty cells in used columns (no imputation), numbers in plain decimal.\n"
	"Any problem stops prep with one line naming file:line and column; exit status 2\n"
	"for bad usage or input, 1 for a runtime failure (memory, disk).\n"
	"\n"
	"Example: dpasync prep --target price --drop depth \\\n"
	"    --ordinal 'cut=Fair,Good,Very Good,Premium,Ideal' \\\n"
	"    --sample-frac 0.1 --split 4 --seed 7 --out owners diamonds.csv\n";

struct dp__strlist {
	char **v;
	size_t n;
};

struct dp__lvspec {
	char *column;
	struct dp__strlist levels;
	int ordered;
};

struct dp__prep {
	const char *target, *positive, *sample, *schema, *out;
	int task, task_set, raw_target, all_levels, force;
	struct dp__strlist drop, onehot;
	struct dp__lvspec *lv;
	size_t nlv;
	size_t pca, max_levels, split;
	double clamp, frac;
	int frac_set, clamp_set, pca_set, max_levels_set, split_set;
	uint64_t seed;
	char **inputs;
	size_t ninputs;
};

static void dp__strlist_free(struct dp__strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* Append the items of a comma list ("\," and "\\" escaped) to `l`.  Empty
 * items are refused: they would only be typos. */
static int dp__split_list(const char *what, const char *s, struct dp__strlist *l)
{
	size_t len = strlen(s);
	char *item = malloc(len + 1);
	size_t k = 0;

	if (item == NULL)
		return DP_ENOMEM;
	for (size_t i = 0;; i++) {
		char c = s[i];

		if (c == '\\' && (s[i + 1] == ',' || s[i + 1] == '\\' || s[i + 1] == '=')) {
			item[k++] = s[++i];
			continue;
		}
		if (c == ',' || c == '\0') {
			char **v;

			item[k] = '\0';
			if (k == 0) {
				free(item);
				return dp_error_set(DP_EINVAL, "%s: empty item in '%s'", what, s);
			}
			v = realloc(l->v, (l->n + 1) * sizeof(*v));
			if (v == NULL) {
				free(item);
				return DP_ENOMEM;
			}
			l->v = v;
			l->v[l->n] = strdup(item);
			if (l->v[l->n] == NULL) {
				free(item);
				return DP_ENOMEM;
			}
			l->n++;
			k = 0;
			if (c == '\0')
				break;
			continue;
		}
		item[k++] = c;
	}
	free(item);
	return 0;
}

/* 'COL=L1,L2,...' (the first unescaped '=' separates the column). */
static int dp__parse_lvspec(struct dp__prep *a, const char *what, const char *s, int ordered)
{
	struct dp__lvspec *lv, spec = { 0 };
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
	rc = dp__split_list(what, s + i + 1, &spec.levels);
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
	dp__strlist_free(&spec.levels);
	return rc;
}

static void dp__prep_free(struct dp__prep *a)
{
	dp__strlist_free(&a->drop);
	dp__strlist_free(&a->onehot);
	for (size_t i = 0; i < a->nlv; i++) {
		free(a->lv[i].column);
		dp__strlist_free(&a->lv[i].levels);
	}
	free(a->lv);
}

/* Exit status for a library error: 1 when the machine failed us, 2 when the
 * input or the request is at fault. */
static int dp__status(int rc)
{
	return rc == DP_ENOMEM || rc == DP_EIO || rc == DP_ERNG ? 1 : 2;
}

static int dp__fail_rc(int rc)
{
	dp_tool_fail(DP__PREP, "%s", rc == DP_ENOMEM ? "out of memory" : dp_error_detail(rc));
	return dp__status(rc);
}

/* Parse argv into `a`; 0, or the exit status (after a message), or -1 for
 * --help (printed). */
static int dp__prep_args(struct dp__prep *a, int argc, char **argv)
{
	enum {
		O_TARGET = 256, O_TASK, O_POSITIVE, O_RAW, O_DROP, O_ORDINAL, O_LEVELS, O_ONEHOT,
		O_MAXLV, O_ALLLV, O_CLAMP, O_PCA, O_SAMPLE, O_FRAC, O_SCHEMA, O_SPLIT, O_SEED,
		O_OUT, O_FORCE,
	};
	static const struct option opts[] = {
		{ "target", required_argument, NULL, O_TARGET },
		{ "task", required_argument, NULL, O_TASK },
		{ "positive", required_argument, NULL, O_POSITIVE },
		{ "raw-target", no_argument, NULL, O_RAW },
		{ "drop", required_argument, NULL, O_DROP },
		{ "ordinal", required_argument, NULL, O_ORDINAL },
		{ "levels", required_argument, NULL, O_LEVELS },
		{ "onehot", required_argument, NULL, O_ONEHOT },
		{ "max-levels", required_argument, NULL, O_MAXLV },
		{ "all-levels", no_argument, NULL, O_ALLLV },
		{ "clamp", required_argument, NULL, O_CLAMP },
		{ "pca", required_argument, NULL, O_PCA },
		{ "sample", required_argument, NULL, O_SAMPLE },
		{ "sample-frac", required_argument, NULL, O_FRAC },
		{ "schema", required_argument, NULL, O_SCHEMA },
		{ "split", required_argument, NULL, O_SPLIT },
		{ "seed", required_argument, NULL, O_SEED },
		{ "out", required_argument, NULL, O_OUT },
		{ "force", no_argument, NULL, O_FORCE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	a->seed = 1;
	optind = 1;
	opterr = 0; /* our own one-line message instead of getopt's */
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		int err = 0;

		switch (c) {
		case O_TARGET: a->target = optarg; break;
		case O_TASK:
			a->task_set = 1;
			if (strcmp(optarg, "regression") == 0)
				a->task = DP_TASK_REGRESSION;
			else if (strcmp(optarg, "classification") == 0)
				a->task = DP_TASK_CLASSIFICATION;
			else
				err = dp_error_set(DP_EINVAL, "--task: expected regression or "
						   "classification, got '%s'", optarg);
			break;
		case O_POSITIVE: a->positive = optarg; break;
		case O_RAW: a->raw_target = 1; break;
		case O_DROP: err = dp__split_list("--drop", optarg, &a->drop); break;
		case O_ORDINAL: err = dp__parse_lvspec(a, "--ordinal", optarg, 1); break;
		case O_LEVELS: err = dp__parse_lvspec(a, "--levels", optarg, 0); break;
		case O_ONEHOT: err = dp__split_list("--onehot", optarg, &a->onehot); break;
		case O_MAXLV:
			a->max_levels_set = 1;
			err = dp_num_parse_size("--max-levels", optarg, &a->max_levels);
			if (err == 0 && a->max_levels == 0)
				err = dp_error_set(DP_EINVAL, "--max-levels must be >= 1");
			break;
		case O_ALLLV: a->all_levels = 1; break;
		case O_CLAMP:
			a->clamp_set = 1;
			err = dp_num_parse_double("--clamp", optarg, 0, &a->clamp);
			if (err == 0 && !(a->clamp > 0.0))
				err = dp_error_set(DP_EINVAL, "--clamp must be > 0, got '%s'", optarg);
			break;
		case O_PCA:
			a->pca_set = 1;
			err = dp_num_parse_size("--pca", optarg, &a->pca);
			if (err == 0 && a->pca == 0)
				err = dp_error_set(DP_EINVAL, "--pca must be >= 1");
			break;
		case O_SAMPLE: a->sample = optarg; break;
		case O_FRAC:
			a->frac_set = 1;
			err = dp_num_parse_double("--sample-frac", optarg, 0, &a->frac);
			if (err == 0 && !(a->frac > 0.0 && a->frac <= 1.0))
				err = dp_error_set(DP_EINVAL, "--sample-frac must be in (0, 1], got '%s'",
						   optarg);
			break;
		case O_SCHEMA: a->schema = optarg; break;
		case O_SPLIT:
			a->split_set = 1;
			err = dp_num_parse_size("--split", optarg, &a->split);
			if (err == 0 && a->split == 0)
				err = dp_error_set(DP_EINVAL, "--split must be >= 1");
			break;
		case O_SEED: err = dp_num_parse_u64("--seed", optarg, &a->seed); break;
		case O_OUT: a->out = optarg; break;
		case O_FORCE: a->force = 1; break;
		case 'h': fputs(dp__prep_usage, stdout); return -1;
		case ':':
			dp_tool_fail(DP__PREP, "%s needs a value (try dpasync prep --help)",
				     argv[optind - 1]);
			return 2;
		default:
			dp_tool_fail(DP__PREP, "unknown option '%s' (try dpasync prep --help)",
				     argv[optind - 1]);
			return 2;
		}
		if (err != 0)
			return dp__fail_rc(err);
	}
	a->inputs = argv + optind;
	a->ninputs = (size_t)(argc - optind);

	if (a->ninputs == 0) {
		dp_tool_fail(DP__PREP, "no input FILE (try dpasync prep --help)");
		return 2;
	}
	if (a->out == NULL) {
		dp_tool_fail(DP__PREP, "--out DIR is required");
		return 2;
	}
	if (a->split_set && a->ninputs != 1) {
		dp_tool_fail(DP__PREP, "--split deals the rows of one FILE; %zu files given",
			     a->ninputs);
		return 2;
	}
	if (a->sample != NULL && a->frac_set) {
		dp_tool_fail(DP__PREP, "--sample and --sample-frac exclude each other");
		return 2;
	}
	if (a->schema != NULL) {
		const char *bad = a->task_set ? "--task" : a->positive ? "--positive" :
				  a->raw_target ? "--raw-target" : a->drop.n ? "--drop" :
				  a->nlv ? "--ordinal/--levels" : a->onehot.n ? "--onehot" :
				  a->max_levels_set ? "--max-levels" : a->all_levels ? "--all-levels" :
				  a->clamp_set ? "--clamp" : a->pca_set ? "--pca" :
				  a->sample ? "--sample" : a->frac_set ? "--sample-frac" : NULL;

		if (bad != NULL) {
			dp_tool_fail(DP__PREP, "%s builds a schema and cannot be combined with "
				     "--schema", bad);
			return 2;
		}
		return 0;
	}
	if (a->target == NULL) {
		dp_tool_fail(DP__PREP, "--target COL is required (or --schema)");
		return 2;
	}
	if (a->task == DP_TASK_CLASSIFICATION && a->positive == NULL) {
		dp_tool_fail(DP__PREP, "classification needs --positive LABEL (the class mapped "
			     "to +1)");
		return 2;
	}
	if (a->task == DP_TASK_REGRESSION && a->positive != NULL) {
		dp_tool_fail(DP__PREP, "--positive applies to --task classification");
		return 2;
	}
	if (a->task == DP_TASK_CLASSIFICATION && a->raw_target) {
		dp_tool_fail(DP__PREP, "--raw-target applies to --task regression");
		return 2;
	}
	return 0;
}

/* Fisher-Yates with the seeded generator: perm becomes a permutation of
 * 0..n-1; only the first `k` places are drawn (a partial shuffle). */
static int dp__shuffle(size_t *perm, size_t n, size_t k, uint64_t seed)
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

static int dp__pick_cmp(const void *a, const void *b)
{
	const dp_schema_build_pick *x = a, *y = b;

	if (x->table != y->table)
		return x->table < y->table ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

/* --sample-frac: round(F * total) rows of the inputs, sorted back into file
 * order. */
static int dp__draw_sample(const struct dp__prep *a, const dp_csv_table *tabs, size_t ntabs,
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
	rc = dp__shuffle(perm, total, m, a->seed ^ DP__SAMPLE_STREAM);
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
		qsort(picks, m, sizeof(*picks), dp__pick_cmp);
		*out = picks;
		*nout = m;
		picks = NULL;
	}
	free(perm);
	free(picks);
	return rc;
}

static int dp__build_schema(const struct dp__prep *a, const dp_csv_table *tabs, size_t ntabs,
			    dp_schema **out)
{
	dp_schema_build_opts o = { 0 };
	dp_schema_build_levels *lv = NULL;
	const dp_csv_table **tp = NULL, **ltp = NULL;
	dp_csv_table sample = { 0 };
	dp_schema_build_pick *picks = NULL;
	size_t npicks = 0;
	int rc = DP_ENOMEM;

	tp = malloc((ntabs + 1) * sizeof(*tp));
	ltp = malloc((ntabs + 1) * sizeof(*ltp));
	lv = calloc(a->nlv ? a->nlv : 1, sizeof(*lv));
	if (tp == NULL || ltp == NULL || lv == NULL)
		goto out;
	for (size_t t = 0; t < ntabs; t++)
		tp[t] = ltp[t] = &tabs[t];
	for (size_t i = 0; i < a->nlv; i++) {
		lv[i].column = a->lv[i].column;
		lv[i].ordered = a->lv[i].ordered;
		lv[i].levels = (const char *const *)a->lv[i].levels.v;
		lv[i].nlevels = a->lv[i].levels.n;
	}
	o.target = a->target;
	o.task = a->task;
	o.positive = a->positive;
	o.drop = (const char *const *)a->drop.v;
	o.ndrop = a->drop.n;
	o.onehot = (const char *const *)a->onehot.v;
	o.nonehot = a->onehot.n;
	o.levels = lv;
	o.nlevels = a->nlv;
	o.pca = a->pca;
	o.clamp_z = a->clamp_set ? a->clamp : 0.0;
	o.standardize_target = a->task == DP_TASK_REGRESSION && !a->raw_target;
	o.max_levels = a->max_levels;

	if (a->sample != NULL) {
		rc = dp_csv_table_load(&sample, a->sample, DP_CSV_ALLOW_EMPTY);
		if (rc != 0)
			goto out;
		if (a->all_levels) {
			/* The sample's own levels count too. */
			ltp[ntabs] = &sample;
			o.level_tables = ltp;
			o.nlevel_tables = ntabs + 1;
		}
		const dp_csv_table *sp = &sample;

		rc = dp_schema_build_tables(&sp, 1, NULL, 0, &o, out);
		goto out;
	}
	if (a->frac_set) {
		rc = dp__draw_sample(a, tabs, ntabs, &picks, &npicks);
		if (rc != 0)
			goto out;
		if (a->all_levels) {
			o.level_tables = ltp;
			o.nlevel_tables = ntabs;
		}
	}
	rc = dp_schema_build_tables(tp, ntabs, picks, npicks, &o, out);
out:
	dp_csv_table_free(&sample);
	free(picks);
	free(tp);
	free(ltp);
	free(lv);
	return rc;
}

/* One input through the schema: x (n*p) and y. */
static int dp__transform(const dp_schema *s, const dp_csv_table *t, double **xo, double **yo)
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

/* Refuse to overwrite outputs unless --force. */
static int dp__check_outputs(const struct dp__prep *a, size_t nowners)
{
	struct stat st;
	char path[4096];

	if (a->force)
		return 0;
	for (size_t i = 0; i <= nowners; i++) {
		if (i == 0)
			snprintf(path, sizeof(path), "%s/schema.json", a->out);
		else
			snprintf(path, sizeof(path), "%s/owner-%zu.csv", a->out, i);
		if (stat(path, &st) == 0)
			return dp_error_set(DP_EINVAL, "%s exists (use --force to overwrite)", path);
	}
	return 0;
}

static int dp__write_owner(const struct dp__prep *a, const dp_schema *s, size_t idx, size_t n,
			   const double *x, const double *y, char *path, size_t pathsz)
{
	dp_dataset ds;
	char *target;
	int rc;

	snprintf(path, pathsz, "%s/owner-%zu.csv", a->out, idx);
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

int dp_cmd_prep(int argc, char **argv)
{
	struct dp__prep a = { 0 };
	dp_csv_table *tabs = NULL;
	dp_schema *s = NULL;
	double **xs = NULL, **ys = NULL, *ox = NULL, *oy = NULL;
	size_t *perm = NULL, nowners, p, total = 0;
	char path[4096];
	int rc, status;

	status = dp__prep_args(&a, argc, argv);
	if (status != 0) {
		dp__prep_free(&a);
		return status < 0 ? 0 : status;
	}
	nowners = a.split_set ? a.split : a.ninputs;
	if (strlen(a.out) > sizeof(path) - 64) {
		dp_tool_fail(DP__PREP, "--out: path too long");
		dp__prep_free(&a);
		return 2;
	}
	rc = dp__check_outputs(&a, nowners);
	if (rc != 0)
		goto fail;

	tabs = calloc(a.ninputs, sizeof(*tabs));
	xs = calloc(a.ninputs, sizeof(*xs));
	ys = calloc(a.ninputs, sizeof(*ys));
	if (tabs == NULL || xs == NULL || ys == NULL) {
		rc = DP_ENOMEM;
		goto fail;
	}
	/* Empty cells pass the reader so that dropped columns may have them;
	 * the schema rejects them in every column it uses. */
	for (size_t i = 0; i < a.ninputs; i++) {
		rc = dp_csv_table_load(&tabs[i], a.inputs[i], DP_CSV_ALLOW_EMPTY);
		if (rc != 0)
			goto fail;
		total += tabs[i].nrows;
	}
	if (a.schema != NULL) {
		rc = dp_schema_load(a.schema, &s);
		if (rc == 0 && a.target != NULL && strcmp(a.target, dp_schema_target(s)) != 0)
			rc = dp_error_set(DP_EINVAL, "--target '%s' differs from the schema's target "
					  "'%s'", dp_csv_show(a.target, path, 64), dp_schema_target(s));
	} else {
		rc = dp__build_schema(&a, tabs, a.ninputs, &s);
	}
	if (rc != 0)
		goto fail;
	p = dp_schema_nfeatures(s);
	for (size_t i = 0; i < a.ninputs; i++) {
		rc = dp__transform(s, &tabs[i], &xs[i], &ys[i]);
		if (rc == DP_EFORMAT && a.schema == NULL && (a.sample || a.frac_set) &&
		    !a.all_levels && strstr(dp_error_detail(rc), "is not in the schema's list")) {
			/* The sample lacked a level the owners have: say how to fix it. */
			dp_tool_fail(DP__PREP, "%s; the sample lacks it: use --all-levels, or give "
				     "the full list with --levels or --ordinal", dp_error_detail(rc));
			status = 2;
			goto done;
		}
		if (rc != 0)
			goto fail;
	}
	if (a.split_set && a.split > tabs[0].nrows) {
		rc = dp_error_set(DP_EINVAL, "--split %zu: %s has only %zu rows", a.split,
				  a.inputs[0], tabs[0].nrows);
		goto fail;
	}

	/* Everything is valid: now write. */
	rc = dp_file_mkdir_p(a.out, 0);
	if (rc != 0)
		goto fail;
	snprintf(path, sizeof(path), "%s/schema.json", a.out);
	rc = dp_schema_save(s, path);
	if (rc != 0)
		goto fail;
	printf("%s: %zu features, target '%s' (%s)\n", path, p, dp_schema_target(s),
	       dp_schema_target_binary(s) ? "binary, y in {-1,+1}" : "numeric");
	if (!a.split_set) {
		for (size_t i = 0; i < a.ninputs; i++) {
			rc = dp__write_owner(&a, s, i + 1, tabs[i].nrows, xs[i], ys[i], path,
					     sizeof(path));
			if (rc != 0)
				goto fail;
			printf("%s: %zu rows from %s\n", path, tabs[i].nrows, a.inputs[i]);
		}
	} else {
		size_t n = tabs[0].nrows;

		perm = malloc(n * sizeof(*perm));
		ox = malloc((n / a.split + 1) * p * sizeof(*ox));
		oy = malloc((n / a.split + 1) * sizeof(*oy));
		if (perm == NULL || ox == NULL || oy == NULL) {
			rc = DP_ENOMEM;
			goto fail;
		}
		rc = dp__shuffle(perm, n, n, a.seed);
		if (rc != 0)
			goto fail;
		for (size_t o = 0; o < a.split; o++) {
			size_t m = 0;

			/* Round-robin over the shuffled order: sizes differ by <= 1. */
			for (size_t k = o; k < n; k += a.split, m++) {
				memcpy(ox + m * p, xs[0] + perm[k] * p, p * sizeof(*ox));
				oy[m] = ys[0][perm[k]];
			}
			rc = dp__write_owner(&a, s, o + 1, m, ox, oy, path, sizeof(path));
			if (rc != 0)
				goto fail;
			printf("%s: %zu rows\n", path, m);
		}
	}
	status = 0;
	goto done;
fail:
	status = dp__fail_rc(rc);
done:
	for (size_t i = 0; tabs != NULL && xs != NULL && ys != NULL && i < a.ninputs; i++) {
		dp_csv_table_free(&tabs[i]);
		free(xs[i]);
		free(ys[i]);
	}
	free(tabs);
	free(xs);
	free(ys);
	free(perm);
	free(ox);
	free(oy);
	dp_schema_destroy(s);
	dp__prep_free(&a);
	return status;
}
