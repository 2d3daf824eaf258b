/* SPDX-License-Identifier: Apache-2.0 */
/* Driving gnuplot for the figures of tools/lib/plot.h.  A figure is a
 * gnuplot script built in memory (its data inline as datablocks, so one
 * script file is the whole input), run by gnuplot as a subprocess (found
 * on PATH), with the figure written to a temporary name next to the output
 * and renamed over it only when gnuplot succeeded.  PNG uses the pngcairo
 * terminal when gnuplot has it, png otherwise; SVG the svg terminal, PDF
 * pdfcairo.  A figure can also keep the numbers it draws as CSV
 * (--data-out), written only once the figure is. */
#ifndef DP_TOOLS_GNUPLOT_H
#define DP_TOOLS_GNUPLOT_H

#include <stddef.h>
#include <stdio.h>

/* Output formats, chosen by the extension of the output file. */
enum dp_gnuplot_format { DP_GNUPLOT_PNG, DP_GNUPLOT_SVG, DP_GNUPLOT_PDF };

/* The format of `out` from its extension (.png, .svg, .pdf, any case).
 * Errors: DP_EINVAL (another or no extension; the detail names the three). */
int dp_gnuplot_format_of(const char *out, enum dp_gnuplot_format *fmt);

/* 0 when gnuplot is on PATH, else DP_ENOENT with a one-line detail that
 * names the Debian package. */
int dp_gnuplot_check(void);

/* What every figure has: its title, size and --data-out.  The strings are
 * borrowed for as long as the figure is being written. */
typedef struct dp_gnuplot_page {
	const char *title;        /* as given, or NULL: the figure's default */
	const char *context;      /* second line of the default title, or NULL */
	const char *data_out;     /* also write the drawn data as CSV here, or NULL */
	unsigned width, height;   /* pixels; 0 = 1000 x 600 */
	int preset;               /* DP_GNUPLOT_SIZE_*: a printed size, which
				     replaces width and height */
} dp_gnuplot_page;

/* Printed sizes (docs/plots.md "Sizes"): a journal column, 3.5 x 2.6 in
 * with 7 pt text, and a page's width, 7.0 x 4.3 in with 9 pt text.  PDF
 * draws them in inches, PNG and SVG at 150 pixels per inch with the text
 * in proportion; the default title is left out (the caption says it in a
 * paper) and a legend beside the plot goes below it. */
enum { DP_GNUPLOT_SIZE_PIXELS, DP_GNUPLOT_SIZE_COLUMN, DP_GNUPLOT_SIZE_PAGE };

/* A figure being written.  The figure writes its gnuplot commands and
 * datablocks to f, and its CSV rows to csv when csv is not NULL; the rest
 * belongs to this module. */
typedef struct dp_gnuplot {
	FILE *f;                  /* the script's body */
	FILE *csv;                /* the --data-out rows after the header, or NULL */
	dp_gnuplot_page page;
	char *body, *csvtext;
	size_t len, csvlen;
} dp_gnuplot;

/* Start a figure: g->f open, and g->csv open with csv_header as its first
 * line when page->data_out is set.  Errors: DP_ENOMEM (g holds nothing
 * then).  End with dp_gnuplot_finish or dp_gnuplot_abandon. */
int dp_gnuplot_begin(dp_gnuplot *g, const dp_gnuplot_page *page, const char *csv_header);

/* Draw the figure to `out` (PNG, SVG or PDF by dp_gnuplot_format_of), then
 * write page->data_out (replaced only when the figure was written).
 * Always releases g.  Errors: DP_EINVAL (bad output path), DP_ENOENT
 * (gnuplot not on PATH), DP_EIO (gnuplot failed, the detail is its last
 * line; or --data-out could not be written), DP_ENOMEM; out is untouched
 * when the figure failed. */
int dp_gnuplot_finish(dp_gnuplot *g, const char *out);

/* Release a figure that will not be drawn. */
void dp_gnuplot_abandon(dp_gnuplot *g);

/* The figure's title command: `cmd` ("set title", or "title" after
 * "set multiplot") with page->title, or the default `deflt` with
 * page->context on a second line. */
void dp_gnuplot_title(dp_gnuplot *g, const char *cmd, const char *deflt);

/* A gnuplot double-quoted string: backslash and quote escaped, control
 * characters (other than newline, which becomes a line break) dropped. */
void dp_gnuplot_quoted(FILE *f, const char *s);

/* A name as a field of a datablock: double-quoted, without quotes inside. */
void dp_gnuplot_data_quoted(FILE *f, const char *s);

/* One CSV text field: quoted when it holds a comma, quote or line break. */
void dp_gnuplot_csv_text(FILE *f, const char *s);

/* A logarithmic axis ("x" or "y") with its minor ticks: nine per decade. */
void dp_gnuplot_logscale(FILE *f, const char *axis);

/* The legend beside the plot, on the right, with `more` (e.g. a title
 * clause; "" for none): below it, horizontal, at a printed size, where
 * the width is the plot's. */
void dp_gnuplot_key_right(dp_gnuplot *g, const char *more);

#endif
