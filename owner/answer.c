/* SPDX-License-Identifier: Apache-2.0 */
/* ownerd: the decision for one Query (docs/design.md §3, docs/privacy.md §5).
 *
 * The privacy order (numbered in budget.c, where it is enforced): step 1,
 * validating the query and refusing a theta beyond --theta-max, is here;
 * step 2, the check, is own_budget_begin(); step 3, the computation with
 * its noise, runs on a worker thread of libuv's pool so that the loop (the
 * clock, TLS, /metrics) keeps running -- on the loop itself when the data
 * is so small that the hand-over would cost more than the pass; step 4,
 * the durable charge, is own_budget_commit(), back on the loop thread once
 * the worker is done;
 * step 5, releasing the answer, is the client's and happens only for an
 * OWN_REPLY_ANSWER, which exists only after the charge succeeded.  The
 * worker touches the dataset (read only), its copy of theta, the gradient
 * scratch and its own CSPRNG, nothing else: the ledger, the metrics and
 * the connection stay on the loop thread (docs/ownerd.md "Threads").  This
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

int own_answer_init(struct own_answer *a, uv_loop_t *loop, const dp_dataset *ds,
		    dp_bitsource *bits, struct own_budget *budget, struct dp_metric *grad_secs,
		    double theta_max, own_answer_done_fn done, void *done_arg)
{
	DP_REQUIRE(a != NULL && loop != NULL && ds != NULL && ds->p >= 1 && bits != NULL &&
		   budget != NULL && theta_max > 0 && done != NULL);
	memset(a, 0, sizeof(*a));
	a->grad = calloc(ds->p, sizeof(double));
	a->theta = calloc(ds->p, sizeof(double));
	if (a->grad == NULL || a->theta == NULL) {
		free(a->grad);
		free(a->theta);
		a->grad = a->theta = NULL;
		return DP_ENOMEM;
	}
	a->loop = loop;
	a->ds = ds;
	a->bits = bits;
	a->budget = budget;
	a->grad_secs = grad_secs;
	a->theta_max = theta_max;
	a->done = done;
	a->done_arg = done_arg;
	a->req.data = a;
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
	DP_REQUIRE(a != NULL && !a->busy);
	own_answer_wipe(a);
	free(a->grad);
	free(a->theta);
	a->grad = a->theta = NULL;
}

bool own_answer_busy(const struct own_answer *a)
{
	DP_REQUIRE(a != NULL);
	return a->busy;
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

/* What a failed check or charge means for the learner. */
static void refusal(const struct own_budget *b, int r, uint64_t k, struct own_reply *out)
{
	switch (r) {
	case DP_EBUDGET:
		/* The reason the learner logs names which cap was reached
		 * (docs/ledger.md §8 "Jobs and the lifetime budget"). */
		refuse(out, own_budget_lifetime_hit(b) ? OWN_REFUSE_LIFETIME : "budget exhausted");
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
		out->exit_code = dp_exit_status(r, DP_EXIT_PHASE_RUN);
		break;
	default:
		/* DP_EINVAL / DP_ERANGE / DP_ENOMEM: nothing was charged. */
		DP_ERROR("answer", "ledger refused k=%llu: %s", (unsigned long long)k,
			 dp_error_detail(r));
		refuse(out, "internal error");
		break;
	}
}

/* Step 3, on a worker thread: reads the dataset, writes the scratch and
 * the fields below, and nothing else (no log line, no metric). */
static void compute(uv_work_t *req)
{
	struct own_answer *a = req->data;
	double eps_q = a->ticket.eps_q;
	uint64_t t0;
	int r;

	t0 = uv_hrtime();
	/* For a Gaussian job eps_q is the ticket's rho_q (owner/budget.h). */
	if (a->mech == DP_MECH_GAUSSIAN)
		r = dp_query_answer_mech(a->model, a->ds, a->theta, a->clip, DP_MECH_GAUSSIAN,
					 eps_q, isinf(eps_q) ? NULL : a->bits, a->grad, &a->info);
	else
		r = dp_query_answer(a->model, a->ds, a->theta, a->clip, eps_q,
				    isinf(eps_q) ? NULL : a->bits, a->grad, &a->info);
	a->secs = (double)(uv_hrtime() - t0) / 1e9;
	a->err = r < 0 ? r : 0;
	if (r < 0)
		snprintf(a->detail, sizeof(a->detail), "%s", dp_error_detail(r));
}

/* On the loop thread once compute() has run (or was cancelled, status
 * < 0): step 4, or nothing charged; the decision goes to *out. */
static void finish(struct own_answer *a, int status, struct own_reply *out)
{
	uint64_t k = a->ticket.k;
	int r;

	memset(out, 0, sizeof(*out));
	out->k = k;
	a->busy = false;
	if (a->cancelled || status < 0) {
		/* Nobody to send it to: not charged, never released. */
		own_budget_abandon(a->budget, &a->ticket);
		own_answer_wipe(a);
		out->kind = OWN_REPLY_DISCARD;
	} else if (a->err < 0) {
		own_budget_abandon(a->budget, &a->ticket);
		own_answer_wipe(a);   /* nothing computed may leave */
		dp_error_set(a->err, "%s", a->detail);
		if (a->err == DP_ERNG) {
			DP_ERROR("answer", "random generator failed k=%llu: %s; stopping",
				 (unsigned long long)k, a->detail);
			out->kind = OWN_REPLY_STOP;
			out->exit_code = dp_exit_status(a->err, DP_EXIT_PHASE_RUN);
		} else {
			drop(out, "cannot answer query k=%llu: %s", (unsigned long long)k,
			     a->detail);
		}
	} else {
		dp_metrics_observe(a->grad_secs, a->secs);
		r = own_budget_commit(a->budget, &a->ticket, &out->after);
		if (r == 0) {
			out->kind = OWN_REPLY_ANSWER;
			out->gradient = a->grad;
			out->p = a->ds->p;
			out->info = a->info;
			out->secs = a->secs;
		} else {
			own_answer_wipe(a);
			refusal(a->budget, r, k, out);
		}
	}
	OPENSSL_cleanse(a->theta, a->ds->p * sizeof(double));
	a->cancelled = false;
}

/* libuv's after-work callback. */
static void computed(uv_work_t *req, int status)
{
	struct own_answer *a = req->data;
	struct own_reply out;

	finish(a, status, &out);
	a->done(a->done_arg, &out);
}

bool own_answer_query(struct own_answer *a, const struct own_job *job,
		      const Dpasync__Query *q, struct own_reply *out)
{
	int r;

	DP_REQUIRE(a != NULL && a->grad != NULL && job != NULL && job->have && q != NULL &&
		   out != NULL && !a->busy);
	memset(out, 0, sizeof(*out));
	out->k = q->k;
	if (!valid(a, q, out))
		return false;
	if (!within_bound(a, q)) {
		refuse(out, "theta outside the owner's bound (theta-max)");
		return false;
	}

	r = own_budget_begin(a->budget, q->k, &a->ticket);
	if (r < 0) {
		refusal(a->budget, r, q->k, out);
		return false;
	}
	/* The message and the job may change before the worker is done (the
	 * message is freed, a reconnection brings a new Welcome): copy. */
	memcpy(a->theta, q->theta, a->ds->p * sizeof(double));
	a->model = job->model;
	a->mech = job->mech;
	a->clip = job->mech == DP_MECH_GAUSSIAN ? job->clip_l2 : job->clip;
	a->err = 0;
	a->secs = 0;
	memset(&a->info, 0, sizeof(a->info));
	a->cancelled = false;
	if ((uint64_t)a->ds->n * a->ds->p <= OWN_ANSWER_INLINE_CELLS) {
		/* Small data: handing it to a worker and back would cost more
		 * than the pass itself (docs/ownerd.md "Threads"). */
		compute(&a->req);
		finish(a, 0, out);
		return false;
	}
	r = uv_queue_work(a->loop, &a->req, compute, computed);
	if (r < 0) {
		own_budget_abandon(a->budget, &a->ticket);
		DP_ERROR("answer", "cannot queue the computation k=%llu: %s",
			 (unsigned long long)q->k, uv_strerror(r));
		refuse(out, "internal error");
		return false;
	}
	a->busy = true;
	return true;
}

void own_answer_cancel(struct own_answer *a)
{
	DP_REQUIRE(a != NULL);
	if (!a->busy || a->cancelled)
		return;   /* uv_cancel once: a second call would requeue it */
	a->cancelled = true;
	/* Succeeds only before a worker picked it up; computed() then runs
	 * with UV_ECANCELED.  Once it runs it finishes (it is bounded by one
	 * pass over the data) and computed() discards it. */
	(void)uv_cancel((uv_req_t *)&a->req);
}
