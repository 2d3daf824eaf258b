/* SPDX-License-Identifier: Apache-2.0 */
/* learnerd: who is asked next, and when the job ends (docs/learnerd.md §3).
 *
 * Request mode: a FIFO of owners whose clocks ticked; while fewer than
 * max-inflight queries are out, the oldest request is served.  Broadcast
 * mode: every broadcast-interval each idle owner is asked, up to
 * max-inflight in total.  A query that outlives query-timeout is abandoned
 * and its owner's connection closed.  Nothing is asked before the plan
 * exists (every owner has said Hello) and the owner has its Welcome; an
 * owner that has given its K_i answers (lrn_state_cap) or refused is
 * exhausted and never asked again, so no query is sent that its ledger
 * would refuse.  The job ends at k == T, or stops when no owner can be
 * asked for idle-timeout or every owner is exhausted.
 *
 * Sync modes: round k asks every owner at theta[k] (one query each), and
 * closes once every owner, or round-quorum of them, has answered; then the
 * step is taken and round k + 1 starts.  An answer to an older round (a
 * quorum round closed without it) is dropped; an owner that is away is
 * asked again when it is back; a round longer than round-timeout stops the
 * job, naming the owners that did not answer (docs/learnerd.md "Sync
 * rounds").
 *
 * Nothing here touches a connection or ends the job: each function leaves
 * a decision (struct lrn_decision) that server.c carries out. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/algo.h"
#include "common/core/error.h"
#include "common/core/log.h"
#include "learner/lrn.h"

static void decide(struct lrn_decision *d, enum lrn_act act, struct lrn_owner *o)
{
	d->act = act;
	d->o = o;
	d->qr = NULL;
	d->why[0] = '\0';
	d->goodbye = 0;
}

static void stop(struct lrn_decision *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void stop(struct lrn_decision *d, const char *fmt, ...)
{
	va_list ap;

	decide(d, LRN_ACT_STOP, NULL);
	va_start(ap, fmt);
	vsnprintf(d->why, sizeof(d->why), fmt, ap);
	va_end(ap);
}

static size_t slots(const struct lrn *L)
{
	if (LRN_SYNC(L))
		return L->N;   /* a round asks every owner at once */
	/* An owner has at most one query out, so more slots than owners
	 * would never fill. */
	return L->s->max_inflight < L->N ? L->s->max_inflight : L->N;
}

int lrn_sched_init(struct lrn *L)
{
	DP_REQUIRE(L != NULL && L->s != NULL && L->N > 0);
	L->fifo = calloc(L->N, sizeof(*L->fifo));
	L->fifo_t = calloc(L->N, sizeof(*L->fifo_t));
	L->q = calloc(slots(L), sizeof(*L->q));
	if (L->fifo == NULL || L->fifo_t == NULL || L->q == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	return 0;
}

void lrn_sched_free(struct lrn *L)
{
	DP_REQUIRE(L != NULL);
	if (L->q)
		for (size_t i = 0; i < slots(L); i++)
			free(L->q[i].bar);
	free(L->q);
	free(L->fifo);
	free(L->fifo_t);
	L->q = NULL;
	L->fifo = NULL;
	L->fifo_t = NULL;
}

/* Owners connected with their Hello accepted: the counter server.c keeps
 * (hello implies a connection: forget_conn clears both). */
static size_t connected(const struct lrn *L)
{
	return L->n_hello;
}

/* Not exhausted, and under its cap: a query it would refuse is never sent. */
static bool has_answers(const struct lrn *L, const struct lrn_owner *o)
{
	uint64_t cap = lrn_state_cap(L, o);

	return !o->exhausted && (cap == 0 || o->answers_given < cap);
}

static bool usable(const struct lrn *L, const struct lrn_owner *o)
{
	return o->conn && o->hello && o->welcomed && has_answers(L, o);
}

static size_t min_owners(const struct lrn *L)
{
	return L->s->min_owners ? L->s->min_owners : L->N;
}

/* What min-owners counts: owners connected, and exhausted owners wherever
 * they are (waiting for one that can answer nothing would only stall the
 * job until idle-timeout, e.g. an owner that left with its lifetime budget
 * spent).  Only while the gate is shut, so the scan of N is not per
 * iteration. */
static size_t present(const struct lrn *L)
{
	size_t n = connected(L);

	for (size_t i = 0; i < L->N; i++)
		n += L->owners[i].exhausted && !L->owners[i].hello;
	return n;
}

static void fifo_remove(struct lrn *L, struct lrn_owner *o)
{
	if (!o->queued)
		return;
	for (size_t i = 0; i < L->fifo_len; i++) {
		if (L->fifo[i] == o->idx) {
			memmove(&L->fifo[i], &L->fifo[i + 1], (L->fifo_len - i - 1) * sizeof(*L->fifo));
			memmove(&L->fifo_t[i], &L->fifo_t[i + 1],
				(L->fifo_len - i - 1) * sizeof(*L->fifo_t));
			L->fifo_len--;
			break;
		}
	}
	o->queued = false;
}

static void slot_free(struct lrn *L, struct lrn_query *qr)
{
	L->owners[qr->owner].inflight = false;
	qr->used = false;
	L->inflight--;
}

static struct lrn_query *slot_find(struct lrn *L, size_t owner, uint64_t qid)
{
	for (size_t i = 0; i < slots(L); i++)
		if (L->q[i].used && L->q[i].owner == owner && L->q[i].qid == qid)
			return &L->q[i];
	return NULL;
}

void lrn_sched_owner_gone(struct lrn *L, struct lrn_owner *o)
{
	DP_REQUIRE(L != NULL && o != NULL);
	fifo_remove(L, o);
	for (size_t i = 0; i < slots(L); i++) {
		if (L->q[i].used && L->q[i].owner == o->idx) {
			DP_INFO("learner", "query k=%llu to id=%s abandoned", (unsigned long long)L->q[i].qid,
				o->id);
			slot_free(L, &L->q[i]);
		}
	}
}

/* A free slot holding the next query to o: the point it evaluates and a
 * query id that cannot repeat after a crash.  QUERY, or STOP. */
static void prepare(struct lrn *L, struct lrn_owner *o, double wait, struct lrn_decision *d)
{
	struct lrn_query *qr = NULL;
	int rc;

	for (size_t i = 0; i < slots(L); i++) {
		if (!L->q[i].used) {
			qr = &L->q[i];
			break;
		}
	}
	DP_REQUIRE(qr != NULL);   /* room() saw a free slot */
	if (qr->bar == NULL) {
		qr->bar = calloc(L->p, sizeof(double));
		if (qr->bar == NULL) {
			stop(d, "out of memory");
			return;
		}
	}
	/* Ids at or above the reservation could repeat after a crash (the
	 * checkpoint would not know them): extend it durably first. */
	if (L->next_qid >= L->qid_reserved) {
		rc = lrn_checkpoint_save(L, false);
		if (rc < 0) {
			stop(d, "checkpoint failed: %s", dp_error_detail(rc));
			return;
		}
	}
	if (LRN_SYNC(L))
		memcpy(qr->bar, L->theta_L, L->p * sizeof(double));
	else
		dp_algo_midpoint(L->p, L->theta_L, o->theta, qr->bar);
	qr->round = L->sync_round;
	qr->built_k = L->k_done;
	qr->owner = o->idx;
	qr->qid = L->next_qid++;
	qr->wait = wait;
	decide(d, LRN_ACT_QUERY, o);
	d->qr = qr;
}

void lrn_sched_sent(struct lrn *L, struct lrn_query *qr, double sent)
{
	struct lrn_owner *o;

	DP_REQUIRE(L != NULL && qr != NULL && !qr->used && qr->owner < L->N);
	o = &L->owners[qr->owner];
	qr->used = true;
	qr->sent = sent;
	if (L->first_query < 0) {
		L->first_query = sent;
		L->first_k = L->k_done;
	}
	o->inflight = true;
	L->inflight++;
	if (L->round)
		L->round_last = qr->owner;
	DP_DEBUG("learner", "query k=%llu to id=%s wait=%.6f", (unsigned long long)qr->qid, o->id,
		 qr->wait);
}

static bool room(const struct lrn *L)
{
	return L->inflight < slots(L) && L->k_done + L->inflight < L->T;
}

void lrn_sched_request(struct lrn *L, struct lrn_owner *o, struct lrn_decision *d)
{
	DP_REQUIRE(L != NULL && o != NULL && d != NULL);
	decide(d, LRN_ACT_NONE, NULL);
	if (L->s->mode != LRN_MODE_REQUEST) {
		DP_DEBUG("learner", "update request from id=%s ignored: the learner asks", o->id);
		return;
	}
	if (o->queued || o->inflight || !has_answers(L, o)) {
		DP_DEBUG("learner", "update request from id=%s ignored (%s)", o->id,
			 !has_answers(L, o) ? "exhausted" : "already pending");
		return;
	}
	L->fifo[L->fifo_len] = o->idx;
	L->fifo_t[L->fifo_len] = lrn_clock_mono();
	L->fifo_len++;
	o->queued = true;
	decide(d, LRN_ACT_PUMP, NULL);
}

/* Mark o exhausted: STOP when every owner now is, else PUMP. */
static void mark_exhausted(struct lrn *L, struct lrn_owner *o, const char *why,
			   struct lrn_decision *d)
{
	size_t n = 0;

	if (!o->exhausted)
		DP_WARN("learner", "owner id=%s exhausted: %s", o->id, why);
	o->exhausted = true;
	fifo_remove(L, o);
	for (size_t i = 0; i < L->N; i++)
		n += L->owners[i].exhausted;
	if (n == L->N && (!L->started || L->k_done < lrn_state_goal(L))) {
		stop(d, "every owner has exhausted its budget at k=%llu of T=%llu: the job cannot "
		     "finish", (unsigned long long)L->k_done, (unsigned long long)L->T);
		return;
	}
	lrn_stats_gauges(L);
	decide(d, LRN_ACT_PUMP, NULL);
}

/* Sync: the current round has its answers; take the step, write the round's
 * summary and end it.  d: STOP on a failed write, else PUMP. */
static void round_close(struct lrn *L, struct lrn_decision *d)
{
	const struct lrn_owner *slow = NULL;
	double now = lrn_clock_mono();
	uint64_t r = L->sync_round;
	int rc;

	for (size_t i = 0; i < L->N; i++) {
		const struct lrn_owner *o = &L->owners[i];

		if (o->round_has && (slow == NULL || o->round_rtt > slow->round_rtt))
			slow = o;
	}
	DP_REQUIRE(slow != NULL);   /* round_got > 0 */
	lrn_state_round(L);
	DP_DEBUG("learner", "round k=%llu answers=%zu secs=%.6f slowest=%s",
		 (unsigned long long)r, L->round_got, now - L->round_start, slow->id);
	rc = lrn_trace_round(L, r, lrn_clock_wall(), now - L->round_start, L->round_got,
			     L->answers - L->round_got + 1, L->answers, slow->id, slow->round_rtt);
	L->sync_round = 0;
	if (rc < 0) {
		stop(d, "rounds: %s", dp_error_detail(rc));
		return;
	}
	if (L->s->checkpoint_every > 0 && L->k_done % L->s->checkpoint_every == 0 &&
	    L->k_done < lrn_state_goal(L)) {
		rc = lrn_checkpoint_save(L, false);
		if (rc < 0) {
			stop(d, "checkpoint: %s", dp_error_detail(rc));
			return;
		}
	}
	decide(d, LRN_ACT_PUMP, NULL);
}

static size_t quorum(const struct lrn *L)
{
	return L->s->round_quorum > 0 && L->s->round_quorum < L->N ? L->s->round_quorum : L->N;
}

/* Sync: the answer of query qr from o.  One of an older round (closed by
 * a quorum without it) is dropped: its owner has spent the budget, but the
 * round's step is taken. */
static void sync_answer(struct lrn *L, struct lrn_owner *o, struct lrn_query *qr,
			const double *grad, double eps_spent, double rtt, struct lrn_decision *d)
{
	int rc;

	o->eps_spent = eps_spent;
	dp_metrics_set(o->m_eps, eps_spent);
	if (qr->round != L->sync_round || o->round_has) {
		DP_INFO("learner", "answer from id=%s for round %llu dropped: round %llu is being "
			"served", o->id, (unsigned long long)qr->round,
			(unsigned long long)L->sync_round);
		slot_free(L, qr);
		decide(d, LRN_ACT_PUMP, NULL);
		return;
	}
	memcpy(L->round_ans + o->idx * L->p, grad, L->p * sizeof(double));
	o->round_has = true;
	o->round_rtt = rtt;
	o->iterations++;
	L->round_got++;
	L->answers++;
	dp_metrics_inc(L->st.iterations);
	dp_metrics_inc(o->m_iter);
	dp_metrics_observe(L->st.rtt, rtt);
	dp_metrics_observe(L->st.wait, qr->wait);
	rc = lrn_trace_row(L, L->answers, lrn_clock_wall(), o->id, qr->wait, rtt, eps_spent, 0);
	slot_free(L, qr);
	if (rc < 0) {
		stop(d, "trace: %s", dp_error_detail(rc));
		return;
	}
	if (L->round_got >= quorum(L)) {
		round_close(L, d);
		if (d->act == LRN_ACT_STOP)
			return;
	}
	if (!has_answers(L, o) && L->k_done < lrn_state_goal(L)) {
		mark_exhausted(L, o, "its last answer was given", d);
		return;
	}
	decide(d, LRN_ACT_PUMP, NULL);
}

void lrn_sched_answer(struct lrn *L, struct lrn_owner *o, uint64_t k, const double *grad,
		      double eps_spent, struct lrn_decision *d)
{
	struct lrn_query *qr;
	double now, rtt;
	uint64_t stale;
	int rc;

	DP_REQUIRE(L != NULL && o != NULL && d != NULL);
	decide(d, LRN_ACT_NONE, NULL);
	qr = slot_find(L, o->idx, k);
	if (qr == NULL) {
		DP_WARN("learner", "answer from id=%s for k=%llu ignored: no such query in flight",
			o->id, (unsigned long long)k);
		return;
	}
	now = lrn_clock_mono();
	rtt = now - qr->sent;
	if (LRN_SYNC(L)) {
		sync_answer(L, o, qr, grad, eps_spent, rtt, d);
		return;
	}
	/* Updates applied since bar was taken (docs/learnerd.md §4). */
	stale = L->k_done - qr->built_k;
	lrn_state_apply(L, qr, grad);
	o->eps_spent = eps_spent;
	dp_metrics_inc(L->st.iterations);
	dp_metrics_inc(o->m_iter);
	dp_metrics_set(o->m_eps, eps_spent);
	dp_metrics_observe(L->st.rtt, rtt);
	dp_metrics_observe(L->st.wait, qr->wait);
	DP_DEBUG("learner", "iteration k=%llu id=%s query=%llu rtt=%.6f", (unsigned long long)L->k_done,
		 o->id, (unsigned long long)k, rtt);
	rc = lrn_trace_row(L, L->k_done, lrn_clock_wall(), o->id, qr->wait, rtt, eps_spent, stale);
	slot_free(L, qr);
	if (rc < 0) {
		stop(d, "trace: %s", dp_error_detail(rc));
		return;
	}
	if (L->s->checkpoint_every > 0 && L->k_done % L->s->checkpoint_every == 0 &&
	    L->k_done < L->T) {
		rc = lrn_checkpoint_save(L, false);
		if (rc < 0) {
			stop(d, "checkpoint: %s", dp_error_detail(rc));
			return;
		}
	}
	/* An owner that has given its last answer will not ask again: knowing
	 * it now lets the stall and exhaustion checks see it. */
	if (!has_answers(L, o)) {
		mark_exhausted(L, o, "its last answer was given", d);
		return;
	}
	decide(d, LRN_ACT_PUMP, NULL);
}

void lrn_sched_refuse(struct lrn *L, struct lrn_owner *o, uint64_t k, const char *reason,
		      struct lrn_decision *d)
{
	struct lrn_query *qr;
	char why[320];

	DP_REQUIRE(L != NULL && o != NULL && reason != NULL && d != NULL);
	qr = slot_find(L, o->idx, k);
	dp_metrics_inc(L->st.refusals);
	DP_WARN("learner", "owner id=%s refused k=%llu reason=\"%s\"%s", o->id, (unsigned long long)k,
		reason, qr ? "" : " (no such query in flight)");
	if (qr)
		slot_free(L, qr);
	snprintf(why, sizeof(why), "refused: %s", reason);
	mark_exhausted(L, o, why, d);
	/* Strict sync needs every owner in every round. */
	if (LRN_SYNC(L) && quorum(L) == L->N && d->act != LRN_ACT_STOP)
		stop(d, "owner %s refused round %llu (%s): a sync round needs every owner",
		     o->id, (unsigned long long)L->sync_round, reason);
}

void lrn_sched_hello(struct lrn *L, struct lrn_owner *o, struct lrn_decision *d)
{
	uint64_t cap;

	DP_REQUIRE(L != NULL && o != NULL && d != NULL);
	/* The owner's ledger is the authority on its budget: a reconnecting
	 * owner with answers left is usable again even after a Refuse. */
	cap = lrn_state_cap(L, o);
	if (cap != 0 && o->answers_given >= cap) {
		mark_exhausted(L, o, "no answers left per its Hello", d);
		return;   /* PUMP: it may still complete the start */
	}
	if (o->exhausted) {
		DP_INFO("learner", "owner id=%s has answers left again (%llu of %llu given)", o->id,
			(unsigned long long)o->answers_given, (unsigned long long)cap);
		o->exhausted = false;
	}
	decide(d, LRN_ACT_PUMP, NULL);
}

void lrn_sched_spent(struct lrn *L, struct lrn_owner *o, struct lrn_decision *d)
{
	DP_REQUIRE(L != NULL && o != NULL && d != NULL);
	mark_exhausted(L, o, "it left: its lifetime budget is spent", d);
}

/* The idle timeout: STOP once no owner could be queried for that long. */
static void stall_check(struct lrn *L, double now, struct lrn_decision *d)
{
	char msg[400], *p = msg;
	size_t left = sizeof(msg), away = 0, exh = 0;
	bool busy = L->inflight > 0;
	int w;

	/* Runs on every scheduling pass: stop at the first usable owner (a
	 * full scan of N per iteration cost 22 % of learnerd at 10,000
	 * owners, docs/scale.md §5). */
	for (size_t i = 0; !busy && i < L->N; i++)
		busy = usable(L, &L->owners[i]);
	if (L->gate_open && busy) {
		L->stall_since = -1;
		return;
	}
	if (L->stall_since < 0)
		L->stall_since = now;
	if (!(L->s->idle_timeout > 0 && now - L->stall_since >= L->s->idle_timeout))
		return;
	for (size_t i = 0; i < L->N; i++) {
		away += L->owners[i].conn == NULL;
		exh += L->owners[i].exhausted;
	}
	w = snprintf(p, left, "no owner could be queried for %.1fs (idle-timeout) at k=%llu of "
		     "T=%llu: %zu connected, %zu away, %zu exhausted", now - L->stall_since,
		     (unsigned long long)L->k_done, (unsigned long long)L->T, connected(L), away, exh);
	p += w;
	left -= (size_t)w;
	if (!L->started) {
		w = snprintf(p, left, "; never said Hello:");
		for (size_t i = 0; i < L->N && w > 0 && (size_t)w < left; i++) {
			p += w;
			left -= (size_t)w;
			w = L->owners[i].ever_hello ? 0 : snprintf(p, left, " %s", L->owners[i].id);
		}
	}
	stop(d, "%s", msg);
}

static bool all_said_hello(const struct lrn *L)
{
	for (size_t i = 0; i < L->N; i++)
		if (!L->owners[i].ever_hello)
			return false;
	return true;
}

/* p not configured: every owner has said Hello; fix p at the n_features
 * most of them said (ties: the first owner in `owners` among the tied
 * values), or, while some disagree, forget their Hellos (the plan waits
 * for them again) and DROP the first of them still connected with a
 * Goodbye BAD_DATA.  NONE when nothing is left to do; STOP if p cannot be
 * allocated. */
static void agree_on_p(struct lrn *L, struct lrn_decision *d)
{
	size_t best = 0, best_n = 0, n;
	uint32_t p;
	int rc;

	decide(d, LRN_ACT_NONE, NULL);
	for (size_t i = 0; i < L->N; i++) {
		n = 0;
		for (size_t j = 0; j < L->N; j++)
			n += L->owners[j].n_features == L->owners[i].n_features;
		if (n > best_n) {
			best_n = n;
			best = i;
		}
	}
	p = L->owners[best].n_features;
	if (best_n == L->N) {
		rc = lrn_state_set_p(L, p);
		if (rc < 0) {
			stop(d, "fixing p = %u: %s", p, dp_error_detail(rc));
			return;
		}
		DP_INFO("learner", "p=%zu from the Hellos of all %zu owners", L->p, L->N);
		return;
	}
	for (size_t i = 0; i < L->N; i++) {
		struct lrn_owner *o = &L->owners[i];

		if (o->n_features == p)
			continue;
		o->ever_hello = false;
		if (o->conn != NULL && o->hello) {
			/* Permanent: the owner's data has other columns; a
			 * reconnect would say the same (Goodbye BAD_DATA, the
			 * owner exits 2 instead of retrying for ever). */
			decide(d, LRN_ACT_DROP, o);
			d->goodbye = DPASYNC__GOODBYE_CODE__GOODBYE_BAD_DATA;
			snprintf(d->why, sizeof(d->why), "Hello n_features %u differs from p = %u said "
				 "by %zu of the %zu owners: give owner %s data with the same feature "
				 "columns (and bias setting) as the others", o->n_features, p, best_n,
				 L->N, o->id);
			return;
		}
	}
}

/* Every owner has said Hello: fix the job's schema fingerprint at the one
 * most of them sent (ties: the first owner in `owners`), as for p, so that
 * one misconfigured owner that came first cannot turn the others away.
 * While some differ, forget their Hellos and DROP the first of them still
 * connected with a Goodbye SCHEMA_MISMATCH (the owner exits 2).  Owners
 * that sent no fingerprint are left out.  NONE when nothing is left. */
static void agree_on_schema(struct lrn *L, struct lrn_decision *d)
{
	size_t best = L->N, best_n = 0, n, with = 0;

	decide(d, LRN_ACT_NONE, NULL);
	if (L->schema_fp[0] != '\0')
		return;
	for (size_t i = 0; i < L->N; i++) {
		if (L->owners[i].schema[0] == '\0')
			continue;
		with++;
		n = 0;
		for (size_t j = 0; j < L->N; j++)
			n += strcmp(L->owners[j].schema, L->owners[i].schema) == 0;
		if (n > best_n) {
			best_n = n;
			best = i;
		}
	}
	if (best == L->N)
		return;   /* no owner sent one */
	if (best_n == with) {
		memcpy(L->schema_fp, L->owners[best].schema, sizeof(L->schema_fp));
		snprintf(L->schema_from, sizeof(L->schema_from), "%s", L->owners[best].id);
		DP_INFO("learner", "schema=%s from the Hellos of %zu owners", L->schema_fp, best_n);
		return;
	}
	for (size_t i = 0; i < L->N; i++) {
		struct lrn_owner *o = &L->owners[i];

		if (o->schema[0] == '\0' || strcmp(o->schema, L->owners[best].schema) == 0)
			continue;
		o->ever_hello = false;
		if (o->conn != NULL && o->hello) {
			decide(d, LRN_ACT_DROP, o);
			d->goodbye = DPASYNC__GOODBYE_CODE__GOODBYE_SCHEMA_MISMATCH;
			snprintf(d->why, sizeof(d->why), "schema mismatch: owner %s has schema %.23s... "
				 "but %zu of the %zu owners (first %s) have %.23s...: feature names, "
				 "their order, the target or the schema file differ", o->id, o->schema,
				 best_n, L->N, L->owners[best].id, L->owners[best].schema);
			return;
		}
	}
}

/* Sync: start the next round when none is served, then ask every owner
 * of it that has not answered, is connected and has no query out. */
static void sync_next(struct lrn *L, double now, struct lrn_decision *d)
{
	if (L->sync_round == 0) {
		L->sync_round = L->k_done + 1;
		L->round_start = now;
		L->round_got = 0;
		for (size_t i = 0; i < L->N; i++)
			L->owners[i].round_has = false;
	}
	for (size_t i = 0; i < L->N; i++) {
		struct lrn_owner *o = &L->owners[i];

		if (o->round_has || o->inflight || !usable(L, o))
			continue;
		prepare(L, o, 0.0, d);
		return;
	}
}

void lrn_sched_next(struct lrn *L, double now, struct lrn_decision *d)
{
	int rc;

	DP_REQUIRE(L != NULL && d != NULL);
	decide(d, LRN_ACT_NONE, NULL);
	/* The plan needs every owner's n_i, eps_i and rate_i: it is made at
	 * the last first Hello, and no Welcome goes out before it. */
	if (!L->started && L->p == 0 && all_said_hello(L)) {
		agree_on_p(L, d);
		if (d->act != LRN_ACT_NONE)
			return;
	}
	if (!L->started && all_said_hello(L)) {
		agree_on_schema(L, d);
		if (d->act != LRN_ACT_NONE)
			return;
	}
	if (!L->started && L->p > 0 && all_said_hello(L)) {
		rc = lrn_state_start(L);
		if (rc == 0)
			rc = lrn_checkpoint_save(L, false);
		if (rc < 0) {
			stop(d, "starting training: %s", dp_error_detail(rc));
			return;
		}
	}
	if (L->started && L->k_done >= lrn_state_goal(L)) {
		decide(d, LRN_ACT_DONE, NULL);
		return;
	}
	/* A scan of N only while someone waits for a Welcome: not on every
	 * iteration (docs/scale.md §5). */
	for (size_t i = 0; L->started && L->n_to_welcome > 0 && i < L->N; i++) {
		struct lrn_owner *o = &L->owners[i];

		if (o->conn && o->hello && !o->welcomed) {
			decide(d, LRN_ACT_WELCOME, o);
			return;
		}
	}
	if (L->started && !L->gate_open && present(L) >= min_owners(L)) {
		L->gate_open = true;
		DP_INFO("learner", "queries start k=%llu connected=%zu", (unsigned long long)L->k_done,
			connected(L));
	}
	if (L->gate_open && LRN_SYNC(L)) {
		sync_next(L, now, d);
		if (d->act != LRN_ACT_NONE)
			return;
	}
	if (L->gate_open && L->s->mode == LRN_MODE_REQUEST) {
		while (room(L) && L->fifo_len > 0) {
			struct lrn_owner *o = &L->owners[L->fifo[0]];
			double t = L->fifo_t[0];

			fifo_remove(L, o);
			if (!usable(L, o))
				continue;
			prepare(L, o, now - t, d);
			return;
		}
	}
	if (L->round) {
		while (L->round_j < L->N && room(L)) {
			struct lrn_owner *o = &L->owners[(L->bcast_next + L->round_j) % L->N];

			L->round_j++;
			if (!usable(L, o) || o->inflight)
				continue;
			prepare(L, o, 0.0, d);
			return;
		}
		/* Fairness when max-inflight < N: the next round starts after
		 * the last owner asked. */
		L->round = false;
		if (L->round_last != SIZE_MAX)
			L->bcast_next = (L->round_last + 1) % L->N;
	}
	stall_check(L, now, d);
	lrn_stats_gauges(L);
}

bool lrn_sched_round(struct lrn *L)
{
	DP_REQUIRE(L != NULL);
	if (!L->gate_open)
		return false;
	L->round = true;
	L->round_j = 0;
	L->round_last = SIZE_MAX;
	return true;
}

/* Sync: the round outlived round-timeout: STOP naming who did not answer. */
static void round_overdue(struct lrn *L, double now, struct lrn_decision *d)
{
	char names[400];
	size_t used = 0;

	names[0] = '\0';
	for (size_t i = 0; i < L->N; i++) {
		const struct lrn_owner *o = &L->owners[i];
		int n;

		if (o->round_has)
			continue;
		if (used >= sizeof(names))
			continue;
		n = snprintf(names + used, sizeof(names) - used, "%s%s%s", used ? " " : "", o->id,
			     o->conn == NULL ? "(away)" : "");
		used += n > 0 ? (size_t)n : 0;
	}
	stop(d, "round %llu of %llu not complete after %.1fs (round-timeout): %zu of %zu owners "
	     "answered, %zu needed; missing: %s", (unsigned long long)L->sync_round,
	     (unsigned long long)lrn_state_goal(L), now - L->round_start, L->round_got, L->N,
	     quorum(L), names);
}

void lrn_sched_expired(struct lrn *L, double now, struct lrn_decision *d)
{
	DP_REQUIRE(L != NULL && d != NULL);
	decide(d, LRN_ACT_NONE, NULL);
	if (LRN_SYNC(L) && L->sync_round > 0 && L->s->round_timeout > 0 &&
	    now - L->round_start >= L->s->round_timeout) {
		round_overdue(L, now, d);
		return;
	}
	/* Only owners still connected: the drop clears the query, so each is
	 * reported once. */
	for (size_t i = 0; i < slots(L); i++) {
		struct lrn_query *qr = &L->q[i];
		struct lrn_owner *o = &L->owners[qr->owner];

		if (qr->used && o->conn && now - qr->sent >= L->s->query_timeout) {
			dp_metrics_inc(L->st.timeouts);
			decide(d, LRN_ACT_DROP, o);
			snprintf(d->why, sizeof(d->why), "query k=%llu not answered within %gs",
				 (unsigned long long)qr->qid, L->s->query_timeout);
			return;
		}
	}
	for (size_t i = 0; i < L->N; i++) {
		struct lrn_owner *o = &L->owners[i];

		if (o->conn && !o->hello && now - o->conn_since >= L->s->hello_timeout) {
			decide(d, LRN_ACT_DROP, o);
			snprintf(d->why, sizeof(d->why), "no Hello within hello-timeout");
			return;
		}
	}
}
