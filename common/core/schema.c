/* Feature schema: build from a sample, save/load as JSON, apply to rows. */
#include "common/core/schema.h"
#include "common/core/error.h"
#include "common/core/json.h"
#include "common/core/modelfile.h"
#include "common/core/file.h"

#include <cblas.h>
#include <json-c/json.h>
#include <lapacke.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DP__SCHEMA_FORMAT "dpasync-schema"
#define DP__SCHEMA_MAX_FILE (64u << 20)

enum dp__kind { DP__NUMERIC, DP__ONEHOT, DP__ORDINAL, DP__DROP };
enum dp__tkind { DP__T_NUMERIC, DP__T_BINARY };

static const char *const dp__kind_names[] = { "numeric", "onehot", "ordinal", "drop" };

/* A level and its position in the user's list, sorted by name for lookup. */
struct dp__lvl {
	const char *s;
	size_t i;
};

struct dp__levels {
	char **v;             /* in the schema's order */
	size_t n;
	struct dp__lvl *by_name;
};

struct dp__col {
	char *name;
	int kind;
	double center, scale;
	int has_clamp;
	double lo, hi;
	struct dp__levels lv;
	size_t off;           /* first feature of this column in z */
};

struct dp_schema {
	size_t ncols;
	struct dp__col *cols;

	char *target;
	int tkind;
	int tstd;             /* numeric target standardised */
	double tcenter, tscale;
	struct dp__levels labels;
	size_t positive;      /* index in labels */

	size_t d;             /* standardised features before PCA */
	char **znames;
	size_t k;             /* principal components; 0: none */
	double *pmean;        /* d */
	double *pvec;         /* k x d, row-major */
	double *pvar;         /* k eigenvalues (informational) */
	char **pcnames;
	size_t p;             /* output features */
	char **names;         /* znames or pcnames */
};

struct dp_schema_bind {
	const dp_schema *s;
	char *source;
	size_t ncols;         /* of the bound file */
	long *src;            /* per schema column: field index, -1 for drop */
	long tsrc;
	double *z;            /* d scratch */
	double *out;          /* p scratch */
};

/* ---- small helpers ---------------------------------------------------------- */

static void dp__free_strv(char **v, size_t n)
{
	if (v == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void dp__levels_free(struct dp__levels *lv)
{
	dp__free_strv(lv->v, lv->n);
	free(lv->by_name);
	memset(lv, 0, sizeof(*lv));
}

static int dp__lvl_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dp__lvl *)a)->s, ((const struct dp__lvl *)b)->s);
}

/* Take ownership of v[0..n-1] and index it; a duplicate is reported through
 * *dup (its text) and DP_EFORMAT without a detail. */
static int dp__levels_set(struct dp__levels *lv, char **v, size_t n, const char **dup)
{
	struct dp__lvl *idx = malloc((n ? n : 1) * sizeof(*idx));

	if (idx == NULL)
		return DP_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		idx[i].s = v[i];
		idx[i].i = i;
	}
	qsort(idx, n, sizeof(*idx), dp__lvl_cmp);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(idx[i - 1].s, idx[i].s) == 0) {
			*dup = idx[i].s;
			free(idx);
			return DP_EFORMAT;
		}
	}
	lv->v = v;
	lv->n = n;
	lv->by_name = idx;
	return 0;
}

static long dp__levels_find(const struct dp__levels *lv, const char *s)
{
	struct dp__lvl key = { s, 0 };
	const struct dp__lvl *hit = bsearch(&key, lv->by_name, lv->n, sizeof(key), dp__lvl_cmp);

	return hit ? (long)hit->i : -1;
}

static char **dp__strv_dup(const char *const *v, size_t n)
{
	char **out = calloc(n ? n : 1, sizeof(*out));

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		out[i] = strdup(v[i]);
		if (out[i] == NULL) {
			dp__free_strv(out, i);
			return NULL;
		}
	}
	return out;
}

/* A cell shown in a message: escaped and cut (one line, readable length). */
static const char *dp__show(const char *s, char *buf, size_t size)
{
	return dp_csv_show(s, buf, size);
}

void dp_schema_destroy(dp_schema *s)
{
	if (s == NULL)
		return;
	for (size_t c = 0; c < s->ncols; c++) {
		free(s->cols[c].name);
		dp__levels_free(&s->cols[c].lv);
	}
	free(s->cols);
	free(s->target);
	dp__levels_free(&s->labels);
	dp__free_strv(s->znames, s->d);
	free(s->pmean);
	free(s->pvec);
	free(s->pvar);
	dp__free_strv(s->pcnames, s->k);
	free(s);
}

size_t dp_schema_nfeatures(const dp_schema *s)
{
	return s->p;
}

const char *const *dp_schema_feature_names(const dp_schema *s)
{
	return (const char *const *)s->names;
}

const char *dp_schema_target(const dp_schema *s)
{
	return s->target;
}

int dp_schema_target_binary(const dp_schema *s)
{
	return s->tkind == DP__T_BINARY;
}

void dp_schema_target_scaling(const dp_schema *s, double *center, double *scale)
{
	int on = s->tkind == DP__T_NUMERIC && s->tstd;

	*center = on ? s->tcenter : 0.0;
	*scale = on ? s->tscale : 1.0;
}

/* Lay out z: offsets and names ("col" or "col=level").  Also sets p/names
 * when there is no PCA. */
static int dp__schema_layout(dp_schema *s)
{
	size_t d = 0;

	for (size_t c = 0; c < s->ncols; c++) {
		struct dp__col *col = &s->cols[c];

		col->off = d;
		if (col->kind == DP__NUMERIC || col->kind == DP__ORDINAL)
			d += 1;
		else if (col->kind == DP__ONEHOT)
			d += col->lv.n;
	}
	s->znames = calloc(d ? d : 1, sizeof(*s->znames));
	if (s->znames == NULL)
		return DP_ENOMEM;
	s->d = d;
	for (size_t c = 0; c < s->ncols; c++) {
		struct dp__col *col = &s->cols[c];

		if (col->kind == DP__NUMERIC || col->kind == DP__ORDINAL) {
			s->znames[col->off] = strdup(col->name);
			if (s->znames[col->off] == NULL)
				return DP_ENOMEM;
		} else if (col->kind == DP__ONEHOT) {
			for (size_t l = 0; l < col->lv.n; l++) {
				if (asprintf(&s->znames[col->off + l], "%s=%s", col->name,
					     col->lv.v[l]) < 0) {
					s->znames[col->off + l] = NULL;
					return DP_ENOMEM;
				}
			}
		}
	}
	s->p = d;
	s->names = s->znames;
	return 0;
}

static int dp__schema_set_pca_names(dp_schema *s)
{
	s->pcnames = calloc(s->k, sizeof(*s->pcnames));
	if (s->pcnames == NULL)
		return DP_ENOMEM;
	for (size_t i = 0; i < s->k; i++) {
		if (asprintf(&s->pcnames[i], "pc%zu", i + 1) < 0) {
			s->pcnames[i] = NULL;
			return DP_ENOMEM;
		}
	}
	s->p = s->k;
	s->names = s->pcnames;
	return 0;
}

/* ---- applying ------------------------------------------------------------------ */

void dp_schema_bind_destroy(dp_schema_bind *b)
{
	if (b == NULL)
		return;
	free(b->source);
	free(b->src);
	free(b->z);
	free(b->out);
	free(b);
}

int dp_schema_bind_new(const dp_schema *s, const char *source, const char *const *header,
		       size_t ncols, dp_schema_bind **out)
{
	dp_schema_bind *b = calloc(1, sizeof(*b));
	int rc;

	if (b == NULL)
		return DP_ENOMEM;
	b->s = s;
	b->ncols = ncols;
	b->source = strdup(source);
	b->src = malloc((s->ncols ? s->ncols : 1) * sizeof(*b->src));
	b->z = malloc((s->d ? s->d : 1) * sizeof(*b->z));
	b->out = malloc((s->p ? s->p : 1) * sizeof(*b->out));
	if (b->source == NULL || b->src == NULL || b->z == NULL || b->out == NULL) {
		rc = DP_ENOMEM;
		goto fail;
	}
	for (size_t c = 0; c < s->ncols; c++) {
		b->src[c] = dp_csv_find(header, ncols, s->cols[c].name);
		if (b->src[c] < 0 && s->cols[c].kind != DP__DROP) {
			rc = dp_error_set(DP_EFORMAT,
					  "%s: column '%s' (%s in the schema) is missing from the header",
					  source, s->cols[c].name, dp__kind_names[s->cols[c].kind]);
			goto fail;
		}
	}
	b->tsrc = dp_csv_find(header, ncols, s->target);
	if (b->tsrc < 0) {
		rc = dp_error_set(DP_EFORMAT, "%s: target column '%s' is missing from the header",
				  source, s->target);
		goto fail;
	}
	for (size_t j = 0; j < ncols; j++) {
		int known = strcmp(header[j], s->target) == 0;

		for (size_t c = 0; c < s->ncols && !known; c++)
			known = strcmp(header[j], s->cols[c].name) == 0;
		if (!known) {
			rc = dp_error_set(DP_EFORMAT,
					  "%s: column '%s' is not in the schema (list it there, as "
					  "kind 'drop' to ignore it)",
					  source, header[j]);
			goto fail;
		}
	}
	*out = b;
	return 0;
fail:
	dp_schema_bind_destroy(b);
	return rc;
}

static int dp__cell_fail(const dp_schema_bind *b, size_t line, const char *col, const char *fmt,
			 ...) __attribute__((format(printf, 4, 5)));

static int dp__cell_fail(const dp_schema_bind *b, size_t line, const char *col, const char *fmt,
			 ...)
{
	char what[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return dp_error_set(DP_EFORMAT, "%s:%zu: column '%s': %s", b->source, line, col, what);
}

/* Level lookup with the error the user needs: the value and the list. */
static int dp__level_of(const dp_schema_bind *b, size_t line, const char *col,
			const struct dp__levels *lv, const char *v, const char *what, size_t *idx)
{
	char shown[64], list[200];
	long i = dp__levels_find(lv, v);

	if (i >= 0) {
		*idx = (size_t)i;
		return 0;
	}
	dp_csv_format_names(list, sizeof(list), (const char *const *)lv->v, lv->n);
	return dp__cell_fail(b, line, col, "%s '%s' is not in the schema's list (%s)", what,
			     dp__show(v, shown, sizeof(shown)), list);
}

static int dp__number_of(const dp_schema_bind *b, size_t line, const char *col, const char *v,
			 double *out)
{
	char shown[64];

	if (dp_csv_parse_number(v, out) != 0)
		return dp__cell_fail(b, line, col, "not a finite number: '%s'",
				     dp__show(v, shown, sizeof(shown)));
	return 0;
}

/* Raw cells -> standardised z (length d), no PCA. */
static int dp__encode(const dp_schema_bind *b, const char *const *fields, size_t line, double *z)
{
	const dp_schema *s = b->s;
	int rc;

	for (size_t c = 0; c < s->ncols; c++) {
		const struct dp__col *col = &s->cols[c];
		const char *v;
		double x;
		size_t l = 0;

		if (col->kind == DP__DROP)
			continue;
		v = fields[b->src[c]];
		if (*v == '\0')
			return dp__cell_fail(b, line, col->name,
					     "empty cell (missing value; dpasync does not impute)");
		switch (col->kind) {
		case DP__NUMERIC:
			rc = dp__number_of(b, line, col->name, v, &x);
			if (rc != 0)
				return rc;
			break;
		case DP__ORDINAL:
			rc = dp__level_of(b, line, col->name, &col->lv, v, "level", &l);
			if (rc != 0)
				return rc;
			x = (double)l;
			break;
		default: /* DP__ONEHOT */
			rc = dp__level_of(b, line, col->name, &col->lv, v, "level", &l);
			if (rc != 0)
				return rc;
			for (size_t i = 0; i < col->lv.n; i++)
				z[col->off + i] = i == l ? 1.0 : 0.0;
			continue;
		}
		x = (x - col->center) / col->scale;
		if (col->has_clamp)
			x = x < col->lo ? col->lo : x > col->hi ? col->hi : x;
		if (!isfinite(x))
			return dp__cell_fail(b, line, col->name,
					     "value '%s' overflows after standardising", v);
		z[col->off] = x;
	}
	return 0;
}

static int dp__target_of(const dp_schema_bind *b, const char *v, size_t line, double *y)
{
	const dp_schema *s = b->s;
	size_t l = 0;
	int rc;

	if (*v == '\0')
		return dp__cell_fail(b, line, s->target,
				     "empty target cell (missing value; dpasync does not impute)");
	if (s->tkind == DP__T_BINARY) {
		rc = dp__level_of(b, line, s->target, &s->labels, v, "target label", &l);
		if (rc != 0)
			return rc;
		*y = l == s->positive ? 1.0 : -1.0;
		return 0;
	}
	rc = dp__number_of(b, line, s->target, v, y);
	if (rc != 0)
		return rc;
	if (s->tstd)
		*y = (*y - s->tcenter) / s->tscale;
	if (!isfinite(*y))
		return dp__cell_fail(b, line, s->target, "value '%s' overflows after standardising",
				     v);
	return 0;
}

int dp_schema_bind_row(dp_schema_bind *b, const char *const *fields, size_t line, double *x,
		       double *y)
{
	const dp_schema *s = b->s;
	double t;
	int rc;

	rc = dp__encode(b, fields, line, b->z);
	if (rc != 0)
		return rc;
	rc = dp__target_of(b, fields[b->tsrc], line, &t);
	if (rc != 0)
		return rc;
	if (s->k > 0) {
		for (size_t i = 0; i < s->d; i++)
			b->z[i] -= s->pmean[i];
		cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)s->k, (int)s->d, 1.0, s->pvec,
			    (int)s->d, b->z, 1, 0.0, b->out, 1);
		memcpy(x, b->out, s->k * sizeof(*x));
	} else {
		memcpy(x, b->z, s->d * sizeof(*x));
	}
	*y = t;
	return 0;
}

/* ---- building -------------------------------------------------------------------- */

/* The sample: rows picked from one or more tables whose columns are the
 * same set (column j means column j of table 0; map[] finds it elsewhere). */
struct dp__sample {
	const dp_csv_table *const *tabs;
	size_t ntabs;
	dp_schema_pick *picks;
	size_t n;
	size_t ncols;
	size_t *map;          /* ntabs x ncols */
	char name[256];       /* for messages without a row */
};

static const char *dp__scell(const struct dp__sample *sm, size_t r, size_t j)
{
	const dp_schema_pick *pk = &sm->picks[r];

	return dp_csv_cell(sm->tabs[pk->table], pk->row, sm->map[pk->table * sm->ncols + j]);
}

static size_t dp__sline(const struct dp__sample *sm, size_t r)
{
	return sm->tabs[sm->picks[r].table]->line[sm->picks[r].row];
}

static const char *dp__ssource(const struct dp__sample *sm, size_t r)
{
	return sm->tabs[sm->picks[r].table]->source;
}

static void dp__sample_free(struct dp__sample *sm)
{
	free(sm->picks);
	free(sm->map);
	sm->picks = NULL;
	sm->map = NULL;
}

static int dp__sample_init(struct dp__sample *sm, const dp_csv_table *const *tabs, size_t ntabs,
			   const dp_schema_pick *picks, size_t npicks)
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
		dp__sample_free(sm);
		return DP_ENOMEM;
	}
	for (size_t t = 0; t < ntabs; t++) {
		if (tabs[t]->ncols != sm->ncols) {
			dp__sample_free(sm);
			return dp_error_set(DP_EFORMAT, "%s: %zu columns, but %s has %zu",
					    tabs[t]->source, tabs[t]->ncols, t0->source, sm->ncols);
		}
		for (size_t j = 0; j < sm->ncols; j++) {
			long k = dp_csv_find((const char *const *)tabs[t]->header, tabs[t]->ncols,
					     t0->header[j]);

			if (k < 0) {
				dp__sample_free(sm);
				return dp_error_set(DP_EFORMAT, "%s: no column '%s' (which %s has)",
						    tabs[t]->source, t0->header[j], t0->source);
			}
			sm->map[t * sm->ncols + j] = (size_t)k;
		}
	}
	if (picks != NULL) {
		for (size_t r = 0; r < npicks; r++) {
			if (picks[r].table >= ntabs || picks[r].row >= tabs[picks[r].table]->nrows) {
				dp__sample_free(sm);
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

static int dp__in_list(const char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return 1;
	return 0;
}

/* Mean and standard deviation (n - 1; 1 when zero or undefined). */
static void dp__moments(const double *v, size_t n, double *mean, double *sd)
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

static int dp__strptr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Distinct values of column j over the sample, sorted; at most `cap`.
 * Returns DP_ERANGE (no detail) when there are more. */
static int dp__distinct(const struct dp__sample *sm, size_t j, size_t cap, char ***out, size_t *n)
{
	const char **tmp = malloc((sm->n ? sm->n : 1) * sizeof(*tmp));
	size_t u = 0;
	char **v;

	if (tmp == NULL)
		return DP_ENOMEM;
	for (size_t r = 0; r < sm->n; r++)
		tmp[r] = dp__scell(sm, r, j);
	qsort(tmp, sm->n, sizeof(*tmp), dp__strptr_cmp);
	for (size_t r = 0; r < sm->n; r++)
		if (u == 0 || strcmp(tmp[u - 1], tmp[r]) != 0)
			tmp[u++] = tmp[r];
	if (u > cap) {
		free(tmp);
		*n = u;
		return DP_ERANGE;
	}
	v = dp__strv_dup(tmp, u);
	free(tmp);
	if (v == NULL)
		return DP_ENOMEM;
	*out = v;
	*n = u;
	return 0;
}

static int dp__opt_column(const dp_csv_table *t, long tcol, const char *what, const char *name)
{
	char list[200], shown[64];

	if (name == NULL || *name == '\0')
		return dp_error_set(DP_EINVAL, "schema: empty column name in the %s list", what);
	if (dp_csv_find((const char *const *)t->header, t->ncols, name) < 0) {
		dp_csv_format_names(list, sizeof(list), (const char *const *)t->header, t->ncols);
		return dp_error_set(DP_EFORMAT, "%s: %s column '%s' not found (columns: %s)",
				    t->source, what, dp__show(name, shown, sizeof(shown)), list);
	}
	if (strcmp(name, t->header[tcol]) == 0)
		return dp_error_set(DP_EINVAL, "schema: the target '%s' cannot be in the %s list",
				    name, what);
	return 0;
}

static int dp__check_opts(const dp_csv_table *t, long *tcol_out, const dp_schema_opts *o)
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
				    t->source, dp__show(o->target, shown, sizeof(shown)), list);
	}
	if (o->task != DP_TASK_REGRESSION && o->task != DP_TASK_CLASSIFICATION)
		return dp_error_set(DP_EINVAL, "schema: unknown task %d", (int)o->task);
	if (o->task == DP_TASK_CLASSIFICATION && (o->positive == NULL || *o->positive == '\0'))
		return dp_error_set(DP_EINVAL, "schema: classification needs a positive label");
	for (const unsigned char *c = (const unsigned char *)(o->positive ? o->positive : "");
	     *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			return dp_error_set(DP_EINVAL,
					    "schema: the positive label contains a control character");
	if (o->task == DP_TASK_REGRESSION && (o->positive != NULL || o->labels != NULL))
		return dp_error_set(DP_EINVAL,
				    "schema: a positive label or label list only applies to "
				    "classification");
	if (!isfinite(o->clamp_z) || o->clamp_z < 0.0)
		return dp_error_set(DP_EINVAL, "schema: clamp must be a finite number >= 0");
	for (size_t i = 0; i < o->ndrop; i++)
		if ((rc = dp__opt_column(t, tcol, "drop", o->drop[i])) != 0)
			return rc;
	for (size_t i = 0; i < o->nonehot; i++) {
		if ((rc = dp__opt_column(t, tcol, "onehot", o->onehot[i])) != 0)
			return rc;
		if (dp__in_list(o->drop, o->ndrop, o->onehot[i]))
			return dp_error_set(DP_EINVAL, "schema: column '%s' is both dropped and onehot",
					    o->onehot[i]);
	}
	for (size_t i = 0; i < o->nlevels; i++) {
		const dp_schema_levels *lv = &o->levels[i];

		if ((rc = dp__opt_column(t, tcol, "levels", lv->column)) != 0)
			return rc;
		if (dp__in_list(o->drop, o->ndrop, lv->column))
			return dp_error_set(DP_EINVAL,
					    "schema: column '%s' is dropped and also given levels",
					    lv->column);
		if (lv->ordered && dp__in_list(o->onehot, o->nonehot, lv->column))
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
static int dp__col_set_levels(struct dp__col *col, const char *const *v, size_t n, const char *what)
{
	char **copy = dp__strv_dup(v, n);
	const char *dup = NULL;
	char shown[64];
	int rc;

	if (copy == NULL)
		return DP_ENOMEM;
	rc = dp__levels_set(&col->lv, copy, n, &dup);
	if (rc == DP_EFORMAT) {
		rc = dp_error_set(DP_EINVAL, "schema: %s for '%s' lists '%s' twice", what, col->name,
				  dp__show(dup, shown, sizeof(shown)));
		dp__free_strv(copy, n);
	} else if (rc != 0) {
		dp__free_strv(copy, n);
	}
	return rc;
}

/* Every sample value of column j must be in lv. */
static int dp__check_levels(const struct dp__sample *sm, size_t j, const struct dp__levels *lv,
			    const char *colname, const char *what)
{
	char shown[64], list[200];

	for (size_t r = 0; r < sm->n; r++) {
		const char *v = dp__scell(sm, r, j);

		if (dp__levels_find(lv, v) < 0) {
			dp_csv_format_names(list, sizeof(list), (const char *const *)lv->v, lv->n);
			return dp_error_set(DP_EFORMAT,
					    "%s:%zu: column '%s': '%s' is not in the %s (%s)",
					    dp__ssource(sm, r), dp__sline(sm, r), colname,
					    dp__show(v, shown, sizeof(shown)), what, list);
		}
	}
	return 0;
}

/* Distinct values of the column named `name` (index j in the sample) for a
 * level list: from the level tables when given (every cell there must be
 * non-empty, and the sample's values must be among them), else from the
 * sample itself. */
static int dp__level_values(const struct dp__sample *sm, const struct dp__sample *lsm, size_t j,
			    const char *name, size_t cap, char ***out, size_t *n,
			    const struct dp__sample **from)
{
	const struct dp__sample *src = lsm ? lsm : sm;
	size_t jj = j;
	int rc;

	if (lsm != NULL) {
		jj = (size_t)dp_csv_find((const char *const *)lsm->tabs[0]->header, lsm->ncols, name);
		for (size_t r = 0; r < lsm->n; r++)
			if (*dp__scell(lsm, r, jj) == '\0')
				return dp_error_set(DP_EFORMAT,
						    "%s:%zu: column '%s': empty cell (missing value; "
						    "dpasync does not impute: fill it or drop the "
						    "column)",
						    dp__ssource(lsm, r), dp__sline(lsm, r), name);
	}
	*from = src;
	rc = dp__distinct(src, jj, cap, out, n);
	return rc;
}

static int dp__build_column(struct dp__col *col, const struct dp__sample *sm,
			    const struct dp__sample *lsm, size_t j, const dp_schema_opts *o,
			    double *vals)
{
	const dp_schema_levels *given = NULL;
	size_t max_levels = o->max_levels ? o->max_levels : DP_SCHEMA_MAX_LEVELS;
	size_t first_bad = SIZE_MAX;
	int rc;

	for (size_t i = 0; i < o->nlevels; i++)
		if (strcmp(o->levels[i].column, col->name) == 0)
			given = &o->levels[i];
	if (dp__in_list(o->drop, o->ndrop, col->name)) {
		col->kind = DP__DROP;
		return 0;
	}
	for (size_t r = 0; r < sm->n; r++) {
		const char *v = dp__scell(sm, r, j);

		if (*v == '\0')
			return dp_error_set(DP_EFORMAT,
					    "%s:%zu: column '%s': empty cell (missing value; dpasync "
					    "does not impute: fill it or drop the column)",
					    dp__ssource(sm, r), dp__sline(sm, r), col->name);
		if (first_bad == SIZE_MAX && dp_csv_parse_number(v, &vals[r]) != 0)
			first_bad = r;
	}
	if (given != NULL) {
		col->kind = given->ordered ? DP__ORDINAL : DP__ONEHOT;
		rc = dp__col_set_levels(col, given->levels, given->nlevels,
					given->ordered ? "the ordinal order" : "the level list");
		if (rc != 0)
			return rc;
		rc = dp__check_levels(sm, j, &col->lv, col->name,
				      given->ordered ? "ordinal order given" : "level list given");
		if (rc != 0)
			return rc;
		if (col->kind == DP__ORDINAL) {
			for (size_t r = 0; r < sm->n; r++)
				vals[r] = (double)dp__levels_find(&col->lv, dp__scell(sm, r, j));
			dp__moments(vals, sm->n, &col->center, &col->scale);
		}
		return 0;
	}
	if (first_bad != SIZE_MAX || dp__in_list(o->onehot, o->nonehot, col->name)) {
		char **v = NULL;
		size_t n = 0;
		const char *dup = NULL;

		const struct dp__sample *from = sm;

		col->kind = DP__ONEHOT;
		rc = dp__level_values(sm, lsm, j, col->name, max_levels, &v, &n, &from);
		if (rc == DP_ERANGE) {
			char shown[64];

			if (first_bad != SIZE_MAX)
				return dp_error_set(
					DP_EFORMAT,
					"%s: column '%s' is not numeric ('%s' on %s:%zu) and has "
					"%zu distinct values, more than the %zu allowed for a "
					"categorical column: drop it, give its levels, or fix the value",
					from->name, col->name,
					dp__show(dp__scell(sm, first_bad, j), shown, sizeof(shown)),
					dp__ssource(sm, first_bad), dp__sline(sm, first_bad), n,
					max_levels);
			return dp_error_set(DP_EFORMAT,
					    "%s: column '%s' has %zu distinct values, more than the "
					    "%zu allowed for a onehot column",
					    from->name, col->name, n, max_levels);
		}
		if (rc != 0)
			return rc;
		rc = dp__levels_set(&col->lv, v, n, &dup);
		if (rc != 0) {
			dp__free_strv(v, n);
			return rc;
		}
		if (lsm != NULL)
			return dp__check_levels(sm, j, &col->lv, col->name,
						"levels of the level tables");
		return 0;
	}
	col->kind = DP__NUMERIC;
	dp__moments(vals, sm->n, &col->center, &col->scale);
	if (o->clamp_z > 0.0) {
		col->has_clamp = 1;
		col->lo = -o->clamp_z;
		col->hi = o->clamp_z;
	}
	return 0;
}

static int dp__build_target(dp_schema *s, const struct dp__sample *sm,
			    const struct dp__sample *lsm, size_t tcol, const dp_schema_opts *o,
			    double *vals)
{
	char shown[64], list[200];
	const char *dup = NULL;
	char **v = NULL;
	size_t n = 0;
	long pos;
	int rc;

	for (size_t r = 0; r < sm->n; r++) {
		if (*dp__scell(sm, r, tcol) == '\0')
			return dp_error_set(DP_EFORMAT,
					    "%s:%zu: column '%s': empty target cell (missing value)",
					    dp__ssource(sm, r), dp__sline(sm, r), s->target);
	}
	if (o->task == DP_TASK_REGRESSION) {
		s->tkind = DP__T_NUMERIC;
		for (size_t r = 0; r < sm->n; r++) {
			const char *c = dp__scell(sm, r, tcol);

			if (dp_csv_parse_number(c, &vals[r]) != 0)
				return dp_error_set(DP_EFORMAT,
						    "%s:%zu: column '%s': a regression target must be "
						    "a finite number, got '%s'",
						    dp__ssource(sm, r), dp__sline(sm, r), s->target,
						    dp__show(c, shown, sizeof(shown)));
		}
		if (o->standardize_target) {
			s->tstd = 1;
			dp__moments(vals, sm->n, &s->tcenter, &s->tscale);
		} else {
			s->tcenter = 0.0;
			s->tscale = 1.0;
		}
		return 0;
	}
	s->tkind = DP__T_BINARY;
	if (o->labels != NULL) {
		v = dp__strv_dup(o->labels, o->nlabels);
		n = o->nlabels;
		if (v == NULL)
			return DP_ENOMEM;
		for (size_t i = 0; i < n; i++) {
			if (v[i][0] == '\0') {
				dp__free_strv(v, n);
				return dp_error_set(DP_EINVAL, "schema: empty label in the label list");
			}
		}
	} else {
		const struct dp__sample *from;

		rc = dp__level_values(sm, lsm, tcol, s->target, SIZE_MAX, &v, &n, &from);
		if (rc != 0)
			return rc;
	}
	rc = dp__levels_set(&s->labels, v, n, &dup);
	if (rc != 0) {
		dp__free_strv(v, n);
		if (rc == DP_EFORMAT)
			rc = dp_error_set(DP_EINVAL, "schema: label '%s' listed twice",
					  dp__show(dup, shown, sizeof(shown)));
		return rc;
	}
	if (o->labels != NULL || lsm != NULL) {
		rc = dp__check_levels(sm, tcol, &s->labels, s->target,
				      o->labels ? "label list given" : "labels of the level tables");
		if (rc != 0)
			return rc;
	}
	dp_csv_format_names(list, sizeof(list), (const char *const *)s->labels.v, s->labels.n);
	pos = dp__levels_find(&s->labels, o->positive);
	if (pos < 0)
		return dp_error_set(DP_EFORMAT, "%s: positive label '%s' is not among the labels of "
				    "target '%s' (%s)", sm->name,
				    dp__show(o->positive, shown, sizeof(shown)), s->target, list);
	if (s->labels.n < 2)
		return dp_error_set(DP_EFORMAT,
				    "%s: target '%s' has a single label (%s); a binary target needs "
				    "two",
				    sm->name, s->target, list);
	s->positive = (size_t)pos;
	return 0;
}

/* Principal components of the standardised sample (see schema.h). */
static int dp__build_pca(dp_schema *s, const struct dp__sample *sm, size_t K)
{
	enum { BLOCK = 512 };
	dp_schema_bind **b = NULL;
	size_t d = s->d, m = sm->n, maxcols = sm->ncols;
	const char **fields = NULL;
	double *zb = NULL, *cov = NULL, *w = NULL, *mean = NULL;
	int rc;

	if (K > d)
		return dp_error_set(DP_EINVAL, "schema: %zu principal components requested but there "
				    "are only %zu features", K, d);
	if (m < 2)
		return dp_error_set(DP_EFORMAT, "%s: PCA needs at least 2 sample rows, got %zu",
				    sm->name, m);
	if (d > 46340 || d * d > SIZE_MAX / sizeof(double) / 2)
		return dp_error_set(DP_EINVAL, "schema: too many features (%zu) for PCA", d);
	/* One binding per table: messages then name the right file. */
	b = calloc(sm->ntabs, sizeof(*b));
	if (b == NULL)
		return DP_ENOMEM;
	for (size_t t = 0; t < sm->ntabs; t++) {
		rc = dp_schema_bind_new(s, sm->tabs[t]->source,
					(const char *const *)sm->tabs[t]->header, sm->tabs[t]->ncols,
					&b[t]);
		if (rc != 0)
			goto out;
	}
	fields = malloc(maxcols * sizeof(*fields));
	zb = malloc(BLOCK * d * sizeof(*zb));
	cov = calloc(d * d, sizeof(*cov));
	w = malloc(d * sizeof(*w));
	mean = calloc(d, sizeof(*mean));
	if (fields == NULL || zb == NULL || cov == NULL || w == NULL || mean == NULL) {
		rc = DP_ENOMEM;
		goto out;
	}
	/* Two passes over the sample (mean, then centred blocks into dsyrk)
	 * keep memory at O(d^2) whatever the sample size. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t r0 = 0; r0 < m; r0 += BLOCK) {
			size_t nb = m - r0 < BLOCK ? m - r0 : BLOCK;

			for (size_t r = 0; r < nb; r++) {
				double *z = zb + r * d;
				const dp_schema_pick *pk = &sm->picks[r0 + r];
				const dp_csv_table *t = sm->tabs[pk->table];

				for (size_t j = 0; j < t->ncols; j++)
					fields[j] = dp_csv_cell(t, pk->row, j);
				rc = dp__encode(b[pk->table], fields, t->line[pk->row], z);
				if (rc != 0)
					goto out;
				if (pass == 0) {
					for (size_t i = 0; i < d; i++)
						mean[i] += z[i];
				} else {
					for (size_t i = 0; i < d; i++)
						z[i] -= mean[i];
				}
			}
			if (pass == 1)
				cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)d, (int)nb,
					    1.0 / (double)(m - 1), zb, (int)d, 1.0, cov, (int)d);
		}
		if (pass == 0)
			for (size_t i = 0; i < d; i++)
				mean[i] /= (double)m;
	}
	/* Eigenvalues come back ascending, eigenvectors in the columns. */
	lapack_int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', (lapack_int)d, cov,
					 (lapack_int)d, w);
	if (info != 0) {
		rc = dp_error_set(DP_ENUMERIC, "schema: eigen-decomposition of the %zux%zu sample "
				  "covariance failed (LAPACKE_dsyevd info %d)", d, d, (int)info);
		goto out;
	}
	s->pvec = malloc(K * d * sizeof(*s->pvec));
	s->pvar = malloc(K * sizeof(*s->pvar));
	if (s->pvec == NULL || s->pvar == NULL) {
		rc = DP_ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < K; k++) {
		size_t col = d - 1 - k, big = 0;
		double *v = s->pvec + k * d;

		for (size_t i = 0; i < d; i++) {
			v[i] = cov[i * d + col];
			if (fabs(v[i]) > fabs(v[big]))
				big = i;
		}
		/* Eigenvectors are defined up to sign: make the result reproducible. */
		if (v[big] < 0.0)
			for (size_t i = 0; i < d; i++)
				v[i] = -v[i];
		for (size_t i = 0; i < d; i++)
			if (v[i] == 0.0)
				v[i] = 0.0; /* no "-0" in the file */
		s->pvar[k] = w[col] > 0.0 ? w[col] : 0.0;
	}
	s->pmean = mean;
	mean = NULL;
	s->k = K;
	rc = dp__schema_set_pca_names(s);
out:
	for (size_t t = 0; t < sm->ntabs; t++)
		dp_schema_bind_destroy(b[t]);
	free(b);
	free(fields);
	free(zb);
	free(cov);
	free(w);
	free(mean);
	return rc;
}

int dp_schema_build_tables(const dp_csv_table *const *tables, size_t ntables,
			   const dp_schema_pick *picks, size_t npicks, const dp_schema_opts *o,
			   dp_schema **out)
{
	struct dp__sample sm, lsm_store;
	const struct dp__sample *lsm = NULL;
	const dp_csv_table *t;
	dp_schema *s = NULL;
	double *vals = NULL;
	long tcol = -1;
	int rc;

	if (o == NULL)
		return dp_error_set(DP_EINVAL, "schema: no options");
	rc = dp__sample_init(&sm, tables, ntables, picks, npicks);
	if (rc != 0)
		return rc;
	memset(&lsm_store, 0, sizeof(lsm_store));
	if (o->level_tables != NULL) {
		rc = dp__sample_init(&lsm_store, o->level_tables, o->nlevel_tables, NULL, 0);
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
	rc = dp__check_opts(t, &tcol, o);
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
		struct dp__col *col;

		if ((long)j == tcol)
			continue;
		col = &s->cols[s->ncols++];
		col->name = strdup(t->header[j]);
		if (col->name == NULL) {
			rc = DP_ENOMEM;
			goto fail;
		}
		rc = dp__build_column(col, &sm, lsm, j, o, vals);
		if (rc != 0)
			goto fail;
	}
	rc = dp__build_target(s, &sm, lsm, (size_t)tcol, o, vals);
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
						  dp__show(s->znames[c], shown, sizeof(shown)));
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
		rc = dp__build_pca(s, &sm, o->pca);
		if (rc != 0)
			goto fail;
	}
	free(vals);
	dp__sample_free(&sm);
	dp__sample_free(&lsm_store);
	*out = s;
	return 0;
fail:
	free(vals);
	dp__sample_free(&sm);
	dp__sample_free(&lsm_store);
	dp_schema_destroy(s);
	return rc;
}

int dp_schema_build(const char *sample_path, const dp_schema_opts *opts, dp_schema **out)
{
	dp_csv_table t;
	int rc;

	/* Empty cells are allowed through the reader so that a dropped column
	 * may have them; every used column is checked while building. */
	rc = dp_csv_table_load(&t, sample_path, DP_CSV_ALLOW_EMPTY);
	if (rc != 0)
		return rc;
	const dp_csv_table *tp = &t;

	rc = dp_schema_build_tables(&tp, 1, NULL, 0, opts, out);
	dp_csv_table_free(&t);
	return rc;
}

/* ---- JSON ------------------------------------------------------------------------ */



/* json-c takes ownership of `val` even when the add fails. */
static int dp__jadd(json_object *o, const char *key, json_object *val)
{
	if (val == NULL)
		return DP_ENOMEM;
	return json_object_object_add(o, key, val) == 0 ? 0 : DP_ENOMEM;
}

static int dp__jpush(json_object *a, json_object *val)
{
	if (val == NULL)
		return DP_ENOMEM;
	if (json_object_array_add(a, val) != 0) {
		json_object_put(val);
		return DP_ENOMEM;
	}
	return 0;
}

static json_object *dp__jstrv(char *const *v, size_t n)
{
	json_object *a = json_object_new_array();

	if (a == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (dp__jpush(a, json_object_new_string(v[i])) != 0) {
			json_object_put(a);
			return NULL;
		}
	}
	return a;
}

static json_object *dp__jnumv(const double *v, size_t n)
{
	json_object *a = json_object_new_array();

	if (a == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (dp__jpush(a, dp_json_double(v[i])) != 0) {
			json_object_put(a);
			return NULL;
		}
	}
	return a;
}

static int dp__schema_to_json(const dp_schema *s, json_object **out)
{
	json_object *root = json_object_new_object(), *cols, *tg, *pca, *comps, *clamp;
	int rc;

	if (root == NULL)
		return DP_ENOMEM;
	if ((rc = dp__jadd(root, "format", json_object_new_string(DP__SCHEMA_FORMAT))) != 0 ||
	    (rc = dp__jadd(root, "version", json_object_new_int(DP_SCHEMA_VERSION))) != 0)
		goto fail;
	cols = json_object_new_array();
	if ((rc = dp__jadd(root, "columns", cols)) != 0)
		goto fail;
	for (size_t c = 0; c < s->ncols; c++) {
		const struct dp__col *col = &s->cols[c];
		json_object *jc = json_object_new_object();

		if ((rc = dp__jpush(cols, jc)) != 0 ||
		    (rc = dp__jadd(jc, "name", json_object_new_string(col->name))) != 0 ||
		    (rc = dp__jadd(jc, "kind", json_object_new_string(dp__kind_names[col->kind]))) != 0)
			goto fail;
		if (col->kind == DP__ONEHOT || col->kind == DP__ORDINAL)
			if ((rc = dp__jadd(jc, "levels", dp__jstrv(col->lv.v, col->lv.n))) != 0)
				goto fail;
		if (col->kind == DP__NUMERIC || col->kind == DP__ORDINAL) {
			if ((rc = dp__jadd(jc, "center", dp_json_double(col->center))) != 0 ||
			    (rc = dp__jadd(jc, "scale", dp_json_double(col->scale))) != 0)
				goto fail;
			if (col->has_clamp) {
				double lh[2] = { col->lo, col->hi };

				clamp = dp__jnumv(lh, 2);
				if ((rc = dp__jadd(jc, "clamp", clamp)) != 0)
					goto fail;
			}
		}
	}
	tg = json_object_new_object();
	if ((rc = dp__jadd(root, "target", tg)) != 0 ||
	    (rc = dp__jadd(tg, "name", json_object_new_string(s->target))) != 0 ||
	    (rc = dp__jadd(tg, "kind", json_object_new_string(s->tkind == DP__T_BINARY ? "binary"
										     : "numeric"))) != 0)
		goto fail;
	if (s->tkind == DP__T_BINARY) {
		if ((rc = dp__jadd(tg, "positive",
				   json_object_new_string(s->labels.v[s->positive]))) != 0 ||
		    (rc = dp__jadd(tg, "labels", dp__jstrv(s->labels.v, s->labels.n))) != 0)
			goto fail;
	} else if (s->tstd) {
		if ((rc = dp__jadd(tg, "center", dp_json_double(s->tcenter))) != 0 ||
		    (rc = dp__jadd(tg, "scale", dp_json_double(s->tscale))) != 0)
			goto fail;
	}
	if (s->k > 0) {
		pca = json_object_new_object();
		if ((rc = dp__jadd(root, "pca", pca)) != 0 ||
		    (rc = dp__jadd(pca, "mean", dp__jnumv(s->pmean, s->d))) != 0 ||
		    (rc = dp__jadd(pca, "variance", dp__jnumv(s->pvar, s->k))) != 0)
			goto fail;
		comps = json_object_new_array();
		if ((rc = dp__jadd(pca, "components", comps)) != 0)
			goto fail;
		for (size_t k = 0; k < s->k; k++)
			if ((rc = dp__jpush(comps, dp__jnumv(s->pvec + k * s->d, s->d))) != 0)
				goto fail;
	}
	*out = root;
	return 0;
fail:
	json_object_put(root);
	return rc;
}

int dp_schema_save(const dp_schema *s, const char *path)
{
	json_object *root = NULL;
	const char *text;
	char *buf;
	size_t len;
	int rc;

	rc = dp__schema_to_json(s, &root);
	if (rc != 0)
		return rc;
	text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
							    JSON_C_TO_STRING_SPACED |
							    JSON_C_TO_STRING_NOSLASHESCAPE);
	if (text == NULL) {
		json_object_put(root);
		return DP_ENOMEM;
	}
	len = strlen(text);
	buf = malloc(len + 2);
	if (buf == NULL) {
		json_object_put(root);
		return DP_ENOMEM;
	}
	memcpy(buf, text, len);
	buf[len++] = '\n';
	json_object_put(root);
	rc = dp_file_write_atomic(path, buf, len, 0644);
	free(buf);
	return rc;
}

/* ---- loading and validation ------------------------------------------------------- */

struct dp__jctx {
	const char *path;
};

static int dp__jfail(const struct dp__jctx *j, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int dp__jfail(const struct dp__jctx *j, const char *where, const char *fmt, ...)
{
	char what[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return dp_error_set(DP_EFORMAT, "%s: %s: %s", j->path, where, what);
}

/* Reject keys outside `allowed` (a typo must not be silently ignored). */
static int dp__jkeys(const struct dp__jctx *j, json_object *o, const char *where,
		     const char *const *allowed, size_t n)
{
	json_object_object_foreach(o, key, val) {
		(void)val;
		if (!dp__in_list(allowed, n, key)) {
			char shown[64];

			return dp__jfail(j, where, "unknown key '%s'",
					 dp__show(key, shown, sizeof(shown)));
		}
	}
	return 0;
}

static int dp__jstring(const struct dp__jctx *j, json_object *o, const char *where, const char *key,
		       int required, const char **out)
{
	json_object *v;

	*out = NULL;
	if (!json_object_object_get_ex(o, key, &v)) {
		if (required)
			return dp__jfail(j, where, "missing key '%s'", key);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return dp__jfail(j, where, "'%s' must be a string", key);
	*out = json_object_get_string(v);
	if ((size_t)json_object_get_string_len(v) != strlen(*out))
		return dp__jfail(j, where, "'%s' contains a NUL character", key);
	if (**out == '\0')
		return dp__jfail(j, where, "'%s' must not be empty", key);
	/* Names, kinds and labels appear in one-line messages. */
	for (const unsigned char *c = (const unsigned char *)*out; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			return dp__jfail(j, where, "'%s' contains a control character", key);
	return 0;
}

static int dp__jnum_value(const struct dp__jctx *j, json_object *v, const char *where,
			  const char *key, double *out)
{
	if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
		return dp__jfail(j, where, "'%s' must be a number", key);
	*out = json_object_get_double(v);
	if (!isfinite(*out))
		return dp__jfail(j, where, "'%s' must be finite", key);
	return 0;
}

/* *present = 0 when absent and not required. */
static int dp__jnumber(const struct dp__jctx *j, json_object *o, const char *where, const char *key,
		       int required, double *out, int *present)
{
	json_object *v;

	*present = 0;
	if (!json_object_object_get_ex(o, key, &v)) {
		if (required)
			return dp__jfail(j, where, "missing key '%s'", key);
		return 0;
	}
	*present = 1;
	return dp__jnum_value(j, v, where, key, out);
}

static int dp__jnumarray(const struct dp__jctx *j, json_object *a, const char *where,
			 const char *key, size_t expect, double *out)
{
	if (!json_object_is_type(a, json_type_array))
		return dp__jfail(j, where, "'%s' must be an array of numbers", key);
	if (json_object_array_length(a) != expect)
		return dp__jfail(j, where, "'%s' must have %zu numbers, has %zu", key, expect,
				 json_object_array_length(a));
	for (size_t i = 0; i < expect; i++) {
		int rc = dp__jnum_value(j, json_object_array_get_idx(a, i), where, key, &out[i]);

		if (rc != 0)
			return rc;
	}
	return 0;
}

/* A non-empty array of distinct non-empty strings -> lv. */
static int dp__jlevels(const struct dp__jctx *j, json_object *o, const char *where, const char *key,
		       struct dp__levels *lv)
{
	json_object *a;
	const char *dup = NULL;
	char **v;
	size_t n;
	int rc;

	if (!json_object_object_get_ex(o, key, &a))
		return dp__jfail(j, where, "missing key '%s'", key);
	if (!json_object_is_type(a, json_type_array))
		return dp__jfail(j, where, "'%s' must be an array of strings", key);
	n = json_object_array_length(a);
	if (n == 0)
		return dp__jfail(j, where, "'%s' must not be empty", key);
	v = calloc(n, sizeof(*v));
	if (v == NULL)
		return DP_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i);
		const char *str;

		if (!json_object_is_type(e, json_type_string)) {
			dp__free_strv(v, n);
			return dp__jfail(j, where, "'%s'[%zu] must be a string", key, i);
		}
		str = json_object_get_string(e);
		if (*str == '\0' || (size_t)json_object_get_string_len(e) != strlen(str)) {
			dp__free_strv(v, n);
			return dp__jfail(j, where, "'%s'[%zu] must be a non-empty string without NUL",
					 key, i);
		}
		v[i] = strdup(str);
		if (v[i] == NULL) {
			dp__free_strv(v, n);
			return DP_ENOMEM;
		}
	}
	rc = dp__levels_set(lv, v, n, &dup);
	if (rc == DP_EFORMAT) {
		char shown[64];

		rc = dp__jfail(j, where, "'%s' lists '%s' twice", key,
			       dp__show(dup, shown, sizeof(shown)));
	}
	if (rc != 0)
		dp__free_strv(v, n);
	return rc;
}

static int dp__jcenter_scale(const struct dp__jctx *j, json_object *o, const char *where,
			     int required, double *center, double *scale, int *present)
{
	int pc, ps, rc;

	if ((rc = dp__jnumber(j, o, where, "center", required, center, &pc)) != 0 ||
	    (rc = dp__jnumber(j, o, where, "scale", required, scale, &ps)) != 0)
		return rc;
	if (pc != ps)
		return dp__jfail(j, where, "'center' and 'scale' go together");
	if (ps && !(*scale > 0.0))
		return dp__jfail(j, where, "'scale' must be > 0, got %g", *scale);
	*present = pc;
	return 0;
}

static int dp__jcolumn(const struct dp__jctx *j, json_object *jc, size_t idx, struct dp__col *col)
{
	static const char *const keys[] = { "name", "kind", "levels", "center", "scale", "clamp" };
	char where[96];
	const char *name, *kind;
	json_object *v;
	int present, rc;

	snprintf(where, sizeof(where), "columns[%zu]", idx);
	if (!json_object_is_type(jc, json_type_object))
		return dp__jfail(j, where, "must be an object");
	if ((rc = dp__jkeys(j, jc, where, keys, 6)) != 0 ||
	    (rc = dp__jstring(j, jc, where, "name", 1, &name)) != 0)
		return rc;
	col->name = strdup(name);
	if (col->name == NULL)
		return DP_ENOMEM;
	snprintf(where, sizeof(where), "column '%.60s'", name);
	if ((rc = dp__jstring(j, jc, where, "kind", 1, &kind)) != 0)
		return rc;
	col->kind = -1;
	for (int k = 0; k < 4; k++)
		if (strcmp(kind, dp__kind_names[k]) == 0)
			col->kind = k;
	if (col->kind < 0)
		return dp__jfail(j, where, "unknown kind '%s' (numeric, onehot, ordinal or drop)",
				 kind);
	if (col->kind == DP__ONEHOT || col->kind == DP__ORDINAL) {
		if ((rc = dp__jlevels(j, jc, where, "levels", &col->lv)) != 0)
			return rc;
	} else if (json_object_object_get_ex(jc, "levels", NULL)) {
		return dp__jfail(j, where, "'levels' does not apply to kind '%s'", kind);
	}
	if (col->kind == DP__NUMERIC || col->kind == DP__ORDINAL) {
		if ((rc = dp__jcenter_scale(j, jc, where, 1, &col->center, &col->scale,
					    &present)) != 0)
			return rc;
		if (json_object_object_get_ex(jc, "clamp", &v)) {
			double lh[2];

			if ((rc = dp__jnumarray(j, v, where, "clamp", 2, lh)) != 0)
				return rc;
			if (!(lh[0] < lh[1]))
				return dp__jfail(j, where, "'clamp' must be [lo, hi] with lo < hi");
			col->has_clamp = 1;
			col->lo = lh[0];
			col->hi = lh[1];
		}
	} else if (json_object_object_get_ex(jc, "center", NULL) ||
		   json_object_object_get_ex(jc, "scale", NULL) ||
		   json_object_object_get_ex(jc, "clamp", NULL)) {
		return dp__jfail(j, where, "'center', 'scale' and 'clamp' do not apply to kind '%s'",
				 kind);
	}
	return 0;
}

static int dp__jtarget(const struct dp__jctx *j, json_object *jt, dp_schema *s)
{
	static const char *const keys[] = { "name", "kind", "center", "scale", "positive", "labels" };
	const char *name, *kind, *positive;
	int present, rc;
	long pos;

	if (!json_object_is_type(jt, json_type_object))
		return dp__jfail(j, "target", "must be an object");
	if ((rc = dp__jkeys(j, jt, "target", keys, 6)) != 0 ||
	    (rc = dp__jstring(j, jt, "target", "name", 1, &name)) != 0 ||
	    (rc = dp__jstring(j, jt, "target", "kind", 1, &kind)) != 0)
		return rc;
	s->target = strdup(name);
	if (s->target == NULL)
		return DP_ENOMEM;
	if (strcmp(kind, "numeric") == 0) {
		s->tkind = DP__T_NUMERIC;
		if (json_object_object_get_ex(jt, "positive", NULL) ||
		    json_object_object_get_ex(jt, "labels", NULL))
			return dp__jfail(j, "target", "'positive' and 'labels' apply to kind 'binary'");
		rc = dp__jcenter_scale(j, jt, "target", 0, &s->tcenter, &s->tscale, &present);
		if (rc != 0)
			return rc;
		s->tstd = present;
		if (!present) {
			s->tcenter = 0.0;
			s->tscale = 1.0;
		}
		return 0;
	}
	if (strcmp(kind, "binary") != 0)
		return dp__jfail(j, "target", "unknown kind '%s' (numeric or binary)", kind);
	s->tkind = DP__T_BINARY;
	if (json_object_object_get_ex(jt, "center", NULL) ||
	    json_object_object_get_ex(jt, "scale", NULL))
		return dp__jfail(j, "target", "'center' and 'scale' apply to kind 'numeric'");
	if ((rc = dp__jstring(j, jt, "target", "positive", 1, &positive)) != 0 ||
	    (rc = dp__jlevels(j, jt, "target", "labels", &s->labels)) != 0)
		return rc;
	if (s->labels.n < 2)
		return dp__jfail(j, "target", "'labels' needs at least two labels");
	pos = dp__levels_find(&s->labels, positive);
	if (pos < 0)
		return dp__jfail(j, "target", "positive label '%s' is not in 'labels'", positive);
	s->positive = (size_t)pos;
	return 0;
}

static int dp__jpca(const struct dp__jctx *j, json_object *jp, dp_schema *s)
{
	static const char *const keys[] = { "mean", "components", "variance" };
	json_object *a, *comps;
	size_t K, d = s->d;
	int rc;

	if (!json_object_is_type(jp, json_type_object))
		return dp__jfail(j, "pca", "must be an object");
	if ((rc = dp__jkeys(j, jp, "pca", keys, 3)) != 0)
		return rc;
	if (!json_object_object_get_ex(jp, "components", &comps))
		return dp__jfail(j, "pca", "missing key 'components'");
	if (!json_object_is_type(comps, json_type_array) || json_object_array_length(comps) == 0)
		return dp__jfail(j, "pca", "'components' must be a non-empty array of arrays");
	K = json_object_array_length(comps);
	if (K > d)
		return dp__jfail(j, "pca", "%zu components for %zu features", K, d);
	if (!json_object_object_get_ex(jp, "mean", &a))
		return dp__jfail(j, "pca", "missing key 'mean'");
	s->pmean = malloc(d * sizeof(*s->pmean));
	s->pvec = malloc(K * d * sizeof(*s->pvec));
	s->pvar = calloc(K, sizeof(*s->pvar));
	if (s->pmean == NULL || s->pvec == NULL || s->pvar == NULL)
		return DP_ENOMEM;
	if ((rc = dp__jnumarray(j, a, "pca", "mean", d, s->pmean)) != 0)
		return rc;
	for (size_t k = 0; k < K; k++) {
		char where[48];
		double norm = 0.0;

		snprintf(where, sizeof(where), "pca: components[%zu]", k);
		rc = dp__jnumarray(j, json_object_array_get_idx(comps, k), where, "components",
				   d, s->pvec + k * d);
		if (rc != 0)
			return rc;
		for (size_t i = 0; i < d; i++)
			norm += s->pvec[k * d + i] * s->pvec[k * d + i];
		/* A component that is not a unit vector means a damaged or
		 * mismatched file, not a choice. */
		if (fabs(sqrt(norm) - 1.0) > 1e-6)
			return dp__jfail(j, where, "not a unit vector (norm %.9g)", sqrt(norm));
	}
	if (json_object_object_get_ex(jp, "variance", &a)) {
		if ((rc = dp__jnumarray(j, a, "pca", "variance", K, s->pvar)) != 0)
			return rc;
		for (size_t k = 0; k < K; k++)
			if (s->pvar[k] < 0.0)
				return dp__jfail(j, "pca", "'variance' must be >= 0");
	}
	s->k = K;
	return dp__schema_set_pca_names(s);
}

static int dp__schema_from_json(const struct dp__jctx *j, json_object *root, dp_schema *s)
{
	static const char *const keys[] = { "format", "version", "columns", "target", "pca" };
	json_object *v, *cols;
	const char *fmt;
	int64_t version;
	int rc;

	if (!json_object_is_type(root, json_type_object))
		return dp__jfail(j, "top level", "must be a JSON object");
	if ((rc = dp__jkeys(j, root, "top level", keys, 5)) != 0 ||
	    (rc = dp__jstring(j, root, "top level", "format", 0, &fmt)) != 0)
		return rc;
	if (fmt != NULL && strcmp(fmt, DP__SCHEMA_FORMAT) != 0)
		return dp__jfail(j, "format", "'%s' is not a dpasync schema", fmt);
	if (!json_object_object_get_ex(root, "version", &v))
		return dp__jfail(j, "top level", "missing key 'version'");
	if (!json_object_is_type(v, json_type_int))
		return dp__jfail(j, "version", "must be an integer");
	version = json_object_get_int64(v);
	if (version > DP_SCHEMA_VERSION)
		return dp__jfail(j, "version", "%lld is newer than this dpasync reads (%d)",
				 (long long)version, DP_SCHEMA_VERSION);
	if (version < 1)
		return dp__jfail(j, "version", "must be >= 1, got %lld", (long long)version);
	if (!json_object_object_get_ex(root, "columns", &cols))
		return dp__jfail(j, "top level", "missing key 'columns'");
	if (!json_object_is_type(cols, json_type_array) || json_object_array_length(cols) == 0)
		return dp__jfail(j, "columns", "must be a non-empty array");
	s->cols = calloc(json_object_array_length(cols), sizeof(*s->cols));
	if (s->cols == NULL)
		return DP_ENOMEM;
	for (size_t c = 0; c < json_object_array_length(cols); c++) {
		s->ncols++;
		rc = dp__jcolumn(j, json_object_array_get_idx(cols, c), c, &s->cols[c]);
		if (rc != 0)
			return rc;
		for (size_t k = 0; k < c; k++)
			if (strcmp(s->cols[k].name, s->cols[c].name) == 0)
				return dp__jfail(j, "columns", "column '%s' appears twice",
						 s->cols[c].name);
	}
	if (!json_object_object_get_ex(root, "target", &v))
		return dp__jfail(j, "top level", "missing key 'target'");
	if ((rc = dp__jtarget(j, v, s)) != 0)
		return rc;
	for (size_t c = 0; c < s->ncols; c++)
		if (strcmp(s->cols[c].name, s->target) == 0)
			return dp__jfail(j, "target", "'%s' is also listed in 'columns'", s->target);
	if ((rc = dp__schema_layout(s)) != 0)
		return rc;
	if (s->d == 0)
		return dp__jfail(j, "columns", "no features (every column is 'drop')");
	for (size_t i = 0; i < s->d; i++)
		for (size_t k = 0; k < i; k++)
			if (strcmp(s->znames[i], s->znames[k]) == 0)
				return dp__jfail(j, "columns", "two features are both named '%s'",
						 s->znames[i]);
	if (json_object_object_get_ex(root, "pca", &v))
		return dp__jpca(j, v, s);
	return 0;
}

int dp_schema_load(const char *path, dp_schema **out)
{
	struct dp__jctx j = { path };
	struct json_tokener *tok;
	json_object *root;
	dp_schema *s;
	char *text = NULL;
	size_t len = 0;
	int rc;

	rc = dp_file_read_all(path, DP__SCHEMA_MAX_FILE, &text, &len);
	if (rc == DP_ERANGE)
		return dp_error_set(DP_EFORMAT, "%s: larger than %u bytes: not a schema", path,
				    DP__SCHEMA_MAX_FILE);
	if (rc != 0)
		return rc;
	if (strlen(text) != len) {
		free(text);
		return dp_error_set(DP_EFORMAT, "%s: contains a NUL byte: not a JSON schema", path);
	}
	tok = json_tokener_new();
	if (tok == NULL) {
		free(text);
		return DP_ENOMEM;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	/* The terminating NUL is passed too: it ends a bare literal such as "null". */
	root = json_tokener_parse_ex(tok, text, (int)len + 1);
	enum json_tokener_error e = json_tokener_get_error(tok);
	size_t end = json_tokener_get_parse_end(tok);

	if (e == json_tokener_success) {
		/* Only whitespace may follow the document. */
		while (end < len && strchr(" \t\r\n", text[end]) != NULL)
			end++;
		if (end < len) {
			json_object_put(root);
			root = NULL;
			rc = dp_error_set(DP_EFORMAT, "%s: invalid JSON at byte %zu: data after the "
					  "end of the document", path, end);
		} else if (root == NULL) {
			rc = dp_error_set(DP_EFORMAT, "%s: the schema is JSON null", path);
		}
	} else {
		rc = dp_error_set(DP_EFORMAT, "%s: invalid JSON at byte %zu: %s", path, end,
				  e == json_tokener_continue ? "unexpected end of the file"
							     : json_tokener_error_desc(e));
	}
	json_tokener_free(tok);
	free(text);
	if (root == NULL)
		return rc;
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		json_object_put(root);
		return DP_ENOMEM;
	}
	rc = dp__schema_from_json(&j, root, s);
	json_object_put(root);
	if (rc != 0) {
		dp_schema_destroy(s);
		return rc;
	}
	*out = s;
	return 0;
}
