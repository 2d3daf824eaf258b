/* SPDX-License-Identifier: Apache-2.0 */
/* Figures for `dpasync plot` and `dpasync report` (plot.h): each builds
 * its gnuplot script, data inline, and hands it to gnuplot.h. */
#include "tools/lib/plot.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "tools/lib/gnuplot.h"
#include "tools/lib/wallband.h"

/* Series colours (colour-blind-safe order of the Tableau palette). */
static const char *const colors[] = {
	"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
	"#e377c2", "#17becf", "#bcbd22", "#7f7f7f",
};
#define NCOLORS (sizeof(colors) / sizeof(colors[0]))
/* Owners drawn as separate, labelled series up to this many; beyond, one series. */
#define MAX_LEGEND_OWNERS 12

/* Start a figure with the options every figure has. */
static int begin(dp_gnuplot *g, const dp_plot_opts *o, const char *csv_header)
{
	dp_gnuplot_page page = { 0 };

	if (o != NULL) {
		page.title = o->title;
		page.context = o->context;
		page.data_out = o->data_out;
		page.width = o->width;
		page.height = o->height;
		page.preset = o->preset;
	}
	return dp_gnuplot_begin(g, &page, csv_header);
}

/* owners and owners-wall: the owner of each iteration against k, or
 * against seconds since the first query (wall, dp_rundata_trace_start). */
static int owners_fig(const dp_rundata_trace *tr, size_t kmax, int wall,
		      const dp_plot_opts *o, const char *out)
{
	char title[256];
	size_t n = 0, *count;
	FILE *f;
	int per_owner, rc;
	double ps, t0 = wall ? dp_rundata_trace_start(tr) : 0;
	dp_gnuplot g;

	count = calloc(tr->N ? tr->N : 1, sizeof(size_t));
	per_owner = tr->N <= MAX_LEGEND_OWNERS;
	if (count == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t r = 0; r < tr->n && (kmax == 0 || tr->k[r] <= kmax); r++) {
		count[tr->owner[r]]++;
		n++;
	}
	if (n == 0) {
		free(count);
		return dp_error_set(DP_EINVAL, "no iteration with k <= %zu", kmax);
	}
	rc = begin(&g, o, wall ? "time_s,k,owner" : "k,owner");
	if (rc != 0) {
		free(count);
		return rc;
	}
	f = g.f;
	if (wall)
		snprintf(title, sizeof(title), "Owner of each iteration against wall-clock time (%zu owners, "
			 "%zu iterations)", tr->N, n);
	else
		snprintf(title, sizeof(title), "Owner of each iteration (%s: %zu owners, %zu iterations%s)",
			 tr->t ? "learnerd trace" : "sim schedule", tr->N, n,
			 kmax && n < tr->n ? " shown" : "");
	dp_gnuplot_title(&g, "set title", title);
	fprintf(f, "set xlabel \"%s\"\nset ylabel \"owner\"\n"
		"set yrange [0.5:%zu.5]\nset autoscale xfix\nset offsets graph 0.01, graph 0.01, 0, 0\n",
		wall ? "seconds since the learner's first query" : "iteration k", tr->N);
	if (tr->N <= 40) {
		fputs("set ytics (", f);
		for (size_t i = 0; i < tr->N; i++) {
			fprintf(f, "%s", i ? ", " : "");
			dp_gnuplot_quoted(f, tr->names[i]);
			fprintf(f, " %zu", i + 1);
		}
		fputs(")\nset grid noytics\n", f);
	} else {
		fputs("set ylabel \"owner (index in natural order of names)\"\n", f);
	}
	/* The legend outside the plot, on the right: no point hides under it. */
	dp_gnuplot_key_right(&g, " title \"owner: iterations (share)\"");
	ps = n <= 500 ? 0.9 : n <= 5000 ? 0.5 : 0.3;
	fputs("$d << EOD\n", f);
	for (size_t r = 0; r < n; r++) {
		double x = wall ? tr->t[r] - t0 : (double)tr->k[r];

		fprintf(f, "%.10g %zu\n", x, tr->owner[r] + 1);
		if (g.csv && wall)
			fprintf(g.csv, "%.6f,%zu,", x, tr->k[r]);
		else if (g.csv)
			fprintf(g.csv, "%zu,", tr->k[r]);
		if (g.csv) {
			dp_gnuplot_csv_text(g.csv, tr->names[tr->owner[r]]);
			fputc('\n', g.csv);
		}
	}
	fputs("EOD\n", f);
	if (per_owner) {
		fputs("plot ", f);
		for (size_t i = 0; i < tr->N; i++) {
			char t[300];
			snprintf(t, sizeof(t), "%s: %zu (%.1f %%)", tr->names[i], count[i], 100.0 * (double)count[i] / (double)n);
			fprintf(f, "%s$d using 1:($2 == %zu ? $2 : NaN) with points pt 7 ps %.1f lc rgb \"%s\" title ",
				i ? ", \\\n     " : "", i + 1, ps, colors[i % NCOLORS]);
			dp_gnuplot_quoted(f, t);
		}
		fputc('\n', f);
	} else {
		fprintf(f, "set key off\nplot $d using 1:2:2 with points pt 7 ps %.1f lc variable notitle\n", ps);
	}
	free(count);
	return dp_gnuplot_finish(&g, out);
}

int dp_plot_owners(const dp_rundata_trace *tr, size_t kmax, const dp_plot_opts *o,
		   const char *out)
{
	DP_REQUIRE(tr != NULL && out != NULL);
	return owners_fig(tr, kmax, 0, o, out);
}

int dp_plot_owners_wall(const dp_rundata_trace *tr, const dp_plot_opts *o, const char *out)
{
	DP_REQUIRE(tr != NULL && out != NULL);
	if (tr->t == NULL)
		return dp_error_set(DP_EINVAL, "owners-wall needs a learnerd trace.csv (with times), not a "
				    "schedule");
	return owners_fig(tr, 0, 1, o, out);
}

/* One psi series as a datablock: x p25 p50 p75; and as CSV rows
 * "[label,][time_s,]k,psi_p25,psi_median,psi_p75" when csv is not NULL. */
static void psi_block(FILE *f, int idx, const dp_rundata_psi *ps, const double *x, FILE *csv,
		      const char *label)
{
	fprintf(f, "$s%d << EOD\n", idx);
	for (size_t r = 0; r < ps->n; r++) {
		fprintf(f, "%.10g %.10g %.10g %.10g\n", x ? x[r] : (double)ps->k[r], ps->p25[r], ps->p50[r], ps->p75[r]);
		if (csv == NULL)
			continue;
		if (label) {
			dp_gnuplot_csv_text(csv, label);
			fputc(',', csv);
		}
		if (x)
			fprintf(csv, "%.6f,", x[r]);
		fprintf(csv, "%zu,%.10g,%.10g,%.10g\n", ps->k[r], ps->p25[r], ps->p50[r], ps->p75[r]);
	}
	fputs("EOD\n", f);
}

static int psi_logy(const dp_rundata_psi *ps, size_t ns, const dp_plot_opts *o)
{
	if (o && o->linear)
		return 0;
	for (size_t s = 0; s < ns; s++)
		for (size_t r = 0; r < ps[s].n; r++)
			if (ps[s].p50[r] > 0)
				return 1;
	return 0;   /* nothing positive: a log axis would have no points */
}

static void psi_axes(dp_gnuplot *g, int logy, int logx)
{
	FILE *f = g->f;

	/* A printed figure's axis is as tall as this label is long: its
	 * definition goes to the caption. */
	if (g->page.preset != DP_GNUPLOT_SIZE_PIXELS)
		fputs("set ylabel \"ψ\"\n", f);
	else
		fprintf(f, "set ylabel \"ψ = f(θ_L) / f(θ*) − 1%s\"\n", logy ? " (log scale)" : "");
	if (logy) {
		dp_gnuplot_logscale(f, "y");
		fputs("set format y \"%g\"\n", f);
	}
	if (logx)
		dp_gnuplot_logscale(f, "x");
	/* Outside the plot: a decreasing curve passes through the top right. */
	dp_gnuplot_key_right(g, "");
}

static void psi_plot(FILE *f, int idx, const char *label, int first)
{
	char t[300];
	const char *c = colors[idx % NCOLORS];

	fprintf(f, "%s$s%d using 1:2:4 with filledcurves fs transparent solid 0.22 noborder lc rgb \"%s\" title ",
		first ? "plot " : ", \\\n     ", idx, c);
	snprintf(t, sizeof(t), "%s%s25–75 %% of runs", label ? label : "", label ? ": " : "");
	dp_gnuplot_quoted(f, t);
	fprintf(f, ", \\\n     $s%d using 1:3 with lines lw 2 lc rgb \"%s\" title ", idx, c);
	snprintf(t, sizeof(t), "%s%smedian", label ? label : "", label ? ": " : "");
	dp_gnuplot_quoted(f, t);
}

int dp_plot_psi_k(const dp_rundata_psi *ps, const char *const *labels, size_t ns,
		  const char *header_note, const dp_plot_opts *o, const char *out)
{
	char title[400];
	FILE *f;
	int logy, rc;
	dp_gnuplot g;

	DP_REQUIRE(ps != NULL && labels != NULL && out != NULL);
	logy = psi_logy(ps, ns, o);
	if (ns == 0)
		return dp_error_set(DP_EINVAL, "no psi series to plot");
	rc = begin(&g, o, "series,k,psi_p25,psi_median,psi_p75");
	if (rc != 0)
		return rc;
	f = g.f;
	snprintf(title, sizeof(title), "ψ against iteration: median and 25–75 %% band over the runs%s%s%s",
		 header_note ? " (" : "", header_note ? header_note : "", header_note ? ")" : "");
	dp_gnuplot_title(&g, "set title", title);
	fputs("set xlabel \"iteration k\"\n", f);
	psi_axes(&g, logy, o && o->logx);
	for (size_t s = 0; s < ns; s++)
		psi_block(f, (int)s, &ps[s], NULL, g.csv, labels[s] ? labels[s] : "psi");
	for (size_t s = 0; s < ns; s++)
		psi_plot(f, (int)s, labels ? labels[s] : NULL, s == 0);
	fputc('\n', f);
	return dp_gnuplot_finish(&g, out);
}

/* Row of iteration k in the trace (k strictly increasing), or SIZE_MAX. */
static size_t find_k(const dp_rundata_trace *tr, size_t k)
{
	size_t lo = 0, hi = tr->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (tr->k[mid] == k)
			return mid;
		if (tr->k[mid] < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

int dp_plot_psi_time(const dp_rundata_psi *ps, const dp_rundata_trace *tr, size_t runs,
		     const dp_plot_opts *o, const char *out)
{
	char title[400];
	double *x, t0;
	FILE *f;
	int logy, rc;
	dp_gnuplot g;

	DP_REQUIRE(ps != NULL && tr != NULL && out != NULL);
	logy = psi_logy(ps, 1, o);
	if (tr->t == NULL)
		return dp_error_set(DP_EINVAL, "psi-time needs a learnerd trace.csv (with times), not a schedule");
	x = malloc(ps->n * sizeof(double));
	if (x == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	t0 = dp_rundata_trace_start(tr);
	for (size_t r = 0; r < ps->n; r++) {
		size_t row = find_k(tr, ps->k[r]);
		if (row == SIZE_MAX) {
			free(x);
			return dp_error_set(DP_EINVAL, "psi.csv has k = %zu but the trace has no such iteration "
					    "(it ends at k = %zu)", ps->k[r], tr->k[tr->n - 1]);
		}
		x[r] = tr->t[row] - t0;
	}
	rc = begin(&g, o, "time_s,k,psi_p25,psi_median,psi_p75");
	if (rc != 0) {
		free(x);
		return rc;
	}
	f = g.f;
	if (runs)
		snprintf(title, sizeof(title), "ψ against wall-clock time\nψ: median and 25–75 %% of %zu simulated "
			 "runs on the trace's owner order; time: when the trace applied iteration k", runs);
	else
		snprintf(title, sizeof(title), "ψ against wall-clock time\nψ: median and 25–75 %% of simulated "
			 "runs on the trace's owner order; time: when the trace applied iteration k");
	dp_gnuplot_title(&g, "set title", title);
	fputs("set xlabel \"seconds since the learner's first query\"\n", f);
	psi_axes(&g, logy, o && o->logx);
	psi_block(f, 0, ps, x, g.csv, NULL);
	psi_plot(f, 0, NULL, 1);
	fputc('\n', f);
	free(x);
	rc = dp_gnuplot_finish(&g, out);
	return rc;
}

/* Index of the first INPUT with the label of INPUT s: INPUTs that share a
 * label are repeats of one run, drawn as a band (docs/plots.md "psi-wall"). */
static size_t wall_group(const char *const *labels, size_t s)
{
	for (size_t i = 0; labels && labels[s] && i < s; i++)
		if (labels[i] && strcmp(labels[i], labels[s]) == 0)
			return i;
	return s;
}

/* The nrun repeats of group g (first INPUT g) as the datablock $wG of the
 * band, "t lo med hi", and their CSV rows. */
static int wall_band(dp_gnuplot *g, const dp_rundata_wall *w, const char *const *labels,
		     size_t ns, size_t grp, size_t nrun)
{
	const dp_rundata_wall **runs = calloc(nrun, sizeof(*runs));
	dp_wallband b = { 0 };
	size_t m = 0;
	int rc;

	if (runs == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t s = grp; s < ns; s++)
		if (wall_group(labels, s) == grp)
			runs[m++] = &w[s];
	rc = dp_wallband_build(runs, m, &b);
	free(runs);
	if (rc != 0)
		return rc;
	fprintf(g->f, "$w%zu << EOD\n", grp);
	for (size_t r = 0; r < b.n; r++) {
		fprintf(g->f, "%.10g %.10g %.10g %.10g\n", b.t[r], b.lo[r], b.med[r], b.hi[r]);
		if (g->csv) {
			dp_gnuplot_csv_text(g->csv, labels[grp]);
			fprintf(g->csv, ",%.10g,%zu,%.10g,%.10g,%.10g\n", b.t[r], b.runs[r], b.lo[r],
				b.med[r], b.hi[r]);
		}
	}
	fputs("EOD\n", g->f);
	dp_wallband_free(&b);
	return 0;
}

/* One curve as the datablock $wS, "t psi", and its CSV rows (banded: the
 * band's columns, one run). */
static void wall_line(dp_gnuplot *g, const dp_rundata_wall *w, const char *label, size_t s,
		      int banded)
{
	fprintf(g->f, "$w%zu << EOD\n", s);
	for (size_t r = 0; r < w->n; r++) {
		fprintf(g->f, "%.10g %.10g\n", w->t[r], w->psi[r]);
		if (g->csv == NULL)
			continue;
		dp_gnuplot_csv_text(g->csv, label);
		if (banded)
			fprintf(g->csv, ",%.10g,1,%.10g,%.10g,%.10g\n", w->t[r], w->psi[r],
				w->psi[r], w->psi[r]);
		else
			fprintf(g->csv, ",%.10g,%zu,%.10g\n", w->t[r], w->k[r], w->psi[r]);
	}
	fputs("EOD\n", g->f);
}

int dp_plot_psi_wall(const dp_rundata_wall *w, const char *const *labels, size_t ns,
		     const dp_plot_opts *o, const char *out)
{
	char t[300];
	size_t *nrun, groups = 0;
	FILE *f;
	int logy = !(o && o->linear), banded = 0, rc;
	dp_gnuplot g;

	DP_REQUIRE(w != NULL && out != NULL);
	if (ns == 0)
		return dp_error_set(DP_EINVAL, "no psi curve to plot");
	nrun = calloc(ns, sizeof(*nrun));
	if (nrun == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t s = 0; s < ns; s++) {
		for (size_t r = 0; r < w[s].n; r++)
			if (!(w[s].psi[r] > 0))
				logy = 0;   /* a log axis cannot show psi = 0 */
		nrun[wall_group(labels, s)]++;
		banded |= wall_group(labels, s) != s;
	}
	rc = begin(&g, o, banded ? "series,time_s,runs,psi_min,psi_median,psi_max" :
			  "series,time_s,k,psi");
	if (rc != 0) {
		free(nrun);
		return rc;
	}
	f = g.f;
	dp_gnuplot_title(&g, "set title", banded ? "ψ against wall-clock time (measured: ψ of "
			 "the learner's checkpointed model)\nrepeats: their median, and a band from "
			 "the lowest to the highest" :
			 "ψ against wall-clock time (measured: ψ of the learner's checkpointed model)");
	fputs("set xlabel \"seconds since training started\"\n", f);
	psi_axes(&g, logy, o && o->logx);
	for (size_t s = 0; s < ns && rc == 0; s++) {
		if (nrun[s] > 1)
			rc = wall_band(&g, w, labels, ns, s, nrun[s]);
		else if (nrun[s] == 1)
			wall_line(&g, &w[s], labels && labels[s] ? labels[s] : "", s, banded);
	}
	if (rc != 0) {
		dp_gnuplot_abandon(&g);
		free(nrun);
		return rc;
	}
	for (size_t s = 0; s < ns; s++) {
		const char *col = colors[groups % NCOLORS], *lab = labels && labels[s] ? labels[s] : "";

		if (nrun[s] == 0)
			continue;
		fputs(groups++ == 0 ? "plot " : ", \\\n     ", f);
		if (nrun[s] == 1) {
			fprintf(f, "$w%zu using 1:2 with linespoints lw 2 pt 7 ps 0.5 lc rgb \"%s\" "
				"title ", s, col);
			dp_gnuplot_quoted(f, lab);
			continue;
		}
		fprintf(f, "$w%zu using 1:2:4 with filledcurves fs transparent solid 0.22 noborder "
			"lc rgb \"%s\" title ", s, col);
		snprintf(t, sizeof(t), "%s: min–max, %zu runs", lab, nrun[s]);
		dp_gnuplot_quoted(f, t);
		fprintf(f, ", \\\n     $w%zu using 1:3 with lines lw 2 lc rgb \"%s\" title ", s, col);
		snprintf(t, sizeof(t), "%s: median", lab);
		dp_gnuplot_quoted(f, t);
	}
	fputc('\n', f);
	free(nrun);
	return dp_gnuplot_finish(&g, out);
}

/* Log axis when all values are positive and span a factor 10 or more. */
static int auto_log(const double *v, size_t n)
{
	double lo = INFINITY, hi = 0;

	for (size_t i = 0; i < n; i++) {
		if (isnan(v[i]))
			continue;
		if (!(v[i] > 0))
			return 0;
		lo = fmin(lo, v[i]);
		hi = fmax(hi, v[i]);
	}
	return hi > 0 && hi / lo >= 10;
}

/* The owners of the $o block as points (x column xc, y column yc, point
 * type pt): one coloured series per owner, named in the legend when
 * `named`, while there are few enough to tell apart; else one series. */
static void share_series(FILE *f, char *const *names, size_t N, int xc, int yc, int pt,
			 int named)
{
	int bars = named && xc == 3;   /* the round-trip panel: 25-75 % bars */

	if (N > MAX_LEGEND_OWNERS) {
		fprintf(f, "$o using %d:%d%s with %s pt %d ps 1.6 lc rgb \"%s\" notitle", xc, yc,
			bars ? ":4:5" : "", bars ? "xerrorbars" : "points", pt, colors[0]);
		return;
	}
	for (size_t i = 0; i < N; i++) {
		fprintf(f, "%s$o every ::%zu::%zu using %d:%d%s with %s pt %d ps 1.6 lc rgb \"%s\" ",
			i ? ", \\\n     " : "", i, i, xc, yc, bars ? ":4:5" : "",
			bars ? "xerrorbars" : "points", pt, colors[i % NCOLORS]);
		if (named) {
			fputs("title ", f);
			dp_gnuplot_quoted(f, names[i]);
		} else
			fputs("notitle", f);
	}
}

int dp_plot_shares(const dp_rundata_trace *tr, const double *rates, const dp_plot_opts *o,
		   const char *out)
{
	size_t N, *count, *fill;
	double *med, *lo, *hi, **v, rsum = 0;
	bool vary = false;   /* the rates differ between owners */
	char title[300];
	FILE *f;
	int rc;
	dp_gnuplot g;

	DP_REQUIRE(tr != NULL && out != NULL);
	N = tr->N;
	count = calloc(N, sizeof(size_t));
	fill = calloc(N, sizeof(size_t));
	med = calloc(N, sizeof(double));
	lo = calloc(N, sizeof(double));
	hi = calloc(N, sizeof(double));
	v = calloc(N, sizeof(double *));
	if (tr->rtt == NULL) {
		rc = dp_error_set(DP_EINVAL, "shares needs a learnerd trace.csv (with round trips), not a schedule");
		goto out;
	}
	if (!count || !fill || !med || !lo || !hi || !v) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t r = 0; r < tr->n; r++)
		count[tr->owner[r]]++;
	for (size_t i = 0; i < N; i++) {
		v[i] = malloc((count[i] ? count[i] : 1) * sizeof(double));
		if (v[i] == NULL) {
			rc = dp_error_set(DP_ENOMEM, "out of memory");
			goto out;
		}
	}
	for (size_t r = 0; r < tr->n; r++)
		v[tr->owner[r]][fill[tr->owner[r]]++] = tr->rtt[r] * 1e3;
	for (size_t i = 0; i < N; i++) {
		med[i] = dp_rundata_percentile(v[i], count[i], 50);
		lo[i] = dp_rundata_percentile(v[i], count[i], 25);
		hi[i] = dp_rundata_percentile(v[i], count[i], 75);
		rsum += rates ? rates[i] : 0;
	}
	rc = begin(&g, o, "owner,iterations,share_pct,rtt_median_ms,rtt_p25_ms,rtt_p75_ms,rate,"
		   "rate_share_pct");
	if (rc != 0)
		goto out;
	f = g.f;
	fputs("$o << EOD\n# name share_pct rtt_med_ms rtt_p25_ms rtt_p75_ms rate rate_share_pct\n", f);
	for (size_t i = 0; i < N; i++) {
		double share = 100.0 * (double)count[i] / (double)tr->n;
		double rate = rates ? rates[i] : NAN, rshare = rates ? 100.0 * rates[i] / rsum : NAN;

		dp_gnuplot_data_quoted(f, tr->names[i]);
		fprintf(f, " %.10g %.10g %.10g %.10g %.10g %.10g\n", share, med[i], lo[i], hi[i], rate,
			rshare);
		if (g.csv) {
			dp_gnuplot_csv_text(g.csv, tr->names[i]);
			fprintf(g.csv, ",%zu,%.10g,%.10g,%.10g,%.10g,", count[i], share, med[i], lo[i], hi[i]);
			if (rates)
				fprintf(g.csv, "%.10g,%.10g", rate, rshare);
			else
				fputc(',', g.csv);
			fputc('\n', g.csv);
		}
	}
	fputs("EOD\n", f);
	/* Equal rates make the rate panel one column of points on an axis of
	 * nothing (4.92 to 5.08): say the rate in the title instead. */
	for (size_t i = 1; rates && i < N; i++)
		vary = vary || rates[i] != rates[0];
	if (rates && !vary)
		snprintf(title, sizeof(title), "Share of iterations per owner (%zu owners, %zu "
			 "iterations, every clock at %.4g requests/s)", N, tr->n, rates[0]);
	else
		snprintf(title, sizeof(title), "Share of iterations per owner (%zu owners, %zu "
			 "iterations)", N, tr->n);
	/* Owners are told apart by colour and named in the legend below the
	 * panels, not by text next to the points, which overlapped when owners
	 * had close values. */
	fputs("set ylabel \"share of iterations (%)\"\nset yrange [0:*]\n"
	      "set offsets graph 0.12, graph 0.12, graph 0.12, 0\nset key below horizontal\n", f);
	fprintf(f, "set arrow 1 from graph 0, first %.10g to graph 1, first %.10g nohead dt 2 lc rgb \"#808080\"\n",
		100.0 / (double)N, 100.0 / (double)N);
	if (rates && vary) {
		fputs("set multiplot layout 1,2 ", f);
		dp_gnuplot_title(&g, "title", title);
		fputs("set title \"against the owner's clock rate\"\n"
		      "set xlabel \"owner clock rate (requests/s)\"\n", f);
		if (auto_log(rates, N))
			dp_gnuplot_logscale(f, "x");
		fputs("plot ", f);
		share_series(f, tr->names, N, 6, 2, 7, 0);
		fputs(", \\\n     ", f);
		share_series(f, tr->names, N, 6, 7, 6, 0);
		fputs(", \\\n     NaN with points pt 7 ps 1.6 lc rgb \"#404040\" title \"share of iterations\", \\\n"
		      "     NaN with points pt 6 ps 1.6 lc rgb \"#404040\" title \"clock-rate share r_i / Σr\", \\\n"
		      "     NaN with lines dt 2 lc rgb \"#808080\" title \"equal share 1/N\"\n", f);
		fputs("unset logscale x\nset mxtics default\nset title \"against the owner's query round trip\"\n", f);
	} else {
		dp_gnuplot_title(&g, "set title", title);
	}
	fputs(g.page.preset != DP_GNUPLOT_SIZE_PIXELS
		      ? "set xlabel \"owner's median round trip (ms)\"\n"
		      : "set xlabel \"query round trip of the owner, median (ms); bars: 25–75 %\"\n", f);
	if (auto_log(med, N))
		dp_gnuplot_logscale(f, "x");
	fputs("plot ", f);
	share_series(f, tr->names, N, 3, 2, 7, 1);
	fputs(", \\\n     NaN with lines dt 2 lc rgb \"#808080\" title \"equal share 1/N\"\n", f);
	if (rates && vary)
		fputs("unset multiplot\n", f);
	rc = dp_gnuplot_finish(&g, out);
out:
	for (size_t i = 0; v && i < N; i++)
		free(v[i]);
	free(v);
	free(count);
	free(fill);
	free(med);
	free(lo);
	free(hi);
	return rc;
}

/* One CDF panel: values (seconds) of column col per owner and overall. */
static int cdf_panel(FILE *f, FILE *csv, const dp_rundata_trace *tr, const double *col,
		     const char *tag, const char *what, const char *xlabel, int want_log,
		     bool printed)
{
	size_t n = tr->n, npos = 0, nseries = tr->N <= MAX_LEGEND_OWNERS ? tr->N + 1 : 1;
	double *v = malloc(n * sizeof(double));
	int logx;

	if (v == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t r = 0; r < n; r++)
		npos += col[r] > 0;
	logx = want_log && npos > 0;
	/* The note about zeros is the panel title's second line: inside the
	 * plot it crossed the curves. */
	/* Printed: the panel's name only, the rest is the caption's. */
	fprintf(f, "set title \"%s%s", what, printed ? "" : ": empirical CDF");
	if (!printed && npos == 0)
		fprintf(f, "\\n(all %zu values are 0 ms)", n);
	else if (!printed && logx && npos < n)
		fprintf(f, "\\n(%zu of %zu are 0 ms, off the log axis: curves start at that fraction)",
			n - npos, n);
	fputs("\"\nset xlabel ", f);
	dp_gnuplot_quoted(f, printed ? "ms" : xlabel);
	fputs(printed ? "\nset ylabel \"fraction ≤ x\"\nset yrange [0:1.02]\n"
		      : "\nset ylabel \"fraction of iterations with value ≤ x\"\nset yrange [0:1.02]\n",
	      f);
	if (logx)
		dp_gnuplot_logscale(f, "x");
	else
		fputs("unset logscale x\nset mxtics default\n", f);
	fputs("set format x \"%g\"\n", f);
	for (size_t s = 0; s < nseries; s++) {
		size_t m = 0, zeros = 0;
		for (size_t r = 0; r < n; r++)
			if (s == 0 || tr->owner[r] == s - 1)
				v[m++] = col[r] * 1e3;
		fprintf(f, "$%s%zu << EOD\n", tag, s);
		if (m > 0) {
			dp_rundata_sort(v, m);
			if (logx)
				while (zeros < m && !(v[zeros] > 0))
					zeros++;
			if (zeros < m) {
				fprintf(f, "%.10g %.10g\n", v[zeros], (double)zeros / (double)m);
				for (size_t i = zeros; i < m; i++)
					fprintf(f, "%.10g %.10g\n", v[i], (double)(i + 1) / (double)m);
			}
			for (size_t i = 0; csv && i < m; i++) {
				fprintf(csv, "%s,", tag[0] == 'w' ? "wait" : "rtt");
				dp_gnuplot_csv_text(csv, s == 0 ? "all" : tr->names[s - 1]);
				fprintf(csv, ",%.10g,%.10g\n", v[i], (double)(i + 1) / (double)m);
			}
		}
		fputs("EOD\n", f);
	}
	fputs("plot ", f);
	for (size_t s = 0, first = 1; s < nseries; s++) {
		size_t m = 0, pos = 0;
		for (size_t r = 0; r < n; r++)
			if (s == 0 || tr->owner[r] == s - 1) {
				m++;
				pos += col[r] > 0;
			}
		char t[300];
		if (m == 0)
			continue;
		/* A series with no point on a log axis still gets its legend entry. */
		if (logx && pos == 0)
			snprintf(t, sizeof(t), "NaN");
		else
			snprintf(t, sizeof(t), "$%s%zu using 1:2", tag, s);
		fprintf(f, "%s%s with steps lw %s lc rgb \"%s\" title ", first ? "" : ", \\\n     ", t,
			s == 0 ? "2.5" : "1.5", s == 0 ? "#000000" : colors[(s - 1) % NCOLORS]);
		snprintf(t, sizeof(t), "%s (%zu%s)", s == 0 ? "all owners" : tr->names[s - 1], m,
			 logx && pos == 0 ? ", all 0 ms" : "");
		dp_gnuplot_quoted(f, t);
		first = 0;
	}
	fputc('\n', f);
	free(v);
	return 0;
}

int dp_plot_cdf(const dp_rundata_trace *tr, const dp_plot_opts *o, const char *out)
{
	char title[300];
	FILE *f;
	int rc;
	dp_gnuplot g;

	DP_REQUIRE(tr != NULL && out != NULL);
	if (tr->rtt == NULL)
		return dp_error_set(DP_EINVAL, "cdf needs a learnerd trace.csv (with waits and round trips), not a schedule");
	rc = begin(&g, o, "quantity,series,value_ms,fraction");
	if (rc != 0)
		return rc;
	f = g.f;
	snprintf(title, sizeof(title), "Request wait and query round trip (%zu owners, %zu iterations)", tr->N, tr->n);
	fputs("set multiplot layout 1,2 ", f);
	dp_gnuplot_title(&g, "title", title);
	/* Below each panel: at the bottom right it covered the steep part of
	 * the curves of slow owners. */
	fputs("set key below horizontal\n", f);
	rc = cdf_panel(f, g.csv, tr, tr->wait, "w", "Request wait", "request wait in the learner's queue (ms)",
		       !(o && o->linear), g.page.preset != DP_GNUPLOT_SIZE_PIXELS);
	if (rc == 0)
		rc = cdf_panel(f, g.csv, tr, tr->rtt, "r", "Query round trip", "query round trip, learner to owner and back (ms)",
			       !(o && o->linear), g.page.preset != DP_GNUPLOT_SIZE_PIXELS);
	fputs("unset multiplot\n", f);
	if (rc != 0) {
		dp_gnuplot_abandon(&g);
		return rc;
	}
	return dp_gnuplot_finish(&g, out);
}
