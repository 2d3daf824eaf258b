/* SPDX-License-Identifier: Apache-2.0 */
/* learnerd: the state of Algorithm 1 (docs/design.md §4): the owners'
 * claims from their Hellos, theta_L, one theta_i per owner, k, and the
 * weights n_i/n fixed when training starts (the plan itself is plan.c).
 * The update is dp_algo_async_update (common/core/algo.h), as in dpasync
 * sim. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/algo.h"
#include "common/core/error.h"
#include "common/core/log.h"
#include "common/core/plan.h"
#include "common/core/zcdp.h"
#include "common/net/schemasum.h"
#include "common/core/idmap.h"
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
	/* The names were checked unique (lrn_owners_load). */
	if (dp_idmap_new(count, &J->owner_map) != 0)
		return dp_error_set(DP_ENOMEM, "out of memory");
	for (size_t i = 0; i < count; i++)
		dp_idmap_put(J->owner_map, J->owners[i].id, i, NULL);
	return 0;
}

struct lrn_owner *lrn_state_find(const struct lrn_job *J, const char *id)
{
	long i;

	DP_REQUIRE(J != NULL && id != NULL);
	if (J->owner_map == NULL)
		return NULL;
	i = dp_idmap_get(J->owner_map, id);
	return i < 0 ? NULL : &J->owners[i];
}

void lrn_state_free(struct lrn_job *J)
{
	DP_REQUIRE(J != NULL);
	for (size_t i = 0; i < J->N; i++) {
		free(J->owners[i].theta);
		free(J->owners[i].schema_sum);
	}
	free(J->owners);
	dp_idmap_free(J->owner_map);
	J->owner_map = NULL;
	free(J->schema_sum);
	free(J->theta_L);
	free(J->theta_hat);
	free(J->round_ans);
	J->theta_hat = NULL;
	J->round_ans = NULL;
	if (J->have_pub)
		dp_plan_public_free(&J->pub);
	if (J->have_pub_other)
		dp_plan_public_free(&J->pub_other);
	J->have_pub = J->have_pub_other = false;
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
	/* Each n_rows <= 2^40: the sum over fewer than 2^24 owners stays below
	 * 2^64, so the scan (O(N) per Hello, O(N^2) over a storm) is needed
	 * only from 2^24 owners on. */
	for (size_t i = 0; J->N >= ((size_t)1 << 24) && i < J->N; i++)
		if (&J->owners[i] != o && J->owners[i].ever_hello)
			others += J->owners[i].n_rows;
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
	o->gaussian = c->gaussian && c->delta > 0;
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

/* n += sign when the owner counts in it. */
static void count_if(size_t *n, int sign, bool counts)
{
	if (!counts)
		return;
	DP_REQUIRE(sign > 0 || *n > 0);
	*n = sign > 0 ? *n + 1 : *n - 1;
}

void lrn_state_count(struct lrn_job *J, const struct lrn_owner *o, int sign)
{
	DP_REQUIRE(J != NULL && o != NULL && (sign == 1 || sign == -1));
	count_if(&J->n_hello, sign, o->hello);
	count_if(&J->n_ever_hello, sign, o->ever_hello);
	count_if(&J->n_to_welcome, sign, o->connected && o->hello && !o->welcomed);
	count_if(&J->n_exhausted, sign, o->exhausted);
	count_if(&J->n_exhausted_away, sign, o->exhausted && !o->hello);
}

bool lrn_state_no_budget(const struct lrn_owner *o)
{
	DP_REQUIRE(o != NULL);
	return !(o->eps_left >= LRN_EPSILON_MIN);
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
