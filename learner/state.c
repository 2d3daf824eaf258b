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
#include "learner/lrn.h"

int lrn_state_init(struct lrn *L, char **names, size_t count)
{
	DP_REQUIRE(L != NULL && names != NULL && count > 0 && L->owners == NULL);
	L->owners = calloc(count, sizeof(*L->owners));
	if (L->owners == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	L->N = count;
	for (size_t i = 0; i < count; i++) {
		snprintf(L->owners[i].id, sizeof(L->owners[i].id), "%s", names[i]);
		L->owners[i].idx = i;
	}
	L->next_qid = 1;
	L->qid_reserved = 1;
	return 0;
}

void lrn_state_free(struct lrn *L)
{
	DP_REQUIRE(L != NULL);
	for (size_t i = 0; i < L->N; i++)
		free(L->owners[i].theta);
	free(L->owners);
	free(L->theta_L);
	free(L->theta_hat);
	free(L->round_ans);
	L->theta_hat = NULL;
	L->round_ans = NULL;
	if (L->have_pub)
		dp_plan_public_free(&L->pub);
	L->have_pub = false;
	L->owners = NULL;
	L->theta_L = NULL;
	L->N = 0;
}

int lrn_state_set_p(struct lrn *L, size_t p)
{
	double *tl;

	DP_REQUIRE(L != NULL && L->s != NULL && L->p == 0);
	if (p == 0 || 8 * (uint64_t)p + 64 > L->s->max_frame)
		return dp_error_set(DP_EINVAL, "p = %zu does not fit in max-frame %zu bytes", p,
				    L->s->max_frame);
	tl = calloc(p, sizeof(double));
	if (tl == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory for p = %zu", p);
	for (size_t i = 0; i < L->N; i++) {
		L->owners[i].theta = calloc(p, sizeof(double));
		if (L->owners[i].theta == NULL) {
			for (size_t j = 0; j <= i; j++) {
				free(L->owners[j].theta);
				L->owners[j].theta = NULL;
			}
			free(tl);
			return dp_error_set(DP_ENOMEM, "out of memory for p = %zu", p);
		}
	}
	L->theta_L = tl;
	L->p = p;
	return 0;
}

int lrn_state_check_hello(const struct lrn *L, const struct lrn_owner *o, uint64_t n_rows,
			  uint32_t n_features, char *why, size_t size)
{
	uint64_t others = 0;

	DP_REQUIRE(L != NULL && o != NULL && why != NULL && size > 0);
	if (n_rows > LRN_MAX_ROWS) {
		snprintf(why, size, "Hello n_rows %llu exceeds the maximum %llu rows per owner",
			 (unsigned long long)n_rows, (unsigned long long)LRN_MAX_ROWS);
		return DP_ERANGE;
	}
	for (size_t i = 0; i < L->N; i++)
		if (&L->owners[i] != o && L->owners[i].ever_hello)
			others += L->owners[i].n_rows;   /* each <= 2^40: no overflow below 2^24 owners */
	if (others > UINT64_MAX - n_rows) {
		snprintf(why, size, "Hello n_rows %llu: the owners' row counts would overflow",
			 (unsigned long long)n_rows);
		return DP_ERANGE;
	}
	if (L->p != 0 && n_features != L->p) {
		snprintf(why, size, "Hello n_features %u differs from the job's p %zu: give owner "
			 "%s data with the job's feature columns (and bias setting)", n_features,
			 L->p, o->id);
		return DP_EINVAL;
	}
	if (L->p == 0 && 8 * (uint64_t)n_features + 64 > L->s->max_frame) {
		snprintf(why, size, "Hello n_features %u does not fit in max-frame %zu bytes",
			 n_features, L->s->max_frame);
		return DP_EINVAL;
	}
	return 0;
}

static bool same_double(double a, double b)
{
	return a == b || fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

int lrn_state_load_public(struct lrn *L)
{
	dp_plan_public pub;
	int rc;

	DP_REQUIRE(L != NULL && L->s != NULL && !L->have_pub);
	if (L->s->public_path == NULL || *L->s->public_path == '\0')
		return 0;
	rc = dp_plan_public_read(L->s->public_path, &pub);
	if (rc < 0)
		return rc;
	/* Constants of another objective would plan for another problem. */
	if (pub.model != L->model || !same_double(pub.lambda, L->s->lambda)) {
		rc = dp_error_set(DP_EINVAL, "public %s: constants for model %s, lambda %g; the job "
				  "has model %s, lambda %g", L->s->public_path,
				  dp_model_name(pub.model), pub.lambda, dp_model_name(L->model),
				  L->s->lambda);
		dp_plan_public_free(&pub);
		return rc;
	}
	L->pub = pub;
	L->have_pub = true;
	return 0;
}

uint64_t lrn_state_cap(const struct lrn *L, const struct lrn_owner *o)
{
	DP_REQUIRE(L != NULL && o != NULL);
	if (o->answers_cap != 0)
		return o->answers_cap;
	if (!L->started)
		return 0;
	return o->planned_cap != 0 ? o->planned_cap : L->T;
}

void lrn_state_log_plan(const struct lrn *L, const char *from)
{
	char caps[600];
	size_t used = 0;

	DP_REQUIRE(L != NULL && from != NULL && L->started);
	caps[0] = '\0';
	for (size_t i = 0; i < L->N; i++) {
		const struct lrn_owner *o = &L->owners[i];
		int n = snprintf(caps + used, sizeof(caps) - used, "%s%s:%llu", i ? "," : "", o->id,
				 (unsigned long long)lrn_state_cap(L, o));

		if (n < 0 || (size_t)n >= sizeof(caps) - used) {
			snprintf(caps + (sizeof(caps) - 4), 4, "...");
			break;
		}
		used += (size_t)n;
	}
	DP_INFO("learner", "plan from=%s T=%llu eta=%.17g clip=%.17g psi=%.6g psi_zero=%.6g "
		"measured=%s K=%s", from, (unsigned long long)L->T, L->eta, L->clip, L->psi_pred,
		L->psi_zero, L->measured ? "true" : "false", caps);
}

/* The planner's request from the Hellos and the settings; the arrays are
 * the caller's (N each). */
static void request(const struct lrn *L, uint64_t *n, double *eps, double *rate, uint64_t *caps,
		    dp_plan_request *req)
{
	for (size_t i = 0; i < L->N; i++) {
		n[i] = L->owners[i].n_rows;
		eps[i] = L->owners[i].epsilon;
		rate[i] = L->owners[i].rate > 0 ? L->owners[i].rate : 1.0;   /* 0: not said */
		/* An owner's own cap (its --answers-cap, or its ledger's after a
		 * restart) is what it will enforce: plan with it. */
		caps[i] = L->owners[i].answers_cap;
	}
	memset(req, 0, sizeof(*req));
	req->mode = L->s->mode == LRN_MODE_SYNC1   ? DP_PLAN_SYNC1
		    : L->s->mode == LRN_MODE_SYNC2 ? DP_PLAN_SYNC2
						   : DP_PLAN_ASYNC;
	req->N = L->N;
	req->n_rows = n;
	req->epsilon = eps;
	req->rate = rate;
	req->T = (size_t)L->s->T;
	req->step = L->s->eta;
	if (L->s->rho > 0 && L->s->T > 0)
		req->step = dp_algo_eta_from_rho(L->N, L->s->T, L->s->lambda, L->s->rho);
	/* The sync steps as dpasync sim takes them: sync1 rho/T^2, sync2 c. */
	if (L->s->mode == LRN_MODE_SYNC1)
		req->step = L->s->rho > 0 && L->s->T > 0
				    ? L->s->rho / ((double)L->s->T * (double)L->s->T) : 0.0;
	if (L->s->mode == LRN_MODE_SYNC2)
		req->step = L->s->c;
	req->clip = L->s->clip;
	req->answers_cap = caps;
	req->margin = L->s->answers_margin;
	req->T_max = (size_t)L->s->T_max;
}

/* dp_plan_make with rho honoured: rho fixes eta only once T is known, so
 * without --T the planner first chooses T, then the plan is made again
 * with that T and eta from rho. */
static int make_plan(const struct lrn *L, dp_plan_request *req, const dp_plan_public *pub,
		     dp_plan *pl)
{
	int rc;

	rc = dp_plan_make(req, pub, pl);
	if (rc < 0 || !(L->s->rho > 0) || L->s->T > 0 || L->s->mode == LRN_MODE_SYNC2)
		return rc;
	req->T = pl->T;
	req->step = L->s->mode == LRN_MODE_SYNC1 ? L->s->rho / ((double)pl->T * (double)pl->T)
			 : dp_algo_eta_from_rho(L->N, pl->T, L->s->lambda, L->s->rho);
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

/* Plan the job into L; the plan's warnings into warn (size bytes). */
static int plan(struct lrn *L, char *warn, size_t size)
{
	dp_plan_public shape, *pub = &L->pub;
	dp_plan_request req;
	dp_plan pl;
	uint64_t *n = calloc(L->N, sizeof(uint64_t)), *caps = calloc(L->N, sizeof(uint64_t));
	double *eps = calloc(L->N, sizeof(double)), *rate = calloc(L->N, sizeof(double));
	bool own_shape = false;
	int rc;

	if (n == NULL || caps == NULL || eps == NULL || rate == NULL) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	if (L->have_pub && L->pub.p != L->p) {
		rc = dp_error_set(DP_EINVAL, "public %s: constants for p = %zu, the owners have p = %zu",
				  L->s->public_path, L->pub.p, L->p);
		goto out;
	}
	if (!L->have_pub) {
		rc = dp_plan_public_shape(L->model, L->p, L->s->lambda, &shape);
		if (rc < 0)
			goto out;
		pub = &shape;
		own_shape = true;
	}
	request(L, n, eps, rate, caps, &req);
	rc = make_plan(L, &req, pub, &pl);
	if (rc < 0)
		goto out;
	L->T = pl.T;
	L->eta = pl.step;
	L->step = pl.step;
	L->clip = pl.clip;
	L->psi_pred = pl.psi;
	L->psi_zero = pl.psi_zero;
	L->measured = pl.measured;
	for (size_t i = 0; i < L->N; i++)
		L->owners[i].planned_cap = pl.answers_cap[i];
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

int lrn_state_start(struct lrn *L)
{
	char warn[2048];
	uint64_t n = 0;
	int rc;

	DP_REQUIRE(L != NULL && L->p > 0 && !L->started);
	for (size_t i = 0; i < L->N; i++) {
		if (UINT64_MAX - n < L->owners[i].n_rows)
			return dp_error_set(DP_ERANGE, "the owners' row counts overflow");
		n += L->owners[i].n_rows;
	}
	L->n_total = n;
	rc = plan(L, warn, sizeof(warn));
	if (rc < 0)
		return rc;
	L->rho = dp_algo_rho_from_eta(L->N, L->T, L->s->lambda, L->eta);
	if (LRN_SYNC(L)) {
		/* Sync has no owner-copy step: eta holds the mode's step (the
		 * checkpoint's "eta"), rho the paper's rho of sync1 (sync2: c),
		 * which the Welcome carries for information only. */
		L->rho = L->s->mode == LRN_MODE_SYNC1 ? L->step * (double)L->T * (double)L->T
						      : L->step;
		L->theta_hat = calloc(L->p, sizeof(double));
		L->round_ans = calloc((L->N + 1) * L->p, sizeof(double));   /* + agg */
		if (L->theta_hat == NULL || L->round_ans == NULL)
			return dp_error_set(DP_ENOMEM, "out of memory");
	}
	if (!(L->eta > 0) || !isfinite(L->eta) || !(L->rho > 0) || !isfinite(L->rho))
		return dp_error_set(DP_EINVAL, "step size eta=%g rho=%g is not a positive number",
				    L->eta, L->rho);
	L->started = true;
	dp_metrics_set(L->st.T_gauge, (double)L->T);
	lrn_state_log_plan(L, "hellos");
	log_warnings(warn);
	DP_INFO("learner", "training starts n=%llu N=%zu p=%zu T=%llu eta=%.17g rho=%.17g",
		(unsigned long long)n, L->N, L->p, (unsigned long long)L->T, L->eta, L->rho);
	return 0;
}

void lrn_state_apply(struct lrn *L, const struct lrn_query *qr, const double *answer)
{
	dp_algo_async_params ap;
	struct lrn_owner *o;
	double weight;

	DP_REQUIRE(L != NULL && qr != NULL && answer != NULL && qr->owner < L->N && L->started);
	ap = (dp_algo_async_params){ .p = L->p, .N = L->N, .eta = L->eta, .lambda = L->s->lambda,
				     .theta_max = L->s->theta_max };
	o = &L->owners[qr->owner];
	weight = (double)o->n_rows / (double)L->n_total;

	/* With several queries out, qr->bar is the midpoint of send time:
	 * theta_L is overwritten from it (docs/learnerd.md, staleness). */
	L->k_done++;
	o->iterations++;
	if (L->s->freq_correction)
		weight = dp_algo_freq_weight(weight, L->N, o->iterations, L->k_done);
	dp_algo_async_update(&ap, qr->bar, answer, weight, o->theta, L->theta_L);
}

uint64_t lrn_state_goal(const struct lrn *L)
{
	DP_REQUIRE(L != NULL);
	return LRN_SYNC(L) ? L->T - 1 : L->T;
}

void lrn_state_round(struct lrn *L)
{
	double *agg, n_ans = 0.0;
	size_t k;

	DP_REQUIRE(L != NULL && LRN_SYNC(L) && L->started && L->round_got > 0);
	agg = L->round_ans + L->N * L->p;
	for (size_t i = 0; i < L->N; i++)
		if (L->owners[i].round_has)
			n_ans += (double)L->owners[i].n_rows;
	memset(agg, 0, L->p * sizeof(double));
	for (size_t i = 0; i < L->N; i++) {
		const double *a = L->round_ans + i * L->p;
		double w;

		if (!L->owners[i].round_has)
			continue;
		/* Every owner answered: n_i / n, as dpasync sim computes it;
		 * a quorum round reweights by the rows that answered. */
		w = L->round_got == L->N ? (double)L->owners[i].n_rows / (double)L->n_total
					 : (double)L->owners[i].n_rows / n_ans;
		for (size_t q = 0; q < L->p; q++)
			agg[q] += w * a[q];
	}
	k = (size_t)L->k_done + 1;
	if (L->s->mode == LRN_MODE_SYNC1)
		dp_algo_sync1_step(L->p, L->step, k, L->s->lambda, agg, L->theta_L);
	else
		dp_algo_sync2_step(L->p, L->step, k, (size_t)L->T, L->s->lambda, L->s->theta_max,
				   agg, L->theta_L, L->theta_hat);
	L->k_done++;
}

const double *lrn_state_output(const struct lrn *L)
{
	DP_REQUIRE(L != NULL);
	return L->s->mode == LRN_MODE_SYNC2 && L->theta_hat != NULL ? L->theta_hat : L->theta_L;
}
