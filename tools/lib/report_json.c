/* SPDX-License-Identifier: Apache-2.0 */
/* report.json from the numbers of a report (report_json.h).  Each helper
 * adds nothing once *rc is set and sets it on failure, so a document is
 * built as a list of members and checked once. */
#include "tools/lib/report_json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/json.h"

/* key: v, or null when v is not finite (JSON has no NaN). */
static void jnum(struct json_object *o, const char *key, double v, int *rc)
{
	if (*rc == 0)
		*rc = isfinite(v) ? dp_json_add(o, key, dp_json_double(v)) : dp_json_add_null(o, key);
}

/* A run of numbers, in order. */
struct num {
	const char *key;
	double v;
};

static void jnums(struct json_object *o, const struct num *v, size_t n, int *rc)
{
	for (size_t i = 0; i < n; i++)
		jnum(o, v[i].key, v[i].v, rc);
}

#define JNUMS(o, rc, ...) \
	jnums((o), (const struct num[]){ __VA_ARGS__ }, \
	      sizeof((const struct num[]){ __VA_ARGS__ }) / sizeof(struct num), (rc))

static void jint(struct json_object *o, const char *key, uint64_t v, int *rc)
{
	if (*rc == 0)
		*rc = dp_json_add(o, key, json_object_new_uint64(v));
}

static void jstr(struct json_object *o, const char *key, const char *v, int *rc)
{
	if (*rc == 0)
		*rc = dp_json_add(o, key, json_object_new_string(v));
}

static void jbool(struct json_object *o, const char *key, bool v, int *rc)
{
	if (*rc == 0)
		*rc = dp_json_add(o, key, json_object_new_boolean(v));
}

/* "psi_measured": [{"k", "time_s", "psi"}...], the run's snapshots. */
static void learner_snapshots(struct json_object *js, const dp_report_learner *r, int *rc)
{
	struct json_object *a;

	if (*rc != 0 || r->nsnap == 0)
		return;
	a = json_object_new_array();
	*rc = dp_json_add(js, "psi_measured", a);
	for (size_t i = 0; *rc == 0 && i < r->nsnap; i++) {
		struct json_object *p = json_object_new_object();

		*rc = dp_json_push(a, p);
		jint(p, "k", r->snap_k[i], rc);
		jnum(p, "time_s", r->snap_s[i], rc);
		jnum(p, "psi", r->snap_psi[i], rc);
	}
}

/* key_median_ms and key_p95_ms from seconds. */
static void jms(struct json_object *o, const char *key, double median, double p95, int *rc)
{
	char k[64];

	snprintf(k, sizeof(k), "%s_median_ms", key);
	jnum(o, k, median * 1e3, rc);
	snprintf(k, sizeof(k), "%s_p95_ms", key);
	jnum(o, k, p95 * 1e3, rc);
}

/* A new array under key in js; NULL once *rc is set. */
static struct json_object *jarray(struct json_object *js, const char *key, int *rc)
{
	struct json_object *a;

	if (*rc != 0)
		return NULL;
	a = json_object_new_array();
	*rc = dp_json_add(js, key, a);   /* takes a, also on failure */
	return *rc == 0 ? a : NULL;
}

/* A new object appended to the array a; NULL once *rc is set. */
static struct json_object *jpush(struct json_object *a, int *rc)
{
	struct json_object *o;

	if (*rc != 0)
		return NULL;
	o = json_object_new_object();
	*rc = dp_json_push(a, o);   /* takes o, also on failure */
	return *rc == 0 ? o : NULL;
}

/* The members every report starts with. */
static void head(struct json_object *js, const char *kind, const char *dir, int *rc)
{
	jstr(js, "format", "dpasync-report", rc);
	jint(js, "version", 1, rc);
	jstr(js, "kind", kind, rc);
	jstr(js, "dir", dir, rc);
}

/* 0, or DP_ENOMEM after releasing js. */
static int done(struct json_object *js, int rc, struct json_object **out)
{
	if (rc != 0) {
		json_object_put(js);
		*out = NULL;
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	*out = js;
	return 0;
}

static void learner_gaps(struct json_object *js, const dp_report_learner *r, int *rc)
{
	struct json_object *a = jarray(js, "gaps", rc);

	for (size_t i = 0; i < r->ngaps; i++) {
		struct json_object *g = jpush(a, rc);

		jint(g, "after_k", r->gaps[i].after_k, rc);
		jnum(g, "from_unix", r->gaps[i].from_unix, rc);
		jnum(g, "seconds", r->gaps[i].seconds, rc);
	}
}

static void learner_owners(struct json_object *js, const dp_report_learner *r, int *rc)
{
	struct json_object *a = jarray(js, "owners", rc);

	for (size_t i = 0; i < r->N; i++) {
		const dp_report_owner *o = &r->owners[i];
		struct json_object *oj = jpush(a, rc);

		jstr(oj, "owner", o->name, rc);
		jint(oj, "iterations", o->iterations, rc);
		jnum(oj, "share", o->share, rc);
		jnum(oj, "epsilon_spent", o->eps, rc);
		jstr(oj, "epsilon_spent_from", o->eps_ledger ? "ledger" : "trace", rc);
		jms(oj, "rtt", o->rtt_median, o->rtt_p95, rc);
		jms(oj, "wait", o->wait_median, o->wait_p95, rc);
	}
}

/* ε in a document: "inf" for an unlimited (testing) ledger. */
static void jeps(struct json_object *o, const char *key, double v, int *rc)
{
	if (isinf(v))
		jstr(o, key, "inf", rc);
	else
		jnum(o, key, v, rc);
}

/* The owners' ledgers given with --ledgers, the fields of report.md's table. */
static void learner_ledgers(struct json_object *js, const dp_report_learner *r, int *rc)
{
	struct json_object *a;

	if (r->nledgers == 0)
		return;
	a = jarray(js, "ledgers", rc);
	for (size_t i = 0; i < r->nledgers; i++) {
		const dp_report_ledger *l = &r->ledgers[i];
		struct json_object *oj = jpush(a, rc);

		jstr(oj, "owner", l->owner, rc);
		jstr(oj, "ledger", l->dir, rc);
		jeps(oj, "epsilon_charged", l->spent, rc);
		jeps(oj, "epsilon_cap", l->cap, rc);
		jint(oj, "ledger_answers", l->answers, rc);
		jint(oj, "answers_cap", l->answers_cap, rc);
		jint(oj, "applied_answers", l->applied, rc);
		jeps(oj, "epsilon_q", l->eps_q, rc);
		jeps(oj, "applied_epsilon", l->applied_eps, rc);
		jnum(oj, "difference", l->extra, rc);
		if (*rc == 0)
			*rc = dp_json_add(oj, "unapplied_shares", json_object_new_int64(l->unapplied));
		jstr(oj, "why", l->why, rc);
	}
}

/* The two blocks of reproduce commands as one array of lines. */
static void learner_reproduce(struct json_object *js, const dp_report_learner *r, int *rc)
{
	size_t lp = strlen(r->repro_plots), ls = strlen(r->repro_sim);
	char *both;

	if (*rc != 0)
		return;
	both = malloc(lp + ls + 1);
	if (both == NULL) {
		*rc = DP_ENOMEM;
		return;
	}
	memcpy(both, r->repro_plots, lp);
	memcpy(both + lp, r->repro_sim, ls + 1);
	*rc = dp_json_add(js, "reproduce", dp_json_lines(both));
	free(both);
}

int dp_report_json_learner(const dp_report_learner *r, struct json_object **out)
{
	struct json_object *js = json_object_new_object();
	int rc = js == NULL ? DP_ENOMEM : 0;

	DP_REQUIRE(r != NULL && out != NULL);
	head(js, "learnerd", r->dir, &rc);
	if (r->job != NULL)
		jstr(js, "job", r->job, &rc);
	else if (rc == 0)
		rc = dp_json_add_null(js, "job");
	if (r->model != NULL) {
		jstr(js, "model", r->model, &rc);
		jbool(js, "partial", r->partial, &rc);
	}
	if (r->partial) {
		jint(js, "partial_k", r->partial_k, &rc);
		jstr(js, "partial_reason", r->partial_reason, &rc);
	}
	if (r->mode != NULL) {
		jstr(js, "mode", r->mode, &rc);
		jnum(js, "max_inflight", r->max_inflight, &rc);
	}
	jint(js, "N", r->N, &rc);
	if (r->T)
		jint(js, "T", r->T, &rc);
	if (r->have_eta)
		jnum(js, "eta", r->eta, &rc);
	jint(js, "iterations", r->iterations, &rc);
	JNUMS(js, &rc, { "start_unix", r->start_unix }, { "end_unix", r->end_unix },
	      { "duration_s", r->duration_s }, { "iterations_per_s", r->rate },
	      { "gap_threshold_s", r->gap_threshold }, { "gap_median_s", r->gap_median },
	      { "gaps_s", r->gap_total },
	      { "iterations_per_s_without_gaps", r->rate_without_gaps });
	learner_gaps(js, r, &rc);
	jms(js, "rtt", r->rtt_median, r->rtt_p95, &rc);
	jms(js, "wait", r->wait_median, r->wait_p95, &rc);
	JNUMS(js, &rc, { "staleness_median", r->stale_median }, { "staleness_max", r->stale_max },
	      { "psi", r->psi });
	if (r->have_psi)
		JNUMS(js, &rc, { "f", r->f }, { "f_star", r->f_star }, { "psi_zero", r->psi_zero });
	if (r->sim != NULL)
		jnum(js, "psi_sim_median", r->sim_median, &rc);
	learner_snapshots(js, r, &rc);
	learner_owners(js, r, &rc);
	learner_ledgers(js, r, &rc);
	learner_reproduce(js, r, &rc);
	return done(js, rc, out);
}

int dp_report_json_sim(const dp_report_sim *r, struct json_object **out)
{
	struct json_object *js = json_object_new_object(), *a;
	int rc = js == NULL ? DP_ENOMEM : 0;

	DP_REQUIRE(r != NULL && out != NULL);
	head(js, "sim", r->dir, &rc);
	jint(js, "seed", r->seed, &rc);
	jint(js, "runs", r->runs, &rc);
	JNUMS(js, &rc, { "psi_mean", r->psi_mean }, { "psi_median", r->psi_median },
	      { "psi_p25", r->psi_p25 }, { "psi_p75", r->psi_p75 }, { "f_star", r->f_star },
	      { "eta", r->have_eta ? r->eta : NAN }, { "rho", r->have_rho ? r->rho : NAN },
	      { "c", r->have_c ? r->c : NAN }, { "lambda", r->lambda },
	      { "theta_max", r->theta_max }, { "clip_l1", r->clip });
	a = jarray(js, "owners", &rc);
	for (size_t i = 0; i < r->N; i++) {
		const dp_report_sim_owner *o = &r->owners[i];
		struct json_object *oj = jpush(a, &rc);
		char name[32];

		snprintf(name, sizeof(name), "owner-%zu", i + 1);
		jstr(oj, "owner", name, &rc);
		jnum(oj, "rows", o->rows, &rc);
		if (o->unlimited)
			jstr(oj, "epsilon", "inf", &rc);
		else
			jnum(oj, "epsilon", o->eps, &rc);
		if (r->have_sched) {
			jint(oj, "iterations", o->iterations, &rc);
			jnum(oj, "share", (double)o->iterations / (double)r->sched_n, &rc);
		}
	}
	if (rc == 0)
		rc = dp_json_add(js, "reproduce", dp_json_lines(r->repro));
	return done(js, rc, out);
}
