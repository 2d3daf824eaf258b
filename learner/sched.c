/* SPDX-License-Identifier: Apache-2.0 */
/* learnerd: who is asked next, and when the job ends (docs/learnerd.md §3).
 *
 * Request mode: a FIFO of owners whose clocks ticked; while fewer than
 * max-inflight queries are out, the oldest request is served.  Broadcast
 * mode: every broadcast-interval each idle owner is asked, up to
 * max-inflight in total.  A query that outlives query-timeout is abandoned
 * and its owner's connection closed.  Nothing is asked before the plan
 * exists (every owner has said Hello) and the owner has its Welcome; an
 * owner that has given its K_i answers (lrn_state_cap), whose Hello leaves
 * it no budget (it is then left out of the plan), or that refused, is
 * exhausted and never asked again, and no query goes outside an owner's
 * theta bound, so no query is sent that its ledger would refuse
 * (docs/learnerd.md §3 "Caps").  The job ends at k == T, or stops when no owner can be
 * asked for idle-timeout or every owner is exhausted.
 *
 * Sync modes: round k asks every owner at theta[k] (one query each), and
 * closes once every owner, or round-quorum of them, has answered; then the
 * step is taken and round k + 1 starts.  An answer to an older round (a
 * quorum round closed without it) is the owner's answer in the current
 * round, stale (its budget is spent: it is used, never dropped, and the
 * owner is not asked again in that round); an owner that is away is
 * asked again when it is back; a round longer than round-timeout stops the
 * job, naming the owners that did not answer (docs/learnerd.md "Sync
 * rounds").
 *
 * Nothing here touches a connection or ends the job: each function leaves
 * a decision (struct lrn_decision) that server.c carries out. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/algo.h"
#include "common/core/error.h"
#include "common/core/idmap.h"
#include "common/core/log.h"
#include "learner/job.h"

static void decide(struct lrn_decision *d, enum lrn_act act, struct lrn_owner *o)
{
	d->act = act;
	d->o = o;
	d->qr = NULL;
	d->why[0] = '\0';
	d->reason = NULL;
	d->goodbye = 0;
	d->config = false;
}

static void stop(struct lrn_decision *d, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* STOP for `reason`, a word of the partial model (struct lrn_decision). */
static void stop(struct lrn_decision *d, const char *reason, const char *fmt, ...)
{
	va_list ap;

	decide(d, LRN_ACT_STOP, NULL);
	d->reason = reason;
	va_start(ap, fmt);
	vsnprintf(d->why, sizeof(d->why), fmt, ap);
	va_end(ap);
}

static size_t slots(const struct lrn_job *J)
{
	if (LRN_SYNC(J))
		return J->N;   /* a round asks every owner at once */
	/* An owner has at most one query out, so more slots than owners
	 * would never fill. */
	return J->s->max_inflight < J->N ? J->s->max_inflight : J->N;
}

int lrn_sched_init(struct lrn_job *J)
{
	DP_REQUIRE(J != NULL && J->s != NULL && J->N > 0);
	J->fifo_cap = 2 * J->N;
	J->fifo = calloc(J->fifo_cap, sizeof(*J->fifo));
	J->q = calloc(slots(J), sizeof(*J->q));
	if (J->fifo == NULL || J->q == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	return 0;
}

void lrn_sched_free(struct lrn_job *J)
{
	DP_REQUIRE(J != NULL);
	if (J->q)
		for (size_t i = 0; i < slots(J); i++)
			free(J->q[i].bar);
	free(J->q);
	free(J->fifo);
	J->q = NULL;
	J->fifo = NULL;
}

/* Owners connected with their Hello accepted: the counter the daemon keeps
 * (hello implies a connection: server.c's forget_conn clears both). */
static size_t connected(const struct lrn_job *J)
{
	return J->n_hello;
}

/* Not exhausted, and under its cap: a query it would refuse is never sent. */
static bool has_answers(const struct lrn_job *J, const struct lrn_owner *o)
{
	uint64_t cap = lrn_state_cap(J, o);

	return !o->exhausted && (cap == 0 || o->answers_given < cap);
}

static bool usable(const struct lrn_job *J, const struct lrn_owner *o)
{
	return o->connected && o->hello && o->welcomed && has_answers(J, o);
}

static size_t min_owners(const struct lrn_job *J)
{
	return J->s->min_owners ? J->s->min_owners : J->N;
}

/* What min-owners counts: owners connected, and exhausted owners wherever
 * they are (waiting for one that can answer nothing would only stall the
 * job until idle-timeout, e.g. an owner that left with its lifetime budget
 * spent).  Counters: the gate is checked on every pass while it is shut,
 * a storm of Hellos included. */
static size_t present(const struct lrn_job *J)
{
	return connected(J) + J->n_exhausted_away;
}

/* Withdraw o's request: its entry goes stale where it is. */
static void fifo_remove(struct lrn_job *J, struct lrn_owner *o)
{
	if (!o->queued)
		return;
	DP_REQUIRE(J->fifo_len > 0);
	o->queued = false;
	J->fifo_len--;
}

static bool fifo_live(const struct lrn_job *J, const struct lrn_fifo_entry *e)
{
	const struct lrn_owner *o = &J->owners[e->owner];

	return o->queued && o->queue_stamp == e->stamp;
}

static struct lrn_fifo_entry *fifo_at(struct lrn_job *J, size_t i)
{
	return &J->fifo[(J->fifo_head + i) % J->fifo_cap];
}

/* Queue o's request (o not queued).  A full ring holds at least N stale
 * entries (at most N are live): compacting it, in order, is O(N) once per
 * N requests. */
static void fifo_push(struct lrn_job *J, struct lrn_owner *o, double now)
{
	struct lrn_fifo_entry *e;

	DP_REQUIRE(!o->queued);
	if (J->fifo_count == J->fifo_cap) {
		size_t n = 0;

		for (size_t i = 0; i < J->fifo_count; i++) {
			struct lrn_fifo_entry *x = fifo_at(J, i);

			if (fifo_live(J, x))
				*fifo_at(J, n++) = *x;   /* n <= i: never overwrites an unread one */
		}
		J->fifo_count = n;
		DP_REQUIRE(n == J->fifo_len && n < J->fifo_cap);
	}
	e = fifo_at(J, J->fifo_count++);
	*e = (struct lrn_fifo_entry){ o->idx, ++J->fifo_stamp, now };
	o->queue_stamp = e->stamp;
	o->queued = true;
	J->fifo_len++;
}

/* The oldest live request, taken off the queue (stale entries before it
 * are dropped): its owner, and its arrival time in *t.  NULL: none. */
static struct lrn_owner *fifo_pop(struct lrn_job *J, double *t)
{
	while (J->fifo_count > 0) {
		struct lrn_fifo_entry *e = fifo_at(J, 0);
		struct lrn_owner *o = &J->owners[e->owner];
		bool live = fifo_live(J, e);

		*t = e->t;
		J->fifo_head = (J->fifo_head + 1) % J->fifo_cap;
		J->fifo_count--;
		if (live) {
			fifo_remove(J, o);
			return o;
		}
	}
	return NULL;
}

static void slot_free(struct lrn_job *J, struct lrn_query *qr)
{
	J->owners[qr->owner].inflight = false;
	qr->used = false;
	J->inflight--;
}

static struct lrn_query *slot_find(struct lrn_job *J, size_t owner, uint64_t qid)
{
	for (size_t i = 0; i < slots(J); i++)
		if (J->q[i].used && J->q[i].owner == owner && J->q[i].qid == qid)
			return &J->q[i];
	return NULL;
}

void lrn_sched_owner_gone(struct lrn_job *J, struct lrn_owner *o)
{
	DP_REQUIRE(J != NULL && o != NULL);
	fifo_remove(J, o);
	for (size_t i = 0; i < slots(J); i++) {
		if (J->q[i].used && J->q[i].owner == o->idx) {
			DP_INFO("learner", "query k=%llu to id=%s abandoned", (unsigned long long)J->q[i].qid,
				o->id);
			slot_free(J, &J->q[i]);
		}
	}
}

/* A free slot holding the next query to o: the point it evaluates and a
 * query id that cannot repeat after a crash.  QUERY, or STOP. */
static void prepare(struct lrn_job *J, struct lrn_owner *o, double wait, struct lrn_decision *d)
{
	struct lrn_query *qr = NULL;
	int rc;

	for (size_t i = 0; i < slots(J); i++) {
		if (!J->q[i].used) {
			qr = &J->q[i];
			break;
		}
	}
	DP_REQUIRE(qr != NULL);   /* room() saw a free slot */
	if (qr->bar == NULL) {
		qr->bar = calloc(J->p, sizeof(double));
		if (qr->bar == NULL) {
			stop(d, "error", "out of memory");
			return;
		}
	}
	/* Ids at or above the reservation could repeat after a crash (the
	 * checkpoint would not know them): extend it durably first. */
	if (J->next_qid >= J->qid_reserved) {
		rc = lrn_checkpoint_save(J, false);
		if (rc < 0) {
			stop(d, "error", "checkpoint failed: %s", dp_error_detail(rc));
			return;
		}
	}
	if (LRN_SYNC(J))
		memcpy(qr->bar, J->theta_L, J->p * sizeof(double));
	else
		dp_algo_midpoint(J->p, J->theta_L, o->theta, qr->bar);
	/* Never a query the owner would refuse: the job's box lies inside
	 * every admitted owner's bound (lrn_state_check_hello), but sync1's
	 * step has no box. */
	for (size_t q = 0; q < J->p; q++) {
		if (!(fabs(qr->bar[q]) <= o->theta_bound)) {
			stop(d, "theta-bound", "theta[%zu] = %g of the next query to owner %s is "
			     "outside its bound theta-max %g: it would refuse it", q, qr->bar[q], o->id, o->theta_bound);
			return;
		}
	}
	qr->round = J->sync_round;
	qr->built_k = J->k_done;
	qr->owner = o->idx;
	qr->qid = J->next_qid++;
	qr->wait = wait;
	decide(d, LRN_ACT_QUERY, o);
	d->qr = qr;
}

void lrn_sched_sent(struct lrn_job *J, struct lrn_query *qr, double sent)
{
	struct lrn_owner *o;

	DP_REQUIRE(J != NULL && qr != NULL && !qr->used && qr->owner < J->N);
	o = &J->owners[qr->owner];
	qr->used = true;
	qr->sent = sent;
	if (J->first_query < 0) {
		J->first_query = sent;
		J->first_k = J->k_done;
	}
	o->inflight = true;
	J->inflight++;
	if (J->round)
		J->round_last = qr->owner;
	DP_DEBUG("learner", "query k=%llu to id=%s wait=%.6f", (unsigned long long)qr->qid, o->id,
		 qr->wait);
}

static bool room(const struct lrn_job *J)
{
	return J->inflight < slots(J) && J->k_done + J->inflight < J->T;
}

void lrn_sched_request(struct lrn_job *J, struct lrn_owner *o, double now,
		       struct lrn_decision *d)
{
	DP_REQUIRE(J != NULL && o != NULL && d != NULL);
	decide(d, LRN_ACT_NONE, NULL);
	if (J->s->mode != LRN_MODE_REQUEST) {
		DP_DEBUG("learner", "update request from id=%s ignored: the learner asks", o->id);
		return;
	}
	if (o->queued || o->inflight || !has_answers(J, o)) {
		DP_DEBUG("learner", "update request from id=%s ignored (%s)", o->id,
			 !has_answers(J, o) ? "exhausted" : "already pending");
		return;
	}
	fifo_push(J, o, now);
	decide(d, LRN_ACT_PUMP, NULL);
}

/* Mark o exhausted: STOP when every owner now is, else PUMP. */
static void mark_exhausted(struct lrn_job *J, struct lrn_owner *o, const char *why,
			   struct lrn_decision *d)
{
	if (!o->exhausted)
		DP_WARN("learner", "owner id=%s exhausted: %s", o->id, why);
	lrn_state_count(J, o, -1);
	o->exhausted = true;
	lrn_state_count(J, o, 1);
	fifo_remove(J, o);
	if (J->n_exhausted == J->N && (!J->started || J->k_done < lrn_state_goal(J))) {
		stop(d, "exhausted", "every owner has exhausted its budget at k=%llu of T=%llu: the "
		     "job cannot finish", (unsigned long long)J->k_done, (unsigned long long)J->T);
		return;
	}
	lrn_stats_gauges(J);
	decide(d, LRN_ACT_PUMP, NULL);
}

/* Sync: the current round has its answers at `now`; take the step, write
 * the round's summary and end it.  d: STOP on a failed write, else PUMP. */
static void round_close(struct lrn_job *J, double now, struct lrn_decision *d)
{
	const struct lrn_owner *slow = NULL;
	uint64_t r = J->sync_round;
	int rc;

	for (size_t i = 0; i < J->N; i++) {
		const struct lrn_owner *o = &J->owners[i];

		if (o->round_has && (slow == NULL || o->round_rtt > slow->round_rtt))
			slow = o;
	}
	DP_REQUIRE(slow != NULL);   /* round_got > 0 */
	lrn_state_round(J);
	DP_DEBUG("learner", "round k=%llu answers=%zu secs=%.6f slowest=%s",
		 (unsigned long long)r, J->round_got, now - J->round_start, slow->id);
	rc = lrn_trace_round(J, r, lrn_clock_wall(), now - J->round_start, J->round_got,
			     J->answers - J->round_got + 1, J->answers, slow->id, slow->round_rtt);
	J->sync_round = 0;
	if (rc < 0) {
		stop(d, "error", "rounds: %s", dp_error_detail(rc));
		return;
	}
	lrn_snapshot_take(J);
	/* Every round, whatever checkpoint-every (but 0): a learnerd crash
	 * then loses the answers of one round only, at most one share per
	 * owner, which its restart slack covers (docs/learnerd.md §9
	 * "Resume"); answers of rounds after a checkpoint would be lost. */
	if (J->s->checkpoint_every > 0 && J->k_done < lrn_state_goal(J)) {
		rc = lrn_checkpoint_save(J, false);
		if (rc < 0) {
			stop(d, "error", "checkpoint: %s", dp_error_detail(rc));
			return;
		}
	}
	decide(d, LRN_ACT_PUMP, NULL);
}

static size_t quorum(const struct lrn_job *J)
{
	return J->s->round_quorum > 0 && J->s->round_quorum < J->n_planned ? J->s->round_quorum
									    : J->n_planned;
}

/* Sync: open round k_done + 1 at `now` (none is open). */
static void round_open(struct lrn_job *J, double now)
{
	J->sync_round = J->k_done + 1;
	J->round_start = now;
	J->round_got = 0;
	for (size_t i = 0; i < J->N; i++)
		J->owners[i].round_has = false;
}

/* Sync: the answer of query qr from o, at `now` after rtt seconds.  One
 * of an older round (closed by a quorum without it) is o's answer in the
 * current round, stale by the rounds between: its owner has spent the
 * budget on it, and o, whose query was out, has not answered this round
 * (docs/learnerd.md §9 "Late answers").  Only an answer after the last
 * round is dropped. */
static void sync_answer(struct lrn_job *J, struct lrn_owner *o, struct lrn_query *qr,
			const double *grad, double eps_spent, double now, double rtt,
			struct lrn_decision *d)
{
	uint64_t stale;
	int rc;

	o->eps_spent = eps_spent;
	dp_metrics_set(o->m_eps, eps_spent);
	if (J->sync_round == 0 && J->k_done < lrn_state_goal(J))
		round_open(J, now);
	/* o->round_has with a query out cannot be (one query per owner, and
	 * none while it has answered the round): dropped all the same. */
	if (J->sync_round == 0 || o->round_has) {
		DP_INFO("learner", "answer from id=%s for round %llu dropped: %s", o->id,
			(unsigned long long)qr->round,
			J->sync_round == 0 ? "the job's rounds are done" : "its round has its answer");
		slot_free(J, qr);
		decide(d, LRN_ACT_PUMP, NULL);
		return;
	}
	stale = J->sync_round - qr->round;
	if (stale > 0)
		DP_INFO("learner", "answer from id=%s for round %llu used in round %llu (stale by "
			"%llu)", o->id, (unsigned long long)qr->round,
			(unsigned long long)J->sync_round, (unsigned long long)stale);
	memcpy(J->round_ans + o->idx * J->p, grad, J->p * sizeof(double));
	o->round_has = true;
	o->round_rtt = rtt;
	o->iterations++;
	J->round_got++;
	J->answers++;
	dp_metrics_inc(J->st.iterations);
	dp_metrics_inc(o->m_iter);
	dp_metrics_observe(J->st.rtt, rtt);
	dp_metrics_observe(J->st.wait, qr->wait);
	rc = lrn_trace_row(J, J->answers, lrn_clock_wall(), o->id, qr->wait, rtt, eps_spent, stale);
	slot_free(J, qr);
	if (rc < 0) {
		stop(d, "error", "trace: %s", dp_error_detail(rc));
		return;
	}
	if (J->round_got >= quorum(J)) {
		round_close(J, now, d);
		if (d->act == LRN_ACT_STOP)
			return;
	}
	if (!has_answers(J, o) && J->k_done < lrn_state_goal(J)) {
		mark_exhausted(J, o, "its last answer was given", d);
		return;
	}
	decide(d, LRN_ACT_PUMP, NULL);
}

void lrn_sched_answer(struct lrn_job *J, struct lrn_owner *o, uint64_t k, const double *grad,
		      double eps_spent, double now, struct lrn_decision *d)
{
	struct lrn_query *qr;
	double rtt;
	uint64_t stale;
	int rc;

	DP_REQUIRE(J != NULL && o != NULL && d != NULL);
	decide(d, LRN_ACT_NONE, NULL);
	qr = slot_find(J, o->idx, k);
	if (qr == NULL) {
		DP_WARN("learner", "answer from id=%s for k=%llu ignored: no such query in flight",
			o->id, (unsigned long long)k);
		return;
	}
	rtt = now - qr->sent;
	if (LRN_SYNC(J)) {
		sync_answer(J, o, qr, grad, eps_spent, now, rtt, d);
		return;
	}
	/* Updates applied since bar was taken (docs/learnerd.md §4). */
	stale = J->k_done - qr->built_k;
	lrn_state_apply(J, qr, grad);
	o->eps_spent = eps_spent;
	dp_metrics_inc(J->st.iterations);
	dp_metrics_inc(o->m_iter);
	dp_metrics_set(o->m_eps, eps_spent);
	dp_metrics_observe(J->st.rtt, rtt);
	dp_metrics_observe(J->st.wait, qr->wait);
	DP_DEBUG("learner", "iteration k=%llu id=%s query=%llu rtt=%.6f", (unsigned long long)J->k_done,
		 o->id, (unsigned long long)k, rtt);
	rc = lrn_trace_row(J, J->k_done, lrn_clock_wall(), o->id, qr->wait, rtt, eps_spent, stale);
	slot_free(J, qr);
	if (rc < 0) {
		stop(d, "error", "trace: %s", dp_error_detail(rc));
		return;
	}
	lrn_snapshot_take(J);
	if (J->s->checkpoint_every > 0 && J->k_done % J->s->checkpoint_every == 0 &&
	    J->k_done < J->T) {
		rc = lrn_checkpoint_save(J, false);
		if (rc < 0) {
			stop(d, "error", "checkpoint: %s", dp_error_detail(rc));
			return;
		}
	}
	/* An owner that has given its last answer will not ask again: knowing
	 * it now lets the stall and exhaustion checks see it. */
	if (!has_answers(J, o)) {
		mark_exhausted(J, o, "its last answer was given", d);
		return;
	}
	decide(d, LRN_ACT_PUMP, NULL);
}

void lrn_sched_refuse(struct lrn_job *J, struct lrn_owner *o, uint64_t k, const char *reason,
		      struct lrn_decision *d)
{
	struct lrn_query *qr;
	char why[320];

	DP_REQUIRE(J != NULL && o != NULL && reason != NULL && d != NULL);
	qr = slot_find(J, o->idx, k);
	dp_metrics_inc(J->st.refusals);
	DP_WARN("learner", "owner id=%s refused k=%llu reason=\"%s\"%s", o->id, (unsigned long long)k,
		reason, qr ? "" : " (no such query in flight)");
	if (qr)
		slot_free(J, qr);
	snprintf(why, sizeof(why), "refused: %s", reason);
	mark_exhausted(J, o, why, d);
	/* Strict sync needs every owner in every round. */
	if (LRN_SYNC(J) && quorum(J) == J->n_planned && d->act != LRN_ACT_STOP)
		stop(d, "refused", "owner %s refused round %llu (%s): a sync round needs every "
		     "owner", o->id, (unsigned long long)J->sync_round, reason);
}

/* Owner o has nothing left to spend on this job (lrn_state_no_budget):
 * exhausted, and a job it has no ledger for is refused for good. */
static void no_budget(struct lrn_job *J, struct lrn_owner *o, struct lrn_decision *d)
{
	char why[300];

	/* Another job's owner is sent away below: it leaves. */
	snprintf(why, sizeof(why), "%sits Hello leaves no budget for this job (epsilon_left=%.9g "
		 "lifetime_left=%.9g, the floor is %g)%s", o->same_job ? "" : "it left: ",
		 o->eps_left, o->lifetime_left, LRN_EPSILON_MIN,
		 o->same_job ? "" : J->started ? ": not asked in this job" : ": left out of the plan");
	mark_exhausted(J, o, why, d);
	if (d->act == LRN_ACT_STOP || o->same_job)
		return;
	/* This job would be the owner's next: with its lifetime budget spent
	 * no job can be answered, and waiting for it would only stall ours. */
	decide(d, LRN_ACT_DROP, o);
	d->goodbye = DPASYNC__GOODBYE_CODE__GOODBYE_BUDGET_SPENT;
	snprintf(d->why, sizeof(d->why), "owner %s has no budget left for job %s: its lifetime "
		 "budget left is %.9g, below %g: no job can be answered until its "
		 "lifetime-epsilon is raised", o->id, J->s->job, o->lifetime_left, LRN_EPSILON_MIN);
}

void lrn_sched_hello(struct lrn_job *J, struct lrn_owner *o, struct lrn_decision *d)
{
	uint64_t cap;

	DP_REQUIRE(J != NULL && o != NULL && d != NULL);
	/* Left out when the job was planned: it is not in n, N or the plan,
	 * and cannot join this job (docs/planner.md §1 "Budget left"). */
	if (o->left_out) {
		if (lrn_state_no_budget(o) && !o->same_job) {
			no_budget(J, o, d);
			return;
		}
		decide(d, LRN_ACT_DROP, o);
		d->goodbye = DPASYNC__GOODBYE_CODE__GOODBYE_JOB_OVER;
		snprintf(d->why, sizeof(d->why), "job %s was planned without owner %s (it had no "
			 "budget left when the job started)", J->s->job, o->id);
		return;
	}
	if (lrn_state_no_budget(o)) {
		no_budget(J, o, d);
		return;
	}
	/* The owner's ledger is the authority on its budget: a reconnecting
	 * owner with answers left is usable again even after a Refuse. */
	cap = lrn_state_cap(J, o);
	if (cap != 0 && o->answers_given >= cap) {
		mark_exhausted(J, o, "no answers left per its Hello", d);
		return;   /* PUMP: it may still complete the start */
	}
	if (o->exhausted) {
		DP_INFO("learner", "owner id=%s has answers left again (%llu of %llu given)", o->id,
			(unsigned long long)o->answers_given, (unsigned long long)cap);
		lrn_state_count(J, o, -1);
		o->exhausted = false;
		lrn_state_count(J, o, 1);
	}
	decide(d, LRN_ACT_PUMP, NULL);
}

void lrn_sched_spent(struct lrn_job *J, struct lrn_owner *o, struct lrn_decision *d)
{
	DP_REQUIRE(J != NULL && o != NULL && d != NULL);
	mark_exhausted(J, o, "it left: its lifetime budget is spent", d);
}

/* The idle timeout: STOP once no owner could be queried for that long. */
static void stall_check(struct lrn_job *J, double now, struct lrn_decision *d)
{
	char msg[400], *p = msg;
	size_t left = sizeof(msg), away = 0, exh = 0;
	bool busy = J->inflight > 0;
	int w;

	/* Runs on every scheduling pass: stop at the first usable owner (a
	 * full scan of N per iteration cost 22 % of learnerd at 10,000
	 * owners, docs/scale.md §5), starting where the last one was found
	 * (owners exhausted early stay so: not passed over again and again),
	 * and not at all while the gate is shut, when it decides nothing. */
	for (size_t n = 0; J->gate_open && !busy && n < J->N; n++) {
		size_t i = (J->usable_next + n) % J->N;

		busy = usable(J, &J->owners[i]);
		if (busy)
			J->usable_next = i;
	}
	if (J->gate_open && busy) {
		J->stall_since = -1;
		return;
	}
	if (J->stall_since < 0)
		J->stall_since = now;
	if (!(J->s->idle_timeout > 0 && now - J->stall_since >= J->s->idle_timeout))
		return;
	for (size_t i = 0; i < J->N; i++) {
		away += !J->owners[i].connected;
		exh += J->owners[i].exhausted;
	}
	w = snprintf(p, left, "no owner could be queried for %.1fs (idle-timeout) at k=%llu of "
		     "T=%llu: %zu connected, %zu away, %zu exhausted", now - J->stall_since,
		     (unsigned long long)J->k_done, (unsigned long long)J->T, connected(J), away, exh);
	p += w;
	left -= (size_t)w;
	if (!J->started) {
		w = snprintf(p, left, "; never said Hello:");
		/* w is 0 after an owner that did: the list goes on past it. */
		for (size_t i = 0; i < J->N && w >= 0 && (size_t)w < left; i++) {
			p += w;
			left -= (size_t)w;
			w = J->owners[i].ever_hello ? 0 : snprintf(p, left, " %s", J->owners[i].id);
		}
	}
	stop(d, "idle-timeout", "%s", msg);
}

/* A counter: checked up to three times on every pass before the plan,
 * a storm of Hellos included. */
static bool all_said_hello(const struct lrn_job *J)
{
	return J->n_ever_hello == J->N;
}

/* The value most owners have, of those that have one: what value() gives
 * (NULL: the owner is not counted; buf, 16 bytes, is the owner's own and
 * lives through the vote), counted in one pass through a hash map, O(N)
 * (a count per owner was O(N^2): 10^10 comparisons at 100,000 owners,
 * docs/scale.md §5.1).  best: the first owner in `owners` with the most
 * frequent value (ties: the value an earlier owner has), J->N when no
 * owner has one; best_n: how many have it; with: how many have one. */
struct vote {
	size_t best, best_n, with;
};

static int vote(const struct lrn_job *J, const char *(*value)(const struct lrn_owner *, char *),
		struct vote *v)
{
	size_t *count = calloc(J->N, sizeof(*count)), *first = calloc(J->N, sizeof(*first));
	char (*buf)[16] = calloc(J->N, sizeof(*buf));
	size_t slots = 0, top = 0;
	dp_idmap *m = NULL;
	int rc = 0;

	*v = (struct vote){ J->N, 0, 0 };
	if (count == NULL || first == NULL || buf == NULL || dp_idmap_new(J->N, &m) < 0) {
		rc = dp_error_set(DP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < J->N; i++) {
		const char *k = value(&J->owners[i], buf[i]);
		long s;

		if (k == NULL)
			continue;
		v->with++;
		s = dp_idmap_get(m, k);
		if (s < 0) {
			s = (long)slots++;
			dp_idmap_put(m, k, (size_t)s, NULL);
			first[s] = i;
		}
		count[s]++;
	}
	/* Slots are numbered in the order of their first owner: the first
	 * slot with the most owners holds the earliest of the tied values. */
	for (size_t s = 0; s < slots; s++)
		if (count[s] > count[top])
			top = s;
	if (slots > 0) {
		v->best = first[top];
		v->best_n = count[top];
	}
out:
	dp_idmap_free(m);
	free(count);
	free(first);
	free(buf);
	return rc;
}

static const char *features_of(const struct lrn_owner *o, char *buf)
{
	snprintf(buf, 16, "%u", o->n_features);
	return buf;
}

static const char *schema_of(const struct lrn_owner *o, char *buf)
{
	(void)buf;
	return o->schema[0] != '\0' ? o->schema : NULL;
}

static const char *schema_here(const struct lrn_owner *o, char *buf)
{
	return o->connected && o->hello ? schema_of(o, buf) : NULL;
}

/* p not configured: every owner has said Hello; fix p at the n_features
 * most of them said (ties: the first owner in `owners` among the tied
 * values), or, while some disagree, forget their Hellos (the plan waits
 * for them again) and DROP the first of them still connected with a
 * Goodbye BAD_DATA.  NONE when nothing is left to do; STOP if p cannot be
 * allocated. */
static void agree_on_p(struct lrn_job *J, struct lrn_decision *d)
{
	struct vote v;
	size_t best_n;
	uint32_t p;
	int rc;

	decide(d, LRN_ACT_NONE, NULL);
	rc = vote(J, features_of, &v);
	if (rc < 0) {
		stop(d, "error", "agreeing on p: %s", dp_error_detail(rc));
		return;
	}
	best_n = v.best_n;
	p = J->owners[v.best].n_features;
	if (best_n == J->N) {
		rc = lrn_state_set_p(J, p);
		if (rc < 0) {
			stop(d, "error", "fixing p = %u: %s", p, dp_error_detail(rc));
			return;
		}
		DP_INFO("learner", "p=%zu from the Hellos of all %zu owners", J->p, J->N);
		return;
	}
	for (size_t i = 0; i < J->N; i++) {
		struct lrn_owner *o = &J->owners[i];

		if (o->n_features == p)
			continue;
		lrn_state_count(J, o, -1);
		o->ever_hello = false;
		lrn_state_count(J, o, 1);
		if (o->connected && o->hello) {
			/* Permanent: the owner's data has other columns; a
			 * reconnect would say the same (Goodbye BAD_DATA, the
			 * owner exits 2 instead of retrying for ever). */
			decide(d, LRN_ACT_DROP, o);
			d->goodbye = DPASYNC__GOODBYE_CODE__GOODBYE_BAD_DATA;
			snprintf(d->why, sizeof(d->why), "Hello n_features %u differs from p = %u said "
				 "by %zu of the %zu owners: give owner %s data with the same feature "
				 "columns (and bias setting) as the others", o->n_features, p, best_n,
				 J->N, o->id);
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
static void agree_on_schema(struct lrn_job *J, struct lrn_decision *d)
{
	size_t best, best_n, with;
	struct vote v;
	int rc;

	decide(d, LRN_ACT_NONE, NULL);
	if (J->schema_fp[0] != '\0')
		return;
	rc = vote(J, schema_of, &v);
	if (rc < 0) {
		stop(d, "error", "agreeing on the schema: %s", dp_error_detail(rc));
		return;
	}
	best = v.best;
	best_n = v.best_n;
	with = v.with;
	if (best == J->N)
		return;   /* no owner sent one */
	if (best_n == with) {
		memcpy(J->schema_fp, J->owners[best].schema, sizeof(J->schema_fp));
		snprintf(J->schema_from, sizeof(J->schema_from), "%s", J->owners[best].id);
		DP_INFO("learner", "schema=%s from the Hellos of %zu owners", J->schema_fp, best_n);
		lrn_state_adopt_summary(J, &J->owners[best], true);
		return;
	}
	for (size_t i = 0; i < J->N; i++) {
		struct lrn_owner *o = &J->owners[i];

		if (o->schema[0] == '\0' || strcmp(o->schema, J->owners[best].schema) == 0)
			continue;
		lrn_state_count(J, o, -1);
		o->ever_hello = false;
		lrn_state_count(J, o, 1);
		if (o->connected && o->hello) {
			decide(d, LRN_ACT_DROP, o);
			d->goodbye = DPASYNC__GOODBYE_CODE__GOODBYE_SCHEMA_MISMATCH;
			snprintf(d->why, sizeof(d->why), "schema mismatch: owner %s has schema %.23s... "
				 "but %zu of the %zu owners (first %s) have %.23s...: feature names, "
				 "their order, the target or the schema file differ", o->id, o->schema,
				 best_n, J->N, J->owners[best].id, J->owners[best].schema);
			lrn_state_summary_why(o, J->owners[best].schema_sum,
					      J->owners[best].schema_sum_len, d->why, sizeof(d->why));
			return;
		}
	}
}

/* A started job without a fingerprint (a checkpoint of version 1, or a job
 * whose owners sent none when it was planned) learns it again as the plan
 * does, never from the first Hello alone (docs/protocol.md §5 "Schema
 * agreement"): the fingerprint a strict majority of the owners send, or,
 * once every owner is connected with its Hello, the one most of them send
 * (ties: the first in `owners`).  Until then an owner that sent one waits
 * for its Welcome; the welcome pass refuses those with another. */
static void learn_schema(struct lrn_job *J)
{
	size_t best, best_n, here = J->n_hello;
	struct vote v;

	/* Out of memory: learnt at a later pass. */
	if (vote(J, schema_here, &v) < 0)
		return;
	best = v.best;
	best_n = v.best_n;
	if (best == J->N || !(2 * best_n > J->N || here == J->N))
		return;
	memcpy(J->schema_fp, J->owners[best].schema, sizeof(J->schema_fp));
	snprintf(J->schema_from, sizeof(J->schema_from), "%s", J->owners[best].id);
	DP_INFO("learner", "schema=%s from the Hellos of %zu of the %zu owners (a started job)",
		J->schema_fp, best_n, J->N);
	lrn_state_adopt_summary(J, &J->owners[best], true);
}

/* Sync: start the next round when none is served, then ask every owner
 * of it that has not answered, is connected and has no query out. */
static void sync_next(struct lrn_job *J, double now, struct lrn_decision *d)
{
	if (J->sync_round == 0)
		round_open(J, now);
	for (size_t i = 0; i < J->N; i++) {
		struct lrn_owner *o = &J->owners[i];

		if (o->round_has || o->inflight || !usable(J, o))
			continue;
		prepare(J, o, 0.0, d);
		return;
	}
}

void lrn_sched_next(struct lrn_job *J, double now, struct lrn_decision *d)
{
	int rc;

	DP_REQUIRE(J != NULL && d != NULL);
	decide(d, LRN_ACT_NONE, NULL);
	/* The plan needs every owner's n_i, eps_i and rate_i: it is made at
	 * the last first Hello, and no Welcome goes out before it. */
	if (!J->started && J->p == 0 && all_said_hello(J)) {
		agree_on_p(J, d);
		if (d->act != LRN_ACT_NONE)
			return;
	}
	if (!J->started && all_said_hello(J)) {
		agree_on_schema(J, d);
		if (d->act != LRN_ACT_NONE)
			return;
	}
	if (!J->started && J->p > 0 && all_said_hello(J)) {
		/* A forecast for other rows would plan for them. */
		rc = lrn_plan_check_public(J);
		if (rc < 0) {
			stop(d, "error", "%s", dp_error_detail(rc));
			d->config = true;
			return;
		}
		rc = lrn_plan_start(J);
		if (rc == 0)
			rc = lrn_checkpoint_save(J, false);
		if (rc < 0) {
			stop(d, "error", "starting training: %s", dp_error_detail(rc));
			return;
		}
		lrn_snapshot_take(J);   /* k = 0: theta at training start */
	}
	if (J->started && J->k_done >= lrn_state_goal(J)) {
		decide(d, LRN_ACT_DONE, NULL);
		return;
	}
	if (J->started && J->n_to_welcome > 0 && J->schema_fp[0] == '\0')
		learn_schema(J);
	/* A scan of N only while someone waits for a Welcome: not on every
	 * iteration (docs/scale.md §5); from after the last owner welcomed, so
	 * that the welcomes of a storm cost one pass over N in all. */
	for (size_t n = 0; J->started && J->n_to_welcome > 0 && n < J->N; n++) {
		size_t i = (J->welcome_next + n) % J->N;
		struct lrn_owner *o = &J->owners[i];

		if (!(o->connected && o->hello && !o->welcomed) || o->left_out)
			continue;
		if (o->schema[0] != '\0' && J->schema_fp[0] == '\0')
			continue;   /* waits: the fingerprint is being learned */
		if (o->schema[0] != '\0' && strcmp(o->schema, J->schema_fp) != 0) {
			decide(d, LRN_ACT_DROP, o);
			d->goodbye = DPASYNC__GOODBYE_CODE__GOODBYE_SCHEMA_MISMATCH;
			snprintf(d->why, sizeof(d->why), "schema mismatch: owner %s has schema %.23s... "
				 "but the job's (from owner %s) is %.23s...: feature names, their order, "
				 "the target or the schema file differ", o->id, o->schema,
				 J->schema_from, J->schema_fp);
			lrn_state_summary_why(o, J->schema_sum, J->schema_sum_len, d->why,
					      sizeof(d->why));
			return;
		}
		J->welcome_next = (i + 1) % J->N;
		decide(d, LRN_ACT_WELCOME, o);
		return;
	}
	if (J->started && !J->gate_open && present(J) >= min_owners(J)) {
		J->gate_open = true;
		DP_INFO("learner", "queries start k=%llu connected=%zu", (unsigned long long)J->k_done,
			connected(J));
	}
	if (J->gate_open && LRN_SYNC(J)) {
		sync_next(J, now, d);
		if (d->act != LRN_ACT_NONE)
			return;
	}
	if (J->gate_open && J->s->mode == LRN_MODE_REQUEST) {
		while (room(J) && J->fifo_len > 0) {
			double t = 0;
			struct lrn_owner *o = fifo_pop(J, &t);

			DP_REQUIRE(o != NULL);   /* fifo_len > 0: a live entry */
			if (!usable(J, o))
				continue;
			prepare(J, o, now - t, d);
			return;
		}
	}
	if (J->round) {
		while (J->round_j < J->N && room(J)) {
			struct lrn_owner *o = &J->owners[(J->bcast_next + J->round_j) % J->N];

			J->round_j++;
			if (!usable(J, o) || o->inflight)
				continue;
			prepare(J, o, 0.0, d);
			return;
		}
		/* Fairness when max-inflight < N: the next round starts after
		 * the last owner asked. */
		J->round = false;
		if (J->round_last != SIZE_MAX)
			J->bcast_next = (J->round_last + 1) % J->N;
	}
	stall_check(J, now, d);
	lrn_stats_gauges(J);
}

bool lrn_sched_round(struct lrn_job *J)
{
	DP_REQUIRE(J != NULL);
	if (!J->gate_open)
		return false;
	J->round = true;
	J->round_j = 0;
	J->round_last = SIZE_MAX;
	return true;
}

/* Sync: the round outlived round-timeout: STOP naming who did not answer. */
static void round_overdue(struct lrn_job *J, double now, struct lrn_decision *d)
{
	char names[400];
	size_t used = 0;

	names[0] = '\0';
	for (size_t i = 0; i < J->N; i++) {
		const struct lrn_owner *o = &J->owners[i];
		int n;

		if (o->round_has || o->left_out)
			continue;
		if (used >= sizeof(names))
			continue;
		n = snprintf(names + used, sizeof(names) - used, "%s%s%s", used ? " " : "", o->id,
			     !o->connected ? "(away)" : "");
		used += n > 0 ? (size_t)n : 0;
	}
	stop(d, "round-timeout", "round %llu of %llu not complete after %.1fs (round-timeout): "
	     "%zu of %zu owners answered, %zu needed; missing: %s", (unsigned long long)J->sync_round,
	     (unsigned long long)lrn_state_goal(J), now - J->round_start, J->round_got,
	     J->n_planned, quorum(J), names);
}

void lrn_sched_expired(struct lrn_job *J, double now, struct lrn_decision *d)
{
	DP_REQUIRE(J != NULL && d != NULL);
	decide(d, LRN_ACT_NONE, NULL);
	if (LRN_SYNC(J) && J->sync_round > 0 && J->s->round_timeout > 0 &&
	    now - J->round_start >= J->s->round_timeout) {
		round_overdue(J, now, d);
		return;
	}
	/* Only owners still connected: the drop clears the query, so each is
	 * reported once. */
	for (size_t i = 0; i < slots(J); i++) {
		struct lrn_query *qr = &J->q[i];
		struct lrn_owner *o = &J->owners[qr->owner];

		if (qr->used && o->connected && now - qr->sent >= J->s->query_timeout) {
			dp_metrics_inc(J->st.timeouts);
			decide(d, LRN_ACT_DROP, o);
			snprintf(d->why, sizeof(d->why), "query k=%llu not answered within %gs",
				 (unsigned long long)qr->qid, J->s->query_timeout);
			return;
		}
	}
	for (size_t i = 0; i < J->N; i++) {
		struct lrn_owner *o = &J->owners[i];

		if (o->connected && !o->hello && now - o->conn_since >= J->s->hello_timeout) {
			decide(d, LRN_ACT_DROP, o);
			snprintf(d->why, sizeof(d->why), "no Hello within hello-timeout");
			return;
		}
	}
}
