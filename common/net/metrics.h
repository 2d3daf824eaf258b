/* SPDX-License-Identifier: Apache-2.0 */
/* Prometheus metrics: a registry of counters, gauges and histograms, plain
 * or in labelled families, rendered in the text exposition format 0.0.4
 * (served on /metrics by httpd.h).
 *
 *   struct dp_metrics *reg;
 *   struct dp_metric *iters, *rtt;
 *   struct dp_metric_family *per_owner;
 *   dp_metrics_new(&reg);
 *   dp_metrics_counter(reg, "dpasync_learner_iterations_total",
 *                      "Iterations completed.", &iters);
 *   dp_metrics_histogram(reg, "dpasync_learner_round_trip_seconds",
 *                        "Query to answer time.", dp_metrics_default_buckets,
 *                        DP_METRICS_DEFAULT_BUCKETS, &rtt);
 *   dp_metrics_family(reg, DP_METRIC_COUNTER, "dpasync_owner_iterations_total",
 *                     "Answers used, per owner.", (const char *[]){ "owner", NULL },
 *                     NULL, 0, &per_owner);
 *   ...
 *   dp_metrics_inc(iters);
 *   dp_metrics_observe(rtt, 0.012);
 *   dp_metrics_series(per_owner, (const char *[]){ "owner-1" }, &m);  (get or create)
 *   dp_metrics_inc(m);
 *
 * Threading: none.  Everything is meant to be used from the one libuv loop
 * thread of a daemon (updates and rendering alike), so there is no
 * locking; calling from two threads at once is a data race.
 *
 * Lifetime: the registry owns every family and series; their pointers
 * stay valid until dp_metrics_destroy().  Lookups of a series are a linear
 * scan of its family (meant for tens or hundreds of owners): keep the
 * returned pointer rather than looking it up on every update. */
#ifndef DP_METRICS_H
#define DP_METRICS_H

#include <stddef.h>

enum dp_metric_type {
	DP_METRIC_COUNTER,    /* only goes up; starts at 0 */
	DP_METRIC_GAUGE,      /* any value; starts at 0 */
	DP_METRIC_HISTOGRAM,  /* observations counted in fixed buckets */
};

struct dp_metrics;        /* the registry */
struct dp_metric_family;  /* one metric name, its help, type and label names */
struct dp_metric;         /* one series: a family with one set of label values */

/* Prometheus' default buckets (seconds): .005 .01 .025 .05 .1 .25 .5 1
 * 2.5 5 10. */
#define DP_METRICS_DEFAULT_BUCKETS 11
extern const double dp_metrics_default_buckets[DP_METRICS_DEFAULT_BUCKETS];

/* Create an empty registry (*out, free with dp_metrics_destroy).
 * Errors: DP_ENOMEM. */
int dp_metrics_new(struct dp_metrics **out);

/* Free the registry and every family and series in it.  NULL is a no-op. */
void dp_metrics_destroy(struct dp_metrics *reg);

/* Register a metric family.
 *   name         [a-zA-Z_:][a-zA-Z0-9_:]*, unique in the registry
 *   help         one line (any text; escaped when rendered); NULL or ""
 *                leaves out the # HELP line
 *   label_names  NULL-terminated array of [a-zA-Z_][a-zA-Z0-9_]* names,
 *                distinct, not starting with "__", not "le" for a
 *                histogram; NULL or { NULL } for an unlabelled family
 *   buckets      histograms only: upper bounds, finite and strictly
 *                increasing, n_buckets >= 1 (a final +Inf may be given and
 *                is implied anyway); ignored (may be NULL) for others
 * Everything is copied.  An unlabelled family has its single series
 * created at once (get it with dp_metrics_series(fam, NULL, ...)); a
 * labelled family appears in the output once it has a series.
 * reg and out must not be NULL.
 * Errors: DP_EINVAL (bad name, label or buckets, duplicate name),
 * DP_ENOMEM.  On failure the registry is unchanged. */
int dp_metrics_family(struct dp_metrics *reg, enum dp_metric_type type, const char *name,
		      const char *help, const char *const label_names[], const double *buckets,
		      size_t n_buckets, struct dp_metric_family **out);

/* The series of `fam` with these label values (one per label name, in the
 * same order; any UTF-8 text, escaped when rendered), created at 0 if it
 * does not exist yet.  label_values may be NULL for an unlabelled family.
 * The pointer stays valid until the registry is destroyed.  fam and out
 * must not be NULL.
 * Errors: DP_EINVAL (label values missing, a NULL value, a value not
 * UTF-8), DP_ENOMEM. */
int dp_metrics_series(struct dp_metric_family *fam, const char *const label_values[],
		      struct dp_metric **out);

/* The same for label values the caller knows no series of `fam` has yet
 * (e.g. one series per owner, whose ids are distinct): created without
 * looking for it among the family's series, so that N of them cost O(N),
 * not O(N^2) (docs/scale.md §5.1).  A labelled family only.  Errors as
 * dp_metrics_series. */
int dp_metrics_series_add(struct dp_metric_family *fam, const char *const label_values[],
			  struct dp_metric **out);

/* Give series `m` of a labelled family other label values (one per label
 * name, as dp_metrics_series), keeping its value and its pointer: a
 * series that follows one changing thing, such as the job a daemon
 * serves, without leaving a stale series per old value.
 * Errors: DP_EINVAL (an unlabelled family; values as dp_metrics_series
 * refuses them; another series of the family has these values),
 * DP_ENOMEM.  m unchanged on failure. */
int dp_metrics_relabel(struct dp_metric *m, const char *const label_values[]);

/* Shortcuts: register an unlabelled family and return its series. */
int dp_metrics_counter(struct dp_metrics *reg, const char *name, const char *help,
		       struct dp_metric **out);
int dp_metrics_gauge(struct dp_metrics *reg, const char *name, const char *help,
		     struct dp_metric **out);
int dp_metrics_histogram(struct dp_metrics *reg, const char *name, const char *help,
			 const double *buckets, size_t n_buckets, struct dp_metric **out);

/* One metric of a daemon's table, registered by dp_metrics_define: its
 * type, name and help; its buckets (histograms only, as
 * dp_metrics_family); and where it goes: a labelled family (labels, a
 * NULL-terminated list of names) into *family, an unlabelled metric's one
 * series into *series. */
struct dp_metrics_def {
	enum dp_metric_type type;
	const char *name;
	const char *help;
	const double *buckets;
	size_t n_buckets;
	const char *const *labels;
	struct dp_metric_family **family;
	struct dp_metric **series;
};

/* Register defs[0..n) in order, each as dp_metrics_family would, and set
 * its *family (when family is not NULL) or its *series.  Stops at the first
 * error and returns it (the errors of dp_metrics_family); the metrics
 * before it stay registered.  A def with neither family nor series, or
 * with series and labels, is a caller bug. */
int dp_metrics_define(struct dp_metrics *reg, const struct dp_metrics_def *defs, size_t n);

/* Register dpasync_build_info{program,version,openssl,libuv} (always 1)
 * and the process metrics under their conventional Prometheus names:
 * process_cpu_seconds_total, process_resident_memory_bytes,
 * process_open_fds, process_start_time_seconds.  Their values are read
 * from /proc/self (proc(5)) each time the registry is rendered; where
 * /proc is not mounted they stay 0.  Once per registry.
 * Errors: those of dp_metrics_family (DP_EINVAL: a name taken), DP_ENOMEM. */
int dp_metrics_process(struct dp_metrics *reg, const char *program);

/* Updates of a series (never NULL).  Each returns 0, or DP_EINVAL and
 * changes nothing when the call does not fit the metric:
 *   dp_metrics_inc      counter or gauge: += 1
 *   dp_metrics_add      counter: += v with v finite and >= 0;
 *                      gauge: += v (finite)
 *   dp_metrics_set      gauge only: = v (any value, NaN and +-Inf too)
 *   dp_metrics_observe  histogram only: v not NaN; counted in the first
 *                      bucket whose bound is >= v (or +Inf), added to the
 *                      sum and the count */
int dp_metrics_inc(struct dp_metric *m);
int dp_metrics_add(struct dp_metric *m, double v);
int dp_metrics_set(struct dp_metric *m, double v);
int dp_metrics_observe(struct dp_metric *m, double v);

/* Current value of a counter or gauge; for a histogram, its count (m not
 * NULL). */
double dp_metrics_value(const struct dp_metric *m);

/* The whole registry in the text exposition format 0.0.4 (content type
 * DP_METRICS_CONTENT_TYPE): families in registration order, each with
 * "# HELP" and "# TYPE" lines then its series in creation order;
 * histograms as cumulative _bucket{le="..."} lines ending with le="+Inf",
 * then _sum and _count.  Values use the shortest decimal text that reads
 * back exactly, and +Inf, -Inf, NaN.  *out is a NUL-terminated malloc'ed
 * string of *len bytes (caller frees).  Errors: DP_EINVAL, DP_ENOMEM. */
int dp_metrics_render(const struct dp_metrics *reg, char **out, size_t *len);

#define DP_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
