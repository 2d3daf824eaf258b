/* SPDX-License-Identifier: Apache-2.0 */
/* Strict CSV reader on top of libcsv and zlib; see csv.h for the rules.
 *
 * The input is read in blocks with gzread() (gzopen() reads plain files
 * transparently) and cut into physical lines here rather than with
 * gzgets(): gzgets() cannot tell an embedded NUL byte from the end of the
 * line.  Each line is fed to libcsv on its own, so the line on which every
 * record starts is known exactly. */
#include "common/core/csv.h"
#include "common/core/error.h"
#include "common/core/mem.h"

#include <csv.h>   /* libcsv: ours is included by path, so nothing shadows it */

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Bytes read (and inflated) at a time.  The fuzzing build sets a small
 * one (docs/fuzz.md): allocations of this size per open dominate a fuzz
 * run's time under ASan, and small blocks put more block boundaries inside
 * short inputs. */
#ifndef DP_CSV_BLOCK_SIZE
#define DP_CSV_BLOCK_SIZE (128u << 10)
#endif
#define BLOCK_SIZE DP_CSV_BLOCK_SIZE

struct dp_csv_reader {
	gzFile gz;
	char *source;
	unsigned flags;
	struct csv_parser parser;
	int parser_live;

	unsigned char *blk;   /* raw input block */
	size_t blk_len, blk_pos;
	int eof;              /* gzread reported the end */

	char *ln;             /* current physical line */
	size_t ln_len, ln_cap;
	size_t lineno;        /* number of the line in `ln` */

	/* record being assembled: NUL-terminated fields back to back */
	char *rec;
	size_t rec_len, rec_cap;
	size_t *off;          /* start of each field in rec */
	size_t nf, nf_cap;
	const char **fields;  /* handed out by dp_csv_next */
	size_t rec_line;      /* line the record started on */
	int rec_ready;        /* a complete record waits in rec */
	int rows_this_line;   /* records ended while feeding the current line */
	int at_row_start;     /* no record in progress */

	size_t ncols;         /* 0 while the header is being read */
	char **header;
	char *header_buf;

	int err;              /* sticky error (0, or a negative code) */
	int done;             /* the end has been reached and reported */
};

/* libcsv's default trims blanks around unquoted fields; RFC 4180 says
 * spaces are part of a field, and a silent trim would hide "1 " vs "1". */
static int no_space(unsigned char c)
{
	(void)c;
	return 0;
}

static const char *colname(const dp_csv_reader *r, size_t idx, char *buf, size_t size)
{
	if (r->ncols == 0 || idx >= r->ncols) {
		snprintf(buf, size, "#%zu", idx + 1);
		return buf;
	}
	return r->header[idx];
}

static int reader_fail(dp_csv_reader *r, int code, size_t line, size_t col, const char *what)
{
	char tmp[32];

	if (r->err != 0)
		return r->err;
	r->err = dp_error_set(code, "%s:%zu: column '%s': %s", r->source, line,
			      colname(r, col, tmp, sizeof(tmp)), what);
	return r->err;
}

/* libcsv field callback: copy the field into the record buffer. */
static void on_field(void *s, size_t len, void *data)
{
	dp_csv_reader *r = data;
	const char *src = s ? s : "";
	size_t col = r->nf;

	if (r->err != 0)
		return;
	if (memchr(src, '\0', len) != NULL) {
		reader_fail(r, DP_EFORMAT, r->rec_line, col, "contains a NUL byte");
		return;
	}
	if (len == 0 && (r->ncols == 0 || !(r->flags & DP_CSV_ALLOW_EMPTY))) {
		reader_fail(r, DP_EFORMAT, r->rec_line, col,
			     r->ncols == 0 ? "empty column name in the header"
					   : "empty cell (missing value; dpasync does not impute)");
		return;
	}
	if (r->rec_len + len + 1 > DP_CSV_MAX_RECORD) {
		reader_fail(r, DP_EFORMAT, r->rec_line, col, "record larger than 64 MiB");
		return;
	}
	if (dp_mem_reserve(&r->rec, &r->rec_cap, r->rec_len + len + 1, 1, 1024) != 0 ||
	    dp_mem_reserve(&r->off, &r->nf_cap, r->nf + 1, sizeof(*r->off), 16) != 0) {
		r->err = DP_ENOMEM;
		return;
	}
	r->off[r->nf++] = r->rec_len;
	memcpy(r->rec + r->rec_len, src, len);
	r->rec_len += len;
	r->rec[r->rec_len++] = '\0';
}

/* libcsv record callback: check the field count and mark the record ready. */
static void on_record(int c, void *data)
{
	dp_csv_reader *r = data;
	char what[160];

	(void)c;
	if (r->err != 0)
		return;
	r->rows_this_line++;
	if (r->rows_this_line > 1) {
		r->err = dp_error_set(DP_EFORMAT,
				      "%s:%zu: carriage return inside a line (outside quotes); "
				      "lines must end in LF or CRLF", r->source, r->lineno);
		return;
	}
	if (r->ncols != 0 && r->nf != r->ncols) {
		if (r->nf < r->ncols)
			snprintf(what, sizeof(what), "missing: the row has %zu fields, the header %zu",
				 r->nf, r->ncols);
		else
			snprintf(what, sizeof(what),
				 "extra field(s): the row has %zu fields, the header %zu", r->nf,
				 r->ncols);
		reader_fail(r, DP_EFORMAT, r->rec_line, r->nf < r->ncols ? r->nf : r->ncols,
			     what);
		return;
	}
	r->rec_ready = 1;
}

/* Read the next physical line into r->ln (with its LF).  1: a line, 0: end. */
static int read_line(dp_csv_reader *r)
{
	r->ln_len = 0;
	for (;;) {
		if (r->blk_pos == r->blk_len) {
			int n;

			if (r->eof)
				return r->ln_len > 0;
			n = gzread(r->gz, r->blk, BLOCK_SIZE);
			int zerr = Z_OK;
			const char *msg = n <= 0 ? gzerror(r->gz, &zerr) : NULL;

			/* A truncated gzip stream ends with 0 and Z_BUF_ERROR, not -1. */
			if (n < 0 || (n == 0 && zerr != Z_OK)) {
				if (zerr == Z_ERRNO)
					r->err = dp_error_set(DP_EIO, "%s:%zu: read failed: %s",
							      r->source, r->lineno + 1,
							      strerror(errno));
				else {
					/* gzerror() prefixes the path; we print it already. */
					size_t pl = strlen(r->source);

					if (strncmp(msg, r->source, pl) == 0 && msg[pl] == ':' &&
					    msg[pl + 1] == ' ')
						msg += pl + 2;
					r->err = dp_error_set(DP_EFORMAT,
							      "%s:%zu: corrupt gzip data: %s",
							      r->source, r->lineno + 1, msg);
				}
				return r->err;
			}
			if (n == 0) {
				r->eof = 1;
				return r->ln_len > 0;
			}
			r->blk_len = (size_t)n;
			r->blk_pos = 0;
		}
		const unsigned char *start = r->blk + r->blk_pos;
		size_t avail = r->blk_len - r->blk_pos;
		const unsigned char *nl = memchr(start, '\n', avail);
		size_t take = nl ? (size_t)(nl - start) + 1 : avail;

		if (r->ln_len + take + 1 > DP_CSV_MAX_LINE) {
			r->err = dp_error_set(DP_EFORMAT, "%s:%zu: line longer than 64 MiB",
					      r->source, r->lineno + 1);
			return r->err;
		}
		if (dp_mem_reserve(&r->ln, &r->ln_cap, r->ln_len + take + 1, 1, 4096) != 0) {
			r->err = DP_ENOMEM;
			return r->err;
		}
		memcpy(r->ln + r->ln_len, start, take);
		r->ln_len += take;
		r->blk_pos += take;
		if (nl != NULL)
			return 1;
	}
}

/* Feed lines to libcsv until a record is complete (1), the input ends (0)
 * or an error (< 0). */
static int advance(dp_csv_reader *r)
{
	r->rec_ready = 0;
	r->rec_len = 0;
	r->nf = 0;
	for (;;) {
		int got = read_line(r);

		if (got < 0)
			return got;
		if (got == 0) {
			/* End of input: flush a last record without a final LF. */
			if (csv_fini(&r->parser, on_field, on_record, r) != 0) {
				char what[96];

				snprintf(what, sizeof(what),
					 "unterminated quoted field (no closing quote before the end "
					 "of the file, line %zu)", r->lineno);
				return reader_fail(r, DP_EFORMAT, r->rec_line, r->nf, what);
			}
			if (r->err != 0)
				return r->err;
			return r->rec_ready;
		}
		r->lineno++;
		if (r->lineno == 1 && r->ln_len >= 3 && memcmp(r->ln, "\xEF\xBB\xBF", 3) == 0) {
			memmove(r->ln, r->ln + 3, r->ln_len - 3);
			r->ln_len -= 3;
		}
		if (r->at_row_start) {
			if ((r->ln_len == 1 && r->ln[0] == '\n') ||
			    (r->ln_len == 2 && r->ln[0] == '\r' && r->ln[1] == '\n') ||
			    (r->ln_len == 1 && r->ln[0] == '\r')) {
				r->err = dp_error_set(DP_EFORMAT, "%s:%zu: empty line (blank lines "
						      "are not allowed)", r->source, r->lineno);
				return r->err;
			}
			r->rec_line = r->lineno;
		}
		r->rows_this_line = 0;
		size_t used = csv_parse(&r->parser, r->ln, r->ln_len, on_field, on_record, r);

		if (r->err != 0)
			return r->err;
		if (used != r->ln_len) {
			char what[128];

			if (csv_error(&r->parser) != CSV_EPARSE) {
				r->err = DP_ENOMEM;
				return r->err;
			}
			snprintf(what, sizeof(what),
				 "malformed quoting at character %zu of the line (a quote must open "
				 "the field, be doubled inside it and close it)",
				 used + 1);
			return reader_fail(r, DP_EFORMAT, r->lineno, r->nf, what);
		}
		/* libcsv keeps an open quoted field in its own buffer: cap it too. */
		if (csv_get_buffer_size(&r->parser) > DP_CSV_MAX_RECORD)
			return reader_fail(r, DP_EFORMAT, r->rec_line, r->nf,
					    "field larger than 64 MiB (unterminated quote?)");
		r->at_row_start = r->rows_this_line > 0;
		if (r->rec_ready)
			return 1;
	}
}

void dp_csv_close(dp_csv_reader *r)
{
	if (r == NULL)
		return;
	if (r->gz != NULL)
		gzclose(r->gz);
	if (r->parser_live)
		csv_free(&r->parser);
	free(r->source);
	free(r->blk);
	free(r->ln);
	free(r->rec);
	free(r->off);
	free(r->fields);
	free(r->header);
	free(r->header_buf);
	free(r);
}

int dp_csv_open(const char *path, unsigned flags, dp_csv_reader **out)
{
	dp_csv_reader *r;
	int rc;

	DP_REQUIRE(path != NULL && out != NULL);
	if (flags & ~DP_CSV_ALLOW_EMPTY)
		return dp_error_set(DP_EINVAL, "csv: unknown flags %#x", flags);
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return DP_ENOMEM;
	r->flags = flags;
	r->at_row_start = 1;
	r->source = strdup(path);
	r->blk = malloc(BLOCK_SIZE);
	if (r->source == NULL || r->blk == NULL) {
		rc = DP_ENOMEM;
		goto fail;
	}
	if (csv_init(&r->parser, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) {
		rc = DP_ENOMEM;
		goto fail;
	}
	r->parser_live = 1;
	csv_set_space_func(&r->parser, no_space);
	csv_set_blk_size(&r->parser, 4096);

	errno = 0;
	r->gz = gzopen(path, "rb");
	if (r->gz == NULL) {
		rc = dp_error_set(errno == ENOMEM ? DP_ENOMEM : DP_ENOENT, "%s: cannot open: %s",
				  path, errno ? strerror(errno) : "gzopen failed");
		goto fail;
	}
	gzbuffer(r->gz, BLOCK_SIZE);

	rc = advance(r);
	if (rc < 0)
		goto fail;
	if (rc == 0) {
		rc = dp_error_set(DP_EFORMAT, "%s: empty file (a header row is required)", path);
		goto fail;
	}
	/* Keep the header in its own buffer; rec is reused for every record. */
	r->header_buf = malloc(r->rec_len);
	r->header = calloc(r->nf, sizeof(*r->header));
	r->fields = calloc(r->nf, sizeof(*r->fields));
	if (r->header_buf == NULL || r->header == NULL || r->fields == NULL) {
		rc = DP_ENOMEM;
		goto fail;
	}
	memcpy(r->header_buf, r->rec, r->rec_len);
	for (size_t i = 0; i < r->nf; i++)
		r->header[i] = r->header_buf + r->off[i];
	r->ncols = r->nf;
	for (size_t i = 0; i < r->ncols; i++) {
		if (dp_csv_has_control(r->header[i])) {
			char shown[64], what[128];

			snprintf(what, sizeof(what), "column name '%s' contains a control character",
				 dp_csv_show(r->header[i], shown, sizeof(shown)));
			/* the name itself cannot be printed as is */
			r->ncols = 0;
			rc = reader_fail(r, DP_EFORMAT, r->rec_line, i, what);
			goto fail;
		}
	}
	/* A name that still starts with a byte-order mark (a doubled mark, or
	 * one inside quotes) holds an invisible character, and the file would
	 * not read back the same once written: the mark would be taken off. */
	if (r->ncols > 0 && strncmp(r->header[0], "\xEF\xBB\xBF", 3) == 0) {
		r->ncols = 0;  /* named "#1": the name would print invisibly */
		rc = reader_fail(r, DP_EFORMAT, r->rec_line, 0,
				 "column name starts with a second byte-order mark");
		goto fail;
	}
	for (size_t i = 1; i < r->ncols; i++) {
		for (size_t j = 0; j < i; j++) {
			if (strcmp(r->header[i], r->header[j]) == 0) {
				char what[64];

				snprintf(what, sizeof(what), "duplicate column name (also column %zu)",
					 j + 1);
				rc = reader_fail(r, DP_EFORMAT, r->rec_line, i, what);
				goto fail;
			}
		}
	}
	*out = r;
	return 0;
fail:
	dp_csv_close(r);
	return rc;
}

size_t dp_csv_ncols(const dp_csv_reader *r)
{
	DP_REQUIRE(r != NULL);
	return r->ncols;
}

const char *const *dp_csv_header(const dp_csv_reader *r)
{
	DP_REQUIRE(r != NULL);
	return (const char *const *)r->header;
}

const char *dp_csv_source(const dp_csv_reader *r)
{
	DP_REQUIRE(r != NULL);
	return r->source;
}

int dp_csv_next(dp_csv_reader *r, const char *const **fields, size_t *line)
{
	int rc;

	DP_REQUIRE(r != NULL && fields != NULL);
	if (r->err != 0)
		return r->err;
	if (r->done)
		return 0;
	rc = advance(r);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		r->done = 1;
		return 0;
	}
	for (size_t i = 0; i < r->ncols; i++)
		r->fields[i] = r->rec + r->off[i];
	*fields = r->fields;
	if (line != NULL)
		*line = r->rec_line;
	return 1;
}

/* ---- table ---------------------------------------------------------------- */

void dp_csv_table_free(dp_csv_table *t)
{
	if (t == NULL)
		return;
	free(t->source);
	free(t->header);
	free(t->cells);
	free(t->line);
	free(t->arena_);
	memset(t, 0, sizeof(*t));
}

int dp_csv_table_load(dp_csv_table *t, const char *path, unsigned flags)
{
	dp_csv_reader *r = NULL;
	dp_csv_table tab = { 0 };
	size_t *offs = NULL; /* cell offsets into the arena until it stops moving */
	size_t arena_len = 0, arena_cap = 0, offs_cap = 0, line_cap = 0;
	const char *const *f;
	size_t line;
	int rc;

	DP_REQUIRE(t != NULL && path != NULL);
	memset(t, 0, sizeof(*t));
	rc = dp_csv_open(path, flags, &r);
	if (rc != 0)
		return rc;
	tab.ncols = r->ncols;
	tab.source = strdup(path);
	if (tab.source == NULL) {
		rc = DP_ENOMEM;
		goto fail;
	}
	/* The header goes first into the arena. */
	for (int first = 1;; first = 0) {
		const char *const *src;

		if (first) {
			src = dp_csv_header(r);
			line = 1;
		} else {
			rc = dp_csv_next(r, &f, &line);
			if (rc < 0)
				goto fail;
			if (rc == 0)
				break;
			src = f;
		}
		size_t need = 0;

		for (size_t j = 0; j < tab.ncols; j++)
			need += strlen(src[j]) + 1;
		size_t row = first ? 0 : tab.nrows + 1; /* slot 0 is the header */

		/* (row + 1) * ncols cannot overflow: every cell takes at least
		 * its NUL in the arena, which is reserved first. */
		rc = dp_mem_reserve(&tab.arena_, &arena_cap, arena_len + need, 1, 65536);
		if (rc == 0)
			rc = dp_mem_reserve(&offs, &offs_cap, (row + 1) * tab.ncols, sizeof(*offs),
					    1024 * tab.ncols);
		if (rc == 0)
			rc = dp_mem_reserve(&tab.line, &line_cap, row + 1, sizeof(*tab.line), 1024);
		if (rc != 0)
			goto fail;
		for (size_t j = 0; j < tab.ncols; j++) {
			size_t len = strlen(src[j]) + 1;

			offs[row * tab.ncols + j] = arena_len;
			memcpy(tab.arena_ + arena_len, src[j], len);
			arena_len += len;
		}
		tab.line[row] = line;
		if (!first)
			tab.nrows++;
	}
	/* Row 0 of offs/line is the header; shift lines so line[i] is data row i. */
	memmove(tab.line, tab.line + 1, tab.nrows * sizeof(*tab.line));
	tab.header = malloc(tab.ncols * sizeof(*tab.header));
	tab.cells = malloc((tab.nrows ? tab.nrows : 1) * tab.ncols * sizeof(*tab.cells));
	if (tab.header == NULL || tab.cells == NULL) {
		rc = DP_ENOMEM;
		goto fail;
	}
	for (size_t j = 0; j < tab.ncols; j++)
		tab.header[j] = tab.arena_ + offs[j];
	for (size_t i = 0; i < tab.nrows * tab.ncols; i++)
		tab.cells[i] = tab.arena_ + offs[tab.ncols + i];
	free(offs);
	dp_csv_close(r);
	*t = tab;
	return 0;
fail:
	free(offs);
	dp_csv_close(r);
	dp_csv_table_free(&tab);
	return rc;
}

/* ---- helpers --------------------------------------------------------------- */

long dp_csv_find(const char *const *header, size_t ncols, const char *name)
{
	DP_REQUIRE((header != NULL || ncols == 0) && name != NULL);
	for (size_t j = 0; j < ncols; j++)
		if (strcmp(header[j], name) == 0)
			return (long)j;
	return -1;
}

int dp_csv_parse_number(const char *s, double *out)
{
	const char *c = s;
	size_t digits = 0;
	char *end;
	double v;

	DP_REQUIRE(s != NULL && out != NULL);
	/* Check the shape first: strtod alone would take " 1", "0x1p3", "nan",
	 * "inf" and locale-specific forms. */
	if (*c == '+' || *c == '-')
		c++;
	while (isdigit((unsigned char)*c)) {
		c++;
		digits++;
	}
	if (*c == '.') {
		c++;
		while (isdigit((unsigned char)*c)) {
			c++;
			digits++;
		}
	}
	if (digits == 0)
		return DP_EFORMAT;
	if (*c == 'e' || *c == 'E') {
		c++;
		if (*c == '+' || *c == '-')
			c++;
		if (!isdigit((unsigned char)*c))
			return DP_EFORMAT;
		while (isdigit((unsigned char)*c))
			c++;
	}
	if (*c != '\0')
		return DP_EFORMAT;
	errno = 0;
	v = strtod(s, &end);
	if (*end != '\0' || !isfinite(v))
		return DP_EFORMAT;
	*out = v;
	return 0;
}

static bool is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

bool dp_csv_has_control(const char *s)
{
	DP_REQUIRE(s != NULL);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		if (is_control(*c))
			return true;
	return false;
}

/* Escaped form of byte c into esc (at most 4 bytes, no NUL); its length. */
static size_t escape_byte(unsigned char c, char *esc)
{
	static const char hex[] = "0123456789abcdef";

	if (!is_control(c)) {
		esc[0] = (char)c;
		return 1;
	}
	esc[0] = '\\';
	if (c == '\n' || c == '\r' || c == '\t') {
		esc[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
		return 2;
	}
	esc[1] = 'x';
	esc[2] = hex[c >> 4];
	esc[3] = hex[c & 15];
	return 4;
}

const char *dp_csv_show(const char *s, char *buf, size_t size)
{
	const unsigned char *c;
	size_t total = 0, k = 0, limit;
	char esc[4];

	DP_REQUIRE(s != NULL && buf != NULL && size >= 8);
	for (c = (const unsigned char *)s; *c; c++)
		total += escape_byte(*c, esc);
	/* All of it when it fits, else as much as fits before "...". */
	limit = total < size ? total : size - 4;
	for (c = (const unsigned char *)s; *c; c++) {
		size_t n = escape_byte(*c, esc);

		if (k + n > limit)
			break;
		memcpy(buf + k, esc, n);
		k += n;
	}
	if (total >= size) {
		memcpy(buf + k, "...", 3);
		k += 3;
	}
	buf[k] = '\0';
	return buf;
}

void dp_csv_format_names(char *buf, size_t size, const char *const *names, size_t n)
{
	size_t used = 0;

	DP_REQUIRE(buf != NULL && (names != NULL || n == 0));
	if (size == 0)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		char shown[128];
		size_t len;

		dp_csv_show(names[i], shown, sizeof(shown));
		len = strlen(shown) + (i ? 2 : 0);
		/* leave room for ", ..." */
		if (used + len + 6 > size) {
			if (used + 6 <= size)
				memcpy(buf + used, i ? ", ..." : "...", i ? 6 : 4);
			return;
		}
		used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", shown);
	}
}

int dp_csv_write_field(FILE *f, const char *s)
{
	size_t len;
	int quote;

	DP_REQUIRE(f != NULL && s != NULL);
	len = strlen(s);
	quote = len == 0 || strpbrk(s, ",\"\r\n") != NULL || s[0] == ' ' || s[0] == '\t' ||
		s[len - 1] == ' ' || s[len - 1] == '\t';
	if (!quote)
		return fputs(s, f) < 0 ? DP_EIO : 0;
	if (fputc('"', f) == EOF)
		return DP_EIO;
	for (const char *c = s; *c; c++) {
		if (*c == '"' && fputc('"', f) == EOF)
			return DP_EIO;
		if (fputc(*c, f) == EOF)
			return DP_EIO;
	}
	return fputc('"', f) == EOF ? DP_EIO : 0;
}
