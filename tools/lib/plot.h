/* SPDX-License-Identifier: Apache-2.0 */
/* Figures of runs for `dpasync plot` and `dpasync report`: one function
 * per figure kind, on what tools/lib/rundata.h reads, drawn by gnuplot
 * (tools/lib/gnuplot.h).  Figures are PNG, SVG or PDF files (by the
 * output's extension).  Each figure can also write the numbers it draws as
 * CSV (dp_plot_opts.data_out).  docs/plots.md describes every figure. */
#ifndef DP_TOOLS_PLOT_H
#define DP_TOOLS_PLOT_H

#include <stddef.h>

#include "tools/lib/rundata.h"

/* Options common to every figure.  title NULL: the figure's default. */
typedef struct dp_plot_opts {
	const char *title;
	const char *context;      /* second line of the default title (the job and
				   * dataset, dp_rundata_run_context), or NULL */
	const char *data_out;     /* also write the drawn data as CSV here (replaced
				   * only when the figure was written), or NULL */
	unsigned width, height;   /* pixels; 0 = 1000 x 600 */
	int preset;               /* DP_GNUPLOT_SIZE_* (tools/lib/gnuplot.h) */
	int logx;                 /* psi, psi-time: logarithmic k / time axis */
	int linear;               /* psi, psi-time: linear psi axis; cdf: linear time axis */
} dp_plot_opts;

/* The figures.  Each writes the figure (PNG, SVG or PDF by the extension
 * of `out`, dp_gnuplot_format_of) to a temporary file next to `out` and
 * renames it over `out` when gnuplot succeeded (out untouched otherwise).
 * Errors: DP_EINVAL (nothing to plot, inconsistent inputs), DP_ENOENT
 * (gnuplot not on PATH), DP_EIO (gnuplot failed; the detail is its
 * message), DP_ENOMEM. */

/* Owner of each iteration against k (the paper's Fig. 3); kmax > 0 keeps
 * iterations k <= kmax. */
int dp_plot_owners(const dp_rundata_trace *tr, size_t kmax, const dp_plot_opts *o,
		   const char *out);

/* psi median and 25-75 % band against k for ns runs (ps[ns], labels[ns]);
 * header_note (may be NULL) is added to the default title. */
int dp_plot_psi_k(const dp_rundata_psi *ps, const char *const *labels, size_t ns,
		  const char *header_note, const dp_plot_opts *o, const char *out);

/* Measured curves w[ns] on one figure, psi against seconds, one label each. */
int dp_plot_psi_wall(const dp_rundata_wall *w, const char *const *labels, size_t ns,
		     const dp_plot_opts *o, const char *out);

/* psi of ps (sim --schedule of tr's owner order) against the wall-clock
 * time of iteration k in trace tr, seconds since dp_rundata_trace_start.
 * Needs every k of ps in tr.  runs (0 = unknown) goes into the title. */
int dp_plot_psi_time(const dp_rundata_psi *ps, const dp_rundata_trace *tr, size_t runs,
		     const dp_plot_opts *o, const char *out);

/* The owner of each iteration against the time its update was applied,
 * in seconds since dp_rundata_trace_start, the first query (trace only). */
int dp_plot_owners_wall(const dp_rundata_trace *tr, const dp_plot_opts *o, const char *out);

/* Each owner's share of iterations against its median query round trip
 * and, when rates (tr->N clock rates) is not NULL, its clock rate. */
int dp_plot_shares(const dp_rundata_trace *tr, const double *rates, const dp_plot_opts *o,
		   const char *out);

/* Empirical CDFs of request wait and query round trip, per owner and all. */
int dp_plot_cdf(const dp_rundata_trace *tr, const dp_plot_opts *o, const char *out);

#endif
