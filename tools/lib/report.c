/* SPDX-License-Identifier: Apache-2.0 */
/* The numbers of `dpasync report` (report.h). */
#include "tools/lib/report.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/json.h"
#include "common/core/ledgerset.h"
#include "common/core/nano.h"

/* Largest summary.json read. */
#define SUMMARY_MAX ((size_t)1 << 28)

/* The marked gaps, in trace order, and their total.  all[n - 1] holds the
 * times between updates. */
static int gaps(dp_report_learner *r, const dp_rundata_trace *tr, double *all)
{
	size_t n = tr->n;

	for (size_t k = 1; k < n; k++)
		all[k - 1] = tr->t[k] - tr->t[k - 1];
	/* The median time between updates, then those far above it. */
	r->gap_median = n > 1 ? dp_rundata_percentile(all, n - 1, 50) : NAN;
	r->gap_threshold = fmax(DP_REPORT_GAP_FACTOR * (isnan(r->gap_median) ? 0 : r->gap_median),
				DP_REPORT_GAP_MIN_S);
	r->ngaps = 0;
	r->gap_total = 0;
	for (size_t k = 1; k < n; k++)
		r->ngaps += tr->t[k] - tr->t[k - 1] > r->gap_threshold;
	r->gaps = calloc(r->ngaps ? r->ngaps : 1, sizeof(*r->gaps));
	if (r->gaps == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t k = 1, g = 0; k < n; k++) {
		double dt = tr->t[k] - tr->t[k - 1];

		if (dt <= r->gap_threshold)
			continue;
		r->gap_total += dt;
		r->gaps[g++] = (dp_report_gap){ .after_k = tr->k[k - 1], .from_unix = tr->t[k - 1],
						.seconds = dt };
	}
	return 0;
}

/* Owner i's row; v has room for every row of the trace. */
static void owner_stats(dp_report_owner *o, const dp_rundata_trace *tr, size_t i, double *v)
{
	size_t c = 0;

	o->name = tr->names[i];
	o->eps = NAN;
	for (size_t k = 0; k < tr->n; k++)
		if (tr->owner[k] == i) {
			v[c++] = tr->rtt[k];
			o->eps = tr->eps[k];
		}
	o->iterations = c;
	o->share = (double)c / (double)tr->n;
	o->rtt_median = dp_rundata_percentile(v, c, 50);
	o->rtt_p95 = dp_rundata_percentile(v, c, 95);
	c = 0;
	for (size_t k = 0; k < tr->n; k++)
		if (tr->owner[k] == i)
			v[c++] = tr->wait[k];
	o->wait_median = dp_rundata_percentile(v, c, 50);
	o->wait_p95 = dp_rundata_percentile(v, c, 95);
}

int dp_report_learner_stats(dp_report_learner *r, const dp_rundata_trace *tr)
{
	size_t n;
	double *all;
	int rc;

	DP_REQUIRE(r != NULL && tr != NULL && tr->t != NULL && tr->n > 0);
	n = tr->n;
	all = malloc(n * sizeof(double));
	r->owners = calloc(tr->N ? tr->N : 1, sizeof(*r->owners));
	r->gaps = NULL;
	if (all == NULL || r->owners == NULL) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	r->N = tr->N;
	r->iterations = n;
	r->start_unix = dp_rundata_trace_start(tr);
	r->end_unix = tr->t[n - 1];
	r->duration_s = r->end_unix - r->start_unix;
	r->rate = r->duration_s > 0 ? (double)n / r->duration_s : NAN;
	rc = gaps(r, tr, all);
	if (rc != 0)
		goto out;
	r->rate_without_gaps = r->duration_s - r->gap_total > 0
		? (double)n / (r->duration_s - r->gap_total) : NAN;
	memcpy(all, tr->rtt, n * sizeof(double));
	r->rtt_median = dp_rundata_percentile(all, n, 50);
	r->rtt_p95 = dp_rundata_percentile(all, n, 95);
	memcpy(all, tr->wait, n * sizeof(double));
	r->wait_median = dp_rundata_percentile(all, n, 50);
	r->wait_p95 = dp_rundata_percentile(all, n, 95);
	r->have_staleness = tr->stale != NULL;
	r->stale_median = NAN;
	r->stale_max = NAN;
	if (tr->stale != NULL) {
		memcpy(all, tr->stale, n * sizeof(double));
		r->stale_median = dp_rundata_percentile(all, n, 50);
		r->stale_max = all[n - 1];   /* sorted by the percentile */
	}
	for (size_t i = 0; i < tr->N; i++)
		owner_stats(&r->owners[i], tr, i, all);
out:
	free(all);
	if (rc != 0)
		dp_report_learner_free(r);
	return rc;
}

void dp_report_learner_free(dp_report_learner *r)
{
	if (r == NULL)
		return;
	free(r->gaps);
	free(r->owners);
	r->gaps = NULL;
	r->owners = NULL;
	r->ngaps = 0;
	r->N = 0;
}

/* An optional number member: *have says whether it is there. */
static double get_opt(dp_json_reader *rd, struct json_object *o, const char *key, bool *have)
{
	*have = dp_json_get(rd, o, key, json_type_double, false) != NULL;
	return dp_json_get_double(rd, o, key, false, 0);
}

/* Every element of the array member `key` a number (or, when null_ok, an
 * unlimited budget: the string "inf", or null as older sims wrote it); the
 * array, or NULL when absent. */
static struct json_object *get_numbers(dp_json_reader *rd, struct json_object *o, const char *key,
				       bool null_ok)
{
	struct json_object *a = dp_json_get(rd, o, key, json_type_array, false);

	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		struct json_object *v = json_object_array_get_idx(a, i);
		bool unlimited = v == NULL || (json_object_is_type(v, json_type_string) &&
					       strcmp(json_object_get_string(v), "inf") == 0);

		if (!(null_ok && unlimited))
			dp_json_number(rd, v, key, 0);
	}
	return a;
}

int dp_report_sim_read(dp_report_sim *r, const char *dir)
{
	char path[4200];
	dp_json_reader rd = { .path = path };
	struct json_object *j, *eps, *rows;
	int rc;

	DP_REQUIRE(r != NULL && dir != NULL);
	snprintf(path, sizeof(path), "%s/summary.json", dir);
	rc = dp_json_read_file(path, SUMMARY_MAX, &j);
	if (rc != 0)
		return rc;
	r->N = dp_json_get_u64(&rd, j, "N", false, 0);
	r->seed = dp_json_get_u64(&rd, j, "seed", false, 0);
	r->psi_mean = dp_json_get_double(&rd, j, "psi_mean", false, NAN);
	r->psi_median = dp_json_get_double(&rd, j, "psi_median", false, NAN);
	r->psi_p25 = dp_json_get_double(&rd, j, "psi_p25", false, NAN);
	r->psi_p75 = dp_json_get_double(&rd, j, "psi_p75", false, NAN);
	r->f_star = dp_json_get_double(&rd, j, "f_star", false, NAN);
	r->eta = get_opt(&rd, j, "eta", &r->have_eta);
	r->rho = get_opt(&rd, j, "rho", &r->have_rho);
	r->c = get_opt(&rd, j, "c", &r->have_c);
	r->lambda = dp_json_get_double(&rd, j, "lambda", false, NAN);
	r->theta_max = dp_json_get_double(&rd, j, "theta_max", false, NAN);
	r->clip = dp_json_get_double(&rd, j, "clip_l1", false, NAN);
	eps = get_numbers(&rd, j, "epsilon", true);
	rows = get_numbers(&rd, j, "n_rows", false);
	rc = rd.rc;
	if (rc == 0) {
		r->owners = calloc(r->N ? r->N : 1, sizeof(*r->owners));
		if (r->owners == NULL)
			rc = dp_error_set(DP_ENOMEM, "out of memory");
	}
	for (size_t i = 0; rc == 0 && i < r->N; i++) {
		/* Both arrays were checked above; "inf" (or null) is an
		 * unlimited budget. */
		struct json_object *e = eps ? json_object_array_get_idx(eps, i) : NULL;
		struct json_object *n = rows ? json_object_array_get_idx(rows, i) : NULL;
		dp_report_sim_owner *o = &r->owners[i];

		o->rows = n ? json_object_get_double(n) : NAN;
		o->unlimited = e == NULL || json_object_is_type(e, json_type_string);
		o->eps = o->unlimited ? INFINITY : json_object_get_double(e);
	}
	json_object_put(j);
	if (rc != 0) {
		r->N = 0;
		r->owners = NULL;
	}
	return rc;
}

void dp_report_sim_count(dp_report_sim *r, const dp_rundata_trace *sched)
{
	DP_REQUIRE(r != NULL && sched != NULL);
	r->have_sched = true;
	r->sched_n = sched->n;
	for (size_t i = 0; i < r->N; i++) {
		r->owners[i].iterations = 0;
		for (size_t k = 0; k < sched->n; k++)
			r->owners[i].iterations += sched->owner[k] == i;
	}
}

void dp_report_sim_free(dp_report_sim *r)
{
	if (r == NULL)
		return;
	free(r->owners);
	r->owners = NULL;
	r->N = 0;
}

/* The sentence of one ledger (l's figures computed). */
static void ledger_why(dp_report_ledger *l)
{
	if (l->unlimited)
		snprintf(l->why, sizeof(l->why), "An unlimited (testing) ledger: it counts "
			 "answers and reserved shares but charges no finite ε.");
	else if (l->unapplied == 0)
		snprintf(l->why, sizeof(l->why), "Equal to the applied answers × ε_q: no reserved "
			 "share was forfeited and every answer charged was applied.");
	else if (l->unapplied > 0)
		snprintf(l->why, sizeof(l->why), "%lld share%s of ε_q charged beyond the applied "
			 "answers: a share reserved ahead for the next answer (docs/ledger.md §9) "
			 "and forfeited at a restart or at the job's end, or an answer charged whose "
			 "reply did not arrive or was dropped.", (long long)l->unapplied,
			 l->unapplied == 1 ? "" : "s");
	else
		snprintf(l->why, sizeof(l->why), "The trace applied %lld more answer%s than the "
			 "ledger counts: this is not the ledger this run charged.",
			 -(long long)l->unapplied, l->unapplied == -1 ? "" : "s");
}

/* Owner `name`'s index in r, or r->N. */
static size_t owner_index(const dp_report_learner *r, const char *name)
{
	size_t i = 0;

	while (i < r->N && strcmp(r->owners[i].name, name) != 0)
		i++;
	return i;
}

int dp_report_ledger_apply(dp_report_learner *r, dp_report_ledger *l, size_t n)
{
	DP_REQUIRE(r != NULL && (l != NULL || n == 0));
	/* Every owner first, so that a bad one leaves r unchanged. */
	for (size_t j = 0; j < n; j++) {
		if (owner_index(r, l[j].owner) == r->N)
			return dp_error_set(DP_EINVAL, "--ledgers: %s is not an owner of this run",
					    l[j].owner);
		for (size_t i = 0; i < j; i++)
			if (strcmp(l[i].owner, l[j].owner) == 0)
				return dp_error_set(DP_EINVAL, "--ledgers: %s given twice",
						    l[j].owner);
	}
	for (size_t j = 0; j < n; j++) {
		dp_report_owner *o = &r->owners[owner_index(r, l[j].owner)];

		l[j].applied = o->iterations;
		l[j].unapplied = (int64_t)l[j].answers - (int64_t)l[j].applied;
		l[j].applied_eps = l[j].unlimited ? INFINITY : (double)l[j].applied * l[j].eps_q;
		l[j].extra = l[j].unlimited ? 0 : l[j].spent - l[j].applied_eps;
		ledger_why(&l[j]);
		o->eps = l[j].spent;
		o->eps_ledger = true;
	}
	r->ledgers = l;
	r->nledgers = n;
	return 0;
}

/* l's figures from job entry e. */
static int ledger_fill(dp_report_ledger *l, const dp_ledgerset_job *e)
{
	l->unlimited = e->cap_nano == DP_NANO_INF || e->spent_nano == DP_NANO_INF;
	l->spent = dp_nano_to_eps(e->spent_nano);
	l->cap = dp_nano_to_eps(e->cap_nano);
	l->answers = e->answers;
	l->answers_cap = e->answers_cap;
	if (l->unlimited) {
		l->eps_q = INFINITY;
		return 0;
	}
	/* Every unit of the count was charged one share (docs/ledger.md §9),
	 * so the share is exact from the totals once there is one. */
	if (e->answers > 0) {
		l->eps_q = dp_nano_to_eps(e->spent_nano / e->answers);
		return 0;
	}
	return dp_nano_share(l->cap, l->answers_cap ? l->answers_cap : 1, &l->eps_q);
}

int dp_report_ledger_read(dp_report_ledger *l, const char *owner, const char *dir,
			  const char *job)
{
	const dp_ledgerset_job *e;
	dp_ledgerset *s;
	char why[512], *path;
	int rc;

	DP_REQUIRE(l != NULL && owner != NULL && dir != NULL && job != NULL);
	memset(l, 0, sizeof(*l));
	l->owner = owner;
	l->dir = dir;
	rc = dp_ledgerset_open(dir, owner, DP_LEDGERSET_READONLY, NULL, &s);
	if (rc != 0) {
		snprintf(why, sizeof(why), "%s", dp_error_detail(rc));
		return dp_error_set(rc, "--ledgers %s=%s: %s", owner, dir, why);
	}
	path = dp_ledgerset_job_path(s, job);
	if (path == NULL) {
		dp_ledgerset_close(s);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	e = dp_ledgerset_find(s, path);
	if (e == NULL)
		rc = dp_error_set(DP_ENOENT, "--ledgers %s=%s: no ledger for job %s (no %s; the "
				  "directory holds %zu other job%s)", owner, dir, job, path,
				  dp_ledgerset_count(s), dp_ledgerset_count(s) == 1 ? "" : "s");
	else
		rc = ledger_fill(l, e);
	free(path);
	dp_ledgerset_close(s);
	return rc;
}
