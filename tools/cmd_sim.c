/* SPDX-License-Identifier: Apache-2.0 */
/* dpasync sim: in-process runs of async | sync1 | sync2 over owner CSVs,
 * R repeats, psi statistics (the data of the paper's Fig. 2), with the
 * settings the planner chooses (docs/planner.md "Using it") and every
 * owner held to its answer cap. */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/core/algo.h"
#include "common/core/error.h"
#include "common/core/exit.h"
#include "common/core/file.h"
#include "common/core/json.h"
#include "common/core/mem.h"
#include "common/core/modelfile.h"
#include "common/core/nano.h"
#include "common/core/num.h"
#include "common/core/noise.h"
#include "common/core/plan.h"
#include "common/core/zcdp.h"
#include "common/net/config.h"
#include "tools/cmds.h"
#include "tools/lib/optimum.h"
#include "tools/lib/ownerdata.h"
#include "tools/lib/public.h"
#include "tools/lib/rundata.h"
#include "tools/lib/sim.h"

static const char sim_summary[] =
	"Simulate training over owner datasets FILE... (one CSV per owner) in one\n"
	"process, with the daemons' update and query code and a seeded generator.\n"
	"The planner (docs/planner.md) chooses every setting not given -- T, the\n"
	"step, the clip bound and each owner's answer cap K_i -- from public\n"
	"information: the row counts, budgets and rates, and constants measured on\n"
	"--sample, read from --public, or assumed from the data's shape.  Each\n"
	"answer spends eps_i/K_i (as ownerd's ledger charges) and no owner answers\n"
	"more than K_i times.  Writes DIR/summary.json, DIR/psi.csv (percentiles of\n"
	"psi(theta,k) over the repeats), DIR/model.json (the first repeat's model)\n"
	"and DIR/schedule.txt (the first repeat's owner per async iteration, usable\n"
	"as --schedule).";

struct sim_opts {
	int mode;                      /* enum dp_plan_mode */
	int model;                     /* dp_model */
	int mechanism;                 /* dp_mech */
	char *target, *schema, *schedule, *out, *sample, *public_file, *timing_from;
	bool bias, freq_correction, have_eta, have_rho, have_c, have_clip, have_margin;
	size_t T, T_max, repeats, psi_every, max_inflight, threads;
	uint64_t seed;
	double eta, rho, c, lambda, theta_max, clip, margin, delta;
	struct dp_config_doubles eps, rates, answer_time;
	struct dp_config_sizes caps;
	struct dp_config_strings files;
};

/* Whether --answer-time or --timing-from asks for the timed pipeline:
 * one value > 0 (0 for every owner: off, the default). */
static bool wants_timed(const struct sim_opts *o)
{
	for (size_t i = 0; i < o->answer_time.n; i++)
		if (o->answer_time.v[i] > 0)
			return true;
	return o->timing_from != NULL;
}

/* Cross-field rules of the options (the table checks each one alone). */
static int check_opts(void *arg)
{
	const struct sim_opts *o = arg;
	const char *timed = o->timing_from ? "--timing-from" : "--answer-time";

	if (!(o->lambda > 0) && o->model != DP_MODEL_LINEAR)
		return dp_error_set(DP_EINVAL, "--lambda must be > 0 for logistic and svm "
				    "(strong convexity)");
	if (o->T == 1)
		return dp_error_set(DP_EINVAL, "--T must be at least 2 (or 0: planned)");
	if (o->have_eta && o->have_rho)
		return dp_error_set(DP_EINVAL, "give --eta or --rho, not both");
	if (o->have_eta && o->mode != DP_PLAN_ASYNC)
		return dp_error_set(DP_EINVAL, "--eta applies to --mode async (sync1: --rho, "
				    "sync2: --c)");
	if (o->have_rho && o->mode == DP_PLAN_SYNC2)
		return dp_error_set(DP_EINVAL, "--rho applies to --mode async and sync1 (sync2: "
				    "--c)");
	if (o->have_c && o->mode != DP_PLAN_SYNC2)
		return dp_error_set(DP_EINVAL, "--c applies to --mode sync2");
	if (o->have_rho && o->mode == DP_PLAN_ASYNC && o->lambda <= 0)
		return dp_error_set(DP_EINVAL, "--rho needs --lambda > 0 (sigma = 2 lambda); use "
				    "--eta");
	if (o->sample && o->public_file)
		return dp_error_set(DP_EINVAL, "give --sample or --public, not both");
	if (o->mechanism == DP_MECH_GAUSSIAN && !(o->delta > 0))
		return dp_error_set(DP_EINVAL, "--mechanism gaussian needs the owners' --delta > 0 "
				    "(delta 0 is pure epsilon-DP, which only laplace gives)");
	if (o->max_inflight > 1 && o->mode != DP_PLAN_ASYNC)
		return dp_error_set(DP_EINVAL, "--max-inflight applies to --mode async (a sync "
				    "round asks every owner at once)");
	if (o->timing_from && o->answer_time.n > 0)
		return dp_error_set(DP_EINVAL, "give --answer-time or --timing-from, not both");
	if (wants_timed(o) && o->mode != DP_PLAN_ASYNC)
		return dp_error_set(DP_EINVAL, "%s applies to --mode async", timed);
	if (wants_timed(o) && o->schedule)
		return dp_error_set(DP_EINVAL, "give %s or --schedule, not both (a "
				    "schedule fixes the order the clocks would decide)", timed);
	return 0;
}

/* --schedule FILE: owner numbers 1..N, one per line, into *out (0-based)
 * and their number into *T (which, when not 0, the file must match); the
 * exit status. */
static int read_schedule(const char *path, size_t *T, size_t N, size_t **out)
{
	FILE *f = fopen(path, "r");
	size_t *s = NULL, k = 0, cap = 0, line = 0;
	char buf[64];

	if (f == NULL) {
		dp_cmd_fail("sim", "%s: cannot open: %s", path, strerror(errno));
		return dp_exit_status(DP_ENOENT, DP_EXIT_PHASE_LOAD);
	}
	while (fgets(buf, sizeof(buf), f)) {
		size_t v;

		line++;
		buf[strcspn(buf, "\r\n")] = '\0';
		if (dp_num_parse_size("owner", buf, &v) != 0 || v < 1 || v > N) {
			dp_cmd_fail("sim", "%s:%zu: expected an owner number 1..%zu, got '%s'", path,
				    line, N, buf);
			goto fail;
		}
		if (*T != 0 && k == *T) {
			dp_cmd_fail("sim", "%s:%zu: more than T = %zu lines", path, line, *T);
			goto fail;
		}
		if (dp_mem_reserve(&s, &cap, k + 1, sizeof(*s), 1024) != 0) {
			fclose(f);
			free(s);
			dp_cmd_fail("sim", "out of memory");
			return dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_LOAD);
		}
		s[k++] = v - 1;
	}
	if (*T != 0 && k < *T) {
		dp_cmd_fail("sim", "%s: %zu lines, expected T = %zu", path, k, *T);
		goto fail;
	}
	if (k < 2) {
		dp_cmd_fail("sim", "%s: %zu lines, a schedule needs at least 2", path, k);
		goto fail;
	}
	fclose(f);
	*T = k;
	*out = s;
	return 0;
fail:
	fclose(f);
	free(s);
	return dp_exit_status(DP_EFORMAT, DP_EXIT_PHASE_LOAD);
}

/* The daemons never send a query to an owner that has given its K_i
 * answers: a schedule that does is refused, naming the line. */
static int check_schedule(const char *path, const size_t *sched, size_t T, size_t N,
			  const uint64_t *K)
{
	uint64_t *count = calloc(N, sizeof(uint64_t));

	if (count == NULL) {
		dp_cmd_fail("sim", "out of memory");
		return dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_LOAD);
	}
	for (size_t k = 0; k < T; k++) {
		size_t i = sched[k];

		if (count[i] == K[i]) {
			dp_cmd_fail("sim", "%s:%zu: owner %zu has already given its K = %llu answers "
				    "(raise --answers-cap, or see summary.json \"answers_cap\")", path,
				    k + 1, i + 1, (unsigned long long)K[i]);
			free(count);
			return dp_exit_status(DP_EBUDGET, DP_EXIT_PHASE_LOAD);
		}
		count[i]++;
	}
	free(count);
	return 0;
}

/* Everything the run decided and measured, for the outputs. */
struct sim_result {
	const dp_plan *plan;
	const dp_plan_public *pub;
	const double *eps;          /* N budgets */
	const uint64_t *answers;    /* N: answers in the first repeat */
	double psi_zero;            /* f(0)/f* - 1 on the owners' data */
	size_t worse;               /* repeats that ended with psi >= psi_zero */
	double model_psi;           /* psi of model.json: the first repeat's, at k = T */
	const char *warnings;       /* lines, '\n'-separated */
	const dp_plan *other;       /* the other mechanism's plan (--delta > 0),
				       or NULL */
	double delta;
	double staleness_mean;      /* async: over the first repeat's iterations */
	const double *clock;        /* timed: the repeats' simulated seconds, or NULL */
	double secs_load, secs_optimum, secs_run;   /* wall clock; run: every repeat */
};

/* "mechanisms": {"delta", "laplace", "gaussian": each plan's predicted
 * psi, "lower", "factor"} (docs/cli.md "dpasync sim"). */
static struct json_object *mechanisms_json(const struct sim_result *res)
{
	bool gauss = res->pub->l2;   /* the job's constants are its norm's */
	const dp_plan *lap = gauss ? res->other : res->plan, *gau = gauss ? res->plan : res->other;
	struct json_object *m = json_object_new_object();
	char line[256];
	bool g_lower;
	double factor;
	int rc = m != NULL ? 0 : DP_ENOMEM;

	factor = dp_plan_mech_line(lap, gau, res->delta, line, sizeof(line), &g_lower);
	if (rc == 0)
		rc = dp_json_add(m, "delta", dp_json_double(res->delta));
	if (rc == 0)
		rc = dp_json_add(m, "laplace", dp_json_double(lap->psi));
	if (rc == 0)
		rc = dp_json_add(m, "gaussian", dp_json_double(gau->psi));
	if (rc == 0)
		rc = dp_json_add(m, "lower", json_object_new_string(g_lower ? "gaussian" : "laplace"));
	if (rc == 0)
		rc = dp_json_add(m, "factor", dp_json_double(factor));
	if (rc != 0) {
		json_object_put(m);
		return NULL;
	}
	return m;
}

static double now_secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* "seconds": where the time went, so that a run's cost per iteration can
 * be read without the loading (docs/bench-daemons.md, bounded staleness). */
static struct json_object *timing_json(const struct sim_result *res, size_t T, size_t R)
{
	struct json_object *t = json_object_new_object();
	int rc = t == NULL ? DP_ENOMEM : 0;

	if (rc == 0)
		rc = dp_json_add(t, "load", dp_json_double(res->secs_load));
	if (rc == 0)
		rc = dp_json_add(t, "optimum", dp_json_double(res->secs_optimum));
	if (rc == 0)
		rc = dp_json_add(t, "iterations", dp_json_double(res->secs_run));
	if (rc == 0)
		rc = dp_json_add(t, "per_iteration",
				 dp_json_double(res->secs_run / ((double)T * (double)R)));
	if (rc != 0) {
		json_object_put(t);
		return NULL;
	}
	return t;
}

static double mean_of(const double *v, size_t n)
{
	double m = 0;

	for (size_t i = 0; i < n; i++)
		m += v[i] / (double)n;
	return m;
}

/* Per-owner answer times: each owner's mean (its one value, or the mean
 * of the round trips --timing-from read). */
static struct json_object *timing_means_json(const dp_sim_setup *s)
{
	double *m = calloc(s->N, sizeof(double));
	struct json_object *a = NULL;

	if (m == NULL)
		return NULL;
	for (size_t i = 0; i < s->N; i++)
		m[i] = dp_sim_rtt_mean(&s->answer_rtt[i]);
	a = dp_json_double_array(m, s->N);
	free(m);
	return a;
}

/* "timed": the timed pipeline's answer time (answer_time, or with
 * per-owner times answer_time_mean per owner and the trace they came
 * from) and the simulated length of the job, the wall clock a networked
 * job with these clocks and these answer times would take
 * (docs/bench-daemons.md, bounded staleness). */
static struct json_object *timed_json(const dp_sim_setup *s, const char *timing_from,
				      const double *clock, size_t R)
{
	struct json_object *t = json_object_new_object();
	double lo = clock[0], hi = clock[0], mean = mean_of(clock, R);
	int rc = t == NULL ? DP_ENOMEM : 0;

	for (size_t r = 0; r < R; r++) {
		lo = clock[r] < lo ? clock[r] : lo;
		hi = clock[r] > hi ? clock[r] : hi;
	}
	if (rc == 0 && s->answer_rtt == NULL)
		rc = dp_json_add(t, "answer_time", dp_json_double(s->answer_time));
	if (rc == 0 && s->answer_rtt != NULL)
		rc = dp_json_add(t, "answer_time_mean", timing_means_json(s));
	if (rc == 0 && timing_from != NULL)
		rc = dp_json_add(t, "timing_from", json_object_new_string(timing_from));
	if (rc == 0)
		rc = dp_json_add(t, "seconds_mean", dp_json_double(mean));
	if (rc == 0)
		rc = dp_json_add(t, "seconds_min", dp_json_double(lo));
	if (rc == 0)
		rc = dp_json_add(t, "seconds_max", dp_json_double(hi));
	if (rc != 0) {
		json_object_put(t);
		return NULL;
	}
	return t;
}

/* The per-owner arrays: epsilon, epsilon_spent (what the ledger charges:
 * answers times the nano-rounded share), answers, answers_cap, n_rows. */
/* What owner i's ledger would show after `answers` answers of share
 * eps_q: eps at the owners' delta (docs/zcdp.md §5) and, for Gaussian
 * answers, rho; both charged per answer rounded up as the ledger does.
 * INFINITY for answers without noise. */
static void owner_spent(const dp_sim_setup *s, double delta, size_t i, uint64_t answers,
			double *eps, double *rho)
{
	dp_zcdp_totals one, t = { 0 };
	uint64_t nano;

	*eps = *rho = INFINITY;
	if (isinf(s->eps_q[i]))
		return;
	if (s->mech == DP_MECH_LAPLACE) {
		if (dp_nano_ceil(s->eps_q[i], &nano) == 0)
			*eps = (double)(nano * answers) / 1e9;
		*rho = 0;
		return;
	}
	if (dp_zcdp_charge_gauss(s->eps_q[i], (double)s->p * DP_NOISE_DGAUSS_SLACK, &one) != 0)
		return;
	t.rho_gauss = one.rho_gauss * answers;   /* both below K 2^64 / K: see the share */
	t.slack = one.slack * answers;
	*rho = (double)t.rho_gauss / 1e9;
	if (dp_zcdp_best_eps(&t, delta, eps) != 0)
		*eps = INFINITY;
}

static int add_owners(struct json_object *j, const dp_sim_setup *s, const dp_ownerdata *od,
		      double delta, const struct sim_result *res)
{
	enum { EPS, ROWS, CAP, ANSWERS, SPENT, RHO, NARRAYS };
	static const char *const keys[NARRAYS] = { "epsilon", "n_rows", "answers_cap", "answers",
						   "epsilon_spent", "rho_spent" };
	struct json_object *a[NARRAYS];
	int rc = 0;

	for (size_t k = 0; k < NARRAYS; k++) {
		a[k] = json_object_new_array();
		if (a[k] == NULL)
			rc = DP_ENOMEM;
	}
	for (size_t i = 0; i < s->N && rc == 0; i++) {
		double spent, rho;

		owner_spent(s, delta, i, res->answers[i], &spent, &rho);
		rc = dp_json_push(a[EPS], dp_json_double_inf(res->eps[i]));
		if (rc == 0)
			rc = dp_json_push(a[SPENT], dp_json_double_inf(spent));
		if (rc == 0)
			rc = dp_json_push(a[RHO], dp_json_double_inf(rho));
		if (rc == 0)
			rc = dp_json_push(a[ANSWERS], json_object_new_uint64(res->answers[i]));
		if (rc == 0)
			rc = dp_json_push(a[CAP], json_object_new_uint64(s->answers_cap[i]));
		if (rc == 0)
			rc = dp_json_push(a[ROWS], json_object_new_uint64(od->ds[i].n));
	}
	/* dp_json_add takes each array, also when it fails; after a failure
	 * the rest are released. */
	for (size_t k = 0; k < NARRAYS; k++) {
		if (rc == 0)
			rc = dp_json_add(j, keys[k], a[k]);
		else
			json_object_put(a[k]);
	}
	return rc;
}

/* DIR/summary.json.  final[R] (psi at k = T of each repeat) is sorted
 * here. */
static int write_summary(const struct sim_opts *o, const dp_sim_setup *s,
			 const dp_ownerdata *od, const struct sim_result *res, double *final,
			 const double *theta1, const double *theta_star, const char *path)
{
	struct json_object *j = json_object_new_object(), *psi = NULL, *pj = NULL;
	size_t R = o->repeats;
	double mean = 0;
	int rc = 0;

	if (j == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t r = 0; r < R; r++)
		mean += final[r];
	mean /= (double)R;
	psi = dp_json_double_array(final, R);   /* in repeat order, before sorting */
	if (psi == NULL)
		rc = DP_ENOMEM;
	if (rc == 0)
		rc = dp_json_add(j, "mode", json_object_new_string(dp_plan_mode_name(s->mode)));
	if (rc == 0)
		rc = dp_json_add(j, "model", json_object_new_string(dp_model_name(s->model)));
	if (rc == 0)
		rc = dp_json_add(j, "N", json_object_new_uint64(s->N));
	if (rc == 0)
		rc = dp_json_add(j, "p", json_object_new_uint64(s->p));
	if (rc == 0)
		rc = dp_json_add(j, "T", json_object_new_uint64(s->T));
	if (rc == 0)
		rc = dp_json_add(j, "repeats", json_object_new_uint64(R));
	if (rc == 0)
		rc = dp_json_add(j, "seed", json_object_new_uint64(o->seed));
	if (rc == 0)
		rc = dp_json_add(j, "lambda", dp_json_double(s->lambda));
	if (rc == 0)
		rc = dp_json_add(j, "theta_max", dp_json_double(s->theta_max));
	if (rc == 0)
		rc = dp_json_add(j, "mechanism", json_object_new_string(dp_query_mech_name(s->mech)));
	if (rc == 0)
		rc = dp_json_add(j, "delta", dp_json_double(o->delta));
	if (rc == 0)
		rc = dp_json_add(j, s->mech == DP_MECH_GAUSSIAN ? "clip_l2" : "clip_l1",
				 dp_json_double(s->clip));
	if (rc == 0)
		rc = dp_json_add(j, "freq_correction", json_object_new_boolean(s->freq_correction));
	if (rc == 0 && s->mode == DP_PLAN_ASYNC) {
		rc = dp_json_add(j, "max_inflight", json_object_new_uint64(o->max_inflight));
		if (rc == 0)
			rc = dp_json_add(j, "staleness_mean", dp_json_double(res->staleness_mean));
		if (rc == 0 && res->clock != NULL)
			rc = dp_json_add(j, "timed", timed_json(s, o->timing_from, res->clock, R));
		if (rc == 0)
			rc = dp_json_add(j, "eta", dp_json_double(s->eta));
		if (rc == 0 && s->lambda > 0)
			rc = dp_json_add(j, "rho", dp_json_double(
				dp_algo_rho_from_eta(s->N, s->T, s->lambda, s->eta)));
	} else if (rc == 0 && s->mode == DP_PLAN_SYNC1) {
		rc = dp_json_add(j, "rho", dp_json_double(s->rho_over_T2 * (double)s->T *
							   (double)s->T));
	} else if (rc == 0) {
		rc = dp_json_add(j, "c", dp_json_double(s->c));
	}
	if (rc == 0)
		rc = add_owners(j, s, od, o->delta, res);
	if (rc == 0)
		rc = dp_json_add(j, "f_star", dp_json_double(s->f_star));
	if (rc == 0)
		rc = dp_json_add(j, "psi_mean", dp_json_double(mean));
	if (rc == 0)
		rc = dp_json_add(j, "psi_median", dp_json_double(dp_rundata_percentile(final, R, 50)));
	if (rc == 0)
		rc = dp_json_add(j, "psi_p25", dp_json_double(dp_rundata_percentile(final, R, 25)));
	if (rc == 0)
		rc = dp_json_add(j, "psi_p75", dp_json_double(dp_rundata_percentile(final, R, 75)));
	if (rc == 0) {
		rc = dp_json_add(j, "psi", psi);
		psi = NULL;
	}
	if (rc == 0)
		rc = dp_json_add(j, "psi_zero", dp_json_double(res->psi_zero));
	if (rc == 0)
		rc = dp_json_add(j, "repeats_worse_than_zero", json_object_new_uint64(res->worse));
	if (rc == 0)
		rc = dp_json_add(j, "model_psi", dp_json_double(res->model_psi));
	if (rc == 0)
		rc = dp_json_add(j, "model_worse_than_zero",
				 json_object_new_boolean(res->model_psi >= res->psi_zero));
	if (rc == 0)
		rc = dp_json_add(j, "plan", dp_plan_json(res->plan));
	if (rc == 0 && res->other != NULL)
		rc = dp_json_add(j, "mechanisms", mechanisms_json(res));
	if (rc == 0)
		rc = dp_json_add(j, "warnings", dp_json_lines(res->warnings));
	if (rc == 0) {
		pj = json_object_new_object();
		rc = dp_json_add(j, "public", pj);
	}
	if (rc == 0)
		rc = dp_json_add(pj, "source", json_object_new_string(res->pub->source));
	if (rc == 0)
		rc = dp_json_add(pj, "measured", json_object_new_boolean(res->pub->measured));
	if (rc == 0)
		rc = dp_json_add(j, "theta", dp_json_double_array(theta1, s->p));
	if (rc == 0)
		rc = dp_json_add(j, "theta_star", dp_json_double_array(theta_star, s->p));
	if (rc == 0)
		rc = dp_json_add(j, "seconds", timing_json(res, s->T, R));
	if (rc != 0)   /* the constructors fail only for memory */
		rc = dp_error_set(DP_ENOMEM, "out of memory");
	else
		rc = dp_json_write_file(path, j, 0644);
	json_object_put(psi);
	json_object_put(j);
	return rc;
}

/* DIR/psi.csv, DIR/schedule.txt (async), DIR/summary.json, DIR/model.json;
 * the exit status. */
static int write_outputs(const struct sim_opts *o, const dp_sim_setup *s, const dp_ownerdata *od,
			 const struct sim_result *res, const double *psi, const double *theta1,
			 const double *theta_star, const size_t *owners1)
{
	size_t ncp = dp_sim_checkpoints(s), R = o->repeats;
	double *col = malloc(R * sizeof(double)), *final = malloc(R * sizeof(double));
	char path[4096];
	FILE *f;
	/* Whatever fails here, an output was not written. */
	int rc = dp_exit_status(DP_EIO, DP_EXIT_PHASE_RUN), err;

	if (col == NULL || final == NULL) {
		dp_cmd_fail("sim", "out of memory");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/psi.csv", o->out);
	f = fopen(path, "w");
	if (f == NULL) {
		dp_cmd_fail("sim", "%s: cannot create: %s", path, strerror(errno));
		goto out;
	}
	fputs("k,psi_p25,psi_median,psi_p75,psi_mean\n", f);
	for (size_t c = 0; c < ncp; c++) {
		double m = 0;

		for (size_t r = 0; r < R; r++) {
			col[r] = psi[r * ncp + c];
			m += col[r];
		}
		fprintf(f, "%zu,%.10g,%.10g,%.10g,%.10g\n", dp_sim_checkpoint_k(s, c),
			dp_rundata_percentile(col, R, 25), dp_rundata_percentile(col, R, 50),
			dp_rundata_percentile(col, R, 75), m / (double)R);
	}
	if (fclose(f) != 0) {
		dp_cmd_fail("sim", "%s: write failed", path);
		goto out;
	}
	if (owners1) {
		snprintf(path, sizeof(path), "%s/schedule.txt", o->out);
		f = fopen(path, "w");
		if (f == NULL) {
			dp_cmd_fail("sim", "%s: cannot create: %s", path, strerror(errno));
			goto out;
		}
		for (size_t k = 0; k < s->T; k++)
			fprintf(f, "%zu\n", owners1[k] + 1);
		if (fclose(f) != 0) {
			dp_cmd_fail("sim", "%s: write failed", path);
			goto out;
		}
	}
	for (size_t r = 0; r < R; r++)
		final[r] = psi[r * ncp + ncp - 1];
	snprintf(path, sizeof(path), "%s/summary.json", o->out);
	err = write_summary(o, s, od, res, final, theta1, theta_star, path);
	if (err != 0) {
		dp_cmd_fail("sim", "%s", dp_error_detail(err));
		goto out;
	}
	{
		dp_modelfile mf = { .model = s->model, .p = s->p, .theta = (double *)theta1,
				    .features = od->ds[0].names, .target = od->ds[0].target, .bias = o->bias, .T = s->T,
				    .lambda = s->lambda, .theta_max = s->theta_max, .clip = s->clip };

		snprintf(mf.mode, sizeof(mf.mode), "%s", dp_plan_mode_name(s->mode));
		snprintf(path, sizeof(path), "%s/model.json", o->out);
		err = dp_modelfile_write(path, &mf, DP_FILE_MODE_SHARED);
		if (err != 0) {
			dp_cmd_fail("sim", "%s", dp_error_detail(err));
			goto out;
		}
	}
	rc = 0;
out:
	free(col);
	free(final);
	return rc;
}

/* The step the user fixed for T iterations (0: none, the planner
 * chooses): async --eta, or --rho through dp_algo_eta_from_rho; sync1
 * --rho as rho/T^2; sync2 --c.  T may be 0 only without --rho. */
static double user_step(const struct sim_opts *o, size_t N, size_t T)
{
	if (o->mode == DP_PLAN_ASYNC)
		return o->have_eta ? o->eta
		       : o->have_rho ? dp_algo_eta_from_rho(N, T, o->lambda, o->rho) : 0.0;
	if (o->mode == DP_PLAN_SYNC1)
		return o->have_rho ? o->rho / ((double)T * (double)T) : 0.0;
	return o->have_c ? o->c : 0.0;
}

/* Plan the job.  --rho fixes a step that depends on T: without --T the
 * planner first chooses T as if the step were free, then the rest around
 * rho's step at that T.  Returns 0 or the planner's error. */
static int plan_job(const struct sim_opts *o, dp_plan_request *req, const dp_plan_public *pub,
		    dp_plan *pl)
{
	int rc;

	if (o->have_rho && req->T == 0) {
		dp_plan first;

		rc = dp_plan_make(req, pub, &first);
		if (rc != 0)
			return rc;
		req->T = first.T;
		dp_plan_free(&first);
	}
	req->step = user_step(o, req->N, req->T);
	return dp_plan_make(req, pub, pl);
}

/* A schedule is given, not planned: an owner it names more often than its
 * planned cap gets that many answers as its cap, and the rest is planned
 * again around it.  A schedule from a real run never needs this (learnerd
 * planned the same caps and never exceeds them); one drawn by hand or by
 * an older learnerd may.  Caps fixed with --answers-cap stay as given
 * (check_schedule refuses a schedule that exceeds them). */
static int fit_schedule(const struct sim_opts *o, const size_t *sched, dp_plan_request *req,
			const dp_plan_public *pub, uint64_t *caps, dp_plan *pl)
{
	uint64_t *count = calloc(req->N, sizeof(uint64_t));
	bool raise = false;
	int rc = 0;

	if (count == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t k = 0; k < req->T; k++)
		count[sched[k]]++;
	for (size_t i = 0; i < req->N; i++) {
		if (caps[i] == 0 && count[i] > pl->answers_cap[i]) {
			caps[i] = count[i];
			raise = true;
		}
	}
	if (raise) {
		dp_plan_free(pl);
		rc = plan_job(o, req, pub, pl);
	}
	free(count);
	return rc;
}

/* Print the warning lines, one "dpasync sim: warning: ..." each. */
static void print_warnings(const char *text)
{
	const char *p = text;

	while (*p) {
		size_t n = strcspn(p, "\n");

		fprintf(stderr, "dpasync sim: warning: %.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
}

/* The timed pipeline's answer times into s: --answer-time's one value as
 * s->answer_time (as before per-owner values existed), its N values or
 * --timing-from's round trips into t as s->answer_rtt.  The exit status
 * (the failure printed). */
static int setup_timing(const struct sim_opts *o, size_t N, dp_sim_setup *s, dp_sim_timing *t)
{
	double *v = NULL;
	int rc = 0;

	if (o->timing_from) {
		rc = dp_sim_timing_trace(t, o->timing_from, N);
	} else if (o->answer_time.n == 1) {
		s->answer_time = o->answer_time.v[0];
	} else if (o->answer_time.n > 1) {
		v = calloc(N, sizeof(double));
		rc = v == NULL ? dp_error_set(DP_ENOMEM, "out of memory")
			       : dp_sim_per_owner("--answer-time", o->answer_time.v,
						  o->answer_time.n, N, 0.0, v);
		if (rc == 0 && wants_timed(o))
			rc = dp_sim_timing_values(t, v, N);
	}
	free(v);
	if (rc != 0) {
		dp_cmd_fail("sim", "%s", dp_error_detail(rc));
		return dp_exit_status(rc, DP_EXIT_PHASE_LOAD);
	}
	s->answer_rtt = t->owner;
	return 0;
}

/* Everything after the options; the exit status. */
static int simulate(void *arg)
{
	const struct sim_opts *o = arg;
	dp_ownerdata od = { 0 };
	dp_sim_setup s = { 0 };
	dp_sim_timing timing = { 0 };
	dp_plan_public pub = { 0 }, pub_other = { 0 };
	dp_plan plan = { 0 }, other = { 0 };
	dp_plan_request req = { 0 };
	bool have_other = false;
	size_t *schedule = NULL, *owners1 = NULL, ncp, N, nrows = 0, T;
	double *psi = NULL, *theta = NULL, *theta1 = NULL, *theta_star = NULL;
	double *eps = NULL, f_zero, psi_mean = 0;
	uint64_t *n_rows = NULL, *caps = NULL, *answers = NULL, *stale = NULL;
	double *clock = NULL;
	double t0 = now_secs(), secs_load = 0, secs_optimum = 0, secs_run = 0, stale_mean = 0;
	char warnings[8192];
	int rc;

	rc = dp_ownerdata_load(&od, o->files.v, o->files.n,
			       o->schema ? NULL : o->target, o->bias, o->schema,
			       (dp_model)o->model);
	if (rc != 0) {
		dp_cmd_fail("sim", "%s", dp_error_detail(rc));
		rc = dp_exit_status(rc, DP_EXIT_PHASE_LOAD);
		goto out;
	}
	N = od.N;
	secs_load = now_secs() - t0;
	eps = calloc(N, sizeof(double));
	n_rows = calloc(N, sizeof(uint64_t));
	caps = calloc(N, sizeof(uint64_t));
	answers = calloc(N, sizeof(uint64_t));
	s.weight = calloc(N, sizeof(double));
	s.eps_q = calloc(N, sizeof(double));
	s.rate = calloc(N, sizeof(double));
	if (!eps || !n_rows || !caps || !answers || !s.weight || !s.eps_q || !s.rate) {
		dp_cmd_fail("sim", "out of memory");
		rc = dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_RUN);
		goto out;
	}
	rc = dp_sim_per_owner("--epsilon", o->eps.v, o->eps.n, N, 1.0, eps);
	if (rc == 0)
		rc = dp_sim_per_owner("--rate", o->rates.v, o->rates.n, N, 1.0, s.rate);
	if (rc == 0)
		rc = dp_sim_per_owner_u64("--answers-cap", o->caps.v, o->caps.n, N, 0, caps);
	if (rc != 0) {
		dp_cmd_fail("sim", "%s", dp_error_detail(rc));
		rc = dp_exit_status(rc, DP_EXIT_PHASE_ARGS);
		goto out;
	}
	rc = dp_exit_status(DP_EINVAL, DP_EXIT_PHASE_ARGS);
	if (o->freq_correction && o->mode != DP_PLAN_ASYNC) {
		dp_cmd_fail("sim", "--freq-correction applies to --mode async only");
		goto out;
	}
	if (o->schedule && o->mode != DP_PLAN_ASYNC) {
		dp_cmd_fail("sim", "--schedule applies to --mode async only");
		goto out;
	}
	T = o->T;
	if (o->schedule) {
		rc = read_schedule(o->schedule, &T, N, &schedule);
		if (rc != 0)
			goto out;
	}

	/* The plan, from public information only. */
	{
		dp_public_from from = { .sample = o->sample, .file = o->public_file,
					.target = o->schema ? NULL : o->target,
					.bias = o->bias, .schema = o->schema,
					.l2 = o->mechanism == DP_MECH_GAUSSIAN };

		rc = dp_public_obtain(&from, (dp_model)o->model, &od.ds[0], o->lambda,
				      o->theta_max, &pub);
		if (rc != 0) {
			dp_cmd_fail("sim", "%s", dp_error_detail(rc));
			rc = dp_exit_status(rc, DP_EXIT_PHASE_LOAD);
			goto out;
		}
	}
	for (size_t i = 0; i < N; i++) {
		n_rows[i] = od.ds[i].n;
		nrows += od.ds[i].n;
	}
	req.mode = (enum dp_plan_mode)o->mode;
	req.N = N;
	req.n_rows = n_rows;
	req.epsilon = eps;
	req.rate = s.rate;
	req.T = T;
	req.clip = o->have_clip ? o->clip : 0.0;
	req.answers_cap = caps;
	req.margin = o->have_margin ? o->margin : 0.0;
	req.T_max = o->T_max;
	req.mech = (dp_mech)o->mechanism;
	req.delta = o->delta;
	rc = plan_job(o, &req, &pub, &plan);
	if (rc == 0 && schedule != NULL)
		rc = fit_schedule(o, schedule, &req, &pub, caps, &plan);
	if (rc != 0) {
		if (rc == DP_EINVAL)
			dp_cmd_fail("sim", "bad usage: %s (try dpasync sim --help)",
				    dp_error_detail(rc));
		else
			dp_cmd_fail("sim", "%s", dp_error_detail(rc));
		rc = dp_exit_status(rc, DP_EXIT_PHASE_RUN);
		goto out;
	}
	/* With --delta both mechanisms are allowed: say which is predicted
	 * lower (docs/planner.md §7), as forecast and learnerd do. */
	if (o->delta > 0 && schedule == NULL) {
		dp_public_from from = { .sample = o->sample, .file = o->public_file,
					.target = o->schema ? NULL : o->target,
					.bias = o->bias, .schema = o->schema,
					.l2 = o->mechanism == DP_MECH_GAUSSIAN };

		int r = dp_public_plan_other(&from, (dp_model)o->model, &od.ds[0], o->lambda,
					     o->theta_max, &req, o->delta, &pub_other, &other);

		have_other = r == 0;
		if (r != 0)
			fprintf(stderr, "dpasync sim: warning: no prediction for the other "
				"mechanism: %s\n", dp_error_detail(r));
	}
	T = plan.T;
	if (schedule) {
		rc = check_schedule(o->schedule, schedule, T, N, plan.answers_cap);
		if (rc != 0)
			goto out;
	}

	s.mode = (enum dp_plan_mode)o->mode;
	s.model = (dp_model)o->model;
	s.mech = (dp_mech)o->mechanism;
	s.N = N;
	s.p = od.ds[0].p;
	s.T = T;
	s.ds = od.view;
	s.lambda = o->lambda;
	s.theta_max = o->theta_max;
	s.clip = plan.clip;
	s.answers_cap = plan.answers_cap;
	s.schedule = schedule;
	s.freq_correction = o->freq_correction;
	s.max_inflight = o->max_inflight;
	rc = setup_timing(o, N, &s, &timing);
	if (rc != 0)
		goto out;
	s.psi_every = o->psi_every ? o->psi_every : (T / 200 ? T / 200 : 1);
	s.eta = plan.mode == DP_PLAN_ASYNC ? plan.step : 0.0;
	s.rho_over_T2 = plan.mode == DP_PLAN_SYNC1 ? plan.step : 0.0;
	s.c = plan.mode == DP_PLAN_SYNC2 ? plan.step : 0.0;
	for (size_t i = 0; i < N; i++) {
		s.weight[i] = (double)od.ds[i].n / (double)nrows;
		/* The same per-answer share ownerd's ledger charges (nano units,
		 * the cap rounded down): eps_q, or rho_q with the samplers'
		 * slack and tail charged (docs/zcdp.md §7). */
		uint64_t slack_nano;

		rc = dp_query_share(s.mech, eps[i], o->delta, plan.answers_cap[i], s.p, &s.eps_q[i],
				    &slack_nano);
		if (rc != 0) {
			dp_cmd_fail("sim", "owner %zu: %s", i + 1, dp_error_detail(rc));
			rc = dp_exit_status(rc, DP_EXIT_PHASE_ARGS);
			goto out;
		}
	}
	rc = dp_exit_status(DP_ENOMEM, DP_EXIT_PHASE_RUN);   /* the allocations below */
	ncp = dp_sim_checkpoints(&s);
	psi = calloc(ncp * o->repeats, sizeof(double));
	theta = calloc(s.p, sizeof(double));
	theta1 = calloc(s.p, sizeof(double));
	theta_star = calloc(s.p, sizeof(double));
	owners1 = calloc(T, sizeof(size_t));
	stale = calloc(T, sizeof(uint64_t));
	clock = calloc(o->repeats, sizeof(double));
	if (!psi || !theta || !theta1 || !theta_star || !owners1 || !stale || !clock) {
		dp_cmd_fail("sim", "out of memory");
		goto out;
	}
	t0 = now_secs();
	rc = dp_optimum_solve(s.model, od.view, N, o->lambda, o->theta_max, theta_star, &s.f_star);
	secs_optimum = now_secs() - t0;
	if (rc != 0) {
		dp_cmd_fail("sim", "computing the non-private optimum: %s", dp_error_detail(rc));
		rc = dp_exit_status(rc, DP_EXIT_PHASE_RUN);
		goto out;
	}
	if (!(s.f_star > 0)) {
		dp_cmd_fail("sim", "f(theta*) = %g: psi = f/f* - 1 is undefined when the optimum "
			    "has zero cost", s.f_star);
		rc = dp_exit_status(DP_ENUMERIC, DP_EXIT_PHASE_RUN);
		goto out;
	}
	f_zero = dp_model_fitness(s.model, od.view, N, o->lambda, theta /* zeros */);
	if (dp_file_mkdir_p(o->out, 0) != 0) {
		dp_cmd_fail("sim", "%s", dp_error_detail(DP_EIO));
		rc = dp_exit_status(DP_EIO, DP_EXIT_PHASE_RUN);
		goto out;
	}
	t0 = now_secs();
	{
		size_t failed = 0;

		rc = dp_sim_repeats(&s, o->seed, o->repeats, o->threads, psi, theta1, owners1,
				    answers, stale, clock, &failed);
		if (rc != 0) {
			if (rc == DP_EBUDGET)
				dp_cmd_fail("sim", "%s", dp_error_detail(rc));
			else
				dp_cmd_fail("sim", "repeat %zu: %s", failed + 1, dp_error_detail(rc));
			rc = dp_exit_status(rc, DP_EXIT_PHASE_RUN);
			goto out;
		}
	}
	secs_run = now_secs() - t0;
	for (size_t r = 0; r < o->repeats; r++)
		psi_mean += psi[r * ncp + ncp - 1] / (double)o->repeats;
	for (size_t k = 0; k < T; k++)
		stale_mean += (double)stale[k] / (double)T;

	dp_plan_warnings(&plan, &pub, warnings, sizeof(warnings));
	{
		double pz = dp_model_psi(f_zero, s.f_star);
		size_t used = strlen(warnings);
		struct sim_result res = { .plan = &plan, .pub = &pub, .eps = eps,
					  .answers = answers, .psi_zero = pz,
					  .warnings = warnings, .staleness_mean = stale_mean,
					  .other = have_other ? &other : NULL, .delta = o->delta,
					  .clock = dp_sim_timed(&s) ? clock : NULL,
					  .secs_load = secs_load, .secs_optimum = secs_optimum,
					  .secs_run = secs_run };

		for (size_t r = 0; r < o->repeats; r++)
			res.worse += psi[r * ncp + ncp - 1] >= pz;
		res.model_psi = psi[ncp - 1];
		if (psi_mean >= pz) {
			snprintf(warnings + used, sizeof(warnings) - used,
				 "%sthe model is worse than theta = 0 on the owners' data: mean psi "
				 "%.4g >= psi_zero %.4g; ", used ? "\n" : "", psi_mean, pz);
		} else if (res.worse > 0) {
			snprintf(warnings + used, sizeof(warnings) - used, "%s", used ? "\n" : "");
		}
		used = strlen(warnings);
		/* The mean can hide them, and the model written is one repeat's:
		 * said in the same warning as the mean's when there is one. */
		if (res.worse > 0)
			snprintf(warnings + used, sizeof(warnings) - used,
				 "%zu of %zu repeats ended worse than theta = 0 (psi >= psi_zero "
				 "%.4g); the model written to %s/model.json (repeat 1, psi %.4g) %s",
				 res.worse, o->repeats, pz, o->out, res.model_psi,
				 res.model_psi >= pz ? "is one of them" : "is not one of them");
		print_warnings(warnings);
		if (have_other) {
			char line[256];
			bool gauss = s.mech == DP_MECH_GAUSSIAN;

			dp_plan_mech_line(gauss ? &other : &plan, gauss ? &plan : &other, o->delta,
					  line, sizeof(line), NULL);
			fprintf(stderr, "dpasync sim: %s\n", line);
		}
		rc = write_outputs(o, &s, &od, &res, psi, theta1, theta_star,
				   o->mode == DP_PLAN_ASYNC ? owners1 : NULL);
		if (rc == 0) {
			printf("mode=%s model=%s mechanism=%s N=%zu T=%zu repeats=%zu "
			       "psi_mean=%.6g psi_predicted=%.6g psi_zero=%.6g f_star=%.10g "
			       "worse_than_zero=%zu/%zu ",
			       dp_plan_mode_name(s.mode), dp_model_name(s.model),
			       dp_query_mech_name(s.mech), N, T, o->repeats, psi_mean,
			       plan.psi, pz, s.f_star, res.worse,
			       o->repeats);
			/* a staleness the plan does not model shows beside its psi */
			if (s.mode == DP_PLAN_ASYNC && (o->max_inflight > 1 || dp_sim_timed(&s)))
				printf("staleness=%.4g ", stale_mean);
			if (dp_sim_timed(&s))
				printf("simulated_s=%.6g ", mean_of(clock, o->repeats));
			printf("out=%s\n", o->out);
		}
	}
out:
	dp_ownerdata_free(&od);
	dp_sim_timing_free(&timing);
	dp_plan_public_free(&pub);
	dp_plan_free(&plan);
	if (have_other) {
		dp_plan_public_free(&pub_other);
		dp_plan_free(&other);
	}
	free(schedule);
	free(owners1);
	free(stale);
	free(clock);
	free(psi);
	free(theta);
	free(theta1);
	free(theta_star);
	free(eps);
	free(n_rows);
	free(caps);
	free(answers);
	free(s.weight);
	free(s.eps_q);
	free(s.rate);
	return rc;
}

/* Whether argv asks for --mode p2p, which has its own options
 * (tools/cmd_sim_p2p.c). */
static bool wants_p2p(int argc, char **argv)
{
	for (int k = 1; k < argc; k++) {
		if (strcmp(argv[k], "--") == 0)
			break;
		if (strcmp(argv[k], "--mode=p2p") == 0)
			return true;
		if (strcmp(argv[k], "--mode") == 0 && k + 1 < argc)
			return strcmp(argv[k + 1], "p2p") == 0;
	}
	return false;
}

int dp_cmd_sim(int argc, char **argv)
{
	struct sim_opts o = { 0 };
	const struct dp_config_entry entries[] = {
		{ .name = "mode", DP_CFG_ENUM(&o.mode, dp_plan_mode_names), .def = "async",
		  .metavar = "M", .help = "async | sync1 | sync2 | p2p (peer mode, its own\n"
			  "options: dpasync sim --mode p2p --help)" },
		{ .name = "model", DP_CFG_ENUM(&o.model, dp_model_names), .def = "linear", .metavar = "M",
		  .help = "linear | logistic | svm" },
		{ .name = "target", DP_CFG_STRING(&o.target), .metavar = "COL",
		  .help = "target column (required: no default; with\n--schema: the schema's)" },
		{ .name = "bias", DP_CFG_BOOL(&o.bias), .help = "append a constant-1 feature" },
		{ .name = "schema", DP_CFG_PATH(&o.schema), .metavar = "FILE",
		  .help = "feature schema from dpasync prep, applied to\nraw FILEs" },
		{ .name = "t", .alias = "T", DP_CFG_SIZE(&o.T), .def = "0", .metavar = "N",
		  .help = "iterations (0: planned)" },
		{ .name = "t-max", DP_CFG_SIZE(&o.T_max), .min = 2, .max = INFINITY, .metavar = "N",
		  .help = "largest T the planner considers (default\n100000 async, 2000 sync)" },
		{ .name = "eta", DP_CFG_DOUBLE(&o.eta), .min = 0, .max = INFINITY,
		  .min_exclusive = true, .given = &o.have_eta, .metavar = "E",
		  .help = "async: owner-copy step N rho/(T^2 sigma)\n(default: planned)" },
		{ .name = "rho", DP_CFG_DOUBLE(&o.rho), .min = 0, .max = INFINITY,
		  .min_exclusive = true, .given = &o.have_rho, .metavar = "R",
		  .help = "async: the paper's rho instead of --eta;\n"
			  "sync1: step rho/(T^2 k) (default: planned)" },
		{ .name = "c", DP_CFG_DOUBLE(&o.c), .min = 0, .max = INFINITY, .min_exclusive = true,
		  .given = &o.have_c, .metavar = "C",
		  .help = "sync2: step c/sqrt(k) (default: planned)" },
		{ .name = "lambda", DP_CFG_DOUBLE(&o.lambda), .def = "0.01", .min = 0,
		  .max = INFINITY, .metavar = "L", .help = "regulariser g = lambda ||theta||^2" },
		{ .name = "theta-max", DP_CFG_DOUBLE(&o.theta_max), .def = "10",
		  .min = 0, .max = INFINITY, .min_exclusive = true, .metavar = "M",
		  .help = "box bound on every coordinate" },
		{ .name = "clip", DP_CFG_DOUBLE(&o.clip), .min = 0, .max = INFINITY,
		  .min_exclusive = true, .given = &o.have_clip, .metavar = "X",
		  .help = "clip bound on per-example gradients, L1\n"
			  "(laplace) or L2 (gaussian) (default: planned)" },
		{ .name = "epsilon", DP_CFG_DOUBLES_INF(&o.eps), .def = "1",
		  .min = 0, .max = INFINITY, .min_exclusive = true, .metavar = "E[,..]",
		  .help = "budget per owner, one value for all or one\n"
			  "per owner; inf = no noise" },
		{ .name = "mechanism", DP_CFG_ENUM(&o.mechanism, dp_query_mech_names),
		  .def = "laplace", .metavar = "M",
		  .help = "laplace (the papers': L1 clip, pure epsilon)\n"
			  "| gaussian (L2 clip, zCDP at --delta;\n"
			  "docs/zcdp.md)" },
		{ .name = "delta", DP_CFG_DOUBLE(&o.delta), .def = "0", .min = 0, .max = 0.5,
		  .metavar = "D",
		  .help = "the owners' delta: their guarantee is\n"
			  "(epsilon, delta)-DP; 0: pure epsilon-DP\n"
			  "(gaussian needs > 0)" },
		{ .name = "answers-cap", DP_CFG_SIZES(&o.caps), .min = 1, .max = INFINITY,
		  .metavar = "K[,..]",
		  .help = "answers each owner's budget is split over,\n"
			  "one value for all or one per owner (default:\n"
			  "planned, ceil(T pi_i (1 + margin)) async,\nT-1 sync)" },
		{ .name = "answers-margin", .alias = "margin", DP_CFG_DOUBLE(&o.margin),
		  .min = 0, .max = INFINITY,
		  .min_exclusive = true, .given = &o.have_margin, .metavar = "M",
		  .help = "async: planned caps exceed an owner's\n"
			  "expected answers by this fraction (default\n0.1)" },
		{ .name = "rate", .alias = "rates", DP_CFG_DOUBLES(&o.rates),
		  .min = 0, .max = INFINITY,
		  .min_exclusive = true, .metavar = "R[,..]",
		  .help = "async: owners' Poisson clock rates (default 1\neach)" },
		{ .name = "sample", DP_CFG_PATH(&o.sample), .metavar = "FILE",
		  .help = "a public sample (read like the FILEs) the\n"
			  "planner's constants are measured on" },
		{ .name = "public", DP_CFG_PATH(&o.public_file), .metavar = "FILE",
		  .help = "the planner's constants from dpasync forecast\n"
			  "(default without --sample: assumed from the\ndata's shape)" },
		{ .name = "freq-correction", DP_CFG_BOOL(&o.freq_correction),
		  .help = "async: scale owner i's weight by 1/(N pi_i),\n"
			  "pi_i its observed share of iterations (the\n"
			  "paper's Remark 4)" },
		{ .name = "max-inflight", DP_CFG_SIZE(&o.max_inflight), .def = "1", .min = 1,
		  .max = INFINITY, .metavar = "M",
		  .help = "async: queries out at once, as learnerd's\n"
			  "--max-inflight (each built from the models of\n"
			  "send time, applied oldest first; capped at N)" },
		{ .name = "answer-time", DP_CFG_DOUBLES(&o.answer_time), .min = 0,
		  .max = 3600, .metavar = "SECS[,..]",
		  .help = "async: model the owners' clocks instead of a\n"
			  "full pipeline: an owner asks when its clock\n"
			  "ticks, its answer arrives SECS after the\n"
			  "query, its clock restarts then (one value\n"
			  "for all or one per owner; 0: off;\n"
			  "summary.json \"timed\": the simulated job\n"
			  "length)" },
		{ .name = "timing-from", DP_CFG_PATH(&o.timing_from), .metavar = "TRACE",
		  .help = "async: the timed pipeline with each owner's\n"
			  "answer times drawn from its round trips\n"
			  "(rtt_s) in a learnerd trace.csv; owners in\n"
			  "the trace's name order = the FILEs' order" },
		{ .name = "schedule", DP_CFG_PATH(&o.schedule), .metavar = "FILE",
		  .help = "async: owner (1-based) of each iteration,\n"
			  "one per line (T: its length; a planned cap\n"
			  "below an owner's count there becomes the\n"
			  "count)" },
		{ .name = "repeats", DP_CFG_SIZE(&o.repeats), .def = "10", .min = 1, .max = INFINITY,
		  .metavar = "R", .help = "independent runs" },
		{ .name = "seed", DP_CFG_U64(&o.seed), .def = "1", .metavar = "S", .help = "seed" },
		{ .name = "threads", DP_CFG_SIZE(&o.threads), .def = "1", .metavar = "J",
		  .help = "repeats run on J threads at once (0: one per\n"
			  "CPU); the results do not depend on J" },
		{ .name = "psi-every", DP_CFG_SIZE(&o.psi_every), .metavar = "M",
		  .help = "evaluate psi every M iterations (default\nmax(1, T/200))" },
		{ .name = "out", DP_CFG_PATH(&o.out), .flags = DP_CONFIG_REQUIRED, .metavar = "DIR",
		  .help = "output directory" },
		DP_CONFIG_END,
	};
	const struct dp_config_spec spec = {
		.program = "dpasync sim",
		.command = true,
		.summary = sim_summary,
		.entries = entries,
		.validate = check_opts,
		.validate_arg = &o,
		.args = &o.files,
		.args_metavar = "FILE...",
		.args_min = 1,
	};

	if (wants_p2p(argc, argv))
		return dp_cmd_sim_p2p(argc, argv);
	return dp_cmd_run(&spec, argc, argv, simulate, &o);
}
