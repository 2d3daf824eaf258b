/* learnerd: who is asked next (docs/learnerd.md §3).
 *
 * Request mode: a FIFO of owners whose clocks ticked; while fewer than
 * max-inflight queries are out, the oldest request is served.  Broadcast
 * mode: every broadcast-interval each idle owner is asked, up to
 * max-inflight in total.  A query that outlives query-timeout is abandoned
 * and its owner's connection closed.  The job ends at k == T, or stops when
 * no owner can be asked for idle-timeout or every owner is exhausted. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/core/algo.h"
#include "common/core/error.h"
#include "common/net/frame.h"
#include "common/core/log.h"
#include "learner/lrn.h"
#include "common/core/modelfile.h"

/* Tick of the timeout checks: timeouts fire at most this late. */
#define LRN_TICK_MS 50

double lrn_mono(void)
{
	return (double)uv_hrtime() * 1e-9;
}

double lrn_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t lrn__slots(const struct lrn *L)
{
	/* An owner has at most one query out, so more slots than owners
	 * would never fill. */
	return L->s->max_inflight < L->N ? L->s->max_inflight : L->N;
}

int lrn_sched_init(struct lrn *L)
{
	L->fifo = calloc(L->N, sizeof(*L->fifo));
	L->fifo_t = calloc(L->N, sizeof(*L->fifo_t));
	L->q = calloc(lrn__slots(L), sizeof(*L->q));
	if (L->fifo == NULL || L->fifo_t == NULL || L->q == NULL)
		return dp_error_set(DP_ENOMEM, "out of memory");
	return 0;
}

void lrn_sched_free(struct lrn *L)
{
	if (L->q)
		for (size_t i = 0; i < lrn__slots(L); i++)
			free(L->q[i].bar);
	free(L->q);
	free(L->fifo);
	free(L->fifo_t);
	L->q = NULL;
	L->fifo = NULL;
	L->fifo_t = NULL;
}

static size_t lrn__connected(const struct lrn *L)
{
	size_t n = 0;

	for (size_t i = 0; i < L->N; i++)
		if (L->owners[i].conn && L->owners[i].hello)
			n++;
	return n;
}

static bool lrn__usable(const struct lrn_owner *o)
{
	return o->conn && o->hello && !o->exhausted;
}

static size_t lrn__min_owners(const struct lrn *L)
{
	return L->s->min_owners ? L->s->min_owners : L->N;
}

static void lrn__fifo_remove(struct lrn *L, struct lrn_owner *o)
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

static void lrn__slot_free(struct lrn *L, struct lrn_query *qr)
{
	L->owners[qr->owner].inflight = false;
	qr->used = false;
	L->inflight--;
}

static struct lrn_query *lrn__slot_find(struct lrn *L, size_t owner, uint64_t qid)
{
	for (size_t i = 0; i < lrn__slots(L); i++)
		if (L->q[i].used && L->q[i].owner == owner && L->q[i].qid == qid)
			return &L->q[i];
	return NULL;
}

void lrn_sched_owner_gone(struct lrn *L, struct lrn_owner *o)
{
	lrn__fifo_remove(L, o);
	for (size_t i = 0; i < lrn__slots(L); i++) {
		if (L->q[i].used && L->q[i].owner == o->idx) {
			DP_INFO("learner", "query k=%llu to id=%s abandoned", (unsigned long long)L->q[i].qid,
				o->id);
			lrn__slot_free(L, &L->q[i]);
		}
	}
}

static int lrn__send_query(struct lrn *L, struct lrn_owner *o, double wait)
{
	Dpasync__Envelope env = DPASYNC__ENVELOPE__INIT;
	Dpasync__Query qm = DPASYNC__QUERY__INIT;
	struct lrn_query *qr = NULL;
	double sent;
	int rc;

	for (size_t i = 0; i < lrn__slots(L); i++) {
		if (!L->q[i].used) {
			qr = &L->q[i];
			break;
		}
	}
	if (qr == NULL)
		return DP_ESTATE;
	if (qr->bar == NULL) {
		qr->bar = calloc(L->p, sizeof(double));
		if (qr->bar == NULL) {
			lrn_stop(L, LRN_EXIT_FAIL, "out of memory");
			return DP_ENOMEM;
		}
	}
	/* Ids at or above the reservation could repeat after a crash (the
	 * checkpoint would not know them): extend it durably first. */
	if (L->next_qid >= L->qid_reserved) {
		rc = lrn_ckpt_save(L, false);
		if (rc < 0) {
			char why[300];

			snprintf(why, sizeof(why), "checkpoint failed: %s", dp_error_detail(rc));
			lrn_stop(L, LRN_EXIT_FAIL, why);
			return rc;
		}
	}
	dp_algo_midpoint(L->p, L->theta_L, o->theta, qr->bar);
	qm.k = L->next_qid++;
	qm.n_theta = L->p;
	qm.theta = qr->bar;
	env.version = DP_PROTO_VERSION;
	env.msg_case = DPASYNC__ENVELOPE__MSG_QUERY;
	env.query = &qm;
	/* The round trip starts before the bytes can leave: taken after the
	 * send, a preemption right after the write shortened it. */
	sent = lrn_mono();
	rc = dp_conn_send(o->conn, &env);
	if (rc < 0) {
		char why[300];

		snprintf(why, sizeof(why), "sending query k=%llu failed: %s",
			 (unsigned long long)qm.k, dp_error_detail(rc));
		lrn_server_drop(L, o, why);
		return rc;
	}
	qr->used = true;
	qr->owner = o->idx;
	qr->qid = qm.k;
	qr->sent = sent;
	qr->wait = wait;
	o->inflight = true;
	L->inflight++;
	DP_DEBUG("learner", "query k=%llu to id=%s wait=%.6f", (unsigned long long)qm.k, o->id, wait);
	return 0;
}

static bool lrn__room(const struct lrn *L)
{
	return L->inflight < lrn__slots(L) && L->k_done + L->inflight < L->T;
}

void lrn_sched_request(struct lrn *L, struct lrn_owner *o)
{
	if (L->s->mode == LRN_MODE_BROADCAST) {
		DP_DEBUG("learner", "update request from id=%s ignored in broadcast mode", o->id);
		return;
	}
	if (o->queued || o->inflight || o->exhausted) {
		DP_DEBUG("learner", "update request from id=%s ignored (%s)", o->id,
			 o->exhausted ? "exhausted" : "already pending");
		return;
	}
	L->fifo[L->fifo_len] = o->idx;
	L->fifo_t[L->fifo_len] = lrn_mono();
	L->fifo_len++;
	o->queued = true;
	lrn_sched_pump(L);
}

static void lrn__fail_io(struct lrn *L, const char *what, int rc)
{
	char why[300];

	snprintf(why, sizeof(why), "%s: %s", what, dp_error_detail(rc));
	lrn_stop(L, LRN_EXIT_FAIL, why);
}

void lrn_sched_answer(struct lrn *L, struct lrn_owner *o, uint64_t k, const double *grad,
		      double eps_spent)
{
	struct lrn_query *qr = lrn__slot_find(L, o->idx, k);
	double now, rtt;
	int rc;

	if (qr == NULL) {
		DP_WARN("learner", "answer from id=%s for k=%llu ignored: no such query in flight",
			o->id, (unsigned long long)k);
		return;
	}
	now = lrn_mono();
	rtt = now - qr->sent;
	lrn_state_apply(L, qr, grad);
	o->eps_spent = eps_spent;
	dp_metrics_inc(L->st.iterations);
	dp_metrics_inc(o->m_iter);
	dp_metrics_set(o->m_eps, eps_spent);
	dp_metrics_observe(L->st.rtt, rtt);
	dp_metrics_observe(L->st.wait, qr->wait);
	DP_DEBUG("learner", "iteration k=%llu id=%s query=%llu rtt=%.6f", (unsigned long long)L->k_done,
		 o->id, (unsigned long long)k, rtt);
	rc = lrn_trace_row(L, L->k_done, lrn_wall(), o->id, qr->wait, rtt, eps_spent);
	lrn__slot_free(L, qr);
	if (rc < 0) {
		lrn__fail_io(L, "trace", rc);
		return;
	}
	if (L->s->checkpoint_every > 0 && L->k_done % L->s->checkpoint_every == 0 &&
	    L->k_done < L->T) {
		rc = lrn_ckpt_save(L, false);
		if (rc < 0) {
			lrn__fail_io(L, "checkpoint", rc);
			return;
		}
	}
	/* An owner that has given its last answer will not ask again: knowing
	 * it now lets the stall and exhaustion checks see it. */
	if (o->answers_given >= (o->answers_cap ? o->answers_cap : L->T))
		lrn_sched_exhausted(L, o, "its last answer was given");
	if (L->phase == LRN_RUN)
		lrn_sched_pump(L);
}

void lrn_sched_exhausted(struct lrn *L, struct lrn_owner *o, const char *why)
{
	size_t n = 0;

	if (!o->exhausted)
		DP_WARN("learner", "owner id=%s exhausted: %s", o->id, why);
	o->exhausted = true;
	lrn__fifo_remove(L, o);
	for (size_t i = 0; i < L->N; i++)
		n += L->owners[i].exhausted;
	if (n == L->N && L->phase == LRN_RUN && L->k_done < L->T) {
		char msg[200];

		snprintf(msg, sizeof(msg), "every owner has exhausted its budget at k=%llu of T=%llu: "
			 "the job cannot finish", (unsigned long long)L->k_done,
			 (unsigned long long)L->T);
		lrn_stop(L, LRN_EXIT_FAIL, msg);
		return;
	}
	lrn_stats_gauges(L);
}

void lrn_sched_refuse(struct lrn *L, struct lrn_owner *o, uint64_t k, const char *reason)
{
	struct lrn_query *qr = lrn__slot_find(L, o->idx, k);
	char why[320];

	dp_metrics_inc(L->st.refusals);
	DP_WARN("learner", "owner id=%s refused k=%llu reason=\"%s\"%s", o->id, (unsigned long long)k,
		reason, qr ? "" : " (no such query in flight)");
	if (qr)
		lrn__slot_free(L, qr);
	snprintf(why, sizeof(why), "refused: %s", reason);
	lrn_sched_exhausted(L, o, why);
	if (L->phase == LRN_RUN)
		lrn_sched_pump(L);
}

/* k == T: write the outputs, then Done to everyone and close. */
static void lrn__finish(struct lrn *L)
{
	dp_modelfile mf = { .model = L->model, .p = L->p, .theta = L->theta_L, .bias = L->s->bias,
			    .T = L->T, .lambda = L->s->lambda, .theta_max = L->s->theta_max,
			    .clip = lrn_state_clip(L) };
	int rc;

	snprintf(mf.mode, sizeof(mf.mode), "async");
	rc = dp_modelfile_write(L->model_path, &mf);
	if (rc < 0) {
		lrn__fail_io(L, "model", rc);
		return;
	}
	rc = lrn_ckpt_save(L, true);
	if (rc < 0) {
		lrn__fail_io(L, "checkpoint", rc);
		return;
	}
	DP_INFO("learner", "job done k=%llu model=%s", (unsigned long long)L->k_done, L->model_path);
	L->phase = LRN_FINISHING;
	L->finished = true;
	L->exit_code = LRN_EXIT_OK;
	lrn_server_close_all(L, true);
	if (L->httpd) {
		dp_httpd_close(L->httpd, NULL, NULL);
		L->httpd = NULL;
	}
	if (L->open_conns == 0)
		lrn_sched_stop_timers(L);
}

void lrn_stop(struct lrn *L, int code, const char *why)
{
	if (L->phase != LRN_RUN)
		return;
	L->phase = LRN_STOPPING;
	L->exit_code = code;
	if (why)
		DP_ERROR("learner", "stopping: %s", why);
	if (L->started) {
		int rc = lrn_ckpt_save(L, true);

		if (rc < 0) {
			DP_ERROR("learner", "final checkpoint failed: %s", dp_error_detail(rc));
			L->exit_code = LRN_EXIT_FAIL;
		} else {
			DP_INFO("learner", "checkpoint written k=%llu path=%s", (unsigned long long)L->k_done,
				L->ckpt_path);
		}
	}
	lrn_server_close_all(L, false);
	if (L->httpd) {
		dp_httpd_close(L->httpd, NULL, NULL);
		L->httpd = NULL;
	}
	if (L->open_conns == 0)
		lrn_sched_stop_timers(L);
}

static void lrn__stall_check(struct lrn *L, double now)
{
	bool stalled = false;
	size_t usable = 0;

	for (size_t i = 0; i < L->N; i++)
		usable += lrn__usable(&L->owners[i]);
	if (L->phase == LRN_RUN && (!L->gate_open || (L->inflight == 0 && usable == 0)))
		stalled = true;
	if (!stalled) {
		L->stall_since = -1;
		return;
	}
	if (L->stall_since < 0)
		L->stall_since = now;
	if (L->s->idle_timeout > 0 && now - L->stall_since >= L->s->idle_timeout) {
		char msg[400], *p = msg;
		size_t left = sizeof(msg), away = 0, exh = 0;
		int w;

		for (size_t i = 0; i < L->N; i++) {
			away += L->owners[i].conn == NULL;
			exh += L->owners[i].exhausted;
		}
		w = snprintf(p, left, "no owner could be queried for %.1fs (idle-timeout) at k=%llu of "
			     "T=%llu: %zu connected, %zu away, %zu exhausted", now - L->stall_since,
			     (unsigned long long)L->k_done, (unsigned long long)L->T,
			     lrn__connected(L), away, exh);
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
		lrn_stop(L, LRN_EXIT_FAIL, msg);
	}
}

void lrn_sched_pump(struct lrn *L)
{
	double now = lrn_mono();
	int rc;

	if (L->phase != LRN_RUN)
		return;
	if (!L->started && L->p > 0 && lrn__connected(L) >= lrn__min_owners(L)) {
		bool all = true;

		for (size_t i = 0; i < L->N; i++)
			all = all && L->owners[i].ever_hello;
		if (all) {
			rc = lrn_state_start(L);
			if (rc == 0)
				rc = lrn_ckpt_save(L, false);
			if (rc < 0) {
				lrn__fail_io(L, "starting training", rc);
				return;
			}
		}
	}
	if (L->started && L->k_done >= L->T) {
		lrn__finish(L);
		return;
	}
	if (L->started && !L->gate_open && lrn__connected(L) >= lrn__min_owners(L)) {
		L->gate_open = true;
		DP_INFO("learner", "queries start k=%llu connected=%zu", (unsigned long long)L->k_done,
			lrn__connected(L));
	}
	if (L->gate_open && L->s->mode == LRN_MODE_REQUEST) {
		while (L->phase == LRN_RUN && lrn__room(L) && L->fifo_len > 0) {
			struct lrn_owner *o = &L->owners[L->fifo[0]];
			double t = L->fifo_t[0];

			lrn__fifo_remove(L, o);
			if (!lrn__usable(o))
				continue;
			lrn__send_query(L, o, now - t);
		}
	}
	if (L->phase == LRN_RUN)
		lrn__stall_check(L, now);
	lrn_stats_gauges(L);
}

static void lrn__on_tick(uv_timer_t *t)
{
	struct lrn *L = t->data;
	double now = lrn_mono();

	if (L->phase != LRN_RUN)
		return;
	for (size_t i = 0; i < lrn__slots(L) && L->phase == LRN_RUN; i++) {
		struct lrn_query *qr = &L->q[i];

		if (qr->used && now - qr->sent >= L->s->query_timeout) {
			struct lrn_owner *o = &L->owners[qr->owner];
			char why[160];

			dp_metrics_inc(L->st.timeouts);
			snprintf(why, sizeof(why), "query k=%llu not answered within %gs",
				 (unsigned long long)qr->qid, L->s->query_timeout);
			lrn_server_drop(L, o, why);
		}
	}
	for (size_t i = 0; i < L->N && L->phase == LRN_RUN; i++) {
		struct lrn_owner *o = &L->owners[i];

		if (o->conn && !o->hello && now - o->conn_since >= L->s->hello_timeout)
			lrn_server_drop(L, o, "no Hello within hello-timeout");
	}
	lrn_sched_pump(L);
}

static void lrn__on_broadcast(uv_timer_t *t)
{
	struct lrn *L = t->data;
	size_t last = SIZE_MAX;

	if (L->phase != LRN_RUN || !L->gate_open)
		return;
	for (size_t j = 0; j < L->N && L->phase == LRN_RUN && lrn__room(L); j++) {
		size_t i = (L->bcast_next + j) % L->N;
		struct lrn_owner *o = &L->owners[i];

		if (!lrn__usable(o) || o->inflight)
			continue;
		if (lrn__send_query(L, o, 0.0) == 0)
			last = i;
	}
	/* Fairness when max-inflight < N: the next round starts after the
	 * last owner asked. */
	if (last != SIZE_MAX)
		L->bcast_next = (last + 1) % L->N;
	lrn_sched_pump(L);
}

int lrn_sched_start(struct lrn *L)
{
	uint64_t bi = (uint64_t)ceil(L->s->broadcast_interval * 1000.0);

	uv_timer_init(L->loop, &L->tick);
	uv_timer_init(L->loop, &L->bcast);
	L->tick.data = L->bcast.data = L;
	L->handles_init = true;
	uv_timer_start(&L->tick, lrn__on_tick, LRN_TICK_MS, LRN_TICK_MS);
	if (L->s->mode == LRN_MODE_BROADCAST)
		uv_timer_start(&L->bcast, lrn__on_broadcast, bi ? bi : 1, bi ? bi : 1);
	return 0;
}

static void lrn__close_handle(uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

void lrn_sched_stop_timers(struct lrn *L)
{
	if (!L->handles_init)
		return;
	lrn__close_handle((uv_handle_t *)&L->tick);
	lrn__close_handle((uv_handle_t *)&L->bcast);
	lrn__close_handle((uv_handle_t *)&L->sigterm);
	lrn__close_handle((uv_handle_t *)&L->sigint);
}
