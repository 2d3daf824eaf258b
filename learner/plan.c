/* SPDX-License-Identifier: Apache-2.0 */
/* learnerd: the job's plan (docs/planner.md, docs/learnerd.md §3): made
 * once every owner has said Hello, over the owners with budget left, in
 * the job's mechanism (Laplace's L1 clip, or Gaussian's L2 clip at each
 * owner's delta), refused before anyone is charged when the owners cannot
 * reach its T; --public's constants, and the line that compares the two
 * mechanisms when every owner allows both. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/algo.h"
#include "common/core/csv.h"
#include "common/core/error.h"
#include "common/core/log.h"
#include "common/core/plan.h"
#include "common/core/query.h"
#include "common/net/metrics.h"
#include "common/net/schemasum.h"
#include "learner/job.h"

static bool same_double(double a, double b)
{
	return a == b || fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

int lrn_plan_load_public(struct lrn_job *J)
{
	dp_plan_public pub;
	bool l2;
	int rc;

	DP_REQUIRE(J != NULL && J->s != NULL && !J->have_pub);
	l2 = J->s->mechanism == DP_MECH_GAUSSIAN;
	if (J->s->public_path == NULL || *J->s->public_path == '\0')
		return 0;
	rc = dp_plan_public_read_norm(J->s->public_path, l2, &pub);
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
	if (pub.target == NULL)
		DP_WARN("learner", "public %s names no target or features (written before "
			"they were recorded): not checked against the owners' schema",
			J->s->public_path);
	J->pub = pub;
	J->have_pub = true;
	/* Only for the comparison line: a file of one norm has no other. */
	if (dp_plan_public_read_norm(J->s->public_path, !l2, &J->pub_other) == 0)
		J->have_pub_other = true;
	dp_error_clear();
	return 0;
}

int lrn_plan_check_public(const struct lrn_job *J)
{
	Dpasync__SchemaSummary *sum;
	char **names = NULL, *target = NULL, a[80], b[80];
	int rc = 0;

	DP_REQUIRE(J != NULL);
	if (!J->have_pub || J->pub.target == NULL || J->pub.p != J->p)
		return 0;
	sum = lrn_state_job_summary(J);
	if (sum != NULL)
		lrn_state_summary_names(J, sum, &names, &target);
	if (names != NULL && strcmp(target, J->pub.target) != 0) {
		rc = dp_error_set(DP_EINVAL, "public %s: its forecast is for target '%s', but "
				  "the owners' schema has target '%s'", J->s->public_path,
				  dp_csv_show(J->pub.target, a, sizeof(a)),
				  dp_csv_show(target, b, sizeof(b)));
	}
	for (size_t q = 0; rc == 0 && names != NULL && q < J->p; q++) {
		if (strcmp(names[q], J->pub.features[q]) != 0)
			rc = dp_error_set(DP_EINVAL, "public %s: its forecast's feature %zu is "
					  "'%s', but the owners' is '%s'", J->s->public_path,
					  q + 1, dp_csv_show(J->pub.features[q], a, sizeof(a)),
					  dp_csv_show(names[q], b, sizeof(b)));
	}
	free(names);
	if (sum != NULL)
		dpasync__schema_summary__free_unpacked(sum, NULL);
	return rc;
}

void lrn_plan_log(const struct lrn_job *J, const char *from)
{
	char caps[600];
	size_t used = 0;

	DP_REQUIRE(J != NULL && from != NULL && J->started);
	caps[0] = '\0';
	for (size_t i = 0; i < J->N; i++) {
		const struct lrn_owner *o = &J->owners[i];
		int n = o->left_out ? snprintf(caps + used, sizeof(caps) - used, "%s%s:out",
					       i ? "," : "", o->id)
				    : snprintf(caps + used, sizeof(caps) - used, "%s%s:%llu",
					       i ? "," : "", o->id,
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

/* The owners in the plan, and the arrays of the planner's request over
 * them (n each).  ix[k] is the owner of entry k. */
struct planned {
	size_t n;
	size_t *ix;
	uint64_t *rows, *caps;
	double *eps, *rate, *delta;
};

static void planned_free(struct planned *pd)
{
	free(pd->ix);
	free(pd->rows);
	free(pd->caps);
	free(pd->eps);
	free(pd->rate);
	free(pd->delta);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The rates the plan uses: each owner's (0: not said, 1), at most
 * LRN_RATE_RATIO times the (lower) median of them and LRN_RATE_MAX, so
 * that one owner's claim cannot take the others' shares (docs/protocol.md
 * §5 "Limits on a Hello's claims").  A cut rate is logged. */
static int plan_rates(const struct lrn_job *J, struct planned *pd)
{
	double *sorted = calloc(pd->n, sizeof(double)), cap;

	if (sorted == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t k = 0; k < pd->n; k++) {
		double r = J->owners[pd->ix[k]].rate;

		pd->rate[k] = sorted[k] = r > 0 ? r : 1.0;
	}
	qsort(sorted, pd->n, sizeof(double), cmp_double);
	cap = fmin(LRN_RATE_RATIO * sorted[(pd->n - 1) / 2], LRN_RATE_MAX);
	for (size_t k = 0; k < pd->n; k++) {
		if (!(pd->rate[k] > cap))
			continue;
		DP_WARN("learner", "owner id=%s rate=%g claimed: planned as %g (at most %g times the "
			"median rate %g, and %g; docs/protocol.md §5)", J->owners[pd->ix[k]].id,
			pd->rate[k], cap, LRN_RATE_RATIO, sorted[(pd->n - 1) / 2], LRN_RATE_MAX);
		pd->rate[k] = cap;
	}
	free(sorted);
	return 0;
}

/* The owners with budget left (not exhausted) and their request arrays. */
static int planned_make(const struct lrn_job *J, struct planned *pd)
{
	memset(pd, 0, sizeof(*pd));
	pd->ix = calloc(J->N, sizeof(size_t));
	pd->rows = calloc(J->N, sizeof(uint64_t));
	pd->caps = calloc(J->N, sizeof(uint64_t));
	pd->eps = calloc(J->N, sizeof(double));
	pd->rate = calloc(J->N, sizeof(double));
	pd->delta = calloc(J->N, sizeof(double));
	if (pd->ix == NULL || pd->rows == NULL || pd->caps == NULL || pd->eps == NULL ||
	    pd->rate == NULL || pd->delta == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t i = 0; i < J->N; i++) {
		const struct lrn_owner *o = &J->owners[i];

		if (o->exhausted)
			continue;
		pd->ix[pd->n] = i;
		pd->rows[pd->n] = o->n_rows;
		/* What it has left is what its ledger will split over K_i. */
		pd->eps[pd->n] = o->eps_left;
		pd->delta[pd->n] = o->delta;
		/* An owner's own cap (its --answers-cap, or its ledger's after a
		 * restart) is what it will enforce: plan with it. */
		pd->caps[pd->n] = o->answers_cap;
		pd->n++;
	}
	if (pd->n == 0)
		return dp_error_set(DP_EBUDGET, "no owner has budget left");
	return plan_rates(J, pd);
}

/* The planner's request over the planned owners and the settings. */
static void request(const struct lrn_job *J, const struct planned *pd, dp_plan_request *req)
{
	memset(req, 0, sizeof(*req));
	req->mode = J->s->mode == LRN_MODE_SYNC1   ? DP_PLAN_SYNC1
		    : J->s->mode == LRN_MODE_SYNC2 ? DP_PLAN_SYNC2
						   : DP_PLAN_ASYNC;
	req->N = pd->n;
	req->n_rows = pd->rows;
	req->epsilon = pd->eps;
	req->rate = pd->rate;
	req->T = (size_t)J->s->T;
	req->step = J->s->eta;
	if (J->s->rho > 0 && J->s->T > 0)
		req->step = dp_algo_eta_from_rho(pd->n, J->s->T, J->s->lambda, J->s->rho);
	/* The sync steps as dpasync sim takes them: sync1 rho/T^2, sync2 c. */
	if (J->s->mode == LRN_MODE_SYNC1)
		req->step = J->s->rho > 0 && J->s->T > 0
				    ? J->s->rho / ((double)J->s->T * (double)J->s->T) : 0.0;
	if (J->s->mode == LRN_MODE_SYNC2)
		req->step = J->s->c;
	req->clip = J->s->clip;
	req->answers_cap = pd->caps;
	req->margin = J->s->answers_margin;
	if (LRN_SYNC(J))
		req->slack = (size_t)J->s->restart_slack;
	req->T_max = (size_t)J->s->T_max;
	/* Gaussian: each owner binds its K_i answers at its own delta
	 * (docs/learnerd.md "Mechanisms"), as the planner's noise term takes them. */
	req->mech = (dp_mech)J->s->mechanism;
	if (req->mech == DP_MECH_GAUSSIAN)
		req->deltas = pd->delta;
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
			 : dp_algo_eta_from_rho(req->N, pl->T, J->s->lambda, J->s->rho);
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

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Can the planned owners give the job its T iterations with the answers
 * and the budget they have left (docs/planner.md §1 "Budget left")?  A
 * job that cannot is refused before anyone is charged.  0 or DP_EBUDGET
 * (detail). */
static int reachable(const struct lrn_job *J, const struct planned *pd, const uint64_t *K)
{
	char list[400];
	size_t used = 0;
	uint64_t total = 0, slack;
	double q;

	list[0] = '\0';
	for (size_t k = 0; k < pd->n; k++) {
		const struct lrn_owner *o = &J->owners[pd->ix[k]];
		uint64_t left = K[k] > o->answers_given ? K[k] - o->answers_given : 0;
		int n, r = 0;

		/* A new ledger splits what is left over K_i in the job's unit
		 * (docs/ledger.md §2; Gaussian: rho at the owner's delta with the
		 * samplers' slack, docs/zcdp.md §7), as the owner binds it; the
		 * owner's own ledger is already split. */
		if (!o->same_job && !isinf(o->eps_left))
			r = dp_query_share((dp_mech)J->s->mechanism, o->eps_left, o->delta, K[k], J->p,
					   &q, &slack);
		if (r < 0) {
			char why[256];

			snprintf(why, sizeof(why), "%s", dp_error_detail(r));
			return dp_error_set(DP_EBUDGET, "no plan reaches T=%llu: owner %s has %g left, "
					    "too little for its K_i = %llu answers (%s)",
					    (unsigned long long)J->T, o->id, o->eps_left,
					    (unsigned long long)K[k], why);
		}
		if (LRN_SYNC(J) && left < J->T - 1)
			return dp_error_set(DP_EBUDGET, "no plan reaches T=%llu: owner %s can give %llu "
					    "more answers and a sync job asks every owner in each of "
					    "the T-1 = %llu rounds", (unsigned long long)J->T, o->id,
					    (unsigned long long)left, (unsigned long long)J->T - 1);
		total = sat_add(total, left);
		n = snprintf(list + used, sizeof(list) - used, "%s%s %llu", k ? ", " : "", o->id,
			     (unsigned long long)left);
		used += n > 0 && (size_t)n < sizeof(list) - used ? (size_t)n : 0;
	}
	if (!LRN_SYNC(J) && total < J->T)
		return dp_error_set(DP_EBUDGET, "no plan reaches T=%llu with what the owners have "
				    "left: they can give %llu answers (%s); lower T or raise their "
				    "budgets", (unsigned long long)J->T, (unsigned long long)total,
				    list);
	return 0;
}

/* The other mechanism's plan beside the job's `pl`, in one line into cmp
 * (cmp[0] = '\0' when there is nothing to compare): only when every
 * planned owner allows both (delta > 0 and Hello.gaussian) and constants of
 * the other norm exist (--public's other, or the shape's).  The other plan
 * chooses its own clip (a clip given is the job's norm's).  Never fails the
 * job: an error only leaves cmp empty. */
static void compare(struct lrn_job *J, const struct planned *pd, const dp_plan *pl, char *cmp,
		    size_t size)
{
	bool gauss = J->s->mechanism == DP_MECH_GAUSSIAN, g_lower;
	dp_plan_public shape, *other = &J->pub_other;
	dp_plan_request req;
	dp_plan pl2;
	double delta = 1.0;

	cmp[0] = '\0';
	for (size_t k = 0; k < pd->n; k++) {
		if (!J->owners[pd->ix[k]].gaussian)
			return;
		delta = fmin(delta, pd->delta[k]);
	}
	if (J->have_pub && !J->have_pub_other)
		return;
	if (!J->have_pub) {
		if (dp_plan_public_shape_norm(J->model, J->p, J->s->lambda, !gauss, &shape) < 0) {
			dp_error_clear();
			return;
		}
		other = &shape;
	}
	request(J, pd, &req);
	req.mech = gauss ? DP_MECH_LAPLACE : DP_MECH_GAUSSIAN;
	req.deltas = gauss ? NULL : pd->delta;
	req.clip = 0.0;
	if (other->p == J->p && make_plan(J, &req, other, &pl2) == 0) {
		int n = 0;

		if (gauss)
			dp_plan_mech_line(&pl2, pl, delta, cmp, size, &g_lower);
		else
			dp_plan_mech_line(pl, &pl2, delta, cmp, size, &g_lower);
		if (g_lower != gauss)
			n = (int)strlen(cmp);
		if (n > 0 && (size_t)n < size)
			snprintf(cmp + n, size - (size_t)n, "; this job uses %s answers: learnerd "
				 "--mechanism %s is predicted better", gauss ? "gaussian" : "laplace",
				 gauss ? "laplace" : "gaussian");
		dp_plan_free(&pl2);
	}
	dp_error_clear();
	if (!J->have_pub)
		dp_plan_public_free(&shape);
}

/* Plan the job into J; the plan's warnings into warn (size bytes), the
 * comparison of the mechanisms into cmp (csize bytes).  Nothing of J
 * changes on an error. */
static int plan(struct lrn_job *J, const struct planned *pd, char *warn, size_t size, char *cmp,
		size_t csize)
{
	dp_plan_public shape, *pub = &J->pub;
	dp_plan_request req;
	dp_plan pl;
	bool own_shape = false;
	uint64_t T;
	int rc;

	if (J->have_pub && J->pub.p != J->p)
		return dp_error_set(DP_EINVAL, "public %s: constants for p = %zu, the owners have "
				    "p = %zu", J->s->public_path, J->pub.p, J->p);
	if (!J->have_pub) {
		rc = dp_plan_public_shape_norm(J->model, J->p, J->s->lambda,
					       J->s->mechanism == DP_MECH_GAUSSIAN, &shape);
		if (rc < 0)
			return rc;
		pub = &shape;
		own_shape = true;
	}
	request(J, pd, &req);
	rc = make_plan(J, &req, pub, &pl);
	if (rc < 0)
		goto out;
	T = J->T;
	J->T = pl.T;
	rc = reachable(J, pd, pl.answers_cap);
	if (rc < 0) {
		J->T = T;
		dp_plan_free(&pl);
		goto out;
	}
	J->eta = pl.step;
	J->step = pl.step;
	J->clip = pl.clip;
	J->psi_pred = pl.psi;
	J->psi_zero = pl.psi_zero;
	J->measured = pl.measured;
	for (size_t i = 0; i < J->N; i++)
		J->owners[i].planned_cap = 0;
	for (size_t k = 0; k < pd->n; k++)
		J->owners[pd->ix[k]].planned_cap = pl.answers_cap[k];
	dp_plan_warnings(&pl, pub, warn, size);
	compare(J, pd, &pl, cmp, csize);
	dp_plan_free(&pl);
out:
	if (own_shape)
		dp_plan_public_free(&shape);
	return rc;
}

int lrn_plan_start(struct lrn_job *J)
{
	struct planned pd;
	char warn[2048], cmp[400];
	uint64_t n = 0;
	int rc;

	DP_REQUIRE(J != NULL && J->p > 0 && !J->started);
	rc = planned_make(J, &pd);
	if (rc < 0)
		goto out;
	for (size_t k = 0; k < pd.n; k++) {
		if (UINT64_MAX - n < pd.rows[k]) {
			rc = dp_error_set(DP_ERANGE, "the owners' row counts overflow");
			goto out;
		}
		n += pd.rows[k];
	}
	rc = plan(J, &pd, warn, sizeof(warn), cmp, sizeof(cmp));
	if (rc < 0)
		goto out;
	/* Owners without budget are out of this job: n, N and the weights
	 * are the planned owners' (docs/planner.md §1 "Budget left"). */
	J->n_total = n;
	J->n_planned = pd.n;
	for (size_t i = 0; i < J->N; i++)
		J->owners[i].left_out = J->owners[i].exhausted;   /* "out" in the plan line */
	J->rho = dp_algo_rho_from_eta(J->n_planned, J->T, J->s->lambda, J->eta);
	if (LRN_SYNC(J)) {
		/* Sync has no owner-copy step: eta holds the mode's step (the
		 * checkpoint's "eta"), rho the paper's rho of sync1 (sync2: c),
		 * which the Welcome carries for information only. */
		J->rho = J->s->mode == LRN_MODE_SYNC1 ? J->step * (double)J->T * (double)J->T
						      : J->step;
		J->theta_hat = calloc(J->p, sizeof(double));
		J->round_ans = calloc((J->N + 1) * J->p, sizeof(double));   /* + agg */
		if (J->theta_hat == NULL || J->round_ans == NULL) {
			rc = dp_error_set(DP_ENOMEM, "out of memory");
			goto out;
		}
	}
	if (!(J->eta > 0) || !isfinite(J->eta) || !(J->rho > 0) || !isfinite(J->rho)) {
		rc = dp_error_set(DP_EINVAL, "step size eta=%g rho=%g is not a positive number",
				  J->eta, J->rho);
		goto out;
	}
	J->started = true;
	dp_metrics_set(J->st.T_gauge, (double)J->T);
	lrn_plan_log(J, "hellos");
	log_warnings(warn);
	if (cmp[0] != '\0')
		DP_INFO("learner", "plan: %s", cmp);
	DP_INFO("learner", "training starts n=%llu N=%zu p=%zu T=%llu eta=%.17g rho=%.17g",
		(unsigned long long)n, J->n_planned, J->p, (unsigned long long)J->T, J->eta, J->rho);
out:
	planned_free(&pd);
	return rc;
}

