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
#include "common/core/csv.h"
#include "common/core/error.h"
#include "common/core/nano.h"
#include "common/core/log.h"
#include "common/core/plan.h"
#include "common/core/zcdp.h"
#include "common/net/schemasum.h"
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
	J->n_planned = count;
	for (size_t i = 0; i < count; i++) {
		snprintf(J->owners[i].id, sizeof(J->owners[i].id), "%s", names[i]);
		J->owners[i].idx = i;
		J->owners[i].eps_left = J->owners[i].lifetime_left = INFINITY;
		J->owners[i].theta_bound = INFINITY;
	}
	J->next_qid = 1;
	J->qid_reserved = 1;
	return 0;
}

void lrn_state_free(struct lrn_job *J)
{
	DP_REQUIRE(J != NULL);
	for (size_t i = 0; i < J->N; i++) {
		free(J->owners[i].theta);
		free(J->owners[i].schema_sum);
	}
	free(J->owners);
	free(J->schema_sum);
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

static double margin(const struct lrn_job *J)
{
	return J->s->answers_margin > 0 ? J->s->answers_margin : DP_PLAN_MARGIN;
}

uint64_t lrn_state_t_limit(const struct lrn_job *J)
{
	uint64_t tmax;

	DP_REQUIRE(J != NULL && J->s != NULL);
	tmax = J->s->T_max ? J->s->T_max : DP_PLAN_T_MAX;
	return J->s->T > tmax ? J->s->T : tmax;
}

/* Why owner o, claiming c, cannot take part in a Gaussian job, and the fix
 * (docs/protocol.md §5 "Mechanisms"). */
static void refuse_mechanism(const struct lrn_owner *o, const struct lrn_claims *c, char *why,
			     size_t size)
{
	const char *head = "this job uses Gaussian answers (learnerd --mechanism gaussian)";

	if (!(c->delta > 0))
		snprintf(why, size, "%s but owner %s allows pure epsilon-DP only (its delta is 0, "
			 "or its ownerd predates delta): set ownerd's --delta (e.g. 1e-6, below "
			 "1/n_i), or run the job with --mechanism laplace", head, o->id);
	else if (!(c->lifetime_delta > 0))
		snprintf(why, size, "%s but owner %s has lifetime delta 0 (pure epsilon-DP over "
			 "its dataset's lifetime, as its ledger directory records)", head, o->id);
	else
		snprintf(why, size, "%s but owner %s (delta %g) cannot answer with Gaussian noise: "
			 "its ownerd build does not support them; upgrade it, or run the job with "
			 "--mechanism laplace", head, o->id, c->delta);
}

int lrn_state_check_hello(const struct lrn_job *J, const struct lrn_owner *o,
			  const struct lrn_claims *c, int *goodbye, char *why, size_t size)
{
	uint64_t others = 0;

	DP_REQUIRE(J != NULL && o != NULL && c != NULL && goodbye != NULL && why != NULL &&
		   size > 0);
	*goodbye = 0;
	if (c->n_rows > LRN_MAX_ROWS) {
		snprintf(why, size, "Hello n_rows %llu exceeds the maximum %llu rows per owner",
			 (unsigned long long)c->n_rows, (unsigned long long)LRN_MAX_ROWS);
		return DP_ERANGE;
	}
	for (size_t i = 0; i < J->N; i++)
		if (&J->owners[i] != o && J->owners[i].ever_hello)
			others += J->owners[i].n_rows;   /* each <= 2^40: no overflow below 2^24 owners */
	if (others > UINT64_MAX - c->n_rows) {
		snprintf(why, size, "Hello n_rows %llu: the owners' row counts would overflow",
			 (unsigned long long)c->n_rows);
		return DP_ERANGE;
	}
	*goodbye = DPASYNC__GOODBYE_CODE__GOODBYE_BAD_DATA;
	if (J->p != 0 && c->n_features != J->p) {
		snprintf(why, size, "Hello n_features %u differs from the job's p %zu: give owner "
			 "%s data with the job's feature columns (and bias setting)", c->n_features,
			 J->p, o->id);
		return DP_EINVAL;
	}
	if (J->p == 0 && 8 * (uint64_t)c->n_features + 64 > J->s->max_frame) {
		snprintf(why, size, "Hello n_features %u does not fit in max-frame %zu bytes",
			 c->n_features, J->s->max_frame);
		return DP_EINVAL;
	}
	/* The bounds that keep one owner's claims from steering the others'
	 * plan (docs/protocol.md §5 "Limits on a Hello's claims"). */
	*goodbye = DPASYNC__GOODBYE_CODE__GOODBYE_BAD_CLAIM;
	if (c->epsilon < LRN_EPSILON_MIN) {
		snprintf(why, size, "Hello epsilon %g is below the floor %g: each answer would be "
			 "noise; raise ownerd's epsilon", c->epsilon, LRN_EPSILON_MIN);
		return DP_EREFUSED;
	}
	/* A cap steers the plan (T = 4 for everyone with 10^6): bounded while
	 * the job is planned; once planned it changes nothing but the owner's
	 * own noise. */
	if (!J->started && c->own_cap > lrn_state_t_limit(J)) {
		snprintf(why, size, "Hello answers_cap %llu exceeds the largest T of this job, %llu "
			 "(t-max): every answer would carry the noise of %llu; lower ownerd's "
			 "answers-cap or leave it unset", (unsigned long long)c->own_cap,
			 (unsigned long long)lrn_state_t_limit(J), (unsigned long long)c->own_cap);
		return DP_EREFUSED;
	}
	if (!J->started && c->answers_cap > c->own_cap &&
	    (double)c->answers_cap >
		    ceil((double)lrn_state_t_limit(J) * (1.0 + margin(J))) +
			    (LRN_SYNC(J) ? (double)J->s->restart_slack : 0.0)) {
		snprintf(why, size, "Hello job_answers_cap %llu exceeds any K_i this job can plan "
			 "(t-max %llu with its margin)", (unsigned long long)c->answers_cap,
			 (unsigned long long)lrn_state_t_limit(J));
		return DP_EREFUSED;
	}
	if (c->has_limits && c->theta_max < J->s->theta_max) {
		snprintf(why, size, "Hello theta_max %g is below the job's theta-max %g: queries "
			 "inside the job's box would be refused; raise ownerd's theta-max to at least "
			 "%g", c->theta_max, J->s->theta_max, J->s->theta_max);
		return DP_EREFUSED;
	}
	if (J->s->mechanism == DP_MECH_GAUSSIAN && !c->gaussian) {
		refuse_mechanism(o, c, why, size);
		return DP_EREFUSED;
	}
	*goodbye = 0;
	return 0;
}

void lrn_state_take_hello(struct lrn_job *J, struct lrn_owner *o, const struct lrn_claims *c)
{
	DP_REQUIRE(J != NULL && o != NULL && c != NULL);
	o->n_rows = c->n_rows;
	o->n_features = c->n_features;
	o->epsilon = c->epsilon;
	o->rate = c->rate;
	o->answers_cap = c->answers_cap;
	o->answers_given = c->answers_given;
	o->same_job = c->same_job;
	o->lifetime_left = c->has_limits ? c->lifetime_left : INFINITY;
	o->theta_bound = c->has_limits ? c->theta_max : INFINITY;
	/* What this job can spend: its own ledger's left when the counters are
	 * this job's, else a new ledger's, which the owner caps at what its
	 * lifetime leaves (docs/ledger.md §8).  Without limits, its epsilon. */
	if (!c->has_limits)
		o->eps_left = c->epsilon;
	else if (c->same_job)
		o->eps_left = c->epsilon_left;
	else
		o->eps_left = fmin(c->epsilon, c->lifetime_left);
	o->delta = c->delta;
	o->rho_left = 0;
	if (J->s->mechanism != DP_MECH_GAUSSIAN)
		return;
	/* A Gaussian job is planned as a Laplace one (T, step, K_i from
	 * eps_left: docs/learnerd.md "Mechanisms"); only its feasibility is
	 * judged in rho, the unit the owner charges it in. */
	if (!c->has_limits)
		o->rho_left = INFINITY;   /* not said (checked: gaussian owners send limits) */
	else if (c->same_job)
		o->rho_left = c->rho_left;
	else if (isinf(o->eps_left))
		o->rho_left = INFINITY;
	else if (!(o->eps_left > 0) || !(c->delta > 0) ||
		 dp_zcdp_rho_for(o->eps_left, 0, c->delta, &o->rho_left) < 0)
		o->rho_left = 0;
	if (!(o->rho_left > 0))
		o->eps_left = 0;
}

bool lrn_state_no_budget(const struct lrn_owner *o)
{
	DP_REQUIRE(o != NULL);
	return !(o->eps_left >= LRN_EPSILON_MIN);
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
	if (pub.target == NULL)
		DP_WARN("learner", "public %s names no target or features (written before "
			"they were recorded): not checked against the owners' schema",
			J->s->public_path);
	J->pub = pub;
	J->have_pub = true;
	return 0;
}

int lrn_state_check_public(const struct lrn_job *J)
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
	double *eps, *rate;
};

static void planned_free(struct planned *pd)
{
	free(pd->ix);
	free(pd->rows);
	free(pd->caps);
	free(pd->eps);
	free(pd->rate);
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
	if (pd->ix == NULL || pd->rows == NULL || pd->caps == NULL || pd->eps == NULL ||
	    pd->rate == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t i = 0; i < J->N; i++) {
		const struct lrn_owner *o = &J->owners[i];

		if (o->exhausted)
			continue;
		pd->ix[pd->n] = i;
		pd->rows[pd->n] = o->n_rows;
		/* What it has left is what its ledger will split over K_i. */
		pd->eps[pd->n] = o->eps_left;
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
	uint64_t total = 0;
	double q;

	list[0] = '\0';
	for (size_t k = 0; k < pd->n; k++) {
		const struct lrn_owner *o = &J->owners[pd->ix[k]];
		uint64_t left = K[k] > o->answers_given ? K[k] - o->answers_given : 0;
		int n;

		/* A new ledger splits what is left over K_i in nano-epsilon
		 * (docs/ledger.md §2); the owner's own ledger is already split. */
		if (!o->same_job && !isinf(o->eps_left) && dp_nano_share(o->eps_left, K[k], &q) < 0)
			return dp_error_set(DP_EBUDGET, "no plan reaches T=%llu: owner %s has %g left, "
					    "too little for its K_i = %llu answers", (unsigned long long)
					    J->T, o->id, o->eps_left, (unsigned long long)K[k]);
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

/* Plan the job into J; the plan's warnings into warn (size bytes).
 * Nothing of J changes on an error. */
static int plan(struct lrn_job *J, const struct planned *pd, char *warn, size_t size)
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
		rc = dp_plan_public_shape(J->model, J->p, J->s->lambda, &shape);
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
	dp_plan_free(&pl);
out:
	if (own_shape)
		dp_plan_public_free(&shape);
	return rc;
}

int lrn_state_start(struct lrn_job *J)
{
	struct planned pd;
	char warn[2048];
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
	rc = plan(J, &pd, warn, sizeof(warn));
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
	lrn_state_log_plan(J, "hellos");
	log_warnings(warn);
	DP_INFO("learner", "training starts n=%llu N=%zu p=%zu T=%llu eta=%.17g rho=%.17g",
		(unsigned long long)n, J->n_planned, J->p, (unsigned long long)J->T, J->eta, J->rho);
out:
	planned_free(&pd);
	return rc;
}

void lrn_state_apply(struct lrn_job *J, const struct lrn_query *qr, const double *answer)
{
	dp_algo_async_params ap;
	struct lrn_owner *o;
	double weight;

	DP_REQUIRE(J != NULL && qr != NULL && answer != NULL && qr->owner < J->N && J->started);
	ap = (dp_algo_async_params){ .p = J->p, .N = J->n_planned, .eta = J->eta,
				     .lambda = J->s->lambda,
				     .theta_max = J->s->theta_max };
	o = &J->owners[qr->owner];
	weight = (double)o->n_rows / (double)J->n_total;

	/* With several queries out, qr->bar is the midpoint of send time:
	 * theta_L is overwritten from it (docs/learnerd.md, staleness). */
	J->k_done++;
	o->iterations++;
	if (J->s->freq_correction)
		weight = dp_algo_freq_weight(weight, J->n_planned, o->iterations, J->k_done);
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
		w = J->round_got == J->n_planned ? (double)J->owners[i].n_rows / (double)J->n_total
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

/* ---- the schema summary (docs/protocol.md §5 "Schema summary") -------------- */

int lrn_state_keep_summary(struct lrn_owner *o, const Dpasync__SchemaSummary *s)
{
	size_t len;

	DP_REQUIRE(o != NULL);
	free(o->schema_sum);
	o->schema_sum = NULL;
	o->schema_sum_len = 0;
	if (s == NULL)
		return 0;
	len = dpasync__schema_summary__get_packed_size(s);
	o->schema_sum = malloc(len ? len : 1);
	if (o->schema_sum == NULL)
		return dp_error_set(DP_ENOMEM, "schema summary of %s: out of memory", o->id);
	o->schema_sum_len = dpasync__schema_summary__pack(s, o->schema_sum);
	return 0;
}

void lrn_state_adopt_summary(struct lrn_job *J, struct lrn_owner *o, bool all)
{
	DP_REQUIRE(J != NULL);
	if (o != NULL && J->schema_sum == NULL && o->schema_sum != NULL &&
	    strcmp(o->schema, J->schema_fp) == 0) {
		J->schema_sum = o->schema_sum;
		J->schema_sum_len = o->schema_sum_len;
		o->schema_sum = NULL;
		o->schema_sum_len = 0;
	}
	/* Each owner's own is needed only to name a difference before the
	 * job's is known: a job of many owners does not keep N of them. */
	for (size_t i = 0; all && i < J->N; i++)
		(void)lrn_state_keep_summary(&J->owners[i], NULL);
	if (o != NULL)
		(void)lrn_state_keep_summary(o, NULL);
}

void lrn_state_summary_why(const struct lrn_owner *o, const uint8_t *ref, size_t len, char *why,
			   size_t size)
{
	char diff[256];
	size_t n;

	DP_REQUIRE(o != NULL && why != NULL && size > 0);
	if (ref == NULL || o->schema_sum == NULL ||
	    !dp_schemasum_diff_packed(o->schema_sum, o->schema_sum_len, ref, len, diff,
				      sizeof(diff)))
		return;
	n = strnlen(why, size);
	if (n + 1 < size)
		snprintf(why + n, size - n, "; it differs in %s", diff);
}

Dpasync__SchemaSummary *lrn_state_job_summary(const struct lrn_job *J)
{
	DP_REQUIRE(J != NULL);
	if (J->schema_sum == NULL)
		return NULL;
	return dpasync__schema_summary__unpack(NULL, J->schema_sum_len, J->schema_sum);
}

/* A name as the owner wrote it: not cut at DP_SCHEMASUM_MAX_NAME, no byte
 * replaced by '?'. */
static bool name_whole(const char *s)
{
	return s != NULL && s[0] != '\0' && strlen(s) < DP_SCHEMASUM_MAX_NAME &&
	       strchr(s, '?') == NULL;
}

void lrn_state_summary_names(const struct lrn_job *J, const Dpasync__SchemaSummary *sum,
			     char ***names, char **target)
{
	char **v;

	DP_REQUIRE(J != NULL && sum != NULL && names != NULL && target != NULL);
	*names = NULL;
	*target = NULL;
	if (sum->n_features != J->p || sum->bias != J->s->bias || !name_whole(sum->target))
		return;
	for (size_t j = 0; j < sum->n_features; j++)
		if (!name_whole(sum->features[j]->name))
			return;
	v = calloc(J->p ? J->p : 1, sizeof(*v));
	if (v == NULL)
		return;
	for (size_t j = 0; j < J->p; j++)
		v[j] = sum->features[j]->name;
	*names = v;
	*target = sum->target;
}
