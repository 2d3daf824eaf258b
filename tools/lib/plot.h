/* SPDX-License-Identifier: Apache-2.0 */
/* Figures of runs for `dpasync plot` and `dpasync report`: readers for a
 * learnerd trace.csv, a sim schedule.txt and a sim psi.csv, and one
 * function per figure kind.  Figures are PNG, SVG or PDF files (by the
 * output's extension) drawn by gnuplot, run as a subprocess (found on PATH)
 * on a generated script; PNG uses the pngcairo terminal when gnuplot has
 * it, png otherwise; SVG the svg terminal, PDF pdfcairo.  Each figure can
 * also write the numbers it draws as CSV (dp_plot_opts.data_out).
 * docs/plots.md describes every figure. */
#ifndef DP_TOOLS_PLOT_H
#define DP_TOOLS_PLOT_H

#include <stddef.h>

/* One run's iterations: a learnerd trace.csv (docs/learnerd.md §4) or a
 * schedule.txt (one 1-based owner number per line; then t, wait, rtt and
 * eps are NULL and the owners are named owner-1 .. owner-N, N the largest
 * number seen). */
typedef struct dp_plot_trace {
	size_t n;           /* iterations (rows) */
	size_t *k;          /* n iteration numbers, strictly increasing */
	size_t *owner;      /* n indices into names */
	double *t;          /* n Unix times the updates were applied (s), or NULL */
	double *wait;       /* n seconds in the learner's queue, or NULL */
	double *rtt;        /* n query round trips (s), or NULL */
	double *eps;        /* n epsilon the owner reported spent, or NULL */
	double *stale;      /* n staleness values, or NULL (a trace written
			     * before the column existed, or a schedule) */
	size_t N;           /* owners */
	char **names;       /* N owner names in natural order ("owner-2" < "owner-10") */
	char *job;          /* the job column (the same on every row), or NULL (a
			     * trace written before the column existed, or a
			     * schedule) */
} dp_plot_trace;

/* Read `path`, a trace.csv (recognised by its header) or a schedule.txt.
 * `extra` (nextra names, may be NULL) adds owners that may have no
 * iteration, e.g. the job's owners from checkpoint.json.  A final line
 * without a newline that does not parse is taken as torn by a crash and
 * skipped.  On success *tr is filled (free with dp_plot_trace_free).
 * Errors: DP_ENOENT, DP_EIO, DP_EFORMAT (detail "file:line: ..."),
 * DP_ENOMEM. */
int dp_plot_trace_read(const char *path, const char *const *extra, size_t nextra,
		       dp_plot_trace *tr);
void dp_plot_trace_free(dp_plot_trace *tr);

/* Start of the run: the first query, the earliest time_unix - rtt_s of
 * the trace (trace only; docs/plots.md "Throughput").  Waiting for owners
 * and for the first request is not counted. */
double dp_plot_trace_start(const dp_plot_trace *tr);

/* The line that names a run in the default titles: "job J, dataset D".
 * J is `job`, else the job column of trace_path's first row, else the
 * "job" of model.json (or checkpoint.json) beside trace_path, else the name of trace_path's directory; D is `dataset`,
 * else "target T, P features" from that model.json, else left out.
 * Never fails; buf is "" when nothing is known. */
void dp_plot_run_context(const char *trace_path, const char *job, const char *dataset, char *buf,
			 size_t size);

/* Compare the owner sequence in the schedule file `path` with the trace's
 * (owner number j of the schedule is names[j-1] of the trace, whatever the
 * names).  Errors: DP_ENOENT, DP_EIO, DP_EFORMAT, DP_EINVAL (they differ;
 * the detail gives the first k). */
int dp_plot_schedule_check(const char *path, const dp_plot_trace *tr);

/* Clock rates of the trace's owners from the text of a --rates option:
 * "R1,R2,..." (owners in natural order), "NAME=R,NAME=R,..." or a mix (a
 * bare value is for the owner at its position in the list).  Every owner
 * needs exactly one positive rate.  On success *out holds tr->N rates
 * (free() it).  Errors: DP_EINVAL (detail "--rates ..."), DP_ENOMEM. */
int dp_plot_rates(const char *arg, const dp_plot_trace *tr, double **out);

/* A sim psi.csv: k,psi_p25,psi_median,psi_p75,psi_mean. */
typedef struct dp_plot_psi {
	size_t n;
	size_t *k;
	double *p25, *p50, *p75, *mean;
} dp_plot_psi;

/* Errors: DP_ENOENT, DP_EIO, DP_EFORMAT, DP_ENOMEM.  Free with
 * dp_plot_psi_free. */
int dp_plot_psi_read(const char *path, dp_plot_psi *ps);
void dp_plot_psi_free(dp_plot_psi *ps);

/* Facts about the sim run that wrote psi_path, from summary.json in the
 * same directory: a note such as "10 runs, async, linear, N = 3, T = 1000,
 * ε = 1" (empty when there is no readable summary) and the number of
 * repeats in *runs (0 when unknown).  Never fails. */
void dp_plot_sim_note(const char *psi_path, char *note, size_t size, size_t *runs);

/* Percentile pct (0..100) of v[n] with linear interpolation between order
 * statistics (numpy's default); sorts v in place.  NaN when n = 0. */
double dp_plot_percentile(double *v, size_t n, double pct);

/* Output formats, chosen by the extension of the output file. */
enum dp_plot_format { DP_PLOT_PNG, DP_PLOT_SVG, DP_PLOT_PDF };

/* The format of `out` from its extension (.png, .svg, .pdf, any case).
 * Errors: DP_EINVAL (another or no extension; the detail names the three). */
int dp_plot_format_of(const char *out, enum dp_plot_format *fmt);

/* Options common to every figure.  title NULL: the figure's default. */
typedef struct dp_plot_opts {
	const char *title;
	const char *context;      /* second line of the default title (the job and
				   * dataset, dp_plot_run_context), or NULL */
	const char *data_out;     /* also write the drawn data as CSV here (replaced
				   * only when the figure was written), or NULL */
	unsigned width, height;   /* pixels; 0 = 1000 x 600 */
	int logx;                 /* psi, psi-time: logarithmic k / time axis */
	int linear;               /* psi, psi-time: linear psi axis; cdf: linear time axis */
} dp_plot_opts;

/* 0 when gnuplot is on PATH, else DP_ENOENT with a one-line detail that
 * names the Debian package. */
int dp_plot_gnuplot_check(void);

/* The figures.  Each writes the figure (PNG, SVG or PDF by the extension
 * of `out`, dp_plot_format_of) to a temporary file next to `out` and
 * renames it over `out` when gnuplot succeeded (out untouched otherwise).
 * Errors: DP_EINVAL (nothing to plot, inconsistent inputs), DP_ENOENT
 * (gnuplot not on PATH), DP_EIO (gnuplot failed; the detail is its
 * message), DP_ENOMEM. */

/* Owner of each iteration against k (the paper's Fig. 3); kmax > 0 keeps
 * iterations k <= kmax. */
int dp_plot_owners(const dp_plot_trace *tr, size_t kmax, const dp_plot_opts *o, const char *out);

/* psi median and 25-75 % band against k for ns runs (ps[ns], labels[ns]);
 * header_note (may be NULL) is added to the default title. */
int dp_plot_psi_k(const dp_plot_psi *ps, const char *const *labels, size_t ns,
		  const char *header_note, const dp_plot_opts *o, const char *out);

/* A measured psi curve: psi of a learnerd model at seconds since training
 * started, as scripts/reproduce/async_vs_sync.py writes it (header
 * time_s,k,psi; time non-decreasing, psi finite and >= 0).  Errors:
 * DP_ENOENT, DP_EIO, DP_EFORMAT, DP_ENOMEM.  Free with dp_plot_wall_free. */
typedef struct dp_plot_wall {
	size_t n;
	double *t, *psi;
	size_t *k;
} dp_plot_wall;
int dp_plot_wall_read(const char *path, dp_plot_wall *w);
void dp_plot_wall_free(dp_plot_wall *w);
/* Measured curves w[ns] on one figure, psi against seconds, one label each. */
int dp_plot_psi_wall(const dp_plot_wall *w, const char *const *labels, size_t ns,
		     const dp_plot_opts *o, const char *out);

/* psi of ps (sim --schedule of tr's owner order) against the wall-clock
 * time of iteration k in trace tr, seconds since dp_plot_trace_start.
 * Needs every k of ps in tr.  runs (0 = unknown) goes into the title. */
int dp_plot_psi_time(const dp_plot_psi *ps, const dp_plot_trace *tr, size_t runs,
		     const dp_plot_opts *o, const char *out);

/* The owner of each iteration against the time its update was applied,
 * in seconds since dp_plot_trace_start, the first query (trace only). */
int dp_plot_owners_wall(const dp_plot_trace *tr, const dp_plot_opts *o, const char *out);

/* Each owner's share of iterations against its median query round trip
 * and, when rates (tr->N clock rates) is not NULL, its clock rate. */
int dp_plot_shares(const dp_plot_trace *tr, const double *rates, const dp_plot_opts *o,
		   const char *out);

/* Empirical CDFs of request wait and query round trip, per owner and all. */
int dp_plot_cdf(const dp_plot_trace *tr, const dp_plot_opts *o, const char *out);

#endif
