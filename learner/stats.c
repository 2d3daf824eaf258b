/* SPDX-License-Identifier: Apache-2.0 */
/* learnerd: Prometheus metrics (common/net/metrics.h, served by common/net/httpd.h
 * on --metrics-listen).  Names and meanings: docs/learnerd.md. */
#include "common/core/error.h"
#include "learner/job.h"

/* Round trips and queue waits: from LAN milliseconds to owners that tick
 * once a minute. */
static const double buckets[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
				       0.5, 1, 2.5, 5, 10, 30, 60 };
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))

int lrn_stats_init(struct lrn_job *J)
{
	struct lrn_stats *s = &J->st;
	static const char *const owner_label[] = { "owner", NULL };
	const struct dp_metrics_def defs[] = {
		{ DP_METRIC_COUNTER, "dpasync_learner_iterations_total",
		  "Iterations completed (k; includes those before a resume).",
		  .series = &s->iterations },
		{ DP_METRIC_GAUGE, "dpasync_learner_owners_connected",
		  "Owners connected that have said Hello.", .series = &s->connected },
		{ DP_METRIC_GAUGE, "dpasync_learner_queue_depth",
		  "Update requests waiting in the FIFO.", .series = &s->queue_depth },
		{ DP_METRIC_GAUGE, "dpasync_learner_inflight", "Queries sent and not yet answered.",
		  .series = &s->inflight },
		{ DP_METRIC_HISTOGRAM, "dpasync_learner_rtt_seconds",
		  "Query to answer time of answered queries.", buckets, NBUCKETS,
		  .series = &s->rtt },
		{ DP_METRIC_HISTOGRAM, "dpasync_learner_wait_seconds",
		  "Time an update request waited in the FIFO (0 in broadcast).", buckets, NBUCKETS,
		  .series = &s->wait },
		{ DP_METRIC_COUNTER, "dpasync_learner_owner_iterations_total",
		  "Iterations done with each owner's answers.", .labels = owner_label,
		  .family = &s->owner_iter },
		{ DP_METRIC_GAUGE, "dpasync_learner_owner_epsilon_spent",
		  "Privacy budget each owner reported spent.", .labels = owner_label,
		  .family = &s->owner_eps },
		{ DP_METRIC_COUNTER, "dpasync_learner_refusals_total", "Refuse messages received.",
		  .series = &s->refusals },
		{ DP_METRIC_COUNTER, "dpasync_learner_query_timeouts_total",
		  "Queries abandoned after query-timeout.", .series = &s->timeouts },
		{ DP_METRIC_COUNTER, "dpasync_learner_connections_rejected_total",
		  "Connections refused: unknown identity or already connected.",
		  .series = &s->rejected },
		{ DP_METRIC_GAUGE, "dpasync_learner_iterations_target", "Iterations of the job (T).",
		  .series = &s->T_gauge },
		{ DP_METRIC_GAUGE, "dpasync_learner_connections_pending",
		  "TLS connections accepted and not yet admitted (handshake or identity check).",
		  .series = &s->pending },
		{ DP_METRIC_COUNTER, "dpasync_learner_connections_evicted_total",
		  "Pending connections closed to make room for newer ones (max-pending).",
		  .series = &s->evicted },
		{ DP_METRIC_COUNTER, "dpasync_learner_connections_refused_total",
		  "Connections closed at accept: no room left for them.", .series = &s->refused },
	};
	int rc;

	DP_REQUIRE(J != NULL && s->reg == NULL);
	rc = dp_metrics_new(&s->reg);
	if (rc == 0)
		rc = dp_metrics_define(s->reg, defs, sizeof(defs) / sizeof(defs[0]));
	if (rc == 0)
		rc = dp_metrics_process(s->reg, "learnerd");
	for (size_t i = 0; rc == 0 && i < J->N; i++) {
		struct lrn_owner *o = &J->owners[i];
		const char *lv[] = { o->id };

		/* Owner ids are distinct (learnerd refuses a list with one
		 * twice): no lookup, O(N) in all. */
		rc = dp_metrics_series_add(s->owner_iter, lv, &o->m_iter);
		if (rc == 0)
			rc = dp_metrics_series_add(s->owner_eps, lv, &o->m_eps);
		if (rc == 0) {
			dp_metrics_add(o->m_iter, (double)o->iterations);
			dp_metrics_set(o->m_eps, o->eps_spent);
		}
	}
	if (rc < 0)
		return dp_error_set(rc, "metrics: %s", dp_error_detail(rc));
	dp_metrics_add(s->iterations, (double)J->k_done);
	dp_metrics_set(s->T_gauge, (double)J->T);
	lrn_stats_gauges(J);
	return 0;
}

void lrn_stats_free(struct lrn_job *J)
{
	DP_REQUIRE(J != NULL);
	dp_metrics_destroy(J->st.reg);
	J->st.reg = NULL;
}

void lrn_stats_gauges(struct lrn_job *J)
{
	DP_REQUIRE(J != NULL);
	if (J->st.reg == NULL)
		return;
	/* Called on every scheduling step: a counter, not a scan of N. */
	dp_metrics_set(J->st.connected, (double)J->n_hello);
	dp_metrics_set(J->st.queue_depth, (double)J->fifo_len);
	dp_metrics_set(J->st.inflight, (double)J->inflight);
}
