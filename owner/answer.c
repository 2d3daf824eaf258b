/* ownerd: the decision for one Query (docs/design.md §3, docs/privacy.md §5).
 *
 * The privacy order (numbered in budget.c, where it is enforced): step 1,
 * validating the query and refusing a theta beyond --theta-max, is here; steps 2-4 (check, compute, durable charge)
 * run inside own_budget_spend(), which calls compute() below; step 5,
 * releasing the answer, is the client's and happens only for an
 * OWN_REPLY_ANSWER, which exists only after the charge succeeded.  This
 * file returns its decision and never sends, drops or stops by itself.
 * The gradient scratch is wiped on every path that does not release it,
 * and by own_answer_wipe() after a release. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "common/core/error.h"
#include "common/core/log.h"

#include "owner/own.h"

int own_answer_init(struct own_answer *a, const dp_dataset *ds, dp_bitsource *bits,
		    struct own_budget *budget, struct dp_metric *grad_secs, double theta_max)
{
	DP_REQUIRE(a != NULL && ds != NULL && ds->p >= 1 && bits != NULL && budget != NULL &&
		   theta_max > 0);
	memset(a, 0, sizeof(*a));
	a->grad = calloc(ds->p, sizeof(double));
	if (a->grad == NULL)
		return DP_ENOMEM;
	a->ds = ds;
	a->bits = bits;
	a->budget = budget;
	a->grad_secs = grad_secs;
	a->theta_max = theta_max;
	return 0;
}

void own_answer_wipe(struct own_answer *a)
{
	DP_REQUIRE(a != NULL);
	if (a->grad)
		OPENSSL_cleanse(a->grad, a->ds->p * sizeof(double));
}

void own_answer_free(struct own_answer *a)
{
	DP_REQUIRE(a != NULL);
	own_answer_wipe(a);
	free(a->grad);
	a->grad = NULL;
}

/* What compute() needs and what it found out. */
struct work {
	struct own_answer *a;
	const struct own_job *job;
	const double *theta;
	dp_query_info info;
	double secs;
	int err;                /* compute's own failure (0: none) */
};

/* Step 3, called by own_budget_spend() with the share it will charge. */
static int compute(void *arg, double eps_q)
{
	struct work *w = arg;
	struct own_answer *a = w->a;
	uint64_t t0;
	int r;

	/* The loop waits: one answer at a time (docs/ownerd.md). */
	t0 = uv_hrtime();
	r = dp_query_answer(w->job->model, a->ds, w->theta, w->job->clip, eps_q,
			    isinf(eps_q) ? NULL : a->bits, a->grad, &w->info);
	w->secs = (double)(uv_hrtime() - t0) / 1e9;
	if (r < 0) {
		w->err = r;
		return r;
	}
	dp_metrics_observe(a->grad_secs, w->secs);
	return 0;
}

static void drop(struct own_reply *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void drop(struct own_reply *out, const char *fmt, ...)
{
	va_list ap;

	out->kind = OWN_REPLY_DROP;
	va_start(ap, fmt);
	vsnprintf(out->drop, sizeof(out->drop), fmt, ap);
	va_end(ap);
}

static void refuse(struct own_reply *out, const char *reason)
{
	out->kind = OWN_REPLY_REFUSE;
	out->refuse = reason;
}

/* Step 1: what the conn layer cannot know (p is ours). */
static bool valid(const struct own_answer *a, const Dpasync__Query *q, struct own_reply *out)
{
	size_t p = a->ds->p;

	if (q->n_theta != p || q->theta == NULL) {
		drop(out, "query k=%llu has dimension %zu, expected %zu", (unsigned long long)q->k,
		     q->n_theta, p);
		return false;
	}
	for (size_t i = 0; i < p; i++)
		if (!isfinite(q->theta[i])) {
			drop(out, "query k=%llu theta[%zu] is not finite", (unsigned long long)q->k, i);
			return false;
		}
	if (q->k == 0) {
		drop(out, "query k=0");
		return false;
	}
	return true;
}

/* Still step 1: a well-formed theta beyond the owner's bound is refused
 * (nothing is computed or charged; the learner may go on).  Far outside
 * any model a job fits, such a theta only pushes rows' scores towards
 * overflow, where the answer's time once told which rows dropped out
 * (docs/privacy.md §7).  The decision depends on theta and the setting
 * alone, never on the data. */
static bool within_bound(const struct own_answer *a, const Dpasync__Query *q)
{
	bool ok = true;

	for (size_t i = 0; i < q->n_theta; i++)
		ok &= fabs(q->theta[i]) <= a->theta_max;
	return ok;
}

void own_answer_query(struct own_answer *a, const struct own_job *job,
		      const Dpasync__Query *q, struct own_reply *out)
{
	struct work w;
	uint64_t k;
	int r;

	DP_REQUIRE(a != NULL && a->grad != NULL && job != NULL && job->have && q != NULL &&
		   out != NULL);
	memset(out, 0, sizeof(*out));
	k = q->k;
	out->k = k;
	if (!valid(a, q, out))
		return;
	if (!within_bound(a, q)) {
		refuse(out, "theta outside the owner's bound (theta-max)");
		return;
	}

	memset(&w, 0, sizeof(w));
	w.a = a;
	w.job = job;
	w.theta = q->theta;

	r = own_budget_spend(a->budget, k, compute, &w, &out->after);
	if (r == 0) {
		out->kind = OWN_REPLY_ANSWER;
		out->gradient = a->grad;
		out->p = a->ds->p;
		out->info = w.info;
		out->secs = w.secs;
		return;
	}
	own_answer_wipe(a);   /* nothing computed may leave */
	if (w.err == DP_ERNG) {
		DP_ERROR("answer", "random generator failed k=%llu: %s; stopping",
			 (unsigned long long)k, dp_error_detail(r));
		out->kind = OWN_REPLY_STOP;
		out->exit_code = OWN_EXIT_FAIL;
		return;
	}
	if (w.err < 0) {
		drop(out, "cannot answer query k=%llu: %s", (unsigned long long)k,
		     dp_error_detail(r));
		return;
	}
	switch (r) {
	case DP_EBUDGET:
		refuse(out, "budget exhausted");
		break;
	case DP_ESTATE:
		refuse(out, "repeated query");
		break;
	case DP_EPROTO:
		drop(out, "%s", dp_error_detail(r));
		break;
	case DP_EIO:
		/* The ledger failed for good (logged by the budget). */
		out->kind = OWN_REPLY_STOP;
		out->refuse = "ledger failed";
		out->exit_code = OWN_EXIT_FAIL;
		break;
	default:
		/* DP_EINVAL / DP_ERANGE / DP_ENOMEM: nothing was charged. */
		DP_ERROR("answer", "ledger refused k=%llu: %s", (unsigned long long)k,
			 dp_error_detail(r));
		refuse(out, "internal error");
		break;
	}
}
