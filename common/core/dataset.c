/* SPDX-License-Identifier: Apache-2.0 */
/* An owner's rows in memory: loading (plain or through a schema), building
 * from arrays, writing, compatibility checks. */
#include "common/core/dataset.h"
#include "common/core/csv.h"
#include "common/core/error.h"
#include "common/core/num.h"
#include "common/core/file.h"
#include "common/core/schema.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#define X_ALIGN 64

void dp_dataset_free(dp_dataset *ds)
{
	if (ds == NULL)
		return;
	free(ds->x);
	free(ds->y);
	free(ds->row_l1);
	free(ds->row_l2);
	if (ds->names != NULL)
		for (size_t j = 0; j < ds->p; j++)
			free(ds->names[j]);
	free(ds->names);
	free(ds->target);
	free(ds->source);
	memset(ds, 0, sizeof(*ds));
}

/* 64-byte aligned block for n*p doubles (at least one). */
static double *xalloc(size_t n, size_t p)
{
	size_t bytes;
	void *mem = NULL;

	if (p != 0 && n > SIZE_MAX / p / sizeof(double))
		return NULL;
	bytes = n * p * sizeof(double);
	if (bytes == 0)
		bytes = sizeof(double);
	bytes = (bytes + X_ALIGN - 1) / X_ALIGN * X_ALIGN;
	if (posix_memalign(&mem, X_ALIGN, bytes) != 0)
		return NULL;
	return mem;
}

/* The bound of dataset.h, proved in docs/privacy.md §6 "Clipping in L2":
 * with the largest |x_q| scaled to [1, 2) by a power of two (exact), a
 * value lost to underflow is below 2^-1022 while the sum of squares is at
 * least 1, and every fma rounds once. */
double dp_dataset_norm_l2(const double *x, size_t p)
{
	double mx = 0.0, s1 = 1.0, s2, s = 0.0;
	int nan = 0, inf = 0, e;

	for (size_t q = 0; q < p; q++) {
		double a = fabs(x[q]);

		if (isnan(a))
			nan = 1;
		else if (isinf(a))
			inf = 1;
		else if (a > mx)
			mx = a;
	}
	if (nan)
		return NAN;
	if (inf)
		return INFINITY;
	if (mx == 0.0)
		return 0.0;
	e = ilogb(mx);
	if (e < -1022) {
		s1 = 0x1p600;   /* a subnormal maximum: scale up first, exactly */
		e += 600;
	}
	s2 = ldexp(1.0, -e);
	for (size_t q = 0; q < p; q++) {
		double v = x[q] * s1 * s2;

		s = fma(v, v, s);
	}
	return ldexp(sqrt(s), s1 == 1.0 ? e : e - 600);
}

/* The row norms clipping uses, once per dataset. */
static void fill_row_norms(dp_dataset *ds)
{
	for (size_t i = 0; i < ds->n; i++) {
		const double *r = ds->x + i * ds->p;
		double s = 0.0;

		for (size_t j = 0; j < ds->p; j++)
			s += fabs(r[j]);
		ds->row_l1[i] = s;
		ds->row_l2[i] = dp_dataset_norm_l2(r, ds->p);
	}
}

/* Growable x/y while rows stream in.  x must stay 64-byte aligned for the
 * kernels, which realloc (and so dp_mem_reserve) cannot promise: it grows by
 * a fresh aligned block and a copy. */
struct rows {
	double *x, *y;
	size_t n, cap, p;
};

static int rows_add(struct rows *g, double **xrow, double **yrow)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 1024;
		double *x = xalloc(cap, g->p), *y;

		if (x == NULL)
			return DP_ENOMEM;
		y = realloc(g->y, cap * sizeof(*y));
		if (y == NULL) {
			free(x);
			return DP_ENOMEM;
		}
		if (g->n > 0)
			memcpy(x, g->x, g->n * g->p * sizeof(*x));
		free(g->x);
		g->x = x;
		g->y = y;
		g->cap = cap;
	}
	*xrow = g->x + g->n * g->p;
	*yrow = g->y + g->n;
	g->n++;
	return 0;
}

/* The cell's position, never its text: ownerd logs this line, and no cell
 * value may reach a log (docs/privacy.md §8). */
static int bad_number(const char *source, size_t line, const char *col)
{
	return dp_error_set(DP_EFORMAT, "%s:%zu: column '%s': not a finite number", source, line,
			    col);
}

int dp_dataset_load(dp_dataset *ds, const char *path, const dp_load_opts *opts)
{
	static const dp_load_opts none = { 0 };
	const dp_schema *schema;
	dp_csv_reader *r = NULL;
	dp_schema_bind *b = NULL;
	struct rows g = { 0 };
	dp_dataset out = { 0 };
	const char *const *hdr, *const *f;
	long tcol = -1;
	size_t ncols, d, line;
	char list[200];
	int rc;

	DP_REQUIRE(ds != NULL && path != NULL);
	memset(ds, 0, sizeof(*ds));
	if (opts == NULL)
		opts = &none;
	schema = opts->schema;
	if (schema == NULL && (opts->target == NULL || *opts->target == '\0'))
		return dp_error_set(DP_EINVAL, "%s: no target column given", path);
	if (schema != NULL && opts->target != NULL &&
	    strcmp(opts->target, dp_schema_target(schema)) != 0)
		return dp_error_set(DP_EINVAL, "%s: target '%s' differs from the schema's '%s'", path,
				    dp_csv_show(opts->target, list, sizeof(list)),
				    dp_schema_target(schema));
	/* With a schema, dropped columns may hold empty cells; the binding
	 * rejects empty cells in every column it uses. */
	rc = dp_csv_open(path, schema ? DP_CSV_ALLOW_EMPTY : 0, &r);
	if (rc != 0)
		return rc;
	hdr = dp_csv_header(r);
	ncols = dp_csv_ncols(r);
	out.source = strdup(path);
	out.target = strdup(schema ? dp_schema_target(schema) : opts->target);
	if (out.source == NULL || out.target == NULL) {
		rc = DP_ENOMEM;
		goto fail;
	}
	if (schema != NULL) {
		rc = dp_schema_bind_new(schema, path, hdr, ncols, &b);
		if (rc != 0)
			goto fail;
		d = dp_schema_nfeatures(schema);
	} else {
		tcol = dp_csv_find(hdr, ncols, opts->target);
		if (tcol < 0) {
			dp_csv_format_names(list, sizeof(list), hdr, ncols);
			char shown[64];

			rc = dp_error_set(DP_EFORMAT, "%s: target column '%s' not found (columns: %s)",
					  path, dp_csv_show(opts->target, shown, sizeof(shown)), list);
			goto fail;
		}
		d = ncols - 1;
	}
	out.p = d + (opts->bias ? 1 : 0);
	if (out.p == 0) {
		rc = dp_error_set(DP_EFORMAT, "%s: no feature columns besides the target", path);
		goto fail;
	}
	/* The bias column and the target would share a name: the dataset could
	 * not be written as a CSV that reads back. */
	if (opts->bias && strcmp(out.target, "bias") == 0) {
		rc = dp_error_set(DP_EFORMAT, "%s: the target is named 'bias'; cannot append the "
				  "bias column", path);
		goto fail;
	}
	out.names = calloc(out.p, sizeof(*out.names));
	if (out.names == NULL) {
		rc = DP_ENOMEM;
		goto fail;
	}
	for (size_t j = 0, k = 0; j < d; k++) {
		const char *name;

		if (schema != NULL)
			name = dp_schema_feature_names(schema)[j];
		else if ((long)k == tcol)
			continue;
		else
			name = hdr[k];
		if (opts->bias && strcmp(name, "bias") == 0) {
			rc = dp_error_set(DP_EFORMAT, "%s: a feature is already named 'bias'; cannot "
					  "append the bias column", path);
			goto fail;
		}
		out.names[j] = strdup(name);
		if (out.names[j] == NULL) {
			rc = DP_ENOMEM;
			goto fail;
		}
		j++;
	}
	if (opts->bias) {
		out.names[d] = strdup("bias");
		if (out.names[d] == NULL) {
			rc = DP_ENOMEM;
			goto fail;
		}
	}
	g.p = out.p;
	for (;;) {
		double *xr, *yr;

		rc = dp_csv_next(r, &f, &line);
		if (rc < 0)
			goto fail;
		if (rc == 0)
			break;
		rc = rows_add(&g, &xr, &yr);
		if (rc != 0)
			goto fail;
		if (schema != NULL) {
			rc = dp_schema_bind_row(b, f, line, xr, yr);
			if (rc != 0)
				goto fail;
		} else {
			for (size_t k = 0, j = 0; k < ncols; k++) {
				double *dst = (long)k == tcol ? yr : &xr[j++];

				if (dp_csv_parse_number(f[k], dst) != 0) {
					rc = bad_number(path, line, hdr[k]);
					goto fail;
				}
			}
		}
		if (opts->bias)
			xr[d] = 1.0;
	}
	if (g.n == 0) {
		rc = dp_error_set(DP_EFORMAT, "%s: no data rows (only a header)", path);
		goto fail;
	}
	out.n = g.n;
	out.x = g.x;
	out.y = g.y;
	g.x = g.y = NULL;
	out.row_l1 = malloc(out.n * sizeof(*out.row_l1));
	out.row_l2 = malloc(out.n * sizeof(*out.row_l2));
	if (out.row_l1 == NULL || out.row_l2 == NULL) {
		rc = DP_ENOMEM;
		goto fail;
	}
	fill_row_norms(&out);
	if (schema != NULL) {
		rc = dp_schema_check_applied(schema, path, out.x, out.y, out.n, out.p);
		if (rc != 0)
			goto fail;
	}
	dp_schema_bind_destroy(b);
	dp_csv_close(r);
	*ds = out;
	return 0;
fail:
	free(g.x);
	free(g.y);
	dp_schema_bind_destroy(b);
	dp_csv_close(r);
	dp_dataset_free(&out);
	return rc;
}

int dp_dataset_from_arrays(dp_dataset *ds, size_t n, size_t p, const double *x, const double *y,
			   const char *const *names)
{
	dp_dataset out = { 0 };

	DP_REQUIRE(ds != NULL && (x != NULL || n == 0 || p == 0) && (y != NULL || n == 0));
	if (n == 0 || p == 0)
		return dp_error_set(DP_EINVAL, "dataset: need at least one row and one column "
				    "(got %zu x %zu)", n, p);
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(y[i]))
			return dp_error_set(DP_ENUMERIC, "dataset: y[%zu] is not finite", i);
		for (size_t j = 0; j < p; j++)
			if (!isfinite(x[i * p + j]))
				return dp_error_set(DP_ENUMERIC, "dataset: x[%zu][%zu] is not finite",
						    i, j);
	}
	out.n = n;
	out.p = p;
	out.x = xalloc(n, p);
	out.y = malloc(n * sizeof(*out.y));
	out.row_l1 = malloc(n * sizeof(*out.row_l1));
	out.row_l2 = malloc(n * sizeof(*out.row_l2));
	out.names = calloc(p, sizeof(*out.names));
	out.target = strdup("y");
	out.source = strdup("(arrays)");
	if (out.x == NULL || out.y == NULL || out.row_l1 == NULL || out.row_l2 == NULL ||
	    out.names == NULL ||
	    out.target == NULL || out.source == NULL)
		goto nomem;
	for (size_t j = 0; j < p; j++) {
		if (names != NULL)
			out.names[j] = strdup(names[j]);
		else if (asprintf(&out.names[j], "x%zu", j + 1) < 0)
			out.names[j] = NULL;
		if (out.names[j] == NULL)
			goto nomem;
	}
	memcpy(out.x, x, n * p * sizeof(*x));
	memcpy(out.y, y, n * sizeof(*y));
	fill_row_norms(&out);
	*ds = out;
	return 0;
nomem:
	dp_dataset_free(&out);
	return DP_ENOMEM;
}

static int put_double(FILE *f, double v)
{
	char buf[40];

	dp_num_format(buf, sizeof(buf), v);
	return fputs(buf, f) < 0 ? DP_EIO : 0;
}

int dp_dataset_write_csv(const dp_dataset *ds, const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int rc = 0;

	DP_REQUIRE(ds != NULL && path != NULL);
	f = open_memstream(&buf, &len);
	if (f == NULL)
		return DP_ENOMEM;
	for (size_t j = 0; j < ds->p && rc == 0; j++) {
		rc = dp_csv_write_field(f, ds->names[j]);
		if (rc == 0 && fputc(',', f) == EOF)
			rc = DP_EIO;
	}
	if (rc == 0)
		rc = dp_csv_write_field(f, ds->target);
	if (rc == 0 && fputc('\n', f) == EOF)
		rc = DP_EIO;
	for (size_t i = 0; i < ds->n && rc == 0; i++) {
		for (size_t j = 0; j < ds->p && rc == 0; j++) {
			rc = put_double(f, ds->x[i * ds->p + j]);
			if (rc == 0 && fputc(',', f) == EOF)
				rc = DP_EIO;
		}
		if (rc == 0)
			rc = put_double(f, ds->y[i]);
		if (rc == 0 && fputc('\n', f) == EOF)
			rc = DP_EIO;
	}
	/* A memory stream fails only when memory runs out. */
	if (fclose(f) != 0 && rc == 0)
		rc = DP_ENOMEM;
	if (rc != 0) {
		free(buf);
		return rc == DP_EIO ? DP_ENOMEM : rc;
	}
	/* Rows are an owner's private data (docs/privacy.md): 0600 whatever
	 * the umask. */
	rc = dp_file_write_atomic(path, buf, len, 0600);
	OPENSSL_cleanse(buf, len);
	free(buf);
	return rc;
}

int dp_dataset_check_compatible(const dp_dataset *const *ds, size_t m)
{
	DP_REQUIRE(ds != NULL || m == 0);
	for (size_t i = 1; i < m; i++) {
		const dp_dataset *a = ds[0], *b = ds[i];

		if (b->p != a->p)
			return dp_error_set(DP_EINVAL, "%s: %zu feature columns, but %s has %zu",
					    b->source, b->p, a->source, a->p);
		for (size_t j = 0; j < a->p; j++)
			if (strcmp(a->names[j], b->names[j]) != 0)
				return dp_error_set(DP_EINVAL,
						    "%s: feature %zu is '%s', but '%s' in %s",
						    b->source, j + 1, b->names[j], a->names[j],
						    a->source);
	}
	return 0;
}
