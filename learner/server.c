/* SPDX-License-Identifier: Apache-2.0 */
/* learnerd: the network side (docs/protocol.md §1, §6): the TLS listener,
 * admission of owners, message dispatch, the Welcome, Query and Done
 * messages, and the timers that act on connections.
 *
 * Whom to ask and whom to drop is sched.c's decision (struct
 * lrn_decision); this file carries it out.  It ends the job only through
 * L->on_end, the callback main.c registers.  Owner i's connection is
 * L->conn[i]; its job record (L->job.owners[i]: connected, hello,
 * welcomed) follows it, and is each connection's dp_conn_data once
 * admitted.  The callbacks reach L through the listener's user pointer
 * (dp_conn_user). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/log.h"
#include "common/core/mem.h"
#include "common/net/frame.h"
#include "common/net/nofile.h"
#include "learner/lrn.h"

/* Tick of the timeout checks: timeouts fire at most this late. */
#define TICK_MS 50

static struct lrn_owner *find_owner(struct lrn *L, const char *id)
{
	return lrn_state_find(&L->job, id);
}

/* Tell the peer on c why it is closed (docs/protocol.md §5 "Goodbye");
 * the close that follows flushes it. */
static void say_goodbye(dp_conn *c, Dpasync__GoodbyeCode code, const char *text)
{
	Dpasync__Envelope env;
	Dpasync__Goodbye g;
	char t[DP_FRAME_MAX_STR + 1];

	dp_frame_goodbye(&env, &g, code, text, t);
	if (dp_conn_send(c, &env) < 0)
		DP_DEBUG("conn", "goodbye to peer=%s not sent", dp_conn_peer_addr(c));
}

static void drop(struct lrn *L, struct lrn_owner *o, const char *reason);

/* Refuse owner o for good with a reason both sides log: the owner exits 2
 * (docs/ownerd.md "Exit codes"). */
static void refuse_owner(struct lrn *L, struct lrn_owner *o, Dpasync__GoodbyeCode code,
			 const char *reason)
{
	if (L->conn[o->idx] != NULL)
		say_goodbye(L->conn[o->idx], code, reason);
	dp_metrics_inc(L->job.st.rejected);
	drop(L, o, reason);
}

/* Owner o no longer has a connection (the caller closes it). */
static void forget_conn(struct lrn *L, struct lrn_owner *o)
{
	L->conn[o->idx] = NULL;
	lrn_state_count(&L->job, o, -1);
	o->connected = false;
	o->hello = false;
	o->welcomed = false;
	lrn_state_count(&L->job, o, 1);
}

/* Forget owner o's connection and close it (a reason for the log). */
static void drop(struct lrn *L, struct lrn_owner *o, const char *reason)
{
	dp_conn *c = L->conn[o->idx];

	if (c == NULL)
		return;
	DP_WARN("conn", "closing peer=%s id=%s reason=\"%s\"", dp_conn_peer_addr(c), o->id, reason);
	forget_conn(L, o);
	lrn_sched_owner_gone(&L->job, o);
	/* conn data stays o: on_close still counts the connection down. */
	dp_conn_close(c);
	lrn_stats_gauges(&L->job);
}

static void send_query(struct lrn *L, const struct lrn_decision *d)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Query qm = DPASYNC__QUERY__INIT;
	struct lrn_query *qr = d->qr;
	double sent;
	int rc;

	qm.k = qr->qid;
	qm.n_theta = L->job.p;
	qm.theta = qr->bar;
	env.version = DP_PROTO_VERSION;
	env.msg_case = DPASYNC__ENVELOPE__MSG_QUERY;
	env.query = &qm;
	/* The round trip starts before the bytes can leave: taken after the
	 * send, a preemption right after the write shortened it. */
	sent = lrn_clock_mono();
	rc = dp_conn_send(L->conn[d->o->idx], &env);
	if (rc < 0) {
		char why[300];

		snprintf(why, sizeof(why), "sending query k=%llu failed: %s",
			 (unsigned long long)qm.k, dp_error_detail(rc));
		drop(L, d->o, why);
		return;
	}
	lrn_sched_sent(&L->job, qr, sent);
}

static void send_welcome(struct lrn *L, struct lrn_owner *o)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Welcome w = DPASYNC__WELCOME__INIT;
	dp_frame_limits lim = { 0 };
	int rc;

	DP_REQUIRE(L->job.started && L->conn[o->idx] != NULL);
	w.job = L->s->job;
	w.model = (char *)dp_model_name(L->job.model);
	w.t = L->job.T;
	w.n = (uint32_t)L->job.n_planned;
	w.n_total = L->job.n_total;
	w.rho = L->job.rho;
	w.lambda = L->s->lambda;
	w.theta_max = L->s->theta_max;
	w.clip_l1 = L->job.clip;
	/* The mechanism (docs/protocol.md §5 "Mechanisms"): with Gaussian the
	 * job's clip bounds each gradient's L2 norm; clip_l1 keeps it too, for
	 * the checks of an owner that predates the field (never sent one: it
	 * was refused at its Hello). */
	if (L->s->mechanism == DP_MECH_GAUSSIAN) {
		w.mechanism = DPASYNC__MECHANISM__MECHANISM_GAUSSIAN;
		w.clip_l2 = L->job.clip;
	}
	/* Sync rounds are pushed by the learner like broadcasts: the owner
	 * answers each Query and never asks (docs/learnerd.md "Sync rounds"). */
	w.mode = L->s->mode == LRN_MODE_REQUEST ? DPASYNC__MODE__MODE_REQUEST
						: DPASYNC__MODE__MODE_BROADCAST;
	w.p = (uint32_t)L->job.p;
	w.k_done = L->job.k_done;
	w.answers_cap = o->planned_cap;
	w.bias = L->s->bias ? 2 : 1;
	/* p is fixed now, perhaps after this owner's Hello: its vectors must
	 * have that length from here on. */
	lim.p = L->job.p;
	dp_conn_set_limits(L->conn[o->idx], &lim);
	env.version = DP_PROTO_VERSION;
	env.msg_case = DPASYNC__ENVELOPE__MSG_WELCOME;
	env.welcome = &w;
	/* Marked either way: a failed send closes the connection. */
	lrn_state_count(&L->job, o, -1);
	o->welcomed = true;
	lrn_state_count(&L->job, o, 1);
	rc = dp_conn_send(L->conn[o->idx], &env);
	if (rc < 0)
		DP_WARN("conn", "welcome to id=%s failed: %s", o->id, dp_error_detail(rc));
	else
		DP_DEBUG("conn", "welcome sent id=%s T=%llu K=%llu", o->id, (unsigned long long)L->job.T,
			 (unsigned long long)o->planned_cap);
}

static void pump_at(struct lrn *L, double now);

static void carry_out(struct lrn *L, const struct lrn_decision *d)
{
	switch (d->act) {
	case LRN_ACT_NONE:
		break;
	case LRN_ACT_PUMP:
		pump_at(L, lrn_clock_mono());
		break;
	case LRN_ACT_WELCOME:
		send_welcome(L, d->o);
		break;
	case LRN_ACT_QUERY:
		send_query(L, d);
		break;
	case LRN_ACT_DROP:
		if (d->goodbye != 0) {
			refuse_owner(L, d->o, (Dpasync__GoodbyeCode)d->goodbye, d->why);
			break;
		}
		drop(L, d->o, d->why);
		break;
	case LRN_ACT_DONE:
		L->on_end(L, LRN_END_DONE, NULL, NULL);
		break;
	case LRN_ACT_STOP:
		L->on_end(L, d->config ? LRN_END_CONFIG : LRN_END_FAIL, d->reason, d->why);
		break;
	}
}

/* Carry out what decide (a question to sched.c) finds to do at `now`,
 * until it has nothing left or the job ends. */
static void carry_all(struct lrn *L, double now,
		      void (*decide)(struct lrn_job *J, double now, struct lrn_decision *d))
{
	struct lrn_decision d;

	while (L->phase == LRN_RUN) {
		decide(&L->job, now, &d);
		if (d.act == LRN_ACT_NONE)
			break;
		carry_out(L, &d);
	}
}

/* Everything sched.c finds to do at `now`. */
static void pump_at(struct lrn *L, double now)
{
	carry_all(L, now, lrn_sched_next);
}

void lrn_server_pump(struct lrn *L)
{
	DP_REQUIRE(L != NULL && L->on_end != NULL);
	pump_at(L, lrn_clock_mono());
}

void lrn_server_free(struct lrn *L)
{
	DP_REQUIRE(L != NULL);
	free(L->conn);
	L->conn = NULL;
}

static int on_handshake(dp_conn *c, const char *peer_id)
{
	struct lrn *L = dp_conn_user(c);
	struct lrn_owner *o;

	if (L->phase != LRN_RUN) {
		DP_INFO("conn", "closing peer=%s id=%s reason=\"learner is shutting down\"",
			dp_conn_peer_addr(c), peer_id);
		/* Done: the job is over for good; a stop may be resumed. */
		if (L->finished)
			say_goodbye(c, DPASYNC__GOODBYE_CODE__GOODBYE_JOB_OVER,
				    "the learner's job has ended");
		else
			say_goodbye(c, DPASYNC__GOODBYE_CODE__GOODBYE_RESTARTING,
				    "the learner is stopping (the job may be resumed)");
		return 1;
	}
	o = find_owner(L, peer_id);
	if (o == NULL) {
		char why[300];

		DP_WARN("conn", "closing peer=%s id=%s reason=\"identity not in owners\"",
			dp_conn_peer_addr(c), peer_id);
		snprintf(why, sizeof(why), "identity '%s' is not one of this job's owners", peer_id);
		say_goodbye(c, DPASYNC__GOODBYE_CODE__GOODBYE_UNKNOWN_IDENTITY, why);
		dp_metrics_inc(L->job.st.rejected);
		return 1;
	}
	if (L->conn[o->idx] != NULL) {
		DP_WARN("conn", "closing peer=%s id=%s reason=\"identity already connected from %s\"",
			dp_conn_peer_addr(c), peer_id, dp_conn_peer_addr(L->conn[o->idx]));
		say_goodbye(c, DPASYNC__GOODBYE_CODE__GOODBYE_RESTARTING,
			    "this identity is already connected");
		dp_metrics_inc(L->job.st.rejected);
		return 1;
	}
	L->conn[o->idx] = c;
	lrn_state_count(&L->job, o, -1);
	o->connected = true;
	o->hello = false;
	o->welcomed = false;
	lrn_state_count(&L->job, o, 1);
	o->conn_since = lrn_clock_mono();
	dp_conn_set_data(c, o);
	L->open_conns++;
	lrn_memtrim_note(L, o->conn_since);
	DP_INFO("conn", "owner connected id=%s peer=%s", o->id, dp_conn_peer_addr(c));
	return 0;
}

static void close_handle(uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

/* The last handles the server holds: once closed, the loop can end. */
static void close_timers(struct lrn *L)
{
	if (!L->timers_init)
		return;
	close_handle((uv_handle_t *)&L->tick);
	close_handle((uv_handle_t *)&L->bcast);
}

static void on_close(dp_conn *c, int reason, const char *detail)
{
	struct lrn *L = dp_conn_user(c);
	struct lrn_owner *o = dp_conn_data(c);

	lrn_memtrim_note(L, lrn_clock_mono());
	if (o == NULL) {
		/* on_handshake refusals (DP_EPROTO) were logged there; a TLS
		 * failure (another CA, no certificate, timeout) is logged here so
		 * an operator sees who knocked. */
		if (reason == -ECONNABORTED)   /* evicted: counted and summarised by the listener */
			DP_DEBUG("conn", "handshake failed peer=%s reason=\"%s\"", dp_conn_peer_addr(c),
				 detail);
		else if (reason != 0 && reason != DP_EPROTO)
			DP_WARN("conn", "handshake failed peer=%s reason=\"%s\"", dp_conn_peer_addr(c),
				detail);
		return;
	}
	L->open_conns--;
	if (L->conn[o->idx] == c) {
		if (reason != 0)
			DP_WARN("conn", "closing peer=%s id=%s reason=\"%s\"", dp_conn_peer_addr(c),
				o->id, detail);
		else
			DP_INFO("conn", "owner disconnected id=%s peer=%s", o->id, dp_conn_peer_addr(c));
		forget_conn(L, o);
		lrn_sched_owner_gone(&L->job, o);
		lrn_stats_gauges(&L->job);
		pump_at(L, lrn_clock_mono());
	}
	if (L->open_conns == 0 && L->phase != LRN_RUN)
		close_timers(L);
}

/* What the Hello claims, as the job reads it: an owner names the job its
 * ledger counters belong to; this job's are its own plan's (a restarted
 * owner), another job's say nothing about this one (docs/protocol.md §5
 * "Jobs"). */
static void claims_of(const struct lrn *L, const Dpasync__Hello *h, struct lrn_claims *c)
{
	memset(c, 0, sizeof(*c));
	c->n_rows = h->n_rows;
	c->n_features = h->n_features;
	c->epsilon = h->epsilon;
	c->rate = h->rate;
	c->answers_given = h->answers_given;
	/* An owner without `job` (one that predates it) sends its ledger's K
	 * as answers_cap once bound: the cap it keeps either way. */
	c->own_cap = h->answers_cap;
	c->answers_cap = h->answers_cap;
	if (h->job != NULL && h->job[0] != '\0') {
		c->same_job = strcmp(h->job, L->s->job) == 0;
		if (c->same_job && h->job_answers_cap != 0)
			c->answers_cap = h->job_answers_cap;
		if (!c->same_job)
			c->answers_given = 0;
	}
	if (h->limits != NULL) {
		c->has_limits = true;
		c->epsilon_left = h->limits->epsilon_left;
		c->lifetime_left = h->limits->lifetime_left;
		c->theta_max = h->limits->theta_max;
		c->rho_left = h->limits->rho_left;
	}
	/* Absent from an owner that predates them: 0, Laplace only
	 * (docs/protocol.md §5 "Mechanisms"). */
	c->delta = h->delta;
	c->lifetime_delta = h->lifetime_delta;
	c->gaussian = h->gaussian;
}

static void on_hello(struct lrn *L, struct lrn_owner *o, const Dpasync__Hello *h)
{
	struct lrn_decision d;
	struct lrn_claims cl;
	dp_frame_limits lim = { 0 };
	char why[512];
	int rc, goodbye;

	if (o->hello) {
		drop(L, o, "second Hello on one connection");
		return;
	}
	if (strcmp(h->owner_id, o->id) != 0) {
		snprintf(why, sizeof(why), "Hello owner_id '%s' is not the certificate identity",
			 h->owner_id);
		drop(L, o, why);
		return;
	}
	/* The bias setting is the job's: checked first, since a bias column
	 * also changes p and the reason should say which setting differs. */
	if (h->schema != NULL && h->schema[0] != '\0' && h->bias != L->s->bias) {
		snprintf(why, sizeof(why), "schema mismatch: the job has bias=%s but owner %s has "
			 "bias=%s", L->s->bias ? "true" : "false", o->id, h->bias ? "true" : "false");
		refuse_owner(L, o, DPASYNC__GOODBYE_CODE__GOODBYE_SCHEMA_MISMATCH, why);
		return;
	}
	/* Claims out of range are this owner's problem, not the job's: its
	 * connection is closed with the reason (and a Goodbye when retrying
	 * cannot help: its data has another p, a claim is out of its bound)
	 * and the others go on. */
	claims_of(L, h, &cl);
	rc = lrn_state_check_hello(&L->job, o, &cl, &goodbye, why, sizeof(why));
	if (rc < 0 && goodbye != 0) {
		refuse_owner(L, o, (Dpasync__GoodbyeCode)goodbye, why);
		return;
	}
	if (rc < 0) {
		drop(L, o, why);
		return;
	}
	/* What a row means (docs/protocol.md §5 "Schema agreement"): every
	 * owner's fingerprint must be the job's, agreed on by the owners'
	 * Hellos and kept in the checkpoint.  An owner that predates the
	 * fingerprint sends none and is checked on p alone, as before. */
	if (lrn_state_keep_summary(o, h->schema_summary) < 0)
		DP_WARN("learner", "%s", dp_error_detail(DP_ENOMEM));
	if (h->schema != NULL && h->schema[0] != '\0' && L->job.schema_fp[0] != '\0' &&
	    strcmp(L->job.schema_fp, h->schema) != 0) {
		snprintf(why, sizeof(why), "schema mismatch: owner %s has schema %.23s... but the "
			 "job's (from owner %s) is %.23s...: feature names, their order, the target "
			 "or the schema file differ", o->id, h->schema, L->job.schema_from,
			 L->job.schema_fp);
		lrn_state_summary_why(o, L->job.schema_sum, L->job.schema_sum_len, why,
				      sizeof(why));
		refuse_owner(L, o, DPASYNC__GOODBYE_CODE__GOODBYE_SCHEMA_MISMATCH, why);
		return;
	}
	if (L->job.started && !o->left_out && h->n_rows != o->n_rows) {
		snprintf(why, sizeof(why), "Hello n_rows %llu differs from n_i %llu fixed when "
			 "training started", (unsigned long long)h->n_rows,
			 (unsigned long long)o->n_rows);
		drop(L, o, why);
		return;
	}
	lrn_state_take_hello(&L->job, o, &cl);
	snprintf(o->schema, sizeof(o->schema), "%s", h->schema != NULL ? h->schema : "");
	/* Once the job's fingerprint is fixed (a resumed job learns it
	 * again), the first summary that matches it is the job's. */
	if (L->job.schema_fp[0] != '\0')
		lrn_state_adopt_summary(&L->job, o, false);
	lrn_state_count(&L->job, o, -1);
	o->hello = true;
	o->ever_hello = true;
	lrn_state_count(&L->job, o, 1);
	lim.p = L->job.p;
	dp_conn_set_limits(L->conn[o->idx], &lim);
	if (isinf(h->epsilon))
		DP_WARN("learner", "owner id=%s has epsilon=inf: its answers carry no noise", o->id);
	DP_INFO("learner", "hello id=%s n_rows=%llu p=%u epsilon=%g rate=%g answers_cap=%llu "
		"answers_given=%llu epsilon_left=%.9g lifetime_left=%.9g theta_max=%g delta=%g "
		"gaussian=%s", o->id, (unsigned long long)h->n_rows, h->n_features, h->epsilon,
		h->rate, (unsigned long long)h->answers_cap, (unsigned long long)h->answers_given,
		o->eps_left, o->lifetime_left, o->theta_bound, h->delta,
		h->gaussian ? "yes" : "no");
	/* The Welcome follows from the pump once the plan exists: at once
	 * when it does, else at the last owner's first Hello. */
	lrn_stats_gauges(&L->job);
	lrn_sched_hello(&L->job, o, &d);
	carry_out(L, &d);
}

static void on_message(dp_conn *c, Dpasync__Envelope *m)
{
	struct lrn *L = dp_conn_user(c);
	struct lrn_owner *o = dp_conn_data(c);
	struct lrn_decision d;
	char why[128];

	if (o == NULL || L->conn[o->idx] != c || L->phase != LRN_RUN) {
		dp_frame_msg_free(m);
		return;
	}
	if (m->msg_case != DPASYNC__ENVELOPE__MSG_HELLO && !o->hello) {
		snprintf(why, sizeof(why), "%s before Hello", dp_frame_kind(m));
		drop(L, o, why);
		dp_frame_msg_free(m);
		return;
	}
	switch (m->msg_case) {
	case DPASYNC__ENVELOPE__MSG_HELLO:
		on_hello(L, o, m->hello);
		break;
	case DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST:
		lrn_sched_request(&L->job, o, lrn_clock_mono(), &d);
		carry_out(L, &d);
		break;
	case DPASYNC__ENVELOPE__MSG_ANSWER:
		o->answers_given = m->answer->answers_given;
		lrn_sched_answer(&L->job, o, m->answer->k, m->answer->gradient,
				 m->answer->epsilon_spent, lrn_clock_mono(), &d);
		carry_out(L, &d);
		break;
	case DPASYNC__ENVELOPE__MSG_REFUSE:
		lrn_sched_refuse(&L->job, o, m->refuse->k, m->refuse->reason, &d);
		carry_out(L, &d);
		break;
	case DPASYNC__ENVELOPE__MSG_GOODBYE:
		/* The owner leaves and says why (it exits 2 when the cause is
		 * its configuration, docs/ownerd.md "Exit codes"). */
		DP_ERROR("learner", "owner id=%s left code=%d reason=\"%s\"", o->id,
			 (int)m->goodbye->code, m->goodbye->text ? m->goodbye->text : "");
		dp_metrics_inc(L->job.st.rejected);
		snprintf(why, sizeof(why), "owner left: %.100s",
			 m->goodbye->text ? m->goodbye->text : "");
		drop(L, o, why);
		if (m->goodbye->code == DPASYNC__GOODBYE_CODE__GOODBYE_BUDGET_SPENT) {
			lrn_sched_spent(&L->job, o, &d);
			carry_out(L, &d);
		}
		break;
	default:
		snprintf(why, sizeof(why), "unexpected %s message from an owner", dp_frame_kind(m));
		drop(L, o, why);
		break;
	}
	dp_frame_msg_free(m);
}

static void on_tick(uv_timer_t *t)
{
	struct lrn *L = t->data;

	carry_all(L, lrn_clock_mono(), lrn_sched_expired);
	pump_at(L, lrn_clock_mono());
	lrn_memtrim_tick(L, lrn_clock_mono());
}

static void on_broadcast(uv_timer_t *t)
{
	struct lrn *L = t->data;

	if (L->phase != LRN_RUN || !lrn_sched_round(&L->job))
		return;
	pump_at(L, lrn_clock_mono());
}

int lrn_server_start(struct lrn *L)
{
	dp_conn_config cfg = { 0 };
	dp_nofile_limits lim;
	uint64_t bi;
	int rc;

	DP_REQUIRE(L != NULL && L->loop != NULL && L->ctx != NULL && L->on_end != NULL);
	L->conn = calloc(L->job.N, sizeof(*L->conn));
	if (L->conn == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	cfg.ctx = L->ctx;
	cfg.cb.on_handshake = on_handshake;
	cfg.cb.on_message = on_message;
	cfg.cb.on_close = on_close;
	cfg.data = NULL;   /* the owner, once on_handshake admits it */
	cfg.user = L;
	cfg.max_frame = (uint32_t)L->s->max_frame;
	/* Admission (docs/protocol.md §6): connections not yet admitted have
	 * their own limits and evict the oldest among them, so a flood of
	 * strangers holds few descriptors and never locks an owner out.  The
	 * limits are the settings plus one per owner: every owner comes back
	 * at once after a restart, all of them from one address behind a NAT.
	 * A handshake that is getting on is never evicted for a newer one of
	 * its address; it has stalled after a third of the handshake timeout
	 * without a byte.  On top of them, room for every owner and for its
	 * reconnect racing its old connection: the formula learnerd's open
	 * files are raised to (common/net/nofile.h). */
	cfg.handshake_timeout_ms = (uint32_t)ceil(L->s->handshake_timeout * 1000.0);
	lim = dp_nofile_listen(L->s->max_pending, L->s->max_pending_per_addr, L->job.N);
	cfg.pending_stall_ms = cfg.handshake_timeout_ms / 3;
	cfg.max_pending = lim.max_pending;
	cfg.max_pending_per_addr = lim.max_pending_per_addr;
	cfg.max_conns = lim.max_conns;
	cfg.m_pending = L->job.st.pending;
	cfg.m_evicted = L->job.st.evicted;
	cfg.m_refused = L->job.st.refused;
	rc = dp_conn_listen(L->loop, &cfg, L->listen_host, L->listen_port, &L->listener);
	if (rc < 0)
		return rc;
	L->tls_port = dp_listener_port(L->listener);

	bi = (uint64_t)ceil(L->s->broadcast_interval * 1000.0);
	if (bi == 0)
		bi = 1;
	uv_timer_init(L->loop, &L->tick);
	uv_timer_init(L->loop, &L->bcast);
	L->tick.data = L->bcast.data = L;
	L->timers_init = true;
	uv_timer_start(&L->tick, on_tick, TICK_MS, TICK_MS);
	if (L->s->mode == LRN_MODE_BROADCAST)
		uv_timer_start(&L->bcast, on_broadcast, bi, bi);
	return 0;
}

void lrn_server_close(struct lrn *L, bool done)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Done dm = DPASYNC__DONE__INIT;

	DP_REQUIRE(L != NULL && L->phase != LRN_RUN);
	if (L->listener) {
		dp_listener_close(L->listener);
		L->listener = NULL;
	}
	env.version = DP_PROTO_VERSION;
	env.msg_case = DPASYNC__ENVELOPE__MSG_DONE;
	env.done = &dm;
	dm.n_final_theta = L->job.p;
	dm.final_theta = (double *)lrn_state_output(&L->job);
	dm.t = L->job.T;
	for (size_t i = 0; i < L->job.N; i++) {
		struct lrn_owner *o = &L->job.owners[i];
		dp_conn *c = L->conn != NULL ? L->conn[i] : NULL;

		if (c == NULL)
			continue;
		if (done && o->welcomed) {
			int rc = dp_conn_send(c, &env);

			if (rc < 0)
				DP_WARN("conn", "done to id=%s failed: %s", o->id, dp_error_detail(rc));
			else
				DP_INFO("conn", "done sent id=%s", o->id);
		} else if (!done) {
			/* A stop, not a finish: whether it failed or was signalled,
			 * `--resume` may continue the job, so the owners keep
			 * reconnecting (docs/protocol.md §5 "Goodbye"). */
			say_goodbye(c, DPASYNC__GOODBYE_CODE__GOODBYE_RESTARTING,
				    L->exit_code == DP_EXIT_FAIL ?
				    "the learner stopped the job (it may be resumed)" :
				    "the learner is stopping (the job may be resumed)");
		}
		forget_conn(L, o);
		/* Graceful: Done and close_notify leave first, bounded by the
		 * connection's close linger. */
		dp_conn_close(c);
	}
	lrn_stats_gauges(&L->job);
	if (L->open_conns == 0)
		close_timers(L);
}
