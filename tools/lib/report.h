/* SPDX-License-Identifier: Apache-2.0 */
/* The numbers of `dpasync report` (docs/plots.md): one
 * struct per kind of run, filled once, then written as report.md
 * (tools/lib/report_md.h) and as report.json (tools/lib/report_json.h)
 * from the same fields, so that the two always agree.
 *
 * The command (tools/cmd_report.c) reads the run's directory, draws the
 * figures and fills what it found (the run's context, psi, the figures,
 * the reproduce commands); the functions here compute the rest. */
#ifndef DP_TOOLS_REPORT_H
#define DP_TOOLS_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/lib/rundata.h"

/* A figure of a report: its file (next to report.md), heading, caption. */
typedef struct dp_report_fig {
	const char *file, *heading, *text;
} dp_report_fig;

/* A gap between two successive updates (a resume's downtime, a stall). */
typedef struct dp_report_gap {
	size_t after_k;        /* the update before the gap */
	double from_unix;      /* its time */
	double seconds;        /* the time to the next update */
} dp_report_gap;

/* One owner of a learnerd run. */
typedef struct dp_report_owner {
	const char *name;      /* borrowed from the trace */
	size_t iterations;
	double share;          /* iterations / all iterations */
	double eps;            /* the budget spent: the ledger's figure when the
				* owner's ledger was given (eps_ledger), else the
				* last eps_spent the owner reported; NaN: none */
	bool eps_ledger;
	double rtt_median, rtt_p95, wait_median, wait_p95;   /* s; NaN: none */
} dp_report_owner;

/* One owner's job ledger (`--ledgers`, docs/plots.md "ε charged"): the ε
 * it charged beside the answers the trace applied.  With reserve-ahead
 * (docs/ledger.md §9) each unit of the ledger's count is one share ε_q, an
 * answer or a share reserved for the next one; a reserved share that a
 * restart or the job's end forfeits, and an answer charged whose reply
 * never reached the trace, make the ledger's figure exceed applied × ε_q. */
typedef struct dp_report_ledger {
	/* Filled by the caller (strings borrowed). */
	const char *owner, *dir;
	bool unlimited;             /* an infinite (testing) ledger: spent, cap,
				     * eps_q are INFINITY */
	double spent, cap;          /* ε charged, and the job's cap */
	uint64_t answers, answers_cap;   /* the ledger's count and K */
	double eps_q;               /* one share: dp_nano_share(cap, answers_cap) */

	/* Computed by dp_report_ledger_apply. */
	size_t applied;             /* the trace's iterations of the owner */
	double applied_eps;         /* applied × ε_q */
	double extra;               /* spent − applied_eps (0 when unlimited) */
	int64_t unapplied;          /* answers − applied */
	char why[400];              /* one sentence: why the two differ */
} dp_report_ledger;

/* The report of a learnerd out directory.  Strings are borrowed. */
typedef struct dp_report_learner {
	/* Filled by the caller. */
	const char *dir;
	const char *job;            /* NULL: unknown */
	const char *model;          /* model.json's model, NULL without model.json */
	bool partial;               /* model.json is a partial model (docs/design.md
				     * §9 "Partial model"): the job stopped at
				     * partial_k for partial_reason (detail:
				     * its message, or NULL) */
	uint64_t partial_k;
	const char *partial_reason, *partial_detail;
	const char *mode;           /* checkpoint.json's mode, NULL without its state */
	double max_inflight;        /* with mode */
	size_t T;                   /* 0: unknown */
	bool have_eta;
	double eta;
	bool have_psi;              /* --data: psi of model.json */
	double psi, f, f_star, psi_zero;   /* psi NaN without --data */
	size_t ndata;               /* the --data files */
	size_t nsnap;               /* --data with snapshots.csv: the run's model at
				     * nsnap points (learnerd --snapshot-every) */
	const size_t *snap_k;       /* nsnap iterations (sync: rounds) */
	const double *snap_s;       /* nsnap seconds since the first query */
	const double *snap_psi;     /* nsnap psi on the --data files */
	const char *sim;            /* --sim SIMDIR, or NULL */
	double sim_median, sim_p25, sim_p75;   /* its psi at its last k */
	size_t sim_k, sim_runs;
	const dp_report_fig *figs;
	size_t nfig;
	const char *repro_plots, *repro_sim;   /* whole lines each */
	const dp_report_ledger *ledgers;       /* set by dp_report_ledger_apply */
	size_t nledgers;

	/* Computed from the trace by dp_report_learner_stats. */
	size_t N, iterations;
	double start_unix, end_unix, duration_s, rate;      /* rate: iterations/s */
	double gap_threshold, gap_median, gap_total, rate_without_gaps;
	size_t ngaps;
	dp_report_gap *gaps;
	double rtt_median, rtt_p95, wait_median, wait_p95;  /* s */
	bool have_staleness;        /* false: a trace written before the column */
	double stale_median, stale_max;   /* NaN without the column */
	dp_report_owner *owners;    /* N, in the trace's order of names */
} dp_report_learner;

/* A gap is marked when it is over DP_REPORT_GAP_FACTOR times the median
 * time between updates and over DP_REPORT_GAP_MIN_S seconds (docs/plots.md
 * "Throughput"). */
#define DP_REPORT_GAP_FACTOR 20.0
#define DP_REPORT_GAP_MIN_S 1.0

/* The trace's numbers into r: every field from N on.  tr is a learnerd
 * trace (tr->t not NULL) with at least one row; r keeps pointers into it
 * (owner names), so tr must outlive r.  0, or DP_ENOMEM with r's computed
 * fields unset.  Free with dp_report_learner_free. */
int dp_report_learner_stats(dp_report_learner *r, const dp_rundata_trace *tr);
void dp_report_learner_free(dp_report_learner *r);

/* Owner `owner`'s ledger of job `job` in its ledger directory `dir`
 * into l (owner and dir borrowed), read-only: the directory is opened
 * with DP_LEDGERSET_READONLY, which takes no lock, so a running ownerd
 * is neither blocked nor blocks.  Errors (the detail names the option's
 * value): those of dp_ledgerset_open (DP_ENOENT: no such directory;
 * DP_EINVAL: not a directory, or a file of another owner; DP_ECORRUPT),
 * DP_ENOENT (no ledger for the job), DP_EINVAL (a cap below its answer
 * cap in nano-ε), DP_ENOMEM. */
int dp_report_ledger_read(dp_report_ledger *l, const char *owner, const char *dir,
			  const char *job);

/* The owners' ledgers l[0..n) against the trace's numbers in r (after
 * dp_report_learner_stats): each one's applied answers, the difference
 * and its sentence; each owner's eps becomes its ledger's figure, and r
 * keeps l (which must outlive r's renderings).  Errors: DP_EINVAL (an
 * owner that is not one of r's, or given twice; the detail names it), with
 * r unchanged. */
int dp_report_ledger_apply(dp_report_learner *r, dp_report_ledger *l, size_t n);

/* One owner of a sim run, owner-j for the j-th data file. */
typedef struct dp_report_sim_owner {
	double rows;           /* NaN: summary.json does not say */
	bool unlimited;        /* an unlimited budget ("inf", or null as older
				* sims wrote it) */
	double eps;            /* the budget, when not unlimited */
	size_t iterations;     /* in the first run's schedule (have_sched) */
} dp_report_sim_owner;

/* The report of a `dpasync sim` out directory.  Strings are borrowed. */
typedef struct dp_report_sim {
	/* Filled by the caller. */
	const char *dir;
	const char *note;           /* dp_rundata_sim_note's */
	size_t runs;
	const dp_report_fig *figs;
	size_t nfig;
	const char *repro;          /* whole lines */

	/* Read from summary.json by dp_report_sim_read. */
	uint64_t seed;
	double psi_mean, psi_median, psi_p25, psi_p75, f_star;   /* NaN: absent */
	bool have_eta, have_rho, have_c;
	double eta, rho, c;
	double lambda, theta_max, clip;                          /* NaN: absent */
	size_t N;
	dp_report_sim_owner *owners;   /* N */

	/* Counted by dp_report_sim_count. */
	bool have_sched;
	size_t sched_n;             /* iterations in the schedule */
} dp_report_sim;

/* DIR/summary.json into r's summary fields.  Errors: those of
 * dp_json_read_file, DP_EFORMAT (a field of the wrong type; the detail
 * names it), DP_ENOMEM; r's summary fields unset then.  Free with
 * dp_report_sim_free. */
int dp_report_sim_read(dp_report_sim *r, const char *dir);

/* Each owner's iterations in sched, the schedule.txt of the sim's first
 * run (owner j of the schedule is owner-j). */
void dp_report_sim_count(dp_report_sim *r, const dp_rundata_trace *sched);

void dp_report_sim_free(dp_report_sim *r);

#endif
