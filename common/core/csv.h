/* SPDX-License-Identifier: Apache-2.0 */
/* Strict CSV reading (RFC 4180) for datasets, plain or gzip-compressed.
 *
 * Rules (docs/data.md has the user-facing version):
 *   - a header row is required; its names must be non-empty, distinct and
 *     free of control characters;
 *   - every record has exactly as many fields as the header;
 *   - fields may be double-quoted; inside quotes, commas, line breaks and
 *     doubled quotes ("") are literal; spaces are part of a field;
 *   - lines end in LF or CRLF; a blank line is an error, and so is a bare CR
 *     outside quotes;
 *   - empty data cells (missing values) are errors unless the caller asks
 *     for them (DP_CSV_ALLOW_EMPTY) and checks them itself;
 *   - NUL bytes, unterminated quotes and malformed quoting are errors;
 *   - a leading UTF-8 byte-order mark is removed from the header;
 *   - `.gz` input is detected from the data, not the name (zlib gzopen).
 * Every problem is DP_EFORMAT with a detail "file:line: column 'name': what",
 * where line is the physical line (1 = header) on which the record starts,
 * or where a quoting error was found.  Nothing is ever skipped.
 *
 * Parsing is done by libcsv (csv.c includes its <csv.h>; ours is always
 * included by path, "common/core/csv.h", so the two never shadow each
 * other).  Users of this header never see libcsv. */
#ifndef DP_CSV_H
#define DP_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Largest physical line and largest record accepted (bytes); beyond that the
 * input is not a sensible dataset and reading stops with DP_EFORMAT. */
#define DP_CSV_MAX_LINE   (64u << 20)
#define DP_CSV_MAX_RECORD (64u << 20)

/* Flags for dp_csv_open() / dp_csv_table_load(). */
#define DP_CSV_ALLOW_EMPTY 1u  /* return empty data cells as "" (header names
				  must still be non-empty) */

/* ---- streaming reader ---------------------------------------------------- */

typedef struct dp_csv_reader dp_csv_reader;

/* (Handles, paths and output pointers in this header must not be NULL
 * unless a comment says so: DP_REQUIRE.) */

/* Open `path` (plain or gzip) and read its header row.  On success *out owns
 * the reader (dp_csv_close() it).  Errors: DP_ENOENT (cannot open; detail
 * has the reason), DP_EIO (read error), DP_EFORMAT (empty file, bad header,
 * corrupt gzip data), DP_ENOMEM, DP_EINVAL (unknown flag).  *out untouched
 * on failure. */
int dp_csv_open(const char *path, unsigned flags, dp_csv_reader **out);

/* Number of columns, header names (valid while the reader lives) and the
 * path given to dp_csv_open(). */
size_t dp_csv_ncols(const dp_csv_reader *r);
const char *const *dp_csv_header(const dp_csv_reader *r);
const char *dp_csv_source(const dp_csv_reader *r);

/* Read the next record.  Returns 1 and sets *fields (dp_csv_ncols() NUL-
 * terminated strings, valid until the next call) and *line (the physical
 * line the record starts on; may be NULL); returns 0 at the end of the
 * file; or a negative code (DP_EFORMAT, DP_EIO, DP_ENOMEM) with a detail.
 * After an error or the end, further calls return the same result. */
int dp_csv_next(dp_csv_reader *r, const char *const **fields, size_t *line);

/* Close and free; NULL is allowed. */
void dp_csv_close(dp_csv_reader *r);

/* ---- whole table in memory ----------------------------------------------- */

typedef struct dp_csv_table {
	char *source;        /* path it was read from */
	size_t ncols;
	char **header;       /* ncols names */
	size_t nrows;        /* data records (header excluded) */
	char **cells;        /* nrows*ncols strings, row-major */
	size_t *line;        /* nrows: line each record starts on */
	char *arena_;        /* private: storage behind header and cells */
} dp_csv_table;

/* Read all of `path` into `t` (overwritten).  Same rules and errors as the
 * streaming reader; a file with a header and no records gives nrows == 0.
 * On failure `t` is left zeroed.  Free with dp_csv_table_free(). */
int dp_csv_table_load(dp_csv_table *t, const char *path, unsigned flags);

/* Free what `t` holds and zero it; a zeroed table is allowed. */
void dp_csv_table_free(dp_csv_table *t);

/* Cell (row, col) of a loaded table. */
static inline const char *dp_csv_cell(const dp_csv_table *t, size_t row, size_t col)
{
	return t->cells[row * t->ncols + col];
}

/* ---- helpers shared by dataset.c, schema_bind.c and the tools ------------ */

/* Index of column `name` in `header`, or -1. */
long dp_csv_find(const char *const *header, size_t ncols, const char *name);

/* Strict number: the whole cell must be a decimal number (optional sign,
 * digits with an optional '.', optional exponent) and finite.  No spaces,
 * no hex, no "nan"/"inf".  Returns 0, or DP_EFORMAT without a detail (the
 * caller knows file, line and column). */
int dp_csv_parse_number(const char *s, double *out);

/* Does s hold a control character (a byte below 0x20, or 0x7f)?  Names and
 * values that end up in one-line messages must not. */
bool dp_csv_has_control(const char *s);

/* Write `names` as "a, b, c" into buf (always NUL-terminated), stopping
 * with ", ..." when it does not fit; control characters escaped as in
 * dp_csv_show(); for error details. */
void dp_csv_format_names(char *buf, size_t size, const char *const *names, size_t n);

/* A value made fit for a one-line message: control characters written as
 * \n, \r, \t or \xHH, cut with "..." to fit `size` (>= 8) bytes.  Writes
 * into buf and returns it. */
const char *dp_csv_show(const char *s, char *buf, size_t size);

/* Write one field to `f`, double-quoted when it contains a comma, a quote,
 * CR, LF or leading/trailing space, or is empty.  0 or DP_EIO. */
int dp_csv_write_field(FILE *f, const char *s);

#endif
