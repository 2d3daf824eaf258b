/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the owner data loader: the CSV reader (csv.h) and
 * the dataset loader on top of it (dataset.h), without and with a schema.
 *
 * The input is the file (plain or gzip: the reader detects it).  Checks:
 *   - the streaming reader and the whole-table loader agree, record for
 *     record, and on whether the file is valid;
 *   - strict mode (no empty cells) accepts exactly the valid files
 *     without an empty data cell;
 *   - a valid table written back field by field (dp_csv_write_field)
 *     reads again to the same header and cells;
 *   - a dataset loaded without a schema (target: the last column, with a
 *     bias column) writes back (dp_dataset_write_csv) and reads again to
 *     the same numbers, bit for bit, and names;
 *   - a dataset loaded with each of the schemas in FUZZ_SCHEMA_DIR has the
 *     schema's features, finite values and the right row norms.
 * Aborts on any inconsistency; the sanitizers catch memory errors. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/csv.h"
#include "common/core/dataset.h"
#include "common/core/error.h"
#include "common/core/schema.h"
#include "tests/fuzz/fuzz_util.h"

#ifndef FUZZ_SCHEMA_DIR
#error "FUZZ_SCHEMA_DIR: the directory of the schemas (meson.build)"
#endif

static const char *const schema_files[] = { "diamonds.json", "lending.json" };
#define N_SCHEMAS (sizeof(schema_files) / sizeof(schema_files[0]))
static dp_schema *schemas[N_SCHEMAS];

static void load_schemas(void)
{
	char path[512];

	if (schemas[0] != NULL)
		return;
	fuzz_util_init();
	for (size_t i = 0; i < N_SCHEMAS; i++) {
		snprintf(path, sizeof(path), "%s/%s", FUZZ_SCHEMA_DIR, schema_files[i]);
		if (dp_schema_load(path, &schemas[i]) != 0) {
			fprintf(stderr, "fuzz_csv: %s\n", dp_error_detail(DP_EFORMAT));
			abort();
		}
	}
}

static int same_table(const dp_csv_table *a, const dp_csv_table *b)
{
	if (a->ncols != b->ncols || a->nrows != b->nrows)
		return 0;
	for (size_t c = 0; c < a->ncols; c++)
		if (strcmp(a->header[c], b->header[c]) != 0)
			return 0;
	for (size_t i = 0; i < a->nrows * a->ncols; i++)
		if (strcmp(a->cells[i], b->cells[i]) != 0)
			return 0;
	return 1;
}

/* The streaming reader must give what the table loader gave. */
static void check_stream(const char *path, const dp_csv_table *t, int rc_t)
{
	dp_csv_reader *r = NULL;
	const char *const *f;
	size_t line, row = 0;
	int rc;

	rc = dp_csv_open(path, DP_CSV_ALLOW_EMPTY, &r);
	if (rc != 0) {
		FUZZ_CHECK(rc_t == rc);
		return;
	}
	FUZZ_CHECK(dp_csv_ncols(r) >= 1);
	if (rc_t == 0) {
		FUZZ_CHECK(dp_csv_ncols(r) == t->ncols);
		for (size_t c = 0; c < t->ncols; c++)
			FUZZ_CHECK(strcmp(dp_csv_header(r)[c], t->header[c]) == 0);
	}
	while ((rc = dp_csv_next(r, &f, &line)) == 1) {
		if (rc_t == 0) {
			FUZZ_CHECK(row < t->nrows && line == t->line[row]);
			for (size_t c = 0; c < t->ncols; c++)
				FUZZ_CHECK(strcmp(f[c], dp_csv_cell(t, row, c)) == 0);
		}
		row++;
	}
	FUZZ_CHECK(dp_csv_next(r, &f, &line) == rc);  /* sticky end or error */
	FUZZ_CHECK(rc == rc_t);
	FUZZ_CHECK(rc != 0 || row == t->nrows);
	dp_csv_close(r);
}

/* Strict mode: valid exactly when the table has no empty data cell. */
static void check_strict(const char *path, const dp_csv_table *t)
{
	dp_csv_table s;
	int has_empty = 0;

	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		has_empty = has_empty || t->cells[i][0] == '\0';
	if (dp_csv_table_load(&s, path, 0) == 0) {
		FUZZ_CHECK(!has_empty && same_table(t, &s));
		dp_csv_table_free(&s);
	} else {
		FUZZ_CHECK(has_empty);
	}
}

static void check_rewrite(const dp_csv_table *t)
{
	const char *out = fuzz_util_path("rewrite.csv");
	FILE *f = fopen(out, "w");
	dp_csv_table t2;

	FUZZ_CHECK(f != NULL);
	for (size_t r = 0; r <= t->nrows; r++)
		for (size_t c = 0; c < t->ncols; c++) {
			const char *s = r == 0 ? t->header[c] : dp_csv_cell(t, r - 1, c);

			FUZZ_CHECK(dp_csv_write_field(f, s) == 0);
			FUZZ_CHECK(fputc(c + 1 < t->ncols ? ',' : '\n', f) != EOF);
		}
	FUZZ_CHECK(fclose(f) == 0);
	FUZZ_CHECK(dp_csv_table_load(&t2, out, DP_CSV_ALLOW_EMPTY) == 0);
	FUZZ_CHECK(same_table(t, &t2));
	dp_csv_table_free(&t2);
}

static void check_dataset(const dp_dataset *ds, size_t p)
{
	FUZZ_CHECK(ds->n >= 1 && ds->p == p);
	for (size_t i = 0; i < ds->n; i++) {
		double l1 = 0;

		FUZZ_CHECK(isfinite(ds->y[i]));
		for (size_t q = 0; q < p; q++) {
			FUZZ_CHECK(isfinite(ds->x[i * p + q]));
			l1 += fabs(ds->x[i * p + q]);
		}
		FUZZ_CHECK(fabs(ds->row_l1[i] - l1) <= 1e-9 * (1 + l1));
		FUZZ_CHECK(ds->row_l2[i] == dp_dataset_norm_l2(ds->x + i * p, p));
		FUZZ_CHECK(ds->row_l2[i] <= ds->row_l1[i] * (1 + 1e-9));
	}
}

/* Without a schema: the last column is the target, a bias is added. */
static void check_numeric(const char *path, const dp_csv_table *t)
{
	const char *out = fuzz_util_path("dataset.csv");
	dp_load_opts o = { .target = t->header[t->ncols - 1], .bias = 1 };
	dp_load_opts o2 = { .target = t->header[t->ncols - 1], .bias = 0 };
	dp_dataset a, b;

	if (dp_dataset_load(&a, path, &o) != 0)
		return;
	check_dataset(&a, t->ncols);
	FUZZ_CHECK(a.n == t->nrows && strcmp(a.names[a.p - 1], "bias") == 0);
	FUZZ_CHECK(dp_dataset_write_csv(&a, out) == 0);
	/* The bias column is written like any other; read back as data. */
	FUZZ_CHECK(dp_dataset_load(&b, out, &o2) == 0);
	FUZZ_CHECK(b.n == a.n && b.p == a.p);
	FUZZ_CHECK(memcmp(a.x, b.x, a.n * a.p * sizeof(double)) == 0);
	FUZZ_CHECK(memcmp(a.y, b.y, a.n * sizeof(double)) == 0);
	for (size_t q = 0; q < a.p; q++)
		FUZZ_CHECK(strcmp(a.names[q], b.names[q]) == 0);
	FUZZ_CHECK(strcmp(a.target, b.target) == 0);
	dp_dataset_free(&a);
	dp_dataset_free(&b);
}

static void check_schemas(const char *path)
{
	for (size_t i = 0; i < N_SCHEMAS; i++) {
		dp_load_opts o = { .schema = schemas[i] };
		dp_dataset ds;

		if (dp_dataset_load(&ds, path, &o) != 0)
			continue;
		check_dataset(&ds, dp_schema_nfeatures(schemas[i]));
		for (size_t q = 0; q < ds.p; q++)
			FUZZ_CHECK(strcmp(ds.names[q], dp_schema_feature_names(schemas[i])[q]) == 0);
		dp_dataset_free(&ds);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in;
	dp_csv_table t;
	int rc;

	load_schemas();
	in = fuzz_util_path("in.csv");
	fuzz_util_write(in, data, size);
	rc = dp_csv_table_load(&t, in, DP_CSV_ALLOW_EMPTY);
	check_stream(in, &t, rc);
	if (rc == 0) {
		FUZZ_CHECK(t.ncols >= 1);
		check_strict(in, &t);
		check_rewrite(&t);
		check_numeric(in, &t);
		dp_csv_table_free(&t);
	}
	check_schemas(in);
	return 0;
}
