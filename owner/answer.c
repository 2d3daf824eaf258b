/* ownerd: answering one Query (docs/design.md §3, docs/privacy.md §5).
 *
 * Order, and why:
 *   1. validate the query (dimension, finite theta, k above every k this
 *      ledger has charged) -- a malformed query closes the connection;
 *   2. dp_ledger_check -- refuse before sampling anything;
 *   3. dp_query_answer with the CSPRNG -- the only way an answer is made;
 *   4. dp_ledger_charge -- returns only after fdatasync;
 *   5. send the Answer -- never before 4 succeeded.
 * A repeated k is refused (never fresh noise); a ledger I/O failure stops
 * the daemon for good.  The gradient buffer is wiped after every query. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "common/core/error.h"
#include "common/net/frame.h"
#include "common/core/log.h"
#include "common/core/query.h"

#include "owner/own.h"

int own_budget_left(const struct own_daemon *d)
{
	uint64_t last = 0;

	if (d->ledger == NULL || d->cap_answers == 0 || dp_ledger_failed(d->ledger))
		return 0;
	if (dp_ledger_answers(d->ledger) >= d->cap_answers)
		return 0;
	dp_ledger_last_k(d->ledger, &last);
	if (last == UINT64_MAX)
		return 0;
	return dp_ledger_check(d->ledger, last + 1, d->eps_q) == 0;
}

static void own__refuse(struct own_daemon *d, uint64_t k, const char *reason)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Refuse rf = DPASYNC__REFUSE__INIT;

	rf.k = k;
	rf.reason = (char *)reason;
	env.version = DP_PROTO_VERSION;
	env.msg_case = DPASYNC__ENVELOPE__MSG_REFUSE;
	env.refuse = &rf;
	dp_metrics_inc(d->m.refusals);
	DP_INFO("answer", "refused k=%llu reason=\"%s\" answers=%llu/%llu spent=%.9g",
		(unsigned long long)k, reason,
		(unsigned long long)(d->ledger ? dp_ledger_answers(d->ledger) : 0),
		(unsigned long long)d->cap_answers, d->ledger ? dp_ledger_spent(d->ledger) : 0.0);
	own_client_send(d, &env);
}

void own_ledger_failed(struct own_daemon *d, uint64_t k, int err)
{
	DP_ERROR("ledger", "ledger %s failed k=%llu: %s; no further answers, stopping",
		 d->set.ledger, (unsigned long long)k, dp_error_detail(err));
	own__refuse(d, k, "ledger failed");
	own_metrics_budget(d);
	own_stop(d, OWN_EXIT_FAIL);
}

/* Act on a refusal code from dp_ledger_check/charge.  Returns after
 * refusing or stopping. */
static void own__ledger_refusal(struct own_daemon *d, uint64_t k, int r)
{
	switch (r) {
	case DP_EBUDGET:
		own__refuse(d, k, "budget exhausted");
		break;
	case DP_ESTATE:
		own__refuse(d, k, "repeated query");
		break;
	case DP_EIO:
	case DP_ECORRUPT:
		own_ledger_failed(d, k, r);
		break;
	default:
		/* DP_EINVAL / DP_ERANGE / DP_ENOMEM: nothing was charged. */
		DP_ERROR("answer", "ledger refused k=%llu: %s", (unsigned long long)k,
			 dp_error_detail(r));
		own__refuse(d, k, "internal error");
		break;
	}
}

void own_answer_query(struct own_daemon *d, const Dpasync__Query *q)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Answer a = DPASYNC__ANSWER__INIT;
	dp_query_info info;
	dp_ledger_entry ent;
	uint64_t k = q->k, last = 0;
	uint64_t t0;
	double secs;
	int r;

	/* 1. validate */
	if (q->n_theta != d->p || q->theta == NULL) {
		own_client_drop(d, "query k=%llu has dimension %zu, expected %zu",
				(unsigned long long)k, q->n_theta, d->p);
		return;
	}
	for (size_t i = 0; i < d->p; i++)
		if (!isfinite(q->theta[i])) {
			own_client_drop(d, "query k=%llu theta[%zu] is not finite",
					(unsigned long long)k, i);
			return;
		}
	if (k == 0) {
		own_client_drop(d, "query k=0");
		return;
	}
	d->request_pending = false;
	own_clock_resume(d);
	dp_ledger_last_k(d->ledger, &last);
	if (k <= last) {
		r = dp_ledger_lookup(d->ledger, k, NULL);
		if (r == 0) {
			own__refuse(d, k, "repeated query");
		} else if (r == DP_ENOENT) {
			own_client_drop(d, "query k=%llu is not above the last answered k=%llu",
					(unsigned long long)k, (unsigned long long)last);
		} else {
			own_ledger_failed(d, k, r);
		}
		return;
	}

	/* 2. check before sampling anything */
	r = dp_ledger_check(d->ledger, k, d->eps_q);
	if (r < 0) {
		own__ledger_refusal(d, k, r);
		return;
	}

	/* 3. compute (the loop waits: one answer at a time, see docs/ownerd.md) */
	t0 = uv_hrtime();
	r = dp_query_answer(d->job.model, &d->ds, q->theta, d->job.clip, d->eps_q,
			    isinf(d->eps_q) ? NULL : &d->bits, d->grad, &info);
	secs = (double)(uv_hrtime() - t0) / 1e9;
	if (r < 0) {
		OPENSSL_cleanse(d->grad, d->p * sizeof(double));
		if (r == DP_ERNG) {
			DP_ERROR("answer", "random generator failed k=%llu: %s; stopping",
				 (unsigned long long)k, dp_error_detail(r));
			own_stop(d, OWN_EXIT_FAIL);
		} else {
			own_client_drop(d, "cannot answer query k=%llu: %s", (unsigned long long)k,
					dp_error_detail(r));
		}
		return;
	}
	dp_metrics_observe(d->m.grad_secs, secs);

	/* 4. durable charge */
	r = dp_ledger_charge(d->ledger, k, d->eps_q, &ent);
	if (r < 0) {
		OPENSSL_cleanse(d->grad, d->p * sizeof(double));
		own__ledger_refusal(d, k, r);
		return;
	}

	/* 5. release */
	a.k = k;
	a.n_gradient = d->p;
	a.gradient = d->grad;
	a.epsilon_spent = dp_ledger_spent(d->ledger);
	a.epsilon_left = dp_ledger_left(d->ledger);
	a.answers_given = dp_ledger_answers(d->ledger);
	env.version = DP_PROTO_VERSION;
	env.msg_case = DPASYNC__ENVELOPE__MSG_ANSWER;
	env.answer = &a;
	r = own_client_send(d, &env);
	OPENSSL_cleanse(d->grad, d->p * sizeof(double));
	if (r == 0)
		dp_metrics_inc(d->m.answers);
	own_metrics_budget(d);
	if (info.dropped)
		DP_WARN("answer", "k=%llu rows_dropped=%zu (non-finite gradient)",
			(unsigned long long)k, info.dropped);
	DP_INFO("answer", "answered k=%llu answers=%llu/%llu spent=%.9g left=%.9g b=%.6g "
		"secs=%.6f%s", (unsigned long long)k, (unsigned long long)ent.count,
		(unsigned long long)d->cap_answers, a.epsilon_spent, a.epsilon_left,
		info.scale_b, secs, r < 0 ? " (not delivered: connection lost)" : "");
	if (!own_budget_left(d))
		DP_INFO("owner", "budget exhausted: staying connected (refusing) until Done");
}
