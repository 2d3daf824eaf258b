/* SPDX-License-Identifier: Apache-2.0 */
/* Reading what a run leaves behind, for `dpasync plot` and `dpasync
 * report`: a learnerd trace.csv (its format: common/core/trace.h), a sim
 * schedule.txt and psi.csv, a measured psi curve, and the facts about the
 * run beside them (model.json, checkpoint.json, summary.json).  The
 * figures are tools/lib/plot.h; docs/plots.md describes both. */
#ifndef DP_TOOLS_RUNDATA_H
#define DP_TOOLS_RUNDATA_H

#include <stddef.h>

/* One run's iterations: a learnerd trace.csv (docs/learnerd.md §4) or a
 * schedule.txt (one 1-based owner number per line; then t, wait, rtt and
 * eps are NULL and the owners are named owner-1 .. owner-N, N the largest
 * number seen). */
typedef struct dp_rundata_trace {
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
} dp_rundata_trace;

/* Read `path`, a trace.csv (recognised by its header) or a schedule.txt.
 * `extra` (nextra names, may be NULL) adds owners that may have no
 * iteration, e.g. the job's owners from checkpoint.json.  A final line
 * without a newline that does not parse is taken as torn by a crash and
 * skipped.  On success *tr is filled (free with dp_rundata_trace_free).
 * Errors: DP_ENOENT, DP_EIO, DP_EFORMAT (detail "file:line: ..."),
 * DP_ENOMEM. */
int dp_rundata_trace_read(const char *path, const char *const *extra, size_t nextra,
			  dp_rundata_trace *tr);
void dp_rundata_trace_free(dp_rundata_trace *tr);

/* Start of the run: the first query, the earliest time_unix - rtt_s of
 * the trace (trace only; docs/plots.md "Throughput").  Waiting for owners
 * and for the first request is not counted. */
double dp_rundata_trace_start(const dp_rundata_trace *tr);

/* The line that names a run in the default titles: "job J, dataset D".
 * J is `job`, else the job column of trace_path's first row, else the
 * "job" of model.json (or checkpoint.json) beside trace_path, else the
 * name of trace_path's directory; D is `dataset`, else "target T, P
 * features" from that model.json, else left out.
 * Never fails; buf is "" when nothing is known. */
void dp_rundata_run_context(const char *trace_path, const char *job, const char *dataset,
			    char *buf, size_t size);

/* Compare the owner sequence in the schedule file `path` with the trace's
 * (owner number j of the schedule is names[j-1] of the trace, whatever the
 * names).  Errors: DP_ENOENT, DP_EIO, DP_EFORMAT, DP_EINVAL (they differ;
 * the detail gives the first k). */
int dp_rundata_schedule_check(const char *path, const dp_rundata_trace *tr);

/* Clock rates of the trace's owners from the text of a --rates option:
 * "R1,R2,..." (owners in natural order), "NAME=R,NAME=R,..." or a mix (a
 * bare value is for the owner at its position in the list).  Every owner
 * needs exactly one positive rate.  On success *out holds tr->N rates
 * (free() it).  Errors: DP_EINVAL (detail "--rates ..."), DP_ENOMEM. */
int dp_rundata_rates(const char *arg, const dp_rundata_trace *tr, double **out);

/* A sim psi.csv: k,psi_p25,psi_median,psi_p75,psi_mean. */
typedef struct dp_rundata_psi {
	size_t n;
	size_t *k;
	double *p25, *p50, *p75, *mean;
} dp_rundata_psi;

/* Errors: DP_ENOENT, DP_EIO, DP_EFORMAT, DP_ENOMEM.  Free with
 * dp_rundata_psi_free. */
int dp_rundata_psi_read(const char *path, dp_rundata_psi *ps);
void dp_rundata_psi_free(dp_rundata_psi *ps);

/* Facts about the sim run that wrote psi_path, from summary.json in the
 * same directory: a note such as "10 runs, async, linear, N = 3, T = 1000,
 * ε = 1" (empty when there is no readable summary) and the number of
 * repeats in *runs (0 when unknown).  Never fails. */
void dp_rundata_sim_note(const char *psi_path, char *note, size_t size, size_t *runs);

/* A measured psi curve: psi of a learnerd model at seconds since training
 * started, as scripts/reproduce/async_vs_sync.py writes it (header
 * time_s,k,psi; time non-decreasing, psi finite and >= 0).  Errors:
 * DP_ENOENT, DP_EIO, DP_EFORMAT, DP_ENOMEM.  Free with
 * dp_rundata_wall_free. */
typedef struct dp_rundata_wall {
	size_t n;
	double *t, *psi;
	size_t *k;
} dp_rundata_wall;
int dp_rundata_wall_read(const char *path, dp_rundata_wall *w);
void dp_rundata_wall_free(dp_rundata_wall *w);

/* Sort v[n] in increasing order, the order dp_rundata_percentile reads. */
void dp_rundata_sort(double *v, size_t n);

/* Percentile pct (0..100) of v[n] with linear interpolation between order
 * statistics (numpy's default); sorts v in place.  NaN when n = 0. */
double dp_rundata_percentile(double *v, size_t n, double pct);

#endif
