/* learnerd: the state of Algorithm 1 (docs/design.md §4): theta_L, one theta_i
 * per owner, k, and the weights n_i/n fixed when training starts.  The
 * update itself is dp_algo_async_update (common/core/algo.h), as in dpasync sim. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/algo.h"
#include "common/core/defaults.h"
#include "common/core/error.h"
#include "common/core/log.h"
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

double lrn_state_clip_for(const struct lrn *L, size_t p)
{
	DP_REQUIRE(L != NULL && L->s != NULL);
	return L->s->clip > 0 ? L->s->clip : dp_defaults_clip(p);
}

double lrn_state_clip(const struct lrn *L)
{
	return lrn_state_clip_for(L, L->p);
}

double lrn_state_eta(const struct lrn *L, double max_weight)
{
	DP_REQUIRE(L != NULL && L->s != NULL);
	if (L->s->eta > 0)
		return L->s->eta;
	if (L->s->rho > 0)
		return dp_algo_eta_from_rho(L->N, L->T, L->s->lambda, L->s->rho);
	return dp_defaults_async_eta(L->model, L->p, L->s->lambda, max_weight, L->N, L->T);
}

int lrn_state_start(struct lrn *L)
{
	uint64_t n = 0;
	double maxw = 0;

	DP_REQUIRE(L != NULL && L->p > 0 && !L->started);
	for (size_t i = 0; i < L->N; i++) {
		if (UINT64_MAX - n < L->owners[i].n_rows)
			return dp_error_set(DP_ERANGE, "the owners' row counts overflow");
		n += L->owners[i].n_rows;
	}
	for (size_t i = 0; i < L->N; i++) {
		double w = (double)L->owners[i].n_rows / (double)n;

		if (w > maxw)
			maxw = w;
	}
	L->n_total = n;
	L->eta = lrn_state_eta(L, maxw);
	L->rho = dp_algo_rho_from_eta(L->N, L->T, L->s->lambda, L->eta);
	if (!(L->eta > 0) || !isfinite(L->eta) || !(L->rho > 0) || !isfinite(L->rho))
		return dp_error_set(DP_EINVAL, "step size eta=%g rho=%g is not a positive number",
				    L->eta, L->rho);
	L->started = true;
	DP_INFO("learner", "training starts n=%llu N=%zu p=%zu eta=%.17g rho=%.17g max_weight=%g",
		(unsigned long long)n, L->N, L->p, L->eta, L->rho, maxw);
	return 0;
}

void lrn_state_welcome_params(const struct lrn *L, uint64_t *n_total, double *rho)
{
	uint64_t n = 0;
	double maxw = 0;

	DP_REQUIRE(L != NULL && n_total != NULL && rho != NULL);
	if (L->started) {
		*n_total = L->n_total;
		*rho = L->rho;
		return;
	}
	/* Before the start: the owners heard from so far.  Never 0 (the
	 * Welcome validator refuses it): the caller has said Hello. */
	for (size_t i = 0; i < L->N; i++)
		if (L->owners[i].ever_hello)
			n += L->owners[i].n_rows;
	if (n == 0)
		n = 1;
	for (size_t i = 0; i < L->N; i++)
		if (L->owners[i].ever_hello && (double)L->owners[i].n_rows / (double)n > maxw)
			maxw = (double)L->owners[i].n_rows / (double)n;
	if (maxw <= 0)
		maxw = 1;
	*n_total = n;
	*rho = dp_algo_rho_from_eta(L->N, L->T, L->s->lambda, lrn_state_eta(L, maxw));
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
