/* SPDX-License-Identifier: Apache-2.0 */
/* ownerd: the connection to the learner.
 *
 * connect -> TLS -> Hello -> Welcome -> (UpdateRequest / Query / Answer)* -> Done.
 * The network layer of the daemon: it sends what answer.c decides, drives
 * the clock it owns, binds the budget at the first Welcome, and asks main
 * to stop through the callback main registered.  A problem with what the
 * learner sends closes this connection with a logged reason and the daemon
 * reconnects after a backoff, and so does an attempt that reached something
 * other than the verified learner (docs/ownerd.md "Reconnection"); a
 * problem with our own ledger stops the daemon (the ledger binds the job
 * for good). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/core/error.h"
#include "common/core/log.h"
#include "common/core/modelfile.h"

#include "common/net/schemasum.h"
#include "owner/own.h"

/* A failed attempt gets its own warn line while there are few; past
 * FAIL_LOG_BURST since the last Welcome, one line a minute at most, which
 * says how many failed unlogged since the line before (the metric counts
 * every one).  The backoff already spaces the attempts (5 s on average
 * once at its cap): this keeps a squatter on the learner's address from
 * writing 17,000 lines a day to the journal. */
#define FAIL_LOG_BURST     10
#define FAIL_LOG_EVERY_MS  60000

/* Why an attempt failed before the connection was established: the label
 * of dpasync_owner_connect_failures_total and of the log line.  From
 * FAIL_NOT_TLS on, something answered on the learner's address that was
 * not verified as the learner. */
enum fail_reason {
	FAIL_CONNECT,       /* connect refused or unreachable, a socket error */
	FAIL_RESOLVE,       /* the learner's name did not resolve */
	FAIL_TIMEOUT,       /* no connection or handshake within the timeout */
	FAIL_CLOSED,        /* closed or reset during the handshake */
	FAIL_NOT_TLS,       /* not a TLS peer (HTTP, learnerd's metrics port) */
	FAIL_NAME,          /* its certificate lacks server-name */
	FAIL_PEER_CERT,     /* its certificate refused by us (CA, CRL, pin, usage) */
	FAIL_REFUSED_CERT,  /* our certificate refused by it (an alert after the handshake) */
	FAIL_TLS,           /* any other TLS failure (an alert during the handshake) */
	FAIL_N
};

static const char *const fail_names[FAIL_N] = {
	"connect", "resolve", "timeout", "closed", "not_tls", "name", "peer_cert",
	"refused_cert", "tls",
};

static void on_retry(uv_timer_t *t);
static void tell_lifetime(struct own_client *c);

static void stop(struct own_client *c, int code)
{
	c->cfg.stop(c->cfg.stop_arg, code);
}

static int send_msg(struct own_client *c, const Dpasync__Envelope *m)
{
	int r;

	if (c->conn == NULL)
		return DP_ESTATE;
	r = dp_conn_send(c->conn, m);
	if (r < 0)
		DP_WARN("conn", "send %s failed peer=%s: %s", dp_frame_kind(m),
			dp_conn_peer_addr(c->conn), dp_error_detail(r));
	return r;
}

/* Close the current connection with a logged reason; the daemon
 * reconnects after a backoff. */
static void drop(struct own_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void drop(struct own_client *c, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	if (c->conn == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	DP_WARN("conn", "closing peer=%s reason=%s", dp_conn_peer_addr(c->conn), why);
	c->welcomed = false;    /* nothing more is handled on this connection */
	own_answer_cancel(c->cfg.answer);   /* an answer in flight is not sent */
	dp_conn_close(c->conn);
}

/* ---- backoff --------------------------------------------------------------- */

static void schedule_retry(struct own_client *c, enum dp_log_level level)
{
	double cap = OWN_BACKOFF_BASE_S, u = 0.5, delay;
	int r;

	for (unsigned i = 0; i < c->attempt && cap < OWN_BACKOFF_MAX_S; i++)
		cap *= 2;
	if (cap > OWN_BACKOFF_MAX_S)
		cap = OWN_BACKOFF_MAX_S;
	if (c->attempt < 64)
		c->attempt++;
	r = dp_rng_uniform(c->cfg.bits, &u);
	if (r < 0) {
		DP_ERROR("owner", "random generator failed: %s", dp_error_detail(r));
		stop(c, dp_exit_status(r, DP_EXIT_PHASE_RUN));
		return;
	}
	delay = u * cap;   /* full jitter */
	dp_log(level, "conn", "reconnecting in=%.3fs attempt=%u", delay, c->attempt);
	uv_timer_start(&c->retry_timer, on_retry, (uint64_t)llround(delay * 1000.0), 0);
}

/* Between jobs: 1 s doubling to 60 s, one line per step, so an owner
 * whose learner has finished polls at most once a minute. */
static void schedule_idle(struct own_client *c, enum dp_log_level level)
{
	double delay = OWN_IDLE_BASE_S;

	for (unsigned i = 0; i < c->idle_step && delay < OWN_IDLE_MAX_S; i++)
		delay *= 2;
	if (delay >= OWN_IDLE_MAX_S)
		delay = OWN_IDLE_MAX_S;
	else
		c->idle_step++;
	dp_log(level, "conn", "waiting for the next job: polling the learner in=%gs", delay);
	uv_timer_start(&c->retry_timer, on_retry, (uint64_t)llround(delay * 1000.0), 0);
}

/* quiet: the failure that led here was not logged (FAIL_LOG_BURST), so
 * neither is the delay. */
static void schedule_next(struct own_client *c, bool quiet)
{
	enum dp_log_level level = quiet ? DP_LOG_DEBUG : DP_LOG_INFO;

	if (c->idle)
		schedule_idle(c, level);
	else
		schedule_retry(c, level);
}

/* The job is over for this owner: with --once the daemon ends (code),
 * else it waits for the next job. */
static void job_over(struct own_client *c, int code)
{
	if (c->cfg.set->once) {
		stop(c, code);
		return;
	}
	/* Already waiting (a finished learner that is still closing said
	 * JOB_OVER again): the backoff goes on growing. */
	if (!c->idle)
		c->idle_step = 0;
	c->idle = true;
}

/* Tell the learner why we leave, then stop with exit 2: what is wrong
 * cannot be fixed by trying again, and the Welcome that showed it came
 * over a verified connection (DP_EREFUSED, docs/design.md §10 "Exit
 * status"). */
static void leave(struct own_client *c, Dpasync__GoodbyeCode code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void leave(struct own_client *c, Dpasync__GoodbyeCode code, const char *fmt, ...)
{
	Dpasync__Envelope env;
	Dpasync__Goodbye g;
	char why[DP_FRAME_MAX_STR + 1], text[DP_FRAME_MAX_STR + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	dp_frame_goodbye(&env, &g, code, why, text);
	send_msg(c, &env);   /* queued: stopping flushes it */
	DP_ERROR("owner", "leaving for good: %s", text);
	stop(c, dp_exit_status(DP_EREFUSED, DP_EXIT_PHASE_RUN));
}

static void on_retry(uv_timer_t *t)
{
	struct own_client *c = t->data;

	dp_metrics_inc(c->cfg.m->reconnects);
	own_client_start(c);
}

/* ---- the clock's events ------------------------------------------------------ */

static bool on_tick(void *arg)
{
	struct own_client *c = arg;
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__UpdateRequest ur = DPASYNC__UPDATE_REQUEST__INIT;

	dp_metrics_inc(c->cfg.m->ticks);
	/* The clock keeps ticking while a request is outstanding or its answer
	 * is computed (docs/ownerd.md "Threads"): those ticks are the skipped
	 * ones, and by memorylessness the first tick after the answer comes
	 * at the same law as a clock restarted then. */
	if (own_answer_busy(c->cfg.answer)) {
		dp_metrics_inc(c->cfg.m->ticks_skipped);
		return false;
	}
	/* A tick sends only when connected, welcomed in request mode, with
	 * budget left, and with no request outstanding. */
	if (c->conn == NULL || !c->welcomed || c->job.broadcast || c->request_pending ||
	    !own_budget_left(c->cfg.budget)) {
		dp_metrics_inc(c->cfg.m->ticks_skipped);
		return false;
	}
	env.version = DP_PROTO_VERSION;
	env.msg_case = DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST;
	env.update_request = &ur;
	if (send_msg(c, &env) == 0) {
		c->request_pending = true;
		DP_DEBUG("clock", "update request sent");
	} else {
		dp_metrics_inc(c->cfg.m->ticks_skipped);
	}
	return false;
}

static void on_clock_fail(void *arg, int err)
{
	stop(arg, dp_exit_status(err, DP_EXIT_PHASE_RUN));
}

/* ---- Hello / Welcome ----------------------------------------------------- */

static void send_hello(struct own_client *c)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Hello h = DPASYNC__HELLO__INIT;
	Dpasync__HelloLimits lim = DPASYNC__HELLO_LIMITS__INIT;
	struct own_budget_status st;

	own_budget_status(c->cfg.budget, &st);
	h.version = DP_PROTO_VERSION;
	h.owner_id = (char *)c->cfg.id;
	h.n_rows = c->cfg.ds->n;
	h.n_features = (uint32_t)c->cfg.ds->p;
	h.epsilon = c->cfg.set->epsilon;
	/* Our own --answers-cap (0: the learner's plan decides), and the
	 * counters of the job our ledger knows last: after a restart that
	 * job's learner must plan with them, another job's ignores them. */
	h.answers_cap = c->cfg.set->answers_cap;
	h.job = (char *)st.job;
	h.job_answers_cap = st.cap;
	h.answers_given = st.answers;
	h.rate = c->cfg.set->rate;
	h.schema = (char *)c->cfg.schema_fp;
	/* The summary only names a mismatch: a large one (thousands of
	 * columns) is left out rather than make the Hello too long for a
	 * frame (docs/protocol.md §5 "Schema summary"). */
	if (c->cfg.schema_sum != NULL &&
	    dpasync__schema_summary__get_packed_size(c->cfg.schema_sum) <= DP_SCHEMASUM_MAX_BYTES &&
	    dpasync__schema_summary__get_packed_size(c->cfg.schema_sum) <= c->cfg.set->max_frame / 4)
		h.schema_summary = c->cfg.schema_sum;
	h.bias = c->cfg.set->bias;
	/* What is left and the bound we refuse beyond: the learner plans with
	 * them and never sends a query we would refuse (docs/protocol.md §5
	 * "Budget left and bounds").  epsilon_left is job's (its ledger's, or
	 * what a new ledger would get); the learner of another job takes the
	 * smaller of epsilon and lifetime_left. */
	lim.epsilon_left = st.job_left;
	lim.lifetime_left = st.lifetime_left;
	lim.theta_max = c->cfg.set->theta_max;
	/* The mechanisms we answer and, for a Gaussian job, what is left in its
	 * unit (docs/protocol.md §5 "Mechanisms"). */
	h.delta = c->cfg.set->delta;
	h.lifetime_delta = st.lifetime_delta;
	h.gaussian = own_mechanism_gaussian(c->cfg.set, st.lifetime_delta);
	/* A Gaussian job's ledger says its rho left exactly; else what the
	 * epsilon left converts to. */
	lim.rho_left = st.gaussian && h.gaussian ? st.rho_left :
		       own_mechanism_rho_left(c->cfg.set, st.lifetime_delta, st.job_left);
	h.limits = &lim;
	env.version = DP_PROTO_VERSION;
	env.msg_case = DPASYNC__ENVELOPE__MSG_HELLO;
	env.hello = &h;
	send_msg(c, &env);
}

static void on_welcome_timeout(uv_timer_t *t)
{
	struct own_client *c = t->data;

	drop(c, "no Welcome within %g s (welcome-timeout)", c->cfg.set->welcome_timeout);
}

static void on_welcome(struct own_client *c, const Dpasync__Welcome *w)
{
	struct own_budget_status st;
	size_t p = c->cfg.ds->p;
	uint64_t offered, K;
	char why[DP_FRAME_MAX_STR + 1];
	dp_model model;
	dp_mech mech;
	int r;

	if (c->welcomed) {
		drop(c, "second Welcome on one connection");
		return;
	}
	/* The conn layer already checked ranges and finiteness (dp_frame_validate
	 * with p = ours); what is left is what only the owner knows. */
	if (dp_model_parse(w->model, &model) < 0) {
		drop(c, "Welcome names model '%s', this owner supports linear, logistic and svm",
		     w->model);
		return;
	}
	if (w->p != p) {
		drop(c, "Welcome.p=%u but this owner's data has p=%zu", w->p, p);
		return;
	}
	if (!(isfinite(w->clip_l1) && w->clip_l1 > 0 && isfinite(w->theta_max) &&
	      w->theta_max > 0 && isfinite(w->lambda) && w->lambda >= 0 &&
	      isfinite(w->rho) && w->rho > 0) || w->t == 0 || w->k_done > w->t) {
		drop(c, "Welcome has out-of-range parameters");
		return;
	}
	/* A mechanism we do not allow: the learner checks our Hello first, so
	 * only a learner that ignores it gets here (docs/protocol.md §5
	 * "Mechanisms"); nothing is bound or spent. */
	mech = w->mechanism == DPASYNC__MECHANISM__MECHANISM_GAUSSIAN ? DP_MECH_GAUSSIAN
								      : DP_MECH_LAPLACE;
	own_budget_status(c->cfg.budget, &st);
	if (own_mechanism_check_welcome(c->cfg.set, st.lifetime_delta, w, why, sizeof(why)) < 0) {
		leave(c, DPASYNC__GOODBYE_CODE__GOODBYE_BAD_CLAIM, "%s", why);
		return;
	}
	/* What a row means is the job's: the bias setting comes with it, and
	 * an owner set up otherwise cannot take part until it is fixed. */
	if (w->bias != 0 && (w->bias == 2) != c->cfg.set->bias) {
		leave(c, DPASYNC__GOODBYE_CODE__GOODBYE_SCHEMA_MISMATCH, "job %s has bias=%s but "
		      "this owner has bias=%s: set bias=%s in ownerd's configuration", w->job,
		      w->bias == 2 ? "true" : "false", c->cfg.set->bias ? "true" : "false",
		      w->bias == 2 ? "true" : "false");
		return;
	}
	r = dp_model_check_data(model, c->cfg.ds);
	if (r < 0) {
		leave(c, DPASYNC__GOODBYE_CODE__GOODBYE_BAD_DATA, "data does not fit model %s: %s",
		      w->model, dp_error_detail(r));
		return;
	}
	if (own_budget_refuses_job(c->cfg.budget, w->job)) {
		own_budget_status(c->cfg.budget, &st);
		leave(c, DPASYNC__GOODBYE_CODE__GOODBYE_BUDGET_SPENT, "the lifetime budget of this "
		      "dataset is spent (%.9g of lifetime-epsilon); no job can be answered",
		      st.lifetime_spent);
		return;
	}
	own_budget_status(c->cfg.budget, &st);
	if (c->job.have && strcmp(c->job.name, w->job) != 0) {
		/* A new job: its own ledger, its own K (docs/ownerd.md
		 * "Serving successive jobs"). */
		DP_INFO("owner", "new job %s (previous %s)", w->job, c->job.name);
		c->job.have = false;
	}
	/* The learner's planned K_i for us; an older learner sends none and
	 * the cap is then T.  Our own --answers-cap wins over either. */
	offered = w->answers_cap ? w->answers_cap : w->t;
	K = own_budget_cap_for(c->cfg.budget, offered);
	if (c->job.have && mech != c->job.mech) {
		DP_ERROR("owner", "learner changed job %s's mechanism from %s to %s; a job's "
			 "mechanism never changes", w->job, dp_query_mech_name(c->job.mech),
			 dp_query_mech_name(mech));
		stop(c, dp_exit_status(DP_EREFUSED, DP_EXIT_PHASE_RUN));
		return;
	}
	if (c->job.have && K != st.cap) {
		DP_ERROR("owner", "learner changed the answer cap from %llu to %llu (T=%llu); this "
			 "owner's answer cap is bound to the first", (unsigned long long)st.cap,
			 (unsigned long long)K, (unsigned long long)w->t);
		stop(c, dp_exit_status(DP_EREFUSED, DP_EXIT_PHASE_RUN));
		return;
	}
	if (c->cfg.set->answers_cap != 0 && w->answers_cap != 0 &&
	    w->answers_cap != c->cfg.set->answers_cap)
		DP_INFO("owner", "keeping answers-cap %llu over the learner's planned %llu",
			(unsigned long long)c->cfg.set->answers_cap,
			(unsigned long long)w->answers_cap);
	if (!c->job.have) {
		/* The first Welcome binds the ledger to the job (logged either way). */
		r = own_budget_bind_mech(c->cfg.budget, w->job, offered, mech, p);
		if (r < 0) {
			stop(c, dp_exit_status(r, DP_EXIT_PHASE_LOAD));   /* a local file */
			return;
		}
	}

	uv_timer_stop(&c->welcome_timer);
	snprintf(c->job.name, sizeof(c->job.name), "%s", w->job);
	c->job.model = model;
	c->job.T = w->t;
	c->job.N = w->n;
	c->job.n_total = w->n_total;
	c->job.rho = w->rho;
	c->job.lambda = w->lambda;
	c->job.theta_max = w->theta_max;
	c->job.clip = w->clip_l1;
	c->job.mech = mech;
	c->job.clip_l2 = mech == DP_MECH_GAUSSIAN ? w->clip_l2 : 0;
	c->job.broadcast = w->mode == DPASYNC__MODE__MODE_BROADCAST;
	c->job.k_done = w->k_done;
	c->job.have = true;
	c->welcomed = true;
	c->request_pending = false;
	c->attempt = 0;
	c->failed = c->unverified = c->unlogged = 0;
	c->idle = false;
	c->idle_step = 0;
	c->welcomed_once = true;
	own_budget_status(c->cfg.budget, &st);
	DP_INFO("owner", "welcome job=%s model=%s T=%llu K=%llu N=%u n_total=%llu p=%u clip=%g "
		"mode=%s k_done=%llu answers=%llu/%llu spent=%.9g left=%.9g mechanism=%s", w->job,
		w->model,
		(unsigned long long)w->t, (unsigned long long)w->answers_cap, w->n,
		(unsigned long long)w->n_total, w->p, w->clip_l1,
		c->job.broadcast ? "broadcast" : "request",
		(unsigned long long)w->k_done, (unsigned long long)st.answers,
		(unsigned long long)st.cap, st.spent, st.left,
		w->mechanism == DPASYNC__MECHANISM__MECHANISM_GAUSSIAN ? "gaussian" : "laplace");
	if (!own_budget_left(c->cfg.budget))
		DP_INFO("owner", "budget exhausted: staying connected (refusing) until Done");
	c->lifetime_told = false;
	tell_lifetime(c);
}

/* ---- Goodbye: the learner says why it closes ---------------------------- */

static void on_goodbye(struct own_client *c, const Dpasync__Goodbye *g)
{
	const char *text = g->text ? g->text : "";

	c->goodbye = true;
	switch (g->code) {
	case DPASYNC__GOODBYE_CODE__GOODBYE_UNKNOWN_IDENTITY:
		DP_ERROR("owner", "the learner refused this owner: %s; add '%s' to learnerd's "
			 "owners, or use the certificate it expects", text, c->cfg.id);
		stop(c, dp_exit_status(DP_EREFUSED, DP_EXIT_PHASE_RUN));
		return;
	case DPASYNC__GOODBYE_CODE__GOODBYE_SCHEMA_MISMATCH:
	case DPASYNC__GOODBYE_CODE__GOODBYE_BAD_DATA:
	case DPASYNC__GOODBYE_CODE__GOODBYE_BUDGET_SPENT:
	case DPASYNC__GOODBYE_CODE__GOODBYE_BAD_CLAIM:
		DP_ERROR("owner", "the learner refused this owner: %s", text);
		stop(c, dp_exit_status(DP_EREFUSED, DP_EXIT_PHASE_RUN));
		return;
	case DPASYNC__GOODBYE_CODE__GOODBYE_JOB_OVER:
		DP_INFO("owner", "the learner ended job %s: %s", c->job.have ? c->job.name : "-",
			text);
		job_over(c, DP_EXIT_FAIL);
		return;
	default:
		DP_INFO("owner", "the learner closes the connection: %s", text);
		return;
	}
}

/* ---- Query: send what answer.c decided ------------------------------------- */

static void send_refuse(struct own_client *c, uint64_t k, const char *reason)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Refuse rf = DPASYNC__REFUSE__INIT;
	struct own_budget_status st;

	rf.k = k;
	rf.reason = (char *)reason;
	env.version = DP_PROTO_VERSION;
	env.msg_case = DPASYNC__ENVELOPE__MSG_REFUSE;
	env.refuse = &rf;
	dp_metrics_inc(c->cfg.m->refusals);
	own_budget_status(c->cfg.budget, &st);
	DP_INFO("answer", "refused k=%llu reason=\"%s\" answers=%llu/%llu spent=%.9g",
		(unsigned long long)k, reason, (unsigned long long)st.answers,
		(unsigned long long)st.cap, st.spent);
	send_msg(c, &env);
}

/* The lifetime budget, not the job's, stops this owner: say so once, with
 * a Refuse that answers no query (k = 0), so that the learner logs the
 * reason instead of waiting for requests that will not come. */
static void tell_lifetime(struct own_client *c)
{
	if (!c->welcomed || c->lifetime_told || !own_budget_lifetime_blocks(c->cfg.budget))
		return;
	c->lifetime_told = true;
	DP_INFO("owner", "lifetime budget spent: refusing the rest of job %s", c->job.name);
	send_refuse(c, 0, OWN_REFUSE_LIFETIME);
}

/* The settle's sync failed on its worker: the ledger has failed. */
static void on_settle_fail(void *arg)
{
	struct own_client *c = arg;

	if (!c->closed)
		stop(c, dp_exit_status(DP_EIO, DP_EXIT_PHASE_RUN));
}

/* Step 5 of the privacy order (budget.c): the reply exists only after the
 * charge was made durable. */
static void send_answer(struct own_client *c, const struct own_reply *rep)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Answer a = DPASYNC__ANSWER__INIT;
	int r;

	a.k = rep->k;
	a.n_gradient = rep->p;
	a.gradient = (double *)rep->gradient;   /* packing only reads it */
	a.epsilon_spent = rep->after.spent;
	a.epsilon_left = rep->after.left;
	a.answers_given = rep->after.answers;
	env.version = DP_PROTO_VERSION;
	env.msg_case = DPASYNC__ENVELOPE__MSG_ANSWER;
	env.answer = &a;
	r = send_msg(c, &env);
	own_answer_wipe(c->cfg.answer);
	if (r == 0)
		dp_metrics_inc(c->cfg.m->answers);
	/* The answer is on its way: now record it and sync the next share,
	 * while the learner serves the others (docs/ledger.md §9). */
	if (own_settle(c->cfg.loop, c->cfg.budget, on_settle_fail, c) < 0) {
		stop(c, DP_EXIT_FAIL);
		return;
	}
	/* One line whether or not rows were dropped: an extra line only when
	 * some were would make the loop's work after an answer depend on the
	 * rows theta pushed out (docs/privacy.md §7). */
	DP_DEBUG("answer", "answered k=%llu answers=%llu/%llu spent=%.9g left=%.9g b=%.6g "
		"secs=%.6f rows_dropped=%zu%s", (unsigned long long)rep->k,
		(unsigned long long)rep->after.answers, (unsigned long long)rep->after.cap,
		rep->after.spent, rep->after.left, rep->info.scale_b, rep->secs, rep->info.dropped,
		r < 0 ? " (not delivered: connection lost)" : "");
	if (!own_budget_left(c->cfg.budget))
		DP_INFO("owner", "budget exhausted: staying connected (refusing) until Done");
	tell_lifetime(c);
}

/* Send, refuse, drop or stop as answer.c decided. */
static void deliver(struct own_client *c, const struct own_reply *rep)
{
	switch (rep->kind) {
	case OWN_REPLY_ANSWER:
		send_answer(c, rep);
		break;
	case OWN_REPLY_REFUSE:
		send_refuse(c, rep->k, rep->refuse);
		break;
	case OWN_REPLY_DROP:
		drop(c, "%s", rep->drop);
		break;
	case OWN_REPLY_STOP:
		if (rep->refuse)
			send_refuse(c, rep->k, rep->refuse);   /* queued: stopping flushes it */
		stop(c, rep->exit_code);
		break;
	case OWN_REPLY_DISCARD:
		DP_INFO("answer", "discarded k=%llu: the connection closed while it was computed "
			"(nothing charged, nothing sent)", (unsigned long long)rep->k);
		break;
	}
}

static void on_query(struct own_client *c, const Dpasync__Query *q)
{
	struct own_reply rep;

	if (!c->welcomed) {
		drop(c, "Query before Welcome");
		return;
	}
	if (own_answer_busy(c->cfg.answer)) {
		drop(c, "Query k=%llu while the previous one is being answered (one query at a "
		     "time)", (unsigned long long)q->k);
		return;
	}
	c->request_pending = false;
	if (own_answer_query(c->cfg.answer, &c->job, q, &rep))
		return;   /* computing; own_client_answered() takes it from here */
	/* Decided at once: the request is over; the next tick may send. */
	if (c->closed)
		return;   /* the clock failed: the daemon is stopping */
	deliver(c, &rep);
	if (!c->closed)
		own_clock_restart(&c->clock);
}

void own_client_answered(void *arg, const struct own_reply *rep)
{
	struct own_client *c = arg;

	/* Sent first (the charge is already durable; a send on a closed
	 * connection only wipes the scratch), then the request is over and
	 * the next tick may send. */
	deliver(c, rep);
	if (c->closed)
		return;   /* stopping (deliver's STOP, or a signal meanwhile) */
	own_clock_restart(&c->clock);
	if (c->closed)
		return;   /* the generator failed */
	if (c->retry_deferred) {
		c->retry_deferred = false;
		schedule_next(c, false);
	}
}

/* ---- Done ------------------------------------------------------------------ */

static void on_done(struct own_client *c, const Dpasync__Done *m)
{
	struct own_budget_status st;
	size_t p = c->cfg.ds->p;
	dp_modelfile mf;
	int r;

	if (!c->welcomed) {
		drop(c, "Done before Welcome");
		return;
	}
	if (m->n_final_theta != p) {
		drop(c, "Done.final_theta has dimension %zu, expected %zu", m->n_final_theta, p);
		return;
	}
	for (size_t q = 0; q < p; q++)
		if (!isfinite(m->final_theta[q])) {
			drop(c, "Done.final_theta[%zu] is not finite", q);
			return;
		}
	if (m->t != c->job.T) {
		drop(c, "Done.T=%llu but the job's T is %llu", (unsigned long long)m->t,
		     (unsigned long long)c->job.T);
		return;
	}
	memset(&mf, 0, sizeof(mf));
	mf.model = c->job.model;
	mf.p = p;
	mf.theta = m->final_theta;
	mf.features = c->cfg.ds->names;
	mf.target = c->cfg.ds->target;
	mf.bias = c->cfg.set->bias;
	mf.T = (size_t)m->t;
	mf.lambda = c->job.lambda;
	mf.theta_max = c->job.theta_max;
	mf.clip = c->job.clip;
	mf.job = c->job.name;
	snprintf(mf.mode, sizeof(mf.mode), "async");
	r = dp_modelfile_write(c->cfg.model_out, &mf, DP_FILE_MODE_PRIVATE);
	if (r < 0) {
		DP_ERROR("owner", "done: cannot save the model to %s: %s", c->cfg.model_out,
			 dp_error_detail(r));
		stop(c, dp_exit_status(r, DP_EXIT_PHASE_RUN));
		return;
	}
	own_budget_status(c->cfg.budget, &st);
	DP_INFO("owner", "done job=%s T=%llu model=%s answers=%llu spent=%.9g "
		"lifetime_spent=%.9g lifetime_left=%.9g", c->job.name, (unsigned long long)m->t,
		c->cfg.model_out, (unsigned long long)st.answers, st.spent, st.lifetime_spent,
		st.lifetime_left);
	job_over(c, DP_EXIT_OK);
	if (!c->closed)
		dp_conn_close(c->conn);   /* the learner closes too; the next job is polled for */
}

/* ---- the connection's callbacks ---------------------------------------------- */

static int on_handshake(dp_conn *conn, const char *peer_id)
{
	struct own_client *c = dp_conn_data(conn);

	if (c->closed)
		return 1;
	c->handshaken = true;
	DP_INFO("conn", "connected peer=%s id=%s", dp_conn_peer_addr(conn), peer_id);
	dp_metrics_set(c->cfg.m->connected, 1);
	send_hello(c);
	uv_timer_start(&c->welcome_timer, on_welcome_timeout,
		       (uint64_t)llround(c->cfg.set->welcome_timeout * 1000.0), 0);
	return 0;
}

static void on_message(dp_conn *conn, Dpasync__Envelope *m)
{
	struct own_client *c = dp_conn_data(conn);

	if (c->closed || conn != c->conn) {
		dp_frame_msg_free(m);
		return;
	}
	switch (m->msg_case) {
	case DPASYNC__ENVELOPE__MSG_WELCOME:
		on_welcome(c, m->welcome);
		break;
	case DPASYNC__ENVELOPE__MSG_QUERY:
		on_query(c, m->query);
		break;
	case DPASYNC__ENVELOPE__MSG_DONE:
		on_done(c, m->done);
		break;
	case DPASYNC__ENVELOPE__MSG_GOODBYE:
		on_goodbye(c, m->goodbye);
		break;
	default:
		drop(c, "unexpected %s message from the learner", dp_frame_kind(m));
		break;
	}
	dp_frame_msg_free(m);
}

/* ---- failed attempts ------------------------------------------------------- */

/* A certificate alert after our handshake and before any Welcome: in TLS
 * 1.3 our handshake completes before the peer has checked our
 * certificate, so its refusal comes as an alert just after. */
static bool cert_alert(const char *detail)
{
	return strstr(detail, "alert") != NULL &&
	       (strstr(detail, "certificate") != NULL || strstr(detail, "unknown ca") != NULL);
}

static enum fail_reason classify(const struct own_client *c, int reason, const char *detail)
{
	if (reason == -ETIMEDOUT)
		return FAIL_TIMEOUT;
	if (reason == DP_ENOENT && strstr(detail, "cannot resolve") != NULL)
		return FAIL_RESOLVE;
	if (reason != DP_ETLS)
		return FAIL_CONNECT;
	if (c->handshaken)
		return FAIL_REFUSED_CERT;   /* on_close passes cert_alert()s only */
	if (strstr(detail, "closed the connection") != NULL || strstr(detail, "eof") != NULL ||
	    strstr(detail, "reset") != NULL)
		return FAIL_CLOSED;
	if (strstr(detail, "wrong version number") != NULL ||
	    strstr(detail, "packet length too long") != NULL ||
	    strstr(detail, "http request") != NULL || strstr(detail, "record layer") != NULL)
		return FAIL_NOT_TLS;
	if (strstr(detail, "hostname mismatch") != NULL)
		return FAIL_NAME;
	if (strstr(detail, "certificate verify") != NULL)
		return FAIL_PEER_CERT;
	return FAIL_TLS;
}

/* What to check, for the log line; "" for the transient reasons. */
static const char *fail_hint(enum fail_reason why)
{
	switch (why) {
	case FAIL_NOT_TLS:
		return "what answers on the learner's address does not speak TLS: check --learner "
		       "(is it learnerd's metrics port?), or another program holds that address";
	case FAIL_NAME:
		return "the certificate there does not carry --server-name: check --server-name (a "
		       "name in the learner's certificate), or another program holds the address";
	case FAIL_PEER_CERT:
		return "the certificate there was refused (not from the CA, revoked, not pinned, "
		       "wrong usage): check --ca, --crl, --learner-pin, or another program holds "
		       "the address";
	case FAIL_REFUSED_CERT:
		return "the learner refused this owner's certificate: check --cert/--key (issued "
		       "by the deployment CA, for client use, not revoked or expired)";
	case FAIL_TLS:
		return "the TLS handshake failed: check the certificates and settings, or another "
		       "program holds the learner's address";
	default:
		return "";
	}
}

/* An attempt that failed before the connection was established: never
 * final, since what answered was not verified as the learner and whoever
 * takes its address between jobs can send anything (docs/design.md §10
 * "Exit status").  Counted, logged (FAIL_LOG_BURST), retried; with once,
 * given up after connect-attempts that reached something other than the
 * learner, with exit 1. */
static void attempt_failed(struct own_client *c, int reason, const char *detail)
{
	enum fail_reason why = classify(c, reason, detail);
	const char *labels[] = { fail_names[why] };
	const char *hint = fail_hint(why);
	uint64_t now = uv_now(c->cfg.loop), cap = c->cfg.set->connect_attempts;
	struct dp_metric *m = NULL;
	bool say;

	if (dp_metrics_series(c->cfg.m->connect_failures, labels, &m) == 0)
		dp_metrics_inc(m);
	c->failed++;
	if (why >= FAIL_NOT_TLS)
		c->unverified++;
	say = c->failed <= FAIL_LOG_BURST || now - c->logged_ms >= FAIL_LOG_EVERY_MS;
	/* No learner listening is what an idle owner sees between jobs: the
	 * first refusal is a warning, the ones after it information, with
	 * the count; whatever else answers stays a warning. */
	if (say) {
		dp_log(why == FAIL_CONNECT && c->failed > 1 ? DP_LOG_INFO : DP_LOG_WARN, "conn",
		       "attempt=%llu failed reason=%s unlogged=%llu: %s%s%s",
		       (unsigned long long)c->failed, fail_names[why],
		       (unsigned long long)c->unlogged, detail, hint[0] ? "; " : "", hint);
		c->logged_ms = now;
		c->unlogged = 0;
	} else {
		c->unlogged++;
	}
	if (c->cfg.set->once && cap != 0 && c->unverified >= cap) {
		DP_ERROR("owner", "giving up after %llu attempts that reached something other than "
			 "the learner (connect-attempts, with once): last reason=%s: %s%s%s",
			 (unsigned long long)c->unverified, fail_names[why], detail,
			 hint[0] ? "; " : "", hint);
		stop(c, dp_exit_status(DP_ETLS, DP_EXIT_PHASE_RUN));
		return;
	}
	schedule_next(c, !say);
}

static void on_close(dp_conn *conn, int reason, const char *detail)
{
	struct own_client *c = dp_conn_data(conn);

	if (conn != c->conn)
		return;
	c->conn = NULL;
	c->welcomed = false;
	c->request_pending = false;
	own_answer_cancel(c->cfg.answer);
	dp_metrics_set(c->cfg.m->connected, 0);
	if (!uv_is_closing((uv_handle_t *)&c->welcome_timer))
		uv_timer_stop(&c->welcome_timer);
	if (detail == NULL)
		detail = "";
	if (c->closed) {
		DP_DEBUG("conn", "closed: %s", detail);
		return;
	}
	/* Not established: no answer can be in flight (none before a
	 * Welcome, and a new attempt waits for a discarded one to end). */
	if (!c->handshaken ||
	    (reason == DP_ETLS && !c->welcomed_once && cert_alert(detail))) {
		attempt_failed(c, reason, detail);
		return;
	}
	if (reason == 0)
		DP_INFO("conn", "connection to the learner closed: %s", detail);
	else
		DP_WARN("conn", "connection to the learner failed reason=%s detail=%s",
			dp_strerror(reason), detail);
	if (own_answer_busy(c->cfg.answer)) {
		/* Reconnect once the discarded answer has ended, so that a new
		 * connection never meets an answer in flight. */
		c->retry_deferred = true;
		return;
	}
	schedule_next(c, false);
}

/* ---- entry points ------------------------------------------------------------ */

int own_client_init(struct own_client *c, const struct own_client_config *cfg)
{
	int r;

	DP_REQUIRE(c != NULL && cfg != NULL && cfg->loop != NULL && cfg->set != NULL &&
		   cfg->ctx != NULL && cfg->id != NULL && cfg->host != NULL &&
		   cfg->model_out != NULL && cfg->ds != NULL && cfg->bits != NULL &&
		   cfg->budget != NULL && cfg->answer != NULL && cfg->m != NULL &&
		   cfg->stop != NULL);
	memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	/* Every reason's series exists from the start, at 0, so that a rate
	 * over it is defined before the first failure. */
	for (size_t i = 0; i < FAIL_N; i++) {
		const char *labels[] = { fail_names[i] };
		struct dp_metric *m;

		r = dp_metrics_series(cfg->m->connect_failures, labels, &m);
		if (r < 0)
			return dp_error_set(r, "metrics: %s", dp_strerror(r));
	}
	uv_timer_init(cfg->loop, &c->retry_timer);
	uv_timer_init(cfg->loop, &c->welcome_timer);
	c->retry_timer.data = c->welcome_timer.data = c;
	r = own_clock_start(&c->clock, cfg->loop, cfg->bits, cfg->set->rate, on_tick,
			    on_clock_fail, c);
	if (r < 0) {
		char buf[256];

		snprintf(buf, sizeof(buf), "%s", dp_error_detail(r));
		return dp_error_set(r, "clock: %s", buf);
	}
	return 0;
}

void own_client_start(struct own_client *c)
{
	dp_conn_config cfg;
	dp_frame_limits lim;
	int r;

	DP_REQUIRE(c != NULL && c->cfg.loop != NULL);
	if (c->closed || c->conn != NULL)
		return;
	memset(&cfg, 0, sizeof(cfg));
	memset(&lim, 0, sizeof(lim));
	lim.p = c->cfg.ds->p;
	c->handshaken = false;
	c->welcomed_once = false;
	c->goodbye = false;
	cfg.ctx = c->cfg.ctx;
	cfg.cb.on_handshake = on_handshake;
	cfg.cb.on_message = on_message;
	cfg.cb.on_close = on_close;
	cfg.data = c;
	cfg.max_frame = (uint32_t)c->cfg.set->max_frame;
	cfg.limits = &lim;
	DP_DEBUG("conn", "connecting to=%s:%u attempt=%u", c->cfg.host, (unsigned)c->cfg.port,
		 c->attempt);
	r = dp_conn_connect(c->cfg.loop, &cfg, c->cfg.host, c->cfg.port, c->cfg.set->server_name,
			    &c->conn);
	if (r < 0) {
		char why[320];

		c->conn = NULL;
		snprintf(why, sizeof(why), "cannot start connecting to %s:%u: %s", c->cfg.host,
			 (unsigned)c->cfg.port, dp_error_detail(r));
		attempt_failed(c, r, why);
	}
}

static void close_timer(uv_timer_t *t)
{
	if (!uv_is_closing((uv_handle_t *)t))
		uv_close((uv_handle_t *)t, NULL);
}

void own_client_close(struct own_client *c)
{
	DP_REQUIRE(c != NULL && c->cfg.loop != NULL);
	if (c->closed)
		return;
	c->closed = true;
	own_answer_cancel(c->cfg.answer);   /* the loop runs until it has ended */
	own_clock_close(&c->clock);
	close_timer(&c->retry_timer);
	close_timer(&c->welcome_timer);
	if (c->conn)
		dp_conn_close(c->conn);   /* flushes what is queued (a final Refuse) */
}
