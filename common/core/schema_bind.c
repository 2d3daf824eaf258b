/* SPDX-License-Identifier: Apache-2.0 */
/* Applying a feature schema to rows: binding it to a file's header, one
 * row to its features and target, and the check that a file was not
 * prepared already (docs/data.md). */
#include "common/core/schema.h"
#include "common/core/schema_impl.h"
#include "common/core/csv.h"
#include "common/core/error.h"

#include <cblas.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dp_schema_bind {
	const dp_schema *s;
	char *source;
	size_t ncols;         /* of the bound file */
	long *src;            /* per schema column: field index, -1 for drop */
	long tsrc;
	double *z;            /* d scratch */
	double *out;          /* p scratch */
};

/* A header that is exactly what applying s writes (its features, then the
 * target) belongs to a file that is already prepared.  When every column
 * is numeric or ordinal, without PCA, the features carry the columns' own
 * names and such a header is also a valid raw one: nothing tells them
 * apart, so only a schema that renames (onehot, binary, drop, PCA) can
 * refuse.  Applying s twice would standardise twice and give a wrong model
 * with no error: docs/data.md. */
static int is_prepared(const dp_schema *s, const char *const *header, size_t ncols)
{
	int renames = s->k > 0;

	if (ncols != s->p + 1 || strcmp(header[s->p], s->target) != 0)
		return 0;
	for (size_t j = 0; j < s->p; j++)
		if (strcmp(header[j], s->names[j]) != 0)
			return 0;
	for (size_t c = 0; c < s->ncols && !renames; c++)
		renames = s->cols[c].kind != DP__SCHEMA_NUMERIC &&
			  s->cols[c].kind != DP__SCHEMA_ORDINAL;
	return renames;
}

/* Votes of one standardised column: eligible when the raw values sit far
 * from 0 on its own scale (|c/s| >= 3), and "applied twice" when its mean
 * after the transform is nearer -c/s than 0. */
static void vote(double center, double scale, double mean, size_t *eligible, size_t *twice)
{
	double away = center / scale;

	if (fabs(away) < 3.0)
		return;
	(*eligible)++;
	if (fabs(mean + away) < fabs(mean))
		(*twice)++;
}

int dp_schema_check_applied(const dp_schema *s, const char *source, const double *x,
			    const double *y, size_t n, size_t stride)
{
	size_t eligible = 0, twice = 0;
	const char *name = NULL;

	DP_REQUIRE(s != NULL && source != NULL && (n == 0 || (x != NULL && y != NULL)));
	DP_REQUIRE(stride >= s->p);
	if (n < 10 || s->k > 0)
		return 0;
	for (size_t c = 0; c < s->ncols; c++) {
		const struct dp__schema_col *col = &s->cols[c];
		double sum = 0.0;
		size_t before = twice;

		if (col->kind != DP__SCHEMA_NUMERIC)
			continue;
		for (size_t j = 0; j < n; j++)
			sum += x[j * stride + col->off];
		vote(col->center, col->scale, sum / (double)n, &eligible, &twice);
		if (twice > before && name == NULL)
			name = col->name;
	}
	if (s->tkind == DP__SCHEMA_T_NUMERIC && s->tstd) {
		double sum = 0.0;
		size_t before = twice;

		for (size_t j = 0; j < n; j++)
			sum += y[j];
		vote(s->tcenter, s->tscale, sum / (double)n, &eligible, &twice);
		if (twice > before && name == NULL)
			name = s->target;
	}
	if (eligible == 0 || twice < eligible)
		return 0;
	/* no average in the message: a statistic of the rows, and ownerd
	 * logs this (docs/privacy.md §8) */
	return dp_error_set(DP_EFORMAT, "%s looks already prepared with this schema: column '%s' "
			    "averages far from 0 once transformed, where a raw file averages near 0; "
			    "pass it without --schema", source, name);
}

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
	dp_schema_bind *b;
	int rc;

	DP_REQUIRE(s != NULL && source != NULL && out != NULL);
	DP_REQUIRE(header != NULL || ncols == 0);
	if (is_prepared(s, header, ncols))
		return dp_error_set(DP_EFORMAT,
				    "%s is already prepared with this schema (its header is the "
				    "schema's features and target): pass it without --schema",
				    source);
	b = calloc(1, sizeof(*b));
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
		if (b->src[c] < 0 && s->cols[c].kind != DP__SCHEMA_DROP) {
			rc = dp_error_set(DP_EFORMAT,
					  "%s: column '%s' (%s in the schema) is missing from the header",
					  source, s->cols[c].name,
					  dp__schema_kind_names[s->cols[c].kind]);
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

static int cell_fail(const dp_schema_bind *b, size_t line, const char *col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int cell_fail(const dp_schema_bind *b, size_t line, const char *col, const char *fmt, ...)
{
	char what[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return dp_error_set(DP_EFORMAT, "%s:%zu: column '%s': %s", b->source, line, col, what);
}

/* The errors of a cell name its position (file, line, column) and what is
 * wrong, never its text: ownerd binds its rows with this code and logs the
 * error, and no cell value may reach a log (docs/privacy.md §8).  The
 * schema's own lists are public and may be shown. */

/* Level lookup with the error the user needs: the position and the list. */
static int level_of(const dp_schema_bind *b, size_t line, const char *col,
		    const struct dp__schema_levels *lv, const char *v, const char *what,
		    size_t *idx)
{
	char list[200];
	long i = dp__schema_levels_find(lv, v);

	if (i >= 0) {
		*idx = (size_t)i;
		return 0;
	}
	dp_csv_format_names(list, sizeof(list), (const char *const *)lv->v, lv->n);
	return cell_fail(b, line, col, "the %s is not in the schema's list (%s)", what, list);
}

static int number_of(const dp_schema_bind *b, size_t line, const char *col, const char *v,
		     double *out)
{
	if (dp_csv_parse_number(v, out) != 0)
		return cell_fail(b, line, col, "not a finite number");
	return 0;
}

int dp__schema_encode(const dp_schema_bind *b, const char *const *fields, size_t line,
		      double *z)
{
	const dp_schema *s = b->s;
	int rc;

	for (size_t c = 0; c < s->ncols; c++) {
		const struct dp__schema_col *col = &s->cols[c];
		const char *v;
		double x;
		size_t l = 0;

		if (col->kind == DP__SCHEMA_DROP)
			continue;
		v = fields[b->src[c]];
		if (*v == '\0')
			return cell_fail(b, line, col->name,
					 "empty cell (missing value; dpasync does not impute)");
		switch (col->kind) {
		case DP__SCHEMA_NUMERIC:
			rc = number_of(b, line, col->name, v, &x);
			if (rc != 0)
				return rc;
			break;
		case DP__SCHEMA_ORDINAL:
			rc = level_of(b, line, col->name, &col->lv, v, "level", &l);
			if (rc != 0)
				return rc;
			x = (double)l;
			break;
		case DP__SCHEMA_BINARY:
			rc = level_of(b, line, col->name, &col->lv, v, "level", &l);
			if (rc != 0)
				return rc;
			z[col->off] = l == 1 ? 1.0 : 0.0;
			continue;
		default: /* DP__SCHEMA_ONEHOT */
			rc = level_of(b, line, col->name, &col->lv, v, "level", &l);
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
			return cell_fail(b, line, col->name, "the value overflows after standardising");
		z[col->off] = x;
	}
	return 0;
}

static int target_of(const dp_schema_bind *b, const char *v, size_t line, double *y)
{
	const dp_schema *s = b->s;
	size_t l = 0;
	int rc;

	if (*v == '\0')
		return cell_fail(b, line, s->target,
				 "empty target cell (missing value; dpasync does not impute)");
	if (s->tkind == DP__SCHEMA_T_BINARY) {
		rc = level_of(b, line, s->target, &s->labels, v, "target label", &l);
		if (rc != 0)
			return rc;
		*y = l == s->positive ? 1.0 : -1.0;
		return 0;
	}
	rc = number_of(b, line, s->target, v, y);
	if (rc != 0)
		return rc;
	if (s->tstd)
		*y = (*y - s->tcenter) / s->tscale;
	if (!isfinite(*y))
		return cell_fail(b, line, s->target, "the value overflows after standardising");
	return 0;
}

int dp_schema_bind_row(dp_schema_bind *b, const char *const *fields, size_t line, double *x,
		       double *y)
{
	const dp_schema *s;
	double t;
	int rc;

	DP_REQUIRE(b != NULL && fields != NULL && x != NULL && y != NULL);
	s = b->s;
	rc = dp__schema_encode(b, fields, line, b->z);
	if (rc != 0)
		return rc;
	rc = target_of(b, fields[b->tsrc], line, &t);
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
