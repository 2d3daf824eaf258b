/* SPDX-License-Identifier: Apache-2.0 */
/* learnerd: the state of Algorithm 1 (docs/design.md §4): the plan of the
 * job (docs/planner.md: T, eta, clip, every K_i, made once every owner has
 * said Hello), theta_L, one theta_i per owner, k, and the weights n_i/n
 * fixed when training starts.  The update itself is dp_algo_async_update
 * (common/core/algo.h), as in dpasync sim. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/algo.h"
#include "common/core/error.h"
#include "common/core/log.h"
#include "common/core/plan.h"
#include "learner/job.h"

int lrn_state_init(struct lrn_job *J, struct lrn_settings *s, char **names, size_t count)
{
	DP_REQUIRE(J != NULL && s != NULL && names != NULL && count > 0);
	memset(J, 0, sizeof(*J));
	J->s = s;
	J->model = (dp_model)s->model;
	J->T = s->T;
	J->stall_since = -1;
	J->first_query = -1;
	J->psi_pred = J->psi_zero = NAN;
	J->owners = calloc(count, sizeof(*J->owners));
	if (J->owners == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	J->N = count;
	for (size_t i = 0; i < count; i++) {
		snprintf(J->owners[i].id, sizeof(J->owners[i].id), "%s", names[i]);
		J->owners[i].idx = i;
	}
	J->next_qid = 1;
	J->qid_reserved = 1;
	return 0;
}

void lrn_state_free(struct lrn_job *J)
{
	DP_REQUIRE(J != NULL);
	for (size_t i = 0; i < J->N; i++)
		free(J->owners[i].theta);
	free(J->owners);
	free(J->theta_L);
	free(J->theta_hat);
	free(J->round_ans);
	J->theta_hat = NULL;
	J->round_ans = NULL;
	if (J->have_pub)
		dp_plan_public_free(&J->pub);
	J->have_pub = false;
	J->owners = NULL;
	J->theta_L = NULL;
	J->N = 0;
}

int lrn_state_set_p(struct lrn_job *J, size_t p)
{
	double *tl;

	DP_REQUIRE(J != NULL && J->s != NULL && J->p == 0);
	if (p == 0 || 8 * (uint64_t)p + 64 > J->s->max_frame)
		return dp_error_set(DP_EINVAL, "p = %zu does not fit in max-frame %zu bytes", p,
				    J->s->max_frame);
	tl = calloc(p, sizeof(double));
	if (tl == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory for p = %zu", p);
	for (size_t i = 0; i < J->N; i++) {
		J->owners[i].theta = calloc(p, sizeof(double));
		if (J->owners[i].theta == NULL) {
			for (size_t j = 0; j <= i; j++) {
				free(J->owners[j].theta);
				J->owners[j].theta = NULL;
			}
			free(tl);
			return dp_error_set(DP_ENOMEM, "out of memory for p = %zu", p);
		}
	}
	J->theta_L = tl;
	J->p = p;
	return 0;
}

int lrn_state_check_hello(const struct lrn_job *J, const struct lrn_owner *o, uint64_t n_rows,
			  uint32_t n_features, char *why, size_t size)
{
	uint64_t others = 0;

	DP_REQUIRE(J != NULL && o != NULL && why != NULL && size > 0);
	if (n_rows > LRN_MAX_ROWS) {
		snprintf(why, size, "Hello n_rows %llu exceeds the maximum %llu rows per owner",
			 (unsigned long long)n_rows, (unsigned long long)LRN_MAX_ROWS);
		return DP_ERANGE;
	}
	for (size_t i = 0; i < J->N; i++)
		if (&J->owners[i] != o && J->owners[i].ever_hello)
			others += J->owners[i].n_rows;   /* each <= 2^40: no overflow below 2^24 owners */
	if (others > UINT64_MAX - n_rows) {
		snprintf(why, size, "Hello n_rows %llu: the owners' row counts would overflow",
			 (unsigned long long)n_rows);
		return DP_ERANGE;
	}
	if (J->p != 0 && n_features != J->p) {
		snprintf(why, size, "Hello n_features %u differs from the job's p %zu: give owner "
			 "%s data with the job's feature columns (and bias setting)", n_features,
			 J->p, o->id);
		return DP_EINVAL;
	}
	if (J->p == 0 && 8 * (uint64_t)n_features + 64 > J->s->max_frame) {
		snprintf(why, size, "Hello n_features %u does not fit in max-frame %zu bytes",
			 n_features, J->s->max_frame);
		return DP_EINVAL;
	}
	return 0;
}

static bool same_double(double a, double b)
{
	return a == b || fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

int lrn_state_load_public(struct lrn_job *J)
{
	dp_plan_public pub;
	int rc;

	DP_REQUIRE(J != NULL && J->s != NULL && !J->have_pub);
	if (J->s->public_path == NULL || *J->s->public_path == '\0')
		return 0;
	rc = dp_plan_public_read(J->s->public_path, &pub);
	if (rc < 0)
		return rc;
	/* Constants of another objective would plan for another problem. */
	if (pub.model != J->model || !same_double(pub.lambda, J->s->lambda)) {
		rc = dp_error_set(DP_EINVAL, "public %s: constants for model %s, lambda %g; the job "
				  "has model %s, lambda %g", J->s->public_path,
				  dp_model_name(pub.model), pub.lambda, dp_model_name(J->model),
				  J->s->lambda);
		dp_plan_public_free(&pub);
		return rc;
	}
	J->pub = pub;
	J->have_pub = true;
	return 0;
}

uint64_t lrn_state_cap(const struct lrn_job *J, const struct lrn_owner *o)
{
	DP_REQUIRE(J != NULL && o != NULL);
	if (o->answers_cap != 0)
		return o->answers_cap;
	if (!J->started)
		return 0;
	return o->planned_cap != 0 ? o->planned_cap : J->T;
}

void lrn_state_log_plan(const struct lrn_job *J, const char *from)
{
	char caps[600];
	size_t used = 0;

	DP_REQUIRE(J != NULL && from != NULL && J->started);
	caps[0] = '\0';
	for (size_t i = 0; i < J->N; i++) {
		const struct lrn_owner *o = &J->owners[i];
		int n = snprintf(caps + used, sizeof(caps) - used, "%s%s:%llu", i ? "," : "", o->id,
				 (unsigned long long)lrn_state_cap(J, o));

		if (n < 0 || (size_t)n >= sizeof(caps) - used) {
			snprintf(caps + (sizeof(caps) - 4), 4, "...");
			break;
		}
		used += (size_t)n;
	}
	DP_INFO("learner", "plan from=%s T=%llu eta=%.17g clip=%.17g psi=%.6g psi_zero=%.6g "
		"measured=%s K=%s", from, (unsigned long long)J->T, J->eta, J->clip, J->psi_pred,
		J->psi_zero, J->measured ? "true" : "false", caps);
}

/* The planner's request from the Hellos and the settings; the arrays are
 * the caller's (N each). */
static void request(const struct lrn_job *J, uint64_t *n, double *eps, double *rate, uint64_t *caps,
		    dp_plan_request *req)
{
	for (size_t i = 0; i < J->N; i++) {
		n[i] = J->owners[i].n_rows;
		eps[i] = J->owners[i].epsilon;
		rate[i] = J->owners[i].rate > 0 ? J->owners[i].rate : 1.0;   /* 0: not said */
		/* An owner's own cap (its --answers-cap, or its ledger's after a
		 * restart) is what it will enforce: plan with it. */
		caps[i] = J->owners[i].answers_cap;
	}
	memset(req, 0, sizeof(*req));
	req->mode = J->s->mode == LRN_MODE_SYNC1   ? DP_PLAN_SYNC1
		    : J->s->mode == LRN_MODE_SYNC2 ? DP_PLAN_SYNC2
						   : DP_PLAN_ASYNC;
	req->N = J->N;
	req->n_rows = n;
	req->epsilon = eps;
	req->rate = rate;
	req->T = (size_t)J->s->T;
	req->step = J->s->eta;
	if (J->s->rho > 0 && J->s->T > 0)
		req->step = dp_algo_eta_from_rho(J->N, J->s->T, J->s->lambda, J->s->rho);
	/* The sync steps as dpasync sim takes them: sync1 rho/T^2, sync2 c. */
	if (J->s->mode == LRN_MODE_SYNC1)
		req->step = J->s->rho > 0 && J->s->T > 0
				    ? J->s->rho / ((double)J->s->T * (double)J->s->T) : 0.0;
	if (J->s->mode == LRN_MODE_SYNC2)
		req->step = J->s->c;
	req->clip = J->s->clip;
	req->answers_cap = caps;
	req->margin = J->s->answers_margin;
	req->T_max = (size_t)J->s->T_max;
}

/* dp_plan_make with rho honoured: rho fixes eta only once T is known, so
 * without --T the planner first chooses T, then the plan is made again
 * with that T and eta from rho. */
static int make_plan(const struct lrn_job *J, dp_plan_request *req, const dp_plan_public *pub,
		     dp_plan *pl)
{
	int rc;

	rc = dp_plan_make(req, pub, pl);
	if (rc < 0 || !(J->s->rho > 0) || J->s->T > 0 || J->s->mode == LRN_MODE_SYNC2)
		return rc;
	req->T = pl->T;
	req->step = J->s->mode == LRN_MODE_SYNC1 ? J->s->rho / ((double)pl->T * (double)pl->T)
			 : dp_algo_eta_from_rho(J->N, pl->T, J->s->lambda, J->s->rho);
	dp_plan_free(pl);
	return dp_plan_make(req, pub, pl);
}

/* One WARN line per line of dp_plan_warnings (buf is consumed). */
static void log_warnings(char *buf)
{
	char *line, *save = NULL;

	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save))
		DP_WARN("learner", "plan: %s", line);
}

/* Plan the job into J; the plan's warnings into warn (size bytes). */
static int plan(struct lrn_job *J, char *warn, size_t size)
{
	dp_plan_public shape, *pub = &J->pub;
	dp_plan_request req;
	dp_plan pl;
	uint64_t *n = calloc(J->N, sizeof(uint64_t)), *caps = calloc(J->N, sizeof(uint64_t));
	double *eps = calloc(J->N, sizeof(double)), *rate = calloc(J->N, sizeof(double));
	bool own_shape = false;
	int rc;

	if (n == NULL || caps == NULL || eps == NULL || rate == NULL) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	if (J->have_pub && J->pub.p != J->p) {
		rc = dp_error_set(DP_EINVAL, "public %s: constants for p = %zu, the owners have p = %zu",
				  J->s->public_path, J->pub.p, J->p);
		goto out;
	}
	if (!J->have_pub) {
		rc = dp_plan_public_shape(J->model, J->p, J->s->lambda, &shape);
		if (rc < 0)
			goto out;
		pub = &shape;
		own_shape = true;
	}
	request(J, n, eps, rate, caps, &req);
	rc = make_plan(J, &req, pub, &pl);
	if (rc < 0)
		goto out;
	J->T = pl.T;
	J->eta = pl.step;
	J->step = pl.step;
	J->clip = pl.clip;
	J->psi_pred = pl.psi;
	J->psi_zero = pl.psi_zero;
	J->measured = pl.measured;
	for (size_t i = 0; i < J->N; i++)
		J->owners[i].planned_cap = pl.answers_cap[i];
	dp_plan_warnings(&pl, pub, warn, size);
	dp_plan_free(&pl);
out:
	if (own_shape)
		dp_plan_public_free(&shape);
	free(n);
	free(caps);
	free(eps);
	free(rate);
	return rc;
}

int lrn_state_start(struct lrn_job *J)
{
	char warn[2048];
	uint64_t n = 0;
	int rc;

	DP_REQUIRE(J != NULL && J->p > 0 && !J->started);
	for (size_t i = 0; i < J->N; i++) {
		if (UINT64_MAX - n < J->owners[i].n_rows)
			return dp_error_set(DP_ERANGE, "the owners' row counts overflow");
		n += J->owners[i].n_rows;
	}
	J->n_total = n;
	rc = plan(J, warn, sizeof(warn));
	if (rc < 0)
		return rc;
	J->rho = dp_algo_rho_from_eta(J->N, J->T, J->s->lambda, J->eta);
	if (LRN_SYNC(J)) {
		/* Sync has no owner-copy step: eta holds the mode's step (the
		 * checkpoint's "eta"), rho the paper's rho of sync1 (sync2: c),
		 * which the Welcome carries for information only. */
		J->rho = J->s->mode == LRN_MODE_SYNC1 ? J->step * (double)J->T * (double)J->T
						      : J->step;
		J->theta_hat = calloc(J->p, sizeof(double));
		J->round_ans = calloc((J->N + 1) * J->p, sizeof(double));   /* + agg */
		if (J->theta_hat == NULL || J->round_ans == NULL)
			return dp_error_set(DP_ENOMEM, "out of memory");
	}
	if (!(J->eta > 0) || !isfinite(J->eta) || !(J->rho > 0) || !isfinite(J->rho))
		return dp_error_set(DP_EINVAL, "step size eta=%g rho=%g is not a positive number",
				    J->eta, J->rho);
	J->started = true;
	dp_metrics_set(J->st.T_gauge, (double)J->T);
	lrn_state_log_plan(J, "hellos");
	log_warnings(warn);
	DP_INFO("learner", "training starts n=%llu N=%zu p=%zu T=%llu eta=%.17g rho=%.17g",
		(unsigned long long)n, J->N, J->p, (unsigned long long)J->T, J->eta, J->rho);
	return 0;
}

void lrn_state_apply(struct lrn_job *J, const struct lrn_query *qr, const double *answer)
{
	dp_algo_async_params ap;
	struct lrn_owner *o;
	double weight;

	DP_REQUIRE(J != NULL && qr != NULL && answer != NULL && qr->owner < J->N && J->started);
	ap = (dp_algo_async_params){ .p = J->p, .N = J->N, .eta = J->eta, .lambda = J->s->lambda,
				     .theta_max = J->s->theta_max };
	o = &J->owners[qr->owner];
	weight = (double)o->n_rows / (double)J->n_total;

	/* With several queries out, qr->bar is the midpoint of send time:
	 * theta_L is overwritten from it (docs/learnerd.md, staleness). */
	J->k_done++;
	o->iterations++;
	if (J->s->freq_correction)
		weight = dp_algo_freq_weight(weight, J->N, o->iterations, J->k_done);
	dp_algo_async_update(&ap, qr->bar, answer, weight, o->theta, J->theta_L);
}

uint64_t lrn_state_goal(const struct lrn_job *J)
{
	DP_REQUIRE(J != NULL);
	return LRN_SYNC(J) ? J->T - 1 : J->T;
}

void lrn_state_round(struct lrn_job *J)
{
	double *agg, n_ans = 0.0;
	size_t k;

	DP_REQUIRE(J != NULL && LRN_SYNC(J) && J->started && J->round_got > 0);
	agg = J->round_ans + J->N * J->p;
	for (size_t i = 0; i < J->N; i++)
		if (J->owners[i].round_has)
			n_ans += (double)J->owners[i].n_rows;
	memset(agg, 0, J->p * sizeof(double));
	for (size_t i = 0; i < J->N; i++) {
		const double *a = J->round_ans + i * J->p;
		double w;

		if (!J->owners[i].round_has)
			continue;
		/* Every owner answered: n_i / n, as dpasync sim computes it;
		 * a quorum round reweights by the rows that answered. */
		w = J->round_got == J->N ? (double)J->owners[i].n_rows / (double)J->n_total
					 : (double)J->owners[i].n_rows / n_ans;
		for (size_t q = 0; q < J->p; q++)
			agg[q] += w * a[q];
	}
	k = (size_t)J->k_done + 1;
	if (J->s->mode == LRN_MODE_SYNC1)
		dp_algo_sync1_step(J->p, J->step, k, J->s->lambda, agg, J->theta_L);
	else
		dp_algo_sync2_step(J->p, J->step, k, (size_t)J->T, J->s->lambda, J->s->theta_max,
				   agg, J->theta_L, J->theta_hat);
	J->k_done++;
}

const double *lrn_state_output(const struct lrn_job *J)
{
	DP_REQUIRE(J != NULL);
	return J->s->mode == LRN_MODE_SYNC2 && J->theta_hat != NULL ? J->theta_hat : J->theta_L;
}
